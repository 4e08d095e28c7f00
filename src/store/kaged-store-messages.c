/* kaged-store-messages.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-enum-types.h"
#include "kaged-retry-class.h"
#include "kaged-store-private.h"

gboolean
_kaged_store_get_message_info (KagedStore             *self,
                               gint64                  message_id,
                               KagedStoreMessageInfo  *info,
                               GError                **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;

  stmt = _kaged_store_get_stmt (self, STMT_MESSAGE_INFO, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, message_id, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error))
    return FALSE;

  if (!has_row)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND,
                   _("There is no message %lld"), (long long) message_id);
      return FALSE;
    }

  info->session_id = sqlite3_column_int64 (stmt, 0);
  info->role = _kaged_store_enum_from_column (stmt, 1, KAGED_TYPE_MESSAGE_ROLE,
                                              KAGED_MESSAGE_ROLE_AGENT);
  info->superseded = sqlite3_column_int (stmt, 2) != 0;

  return TRUE;
}

/* Checks that a run exists and belongs to @session_id, and gives its
 * anchor. */
static gboolean
check_run_in_session (KagedStore  *self,
                      gint64       run_id,
                      gint64       session_id,
                      gint64      *anchor_id,
                      GError     **error)
{
  g_autoptr(KagedRun) run = kaged_store_get_run (self, run_id, error);

  if (run == NULL)
    return FALSE;

  if (anchor_id != NULL)
    *anchor_id = kaged_run_get_anchor_id (run);

  if (kaged_run_get_session_id (run) != session_id)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                   _("Run %lld is not part of session %lld"),
                   (long long) run_id, (long long) session_id);
      return FALSE;
    }

  return TRUE;
}

static gboolean
insert_message (KagedStore    *self,
                KagedMessage  *message,
                gint64         created_at,
                GError       **error)
{
  gint64 session_id = kaged_message_get_session_id (message);
  KagedMessageRole role = kaged_message_get_role (message);
  gint64 run_id = kaged_message_get_run_id (message);
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  const char *role_nick = _kaged_store_enum_nick (KAGED_TYPE_MESSAGE_ROLE, role);
  const char *status_nick = _kaged_store_enum_nick (KAGED_TYPE_MESSAGE_STATUS,
                                                    kaged_message_get_status (message));
  KagedRetryClass retry_class = kaged_message_get_retry_class (message);
  gint64 anchor_id = 0;

  /* A reply stands with the operator message its run answers. */
  if (run_id != 0 && !check_run_in_session (self, run_id, session_id, &anchor_id, error))
    return FALSE;
  if (role != KAGED_MESSAGE_ROLE_AGENT)
    anchor_id = 0;

  /* Touching the session first also tells whether it exists. */
  stmt = _kaged_store_get_stmt (self, STMT_SESSION_TOUCH, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, session_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 2, created_at, error) ||
      !_kaged_store_step_done (self, stmt, error) ||
      !_kaged_store_expect_changed (self, MISSING_SESSION, session_id, error))
    return FALSE;
  g_clear_pointer (&stmt, _kaged_store_cached_stmt_release);

  stmt = _kaged_store_get_stmt (self, STMT_MESSAGE_INSERT, error);
  return stmt != NULL &&
         _kaged_store_bind_int64 (self, stmt, 1, session_id, error) &&
         _kaged_store_bind_text (self, stmt, 2, role_nick, error) &&
         _kaged_store_bind_text (self, stmt, 3, kaged_message_get_content (message) ?: "", error) &&
         _kaged_store_bind_int64 (self, stmt, 4, created_at, error) &&
         _kaged_store_bind_int64_or_null (self, stmt, 5, run_id, error) &&
         _kaged_store_bind_text (self, stmt, 6, status_nick, error) &&
         _kaged_store_bind_text (self, stmt, 7, kaged_message_get_error_message (message), error) &&
         _kaged_store_bind_int64 (self, stmt, 8, kaged_message_get_retryable (message), error) &&
         _kaged_store_bind_text (self, stmt, 9, kaged_retry_class_to_string (retry_class), error) &&
         _kaged_store_bind_int64_or_null (self, stmt, 10,
                                          kaged_message_get_retry_after_until (message), error) &&
         _kaged_store_bind_int64_or_null (self, stmt, 11, anchor_id, error) &&
         _kaged_store_step_done (self, stmt, error);
}

