/* kaged-session-manager-runner.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-engine"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-retry-class.h"
#include "kaged-session-manager-private.h"

/* Observers see deltas at most this often per run. */
#define DELTA_INTERVAL_MS 50
/* Streamed text reaches the database at most this often per run. */
#define FLUSH_INTERVAL_MS 250

static void run_state_start (KagedRunState *state);

static void
run_state_forget_start (KagedRunState *state)
{
  if (state->start_pending)
    g_queue_remove (&state->manager->starting, state);
  state->start_pending = FALSE;
}

void
_kaged_run_state_free (KagedRunState *state)
{
  run_state_forget_start (state);
  kaged_clock_clear_source (&state->delta_source);
  kaged_clock_clear_source (&state->flush_source);
  if (state->chat != NULL)
    {
      g_clear_signal_handler (&state->delta_id, state->chat);
      g_clear_signal_handler (&state->attempt_id, state->chat);
    }
  g_clear_object (&state->chat);
  g_clear_object (&state->provider);
  g_clear_object (&state->cancellable);
  g_clear_object (&state->run);
  g_clear_object (&state->message);
  g_clear_pointer (&state->context, g_ptr_array_unref);
  g_clear_object (&state->profile);
  g_clear_pointer (&state->profile_id, g_free);
  g_clear_pointer (&state->system_prompt, g_free);
  g_clear_pointer (&state->provider_key, g_free);
  g_clear_object (&state->manager);
  if (state->text != NULL)
    g_string_free (state->text, TRUE);
  if (state->pending != NULL)
    g_string_free (state->pending, TRUE);
  g_free (state);
}

/* Frees a detached state whose provider call has ended. The manager stays
 * alive until the state is out of its list, even if the state held the
 * last reference. */
void
_kaged_run_state_release (KagedRunState *state)
{
  g_autoptr(KagedSessionManager) self = g_object_ref (state->manager);

  g_ptr_array_remove_fast (self->detached, state);
}

static void
warn_store_error (const char   *what,
                  const GError *error)
{
  g_warning ("Could not %s: %s", what, error->message);
}

/* ---------------------------------------------------------------------------
 * Streaming into the agent message
 * ------------------------------------------------------------------------- */

static void
run_state_announce (KagedRunState *state)
{
  g_autofree char *text = NULL;

  kaged_clock_clear_source (&state->delta_source);

  if (state->pending->len == 0 || state->message == NULL)
    return;

  text = g_strndup (state->pending->str, state->pending->len);
  g_string_truncate (state->pending, 0);

  g_signal_emit (state->manager, _kaged_session_manager_signals [MESSAGE_DELTA], 0,
                 kaged_run_get_session_id (state->run),
                 kaged_message_get_id (state->message),
                 kaged_run_get_id (state->run),
                 text);
}

static gboolean
run_state_announce_cb (gpointer user_data)
{
  KagedRunState *state = user_data;

  g_clear_pointer (&state->delta_source, g_source_unref);
  run_state_announce (state);

  return G_SOURCE_REMOVE;
}

static void
run_state_flush (KagedRunState *state)
{
  g_autoptr(GError) error = NULL;

  kaged_clock_clear_source (&state->flush_source);

  if (!state->dirty || state->message == NULL)
    return;

  state->dirty = FALSE;
  kaged_message_set_content (state->message, state->text->str);
  /* Without waiting for the disk: the reply's end takes this along. */
  if (!kaged_store_save_streaming_text (state->manager->store, state->message, &error))
    warn_store_error ("save the reply", error);
}

static gboolean
run_state_flush_cb (gpointer user_data)
{
  KagedRunState *state = user_data;

  g_clear_pointer (&state->flush_source, g_source_unref);
  run_state_flush (state);

  return G_SOURCE_REMOVE;
}

