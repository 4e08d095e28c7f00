/* kaged-test-notifications.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* What the desktop's notification server was asked: a notification @id
 * sent (@notification, GNotification's a{sv}) or, with @notification
 * %NULL, withdrawn. */
typedef struct
{
  char     *id;
  GVariant *notification;
} TestNotificationEvent;

/* org.gtk.Notifications on a session bus, as GNOME Shell serves it: it
 * records what it is asked, in order. */
typedef struct _TestNotificationServer TestNotificationServer;

TestNotificationServer *test_notification_server_new        (GDBusConnection        *connection,
                                                             const char             *app_id);
GPtrArray              *test_notification_server_get_events (TestNotificationServer *self);
void                    test_notification_server_wait       (TestNotificationServer *self,
                                                             guint                   n_events);
void                    test_notification_server_free       (TestNotificationServer *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TestNotificationServer, test_notification_server_free)

G_END_DECLS