/**
 * kaged_store_append_message:
 * @message: a new message: session, role, content; for an agent message
 *   also its run and status
 *
 * Stores @message after every other message of its session and sets its
 * id (and its creation time, when it has none). Operator messages carry no
 * run and no status; agent messages belong to a run of the same session.
 * A new message is always current and never compacted.
 */
gboolean
kaged_store_append_message (KagedStore    *self,
                            KagedMessage  *message,
                            GError       **error)
{
  KagedMessageRole role;
  gint64 created_at;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (KAGED_IS_MESSAGE (message), FALSE);
  g_return_val_if_fail (kaged_message_get_id (message) == 0, FALSE);

  role = kaged_message_get_role (message);
  if (role == KAGED_MESSAGE_ROLE_OPERATOR &&
      (kaged_message_get_run_id (message) != 0 ||
       kaged_message_get_status (message) != KAGED_MESSAGE_STATUS_NONE))
    {
      g_set_error_literal (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                           _("An operator message has no run and no status"));
      return FALSE;
    }
  if (role == KAGED_MESSAGE_ROLE_AGENT && kaged_message_get_run_id (message) == 0)
    {
      g_set_error_literal (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                           _("An agent message belongs to a run"));
      return FALSE;
    }

  created_at = kaged_message_get_created_at (message);
  if (created_at == 0)
    created_at = _kaged_store_now_ms (self);

  if (!kaged_store_begin (self, error))
    return FALSE;

  if (!insert_message (self, message, created_at, error))
    {
      kaged_store_rollback (self);
      return FALSE;
    }

  if (!kaged_store_commit (self, error))
    return FALSE;

  kaged_message_set_id (message, sqlite3_last_insert_rowid (self->db));
  kaged_message_set_created_at (message, created_at);
  kaged_message_set_superseded_by_run (message, 0);
  kaged_message_set_compacted (message, FALSE);

  return TRUE;
}

/**
 * kaged_store_get_message:
 *
 * Returns: (transfer full): the message, superseded or not, or %NULL with
 *   @error set
 */
KagedMessage *
kaged_store_get_message (KagedStore  *self,
                         gint64       message_id,
                         GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  stmt = _kaged_store_get_stmt (self, STMT_MESSAGE_GET, error);
  if (stmt == NULL || !_kaged_store_bind_int64 (self, stmt, 1, message_id, error))
    return NULL;

  return _kaged_store_fetch_one (self, stmt, (KagedStoreRowFunc)_kaged_store_message_from_row,
                                 MISSING_MESSAGE, message_id, error);
}

/**
 * kaged_store_update_message:
 * @message: an agent or summary message read from or appended to the store
 *
 * Writes the content, status, error message and retry classification of
 * @message. Operator messages never change: for them this fails with
 * %KAGED_STORE_ERROR_IMMUTABLE.
 */
gboolean
kaged_store_update_message (KagedStore    *self,
                            KagedMessage  *message,
                            GError       **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gint64 id;
  KagedStoreMessageInfo info;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (KAGED_IS_MESSAGE (message), FALSE);

  id = kaged_message_get_id (message);
  stmt = _kaged_store_get_stmt (self, STMT_MESSAGE_UPDATE, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, id, error) ||
      !_kaged_store_bind_text (self, stmt, 2, kaged_message_get_content (message) ?: "", error) ||
      !_kaged_store_bind_text (self, stmt, 3,
                               _kaged_store_enum_nick (KAGED_TYPE_MESSAGE_STATUS,
                                                       kaged_message_get_status (message)),
                               error) ||
      !_kaged_store_bind_text (self, stmt, 4, kaged_message_get_error_message (message), error) ||
      !_kaged_store_bind_int64 (self, stmt, 5, kaged_message_get_retryable (message), error) ||
      !_kaged_store_bind_text (self, stmt, 6,
                               kaged_retry_class_to_string (kaged_message_get_retry_class (message)),
                               error) ||
      !_kaged_store_bind_int64_or_null (self, stmt, 7,
                                        kaged_message_get_retry_after_until (message), error) ||
      !_kaged_store_step_done (self, stmt, error))
    return FALSE;

  if (sqlite3_changes (self->db) > 0)
    return TRUE;

  /* Nothing changed: the message is missing or an operator's. */
  if (!_kaged_store_get_message_info (self, id, &info, error))
    return FALSE;

  g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IMMUTABLE,
               _("Message %lld was written by the operator and cannot be changed"),
               (long long) id);
  return FALSE;
}

