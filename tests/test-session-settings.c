/* test-session-settings.c: each conversation's profile, model and system
 * prompt reach the provider's request, and each run records what it used
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <json-glib/json-glib.h>

#include "kaged-engine-fixture.h"

static const char two_kinds[] =
  "{\"paths\": {"
  "  \"/chat/completions\": [{\"kind\": \"openai\", \"text\": \"From OpenAI\"}],"
  "  \"/v1/messages\": [{\"kind\": \"anthropic\", \"text\": \"From Anthropic\"}]"
  "}}";

typedef struct
{
  KagedProfile *work;
  guint         n_lookups;
  gboolean      gone;
} Profiles;

static KagedProfile *
lookup_cb (const char *profile_id,
           gpointer    user_data)
{
  Profiles *profiles = user_data;

  profiles->n_lookups++;
  if (!profiles->gone && g_strcmp0 (profile_id, "work") == 0)
    return profiles->work;
  return NULL;
}

static JsonObject *
request_body (Fixture *fixture,
              guint    index)
{
  GBytes *bytes = kaged_fake_server_get_request_body (fixture->server, index);
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;

  g_assert_nonnull (bytes);
  json_parser_load_from_data (parser, g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes), &error);
  g_assert_no_error (error);

  return json_object_ref (json_node_get_object (json_parser_get_root (parser)));
}

static gint64
post_and_wait (Fixture    *fixture,
               const char *content)
{
  g_autoptr(KagedReceipt) receipt = post (fixture, content);
  g_autoptr(KagedRun) run = NULL;

  wait_run (fixture, receipt->run_id);
  run = get_run (fixture, receipt->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);

  return receipt->run_id;
}

static void
assert_run_model (Fixture    *fixture,
                  gint64      run_id,
                  const char *profile_id,
                  const char *profile_name,
                  const char *model)
{
  g_autofree char *got_id = NULL;
  g_autofree char *got_name = NULL;
  g_autofree char *got_model = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_true (kaged_session_manager_get_run_model (fixture->manager, run_id, &got_id,
                                                      &got_name, &got_model, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (got_id, ==, profile_id);
  g_assert_cmpstr (got_name, ==, profile_name);
  g_assert_cmpstr (got_model, ==, model);
}

static void
set_settings (Fixture    *fixture,
              const char *profile_id,
              const char *model,
              const char *system_prompt)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (kaged_session_manager_set_session_settings (fixture->manager,
                                                             kaged_session_get_id (fixture->session),
                                                             profile_id, model, system_prompt,
                                                             &error));
  g_assert_no_error (error);
}

/* Without settings a conversation uses the default profile, its model and
 * no system prompt. */
static void
test_default (Fixture       *fixture,
              gconstpointer  data)
{
  g_autoptr(JsonObject) body = NULL;
  JsonArray *messages;
  gint64 run_id;

  run_id = post_and_wait (fixture, "Hello?");

  body = request_body (fixture, 0);
  g_assert_cmpstr (json_object_get_string_member (body, "model"), ==, "test-model");
  messages = json_object_get_array_member (body, "messages");
  g_assert_cmpuint (json_array_get_length (messages), ==, 1);
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (messages, 0), "role"), ==, "user");
  assert_run_model (fixture, run_id, NULL, "test", "test-model");
}

/* The conversation's model and system prompt reach the request; another
 * conversation keeps the default. */
static void
test_model_and_prompt (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autoptr(JsonObject) body = NULL;
  g_autoptr(JsonObject) other_body = NULL;
  g_autoptr(KagedSession) other = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *model = NULL;
  g_autofree char *prompt = NULL;
  JsonArray *messages;
  JsonObject *first;
  gint64 run_id;

  set_settings (fixture, NULL, "qwen3:8b", "Answer in one sentence.");
  g_assert_true (kaged_session_manager_get_session_settings (fixture->manager,
                                                             kaged_session_get_id (fixture->session),
                                                             NULL, &model, &prompt, &error));
  g_assert_cmpstr (model, ==, "qwen3:8b");
  g_assert_cmpstr (prompt, ==, "Answer in one sentence.");

  run_id = post_and_wait (fixture, "Why is the sky blue?");
  body = request_body (fixture, 0);
  g_assert_cmpstr (json_object_get_string_member (body, "model"), ==, "qwen3:8b");
  messages = json_object_get_array_member (body, "messages");
  g_assert_cmpuint (json_array_get_length (messages), ==, 2);
  first = json_array_get_object_element (messages, 0);
  g_assert_cmpstr (json_object_get_string_member (first, "role"), ==, "system");
  g_assert_cmpstr (json_object_get_string_member (first, "content"), ==, "Answer in one sentence.");
  assert_run_model (fixture, run_id, NULL, "test", "qwen3:8b");

  /* A second run of the same conversation reuses its provider. */
  post_and_wait (fixture, "And at sunset?");
  g_clear_pointer (&body, json_object_unref);
  body = request_body (fixture, 1);
  g_assert_cmpstr (json_object_get_string_member (body, "model"), ==, "qwen3:8b");

  other = kaged_session_manager_create_session (fixture->manager, "Other", &error);
  g_assert_no_error (error);
  receipt = kaged_session_manager_post (fixture->manager, kaged_session_get_id (other), "Hi", &error);
  g_assert_no_error (error);
  wait_run (fixture, receipt->run_id);
  other_body = request_body (fixture, 2);
  g_assert_cmpstr (json_object_get_string_member (other_body, "model"), ==, "test-model");
  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (other_body, "messages")), ==, 1);
}

