/* kaged-session-row.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-session-row"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-retry-text.h"
#include "kaged-session-row.h"

/* A scheduled time is put in words again this often, so "tomorrow"
 * becomes today at midnight. */
#define TOOLTIP_REFRESH_MS 60000

struct _KagedSessionRow
{
  GtkWidget              parent_instance;

  KagedRetryCoordinator *coordinator;
  KagedSession          *session;
  GBindingGroup         *session_bindings;
  GSignalGroup          *scheduler_signals;
  gulong                 scheduler_added_id;
  gulong                 clock_format_id;
  GSource               *refresh_source;
  /* Rename… from the menu: the menu, closing, may give the focus back to
   * its button once the entry has it */
  gboolean               menu_rename;

  /* Template children */
  GtkStack              *title_stack;
  GtkLabel              *title_label;
  GtkEntry              *title_entry;
  GtkImage              *retry_icon;
  GtkMenuButton         *menu_button;
};

G_DEFINE_FINAL_TYPE (KagedSessionRow, kaged_session_row, GTK_TYPE_WIDGET)

static gboolean
title_to_label (GBinding     *binding,
                const GValue *from,
                GValue       *to,
                gpointer      user_data)
{
  const char *title = g_value_get_string (from);

  g_value_set_string (to, title != NULL && title[0] != '\0' ? title : _("New Conversation"));

  return TRUE;
}

static void update_retry (KagedSessionRow *self);

static gboolean
refresh_cb (gpointer user_data)
{
  KagedSessionRow *self = user_data;

  g_clear_pointer (&self->refresh_source, g_source_unref);
  update_retry (self);

  return G_SOURCE_REMOVE;
}

static void
update_retry (KagedSessionRow *self)
{
  KagedRetryScheduler *scheduler = g_signal_group_dup_target (self->scheduler_signals);
  g_autofree char *tooltip = NULL;
  gboolean shown = FALSE;

  kaged_clock_clear_source (&self->refresh_source);
  if (scheduler != NULL)
    {
      KagedRetrySchedulerState state = kaged_retry_scheduler_get_state (scheduler);
      g_autofree char *remaining = NULL;

      switch (state)
        {
        case KAGED_RETRY_SCHEDULER_STATE_ARMED:
          remaining = kaged_retry_format_duration (kaged_retry_scheduler_get_remaining_seconds (scheduler));
          /* Translators: %s is a duration, e.g. "1 min 30 s" */
          tooltip = g_strdup_printf (_("Retrying in %s"), remaining);
          shown = TRUE;
          break;

        case KAGED_RETRY_SCHEDULER_STATE_SCHEDULED:
          tooltip = kaged_retry_dup_scheduled_label (scheduler);
          shown = TRUE;
          self->refresh_source =
            kaged_clock_attach_timeout (kaged_retry_scheduler_get_clock (scheduler), NULL,
                                        TOOLTIP_REFRESH_MS, refresh_cb, self, NULL,
                                        "[kaged] sidebar retry time");
          break;

        case KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK:
          tooltip = g_strdup (_("Waiting for network…"));
          shown = TRUE;
          break;

        case KAGED_RETRY_SCHEDULER_STATE_DISPATCHING:
        case KAGED_RETRY_SCHEDULER_STATE_WATCHING:
          tooltip = g_strdup (_("Retrying now"));
          shown = TRUE;
          break;

        case KAGED_RETRY_SCHEDULER_STATE_IDLE:
        case KAGED_RETRY_SCHEDULER_STATE_CANCELLED:
        default:
          break;
        }

      gtk_image_set_from_icon_name (self->retry_icon,
                                    state == KAGED_RETRY_SCHEDULER_STATE_SCHEDULED
                                      ? "alarm-symbolic" : "view-refresh-symbolic");
      g_object_unref (scheduler);
    }

  gtk_widget_set_visible (GTK_WIDGET (self->retry_icon), shown);
  gtk_widget_set_tooltip_text (GTK_WIDGET (self), tooltip);
  if (shown)
    gtk_accessible_update_property (GTK_ACCESSIBLE (self->retry_icon),
                                    GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, tooltip, -1);
}