/**
 * kaged_store_save_streaming_text:
 * @message: an agent or summary message whose reply is streaming
 *
 * Writes @message as kaged_store_update_message() does, without waiting
 * for the disk: the text of a reply is saved every few hundred
 * milliseconds while it streams, and a sync each time would hold up the
 * writing thread for nothing the person acknowledged. A power cut can lose
 * what this saved since the last commit that waited, which the next such
 * commit (the reply's end, at the latest) takes to the disk with it;
 * recovery then finds the run interrupted with the text saved before.
 * Inside a transaction, the transaction's commit waits as any other.
 */
gboolean
kaged_store_save_streaming_text (KagedStore    *self,
                                 KagedMessage  *message,
                                 GError       **error)
{
  g_autoptr(GError) restore_error = NULL;
  g_autofree char *restore = NULL;
  gint64 level = 0;
  gboolean saved;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (KAGED_IS_MESSAGE (message), FALSE);

  /* SQLite changes the level only between transactions. */
  if (self->depth > 0)
    return kaged_store_update_message (self, message, error);

  if (!_kaged_store_query_int (self, "PRAGMA synchronous", &level, error))
    return FALSE;
  if (level <= STORE_SYNCHRONOUS_RELAXED_LEVEL)
    return kaged_store_update_message (self, message, error);

  if (!_kaged_store_exec_sql (self, "PRAGMA synchronous = " STORE_SYNCHRONOUS_RELAXED, error))
    return FALSE;

  saved = kaged_store_update_message (self, message, error);

  restore = g_strdup_printf ("PRAGMA synchronous = %" G_GINT64_FORMAT, level);
  if (!_kaged_store_exec_sql (self, restore, &restore_error))
    {
      g_warning ("%s", restore_error->message);
      if (saved)
        g_propagate_error (error, g_steal_pointer (&restore_error));
      return FALSE;
    }

  return saved;
}

/*
 * The place of a message in conversation order: its turn (the operator
 * message a reply answers, the message itself otherwise) and its id. An
 * id that names no message of the session is placed as an operator
 * message with that id would be.
 */
static gboolean
get_order_key (KagedStore  *self,
               gint64       session_id,
               gint64       message_id,
               gint64      *turn,
               GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;

  stmt = _kaged_store_get_stmt (self, STMT_MESSAGE_TURN, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, message_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 2, session_id, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error))
    return FALSE;

  *turn = has_row ? sqlite3_column_int64 (stmt, 0) : message_id;
  return TRUE;
}

static void
reverse_rows (GPtrArray *rows)
{
  for (guint i = 0, j = rows->len; i + 1 < j; i++, j--)
    {
      gpointer tmp = rows->pdata[i];

      rows->pdata[i] = rows->pdata[j - 1];
      rows->pdata[j - 1] = tmp;
    }
}

/* Lists from the key (?2, ?3): after it, or before it in reverse. */
static GPtrArray *
list_messages (KagedStore  *self,
               StmtId       id,
               gint64       session_id,
               gint64       turn,
               gint64       from_id,
               guint        limit,
               GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = _kaged_store_get_stmt (self, id, error);

  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, session_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 2, turn, error) ||
      !_kaged_store_bind_int64 (self, stmt, 3, from_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 4, limit > 0 ? (gint64)limit : -1, error))
    return NULL;

  return _kaged_store_collect_rows (self, stmt, (KagedStoreRowFunc)_kaged_store_message_from_row,
                                    g_object_unref, error);
}

