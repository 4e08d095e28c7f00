/* test-retry-scheduler.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include <gio/gio.h>

#include "kaged-clock.h"
#include "kaged-enum-types.h"
#include "kaged-random.h"
#include "kaged-retry-class.h"
#include "kaged-retry-scheduler-private.h"
#include "kaged-run.h"
#include "kaged-session.h"
#include "kaged-test-doubles.h"

#define SESSION_ID 7
#define ANCHOR_ID  41

/* 2026-03-10 13:42:00 UTC */
#define START_WALL_MS ((gint64)1773150120000)

/* --- a state store in memory ----------------------------------------------- */

#define TEST_TYPE_STATE_STORE (test_state_store_get_type ())
G_DECLARE_FINAL_TYPE (TestStateStore, test_state_store, TEST, STATE_STORE, GObject)

struct _TestStateStore
{
  GObject     parent_instance;
  GHashTable *snapshots;
  guint       n_saves;
};

static void test_state_store_iface_init (KagedRetryStateStoreInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (TestStateStore, test_state_store, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (KAGED_TYPE_RETRY_STATE_STORE,
                                                      test_state_store_iface_init))

static KagedRetrySnapshot *
test_state_store_load (KagedRetryStateStore  *store,
                       gint64                 session_id,
                       GError               **error)
{
  TestStateStore *self = TEST_STATE_STORE (store);
  KagedRetrySnapshot *snapshot = g_hash_table_lookup (self->snapshots, &session_id);

  return snapshot != NULL ? kaged_retry_snapshot_copy (snapshot) : NULL;
}

static gboolean
test_state_store_save (KagedRetryStateStore      *store,
                       gint64                     session_id,
                       const KagedRetrySnapshot  *snapshot,
                       GError                   **error)
{
  TestStateStore *self = TEST_STATE_STORE (store);

  g_hash_table_insert (self->snapshots, g_memdup2 (&session_id, sizeof session_id),
                       kaged_retry_snapshot_copy (snapshot));
  self->n_saves++;

  return TRUE;
}

static void
test_state_store_iface_init (KagedRetryStateStoreInterface *iface)
{
  iface->load = test_state_store_load;
  iface->save = test_state_store_save;
}

static void
test_state_store_finalize (GObject *object)
{
  g_clear_pointer (&TEST_STATE_STORE (object)->snapshots, g_hash_table_unref);

  G_OBJECT_CLASS (test_state_store_parent_class)->finalize (object);
}

static void
test_state_store_class_init (TestStateStoreClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = test_state_store_finalize;
}

static void
test_state_store_init (TestStateStore *self)
{
  self->snapshots = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free,
                                           (GDestroyNotify)kaged_retry_snapshot_free);
}

/* --- fixture ----------------------------------------------------------------- */

typedef struct
{
  KagedClock          *clock;
  TestDispatcher      *dispatcher;
  TestStateStore      *store;
  TestNetworkMonitor  *monitor;
  KagedRetryScheduler *scheduler;
} Fixture;

static void
iterate (void)
{
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

static void
advance (Fixture *f,
         gint64   ms)
{
  test_clock_advance (f->clock, ms);
}

static KagedRetryScheduler *
new_scheduler (Fixture *f)
{
  return kaged_retry_scheduler_new (SESSION_ID,
                                    KAGED_RETRY_DISPATCHER (f->dispatcher),
                                    KAGED_RETRY_STATE_STORE (f->store),
                                    f->clock,
                                    G_NETWORK_MONITOR (f->monitor));
}

static void
fixture_set_up (Fixture       *f,
                gconstpointer  data)
{
  f->clock = kaged_fake_clock_new (START_WALL_MS);
  f->dispatcher = g_object_new (TEST_TYPE_DISPATCHER, NULL);
  f->store = g_object_new (TEST_TYPE_STATE_STORE, NULL);
  f->monitor = g_object_new (TEST_TYPE_NETWORK_MONITOR, NULL);
  f->scheduler = new_scheduler (f);
}

static void
fixture_tear_down (Fixture       *f,
                   gconstpointer  data)
{
  g_assert_finalize_object (f->scheduler);
  iterate ();
  g_assert_finalize_object (f->dispatcher);
  g_assert_finalize_object (f->store);
  g_assert_finalize_object (f->monitor);
  g_assert_finalize_object (f->clock);
}

typedef struct
{
  gint64           id;
  KagedRunStatus   status;
  KagedRetryClass  retry_class;
  gboolean         retryable;
  gint64           retry_after_until;
  guint            http_status;
  const char      *wait_source;
  gint64           wait_ms;
} RunSpec;

static KagedRun *
make_run (const RunSpec *spec)
{
  KagedRun *run = kaged_run_new ();

  kaged_run_set_id (run, spec->id);
  kaged_run_set_session_id (run, SESSION_ID);
  kaged_run_set_anchor_id (run, ANCHOR_ID);
  kaged_run_set_status (run, spec->status);
  kaged_run_set_retry_class (run, spec->retry_class);
  kaged_run_set_retryable (run, spec->retryable);
  kaged_run_set_retry_after_until (run, spec->retry_after_until);
  kaged_run_set_http_status (run, spec->http_status);

  if (spec->wait_source != NULL)
    {
      g_autoptr(KagedAttempt) attempt = kaged_attempt_new ();

      attempt->http_status = spec->http_status;
      attempt->retry_class = spec->retry_class;
      attempt->wait_ms = spec->wait_ms;
      attempt->wait_source = g_strdup (spec->wait_source);
      kaged_run_add_attempt (run, attempt);
    }

  return run;
}

/* Tells the scheduler that run @id failed with a retryable @retry_class. */
static void
fail_run (Fixture         *f,
          gint64           id,
          KagedRetryClass  retry_class)
{
  RunSpec spec = { id, KAGED_RUN_STATUS_FAILED, retry_class, TRUE, 0, 0, NULL, 0 };
  g_autoptr(KagedRun) run = make_run (&spec);

  kaged_retry_scheduler_run_finished (f->scheduler, run);
}

static void
finish_run (Fixture        *f,
            gint64          id,
            KagedRunStatus  status)
{
  RunSpec spec = { id, status, KAGED_RETRY_CLASS_NONE, FALSE, 0, 0, NULL, 0 };
  g_autoptr(KagedRun) run = make_run (&spec);

  kaged_retry_scheduler_run_finished (f->scheduler, run);
}

static gint64
wall_ms (Fixture *f)
{
  return kaged_clock_get_wall_ms (f->clock);
}

#define assert_state(f, s) \
  g_assert_cmpstr (kaged_enum_to_nick (KAGED_TYPE_RETRY_SCHEDULER_STATE, \
                                       kaged_retry_scheduler_get_state ((f)->scheduler)), ==, \
                   kaged_enum_to_nick (KAGED_TYPE_RETRY_SCHEDULER_STATE, (s)))

/* --- tests ------------------------------------------------------------------ */

static void
test_delay_table (void)
{
  static const gint64 expected[] = { 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300 };

  for (guint k = 1; k <= G_N_ELEMENTS (expected); k++)
    g_assert_cmpint (kaged_retry_scheduler_delay_for_attempt (k), ==, expected[k - 1] * 1000);

  g_assert_cmpint (kaged_retry_scheduler_delay_for_attempt (64), ==, 300000);
  g_assert_cmpint (kaged_retry_scheduler_delay_for_attempt (G_MAXUINT), ==, 300000);
}

static void
test_consecutive_delays (Fixture       *f,
                         gconstpointer  data)
{
  static const gint64 expected[] = { 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300 };
  gint64 run_id = 1;

  fail_run (f, run_id, KAGED_RETRY_CLASS_OVERLOADED);

  for (guint i = 0; i < G_N_ELEMENTS (expected); i++)
    {
      gint64 delay_ms = expected[i] * 1000;

      assert_state (f, KAGED_RETRY_SCHEDULER_STATE_ARMED);
      g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, i + 1);
      g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, expected[i]);
      g_assert_cmpint (kaged_retry_scheduler_get_next_eligible_time (f->scheduler), ==,
                       wall_ms (f) + delay_ms);

      /* Not a millisecond early… */
      advance (f, delay_ms - 1);
      g_assert_cmpuint (f->dispatcher->n_regenerate, ==, i);
      assert_state (f, KAGED_RETRY_SCHEDULER_STATE_ARMED);
      g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 1);

      /* …and on time, from the anchor operator message. */
      advance (f, 1);
      g_assert_cmpuint (f->dispatcher->n_regenerate, ==, i + 1);
      g_assert_cmpint (f->dispatcher->last_anchor_id, ==, ANCHOR_ID);
      g_assert_cmpint (f->dispatcher->last_session_id, ==, SESSION_ID);
      g_assert_true (f->dispatcher->cancellable_seen);
      assert_state (f, KAGED_RETRY_SCHEDULER_STATE_WATCHING);

      run_id = kaged_retry_scheduler_get_run_id (f->scheduler);
      g_assert_cmpint (run_id, ==, f->dispatcher->next_run_id - 1);
      fail_run (f, run_id, KAGED_RETRY_CLASS_OVERLOADED);
    }

  /* Nothing more happens without the clock. */
  iterate ();
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, G_N_ELEMENTS (expected));
}

