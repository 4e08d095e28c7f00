/* test-api-lifecycle.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * `kaged --headless` starting and stopping: a database it cannot use, and
 * SIGTERM and SIGINT.
 */

#include "config.h"

#include <signal.h>
#include <string.h>

#include <glib/gstdio.h>
#include <sqlite3.h>

#include "kaged-store.h"

#include "kaged-api-fixture.h"


static void
test_store_errors (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autofree char *db_path = g_build_filename (fixture->data_dir, "kaged.db", NULL);
  g_autofree char *data_arg = g_strdup_printf ("--data-dir=%s", fixture->data_dir);
  g_autofree char *token_arg = g_strdup_printf ("--api-token-file=%s", fixture->token_path);
  const char *args[] = { "--headless", "--api-port=0", data_arg, token_arg, NULL };
  const char garbage[] = "These are my notes, not a database.\n";
  g_autofree char *err = NULL;
  g_autofree char *contents = NULL;
  g_autoptr(GError) error = NULL;
  gsize length = 0;

  g_mkdir_with_parents (fixture->data_dir, 0700);
  g_file_set_contents (db_path, garbage, -1, &error);
  g_assert_no_error (error);

  g_assert_cmpint (run_failing (fixture, args, &err), ==, 1);
  g_assert_nonnull (strstr (err, db_path));
  g_assert_nonnull (strstr (err, "untouched"));

  g_file_get_contents (db_path, &contents, &length, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (contents, length, garbage, strlen (garbage));
  g_clear_pointer (&err, g_free);
  g_clear_pointer (&contents, g_free);

  /* A database from a newer Kaged. */
  {
    sqlite3 *db = NULL;
    g_autofree char *pragma = g_strdup_printf ("PRAGMA user_version = %d",
                                               KAGED_STORE_SCHEMA_VERSION + 5);
    g_autofree char *before = NULL;
    gsize before_length = 0;

    g_unlink (db_path);
    g_assert_cmpint (sqlite3_open (db_path, &db), ==, SQLITE_OK);
    g_assert_cmpint (sqlite3_exec (db, "PRAGMA application_id = 1262569284", NULL, NULL, NULL),
                     ==, SQLITE_OK);
    g_assert_cmpint (sqlite3_exec (db, "CREATE TABLE future (x)", NULL, NULL, NULL), ==, SQLITE_OK);
    g_assert_cmpint (sqlite3_exec (db, pragma, NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_close (db);

    g_file_get_contents (db_path, &before, &before_length, &error);
    g_assert_no_error (error);

    g_assert_cmpint (run_failing (fixture, args, &err), ==, 1);
    g_assert_nonnull (strstr (err, "newer version"));

    g_file_get_contents (db_path, &contents, &length, &error);
    g_assert_no_error (error);
    g_assert_cmpmem (contents, length, before, before_length);
  }
}

/* ------------------------------------------------------------------------
 * Stopping
 * ------------------------------------------------------------------------ */

static void
test_sigterm_records_cancelled (Fixture       *fixture,
                                gconstpointer  data)
{
  g_autoptr(EventClient) events = NULL;
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *db_path = g_build_filename (fixture->data_dir, "kaged.db", NULL);
  KagedMessage *reply;
  gint64 session_id;
  gint64 run_id;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"A very long story that goes on\", "
                        "\"chunks\": 40, \"delay_ms\": 50}]");
  fixture_start (fixture);
  session_id = create_session (fixture, "Interrupted");
  events = open_events (fixture, session_id);

  receipt = post_message (fixture, session_id, "Tell me a story");
  run_id = json_object_get_int_member (receipt, "run_id");
  wait_event (events, "message.delta", run_id);

  g_subprocess_send_signal (fixture->process, SIGTERM);
  fixture_wait_exit (fixture);
  g_assert_true (g_subprocess_get_if_exited (fixture->process));
  g_assert_cmpint (g_subprocess_get_exit_status (fixture->process), ==, 0);

  store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);
  run = kaged_store_get_run (store, run_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_CANCELLED);
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_NONE);
  g_assert_cmpint (kaged_run_get_finished_at (run), >, 0);

  messages = kaged_store_list_messages (store, session_id, TRUE, 0, 0, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (messages->len, ==, 2);
  reply = g_ptr_array_index (messages, 1);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_CANCELLED);
}

static void
test_sigint_idle (Fixture       *fixture,
                  gconstpointer  data)
{
  fixture_start (fixture);
  create_session (fixture, "Idle");

  g_subprocess_send_signal (fixture->process, SIGINT);
  fixture_wait_exit (fixture);
  g_assert_true (g_subprocess_get_if_exited (fixture->process));
  g_assert_cmpint (g_subprocess_get_exit_status (fixture->process), ==, 0);
}

/* ------------------------------------------------------------------------
 * The test's own children
 * ------------------------------------------------------------------------ */

static gboolean
process_ended (gpointer data)
{
  g_autofree char *path = g_strdup_printf ("/proc/%s/stat", (const char *)data);
  g_autofree char *stat = NULL;
  const char *end;

  if (!g_file_get_contents (path, &stat, NULL, NULL))
    return TRUE;

  /* "pid (name) S …": a zombie has ended too. */
  end = strrchr (stat, ')');
  return end != NULL && end[1] == ' ' && end[2] == 'Z';
}

/* A test that aborts takes the `kaged --headless` it started with it. */
static void
test_child_dies_with_test (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autofree char *pid_path = NULL;
  g_autofree char *pid = NULL;
  g_autoptr(GError) error = NULL;

  if (g_test_subprocess ())
    {
      fixture_start (fixture);
      g_file_set_contents (g_getenv ("KAGED_TEST_PID_FILE"),
                           g_subprocess_get_identifier (fixture->process), -1, &error);
      g_assert_no_error (error);
      abort ();
    }

  pid_path = g_build_filename (fixture->dir, "kaged.pid", NULL);
  g_setenv ("KAGED_TEST_PID_FILE", pid_path, TRUE);
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_unsetenv ("KAGED_TEST_PID_FILE");
  g_test_trap_assert_failed ();

  g_file_get_contents (pid_path, &pid, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (strlen (pid), >, 0);

  /* The kernel ends it as its parent goes: well within 5 s. */
  for (guint i = 0; i < 500 && !process_ended (pid); i++)
    g_usleep (10 * G_TIME_SPAN_MILLISECOND);

  if (!process_ended (pid))
    {
      /* Do not leave it behind ourselves. */
      kill ((pid_t) g_ascii_strtoll (pid, NULL, 10), SIGKILL);
      g_error ("kaged --headless (pid %s) outlived the test that started it", pid);
    }
}

int
main (int   argc,
      char *argv[])
{
  kaged_api_test_init (&argc, &argv);

  KAGED_API_TEST_ADD ("headless/store-errors", test_store_errors);
  KAGED_API_TEST_ADD ("headless/sigterm-records-cancelled", test_sigterm_records_cancelled);
  KAGED_API_TEST_ADD ("headless/sigint-idle", test_sigint_idle);
  KAGED_API_TEST_ADD ("headless/dies-with-test", test_child_dies_with_test);

  return g_test_run ();
}
