/* test-api-settings.c: a session's profile, model and system prompt over
 * the local HTTP API (POST /api/v1/sessions, PATCH /api/v1/sessions/:id)
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#define G_SETTINGS_ENABLE_BACKEND
#include <gio/gsettingsbackend.h>

#include <glib/gstdio.h>
#include <libsoup/soup.h>

#include "kaged-api-server.h"
#include "kaged-api-token.h"
#include "kaged-core-settings.h"
#include "kaged-fake-server.h"
#include "kaged-keyring.h"

#define WAIT_SECONDS 15
#define WORK_KEY     "sk-kaged-api-work-9d8e7f"

typedef struct
{
  char            *dir;
  KagedFakeServer *fake;
  KagedCore       *core;
  KagedApiServer  *server;
  KagedProfile    *work;
  SoupSession     *http;
  char            *token;
  guint            port;
} Fixture;

typedef struct
{
  guint       status;
  JsonNode   *root;
  char       *text;
} Response;

static void
response_free (Response *response)
{
  g_clear_pointer (&response->root, json_node_unref);
  g_free (response->text);
  g_free (response);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Response, response_free)

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(GSettingsBackend) backend = NULL;
  g_autoptr(GSettings) settings = NULL;
  g_autoptr(KagedProfiles) profiles = NULL;
  g_autofree char *db_path = NULL;
  g_autofree char *url = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  db_path = g_build_filename (fixture->dir, "kaged.db", NULL);

  fixture->fake = kaged_fake_server_new ("{\"paths\": {"
                                         " \"/chat/completions\": [{\"kind\": \"openai\", \"text\": \"Hi\"}],"
                                         " \"/v1/messages\": [{\"kind\": \"anthropic\", \"text\": \"Hi\"}]}}",
                                         &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->fake, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (fixture->fake);

  fixture->core = kaged_core_open (db_path, keyring, KAGED_CORE_FLAGS_NONE, &error);
  g_assert_no_error (error);
  profile = kaged_profile_new ("test", KAGED_PROVIDER_KIND_OPENAI, url, "test-model");
  kaged_core_set_profile (fixture->core, profile);

  /* The saved profiles, one of them "work", as Preferences keep them. */
  backend = g_memory_settings_backend_new ();
  settings = g_settings_new_with_backend (BASE_APPLICATION_ID, backend);
  profiles = kaged_profiles_new (settings);
  fixture->work = kaged_profile_new ("Work", KAGED_PROVIDER_KIND_ANTHROPIC, url, "claude-test");
  kaged_profile_set_id (fixture->work, "work");
  kaged_profile_set_api_key_env (fixture->work, "KAGED_API_SETTINGS_KEY");
  kaged_profiles_add (profiles, fixture->work);
  g_assert_cmpstr (kaged_profile_get_id (fixture->work), ==, "work");
  kaged_core_set_profiles (fixture->core, profiles);
  kaged_core_start (fixture->core);

  fixture->token = kaged_api_token_generate (&error);
  g_assert_no_error (error);
  fixture->server = kaged_api_server_new (fixture->core, fixture->token);
  g_assert_true (kaged_api_server_listen (fixture->server, 0, &error));
  g_assert_no_error (error);
  fixture->port = kaged_api_server_get_port (fixture->server);

  fixture->http = soup_session_new_with_options ("timeout", WAIT_SECONDS, NULL);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GDir) dir = NULL;
  const char *name;

  kaged_api_server_stop (fixture->server);
  kaged_core_shutdown (fixture->core);
  g_clear_object (&fixture->server);
  g_clear_object (&fixture->core);
  g_clear_object (&fixture->work);
  g_clear_object (&fixture->http);
  g_clear_object (&fixture->fake);
  g_clear_pointer (&fixture->token, g_free);

  dir = g_dir_open (fixture->dir, 0, NULL);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (fixture->dir, name, NULL);

      g_unlink (path);
    }
  g_rmdir (fixture->dir);
  g_clear_pointer (&fixture->dir, g_free);

  while (g_main_context_iteration (NULL, FALSE))
    ;
}

static void
sent_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  *(GAsyncResult **)user_data = g_object_ref (result);
}

