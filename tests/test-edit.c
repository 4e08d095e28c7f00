/* test-edit.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Editing an operator message: the stored message is never changed; it
 * and everything after it are superseded and the new text is answered.
 */

#include "config.h"

#include <glib/gstdio.h>

#include "kaged-core.h"
#include "kaged-fake-server.h"

typedef struct
{
  char            *dir;
  KagedFakeServer *server;
  KagedStore      *store;
  KagedCore       *core;
  gint64           session_id;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedKeyring) keyring = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autofree char *db_path = NULL;
  g_autofree char *url = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  db_path = g_build_filename (fixture->dir, "kaged.db", NULL);

  fixture->server = kaged_fake_server_new (data, &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (fixture->server);

  fixture->store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);
  keyring = kaged_memory_keyring_new ();
  fixture->core = kaged_core_new (fixture->store, keyring, NULL, NULL, KAGED_CORE_FLAGS_NONE);
  profile = kaged_profile_new ("test", KAGED_PROVIDER_KIND_OPENAI, url, "test-model");
  kaged_core_set_profile (fixture->core, profile);
  kaged_core_start (fixture->core);

  session = kaged_core_create_session (fixture->core, "Edits", &error);
  g_assert_no_error (error);
  fixture->session_id = kaged_session_get_id (session);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GDir) dir = NULL;
  const char *name;

  kaged_core_shutdown (fixture->core);
  for (guint i = 0; i < 50; i++)
    g_main_context_iteration (NULL, FALSE);
  g_clear_object (&fixture->core);
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

static void
wait_idle (Fixture *fixture)
{
  KagedSessionManager *manager = kaged_core_get_manager (fixture->core);
  gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

  while (g_get_monotonic_time () < deadline &&
         kaged_session_manager_is_busy (manager, fixture->session_id))
    g_main_context_iteration (NULL, FALSE);

  g_assert_false (kaged_session_manager_is_busy (manager, fixture->session_id));
}

static GPtrArray *
current (Fixture *fixture)
{
  g_autoptr(GError) error = NULL;
  GPtrArray *messages = kaged_store_list_messages (fixture->store, fixture->session_id, FALSE,
                                                   0, 100, &error);

  g_assert_no_error (error);
  return messages;
}

static KagedReceipt *
post (Fixture    *fixture,
      const char *content)
{
  g_autoptr(GError) error = NULL;
  KagedReceipt *receipt = kaged_core_post (fixture->core, fixture->session_id, content, &error);

  g_assert_no_error (error);
  return receipt;
}

static void
test_edit_supersedes_and_answers (Fixture       *fixture,
                                  gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedReceipt) q1 = post (fixture, "Plan a day in Porto");
  g_autoptr(KagedReceipt) q2 = NULL;
  g_autoptr(KagedReceipt) edit = NULL;
  g_autoptr(GPtrArray) before = NULL;
  g_autoptr(GPtrArray) after = NULL;
  g_autoptr(KagedMessage) original = NULL;
  gint64 reply1, reply2;

  wait_idle (fixture);
  q2 = post (fixture, "And the evening?");
  wait_idle (fixture);
  before = current (fixture);
  g_assert_cmpuint (before->len, ==, 4);
  reply1 = kaged_message_get_id (g_ptr_array_index (before, 1));
  reply2 = kaged_message_get_id (g_ptr_array_index (before, 3));

  edit = kaged_core_edit (fixture->core, fixture->session_id, q1->message_id,
                          "Plan a day in Lisbon", &error);
  g_assert_no_error (error);
  g_assert_nonnull (edit);
  g_assert_cmpint (edit->message_id, >, q2->message_id);
  g_assert_cmpuint (edit->superseded_message_ids->len, ==, 4);
  g_assert_cmpint (g_array_index (edit->superseded_message_ids, gint64, 0), ==, q1->message_id);
  g_assert_cmpint (g_array_index (edit->superseded_message_ids, gint64, 1), ==, reply1);
  g_assert_cmpint (g_array_index (edit->superseded_message_ids, gint64, 2), ==, q2->message_id);
  g_assert_cmpint (g_array_index (edit->superseded_message_ids, gint64, 3), ==, reply2);
  wait_idle (fixture);

  /* The conversation now reads the edited question and its answer. */
  after = current (fixture);
  g_assert_cmpuint (after->len, ==, 2);
  g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (after, 0)), ==, edit->message_id);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (after, 0)), ==, "Plan a day in Lisbon");
  g_assert_cmpint (kaged_message_get_status (g_ptr_array_index (after, 1)), ==,
                   KAGED_MESSAGE_STATUS_COMPLETE);

  /* The stored question is as it was, superseded by the edit's run. */
  original = kaged_store_get_message (fixture->store, q1->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_message_get_content (original), ==, "Plan a day in Porto");
  g_assert_cmpint (kaged_message_get_superseded_by_run (original), ==, edit->run_id);

  /* The edit's run saw only the new question. */
  {
    GBytes *body = kaged_fake_server_get_last_body (fixture->server, NULL);
    g_autofree char *text = g_strndup (g_bytes_get_data (body, NULL), g_bytes_get_size (body));

    g_assert_nonnull (strstr (text, "Lisbon"));
    g_assert_null (strstr (text, "Porto"));
    g_assert_null (strstr (text, "evening"));
  }
}

