/* kaged-store-statements.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-enum-types.h"
#include "kaged-retry-class.h"
#include "kaged-store-private.h"

/* The SQL of every statement the store runs, and the helpers that bind,
 * step and read them. */

#define MESSAGE_COLUMNS \
  "m.id, m.session_id, m.role, m.content, m.created_at, m.run_id, m.status, " \
  "m.error_message, m.retryable, m.retry_class, m.retry_after_until, s.run_id, " \
  "(c.summary_id IS NOT NULL AND NOT EXISTS " \
  " (SELECT 1 FROM message_supersessions cs WHERE cs.message_id = c.summary_id)) "
#define MESSAGE_FROM \
  "FROM messages m " \
  "LEFT JOIN message_supersessions s ON s.message_id = m.id " \
  "LEFT JOIN message_compactions c ON c.message_id = m.id "
/* Conversation order (see schema_v3): a message's turn, then its id. The
 * expression is the one indexed by messages_in_order. */
#define TURN "coalesce (m.anchor_id, m.id)"
#define IN_ORDER "ORDER BY " TURN ", m.id "
#define IN_REVERSE_ORDER "ORDER BY " TURN " DESC, m.id DESC "
/* After and before the message whose turn is ?2 and id ?3. */
#define AFTER_KEY TURN " >= ?2 AND (" TURN " > ?2 OR m.id > ?3) "
#define BEFORE_KEY TURN " <= ?2 AND (" TURN " < ?2 OR m.id < ?3) "
#define IS_CURRENT \
  "NOT EXISTS (SELECT 1 FROM message_supersessions cur WHERE cur.message_id = m.id) "
#define RUN_COLUMNS \
  "id, session_id, anchor_id, status, input_tokens, output_tokens, retryable, " \
  "retry_class, retry_after_until, http_status, error_message, created_at, " \
  "started_at, finished_at "
#define SESSION_COLUMNS "id, title, created_at, updated_at "
#define RETRY_STATE_COLUMNS \
  "session_id, attempt, next_eligible_at, state, cancelled, anchor_id, updated_at, " \
  "retry_class, http_status, retry_after_until, advised_wait_ms, wait_source, seen_run_id, " \
  "retry_run_id "

