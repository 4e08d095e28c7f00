/* kaged-store.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include "kaged-enum-types.h"
#include "kaged-retry-class.h"
#include "kaged-store.h"
#include "kaged-store-private.h"

/**
 * KagedStore:
 *
 * The SQLite database of sessions, messages, runs and their tier-1 attempt
 * logs. Use it from one thread.
 *
 * Operator messages are immutable and messages go only with their whole
 * session: both are enforced by triggers in the database itself. Supersession
 * and compaction are therefore recorded beside the messages, in
 * `message_supersessions` and `message_compactions`, never by rewriting a
 * message row.
 */

/* 'KAGD': marks the file as ours in the SQLite header. */
#define KAGED_APPLICATION_ID 0x4B414744

/* Waiting for another process's lock: short while opening, so a held
 * database is reported at once; a few seconds afterwards. */
#define OPEN_BUSY_TIMEOUT_MS 1000
#define BUSY_TIMEOUT_MS      3000

/*
 * Schema history. Each step takes the schema from the version before it to
 * its own; a database is brought up to date by running every step after its
 * `user_version`, each in its own transaction. Never edit a step once
 * released: add a new one, and keep a fixture of the old schema in
 * tests/fixtures/store/.
 */

/* Version 1: sessions, messages, runs, attempts and supersession. */
static const char schema_v1[] =
  "PRAGMA application_id = 1262569284;\n"

  "CREATE TABLE sessions (\n"
  "  id         INTEGER PRIMARY KEY AUTOINCREMENT,\n"
  "  title      TEXT NOT NULL DEFAULT '',\n"
  "  created_at INTEGER NOT NULL,\n"
  "  updated_at INTEGER NOT NULL\n"
  ");\n"

  "CREATE TABLE messages (\n"
  "  id                INTEGER PRIMARY KEY AUTOINCREMENT,\n"
  "  session_id        INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,\n"
  "  role              TEXT NOT NULL CHECK (role IN ('operator', 'agent', 'summary')),\n"
  "  content           TEXT NOT NULL DEFAULT '',\n"
  "  created_at        INTEGER NOT NULL,\n"
  "  run_id            INTEGER REFERENCES runs (id),\n"
  "  status            TEXT NOT NULL DEFAULT 'none' CHECK (status IN ('none', 'streaming', "
  "'complete', 'failed', 'cancelled', 'interrupted')),\n"
  "  error_message     TEXT,\n"
  "  retryable         INTEGER NOT NULL DEFAULT 0 CHECK (retryable IN (0, 1)),\n"
  "  retry_class       TEXT,\n"
  "  retry_after_until INTEGER\n"
  ");\n"
  "CREATE INDEX messages_by_session ON messages (session_id);\n"
  "CREATE INDEX messages_by_run ON messages (run_id) WHERE run_id IS NOT NULL;\n"
  "CREATE INDEX messages_streaming ON messages (status) WHERE status = 'streaming';\n"

  "CREATE TABLE runs (\n"
  "  id                INTEGER PRIMARY KEY AUTOINCREMENT,\n"
  "  session_id        INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,\n"
  "  anchor_id         INTEGER NOT NULL REFERENCES messages (id),\n"
  "  status            TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', "
  "'succeeded', 'failed', 'cancelled')),\n"
  "  input_tokens      INTEGER NOT NULL DEFAULT 0,\n"
  "  output_tokens     INTEGER NOT NULL DEFAULT 0,\n"
  "  retryable         INTEGER NOT NULL DEFAULT 0 CHECK (retryable IN (0, 1)),\n"
  "  retry_class       TEXT,\n"
  "  retry_after_until INTEGER,\n"
  "  http_status       INTEGER,\n"
  "  error_message     TEXT,\n"
  "  created_at        INTEGER NOT NULL,\n"
  "  started_at        INTEGER,\n"
  "  finished_at       INTEGER\n"
  ");\n"
  "CREATE INDEX runs_by_session ON runs (session_id, status);\n"
  "CREATE INDEX runs_by_anchor ON runs (anchor_id);\n"
  "CREATE INDEX runs_by_status ON runs (status);\n"

  "CREATE TABLE attempts (\n"
  "  run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,\n"
  "  seq         INTEGER NOT NULL,\n"
  "  time        INTEGER NOT NULL,\n"
  "  http_status INTEGER,\n"
  "  error       TEXT,\n"
  "  retry_class TEXT,\n"
  "  wait_ms     INTEGER NOT NULL DEFAULT 0,\n"
  "  wait_source TEXT,\n"
  "  PRIMARY KEY (run_id, seq)\n"
  ") WITHOUT ROWID;\n"

  /* Rows are written only for existing messages and removed with them by
   * a trigger: a foreign key here would cost a read of every superseded
   * message row. run_id names a run of the same session. */
  "CREATE TABLE message_supersessions (\n"
  "  message_id INTEGER PRIMARY KEY,\n"
  "  run_id     INTEGER NOT NULL\n"
  ");\n"
  "CREATE TRIGGER message_supersessions_go_with_message AFTER DELETE ON messages\n"
  "BEGIN\n"
  "  DELETE FROM message_supersessions WHERE message_id = OLD.id;\n"
  "END;\n"

  "CREATE TRIGGER operator_messages_immutable BEFORE UPDATE ON messages\n"
  "  WHEN OLD.role = 'operator' OR NEW.role = 'operator'\n"
  "BEGIN\n"
  "  SELECT RAISE (ABORT, 'operator messages are immutable');\n"
  "END;\n"

  /* The cascade from a deleted session runs after the session row is gone. */
  "CREATE TRIGGER messages_go_with_session BEFORE DELETE ON messages\n"
  "  WHEN EXISTS (SELECT 1 FROM sessions WHERE id = OLD.session_id)\n"
  "BEGIN\n"
  "  SELECT RAISE (ABORT, 'messages are deleted only with their session');\n"
  "END;\n";

/* Version 2: compaction marks and the Tier 2 scheduler's state. */
static const char schema_v2[] =
  "CREATE TABLE message_compactions (\n"
  "  message_id INTEGER PRIMARY KEY,\n"
  "  summary_id INTEGER NOT NULL\n"
  ");\n"
  "CREATE TRIGGER message_compactions_go_with_message AFTER DELETE ON messages\n"
  "BEGIN\n"
  "  DELETE FROM message_compactions WHERE message_id = OLD.id;\n"
  "END;\n"

  "CREATE TABLE retry_states (\n"
  "  session_id       INTEGER PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,\n"
  "  attempt          INTEGER NOT NULL DEFAULT 0,\n"
  "  next_eligible_at INTEGER,\n"
  "  state            TEXT NOT NULL DEFAULT 'idle',\n"
  "  cancelled        INTEGER NOT NULL DEFAULT 0 CHECK (cancelled IN (0, 1)),\n"
  "  anchor_id        INTEGER,\n"
  "  updated_at       INTEGER NOT NULL\n"
  ");\n"

  /* Spend limits sum the usage of the runs finished in a period. */
  "CREATE INDEX runs_by_finish ON runs (finished_at) WHERE finished_at IS NOT NULL;\n";

G_STATIC_ASSERT (KAGED_STORE_SCHEMA_VERSION == 2);

#define MESSAGE_COLUMNS \
  "m.id, m.session_id, m.role, m.content, m.created_at, m.run_id, m.status, " \
  "m.error_message, m.retryable, m.retry_class, m.retry_after_until, s.run_id, " \
  "(c.summary_id IS NOT NULL AND NOT EXISTS " \
  " (SELECT 1 FROM message_supersessions cs WHERE cs.message_id = c.summary_id)) "
#define MESSAGE_FROM \
  "FROM messages m " \
  "LEFT JOIN message_supersessions s ON s.message_id = m.id " \
  "LEFT JOIN message_compactions c ON c.message_id = m.id "
#define RUN_COLUMNS \
  "id, session_id, anchor_id, status, input_tokens, output_tokens, retryable, " \
  "retry_class, retry_after_until, http_status, error_message, created_at, " \
  "started_at, finished_at "
#define SESSION_COLUMNS "id, title, created_at, updated_at "
#define RETRY_STATE_COLUMNS \
  "session_id, attempt, next_eligible_at, state, cancelled, anchor_id, updated_at "

typedef enum
{
  STMT_BEGIN,
  STMT_COMMIT,
  STMT_ROLLBACK,
  STMT_SAVEPOINT,
  STMT_RELEASE,
  STMT_ROLLBACK_TO,

  STMT_SESSION_INSERT,
  STMT_SESSION_GET,
  STMT_SESSION_LIST,
  STMT_SESSION_RENAME,
  STMT_SESSION_TOUCH,
  STMT_SESSION_DELETE,

  STMT_MESSAGE_INSERT,
  STMT_MESSAGE_GET,
  STMT_MESSAGE_INFO,
  STMT_MESSAGE_UPDATE,
  STMT_MESSAGE_LIST_CURRENT_AFTER,
  STMT_MESSAGE_LIST_ALL_AFTER,
  STMT_MESSAGE_LIST_CURRENT_BEFORE,
  STMT_MESSAGE_LIST_ALL_BEFORE,
  STMT_MESSAGE_COUNT_CURRENT,
  STMT_MESSAGE_COUNT_ALL,
  STMT_MESSAGE_SUPERSEDE,
  STMT_MESSAGE_VERSIONS,
  STMT_MESSAGE_COMPACT,

  STMT_RUN_INSERT,
  STMT_RUN_GET,
  STMT_RUN_LATEST,
  STMT_RUN_UPDATE,
  STMT_RUN_LIST,
  STMT_RUN_LIST_ALL,
  STMT_RUN_USAGE,
  STMT_ATTEMPT_INSERT,
  STMT_ATTEMPT_LIST,

  STMT_RECOVER_MESSAGES,
  STMT_RECOVER_STREAMING,
  STMT_RECOVER_RUNS,

  STMT_RETRY_GET,
  STMT_RETRY_SET,
  STMT_RETRY_CLEAR,
  STMT_RETRY_LIST,

  N_STMTS
} StmtId;

