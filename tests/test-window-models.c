/* test-window-models.c: the conversation's profile and model in the
 * window's header, and in a reply's details
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include <adwaita.h>
#include <glib/gstdio.h>

#define G_SETTINGS_ENABLE_BACKEND
#include <gio/gsettingsbackend.h>

#include "kaged-core-settings.h"
#include "kaged-fake-server.h"
#include "kaged-keyring.h"
#include "kaged-message-row.h"
#include "kaged-model-chooser.h"
#include "kaged-window.h"
#include "kaged-test-time.h"

typedef struct
{
  char            *dir;
  KagedFakeServer *server;
  GtkApplication  *application;
  KagedCore       *core;
  KagedWindow     *window;
} Fixture;

static GtkApplication *the_application;

static void
activate_cb (GApplication *application,
             gpointer      user_data)
{
}

static gpointer
child (Fixture    *fixture,
       const char *name)
{
  return (gpointer)gtk_widget_get_template_child (GTK_WIDGET (fixture->window), KAGED_TYPE_WINDOW, name);
}

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GSettingsBackend) backend = g_memory_settings_backend_new ();
  g_autoptr(GSettings) settings = NULL;
  g_autoptr(KagedProfiles) profiles = NULL;
  g_autoptr(KagedProfile) work = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autofree char *db_path = NULL;
  g_autofree char *url = NULL;
  g_autofree char *base = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  db_path = g_build_filename (fixture->dir, "kaged.db", NULL);

  fixture->server = kaged_fake_server_new ("{\"paths\": {"
                                           " \"/v1/chat/completions\": [{\"kind\": \"openai\", \"text\": \"From the default\"}],"
                                           " \"/v1/messages\": [{\"kind\": \"anthropic\", \"text\": \"From work\", \"chunks\": 6, \"delay_ms\": 30}]}}",
                                           &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (fixture->server);
  base = g_strconcat (url, "/v1", NULL);

  /* The default profile on the fake server, and a second one. */
  settings = g_settings_new_with_backend (BASE_APPLICATION_ID, backend);
  g_settings_set_string (settings, "provider-kind", "openai");
  g_settings_set_string (settings, "provider-base-url", base);
  g_settings_set_string (settings, "provider-model", "default-model");
  profiles = kaged_profiles_new (settings);
  work = kaged_profile_new ("Work", KAGED_PROVIDER_KIND_ANTHROPIC, url, "claude-test");
  kaged_profile_set_id (work, "work");
  kaged_profile_set_api_key_env (work, "KAGED_WINDOW_MODELS_KEY");
  kaged_profiles_add (profiles, work);

  if (the_application == NULL)
    {
      the_application = gtk_application_new ("io.github.kaged.Kaged.WindowModelsTest",
                                             G_APPLICATION_NON_UNIQUE);
      g_signal_connect (the_application, "activate", G_CALLBACK (activate_cb), NULL);
      g_application_register (G_APPLICATION (the_application), NULL, &error);
      g_assert_no_error (error);
    }
  fixture->application = g_object_ref (the_application);

  fixture->core = kaged_core_open (db_path, keyring, KAGED_CORE_FLAGS_NONE, &error);
  g_assert_no_error (error);
  kaged_core_set_profiles (fixture->core, profiles);
  kaged_core_start (fixture->core);

  fixture->window = kaged_window_new (fixture->application);
  g_object_add_weak_pointer (G_OBJECT (fixture->window), (gpointer *)&fixture->window);
  kaged_window_set_core (fixture->window, fixture->core);
  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 1000, 700);
  gtk_window_present (GTK_WINDOW (fixture->window));
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GDir) dir = NULL;
  const char *name;

  if (fixture->window != NULL)
    gtk_window_destroy (GTK_WINDOW (fixture->window));
  kaged_core_shutdown (fixture->core);
  for (guint i = 0; i < 50; i++)
    g_main_context_iteration (NULL, FALSE);

  g_clear_object (&fixture->core);
  g_clear_object (&fixture->application);
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

typedef gboolean (*Condition) (Fixture *fixture, gconstpointer data);

static gboolean
wait_for (Fixture       *fixture,
          Condition      condition,
          gconstpointer  data)
{
  gint64 deadline = g_get_monotonic_time () + kaged_test_usec (15 * G_USEC_PER_SEC);

  while (g_get_monotonic_time () < deadline && !condition (fixture, data))
    g_main_context_iteration (NULL, FALSE);

  return condition (fixture, data);
}