static void
test_arming_matrix (Fixture       *f,
                    gconstpointer  data)
{
  static const struct {
    KagedRetryClass retry_class;
    gboolean        arms;
  } classes[] = {
    { KAGED_RETRY_CLASS_NONE, FALSE },
    { KAGED_RETRY_CLASS_RATE_LIMITED, TRUE },
    { KAGED_RETRY_CLASS_OVERLOADED, TRUE },
    { KAGED_RETRY_CLASS_SERVER_ERROR, TRUE },
    { KAGED_RETRY_CLASS_NETWORK, TRUE },
    { KAGED_RETRY_CLASS_TIMEOUT, TRUE },
    { KAGED_RETRY_CLASS_QUOTA_SCHEDULED, TRUE }, /* with a retry_after_until only */
    { KAGED_RETRY_CLASS_QUOTA_EXHAUSTED, FALSE },
    { KAGED_RETRY_CLASS_CONTEXT_OVERFLOW, FALSE },
    { KAGED_RETRY_CLASS_AUTH_FAILED, FALSE },
    { KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED, FALSE },
    { KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED, FALSE },
    { KAGED_RETRY_CLASS_INVALID_REQUEST, FALSE },
    { KAGED_RETRY_CLASS_PROTOCOL_ERROR, FALSE },
    { KAGED_RETRY_CLASS_INTERRUPTED, FALSE },
  };
  static const KagedRunStatus statuses[] = {
    KAGED_RUN_STATUS_FAILED, KAGED_RUN_STATUS_CANCELLED, KAGED_RUN_STATUS_SUCCEEDED,
  };
  gint64 run_id = 1;
  guint n_armed = 0;

  G_STATIC_ASSERT (G_N_ELEMENTS (classes) == KAGED_RETRY_CLASS_INTERRUPTED + 1);

  for (guint c = 0; c < G_N_ELEMENTS (classes); c++)
    for (guint s = 0; s < G_N_ELEMENTS (statuses); s++)
      for (guint retryable = 0; retryable <= 1; retryable++)
        for (guint with_until = 0; with_until <= 1; with_until++)
          {
            RunSpec spec = {
              run_id++, statuses[s], classes[c].retry_class, retryable,
              with_until ? wall_ms (f) + 10000 : 0, 0, NULL, 0,
            };
            g_autoptr(KagedRun) run = make_run (&spec);
            gboolean expected = classes[c].arms && retryable &&
                                statuses[s] == KAGED_RUN_STATUS_FAILED &&
                                (with_until ||
                                 classes[c].retry_class != KAGED_RETRY_CLASS_QUOTA_SCHEDULED);

            kaged_retry_scheduler_operator_posted (f->scheduler);
            assert_state (f, KAGED_RETRY_SCHEDULER_STATE_IDLE);

            kaged_retry_scheduler_run_finished (f->scheduler, run);

            if (g_test_verbose ())
              g_test_message ("%s %s retryable=%u until=%u → %s",
                              kaged_retry_class_to_string (classes[c].retry_class),
                              kaged_enum_to_nick (KAGED_TYPE_RUN_STATUS, statuses[s]),
                              retryable, with_until,
                              kaged_enum_to_nick (KAGED_TYPE_RETRY_SCHEDULER_STATE,
                                                  kaged_retry_scheduler_get_state (f->scheduler)));

            g_assert_cmpint (kaged_retry_scheduler_is_pending (f->scheduler), ==, expected);
            if (expected)
              {
                assert_state (f, KAGED_RETRY_SCHEDULER_STATE_ARMED);
                g_assert_cmpint (kaged_retry_scheduler_get_retry_class (f->scheduler), ==,
                                 classes[c].retry_class);
                n_armed++;
              }
            else
              {
                assert_state (f, KAGED_RETRY_SCHEDULER_STATE_IDLE);
                g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 0);
              }
          }

  /* Five classes with or without until, quota_scheduled only with. */
  g_assert_cmpuint (n_armed, ==, 5 * 2 + 1);

  /* A run that has not finished arms nothing. */
  {
    RunSpec spec = { run_id++, KAGED_RUN_STATUS_RUNNING, KAGED_RETRY_CLASS_OVERLOADED, TRUE, 0, 0, NULL, 0 };
    g_autoptr(KagedRun) run = make_run (&spec);

    kaged_retry_scheduler_operator_posted (f->scheduler);
    kaged_retry_scheduler_run_finished (f->scheduler, run);
    assert_state (f, KAGED_RETRY_SCHEDULER_STATE_IDLE);
  }

  advance (f, 600000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);
}

