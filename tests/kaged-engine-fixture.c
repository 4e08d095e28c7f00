/* kaged-engine-fixture.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * What the engine tests share: a store and a session manager talking to
 * the fake provider on 127.0.0.1 through Tier 1, and ways to wait for
 * what a test checks.
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

/* Runs reach the fake server as an OpenAI-compatible profile on 127.0.0.1,
 * resolved like the application does: behind Tier 1. */
void
fixture_set_model (Fixture                *fixture,
                   KagedSessionManager    *manager)
{
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedRandom) random = kaged_random_new_with_seed (7);
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;

  resolver = kaged_resolver_new_full (kaged_http_get_default_session (), keyring,
                                      fixture->retry_clock, random);
  profile = kaged_profile_new ("test", KAGED_PROVIDER_KIND_OPENAI, fixture->url, "test-model");
  kaged_profile_set_input_price (profile, fixture->input_price);
  kaged_profile_set_output_price (profile, fixture->output_price);
  kaged_profile_set_spend_limit_period (profile, fixture->spend_limit_period);
  kaged_profile_set_spend_limit (profile, fixture->spend_limit);

  kaged_session_manager_set_model (manager, resolver, profile);
}

void
on_delta (KagedSessionManager *manager,
          gint64               session_id,
          gint64               message_id,
          gint64               run_id,
          const char          *text,
          Fixture             *fixture)
{
  g_assert_true (g_utf8_validate (text, -1, NULL));
  fixture->n_deltas++;
  fixture->last_delta_run = run_id;
}

void
on_run_changed (KagedSessionManager *manager,
                KagedRun            *run,
                Fixture             *fixture)
{
  if (kaged_run_is_finished (run))
    g_ptr_array_add (fixture->finished, g_object_ref (run));
}

void
fixture_set_scenario (Fixture    *fixture,
                      const char *scenario)
{
  g_autoptr(GError) error = NULL;

  kaged_fake_server_set_scenario (fixture->server, scenario, &error);
  g_assert_no_error (error);
  kaged_fake_server_reset (fixture->server);
}

void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  fixture->db_path = g_build_filename (fixture->dir, "kaged.db", NULL);

  fixture->store = kaged_store_open (fixture->db_path, &error);
  g_assert_no_error (error);

  fixture->server = kaged_fake_server_new ("[{\"kind\": \"openai\", \"text\": \"Hello\"}]", &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  fixture->url = kaged_fake_server_get_url (fixture->server);

  fixture->retry_clock = g_object_ref (kaged_clock_get_default ());
  fixture->finished = g_ptr_array_new_with_free_func (g_object_unref);

  fixture->manager = kaged_session_manager_new (fixture->store, NULL);
  fixture_set_model (fixture, fixture->manager);
  g_signal_connect (fixture->manager, "message-delta", G_CALLBACK (on_delta), fixture);
  g_signal_connect (fixture->manager, "run-changed", G_CALLBACK (on_run_changed), fixture);

  fixture->session = kaged_session_manager_create_session (fixture->manager, "Test", &error);
  g_assert_no_error (error);
}

static gboolean
timeout_cb (gpointer user_data)
{
  gboolean *timed_out = user_data;

  *timed_out = TRUE;
  return G_SOURCE_REMOVE;
}

void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  GWeakRef manager;

  /* Cancelled calls wind down, each releasing the manager when it ends:
   * the manager goes once the last has. */
  kaged_session_manager_shutdown (fixture->manager);
  g_weak_ref_init (&manager, fixture->manager);
  g_clear_object (&fixture->manager);
  {
    gboolean timed_out = FALSE;
    guint id = g_timeout_add_seconds (20, timeout_cb, &timed_out);
    KagedSessionManager *alive;

    while ((alive = g_weak_ref_get (&manager)) != NULL && !timed_out)
      {
        g_object_unref (alive);
        g_main_context_iteration (NULL, TRUE);
      }
    g_clear_object (&alive);
    g_assert_false (timed_out);
    g_source_remove (id);
  }
  g_weak_ref_clear (&manager);

  g_clear_object (&fixture->session);
  g_clear_object (&fixture->store);
  g_clear_object (&fixture->server);
  g_clear_object (&fixture->retry_clock);
  g_clear_pointer (&fixture->finished, g_ptr_array_unref);
  g_clear_pointer (&fixture->url, g_free);

  {
    g_autofree char *wal = g_strconcat (fixture->db_path, "-wal", NULL);
    g_autofree char *shm = g_strconcat (fixture->db_path, "-shm", NULL);

    g_unlink (wal);
    g_unlink (shm);
    g_unlink (fixture->db_path);
    g_rmdir (fixture->dir);
  }
  g_clear_pointer (&fixture->db_path, g_free);
  g_clear_pointer (&fixture->dir, g_free);
}

void
wait_until (Fixture   *fixture,
            Predicate  predicate,
            gpointer   data)
{
  gboolean timed_out = FALSE;
  guint id = g_timeout_add_seconds (20, timeout_cb, &timed_out);

  while (!predicate (fixture, data) && !timed_out)
    g_main_context_iteration (NULL, TRUE);

  g_assert_false (timed_out);
  g_source_remove (id);
}

gboolean
run_finished (Fixture  *fixture,
              gpointer  data)
{
  gint64 run_id = GPOINTER_TO_SIZE (data);

  for (guint i = 0; i < fixture->finished->len; i++)
    {
      if (kaged_run_get_id (g_ptr_array_index (fixture->finished, i)) == run_id)
        return TRUE;
    }

  return FALSE;
}

