/* kaged-session-manager.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-engine"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "kaged-chat.h"
#include "kaged-provider.h"
#include "kaged-retry-class.h"
#include "kaged-spend-limit.h"
#include "kaged-session-manager.h"

/* Observers see deltas at most this often per run. */
#define DELTA_INTERVAL_MS 50
/* Streamed text reaches the database at most this often per run. */
#define FLUSH_INTERVAL_MS 250

typedef struct _SessionState SessionState;
typedef struct _RunState RunState;

struct _KagedSessionManager
{
  GObject               parent_instance;

  KagedStore           *store;
  KagedClock           *clock;

  KagedResolver        *resolver;
  KagedProfile         *profile;
  /* The profile's provider, resolved once (always behind Tier 1) */
  KagedProvider        *provider;
  /* The profile the pending resolution is for */
  KagedProfile         *resolving;

  KagedSpendLimit       spend;

  gsize                 max_content;
  char                 *system_prompt;

  /* gint64 session id → SessionState */
  GHashTable           *sessions;
  /* RunState whose provider call is to start, oldest first, and the idle
   * that starts them, one per main loop iteration */
  GQueue                starting;
  GSource              *starter;
  /* Runs still winding down after they were detached (cancelled) */
  GPtrArray            *detached;

  guint                 shutting_down : 1;
};

struct _SessionState
{
  gint64    session_id;
  /* KagedRun, oldest first */
  GQueue    queue;
  RunState *active;
};

struct _RunState
{
  KagedSessionManager *manager;
  SessionState        *session;   /* NULL once detached */
  KagedRun            *run;
  KagedMessage        *message;   /* the agent message */
  KagedProvider       *provider;
  KagedChat           *chat;
  GCancellable        *cancellable;
  GString             *text;      /* the whole reply so far */
  GString             *pending;   /* text not yet announced */
  GPtrArray           *context;   /* KagedMessage sent to the model */
  gulong               delta_id;
  gulong               attempt_id;
  GSource             *delta_source;
  GSource             *flush_source;
  guint                dirty : 1;
  guint                compacted : 1;
  guint                cancel_requested : 1;
  guint                finished : 1;
  guint                call_pending : 1;
  guint                start_pending : 1;
  guint                reply_announced : 1;
};

G_DEFINE_FINAL_TYPE (KagedSessionManager, kaged_session_manager, G_TYPE_OBJECT)

G_DEFINE_QUARK (kaged-engine-error-quark, kaged_engine_error)

enum {
  PROP_0,
  PROP_STORE,
  PROP_CLOCK,
  N_PROPS
};

enum {
  MESSAGE_ADDED,
  MESSAGE_DELTA,
  MESSAGE_CHANGED,
  RUN_CHANGED,
  RUN_RETRYING,
  SESSION_CHANGED,
  N_SIGNALS
};

static GParamSpec *properties [N_PROPS];
static guint signals [N_SIGNALS];

static void run_state_start      (RunState *state);
static void session_state_next   (KagedSessionManager *self,
                                  SessionState        *session);

static gint64
now_ms (KagedSessionManager *self)
{
  return kaged_clock_get_wall_ms (self->clock);
}

static void
session_state_free (SessionState *session)
{
  g_queue_clear_full (&session->queue, g_object_unref);
  g_assert (session->active == NULL);
  g_free (session);
}

static SessionState *
get_session_state (KagedSessionManager *self,
                   gint64               session_id)
{
  SessionState *session = g_hash_table_lookup (self->sessions, &session_id);

  if (session == NULL)
    {
      session = g_new0 (SessionState, 1);
      session->session_id = session_id;
      g_queue_init (&session->queue);
      g_hash_table_insert (self->sessions, &session->session_id, session);
    }

  return session;
}

static void
run_state_forget_start (RunState *state)
{
  if (state->start_pending)
    g_queue_remove (&state->manager->starting, state);
  state->start_pending = FALSE;
}

static void
run_state_free (RunState *state)
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
static void
run_state_release (RunState *state)
{
  g_autoptr(KagedSessionManager) self = g_object_ref (state->manager);

  g_ptr_array_remove_fast (self->detached, state);
}

