/* test-retry-notifier.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The notifications of Tier 2 retries, as the desktop receives them: the
 * test runs its own session bus and owns org.gtk.Notifications on it.
 */

#include "config.h"

#include <string.h>

#include <glib/gstdio.h>
#include <gtk/gtk.h>

#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-retry-notifier.h"
#include "kaged-test-notifications.h"

#define APP_ID "io.github.kaged.Kaged.NotifierTest"

/* The session bus the test runs on, if any */
static char *session_bus_address;

typedef struct
{
  GTestDBus              *bus;
  GDBusConnection        *connection;
  TestNotificationServer *notifications;
  GPtrArray              *events;    /* the notification server's */

  char                   *dir;
  char                   *db_path;
  KagedClock             *clock;
  KagedFakeServer        *server;
  char                   *url;
  KagedStore             *store;
  KagedSessionManager    *manager;
  KagedRetryCoordinator  *coordinator;
  GApplication           *application;
  GtkWindow              *window;      /* with a display only */
  KagedRetryNotifier     *notifier;
  KagedSession           *session;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedRandom) random = kaged_random_new_with_seed (5);
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;

  /* GTK keeps its session bus connection until the process ends, which a
   * bus of the test's own could not wait for: a GTK fixture uses the
   * session bus the test runs on. */
  if (data != NULL)
    {
      g_setenv ("DBUS_SESSION_BUS_ADDRESS", session_bus_address, TRUE);
    }
  else
    {
      fixture->bus = g_test_dbus_new (G_TEST_DBUS_NONE);
      g_test_dbus_up (fixture->bus);
    }
  fixture->connection = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error);
  g_assert_no_error (error);

  fixture->notifications = test_notification_server_new (fixture->connection, APP_ID);
  fixture->events = test_notification_server_get_events (fixture->notifications);

  /* With a display, a GTK application whose window can have the focus. */
  if (data != NULL)
    fixture->application = G_APPLICATION (gtk_application_new (APP_ID, G_APPLICATION_DEFAULT_FLAGS));
  else
    fixture->application = g_application_new (APP_ID, G_APPLICATION_DEFAULT_FLAGS);
  g_application_register (fixture->application, NULL, &error);
  g_assert_no_error (error);
  if (data != NULL)
    fixture->window = GTK_WINDOW (gtk_application_window_new (GTK_APPLICATION (fixture->application)));

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  fixture->db_path = g_build_filename (fixture->dir, "kaged.db", NULL);
  fixture->clock = kaged_fake_clock_new (1764400000000);

  /* Rate limited for 50 minutes, then a reply. */
  fixture->server = kaged_fake_server_new (
    "[{\"status\": 429, \"headers\": {\"retry-after\": \"3000\"}, "
    "  \"body\": {\"error\": {\"message\": \"Rate limit reached\", \"type\": \"requests\", "
    "  \"code\": \"rate_limit_exceeded\"}}},"
    " {\"kind\": \"openai\", \"text\": \"Here you are\"}]", &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  fixture->url = kaged_fake_server_get_url (fixture->server);

  fixture->store = kaged_store_open (fixture->db_path, &error);
  g_assert_no_error (error);
  resolver = kaged_resolver_new_full (kaged_http_get_default_session (), keyring,
                                      fixture->clock, random);
  profile = kaged_profile_new ("test", KAGED_PROVIDER_KIND_OPENAI, fixture->url, "test-model");
  fixture->manager = kaged_session_manager_new (fixture->store, fixture->clock);
  kaged_session_manager_set_model (fixture->manager, resolver, profile);

  fixture->coordinator = kaged_retry_coordinator_new (fixture->manager, NULL, NULL);
  fixture->notifier = kaged_retry_notifier_new (fixture->application, fixture->coordinator,
                                                fixture->manager);

  fixture->session = kaged_session_manager_create_session (fixture->manager, "Trip to Lyon",
                                                           &error);
  g_assert_no_error (error);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autofree char *wal = g_strconcat (fixture->db_path, "-wal", NULL);
  g_autofree char *shm = g_strconcat (fixture->db_path, "-shm", NULL);

  kaged_session_manager_shutdown (fixture->manager);
  g_clear_pointer (&fixture->window, gtk_window_destroy);
  g_clear_object (&fixture->notifier);
  g_clear_object (&fixture->coordinator);
  g_clear_object (&fixture->session);
  g_clear_object (&fixture->manager);
  g_clear_object (&fixture->store);
  g_clear_object (&fixture->server);
  g_clear_object (&fixture->clock);
  g_clear_object (&fixture->application);
  g_clear_pointer (&fixture->url, g_free);

  fixture->events = NULL;
  g_clear_pointer (&fixture->notifications, test_notification_server_free);
  g_clear_object (&fixture->connection);
  if (fixture->bus != NULL)
    g_test_dbus_down (fixture->bus);
  g_clear_object (&fixture->bus);

  g_unlink (wal);
  g_unlink (shm);
  g_unlink (fixture->db_path);
  g_rmdir (fixture->dir);
  g_clear_pointer (&fixture->db_path, g_free);
  g_clear_pointer (&fixture->dir, g_free);
}

