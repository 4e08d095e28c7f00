/* test-services.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * What runs behind the window: one KagedCore, tied to the desktop by a
 * KagedDesktop. The model follows the preferences (unless the command line
 * gives a provider for this run), the local HTTP API follows its switch,
 * and the retry actions are there.
 */

#include "config.h"

#include <glib/gstdio.h>
#include <libsoup/soup.h>

#include "kaged-fake-server.h"
#include "kaged-desktop.h"

typedef struct
{
  char            *dir;
  GSettings       *settings;
  GSettings       *profile;   /* the settings of the profile "default" */
  KagedStore      *store;
  GApplication    *application;
  KagedCore       *core;
  KagedDesktop    *desktop;
  KagedFakeServer *server;
  char            *url;
} Fixture;

static void
fixture_start (Fixture            *fixture,
               const KagedOptions *options)
{
  fixture->desktop = kaged_desktop_new (fixture->application, fixture->settings, fixture->core,
                                        options);
  kaged_core_start (fixture->core);
}

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *db_path = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  db_path = g_build_filename (fixture->dir, "kaged.db", NULL);

  fixture->settings = g_settings_new (BASE_APPLICATION_ID);
  fixture->profile = g_settings_new_with_path (BASE_APPLICATION_ID ".Profile",
                                               "/io/github/kaged/Kaged/profiles/default/");
  fixture->store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);

  fixture->server = kaged_fake_server_new ("[{\"kind\": \"openai\", \"text\": \"Hi\", "
                                           "\"usage\": {\"input_tokens\": 600, "
                                           "\"output_tokens\": 300}}]", &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  fixture->url = kaged_fake_server_get_url (fixture->server);

  fixture->application = g_application_new ("io.github.kaged.Kaged.ServicesTest",
                                            G_APPLICATION_NON_UNIQUE);
  fixture->core = kaged_core_new (fixture->store, NULL, NULL, NULL, KAGED_CORE_FLAGS_AUTO_RETRY);
  if (data == NULL)
    fixture_start (fixture, NULL);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GDir) dir = NULL;
  const char *name;

  kaged_core_shutdown (fixture->core);
  g_clear_object (&fixture->desktop);
  g_clear_object (&fixture->core);
  g_clear_object (&fixture->application);
  g_clear_object (&fixture->store);
  g_clear_object (&fixture->server);
  g_settings_reset (fixture->settings, "api-enabled");
  g_settings_reset (fixture->settings, "profiles");
  g_settings_reset (fixture->settings, "default-profile");
  {
    g_autoptr(GSettingsSchema) schema = NULL;
    g_auto(GStrv) keys = NULL;

    g_object_get (fixture->profile, "settings-schema", &schema, NULL);
    keys = g_settings_schema_list_keys (schema);
    for (guint i = 0; keys[i] != NULL; i++)
      g_settings_reset (fixture->profile, keys[i]);
  }
  g_clear_object (&fixture->profile);
  g_clear_object (&fixture->settings);
  g_clear_pointer (&fixture->url, g_free);

  dir = g_dir_open (fixture->dir, 0, NULL);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (fixture->dir, name, NULL);
      g_unlink (path);
    }
  g_rmdir (fixture->dir);
  g_clear_pointer (&fixture->dir, g_free);
}

static void
read_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  GBytes **body = user_data;

  *body = soup_session_send_and_read_finish (SOUP_SESSION (object), result, NULL);
  if (*body == NULL)
    *body = g_bytes_new (NULL, 0);
}

/* The server answers on this thread's main context: ask without blocking it.
 * Returns the HTTP status, or 0 when nothing answered. */
static guint
get_status (const char *url,
            const char *token)
{
  g_autoptr(SoupSession) session = soup_session_new ();
  g_autoptr(SoupMessage) message = soup_message_new ("GET", url);
  g_autoptr(GBytes) body = NULL;

  if (token != NULL)
    {
      g_autofree char *bearer = g_strconcat ("Bearer ", token, NULL);

      soup_message_headers_replace (soup_message_get_request_headers (message),
                                    "Authorization", bearer);
    }

  soup_session_send_and_read_async (session, message, G_PRIORITY_DEFAULT, NULL, read_cb, &body);
  while (body == NULL)
    g_main_context_iteration (NULL, TRUE);

  return soup_message_get_status (message);
}

