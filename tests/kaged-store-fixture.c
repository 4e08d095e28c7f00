/* kaged-store-fixture.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * What the store tests share: a fresh folder per test, a database opened
 * with a fake clock, raw SQLite access, and ways to add and list rows.
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

void
fixture_set_up (Fixture       *fixture,
                gconstpointer  user_data)
{
  g_autoptr(GError) error = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  fixture->path = g_build_filename (fixture->dir, "kaged.db", NULL);
  fixture->clock = kaged_fake_clock_new (T0);
}

void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  user_data)
{
  kaged_test_remove_tree (fixture->dir);
  g_clear_pointer (&fixture->dir, g_free);
  g_clear_pointer (&fixture->path, g_free);
  g_clear_object (&fixture->clock);
}

KagedStore *
open_store (Fixture *fixture)
{
  g_autoptr(GError) error = NULL;
  KagedStore *store = kaged_store_open_with_clock (fixture->path, fixture->clock, &error);

  g_assert_no_error (error);
  g_assert_nonnull (store);
  return store;
}

sqlite3 *
raw_open (const char *path)
{
  sqlite3 *db = NULL;

  g_assert_cmpint (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
                   ==, SQLITE_OK);
  sqlite3_extended_result_codes (db, TRUE);
  return db;
}

int
raw_exec (sqlite3    *db,
          const char *sql)
{
  return sqlite3_exec (db, sql, NULL, NULL, NULL);
}

gint64
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

char *
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
char *
raw_schema (const char *path)
{
  sqlite3 *db = raw_open (path);
  char *schema = raw_text (db,
                           "SELECT group_concat (type || ' ' || name || ': ' || coalesce (sql, ''), "
                           "char (10)) FROM (SELECT * FROM sqlite_schema ORDER BY name)");

  sqlite3_close (db);
  return schema;
}

GBytes *
read_bytes (const char *path)
{
  g_autoptr(GError) error = NULL;
  char *contents = NULL;
  gsize length = 0;

  g_file_get_contents (path, &contents, &length, &error);
  g_assert_no_error (error);
  return g_bytes_new_take (contents, length);
}

KagedSession *
add_session (KagedStore *store,
             const char *title)
{
  g_autoptr(GError) error = NULL;
  KagedSession *session = kaged_store_create_session (store, title, &error);

  g_assert_no_error (error);
  g_assert_nonnull (session);
  return session;
}

gint64
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

gint64
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

gint64
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
gint64
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

GArray *
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

void
assert_ids (GArray       *ids,
            const gint64 *expected,
            guint         n_expected)
{
  g_assert_cmpuint (ids->len, ==, n_expected);
  for (guint i = 0; i < n_expected; i++)
    g_assert_cmpint (g_array_index (ids, gint64, i), ==, expected[i]);
}

GPtrArray *
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

