/* kaged-retry-scheduler.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-clock.h"
#include "kaged-enums.h"
#include "kaged-retry-dispatcher.h"
#include "kaged-retry-snapshot.h"
#include "kaged-retry-state-store.h"
#include "kaged-run.h"

G_BEGIN_DECLS

/* The countdown for consecutive attempt k is min (MAX, BASE × 2^(k-1)). */
#define KAGED_RETRY_SCHEDULER_BASE_DELAY_MS ((gint64)2000)
#define KAGED_RETRY_SCHEDULER_MAX_DELAY_MS  ((gint64)300000)

#define KAGED_TYPE_RETRY_SCHEDULER (kaged_retry_scheduler_get_type ())

G_DECLARE_FINAL_TYPE (KagedRetryScheduler, kaged_retry_scheduler, KAGED, RETRY_SCHEDULER, GObject)

KagedRetryScheduler      *kaged_retry_scheduler_new                     (gint64                    session_id,
                                                                         KagedRetryDispatcher     *dispatcher,
                                                                         KagedRetryStateStore     *state_store,
                                                                         KagedClock               *clock,
                                                                         GNetworkMonitor          *network_monitor);
gint64                    kaged_retry_scheduler_get_session_id          (KagedRetryScheduler      *self);
KagedRetrySchedulerState  kaged_retry_scheduler_get_state               (KagedRetryScheduler      *self);
gboolean                  kaged_retry_scheduler_is_pending              (KagedRetryScheduler      *self);
guint                     kaged_retry_scheduler_get_attempt             (KagedRetryScheduler      *self);
gint64                    kaged_retry_scheduler_get_remaining_seconds   (KagedRetryScheduler      *self);
gint64                    kaged_retry_scheduler_get_next_eligible_time  (KagedRetryScheduler      *self);
gint64                    kaged_retry_scheduler_get_anchor_id           (KagedRetryScheduler      *self);
gint64                    kaged_retry_scheduler_get_run_id              (KagedRetryScheduler      *self);
KagedRetryClass           kaged_retry_scheduler_get_retry_class         (KagedRetryScheduler      *self);
guint                     kaged_retry_scheduler_get_http_status         (KagedRetryScheduler      *self);
const char               *kaged_retry_scheduler_get_wait_source         (KagedRetryScheduler      *self);
const char               *kaged_retry_scheduler_get_reason              (KagedRetryScheduler      *self);
const char               *kaged_retry_scheduler_get_scheduled_label     (KagedRetryScheduler      *self);
gboolean                  kaged_retry_scheduler_get_network_available   (KagedRetryScheduler      *self);
void                      kaged_retry_scheduler_set_network_available   (KagedRetryScheduler      *self,
                                                                         gboolean                  network_available);
void                      kaged_retry_scheduler_run_finished            (KagedRetryScheduler      *self,
                                                                         KagedRun                 *run);
void                      kaged_retry_scheduler_operator_posted         (KagedRetryScheduler      *self);
gboolean                  kaged_retry_scheduler_retry_now               (KagedRetryScheduler      *self);
gboolean                  kaged_retry_scheduler_cancel                  (KagedRetryScheduler      *self);
void                      kaged_retry_scheduler_restore                 (KagedRetryScheduler      *self,
                                                                         const KagedRetrySnapshot *snapshot);
KagedRetrySnapshot       *kaged_retry_scheduler_dup_snapshot            (KagedRetryScheduler      *self);

gint64                    kaged_retry_scheduler_delay_for_attempt       (guint                     attempt);
char                     *kaged_retry_format_duration                   (gint64                    seconds);
char                     *kaged_retry_format_retry_after                (gint64                    when_ms,
                                                                         gint64                    now_ms,
                                                                         gboolean                  use_12h);
const char               *kaged_retry_describe_wait_source              (const char               *wait_source);

G_END_DECLS
