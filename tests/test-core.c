/* test-core.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * KagedCore, the one composition root: what it hands the window and the
 * HTTP API (shared conversations, regenerate from a reply, Tier 2 on and
 * off) and the server it owns.
 */

#include "config.h"

#include <glib/gstdio.h>

#include "kaged-core.h"
#include "kaged-fake-server.h"

#define WAIT_SECONDS 30

typedef struct
{
  char            *dir;
  KagedFakeServer *server;
  KagedClock      *clock;
  KagedCore       *core;
  gint64           session_id;
} Fixture;

/* Fails at once with 529, and says not to retry inside the run. */
#define OVERLOADED \
  "{\"status\": 529, \"headers\": {\"x-should-retry\": \"false\"}, " \
  "\"body\": {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", " \
  "\"message\": \"Overloaded\"}}}"

static gboolean
timeout_cb (gpointer user_data)
{
  gboolean *timed_out = user_data;

  *timed_out = TRUE;
  return G_SOURCE_REMOVE;
}

static KagedRun *
wait_for_run (Fixture *fixture,
              gint64   run_id)
{
  g_autoptr(GError) error = NULL;
  gboolean timed_out = FALSE;
  guint timeout_id = g_timeout_add_seconds (WAIT_SECONDS, timeout_cb, &timed_out);
  KagedRun *run = NULL;

  for (;;)
    {
      g_clear_object (&run);
      run = kaged_session_manager_get_run (kaged_core_get_manager (fixture->core),
                                           fixture->session_id, run_id, &error);
      g_assert_no_error (error);
      if (kaged_run_is_finished (run) || timed_out)
        break;
      g_main_context_iteration (NULL, TRUE);
    }

  g_assert_false (timed_out);
  g_source_remove (timeout_id);

  return run;
}

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  const char *scenario = data != NULL ? data : "[{\"kind\": \"openai\", \"text\": \"Hi there\"}]";
  KagedCoreFlags flags = data != NULL ? KAGED_CORE_FLAGS_AUTO_RETRY : KAGED_CORE_FLAGS_NONE;
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autofree char *db_path = NULL;
  g_autofree char *url = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  db_path = g_build_filename (fixture->dir, "kaged.db", NULL);

  fixture->server = kaged_fake_server_new (scenario, &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (fixture->server);

  store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);
  fixture->clock = kaged_fake_clock_new (1767225600000);
  fixture->core = kaged_core_new (store, keyring, fixture->clock, NULL, flags);
  profile = kaged_profile_new ("test", KAGED_PROVIDER_KIND_OPENAI, url, "test");
  kaged_core_set_profile (fixture->core, profile);
  kaged_core_start (fixture->core);

  session = kaged_core_create_session (fixture->core, "Core", &error);
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
  g_clear_object (&fixture->core);
  g_clear_object (&fixture->clock);
  g_clear_object (&fixture->server);

  dir = g_dir_open (fixture->dir, 0, NULL);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (fixture->dir, name, NULL);

      g_unlink (path);
    }
  g_rmdir (fixture->dir);
  g_free (fixture->dir);
}

/* One conversation per session while anyone holds it. */
static void
test_open_conversation (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autoptr(KagedConversation) first = NULL;
  g_autoptr(KagedConversation) second = NULL;
  g_autoptr(KagedConversation) missing = NULL;
  g_autoptr(GError) error = NULL;

  first = kaged_core_open_conversation (fixture->core, fixture->session_id, &error);
  g_assert_no_error (error);
  second = kaged_core_open_conversation (fixture->core, fixture->session_id, &error);
  g_assert_no_error (error);
  g_assert_true (first == second);
  g_assert_cmpint (kaged_conversation_get_session_id (first), ==, fixture->session_id);

  /* Once let go, the next one opens afresh. */
  g_clear_object (&first);
  g_clear_object (&second);
  first = kaged_core_open_conversation (fixture->core, fixture->session_id, &error);
  g_assert_no_error (error);
  g_assert_nonnull (first);

  missing = kaged_core_open_conversation (fixture->core, 424242, &error);
  g_assert_null (missing);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
}

