/* kaged-store-schema.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-store-private.h"

/* 'KAGD': marks the file as ours in the SQLite header. */
#define KAGED_APPLICATION_ID 0x4B414744

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

/* Version 3: conversation order. Operator and summary messages stand in
 * the order they were posted, each reply right after the operator message
 * it answers, earlier versions first. A reply carries its run's anchor, so
 * that order is (coalesce (anchor_id, id), id) and one index reads it:
 * replies are always written after their anchor. The index also serves
 * everything the one on session_id did. */
static const char schema_v3[] =
  "ALTER TABLE messages ADD COLUMN anchor_id INTEGER;\n"
  "UPDATE messages SET anchor_id = (SELECT r.anchor_id FROM runs r WHERE r.id = messages.run_id)\n"
  "  WHERE role = 'agent';\n"
  "CREATE INDEX messages_in_order ON messages (session_id, coalesce (anchor_id, id), id);\n"
  "DROP INDEX messages_by_session;\n";

/* Version 4: the Tier 2 scheduler's state, whole. Why a retry waits (the
 * failure's class, status, time and where the wait came from) is kept
 * with it instead of being read back from the session's latest run on
 * start-up. A saved state takes its reason from that run once, here, the
 * way the program did until now. */
static const char schema_v4[] =
  "ALTER TABLE retry_states ADD COLUMN retry_class TEXT;\n"
  "ALTER TABLE retry_states ADD COLUMN http_status INTEGER;\n"
  "ALTER TABLE retry_states ADD COLUMN retry_after_until INTEGER;\n"
  "ALTER TABLE retry_states ADD COLUMN advised_wait_ms INTEGER;\n"
  "ALTER TABLE retry_states ADD COLUMN wait_source TEXT;\n"
  "ALTER TABLE retry_states ADD COLUMN seen_run_id INTEGER;\n"
  "ALTER TABLE retry_states ADD COLUMN retry_run_id INTEGER;\n"
  "UPDATE retry_states SET seen_run_id =\n"
  "  (SELECT max (r.id) FROM runs r WHERE r.session_id = retry_states.session_id);\n"
  "UPDATE retry_states SET\n"
  "  retry_class = r.retry_class,\n"
  "  http_status = r.http_status,\n"
  "  retry_after_until = r.retry_after_until,\n"
  "  advised_wait_ms = CASE\n"
  "    WHEN r.retry_after_until IS NULL THEN 0\n"
  "    WHEN a.wait_source IS NOT NULL AND a.wait_source <> 'backoff' AND a.wait_ms > 0\n"
  "      THEN a.wait_ms\n"
  "    ELSE max (0, r.retry_after_until - coalesce (r.finished_at, r.retry_after_until)) END,\n"
  "  wait_source = CASE\n"
  "    WHEN r.retry_after_until IS NULL\n"
  "      OR r.retry_after_until < coalesce (retry_states.next_eligible_at, 0) THEN 'backoff'\n"
  "    WHEN a.wait_source IS NOT NULL AND a.wait_source <> 'backoff' THEN a.wait_source\n"
  "    WHEN r.retry_class = 'quota_scheduled' THEN 'provider-reset'\n"
  "    ELSE 'retry-after' END\n"
  "FROM runs r LEFT JOIN attempts a ON a.run_id = r.id AND a.seq =\n"
  "  (SELECT max (seq) FROM attempts WHERE run_id = r.id)\n"
  "WHERE r.id = retry_states.seen_run_id AND r.status = 'failed'\n"
  "  AND r.anchor_id = retry_states.anchor_id;\n";

/* Version 5: the search index, in kaged-store-search.c. */
/* Version 6: per-conversation profile, model and system prompt, the model
 * each run used, and the model lists of profiles, in kaged-store-settings.c. */
/* Version 7: replies indexed for search once they stop streaming, in
 * kaged-store-search.c. */

/* Version 8: what one run superseded is found without a walk through the
 * conversation — an earlier version's later turns, an edited message's
 * earlier text; and what was written in a conversation and not sent is
 * kept (see kaged-store-drafts.c). */
