/* test-application.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Starts the real `kaged` binary the way a user would and watches what
 * happens on the X display it is given (the test runs under xvfb-run and
 * dbus-run-session): its window maps, it opens Preferences on a profile's
 * page through app.preferences-profile (read on the accessibility bus the
 * test starts), it quits through its app.quit action,
 * a damaged database is reported and left alone, and the window size is
 * saved and restored through GSettings.
 */

#include "config.h"
#include "kaged-test-files.h"

#include <signal.h>
#include <string.h>

#include <gio/gio.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <X11/Xatom.h>
#include <X11/Xlib.h>

#define WAIT_SECONDS 60
#define STORE_ERROR_HEADING "The conversation database could not be opened"
#define DAMAGE_HEADING "The conversation database is damaged"
#define PAGE_SIZE 4096

typedef struct
{
  Window xid;
  int width;
  int height;
  char *name;
  Window transient_for;
} Toplevel;

typedef struct
{
  GSubprocess *process;
  char *pid;
  gboolean done;
  char *stdout_text;
  char *stderr_text;
} Running;

static void
toplevel_free (gpointer data)
{
  Toplevel *toplevel = data;

  g_free (toplevel->name);
  g_free (toplevel);
}

static const char *
kaged_binary (void)
{
  const char *binary = g_getenv ("KAGED_BINARY");

  g_assert_nonnull (binary);
  g_assert_true (g_file_test (binary, G_FILE_TEST_IS_EXECUTABLE));

  return binary;
}

static char *
make_temp_dir (void)
{
  g_autoptr(GError) error = NULL;
  char *dir = g_dir_make_tmp (NULL, &error);

  g_assert_no_error (error);

  return dir;
}

static GSubprocessLauncher *
make_launcher (gboolean with_display)
{
  GSubprocessLauncher *launcher;

  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                        G_SUBPROCESS_FLAGS_STDERR_PIPE);
  if (with_display)
    {
      g_subprocess_launcher_setenv (launcher, "GDK_BACKEND", "x11", TRUE);
      g_subprocess_launcher_setenv (launcher, "GSK_RENDERER", "cairo", TRUE);
      g_subprocess_launcher_setenv (launcher, "GTK_A11Y", "none", TRUE);
    }
  else
    {
      g_subprocess_launcher_unsetenv (launcher, "DISPLAY");
      g_subprocess_launcher_unsetenv (launcher, "WAYLAND_DISPLAY");
    }

  return launcher;
}

/* Runs the binary to completion and returns its exit status. */
static int
run_to_end (GSubprocessLauncher  *launcher,
            const char * const   *argv,
            char                **out_stdout,
            char                **out_stderr)
{
  g_autoptr(GSubprocess) process = NULL;
  g_autoptr(GError) error = NULL;

  process = g_subprocess_launcher_spawnv (launcher, argv, &error);
  g_assert_no_error (error);

  g_subprocess_communicate_utf8 (process, NULL, NULL, out_stdout, out_stderr, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_get_if_exited (process));

  return g_subprocess_get_exit_status (process);
}

static void
communicate_cb (GObject      *object,
                GAsyncResult *result,
                gpointer      user_data)
{
  Running *running = user_data;
  g_autoptr(GError) error = NULL;

  g_subprocess_communicate_utf8_finish (G_SUBPROCESS (object), result,
                                        &running->stdout_text, &running->stderr_text, &error);
  g_assert_no_error (error);
  running->done = TRUE;
}

static Running *
start_app (GSubprocessLauncher *launcher,
           const char          *data_dir)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *data_dir_arg = g_strdup_printf ("--data-dir=%s", data_dir);
  const char *argv[] = { kaged_binary (), data_dir_arg, NULL };
  Running *running = g_new0 (Running, 1);

  running->process = g_subprocess_launcher_spawnv (launcher, argv, &error);
  g_assert_no_error (error);
  running->pid = g_strdup (g_subprocess_get_identifier (running->process));
  g_subprocess_communicate_utf8_async (running->process, NULL, NULL, communicate_cb, running);

  return running;
}

static void
running_free (Running *running)
{
  if (!running->done)
    {
      g_subprocess_force_exit (running->process);
      while (!running->done)
        g_main_context_iteration (NULL, TRUE);
    }

  g_clear_object (&running->process);
  g_free (running->pid);
  g_free (running->stdout_text);
  g_free (running->stderr_text);
  g_free (running);
}

static gboolean
get_cardinal (Display *display,
              Window   window,
              Atom     property,
              gulong  *value)
{
  Atom actual_type = None;
  int actual_format = 0;
  unsigned long n_items = 0;
  unsigned long bytes_after = 0;
  unsigned char *data = NULL;
  gboolean found = FALSE;

  if (XGetWindowProperty (display, window, property, 0, 1, False, XA_CARDINAL,
                          &actual_type, &actual_format, &n_items, &bytes_after,
                          &data) == Success &&
      actual_type == XA_CARDINAL && actual_format == 32 && n_items == 1)
    {
      *value = ((unsigned long *) (gpointer) data)[0];
      found = TRUE;
    }

  if (data != NULL)
    XFree (data);

  return found;
}

