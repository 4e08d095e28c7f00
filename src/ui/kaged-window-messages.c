/* kaged-window-messages.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-window"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-window-private.h"

/* ---------------------------------------------------------------------------
 * The conversation: the current messages of a session, in order, each one
 * object updated in place as its reply streams.
 * ------------------------------------------------------------------------- */

static KagedMessage *
find_message (GListStore *store,
              gint64      message_id,
              guint      *position)
{
  guint n = g_list_model_get_n_items (G_LIST_MODEL (store));

  /* Streaming happens at the end. */
  for (guint i = n; i > 0; i--)
    {
      g_autoptr(KagedMessage) message = g_list_model_get_item (G_LIST_MODEL (store), i - 1);

      if (kaged_message_get_id (message) == message_id)
        {
          if (position != NULL)
            *position = i - 1;
          return message;
        }
    }

  return NULL;
}

static gint64
store_session_id (GListStore *store)
{
  gint64 *session_id = g_object_get_data (G_OBJECT (store), "kaged-session-id");

  return session_id != NULL ? *session_id : 0;
}

static void
conversation_message_added_cb (KagedSessionManager *manager,
                               KagedMessage        *message,
                               GListStore          *store)
{
  if (kaged_message_get_session_id (message) != store_session_id (store) ||
      kaged_message_is_superseded (message) ||
      find_message (store, kaged_message_get_id (message), NULL) != NULL)
    return;

  g_list_store_append (store, message);
}

static void
conversation_message_delta_cb (KagedSessionManager *manager,
                               gint64               session_id,
                               gint64               message_id,
                               gint64               run_id,
                               const char          *text,
                               GListStore          *store)
{
  g_autofree char *content = NULL;
  KagedMessage *message;

  if (session_id != store_session_id (store) ||
      (message = find_message (store, message_id, NULL)) == NULL)
    return;

  content = g_strconcat (kaged_message_get_content (message), text, NULL);
  kaged_message_set_content (message, content);
}

static void
conversation_message_changed_cb (KagedSessionManager *manager,
                                 KagedMessage        *changed,
                                 GListStore          *store)
{
  KagedMessage *message;
  guint position = 0;

  if (kaged_message_get_session_id (changed) != store_session_id (store) ||
      (message = find_message (store, kaged_message_get_id (changed), &position)) == NULL)
    return;

  if (kaged_message_is_superseded (changed))
    {
      g_list_store_remove (store, position);
      return;
    }

  if (message == changed)
    return;

  kaged_message_set_content (message, kaged_message_get_content (changed));
  kaged_message_set_error_message (message, kaged_message_get_error_message (changed));
  kaged_message_set_retryable (message, kaged_message_get_retryable (changed));
  kaged_message_set_retry_class (message, kaged_message_get_retry_class (changed));
  kaged_message_set_retry_after_until (message, kaged_message_get_retry_after_until (changed));
  kaged_message_set_status (message, kaged_message_get_status (changed));
}

static void
conversation_remove (GListModel   *conversation,
                     const GArray *message_ids)
{
  if (!G_IS_LIST_STORE (conversation) || message_ids == NULL)
    return;

  for (guint i = 0; i < message_ids->len; i++)
    {
      guint position = 0;

      if (find_message (G_LIST_STORE (conversation), g_array_index (message_ids, gint64, i),
                        &position) != NULL)
        g_list_store_remove (G_LIST_STORE (conversation), position);
    }
}

/**
 * kaged_window_open_conversation:
 *
 * Returns: (transfer full): the current messages of @session_id, kept in
 *   step with the engine
 */
GListModel *
kaged_window_open_conversation (KagedWindow *self,
                                gint64       session_id)
{
  KagedSessionManager *manager = kaged_window_get_manager (self);
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  GListStore *store;

  store = g_list_store_new (KAGED_TYPE_MESSAGE);
  g_object_set_data_full (G_OBJECT (store), "kaged-session-id",
                          g_memdup2 (&session_id, sizeof session_id), g_free);

  messages = kaged_store_list_messages (kaged_session_manager_get_store (manager), session_id,
                                        FALSE, 0, G_MAXUINT, &error);
  if (messages == NULL)
    kaged_window_toast (self, error->message);
  else
    g_list_store_splice (store, 0, 0, messages->pdata, messages->len);

  g_signal_connect_object (manager, "message-added",
                           G_CALLBACK (conversation_message_added_cb), store, 0);
  g_signal_connect_object (manager, "message-delta",
                           G_CALLBACK (conversation_message_delta_cb), store, 0);
  g_signal_connect_object (manager, "message-changed",
                           G_CALLBACK (conversation_message_changed_cb), store, 0);

  return G_LIST_MODEL (store);
}

