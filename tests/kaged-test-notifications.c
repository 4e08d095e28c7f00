/* kaged-test-notifications.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A notification server for tests: GApplication sends through
 * org.gtk.Notifications when a name owns it on the session bus.
 */

#include "config.h"

#include "kaged-test-notifications.h"

struct _TestNotificationServer
{
  GDBusConnection *connection;
  char            *app_id;
  guint            registration;
  guint            owner;
  GPtrArray       *events;
};

static const char notifications_xml[] =
  "<node>"
  "  <interface name='org.gtk.Notifications'>"
  "    <method name='AddNotification'>"
  "      <arg type='s' direction='in'/>"
  "      <arg type='s' direction='in'/>"
  "      <arg type='a{sv}' direction='in'/>"
  "    </method>"
  "    <method name='RemoveNotification'>"
  "      <arg type='s' direction='in'/>"
  "      <arg type='s' direction='in'/>"
  "    </method>"
  "  </interface>"
  "</node>";

static void
event_free (TestNotificationEvent *event)
{
  g_free (event->id);
  g_clear_pointer (&event->notification, g_variant_unref);
  g_free (event);
}

static void
method_call_cb (GDBusConnection       *connection,
                const char            *sender,
                const char            *object_path,
                const char            *interface_name,
                const char            *method_name,
                GVariant              *parameters,
                GDBusMethodInvocation *invocation,
                gpointer               user_data)
{
  TestNotificationServer *self = user_data;
  TestNotificationEvent *event = g_new0 (TestNotificationEvent, 1);
  const char *app_id = NULL;
  const char *id = NULL;

  if (g_str_equal (method_name, "AddNotification"))
    g_variant_get (parameters, "(&s&s@a{sv})", &app_id, &id, &event->notification);
  else
    g_variant_get (parameters, "(&s&s)", &app_id, &id);

  g_assert_cmpstr (app_id, ==, self->app_id);
  event->id = g_strdup (id);
  g_ptr_array_add (self->events, event);

  g_dbus_method_invocation_return_value (invocation, NULL);
}

static const GDBusInterfaceVTable vtable = { method_call_cb, NULL, NULL, { 0 } };

static gboolean
name_owned (GDBusConnection *connection)
{
  g_autoptr(GVariant) reply = NULL;
  gboolean owned = FALSE;

  reply = g_dbus_connection_call_sync (connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "NameHasOwner",
                                       g_variant_new ("(s)", "org.gtk.Notifications"),
                                       G_VARIANT_TYPE ("(b)"), G_DBUS_CALL_FLAGS_NONE, -1,
                                       NULL, NULL);
  if (reply != NULL)
    g_variant_get (reply, "(b)", &owned);

  return owned;
}

/**
 * test_notification_server_new:
 * @connection: the session bus
 * @app_id: the application that is to send, which each call must name
 *
 * Returns: (transfer full): a server that owns org.gtk.Notifications on
 *   @connection by the time this returns
 */
TestNotificationServer *
test_notification_server_new (GDBusConnection *connection,
                              const char      *app_id)
{
  g_autoptr(GDBusNodeInfo) info = g_dbus_node_info_new_for_xml (notifications_xml, NULL);
  g_autoptr(GError) error = NULL;
  TestNotificationServer *self = g_new0 (TestNotificationServer, 1);

  self->connection = g_object_ref (connection);
  self->app_id = g_strdup (app_id);
  self->events = g_ptr_array_new_with_free_func ((GDestroyNotify)event_free);
  self->registration = g_dbus_connection_register_object (connection, "/org/gtk/Notifications",
                                                          info->interfaces[0], &vtable, self,
                                                          NULL, &error);
  g_assert_no_error (error);
  self->owner = g_bus_own_name_on_connection (connection, "org.gtk.Notifications",
                                              G_BUS_NAME_OWNER_FLAGS_NONE,
                                              NULL, NULL, NULL, NULL);
  while (!name_owned (connection))
    g_main_context_iteration (NULL, TRUE);

  return self;
}

/**
 * test_notification_server_get_events:
 *
 * Returns: (transfer none) (element-type TestNotificationEvent): what the
 *   server was asked so far, the first first
 */
GPtrArray *
test_notification_server_get_events (TestNotificationServer *self)
{
  return self->events;
}

/* Runs the main loop until the server has been asked @n_events times. */
void
test_notification_server_wait (TestNotificationServer *self,
                               guint                   n_events)
{
  while (self->events->len < n_events)
    g_main_context_iteration (NULL, TRUE);
}

void
test_notification_server_free (TestNotificationServer *self)
{
  g_bus_unown_name (self->owner);
  g_dbus_connection_unregister_object (self->connection, self->registration);
  g_clear_object (&self->connection);
  g_clear_pointer (&self->events, g_ptr_array_unref);
  g_free (self->app_id);
  g_free (self);
}
