/* soak-faults-check.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The fault soak's checks of the runs, apart from the soak so that a test
 * can hold them to crafted records (tests/test-soak-check.c).
 */

#include "config.h"

#include <string.h>

#include "soak-faults-check.h"

#define violation(violations, ...) soak_violations_add ((violations), __VA_ARGS__)

SoakRun *
soak_run_new (gint64      id,
              int         conversation,
              const char *status,
              const char *retry_class,
              const char *reply)
{
  SoakRun *run = g_new0 (SoakRun, 1);

  run->id = id;
  run->conversation = conversation;
  run->status = g_strdup (status);
  run->retry_class = g_strdup (retry_class);
  run->reply = g_strdup (reply);
  run->attempts = g_ptr_array_new ();

  return run;
}

void
soak_run_add_attempt (SoakRun    *run,
                      gint64      http_status,
                      const char *error,
                      const char *retry_class)
{
  SoakAttempt *attempt = g_new0 (SoakAttempt, 1);

  attempt->http_status = http_status > 0 ? http_status : -1;
  attempt->error = g_strdup (error);
  attempt->retry_class = g_strdup (retry_class);
  g_ptr_array_add (run->attempts, attempt);
}

void
soak_run_free (SoakRun *run)
{
  for (guint i = 0; i < run->attempts->len; i++)
    {
      SoakAttempt *attempt = g_ptr_array_index (run->attempts, i);

      g_free (attempt->error);
      g_free (attempt->retry_class);
      g_free (attempt);
    }
  g_ptr_array_unref (run->attempts);
  g_free (run->status);
  g_free (run->retry_class);
  g_free (run->reply);
  g_free (run);
}

/* Returns: (transfer full): the request numbers "[rN]" in @text names, each
 * once, in the order they first appear */
GArray *
soak_parse_stamps (const char *text)
{
  GArray *stamps = g_array_new (FALSE, FALSE, sizeof (guint));
  const char *p = text;

  while (p != NULL && (p = strstr (p, "[r")) != NULL)
    {
      const char *digits = p + 2;
      char *end = NULL;
      guint64 number;
      gboolean seen = FALSE;

      p = digits;
      if (!g_ascii_isdigit (*digits))
        continue;
      number = g_ascii_strtoull (digits, &end, 10);
      if (end == NULL || *end != ']' || number > G_MAXUINT)
        continue;
      for (guint i = 0; i < stamps->len; i++)
        seen |= g_array_index (stamps, guint, i) == number;
      if (!seen)
        {
          guint value = (guint)number;

          g_array_append_val (stamps, value);
        }
    }

  return stamps;
}

/* The request an attempt's error names, or -1 (no answer that said
 * anything of its own reached the attempt). */
static gint64
attempt_stamp (const SoakAttempt *attempt)
{
  g_autoptr(GArray) stamps = soak_parse_stamps (attempt->error);

  return stamps->len == 1 ? (gint64)g_array_index (stamps, guint, 0) : -1;
}

static const char *
fault_name (const SoakServed *served,
            guint             n_served,
            gint64            request)
{
  if (request < 0 || (guint64)request >= n_served || served[request].fault == NULL)
    return "(no such request)";
  return served[request].fault->name;
}

/* An attempt cancelled in flight: no answer, no class. */
static gboolean
attempt_is_cancelled (const SoakAttempt *attempt)
{
  return attempt->http_status < 0 && attempt->retry_class == NULL;
}

/* An attempt that may have published text: an answer that ended normally
 * (200, no class), one that broke off after its text began (200,
 * `network`), or one cancelled. */
static gboolean
attempt_may_carry_text (const SoakAttempt *attempt)
{
  if (attempt_is_cancelled (attempt))
    return TRUE;
  return attempt->http_status == 200 &&
         (attempt->retry_class == NULL || g_str_equal (attempt->retry_class, "network"));
}

static void
describe_attempt (GString           *out,
                  const SoakAttempt *attempt)
{
  if (attempt->http_status > 0)
    g_string_append_printf (out, "HTTP %" G_GINT64_FORMAT, attempt->http_status);
  else
    g_string_append (out, "no answer");
  if (attempt->retry_class != NULL)
    g_string_append_printf (out, ", %s", attempt->retry_class);
  if (attempt->error != NULL)
    g_string_append_printf (out, ", “%s”", attempt->error);
}

/* The first-delta invariant, from what the run kept: once text of an answer
 * was published, nothing of the run reached the provider again. */