static void
count_notify (GObject    *object,
              GParamSpec *pspec,
              guint      *count)
{
  (*count)++;
}

typedef struct
{
  guint               n_changed;
  KagedRetrySnapshot *last;
} Changes;

static void
changed_cb (KagedRetryScheduler *scheduler,
            Changes             *changes)
{
  changes->n_changed++;
  g_clear_pointer (&changes->last, kaged_retry_snapshot_free);
  changes->last = kaged_retry_scheduler_dup_snapshot (scheduler);
}

/* ::changed comes once per transition, with the whole state in place when
 * it does — what the HTTP API sends as `retry.changed` — and not for the
 * countdown's ticks. */
static void
test_changed_signal (Fixture       *f,
                     gconstpointer  data)
{
  Changes changes = { 0, NULL };
  gint64 retry_run_id;

  g_signal_connect (f->scheduler, "changed", G_CALLBACK (changed_cb), &changes);

  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpuint (changes.n_changed, ==, 1);
  g_assert_cmpint (changes.last->state, ==, KAGED_RETRY_SCHEDULER_STATE_ARMED);
  g_assert_cmpuint (changes.last->attempt, ==, 1);
  g_assert_cmpint (changes.last->next_eligible_time, ==, START_WALL_MS + 2000);
  g_assert_cmpint (changes.last->anchor_id, ==, ANCHOR_ID);
  g_assert_cmpint (changes.last->retry_class, ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpstr (changes.last->wait_source, ==, "backoff");

  /* A tick of the countdown is not a transition. */
  advance (f, 1000);
  g_assert_cmpuint (changes.n_changed, ==, 1);

  /* Dispatching, then watching the retried run. */
  advance (f, 1000);
  g_assert_cmpuint (changes.n_changed, ==, 3);
  retry_run_id = kaged_retry_scheduler_get_run_id (f->scheduler);
  g_assert_cmpint (changes.last->state, ==, KAGED_RETRY_SCHEDULER_STATE_WATCHING);
  g_assert_cmpint (changes.last->retry_run_id, ==, retry_run_id);

  g_assert_true (kaged_retry_scheduler_cancel (f->scheduler));
  g_assert_cmpuint (changes.n_changed, ==, 4);
  g_assert_cmpint (changes.last->state, ==, KAGED_RETRY_SCHEDULER_STATE_CANCELLED);

  g_signal_handlers_disconnect_by_func (f->scheduler, changed_cb, &changes);
  g_clear_pointer (&changes.last, kaged_retry_snapshot_free);
}

static void
test_retry_after_countdown (Fixture       *f,
                            gconstpointer  data)
{
  RunSpec spec = {
    5, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_RATE_LIMITED, TRUE,
    START_WALL_MS + 40000, 0, "retry-after", 40000,
  };
  g_autoptr(KagedRun) run = make_run (&spec);
  guint n_remaining = 0;

  g_signal_connect (f->scheduler, "notify::remaining-seconds",
                    G_CALLBACK (count_notify), &n_remaining);

  kaged_retry_scheduler_run_finished (f->scheduler, run);

  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_ARMED);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 1);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 40);
  g_assert_cmpint (kaged_retry_scheduler_get_next_eligible_time (f->scheduler), ==,
                   START_WALL_MS + 40000);
  g_assert_cmpstr (kaged_retry_scheduler_get_wait_source (f->scheduler), ==, "retry-after");
  g_assert_cmpint (kaged_retry_scheduler_get_advised_wait_ms (f->scheduler), ==, 40000);

  /* The next wake-up is the next whole second, not sooner. */
  g_assert_cmpuint (kaged_fake_clock_next_deadline (KAGED_FAKE_CLOCK (f->clock)), ==, 1000);

  n_remaining = 0;
  advance (f, 1000);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 39);
  g_assert_cmpuint (kaged_fake_clock_next_deadline (KAGED_FAKE_CLOCK (f->clock)), ==, 1000);

  /* Once a second, no more often. */
  advance (f, 9000);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 30);
  g_assert_cmpuint (n_remaining, ==, 10);

  advance (f, 29999);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);
  advance (f, 1);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_WATCHING);
}

/* Exactly 300 s away is still a countdown; a millisecond more is the
 * scheduled state, its time shown and its countdown paused. */
