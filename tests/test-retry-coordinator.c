/* test-retry-coordinator.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include <glib/gstdio.h>
#include <sqlite3.h>

#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-retry-coordinator.h"
#include "kaged-retry-policy.h"
#include "kaged-test-doubles.h"

typedef struct
{
  char                *dir;
  char                *db_path;
  KagedClock          *clock;
  KagedFakeServer     *server;
  char                *url;
  GNetworkMonitor     *monitor;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  fixture->db_path = g_build_filename (fixture->dir, "kaged.db", NULL);
  fixture->clock = kaged_fake_clock_new (1764400000000);
  fixture->monitor = g_object_new (TEST_TYPE_NETWORK_MONITOR, NULL);

  /* Overloaded and told not to retry at once: Tier 1 hands over at once. */
  fixture->server = kaged_fake_server_new (
    "[{\"status\": 529, \"headers\": {\"x-should-retry\": \"false\"}, "
    "  \"body\": {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", "
    "  \"message\": \"Overloaded\"}}},"
    " {\"kind\": \"openai\", \"text\": \"Back again\"}]", &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  fixture->url = kaged_fake_server_get_url (fixture->server);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autofree char *wal = g_strconcat (fixture->db_path, "-wal", NULL);
  g_autofree char *shm = g_strconcat (fixture->db_path, "-shm", NULL);

  g_clear_object (&fixture->server);
  g_clear_object (&fixture->clock);
  g_clear_object (&fixture->monitor);
  g_clear_pointer (&fixture->url, g_free);
  g_unlink (wal);
  g_unlink (shm);
  g_unlink (fixture->db_path);
  g_rmdir (fixture->dir);
  g_clear_pointer (&fixture->db_path, g_free);
  g_clear_pointer (&fixture->dir, g_free);
}

static KagedSessionManager *
make_manager (Fixture     *fixture,
              KagedStore  *store)
{
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedRandom) random = kaged_random_new_with_seed (3);
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  KagedSessionManager *manager;

  resolver = kaged_resolver_new_full (kaged_http_get_default_session (), keyring,
                                      fixture->clock, random);
  profile = kaged_profile_new ("test", KAGED_PROVIDER_KIND_OPENAI, fixture->url, "test-model");
  manager = kaged_session_manager_new (store, fixture->clock);
  kaged_session_manager_set_model (manager, resolver, profile);

  return manager;
}

/* Waits for @scheduler to reach @state: what moves it is the provider's
 * answer or a turn of the main loop, never a length of time. */
static void
wait_state (KagedRetryScheduler      *scheduler,
            KagedRetrySchedulerState  state)
{
  while (kaged_retry_scheduler_get_state (scheduler) != state)
    g_main_context_iteration (NULL, TRUE);
}

static void
test_failure_arms_and_post_disarms (Fixture       *fixture,
                                    gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedRetryCoordinator) coordinator = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  KagedRetryScheduler *scheduler;

  g_assert_no_error (error);
  manager = make_manager (fixture, store);
  coordinator = kaged_retry_coordinator_new (manager, NULL, fixture->monitor);
  session = kaged_session_manager_create_session (manager, "Retries", &error);
  g_assert_no_error (error);

  receipt = kaged_session_manager_post (manager, kaged_session_get_id (session), "Hello", &error);
  g_assert_no_error (error);

  scheduler = kaged_retry_coordinator_get_scheduler (coordinator, kaged_session_get_id (session));
  wait_state (scheduler, KAGED_RETRY_SCHEDULER_STATE_ARMED);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (scheduler), ==, 1);
  g_assert_cmpint (kaged_retry_scheduler_get_anchor_id (scheduler), ==, receipt->message_id);
  g_assert_cmpint (kaged_retry_scheduler_get_retry_class (scheduler), ==,
                   KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (scheduler), ==, 2);

  /* A new message from the operator stands the retry down. */
  second = kaged_session_manager_post (manager, kaged_session_get_id (session), "Anyone?", &error);
  g_assert_no_error (error);
  g_assert_false (kaged_retry_scheduler_is_pending (scheduler));

  kaged_session_manager_shutdown (manager);
}

