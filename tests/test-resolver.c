/* test-resolver.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include <libsoup/soup.h>

#include "kaged-anthropic-provider.h"
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-message.h"
#include "kaged-ollama-provider.h"
#include "kaged-openai-provider.h"
#include "kaged-profile.h"
#include "kaged-resolver.h"
#include "kaged-retry.h"

#define SECRET_KEY "sk-kaged-test-7f3a9c1e5b"
#define ENV_KEY    "sk-kaged-env-42d8e6a0c9"
#define ENV_NAME   "KAGED_TEST_API_KEY"

/* Everything logged while the tests run, debug messages included. */
static GString *log_text;
static GMutex log_mutex;

static GLogWriterOutput
capture_writer (GLogLevelFlags   log_level,
                const GLogField *fields,
                gsize            n_fields,
                gpointer         user_data)
{
  g_autofree char *line = g_log_writer_format_fields (log_level, fields, n_fields, FALSE);

  g_mutex_lock (&log_mutex);
  g_string_append (log_text, line);
  g_string_append_c (log_text, '\n');
  g_mutex_unlock (&log_mutex);

  /* Debug chatter is only captured; anything louder is also shown. */
  if (log_level & (G_LOG_LEVEL_DEBUG | G_LOG_LEVEL_INFO))
    return G_LOG_WRITER_HANDLED;

  return g_log_writer_default (log_level, fields, n_fields, user_data);
}

static gboolean
log_contains (const char *needle)
{
  gboolean found;

  g_mutex_lock (&log_mutex);
  found = strstr (log_text->str, needle) != NULL;
  g_mutex_unlock (&log_mutex);

  return found;
}

typedef struct
{
  KagedFakeServer *server;
  SoupSession     *session;
  KagedKeyring    *keyring;
  KagedClock      *clock;
  KagedResolver   *resolver;
  char            *url;
} Fixture;

static const char ok_scenario[] =
  "{\"paths\": {"
  "  \"/v1/chat/completions\": [{\"kind\": \"openai\", \"text\": \"Hello there\"}],"
  "  \"/v1/messages\": [{\"kind\": \"anthropic\", \"text\": \"Hello there\"}],"
  "  \"/api/chat\": [{\"kind\": \"ollama\", \"text\": \"Hello there\"}]"
  "}}";

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  user_data)
{
  g_autoptr(GError) error = NULL;

  fixture->server = kaged_fake_server_new (user_data != NULL ? user_data : ok_scenario, &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  fixture->url = kaged_fake_server_get_url (fixture->server);
  fixture->session = kaged_http_session_new ();
  fixture->keyring = kaged_memory_keyring_new ();
  fixture->clock = kaged_fake_clock_new (G_GINT64_CONSTANT (1767225600000));
  fixture->resolver = kaged_resolver_new_full (fixture->session, fixture->keyring, fixture->clock, NULL);

  g_unsetenv (ENV_NAME);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  user_data)
{
  g_clear_object (&fixture->resolver);
  soup_session_abort (fixture->session);
  g_clear_object (&fixture->session);
  g_clear_object (&fixture->keyring);
  g_clear_object (&fixture->clock);
  g_clear_object (&fixture->server);
  g_clear_pointer (&fixture->url, g_free);

  while (g_main_context_iteration (NULL, FALSE))
    ;
}

static char *
url_for (Fixture           *fixture,
         KagedProviderKind  kind)
{
  if (kind == KAGED_PROVIDER_KIND_OPENAI)
    return g_strconcat (fixture->url, "/v1", NULL);
  return g_strdup (fixture->url);
}

static KagedProfile *
profile_for (Fixture           *fixture,
             const char        *name,
             KagedProviderKind  kind)
{
  g_autofree char *url = url_for (fixture, kind);

  return kaged_profile_new (name, kind, url, "test-model");
}

typedef struct
{
  gboolean  done;
  gboolean  ok;
  GError   *error;
  GString  *text;
  KagedProvider *provider;
} Outcome;

static void
chat_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  Outcome *outcome = user_data;

  outcome->ok = kaged_provider_chat_finish (KAGED_PROVIDER (object), result, &outcome->error);
  outcome->done = TRUE;
}

static void
on_delta (KagedChat      *chat,
          KagedDeltaKind  kind,
          const char     *text,
          Outcome        *outcome)
{
  g_string_append (outcome->text, text);
}