static char *
get_utf8 (Display *display,
          Window   window,
          Atom     property)
{
  Atom utf8_string = XInternAtom (display, "UTF8_STRING", False);
  Atom actual_type = None;
  int actual_format = 0;
  unsigned long n_items = 0;
  unsigned long bytes_after = 0;
  unsigned char *data = NULL;
  char *value = NULL;

  if (XGetWindowProperty (display, window, property, 0, 1024, False, utf8_string,
                          &actual_type, &actual_format, &n_items, &bytes_after,
                          &data) == Success &&
      actual_type == utf8_string && actual_format == 8)
    value = g_strndup ((const char *) data, n_items);

  if (data != NULL)
    XFree (data);

  return value;
}

/* The mapped top-level windows of the process @pid. */
static GPtrArray *
list_toplevels (Display    *display,
                const char *pid)
{
  GPtrArray *toplevels = g_ptr_array_new_with_free_func (toplevel_free);
  Atom net_wm_pid = XInternAtom (display, "_NET_WM_PID", False);
  Atom net_wm_name = XInternAtom (display, "_NET_WM_NAME", False);
  Window root_return = None;
  Window parent_return = None;
  Window *children = NULL;
  unsigned int n_children = 0;
  gulong wanted_pid = g_ascii_strtoull (pid, NULL, 10);

  XSync (display, False);
  if (!XQueryTree (display, DefaultRootWindow (display), &root_return, &parent_return,
                   &children, &n_children))
    return toplevels;

  for (unsigned int i = 0; i < n_children; i++)
    {
      XWindowAttributes attributes;
      gulong window_pid = 0;
      Window transient_for = None;
      Toplevel *toplevel;

      if (!XGetWindowAttributes (display, children[i], &attributes) ||
          attributes.map_state != IsViewable)
        continue;

      if (!get_cardinal (display, children[i], net_wm_pid, &window_pid) ||
          window_pid != wanted_pid)
        continue;

      toplevel = g_new0 (Toplevel, 1);
      toplevel->xid = children[i];
      toplevel->width = attributes.width;
      toplevel->height = attributes.height;
      toplevel->name = get_utf8 (display, children[i], net_wm_name);
      if (XGetTransientForHint (display, children[i], &transient_for))
        toplevel->transient_for = transient_for;
      g_ptr_array_add (toplevels, toplevel);
    }

  if (children != NULL)
    XFree (children);

  return toplevels;
}

static gboolean
has_dialog_named (GPtrArray  *toplevels,
                  const char *name)
{
  for (guint i = 0; i < toplevels->len; i++)
    {
      Toplevel *toplevel = g_ptr_array_index (toplevels, i);

      if (g_strcmp0 (toplevel->name, name) == 0 && toplevel->transient_for != None)
        return TRUE;
    }

  return FALSE;
}

static gboolean
timeout_cb (gpointer user_data)
{
  gboolean *timed_out = user_data;

  *timed_out = TRUE;
  return G_SOURCE_REMOVE;
}

/* Reads the X events that came in, and follows the new top-level windows'
 * properties (their names and hints). Returns how many there were. */
static guint
drain_x_events (Display *display)
{
  guint n = 0;

  while (XPending (display) > 0)
    {
      XEvent event;

      XNextEvent (display, &event);
      if (event.type == CreateNotify)
        XSelectInput (display, event.xcreatewindow.window, PropertyChangeMask);
      n++;
    }

  return n;
}

static gboolean
x_events_cb (int          fd,
             GIOCondition condition,
             gpointer     user_data)
{
  drain_x_events (user_data);

  return G_SOURCE_CONTINUE;
}

/* Waits until the process shows its main window (and, when @dialog_name
 * is given, a dialog of that name above it), woken by what happens on the
 * display. Returns the main window. */
static Toplevel *
wait_for_window (Display    *display,
                 Running    *running,
                 const char *dialog_name)
{
  Window root = DefaultRootWindow (display);
  Window root_return = None;
  Window parent_return = None;
  Window *children = NULL;
  unsigned int n_children = 0;
  gboolean timed_out = FALSE;
  guint timeout_id;
  guint watch_id;

  /* Windows that come, go or change name wake the loop below. */
  XSelectInput (display, root, SubstructureNotifyMask);
  if (XQueryTree (display, root, &root_return, &parent_return, &children, &n_children))
    {
      for (unsigned int i = 0; i < n_children; i++)
        XSelectInput (display, children[i], PropertyChangeMask);
      if (children != NULL)
        XFree (children);
    }
  XSync (display, False);
  watch_id = g_unix_fd_add (ConnectionNumber (display), G_IO_IN, x_events_cb, display);
  timeout_id = g_timeout_add_seconds (WAIT_SECONDS, timeout_cb, &timed_out);

  while (!timed_out)
    {
      g_autoptr(GPtrArray) toplevels = NULL;

      if (running->done)
        g_error ("kaged exited before its window mapped; stderr:\n%s",
                 running->stderr_text);

      toplevels = list_toplevels (display, running->pid);
      for (guint i = 0; i < toplevels->len; i++)
        {
          Toplevel *toplevel = g_ptr_array_index (toplevels, i);

          if (toplevel->transient_for != None)
            continue;

          if (dialog_name == NULL || has_dialog_named (toplevels, dialog_name))
            {
              g_source_remove (watch_id);
              g_source_remove (timeout_id);
              XSelectInput (display, root, NoEventMask);
              return g_ptr_array_steal_index (toplevels, i);
            }
        }

      /* Events read while looking may be news: look again before sleeping. */
      if (drain_x_events (display) == 0)
        g_main_context_iteration (NULL, TRUE);
    }

  g_error ("kaged did not map its window within %d seconds", WAIT_SECONDS);
  return NULL;
}

