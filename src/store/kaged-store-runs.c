/* kaged-store-runs.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-enum-types.h"
#include "kaged-retry-class.h"
#include "kaged-store-private.h"

static gboolean
load_attempts (KagedStore  *self,
               KagedRun    *run,
               GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = _kaged_store_get_stmt (self, STMT_ATTEMPT_LIST, error);
  gboolean has_row = FALSE;

  if (stmt == NULL || !_kaged_store_bind_int64 (self, stmt, 1, kaged_run_get_id (run), error))
    return FALSE;

  kaged_run_clear_attempts (run);

  for (;;)
    {
      KagedAttempt attempt = { 0 };

      if (!_kaged_store_step_row (self, stmt, &has_row, error))
        return FALSE;
      if (!has_row)
        break;

      attempt.time = sqlite3_column_int64 (stmt, 0);
      attempt.http_status = (guint)sqlite3_column_int (stmt, 1);
      attempt.error = (char *)_kaged_store_column_text (stmt, 2);
      attempt.retry_class = _kaged_store_retry_class_from_column (stmt, 3);
      attempt.wait_ms = sqlite3_column_int64 (stmt, 4);
      attempt.wait_source = (char *)_kaged_store_column_text (stmt, 5);

      /* Copies the strings. */
      kaged_run_add_attempt (run, &attempt);
    }

  return TRUE;
}

/**
 * kaged_store_create_run:
 * @run: a new run: session, anchor operator message and status
 *
 * Stores @run and sets its id (and its creation time, when it has none).
 * The anchor must be an operator message of the run's session.
 */
gboolean
kaged_store_create_run (KagedStore  *self,
                        KagedRun    *run,
                        GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  const char *status_nick;
  const char *retry_class;
  gint64 retry_after_until;
  gint64 session_id;
  gint64 created_at;
  KagedStoreMessageInfo anchor;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (KAGED_IS_RUN (run), FALSE);
  g_return_val_if_fail (kaged_run_get_id (run) == 0, FALSE);

  status_nick = _kaged_store_enum_nick (KAGED_TYPE_RUN_STATUS, kaged_run_get_status (run));
  retry_class = kaged_retry_class_to_string (kaged_run_get_retry_class (run));
  retry_after_until = kaged_run_get_retry_after_until (run);

  session_id = kaged_run_get_session_id (run);
  if (!_kaged_store_get_message_info (self, kaged_run_get_anchor_id (run), &anchor, error))
    return FALSE;

  if (anchor.session_id != session_id || anchor.role != KAGED_MESSAGE_ROLE_OPERATOR)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                   _("Message %lld is not an operator message of session %lld"),
                   (long long) kaged_run_get_anchor_id (run), (long long) session_id);
      return FALSE;
    }

  created_at = kaged_run_get_created_at (run);
  if (created_at == 0)
    created_at = _kaged_store_now_ms (self);

  stmt = _kaged_store_get_stmt (self, STMT_RUN_INSERT, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, session_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 2, kaged_run_get_anchor_id (run), error) ||
      !_kaged_store_bind_text (self, stmt, 3, status_nick, error) ||
      !_kaged_store_bind_int64 (self, stmt, 4, kaged_run_get_input_tokens (run), error) ||
      !_kaged_store_bind_int64 (self, stmt, 5, kaged_run_get_output_tokens (run), error) ||
      !_kaged_store_bind_int64 (self, stmt, 6, kaged_run_get_retryable (run), error) ||
      !_kaged_store_bind_text (self, stmt, 7, retry_class, error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 8, retry_after_until, error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 9, kaged_run_get_http_status (run), error) ||
      !_kaged_store_bind_text (self, stmt, 10, kaged_run_get_error_message (run), error) ||
      !_kaged_store_bind_int64 (self, stmt, 11, created_at, error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 12, kaged_run_get_started_at (run), error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 13, kaged_run_get_finished_at (run), error) ||
      !_kaged_store_step_done (self, stmt, error))
    return FALSE;

  kaged_run_set_id (run, sqlite3_last_insert_rowid (self->db));
  kaged_run_set_created_at (run, created_at);

  return TRUE;
}

/**
 * kaged_store_get_run:
 *
 * Returns: (transfer full): the run with its attempt log, or %NULL with
 *   @error set
 */
KagedRun *
kaged_store_get_run (KagedStore  *self,
                     gint64       run_id,
                     GError     **error)
{
  g_autoptr(KagedRun) run = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  {
    g_autoptr(KagedStoreCachedStmt) stmt = _kaged_store_get_stmt (self, STMT_RUN_GET, error);

    if (stmt == NULL || !_kaged_store_bind_int64 (self, stmt, 1, run_id, error))
      return NULL;

    run = _kaged_store_fetch_one (self, stmt, (KagedStoreRowFunc)_kaged_store_run_from_row,
                                  MISSING_RUN, run_id, error);
    if (run == NULL)
      return NULL;
  }

  if (!load_attempts (self, run, error))
    return NULL;

  return g_steal_pointer (&run);
}

