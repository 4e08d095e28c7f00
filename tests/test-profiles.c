/* test-profiles.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The saved provider profiles: the fresh install, the move of the single
 * provider of older settings to the profile "default", adding, editing and
 * removing profiles, the default, and the core following the default with
 * each profile's own spend limit.
 */

#include "config.h"

#include <glib/gstdio.h>
#include <sqlite3.h>

#define G_SETTINGS_ENABLE_BACKEND
#include <gio/gsettingsbackend.h>

#include "kaged-core.h"
#include "kaged-core-settings.h"
#include "kaged-fake-server.h"
#include "kaged-profiles.h"
#include "kaged-test-files.h"

#define WAIT_SECONDS 30

static GSettings *
new_settings (GSettingsBackend *backend)
{
  return g_settings_new_with_backend (BASE_APPLICATION_ID, backend);
}

static GSettings *
new_profile_settings (GSettingsBackend *backend,
                      const char       *id)
{
  g_autofree char *path = g_strdup_printf ("/io/github/kaged/Kaged/profiles/%s/", id);

  return g_settings_new_with_backend_and_path (KAGED_PROFILE_SCHEMA_ID, backend, path);
}

static void
count_changes_cb (GListModel *model,
                  guint       position,
                  guint       removed,
                  guint       added,
                  guint      *n_changes)
{
  (*n_changes)++;
}

static void
count_notify_cb (GObject    *object,
                 GParamSpec *pspec,
                 guint      *n_notifies)
{
  (*n_notifies)++;
}

static void
test_fresh_install (void)
{
  g_autoptr(GSettingsBackend) backend = g_memory_settings_backend_new ();
  g_autoptr(GSettings) settings = new_settings (backend);
  g_autoptr(KagedProfiles) profiles = kaged_profiles_new (settings);
  g_autoptr(KagedProfile) first = NULL;
  g_auto(GStrv) ids = NULL;
  KagedProfile *profile;

  g_assert_true (g_list_model_get_item_type (G_LIST_MODEL (profiles)) == KAGED_TYPE_PROFILE);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (profiles)), ==, 1);

  /* A local Ollama, which needs no key. */
  profile = kaged_profiles_get_default (profiles);
  first = g_list_model_get_item (G_LIST_MODEL (profiles), 0);
  g_assert_true (profile == first);
  g_assert_true (kaged_profiles_lookup (profiles, "default") == profile);
  g_assert_cmpstr (kaged_profile_get_id (profile), ==, "default");
  g_assert_cmpstr (kaged_profile_get_name (profile), ==, "Ollama");
  g_assert_cmpint (kaged_profile_get_kind (profile), ==, KAGED_PROVIDER_KIND_OLLAMA);
  g_assert_cmpstr (kaged_profile_get_base_url (profile), ==, "http://127.0.0.1:11434");
  g_assert_cmpstr (kaged_profile_get_model (profile), ==, "llama3.2");
  g_assert_cmpstr (kaged_profile_get_api_key_env (profile), ==, "");
  g_assert_cmpint (kaged_profile_get_spend_limit_period (profile), ==, KAGED_SPEND_PERIOD_NONE);
  g_assert_false (kaged_provider_kind_needs_key (kaged_profile_get_kind (profile),
                                                 kaged_profile_get_base_url (profile)));

  ids = g_settings_get_strv (settings, "profiles");
  g_assert_cmpuint (g_strv_length (ids), ==, 1);
  g_assert_cmpstr (ids[0], ==, "default");
  g_assert_null (kaged_profiles_lookup (profiles, "missing"));
}

/* Settings of an older version, in the keyfile a user would have. */
#define OLD_SETTINGS \
  "[io/github/kaged/Kaged]\n" \
  "provider-kind='anthropic'\n" \
  "provider-base-url='https://proxy.example.org'\n" \
  "provider-model='claude-sonnet-4-5'\n" \
  "provider-api-key-env='MY_ANTHROPIC_KEY'\n" \
  "provider-input-price=3.0\n" \
  "provider-output-price=15.0\n" \
  "spend-limit-period='monthly'\n" \
  "spend-limit=25.5\n" \
  "window-width=1200\n"

