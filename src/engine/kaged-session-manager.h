/* kaged-session-manager.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-clock.h"
#include "kaged-message.h"
#include "kaged-profile.h"
#include "kaged-resolver.h"
#include "kaged-receipt.h"
#include "kaged-run.h"
#include "kaged-session.h"
#include "kaged-spend-limit.h"
#include "kaged-store.h"

G_BEGIN_DECLS

#define KAGED_SESSION_TITLE_MAX_CHARS 60

#define KAGED_ENGINE_ERROR (kaged_engine_error_quark ())

/**
 * KagedEngineError:
 * @KAGED_ENGINE_ERROR_EMPTY_CONTENT: the message is empty or only spaces
 * @KAGED_ENGINE_ERROR_TOO_LARGE: the message is over the size limit
 * @KAGED_ENGINE_ERROR_INVALID_CONTENT: the message is not valid UTF-8 text
 * @KAGED_ENGINE_ERROR_NOT_FOUND: no such session, message or run in that session
 * @KAGED_ENGINE_ERROR_INVALID_ANCHOR: regenerate from an agent, summary or
 *   superseded message
 * @KAGED_ENGINE_ERROR_RUN_FINISHED: the run already ended
 * @KAGED_ENGINE_ERROR_STORE: the database refused the change
 */
typedef enum
{
  KAGED_ENGINE_ERROR_EMPTY_CONTENT,
  KAGED_ENGINE_ERROR_TOO_LARGE,
  KAGED_ENGINE_ERROR_INVALID_CONTENT,
  KAGED_ENGINE_ERROR_NOT_FOUND,
  KAGED_ENGINE_ERROR_INVALID_ANCHOR,
  KAGED_ENGINE_ERROR_RUN_FINISHED,
  KAGED_ENGINE_ERROR_STORE,
  KAGED_ENGINE_ERROR_UNKNOWN_PROFILE,
} KagedEngineError;

/**
 * KagedProfileLookupFunc:
 * @profile_id: a profile's id
 *
 * Returns: (transfer none) (nullable): the profile of that id, or %NULL
 */
typedef KagedProfile *(*KagedProfileLookupFunc) (const char *profile_id,
                                                 gpointer    user_data);

#define KAGED_ENGINE_DEFAULT_MAX_CONTENT (1024 * 1024)
#define KAGED_ENGINE_MAX_MODEL_NAME      1024

#define KAGED_TYPE_SESSION_MANAGER (kaged_session_manager_get_type ())

G_DECLARE_FINAL_TYPE (KagedSessionManager, kaged_session_manager, KAGED, SESSION_MANAGER, GObject)

/*
 * Signals (all emitted on the main context the manager was created on):
 *
 *   ::message-added   (KagedMessage *message)
 *   ::message-delta   (gint64 session_id, gint64 message_id, gint64 run_id,
 *                      const char *text)   — coalesced: at most every 50 ms per run
 *   ::message-changed (KagedMessage *message) — status, error or final content
 *   ::run-changed     (KagedRun *run)       — queued, running, finished
 *   ::run-retrying    (KagedRun *run, KagedAttempt *attempt) — a tier-1 attempt
 *                      failed and another follows after attempt->wait_ms
 *   ::session-changed (KagedSession *session) — idle/running, title
 *   ::operator-request (gint64 session_id) — a post, regenerate or edit of the
 *                      session is about to change it, whoever called: emitted
 *                      once it is valid, before anything is written. Tier 2
 *                      stands down on it; its own regenerate,
 *                      kaged_session_manager_regenerate_for_retry(), does not
 *                      emit it.
 */

GQuark               kaged_engine_error_quark               (void);
KagedSessionManager *kaged_session_manager_new              (KagedStore           *store,
                                                             KagedClock           *clock);
void                 kaged_session_manager_set_model        (KagedSessionManager  *self,
                                                             KagedResolver        *resolver,
                                                             KagedProfile         *profile);
void                 kaged_session_manager_set_max_content  (KagedSessionManager  *self,
                                                             gsize                 max_content);
void                 kaged_session_manager_set_system_prompt (KagedSessionManager *self,
                                                             const char           *system_prompt);