static char *
application_object_path (void)
{
  g_autofree char *dotted = g_strconcat ("/", APPLICATION_ID, NULL);

  return g_strdelimit (g_steal_pointer (&dotted), ".", '/');
}

/* Whether the running application offers @name among its app actions on
 * the session bus, where notifications and the desktop reach them. */
static gboolean
has_app_action (const char *name)
{
  g_autoptr(GDBusConnection) bus = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) names = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *object_path = application_object_path ();
  g_autofree const char **strv = NULL;

  bus = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error);
  g_assert_no_error (error);

  reply = g_dbus_connection_call_sync (bus, APPLICATION_ID, object_path,
                                       "org.gtk.Actions", "List", NULL,
                                       G_VARIANT_TYPE ("(as)"), G_DBUS_CALL_FLAGS_NONE,
                                       WAIT_SECONDS * 1000, NULL, &error);
  g_assert_no_error (error);

  names = g_variant_get_child_value (reply, 0);
  strv = g_variant_get_strv (names, NULL);

  return g_strv_contains (strv, name);
}

/* Activates the app action @name (with @parameter, unless NULL) on the
 * session bus, as the desktop would. */
static void
activate_app_action (const char *name,
                     GVariant   *parameter)
{
  g_autoptr(GDBusConnection) bus = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *object_path = application_object_path ();
  GVariantBuilder parameters;

  bus = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error);
  g_assert_no_error (error);

  g_variant_builder_init (&parameters, G_VARIANT_TYPE ("av"));
  if (parameter != NULL)
    g_variant_builder_add (&parameters, "v", parameter);

  reply = g_dbus_connection_call_sync (bus, APPLICATION_ID, object_path,
                                       "org.gtk.Actions", "Activate",
                                       g_variant_new ("(sava{sv})", name, &parameters, NULL),
                                       NULL, G_DBUS_CALL_FLAGS_NONE, WAIT_SECONDS * 1000,
                                       NULL, &error);
  g_assert_no_error (error);
}

/* Quits through the app.quit action on the session bus, as the desktop
 * would, and waits for a clean exit. */
static void
quit_app (Running *running)
{
  gboolean timed_out = FALSE;
  guint timeout_id;

  activate_app_action ("quit", NULL);

  timeout_id = g_timeout_add_seconds (WAIT_SECONDS, timeout_cb, &timed_out);
  while (!running->done && !timed_out)
    g_main_context_iteration (NULL, TRUE);
  if (!timed_out)
    g_source_remove (timeout_id);

  g_assert_true (running->done);
  g_assert_true (g_subprocess_get_if_exited (running->process));
  g_assert_cmpint (g_subprocess_get_exit_status (running->process), ==, 0);
}

/* Windows come and go as the test looks at them: one that went away by
 * the time it was asked about is no error. */
static int
x_error_cb (Display     *display,
            XErrorEvent *event)
{
  if (event->error_code != BadWindow)
    g_error ("X error %d (request %d)", event->error_code, event->request_code);

  return 0;
}

static Display *
open_display (void)
{
  Display *display = NULL;

  if (g_getenv ("DISPLAY") == NULL)
    g_error ("This test needs an X display: run it through meson, which wraps it in xvfb-run");

  display = XOpenDisplay (NULL);
  g_assert_nonnull (display);
  XSetErrorHandler (x_error_cb);

  return display;
}

/* Accessibility, read from the outside the way a screen reader reads it:
 * the AT-SPI bus this test starts, the accessible tree the application
 * puts there. A node is on screen when it has an extent in its window:
 * the page of a leaflet that is not shown has none. */

#define ATSPI_BUS_LAUNCHER "/usr/libexec/at-spi-bus-launcher"
#define ATSPI_COORD_TYPE_WINDOW 1

typedef struct
{
  GSubprocess *launcher;
  GDBusConnection *bus;
} A11yBus;

typedef struct
{
  char *owner;
  char *path;
  char *name;
  gboolean on_screen;
} A11yNode;

static void
a11y_node_free (gpointer data)
{
  A11yNode *node = data;

  g_free (node->owner);
  g_free (node->path);
  g_free (node->name);
  g_free (node);
}

static void
a11y_bus_free (A11yBus *a11y)
{
  if (a11y->bus != NULL)
    g_dbus_connection_close_sync (a11y->bus, NULL, NULL);
  g_clear_object (&a11y->bus);
  g_subprocess_send_signal (a11y->launcher, SIGTERM);
  g_subprocess_wait (a11y->launcher, NULL, NULL);
  g_clear_object (&a11y->launcher);
  g_free (a11y);
}

static void
a11y_bus_appeared_cb (GDBusConnection *bus,
                      const char      *name,
                      const char      *owner,
                      gpointer         user_data)
{
  gboolean *appeared = user_data;

  *appeared = TRUE;
}

/* Starts the accessibility bus beside the test's session bus, as a
 * desktop session does, and connects to it. */