/* Runs one chat through @provider; fails the test on error unless
 * @error is given. */
static char *
run_chat (Fixture        *fixture,
          KagedProvider  *provider,
          GError        **error)
{
  g_autoptr(GPtrArray) messages = g_ptr_array_new_with_free_func (g_object_unref);
  g_autoptr(KagedChat) chat = NULL;
  KagedMessage *message = kaged_message_new ();
  Outcome outcome = { FALSE, FALSE, NULL, g_string_new (NULL), NULL };

  kaged_message_set_role (message, KAGED_MESSAGE_ROLE_OPERATOR);
  kaged_message_set_content (message, "Hello?");
  g_ptr_array_add (messages, message);
  chat = kaged_chat_new (messages, NULL);
  g_signal_connect (chat, "delta", G_CALLBACK (on_delta), &outcome);

  kaged_provider_chat_async (provider, chat, NULL, chat_cb, &outcome);
  while (!outcome.done)
    {
      KagedFakeClock *clock = KAGED_FAKE_CLOCK (fixture->clock);

      if (g_main_context_iteration (NULL, FALSE))
        continue;
      if (kaged_fake_clock_get_n_pending (clock) > 0)
        kaged_fake_clock_advance (clock, kaged_fake_clock_next_deadline (clock));
      else
        g_main_context_iteration (NULL, TRUE);
    }

  if (error == NULL)
    {
      g_assert_no_error (outcome.error);
      g_assert_true (outcome.ok);
    }
  else if (outcome.error != NULL)
    {
      g_propagate_error (error, outcome.error);
    }

  return g_string_free (outcome.text, FALSE);
}

static void
assert_wrapped (KagedProvider *provider,
                GType          inner_type)
{
  KagedProvider *inner;

  g_assert_nonnull (provider);
  g_assert_true (G_OBJECT_TYPE (provider) == KAGED_TYPE_RETRY_PROVIDER);
  inner = kaged_retry_provider_get_inner (KAGED_RETRY_PROVIDER (provider));
  g_assert_true (G_OBJECT_TYPE (inner) == inner_type);
}

static void
test_kinds (Fixture       *fixture,
            gconstpointer  user_data)
{
  static const struct {
    KagedProviderKind kind;
    const char *path;
  } kinds[] = {
    { KAGED_PROVIDER_KIND_OLLAMA, "/api/chat" },
    { KAGED_PROVIDER_KIND_OPENAI, "/v1/chat/completions" },
    { KAGED_PROVIDER_KIND_ANTHROPIC, "/v1/messages" },
  };
  GType types[G_N_ELEMENTS (kinds)] = {
    KAGED_TYPE_OLLAMA_PROVIDER, KAGED_TYPE_OPENAI_PROVIDER, KAGED_TYPE_ANTHROPIC_PROVIDER,
  };

  kaged_keyring_store (fixture->keyring, "work", SECRET_KEY, NULL, NULL);

  for (guint i = 0; i < G_N_ELEMENTS (kinds); i++)
    {
      g_autoptr(KagedProfile) profile = profile_for (fixture, "work", kinds[i].kind);
      g_autoptr(KagedProvider) provider = NULL;
      g_autoptr(GError) error = NULL;
      g_autofree char *text = NULL;

      provider = kaged_resolver_resolve (fixture->resolver, profile, NULL, &error);
      g_assert_no_error (error);
      assert_wrapped (provider, types[i]);

      text = run_chat (fixture, provider, NULL);
      g_assert_cmpstr (text, ==, "Hello there");
      g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, kinds[i].path), ==, 1);
    }

  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 3);
}

