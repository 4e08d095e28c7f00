/* kaged-session-manager.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-engine"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "kaged-session-manager-private.h"

G_DEFINE_FINAL_TYPE (KagedSessionManager, kaged_session_manager, G_TYPE_OBJECT)

G_DEFINE_QUARK (kaged-engine-error-quark, kaged_engine_error)

enum {
  PROP_0,
  PROP_STORE,
  PROP_CLOCK,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];
guint _kaged_session_manager_signals [N_SIGNALS];

static void
session_state_free (KagedSessionEntry *session)
{
  g_queue_clear_full (&session->queue, g_object_unref);
  g_assert (session->active == NULL);
  g_free (session);
}

KagedSessionEntry *
_kaged_session_manager_get_session_state (KagedSessionManager *self,
                                          gint64               session_id)
{
  KagedSessionEntry *session = g_hash_table_lookup (self->sessions, &session_id);

  if (session == NULL)
    {
      session = g_new0 (KagedSessionEntry, 1);
      session->session_id = session_id;
      g_queue_init (&session->queue);
      g_hash_table_insert (self->sessions, &session->session_id, session);
    }

  return session;
}

void
_kaged_session_manager_emit_session_changed (KagedSessionManager *self,
                                             gint64               session_id)
{
  g_autoptr(KagedSession) session = NULL;
  KagedSessionEntry *state;

  session = kaged_store_get_session (self->store, session_id, NULL);
  if (session == NULL)
    return;

  state = g_hash_table_lookup (self->sessions, &session_id);
  kaged_session_set_state (session,
                           state != NULL && state->active != NULL
                             ? KAGED_SESSION_STATE_RUNNING
                             : KAGED_SESSION_STATE_IDLE);
  g_signal_emit (self, _kaged_session_manager_signals [SESSION_CHANGED], 0, session);
}

gboolean
_kaged_session_manager_propagate_store_error (GError **error,
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

KagedMessage *
_kaged_session_manager_get_message_in_session (KagedSessionManager  *self,
                                               gint64                session_id,
                                               gint64                message_id,
                                               GError              **error)
{
  g_autoptr(KagedMessage) message = NULL;
  GError *store_error = NULL;

  message = kaged_store_get_message (self->store, message_id, &store_error);
  if (message == NULL)
    {
      _kaged_session_manager_propagate_store_error (error, store_error);
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

KagedRunState *
_kaged_session_manager_find_active_run (KagedSessionManager *self,
                                        gint64               session_id,
                                        gint64               run_id)
{
  KagedSessionEntry *session = g_hash_table_lookup (self->sessions, &session_id);

  if (session != NULL && session->active != NULL &&
      kaged_run_get_id (session->active->run) == run_id)
    return session->active;

  return NULL;
}

KagedRun *
_kaged_session_manager_find_queued_run (KagedSessionManager *self,
                                        gint64               session_id,
                                        gint64               run_id)
{
  KagedSessionEntry *session = g_hash_table_lookup (self->sessions, &session_id);

  if (session == NULL)
    return NULL;

  for (GList *l = session->queue.head; l != NULL; l = l->next)
    {
      if (kaged_run_get_id (l->data) == run_id)
        return l->data;
    }

  return NULL;
}

/* Whether a run answering the operator message @anchor_id waits in the
 * session's queue. */
gboolean
_kaged_session_manager_is_anchor_queued (KagedSessionManager *self,
                                         gint64               session_id,
                                         gint64               anchor_id)
{
  KagedSessionEntry *session = g_hash_table_lookup (self->sessions, &session_id);

  if (session == NULL)
    return FALSE;

  for (GList *l = session->queue.head; l != NULL; l = l->next)
    {
      if (kaged_run_get_anchor_id (l->data) == anchor_id &&
          kaged_run_get_status (l->data) == KAGED_RUN_STATUS_QUEUED)
        return TRUE;
    }

  return FALSE;
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
  g_clear_pointer (&self->providers, g_hash_table_unref);
  if (self->lookup_destroy != NULL)
    self->lookup_destroy (self->lookup_data);
  self->lookup_destroy = NULL;

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

  _kaged_session_manager_signals [MESSAGE_ADDED] =
    g_signal_new ("message-added",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, KAGED_TYPE_MESSAGE);

  _kaged_session_manager_signals [MESSAGE_DELTA] =
    g_signal_new ("message-delta",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 4, G_TYPE_INT64, G_TYPE_INT64, G_TYPE_INT64, G_TYPE_STRING);

  _kaged_session_manager_signals [MESSAGE_CHANGED] =
    g_signal_new ("message-changed",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, KAGED_TYPE_MESSAGE);

  _kaged_session_manager_signals [RUN_CHANGED] =
    g_signal_new ("run-changed",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, KAGED_TYPE_RUN);

  _kaged_session_manager_signals [RUN_RETRYING] =
    g_signal_new ("run-retrying",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 2, KAGED_TYPE_RUN, KAGED_TYPE_ATTEMPT);

  /**
   * KagedSessionManager::messages-superseded:
   * @session_id: the session
   * @run_id: the run of the regeneration that superseded them
   * @message_ids: (element-type gint64): the ids of the messages, ascending
   *
   * A regeneration superseded these messages: every current message after
   * its anchor in conversation order. Emitted once the store recorded it,
   * before the runs it drops or cancels are announced.
   */
  _kaged_session_manager_signals [MESSAGES_SUPERSEDED] =
    g_signal_new ("messages-superseded",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 3, G_TYPE_INT64, G_TYPE_INT64, G_TYPE_ARRAY);

  _kaged_session_manager_signals [SESSION_CHANGED] =
    g_signal_new ("session-changed",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, KAGED_TYPE_SESSION);

  _kaged_session_manager_signals [OPERATOR_REQUEST] =
    g_signal_new ("operator-request",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, G_TYPE_INT64);
}

