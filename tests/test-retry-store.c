/* test-retry-store.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "kaged-clock.h"
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-enum-types.h"
#include "kaged-random.h"
#include "kaged-retry-class.h"
#include "kaged-retry-scheduler-private.h"
#include "kaged-run.h"
#include "kaged-session.h"
#include "kaged-session-manager.h"
#include "kaged-store.h"
#include "kaged-test-doubles.h"


/* 2026-03-10 13:42:00 UTC */
#define START_WALL_MS ((gint64)1773150120000)

/*
 * The Tier 2 scheduler on the real database and engine: its state kept in
 * the store as the application does, and a retry from a failed run to a
 * reply through the session manager.
 */

/* Lets everything already due on the main loop run. */
static void
iterate (void)
{
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

/* The schedulers' state kept in the database, as the application does. */
static void
test_store_backed (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *path = NULL;
  g_autoptr(KagedClock) clock = kaged_fake_clock_new (START_WALL_MS);
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedRetryStateStore) state_store = NULL;
  g_autoptr(TestDispatcher) dispatcher = g_object_new (TEST_TYPE_DISPATCHER, NULL);
  g_autoptr(TestNetworkMonitor) monitor = g_object_new (TEST_TYPE_NETWORK_MONITOR, NULL);
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedMessage) operator = kaged_message_new ();
  g_autoptr(KagedRun) run = kaged_run_new ();
  g_autoptr(KagedStoreRetryState) saved = NULL;
  g_autoptr(KagedAttempt) attempt = kaged_attempt_new ();
  KagedRetryScheduler *scheduler;
  gint64 session_id;

  g_assert_no_error (error);
  path = g_build_filename (dir, "kaged.db", NULL);
  store = kaged_store_open_with_clock (path, clock, &error);
  g_assert_no_error (error);
  state_store = kaged_retry_state_store_new_for_store (store);

  session = kaged_store_create_session (store, "Retries", &error);
  g_assert_no_error (error);
  session_id = kaged_session_get_id (session);

  kaged_message_set_session_id (operator, session_id);
  kaged_message_set_role (operator, KAGED_MESSAGE_ROLE_OPERATOR);
  kaged_message_set_content (operator, "Hello");
  g_assert_true (kaged_store_append_message (store, operator, &error));
  g_assert_no_error (error);

  /* The provider asked for 40 s. */
  kaged_run_set_session_id (run, session_id);
  kaged_run_set_anchor_id (run, kaged_message_get_id (operator));
  kaged_run_set_status (run, KAGED_RUN_STATUS_QUEUED);
  g_assert_true (kaged_store_create_run (store, run, &error));
  g_assert_no_error (error);
  attempt->time = START_WALL_MS;
  attempt->http_status = 429;
  attempt->retry_class = KAGED_RETRY_CLASS_RATE_LIMITED;
  attempt->wait_ms = 40000;
  attempt->wait_source = g_strdup ("retry-after");
  g_assert_true (kaged_store_append_attempt (store, kaged_run_get_id (run), attempt, &error));
  g_assert_no_error (error);
  kaged_run_add_attempt (run, attempt);
  kaged_run_set_status (run, KAGED_RUN_STATUS_FAILED);
  kaged_run_set_retryable (run, TRUE);
  kaged_run_set_retry_class (run, KAGED_RETRY_CLASS_RATE_LIMITED);
  kaged_run_set_http_status (run, 429);
  kaged_run_set_retry_after_until (run, START_WALL_MS + 40000);
  kaged_run_set_finished_at (run, START_WALL_MS);
  g_assert_true (kaged_store_update_run (store, run, &error));
  g_assert_no_error (error);

  scheduler = kaged_retry_scheduler_new (session_id, KAGED_RETRY_DISPATCHER (dispatcher),
                                         state_store, clock, G_NETWORK_MONITOR (monitor));
  kaged_retry_scheduler_run_finished (scheduler, run);
  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==, KAGED_RETRY_SCHEDULER_STATE_ARMED);

  saved = kaged_store_get_retry_state (store, session_id, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (saved->state, ==, "armed");
  g_assert_cmpuint (saved->attempt, ==, 1);
  g_assert_cmpint (saved->next_eligible_at, ==, START_WALL_MS + 40000);
  g_assert_cmpint (saved->anchor_id, ==, kaged_message_get_id (operator));
  g_assert_false (saved->cancelled);
  g_assert_finalize_object (scheduler);

  /* The program starts again 10 s later: the same wait, the same words. */
  kaged_fake_clock_set_wall_ms (KAGED_FAKE_CLOCK (clock), START_WALL_MS + 10000);
  scheduler = kaged_retry_scheduler_new (session_id, KAGED_RETRY_DISPATCHER (dispatcher),
                                         state_store, clock, G_NETWORK_MONITOR (monitor));
  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==, KAGED_RETRY_SCHEDULER_STATE_ARMED);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (scheduler), ==, 30);
  g_assert_cmpint (kaged_retry_scheduler_get_retry_class (scheduler), ==,
                   KAGED_RETRY_CLASS_RATE_LIMITED);
  g_assert_cmpuint (kaged_retry_scheduler_get_http_status (scheduler), ==, 429);
  g_assert_cmpint (kaged_retry_scheduler_get_advised_wait_ms (scheduler), ==, 40000);
  g_assert_cmpstr (kaged_retry_scheduler_get_wait_source (scheduler), ==, "retry-after");

  /* The engine replays the latest run: not a second failure. */
  kaged_retry_scheduler_run_finished (scheduler, run);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (scheduler), ==, 1);

  /* Cancelled, it stays cancelled across a restart. */
  g_assert_true (kaged_retry_scheduler_cancel (scheduler));
  g_clear_pointer (&saved, kaged_store_retry_state_free);
  saved = kaged_store_get_retry_state (store, session_id, &error);
  g_assert_cmpstr (saved->state, ==, "cancelled");
  g_assert_true (saved->cancelled);
  g_assert_finalize_object (scheduler);

  scheduler = kaged_retry_scheduler_new (session_id, KAGED_RETRY_DISPATCHER (dispatcher),
                                         state_store, clock, G_NETWORK_MONITOR (monitor));
  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_CANCELLED);
  kaged_retry_scheduler_run_finished (scheduler, run);
  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_CANCELLED);

  /* Back to idle: the row goes. */
  kaged_retry_scheduler_operator_posted (scheduler);
  g_clear_pointer (&saved, kaged_store_retry_state_free);
  saved = kaged_store_get_retry_state (store, session_id, &error);
  g_assert_cmpstr (saved->state, ==, "idle");
  g_assert_finalize_object (scheduler);

  scheduler = kaged_retry_scheduler_new (session_id, KAGED_RETRY_DISPATCHER (dispatcher),
                                         state_store, clock, G_NETWORK_MONITOR (monitor));
  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==, KAGED_RETRY_SCHEDULER_STATE_IDLE);
  g_assert_finalize_object (scheduler);
  g_assert_cmpuint (dispatcher->n_regenerate, ==, 0);

  g_clear_object (&store);
  g_remove (path);
  {
    g_autofree char *wal = g_strconcat (path, "-wal", NULL);
    g_autofree char *shm = g_strconcat (path, "-shm", NULL);

    g_remove (wal);
    g_remove (shm);
  }
  g_rmdir (dir);
}

