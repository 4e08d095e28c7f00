/* bench-engine.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * One run streaming 20,000 deltas as fast as the fake provider sends them,
 * through the whole engine: deltas per second, SQLite write transactions
 * (target: at most one per 250 ms of streaming, plus three), main-loop stalls
 * over 16 ms (target: none) and peak RSS.
 */

#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include <glib/gstdio.h>

#include "bench-stalls.h"
#include "kaged-enum-types.h"
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-retry-class.h"
#include "kaged-session-manager.h"

#define N_DELTAS 20000

typedef struct
{
  BenchStalls stalls;
  gboolean done;
  gint64   run_id;
  guint    n_announced;
} Bench;

/* The fake provider serves from a thread of its own, so that its work is
 * not counted against the engine's main loop. */
typedef struct
{
  const char *scenario;
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

  server = kaged_fake_server_new (st->scenario, &error);
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

static void
run_changed_cb (KagedSessionManager *manager,
                KagedRun            *run,
                Bench               *bench)
{
  if (kaged_run_get_id (run) == bench->run_id && kaged_run_is_finished (run))
    bench->done = TRUE;
}

static void
delta_cb (KagedSessionManager *manager,
          gint64               session_id,
          gint64               message_id,
          gint64               run_id,
          const char          *text,
          Bench               *bench)
{
  bench->n_announced++;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *db_path = NULL;
  g_autofree char *url = NULL;
  g_autofree char *scenario = NULL;
  g_autoptr(KagedStore) store = NULL;
  ServerThread st = { 0 };
  GThread *thread;
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  Bench bench = { 0 };
  struct rusage usage;
  guint64 writes_before;
  guint64 writes;
  gint64 start;
  gint64 elapsed;
  double seconds;
  guint64 allowed;

  if (dir == NULL)
    {
      g_printerr ("%s\n", error->message);
      return 1;
    }
  db_path = g_build_filename (dir, "kaged.db", NULL);

  store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);

  /* Each delta one character: 20,000 content chunks, no delay. */
  {
    g_autoptr(GString) text = g_string_sized_new (N_DELTAS);

    for (guint i = 0; i < N_DELTAS; i++)
      g_string_append_c (text, 'a' + (i % 26));
    scenario = g_strdup_printf ("[{\"kind\": \"openai\", \"text\": \"%s\", \"chunks\": %u, "
                                "\"usage\": {\"input_tokens\": 10, \"output_tokens\": %u}}]",
                                text->str, N_DELTAS, N_DELTAS);
  }

  st.scenario = scenario;
  g_mutex_init (&st.mutex);
  g_cond_init (&st.cond);
  thread = g_thread_new ("fake-provider", server_thread, &st);
  g_mutex_lock (&st.mutex);
  while (st.url == NULL)
    g_cond_wait (&st.cond, &st.mutex);
  g_mutex_unlock (&st.mutex);
  url = g_strdup (st.url);

  resolver = kaged_resolver_new (kaged_http_get_default_session (), keyring);
  profile = kaged_profile_new ("bench", KAGED_PROVIDER_KIND_OPENAI, url, "bench-model");

  manager = kaged_session_manager_new (store, NULL);
  kaged_session_manager_set_model (manager, resolver, profile);
  g_signal_connect (manager, "run-changed", G_CALLBACK (run_changed_cb), &bench);
  g_signal_connect (manager, "message-delta", G_CALLBACK (delta_cb), &bench);

  session = kaged_session_manager_create_session (manager, "Benchmark", &error);
  g_assert_no_error (error);

  bench_stalls_start (&bench.stalls, 16);

  writes_before = kaged_store_get_n_write_transactions (store);
  start = g_get_monotonic_time ();

  receipt = kaged_session_manager_post (manager, kaged_session_get_id (session),
                                        "Stream as fast as you can", &error);
  g_assert_no_error (error);
  bench.run_id = receipt->run_id;

  while (!bench.done)
    g_main_context_iteration (NULL, TRUE);

  elapsed = g_get_monotonic_time () - start;
  writes = kaged_store_get_n_write_transactions (store) - writes_before;
  bench_stalls_stop (&bench.stalls);

  run = kaged_store_get_run (store, receipt->run_id, &error);
  g_assert_no_error (error);
  messages = kaged_store_list_messages (store, kaged_session_get_id (session), FALSE, 0,
                                       G_MAXUINT, &error);
  g_assert_no_error (error);

  seconds = elapsed / 1e6;
  /* The post (with the run's start) and the run's end are writes of their
   * own, as may be the last flush and the attempt log. */
  allowed = (guint64)(elapsed / (250 * 1000)) + 2 + 1;

  getrusage (RUSAGE_SELF, &usage);

  printf ("run status: %s\n", kaged_enum_to_nick (KAGED_TYPE_RUN_STATUS, kaged_run_get_status (run)));
  printf ("reply length: %zu characters\n",
          strlen (kaged_message_get_content (g_ptr_array_index (messages, messages->len - 1))));
  printf ("streamed %u deltas in %.3f s: %.0f deltas/s\n", N_DELTAS, seconds, N_DELTAS / seconds);
  printf ("observers notified %u times (coalesced every 50 ms)\n", bench.n_announced);
  printf ("SQLite write transactions: %" G_GUINT64_FORMAT " (target ≤ %" G_GUINT64_FORMAT
          ": one per 250 ms of streaming + 2, + 1 for the post and the run's start)\n",
          writes, allowed);
  printf ("main-loop stalls over 16 ms: %u (worst gap %.1f ms)\n",
          bench.stalls.n_stalls, bench.stalls.worst_gap / 1000.0);
  printf ("peak RSS: %.1f MB\n", usage.ru_maxrss / 1024.0);

  g_clear_object (&manager);
  g_clear_object (&store);
  g_main_loop_quit (st.loop);
  g_thread_join (thread);
  g_main_loop_unref (st.loop);
  g_free (st.url);
  {
    g_autofree char *wal = g_strconcat (db_path, "-wal", NULL);
    g_autofree char *shm = g_strconcat (db_path, "-shm", NULL);

    g_unlink (wal);
    g_unlink (shm);
    g_unlink (db_path);
    g_rmdir (dir);
  }

  return kaged_run_get_status (run) == KAGED_RUN_STATUS_SUCCEEDED ? 0 : 1;
}