static void
check_migrated (KagedProfile *profile)
{
  g_assert_cmpstr (kaged_profile_get_id (profile), ==, "default");
  g_assert_cmpint (kaged_profile_get_kind (profile), ==, KAGED_PROVIDER_KIND_ANTHROPIC);
  g_assert_cmpstr (kaged_profile_get_base_url (profile), ==, "https://proxy.example.org");
  g_assert_cmpstr (kaged_profile_get_api_key_env (profile), ==, "MY_ANTHROPIC_KEY");
  g_assert_cmpfloat (kaged_profile_get_input_price (profile), ==, 3.0);
  g_assert_cmpfloat (kaged_profile_get_output_price (profile), ==, 15.0);
  g_assert_cmpint (kaged_profile_get_spend_limit_period (profile), ==,
                   KAGED_SPEND_PERIOD_MONTHLY);
  g_assert_cmpfloat (kaged_profile_get_spend_limit (profile), ==, 25.5);
}

static void
test_migrate (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *path = g_build_filename (dir, "keyfile", NULL);
  g_autofree char *contents = NULL;
  g_autoptr(GSettingsBackend) backend = NULL;
  g_autoptr(GSettings) settings = NULL;
  g_autoptr(GSettings) stored = NULL;
  g_autoptr(KagedProfiles) profiles = NULL;
  g_autoptr(KagedProfiles) again = NULL;
  g_autofree char *kind = NULL;
  KagedProfile *profile;

  g_assert_no_error (error);
  g_file_set_contents (path, OLD_SETTINGS, -1, &error);
  g_assert_no_error (error);

  backend = g_keyfile_settings_backend_new (path, "/", NULL);
  settings = new_settings (backend);
  profiles = kaged_profiles_new (settings);

  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (profiles)), ==, 1);
  profile = kaged_profiles_get_default (profiles);
  check_migrated (profile);
  g_assert_cmpstr (kaged_profile_get_model (profile), ==, "claude-sonnet-4-5");
  g_assert_cmpstr (kaged_profile_get_name (profile), ==, "Anthropic");

  /* It is saved as a profile of its own... */
  stored = new_profile_settings (backend, "default");
  kind = g_settings_get_string (stored, "kind");
  g_assert_cmpstr (kind, ==, "anthropic");
  g_file_get_contents (path, &contents, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (contents, "[io/github/kaged/Kaged/profiles/default]"));
  /* ...and nothing else was lost. */
  g_assert_cmpint (g_settings_get_int (settings, "window-width"), ==, 1200);

  /* Moved once: an edit made since stays on the next start. */
  kaged_profile_set_model (profile, "claude-haiku-4-5");
  g_clear_object (&profiles);
  again = kaged_profiles_new (settings);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (again)), ==, 1);
  profile = kaged_profiles_get_default (again);
  check_migrated (profile);
  g_assert_cmpstr (kaged_profile_get_model (profile), ==, "claude-haiku-4-5");

  g_clear_object (&again);
  g_clear_object (&stored);
  g_clear_object (&settings);
  g_clear_object (&backend);
  g_unlink (path);
  g_rmdir (dir);
}

