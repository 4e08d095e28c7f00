/* test-conversation.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <glib/gstdio.h>
#include <sqlite3.h>

#include "kaged-conversation.h"
#include "kaged-conversation-private.h"
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-session-manager.h"

typedef struct
{
  char                *dir;
  char                *db_path;
  KagedStore          *store;
  KagedSessionManager *manager;
  KagedFakeServer     *server;
  char                *url;
  KagedSession        *session;
  GPtrArray           *finished;   /* KagedRun */
  /* ::items-changed of the conversation under test, as "position:removed:added" */
  GPtrArray           *changes;
  guint                n_deltas;   /* ::message-delta for the session */
} Fixture;

static void
on_run_changed (KagedSessionManager *manager,
                KagedRun            *run,
                Fixture             *fixture)
{
  if (kaged_run_is_finished (run))
    g_ptr_array_add (fixture->finished, g_object_ref (run));
}

static void
on_delta (KagedSessionManager *manager,
          gint64               session_id,
          gint64               message_id,
          gint64               run_id,
          const char          *text,
          Fixture             *fixture)
{
  fixture->n_deltas++;
}

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedRandom) random = kaged_random_new_with_seed (3);
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(GError) error = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  fixture->db_path = g_build_filename (fixture->dir, "kaged.db", NULL);
  fixture->store = kaged_store_open (fixture->db_path, &error);
  g_assert_no_error (error);

  fixture->server = kaged_fake_server_new ("[{\"kind\": \"openai\", \"text\": \"Hello\"}]", &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  fixture->url = kaged_fake_server_get_url (fixture->server);

  fixture->manager = kaged_session_manager_new (fixture->store, NULL);
  resolver = kaged_resolver_new_full (kaged_http_get_default_session (), keyring,
                                      kaged_clock_get_default (), random);
  profile = kaged_profile_new ("test", KAGED_PROVIDER_KIND_OPENAI, fixture->url, "test-model");
  kaged_session_manager_set_model (fixture->manager, resolver, profile);

  fixture->finished = g_ptr_array_new_with_free_func (g_object_unref);
  fixture->changes = g_ptr_array_new_with_free_func (g_free);
  g_signal_connect (fixture->manager, "run-changed", G_CALLBACK (on_run_changed), fixture);
  g_signal_connect (fixture->manager, "message-delta", G_CALLBACK (on_delta), fixture);

  fixture->session = kaged_session_manager_create_session (fixture->manager, "Test", &error);
  g_assert_no_error (error);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  kaged_session_manager_shutdown (fixture->manager);
  while (g_main_context_iteration (NULL, FALSE))
    ;

  g_clear_object (&fixture->session);
  g_clear_object (&fixture->manager);
  g_clear_object (&fixture->store);
  g_clear_object (&fixture->server);
  g_clear_pointer (&fixture->finished, g_ptr_array_unref);
  g_clear_pointer (&fixture->changes, g_ptr_array_unref);
  g_clear_pointer (&fixture->url, g_free);

  {
    g_autofree char *wal = g_strconcat (fixture->db_path, "-wal", NULL);
    g_autofree char *shm = g_strconcat (fixture->db_path, "-shm", NULL);

    g_unlink (wal);
    g_unlink (shm);
    g_unlink (fixture->db_path);
    g_rmdir (fixture->dir);
  }
  g_clear_pointer (&fixture->db_path, g_free);
  g_clear_pointer (&fixture->dir, g_free);
}

static void
set_scenario (Fixture    *fixture,
              const char *scenario)
{
  g_autoptr(GError) error = NULL;

  kaged_fake_server_set_scenario (fixture->server, scenario, &error);
  g_assert_no_error (error);
  kaged_fake_server_reset (fixture->server);
}

static gboolean
timeout_cb (gpointer user_data)
{
  gboolean *timed_out = user_data;

  *timed_out = TRUE;
  return G_SOURCE_REMOVE;
}

static gboolean
run_finished (Fixture *fixture,
              gint64   run_id)
{
  for (guint i = 0; i < fixture->finished->len; i++)
    {
      if (kaged_run_get_id (g_ptr_array_index (fixture->finished, i)) == run_id)
        return TRUE;
    }

  return FALSE;
}

/* Turns the main loop until the run ends; the guard only stops a hang. */
static void
wait_run (Fixture *fixture,
          gint64   run_id)
{
  gboolean timed_out = FALSE;
  guint id = g_timeout_add_seconds (20, timeout_cb, &timed_out);

  while (!run_finished (fixture, run_id) && !timed_out)
    g_main_context_iteration (NULL, TRUE);

  g_assert_false (timed_out);
  g_source_remove (id);
}