static const char * const stmt_sql[N_STMTS] = {
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
    "UPDATE sessions SET title = ?2, updated_at = max (updated_at, ?3) WHERE id = ?1",
  [STMT_SESSION_TOUCH] =
    "UPDATE sessions SET updated_at = max (updated_at, ?2) WHERE id = ?1",
  [STMT_SESSION_DELETE] =
    "DELETE FROM sessions WHERE id = ?1",

  [STMT_MESSAGE_INSERT] =
    "INSERT INTO messages (session_id, role, content, created_at, run_id, status, "
    "error_message, retryable, retry_class, retry_after_until) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
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
    "WHERE m.session_id = ?1 AND m.id > ?2 AND s.message_id IS NULL "
    "ORDER BY m.id LIMIT ?3",
  [STMT_MESSAGE_LIST_ALL_AFTER] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "WHERE m.session_id = ?1 AND m.id > ?2 "
    "ORDER BY m.id LIMIT ?3",
  [STMT_MESSAGE_LIST_CURRENT_BEFORE] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "WHERE m.session_id = ?1 AND m.id < ?2 AND s.message_id IS NULL "
    "ORDER BY m.id DESC LIMIT ?3",
  [STMT_MESSAGE_LIST_ALL_BEFORE] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "WHERE m.session_id = ?1 AND m.id < ?2 "
    "ORDER BY m.id DESC LIMIT ?3",
  [STMT_MESSAGE_COUNT_CURRENT] =
    "SELECT count (*) FROM messages m WHERE m.session_id = ?1 AND NOT EXISTS "
    "(SELECT 1 FROM message_supersessions s WHERE s.message_id = m.id)",
  [STMT_MESSAGE_COUNT_ALL] =
    "SELECT count (*) FROM messages WHERE session_id = ?1",
  [STMT_MESSAGE_SUPERSEDE] =
    "INSERT INTO message_supersessions (message_id, run_id) "
    "SELECT m.id, ?3 FROM messages m WHERE m.session_id = ?1 AND m.id > ?2 AND NOT EXISTS "
    "(SELECT 1 FROM message_supersessions s WHERE s.message_id = m.id) "
    "RETURNING message_id",
  [STMT_MESSAGE_VERSIONS] =
    "SELECT " MESSAGE_COLUMNS MESSAGE_FROM
    "JOIN runs r ON r.id = m.run_id "
    "WHERE r.anchor_id = ?1 AND m.role = 'agent' ORDER BY m.id",
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
    "INSERT INTO retry_states (" RETRY_STATE_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
    "ON CONFLICT (session_id) DO UPDATE SET attempt = excluded.attempt, "
    "next_eligible_at = excluded.next_eligible_at, state = excluded.state, "
    "cancelled = excluded.cancelled, anchor_id = excluded.anchor_id, "
    "updated_at = excluded.updated_at",
  [STMT_RETRY_CLEAR] =
    "DELETE FROM retry_states WHERE session_id = ?1",
  [STMT_RETRY_LIST] =
    "SELECT " RETRY_STATE_COLUMNS "FROM retry_states ORDER BY session_id",
};

/*
 * Checkpoints, which copy the WAL back into the database file and sync it,
 * run in a thread of the store's on a connection of its own. SQLite's own
 * automatic checkpoint would run inside whichever commit crosses the
 * threshold, on the thread that writes, and hold it up for as long as the
 * disk takes. A passive checkpoint never blocks a writer.
 */
#define CHECKPOINT_FRAMES       1000
/* The WAL starts over at the first write after everything in it was
 * copied, which a writer that never pauses leaves no room for. From 16
 * times that (64 MiB) on, the thread is asked again once the writing
 * thread's main loop has nothing else to do; from 64 times (256 MiB) on,
 * the thread is no longer asked and every commit tries to copy the rest
 * itself, as SQLite would (giving way while the thread is still at it). */
#define CHECKPOINT_IDLE_FACTOR  16
#define CHECKPOINT_FORCE_FACTOR 64
/* The WAL file is cut back to this size (4 MiB) when it starts over. */
#define WAL_SIZE_LIMIT         4194304

typedef struct
{
  GMutex   lock;
  GCond    cond;
  GThread *thread;
  sqlite3 *db;
  char    *display_name;
  guint64  n_done;
  int      frames;        /* CHECKPOINT_FRAMES, but in tests */
  int      n_copied;      /* frames of the WAL in the file already */
  guint    wanted : 1;
  guint    quit : 1;
} Checkpointer;

struct _KagedStore
{
  GObject parent_instance;

  char *path;
  char *display_name;
  KagedClock *clock;

  sqlite3 *db;
  sqlite3_stmt *stmts[N_STMTS];
  guint depth;
  int owner_fd;
  guint64 n_commits;
  Checkpointer *checkpointer;
  GMainContext *context;          /* of the thread that opened the store */
  GSource *idle_checkpoint;

  GPtrArray *interrupted_runs;
  GPtrArray *queued_runs;
};

static void kaged_store_initable_iface_init (GInitableIface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedStore, kaged_store, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_INITABLE,
                                                      kaged_store_initable_iface_init))

G_DEFINE_BOXED_TYPE (KagedStoreRetryState, kaged_store_retry_state,
                     kaged_store_retry_state_copy, kaged_store_retry_state_free)

G_DEFINE_QUARK (kaged-store-error-quark, kaged_store_error)

