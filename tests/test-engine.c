/* test-engine.c
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

typedef struct
{
  char                *dir;
  char                *db_path;
  KagedStore          *store;
  KagedSessionManager *manager;
  KagedFakeServer     *server;
  char                *url;
  KagedClock          *retry_clock;   /* the Tier 1 clock: fake where a test waits */
  KagedSession        *session;
  guint                n_deltas;      /* ::message-delta emissions */
  gint64               last_delta_run; /* the run of the latest one */
  GPtrArray           *finished;      /* KagedRun, as ::run-changed reported them */
  double               input_price;
  double               output_price;
} Fixture;

/* Runs reach the fake server as an OpenAI-compatible profile on 127.0.0.1,
 * resolved like the application does: behind Tier 1. */
static void
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

  kaged_session_manager_set_model (manager, resolver, profile);
}

static void
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

static void
on_run_changed (KagedSessionManager *manager,
                KagedRun            *run,
                Fixture             *fixture)
{
  if (kaged_run_is_finished (run))
    g_ptr_array_add (fixture->finished, g_object_ref (run));
}

static void
fixture_set_scenario (Fixture    *fixture,
                      const char *scenario)
{
  g_autoptr(GError) error = NULL;

  kaged_fake_server_set_scenario (fixture->server, scenario, &error);
  g_assert_no_error (error);
  kaged_fake_server_reset (fixture->server);
}

static void
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

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  kaged_session_manager_shutdown (fixture->manager);
  /* Let cancelled calls wind down. */
  for (guint i = 0; i < 50; i++)
    g_main_context_iteration (NULL, FALSE);

  g_clear_object (&fixture->session);
  g_clear_object (&fixture->manager);
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

static gboolean
timeout_cb (gpointer user_data)
{
  gboolean *timed_out = user_data;

  *timed_out = TRUE;
  return G_SOURCE_REMOVE;
}

typedef gboolean (*Predicate) (Fixture *fixture, gpointer data);

static void
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

static gboolean
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

static void
wait_run (Fixture *fixture,
          gint64   run_id)
{
  wait_until (fixture, run_finished, GSIZE_TO_POINTER (run_id));
}

static gboolean
pending_clock (Fixture  *fixture,
               gpointer  data)
{
  return kaged_fake_clock_get_n_pending (KAGED_FAKE_CLOCK (fixture->retry_clock)) > 0;
}

static gboolean
no_pending_clock (Fixture  *fixture,
                  gpointer  data)
{
  return !pending_clock (fixture, data);
}

static KagedRun *
get_run (Fixture *fixture,
         gint64   run_id)
{
  g_autoptr(GError) error = NULL;
  KagedRun *run = kaged_store_get_run (fixture->store, run_id, &error);

  g_assert_no_error (error);
  return run;
}

static KagedMessage *
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

static KagedReceipt *
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
static void
settle (Fixture *fixture)
{
  g_autoptr(KagedReceipt) receipt = post (fixture, "Sentinel");

  wait_run (fixture, receipt->run_id);
}

static guint
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
static char *
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

/* ------------------------------------------------------------------------ */

/* The manager of the fixture's store on @clock, watched like the
 * fixture's own. */
static void
fixture_use_manager_clock (Fixture    *fixture,
                           KagedClock *clock)
{
  g_clear_object (&fixture->manager);
  fixture->manager = kaged_session_manager_new (fixture->store, clock);
  fixture_set_model (fixture, fixture->manager);
  g_signal_connect (fixture->manager, "message-delta", G_CALLBACK (on_delta), fixture);
  g_signal_connect (fixture->manager, "run-changed", G_CALLBACK (on_run_changed), fixture);
}

static void
test_post_streams_reply (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  g_autoptr(KagedClock) clock = kaged_fake_clock_new (1764400000000);
  GBytes *body = NULL;
  guint64 writes_before;
  guint64 writes;

  /* The manager's clock stands still: the reply's text is announced and
   * saved only at the end, whatever the pieces' timing. */
  fixture_use_manager_clock (fixture, clock);
  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"The capital of France is Paris.\", "
                        "\"chunks\": 40, \"delay_ms\": 2, "
                        "\"usage\": {\"input_tokens\": 12, \"output_tokens\": 8}}]");

  writes_before = kaged_store_get_n_write_transactions (fixture->store);
  receipt = post (fixture, "What is the capital of France?");
  g_assert_cmpint (receipt->session_id, ==, kaged_session_get_id (fixture->session));
  g_assert_cmpint (receipt->status, ==, KAGED_RECEIPT_STATUS_DISPATCHED);
  g_assert_cmpuint (receipt->superseded_message_ids->len, ==, 0);
  g_assert_true (kaged_session_manager_is_busy (fixture->manager,
                                                kaged_session_get_id (fixture->session)));

  wait_run (fixture, receipt->run_id);
  writes = kaged_store_get_n_write_transactions (fixture->store) - writes_before;

  /* 40 pieces reached the disk in one write at the end: the post (with
   * the run and its empty reply), one attempt record, the end. */
  g_test_message ("%" G_GUINT64_FORMAT " write transactions", writes);
  g_assert_cmpuint (writes, ==, 3);
  /* ... and observers heard of them once. */
  g_assert_cmpuint (fixture->n_deltas, ==, 1);

  run = get_run (fixture, receipt->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_cmpint (kaged_run_get_anchor_id (run), ==, receipt->message_id);
  g_assert_cmpint (kaged_run_get_input_tokens (run), ==, 12);
  g_assert_cmpint (kaged_run_get_output_tokens (run), ==, 8);
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_NONE);
  g_assert_cmpuint (kaged_run_get_attempts (run)->len, >=, 1);

  reply = get_reply (fixture, receipt->run_id);
  g_assert_nonnull (reply);
  g_assert_cmpstr (kaged_message_get_content (reply), ==, "The capital of France is Paris.");
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_COMPLETE);

  /* The operator's words reached the provider. */
  body = kaged_fake_server_get_last_body (fixture->server, NULL);
  g_assert_nonnull (body);
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body),
                                  "What is the capital of France?"));
  g_assert_false (kaged_session_manager_is_busy (fixture->manager,
                                                 kaged_session_get_id (fixture->session)));
}