/* Turns the main loop until the conversation holds @n items. */
static void
wait_n_items (Fixture    *fixture,
              GListModel *model,
              guint       n)
{
  gboolean timed_out = FALSE;
  guint id = g_timeout_add_seconds (20, timeout_cb, &timed_out);

  while (g_list_model_get_n_items (model) != n && !timed_out)
    g_main_context_iteration (NULL, TRUE);

  g_assert_cmpuint (g_list_model_get_n_items (model), ==, n);
  g_source_remove (id);
}

static KagedReceipt *
post (Fixture    *fixture,
      const char *content)
{
  g_autoptr(GError) error = NULL;
  KagedReceipt *receipt;

  receipt = kaged_session_manager_post (fixture->manager, kaged_session_get_id (fixture->session),
                                        content, &error);
  g_assert_no_error (error);
  return receipt;
}

static KagedConversation *
open_conversation (Fixture *fixture)
{
  g_autoptr(GError) error = NULL;
  KagedConversation *conversation;

  conversation = kaged_conversation_new (fixture->manager, kaged_session_get_id (fixture->session),
                                         &error);
  g_assert_no_error (error);
  g_assert_nonnull (conversation);
  return conversation;
}

static void
on_items_changed (GListModel *model,
                  guint       position,
                  guint       removed,
                  guint       added,
                  Fixture    *fixture)
{
  g_ptr_array_add (fixture->changes, g_strdup_printf ("%u:%u:%u", position, removed, added));
}

static char *
changes_string (Fixture *fixture)
{
  g_autoptr(GString) out = g_string_new (NULL);

  for (guint i = 0; i < fixture->changes->len; i++)
    {
      if (i > 0)
        g_string_append_c (out, ' ');
      g_string_append (out, g_ptr_array_index (fixture->changes, i));
    }

  return g_strdup (out->str);
}

/* The contents of the list, space-separated. */
static char *
contents (GListModel *model)
{
  g_autoptr(GString) out = g_string_new (NULL);

  for (guint i = 0; i < g_list_model_get_n_items (model); i++)
    {
      g_autoptr(KagedMessage) message = g_list_model_get_item (model, i);

      if (i > 0)
        g_string_append_c (out, ' ');
      g_string_append (out, kaged_message_get_content (message));
    }

  return g_strdup (out->str);
}

static KagedMessage *
item (GListModel *model,
      guint       position)
{
  g_autoptr(KagedMessage) message = g_list_model_get_item (model, position);

  g_assert_nonnull (message);
  /* The list keeps its own reference. */
  return message;
}

/* ------------------------------------------------------------------------ */

static void
test_missing_session (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedConversation) conversation = NULL;

  conversation = kaged_conversation_new (fixture->manager, 9999, &error);
  g_assert_null (conversation);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
}

/* Q2 and Q3 posted while A1 streams: each reply goes in after its
 * question, at the position items-changed says. */
static void
test_queued_posts_in_order (Fixture       *fixture,
                            gconstpointer  data)
{
  g_autoptr(KagedConversation) conversation = open_conversation (fixture);
  g_autoptr(KagedConversation) reopened = NULL;
  g_autoptr(KagedReceipt) q1 = NULL;
  g_autoptr(KagedReceipt) q2 = NULL;
  g_autoptr(KagedReceipt) q3 = NULL;
  g_autofree char *changes = NULL;
  g_autofree char *listed = NULL;
  g_autofree char *listed_again = NULL;
  GListModel *model = G_LIST_MODEL (conversation);

  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 0);
  g_assert_true (g_list_model_get_item_type (model) == KAGED_TYPE_MESSAGE);
  g_assert_cmpint (kaged_conversation_get_session_id (conversation), ==,
                   kaged_session_get_id (fixture->session));
  g_signal_connect (conversation, "items-changed", G_CALLBACK (on_items_changed), fixture);

  set_scenario (fixture,
                "[{\"kind\": \"openai\", \"text\": \"A1\", \"chunks\": 2, \"delay_ms\": 20},"
                " {\"kind\": \"openai\", \"text\": \"A2\"},"
                " {\"kind\": \"openai\", \"text\": \"A3\"}]");

  q1 = post (fixture, "Q1");
  /* Q1 and its (empty) reply. */
  wait_n_items (fixture, model, 2);
  q2 = post (fixture, "Q2");
  q3 = post (fixture, "Q3");
  wait_run (fixture, q3->run_id);

  listed = contents (model);
  g_assert_cmpstr (listed, ==, "Q1 A1 Q2 A2 Q3 A3");

  /* Q1, A1, Q2, Q3 at the end; A2 before Q3; A3 at the end. */
  changes = changes_string (fixture);
  g_assert_cmpstr (changes, ==, "0:0:1 1:0:1 2:0:1 3:0:1 3:0:1 5:0:1");

  /* What the store says, read afresh. */
  reopened = open_conversation (fixture);
  listed_again = contents (G_LIST_MODEL (reopened));
  g_assert_cmpstr (listed_again, ==, listed);

  /* Anchors. */
  g_assert_cmpint (kaged_conversation_get_anchor_id (conversation, item (model, 3)), ==,
                   q2->message_id);
  g_assert_cmpint (kaged_conversation_get_anchor_id (conversation, item (model, 2)), ==,
                   q2->message_id);
  g_assert_cmpint (kaged_conversation_get_anchor_id (conversation, item (model, 5)), ==,
                   q3->message_id);
}