static void
test_add_edit_remove (void)
{
  g_autoptr(GSettingsBackend) backend = g_memory_settings_backend_new ();
  g_autoptr(GSettings) settings = new_settings (backend);
  g_autoptr(KagedProfiles) profiles = kaged_profiles_new (settings);
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedProfile) work = NULL;
  g_autoptr(GSettings) stored = NULL;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) ids = NULL;
  g_autofree char *id = NULL;
  g_autofree char *model = NULL;
  g_autofree char *key = NULL;
  guint n_changes = 0;
  guint n_notifies = 0;

  kaged_profiles_set_keyring (profiles, keyring);
  g_signal_connect (profiles, "items-changed", G_CALLBACK (count_changes_cb), &n_changes);

  /* Added: saved under a new random id, at the end. */
  work = kaged_profile_new ("Work", KAGED_PROVIDER_KIND_OPENAI, "https://llm.example.org/v1",
                            "gpt-test");
  kaged_profile_set_spend_limit_period (work, KAGED_SPEND_PERIOD_DAILY);
  kaged_profile_set_spend_limit (work, 4.0);
  g_assert_true (kaged_profiles_add (profiles, work) == work);
  id = g_strdup (kaged_profile_get_id (work));
  g_assert_true (g_uuid_string_is_valid (id));
  g_assert_cmpuint (n_changes, ==, 1);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (profiles)), ==, 2);
  g_assert_true (kaged_profiles_lookup (profiles, id) == work);
  ids = g_settings_get_strv (settings, "profiles");
  g_assert_cmpuint (g_strv_length (ids), ==, 2);
  g_assert_cmpstr (ids[1], ==, id);

  stored = new_profile_settings (backend, id);
  model = g_settings_get_string (stored, "model");
  g_assert_cmpstr (model, ==, "gpt-test");
  g_assert_cmpfloat (g_settings_get_double (stored, "spend-limit"), ==, 4.0);

  /* Edited on the object, saved; edited in the settings, shown. */
  kaged_profile_set_model (work, "gpt-other");
  g_clear_pointer (&model, g_free);
  model = g_settings_get_string (stored, "model");
  g_assert_cmpstr (model, ==, "gpt-other");

  g_signal_connect (work, "notify::base-url", G_CALLBACK (count_notify_cb), &n_notifies);
  g_settings_set_string (stored, "base-url", "https://other.example.org/v1");
  g_assert_cmpuint (n_notifies, ==, 1);
  g_assert_cmpstr (kaged_profile_get_base_url (work), ==, "https://other.example.org/v1");
  g_settings_set_string (stored, "kind", "anthropic");
  g_assert_cmpint (kaged_profile_get_kind (work), ==, KAGED_PROVIDER_KIND_ANTHROPIC);
  kaged_profile_set_spend_limit_period (work, KAGED_SPEND_PERIOD_MONTHLY);
  {
    g_autofree char *period = g_settings_get_string (stored, "spend-limit-period");

    g_assert_cmpstr (period, ==, "monthly");
  }

  /* Removed: out of the list and the settings, and its key out of the
   * keyring. */
  kaged_keyring_store (keyring, id, "sk-work", NULL, &error);
  g_assert_no_error (error);
  kaged_keyring_store (keyring, "default", "sk-default", NULL, &error);
  g_assert_no_error (error);

  kaged_profiles_remove_async (profiles, id, NULL, NULL, NULL);
  g_assert_cmpuint (n_changes, ==, 2);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (profiles)), ==, 1);
  g_assert_null (kaged_profiles_lookup (profiles, id));
  g_clear_pointer (&ids, g_strfreev);
  ids = g_settings_get_strv (settings, "profiles");
  g_assert_cmpuint (g_strv_length (ids), ==, 1);
  g_assert_null (g_settings_get_user_value (stored, "model"));

  while ((key = kaged_keyring_lookup (keyring, id, NULL, &error)) != NULL)
    {
      kaged_keyring_free_key (g_steal_pointer (&key));
      g_main_context_iteration (NULL, TRUE);
    }
  g_assert_no_error (error);
  key = kaged_keyring_lookup (keyring, "default", NULL, &error);
  g_assert_cmpstr (key, ==, "sk-default");

  /* The last one stays. */
  g_assert_false (kaged_profiles_remove (profiles, "default", &error));
  g_assert_error (error, KAGED_PROFILES_ERROR, KAGED_PROFILES_ERROR_LAST_PROFILE);
  g_clear_error (&error);
  g_assert_false (kaged_profiles_remove (profiles, id, &error));
  g_assert_error (error, KAGED_PROFILES_ERROR, KAGED_PROFILES_ERROR_NOT_FOUND);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (profiles)), ==, 1);
}

