/* test-session-list.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The list of conversations the sidebar shows: newest first, in step with
 * the engine, titled from the first message, renamed, hidden and deleted.
 */

#include "config.h"

#include <glib/gstdio.h>

#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-session-list.h"

typedef struct
{
  char                *dir;
  KagedStore          *store;
  KagedSessionManager *manager;
  KagedFakeServer     *server;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autofree char *db_path = NULL;
  g_autofree char *url = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  db_path = g_build_filename (fixture->dir, "kaged.db", NULL);
  fixture->store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);

  /* A slow reply, so a test can act while it streams. */
  fixture->server = kaged_fake_server_new (
    "[{\"kind\": \"openai\", \"text\": \"A reply in many small pieces\", "
    "  \"chunks\": 10, \"delay_ms\": 100}]", &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (fixture->server);

  fixture->manager = kaged_session_manager_new (fixture->store, NULL);
  resolver = kaged_resolver_new (kaged_http_get_default_session (), keyring);
  profile = kaged_profile_new ("test", KAGED_PROVIDER_KIND_OPENAI, url, "test-model");
  kaged_session_manager_set_model (fixture->manager, resolver, profile);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GDir) dir = NULL;
  const char *name;

  kaged_session_manager_shutdown (fixture->manager);
  for (guint i = 0; i < 50; i++)
    g_main_context_iteration (NULL, FALSE);

  g_clear_object (&fixture->manager);
  g_clear_object (&fixture->store);
  g_clear_object (&fixture->server);

  dir = g_dir_open (fixture->dir, 0, NULL);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (fixture->dir, name, NULL);

      g_unlink (path);
    }
  g_rmdir (fixture->dir);
  g_clear_pointer (&fixture->dir, g_free);
}

static gboolean
wait_for_idle (KagedSessionManager *manager,
               gint64               session_id)
{
  gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

  while (g_get_monotonic_time () < deadline &&
         kaged_session_manager_is_busy (manager, session_id))
    g_main_context_iteration (NULL, FALSE);

  return !kaged_session_manager_is_busy (manager, session_id);
}

static gint64
id_at (GListModel *model,
       guint       position)
{
  g_autoptr(KagedSession) session = g_list_model_get_item (model, position);

  return session != NULL ? kaged_session_get_id (session) : 0;
}

typedef struct
{
  guint removed;
  guint added;
} Changes;

static void
items_changed_cb (GListModel *model,
                  guint       position,
                  guint       removed,
                  guint       added,
                  Changes    *changes)
{
  changes->removed += removed;
  changes->added += added;
}

static void
test_newest_first (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) older = NULL;
  g_autoptr(KagedSession) newer = NULL;
  g_autoptr(KagedSession) created = NULL;
  g_autoptr(KagedSessionList) list = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedSession) first = NULL;
  Changes changes = { 0, 0 };
  GListModel *model;

  older = kaged_session_manager_create_session (fixture->manager, "Older", &error);
  g_assert_no_error (error);
  g_usleep (2000);
  newer = kaged_session_manager_create_session (fixture->manager, "Newer", &error);
  g_assert_no_error (error);

  list = kaged_session_list_new (fixture->manager);
  model = G_LIST_MODEL (list);
  g_assert_true (g_list_model_get_item_type (model) == KAGED_TYPE_SESSION);
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 2);
  g_assert_cmpint (id_at (model, 0), ==, kaged_session_get_id (newer));
  g_assert_cmpint (id_at (model, 1), ==, kaged_session_get_id (older));
  g_assert_null (g_list_model_get_item (model, 2));

  g_signal_connect (list, "items-changed", G_CALLBACK (items_changed_cb), &changes);

  /* A new conversation appears at the top. */
  g_usleep (2000);
  created = kaged_session_manager_create_session (fixture->manager, "Created", &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 3);
  g_assert_cmpint (id_at (model, 0), ==, kaged_session_get_id (created));
  g_assert_cmpuint (changes.added, ==, 1);

  /* Talking in the oldest one moves it to the top: the same object. */
  first = g_list_model_get_item (model, 2);
  g_usleep (2000);
  receipt = kaged_session_manager_post (fixture->manager, kaged_session_get_id (older),
                                        "Hello there", &error);
  g_assert_no_error (error);
  g_assert_cmpint (id_at (model, 0), ==, kaged_session_get_id (older));
  {
    g_autoptr(KagedSession) top = g_list_model_get_item (model, 0);

    g_assert_true (top == first);
    g_assert_cmpint (kaged_session_get_state (top), ==, KAGED_SESSION_STATE_RUNNING);
  }
  g_assert_cmpint (id_at (model, 1), ==, kaged_session_get_id (created));
  g_assert_cmpint (id_at (model, 2), ==, kaged_session_get_id (newer));

  g_assert_true (wait_for_idle (fixture->manager, kaged_session_get_id (older)));
  g_assert_cmpint (kaged_session_get_state (first), ==, KAGED_SESSION_STATE_IDLE);
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 3);
}