const char * const _kaged_store_stmt_sql[N_STMTS] = {
  [STMT_BEGIN] = "BEGIN IMMEDIATE",
  [STMT_COMMIT] = "COMMIT",
  [STMT_ROLLBACK] = "ROLLBACK",
  [STMT_SAVEPOINT] = "SAVEPOINT kaged_nested",
  [STMT_RELEASE] = "RELEASE kaged_nested",
  [STMT_ROLLBACK_TO] = "ROLLBACK TO kaged_nested",

  [STMT_SESSION_INSERT] =
    "INSERT INTO sessions (title, created_at, updated_at) VALUES (?1, ?2, ?2)",
  [STMT_SESSION_GET] =
    "SELECT " SESSION_COLUMNS "FROM sessions WHERE id = ?1",
  [STMT_SESSION_LIST] =
    "SELECT " SESSION_COLUMNS "FROM sessions ORDER BY updated_at DESC, id DESC",
  [STMT_SESSION_RENAME] =
    "UPDATE sessions SET title = ?2 WHERE id = ?1",
  [STMT_SESSION_TOUCH] =
    "UPDATE sessions SET updated_at = max (updated_at, ?2) WHERE id = ?1",
  [STMT_SESSION_DELETE] =
    "DELETE FROM sessions WHERE id = ?1",

  [STMT_MESSAGE_INSERT] =
    "INSERT INTO messages (session_id, role, content, created_at, run_id, status, "
    "error_message, retryable, retry_class, retry_after_until, anchor_id) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
  [STMT_MESSAGE_TURN] =
    "SELECT coalesce (anchor_id, id) FROM messages WHERE id = ?1 AND session_id = ?2",
  [STMT_MESSAGE_GET] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM "WHERE m.id = ?1",
  [STMT_MESSAGE_INFO] =
    "SELECT m.session_id, m.role, EXISTS (SELECT 1 FROM message_supersessions s "
    "WHERE s.message_id = m.id) FROM messages m WHERE m.id = ?1",
  [STMT_MESSAGE_UPDATE] =
    "UPDATE messages SET content = ?2, status = ?3, error_message = ?4, retryable = ?5, "
    "retry_class = ?6, retry_after_until = ?7 WHERE id = ?1 AND role <> 'operator'",
  [STMT_MESSAGE_LIST_CURRENT_AFTER] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "WHERE m.session_id = ?1 AND " AFTER_KEY "AND s.message_id IS NULL "
    IN_ORDER "LIMIT ?4",
  [STMT_MESSAGE_LIST_ALL_AFTER] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "WHERE m.session_id = ?1 AND " AFTER_KEY
    IN_ORDER "LIMIT ?4",
  [STMT_MESSAGE_LIST_CURRENT_BEFORE] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "WHERE m.session_id = ?1 AND " BEFORE_KEY "AND s.message_id IS NULL "
    IN_REVERSE_ORDER "LIMIT ?4",
  [STMT_MESSAGE_LIST_ALL_BEFORE] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "WHERE m.session_id = ?1 AND " BEFORE_KEY
    IN_REVERSE_ORDER "LIMIT ?4",
  [STMT_MESSAGE_LIST_CURRENT_AT] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "WHERE m.session_id = ?1 AND s.message_id IS NULL "
    IN_ORDER "LIMIT ?3 OFFSET ?2",
  [STMT_MESSAGE_LIST_ALL_AT] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "WHERE m.session_id = ?1 "
    IN_ORDER "LIMIT ?3 OFFSET ?2",
  [STMT_MESSAGE_LIST_CURRENT_AT_END] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "WHERE m.session_id = ?1 AND s.message_id IS NULL "
    IN_REVERSE_ORDER "LIMIT ?3 OFFSET ?2",
  [STMT_MESSAGE_LIST_ALL_AT_END] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "WHERE m.session_id = ?1 "
    IN_REVERSE_ORDER "LIMIT ?3 OFFSET ?2",
  [STMT_MESSAGE_COUNT_CURRENT_AFTER] =
    "SELECT count (*) FROM messages m WHERE m.session_id = ?1 AND " AFTER_KEY "AND " IS_CURRENT,
  [STMT_MESSAGE_COUNT_ALL_AFTER] =
    "SELECT count (*) FROM messages m WHERE m.session_id = ?1 AND " AFTER_KEY,
  [STMT_MESSAGE_COUNT_CURRENT_BEFORE] =
    "SELECT count (*) FROM messages m WHERE m.session_id = ?1 AND " BEFORE_KEY "AND " IS_CURRENT,
  [STMT_MESSAGE_COUNT_ALL_BEFORE] =
    "SELECT count (*) FROM messages m WHERE m.session_id = ?1 AND " BEFORE_KEY,
  [STMT_MESSAGE_COUNT_CURRENT] =
    "SELECT count (*) FROM messages m WHERE m.session_id = ?1 AND NOT EXISTS "
    "(SELECT 1 FROM message_supersessions s WHERE s.message_id = m.id)",
  [STMT_MESSAGE_COUNT_ALL] =
    "SELECT count (*) FROM messages WHERE session_id = ?1",
  [STMT_MESSAGE_SUPERSEDE] =
    "INSERT INTO message_supersessions (message_id, run_id) "
    "SELECT m.id, ?4 FROM messages m WHERE m.session_id = ?1 AND " AFTER_KEY "AND " IS_CURRENT
    "RETURNING message_id",
  [STMT_MESSAGE_VERSIONS] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "JOIN runs r ON r.id = m.run_id "
    "WHERE r.anchor_id = ?1 AND m.role = 'agent' ORDER BY m.id",
  /* After the message whose turn is ?2 and id ?3, superseded by run ?4:
   * read from what the run superseded (CROSS JOIN keeps that order), not
   * from the conversation's start. */
  [STMT_MESSAGE_SUPERSEDED_WITH] =
    "SELECT " MESSAGE_COLUMNS
    "FROM message_supersessions s CROSS JOIN messages m "
    "LEFT JOIN message_compactions c ON c.message_id = m.id "
    "WHERE s.run_id = ?4 AND m.id = s.message_id AND m.session_id = ?1 AND " AFTER_KEY
    IN_ORDER "LIMIT ?5",
  [STMT_MESSAGE_COUNT_SUPERSEDED_WITH] =
    "SELECT count (*) FROM message_supersessions s CROSS JOIN messages m "
    "WHERE s.run_id = ?4 AND m.id = s.message_id AND m.session_id = ?1 AND " AFTER_KEY,
  /* The operator message an edit replaced with ?2: the first that a run
   * anchored on ?2 superseded before it. Operator messages are in
   * conversation order by id, and whatever a regeneration from ?2
   * superseded came after it, with a larger id: the index of what each
   * run superseded is read from its start, up to ?2 only. */
  [STMT_MESSAGE_EDITED_FROM] =
    "SELECT " MESSAGE_COLUMNS
    "FROM runs r CROSS JOIN message_supersessions s CROSS JOIN messages m "
    "LEFT JOIN message_compactions c ON c.message_id = m.id "
    "WHERE r.anchor_id = ?2 AND s.run_id = r.id AND s.message_id < ?2 AND "
    "m.id = s.message_id AND m.session_id = ?1 AND m.role = 'operator' "
    "ORDER BY s.message_id LIMIT 1",
  [STMT_DRAFT_GET] =
    "SELECT content FROM drafts WHERE session_id = ?1",
  /* Session 0 is a conversation not started yet. */
  [STMT_DRAFT_SET] =
    "INSERT INTO drafts (session_id, content, updated_at) "
    "SELECT ?1, ?2, ?3 WHERE ?1 = 0 OR EXISTS (SELECT 1 FROM sessions WHERE id = ?1) "
    "ON CONFLICT (session_id) DO UPDATE SET content = excluded.content, "
    "updated_at = excluded.updated_at",
  [STMT_DRAFT_DELETE] =
    "DELETE FROM drafts WHERE session_id = ?1",
  [STMT_MESSAGE_COMPACT] =
    "INSERT INTO message_compactions (message_id, summary_id) VALUES (?1, ?2) "
    "ON CONFLICT (message_id) DO UPDATE SET summary_id = excluded.summary_id",

  [STMT_RUN_INSERT] =
    "INSERT INTO runs (session_id, anchor_id, status, input_tokens, output_tokens, retryable, "
    "retry_class, retry_after_until, http_status, error_message, created_at, started_at, "
    "finished_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
  [STMT_RUN_GET] =
    "SELECT " RUN_COLUMNS "FROM runs WHERE id = ?1",
  [STMT_RUN_LATEST] =
    "SELECT " RUN_COLUMNS "FROM runs WHERE session_id = ?1 ORDER BY id DESC LIMIT 1",
  [STMT_RUN_LATEST_IN_CONVERSATION] =
    "SELECT " RUN_COLUMNS "FROM runs WHERE anchor_id = "
    "(SELECT m.id FROM messages m WHERE m.session_id = ?1 AND m.role = 'operator' AND " IS_CURRENT
    IN_REVERSE_ORDER "LIMIT 1) "
    "ORDER BY id DESC LIMIT 1",
  [STMT_RUN_UPDATE] =
    "UPDATE runs SET status = ?2, input_tokens = ?3, output_tokens = ?4, retryable = ?5, "
    "retry_class = ?6, retry_after_until = ?7, http_status = ?8, error_message = ?9, "
    "started_at = ?10, finished_at = ?11 WHERE id = ?1",
  [STMT_RUN_LIST] =
    "SELECT " RUN_COLUMNS "FROM runs WHERE session_id = ?1 AND status = ?2 ORDER BY id",
  [STMT_RUN_LIST_ALL] =
    "SELECT " RUN_COLUMNS "FROM runs WHERE status = ?1 ORDER BY id",
  [STMT_RUN_USAGE] =
    "SELECT coalesce (sum (input_tokens), 0), coalesce (sum (output_tokens), 0) FROM runs "
    "WHERE finished_at >= ?1 OR status = 'running'",
  /* Runs from before profiles name none: they went through "default". */
  [STMT_RUN_PROFILE_USAGE] =
    "SELECT coalesce (sum (input_tokens), 0), coalesce (sum (output_tokens), 0) FROM runs "
    "WHERE (finished_at >= ?1 OR status = 'running') AND coalesce (profile_id, 'default') = ?2",
  [STMT_ATTEMPT_INSERT] =
    "INSERT INTO attempts (run_id, seq, time, http_status, error, retry_class, wait_ms, "
    "wait_source) SELECT ?1, coalesce (max (seq), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7 "
    "FROM attempts WHERE run_id = ?1",
  [STMT_ATTEMPT_LIST] =
    "SELECT time, http_status, error, retry_class, wait_ms, wait_source "
    "FROM attempts WHERE run_id = ?1 ORDER BY seq",

  [STMT_RECOVER_MESSAGES] =
    "UPDATE messages SET status = 'interrupted', retryable = 0, retry_class = 'interrupted', "
    "retry_after_until = NULL WHERE role = 'agent' AND run_id IN "
    "(SELECT id FROM runs WHERE status = 'running')",
  [STMT_RECOVER_STREAMING] =
    "UPDATE messages SET status = 'interrupted', retryable = 0, retry_class = 'interrupted', "
    "retry_after_until = NULL WHERE status = 'streaming'",
  [STMT_RECOVER_RUNS] =
    "UPDATE runs SET status = 'failed', retryable = 0, retry_class = 'interrupted', "
    "retry_after_until = NULL, finished_at = ?1 WHERE status = 'running' RETURNING id",

  [STMT_RETRY_GET] =
    "SELECT " RETRY_STATE_COLUMNS "FROM retry_states WHERE session_id = ?1",
  [STMT_RETRY_SET] =
    "INSERT INTO retry_states (" RETRY_STATE_COLUMNS ") "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
    "ON CONFLICT (session_id) DO UPDATE SET attempt = excluded.attempt, "
    "next_eligible_at = excluded.next_eligible_at, state = excluded.state, "
    "cancelled = excluded.cancelled, anchor_id = excluded.anchor_id, "
    "updated_at = excluded.updated_at, retry_class = excluded.retry_class, "
    "http_status = excluded.http_status, retry_after_until = excluded.retry_after_until, "
    "advised_wait_ms = excluded.advised_wait_ms, wait_source = excluded.wait_source, "
    "seen_run_id = excluded.seen_run_id, retry_run_id = excluded.retry_run_id",
  [STMT_RETRY_CLEAR] =
    "DELETE FROM retry_states WHERE session_id = ?1",
  [STMT_RETRY_LIST] =
    "SELECT " RETRY_STATE_COLUMNS "FROM retry_states ORDER BY session_id",
  [STMT_SESSION_SETTINGS_GET] =
    "SELECT profile_id, model, system_prompt FROM sessions WHERE id = ?1",
  [STMT_SESSION_SETTINGS_SET] =
    "UPDATE sessions SET profile_id = ?2, model = ?3, system_prompt = ?4 WHERE id = ?1",
  [STMT_RUN_MODEL_GET] =
    "SELECT profile_id, profile_name, model FROM runs WHERE id = ?1",
  [STMT_RUN_MODEL_SET] =
    "UPDATE runs SET profile_id = ?2, profile_name = ?3, model = ?4 WHERE id = ?1",
  [STMT_PROFILE_MODELS_GET] =
    "SELECT models, fetched_at FROM profile_models WHERE profile_id = ?1",
  [STMT_PROFILE_MODELS_SET] =
    "INSERT INTO profile_models (profile_id, models, fetched_at) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (profile_id) DO UPDATE SET models = ?2, fetched_at = ?3",
  [STMT_PROFILE_MODELS_DELETE] =
    "DELETE FROM profile_models WHERE profile_id = ?1",
  [STMT_PROFILE_MODELS_IDS] =
    "SELECT profile_id FROM profile_models ORDER BY profile_id",
};

