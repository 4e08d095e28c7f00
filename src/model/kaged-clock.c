/* kaged-clock.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-clock"

#include "config.h"

#include "kaged-clock.h"

G_DEFINE_TYPE (KagedClock, kaged_clock, G_TYPE_OBJECT)

static gint64
kaged_clock_real_get_monotonic (KagedClock *self)
{
  return g_get_monotonic_time ();
}

static gint64
kaged_clock_real_get_wall (KagedClock *self)
{
  return g_get_real_time ();
}

static GSource *
kaged_clock_real_timeout_source_new (KagedClock *self,
                                     guint64     delay_ms)
{
  return g_timeout_source_new (MIN (delay_ms, G_MAXUINT));
}

static void
kaged_clock_class_init (KagedClockClass *klass)
{
  klass->get_monotonic = kaged_clock_real_get_monotonic;
  klass->get_wall = kaged_clock_real_get_wall;
  klass->timeout_source_new = kaged_clock_real_timeout_source_new;
}

static void
kaged_clock_init (KagedClock *self)
{
}

/**
 * kaged_clock_new:
 *
 * Returns: (transfer full): a clock that reads the system's time
 */
KagedClock *
kaged_clock_new (void)
{
  return g_object_new (KAGED_TYPE_CLOCK, NULL);
}

/**
 * kaged_clock_get_default:
 *
 * Returns: (transfer none): the process-wide system clock
 */
KagedClock *
kaged_clock_get_default (void)
{
  static KagedClock *instance;

  if (g_once_init_enter (&instance))
    g_once_init_leave (&instance, kaged_clock_new ());

  return instance;
}

gint64
kaged_clock_get_monotonic (KagedClock *self)
{
  g_return_val_if_fail (KAGED_IS_CLOCK (self), 0);

  return KAGED_CLOCK_GET_CLASS (self)->get_monotonic (self);
}

gint64
kaged_clock_get_wall (KagedClock *self)
{
  g_return_val_if_fail (KAGED_IS_CLOCK (self), 0);

  return KAGED_CLOCK_GET_CLASS (self)->get_wall (self);
}

/**
 * kaged_clock_get_wall_ms:
 *
 * Returns: wall-clock time in epoch milliseconds, the unit stored and sent
 */
gint64
kaged_clock_get_wall_ms (KagedClock *self)
{
  return kaged_clock_get_wall (self) / 1000;
}

/**
 * kaged_clock_timeout_source_new:
 *
 * Returns: (transfer full): a source that fires once after @delay_ms
 */
GSource *
kaged_clock_timeout_source_new (KagedClock *self,
                                guint64     delay_ms)
{
  g_return_val_if_fail (KAGED_IS_CLOCK (self), NULL);

  return KAGED_CLOCK_GET_CLASS (self)->timeout_source_new (self, delay_ms);
}

/**
 * kaged_clock_timeout_add:
 *
 * Like g_timeout_add_full() on the thread-default main context, but in
 * this clock's time. @func is called until it returns %G_SOURCE_REMOVE;
 * callers wanting one shot return that.
 *
 * Returns: the source id, for g_clear_handle_id()
 */
guint
kaged_clock_timeout_add (KagedClock     *self,
                         guint64         delay_ms,
                         GSourceFunc     func,
                         gpointer        user_data,
                         GDestroyNotify  notify)
{
  g_autoptr(GSource) source = NULL;

  g_return_val_if_fail (KAGED_IS_CLOCK (self), 0);
  g_return_val_if_fail (func != NULL, 0);

  source = kaged_clock_timeout_source_new (self, delay_ms);
  g_source_set_callback (source, func, user_data, notify);
  g_source_set_static_name (source, "[kaged] clock timeout");

  return g_source_attach (source, g_main_context_get_thread_default ());
}

/**
 * kaged_clock_attach_timeout:
 * @context: (nullable): where to run, or %NULL for the thread-default context
 * @name: a static name for the source, for profilers
 *
 * Like kaged_clock_timeout_add(), but keeps the source: the caller stops it
 * with kaged_clock_clear_source(), whatever context it runs on.
 *
 * Returns: (transfer full): the attached source
 */