static Response *
request (Fixture    *fixture,
         const char *method,
         const char *path,
         const char *body)
{
  g_autofree char *uri = g_strdup_printf ("http://127.0.0.1:%u%s", fixture->port, path);
  g_autofree char *bearer = g_strconcat ("Bearer ", fixture->token, NULL);
  g_autoptr(SoupMessage) msg = soup_message_new (method, uri);
  g_autoptr(GAsyncResult) result = NULL;
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GError) error = NULL;
  Response *response = g_new0 (Response, 1);

  soup_message_headers_replace (soup_message_get_request_headers (msg), "Authorization", bearer);
  if (body != NULL)
    {
      g_autoptr(GBytes) data = g_bytes_new (body, strlen (body));

      soup_message_set_request_body_from_bytes (msg, "application/json", data);
    }

  soup_session_send_and_read_async (fixture->http, msg, G_PRIORITY_DEFAULT, NULL, sent_cb, &result);
  while (result == NULL)
    g_main_context_iteration (NULL, TRUE);
  bytes = soup_session_send_and_read_finish (fixture->http, result, &error);
  g_assert_no_error (error);

  response->status = soup_message_get_status (msg);
  response->text = g_strndup (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes));
  if (g_bytes_get_size (bytes) > 0)
    {
      response->root = json_from_string (response->text, &error);
      g_assert_no_error (error);
    }

  return response;
}

static JsonObject *
object_of (Response *response)
{
  g_assert_nonnull (response->root);
  return json_node_get_object (response->root);
}

static const char *
string_or_null (JsonObject *object,
                const char *name)
{
  g_assert_true (json_object_has_member (object, name));
  return json_object_get_string_member_with_default (object, name, NULL);
}

static const char *
error_code (Response *response)
{
  return json_object_get_string_member (json_object_get_object_member (object_of (response), "error"),
                                        "code");
}

static guint
count_sessions (Fixture *fixture)
{
  g_autoptr(Response) list = request (fixture, "GET", "/api/v1/sessions", NULL);

  g_assert_cmpuint (list->status, ==, 200);
  return json_array_get_length (json_object_get_array_member (object_of (list), "sessions"));
}

static gboolean
run_done (Fixture *fixture,
          gint64   session_id,
          gint64   run_id)
{
  g_autofree char *path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/runs/%" G_GINT64_FORMAT,
                                           session_id, run_id);
  g_autoptr(Response) run = request (fixture, "GET", path, NULL);
  const char *status = json_object_get_string_member (object_of (run), "status");

  return g_str_equal (status, "succeeded") || g_str_equal (status, "failed");
}

static void
post_and_wait (Fixture *fixture,
               gint64   session_id)
{
  g_autofree char *path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages", session_id);
  g_autoptr(Response) receipt = request (fixture, "POST", path, "{\"content\": \"Hello?\"}");
  gint64 run_id;
  gint64 deadline = g_get_monotonic_time () + WAIT_SECONDS * G_USEC_PER_SEC;

  g_assert_cmpuint (receipt->status, ==, 202);
  run_id = json_object_get_int_member (object_of (receipt), "run_id");
  while (!run_done (fixture, session_id, run_id))
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      for (guint i = 0; i < 20 && g_main_context_iteration (NULL, FALSE); i++)
        ;
      g_usleep (5000);
    }
}

static JsonObject *
last_request_body (Fixture *fixture)
{
  guint n = kaged_fake_server_get_n_requests (fixture->fake, NULL);
  GBytes *bytes = kaged_fake_server_get_request_body (fixture->fake, n - 1);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = NULL;

  node = json_from_string (g_bytes_get_data (bytes, NULL), &error);
  g_assert_no_error (error);
  return json_object_ref (json_node_get_object (node));
}