static void
chat_delta_cb (KagedChat      *chat,
               KagedDeltaKind  kind,
               const char     *text,
               KagedRunState  *state)
{
  KagedSessionManager *self = state->manager;

  if (kind != KAGED_DELTA_TEXT || text == NULL || *text == '\0' || state->finished)
    return;

  g_string_append (state->text, text);
  g_string_append (state->pending, text);
  state->dirty = TRUE;

  if (state->delta_source == NULL)
    state->delta_source = kaged_clock_attach_timeout (self->clock, NULL, DELTA_INTERVAL_MS,
                                                      run_state_announce_cb, state, NULL,
                                                      "[kaged] announce deltas");
  if (state->flush_source == NULL)
    state->flush_source = kaged_clock_attach_timeout (self->clock, NULL, FLUSH_INTERVAL_MS,
                                                      run_state_flush_cb, state, NULL,
                                                      "[kaged] save reply");
}

void
_kaged_run_state_attempt_cb (KagedChat          *chat,
                             const KagedAttempt *attempt,
                             KagedRunState      *state)
{
  KagedSessionManager *self = state->manager;
  g_autoptr(GError) error = NULL;

  /* A cancelled run is recorded at once; the attempt the cancel cut short
   * is logged as its call winds down, and kept with the others. */
  if (state->finished)
    {
      if (state->cancel_requested && !self->shutting_down)
        {
          kaged_run_add_attempt (state->run, attempt);
          if (!kaged_store_append_attempt (self->store, kaged_run_get_id (state->run), attempt,
                                           &error))
            warn_store_error ("record an attempt", error);
        }
      return;
    }

  kaged_run_add_attempt (state->run, attempt);
  if (!kaged_store_append_attempt (self->store, kaged_run_get_id (state->run), attempt, &error))
    warn_store_error ("record an attempt", error);

  if (attempt->http_status != 0)
    kaged_run_set_http_status (state->run, attempt->http_status);

  /* An attempt that is followed by another logs the wait before it. */
  if (attempt->wait_ms > 0)
    {
      kaged_run_set_next_attempt_at (state->run, kaged_clock_get_wall_ms (self->clock) + attempt->wait_ms);
      g_signal_emit (self, _kaged_session_manager_signals [RUN_RETRYING], 0, state->run, attempt);
    }
}

/* ---------------------------------------------------------------------------
 * Finishing a run
 * ------------------------------------------------------------------------- */

static void
apply_classification (KagedRun     *run,
                      KagedMessage *message,
                      const GError *error)
{
  KagedRetryClass retry_class = KAGED_RETRY_CLASS_PROTOCOL_ERROR;
  gboolean retryable = FALSE;
  gint64 until = 0;
  guint http_status = 0;

  if (error->domain == KAGED_PROVIDER_ERROR)
    {
      retry_class = kaged_provider_error_get_retry_class (error);
      retryable = kaged_provider_error_get_retryable (error);
      until = kaged_provider_error_get_retry_after_until (error);
      http_status = kaged_provider_error_get_http_status (error);
    }

  /* quota_scheduled is retryable only together with a reset time. */
  if (retry_class == KAGED_RETRY_CLASS_QUOTA_SCHEDULED && until == 0)
    retryable = FALSE;

  kaged_run_set_retry_class (run, retry_class);
  kaged_run_set_retryable (run, retryable);
  kaged_run_set_retry_after_until (run, until);
  if (http_status != 0)
    kaged_run_set_http_status (run, http_status);
  kaged_run_set_error_message (run, error->message);

  if (message != NULL)
    {
      kaged_message_set_retry_class (message, retry_class);
      kaged_message_set_retryable (message, retryable);
      kaged_message_set_retry_after_until (message, until);
      kaged_message_set_error_message (message, error->message);
    }
}

