/* test-preferences.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The provider profiles: the profile the application builds from the
 * settings, and what the preferences window shows and writes: the list of
 * profiles, a profile's page, its key in the keyring, the default and
 * removing a profile.
 */

#include "config.h"

#include <glib/gstdio.h>
#include <adwaita.h>

#include "kaged-application.h"
#include "kaged-core-settings.h"
#include "kaged-fake-server.h"
#include "kaged-preferences-window.h"
#include "kaged-profile-page.h"
#include "kaged-test-time.h"
#include "kaged-test-files.h"

static gboolean
wait_for_string (GSettings  *settings,
                 const char *key,
                 const char *expected)
{
  gint64 deadline = g_get_monotonic_time () + kaged_test_usec (5 * G_USEC_PER_SEC);

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

static gboolean
wait_until (gboolean (*check) (gpointer data),
            gpointer data)
{
  gint64 deadline = g_get_monotonic_time () + kaged_test_usec (5 * G_USEC_PER_SEC);

  while (g_get_monotonic_time () < deadline)
    {
      if (check (data))
        return TRUE;
      g_main_context_iteration (NULL, FALSE);
    }

  return check (data);
}

static GtkWidget *
find_widget (GtkWidget *root,
             GType      type)
{
  if (g_type_is_a (G_OBJECT_TYPE (root), type))
    return root;

  for (GtkWidget *widget = gtk_widget_get_first_child (root);
       widget != NULL;
       widget = gtk_widget_get_next_sibling (widget))
    {
      GtkWidget *found = find_widget (widget, type);

      if (found != NULL)
        return found;
    }

  return NULL;
}

static gboolean
page_shown (gpointer data)
{
  return find_widget (GTK_WIDGET (data), KAGED_TYPE_PROFILE_PAGE) != NULL &&
         gtk_widget_get_mapped (find_widget (GTK_WIDGET (data), KAGED_TYPE_PROFILE_PAGE));
}

static gboolean
page_gone (gpointer data)
{
  return !page_shown (data);
}

static KagedProfilePage *
shown_page (KagedPreferencesWindow *window)
{
  g_assert_true (wait_until (page_shown, window));

  return KAGED_PROFILE_PAGE (find_widget (GTK_WIDGET (window), KAGED_TYPE_PROFILE_PAGE));
}

static GtkWidget *
page_child (KagedProfilePage *page,
            const char       *name)
{
  GObject *object = gtk_widget_get_template_child (GTK_WIDGET (page),
                                                   KAGED_TYPE_PROFILE_PAGE, name);

  g_assert_nonnull (object);

  return GTK_WIDGET (object);
}

static GSettings *
profile_settings (const char *id)
{
  g_autofree char *path = g_strdup_printf ("/io/github/kaged/Kaged/profiles/%s/", id);

  return g_settings_new_with_path (BASE_APPLICATION_ID ".Profile", path);
}

/* The rows of the list, in order. */
static AdwActionRow *
profile_row (KagedPreferencesWindow *window,
             int                     index)
{
  GtkListBox *list = GTK_LIST_BOX (child (window, "profile_list"));
  GtkListBoxRow *row = gtk_list_box_get_row_at_index (list, index);

  return row != NULL ? ADW_ACTION_ROW (row) : NULL;
}

static GtkWidget *
find_label (GtkWidget  *root,
            const char *text)
{
  if (GTK_IS_LABEL (root) && g_strcmp0 (gtk_label_get_text (GTK_LABEL (root)), text) == 0)
    return root;

  for (GtkWidget *widget = gtk_widget_get_first_child (root);
       widget != NULL;
       widget = gtk_widget_get_next_sibling (widget))
    {
      GtkWidget *found = find_label (widget, text);

      if (found != NULL)
        return found;
    }

  return NULL;
}

/* Whether the row shows its "Default" mark. */
static gboolean
row_is_default (AdwActionRow *row)
{
  GtkWidget *label = find_label (GTK_WIDGET (row), "Default");

  g_assert_nonnull (label);

  return gtk_widget_get_visible (label);
}

/* The list on the Providers page: one row per profile, the default
 * marked, following the settings. */
static void
test_window_lists_profiles (void)
{
  g_autoptr(GSettings) settings = g_settings_new (BASE_APPLICATION_ID);
  g_autoptr(KagedProfiles) elsewhere = NULL;
  g_autoptr(KagedProfile) added = NULL;
  KagedPreferencesWindow *window;
  AdwActionRow *row;

  reset_settings (settings);

  window = kaged_preferences_window_new (NULL);
  gtk_window_present (GTK_WINDOW (window));

  row = profile_row (window, 0);
  g_assert_nonnull (row);
  g_assert_null (profile_row (window, 1));
  g_assert_cmpstr (adw_preferences_row_get_title (ADW_PREFERENCES_ROW (row)), ==, "Ollama");
  g_assert_cmpstr (adw_action_row_get_subtitle (row), ==, "Ollama · llama3.2");
  g_assert_true (row_is_default (row));

  /* A profile added elsewhere shows; so does another default. */
  elsewhere = kaged_profiles_new (settings);
  added = kaged_profile_new ("Work", KAGED_PROVIDER_KIND_ANTHROPIC, NULL, "claude-haiku-4-5");
  kaged_profiles_add (elsewhere, added);
  row = profile_row (window, 1);
  g_assert_nonnull (row);
  g_assert_cmpstr (adw_preferences_row_get_title (ADW_PREFERENCES_ROW (row)), ==, "Work");
  g_assert_cmpstr (adw_action_row_get_subtitle (row), ==, "Anthropic · claude-haiku-4-5");
  g_assert_false (row_is_default (row));

  kaged_profiles_set_default (elsewhere, kaged_profile_get_id (added));
  g_assert_true (row_is_default (profile_row (window, 1)));
  g_assert_false (row_is_default (profile_row (window, 0)));

  /* Renamed on the page, renamed in the list. */
  g_signal_emit_by_name (profile_row (window, 1), "activated");
  {
    KagedProfilePage *page = shown_page (window);

    /* The window's own profiles, the same profile by its id. */
    g_assert_cmpstr (kaged_profile_get_id (kaged_profile_page_get_profile (page)), ==,
                     kaged_profile_get_id (added));
    gtk_editable_set_text (GTK_EDITABLE (page_child (page, "name_row")), "Work Account");
  }
  g_assert_cmpstr (adw_preferences_row_get_title (ADW_PREFERENCES_ROW (profile_row (window, 1))),
                   ==, "Work Account");
  g_assert_cmpstr (kaged_profile_get_name (added), ==, "Work Account");

  gtk_window_destroy (GTK_WINDOW (window));
  reset_settings (settings);
}

static char *
get_string (GSettings  *settings,
            const char *key)
{
  return g_settings_get_string (settings, key);
}

/* Add, then edit every field of the new profile on its page. */
static void
test_window_add_and_edit (void)
{
  g_autoptr(GSettings) settings = g_settings_new (BASE_APPLICATION_ID);
  g_autoptr(GSettings) stored = NULL;
  g_auto(GStrv) ids = NULL;
  g_autofree char *value = NULL;
  KagedPreferencesWindow *window;
  KagedProfilePage *page;
  AdwComboRow *kind_row;
  GtkEditable *base_url_row;
  GtkSpinButton *limit;
  AdwComboRow *period_row;

  reset_settings (settings);

  window = kaged_preferences_window_new (NULL);
  gtk_window_present (GTK_WINDOW (window));

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "preferences.add-profile", NULL));
  page = shown_page (window);

  ids = g_settings_get_strv (settings, "profiles");
  g_assert_cmpuint (g_strv_length (ids), ==, 2);
  g_assert_cmpstr (ids[1], ==, kaged_profile_get_id (kaged_profile_page_get_profile (page)));
  g_assert_nonnull (profile_row (window, 1));
  stored = profile_settings (ids[1]);
  value = get_string (stored, "name");
  g_assert_cmpstr (value, ==, "New Profile");

  kind_row = ADW_COMBO_ROW (page_child (page, "kind_row"));
  base_url_row = GTK_EDITABLE (page_child (page, "base_url_row"));

  /* A new profile starts as a local Ollama, which needs no key. */
  g_assert_cmpuint (adw_combo_row_get_selected (kind_row), ==, 0);
  g_assert_cmpstr (gtk_editable_get_text (base_url_row), ==, "http://127.0.0.1:11434");
  g_assert_false (gtk_widget_get_visible (page_child (page, "key_group")));

  gtk_editable_set_text (GTK_EDITABLE (page_child (page, "name_row")), "Work");
  g_assert_true (wait_for_string (stored, "name", "Work"));

  /* Choosing another kind moves an untouched base URL along with it. */
  adw_combo_row_set_selected (kind_row, 1);
  g_assert_true (wait_for_string (stored, "kind", "openai"));
  g_assert_true (wait_for_string (stored, "base-url", "https://api.openai.com/v1"));
  g_assert_cmpstr (gtk_editable_get_text (base_url_row), ==, "https://api.openai.com/v1");
  g_assert_true (gtk_widget_get_visible (page_child (page, "key_group")));

  /* An address the user typed stays when the kind changes. */
  gtk_editable_set_text (base_url_row, "http://127.0.0.1:8080/v1");
  g_assert_true (wait_for_string (stored, "base-url", "http://127.0.0.1:8080/v1"));
  adw_combo_row_set_selected (kind_row, 2);
  g_assert_true (wait_for_string (stored, "kind", "anthropic"));
  g_assert_true (wait_for_string (stored, "base-url", "http://127.0.0.1:8080/v1"));

  gtk_editable_set_text (GTK_EDITABLE (page_child (page, "model_row")), "claude-haiku-4-5");
  gtk_editable_set_text (GTK_EDITABLE (page_child (page, "api_key_env_row")), "ANTHROPIC_API_KEY");
  g_assert_true (wait_for_string (stored, "model", "claude-haiku-4-5"));
  g_assert_true (wait_for_string (stored, "api-key-env", "ANTHROPIC_API_KEY"));

  /* Its own prices and spend limit; nothing to type a limit into without
   * a period. */
  limit = GTK_SPIN_BUTTON (page_child (page, "spend_limit_button"));
  period_row = ADW_COMBO_ROW (page_child (page, "spend_period_row"));
  g_assert_cmpuint (adw_combo_row_get_selected (period_row), ==, 0);
  g_assert_false (gtk_widget_get_sensitive (GTK_WIDGET (limit)));
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (page_child (page, "input_price_button")), 2.5);
  adw_combo_row_set_selected (period_row, 2);
  g_assert_true (gtk_widget_get_sensitive (GTK_WIDGET (limit)));
  gtk_spin_button_set_value (limit, 20);
  g_assert_true (wait_for_string (stored, "spend-limit-period", "monthly"));
  g_assert_cmpfloat (g_settings_get_double (stored, "input-price"), ==, 2.5);
  g_assert_cmpfloat (g_settings_get_double (stored, "spend-limit"), ==, 20);

  /* The default profile is untouched. */
  {
    g_autoptr(GSettings) first = profile_settings ("default");
    g_autofree char *kind = get_string (first, "kind");

    g_assert_cmpstr (kind, ==, "ollama");
    g_assert_cmpfloat (g_settings_get_double (first, "spend-limit"), ==, 0);
  }

  /* And back from the settings to the rows. */
  g_settings_set_string (stored, "spend-limit-period", "daily");
  g_assert_cmpuint (adw_combo_row_get_selected (period_row), ==, 1);
  g_settings_set_string (stored, "model", "claude-opus-4-1");
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (page_child (page, "model_row"))), ==,
                   "claude-opus-4-1");
  g_assert_cmpstr (adw_action_row_get_subtitle (profile_row (window, 1)), ==,
                   "Anthropic · claude-opus-4-1");

  gtk_widget_activate_action (GTK_WIDGET (page), "profile.back", NULL);
  g_assert_true (wait_until (page_gone, window));

  gtk_window_destroy (GTK_WINDOW (window));
  reset_settings (settings);
}