/**
 * kaged_store_get_latest_run:
 *
 * Returns: (transfer full): the session's most recently created run with
 *   its attempt log, or %NULL with @error set (%KAGED_STORE_ERROR_NOT_FOUND
 *   when the session has none)
 */
KagedRun *
kaged_store_get_latest_run (KagedStore  *self,
                            gint64       session_id,
                            GError     **error)
{
  g_autoptr(KagedRun) run = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  {
    g_autoptr(KagedStoreCachedStmt) stmt = _kaged_store_get_stmt (self, STMT_RUN_LATEST, error);

    if (stmt == NULL || !_kaged_store_bind_int64 (self, stmt, 1, session_id, error))
      return NULL;

    run = _kaged_store_fetch_one (self, stmt, (KagedStoreRowFunc)_kaged_store_run_from_row,
                                  MISSING_SESSION_RUNS, session_id, error);
    if (run == NULL)
      return NULL;
  }

  if (!load_attempts (self, run, error))
    return NULL;

  return g_steal_pointer (&run);
}

/**
 * kaged_store_get_latest_run_in_conversation:
 *
 * The run the conversation ends with: the newest run anchored on the last
 * current operator message. Unlike kaged_store_get_latest_run(), a run
 * created later for an earlier message (a queued post answered after a
 * regeneration) is not it.
 *
 * Returns: (transfer full): the run with its attempt log, or %NULL with
 *   @error set (%KAGED_STORE_ERROR_NOT_FOUND when the session has none)
 */
KagedRun *
kaged_store_get_latest_run_in_conversation (KagedStore  *self,
                                            gint64       session_id,
                                            GError     **error)
{
  g_autoptr(KagedRun) run = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  {
    g_autoptr(KagedStoreCachedStmt) stmt = NULL;

    stmt = _kaged_store_get_stmt (self, STMT_RUN_LATEST_IN_CONVERSATION, error);
    if (stmt == NULL || !_kaged_store_bind_int64 (self, stmt, 1, session_id, error))
      return NULL;

    run = _kaged_store_fetch_one (self, stmt, (KagedStoreRowFunc)_kaged_store_run_from_row,
                                  MISSING_SESSION_RUNS, session_id, error);
    if (run == NULL)
      return NULL;
  }

  if (!load_attempts (self, run, error))
    return NULL;

  return g_steal_pointer (&run);
}

/**
 * kaged_store_update_run:
 * @run: a run read from or created in the store
 *
 * Writes the status, usage, retry classification, HTTP status, error
 * message and start and finish times of @run. Its attempts are stored
 * with kaged_store_append_attempt().
 */
gboolean
kaged_store_update_run (KagedStore  *self,
                        KagedRun    *run,
                        GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  const char *status_nick;
  const char *retry_class;
  gint64 retry_after_until;
  gint64 id;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (KAGED_IS_RUN (run), FALSE);

  id = kaged_run_get_id (run);
  status_nick = _kaged_store_enum_nick (KAGED_TYPE_RUN_STATUS, kaged_run_get_status (run));
  retry_class = kaged_retry_class_to_string (kaged_run_get_retry_class (run));
  retry_after_until = kaged_run_get_retry_after_until (run);
  stmt = _kaged_store_get_stmt (self, STMT_RUN_UPDATE, error);
  return stmt != NULL &&
         _kaged_store_bind_int64 (self, stmt, 1, id, error) &&
         _kaged_store_bind_text (self, stmt, 2, status_nick, error) &&
         _kaged_store_bind_int64 (self, stmt, 3, kaged_run_get_input_tokens (run), error) &&
         _kaged_store_bind_int64 (self, stmt, 4, kaged_run_get_output_tokens (run), error) &&
         _kaged_store_bind_int64 (self, stmt, 5, kaged_run_get_retryable (run), error) &&
         _kaged_store_bind_text (self, stmt, 6, retry_class, error) &&
         _kaged_store_bind_int64_or_null (self, stmt, 7, retry_after_until, error) &&
         _kaged_store_bind_int64_or_null (self, stmt, 8, kaged_run_get_http_status (run), error) &&
         _kaged_store_bind_text (self, stmt, 9, kaged_run_get_error_message (run), error) &&
         _kaged_store_bind_int64_or_null (self, stmt, 10, kaged_run_get_started_at (run), error) &&
         _kaged_store_bind_int64_or_null (self, stmt, 11, kaged_run_get_finished_at (run), error) &&
         _kaged_store_step_done (self, stmt, error) &&
         _kaged_store_expect_changed (self, MISSING_RUN, id, error);
}

/**
 * kaged_store_append_attempt:
 * @run_id: the run
 * @attempt: one tier-1 attempt
 *
 * Adds @attempt at the end of the run's attempt log.
 */