static void
clear_classification (KagedRun     *run,
                      KagedMessage *message)
{
  kaged_run_set_retry_class (run, KAGED_RETRY_CLASS_NONE);
  kaged_run_set_retryable (run, FALSE);
  kaged_run_set_retry_after_until (run, 0);
  kaged_run_set_error_message (run, NULL);

  if (message != NULL)
    {
      kaged_message_set_retry_class (message, KAGED_RETRY_CLASS_NONE);
      kaged_message_set_retryable (message, FALSE);
      kaged_message_set_retry_after_until (message, 0);
      kaged_message_set_error_message (message, NULL);
    }
}

static gboolean
save_run_and_message (KagedStore  *store,
                      gpointer     user_data,
                      GError     **error)
{
  KagedRunState *state = user_data;

  if (state->message != NULL && !kaged_store_update_message (store, state->message, error))
    return FALSE;

  /* The profile and model it went through, once it chose them. */
  if (state->profile != NULL &&
      !kaged_store_set_run_model (store, kaged_run_get_id (state->run), state->profile_id,
                                  kaged_profile_get_name (state->profile),
                                  kaged_profile_get_model (state->profile), error))
    return FALSE;

  return kaged_store_update_run (store, state->run, error);
}

/*
 * Records the outcome of the active run of a session, detaches it and
 * starts the next queued run. @error is %NULL on success; a cancelled run
 * is recorded cancelled whatever @error says.
 */
void
_kaged_run_state_finish (KagedRunState *state,
                         const GError  *error)
{
  g_autoptr(KagedSessionManager) self = g_object_ref (state->manager);
  KagedSessionEntry *session = state->session;
  g_autoptr(GError) local_error = NULL;
  KagedRunStatus status;
  KagedMessageStatus message_status;

  g_assert (!state->finished);
  state->finished = TRUE;

  if (state->cancel_requested)
    {
      status = KAGED_RUN_STATUS_CANCELLED;
      message_status = KAGED_MESSAGE_STATUS_CANCELLED;
      clear_classification (state->run, state->message);
    }
  else if (error == NULL)
    {
      status = KAGED_RUN_STATUS_SUCCEEDED;
      message_status = KAGED_MESSAGE_STATUS_COMPLETE;
      clear_classification (state->run, state->message);
    }
  else if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      /* Only the manager cancels; treat a stray cancellation the same way. */
      status = KAGED_RUN_STATUS_CANCELLED;
      message_status = KAGED_MESSAGE_STATUS_CANCELLED;
      clear_classification (state->run, state->message);
    }
  else
    {
      status = KAGED_RUN_STATUS_FAILED;
      message_status = KAGED_MESSAGE_STATUS_FAILED;
      apply_classification (state->run, state->message, error);
    }

  run_state_forget_start (state);
  kaged_clock_clear_source (&state->delta_source);
  kaged_clock_clear_source (&state->flush_source);

  if (state->chat != NULL)
    {
      kaged_run_set_input_tokens (state->run, kaged_chat_get_input_tokens (state->chat));
      kaged_run_set_output_tokens (state->run, kaged_chat_get_output_tokens (state->chat));
    }

  kaged_run_set_status (state->run, status);
  kaged_run_set_finished_at (state->run, now_ms (self));

  if (state->message != NULL)
    {
      kaged_message_set_content (state->message, state->text->str);
      kaged_message_set_status (state->message, message_status);
    }
  if (!kaged_store_transaction (self->store, save_run_and_message, state, &local_error))
    warn_store_error ("record the end of a run", local_error);
  state->dirty = FALSE;

  /* The last words reach observers before the run is announced finished. */
  run_state_announce (state);

  /* An observer may have ended the run before its reply was announced. */
  if (state->message != NULL && !state->reply_announced)
    {
      state->reply_announced = TRUE;
      g_signal_emit (self, _kaged_session_manager_signals [MESSAGE_ADDED], 0, state->message);
    }
  if (state->message != NULL)
    g_signal_emit (self, _kaged_session_manager_signals [MESSAGE_CHANGED], 0, state->message);
  g_signal_emit (self, _kaged_session_manager_signals [RUN_CHANGED], 0, state->run);

  if (session != NULL)
    {
      g_assert (session->active == state);
      session->active = NULL;
      state->session = NULL;
    }

  /* A cancelled provider call still winds down: its callback frees the
   * state. Otherwise nothing refers to it any more. */
  if (state->call_pending)
    g_ptr_array_add (self->detached, state);
  else
    _kaged_run_state_free (state);

  if (session != NULL)
    {
      _kaged_session_manager_emit_session_changed (self, session->session_id);
      if (!self->shutting_down)
        _kaged_session_state_next (self, session);
    }
}

