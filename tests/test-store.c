/* test-store.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>

#include "kaged-clock.h"
#include "kaged-store.h"
#include "kaged-store-private.h"

#define T0 1750000000000

typedef struct
{
  char *dir;
  char *path;
  KagedClock *clock;
} Fixture;

static void
remove_tree (const char *path)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR) && !g_file_test (path, G_FILE_TEST_IS_SYMLINK))
    {
      g_autoptr(GDir) dir = g_dir_open (path, 0, NULL);
      const char *name;

      while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *child = g_build_filename (path, name, NULL);
          remove_tree (child);
        }
      g_rmdir (path);
    }
  else
    {
      g_unlink (path);
    }
}

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  user_data)
{
  g_autoptr(GError) error = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  fixture->path = g_build_filename (fixture->dir, "kaged.db", NULL);
  fixture->clock = kaged_fake_clock_new (T0);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  user_data)
{
  remove_tree (fixture->dir);
  g_clear_pointer (&fixture->dir, g_free);
  g_clear_pointer (&fixture->path, g_free);
  g_clear_object (&fixture->clock);
}

static KagedStore *
open_store (Fixture *fixture)
{
  g_autoptr(GError) error = NULL;
  KagedStore *store = kaged_store_open_with_clock (fixture->path, fixture->clock, &error);

  g_assert_no_error (error);
  g_assert_nonnull (store);
  return store;
}

static sqlite3 *
raw_open (const char *path)
{
  sqlite3 *db = NULL;

  g_assert_cmpint (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
                   ==, SQLITE_OK);
  sqlite3_extended_result_codes (db, TRUE);
  return db;
}

static int
raw_exec (sqlite3    *db,
          const char *sql)
{
  return sqlite3_exec (db, sql, NULL, NULL, NULL);
}

static gint64
raw_int (sqlite3    *db,
         const char *sql)
{
  sqlite3_stmt *stmt = NULL;
  gint64 value;

  g_assert_cmpint (sqlite3_prepare_v2 (db, sql, -1, &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_step (stmt), ==, SQLITE_ROW);
  value = sqlite3_column_int64 (stmt, 0);
  sqlite3_finalize (stmt);
  return value;
}

static char *
raw_text (sqlite3    *db,
          const char *sql)
{
  sqlite3_stmt *stmt = NULL;
  char *value;

  g_assert_cmpint (sqlite3_prepare_v2 (db, sql, -1, &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_step (stmt), ==, SQLITE_ROW);
  value = g_strdup ((const char *)sqlite3_column_text (stmt, 0));
  sqlite3_finalize (stmt);
  return value;
}

/* Every schema object as one string, to compare two databases' schemas. */
static char *
raw_schema (const char *path)
{
  sqlite3 *db = raw_open (path);
  char *schema = raw_text (db,
                           "SELECT group_concat (type || ' ' || name || ': ' || coalesce (sql, ''), "
                           "char (10)) FROM (SELECT * FROM sqlite_schema ORDER BY name)");

  sqlite3_close (db);
  return schema;
}

static GBytes *
read_bytes (const char *path)
{
  g_autoptr(GError) error = NULL;
  char *contents = NULL;
  gsize length = 0;

  g_file_get_contents (path, &contents, &length, &error);
  g_assert_no_error (error);
  return g_bytes_new_take (contents, length);
}

static KagedSession *
add_session (KagedStore *store,
             const char *title)
{
  g_autoptr(GError) error = NULL;
  KagedSession *session = kaged_store_create_session (store, title, &error);

  g_assert_no_error (error);
  g_assert_nonnull (session);
  return session;
}

static gint64
add_operator (KagedStore *store,
              gint64      session_id,
              const char *content)
{
  g_autoptr(KagedMessage) message = kaged_message_new ();
  g_autoptr(GError) error = NULL;

  kaged_message_set_session_id (message, session_id);
  kaged_message_set_role (message, KAGED_MESSAGE_ROLE_OPERATOR);
  kaged_message_set_content (message, content);
  g_assert_true (kaged_store_append_message (store, message, &error));
  g_assert_no_error (error);
  g_assert_cmpint (kaged_message_get_id (message), >, 0);
  return kaged_message_get_id (message);
}

static gint64
add_run (KagedStore     *store,
         gint64          session_id,
         gint64          anchor_id,
         KagedRunStatus  status)
{
  g_autoptr(KagedRun) run = kaged_run_new ();
  g_autoptr(GError) error = NULL;

  kaged_run_set_session_id (run, session_id);
  kaged_run_set_anchor_id (run, anchor_id);
  kaged_run_set_status (run, status);
  g_assert_true (kaged_store_create_run (store, run, &error));
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_id (run), >, 0);
  return kaged_run_get_id (run);
}

static gint64
add_agent (KagedStore         *store,
           gint64              session_id,
           gint64              run_id,
           const char         *content,
           KagedMessageStatus  status)
{
  g_autoptr(KagedMessage) message = kaged_message_new ();
  g_autoptr(GError) error = NULL;

  kaged_message_set_session_id (message, session_id);
  kaged_message_set_role (message, KAGED_MESSAGE_ROLE_AGENT);
  kaged_message_set_run_id (message, run_id);
  kaged_message_set_status (message, status);
  kaged_message_set_content (message, content);
  g_assert_true (kaged_store_append_message (store, message, &error));
  g_assert_no_error (error);
  return kaged_message_get_id (message);
}

/* An operator message and its reply; returns the operator message's id. */
static gint64
add_turn (KagedStore *store,
          gint64      session_id,
          guint       n)
{
  g_autofree char *question = g_strdup_printf ("Question %u", n);
  g_autofree char *answer = g_strdup_printf ("Answer %u", n);
  gint64 operator_id = add_operator (store, session_id, question);
  gint64 run_id = add_run (store, session_id, operator_id, KAGED_RUN_STATUS_SUCCEEDED);

  add_agent (store, session_id, run_id, answer, KAGED_MESSAGE_STATUS_COMPLETE);
  return operator_id;
}

static GArray *
ids_of (GPtrArray *messages)
{
  GArray *ids = g_array_new (FALSE, FALSE, sizeof (gint64));

  for (guint i = 0; i < messages->len; i++)
    {
      gint64 id = kaged_message_get_id (g_ptr_array_index (messages, i));
      g_array_append_val (ids, id);
    }
  return ids;
}

static void
assert_ids (GArray       *ids,
            const gint64 *expected,
            guint         n_expected)
{
  g_assert_cmpuint (ids->len, ==, n_expected);
  for (guint i = 0; i < n_expected; i++)
    g_assert_cmpint (g_array_index (ids, gint64, i), ==, expected[i]);
}

static GPtrArray *
list_all (KagedStore *store,
          gint64      session_id,
          gboolean    include_superseded)
{
  g_autoptr(GError) error = NULL;
  GPtrArray *messages = kaged_store_list_messages (store, session_id, include_superseded, 0, 0,
                                                   &error);

  g_assert_no_error (error);
  g_assert_nonnull (messages);
  return messages;
}

/* --- Tests ------------------------------------------------------------- */

static void
test_default_path (void)
{
  g_autofree char *with_dir = kaged_store_default_path ("/srv/kaged-data");
  g_autofree char *xdg = kaged_store_default_path (NULL);
  g_autofree char *expected = g_build_filename (g_get_user_data_dir (), "kaged", "kaged.db", NULL);

  g_assert_cmpstr (with_dir, ==, "/srv/kaged-data/kaged.db");
  g_assert_cmpstr (xdg, ==, expected);
}

