/* bench-durability.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * What `PRAGMA synchronous` costs the store, measured through the engine
 * as the window and the HTTP API use it, in WAL mode: NORMAL (no commit
 * waits for the disk) against the store as shipped (FULL: every commit
 * waits, except the saves of a streaming reply's text). Operator messages
 * posted as fast as kaged_session_manager_post() takes them (posts/s, and
 * how long one post holds the main loop); the replies to them from a
 * provider on 127.0.0.1 (replies/s); one save of streaming text, waiting
 * and not; and how much a post writes to the WAL, which bounds what NORMAL
 * can lose.
 *
 * The database lives in the directory given as the first argument (the
 * build directory under `meson test --benchmark`), not in /tmp, which is
 * often a tmpfs where a sync costs nothing.
 *
 * Usage: bench-durability [DIRECTORY]
 */

#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>

#include <glib/gstdio.h>

#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-session-manager.h"
#include "kaged-store-private.h"
#include "kaged-test-files.h"

#define N_SESSIONS 10
#define N_POSTS    500
#define N_WAL_POSTS 100
#define N_SAVES    200

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

typedef struct
{
  guint n_finished;
} Replies;

/* The fake provider serves from a thread of its own, so that its work is
 * not counted against the engine's main loop. */
typedef struct
{
  GMutex      mutex;
  GCond       cond;
  char       *url;
  GMainLoop  *loop;
} ServerThread;

static gpointer
server_thread (gpointer user_data)
{
  ServerThread *st = user_data;
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(GError) error = NULL;

  g_main_context_push_thread_default (context);

  server = kaged_fake_server_new ("[{\"kind\": \"openai\", \"chunks\": 8, "
                                  "\"text\": \"A short answer, in a few pieces, to the "
                                  "question that was asked.\", "
                                  "\"usage\": {\"input_tokens\": 30, \"output_tokens\": 14}}]",
                                  &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (server, 0, &error);
  g_assert_no_error (error);

  g_mutex_lock (&st->mutex);
  st->loop = g_main_loop_new (context, FALSE);
  st->url = kaged_fake_server_get_url (server);
  g_cond_signal (&st->cond);
  g_mutex_unlock (&st->mutex);

  g_main_loop_run (st->loop);

  g_clear_object (&server);
  g_main_context_pop_thread_default (context);

  return NULL;
}

static gint64
query_int (KagedStore *store,
           const char *sql)
{
  sqlite3_stmt *stmt = NULL;
  gint64 value;

  g_assert_cmpint (sqlite3_prepare_v2 (store->db, sql, -1, &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_step (stmt), ==, SQLITE_ROW);
  value = sqlite3_column_int64 (stmt, 0);
  sqlite3_finalize (stmt);

  return value;
}

/* Opens a store as Kaged does; with @synchronous, sets that level on its
 * connection instead of the store's own. */
static KagedStore *
open_store (const char *dir,
            const char *synchronous)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *path = g_build_filename (dir, "kaged.db", NULL);
  KagedStore *store;

  store = kaged_store_open (path, &error);
  g_assert_no_error (error);

  if (synchronous != NULL)
    {
      g_autofree char *sql = g_strdup_printf ("PRAGMA synchronous = %s", synchronous);

      g_assert_cmpint (sqlite3_exec (store->db, sql, NULL, NULL, NULL), ==, SQLITE_OK);
      g_assert_cmpint (query_int (store, "PRAGMA synchronous"), ==,
                       g_str_equal (synchronous, "FULL") ? 2 : 1);
    }

  return store;
}

static void
run_changed_cb (KagedSessionManager *manager,
                KagedRun            *run,
                Replies             *replies)
{
  if (kaged_run_is_finished (run))
    replies->n_finished++;
}

static int
compare_gint64 (gconstpointer a,
                gconstpointer b)
{
  gint64 x = *(const gint64 *)a;
  gint64 y = *(const gint64 *)b;

  return (x > y) - (x < y);
}

static double
percentile_ms (GArray *sorted,
               double  fraction)
{
  guint index = (guint)(fraction * (sorted->len - 1) + 0.5);

  return g_array_index (sorted, gint64, index) / 1000.0;
}

static void
bench_mode (const char *base,
            const char *url,
            const char *synchronous,
            const char *label)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_build_filename (base, "bench-durability-XXXXXX", NULL);
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(GArray) latencies = g_array_sized_new (FALSE, FALSE, sizeof (gint64), N_POSTS);
  gint64 session_ids[N_SESSIONS];
  Replies replies = { 0 };
  guint64 writes_before;
  guint64 reply_writes;
  gint64 start;
  double post_seconds;
  double reply_seconds;

  g_assert_nonnull (g_mkdtemp (dir));
  store = open_store (dir, synchronous);

  resolver = kaged_resolver_new (kaged_http_get_default_session (), keyring);
  profile = kaged_profile_new ("bench", KAGED_PROVIDER_KIND_OPENAI, url, "bench-model");
  manager = kaged_session_manager_new (store, NULL);
  kaged_session_manager_set_model (manager, resolver, profile);
  g_signal_connect (manager, "run-changed", G_CALLBACK (run_changed_cb), &replies);

  for (guint i = 0; i < N_SESSIONS; i++)
    {
      g_autoptr(KagedSession) session = NULL;

      session = kaged_session_manager_create_session (manager, "Durability", &error);
      g_assert_no_error (error);
      session_ids[i] = kaged_session_get_id (session);
    }

  /* Posts, one after the other, as fast as they are taken: each is one
   * write transaction (the message and its run), and the first of each
   * session also starts its run. The replies wait. */
  start = g_get_monotonic_time ();
  for (guint i = 0; i < N_POSTS; i++)
    {
      g_autoptr(KagedReceipt) receipt = NULL;
      g_autofree char *content = g_strdup_printf ("Question %u: what does a sync cost?", i);
      gint64 post_start = g_get_monotonic_time ();
      gint64 latency;

      receipt = kaged_session_manager_post (manager, session_ids[i % N_SESSIONS], content,
                                            &error);
      g_assert_no_error (error);
      latency = g_get_monotonic_time () - post_start;
      g_array_append_val (latencies, latency);
    }
  post_seconds = (g_get_monotonic_time () - start) / 1e6;

  /* The replies to all of them, ten sessions at a time. */
  writes_before = kaged_store_get_n_write_transactions (store);
  start = g_get_monotonic_time ();
  while (replies.n_finished < N_POSTS)
    g_main_context_iteration (NULL, TRUE);
  reply_seconds = (g_get_monotonic_time () - start) / 1e6;
  reply_writes = kaged_store_get_n_write_transactions (store) - writes_before;

  g_array_sort (latencies, compare_gint64);

  printf ("%-24s posts: %5.0f posts/s (%u posts, %.2f s); one post holds the "
          "main loop %.2f ms (median), %.2f ms (99th percentile), %.2f ms (worst)\n",
          label, N_POSTS / post_seconds, N_POSTS, post_seconds,
          percentile_ms (latencies, 0.5), percentile_ms (latencies, 0.99),
          percentile_ms (latencies, 1.0));
  printf ("%-24s replies: %5.0f replies/s (%u replies, %.2f s, %.1f write "
          "transactions each); %" G_GUINT64_FORMAT " checkpoints\n",
          label, N_POSTS / reply_seconds, N_POSTS, reply_seconds,
          (double)reply_writes / N_POSTS, kaged_store_get_n_checkpoints (store));

  kaged_session_manager_shutdown (manager);
  g_clear_object (&manager);
  g_clear_object (&store);
  kaged_test_remove_tree (dir);
}