/* ---------------------------------------------------------------------------
 * Context
 * ------------------------------------------------------------------------- */

static gboolean
message_in_context (KagedMessage *message)
{
  if (kaged_message_is_superseded (message) || kaged_message_get_compacted (message))
    return FALSE;

  switch (kaged_message_get_role (message))
    {
    case KAGED_MESSAGE_ROLE_OPERATOR:
    case KAGED_MESSAGE_ROLE_SUMMARY:
      return TRUE;

    case KAGED_MESSAGE_ROLE_AGENT:
      /* A reply that failed or was stopped is shown, not sent. */
      return kaged_message_get_status (message) == KAGED_MESSAGE_STATUS_COMPLETE;

    default:
      return FALSE;
    }
}

/*
 * The context of a run: the session's current messages up to its anchor,
 * in conversation order (a reply to an earlier question that was posted
 * later still comes before the anchor). Summaries replace the turns they
 * compacted and come first.
 */
GPtrArray *
_kaged_session_manager_build_context (KagedSessionManager  *self,
                                      KagedRun             *run,
                                      GError              **error)
{
  g_autoptr(GPtrArray) all = NULL;
  g_autoptr(GPtrArray) context = NULL;
  gint64 anchor_id = kaged_run_get_anchor_id (run);

  all = kaged_store_list_messages (self->store, kaged_run_get_session_id (run),
                                   FALSE, 0, G_MAXUINT, error);
  if (all == NULL)
    return NULL;

  context = g_ptr_array_new_with_free_func (g_object_unref);

  for (guint i = 0; i < all->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (all, i);

      if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_SUMMARY &&
          message_in_context (message))
        g_ptr_array_add (context, g_object_ref (message));
    }

  for (guint i = 0; i < all->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (all, i);

      if (kaged_message_get_role (message) != KAGED_MESSAGE_ROLE_SUMMARY &&
          message_in_context (message))
        g_ptr_array_add (context, g_object_ref (message));
      if (kaged_message_get_id (message) == anchor_id)
        break;
    }

  return g_steal_pointer (&context);
}

/* Listens to @chat's deltas and attempts and sends it with the run's
 * provider and cancellable; the run has a call pending until @done runs. */
void
_kaged_run_state_call (KagedRunState       *state,
                       KagedChat           *chat,
                       GCallback            on_delta,
                       gulong              *delta_id,
                       GCallback            on_attempt,
                       gulong              *attempt_id,
                       GAsyncReadyCallback  done,
                       gpointer             data)
{
  *delta_id = g_signal_connect (chat, "delta", on_delta, data);
  *attempt_id = g_signal_connect (chat, "attempt", on_attempt, data);

  state->call_pending = TRUE;
  kaged_provider_chat_async (state->provider, chat, state->cancellable, done, data);
}

/* ---------------------------------------------------------------------------
 * Running
 * ------------------------------------------------------------------------- */