static void
emit_session_changed (KagedSessionManager *self,
                      gint64               session_id)
{
  g_autoptr(KagedSession) session = NULL;
  SessionState *state;

  session = kaged_store_get_session (self->store, session_id, NULL);
  if (session == NULL)
    return;

  state = g_hash_table_lookup (self->sessions, &session_id);
  kaged_session_set_state (session,
                           state != NULL && state->active != NULL
                             ? KAGED_SESSION_STATE_RUNNING
                             : KAGED_SESSION_STATE_IDLE);
  g_signal_emit (self, signals [SESSION_CHANGED], 0, session);
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
run_state_announce (RunState *state)
{
  g_autofree char *text = NULL;

  kaged_clock_clear_source (&state->delta_source);

  if (state->pending->len == 0 || state->message == NULL)
    return;

  text = g_strndup (state->pending->str, state->pending->len);
  g_string_truncate (state->pending, 0);

  g_signal_emit (state->manager, signals [MESSAGE_DELTA], 0,
                 kaged_run_get_session_id (state->run),
                 kaged_message_get_id (state->message),
                 kaged_run_get_id (state->run),
                 text);
}

static gboolean
run_state_announce_cb (gpointer user_data)
{
  RunState *state = user_data;

  g_clear_pointer (&state->delta_source, g_source_unref);
  run_state_announce (state);

  return G_SOURCE_REMOVE;
}

static void
run_state_flush (RunState *state)
{
  g_autoptr(GError) error = NULL;

  kaged_clock_clear_source (&state->flush_source);

  if (!state->dirty || state->message == NULL)
    return;

  state->dirty = FALSE;
  kaged_message_set_content (state->message, state->text->str);
  if (!kaged_store_update_message (state->manager->store, state->message, &error))
    warn_store_error ("save the reply", error);
}

static gboolean
run_state_flush_cb (gpointer user_data)
{
  RunState *state = user_data;

  g_clear_pointer (&state->flush_source, g_source_unref);
  run_state_flush (state);

  return G_SOURCE_REMOVE;
}

static void
chat_delta_cb (KagedChat      *chat,
               KagedDeltaKind  kind,
               const char     *text,
               RunState       *state)
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

static void
chat_attempt_cb (KagedChat          *chat,
                 const KagedAttempt *attempt,
                 RunState           *state)
{
  KagedSessionManager *self = state->manager;
  g_autoptr(GError) error = NULL;

  if (state->finished)
    return;

  kaged_run_add_attempt (state->run, attempt);
  if (!kaged_store_append_attempt (self->store, kaged_run_get_id (state->run), attempt, &error))
    warn_store_error ("record an attempt", error);

  if (attempt->http_status != 0)
    kaged_run_set_http_status (state->run, attempt->http_status);

  if (attempt->wait_ms > 0)
    g_signal_emit (self, signals [RUN_RETRYING], 0, state->run, attempt);
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
  RunState *state = user_data;

  if (state->message != NULL && !kaged_store_update_message (store, state->message, error))
    return FALSE;

  return kaged_store_update_run (store, state->run, error);
}

/*
 * Records the outcome of the active run of a session, detaches it and
 * starts the next queued run. @error is %NULL on success; a cancelled run
 * is recorded cancelled whatever @error says.
 */
static void
run_state_finish (RunState     *state,
                  const GError *error)
{
  g_autoptr(KagedSessionManager) self = g_object_ref (state->manager);
  SessionState *session = state->session;
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
      g_signal_emit (self, signals [MESSAGE_ADDED], 0, state->message);
    }
  if (state->message != NULL)
    g_signal_emit (self, signals [MESSAGE_CHANGED], 0, state->message);
  g_signal_emit (self, signals [RUN_CHANGED], 0, state->run);

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
    run_state_free (state);

  if (session != NULL)
    {
      emit_session_changed (self, session->session_id);
      if (!self->shutting_down)
        session_state_next (self, session);
    }
}

/* ---------------------------------------------------------------------------
 * Context and compaction
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
 * The context of a run: the session's current messages up to its anchor.
 * Summaries replace the turns they compacted and come first.
 */
static GPtrArray *
build_context (KagedSessionManager  *self,
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

      if (kaged_message_get_id (message) > anchor_id)
        break;
      if (kaged_message_get_role (message) != KAGED_MESSAGE_ROLE_SUMMARY &&
          message_in_context (message))
        g_ptr_array_add (context, g_object_ref (message));
    }

  return g_steal_pointer (&context);
}

/* Listens to @chat's deltas and attempts and sends it with the run's
 * provider and cancellable; the run has a call pending until @done runs. */