static GAction *
lookup (Fixture    *fixture,
        const char *name)
{
  return g_action_map_lookup_action (G_ACTION_MAP (fixture->application), name);
}

static void
test_actions (Fixture       *fixture,
              gconstpointer  data)
{
  g_assert_nonnull (lookup (fixture, "retry-now"));
  g_assert_nonnull (lookup (fixture, "cancel-retry"));
  g_assert_nonnull (lookup (fixture, "show-session"));
  g_assert_true (g_variant_type_equal (g_action_get_parameter_type (lookup (fixture, "retry-now")),
                                       G_VARIANT_TYPE_INT64));

  /* A session without a pending retry: the actions do nothing, quietly. */
  g_action_activate (lookup (fixture, "cancel-retry"), g_variant_new_int64 (42));
  g_action_activate (lookup (fixture, "retry-now"), g_variant_new_int64 (42));

  kaged_desktop_shutdown (fixture->desktop);
  g_assert_null (lookup (fixture, "retry-now"));
}

static void
test_api_follows_preference (Fixture       *fixture,
                             gconstpointer  data)
{
  g_autofree char *token = NULL;
  g_autofree char *token_path = g_build_filename (g_get_user_config_dir (), "kaged", "api-token",
                                                  NULL);
  g_autofree char *sessions_url = NULL;
  g_autofree char *url = NULL;

  g_assert_null (kaged_core_get_api_url (fixture->core));

  g_settings_set_boolean (fixture->settings, "api-enabled", TRUE);
  g_assert_null (kaged_core_get_api_error (fixture->core));
  g_assert_nonnull (kaged_core_get_api_url (fixture->core));
  g_assert_true (g_str_has_prefix (kaged_core_get_api_url (fixture->core),
                                   "http://127.0.0.1:"));
  url = g_strdup (kaged_core_get_api_url (fixture->core));

  g_assert_true (g_file_get_contents (token_path, &token, NULL, NULL));
  g_strstrip (token);
  sessions_url = g_strconcat (url, "/api/v1/sessions", NULL);
  g_assert_cmpuint (get_status (sessions_url, token), ==, 200);
  g_assert_cmpuint (get_status (sessions_url, NULL), ==, 401);

  /* Switched off, nothing answers any more. */
  g_settings_set_boolean (fixture->settings, "api-enabled", FALSE);
  g_assert_null (kaged_core_get_api_url (fixture->core));
  g_assert_cmpuint (get_status (sessions_url, token), ==, 0);
}

static gboolean
timeout_cb (gpointer user_data)
{
  gboolean *timed_out = user_data;

  *timed_out = TRUE;
  return G_SOURCE_REMOVE;
}

/* Waits for the run to end (each turn of the loop is an event: a reply's
 * progress, or its end). */
static KagedRun *
wait_for_run (KagedSessionManager *manager,
              gint64               session_id,
              gint64               run_id)
{
  g_autoptr(GError) error = NULL;
  gboolean timed_out = FALSE;
  guint timeout_id = g_timeout_add_seconds (60, timeout_cb, &timed_out);
  KagedRun *run = NULL;

  for (;;)
    {
      g_clear_object (&run);
      run = kaged_session_manager_get_run (manager, session_id, run_id, &error);
      g_assert_no_error (error);
      if (kaged_run_is_finished (run) || timed_out)
        break;
      g_main_context_iteration (NULL, TRUE);
    }

  g_assert_false (timed_out);
  g_source_remove (timeout_id);

  return run;
}

static KagedRun *
post_and_wait (KagedSessionManager *manager,
               gint64               session_id,
               const char          *content)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;

  receipt = kaged_session_manager_post (manager, session_id, content, &error);
  g_assert_no_error (error);

  return wait_for_run (manager, session_id, receipt->run_id);
}