typedef struct
{
  KagedKeyring *keyring;
  const char   *id;
  gboolean      present;
} KeyCheck;

static gboolean
key_is (gpointer data)
{
  KeyCheck *check = data;
  char *key = kaged_keyring_lookup (check->keyring, check->id, NULL, NULL);
  gboolean present = key != NULL;

  kaged_keyring_free_key (key);

  return present == check->present;
}

static gboolean
dialog_shown (gpointer data)
{
  AdwMessageDialog **dialog = data;
  GListModel *toplevels = gtk_window_get_toplevels ();

  for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++)
    {
      g_autoptr(GObject) toplevel = g_list_model_get_item (toplevels, i);

      if (ADW_IS_MESSAGE_DIALOG (toplevel) && gtk_widget_get_visible (GTK_WIDGET (toplevel)))
        {
          *dialog = ADW_MESSAGE_DIALOG (toplevel);
          return TRUE;
        }
    }

  return FALSE;
}

static gboolean
status_says (gpointer data)
{
  KagedProfilePage *page = data;
  AdwActionRow *status = ADW_ACTION_ROW (page_child (page, "key_status_row"));

  return g_strcmp0 (adw_action_row_get_subtitle (status), "A key is stored in the keyring") == 0;
}

#define TYPED_KEY "sk-typed-into-preferences-91c3"