static void
test_expiry_regenerates (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedRetryCoordinator) coordinator = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedRun) latest = NULL;
  g_autoptr(GPtrArray) versions = NULL;
  KagedRetryScheduler *scheduler;

  g_assert_no_error (error);
  manager = make_manager (fixture, store);
  coordinator = kaged_retry_coordinator_new (manager, NULL, fixture->monitor);
  session = kaged_session_manager_create_session (manager, "Retries", &error);
  g_assert_no_error (error);

  receipt = kaged_session_manager_post (manager, kaged_session_get_id (session), "Hello", &error);
  g_assert_no_error (error);
  scheduler = kaged_retry_coordinator_get_scheduler (coordinator, kaged_session_get_id (session));
  wait_state (scheduler, KAGED_RETRY_SCHEDULER_STATE_ARMED);

  /* Two seconds later the reply is regenerated from the same message. */
  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock), 2000);
  wait_state (scheduler, KAGED_RETRY_SCHEDULER_STATE_IDLE);

  latest = kaged_session_manager_get_latest_run (manager, kaged_session_get_id (session), &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_anchor_id (latest), ==, receipt->message_id);
  g_assert_cmpint (kaged_run_get_status (latest), ==, KAGED_RUN_STATUS_SUCCEEDED);

  versions = kaged_session_manager_list_versions (manager, kaged_session_get_id (session),
                                                  receipt->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (versions->len, ==, 2);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (versions, 1)), ==, "Back again");
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 2);
}

static void
test_restart_resumes (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  gint64 session_id;
  gint64 anchor_id;

  {
    g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
    g_autoptr(KagedSessionManager) manager = NULL;
    g_autoptr(KagedRetryCoordinator) coordinator = NULL;
    g_autoptr(KagedSession) session = NULL;
    g_autoptr(KagedReceipt) receipt = NULL;
    KagedRetryScheduler *scheduler;

    g_assert_no_error (error);
    manager = make_manager (fixture, store);
    coordinator = kaged_retry_coordinator_new (manager, NULL, fixture->monitor);
    session = kaged_session_manager_create_session (manager, "Retries", &error);
    g_assert_no_error (error);
    session_id = kaged_session_get_id (session);

    receipt = kaged_session_manager_post (manager, session_id, "Hello", &error);
    g_assert_no_error (error);
    anchor_id = receipt->message_id;
    scheduler = kaged_retry_coordinator_get_scheduler (coordinator, session_id);
    wait_state (scheduler, KAGED_RETRY_SCHEDULER_STATE_ARMED);
  }

  /* The program starts again: the armed retry is there without a run. */
  {
    g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
    g_autoptr(KagedSessionManager) manager = NULL;
    g_autoptr(KagedRetryCoordinator) coordinator = NULL;
    KagedRetryScheduler *scheduler;

    g_assert_no_error (error);
    manager = make_manager (fixture, store);
    coordinator = kaged_retry_coordinator_new (manager, NULL, fixture->monitor);

    scheduler = kaged_retry_coordinator_lookup_scheduler (coordinator, session_id);
    g_assert_nonnull (scheduler);
    g_assert_true (kaged_retry_scheduler_is_pending (scheduler));
    g_assert_cmpint (kaged_retry_scheduler_get_anchor_id (scheduler), ==, anchor_id);

    /* Cancelled now, it stays cancelled across the next start. */
    g_assert_true (kaged_retry_scheduler_cancel (scheduler));
  }

  {
    g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
    g_autoptr(KagedSessionManager) manager = NULL;
    g_autoptr(KagedRetryCoordinator) coordinator = NULL;
    KagedRetryScheduler *scheduler;

    g_assert_no_error (error);
    manager = make_manager (fixture, store);
    coordinator = kaged_retry_coordinator_new (manager, NULL, fixture->monitor);

    scheduler = kaged_retry_coordinator_get_scheduler (coordinator, session_id);
    g_assert_false (kaged_retry_scheduler_is_pending (scheduler));
    kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock), 600000);
    while (g_main_context_iteration (NULL, FALSE))
      ;
    g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);
  }
}