static void
chat_done_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  KagedRunState *state = user_data;
  g_autoptr(GError) error = NULL;
  gboolean overflow;

  kaged_provider_chat_finish (KAGED_PROVIDER (object), result, &error);
  state->call_pending = FALSE;

  if (state->finished)
    {
      /* Cancelled and recorded already: only the memory is left. */
      _kaged_run_state_release (state);
      return;
    }

  overflow = error != NULL && error->domain == KAGED_PROVIDER_ERROR &&
             kaged_provider_error_get_retry_class (error) == KAGED_RETRY_CLASS_CONTEXT_OVERFLOW;

  /* Before the first delta, one compaction and one re-run; after that,
   * an overflow is final and Tier 2 never arms on it. */
  if (overflow && !state->cancel_requested && !state->compacted &&
      !kaged_chat_has_delta (state->chat))
    {
      _kaged_run_state_compact (state);
      return;
    }

  if (overflow)
    kaged_provider_error_set_retryable (error, FALSE);

  _kaged_run_state_finish (state, error);
}

void
_kaged_run_state_open_chat (KagedRunState *state)
{
  if (state->chat != NULL)
    {
      g_clear_signal_handler (&state->delta_id, state->chat);
      g_clear_signal_handler (&state->attempt_id, state->chat);
      g_clear_object (&state->chat);
    }

  state->chat = kaged_chat_new (state->context, state->system_prompt);
  _kaged_run_state_call (state, state->chat,
                         G_CALLBACK (chat_delta_cb), &state->delta_id,
                         G_CALLBACK (_kaged_run_state_attempt_cb), &state->attempt_id,
                         chat_done_cb, state);
}

static void
resolved_cb (GObject      *object,
             GAsyncResult *result,
             gpointer      user_data)
{
  KagedRunState *state = user_data;
  KagedSessionManager *self;
  g_autoptr(GError) error = NULL;

  state->provider = kaged_resolver_resolve_finish (KAGED_RESOLVER (object), result, &error);
  state->call_pending = FALSE;

  if (state->finished)
    {
      _kaged_run_state_release (state);
      return;
    }

  if (state->provider == NULL)
    {
      _kaged_run_state_finish (state, error);
      return;
    }

  /* Later runs reuse it, unless the profile changed meanwhile. */
  self = state->manager;
  if (state->provider_key != NULL)
    g_hash_table_replace (self->providers, g_strdup (state->provider_key),
                          g_object_ref (state->provider));
  else if (self->provider == NULL && self->resolving == self->profile)
    self->provider = g_object_ref (state->provider);

  _kaged_run_state_open_chat (state);
}

static void
run_state_start (KagedRunState *state)
{
  KagedSessionManager *self = state->manager;
  g_autoptr(GError) error = NULL;
  KagedSpendLimit spend;

  if (self->resolver == NULL || self->profile == NULL)
    {
      error = kaged_provider_error_new (KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED, "%s",
                                        _("No provider is set up"));
      _kaged_run_state_finish (state, error);
      return;
    }

  if (!_kaged_run_state_choose_profile (state, &error))
    {
      _kaged_run_state_finish (state, error);
      return;
    }

  /* The limit and prices are those of the profile the run goes through,
   * and only the runs through it count. */
  kaged_spend_limit_init_from_profile (&spend, state->profile);
  if (!kaged_spend_limit_check (&spend, self->store, state->profile_id, now_ms (self), &error))
    {
      _kaged_run_state_finish (state, error);
      return;
    }

  state->context = _kaged_session_manager_build_context (self, state->run, &error);
  if (state->context == NULL)
    {
      _kaged_run_state_finish (state, error);
      return;
    }

  if (state->provider_key != NULL)
    {
      KagedProvider *provider = g_hash_table_lookup (self->providers, state->provider_key);

      if (provider != NULL)
        {
          state->provider = g_object_ref (provider);
          _kaged_run_state_open_chat (state);
          return;
        }
    }
  else if (self->provider != NULL)
    {
      state->provider = g_object_ref (self->provider);
      _kaged_run_state_open_chat (state);
      return;
    }

  /* The resolver wraps every provider in the Tier 1 retry. */
  if (state->provider_key == NULL)
    self->resolving = self->profile;
  state->call_pending = TRUE;
  kaged_resolver_resolve_async (self->resolver, state->profile, state->cancellable,
                                resolved_cb, state);
}

