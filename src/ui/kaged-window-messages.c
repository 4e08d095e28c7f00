/* kaged-window-messages.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-window"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-conversation.h"
#include "kaged-message-row.h"
#include "kaged-window-private.h"

/**
 * kaged_window_open_conversation:
 *
 * Returns: (transfer full) (nullable): the current messages of
 *   @session_id, kept in step with the engine
 */
GListModel *
kaged_window_open_conversation (KagedWindow *self,
                                gint64       session_id)
{
  g_autoptr(GError) error = NULL;
  KagedConversation *conversation;

  conversation = kaged_conversation_new (kaged_window_get_manager (self), session_id, &error);
  if (conversation == NULL)
    kaged_window_toast (self, error->message);

  return G_LIST_MODEL (conversation);
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

/* ---------------------------------------------------------------------------
 * Rows
 * ------------------------------------------------------------------------- */

static gboolean
is_queued (KagedWindow  *self,
           KagedMessage *message)
{
  gint64 id = message != NULL ? kaged_message_get_id (message) : 0;

  return id > 0 && g_hash_table_contains (self->queued, &id);
}

static void
refresh_queued_rows (KagedWindow *self)
{
  for (GtkWidget *item = gtk_widget_get_first_child (GTK_WIDGET (self->message_view));
       item != NULL;
       item = gtk_widget_get_next_sibling (item))
    {
      GtkWidget *row = gtk_widget_get_first_child (item);

      if (KAGED_IS_MESSAGE_ROW (row))
        kaged_message_row_set_queued (KAGED_MESSAGE_ROW (row),
                                      is_queued (self, kaged_message_row_get_message (KAGED_MESSAGE_ROW (row))));
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

static GListModel *
list_versions (KagedWindow  *self,
               KagedMessage *reply)
{
  g_autoptr(GPtrArray) versions = NULL;
  GListStore *store;
  gint64 anchor_id;

  if (!KAGED_IS_CONVERSATION (self->conversation))
    return NULL;

  anchor_id = kaged_conversation_get_anchor_id (KAGED_CONVERSATION (self->conversation), reply);
  if (anchor_id <= 0 ||
      (versions = kaged_conversation_list_versions (KAGED_CONVERSATION (self->conversation),
                                                    anchor_id, NULL)) == NULL)
    return NULL;

  store = g_list_store_new (KAGED_TYPE_MESSAGE);
  g_list_store_splice (store, 0, 0, versions->pdata, versions->len);

  return G_LIST_MODEL (store);
}

static void
message_setup_cb (GtkSignalListItemFactory *factory,
                  GtkListItem              *item,
                  KagedWindow              *self)
{
  gtk_list_item_set_activatable (item, FALSE);
  gtk_list_item_set_child (item, kaged_message_row_new ());
}

static void
message_bind_cb (GtkSignalListItemFactory *factory,
                 GtkListItem              *item,
                 KagedWindow              *self)
{
  KagedMessageRow *row = KAGED_MESSAGE_ROW (gtk_list_item_get_child (item));
  KagedMessage *message = gtk_list_item_get_item (item);

  kaged_message_row_set_message (row, message);
  kaged_message_row_set_queued (row, is_queued (self, message));

  if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_AGENT && self->core != NULL)
    {
      g_autoptr(GListModel) versions = list_versions (self, message);
      g_autoptr(KagedRun) run = NULL;
      KagedProfile *profile = kaged_core_get_profile (self->core);

      if (kaged_message_get_run_id (message) > 0)
        run = kaged_session_manager_get_run (kaged_window_get_manager (self),
                                             kaged_message_get_session_id (message),
                                             kaged_message_get_run_id (message), NULL);
      kaged_message_row_set_versions (row, versions);
      kaged_message_row_set_run (row, run);
      if (profile != NULL)
        {
          kaged_message_row_set_provider_name (row, kaged_profile_get_name (profile));
          kaged_message_row_set_model_name (row, kaged_profile_get_model (profile));
        }
    }
}

static void
message_unbind_cb (GtkSignalListItemFactory *factory,
                   GtkListItem              *item,
                   KagedWindow              *self)
{
  KagedMessageRow *row = KAGED_MESSAGE_ROW (gtk_list_item_get_child (item));

  kaged_message_row_set_message (row, NULL);
  kaged_message_row_set_versions (row, NULL);
  kaged_message_row_set_run (row, NULL);
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
  gtk_widget_class_install_action (widget_class, "win.regenerate-latest", NULL,
                                   regenerate_latest_action);

  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_r,
                                       GDK_CONTROL_MASK | GDK_SHIFT_MASK,
                                       "win.regenerate-latest", NULL);
}
