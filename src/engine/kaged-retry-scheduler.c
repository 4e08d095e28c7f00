/* kaged-retry-scheduler.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry-scheduler"

#include "config.h"

#include "kaged-enum-types.h"
#include "kaged-retry-class.h"
#include "kaged-retry-policy.h"
#include "kaged-retry-scheduler-private.h"

/* A scheduled wait is checked against wall time at least this often, so a
 * machine that slept through it still retries at the announced time. */
#define SCHEDULED_RECHECK_MS ((gint64)60000)

/**
 * KagedRetryScheduler:
 *
 * The Tier 2 retry of one session (DESIGN.md §6): a state machine over a
 * #KagedClock that arms from the classification of the session's latest
 * run, counts down in the open, and regenerates from the anchor operator
 * message through a #KagedRetryDispatcher when the wait is over.
 *
 * The engine tells it about finished runs and new operator posts; the
 * window and the notifications read its properties. Everything happens on
 * the main context it was created on.
 */
struct _KagedRetryScheduler
{
  GObject parent_instance;

  gint64 session_id;
  KagedRetryDispatcher *dispatcher;   /* weak */
  KagedRetryStateStore *state_store;  /* weak */
  KagedClock *clock;
  GNetworkMonitor *network_monitor;
  GMainContext *context;

  /* Moves on at every arm, fire, cancel and disarm. */
  guint64 generation;
  GCancellable *cancellable;
  GSource *deadline_source;
  GSource *tick_source;
  GSource *dispatch_source;

  KagedRetrySchedulerState state;
  guint attempt;
  gint64 remaining_seconds;
  gint64 next_eligible_time;  /* wall, epoch ms */
  gint64 deadline;            /* monotonic µs, while armed */
  gint64 anchor_id;
  gint64 run_id;              /* the retried run, while dispatching or watching */
  gint64 latest_run_id;
  KagedRetryClass retry_class;
  guint http_status;
  gint64 retry_after_until;
  gint64 advised_wait_ms;
  char *wait_source;

  guint network_available : 1;
};

G_DEFINE_FINAL_TYPE (KagedRetryScheduler, kaged_retry_scheduler, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_SESSION_ID,
  PROP_DISPATCHER,
  PROP_STATE_STORE,
  PROP_CLOCK,
  PROP_NETWORK_MONITOR,
  PROP_STATE,
  PROP_PENDING,
  PROP_ATTEMPT,
  PROP_REMAINING_SECONDS,
  PROP_NEXT_ELIGIBLE_TIME,
  PROP_ANCHOR_ID,
  PROP_RUN_ID,
  PROP_RETRY_CLASS,
  PROP_HTTP_STATUS,
  PROP_WAIT_SOURCE,
  PROP_ADVISED_WAIT_MS,
  PROP_NETWORK_AVAILABLE,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

enum {
  CHANGED,
  N_SIGNALS
};

static guint signals [N_SIGNALS];

typedef struct
{
  KagedRetryScheduler *self;
  guint64              generation;
} TimerData;

static gboolean
state_is_pending (KagedRetrySchedulerState state)
{
  switch (state)
    {
    case KAGED_RETRY_SCHEDULER_STATE_ARMED:
    case KAGED_RETRY_SCHEDULER_STATE_SCHEDULED:
    case KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK:
    case KAGED_RETRY_SCHEDULER_STATE_DISPATCHING:
      return TRUE;

    case KAGED_RETRY_SCHEDULER_STATE_IDLE:
    case KAGED_RETRY_SCHEDULER_STATE_WATCHING:
    case KAGED_RETRY_SCHEDULER_STATE_CANCELLED:
    default:
      return FALSE;
    }
}

static gboolean
state_is_waiting (KagedRetrySchedulerState state)
{
  return state == KAGED_RETRY_SCHEDULER_STATE_ARMED ||
         state == KAGED_RETRY_SCHEDULER_STATE_SCHEDULED ||
         state == KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK;
}

static gboolean
class_needs_network (KagedRetryClass retry_class)
{
  return retry_class == KAGED_RETRY_CLASS_NETWORK || retry_class == KAGED_RETRY_CLASS_TIMEOUT;
}

static gboolean
wait_source_is_provider (const char *wait_source)
{
  return wait_source != NULL && *wait_source != '\0' &&
         g_strcmp0 (wait_source, KAGED_RETRY_WAIT_SOURCE_BACKOFF) != 0;
}

/* --- property setters that announce changes ----------------------------- */

static void
set_state (KagedRetryScheduler      *self,
           KagedRetrySchedulerState  state)
{
  gboolean was_pending;

  if (self->state == state)
    return;

  was_pending = state_is_pending (self->state);
  g_debug ("Session %" G_GINT64_FORMAT ": %s → %s", self->session_id,
           kaged_enum_to_nick (KAGED_TYPE_RETRY_SCHEDULER_STATE, self->state),
           kaged_enum_to_nick (KAGED_TYPE_RETRY_SCHEDULER_STATE, state));
  self->state = state;
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_STATE]);

  if (was_pending != state_is_pending (state))
    g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_PENDING]);
}