static void
test_credentials_unresolved (Fixture       *fixture,
                             gconstpointer  user_data)
{
  static const char *remote_openai = "https://api.openai.example/v1";
  g_autoptr(KagedProfile) anthropic = profile_for (fixture, "claude", KAGED_PROVIDER_KIND_ANTHROPIC);
  g_autoptr(KagedProfile) openai = kaged_profile_new ("remote", KAGED_PROVIDER_KIND_OPENAI,
                                                      remote_openai, "gpt-test");
  g_autoptr(KagedProvider) provider = NULL;
  g_autoptr(GError) error = NULL;

  /* The profile names an environment variable that is not set, and the
   * keyring has nothing: no request may leave. */
  kaged_profile_set_api_key_env (anthropic, ENV_NAME);
  provider = kaged_resolver_resolve (fixture->resolver, anthropic, NULL, &error);
  g_assert_null (provider);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED);
  g_assert_false (kaged_provider_error_get_retryable (error));
  g_assert_nonnull (strstr (error->message, ENV_NAME));
  g_clear_error (&error);

  provider = kaged_resolver_resolve (fixture->resolver, openai, NULL, &error);
  g_assert_null (provider);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED);
  g_clear_error (&error);

  g_assert_cmpuint (kaged_memory_keyring_get_n_lookups (KAGED_MEMORY_KEYRING (fixture->keyring)), ==, 2);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 0);
}

static void
resolve_cb (GObject      *object,
            GAsyncResult *result,
            gpointer      user_data)
{
  Outcome *outcome = user_data;

  outcome->provider = kaged_resolver_resolve_finish (KAGED_RESOLVER (object), result, &outcome->error);
  outcome->done = TRUE;
}

static KagedProvider *
resolve_async (Fixture       *fixture,
               KagedProfile  *profile,
               GError       **error)
{
  Outcome outcome = { 0 };

  kaged_resolver_resolve_async (fixture->resolver, profile, NULL, resolve_cb, &outcome);
  while (!outcome.done)
    g_main_context_iteration (NULL, TRUE);

  if (outcome.error != NULL)
    g_propagate_error (error, outcome.error);

  return outcome.provider;
}

static void
test_resolve_async (Fixture       *fixture,
                    gconstpointer  user_data)
{
  g_autoptr(KagedProfile) anthropic = profile_for (fixture, "claude", KAGED_PROVIDER_KIND_ANTHROPIC);
  g_autoptr(KagedProvider) provider = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;

  provider = resolve_async (fixture, anthropic, &error);
  g_assert_null (provider);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED);
  g_clear_error (&error);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 0);

  kaged_keyring_store (fixture->keyring, "claude", SECRET_KEY, NULL, NULL);
  provider = resolve_async (fixture, anthropic, &error);
  g_assert_no_error (error);
  assert_wrapped (provider, KAGED_TYPE_ANTHROPIC_PROVIDER);

  text = run_chat (fixture, provider, NULL);
  g_assert_cmpstr (text, ==, "Hello there");
  g_assert_cmpstr (kaged_fake_server_get_request_header (fixture->server, 0, "x-api-key"), ==, SECRET_KEY);
}

static void
test_keyring_key (Fixture       *fixture,
                  gconstpointer  user_data)
{
  g_autoptr(KagedProfile) profile = profile_for (fixture, "local-vllm", KAGED_PROVIDER_KIND_OPENAI);
  g_autoptr(KagedProvider) provider = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;
  g_autofree char *bearer = g_strconcat ("Bearer ", SECRET_KEY, NULL);

  kaged_keyring_store (fixture->keyring, "local-vllm", SECRET_KEY, NULL, NULL);
  kaged_keyring_store (fixture->keyring, "other", "sk-not-this-one", NULL, NULL);

  provider = kaged_resolver_resolve (fixture->resolver, profile, NULL, &error);
  g_assert_no_error (error);
  text = run_chat (fixture, provider, NULL);
  g_assert_cmpstr (text, ==, "Hello there");
  g_assert_cmpstr (kaged_fake_server_get_request_header (fixture->server, 0, "Authorization"), ==, bearer);
}

