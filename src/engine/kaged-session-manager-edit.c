/* kaged-session-manager-edit.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-engine"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-session-manager-private.h"

/* ---------------------------------------------------------------------------
 * Edit: an operator message said again, differently. The stored message is
 * never changed: it and everything after it are superseded, and the new
 * text is posted as a new message, all in one transaction.
 * ------------------------------------------------------------------------- */

typedef struct
{
  KagedSessionManager *self;
  KagedSessionEntry   *session;
  KagedMessage        *message;     /* the edited text, a new operator message */
  KagedRun            *run;
  gint64               edited_id;
  const char          *title;       /* the conversation's new title, or NULL */
  GArray              *superseded;
  GPtrArray           *dropped;
} EditWrite;

static gboolean
edit_in_transaction (KagedStore  *store,
                     gpointer     user_data,
                     GError     **error)
{
  EditWrite *write = user_data;
  KagedSessionManager *self = write->self;

  /* Queued runs from the edited message on answer what is replaced. */
  for (GList *l = write->session->queue.head; l != NULL; l = l->next)
    {
      KagedRun *queued = l->data;

      if (kaged_run_get_anchor_id (queued) < write->edited_id)
        continue;

      kaged_run_set_status (queued, KAGED_RUN_STATUS_CANCELLED);
      kaged_run_set_finished_at (queued, now_ms (self));
      if (!kaged_store_update_run (store, queued, error))
        return FALSE;
      g_ptr_array_add (write->dropped, g_object_ref (queued));
    }

  if (!kaged_store_append_message (store, write->message, error))
    return FALSE;

  if (write->title != NULL &&
      !kaged_store_rename_session (store, write->session->session_id, write->title, error))
    return FALSE;

  kaged_run_set_anchor_id (write->run, kaged_message_get_id (write->message));
  if (!kaged_store_create_run (store, write->run, error))
    return FALSE;

  g_clear_pointer (&write->superseded, g_array_unref);
  return kaged_store_supersede_from (store, write->session->session_id, write->edited_id,
                                     kaged_run_get_id (write->run),
                                     kaged_message_get_id (write->message),
                                     &write->superseded, error);
}

/* The title the conversation takes when @edited says @content instead: the
 * new text's, when @edited is its first message and its title was taken
 * from it (neither given nor renamed since); otherwise %NULL. */
static char *
title_after_edit (KagedSessionManager *self,
                  gint64               session_id,
                  KagedMessage        *edited,
                  const char          *content)
{
  g_autoptr(KagedSession) session = kaged_store_get_session (self->store, session_id, NULL);
  g_autoptr(GPtrArray) first = NULL;
  g_autofree char *old_title = NULL;
  g_autofree char *new_title = NULL;

  if (session == NULL)
    return NULL;

  first = kaged_store_list_messages (self->store, session_id, FALSE, 0, 1, NULL);
  if (first == NULL || first->len == 0 ||
      kaged_message_get_id (g_ptr_array_index (first, 0)) != kaged_message_get_id (edited))
    return NULL;

  old_title = kaged_session_title_from_content (kaged_message_get_content (edited));
  if (g_strcmp0 (kaged_session_get_title (session), old_title) != 0)
    return NULL;

  new_title = kaged_session_title_from_content (content);
  if (new_title[0] == '\0' || g_str_equal (new_title, old_title))
    return NULL;

  return g_steal_pointer (&new_title);
}

/**
 * kaged_session_manager_edit:
 * @operator_message_id: a current operator message of the session
 * @content: what it should have said
 *
 * Supersedes @operator_message_id and every current message after it
 * (kept, never changed), drops the queued runs and cancels the active run
 * that answer them, and posts @content as a new operator message with a
 * run of its own. A title taken from the edited message, when it is the
 * first one, follows it; a title given or renamed is never replaced.
 *
 * Returns: (transfer full): the receipt of the new message, with the
 *   superseded message ids, or %NULL with @error set and nothing changed
 */
