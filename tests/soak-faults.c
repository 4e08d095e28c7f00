/* soak-faults.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The fault soak: a real `kaged --headless --auto-retry` against a fake
 * provider that answers each request with a fault drawn at random from a
 * seeded mix, while one driver per conversation posts, regenerates, edits
 * and cancels through the HTTP API and cancels Tier 2 retries at random
 * moments, and one event stream per conversation watches that no two runs
 * of a conversation are ever active at once. At the end the database the
 * program leaves is held against what the provider served and what the
 * drivers did.
 *
 * SOAK_RUNS (default 150), SOAK_SESSIONS (default 5) and SOAK_SEED
 * (default 1) size it; the benchmark runs 2,000 runs across 20
 * conversations. SOAK_KEEP=1 keeps the temporary folder.
 */

#include "config.h"

#include <stdio.h>
#include <string.h>

#include "kaged-soak-fixture.h"
#include "soak-faults-check.h"

typedef SoakFault Fault;

#define OPENAI_ERROR(type, code, message) \
  "{\"error\": {\"message\": \"" message "\", \"type\": \"" type "\", \"code\": \"" code "\"}}"

static const Fault faults[] = {
  { "ok", 30,
    "\"kind\": \"openai\", \"text\": \"[r{request}] A reply in a few pieces.\", \"chunks\": 3",
    NULL, TRUE },
  { "429-retry-after-seconds", 4,
    "\"status\": 429, \"headers\": {\"retry-after\": \"1\"}, \"body\": "
    OPENAI_ERROR ("requests", "rate_limit_exceeded", "Rate limit reached [r{request}]"),
    "rate_limited", FALSE },
  { "429-retry-after-date", 3,
    "\"status\": 429, \"dated_headers\": {\"retry-after\": \"http-date\"}, \"date_in_ms\": 500, "
    "\"body\": " OPENAI_ERROR ("requests", "rate_limit_exceeded", "Rate limit reached [r{request}]"),
    "rate_limited", FALSE },
  { "429-retry-after-ms", 3,
    "\"status\": 429, \"headers\": {\"retry-after-ms\": \"700\"}, \"body\": "
    OPENAI_ERROR ("requests", "rate_limit_exceeded", "Rate limit reached [r{request}]"),
    "rate_limited", FALSE },
  { "429-x-ratelimit-reset", 3,
    "\"status\": 429, \"headers\": {\"x-ratelimit-remaining-requests\": \"0\"}, "
    "\"dated_headers\": {\"x-ratelimit-reset-requests\": \"seconds\"}, \"date_in_ms\": 800, "
    "\"body\": " OPENAI_ERROR ("requests", "rate_limit_exceeded", "Rate limit reached [r{request}]"),
    "rate_limited", FALSE },
  { "429-anthropic-reset", 3,
    "\"status\": 429, \"headers\": {\"anthropic-ratelimit-requests-remaining\": \"0\"}, "
    "\"dated_headers\": {\"anthropic-ratelimit-requests-reset\": \"rfc3339\"}, "
    "\"date_in_ms\": 900, "
    "\"body\": " OPENAI_ERROR ("requests", "rate_limit_exceeded", "Rate limit reached [r{request}]"),
    "rate_limited", FALSE },
  { "503", 4,
    "\"status\": 503, \"body\": " OPENAI_ERROR ("server_error", "unavailable", "Service unavailable [r{request}]"),
    "overloaded", FALSE },
  { "529", 4,
    "\"status\": 529, \"body\": {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", "
    "\"message\": \"Overloaded [r{request}]\"}}",
    "overloaded", FALSE },
  { "500", 4,
    "\"status\": 500, \"body\": " OPENAI_ERROR ("server_error", "internal", "Internal error [r{request}]"),
    "server_error", FALSE },
  { "refused", 1, "\"refuse_ms\": 300", "network", FALSE },
  { "reset-before-headers", 3, "\"reset\": true", "network", FALSE },
  { "cut-mid-stream", 4,
    "\"kind\": \"openai\", \"text\": \"[r{request}] A reply that never ends well: it stops "
    "after two of its six pieces.\", \"chunks\": 6, "
    "\"cut_after_chunks\": 3",
    "network", TRUE },
  { "hang", 3, "\"hang\": true", "timeout", FALSE },
  { "malformed-sse", 3,
    "\"status\": 200, \"content_type\": \"text/event-stream\", "
    "\"chunks\": [\"<html><body>Bad gateway</body></html>\\n\"]",
    "protocol_error", FALSE },
  { "invalid-json", 3,
    "\"status\": 200, \"chunks\": [\"data: {\\\"id\\\": \\\"x\\\", \\\"choices\\\": [{\\n\\n\"]",
    "protocol_error", FALSE },
  { "401", 3,
    "\"status\": 401, \"body\": " OPENAI_ERROR ("invalid_request_error", "invalid_api_key",
                                               "Incorrect API key provided [r{request}]"),
    "auth_failed", FALSE },
  { "context-overflow", 3,
    "\"status\": 400, \"body\": " OPENAI_ERROR ("invalid_request_error", "context_length_exceeded",
                                               "This model's maximum context length is 8192 tokens [r{request}]"),
    "context_overflow", FALSE },
};