static void
count_notify (GObject    *object,
              GParamSpec *pspec,
              guint      *count)
{
  (*count)++;
}

/* A streamed reply grows in place: the same object, one notification per
 * announcement of the manager (which coalesces the provider's pieces),
 * no items-changed. */
static void
test_delta_in_place (Fixture       *fixture,
                     gconstpointer  data)
{
  g_autoptr(KagedConversation) conversation = open_conversation (fixture);
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  g_autoptr(KagedMessage) again = NULL;
  g_autofree char *text = NULL;
  g_autofree char *changes = NULL;
  GListModel *model = G_LIST_MODEL (conversation);
  guint n_notify = 0;
  guint n_deltas;

  text = g_strnfill (400, 'x');
  {
    g_autofree char *scenario =
      g_strdup_printf ("[{\"kind\": \"openai\", \"text\": \"%s\", \"chunks\": 100, "
                       "\"delay_ms\": 2}]", text);
    set_scenario (fixture, scenario);
  }

  receipt = post (fixture, "Stream");
  wait_n_items (fixture, model, 2);
  reply = g_list_model_get_item (model, 1);
  g_assert_nonnull (reply);
  n_deltas = fixture->n_deltas;
  g_signal_connect (reply, "notify::content", G_CALLBACK (count_notify), &n_notify);
  g_signal_connect (conversation, "items-changed", G_CALLBACK (on_items_changed), fixture);

  wait_run (fixture, receipt->run_id);
  n_deltas = fixture->n_deltas - n_deltas;

  g_test_message ("%u announcements, %u notifications for 100 pieces", n_deltas, n_notify);
  g_assert_cmpuint (n_deltas, >=, 1);
  g_assert_cmpuint (n_notify, ==, n_deltas);
  g_assert_cmpuint (n_notify, <, 100);
  g_assert_cmpstr (kaged_message_get_content (reply), ==, text);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_COMPLETE);

  again = g_list_model_get_item (model, 1);
  g_assert_true (again == reply);
  changes = changes_string (fixture);
  g_assert_cmpstr (changes, ==, "");
}

/* A conversation opened while a reply streams continues from the text
 * announced so far. */
static void
test_open_while_streaming (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(KagedConversation) conversation = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  g_autofree char *text = g_strnfill (300, 'y');
  g_autofree char *scenario =
    g_strdup_printf ("[{\"kind\": \"openai\", \"text\": \"%s\", \"chunks\": 60, "
                     "\"delay_ms\": 3}]", text);
  gboolean timed_out = FALSE;
  guint id;

  set_scenario (fixture, scenario);
  receipt = post (fixture, "Stream");

  id = g_timeout_add_seconds (20, timeout_cb, &timed_out);
  while (fixture->n_deltas < 2 && !timed_out)
    g_main_context_iteration (NULL, TRUE);
  g_assert_false (timed_out);
  g_source_remove (id);

  conversation = open_conversation (fixture);
  reply = g_list_model_get_item (G_LIST_MODEL (conversation), 1);
  g_assert_nonnull (reply);
  wait_run (fixture, receipt->run_id);

  g_assert_cmpstr (kaged_message_get_content (reply), ==, text);
}

/* Regenerating: the superseded reply leaves the list, the new one comes in
 * at the same place, and every version keeps its object. */