static void
test_default (void)
{
  g_autoptr(GSettingsBackend) backend = g_memory_settings_backend_new ();
  g_autoptr(GSettings) settings = new_settings (backend);
  g_autoptr(KagedProfiles) profiles = kaged_profiles_new (settings);
  g_autoptr(KagedProfile) local = NULL;
  g_autoptr(KagedProfile) remote = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *saved = NULL;
  guint n_notifies = 0;

  local = kaged_profile_new ("Local", KAGED_PROVIDER_KIND_OPENAI, "http://127.0.0.1:8080/v1", "m");
  remote = kaged_profile_new ("Remote", KAGED_PROVIDER_KIND_ANTHROPIC, NULL, "claude");
  kaged_profiles_add (profiles, local);
  kaged_profiles_add (profiles, remote);
  g_signal_connect (profiles, "notify::default-profile", G_CALLBACK (count_notify_cb),
                    &n_notifies);

  /* Adding does not change the default. */
  g_assert_cmpstr (kaged_profile_get_id (kaged_profiles_get_default (profiles)), ==, "default");

  kaged_profiles_set_default (profiles, kaged_profile_get_id (remote));
  g_assert_true (kaged_profiles_get_default (profiles) == remote);
  g_assert_cmpuint (n_notifies, ==, 1);
  saved = g_settings_get_string (settings, "default-profile");
  g_assert_cmpstr (saved, ==, kaged_profile_get_id (remote));

  /* A change made elsewhere counts too. */
  g_settings_set_string (settings, "default-profile", kaged_profile_get_id (local));
  g_assert_true (kaged_profiles_get_default (profiles) == local);
  g_assert_cmpuint (n_notifies, ==, 2);

  /* When the default goes, the first profile left takes its place. */
  g_assert_true (kaged_profiles_remove (profiles, kaged_profile_get_id (local), &error));
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_profile_get_id (kaged_profiles_get_default (profiles)), ==, "default");
  g_assert_cmpuint (n_notifies, ==, 3);

  /* A default that names no profile means the first one. */
  g_settings_set_string (settings, "default-profile", "gone");
  g_assert_cmpstr (kaged_profile_get_id (kaged_profiles_get_default (profiles)), ==, "default");
}

/* Another instance (or dconf) changing the list shows in this one. */
static void
test_list_follows_settings (void)
{
  g_autoptr(GSettingsBackend) backend = g_memory_settings_backend_new ();
  g_autoptr(GSettings) settings = new_settings (backend);
  g_autoptr(KagedProfiles) profiles = kaged_profiles_new (settings);
  g_autoptr(KagedProfiles) other = kaged_profiles_new (settings);
  g_autoptr(KagedProfile) added = NULL;
  KagedProfile *seen;
  guint n_changes = 0;

  g_signal_connect (profiles, "items-changed", G_CALLBACK (count_changes_cb), &n_changes);

  added = kaged_profile_new ("Elsewhere", KAGED_PROVIDER_KIND_OPENAI, "http://127.0.0.1:1/v1",
                             "far");
  kaged_profiles_add (other, added);

  g_assert_cmpuint (n_changes, ==, 1);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (profiles)), ==, 2);
  seen = kaged_profiles_lookup (profiles, kaged_profile_get_id (added));
  g_assert_nonnull (seen);
  g_assert_true (seen != added);
  g_assert_cmpstr (kaged_profile_get_name (seen), ==, "Elsewhere");
  g_assert_cmpstr (kaged_profile_get_model (seen), ==, "far");

  /* Edits travel too, through the settings. */
  kaged_profile_set_model (added, "near");
  g_assert_cmpstr (kaged_profile_get_model (seen), ==, "near");

  /* Ids no settings path can hold are skipped. */
  {
    const char * const ids[] = { "default", "../bad", "", NULL };

    g_settings_set_strv (settings, "profiles", ids);
  }
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (profiles)), ==, 1);
}

/* The core: runs go through the default profile, each profile with its
 * own prices and spend limit. */

static gboolean
timeout_cb (gpointer user_data)
{
  gboolean *timed_out = user_data;

  *timed_out = TRUE;
  return G_SOURCE_REMOVE;
}

