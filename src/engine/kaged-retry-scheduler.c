/* kaged-retry-scheduler.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry-scheduler"

#include "config.h"

#include "kaged-enum-types.h"
#include "kaged-retry-scheduler-internal.h"

/*
 * The object half of KagedRetryScheduler: construction, properties, the
 * ::changed signal and the data getters. The state machine itself is in
 * kaged-retry-scheduler-machine.c.
 */

G_DEFINE_FINAL_TYPE (KagedRetryScheduler, kaged_retry_scheduler, G_TYPE_OBJECT)

static GParamSpec *properties [N_PROPS];

enum {
  CHANGED,
  N_SIGNALS
};

static guint signals [N_SIGNALS];

static void
network_changed_cb (KagedRetryScheduler *self,
                    gboolean             network_available,
                    GNetworkMonitor     *monitor)
{
  kaged_retry_scheduler_set_network_available (self, network_available);
}

/* --- GObject --------------------------------------------------------------- */

static void
kaged_retry_scheduler_constructed (GObject *object)
{
  KagedRetryScheduler *self = (KagedRetryScheduler *)object;

  G_OBJECT_CLASS (kaged_retry_scheduler_parent_class)->constructed (object);

  if (self->clock == NULL)
    self->clock = g_object_ref (kaged_clock_get_default ());

  if (self->network_monitor == NULL)
    self->network_monitor = g_object_ref (g_network_monitor_get_default ());

  self->network_available = g_network_monitor_get_network_available (self->network_monitor);
  g_signal_connect_object (self->network_monitor, "network-changed",
                           G_CALLBACK (network_changed_cb), self, G_CONNECT_SWAPPED);

  if (self->state_store != NULL)
    {
      g_autoptr(KagedRetrySnapshot) snapshot = NULL;
      g_autoptr(GError) error = NULL;

      snapshot = kaged_retry_state_store_load (self->state_store, self->session_id, &error);
      if (error != NULL)
        g_warning ("Could not read the retry state of session %" G_GINT64_FORMAT ": %s",
                   self->session_id, error->message);
      else if (snapshot != NULL)
        kaged_retry_scheduler_restore (self, snapshot);
    }
}

static void
kaged_retry_scheduler_dispose (GObject *object)
{
  KagedRetryScheduler *self = (KagedRetryScheduler *)object;

  _kaged_retry_scheduler_stop_pending (self);

  g_clear_weak_pointer (&self->dispatcher);
  g_clear_weak_pointer (&self->state_store);
  g_clear_object (&self->network_monitor);

  G_OBJECT_CLASS (kaged_retry_scheduler_parent_class)->dispose (object);
}

static void
kaged_retry_scheduler_finalize (GObject *object)
{
  KagedRetryScheduler *self = (KagedRetryScheduler *)object;

  g_clear_object (&self->clock);
  g_clear_pointer (&self->context, g_main_context_unref);
  g_clear_pointer (&self->wait_source, g_free);

  G_OBJECT_CLASS (kaged_retry_scheduler_parent_class)->finalize (object);
}