/* Regenerate from the reply, as a click on it does; the HTTP API's
 * regenerate takes the operator message only. */
static void
test_regenerate_from_reply (Fixture       *fixture,
                            gconstpointer  data)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedReceipt) regen = NULL;
  g_autoptr(KagedReceipt) refused = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedRun) again = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GError) error = NULL;
  gint64 reply_id = 0;

  receipt = kaged_core_post (fixture->core, fixture->session_id, "Hello", &error);
  g_assert_no_error (error);
  run = wait_for_run (fixture, receipt->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);

  messages = kaged_store_list_messages (kaged_core_get_store (fixture->core),
                                        fixture->session_id, FALSE, 0, 0, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (messages->len, ==, 2);
  reply_id = kaged_message_get_id (g_ptr_array_index (messages, 1));

  refused = kaged_core_regenerate_anchor (fixture->core, fixture->session_id, reply_id, &error);
  g_assert_null (refused);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_ANCHOR);
  g_clear_error (&error);

  regen = kaged_core_regenerate (fixture->core, fixture->session_id, reply_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (regen->message_id, ==, receipt->message_id);
  g_assert_cmpuint (regen->superseded_message_ids->len, ==, 1);
  g_assert_cmpint (g_array_index (regen->superseded_message_ids, gint64, 0), ==, reply_id);
  again = wait_for_run (fixture, regen->run_id);
  g_assert_cmpint (kaged_run_get_status (again), ==, KAGED_RUN_STATUS_SUCCEEDED);
}

/* Without Tier 2, there is nothing to retry and the core says why. */
static void
test_retry_off (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;

  g_assert_null (kaged_core_get_coordinator (fixture->core));
  g_assert_null (kaged_core_lookup_retry (fixture->core, fixture->session_id));
  g_assert_false (kaged_core_retry_now (fixture->core, fixture->session_id, &error));
  g_assert_error (error, KAGED_CORE_ERROR, KAGED_CORE_ERROR_RETRY_OFF);
  g_clear_error (&error);
  g_assert_false (kaged_core_cancel_retry (fixture->core, fixture->session_id, &error));
  g_assert_error (error, KAGED_CORE_ERROR, KAGED_CORE_ERROR_RETRY_OFF);
}

static void
retry_changed_cb (KagedCore *core,
                  gint64     session_id,
                  GArray    *seen)
{
  KagedRetryScheduler *scheduler = kaged_core_lookup_retry (core, session_id);

  g_assert_nonnull (scheduler);
  g_array_append_val (seen, session_id);
}

static gboolean
armed (gpointer data)
{
  KagedRetryScheduler *scheduler = data;

  return scheduler != NULL &&
         kaged_retry_scheduler_get_state (scheduler) == KAGED_RETRY_SCHEDULER_STATE_ARMED;
}

/* With Tier 2, a retryable failure arms it; ::retry-changed says so; a
 * cancel through the core stops it, and a second cancel finds nothing. */