static void
set_int64 (KagedRetryScheduler *self,
           gint64              *field,
           gint64               value,
           guint                prop_id)
{
  if (*field == value)
    return;

  *field = value;
  g_object_notify_by_pspec (G_OBJECT (self), properties [prop_id]);
}

static void
set_uint (KagedRetryScheduler *self,
          guint               *field,
          guint                value,
          guint                prop_id)
{
  if (*field == value)
    return;

  *field = value;
  g_object_notify_by_pspec (G_OBJECT (self), properties [prop_id]);
}

static void
set_string (KagedRetryScheduler  *self,
            char                **field,
            const char           *value,
            guint                 prop_id)
{
  if (g_strcmp0 (*field, value) == 0)
    return;

  g_free (*field);
  *field = g_strdup (value);
  g_object_notify_by_pspec (G_OBJECT (self), properties [prop_id]);
}

static void
set_retry_class (KagedRetryScheduler *self,
                 KagedRetryClass      retry_class)
{
  if (self->retry_class == retry_class)
    return;

  self->retry_class = retry_class;
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_RETRY_CLASS]);
}

/* --- persistence ----------------------------------------------------------- */

static void
persist (KagedRetryScheduler *self)
{
  g_autoptr(KagedRetrySnapshot) snapshot = NULL;
  g_autoptr(GError) error = NULL;

  if (self->state_store == NULL)
    return;

  snapshot = kaged_retry_scheduler_dup_snapshot (self);
  if (!kaged_retry_state_store_save (self->state_store, self->session_id, snapshot, &error))
    g_warning ("Could not save the retry state of session %" G_GINT64_FORMAT ": %s",
               self->session_id, error->message);
}

/* --- timers ---------------------------------------------------------------- */

static GSource *
attach_timeout (KagedRetryScheduler *self,
                gint64               delay_ms,
                GSourceFunc          func,
                const char          *name)
{
  GSource *source;
  TimerData *data;

  data = g_new0 (TimerData, 1);
  data->self = self;
  data->generation = self->generation;

  source = kaged_clock_attach_timeout (self->clock, self->context, (guint64)MAX (delay_ms, 0),
                                       func, data, g_free, name);

  return source;
}

/* Drops everything that could still act on the current wait or dispatch:
 * timers, the queued dispatch and the dispatch's cancellable. */
static void
stop_pending (KagedRetryScheduler *self)
{
  self->generation++;

  kaged_clock_clear_source (&self->deadline_source);
  kaged_clock_clear_source (&self->tick_source);
  kaged_clock_clear_source (&self->dispatch_source);

  if (self->cancellable != NULL)
    {
      g_cancellable_cancel (self->cancellable);
      g_clear_object (&self->cancellable);
    }
}

static gint64
remaining_ms (KagedRetryScheduler *self)
{
  gint64 rem_us = self->deadline - kaged_clock_get_monotonic (self->clock);

  return rem_us <= 0 ? 0 : (rem_us + 999) / 1000;
}

static gboolean tick_cb (gpointer user_data);

static void
schedule_tick (KagedRetryScheduler *self)
{
  gint64 rem = remaining_ms (self);
  gint64 next;

  g_assert (self->tick_source == NULL);

  /* Wake exactly when the whole seconds left change, never more often. */
  next = rem % 1000;
  if (next == 0)
    next = 1000;
  if (next >= rem)
    return;

  self->tick_source = attach_timeout (self, next, tick_cb, "[kaged] retry countdown tick");
}

