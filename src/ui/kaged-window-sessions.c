/* kaged-window-sessions.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-window"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-window-private.h"

/*
 * Deleting a conversation: the window asks first, then hides it and offers
 * Undo in a toast; it leaves the database when the toast goes without Undo
 * (or when the window closes).
 */

static void
delete_for_real (KagedWindow *self,
                 gint64       session_id)
{
  g_autoptr(GError) error = NULL;
  KagedRetryScheduler *scheduler = NULL;

  if (!g_hash_table_remove (self->deleting, &session_id) || self->session_list == NULL)
    return;

  /* Its retry must not start a run in a conversation that is going. */
  if (self->core != NULL)
    scheduler = kaged_core_lookup_retry (self->core, session_id);
  if (scheduler != NULL && kaged_retry_scheduler_is_pending (scheduler))
    kaged_retry_scheduler_cancel (scheduler);

  if (!kaged_session_list_delete (self->session_list, session_id, &error))
    kaged_window_toast (self, error->message);
}

static void
toast_dismissed_cb (AdwToast    *toast,
                    KagedWindow *self)
{
  gint64 *session_id = g_object_get_data (G_OBJECT (toast), "kaged-session-id");

  if (session_id != NULL)
    delete_for_real (self, *session_id);
}

static void
undo_delete_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);
  gint64 session_id = g_variant_get_int64 (parameter);
  gpointer was_shown = NULL;

  if (!g_hash_table_lookup_extended (self->deleting, &session_id, NULL, &was_shown))
    return;
  g_hash_table_remove (self->deleting, &session_id);

  if (self->session_list != NULL)
    kaged_session_list_set_hidden (self->session_list, session_id, FALSE);
  /* Back where it was read; a conversation deleted from its row while
   * another was read comes back to the sidebar only. */
  if (GPOINTER_TO_INT (was_shown))
    kaged_window_show_session (self, session_id);
}

static void
show_another (KagedWindow *self)
{
  g_autoptr(KagedSession) next = NULL;

  if (self->session_list != NULL)
    next = g_list_model_get_item (G_LIST_MODEL (self->session_list), 0);

  kaged_window_show_session (self, next != NULL ? kaged_session_get_id (next) : 0);
}

/**
 * kaged_window_delete_session:
 *
 * Hides @session_id and offers Undo; deletes it when the offer goes.
 */
void
kaged_window_delete_session (KagedWindow *self,
                             gint64       session_id)
{
  KagedSession *session;
  AdwToast *toast;
  g_autofree char *escaped = NULL;
  g_autofree char *title = NULL;

  g_return_if_fail (KAGED_IS_WINDOW (self));

  if (self->session_list == NULL ||
      (session = kaged_session_list_lookup (self->session_list, session_id)) == NULL)
    return;

  /* The toast's title is markup. */
  escaped = g_markup_escape_text (kaged_session_get_title (session) != NULL ? kaged_session_get_title (session) : "", -1);

  /* Each one deleted, and whether it was the one read. */
  g_hash_table_insert (self->deleting, g_memdup2 (&session_id, sizeof session_id),
                       GINT_TO_POINTER (self->session_id == session_id));
  kaged_session_list_set_hidden (self->session_list, session_id, TRUE);
  if (self->session_id == session_id)
    show_another (self);

  if (escaped[0] != '\0')
    /* Translators: a conversation was deleted, with Undo beside; %s is its title */
    title = g_strdup_printf (_("“%s” deleted"), escaped);
  else
    title = g_strdup (_("Conversation deleted"));
  toast = adw_toast_new (title);
  adw_toast_set_button_label (toast, _("_Undo"));
  adw_toast_set_action_name (toast, "session.undo-delete");
  adw_toast_set_action_target_value (toast, g_variant_new_int64 (session_id));
  adw_toast_set_priority (toast, ADW_TOAST_PRIORITY_HIGH);
  g_object_set_data_full (G_OBJECT (toast), "kaged-session-id",
                          g_memdup2 (&session_id, sizeof session_id), g_free);
  g_signal_connect_object (toast, "dismissed", G_CALLBACK (toast_dismissed_cb), self, 0);
  adw_toast_overlay_add_toast (self->toast_overlay, toast);
}

static void
confirm_response_cb (AdwMessageDialog *dialog,
                     const char       *response,
                     KagedWindow      *self)
{
  gint64 *session_id = g_object_get_data (G_OBJECT (dialog), "kaged-session-id");

  if (g_strcmp0 (response, "delete") == 0 && session_id != NULL)
    kaged_window_delete_session (self, *session_id);
}

static void
delete_session_action (GtkWidget  *widget,
                       const char *action_name,
                       GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);
  gint64 session_id = g_variant_get_int64 (parameter);
  KagedSession *session;
  GtkWidget *dialog;
  const char *title;

  if (self->session_list == NULL ||
      (session = kaged_session_list_lookup (self->session_list, session_id)) == NULL)
    return;

  title = kaged_session_get_title (session);
  dialog = adw_message_dialog_new (GTK_WINDOW (self), _("Delete Conversation?"), NULL);
  if (title != NULL && title[0] != '\0')
    /* Translators: %s is the title of a conversation */
    adw_message_dialog_format_body (ADW_MESSAGE_DIALOG (dialog),
                                    _("“%s” and all its messages will be deleted."), title);
  else
    adw_message_dialog_set_body (ADW_MESSAGE_DIALOG (dialog),
                                 _("The conversation and all its messages will be deleted."));
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog),
                                    "cancel", _("_Cancel"),
                                    "delete", _("_Delete"),
                                    NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "delete",
                                              ADW_RESPONSE_DESTRUCTIVE);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  g_object_set_data_full (G_OBJECT (dialog), "kaged-session-id",
                          g_memdup2 (&session_id, sizeof session_id), g_free);
  g_signal_connect_object (dialog, "response", G_CALLBACK (confirm_response_cb), self, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}

static void
delete_shown_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);

  if (self->session_id > 0)
    gtk_widget_activate_action (widget, "session.delete", "x", self->session_id);
}

/**
 * kaged_window_finish_deletes:
 *
 * Deletes the conversations whose Undo is still offered: the window is
 * going.
 */
void
kaged_window_finish_deletes (KagedWindow *self)
{
  g_autoptr(GList) ids = g_hash_table_get_keys (self->deleting);
  g_autoptr(GArray) copy = g_array_new (FALSE, FALSE, sizeof (gint64));

  for (const GList *iter = ids; iter != NULL; iter = iter->next)
    g_array_append_val (copy, *(gint64 *)iter->data);
  g_clear_pointer (&ids, g_list_free);

  for (guint i = 0; i < copy->len; i++)
    delete_for_real (self, g_array_index (copy, gint64, i));
}

void
kaged_window_class_init_sessions (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "session.delete", "x", delete_session_action);
  gtk_widget_class_install_action (widget_class, "session.undo-delete", "x", undo_delete_action);
  gtk_widget_class_install_action (widget_class, "win.delete-conversation", NULL,
                                   delete_shown_action);
}