static const char schema_v8[] =
  "CREATE INDEX message_supersessions_by_run ON message_supersessions (run_id);\n"
  "CREATE TABLE drafts (\n"
  "  session_id INTEGER PRIMARY KEY,\n"
  "  content    TEXT NOT NULL,\n"
  "  updated_at INTEGER NOT NULL\n"
  ");\n"
  "CREATE TRIGGER drafts_go_with_session AFTER DELETE ON sessions\n"
  "BEGIN\n"
  "  DELETE FROM drafts WHERE session_id = OLD.id;\n"
  "END;\n";
G_STATIC_ASSERT (KAGED_STORE_SCHEMA_VERSION == 8);

gboolean
_kaged_store_exec_sql (KagedStore  *self,
                       const char  *sql,
                       GError     **error)
{
  char *errmsg = NULL;
  int rc = sqlite3_exec (self->db, sql, NULL, NULL, &errmsg);

  sqlite3_free (errmsg);
  if (rc != SQLITE_OK)
    return _kaged_store_set_db_error (self, rc, error);
  return TRUE;
}

gboolean
_kaged_store_query_int (KagedStore  *self,
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
      _kaged_store_set_db_error (self, rc, error);
      sqlite3_finalize (stmt);
      return FALSE;
    }

  sqlite3_finalize (stmt);
  return TRUE;
}

/* Reads the header without writing anything, and says whether the file is
 * ours: a Kaged database, or an empty file to start one in. */
gboolean
_kaged_store_read_version (KagedStore  *self,
                           gint64      *version,
                           GError     **error)
{
  gint64 n_objects = 0;
  gint64 application_id = 0;

  if (!_kaged_store_query_int (self, "SELECT count (*) FROM sqlite_schema", &n_objects, error) ||
      !_kaged_store_query_int (self, "PRAGMA application_id", &application_id, error) ||
      !_kaged_store_query_int (self, "PRAGMA user_version", version, error))
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

  if (!_kaged_store_exec_sql (self, "BEGIN IMMEDIATE", error))
    return FALSE;

  /* Read again under the write lock: a step is applied exactly once. */
  if (!_kaged_store_query_int (self, "PRAGMA user_version", &version, error))
    goto failed;
  if (version >= to_version)
    return _kaged_store_exec_sql (self, "COMMIT", error);

  set_version = g_strdup_printf ("PRAGMA user_version = %" G_GINT64_FORMAT, to_version);
  if (!_kaged_store_exec_sql (self, sql, error) ||
      !_kaged_store_exec_sql (self, set_version, error) ||
      !_kaged_store_exec_sql (self, "COMMIT", error))
    goto failed;

  return TRUE;

failed:
  _kaged_store_exec_sql (self, "ROLLBACK", NULL);
  g_prefix_error (error, _("Could not update the database to version %d: "), (int)to_version);
  return FALSE;
}

gboolean
_kaged_store_migrate (KagedStore  *self,
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

    case 2:
      if (!migrate_step (self, 3, schema_v3, error))
        return FALSE;
      G_GNUC_FALLTHROUGH;

    case 3:
      if (!migrate_step (self, 4, schema_v4, error))
        return FALSE;
      G_GNUC_FALLTHROUGH;

    case 4:
      if (!migrate_step (self, 5, _kaged_store_schema_v5, error))
        return FALSE;
      G_GNUC_FALLTHROUGH;

    case 5:
      if (!migrate_step (self, 6, _kaged_store_schema_v6, error))
        return FALSE;
      G_GNUC_FALLTHROUGH;

    case 6:
      if (!migrate_step (self, 7, _kaged_store_schema_v7, error))
        return FALSE;
      G_GNUC_FALLTHROUGH;

    case 7:
      if (!migrate_step (self, 8, schema_v8, error))
        return FALSE;
      G_GNUC_FALLTHROUGH;

    case KAGED_STORE_SCHEMA_VERSION:
      break;

    default:
      g_assert_not_reached ();
    }

  return TRUE;
}