static void
wait_events (Fixture *fixture,
             guint    n)
{
  test_notification_server_wait (fixture->notifications, n);

  g_assert_cmpuint (fixture->events->len, >=, n);
}

static KagedRetryScheduler *
post_and_wait_scheduled (Fixture *fixture)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  KagedRetryScheduler *scheduler;

  receipt = kaged_session_manager_post (fixture->manager, kaged_session_get_id (fixture->session),
                                        "Trains from Paris?", &error);
  g_assert_no_error (error);

  scheduler = kaged_retry_coordinator_get_scheduler (fixture->coordinator,
                                                     kaged_session_get_id (fixture->session));
  while (kaged_retry_scheduler_get_state (scheduler) != KAGED_RETRY_SCHEDULER_STATE_SCHEDULED)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_SCHEDULED);

  return scheduler;
}

/* The fifty minutes pass, and the retry goes out and ends. */
static void
wait_retry_done (Fixture             *fixture,
                 KagedRetryScheduler *scheduler)
{
  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock), 3000 * 1000);
  while (kaged_retry_scheduler_get_state (scheduler) != KAGED_RETRY_SCHEDULER_STATE_IDLE)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_IDLE);
}

static void
assert_button (GVariant   *buttons,
               guint       index,
               const char *label,
               const char *action,
               gint64      target)
{
  g_autoptr(GVariant) button = g_variant_get_child_value (buttons, index);
  g_autoptr(GVariant) button_target = NULL;
  const char *button_label = NULL;
  const char *button_action = NULL;

  g_assert_true (g_variant_lookup (button, "label", "&s", &button_label));
  g_assert_true (g_variant_lookup (button, "action", "&s", &button_action));
  button_target = g_variant_lookup_value (button, "target", NULL);
  g_assert_cmpstr (button_label, ==, label);
  g_assert_cmpstr (button_action, ==, action);
  g_assert_nonnull (button_target);
  g_assert_cmpint (g_variant_get_int64 (button_target), ==, target);
}