static KagedRun *
post_and_wait (KagedCore  *core,
               gint64      session_id,
               const char *content)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  gboolean timed_out = FALSE;
  guint timeout_id = g_timeout_add_seconds (WAIT_SECONDS, timeout_cb, &timed_out);
  KagedRun *run = NULL;

  receipt = kaged_core_post (core, session_id, content, &error);
  g_assert_no_error (error);

  for (;;)
    {
      g_clear_object (&run);
      run = kaged_session_manager_get_run (kaged_core_get_manager (core), session_id,
                                           receipt->run_id, &error);
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
test_core_spend_per_profile (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *db_path = g_build_filename (dir, "kaged.db", NULL);
  g_autofree char *url = NULL;
  g_autoptr(GSettingsBackend) backend = g_memory_settings_backend_new ();
  g_autoptr(GSettings) settings = new_settings (backend);
  g_autoptr(KagedProfiles) profiles = kaged_profiles_new (settings);
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedCore) core = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedProfile) other = NULL;
  g_autoptr(KagedRun) first = NULL;
  g_autoptr(KagedRun) second = NULL;
  g_autoptr(KagedRun) third = NULL;
  KagedProfile *budget;

  g_assert_no_error (error);
  server = kaged_fake_server_new ("[{\"kind\": \"openai\", \"text\": \"Hi\", "
                                  "\"usage\": {\"input_tokens\": 600, \"output_tokens\": 300}}]",
                                  &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (server);

  /* The default: 1.20 a reply against a daily limit of 1.00. */
  budget = kaged_profiles_get_default (profiles);
  kaged_profile_set_kind (budget, KAGED_PROVIDER_KIND_OPENAI);
  kaged_profile_set_base_url (budget, url);
  kaged_profile_set_input_price (budget, 1000.0);
  kaged_profile_set_output_price (budget, 2000.0);
  kaged_profile_set_spend_limit_period (budget, KAGED_SPEND_PERIOD_DAILY);
  kaged_profile_set_spend_limit (budget, 1.0);

  other = kaged_profile_new ("No Limit", KAGED_PROVIDER_KIND_OPENAI, url, "test");
  kaged_profiles_add (profiles, other);

  store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);
  core = kaged_core_new (store, keyring, NULL, NULL, KAGED_CORE_FLAGS_NONE);
  kaged_core_set_profiles (core, profiles);
  g_assert_true (kaged_core_get_profiles (core) == profiles);
  g_assert_true (kaged_profiles_get_keyring (profiles) == keyring);
  g_assert_true (kaged_core_get_profile (core) == budget);
  kaged_core_start (core);

  session = kaged_core_create_session (core, "Budget", &error);
  g_assert_no_error (error);

  first = post_and_wait (core, kaged_session_get_id (session), "An expensive question");
  g_assert_cmpint (kaged_run_get_status (first), ==, KAGED_RUN_STATUS_SUCCEEDED);
  second = post_and_wait (core, kaged_session_get_id (session), "One more");
  g_assert_cmpint (kaged_run_get_status (second), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_retry_class (second), ==, KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (server, NULL), ==, 1);

  /* Another default, without a limit: replies flow. */
  kaged_profiles_set_default (profiles, kaged_profile_get_id (other));
  g_assert_true (kaged_core_get_profile (core) == other);
  third = post_and_wait (core, kaged_session_get_id (session), "And through the other?");
  g_assert_cmpint (kaged_run_get_status (third), ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (server, NULL), ==, 2);

  /* A profile for this run only wins over the default, until it is taken
   * back. */
  {
    g_autoptr(KagedProfile) transient = kaged_profile_copy (other);

    kaged_core_set_profile (core, transient);
    g_assert_true (kaged_core_get_profile (core) == transient);
    kaged_profiles_set_default (profiles, "default");
    g_assert_true (kaged_core_get_profile (core) == transient);
    kaged_core_set_profile (core, NULL);
    g_assert_true (kaged_core_get_profile (core) == budget);
  }

  kaged_core_shutdown (core);
  g_clear_object (&core);
  g_clear_object (&store);
  kaged_test_remove_tree (dir);
}