static gboolean
tick_cb (gpointer user_data)
{
  TimerData *data = user_data;
  KagedRetryScheduler *self = data->self;

  if (data->generation != self->generation || self->state != KAGED_RETRY_SCHEDULER_STATE_ARMED)
    return G_SOURCE_REMOVE;

  kaged_clock_clear_source (&self->tick_source);
  set_int64 (self, &self->remaining_seconds, (remaining_ms (self) + 999) / 1000,
             PROP_REMAINING_SECONDS);
  schedule_tick (self);

  return G_SOURCE_REMOVE;
}

static void fire (KagedRetryScheduler *self);
static void enter_wait (KagedRetryScheduler *self, gint64 next_eligible_time);

static gboolean
deadline_cb (gpointer user_data)
{
  TimerData *data = user_data;
  KagedRetryScheduler *self = data->self;
  guint64 generation = data->generation;

  _kaged_retry_scheduler_expire (self, generation);

  return G_SOURCE_REMOVE;
}

/* --- transitions ----------------------------------------------------------- */

static void
enter_idle (KagedRetryScheduler *self)
{
  stop_pending (self);

  set_state (self, KAGED_RETRY_SCHEDULER_STATE_IDLE);
  set_uint (self, &self->attempt, 0, PROP_ATTEMPT);
  set_int64 (self, &self->remaining_seconds, 0, PROP_REMAINING_SECONDS);
  set_int64 (self, &self->next_eligible_time, 0, PROP_NEXT_ELIGIBLE_TIME);
  set_int64 (self, &self->run_id, 0, PROP_RUN_ID);
  set_int64 (self, &self->anchor_id, 0, PROP_ANCHOR_ID);
  set_retry_class (self, KAGED_RETRY_CLASS_NONE);
  set_uint (self, &self->http_status, 0, PROP_HTTP_STATUS);
  set_string (self, &self->wait_source, NULL, PROP_WAIT_SOURCE);
  self->retry_after_until = 0;
  set_int64 (self, &self->advised_wait_ms, 0, PROP_ADVISED_WAIT_MS);
}

/* Waits until @next_eligible_time (wall, epoch ms): a countdown when that
 * is at most five minutes away, the scheduled state beyond, and a pause
 * while a network or timeout failure has no network to retry on. */
static void
enter_wait (KagedRetryScheduler *self,
            gint64               next_eligible_time)
{
  gint64 delay = MAX (0, next_eligible_time - kaged_clock_get_wall_ms (self->clock));

  stop_pending (self);
  set_int64 (self, &self->next_eligible_time, next_eligible_time, PROP_NEXT_ELIGIBLE_TIME);
  set_int64 (self, &self->run_id, 0, PROP_RUN_ID);
  set_int64 (self, &self->remaining_seconds, (delay + 999) / 1000, PROP_REMAINING_SECONDS);

  if (class_needs_network (self->retry_class) && !self->network_available)
    {
      set_state (self, KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK);
    }
  else if (delay > KAGED_RETRY_SCHEDULER_MAX_DELAY_MS)
    {
      set_state (self, KAGED_RETRY_SCHEDULER_STATE_SCHEDULED);
      self->deadline_source = attach_timeout (self, MIN (delay, SCHEDULED_RECHECK_MS), deadline_cb,
                                              "[kaged] scheduled retry");
    }
  else
    {
      set_state (self, KAGED_RETRY_SCHEDULER_STATE_ARMED);
      self->deadline = kaged_clock_get_monotonic (self->clock) + delay * 1000;
      self->deadline_source = attach_timeout (self, delay, deadline_cb, "[kaged] retry countdown");
      schedule_tick (self);
    }

}

static void
enter_cancelled (KagedRetryScheduler *self)
{
  stop_pending (self);
  set_state (self, KAGED_RETRY_SCHEDULER_STATE_CANCELLED);
  set_int64 (self, &self->remaining_seconds, 0, PROP_REMAINING_SECONDS);
}

static void handle_finished (KagedRetryScheduler *self,
                             KagedRun            *run,
                             gboolean             consecutive);

