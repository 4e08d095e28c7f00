/* test-soak-check.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The fault soak's checks of the runs (soak-faults-check.c), held to
 * crafted records: what a correct Kaged leaves on a loaded machine passes,
 * and a Tier 1 retry after a delta fails however it shows.
 */

#include "config.h"

#include <string.h>

#include "soak-faults-check.h"

static const SoakFault ok = { "ok", 1, "", NULL, TRUE };
static const SoakFault cut = { "cut-mid-stream", 1, "", "network", TRUE };
static const SoakFault limited = { "429", 1, "", "rate_limited", FALSE };
static const SoakFault hang = { "hang", 1, "", "timeout", FALSE };
static const SoakFault reset = { "reset-before-headers", 1, "", "network", FALSE };

#define TIMEOUT "The provider did not answer within 1 s"
#define LIMITED(n) "The provider is rate limiting requests (HTTP 429): Rate limit reached [r" #n "]"
#define CUT "The connection was lost after part of the reply arrived: Connection terminated unexpectedly"
#define OK_TEXT(n) "[r" #n "] A reply in a few pieces."
#define CUT_TEXT(n) "[r" #n "] A reply that never"

typedef struct
{
  GPtrArray      *runs;
  SoakServed      served[16];
  guint           n_served;
  SoakViolations  violations;
} Check;

static void
check_init (Check *check)
{
  memset (check, 0, sizeof *check);
  check->runs = g_ptr_array_new_with_free_func ((GDestroyNotify)soak_run_free);
  soak_violations_init (&check->violations);
}

static void
check_clear (Check *check)
{
  g_ptr_array_unref (check->runs);
  soak_violations_clear (&check->violations);
}

/* The provider served request number n_served with @fault. */
static void
serve (Check           *check,
       const SoakFault *fault)
{
  g_assert_cmpuint (check->n_served, <, G_N_ELEMENTS (check->served));
  check->served[check->n_served].fault = fault;
  check->served[check->n_served].conversation = 0;
  check->n_served++;
}

static SoakRun *
add_run (Check      *check,
         const char *status,
         const char *retry_class,
         const char *reply)
{
  SoakRun *run = soak_run_new (check->runs->len + 1, 0, status, retry_class, reply);

  g_ptr_array_add (check->runs, run);
  return run;
}

/* Runs the checks; returns their violations, joined. */
static char *
run_checks (Check *check)
{
  SoakRunFigures figures = { 0 };
  g_autoptr(GString) texts = g_string_new (NULL);

  soak_check_runs (check->runs, check->served, check->n_served, NULL, 1, &check->violations,
                   &figures);
  for (guint i = 0; i < check->violations.texts->len; i++)
    g_string_append_printf (texts, "%s\n", (const char *)g_ptr_array_index (check->violations.texts, i));

  return g_string_free (g_steal_pointer (&texts), FALSE);
}

static void
assert_passes (Check *check)
{
  g_autofree char *texts = run_checks (check);

  g_assert_cmpstr (texts, ==, "");
}

static void
assert_fails (Check      *check,
              const char *expected)
{
  g_autofree char *texts = run_checks (check);

  if (strstr (texts, expected) == NULL)
    g_error ("expected a violation with “%s”, got “%s”", expected, texts);
}

static void
test_stamps (void)
{
  g_autoptr(GArray) none = soak_parse_stamps (NULL);
  g_autoptr(GArray) two = soak_parse_stamps ("[r12] text [r3] and [r12] again, [r] [rx] [r4");

  g_assert_cmpuint (none->len, ==, 0);
  g_assert_cmpuint (two->len, ==, 2);
  g_assert_cmpuint (g_array_index (two, guint, 0), ==, 12);
  g_assert_cmpuint (g_array_index (two, guint, 1), ==, 3);
}

/*
 * What the soak once reported as "a request after a delta" on a loaded
 * machine, and what Kaged did: its first attempt timed out (the starved
 * provider read the request 987 ms after it was sent and answered it with
 * text after Kaged's 1 s had run out), Tier 1 retried, as it must before a
 * delta, and the retry's text is the reply. The provider's log holds two
 * answers with text in the run's time; only the second reached the run.
 */
static void
test_answer_too_late (void)
{
  Check check;
  SoakRun *run;

  check_init (&check);
  serve (&check, &limited);   /* r0 */
  serve (&check, &ok);        /* r1: read late, answered to no one */
  serve (&check, &ok);        /* r2 */
  run = add_run (&check, "succeeded", NULL, OK_TEXT (2));
  soak_run_add_attempt (run, 429, LIMITED (0), "rate_limited");
  soak_run_add_attempt (run, -1, TIMEOUT, "timeout");
  soak_run_add_attempt (run, 200, NULL, NULL);
  assert_passes (&check);
  check_clear (&check);
}

/*
 * The other way the soak misfired: a run cancelled as its request was
 * sent, whose request the starved provider read (and answered with text)
 * after the next run of the conversation had started. By time it was the
 * next run's; by its body and by what the next run kept, it was not.
 */
static void
test_late_request_of_cancelled_run (void)
{
  Check check;
  SoakRun *run;

  check_init (&check);
  serve (&check, &ok);        /* r0: the cancelled run's, read late */
  serve (&check, &limited);   /* r1 */
  serve (&check, &ok);        /* r2 */
  add_run (&check, "cancelled", NULL, "");
  run = add_run (&check, "succeeded", NULL, OK_TEXT (2));
  soak_run_add_attempt (run, 429, LIMITED (1), "rate_limited");
  soak_run_add_attempt (run, 200, NULL, NULL);
  assert_passes (&check);
  check_clear (&check);
}