gboolean
kaged_store_append_attempt (KagedStore          *self,
                            gint64               run_id,
                            const KagedAttempt  *attempt,
                            GError             **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (attempt != NULL, FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_ATTEMPT_INSERT, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, run_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 2,
                                attempt->time != 0 ? attempt->time : _kaged_store_now_ms (self),
                                error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 3, attempt->http_status, error) ||
      !_kaged_store_bind_text (self, stmt, 4, attempt->error, error) ||
      !_kaged_store_bind_text (self, stmt, 5, kaged_retry_class_to_string (attempt->retry_class),
                               error) ||
      !_kaged_store_bind_int64 (self, stmt, 6, attempt->wait_ms, error) ||
      !_kaged_store_bind_text (self, stmt, 7, attempt->wait_source, error))
    return FALSE;

  if (sqlite3_step (stmt) != SQLITE_DONE)
    {
      /* The only reference is to the run. */
      if (sqlite3_extended_errcode (self->db) == SQLITE_CONSTRAINT_FOREIGNKEY)
        {
          g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND,
                       _("There is no run %lld"), (long long) run_id);
          return FALSE;
        }
      return _kaged_store_set_db_error (self, sqlite3_extended_errcode (self->db), error);
    }

  return TRUE;
}

/**
 * kaged_store_list_runs:
 * @session_id: the session, or 0 for every session
 * @status: the status wanted, such as %KAGED_RUN_STATUS_QUEUED
 *
 * Returns: (transfer full) (element-type KagedRun): the runs with that
 *   status and their attempt logs, oldest first, or %NULL with @error set
 */
GPtrArray *
kaged_store_list_runs (KagedStore      *self,
                       gint64           session_id,
                       KagedRunStatus   status,
                       GError         **error)
{
  g_autoptr(GPtrArray) runs = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  {
    g_autoptr(KagedStoreCachedStmt) stmt = NULL;
    const char *nick = _kaged_store_enum_nick (KAGED_TYPE_RUN_STATUS, status);

    if (session_id != 0)
      {
        stmt = _kaged_store_get_stmt (self, STMT_RUN_LIST, error);
        if (stmt == NULL ||
            !_kaged_store_bind_int64 (self, stmt, 1, session_id, error) ||
            !_kaged_store_bind_text (self, stmt, 2, nick, error))
          return NULL;
      }
    else
      {
        stmt = _kaged_store_get_stmt (self, STMT_RUN_LIST_ALL, error);
        if (stmt == NULL || !_kaged_store_bind_text (self, stmt, 1, nick, error))
          return NULL;
      }

    runs = _kaged_store_collect_rows (self, stmt, (KagedStoreRowFunc)_kaged_store_run_from_row,
                                      g_object_unref, error);
    if (runs == NULL)
      return NULL;
  }

  for (guint i = 0; i < runs->len; i++)
    {
      if (!load_attempts (self, g_ptr_array_index (runs, i), error))
        return NULL;
    }

  return g_steal_pointer (&runs);
}

/**
 * kaged_store_sum_usage:
 * @since_ms: the start of the period, epoch milliseconds
 * @input_tokens: (out): the input tokens used
 * @output_tokens: (out): the output tokens used
 *
 * Adds up the usage of every run finished since @since_ms and of every run
 * still running, over all sessions.
 */
gboolean
kaged_store_sum_usage (KagedStore  *self,
                       gint64       since_ms,
                       gint64      *input_tokens,
                       gint64      *output_tokens,
                       GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (input_tokens != NULL, FALSE);
  g_return_val_if_fail (output_tokens != NULL, FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_RUN_USAGE, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, since_ms, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error))
    return FALSE;

  *input_tokens = has_row ? sqlite3_column_int64 (stmt, 0) : 0;
  *output_tokens = has_row ? sqlite3_column_int64 (stmt, 1) : 0;
  return TRUE;
}

/**
 * kaged_store_sum_profile_usage:
 * @since_ms: the start of the period, epoch milliseconds
 * @profile_id: a provider profile's id
 * @input_tokens: (out): the input tokens used
 * @output_tokens: (out): the output tokens used
 *
 * As kaged_store_sum_usage(), over the runs that went through the profile
 * @profile_id only. Runs recorded before there were profiles count for
 * "default", the profile the single provider of then became.
 */
gboolean
kaged_store_sum_profile_usage (KagedStore  *self,
                               gint64       since_ms,
                               const char  *profile_id,
                               gint64      *input_tokens,
                               gint64      *output_tokens,
                               GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (profile_id != NULL, FALSE);
  g_return_val_if_fail (input_tokens != NULL, FALSE);
  g_return_val_if_fail (output_tokens != NULL, FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_RUN_PROFILE_USAGE, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, since_ms, error) ||
      !_kaged_store_bind_text (self, stmt, 2, profile_id, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error))
    return FALSE;

  *input_tokens = has_row ? sqlite3_column_int64 (stmt, 0) : 0;
  *output_tokens = has_row ? sqlite3_column_int64 (stmt, 1) : 0;
  return TRUE;
}