static void
test_boundary_300s (Fixture       *f,
                    gconstpointer  data)
{
  RunSpec at = {
    5, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_RATE_LIMITED, TRUE,
    START_WALL_MS + 300000, 429, "retry-after", 300000,
  };
  RunSpec beyond = {
    6, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_RATE_LIMITED, TRUE,
    START_WALL_MS + 300001, 429, "retry-after", 300001,
  };
  g_autoptr(KagedRun) run_at = make_run (&at);
  g_autoptr(KagedRun) run_beyond = make_run (&beyond);

  kaged_retry_scheduler_run_finished (f->scheduler, run_at);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_ARMED);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 300);
  g_assert_cmpint (kaged_retry_scheduler_get_next_eligible_time (f->scheduler), ==,
                   START_WALL_MS + 300000);

  kaged_retry_scheduler_run_finished (f->scheduler, run_beyond);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_SCHEDULED);
  g_assert_cmpint (kaged_retry_scheduler_get_next_eligible_time (f->scheduler), ==,
                   START_WALL_MS + 300001);
  advance (f, 1000);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_SCHEDULED);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);
  advance (f, 299001);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);

  /* The backoff alone reaches its 300 s cap at attempt 9 and counts down. */
  g_assert_cmpint (kaged_retry_scheduler_delay_for_attempt (9), ==, 300000);
  fail_run (f, kaged_retry_scheduler_get_run_id (f->scheduler), KAGED_RETRY_CLASS_OVERLOADED);
  for (guint k = 3; k <= 9; k++)
    {
      advance (f, kaged_retry_scheduler_delay_for_attempt (k - 1));
      fail_run (f, kaged_retry_scheduler_get_run_id (f->scheduler), KAGED_RETRY_CLASS_OVERLOADED);
    }
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 9);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_ARMED);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 300);
}

/* A wait that is not whole seconds: the display changes when the whole
 * seconds left change. */
static void
test_countdown_fraction (Fixture       *f,
                         gconstpointer  data)
{
  RunSpec spec = {
    5, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_RATE_LIMITED, TRUE,
    START_WALL_MS + 40500, 429, "retry-after-ms", 40500,
  };
  g_autoptr(KagedRun) run = make_run (&spec);

  kaged_retry_scheduler_run_finished (f->scheduler, run);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 41);
  g_assert_cmpuint (kaged_fake_clock_next_deadline (KAGED_FAKE_CLOCK (f->clock)), ==, 500);

  advance (f, 499);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 41);
  advance (f, 1);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 40);
  g_assert_cmpuint (kaged_fake_clock_next_deadline (KAGED_FAKE_CLOCK (f->clock)), ==, 1000);

  advance (f, 39000);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 1);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);
  advance (f, 1000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
}

/* Why a retry waits, as data: the class, the HTTP status, how long the
 * provider asked to wait and where the wait came from. */
static void
test_wait_data (Fixture       *f,
                gconstpointer  data)
{
  static const struct {
    RunSpec     spec;
    gint64      advised_wait_ms;
    const char *wait_source;
  } cases[] = {
    { { 1, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_OVERLOADED, TRUE, 0, 529, NULL, 0 },
      0, "backoff" },
    { { 2, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_SERVER_ERROR, TRUE, 0, 502, NULL, 0 },
      0, "backoff" },
    { { 3, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_RATE_LIMITED, TRUE,
        START_WALL_MS + 90000, 429, "retry-after-ms", 90000 },
      90000, "retry-after-ms" },
    { { 4, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_NETWORK, TRUE, 0, 0, NULL, 0 },
      0, "backoff" },
    /* A provider wait shorter than the backoff: the backoff decides. */
    { { 5, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_RATE_LIMITED, TRUE,
        START_WALL_MS + 1000, 429, "retry-after", 1000 },
      1000, "backoff" },
    { { 6, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_QUOTA_SCHEDULED, TRUE,
        START_WALL_MS + 2 * 3600 * 1000, 429, NULL, 0 },
      2 * 3600 * 1000, "provider-reset" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(KagedRun) run = make_run (&cases[i].spec);

      kaged_retry_scheduler_operator_posted (f->scheduler);
      kaged_retry_scheduler_run_finished (f->scheduler, run);

      g_assert_true (kaged_retry_scheduler_is_pending (f->scheduler));
      g_assert_cmpint (kaged_retry_scheduler_get_retry_class (f->scheduler), ==,
                       cases[i].spec.retry_class);
      g_assert_cmpint (kaged_retry_scheduler_get_advised_wait_ms (f->scheduler), ==,
                       cases[i].advised_wait_ms);
      g_assert_cmpstr (kaged_retry_scheduler_get_wait_source (f->scheduler), ==,
                       cases[i].wait_source);
      g_assert_cmpuint (kaged_retry_scheduler_get_http_status (f->scheduler), ==,
                        cases[i].spec.http_status);
    }
}

static void
test_scheduled (Fixture       *f,
                gconstpointer  data)
{
  RunSpec spec = {
    9, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_QUOTA_SCHEDULED, TRUE,
    START_WALL_MS + 50 * 60000, 429, NULL, 0,
  };
  g_autoptr(KagedRun) run = make_run (&spec);
  guint n_remaining = 0;

  kaged_retry_scheduler_run_finished (f->scheduler, run);

  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_SCHEDULED);
  g_assert_cmpint (kaged_retry_scheduler_get_next_eligible_time (f->scheduler), ==,
                   START_WALL_MS + 50 * 60000);
  g_assert_cmpstr (kaged_retry_scheduler_get_wait_source (f->scheduler), ==, "provider-reset");
  g_assert_true (kaged_retry_scheduler_is_pending (f->scheduler));

  /* The countdown is paused: nothing ticks. */
  g_signal_connect (f->scheduler, "notify::remaining-seconds",
                    G_CALLBACK (count_notify), &n_remaining);
  advance (f, 49 * 60000);
  g_assert_cmpuint (n_remaining, ==, 0);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_SCHEDULED);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);

  advance (f, 60000 - 1);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);
  advance (f, 1);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
  g_assert_cmpint (f->dispatcher->last_anchor_id, ==, ANCHOR_ID);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_WATCHING);
}

static void
test_scheduled_wall_clock (Fixture       *f,
                           gconstpointer  data)
{
  RunSpec spec = {
    9, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_RATE_LIMITED, TRUE,
    START_WALL_MS + 20 * 60000, 429, "retry-after", 20 * 60000,
  };
  g_autoptr(KagedRun) run = make_run (&spec);

  kaged_retry_scheduler_run_finished (f->scheduler, run);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_SCHEDULED);

  /* The machine slept through the announced time: monotonic time stood
   * still, wall time did not. The retry still comes within a minute. */
  kaged_fake_clock_set_wall_ms (KAGED_FAKE_CLOCK (f->clock), START_WALL_MS + 30 * 60000);
  advance (f, 60000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
}

/* --- cancel ------------------------------------------------------------------ */

static void
assert_no_run_after_cancel (Fixture *f,
                            guint    n_regenerate)
{
  advance (f, 30 * 60000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, n_regenerate);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_CANCELLED);
  g_assert_false (kaged_retry_scheduler_is_pending (f->scheduler));
  g_assert_cmpuint (kaged_fake_clock_get_n_pending (KAGED_FAKE_CLOCK (f->clock)), ==, 0);
}