static void
test_regenerate (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autoptr(KagedConversation) conversation = open_conversation (fixture);
  g_autoptr(KagedReceipt) q1 = NULL;
  g_autoptr(KagedReceipt) q2 = NULL;
  g_autoptr(KagedReceipt) regen = NULL;
  g_autoptr(KagedMessage) old_reply = NULL;
  g_autoptr(KagedMessage) new_reply = NULL;
  g_autoptr(GPtrArray) versions = NULL;
  g_autoptr(GPtrArray) versions_again = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *changes = NULL;
  g_autofree char *listed = NULL;
  GListModel *model = G_LIST_MODEL (conversation);
  gint64 session_id = kaged_session_get_id (fixture->session);
  guint n_notify = 0;
  guint position = 0;

  set_scenario (fixture,
                "[{\"kind\": \"openai\", \"text\": \"A1\"},"
                " {\"kind\": \"openai\", \"text\": \"A2\"},"
                " {\"kind\": \"openai\", \"text\": \"A2 again\"}]");

  q1 = post (fixture, "Q1");
  wait_run (fixture, q1->run_id);
  q2 = post (fixture, "Q2");
  wait_run (fixture, q2->run_id);
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 4);

  old_reply = g_list_model_get_item (model, 3);
  g_signal_connect (conversation, "items-changed", G_CALLBACK (on_items_changed), fixture);
  g_signal_connect (conversation, "notify::n-items", G_CALLBACK (count_notify), &n_notify);

  regen = kaged_session_manager_regenerate (fixture->manager, session_id, q2->message_id, &error);
  g_assert_no_error (error);
  wait_run (fixture, regen->run_id);

  changes = changes_string (fixture);
  g_assert_cmpstr (changes, ==, "3:1:0 3:0:1");
  g_assert_cmpuint (n_notify, ==, 2);
  listed = contents (model);
  g_assert_cmpstr (listed, ==, "Q1 A1 Q2 A2 again");
  g_assert_cmpint (kaged_message_get_superseded_by_run (old_reply), ==, regen->run_id);

  new_reply = g_list_model_get_item (model, 3);
  versions = kaged_conversation_list_versions (conversation, q2->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (versions->len, ==, 2);
  g_assert_true (g_ptr_array_index (versions, 0) == old_reply);
  g_assert_true (g_ptr_array_index (versions, 1) == new_reply);

  versions_again = kaged_conversation_list_versions (conversation, q2->message_id, &error);
  g_assert_no_error (error);
  g_assert_true (g_ptr_array_index (versions_again, 0) == old_reply);
  g_assert_true (g_ptr_array_index (versions_again, 1) == new_reply);

  g_assert_cmpint (kaged_conversation_get_anchor_id (conversation, old_reply), ==,
                   q2->message_id);
  g_assert_cmpint (kaged_conversation_get_anchor_id (conversation, new_reply), ==,
                   q2->message_id);

  /* An earlier anchor supersedes the rest of the list. */
  g_ptr_array_set_size (fixture->changes, 0);
  g_clear_pointer (&regen, kaged_receipt_free);
  set_scenario (fixture, "[{\"kind\": \"openai\", \"text\": \"A1 again\"}]");
  regen = kaged_session_manager_regenerate (fixture->manager, session_id, q1->message_id, &error);
  g_assert_no_error (error);
  wait_run (fixture, regen->run_id);
  g_clear_pointer (&changes, g_free);
  changes = changes_string (fixture);
  g_assert_cmpstr (changes, ==, "1:3:0 1:0:1");
  g_clear_pointer (&listed, g_free);
  listed = contents (model);
  g_assert_cmpstr (listed, ==, "Q1 A1 again");

  /* Superseded messages stand where the first current one after them does. */
  g_assert_true (kaged_conversation_find_position (conversation,
                                                   kaged_message_get_id (old_reply),
                                                   &position, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (position, ==, 2);
  g_assert_true (kaged_conversation_find_position (conversation, q1->message_id, &position,
                                                   &error));
  g_assert_no_error (error);
  g_assert_cmpuint (position, ==, 0);
}

/* A session of 25,000 questions and answers written straight into the
 * file: replies to even questions were written after the next question,
 * as queued posts are. */
static gint64
fill_long_session (Fixture *fixture,
                   guint    n_turns)
{
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *sql = NULL;
  sqlite3 *db = NULL;
  gint64 session_id;
  char *errmsg = NULL;

  session = kaged_store_create_session (fixture->store, "Long", &error);
  g_assert_no_error (error);
  session_id = kaged_session_get_id (session);
  g_clear_object (&fixture->manager);
  g_clear_object (&fixture->store);

  /* Turn t: question 1000 + 2t, answer 1000 + 2t + 1 (run t + 1); for
   * even t, the answer's id is past the next question's. */
  sql = g_strdup_printf (
    "BEGIN;"
    "WITH RECURSIVE t(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM t WHERE n + 1 < %u) "
    "INSERT INTO runs (id, session_id, anchor_id, status, created_at) "
    "SELECT n + 1, %" G_GINT64_FORMAT ", 1000 + 2 * n, 'succeeded', 1 FROM t;"
    "WITH RECURSIVE t(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM t WHERE n + 1 < %u) "
    "INSERT INTO messages (id, session_id, role, content, created_at) "
    "SELECT 1000 + 2 * n, %" G_GINT64_FORMAT ", 'operator', 'Question ' || n, 1 FROM t;"
    "WITH RECURSIVE t(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM t WHERE n + 1 < %u) "
    "INSERT INTO messages (id, session_id, role, content, created_at, run_id, status, "
    "anchor_id) "
    "SELECT CASE WHEN n %% 2 = 0 AND n + 1 < %u THEN 100000000 + n ELSE 1000 + 2 * n + 1 END, "
    "%" G_GINT64_FORMAT ", 'agent', 'Answer ' || n, 1, n + 1, 'complete', 1000 + 2 * n FROM t;"
    "COMMIT;",
    n_turns, session_id, n_turns, session_id, n_turns, n_turns, session_id);

  g_assert_cmpint (sqlite3_open (fixture->db_path, &db), ==, SQLITE_OK);
  if (sqlite3_exec (db, sql, NULL, NULL, &errmsg) != SQLITE_OK)
    g_error ("%s", errmsg);
  sqlite3_close (db);

  fixture->store = kaged_store_open (fixture->db_path, &error);
  g_assert_no_error (error);
  fixture->manager = kaged_session_manager_new (fixture->store, NULL);

  return session_id;
}

static void
assert_turn (GListModel *model,
             guint       position)
{
  g_autoptr(KagedMessage) message = g_list_model_get_item (model, position);
  g_autofree char *expected = g_strdup_printf ("%s %u", position % 2 == 0 ? "Question" : "Answer",
                                               position / 2);

  g_assert_nonnull (message);
  g_assert_cmpstr (kaged_message_get_content (message), ==, expected);
}

/* Turns of the long conversations: 25,000, or 2,500 under valgrind
 * (KAGED_TEST_VALGRIND, set by the valgrind setup); the pages and the
 * checks are the same. Even, so that the middle turn is an even one. */
static guint
long_turns (void)
{
  return g_getenv ("KAGED_TEST_VALGRIND") != NULL ? 2500 : 25000;
}

/* Only the pages looked at are read, wherever they are. */
static void
test_lazy_paging (Fixture       *fixture,
                  gconstpointer  data)
{
  g_autoptr(KagedConversation) conversation = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedMessage) first = NULL;
  g_autoptr(KagedMessage) first_again = NULL;
  GListModel *model;
  guint n = long_turns ();
  gint64 session_id = fill_long_session (fixture, n);
  guint loaded;

  conversation = kaged_conversation_new (fixture->manager, session_id, &error);
  g_assert_no_error (error);
  model = G_LIST_MODEL (conversation);
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 2 * n);
  g_assert_cmpuint (_kaged_conversation_get_n_loaded (conversation), ==, 0);

  /* The last 50, as a view opened at the end reads them. */
  for (guint i = 2 * n; i > 2 * n - 50; i--)
    assert_turn (model, i - 1);
  loaded = _kaged_conversation_get_n_loaded (conversation);
  g_test_message ("%u messages read for the last 50", loaded);
  g_assert_cmpuint (loaded, >=, 50);
  g_assert_cmpuint (loaded, <=, 128);

  /* The start and the middle: a page each. */
  assert_turn (model, 0);
  assert_turn (model, 1);
  g_assert_cmpuint (_kaged_conversation_get_n_loaded (conversation), <=, loaded + 64);
  loaded = _kaged_conversation_get_n_loaded (conversation);
  for (guint i = n; i < n + 10; i++)
    assert_turn (model, i);
  g_assert_cmpuint (_kaged_conversation_get_n_loaded (conversation), <=, loaded + 64);

  /* Scrolling on from a loaded page. */
  for (guint i = n + 10; i < n + 300; i++)
    assert_turn (model, i);
  g_assert_cmpuint (_kaged_conversation_get_n_loaded (conversation), <, 1000);

  first = g_list_model_get_item (model, 0);
  first_again = g_list_model_get_item (model, 0);
  g_assert_true (first == first_again);
}