static void
run_state_call (RunState            *state,
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

static void run_state_open_chat (RunState *state);

typedef struct
{
  RunState  *state;
  KagedChat *chat;
  GArray    *ids;      /* the message ids being summarised */
  GString   *summary;
  gulong     attempt_id;
  gulong     delta_id;
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
  RunState *state = compaction->state;
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
      run_state_release (state);
      return;
    }

  if (state->cancel_requested ||
      g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      compaction_free (compaction);
      run_state_finish (state, error);
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
          run_state_finish (state, store_error);
          return;
        }

      g_signal_emit (self, signals [MESSAGE_ADDED], 0, summary);
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
          run_state_finish (state, store_error);
          return;
        }

      g_signal_emit (self, signals [MESSAGE_ADDED], 0, summary);
    }
  else
    {
      /* The summary call failed for another reason: that is the run's
       * failure, with its own classification. */
      if (error == NULL)
        error = kaged_provider_error_new (KAGED_RETRY_CLASS_PROTOCOL_ERROR,
                                          "%s", _("The provider sent an empty summary"));
      compaction_free (compaction);
      run_state_finish (state, error);
      return;
    }

  compaction_free (compaction);

  /* Exactly one re-run with the compacted context. */
  g_clear_pointer (&state->context, g_ptr_array_unref);
  state->context = build_context (self, state->run, &store_error);
  if (state->context == NULL)
    {
      run_state_finish (state, store_error);
      return;
    }

  run_state_open_chat (state);
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
  chat_attempt_cb (chat, attempt, compaction->state);
}

static void
run_state_compact (RunState *state)
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
      run_state_finish (state, error);
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
  run_state_call (state, compaction->chat,
                  G_CALLBACK (compaction_delta_cb), &compaction->delta_id,
                  G_CALLBACK (compaction_attempt_cb), &compaction->attempt_id,
                  compaction_done_cb, compaction);
}

/* ---------------------------------------------------------------------------
 * Running
 * ------------------------------------------------------------------------- */

static void
chat_done_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  RunState *state = user_data;
  g_autoptr(GError) error = NULL;
  gboolean overflow;

  kaged_provider_chat_finish (KAGED_PROVIDER (object), result, &error);
  state->call_pending = FALSE;

  if (state->finished)
    {
      /* Cancelled and recorded already: only the memory is left. */
      run_state_release (state);
      return;
    }

  overflow = error != NULL && error->domain == KAGED_PROVIDER_ERROR &&
             kaged_provider_error_get_retry_class (error) == KAGED_RETRY_CLASS_CONTEXT_OVERFLOW;

  /* Before the first delta, one compaction and one re-run; after that,
   * an overflow is final and Tier 2 never arms on it. */
  if (overflow && !state->cancel_requested && !state->compacted &&
      !kaged_chat_has_delta (state->chat))
    {
      run_state_compact (state);
      return;
    }

  if (overflow)
    kaged_provider_error_set_retryable (error, FALSE);

  run_state_finish (state, error);
}

static void
run_state_open_chat (RunState *state)
{
  if (state->chat != NULL)
    {
      g_clear_signal_handler (&state->delta_id, state->chat);
      g_clear_signal_handler (&state->attempt_id, state->chat);
      g_clear_object (&state->chat);
    }

  state->chat = kaged_chat_new (state->context, state->manager->system_prompt);
  run_state_call (state, state->chat,
                  G_CALLBACK (chat_delta_cb), &state->delta_id,
                  G_CALLBACK (chat_attempt_cb), &state->attempt_id,
                  chat_done_cb, state);
}

static void
resolved_cb (GObject      *object,
             GAsyncResult *result,
             gpointer      user_data)
{
  RunState *state = user_data;
  KagedSessionManager *self;
  g_autoptr(GError) error = NULL;

  state->provider = kaged_resolver_resolve_finish (KAGED_RESOLVER (object), result, &error);
  state->call_pending = FALSE;

  if (state->finished)
    {
      run_state_release (state);
      return;
    }

  if (state->provider == NULL)
    {
      run_state_finish (state, error);
      return;
    }

  /* Later runs reuse it, unless the profile changed meanwhile. */
  self = state->manager;
  if (self->provider == NULL && self->resolving == self->profile)
    self->provider = g_object_ref (state->provider);

  run_state_open_chat (state);
}

static void
run_state_start (RunState *state)
{
  KagedSessionManager *self = state->manager;
  g_autoptr(GError) error = NULL;
  KagedSpendLimit spend = self->spend;

  if (self->resolver == NULL || self->profile == NULL)
    {
      error = kaged_provider_error_new (KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED, "%s",
                                        _("No provider is set up"));
      run_state_finish (state, error);
      return;
    }

  spend.input_price = kaged_profile_get_input_price (self->profile);
  spend.output_price = kaged_profile_get_output_price (self->profile);
  if (!kaged_spend_limit_check (&spend, self->store, now_ms (self), &error))
    {
      run_state_finish (state, error);
      return;
    }

  state->context = build_context (self, state->run, &error);
  if (state->context == NULL)
    {
      run_state_finish (state, error);
      return;
    }

  if (self->provider != NULL)
    {
      state->provider = g_object_ref (self->provider);
      run_state_open_chat (state);
      return;
    }

  /* The resolver wraps every provider in the Tier 1 retry. */
  self->resolving = self->profile;
  state->call_pending = TRUE;
  kaged_resolver_resolve_async (self->resolver, self->profile, state->cancellable,
                                resolved_cb, state);
}