static void
test_cancel_armed (Fixture       *f,
                   gconstpointer  data)
{
  fail_run (f, 1, KAGED_RETRY_CLASS_SERVER_ERROR);
  advance (f, 1000);
  g_assert_true (kaged_retry_scheduler_cancel (f->scheduler));
  g_assert_cmpuint (f->dispatcher->n_cancel, ==, 0);
  assert_no_run_after_cancel (f, 0);

  /* Nothing left to cancel. */
  g_assert_false (kaged_retry_scheduler_cancel (f->scheduler));
  g_assert_false (kaged_retry_scheduler_retry_now (f->scheduler));

  /* The failure that armed it, told again, does not re-arm. */
  fail_run (f, 1, KAGED_RETRY_CLASS_SERVER_ERROR);
  assert_no_run_after_cancel (f, 0);
}

static void
test_cancel_scheduled (Fixture       *f,
                       gconstpointer  data)
{
  RunSpec spec = {
    3, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_QUOTA_SCHEDULED, TRUE,
    START_WALL_MS + 10 * 60000, 0, NULL, 0,
  };
  g_autoptr(KagedRun) run = make_run (&spec);

  kaged_retry_scheduler_run_finished (f->scheduler, run);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_SCHEDULED);
  g_assert_true (kaged_retry_scheduler_cancel (f->scheduler));
  assert_no_run_after_cancel (f, 0);
}

static void
test_cancel_waiting_for_network (Fixture       *f,
                                 gconstpointer  data)
{
  fail_run (f, 1, KAGED_RETRY_CLASS_NETWORK);
  test_network_monitor_set_available (f->monitor, FALSE);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK);
  g_assert_true (kaged_retry_scheduler_cancel (f->scheduler));
  test_network_monitor_set_available (f->monitor, TRUE);
  iterate ();
  assert_no_run_after_cancel (f, 0);
}

/* The timer has fired and the dispatch is queued on the main loop when
 * the operator cancels. */
static void
test_cancel_dispatch_queued (Fixture       *f,
                             gconstpointer  data)
{
  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED);
  iterate ();

  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (f->clock), 2000);
  g_assert_true (g_main_context_iteration (NULL, FALSE));
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_DISPATCHING);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);

  g_assert_true (kaged_retry_scheduler_cancel (f->scheduler));
  iterate ();
  g_assert_cmpuint (f->dispatcher->n_cancel, ==, 0);
  assert_no_run_after_cancel (f, 0);
}

/* A stale countdown callback, arriving after the cancel, starts nothing. */
static void
test_cancel_stale_timer (Fixture       *f,
                         gconstpointer  data)
{
  guint64 generation;

  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED);
  generation = _kaged_retry_scheduler_get_generation (f->scheduler);

  g_assert_true (kaged_retry_scheduler_cancel (f->scheduler));
  g_assert_cmpuint (_kaged_retry_scheduler_get_generation (f->scheduler), !=, generation);

  _kaged_retry_scheduler_expire (f->scheduler, generation);
  iterate ();
  assert_no_run_after_cancel (f, 0);

  /* The same callback for the current generation would have fired: the
   * token is what stops it. */
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);
  kaged_retry_scheduler_operator_posted (f->scheduler);
  fail_run (f, 2, KAGED_RETRY_CLASS_OVERLOADED);
  _kaged_retry_scheduler_expire (f->scheduler, _kaged_retry_scheduler_get_generation (f->scheduler));
  iterate ();
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
}

static void
cancel_during_regenerate (gpointer user_data)
{
  Fixture *f = user_data;

  g_assert_true (kaged_retry_scheduler_cancel (f->scheduler));
}

/* The operator cancels while the engine is starting the run: the run the
 * engine hands back is cancelled at once. */
static void
test_cancel_while_dispatching (Fixture       *f,
                               gconstpointer  data)
{
  gint64 started;

  f->dispatcher->during = cancel_during_regenerate;
  f->dispatcher->during_data = f;
  started = f->dispatcher->next_run_id;

  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED);
  advance (f, 2000);

  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
  g_assert_cmpuint (f->dispatcher->n_cancel, ==, 1);
  g_assert_cmpint (f->dispatcher->last_cancelled_run_id, ==, started);

  /* The engine records it cancelled; the scheduler stays cancelled. */
  finish_run (f, started, KAGED_RUN_STATUS_CANCELLED);
  assert_no_run_after_cancel (f, 1);
}

static void
test_cancel_watching (Fixture       *f,
                      gconstpointer  data)
{
  gint64 run_id;

  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED);
  advance (f, 2000);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_WATCHING);
  run_id = kaged_retry_scheduler_get_run_id (f->scheduler);

  g_assert_true (kaged_retry_scheduler_cancel (f->scheduler));
  g_assert_cmpuint (f->dispatcher->n_cancel, ==, 1);
  g_assert_cmpint (f->dispatcher->last_cancelled_run_id, ==, run_id);

  /* Whatever the run's end is reported as, nothing re-arms. */
  fail_run (f, run_id, KAGED_RETRY_CLASS_OVERLOADED);
  finish_run (f, run_id, KAGED_RUN_STATUS_CANCELLED);
  assert_no_run_after_cancel (f, 1);

  /* A newer run of the operator's that fails starts a new chain at k = 1. */
  fail_run (f, run_id + 1, KAGED_RETRY_CLASS_OVERLOADED);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_ARMED);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 1);
}