static gboolean
manager_clock_pending (Fixture  *fixture,
                       gpointer  data)
{
  return kaged_fake_clock_get_n_pending (data) > 0;
}

static gboolean
has_deltas (Fixture  *fixture,
            gpointer  data)
{
  return fixture->n_deltas >= GPOINTER_TO_UINT (data);
}

/* More write transactions than *@data. */
static gboolean
has_writes (Fixture  *fixture,
            gpointer  data)
{
  return kaged_store_get_n_write_transactions (fixture->store) > *(guint64 *)data;
}

/* While a reply streams, its text reaches observers every 50 ms and the
 * disk every 250 ms of the manager's clock, in one write however many
 * pieces came meanwhile. */
static void
test_stream_coalesced (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  g_autoptr(KagedClock) clock = kaged_fake_clock_new (1764400000000);
  g_autoptr(GError) error = NULL;
  guint64 writes_before;

  fixture_use_manager_clock (fixture, clock);
  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"abcdefghij\", \"chunks\": 10, "
                        "\"hang_after_chunks\": 4}]");

  receipt = post (fixture, "Spell");
  /* The first piece arms the announcement and the save. */
  wait_until (fixture, manager_clock_pending, clock);
  writes_before = kaged_store_get_n_write_transactions (fixture->store);

  /* At 50 ms the text so far is announced, not saved... */
  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (clock), 50);
  wait_until (fixture, has_deltas, GUINT_TO_POINTER (1));
  g_assert_cmpuint (kaged_store_get_n_write_transactions (fixture->store), ==, writes_before);

  /* ... at 250 ms it is saved, in one write. */
  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (clock), 200);
  wait_until (fixture, has_writes, &writes_before);
  g_assert_cmpuint (kaged_store_get_n_write_transactions (fixture->store), ==,
                    writes_before + 1);

  reply = get_reply (fixture, receipt->run_id);
  g_assert_true (g_str_has_prefix ("abcdefghij", kaged_message_get_content (reply)));
  g_assert_cmpstr (kaged_message_get_content (reply), !=, "");
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_STREAMING);

  g_assert_true (kaged_session_manager_cancel (fixture->manager,
                                               kaged_session_get_id (fixture->session),
                                               receipt->run_id, &error));
  g_assert_no_error (error);
}

/* A stream cut after its first delta is not retried: the run fails with
 * the class `network`, the text received so far kept. */
static void
test_stream_cut (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"One two three four five six\", "
                        "\"chunks\": 6, \"cut_after_chunks\": 3}]");

  receipt = post (fixture, "Count");
  wait_run (fixture, receipt->run_id);

  run = get_run (fixture, receipt->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_NETWORK);
  g_assert_true (kaged_run_get_retryable (run));
  g_assert_cmpuint (kaged_run_get_attempts (run)->len, ==, 1);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);

  reply = get_reply (fixture, receipt->run_id);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_FAILED);
  g_assert_cmpint (kaged_message_get_retry_class (reply), ==, KAGED_RETRY_CLASS_NETWORK);
  g_assert_cmpstr (kaged_message_get_content (reply), !=, "");
  g_assert_true (g_str_has_prefix ("One two three four five six",
                                   kaged_message_get_content (reply)));
  g_assert_cmpstr (kaged_message_get_content (reply), !=, "One two three four five six");
}

static void
test_post_refuses_bad_content (Fixture       *fixture,
                               gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *huge = NULL;
  KagedReceipt *receipt;
  gint64 session_id = kaged_session_get_id (fixture->session);

  receipt = kaged_session_manager_post (fixture->manager, session_id, "", &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_EMPTY_CONTENT);
  g_clear_error (&error);

  receipt = kaged_session_manager_post (fixture->manager, session_id, "  \n\t \u00a0 ", &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_EMPTY_CONTENT);
  g_clear_error (&error);

  huge = g_malloc (KAGED_ENGINE_DEFAULT_MAX_CONTENT + 2);
  memset (huge, 'a', KAGED_ENGINE_DEFAULT_MAX_CONTENT + 1);
  huge[KAGED_ENGINE_DEFAULT_MAX_CONTENT + 1] = '\0';
  receipt = kaged_session_manager_post (fixture->manager, session_id, huge, &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_TOO_LARGE);
  g_clear_error (&error);

  receipt = kaged_session_manager_post (fixture->manager, session_id, "\xff\xfe bad", &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_CONTENT);
  g_clear_error (&error);

  receipt = kaged_session_manager_post (fixture->manager, 9999, "Hello", &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  g_assert_cmpuint (count_messages (fixture), ==, 0);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 0);
}