static void
test_title_from_first_message (Fixture       *fixture,
                               gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) untitled = NULL;
  g_autoptr(KagedSession) stored = NULL;
  g_autoptr(KagedSessionList) list = kaged_session_list_new (fixture->manager);
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  KagedSession *session;
  gint64 id;

  untitled = kaged_session_manager_create_session (fixture->manager, NULL, &error);
  g_assert_no_error (error);
  id = kaged_session_get_id (untitled);
  session = kaged_session_list_lookup (list, id);
  g_assert_nonnull (session);
  g_assert_cmpstr (kaged_session_get_title (session), ==, "");

  receipt = kaged_session_manager_post (fixture->manager, id,
                                        "  How do   I bake bread?\nI have flour and water.",
                                        &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_session_get_title (session), ==, "How do I bake bread?");

  /* In the database too, and a later message does not change it. */
  stored = kaged_store_get_session (fixture->store, id, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_session_get_title (stored), ==, "How do I bake bread?");
  g_assert_true (wait_for_idle (fixture->manager, id));
  second = kaged_session_manager_post (fixture->manager, id, "And rye?", &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_session_get_title (session), ==, "How do I bake bread?");
  g_assert_true (wait_for_idle (fixture->manager, id));
}

static void
test_title_from_content (void)
{
  g_autofree char *empty = kaged_session_title_from_content (" \n ");
  g_autofree char *plain = kaged_session_title_from_content ("Hello\tworld");
  g_autofree char *long_title = NULL;
  g_autofree char *long_word = NULL;

  g_assert_cmpstr (empty, ==, "");
  g_assert_cmpstr (plain, ==, "Hello world");

  long_title = kaged_session_title_from_content (
    "Please explain the difference between a process and a thread on Linux in detail");
  g_assert_true (g_str_has_suffix (long_title, "…"));
  g_assert_cmpint (g_utf8_strlen (long_title, -1), <=, KAGED_SESSION_TITLE_MAX_CHARS + 1);
  g_assert_true (g_str_has_prefix (long_title, "Please explain the difference"));
  /* Cut between words. */
  g_assert_false (g_str_has_suffix (long_title, "Linu…"));

  long_word = kaged_session_title_from_content (
    "ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé");
  g_assert_true (g_utf8_validate (long_word, -1, NULL));
  g_assert_cmpint (g_utf8_strlen (long_word, -1), ==, KAGED_SESSION_TITLE_MAX_CHARS + 1);
}

static void
test_rename (Fixture       *fixture,
             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) a = NULL;
  g_autoptr(KagedSession) b = NULL;
  g_autoptr(KagedSession) stored = NULL;
  g_autoptr(KagedSessionList) list = NULL;
  KagedSession *session;

  a = kaged_session_manager_create_session (fixture->manager, "Alpha", &error);
  g_assert_no_error (error);
  g_usleep (2000);
  b = kaged_session_manager_create_session (fixture->manager, "Beta", &error);
  g_assert_no_error (error);
  list = kaged_session_list_new (fixture->manager);
  session = kaged_session_list_lookup (list, kaged_session_get_id (a));

  g_usleep (2000);
  g_assert_true (kaged_session_list_rename (list, kaged_session_get_id (a), "  Groceries ", &error));
  g_assert_no_error (error);
  g_assert_true (kaged_session_list_lookup (list, kaged_session_get_id (a)) == session);
  g_assert_cmpstr (kaged_session_get_title (session), ==, "Groceries");
  stored = kaged_store_get_session (fixture->store, kaged_session_get_id (a), &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_session_get_title (stored), ==, "Groceries");

  /* A new name is not news: the conversation keeps its place, which its
   * last message gave it. */
  g_assert_cmpint (id_at (G_LIST_MODEL (list), 0), ==, kaged_session_get_id (b));
  g_assert_cmpint (id_at (G_LIST_MODEL (list), 1), ==, kaged_session_get_id (a));
  g_assert_cmpint (kaged_session_get_updated_at (stored), ==, kaged_session_get_updated_at (a));

  g_assert_false (kaged_session_list_rename (list, kaged_session_get_id (a), "   ", &error));
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_EMPTY_CONTENT);
  g_clear_error (&error);
  g_assert_cmpstr (kaged_session_get_title (session), ==, "Groceries");

  g_assert_false (kaged_session_list_rename (list, kaged_session_get_id (b) + 100, "x", &error));
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
}