/* --- with the real engine ------------------------------------------------------ */

typedef struct
{
  KagedSessionManager *manager;
  KagedRetryScheduler *scheduler;
  KagedRun            *last_finished;
} Glue;

/* What the application does: the session's latest run, once finished,
 * goes to its scheduler. */
static void
glue_run_changed (KagedSessionManager *manager,
                  KagedRun            *run,
                  Glue                *glue)
{
  g_autoptr(KagedRun) latest = NULL;

  if (!kaged_run_is_finished (run))
    return;

  latest = kaged_session_manager_get_latest_run (manager, kaged_run_get_session_id (run), NULL);
  if (latest == NULL || kaged_run_get_id (latest) != kaged_run_get_id (run))
    return;

  g_set_object (&glue->last_finished, run);
  if (glue->scheduler != NULL)
    kaged_retry_scheduler_run_finished (glue->scheduler, run);
}

/* Waits for the end of run @run_id itself: the provider's answer wakes
 * the main loop. */
static void
wait_for_run (Glue   *glue,
              gint64  run_id)
{
  while (glue->last_finished == NULL || kaged_run_get_id (glue->last_finished) != run_id)
    g_main_context_iteration (NULL, TRUE);
}

/* libsoup's server warns when a client's connection is gone before it
 * looked at it; that says nothing about retries. */
static gboolean
not_a_soup_disconnect (const char     *log_domain,
                       GLogLevelFlags  log_level,
                       const char     *message,
                       gpointer        user_data)
{
  return !(g_strcmp0 (log_domain, "libsoup") == 0 &&
           strstr (message, "could not get remote address") != NULL);
}

static void
remember_run_id (KagedRetryScheduler *scheduler,
                 GParamSpec          *pspec,
                 gint64              *run_id)
{
  if (kaged_retry_scheduler_get_run_id (scheduler) != 0)
    *run_id = kaged_retry_scheduler_get_run_id (scheduler);
}

/* A provider overloaded with "retry-after: 60", then fine: Tier 1 hands over
 * at once, the scheduler counts down the provider's minute on the clock and
 * regenerates from the operator's message through the session manager. */