static void
test_second_post_is_queued (Fixture       *fixture,
                            gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedRun) first_run = NULL;
  g_autoptr(KagedRun) second_run = NULL;
  g_autoptr(KagedMessage) first_reply = NULL;
  g_autoptr(KagedMessage) second_reply = NULL;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"One\", \"chunks\": 5, \"delay_ms\": 20},"
                        " {\"kind\": \"openai\", \"text\": \"Two\"}]");

  first = post (fixture, "First question");
  second = post (fixture, "Second question");
  g_assert_cmpint (first->status, ==, KAGED_RECEIPT_STATUS_DISPATCHED);
  g_assert_cmpint (second->status, ==, KAGED_RECEIPT_STATUS_QUEUED);

  second_run = get_run (fixture, second->run_id);
  g_assert_cmpint (kaged_run_get_status (second_run), ==, KAGED_RUN_STATUS_QUEUED);
  g_clear_object (&second_run);

  wait_run (fixture, second->run_id);

  first_run = get_run (fixture, first->run_id);
  second_run = get_run (fixture, second->run_id);
  g_assert_cmpint (kaged_run_get_status (first_run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_cmpint (kaged_run_get_status (second_run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  /* FIFO: the second started only after the first ended. */
  g_assert_cmpint (kaged_run_get_started_at (second_run), >=,
                   kaged_run_get_finished_at (first_run));

  first_reply = get_reply (fixture, first->run_id);
  second_reply = get_reply (fixture, second->run_id);
  g_assert_cmpstr (kaged_message_get_content (first_reply), ==, "One");
  g_assert_cmpstr (kaged_message_get_content (second_reply), ==, "Two");
  g_assert_cmpint (kaged_message_get_id (first_reply), <, second->message_id);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 2);
}

static void
record_status (KagedSessionManager *manager,
               KagedRun            *run,
               GArray              *statuses)
{
  KagedRunStatus status = kaged_run_get_status (run);

  g_array_append_val (statuses, status);
}

/* The receipt comes first: one transaction stores the message, the run
 * (running) and its empty reply, and the run's provider call starts only
 * once the main loop turns. Observers still see the run queued, then
 * started. Without a provider, the run fails then, not inside post(). */
static void
test_post_answers_before_run_starts (Fixture       *fixture,
                                     gconstpointer  data)
{
  g_autoptr(GArray) statuses = g_array_new (FALSE, FALSE, sizeof (KagedRunStatus));
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  guint64 writes;
  gulong handler;

  kaged_session_manager_set_model (fixture->manager, NULL, NULL);
  handler = g_signal_connect (fixture->manager, "run-changed", G_CALLBACK (record_status), statuses);

  writes = kaged_store_get_n_write_transactions (fixture->store);
  receipt = post (fixture, "Quick");
  g_assert_cmpint (receipt->status, ==, KAGED_RECEIPT_STATUS_DISPATCHED);
  g_assert_cmpuint (kaged_store_get_n_write_transactions (fixture->store), ==, writes + 1);

  run = get_run (fixture, receipt->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_RUNNING);
  g_assert_cmpint (kaged_run_get_started_at (run), >, 0);
  reply = get_reply (fixture, receipt->run_id);
  g_assert_nonnull (reply);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_STREAMING);
  g_assert_cmpint (kaged_message_get_id (reply), ==, receipt->message_id + 1);

  g_assert_cmpuint (statuses->len, ==, 2);
  g_assert_cmpint (g_array_index (statuses, KagedRunStatus, 0), ==, KAGED_RUN_STATUS_QUEUED);
  g_assert_cmpint (g_array_index (statuses, KagedRunStatus, 1), ==, KAGED_RUN_STATUS_RUNNING);

  wait_run (fixture, receipt->run_id);
  g_signal_handler_disconnect (fixture->manager, handler);

  g_clear_object (&run);
  run = get_run (fixture, receipt->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED);
  g_assert_cmpuint (statuses->len, ==, 3);
}

/* The manager may be let go while a run waits to start; the run then ends
 * without a provider, and nothing is left behind. */
static void
test_post_manager_released_before_start (Fixture       *fixture,
                                         gconstpointer  data)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedRun) run = NULL;
  GWeakRef weak;

  kaged_session_manager_set_model (fixture->manager, NULL, NULL);
  receipt = post (fixture, "Anyone?");

  g_weak_ref_init (&weak, fixture->manager);
  g_clear_object (&fixture->manager);
  for (guint i = 0; i < 100 && !kaged_run_is_finished (run = get_run (fixture, receipt->run_id)); i++)
    {
      g_clear_object (&run);
      g_main_context_iteration (NULL, TRUE);
    }
  g_assert_nonnull (run);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_null (g_weak_ref_get (&weak));
  g_weak_ref_clear (&weak);

  /* The fixture's tear-down wants one. */
  fixture->manager = kaged_session_manager_new (fixture->store, NULL);
}

static gboolean
reply_has_text (Fixture  *fixture,
                gpointer  data)
{
  return fixture->n_deltas > 0;
}

static void
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

typedef struct
{
  Fixture *fixture;
  GString *events;
} Observer;