static void
test_spend_limit_follows_preferences (Fixture       *fixture,
                                      gconstpointer  data)
{
  KagedSessionManager *manager = kaged_core_get_manager (fixture->core);
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedRun) first = NULL;
  g_autoptr(KagedRun) second = NULL;
  g_autoptr(GError) error = NULL;

  g_settings_set_string (fixture->profile, "kind", "openai");
  g_settings_set_string (fixture->profile, "base-url", fixture->url);
  g_settings_set_double (fixture->profile, "input-price", 1000.0);
  g_settings_set_double (fixture->profile, "output-price", 2000.0);
  g_settings_set_string (fixture->profile, "spend-limit-period", "daily");
  g_settings_set_double (fixture->profile, "spend-limit", 1.0);

  session = kaged_session_manager_create_session (manager, "Budget", &error);
  g_assert_no_error (error);

  /* 600 × 1000 + 300 × 2000 per million tokens: 1.20, over today's 1.00. */
  first = post_and_wait (manager, kaged_session_get_id (session), "An expensive question");
  g_assert_cmpint (kaged_run_get_status (first), ==, KAGED_RUN_STATUS_SUCCEEDED);

  second = post_and_wait (manager, kaged_session_get_id (session), "One more");
  g_assert_cmpint (kaged_run_get_status (second), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_retry_class (second), ==, KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);

  /* Raised in the preferences, replies flow again. */
  g_settings_set_double (fixture->profile, "spend-limit", 5.0);
  g_clear_object (&second);
  second = post_and_wait (manager, kaged_session_get_id (session), "And now?");
  g_assert_cmpint (kaged_run_get_status (second), ==, KAGED_RUN_STATUS_SUCCEEDED);
}

static void
test_model_follows_preferences (Fixture       *fixture,
                                gconstpointer  data)
{
  KagedSessionManager *manager = kaged_core_get_manager (fixture->core);
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedRun) run = NULL;

  g_settings_set_string (fixture->profile, "kind", "openai");
  g_settings_set_string (fixture->profile, "base-url", fixture->url);
  g_settings_set_string (fixture->profile, "model", "test-model");

  session = kaged_session_manager_create_session (manager, "Preferences", &error);
  g_assert_no_error (error);
  receipt = kaged_session_manager_post (manager, kaged_session_get_id (session), "Hello", &error);
  g_assert_no_error (error);

  run = wait_for_run (manager, kaged_session_get_id (session), receipt->run_id);

  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, "/chat/completions"), ==, 1);
}

/* `kaged --provider-kind --provider-url --model`: a provider for this run,
 * laid over the preferences and never saved to them. */
static void
test_provider_for_this_run (Fixture       *fixture,
                            gconstpointer  data)
{
  g_auto(KagedOptions) options = { .api_port = -1 };
  KagedSessionManager *manager = kaged_core_get_manager (fixture->core);
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedRun) first = NULL;
  g_autoptr(KagedRun) second = NULL;
  g_autoptr(GError) error = NULL;

  options.provider_kind = g_strdup ("openai");
  options.provider_url = g_strdup (fixture->url);
  options.model = g_strdup ("for-this-run");
  fixture_start (fixture, &options);

  g_assert_cmpstr (kaged_profile_get_base_url (kaged_core_get_profile (fixture->core)), ==,
                   fixture->url);
  g_assert_cmpstr (kaged_profile_get_model (kaged_core_get_profile (fixture->core)), ==,
                   "for-this-run");

  session = kaged_session_manager_create_session (manager, "This run", &error);
  g_assert_no_error (error);
  first = post_and_wait (manager, kaged_session_get_id (session), "Hello");
  g_assert_cmpint (kaged_run_get_status (first), ==, KAGED_RUN_STATUS_SUCCEEDED);

  /* Nothing of it reached the preferences. */
  {
    g_autofree char *kind = g_settings_get_string (fixture->profile, "kind");
    g_autofree char *base_url = g_settings_get_string (fixture->profile, "base-url");
    g_autofree char *model = g_settings_get_string (fixture->profile, "model");

    g_assert_cmpstr (kind, ==, "ollama");
    g_assert_cmpstr (base_url, ==, "http://127.0.0.1:11434");
    g_assert_cmpstr (model, ==, "llama3.2");
  }

  /* A change in the preferences does not take it away for this run. */
  g_settings_set_string (fixture->profile, "base-url", "http://127.0.0.1:9/v1");
  g_assert_cmpstr (kaged_profile_get_base_url (kaged_core_get_profile (fixture->core)), ==,
                   fixture->url);
  second = post_and_wait (manager, kaged_session_get_id (session), "Again");
  g_assert_cmpint (kaged_run_get_status (second), ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, "/chat/completions"), ==, 2);
}

