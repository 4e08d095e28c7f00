/* test-store-search.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Searching titles and message text: the full-text index follows every
 * change by itself, including in a database migrated from an older schema.
 */

#include "config.h"

#include <glib/gstdio.h>
#include <sqlite3.h>

#include "kaged-store-search.h"
#include "kaged-test-files.h"

static char *
make_dir (void)
{
  g_autoptr(GError) error = NULL;
  char *dir = g_dir_make_tmp (NULL, &error);

  g_assert_no_error (error);
  return dir;
}

static KagedMessage *
message_new (gint64            session_id,
             KagedMessageRole  role,
             const char       *content)
{
  KagedMessage *message = kaged_message_new ();

  kaged_message_set_session_id (message, session_id);
  kaged_message_set_role (message, role);
  kaged_message_set_content (message, content);
  if (role == KAGED_MESSAGE_ROLE_AGENT)
    kaged_message_set_status (message, KAGED_MESSAGE_STATUS_STREAMING);

  return message;
}

static guint
count (KagedStore *store,
       const char *query,
       gint64      message_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) hits = kaged_store_search (store, query, 50, &error);
  guint n = 0;

  g_assert_no_error (error);
  for (guint i = 0; i < hits->len; i++)
    {
      KagedStoreSearchHit *hit = g_ptr_array_index (hits, i);

      if (message_id < 0 || hit->message_id == message_id)
        n++;
    }

  return n;
}

/* Who wrote the first message @query finds. */
static KagedMessageRole
first_role (KagedStore *store,
            const char *query)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) hits = kaged_store_search (store, query, 50, &error);

  g_assert_no_error (error);
  for (guint i = 0; i < hits->len; i++)
    {
      KagedStoreSearchHit *hit = g_ptr_array_index (hits, i);

      if (hit->message_id > 0)
        return hit->role;
    }

  g_assert_not_reached ();
}

/* FTS5 checks its index against the messages and titles it was built
 * from: every word of every row is there, and nothing else. */
static void
assert_index_intact (const char *path)
{
  sqlite3 *db = NULL;

  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, "INSERT INTO messages_search (messages_search) "
                                     "VALUES ('integrity-check')", NULL, NULL, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, "INSERT INTO sessions_search (sessions_search) "
                                     "VALUES ('integrity-check')", NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);
}

