/* test-preferences.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The provider profile: what the preferences window writes to GSettings
 * and the profile the application builds from it.
 */

#include "config.h"

#include <adwaita.h>

#include "kaged-application.h"
#include "kaged-preferences-window.h"

static gboolean
wait_for_string (GSettings  *settings,
                 const char *key,
                 const char *expected)
{
  gint64 deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;

  while (g_get_monotonic_time () < deadline)
    {
      g_autofree char *value = g_settings_get_string (settings, key);

      if (g_strcmp0 (value, expected) == 0)
        return TRUE;

      g_main_context_iteration (NULL, FALSE);
    }

  return FALSE;
}

static void
reset_keys (GSettings *settings)
{
  g_autoptr(GSettingsSchema) schema = NULL;
  g_auto(GStrv) keys = NULL;

  g_object_get (settings, "settings-schema", &schema, NULL);
  keys = g_settings_schema_list_keys (schema);
  for (guint i = 0; keys[i] != NULL; i++)
    g_settings_reset (settings, keys[i]);
}

/* The settings of the profile "default". */
static GSettings *
default_profile_settings (void)
{
  return g_settings_new_with_path (BASE_APPLICATION_ID ".Profile",
                                   "/io/github/kaged/Kaged/profiles/default/");
}

/* Back to a fresh install: no profiles yet, nothing set. */
static void
reset_settings (GSettings *settings)
{
  g_autoptr(GSettings) profile = default_profile_settings ();

  reset_keys (profile);
  reset_keys (settings);
}

static void
test_profile_defaults (void)
{
  g_autoptr(GSettings) settings = g_settings_new (BASE_APPLICATION_ID);
  g_autoptr(KagedApplication) app = NULL;
  g_autoptr(KagedProfile) profile = NULL;

  reset_settings (settings);
  app = kaged_application_new ();
  profile = kaged_application_dup_profile (app);

  /* A fresh install talks to a local Ollama, which needs no key. */
  g_assert_cmpint (kaged_profile_get_kind (profile), ==, KAGED_PROVIDER_KIND_OLLAMA);
  g_assert_cmpstr (kaged_profile_get_base_url (profile), ==, "http://127.0.0.1:11434");
  g_assert_cmpstr (kaged_profile_get_model (profile), ==, "llama3.2");
  g_assert_false (kaged_provider_kind_needs_key (kaged_profile_get_kind (profile),
                                                 kaged_profile_get_base_url (profile)));
}

static void
test_profile_from_settings (void)
{
  g_autoptr(GSettings) settings = g_settings_new (BASE_APPLICATION_ID);
  g_autoptr(KagedApplication) app = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedProfile) later = NULL;
  const char *api_key_env;

  reset_settings (settings);
  g_settings_set_string (settings, "provider-kind", "anthropic");
  g_settings_set_string (settings, "provider-base-url", "");
  g_settings_set_string (settings, "provider-model", "claude-sonnet-4-5");
  g_settings_set_string (settings, "provider-api-key-env", "ANTHROPIC_API_KEY");

  app = kaged_application_new ();
  profile = kaged_application_dup_profile (app);

  g_assert_cmpint (kaged_profile_get_kind (profile), ==, KAGED_PROVIDER_KIND_ANTHROPIC);
  /* An empty base URL means the kind's usual address. */
  g_assert_cmpstr (kaged_profile_get_base_url (profile), ==, "https://api.anthropic.com");
  g_assert_cmpstr (kaged_profile_get_model (profile), ==, "claude-sonnet-4-5");
  g_assert_cmpstr (kaged_profile_get_api_key_env (profile), ==, "ANTHROPIC_API_KEY");

  /* They moved to the profile "default", whose settings count from now on. */
  {
    g_auto(GStrv) ids = g_settings_get_strv (settings, "profiles");
    g_autoptr(GSettings) moved = default_profile_settings ();

    g_assert_cmpuint (g_strv_length (ids), ==, 1);
    g_assert_cmpstr (ids[0], ==, "default");
    g_assert_cmpstr (kaged_profile_get_id (profile), ==, "default");

    g_settings_set_string (moved, "kind", "openai");
    g_settings_set_string (moved, "base-url", "http://127.0.0.1:8080/v1");
    g_settings_set_string (moved, "api-key-env", "");
  }
  later = kaged_application_dup_profile (app);

  g_assert_cmpint (kaged_profile_get_kind (later), ==, KAGED_PROVIDER_KIND_OPENAI);
  g_assert_cmpstr (kaged_profile_get_base_url (later), ==, "http://127.0.0.1:8080/v1");
  api_key_env = kaged_profile_get_api_key_env (later);
  g_assert_true (api_key_env == NULL || api_key_env[0] == '\0');

  /* The profile is a copy: it does not follow later changes. */
  g_assert_cmpint (kaged_profile_get_kind (profile), ==, KAGED_PROVIDER_KIND_ANTHROPIC);
}

