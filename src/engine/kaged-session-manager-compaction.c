/* kaged-session-manager-compaction.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-engine"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-retry-class.h"
#include "kaged-session-manager-private.h"

typedef struct
{
  KagedRunState *state;
  KagedChat     *chat;
  GArray        *ids;      /* the message ids being summarised */
  GString       *summary;
  gulong         attempt_id;
  gulong         delta_id;
} Compaction;

static void
compaction_free (Compaction *compaction)
{
  g_clear_signal_handler (&compaction->attempt_id, compaction->chat);
  g_clear_signal_handler (&compaction->delta_id, compaction->chat);
  g_string_free (compaction->summary, TRUE);
  g_clear_object (&compaction->chat);
  g_clear_pointer (&compaction->ids, g_array_unref);
  g_free (compaction);
}

/* The oldest turns: everything before the last operator message sent, at
 * least one message, and never the anchor itself. */
static guint
count_oldest_turns (GPtrArray *context)
{
  guint n = 0;

  for (guint i = 0; i < context->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (context, i);

      if (kaged_message_get_role (message) != KAGED_MESSAGE_ROLE_SUMMARY)
        n++;
    }

  /* Keep the newest turn (the anchor) and, where there is room, its
   * predecessor; summarise half of the rest, at least one message. */
  if (n <= 1)
    return 0;

  return MAX (1, (n - 1 + 1) / 2);
}

typedef struct
{
  KagedMessage *summary;
  GArray       *ids;
} SummaryWrite;

static gboolean
add_summary_in_transaction (KagedStore  *store,
                            gpointer     user_data,
                            GError     **error)
{
  SummaryWrite *write = user_data;

  if (!kaged_store_append_message (store, write->summary, error))
    return FALSE;

  return kaged_store_mark_compacted (store, kaged_message_get_id (write->summary),
                                     (const gint64 *)(gpointer)write->ids->data,
                                     write->ids->len, error);
}

/* Stores @summary and marks the messages it replaces compacted into it. */
static gboolean
add_summary (KagedSessionManager  *self,
             KagedMessage         *summary,
             GArray               *ids,
             GError              **error)
{
  SummaryWrite write = { summary, ids };

  return kaged_store_transaction (self->store, add_summary_in_transaction, &write, error);
}

static void
compaction_done_cb (GObject      *object,
                    GAsyncResult *result,
                    gpointer      user_data)
{
  Compaction *compaction = user_data;
  KagedRunState *state = compaction->state;
  KagedSessionManager *self = state->manager;
  g_autoptr(GError) error = NULL;
  g_autoptr(GError) store_error = NULL;
  g_autoptr(KagedMessage) summary = NULL;
  g_autofree char *summary_text = NULL;
  gboolean ok;

  ok = kaged_provider_chat_finish (KAGED_PROVIDER (object), result, &error);
  summary_text = g_strdup (compaction->summary->str);
  state->call_pending = FALSE;

  if (state->finished)
    {
      compaction_free (compaction);
      _kaged_run_state_release (state);
      return;
    }

  if (state->cancel_requested ||
      g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      compaction_free (compaction);
      _kaged_run_state_finish (state, error);
      return;
    }

  if (ok && summary_text != NULL && *g_strstrip (summary_text) != '\0')
    {
      summary = kaged_message_new ();
      kaged_message_set_session_id (summary, kaged_run_get_session_id (state->run));
      kaged_message_set_role (summary, KAGED_MESSAGE_ROLE_SUMMARY);
      kaged_message_set_content (summary, summary_text);
      kaged_message_set_created_at (summary, now_ms (self));

      if (!add_summary (self, summary, compaction->ids, &store_error))
        {
          compaction_free (compaction);
          _kaged_run_state_finish (state, store_error);
          return;
        }

      g_signal_emit (self, _kaged_session_manager_signals [MESSAGE_ADDED], 0, summary);
    }
  else if (error != NULL &&
           error->domain == KAGED_PROVIDER_ERROR &&
           kaged_provider_error_get_retry_class (error) == KAGED_RETRY_CLASS_CONTEXT_OVERFLOW)
    {
      /* Summarising overflowed too: leave the oldest turns out instead. */
      g_debug ("Summary overflowed; leaving out %u oldest messages", compaction->ids->len);

      summary = kaged_message_new ();
      kaged_message_set_session_id (summary, kaged_run_get_session_id (state->run));
      kaged_message_set_role (summary, KAGED_MESSAGE_ROLE_SUMMARY);
      kaged_message_set_content (summary,
                                 _("Earlier messages of this conversation were left out "
                                   "to fit the model’s context."));
      kaged_message_set_created_at (summary, now_ms (self));

      if (!add_summary (self, summary, compaction->ids, &store_error))
        {
          compaction_free (compaction);
          _kaged_run_state_finish (state, store_error);
          return;
        }

      g_signal_emit (self, _kaged_session_manager_signals [MESSAGE_ADDED], 0, summary);
    }
  else
    {
      /* The summary call failed for another reason: that is the run's
       * failure, with its own classification. */
      if (error == NULL)
        error = kaged_provider_error_new (KAGED_RETRY_CLASS_PROTOCOL_ERROR,
                                          "%s", _("The provider sent an empty summary"));
      compaction_free (compaction);
      _kaged_run_state_finish (state, error);
      return;
    }

  compaction_free (compaction);

  /* Exactly one re-run with the compacted context. */
  g_clear_pointer (&state->context, g_ptr_array_unref);
  state->context = _kaged_session_manager_build_context (self, state->run, &store_error);
  if (state->context == NULL)
    {
      _kaged_run_state_finish (state, store_error);
      return;
    }

  _kaged_run_state_open_chat (state);
}

