/* soak-bounds.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Resource bounds of the real `kaged --headless`: a provider that streams
 * forever, sends one endless line, trickles a byte a second or answers
 * with an error body of 100 MB is cut off by a cap or a deadline, the run
 * fails with the class that says so, and the program's memory (VmRSS and
 * VmHWM of the child, from /proc) stays under a bound.
 */

#include "config.h"

#include <stdio.h>
#include <string.h>

#include "kaged-soak-fixture.h"

/* What the program may hold at its peak, through all of it. */
#define MEMORY_BOUND_KB (128 * 1024)

#ifdef SOAK_ASAN
/* Here the program is built with AddressSanitizer (like this soak), and
 * its VmHWM holds the sanitizer's own memory too: the runtime and shadow
 * of a program just started come to about 38 MiB (20 MiB plain), every
 * block gets redzones and is rounded up to a size class, what the program
 * holds has a shadow of an eighth of it, and freed blocks wait in a
 * quarantine before they are reused (256 MiB unless told, which the
 * endless stream fills: the program gets ASAN_QUARANTINE_MB). What is
 * bounded is then the growth of VmHWM over the VmRSS of the program once
 * started, held to the same MEMORY_BOUND_KB, quarantine, shadow and
 * redzones included. It measured 22 MiB (the trickle) to 67 MiB (the
 * endless stream, padded by the sanitizers test setup: with ten times the
 * events, 145 MiB). An unbounded buffer still breaks it: with its cap
 * taken out, the error body took the sanitized program past 1 GiB within
 * 5 s. */
#define ASAN_QUARANTINE_MB 32
#endif

typedef struct
{
  SoakKaged   *kaged;
  gint         stop;      /* atomic */
  guint64      max_rss_kb;
} Sampler;

static gpointer
sample_thread (gpointer data)
{
  Sampler *sampler = data;

  while (!g_atomic_int_get (&sampler->stop))
    {
      guint64 rss = soak_read_status_kb (soak_kaged_get_pid (sampler->kaged), "VmRSS");

      sampler->max_rss_kb = MAX (sampler->max_rss_kb, rss);
      soak_sleep_ms (20);
    }

  return NULL;
}

static char *
repeated (char  c,
          gsize n)
{
  char *text = g_malloc (n + 1);

  memset (text, c, n);
  text[n] = '\0';
  return text;
}

/* A scenario answering every request with @step. */
static char *
scenario (const char *step)
{
  return g_strdup_printf ("[%s]", step);
}

static char *
endless_stream (void)
{
  GString *events = g_string_new (NULL);
  g_autofree char *step = NULL;
  guint padding_kb = soak_env_uint ("SOAK_STREAM_PADDING_KB", 0);

  /* Ordinary small deltas, 500 to a write, for ever. */
  for (guint i = 0; i < 500; i++)
    g_string_append (events, "data: {\\\"choices\\\": [{\\\"index\\\": 0, \\\"delta\\\": "
                             "{\\\"content\\\": \\\"and more \\\"}, "
                             "\\\"finish_reason\\\": null}]}\\n\\n");
  /* SOAK_STREAM_PADDING_KB: after them, a comment line (a keep-alive,
   * which the program reads and skips) of that many KiB. The reply cap
   * counts every byte, so it is reached after fewer events: the
   * sanitizers test setup sets it, where each event costs the program
   * about ten times as long. */
  if (padding_kb > 0)
    {
      g_string_append (events, ": ");
      for (gsize i = 0; i < (gsize)padding_kb * 1024; i++)
        g_string_append_c (events, 'p');
      g_string_append (events, "\\n");
    }
  step = g_strdup_printf ("{\"status\": 200, \"content_type\": \"text/event-stream\", "
                          "\"repeat_chunks\": true, \"chunks\": [\"%s\"]}", events->str);
  g_string_free (events, TRUE);

  return g_steal_pointer (&step);
}

static char *
endless_line (void)
{
  g_autofree char *bytes = repeated ('x', 1024 * 1024);

  return g_strdup_printf ("{\"status\": 200, \"content_type\": \"text/event-stream\", "
                          "\"repeat_chunks\": true, \"chunks\": [\"data: \", \"%s\"]}", bytes);
}