static void
test_retry_through_core (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(GArray) seen = g_array_new (FALSE, FALSE, sizeof (gint64));
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GError) error = NULL;
  KagedRetryScheduler *scheduler;
  gboolean timed_out = FALSE;
  guint timeout_id;

  g_assert_nonnull (kaged_core_get_coordinator (fixture->core));
  g_signal_connect (fixture->core, "retry-changed", G_CALLBACK (retry_changed_cb), seen);

  receipt = kaged_core_post (fixture->core, fixture->session_id, "Hello", &error);
  g_assert_no_error (error);
  run = wait_for_run (fixture, receipt->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);

  timeout_id = g_timeout_add_seconds (WAIT_SECONDS, timeout_cb, &timed_out);
  while (!armed (kaged_core_lookup_retry (fixture->core, fixture->session_id)) && !timed_out)
    g_main_context_iteration (NULL, TRUE);
  g_assert_false (timed_out);
  g_source_remove (timeout_id);

  scheduler = kaged_core_lookup_retry (fixture->core, fixture->session_id);
  g_assert_cmpuint (seen->len, >=, 1);
  g_assert_cmpint (g_array_index (seen, gint64, seen->len - 1), ==, fixture->session_id);

  g_assert_true (kaged_core_cancel_retry (fixture->core, fixture->session_id, &error));
  g_assert_no_error (error);
  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_CANCELLED);

  g_assert_false (kaged_core_cancel_retry (fixture->core, fixture->session_id, &error));
  g_assert_error (error, KAGED_CORE_ERROR, KAGED_CORE_ERROR_NO_RETRY);
  g_clear_error (&error);
  g_assert_false (kaged_core_retry_now (fixture->core, fixture->session_id, &error));
  g_assert_error (error, KAGED_CORE_ERROR, KAGED_CORE_ERROR_NO_RETRY);

  /* The countdown is long past: nothing was sent after the cancel. */
  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock), 10 * 60 * 1000);
  while (g_main_context_pending (NULL))
    g_main_context_iteration (NULL, FALSE);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);
}

static void
record_title_cb (KagedSessionManager *manager,
                 KagedSession        *session,
                 GPtrArray           *titles)
{
  g_ptr_array_add (titles, g_strdup (kaged_session_get_title (session)));
}

static char *
stored_title (Fixture *fixture,
              gint64   session_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) session = NULL;

  session = kaged_store_get_session (kaged_core_get_store (fixture->core), session_id, &error);
  g_assert_no_error (error);

  return g_strdup (kaged_session_get_title (session));
}

/* Without a window: the first message of an untitled conversation gives
 * it its title, announced to every observer; later messages and a title
 * given by hand are left alone. */
static void
test_title_from_first_message (Fixture       *fixture,
                               gconstpointer  data)
{
  g_autoptr(GPtrArray) titles = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(KagedSession) untitled = NULL;
  g_autoptr(KagedSession) renamed = NULL;
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedReceipt) third = NULL;
  g_autoptr(KagedReceipt) other = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *title = NULL;
  g_autofree char *kept = NULL;
  g_autofree char *given = NULL;
  g_autofree char *by_hand = NULL;
  gint64 id;

  untitled = kaged_core_create_session (fixture->core, NULL, &error);
  g_assert_no_error (error);
  id = kaged_session_get_id (untitled);
  g_signal_connect (kaged_core_get_manager (fixture->core), "session-changed",
                    G_CALLBACK (record_title_cb), titles);

  first = kaged_core_post (fixture->core, id, "  How do I bake   bread?\nWith rye flour.", &error);
  g_assert_no_error (error);
  title = stored_title (fixture, id);
  g_assert_cmpstr (title, ==, "How do I bake bread?");
  g_assert_cmpuint (titles->len, >=, 1);
  g_assert_cmpstr (g_ptr_array_index (titles, titles->len - 1), ==, "How do I bake bread?");

  /* Queued behind the first reply: the title stays. */
  second = kaged_core_post (fixture->core, id, "And cake?", &error);
  g_assert_no_error (error);
  g_assert_cmpint (second->status, ==, KAGED_RECEIPT_STATUS_QUEUED);
  kept = stored_title (fixture, id);
  g_assert_cmpstr (kept, ==, "How do I bake bread?");

  /* A title given when the conversation was created stays. */
  other = kaged_core_post (fixture->core, fixture->session_id, "Hello", &error);
  g_assert_no_error (error);
  given = stored_title (fixture, fixture->session_id);
  g_assert_cmpstr (given, ==, "Core");

  /* So does one given by hand before the first message. */
  renamed = kaged_core_create_session (fixture->core, NULL, &error);
  g_assert_no_error (error);
  kaged_store_rename_session (kaged_core_get_store (fixture->core),
                              kaged_session_get_id (renamed), "Groceries", &error);
  g_assert_no_error (error);
  third = kaged_core_post (fixture->core, kaged_session_get_id (renamed), "Milk, eggs", &error);
  g_assert_no_error (error);
  by_hand = stored_title (fixture, kaged_session_get_id (renamed));
  g_assert_cmpstr (by_hand, ==, "Groceries");

  g_signal_handlers_disconnect_by_func (kaged_core_get_manager (fixture->core),
                                        record_title_cb, titles);
}