static void
test_engine_end_to_end (void)
{
  static const char scenario[] =
    "[{\"status\": 529, \"headers\": {\"retry-after\": \"60\"}, "
    "  \"body\": {\"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}},"
    " {\"kind\": \"openai\", \"text\": \"Hello again\"}]";
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *path = NULL;
  g_autofree char *url = NULL;
  g_autoptr(KagedClock) clock = kaged_fake_clock_new (START_WALL_MS);
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedRandom) random = kaged_random_new_with_seed (7);
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedRetryDispatcher) dispatcher = NULL;
  g_autoptr(KagedRetryStateStore) state_store = NULL;
  g_autoptr(TestNetworkMonitor) monitor = g_object_new (TEST_TYPE_NETWORK_MONITOR, NULL);
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  Glue glue = { NULL, };
  gint64 first_run;
  gint64 retry_run = 0;

  g_test_log_set_fatal_handler (not_a_soup_disconnect, NULL);

  g_assert_no_error (error);
  path = g_build_filename (dir, "kaged.db", NULL);
  store = kaged_store_open (path, &error);
  g_assert_no_error (error);

  server = kaged_fake_server_new (scenario, &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (server);

  /* Tier 1 and Tier 2 on the same fake clock. */
  resolver = kaged_resolver_new_full (kaged_http_get_default_session (), keyring, clock, random);
  profile = kaged_profile_new ("test", KAGED_PROVIDER_KIND_OPENAI, url, "test-model");
  manager = kaged_session_manager_new (store, NULL);
  kaged_session_manager_set_model (manager, resolver, profile);
  g_signal_connect (manager, "run-changed", G_CALLBACK (glue_run_changed), &glue);

  session = kaged_session_manager_create_session (manager, "Retries", &error);
  g_assert_no_error (error);

  dispatcher = kaged_retry_dispatcher_new_for_manager (manager);
  state_store = kaged_retry_state_store_new_for_store (store);
  glue.scheduler = kaged_retry_scheduler_new (kaged_session_get_id (session), dispatcher,
                                              state_store, clock, G_NETWORK_MONITOR (monitor));

  receipt = kaged_session_manager_post (manager, kaged_session_get_id (session), "Hi", &error);
  g_assert_no_error (error);
  first_run = receipt->run_id;
  wait_for_run (&glue, first_run);

  g_assert_cmpint (kaged_run_get_status (glue.last_finished), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_retry_scheduler_get_state (glue.scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_ARMED);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (glue.scheduler), ==, 60);
  g_assert_cmpint (kaged_retry_scheduler_get_anchor_id (glue.scheduler), ==, receipt->message_id);
  g_assert_cmpstr (kaged_retry_scheduler_get_wait_source (glue.scheduler), ==, "retry-after");
  g_assert_cmpint (kaged_retry_scheduler_get_retry_class (glue.scheduler), ==,
                   KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpuint (kaged_retry_scheduler_get_http_status (glue.scheduler), ==, 529);
  g_assert_cmpint (kaged_retry_scheduler_get_advised_wait_ms (glue.scheduler), ==, 60000);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (server, NULL), ==, 1);

  /* Not a moment early. */
  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (clock), 59999);
  iterate ();
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (glue.scheduler), ==, 1);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (server, NULL), ==, 1);

  g_signal_connect (glue.scheduler, "notify::run-id", G_CALLBACK (remember_run_id), &retry_run);
  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (clock), 1);
  iterate ();
  g_assert_cmpint (retry_run, >, first_run);
  wait_for_run (&glue, retry_run);

  g_assert_cmpint (kaged_run_get_status (glue.last_finished), ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_cmpint (kaged_run_get_anchor_id (glue.last_finished), ==, receipt->message_id);
  g_assert_cmpint (kaged_retry_scheduler_get_state (glue.scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_IDLE);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (glue.scheduler), ==, 0);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (server, NULL), ==, 2);

  /* The reply now current is the retried one; the failed one is kept,
   * superseded. */
  messages = kaged_store_list_messages (store, kaged_session_get_id (session), FALSE, 0,
                                        G_MAXUINT, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (messages->len, ==, 2);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (messages, 1)), ==, "Hello again");
  g_assert_cmpint (kaged_message_get_run_id (g_ptr_array_index (messages, 1)), ==, retry_run);

  kaged_session_manager_shutdown (manager);
  iterate ();
  g_clear_object (&glue.scheduler);
  g_clear_object (&glue.last_finished);
  g_clear_object (&manager);
  g_clear_object (&store);
  {
    g_autofree char *wal = g_strconcat (path, "-wal", NULL);
    g_autofree char *shm = g_strconcat (path, "-shm", NULL);

    g_remove (path);
    g_remove (wal);
    g_remove (shm);
    g_rmdir (dir);
  }
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/retry-store/store-backed", test_store_backed);
  g_test_add_func ("/retry-store/engine-end-to-end", test_engine_end_to_end);

  return g_test_run ();
}