static void
test_follows_changes (void)
{
  g_autofree char *dir = make_dir ();
  g_autofree char *path = g_build_filename (dir, "kaged.db", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedMessage) question = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GPtrArray) hits = NULL;
  KagedStoreSearchHit *hit;
  gint64 id;

  store = kaged_store_open (path, &error);
  g_assert_no_error (error);
  session = kaged_store_create_session (store, "Baking at home", &error);
  g_assert_no_error (error);
  id = kaged_session_get_id (session);

  question = message_new (id, KAGED_MESSAGE_ROLE_OPERATOR, "How long should sourdough rise?");
  g_assert_true (kaged_store_append_message (store, question, &error));
  g_assert_no_error (error);
  run = kaged_run_new ();
  kaged_run_set_session_id (run, id);
  kaged_run_set_anchor_id (run, kaged_message_get_id (question));
  g_assert_true (kaged_store_create_run (store, run, &error));
  g_assert_no_error (error);
  reply = message_new (id, KAGED_MESSAGE_ROLE_AGENT, "Usually");
  kaged_message_set_run_id (reply, kaged_run_get_id (run));
  g_assert_true (kaged_store_append_message (store, reply, &error));
  g_assert_no_error (error);

  /* Titles first; words without case or accents; the last word as a prefix. */
  hits = kaged_store_search (store, "BAKING", 10, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (hits->len, ==, 1);
  hit = g_ptr_array_index (hits, 0);
  g_assert_cmpint (hit->session_id, ==, id);
  g_assert_cmpint (hit->message_id, ==, 0);
  g_assert_cmpstr (hit->text, ==, KAGED_STORE_MATCH_START "Baking" KAGED_STORE_MATCH_END " at home");
  g_assert_cmpuint (count (store, "sourdo", kaged_message_get_id (question)), ==, 1);
  g_assert_cmpint (first_role (store, "sourdo"), ==, KAGED_MESSAGE_ROLE_OPERATOR);
  g_assert_cmpuint (count (store, "sóurdough rise", -1), ==, 1);
  g_assert_cmpuint (count (store, "sourdough bread", -1), ==, 0);

  /* A reply is found once it has stopped streaming, by its last text:
   * the text it streams is saved every few hundred milliseconds, and
   * indexing all of it each time would cost more than the saving. */
  g_assert_cmpuint (count (store, "hours", -1), ==, 0);
  kaged_message_set_content (reply, "Four to six hours");
  g_assert_true (kaged_store_save_streaming_text (store, reply, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count (store, "hours", -1), ==, 0);
  g_assert_cmpuint (count (store, "usually", -1), ==, 0);
  kaged_message_set_content (reply, "Four to six hours at room temperature.");
  kaged_message_set_status (reply, KAGED_MESSAGE_STATUS_COMPLETE);
  g_assert_true (kaged_store_update_message (store, reply, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count (store, "hours", kaged_message_get_id (reply)), ==, 1);
  g_assert_cmpuint (count (store, "temperature", kaged_message_get_id (reply)), ==, 1);
  g_assert_cmpint (first_role (store, "temperature"), ==, KAGED_MESSAGE_ROLE_AGENT);
  g_assert_cmpuint (count (store, "usually", -1), ==, 0);
  assert_index_intact (path);

  /* Changed again once finished (a failed reply's text kept, say). */
  kaged_message_set_content (reply, "Four to six hours, or overnight in the fridge.");
  kaged_message_set_status (reply, KAGED_MESSAGE_STATUS_FAILED);
  g_assert_true (kaged_store_update_message (store, reply, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count (store, "fridge", kaged_message_get_id (reply)), ==, 1);
  g_assert_cmpuint (count (store, "temperature", -1), ==, 0);
  assert_index_intact (path);

  /* Renamed, then deleted. */
  g_assert_true (kaged_store_rename_session (store, id, "Sourdough", &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count (store, "baking", -1), ==, 0);
  g_assert_cmpuint (count (store, "sourdough", 0), ==, 1);
  g_assert_true (kaged_store_delete_session (store, id, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count (store, "sourdough", -1), ==, 0);
  g_assert_cmpuint (count (store, "hours", -1), ==, 0);

  g_clear_object (&store);
  kaged_test_remove_tree (dir);
}

static void
test_query_is_text (void)
{
  g_autofree char *dir = make_dir ();
  g_autofree char *path = g_build_filename (dir, "kaged.db", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedMessage) message = NULL;
  static const char * const queries[] = {
    "\"", "AND", "a OR", "NEAR(", "*", "col:x", "-x", "^", "   ", "", "(((", "\"\"\"",
  };

  store = kaged_store_open (path, &error);
  g_assert_no_error (error);
  session = kaged_store_create_session (store, "Quotes", &error);
  g_assert_no_error (error);
  message = message_new (kaged_session_get_id (session), KAGED_MESSAGE_ROLE_OPERATOR,
                         "She said \"AND\" and <b>left</b> & came back");
  g_assert_true (kaged_store_append_message (store, message, &error));
  g_assert_no_error (error);

  /* Whatever is typed is words to find, never a query error. */
  for (guint i = 0; i < G_N_ELEMENTS (queries); i++)
    {
      g_autoptr(GPtrArray) hits = kaged_store_search (store, queries[i], 10, &error);

      g_assert_no_error (error);
      g_assert_nonnull (hits);
    }
  g_assert_cmpuint (count (store, "\"AND\"", -1), ==, 1);

  g_clear_object (&store);
  kaged_test_remove_tree (dir);
}

static void
test_markup (void)
{
  g_autofree char *markup = kaged_store_search_markup ("a <b> & " KAGED_STORE_MATCH_START "c<d"
                                                       KAGED_STORE_MATCH_END " e");
  g_autofree char *plain = kaged_store_search_markup ("plain");

  /* A snippet reads as one line: the breaks between paragraphs and runs
   * of spaces are one space. */
  g_autofree char *paragraphs = kaged_store_search_markup ("…end.\n\n  Next " KAGED_STORE_MATCH_START
                                                           "word" KAGED_STORE_MATCH_END "\t\tand\r\nmore\n");

  g_assert_cmpstr (markup, ==, "a &lt;b&gt; &amp; <b>c&lt;d</b> e");
  g_assert_cmpstr (plain, ==, "plain");
  g_assert_cmpstr (paragraphs, ==, "…end. Next <b>word</b> and more");
}

/* Makes @path a database of an older schema from the fixture @name, then
 * runs @more_sql there, if any, with that schema's triggers. */
static void
load_fixture (const char *path,
              const char *name,
              const char *more_sql)
{
  g_autofree char *fixture = g_test_build_filename (G_TEST_DIST, "fixtures", "store", name, NULL);
  g_autofree char *sql = NULL;
  g_autoptr(GError) error = NULL;
  sqlite3 *db = NULL;

  g_file_get_contents (fixture, &sql, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, sql, NULL, NULL, NULL), ==, SQLITE_OK);
  if (more_sql != NULL)
    g_assert_cmpint (sqlite3_exec (db, more_sql, NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);
}

/* A database of the schema before the index gets an index of its rows. */
static void
test_migrated (void)
{
  g_autofree char *dir = make_dir ();
  g_autofree char *path = g_build_filename (dir, "kaged.db", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = NULL;

  load_fixture (path, "schema-v4.sql", NULL);
  store = kaged_store_open (path, &error);
  g_assert_no_error (error);

  g_assert_cmpuint (count (store, "lisbon", 0), ==, 1);
  g_assert_cmpuint (count (store, "tasca mouraria", 5), ==, 1);
  /* Superseded replies are not offered. */
  g_assert_cmpuint (count (store, "requests", -1), ==, 0);

  g_clear_object (&store);
  kaged_test_remove_tree (dir);
}

/* A reply left streaming by a version that indexed streaming text leaves
 * the index at the upgrade, and is indexed once, as the store finds it
 * interrupted. */
static void
test_migrated_streaming (void)
{
  g_autofree char *dir = make_dir ();
  g_autofree char *path = g_build_filename (dir, "kaged.db", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedMessage) reply = NULL;

  load_fixture (path, "schema-v6.sql",
                "INSERT INTO messages (id, session_id, role, content, created_at, "
                "                      run_id, status, anchor_id) "
                "VALUES (100, 4, 'agent', 'Halfway through a zeppelin', "
                "        1700002002000, 9, 'streaming', 15)");

  /* Opened, it was interrupted: it stopped streaming, and is found once. */
  store = kaged_store_open (path, &error);
  g_assert_no_error (error);
  reply = kaged_store_get_message (store, 100, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_INTERRUPTED);
  g_assert_cmpuint (count (store, "zeppelin", 100), ==, 1);
  assert_index_intact (path);

  /* Its words leave the index with it: none is left over from before. */
  kaged_message_set_content (reply, "The airship landed.");
  kaged_message_set_status (reply, KAGED_MESSAGE_STATUS_COMPLETE);
  g_assert_true (kaged_store_update_message (store, reply, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count (store, "airship", 100), ==, 1);
  g_assert_cmpuint (count (store, "zeppelin", -1), ==, 0);
  assert_index_intact (path);

  g_clear_object (&store);
  kaged_test_remove_tree (dir);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/store-search/follows-changes", test_follows_changes);
  g_test_add_func ("/store-search/query-is-text", test_query_is_text);
  g_test_add_func ("/store-search/markup", test_markup);
  g_test_add_func ("/store-search/migrated", test_migrated);
  g_test_add_func ("/store-search/migrated-streaming", test_migrated_streaming);

  return g_test_run ();
}