static void
check_delta (SoakRun          *run,
             GArray           *stamps,
             const SoakServed *served,
             guint             n_served,
             SoakViolations   *violations)
{
  const SoakAttempt *last;
  gboolean cancelled;
  guint k;

  if (stamps->len == 0)
    {
      if (run->reply != NULL && run->reply[0] != '\0')
        violation (violations, "run %" G_GINT64_FORMAT " kept text that names no request: “%s”",
                   run->id, run->reply);
      return;
    }

  for (guint i = 0; i < stamps->len; i++)
    {
      guint request = g_array_index (stamps, guint, i);

      if (request >= n_served || served[request].fault == NULL ||
          served[request].conversation != run->conversation || !served[request].fault->delta)
        violation (violations, "run %" G_GINT64_FORMAT " (conversation %d) kept the text of request "
                   "%u (%s, conversation %d)", run->id, run->conversation, request,
                   fault_name (served, n_served, request),
                   request < n_served ? served[request].conversation : -1);
    }

  /* Text of two answers: the run was sent again after the first's text. */
  if (stamps->len > 1)
    {
      g_autoptr(GString) names = g_string_new (NULL);

      for (guint i = 0; i < stamps->len; i++)
        g_string_append_printf (names, "%s%u (%s)", i > 0 ? ", " : "",
                                g_array_index (stamps, guint, i),
                                fault_name (served, n_served, g_array_index (stamps, guint, i)));
      violation (violations, "run %" G_GINT64_FORMAT " sent a request after a delta: its text "
                 "comes from requests %s", run->id, names->str);
    }

  k = g_array_index (stamps, guint, 0);

  /* The attempt that published the text is the run's last. (A run
   * cancelled is recorded at once, without the attempt it cut short: the
   * one that was publishing its text.) */
  last = run->attempts->len > 0 ? g_ptr_array_index (run->attempts, run->attempts->len - 1) : NULL;
  cancelled = g_strcmp0 (run->status, "cancelled") == 0;
  if (!cancelled && last == NULL)
    {
      violation (violations, "run %" G_GINT64_FORMAT " kept the text of request %u but logged "
                 "no attempt", run->id, k);
    }
  else if (!cancelled && !attempt_may_carry_text (last))
    {
      g_autoptr(GString) what = g_string_new (NULL);

      describe_attempt (what, last);
      violation (violations, "run %" G_GINT64_FORMAT " sent a request after a delta: it kept the "
                 "text of request %u (%s), then made attempt %u (%s)", run->id, k,
                 fault_name (served, n_served, k), run->attempts->len, what->str);
    }

  /* An answer that reached the run after the text's: its request was sent
   * after the text arrived. (Answers reach a run in the order of its
   * attempts, and a request is served after the one whose answer reached
   * the run before it was sent.) */
  for (guint a = 0; a < run->attempts->len; a++)
    {
      gint64 j = attempt_stamp (g_ptr_array_index (run->attempts, a));

      if (j > (gint64)k)
        violation (violations, "run %" G_GINT64_FORMAT " sent a request after a delta: attempt %u "
                   "was answered by request %" G_GINT64_FORMAT " (%s), after the text of request "
                   "%u (%s)", run->id, a + 1, j, fault_name (served, n_served, j), k,
                   fault_name (served, n_served, k));
    }
}

/* How the run ended, against the answer that ended it. */
static void
check_outcome (SoakRun          *run,
               GArray           *stamps,
               const SoakServed *served,
               guint             n_served,
               SoakViolations   *violations)
{
  const SoakAttempt *last = run->attempts->len > 0
                            ? g_ptr_array_index (run->attempts, run->attempts->len - 1) : NULL;
  gint64 j = last != NULL ? attempt_stamp (last) : -1;

  if (g_strcmp0 (run->status, "succeeded") == 0)
    {
      gint64 k = stamps->len > 0 ? (gint64)g_array_index (stamps, guint, 0) : -1;

      if (k < 0 || (guint64)k >= n_served || served[k].fault == NULL ||
          served[k].fault->retry_class != NULL || last == NULL || last->http_status != 200 ||
          last->retry_class != NULL)
        violation (violations, "run %" G_GINT64_FORMAT " succeeded after %s", run->id,
                   k >= 0 ? fault_name (served, n_served, k) : "no text of a request");
    }
  else if (g_strcmp0 (run->status, "failed") == 0)
    {
      const char *expected = NULL;
      gboolean ok;

      if (j >= 0 && (guint64)j < n_served && served[j].fault != NULL)
        {
          /* The answer that ended it reached it: its class, exactly. */
          expected = served[j].fault->retry_class;
          ok = g_strcmp0 (expected, run->retry_class) == 0;
        }
      else if (stamps->len > 0)
        {
          /* Its text began, then the stream broke off (cut, or silent). */
          expected = "network";
          ok = g_strcmp0 (expected, run->retry_class) == 0;
        }
      else
        {
          /* No answer with words of the provider's reached it: no answer
           * in time (a hang, or an answer too late), a connection reset or
           * refused, or a body not in the provider's format. */
          expected = "timeout, network or protocol_error";
          ok = g_strcmp0 (run->retry_class, "timeout") == 0 ||
               g_strcmp0 (run->retry_class, "network") == 0 ||
               g_strcmp0 (run->retry_class, "protocol_error") == 0;
        }

      if (!ok)
        {
          g_autoptr(GString) what = g_string_new (NULL);

          if (last != NULL)
            describe_attempt (what, last);
          violation (violations, "run %" G_GINT64_FORMAT " failed as %s, after %s (expected %s; "
                     "%u attempts, the last %s)", run->id, run->retry_class,
                     j >= 0 ? fault_name (served, n_served, j) : "no answer of its own",
                     expected != NULL ? expected : "success", run->attempts->len,
                     last != NULL ? what->str : "none");
        }
    }
}