static void
dispatch (KagedRetryScheduler *self)
{
  g_autoptr(KagedRetryScheduler) hold = g_object_ref (self);
  g_autoptr(GCancellable) cancellable = NULL;
  g_autoptr(GError) error = NULL;
  guint64 generation = self->generation;
  gint64 run_id;

  g_assert (self->state == KAGED_RETRY_SCHEDULER_STATE_DISPATCHING);

  if (self->dispatcher == NULL)
    {
      g_debug ("Session %" G_GINT64_FORMAT ": no dispatcher left, dropping the retry",
               self->session_id);
      enter_idle (self);
      persist (self);
      return;
    }

  cancellable = g_object_ref (self->cancellable);

  /* The engine announces the run's end from the main loop, never from
   * inside this call: the scheduler is watching before it hears of it. */
  run_id = kaged_retry_dispatcher_regenerate (self->dispatcher, self->session_id, self->anchor_id,
                                              cancellable, &error);

  if (generation != self->generation)
    {
      /* Cancelled or disarmed while the engine was starting the run. */
      if (run_id > 0)
        {
          self->latest_run_id = MAX (self->latest_run_id, run_id);

          if (self->state == KAGED_RETRY_SCHEDULER_STATE_CANCELLED && self->dispatcher != NULL)
            {
              g_autoptr(GError) cancel_error = NULL;

              if (!kaged_retry_dispatcher_cancel_run (self->dispatcher, self->session_id, run_id,
                                                      &cancel_error))
                g_debug ("Could not cancel run %" G_GINT64_FORMAT ": %s",
                         run_id, cancel_error->message);
            }

          persist (self);
        }
      return;
    }

  if (run_id <= 0)
    {
      if (error != NULL && !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_message ("Session %" G_GINT64_FORMAT ": the retry could not start: %s",
                   self->session_id, error->message);
      enter_idle (self);
      persist (self);
      return;
    }

  g_clear_object (&self->cancellable);
  self->latest_run_id = MAX (self->latest_run_id, run_id);
  set_int64 (self, &self->run_id, run_id, PROP_RUN_ID);
  set_state (self, KAGED_RETRY_SCHEDULER_STATE_WATCHING);
  persist (self);
}

static gboolean
dispatch_cb (gpointer user_data)
{
  TimerData *data = user_data;
  KagedRetryScheduler *self = data->self;

  if (data->generation != self->generation ||
      self->state != KAGED_RETRY_SCHEDULER_STATE_DISPATCHING)
    return G_SOURCE_REMOVE;

  g_clear_pointer (&self->dispatch_source, g_source_unref);
  g_object_freeze_notify (G_OBJECT (self));
  dispatch (self);
  g_object_thaw_notify (G_OBJECT (self));

  return G_SOURCE_REMOVE;
}

/* The wait is over (or was skipped): hand the regeneration to the engine
 * from the main loop, so a cancel that arrives before it runs still wins. */
static void
fire (KagedRetryScheduler *self)
{
  TimerData *data;

  stop_pending (self);
  self->cancellable = g_cancellable_new ();

  set_state (self, KAGED_RETRY_SCHEDULER_STATE_DISPATCHING);
  set_int64 (self, &self->remaining_seconds, 0, PROP_REMAINING_SECONDS);
  persist (self);

  data = g_new0 (TimerData, 1);
  data->self = self;
  data->generation = self->generation;

  self->dispatch_source = g_idle_source_new ();
  g_source_set_priority (self->dispatch_source, G_PRIORITY_DEFAULT);
  g_source_set_callback (self->dispatch_source, dispatch_cb, data, g_free);
  g_source_set_static_name (self->dispatch_source, "[kaged] retry dispatch");
  g_source_attach (self->dispatch_source, self->context);
}

static const KagedAttempt *
last_attempt (KagedRun *run)
{
  GPtrArray *attempts = kaged_run_get_attempts (run);

  if (attempts == NULL || attempts->len == 0)
    return NULL;

  return g_ptr_array_index (attempts, attempts->len - 1);
}

/* Where the wait for a retry of @run came from, when the retry is due at
 * @next_eligible_time and @run failed at @failed_at (epoch ms). */
static void
describe_run_wait (KagedRun    *run,
                   gint64       next_eligible_time,
                   gint64       failed_at,
                   const char **wait_source,
                   gint64      *advised_wait_ms)
{
  const KagedAttempt *last = last_attempt (run);
  gint64 until = kaged_run_get_retry_after_until (run);

  *wait_source = KAGED_RETRY_WAIT_SOURCE_BACKOFF;
  *advised_wait_ms = 0;

  if (until <= 0)
    return;

  if (last != NULL && wait_source_is_provider (last->wait_source) && last->wait_ms > 0)
    *advised_wait_ms = last->wait_ms;
  else
    *advised_wait_ms = MAX (0, until - failed_at);

  if (until < next_eligible_time)
    return;

  if (last != NULL && wait_source_is_provider (last->wait_source))
    *wait_source = last->wait_source;
  else if (kaged_run_get_retry_class (run) == KAGED_RETRY_CLASS_QUOTA_SCHEDULED)
    *wait_source = KAGED_RETRY_WAIT_SOURCE_PROVIDER_RESET;
  else
    *wait_source = KAGED_RETRY_WAIT_SOURCE_RETRY_AFTER;
}

static void
arm_from_run (KagedRetryScheduler *self,
              KagedRun            *run,
              guint                attempt)
{
  gint64 now = kaged_clock_get_wall_ms (self->clock);
  gint64 until = kaged_run_get_retry_after_until (run);
  gint64 next = now + kaged_retry_scheduler_delay_for_attempt (attempt);
  const char *wait_source = NULL;
  gint64 advised = 0;

  /* Never before the provider's time. */
  if (until > next)
    next = until;

  describe_run_wait (run, next, now, &wait_source, &advised);

  set_uint (self, &self->attempt, attempt, PROP_ATTEMPT);
  set_int64 (self, &self->anchor_id, kaged_run_get_anchor_id (run), PROP_ANCHOR_ID);
  set_retry_class (self, kaged_run_get_retry_class (run));
  set_uint (self, &self->http_status, kaged_run_get_http_status (run), PROP_HTTP_STATUS);
  set_string (self, &self->wait_source, wait_source, PROP_WAIT_SOURCE);
  self->retry_after_until = until;
  set_int64 (self, &self->advised_wait_ms, advised, PROP_ADVISED_WAIT_MS);

  enter_wait (self, next);
}

static void
handle_finished (KagedRetryScheduler *self,
                 KagedRun            *run,
                 gboolean             consecutive)
{
  gint64 run_id = kaged_run_get_id (run);

  g_object_freeze_notify (G_OBJECT (self));

  self->latest_run_id = MAX (self->latest_run_id, run_id);

  if (kaged_retry_run_is_armable (run))
    arm_from_run (self, run, consecutive ? self->attempt + 1 : 1);
  else
    enter_idle (self);

  persist (self);

  g_object_thaw_notify (G_OBJECT (self));
}

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

  stop_pending (self);

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

  return state_is_pending (self->state);
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
 * kaged_retry_scheduler_set_network_available:
 *
 * Tells the scheduler whether the system has a network (the network
 * monitor does this by itself). A network or timeout countdown pauses
 * while there is none and fires as soon as it is back, though never
 * before the failure's `retry_after_until`.
 */
void
kaged_retry_scheduler_set_network_available (KagedRetryScheduler *self,
                                             gboolean             network_available)
{
  g_return_if_fail (KAGED_IS_RETRY_SCHEDULER (self));

  network_available = !!network_available;
  if (self->network_available == (guint)network_available)
    return;

  g_object_freeze_notify (G_OBJECT (self));

  self->network_available = network_available;
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_NETWORK_AVAILABLE]);

  if (!network_available && state_is_waiting (self->state) && class_needs_network (self->retry_class))
    {
      gint64 remaining = self->state == KAGED_RETRY_SCHEDULER_STATE_ARMED
                           ? (remaining_ms (self) + 999) / 1000
                           : self->remaining_seconds;

      stop_pending (self);
      set_state (self, KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK);
      set_int64 (self, &self->remaining_seconds, remaining, PROP_REMAINING_SECONDS);
          persist (self);
    }
  else if (network_available && self->state == KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK)
    {
      if (self->retry_after_until > kaged_clock_get_wall_ms (self->clock))
        enter_wait (self, self->retry_after_until);
      else
        fire (self);
      persist (self);
    }

  g_object_thaw_notify (G_OBJECT (self));
}