static void
test_env_key (Fixture       *fixture,
              gconstpointer  user_data)
{
  g_autoptr(KagedProfile) profile = profile_for (fixture, "claude", KAGED_PROVIDER_KIND_ANTHROPIC);
  g_autoptr(KagedProvider) provider = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;

  /* The environment wins over the keyring, which is then not asked. */
  kaged_keyring_store (fixture->keyring, "claude", SECRET_KEY, NULL, NULL);
  kaged_profile_set_api_key_env (profile, ENV_NAME);
  g_setenv (ENV_NAME, ENV_KEY, TRUE);

  provider = kaged_resolver_resolve (fixture->resolver, profile, NULL, &error);
  g_unsetenv (ENV_NAME);
  g_assert_no_error (error);
  assert_wrapped (provider, KAGED_TYPE_ANTHROPIC_PROVIDER);
  g_assert_cmpuint (kaged_memory_keyring_get_n_lookups (KAGED_MEMORY_KEYRING (fixture->keyring)), ==, 0);

  text = run_chat (fixture, provider, NULL);
  g_assert_cmpstr (text, ==, "Hello there");
  g_assert_cmpstr (kaged_fake_server_get_request_header (fixture->server, 0, "x-api-key"), ==, ENV_KEY);

  /* An empty variable counts as unset: the keyring is asked. */
  g_setenv (ENV_NAME, "", TRUE);
  g_clear_object (&provider);
  provider = kaged_resolver_resolve (fixture->resolver, profile, NULL, &error);
  g_unsetenv (ENV_NAME);
  g_assert_no_error (error);
  g_assert_cmpuint (kaged_memory_keyring_get_n_lookups (KAGED_MEMORY_KEYRING (fixture->keyring)), ==, 1);
}

static void
test_no_key_needed (Fixture       *fixture,
                    gconstpointer  user_data)
{
  g_autoptr(KagedProfile) ollama = profile_for (fixture, "ollama", KAGED_PROVIDER_KIND_OLLAMA);
  g_autoptr(KagedProfile) openai = profile_for (fixture, "llama.cpp", KAGED_PROVIDER_KIND_OPENAI);
  g_autoptr(KagedProvider) provider = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;

  /* Ollama: the keyring is not even asked. */
  provider = kaged_resolver_resolve (fixture->resolver, ollama, NULL, &error);
  g_assert_no_error (error);
  assert_wrapped (provider, KAGED_TYPE_OLLAMA_PROVIDER);
  g_assert_cmpuint (kaged_memory_keyring_get_n_lookups (KAGED_MEMORY_KEYRING (fixture->keyring)), ==, 0);
  text = run_chat (fixture, provider, NULL);
  g_assert_cmpstr (text, ==, "Hello there");
  g_clear_pointer (&text, g_free);
  g_clear_object (&provider);

  /* An OpenAI-compatible server on this machine works without a key, and
   * gets no Authorization header. */
  provider = kaged_resolver_resolve (fixture->resolver, openai, NULL, &error);
  g_assert_no_error (error);
  assert_wrapped (provider, KAGED_TYPE_OPENAI_PROVIDER);
  g_assert_cmpuint (kaged_memory_keyring_get_n_lookups (KAGED_MEMORY_KEYRING (fixture->keyring)), ==, 1);
  text = run_chat (fixture, provider, NULL);
  g_assert_cmpstr (text, ==, "Hello there");
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 2);
  g_assert_null (kaged_fake_server_get_request_header (fixture->server, 1, "Authorization"));
}

static void
test_bad_profiles (Fixture       *fixture,
                   gconstpointer  user_data)
{
  g_autoptr(KagedProfile) profile = profile_for (fixture, "bad", KAGED_PROVIDER_KIND_OLLAMA);
  g_autoptr(KagedProvider) provider = NULL;
  g_autoptr(GError) error = NULL;

  kaged_profile_set_model (profile, NULL);
  provider = kaged_resolver_resolve (fixture->resolver, profile, NULL, &error);
  g_assert_null (provider);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_INVALID_REQUEST);
  g_clear_error (&error);

  kaged_profile_set_model (profile, "llama3.2");
  kaged_profile_set_base_url (profile, "ftp://127.0.0.1/");
  provider = kaged_resolver_resolve (fixture->resolver, profile, NULL, &error);
  g_assert_null (provider);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_INVALID_REQUEST);
  g_clear_error (&error);

  kaged_profile_set_base_url (profile, "not a url");
  provider = resolve_async (fixture, profile, &error);
  g_assert_null (provider);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_INVALID_REQUEST);

  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 0);
}

