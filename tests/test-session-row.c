/* test-session-row.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A conversation's row in the sidebar while a Tier 2 retry waits: its mark
 * and the tooltip that says when, on a fake clock, against a fake provider
 * on 127.0.0.1.
 */

#include "config.h"

#include <adwaita.h>
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-retry-coordinator.h"
#include "kaged-session-row.h"
#include "kaged-test-doubles.h"
#include "kaged-test-files.h"

/* 13:42 UTC on Tuesday 10 March 2026. */
#define START_WALL_MS ((gint64)1773150120000)

typedef struct
{
  char                  *dir;
  char                  *db_path;
  KagedClock            *clock;
  KagedFakeServer       *server;
  GNetworkMonitor       *monitor;
  KagedStore            *store;
  KagedSessionManager   *manager;
  KagedRetryCoordinator *coordinator;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedRandom) random = kaged_random_new_with_seed (7);
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autofree char *url = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  fixture->db_path = g_build_filename (fixture->dir, "kaged.db", NULL);
  fixture->clock = kaged_fake_clock_new (START_WALL_MS);
  fixture->monitor = g_object_new (TEST_TYPE_NETWORK_MONITOR, NULL);

  fixture->server = kaged_fake_server_new (data, &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (fixture->server);

  fixture->store = kaged_store_open (fixture->db_path, &error);
  g_assert_no_error (error);
  resolver = kaged_resolver_new_full (kaged_http_get_default_session (), keyring, fixture->clock, random);
  profile = kaged_profile_new ("test", KAGED_PROVIDER_KIND_OPENAI, url, "test-model");
  fixture->manager = kaged_session_manager_new (fixture->store, fixture->clock);
  kaged_session_manager_set_model (fixture->manager, resolver, profile);
  fixture->coordinator = kaged_retry_coordinator_new (fixture->manager, NULL, fixture->monitor);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_clear_object (&fixture->coordinator);
  g_clear_object (&fixture->manager);
  g_clear_object (&fixture->store);
  g_clear_object (&fixture->server);
  g_clear_object (&fixture->monitor);
  g_clear_object (&fixture->clock);

  kaged_test_remove_tree (fixture->dir);
  g_clear_pointer (&fixture->dir, g_free);
  g_clear_pointer (&fixture->db_path, g_free);
}

static void
iterate (void)
{
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

static void
advance (Fixture *f,
         gint64   ms)
{
  test_clock_advance (f->clock, ms);
}

/* A retry scheduled for 00:42 tomorrow: the row says so, and says "today"
 * once midnight has passed, without anything else changing. */
static void
test_scheduled_across_midnight (Fixture       *fixture,
                                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) session = kaged_session_manager_create_session (fixture->manager, "Later", &error);
  g_autoptr(KagedReceipt) receipt = NULL;
  GtkWidget *row = g_object_ref_sink (kaged_session_row_new (fixture->coordinator));
  KagedRetryScheduler *scheduler;

  g_assert_no_error (error);
  kaged_session_row_set_session (KAGED_SESSION_ROW (row), session);
  g_assert_false (kaged_session_row_get_retry_shown (KAGED_SESSION_ROW (row)));

  receipt = kaged_session_manager_post (fixture->manager, kaged_session_get_id (session), "Hello", &error);
  g_assert_no_error (error);
  scheduler = kaged_retry_coordinator_get_scheduler (fixture->coordinator, kaged_session_get_id (session));
  while (kaged_retry_scheduler_get_state (scheduler) != KAGED_RETRY_SCHEDULER_STATE_SCHEDULED)
    g_main_context_iteration (NULL, TRUE);
  iterate ();

  g_assert_true (kaged_session_row_get_retry_shown (KAGED_SESSION_ROW (row)));
  g_assert_cmpstr (gtk_widget_get_tooltip_text (row), ==, "Retry tomorrow after 00:42");

  /* 23:59, then 00:01. */
  advance (fixture, (10 * 60 + 17) * 60000);
  g_assert_cmpstr (gtk_widget_get_tooltip_text (row), ==, "Retry tomorrow after 00:42");
  advance (fixture, 2 * 60000);
  g_assert_cmpstr (gtk_widget_get_tooltip_text (row), ==, "Retry after 00:42");

  kaged_retry_scheduler_cancel (scheduler);
  iterate ();
  g_assert_false (kaged_session_row_get_retry_shown (KAGED_SESSION_ROW (row)));
  g_object_unref (row);
}

int
main (int   argc,
      char *argv[])
{
  /* The times the row says are in UTC, the 24-hour clock. */
  g_setenv ("TZ", "UTC", TRUE);
  gtk_test_init (&argc, &argv, NULL);
  adw_init ();

  /* The provider's quota comes back in 11 hours. */
  g_test_add ("/session-row/scheduled-across-midnight", Fixture,
              "[{\"status\": 503, \"headers\": {\"x-should-retry\": \"false\", \"retry-after\": \"39600\"},"
              " \"body\": \"Unavailable\"}]",
              fixture_set_up, test_scheduled_across_midnight, fixture_tear_down);

  return g_test_run ();
}
