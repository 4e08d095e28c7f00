/* test-model-chooser.c: the conversation's model and system prompt,
 * chosen in the header and kept through the engine
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
#include "kaged-model-chooser.h"
#include "kaged-profiles.h"
#include "kaged-retry-text.h"
#include "kaged-test-time.h"

#define WAIT_SECONDS 15

typedef struct
{
  char              *dir;
  KagedFakeServer   *fake;
  KagedCore         *core;
  KagedModelChooser *chooser;
  GtkWindow         *window;
  gint64             session_id;
} Fixture;

static void
iterate (void)
{
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

static gboolean
timeout_cb (gpointer user_data)
{
  *(gboolean *)user_data = TRUE;
  return G_SOURCE_REMOVE;
}

typedef gboolean (*Predicate) (Fixture *fixture, gconstpointer data);

static gboolean
wait_for (Fixture       *fixture,
          Predicate      predicate,
          gconstpointer  data)
{
  gboolean timed_out = FALSE;
  guint id = g_timeout_add_seconds (WAIT_SECONDS, timeout_cb, &timed_out);

  while (!predicate (fixture, data) && !timed_out)
    g_main_context_iteration (NULL, TRUE);

  if (!timed_out)
    g_source_remove (id);
  return !timed_out;
}

static gpointer
child (Fixture    *fixture,
       const char *name)
{
  GObject *object = gtk_widget_get_template_child (GTK_WIDGET (fixture->chooser),
                                                   KAGED_TYPE_MODEL_CHOOSER, name);

  g_assert_nonnull (object);
  return object;
}

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  static const char * const models[] = { "fake-small", "fake-large", NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autofree char *db_path = NULL;
  g_autofree char *url = NULL;
  g_autofree char *base = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  db_path = g_build_filename (fixture->dir, "kaged.db", NULL);

  fixture->fake = kaged_fake_server_new ("[{\"kind\": \"openai\", \"text\": \"Bonjour\"}]", &error);
  g_assert_no_error (error);
  kaged_fake_server_set_models (fixture->fake, models);
  if (data != NULL)
    kaged_fake_server_set_api_key (fixture->fake, data);
  kaged_fake_server_listen (fixture->fake, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (fixture->fake);
  base = g_strconcat (url, "/v1", NULL);

  fixture->core = kaged_core_open (db_path, keyring, KAGED_CORE_FLAGS_NONE, &error);
  g_assert_no_error (error);
  profile = kaged_profile_new ("Local", KAGED_PROVIDER_KIND_OPENAI, base, "test-model");
  kaged_core_set_profile (fixture->core, profile);
  kaged_core_start (fixture->core);

  session = kaged_core_create_session (fixture->core, "Chooser", &error);
  g_assert_no_error (error);
  fixture->session_id = kaged_session_get_id (session);

  fixture->chooser = KAGED_MODEL_CHOOSER (kaged_model_chooser_new ());
  fixture->window = GTK_WINDOW (gtk_window_new ());
  gtk_window_set_default_size (fixture->window, 480, 640);
  gtk_window_set_child (fixture->window, GTK_WIDGET (fixture->chooser));
  gtk_window_present (fixture->window);
  kaged_model_chooser_set_core (fixture->chooser, fixture->core);
  kaged_model_chooser_set_session (fixture->chooser, fixture->session_id);
  iterate ();
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GDir) dir = NULL;
  const char *name;

  /* GTK 4.8 keeps the surface a tooltip was asked for and reads it when
   * its timer fires, if the window has gone meanwhile: it fires first. */
  kaged_test_run_for (700 * 1000);
  gtk_window_destroy (fixture->window);
  iterate ();
  kaged_core_shutdown (fixture->core);
  g_clear_object (&fixture->core);
  g_clear_object (&fixture->fake);

  dir = g_dir_open (fixture->dir, 0, NULL);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (fixture->dir, name, NULL);

      g_unlink (path);
    }
  g_rmdir (fixture->dir);
  g_clear_pointer (&fixture->dir, g_free);
}