void
_kaged_store_cached_stmt_release (KagedStoreCachedStmt *stmt)
{
  sqlite3_reset (stmt);
  sqlite3_clear_bindings (stmt);
}

static KagedStoreError
error_code_for_rc (int rc)
{
  /* The file ends before the data it points to: it was cut short. */
  if (rc == SQLITE_IOERR_SHORT_READ)
    return KAGED_STORE_ERROR_CORRUPT;

  switch (rc & 0xff)
    {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return KAGED_STORE_ERROR_LOCKED;

    case SQLITE_NOTADB:
      return KAGED_STORE_ERROR_NOT_A_DATABASE;

    case SQLITE_CORRUPT:
      return KAGED_STORE_ERROR_CORRUPT;

    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
        return KAGED_STORE_ERROR_NOT_FOUND;
      if (rc == SQLITE_CONSTRAINT_TRIGGER)
        return KAGED_STORE_ERROR_IMMUTABLE;
      return KAGED_STORE_ERROR_INVALID;

    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
    case SQLITE_TOOBIG:
      return KAGED_STORE_ERROR_INVALID;

    default:
      return KAGED_STORE_ERROR_IO;
    }
}

/* Always returns FALSE. */
gboolean
_kaged_store_set_error_for_db (sqlite3     *db,
                               const char  *display_name,
                               int          rc,
                               GError     **error)
{
  KagedStoreError code = error_code_for_rc (rc);
  const char *detail = db != NULL ? sqlite3_errmsg (db) : sqlite3_errstr (rc);

  switch (code)
    {
    case KAGED_STORE_ERROR_LOCKED:
      g_set_error (error, KAGED_STORE_ERROR, code,
                   _("The database “%s” is in use by another program: %s"),
                   display_name, detail);
      break;

    case KAGED_STORE_ERROR_NOT_A_DATABASE:
      g_set_error (error, KAGED_STORE_ERROR, code,
                   _("The file “%s” is not a Kaged database: %s"),
                   display_name, detail);
      break;

    case KAGED_STORE_ERROR_CORRUPT:
      g_set_error (error, KAGED_STORE_ERROR, code,
                   _("The database “%s” is damaged: %s"),
                   display_name, detail);
      break;

    case KAGED_STORE_ERROR_TOO_NEW:
    case KAGED_STORE_ERROR_IO:
    case KAGED_STORE_ERROR_NOT_FOUND:
    case KAGED_STORE_ERROR_IMMUTABLE:
    case KAGED_STORE_ERROR_INVALID:
    default:
      g_set_error (error, KAGED_STORE_ERROR, code,
                   _("Could not use the database “%s”: %s"),
                   display_name, detail);
      break;
    }

  return FALSE;
}