static void
assert_position (KagedConversation *conversation,
                 gint64             message_id,
                 guint              expected)
{
  g_autoptr(GError) error = NULL;
  guint position = G_MAXUINT;

  g_assert_true (kaged_conversation_find_position (conversation, message_id, &position, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (position, ==, expected);
}

/* A message's position is counted in the store, not found by reading
 * everything before it; a page read from there is all that is loaded. */
static void
test_find_position (Fixture       *fixture,
                    gconstpointer  data)
{
  g_autoptr(KagedConversation) conversation = NULL;
  g_autoptr(KagedSession) other = NULL;
  g_autoptr(GError) error = NULL;
  GListModel *model;
  guint n = long_turns ();
  gint64 session_id = fill_long_session (fixture, n);
  guint position = 7;
  guint loaded;

  conversation = kaged_conversation_new (fixture->manager, session_id, &error);
  g_assert_no_error (error);
  model = G_LIST_MODEL (conversation);
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 2 * n);

  /* Question t has id 1000 + 2t; the answer to an even question was
   * written after the next question. */
  assert_position (conversation, 1000, 0);
  assert_position (conversation, 100000000, 1);
  assert_position (conversation, 1000 + 2 * 1, 2);
  assert_position (conversation, 1000 + 2 * (n / 2), n);
  assert_position (conversation, 100000000 + n / 2, n + 1);
  assert_position (conversation, 1000 + 2 * (n - 1) + 1, 2 * n - 1);
  g_assert_cmpuint (_kaged_conversation_get_n_loaded (conversation), ==, 0);

  /* A page of 50 in the middle, as the HTTP API reads after= a message. */
  for (guint i = n + 1; i < n + 51; i++)
    assert_turn (model, i);
  loaded = _kaged_conversation_get_n_loaded (conversation);
  g_test_message ("%u messages read for a page of 50", loaded);
  g_assert_cmpuint (loaded, >=, 50);
  g_assert_cmpuint (loaded, <=, 128);

  /* Loaded messages are found among the loaded ones, and agree. */
  assert_position (conversation, 100000000 + n / 2 + 10, n + 21);
  assert_position (conversation, 1000 + 2 * (n / 2 + 21) + 1, n + 43);
  g_assert_cmpuint (_kaged_conversation_get_n_loaded (conversation), ==, loaded);

  /* Messages the session does not have. */
  g_assert_false (kaged_conversation_find_position (conversation, 999, &position, &error));
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
  g_assert_cmpuint (position, ==, 7);
  g_clear_error (&error);

  other = kaged_store_create_session (fixture->store, "Other", &error);
  g_assert_no_error (error);
  g_clear_object (&conversation);
  conversation = kaged_conversation_new (fixture->manager, kaged_session_get_id (other), &error);
  g_assert_no_error (error);
  g_assert_false (kaged_conversation_find_position (conversation, 1000, &position, &error));
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
}

/* The pager reads versions: a superseded one without a word of text (a
 * failure before the reply began, a retry that failed again) has nothing
 * to read and is left out. The engine keeps and lists them all. */
static void
test_versions_skip_empty (Fixture       *fixture,
                          gconstpointer  data)
{
  g_autoptr(KagedConversation) conversation = open_conversation (fixture);
  g_autoptr(KagedReceipt) q1 = NULL;
  g_autoptr(KagedReceipt) good = NULL;
  g_autoptr(KagedReceipt) bad = NULL;
  g_autoptr(GPtrArray) versions = NULL;
  g_autoptr(GPtrArray) all = NULL;
  g_autoptr(GError) error = NULL;
  GListModel *model = G_LIST_MODEL (conversation);
  gint64 session_id = kaged_session_get_id (fixture->session);
  g_autoptr(KagedMessage) current = NULL;

  set_scenario (fixture,
                "[{\"status\": 400, \"body\": {\"error\": {\"message\": \"Bad request\"}}},"
                " {\"kind\": \"openai\", \"text\": \"A1\"},"
                " {\"status\": 400, \"body\": {\"error\": {\"message\": \"Bad request\"}}}]");

  q1 = post (fixture, "Q1");
  wait_run (fixture, q1->run_id);
  good = kaged_session_manager_regenerate (fixture->manager, session_id, q1->message_id, &error);
  g_assert_no_error (error);
  wait_run (fixture, good->run_id);

  versions = kaged_conversation_list_versions (conversation, q1->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (versions->len, ==, 1);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (versions, 0)), ==, "A1");
  g_clear_pointer (&versions, g_ptr_array_unref);

  /* The version shown is listed even without text. */
  bad = kaged_session_manager_regenerate (fixture->manager, session_id, q1->message_id, &error);
  g_assert_no_error (error);
  wait_run (fixture, bad->run_id);
  current = g_list_model_get_item (model, g_list_model_get_n_items (model) - 1);
  g_assert_cmpint (kaged_message_get_status (current), ==, KAGED_MESSAGE_STATUS_FAILED);
  versions = kaged_conversation_list_versions (conversation, q1->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (versions->len, ==, 2);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (versions, 0)), ==, "A1");
  g_assert_true (g_ptr_array_index (versions, 1) == current);

  all = kaged_session_manager_list_versions (fixture->manager, session_id, q1->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (all->len, ==, 3);
}