GSource *
kaged_clock_attach_timeout (KagedClock     *self,
                            GMainContext   *context,
                            guint64         delay_ms,
                            GSourceFunc     func,
                            gpointer        user_data,
                            GDestroyNotify  notify,
                            const char     *name)
{
  GSource *source;

  g_return_val_if_fail (KAGED_IS_CLOCK (self), NULL);
  g_return_val_if_fail (func != NULL, NULL);

  source = kaged_clock_timeout_source_new (self, delay_ms);
  g_source_set_callback (source, func, user_data, notify);
  g_source_set_static_name (source, name);
  g_source_attach (source, context != NULL ? context : g_main_context_get_thread_default ());

  return source;
}

/**
 * kaged_clock_clear_source:
 * @source: (inout) (nullable): a source from kaged_clock_attach_timeout()
 *
 * Stops the source, if any, drops the reference and sets it to %NULL.
 */
void
kaged_clock_clear_source (GSource **source)
{
  g_return_if_fail (source != NULL);

  if (*source == NULL)
    return;

  g_source_destroy (*source);
  g_clear_pointer (source, g_source_unref);
}

typedef struct
{
  GSource      *source;
  gulong        cancelled_id;
  GCancellable *cancellable;
} SleepState;

static void
sleep_state_free (SleepState *state)
{
  if (state->cancelled_id != 0)
    g_cancellable_disconnect (state->cancellable, state->cancelled_id);
  if (state->source != NULL)
    {
      g_source_destroy (state->source);
      g_clear_pointer (&state->source, g_source_unref);
    }
  g_clear_object (&state->cancellable);
  g_free (state);
}

static gboolean
sleep_done_cb (gpointer user_data)
{
  GTask *task = user_data;
  SleepState *state = g_task_get_task_data (task);

  g_cancellable_disconnect (state->cancellable, state->cancelled_id);
  state->cancelled_id = 0;
  g_clear_pointer (&state->source, g_source_unref);

  if (!g_task_return_error_if_cancelled (task))
    g_task_return_boolean (task, TRUE);

  return G_SOURCE_REMOVE;
}

static gboolean
sleep_cancelled_idle_cb (gpointer user_data)
{
  GTask *task = user_data;
  SleepState *state = g_task_get_task_data (task);

  if (state->source == NULL)
    return G_SOURCE_REMOVE;

  g_source_destroy (state->source);
  g_clear_pointer (&state->source, g_source_unref);
  g_task_return_error_if_cancelled (task);

  return G_SOURCE_REMOVE;
}

static void
sleep_cancelled_cb (GCancellable *cancellable,
                    gpointer      user_data)
{
  GTask *task = user_data;
  g_autoptr(GSource) idle = g_idle_source_new ();

  /* May run on any thread: complete the task from its own context. */
  g_source_set_priority (idle, G_PRIORITY_HIGH);
  g_source_set_callback (idle, sleep_cancelled_idle_cb, g_object_ref (task), g_object_unref);
  g_source_set_static_name (idle, "[kaged] sleep cancelled");
  g_source_attach (idle, g_task_get_context (task));
}

/**
 * kaged_clock_sleep_async:
 *
 * Waits @delay_ms in this clock's time. Cancelling @cancellable ends the
 * sleep at once with %G_IO_ERROR_CANCELLED.
 */
void
kaged_clock_sleep_async (KagedClock          *self,
                         guint64              delay_ms,
                         GCancellable        *cancellable,
                         GAsyncReadyCallback  callback,
                         gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  SleepState *state;

  g_return_if_fail (KAGED_IS_CLOCK (self));
  g_return_if_fail (!cancellable || G_IS_CANCELLABLE (cancellable));

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_clock_sleep_async);

  if (g_task_return_error_if_cancelled (task))
    return;

  state = g_new0 (SleepState, 1);
  state->cancellable = cancellable ? g_object_ref (cancellable) : NULL;
  g_task_set_task_data (task, state, (GDestroyNotify)sleep_state_free);

  state->source = kaged_clock_timeout_source_new (self, delay_ms);
  g_source_set_callback (state->source, sleep_done_cb, g_object_ref (task), g_object_unref);
  g_source_set_static_name (state->source, "[kaged] clock sleep");
  g_source_attach (state->source, g_task_get_context (task));

  if (cancellable != NULL)
    state->cancelled_id = g_cancellable_connect (cancellable,
                                                 G_CALLBACK (sleep_cancelled_cb),
                                                 task, NULL);
}