/*
 * Cancelled at a random moment of the retry cycle (counting down, or with
 * the retried run under way, its provider call started or not yet), a
 * retry starts nothing more: the session's runs end where they were, the
 * newest one finished, and at most the one request already on its way
 * reaches the provider. The provider is always overloaded, so every
 * dispatch fails and arms again.
 */
static void
test_cancel_at_random_moments (Fixture       *fixture,
                               gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedRetryCoordinator) coordinator = NULL;
  g_autoptr(GRand) rand = g_rand_new_with_seed (20261129);
  guint states_seen[KAGED_RETRY_SCHEDULER_STATE_CANCELLED + 1] = { 0, };

  g_assert_no_error (error);
  g_assert_true (kaged_fake_server_set_scenario (fixture->server,
    "[{\"status\": 529, \"headers\": {\"x-should-retry\": \"false\"}, "
    "  \"body\": {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", "
    "  \"message\": \"Overloaded\"}}}]", &error));
  g_assert_no_error (error);

  manager = make_manager (fixture, store);
  coordinator = kaged_retry_coordinator_new (manager, NULL, fixture->monitor);

  for (guint trial = 0; trial < 60; trial++)
    {
      g_autoptr(KagedSession) session = NULL;
      g_autoptr(KagedReceipt) receipt = NULL;
      g_autoptr(KagedRun) before = NULL;
      g_autoptr(KagedRun) latest = NULL;
      g_autoptr(KagedRun) after = NULL;
      KagedRetryScheduler *scheduler;
      KagedRetrySchedulerState state;
      gint64 session_id;
      guint n_steps = g_rand_int_range (rand, 0, 12);
      guint requests;

      session = kaged_session_manager_create_session (manager, "Random", &error);
      g_assert_no_error (error);
      session_id = kaged_session_get_id (session);
      receipt = kaged_session_manager_post (manager, session_id, "Hello", &error);
      g_assert_no_error (error);
      scheduler = kaged_retry_coordinator_get_scheduler (coordinator, session_id);
      wait_state (scheduler, KAGED_RETRY_SCHEDULER_STATE_ARMED);

      /* Wander through the cycle: turns of the main loop, and time passing
       * by up to a countdown and a half. */
      for (guint step = 0; step < n_steps; step++)
        {
          if (g_rand_boolean (rand))
            kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock),
                                      g_rand_int_range (rand, 0, 3000));
          for (guint i = g_rand_int_range (rand, 0, 8); i > 0; i--)
            g_main_context_iteration (NULL, FALSE);
        }

      state = kaged_retry_scheduler_get_state (scheduler);
      states_seen[state]++;
      requests = kaged_fake_server_get_n_requests (fixture->server, NULL);
      before = kaged_session_manager_get_latest_run (manager, session_id, &error);
      g_assert_no_error (error);
      kaged_retry_scheduler_cancel (scheduler);
      latest = kaged_session_manager_get_latest_run (manager, session_id, &error);
      g_assert_no_error (error);

      /* A run cut short winds down; ten minutes later nothing more has
       * happened. */
      while (kaged_session_manager_is_busy (manager, session_id))
        g_main_context_iteration (NULL, TRUE);
      kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock), 600000);
      while (g_main_context_iteration (NULL, FALSE))
        ;

      g_assert_false (kaged_retry_scheduler_is_pending (scheduler));
      after = kaged_session_manager_get_latest_run (manager, session_id, &error);
      g_assert_no_error (error);
      g_assert_cmpint (kaged_run_get_id (after), ==, kaged_run_get_id (latest));
      g_assert_true (kaged_run_is_finished (after));
      g_assert_false (kaged_session_manager_is_busy (manager, session_id));
      /* A retried run under way is cancelled with the retry; otherwise the
       * newest run is the one that failed. */
      g_assert_cmpint (kaged_run_get_status (after), ==,
                       state == KAGED_RETRY_SCHEDULER_STATE_WATCHING &&
                       !kaged_run_is_finished (before) ? KAGED_RUN_STATUS_CANCELLED
                                                       : KAGED_RUN_STATUS_FAILED);
      g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), <=, requests + 1);
    }

  /* The moments covered the cycle. */
  g_assert_cmpuint (states_seen[KAGED_RETRY_SCHEDULER_STATE_ARMED], >, 0);
  g_assert_cmpuint (states_seen[KAGED_RETRY_SCHEDULER_STATE_WATCHING], >, 0);

  kaged_session_manager_shutdown (manager);
}