/* Always returns FALSE, so a failure can be `return _kaged_store_set_db_error (…)`. */
gboolean
_kaged_store_set_db_error (KagedStore  *self,
                           int          rc,
                           GError     **error)
{
  return _kaged_store_set_error_for_db (self->db, self->display_name, rc, error);
}

sqlite3_stmt *
_kaged_store_get_stmt (KagedStore  *self,
                       StmtId       id,
                       GError     **error)
{
  g_assert (id < N_STMTS);
  g_assert (self->db != NULL);

  if (self->stmts[id] == NULL)
    {
      int rc = sqlite3_prepare_v3 (self->db, _kaged_store_stmt_sql[id], -1,
                                   SQLITE_PREPARE_PERSISTENT, &self->stmts[id], NULL);

      if (rc != SQLITE_OK)
        {
          _kaged_store_set_db_error (self, rc, error);
          g_clear_pointer (&self->stmts[id], sqlite3_finalize);
          return NULL;
        }
    }

  return self->stmts[id];
}

static gboolean
check_bind (KagedStore  *self,
            int          rc,
            GError     **error)
{
  if (rc != SQLITE_OK)
    return _kaged_store_set_db_error (self, rc, error);
  return TRUE;
}

gboolean
_kaged_store_bind_int64 (KagedStore    *self,
                         sqlite3_stmt  *stmt,
                         int            idx,
                         gint64         value,
                         GError       **error)
{
  return check_bind (self, sqlite3_bind_int64 (stmt, idx, value), error);
}