static void
test_edit_refused (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedReceipt) q1 = post (fixture, "Hello");
  g_autoptr(KagedReceipt) edit = NULL;
  g_autoptr(KagedReceipt) refused = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  gint64 reply;

  wait_idle (fixture);
  messages = current (fixture);
  reply = kaged_message_get_id (g_ptr_array_index (messages, 1));

  refused = kaged_core_edit (fixture->core, fixture->session_id, reply, "No", &error);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_ANCHOR);
  g_assert_null (refused);
  g_clear_error (&error);

  refused = kaged_core_edit (fixture->core, fixture->session_id, q1->message_id, "  \n", &error);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_EMPTY_CONTENT);
  g_clear_error (&error);

  refused = kaged_core_edit (fixture->core, fixture->session_id + 1, q1->message_id, "Hi", &error);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  edit = kaged_core_edit (fixture->core, fixture->session_id, q1->message_id, "Hi", &error);
  g_assert_no_error (error);
  wait_idle (fixture);

  /* Once edited, the old message cannot be edited again. */
  refused = kaged_core_edit (fixture->core, fixture->session_id, q1->message_id, "Hey", &error);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_ANCHOR);
  g_clear_pointer (&messages, g_ptr_array_unref);
  messages = current (fixture);
  g_assert_cmpuint (messages->len, ==, 2);
}

static void
test_edit_while_streaming (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedReceipt) q1 = post (fixture, "Write a long poem");
  g_autoptr(KagedReceipt) q2 = post (fixture, "And a title");
  g_autoptr(KagedReceipt) edit = NULL;
  g_autoptr(KagedRun) first = NULL;
  g_autoptr(KagedRun) queued = NULL;
  g_autoptr(GPtrArray) messages = NULL;

  g_assert_cmpint (q2->status, ==, KAGED_RECEIPT_STATUS_QUEUED);

  /* The streaming answer is cancelled, the queued one never starts. */
  edit = kaged_core_edit (fixture->core, fixture->session_id, q1->message_id, "A short poem", &error);
  g_assert_no_error (error);
  g_assert_cmpint (edit->status, ==, KAGED_RECEIPT_STATUS_DISPATCHED);
  wait_idle (fixture);

  first = kaged_store_get_run (fixture->store, q1->run_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (first), ==, KAGED_RUN_STATUS_CANCELLED);
  queued = kaged_store_get_run (fixture->store, q2->run_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (queued), ==, KAGED_RUN_STATUS_CANCELLED);
  g_assert_cmpint (kaged_run_get_started_at (queued), ==, 0);

  messages = current (fixture);
  g_assert_cmpuint (messages->len, ==, 2);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (messages, 0)), ==, "A short poem");
}

static char *
title_of (Fixture *fixture,
          gint64   session_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) session = kaged_store_get_session (fixture->store, session_id, &error);

  g_assert_no_error (error);
  return g_strdup (kaged_session_get_title (session));
}

static void
session_changed_cb (KagedSessionManager *manager,
                    KagedSession        *session,
                    char               **title)
{
  g_free (*title);
  *title = g_strdup (kaged_session_get_title (session));
}

/* A title taken from the first message follows that message when it is
 * edited; a title the conversation was given or renamed to stays, and so
 * does the title when a later message is edited. */