static gboolean
settings_hold (GSettings  *settings,
               const char *needle)
{
  g_autoptr(GSettingsSchema) schema = NULL;
  g_auto(GStrv) keys = NULL;

  g_object_get (settings, "settings-schema", &schema, NULL);
  keys = g_settings_schema_list_keys (schema);
  for (guint i = 0; keys[i] != NULL; i++)
    {
      g_autoptr(GVariant) value = g_settings_get_value (settings, keys[i]);
      g_autofree char *text = g_variant_print (value, FALSE);

      if (strstr (text, needle) != NULL)
        return TRUE;
    }

  return FALSE;
}

/* With the core: the key typed on a page goes to the core's keyring; the
 * default is chosen on the page; a profile is removed after a question,
 * with its key. */
static void
test_window_key_default_remove (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GSettings) settings = g_settings_new (BASE_APPLICATION_ID);
  g_autoptr(GSettings) stored = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedProfiles) profiles = NULL;
  g_autoptr(KagedProfile) remote = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedCore) core = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *db_path = g_build_filename (dir, "kaged.db", NULL);
  g_autofree char *id = NULL;
  KagedPreferencesWindow *window;
  KagedProfilePage *page;
  AdwMessageDialog *dialog = NULL;
  GtkEditable *key_row;
  KeyCheck check;

  g_assert_no_error (error);
  reset_settings (settings);

  store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);
  core = kaged_core_new (store, keyring, NULL, NULL, KAGED_CORE_FLAGS_NONE);
  profiles = kaged_profiles_new (settings);
  kaged_core_set_profiles (core, profiles);
  remote = kaged_profile_new ("Remote", KAGED_PROVIDER_KIND_OPENAI, "https://llm.example.org/v1",
                              "gpt-test");
  kaged_profiles_add (profiles, remote);
  id = g_strdup (kaged_profile_get_id (remote));
  check = (KeyCheck) { keyring, id, TRUE };

  window = kaged_preferences_window_new (NULL);
  kaged_preferences_window_set_core (window, core);
  gtk_window_present (GTK_WINDOW (window));
  g_assert_false (kaged_preferences_window_show_profile (window, "missing"));
  g_assert_true (kaged_preferences_window_show_profile (window, id));
  page = shown_page (window);
  g_assert_true (kaged_profile_page_get_profile (page) == remote);

  /* The key: typed, applied, kept in the keyring, gone from the row. */
  key_row = GTK_EDITABLE (page_child (page, "key_row"));
  g_assert_true (ADW_IS_PASSWORD_ENTRY_ROW (key_row));
  gtk_editable_set_text (key_row, TYPED_KEY);
  g_signal_emit_by_name (key_row, "apply");
  g_assert_true (wait_until (key_is, &check));
  {
    char *key = kaged_keyring_lookup (keyring, id, NULL, NULL);

    g_assert_cmpstr (key, ==, TYPED_KEY);
    kaged_keyring_free_key (key);
  }
  g_assert_cmpstr (gtk_editable_get_text (key_row), ==, "");
  g_assert_true (wait_until (status_says, page));
  g_assert_true (gtk_widget_get_visible (page_child (page, "forget_key_button")));

  /* Never in the settings. */
  stored = profile_settings (id);
  g_assert_false (settings_hold (settings, TYPED_KEY));
  g_assert_false (settings_hold (stored, TYPED_KEY));

  /* Make Default: saved, and the button has nothing left to do. */
  g_assert_true (gtk_widget_get_sensitive (page_child (page, "make_default_button")));
  gtk_widget_activate_action (GTK_WIDGET (page), "profile.make-default", NULL);
  g_assert_true (wait_for_string (settings, "default-profile", id));
  g_assert_true (kaged_core_get_profile (core) == remote);
  g_assert_false (gtk_widget_get_sensitive (page_child (page, "make_default_button")));
  g_assert_true (row_is_default (profile_row (window, 1)));

  /* Remove asks first; Cancel keeps everything. */
  gtk_widget_activate_action (GTK_WIDGET (page), "profile.remove", NULL);
  g_assert_true (wait_until (dialog_shown, &dialog));
  adw_message_dialog_response (dialog, "cancel");
  g_assert_nonnull (kaged_profiles_lookup (profiles, id));
  g_assert_true (key_is (&check));

  dialog = NULL;
  gtk_widget_activate_action (GTK_WIDGET (page), "profile.remove", NULL);
  g_assert_true (wait_until (dialog_shown, &dialog));
  adw_message_dialog_response (dialog, "remove");

  /* Gone from the list, the settings and the keyring; the page closed, and
   * the default is the one left. */
  g_assert_null (kaged_profiles_lookup (profiles, id));
  g_assert_null (profile_row (window, 1));
  check.present = FALSE;
  g_assert_true (wait_until (key_is, &check));
  g_assert_true (wait_until (page_gone, window));
  g_assert_cmpstr (kaged_profile_get_id (kaged_core_get_profile (core)), ==, "default");
  g_assert_true (row_is_default (profile_row (window, 0)));

  /* The last profile cannot be removed. */
  g_assert_true (kaged_preferences_window_show_profile (window, "default"));
  page = shown_page (window);
  g_assert_false (gtk_widget_get_sensitive (page_child (page, "remove_button")));
  g_assert_false (gtk_widget_get_sensitive (page_child (page, "make_default_button")));

  gtk_window_destroy (GTK_WINDOW (window));
  kaged_core_shutdown (core);
  g_clear_object (&core);
  g_clear_object (&store);
  kaged_test_remove_tree (dir);
  reset_settings (settings);
}