static void
test_cancel_random (Fixture       *f,
                    gconstpointer  data)
{
  g_autoptr(KagedRandom) random = kaged_random_new_with_seed (20260310);
  guint n_cases[7] = { 0, };

  for (guint i = 0; i < 200; i++)
    {
      KagedRetryClass classes[] = {
        KAGED_RETRY_CLASS_OVERLOADED, KAGED_RETRY_CLASS_RATE_LIMITED,
        KAGED_RETRY_CLASS_NETWORK, KAGED_RETRY_CLASS_SERVER_ERROR,
      };
      KagedRetryClass retry_class = classes[kaged_random_int_range (random, 0, G_N_ELEMENTS (classes))];
      gint64 cancel_at = kaged_random_int_range (random, 0, 20000);
      gboolean cancel_inside = kaged_random_int_range (random, 0, 8) == 0;
      gboolean network_drop = kaged_random_int_range (random, 0, 6) == 0;
      gint64 elapsed = 0;
      guint n_regenerate;
      guint n_cancel;
      gint64 watched = 0;

      g_clear_object (&f->scheduler);
      iterate ();
      f->scheduler = new_scheduler (f);
      f->dispatcher->during = cancel_inside ? cancel_during_regenerate : NULL;
      f->dispatcher->during_data = f;

      /* A chain of a few failures, to reach later attempts too. */
      fail_run (f, f->dispatcher->next_run_id++, retry_class);
      if (network_drop)
        test_network_monitor_set_available (f->monitor, FALSE);

      while (elapsed < cancel_at)
        {
          gint64 step = kaged_random_int_range (random, 1, 1500);

          step = MIN (step, cancel_at - elapsed);
          kaged_fake_clock_advance (KAGED_FAKE_CLOCK (f->clock), step);
          elapsed += step;

          /* Sometimes let only one round of sources run, so the cancel
           * lands between the timer and the queued dispatch. */
          if (kaged_random_int_range (random, 0, 2) == 0)
            g_main_context_iteration (NULL, FALSE);
          else
            iterate ();

          if (network_drop && kaged_random_int_range (random, 0, 10) == 0)
            test_network_monitor_set_available (f->monitor, TRUE);

          if (kaged_retry_scheduler_get_state (f->scheduler) == KAGED_RETRY_SCHEDULER_STATE_WATCHING &&
              kaged_random_int_range (random, 0, 2) == 0)
            fail_run (f, kaged_retry_scheduler_get_run_id (f->scheduler), retry_class);

          if (kaged_retry_scheduler_get_state (f->scheduler) == KAGED_RETRY_SCHEDULER_STATE_CANCELLED)
            break;
        }

      n_cases[kaged_retry_scheduler_get_state (f->scheduler)]++;
      if (kaged_retry_scheduler_get_state (f->scheduler) == KAGED_RETRY_SCHEDULER_STATE_WATCHING)
        watched = kaged_retry_scheduler_get_run_id (f->scheduler);

      n_cancel = f->dispatcher->n_cancel;
      kaged_retry_scheduler_cancel (f->scheduler);
      n_regenerate = f->dispatcher->n_regenerate;

      if (watched != 0)
        {
          g_assert_cmpuint (f->dispatcher->n_cancel, ==, n_cancel + 1);
          g_assert_cmpint (f->dispatcher->last_cancelled_run_id, ==, watched);
          finish_run (f, watched, KAGED_RUN_STATUS_CANCELLED);
        }

      test_network_monitor_set_available (f->monitor, TRUE);
      advance (f, 400000);
      g_assert_cmpuint (f->dispatcher->n_regenerate, ==, n_regenerate);
      assert_state (f, KAGED_RETRY_SCHEDULER_STATE_CANCELLED);
      g_assert_false (kaged_retry_scheduler_retry_now (f->scheduler));
      g_assert_cmpuint (kaged_fake_clock_get_n_pending (KAGED_FAKE_CLOCK (f->clock)), ==, 0);
    }

  /* The random moments covered the states a cancel can meet. */
  g_assert_cmpuint (n_cases[KAGED_RETRY_SCHEDULER_STATE_ARMED], >, 0);
  g_assert_cmpuint (n_cases[KAGED_RETRY_SCHEDULER_STATE_DISPATCHING], >, 0);
  g_assert_cmpuint (n_cases[KAGED_RETRY_SCHEDULER_STATE_WATCHING], >, 0);
  g_assert_cmpuint (n_cases[KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK], >, 0);
  g_assert_cmpuint (n_cases[KAGED_RETRY_SCHEDULER_STATE_CANCELLED], >, 0);
}

/* --- other inputs ------------------------------------------------------------ */

static void
test_retry_now (Fixture       *f,
                gconstpointer  data)
{
  RunSpec spec = {
    0, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_QUOTA_SCHEDULED, TRUE,
    START_WALL_MS + 50 * 60000, 0, NULL, 0,
  };
  g_autoptr(KagedRun) run = NULL;

  g_assert_false (kaged_retry_scheduler_retry_now (f->scheduler));

  /* From the countdown… */
  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_true (kaged_retry_scheduler_retry_now (f->scheduler));
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_DISPATCHING);
  iterate ();
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_WATCHING);
  g_assert_cmpint (wall_ms (f), ==, START_WALL_MS);
  g_assert_false (kaged_retry_scheduler_retry_now (f->scheduler));

  /* …and from the scheduled state, without waiting for the time. */
  spec.id = kaged_retry_scheduler_get_run_id (f->scheduler);
  run = make_run (&spec);
  kaged_retry_scheduler_run_finished (f->scheduler, run);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 2);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_SCHEDULED);
  g_assert_true (kaged_retry_scheduler_retry_now (f->scheduler));
  iterate ();
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 2);

  /* The old countdown does not come back. */
  advance (f, 60 * 60000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 2);
}

static void
test_operator_post_disarms (Fixture       *f,
                            gconstpointer  data)
{
  gint64 run_id;

  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED);
  kaged_retry_scheduler_operator_posted (f->scheduler);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_IDLE);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 0);
  g_assert_cmpint (kaged_retry_scheduler_get_retry_class (f->scheduler), ==,
                   KAGED_RETRY_CLASS_NONE);
  advance (f, 600000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);

  /* While a retry runs: it is left alone, but its failure arms nothing. */
  fail_run (f, 2, KAGED_RETRY_CLASS_OVERLOADED);
  advance (f, 2000);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_WATCHING);
  run_id = kaged_retry_scheduler_get_run_id (f->scheduler);
  kaged_retry_scheduler_operator_posted (f->scheduler);
  g_assert_cmpuint (f->dispatcher->n_cancel, ==, 0);
  fail_run (f, run_id, KAGED_RETRY_CLASS_OVERLOADED);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_IDLE);
  advance (f, 600000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
}