/**
 * kaged_store_list_messages:
 * @session_id: the session
 * @include_superseded: whether to list superseded messages too
 * @after_id: list messages after this one, or 0 to start at the beginning
 * @limit: at most this many, or 0 for all
 *
 * Pages through a session's messages in conversation order: operator and
 * summary messages in the order they were posted, each reply right after
 * the operator message it answers, earlier versions first. Pass the id of
 * the last message of a page as @after_id for the next one.
 *
 * Returns: (transfer full) (element-type KagedMessage): the messages, or
 *   %NULL with @error set
 */
GPtrArray *
kaged_store_list_messages (KagedStore  *self,
                           gint64       session_id,
                           gboolean     include_superseded,
                           gint64       after_id,
                           guint        limit,
                           GError     **error)
{
  gint64 turn = 0;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);
  g_return_val_if_fail (after_id >= 0, NULL);

  if (after_id > 0 && !get_order_key (self, session_id, after_id, &turn, error))
    return NULL;

  return list_messages (self,
                        include_superseded ? STMT_MESSAGE_LIST_ALL_AFTER
                                           : STMT_MESSAGE_LIST_CURRENT_AFTER,
                        session_id, turn, after_id, limit, error);
}

/**
 * kaged_store_list_messages_before:
 * @session_id: the session
 * @include_superseded: whether to list superseded messages too
 * @before_id: list messages before this one, or 0 to end with the last
 * @limit: at most this many, or 0 for all
 *
 * Pages backwards from the end of the conversation: the page holds the
 * @limit messages just before @before_id, in conversation order.
 *
 * Returns: (transfer full) (element-type KagedMessage): the messages, or
 *   %NULL with @error set
 */
GPtrArray *
kaged_store_list_messages_before (KagedStore  *self,
                                  gint64       session_id,
                                  gboolean     include_superseded,
                                  gint64       before_id,
                                  guint        limit,
                                  GError     **error)
{
  GPtrArray *messages;
  gint64 turn = G_MAXINT64;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);
  g_return_val_if_fail (before_id >= 0, NULL);

  if (before_id > 0 && !get_order_key (self, session_id, before_id, &turn, error))
    return NULL;

  messages = list_messages (self,
                            include_superseded ? STMT_MESSAGE_LIST_ALL_BEFORE
                                               : STMT_MESSAGE_LIST_CURRENT_BEFORE,
                            session_id, turn, before_id > 0 ? before_id : G_MAXINT64, limit,
                            error);

  if (messages != NULL)
    reverse_rows (messages);

  return messages;
}

/**
 * kaged_store_list_messages_at:
 * @session_id: the session
 * @include_superseded: whether to count and list superseded messages too
 * @offset: how many messages to skip, from the start (or from the end)
 * @limit: at most this many, or 0 for all
 * @from_end: whether @offset counts back from the end of the conversation
 *
 * Lists the messages at a position in conversation order: the @limit
 * messages after the first @offset, or with @from_end, the @limit messages
 * that end @offset messages before the last one. Either way they come in
 * conversation order. The cost grows with @offset: page from a message
 * with kaged_store_list_messages() or kaged_store_list_messages_before()
 * where one is at hand.
 *
 * Returns: (transfer full) (element-type KagedMessage): the messages, or
 *   %NULL with @error set
 */
GPtrArray *
kaged_store_list_messages_at (KagedStore  *self,
                              gint64       session_id,
                              gboolean     include_superseded,
                              guint        offset,
                              guint        limit,
                              gboolean     from_end,
                              GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  GPtrArray *messages;
  StmtId id;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  if (from_end)
    id = include_superseded ? STMT_MESSAGE_LIST_ALL_AT_END : STMT_MESSAGE_LIST_CURRENT_AT_END;
  else
    id = include_superseded ? STMT_MESSAGE_LIST_ALL_AT : STMT_MESSAGE_LIST_CURRENT_AT;

  stmt = _kaged_store_get_stmt (self, id, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, session_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 2, offset, error) ||
      !_kaged_store_bind_int64 (self, stmt, 3, limit > 0 ? (gint64)limit : -1, error))
    return NULL;

  messages = _kaged_store_collect_rows (self, stmt,
                                        (KagedStoreRowFunc)_kaged_store_message_from_row,
                                        g_object_unref, error);
  if (messages != NULL && from_end)
    reverse_rows (messages);

  return messages;
}