static const Fault *
find_fault (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (faults); i++)
    if (g_strcmp0 (faults[i].name, name) == 0)
      return &faults[i];
  return NULL;
}

static char *
build_scenario (guint seed)
{
  GString *scenario = g_string_new (NULL);

  g_string_append_printf (scenario, "{\"mix\": true, \"seed\": %u, \"steps\": [", seed);
  for (guint i = 0; i < G_N_ELEMENTS (faults); i++)
    {
      /* A connection per request: a refusal reaches every conversation. */
      g_string_append_printf (scenario, "%s{\"name\": \"%s\", \"weight\": %u, \"stamp\": true, "
                              "\"headers\": {\"connection\": \"close\"}, %s}",
                              i > 0 ? ", " : "", faults[i].name, faults[i].weight,
                              faults[i].step);
    }
  g_string_append (scenario, "]}");

  return g_string_free (scenario, FALSE);
}

/* ------------------------------------------------------------------------
 * The drivers
 * ------------------------------------------------------------------------ */

typedef struct _Soak Soak;

typedef struct
{
  Soak        *soak;
  guint        index;
  gint64       session_id;
  GRand       *rand;
  GThread     *thread;
  GThread     *events_thread;

  gint64       last_operator_id;
  GArray      *run_ids;        /* gint64, from receipts */
  GArray      *actions;        /* gint64: when an operator action was sent */
  GArray      *tier2_cancels;  /* gint64: when a Tier 2 cancel was answered */

  /* Seen on the event stream */
  GHashTable  *active;         /* run ids */
  GHashTable  *with_text;      /* run ids that published text */
  guint        max_active;
  guint        max_tier1_attempt;
  guint        n_events;
  guint        n_tier1_retries;

  /* Where the driver's time went, in µs */
  gint64       us_pauses;      /* between actions */
  gint64       us_tier2_room;  /* leaving room for Tier 2 to fire */
  gint64       us_cancel_wait; /* before a Tier 2 cancel */
  gint64       us_replies;     /* waiting for the conversation to be idle */
  gint64       us_total;
} Driver;

struct _Soak
{
  SoakKaged    kaged;
  guint        target_runs;
  Driver      *drivers;
  guint        n_drivers;

  GMutex       lock;
  GHashTable  *operator_rows;  /* gint64 * → content, as posted */
  gint         runs_queued;    /* atomic */
  gint         stopping;       /* atomic */
  guint        n_posts;
  guint        n_regenerates;
  guint        n_edits;
  guint        n_run_cancels;
  guint        n_tier2_cancels;
  guint        n_refused_api;
  SoakViolations violations;
};

#define violation(soak, ...) soak_violations_add (&(soak)->violations, __VA_ARGS__)

static void
record_operator (Soak       *soak,
                 gint64      message_id,
                 const char *content)
{
  gint64 *id = g_new (gint64, 1);

  *id = message_id;
  g_mutex_lock (&soak->lock);
  g_hash_table_insert (soak->operator_rows, id, g_strdup (content));
  g_mutex_unlock (&soak->lock);
}

static void
take_receipt (Driver     *driver,
              JsonNode   *node,
              const char *content)
{
  JsonObject *receipt = json_node_get_object (node);
  gint64 message_id = json_object_get_int_member (receipt, "message_id");
  gint64 run_id = json_object_get_int_member (receipt, "run_id");

  g_array_append_val (driver->run_ids, run_id);
  if (content != NULL)
    {
      record_operator (driver->soak, message_id, content);
      driver->last_operator_id = message_id;
    }
}

static void
note_action (Driver *driver)
{
  gint64 now = soak_now_ms ();

  g_array_append_val (driver->actions, now);
}

static void
do_post (Driver *driver,
         guint   n)
{
  Soak *soak = driver->soak;
  g_autofree char *content = g_strdup_printf ("[s%02u m%u] Question %u of conversation %u",
                                              driver->index, n, n, driver->index);
  g_autofree char *body = g_strdup_printf ("{\"content\": \"%s\"}", content);
  g_autoptr(JsonNode) node = NULL;
  g_autoptr(SoupSession) http = NULL;
  guint status = 0;

  http = soak_http_new ();
  note_action (driver);
  node = soak_api (&soak->kaged, http, "POST", body, &status,
                   "sessions/%" G_GINT64_FORMAT "/messages", driver->session_id);
  if (status != 202 || node == NULL)
    {
      violation (soak, "s%02u: posting answered %u", driver->index, status);
      return;
    }
  take_receipt (driver, node, content);
  g_atomic_int_inc ((gint *)&soak->n_posts);
}

static void
do_regenerate (Driver *driver)
{
  Soak *soak = driver->soak;
  g_autoptr(JsonNode) node = NULL;
  g_autoptr(SoupSession) http = soak_http_new ();
  guint status = 0;

  note_action (driver);
  node = soak_api (&soak->kaged, http, "POST", "{}", &status,
                   "sessions/%" G_GINT64_FORMAT "/messages/%" G_GINT64_FORMAT "/regenerate",
                   driver->session_id, driver->last_operator_id);
  if (status != 202 || node == NULL)
    {
      violation (soak, "s%02u: regenerating answered %u", driver->index, status);
      return;
    }
  take_receipt (driver, node, NULL);
  g_atomic_int_inc ((gint *)&soak->n_regenerates);
}