static void
test_create_with_settings (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(Response) created = NULL;
  g_autoptr(Response) fetched = NULL;
  g_autoptr(Response) plain = NULL;
  g_autoptr(JsonObject) body = NULL;
  g_autofree char *path = NULL;
  JsonObject *session;
  gint64 id;

  created = request (fixture, "POST", "/api/v1/sessions",
                     "{\"title\": \"Work chat\", \"profile\": \"work\", \"model\": \"claude-fast\","
                     " \"system_prompt\": \"Answer in French.\"}");
  g_assert_cmpuint (created->status, ==, 201);
  session = object_of (created);
  g_assert_cmpstr (string_or_null (session, "profile"), ==, "work");
  g_assert_cmpstr (string_or_null (session, "model"), ==, "claude-fast");
  g_assert_cmpstr (string_or_null (session, "system_prompt"), ==, "Answer in French.");
  g_assert_null (strstr (created->text, WORK_KEY));
  id = json_object_get_int_member (session, "id");

  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT, id);
  fetched = request (fixture, "GET", path, NULL);
  g_assert_cmpuint (fetched->status, ==, 200);
  g_assert_cmpstr (string_or_null (object_of (fetched), "model"), ==, "claude-fast");

  /* What the session asks for reaches the provider. */
  post_and_wait (fixture, id);
  g_assert_cmpstr (kaged_fake_server_get_request_path (fixture->fake, 0), ==, "/v1/messages");
  body = last_request_body (fixture);
  g_assert_cmpstr (json_object_get_string_member (body, "model"), ==, "claude-fast");
  g_assert_cmpstr (json_object_get_string_member (body, "system"), ==, "Answer in French.");

  /* Without settings: the default profile, all null on the wire. */
  plain = request (fixture, "POST", "/api/v1/sessions", "{}");
  g_assert_cmpuint (plain->status, ==, 201);
  g_assert_null (string_or_null (object_of (plain), "profile"));
  g_assert_null (string_or_null (object_of (plain), "model"));
  g_assert_null (string_or_null (object_of (plain), "system_prompt"));
}

static void
test_create_refused (Fixture       *fixture,
                     gconstpointer  data)
{
  g_autoptr(Response) unknown = NULL;
  g_autoptr(Response) wrong_type = NULL;

  unknown = request (fixture, "POST", "/api/v1/sessions", "{\"profile\": \"nowhere\"}");
  g_assert_cmpuint (unknown->status, ==, 400);
  g_assert_cmpstr (error_code (unknown), ==, "unknown_profile");
  g_assert_nonnull (strstr (unknown->text, "nowhere"));

  wrong_type = request (fixture, "POST", "/api/v1/sessions", "{\"model\": 7}");
  g_assert_cmpuint (wrong_type->status, ==, 400);

  /* A refused request changes nothing. */
  g_assert_cmpuint (count_sessions (fixture), ==, 0);
}

static void
test_patch (Fixture       *fixture,
            gconstpointer  data)
{
  g_autoptr(Response) created = NULL;
  g_autoptr(Response) patched = NULL;
  g_autoptr(Response) refused = NULL;
  g_autoptr(Response) missing = NULL;
  g_autoptr(Response) after = NULL;
  g_autoptr(Response) cleared = NULL;
  g_autoptr(JsonObject) body = NULL;
  g_autofree char *path = NULL;
  JsonArray *messages;
  gint64 id;

  created = request (fixture, "POST", "/api/v1/sessions", "{\"title\": \"Patched\"}");
  id = json_object_get_int_member (object_of (created), "id");
  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT, id);

  patched = request (fixture, "PATCH", path, "{\"model\": \"gpt-test-mini\", \"system_prompt\": \"Be terse.\"}");
  g_assert_cmpuint (patched->status, ==, 200);
  g_assert_null (string_or_null (object_of (patched), "profile"));
  g_assert_cmpstr (string_or_null (object_of (patched), "model"), ==, "gpt-test-mini");
  g_assert_cmpstr (string_or_null (object_of (patched), "system_prompt"), ==, "Be terse.");
  g_assert_cmpstr (json_object_get_string_member (object_of (patched), "title"), ==, "Patched");

  post_and_wait (fixture, id);
  body = last_request_body (fixture);
  g_assert_cmpstr (json_object_get_string_member (body, "model"), ==, "gpt-test-mini");
  messages = json_object_get_array_member (body, "messages");
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (messages, 0), "content"),
                   ==, "Be terse.");

  /* An unknown profile: 400, and the session keeps what it had. */
  refused = request (fixture, "PATCH", path, "{\"profile\": \"gone\"}");
  g_assert_cmpuint (refused->status, ==, 400);
  g_assert_cmpstr (error_code (refused), ==, "unknown_profile");
  after = request (fixture, "GET", path, NULL);
  g_assert_cmpstr (string_or_null (object_of (after), "model"), ==, "gpt-test-mini");

  /* Another profile without a model takes that profile's; null resets. */
  cleared = request (fixture, "PATCH", path, "{\"profile\": \"work\", \"system_prompt\": null}");
  g_assert_cmpuint (cleared->status, ==, 200);
  g_assert_cmpstr (string_or_null (object_of (cleared), "profile"), ==, "work");
  g_assert_null (string_or_null (object_of (cleared), "model"));
  g_assert_null (string_or_null (object_of (cleared), "system_prompt"));

  missing = request (fixture, "PATCH", "/api/v1/sessions/9999", "{\"model\": \"x\"}");
  g_assert_cmpuint (missing->status, ==, 404);
}