static gboolean
start_run_in_transaction (KagedStore  *store,
                          gpointer     user_data,
                          GError     **error)
{
  RunState *state = user_data;

  if (!kaged_store_update_run (store, state->run, error))
    return FALSE;

  return kaged_store_append_message (store, state->message, error);
}

/* Starts one run's provider call, and lets the main loop turn before the
 * next: a request that came meanwhile is answered in between. */
static gboolean
starter_cb (gpointer user_data)
{
  /* A run that ends at once may drop the last other reference. */
  g_autoptr(KagedSessionManager) self = g_object_ref (user_data);
  RunState *state = g_queue_pop_head (&self->starting);

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
static RunState *
run_state_new (KagedSessionManager *self,
               SessionState        *session,
               KagedRun            *run)
{
  RunState *state = g_new0 (RunState, 1);

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
static void
run_state_activate (RunState *state)
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
  SessionState *session;

  if (!kaged_run_is_finished (hold_run))
    g_signal_emit (self, signals [RUN_CHANGED], 0, hold_run);

  session = g_hash_table_lookup (self->sessions, &session_id);
  if (kaged_run_is_finished (hold_run) || session == NULL || session->active == NULL ||
      session->active->run != hold_run || session->active->reply_announced)
    return;

  session->active->reply_announced = TRUE;
  g_signal_emit (self, signals [MESSAGE_ADDED], 0, hold_reply);
  emit_session_changed (self, session_id);
}

/* Makes @run, stored queued, the session's active run. */
static void
session_state_dispatch (KagedSessionManager *self,
                        SessionState        *session,
                        KagedRun            *run)
{
  g_autoptr(GError) error = NULL;
  RunState *state;

  g_assert (session->active == NULL);

  state = run_state_new (self, session, run);

  if (!kaged_store_transaction (self->store, start_run_in_transaction, state, &error))
    {
      session->active = state;
      g_clear_object (&state->message);
      g_signal_emit (self, signals [RUN_CHANGED], 0, run);
      run_state_finish (state, error);
      return;
    }

  run_state_activate (state);
  announce_run_started (self, run, state->message);
}

static void
session_state_next (KagedSessionManager *self,
                    SessionState        *session)
{
  while (session->active == NULL && !g_queue_is_empty (&session->queue))
    {
      g_autoptr(KagedRun) run = g_queue_pop_head (&session->queue);

      session_state_dispatch (self, session, run);
    }
}

/* Records the active run of @session cancelled at once; the provider call
 * is aborted and winds down on its own. */
static void
session_state_cancel_active (KagedSessionManager *self,
                             SessionState        *session)
{
  RunState *state = session->active;

  g_assert (state != NULL);

  state->cancel_requested = TRUE;
  g_cancellable_cancel (state->cancellable);

  /* The provider may have finished synchronously on cancel. */
  if (!state->finished && session->active == state)
    run_state_finish (state, NULL);
}

/* ---------------------------------------------------------------------------
 * GObject
 * ------------------------------------------------------------------------- */

static void
kaged_session_manager_dispose (GObject *object)
{
  KagedSessionManager *self = (KagedSessionManager *)object;

  kaged_session_manager_shutdown (self);

  G_OBJECT_CLASS (kaged_session_manager_parent_class)->dispose (object);
}

static void
kaged_session_manager_finalize (GObject *object)
{
  KagedSessionManager *self = (KagedSessionManager *)object;

  g_clear_pointer (&self->sessions, g_hash_table_unref);
  g_clear_pointer (&self->detached, g_ptr_array_unref);
  g_assert (g_queue_is_empty (&self->starting));
  kaged_clock_clear_source (&self->starter);
  g_clear_object (&self->resolver);
  g_clear_object (&self->profile);
  g_clear_object (&self->provider);
  g_clear_object (&self->store);
  g_clear_object (&self->clock);
  g_clear_pointer (&self->system_prompt, g_free);

  G_OBJECT_CLASS (kaged_session_manager_parent_class)->finalize (object);
}

static void
kaged_session_manager_get_property (GObject    *object,
                                    guint       prop_id,
                                    GValue     *value,
                                    GParamSpec *pspec)
{
  KagedSessionManager *self = KAGED_SESSION_MANAGER (object);

  switch (prop_id)
    {
    case PROP_STORE:
      g_value_set_object (value, self->store);
      break;

    case PROP_CLOCK:
      g_value_set_object (value, self->clock);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_session_manager_set_property (GObject      *object,
                                    guint         prop_id,
                                    const GValue *value,
                                    GParamSpec   *pspec)
{
  KagedSessionManager *self = KAGED_SESSION_MANAGER (object);

  switch (prop_id)
    {
    case PROP_STORE:
      self->store = g_value_dup_object (value);
      break;

    case PROP_CLOCK:
      self->clock = g_value_dup_object (value);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_session_manager_constructed (GObject *object)
{
  KagedSessionManager *self = (KagedSessionManager *)object;

  G_OBJECT_CLASS (kaged_session_manager_parent_class)->constructed (object);

  g_assert (KAGED_IS_STORE (self->store));

  if (self->clock == NULL)
    self->clock = g_object_ref (kaged_clock_get_default ());
}

static void
kaged_session_manager_class_init (KagedSessionManagerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->constructed = kaged_session_manager_constructed;
  object_class->dispose = kaged_session_manager_dispose;
  object_class->finalize = kaged_session_manager_finalize;
  object_class->get_property = kaged_session_manager_get_property;
  object_class->set_property = kaged_session_manager_set_property;

  properties [PROP_STORE] =
    g_param_spec_object ("store", NULL, NULL,
                         KAGED_TYPE_STORE,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  properties [PROP_CLOCK] =
    g_param_spec_object ("clock", NULL, NULL,
                         KAGED_TYPE_CLOCK,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);

  signals [MESSAGE_ADDED] =
    g_signal_new ("message-added",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, KAGED_TYPE_MESSAGE);

  signals [MESSAGE_DELTA] =
    g_signal_new ("message-delta",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 4, G_TYPE_INT64, G_TYPE_INT64, G_TYPE_INT64, G_TYPE_STRING);

  signals [MESSAGE_CHANGED] =
    g_signal_new ("message-changed",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, KAGED_TYPE_MESSAGE);

  signals [RUN_CHANGED] =
    g_signal_new ("run-changed",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, KAGED_TYPE_RUN);

  signals [RUN_RETRYING] =
    g_signal_new ("run-retrying",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 2, KAGED_TYPE_RUN, KAGED_TYPE_ATTEMPT);

  signals [SESSION_CHANGED] =
    g_signal_new ("session-changed",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, KAGED_TYPE_SESSION);
}

static void
kaged_session_manager_init (KagedSessionManager *self)
{
  self->sessions = g_hash_table_new_full (g_int64_hash, g_int64_equal,
                                          NULL, (GDestroyNotify)session_state_free);
  self->detached = g_ptr_array_new_with_free_func ((GDestroyNotify)run_state_free);
  g_queue_init (&self->starting);
  self->max_content = KAGED_ENGINE_DEFAULT_MAX_CONTENT;
}

/* ---------------------------------------------------------------------------
 * Public API
 * ------------------------------------------------------------------------- */

/**
 * kaged_session_manager_new:
 * @store: the store the sessions live in
 * @clock: (nullable): the clock, or %NULL for the system clock
 *
 * Creates the manager of @store's sessions. Runs the store found queued
 * (posted before the program stopped) start again.
 *
 * Returns: (transfer full): a new #KagedSessionManager
 */
KagedSessionManager *
kaged_session_manager_new (KagedStore *store,
                           KagedClock *clock)
{
  g_return_val_if_fail (KAGED_IS_STORE (store), NULL);
  g_return_val_if_fail (!clock || KAGED_IS_CLOCK (clock), NULL);

  return g_object_new (KAGED_TYPE_SESSION_MANAGER,
                       "store", store,
                       "clock", clock,
                       NULL);
}

/**
 * kaged_session_manager_resume:
 *
 * Starts the runs the store holds as queued, oldest first, one per session
 * at a time. Call once the provider is set up.
 */
void
kaged_session_manager_resume (KagedSessionManager *self)
{
  GPtrArray *queued;

  g_return_if_fail (KAGED_IS_SESSION_MANAGER (self));

  queued = kaged_store_get_queued_runs (self->store);
  if (queued == NULL)
    return;

  for (guint i = 0; i < queued->len; i++)
    {
      KagedRun *run = g_ptr_array_index (queued, i);
      SessionState *session = get_session_state (self, kaged_run_get_session_id (run));
      gboolean known = FALSE;

      if (session->active != NULL && kaged_run_get_id (session->active->run) == kaged_run_get_id (run))
        known = TRUE;
      for (GList *l = session->queue.head; l != NULL && !known; l = l->next)
        known = kaged_run_get_id (l->data) == kaged_run_get_id (run);

      if (!known)
        g_queue_push_tail (&session->queue, g_object_ref (run));
    }

  {
    GHashTableIter iter;
    gpointer value;

    g_hash_table_iter_init (&iter, self->sessions);
    while (g_hash_table_iter_next (&iter, NULL, &value))
      session_state_next (self, value);
  }
}

/**
 * kaged_session_manager_set_model:
 * @resolver: builds providers, each behind the Tier 1 retry
 * @profile: the provider profile runs use from now on
 *
 * Sets the model new runs talk to. Runs already started keep theirs.
 */
void
kaged_session_manager_set_model (KagedSessionManager *self,
                                 KagedResolver       *resolver,
                                 KagedProfile        *profile)
{
  g_return_if_fail (KAGED_IS_SESSION_MANAGER (self));
  g_return_if_fail (!resolver || KAGED_IS_RESOLVER (resolver));
  g_return_if_fail (!profile || KAGED_IS_PROFILE (profile));

  g_set_object (&self->resolver, resolver);
  g_set_object (&self->profile, profile);
  g_clear_object (&self->provider);
  self->resolving = NULL;
}

/**
 * kaged_session_manager_set_spend_limit:
 *
 * Sets the period and the limit; the prices come from the profile.
 */
void
kaged_session_manager_set_spend_limit (KagedSessionManager   *self,
                                       const KagedSpendLimit *spend)
{
  g_return_if_fail (KAGED_IS_SESSION_MANAGER (self));
  g_return_if_fail (spend != NULL);

  self->spend = *spend;
}

void
kaged_session_manager_set_max_content (KagedSessionManager *self,
                                       gsize                max_content)
{
  g_return_if_fail (KAGED_IS_SESSION_MANAGER (self));
  g_return_if_fail (max_content > 0);

  self->max_content = max_content;
}

void
kaged_session_manager_set_system_prompt (KagedSessionManager *self,
                                         const char          *system_prompt)
{
  g_return_if_fail (KAGED_IS_SESSION_MANAGER (self));

  g_free (self->system_prompt);
  self->system_prompt = g_strdup (system_prompt);
}

/**
 * kaged_session_manager_get_store:
 *
 * Returns: (transfer none): the store
 */
KagedStore *
kaged_session_manager_get_store (KagedSessionManager *self)
{
  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  return self->store;
}

/**
 * kaged_session_manager_get_clock:
 *
 * Returns: (transfer none): the clock
 */
KagedClock *
kaged_session_manager_get_clock (KagedSessionManager *self)
{
  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  return self->clock;
}

static gboolean
propagate_store_error (GError **error,
                       GError  *store_error)
{
  if (g_error_matches (store_error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND))
    {
      g_set_error_literal (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND,
                           store_error->message);
      g_error_free (store_error);
    }
  else
    g_propagate_error (error, store_error);

  return FALSE;
}

/**
 * kaged_session_manager_create_session:
 * @title: (nullable): the title
 *
 * Returns: (transfer full): the new session
 */
KagedSession *
kaged_session_manager_create_session (KagedSessionManager  *self,
                                      const char           *title,
                                      GError              **error)
{
  KagedSession *session;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  session = kaged_store_create_session (self->store, title, error);
  if (session != NULL)
    g_signal_emit (self, signals [SESSION_CHANGED], 0, session);

  return session;
}

static gboolean
check_content (KagedSessionManager  *self,
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
    propagate_store_error (error, store_error);

  return session;
}

static KagedReceipt *
receipt_new (SessionState       *session,
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
                            SessionState        *session)
{
  return session->active == NULL && g_queue_is_empty (&session->queue) && !self->shutting_down;
}

static KagedReceipt *
enqueue_run (KagedSessionManager *self,
             SessionState        *session,
             KagedRun            *run,
             gint64               message_id)
{
  g_signal_emit (self, signals [RUN_CHANGED], 0, run);

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
  KagedMessage *message;
  KagedRun     *run;
  RunState     *start;     /* the run starts at once, or NULL */
} PostWrite;

static gboolean
post_in_transaction (KagedStore  *store,
                     gpointer     user_data,
                     GError     **error)
{
  PostWrite *write = user_data;

  if (!kaged_store_append_message (store, write->message, error))
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
  SessionState *state;
  KagedReceipt *receipt;
  PostWrite write = { NULL, };

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  if (!check_content (self, content, error))
    return NULL;

  session = get_session (self, session_id, error);
  if (session == NULL)
    return NULL;

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
  state = get_session_state (self, session_id);
  write.message = message;
  write.run = run;
  if (session_state_can_dispatch (self, state))
    write.start = run_state_new (self, state, run);

  if (!kaged_store_transaction (self->store, post_in_transaction, &write, &local_error))
    {
      g_clear_pointer (&write.start, run_state_free);
      g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_STORE,
                   _("The message could not be saved: %s"), local_error->message);
      return NULL;
    }

  if (write.start == NULL)
    {
      g_signal_emit (self, signals [MESSAGE_ADDED], 0, message);
      return enqueue_run (self, state, run, kaged_message_get_id (message));
    }

  receipt = receipt_new (state, run, kaged_message_get_id (message),
                         KAGED_RECEIPT_STATUS_DISPATCHED);
  reply = g_object_ref (write.start->message);
  run_state_activate (g_steal_pointer (&write.start));

  /* Observers see the run created and waiting, then started, as any other;
   * one of them may cancel it on the way. */
  g_signal_emit (self, signals [MESSAGE_ADDED], 0, message);
  if (kaged_run_get_status (run) == KAGED_RUN_STATUS_RUNNING)
    {
      kaged_run_set_status (run, KAGED_RUN_STATUS_QUEUED);
      g_signal_emit (self, signals [RUN_CHANGED], 0, run);
      if (kaged_run_get_status (run) == KAGED_RUN_STATUS_QUEUED)
        kaged_run_set_status (run, KAGED_RUN_STATUS_RUNNING);
    }
  announce_run_started (self, run, reply);

  return receipt;
}

static KagedMessage *
get_message_in_session (KagedSessionManager  *self,
                        gint64                session_id,
                        gint64                message_id,
                        GError              **error)
{
  g_autoptr(KagedMessage) message = NULL;
  GError *store_error = NULL;

  message = kaged_store_get_message (self->store, message_id, &store_error);
  if (message == NULL)
    {
      propagate_store_error (error, store_error);
      return NULL;
    }

  if (kaged_message_get_session_id (message) != session_id)
    {
      g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND,
                   _("There is no message %lld in this conversation"),
                   (long long) message_id);
      return NULL;
    }

  return g_steal_pointer (&message);
}

typedef struct
{
  KagedSessionManager  *self;
  SessionState         *session;
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
  SessionState *session = write->session;
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
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedMessage) anchor = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GArray) superseded = NULL;
  g_autoptr(GPtrArray) dropped = NULL;
  g_autoptr(GError) local_error = NULL;
  RegenerateWrite write;
  SessionState *state;
  KagedReceipt *receipt;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  session = get_session (self, session_id, error);
  if (session == NULL)
    return NULL;

  anchor = get_message_in_session (self, session_id, operator_message_id, error);
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

  state = get_session_state (self, session_id);
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

  for (guint i = 0; i < dropped->len; i++)
    {
      KagedRun *queued = g_ptr_array_index (dropped, i);

      g_queue_remove (&state->queue, queued);
      g_signal_emit (self, signals [RUN_CHANGED], 0, queued);
      g_object_unref (queued);
    }

  if (state->active != NULL &&
      kaged_run_get_anchor_id (state->active->run) >= operator_message_id)
    {
      /* Its agent message was superseded above: keep the object in step. */
      if (state->active->message != NULL)
        kaged_message_set_superseded_by_run (state->active->message, kaged_run_get_id (run));
      session_state_cancel_active (self, state);
    }

  superseded = g_steal_pointer (&write.superseded);

  receipt = enqueue_run (self, state, run, operator_message_id);
  if (superseded != NULL)
    g_array_append_vals (receipt->superseded_message_ids, superseded->data, superseded->len);

  return receipt;
}

static RunState *
find_active_run (KagedSessionManager *self,
                 gint64               session_id,
                 gint64               run_id)
{
  SessionState *session = g_hash_table_lookup (self->sessions, &session_id);

  if (session != NULL && session->active != NULL &&
      kaged_run_get_id (session->active->run) == run_id)
    return session->active;

  return NULL;
}

static KagedRun *
find_queued_run (KagedSessionManager *self,
                 gint64               session_id,
                 gint64               run_id)
{
  SessionState *session = g_hash_table_lookup (self->sessions, &session_id);

  if (session == NULL)
    return NULL;

  for (GList *l = session->queue.head; l != NULL; l = l->next)
    {
      if (kaged_run_get_id (l->data) == run_id)
        return l->data;
    }

  return NULL;
}

/**
 * kaged_session_manager_get_run:
 *
 * Returns: (transfer full): the run as it stands (live while it runs), or
 *   %NULL with @error set when the session has no such run
 */
KagedRun *
kaged_session_manager_get_run (KagedSessionManager  *self,
                               gint64                session_id,
                               gint64                run_id,
                               GError              **error)
{
  g_autoptr(KagedRun) run = NULL;
  GError *store_error = NULL;
  RunState *active;
  KagedRun *queued;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  if ((active = find_active_run (self, session_id, run_id)) != NULL)
    return g_object_ref (active->run);
  if ((queued = find_queued_run (self, session_id, run_id)) != NULL)
    return g_object_ref (queued);

  run = kaged_store_get_run (self->store, run_id, &store_error);
  if (run == NULL)
    {
      propagate_store_error (error, store_error);
      return NULL;
    }

  if (kaged_run_get_session_id (run) != session_id)
    {
      g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND,
                   _("There is no run %lld in this conversation"), (long long) run_id);
      return NULL;
    }

  return g_steal_pointer (&run);
}

/**
 * kaged_session_manager_get_latest_run:
 *
 * Returns: (transfer full) (nullable): the session's newest run, or %NULL
 *   when it has none (@error unset) or on error
 */
KagedRun *
kaged_session_manager_get_latest_run (KagedSessionManager  *self,
                                      gint64                session_id,
                                      GError              **error)
{
  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  return kaged_store_get_latest_run (self->store, session_id, error);
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
  SessionState *session;
  KagedRun *queued;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), FALSE);

  session = g_hash_table_lookup (self->sessions, &session_id);

  if (find_active_run (self, session_id, run_id) != NULL)
    {
      session_state_cancel_active (self, session);
      return TRUE;
    }

  if ((queued = find_queued_run (self, session_id, run_id)) != NULL)
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
      g_signal_emit (self, signals [RUN_CHANGED], 0, queued);
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