/* A window given a server on the command line takes its replies from it,
 * not from the default profile: the profiles say so while it does. */
static void
test_window_command_line (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GSettings) settings = g_settings_new (BASE_APPLICATION_ID);
  g_autoptr(KagedProfiles) profiles = NULL;
  g_autoptr(KagedProfile) command_line = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedCore) core = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *db_path = g_build_filename (dir, "kaged.db", NULL);
  KagedPreferencesWindow *window;
  AdwPreferencesGroup *group;
  g_autofree char *usual = NULL;

  g_assert_no_error (error);
  reset_settings (settings);
  store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);
  core = kaged_core_new (store, NULL, NULL, NULL, KAGED_CORE_FLAGS_NONE);
  profiles = kaged_profiles_new (settings);
  kaged_core_set_profiles (core, profiles);

  window = kaged_preferences_window_new (NULL);
  kaged_preferences_window_set_core (window, core);
  group = ADW_PREFERENCES_GROUP (gtk_widget_get_template_child (GTK_WIDGET (window),
                                                                KAGED_TYPE_PREFERENCES_WINDOW,
                                                                "profiles_group"));
  usual = g_strdup (adw_preferences_group_get_description (group));
  g_assert_null (strstr (usual, "command line"));

  command_line = kaged_profile_new ("Command Line", KAGED_PROVIDER_KIND_OPENAI,
                                    "http://127.0.0.1:8080/v1", "local-model");
  kaged_core_set_profile (core, command_line);
  g_assert_nonnull (strstr (adw_preferences_group_get_description (group), "command line"));
  g_assert_nonnull (strstr (adw_preferences_group_get_description (group), "http://127.0.0.1:8080/v1"));
  g_assert_nonnull (strstr (adw_preferences_group_get_description (group), "local-model"));

  /* Only the model given (--model): the default profile's server, with
   * its id, and another model. */
  g_clear_object (&command_line);
  command_line = kaged_profile_copy (kaged_profiles_get_default (profiles));
  g_assert_nonnull (kaged_profile_get_id (command_line));
  kaged_profile_set_model (command_line, "other-model");
  kaged_core_set_profile (core, command_line);
  g_assert_nonnull (strstr (adw_preferences_group_get_description (group), "command line"));
  g_assert_nonnull (strstr (adw_preferences_group_get_description (group), "other-model"));

  kaged_core_set_profile (core, NULL);
  g_assert_cmpstr (adw_preferences_group_get_description (group), ==, usual);

  gtk_window_destroy (GTK_WINDOW (window));
  kaged_core_shutdown (core);
  g_clear_object (&core);
  g_clear_object (&store);
  kaged_test_remove_tree (dir);
  reset_settings (settings);
}