/**
 * kaged_retry_scheduler_run_finished:
 * @run: the session's latest run, finished, as the database holds it
 *
 * Tells the scheduler that its session settled on @run: the caller has
 * checked with kaged_retry_policy_check() that @run is the latest, that
 * nothing is queued or running and that no operator message came after
 * it (the coordinator does). A failure kaged_retry_run_is_armable() allows
 * arms the next retry (the next consecutive attempt when @run is the retry
 * this scheduler started, the first otherwise); success, cancellation and
 * other failures return to idle. Runs the scheduler has already accounted for, and those older,
 * are ignored — so a cancelled retry stays cancelled.
 */
void
kaged_retry_scheduler_run_finished (KagedRetryScheduler *self,
                                    KagedRun            *run)
{
  gint64 run_id;
  gboolean consecutive;

  g_return_if_fail (KAGED_IS_RETRY_SCHEDULER (self));
  g_return_if_fail (KAGED_IS_RUN (run));

  if (!kaged_run_is_finished (run))
    return;

  run_id = kaged_run_get_id (run);

  consecutive = self->state == KAGED_RETRY_SCHEDULER_STATE_WATCHING && run_id == self->run_id;

  if (!consecutive && run_id <= self->latest_run_id)
    {
      g_debug ("Session %" G_GINT64_FORMAT ": run %" G_GINT64_FORMAT " is not newer, ignored",
               self->session_id, run_id);
      return;
    }

  handle_finished (self, run, consecutive);
}