static void
follow_scheduler (KagedSessionRow *self)
{
  KagedRetryScheduler *scheduler = NULL;

  if (self->coordinator != NULL && self->session != NULL)
    scheduler = kaged_retry_coordinator_lookup_scheduler (self->coordinator,
                                                          kaged_session_get_id (self->session));

  g_signal_group_set_target (self->scheduler_signals, scheduler);
  update_retry (self);
}

static void
scheduler_added_cb (KagedRetryCoordinator *coordinator,
                    KagedRetryScheduler   *scheduler,
                    KagedSessionRow       *self)
{
  if (self->session != NULL &&
      kaged_retry_scheduler_get_session_id (scheduler) == kaged_session_get_id (self->session))
    follow_scheduler (self);
}

static void
finish_rename (KagedSessionRow *self,
               gboolean         commit)
{
  /* Focus also leaves the entry while the row is being destroyed. */
  if (self->title_stack == NULL ||
      g_strcmp0 (gtk_stack_get_visible_child_name (self->title_stack), "entry") != 0)
    return;

  gtk_stack_set_visible_child_name (self->title_stack, "label");

  if (commit && self->session != NULL)
    gtk_widget_activate_action (GTK_WIDGET (self), "session.rename", "(xs)",
                                kaged_session_get_id (self->session),
                                gtk_editable_get_text (GTK_EDITABLE (self->title_entry)));
}

static void
entry_activate_cb (KagedSessionRow *self)
{
  finish_rename (self, TRUE);
  gtk_widget_grab_focus (GTK_WIDGET (self));
}

static gboolean
entry_key_pressed_cb (GtkEventControllerKey *controller,
                      guint                  keyval,
                      guint                  keycode,
                      GdkModifierType        state,
                      KagedSessionRow       *self)
{
  /* Typing: whatever takes the focus now ends the rename. */
  self->menu_rename = FALSE;

  if (keyval != GDK_KEY_Escape)
    return FALSE;

  finish_rename (self, FALSE);
  gtk_widget_grab_focus (GTK_WIDGET (self));
  return TRUE;
}

static gboolean
refocus_entry_cb (gpointer user_data)
{
  KagedSessionRow *self = user_data;

  if (self->title_stack != NULL &&
      g_strcmp0 (gtk_stack_get_visible_child_name (self->title_stack), "entry") == 0)
    gtk_widget_grab_focus (GTK_WIDGET (self->title_entry));

  return G_SOURCE_REMOVE;
}

static void
entry_focus_leave_cb (KagedSessionRow *self)
{
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
  GtkWidget *focus = root != NULL ? gtk_root_get_focus (root) : NULL;

  /* Still in the entry (its text takes the focus it is given). */
  if (focus != NULL && gtk_widget_is_ancestor (focus, GTK_WIDGET (self->title_entry)))
    return;

  /* The closing menu took the focus, or gave it back to its button: the
   * entry that Rename… opened takes it again, once. */
  if (self->menu_rename &&
      (focus == NULL || focus == GTK_WIDGET (self->menu_button) ||
       gtk_widget_is_ancestor (focus, GTK_WIDGET (self->menu_button))))
    {
      self->menu_rename = FALSE;
      g_idle_add_full (G_PRIORITY_DEFAULT_IDLE, refocus_entry_cb, g_object_ref (self), g_object_unref);
      return;
    }

  self->menu_rename = FALSE;
  finish_rename (self, TRUE);
}

static gboolean
start_rename_cb (gpointer user_data)
{
  kaged_session_row_start_rename (user_data);

  return G_SOURCE_REMOVE;
}

/* From the row's menu: closing, the menu gives the focus back to its
 * button, which would take it from the entry and end the rename at once.
 * The entry opens once the menu has closed, and takes the focus back if
 * the menu's button gets it later still (as under X11). */
