/* test-models.c: model lists and Test Connection against kaged-fake-provider
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <signal.h>
#include <string.h>

#include <libsoup/soup.h>

#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-models.h"
#include "kaged-profile.h"
#include "kaged-resolver.h"
#include "kaged-retry-class.h"

#define SECRET_KEY "sk-kaged-models-5e1d7c"
#define WRONG_KEY  "sk-kaged-wrong-0a9b8c"
#define KEY_ENV    "KAGED_MODELS_TEST_KEY"

typedef struct
{
  KagedFakeServer *server;
  SoupSession     *session;
  KagedKeyring    *keyring;
  KagedResolver   *resolver;
  char            *url;
} Fixture;

static const KagedProviderKind kinds[] = {
  KAGED_PROVIDER_KIND_OPENAI,
  KAGED_PROVIDER_KIND_ANTHROPIC,
  KAGED_PROVIDER_KIND_OLLAMA,
};

static const char *model_paths[] = { "/v1/models", "/v1/models", "/api/tags" };

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  user_data)
{
  g_autoptr(GError) error = NULL;
  static const char * const models[] = { "zeta-large", "alpha-small", "mid:7b", NULL };

  fixture->server = kaged_fake_server_new ("[]", &error);
  g_assert_no_error (error);
  kaged_fake_server_set_models (fixture->server, models);
  kaged_fake_server_set_api_key (fixture->server, SECRET_KEY);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  fixture->url = kaged_fake_server_get_url (fixture->server);
  fixture->session = kaged_http_session_new ();
  fixture->keyring = kaged_memory_keyring_new ();
  fixture->resolver = kaged_resolver_new (fixture->session, fixture->keyring);
  g_unsetenv (KEY_ENV);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  user_data)
{
  g_clear_object (&fixture->resolver);
  soup_session_abort (fixture->session);
  g_clear_object (&fixture->session);
  g_clear_object (&fixture->keyring);
  g_clear_object (&fixture->server);
  g_clear_pointer (&fixture->url, g_free);

  while (g_main_context_iteration (NULL, FALSE))
    ;
}

static KagedProfile *
profile_for (const char        *base,
             KagedProviderKind  kind)
{
  g_autofree char *url = NULL;

  KagedProfile *profile;

  if (kind == KAGED_PROVIDER_KIND_OPENAI)
    url = g_strconcat (base, "/v1", NULL);
  else
    url = g_strdup (base);

  profile = kaged_profile_new ("Models test", kind, url, NULL);
  /* Ollama has no keyring entry; behind a proxy its key comes from the
   * environment. */
  if (kind == KAGED_PROVIDER_KIND_OLLAMA)
    kaged_profile_set_api_key_env (profile, KEY_ENV);

  return profile;
}

static void
store_key (Fixture    *fixture,
           const char *key)
{
  g_autoptr(GError) error = NULL;

  kaged_keyring_store (fixture->keyring, "Models test", key, NULL, &error);
  g_assert_no_error (error);
  g_setenv (KEY_ENV, key, TRUE);
}

static void
result_cb (GObject      *object,
           GAsyncResult *result,
           gpointer      user_data)
{
  *(GAsyncResult **)user_data = g_object_ref (result);
}

static GAsyncResult *
wait_result (GAsyncResult **slot)
{
  while (*slot == NULL)
    g_main_context_iteration (NULL, TRUE);
  return *slot;
}

static char **
list_models (Fixture       *fixture,
             KagedProfile  *profile,
             GCancellable  *cancellable,
             GError       **error)
{
  g_autoptr(GAsyncResult) result = NULL;

  kaged_profile_list_models_async (profile, fixture->resolver, cancellable, result_cb, &result);
  wait_result (&result);
  return kaged_profile_list_models_finish (profile, result, error);
}

static KagedConnectionResult *
test_connection (Fixture      *fixture,
                 KagedProfile *profile)
{
  g_autoptr(GAsyncResult) result = NULL;
  g_autoptr(GError) error = NULL;
  KagedConnectionResult *outcome;

  kaged_profile_test_connection_async (profile, fixture->resolver, NULL, result_cb, &result);
  wait_result (&result);
  outcome = kaged_profile_test_connection_finish (profile, result, &error);
  g_assert_no_error (error);
  g_assert_nonnull (outcome);
  return outcome;
}