/**
 * kaged_store_count_messages_after:
 * @session_id: the session
 * @include_superseded: whether to count superseded messages too
 * @message_id: a message of the session
 * @n_messages: (out): how many messages stand after it
 *
 * Counts the messages after @message_id in conversation order: near the
 * end of a conversation, this is cheap whatever its length.
 */
gboolean
kaged_store_count_messages_after (KagedStore  *self,
                                  gint64       session_id,
                                  gboolean     include_superseded,
                                  gint64       message_id,
                                  guint       *n_messages,
                                  GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;
  gint64 turn = 0;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (n_messages != NULL, FALSE);

  if (!get_order_key (self, session_id, message_id, &turn, error))
    return FALSE;

  stmt = _kaged_store_get_stmt (self,
                                include_superseded ? STMT_MESSAGE_COUNT_ALL_AFTER
                                                   : STMT_MESSAGE_COUNT_CURRENT_AFTER,
                                error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, session_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 2, turn, error) ||
      !_kaged_store_bind_int64 (self, stmt, 3, message_id, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error))
    return FALSE;

  *n_messages = has_row ? (guint)sqlite3_column_int64 (stmt, 0) : 0;
  return TRUE;
}

/**
 * kaged_store_count_messages_before:
 * @session_id: the session
 * @include_superseded: whether to count superseded messages too
 * @message_id: a message of the session, superseded or not
 * @n_messages: (out): how many messages stand before it
 *
 * Counts the messages before @message_id in conversation order: the
 * position of a message in a listing, without reading what comes before
 * it. Fails with %KAGED_STORE_ERROR_NOT_FOUND when the session has no such
 * message.
 */
gboolean
kaged_store_count_messages_before (KagedStore  *self,
                                   gint64       session_id,
                                   gboolean     include_superseded,
                                   gint64       message_id,
                                   guint       *n_messages,
                                   GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;
  gint64 turn;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (n_messages != NULL, FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_MESSAGE_TURN, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, message_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 2, session_id, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error))
    return FALSE;

  if (!has_row)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND,
                   _("Message %lld is not part of session %lld"),
                   (long long) message_id, (long long) session_id);
      return FALSE;
    }

  turn = sqlite3_column_int64 (stmt, 0);
  g_clear_pointer (&stmt, _kaged_store_cached_stmt_release);

  stmt = _kaged_store_get_stmt (self,
                                include_superseded ? STMT_MESSAGE_COUNT_ALL_BEFORE
                                                   : STMT_MESSAGE_COUNT_CURRENT_BEFORE,
                                error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, session_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 2, turn, error) ||
      !_kaged_store_bind_int64 (self, stmt, 3, message_id, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error))
    return FALSE;

  *n_messages = has_row ? (guint)sqlite3_column_int64 (stmt, 0) : 0;
  return TRUE;
}

gboolean
kaged_store_count_messages (KagedStore  *self,
                            gint64       session_id,
                            gboolean     include_superseded,
                            guint       *n_messages,
                            GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (n_messages != NULL, FALSE);

  stmt = _kaged_store_get_stmt (self,
                                include_superseded ? STMT_MESSAGE_COUNT_ALL
                                                   : STMT_MESSAGE_COUNT_CURRENT,
                                error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, session_id, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error))
    return FALSE;

  *n_messages = has_row ? (guint)sqlite3_column_int64 (stmt, 0) : 0;
  return TRUE;
}

static int
compare_ids (gconstpointer a,
             gconstpointer b)
{
  gint64 x = *(const gint64 *)a;
  gint64 y = *(const gint64 *)b;

  return (x > y) - (x < y);
}