/* A run cancelled while its text streamed: the attempt cut short is not
 * logged, the ones before it are. */
static void
test_cancelled_with_text (void)
{
  Check check;
  SoakRun *run;

  check_init (&check);
  serve (&check, &limited);
  serve (&check, &ok);
  run = add_run (&check, "cancelled", NULL, "[r1] A reply");
  soak_run_add_attempt (run, 429, LIMITED (0), "rate_limited");
  assert_passes (&check);
  check_clear (&check);

  /* An answer that reached it after its text still fails it. */
  check_init (&check);
  serve (&check, &ok);
  serve (&check, &limited);
  run = add_run (&check, "cancelled", NULL, "[r0] A reply");
  soak_run_add_attempt (run, 429, LIMITED (1), "rate_limited");
  assert_fails (&check, "run 1 sent a request after a delta: attempt 1 was answered by request 1");
  check_clear (&check);
}

/* A stream cut after its text fails the run as `network`, text kept. */
static void
test_cut_fails_run (void)
{
  Check check;
  SoakRun *run;

  check_init (&check);
  serve (&check, &hang);
  serve (&check, &cut);
  run = add_run (&check, "failed", "network", CUT_TEXT (1));
  soak_run_add_attempt (run, -1, TIMEOUT, "timeout");
  soak_run_add_attempt (run, 200, CUT, "network");
  assert_passes (&check);
  check_clear (&check);
}

/* Retried after the cut's text, and the retry answered 429: its answer
 * reached the run after the text. */
static void
test_retry_after_delta_answered (void)
{
  Check check;
  SoakRun *run;

  check_init (&check);
  serve (&check, &cut);
  serve (&check, &limited);
  run = add_run (&check, "failed", "rate_limited", CUT_TEXT (0));
  soak_run_add_attempt (run, 200, CUT, "network");
  soak_run_add_attempt (run, 429, LIMITED (1), "rate_limited");
  assert_fails (&check, "run 1 sent a request after a delta: attempt 2 was answered by request 1");
  check_clear (&check);
}

/* Retried after the cut's text, and the retry streamed text too. */
static void
test_retry_after_delta_with_text (void)
{
  Check check;
  SoakRun *run;

  check_init (&check);
  serve (&check, &cut);
  serve (&check, &ok);
  run = add_run (&check, "succeeded", NULL, CUT_TEXT (0) OK_TEXT (1));
  soak_run_add_attempt (run, 200, CUT, "network");
  soak_run_add_attempt (run, 200, NULL, NULL);
  assert_fails (&check, "run 1 sent a request after a delta: its text comes from requests 0 (cut-mid-stream), 1 (ok)");
  check_clear (&check);
}

/* Retried after the cut's text, and the retry got no answer at all. */
static void
test_retry_after_delta_unanswered (void)
{
  Check check;
  SoakRun *run;

  check_init (&check);
  serve (&check, &cut);
  serve (&check, &reset);
  run = add_run (&check, "failed", "network", CUT_TEXT (0));
  soak_run_add_attempt (run, 200, CUT, "network");
  soak_run_add_attempt (run, -1, "The connection to the provider failed", "network");
  assert_fails (&check, "run 1 sent a request after a delta: it kept the text of request 0 "
                "(cut-mid-stream), then made attempt 2");
  check_clear (&check);
}

/* Sent again behind Tier 1's back (no attempt logged), whatever answered. */
static void
test_request_not_logged (void)
{
  Check check;
  SoakRun *run;

  check_init (&check);
  serve (&check, &ok);
  serve (&check, &hang);
  run = add_run (&check, "succeeded", NULL, OK_TEXT (0));
  soak_run_add_attempt (run, 200, NULL, NULL);
  assert_fails (&check, "conversation 0: the provider got 2 requests, more than the 1 attempts "
                "logged and the 0 runs cancelled");
  check_clear (&check);
}

/* A run's class is that of the answer that ended it, when one reached it. */
static void
test_class_of_last_answer (void)
{
  Check check;
  SoakRun *run;

  check_init (&check);
  serve (&check, &limited);
  run = add_run (&check, "failed", "server_error", "");
  soak_run_add_attempt (run, 429, LIMITED (0), "rate_limited");
  assert_fails (&check, "run 1 failed as server_error, after 429 (expected rate_limited");
  check_clear (&check);

  /* A success needs the text of a whole answer. */
  check_init (&check);
  serve (&check, &cut);
  run = add_run (&check, "succeeded", NULL, CUT_TEXT (0));
  soak_run_add_attempt (run, 200, NULL, NULL);
  assert_fails (&check, "run 1 succeeded after cut-mid-stream");
  check_clear (&check);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/soak-check/stamps", test_stamps);
  g_test_add_func ("/soak-check/answer-too-late", test_answer_too_late);
  g_test_add_func ("/soak-check/late-request-of-cancelled-run", test_late_request_of_cancelled_run);
  g_test_add_func ("/soak-check/cancelled-with-text", test_cancelled_with_text);
  g_test_add_func ("/soak-check/cut-fails-run", test_cut_fails_run);
  g_test_add_func ("/soak-check/retry-after-delta-answered", test_retry_after_delta_answered);
  g_test_add_func ("/soak-check/retry-after-delta-with-text", test_retry_after_delta_with_text);
  g_test_add_func ("/soak-check/retry-after-delta-unanswered", test_retry_after_delta_unanswered);
  g_test_add_func ("/soak-check/request-not-logged", test_request_not_logged);
  g_test_add_func ("/soak-check/class-of-last-answer", test_class_of_last_answer);

  return g_test_run ();
}