static guint
n_rows (Fixture *fixture)
{
  GtkWidget *list = child (fixture, "models_list");
  guint n = 0;

  for (GtkWidget *row = gtk_widget_get_first_child (list); row != NULL; row = gtk_widget_get_next_sibling (row))
    n++;
  return n;
}

static gboolean
rows_at_least (Fixture       *fixture,
               gconstpointer  data)
{
  return n_rows (fixture) >= GPOINTER_TO_UINT (data);
}

static gboolean
status_shown (Fixture       *fixture,
              gconstpointer  data)
{
  GtkLabel *status = child (fixture, "status_label");

  return gtk_widget_get_visible (GTK_WIDGET (status)) &&
         strstr (gtk_label_get_label (status), data) != NULL;
}

static GtkListBoxRow *
row_for (Fixture    *fixture,
         const char *model)
{
  GtkWidget *list = child (fixture, "models_list");

  for (GtkWidget *row = gtk_widget_get_first_child (list); row != NULL; row = gtk_widget_get_next_sibling (row))
    {
      if (g_strcmp0 (g_object_get_data (G_OBJECT (row), "kaged-model"), model) == 0)
        return GTK_LIST_BOX_ROW (row);
    }

  return NULL;
}

static void
open_popover (Fixture *fixture)
{
  gtk_menu_button_popup (child (fixture, "menu_button"));
  iterate ();
  g_assert_true (gtk_widget_get_visible (child (fixture, "popover")));
}

static void
assert_settings (Fixture    *fixture,
                 const char *model,
                 const char *system_prompt)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *got_profile = NULL;
  g_autofree char *got_model = NULL;
  g_autofree char *got_prompt = NULL;

  g_assert_true (kaged_core_get_session_settings (fixture->core, fixture->session_id, &got_profile,
                                                  &got_model, &got_prompt, &error));
  g_assert_no_error (error);
  g_assert_null (got_profile);
  g_assert_cmpstr (got_model, ==, model);
  g_assert_cmpstr (got_prompt, ==, system_prompt);
}

static gboolean
run_done (Fixture       *fixture,
          gconstpointer  data)
{
  g_autoptr(KagedRun) run = kaged_session_manager_get_run (kaged_core_get_manager (fixture->core),
                                                           fixture->session_id,
                                                           GPOINTER_TO_SIZE (data), NULL);

  return run != NULL && kaged_run_get_status (run) == KAGED_RUN_STATUS_SUCCEEDED;
}

/* The list of models is as tall as its rows, up to its most (then it
 * scrolls): not as tall as a scroll bar would want. */
static void
assert_list_fits (Fixture *fixture)
{
  GtkWidget *list = child (fixture, "models_list");
  GtkWidget *scroller = gtk_widget_get_ancestor (list, GTK_TYPE_SCROLLED_WINDOW);
  int height = 0;
  int shown = 0;

  gtk_widget_measure (list, GTK_ORIENTATION_VERTICAL, -1, NULL, &height, NULL, NULL);
  gtk_widget_measure (scroller, GTK_ORIENTATION_VERTICAL, -1, NULL, &shown, NULL, NULL);
  g_assert_cmpint (shown, ==, MIN (height, 240));
}

/* The chooser lists the server's models, sets one picked or typed and the
 * system prompt, and the next reply is asked of that model with it. */