/* Turns the main loop until @done says so: what a test waits for is the
 * event itself, never a length of time. */
typedef gboolean (*Condition) (gpointer data);

static void
wait_for (Condition condition,
          gpointer  data)
{
  while (!condition (data))
    g_main_context_iteration (NULL, TRUE);
}

/* Lets everything already due on the main loop run. */
static void
settle (void)
{
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

typedef struct
{
  KagedSessionManager *manager;
  gint64               session_id;
  gint64               run_id;
} RunRef;

typedef struct
{
  KagedFakeServer *server;
  guint            n_requests;
} RequestCount;

static gboolean
server_has_requests (gpointer data)
{
  RequestCount *count = data;

  return kaged_fake_server_get_n_requests (count->server, NULL) >= count->n_requests;
}

static gboolean
session_is_idle (gpointer data)
{
  RunRef *ref = data;

  return !kaged_session_manager_is_busy (ref->manager, ref->session_id);
}

static KagedRunStatus
run_status (KagedSessionManager *manager,
            gint64               session_id,
            gint64               run_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedRun) run = kaged_session_manager_get_run (manager, session_id, run_id, &error);

  g_assert_no_error (error);
  return kaged_run_get_status (run);
}

#define OVERLOADED_STEP \
  "{\"status\": 529, \"headers\": {\"x-should-retry\": \"false\"}, " \
  " \"body\": {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", " \
  " \"message\": \"Overloaded\"}}}"

#define STREAMING_STEP \
  "{\"kind\": \"openai\", \"text\": \"A reply that keeps coming\", \"chunks\": 4, " \
  " \"hang_after_chunks\": 1}"

/*
 * The run of P1 fails with a retryable class while P2 waits in the queue:
 * that run is no longer the latest, so nothing arms, and P2's reply
 * streams on — even after the countdown would have run out.
 */
static void
test_queued_newer_message_not_armed (Fixture       *fixture,
                                     gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedRetryCoordinator) coordinator = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  KagedRetryScheduler *scheduler;
  RequestCount count;
  RunRef ref;

  g_assert_no_error (error);
  g_assert_true (kaged_fake_server_set_scenario (fixture->server,
                                                 "[" OVERLOADED_STEP "," STREAMING_STEP "]",
                                                 &error));
  g_assert_no_error (error);
  manager = make_manager (fixture, store);
  coordinator = kaged_retry_coordinator_new (manager, NULL, fixture->monitor);
  session = kaged_session_manager_create_session (manager, "Queued", &error);
  g_assert_no_error (error);

  first = kaged_session_manager_post (manager, kaged_session_get_id (session), "P1", &error);
  g_assert_no_error (error);
  second = kaged_session_manager_post (manager, kaged_session_get_id (session), "P2", &error);
  g_assert_no_error (error);
  g_assert_cmpint (second->status, ==, KAGED_RECEIPT_STATUS_QUEUED);

  ref.manager = manager;
  ref.session_id = kaged_session_get_id (session);
  ref.run_id = second->run_id;
  count.server = fixture->server;
  count.n_requests = 2;
  wait_for (server_has_requests, &count);
  settle ();

  g_assert_cmpint (run_status (manager, ref.session_id, first->run_id), ==,
                   KAGED_RUN_STATUS_FAILED);
  scheduler = kaged_retry_coordinator_get_scheduler (coordinator, ref.session_id);
  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_IDLE);

  /* Past the first countdown, P2's reply is still the one being written. */
  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock), 2500);
  settle ();
  g_assert_cmpint (run_status (manager, ref.session_id, second->run_id), ==,
                   KAGED_RUN_STATUS_RUNNING);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 2);

  kaged_session_manager_shutdown (manager);
}