static void
test_list_success (Fixture       *fixture,
                   gconstpointer  user_data)
{
  store_key (fixture, SECRET_KEY);

  for (guint i = 0; i < G_N_ELEMENTS (kinds); i++)
    {
      g_autoptr(KagedProfile) profile = profile_for (fixture->url, kinds[i]);
      g_autoptr(KagedConnectionResult) outcome = NULL;
      g_autoptr(GError) error = NULL;
      g_auto(GStrv) models = NULL;
      guint index = i * 2;

      models = list_models (fixture, profile, NULL, &error);
      g_assert_no_error (error);
      g_assert_nonnull (models);
      g_assert_cmpuint (g_strv_length (models), ==, 3);
      /* Sorted for people, whatever order the server used. */
      g_assert_cmpstr (models[0], ==, "alpha-small");
      g_assert_cmpstr (models[1], ==, "mid:7b");
      g_assert_cmpstr (models[2], ==, "zeta-large");

      g_assert_cmpstr (kaged_fake_server_get_request_path (fixture->server, index), ==, model_paths[i]);
      if (kinds[i] == KAGED_PROVIDER_KIND_ANTHROPIC)
        {
          g_assert_cmpstr (kaged_fake_server_get_request_header (fixture->server, index, "x-api-key"), ==, SECRET_KEY);
          g_assert_cmpstr (kaged_fake_server_get_request_header (fixture->server, index, "anthropic-version"), ==, "2023-06-01");
        }
      else
        {
          g_assert_cmpstr (kaged_fake_server_get_request_header (fixture->server, index, "Authorization"), ==, "Bearer " SECRET_KEY);
        }

      outcome = test_connection (fixture, profile);
      g_assert_true (kaged_connection_result_get_ok (outcome));
      g_assert_false (kaged_connection_result_needs_preferences (outcome));
      g_assert_cmpuint (g_strv_length ((char **)kaged_connection_result_get_models (outcome)), ==, 3);
    }

  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 6);
}

static void
test_list_unauthorized (Fixture       *fixture,
                        gconstpointer  user_data)
{
  store_key (fixture, WRONG_KEY);

  for (guint i = 0; i < G_N_ELEMENTS (kinds); i++)
    {
      g_autoptr(KagedProfile) profile = profile_for (fixture->url, kinds[i]);
      g_autoptr(KagedConnectionResult) outcome = NULL;
      g_autoptr(GError) error = NULL;
      g_auto(GStrv) models = NULL;

      models = list_models (fixture, profile, NULL, &error);
      g_assert_null (models);
      g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_AUTH_FAILED);
      g_assert_cmpuint (kaged_provider_error_get_http_status (error), ==, 401);
      g_assert_false (kaged_provider_error_get_retryable (error));
      g_assert_null (strstr (error->message, WRONG_KEY));

      outcome = test_connection (fixture, profile);
      g_assert_false (kaged_connection_result_get_ok (outcome));
      g_assert_cmpint (kaged_connection_result_get_retry_class (outcome), ==, KAGED_RETRY_CLASS_AUTH_FAILED);
      g_assert_cmpuint (kaged_connection_result_get_http_status (outcome), ==, 401);
      g_assert_true (kaged_connection_result_needs_preferences (outcome));
      g_assert_null (kaged_connection_result_get_models (outcome));
    }
}

static void
test_list_wrong_url (Fixture       *fixture,
                     gconstpointer  user_data)
{
  g_autofree char *wrong = g_strconcat (fixture->url, "/not-here", NULL);

  store_key (fixture, SECRET_KEY);

  for (guint i = 0; i < G_N_ELEMENTS (kinds); i++)
    {
      g_autoptr(KagedProfile) profile = profile_for (wrong, kinds[i]);
      g_autoptr(KagedConnectionResult) outcome = NULL;
      g_autoptr(GError) error = NULL;
      g_auto(GStrv) models = NULL;

      models = list_models (fixture, profile, NULL, &error);
      g_assert_null (models);
      g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_INVALID_REQUEST);
      g_assert_cmpuint (kaged_provider_error_get_http_status (error), ==, 404);

      outcome = test_connection (fixture, profile);
      g_assert_cmpint (kaged_connection_result_get_retry_class (outcome), ==, KAGED_RETRY_CLASS_INVALID_REQUEST);
      g_assert_true (kaged_connection_result_needs_preferences (outcome));
    }
}