typedef struct
{
  AdwActionRow *row;
  const char   *busy;
} RowDone;

static gboolean
row_done (gpointer data)
{
  RowDone *done = data;

  return g_strcmp0 (adw_action_row_get_subtitle (done->row), done->busy) != 0;
}

static const char *
run_action_and_wait (KagedProfilePage *page,
                     const char       *action,
                     const char       *row_name,
                     const char       *busy)
{
  RowDone done = { ADW_ACTION_ROW (page_child (page, row_name)), busy };

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), action, NULL));
  g_assert_cmpstr (adw_action_row_get_subtitle (done.row), ==, busy);
  g_assert_true (wait_until (row_done, &done));

  return adw_action_row_get_subtitle (done.row);
}

/* The model list and Test Connection on a profile's page, against a fake
 * OpenAI-compatible server on 127.0.0.1 that wants a key. */
static void
test_window_models_and_connection (void)
{
  static const char * const models[] = { "fake-small", "fake-large", NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(GSettings) settings = g_settings_new (BASE_APPLICATION_ID);
  g_autoptr(GSettings) stored = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(KagedProfiles) profiles = NULL;
  g_autoptr(KagedProfile) remote = NULL;
  g_autoptr(KagedCore) core = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *db_path = g_build_filename (dir, "kaged.db", NULL);
  g_autofree char *url = NULL;
  g_autofree char *base = NULL;
  g_autofree char *wrong = NULL;
  g_auto(GStrv) cached = NULL;
  KagedPreferencesWindow *window;
  KagedProfilePage *page;
  GtkMenuButton *models_button;
  GMenuModel *menu;

  g_assert_no_error (error);
  reset_settings (settings);

  server = kaged_fake_server_new ("[{\"kind\": \"openai\", \"text\": \"Hi\"}]", &error);
  g_assert_no_error (error);
  kaged_fake_server_set_models (server, models);
  kaged_fake_server_set_api_key (server, "sk-right");
  kaged_fake_server_listen (server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (server);
  base = g_strconcat (url, "/v1", NULL);

  core = kaged_core_open (db_path, keyring, KAGED_CORE_FLAGS_NONE, &error);
  g_assert_no_error (error);
  profiles = kaged_profiles_new (settings);
  kaged_core_set_profiles (core, profiles);
  remote = kaged_profile_new ("Remote", KAGED_PROVIDER_KIND_OPENAI, base, "typed-model");
  kaged_profiles_add (profiles, remote);
  kaged_keyring_store (keyring, kaged_profile_get_id (remote), "sk-wrong", NULL, &error);
  g_assert_no_error (error);
  stored = profile_settings (kaged_profile_get_id (remote));

  window = kaged_preferences_window_new (NULL);
  kaged_preferences_window_set_core (window, core);
  gtk_window_present (GTK_WINDOW (window));
  g_assert_true (kaged_preferences_window_show_profile (window, kaged_profile_get_id (remote)));
  page = shown_page (window);
  models_button = GTK_MENU_BUTTON (page_child (page, "models_button"));

  /* Nothing listed yet: the name typed is all there is. */
  g_assert_false (gtk_widget_get_sensitive (GTK_WIDGET (models_button)));

  /* A wrong key, in words. */
  g_assert_cmpstr (run_action_and_wait (page, "profile.test-connection", "test_row", "Testing…"),
                   ==, "The provider rejected the API key (HTTP 401)");
  g_assert_false (gtk_widget_get_sensitive (GTK_WIDGET (models_button)));

  /* The right key, typed on the page: connected, and the models offered. */
  {
    KeyCheck check = { keyring, kaged_profile_get_id (remote), TRUE };
    GtkEditable *key_row = GTK_EDITABLE (page_child (page, "key_row"));

    gtk_editable_set_text (key_row, "sk-right");
    g_signal_emit_by_name (key_row, "apply");
    g_assert_true (wait_until (key_is, &check));
    g_assert_true (wait_until (status_says, page));
  }
  g_assert_cmpstr (run_action_and_wait (page, "profile.test-connection", "test_row", "Testing…"),
                   ==, "Connected — 2 models available");
  g_assert_true (gtk_widget_get_sensitive (GTK_WIDGET (models_button)));
  menu = gtk_menu_button_get_menu_model (models_button);
  g_assert_cmpint (g_menu_model_get_n_items (menu), ==, 2);

  /* Picking one from the list sets the profile's model. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "profile.choose-model", "s",
                                             "fake-large"));
  g_assert_true (wait_for_string (stored, "model", "fake-large"));
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (page_child (page, "model_row"))), ==,
                   "fake-large");

  /* Refresh: listed, and kept for the profile. */
  g_assert_cmpstr (run_action_and_wait (page, "profile.refresh-models", "models_row",
                                        "Asking the server…"), ==, "2 models listed");
  cached = kaged_core_dup_cached_models (core, kaged_profile_get_id (remote));
  g_assert_nonnull (cached);
  g_assert_cmpuint (g_strv_length (cached), ==, 2);

  /* A wrong base URL says so; the list cannot be refreshed from it, and a
   * name can still be typed. */
  wrong = g_strconcat (base, "/nope", NULL);
  gtk_editable_set_text (GTK_EDITABLE (page_child (page, "base_url_row")), wrong);
  g_assert_cmpstr (run_action_and_wait (page, "profile.test-connection", "test_row", "Testing…"),
                   ==, "Nothing answers at this address (HTTP 404) — check the base URL");
  g_assert_true (g_str_has_prefix (run_action_and_wait (page, "profile.refresh-models",
                                                        "models_row", "Asking the server…"),
                                   "Could not list the models"));
  gtk_editable_set_text (GTK_EDITABLE (page_child (page, "model_row")), "typed-again");
  g_assert_true (wait_for_string (stored, "model", "typed-again"));

  /* Nothing listens on port 9: the connection is refused. */
  gtk_editable_set_text (GTK_EDITABLE (page_child (page, "base_url_row")),
                         "http://127.0.0.1:9/v1");
  g_assert_false (g_str_has_prefix (run_action_and_wait (page, "profile.test-connection",
                                                         "test_row", "Testing…"),
                                    "Connected"));

  gtk_window_destroy (GTK_WINDOW (window));
  kaged_core_shutdown (core);
  g_clear_object (&core);
  kaged_test_remove_tree (dir);
  reset_settings (settings);
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

  deadline = g_get_monotonic_time () + kaged_test_usec (5 * G_USEC_PER_SEC);
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
  g_test_add_func ("/preferences/window/lists-profiles", test_window_lists_profiles);
  g_test_add_func ("/preferences/window/add-and-edit", test_window_add_and_edit);
  g_test_add_func ("/preferences/window/key-default-remove", test_window_key_default_remove);
  g_test_add_func ("/preferences/window/command-line", test_window_command_line);
  g_test_add_func ("/preferences/window/models-and-connection", test_window_models_and_connection);
  g_test_add_func ("/preferences/window/api-settings", test_window_api_settings);

  return g_test_run ();
}