/* What one save of a streaming reply's text holds the main loop, every
 * 250 ms while a reply streams: waiting for the disk, as every other
 * commit does, and without, as the store does for this text. */
static void
bench_streaming_saves (const char *base)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_build_filename (base, "bench-durability-XXXXXX", NULL);
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedMessage) operator = kaged_message_new ();
  g_autoptr(KagedMessage) reply = kaged_message_new ();
  g_autoptr(KagedRun) run = kaged_run_new ();
  g_autoptr(GString) text = g_string_new (NULL);

  g_assert_nonnull (g_mkdtemp (dir));
  store = open_store (dir, NULL);

  session = kaged_store_create_session (store, "Durability", &error);
  g_assert_no_error (error);
  kaged_message_set_session_id (operator, kaged_session_get_id (session));
  kaged_message_set_role (operator, KAGED_MESSAGE_ROLE_OPERATOR);
  kaged_message_set_content (operator, "Tell me a long story");
  g_assert_true (kaged_store_append_message (store, operator, &error));
  g_assert_no_error (error);
  kaged_run_set_session_id (run, kaged_session_get_id (session));
  kaged_run_set_anchor_id (run, kaged_message_get_id (operator));
  kaged_run_set_status (run, KAGED_RUN_STATUS_RUNNING);
  g_assert_true (kaged_store_create_run (store, run, &error));
  g_assert_no_error (error);
  kaged_message_set_session_id (reply, kaged_session_get_id (session));
  kaged_message_set_role (reply, KAGED_MESSAGE_ROLE_AGENT);
  kaged_message_set_run_id (reply, kaged_run_get_id (run));
  kaged_message_set_status (reply, KAGED_MESSAGE_STATUS_STREAMING);
  g_assert_true (kaged_store_append_message (store, reply, &error));
  g_assert_no_error (error);

  for (guint relaxed = 0; relaxed < 2; relaxed++)
    {
      g_autoptr(GArray) latencies = g_array_sized_new (FALSE, FALSE, sizeof (gint64),
                                                       N_SAVES);

      for (guint i = 0; i < N_SAVES; i++)
        {
          gint64 start;
          gint64 latency;
          gboolean saved;

          g_string_append (text, "and then the story went on, a few more words of it; ");
          kaged_message_set_content (reply, text->str);
          start = g_get_monotonic_time ();
          if (relaxed)
            saved = kaged_store_save_streaming_text (store, reply, &error);
          else
            saved = kaged_store_update_message (store, reply, &error);
          latency = g_get_monotonic_time () - start;
          g_assert_no_error (error);
          g_assert_true (saved);
          g_array_append_val (latencies, latency);
        }

      g_array_sort (latencies, compare_gint64);
      printf ("streaming text, %-29s one save holds the main loop %.2f ms (median), "
              "%.2f ms (99th percentile), %.2f ms (worst)\n",
              relaxed ? "without waiting (as shipped):" : "waiting for the disk:",
              percentile_ms (latencies, 0.5), percentile_ms (latencies, 0.99),
              percentile_ms (latencies, 1.0));
    }

  g_clear_object (&store);
  kaged_test_remove_tree (dir);
}