/* Each profile's limit counts the replies that went through it only. */
static void
test_spend_counts_own_runs (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *db_path = g_build_filename (dir, "kaged.db", NULL);
  g_autofree char *url = NULL;
  g_autoptr(GSettingsBackend) backend = g_memory_settings_backend_new ();
  g_autoptr(GSettings) settings = new_settings (backend);
  g_autoptr(KagedProfiles) profiles = kaged_profiles_new (settings);
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedCore) core = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedProfile) free_profile = NULL;
  g_autoptr(KagedRun) first = NULL;
  g_autoptr(KagedRun) second = NULL;
  g_autoptr(KagedRun) third = NULL;
  KagedProfile *budget;

  g_assert_no_error (error);
  server = kaged_fake_server_new ("[{\"kind\": \"openai\", \"text\": \"Hi\", "
                                  "\"usage\": {\"input_tokens\": 600, \"output_tokens\": 300}}]",
                                  &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (server);

  /* "default": 1.20 a reply against a daily limit of 1.00. */
  budget = kaged_profiles_get_default (profiles);
  kaged_profile_set_kind (budget, KAGED_PROVIDER_KIND_OPENAI);
  kaged_profile_set_base_url (budget, url);
  kaged_profile_set_input_price (budget, 1000.0);
  kaged_profile_set_output_price (budget, 2000.0);
  kaged_profile_set_spend_limit_period (budget, KAGED_SPEND_PERIOD_DAILY);
  kaged_profile_set_spend_limit (budget, 1.0);

  /* A free server without a limit, the default at first. */
  free_profile = kaged_profile_new ("Free", KAGED_PROVIDER_KIND_OPENAI, url, "test");
  kaged_profiles_add (profiles, free_profile);
  kaged_profiles_set_default (profiles, kaged_profile_get_id (free_profile));

  store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);
  core = kaged_core_new (store, keyring, NULL, NULL, KAGED_CORE_FLAGS_NONE);
  kaged_core_set_profiles (core, profiles);
  kaged_core_start (core);
  session = kaged_core_create_session (core, "Two budgets", &error);
  g_assert_no_error (error);

  first = post_and_wait (core, kaged_session_get_id (session), "Through the free one");
  g_assert_cmpint (kaged_run_get_status (first), ==, KAGED_RUN_STATUS_SUCCEEDED);

  /* The free profile's tokens are not the budget's: it has spent nothing. */
  kaged_profiles_set_default (profiles, "default");
  second = post_and_wait (core, kaged_session_get_id (session), "Through the budget");
  g_assert_cmpint (kaged_run_get_status (second), ==, KAGED_RUN_STATUS_SUCCEEDED);

  /* Now it has: 1.20 of 1.00. */
  third = post_and_wait (core, kaged_session_get_id (session), "Once more");
  g_assert_cmpint (kaged_run_get_status (third), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_retry_class (third), ==, KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (server, NULL), ==, 2);

  {
    gint64 input = 0;
    gint64 output = 0;

    g_assert_true (kaged_store_sum_profile_usage (store, 0, "default", &input, &output, &error));
    g_assert_no_error (error);
    g_assert_cmpint (input, ==, 600);
    g_assert_true (kaged_store_sum_profile_usage (store, 0, kaged_profile_get_id (free_profile),
                                                  &input, &output, &error));
    g_assert_cmpint (input, ==, 600);
    g_assert_cmpint (output, ==, 300);
    g_assert_true (kaged_store_sum_usage (store, 0, &input, &output, &error));
    g_assert_cmpint (input, ==, 1200);
  }

  kaged_core_shutdown (core);
  g_clear_object (&core);
  g_clear_object (&store);

  /* Runs recorded before there were profiles name none: they were the
   * single provider's, which became "default". */
  {
    sqlite3 *db = NULL;
    gint64 input = 0;
    gint64 output = 0;

    g_assert_cmpint (sqlite3_open (db_path, &db), ==, SQLITE_OK);
    g_assert_cmpint (sqlite3_exec (db, "UPDATE runs SET profile_id = NULL "
                                       "WHERE profile_id = 'default'", NULL, NULL, NULL),
                     ==, SQLITE_OK);
    sqlite3_close (db);

    store = kaged_store_open (db_path, &error);
    g_assert_no_error (error);
    g_assert_true (kaged_store_sum_profile_usage (store, 0, "default", &input, &output, &error));
    g_assert_no_error (error);
    g_assert_cmpint (input, ==, 600);
    g_assert_cmpint (output, ==, 300);
    g_clear_object (&store);
  }
  kaged_test_remove_tree (dir);
}

static gboolean
has_cached_models (KagedCore  *core,
                   const char *profile_id)
{
  g_auto(GStrv) models = kaged_core_dup_cached_models (core, profile_id);

  return models != NULL;
}

/* A profile's cached model list goes with the profile: removed here,
 * removed elsewhere, or gone before this start. */