static void
test_success_resets (Fixture       *f,
                     gconstpointer  data)
{
  gint64 run_id = 1;

  fail_run (f, run_id, KAGED_RETRY_CLASS_OVERLOADED);
  for (guint k = 1; k <= 3; k++)
    {
      g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, k);
      advance (f, kaged_retry_scheduler_delay_for_attempt (k));
      run_id = kaged_retry_scheduler_get_run_id (f->scheduler);
      if (k < 3)
        fail_run (f, run_id, KAGED_RETRY_CLASS_OVERLOADED);
    }

  finish_run (f, run_id, KAGED_RUN_STATUS_SUCCEEDED);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_IDLE);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 0);
  g_assert_cmpint (kaged_retry_scheduler_get_next_eligible_time (f->scheduler), ==, 0);

  /* The next failure starts over at 2 s. */
  fail_run (f, run_id + 1, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 1);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 2);

  /* A non-retryable failure of the retry returns to idle too. */
  advance (f, 2000);
  run_id = kaged_retry_scheduler_get_run_id (f->scheduler);
  fail_run (f, run_id, KAGED_RETRY_CLASS_AUTH_FAILED);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_IDLE);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 0);
}

static void
test_dispatch_error (Fixture       *f,
                     gconstpointer  data)
{
  f->dispatcher->fail = TRUE;
  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED);
  advance (f, 2000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_IDLE);
  advance (f, 600000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
}

static void
test_network (Fixture       *f,
              gconstpointer  data)
{
  gint64 run_id;

  fail_run (f, 1, KAGED_RETRY_CLASS_NETWORK);
  advance (f, 500);
  test_network_monitor_set_available (f->monitor, FALSE);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK);
  g_assert_false (kaged_retry_scheduler_get_network_available (f->scheduler));
  g_assert_true (kaged_retry_scheduler_is_pending (f->scheduler));

  /* Paused, however long the network is away. */
  advance (f, 10 * 60000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);

  /* Back: the retry starts at once. */
  test_network_monitor_set_available (f->monitor, TRUE);
  iterate ();
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_WATCHING);

  /* A timeout failing while there is no network waits for it directly. */
  test_network_monitor_set_available (f->monitor, FALSE);
  run_id = kaged_retry_scheduler_get_run_id (f->scheduler);
  fail_run (f, run_id, KAGED_RETRY_CLASS_TIMEOUT);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 2);
  advance (f, 60000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
  kaged_retry_scheduler_set_network_available (f->scheduler, TRUE);
  iterate ();
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 2);

  /* Other classes keep counting down without a network. */
  run_id = kaged_retry_scheduler_get_run_id (f->scheduler);
  kaged_retry_scheduler_set_network_available (f->scheduler, FALSE);
  fail_run (f, run_id, KAGED_RETRY_CLASS_OVERLOADED);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_ARMED);
  advance (f, kaged_retry_scheduler_delay_for_attempt (3));
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 3);
}

static void
drop_scheduler (Fixture *f)
{
  g_assert_finalize_object (g_steal_pointer (&f->scheduler));
  iterate ();
  g_assert_cmpuint (kaged_fake_clock_get_n_pending (KAGED_FAKE_CLOCK (f->clock)), ==, 0);
}

static void
test_restart_armed (Fixture       *f,
                    gconstpointer  data)
{
  gint64 run_id;

  /* Attempt 2 (4 s) is waiting when the program stops… */
  fail_run (f, 1, KAGED_RETRY_CLASS_SERVER_ERROR);
  advance (f, 2000);
  run_id = kaged_retry_scheduler_get_run_id (f->scheduler);
  fail_run (f, run_id, KAGED_RETRY_CLASS_SERVER_ERROR);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 2);
  advance (f, 1000);
  drop_scheduler (f);

  /* …and starts again 1 s later, with 2 s still to go. */
  kaged_fake_clock_set_wall_ms (KAGED_FAKE_CLOCK (f->clock), wall_ms (f) + 1000);
  f->scheduler = new_scheduler (f);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_ARMED);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 2);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 2);
  g_assert_cmpint (kaged_retry_scheduler_get_anchor_id (f->scheduler), ==, ANCHOR_ID);
  g_assert_cmpint (kaged_retry_scheduler_get_retry_class (f->scheduler), !=,
                   KAGED_RETRY_CLASS_NONE);
  advance (f, 1999);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
  advance (f, 1);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 2);

  /* This time it stops and comes back after the time passed: it fires
   * promptly, at the next attempt. */
  run_id = kaged_retry_scheduler_get_run_id (f->scheduler);
  fail_run (f, run_id, KAGED_RETRY_CLASS_SERVER_ERROR);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 3);
  drop_scheduler (f);

  kaged_fake_clock_set_wall_ms (KAGED_FAKE_CLOCK (f->clock), wall_ms (f) + 3600000);
  f->scheduler = new_scheduler (f);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 2);
  iterate ();
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 3);
  g_assert_cmpint (f->dispatcher->last_anchor_id, ==, ANCHOR_ID);

  /* The engine told again about the failure it already armed from does
   * not count as another attempt. */
  fail_run (f, run_id, KAGED_RETRY_CLASS_SERVER_ERROR);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_WATCHING);
}

static void
test_restart_scheduled (Fixture       *f,
                        gconstpointer  data)
{
  RunSpec spec = {
    3, KAGED_RUN_STATUS_FAILED, KAGED_RETRY_CLASS_QUOTA_SCHEDULED, TRUE,
    START_WALL_MS + 50 * 60000, 0, NULL, 0,
  };
  g_autoptr(KagedRun) run = make_run (&spec);

  kaged_retry_scheduler_run_finished (f->scheduler, run);
  drop_scheduler (f);

  /* Ten minutes later: still scheduled for the same time. */
  kaged_fake_clock_set_wall_ms (KAGED_FAKE_CLOCK (f->clock), START_WALL_MS + 10 * 60000);
  f->scheduler = new_scheduler (f);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_SCHEDULED);
  g_assert_cmpint (kaged_retry_scheduler_get_next_eligible_time (f->scheduler), ==,
                   START_WALL_MS + 50 * 60000);
  g_assert_cmpstr (kaged_retry_scheduler_get_wait_source (f->scheduler), ==, "provider-reset");

  advance (f, 40 * 60000 - 1);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);
  advance (f, 1);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
}

static void
test_restart_cancelled (Fixture       *f,
                        gconstpointer  data)
{
  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_true (kaged_retry_scheduler_cancel (f->scheduler));
  drop_scheduler (f);

  kaged_fake_clock_set_wall_ms (KAGED_FAKE_CLOCK (f->clock), START_WALL_MS + 3600000);
  f->scheduler = new_scheduler (f);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_CANCELLED);

  /* The engine replays the session's latest run at start-up. */
  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED);
  assert_no_run_after_cancel (f, 0);
}