static void
test_choose (Fixture       *fixture,
             gconstpointer  data)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) body = NULL;
  GtkTextBuffer *buffer;
  JsonObject *object;
  JsonObject *first;
  GBytes *bytes;
  guint n;

  g_assert_cmpstr (kaged_model_chooser_get_label (fixture->chooser), ==, "Local · test-model");
  /* Nothing is asked of the server until someone looks. */
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->fake, NULL), ==, 0);

  open_popover (fixture);
  g_assert_true (wait_for (fixture, rows_at_least, GUINT_TO_POINTER (3)));
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->fake, "/v1/models"), ==, 1);
  g_assert_nonnull (row_for (fixture, NULL));

  assert_list_fits (fixture);

  /* Use This Model is offered once there is a name to use. */
  {
    GtkEntry *entry = child (fixture, "model_entry");

    g_assert_null (gtk_entry_get_icon_name (entry, GTK_ENTRY_ICON_SECONDARY));
    gtk_editable_set_text (GTK_EDITABLE (entry), "typed-model");
    g_assert_cmpstr (gtk_entry_get_icon_name (entry, GTK_ENTRY_ICON_SECONDARY), ==, "object-select-symbolic");
    gtk_editable_set_text (GTK_EDITABLE (entry), "");
    g_assert_null (gtk_entry_get_icon_name (entry, GTK_ENTRY_ICON_SECONDARY));
  }

  g_signal_emit_by_name (child (fixture, "models_list"), "row-activated", row_for (fixture, "fake-small"));
  iterate ();
  assert_settings (fixture, "fake-small", NULL);
  g_assert_cmpstr (kaged_model_chooser_get_label (fixture->chooser), ==, "Local · fake-small");
  g_assert_false (gtk_widget_get_visible (child (fixture, "popover")));

  /* The list was kept: opening again asks nothing. */
  open_popover (fixture);
  g_assert_cmpuint (n_rows (fixture), ==, 3);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->fake, "/v1/models"), ==, 1);

  /* A model the server does not list, typed in. */
  gtk_editable_set_text (child (fixture, "model_entry"), "custom-7b");
  g_signal_emit_by_name (child (fixture, "model_entry"), "activate");
  iterate ();
  assert_settings (fixture, "custom-7b", NULL);

  open_popover (fixture);
  buffer = gtk_text_view_get_buffer (child (fixture, "prompt_view"));
  gtk_text_buffer_set_text (buffer, "  Réponds en français.  ", -1);
  g_signal_emit_by_name (child (fixture, "save_prompt_button"), "clicked");
  iterate ();
  assert_settings (fixture, "custom-7b", "Réponds en français.");

  /* Back to the profile's own model, prompt kept. */
  g_signal_emit_by_name (child (fixture, "models_list"), "row-activated", row_for (fixture, NULL));
  iterate ();
  assert_settings (fixture, NULL, "Réponds en français.");

  open_popover (fixture);
  gtk_editable_set_text (child (fixture, "model_entry"), "custom-7b");
  g_signal_emit_by_name (child (fixture, "model_entry"), "activate");
  iterate ();

  receipt = kaged_core_post (fixture->core, fixture->session_id, "Bonjour ?", &error);
  g_assert_no_error (error);
  g_assert_true (wait_for (fixture, run_done, GSIZE_TO_POINTER (receipt->run_id)));

  n = kaged_fake_server_get_n_requests (fixture->fake, NULL);
  bytes = kaged_fake_server_get_request_body (fixture->fake, n - 1);
  body = json_from_string (g_bytes_get_data (bytes, NULL), &error);
  g_assert_no_error (error);
  object = json_node_get_object (body);
  g_assert_cmpstr (json_object_get_string_member (object, "model"), ==, "custom-7b");
  first = json_array_get_object_element (json_object_get_array_member (object, "messages"), 0);
  g_assert_cmpstr (json_object_get_string_member (first, "role"), ==, "system");
  g_assert_cmpstr (json_object_get_string_member (first, "content"), ==, "Réponds en français.");
}

/* A server that refuses the list: said in words, free text still works. */
static void
test_refused (Fixture       *fixture,
              gconstpointer  data)
{
  open_popover (fixture);
  g_assert_true (wait_for (fixture, status_shown, "Type a model name"));
  g_assert_cmpuint (n_rows (fixture), ==, 1);
  assert_list_fits (fixture);

  gtk_editable_set_text (child (fixture, "model_entry"), "typed-model");
  g_signal_emit_by_name (child (fixture, "model_entry"), "activate");
  iterate ();
  assert_settings (fixture, "typed-model", NULL);
}

