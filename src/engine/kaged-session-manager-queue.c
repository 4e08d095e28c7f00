/* kaged-session-manager-queue.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-engine"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "kaged-session-manager-private.h"

/* ---------------------------------------------------------------------------
 * Queues: one active run per session, the rest waiting their turn
 * ------------------------------------------------------------------------- */

static gboolean
start_run_in_transaction (KagedStore  *store,
                          gpointer     user_data,
                          GError     **error)
{
  KagedRunState *state = user_data;

  if (!kaged_store_update_run (store, state->run, error))
    return FALSE;

  return kaged_store_append_message (store, state->message, error);
}

/* Tells observers that @run started with @reply, unless one of them ended
 * it meanwhile: the end announced the reply then. Observers may cancel the
 * run at each step, so nothing here keeps a pointer to its state. */
static void
announce_run_started (KagedSessionManager *self,
                      KagedRun            *run,
                      KagedMessage        *reply)
{
  g_autoptr(KagedRun) hold_run = g_object_ref (run);
  g_autoptr(KagedMessage) hold_reply = g_object_ref (reply);
  gint64 session_id = kaged_run_get_session_id (run);
  KagedSessionEntry *session;

  if (!kaged_run_is_finished (hold_run))
    g_signal_emit (self, _kaged_session_manager_signals [RUN_CHANGED], 0, hold_run);

  session = g_hash_table_lookup (self->sessions, &session_id);
  if (kaged_run_is_finished (hold_run) || session == NULL || session->active == NULL ||
      session->active->run != hold_run || session->active->reply_announced)
    return;

  session->active->reply_announced = TRUE;
  g_signal_emit (self, _kaged_session_manager_signals [MESSAGE_ADDED], 0, hold_reply);
  _kaged_session_manager_emit_session_changed (self, session_id);
}

/* Makes @run, stored queued, the session's active run. */
static void
session_state_dispatch (KagedSessionManager *self,
                        KagedSessionEntry   *session,
                        KagedRun            *run)
{
  g_autoptr(GError) error = NULL;
  KagedRunState *state;

  g_assert (session->active == NULL);

  state = _kaged_run_state_new (self, session, run);

  if (!kaged_store_transaction (self->store, start_run_in_transaction, state, &error))
    {
      session->active = state;
      g_clear_object (&state->message);
      g_signal_emit (self, _kaged_session_manager_signals [RUN_CHANGED], 0, run);
      _kaged_run_state_finish (state, error);
      return;
    }

  _kaged_run_state_activate (state);
  announce_run_started (self, run, state->message);
}

void
_kaged_session_state_next (KagedSessionManager *self,
                           KagedSessionEntry   *session)
{
  while (session->active == NULL && !g_queue_is_empty (&session->queue))
    {
      g_autoptr(KagedRun) run = g_queue_pop_head (&session->queue);

      session_state_dispatch (self, session, run);
    }
}

/* Records the active run of @session cancelled at once; the provider call
 * is aborted and winds down on its own. */
void
_kaged_session_state_cancel_active (KagedSessionManager *self,
                                    KagedSessionEntry   *session)
{
  KagedRunState *state = session->active;

  g_assert (state != NULL);

  state->cancel_requested = TRUE;
  g_cancellable_cancel (state->cancellable);

  /* The provider may have finished synchronously on cancel. */
  if (!state->finished && session->active == state)
    _kaged_run_state_finish (state, NULL);
}

gboolean
_kaged_session_manager_check_content (KagedSessionManager  *self,
                                      const char           *content,
                                      GError              **error)
{
  gsize len = content != NULL ? strlen (content) : 0;

  if (len > self->max_content)
    {
      g_autofree char *limit = g_format_size (self->max_content);

      g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_TOO_LARGE,
                   _("The message is too long: at most %s can be sent at once"), limit);
      return FALSE;
    }

  if (content == NULL || !g_utf8_validate (content, len, NULL))
    {
      g_set_error_literal (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_CONTENT,
                           _("The message is not valid text"));
      return FALSE;
    }

  for (const char *p = content; *p != '\0'; p = g_utf8_next_char (p))
    {
      if (!g_unichar_isspace (g_utf8_get_char (p)))
        return TRUE;
    }

  g_set_error_literal (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_EMPTY_CONTENT,
                       _("The message is empty"));
  return FALSE;
}

static KagedSession *
get_session (KagedSessionManager  *self,
             gint64                session_id,
             GError              **error)
{
  GError *store_error = NULL;
  KagedSession *session;

  session = kaged_store_get_session (self->store, session_id, &store_error);
  if (session == NULL)
    _kaged_session_manager_propagate_store_error (error, store_error);

  return session;
}