/* ---------------------------------------------------------------------------
 * Operations
 * ------------------------------------------------------------------------- */

/**
 * kaged_window_post:
 *
 * Posts @content to @session_id as the operator.
 *
 * Returns: (transfer full): the receipt, or %NULL with @error set
 */
KagedReceipt *
kaged_window_post (KagedWindow  *self,
                   gint64        session_id,
                   const char   *content,
                   GError      **error)
{
  return kaged_core_post (self->core, session_id, content, error);
}

/**
 * kaged_window_stop:
 *
 * Cancels the reply streaming in the shown conversation.
 */
gboolean
kaged_window_stop (KagedWindow  *self,
                   GError      **error)
{
  KagedSessionManager *manager = kaged_window_get_manager (self);
  g_autoptr(GPtrArray) runs = NULL;

  if (manager == NULL || self->session_id <= 0)
    return TRUE;

  runs = kaged_store_list_runs (kaged_session_manager_get_store (manager), self->session_id,
                                KAGED_RUN_STATUS_RUNNING, error);
  if (runs == NULL)
    return FALSE;

  for (guint i = 0; i < runs->len; i++)
    if (!kaged_core_cancel_run (self->core, self->session_id,
                                kaged_run_get_id (g_ptr_array_index (runs, i)), error))
      return FALSE;

  return TRUE;
}

static void
regenerate (KagedWindow *self,
            gint64       message_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;

  if (self->core == NULL || self->session_id <= 0)
    return;

  receipt = kaged_core_regenerate (self->core, self->session_id, message_id, &error);
  if (receipt == NULL)
    {
      kaged_window_toast (self, error->message);
      return;
    }

  conversation_remove (self->conversation, receipt->superseded_message_ids);
  self->follow_end = TRUE;
  kaged_window_follow_end (self);
}

static void
regenerate_action (GtkWidget  *widget,
                   const char *action_name,
                   GVariant   *parameter)
{
  regenerate (KAGED_WINDOW (widget), g_variant_get_int64 (parameter));
}

static void
regenerate_latest_action (GtkWidget  *widget,
                          const char *action_name,
                          GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);
  guint n;

  if (self->conversation == NULL)
    return;

  n = g_list_model_get_n_items (self->conversation);
  for (guint i = n; i > 0; i--)
    {
      g_autoptr(KagedMessage) message = g_list_model_get_item (self->conversation, i - 1);

      if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_AGENT)
        {
          regenerate (self, kaged_message_get_id (message));
          return;
        }
    }
}

static KagedMessage *
lookup_shown (KagedWindow *self,
              gint64       message_id)
{
  guint n;

  if (self->conversation == NULL)
    return NULL;

  n = g_list_model_get_n_items (self->conversation);
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(KagedMessage) message = g_list_model_get_item (self->conversation, i);

      if (kaged_message_get_id (message) == message_id)
        return message;
    }

  return NULL;
}

static void
copy_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);
  KagedMessage *message = lookup_shown (self, g_variant_get_int64 (parameter));

  if (message == NULL)
    return;

  gdk_clipboard_set_text (gtk_widget_get_clipboard (widget), kaged_message_get_content (message));
  kaged_window_toast (self, _("Copied to clipboard"));
}

/* ---------------------------------------------------------------------------
 * Rows
 * ------------------------------------------------------------------------- */

static void
refresh_queued_row (KagedWindow *self,
                    GtkWidget   *row)
{
  KagedMessage *message = g_object_get_data (G_OBJECT (row), "kaged-message");
  GtkWidget *queued_label = g_object_get_data (G_OBJECT (row), "kaged-queued-label");
  gint64 id = message != NULL ? kaged_message_get_id (message) : 0;

  gtk_widget_set_visible (queued_label, id > 0 && g_hash_table_contains (self->queued, &id));
}

static void
refresh_queued_rows (KagedWindow *self)
{
  for (GtkWidget *child = gtk_widget_get_first_child (GTK_WIDGET (self->message_view));
       child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *row = gtk_widget_get_first_child (child);

      if (row != NULL && g_object_get_data (G_OBJECT (row), "kaged-queued-label") != NULL)
        refresh_queued_row (self, row);
    }
}

/**
 * kaged_window_mark_queued:
 *
 * Shows the operator message @message_id as waiting for its turn.
 */