static A11yBus *
a11y_bus_start (void)
{
  g_autoptr(GDBusConnection) session = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GError) error = NULL;
  const char *address = NULL;
  const char *argv[] = { ATSPI_BUS_LAUNCHER, "--launch-immediately", NULL };
  A11yBus *a11y = g_new0 (A11yBus, 1);
  gboolean appeared = FALSE;
  gboolean timed_out = FALSE;
  guint timeout_id;
  guint watch_id;

  session = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error);
  g_assert_no_error (error);
  a11y->launcher = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
                                            G_SUBPROCESS_FLAGS_STDERR_SILENCE, &error);
  g_assert_no_error (error);

  watch_id = g_bus_watch_name_on_connection (session, "org.a11y.Bus", G_BUS_NAME_WATCHER_FLAGS_NONE,
                                             a11y_bus_appeared_cb, NULL, &appeared, NULL);
  timeout_id = g_timeout_add_seconds (WAIT_SECONDS, timeout_cb, &timed_out);
  while (!appeared && !timed_out)
    g_main_context_iteration (NULL, TRUE);
  g_bus_unwatch_name (watch_id);
  g_assert_true (appeared);
  g_source_remove (timeout_id);

  reply = g_dbus_connection_call_sync (session, "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus",
                                       "GetAddress", NULL, G_VARIANT_TYPE ("(s)"),
                                       G_DBUS_CALL_FLAGS_NONE, WAIT_SECONDS * 1000, NULL, &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(&s)", &address);
  a11y->bus = g_dbus_connection_new_for_address_sync (address,
                                                      G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                      G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                      NULL, NULL, &error);
  g_assert_no_error (error);

  return a11y;
}

/* A method's reply, or NULL when the node went away while the test
 * looked at it. */
static GVariant *
a11y_call (A11yBus            *a11y,
           const char         *owner,
           const char         *path,
           const char         *interface,
           const char         *method,
           GVariant           *parameters,
           const GVariantType *reply_type)
{
  return g_dbus_connection_call_sync (a11y->bus, owner, path, interface, method, parameters,
                                      reply_type, G_DBUS_CALL_FLAGS_NONE, WAIT_SECONDS * 1000,
                                      NULL, NULL);
}

static char *
a11y_name (A11yBus    *a11y,
           const char *owner,
           const char *path)
{
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) value = NULL;

  reply = a11y_call (a11y, owner, path, "org.freedesktop.DBus.Properties", "Get",
                     g_variant_new ("(ss)", "org.a11y.atspi.Accessible", "Name"),
                     G_VARIANT_TYPE ("(v)"));
  if (reply == NULL)
    return NULL;

  g_variant_get (reply, "(v)", &value);
  return g_variant_is_of_type (value, G_VARIANT_TYPE_STRING) ? g_variant_dup_string (value, NULL)
                                                             : NULL;
}

static gboolean
a11y_on_screen (A11yBus    *a11y,
                const char *owner,
                const char *path)
{
  g_autoptr(GVariant) reply = NULL;
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;

  reply = a11y_call (a11y, owner, path, "org.a11y.atspi.Component", "GetExtents",
                     g_variant_new ("(u)", ATSPI_COORD_TYPE_WINDOW), G_VARIANT_TYPE ("((iiii))"));
  if (reply == NULL)
    return FALSE;

  g_variant_get (reply, "((iiii))", &x, &y, &width, &height);
  return width > 0 && height > 0;
}

static GVariant *
a11y_children (A11yBus    *a11y,
               const char *owner,
               const char *path)
{
  g_autoptr(GVariant) reply = NULL;

  reply = a11y_call (a11y, owner, path, "org.a11y.atspi.Accessible", "GetChildren", NULL,
                     G_VARIANT_TYPE ("(a(so))"));
  if (reply == NULL)
    return NULL;

  return g_variant_get_child_value (reply, 0);
}

/* Adds the named nodes below (owner, path). */
static void
a11y_collect (A11yBus    *a11y,
              const char *owner,
              const char *path,
              GPtrArray  *nodes)
{
  g_autoptr(GVariant) children = a11y_children (a11y, owner, path);
  GVariantIter iter;
  const char *child_owner = NULL;
  const char *child_path = NULL;

  if (children == NULL)
    return;

  g_variant_iter_init (&iter, children);
  while (g_variant_iter_next (&iter, "(&s&o)", &child_owner, &child_path))
    {
      g_autofree char *name = a11y_name (a11y, child_owner, child_path);

      if (name != NULL && *name != '\0')
        {
          A11yNode *node = g_new0 (A11yNode, 1);

          node->owner = g_strdup (child_owner);
          node->path = g_strdup (child_path);
          node->name = g_steal_pointer (&name);
          node->on_screen = a11y_on_screen (a11y, child_owner, child_path);
          g_ptr_array_add (nodes, node);
        }
      a11y_collect (a11y, child_owner, child_path, nodes);
    }
}

/* The named nodes of the window named @title, or NULL while no
 * application has such a window on the accessibility bus. */
static GPtrArray *
a11y_window_nodes (A11yBus    *a11y,
                   const char *title)
{
  g_autoptr(GVariant) applications = NULL;
  GVariantIter iter;
  const char *owner = NULL;
  const char *path = NULL;

  applications = a11y_children (a11y, "org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root");
  if (applications == NULL)
    return NULL;

  g_variant_iter_init (&iter, applications);
  while (g_variant_iter_next (&iter, "(&s&o)", &owner, &path))
    {
      g_autoptr(GVariant) windows = a11y_children (a11y, owner, path);
      GVariantIter windows_iter;
      const char *window_owner = NULL;
      const char *window_path = NULL;

      if (windows == NULL)
        continue;

      g_variant_iter_init (&windows_iter, windows);
      while (g_variant_iter_next (&windows_iter, "(&s&o)", &window_owner, &window_path))
        {
          g_autofree char *name = a11y_name (a11y, window_owner, window_path);
          GPtrArray *nodes = NULL;

          if (g_strcmp0 (name, title) != 0)
            continue;

          nodes = g_ptr_array_new_with_free_func (a11y_node_free);
          a11y_collect (a11y, window_owner, window_path, nodes);
          return nodes;
        }
    }

  return NULL;
}