static KagedReceipt *
receipt_new (KagedSessionEntry  *session,
             KagedRun           *run,
             gint64              message_id,
             KagedReceiptStatus  status)
{
  KagedReceipt *receipt = kaged_receipt_new ();

  receipt->session_id = session->session_id;
  receipt->message_id = message_id;
  receipt->run_id = kaged_run_get_id (run);
  receipt->status = status;

  return receipt;
}

static gboolean
session_state_can_dispatch (KagedSessionManager *self,
                            KagedSessionEntry   *session)
{
  return session->active == NULL && g_queue_is_empty (&session->queue) && !self->shutting_down;
}

KagedReceipt *
_kaged_session_manager_enqueue_run (KagedSessionManager *self,
                                    KagedSessionEntry   *session,
                                    KagedRun            *run,
                                    gint64               message_id)
{
  g_signal_emit (self, _kaged_session_manager_signals [RUN_CHANGED], 0, run);

  if (session_state_can_dispatch (self, session))
    {
      session_state_dispatch (self, session, run);
      return receipt_new (session, run, message_id, KAGED_RECEIPT_STATUS_DISPATCHED);
    }

  g_queue_push_tail (&session->queue, g_object_ref (run));
  return receipt_new (session, run, message_id, KAGED_RECEIPT_STATUS_QUEUED);
}

typedef struct
{
  KagedMessage  *message;
  KagedRun      *run;
  KagedRunState *start;     /* the run starts at once, or NULL */
  const char    *title;     /* for a session without one, or NULL */
} PostWrite;

static gboolean
post_in_transaction (KagedStore  *store,
                     gpointer     user_data,
                     GError     **error)
{
  PostWrite *write = user_data;

  if (!kaged_store_append_message (store, write->message, error))
    return FALSE;

  if (write->title != NULL &&
      !kaged_store_rename_session (store, kaged_message_get_session_id (write->message),
                                   write->title, error))
    return FALSE;

  kaged_run_set_anchor_id (write->run, kaged_message_get_id (write->message));

  if (!kaged_store_create_run (store, write->run, error))
    return FALSE;

  if (write->start == NULL)
    return TRUE;

  kaged_message_set_run_id (write->start->message, kaged_run_get_id (write->run));
  return kaged_store_append_message (store, write->start->message, error);
}

/**
 * kaged_session_manager_post:
 * @content: the operator's message
 *
 * Stores the operator message, creates a run anchored on it, and starts it,
 * or queues it behind the session's active run. Empty, whitespace-only or
 * too long content is refused and stores nothing.
 *
 * A session without a title takes the first line of @content as its title,
 * in the same transaction, whoever posted (the window, the HTTP API); a
 * title the session has, given or renamed, is never replaced.
 *
 * Returns: (transfer full): the receipt, or %NULL with @error set
 */
KagedReceipt *
kaged_session_manager_post (KagedSessionManager  *self,
                            gint64                session_id,
                            const char           *content,
                            GError              **error)
{
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedMessage) message = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GError) local_error = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  g_autofree char *title = NULL;
  KagedSessionEntry *state;
  KagedReceipt *receipt;
  PostWrite write = { NULL, };
  const char *current_title;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  if (!_kaged_session_manager_check_content (self, content, error))
    return NULL;

  session = get_session (self, session_id, error);
  if (session == NULL)
    return NULL;

  g_signal_emit (self, _kaged_session_manager_signals [OPERATOR_REQUEST], 0, session_id);

  message = kaged_message_new ();
  kaged_message_set_session_id (message, session_id);
  kaged_message_set_role (message, KAGED_MESSAGE_ROLE_OPERATOR);
  kaged_message_set_content (message, content);
  kaged_message_set_created_at (message, now_ms (self));

  run = kaged_run_new ();
  kaged_run_set_session_id (run, session_id);
  kaged_run_set_status (run, KAGED_RUN_STATUS_QUEUED);
  kaged_run_set_created_at (run, now_ms (self));

  /* A run that starts at once is stored running, with its agent message,
   * in the same transaction as the operator message. */
  state = _kaged_session_manager_get_session_state (self, session_id);
  write.message = message;
  write.run = run;
  current_title = kaged_session_get_title (session);
  if (current_title == NULL || current_title[0] == '\0')
    {
      title = kaged_session_title_from_content (content);
      if (title[0] != '\0')
        write.title = title;
    }
  if (session_state_can_dispatch (self, state))
    write.start = _kaged_run_state_new (self, state, run);

  if (!kaged_store_transaction (self->store, post_in_transaction, &write, &local_error))
    {
      g_clear_pointer (&write.start, _kaged_run_state_free);
      g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_STORE,
                   _("The message could not be saved: %s"), local_error->message);
      return NULL;
    }

  if (write.start == NULL)
    {
      g_signal_emit (self, _kaged_session_manager_signals [MESSAGE_ADDED], 0, message);
      if (write.title != NULL)
        _kaged_session_manager_emit_session_changed (self, session_id);
      return _kaged_session_manager_enqueue_run (self, state, run, kaged_message_get_id (message));
    }

  receipt = receipt_new (state, run, kaged_message_get_id (message),
                         KAGED_RECEIPT_STATUS_DISPATCHED);
  reply = g_object_ref (write.start->message);
  _kaged_run_state_activate (g_steal_pointer (&write.start));

  /* Observers see the run created and waiting, then started, as any other;
   * one of them may cancel it on the way. */
  g_signal_emit (self, _kaged_session_manager_signals [MESSAGE_ADDED], 0, message);
  if (write.title != NULL)
    _kaged_session_manager_emit_session_changed (self, session_id);
  if (kaged_run_get_status (run) == KAGED_RUN_STATUS_RUNNING)
    {
      kaged_run_set_status (run, KAGED_RUN_STATUS_QUEUED);
      g_signal_emit (self, _kaged_session_manager_signals [RUN_CHANGED], 0, run);
      if (kaged_run_get_status (run) == KAGED_RUN_STATUS_QUEUED)
        kaged_run_set_status (run, KAGED_RUN_STATUS_RUNNING);
    }
  announce_run_started (self, run, reply);

  return receipt;
}

