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

#include "kaged-engine-fixture.h"

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

/* Tier 1 sleeps on a clock the test moves on. */
static void
fixture_use_fake_retry_clock (Fixture *fixture)
{
  g_clear_object (&fixture->retry_clock);
  fixture->retry_clock = kaged_fake_clock_new (1764400000000);
  fixture_set_model (fixture, fixture->manager);
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

  /* The attempt the cancel cut short is in the cancelled run's log. */
  {
    g_autoptr(KagedRun) run = get_run (fixture, receipt->run_id);
    GPtrArray *attempts = kaged_run_get_attempts (run);
    KagedAttempt *attempt;

    g_assert_cmpuint (attempts->len, ==, 1);
    attempt = g_ptr_array_index (attempts, 0);
    g_assert_cmpstr (attempt->error, ==, "The request was cancelled");
    g_assert_cmpint (attempt->retry_class, ==, KAGED_RETRY_CLASS_NONE);
    g_assert_cmpint (attempt->wait_ms, ==, 0);
  }

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

  fixture_use_fake_retry_clock (fixture);

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

/* While Tier 1 waits, the run says when it tries again, for the window to
 * count down to. */
static void
test_tier1_wait_announced (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(KagedClock) clock = kaged_fake_clock_new (1764400000000);
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedRun) run = NULL;
  const KagedAttempt *attempt;

  fixture_use_manager_clock (fixture, clock);
  fixture_use_fake_retry_clock (fixture);
  fixture_set_scenario (fixture,
                        "[{\"status\": 503, \"headers\": {\"retry-after\": \"5\"}, "
                        "\"body\": \"Unavailable\"},"
                        " {\"kind\": \"openai\", \"text\": \"Back again.\"}]");

  receipt = post (fixture, "Hello?");
  wait_until (fixture, pending_clock, NULL);

  /* The run the manager runs, as the window reads it. */
  run = kaged_session_manager_get_run (fixture->manager, kaged_session_get_id (fixture->session),
                                       receipt->run_id, NULL);
  g_assert_nonnull (run);
  g_assert_cmpuint (kaged_run_get_attempts (run)->len, ==, 1);
  attempt = g_ptr_array_index (kaged_run_get_attempts (run), 0);
  g_assert_cmpint (attempt->wait_ms, ==, 5000);
  g_assert_cmpint (kaged_run_get_next_attempt_at (run), ==, 1764400000000 + 5000);

  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->retry_clock), 5000);
  wait_run (fixture, receipt->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);
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

  fixture_use_fake_retry_clock (fixture);

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
test_spend_limit (Fixture       *fixture,
                  gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;

  /* Prices per million tokens and the limit come with the profile. */
  fixture->input_price = 1000.0;
  fixture->output_price = 2000.0;
  fixture->spend_limit_period = KAGED_SPEND_PERIOD_DAILY;
  fixture->spend_limit = 1.0;
  fixture_set_model (fixture, fixture->manager);
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

int
main (int   argc,
      char *argv[])
{
  kaged_engine_test_init (&argc, &argv);

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
  ADD ("run/tier1-wait-announced", test_tier1_wait_announced);
  ADD ("spend-limit/blocks", test_spend_limit);

#undef ADD

  return g_test_run ();
}