void                 kaged_session_manager_resume           (KagedSessionManager  *self);
KagedStore          *kaged_session_manager_get_store        (KagedSessionManager  *self);
KagedClock          *kaged_session_manager_get_clock        (KagedSessionManager  *self);
KagedSession        *kaged_session_manager_create_session   (KagedSessionManager  *self,
                                                             const char           *title,
                                                             GError              **error);
KagedReceipt        *kaged_session_manager_post             (KagedSessionManager  *self,
                                                             gint64                session_id,
                                                             const char           *content,
                                                             GError              **error);
KagedReceipt        *kaged_session_manager_regenerate       (KagedSessionManager  *self,
                                                             gint64                session_id,
                                                             gint64                operator_message_id,
                                                             GError              **error);
KagedReceipt        *kaged_session_manager_regenerate_for_retry
                                                            (KagedSessionManager  *self,
                                                             gint64                session_id,
                                                             gint64                operator_message_id,
                                                             GError              **error);
KagedReceipt        *kaged_session_manager_edit             (KagedSessionManager  *self,
                                                             gint64                session_id,
                                                             gint64                operator_message_id,
                                                             const char           *content,
                                                             GError              **error);
gboolean             kaged_session_manager_cancel           (KagedSessionManager  *self,
                                                             gint64                session_id,
                                                             gint64                run_id,
                                                             GError              **error);
gint64               kaged_session_manager_resolve_anchor   (KagedSessionManager  *self,
                                                             gint64                session_id,
                                                             gint64                message_id,
                                                             GError              **error);
GPtrArray           *kaged_session_manager_list_versions    (KagedSessionManager  *self,
                                                             gint64                session_id,
                                                             gint64                anchor_id,
                                                             GError              **error);
GPtrArray           *kaged_session_manager_list_edits       (KagedSessionManager  *self,
                                                             gint64                session_id,
                                                             gint64                message_id,
                                                             GError              **error);
GPtrArray           *kaged_session_manager_list_superseded_with (KagedSessionManager  *self,
                                                                 gint64                session_id,
                                                                 gint64                message_id,
                                                                 guint                 limit,
                                                                 guint                *n_messages,
                                                                 GError              **error);
KagedRun            *kaged_session_manager_get_run          (KagedSessionManager  *self,
                                                             gint64                session_id,
                                                             gint64                run_id,
                                                             GError              **error);
KagedRun            *kaged_session_manager_get_latest_run   (KagedSessionManager  *self,
                                                             gint64                session_id,
                                                             GError              **error);
gboolean             kaged_session_manager_is_busy          (KagedSessionManager  *self,
                                                             gint64                session_id);
void                 kaged_session_manager_shutdown         (KagedSessionManager  *self);

void                 kaged_session_manager_set_profile_lookup   (KagedSessionManager    *self,
                                                                 KagedProfileLookupFunc  lookup,
                                                                 gpointer                user_data,
                                                                 GDestroyNotify          destroy);
gboolean             kaged_session_manager_get_draft (KagedSessionManager    *self,
                                                      gint64                  session_id,
                                                      char                  **text,
                                                      GError                **error);
gboolean             kaged_session_manager_set_draft (KagedSessionManager    *self,
                                                      gint64                  session_id,
                                                      const char             *text,
                                                      GError                **error);
gboolean             kaged_session_manager_get_session_settings (KagedSessionManager    *self,
                                                                 gint64                  session_id,
                                                                 char                  **profile_id,
                                                                 char                  **model,
                                                                 char                  **system_prompt,
                                                                 GError                **error);
gboolean             kaged_session_manager_set_session_settings (KagedSessionManager    *self,
                                                                 gint64                  session_id,
                                                                 const char             *profile_id,
                                                                 const char             *model,
                                                                 const char             *system_prompt,
                                                                 GError                **error);
gboolean             kaged_session_manager_get_run_model        (KagedSessionManager    *self,
                                                                 gint64                  run_id,
                                                                 char                  **profile_id,
                                                                 char                  **profile_name,
                                                                 char                  **model,
                                                                 GError                **error);
char                *kaged_session_title_from_content       (const char           *content);

G_END_DECLS