static void
test_hide_and_delete (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) keep = NULL;
  g_autoptr(KagedSession) doomed = NULL;
  g_autoptr(KagedSession) gone = NULL;
  g_autoptr(KagedSessionList) list = NULL;
  guint position = 0;

  keep = kaged_session_manager_create_session (fixture->manager, "Keep", &error);
  g_assert_no_error (error);
  g_usleep (2000);
  doomed = kaged_session_manager_create_session (fixture->manager, "Doomed", &error);
  g_assert_no_error (error);
  list = kaged_session_list_new (fixture->manager);

  /* Hidden while the window offers Undo: still in the database. */
  kaged_session_list_set_hidden (list, kaged_session_get_id (doomed), TRUE);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (list)), ==, 1);
  g_assert_false (kaged_session_list_find (list, kaged_session_get_id (doomed), NULL));
  g_assert_nonnull (kaged_session_list_lookup (list, kaged_session_get_id (doomed)));
  kaged_session_list_set_hidden (list, kaged_session_get_id (doomed), FALSE);
  g_assert_true (kaged_session_list_find (list, kaged_session_get_id (doomed), &position));
  g_assert_cmpuint (position, ==, 0);

  kaged_session_list_set_hidden (list, kaged_session_get_id (doomed), TRUE);
  g_assert_true (kaged_session_list_delete (list, kaged_session_get_id (doomed), &error));
  g_assert_no_error (error);
  g_assert_null (kaged_session_list_lookup (list, kaged_session_get_id (doomed)));
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (list)), ==, 1);
  gone = kaged_store_get_session (fixture->store, kaged_session_get_id (doomed), &error);
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_assert_null (gone);
}

static void
test_delete_while_streaming (Fixture       *fixture,
                             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) busy = NULL;
  g_autoptr(KagedSession) gone = NULL;
  g_autoptr(KagedSessionList) list = NULL;
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) queued = NULL;
  gint64 id;

  busy = kaged_session_manager_create_session (fixture->manager, "Busy", &error);
  g_assert_no_error (error);
  id = kaged_session_get_id (busy);
  list = kaged_session_list_new (fixture->manager);

  first = kaged_session_manager_post (fixture->manager, id, "One", &error);
  g_assert_no_error (error);
  queued = kaged_session_manager_post (fixture->manager, id, "Two", &error);
  g_assert_no_error (error);
  g_assert_cmpint (queued->status, ==, KAGED_RECEIPT_STATUS_QUEUED);

  g_assert_true (kaged_session_list_delete (list, id, &error));
  g_assert_no_error (error);
  g_assert_false (kaged_session_list_find (list, id, NULL));

  /* Gone from the database once the cancelled run wound down; the queued
   * one never started. */
  g_assert_true (wait_for_idle (fixture->manager, id));
  {
    gint64 deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;

    while (g_get_monotonic_time () < deadline && kaged_session_list_lookup (list, id) != NULL)
      g_main_context_iteration (NULL, FALSE);
  }
  gone = kaged_store_get_session (fixture->store, id, &error);
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_assert_null (gone);
  g_assert_null (kaged_session_list_lookup (list, id));
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), <=, 1);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

#define ADD_TEST(path, func) \
  g_test_add ((path), Fixture, NULL, fixture_set_up, (func), fixture_tear_down)

  ADD_TEST ("/session-list/newest-first", test_newest_first);
  ADD_TEST ("/session-list/title-from-first-message", test_title_from_first_message);
  g_test_add_func ("/session-list/title-from-content", test_title_from_content);
  ADD_TEST ("/session-list/rename", test_rename);
  ADD_TEST ("/session-list/hide-and-delete", test_hide_and_delete);
  ADD_TEST ("/session-list/delete-while-streaming", test_delete_while_streaming);

  return g_test_run ();
}