static void
observe_message_added (KagedSessionManager *manager,
                       KagedMessage        *message,
                       Observer            *observer)
{
  gint64 session_id = kaged_message_get_session_id (message);
  g_autoptr(KagedRun) run = NULL;

  g_string_append_printf (observer->events, "added %s; ",
                          kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_OPERATOR
                            ? "operator" : "reply");

  /* Stop the run as soon as the question is in. */
  if (kaged_message_get_role (message) != KAGED_MESSAGE_ROLE_OPERATOR)
    return;
  run = kaged_session_manager_get_latest_run (manager, session_id, NULL);
  g_assert_nonnull (run);
  g_assert_true (kaged_session_manager_cancel (manager, session_id, kaged_run_get_id (run), NULL));
}

static void
observe_message_changed (KagedSessionManager *manager,
                         KagedMessage        *message,
                         Observer            *observer)
{
  g_string_append (observer->events, "changed reply; ");
}

static void
observe_run_changed (KagedSessionManager *manager,
                     KagedRun            *run,
                     Observer            *observer)
{
  g_string_append_printf (observer->events, "run %s; ",
                          kaged_enum_to_nick (KAGED_TYPE_RUN_STATUS, kaged_run_get_status (run)));
}

/* An observer that cancels the run while the post is being announced:
 * the reply is announced before it is changed, nothing says the run
 * started after it ended, and the run keeps the time it started. */
static void
test_cancel_from_observer_during_post (Fixture       *fixture,
                                       gconstpointer  data)
{
  g_autoptr(GString) events = g_string_new (NULL);
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  Observer observer = { fixture, events };
  gulong handlers[3];

  fixture_set_scenario (fixture, "[{\"kind\": \"openai\", \"text\": \"Never asked\"}]");
  handlers[0] = g_signal_connect (fixture->manager, "message-added",
                                  G_CALLBACK (observe_message_added), &observer);
  handlers[1] = g_signal_connect (fixture->manager, "message-changed",
                                  G_CALLBACK (observe_message_changed), &observer);
  handlers[2] = g_signal_connect (fixture->manager, "run-changed",
                                  G_CALLBACK (observe_run_changed), &observer);

  receipt = post (fixture, "Never mind");
  for (guint i = 0; i < G_N_ELEMENTS (handlers); i++)
    g_signal_handler_disconnect (fixture->manager, handlers[i]);

  g_assert_cmpstr (events->str, ==,
                   "added operator; added reply; changed reply; run cancelled; ");

  assert_cancelled (fixture, receipt->run_id, "");
  run = get_run (fixture, receipt->run_id);
  g_assert_cmpint (kaged_run_get_started_at (run), >, 0);

  /* Only the next run reached the provider. */
  settle (fixture);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);
}

/* Cancelled before its provider call started, a run never makes one. */
static void
test_cancel_before_start (Fixture       *fixture,
                          gconstpointer  data)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);

  fixture_set_scenario (fixture, "[{\"kind\": \"openai\", \"text\": \"Never asked\"}]");

  receipt = post (fixture, "Never mind");
  g_assert_true (kaged_session_manager_cancel (fixture->manager, session_id, receipt->run_id,
                                               &error));
  g_assert_no_error (error);
  assert_cancelled (fixture, receipt->run_id, "");

  /* Only the next run reached the provider. */
  settle (fixture);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);
  g_assert_false (kaged_session_manager_is_busy (fixture->manager, session_id));
}

static void
test_cancel_during_stream (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedReceipt) next = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"Partial answer that never ends\", "
                        "\"chunks\": 6, \"hang_after_chunks\": 3},"
                        " {\"kind\": \"openai\", \"text\": \"Next\"}]");

  receipt = post (fixture, "Tell me a long story");
  next = post (fixture, "And another");
  wait_until (fixture, reply_has_text, NULL);

  g_assert_true (kaged_session_manager_cancel (fixture->manager, session_id, receipt->run_id,
                                               &error));
  g_assert_no_error (error);
  wait_run (fixture, receipt->run_id);
  assert_cancelled (fixture, receipt->run_id, "Part");

  /* The queued run starts next and succeeds. */
  wait_run (fixture, next->run_id);
  {
    g_autoptr(KagedRun) run = get_run (fixture, next->run_id);
    g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  }
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 2);

  /* Cancelling a finished run changes nothing and says so. */
  g_assert_false (kaged_session_manager_cancel (fixture->manager, session_id, receipt->run_id,
                                                &error));
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_RUN_FINISHED);
  g_clear_error (&error);
  g_assert_false (kaged_session_manager_cancel (fixture->manager, session_id, 4242, &error));
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
}

static void
test_cancel_during_retry_sleep (Fixture       *fixture,
                                gconstpointer  data)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedRun) run = NULL;

  g_clear_object (&fixture->retry_clock);
  fixture->retry_clock = kaged_fake_clock_new (1764400000000);
  fixture_set_model (fixture, fixture->manager);

  fixture_set_scenario (fixture, "[{\"status\": 503, \"body\": {\"error\": {\"message\": "
                                 "\"Service unavailable\", \"type\": \"server_error\"}}}]");

  receipt = post (fixture, "Hello?");
  /* The first attempt failed and Tier 1 sleeps before the second. */
  wait_until (fixture, pending_clock, NULL);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);

  g_assert_true (kaged_session_manager_cancel (fixture->manager,
                                               kaged_session_get_id (fixture->session),
                                               receipt->run_id, &error));
  g_assert_no_error (error);
  wait_run (fixture, receipt->run_id);

  /* Even once the sleep would have ended, and whatever was waiting on the
   * clock has run, nothing more is sent. */
  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->retry_clock), 60000);
  wait_until (fixture, no_pending_clock, NULL);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);

  assert_cancelled (fixture, receipt->run_id, "");
  run = get_run (fixture, receipt->run_id);
  g_assert_cmpuint (kaged_run_get_attempts (run)->len, ==, 1);
}

