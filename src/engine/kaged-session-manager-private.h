/* kaged-session-manager-private.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include "kaged-chat.h"
#include "kaged-provider.h"
#include "kaged-spend-limit.h"
#include "kaged-session-manager.h"

G_BEGIN_DECLS

/* Shared by the files of the session manager: the manager itself and its
 * queues (kaged-session-manager.c, -queue.c), the runner (-runner.c) and
 * compaction (-compaction.c). */

typedef struct _KagedSessionEntry KagedSessionEntry;
typedef struct _KagedRunState KagedRunState;

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


  gsize                 max_content;
  char                 *system_prompt;

  /* The profiles conversations may name, by id */
  KagedProfileLookupFunc lookup_profile;
  gpointer              lookup_data;
  GDestroyNotify        lookup_destroy;
  /* Providers of conversations that ask for another profile or model than
   * the default's, by _kaged_run_state_choose_profile()'s key */
  GHashTable           *providers;

  /* gint64 session id → KagedSessionEntry */
  GHashTable           *sessions;
  /* KagedRunState whose provider call is to start, oldest first, and the idle
   * that starts them, one per main loop iteration */
  GQueue                starting;
  GSource              *starter;
  /* Runs still winding down after they were detached (cancelled) */
  GPtrArray            *detached;

  guint                 shutting_down : 1;
};

struct _KagedSessionEntry
{
  gint64    session_id;
  /* KagedRun, oldest first */
  GQueue    queue;
  KagedRunState *active;
};

struct _KagedRunState
{
  KagedSessionManager *manager;
  KagedSessionEntry   *session;   /* NULL once detached */
  KagedRun            *run;
  KagedMessage        *message;   /* the agent message */
  KagedProvider       *provider;
  KagedChat           *chat;
  GCancellable        *cancellable;
  GString             *text;      /* the whole reply so far */
  GString             *pending;   /* text not yet announced */
  GPtrArray           *context;   /* KagedMessage sent to the model */
  KagedProfile        *profile;   /* the profile, with the model, it uses */
  char                *profile_id; /* the conversation's profile, NULL for the default */
  char                *system_prompt;
  char                *provider_key; /* NULL: the default profile's provider */
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

enum {
  MESSAGE_ADDED,
  MESSAGE_DELTA,
  MESSAGE_CHANGED,
  RUN_CHANGED,
  RUN_RETRYING,
  SESSION_CHANGED,
  MESSAGES_SUPERSEDED,
  OPERATOR_REQUEST,
  N_SIGNALS
};

extern guint _kaged_session_manager_signals [N_SIGNALS];

static inline gint64
now_ms (KagedSessionManager *self)
{
  return kaged_clock_get_wall_ms (self->clock);
}

gboolean           _kaged_session_manager_check_content (KagedSessionManager  *self,
                                                         const char           *content,
                                                         GError              **error);
KagedReceipt      *_kaged_session_manager_enqueue_run (KagedSessionManager *self,
                                                       KagedSessionEntry   *session,
                                                       KagedRun            *run,
                                                       gint64               message_id);
void               _kaged_session_state_next (KagedSessionManager *self,
                                              KagedSessionEntry   *session);
void               _kaged_session_state_cancel_active (KagedSessionManager *self,
                                                       KagedSessionEntry   *session);
KagedSessionEntry *_kaged_session_manager_get_session_state (KagedSessionManager *self,
                                                              gint64               session_id);
void               _kaged_session_manager_emit_session_changed (KagedSessionManager *self,
                                                                gint64               session_id);
void               _kaged_run_state_free (KagedRunState *state);
void               _kaged_run_state_release (KagedRunState *state);
void               _kaged_run_state_finish (KagedRunState *state,
                                            const GError  *error);
void               _kaged_run_state_attempt_cb (KagedChat          *chat,
                                                const KagedAttempt *attempt,
                                                KagedRunState      *state);
GPtrArray         *_kaged_session_manager_build_context (KagedSessionManager  *self,
                                                         KagedRun             *run,
                                                         GError              **error);
void               _kaged_run_state_call (KagedRunState       *state,
                                          KagedChat           *chat,
                                          GCallback            on_delta,
                                          gulong              *delta_id,
                                          GCallback            on_attempt,
                                          gulong              *attempt_id,
                                          GAsyncReadyCallback  done,
                                          gpointer             data);
void               _kaged_run_state_open_chat (KagedRunState *state);
gboolean           _kaged_run_state_choose_profile (KagedRunState  *state,
                                                    GError        **error);
void               _kaged_run_state_compact (KagedRunState *state);
KagedRunState     *_kaged_run_state_new (KagedSessionManager *self,
                                         KagedSessionEntry   *session,
                                         KagedRun            *run);
void               _kaged_run_state_activate (KagedRunState *state);
KagedRunState     *_kaged_session_manager_find_active_run (KagedSessionManager *self,
                                                           gint64               session_id,
                                                           gint64               run_id);
KagedRun          *_kaged_session_manager_find_queued_run (KagedSessionManager *self,
                                                           gint64               session_id,
                                                           gint64               run_id);
gboolean           _kaged_session_manager_is_anchor_queued (KagedSessionManager *self,
                                                            gint64               session_id,
                                                            gint64               anchor_id);
KagedMessage      *_kaged_session_manager_get_message_in_session (KagedSessionManager  *self,
                                                                  gint64                session_id,
                                                                  gint64                message_id,
                                                                  GError              **error);
gboolean           _kaged_session_manager_propagate_store_error (GError **error,
                                                                 GError  *store_error);

/* The text of a streaming reply that ::message-delta has announced so far,
 * or %NULL when @message_id is not the reply of the session's active run. */
char              *_kaged_session_manager_dup_announced_text (KagedSessionManager *self,
                                                              gint64               session_id,
                                                              gint64               message_id);
/* The reply of the session's active run while it is stored but not yet
 * announced with ::message-added, or 0. */
gint64             _kaged_session_manager_get_unannounced_reply (KagedSessionManager *self,
                                                                 gint64               session_id);

G_END_DECLS