KagedReceipt *
kaged_session_manager_edit (KagedSessionManager  *self,
                            gint64                session_id,
                            gint64                operator_message_id,
                            const char           *content,
                            GError              **error)
{
  g_autoptr(KagedMessage) edited = NULL;
  g_autoptr(KagedMessage) message = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GPtrArray) dropped = NULL;
  g_autoptr(GArray) superseded = NULL;
  g_autoptr(GError) local_error = NULL;
  g_autofree char *title = NULL;
  KagedSessionEntry *state;
  KagedReceipt *receipt;
  EditWrite write = { NULL, };

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  if (!_kaged_session_manager_check_content (self, content, error))
    return NULL;

  edited = _kaged_session_manager_get_message_in_session (self, session_id, operator_message_id,
                                                          error);
  if (edited == NULL)
    return NULL;

  if (kaged_message_get_role (edited) != KAGED_MESSAGE_ROLE_OPERATOR)
    {
      g_set_error_literal (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_ANCHOR,
                           _("Only a message you wrote can be edited"));
      return NULL;
    }

  if (kaged_message_is_superseded (edited))
    {
      g_set_error_literal (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_ANCHOR,
                           _("This message belongs to an earlier version of the conversation"));
      return NULL;
    }

  g_signal_emit (self, _kaged_session_manager_signals [OPERATOR_REQUEST], 0, session_id);

  state = _kaged_session_manager_get_session_state (self, session_id);
  dropped = g_ptr_array_new_with_free_func (g_object_unref);

  message = kaged_message_new ();
  kaged_message_set_session_id (message, session_id);
  kaged_message_set_role (message, KAGED_MESSAGE_ROLE_OPERATOR);
  kaged_message_set_content (message, content);
  kaged_message_set_created_at (message, now_ms (self));

  run = kaged_run_new ();
  kaged_run_set_session_id (run, session_id);
  kaged_run_set_status (run, KAGED_RUN_STATUS_QUEUED);
  kaged_run_set_created_at (run, now_ms (self));

  write.self = self;
  write.session = state;
  write.message = message;
  write.run = run;
  write.edited_id = operator_message_id;
  write.dropped = dropped;
  title = title_after_edit (self, session_id, edited, content);
  write.title = title;

  if (!kaged_store_transaction (self->store, edit_in_transaction, &write, &local_error))
    {
      g_clear_pointer (&write.superseded, g_array_unref);
      for (guint i = 0; i < dropped->len; i++)
        {
          kaged_run_set_status (g_ptr_array_index (dropped, i), KAGED_RUN_STATUS_QUEUED);
          kaged_run_set_finished_at (g_ptr_array_index (dropped, i), 0);
        }
      g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_STORE,
                   _("The message could not be edited: %s"), local_error->message);
      return NULL;
    }

  superseded = g_steal_pointer (&write.superseded);
  if (superseded != NULL && superseded->len > 0)
    g_signal_emit (self, _kaged_session_manager_signals [MESSAGES_SUPERSEDED], 0,
                   session_id, kaged_run_get_id (run), superseded);

  for (guint i = 0; i < dropped->len; i++)
    {
      KagedRun *queued = g_ptr_array_index (dropped, i);

      g_queue_remove (&state->queue, queued);
      g_signal_emit (self, _kaged_session_manager_signals [RUN_CHANGED], 0, queued);
      g_object_unref (queued);
    }

  if (state->active != NULL &&
      kaged_run_get_anchor_id (state->active->run) >= operator_message_id)
    {
      if (state->active->message != NULL)
        kaged_message_set_superseded_by_run (state->active->message, kaged_run_get_id (run));
      _kaged_session_state_cancel_active (self, state);
    }

  g_signal_emit (self, _kaged_session_manager_signals [MESSAGE_ADDED], 0, message);
  if (title != NULL)
    _kaged_session_manager_emit_session_changed (self, session_id);
  receipt = _kaged_session_manager_enqueue_run (self, state, run, kaged_message_get_id (message));
  if (superseded != NULL)
    g_array_append_vals (receipt->superseded_message_ids, superseded->data, superseded->len);

  return receipt;
}