static void
kaged_retry_scheduler_get_property (GObject    *object,
                                    guint       prop_id,
                                    GValue     *value,
                                    GParamSpec *pspec)
{
  KagedRetryScheduler *self = KAGED_RETRY_SCHEDULER (object);

  switch (prop_id)
    {
    case PROP_SESSION_ID:
      g_value_set_int64 (value, self->session_id);
      break;

    case PROP_DISPATCHER:
      g_value_set_object (value, self->dispatcher);
      break;

    case PROP_STATE_STORE:
      g_value_set_object (value, self->state_store);
      break;

    case PROP_CLOCK:
      g_value_set_object (value, self->clock);
      break;

    case PROP_NETWORK_MONITOR:
      g_value_set_object (value, self->network_monitor);
      break;

    case PROP_STATE:
      g_value_set_enum (value, self->state);
      break;

    case PROP_PENDING:
      g_value_set_boolean (value, kaged_retry_scheduler_is_pending (self));
      break;

    case PROP_ATTEMPT:
      g_value_set_uint (value, self->attempt);
      break;

    case PROP_REMAINING_SECONDS:
      g_value_set_int64 (value, self->remaining_seconds);
      break;

    case PROP_NEXT_ELIGIBLE_TIME:
      g_value_set_int64 (value, self->next_eligible_time);
      break;

    case PROP_ANCHOR_ID:
      g_value_set_int64 (value, self->anchor_id);
      break;

    case PROP_RUN_ID:
      g_value_set_int64 (value, self->run_id);
      break;

    case PROP_RETRY_CLASS:
      g_value_set_enum (value, self->retry_class);
      break;

    case PROP_HTTP_STATUS:
      g_value_set_uint (value, self->http_status);
      break;

    case PROP_WAIT_SOURCE:
      g_value_set_string (value, self->wait_source);
      break;

    case PROP_ADVISED_WAIT_MS:
      g_value_set_int64 (value, self->advised_wait_ms);
      break;

    case PROP_NETWORK_AVAILABLE:
      g_value_set_boolean (value, self->network_available);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_retry_scheduler_set_property (GObject      *object,
                                    guint         prop_id,
                                    const GValue *value,
                                    GParamSpec   *pspec)
{
  KagedRetryScheduler *self = KAGED_RETRY_SCHEDULER (object);

  switch (prop_id)
    {
    case PROP_SESSION_ID:
      self->session_id = g_value_get_int64 (value);
      break;

    case PROP_DISPATCHER:
      g_set_weak_pointer (&self->dispatcher, g_value_get_object (value));
      break;

    case PROP_STATE_STORE:
      g_set_weak_pointer (&self->state_store, g_value_get_object (value));
      break;

    case PROP_CLOCK:
      g_set_object (&self->clock, g_value_get_object (value));
      break;

    case PROP_NETWORK_MONITOR:
      g_set_object (&self->network_monitor, g_value_get_object (value));
      break;

    case PROP_NETWORK_AVAILABLE:
      kaged_retry_scheduler_set_network_available (self, g_value_get_boolean (value));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

/* One ::changed per batch of property changes that is a transition: the
 * countdown's seconds and the network's state alone are not. */
static void
kaged_retry_scheduler_dispatch_properties_changed (GObject     *object,
                                                   guint        n_pspecs,
                                                   GParamSpec **pspecs)
{
  gboolean transition = FALSE;

  G_OBJECT_CLASS (kaged_retry_scheduler_parent_class)->dispatch_properties_changed (object,
                                                                                      n_pspecs,
                                                                                      pspecs);

  for (guint i = 0; i < n_pspecs && !transition; i++)
    transition = pspecs[i] != properties [PROP_REMAINING_SECONDS] &&
                 pspecs[i] != properties [PROP_NETWORK_AVAILABLE];

  if (transition)
    g_signal_emit (object, signals [CHANGED], 0);
}

static void
kaged_retry_scheduler_class_init (KagedRetrySchedulerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->constructed = kaged_retry_scheduler_constructed;
  object_class->dispose = kaged_retry_scheduler_dispose;
  object_class->finalize = kaged_retry_scheduler_finalize;
  object_class->get_property = kaged_retry_scheduler_get_property;
  object_class->set_property = kaged_retry_scheduler_set_property;
  object_class->dispatch_properties_changed = kaged_retry_scheduler_dispatch_properties_changed;

  properties [PROP_SESSION_ID] =
    g_param_spec_int64 ("session-id", NULL, NULL,
                        0, G_MAXINT64, 0,
                        (G_PARAM_READWRITE |
                         G_PARAM_CONSTRUCT_ONLY |
                         G_PARAM_STATIC_STRINGS));

  /**
   * KagedRetryScheduler:dispatcher:
   *
   * How the scheduler starts and cancels runs. Not kept alive by the
   * scheduler: the engine that owns both outlives it.
   */
  properties [PROP_DISPATCHER] =
    g_param_spec_object ("dispatcher", NULL, NULL,
                         KAGED_TYPE_RETRY_DISPATCHER,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRetryScheduler:state-store:
   *
   * Where the state is kept across restarts; not kept alive by the
   * scheduler. Without one, nothing is persisted.
   */
  properties [PROP_STATE_STORE] =
    g_param_spec_object ("state-store", NULL, NULL,
                         KAGED_TYPE_RETRY_STATE_STORE,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  properties [PROP_CLOCK] =
    g_param_spec_object ("clock", NULL, NULL,
                         KAGED_TYPE_CLOCK,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  properties [PROP_NETWORK_MONITOR] =
    g_param_spec_object ("network-monitor", NULL, NULL,
                         G_TYPE_NETWORK_MONITOR,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  properties [PROP_STATE] =
    g_param_spec_enum ("state", NULL, NULL,
                       KAGED_TYPE_RETRY_SCHEDULER_STATE,
                       KAGED_RETRY_SCHEDULER_STATE_IDLE,
                       (G_PARAM_READABLE |
                        G_PARAM_EXPLICIT_NOTIFY |
                        G_PARAM_STATIC_STRINGS));

  /**
   * KagedRetryScheduler:pending:
   *
   * Whether a retry is waiting or about to start: armed, scheduled,
   * waiting for the network or dispatching. The banner shows while it is.
   */
  properties [PROP_PENDING] =
    g_param_spec_boolean ("pending", NULL, NULL,
                          FALSE,
                          (G_PARAM_READABLE |
                           G_PARAM_EXPLICIT_NOTIFY |
                           G_PARAM_STATIC_STRINGS));

  /**
   * KagedRetryScheduler:attempt:
   *
   * The consecutive retry k being waited for, from 1; 0 when idle.
   */
  properties [PROP_ATTEMPT] =
    g_param_spec_uint ("attempt", NULL, NULL,
                       0, G_MAXUINT, 0,
                       (G_PARAM_READABLE |
                        G_PARAM_EXPLICIT_NOTIFY |
                        G_PARAM_STATIC_STRINGS));

  /**
   * KagedRetryScheduler:remaining-seconds:
   *
   * Whole seconds until the retry, rounded up; updated once a second
   * while armed and frozen in the other waiting states.
   */
  properties [PROP_REMAINING_SECONDS] =
    g_param_spec_int64 ("remaining-seconds", NULL, NULL,
                        0, G_MAXINT64, 0,
                        (G_PARAM_READABLE |
                         G_PARAM_EXPLICIT_NOTIFY |
                         G_PARAM_STATIC_STRINGS));

  /**
   * KagedRetryScheduler:next-eligible-time:
   *
   * When the retry may start, epoch milliseconds; 0 when none waits.
   */
  properties [PROP_NEXT_ELIGIBLE_TIME] =
    g_param_spec_int64 ("next-eligible-time", NULL, NULL,
                        0, G_MAXINT64, 0,
                        (G_PARAM_READABLE |
                         G_PARAM_EXPLICIT_NOTIFY |
                         G_PARAM_STATIC_STRINGS));

  /**
   * KagedRetryScheduler:anchor-id:
   *
   * The operator message the retry regenerates from.
   */
  properties [PROP_ANCHOR_ID] =
    g_param_spec_int64 ("anchor-id", NULL, NULL,
                        0, G_MAXINT64, 0,
                        (G_PARAM_READABLE |
                         G_PARAM_EXPLICIT_NOTIFY |
                         G_PARAM_STATIC_STRINGS));

  /**
   * KagedRetryScheduler:run-id:
   *
   * The run the retry started, while it is under way.
   */
  properties [PROP_RUN_ID] =
    g_param_spec_int64 ("run-id", NULL, NULL,
                        0, G_MAXINT64, 0,
                        (G_PARAM_READABLE |
                         G_PARAM_EXPLICIT_NOTIFY |
                         G_PARAM_STATIC_STRINGS));

  properties [PROP_RETRY_CLASS] =
    g_param_spec_enum ("retry-class", NULL, NULL,
                       KAGED_TYPE_RETRY_CLASS,
                       KAGED_RETRY_CLASS_NONE,
                       (G_PARAM_READABLE |
                        G_PARAM_EXPLICIT_NOTIFY |
                        G_PARAM_STATIC_STRINGS));

  properties [PROP_HTTP_STATUS] =
    g_param_spec_uint ("http-status", NULL, NULL,
                       0, 999, 0,
                       (G_PARAM_READABLE |
                        G_PARAM_EXPLICIT_NOTIFY |
                        G_PARAM_STATIC_STRINGS));

  /**
   * KagedRetryScheduler:wait-source:
   *
   * Where the wait came from: `backoff`, the header the provider set
   * (`retry-after`, `retry-after-ms`, `anthropic-ratelimit-reset`,
   * `x-ratelimit-reset`) or `provider-reset` for a quota reset time.
   * kaged_retry_describe_wait_source() puts it in words.
   */
  properties [PROP_WAIT_SOURCE] =
    g_param_spec_string ("wait-source", NULL, NULL,
                         NULL,
                         (G_PARAM_READABLE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRetryScheduler:advised-wait-ms:
   *
   * How long the provider asked to wait before the failure the retry
   * waits for, in milliseconds; 0 when it did not say.
   */
  properties [PROP_ADVISED_WAIT_MS] =
    g_param_spec_int64 ("advised-wait-ms", NULL, NULL,
                        0, G_MAXINT64, 0,
                        (G_PARAM_READABLE |
                         G_PARAM_EXPLICIT_NOTIFY |
                         G_PARAM_STATIC_STRINGS));

  properties [PROP_NETWORK_AVAILABLE] =
    g_param_spec_boolean ("network-available", NULL, NULL,
                          TRUE,
                          (G_PARAM_READWRITE |
                           G_PARAM_EXPLICIT_NOTIFY |
                           G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);

  /**
   * KagedRetryScheduler::changed:
   *
   * Emitted once after every transition — a change of state, attempt,
   * next eligible time, anchor, retried run or classification — when all
   * of it is in place; kaged_retry_scheduler_dup_snapshot() then reads
   * the whole state. The countdown's ticks are not transitions: follow
   * #KagedRetryScheduler:remaining-seconds for those.
   */
  signals [CHANGED] =
    g_signal_new ("changed",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 0);
}

static void
kaged_retry_scheduler_init (KagedRetryScheduler *self)
{
  self->context = g_main_context_ref_thread_default ();
  self->network_available = TRUE;
}

/* --- public API ------------------------------------------------------------ */

/**
 * kaged_retry_scheduler_new:
 * @session_id: the session whose retries this schedules
 * @dispatcher: (nullable): how to start and cancel runs; not kept alive
 * @state_store: (nullable): where to persist the state; not kept alive.
 *   A snapshot saved there for @session_id is restored at once.
 * @clock: (nullable): the clock, or %NULL for the system's
 * @network_monitor: (nullable): the network monitor, or %NULL for
 *   g_network_monitor_get_default()
 *
 * Returns: (transfer full): a new scheduler, idle unless restored
 */
KagedRetryScheduler *
kaged_retry_scheduler_new (gint64                 session_id,
                           KagedRetryDispatcher  *dispatcher,
                           KagedRetryStateStore  *state_store,
                           KagedClock            *clock,
                           GNetworkMonitor       *network_monitor)
{
  g_return_val_if_fail (!dispatcher || KAGED_IS_RETRY_DISPATCHER (dispatcher), NULL);
  g_return_val_if_fail (!state_store || KAGED_IS_RETRY_STATE_STORE (state_store), NULL);
  g_return_val_if_fail (!clock || KAGED_IS_CLOCK (clock), NULL);
  g_return_val_if_fail (!network_monitor || G_IS_NETWORK_MONITOR (network_monitor), NULL);

  return g_object_new (KAGED_TYPE_RETRY_SCHEDULER,
                       "session-id", session_id,
                       "dispatcher", dispatcher,
                       "state-store", state_store,
                       "clock", clock,
                       "network-monitor", network_monitor,
                       NULL);
}

gint64
kaged_retry_scheduler_get_session_id (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), 0);

  return self->session_id;
}

KagedRetrySchedulerState
kaged_retry_scheduler_get_state (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), KAGED_RETRY_SCHEDULER_STATE_IDLE);

  return self->state;
}

/**
 * kaged_retry_scheduler_is_pending:
 *
 * Returns: whether a retry is waiting or about to start
 */
gboolean
kaged_retry_scheduler_is_pending (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), FALSE);

  return _kaged_retry_scheduler_state_is_pending (self->state);
}

guint
kaged_retry_scheduler_get_attempt (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), 0);

  return self->attempt;
}

gint64
kaged_retry_scheduler_get_remaining_seconds (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), 0);

  return self->remaining_seconds;
}

gint64
kaged_retry_scheduler_get_next_eligible_time (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), 0);

  return self->next_eligible_time;
}

