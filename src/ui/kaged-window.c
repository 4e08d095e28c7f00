/* kaged-window.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-window"

#include "config.h"

#include <glib/gi18n.h>

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

  /* Template children */
  AdwHeaderBar *header_bar;
  GtkMenuButton *primary_menu_button;
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
kaged_window_dispose (GObject *object)
{
  KagedWindow *self = KAGED_WINDOW (object);

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

  object_class->dispose = kaged_window_dispose;
  object_class->finalize = kaged_window_finalize;

  window_class->close_request = kaged_window_close_request;

  gtk_widget_class_set_template_from_resource (widget_class, APPLICATION_PATH "/kaged-window.ui");
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, header_bar);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, primary_menu_button);
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