static void
do_edit (Driver *driver,
         guint   n)
{
  Soak *soak = driver->soak;
  g_autofree char *content = g_strdup_printf ("[s%02u m%u] Question %u, said differently",
                                              driver->index, n, n);
  g_autofree char *body = g_strdup_printf ("{\"content\": \"%s\"}", content);
  g_autoptr(JsonNode) node = NULL;
  g_autoptr(SoupSession) http = soak_http_new ();
  guint status = 0;

  note_action (driver);
  node = soak_api (&soak->kaged, http, "POST", body, &status,
                   "sessions/%" G_GINT64_FORMAT "/messages/%" G_GINT64_FORMAT "/edit",
                   driver->session_id, driver->last_operator_id);
  if (status != 202 || node == NULL)
    {
      violation (soak, "s%02u: editing answered %u", driver->index, status);
      return;
    }
  take_receipt (driver, node, content);
  g_atomic_int_inc ((gint *)&soak->n_edits);
}

static void
do_cancel_run (Driver *driver,
               gint64  run_id)
{
  Soak *soak = driver->soak;
  g_autoptr(JsonNode) node = NULL;
  g_autoptr(SoupSession) http = soak_http_new ();
  guint status = 0;

  node = soak_api (&soak->kaged, http, "POST", "{}", &status,
                   "sessions/%" G_GINT64_FORMAT "/runs/%" G_GINT64_FORMAT "/cancel",
                   driver->session_id, run_id);
  if (status == 200)
    g_atomic_int_inc ((gint *)&soak->n_run_cancels);
  else if (status != 409)
    violation (soak, "s%02u: cancelling run %" G_GINT64_FORMAT " answered %u",
               driver->index, run_id, status);
}

/* Cancels the conversation's Tier 2 retry, whatever its state. */
static void
do_cancel_tier2 (Driver *driver)
{
  Soak *soak = driver->soak;
  g_autoptr(JsonNode) node = NULL;
  g_autoptr(SoupSession) http = soak_http_new ();
  guint status = 0;

  node = soak_api (&soak->kaged, http, "POST", "{}", &status,
                   "sessions/%" G_GINT64_FORMAT "/retry/cancel", driver->session_id);
  if (status == 200)
    {
      gint64 now = soak_now_ms ();

      if (g_strcmp0 (json_object_get_string_member (json_node_get_object (node), "state"),
                     "cancelled") != 0)
        violation (soak, "s%02u: a cancelled retry is not cancelled", driver->index);
      g_array_append_val (driver->tier2_cancels, now);
      g_atomic_int_inc ((gint *)&soak->n_tier2_cancels);
    }
  else if (status != 409)
    {
      violation (soak, "s%02u: cancelling the retry answered %u", driver->index, status);
    }
}

static void
wait_idle (Driver *driver,
           guint   max_ms)
{
  g_autoptr(SoupSession) http = soak_http_new ();
  gint64 deadline = g_get_monotonic_time () + (gint64)soak_scaled_ms (max_ms) * 1000;

  while (!soak_session_is_idle (&driver->soak->kaged, http, driver->session_id) &&
         g_get_monotonic_time () < deadline)
    soak_sleep_ms (50);
}

/* Whether anything could still start a run in the conversation by itself:
 * a run under way (which may fail and arm a retry) or a Tier 2 retry that
 * is pending or under way. */
static gboolean
tier2_may_fire (Driver      *driver,
                SoupSession *http)
{
  Soak *soak = driver->soak;
  g_autoptr(JsonNode) node = NULL;
  const char *state;
  guint status = 0;

  if (!soak_session_is_idle (&soak->kaged, http, driver->session_id))
    return TRUE;

  node = soak_api (&soak->kaged, http, "GET", NULL, &status,
                   "sessions/%" G_GINT64_FORMAT "/retry", driver->session_id);
  if (status != 200 || node == NULL)
    return TRUE;
  state = json_object_get_string_member (json_node_get_object (node), "state");

  return g_strcmp0 (state, "idle") != 0 && g_strcmp0 (state, "cancelled") != 0;
}

/* Leaves the conversation alone for @ms (times KAGED_TEST_SLOWDOWN), so
 * that a Tier 2 countdown can end and its run go, but no longer than
 * something may still fire: a conversation that is idle with no retry
 * pending has nothing to leave room for. Twice in a row: a run that just
 * failed arms its retry from an idle of the program's main loop queued as
 * it ends, so the retry's state read in the same poll as the run's end
 * may not show it yet; a poll sent after that one's answers comes in a
 * later turn of the loop, after the idle, however loaded the machine (the
 * pause between them only spares the API). */
static void
leave_room_for_tier2 (Driver *driver,
                      guint   ms)
{
  g_autoptr(SoupSession) http = soak_http_new ();
  gint64 start = g_get_monotonic_time ();
  gint64 end = start + (gint64)soak_scaled_ms (ms) * 1000;
  guint quiet = 0;

  while (g_get_monotonic_time () < end)
    {
      if (tier2_may_fire (driver, http))
        quiet = 0;
      else if (++quiet >= 2)
        break;
      soak_sleep_ms (100);
    }
  driver->us_tier2_room += g_get_monotonic_time () - start;
}