static void
result_cb (GObject      *object,
           GAsyncResult *result,
           gpointer      user_data)
{
  *(GAsyncResult **)user_data = g_object_ref (result);
}

static char *
test_connection_words (KagedCore    *core,
                       KagedProfile *profile,
                       gboolean     *needs_preferences)
{
  g_autoptr(GAsyncResult) result = NULL;
  g_autoptr(KagedConnectionResult) outcome = NULL;
  g_autoptr(GError) error = NULL;

  kaged_profile_test_connection_async (profile, kaged_core_get_resolver (core), NULL,
                                       result_cb, &result);
  while (result == NULL)
    g_main_context_iteration (NULL, TRUE);
  outcome = kaged_profile_test_connection_finish (profile, result, &error);
  g_assert_no_error (error);
  *needs_preferences = kaged_connection_result_needs_preferences (outcome);

  return kaged_retry_describe_connection (outcome);
}

/* Test Connection, in the words Preferences show. */
static void
test_connection (Fixture       *fixture,
                 gconstpointer  data)
{
  KagedProfile *profile = kaged_core_get_profile (fixture->core);
  g_autoptr(KagedProfile) wrong = kaged_profile_copy (profile);
  g_autofree char *words = NULL;
  g_autofree char *wrong_url = g_strconcat (kaged_profile_get_base_url (profile), "/nope", NULL);
  gboolean needs_preferences = TRUE;

  words = test_connection_words (fixture->core, profile, &needs_preferences);
  if (data == NULL)
    {
      g_assert_cmpstr (words, ==, "Connected — 2 models available");
      g_assert_false (needs_preferences);
    }
  else
    {
      g_assert_cmpstr (words, ==, "The provider rejected the API key (HTTP 401)");
      g_assert_true (needs_preferences);
    }

  g_clear_pointer (&words, g_free);
  kaged_profile_set_base_url (wrong, wrong_url);
  words = test_connection_words (fixture->core, wrong, &needs_preferences);
  g_assert_cmpstr (words, ==, "Nothing answers at this address (HTTP 404) — check the base URL");
  g_assert_true (needs_preferences);
}

/* A new conversation, before its first message: the choice waits for the
 * conversation the message starts, and only for that one. */
static void
test_new_conversation (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedSession) started = NULL;
  g_autoptr(GError) error = NULL;
  gint64 old_session = fixture->session_id;

  /* The existing conversation has a reply: it is not new. */
  receipt = kaged_core_post (fixture->core, old_session, "Hi", &error);
  g_assert_no_error (error);
  g_assert_true (wait_for (fixture, run_done, GSIZE_TO_POINTER (receipt->run_id)));

  kaged_model_chooser_set_session (fixture->chooser, 0);
  g_assert_true (gtk_widget_get_sensitive (child (fixture, "menu_button")));
  g_assert_cmpstr (kaged_model_chooser_get_label (fixture->chooser), ==, "Local · test-model");

  open_popover (fixture);
  gtk_editable_set_text (child (fixture, "model_entry"), "first-choice");
  g_signal_emit_by_name (child (fixture, "model_entry"), "activate");
  iterate ();
  g_assert_cmpstr (kaged_model_chooser_get_label (fixture->chooser), ==, "Local · first-choice");

  /* Shown from the list instead: it keeps its own, and the choice is gone. */
  kaged_model_chooser_set_session (fixture->chooser, old_session);
  fixture->session_id = old_session;
  assert_settings (fixture, NULL, NULL);
  kaged_model_chooser_set_session (fixture->chooser, 0);
  g_assert_cmpstr (kaged_model_chooser_get_label (fixture->chooser), ==, "Local · test-model");

  open_popover (fixture);
  gtk_editable_set_text (child (fixture, "model_entry"), "second-choice");
  g_signal_emit_by_name (child (fixture, "model_entry"), "activate");
  open_popover (fixture);
  gtk_text_buffer_set_text (gtk_text_view_get_buffer (child (fixture, "prompt_view")), "Be brief.", -1);
  g_signal_emit_by_name (child (fixture, "save_prompt_button"), "clicked");
  iterate ();

  /* The first message starts the conversation, which gets the choice. */
  started = kaged_core_create_session (fixture->core, NULL, &error);
  g_assert_no_error (error);
  kaged_model_chooser_set_session (fixture->chooser, kaged_session_get_id (started));
  fixture->session_id = kaged_session_get_id (started);
  assert_settings (fixture, "second-choice", "Be brief.");
  g_assert_cmpstr (kaged_model_chooser_get_label (fixture->chooser), ==, "Local · second-choice");
}

