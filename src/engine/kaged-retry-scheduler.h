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

/*
 * KagedRetryScheduler: the Tier 2 retry of one session (DESIGN.md §6), as
 * data. Nothing here is a sentence: src/ui/kaged-retry-text.h puts the
 * data in words for the banner and the notifications.
 *
 * Reading: kaged_retry_scheduler_dup_snapshot() gives the whole state at
 * once — for the HTTP API's `retry` object: the state's nick (`idle`,
 * `armed`, `scheduled`, `waiting-for-network`, `dispatching`, `watching`,
 * `cancelled`), attempt, next_eligible_time (`next_at`, epoch ms, 0 for
 * none), retry_class, http_status, wait_source, anchor_id and retry_run_id.
 * Each field also has a getter and a property.
 *
 * Following: ::changed is emitted once after every transition, with every
 * field in place (the `retry.changed` event); notify::remaining-seconds
 * ticks once a second while armed.
 *
 * Acting: kaged_retry_scheduler_retry_now() and kaged_retry_scheduler_cancel()
 * (the operator's Retry Now and Cancel, from any view); the coordinator
 * feeds run_finished() and operator_posted(). Everything runs on the main
 * context the scheduler was created on.
 */

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
gint64                    kaged_retry_scheduler_get_advised_wait_ms     (KagedRetryScheduler      *self);
KagedClock               *kaged_retry_scheduler_get_clock               (KagedRetryScheduler      *self);
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

G_END_DECLS