/* A retry stopped before its first word leaves a reply with nothing in
 * it: the failure before it stays in the pager, to say why. */
static void
test_versions_keep_failure_before_stop (Fixture       *fixture,
                                        gconstpointer  data)
{
  g_autoptr(KagedConversation) conversation = open_conversation (fixture);
  g_autoptr(KagedReceipt) q1 = NULL;
  g_autoptr(KagedReceipt) again = NULL;
  g_autoptr(KagedReceipt) stopped = NULL;
  g_autoptr(GPtrArray) versions = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);

  set_scenario (fixture,
                "[{\"status\": 400, \"body\": {\"error\": {\"message\": \"Bad request\"}}},"
                " {\"status\": 400, \"body\": {\"error\": {\"message\": \"Bad request\"}}},"
                " {\"kind\": \"openai\", \"text\": \"Late\", \"chunks\": 4, \"delay_ms\": 2000}]");

  q1 = post (fixture, "Q1");
  wait_run (fixture, q1->run_id);
  again = kaged_session_manager_regenerate (fixture->manager, session_id, q1->message_id, &error);
  g_assert_no_error (error);
  wait_run (fixture, again->run_id);

  stopped = kaged_session_manager_regenerate (fixture->manager, session_id, q1->message_id, &error);
  g_assert_no_error (error);

  /* While the retry is under way, its reply is all the pager offers: the
   * failures before it say nothing the retry banner does not. */
  {
    GListModel *model = G_LIST_MODEL (conversation);
    gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
    g_autoptr(KagedMessage) last = NULL;

    for (;;)
      {
        g_clear_object (&last);
        last = g_list_model_get_item (model, g_list_model_get_n_items (model) - 1);
        if (kaged_message_get_role (last) == KAGED_MESSAGE_ROLE_AGENT &&
            kaged_message_get_status (last) == KAGED_MESSAGE_STATUS_STREAMING)
          break;
        g_assert_cmpint (g_get_monotonic_time (), <, deadline);
        g_main_context_iteration (NULL, TRUE);
      }
    versions = kaged_conversation_list_versions (conversation, q1->message_id, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (versions->len, ==, 1);
    g_assert_true (g_ptr_array_index (versions, 0) == last);
    g_clear_pointer (&versions, g_ptr_array_unref);
  }

  g_assert_true (kaged_session_manager_cancel (fixture->manager, session_id, stopped->run_id, &error));
  g_assert_no_error (error);
  wait_run (fixture, stopped->run_id);

  versions = kaged_conversation_list_versions (conversation, q1->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (versions->len, ==, 2);
  g_assert_cmpint (kaged_message_get_status (g_ptr_array_index (versions, 0)), ==,
                   KAGED_MESSAGE_STATUS_FAILED);
  g_assert_cmpint (kaged_message_get_status (g_ptr_array_index (versions, 1)), ==,
                   KAGED_MESSAGE_STATUS_CANCELLED);
}

/* A regeneration takes the turns after a reply out of the conversation
 * with it: they are read from that earlier version. One that failed before
 * its first word stays in the pager when turns followed it. */
static void
test_superseded_with (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(KagedConversation) conversation = open_conversation (fixture);
  g_autoptr(KagedReceipt) q1 = NULL;
  g_autoptr(KagedReceipt) q2 = NULL;
  g_autoptr(KagedReceipt) again = NULL;
  g_autoptr(GPtrArray) versions = NULL;
  g_autoptr(GPtrArray) later = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);
  KagedMessage *failed;

  set_scenario (fixture,
                "[{\"status\": 400, \"body\": {\"error\": {\"message\": \"Bad request\"}}},"
                " {\"kind\": \"openai\", \"text\": \"A2\"},"
                " {\"kind\": \"openai\", \"text\": \"A1\"}]");

  q1 = post (fixture, "Q1");
  wait_run (fixture, q1->run_id);
  q2 = post (fixture, "Q2");
  wait_run (fixture, q2->run_id);
  again = kaged_session_manager_regenerate (fixture->manager, session_id, q1->message_id, &error);
  g_assert_no_error (error);
  wait_run (fixture, again->run_id);

  versions = kaged_conversation_list_versions (conversation, q1->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (versions->len, ==, 2);
  failed = g_ptr_array_index (versions, 0);
  g_assert_cmpint (kaged_message_get_status (failed), ==, KAGED_MESSAGE_STATUS_FAILED);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (versions, 1)), ==, "A1");

  later = kaged_conversation_list_superseded_with (conversation, kaged_message_get_id (failed),
                                                   0, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (later->len, ==, 2);
  g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (later, 0)), ==, q2->message_id);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (later, 0)), ==, "Q2");
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (later, 1)), ==, "A2");
  g_assert_true (kaged_message_is_superseded (g_ptr_array_index (later, 1)));
  g_clear_pointer (&later, g_ptr_array_unref);

  /* The current reply: nothing has left after it. */
  later = kaged_conversation_list_superseded_with (conversation,
                                                   kaged_message_get_id (g_ptr_array_index (versions, 1)),
                                                   0, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (later->len, ==, 0);
  g_clear_pointer (&later, g_ptr_array_unref);

  /* Only messages of this conversation. */
  g_assert_null (kaged_conversation_list_superseded_with (conversation, 424242, 0, NULL, &error));
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
}