static KagedMessage *
conversation_item (GListModel *model,
                   guint       position)
{
  KagedMessage *message = g_list_model_get_item (model, position);

  g_assert_nonnull (message);
  g_object_unref (message);  /* the conversation keeps it */

  return message;
}

/* Whoever posted it, a message waiting behind another run reads as
 * queued in the read model until its run starts. */
static void
test_queued_messages (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(KagedConversation) conversation = NULL;
  g_autoptr(KagedConversation) opened_later = NULL;
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GError) error = NULL;
  GListModel *model;
  KagedMessage *question;
  KagedMessage *waiting;
  KagedMessage *loaded;

  conversation = kaged_core_open_conversation (fixture->core, fixture->session_id, &error);
  g_assert_no_error (error);
  model = G_LIST_MODEL (conversation);

  first = kaged_core_post (fixture->core, fixture->session_id, "First", &error);
  g_assert_no_error (error);
  second = kaged_core_post (fixture->core, fixture->session_id, "Second", &error);
  g_assert_no_error (error);
  g_assert_cmpint (first->status, ==, KAGED_RECEIPT_STATUS_DISPATCHED);
  g_assert_cmpint (second->status, ==, KAGED_RECEIPT_STATUS_QUEUED);

  /* First, its reply streaming, Second waiting. */
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 3);
  question = conversation_item (model, 0);
  waiting = conversation_item (model, 2);
  g_assert_cmpint (kaged_message_get_id (question), ==, first->message_id);
  g_assert_cmpint (kaged_message_get_id (waiting), ==, second->message_id);
  g_assert_false (kaged_message_get_queued (question));
  g_assert_true (kaged_message_get_queued (waiting));

  /* Read from the store, it says so too. */
  opened_later = kaged_conversation_new (kaged_core_get_manager (fixture->core),
                                         fixture->session_id, &error);
  g_assert_no_error (error);
  loaded = conversation_item (G_LIST_MODEL (opened_later), 2);
  g_assert_cmpint (kaged_message_get_id (loaded), ==, second->message_id);
  g_assert_true (kaged_message_get_queued (loaded));
  g_assert_false (kaged_message_get_queued (conversation_item (G_LIST_MODEL (opened_later), 0)));

  /* Its run starts: no longer queued. */
  run = wait_for_run (fixture, second->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_false (kaged_message_get_queued (waiting));
  g_assert_false (kaged_message_get_queued (loaded));
}

/* A queued message whose run is cancelled no longer waits. */
static void
test_queued_cancelled (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autoptr(KagedConversation) conversation = NULL;
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(GError) error = NULL;
  KagedMessage *waiting;

  conversation = kaged_core_open_conversation (fixture->core, fixture->session_id, &error);
  g_assert_no_error (error);
  first = kaged_core_post (fixture->core, fixture->session_id, "First", &error);
  g_assert_no_error (error);
  second = kaged_core_post (fixture->core, fixture->session_id, "Second", &error);
  g_assert_no_error (error);

  waiting = conversation_item (G_LIST_MODEL (conversation), 2);
  g_assert_true (kaged_message_get_queued (waiting));

  g_assert_true (kaged_core_cancel_run (fixture->core, fixture->session_id, second->run_id, &error));
  g_assert_no_error (error);
  g_assert_false (kaged_message_get_queued (waiting));
}

