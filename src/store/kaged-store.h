/* kaged-store.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-attempt.h"
#include "kaged-clock.h"
#include "kaged-message.h"
#include "kaged-run.h"
#include "kaged-session.h"

G_BEGIN_DECLS

#define KAGED_STORE_ERROR (kaged_store_error_quark ())

/**
 * KagedStoreError:
 * @KAGED_STORE_ERROR_NOT_A_DATABASE: the file is not a Kaged database
 * @KAGED_STORE_ERROR_TOO_NEW: the database was written by a newer Kaged
 * @KAGED_STORE_ERROR_LOCKED: another process holds the database
 * @KAGED_STORE_ERROR_CORRUPT: the database is damaged
 * @KAGED_STORE_ERROR_IO: reading or writing failed (disk full, permissions)
 * @KAGED_STORE_ERROR_NOT_FOUND: no such session, message or run
 * @KAGED_STORE_ERROR_IMMUTABLE: operator messages cannot be changed
 * @KAGED_STORE_ERROR_INVALID: the request does not fit the data
 */
typedef enum
{
  KAGED_STORE_ERROR_NOT_A_DATABASE,
  KAGED_STORE_ERROR_TOO_NEW,
  KAGED_STORE_ERROR_LOCKED,
  KAGED_STORE_ERROR_CORRUPT,
  KAGED_STORE_ERROR_IO,
  KAGED_STORE_ERROR_NOT_FOUND,
  KAGED_STORE_ERROR_IMMUTABLE,
  KAGED_STORE_ERROR_INVALID,
} KagedStoreError;

/**
 * KAGED_STORE_SCHEMA_VERSION:
 *
 * The newest schema this build reads and writes (`PRAGMA user_version`).
 */
#define KAGED_STORE_SCHEMA_VERSION 8

#define KAGED_TYPE_STORE_RETRY_STATE (kaged_store_retry_state_get_type ())

/**
 * KagedStoreRetryState:
 * @session_id: the session the Tier 2 scheduler belongs to
 * @attempt: the consecutive attempt k (0 before the first)
 * @next_eligible_at: when the next attempt may start, epoch milliseconds, or 0
 * @state: the scheduler's state name (`idle`, `armed`, `scheduled`, …)
 * @cancelled: whether the operator cancelled the retry
 * @anchor_id: the operator message the retry regenerates from, or 0
 * @updated_at: when this state was saved, epoch milliseconds
 * @retry_class: the class of the failure the retry waits for
 * @http_status: that failure's HTTP status, or 0
 * @retry_after_until: that failure's `retry_after_until`, epoch ms, or 0
 * @advised_wait_ms: how long the provider asked to wait, or 0
 * @wait_source: where the wait came from (`backoff`, a header's name,
 *   `provider-reset`), or %NULL
 * @seen_run_id: the newest run of the session the scheduler accounted for
 * @retry_run_id: the run the retry started, while it is under way, or 0
 *
 * The persisted state of a session's Tier 2 retry scheduler, whole: an
 * armed or scheduled retry resumes from it alone when the program starts
 * again, with the reason it waits.
 */
typedef struct _KagedStoreRetryState
{
  gint64    session_id;
  guint     attempt;
  gint64    next_eligible_at;
  char     *state;
  gboolean  cancelled;
  gint64    anchor_id;
  gint64    updated_at;
  KagedRetryClass retry_class;
  guint     http_status;
  gint64    retry_after_until;
  gint64    advised_wait_ms;
  char     *wait_source;
  gint64    seen_run_id;
  gint64    retry_run_id;
} KagedStoreRetryState;

