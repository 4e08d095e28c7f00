/* kaged-store-drafts.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include "kaged-store-private.h"

/*
 * What was written in a conversation and not sent yet: one text for each
 * conversation, and one (session 0) for a conversation not started. A
 * draft goes with its conversation (schema version 8).
 */

/**
 * kaged_store_get_draft:
 * @session_id: a conversation, or 0 for one not started yet
 * @text: (out) (transfer full) (nullable): the text, or %NULL for none
 *
 * Returns: %TRUE, or %FALSE with @error set
 */
gboolean
kaged_store_get_draft (KagedStore  *self,
                       gint64       session_id,
                       char       **text,
                       GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (text != NULL && *text == NULL, FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_DRAFT_GET, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, session_id, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error))
    return FALSE;

  if (has_row)
    *text = g_strdup (_kaged_store_column_text (stmt, 0));

  return TRUE;
}

/**
 * kaged_store_set_draft:
 * @session_id: a conversation, or 0 for one not started yet
 * @text: (nullable): the text; %NULL or empty for none
 *
 * Returns: %TRUE, or %FALSE with @error set (%KAGED_STORE_ERROR_NOT_FOUND
 *   when there is no such conversation)
 */
gboolean
kaged_store_set_draft (KagedStore  *self,
                       gint64       session_id,
                       const char  *text,
                       GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (session_id >= 0, FALSE);

  if (text == NULL || text[0] == '\0')
    {
      stmt = _kaged_store_get_stmt (self, STMT_DRAFT_DELETE, error);
      return stmt != NULL &&
             _kaged_store_bind_int64 (self, stmt, 1, session_id, error) &&
             _kaged_store_step_done (self, stmt, error);
    }

  stmt = _kaged_store_get_stmt (self, STMT_DRAFT_SET, error);
  return stmt != NULL &&
         _kaged_store_bind_int64 (self, stmt, 1, session_id, error) &&
         _kaged_store_bind_text (self, stmt, 2, text, error) &&
         _kaged_store_bind_int64 (self, stmt, 3, _kaged_store_now_ms (self), error) &&
         _kaged_store_step_done (self, stmt, error) &&
         _kaged_store_expect_changed (self, MISSING_SESSION, session_id, error);
}