/*
 * A regenerate that reaches the session manager directly (as the HTTP API
 * does) stands the armed retry down: the countdown does not run out into
 * a second regenerate that would cancel the operator's own run.
 */
static void
test_direct_regenerate_stands_down (Fixture       *fixture,
                                    gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedRetryCoordinator) coordinator = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedReceipt) regenerated = NULL;
  KagedRetryScheduler *scheduler;
  RequestCount count;
  RunRef ref;

  g_assert_no_error (error);
  g_assert_true (kaged_fake_server_set_scenario (fixture->server,
                                                 "[" OVERLOADED_STEP "," STREAMING_STEP "]",
                                                 &error));
  g_assert_no_error (error);
  manager = make_manager (fixture, store);
  coordinator = kaged_retry_coordinator_new (manager, NULL, fixture->monitor);
  session = kaged_session_manager_create_session (manager, "Regenerated", &error);
  g_assert_no_error (error);

  receipt = kaged_session_manager_post (manager, kaged_session_get_id (session), "Hello", &error);
  g_assert_no_error (error);
  scheduler = kaged_retry_coordinator_get_scheduler (coordinator, kaged_session_get_id (session));
  wait_state (scheduler, KAGED_RETRY_SCHEDULER_STATE_ARMED);

  regenerated = kaged_session_manager_regenerate (manager, kaged_session_get_id (session),
                                                  receipt->message_id, &error);
  g_assert_no_error (error);
  g_assert_false (kaged_retry_scheduler_is_pending (scheduler));

  ref.manager = manager;
  ref.session_id = kaged_session_get_id (session);
  ref.run_id = regenerated->run_id;
  count.server = fixture->server;
  count.n_requests = 2;
  wait_for (server_has_requests, &count);

  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock), 2500);
  settle ();
  g_assert_false (kaged_retry_scheduler_is_pending (scheduler));
  g_assert_cmpint (run_status (manager, ref.session_id, regenerated->run_id), ==,
                   KAGED_RUN_STATUS_RUNNING);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 2);

  kaged_session_manager_shutdown (manager);
}

/* Editing a message the operator wrote stands the armed retry down too. */
static void
test_edit_stands_down (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedRetryCoordinator) coordinator = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedReceipt) edited = NULL;
  KagedRetryScheduler *scheduler;

  g_assert_no_error (error);
  manager = make_manager (fixture, store);
  coordinator = kaged_retry_coordinator_new (manager, NULL, fixture->monitor);
  session = kaged_session_manager_create_session (manager, "Edited", &error);
  g_assert_no_error (error);

  receipt = kaged_session_manager_post (manager, kaged_session_get_id (session), "Helo", &error);
  g_assert_no_error (error);
  scheduler = kaged_retry_coordinator_get_scheduler (coordinator, kaged_session_get_id (session));
  wait_state (scheduler, KAGED_RETRY_SCHEDULER_STATE_ARMED);

  edited = kaged_session_manager_edit (manager, kaged_session_get_id (session),
                                       receipt->message_id, "Hello", &error);
  g_assert_no_error (error);
  g_assert_false (kaged_retry_scheduler_is_pending (scheduler));

  kaged_session_manager_shutdown (manager);
}

/*
 * The retried run could only be queued (the engine is shutting down) and
 * is cancelled before it started: the retry has resolved, so the
 * scheduler does not stay watching a run that will never run.
 */
