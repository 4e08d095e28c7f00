/* test-engine-crash.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <sqlite3.h>

#include "kaged-enum-types.h"
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-openai-provider.h"
#include "kaged-keyring.h"
#include "kaged-retry.h"
#include "kaged-retry-class.h"
#include "kaged-session-manager.h"

#include "kaged-engine-fixture.h"

/* ------------------------------------------------------------------------
 * Crash safety: a child process streams replies and is killed at random
 * moments; every operator message it reported stored survives, the file
 * opens, and the interrupted run is recovered.
 * ------------------------------------------------------------------------ */

static void
child_run_finished (KagedSessionManager *manager,
                    KagedRun            *run,
                    gpointer             user_data)
{
  gint64 session_id = GPOINTER_TO_SIZE (user_data);
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autofree char *content = NULL;

  if (!kaged_run_is_finished (run))
    return;

  content = g_strdup_printf ("Question %" G_GINT64_FORMAT, g_get_monotonic_time ());
  receipt = kaged_session_manager_post (manager, session_id, content, NULL);
  if (receipt == NULL)
    exit (3);

  printf ("posted %" G_GINT64_FORMAT " %s\n", receipt->message_id, content);
  fflush (stdout);
}

static gboolean
wait_in_child (gboolean (*done) (gpointer data),
               gpointer   data)
{
  while (!done (data))
    g_main_context_iteration (NULL, TRUE);
  return TRUE;
}

static gboolean
clock_has_pending (gpointer data)
{
  return kaged_fake_clock_get_n_pending (data) > 0;
}

typedef struct
{
  KagedStore *store;
  guint64     writes;
} WriteWatch;

static gboolean
store_wrote (gpointer data)
{
  WriteWatch *watch = data;

  return kaged_store_get_n_write_transactions (watch->store) > watch->writes;
}

/* With @hang, the reply stops coming mid-stream and the child says
 * "saved" once the text received so far is in the file: the parent kills
 * it then, mid-stream, every time. */
static int
crash_child (const char *db_path,
             gboolean    hang)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(GPtrArray) sessions = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autoptr(KagedClock) clock = NULL;
  Fixture fixture = { 0 };

  store = kaged_store_open (db_path, &error);
  if (store == NULL)
    {
      g_printerr ("child: %s\n", error->message);
      return 2;
    }

  server = kaged_fake_server_new (hang
                                  ? "[{\"kind\": \"openai\", \"text\": \"A fairly long answer that "
                                    "streams in many small pieces so the kill lands mid-stream.\", "
                                    "\"chunks\": 70, \"hang_after_chunks\": 10}]"
                                  : "[{\"kind\": \"openai\", \"text\": \"A fairly long answer that "
                                    "streams in many small pieces so the kill lands mid-stream.\", "
                                    "\"chunks\": 70, \"delay_ms\": 20}]", &error);
  if (server == NULL || !kaged_fake_server_listen (server, 0, &error))
    return 2;

  fixture.url = kaged_fake_server_get_url (server);
  fixture.retry_clock = kaged_clock_get_default ();

  clock = hang ? kaged_fake_clock_new (1764400000000) : NULL;
  manager = kaged_session_manager_new (store, clock);
  fixture_set_model (&fixture, manager);

  sessions = kaged_store_list_sessions (store, NULL);
  if (sessions != NULL && sessions->len > 0)
    session = g_object_ref (g_ptr_array_index (sessions, 0));
  else
    session = kaged_session_manager_create_session (manager, "Crash", NULL);

  if (!hang)
    g_signal_connect (manager, "run-changed", G_CALLBACK (child_run_finished),
                      GSIZE_TO_POINTER (kaged_session_get_id (session)));

  {
    g_autoptr(KagedReceipt) receipt =
      kaged_session_manager_post (manager, kaged_session_get_id (session), "Question start", NULL);

    if (receipt == NULL)
      return 3;
    printf ("posted %" G_GINT64_FORMAT " Question start\n", receipt->message_id);
    fflush (stdout);
  }

  if (hang)
    {
      WriteWatch watch = { store, 0 };

      /* Pieces came: the save is due 250 ms (of the child's clock) on. */
      wait_in_child (clock_has_pending, clock);
      watch.writes = kaged_store_get_n_write_transactions (store);
      kaged_fake_clock_advance (KAGED_FAKE_CLOCK (clock), 250);
      wait_in_child (store_wrote, &watch);
      printf ("saved\n");
      fflush (stdout);
    }

  g_main_loop_run (loop);
  g_free (fixture.url);

  return 0;
}