typedef struct
{
  KagedSessionManager  *self;
  KagedSessionEntry    *session;
  KagedRun             *run;
  gint64                anchor_id;
  GArray               *superseded;
  GPtrArray            *dropped;
} RegenerateWrite;

static gboolean
regenerate_in_transaction (KagedStore  *store,
                           gpointer     user_data,
                           GError     **error)
{
  RegenerateWrite *write = user_data;
  KagedSessionManager *self = write->self;
  KagedSessionEntry *session = write->session;
  KagedRun *run = write->run;
  gint64 anchor_id = write->anchor_id;
  GPtrArray *dropped = write->dropped;

  /* Queued runs from the anchor on are replaced by the new run. */
  for (GList *l = session->queue.head; l != NULL; l = l->next)
    {
      KagedRun *queued = l->data;

      if (kaged_run_get_anchor_id (queued) < anchor_id)
        continue;

      kaged_run_set_status (queued, KAGED_RUN_STATUS_CANCELLED);
      kaged_run_set_finished_at (queued, now_ms (self));
      if (!kaged_store_update_run (self->store, queued, error))
        return FALSE;
      g_ptr_array_add (dropped, g_object_ref (queued));
    }

  if (!kaged_store_create_run (self->store, run, error))
    return FALSE;

  g_clear_pointer (&write->superseded, g_array_unref);
  return kaged_store_supersede_after (self->store, session->session_id, anchor_id,
                                      kaged_run_get_id (run), &write->superseded, error);
}

static KagedReceipt *
regenerate (KagedSessionManager  *self,
            gint64                session_id,
            gint64                operator_message_id,
            gboolean              for_retry,
            GError              **error)
{
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedMessage) anchor = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GArray) superseded = NULL;
  g_autoptr(GPtrArray) dropped = NULL;
  g_autoptr(GError) local_error = NULL;
  RegenerateWrite write;
  KagedSessionEntry *state;
  KagedReceipt *receipt;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  session = get_session (self, session_id, error);
  if (session == NULL)
    return NULL;

  anchor = _kaged_session_manager_get_message_in_session (self, session_id, operator_message_id,
                                                          error);
  if (anchor == NULL)
    return NULL;

  if (kaged_message_get_role (anchor) != KAGED_MESSAGE_ROLE_OPERATOR)
    {
      g_set_error_literal (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_ANCHOR,
                           _("A reply can only be regenerated from a message you wrote"));
      return NULL;
    }

  if (kaged_message_is_superseded (anchor))
    {
      g_set_error_literal (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_ANCHOR,
                           _("This message belongs to an earlier version of the conversation"));
      return NULL;
    }

  if (!for_retry)
    g_signal_emit (self, _kaged_session_manager_signals [OPERATOR_REQUEST], 0, session_id);

  state = _kaged_session_manager_get_session_state (self, session_id);
  dropped = g_ptr_array_new_with_free_func (g_object_unref);

  run = kaged_run_new ();
  kaged_run_set_session_id (run, session_id);
  kaged_run_set_anchor_id (run, operator_message_id);
  kaged_run_set_status (run, KAGED_RUN_STATUS_QUEUED);
  kaged_run_set_created_at (run, now_ms (self));

  write.self = self;
  write.session = state;
  write.run = run;
  write.anchor_id = operator_message_id;
  write.superseded = NULL;
  write.dropped = dropped;

  if (!kaged_store_transaction (self->store, regenerate_in_transaction, &write, &local_error))
    {
      g_clear_pointer (&write.superseded, g_array_unref);
      /* Put the queued runs' state back as it was. */
      for (guint i = 0; i < dropped->len; i++)
        {
          kaged_run_set_status (g_ptr_array_index (dropped, i), KAGED_RUN_STATUS_QUEUED);
          kaged_run_set_finished_at (g_ptr_array_index (dropped, i), 0);
        }
      g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_STORE,
                   _("The reply could not be regenerated: %s"), local_error->message);
      return NULL;
    }

  if (write.superseded != NULL && write.superseded->len > 0)
    g_signal_emit (self, _kaged_session_manager_signals [MESSAGES_SUPERSEDED], 0,
                   session_id, kaged_run_get_id (run), write.superseded);

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
      /* Its agent message was superseded above: keep the object in step. */
      if (state->active->message != NULL)
        kaged_message_set_superseded_by_run (state->active->message, kaged_run_get_id (run));
      _kaged_session_state_cancel_active (self, state);
    }

  superseded = g_steal_pointer (&write.superseded);

  receipt = _kaged_session_manager_enqueue_run (self, state, run, operator_message_id);
  if (superseded != NULL)
    g_array_append_vals (receipt->superseded_message_ids, superseded->data, superseded->len);

  return receipt;
}