static char *
trickle (void)
{
  return g_strdup ("{\"status\": 200, \"content_type\": \"text/event-stream\", "
                   "\"repeat_chunks\": true, \"chunks\": [{\"data\": \"d\", \"delay_ms\": 1000}]}");
}

static char *
huge_error_body (void)
{
  g_autofree char *bytes = repeated ('e', 1024 * 1024);

  /* An error body that goes on in 1 MB pieces, past 100 MB and for ever. */
  return g_strdup_printf ("{\"status\": 500, \"content_type\": \"application/json\", "
                          "\"repeat_chunks\": true, \"chunks\": [\"%s\"]}", bytes);
}

typedef struct
{
  const char *name;
  char     *(*step) (void);
  const char *option;        /* of the program */
  const char *retry_class;
  guint       max_seconds;
} Case;

/* The caps cut the first two off, with the usual deadlines; the deadline
 * is made short for the trickle, which only a deadline cuts off. */
static const Case cases[] = {
  { "a stream without end", endless_stream, NULL, "protocol_error", 150 },
  { "a line without end", endless_line, NULL, "protocol_error", 60 },
  { "a byte a second", trickle, "--provider-timeout=2", "timeout", 60 },
  { "an error body of 100 MB and more", huge_error_body, NULL, "server_error", 60 },
};

/* The option, with a time in seconds times KAGED_TEST_SLOWDOWN. */
static char *
scaled_option (const char *option)
{
  const char *equals = option != NULL ? strchr (option, '=') : NULL;

  if (equals == NULL)
    return g_strdup (option);

  return g_strdup_printf ("%.*s=%u", (int)(equals - option), option,
                          soak_scaled_ms ((guint)g_ascii_strtoull (equals + 1, NULL, 10) * 1000) / 1000);
}

static void
run_case (SoakProvider *provider,
          const Case   *test_case)
{
  g_autofree char *option = scaled_option (test_case->option);
  const char *extra[] = { option, NULL };
  guint max_seconds = soak_scaled_ms (test_case->max_seconds * 1000) / 1000;
  g_autoptr(SoupSession) http = soak_http_new ();
  g_autofree char *provider_url = soak_provider_dup_url (provider);
  g_autofree char *step = test_case->step ();
  g_autofree char *json = scenario (step);
  g_autoptr(JsonNode) receipt = NULL;
  g_autoptr(JsonNode) run = NULL;
  const char *status_text = NULL;
  const char *retry_class = NULL;
  SoakKaged kaged;
  Sampler sampler = { &kaged, 0, 0 };
  GThread *thread;
  gint64 session_id;
  gint64 run_id;
  gint64 begin;
  guint64 hwm_kb;
  guint64 start_kb;
  guint status = 0;
  double seconds;

  soak_provider_set_scenario (provider, json);
  soak_kaged_init (&kaged, provider_url, extra);
  soak_kaged_start (&kaged);
  session_id = soak_create_session (&kaged, http, "Bounds");
  start_kb = soak_read_status_kb (soak_kaged_get_pid (&kaged), "VmRSS");
  thread = g_thread_new ("soak-sampler", sample_thread, &sampler);

  begin = g_get_monotonic_time ();
  receipt = soak_api (&kaged, http, "POST", "{\"content\": \"Tell me everything\"}", &status,
                      "sessions/%" G_GINT64_FORMAT "/messages", session_id);
  g_assert_cmpuint (status, ==, 202);
  run_id = json_object_get_int_member (json_node_get_object (receipt), "run_id");

  for (;;)
    {
      JsonObject *object;

      g_clear_pointer (&run, json_node_unref);
      run = soak_api (&kaged, http, "GET", NULL, &status,
                      "sessions/%" G_GINT64_FORMAT "/runs/%" G_GINT64_FORMAT, session_id, run_id);
      g_assert_cmpuint (status, ==, 200);
      object = json_node_get_object (run);
      status_text = json_object_get_string_member (object, "status");
      if (!g_str_equal (status_text, "queued") && !g_str_equal (status_text, "running"))
        {
          JsonNode *retry = json_object_get_member (object, "retry");

          if (retry != NULL && JSON_NODE_HOLDS_OBJECT (retry))
            retry_class = json_object_get_string_member (json_node_get_object (retry),
                                                         "retry_class");
          break;
        }
      if (g_get_monotonic_time () - begin > (gint64)max_seconds * G_USEC_PER_SEC)
        g_error ("%s: the run is still %s after %u s", test_case->name, status_text,
                 max_seconds);
      soak_sleep_ms (100);
    }
  seconds = (g_get_monotonic_time () - begin) / (double)G_USEC_PER_SEC;

  hwm_kb = soak_read_status_kb (soak_kaged_get_pid (&kaged), "VmHWM");
  g_atomic_int_set (&sampler.stop, TRUE);
  g_thread_join (thread);

  g_print ("# %s: %s as %s after %.1f s (%s); VmRSS %" G_GUINT64_FORMAT " kB once started, "
           "sampled at most %" G_GUINT64_FORMAT " kB, VmHWM %" G_GUINT64_FORMAT " kB, bound %u kB%s\n",
           test_case->name, status_text, retry_class != NULL ? retry_class : "(none)", seconds,
           json_object_get_string_member (json_node_get_object (run), "error_message"),
           start_kb, sampler.max_rss_kb, hwm_kb, MEMORY_BOUND_KB,
#ifdef SOAK_ASAN
           " on the growth"
#else
           ""
#endif
           );
  fflush (stdout);

  g_assert_cmpstr (status_text, ==, "failed");
  g_assert_cmpstr (retry_class, ==, test_case->retry_class);
  g_assert_cmpuint (start_kb, >, 0);
  g_assert_cmpuint (hwm_kb, >=, start_kb);
#ifdef SOAK_ASAN
  g_assert_cmpuint (hwm_kb - start_kb, <, MEMORY_BOUND_KB);
#else
  g_assert_cmpuint (hwm_kb, <, MEMORY_BOUND_KB);
#endif

  soak_kaged_stop (&kaged);
  soak_kaged_clear (&kaged);
}