static void
test_queued_retry_cancelled (Fixture       *fixture,
                             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedRetryCoordinator) coordinator = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  KagedRetryScheduler *scheduler;
  gint64 retry_run_id;

  g_assert_no_error (error);
  manager = make_manager (fixture, store);
  coordinator = kaged_retry_coordinator_new (manager, NULL, fixture->monitor);
  session = kaged_session_manager_create_session (manager, "Queued retry", &error);
  g_assert_no_error (error);

  receipt = kaged_session_manager_post (manager, kaged_session_get_id (session), "Hello", &error);
  g_assert_no_error (error);
  scheduler = kaged_retry_coordinator_get_scheduler (coordinator, kaged_session_get_id (session));
  wait_state (scheduler, KAGED_RETRY_SCHEDULER_STATE_ARMED);

  kaged_session_manager_shutdown (manager);
  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock), 2000);
  wait_state (scheduler, KAGED_RETRY_SCHEDULER_STATE_WATCHING);
  retry_run_id = kaged_retry_scheduler_get_run_id (scheduler);
  g_assert_cmpint (run_status (manager, kaged_session_get_id (session), retry_run_id), ==,
                   KAGED_RUN_STATUS_QUEUED);

  g_assert_true (kaged_session_manager_cancel (manager, kaged_session_get_id (session),
                                               retry_run_id, &error));
  g_assert_no_error (error);
  settle ();

  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_IDLE);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);
}

/*
 * The end of a failed run could not be written to the database: there is
 * no persisted classification to arm from, so nothing arms.
 */
static void
test_unpersisted_failure_not_armed (Fixture       *fixture,
                                    gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedRetryCoordinator) coordinator = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  KagedRetryScheduler *scheduler;
  sqlite3 *db = NULL;
  RunRef ref;

  g_assert_no_error (error);
  manager = make_manager (fixture, store);
  coordinator = kaged_retry_coordinator_new (manager, NULL, fixture->monitor);
  session = kaged_session_manager_create_session (manager, "Disk full", &error);
  g_assert_no_error (error);

  /* The database refuses to record any run as failed. */
  g_assert_cmpint (sqlite3_open (fixture->db_path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db,
                                 "CREATE TRIGGER refuse_failed BEFORE UPDATE ON runs "
                                 "WHEN NEW.status = 'failed' "
                                 "BEGIN SELECT RAISE (ABORT, 'disk full'); END;",
                                 NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);

  g_test_expect_message ("kaged-engine", G_LOG_LEVEL_WARNING, "*record the end of a run*");
  receipt = kaged_session_manager_post (manager, kaged_session_get_id (session), "Hello", &error);
  g_assert_no_error (error);

  ref.manager = manager;
  ref.session_id = kaged_session_get_id (session);
  ref.run_id = receipt->run_id;
  wait_for (session_is_idle, &ref);
  settle ();
  g_test_assert_expected_messages ();

  scheduler = kaged_retry_coordinator_get_scheduler (coordinator, ref.session_id);
  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_IDLE);
  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock), 2000);
  settle ();
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);

  kaged_session_manager_shutdown (manager);
}

/*
 * The engine fails the retried run while it starts it, before regenerate
 * has returned (the database refuses to mark it running): the scheduler
 * hears of the end from the main loop, once it watches that run, and
 * settles instead of watching a run that is over.
 */