void
soak_check_runs (GPtrArray        *runs,
                 const SoakServed *served,
                 guint             n_served,
                 GPtrArray        *summaries,
                 guint             n_conversations,
                 SoakViolations   *violations,
                 SoakRunFigures   *figures)
{
  g_autofree guint *n_requests = g_new0 (guint, n_conversations);
  g_autofree guint *n_attempts = g_new0 (guint, n_conversations);
  g_autofree guint *n_cancelled = g_new0 (guint, n_conversations);

  for (guint i = 0; i < runs->len; i++)
    {
      SoakRun *run = g_ptr_array_index (runs, i);
      g_autoptr(GArray) stamps = soak_parse_stamps (run->reply);
      gboolean compacted = FALSE;

      if (g_strcmp0 (run->status, "succeeded") != 0 && g_strcmp0 (run->status, "failed") != 0 &&
          g_strcmp0 (run->status, "cancelled") != 0)
        violation (violations, "run %" G_GINT64_FORMAT " ended %s", run->id, run->status);

      if (g_strcmp0 (run->status, "cancelled") == 0 && run->retry_class != NULL)
        violation (violations, "cancelled run %" G_GINT64_FORMAT " has the class %s", run->id,
                   run->retry_class);

      if (g_strcmp0 (run->status, "failed") == 0 && figures->class_counts != NULL)
        {
          const char *key = run->retry_class != NULL ? run->retry_class : "(none)";
          guint n = GPOINTER_TO_UINT (g_hash_table_lookup (figures->class_counts, key));

          g_hash_table_insert (figures->class_counts, g_strdup (key), GUINT_TO_POINTER (n + 1));
        }

      /* A compaction adds the summary's call and the second call, each
       * under a Tier 1 of its own. */
      for (guint a = 0; a < run->attempts->len; a++)
        {
          SoakAttempt *attempt = g_ptr_array_index (run->attempts, a);

          compacted |= g_strcmp0 (attempt->retry_class, "context_overflow") == 0;
        }
      figures->max_attempts = MAX (figures->max_attempts, run->attempts->len);
      if (compacted)
        figures->n_compacted++;
      else
        figures->max_attempts_plain = MAX (figures->max_attempts_plain, run->attempts->len);
      if (run->attempts->len > (compacted ? 9u : 3u))
        violation (violations, "run %" G_GINT64_FORMAT " made %u attempts", run->id,
                   run->attempts->len);

      check_delta (run, stamps, served, n_served, violations);
      check_outcome (run, stamps, served, n_served, violations);

      if (run->conversation >= 0 && (guint)run->conversation < n_conversations)
        {
          n_attempts[run->conversation] += run->attempts->len;
          if (g_strcmp0 (run->status, "cancelled") == 0)
            n_cancelled[run->conversation]++;
        }
    }

  /* Every request the provider got is one of an attempt Kaged logged, or
   * the one a cancelled run had in flight (a run cancelled is recorded at
   * once; the attempt it cut short is not logged). A request sent behind
   * Tier 1's back, after a delta or at any time, is one too many. */
  for (guint r = 0; r < n_served; r++)
    if (served[r].conversation >= 0 && (guint)served[r].conversation < n_conversations)
      n_requests[served[r].conversation]++;
  for (guint c = 0; c < n_conversations; c++)
    if (n_requests[c] > n_attempts[c] + n_cancelled[c])
      violation (violations, "conversation %u: the provider got %u requests, more than the %u "
                 "attempts logged and the %u runs cancelled", c, n_requests[c], n_attempts[c],
                 n_cancelled[c]);

  /* Summaries keep the text of the answers they came from: those were
   * requests of their own conversation. */
  for (guint s = 0; summaries != NULL && s < summaries->len; s++)
    {
      g_autoptr(GArray) stamps = soak_parse_stamps (g_ptr_array_index (summaries, s));

      for (guint i = 0; i < stamps->len; i++)
        {
          guint request = g_array_index (stamps, guint, i);

          if (request >= n_served || served[request].fault == NULL || !served[request].fault->delta)
            violation (violations, "a summary keeps the text of request %u (%s)", request,
                       fault_name (served, n_served, request));
        }
    }
}
