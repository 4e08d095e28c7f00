/* kaged-retry-scheduler-machine.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry-scheduler"

#include "config.h"

#include "kaged-enum-types.h"
#include "kaged-retry-class.h"
#include "kaged-retry-policy.h"
#include "kaged-retry-scheduler-internal.h"

/*
 * The Tier 2 state machine: arming from a settled run, the countdown and
 * the scheduled wait on the scheduler's clock, the network pause, the
 * dispatch through the dispatcher, cancel, and taking up a saved state.
 * Every change of a field goes through a setter that notifies; the object
 * (kaged-retry-scheduler.c) turns a batch of them into one ::changed.
 */

/* A scheduled wait is checked against wall time at least this often, so a
 * machine that slept through it still retries at the announced time. */
#define SCHEDULED_RECHECK_MS ((gint64)60000)

typedef struct
{
  KagedRetryScheduler *self;
  guint64              generation;
} TimerData;

gboolean
_kaged_retry_scheduler_state_is_pending (KagedRetrySchedulerState state)
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

  was_pending = _kaged_retry_scheduler_state_is_pending (self->state);
  g_debug ("Session %" G_GINT64_FORMAT ": %s → %s", self->session_id,
           kaged_enum_to_nick (KAGED_TYPE_RETRY_SCHEDULER_STATE, self->state),
           kaged_enum_to_nick (KAGED_TYPE_RETRY_SCHEDULER_STATE, state));
  self->state = state;
  _kaged_retry_scheduler_notify (self, PROP_STATE);

  if (was_pending != _kaged_retry_scheduler_state_is_pending (state))
    _kaged_retry_scheduler_notify (self, PROP_PENDING);
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
  _kaged_retry_scheduler_notify (self, prop_id);
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
  _kaged_retry_scheduler_notify (self, prop_id);
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
  _kaged_retry_scheduler_notify (self, prop_id);
}

static void
set_retry_class (KagedRetryScheduler *self,
                 KagedRetryClass      retry_class)
{
  if (self->retry_class == retry_class)
    return;

  self->retry_class = retry_class;
  _kaged_retry_scheduler_notify (self, PROP_RETRY_CLASS);
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
void
_kaged_retry_scheduler_stop_pending (KagedRetryScheduler *self)
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
  _kaged_retry_scheduler_stop_pending (self);

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

  _kaged_retry_scheduler_stop_pending (self);
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
  _kaged_retry_scheduler_stop_pending (self);
  set_state (self, KAGED_RETRY_SCHEDULER_STATE_CANCELLED);
  set_int64 (self, &self->remaining_seconds, 0, PROP_REMAINING_SECONDS);
}

static void handle_finished (KagedRetryScheduler *self,
                             KagedRun            *run,
                             gboolean             consecutive);

static void
dispatch (KagedRetryScheduler *self)
{
  g_autoptr(KagedRetryScheduler) hold G_GNUC_UNUSED = g_object_ref (self);
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

  _kaged_retry_scheduler_stop_pending (self);
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
  _kaged_retry_scheduler_notify (self, PROP_NETWORK_AVAILABLE);

  if (!network_available && state_is_waiting (self->state) && class_needs_network (self->retry_class))
    {
      gint64 remaining = self->state == KAGED_RETRY_SCHEDULER_STATE_ARMED
                           ? (remaining_ms (self) + 999) / 1000
                           : self->remaining_seconds;

      _kaged_retry_scheduler_stop_pending (self);
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

  _kaged_retry_scheduler_stop_pending (self);
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