enum {
  PROP_0,
  PROP_PATH,
  PROP_CLOCK,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

/*
 * A cached statement, reset and unbound when the variable holding it goes
 * out of scope: `g_autoptr(CachedStmt) stmt = get_stmt (…)`.
 */
typedef sqlite3_stmt CachedStmt;

static void
cached_stmt_release (CachedStmt *stmt)
{
  sqlite3_reset (stmt);
  sqlite3_clear_bindings (stmt);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (CachedStmt, cached_stmt_release)

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
static gboolean
set_error_for_db (sqlite3      *db,
                  const char   *display_name,
                  int           rc,
                  GError      **error)
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

/* Always returns FALSE, so a failure can be `return set_db_error (…)`. */
static gboolean
set_db_error (KagedStore  *self,
              int          rc,
              GError     **error)
{
  return set_error_for_db (self->db, self->display_name, rc, error);
}

static sqlite3_stmt *
get_stmt (KagedStore  *self,
          StmtId       id,
          GError     **error)
{
  g_assert (id < N_STMTS);
  g_assert (self->db != NULL);

  if (self->stmts[id] == NULL)
    {
      int rc = sqlite3_prepare_v3 (self->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                   &self->stmts[id], NULL);

      if (rc != SQLITE_OK)
        {
          set_db_error (self, rc, error);
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
    return set_db_error (self, rc, error);
  return TRUE;
}

static gboolean
bind_int64 (KagedStore    *self,
            sqlite3_stmt  *stmt,
            int            idx,
            gint64         value,
            GError       **error)
{
  return check_bind (self, sqlite3_bind_int64 (stmt, idx, value), error);
}

/* 0 is stored as NULL: no run, no time, no status. */
static gboolean
bind_int64_or_null (KagedStore    *self,
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
static gboolean
bind_text (KagedStore    *self,
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
static gboolean
step_done (KagedStore    *self,
           sqlite3_stmt  *stmt,
           GError       **error)
{
  int rc = sqlite3_step (stmt);

  if (rc != SQLITE_DONE)
    return set_db_error (self, rc, error);
  return TRUE;
}

/* Steps a statement to its next row: TRUE with *has_row set, or FALSE on error. */
static gboolean
step_row (KagedStore    *self,
          sqlite3_stmt  *stmt,
          gboolean      *has_row,
          GError       **error)
{
  int rc = sqlite3_step (stmt);

  *has_row = rc == SQLITE_ROW;
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return set_db_error (self, rc, error);
  return TRUE;
}

static gboolean
run_stmt (KagedStore  *self,
          StmtId       id,
          GError     **error)
{
  g_autoptr(CachedStmt) stmt = get_stmt (self, id, error);

  if (stmt == NULL)
    return FALSE;
  return step_done (self, stmt, error);
}

static gint64
now_ms (KagedStore *self)
{
  return kaged_clock_get_wall_ms (self->clock);
}

static const char *
column_text (sqlite3_stmt *stmt,
             int           col)
{
  return (const char *)sqlite3_column_text (stmt, col);
}

static int
enum_from_column (sqlite3_stmt *stmt,
                  int           col,
                  GType         enum_type,
                  int           fallback)
{
  const char *nick = column_text (stmt, col);
  int value = fallback;

  if (nick != NULL && !kaged_enum_from_nick (enum_type, nick, &value))
    g_debug ("Unknown %s “%s” in the database", g_type_name (enum_type), nick);

  return value;
}

static KagedRetryClass
retry_class_from_column (sqlite3_stmt *stmt,
                         int           col)
{
  const char *name = column_text (stmt, col);
  KagedRetryClass retry_class = KAGED_RETRY_CLASS_NONE;

  if (name != NULL && !kaged_retry_class_from_string (name, &retry_class))
    g_debug ("Unknown retry class “%s” in the database", name);

  return retry_class;
}

static const char *
enum_nick (GType enum_type,
           int   value)
{
  return kaged_enum_to_nick (enum_type, value);
}

static KagedSession *
session_from_row (sqlite3_stmt *stmt)
{
  KagedSession *session = kaged_session_new ();

  kaged_session_set_id (session, sqlite3_column_int64 (stmt, 0));
  kaged_session_set_title (session, column_text (stmt, 1));
  kaged_session_set_created_at (session, sqlite3_column_int64 (stmt, 2));
  kaged_session_set_updated_at (session, sqlite3_column_int64 (stmt, 3));

  return session;
}

static KagedMessage *
message_from_row (sqlite3_stmt *stmt)
{
  KagedMessage *message = kaged_message_new ();

  kaged_message_set_id (message, sqlite3_column_int64 (stmt, 0));
  kaged_message_set_session_id (message, sqlite3_column_int64 (stmt, 1));
  kaged_message_set_role (message, enum_from_column (stmt, 2, KAGED_TYPE_MESSAGE_ROLE,
                                                     KAGED_MESSAGE_ROLE_AGENT));
  kaged_message_set_content (message, column_text (stmt, 3));
  kaged_message_set_created_at (message, sqlite3_column_int64 (stmt, 4));
  kaged_message_set_run_id (message, sqlite3_column_int64 (stmt, 5));
  kaged_message_set_status (message, enum_from_column (stmt, 6, KAGED_TYPE_MESSAGE_STATUS,
                                                       KAGED_MESSAGE_STATUS_NONE));
  kaged_message_set_error_message (message, column_text (stmt, 7));
  kaged_message_set_retryable (message, sqlite3_column_int (stmt, 8) != 0);
  kaged_message_set_retry_class (message, retry_class_from_column (stmt, 9));
  kaged_message_set_retry_after_until (message, sqlite3_column_int64 (stmt, 10));
  kaged_message_set_superseded_by_run (message, sqlite3_column_int64 (stmt, 11));
  kaged_message_set_compacted (message, sqlite3_column_int (stmt, 12) != 0);

  return message;
}

static KagedRun *
run_from_row (sqlite3_stmt *stmt)
{
  KagedRun *run = kaged_run_new ();

  kaged_run_set_id (run, sqlite3_column_int64 (stmt, 0));
  kaged_run_set_session_id (run, sqlite3_column_int64 (stmt, 1));
  kaged_run_set_anchor_id (run, sqlite3_column_int64 (stmt, 2));
  kaged_run_set_status (run, enum_from_column (stmt, 3, KAGED_TYPE_RUN_STATUS,
                                               KAGED_RUN_STATUS_FAILED));
  kaged_run_set_input_tokens (run, sqlite3_column_int64 (stmt, 4));
  kaged_run_set_output_tokens (run, sqlite3_column_int64 (stmt, 5));
  kaged_run_set_retryable (run, sqlite3_column_int (stmt, 6) != 0);
  kaged_run_set_retry_class (run, retry_class_from_column (stmt, 7));
  kaged_run_set_retry_after_until (run, sqlite3_column_int64 (stmt, 8));
  kaged_run_set_http_status (run, (guint)sqlite3_column_int (stmt, 9));
  kaged_run_set_error_message (run, column_text (stmt, 10));
  kaged_run_set_created_at (run, sqlite3_column_int64 (stmt, 11));
  kaged_run_set_started_at (run, sqlite3_column_int64 (stmt, 12));
  kaged_run_set_finished_at (run, sqlite3_column_int64 (stmt, 13));

  return run;
}

static KagedStoreRetryState *
retry_state_from_row (sqlite3_stmt *stmt)
{
  KagedStoreRetryState *state = kaged_store_retry_state_new (sqlite3_column_int64 (stmt, 0));

  state->attempt = (guint)sqlite3_column_int64 (stmt, 1);
  state->next_eligible_at = sqlite3_column_int64 (stmt, 2);
  g_free (state->state);
  state->state = g_strdup (column_text (stmt, 3));
  state->cancelled = sqlite3_column_int (stmt, 4) != 0;
  state->anchor_id = sqlite3_column_int64 (stmt, 5);
  state->updated_at = sqlite3_column_int64 (stmt, 6);

  return state;
}

static gboolean
load_attempts (KagedStore  *self,
               KagedRun    *run,
               GError     **error)
{
  g_autoptr(CachedStmt) stmt = get_stmt (self, STMT_ATTEMPT_LIST, error);
  gboolean has_row = FALSE;

  if (stmt == NULL || !bind_int64 (self, stmt, 1, kaged_run_get_id (run), error))
    return FALSE;

  kaged_run_clear_attempts (run);

  for (;;)
    {
      KagedAttempt attempt = { 0 };

      if (!step_row (self, stmt, &has_row, error))
        return FALSE;
      if (!has_row)
        break;

      attempt.time = sqlite3_column_int64 (stmt, 0);
      attempt.http_status = (guint)sqlite3_column_int (stmt, 1);
      attempt.error = (char *)column_text (stmt, 2);
      attempt.retry_class = retry_class_from_column (stmt, 3);
      attempt.wait_ms = sqlite3_column_int64 (stmt, 4);
      attempt.wait_source = (char *)column_text (stmt, 5);

      /* Copies the strings. */
      kaged_run_add_attempt (run, &attempt);
    }

  return TRUE;
}

/* Collects every row of a bound statement into an array of objects. */
typedef gpointer (*RowFunc) (sqlite3_stmt *stmt);

static GPtrArray *
collect_rows (KagedStore     *self,
              sqlite3_stmt   *stmt,
              RowFunc         row_func,
              GDestroyNotify  free_func,
              GError        **error)
{
  g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func (free_func);
  gboolean has_row = FALSE;

  for (;;)
    {
      if (!step_row (self, stmt, &has_row, error))
        return NULL;
      if (!has_row)
        break;
      g_ptr_array_add (rows, row_func (stmt));
    }

  return g_steal_pointer (&rows);
}

typedef enum
{
  MISSING_SESSION,
  MISSING_MESSAGE,
  MISSING_RUN,
  MISSING_SESSION_RUNS,
} Missing;

/* Always returns FALSE. */
static gboolean
set_not_found (GError  **error,
               Missing   what,
               gint64    id)
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
static gpointer
fetch_one (KagedStore    *self,
           sqlite3_stmt  *stmt,
           RowFunc        row_func,
           Missing        what,
           gint64         id,
           GError       **error)
{
  gboolean has_row = FALSE;

  if (!step_row (self, stmt, &has_row, error))
    return NULL;

  if (!has_row)
    {
      set_not_found (error, what, id);
      return NULL;
    }

  return row_func (stmt);
}

/* After an UPDATE or DELETE of one row by id: fails with NOT_FOUND when
 * there was no such row. */
static gboolean
expect_changed (KagedStore  *self,
                Missing      what,
                gint64       id,
                GError     **error)
{
  if (sqlite3_changes (self->db) == 0)
    return set_not_found (error, what, id);
  return TRUE;
}

static int
check_progress (void *user_data)
{
  return g_cancellable_is_cancelled (user_data) ? 1 : 0;
}

/* --- Opening ----------------------------------------------------------- */

static gboolean
exec_sql (KagedStore  *self,
          const char  *sql,
          GError     **error)
{
  char *errmsg = NULL;
  int rc = sqlite3_exec (self->db, sql, NULL, NULL, &errmsg);

  sqlite3_free (errmsg);
  if (rc != SQLITE_OK)
    return set_db_error (self, rc, error);
  return TRUE;
}

static gboolean
query_int (KagedStore  *self,
           const char  *sql,
           gint64      *value,
           GError     **error)
{
  sqlite3_stmt *stmt = NULL;
  int rc;

  rc = sqlite3_prepare_v2 (self->db, sql, -1, &stmt, NULL);
  if (rc == SQLITE_OK)
    {
      rc = sqlite3_step (stmt);
      if (rc == SQLITE_ROW)
        {
          *value = sqlite3_column_int64 (stmt, 0);
          rc = SQLITE_OK;
        }
    }

  if (rc != SQLITE_OK)
    {
      set_db_error (self, rc, error);
      sqlite3_finalize (stmt);
      return FALSE;
    }

  sqlite3_finalize (stmt);
  return TRUE;
}

static gboolean
ensure_file (KagedStore  *self,
             GError     **error)
{
  g_autofree char *dir = g_path_get_dirname (self->path);
  int fd;

  if (!g_file_test (dir, G_FILE_TEST_IS_DIR) && g_mkdir_with_parents (dir, 0700) != 0)
    {
      int saved_errno = errno;
      g_autofree char *display_dir = g_filename_display_name (dir);

      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IO,
                   _("Could not create the folder “%s” for the database: %s"),
                   display_dir, g_strerror (saved_errno));
      return FALSE;
    }

  /* Conversations are private: a new database is readable by its owner only
   * (SQLite gives its -wal and -shm files the same mode). */
  fd = g_open (self->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0)
    g_close (fd, NULL);
  else if (errno != EEXIST)
    {
      int saved_errno = errno;

      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IO,
                   _("Could not create the database “%s”: %s"),
                   self->display_name, g_strerror (saved_errno));
      return FALSE;
    }

  return TRUE;
}

/*
 * One process at a time owns the database: recovery on open marks the runs
 * left running as interrupted, which must never happen to the runs of a
 * Kaged still running. The claim is an flock() on the file, which SQLite's
 * own fcntl() locks do not see; it goes when the store is finalized or the
 * process ends, however it ends.
 */
static gboolean
claim_file (KagedStore  *self,
            GError     **error)
{
  int fd = g_open (self->path, O_RDONLY | O_CLOEXEC, 0);

  if (fd < 0)
    {
      int saved_errno = errno;

      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IO,
                   _("Could not open the database “%s”: %s"),
                   self->display_name, g_strerror (saved_errno));
      return FALSE;
    }

  while (flock (fd, LOCK_EX | LOCK_NB) != 0)
    {
      int saved_errno = errno;

      if (saved_errno == EINTR)
        continue;

      g_close (fd, NULL);

      if (saved_errno == EWOULDBLOCK)
        g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_LOCKED,
                     _("The database “%s” is in use by another Kaged"),
                     self->display_name);
      else
        g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IO,
                     _("Could not lock the database “%s”: %s"),
                     self->display_name, g_strerror (saved_errno));
      return FALSE;
    }

  self->owner_fd = fd;
  return TRUE;
}

/* Reads the header without writing anything, and says whether the file is
 * ours: a Kaged database, or an empty file to start one in. */
static gboolean
read_version (KagedStore  *self,
              gint64      *version,
              GError     **error)
{
  gint64 n_objects = 0;
  gint64 application_id = 0;

  if (!query_int (self, "SELECT count (*) FROM sqlite_schema", &n_objects, error) ||
      !query_int (self, "PRAGMA application_id", &application_id, error) ||
      !query_int (self, "PRAGMA user_version", version, error))
    return FALSE;

  if (application_id == KAGED_APPLICATION_ID)
    return TRUE;

  if (application_id == 0 && *version == 0 && n_objects == 0)
    return TRUE;

  g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_A_DATABASE,
               _("The file “%s” is an SQLite database of another program, not a Kaged database"),
               self->display_name);
  return FALSE;
}