/* What the application provides: the preferences, at a profile's page or
 * not, here recorded. */
typedef struct
{
  guint  n_opened;
  char  *profile_id;
} Opened;

static void
preferences_cb (GSimpleAction *action,
                GVariant      *parameter,
                gpointer       user_data)
{
  Opened *opened = user_data;

  opened->n_opened++;
  g_clear_pointer (&opened->profile_id, g_free);
  if (parameter != NULL)
    opened->profile_id = g_variant_dup_string (parameter, NULL);
}

static void
add_app_actions (Fixture *fixture,
                 Opened  *opened)
{
  const GActionEntry entries[] = {
    { "preferences", preferences_cb, NULL, NULL, NULL, { 0 } },
    { "preferences-profile", preferences_cb, "s", NULL, NULL, { 0 } },
  };
  g_autoptr(GSimpleActionGroup) group = g_simple_action_group_new ();

  g_action_map_add_action_entries (G_ACTION_MAP (group), entries, G_N_ELEMENTS (entries), opened);
  gtk_widget_insert_action_group (GTK_WIDGET (fixture->window), "app", G_ACTION_GROUP (group));
}

static gboolean
refresh_done (Fixture       *fixture,
              gconstpointer  data)
{
  return gtk_widget_get_sensitive (child (fixture, "refresh_button"));
}

static void
refresh_and_wait (Fixture *fixture)
{
  g_signal_emit_by_name (child (fixture, "refresh_button"), "clicked");
  g_assert_false (gtk_widget_get_sensitive (child (fixture, "refresh_button")));
  g_assert_true (wait_for (fixture, refresh_done, NULL));
  iterate ();
}

/* A list refused for the key, or a wrong address: mended in Preferences,
 * which the chooser opens at the profile's page. A failure that waiting
 * mends offers no such thing. */