static void
test_restart_watching (Fixture       *f,
                       gconstpointer  data)
{
  g_autoptr(KagedRetrySnapshot) snapshot = NULL;

  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED);
  advance (f, 2000);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_WATCHING);
  snapshot = kaged_retry_scheduler_dup_snapshot (f->scheduler);
  g_assert_cmpint (snapshot->state, ==, KAGED_RETRY_SCHEDULER_STATE_WATCHING);
  g_assert_cmpint (snapshot->run_id, ==, kaged_retry_scheduler_get_run_id (f->scheduler));
  drop_scheduler (f);

  /* The run it watched was interrupted by the stop: nothing to resume. */
  f->scheduler = new_scheduler (f);
  assert_state (f, KAGED_RETRY_SCHEDULER_STATE_IDLE);
  advance (f, 600000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
}

static void
test_restart_dispatching (Fixture       *f,
                          gconstpointer  data)
{
  g_autoptr(KagedRetrySnapshot) snapshot = kaged_retry_snapshot_new ();

  /* Stopped after the wait ended but before the engine got the retry. */
  snapshot->state = KAGED_RETRY_SCHEDULER_STATE_DISPATCHING;
  snapshot->attempt = 4;
  snapshot->anchor_id = ANCHOR_ID;
  snapshot->run_id = 12;
  snapshot->retry_class = KAGED_RETRY_CLASS_OVERLOADED;
  snapshot->http_status = 529;
  snapshot->wait_source = g_strdup ("backoff");

  kaged_retry_scheduler_restore (f->scheduler, snapshot);
  g_assert_cmpint (kaged_retry_scheduler_get_retry_class (f->scheduler), ==,
                   KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpuint (kaged_retry_scheduler_get_http_status (f->scheduler), ==, 529);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 4);
  iterate ();
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
  g_assert_cmpint (f->dispatcher->last_anchor_id, ==, ANCHOR_ID);

  /* Its failure is attempt 5. */
  fail_run (f, kaged_retry_scheduler_get_run_id (f->scheduler), KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpuint (kaged_retry_scheduler_get_attempt (f->scheduler), ==, 5);
  g_assert_cmpint (kaged_retry_scheduler_get_remaining_seconds (f->scheduler), ==, 32);
}

static void
test_persisted_fields (Fixture       *f,
                       gconstpointer  data)
{
  g_autoptr(KagedRetrySnapshot) saved = NULL;
  gint64 key = SESSION_ID;
  guint n_saves;

  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED);
  saved = kaged_retry_snapshot_copy (g_hash_table_lookup (f->store->snapshots, &key));
  g_assert_cmpint (saved->state, ==, KAGED_RETRY_SCHEDULER_STATE_ARMED);
  g_assert_cmpuint (saved->attempt, ==, 1);
  g_assert_cmpint (saved->next_eligible_time, ==, START_WALL_MS + 2000);
  g_assert_cmpint (saved->anchor_id, ==, ANCHOR_ID);
  g_assert_cmpint (saved->run_id, ==, 1);
  g_assert_cmpint (saved->retry_class, ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpstr (saved->wait_source, ==, "backoff");

  /* The countdown's ticks are not written. */
  n_saves = f->store->n_saves;
  advance (f, 1000);
  g_assert_cmpuint (f->store->n_saves, ==, n_saves);

  g_assert_true (kaged_retry_scheduler_cancel (f->scheduler));
  g_clear_pointer (&saved, kaged_retry_snapshot_free);
  saved = kaged_retry_snapshot_copy (g_hash_table_lookup (f->store->snapshots, &key));
  g_assert_cmpint (saved->state, ==, KAGED_RETRY_SCHEDULER_STATE_CANCELLED);
}

static void
test_enum_nicks (void)
{
  static const char *nicks[] = {
    "idle", "armed", "scheduled", "waiting-for-network", "dispatching", "watching", "cancelled",
  };

  for (guint i = 0; i < G_N_ELEMENTS (nicks); i++)
    g_assert_cmpstr (kaged_enum_to_nick (KAGED_TYPE_RETRY_SCHEDULER_STATE, i), ==, nicks[i]);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

#define ADD(path, func) \
  g_test_add ("/retry-scheduler/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  g_test_add_func ("/retry-scheduler/delay-table", test_delay_table);
  g_test_add_func ("/retry-scheduler/enum-nicks", test_enum_nicks);
  ADD ("consecutive-delays", test_consecutive_delays);
  ADD ("arming-matrix", test_arming_matrix);
  ADD ("retry-after-countdown", test_retry_after_countdown);
  ADD ("boundary-300s", test_boundary_300s);
  ADD ("changed-signal", test_changed_signal);
  ADD ("countdown-fraction", test_countdown_fraction);
  ADD ("wait-data", test_wait_data);
  ADD ("scheduled", test_scheduled);
  ADD ("scheduled-wall-clock", test_scheduled_wall_clock);
  ADD ("cancel/armed", test_cancel_armed);
  ADD ("cancel/scheduled", test_cancel_scheduled);
  ADD ("cancel/waiting-for-network", test_cancel_waiting_for_network);
  ADD ("cancel/dispatch-queued", test_cancel_dispatch_queued);
  ADD ("cancel/stale-timer", test_cancel_stale_timer);
  ADD ("cancel/while-dispatching", test_cancel_while_dispatching);
  ADD ("cancel/watching", test_cancel_watching);
  ADD ("cancel/random", test_cancel_random);
  ADD ("retry-now", test_retry_now);
  ADD ("operator-post-disarms", test_operator_post_disarms);
  ADD ("success-resets", test_success_resets);
  ADD ("dispatch-error", test_dispatch_error);
  ADD ("network", test_network);
  ADD ("restart/armed", test_restart_armed);
  ADD ("restart/scheduled", test_restart_scheduled);
  ADD ("restart/cancelled", test_restart_cancelled);
  ADD ("restart/watching", test_restart_watching);
  ADD ("restart/dispatching", test_restart_dispatching);
  ADD ("persisted-fields", test_persisted_fields);

#undef ADD

  return g_test_run ();
}
