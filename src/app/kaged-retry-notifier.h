/* kaged-retry-notifier.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-retry-coordinator.h"

G_BEGIN_DECLS

#define KAGED_TYPE_RETRY_NOTIFIER (kaged_retry_notifier_get_type ())

G_DECLARE_FINAL_TYPE (KagedRetryNotifier, kaged_retry_notifier, KAGED, RETRY_NOTIFIER, GObject)

/*
 * KagedRetryNotifier tells the desktop about Tier 2 retries: when a retry
 * is scheduled for later (with *Retry Now* and *Cancel Retry*), that it
 * went out (with *Cancel Retry*, which cancels the run), and, while no
 * window of the application has the focus, when a retry ends with a reply
 * or gives up. The notification of a retry is withdrawn as soon as the
 * retry resolves or is cancelled.
 *
 * The buttons activate the application actions `app.retry-now` and
 * `app.cancel-retry`, and clicking the notification `app.show-session`,
 * each with the session id (int64) as target.
 */
KagedRetryNotifier *kaged_retry_notifier_new             (GApplication          *application,
                                                          KagedRetryCoordinator *coordinator,
                                                          KagedSessionManager   *manager);
char               *kaged_retry_notifier_dup_id          (gint64                 session_id);
char               *kaged_retry_notifier_dup_result_id   (gint64                 session_id);

G_END_DECLS