static void
test_failure_offers_preferences (Fixture       *fixture,
                                 gconstpointer  data)
{
  KagedProfile *profile = kaged_core_get_profile (fixture->core);
  GtkWidget *button = child (fixture, "preferences_button");
  g_autofree char *base = g_strdup (kaged_profile_get_base_url (profile));
  g_autofree char *wrong = g_strconcat (base, "/nope", NULL);
  Opened opened = { 0, NULL };

  add_app_actions (fixture, &opened);
  kaged_profile_set_id (profile, "local");

  open_popover (fixture);
  if (data == NULL)
    {
      /* Listed: nothing to mend. */
      g_assert_true (wait_for (fixture, rows_at_least, GUINT_TO_POINTER (3)));
      g_assert_false (gtk_widget_get_visible (button));

      kaged_profile_set_base_url (profile, wrong);
      refresh_and_wait (fixture);
      g_assert_true (status_shown (fixture, "Type a model name"));
      /* In the words Test Connection uses. */
      g_assert_true (status_shown (fixture, "Nothing answers at this address (HTTP 404) — "
                                            "check the base URL"));
    }
  else
    g_assert_true (wait_for (fixture, status_shown, "Type a model name"));

  g_assert_true (gtk_widget_get_visible (button));
  g_assert_cmpstr (gtk_button_get_label (GTK_BUTTON (button)), ==, "Open Preferences");
  g_signal_emit_by_name (button, "clicked");
  iterate ();
  g_assert_cmpuint (opened.n_opened, ==, 1);
  g_assert_cmpstr (opened.profile_id, ==, "local");
  g_assert_false (gtk_widget_get_visible (child (fixture, "popover")));

  /* Nothing listens on port 9: a network failure, waited out. */
  open_popover (fixture);
  kaged_profile_set_base_url (profile, "http://127.0.0.1:9/v1");
  refresh_and_wait (fixture);
  g_assert_true (status_shown (fixture, "Type a model name"));
  g_assert_false (gtk_widget_get_visible (button));

  /* A profile that was never saved has no page: the Preferences open. */
  kaged_profile_set_base_url (profile, wrong);
  kaged_profile_set_id (profile, NULL);
  refresh_and_wait (fixture);
  g_assert_true (gtk_widget_get_visible (button));
  g_signal_emit_by_name (button, "clicked");
  iterate ();
  g_assert_cmpuint (opened.n_opened, ==, 2);
  g_assert_null (opened.profile_id);

  g_free (opened.profile_id);
}

/* Run with a server given on the command line, beside saved profiles:
 * the popover shows that server and its models, not the first saved
 * profile's, and the saved ones stay there to choose. */
static void
test_command_line_beside_saved (Fixture       *fixture,
                                gconstpointer  data)
{
  g_autoptr(GSettingsBackend) backend = g_memory_settings_backend_new ();
  g_autoptr(GSettings) settings = g_settings_new_with_backend (BASE_APPLICATION_ID, backend);
  g_autoptr(KagedProfiles) profiles = NULL;
  GtkDropDown *dropdown = child (fixture, "profile_dropdown");
  GListModel *choices;

  g_settings_set_string (settings, "provider-kind", "ollama");
  g_settings_set_string (settings, "provider-base-url", "http://127.0.0.1:9");
  g_settings_set_string (settings, "provider-model", "llama3.2");
  profiles = kaged_profiles_new (settings);
  kaged_core_set_profiles (fixture->core, profiles);
  kaged_model_chooser_set_core (fixture->chooser, fixture->core);
  kaged_model_chooser_set_session (fixture->chooser, fixture->session_id);
  iterate ();
  g_assert_cmpstr (kaged_model_chooser_get_label (fixture->chooser), ==, "Local · test-model");

  open_popover (fixture);
  g_assert_true (gtk_drop_down_get_selected_item (dropdown) == (gpointer)kaged_core_get_profile (fixture->core));
  g_assert_true (wait_for (fixture, rows_at_least, GUINT_TO_POINTER (3)));
  g_assert_nonnull (row_for (fixture, "fake-small"));
  g_assert_false (status_shown (fixture, "failed"));

  choices = gtk_drop_down_get_model (dropdown);
  g_assert_cmpuint (g_list_model_get_n_items (choices), ==, 2);
}

static void
count_notify (guint *count)
{
  (*count)++;
}

/* In a narrow header the button is an icon, and its label, for the window
 * to show, is the model alone, which is what changes from one conversation
 * to the next; the popover shows the profile. */