static void
test_key_never_logged (Fixture       *fixture,
                       gconstpointer  user_data)
{
  g_autoptr(KagedProfile) openai = profile_for (fixture, "secret-openai", KAGED_PROVIDER_KIND_OPENAI);
  g_autoptr(KagedProfile) anthropic = profile_for (fixture, "secret-claude", KAGED_PROVIDER_KIND_ANTHROPIC);
  g_autoptr(KagedProvider) provider = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;

  kaged_keyring_store (fixture->keyring, "secret-openai", SECRET_KEY, NULL, NULL);
  kaged_profile_set_api_key_env (anthropic, ENV_NAME);
  g_setenv (ENV_NAME, ENV_KEY, TRUE);

  /* A good answer, then the servers echo the key they got in a 401, as
   * some services do. */
  provider = kaged_resolver_resolve (fixture->resolver, openai, NULL, &error);
  g_assert_no_error (error);
  text = run_chat (fixture, provider, NULL);
  g_assert_cmpstr (text, ==, "Hello there");
  g_clear_pointer (&text, g_free);

  kaged_fake_server_set_scenario (fixture->server,
                                  "[{\"status\": 401, \"body\": {\"error\": {\"message\": "
                                  "\"Incorrect API key provided: " SECRET_KEY "\","
                                  " \"type\": \"invalid_request_error\", \"code\": \"invalid_api_key\"}}}]",
                                  &error);
  g_assert_no_error (error);
  g_free (run_chat (fixture, provider, &error));
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_AUTH_FAILED);
  g_assert_null (strstr (error->message, SECRET_KEY));
  g_assert_null (strstr (error->message, ENV_KEY));
  if (kaged_provider_error_get_provider_message (error) != NULL)
    {
      g_assert_null (strstr (kaged_provider_error_get_provider_message (error), SECRET_KEY));
      g_assert_null (strstr (kaged_provider_error_get_provider_message (error), ENV_KEY));
    }
  g_clear_error (&error);
  g_clear_object (&provider);

  kaged_fake_server_set_scenario (fixture->server,
                                  "[{\"status\": 401, \"body\": {\"type\": \"error\", \"error\": "
                                  "{\"type\": \"authentication_error\", \"message\": \"invalid x-api-key " ENV_KEY "\"}}}]",
                                  &error);
  g_assert_no_error (error);
  provider = kaged_resolver_resolve (fixture->resolver, anthropic, NULL, &error);
  g_unsetenv (ENV_NAME);
  g_assert_no_error (error);
  g_free (run_chat (fixture, provider, &error));
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_AUTH_FAILED);
  g_assert_null (strstr (error->message, ENV_KEY));

  /* The keys did reach the server … */
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 3);
  g_assert_cmpstr (kaged_fake_server_get_request_header (fixture->server, 2, "x-api-key"), ==, ENV_KEY);
  /* … and something was logged, but never a key. */
  g_assert_true (log_contains ("kaged-resolver"));
  g_assert_false (log_contains (SECRET_KEY));
  g_assert_false (log_contains (ENV_KEY));
}

static void
test_secret_keyring_unavailable (void)
{
  g_autoptr(GTestDBus) bus = g_test_dbus_new (G_TEST_DBUS_NONE);
  g_autoptr(KagedKeyring) keyring = NULL;
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedProvider) provider = NULL;
  g_autoptr(GError) error = NULL;
  char *key;

  /* A session bus with no keyring on it, as on a bare system: asking
   * fails at once instead of hanging, and a needed key is unresolved. */
  g_test_dbus_up (bus);

  keyring = kaged_secret_keyring_new ();
  key = kaged_keyring_lookup (keyring, "claude", NULL, &error);
  g_assert_null (key);
  g_assert_nonnull (error);
  g_clear_error (&error);

  g_assert_false (kaged_keyring_store (keyring, "claude", SECRET_KEY, NULL, &error));
  g_assert_nonnull (error);
  g_assert_null (strstr (error->message, SECRET_KEY));
  g_clear_error (&error);

  resolver = kaged_resolver_new (NULL, keyring);
  profile = kaged_profile_new ("claude", KAGED_PROVIDER_KIND_ANTHROPIC, "http://127.0.0.1:9", "claude-test");
  provider = kaged_resolver_resolve (resolver, profile, NULL, &error);
  g_assert_null (provider);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED);

  g_clear_object (&resolver);
  g_clear_object (&keyring);
  g_test_dbus_down (bus);
}