static void
test_remove_drops_model_cache (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *db_path = g_build_filename (dir, "kaged.db", NULL);
  g_autoptr(GSettingsBackend) backend = g_memory_settings_backend_new ();
  g_autoptr(GSettings) settings = new_settings (backend);
  g_autoptr(KagedProfiles) profiles = kaged_profiles_new (settings);
  g_autoptr(KagedProfiles) other = kaged_profiles_new (settings);
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedCore) core = NULL;
  g_autoptr(KagedProfile) work = NULL;
  g_autoptr(KagedProfile) home = NULL;
  const char * const listed[] = { "model-a", "model-b", NULL };
  const char *work_id;
  const char *home_id;

  g_assert_no_error (error);
  work = kaged_profile_new ("Work", KAGED_PROVIDER_KIND_OPENAI, "http://127.0.0.1:1/v1", "a");
  home = kaged_profile_new ("Home", KAGED_PROVIDER_KIND_OPENAI, "http://127.0.0.1:2/v1", "b");
  kaged_profiles_add (profiles, work);
  kaged_profiles_add (profiles, home);
  work_id = kaged_profile_get_id (work);
  home_id = kaged_profile_get_id (home);

  store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);
  /* A list left behind by a profile removed before this start. */
  g_assert_true (kaged_store_set_profile_models (store, "removed-earlier", listed, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_set_profile_models (store, work_id, listed, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_set_profile_models (store, home_id, listed, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_set_profile_models (store, "default", listed, &error));
  g_assert_no_error (error);

  core = kaged_core_new (store, keyring, NULL, NULL, KAGED_CORE_FLAGS_NONE);
  kaged_core_set_profiles (core, profiles);
  g_assert_false (has_cached_models (core, "removed-earlier"));
  g_assert_true (has_cached_models (core, work_id));
  g_assert_true (has_cached_models (core, home_id));
  g_assert_true (has_cached_models (core, "default"));

  /* Removed here: its list goes, the others stay. */
  g_assert_true (kaged_profiles_remove (profiles, work_id, &error));
  g_assert_no_error (error);
  g_assert_false (has_cached_models (core, work_id));
  g_assert_true (has_cached_models (core, home_id));
  g_assert_true (has_cached_models (core, "default"));

  /* Removed by another instance, through the settings. */
  g_assert_true (kaged_profiles_remove (other, home_id, &error));
  g_assert_no_error (error);
  g_assert_null (kaged_profiles_lookup (profiles, home_id));
  g_assert_false (has_cached_models (core, home_id));
  g_assert_true (has_cached_models (core, "default"));

  kaged_core_shutdown (core);
  g_clear_object (&core);
  g_clear_object (&store);
  kaged_test_remove_tree (dir);
}

static void
record_removed_cb (KagedProfiles *profiles,
                   const char    *id,
                   char         **removed)
{
  g_free (*removed);
  *removed = g_strdup (id);
}

/* A profile removed by the id it holds itself, with no other reference to
 * it: those who hear of the removal still get the id (the profile is gone
 * by then, and its id with it). */
static void
test_remove_by_own_id (void)
{
  g_autoptr(GSettingsBackend) backend = g_memory_settings_backend_new ();
  g_autoptr(GSettings) settings = new_settings (backend);
  g_autoptr(KagedProfiles) profiles = kaged_profiles_new (settings);
  g_autoptr(GError) error = NULL;
  g_autofree char *expected = NULL;
  g_autofree char *removed = NULL;
  KagedProfile *work;

  work = kaged_profile_new ("Work", KAGED_PROVIDER_KIND_OPENAI, "http://127.0.0.1:1/v1", "a");
  kaged_profiles_add (profiles, work);
  expected = g_strdup (kaged_profile_get_id (work));
  g_object_unref (work);
  work = kaged_profiles_lookup (profiles, expected);
  g_assert_nonnull (work);

  g_signal_connect (profiles, "profile-removed", G_CALLBACK (record_removed_cb), &removed);
  g_assert_true (kaged_profiles_remove (profiles, kaged_profile_get_id (work), &error));
  g_assert_no_error (error);
  g_assert_cmpstr (removed, ==, expected);
  g_assert_null (kaged_profiles_lookup (profiles, expected));
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/profiles/fresh-install", test_fresh_install);
  g_test_add_func ("/profiles/migrate", test_migrate);
  g_test_add_func ("/profiles/add-edit-remove", test_add_edit_remove);
  g_test_add_func ("/profiles/default", test_default);
  g_test_add_func ("/profiles/list-follows-settings", test_list_follows_settings);
  g_test_add_func ("/profiles/core-spend-per-profile", test_core_spend_per_profile);
  g_test_add_func ("/profiles/spend-counts-own-runs", test_spend_counts_own_runs);
  g_test_add_func ("/profiles/remove-drops-model-cache", test_remove_drops_model_cache);
  g_test_add_func ("/profiles/remove-by-own-id", test_remove_by_own_id);

  return g_test_run ();
}