/* The first node named @name that is on screen, if any. */
static A11yNode *
on_screen (GPtrArray  *nodes,
           const char *name)
{
  for (guint i = 0; nodes != NULL && i < nodes->len; i++)
    {
      A11yNode *node = g_ptr_array_index (nodes, i);

      if (node->on_screen && g_str_equal (node->name, name))
        return node;
    }

  return NULL;
}

/* Waits until the window named @title shows @shown and not @hidden, and
 * returns its nodes then. */
static GPtrArray *
a11y_wait_for_page (A11yBus    *a11y,
                    const char *title,
                    const char *shown,
                    const char *hidden)
{
  gint64 deadline = g_get_monotonic_time () + WAIT_SECONDS * G_USEC_PER_SEC;
  g_autoptr(GString) seen = g_string_new (NULL);

  while (g_get_monotonic_time () < deadline)
    {
      g_autoptr(GPtrArray) nodes = a11y_window_nodes (a11y, title);

      if (on_screen (nodes, shown) != NULL && on_screen (nodes, hidden) == NULL)
        return g_steal_pointer (&nodes);

      g_string_truncate (seen, 0);
      for (guint i = 0; nodes != NULL && i < nodes->len; i++)
        {
          A11yNode *node = g_ptr_array_index (nodes, i);

          if (node->on_screen)
            g_string_append_printf (seen, "“%s” ", node->name);
        }
      g_usleep (G_USEC_PER_SEC / 10);
    }

  g_error ("The window “%s” did not show “%s” without “%s” within %d seconds; on screen: %s",
           title, shown, hidden, WAIT_SECONDS, seen->str);
  return NULL;
}

/* Waits until no window named @title is left on the accessibility bus. */
static void
a11y_wait_for_no_window (A11yBus    *a11y,
                         const char *title)
{
  gint64 deadline = g_get_monotonic_time () + WAIT_SECONDS * G_USEC_PER_SEC;

  while (g_get_monotonic_time () < deadline)
    {
      g_autoptr(GPtrArray) nodes = a11y_window_nodes (a11y, title);

      if (nodes == NULL)
        return;
      g_usleep (G_USEC_PER_SEC / 10);
    }

  g_error ("The window “%s” did not close within %d seconds", title, WAIT_SECONDS);
}

/* Presses a button the way a screen reader does: its first action. */
static void
a11y_press (A11yBus  *a11y,
            A11yNode *node)
{
  g_autoptr(GVariant) reply = NULL;

  reply = a11y_call (a11y, node->owner, node->path, "org.a11y.atspi.Action", "DoAction",
                     g_variant_new ("(i)", 0), G_VARIANT_TYPE ("(b)"));
  g_assert_nonnull (reply);
}

static void
test_version (void)
{
  g_autoptr(GSubprocessLauncher) launcher = make_launcher (FALSE);
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  const char *argv[] = { kaged_binary (), "--version", NULL };
  int status;

  /* No display at all: --version must not need GTK. */
  status = run_to_end (launcher, argv, &out, &err);

  g_assert_cmpint (status, ==, 0);
  g_assert_cmpstr (out, ==, PACKAGE_NAME " " PACKAGE_VERSION "\n");
  g_assert_cmpstr (err, ==, "");
}

/* Both ways of running Kaged are listed: the window's options, and
 * --headless, whose own options its --help lists. */
static void
test_help (void)
{
  g_autoptr(GSubprocessLauncher) launcher = make_launcher (FALSE);
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  g_autofree char *headless_out = NULL;
  g_autofree char *headless_err = NULL;
  const char *argv[] = { kaged_binary (), "--help", NULL };
  const char *headless_argv[] = { kaged_binary (), "--headless", "--help", NULL };

  g_assert_cmpint (run_to_end (launcher, argv, &out, &err), ==, 0);
  g_assert_nonnull (strstr (out, "--data-dir=DIR"));
  g_assert_nonnull (strstr (out, "--headless"));

  g_assert_cmpint (run_to_end (launcher, headless_argv, &headless_out, &headless_err), ==, 0);
  g_assert_nonnull (strstr (headless_out, "--api-port"));
  g_assert_nonnull (strstr (headless_out, "--provider-kind"));
}

/* One command line for the window and --headless: the provider options are
 * checked before anything starts, and --headless's own options are refused
 * without it. */