static void
test_bounds (void)
{
  g_autoptr(KagedFakeServer) server = NULL;
  SoakProvider *provider = soak_provider_start ("[{\"kind\": \"openai\", \"text\": \"Hello.\"}]");

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    run_case (provider, &cases[i]);

  server = soak_provider_stop (provider);
}

/* The deadline a user gives is checked before anything starts. */
static void
test_provider_timeout_checked (void)
{
  static const char *bad[][3] = {
    { "--headless", "--provider-timeout=-1", NULL },
    { "--headless", "--provider-timeout=3601", NULL },
    { "--provider-timeout=5", NULL, NULL },
  };

  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr(GSubprocess) process = NULL;
      g_autoptr(GError) error = NULL;
      g_autofree char *err = NULL;

      process = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
                                  &error, g_getenv ("KAGED_BINARY"), bad[i][0], bad[i][1], NULL);
      g_assert_no_error (error);
      g_subprocess_communicate_utf8 (process, NULL, NULL, NULL, &err, &error);
      g_assert_no_error (error);
      g_assert_true (g_subprocess_get_if_exited (process));
      g_assert_cmpint (g_subprocess_get_exit_status (process), !=, 0);
      g_assert_nonnull (strstr (err, "provider"));
    }
}

int
main (int   argc,
      char *argv[])
{
  soak_test_init (&argc, &argv);
#ifdef SOAK_ASAN
  {
    /* For the program this soak starts: later options win. */
    g_autofree char *options = g_strdup_printf ("%s:quarantine_size_mb=%u",
                                                g_getenv ("ASAN_OPTIONS") != NULL
                                                ? g_getenv ("ASAN_OPTIONS") : "",
                                                ASAN_QUARANTINE_MB);

    g_setenv ("ASAN_OPTIONS", options, TRUE);
  }
#endif

  g_test_add_func ("/soak/provider-timeout-checked", test_provider_timeout_checked);
  g_test_add_func ("/soak/bounds", test_bounds);

  return g_test_run ();
}