static void
test_retry_failing_at_start (Fixture       *fixture,
                             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedRetryCoordinator) coordinator = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedRun) latest = NULL;
  KagedRetryScheduler *scheduler;
  sqlite3 *db = NULL;

  g_assert_no_error (error);
  manager = make_manager (fixture, store);
  coordinator = kaged_retry_coordinator_new (manager, NULL, fixture->monitor);
  session = kaged_session_manager_create_session (manager, "Refused", &error);
  g_assert_no_error (error);

  receipt = kaged_session_manager_post (manager, kaged_session_get_id (session), "Hello", &error);
  g_assert_no_error (error);
  scheduler = kaged_retry_coordinator_get_scheduler (coordinator, kaged_session_get_id (session));
  wait_state (scheduler, KAGED_RETRY_SCHEDULER_STATE_ARMED);

  g_assert_cmpint (sqlite3_open (fixture->db_path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db,
                                 "CREATE TRIGGER refuse_running BEFORE UPDATE ON runs "
                                 "WHEN NEW.status = 'running' "
                                 "BEGIN SELECT RAISE (ABORT, 'disk full'); END;",
                                 NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);

  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock), 2000);
  wait_state (scheduler, KAGED_RETRY_SCHEDULER_STATE_IDLE);

  latest = kaged_session_manager_get_latest_run (manager, kaged_session_get_id (session), &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (latest), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_anchor_id (latest), ==, receipt->message_id);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);

  kaged_session_manager_shutdown (manager);
}

static gint64
append_operator (KagedStore *store,
                 gint64      session_id,
                 const char *content)
{
  g_autoptr(KagedMessage) message = kaged_message_new ();
  g_autoptr(GError) error = NULL;

  kaged_message_set_session_id (message, session_id);
  kaged_message_set_role (message, KAGED_MESSAGE_ROLE_OPERATOR);
  kaged_message_set_content (message, content);
  kaged_message_set_created_at (message, 1764400000000);
  g_assert_true (kaged_store_append_message (store, message, &error));
  g_assert_no_error (error);

  return kaged_message_get_id (message);
}

static gint64
create_run (KagedStore      *store,
            gint64           session_id,
            gint64           anchor_id,
            KagedRunStatus   status,
            KagedRetryClass  retry_class,
            gboolean         retryable,
            gint64           retry_after_until)
{
  g_autoptr(KagedRun) run = kaged_run_new ();
  g_autoptr(GError) error = NULL;

  kaged_run_set_session_id (run, session_id);
  kaged_run_set_anchor_id (run, anchor_id);
  kaged_run_set_status (run, status);
  kaged_run_set_retry_class (run, retry_class);
  kaged_run_set_retryable (run, retryable);
  kaged_run_set_retry_after_until (run, retry_after_until);
  kaged_run_set_created_at (run, 1764400000000);
  if (status != KAGED_RUN_STATUS_QUEUED && status != KAGED_RUN_STATUS_RUNNING)
    kaged_run_set_finished_at (run, 1764400001000);
  g_assert_true (kaged_store_create_run (store, run, &error));
  g_assert_no_error (error);

  return kaged_run_get_id (run);
}

static KagedRetryVerdict
check (KagedStore *store,
       gint64      session_id)
{
  g_autoptr(GError) error = NULL;
  KagedRetryVerdict verdict = kaged_retry_policy_check (store, session_id, NULL, &error);

  g_assert_no_error (error);
  return verdict;
}

/*
 * The one rule Tier 2 arms by (DESIGN.md §6), read from the database: the
 * session's latest run failed retryable, nothing is queued or running, and
 * no operator message stands after its anchor.
 */
