/* kaged-store-sessions.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include "kaged-store-private.h"

/**
 * kaged_store_create_session:
 * @title: (nullable): the title
 *
 * Returns: (transfer full): the new session, or %NULL with @error set
 */
KagedSession *
kaged_store_create_session (KagedStore  *self,
                            const char  *title,
                            GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  KagedSession *session;
  gint64 now;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  now = _kaged_store_now_ms (self);
  stmt = _kaged_store_get_stmt (self, STMT_SESSION_INSERT, error);
  if (stmt == NULL ||
      !_kaged_store_bind_text (self, stmt, 1, title != NULL ? title : "", error) ||
      !_kaged_store_bind_int64 (self, stmt, 2, now, error) ||
      !_kaged_store_step_done (self, stmt, error))
    return NULL;

  session = kaged_session_new ();
  kaged_session_set_id (session, sqlite3_last_insert_rowid (self->db));
  kaged_session_set_title (session, title != NULL ? title : "");
  kaged_session_set_created_at (session, now);
  kaged_session_set_updated_at (session, now);

  return session;
}

/**
 * kaged_store_get_session:
 *
 * Returns: (transfer full): the session, or %NULL with @error set
 *   (%KAGED_STORE_ERROR_NOT_FOUND when there is none)
 */
KagedSession *
kaged_store_get_session (KagedStore  *self,
                         gint64       session_id,
                         GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  stmt = _kaged_store_get_stmt (self, STMT_SESSION_GET, error);
  if (stmt == NULL || !_kaged_store_bind_int64 (self, stmt, 1, session_id, error))
    return NULL;

  return _kaged_store_fetch_one (self, stmt, (KagedStoreRowFunc)_kaged_store_session_from_row,
                                 MISSING_SESSION, session_id, error);
}

/**
 * kaged_store_list_sessions:
 *
 * Returns: (transfer full) (element-type KagedSession): every session, the
 *   most recently updated first, or %NULL with @error set
 */
GPtrArray *
kaged_store_list_sessions (KagedStore  *self,
                           GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  stmt = _kaged_store_get_stmt (self, STMT_SESSION_LIST, error);
  if (stmt == NULL)
    return NULL;

  return _kaged_store_collect_rows (self, stmt, (KagedStoreRowFunc)_kaged_store_session_from_row,
                                    g_object_unref, error);
}

gboolean
kaged_store_rename_session (KagedStore  *self,
                            gint64       session_id,
                            const char  *title,
                            GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_SESSION_RENAME, error);
  return stmt != NULL &&
         _kaged_store_bind_int64 (self, stmt, 1, session_id, error) &&
         _kaged_store_bind_text (self, stmt, 2, title != NULL ? title : "", error) &&
         _kaged_store_step_done (self, stmt, error) &&
         _kaged_store_expect_changed (self, MISSING_SESSION, session_id, error);
}

/**
 * kaged_store_delete_session:
 *
 * Deletes the session with all its messages, runs, attempts and retry
 * state. This is the only way messages leave the database.
 */
gboolean
kaged_store_delete_session (KagedStore  *self,
                            gint64       session_id,
                            GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_SESSION_DELETE, error);
  return stmt != NULL &&
         _kaged_store_bind_int64 (self, stmt, 1, session_id, error) &&
         _kaged_store_step_done (self, stmt, error) &&
         _kaged_store_expect_changed (self, MISSING_SESSION, session_id, error);
}