/**
 * kaged_session_manager_resolve_anchor:
 * @message_id: an operator message, or an agent reply
 *
 * Returns: the operator message that produced @message_id (itself for an
 *   operator message), or 0 with @error set
 */
gint64
kaged_session_manager_resolve_anchor (KagedSessionManager  *self,
                                      gint64                session_id,
                                      gint64                message_id,
                                      GError              **error)
{
  g_autoptr(KagedMessage) message = NULL;
  g_autoptr(KagedMessage) anchor = NULL;
  GError *store_error = NULL;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), 0);

  message = get_message_in_session (self, session_id, message_id, error);
  if (message == NULL)
    return 0;

  switch (kaged_message_get_role (message))
    {
    case KAGED_MESSAGE_ROLE_OPERATOR:
      return message_id;

    case KAGED_MESSAGE_ROLE_AGENT:
      anchor = kaged_store_resolve_anchor (self->store, message_id, &store_error);
      if (anchor == NULL)
        {
          propagate_store_error (error, store_error);
          return 0;
        }
      return kaged_message_get_id (anchor);

    case KAGED_MESSAGE_ROLE_SUMMARY:
    default:
      g_set_error_literal (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_ANCHOR,
                           _("A summary was not written in answer to a message"));
      return 0;
    }
}

/**
 * kaged_session_manager_list_versions:
 *
 * Returns: (transfer full) (element-type KagedMessage): every agent reply
 *   to the operator message, oldest first, for the `‹ 2/3 ›` pager
 */