/* A provider given on the command line is laid over the default profile
 * and keeps its key only while it still talks to the same server. */
static void
test_command_line_profile (void)
{
  g_autoptr(KagedProfile) base = NULL;
  g_autoptr(KagedProfile) same_server = NULL;
  g_autoptr(KagedProfile) other_server = NULL;
  g_autoptr(KagedProfile) other_kind = NULL;
  g_autoptr(GError) error = NULL;
  g_auto(KagedOptions) model_only = { .api_port = -1 };
  g_auto(KagedOptions) url = { .api_port = -1 };
  g_auto(KagedOptions) kind = { .api_port = -1 };

  base = kaged_profile_new ("Work", KAGED_PROVIDER_KIND_OPENAI, "https://llm.example.org/v1",
                            "gpt-test");
  kaged_profile_set_id (base, "work-id");
  kaged_profile_set_spend_limit_period (base, KAGED_SPEND_PERIOD_DAILY);
  kaged_profile_set_spend_limit (base, 3.0);

  model_only.model = g_strdup ("gpt-other");
  same_server = kaged_options_build_profile (&model_only, base, &error);
  g_assert_no_error (error);
  g_assert_true (same_server != base);
  g_assert_cmpstr (kaged_profile_get_model (same_server), ==, "gpt-other");
  g_assert_cmpstr (kaged_profile_get_key_id (same_server), ==, "work-id");
  g_assert_cmpfloat (kaged_profile_get_spend_limit (same_server), ==, 3.0);
  /* The default profile itself is untouched. */
  g_assert_cmpstr (kaged_profile_get_model (base), ==, "gpt-test");

  url.provider_url = g_strdup ("http://127.0.0.1:8080/v1");
  other_server = kaged_options_build_profile (&url, base, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_profile_get_base_url (other_server), ==, "http://127.0.0.1:8080/v1");
  g_assert_null (kaged_profile_get_id (other_server));
  g_assert_cmpstr (kaged_profile_get_key_id (other_server), !=, "work-id");

  kind.provider_kind = g_strdup ("anthropic");
  other_kind = kaged_options_build_profile (&kind, base, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_profile_get_kind (other_kind), ==, KAGED_PROVIDER_KIND_ANTHROPIC);
  g_assert_cmpstr (kaged_profile_get_base_url (other_kind), ==, "https://api.anthropic.com");
  g_assert_cmpstr (kaged_profile_get_key_id (other_kind), !=, "work-id");
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *config = g_dir_make_tmp (NULL, NULL);
  int ret;

  /* Before anything reads it: the API token goes to a folder of the test's. */
  g_setenv ("XDG_CONFIG_HOME", config, TRUE);
  g_test_init (&argc, &argv, NULL);

  g_test_add ("/services/actions", Fixture, NULL,
              fixture_set_up, test_actions, fixture_tear_down);
  g_test_add ("/services/api-follows-preference", Fixture, NULL,
              fixture_set_up, test_api_follows_preference, fixture_tear_down);
  g_test_add ("/services/model-follows-preferences", Fixture, NULL,
              fixture_set_up, test_model_follows_preferences, fixture_tear_down);
  g_test_add ("/services/spend-limit-follows-preferences", Fixture, NULL,
              fixture_set_up, test_spend_limit_follows_preferences, fixture_tear_down);
  g_test_add_func ("/services/command-line-profile", test_command_line_profile);
  g_test_add ("/services/provider-for-this-run", Fixture, "options",
              fixture_set_up, test_provider_for_this_run, fixture_tear_down);

  ret = g_test_run ();

  {
    g_autofree char *token = g_build_filename (config, "kaged", "api-token", NULL);
    g_autofree char *folder = g_build_filename (config, "kaged", NULL);

    g_unlink (token);
    g_rmdir (folder);
    g_rmdir (config);
  }

  return ret;
}