/**
 * kaged_retry_scheduler_operator_posted:
 *
 * The operator posted (or regenerated by hand) in this session: whatever
 * retry was waiting no longer applies. The retry run under way, if any, is
 * left alone but will not arm another.
 */
void
kaged_retry_scheduler_operator_posted (KagedRetryScheduler *self)
{
  g_return_if_fail (KAGED_IS_RETRY_SCHEDULER (self));

  g_object_freeze_notify (G_OBJECT (self));
  enter_idle (self);
  persist (self);
  g_object_thaw_notify (G_OBJECT (self));
}

/**
 * kaged_retry_scheduler_retry_now:
 *
 * Skips the rest of the wait: the retry starts from the main loop at once.
 *
 * Returns: %TRUE if a retry was waiting
 */
gboolean
kaged_retry_scheduler_retry_now (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), FALSE);

  if (!state_is_waiting (self->state))
    return FALSE;

  g_object_freeze_notify (G_OBJECT (self));
  fire (self);
  g_object_thaw_notify (G_OBJECT (self));

  return TRUE;
}

/**
 * kaged_retry_scheduler_cancel:
 *
 * Cancels the retry. While waiting the timer stops; while the retry is
 * being dispatched or runs, that run is cancelled through the dispatcher.
 * No run is started by this scheduler after it returns, until a newer run
 * of the session finishes.
 *
 * Returns: %TRUE if there was something to cancel
 */
gboolean
kaged_retry_scheduler_cancel (KagedRetryScheduler *self)
{
  gint64 run_id = 0;

  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), FALSE);

  switch (self->state)
    {
    case KAGED_RETRY_SCHEDULER_STATE_IDLE:
    case KAGED_RETRY_SCHEDULER_STATE_CANCELLED:
      return FALSE;

    case KAGED_RETRY_SCHEDULER_STATE_WATCHING:
      run_id = self->run_id;
      break;

    case KAGED_RETRY_SCHEDULER_STATE_ARMED:
    case KAGED_RETRY_SCHEDULER_STATE_SCHEDULED:
    case KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK:
    case KAGED_RETRY_SCHEDULER_STATE_DISPATCHING:
    default:
      break;
    }

  g_object_freeze_notify (G_OBJECT (self));

  enter_cancelled (self);
  persist (self);

  /* After the state changed, so a synchronous "run cancelled" finds the
   * scheduler already cancelled. */
  if (run_id > 0 && self->dispatcher != NULL)
    {
      g_autoptr(GError) error = NULL;

      if (!kaged_retry_dispatcher_cancel_run (self->dispatcher, self->session_id, run_id, &error))
        g_debug ("Could not cancel run %" G_GINT64_FORMAT ": %s", run_id, error->message);
    }

  g_object_thaw_notify (G_OBJECT (self));

  return TRUE;
}

/**
 * kaged_retry_scheduler_restore:
 * @snapshot: a state saved by an earlier scheduler of the same session
 *
 * Takes up a persisted state: an armed retry whose time has passed fires
 * promptly, one still ahead counts down what is left, a scheduled one keeps
 * its time, a cancelled one stays cancelled. A retry that was under way
 * when the program stopped is over (the engine records that run as
 * interrupted).
 */