void
kaged_window_mark_queued (KagedWindow *self,
                          gint64       message_id,
                          gint64       run_id)
{
  g_hash_table_add (self->queued, g_memdup2 (&message_id, sizeof message_id));
  refresh_queued_rows (self);
}

void
kaged_window_unmark_queued (KagedWindow *self,
                            gint64       message_id)
{
  if (g_hash_table_remove (self->queued, &message_id))
    refresh_queued_rows (self);
}

static char *
describe_status (KagedMessage *message)
{
  switch (kaged_message_get_status (message))
    {
    case KAGED_MESSAGE_STATUS_FAILED:
      if (kaged_message_get_error_message (message) != NULL)
        /* Translators: %s says what went wrong */
        return g_strdup_printf (_("The reply failed: %s"), kaged_message_get_error_message (message));
      return g_strdup (_("The reply failed"));

    case KAGED_MESSAGE_STATUS_CANCELLED:
      return g_strdup (_("Stopped before the reply was complete"));

    case KAGED_MESSAGE_STATUS_INTERRUPTED:
      return g_strdup (_("Kaged stopped while this reply was being written"));

    case KAGED_MESSAGE_STATUS_NONE:
    case KAGED_MESSAGE_STATUS_STREAMING:
    case KAGED_MESSAGE_STATUS_COMPLETE:
    default:
      return NULL;
    }
}

static void
update_row_status (GtkWidget    *row,
                   GParamSpec   *pspec,
                   KagedMessage *message)
{
  GtkLabel *status_label = g_object_get_data (G_OBJECT (row), "kaged-status-label");
  g_autofree char *status = describe_status (message);

  gtk_label_set_label (status_label, status);
  gtk_widget_set_visible (GTK_WIDGET (status_label), status != NULL);
}

static void
update_row_description (GtkWidget    *row,
                        GParamSpec   *pspec,
                        KagedMessage *message)
{
  gtk_accessible_update_property (GTK_ACCESSIBLE (row),
                                  GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                  kaged_message_get_content (message),
                                  -1);
}

static GtkWidget *
action_button (const char *icon_name,
               const char *label,
               const char *action_name)
{
  GtkWidget *button = gtk_button_new_from_icon_name (icon_name);

  gtk_widget_set_tooltip_text (button, label);
  gtk_accessible_update_property (GTK_ACCESSIBLE (button),
                                  GTK_ACCESSIBLE_PROPERTY_LABEL, label,
                                  -1);
  /* The action name comes with the message's id, when the row is bound. */
  g_object_set_data (G_OBJECT (button), "kaged-action-name", (gpointer)action_name);
  gtk_widget_add_css_class (button, "flat");

  return button;
}

