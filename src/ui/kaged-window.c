/* kaged-window.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-window"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-retry-banner.h"
#include "kaged-window.h"

/**
 * KagedWindow:
 *
 * The main window: a header bar with the primary menu above the
 * conversation area. Its size and maximized state are kept in GSettings.
 */
struct _KagedWindow
{
  AdwApplicationWindow parent_instance;

  GSettings *settings;
  KagedCore *core;
  gint64 session_id;
  gulong session_changed_id;

  /* Template children */
  AdwHeaderBar *header_bar;
  GtkMenuButton *primary_menu_button;
  KagedRetryBanner *retry_banner;
  AdwStatusPage *empty_page;
};

G_DEFINE_FINAL_TYPE (KagedWindow, kaged_window, ADW_TYPE_APPLICATION_WINDOW)

static void
kaged_window_restore_state (KagedWindow *self)
{
  int width = g_settings_get_int (self->settings, "window-width");
  int height = g_settings_get_int (self->settings, "window-height");

  gtk_window_set_default_size (GTK_WINDOW (self), width, height);

  if (g_settings_get_boolean (self->settings, "window-maximized"))
    gtk_window_maximize (GTK_WINDOW (self));
}

static void
kaged_window_save_state (KagedWindow *self)
{
  int width = 0;
  int height = 0;
  gboolean maximized = gtk_window_is_maximized (GTK_WINDOW (self));

  g_settings_delay (self->settings);

  /* The default size of a maximized window is still its unmaximized size. */
  gtk_window_get_default_size (GTK_WINDOW (self), &width, &height);
  if (width > 0 && height > 0)
    {
      g_settings_set_int (self->settings, "window-width", width);
      g_settings_set_int (self->settings, "window-height", height);
    }
  g_settings_set_boolean (self->settings, "window-maximized", maximized);

  g_settings_apply (self->settings);
}

static gboolean
kaged_window_close_request (GtkWindow *window)
{
  KagedWindow *self = KAGED_WINDOW (window);

  kaged_window_save_state (self);

  return GTK_WINDOW_CLASS (kaged_window_parent_class)->close_request (window);
}

static void
kaged_window_disconnect_core (KagedWindow *self)
{
  if (self->core == NULL)
    return;

  g_clear_signal_handler (&self->session_changed_id, kaged_core_get_manager (self->core));
  g_clear_object (&self->core);
}

static void
kaged_window_dispose (GObject *object)
{
  KagedWindow *self = KAGED_WINDOW (object);

  kaged_window_disconnect_core (self);

  gtk_widget_dispose_template (GTK_WIDGET (self), KAGED_TYPE_WINDOW);

  G_OBJECT_CLASS (kaged_window_parent_class)->dispose (object);
}

static void
kaged_window_finalize (GObject *object)
{
  KagedWindow *self = KAGED_WINDOW (object);

  g_clear_object (&self->settings);

  G_OBJECT_CLASS (kaged_window_parent_class)->finalize (object);
}

static void
kaged_window_class_init (KagedWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  GtkWindowClass *window_class = GTK_WINDOW_CLASS (klass);

  g_type_ensure (KAGED_TYPE_RETRY_BANNER);

  object_class->dispose = kaged_window_dispose;
  object_class->finalize = kaged_window_finalize;

  window_class->close_request = kaged_window_close_request;

  gtk_widget_class_set_template_from_resource (widget_class, APPLICATION_PATH "/kaged-window.ui");
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, header_bar);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, primary_menu_button);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, retry_banner);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, empty_page);

  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_w, GDK_CONTROL_MASK,
                                       "window.close", NULL);
}

static void
kaged_window_init (KagedWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));

#if DEVELOPMENT_BUILD
  gtk_widget_add_css_class (GTK_WIDGET (self), "devel");
  gtk_window_set_title (GTK_WINDOW (self), _("Kaged (Development)"));
#endif

  self->settings = g_settings_new (BASE_APPLICATION_ID);
  kaged_window_restore_state (self);
}

/**
 * kaged_window_new:
 * @application: the application the window belongs to
 *
 * Returns: (transfer full): a new main window
 */
KagedWindow *
kaged_window_new (GtkApplication *application)
{
  g_return_val_if_fail (GTK_IS_APPLICATION (application), NULL);

  return g_object_new (KAGED_TYPE_WINDOW,
                       "application", application,
                       NULL);
}

/**
 * kaged_window_show_session:
 * @session_id: the session to show
 *
 * Makes @session_id the window's session: its pending retry, if any, is
 * the one the banner shows.
 */
void
kaged_window_show_session (KagedWindow *self,
                           gint64       session_id)
{
  KagedRetryScheduler *scheduler = NULL;

  g_return_if_fail (KAGED_IS_WINDOW (self));

  self->session_id = session_id;

  if (self->core != NULL && kaged_core_get_coordinator (self->core) != NULL && session_id > 0)
    scheduler = kaged_retry_coordinator_get_scheduler (kaged_core_get_coordinator (self->core),
                                                       session_id);

  kaged_retry_banner_set_scheduler (self->retry_banner, scheduler);
}

/**
 * kaged_window_get_session_id:
 *
 * Returns: the session the window shows, or 0 for none
 */
gint64
kaged_window_get_session_id (KagedWindow *self)
{
  g_return_val_if_fail (KAGED_IS_WINDOW (self), 0);

  return self->session_id;
}

/* With no session shown yet, the first one to start shows. */
static void
session_changed_cb (KagedSessionManager *manager,
                    KagedSession        *session,
                    KagedWindow         *self)
{
  if (self->session_id == 0)
    kaged_window_show_session (self, kaged_session_get_id (session));
}

/**
 * kaged_window_set_core:
 * @core: (nullable): the engine behind the window
 *
 * Connects the window to the running engine and shows the conversation
 * changed most recently.
 */
void
kaged_window_set_core (KagedWindow *self,
                       KagedCore   *core)
{
  g_autoptr(GPtrArray) sessions = NULL;
  gint64 session_id = 0;

  g_return_if_fail (KAGED_IS_WINDOW (self));
  g_return_if_fail (!core || KAGED_IS_CORE (core));

  kaged_window_disconnect_core (self);
  self->session_id = 0;

  if (core == NULL)
    {
      kaged_retry_banner_set_scheduler (self->retry_banner, NULL);
      return;
    }

  self->core = g_object_ref (core);
  self->session_changed_id = g_signal_connect (kaged_core_get_manager (core),
                                               "session-changed",
                                               G_CALLBACK (session_changed_cb), self);

  sessions = kaged_store_list_sessions (kaged_core_get_store (core), NULL);
  if (sessions != NULL && sessions->len > 0)
    session_id = kaged_session_get_id (g_ptr_array_index (sessions, 0));

  kaged_window_show_session (self, session_id);
}