static void
test_scheduled_then_cancelled (Fixture       *fixture,
                               gconstpointer  data)
{
  gint64 session_id = kaged_session_get_id (fixture->session);
  g_autofree char *id = kaged_retry_notifier_dup_id (session_id);
  g_autoptr(GVariant) buttons = NULL;
  g_autoptr(GVariant) default_target = NULL;
  KagedRetryScheduler *scheduler;
  const char *title = NULL;
  const char *body = NULL;
  const char *default_action = NULL;
  TestNotificationEvent *event;

  scheduler = post_and_wait_scheduled (fixture);
  wait_events (fixture, 1);

  event = g_ptr_array_index (fixture->events, 0);
  g_assert_cmpstr (event->id, ==, id);
  g_assert_nonnull (event->notification);
  g_assert_true (g_variant_lookup (event->notification, "title", "&s", &title));
  g_assert_true (g_variant_lookup (event->notification, "body", "&s", &body));
  g_assert_nonnull (strstr (title, "Trip to Lyon"));
  /* The reason, the time in the desktop's format and where the wait came from. */
  g_assert_nonnull (strstr (body, "Rate limited (HTTP 429) — the provider asked to wait 50 min"));
  g_assert_nonnull (strstr (body, "Retry after "));
  g_assert_nonnull (strstr (body, "Retry-After"));

  buttons = g_variant_lookup_value (event->notification, "buttons", G_VARIANT_TYPE ("aa{sv}"));
  g_assert_nonnull (buttons);
  g_assert_cmpuint (g_variant_n_children (buttons), ==, 2);
  assert_button (buttons, 0, "Retry Now", "app.retry-now", session_id);
  assert_button (buttons, 1, "Cancel Retry", "app.cancel-retry", session_id);

  g_assert_true (g_variant_lookup (event->notification, "default-action", "&s", &default_action));
  g_assert_cmpstr (default_action, ==, "app.show-session");
  default_target = g_variant_lookup_value (event->notification, "default-action-target", NULL);
  g_assert_cmpint (g_variant_get_int64 (default_target), ==, session_id);

  /* Cancelling the retry withdraws it. */
  g_assert_true (kaged_retry_scheduler_cancel (scheduler));
  wait_events (fixture, 2);
  event = g_ptr_array_index (fixture->events, 1);
  g_assert_cmpstr (event->id, ==, id);
  g_assert_null (event->notification);
  g_assert_cmpuint (fixture->events->len, ==, 2);
}

static void
test_scheduled_then_reply_ready (Fixture       *fixture,
                                 gconstpointer  data)
{
  gint64 session_id = kaged_session_get_id (fixture->session);
  g_autofree char *id = kaged_retry_notifier_dup_id (session_id);
  g_autofree char *result_id = kaged_retry_notifier_dup_result_id (session_id);
  KagedRetryScheduler *scheduler;
  const char *title = NULL;
  TestNotificationEvent *event;

  scheduler = post_and_wait_scheduled (fixture);
  wait_events (fixture, 1);

  /* Fifty minutes later the retry goes out and the reply comes. */
  wait_retry_done (fixture, scheduler);

  /* It went out (the notice says so), came back and was withdrawn. */
  wait_events (fixture, 4);
  event = g_ptr_array_index (fixture->events, 1);
  g_assert_cmpstr (event->id, ==, id);
  g_assert_nonnull (event->notification);
  event = g_ptr_array_index (fixture->events, 2);
  g_assert_cmpstr (event->id, ==, id);
  g_assert_null (event->notification);

  event = g_ptr_array_index (fixture->events, 3);
  g_assert_cmpstr (event->id, ==, result_id);
  g_assert_true (g_variant_lookup (event->notification, "title", "&s", &title));
  g_assert_nonnull (strstr (title, "Reply ready"));
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 2);
}