static void
message_setup_cb (GtkSignalListItemFactory *factory,
                  GtkListItem              *item,
                  KagedWindow              *self)
{
  GtkWidget *row = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  GtkWidget *content = gtk_label_new (NULL);
  GtkWidget *status = gtk_label_new (NULL);
  GtkWidget *queued = gtk_label_new (_("Queued — sent when the reply above is complete"));
  GtkWidget *actions = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
  GtkWidget *regenerate_button = action_button ("view-refresh-symbolic", _("Regenerate"),
                                                "message.regenerate");
  GtkWidget *edit_button = action_button ("document-edit-symbolic", _("Edit"), "message.edit");
  GtkWidget *copy_button = action_button ("edit-copy-symbolic", _("Copy"), "message.copy");
  GBindingGroup *bindings = g_binding_group_new ();

  gtk_widget_add_css_class (row, "kaged-message");
  gtk_label_set_wrap (GTK_LABEL (content), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (content), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_xalign (GTK_LABEL (content), 0);
  gtk_label_set_selectable (GTK_LABEL (content), TRUE);
  gtk_label_set_xalign (GTK_LABEL (status), 0);
  gtk_label_set_wrap (GTK_LABEL (status), TRUE);
  gtk_widget_add_css_class (status, "error");
  gtk_label_set_xalign (GTK_LABEL (queued), 0);
  gtk_widget_add_css_class (queued, "dim-label");
  gtk_widget_add_css_class (queued, "caption");
  gtk_widget_set_visible (queued, FALSE);

  gtk_box_append (GTK_BOX (actions), regenerate_button);
  gtk_box_append (GTK_BOX (actions), edit_button);
  gtk_box_append (GTK_BOX (actions), copy_button);
  gtk_box_append (GTK_BOX (row), content);
  gtk_box_append (GTK_BOX (row), status);
  gtk_box_append (GTK_BOX (row), queued);
  gtk_box_append (GTK_BOX (row), actions);

  g_binding_group_bind (bindings, "content", content, "label", G_BINDING_SYNC_CREATE);
  g_object_set_data_full (G_OBJECT (row), "kaged-bindings", bindings, g_object_unref);
  g_object_set_data (G_OBJECT (row), "kaged-status-label", status);
  g_object_set_data (G_OBJECT (row), "kaged-queued-label", queued);
  g_object_set_data (G_OBJECT (row), "kaged-regenerate", regenerate_button);
  g_object_set_data (G_OBJECT (row), "kaged-edit", edit_button);
  g_object_set_data (G_OBJECT (row), "kaged-copy", copy_button);

  gtk_list_item_set_activatable (item, FALSE);
  gtk_list_item_set_child (item, row);
}

static const char * const button_keys[] = { "kaged-regenerate", "kaged-edit", "kaged-copy" };

static void
message_bind_cb (GtkSignalListItemFactory *factory,
                 GtkListItem              *item,
                 KagedWindow              *self)
{
  GtkWidget *row = gtk_list_item_get_child (item);
  KagedMessage *message = gtk_list_item_get_item (item);
  gboolean agent = kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_AGENT;
  gboolean operator = kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_OPERATOR;
  GVariant *target = g_variant_new_int64 (kaged_message_get_id (message));

  g_variant_ref_sink (target);
  g_binding_group_set_source (g_object_get_data (G_OBJECT (row), "kaged-bindings"), message);
  g_object_set_data (G_OBJECT (row), "kaged-message", message);

  gtk_widget_remove_css_class (row, "operator");
  gtk_widget_remove_css_class (row, "agent");
  gtk_widget_add_css_class (row, operator ? "operator" : "agent");
  gtk_widget_set_halign (row, operator ? GTK_ALIGN_END : GTK_ALIGN_FILL);

  for (guint i = 0; i < G_N_ELEMENTS (button_keys); i++)
    {
      GtkActionable *button = g_object_get_data (G_OBJECT (row), button_keys[i]);

      gtk_actionable_set_action_target_value (button, target);
      gtk_actionable_set_action_name (button, g_object_get_data (G_OBJECT (button),
                                                                 "kaged-action-name"));
    }
  gtk_widget_set_visible (g_object_get_data (G_OBJECT (row), "kaged-regenerate"), agent);
  gtk_widget_set_visible (g_object_get_data (G_OBJECT (row), "kaged-edit"), operator);
  g_variant_unref (target);

  g_signal_connect_object (message, "notify::status", G_CALLBACK (update_row_status), row,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (message, "notify::error-message", G_CALLBACK (update_row_status), row,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (message, "notify::content", G_CALLBACK (update_row_description), row,
                           G_CONNECT_SWAPPED);
  update_row_status (row, NULL, message);
  update_row_description (row, NULL, message);
  refresh_queued_row (self, row);
}

static void
message_unbind_cb (GtkSignalListItemFactory *factory,
                   GtkListItem              *item,
                   KagedWindow              *self)
{
  GtkWidget *row = gtk_list_item_get_child (item);
  KagedMessage *message = g_object_get_data (G_OBJECT (row), "kaged-message");

  if (message != NULL)
    g_signal_handlers_disconnect_by_data (message, row);
  g_binding_group_set_source (g_object_get_data (G_OBJECT (row), "kaged-bindings"), NULL);
  g_object_set_data (G_OBJECT (row), "kaged-message", NULL);
}

GtkListItemFactory *
kaged_window_message_factory_new (KagedWindow *self)
{
  GtkListItemFactory *factory = gtk_signal_list_item_factory_new ();

  g_signal_connect (factory, "setup", G_CALLBACK (message_setup_cb), self);
  g_signal_connect (factory, "bind", G_CALLBACK (message_bind_cb), self);
  g_signal_connect (factory, "unbind", G_CALLBACK (message_unbind_cb), self);

  return factory;
}

void
kaged_window_class_init_messages (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "message.regenerate", "x", regenerate_action);
  gtk_widget_class_install_action (widget_class, "message.copy", "x", copy_action);
  gtk_widget_class_install_action (widget_class, "win.regenerate-latest", NULL,
                                   regenerate_latest_action);

  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_r,
                                       GDK_CONTROL_MASK | GDK_SHIFT_MASK,
                                       "win.regenerate-latest", NULL);
}