/* A server handed to the core: where it listens, and stopped with it. */
typedef struct
{
  GObject parent_instance;
  guint   n_stops;
} TestServer;

typedef GObjectClass TestServerClass;

static GType test_server_get_type (void);
static void test_server_iface_init (KagedCoreServerInterface *iface);

G_DEFINE_TYPE_WITH_CODE (TestServer, test_server, G_TYPE_OBJECT,
                         G_IMPLEMENT_INTERFACE (KAGED_TYPE_CORE_SERVER, test_server_iface_init))

static char **
test_server_dup_urls (KagedCoreServer *server)
{
  const char *urls[] = { "http://127.0.0.1:4242", NULL };

  return g_strdupv ((char **)urls);
}

static void
test_server_stop (KagedCoreServer *server)
{
  ((TestServer *)server)->n_stops++;
}

static void
test_server_iface_init (KagedCoreServerInterface *iface)
{
  iface->dup_urls = test_server_dup_urls;
  iface->stop = test_server_stop;
}

static void
test_server_class_init (TestServerClass *klass)
{
}

static void
test_server_init (TestServer *self)
{
}

static void
test_server_owned (Fixture       *fixture,
                   gconstpointer  data)
{
  TestServer *server = g_object_new (test_server_get_type (), NULL);
  TestServer *second = g_object_new (test_server_get_type (), NULL);

  g_assert_null (kaged_core_get_api_url (fixture->core));

  kaged_core_set_server (fixture->core, KAGED_CORE_SERVER (server));
  g_assert_cmpstr (kaged_core_get_api_url (fixture->core), ==, "http://127.0.0.1:4242");
  g_assert_null (kaged_core_get_api_error (fixture->core));

  /* A failure to switch on stops what ran, and says why. */
  kaged_core_set_api_error (fixture->core, "The port is taken");
  g_assert_cmpuint (server->n_stops, ==, 1);
  g_assert_null (kaged_core_get_server (fixture->core));
  g_assert_null (kaged_core_get_api_url (fixture->core));
  g_assert_cmpstr (kaged_core_get_api_error (fixture->core), ==, "The port is taken");

  /* The core keeps the one it is handed, and stops it as it shuts down. */
  kaged_core_set_server (fixture->core, KAGED_CORE_SERVER (second));
  g_assert_null (kaged_core_get_api_error (fixture->core));
  kaged_core_shutdown (fixture->core);
  g_assert_null (kaged_core_get_server (fixture->core));
  g_assert_null (kaged_core_get_api_url (fixture->core));
  g_assert_cmpuint (second->n_stops, ==, 1);
  g_assert_cmpuint (server->n_stops, ==, 1);

  g_object_unref (second);
  g_object_unref (server);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add ("/core/open-conversation", Fixture, NULL,
              fixture_set_up, test_open_conversation, fixture_tear_down);
  g_test_add ("/core/regenerate-from-reply", Fixture, NULL,
              fixture_set_up, test_regenerate_from_reply, fixture_tear_down);
  g_test_add ("/core/retry-off", Fixture, NULL,
              fixture_set_up, test_retry_off, fixture_tear_down);
  g_test_add ("/core/retry-through-core", Fixture, "[" OVERLOADED "]",
              fixture_set_up, test_retry_through_core, fixture_tear_down);
  g_test_add ("/core/title-from-first-message", Fixture, NULL,
              fixture_set_up, test_title_from_first_message, fixture_tear_down);
  g_test_add ("/core/queued-messages", Fixture, NULL,
              fixture_set_up, test_queued_messages, fixture_tear_down);
  g_test_add ("/core/queued-cancelled", Fixture, NULL,
              fixture_set_up, test_queued_cancelled, fixture_tear_down);
  g_test_add ("/core/server-owned", Fixture, NULL,
              fixture_set_up, test_server_owned, fixture_tear_down);

  return g_test_run ();
}
