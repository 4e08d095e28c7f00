/* soak-kills.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The kill soak: a real `kaged --headless --auto-retry` is killed with
 * SIGKILL at random moments of a busy workload (conversations posting,
 * replies streaming, Tier 2 retries counting down) and started again on
 * the same database, over and over. Every time the database opens, every
 * operator message the API acknowledged is there as it was posted, the
 * runs the kill interrupted are recovered as failed `interrupted` with the
 * partial text they had saved, and Tier 2 retries that were pending are
 * pending again, due at the same moment.
 *
 * SOAK_KILLS (default 10), SOAK_SESSIONS (default 4) and SOAK_SEED
 * (default 1) size it; the benchmark kills it 100 times.
 */

#include "config.h"

#include <stdio.h>
#include <string.h>

#include "kaged-soak-fixture.h"

static const char scenario_format[] =
  "{\"mix\": true, \"seed\": %u, \"steps\": ["
  "{\"name\": \"slow-reply\", \"weight\": 6, \"kind\": \"openai\", \"chunks\": 40, \"delay_ms\": 25, "
  " \"text\": \"A reply that takes about a second to arrive, in forty small pieces, so that "
  "a kill often lands in the middle of it and leaves part of it saved.\"},"
  "{\"name\": \"overloaded-long-wait\", \"weight\": 2, \"status\": 529, "
  " \"headers\": {\"retry-after\": \"40\"}, "
  " \"body\": {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}}"
  "]}";

typedef struct _Soak Soak;

typedef struct
{
  Soak    *soak;
  guint    index;
  gint64   session_id;
  GRand   *rand;
  GThread *thread;
} Driver;

struct _Soak
{
  SoakKaged   kaged;
  Driver     *drivers;
  guint       n_drivers;
  gint        stopping;       /* atomic */
  gint        paused;         /* atomic: no new posts */
  GMutex      lock;
  GHashTable *acknowledged;   /* gint64 * → content */
  guint       n_posts_lost_in_flight;
  SoakViolations violations;
};

#define violation(soak, ...) soak_violations_add (&(soak)->violations, __VA_ARGS__)

/* The state of a conversation's Tier 2 retry, or NULL when the program
 * does not answer. */
static char *
retry_state (Soak        *soak,
             SoupSession *http,
             gint64       session_id,
             gint64      *next_at)
{
  g_autoptr(JsonNode) node = NULL;
  JsonObject *object;
  guint status = 0;

  node = soak_api (&soak->kaged, http, "GET", NULL, &status,
                   "sessions/%" G_GINT64_FORMAT "/retry", session_id);
  if (status != 200 || node == NULL)
    return NULL;

  object = json_node_get_object (node);
  if (next_at != NULL)
    *next_at = json_object_get_null_member (object, "next_at")
               ? 0 : json_object_get_int_member (object, "next_at");

  return g_strdup (json_object_get_string_member (object, "state"));
}

static gpointer
driver_thread (gpointer data)
{
  Driver *driver = data;
  Soak *soak = driver->soak;
  g_autoptr(SoupSession) http = soak_http_new ();
  guint n = 0;

  g_object_set (http, "timeout", soak_scaled_ms (5000) / 1000, NULL);

  while (!g_atomic_int_get (&soak->stopping))
    {
      g_autofree char *state = NULL;

      if (g_atomic_int_get (&soak->paused))
        {
          soak_sleep_ms (20);
          continue;
        }

      state = retry_state (soak, http, driver->session_id, NULL);
      /* A countdown is mostly left to run, to be there at the kill, and
       * a reply mostly left to finish: the queue stays short. */
      if (state != NULL &&
          (g_str_equal (state, "idle") || g_str_equal (state, "cancelled") ||
           g_rand_int_range (driver->rand, 0, 100) < 10) &&
          (g_rand_int_range (driver->rand, 0, 100) < 20 ||
           soak_session_is_idle (&soak->kaged, http, driver->session_id)))
        {
          g_autofree char *content = NULL;
          g_autofree char *body = NULL;
          g_autoptr(JsonNode) node = NULL;
          guint status = 0;

          n++;
          content = g_strdup_printf ("[s%02u m%u] Question %u", driver->index, n, n);
          body = g_strdup_printf ("{\"content\": \"%s\"}", content);

          node = soak_api (&soak->kaged, http, "POST", body, &status,
                           "sessions/%" G_GINT64_FORMAT "/messages", driver->session_id);
          if (status == 202 && node != NULL)
            {
              gint64 *id = g_new (gint64, 1);

              *id = json_object_get_int_member (json_node_get_object (node), "message_id");
              g_mutex_lock (&soak->lock);
              g_hash_table_insert (soak->acknowledged, id, g_steal_pointer (&content));
              g_mutex_unlock (&soak->lock);
            }
          else if (status != 0)
            {
              violation (soak, "s%02u: posting answered %u", driver->index, status);
            }
        }

      soak_sleep_ms (g_rand_int_range (driver->rand, 50, 400));
    }

  return NULL;
}

