/* kaged-clock.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define KAGED_TYPE_CLOCK (kaged_clock_get_type ())

G_DECLARE_DERIVABLE_TYPE (KagedClock, kaged_clock, KAGED, CLOCK, GObject)

/**
 * KagedClockClass:
 * @get_monotonic: monotonic time in microseconds
 * @get_wall: wall-clock time in microseconds since the epoch
 * @timeout_source_new: a #GSource that dispatches once @delay_ms of this
 *   clock's monotonic time have passed
 *
 * Time reaches the engine and the tier-1 retry only through a clock, so
 * tests can run a 300-second backoff in microseconds with #KagedFakeClock.
 */
struct _KagedClockClass
{
  GObjectClass parent_class;

  gint64   (*get_monotonic)      (KagedClock *self);
  gint64   (*get_wall)           (KagedClock *self);
  GSource *(*timeout_source_new) (KagedClock *self,
                                  guint64     delay_ms);
};

KagedClock *kaged_clock_new                (void);
KagedClock *kaged_clock_get_default        (void);
gint64      kaged_clock_get_monotonic      (KagedClock          *self);
gint64      kaged_clock_get_wall           (KagedClock          *self);
gint64      kaged_clock_get_wall_ms        (KagedClock          *self);
GSource    *kaged_clock_timeout_source_new (KagedClock          *self,
                                            guint64              delay_ms);
guint       kaged_clock_timeout_add        (KagedClock          *self,
                                            guint64              delay_ms,
                                            GSourceFunc          func,
                                            gpointer             user_data,
                                            GDestroyNotify       notify);
GSource    *kaged_clock_attach_timeout     (KagedClock          *self,
                                            GMainContext        *context,
                                            guint64              delay_ms,
                                            GSourceFunc          func,
                                            gpointer             user_data,
                                            GDestroyNotify       notify,
                                            const char          *name);
void        kaged_clock_clear_source       (GSource            **source);
void        kaged_clock_sleep_async        (KagedClock          *self,
                                            guint64              delay_ms,
                                            GCancellable        *cancellable,
                                            GAsyncReadyCallback  callback,
                                            gpointer             user_data);
gboolean    kaged_clock_sleep_finish       (KagedClock          *self,
                                            GAsyncResult        *result,
                                            GError             **error);

#define KAGED_TYPE_FAKE_CLOCK (kaged_fake_clock_get_type ())

G_DECLARE_FINAL_TYPE (KagedFakeClock, kaged_fake_clock, KAGED, FAKE_CLOCK, KagedClock)

KagedClock *kaged_fake_clock_new           (gint64          wall_ms);
void        kaged_fake_clock_advance       (KagedFakeClock *self,
                                            guint64         ms);
void        kaged_fake_clock_set_wall_ms   (KagedFakeClock *self,
                                            gint64          wall_ms);
guint64     kaged_fake_clock_next_deadline (KagedFakeClock *self);
guint       kaged_fake_clock_get_n_pending (KagedFakeClock *self);

G_END_DECLS