static void
test_url_is_local (void)
{
  g_assert_true (kaged_url_is_local ("http://127.0.0.1:11434"));
  g_assert_true (kaged_url_is_local ("http://127.1.2.3/v1"));
  g_assert_true (kaged_url_is_local ("http://localhost:8080/v1"));
  g_assert_true (kaged_url_is_local ("http://LOCALHOST./v1"));
  g_assert_true (kaged_url_is_local ("http://llm.localhost/v1"));
  g_assert_true (kaged_url_is_local ("http://[::1]:8000/v1"));
  g_assert_false (kaged_url_is_local ("https://api.openai.com/v1"));
  g_assert_false (kaged_url_is_local ("http://192.168.1.10:8000/v1"));
  g_assert_false (kaged_url_is_local ("http://localhost.example.com/v1"));
  g_assert_false (kaged_url_is_local ("not a url"));
  g_assert_false (kaged_url_is_local (NULL));

  g_assert_false (kaged_provider_kind_needs_key (KAGED_PROVIDER_KIND_OLLAMA, "https://ollama.example.com"));
  g_assert_false (kaged_provider_kind_needs_key (KAGED_PROVIDER_KIND_OPENAI, "http://127.0.0.1:8080/v1"));
  g_assert_true (kaged_provider_kind_needs_key (KAGED_PROVIDER_KIND_OPENAI, NULL));
  g_assert_true (kaged_provider_kind_needs_key (KAGED_PROVIDER_KIND_ANTHROPIC, "http://127.0.0.1:8080"));
}

static void
test_profile_defaults (void)
{
  g_autoptr(KagedProfile) profile = kaged_profile_new ("default", KAGED_PROVIDER_KIND_OLLAMA, NULL, "llama3.2");

  g_assert_cmpstr (kaged_profile_get_base_url (profile), ==, "http://127.0.0.1:11434");
  kaged_profile_set_kind (profile, KAGED_PROVIDER_KIND_ANTHROPIC);
  g_assert_cmpstr (kaged_profile_get_base_url (profile), ==, "https://api.anthropic.com");
  kaged_profile_set_kind (profile, KAGED_PROVIDER_KIND_OPENAI);
  g_assert_cmpstr (kaged_profile_get_base_url (profile), ==, "https://api.openai.com/v1");
  g_assert_cmpfloat (kaged_profile_get_input_price (profile), <, 0);
  kaged_profile_set_input_price (profile, 3.0);
  g_assert_cmpfloat (kaged_profile_get_input_price (profile), ==, 3.0);
}

static void
test_memory_keyring (void)
{
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(GError) error = NULL;
  char *key;

  key = kaged_keyring_lookup (keyring, "p", NULL, &error);
  g_assert_no_error (error);
  g_assert_null (key);

  g_assert_true (kaged_keyring_store (keyring, "p", "k1", NULL, &error));
  key = kaged_keyring_lookup (keyring, "p", NULL, &error);
  g_assert_cmpstr (key, ==, "k1");
  kaged_keyring_free_key (key);

  g_assert_true (kaged_keyring_clear (keyring, "p", NULL, &error));
  g_assert_true (kaged_keyring_clear (keyring, "p", NULL, &error));
  key = kaged_keyring_lookup (keyring, "p", NULL, &error);
  g_assert_no_error (error);
  g_assert_null (key);
}

int
main (int   argc,
      char *argv[])
{
  /* Before anything can log: every debug message is produced and kept. */
  g_setenv ("G_MESSAGES_DEBUG", "all", TRUE);
  log_text = g_string_new (NULL);
  g_log_set_writer_func (capture_writer, NULL, NULL);

  g_test_init (&argc, &argv, NULL);

#define ADD(path, func) \
  g_test_add ("/resolver/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  g_test_add_func ("/resolver/url-is-local", test_url_is_local);
  g_test_add_func ("/resolver/profile-defaults", test_profile_defaults);
  g_test_add_func ("/resolver/memory-keyring", test_memory_keyring);
  g_test_add_func ("/resolver/secret-keyring-unavailable", test_secret_keyring_unavailable);
  ADD ("kinds", test_kinds);
  ADD ("credentials-unresolved", test_credentials_unresolved);
  ADD ("resolve-async", test_resolve_async);
  ADD ("keyring-key", test_keyring_key);
  ADD ("env-key", test_env_key);
  ADD ("no-key-needed", test_no_key_needed);
  ADD ("bad-profiles", test_bad_profiles);
  ADD ("key-never-logged", test_key_never_logged);

#undef ADD

  return g_test_run ();
}