static void
test_cancel_queued (Fixture       *fixture,
                    gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"Slow one\", \"chunks\": 4, "
                        "\"delay_ms\": 30}]");

  first = post (fixture, "First");
  second = post (fixture, "Second");
  g_assert_true (kaged_session_manager_cancel (fixture->manager, session_id, second->run_id,
                                               &error));
  g_assert_no_error (error);
  assert_cancelled (fixture, second->run_id, NULL);

  wait_run (fixture, first->run_id);
  settle (fixture);

  /* The dropped run never reached the provider and has no reply. */
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 2);
  g_assert_null (get_reply (fixture, second->run_id));
  g_assert_false (kaged_session_manager_is_busy (fixture->manager, session_id));
}

static void
test_failure_is_classified (Fixture       *fixture,
                            gconstpointer  data)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;

  g_clear_object (&fixture->retry_clock);
  fixture->retry_clock = kaged_fake_clock_new (1764400000000);
  fixture_set_model (fixture, fixture->manager);

  fixture_set_scenario (fixture,
                        "[{\"status\": 529, \"headers\": {\"request-id\": \"req_529\"}, "
                        "\"body\": {\"type\": \"error\", \"error\": {\"type\": "
                        "\"overloaded_error\", \"message\": \"Overloaded\"}}}]");

  receipt = post (fixture, "Are you there?");

  /* Drive Tier 1's two backoffs on its fake clock. */
  while (!run_finished (fixture, GSIZE_TO_POINTER (receipt->run_id)))
    {
      KagedFakeClock *clock = KAGED_FAKE_CLOCK (fixture->retry_clock);

      g_main_context_iteration (NULL, TRUE);
      if (kaged_fake_clock_get_n_pending (clock) > 0)
        kaged_fake_clock_advance (clock, kaged_fake_clock_next_deadline (clock));
    }

  run = get_run (fixture, receipt->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_true (kaged_run_get_retryable (run));
  g_assert_cmpuint (kaged_run_get_http_status (run), ==, 529);
  g_assert_nonnull (kaged_run_get_error_message (run));
  g_assert_cmpuint (kaged_run_get_attempts (run)->len, ==, 3);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 3);

  /* The reply carries the run's classification for the wire. */
  reply = get_reply (fixture, receipt->run_id);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_FAILED);
  g_assert_cmpint (kaged_message_get_retry_class (reply), ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_true (kaged_message_get_retryable (reply));
  g_assert_cmpint (kaged_message_get_run_id (reply), ==, receipt->run_id);
}

static void
test_regenerate_latest_while_running (Fixture       *fixture,
                                      gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedReceipt) regen = NULL;
  g_autoptr(KagedMessage) old_reply = NULL;
  g_autoptr(KagedMessage) new_reply = NULL;
  g_autoptr(GPtrArray) versions = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);
  guint n_messages;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"First answer\"},"
                        " {\"kind\": \"openai\", \"text\": \"Endless\", \"chunks\": 4, "
                        "  \"hang_after_chunks\": 2},"
                        " {\"kind\": \"openai\", \"text\": \"Better answer\"}]");

  first = post (fixture, "Question one");
  wait_run (fixture, first->run_id);
  second = post (fixture, "Question two");
  fixture->n_deltas = 0;
  wait_until (fixture, reply_has_text, NULL);

  before = dump_operator_rows (fixture);
  n_messages = count_messages (fixture);

  regen = kaged_session_manager_regenerate (fixture->manager, session_id, second->message_id,
                                            &error);
  g_assert_no_error (error);
  g_assert_cmpint (regen->session_id, ==, session_id);
  g_assert_cmpint (regen->message_id, ==, second->message_id);
  g_assert_cmpint (regen->run_id, !=, second->run_id);
  g_assert_cmpint (regen->status, ==, KAGED_RECEIPT_STATUS_DISPATCHED);

  /* Only the streaming reply came after the anchor. */
  old_reply = get_reply (fixture, second->run_id);
  g_assert_cmpuint (regen->superseded_message_ids->len, ==, 1);
  g_assert_cmpint (g_array_index (regen->superseded_message_ids, gint64, 0), ==,
                   kaged_message_get_id (old_reply));
  g_clear_object (&old_reply);

  wait_run (fixture, regen->run_id);
  assert_cancelled (fixture, second->run_id, "");

  old_reply = get_reply (fixture, second->run_id);
  g_assert_true (kaged_message_is_superseded (old_reply));
  g_assert_cmpint (kaged_message_get_superseded_by_run (old_reply), ==, regen->run_id);

  new_reply = get_reply (fixture, regen->run_id);
  g_assert_cmpstr (kaged_message_get_content (new_reply), ==, "Better answer");
  g_assert_false (kaged_message_is_superseded (new_reply));

  /* No operator row was added or changed; nothing was deleted. */
  after = dump_operator_rows (fixture);
  g_assert_cmpstr (before, ==, after);
  g_assert_cmpuint (count_messages (fixture), ==, n_messages + 1);

  /* Both versions of the reply, in order, for the pager. */
  versions = kaged_session_manager_list_versions (fixture->manager, session_id,
                                                  second->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (versions->len, ==, 2);
  g_assert_cmpint (kaged_message_get_run_id (g_ptr_array_index (versions, 0)), ==, second->run_id);
  g_assert_cmpint (kaged_message_get_run_id (g_ptr_array_index (versions, 1)), ==, regen->run_id);

  /* An agent reply resolves to the operator message that produced it. */
  g_assert_cmpint (kaged_session_manager_resolve_anchor (fixture->manager, session_id,
                                                         kaged_message_get_id (new_reply),
                                                         &error), ==, second->message_id);
  g_assert_no_error (error);
}