static gboolean
migrate_step (KagedStore  *self,
              gint64       to_version,
              const char  *sql,
              GError     **error)
{
  g_autofree char *set_version = NULL;
  gint64 version = 0;

  g_debug ("Migrating “%s” to schema version %" G_GINT64_FORMAT,
           self->display_name, to_version);

  if (!exec_sql (self, "BEGIN IMMEDIATE", error))
    return FALSE;

  /* Read again under the write lock: a step is applied exactly once. */
  if (!query_int (self, "PRAGMA user_version", &version, error))
    goto failed;
  if (version >= to_version)
    return exec_sql (self, "COMMIT", error);

  set_version = g_strdup_printf ("PRAGMA user_version = %" G_GINT64_FORMAT, to_version);
  if (!exec_sql (self, sql, error) ||
      !exec_sql (self, set_version, error) ||
      !exec_sql (self, "COMMIT", error))
    goto failed;

  return TRUE;

failed:
  exec_sql (self, "ROLLBACK", NULL);
  g_prefix_error (error, _("Could not update the database to version %d: "), (int)to_version);
  return FALSE;
}

static gboolean
migrate (KagedStore  *self,
         gint64       version,
         GError     **error)
{
  switch (version)
    {
    case 0:
      if (!migrate_step (self, 1, schema_v1, error))
        return FALSE;
      G_GNUC_FALLTHROUGH;

    case 1:
      if (!migrate_step (self, 2, schema_v2, error))
        return FALSE;
      G_GNUC_FALLTHROUGH;

    case KAGED_STORE_SCHEMA_VERSION:
      break;

    default:
      g_assert_not_reached ();
    }

  return TRUE;
}

static gboolean
recover (KagedStore  *self,
         GError     **error)
{
  g_autoptr(GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint64));
  gboolean has_row = FALSE;

  /* Taking the write lock here is also what tells a database held by
   * another process from a free one. */
  if (!kaged_store_begin (self, error))
    return FALSE;

  /* The replies of runs left running, and any reply still marked as
   * streaming: nothing streams into them any more. */
  if (!run_stmt (self, STMT_RECOVER_MESSAGES, error) ||
      !run_stmt (self, STMT_RECOVER_STREAMING, error))
    goto failed;

  {
    g_autoptr(CachedStmt) stmt = get_stmt (self, STMT_RECOVER_RUNS, error);

    if (stmt == NULL || !bind_int64 (self, stmt, 1, now_ms (self), error))
      goto failed;

    for (;;)
      {
        gint64 id;

        if (!step_row (self, stmt, &has_row, error))
          goto failed;
        if (!has_row)
          break;
        id = sqlite3_column_int64 (stmt, 0);
        g_array_append_val (ids, id);
      }
  }

  if (!kaged_store_commit (self, error))
    return FALSE;

  for (guint i = 0; i < ids->len; i++)
    {
      KagedRun *run = kaged_store_get_run (self, g_array_index (ids, gint64, i), error);

      if (run == NULL)
        return FALSE;
      g_ptr_array_add (self->interrupted_runs, run);
    }

  if (ids->len > 0)
    g_debug ("Marked %u runs left running as interrupted", ids->len);

  self->queued_runs = kaged_store_list_runs (self, 0, KAGED_RUN_STATUS_QUEUED, error);
  return self->queued_runs != NULL;

failed:
  kaged_store_rollback (self);
  return FALSE;
}

static gpointer
checkpoint_thread (gpointer data)
{
  Checkpointer *checkpointer = data;

  g_mutex_lock (&checkpointer->lock);

  for (;;)
    {
      int n_frames = 0, n_copied = 0;
      int rc;

      while (!checkpointer->wanted && !checkpointer->quit)
        g_cond_wait (&checkpointer->cond, &checkpointer->lock);
      if (checkpointer->quit)
        break;
      checkpointer->wanted = FALSE;
      g_mutex_unlock (&checkpointer->lock);

      rc = sqlite3_wal_checkpoint_v2 (checkpointer->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
                                      &n_frames, &n_copied);
      if (rc != SQLITE_OK && rc != SQLITE_BUSY)
        g_warning ("Could not copy the journal of “%s” into it: %s",
                   checkpointer->display_name, sqlite3_errmsg (checkpointer->db));
      else
        g_debug ("Checkpoint of “%s”: %d of %d frames copied",
                 checkpointer->display_name, n_copied, n_frames);

      g_mutex_lock (&checkpointer->lock);
      checkpointer->n_done++;
      if (rc == SQLITE_OK)
        checkpointer->n_copied = MAX (n_copied, 0);
    }

  g_mutex_unlock (&checkpointer->lock);

  return NULL;
}

/* Nothing is being written: a checkpoint now copies all of the WAL, and
 * the next write starts it over. */
static gboolean
idle_checkpoint_cb (gpointer user_data)
{
  KagedStore *self = user_data;
  Checkpointer *checkpointer = self->checkpointer;

  g_clear_pointer (&self->idle_checkpoint, g_source_unref);

  g_mutex_lock (&checkpointer->lock);
  checkpointer->wanted = TRUE;
  g_cond_signal (&checkpointer->cond);
  g_mutex_unlock (&checkpointer->lock);

  return G_SOURCE_REMOVE;
}

/* After every commit, with the frames in the WAL. */
static int
wal_hook_cb (gpointer     user_data,
             sqlite3     *db,
             const char  *name,
             int          n_frames)
{
  KagedStore *self = user_data;
  Checkpointer *checkpointer = self->checkpointer;

  if (n_frames < checkpointer->frames)
    return SQLITE_OK;

  if (n_frames >= CHECKPOINT_FORCE_FACTOR * checkpointer->frames)
    {
      sqlite3_wal_checkpoint_v2 (db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
      return SQLITE_OK;
    }

  if (n_frames >= CHECKPOINT_IDLE_FACTOR * checkpointer->frames && self->idle_checkpoint == NULL)
    {
      self->idle_checkpoint = g_idle_source_new ();
      g_source_set_priority (self->idle_checkpoint, G_PRIORITY_LOW);
      g_source_set_static_name (self->idle_checkpoint, "[kaged] finishing a checkpoint");
      g_source_set_callback (self->idle_checkpoint, idle_checkpoint_cb, self, NULL);
      g_source_attach (self->idle_checkpoint, self->context);
    }

  g_mutex_lock (&checkpointer->lock);
  /* Frames counted before the WAL started over are gone. */
  if (checkpointer->n_copied > n_frames)
    checkpointer->n_copied = 0;
  if (!checkpointer->wanted && n_frames - checkpointer->n_copied >= checkpointer->frames)
    {
      checkpointer->wanted = TRUE;
      g_cond_signal (&checkpointer->cond);
    }
  g_mutex_unlock (&checkpointer->lock);

  return SQLITE_OK;
}

static void
checkpointer_free (Checkpointer *checkpointer)
{
  if (checkpointer->thread != NULL)
    {
      g_mutex_lock (&checkpointer->lock);
      checkpointer->quit = TRUE;
      g_cond_signal (&checkpointer->cond);
      g_mutex_unlock (&checkpointer->lock);
      g_thread_join (checkpointer->thread);
    }

  sqlite3_close (checkpointer->db);
  g_mutex_clear (&checkpointer->lock);
  g_cond_clear (&checkpointer->cond);
  g_free (checkpointer->display_name);
  g_free (checkpointer);
}

/* Takes the checkpoints off the store's connection. Without a second
 * connection or a thread, SQLite keeps doing them itself. */
static void
start_checkpointer (KagedStore *self)
{
  g_autoptr(GError) error = NULL;
  Checkpointer *checkpointer;
  int rc;

  checkpointer = g_new0 (Checkpointer, 1);
  g_mutex_init (&checkpointer->lock);
  g_cond_init (&checkpointer->cond);
  checkpointer->display_name = g_strdup (self->display_name);
  checkpointer->frames = CHECKPOINT_FRAMES;

  rc = sqlite3_open_v2 (self->path, &checkpointer->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                        NULL);
  /* A connection learns that the file is in WAL mode when it first reads. */
  if (rc == SQLITE_OK)
    rc = sqlite3_exec (checkpointer->db, "PRAGMA journal_mode", NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    checkpointer->thread = g_thread_try_new ("kaged-checkpoint", checkpoint_thread,
                                             checkpointer, &error);

  if (checkpointer->thread == NULL)
    {
      g_warning ("Checkpoints of “%s” stay on the writing thread: %s", self->display_name,
                 error != NULL ? error->message : sqlite3_errstr (rc));
      checkpointer_free (checkpointer);
      return;
    }

  self->checkpointer = checkpointer;
  self->context = g_main_context_ref_thread_default ();
  sqlite3_wal_hook (self->db, wal_hook_cb, self);
}

/* Counts every transaction that writes, explicit or not. */
static int
count_commit (gpointer user_data)
{
  KagedStore *self = user_data;

  self->n_commits++;
  return 0;
}

static gboolean
kaged_store_initable_init (GInitable     *initable,
                           GCancellable  *cancellable,
                           GError       **error)
{
  KagedStore *self = KAGED_STORE (initable);
  gint64 version = 0;
  int rc;

  g_return_val_if_fail (self->path != NULL, FALSE);
  g_return_val_if_fail (self->db == NULL, FALSE);

  if (!ensure_file (self, error) || !claim_file (self, error))
    return FALSE;

  rc = sqlite3_open_v2 (self->path, &self->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                        NULL);
  if (rc != SQLITE_OK)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IO,
                   _("Could not open the database “%s”: %s"),
                   self->display_name,
                   self->db != NULL ? sqlite3_errmsg (self->db) : sqlite3_errstr (rc));
      g_clear_pointer (&self->db, sqlite3_close);
      return FALSE;
    }

  sqlite3_extended_result_codes (self->db, TRUE);
  sqlite3_busy_timeout (self->db, OPEN_BUSY_TIMEOUT_MS);
  sqlite3_commit_hook (self->db, count_commit, self);

  /* Nothing is written before the file is known to be ours and not newer
   * than this build: a file that is not is left exactly as it was. */
  if (!read_version (self, &version, error))
    return FALSE;

  if (version > KAGED_STORE_SCHEMA_VERSION)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_TOO_NEW,
                   _("The database “%s” was written by a newer version of Kaged "
                     "(schema %d; this version reads up to %d)"),
                   self->display_name, (int)version, KAGED_STORE_SCHEMA_VERSION);
      return FALSE;
    }

  if (!exec_sql (self, "PRAGMA journal_mode = WAL", error) ||
      !exec_sql (self, "PRAGMA journal_size_limit = " G_STRINGIFY (WAL_SIZE_LIMIT), error) ||
      !exec_sql (self, "PRAGMA synchronous = NORMAL", error) ||
      !exec_sql (self, "PRAGMA foreign_keys = ON", error))
    return FALSE;

  if (!migrate (self, version, error) || !recover (self, error))
    return FALSE;

  sqlite3_busy_timeout (self->db, BUSY_TIMEOUT_MS);
  start_checkpointer (self);

  return TRUE;
}