static gboolean
supersede_after (KagedStore  *self,
                 gint64       session_id,
                 gint64       message_id,
                 gint64       by_run_id,
                 GArray      *ids,
                 GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;
  KagedStoreMessageInfo info;
  gint64 turn = 0;

  if (!_kaged_store_get_message_info (self, message_id, &info, error))
    return FALSE;

  if (info.session_id != session_id)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                   _("Message %lld is not part of session %lld"),
                   (long long) message_id, (long long) session_id);
      return FALSE;
    }

  if (info.superseded)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                   _("Message %lld has already been superseded"),
                   (long long) message_id);
      return FALSE;
    }

  if (!check_run_in_session (self, by_run_id, session_id, NULL, error) ||
      !get_order_key (self, session_id, message_id, &turn, error))
    return FALSE;

  stmt = _kaged_store_get_stmt (self, STMT_MESSAGE_SUPERSEDE, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, session_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 2, turn, error) ||
      !_kaged_store_bind_int64 (self, stmt, 3, message_id, error) ||
      !_kaged_store_bind_int64 (self, stmt, 4, by_run_id, error))
    return FALSE;

  for (;;)
    {
      gint64 id;

      if (!_kaged_store_step_row (self, stmt, &has_row, error))
        return FALSE;
      if (!has_row)
        break;
      id = sqlite3_column_int64 (stmt, 0);
      g_array_append_val (ids, id);
    }

  g_array_sort (ids, compare_ids);
  return TRUE;
}

/**
 * kaged_store_supersede_after:
 * @session_id: the session
 * @message_id: a current message of the session
 * @by_run_id: the run of the session that supersedes them
 * @superseded_ids: (out) (optional) (transfer full) (element-type gint64):
 *   the ids of the messages superseded, ascending
 *
 * Marks every current message after @message_id in conversation order
 * superseded by @by_run_id, in one transaction (for an operator message:
 * its replies and everything after them). Messages before it, @message_id itself and messages
 * superseded earlier are left as they were; no message row is rewritten.
 */
gboolean
kaged_store_supersede_after (KagedStore  *self,
                             gint64       session_id,
                             gint64       message_id,
                             gint64       by_run_id,
                             GArray     **superseded_ids,
                             GError     **error)
{
  g_autoptr(GArray) ids = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (superseded_ids == NULL || *superseded_ids == NULL, FALSE);

  ids = g_array_new (FALSE, FALSE, sizeof (gint64));

  if (!kaged_store_begin (self, error))
    return FALSE;

  if (!supersede_after (self, session_id, message_id, by_run_id, ids, error))
    {
      kaged_store_rollback (self);
      return FALSE;
    }

  if (!kaged_store_commit (self, error))
    return FALSE;

  if (superseded_ids != NULL)
    *superseded_ids = g_steal_pointer (&ids);

  return TRUE;
}

/**
 * kaged_store_list_versions:
 * @anchor_id: an operator message
 *
 * Returns: (transfer full) (element-type KagedMessage): every agent reply
 *   written by a run anchored on @anchor_id, superseded ones included, in
 *   conversation order (the order they were written), or %NULL with
 *   @error set
 */
GPtrArray *
kaged_store_list_versions (KagedStore  *self,
                           gint64       anchor_id,
                           GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  stmt = _kaged_store_get_stmt (self, STMT_MESSAGE_VERSIONS, error);
  if (stmt == NULL || !_kaged_store_bind_int64 (self, stmt, 1, anchor_id, error))
    return NULL;

  return _kaged_store_collect_rows (self, stmt, (KagedStoreRowFunc)_kaged_store_message_from_row,
                                    g_object_unref, error);
}

/* Binds the message whose turn is ?2 and id ?3, of session ?1, superseded
 * by run ?4. */
static gboolean
bind_superseded_with (KagedStore            *self,
                      KagedStoreCachedStmt  *stmt,
                      KagedMessage          *message,
                      gint64                 turn,
                      GError               **error)
{
  return _kaged_store_bind_int64 (self, stmt, 1, kaged_message_get_session_id (message), error) &&
         _kaged_store_bind_int64 (self, stmt, 2, turn, error) &&
         _kaged_store_bind_int64 (self, stmt, 3, kaged_message_get_id (message), error) &&
         _kaged_store_bind_int64 (self, stmt, 4, kaged_message_get_superseded_by_run (message),
                                  error);
}