static void
compaction_delta_cb (KagedChat      *chat,
                     KagedDeltaKind  kind,
                     const char     *text,
                     Compaction     *compaction)
{
  if (kind == KAGED_DELTA_TEXT && text != NULL)
    g_string_append (compaction->summary, text);
}

static void
compaction_attempt_cb (KagedChat          *chat,
                       const KagedAttempt *attempt,
                       Compaction         *compaction)
{
  _kaged_run_state_attempt_cb (chat, attempt, compaction->state);
}

void
_kaged_run_state_compact (KagedRunState *state)
{
  g_autoptr(GPtrArray) oldest = g_ptr_array_new_with_free_func (g_object_unref);
  g_autoptr(GString) transcript = g_string_new (NULL);
  g_autoptr(KagedMessage) request = NULL;
  Compaction *compaction;
  guint n;

  state->compacted = TRUE;

  n = count_oldest_turns (state->context);
  if (n == 0)
    {
      g_autoptr(GError) error =
        kaged_provider_error_new (KAGED_RETRY_CLASS_CONTEXT_OVERFLOW, "%s",
                                  _("The message alone is too long for the model"));

      kaged_provider_error_set_retryable (error, FALSE);
      _kaged_run_state_finish (state, error);
      return;
    }

  compaction = g_new0 (Compaction, 1);
  compaction->state = state;
  compaction->ids = g_array_new (FALSE, FALSE, sizeof (gint64));
  compaction->summary = g_string_new (NULL);

  for (guint i = 0; i < state->context->len && compaction->ids->len < n; i++)
    {
      KagedMessage *message = g_ptr_array_index (state->context, i);
      gint64 id = kaged_message_get_id (message);

      if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_SUMMARY)
        continue;

      g_array_append_val (compaction->ids, id);
      g_string_append_printf (transcript, "%s: %s\n\n",
                              kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_OPERATOR
                                ? "User" : "Assistant",
                              kaged_message_get_content (message));
    }

  request = kaged_message_new ();
  kaged_message_set_role (request, KAGED_MESSAGE_ROLE_OPERATOR);
  kaged_message_set_content (request, transcript->str);
  g_ptr_array_add (oldest, g_steal_pointer (&request));

  compaction->chat = kaged_chat_new (oldest,
                                     "Summarise the following conversation in a few short "
                                     "paragraphs. Keep every fact, name, number and decision "
                                     "that a continuation of the conversation may need. "
                                     "Answer with the summary only.");
  _kaged_run_state_call (state, compaction->chat,
                         G_CALLBACK (compaction_delta_cb), &compaction->delta_id,
                         G_CALLBACK (compaction_attempt_cb), &compaction->attempt_id,
                         compaction_done_cb, compaction);
}