static GtkWidget *
child (KagedPreferencesWindow *window,
       const char             *name)
{
  GObject *object = gtk_widget_get_template_child (GTK_WIDGET (window),
                                                   KAGED_TYPE_PREFERENCES_WINDOW, name);

  g_assert_nonnull (object);

  return GTK_WIDGET (object);
}

static void
test_window_writes_settings (void)
{
  g_autoptr(GSettings) app_settings = g_settings_new (BASE_APPLICATION_ID);
  g_autoptr(GSettings) settings = default_profile_settings ();
  KagedPreferencesWindow *window;
  AdwComboRow *kind_row;
  GtkEditable *base_url_row;
  GtkEditable *model_row;
  GtkEditable *api_key_env_row;

  reset_settings (app_settings);

  window = kaged_preferences_window_new (NULL);
  kind_row = ADW_COMBO_ROW (child (window, "kind_row"));
  base_url_row = GTK_EDITABLE (child (window, "base_url_row"));
  model_row = GTK_EDITABLE (child (window, "model_row"));
  api_key_env_row = GTK_EDITABLE (child (window, "api_key_env_row"));

  /* The rows show the settings. */
  g_assert_cmpuint (adw_combo_row_get_selected (kind_row), ==, 0);
  g_assert_cmpstr (gtk_editable_get_text (base_url_row), ==, "http://127.0.0.1:11434");
  g_assert_cmpstr (gtk_editable_get_text (model_row), ==, "llama3.2");
  g_assert_cmpstr (gtk_editable_get_text (api_key_env_row), ==, "");

  /* Choosing another kind moves an untouched base URL along with it. */
  adw_combo_row_set_selected (kind_row, 1);
  g_assert_true (wait_for_string (settings, "kind", "openai"));
  g_assert_true (wait_for_string (settings, "base-url", "https://api.openai.com/v1"));
  g_assert_cmpstr (gtk_editable_get_text (base_url_row), ==, "https://api.openai.com/v1");

  /* An address the user typed stays when the kind changes. */
  gtk_editable_set_text (base_url_row, "http://127.0.0.1:8080/v1");
  g_assert_true (wait_for_string (settings, "base-url", "http://127.0.0.1:8080/v1"));
  adw_combo_row_set_selected (kind_row, 2);
  g_assert_true (wait_for_string (settings, "kind", "anthropic"));
  g_assert_true (wait_for_string (settings, "base-url", "http://127.0.0.1:8080/v1"));

  gtk_editable_set_text (model_row, "claude-haiku-4-5");
  gtk_editable_set_text (api_key_env_row, "ANTHROPIC_API_KEY");
  g_assert_true (wait_for_string (settings, "model", "claude-haiku-4-5"));
  g_assert_true (wait_for_string (settings, "api-key-env", "ANTHROPIC_API_KEY"));

  /* And the other way round: a change made elsewhere shows in the window. */
  g_settings_set_string (settings, "kind", "ollama");
  g_assert_true (wait_for_string (settings, "kind", "ollama"));
  g_assert_cmpuint (adw_combo_row_get_selected (kind_row), ==, 0);

  gtk_window_destroy (GTK_WINDOW (window));
}