typedef struct
{
  gint64  run_id;
  gint64  message_id;
  char   *content;
} Interrupted;

static void
interrupted_free (Interrupted *interrupted)
{
  g_free (interrupted->content);
  g_free (interrupted);
}

/* What the killed program left running: each run and its saved text. */
static GPtrArray *
read_running (sqlite3 *db)
{
  GPtrArray *running = g_ptr_array_new_with_free_func ((GDestroyNotify)interrupted_free);
  sqlite3_stmt *stmt = NULL;

  g_assert_cmpint (sqlite3_prepare_v2 (db,
    "SELECT r.id, m.id, m.content FROM runs r JOIN messages m ON m.run_id = r.id "
    "WHERE r.status = 'running' AND m.role = 'agent'", -1, &stmt, NULL), ==, SQLITE_OK);
  while (sqlite3_step (stmt) == SQLITE_ROW)
    {
      Interrupted *interrupted = g_new0 (Interrupted, 1);

      interrupted->run_id = sqlite3_column_int64 (stmt, 0);
      interrupted->message_id = sqlite3_column_int64 (stmt, 1);
      interrupted->content = g_strdup ((const char *)sqlite3_column_text (stmt, 2));
      g_ptr_array_add (running, interrupted);
    }
  sqlite3_finalize (stmt);

  return running;
}

static void
check_recovered (Soak        *soak,
                 SoupSession *http,
                 GPtrArray   *running,
                 guint       *n_partial)
{
  for (guint i = 0; i < running->len; i++)
    {
      Interrupted *interrupted = g_ptr_array_index (running, i);
      g_autoptr(JsonNode) node = NULL;
      JsonObject *run;
      JsonNode *retry;
      guint status = 0;
      gint64 session_id = 0;
      sqlite3 *db;
      sqlite3_stmt *stmt = NULL;

      /* The run, through the API. */
      db = soak_open_db (soak->kaged.db_path);
      g_assert_cmpint (sqlite3_prepare_v2 (db, "SELECT session_id FROM runs WHERE id = ?", -1,
                                           &stmt, NULL), ==, SQLITE_OK);
      sqlite3_bind_int64 (stmt, 1, interrupted->run_id);
      if (sqlite3_step (stmt) == SQLITE_ROW)
        session_id = sqlite3_column_int64 (stmt, 0);
      sqlite3_finalize (stmt);

      node = soak_api (&soak->kaged, http, "GET", NULL, &status,
                       "sessions/%" G_GINT64_FORMAT "/runs/%" G_GINT64_FORMAT,
                       session_id, interrupted->run_id);
      run = node != NULL ? json_node_get_object (node) : NULL;
      retry = run != NULL ? json_object_get_member (run, "retry") : NULL;
      if (status != 200 || g_strcmp0 (json_object_get_string_member (run, "status"), "failed") != 0 ||
          retry == NULL || !JSON_NODE_HOLDS_OBJECT (retry) ||
          g_strcmp0 (json_object_get_string_member (json_node_get_object (retry), "retry_class"),
                     "interrupted") != 0)
        violation (soak, "run %" G_GINT64_FORMAT " was not recovered as interrupted",
                   interrupted->run_id);

      /* Its reply, with the text saved before the kill. */
      g_assert_cmpint (sqlite3_prepare_v2 (db, "SELECT status, content FROM messages WHERE id = ?",
                                           -1, &stmt, NULL), ==, SQLITE_OK);
      sqlite3_bind_int64 (stmt, 1, interrupted->message_id);
      if (sqlite3_step (stmt) != SQLITE_ROW ||
          g_strcmp0 ((const char *)sqlite3_column_text (stmt, 0), "interrupted") != 0 ||
          g_strcmp0 ((const char *)sqlite3_column_text (stmt, 1), interrupted->content) != 0)
        violation (soak, "the reply of run %" G_GINT64_FORMAT " lost its partial text or state",
                   interrupted->run_id);
      sqlite3_finalize (stmt);
      sqlite3_close (db);

      if (interrupted->content != NULL && interrupted->content[0] != '\0')
        (*n_partial)++;
    }
}