static void
test_narrow (Fixture       *fixture,
             gconstpointer  data)
{
  GtkMenuButton *button = child (fixture, "menu_button");
  guint notified = 0;

  g_signal_connect_swapped (fixture->chooser, "notify::label", G_CALLBACK (count_notify), &notified);
  g_assert_null (gtk_menu_button_get_icon_name (button));
  kaged_model_chooser_set_narrow (fixture->chooser, TRUE);
  g_assert_cmpstr (kaged_model_chooser_get_label (fixture->chooser), ==, "test-model");
  g_assert_cmpuint (notified, ==, 1);
  g_assert_cmpstr (gtk_menu_button_get_icon_name (button), ==, "kaged-model-symbolic");

  /* A model chosen while narrow reads alone too. */
  open_popover (fixture);
  g_assert_true (wait_for (fixture, rows_at_least, GUINT_TO_POINTER (3)));
  g_signal_emit_by_name (child (fixture, "models_list"), "row-activated", row_for (fixture, "fake-small"));
  iterate ();
  g_assert_cmpstr (kaged_model_chooser_get_label (fixture->chooser), ==, "fake-small");
  g_assert_cmpuint (notified, ==, 2);

  /* Wide again, the button reads the profile and the model. */
  kaged_model_chooser_set_narrow (fixture->chooser, FALSE);
  g_assert_cmpstr (kaged_model_chooser_get_label (fixture->chooser), ==, "Local · fake-small");
  g_assert_cmpuint (notified, ==, 3);
  g_assert_null (gtk_menu_button_get_icon_name (button));
  g_assert_true (gtk_widget_is_ancestor (child (fixture, "button_label"), GTK_WIDGET (button)));
  g_assert_true (gtk_widget_get_mapped (child (fixture, "button_label")));
}

/* A profile and a model too long to read together: the button reads the
 * model, which is what differs between conversations. */
static void
test_long_names (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autoptr(KagedProfile) profile = kaged_profile_new ("Command Line", KAGED_PROVIDER_KIND_OPENAI,
                                                       "http://127.0.0.1:9/v1",
                                                       "claude-3-5-sonnet-20241022");

  kaged_core_set_profile (fixture->core, profile);
  iterate ();
  g_assert_cmpstr (kaged_model_chooser_get_label (fixture->chooser), ==, "claude-3-5-sonnet-20241022");

  /* Short enough, both. */
  g_clear_object (&profile);
  profile = kaged_profile_new ("Command Line", KAGED_PROVIDER_KIND_OPENAI, "http://127.0.0.1:9/v1", "gpt-4o");
  kaged_core_set_profile (fixture->core, profile);
  iterate ();
  g_assert_cmpstr (kaged_model_chooser_get_label (fixture->chooser), ==, "Command Line · gpt-4o");
}

int
main (int   argc,
      char *argv[])
{
  gtk_disable_setlocale ();
  g_test_init (&argc, &argv, NULL);
  adw_init ();

  g_test_add ("/model-chooser/choose", Fixture, NULL, fixture_set_up, test_choose, fixture_tear_down);
  g_test_add ("/model-chooser/refused", Fixture, "sk-kaged-never-sent", fixture_set_up, test_refused, fixture_tear_down);
  g_test_add ("/model-chooser/connection", Fixture, NULL, fixture_set_up, test_connection, fixture_tear_down);
  g_test_add ("/model-chooser/connection-refused", Fixture, "sk-kaged-never-sent", fixture_set_up, test_connection, fixture_tear_down);
  g_test_add ("/model-chooser/new-conversation", Fixture, NULL, fixture_set_up, test_new_conversation, fixture_tear_down);
  g_test_add ("/model-chooser/narrow", Fixture, NULL, fixture_set_up, test_narrow, fixture_tear_down);
  g_test_add ("/model-chooser/command-line-beside-saved", Fixture, NULL, fixture_set_up,
              test_command_line_beside_saved, fixture_tear_down);
  g_test_add ("/model-chooser/long-names", Fixture, NULL, fixture_set_up, test_long_names, fixture_tear_down);
  g_test_add ("/model-chooser/wrong-address-offers-preferences", Fixture, NULL,
              fixture_set_up, test_failure_offers_preferences, fixture_tear_down);
  g_test_add ("/model-chooser/refused-offers-preferences", Fixture, "sk-kaged-never-sent",
              fixture_set_up, test_failure_offers_preferences, fixture_tear_down);

  return g_test_run ();
}