gint64
kaged_retry_scheduler_get_anchor_id (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), 0);

  return self->anchor_id;
}

gint64
kaged_retry_scheduler_get_run_id (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), 0);

  return self->run_id;
}

KagedRetryClass
kaged_retry_scheduler_get_retry_class (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), KAGED_RETRY_CLASS_NONE);

  return self->retry_class;
}

guint
kaged_retry_scheduler_get_http_status (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), 0);

  return self->http_status;
}

const char *
kaged_retry_scheduler_get_wait_source (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), NULL);

  return self->wait_source;
}

/**
 * kaged_retry_scheduler_get_advised_wait_ms:
 *
 * Returns: how long the provider asked to wait, in milliseconds, or 0
 */
gint64
kaged_retry_scheduler_get_advised_wait_ms (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), 0);

  return self->advised_wait_ms;
}

/**
 * kaged_retry_scheduler_get_clock:
 *
 * Returns: (transfer none): the clock the scheduler counts on, for views
 *   that show its times relative to now
 */
KagedClock *
kaged_retry_scheduler_get_clock (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), NULL);

  return self->clock;
}

gboolean
kaged_retry_scheduler_get_network_available (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), FALSE);

  return self->network_available;
}

/**
 * kaged_retry_scheduler_dup_snapshot:
 *
 * Returns: (transfer full): the state to persist
 */