void
kaged_retry_scheduler_restore (KagedRetryScheduler      *self,
                               const KagedRetrySnapshot *snapshot)
{
  g_return_if_fail (KAGED_IS_RETRY_SCHEDULER (self));
  g_return_if_fail (snapshot != NULL);

  g_object_freeze_notify (G_OBJECT (self));

  stop_pending (self);
  self->latest_run_id = MAX (self->latest_run_id, snapshot->run_id);

  switch (snapshot->state)
    {
    case KAGED_RETRY_SCHEDULER_STATE_ARMED:
    case KAGED_RETRY_SCHEDULER_STATE_SCHEDULED:
    case KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK:
    case KAGED_RETRY_SCHEDULER_STATE_DISPATCHING:
    case KAGED_RETRY_SCHEDULER_STATE_CANCELLED:
      set_uint (self, &self->attempt, MAX (snapshot->attempt, 1), PROP_ATTEMPT);
      set_int64 (self, &self->anchor_id, snapshot->anchor_id, PROP_ANCHOR_ID);
      set_retry_class (self, snapshot->retry_class <= KAGED_RETRY_CLASS_INTERRUPTED
                               ? snapshot->retry_class : KAGED_RETRY_CLASS_NONE);
      set_uint (self, &self->http_status, snapshot->http_status, PROP_HTTP_STATUS);
      set_string (self, &self->wait_source, snapshot->wait_source, PROP_WAIT_SOURCE);
      self->retry_after_until = snapshot->retry_after_until;
      set_int64 (self, &self->advised_wait_ms, snapshot->advised_wait_ms, PROP_ADVISED_WAIT_MS);
    
      if (snapshot->state == KAGED_RETRY_SCHEDULER_STATE_CANCELLED)
        {
          set_int64 (self, &self->next_eligible_time, snapshot->next_eligible_time,
                     PROP_NEXT_ELIGIBLE_TIME);
          enter_cancelled (self);
        }
      else if (snapshot->state == KAGED_RETRY_SCHEDULER_STATE_DISPATCHING)
        {
          /* Stopped between the end of the wait and the engine: due now. */
          enter_wait (self, kaged_clock_get_wall_ms (self->clock));
        }
      else
        {
          enter_wait (self, snapshot->next_eligible_time);
        }
      break;

    case KAGED_RETRY_SCHEDULER_STATE_IDLE:
    case KAGED_RETRY_SCHEDULER_STATE_WATCHING:
    default:
      enter_idle (self);
      break;
    }

  persist (self);

  g_object_thaw_notify (G_OBJECT (self));
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

/* --- private --------------------------------------------------------------- */

guint64
_kaged_retry_scheduler_get_generation (KagedRetryScheduler *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (self), 0);

  return self->generation;
}

void
_kaged_retry_scheduler_expire (KagedRetryScheduler *self,
                               guint64              generation)
{
  gint64 now;

  g_return_if_fail (KAGED_IS_RETRY_SCHEDULER (self));

  if (generation != self->generation)
    {
      g_debug ("Session %" G_GINT64_FORMAT ": a stale retry timer was dropped", self->session_id);
      return;
    }

  switch (self->state)
    {
    case KAGED_RETRY_SCHEDULER_STATE_ARMED:
      break;

    case KAGED_RETRY_SCHEDULER_STATE_SCHEDULED:
      now = kaged_clock_get_wall_ms (self->clock);
      if (now < self->next_eligible_time)
        {
          /* Not yet by the wall clock: look again later. The day may have
           * changed ("tomorrow" becomes today). */
                  kaged_clock_clear_source (&self->deadline_source);
          self->deadline_source = attach_timeout (self,
                                                  MIN (self->next_eligible_time - now,
                                                       SCHEDULED_RECHECK_MS),
                                                  deadline_cb, "[kaged] scheduled retry");
          return;
        }
      break;

    case KAGED_RETRY_SCHEDULER_STATE_IDLE:
    case KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK:
    case KAGED_RETRY_SCHEDULER_STATE_DISPATCHING:
    case KAGED_RETRY_SCHEDULER_STATE_WATCHING:
    case KAGED_RETRY_SCHEDULER_STATE_CANCELLED:
    default:
      return;
    }

  g_object_freeze_notify (G_OBJECT (self));
  fire (self);
  g_object_thaw_notify (G_OBJECT (self));
}

