/* test-window-retry.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The window shows the retry banner of its conversation: it comes up when
 * a reply fails with a retryable error, follows the session the
 * notification asks for, and goes when the retry is cancelled.
 */

#include "config.h"

#include <adwaita.h>
#include <glib/gstdio.h>

#include "kaged-desktop.h"
#include "kaged-fake-server.h"
#include "kaged-retry-banner.h"
#include "kaged-window.h"

/* Waits for the banner itself to come or go: what brings it is the
 * provider's answer, which wakes the main loop. */
static void
wait_revealed (KagedRetryBanner *banner,
               gboolean          revealed)
{
  while (kaged_retry_banner_get_revealed (banner) != revealed)
    g_main_context_iteration (NULL, TRUE);
}

/* The real application presents its window here. */
static void
activate_cb (GApplication *application,
             gpointer      user_data)
{
}

static void
test_banner_follows_session (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *db_path = g_build_filename (dir, "kaged.db", NULL);
  g_autoptr(GSettings) settings = g_settings_new (BASE_APPLICATION_ID);
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(GtkApplication) application = NULL;
  g_autoptr(KagedCore) core = NULL;
  g_autoptr(KagedDesktop) desktop = NULL;
  g_autoptr(KagedSession) quiet = NULL;
  g_autoptr(KagedSession) failing = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autofree char *url = NULL;
  KagedSessionManager *manager;
  KagedRetryScheduler *scheduler;
  KagedRetryBanner *banner;
  KagedWindow *window;

  g_assert_no_error (error);

  /* Overloaded, and told not to retry at once: Tier 2 takes it from there. */
  server = kaged_fake_server_new (
    "[{\"status\": 529, \"headers\": {\"x-should-retry\": \"false\"}, "
    "  \"body\": {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", "
    "  \"message\": \"Overloaded\"}}}]", &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (server);

  g_settings_set_string (settings, "provider-kind", "openai");
  g_settings_set_string (settings, "provider-base-url", url);
  g_settings_set_string (settings, "provider-model", "test-model");

  store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);

  application = gtk_application_new ("io.github.kaged.Kaged.WindowTest", G_APPLICATION_NON_UNIQUE);
  g_signal_connect (application, "activate", G_CALLBACK (activate_cb), NULL);
  g_application_register (G_APPLICATION (application), NULL, &error);
  g_assert_no_error (error);
  core = kaged_core_new (store, NULL, NULL, NULL, KAGED_CORE_FLAGS_AUTO_RETRY);
  desktop = kaged_desktop_new (G_APPLICATION (application), settings, core, NULL);
  kaged_core_start (core);
  manager = kaged_core_get_manager (core);

  quiet = kaged_session_manager_create_session (manager, "Quiet", &error);
  g_assert_no_error (error);
  failing = kaged_session_manager_create_session (manager, "Failing", &error);
  g_assert_no_error (error);

  window = kaged_window_new (application);
  kaged_window_set_core (window, core);
  g_signal_connect_object (desktop, "show-session", G_CALLBACK (kaged_window_show_session),
                           window, G_CONNECT_SWAPPED);
  gtk_window_present (GTK_WINDOW (window));
  banner = KAGED_RETRY_BANNER (gtk_widget_get_template_child (GTK_WIDGET (window),
                                                              KAGED_TYPE_WINDOW,
                                                              "retry_banner"));
  g_assert_nonnull (banner);
  g_assert_false (kaged_retry_banner_get_revealed (banner));

  /* The most recently changed conversation shows first. */
  g_assert_cmpint (kaged_window_get_session_id (window), ==, kaged_session_get_id (failing));

  receipt = kaged_session_manager_post (manager, kaged_session_get_id (failing), "Hello", &error);
  g_assert_no_error (error);
  wait_revealed (banner, TRUE);
  scheduler = kaged_retry_banner_get_scheduler (banner);
  g_assert_cmpint (kaged_retry_scheduler_get_session_id (scheduler), ==,
                   kaged_session_get_id (failing));

  /* Another conversation has nothing pending: no banner there. */
  g_action_activate (g_action_map_lookup_action (G_ACTION_MAP (application), "show-session"),
                     g_variant_new_int64 (kaged_session_get_id (quiet)));
  g_assert_cmpint (kaged_window_get_session_id (window), ==, kaged_session_get_id (quiet));
  wait_revealed (banner, FALSE);

  /* Back, as a click on the notification does, and cancelled from there. */
  g_action_activate (g_action_map_lookup_action (G_ACTION_MAP (application), "show-session"),
                     g_variant_new_int64 (kaged_session_get_id (failing)));
  wait_revealed (banner, TRUE);
  g_action_activate (g_action_map_lookup_action (G_ACTION_MAP (application), "cancel-retry"),
                     g_variant_new_int64 (kaged_session_get_id (failing)));
  wait_revealed (banner, FALSE);
  g_assert_cmpint (kaged_retry_scheduler_get_state (scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_CANCELLED);

  gtk_window_destroy (GTK_WINDOW (window));
  kaged_desktop_shutdown (desktop);
  g_settings_reset (settings, "provider-kind");
  g_settings_reset (settings, "provider-base-url");
  g_settings_reset (settings, "provider-model");

  g_clear_object (&desktop);
  g_clear_object (&core);
  g_clear_object (&store);
  {
    g_autofree char *wal = g_strconcat (db_path, "-wal", NULL);
    g_autofree char *shm = g_strconcat (db_path, "-shm", NULL);

    g_unlink (wal);
    g_unlink (shm);
    g_unlink (db_path);
    g_rmdir (dir);
  }
}

int
main (int   argc,
      char *argv[])
{
  gtk_test_init (&argc, &argv, NULL);
  adw_init ();

  g_test_add_func ("/window/retry-banner-follows-session", test_banner_follows_session);

  return g_test_run ();
}