KagedRetrySnapshot *
kaged_retry_scheduler_dup_snapshot (KagedRetryScheduler *self)
{
  KagedRetrySnapshot *snapshot;

  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), NULL);

  snapshot = kaged_retry_snapshot_new ();
  snapshot->state = self->state;
  snapshot->attempt = self->attempt;
  snapshot->next_eligible_time = self->next_eligible_time;
  snapshot->anchor_id = self->anchor_id;
  snapshot->run_id = MAX (self->latest_run_id, self->run_id);
  snapshot->retry_run_id = self->run_id;
  snapshot->retry_class = self->retry_class;
  snapshot->http_status = self->http_status;
  snapshot->retry_after_until = self->retry_after_until;
  snapshot->advised_wait_ms = self->advised_wait_ms;
  snapshot->wait_source = g_strdup (self->wait_source);

  return snapshot;
}

/**
 * kaged_retry_scheduler_delay_for_attempt:
 * @attempt: the consecutive attempt k, from 1
 *
 * Returns: the countdown before attempt k, `min (300 s, 2 s × 2^(k-1))`,
 *   in milliseconds
 */
gint64
kaged_retry_scheduler_delay_for_attempt (guint attempt)
{
  gint64 delay = KAGED_RETRY_SCHEDULER_BASE_DELAY_MS;

  for (guint k = 1; k < attempt && delay < KAGED_RETRY_SCHEDULER_MAX_DELAY_MS; k++)
    delay *= 2;

  return MIN (delay, KAGED_RETRY_SCHEDULER_MAX_DELAY_MS);
}

void
_kaged_retry_scheduler_notify (KagedRetryScheduler     *self,
                               KagedRetrySchedulerProp  prop)
{
  g_assert (prop > PROP_0 && prop < N_PROPS);

  g_object_notify_by_pspec (G_OBJECT (self), properties [prop]);
}