static void
kaged_session_manager_init (KagedSessionManager *self)
{
  self->sessions = g_hash_table_new_full (g_int64_hash, g_int64_equal,
                                          NULL, (GDestroyNotify)session_state_free);
  self->detached = g_ptr_array_new_with_free_func ((GDestroyNotify)_kaged_run_state_free);
  g_queue_init (&self->starting);
  self->max_content = KAGED_ENGINE_DEFAULT_MAX_CONTENT;
  self->providers = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_object_unref);
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
      gint64 session_id = kaged_run_get_session_id (run);
      KagedSessionEntry *session = _kaged_session_manager_get_session_state (self, session_id);
      gboolean known = FALSE;

      if (session->active != NULL &&
          kaged_run_get_id (session->active->run) == kaged_run_get_id (run))
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
      _kaged_session_state_next (self, value);
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
  g_hash_table_remove_all (self->providers);
  self->resolving = NULL;
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
    g_signal_emit (self, _kaged_session_manager_signals [SESSION_CHANGED], 0, session);

  return session;
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
  KagedRunState *active;
  KagedRun *queued;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  if ((active = _kaged_session_manager_find_active_run (self, session_id, run_id)) != NULL)
    return g_object_ref (active->run);
  if ((queued = _kaged_session_manager_find_queued_run (self, session_id, run_id)) != NULL)
    return g_object_ref (queued);

  run = kaged_store_get_run (self->store, run_id, &store_error);
  if (run == NULL)
    {
      _kaged_session_manager_propagate_store_error (error, store_error);
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

  message = _kaged_session_manager_get_message_in_session (self, session_id, message_id, error);
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
          _kaged_session_manager_propagate_store_error (error, store_error);
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

  anchor = _kaged_session_manager_get_message_in_session (self, session_id, anchor_id, error);
  if (anchor == NULL)
    return NULL;

  return kaged_store_list_versions (self->store, anchor_id, error);
}

/**
 * kaged_session_manager_list_edits:
 * @message_id: an operator message of the session, superseded or not
 *
 * Returns: (transfer full) (element-type KagedMessage): the earlier texts
 *   of @message_id that edits replaced, oldest first (see
 *   kaged_store_list_edits()), or %NULL with @error set
 */
GPtrArray *
kaged_session_manager_list_edits (KagedSessionManager  *self,
                                  gint64                session_id,
                                  gint64                message_id,
                                  GError              **error)
{
  g_autoptr(KagedMessage) message = NULL;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  message = _kaged_session_manager_get_message_in_session (self, session_id, message_id, error);
  if (message == NULL)
    return NULL;

  return kaged_store_list_edits (self->store, message_id, error);
}

/**
 * kaged_session_manager_list_superseded_with:
 * @message_id: a message of the session, superseded or not
 * @limit: list at most this many, or 0 for all
 * @n_messages: (out) (optional): how many there are in all
 *
 * Returns: (transfer full) (element-type KagedMessage): the messages after
 *   @message_id that left the conversation with it (see
 *   kaged_store_list_superseded_with()), or %NULL with @error set
 */
GPtrArray *
kaged_session_manager_list_superseded_with (KagedSessionManager  *self,
                                            gint64                session_id,
                                            gint64                message_id,
                                            guint                 limit,
                                            guint                *n_messages,
                                            GError              **error)
{
  g_autoptr(KagedMessage) message = NULL;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), NULL);

  message = _kaged_session_manager_get_message_in_session (self, session_id, message_id, error);
  if (message == NULL)
    return NULL;

  return kaged_store_list_superseded_with (self->store, message_id, limit, n_messages, error);
}

gboolean
kaged_session_manager_is_busy (KagedSessionManager *self,
                               gint64               session_id)
{
  KagedSessionEntry *session;

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
      KagedSessionEntry *session = value;

      if (session->active != NULL)
        _kaged_session_state_cancel_active (self, session);
    }
}

/**
 * kaged_session_title_from_content:
 * @content: the first message of a conversation
 *
 * Returns: (transfer full): a title for the conversation: the first line
 *   of @content with its spaces folded, at most
 *   %KAGED_SESSION_TITLE_MAX_CHARS characters (cut at a word, with an
 *   ellipsis); empty for a message of only spaces
 */
char *
kaged_session_title_from_content (const char *content)
{
  g_autofree char *valid = NULL;
  GString *title;
  const char *p;
  gboolean space = FALSE;
  glong n_chars = 0;

  g_return_val_if_fail (content != NULL, NULL);

  valid = g_utf8_make_valid (content, -1);
  title = g_string_new (NULL);

  p = valid;
  while (g_unichar_isspace (g_utf8_get_char (p)) && *p != '\0')
    p = g_utf8_next_char (p);

  for (; *p != '\0' && *p != '\n' && *p != '\r'; p = g_utf8_next_char (p))
    {
      gunichar c = g_utf8_get_char (p);

      if (g_unichar_isspace (c))
        {
          space = TRUE;
          continue;
        }

      if (n_chars >= KAGED_SESSION_TITLE_MAX_CHARS)
        {
          const char *cut = strrchr (title->str, ' ');

          if (cut != NULL && (cut - title->str) > (gssize)title->len / 2)
            g_string_truncate (title, cut - title->str);
          g_string_append (title, "…");
          return g_string_free (title, FALSE);
        }

      if (space && title->len > 0)
        {
          g_string_append_c (title, ' ');
          n_chars++;
        }
      space = FALSE;
      g_string_append_unichar (title, c);
      n_chars++;
    }

  return g_string_free (title, FALSE);
}