/**
 * kaged_store_list_superseded_with:
 * @message_id: a message, superseded or not
 * @limit: list at most this many, or 0 for all
 * @n_messages: (out) (optional): how many there are in all
 *
 * Lists the messages that left the conversation together with
 * @message_id: those after it that the same run superseded, in
 * conversation order. For an earlier version of a reply, these are the
 * turns that followed it while it was current, as they were then.
 *
 * Returns: (transfer full) (element-type KagedMessage): the messages (none
 *   for a current message), or %NULL with @error set
 */
GPtrArray *
kaged_store_list_superseded_with (KagedStore  *self,
                                  gint64       message_id,
                                  guint        limit,
                                  guint       *n_messages,
                                  GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  g_autoptr(KagedMessage) message = NULL;
  g_autoptr(GPtrArray) rows = NULL;
  gint64 turn = 0;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  if (n_messages != NULL)
    *n_messages = 0;

  message = kaged_store_get_message (self, message_id, error);
  if (message == NULL)
    return NULL;
  if (kaged_message_get_superseded_by_run (message) == 0)
    return g_ptr_array_new_with_free_func (g_object_unref);

  if (!get_order_key (self, kaged_message_get_session_id (message), message_id, &turn, error))
    return NULL;

  stmt = _kaged_store_get_stmt (self, STMT_MESSAGE_SUPERSEDED_WITH, error);
  if (stmt == NULL || !bind_superseded_with (self, stmt, message, turn, error) ||
      !_kaged_store_bind_int64 (self, stmt, 5, limit > 0 ? (gint64)limit : -1, error))
    return NULL;
  rows = _kaged_store_collect_rows (self, stmt, (KagedStoreRowFunc)_kaged_store_message_from_row,
                                    g_object_unref, error);
  if (rows == NULL)
    return NULL;

  if (n_messages != NULL && limit > 0 && rows->len == limit)
    {
      g_autoptr(KagedStoreCachedStmt) count = NULL;
      gboolean has_row = FALSE;

      count = _kaged_store_get_stmt (self, STMT_MESSAGE_COUNT_SUPERSEDED_WITH, error);
      if (count == NULL || !bind_superseded_with (self, count, message, turn, error) ||
          !_kaged_store_step_row (self, count, &has_row, error))
        return NULL;
      *n_messages = has_row ? (guint)sqlite3_column_int64 (count, 0) : rows->len;
    }
  else if (n_messages != NULL)
    *n_messages = rows->len;

  return g_steal_pointer (&rows);
}

/* The operator message an edit replaced with @message, or %NULL with
 * @error unset when it replaced none. */
static gboolean
get_edited_from (KagedStore    *self,
                 KagedMessage  *message,
                 KagedMessage **edited,
                 GError       **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  g_autoptr(GPtrArray) rows = NULL;

  *edited = NULL;
  stmt = _kaged_store_get_stmt (self, STMT_MESSAGE_EDITED_FROM, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, kaged_message_get_session_id (message), error) ||
      !_kaged_store_bind_int64 (self, stmt, 2, kaged_message_get_id (message), error))
    return FALSE;

  rows = _kaged_store_collect_rows (self, stmt, (KagedStoreRowFunc)_kaged_store_message_from_row,
                                    g_object_unref, error);
  if (rows == NULL)
    return FALSE;
  if (rows->len > 0)
    *edited = g_object_ref (g_ptr_array_index (rows, 0));

  return TRUE;
}

/**
 * kaged_store_list_edits:
 * @message_id: an operator message, superseded or not
 *
 * Lists the earlier texts of an operator message: an edit posts the new
 * text as a new message and supersedes the one edited, which may itself
 * have replaced another.
 *
 * Returns: (transfer full) (element-type KagedMessage): the operator
 *   messages @message_id replaced, oldest first (none when it was never
 *   edited), or %NULL with @error set
 */