static void
test_regenerate_earlier (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedReceipt) third = NULL;
  g_autoptr(KagedReceipt) regen = NULL;
  g_autoptr(GPtrArray) current = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedMessage) first_reply = NULL;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);
  GBytes *body = NULL;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"A1\"},"
                        " {\"kind\": \"openai\", \"text\": \"A2\"},"
                        " {\"kind\": \"openai\", \"text\": \"never\", \"chunks\": 3, "
                        "  \"hang_after_chunks\": 2},"
                        " {\"kind\": \"openai\", \"text\": \"A1 again\"}]");

  first = post (fixture, "Q1");
  wait_run (fixture, first->run_id);
  second = post (fixture, "Q2");
  wait_run (fixture, second->run_id);
  third = post (fixture, "Q3");
  fixture->n_deltas = 0;
  wait_until (fixture, reply_has_text, NULL);

  before = dump_operator_rows (fixture);
  first_reply = get_reply (fixture, first->run_id);

  regen = kaged_session_manager_regenerate (fixture->manager, session_id, first->message_id,
                                            &error);
  g_assert_no_error (error);

  /* A1, Q2, A2, Q3 and the streaming A3: everything after Q1. */
  g_assert_cmpuint (regen->superseded_message_ids->len, ==, 5);
  g_assert_cmpint (g_array_index (regen->superseded_message_ids, gint64, 0), ==,
                   kaged_message_get_id (first_reply));
  g_assert_cmpint (g_array_index (regen->superseded_message_ids, gint64, 1), ==,
                   second->message_id);
  g_assert_cmpint (g_array_index (regen->superseded_message_ids, gint64, 3), ==,
                   third->message_id);

  wait_run (fixture, regen->run_id);
  assert_cancelled (fixture, third->run_id, "");

  current = kaged_store_list_messages (fixture->store, session_id, FALSE, 0, G_MAXUINT, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (current->len, ==, 2);
  g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (current, 0)), ==, first->message_id);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (current, 1)), ==, "A1 again");

  /* The new run sent only Q1 as context. */
  body = kaged_fake_server_get_last_body (fixture->server, NULL);
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body), "Q1"));
  g_assert_null (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body), "Q2"));

  after = dump_operator_rows (fixture);
  g_assert_cmpstr (before, ==, after);
}

static gboolean
run_has_text (Fixture  *fixture,
              gpointer  data)
{
  return fixture->last_delta_run == GPOINTER_TO_SIZE (data);
}

/* The current messages' contents, in the order the store lists them. */
static char *
list_current (Fixture *fixture)
{
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) out = g_string_new (NULL);

  messages = kaged_store_list_messages (fixture->store, kaged_session_get_id (fixture->session),
                                        FALSE, 0, G_MAXUINT, &error);
  g_assert_no_error (error);

  for (guint i = 0; i < messages->len; i++)
    {
      if (i > 0)
        g_string_append_c (out, ' ');
      g_string_append (out, kaged_message_get_content (g_ptr_array_index (messages, i)));
    }

  return g_strdup (out->str);
}

/* Q2 and Q3 posted while A1 streams are answered in turn: each reply
 * stands after its question, Q3's run sees A2, and regenerating Q3 leaves
 * Q2 and its running reply alone. */
static void
test_conversation_order_with_queued_posts (Fixture       *fixture,
                                           gconstpointer  data)
{
  g_autoptr(KagedReceipt) q1 = NULL;
  g_autoptr(KagedReceipt) q2 = NULL;
  g_autoptr(KagedReceipt) q3 = NULL;
  g_autoptr(KagedReceipt) regen = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) a2 = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *order = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);
  GBytes *body = NULL;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"A1\", \"chunks\": 2, \"delay_ms\": 20},"
                        " {\"kind\": \"openai\", \"text\": \"A2 in ten pieces\", \"chunks\": 10, "
                        "  \"delay_ms\": 30},"
                        " {\"kind\": \"openai\", \"text\": \"A3\"}]");

  q1 = post (fixture, "Q1");
  wait_until (fixture, run_has_text, GSIZE_TO_POINTER (q1->run_id));
  q2 = post (fixture, "Q2");
  q3 = post (fixture, "Q3");
  g_assert_cmpint (q3->status, ==, KAGED_RECEIPT_STATUS_QUEUED);

  /* A2 is streaming: it stands after Q2, before Q3. */
  wait_until (fixture, run_has_text, GSIZE_TO_POINTER (q2->run_id));
  a2 = get_reply (fixture, q2->run_id);
  {
    g_autoptr(GPtrArray) messages =
      kaged_store_list_messages (fixture->store, session_id, FALSE, 0, G_MAXUINT, &error);

    g_assert_no_error (error);
    g_assert_cmpuint (messages->len, ==, 5);
    g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (messages, 3)), ==,
                     kaged_message_get_id (a2));
  }

  /* Nothing stands after Q3 yet: nothing is superseded, and Q2's run
   * goes on. */
  regen = kaged_session_manager_regenerate (fixture->manager, session_id, q3->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (regen->superseded_message_ids->len, ==, 0);
  g_assert_cmpint (regen->status, ==, KAGED_RECEIPT_STATUS_QUEUED);

  wait_run (fixture, regen->run_id);

  run = get_run (fixture, q2->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_clear_object (&run);
  run = get_run (fixture, q3->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_CANCELLED);
  g_clear_object (&a2);
  a2 = get_reply (fixture, q2->run_id);
  g_assert_false (kaged_message_is_superseded (a2));
  g_assert_cmpint (kaged_message_get_status (a2), ==, KAGED_MESSAGE_STATUS_COMPLETE);

  order = list_current (fixture);
  g_assert_cmpstr (order, ==, "Q1 A1 Q2 A2 in ten pieces Q3 A3");

  /* Q3's run was sent A2. */
  body = kaged_fake_server_get_last_body (fixture->server, NULL);
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body),
                                  "A2 in ten pieces"));

  /* The latest run in conversation order is Q3's newest. */
  run = kaged_store_get_latest_run_in_conversation (fixture->store, session_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_id (run), ==, regen->run_id);
}