GType                 kaged_store_retry_state_get_type (void) G_GNUC_CONST;
KagedStoreRetryState *kaged_store_retry_state_new      (gint64                      session_id);
KagedStoreRetryState *kaged_store_retry_state_copy     (const KagedStoreRetryState *self);
void                  kaged_store_retry_state_free     (KagedStoreRetryState       *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (KagedStoreRetryState, kaged_store_retry_state_free)

#define KAGED_TYPE_STORE (kaged_store_get_type ())

G_DECLARE_FINAL_TYPE (KagedStore, kaged_store, KAGED, STORE, GObject)

/**
 * KagedStoreTransactionFunc:
 * @store: the store
 * @user_data: the data passed to kaged_store_transaction()
 * @error: where to put the reason for a failure
 *
 * Returns: %TRUE to commit the writes made, %FALSE (with @error set) to
 *   roll them all back
 */
typedef gboolean (*KagedStoreTransactionFunc) (KagedStore  *store,
                                               gpointer     user_data,
                                               GError     **error);

GQuark                kaged_store_error_quark          (void);
char                 *kaged_store_default_path         (const char                 *data_dir);

/* Opening */
KagedStore           *kaged_store_open                 (const char                 *path,
                                                        GError                    **error);
KagedStore           *kaged_store_open_with_clock      (const char                 *path,
                                                        KagedClock                 *clock,
                                                        GError                    **error);
const char           *kaged_store_get_path             (KagedStore                 *self);
guint64               kaged_store_get_n_write_transactions
                                                       (KagedStore                 *self);
guint64               kaged_store_get_n_checkpoints    (KagedStore                 *self);
KagedClock           *kaged_store_get_clock            (KagedStore                 *self);
GPtrArray            *kaged_store_get_interrupted_runs (KagedStore                 *self);
GPtrArray            *kaged_store_get_queued_runs      (KagedStore                 *self);
gboolean              kaged_store_check                (KagedStore                 *self,
                                                        GCancellable               *cancellable,
                                                        GError                    **error);
void                  kaged_store_check_async          (KagedStore                 *self,
                                                        GCancellable               *cancellable,
                                                        GAsyncReadyCallback         callback,
                                                        gpointer                    user_data);
gboolean              kaged_store_check_finish         (KagedStore                 *self,
                                                        GAsyncResult               *result,
                                                        GError                    **error);

/* Transactions */
gboolean              kaged_store_begin                (KagedStore                 *self,
                                                        GError                    **error);
gboolean              kaged_store_commit               (KagedStore                 *self,
                                                        GError                    **error);
void                  kaged_store_rollback             (KagedStore                 *self);
gboolean              kaged_store_transaction          (KagedStore                 *self,
                                                        KagedStoreTransactionFunc   func,
                                                        gpointer                    user_data,
                                                        GError                    **error);

/* Sessions */
KagedSession         *kaged_store_create_session       (KagedStore                 *self,
                                                        const char                 *title,
                                                        GError                    **error);
KagedSession         *kaged_store_get_session          (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        GError                    **error);
GPtrArray            *kaged_store_list_sessions        (KagedStore                 *self,
                                                        GError                    **error);
gboolean              kaged_store_rename_session       (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        const char                 *title,
                                                        GError                    **error);
gboolean              kaged_store_delete_session       (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        GError                    **error);

/* Messages */
gboolean              kaged_store_append_message       (KagedStore                 *self,
                                                        KagedMessage               *message,
                                                        GError                    **error);
KagedMessage         *kaged_store_get_message          (KagedStore                 *self,
                                                        gint64                      message_id,
                                                        GError                    **error);
gboolean              kaged_store_update_message       (KagedStore                 *self,
                                                        KagedMessage               *message,
                                                        GError                    **error);
gboolean              kaged_store_save_streaming_text  (KagedStore                 *self,
                                                        KagedMessage               *message,
                                                        GError                    **error);
GPtrArray            *kaged_store_list_messages        (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        gboolean                    include_superseded,
                                                        gint64                      after_id,
                                                        guint                       limit,
                                                        GError                    **error);
GPtrArray            *kaged_store_list_messages_before (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        gboolean                    include_superseded,
                                                        gint64                      before_id,
                                                        guint                       limit,
                                                        GError                    **error);
GPtrArray            *kaged_store_list_messages_at     (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        gboolean                    include_superseded,
                                                        guint                       offset,
                                                        guint                       limit,
                                                        gboolean                    from_end,
                                                        GError                    **error);
gboolean              kaged_store_count_messages_after (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        gboolean                    include_superseded,
                                                        gint64                      message_id,
                                                        guint                      *n_messages,
                                                        GError                    **error);
gboolean              kaged_store_count_messages_before (KagedStore                *self,
                                                        gint64                      session_id,
                                                        gboolean                    include_superseded,
                                                        gint64                      message_id,
                                                        guint                      *n_messages,
                                                        GError                    **error);
gboolean              kaged_store_count_messages       (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        gboolean                    include_superseded,
                                                        guint                      *n_messages,
                                                        GError                    **error);
gboolean              kaged_store_supersede_after      (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        gint64                      message_id,
                                                        gint64                      by_run_id,
                                                        GArray                    **superseded_ids,
                                                        GError                    **error);
gboolean              kaged_store_supersede_from       (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        gint64                      message_id,
                                                        gint64                      by_run_id,
                                                        gint64                      before_id,
                                                        GArray                    **superseded_ids,
                                                        GError                    **error);
GPtrArray            *kaged_store_list_versions        (KagedStore                 *self,
                                                        gint64                      anchor_id,
                                                        GError                    **error);
GPtrArray            *kaged_store_list_superseded_with (KagedStore                 *self,
                                                        gint64                      message_id,
                                                        guint                       limit,
                                                        guint                      *n_messages,
                                                        GError                    **error);
gboolean              kaged_store_get_draft            (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        char                      **text,
                                                        GError                    **error);
gboolean              kaged_store_set_draft            (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        const char                 *text,
                                                        GError                    **error);
GPtrArray            *kaged_store_list_edits           (KagedStore                 *self,
                                                        gint64                      message_id,
                                                        GError                    **error);
KagedMessage         *kaged_store_resolve_anchor       (KagedStore                 *self,
                                                        gint64                      message_id,
                                                        GError                    **error);
gboolean              kaged_store_mark_compacted       (KagedStore                 *self,
                                                        gint64                      summary_id,
                                                        const gint64               *message_ids,
                                                        guint                       n_message_ids,
                                                        GError                    **error);

/* Runs */
gboolean              kaged_store_create_run           (KagedStore                 *self,
                                                        KagedRun                   *run,
                                                        GError                    **error);
KagedRun             *kaged_store_get_run              (KagedStore                 *self,
                                                        gint64                      run_id,
                                                        GError                    **error);
KagedRun             *kaged_store_get_latest_run       (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        GError                    **error);
KagedRun             *kaged_store_get_latest_run_in_conversation
                                                       (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        GError                    **error);
gboolean              kaged_store_update_run           (KagedStore                 *self,
                                                        KagedRun                   *run,
                                                        GError                    **error);
gboolean              kaged_store_append_attempt       (KagedStore                 *self,
                                                        gint64                      run_id,
                                                        const KagedAttempt         *attempt,
                                                        GError                    **error);
GPtrArray            *kaged_store_list_runs            (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        KagedRunStatus              status,
                                                        GError                    **error);
gboolean              kaged_store_sum_usage            (KagedStore                 *self,
                                                        gint64                      since_ms,
                                                        gint64                     *input_tokens,
                                                        gint64                     *output_tokens,
                                                        GError                    **error);
gboolean              kaged_store_sum_profile_usage    (KagedStore                 *self,
                                                        gint64                      since_ms,
                                                        const char                 *profile_id,
                                                        gint64                     *input_tokens,
                                                        gint64                     *output_tokens,
                                                        GError                    **error);

/* Tier 2 scheduler state */
KagedStoreRetryState *kaged_store_get_retry_state      (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        GError                    **error);
gboolean              kaged_store_set_retry_state      (KagedStore                 *self,
                                                        const KagedStoreRetryState *state,
                                                        GError                    **error);
gboolean              kaged_store_clear_retry_state    (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        GError                    **error);
GPtrArray            *kaged_store_list_retry_states    (KagedStore                 *self,
                                                        GError                    **error);

gboolean              kaged_store_get_session_settings (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        char                      **profile_id,
                                                        char                      **model,
                                                        char                      **system_prompt,
                                                        GError                    **error);
gboolean              kaged_store_set_session_settings (KagedStore                 *self,
                                                        gint64                      session_id,
                                                        const char                 *profile_id,
                                                        const char                 *model,
                                                        const char                 *system_prompt,
                                                        GError                    **error);
gboolean              kaged_store_get_run_model        (KagedStore                 *self,
                                                        gint64                      run_id,
                                                        char                      **profile_id,
                                                        char                      **profile_name,
                                                        char                      **model,
                                                        GError                    **error);
gboolean              kaged_store_set_run_model        (KagedStore                 *self,
                                                        gint64                      run_id,
                                                        const char                 *profile_id,
                                                        const char                 *profile_name,
                                                        const char                 *model,
                                                        GError                    **error);
char                **kaged_store_get_profile_models   (KagedStore                 *self,
                                                        const char                 *profile_id,
                                                        gint64                     *fetched_at,
                                                        GError                    **error);
gboolean              kaged_store_set_profile_models   (KagedStore                 *self,
                                                        const char                 *profile_id,
                                                        const char * const         *models,
                                                        GError                    **error);
gboolean              kaged_store_drop_profile_models  (KagedStore                 *self,
                                                        const char                 *profile_id,
                                                        GError                    **error);
gboolean              kaged_store_keep_profile_models  (KagedStore                 *self,
                                                        const char * const         *profile_ids,
                                                        GError                    **error);

G_END_DECLS