gboolean
kaged_clock_sleep_finish (KagedClock    *self,
                          GAsyncResult  *result,
                          GError       **error)
{
  g_return_val_if_fail (KAGED_IS_CLOCK (self), FALSE);
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

/* ------------------------------------------------------------------------ */

/**
 * KagedFakeClock:
 *
 * A clock for tests: time moves only when kaged_fake_clock_advance() is
 * called, and timeouts created from it fire then, in deadline order.
 */
struct _KagedFakeClock
{
  KagedClock  parent_instance;
  gint64      monotonic_us;
  gint64      wall_us;
  GPtrArray  *sources;
};

G_DEFINE_FINAL_TYPE (KagedFakeClock, kaged_fake_clock, KAGED_TYPE_CLOCK)

typedef struct
{
  GSource         source;
  KagedFakeClock *clock;    /* weak: cleared when the clock goes */
  gint64          deadline; /* fake monotonic µs */
  gint64          interval; /* µs */
} FakeSource;

static gboolean
fake_source_prepare (GSource *source,
                     int     *timeout)
{
  FakeSource *fs = (FakeSource *)source;

  *timeout = -1;
  return fs->clock != NULL && fs->clock->monotonic_us >= fs->deadline;
}

static gboolean
fake_source_check (GSource *source)
{
  FakeSource *fs = (FakeSource *)source;

  return fs->clock != NULL && fs->clock->monotonic_us >= fs->deadline;
}

static gboolean
fake_source_dispatch (GSource     *source,
                      GSourceFunc  callback,
                      gpointer     user_data)
{
  FakeSource *fs = (FakeSource *)source;
  gboolean ret;

  if (callback == NULL)
    return G_SOURCE_REMOVE;

  ret = callback (user_data);

  /* A repeating source re-arms one interval later, like g_timeout. */
  if (ret == G_SOURCE_CONTINUE && fs->clock != NULL)
    fs->deadline = fs->clock->monotonic_us + fs->interval;

  return ret;
}

static void
fake_source_finalize (GSource *source)
{
  FakeSource *fs = (FakeSource *)source;

  if (fs->clock != NULL)
    g_ptr_array_remove_fast (fs->clock->sources, fs);
}

static GSourceFuncs fake_source_funcs = {
  fake_source_prepare,
  fake_source_check,
  fake_source_dispatch,
  fake_source_finalize,
  NULL, NULL,
};

static gint64
kaged_fake_clock_get_monotonic (KagedClock *clock)
{
  return KAGED_FAKE_CLOCK (clock)->monotonic_us;
}

static gint64
kaged_fake_clock_get_wall (KagedClock *clock)
{
  return KAGED_FAKE_CLOCK (clock)->wall_us;
}

static GSource *
kaged_fake_clock_timeout_source_new (KagedClock *clock,
                                     guint64     delay_ms)
{
  KagedFakeClock *self = KAGED_FAKE_CLOCK (clock);
  FakeSource *fs;

  fs = (FakeSource *)g_source_new (&fake_source_funcs, sizeof (FakeSource));
  fs->clock = self;
  fs->interval = (gint64)delay_ms * 1000;
  fs->deadline = self->monotonic_us + fs->interval;
  g_ptr_array_add (self->sources, fs);

  return (GSource *)fs;
}

static void
kaged_fake_clock_finalize (GObject *object)
{
  KagedFakeClock *self = (KagedFakeClock *)object;

  for (guint i = 0; i < self->sources->len; i++)
    ((FakeSource *)g_ptr_array_index (self->sources, i))->clock = NULL;
  g_clear_pointer (&self->sources, g_ptr_array_unref);

  G_OBJECT_CLASS (kaged_fake_clock_parent_class)->finalize (object);
}

static void
kaged_fake_clock_class_init (KagedFakeClockClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  KagedClockClass *clock_class = KAGED_CLOCK_CLASS (klass);

  object_class->finalize = kaged_fake_clock_finalize;

  clock_class->get_monotonic = kaged_fake_clock_get_monotonic;
  clock_class->get_wall = kaged_fake_clock_get_wall;
  clock_class->timeout_source_new = kaged_fake_clock_timeout_source_new;
}

static void
kaged_fake_clock_init (KagedFakeClock *self)
{
  self->sources = g_ptr_array_new ();
  self->monotonic_us = G_USEC_PER_SEC;
}

/**
 * kaged_fake_clock_new:
 * @wall_ms: the wall-clock time to start at, epoch milliseconds
 *
 * Returns: (transfer full): a clock that only moves when told to
 */
KagedClock *
kaged_fake_clock_new (gint64 wall_ms)
{
  KagedFakeClock *self = g_object_new (KAGED_TYPE_FAKE_CLOCK, NULL);

  self->wall_us = wall_ms * 1000;

  return KAGED_CLOCK (self);
}

/**
 * kaged_fake_clock_advance:
 *
 * Moves monotonic and wall time forward by @ms and wakes the main contexts
 * of the sources now due. The caller iterates its main context to let them
 * dispatch.
 */
void
kaged_fake_clock_advance (KagedFakeClock *self,
                          guint64         ms)
{
  g_return_if_fail (KAGED_IS_FAKE_CLOCK (self));

  self->monotonic_us += (gint64)ms * 1000;
  self->wall_us += (gint64)ms * 1000;

  for (guint i = 0; i < self->sources->len; i++)
    {
      GSource *source = g_ptr_array_index (self->sources, i);
      GMainContext *context = g_source_get_context (source);

      if (context != NULL)
        g_main_context_wakeup (context);
    }
}

/**
 * kaged_fake_clock_set_wall_ms:
 *
 * Sets wall-clock time alone, as when the system clock is changed or the
 * program starts again later; monotonic time and timeouts are untouched.
 */
void
kaged_fake_clock_set_wall_ms (KagedFakeClock *self,
                              gint64          wall_ms)
{
  g_return_if_fail (KAGED_IS_FAKE_CLOCK (self));

  self->wall_us = wall_ms * 1000;
}

/**
 * kaged_fake_clock_next_deadline:
 *
 * Returns: milliseconds until the earliest attached, undispatched timeout,
 *   or %G_MAXUINT64 when none is pending
 */
guint64
kaged_fake_clock_next_deadline (KagedFakeClock *self)
{
  gint64 best = G_MAXINT64;

  g_return_val_if_fail (KAGED_IS_FAKE_CLOCK (self), G_MAXUINT64);

  for (guint i = 0; i < self->sources->len; i++)
    {
      FakeSource *fs = g_ptr_array_index (self->sources, i);

      if (g_source_is_destroyed ((GSource *)fs) || g_source_get_context ((GSource *)fs) == NULL)
        continue;
      best = MIN (best, fs->deadline);
    }

  if (best == G_MAXINT64)
    return G_MAXUINT64;

  return best <= self->monotonic_us ? 0 : (guint64)(best - self->monotonic_us + 999) / 1000;
}

/**
 * kaged_fake_clock_get_n_pending:
 *
 * Returns: how many attached timeouts have not fired or been destroyed
 */
guint
kaged_fake_clock_get_n_pending (KagedFakeClock *self)
{
  guint n = 0;

  g_return_val_if_fail (KAGED_IS_FAKE_CLOCK (self), 0);

  for (guint i = 0; i < self->sources->len; i++)
    {
      GSource *source = g_ptr_array_index (self->sources, i);

      if (!g_source_is_destroyed (source) && g_source_get_context (source) != NULL)
        n++;
    }

  return n;
}