static void
test_create_reopen (Fixture       *fixture,
                    gconstpointer  user_data)
{
  g_autofree char *nested_dir = g_build_filename (fixture->dir, "data", "kaged", NULL);
  g_autofree char *path = g_build_filename (nested_dir, "kaged.db", NULL);
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(GPtrArray) sessions = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GError) error = NULL;
  GStatBuf st;
  gint64 session_id;
  sqlite3 *db;

  store = kaged_store_open_with_clock (path, fixture->clock, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_store_get_path (store), ==, path);
  g_assert_cmpuint (kaged_store_get_interrupted_runs (store)->len, ==, 0);
  g_assert_cmpuint (kaged_store_get_queued_runs (store)->len, ==, 0);

  /* The missing folders and the file are created private. */
  g_assert_cmpint (g_stat (nested_dir, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0700);
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0600);

  session = add_session (store, "Holiday");
  session_id = kaged_session_get_id (session);
  g_assert_cmpint (kaged_session_get_created_at (session), ==, T0);
  add_turn (store, session_id, 1);
  g_clear_object (&store);

  store = kaged_store_open_with_clock (path, fixture->clock, &error);
  g_assert_no_error (error);

  sessions = kaged_store_list_sessions (store, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (sessions->len, ==, 1);
  g_assert_cmpstr (kaged_session_get_title (g_ptr_array_index (sessions, 0)), ==, "Holiday");

  messages = list_all (store, session_id, FALSE);
  g_assert_cmpuint (messages->len, ==, 2);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (messages, 0)), ==, "Question 1");
  g_assert_cmpint (kaged_message_get_role (g_ptr_array_index (messages, 0)), ==,
                   KAGED_MESSAGE_ROLE_OPERATOR);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (messages, 1)), ==, "Answer 1");
  g_assert_cmpint (kaged_message_get_status (g_ptr_array_index (messages, 1)), ==,
                   KAGED_MESSAGE_STATUS_COMPLETE);
  g_assert_cmpint (kaged_message_get_created_at (g_ptr_array_index (messages, 1)), ==, T0);

  g_assert_true (kaged_store_rename_session (store, session_id, "Holiday in May", &error));
  g_assert_no_error (error);
  g_clear_object (&session);
  session = kaged_store_get_session (store, session_id, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_session_get_title (session), ==, "Holiday in May");

  g_assert_null (kaged_store_get_session (store, session_id + 100, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_assert_false (kaged_store_rename_session (store, session_id + 100, "x", &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_clear_object (&store);

  db = raw_open (path);
  g_assert_cmpint (raw_int (db, "PRAGMA user_version"), ==, KAGED_STORE_SCHEMA_VERSION);
  g_assert_cmpint (raw_int (db, "PRAGMA application_id"), ==, 0x4B414744);
  {
    g_autofree char *mode = raw_text (db, "PRAGMA journal_mode");
    g_assert_cmpstr (mode, ==, "wal");
  }
  sqlite3_close (db);
}

/* Checks a database migrated from tests/fixtures/store/schema-v1.sql (and
 * every later fixture, which keeps the same rows). */
static void
check_migrated_rows (KagedStore *store)
{
  g_autoptr(GPtrArray) current = NULL;
  g_autoptr(GPtrArray) all = NULL;
  g_autoptr(GPtrArray) versions = NULL;
  g_autoptr(GPtrArray) interrupted = NULL;
  g_autoptr(KagedRun) failed = NULL;
  g_autoptr(KagedMessage) streaming = NULL;
  g_autoptr(KagedStoreRetryState) retry = NULL;
  g_autoptr(GError) error = NULL;
  GPtrArray *queued;
  GPtrArray *attempts;
  KagedMessage *message;
  const KagedAttempt *attempt;

  all = list_all (store, 1, TRUE);
  g_assert_cmpuint (all->len, ==, 8);
  current = list_all (store, 1, FALSE);
  g_assert_cmpuint (current->len, ==, 7);

  message = g_ptr_array_index (all, 3);
  g_assert_cmpint (kaged_message_get_id (message), ==, 4);
  g_assert_cmpint (kaged_message_get_superseded_by_run (message), ==, 3);
  g_assert_cmpint (kaged_message_get_status (message), ==, KAGED_MESSAGE_STATUS_FAILED);
  g_assert_true (kaged_message_get_retryable (message));
  g_assert_cmpint (kaged_message_get_retry_class (message), ==, KAGED_RETRY_CLASS_RATE_LIMITED);
  g_assert_cmpint (kaged_message_get_retry_after_until (message), ==, 1700000160000);
  g_assert_cmpstr (kaged_message_get_error_message (message), ==, "Too many requests");
  g_assert_false (kaged_message_get_compacted (message));

  message = g_ptr_array_index (all, 0);
  g_assert_cmpstr (kaged_message_get_content (message), ==, "Plan three days in Lisbon.");
  g_assert_cmpint (kaged_message_get_created_at (message), ==, 1700000000000);

  versions = kaged_store_list_versions (store, 3, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (versions->len, ==, 2);
  g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (versions, 0)), ==, 4);
  g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (versions, 1)), ==, 5);

  failed = kaged_store_get_run (store, 2, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_http_status (failed), ==, 429);
  attempts = kaged_run_get_attempts (failed);
  g_assert_cmpuint (attempts->len, ==, 2);
  attempt = g_ptr_array_index (attempts, 0);
  g_assert_cmpint (attempt->wait_ms, ==, 1000);
  g_assert_cmpstr (attempt->wait_source, ==, "retry-after");
  g_assert_cmpint (attempt->retry_class, ==, KAGED_RETRY_CLASS_RATE_LIMITED);

  /* The run left running was recovered on open, the queued one reported. */
  interrupted = g_ptr_array_ref (kaged_store_get_interrupted_runs (store));
  g_assert_cmpuint (interrupted->len, ==, 1);
  g_assert_cmpint (kaged_run_get_id (g_ptr_array_index (interrupted, 0)), ==, 4);
  g_assert_cmpint (kaged_run_get_retry_class (g_ptr_array_index (interrupted, 0)), ==,
                   KAGED_RETRY_CLASS_INTERRUPTED);
  streaming = kaged_store_get_message (store, 7, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_message_get_status (streaming), ==, KAGED_MESSAGE_STATUS_INTERRUPTED);
  g_assert_cmpstr (kaged_message_get_content (streaming), ==, "Bifanas are cheap and");
  queued = kaged_store_get_queued_runs (store);
  g_assert_cmpuint (queued->len, ==, 1);
  g_assert_cmpint (kaged_run_get_id (g_ptr_array_index (queued, 0)), ==, 5);

  /* What version 2 added works on the migrated rows. */
  retry = kaged_store_get_retry_state (store, 1, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (retry->state, ==, "idle");
  g_free (retry->state);
  retry->state = g_strdup ("armed");
  retry->attempt = 2;
  g_assert_true (kaged_store_set_retry_state (store, retry, &error));
  g_assert_no_error (error);

  /* What version 4 added: the reason a retry waits is kept with it. */
  retry->retry_class = KAGED_RETRY_CLASS_RATE_LIMITED;
  retry->http_status = 429;
  retry->retry_after_until = 1700000160000;
  retry->advised_wait_ms = 60000;
  retry->wait_source = g_strdup ("retry-after");
  retry->seen_run_id = 3;
  retry->retry_run_id = 0;
  g_assert_true (kaged_store_set_retry_state (store, retry, &error));
  g_assert_no_error (error);
  g_clear_pointer (&retry, kaged_store_retry_state_free);
  retry = kaged_store_get_retry_state (store, 1, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (retry->state, ==, "armed");
  g_assert_cmpint (retry->retry_class, ==, KAGED_RETRY_CLASS_RATE_LIMITED);
  g_assert_cmpuint (retry->http_status, ==, 429);
  g_assert_cmpint (retry->retry_after_until, ==, 1700000160000);
  g_assert_cmpint (retry->advised_wait_ms, ==, 60000);
  g_assert_cmpstr (retry->wait_source, ==, "retry-after");
  g_assert_cmpint (retry->seen_run_id, ==, 3);
  g_assert_cmpint (retry->retry_run_id, ==, 0);
}

/* A retry armed under version 3 kept only the scheduler's own fields:
 * migrated, it carries the reason it waits, taken from the run it was
 * armed on. */
static void
check_migrated_retry (KagedStore *store)
{
  g_autoptr(KagedStoreRetryState) retry = NULL;
  g_autoptr(GError) error = NULL;

  retry = kaged_store_get_retry_state (store, 4, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (retry->state, ==, "armed");
  g_assert_cmpuint (retry->attempt, ==, 2);
  g_assert_cmpint (retry->next_eligible_at, ==, 1700002031000);
  g_assert_cmpint (retry->anchor_id, ==, 15);
  g_assert_cmpint (retry->retry_class, ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpuint (retry->http_status, ==, 529);
  g_assert_cmpint (retry->retry_after_until, ==, 1700002031000);
  g_assert_cmpint (retry->advised_wait_ms, ==, 30000);
  g_assert_cmpstr (retry->wait_source, ==, "retry-after");
  g_assert_cmpint (retry->seen_run_id, ==, 9);
}

static void
test_migrations (Fixture       *fixture,
                 gconstpointer  user_data)
{
  g_autofree char *fresh_path = g_build_filename (fixture->dir, "fresh.db", NULL);
  g_autofree char *fresh_schema = NULL;
  g_autoptr(KagedStore) fresh = NULL;
  g_autoptr(GError) error = NULL;

  fresh = kaged_store_open (fresh_path, &error);
  g_assert_no_error (error);
  g_clear_object (&fresh);
  fresh_schema = raw_schema (fresh_path);

  /* Every earlier version must have its fixture. */
  for (guint version = 1; version < KAGED_STORE_SCHEMA_VERSION; version++)
    {
      g_autofree char *name = g_strdup_printf ("schema-v%u.sql", version);
      g_autofree char *fixture_path = g_test_build_filename (G_TEST_DIST, "fixtures", "store",
                                                             name, NULL);
      g_autofree char *db_name = g_strdup_printf ("v%u.db", version);
      g_autofree char *db_path = g_build_filename (fixture->dir, db_name, NULL);
      g_autofree char *sql = NULL;
      g_autofree char *migrated_schema = NULL;
      g_autoptr(KagedStore) store = NULL;
      sqlite3 *db;

      g_test_message ("Migrating %s", name);
      g_file_get_contents (fixture_path, &sql, NULL, &error);
      g_assert_no_error (error);

      db = raw_open (db_path);
      g_assert_cmpint (raw_exec (db, sql), ==, SQLITE_OK);
      g_assert_cmpint (raw_int (db, "PRAGMA user_version"), ==, version);
      sqlite3_close (db);

      store = kaged_store_open_with_clock (db_path, fixture->clock, &error);
      g_assert_no_error (error);
      check_migrated_rows (store);
      if (version >= 3)
        check_migrated_retry (store);
      if (version >= 2)
        {
          /* Replies written after later questions read in conversation
           * order once migrated. */
          g_autoptr(GPtrArray) queued = list_all (store, 3, FALSE);
          g_autoptr(GArray) ids = ids_of (queued);
          const gint64 expected[] = { 9, 10, 11, 13, 12, 14 };

          assert_ids (ids, expected, G_N_ELEMENTS (expected));
        }
      g_clear_object (&store);

      db = raw_open (db_path);
      g_assert_cmpint (raw_int (db, "PRAGMA user_version"), ==, KAGED_STORE_SCHEMA_VERSION);
      g_assert_cmpint (raw_int (db, "SELECT count (*) FROM pragma_foreign_key_check"), ==, 0);
      /* Every reply knows the operator message its run answers. */
      g_assert_cmpint (raw_int (db, "SELECT count (*) FROM messages m JOIN runs r "
                                    "ON r.id = m.run_id WHERE m.role = 'agent' AND "
                                    "m.anchor_id IS NOT r.anchor_id"), ==, 0);
      g_assert_cmpint (raw_int (db, "SELECT count (*) FROM messages WHERE role <> 'agent' "
                                    "AND anchor_id IS NOT NULL"), ==, 0);
      {
        g_autofree char *check = raw_text (db, "PRAGMA integrity_check");
        g_assert_cmpstr (check, ==, "ok");
      }
      sqlite3_close (db);

      /* Migrating gives exactly the schema a new database gets. */
      migrated_schema = raw_schema (db_path);
      g_assert_cmpstr (migrated_schema, ==, fresh_schema);
    }
}

static void
test_migration_rolls_back (Fixture       *fixture,
                           gconstpointer  user_data)
{
  g_autofree char *fixture_path = g_test_build_filename (G_TEST_DIST, "fixtures", "store",
                                                         "schema-v1.sql", NULL);
  g_autofree char *sql = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(GError) error = NULL;
  sqlite3 *db;

  g_file_get_contents (fixture_path, &sql, NULL, &error);
  g_assert_no_error (error);

  /* A table in the way makes the step to version 2 fail half-way. */
  db = raw_open (fixture->path);
  g_assert_cmpint (raw_exec (db, sql), ==, SQLITE_OK);
  g_assert_cmpint (raw_exec (db, "CREATE TABLE retry_states (x)"), ==, SQLITE_OK);
  sqlite3_close (db);

  store = kaged_store_open (fixture->path, &error);
  g_assert_null (store);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);

  db = raw_open (fixture->path);
  g_assert_cmpint (raw_int (db, "PRAGMA user_version"), ==, 1);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM sqlite_schema WHERE name = "
                                "'message_compactions'"), ==, 0);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM messages"), ==, 8);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM runs WHERE status = 'running'"), ==, 1);
  sqlite3_close (db);
}