/* A conversation that names another profile goes through it, with its
 * model; when that profile is gone, through the default again. */
static void
test_other_profile (Fixture       *fixture,
                    gconstpointer  data)
{
  Profiles profiles = { 0 };
  g_autoptr(JsonObject) body = NULL;
  g_autoptr(GError) error = NULL;
  gint64 run_id;

  fixture_set_scenario (fixture, two_kinds);
  profiles.work = kaged_profile_new ("Work", KAGED_PROVIDER_KIND_ANTHROPIC, fixture->url, "claude-test");
  kaged_profile_set_id (profiles.work, "work");
  g_setenv ("KAGED_TEST_WORK_KEY", "sk-kaged-work-3c2b1a", TRUE);
  kaged_profile_set_api_key_env (profiles.work, "KAGED_TEST_WORK_KEY");
  kaged_session_manager_set_profile_lookup (fixture->manager, lookup_cb, &profiles, NULL);

  /* Unknown profiles are refused, and nothing changes. */
  g_assert_false (kaged_session_manager_set_session_settings (fixture->manager,
                                                              kaged_session_get_id (fixture->session),
                                                              "nope", NULL, NULL, &error));
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_UNKNOWN_PROFILE);
  g_clear_error (&error);

  set_settings (fixture, "work", NULL, "Be kind.");
  run_id = post_and_wait (fixture, "Hello?");
  g_assert_cmpstr (kaged_fake_server_get_request_path (fixture->server, 0), ==, "/v1/messages");
  body = request_body (fixture, 0);
  g_assert_cmpstr (json_object_get_string_member (body, "model"), ==, "claude-test");
  g_assert_cmpstr (json_object_get_string_member (body, "system"), ==, "Be kind.");
  assert_run_model (fixture, run_id, "work", "Work", "claude-test");

  set_settings (fixture, "work", "claude-other", "Be kind.");
  run_id = post_and_wait (fixture, "Again?");
  g_clear_pointer (&body, json_object_unref);
  body = request_body (fixture, 1);
  g_assert_cmpstr (json_object_get_string_member (body, "model"), ==, "claude-other");
  assert_run_model (fixture, run_id, "work", "Work", "claude-other");

  /* The profile is removed: the default one answers, with its model. */
  profiles.gone = TRUE;
  run_id = post_and_wait (fixture, "Still there?");
  g_assert_cmpstr (kaged_fake_server_get_request_path (fixture->server, 2), ==, "/chat/completions");
  g_clear_pointer (&body, json_object_unref);
  body = request_body (fixture, 2);
  g_assert_cmpstr (json_object_get_string_member (body, "model"), ==, "test-model");
  assert_run_model (fixture, run_id, NULL, "test", "test-model");

  kaged_session_manager_set_profile_lookup (fixture->manager, NULL, NULL, NULL);
  g_clear_object (&profiles.work);
}

static void
test_invalid (Fixture       *fixture,
              gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *model = NULL;

  g_assert_false (kaged_session_manager_set_session_settings (fixture->manager, 9999, NULL,
                                                              "m", NULL, &error));
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  g_assert_false (kaged_session_manager_set_session_settings (fixture->manager,
                                                              kaged_session_get_id (fixture->session),
                                                              NULL, "two\nlines", NULL, &error));
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_CONTENT);
  g_clear_error (&error);

  /* Empty means the default. */
  set_settings (fixture, "", "", "");
  g_assert_true (kaged_session_manager_get_session_settings (fixture->manager,
                                                             kaged_session_get_id (fixture->session),
                                                             NULL, &model, NULL, &error));
  g_assert_null (model);
}

int
main (int   argc,
      char *argv[])
{
  kaged_engine_test_init (&argc, &argv);

  g_test_add ("/session-settings/default", Fixture, NULL, fixture_set_up, test_default, fixture_tear_down);
  g_test_add ("/session-settings/model-and-prompt", Fixture, NULL, fixture_set_up, test_model_and_prompt, fixture_tear_down);
  g_test_add ("/session-settings/other-profile", Fixture, NULL, fixture_set_up, test_other_profile, fixture_tear_down);
  g_test_add ("/session-settings/invalid", Fixture, NULL, fixture_set_up, test_invalid, fixture_tear_down);

  return g_test_run ();
}
