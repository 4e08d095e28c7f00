/* kaged-services.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-api-server.h"
#include "kaged-retry-coordinator.h"
#include "kaged-session-manager.h"

G_BEGIN_DECLS

#define KAGED_TYPE_SERVICES (kaged_services_get_type ())

G_DECLARE_FINAL_TYPE (KagedServices, kaged_services, KAGED, SERVICES, GObject)

/*
 * KagedServices is what runs behind the window of the running application:
 * the session manager on the store, its model resolved from the
 * preferences (and again whenever they change), the Tier 2 retries and
 * their notifications, and the local HTTP API while the `api-enabled`
 * preference is on. It adds the application actions `app.retry-now`,
 * `app.cancel-retry` and `app.show-session` (target: a session id, int64).
 *
 * Properties: api-url (the address the API listens on, or NULL),
 *             api-error (why it could not be switched on, or NULL).
 * Signals:    ::show-session (gint64 session_id)
 */
KagedServices         *kaged_services_new             (GApplication  *application,
                                                       GSettings     *settings,
                                                       KagedStore    *store);
KagedSessionManager   *kaged_services_get_manager     (KagedServices *self);
KagedRetryCoordinator *kaged_services_get_coordinator (KagedServices *self);
const char            *kaged_services_get_api_url     (KagedServices *self);
const char            *kaged_services_get_api_error   (KagedServices *self);
void                   kaged_services_shutdown        (KagedServices *self);

G_END_DECLS