static void
test_operator_immutable (Fixture       *fixture,
                         gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Immutable");
  g_autoptr(KagedMessage) operator = NULL;
  g_autoptr(KagedMessage) agent = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 operator_id;
  gint64 agent_id;
  gint64 run_id;
  g_autofree char *sql = NULL;
  sqlite3 *db;

  operator_id = add_operator (store, session_id, "Keep me");
  run_id = add_run (store, session_id, operator_id, KAGED_RUN_STATUS_RUNNING);
  agent_id = add_agent (store, session_id, run_id, "Partial", KAGED_MESSAGE_STATUS_STREAMING);

  /* Through the API. */
  operator = kaged_store_get_message (store, operator_id, &error);
  g_assert_no_error (error);
  kaged_message_set_content (operator, "Changed");
  g_assert_false (kaged_store_update_message (store, operator, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IMMUTABLE);
  g_clear_error (&error);

  /* An agent message may change. */
  agent = kaged_store_get_message (store, agent_id, &error);
  g_assert_no_error (error);
  kaged_message_set_content (agent, "Partial and complete");
  kaged_message_set_status (agent, KAGED_MESSAGE_STATUS_FAILED);
  kaged_message_set_error_message (agent, "Overloaded");
  kaged_message_set_retryable (agent, TRUE);
  kaged_message_set_retry_class (agent, KAGED_RETRY_CLASS_OVERLOADED);
  kaged_message_set_retry_after_until (agent, T0 + 5000);
  g_assert_true (kaged_store_update_message (store, agent, &error));
  g_assert_no_error (error);
  g_clear_object (&agent);
  agent = kaged_store_get_message (store, agent_id, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_message_get_content (agent), ==, "Partial and complete");
  g_assert_cmpint (kaged_message_get_status (agent), ==, KAGED_MESSAGE_STATUS_FAILED);
  g_assert_cmpstr (kaged_message_get_error_message (agent), ==, "Overloaded");
  g_assert_true (kaged_message_get_retryable (agent));
  g_assert_cmpint (kaged_message_get_retry_class (agent), ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpint (kaged_message_get_retry_after_until (agent), ==, T0 + 5000);

  kaged_message_set_id (agent, agent_id + 100);
  g_assert_false (kaged_store_update_message (store, agent, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_clear_object (&store);

  /* Through raw SQL on the file, with no help from the store's code. */
  db = raw_open (fixture->path);
  g_assert_cmpint (raw_exec (db, "PRAGMA foreign_keys = ON"), ==, SQLITE_OK);

  sql = g_strdup_printf ("UPDATE messages SET content = 'Changed' WHERE id = %" G_GINT64_FORMAT,
                         operator_id);
  g_assert_cmpint (raw_exec (db, sql), ==, SQLITE_CONSTRAINT_TRIGGER);
  g_clear_pointer (&sql, g_free);
  g_assert_cmpint (raw_exec (db, "UPDATE messages SET role = 'agent' WHERE role = 'operator'"), ==,
                   SQLITE_CONSTRAINT_TRIGGER);
  g_assert_cmpint (raw_exec (db, "UPDATE messages SET role = 'operator' WHERE role = 'agent'"), ==,
                   SQLITE_CONSTRAINT_TRIGGER);
  g_assert_cmpint (raw_exec (db, "DELETE FROM messages WHERE role = 'operator'"), ==,
                   SQLITE_CONSTRAINT_TRIGGER);
  g_assert_cmpint (raw_exec (db, "DELETE FROM messages"), ==, SQLITE_CONSTRAINT_TRIGGER);

  /* Even with foreign keys off, nothing removes a message of a live session. */
  g_assert_cmpint (raw_exec (db, "PRAGMA foreign_keys = OFF"), ==, SQLITE_OK);
  g_assert_cmpint (raw_exec (db, "DELETE FROM messages WHERE role = 'operator'"), ==,
                   SQLITE_CONSTRAINT_TRIGGER);
  g_assert_cmpint (raw_exec (db, "PRAGMA foreign_keys = ON"), ==, SQLITE_OK);

  sql = g_strdup_printf ("SELECT content FROM messages WHERE id = %" G_GINT64_FORMAT, operator_id);
  {
    g_autofree char *content = raw_text (db, sql);
    g_assert_cmpstr (content, ==, "Keep me");
  }
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM messages"), ==, 2);

  /* Agent rows may be updated in raw SQL too. */
  g_assert_cmpint (raw_exec (db, "UPDATE messages SET content = 'x' WHERE role = 'agent'"), ==,
                   SQLITE_OK);

  /* Deleting the whole session is the one way out. */
  g_assert_cmpint (raw_exec (db, "DELETE FROM sessions"), ==, SQLITE_OK);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM messages"), ==, 0);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM runs"), ==, 0);
  sqlite3_close (db);
}

static void
test_supersede (Fixture       *fixture,
                gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Supersede");
  g_autoptr(KagedSession) other = add_session (store, "Other");
  g_autoptr(GArray) ids = NULL;
  g_autoptr(GArray) current_ids = NULL;
  g_autoptr(GPtrArray) current = NULL;
  g_autoptr(GPtrArray) all = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 other_id = kaged_session_get_id (other);
  gint64 q1, q2, q3, q4;
  gint64 a1, a2, a3;
  gint64 r1, r2, r3, rerun2, rerun1;
  gint64 a2b, q5;
  gint64 other_q;
  guint n = 0;

  q1 = add_operator (store, session_id, "q1");
  r1 = add_run (store, session_id, q1, KAGED_RUN_STATUS_SUCCEEDED);
  a1 = add_agent (store, session_id, r1, "a1", KAGED_MESSAGE_STATUS_COMPLETE);
  q2 = add_operator (store, session_id, "q2");
  r2 = add_run (store, session_id, q2, KAGED_RUN_STATUS_SUCCEEDED);
  a2 = add_agent (store, session_id, r2, "a2", KAGED_MESSAGE_STATUS_COMPLETE);
  q3 = add_operator (store, session_id, "q3");
  r3 = add_run (store, session_id, q3, KAGED_RUN_STATUS_FAILED);
  a3 = add_agent (store, session_id, r3, "a3", KAGED_MESSAGE_STATUS_FAILED);
  q4 = add_operator (store, session_id, "q4");
  other_q = add_operator (store, other_id, "elsewhere");

  /* Regenerate from q2: a2, q3, a3 and q4 go, q1, a1 and q2 stay. */
  rerun2 = add_run (store, session_id, q2, KAGED_RUN_STATUS_QUEUED);
  g_assert_true (kaged_store_supersede_after (store, session_id, q2, rerun2, &ids, &error));
  g_assert_no_error (error);
  assert_ids (ids, (const gint64[]) { a2, q3, a3, q4 }, 4);
  g_clear_pointer (&ids, g_array_unref);

  current = list_all (store, session_id, FALSE);
  current_ids = ids_of (current);
  assert_ids (current_ids, (const gint64[]) { q1, a1, q2 }, 3);
  g_clear_pointer (&current_ids, g_array_unref);
  g_clear_pointer (&current, g_ptr_array_unref);

  all = list_all (store, session_id, TRUE);
  g_assert_cmpuint (all->len, ==, 7);
  for (guint i = 0; i < all->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (all, i);
      gint64 id = kaged_message_get_id (message);
      gboolean later = id == a2 || id == q3 || id == a3 || id == q4;

      g_assert_cmpint (kaged_message_get_superseded_by_run (message), ==, later ? rerun2 : 0);
      g_assert_cmpint (kaged_message_is_superseded (message), ==, later);
    }
  /* Superseded operator messages keep their words. */
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (all, 6)), ==, "q4");
  g_clear_pointer (&all, g_ptr_array_unref);

  g_assert_true (kaged_store_count_messages (store, session_id, FALSE, &n, &error));
  g_assert_cmpuint (n, ==, 3);
  g_assert_true (kaged_store_count_messages (store, session_id, TRUE, &n, &error));
  g_assert_cmpuint (n, ==, 7);

  /* The new reply and a new question are current. */
  a2b = add_agent (store, session_id, rerun2, "a2, again", KAGED_MESSAGE_STATUS_COMPLETE);
  q5 = add_operator (store, session_id, "q5");

  /* A second supersede, from further back, returns only what was still
   * current: the first supersession is kept as it was. */
  rerun1 = add_run (store, session_id, q1, KAGED_RUN_STATUS_QUEUED);
  g_assert_true (kaged_store_supersede_after (store, session_id, q1, rerun1, &ids, &error));
  g_assert_no_error (error);
  assert_ids (ids, (const gint64[]) { a1, q2, a2b, q5 }, 4);
  g_clear_pointer (&ids, g_array_unref);

  current = list_all (store, session_id, FALSE);
  current_ids = ids_of (current);
  assert_ids (current_ids, (const gint64[]) { q1 }, 1);
  g_clear_pointer (&current_ids, g_array_unref);
  g_clear_pointer (&current, g_ptr_array_unref);
  {
    g_autoptr(KagedMessage) message = kaged_store_get_message (store, q3, &error);
    g_assert_no_error (error);
    g_assert_cmpint (kaged_message_get_superseded_by_run (message), ==, rerun2);
  }

  /* Nothing after the last message: an empty list, not an error. */
  {
    gint64 rerun = add_run (store, session_id, q1, KAGED_RUN_STATUS_QUEUED);

    g_assert_true (kaged_store_supersede_after (store, session_id, q1, rerun, &ids, &error));
    g_assert_no_error (error);
    g_assert_cmpuint (ids->len, ==, 0);
    g_clear_pointer (&ids, g_array_unref);
  }

  /* Bad requests change nothing. */
  g_assert_false (kaged_store_supersede_after (store, session_id, other_q, rerun1, &ids, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
  g_clear_error (&error);
  g_assert_false (kaged_store_supersede_after (store, session_id, q3, rerun1, &ids, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
  g_clear_error (&error);
  g_assert_false (kaged_store_supersede_after (store, session_id, 999999, rerun1, &ids, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_assert_false (kaged_store_supersede_after (store, session_id, q1, 999999, &ids, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_assert_null (ids);

  g_assert_true (kaged_store_count_messages (store, session_id, FALSE, &n, &error));
  g_assert_cmpuint (n, ==, 1);
  g_assert_true (kaged_store_count_messages (store, other_id, FALSE, &n, &error));
  g_assert_cmpuint (n, ==, 1);
}

static void
test_versions (Fixture       *fixture,
               gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Versions");
  g_autoptr(GPtrArray) versions = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 q1, q2;
  gint64 replies[3];
  gint64 other_reply;

  q1 = add_operator (store, session_id, "Write a haiku");
  for (guint i = 0; i < G_N_ELEMENTS (replies); i++)
    {
      g_autofree char *text = g_strdup_printf ("Haiku %u", i + 1);
      gint64 run_id = add_run (store, session_id, q1, KAGED_RUN_STATUS_SUCCEEDED);
      g_autoptr(GArray) ids = NULL;

      if (i > 0)
        {
          g_assert_true (kaged_store_supersede_after (store, session_id, q1, run_id, &ids, &error));
          g_assert_no_error (error);
          assert_ids (ids, &replies[i - 1], 1);
        }
      replies[i] = add_agent (store, session_id, run_id, text, KAGED_MESSAGE_STATUS_COMPLETE);
    }
  q2 = add_operator (store, session_id, "Another");
  other_reply = add_agent (store, session_id,
                           add_run (store, session_id, q2, KAGED_RUN_STATUS_SUCCEEDED),
                           "Other", KAGED_MESSAGE_STATUS_COMPLETE);

  versions = kaged_store_list_versions (store, q1, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (versions->len, ==, 3);
  for (guint i = 0; i < versions->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (versions, i);

      g_assert_cmpint (kaged_message_get_id (message), ==, replies[i]);
      g_assert_cmpint (kaged_message_is_superseded (message), ==, i < 2);
    }

  /* Every version, and the operator message itself, resolve to the anchor. */
  for (guint i = 0; i < G_N_ELEMENTS (replies); i++)
    {
      g_autoptr(KagedMessage) anchor = kaged_store_resolve_anchor (store, replies[i], &error);

      g_assert_no_error (error);
      g_assert_cmpint (kaged_message_get_id (anchor), ==, q1);
      g_assert_cmpint (kaged_message_get_role (anchor), ==, KAGED_MESSAGE_ROLE_OPERATOR);
    }
  {
    g_autoptr(KagedMessage) anchor = kaged_store_resolve_anchor (store, q1, &error);
    g_assert_no_error (error);
    g_assert_cmpint (kaged_message_get_id (anchor), ==, q1);
  }
  {
    g_autoptr(KagedMessage) anchor = kaged_store_resolve_anchor (store, other_reply, &error);
    g_assert_no_error (error);
    g_assert_cmpint (kaged_message_get_id (anchor), ==, q2);
  }
  g_assert_null (kaged_store_resolve_anchor (store, 424242, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
}

static void
test_interrupted (Fixture       *fixture,
                  gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Crash");
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 q1, q2, q3, q4;
  gint64 running_id, queued_id, done_id;
  gint64 partial_id, done_reply, stuck_id;
  GPtrArray *runs;

  q1 = add_operator (store, session_id, "First");
  done_id = add_run (store, session_id, q1, KAGED_RUN_STATUS_SUCCEEDED);
  done_reply = add_agent (store, session_id, done_id, "Done", KAGED_MESSAGE_STATUS_COMPLETE);
  q2 = add_operator (store, session_id, "Second");
  running_id = add_run (store, session_id, q2, KAGED_RUN_STATUS_RUNNING);
  partial_id = add_agent (store, session_id, running_id, "Half a rep",
                          KAGED_MESSAGE_STATUS_STREAMING);
  q3 = add_operator (store, session_id, "Third");
  queued_id = add_run (store, session_id, q3, KAGED_RUN_STATUS_QUEUED);
  /* A reply left streaming although its run was already recorded failed. */
  q4 = add_operator (store, session_id, "Fourth");
  stuck_id = add_agent (store, session_id, add_run (store, session_id, q4, KAGED_RUN_STATUS_FAILED),
                        "Stuck", KAGED_MESSAGE_STATUS_STREAMING);
  g_clear_object (&store);

  /* The program starts again a minute later. */
  kaged_fake_clock_set_wall_ms (KAGED_FAKE_CLOCK (fixture->clock), T0 + 60000);
  store = open_store (fixture);

  runs = kaged_store_get_interrupted_runs (store);
  g_assert_cmpuint (runs->len, ==, 1);
  g_assert_cmpint (kaged_run_get_id (g_ptr_array_index (runs, 0)), ==, running_id);
  runs = kaged_store_get_queued_runs (store);
  g_assert_cmpuint (runs->len, ==, 1);
  g_assert_cmpint (kaged_run_get_id (g_ptr_array_index (runs, 0)), ==, queued_id);

  run = kaged_store_get_run (store, running_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_INTERRUPTED);
  g_assert_false (kaged_run_get_retryable (run));
  g_assert_cmpint (kaged_run_get_finished_at (run), ==, T0 + 60000);

  reply = kaged_store_get_message (store, partial_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_INTERRUPTED);
  g_assert_cmpint (kaged_message_get_retry_class (reply), ==, KAGED_RETRY_CLASS_INTERRUPTED);
  g_assert_cmpstr (kaged_message_get_content (reply), ==, "Half a rep");
  g_clear_object (&reply);

  reply = kaged_store_get_message (store, stuck_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_INTERRUPTED);
  g_assert_cmpstr (kaged_message_get_content (reply), ==, "Stuck");
  g_clear_object (&reply);

  reply = kaged_store_get_message (store, done_reply, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_COMPLETE);
  g_clear_object (&run);
  run = kaged_store_get_run (store, done_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_clear_object (&store);

  /* Recovered once: the next start finds nothing to recover. */
  store = open_store (fixture);
  g_assert_cmpuint (kaged_store_get_interrupted_runs (store)->len, ==, 0);
  g_assert_cmpuint (kaged_store_get_queued_runs (store)->len, ==, 1);
}

static void
test_paging (Fixture       *fixture,
             gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Long");
  g_autoptr(KagedSession) other = add_session (store, "Interleaved");
  g_autoptr(GArray) all_ids = g_array_new (FALSE, FALSE, sizeof (gint64));
  g_autoptr(GArray) superseded = NULL;
  g_autoptr(GArray) seen = g_array_new (FALSE, FALSE, sizeof (gint64));
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 anchor = 0;
  gint64 after = 0;
  gint64 before = 0;
  guint n_pages = 0;

  for (guint i = 0; i < 60; i++)
    {
      gint64 q = add_turn (store, session_id, i);

      /* Another session's messages fall between this one's ids. */
      add_turn (store, kaged_session_get_id (other), i);
      g_array_append_val (all_ids, q);
      q = q + 1;
      g_array_append_val (all_ids, q);
      if (i == 39)
        anchor = g_array_index (all_ids, gint64, all_ids->len - 2);
    }

  /* Forward pages of 25 see every message once, in order. */
  for (;;)
    {
      g_autoptr(GPtrArray) page = kaged_store_list_messages (store, session_id, FALSE, after, 25,
                                                             &error);
      g_assert_no_error (error);
      if (page->len == 0)
        break;
      g_assert_cmpuint (page->len, <=, 25);
      n_pages++;
      for (guint i = 0; i < page->len; i++)
        {
          gint64 id = kaged_message_get_id (g_ptr_array_index (page, i));

          g_assert_cmpint (kaged_message_get_session_id (g_ptr_array_index (page, i)), ==,
                           session_id);
          g_array_append_val (seen, id);
        }
      after = kaged_message_get_id (g_ptr_array_index (page, page->len - 1));
    }
  g_assert_cmpuint (n_pages, ==, 5);
  assert_ids (seen, (const gint64 *)(gpointer)all_ids->data, all_ids->len);

  /* Backward pages from the latest message end up in the same order. */
  g_array_set_size (seen, 0);
  for (;;)
    {
      g_autoptr(GPtrArray) page = kaged_store_list_messages_before (store, session_id, FALSE,
                                                                    before, 25, &error);
      g_assert_no_error (error);
      if (page->len == 0)
        break;
      for (guint i = page->len; i > 0; i--)
        {
          gint64 id = kaged_message_get_id (g_ptr_array_index (page, i - 1));
          g_array_prepend_val (seen, id);
        }
      for (guint i = 1; i < page->len; i++)
        g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (page, i - 1)), <,
                         kaged_message_get_id (g_ptr_array_index (page, i)));
      before = kaged_message_get_id (g_ptr_array_index (page, 0));
    }
  assert_ids (seen, (const gint64 *)(gpointer)all_ids->data, all_ids->len);

  /* After superseding the last 40 messages, current pages skip them and
   * pages with superseded ones still hold them in place. */
  {
    gint64 rerun = add_run (store, session_id, anchor, KAGED_RUN_STATUS_QUEUED);
    g_autoptr(GPtrArray) page = NULL;
    guint n = 0;

    g_assert_true (kaged_store_supersede_after (store, session_id, anchor, rerun, &superseded,
                                                &error));
    g_assert_no_error (error);
    g_assert_cmpuint (superseded->len, ==, 41);
    assert_ids (superseded, &g_array_index (all_ids, gint64, 79), 41);

    page = kaged_store_list_messages (store, session_id, FALSE, g_array_index (all_ids, gint64, 69),
                                      25, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (page->len, ==, 9);
    g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (page, 8)), ==, anchor);
    g_clear_pointer (&page, g_ptr_array_unref);

    page = kaged_store_list_messages (store, session_id, TRUE, anchor, 25, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (page->len, ==, 25);
    g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (page, 0)), ==,
                     g_array_index (all_ids, gint64, 79));
    g_clear_pointer (&page, g_ptr_array_unref);

    page = kaged_store_list_messages_before (store, session_id, FALSE, 0, 5, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (page->len, ==, 5);
    g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (page, 4)), ==, anchor);
    g_clear_pointer (&page, g_ptr_array_unref);

    g_assert_true (kaged_store_count_messages (store, session_id, FALSE, &n, &error));
    g_assert_cmpuint (n, ==, 79);
    g_assert_true (kaged_store_count_messages (store, session_id, TRUE, &n, &error));
    g_assert_cmpuint (n, ==, 120);
  }
}

static void
assert_open_fails_untouched (Fixture         *fixture,
                             KagedStoreError  code)
{
  g_autoptr(GBytes) before = read_bytes (fixture->path);
  g_autoptr(GBytes) after = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *basename = g_path_get_basename (fixture->path);

  store = kaged_store_open (fixture->path, &error);
  g_assert_null (store);
  g_assert_error (error, KAGED_STORE_ERROR, code);
  g_test_message ("%s", error->message);
  /* The message names the file. */
  g_assert_nonnull (strstr (error->message, basename));

  after = read_bytes (fixture->path);
  g_assert_true (g_bytes_equal (before, after));
}

/* Q2 and Q3 posted while A1 was written: every listing, count and
 * supersession follows conversation order, not the order rows were
 * written in. */
static void
test_conversation_order (Fixture       *fixture,
                         gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Queued");
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) superseded = NULL;
  g_autoptr(KagedRun) latest = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 q1, q2, q3, r1, r2, r3, r3b, a1, a2, a3, a3b;
  guint n = 0;

  q1 = add_operator (store, session_id, "Q1");
  r1 = add_run (store, session_id, q1, KAGED_RUN_STATUS_RUNNING);
  a1 = add_agent (store, session_id, r1, "A1", KAGED_MESSAGE_STATUS_STREAMING);
  q2 = add_operator (store, session_id, "Q2");
  r2 = add_run (store, session_id, q2, KAGED_RUN_STATUS_QUEUED);
  q3 = add_operator (store, session_id, "Q3");
  r3 = add_run (store, session_id, q3, KAGED_RUN_STATUS_QUEUED);
  a2 = add_agent (store, session_id, r2, "A2", KAGED_MESSAGE_STATUS_COMPLETE);
  a3 = add_agent (store, session_id, r3, "A3", KAGED_MESSAGE_STATUS_COMPLETE);

  {
    g_autoptr(GPtrArray) all = list_all (store, session_id, FALSE);
    g_autoptr(GArray) ids = ids_of (all);
    const gint64 expected[] = { q1, a1, q2, a2, q3, a3 };

    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }

  /* Pages from a message, before a message and at a position. */
  {
    g_autoptr(GPtrArray) page = kaged_store_list_messages (store, session_id, FALSE, a2, 2,
                                                           &error);
    g_autoptr(GArray) ids = NULL;
    const gint64 expected[] = { q3, a3 };

    g_assert_no_error (error);
    ids = ids_of (page);
    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }
  {
    g_autoptr(GPtrArray) page = kaged_store_list_messages_before (store, session_id, FALSE,
                                                                  q3, 2, &error);
    g_autoptr(GArray) ids = NULL;
    const gint64 expected[] = { q2, a2 };

    g_assert_no_error (error);
    ids = ids_of (page);
    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }
  {
    g_autoptr(GPtrArray) page = kaged_store_list_messages_at (store, session_id, FALSE, 2, 3,
                                                              FALSE, &error);
    g_autoptr(GArray) ids = NULL;
    const gint64 expected[] = { q2, a2, q3 };

    g_assert_no_error (error);
    ids = ids_of (page);
    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }
  {
    g_autoptr(GPtrArray) page = kaged_store_list_messages_at (store, session_id, FALSE, 1, 3,
                                                              TRUE, &error);
    g_autoptr(GArray) ids = NULL;
    const gint64 expected[] = { q2, a2, q3 };

    g_assert_no_error (error);
    ids = ids_of (page);
    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }

  g_assert_true (kaged_store_count_messages_after (store, session_id, FALSE, a2, &n, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (n, ==, 2);
  g_assert_true (kaged_store_count_messages_after (store, session_id, FALSE, q1, &n, &error));
  g_assert_cmpuint (n, ==, 5);

  /* Regenerating Q3 supersedes its reply only, not A2 written after it. */
  r3b = add_run (store, session_id, q3, KAGED_RUN_STATUS_RUNNING);
  g_assert_true (kaged_store_supersede_after (store, session_id, q3, r3b, &superseded, &error));
  g_assert_no_error (error);
  {
    const gint64 expected[] = { a3 };

    assert_ids (superseded, expected, G_N_ELEMENTS (expected));
  }
  a3b = add_agent (store, session_id, r3b, "A3 again", KAGED_MESSAGE_STATUS_COMPLETE);

  {
    g_autoptr(GPtrArray) all = list_all (store, session_id, TRUE);
    g_autoptr(GArray) ids = ids_of (all);
    const gint64 expected[] = { q1, a1, q2, a2, q3, a3, a3b };

    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }
  {
    g_autoptr(GPtrArray) versions = kaged_store_list_versions (store, q3, &error);
    g_autoptr(GArray) ids = NULL;
    const gint64 expected[] = { a3, a3b };

    g_assert_no_error (error);
    ids = ids_of (versions);
    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }

  /* The conversation ends with Q3's newest run, even once a run for an
   * earlier question is created later. */
  add_run (store, session_id, q2, KAGED_RUN_STATUS_QUEUED);
  latest = kaged_store_get_latest_run_in_conversation (store, session_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_id (latest), ==, r3b);
  g_clear_object (&latest);

  {
    g_autoptr(KagedSession) empty = add_session (store, "Empty");

    latest = kaged_store_get_latest_run_in_conversation (store, kaged_session_get_id (empty),
                                                         &error);
    g_assert_null (latest);
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  }
}

static void
test_not_a_database (Fixture       *fixture,
                     gconstpointer  user_data)
{
  g_autoptr(GError) error = NULL;
  GString *text = g_string_new (NULL);
  sqlite3 *db;

  for (guint i = 0; i < 400; i++)
    g_string_append_printf (text, "Line %u of someone's notes, not a database.\n", i);
  g_file_set_contents (fixture->path, text->str, text->len, &error);
  g_assert_no_error (error);
  g_string_free (text, TRUE);

  assert_open_fails_untouched (fixture, KAGED_STORE_ERROR_NOT_A_DATABASE);
  g_assert_true (g_unlink (fixture->path) == 0);

  /* An SQLite database of another program. */
  db = raw_open (fixture->path);
  g_assert_cmpint (raw_exec (db, "CREATE TABLE recipes (name TEXT); "
                                 "INSERT INTO recipes VALUES ('bread');"), ==, SQLITE_OK);
  sqlite3_close (db);
  assert_open_fails_untouched (fixture, KAGED_STORE_ERROR_NOT_A_DATABASE);
}

static void
test_too_new (Fixture       *fixture,
              gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "From the future");
  g_autofree char *sql = NULL;
  sqlite3 *db;

  add_turn (store, kaged_session_get_id (session), 1);
  g_clear_object (&store);

  db = raw_open (fixture->path);
  sql = g_strdup_printf ("PRAGMA user_version = %d", KAGED_STORE_SCHEMA_VERSION + 1);
  g_assert_cmpint (raw_exec (db, sql), ==, SQLITE_OK);
  /* Back to a plain rollback journal, so even the journal mode would show a write. */
  g_assert_cmpint (raw_exec (db, "PRAGMA journal_mode = DELETE"), ==, SQLITE_OK);
  sqlite3_close (db);

  assert_open_fails_untouched (fixture, KAGED_STORE_ERROR_TOO_NEW);
}

static void
test_locked (Fixture       *fixture,
             gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Busy");
  g_autoptr(GError) error = NULL;
  sqlite3 *holder;
  gint64 start;

  add_turn (store, kaged_session_get_id (session), 1);
  g_clear_object (&store);

  /* Another connection holds the database, as another process would. */
  holder = raw_open (fixture->path);
  g_assert_cmpint (raw_exec (holder, "BEGIN EXCLUSIVE"), ==, SQLITE_OK);

  start = g_get_monotonic_time ();
  assert_open_fails_untouched (fixture, KAGED_STORE_ERROR_LOCKED);
  g_assert_cmpint (g_get_monotonic_time () - start, <, 5 * G_USEC_PER_SEC);

  /* Once released, the same file opens with everything in it. */
  g_assert_cmpint (raw_exec (holder, "COMMIT"), ==, SQLITE_OK);
  store = kaged_store_open (fixture->path, &error);
  g_assert_no_error (error);
  g_clear_object (&store);

  /* The same with a rollback journal, where the lock also keeps readers out. */
  g_assert_cmpint (raw_exec (holder, "PRAGMA journal_mode = DELETE"), ==, SQLITE_OK);
  g_assert_cmpint (raw_exec (holder, "BEGIN EXCLUSIVE"), ==, SQLITE_OK);
  start = g_get_monotonic_time ();
  assert_open_fails_untouched (fixture, KAGED_STORE_ERROR_LOCKED);
  g_assert_cmpint (g_get_monotonic_time () - start, <, 5 * G_USEC_PER_SEC);
  g_assert_cmpint (raw_exec (holder, "ROLLBACK"), ==, SQLITE_OK);
  sqlite3_close (holder);
}

static void
test_second_owner (Fixture       *fixture,
                   gconstpointer  user_data)
{
  g_autoptr(KagedStore) first = open_store (fixture);
  g_autoptr(KagedStore) second = NULL;
  g_autoptr(KagedSession) session = add_session (first, "Owned");
  g_autoptr(KagedMessage) reply = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 q1 = add_operator (first, session_id, "Still answering?");
  gint64 run_id = add_run (first, session_id, q1, KAGED_RUN_STATUS_RUNNING);
  gint64 reply_id = add_agent (first, session_id, run_id, "Yes, I am",
                               KAGED_MESSAGE_STATUS_STREAMING);
  gint64 start = g_get_monotonic_time ();

  /* A second owner while the first is alive is refused at once, before it
   * could take the first one's running reply for an interrupted one. */
  assert_open_fails_untouched (fixture, KAGED_STORE_ERROR_LOCKED);
  g_assert_cmpint (g_get_monotonic_time () - start, <, G_USEC_PER_SEC);

  reply = kaged_store_get_message (first, reply_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_STREAMING);

  /* Readers are not owners: the file stays readable alongside. */
  {
    sqlite3 *db = raw_open (fixture->path);

    g_assert_cmpint (raw_int (db, "SELECT count (*) FROM messages"), ==, 2);
    sqlite3_close (db);
  }

  /* Once the first owner is gone, the next one takes over and recovers. */
  g_clear_object (&first);
  second = kaged_store_open (fixture->path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (kaged_store_get_interrupted_runs (second)->len, ==, 1);
}

static void
test_corrupt (Fixture       *fixture,
              gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Damaged");
  g_autoptr(GError) error = NULL;
  char *contents = NULL;
  gsize length = 0;

  for (guint i = 0; i < 20; i++)
    add_turn (store, kaged_session_get_id (session), i);
  g_clear_object (&store);

  /* Scribble over the schema page, past the 100-byte header. */
  g_file_get_contents (fixture->path, &contents, &length, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (length, >, 4096);
  memset (contents + 100, 0xA5, 1000);
  g_file_set_contents (fixture->path, contents, length, &error);
  g_assert_no_error (error);
  g_free (contents);

  assert_open_fails_untouched (fixture, KAGED_STORE_ERROR_CORRUPT);
}

static void
store_result_cb (GObject      *object,
                 GAsyncResult *result,
                 gpointer      user_data)
{
  GAsyncResult **out = user_data;

  *out = g_object_ref (result);
}

static void
test_check (Fixture       *fixture,
            gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Checked");
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GError) error = NULL;
  g_autofree char *long_text = g_strnfill (1500, 'w');
  char *contents = NULL;
  gsize length = 0;
  gsize middle;

  for (guint i = 0; i < 300; i++)
    add_operator (store, kaged_session_get_id (session), long_text);

  g_assert_true (kaged_store_check (store, NULL, &error));
  g_assert_no_error (error);
  {
    g_autoptr(GAsyncResult) result = NULL;

    kaged_store_check_async (store, NULL, store_result_cb, &result);
    while (result == NULL)
      g_main_context_iteration (NULL, TRUE);
    g_assert_true (kaged_store_check_finish (store, result, &error));
    g_assert_no_error (error);
  }

  g_cancellable_cancel (cancellable);
  g_assert_false (kaged_store_check (store, cancellable, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  g_clear_object (&store);

  /* Damage a page of messages in the middle of the file: opening does not
   * read it, the check does. */
  {
    sqlite3 *db = raw_open (fixture->path);

    /* A page of the messages table itself, halfway through its pages. */
    middle = (gsize)(raw_int (db, "SELECT pageno FROM dbstat WHERE name = 'messages' "
                                  "AND pagetype = 'leaf' ORDER BY pageno "
                                  "LIMIT 1 OFFSET (SELECT count (*) / 2 FROM dbstat "
                                  "WHERE name = 'messages' AND pagetype = 'leaf')") - 1) * 4096;
    sqlite3_close (db);
  }
  g_file_get_contents (fixture->path, &contents, &length, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (length, >, 100 * 4096);
  g_assert_cmpuint (middle, <, length);
  memset (contents + middle, 0x5A, 4096);
  g_file_set_contents (fixture->path, contents, length, &error);
  g_assert_no_error (error);
  g_free (contents);

  store = open_store (fixture);
  g_assert_false (kaged_store_check (store, NULL, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_CORRUPT);
  g_test_message ("%s", error->message);
  g_clear_error (&error);

  /* The same in a worker thread, while the store stays usable. */
  {
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(KagedSession) other = NULL;

    kaged_store_check_async (store, NULL, store_result_cb, &result);
    other = add_session (store, "Meanwhile");
    while (result == NULL)
      g_main_context_iteration (NULL, TRUE);
    g_assert_false (kaged_store_check_finish (store, result, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_CORRUPT);
  }
}

static void
test_delete_session (Fixture       *fixture,
                     gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) doomed = add_session (store, "Doomed");
  g_autoptr(KagedSession) kept = add_session (store, "Kept");
  g_autoptr(KagedStoreRetryState) state = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GPtrArray) sessions = NULL;
  g_autoptr(GArray) ids = NULL;
  g_autoptr(GError) error = NULL;
  gint64 doomed_id = kaged_session_get_id (doomed);
  gint64 kept_id = kaged_session_get_id (kept);
  gint64 q1, q2, run_id, last_id;
  KagedAttempt attempt = { .time = T0, .http_status = 503, .error = (char *)"Unavailable" };
  sqlite3 *db;

  q1 = add_turn (store, doomed_id, 1);
  add_turn (store, kept_id, 1);
  q2 = add_turn (store, doomed_id, 2);
  run_id = add_run (store, doomed_id, q1, KAGED_RUN_STATUS_QUEUED);
  g_assert_true (kaged_store_append_attempt (store, run_id, &attempt, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_supersede_after (store, doomed_id, q1, run_id, &ids, &error));
  g_assert_no_error (error);
  state = kaged_store_retry_state_new (doomed_id);
  g_assert_true (kaged_store_set_retry_state (store, state, &error));
  g_assert_no_error (error);
  last_id = q2 + 1;

  g_assert_true (kaged_store_delete_session (store, doomed_id, &error));
  g_assert_no_error (error);

  messages = list_all (store, doomed_id, TRUE);
  g_assert_cmpuint (messages->len, ==, 0);
  g_clear_pointer (&messages, g_ptr_array_unref);
  g_assert_null (kaged_store_get_session (store, doomed_id, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_assert_null (kaged_store_get_run (store, run_id, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_assert_false (kaged_store_delete_session (store, doomed_id, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  messages = list_all (store, kept_id, TRUE);
  g_assert_cmpuint (messages->len, ==, 2);
  sessions = kaged_store_list_sessions (store, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (sessions->len, ==, 1);

  /* Ids of deleted messages are never given out again. */
  g_assert_cmpint (add_operator (store, kept_id, "later"), >, last_id);
  g_clear_object (&store);

  db = raw_open (fixture->path);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM runs"), ==, 1);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM attempts"), ==, 0);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM message_supersessions"), ==, 0);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM retry_states"), ==, 0);
  sqlite3_close (db);
}

static void
test_runs (Fixture       *fixture,
           gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Runs");
  g_autoptr(KagedSession) other = add_session (store, "Other");
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedRun) latest = NULL;
  g_autoptr(GPtrArray) queued = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 q1, reply, run_id, second_id;
  KagedAttempt first = {
    .time = T0 + 10, .http_status = 529, .error = (char *)"Overloaded",
    .retry_class = KAGED_RETRY_CLASS_OVERLOADED, .wait_ms = 1800, .wait_source = (char *)"backoff",
  };
  KagedAttempt second = { .time = T0 + 2000, .http_status = 200 };
  GPtrArray *attempts;
  const KagedAttempt *logged;

  q1 = add_operator (store, session_id, "Hello");
  run_id = add_run (store, session_id, q1, KAGED_RUN_STATUS_QUEUED);
  second_id = add_run (store, session_id, q1, KAGED_RUN_STATUS_QUEUED);

  queued = kaged_store_list_runs (store, session_id, KAGED_RUN_STATUS_QUEUED, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (queued->len, ==, 2);
  g_assert_cmpint (kaged_run_get_id (g_ptr_array_index (queued, 0)), ==, run_id);
  g_assert_cmpint (kaged_run_get_id (g_ptr_array_index (queued, 1)), ==, second_id);
  g_clear_pointer (&queued, g_ptr_array_unref);

  run = kaged_store_get_run (store, run_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_anchor_id (run), ==, q1);
  g_assert_cmpint (kaged_run_get_created_at (run), ==, T0);
  g_assert_cmpint (kaged_run_get_started_at (run), ==, 0);

  kaged_run_set_status (run, KAGED_RUN_STATUS_RUNNING);
  kaged_run_set_started_at (run, T0 + 5);
  g_assert_true (kaged_store_update_run (store, run, &error));
  g_assert_no_error (error);
  reply = add_agent (store, session_id, run_id, "Hi", KAGED_MESSAGE_STATUS_STREAMING);
  g_assert_true (kaged_store_append_attempt (store, run_id, &first, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_append_attempt (store, run_id, &second, &error));
  g_assert_no_error (error);

  kaged_run_set_status (run, KAGED_RUN_STATUS_FAILED);
  kaged_run_set_input_tokens (run, 120);
  kaged_run_set_output_tokens (run, 7);
  kaged_run_set_retryable (run, TRUE);
  kaged_run_set_retry_class (run, KAGED_RETRY_CLASS_QUOTA_SCHEDULED);
  kaged_run_set_retry_after_until (run, T0 + 3600000);
  kaged_run_set_http_status (run, 429);
  kaged_run_set_error_message (run, "No quota for 60 minutes");
  kaged_run_set_finished_at (run, T0 + 2500);
  g_assert_true (kaged_store_update_run (store, run, &error));
  g_assert_no_error (error);
  g_clear_object (&run);

  run = kaged_store_get_run (store, run_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_input_tokens (run), ==, 120);
  g_assert_cmpint (kaged_run_get_output_tokens (run), ==, 7);
  g_assert_true (kaged_run_get_retryable (run));
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_QUOTA_SCHEDULED);
  g_assert_cmpint (kaged_run_get_retry_after_until (run), ==, T0 + 3600000);
  g_assert_cmpuint (kaged_run_get_http_status (run), ==, 429);
  g_assert_cmpstr (kaged_run_get_error_message (run), ==, "No quota for 60 minutes");
  g_assert_cmpint (kaged_run_get_started_at (run), ==, T0 + 5);
  g_assert_cmpint (kaged_run_get_finished_at (run), ==, T0 + 2500);

  attempts = kaged_run_get_attempts (run);
  g_assert_cmpuint (attempts->len, ==, 2);
  logged = g_ptr_array_index (attempts, 0);
  g_assert_cmpint (logged->time, ==, T0 + 10);
  g_assert_cmpuint (logged->http_status, ==, 529);
  g_assert_cmpstr (logged->error, ==, "Overloaded");
  g_assert_cmpint (logged->retry_class, ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpint (logged->wait_ms, ==, 1800);
  g_assert_cmpstr (logged->wait_source, ==, "backoff");
  logged = g_ptr_array_index (attempts, 1);
  g_assert_cmpuint (logged->http_status, ==, 200);
  g_assert_null (logged->error);
  g_assert_null (logged->wait_source);
  g_assert_cmpint (logged->retry_class, ==, KAGED_RETRY_CLASS_NONE);

  /* Usage counts from the runs finished in the period and those running. */
  {
    gint64 input = 0, output = 0;
    g_autoptr(KagedRun) running = kaged_store_get_run (store, second_id, &error);

    g_assert_no_error (error);
    g_assert_true (kaged_store_sum_usage (store, T0 + 2500, &input, &output, &error));
    g_assert_no_error (error);
    g_assert_cmpint (input, ==, 120);
    g_assert_cmpint (output, ==, 7);
    g_assert_true (kaged_store_sum_usage (store, T0 + 2501, &input, &output, &error));
    g_assert_cmpint (input, ==, 0);
    g_assert_cmpint (output, ==, 0);

    kaged_run_set_status (running, KAGED_RUN_STATUS_RUNNING);
    kaged_run_set_input_tokens (running, 5);
    g_assert_true (kaged_store_update_run (store, running, &error));
    g_assert_true (kaged_store_sum_usage (store, T0 + 2501, &input, &output, &error));
    g_assert_cmpint (input, ==, 5);
    kaged_run_set_status (running, KAGED_RUN_STATUS_QUEUED);
    kaged_run_set_input_tokens (running, 0);
    g_assert_true (kaged_store_update_run (store, running, &error));
    g_assert_no_error (error);
  }

  latest = kaged_store_get_latest_run (store, session_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_id (latest), ==, second_id);
  g_assert_null (kaged_store_get_latest_run (store, kaged_session_get_id (other), &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  queued = kaged_store_list_runs (store, 0, KAGED_RUN_STATUS_QUEUED, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (queued->len, ==, 1);
  g_clear_pointer (&queued, g_ptr_array_unref);

  /* Requests that do not fit. */
  g_assert_false (kaged_store_append_attempt (store, 999999, &first, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  {
    g_autoptr(KagedRun) bad = kaged_run_new ();

    /* An agent message is no anchor. */
    kaged_run_set_session_id (bad, session_id);
    kaged_run_set_anchor_id (bad, reply);
    g_assert_false (kaged_store_create_run (store, bad, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
    g_clear_error (&error);

    /* Nor a message of another session. */
    kaged_run_set_session_id (bad, kaged_session_get_id (other));
    kaged_run_set_anchor_id (bad, q1);
    g_assert_false (kaged_store_create_run (store, bad, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
    g_clear_error (&error);

    kaged_run_set_id (bad, 999999);
    g_assert_false (kaged_store_update_run (store, bad, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
    g_clear_error (&error);
  }
  {
    g_autoptr(KagedMessage) bad = kaged_message_new ();

    /* An agent message of a run of another session. */
    kaged_message_set_session_id (bad, kaged_session_get_id (other));
    kaged_message_set_role (bad, KAGED_MESSAGE_ROLE_AGENT);
    kaged_message_set_run_id (bad, run_id);
    g_assert_false (kaged_store_append_message (store, bad, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
    g_clear_error (&error);

    /* An operator message with a run. */
    kaged_message_set_session_id (bad, session_id);
    kaged_message_set_role (bad, KAGED_MESSAGE_ROLE_OPERATOR);
    g_assert_false (kaged_store_append_message (store, bad, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
    g_clear_error (&error);

    /* A message of no session. */
    kaged_message_set_run_id (bad, 0);
    kaged_message_set_session_id (bad, 999999);
    g_assert_false (kaged_store_append_message (store, bad, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
    g_clear_error (&error);
    g_assert_cmpint (kaged_message_get_id (bad), ==, 0);
  }
}

static void
test_retry_state (Fixture       *fixture,
                  gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Retry");
  g_autoptr(KagedStoreRetryState) state = NULL;
  g_autoptr(KagedStoreRetryState) copy = NULL;
  g_autoptr(GPtrArray) states = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 anchor = add_operator (store, session_id, "Retry me");

  state = kaged_store_get_retry_state (store, session_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (state->session_id, ==, session_id);
  g_assert_cmpstr (state->state, ==, "idle");
  g_assert_cmpuint (state->attempt, ==, 0);
  g_assert_false (state->cancelled);

  g_free (state->state);
  state->state = g_strdup ("scheduled");
  state->attempt = 3;
  state->next_eligible_at = T0 + 3000000;
  state->anchor_id = anchor;
  g_assert_true (kaged_store_set_retry_state (store, state, &error));
  g_assert_no_error (error);
  g_clear_object (&store);

  store = open_store (fixture);
  copy = kaged_store_get_retry_state (store, session_id, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (copy->state, ==, "scheduled");
  g_assert_cmpuint (copy->attempt, ==, 3);
  g_assert_cmpint (copy->next_eligible_at, ==, T0 + 3000000);
  g_assert_cmpint (copy->anchor_id, ==, anchor);
  g_assert_cmpint (copy->updated_at, ==, T0);
  g_assert_false (copy->cancelled);

  copy->cancelled = TRUE;
  g_free (copy->state);
  copy->state = g_strdup ("cancelled");
  g_assert_true (kaged_store_set_retry_state (store, copy, &error));
  g_assert_no_error (error);

  states = kaged_store_list_retry_states (store, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (states->len, ==, 1);
  g_assert_true (((KagedStoreRetryState *)g_ptr_array_index (states, 0))->cancelled);
  g_clear_pointer (&states, g_ptr_array_unref);

  g_assert_true (kaged_store_clear_retry_state (store, session_id, &error));
  g_assert_no_error (error);
  states = kaged_store_list_retry_states (store, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (states->len, ==, 0);

  state->session_id = 999999;
  g_assert_false (kaged_store_set_retry_state (store, state, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
}

typedef struct
{
  gint64 session_id;
  gboolean fail;
} TransactionData;

static gboolean
append_two (KagedStore  *store,
            gpointer     user_data,
            GError     **error)
{
  TransactionData *data = user_data;

  add_operator (store, data->session_id, "one");
  add_operator (store, data->session_id, "two");

  if (data->fail)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "Changed my mind");
      return FALSE;
    }
  return TRUE;
}

static void
test_transaction (Fixture       *fixture,
                  gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Together");
  g_autoptr(GError) error = NULL;
  TransactionData data = { kaged_session_get_id (session), TRUE };
  guint n = 0;

  g_assert_false (kaged_store_transaction (store, append_two, &data, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  g_assert_true (kaged_store_count_messages (store, data.session_id, TRUE, &n, &error));
  g_assert_cmpuint (n, ==, 0);

  data.fail = FALSE;
  g_assert_true (kaged_store_transaction (store, append_two, &data, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_count_messages (store, data.session_id, TRUE, &n, &error));
  g_assert_cmpuint (n, ==, 2);

  /* Nested: the inner one rolls back alone, the outer one commits. */
  g_assert_true (kaged_store_begin (store, &error));
  add_operator (store, data.session_id, "three");
  data.fail = TRUE;
  g_assert_false (kaged_store_transaction (store, append_two, &data, &error));
  g_clear_error (&error);
  g_assert_true (kaged_store_commit (store, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_count_messages (store, data.session_id, TRUE, &n, &error));
  g_assert_cmpuint (n, ==, 3);

  /* A rolled back outer transaction undoes everything in it. */
  g_assert_true (kaged_store_begin (store, &error));
  add_operator (store, data.session_id, "four");
  kaged_store_rollback (store);
  g_assert_true (kaged_store_count_messages (store, data.session_id, TRUE, &n, &error));
  g_assert_cmpuint (n, ==, 3);
}

static void
test_compacted (Fixture       *fixture,
                gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Compaction");
  g_autoptr(KagedMessage) summary = kaged_message_new ();
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 ids[4];
  gint64 q3;

  ids[0] = add_turn (store, session_id, 1);
  ids[1] = ids[0] + 1;
  ids[2] = add_turn (store, session_id, 2);
  ids[3] = ids[2] + 1;
  q3 = add_turn (store, session_id, 3);

  kaged_message_set_session_id (summary, session_id);
  kaged_message_set_role (summary, KAGED_MESSAGE_ROLE_SUMMARY);
  kaged_message_set_content (summary, "They asked two questions.");
  g_assert_true (kaged_store_append_message (store, summary, &error));
  g_assert_no_error (error);

  g_assert_true (kaged_store_mark_compacted (store, kaged_message_get_id (summary), ids,
                                             G_N_ELEMENTS (ids), &error));
  g_assert_no_error (error);

  messages = list_all (store, session_id, FALSE);
  g_assert_cmpuint (messages->len, ==, 7);
  for (guint i = 0; i < messages->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (messages, i);

      g_assert_cmpint (kaged_message_get_compacted (message), ==, i < 4);
    }
  /* The originals are kept, operator words included. */
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (messages, 0)), ==, "Question 1");

  g_assert_false (kaged_store_mark_compacted (store, q3, ids, 1, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
}

static goffset
file_size (const char *path)
{
  GStatBuf buf;

  return g_stat (path, &buf) == 0 ? (goffset)buf.st_size : 0;
}

/* Writes @n messages of 16 KiB: about four pages each, one transaction
 * each, never turning the main loop. */
static void
add_big_messages (KagedStore *store,
                  gint64      session_id,
                  guint       n)
{
  g_autofree char *content = g_strnfill (16 * 1024, 'k');

  for (guint i = 0; i < n; i++)
    add_operator (store, session_id, content);
}

/* The store's own thread copies the WAL into the database file: no commit
 * of the writing thread waits for the disk. For the test the thresholds
 * are a tenth of the real ones (1,000 pages; 16 and 64 times that). */
static void
test_checkpoints (Fixture       *fixture,
                  gconstpointer  data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Long");
  gint64 session_id = kaged_session_get_id (session);
  g_autofree char *wal = g_strconcat (fixture->path, "-wal", NULL);
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GError) error = NULL;
  gint64 deadline;
  guint n_messages;

  kaged_store_set_checkpoint_frames (store, 100);
  g_assert_cmpuint (kaged_store_get_n_checkpoints (store), ==, 0);

  /* Past 100 pages the thread copies them into the file, without the
   * writer waiting for it. */
  add_big_messages (store, session_id, 40);
  deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
  /* The thread counts a checkpoint once it is over, after the file grew. */
  while ((file_size (fixture->path) <= 300 * 1024 || kaged_store_get_n_checkpoints (store) == 0) &&
         g_get_monotonic_time () < deadline)
    g_usleep (10 * 1000);
  g_assert_cmpuint (kaged_store_get_n_checkpoints (store), >=, 1);
  g_assert_cmpint (file_size (fixture->path), >, 300 * 1024);

  /* A writer that never pauses leaves the WAL no moment to start over,
   * but from 6,400 pages (25 MiB) on the writer copies the rest itself,
   * once the thread is done with the checkpoint it may have under way. */
  add_big_messages (store, session_id, 1800);
  g_assert_cmpint (file_size (wal), <, 40 * 1024 * 1024);

  /* Once the writing pauses (past 1,600 pages, 6.25 MiB, the writing
   * thread's main loop asks for a checkpoint when it has nothing else to
   * do), the WAL starts over, cut back to 4 MiB. */
  for (guint i = 0; i < 3000 && file_size (wal) <= 6 * 1024 * 1024; i++)
    add_big_messages (store, session_id, 1);
  g_assert_cmpint (file_size (wal), >, 6 * 1024 * 1024);
  deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
  do
    {
      while (g_main_context_iteration (NULL, FALSE))
        ;
      g_usleep (20 * 1000);
      add_operator (store, session_id, "Small");
    }
  while (file_size (wal) > 4 * 1024 * 1024 + 64 * 1024 && g_get_monotonic_time () < deadline);
  g_assert_cmpint (file_size (wal), <=, 4 * 1024 * 1024 + 64 * 1024);

  messages = kaged_store_list_messages (store, session_id, FALSE, 0, G_MAXUINT, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (messages->len, >=, 1841);
  n_messages = messages->len;
  g_clear_pointer (&messages, g_ptr_array_unref);

  /* Closing copies the rest and removes the WAL; all of it is there. */
  g_clear_object (&store);
  g_assert_false (g_file_test (wal, G_FILE_TEST_EXISTS));

  store = open_store (fixture);
  messages = kaged_store_list_messages (store, session_id, FALSE, 0, G_MAXUINT, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (messages->len, ==, n_messages);
  g_assert_cmpuint (strlen (kaged_message_get_content (g_ptr_array_index (messages, 1839))), ==,
                    16 * 1024);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (messages, n_messages - 1)), ==,
                   "Small");
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

#define ADD_TEST(path, func) \
  g_test_add (path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  g_test_add_func ("/store/default-path", test_default_path);
  ADD_TEST ("/store/create-reopen", test_create_reopen);
  ADD_TEST ("/store/migrations", test_migrations);
  ADD_TEST ("/store/migration-rolls-back", test_migration_rolls_back);
  ADD_TEST ("/store/operator-immutable", test_operator_immutable);
  ADD_TEST ("/store/supersede", test_supersede);
  ADD_TEST ("/store/versions", test_versions);
  ADD_TEST ("/store/interrupted", test_interrupted);
  ADD_TEST ("/store/paging", test_paging);
  ADD_TEST ("/store/conversation-order", test_conversation_order);
  ADD_TEST ("/store/not-a-database", test_not_a_database);
  ADD_TEST ("/store/too-new", test_too_new);
  ADD_TEST ("/store/locked", test_locked);
  ADD_TEST ("/store/second-owner", test_second_owner);
  ADD_TEST ("/store/corrupt", test_corrupt);
  ADD_TEST ("/store/check", test_check);
  ADD_TEST ("/store/delete-session", test_delete_session);
  ADD_TEST ("/store/runs", test_runs);
  ADD_TEST ("/store/retry-state", test_retry_state);
  ADD_TEST ("/store/transaction", test_transaction);
  ADD_TEST ("/store/compacted", test_compacted);
  ADD_TEST ("/store/checkpoints", test_checkpoints);

#undef ADD_TEST

  return g_test_run ();
}