/* Starts one run's provider call, and lets the main loop turn before the
 * next: a request that came meanwhile is answered in between. */
static gboolean
starter_cb (gpointer user_data)
{
  /* A run that ends at once may drop the last other reference. */
  g_autoptr(KagedSessionManager) self = g_object_ref (user_data);
  KagedRunState *state = g_queue_pop_head (&self->starting);

  if (state != NULL)
    {
      state->start_pending = FALSE;
      run_state_start (state);
    }

  if (!g_queue_is_empty (&self->starting))
    return G_SOURCE_CONTINUE;

  g_clear_pointer (&self->starter, g_source_unref);
  return G_SOURCE_REMOVE;
}

/* The state of @run about to become its session's active run: the run
 * marked running and its agent message, neither stored yet. */
KagedRunState *
_kaged_run_state_new (KagedSessionManager *self,
                      KagedSessionEntry   *session,
                      KagedRun            *run)
{
  KagedRunState *state = g_new0 (KagedRunState, 1);

  state->manager = g_object_ref (self);
  state->session = session;
  state->run = g_object_ref (run);
  state->cancellable = g_cancellable_new ();
  state->text = g_string_new (NULL);
  state->pending = g_string_new (NULL);

  kaged_run_set_status (run, KAGED_RUN_STATUS_RUNNING);
  kaged_run_set_started_at (run, now_ms (self));

  state->message = kaged_message_new ();
  kaged_message_set_session_id (state->message, kaged_run_get_session_id (run));
  kaged_message_set_role (state->message, KAGED_MESSAGE_ROLE_AGENT);
  kaged_message_set_content (state->message, "");
  kaged_message_set_run_id (state->message, kaged_run_get_id (run));
  kaged_message_set_status (state->message, KAGED_MESSAGE_STATUS_STREAMING);
  kaged_message_set_created_at (state->message, now_ms (self));

  return state;
}

/*
 * With the run and its agent message stored, makes @state its session's
 * active run and queues the start of its provider call, which an idle at
 * KAGED_RUN_PRIORITY does, one run per main loop iteration: whoever asked
 * for the run (a request to the local API, a click) has the answer first,
 * and a burst of posts is not slowed down by the context building and
 * provider calls of the runs it starts. Cancelling the run finishes it,
 * which takes it off the queue.
 */
void
_kaged_run_state_activate (KagedRunState *state)
{
  KagedSessionManager *self = state->manager;

  state->session->active = state;
  state->start_pending = TRUE;
  g_queue_push_tail (&self->starting, state);

  if (self->starter != NULL)
    return;

  self->starter = g_idle_source_new ();
  g_source_set_priority (self->starter, KAGED_RUN_PRIORITY);
  g_source_set_static_name (self->starter, "[kaged] starting runs");
  g_source_set_callback (self->starter, starter_cb, self, NULL);
  g_source_attach (self->starter, g_main_context_get_thread_default ());
}

char *
_kaged_session_manager_dup_announced_text (KagedSessionManager *self,
                                           gint64               session_id,
                                           gint64               message_id)
{
  KagedSessionEntry *session = g_hash_table_lookup (self->sessions, &session_id);
  KagedRunState *state;

  if (session == NULL || session->active == NULL)
    return NULL;

  state = session->active;
  if (state->message == NULL || kaged_message_get_id (state->message) != message_id)
    return NULL;

  /* What is still pending reaches observers with the next delta. */
  return g_strndup (state->text->str, state->text->len - state->pending->len);
}

gint64
_kaged_session_manager_get_unannounced_reply (KagedSessionManager *self,
                                              gint64               session_id)
{
  KagedSessionEntry *session = g_hash_table_lookup (self->sessions, &session_id);
  KagedRunState *state;

  if (session == NULL || session->active == NULL)
    return 0;

  state = session->active;
  if (state->message == NULL || state->reply_announced)
    return 0;

  return kaged_message_get_id (state->message);
}
