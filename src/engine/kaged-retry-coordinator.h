/* kaged-retry-coordinator.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-retry-scheduler.h"
#include "kaged-session-manager.h"

G_BEGIN_DECLS

#define KAGED_TYPE_RETRY_COORDINATOR (kaged_retry_coordinator_get_type ())

G_DECLARE_FINAL_TYPE (KagedRetryCoordinator, kaged_retry_coordinator, KAGED, RETRY_COORDINATOR, GObject)

/*
 * KagedRetryCoordinator gives every session its Tier 2 scheduler and feeds
 * it from the session manager: every post or regenerate of a session,
 * whoever called the manager (its ::operator-request), stands a pending
 * retry down before it changes anything; every end of a run has the session checked against DESIGN.md §6
 * (kaged_retry_policy_check()) from the main loop. Schedulers whose state
 * was saved are created at once, so an armed or scheduled retry resumes
 * when the program starts again.
 *
 * Signals:
 *   ::scheduler-added (KagedRetryScheduler *scheduler)
 */
KagedRetryCoordinator *kaged_retry_coordinator_new             (KagedSessionManager   *manager,
                                                                KagedClock            *clock,
                                                                GNetworkMonitor       *network_monitor);
KagedRetryScheduler   *kaged_retry_coordinator_get_scheduler   (KagedRetryCoordinator *self,
                                                                gint64                 session_id);
KagedRetryScheduler   *kaged_retry_coordinator_lookup_scheduler (KagedRetryCoordinator *self,
                                                                gint64                 session_id);
GPtrArray             *kaged_retry_coordinator_list_schedulers (KagedRetryCoordinator *self);

G_END_DECLS