/* The row on screen showing the reply of @data, a run id. */
static KagedMessageRow *
find_reply_row (GtkWidget *widget,
                gint64     run_id)
{
  if (KAGED_IS_MESSAGE_ROW (widget))
    {
      KagedMessage *message = kaged_message_row_get_message (KAGED_MESSAGE_ROW (widget));

      if (message != NULL && kaged_message_get_run_id (message) == run_id &&
          kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_AGENT)
        return KAGED_MESSAGE_ROW (widget);
    }

  for (GtkWidget *c = gtk_widget_get_first_child (widget); c != NULL; c = gtk_widget_get_next_sibling (c))
    {
      KagedMessageRow *row = find_reply_row (c, run_id);

      if (row != NULL)
        return row;
    }

  return NULL;
}

static gboolean
reply_row_shown (Fixture       *fixture,
                 gconstpointer  data)
{
  return find_reply_row (GTK_WIDGET (fixture->window), GPOINTER_TO_SIZE (data)) != NULL;
}

static gboolean
run_succeeded (Fixture       *fixture,
               gconstpointer  data)
{
  g_autoptr(KagedRun) run = NULL;

  run = kaged_session_manager_get_run (kaged_core_get_manager (fixture->core),
                                       kaged_window_get_session_id (fixture->window),
                                       GPOINTER_TO_SIZE (data), NULL);
  return run != NULL && kaged_run_get_status (run) == KAGED_RUN_STATUS_SUCCEEDED;
}

static void
test_header_and_details (Fixture       *fixture,
                         gconstpointer  data)
{
  KagedModelChooser *chooser = child (fixture, "model_chooser");
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  KagedMessageRow *row;
  gint64 first_run;

  g_assert_true (KAGED_IS_MODEL_CHOOSER (chooser));

  /* A new conversation starts from the default profile and its model. */
  session = kaged_core_create_session (fixture->core, "Models", &error);
  g_assert_no_error (error);
  kaged_window_show_session (fixture->window, kaged_session_get_id (session));
  g_assert_nonnull (strstr (kaged_model_chooser_get_label (chooser), "default-model"));

  receipt = kaged_core_post (fixture->core, kaged_session_get_id (session), "Hello?", &error);
  g_assert_no_error (error);
  first_run = receipt->run_id;
  g_assert_true (wait_for (fixture, run_succeeded, GSIZE_TO_POINTER (first_run)));
  g_clear_pointer (&receipt, kaged_receipt_free);

  /* Another profile and model, set through the engine: the header follows. */
  g_assert_true (kaged_core_set_session_settings (fixture->core, kaged_session_get_id (session),
                                                  "work", "claude-other", NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_model_chooser_get_label (chooser), ==, "Work · claude-other");

  receipt = kaged_core_post (fixture->core, kaged_session_get_id (session), "And now?", &error);
  g_assert_no_error (error);

  /* While it streams, its details name what the conversation asks for… */
  g_assert_true (wait_for (fixture, reply_row_shown, GSIZE_TO_POINTER (receipt->run_id)));
  row = find_reply_row (GTK_WIDGET (fixture->window), receipt->run_id);
  g_assert_cmpstr (kaged_message_row_get_provider_name (row), ==, "Work");
  g_assert_cmpstr (kaged_message_row_get_model_name (row), ==, "claude-other");
  g_assert_true (wait_for (fixture, run_succeeded, GSIZE_TO_POINTER (receipt->run_id)));
  g_assert_cmpstr (kaged_fake_server_get_request_path (fixture->server, 1), ==, "/v1/messages");

  /* … and the first reply keeps the one it used. */
  row = find_reply_row (GTK_WIDGET (fixture->window), first_run);
  g_assert_nonnull (row);
  g_assert_cmpstr (kaged_message_row_get_model_name (row), ==, "default-model");
  g_assert_cmpstr (kaged_message_row_get_provider_name (row), !=, "Work");

  /* The profile is removed in Preferences: the header goes back to the
   * default at once, and so does the next reply. */
  g_assert_true (kaged_profiles_remove (kaged_core_get_profiles (fixture->core), "work", &error));
  g_assert_no_error (error);
  g_assert_nonnull (strstr (kaged_model_chooser_get_label (chooser), "default-model"));
}

int
main (int   argc,
      char *argv[])
{
  g_setenv ("KAGED_WINDOW_MODELS_KEY", "sk-kaged-window-5a4b3c", TRUE);
  gtk_test_init (&argc, &argv, NULL);
  adw_init ();

  g_test_add ("/window-models/header-and-details", Fixture, NULL, fixture_set_up,
              test_header_and_details, fixture_tear_down);

  return g_test_run ();
}