/* An edited question keeps its earlier texts: the conversation lists them
 * for the pager, the one shown in the list last, as the same object. */
static void
test_edits (Fixture       *fixture,
            gconstpointer  data)
{
  g_autoptr(KagedConversation) conversation = open_conversation (fixture);
  g_autoptr(KagedReceipt) q1 = NULL;
  g_autoptr(KagedReceipt) edited = NULL;
  g_autoptr(GPtrArray) edits = NULL;
  g_autoptr(GPtrArray) later = NULL;
  g_autoptr(KagedMessage) shown = NULL;
  g_autoptr(GError) error = NULL;
  GListModel *model = G_LIST_MODEL (conversation);
  gint64 session_id = kaged_session_get_id (fixture->session);

  set_scenario (fixture,
                "[{\"kind\": \"openai\", \"text\": \"A1\"},"
                " {\"kind\": \"openai\", \"text\": \"A1 edited\"}]");

  q1 = post (fixture, "Q1");
  wait_run (fixture, q1->run_id);
  edits = kaged_conversation_list_edits (conversation, q1->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (edits->len, ==, 1);
  g_clear_pointer (&edits, g_ptr_array_unref);

  edited = kaged_session_manager_edit (fixture->manager, session_id, q1->message_id, "Q1, better",
                                       &error);
  g_assert_no_error (error);
  wait_run (fixture, edited->run_id);
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 2);
  shown = g_list_model_get_item (model, 0);
  g_assert_cmpint (kaged_message_get_id (shown), ==, edited->message_id);

  edits = kaged_conversation_list_edits (conversation, edited->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (edits->len, ==, 2);
  g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (edits, 0)), ==, q1->message_id);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (edits, 0)), ==, "Q1");
  g_assert_true (g_ptr_array_index (edits, 1) == shown);

  /* The earlier text is followed by its own reply. */
  later = kaged_conversation_list_superseded_with (conversation, q1->message_id, 0, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (later->len, ==, 1);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (later, 0)), ==, "A1");
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

#define ADD(path, func) \
  g_test_add ("/conversation/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  ADD ("missing-session", test_missing_session);
  ADD ("queued-posts-in-order", test_queued_posts_in_order);
  ADD ("delta-in-place", test_delta_in_place);
  ADD ("open-while-streaming", test_open_while_streaming);
  ADD ("regenerate", test_regenerate);
  ADD ("versions-skip-empty", test_versions_skip_empty);
  ADD ("versions-keep-failure-before-stop", test_versions_keep_failure_before_stop);
  ADD ("superseded-with", test_superseded_with);
  ADD ("edits", test_edits);
  ADD ("lazy-paging", test_lazy_paging);
  ADD ("find-position", test_find_position);

#undef ADD

  return g_test_run ();
}