/* 0 is stored as NULL: no run, no time, no status. */
gboolean
_kaged_store_bind_int64_or_null (KagedStore    *self,
                                 sqlite3_stmt  *stmt,
                                 int            idx,
                                 gint64         value,
                                 GError       **error)
{
  if (value == 0)
    return check_bind (self, sqlite3_bind_null (stmt, idx), error);
  return check_bind (self, sqlite3_bind_int64 (stmt, idx, value), error);
}

/* The text must outlive the step: statements are reset before returning. */
gboolean
_kaged_store_bind_text (KagedStore    *self,
                        sqlite3_stmt  *stmt,
                        int            idx,
                        const char    *value,
                        GError       **error)
{
  if (value == NULL)
    return check_bind (self, sqlite3_bind_null (stmt, idx), error);
  return check_bind (self, sqlite3_bind_text (stmt, idx, value, -1, SQLITE_STATIC), error);
}

/* Steps a statement that returns no rows. */
gboolean
_kaged_store_step_done (KagedStore    *self,
                        sqlite3_stmt  *stmt,
                        GError       **error)
{
  int rc = sqlite3_step (stmt);

  if (rc != SQLITE_DONE)
    return _kaged_store_set_db_error (self, rc, error);
  return TRUE;
}

/* Steps a statement to its next row: TRUE with *has_row set, or FALSE on error. */
gboolean
_kaged_store_step_row (KagedStore    *self,
                       sqlite3_stmt  *stmt,
                       gboolean      *has_row,
                       GError       **error)
{
  int rc = sqlite3_step (stmt);

  *has_row = rc == SQLITE_ROW;
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return _kaged_store_set_db_error (self, rc, error);
  return TRUE;
}