static void
kaged_store_initable_iface_init (GInitableIface *iface)
{
  iface->init = kaged_store_initable_init;
}

/* --- GObject ----------------------------------------------------------- */

static void
kaged_store_finalize (GObject *object)
{
  KagedStore *self = (KagedStore *)object;

  if (self->db != NULL && self->depth > 0)
    {
      g_warning ("Store finalized inside a transaction; rolling it back");
      sqlite3_exec (self->db, "ROLLBACK", NULL, NULL, NULL);
    }

  for (guint i = 0; i < N_STMTS; i++)
    g_clear_pointer (&self->stmts[i], sqlite3_finalize);

  /* First, so that the store's own connection is the last one: closing it
   * copies what is left of the WAL into the file and removes the WAL. */
  if (self->db != NULL)
    sqlite3_wal_hook (self->db, NULL, NULL);
  if (self->idle_checkpoint != NULL)
    g_source_destroy (self->idle_checkpoint);
  g_clear_pointer (&self->idle_checkpoint, g_source_unref);
  g_clear_pointer (&self->context, g_main_context_unref);
  g_clear_pointer (&self->checkpointer, checkpointer_free);

  if (self->db != NULL)
    {
      int rc = sqlite3_close (self->db);

      if (rc != SQLITE_OK)
        g_warning ("Could not close the database “%s”: %s",
                   self->display_name, sqlite3_errstr (rc));
      self->db = NULL;
    }

  /* Only now that SQLite is done with the file: closing a descriptor of it
   * releases every fcntl() lock this process holds on it. */
  if (self->owner_fd >= 0)
    {
      g_close (self->owner_fd, NULL);
      self->owner_fd = -1;
    }

  g_clear_pointer (&self->interrupted_runs, g_ptr_array_unref);
  g_clear_pointer (&self->queued_runs, g_ptr_array_unref);
  g_clear_object (&self->clock);
  g_clear_pointer (&self->path, g_free);
  g_clear_pointer (&self->display_name, g_free);

  G_OBJECT_CLASS (kaged_store_parent_class)->finalize (object);
}

static void
kaged_store_get_property (GObject    *object,
                          guint       prop_id,
                          GValue     *value,
                          GParamSpec *pspec)
{
  KagedStore *self = KAGED_STORE (object);

  switch (prop_id)
    {
    case PROP_PATH:
      g_value_set_string (value, self->path);
      break;

    case PROP_CLOCK:
      g_value_set_object (value, self->clock);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_store_set_property (GObject      *object,
                          guint         prop_id,
                          const GValue *value,
                          GParamSpec   *pspec)
{
  KagedStore *self = KAGED_STORE (object);

  switch (prop_id)
    {
    case PROP_PATH:
      g_assert (self->path == NULL);
      self->path = g_value_dup_string (value);
      if (self->path != NULL)
        {
          g_free (self->display_name);
          self->display_name = g_filename_display_name (self->path);
        }
      break;

    case PROP_CLOCK:
      g_assert (self->clock == NULL);
      self->clock = g_value_dup_object (value);
      if (self->clock == NULL)
        self->clock = g_object_ref (kaged_clock_get_default ());
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_store_class_init (KagedStoreClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = kaged_store_finalize;
  object_class->get_property = kaged_store_get_property;
  object_class->set_property = kaged_store_set_property;

  /**
   * KagedStore:path:
   *
   * The database file.
   */
  properties [PROP_PATH] =
    g_param_spec_string ("path", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedStore:clock:
   *
   * The clock giving the times stored when the caller gives none.
   */
  properties [PROP_CLOCK] =
    g_param_spec_object ("clock", NULL, NULL,
                         KAGED_TYPE_CLOCK,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_store_init (KagedStore *self)
{
  self->display_name = g_strdup ("");
  self->owner_fd = -1;
  self->interrupted_runs = g_ptr_array_new_with_free_func (g_object_unref);
}

/* --- Retry state ------------------------------------------------------- */

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

  return copy;
}

void
kaged_store_retry_state_free (KagedStoreRetryState *self)
{
  if (self == NULL)
    return;

  g_free (self->state);
  g_free (self);
}

/* --- Public API: opening ------------------------------------------------ */

/**
 * kaged_store_default_path:
 * @data_dir: (nullable): the directory given with `--data-dir`, or %NULL
 *
 * Returns: (transfer full): `@data_dir/kaged.db`, or
 *   `$XDG_DATA_HOME/kaged/kaged.db` when @data_dir is %NULL
 */
char *
kaged_store_default_path (const char *data_dir)
{
  if (data_dir != NULL)
    return g_build_filename (data_dir, "kaged.db", NULL);

  return g_build_filename (g_get_user_data_dir (), "kaged", "kaged.db", NULL);
}

/**
 * kaged_store_open:
 * @path: the database file; it and its folder are created when missing
 * @error: where to put the reason the database cannot be used
 *
 * Opens the database, brings its schema up to date and marks runs left
 * running by a previous process as failed with the class `interrupted`
 * (see kaged_store_get_interrupted_runs()).
 *
 * A file that is not a Kaged database, is newer, damaged or held by another
 * process is reported with the matching #KagedStoreError and left untouched.
 *
 * Returns: (transfer full): the store, or %NULL with @error set
 */
KagedStore *
kaged_store_open (const char  *path,
                  GError     **error)
{
  return kaged_store_open_with_clock (path, NULL, error);
}

/**
 * kaged_store_open_with_clock:
 * @path: the database file
 * @clock: (nullable): the clock for the times the store fills in
 * @error: where to put the reason the database cannot be used
 *
 * Like kaged_store_open(), with the times of new rows and of start-up
 * recovery taken from @clock.
 *
 * Returns: (transfer full): the store, or %NULL with @error set
 */
KagedStore *
kaged_store_open_with_clock (const char  *path,
                             KagedClock  *clock,
                             GError     **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_return_val_if_fail (clock == NULL || KAGED_IS_CLOCK (clock), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  return g_initable_new (KAGED_TYPE_STORE, NULL, error,
                         "path", path,
                         "clock", clock,
                         NULL);
}

const char *
kaged_store_get_path (KagedStore *self)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  return self->path;
}

/**
 * kaged_store_get_clock:
 *
 * Returns: (transfer none): the clock the store takes times from
 */
KagedClock *
kaged_store_get_clock (KagedStore *self)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  return self->clock;
}

/**
 * kaged_store_get_interrupted_runs:
 *
 * The runs a previous process left `running`, which opening marked failed
 * with the class `interrupted` (their agent messages `interrupted`, the
 * partial text kept).
 *
 * Returns: (transfer none) (element-type KagedRun): the runs recovered on open
 */
GPtrArray *
kaged_store_get_interrupted_runs (KagedStore *self)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  return self->interrupted_runs;
}

/**
 * kaged_store_get_queued_runs:
 *
 * Returns: (transfer none) (element-type KagedRun): the runs that were
 *   `queued` when the store was opened, oldest first
 */
GPtrArray *
kaged_store_get_queued_runs (KagedStore *self)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  return self->queued_runs;
}

/* Runs `PRAGMA quick_check` on @db, stopping early when @cancellable is
 * cancelled. */
static gboolean
check_db (sqlite3       *db,
          const char    *display_name,
          GCancellable  *cancellable,
          GError       **error)
{
  g_autofree char *problem = NULL;
  sqlite3_stmt *stmt = NULL;
  int rc;

  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;

  if (cancellable != NULL)
    sqlite3_progress_handler (db, 1000, check_progress, cancellable);

  rc = sqlite3_prepare_v2 (db, "PRAGMA quick_check (1)", -1, &stmt, NULL);
  if (rc == SQLITE_OK)
    {
      rc = sqlite3_step (stmt);
      if (rc == SQLITE_ROW)
        {
          const char *result = (const char *)sqlite3_column_text (stmt, 0);

          if (g_strcmp0 (result, "ok") != 0)
            problem = g_strdup (result != NULL ? result : "");
          rc = SQLITE_OK;
        }
    }

  sqlite3_progress_handler (db, 0, NULL, NULL);

  if (rc != SQLITE_OK)
    {
      if (!g_cancellable_set_error_if_cancelled (cancellable, error))
        set_error_for_db (db, display_name, rc, error);
      sqlite3_finalize (stmt);
      return FALSE;
    }
  sqlite3_finalize (stmt);

  if (problem != NULL)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_CORRUPT,
                   _("The database “%s” is damaged: %s"), display_name, problem);
      return FALSE;
    }

  return TRUE;
}

/**
 * kaged_store_check:
 * @cancellable: (nullable): a #GCancellable
 *
 * Reads the whole database to find damage (`PRAGMA quick_check`). Opening
 * does not do this, as it takes time in proportion to the size of the
 * database (about 0.3 s for 70 MB); kaged_store_check_async() does it
 * without blocking.
 *
 * Returns: %TRUE when no damage was found, or %FALSE with @error set
 *   (%KAGED_STORE_ERROR_CORRUPT naming the first problem, or
 *   %G_IO_ERROR_CANCELLED)
 */
gboolean
kaged_store_check (KagedStore    *self,
                   GCancellable  *cancellable,
                   GError       **error)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), FALSE);

  return check_db (self->db, self->display_name, cancellable, error);
}