static void
test_window_api_settings (void)
{
  g_autoptr(GSettings) settings = g_settings_new (BASE_APPLICATION_ID);
  KagedPreferencesWindow *window;
  GtkSwitch *enabled;
  GtkSpinButton *port;
  GtkWidget *status;
  gint64 deadline;

  reset_settings (settings);

  window = kaged_preferences_window_new (NULL);
  enabled = GTK_SWITCH (child (window, "api_enabled_switch"));
  port = GTK_SPIN_BUTTON (child (window, "api_port_button"));
  status = child (window, "api_status_row");

  /* Off by default, on a port of the system's choosing. */
  g_assert_false (gtk_switch_get_active (enabled));
  g_assert_cmpint (gtk_spin_button_get_value_as_int (port), ==, 0);
  g_assert_false (gtk_widget_get_visible (status));

  gtk_switch_set_active (enabled, TRUE);
  gtk_spin_button_set_value (port, 8123);

  deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
  while ((!g_settings_get_boolean (settings, "api-enabled") ||
          g_settings_get_uint (settings, "api-port") != 8123) &&
         g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, FALSE);

  g_assert_true (g_settings_get_boolean (settings, "api-enabled"));
  g_assert_cmpuint (g_settings_get_uint (settings, "api-port"), ==, 8123);

  g_settings_set_uint (settings, "api-port", 0);
  g_settings_set_boolean (settings, "api-enabled", FALSE);
  g_assert_cmpint (gtk_spin_button_get_value_as_int (port), ==, 0);
  g_assert_false (gtk_switch_get_active (enabled));

  gtk_window_destroy (GTK_WINDOW (window));
}

static void
test_window_spending_settings (void)
{
  g_autoptr(GSettings) app_settings = g_settings_new (BASE_APPLICATION_ID);
  g_autoptr(GSettings) settings = default_profile_settings ();
  g_autofree char *period = NULL;
  KagedPreferencesWindow *window;
  GtkSpinButton *input_price;
  GtkSpinButton *limit;
  AdwComboRow *period_row;
  gint64 deadline;

  reset_settings (app_settings);

  window = kaged_preferences_window_new (NULL);
  input_price = GTK_SPIN_BUTTON (child (window, "input_price_button"));
  limit = GTK_SPIN_BUTTON (child (window, "spend_limit_button"));
  period_row = ADW_COMBO_ROW (child (window, "spend_period_row"));

  /* No limit by default, and nothing to type a limit into. */
  g_assert_cmpuint (adw_combo_row_get_selected (period_row), ==, 0);
  g_assert_false (gtk_widget_get_sensitive (GTK_WIDGET (limit)));

  gtk_spin_button_set_value (input_price, 2.5);
  adw_combo_row_set_selected (period_row, 2);
  g_assert_true (gtk_widget_get_sensitive (GTK_WIDGET (limit)));
  gtk_spin_button_set_value (limit, 20);

  deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
  while (g_settings_get_double (settings, "spend-limit") != 20 &&
         g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, FALSE);

  period = g_settings_get_string (settings, "spend-limit-period");
  g_assert_cmpstr (period, ==, "monthly");
  g_assert_cmpfloat (g_settings_get_double (settings, "input-price"), ==, 2.5);
  g_assert_cmpfloat (g_settings_get_double (settings, "spend-limit"), ==, 20);

  /* And back from the settings to the rows. */
  g_settings_set_string (settings, "spend-limit-period", "daily");
  g_assert_cmpuint (adw_combo_row_get_selected (period_row), ==, 1);

  reset_settings (app_settings);
  gtk_window_destroy (GTK_WINDOW (window));
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/preferences/profile/defaults", test_profile_defaults);
  g_test_add_func ("/preferences/profile/from-settings", test_profile_from_settings);

  if (g_getenv ("DISPLAY") == NULL && g_getenv ("WAYLAND_DISPLAY") == NULL)
    g_error ("This test needs a display: run it through meson, which wraps it in xvfb-run");

  adw_init ();
  g_test_add_func ("/preferences/window/writes-settings", test_window_writes_settings);
  g_test_add_func ("/preferences/window/api-settings", test_window_api_settings);
  g_test_add_func ("/preferences/window/spending-settings", test_window_spending_settings);

  return g_test_run ();
}