gboolean
_kaged_store_run_stmt (KagedStore  *self,
                       StmtId       id,
                       GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = _kaged_store_get_stmt (self, id, error);

  if (stmt == NULL)
    return FALSE;
  return _kaged_store_step_done (self, stmt, error);
}

gint64
_kaged_store_now_ms (KagedStore *self)
{
  return kaged_clock_get_wall_ms (self->clock);
}

const char *
_kaged_store_column_text (sqlite3_stmt *stmt,
                          int           col)
{
  return (const char *)sqlite3_column_text (stmt, col);
}

int
_kaged_store_enum_from_column (sqlite3_stmt *stmt,
                               int           col,
                               GType         enum_type,
                               int           fallback)
{
  const char *nick = _kaged_store_column_text (stmt, col);
  int value = fallback;

  if (nick != NULL && !kaged_enum_from_nick (enum_type, nick, &value))
    g_debug ("Unknown %s “%s” in the database", g_type_name (enum_type), nick);

  return value;
}

KagedRetryClass
_kaged_store_retry_class_from_column (sqlite3_stmt *stmt,
                                      int           col)
{
  const char *name = _kaged_store_column_text (stmt, col);
  KagedRetryClass retry_class = KAGED_RETRY_CLASS_NONE;

  if (name != NULL && !kaged_retry_class_from_string (name, &retry_class))
    g_debug ("Unknown retry class “%s” in the database", name);

  return retry_class;
}

const char *
_kaged_store_enum_nick (GType enum_type,
                        int   value)
{
  return kaged_enum_to_nick (enum_type, value);
}

KagedSession *
_kaged_store_session_from_row (sqlite3_stmt *stmt)
{
  KagedSession *session = kaged_session_new ();

  kaged_session_set_id (session, sqlite3_column_int64 (stmt, 0));
  kaged_session_set_title (session, _kaged_store_column_text (stmt, 1));
  kaged_session_set_created_at (session, sqlite3_column_int64 (stmt, 2));
  kaged_session_set_updated_at (session, sqlite3_column_int64 (stmt, 3));

  return session;
}

KagedMessage *
_kaged_store_message_from_row (sqlite3_stmt *stmt)
{
  KagedMessage *message = kaged_message_new ();

  kaged_message_set_id (message, sqlite3_column_int64 (stmt, 0));
  kaged_message_set_session_id (message, sqlite3_column_int64 (stmt, 1));
  kaged_message_set_role (message,
                          _kaged_store_enum_from_column (stmt, 2, KAGED_TYPE_MESSAGE_ROLE,
                                                         KAGED_MESSAGE_ROLE_AGENT));
  kaged_message_set_content (message, _kaged_store_column_text (stmt, 3));
  kaged_message_set_created_at (message, sqlite3_column_int64 (stmt, 4));
  kaged_message_set_run_id (message, sqlite3_column_int64 (stmt, 5));
  kaged_message_set_status (message,
                            _kaged_store_enum_from_column (stmt, 6, KAGED_TYPE_MESSAGE_STATUS,
                                                           KAGED_MESSAGE_STATUS_NONE));
  kaged_message_set_error_message (message, _kaged_store_column_text (stmt, 7));
  kaged_message_set_retryable (message, sqlite3_column_int (stmt, 8) != 0);
  kaged_message_set_retry_class (message, _kaged_store_retry_class_from_column (stmt, 9));
  kaged_message_set_retry_after_until (message, sqlite3_column_int64 (stmt, 10));
  kaged_message_set_superseded_by_run (message, sqlite3_column_int64 (stmt, 11));
  kaged_message_set_compacted (message, sqlite3_column_int (stmt, 12) != 0);

  return message;
}