typedef struct
{
  char *path;
  char *display_name;
} CheckData;

static void
check_data_free (CheckData *data)
{
  g_free (data->path);
  g_free (data->display_name);
  g_free (data);
}

/* In a worker thread, on a connection of its own: the store's connection
 * stays with the thread that uses the store. */
static void
check_thread (GTask        *task,
              gpointer      source_object,
              gpointer      task_data,
              GCancellable *cancellable)
{
  CheckData *data = task_data;
  GError *error = NULL;
  sqlite3 *db = NULL;
  int rc;

  rc = sqlite3_open_v2 (data->path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_EXRESCODE, NULL);
  if (rc != SQLITE_OK)
    {
      set_error_for_db (db, data->display_name, rc, &error);
      sqlite3_close (db);
      g_task_return_error (task, error);
      return;
    }

  sqlite3_busy_timeout (db, BUSY_TIMEOUT_MS);

  if (check_db (db, data->display_name, cancellable, &error))
    g_task_return_boolean (task, TRUE);
  else
    g_task_return_error (task, error);

  sqlite3_close (db);
}

/**
 * kaged_store_check_async:
 * @cancellable: (nullable): a #GCancellable
 * @callback: called when the check is done
 * @user_data: data for @callback
 *
 * Like kaged_store_check(), in a worker thread with a read-only connection
 * of its own, so the store can be used meanwhile.
 */
void
kaged_store_check_async (KagedStore          *self,
                         GCancellable        *cancellable,
                         GAsyncReadyCallback  callback,
                         gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  CheckData *data;

  g_return_if_fail (KAGED_IS_STORE (self));
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  data = g_new0 (CheckData, 1);
  data->path = g_strdup (self->path);
  data->display_name = g_strdup (self->display_name);

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_store_check_async);
  g_task_set_task_data (task, data, (GDestroyNotify)check_data_free);
  g_task_run_in_thread (task, check_thread);
}

gboolean
kaged_store_check_finish (KagedStore    *self,
                          GAsyncResult  *result,
                          GError       **error)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_store_check_async, FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

/* --- Public API: transactions ------------------------------------------ */

/**
 * kaged_store_begin:
 *
 * Starts a transaction, or a nested one inside the current transaction.
 * Each successful call is paired with kaged_store_commit() or
 * kaged_store_rollback().
 */
gboolean
kaged_store_begin (KagedStore  *self,
                   GError     **error)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);

  if (!run_stmt (self, self->depth == 0 ? STMT_BEGIN : STMT_SAVEPOINT, error))
    return FALSE;

  self->depth++;
  return TRUE;
}

/**
 * kaged_store_commit:
 *
 * Ends the innermost transaction, keeping its writes. If the outermost
 * commit fails, the transaction is rolled back and ended all the same.
 */
gboolean
kaged_store_commit (KagedStore  *self,
                    GError     **error)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (self->depth > 0, FALSE);

  if (self->depth == 1)
    {
      if (!run_stmt (self, STMT_COMMIT, error))
        {
          if (!sqlite3_get_autocommit (self->db))
            run_stmt (self, STMT_ROLLBACK, NULL);
          self->depth--;
          return FALSE;
        }
    }
  else if (!run_stmt (self, STMT_RELEASE, error))
    {
      return FALSE;
    }

  self->depth--;
  return TRUE;
}

/**
 * kaged_store_rollback:
 *
 * Ends the innermost transaction, undoing its writes.
 */
void
kaged_store_rollback (KagedStore *self)
{
  g_autoptr(GError) error = NULL;

  g_return_if_fail (KAGED_IS_STORE (self));
  g_return_if_fail (self->depth > 0);

  if (self->depth == 1)
    {
      if (!sqlite3_get_autocommit (self->db) && !run_stmt (self, STMT_ROLLBACK, &error))
        g_warning ("%s", error->message);
    }
  else if (!run_stmt (self, STMT_ROLLBACK_TO, &error) ||
           !run_stmt (self, STMT_RELEASE, &error))
    {
      g_warning ("%s", error->message);
    }

  self->depth--;
}

/**
 * kaged_store_transaction:
 * @func: (scope call): the writes to make together
 * @user_data: data for @func
 *
 * Runs @func inside a transaction: everything it wrote is kept if it returns
 * %TRUE and undone if it returns %FALSE. Transactions nest.
 *
 * Returns: whether @func succeeded and its writes were committed
 */
gboolean
kaged_store_transaction (KagedStore                 *self,
                         KagedStoreTransactionFunc   func,
                         gpointer                    user_data,
                         GError                    **error)
{
  g_autoptr(GError) local_error = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (func != NULL, FALSE);

  if (!kaged_store_begin (self, error))
    return FALSE;

  if (!func (self, user_data, &local_error))
    {
      kaged_store_rollback (self);
      if (local_error == NULL)
        g_set_error_literal (&local_error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                             _("The change was abandoned"));
      g_propagate_error (error, g_steal_pointer (&local_error));
      return FALSE;
    }

  return kaged_store_commit (self, error);
}

/* --- Public API: sessions ---------------------------------------------- */

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
  g_autoptr(CachedStmt) stmt = NULL;
  KagedSession *session;
  gint64 now;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  now = now_ms (self);
  stmt = get_stmt (self, STMT_SESSION_INSERT, error);
  if (stmt == NULL ||
      !bind_text (self, stmt, 1, title != NULL ? title : "", error) ||
      !bind_int64 (self, stmt, 2, now, error) ||
      !step_done (self, stmt, error))
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
  g_autoptr(CachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  stmt = get_stmt (self, STMT_SESSION_GET, error);
  if (stmt == NULL || !bind_int64 (self, stmt, 1, session_id, error))
    return NULL;

  return fetch_one (self, stmt, (RowFunc)session_from_row,
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
  g_autoptr(CachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  stmt = get_stmt (self, STMT_SESSION_LIST, error);
  if (stmt == NULL)
    return NULL;

  return collect_rows (self, stmt, (RowFunc)session_from_row, g_object_unref, error);
}

gboolean
kaged_store_rename_session (KagedStore  *self,
                            gint64       session_id,
                            const char  *title,
                            GError     **error)
{
  g_autoptr(CachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);

  stmt = get_stmt (self, STMT_SESSION_RENAME, error);
  return stmt != NULL &&
         bind_int64 (self, stmt, 1, session_id, error) &&
         bind_text (self, stmt, 2, title != NULL ? title : "", error) &&
         bind_int64 (self, stmt, 3, now_ms (self), error) &&
         step_done (self, stmt, error) &&
         expect_changed (self, MISSING_SESSION, session_id, error);
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
  g_autoptr(CachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);

  stmt = get_stmt (self, STMT_SESSION_DELETE, error);
  return stmt != NULL &&
         bind_int64 (self, stmt, 1, session_id, error) &&
         step_done (self, stmt, error) &&
         expect_changed (self, MISSING_SESSION, session_id, error);
}

/* --- Public API: messages ---------------------------------------------- */

typedef struct
{
  gint64 session_id;
  KagedMessageRole role;
  gboolean superseded;
} MessageInfo;

static gboolean
get_message_info (KagedStore   *self,
                  gint64        message_id,
                  MessageInfo  *info,
                  GError      **error)
{
  g_autoptr(CachedStmt) stmt = get_stmt (self, STMT_MESSAGE_INFO, error);
  gboolean has_row = FALSE;

  if (stmt == NULL ||
      !bind_int64 (self, stmt, 1, message_id, error) ||
      !step_row (self, stmt, &has_row, error))
    return FALSE;

  if (!has_row)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND,
                   _("There is no message %lld"), (long long) message_id);
      return FALSE;
    }

  info->session_id = sqlite3_column_int64 (stmt, 0);
  info->role = enum_from_column (stmt, 1, KAGED_TYPE_MESSAGE_ROLE, KAGED_MESSAGE_ROLE_AGENT);
  info->superseded = sqlite3_column_int (stmt, 2) != 0;

  return TRUE;
}