void
wait_run (Fixture *fixture,
          gint64   run_id)
{
  wait_until (fixture, run_finished, GSIZE_TO_POINTER (run_id));
}

gboolean
pending_clock (Fixture  *fixture,
               gpointer  data)
{
  return kaged_fake_clock_get_n_pending (KAGED_FAKE_CLOCK (fixture->retry_clock)) > 0;
}

gboolean
no_pending_clock (Fixture  *fixture,
                  gpointer  data)
{
  return !pending_clock (fixture, data);
}

KagedRun *
get_run (Fixture *fixture,
         gint64   run_id)
{
  g_autoptr(GError) error = NULL;
  KagedRun *run = kaged_store_get_run (fixture->store, run_id, &error);

  g_assert_no_error (error);
  return run;
}

KagedMessage *
get_reply (Fixture *fixture,
           gint64   run_id)
{
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GError) error = NULL;

  messages = kaged_store_list_messages (fixture->store, kaged_session_get_id (fixture->session),
                                        TRUE, 0, G_MAXUINT, &error);
  g_assert_no_error (error);

  for (guint i = 0; i < messages->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (messages, i);

      if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_AGENT &&
          kaged_message_get_run_id (message) == run_id)
        return g_object_ref (message);
    }

  return NULL;
}

KagedReceipt *
post (Fixture    *fixture,
      const char *content)
{
  g_autoptr(GError) error = NULL;
  KagedReceipt *receipt;

  receipt = kaged_session_manager_post (fixture->manager, kaged_session_get_id (fixture->session),
                                        content, &error);
  g_assert_no_error (error);
  g_assert_nonnull (receipt);

  return receipt;
}

/* Posts a message and waits for its run to end. Runs start in the order
 * they were dispatched, so whatever an earlier step could still have sent
 * reached the server before this one: a test that checks that nothing was
 * sent waits for this instead of turning the main loop for a while. */
void
settle (Fixture *fixture)
{
  g_autoptr(KagedReceipt) receipt = post (fixture, "Sentinel");

  wait_run (fixture, receipt->run_id);
}

guint
count_messages (Fixture *fixture)
{
  g_autoptr(GError) error = NULL;
  guint n = 0;

  kaged_store_count_messages (fixture->store, kaged_session_get_id (fixture->session),
                              TRUE, &n, &error);
  g_assert_no_error (error);

  return n;
}

/* Every operator row as raw bytes, straight from the file. */
char *
dump_operator_rows (Fixture *fixture)
{
  GString *out = g_string_new (NULL);
  sqlite3 *db = NULL;
  sqlite3_stmt *stmt = NULL;

  g_assert_cmpint (sqlite3_open_v2 (fixture->db_path, &db, SQLITE_OPEN_READONLY, NULL), ==,
                   SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db, "SELECT * FROM messages WHERE role = 'operator' "
                                       "ORDER BY id", -1, &stmt, NULL), ==, SQLITE_OK);
  while (sqlite3_step (stmt) == SQLITE_ROW)
    {
      for (int i = 0; i < sqlite3_column_count (stmt); i++)
        {
          const void *blob = sqlite3_column_blob (stmt, i);
          int len = sqlite3_column_bytes (stmt, i);

          g_string_append_printf (out, "%d:", sqlite3_column_type (stmt, i));
          if (blob != NULL)
            g_string_append_len (out, blob, len);
          g_string_append_c (out, '|');
        }
      g_string_append_c (out, '\n');
    }
  sqlite3_finalize (stmt);
  sqlite3_close (db);

  return g_string_free (out, FALSE);
}

gboolean
reply_has_text (Fixture  *fixture,
                gpointer  data)
{
  return fixture->n_deltas > 0;
}

void
assert_cancelled (Fixture    *fixture,
                  gint64      run_id,
                  const char *partial)
{
  g_autoptr(KagedRun) run = get_run (fixture, run_id);
  g_autoptr(KagedMessage) reply = get_reply (fixture, run_id);

  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_CANCELLED);
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_NONE);
  g_assert_false (kaged_run_get_retryable (run));
  g_assert_null (kaged_run_get_error_message (run));

  if (partial == NULL)
    return;

  g_assert_nonnull (reply);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_CANCELLED);
  g_assert_cmpint (kaged_message_get_retry_class (reply), ==, KAGED_RETRY_CLASS_NONE);
  g_assert_true (g_str_has_prefix (kaged_message_get_content (reply), partial));
}

/* libsoup's server warns when a client it is about to serve has already
 * gone, which cancelled requests do by design; that is not a failure.
 * Every other libsoup warning still fails the test. */
static gboolean
gone_client (const char *message)
{
  return strstr (message, "could not get remote address") != NULL;
}

static gboolean
fatal_unless_gone_client (const char     *log_domain,
                          GLogLevelFlags  log_level,
                          const char     *message,
                          gpointer        user_data)
{
  return !(g_strcmp0 (log_domain, "libsoup") == 0 && gone_client (message));
}

static void
drop_gone_client (const char     *log_domain,
                  GLogLevelFlags  log_level,
                  const char     *message,
                  gpointer        user_data)
{
  if (!gone_client (message))
    g_log_default_handler (log_domain, log_level, message, user_data);
}

/* g_test_init(), with libsoup's warnings about clients already gone (which
 * cancelled requests are, by design) not failing the test. */
void
kaged_engine_test_init (int    *argc,
                        char ***argv)
{
  g_test_init (argc, argv, NULL);
  g_test_log_set_fatal_handler (fatal_unless_gone_client, NULL);
  g_log_set_handler ("libsoup", G_LOG_LEVEL_WARNING | G_LOG_FLAG_FATAL, drop_gone_client, NULL);
}