static void
test_list_refused (Fixture       *fixture,
                   gconstpointer  user_data)
{
  g_autoptr(KagedFakeServer) gone = NULL;
  g_autofree char *url = NULL;
  g_autoptr(GError) error = NULL;

  /* A port that was just listened on and is closed again. */
  gone = kaged_fake_server_new ("[]", &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (gone, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (gone);
  g_clear_object (&gone);

  store_key (fixture, SECRET_KEY);

  for (guint i = 0; i < G_N_ELEMENTS (kinds); i++)
    {
      g_autoptr(KagedProfile) profile = profile_for (url, kinds[i]);
      g_autoptr(KagedConnectionResult) outcome = NULL;
      g_auto(GStrv) models = NULL;

      g_clear_error (&error);
      models = list_models (fixture, profile, NULL, &error);
      g_assert_null (models);
      g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_NETWORK);

      outcome = test_connection (fixture, profile);
      g_assert_false (kaged_connection_result_get_ok (outcome));
      g_assert_cmpint (kaged_connection_result_get_retry_class (outcome), ==, KAGED_RETRY_CLASS_NETWORK);
      g_assert_false (kaged_connection_result_needs_preferences (outcome));
    }
}

static gboolean
cancel_cb (gpointer user_data)
{
  g_cancellable_cancel (user_data);
  return G_SOURCE_REMOVE;
}

static void
test_list_cancel (Fixture       *fixture,
                  gconstpointer  user_data)
{
  g_autoptr(KagedProfile) profile = profile_for (fixture->url, KAGED_PROVIDER_KIND_OLLAMA);
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) models = NULL;
  gint64 start;

  /* A server that takes the request and never answers. */
  kaged_fake_server_set_scenario (fixture->server,
                                  "{\"paths\": {\"/api/tags\": [{\"hang\": true}]}}", &error);
  g_assert_no_error (error);

  g_timeout_add (100, cancel_cb, cancellable);
  start = g_get_monotonic_time ();
  models = list_models (fixture, profile, cancellable, &error);
  g_assert_null (models);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (g_get_monotonic_time () - start, <, 5 * G_USEC_PER_SEC);
}

static void
test_list_no_key (Fixture       *fixture,
                  gconstpointer  user_data)
{
  g_autoptr(KagedProfile) profile = kaged_profile_new ("Models test", KAGED_PROVIDER_KIND_ANTHROPIC,
                                                       "https://models.invalid", NULL);
  g_autoptr(KagedConnectionResult) outcome = NULL;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) models = NULL;

  models = list_models (fixture, profile, NULL, &error);
  g_assert_null (models);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED);

  outcome = test_connection (fixture, profile);
  g_assert_true (kaged_connection_result_needs_preferences (outcome));
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 0);
}

/* The program people run: --models and --api-key-env. */
static void
test_program (Fixture       *fixture,
              gconstpointer  user_data)
{
  g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  g_autoptr(GSubprocess) process = NULL;
  g_autoptr(GDataInputStream) output = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *line = NULL;

  g_subprocess_launcher_setenv (launcher, "KAGED_PROGRAM_KEY", SECRET_KEY, TRUE);
  process = g_subprocess_launcher_spawn (launcher, &error, FAKE_PROVIDER, "--port", "0",
                                         "--models", "qwen3:8b,llama3.2:3b",
                                         "--api-key-env", "KAGED_PROGRAM_KEY", NULL);
  g_assert_no_error (error);
  output = g_data_input_stream_new (g_subprocess_get_stdout_pipe (process));
  line = g_data_input_stream_read_line_utf8 (output, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_str_has_prefix (line, "Listening on "));

  for (guint pass = 0; pass < 2; pass++)
    {
      g_autoptr(KagedProfile) profile = profile_for (line + strlen ("Listening on "),
                                                     KAGED_PROVIDER_KIND_OLLAMA);
      g_auto(GStrv) models = NULL;

      g_clear_error (&error);
      if (pass == 1)
        store_key (fixture, SECRET_KEY);
      models = list_models (fixture, profile, NULL, &error);
      if (pass == 0)
        {
          g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_AUTH_FAILED);
          continue;
        }
      g_assert_no_error (error);
      g_assert_cmpuint (g_strv_length (models), ==, 2);
      g_assert_cmpstr (models[0], ==, "llama3.2:3b");
      g_assert_cmpstr (models[1], ==, "qwen3:8b");
    }

  g_subprocess_send_signal (process, SIGTERM);
  g_subprocess_wait (process, NULL, &error);
  g_assert_no_error (error);
}