static void
test_scheduled_then_gave_up (Fixture       *fixture,
                             gconstpointer  data)
{
  gint64 session_id = kaged_session_get_id (fixture->session);
  g_autofree char *result_id = kaged_retry_notifier_dup_result_id (session_id);
  g_autoptr(GError) error = NULL;
  KagedRetryScheduler *scheduler;
  const char *title = NULL;
  const char *body = NULL;
  TestNotificationEvent *event;

  /* Rate limited for 50 minutes; then the key turns out to be wrong. */
  kaged_fake_server_set_scenario (fixture->server,
    "[{\"status\": 429, \"headers\": {\"retry-after\": \"3000\"}, "
    "  \"body\": {\"error\": {\"message\": \"Rate limit reached\", \"type\": \"requests\", "
    "  \"code\": \"rate_limit_exceeded\"}}},"
    " {\"status\": 401, \"body\": {\"error\": {\"message\": \"Incorrect API key provided\", "
    "  \"type\": \"invalid_request_error\", \"code\": \"invalid_api_key\"}}}]", &error);
  g_assert_no_error (error);

  scheduler = post_and_wait_scheduled (fixture);
  wait_events (fixture, 1);

  wait_retry_done (fixture, scheduler);

  /* The notice of the retry is withdrawn, and nobody is looking: say it
   * gave up, and why. */
  wait_events (fixture, 4);
  event = g_ptr_array_index (fixture->events, 2);
  g_assert_null (event->notification);
  event = g_ptr_array_index (fixture->events, 3);
  g_assert_cmpstr (event->id, ==, result_id);
  g_assert_true (g_variant_lookup (event->notification, "title", "&s", &title));
  g_assert_true (g_variant_lookup (event->notification, "body", "&s", &body));
  g_assert_nonnull (strstr (title, "gave up"));
  g_assert_nonnull (strstr (body, "401"));
  /* Only a way back to the conversation: nothing left to retry. */
  g_assert_null (g_variant_lookup_value (event->notification, "buttons", NULL));
}

/*
 * The scheduled retry goes out and its run is under way: the notification
 * stays, now offering only to cancel, and cancelling from it cancels the
 * run, recorded cancelled; then it is withdrawn.
 */
static void
test_retrying_offers_cancel (Fixture       *fixture,
                             gconstpointer  data)
{
  gint64 session_id = kaged_session_get_id (fixture->session);
  g_autofree char *id = kaged_retry_notifier_dup_id (session_id);
  g_autoptr(GVariant) buttons = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedRun) run = NULL;
  KagedRetryScheduler *scheduler;
  gint64 retry_run_id;
  TestNotificationEvent *event;

  /* Rate limited for 50 minutes; the retry's answer then never comes. */
  kaged_fake_server_set_scenario (fixture->server,
    "[{\"status\": 429, \"headers\": {\"retry-after\": \"3000\"}, "
    "  \"body\": {\"error\": {\"message\": \"Rate limit reached\", \"type\": \"requests\", "
    "  \"code\": \"rate_limit_exceeded\"}}},"
    " {\"hang\": true}]", &error);
  g_assert_no_error (error);

  scheduler = post_and_wait_scheduled (fixture);
  wait_events (fixture, 1);

  kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock), 3000 * 1000);
  while (kaged_retry_scheduler_get_state (scheduler) != KAGED_RETRY_SCHEDULER_STATE_WATCHING)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_WATCHING);
  retry_run_id = kaged_retry_scheduler_get_run_id (scheduler);

  wait_events (fixture, 2);
  event = g_ptr_array_index (fixture->events, fixture->events->len - 1);
  g_assert_cmpstr (event->id, ==, id);
  g_assert_nonnull (event->notification);
  buttons = g_variant_lookup_value (event->notification, "buttons", G_VARIANT_TYPE ("aa{sv}"));
  g_assert_nonnull (buttons);
  g_assert_cmpuint (g_variant_n_children (buttons), ==, 1);
  assert_button (buttons, 0, "Cancel Retry", "app.cancel-retry", session_id);

  /* What app.cancel-retry does. */
  g_assert_true (kaged_retry_scheduler_cancel (scheduler));
  run = kaged_session_manager_get_run (fixture->manager, session_id, retry_run_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_CANCELLED);

  wait_events (fixture, 3);
  event = g_ptr_array_index (fixture->events, fixture->events->len - 1);
  g_assert_cmpstr (event->id, ==, id);
  g_assert_null (event->notification);
}

/* "Reply ready" is for someone who is not looking: with a Kaged window in
 * front, the reply shows there and no notification is sent. The notice of
 * the scheduled retry is sent either way, and withdrawn either way. */