/* How many WAL frames (pages) one post adds, with no checkpoint to copy
 * them away: with synchronous=NORMAL the WAL is synced only when a
 * checkpoint starts, which Kaged's checkpointer does once 1,000 frames are
 * waiting, so 1,000 / this is how many posts a power cut can take. */
static void
bench_wal_frames (const char *base,
                  const char *url)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_build_filename (base, "bench-durability-XXXXXX", NULL);
  g_autofree char *wal = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedSession) session = NULL;
  gint64 page_size;
  GStatBuf st;
  double frames;

  g_assert_nonnull (g_mkdtemp (dir));
  store = open_store (dir, "NORMAL");
  kaged_store_set_checkpoint_frames (store, G_MAXINT / 2);
  page_size = query_int (store, "PRAGMA page_size");
  wal = g_build_filename (dir, "kaged.db-wal", NULL);

  resolver = kaged_resolver_new (kaged_http_get_default_session (), keyring);
  profile = kaged_profile_new ("bench", KAGED_PROVIDER_KIND_OPENAI, url, "bench-model");
  manager = kaged_session_manager_new (store, NULL);
  kaged_session_manager_set_model (manager, resolver, profile);
  session = kaged_session_manager_create_session (manager, "Durability", &error);
  g_assert_no_error (error);

  /* An empty WAL, which the posts then fill from its start. */
  g_assert_cmpint (sqlite3_wal_checkpoint_v2 (store->db, NULL, SQLITE_CHECKPOINT_TRUNCATE,
                                              NULL, NULL), ==, SQLITE_OK);

  for (guint i = 0; i < N_WAL_POSTS; i++)
    {
      g_autoptr(KagedReceipt) receipt = NULL;
      g_autofree char *content = g_strdup_printf ("Question %u: what does a sync cost?", i);

      receipt = kaged_session_manager_post (manager, kaged_session_get_id (session), content,
                                            &error);
      g_assert_no_error (error);
    }
  g_assert_cmpint (g_stat (wal, &st), ==, 0);

  /* A 32-byte header, then frames of a 24-byte header and a page. */
  frames = (double)(st.st_size - 32) / (page_size + 24) / N_WAL_POSTS;
  printf ("WAL: %.1f frames of %" G_GINT64_FORMAT " bytes per post; with a checkpoint once "
          "1000 frames wait, synchronous=NORMAL leaves up to about %.0f posts unsynced\n",
          frames, page_size, 1000 / frames);

  kaged_session_manager_shutdown (manager);
  g_clear_object (&manager);
  g_clear_object (&store);
  kaged_test_remove_tree (dir);
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *base = g_strdup (argc > 1 ? argv[1] : ".");
  ServerThread st = { 0 };
  GThread *thread;
  struct statfs fs;

  if (statfs (base, &fs) != 0)
    {
      g_printerr ("Cannot use %s\n", base);
      return 1;
    }
  printf ("database in %s (file system type 0x%lx)%s\n", base, (unsigned long)fs.f_type,
          fs.f_type == TMPFS_MAGIC ? " — a tmpfs: a sync costs nothing there, the figures "
                                     "do not apply to a disk" : "");

  g_mutex_init (&st.mutex);
  g_cond_init (&st.cond);
  thread = g_thread_new ("fake-provider", server_thread, &st);
  g_mutex_lock (&st.mutex);
  while (st.url == NULL)
    g_cond_wait (&st.cond, &st.mutex);
  g_mutex_unlock (&st.mutex);

  /* Twice each, alternating, so that neither has the disk to itself. */
  for (guint round = 0; round < 2; round++)
    {
      bench_mode (base, st.url, "NORMAL", "synchronous=NORMAL");
      bench_mode (base, st.url, NULL, "as shipped (FULL)");
    }
  bench_streaming_saves (base);
  bench_wal_frames (base, st.url);

  g_main_loop_quit (st.loop);
  g_thread_join (thread);
  g_main_loop_unref (st.loop);
  g_free (st.url);
  g_mutex_clear (&st.mutex);
  g_cond_clear (&st.cond);

  return 0;
}