static void
test_command_line (void)
{
  g_autoptr(GSubprocessLauncher) launcher = make_launcher (FALSE);
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *data_arg = g_strdup_printf ("--data-dir=%s", dir);
  g_autofree char *db = g_build_filename (dir, "kaged.db", NULL);
  const struct {
    const char *arg;
    const char *says;
  } refused[] = {
    { "--provider-kind=gopher", "gopher" },
    { "--provider-url=ftp://127.0.0.1/", "ftp://127.0.0.1/" },
    { "--model=", "model" },
    { "--api-port=8642", "--api-port" },
    { "--auto-retry", "--auto-retry" },
    { "stray", "stray" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (refused); i++)
    {
      const char *argv[] = { kaged_binary (), data_arg, refused[i].arg, NULL };
      g_autofree char *out = NULL;
      g_autofree char *err = NULL;

      g_assert_cmpint (run_to_end (launcher, argv, &out, &err), ==, 1);
      g_assert_nonnull (strstr (err, refused[i].says));
    }

  /* Nothing was started. */
  g_assert_false (g_file_test (db, G_FILE_TEST_EXISTS));
  kaged_test_remove_tree (dir);
}

static void
test_check_database_missing (void)
{
  g_autoptr(GSubprocessLauncher) launcher = make_launcher (FALSE);
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *arg = g_strdup_printf ("--data-dir=%s", dir);
  g_autofree char *db = g_build_filename (dir, "kaged.db", NULL);
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  const char *argv[] = { kaged_binary (), arg, "--check-database", NULL };
  int status;

  status = run_to_end (launcher, argv, &out, &err);

  g_assert_cmpint (status, ==, 0);
  g_assert_nonnull (strstr (out, db));
  g_assert_false (g_file_test (db, G_FILE_TEST_EXISTS));

  kaged_test_remove_tree (dir);
}

static void
write_not_a_database (const char  *dir,
                      char       **out_path,
                      char       **out_contents)
{
  static const char contents[] = "These are notes, not conversations.\n"
                                 "Kaged must not overwrite them.\n";
  g_autoptr(GError) error = NULL;
  g_autofree char *path = g_build_filename (dir, "kaged.db", NULL);

  g_file_set_contents (path, contents, -1, &error);
  g_assert_no_error (error);

  *out_path = g_steal_pointer (&path);
  *out_contents = g_strdup (contents);
}

static void
assert_file_unchanged_len (const char *path,
                           const char *expected,
                           gsize       expected_length)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *contents = NULL;
  gsize length = 0;

  g_file_get_contents (path, &contents, &length, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (contents, length, expected, expected_length);
}

static void
assert_file_unchanged (const char *path,
                       const char *expected)
{
  assert_file_unchanged_len (path, expected, strlen (expected));
}

static void
test_check_database_not_a_database (void)
{
  g_autoptr(GSubprocessLauncher) launcher = make_launcher (FALSE);
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *arg = g_strdup_printf ("--data-dir=%s", dir);
  g_autofree char *db = NULL;
  g_autofree char *contents = NULL;
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  const char *argv[] = { kaged_binary (), arg, "--check-database", NULL };
  int status;

  write_not_a_database (dir, &db, &contents);

  status = run_to_end (launcher, argv, &out, &err);

  g_assert_cmpint (status, !=, 0);
  g_assert_nonnull (strstr (err, STORE_ERROR_HEADING));
  g_assert_nonnull (strstr (err, db));
  assert_file_unchanged (db, contents);

  kaged_test_remove_tree (dir);
}

static void
test_window_maps_and_quits (void)
{
  g_autoptr(GSubprocessLauncher) launcher = make_launcher (TRUE);
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *db = g_build_filename (dir, "kaged.db", NULL);
  Display *display = open_display ();
  Toplevel *window;
  Running *running;

  running = start_app (launcher, dir);
  window = wait_for_window (display, running, NULL);

  g_assert_cmpint (window->width, >, 0);
  g_assert_cmpint (window->height, >, 0);
  g_assert_nonnull (window->name);
  g_assert_true (g_str_has_prefix (window->name, "Kaged"));

  /* With the store open, the engine runs: its retry actions are there. */
  g_assert_true (has_app_action ("quit"));
  g_assert_true (has_app_action ("retry-now"));
  g_assert_true (has_app_action ("cancel-retry"));

  quit_app (running);

  /* The store was opened at start-up and created the database. */
  g_assert_true (g_file_test (db, G_FILE_TEST_IS_REGULAR));
  g_assert_null (strstr (running->stderr_text, STORE_ERROR_HEADING));

  toplevel_free (window);
  running_free (running);
  XCloseDisplay (display);
  kaged_test_remove_tree (dir);
}

/* The failed reply's and the model chooser's Open Preferences activate
 * app.preferences-profile with the profile whose key or address is wrong:
 * the Preferences open on that profile's own page, its address and key
 * ready to edit, not on the list of profiles. A profile that is not there
 * (deleted meanwhile) opens the list. */
static void
test_preferences_at_profile (void)
{
  g_autoptr(GSubprocessLauncher) launcher = make_launcher (TRUE);
  g_autofree char *dir = NULL;
  g_autoptr(GPtrArray) nodes = NULL;
  Display *display = NULL;
  A11yBus *a11y = NULL;
  A11yNode *close_button = NULL;
  Running *running;

  if (!g_file_test (ATSPI_BUS_LAUNCHER, G_FILE_TEST_IS_EXECUTABLE))
    {
      g_test_skip ("No AT-SPI bus launcher (" ATSPI_BUS_LAUNCHER ") to read the window with");
      return;
    }

  dir = make_temp_dir ();
  display = open_display ();
  a11y = a11y_bus_start ();
  g_subprocess_launcher_unsetenv (launcher, "GTK_A11Y");
  running = start_app (launcher, dir);
  toplevel_free (wait_for_window (display, running, NULL));

  /* On a first start the one profile, "default", is the local Ollama: its
   * page is titled with its name and holds its connection and prices. */
  activate_app_action ("preferences-profile", g_variant_new_string ("default"));
  nodes = a11y_wait_for_page (a11y, "Preferences", "Refresh the Model List", "Add Profile");
  g_assert_nonnull (on_screen (nodes, "Ollama"));
  g_assert_nonnull (on_screen (nodes, "Base URL"));
  g_assert_nonnull (on_screen (nodes, "Test Connection"));
  g_assert_nonnull (on_screen (nodes, "Back"));
  g_assert_null (on_screen (nodes, "Provider profiles"));

  close_button = on_screen (nodes, "Close");
  g_assert_nonnull (close_button);
  a11y_press (a11y, close_button);
  a11y_wait_for_no_window (a11y, "Preferences");
  g_clear_pointer (&nodes, g_ptr_array_unref);

  /* No such profile: the list of them, where each one's page is. */
  activate_app_action ("preferences-profile", g_variant_new_string ("missing"));
  nodes = a11y_wait_for_page (a11y, "Preferences", "Add Profile", "Refresh the Model List");
  g_assert_nonnull (on_screen (nodes, "Provider profiles"));
  g_assert_null (on_screen (nodes, "Test Connection"));

  quit_app (running);

  running_free (running);
  a11y_bus_free (a11y);
  XCloseDisplay (display);
  kaged_test_remove_tree (dir);
}

static void
test_window_reports_bad_database (void)
{
  g_autoptr(GSubprocessLauncher) launcher = make_launcher (TRUE);
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *db = NULL;
  g_autofree char *contents = NULL;
  Display *display = open_display ();
  Toplevel *window;
  Running *running;

  write_not_a_database (dir, &db, &contents);

  running = start_app (launcher, dir);
  window = wait_for_window (display, running, STORE_ERROR_HEADING);

  /* Without a store, nothing runs behind the window. */
  g_assert_true (has_app_action ("quit"));
  g_assert_false (has_app_action ("retry-now"));

  quit_app (running);

  g_assert_nonnull (strstr (running->stderr_text, STORE_ERROR_HEADING));
  g_assert_nonnull (strstr (running->stderr_text, db));
  assert_file_unchanged (db, contents);

  toplevel_free (window);
  running_free (running);
  XCloseDisplay (display);
  kaged_test_remove_tree (dir);
}

static void
test_second_start_keeps_database (void)
{
  g_autoptr(GSubprocessLauncher) launcher = make_launcher (TRUE);
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *other_dir = make_temp_dir ();
  g_autofree char *other_arg = g_strdup_printf ("--data-dir=%s", other_dir);
  g_autofree char *other_db = g_build_filename (other_dir, "kaged.db", NULL);
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  const char *argv[] = { kaged_binary (), other_arg, NULL };
  Display *display = open_display ();
  Toplevel *window;
  Running *running;
  int status;

  running = start_app (launcher, dir);
  window = wait_for_window (display, running, NULL);

  /* A second start hands over to the running Kaged and says that its
   * --data-dir does not apply. */
  status = run_to_end (launcher, argv, &out, &err);
  g_assert_cmpint (status, ==, 0);
  g_assert_nonnull (strstr (err, "already running"));
  g_assert_false (g_file_test (other_db, G_FILE_TEST_EXISTS));
  g_assert_false (running->done);

  quit_app (running);

  toplevel_free (window);
  running_free (running);
  XCloseDisplay (display);
  kaged_test_remove_tree (dir);
  kaged_test_remove_tree (other_dir);
}

/* Lets Kaged create its database, grows it with a table of padding and
 * then overwrites one page in the middle of that table: opening the file
 * still works, reading all of it does not. */
static void
make_damaged_database (GSubprocessLauncher  *launcher,
                       Display              *display,
                       const char           *dir,
                       char                **out_path,
                       gsize                *out_damaged_offset)
{
  static const char padding_sql[] =
    "CREATE TABLE padding (data BLOB);"
    "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)"
    "  INSERT INTO padding SELECT randomblob (3000) FROM n;";
  g_autoptr(GError) error = NULL;
  g_autofree char *path = g_build_filename (dir, "kaged.db", NULL);
  g_autofree char *wal = g_strconcat (path, "-wal", NULL);
  g_autofree char *contents = NULL;
  sqlite3 *db = NULL;
  Toplevel *window;
  Running *running;
  gsize length = 0;
  gsize middle;

  running = start_app (launcher, dir);
  window = wait_for_window (display, running, NULL);
  quit_app (running);
  toplevel_free (window);
  running_free (running);

  g_assert_cmpint (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READWRITE, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, padding_sql, NULL, NULL, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_close (db), ==, SQLITE_OK);
  g_assert_false (g_file_test (wal, G_FILE_TEST_EXISTS));

  g_file_get_contents (path, &contents, &length, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (length, >, 200 * PAGE_SIZE);
  middle = (length / 2) & ~(gsize) (PAGE_SIZE - 1);
  memset (contents + middle, 0x5A, PAGE_SIZE);
  g_file_set_contents (path, contents, length, &error);
  g_assert_no_error (error);

  *out_path = g_steal_pointer (&path);
  *out_damaged_offset = middle;
}

static void
assert_page_still_damaged (const char *path,
                           gsize       offset)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *contents = NULL;
  gsize length = 0;

  g_file_get_contents (path, &contents, &length, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (length, >=, offset + PAGE_SIZE);
  for (gsize i = offset; i < offset + PAGE_SIZE; i++)
    g_assert_cmpint ((guchar) contents[i], ==, 0x5A);
}

static void
test_damaged_database (void)
{
  g_autoptr(GSubprocessLauncher) launcher = make_launcher (TRUE);
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *arg = g_strdup_printf ("--data-dir=%s", dir);
  g_autofree char *db = NULL;
  g_autofree char *damaged = NULL;
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  const char *argv[] = { kaged_binary (), arg, "--check-database", NULL };
  Display *display = open_display ();
  Toplevel *window;
  Running *running;
  gsize damaged_offset = 0;
  gsize damaged_length = 0;
  int status;

  make_damaged_database (launcher, display, dir, &db, &damaged_offset);
  g_file_get_contents (db, &damaged, &damaged_length, NULL);

  /* --check-database reads the whole file and names the damage. */
  status = run_to_end (launcher, argv, &out, &err);
  g_assert_cmpint (status, !=, 0);
  g_assert_nonnull (strstr (err, STORE_ERROR_HEADING));
  g_assert_nonnull (strstr (err, "damaged"));
  g_assert_nonnull (strstr (err, db));
  assert_file_unchanged_len (db, damaged, damaged_length);

  /* The window opens, then says what the background check found. */
  running = start_app (launcher, dir);
  window = wait_for_window (display, running, DAMAGE_HEADING);
  quit_app (running);

  g_assert_nonnull (strstr (running->stderr_text, DAMAGE_HEADING));
  g_assert_nonnull (strstr (running->stderr_text, db));
  assert_page_still_damaged (db, damaged_offset);

  toplevel_free (window);
  running_free (running);
  XCloseDisplay (display);
  kaged_test_remove_tree (dir);
}

static int
keyfile_get_int (const char *path,
                 const char *key)
{
  g_autoptr(GKeyFile) keyfile = g_key_file_new ();
  g_autoptr(GError) error = NULL;
  int value;

  g_key_file_load_from_file (keyfile, path, G_KEY_FILE_NONE, &error);
  g_assert_no_error (error);
  value = g_key_file_get_integer (keyfile, "io/github/kaged/Kaged", key, &error);
  g_assert_no_error (error);

  return value;
}

static void
test_window_size_is_kept (void)
{
  g_autoptr(GSubprocessLauncher) launcher = make_launcher (TRUE);
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *config_dir = g_build_filename (dir, "config", NULL);
  g_autofree char *keyfile_dir = g_build_filename (config_dir, "glib-2.0", "settings", NULL);
  g_autofree char *keyfile = g_build_filename (keyfile_dir, "keyfile", NULL);
  g_autoptr(GError) error = NULL;
  Display *display = open_display ();
  Toplevel *first;
  Toplevel *second;
  Running *running;
  int saved_width;
  int saved_height;

  g_subprocess_launcher_setenv (launcher, "GSETTINGS_BACKEND", "keyfile", TRUE);
  g_subprocess_launcher_setenv (launcher, "XDG_CONFIG_HOME", config_dir, TRUE);

  /* A first start with fresh settings saves its size when it quits. */
  running = start_app (launcher, dir);
  first = wait_for_window (display, running, NULL);
  quit_app (running);
  running_free (running);

  saved_width = keyfile_get_int (keyfile, "window-width");
  saved_height = keyfile_get_int (keyfile, "window-height");
  g_assert_cmpint (saved_width, >, 360);
  g_assert_cmpint (saved_height, >, 294);

  /* A smaller saved size is what the next start opens with. */
  g_mkdir_with_parents (keyfile_dir, 0700);
  g_file_set_contents (keyfile,
                       "[io/github/kaged/Kaged]\n"
                       "window-width=640\n"
                       "window-height=480\n",
                       -1, &error);
  g_assert_no_error (error);

  running = start_app (launcher, dir);
  second = wait_for_window (display, running, NULL);
  quit_app (running);
  running_free (running);

  g_assert_cmpint (first->width - second->width, ==, saved_width - 640);
  g_assert_cmpint (first->height - second->height, ==, saved_height - 480);
  g_assert_cmpint (keyfile_get_int (keyfile, "window-width"), ==, 640);
  g_assert_cmpint (keyfile_get_int (keyfile, "window-height"), ==, 480);

  toplevel_free (first);
  toplevel_free (second);
  XCloseDisplay (display);
  kaged_test_remove_tree (dir);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/application/version", test_version);
  g_test_add_func ("/application/help", test_help);
  g_test_add_func ("/application/command-line", test_command_line);
  g_test_add_func ("/application/check-database/missing", test_check_database_missing);
  g_test_add_func ("/application/check-database/not-a-database",
                   test_check_database_not_a_database);
  g_test_add_func ("/application/window/maps-and-quits", test_window_maps_and_quits);
  g_test_add_func ("/application/window/preferences-at-profile", test_preferences_at_profile);
  g_test_add_func ("/application/window/reports-bad-database", test_window_reports_bad_database);
  g_test_add_func ("/application/window/size-is-kept", test_window_size_is_kept);
  g_test_add_func ("/application/window/damaged-database", test_damaged_database);
  g_test_add_func ("/application/window/second-start-keeps-database",
                   test_second_start_keeps_database);

  return g_test_run ();
}