static void
test_policy (Fixture       *fixture,
             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = kaged_store_open (fixture->db_path, &error);
  g_autoptr(KagedSession) session = NULL;
  gint64 sid;
  gint64 q1;
  gint64 q2;

  g_assert_no_error (error);
  session = kaged_store_create_session (store, "Policy", &error);
  g_assert_no_error (error);
  sid = kaged_session_get_id (session);

  /* No run yet: nothing to decide. */
  g_assert_cmpint (check (store, sid), ==, KAGED_RETRY_VERDICT_BUSY);

  q1 = append_operator (store, sid, "Q1");
  create_run (store, sid, q1, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_OVERLOADED, TRUE, 0);
  g_assert_cmpint (check (store, sid), ==, KAGED_RETRY_VERDICT_ARMABLE);

  /* An operator message after the anchor. */
  q2 = append_operator (store, sid, "Q2");
  g_assert_cmpint (check (store, sid), ==, KAGED_RETRY_VERDICT_SETTLED);

  /* Its run queued, then running: busy. */
  create_run (store, sid, q2, KAGED_RUN_STATUS_QUEUED, KAGED_RETRY_CLASS_NONE, FALSE, 0);
  g_assert_cmpint (check (store, sid), ==, KAGED_RETRY_VERDICT_BUSY);

  g_clear_object (&session);
  session = kaged_store_create_session (store, "Classes", &error);
  g_assert_no_error (error);
  sid = kaged_session_get_id (session);
  q1 = append_operator (store, sid, "Q1");

  /* Not retryable, a class that is never retried, or quota without a time. */
  create_run (store, sid, q1, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_OVERLOADED, FALSE, 0);
  g_assert_cmpint (check (store, sid), ==, KAGED_RETRY_VERDICT_SETTLED);
  create_run (store, sid, q1, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_AUTH_FAILED, TRUE, 0);
  g_assert_cmpint (check (store, sid), ==, KAGED_RETRY_VERDICT_SETTLED);
  create_run (store, sid, q1, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_QUOTA_SCHEDULED, TRUE, 0);
  g_assert_cmpint (check (store, sid), ==, KAGED_RETRY_VERDICT_SETTLED);
  create_run (store, sid, q1, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_QUOTA_SCHEDULED, TRUE,
              1764403000000);
  g_assert_cmpint (check (store, sid), ==, KAGED_RETRY_VERDICT_ARMABLE);

  /* Cancelled or succeeded: settled. */
  create_run (store, sid, q1, KAGED_RUN_STATUS_CANCELLED, KAGED_RETRY_CLASS_NONE, FALSE, 0);
  g_assert_cmpint (check (store, sid), ==, KAGED_RETRY_VERDICT_SETTLED);
  create_run (store, sid, q1, KAGED_RUN_STATUS_SUCCEEDED, KAGED_RETRY_CLASS_NONE, FALSE, 0);
  g_assert_cmpint (check (store, sid), ==, KAGED_RETRY_VERDICT_SETTLED);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add ("/retry-coordinator/failure-arms-post-disarms", Fixture, NULL,
              fixture_set_up, test_failure_arms_and_post_disarms, fixture_tear_down);
  g_test_add ("/retry-coordinator/expiry-regenerates", Fixture, NULL,
              fixture_set_up, test_expiry_regenerates, fixture_tear_down);
  g_test_add ("/retry-coordinator/restart-resumes", Fixture, NULL,
              fixture_set_up, test_restart_resumes, fixture_tear_down);
  g_test_add ("/retry-coordinator/cancel-at-random-moments", Fixture, NULL,
              fixture_set_up, test_cancel_at_random_moments, fixture_tear_down);

  g_test_add ("/retry-coordinator/queued-newer-message-not-armed", Fixture, NULL,
              fixture_set_up, test_queued_newer_message_not_armed, fixture_tear_down);
  g_test_add ("/retry-coordinator/direct-regenerate-stands-down", Fixture, NULL,
              fixture_set_up, test_direct_regenerate_stands_down, fixture_tear_down);
  g_test_add ("/retry-coordinator/edit-stands-down", Fixture, NULL,
              fixture_set_up, test_edit_stands_down, fixture_tear_down);
  g_test_add ("/retry-coordinator/queued-retry-cancelled", Fixture, NULL,
              fixture_set_up, test_queued_retry_cancelled, fixture_tear_down);
  g_test_add ("/retry-coordinator/unpersisted-failure-not-armed", Fixture, NULL,
              fixture_set_up, test_unpersisted_failure_not_armed, fixture_tear_down);

  g_test_add ("/retry-coordinator/policy", Fixture, NULL,
              fixture_set_up, test_policy, fixture_tear_down);
  g_test_add ("/retry-coordinator/retry-failing-at-start", Fixture, NULL,
              fixture_set_up, test_retry_failing_at_start, fixture_tear_down);

  return g_test_run ();
}