/* Sleeps @ms, counting the time in @account. */
static void
driver_sleep (gint64 *account,
              guint   ms)
{
  gint64 start = g_get_monotonic_time ();

  soak_sleep_ms (ms);
  *account += g_get_monotonic_time () - start;
}

static gpointer
driver_thread (gpointer data)
{
  Driver *driver = data;
  Soak *soak = driver->soak;
  gint64 start = g_get_monotonic_time ();
  guint n = 0;

  while (!g_atomic_int_get (&soak->stopping))
    {
      guint roll = g_rand_int_range (driver->rand, 0, 100);

      if (driver->last_operator_id == 0 || roll < 35)
        {
          /* Mostly after the reply, sometimes into the queue. */
          if (g_rand_int_range (driver->rand, 0, 100) < 75)
            {
              gint64 start_wait = g_get_monotonic_time ();

              wait_idle (driver, 20000);
              driver->us_replies += g_get_monotonic_time () - start_wait;
            }
          do_post (driver, ++n);
        }
      else if (roll < 43)
        do_regenerate (driver);
      else if (roll < 49)
        do_edit (driver, ++n);
      else if (roll < 57 && driver->run_ids->len > 0)
        do_cancel_run (driver, g_array_index (driver->run_ids, gint64, driver->run_ids->len - 1));
      else if (roll < 75)
        {
          /* A cancel at a random moment of the countdown or of its run. */
          driver_sleep (&driver->us_cancel_wait, g_rand_int_range (driver->rand, 0, 2500));
          do_cancel_tier2 (driver);
        }
      else
        {
          /* Leave room for Tier 2 to fire. */
          leave_room_for_tier2 (driver, 2500 + g_rand_int_range (driver->rand, 0, 2000));
        }

      driver_sleep (&driver->us_pauses, g_rand_int_range (driver->rand, 0, 600));

      if ((guint)g_atomic_int_get (&soak->runs_queued) >= soak->target_runs)
        g_atomic_int_set (&soak->stopping, TRUE);
    }
  driver->us_total = g_get_monotonic_time () - start;

  return NULL;
}

