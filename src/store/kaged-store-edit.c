/* kaged-store-edit.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-store-private.h"

/* An edit is rare: its statement is prepared when it happens. ?1 session,
 * ?2 the edited message, ?3 the run that replaces it, ?4 the first id that
 * stays (the edited text, stored in the same transaction). */
static const char supersede_from_sql[] =
  "INSERT INTO message_supersessions (message_id, run_id) "
  "SELECT m.id, ?3 FROM messages m, messages e "
  "WHERE e.id = ?2 AND m.session_id = ?1 AND m.id < ?4 "
  "AND (m.id = e.id OR coalesce (m.anchor_id, m.id) > coalesce (e.anchor_id, e.id) "
  "     OR (coalesce (m.anchor_id, m.id) = coalesce (e.anchor_id, e.id) AND m.id > e.id)) "
  "AND NOT EXISTS (SELECT 1 FROM message_supersessions s WHERE s.message_id = m.id) "
  "RETURNING message_id";

static int
compare_ids (gconstpointer a,
             gconstpointer b)
{
  gint64 x = *(const gint64 *)a;
  gint64 y = *(const gint64 *)b;

  return x < y ? -1 : x > y;
}

/**
 * kaged_store_supersede_from:
 * @session_id: the session
 * @message_id: a current operator message of the session
 * @by_run_id: the run that replaces them
 * @before_id: messages from this id on are left alone
 * @superseded_ids: (out) (optional) (transfer full) (element-type gint64):
 *   the ids of the messages superseded, ascending
 *
 * Marks @message_id itself and every current message after it in
 * conversation order (with an id below @before_id) superseded by
 * @by_run_id: what an edit of @message_id replaces. No message row is
 * rewritten. Call it inside a transaction.
 */
gboolean
kaged_store_supersede_from (KagedStore  *self,
                            gint64       session_id,
                            gint64       message_id,
                            gint64       by_run_id,
                            gint64       before_id,
                            GArray     **superseded_ids,
                            GError     **error)
{
  g_autoptr(GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint64));
  KagedStoreMessageInfo info;
  sqlite3_stmt *stmt = NULL;
  int rc;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (superseded_ids == NULL || *superseded_ids == NULL, FALSE);

  if (!_kaged_store_get_message_info (self, message_id, &info, error))
    return FALSE;

  if (info.session_id != session_id || info.role != KAGED_MESSAGE_ROLE_OPERATOR || info.superseded)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                   _("Message %lld is not a current message of yours in session %lld"),
                   (long long) message_id, (long long) session_id);
      return FALSE;
    }

  rc = sqlite3_prepare_v2 (self->db, supersede_from_sql, -1, &stmt, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_int64 (stmt, 1, session_id);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_int64 (stmt, 2, message_id);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_int64 (stmt, 3, by_run_id);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_int64 (stmt, 4, before_id);

  while (rc == SQLITE_OK && (rc = sqlite3_step (stmt)) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (stmt, 0);

      g_array_append_val (ids, id);
      rc = SQLITE_OK;
    }
  sqlite3_finalize (stmt);

  if (rc != SQLITE_DONE)
    return _kaged_store_set_db_error (self, rc, error);

  g_array_sort (ids, compare_ids);
  if (superseded_ids != NULL)
    *superseded_ids = g_steal_pointer (&ids);

  return TRUE;
}