static void
test_edit_title_follows (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) untitled = kaged_core_create_session (fixture->core, NULL, &error);
  g_autoptr(KagedReceipt) q1 = NULL;
  g_autoptr(KagedReceipt) q2 = NULL;
  g_autoptr(KagedReceipt) edit = NULL;
  g_autoptr(KagedReceipt) later = NULL;
  g_autoptr(KagedReceipt) given = NULL;
  g_autoptr(KagedReceipt) given_edit = NULL;
  g_autofree char *announced = NULL;
  gint64 edits = fixture->session_id;
  gint64 id;
  char *title;

  g_assert_no_error (error);
  id = kaged_session_get_id (untitled);

  q1 = kaged_core_post (fixture->core, id, "Plan a day in Prto", &error);
  g_assert_no_error (error);
  title = title_of (fixture, id);
  g_assert_cmpstr (title, ==, "Plan a day in Prto");
  g_free (title);
  fixture->session_id = id;
  wait_idle (fixture);

  /* Observers (the sidebar, the HTTP API's events) hear of it. */
  g_signal_connect (kaged_core_get_manager (fixture->core), "session-changed",
                    G_CALLBACK (session_changed_cb), &announced);
  edit = kaged_core_edit (fixture->core, id, q1->message_id, "Plan a day in Porto", &error);
  g_assert_no_error (error);
  title = title_of (fixture, id);
  g_assert_cmpstr (title, ==, "Plan a day in Porto");
  g_free (title);
  g_assert_cmpstr (announced, ==, "Plan a day in Porto");
  g_signal_handlers_disconnect_by_func (kaged_core_get_manager (fixture->core), session_changed_cb, &announced);
  wait_idle (fixture);

  /* A later message edited: the title stays. */
  q2 = kaged_core_post (fixture->core, id, "And the evening?", &error);
  g_assert_no_error (error);
  wait_idle (fixture);
  later = kaged_core_edit (fixture->core, id, q2->message_id, "And the night?", &error);
  g_assert_no_error (error);
  title = title_of (fixture, id);
  g_assert_cmpstr (title, ==, "Plan a day in Porto");
  g_free (title);
  wait_idle (fixture);

  /* Renamed: the title is the user's. */
  g_assert_true (kaged_store_rename_session (fixture->store, id, "Holidays", &error));
  g_assert_no_error (error);
  g_clear_pointer (&edit, kaged_receipt_free);
  {
    g_autoptr(GPtrArray) messages = current (fixture);

    edit = kaged_core_edit (fixture->core, id, kaged_message_get_id (g_ptr_array_index (messages, 0)),
                            "Plan a day in Braga", &error);
  }
  g_assert_no_error (error);
  title = title_of (fixture, id);
  g_assert_cmpstr (title, ==, "Holidays");
  g_free (title);
  wait_idle (fixture);

  /* A title given when the conversation began stays too. */
  fixture->session_id = edits;
  given = post (fixture, "Plan a week in Prto");
  wait_idle (fixture);
  given_edit = kaged_core_edit (fixture->core, edits, given->message_id, "Plan a week in Porto", &error);
  g_assert_no_error (error);
  title = title_of (fixture, edits);
  g_assert_cmpstr (title, ==, "Edits");
  g_free (title);
  wait_idle (fixture);
}

int
main (int   argc,
      char *argv[])
{
  const char *quick = "[{\"kind\": \"openai\", \"text\": \"Sure.\", \"chunks\": 2, \"delay_ms\": 5}]";
  const char *slow = "[{\"kind\": \"openai\", \"text\": \"Roses are red, violets are blue\", "
                     "\"chunks\": 20, \"delay_ms\": 100}]";

  g_test_init (&argc, &argv, NULL);

  g_test_add ("/edit/supersedes-and-answers", Fixture, quick, fixture_set_up,
              test_edit_supersedes_and_answers, fixture_tear_down);
  g_test_add ("/edit/refused", Fixture, quick, fixture_set_up, test_edit_refused, fixture_tear_down);
  g_test_add ("/edit/title-follows", Fixture, quick, fixture_set_up, test_edit_title_follows,
              fixture_tear_down);
  g_test_add ("/edit/while-streaming", Fixture, slow, fixture_set_up, test_edit_while_streaming,
              fixture_tear_down);

  return g_test_run ();
}