/* Reads the conversation's event stream until the program goes away. */
static gpointer
events_thread (gpointer data)
{
  Driver *driver = data;
  Soak *soak = driver->soak;
  g_autoptr(SoupSession) http = soak_http_new ();
  g_autoptr(SoupMessage) msg = NULL;
  g_autoptr(GInputStream) stream = NULL;
  g_autoptr(GDataInputStream) lines = NULL;
  g_autofree char *url = NULL;
  g_autofree char *authorization = NULL;
  g_autofree char *name = NULL;
  g_autoptr(GError) error = NULL;
  char *line;

  g_object_set (http, "timeout", 0, NULL);
  url = g_strdup_printf ("http://127.0.0.1:%u/api/v1/sessions/%" G_GINT64_FORMAT "/events",
                         soak->kaged.port, driver->session_id);
  authorization = g_strdup_printf ("Bearer %s", soak->kaged.token);
  msg = soup_message_new ("GET", url);
  soup_message_headers_replace (soup_message_get_request_headers (msg),
                                "Authorization", authorization);
  stream = soup_session_send (http, msg, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (soup_message_get_status (msg), ==, 200);
  lines = g_data_input_stream_new (stream);

  while ((line = g_data_input_stream_read_line_utf8 (lines, NULL, NULL, NULL)) != NULL)
    {
      if (g_str_has_prefix (line, "event: "))
        {
          g_free (name);
          name = g_strdup (line + strlen ("event: "));
        }
      else if (g_str_has_prefix (line, "data: ") && name != NULL)
        {
          g_autoptr(JsonNode) node = json_from_string (line + strlen ("data: "), NULL);
          JsonObject *object = node != NULL ? json_node_get_object (node) : NULL;
          gint64 run_id = object != NULL && json_object_has_member (object, "id")
                          ? json_object_get_int_member (object, "id") : 0;
          gint64 delta_run_id = object != NULL && json_object_has_member (object, "run_id")
                                ? json_object_get_int_member (object, "run_id") : 0;

          driver->n_events++;
          if (g_str_equal (name, "run.queued"))
            {
              g_atomic_int_inc (&soak->runs_queued);
            }
          else if (g_str_equal (name, "run.started"))
            {
              g_hash_table_add (driver->active, GSIZE_TO_POINTER (run_id));
              driver->max_active = MAX (driver->max_active, g_hash_table_size (driver->active));
              if (g_hash_table_size (driver->active) > 1)
                violation (soak, "s%02u: %u runs active at once", driver->index,
                           g_hash_table_size (driver->active));
            }
          else if (g_str_equal (name, "run.finished"))
            {
              g_hash_table_remove (driver->active, GSIZE_TO_POINTER (run_id));
            }
          else if (g_str_equal (name, "message.delta"))
            {
              g_hash_table_add (driver->with_text, GSIZE_TO_POINTER (delta_run_id));
            }
          else if (g_str_equal (name, "run.retrying"))
            {
              guint next = json_object_get_int_member (object, "next_attempt");

              driver->n_tier1_retries++;
              driver->max_tier1_attempt = MAX (driver->max_tier1_attempt, next);
              if (next > 3)
                violation (soak, "run %" G_GINT64_FORMAT ": Tier 1 attempt %u", delta_run_id, next);
              if (g_hash_table_contains (driver->with_text, GSIZE_TO_POINTER (delta_run_id)))
                violation (soak, "run %" G_GINT64_FORMAT ": Tier 1 retries after a delta",
                           delta_run_id);
            }
        }
      g_free (line);
    }

  return NULL;
}

/* Stands every retry down and cancels every run, until the conversation
 * is still. */
static void
settle (Driver *driver)
{
  g_autoptr(SoupSession) http = soak_http_new ();

  for (guint round = 0; round < 20; round++)
    {
      do_cancel_tier2 (driver);
      for (guint i = driver->run_ids->len; i > 0 && i + 5 > driver->run_ids->len; i--)
        do_cancel_run (driver, g_array_index (driver->run_ids, gint64, i - 1));
      wait_idle (driver, 1000);
      if (soak_session_is_idle (&driver->soak->kaged, http, driver->session_id))
        {
          soak_sleep_ms (soak_scaled_ms (300));
          if (soak_session_is_idle (&driver->soak->kaged, http, driver->session_id))
            {
              do_cancel_tier2 (driver);
              return;
            }
        }
    }
  violation (driver->soak, "s%02u: does not settle", driver->index);
}

/* ------------------------------------------------------------------------
 * The checks
 * ------------------------------------------------------------------------ */


/* The conversation a request was about, from the markers of its operator
 * messages, or -1. */
static int
request_conversation (GBytes *body)
{
  gsize len = 0;
  const char *data = g_bytes_get_data (body, &len);
  g_autofree char *text = g_strndup (data, len);
  const char *marker = strstr (text, "[s");

  if (marker == NULL || !g_ascii_isdigit (marker[2]) || !g_ascii_isdigit (marker[3]))
    return -1;

  return (marker[2] - '0') * 10 + (marker[3] - '0');
}

typedef struct
{
  gint64  id;
  gint64  session_id;
  char   *status;
  char   *retry_class;
  gint64  started_at;
  gint64  finished_at;
} Run;

static void
run_free (Run *run)
{
  g_free (run->status);
  g_free (run->retry_class);
  g_free (run);
}

static char *
column_dup (sqlite3_stmt *stmt,
            int           column)
{
  const unsigned char *text = sqlite3_column_text (stmt, column);

  return text != NULL ? g_strdup ((const char *)text) : NULL;
}

static GPtrArray *
read_runs (sqlite3 *db)
{
  GPtrArray *runs = g_ptr_array_new_with_free_func ((GDestroyNotify)run_free);
  sqlite3_stmt *stmt = NULL;

  g_assert_cmpint (sqlite3_prepare_v2 (db,
    "SELECT r.id, r.session_id, r.status, r.retry_class, r.started_at, r.finished_at "
    "FROM runs r ORDER BY r.session_id, r.started_at, r.id", -1, &stmt, NULL), ==, SQLITE_OK);
  while (sqlite3_step (stmt) == SQLITE_ROW)
    {
      Run *run = g_new0 (Run, 1);

      run->id = sqlite3_column_int64 (stmt, 0);
      run->session_id = sqlite3_column_int64 (stmt, 1);
      run->status = column_dup (stmt, 2);
      run->retry_class = column_dup (stmt, 3);
      run->started_at = sqlite3_column_type (stmt, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64 (stmt, 4);
      run->finished_at = sqlite3_column_type (stmt, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64 (stmt, 5);
      g_ptr_array_add (runs, run);
    }
  sqlite3_finalize (stmt);

  return runs;
}

/* The runs as the checks see them: what each kept of its reply and the
 * attempts it logged. */
static GPtrArray *
read_check_runs (Soak    *soak,
                 sqlite3 *db)
{
  GPtrArray *runs = g_ptr_array_new_with_free_func ((GDestroyNotify)soak_run_free);
  sqlite3_stmt *stmt = NULL;
  sqlite3_stmt *attempts = NULL;

  g_assert_cmpint (sqlite3_prepare_v2 (db,
    "SELECT r.id, r.session_id, r.status, r.retry_class, "
    "  (SELECT m.content FROM messages m WHERE m.run_id = r.id AND m.role = 'agent' "
    "   ORDER BY m.id LIMIT 1) "
    "FROM runs r ORDER BY r.id", -1, &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db,
    "SELECT http_status, error, retry_class FROM attempts WHERE run_id = ? ORDER BY seq",
    -1, &attempts, NULL), ==, SQLITE_OK);
  while (sqlite3_step (stmt) == SQLITE_ROW)
    {
      gint64 session_id = sqlite3_column_int64 (stmt, 1);
      int conversation = -1;
      SoakRun *run;

      for (guint d = 0; d < soak->n_drivers; d++)
        if (soak->drivers[d].session_id == session_id)
          conversation = d;
      g_assert_cmpint (conversation, >=, 0);

      run = soak_run_new (sqlite3_column_int64 (stmt, 0), conversation,
                          (const char *)sqlite3_column_text (stmt, 2),
                          (const char *)sqlite3_column_text (stmt, 3),
                          (const char *)sqlite3_column_text (stmt, 4));
      sqlite3_bind_int64 (attempts, 1, run->id);
      while (sqlite3_step (attempts) == SQLITE_ROW)
        soak_run_add_attempt (run,
                              sqlite3_column_type (attempts, 0) == SQLITE_NULL
                                ? -1 : sqlite3_column_int64 (attempts, 0),
                              (const char *)sqlite3_column_text (attempts, 1),
                              (const char *)sqlite3_column_text (attempts, 2));
      sqlite3_reset (attempts);
      g_ptr_array_add (runs, run);
    }
  sqlite3_finalize (attempts);
  sqlite3_finalize (stmt);

  return runs;
}

static GPtrArray *
read_summaries (sqlite3 *db)
{
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free);
  sqlite3_stmt *stmt = NULL;

  g_assert_cmpint (sqlite3_prepare_v2 (db, "SELECT content FROM messages WHERE role = 'summary'",
                                       -1, &stmt, NULL), ==, SQLITE_OK);
  while (sqlite3_step (stmt) == SQLITE_ROW)
    g_ptr_array_add (texts, g_strdup ((const char *)sqlite3_column_text (stmt, 0)));
  sqlite3_finalize (stmt);

  return texts;
}

/* One active run per conversation, exactly, from what was stored. */
static void
check_overlaps (Soak      *soak,
                GPtrArray *runs)
{
  for (guint i = 1; i < runs->len; i++)
    {
      Run *before = g_ptr_array_index (runs, i - 1);
      Run *run = g_ptr_array_index (runs, i);

      if (before->session_id == run->session_id && before->started_at >= 0 &&
          run->started_at >= 0 && run->started_at < before->finished_at)
        violation (soak, "runs %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT " overlap",
                   before->id, run->id);
    }
}

/* After a Tier 2 cancel, nothing reaches the provider for the conversation
 * until the operator acts. */
typedef struct
{
  gint64       time;
  const Fault *fault;
} Arrival;

static void
check_tier2_cancels (Soak       *soak,
                     GPtrArray **arrivals)
{
  for (guint d = 0; d < soak->n_drivers; d++)
    {
      Driver *driver = &soak->drivers[d];

      for (guint c = 0; c < driver->tier2_cancels->len; c++)
        {
          gint64 cancelled = g_array_index (driver->tier2_cancels, gint64, c);
          gint64 next_action = G_MAXINT64;

          for (guint a = 0; a < driver->actions->len; a++)
            {
              gint64 action = g_array_index (driver->actions, gint64, a);

              if (action >= cancelled && action < next_action)
                next_action = action;
            }

          for (guint r = 0; r < arrivals[d]->len; r++)
            {
              const Arrival *request = g_ptr_array_index (arrivals[d], r);

              if (request->time > cancelled && request->time < next_action)
                violation (soak, "s%02u: a request (%s) %" G_GINT64_FORMAT " ms after a Tier 2 "
                           "cancel", d, request->fault->name, request->time - cancelled);
            }
        }
    }
}

static void
check_operator_rows (Soak    *soak,
                     sqlite3 *db)
{
  g_autoptr(GHashTable) stored = soak_db_operator_rows (db);
  GHashTableIter iter;
  gpointer key;
  gpointer value;

  if (g_hash_table_size (stored) != g_hash_table_size (soak->operator_rows))
    violation (soak, "%u operator rows stored, %u posted", g_hash_table_size (stored),
               g_hash_table_size (soak->operator_rows));

  g_hash_table_iter_init (&iter, soak->operator_rows);
  while (g_hash_table_iter_next (&iter, &key, &value))
    {
      const char *content = g_hash_table_lookup (stored, key);

      if (g_strcmp0 (content, value) != 0)
        violation (soak, "operator message %" G_GINT64_FORMAT " reads “%s”, not “%s”",
                   *(gint64 *)key, content != NULL ? content : "(missing)", (const char *)value);
    }
}

/* With SOAK_KEEP, the provider's log beside the database: a line per
 * request (its number, as the stamps give it, arrival in ms since the
 * epoch, fault, conversation, and the last operator message it carried). */
static void
keep_requests (Soak            *soak,
               KagedFakeServer *server)
{
  g_autofree char *path = g_build_filename (soak->kaged.dir, "provider-requests.tsv", NULL);
  g_autoptr(GString) log = g_string_new ("request\ttime\tfault\tconversation\tlast_operator\n");
  guint n_requests = kaged_fake_server_get_n_requests (server, NULL);

  for (guint r = 0; r < n_requests; r++)
    {
      GBytes *body = kaged_fake_server_get_request_body (server, r);
      g_autofree char *text = g_strndup (g_bytes_get_data (body, NULL), g_bytes_get_size (body));
      g_autofree char *last = NULL;
      const char *marker = NULL;

      for (const char *p = strstr (text, "[s"); p != NULL; p = strstr (p + 1, "[s"))
        marker = p;
      if (marker != NULL)
        last = g_strndup (marker, strcspn (marker, "\""));
      g_string_append_printf (log, "%u\t%" G_GINT64_FORMAT "\t%s\t%d\t%s\n", r,
                              kaged_fake_server_get_request_time (server, r),
                              kaged_fake_server_get_request_fault (server, r),
                              request_conversation (body), last != NULL ? last : "");
    }
  g_file_set_contents (path, log->str, log->len, NULL);
  g_print ("# kept in %s\n", soak->kaged.dir);
}

/* ------------------------------------------------------------------------ */

static void
test_fault_soak (void)
{
  guint n_sessions = soak_env_uint ("SOAK_SESSIONS", 5);
  guint seed = soak_env_uint ("SOAK_SEED", 1);
  g_autofree char *scenario = build_scenario (seed);
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(GHashTable) fault_counts = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GHashTable) class_counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GPtrArray) runs = NULL;
  g_autoptr(GPtrArray) check_runs = NULL;
  g_autoptr(GPtrArray) summaries = NULL;
  g_autoptr(SoupSession) http = soak_http_new ();
  g_autofree SoakServed *served = NULL;
  SoakRunFigures figures = { 0 };
  GPtrArray **arrivals;
  /* A provider's silence is cut short: 1 s at full speed. */
  g_autofree char *provider_timeout = g_strdup_printf ("--provider-timeout=%u",
                                                       soak_scaled_ms (1000) / 1000);
  const char *extra[] = { "--auto-retry", provider_timeout, NULL };
  SoakProvider *provider;
  Soak soak = { 0 };
  gint64 begin = g_get_monotonic_time ();
  double seconds;
  guint n_refusals = 0;
  guint max_active = 0;
  guint max_tier1_attempt = 0;
  guint n_tier1_retries = 0;
  guint n_requests;
  sqlite3 *db;

  g_assert_cmpuint (n_sessions, <=, 99);
  g_mutex_init (&soak.lock);
  soak.target_runs = soak_env_uint ("SOAK_RUNS", 150);
  soak.operator_rows = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  soak_violations_init (&soak.violations);

  provider = soak_start (&soak.kaged, scenario, extra);

  soak.n_drivers = n_sessions;
  soak.drivers = g_new0 (Driver, n_sessions);
  for (guint d = 0; d < n_sessions; d++)
    {
      Driver *driver = &soak.drivers[d];
      g_autofree char *title = g_strdup_printf ("Soak %u", d);

      driver->soak = &soak;
      driver->index = d;
      driver->session_id = soak_create_session (&soak.kaged, http, title);
      driver->rand = g_rand_new_with_seed (seed * 1000 + d);
      driver->run_ids = g_array_new (FALSE, FALSE, sizeof (gint64));
      driver->actions = g_array_new (FALSE, FALSE, sizeof (gint64));
      driver->tier2_cancels = g_array_new (FALSE, FALSE, sizeof (gint64));
      driver->active = g_hash_table_new (NULL, NULL);
      driver->with_text = g_hash_table_new (NULL, NULL);
      driver->events_thread = g_thread_new ("soak-events", events_thread, driver);
    }
  /* The event streams are open before anything runs. */
  soak_sleep_ms (soak_scaled_ms (200));
  for (guint d = 0; d < n_sessions; d++)
    soak.drivers[d].thread = g_thread_new ("soak-driver", driver_thread, &soak.drivers[d]);
  for (guint d = 0; d < n_sessions; d++)
    g_thread_join (soak.drivers[d].thread);

  for (guint d = 0; d < n_sessions; d++)
    settle (&soak.drivers[d]);

  soak_kaged_stop (&soak.kaged);
  for (guint d = 0; d < n_sessions; d++)
    g_thread_join (soak.drivers[d].events_thread);
  server = soak_provider_stop (provider);
  seconds = (g_get_monotonic_time () - begin) / (double)G_USEC_PER_SEC;

  /* What the provider served: by request number for the checks of the
   * runs, and in time per conversation for those of Tier 2 cancels. */
  arrivals = g_new0 (GPtrArray *, n_sessions);
  for (guint d = 0; d < n_sessions; d++)
    arrivals[d] = g_ptr_array_new_with_free_func (g_free);
  n_requests = kaged_fake_server_get_n_requests (server, NULL);
  served = g_new0 (SoakServed, MAX (n_requests, 1));
  for (guint r = 0; r < n_requests; r++)
    {
      const Fault *fault = find_fault (kaged_fake_server_get_request_fault (server, r));
      int conversation = request_conversation (kaged_fake_server_get_request_body (server, r));
      Arrival *request;

      g_assert_nonnull (fault);
      g_hash_table_insert (fault_counts, (gpointer)fault->name,
                           GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (fault_counts, fault->name)) + 1));
      served[r].fault = fault;
      served[r].conversation = -1;
      if (conversation < 0 || (guint)conversation >= n_sessions)
        {
          violation (&soak, "request %u names no conversation", r);
          continue;
        }
      served[r].conversation = conversation;
      request = g_new0 (Arrival, 1);
      request->time = kaged_fake_server_get_request_time (server, r);
      request->fault = fault;
      g_ptr_array_add (arrivals[conversation], request);
    }
  kaged_fake_server_get_refusals (server, &n_refusals);
  if (g_getenv ("SOAK_KEEP") != NULL)
    keep_requests (&soak, server);

  db = soak_open_db (soak.kaged.db_path);
  runs = read_runs (db);
  check_overlaps (&soak, runs);
  check_runs = read_check_runs (&soak, db);
  summaries = read_summaries (db);
  figures.class_counts = class_counts;
  soak_check_runs (check_runs, served, n_requests, summaries, n_sessions, &soak.violations,
                   &figures);
  g_print ("# runs with a compaction: %u\n", figures.n_compacted);
  check_tier2_cancels (&soak, arrivals);
  check_operator_rows (&soak, db);
  if (!soak_db_integrity_ok (db))
    violation (&soak, "PRAGMA integrity_check is not ok");

  for (guint d = 0; d < n_sessions; d++)
    {
      max_active = MAX (max_active, soak.drivers[d].max_active);
      max_tier1_attempt = MAX (max_tier1_attempt, soak.drivers[d].max_tier1_attempt);
      n_tier1_retries += soak.drivers[d].n_tier1_retries;
    }

  /* The figures. */
  g_print ("# fault soak: seed %u, %u conversations, %.1f s\n", seed, n_sessions, seconds);
  g_print ("# runs %u: succeeded %" G_GINT64_FORMAT ", failed %" G_GINT64_FORMAT
           ", cancelled %" G_GINT64_FORMAT "; started by Tier 2 %d\n", runs->len,
           soak_db_count (db, "SELECT count(*) FROM runs WHERE status = 'succeeded'"),
           soak_db_count (db, "SELECT count(*) FROM runs WHERE status = 'failed'"),
           soak_db_count (db, "SELECT count(*) FROM runs WHERE status = 'cancelled'"),
           (int)runs->len - (int)(soak.n_posts + soak.n_regenerates + soak.n_edits));
  g_print ("# driver: %u posts, %u regenerates, %u edits, %u run cancels, %u Tier 2 cancels\n",
           soak.n_posts, soak.n_regenerates, soak.n_edits, soak.n_run_cancels,
           soak.n_tier2_cancels);
  g_print ("# provider: %u requests, %u refusal windows; by fault:", n_requests, n_refusals);
  for (guint i = 0; i < G_N_ELEMENTS (faults); i++)
    g_print (" %s %u", faults[i].name,
             GPOINTER_TO_UINT (g_hash_table_lookup (fault_counts, faults[i].name)));
  g_print ("\n# failed runs by class:");
  {
    GHashTableIter iter;
    gpointer key;
    gpointer value;

    g_hash_table_iter_init (&iter, class_counts);
    while (g_hash_table_iter_next (&iter, &key, &value))
      g_print (" %s %u", (const char *)key, GPOINTER_TO_UINT (value));
  }
  g_print ("\n# Tier 1: %u retries, highest attempt number %u; most attempts logged in a run "
           "without compaction %u, with one %u\n", n_tier1_retries, max_tier1_attempt,
           figures.max_attempts_plain, figures.max_attempts);
  g_print ("# most runs active at once in a conversation %u\n", max_active);
  {
    gint64 pauses = 0, room = 0, cancel_wait = 0, replies = 0, total = 0;

    for (guint d = 0; d < n_sessions; d++)
      {
        pauses += soak.drivers[d].us_pauses;
        room += soak.drivers[d].us_tier2_room;
        cancel_wait += soak.drivers[d].us_cancel_wait;
        replies += soak.drivers[d].us_replies;
        total += soak.drivers[d].us_total;
      }
    total = MAX (total, 1);
    g_print ("# drivers' time: pauses between actions %.0f%%, room for Tier 2 %.0f%%, "
             "before a Tier 2 cancel %.0f%%, waiting for replies %.0f%%, the rest (API calls) "
             "%.0f%%\n", 100.0 * pauses / total, 100.0 * room / total,
             100.0 * cancel_wait / total, 100.0 * replies / total,
             100.0 * (total - pauses - room - cancel_wait - replies) / total);
  }
  g_print ("# operator messages %u, all intact: %s; integrity_check ok: %s\n",
           g_hash_table_size (soak.operator_rows),
           soak_violations_count (&soak.violations) == 0 ? "yes" : "see violations",
           soak_db_integrity_ok (db) ? "yes" : "NO");
  g_print ("# invariants violated: %u\n", soak_violations_count (&soak.violations));
  fflush (stdout);

  sqlite3_close (db);

  g_assert_cmpuint (runs->len, >=, soak.target_runs);
  g_assert_cmpuint (soak_violations_count (&soak.violations), ==, 0);

  for (guint d = 0; d < n_sessions; d++)
    {
      Driver *driver = &soak.drivers[d];

      g_rand_free (driver->rand);
      g_array_unref (driver->run_ids);
      g_array_unref (driver->actions);
      g_array_unref (driver->tier2_cancels);
      g_hash_table_unref (driver->active);
      g_hash_table_unref (driver->with_text);
      g_ptr_array_unref (arrivals[d]);
    }
  g_free (arrivals);
  g_free (soak.drivers);
  g_hash_table_unref (soak.operator_rows);
  soak_violations_clear (&soak.violations);
  g_mutex_clear (&soak.lock);
  soak_kaged_clear (&soak.kaged);
}

int
main (int   argc,
      char *argv[])
{
  soak_test_init (&argc, &argv);

  g_test_add_func ("/soak/faults", test_fault_soak);

  return g_test_run ();
}
