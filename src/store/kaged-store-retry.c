/* kaged-store-retry.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-retry-class.h"
#include "kaged-store-private.h"

G_DEFINE_BOXED_TYPE (KagedStoreRetryState, kaged_store_retry_state,
                     kaged_store_retry_state_copy, kaged_store_retry_state_free)

static KagedStoreRetryState *
retry_state_from_row (sqlite3_stmt *stmt)
{
  KagedStoreRetryState *state = kaged_store_retry_state_new (sqlite3_column_int64 (stmt, 0));

  state->attempt = (guint)sqlite3_column_int64 (stmt, 1);
  state->next_eligible_at = sqlite3_column_int64 (stmt, 2);
  g_free (state->state);
  state->state = g_strdup (_kaged_store_column_text (stmt, 3));
  state->cancelled = sqlite3_column_int (stmt, 4) != 0;
  state->anchor_id = sqlite3_column_int64 (stmt, 5);
  state->updated_at = sqlite3_column_int64 (stmt, 6);
  if (!kaged_retry_class_from_string (_kaged_store_column_text (stmt, 7), &state->retry_class))
    state->retry_class = KAGED_RETRY_CLASS_NONE;
  state->http_status = (guint)sqlite3_column_int64 (stmt, 8);
  state->retry_after_until = sqlite3_column_int64 (stmt, 9);
  state->advised_wait_ms = sqlite3_column_int64 (stmt, 10);
  state->wait_source = g_strdup (_kaged_store_column_text (stmt, 11));
  state->seen_run_id = sqlite3_column_int64 (stmt, 12);
  state->retry_run_id = sqlite3_column_int64 (stmt, 13);

  return state;
}

/**
 * kaged_store_retry_state_new:
 * @session_id: the session
 *
 * Returns: (transfer full): an idle state for @session_id
 */
KagedStoreRetryState *
kaged_store_retry_state_new (gint64 session_id)
{
  KagedStoreRetryState *self = g_new0 (KagedStoreRetryState, 1);

  self->session_id = session_id;
  self->state = g_strdup ("idle");

  return self;
}

KagedStoreRetryState *
kaged_store_retry_state_copy (const KagedStoreRetryState *self)
{
  KagedStoreRetryState *copy;

  g_return_val_if_fail (self != NULL, NULL);

  copy = g_new0 (KagedStoreRetryState, 1);
  *copy = *self;
  copy->state = g_strdup (self->state);
  copy->wait_source = g_strdup (self->wait_source);

  return copy;
}

void
kaged_store_retry_state_free (KagedStoreRetryState *self)
{
  if (self == NULL)
    return;

  g_free (self->state);
  g_free (self->wait_source);
  g_free (self);
}

/**
 * kaged_store_get_retry_state:
 *
 * Returns: (transfer full): the saved state of the session's Tier 2
 *   scheduler, an idle one when none was saved, or %NULL with @error set
 */
KagedStoreRetryState *
kaged_store_get_retry_state (KagedStore  *self,
                             gint64       session_id,
                             GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  stmt = _kaged_store_get_stmt (self, STMT_RETRY_GET, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, session_id, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error))
    return NULL;

  if (!has_row)
    return kaged_store_retry_state_new (session_id);

  return retry_state_from_row (stmt);
}

/**
 * kaged_store_set_retry_state:
 * @state: the state to save; a @updated_at of 0 is filled in with now
 *
 * Saves the state of a session's Tier 2 scheduler, replacing the last one.
 */
gboolean
kaged_store_set_retry_state (KagedStore                  *self,
                             const KagedStoreRetryState  *state,
                             GError                     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (state != NULL, FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_RETRY_SET, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, state->session_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 2, state->attempt, error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 3, state->next_eligible_at, error) ||
      !_kaged_store_bind_text (self, stmt, 4, state->state != NULL ? state->state : "idle",
                               error) ||
      !_kaged_store_bind_int64 (self, stmt, 5, state->cancelled ? 1 : 0, error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 6, state->anchor_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 7,
                                state->updated_at != 0 ? state->updated_at
                                                       : _kaged_store_now_ms (self),
                                error) ||
      !_kaged_store_bind_text (self, stmt, 8, kaged_retry_class_to_string (state->retry_class),
                               error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 9, state->http_status, error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 10, state->retry_after_until, error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 11, state->advised_wait_ms, error) ||
      !_kaged_store_bind_text (self, stmt, 12, state->wait_source, error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 13, state->seen_run_id, error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 14, state->retry_run_id, error))
    return FALSE;

  if (sqlite3_step (stmt) != SQLITE_DONE)
    {
      if (sqlite3_extended_errcode (self->db) == SQLITE_CONSTRAINT_FOREIGNKEY)
        {
          g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND,
                       _("There is no session %lld"), (long long) state->session_id);
          return FALSE;
        }
      return _kaged_store_set_db_error (self, sqlite3_extended_errcode (self->db), error);
    }

  return TRUE;
}

/**
 * kaged_store_clear_retry_state:
 *
 * Forgets the saved Tier 2 state of a session; nothing to forget is fine.
 */
gboolean
kaged_store_clear_retry_state (KagedStore  *self,
                               gint64       session_id,
                               GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_RETRY_CLEAR, error);
  return stmt != NULL &&
         _kaged_store_bind_int64 (self, stmt, 1, session_id, error) &&
         _kaged_store_step_done (self, stmt, error);
}

/**
 * kaged_store_list_retry_states:
 *
 * Returns: (transfer full) (element-type KagedStoreRetryState): every saved
 *   Tier 2 state, to resume on start-up, or %NULL with @error set
 */
GPtrArray *
kaged_store_list_retry_states (KagedStore  *self,
                               GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  stmt = _kaged_store_get_stmt (self, STMT_RETRY_LIST, error);
  if (stmt == NULL)
    return NULL;

  return _kaged_store_collect_rows (self, stmt, (KagedStoreRowFunc)retry_state_from_row,
                                   (GDestroyNotify)kaged_store_retry_state_free, error);
}