static void
rename_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *parameter)
{
  KagedSessionRow *self = KAGED_SESSION_ROW (widget);
  GtkPopover *menu = gtk_menu_button_get_popover (self->menu_button);

  self->menu_rename = TRUE;
  if (menu != NULL && gtk_widget_get_visible (GTK_WIDGET (menu)))
    g_idle_add_full (G_PRIORITY_DEFAULT_IDLE, start_rename_cb, g_object_ref (self), g_object_unref);
  else
    kaged_session_row_start_rename (self);
}

static void
delete_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *parameter)
{
  KagedSessionRow *self = KAGED_SESSION_ROW (widget);

  if (self->session != NULL)
    gtk_widget_activate_action (widget, "session.delete", "x",
                                kaged_session_get_id (self->session));
}

static void
kaged_session_row_dispose (GObject *object)
{
  KagedSessionRow *self = KAGED_SESSION_ROW (object);

  if (self->coordinator != NULL)
    g_clear_signal_handler (&self->scheduler_added_id, self->coordinator);
  g_clear_object (&self->coordinator);
  g_clear_signal_handler (&self->clock_format_id, kaged_retry_desktop_clock_settings ());
  kaged_clock_clear_source (&self->refresh_source);
  g_clear_object (&self->session);
  g_clear_object (&self->session_bindings);
  g_clear_object (&self->scheduler_signals);

  gtk_widget_dispose_template (GTK_WIDGET (object), KAGED_TYPE_SESSION_ROW);
  {
    GtkWidget *child;

    while ((child = gtk_widget_get_first_child (GTK_WIDGET (object))) != NULL)
      gtk_widget_unparent (child);
  }

  G_OBJECT_CLASS (kaged_session_row_parent_class)->dispose (object);
}

static void
kaged_session_row_class_init (KagedSessionRowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_session_row_dispose;

  gtk_widget_class_set_template_from_resource (widget_class, APPLICATION_PATH "/kaged-session-row.ui");
  gtk_widget_class_bind_template_child (widget_class, KagedSessionRow, title_stack);
  gtk_widget_class_bind_template_child (widget_class, KagedSessionRow, title_label);
  gtk_widget_class_bind_template_child (widget_class, KagedSessionRow, title_entry);
  gtk_widget_class_bind_template_child (widget_class, KagedSessionRow, retry_icon);
  gtk_widget_class_bind_template_child (widget_class, KagedSessionRow, menu_button);

  gtk_widget_class_install_action (widget_class, "row.rename", NULL, rename_action);
  gtk_widget_class_install_action (widget_class, "row.delete", NULL, delete_action);

  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
}

/* The menu is made when first opened: a sidebar builds a row for every
 * conversation it shows, and few menus are ever opened. */
static void
create_menu_cb (GtkMenuButton *menu_button,
                gpointer       user_data)
{
  g_autoptr(GMenu) menu = NULL;

  if (gtk_menu_button_get_menu_model (menu_button) != NULL)
    return;

  menu = g_menu_new ();
  g_menu_append (menu, _("_Rename…"), "row.rename");
  g_menu_append (menu, _("_Delete"), "row.delete");
  gtk_menu_button_set_menu_model (menu_button, G_MENU_MODEL (menu));
}