static const char *self_path;

static void
record_posted (GHashTable *posted,
               const char *line)
{
  gint64 id = 0;
  char content[128] = { 0 };

  if (sscanf (line, "posted %" G_GINT64_FORMAT " %127[^\n]", &id, content) == 2)
    g_hash_table_insert (posted, g_memdup2 (&id, sizeof id), g_strdup (content));
}

static void
test_sigkill_recovery (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *db_path = g_build_filename (dir, "kaged.db", NULL);
  g_autoptr(GHashTable) posted = g_hash_table_new_full (g_int64_hash, g_int64_equal,
                                                        g_free, g_free);
  GRand *rand = g_rand_new_with_seed (g_test_rand_int ());
  guint n_interrupted = 0;
  guint n_partial_kept = 0;

  g_assert_no_error (error);

  for (guint round = 0; round < 20; round++)
    {
      /* Every fifth child is killed once its reply's first text is saved;
       * the others at a random moment. */
      gboolean hang = round % 5 == 0;
      const char *argv[] = { self_path, hang ? "--crash-child-hang" : "--crash-child", db_path,
                             NULL };
      g_autoptr(KagedStore) store = NULL;
      g_autoptr(GPtrArray) messages = NULL;
      GPid pid;
      int out_fd;
      int status;
      g_autoptr(GIOChannel) channel = NULL;
      char *line = NULL;

      g_spawn_async_with_pipes (NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
                                &pid, NULL, &out_fd, NULL, &error);
      g_assert_no_error (error);

      channel = g_io_channel_unix_new (out_fd);
      g_io_channel_set_close_on_unref (channel, TRUE);

      if (hang)
        {
          gboolean saved = FALSE;

          while (!saved &&
                 g_io_channel_read_line (channel, &line, NULL, NULL, NULL) == G_IO_STATUS_NORMAL)
            {
              saved = g_str_has_prefix (line, "saved");
              record_posted (posted, line);
              g_free (line);
            }
          g_assert_true (saved);
        }
      else
        {
          g_usleep (g_rand_int_range (rand, 100, 1400) * 1000);
        }

      kill (pid, SIGKILL);
      g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
      g_spawn_close_pid (pid);
      g_assert_true (WIFSIGNALED (status));

      /* Everything the child said it stored before it died. */
      while (g_io_channel_read_line (channel, &line, NULL, NULL, NULL) == G_IO_STATUS_NORMAL)
        {
          record_posted (posted, line);
          g_free (line);
        }

      /* The file opens, is intact and the interrupted run is recovered. */
      store = kaged_store_open (db_path, &error);
      g_assert_no_error (error);

      {
        sqlite3 *db = NULL;
        sqlite3_stmt *stmt = NULL;

        g_assert_cmpint (sqlite3_open_v2 (db_path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
        g_assert_cmpint (sqlite3_prepare_v2 (db, "PRAGMA integrity_check", -1, &stmt, NULL), ==,
                         SQLITE_OK);
        g_assert_cmpint (sqlite3_step (stmt), ==, SQLITE_ROW);
        g_assert_cmpstr ((const char *)sqlite3_column_text (stmt, 0), ==, "ok");
        sqlite3_finalize (stmt);

        g_assert_cmpint (sqlite3_prepare_v2 (db, "SELECT COUNT(*) FROM runs WHERE status = 'running'",
                                             -1, &stmt, NULL), ==, SQLITE_OK);
        g_assert_cmpint (sqlite3_step (stmt), ==, SQLITE_ROW);
        g_assert_cmpint (sqlite3_column_int (stmt, 0), ==, 0);
        sqlite3_finalize (stmt);
        sqlite3_close (db);
      }

      {
        GPtrArray *interrupted = kaged_store_get_interrupted_runs (store);

        for (guint i = 0; interrupted != NULL && i < interrupted->len; i++)
          {
            KagedRun *run = g_ptr_array_index (interrupted, i);

            g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);
            g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_INTERRUPTED);
            g_assert_false (kaged_run_get_retryable (run));
            n_interrupted++;
          }
      }

      {
        g_autoptr(GPtrArray) sessions = kaged_store_list_sessions (store, &error);
        GHashTableIter iter;
        gpointer key, value;

        g_assert_no_error (error);
        if (g_hash_table_size (posted) == 0)
          continue;
        g_assert_cmpuint (sessions->len, ==, 1);

        messages = kaged_store_list_messages (store,
                                              kaged_session_get_id (g_ptr_array_index (sessions, 0)),
                                              TRUE, 0, G_MAXUINT, &error);
        g_assert_no_error (error);

        g_hash_table_iter_init (&iter, posted);
        while (g_hash_table_iter_next (&iter, &key, &value))
          {
            g_autoptr(KagedMessage) message = kaged_store_get_message (store, *(gint64 *)key, &error);

            g_assert_no_error (error);
            g_assert_cmpint (kaged_message_get_role (message), ==, KAGED_MESSAGE_ROLE_OPERATOR);
            g_assert_cmpstr (kaged_message_get_content (message), ==, value);
          }

        for (guint i = 0; i < messages->len; i++)
          {
            KagedMessage *message = g_ptr_array_index (messages, i);

            g_assert_cmpint (kaged_message_get_status (message), !=, KAGED_MESSAGE_STATUS_STREAMING);
            if (kaged_message_get_status (message) == KAGED_MESSAGE_STATUS_INTERRUPTED)
              {
                g_assert_true (g_str_has_prefix ("A fairly long answer that streams in many small "
                                                 "pieces so the kill lands mid-stream.",
                                                 kaged_message_get_content (message)));
                if (*kaged_message_get_content (message) != '\0')
                  n_partial_kept++;
              }
          }
      }
    }

  g_assert_cmpuint (g_hash_table_size (posted), >, 0);
  g_test_message ("%u operator messages survived 20 kills; %u interrupted runs recovered; "
                  "interrupted replies were found holding their saved text %u times",
                  g_hash_table_size (posted), n_interrupted, n_partial_kept);
  /* The children killed mid-stream left a run each to recover, with the
   * text saved before the kill (the last 250 ms may not be). */
  g_assert_cmpuint (n_interrupted, >=, 4);
  g_assert_cmpuint (n_partial_kept, >=, 4);

  g_rand_free (rand);
  {
    g_autofree char *wal = g_strconcat (db_path, "-wal", NULL);
    g_autofree char *shm = g_strconcat (db_path, "-shm", NULL);

    g_unlink (wal);
    g_unlink (shm);
    g_unlink (db_path);
    g_rmdir (dir);
  }
}

int
main (int   argc,
      char *argv[])
{
  if (argc == 3 && g_str_equal (argv[1], "--crash-child"))
    return crash_child (argv[2], FALSE);
  if (argc == 3 && g_str_equal (argv[1], "--crash-child-hang"))
    return crash_child (argv[2], TRUE);

  self_path = argv[0];
  kaged_engine_test_init (&argc, &argv);

  g_test_add_func ("/engine/crash/sigkill-recovery", test_sigkill_recovery);

  return g_test_run ();
}