static void
check_acknowledged (Soak    *soak,
                    sqlite3 *db)
{
  g_autoptr(GHashTable) stored = soak_db_operator_rows (db);
  GHashTableIter iter;
  gpointer key;
  gpointer value;

  g_mutex_lock (&soak->lock);
  g_hash_table_iter_init (&iter, soak->acknowledged);
  while (g_hash_table_iter_next (&iter, &key, &value))
    {
      const char *content = g_hash_table_lookup (stored, key);

      if (g_strcmp0 (content, value) != 0)
        violation (soak, "acknowledged operator message %" G_GINT64_FORMAT " reads “%s”",
                   *(gint64 *)key, content != NULL ? content : "(lost)");
    }
  g_mutex_unlock (&soak->lock);
}

static void
test_kill_soak (void)
{
  guint n_kills = soak_env_uint ("SOAK_KILLS", 10);
  guint n_sessions = soak_env_uint ("SOAK_SESSIONS", 4);
  guint seed = soak_env_uint ("SOAK_SEED", 1);
  g_autofree char *scenario = g_strdup_printf (scenario_format, seed);
  g_autoptr(SoupSession) http = soak_http_new ();
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(GRand) rand = g_rand_new_with_seed (seed);
  const char *extra[] = { "--auto-retry", NULL };
  SoakProvider *provider;
  Soak soak = { 0 };
  gint64 begin = g_get_monotonic_time ();
  guint n_interrupted = 0;
  guint n_partial = 0;
  guint n_pending = 0;
  guint n_resumed = 0;
  double seconds;
  sqlite3 *db;

  g_mutex_init (&soak.lock);
  soak.acknowledged = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  soak_violations_init (&soak.violations);

  provider = soak_start (&soak.kaged, scenario, extra);

  soak.n_drivers = n_sessions;
  soak.drivers = g_new0 (Driver, n_sessions);
  for (guint d = 0; d < n_sessions; d++)
    {
      g_autofree char *title = g_strdup_printf ("Kill soak %u", d);

      soak.drivers[d].soak = &soak;
      soak.drivers[d].index = d;
      soak.drivers[d].session_id = soak_create_session (&soak.kaged, http, title);
      soak.drivers[d].rand = g_rand_new_with_seed (seed * 1000 + d);
      soak.drivers[d].thread = g_thread_new ("soak-driver", driver_thread, &soak.drivers[d]);
    }

  for (guint k = 0; k < n_kills; k++)
    {
      g_autoptr(GPtrArray) running = NULL;
      g_autofree gint64 *next_at = g_new0 (gint64, n_sessions);
      g_autofree gboolean *pending = g_new0 (gboolean, n_sessions);

      /* The first rounds let replies get going; then any moment will do. */
      soak_sleep_ms (g_rand_int_range (rand, k < 2 ? 1500 : 100, 2000));

      /* Which retries count down, just before the kill: posts, which would
       * stand them down, wait for the program to be back (a post under way
       * is given the time to end). */
      g_atomic_int_set (&soak.paused, TRUE);
      soak_sleep_ms (soak_scaled_ms (400));
      for (guint d = 0; d < n_sessions; d++)
        {
          g_autofree char *state = retry_state (&soak, http, soak.drivers[d].session_id,
                                                &next_at[d]);

          /* Due after the program is back, with room for a slow start. */
          pending[d] = g_strcmp0 (state, "armed") == 0 &&
                       next_at[d] > soak_now_ms () + soak_scaled_ms (5000);
        }
      soak_kaged_kill (&soak.kaged);

      /* The file the kill left opens, and says what was running. */
      db = soak_open_db (soak.kaged.db_path);
      running = read_running (db);
      sqlite3_close (db);
      n_interrupted += running->len;

      soak_kaged_start (&soak.kaged);

      check_recovered (&soak, http, running, &n_partial);

      for (guint d = 0; d < n_sessions; d++)
        {
          g_autofree char *state = NULL;
          gint64 resumed_at = 0;

          if (!pending[d])
            continue;

          n_pending++;
          state = retry_state (&soak, http, soak.drivers[d].session_id, &resumed_at);
          /* The driver may have posted in between, which stands it down. */
          if (g_strcmp0 (state, "armed") == 0 && ABS (resumed_at - next_at[d]) <= 1000)
            n_resumed++;
          else
            violation (&soak, "s%02u: the retry due at %" G_GINT64_FORMAT " came back %s, "
                       "due at %" G_GINT64_FORMAT, d, next_at[d], state, resumed_at);
        }
      g_atomic_int_set (&soak.paused, FALSE);
    }

  g_atomic_int_set (&soak.stopping, TRUE);
  for (guint d = 0; d < n_sessions; d++)
    g_thread_join (soak.drivers[d].thread);
  soak_kaged_stop (&soak.kaged);
  server = soak_provider_stop (provider);
  seconds = (g_get_monotonic_time () - begin) / (double)G_USEC_PER_SEC;

  db = soak_open_db (soak.kaged.db_path);
  check_acknowledged (&soak, db);
  if (!soak_db_integrity_ok (db))
    violation (&soak, "PRAGMA integrity_check is not ok");
  /* Queued runs wait for the next start; none is left running. */
  if (soak_db_count (db, "SELECT count(*) FROM runs WHERE status = 'running'") != 0)
    violation (&soak, "runs are left running after the last stop");

  g_print ("# kill soak: seed %u, %u conversations, %u SIGKILLs in %.1f s\n", seed, n_sessions,
           n_kills, seconds);
  g_print ("# database opened %u of %u times; %u acknowledged operator messages, all intact: %s\n",
           n_kills + 1, n_kills + 1, g_hash_table_size (soak.acknowledged),
           soak_violations_count (&soak.violations) == 0 ? "yes" : "see violations");
  g_print ("# runs interrupted %u, %u of them with partial text, all recovered as interrupted\n",
           n_interrupted, n_partial);
  g_print ("# Tier 2 retries pending at a kill %u, resumed due at the same moment %u\n",
           n_pending, n_resumed);
  g_print ("# runs %" G_GINT64_FORMAT ", replies %" G_GINT64_FORMAT "; integrity_check ok: %s; "
           "invariants violated: %u\n",
           soak_db_count (db, "SELECT count(*) FROM runs"),
           soak_db_count (db, "SELECT count(*) FROM messages WHERE role = 'agent'"),
           soak_db_integrity_ok (db) ? "yes" : "NO", soak_violations_count (&soak.violations));
  fflush (stdout);
  sqlite3_close (db);

  g_assert_cmpuint (soak_violations_count (&soak.violations), ==, 0);
  g_assert_cmpuint (g_hash_table_size (soak.acknowledged), >, 0);
  g_assert_cmpuint (n_interrupted, >, 0);

  for (guint d = 0; d < n_sessions; d++)
    g_rand_free (soak.drivers[d].rand);
  g_free (soak.drivers);
  g_hash_table_unref (soak.acknowledged);
  soak_violations_clear (&soak.violations);
  g_mutex_clear (&soak.lock);
  soak_kaged_clear (&soak.kaged);
}

int
main (int   argc,
      char *argv[])
{
  soak_test_init (&argc, &argv);

  g_test_add_func ("/soak/kills", test_kill_soak);

  return g_test_run ();
}