static void
test_result_only_unfocused (Fixture       *fixture,
                            gconstpointer  data)
{
  gint64 session_id = kaged_session_get_id (fixture->session);
  g_autofree char *result_id = kaged_retry_notifier_dup_result_id (session_id);
  g_autoptr(GError) error = NULL;
  KagedRetryScheduler *scheduler;
  const char *title = NULL;
  TestNotificationEvent *event;

  kaged_fake_server_set_scenario (fixture->server,
    "[{\"status\": 429, \"headers\": {\"retry-after\": \"3000\"}, "
    "  \"body\": {\"error\": {\"message\": \"Rate limit reached\"}}},"
    " {\"kind\": \"openai\", \"text\": \"Here you are\"},"
    " {\"status\": 429, \"headers\": {\"retry-after\": \"3000\"}, "
    "  \"body\": {\"error\": {\"message\": \"Rate limit reached\"}}},"
    " {\"kind\": \"openai\", \"text\": \"Here you are again\"}]", &error);
  g_assert_no_error (error);

  gtk_window_present (fixture->window);
  while (!gtk_window_is_active (fixture->window))
    g_main_context_iteration (NULL, TRUE);
  g_assert_true (gtk_window_is_active (fixture->window));

  /* In front: scheduled, retrying, then withdrawn, and nothing more. */
  scheduler = post_and_wait_scheduled (fixture);
  wait_events (fixture, 1);
  g_assert_nonnull (((TestNotificationEvent *)g_ptr_array_index (fixture->events, 0))->notification);
  wait_retry_done (fixture, scheduler);
  wait_events (fixture, 3);
  g_assert_nonnull (((TestNotificationEvent *)g_ptr_array_index (fixture->events, 1))->notification);
  g_assert_null (((TestNotificationEvent *)g_ptr_array_index (fixture->events, 2))->notification);
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_assert_cmpuint (fixture->events->len, ==, 3);

  /* Put away: the next reply is announced. */
  gtk_widget_set_visible (GTK_WIDGET (fixture->window), FALSE);
  scheduler = post_and_wait_scheduled (fixture);
  wait_events (fixture, 4);
  wait_retry_done (fixture, scheduler);
  wait_events (fixture, 7);
  event = g_ptr_array_index (fixture->events, 6);
  g_assert_cmpstr (event->id, ==, result_id);
  g_assert_true (g_variant_lookup (event->notification, "title", "&s", &title));
  g_assert_nonnull (strstr (title, "Reply ready"));
}

static void
skip_without_display (void)
{
  g_test_skip ("The focus rule needs a display and a session bus");
}

int
main (int   argc,
      char *argv[])
{
  gboolean have_display;

  session_bus_address = g_strdup (g_getenv ("DBUS_SESSION_BUS_ADDRESS"));
  g_test_init (&argc, &argv, NULL);
  have_display = session_bus_address != NULL && gtk_init_check ();

  g_test_add ("/retry-notifier/scheduled-then-cancelled", Fixture, NULL,
              fixture_set_up, test_scheduled_then_cancelled, fixture_tear_down);
  g_test_add ("/retry-notifier/scheduled-then-reply-ready", Fixture, NULL,
              fixture_set_up, test_scheduled_then_reply_ready, fixture_tear_down);
  g_test_add ("/retry-notifier/retrying-offers-cancel", Fixture, NULL,
              fixture_set_up, test_retrying_offers_cancel, fixture_tear_down);
  g_test_add ("/retry-notifier/scheduled-then-gave-up", Fixture, NULL,
              fixture_set_up, test_scheduled_then_gave_up, fixture_tear_down);
  if (have_display)
    g_test_add ("/retry-notifier/result-only-unfocused", Fixture, GINT_TO_POINTER (TRUE),
                fixture_set_up, test_result_only_unfocused, fixture_tear_down);
  else
    g_test_add_func ("/retry-notifier/result-only-unfocused", skip_without_display);

  return g_test_run ();
}