/**
 * kaged_session_manager_regenerate:
 * @operator_message_id: the operator message to answer again
 *
 * Supersedes every current message after the operator message (kept, not
 * deleted), drops queued runs and cancels the active run from that message
 * on, and starts a fresh run from its content. No operator message is
 * created or changed.
 *
 * Returns: (transfer full): the receipt with the superseded message ids, or
 *   %NULL with @error set and nothing changed
 */
KagedReceipt *
kaged_session_manager_regenerate (KagedSessionManager  *self,
                                  gint64                session_id,
                                  gint64                operator_message_id,
                                  GError              **error)
{
  return regenerate (self, session_id, operator_message_id, FALSE, error);
}

/**
 * kaged_session_manager_regenerate_for_retry:
 *
 * The regenerate Tier 2 makes when its wait is over: the same as
 * kaged_session_manager_regenerate(), without ::operator-request.
 *
 * Returns: (transfer full): the receipt, or %NULL with @error set and
 *   nothing changed
 */
KagedReceipt *
kaged_session_manager_regenerate_for_retry (KagedSessionManager  *self,
                                            gint64                session_id,
                                            gint64                operator_message_id,
                                            GError              **error)
{
  return regenerate (self, session_id, operator_message_id, TRUE, error);
}

/**
 * kaged_session_manager_cancel:
 *
 * Cancels a run: a running one is aborted (request, stream or retry wait)
 * and recorded cancelled with its partial reply kept; a queued one is
 * dropped as cancelled. A finished run is left alone with
 * %KAGED_ENGINE_ERROR_RUN_FINISHED.
 *
 * Returns: %TRUE if the run was cancelled
 */
gboolean
kaged_session_manager_cancel (KagedSessionManager  *self,
                              gint64                session_id,
                              gint64                run_id,
                              GError              **error)
{
  g_autoptr(KagedRun) run = NULL;
  KagedSessionEntry *session;
  KagedRun *queued;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), FALSE);

  session = g_hash_table_lookup (self->sessions, &session_id);

  if (_kaged_session_manager_find_active_run (self, session_id, run_id) != NULL)
    {
      _kaged_session_state_cancel_active (self, session);
      return TRUE;
    }

  if ((queued = _kaged_session_manager_find_queued_run (self, session_id, run_id)) != NULL)
    {
      g_autoptr(GError) store_error = NULL;

      kaged_run_set_status (queued, KAGED_RUN_STATUS_CANCELLED);
      kaged_run_set_finished_at (queued, now_ms (self));
      if (!kaged_store_update_run (self->store, queued, &store_error))
        {
          kaged_run_set_status (queued, KAGED_RUN_STATUS_QUEUED);
          kaged_run_set_finished_at (queued, 0);
          g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_STORE,
                       _("The run could not be cancelled: %s"), store_error->message);
          return FALSE;
        }

      g_queue_remove (&session->queue, queued);
      g_signal_emit (self, _kaged_session_manager_signals [RUN_CHANGED], 0, queued);
      g_object_unref (queued);
      return TRUE;
    }

  run = kaged_session_manager_get_run (self, session_id, run_id, error);
  if (run == NULL)
    return FALSE;

  g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_RUN_FINISHED,
               _("The run has already ended"));
  return FALSE;
}