GPtrArray *
kaged_session_manager_list_versions (KagedSessionManager  *self,
                                     gint64                session_id,
                                     gint64                anchor_id,
                                     GError              **error)
{
  g_autoptr(KagedMessage) anchor = NULL;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  anchor = get_message_in_session (self, session_id, anchor_id, error);
  if (anchor == NULL)
    return NULL;

  return kaged_store_list_versions (self->store, anchor_id, error);
}

gboolean
kaged_session_manager_is_busy (KagedSessionManager *self,
                               gint64               session_id)
{
  SessionState *session;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), FALSE);

  session = g_hash_table_lookup (self->sessions, &session_id);

  return session != NULL && (session->active != NULL || !g_queue_is_empty (&session->queue));
}

/**
 * kaged_session_manager_shutdown:
 *
 * Cancels every active run (recorded cancelled, partial replies kept).
 * Queued runs stay queued in the store and start again with
 * kaged_session_manager_resume() next time.
 */
void
kaged_session_manager_shutdown (KagedSessionManager *self)
{
  GHashTableIter iter;
  gpointer value;

  g_return_if_fail (KAGED_IS_SESSION_MANAGER (self));

  if (self->sessions == NULL)
    return;

  self->shutting_down = TRUE;

  g_hash_table_iter_init (&iter, self->sessions);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    {
      SessionState *session = value;

      if (session->active != NULL)
        session_state_cancel_active (self, session);
    }
}