static void
test_regenerate_invalid (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedReceipt) regen = NULL;
  g_autoptr(KagedSession) other = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);
  guint n_messages;
  guint n_requests;
  KagedReceipt *receipt;

  fixture_set_scenario (fixture, "[{\"kind\": \"openai\", \"text\": \"Fine\"}]");

  first = post (fixture, "Q1");
  wait_run (fixture, first->run_id);
  second = post (fixture, "Q2");
  wait_run (fixture, second->run_id);
  regen = kaged_session_manager_regenerate (fixture->manager, session_id, first->message_id,
                                            &error);
  g_assert_no_error (error);
  wait_run (fixture, regen->run_id);

  other = kaged_session_manager_create_session (fixture->manager, "Other", &error);
  g_assert_no_error (error);

  before = dump_operator_rows (fixture);
  n_messages = count_messages (fixture);
  n_requests = kaged_fake_server_get_n_requests (fixture->server, NULL);
  reply = get_reply (fixture, regen->run_id);

  /* Unknown message */
  receipt = kaged_session_manager_regenerate (fixture->manager, session_id, 987654, &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  /* A message of another session */
  receipt = kaged_session_manager_regenerate (fixture->manager, kaged_session_get_id (other),
                                              first->message_id, &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  /* Unknown session */
  receipt = kaged_session_manager_regenerate (fixture->manager, 31337, first->message_id, &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  /* An agent reply as anchor */
  receipt = kaged_session_manager_regenerate (fixture->manager, session_id,
                                              kaged_message_get_id (reply), &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_ANCHOR);
  g_clear_error (&error);

  /* A superseded operator message as anchor */
  receipt = kaged_session_manager_regenerate (fixture->manager, session_id, second->message_id,
                                              &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_ANCHOR);
  g_clear_error (&error);

  after = dump_operator_rows (fixture);
  g_assert_cmpstr (before, ==, after);
  g_assert_cmpuint (count_messages (fixture), ==, n_messages);
  settle (fixture);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, n_requests + 1);
  g_assert_false (kaged_session_manager_is_busy (fixture->manager, session_id));
}

static void
test_context_overflow_compacts (Fixture       *fixture,
                                gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  g_autoptr(KagedMessage) q1 = NULL;
  g_autoptr(GPtrArray) current = NULL;
  g_autoptr(GError) error = NULL;
  gboolean found_summary = FALSE;
  gint64 session_id = kaged_session_get_id (fixture->session);

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"Long first answer\"},"
                        " {\"status\": 400, \"body\": {\"error\": {\"message\": \"This model's "
                        "  maximum context length is 8192 tokens.\", \"type\": "
                        "  \"invalid_request_error\", \"code\": \"context_length_exceeded\"}}},"
                        " {\"kind\": \"openai\", \"text\": \"The user asked a long question.\"},"
                        " {\"kind\": \"openai\", \"text\": \"Short second answer\"}]");

  first = post (fixture, "Long first question");
  wait_run (fixture, first->run_id);
  second = post (fixture, "Second question");
  wait_run (fixture, second->run_id);

  run = get_run (fixture, second->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  /* The overflowing attempt, the summary's and the re-run's are all logged. */
  g_assert_cmpuint (kaged_run_get_attempts (run)->len, >=, 3);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 4);

  reply = get_reply (fixture, second->run_id);
  g_assert_cmpstr (kaged_message_get_content (reply), ==, "Short second answer");

  /* The original is kept, marked compacted, and a summary stands for it. */
  q1 = kaged_store_get_message (fixture->store, first->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_message_get_content (q1), ==, "Long first question");
  g_assert_true (kaged_message_get_compacted (q1));

  current = kaged_store_list_messages (fixture->store, session_id, FALSE, 0, G_MAXUINT, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < current->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (current, i);

      if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_SUMMARY)
        {
          g_assert_cmpstr (kaged_message_get_content (message), ==,
                           "The user asked a long question.");
          found_summary = TRUE;
        }
    }
  g_assert_true (found_summary);
}

