/* test-store-file.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The database file: where it goes, its migrations, refusing files that are
 * not ours, too new, held or damaged, and the checkpoints of its journal.
 */

#include "config.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>

#include "kaged-clock.h"
#include "kaged-store.h"
#include "kaged-store-private.h"

#include "kaged-store-fixture.h"

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

/* What version 8 added works on migrated rows: what one run superseded,
 * an edited message's earlier texts, drafts that go with their session. */
static void
check_migrated_v8 (KagedStore *store)
{
  g_autoptr(GPtrArray) later = NULL;
  g_autoptr(GPtrArray) edits = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *kept = NULL;
  g_autofree char *gone = NULL;
  guint n_later = 1;

  /* The fixture's failed reply 4, replaced by run 3: nothing followed it. */
  later = kaged_store_list_superseded_with (store, 4, 10, &n_later, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (later->len, ==, 0);
  g_assert_cmpuint (n_later, ==, 0);
  edits = kaged_store_list_edits (store, 3, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (edits->len, ==, 0);

  g_assert_true (kaged_store_set_draft (store, 1, "Half a question", &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_get_draft (store, 1, &kept, &error));
  g_assert_cmpstr (kept, ==, "Half a question");
  g_assert_true (kaged_store_set_draft (store, 2, "Going", &error));
  g_assert_true (kaged_store_delete_session (store, 2, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_get_draft (store, 2, &gone, &error));
  g_assert_null (gone);
  g_assert_true (kaged_store_set_draft (store, 1, NULL, &error));
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

/* What version 6 added: a migrated conversation follows the default
 * profile, its runs name none, and both can be set. */
static void
check_migrated_settings (KagedStore *store)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *profile_id = NULL;
  g_autofree char *model = NULL;
  g_autofree char *system_prompt = NULL;
  g_autofree char *profile_name = NULL;
  g_auto(GStrv) models = NULL;
  const char * const listed[] = { "llama3.2:3b", "qwen3:8b", NULL };

  g_assert_true (kaged_store_get_session_settings (store, 1, &profile_id, &model, &system_prompt, &error));
  g_assert_no_error (error);
  g_assert_null (profile_id);
  g_assert_null (model);
  g_assert_null (system_prompt);

  g_assert_true (kaged_store_set_session_settings (store, 1, "work", "qwen3:8b", "Answer briefly.", &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_get_session_settings (store, 1, &profile_id, &model, &system_prompt, &error));
  g_assert_cmpstr (profile_id, ==, "work");
  g_assert_cmpstr (model, ==, "qwen3:8b");
  g_assert_cmpstr (system_prompt, ==, "Answer briefly.");
  g_clear_pointer (&profile_id, g_free);
  g_clear_pointer (&model, g_free);

  g_assert_true (kaged_store_get_run_model (store, 2, &profile_id, &profile_name, &model, &error));
  g_assert_no_error (error);
  g_assert_null (profile_id);
  g_assert_null (model);
  g_assert_true (kaged_store_set_run_model (store, 2, "work", "Work", "qwen3:8b", &error));
  g_assert_true (kaged_store_get_run_model (store, 2, &profile_id, &profile_name, &model, &error));
  g_assert_cmpstr (profile_name, ==, "Work");
  g_assert_cmpstr (model, ==, "qwen3:8b");

  g_assert_false (kaged_store_get_session_settings (store, 999, NULL, NULL, NULL, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  models = kaged_store_get_profile_models (store, "work", NULL, &error);
  g_assert_no_error (error);
  g_assert_null (models);
  g_assert_true (kaged_store_set_profile_models (store, "work", listed, &error));
  models = kaged_store_get_profile_models (store, "work", NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_strv_length (models), ==, 2);
  g_assert_cmpstr (models[1], ==, "qwen3:8b");
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
      check_migrated_settings (store);
      if (version >= 3)
        check_migrated_retry (store);
      check_migrated_v8 (store);
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
  /* Once the check answered, nothing else holds the store: dropping it
   * closes the file and its WAL at once, before the file is damaged below
   * (a store kept by the check's thread left a WAL of the old file beside
   * the new one). */
  {
    gpointer weak = store;

    g_object_add_weak_pointer (G_OBJECT (store), &weak);
    g_clear_object (&store);
    g_assert_null (weak);
  }

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

  /* This is about checkpoints, not durability: the 1,800 and more commits
   * below need not each wait for the disk (test-store-durability checks
   * that they do), which would make the test slow on a slow disk. */
  g_assert_cmpint (sqlite3_exec (store->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL), ==,
                   SQLITE_OK);

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
  ADD_TEST ("/store/not-a-database", test_not_a_database);
  ADD_TEST ("/store/too-new", test_too_new);
  ADD_TEST ("/store/locked", test_locked);
  ADD_TEST ("/store/second-owner", test_second_owner);
  ADD_TEST ("/store/corrupt", test_corrupt);
  ADD_TEST ("/store/check", test_check);
  ADD_TEST ("/store/checkpoints", test_checkpoints);

#undef ADD_TEST

  return g_test_run ();
}