/* Checks that a run exists and belongs to @session_id. */
static gboolean
check_run_in_session (KagedStore  *self,
                      gint64       run_id,
                      gint64       session_id,
                      GError     **error)
{
  g_autoptr(KagedRun) run = kaged_store_get_run (self, run_id, error);

  if (run == NULL)
    return FALSE;

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
  g_autoptr(CachedStmt) stmt = NULL;

  if (run_id != 0 && !check_run_in_session (self, run_id, session_id, error))
    return FALSE;

  /* Touching the session first also tells whether it exists. */
  stmt = get_stmt (self, STMT_SESSION_TOUCH, error);
  if (stmt == NULL ||
      !bind_int64 (self, stmt, 1, session_id, error) ||
      !bind_int64 (self, stmt, 2, created_at, error) ||
      !step_done (self, stmt, error) ||
      !expect_changed (self, MISSING_SESSION, session_id, error))
    return FALSE;
  g_clear_pointer (&stmt, cached_stmt_release);

  stmt = get_stmt (self, STMT_MESSAGE_INSERT, error);
  return stmt != NULL &&
         bind_int64 (self, stmt, 1, session_id, error) &&
         bind_text (self, stmt, 2, enum_nick (KAGED_TYPE_MESSAGE_ROLE, role), error) &&
         bind_text (self, stmt, 3, kaged_message_get_content (message) ?: "", error) &&
         bind_int64 (self, stmt, 4, created_at, error) &&
         bind_int64_or_null (self, stmt, 5, run_id, error) &&
         bind_text (self, stmt, 6, enum_nick (KAGED_TYPE_MESSAGE_STATUS,
                                              kaged_message_get_status (message)), error) &&
         bind_text (self, stmt, 7, kaged_message_get_error_message (message), error) &&
         bind_int64 (self, stmt, 8, kaged_message_get_retryable (message), error) &&
         bind_text (self, stmt, 9,
                    kaged_retry_class_to_string (kaged_message_get_retry_class (message)),
                    error) &&
         bind_int64_or_null (self, stmt, 10, kaged_message_get_retry_after_until (message),
                             error) &&
         step_done (self, stmt, error);
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
    created_at = now_ms (self);

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
  g_autoptr(CachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  stmt = get_stmt (self, STMT_MESSAGE_GET, error);
  if (stmt == NULL || !bind_int64 (self, stmt, 1, message_id, error))
    return NULL;

  return fetch_one (self, stmt, (RowFunc)message_from_row,
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
  g_autoptr(CachedStmt) stmt = NULL;
  gint64 id;
  MessageInfo info;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (KAGED_IS_MESSAGE (message), FALSE);

  id = kaged_message_get_id (message);
  stmt = get_stmt (self, STMT_MESSAGE_UPDATE, error);
  if (stmt == NULL ||
      !bind_int64 (self, stmt, 1, id, error) ||
      !bind_text (self, stmt, 2, kaged_message_get_content (message) ?: "", error) ||
      !bind_text (self, stmt, 3, enum_nick (KAGED_TYPE_MESSAGE_STATUS,
                                            kaged_message_get_status (message)), error) ||
      !bind_text (self, stmt, 4, kaged_message_get_error_message (message), error) ||
      !bind_int64 (self, stmt, 5, kaged_message_get_retryable (message), error) ||
      !bind_text (self, stmt, 6,
                  kaged_retry_class_to_string (kaged_message_get_retry_class (message)),
                  error) ||
      !bind_int64_or_null (self, stmt, 7, kaged_message_get_retry_after_until (message),
                           error) ||
      !step_done (self, stmt, error))
    return FALSE;

  if (sqlite3_changes (self->db) > 0)
    return TRUE;

  /* Nothing changed: the message is missing or an operator's. */
  if (!get_message_info (self, id, &info, error))
    return FALSE;

  g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IMMUTABLE,
               _("Message %lld was written by the operator and cannot be changed"),
               (long long) id);
  return FALSE;
}

static GPtrArray *
list_messages (KagedStore  *self,
               StmtId       id,
               gint64       session_id,
               gint64       from_id,
               guint        limit,
               GError     **error)
{
  g_autoptr(CachedStmt) stmt = get_stmt (self, id, error);

  if (stmt == NULL ||
      !bind_int64 (self, stmt, 1, session_id, error) ||
      !bind_int64 (self, stmt, 2, from_id, error) ||
      !bind_int64 (self, stmt, 3, limit > 0 ? (gint64)limit : -1, error))
    return NULL;

  return collect_rows (self, stmt, (RowFunc)message_from_row, g_object_unref, error);
}

/**
 * kaged_store_list_messages:
 * @session_id: the session
 * @include_superseded: whether to list superseded messages too
 * @after_id: list messages after this one, or 0 to start at the beginning
 * @limit: at most this many, or 0 for all
 *
 * Pages through a session's messages in the order they were written: pass
 * the id of the last message of a page as @after_id for the next one.
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
  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);
  g_return_val_if_fail (after_id >= 0, NULL);

  return list_messages (self,
                        include_superseded ? STMT_MESSAGE_LIST_ALL_AFTER
                                           : STMT_MESSAGE_LIST_CURRENT_AFTER,
                        session_id, after_id, limit, error);
}

/**
 * kaged_store_list_messages_before:
 * @session_id: the session
 * @include_superseded: whether to list superseded messages too
 * @before_id: list messages before this one, or 0 to end with the latest
 * @limit: at most this many, or 0 for all
 *
 * Pages backwards from the latest message: the page holds the @limit
 * messages just before @before_id, still in the order they were written.
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

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);
  g_return_val_if_fail (before_id >= 0, NULL);

  messages = list_messages (self,
                            include_superseded ? STMT_MESSAGE_LIST_ALL_BEFORE
                                               : STMT_MESSAGE_LIST_CURRENT_BEFORE,
                            session_id, before_id > 0 ? before_id : G_MAXINT64, limit, error);

  if (messages != NULL)
    {
      for (guint i = 0, j = messages->len; i + 1 < j; i++, j--)
        {
          gpointer tmp = messages->pdata[i];

          messages->pdata[i] = messages->pdata[j - 1];
          messages->pdata[j - 1] = tmp;
        }
    }

  return messages;
}

gboolean
kaged_store_count_messages (KagedStore  *self,
                            gint64       session_id,
                            gboolean     include_superseded,
                            guint       *n_messages,
                            GError     **error)
{
  g_autoptr(CachedStmt) stmt = NULL;
  gboolean has_row = FALSE;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (n_messages != NULL, FALSE);

  stmt = get_stmt (self, include_superseded ? STMT_MESSAGE_COUNT_ALL : STMT_MESSAGE_COUNT_CURRENT,
                   error);
  if (stmt == NULL ||
      !bind_int64 (self, stmt, 1, session_id, error) ||
      !step_row (self, stmt, &has_row, error))
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
  g_autoptr(CachedStmt) stmt = NULL;
  gboolean has_row = FALSE;
  MessageInfo info;

  if (!get_message_info (self, message_id, &info, error))
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

  if (!check_run_in_session (self, by_run_id, session_id, error))
    return FALSE;

  stmt = get_stmt (self, STMT_MESSAGE_SUPERSEDE, error);
  if (stmt == NULL ||
      !bind_int64 (self, stmt, 1, session_id, error) ||
      !bind_int64 (self, stmt, 2, message_id, error) ||
      !bind_int64 (self, stmt, 3, by_run_id, error))
    return FALSE;

  for (;;)
    {
      gint64 id;

      if (!step_row (self, stmt, &has_row, error))
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
 * Marks every current message after @message_id superseded by @by_run_id,
 * in one transaction. Messages before it, @message_id itself and messages
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
 *   the order they were written, or %NULL with @error set
 */
GPtrArray *
kaged_store_list_versions (KagedStore  *self,
                           gint64       anchor_id,
                           GError     **error)
{
  g_autoptr(CachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  stmt = get_stmt (self, STMT_MESSAGE_VERSIONS, error);
  if (stmt == NULL || !bind_int64 (self, stmt, 1, anchor_id, error))
    return NULL;

  return collect_rows (self, stmt, (RowFunc)message_from_row, g_object_unref, error);
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
  MessageInfo summary;

  if (!get_message_info (self, summary_id, &summary, error))
    return FALSE;

  if (summary.role != KAGED_MESSAGE_ROLE_SUMMARY)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                   _("Message %lld is not a summary"), (long long) summary_id);
      return FALSE;
    }

  for (guint i = 0; i < n_message_ids; i++)
    {
      g_autoptr(CachedStmt) stmt = NULL;
      MessageInfo info;

      if (!get_message_info (self, message_ids[i], &info, error))
        return FALSE;

      if (info.session_id != summary.session_id || message_ids[i] == summary_id)
        {
          g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                       _("Message %lld cannot be compacted into summary %lld"),
                       (long long) message_ids[i], (long long) summary_id);
          return FALSE;
        }

      stmt = get_stmt (self, STMT_MESSAGE_COMPACT, error);
      if (stmt == NULL ||
          !bind_int64 (self, stmt, 1, message_ids[i], error) ||
          !bind_int64 (self, stmt, 2, summary_id, error) ||
          !step_done (self, stmt, error))
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

/* --- Public API: runs --------------------------------------------------- */

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
  g_autoptr(CachedStmt) stmt = NULL;
  gint64 session_id;
  gint64 created_at;
  MessageInfo anchor;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (KAGED_IS_RUN (run), FALSE);
  g_return_val_if_fail (kaged_run_get_id (run) == 0, FALSE);

  session_id = kaged_run_get_session_id (run);
  if (!get_message_info (self, kaged_run_get_anchor_id (run), &anchor, error))
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
    created_at = now_ms (self);

  stmt = get_stmt (self, STMT_RUN_INSERT, error);
  if (stmt == NULL ||
      !bind_int64 (self, stmt, 1, session_id, error) ||
      !bind_int64 (self, stmt, 2, kaged_run_get_anchor_id (run), error) ||
      !bind_text (self, stmt, 3, enum_nick (KAGED_TYPE_RUN_STATUS, kaged_run_get_status (run)),
                  error) ||
      !bind_int64 (self, stmt, 4, kaged_run_get_input_tokens (run), error) ||
      !bind_int64 (self, stmt, 5, kaged_run_get_output_tokens (run), error) ||
      !bind_int64 (self, stmt, 6, kaged_run_get_retryable (run), error) ||
      !bind_text (self, stmt, 7, kaged_retry_class_to_string (kaged_run_get_retry_class (run)),
                  error) ||
      !bind_int64_or_null (self, stmt, 8, kaged_run_get_retry_after_until (run), error) ||
      !bind_int64_or_null (self, stmt, 9, kaged_run_get_http_status (run), error) ||
      !bind_text (self, stmt, 10, kaged_run_get_error_message (run), error) ||
      !bind_int64 (self, stmt, 11, created_at, error) ||
      !bind_int64_or_null (self, stmt, 12, kaged_run_get_started_at (run), error) ||
      !bind_int64_or_null (self, stmt, 13, kaged_run_get_finished_at (run), error) ||
      !step_done (self, stmt, error))
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
    g_autoptr(CachedStmt) stmt = get_stmt (self, STMT_RUN_GET, error);

    if (stmt == NULL || !bind_int64 (self, stmt, 1, run_id, error))
      return NULL;

    run = fetch_one (self, stmt, (RowFunc)run_from_row,
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
    g_autoptr(CachedStmt) stmt = get_stmt (self, STMT_RUN_LATEST, error);

    if (stmt == NULL || !bind_int64 (self, stmt, 1, session_id, error))
      return NULL;

    run = fetch_one (self, stmt, (RowFunc)run_from_row,
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
  g_autoptr(CachedStmt) stmt = NULL;
  gint64 id;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (KAGED_IS_RUN (run), FALSE);

  id = kaged_run_get_id (run);
  stmt = get_stmt (self, STMT_RUN_UPDATE, error);
  return stmt != NULL &&
         bind_int64 (self, stmt, 1, id, error) &&
         bind_text (self, stmt, 2, enum_nick (KAGED_TYPE_RUN_STATUS, kaged_run_get_status (run)),
                    error) &&
         bind_int64 (self, stmt, 3, kaged_run_get_input_tokens (run), error) &&
         bind_int64 (self, stmt, 4, kaged_run_get_output_tokens (run), error) &&
         bind_int64 (self, stmt, 5, kaged_run_get_retryable (run), error) &&
         bind_text (self, stmt, 6, kaged_retry_class_to_string (kaged_run_get_retry_class (run)),
                    error) &&
         bind_int64_or_null (self, stmt, 7, kaged_run_get_retry_after_until (run), error) &&
         bind_int64_or_null (self, stmt, 8, kaged_run_get_http_status (run), error) &&
         bind_text (self, stmt, 9, kaged_run_get_error_message (run), error) &&
         bind_int64_or_null (self, stmt, 10, kaged_run_get_started_at (run), error) &&
         bind_int64_or_null (self, stmt, 11, kaged_run_get_finished_at (run), error) &&
         step_done (self, stmt, error) &&
         expect_changed (self, MISSING_RUN, id, error);
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
  g_autoptr(CachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (attempt != NULL, FALSE);

  stmt = get_stmt (self, STMT_ATTEMPT_INSERT, error);
  if (stmt == NULL ||
      !bind_int64 (self, stmt, 1, run_id, error) ||
      !bind_int64 (self, stmt, 2, attempt->time != 0 ? attempt->time : now_ms (self), error) ||
      !bind_int64_or_null (self, stmt, 3, attempt->http_status, error) ||
      !bind_text (self, stmt, 4, attempt->error, error) ||
      !bind_text (self, stmt, 5, kaged_retry_class_to_string (attempt->retry_class), error) ||
      !bind_int64 (self, stmt, 6, attempt->wait_ms, error) ||
      !bind_text (self, stmt, 7, attempt->wait_source, error))
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
      return set_db_error (self, sqlite3_extended_errcode (self->db), error);
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
    g_autoptr(CachedStmt) stmt = NULL;
    const char *nick = enum_nick (KAGED_TYPE_RUN_STATUS, status);

    if (session_id != 0)
      {
        stmt = get_stmt (self, STMT_RUN_LIST, error);
        if (stmt == NULL ||
            !bind_int64 (self, stmt, 1, session_id, error) ||
            !bind_text (self, stmt, 2, nick, error))
          return NULL;
      }
    else
      {
        stmt = get_stmt (self, STMT_RUN_LIST_ALL, error);
        if (stmt == NULL || !bind_text (self, stmt, 1, nick, error))
          return NULL;
      }

    runs = collect_rows (self, stmt, (RowFunc)run_from_row, g_object_unref, error);
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
  g_autoptr(CachedStmt) stmt = NULL;
  gboolean has_row = FALSE;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (input_tokens != NULL, FALSE);
  g_return_val_if_fail (output_tokens != NULL, FALSE);

  stmt = get_stmt (self, STMT_RUN_USAGE, error);
  if (stmt == NULL ||
      !bind_int64 (self, stmt, 1, since_ms, error) ||
      !step_row (self, stmt, &has_row, error))
    return FALSE;

  *input_tokens = has_row ? sqlite3_column_int64 (stmt, 0) : 0;
  *output_tokens = has_row ? sqlite3_column_int64 (stmt, 1) : 0;
  return TRUE;
}

/* --- Public API: Tier 2 state ------------------------------------------ */

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
  g_autoptr(CachedStmt) stmt = NULL;
  gboolean has_row = FALSE;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  stmt = get_stmt (self, STMT_RETRY_GET, error);
  if (stmt == NULL ||
      !bind_int64 (self, stmt, 1, session_id, error) ||
      !step_row (self, stmt, &has_row, error))
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
  g_autoptr(CachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (state != NULL, FALSE);

  stmt = get_stmt (self, STMT_RETRY_SET, error);
  if (stmt == NULL ||
      !bind_int64 (self, stmt, 1, state->session_id, error) ||
      !bind_int64 (self, stmt, 2, state->attempt, error) ||
      !bind_int64_or_null (self, stmt, 3, state->next_eligible_at, error) ||
      !bind_text (self, stmt, 4, state->state != NULL ? state->state : "idle", error) ||
      !bind_int64 (self, stmt, 5, state->cancelled ? 1 : 0, error) ||
      !bind_int64_or_null (self, stmt, 6, state->anchor_id, error) ||
      !bind_int64 (self, stmt, 7, state->updated_at != 0 ? state->updated_at : now_ms (self),
                   error))
    return FALSE;

  if (sqlite3_step (stmt) != SQLITE_DONE)
    {
      if (sqlite3_extended_errcode (self->db) == SQLITE_CONSTRAINT_FOREIGNKEY)
        {
          g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND,
                       _("There is no session %lld"), (long long) state->session_id);
          return FALSE;
        }
      return set_db_error (self, sqlite3_extended_errcode (self->db), error);
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
  g_autoptr(CachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);

  stmt = get_stmt (self, STMT_RETRY_CLEAR, error);
  return stmt != NULL &&
         bind_int64 (self, stmt, 1, session_id, error) &&
         step_done (self, stmt, error);
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
  g_autoptr(CachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  stmt = get_stmt (self, STMT_RETRY_LIST, error);
  if (stmt == NULL)
    return NULL;

  return collect_rows (self, stmt, (RowFunc)retry_state_from_row,
                       (GDestroyNotify)kaged_store_retry_state_free, error);
}

/**
 * kaged_store_get_n_write_transactions:
 *
 * Returns: how many write transactions were committed since the store was
 *   opened, for measuring how often streaming text reaches the disk
 */
guint64
kaged_store_get_n_write_transactions (KagedStore *self)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), 0);

  return self->n_commits;
}

/*
 * kaged_store_set_checkpoint_frames:
 *
 * Checkpoints start at @frames pages of WAL instead of 1,000, the other
 * thresholds following: for tests, which then need not write hundreds of
 * megabytes.
 */
void
kaged_store_set_checkpoint_frames (KagedStore *self,
                                   int         frames)
{
  g_return_if_fail (KAGED_IS_STORE (self));
  g_return_if_fail (frames > 0);

  if (self->checkpointer == NULL)
    return;

  g_mutex_lock (&self->checkpointer->lock);
  self->checkpointer->frames = frames;
  g_mutex_unlock (&self->checkpointer->lock);
}

/**
 * kaged_store_get_n_checkpoints:
 *
 * Returns: how many checkpoints the store's checkpoint thread has run (it
 *   copies the WAL back into the database file once the WAL holds
 *   1,000 pages)
 */
guint64
kaged_store_get_n_checkpoints (KagedStore *self)
{
  guint64 n;

  g_return_val_if_fail (KAGED_IS_STORE (self), 0);

  if (self->checkpointer == NULL)
    return 0;

  g_mutex_lock (&self->checkpointer->lock);
  n = self->checkpointer->n_done;
  g_mutex_unlock (&self->checkpointer->lock);

  return n;
}