static void
test_parse (void)
{
  static const char openai[] = "{\"object\":\"list\",\"data\":[{\"id\":\"b\"},{\"id\":\"a\"},{\"id\":\"a\"},{\"x\":1},7]}";
  static const char ollama[] = "{\"models\":[{\"name\":\"llama3:latest\"},{\"model\":\"qwen:1b\"}]}";
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) models = NULL;
  g_auto(GStrv) tags = NULL;
  g_auto(GStrv) none = NULL;

  models = kaged_models_parse (KAGED_PROVIDER_KIND_OPENAI, openai, strlen (openai), &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_strv_length (models), ==, 2);
  g_assert_cmpstr (models[0], ==, "a");
  g_assert_cmpstr (models[1], ==, "b");

  tags = kaged_models_parse (KAGED_PROVIDER_KIND_OLLAMA, ollama, strlen (ollama), &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_strv_length (tags), ==, 2);
  g_assert_cmpstr (tags[0], ==, "llama3:latest");

  none = kaged_models_parse (KAGED_PROVIDER_KIND_OLLAMA, openai, strlen (openai), &error);
  g_assert_null (none);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_clear_error (&error);

  /* An empty answer is no list either. */
  g_assert_null (kaged_models_parse (KAGED_PROVIDER_KIND_OPENAI, NULL, 0, &error));
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_clear_error (&error);

  /* A name keeps its text when an escape in it is not JSON's (json-glib
   * 1.6 would read "\777" as a byte that is not UTF-8). */
  {
    static const char odd[] = "{\"data\":[{\"id\":\"m\\777\"},{\"id\":\"half\\udc00\"}]}";
    g_auto(GStrv) names = kaged_models_parse (KAGED_PROVIDER_KIND_OPENAI, odd, strlen (odd), &error);

    g_assert_no_error (error);
    g_assert_cmpuint (g_strv_length (names), ==, 2);
    g_assert_cmpstr (names[0], ==, "half\xef\xbf\xbd");
    g_assert_cmpstr (names[1], ==, "m\\777");
  }

  /* A list nested deeper than json-glib's recursion can take is refused
   * unparsed, not a crash. */
  {
    g_autoptr(GString) deep = g_string_new ("{\"data\":");
    g_auto(GStrv) names = NULL;

    for (guint i = 0; i < 300000; i++)
      g_string_append_c (deep, '[');
    names = kaged_models_parse (KAGED_PROVIDER_KIND_OPENAI, deep->str, deep->len, &error);
    g_assert_null (names);
    g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  }
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/models/parse", test_parse);
  g_test_add ("/models/list/success", Fixture, NULL, fixture_set_up, test_list_success, fixture_tear_down);
  g_test_add ("/models/list/unauthorized", Fixture, NULL, fixture_set_up, test_list_unauthorized, fixture_tear_down);
  g_test_add ("/models/list/wrong-url", Fixture, NULL, fixture_set_up, test_list_wrong_url, fixture_tear_down);
  g_test_add ("/models/list/refused", Fixture, NULL, fixture_set_up, test_list_refused, fixture_tear_down);
  g_test_add ("/models/list/cancel", Fixture, NULL, fixture_set_up, test_list_cancel, fixture_tear_down);
  g_test_add ("/models/list/no-key", Fixture, NULL, fixture_set_up, test_list_no_key, fixture_tear_down);
  g_test_add ("/models/program", Fixture, NULL, fixture_set_up, test_program, fixture_tear_down);

  return g_test_run ();
}