static void
test_context_overflow_twice (Fixture       *fixture,
                             gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"First answer\"},"
                        " {\"status\": 400, \"body\": {\"error\": {\"message\": \"too long\", "
                        "  \"type\": \"invalid_request_error\", \"code\": \"context_length_exceeded\"}}},"
                        " {\"kind\": \"openai\", \"text\": \"A summary.\"},"
                        " {\"status\": 400, \"body\": {\"error\": {\"message\": \"still too long\", "
                        "  \"type\": \"invalid_request_error\", \"code\": \"context_length_exceeded\"}}}]");

  first = post (fixture, "First question");
  wait_run (fixture, first->run_id);
  second = post (fixture, "Second question");
  wait_run (fixture, second->run_id);

  run = get_run (fixture, second->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_CONTEXT_OVERFLOW);
  g_assert_false (kaged_run_get_retryable (run));
  g_assert_cmpuint (kaged_run_get_attempts (run)->len, >=, 3);
  /* Exactly one re-run: no fifth request. */
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 4);

  reply = get_reply (fixture, second->run_id);
  g_assert_cmpint (kaged_message_get_retry_class (reply), ==, KAGED_RETRY_CLASS_CONTEXT_OVERFLOW);
  g_assert_false (kaged_message_get_retryable (reply));
}

static void
test_context_overflow_summary_overflows (Fixture       *fixture,
                                         gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) q1 = NULL;
  GBytes *body = NULL;
  g_autoptr(GError) error = NULL;
  const char *overflow = "{\"status\": 400, \"body\": {\"error\": {\"message\": \"too long\", "
                         "\"type\": \"invalid_request_error\", \"code\": \"context_length_exceeded\"}}}";
  g_autofree char *scenario =
    g_strdup_printf ("[{\"kind\": \"openai\", \"text\": \"First answer\"}, %s, %s, "
                     "{\"kind\": \"openai\", \"text\": \"Answer without the old turns\"}]",
                     overflow, overflow);

  fixture_set_scenario (fixture, scenario);

  first = post (fixture, "An enormous first question");
  wait_run (fixture, first->run_id);
  second = post (fixture, "Second question");
  wait_run (fixture, second->run_id);

  run = get_run (fixture, second->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);

  /* The oldest turn was left out of the re-run, and kept in the store. */
  q1 = kaged_store_get_message (fixture->store, first->message_id, &error);
  g_assert_no_error (error);
  g_assert_true (kaged_message_get_compacted (q1));
  body = kaged_fake_server_get_last_body (fixture->server, NULL);
  g_assert_null (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body),
                               "An enormous first question"));
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body),
                                  "Second question"));
}

static void
test_spend_limit (Fixture       *fixture,
                  gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  KagedSpendLimit spend = {
    .period = KAGED_SPEND_PERIOD_DAILY,
    .limit = 1.0,
  };

  /* Prices per million tokens come with the profile. */
  fixture->input_price = 1000.0;
  fixture->output_price = 2000.0;
  fixture_set_model (fixture, fixture->manager);
  kaged_session_manager_set_spend_limit (fixture->manager, &spend);
  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"Costly\", "
                        "\"usage\": {\"input_tokens\": 600, \"output_tokens\": 300}}]");

  /* 600 × 1000 + 300 × 2000 per million: 1.20, over the limit of 1.00. */
  first = post (fixture, "Expensive question");
  wait_run (fixture, first->run_id);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);

  second = post (fixture, "One more");
  wait_run (fixture, second->run_id);

  run = get_run (fixture, second->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED);
  g_assert_false (kaged_run_get_retryable (run));
  reply = get_reply (fixture, second->run_id);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_FAILED);
  g_assert_nonnull (kaged_message_get_error_message (reply));

  /* No request was sent for it. */
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);
}

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
  g_test_init (&argc, &argv, NULL);
  g_test_log_set_fatal_handler (fatal_unless_gone_client, NULL);
  g_log_set_handler ("libsoup", G_LOG_LEVEL_WARNING | G_LOG_FLAG_FATAL, drop_gone_client, NULL);

#define ADD(path, func) \
  g_test_add ("/engine/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  ADD ("post/streams-reply", test_post_streams_reply);
  ADD ("post/refuses-bad-content", test_post_refuses_bad_content);
  ADD ("stream/coalesced", test_stream_coalesced);
  ADD ("stream/cut-after-first-delta", test_stream_cut);
  ADD ("post/second-is-queued", test_second_post_is_queued);
  ADD ("post/answers-before-run-starts", test_post_answers_before_run_starts);
  ADD ("post/manager-released-before-start", test_post_manager_released_before_start);
  ADD ("cancel/from-observer-during-post", test_cancel_from_observer_during_post);
  ADD ("cancel/before-start", test_cancel_before_start);
  ADD ("cancel/during-stream", test_cancel_during_stream);
  ADD ("cancel/during-retry-sleep", test_cancel_during_retry_sleep);
  ADD ("cancel/queued", test_cancel_queued);
  ADD ("run/failure-is-classified", test_failure_is_classified);
  ADD ("regenerate/latest-while-running", test_regenerate_latest_while_running);
  ADD ("regenerate/earlier", test_regenerate_earlier);
  ADD ("regenerate/invalid", test_regenerate_invalid);
  ADD ("order/queued-posts", test_conversation_order_with_queued_posts);
  ADD ("overflow/compacts", test_context_overflow_compacts);
  ADD ("overflow/twice", test_context_overflow_twice);
  ADD ("overflow/summary-overflows", test_context_overflow_summary_overflows);
  ADD ("spend-limit/blocks", test_spend_limit);

#undef ADD

  g_test_add_func ("/engine/crash/sigkill-recovery", test_sigkill_recovery);

  return g_test_run ();
}