KagedRun *
_kaged_store_run_from_row (sqlite3_stmt *stmt)
{
  KagedRun *run = kaged_run_new ();

  kaged_run_set_id (run, sqlite3_column_int64 (stmt, 0));
  kaged_run_set_session_id (run, sqlite3_column_int64 (stmt, 1));
  kaged_run_set_anchor_id (run, sqlite3_column_int64 (stmt, 2));
  kaged_run_set_status (run, _kaged_store_enum_from_column (stmt, 3, KAGED_TYPE_RUN_STATUS,
                                                            KAGED_RUN_STATUS_FAILED));
  kaged_run_set_input_tokens (run, sqlite3_column_int64 (stmt, 4));
  kaged_run_set_output_tokens (run, sqlite3_column_int64 (stmt, 5));
  kaged_run_set_retryable (run, sqlite3_column_int (stmt, 6) != 0);
  kaged_run_set_retry_class (run, _kaged_store_retry_class_from_column (stmt, 7));
  kaged_run_set_retry_after_until (run, sqlite3_column_int64 (stmt, 8));
  kaged_run_set_http_status (run, (guint)sqlite3_column_int (stmt, 9));
  kaged_run_set_error_message (run, _kaged_store_column_text (stmt, 10));
  kaged_run_set_created_at (run, sqlite3_column_int64 (stmt, 11));
  kaged_run_set_started_at (run, sqlite3_column_int64 (stmt, 12));
  kaged_run_set_finished_at (run, sqlite3_column_int64 (stmt, 13));

  return run;
}

/* Collects every row of a bound statement into an array of objects. */
GPtrArray *
_kaged_store_collect_rows (KagedStore         *self,
                           sqlite3_stmt       *stmt,
                           KagedStoreRowFunc   row_func,
                           GDestroyNotify      free_func,
                           GError            **error)
{
  g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func (free_func);
  gboolean has_row = FALSE;

  for (;;)
    {
      if (!_kaged_store_step_row (self, stmt, &has_row, error))
        return NULL;
      if (!has_row)
        break;
      g_ptr_array_add (rows, row_func (stmt));
    }

  return g_steal_pointer (&rows);
}

/* Always returns FALSE. */
gboolean
_kaged_store_set_not_found (GError            **error,
                            KagedStoreMissing   what,
                            gint64              id)
{
  switch (what)
    {
    case MISSING_SESSION:
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND,
                   _("There is no session %lld"), (long long) id);
      break;

    case MISSING_MESSAGE:
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND,
                   _("There is no message %lld"), (long long) id);
      break;

    case MISSING_RUN:
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND,
                   _("There is no run %lld"), (long long) id);
      break;

    case MISSING_SESSION_RUNS:
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND,
                   _("Session %lld has no runs"), (long long) id);
      break;

    default:
      g_assert_not_reached ();
    }

  return FALSE;
}

/* Fetches the one row of a bound statement, or fails with NOT_FOUND. */
gpointer
_kaged_store_fetch_one (KagedStore         *self,
                        sqlite3_stmt       *stmt,
                        KagedStoreRowFunc   row_func,
                        KagedStoreMissing   what,
                        gint64              id,
                        GError            **error)
{
  gboolean has_row = FALSE;

  if (!_kaged_store_step_row (self, stmt, &has_row, error))
    return NULL;

  if (!has_row)
    {
      _kaged_store_set_not_found (error, what, id);
      return NULL;
    }

  return row_func (stmt);
}

/* After an UPDATE or DELETE of one row by id: fails with NOT_FOUND when
 * there was no such row. */
gboolean
_kaged_store_expect_changed (KagedStore         *self,
                             KagedStoreMissing   what,
                             gint64              id,
                             GError            **error)
{
  if (sqlite3_changes (self->db) == 0)
    return _kaged_store_set_not_found (error, what, id);
  return TRUE;
}