/* The list names each conversation's profile, model and system prompt as
 * the single session does, under the names PATCH takes. */
static void
test_list_has_settings (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autoptr(Response) work = NULL;
  g_autoptr(Response) plain = NULL;
  g_autoptr(Response) list = NULL;
  const char * const names[] = { "id", "title", "state", "profile", "model", "system_prompt" };
  JsonArray *sessions;
  guint n_seen = 0;

  work = request (fixture, "POST", "/api/v1/sessions",
                  "{\"title\": \"Work chat\", \"profile\": \"work\", \"model\": \"claude-fast\","
                  " \"system_prompt\": \"Answer in French.\"}");
  g_assert_cmpuint (work->status, ==, 201);
  plain = request (fixture, "POST", "/api/v1/sessions", "{\"title\": \"Plain\"}");
  g_assert_cmpuint (plain->status, ==, 201);

  list = request (fixture, "GET", "/api/v1/sessions", NULL);
  g_assert_cmpuint (list->status, ==, 200);
  g_assert_null (strstr (list->text, WORK_KEY));
  sessions = json_object_get_array_member (object_of (list), "sessions");
  g_assert_cmpuint (json_array_get_length (sessions), ==, 2);

  for (guint i = 0; i < json_array_get_length (sessions); i++)
    {
      JsonObject *listed = json_array_get_object_element (sessions, i);
      gint64 id = json_object_get_int_member (listed, "id");
      g_autofree char *path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT, id);
      g_autoptr(Response) fetched = request (fixture, "GET", path, NULL);
      JsonObject *single = object_of (fetched);

      /* The same members, with the same values, as GET /sessions/:id. */
      g_assert_cmpuint (json_object_get_size (listed), ==, json_object_get_size (single));
      for (guint j = 0; j < G_N_ELEMENTS (names); j++)
        {
          JsonNode *a = json_object_get_member (listed, names[j]);
          JsonNode *b = json_object_get_member (single, names[j]);

          g_assert_nonnull (a);
          g_assert_nonnull (b);
          g_assert_true (json_node_equal (a, b));
        }

      if (id == json_object_get_int_member (object_of (work), "id"))
        {
          g_assert_cmpstr (string_or_null (listed, "profile"), ==, "work");
          g_assert_cmpstr (string_or_null (listed, "model"), ==, "claude-fast");
          g_assert_cmpstr (string_or_null (listed, "system_prompt"), ==, "Answer in French.");
          n_seen++;
        }
      else
        {
          g_assert_null (string_or_null (listed, "profile"));
          g_assert_null (string_or_null (listed, "model"));
          g_assert_null (string_or_null (listed, "system_prompt"));
          n_seen++;
        }
    }
  g_assert_cmpuint (n_seen, ==, 2);
}

int
main (int   argc,
      char *argv[])
{
  g_setenv ("KAGED_API_SETTINGS_KEY", WORK_KEY, TRUE);
  g_test_init (&argc, &argv, NULL);

  g_test_add ("/api-settings/create", Fixture, NULL, fixture_set_up, test_create_with_settings, fixture_tear_down);
  g_test_add ("/api-settings/create-refused", Fixture, NULL, fixture_set_up, test_create_refused, fixture_tear_down);
  g_test_add ("/api-settings/patch", Fixture, NULL, fixture_set_up, test_patch, fixture_tear_down);
  g_test_add ("/api-settings/list", Fixture, NULL, fixture_set_up, test_list_has_settings, fixture_tear_down);

  return g_test_run ();
}