static void
kaged_session_row_init (KagedSessionRow *self)
{
  GSettings *clock_settings;
  GtkEventController *keys;

  gtk_widget_init_template (GTK_WIDGET (self));

  gtk_menu_button_set_create_popup_func (self->menu_button, create_menu_cb, NULL, NULL);

  self->session_bindings = g_binding_group_new ();
  g_binding_group_bind_full (self->session_bindings, "title", self->title_label, "label",
                             G_BINDING_SYNC_CREATE, title_to_label, NULL, NULL, NULL);

  self->scheduler_signals = g_signal_group_new (KAGED_TYPE_RETRY_SCHEDULER);
  g_signal_group_connect_swapped (self->scheduler_signals, "notify::state",
                                  G_CALLBACK (update_retry), self);
  g_signal_group_connect_swapped (self->scheduler_signals, "notify::remaining-seconds",
                                  G_CALLBACK (update_retry), self);
  g_signal_group_connect_swapped (self->scheduler_signals, "notify::next-eligible-time",
                                  G_CALLBACK (update_retry), self);
  /* "Retry after 14:32" follows the desktop's 12h/24h choice. */
  clock_settings = kaged_retry_desktop_clock_settings ();
  if (clock_settings != NULL)
    self->clock_format_id = g_signal_connect_swapped (clock_settings, "changed::clock-format",
                                                      G_CALLBACK (update_retry), self);

  /* The entry and its controllers can outlive the row while a window is
   * destroyed (focus leaves the entry then): none may call a freed row. */
  g_signal_connect_object (self->title_entry, "activate", G_CALLBACK (entry_activate_cb), self,
                           G_CONNECT_SWAPPED);
  keys = gtk_event_controller_key_new ();
  g_signal_connect_object (keys, "key-pressed", G_CALLBACK (entry_key_pressed_cb), self, 0);
  gtk_widget_add_controller (GTK_WIDGET (self->title_entry), keys);
  {
    GtkEventController *focus = gtk_event_controller_focus_new ();

    g_signal_connect_object (focus, "leave", G_CALLBACK (entry_focus_leave_cb), self,
                             G_CONNECT_SWAPPED);
    gtk_widget_add_controller (GTK_WIDGET (self->title_entry), focus);
  }
}

/**
 * kaged_session_row_new:
 * @coordinator: (nullable): where the sessions' Tier 2 retries are
 */
GtkWidget *
kaged_session_row_new (KagedRetryCoordinator *coordinator)
{
  KagedSessionRow *self = g_object_new (KAGED_TYPE_SESSION_ROW, NULL);

  if (coordinator != NULL)
    {
      self->coordinator = g_object_ref (coordinator);
      self->scheduler_added_id = g_signal_connect (coordinator, "scheduler-added",
                                                   G_CALLBACK (scheduler_added_cb), self);
    }

  return GTK_WIDGET (self);
}

KagedSession *
kaged_session_row_get_session (KagedSessionRow *self)
{
  g_return_val_if_fail (KAGED_IS_SESSION_ROW (self), NULL);

  return self->session;
}

void
kaged_session_row_set_session (KagedSessionRow *self,
                               KagedSession    *session)
{
  g_return_if_fail (KAGED_IS_SESSION_ROW (self));

  if (self->session == session)
    return;

  finish_rename (self, FALSE);
  g_set_object (&self->session, session);

  g_binding_group_set_source (self->session_bindings, session);
  follow_scheduler (self);
}

/**
 * kaged_session_row_start_rename:
 *
 * Puts the title in an entry to be edited; Enter keeps the new title,
 * Escape the old one.
 */
void
kaged_session_row_start_rename (KagedSessionRow *self)
{
  g_return_if_fail (KAGED_IS_SESSION_ROW (self));

  if (self->session == NULL)
    return;

  gtk_editable_set_text (GTK_EDITABLE (self->title_entry), kaged_session_get_title (self->session));
  gtk_stack_set_visible_child_name (self->title_stack, "entry");
  gtk_widget_grab_focus (GTK_WIDGET (self->title_entry));
  gtk_editable_select_region (GTK_EDITABLE (self->title_entry), 0, -1);
}

/**
 * kaged_session_row_get_retry_shown:
 *
 * Returns: whether the row shows a pending or running retry
 */
gboolean
kaged_session_row_get_retry_shown (KagedSessionRow *self)
{
  g_return_val_if_fail (KAGED_IS_SESSION_ROW (self), FALSE);

  return gtk_widget_get_visible (GTK_WIDGET (self->retry_icon));
}