GPtrArray *
kaged_store_list_edits (KagedStore  *self,
                        gint64       message_id,
                        GError     **error)
{
  g_autoptr(GPtrArray) edits = NULL;
  g_autoptr(KagedMessage) message = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  message = kaged_store_get_message (self, message_id, error);
  if (message == NULL)
    return NULL;

  edits = g_ptr_array_new_with_free_func (g_object_unref);
  if (kaged_message_get_role (message) != KAGED_MESSAGE_ROLE_OPERATOR)
    return g_steal_pointer (&edits);

  for (;;)
    {
      KagedMessage *edited = NULL;

      if (!get_edited_from (self, message, &edited, error))
        return NULL;
      if (edited == NULL)
        break;
      g_ptr_array_add (edits, edited);
      g_set_object (&message, edited);
    }

  /* Found from the latest back; each is earlier in conversation order
   * than the one before, so the walk ends. */
  reverse_rows (edits);

  return g_steal_pointer (&edits);
}

/**
 * kaged_store_resolve_anchor:
 * @message_id: an operator message, or a reply written by a run
 *
 * Resolves a message to the operator message a regeneration starts from:
 * an operator message is its own anchor, a reply resolves to its run's.
 *
 * Returns: (transfer full): the operator message, or %NULL with @error set
 */
KagedMessage *
kaged_store_resolve_anchor (KagedStore  *self,
                            gint64       message_id,
                            GError     **error)
{
  g_autoptr(KagedMessage) message = NULL;
  g_autoptr(KagedRun) run = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  message = kaged_store_get_message (self, message_id, error);
  if (message == NULL)
    return NULL;

  if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_OPERATOR)
    return g_steal_pointer (&message);

  if (kaged_message_get_run_id (message) == 0)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                   _("Message %lld was not written by a run"), (long long) message_id);
      return NULL;
    }

  run = kaged_store_get_run (self, kaged_message_get_run_id (message), error);
  if (run == NULL)
    return NULL;

  return kaged_store_get_message (self, kaged_run_get_anchor_id (run), error);
}

static gboolean
mark_compacted (KagedStore    *self,
                gint64         summary_id,
                const gint64  *message_ids,
                guint          n_message_ids,
                GError       **error)
{
  KagedStoreMessageInfo summary;

  if (!_kaged_store_get_message_info (self, summary_id, &summary, error))
    return FALSE;

  if (summary.role != KAGED_MESSAGE_ROLE_SUMMARY)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                   _("Message %lld is not a summary"), (long long) summary_id);
      return FALSE;
    }

  for (guint i = 0; i < n_message_ids; i++)
    {
      g_autoptr(KagedStoreCachedStmt) stmt = NULL;
      KagedStoreMessageInfo info;

      if (!_kaged_store_get_message_info (self, message_ids[i], &info, error))
        return FALSE;

      if (info.session_id != summary.session_id || message_ids[i] == summary_id)
        {
          g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                       _("Message %lld cannot be compacted into summary %lld"),
                       (long long) message_ids[i], (long long) summary_id);
          return FALSE;
        }

      stmt = _kaged_store_get_stmt (self, STMT_MESSAGE_COMPACT, error);
      if (stmt == NULL ||
          !_kaged_store_bind_int64 (self, stmt, 1, message_ids[i], error) ||
          !_kaged_store_bind_int64 (self, stmt, 2, summary_id, error) ||
          !_kaged_store_step_done (self, stmt, error))
        return FALSE;
    }

  return TRUE;
}

/**
 * kaged_store_mark_compacted:
 * @summary_id: the summary message that replaces them in the context
 * @message_ids: (array length=n_message_ids): messages of the same session
 * @n_message_ids: how many
 *
 * Records that the messages were compacted into @summary_id. The messages
 * themselves are kept unchanged.
 */
gboolean
kaged_store_mark_compacted (KagedStore    *self,
                            gint64         summary_id,
                            const gint64  *message_ids,
                            guint          n_message_ids,
                            GError       **error)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (message_ids != NULL || n_message_ids == 0, FALSE);

  if (!kaged_store_begin (self, error))
    return FALSE;

  if (!mark_compacted (self, summary_id, message_ids, n_message_ids, error))
    {
      kaged_store_rollback (self);
      return FALSE;
    }

  return kaged_store_commit (self, error);
}
