/* test-fake-provider.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <signal.h>
#include <string.h>

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

#include "kaged-fake-server.h"

typedef struct
{
  KagedFakeServer *server;
  SoupSession     *session;
  char            *url;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  user_data)
{
  g_autoptr(GError) error = NULL;

  fixture->server = kaged_fake_server_new (user_data, &error);
  g_assert_no_error (error);
  g_assert_true (kaged_fake_server_listen (fixture->server, 0, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (kaged_fake_server_get_port (fixture->server), >, 0);
  fixture->url = kaged_fake_server_get_url (fixture->server);
  fixture->session = soup_session_new ();
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  user_data)
{
  soup_session_abort (fixture->session);
  g_clear_object (&fixture->session);
  g_clear_object (&fixture->server);
  g_clear_pointer (&fixture->url, g_free);

  while (g_main_context_iteration (NULL, FALSE))
    ;
}

typedef struct
{
  SoupMessage  *message;
  GInputStream *stream;
  GByteArray   *data;
  GError       *error;
  GCancellable *cancellable;
  gboolean      done;
  gint64        first_byte_us;
} Fetch;

static void read_next (Fetch *fetch);

static void
read_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  Fetch *fetch = user_data;
  g_autoptr(GBytes) bytes = NULL;

  bytes = g_input_stream_read_bytes_finish (G_INPUT_STREAM (object), result, &fetch->error);
  if (bytes == NULL || g_bytes_get_size (bytes) == 0)
    {
      fetch->done = TRUE;
      return;
    }

  if (fetch->first_byte_us == 0)
    fetch->first_byte_us = g_get_monotonic_time ();
  g_byte_array_append (fetch->data, g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes));
  read_next (fetch);
}

static void
read_next (Fetch *fetch)
{
  g_input_stream_read_bytes_async (fetch->stream, 4096, G_PRIORITY_DEFAULT, fetch->cancellable,
                                   read_cb, fetch);
}

static void
send_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  Fetch *fetch = user_data;

  fetch->stream = soup_session_send_finish (SOUP_SESSION (object), result, &fetch->error);
  if (fetch->stream == NULL)
    {
      fetch->done = TRUE;
      return;
    }
  read_next (fetch);
}

static void
fetch_start (Fixture      *fixture,
             Fetch        *fetch,
             const char   *method,
             const char   *path,
             const char   *body,
             GCancellable *cancellable)
{
  g_autofree char *uri = g_strconcat (fixture->url, path, NULL);

  memset (fetch, 0, sizeof *fetch);
  fetch->data = g_byte_array_new ();
  fetch->cancellable = cancellable != NULL ? g_object_ref (cancellable) : NULL;
  fetch->message = soup_message_new (method, uri);
  if (body != NULL)
    {
      g_autoptr(GBytes) bytes = g_bytes_new (body, strlen (body));

      soup_message_set_request_body_from_bytes (fetch->message, "application/json", bytes);
    }
  soup_session_send_async (fixture->session, fetch->message, G_PRIORITY_DEFAULT, cancellable,
                           send_cb, fetch);
}

static void
fetch_wait (Fetch *fetch)
{
  while (!fetch->done)
    g_main_context_iteration (NULL, TRUE);
}

static void
fetch_clear (Fetch *fetch)
{
  g_clear_object (&fetch->message);
  g_clear_object (&fetch->stream);
  g_clear_object (&fetch->cancellable);
  g_clear_pointer (&fetch->data, g_byte_array_unref);
  g_clear_error (&fetch->error);
}

/* Fetches @path and returns the body as text; the status goes to @status. */
static char *
fetch (Fixture    *fixture,
       const char *method,
       const char *path,
       const char *body,
       guint      *status)
{
  Fetch f;
  char *text;

  fetch_start (fixture, &f, method, path, body, NULL);
  fetch_wait (&f);
  g_assert_no_error (f.error);
  if (status != NULL)
    *status = soup_message_get_status (f.message);
  text = g_strndup ((const char *)f.data->data, f.data->len);
  fetch_clear (&f);

  return text;
}

static JsonObject *
parse_object (const char *json)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;

  json_parser_load_from_data (parser, json, -1, &error);
  g_assert_no_error (error);
  g_assert_true (JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)));

  return json_object_ref (json_node_get_object (json_parser_get_root (parser)));
}

/* The "data:" payloads of an SSE body, and the "event:" names. */
static void
split_sse (const char  *body,
           GPtrArray   *events,
           GPtrArray   *datas)
{
  g_auto(GStrv) blocks = g_strsplit (body, "\n\n", -1);

  for (guint i = 0; blocks[i] != NULL; i++)
    {
      g_auto(GStrv) lines = g_strsplit (blocks[i], "\n", -1);

      for (guint j = 0; lines[j] != NULL; j++)
        {
          if (g_str_has_prefix (lines[j], "event: ") && events != NULL)
            g_ptr_array_add (events, g_strdup (lines[j] + 7));
          else if (g_str_has_prefix (lines[j], "data: "))
            g_ptr_array_add (datas, g_strdup (lines[j] + 6));
        }
    }
}

/* ------------------------------------------------------------------------ */

static void
test_steps_in_order (Fixture       *fixture,
                     gconstpointer  user_data)
{
  g_autofree char *a = NULL;
  g_autofree char *b = NULL;
  g_autofree char *c = NULL;
  Fetch f;
  guint status = 0;

  a = fetch (fixture, "POST", "/v1/chat/completions", "{\"n\": 1}", &status);
  g_assert_cmpuint (status, ==, 529);
  g_assert_cmpstr (a, ==, "{\"error\":\"first\"}");

  /* Headers come through as given. */
  fetch_start (fixture, &f, "POST", "/v1/chat/completions", "{\"n\": 2}", NULL);
  fetch_wait (&f);
  g_assert_no_error (f.error);
  g_assert_cmpuint (soup_message_get_status (f.message), ==, 429);
  g_assert_cmpstr (soup_message_headers_get_one (soup_message_get_response_headers (f.message), "retry-after"), ==, "120");
  g_assert_cmpstr (soup_message_headers_get_one (soup_message_get_response_headers (f.message), "x-count"), ==, "2");
  fetch_clear (&f);

  b = fetch (fixture, "POST", "/v1/chat/completions", "{\"n\": 3}", &status);
  g_assert_cmpuint (status, ==, 200);
  g_assert_cmpstr (b, ==, "plain text");

  /* The last step repeats. */
  c = fetch (fixture, "POST", "/elsewhere", NULL, &status);
  g_assert_cmpuint (status, ==, 200);
  g_assert_cmpstr (c, ==, "plain text");

  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 4);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, "/v1/chat/completions"), ==, 3);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, "/elsewhere"), ==, 1);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, "/nowhere"), ==, 0);

  /* What was sent is kept. */
  g_assert_cmpstr (g_bytes_get_data (kaged_fake_server_get_request_body (fixture->server, 1), NULL), ==, "{\"n\": 2}");
  g_assert_cmpmem (g_bytes_get_data (kaged_fake_server_get_last_body (fixture->server, "/v1/chat/completions"), NULL), 8,
                   "{\"n\": 3}", 8);
  g_assert_cmpstr (kaged_fake_server_get_request_path (fixture->server, 3), ==, "/elsewhere");
  g_assert_cmpstr (kaged_fake_server_get_request_header (fixture->server, 0, "Content-Type"), ==, "application/json");
}

static void
test_paths_and_exhaustion (Fixture       *fixture,
                           gconstpointer  user_data)
{
  g_autofree char *tags = NULL;
  guint status = 0;

  g_free (fetch (fixture, "POST", "/api/chat", NULL, &status));
  g_assert_cmpuint (status, ==, 503);
  g_free (fetch (fixture, "POST", "/api/chat", NULL, &status));
  g_assert_cmpuint (status, ==, 200);
  /* repeat_last is false for this path. */
  g_free (fetch (fixture, "POST", "/api/chat", NULL, &status));
  g_assert_cmpuint (status, ==, 500);

  tags = fetch (fixture, "GET", "/api/tags", NULL, &status);
  g_assert_cmpuint (status, ==, 200);
  g_assert_nonnull (strstr (tags, "llama3.2"));

  /* No top-level steps: other paths are not found. */
  g_free (fetch (fixture, "GET", "/v1/models", NULL, &status));
  g_assert_cmpuint (status, ==, 404);

  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, "/api/chat"), ==, 3);

  /* A reset starts the lists again and forgets the requests. */
  kaged_fake_server_reset (fixture->server);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 0);
  g_free (fetch (fixture, "POST", "/api/chat", NULL, &status));
  g_assert_cmpuint (status, ==, 503);
}

static void
test_stats_endpoint (Fixture       *fixture,
                     gconstpointer  user_data)
{
  g_autoptr(JsonObject) stats = NULL;
  g_autofree char *json = NULL;
  JsonArray *requests;
  guint status = 0;

  g_free (fetch (fixture, "POST", "/v1/messages", "{\"model\": \"m\"}", NULL));
  g_free (fetch (fixture, "POST", "/v1/messages", "{\"model\": \"n\"}", NULL));
  g_free (fetch (fixture, "POST", "/api/chat", "{}", NULL));

  json = fetch (fixture, "GET", "/__fake/stats", NULL, &status);
  g_assert_cmpuint (status, ==, 200);
  stats = parse_object (json);
  g_assert_cmpint (json_object_get_int_member (stats, "total"), ==, 3);
  g_assert_cmpint (json_object_get_int_member (json_object_get_object_member (stats, "paths"), "/v1/messages"), ==, 2);
  g_assert_cmpint (json_object_get_int_member (json_object_get_object_member (stats, "paths"), "/api/chat"), ==, 1);
  requests = json_object_get_array_member (stats, "requests");
  g_assert_cmpuint (json_array_get_length (requests), ==, 3);
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (requests, 1), "body"), ==,
                   "{\"model\": \"n\"}");

  /* The server's own paths are not counted. */
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 3);

  /* A new scenario over HTTP; a bad one is refused and changes nothing. */
  g_free (fetch (fixture, "POST", "/__fake/scenario", "[{\"status\": 418}]", &status));
  g_assert_cmpuint (status, ==, 204);
  g_free (fetch (fixture, "POST", "/__fake/scenario", "[{\"status\": 9000}]", &status));
  g_assert_cmpuint (status, ==, 400);
  g_free (fetch (fixture, "POST", "/v1/messages", NULL, &status));
  g_assert_cmpuint (status, ==, 418);

  g_free (fetch (fixture, "POST", "/__fake/reset", NULL, &status));
  g_assert_cmpuint (status, ==, 204);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 0);
}

static void
test_openai_stream (Fixture       *fixture,
                    gconstpointer  user_data)
{
  g_autoptr(GPtrArray) datas = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GString) text = g_string_new (NULL);
  g_autofree char *body = NULL;
  const char *finish_reason = NULL;
  JsonObject *usage = NULL;
  g_autoptr(JsonObject) last = NULL;
  Fetch f;

  fetch_start (fixture, &f, "POST", "/v1/chat/completions", "{\"model\": \"gpt-test\", \"stream\": true}", NULL);
  fetch_wait (&f);
  g_assert_no_error (f.error);
  g_assert_cmpuint (soup_message_get_status (f.message), ==, 200);
  g_assert_cmpstr (soup_message_headers_get_content_type (soup_message_get_response_headers (f.message), NULL), ==,
                   "text/event-stream");
  body = g_strndup ((const char *)f.data->data, f.data->len);
  fetch_clear (&f);

  split_sse (body, NULL, datas);
  g_assert_cmpuint (datas->len, ==, 1 + 4 + 1 + 1 + 1);
  g_assert_cmpstr (g_ptr_array_index (datas, datas->len - 1), ==, "[DONE]");

  for (guint i = 0; i + 1 < datas->len; i++)
    {
      g_autoptr(JsonObject) chunk = parse_object (g_ptr_array_index (datas, i));
      JsonArray *choices = json_object_get_array_member (chunk, "choices");

      g_assert_cmpstr (json_object_get_string_member (chunk, "object"), ==, "chat.completion.chunk");
      g_assert_cmpstr (json_object_get_string_member (chunk, "model"), ==, "gpt-test");

      if (json_array_get_length (choices) == 0)
        {
          g_clear_pointer (&last, json_object_unref);
          last = json_object_ref (chunk);
          usage = json_object_get_object_member (chunk, "usage");
          continue;
        }
      else
        {
          JsonObject *choice = json_array_get_object_element (choices, 0);
          JsonObject *delta = json_object_get_object_member (choice, "delta");

          if (i == 0)
            g_assert_cmpstr (json_object_get_string_member (delta, "role"), ==, "assistant");
          if (json_object_has_member (delta, "content"))
            g_string_append (text, json_object_get_string_member (delta, "content"));
          if (!json_object_get_null_member (choice, "finish_reason"))
            finish_reason = g_intern_string (json_object_get_string_member (choice, "finish_reason"));
        }
    }

  g_assert_cmpstr (text->str, ==, "Hello there, friend");
  g_assert_cmpstr (finish_reason, ==, "length");
  g_assert_nonnull (usage);
  g_assert_cmpint (json_object_get_int_member (usage, "prompt_tokens"), ==, 9);
  g_assert_cmpint (json_object_get_int_member (usage, "completion_tokens"), ==, 4);
  g_assert_cmpint (json_object_get_int_member (usage, "total_tokens"), ==, 13);
}

static void
test_anthropic_stream (Fixture       *fixture,
                       gconstpointer  user_data)
{
  static const char *expected_events[] = {
    "message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
    "content_block_delta", "content_block_stop", "message_delta", "message_stop",
  };
  g_autoptr(GPtrArray) events = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GPtrArray) datas = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GString) text = g_string_new (NULL);
  g_autofree char *body = fetch (fixture, "POST", "/v1/messages", "{\"model\": \"claude-test\"}", NULL);

  split_sse (body, events, datas);
  g_assert_cmpuint (events->len, ==, G_N_ELEMENTS (expected_events));
  g_assert_cmpuint (datas->len, ==, events->len);

  for (guint i = 0; i < events->len; i++)
    {
      g_autoptr(JsonObject) event = parse_object (g_ptr_array_index (datas, i));

      g_assert_cmpstr (g_ptr_array_index (events, i), ==, expected_events[i]);
      g_assert_cmpstr (json_object_get_string_member (event, "type"), ==, expected_events[i]);

      if (g_str_equal (expected_events[i], "message_start"))
        {
          JsonObject *message = json_object_get_object_member (event, "message");

          g_assert_cmpstr (json_object_get_string_member (message, "model"), ==, "claude-test");
          g_assert_cmpint (json_object_get_int_member (json_object_get_object_member (message, "usage"), "input_tokens"), ==, 12);
        }
      else if (g_str_equal (expected_events[i], "content_block_delta"))
        {
          JsonObject *delta = json_object_get_object_member (event, "delta");

          g_assert_cmpstr (json_object_get_string_member (delta, "type"), ==, "text_delta");
          g_string_append (text, json_object_get_string_member (delta, "text"));
        }
      else if (g_str_equal (expected_events[i], "message_delta"))
        {
          g_assert_cmpstr (json_object_get_string_member (json_object_get_object_member (event, "delta"), "stop_reason"), ==,
                           "end_turn");
          g_assert_cmpint (json_object_get_int_member (json_object_get_object_member (event, "usage"), "output_tokens"), ==, 3);
        }
    }

  g_assert_cmpstr (text->str, ==, "Grüße, world");
}

static void
test_ollama_stream (Fixture       *fixture,
                    gconstpointer  user_data)
{
  g_autofree char *body = fetch (fixture, "POST", "/api/chat", "{\"model\": \"llama3.2\"}", NULL);
  g_auto(GStrv) lines = g_strsplit (body, "\n", -1);
  g_autoptr(GString) text = g_string_new (NULL);
  guint n_lines = g_strv_length (lines);

  /* Two content lines, the done line, then the final newline. */
  g_assert_cmpuint (n_lines, ==, 4);
  g_assert_cmpstr (lines[3], ==, "");

  for (guint i = 0; i < 3; i++)
    {
      g_autoptr(JsonObject) line = parse_object (lines[i]);
      JsonObject *message = json_object_get_object_member (line, "message");

      g_assert_cmpstr (json_object_get_string_member (line, "model"), ==, "llama3.2");
      g_assert_cmpstr (json_object_get_string_member (message, "role"), ==, "assistant");
      g_string_append (text, json_object_get_string_member (message, "content"));
      g_assert_cmpint (json_object_get_boolean_member (line, "done"), ==, i == 2);
      if (i == 2)
        {
          g_assert_cmpstr (json_object_get_string_member (line, "done_reason"), ==, "stop");
          g_assert_cmpint (json_object_get_int_member (line, "prompt_eval_count"), ==, 12);
          g_assert_cmpint (json_object_get_int_member (line, "eval_count"), ==, 2);
        }
    }

  g_assert_cmpstr (text->str, ==, "Hi!");
}

static void
test_stream_error (Fixture       *fixture,
                   gconstpointer  user_data)
{
  g_autoptr(GPtrArray) events = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GPtrArray) datas = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *body = fetch (fixture, "POST", "/v1/messages", NULL, NULL);
  g_autoptr(JsonObject) error_event = NULL;

  /* One delta, then the error, then nothing. */
  split_sse (body, events, datas);
  g_assert_cmpstr (g_ptr_array_index (events, events->len - 1), ==, "error");
  g_assert_cmpstr (g_ptr_array_index (events, events->len - 2), ==, "content_block_delta");
  error_event = parse_object (g_ptr_array_index (datas, datas->len - 1));
  g_assert_cmpstr (json_object_get_string_member (json_object_get_object_member (error_event, "error"), "type"), ==,
                   "overloaded_error");
}

static void
test_delays (Fixture       *fixture,
             gconstpointer  user_data)
{
  g_autofree char *body = NULL;
  gint64 start = g_get_monotonic_time ();
  Fetch f;

  fetch_start (fixture, &f, "POST", "/", NULL, NULL);
  fetch_wait (&f);
  g_assert_no_error (f.error);
  body = g_strndup ((const char *)f.data->data, f.data->len);
  g_assert_cmpstr (body, ==, "a b c ");

  /* 30 ms before the headers, then 3 × 20 ms before each chunk. */
  g_assert_cmpint (f.first_byte_us - start, >=, 50 * 1000);
  g_assert_cmpint (g_get_monotonic_time () - start, >=, 90 * 1000);
  fetch_clear (&f);
}

static void
test_cut_after_bytes (Fixture       *fixture,
                      gconstpointer  user_data)
{
  Fetch f;

  fetch_start (fixture, &f, "POST", "/", NULL, NULL);
  fetch_wait (&f);

  g_assert_cmpuint (soup_message_get_status (f.message), ==, 200);
  g_assert_nonnull (f.error);
  g_assert_cmpuint (f.data->len, <=, 10);
  g_assert_cmpmem (f.data->data, f.data->len, "0123456789", f.data->len);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);
  fetch_clear (&f);
}

static void
test_cut_after_chunks (Fixture       *fixture,
                       gconstpointer  user_data)
{
  Fetch f;

  fetch_start (fixture, &f, "POST", "/v1/chat/completions", NULL, NULL);
  fetch_wait (&f);

  g_assert_cmpuint (soup_message_get_status (f.message), ==, 200);
  g_assert_nonnull (f.error);
  g_assert_cmpuint (f.data->len, ==, strlen ("data: one\n\ndata: two\n\n"));
  fetch_clear (&f);
}

static gboolean
cancel_cb (gpointer user_data)
{
  g_cancellable_cancel (user_data);
  return G_SOURCE_REMOVE;
}

static void
test_hang (Fixture       *fixture,
           gconstpointer  user_data)
{
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  Fetch f;

  fetch_start (fixture, &f, "POST", "/", NULL, cancellable);
  while (kaged_fake_server_get_n_requests (fixture->server, NULL) == 0)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpuint (kaged_fake_server_get_n_active (fixture->server), ==, 1);

  /* Nothing comes, however long the client waits; it gives up. */
  g_timeout_add (50, cancel_cb, cancellable);
  fetch_wait (&f);
  g_assert_error (f.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (f.data->len, ==, 0);
  fetch_clear (&f);
}

static void
test_hang_after_chunks (Fixture       *fixture,
                        gconstpointer  user_data)
{
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  Fetch f;

  fetch_start (fixture, &f, "POST", "/", NULL, cancellable);
  while (f.data->len < 4 && !f.done)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpmem (f.data->data, f.data->len, "one\n", 4);

  g_timeout_add (50, cancel_cb, cancellable);
  fetch_wait (&f);
  g_assert_error (f.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (f.data->len, ==, 4);
  fetch_clear (&f);
}

static void
test_headers_before_chunks (Fixture       *fixture,
                            gconstpointer  user_data)
{
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  Fetch f;

  /* The first chunk is a minute away, the headers are not. */
  fetch_start (fixture, &f, "POST", "/", NULL, cancellable);
  while (f.stream == NULL && !f.done)
    g_main_context_iteration (NULL, TRUE);
  g_assert_no_error (f.error);
  g_assert_cmpuint (soup_message_get_status (f.message), ==, 200);
  g_assert_cmpuint (f.data->len, ==, 0);
  g_assert_cmpuint (kaged_fake_server_get_n_active (fixture->server), ==, 1);

  g_cancellable_cancel (cancellable);
  fetch_wait (&f);
  g_assert_error (f.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  fetch_clear (&f);
}

static void
test_bad_scenarios (void)
{
  static const char *bad[] = {
    "",
    "not json",
    "42",
    "{\"steps\": {}}",
    "[1]",
    "[{\"status\": 42}]",
    "[{\"delay_ms\": -5}]",
    "[{\"delay_ms\": \"soon\"}]",
    "[{\"kind\": \"gemini\"}]",
    "[{\"chunks\": \"abc\"}]",
    "[{\"chunks\": [{\"delay_ms\": 5}]}]",
    "[{\"headers\": [\"retry-after\"]}]",
    "{\"paths\": {\"v1\": []}}",
    "{\"paths\": []}",
    "{\"mix\": true, \"steps\": [{}]}",
    "[{\"weight\": -1}]",
    "[{\"name\": 7}]",
    "[{\"reset\": \"yes\"}]",
    "[{\"refuse_ms\": \"long\"}]",
    "[{\"dated_headers\": {\"retry-after\": \"tomorrow\"}}]",
    "[{\"dated_headers\": [\"retry-after\"]}]",
  };

  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(KagedFakeServer) server = kaged_fake_server_new (bad[i], &error);

      g_test_message ("%s", bad[i]);
      g_assert_null (server);
      g_assert_error (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO);
    }
}

static void
test_example_scenarios (void)
{
  g_autoptr(GDir) dir = NULL;
  g_autoptr(GError) error = NULL;
  const char *name;
  guint n = 0;

  dir = g_dir_open (SCENARIO_DIR, 0, &error);
  g_assert_no_error (error);

  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (SCENARIO_DIR, name, NULL);
      g_autoptr(KagedFakeServer) server = NULL;

      if (!g_str_has_suffix (name, ".json"))
        continue;

      server = kaged_fake_server_new_from_file (path, &error);
      g_assert_no_error (error);
      g_assert_nonnull (server);
      n++;
    }

  g_assert_cmpuint (n, >=, 3);
}

static void
test_program (void)
{
  g_autoptr(GSubprocess) process = NULL;
  g_autoptr(GDataInputStream) output = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(SoupSession) session = soup_session_new ();
  g_autoptr(SoupMessage) message = NULL;
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(JsonObject) stats = NULL;
  g_autofree char *scenario = g_build_filename (SCENARIO_DIR, "overloaded-then-ok.json", NULL);
  g_autofree char *line = NULL;
  g_autofree char *uri = NULL;
  g_autofree char *json = NULL;

  process = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error,
                              FAKE_PROVIDER, "--port", "0", "--scenario", scenario, NULL);
  g_assert_no_error (error);

  output = g_data_input_stream_new (g_subprocess_get_stdout_pipe (process));
  line = g_data_input_stream_read_line_utf8 (output, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (line);
  g_assert_true (g_str_has_prefix (line, "Listening on http://127.0.0.1:"));

  uri = g_strconcat (line + strlen ("Listening on "), "/v1/messages", NULL);
  message = soup_message_new ("POST", uri);
  bytes = soup_session_send_and_read (session, message, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (soup_message_get_status (message), ==, 529);
  g_clear_object (&message);
  g_clear_pointer (&bytes, g_bytes_unref);
  g_clear_pointer (&uri, g_free);

  uri = g_strconcat (line + strlen ("Listening on "), "/__fake/stats", NULL);
  message = soup_message_new ("GET", uri);
  bytes = soup_session_send_and_read (session, message, NULL, &error);
  g_assert_no_error (error);
  json = g_strndup (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes));
  stats = parse_object (json);
  g_assert_cmpint (json_object_get_int_member (stats, "total"), ==, 1);

  g_subprocess_send_signal (process, SIGTERM);
  g_subprocess_wait (process, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_get_if_exited (process));
  g_assert_cmpint (g_subprocess_get_exit_status (process), ==, 0);
}

static void
test_program_help (void)
{
  g_autoptr(GSubprocess) process = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *out = NULL;

  process = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error, FAKE_PROVIDER, "--help", NULL);
  g_assert_no_error (error);
  g_subprocess_communicate_utf8 (process, NULL, NULL, &out, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (out, "--scenario"));
  g_assert_nonnull (strstr (out, "cut_after_bytes"));
  g_assert_nonnull (strstr (out, "/__fake/stats"));

  /* A scenario that does not load is an error, said on stderr. */
  g_clear_object (&process);
  process = g_subprocess_new (G_SUBPROCESS_FLAGS_STDERR_SILENCE, &error,
                              FAKE_PROVIDER, "--scenario", "/nonexistent/scenario.json", NULL);
  g_assert_no_error (error);
  g_subprocess_wait (process, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_subprocess_get_exit_status (process), !=, 0);
}

/* The same seed draws the same sequence, each step about as often as its
 * weight says, and the log names the step of each request. */
static void
test_mix (Fixture       *fixture,
          gconstpointer  user_data)
{
  g_autoptr(GString) first = g_string_new (NULL);
  g_autoptr(GString) second = g_string_new (NULL);
  guint n_often = 0;

  for (guint round = 0; round < 2; round++)
    {
      GString *names = round == 0 ? first : second;

      if (round == 1)
        {
          g_autoptr(GError) error = NULL;

          kaged_fake_server_set_scenario (fixture->server, user_data, &error);
          g_assert_no_error (error);
          kaged_fake_server_reset (fixture->server);
        }

      for (guint i = 0; i < 200; i++)
        {
          guint status = 0;
          const char *fault;

          g_free (fetch (fixture, "POST", "/v1/chat/completions", "{}", &status));
          fault = kaged_fake_server_get_request_fault (fixture->server, i);

          g_assert_nonnull (fault);
          g_assert_cmpuint (status, ==, g_str_equal (fault, "often") ? 200 : 503);
          g_assert_cmpint (kaged_fake_server_get_request_time (fixture->server, i), >,
                           g_get_real_time () / 1000 - 60000);
          g_string_append_c (names, fault[0]);
          if (round == 0 && g_str_equal (fault, "often"))
            n_often++;
        }
    }

  g_assert_cmpstr (first->str, ==, second->str);
  /* 9 in 10 on average: far from all and from none. */
  g_assert_cmpuint (n_often, >, 150);
  g_assert_cmpuint (n_often, <, 200);
}

/* A reset closes the connection before any answer; a refusal also stops
 * the server from accepting connections for a while, then it listens
 * again on the same port. */
static void
test_reset_and_refuse (Fixture       *fixture,
                       gconstpointer  user_data)
{
  const gint64 *refusals;
  guint n_refusals = 0;
  Fetch f;
  g_autofree char *body = NULL;
  guint status = 0;
  gint64 start;

  fetch_start (fixture, &f, "POST", "/reset", "{}", NULL);
  fetch_wait (&f);
  g_assert_nonnull (f.error);
  g_assert_cmpuint (soup_message_get_status (f.message), ==, 0);
  fetch_clear (&f);

  /* A new session each time: no connection kept from before. */
  soup_session_abort (fixture->session);
  start = g_get_real_time () / 1000;
  fetch_start (fixture, &f, "POST", "/refuse", "{}", NULL);
  fetch_wait (&f);
  g_assert_nonnull (f.error);
  fetch_clear (&f);

  soup_session_abort (fixture->session);
  fetch_start (fixture, &f, "POST", "/other", "{}", NULL);
  fetch_wait (&f);
  g_assert_error (f.error, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED);
  fetch_clear (&f);

  /* After the refusal it answers again. */
  g_usleep (400 * 1000);
  while (g_main_context_iteration (NULL, FALSE))
    ;
  soup_session_abort (fixture->session);
  body = fetch (fixture, "POST", "/other", "{}", &status);
  g_assert_cmpuint (status, ==, 200);

  refusals = kaged_fake_server_get_refusals (fixture->server, &n_refusals);
  g_assert_cmpuint (n_refusals, ==, 1);
  g_assert_cmpint (refusals[0], >=, start);
  g_assert_cmpint (refusals[1] - refusals[0], >=, 290);
  g_assert_cmpstr (kaged_fake_server_get_request_fault (fixture->server, 0), ==, "reset");
  g_assert_cmpstr (kaged_fake_server_get_request_fault (fixture->server, 1), ==, "refuse");
  g_assert_null (kaged_fake_server_get_request_fault (fixture->server, 2));
}

/* Dated headers name a time from the moment of the answer, in the form
 * each provider uses. */
static void
test_dated_headers (Fixture       *fixture,
                    gconstpointer  user_data)
{
  g_autoptr(GDateTime) now = g_date_time_new_now_utc ();
  g_autoptr(GDateTime) http_date = NULL;
  g_autoptr(GDateTime) rfc3339 = NULL;
  SoupMessageHeaders *headers;
  GTimeSpan ahead;
  Fetch f;

  fetch_start (fixture, &f, "POST", "/v1/messages", "{}", NULL);
  fetch_wait (&f);
  g_assert_no_error (f.error);
  headers = soup_message_get_response_headers (f.message);

  http_date = soup_date_time_new_from_http_string (soup_message_headers_get_one (headers, "retry-after"));
  g_assert_nonnull (http_date);
  ahead = g_date_time_difference (http_date, now);
  g_assert_cmpint (ahead, >=, 5 * G_TIME_SPAN_SECOND);
  g_assert_cmpint (ahead, <=, 8 * G_TIME_SPAN_SECOND);

  rfc3339 = g_date_time_new_from_iso8601 (soup_message_headers_get_one (headers, "anthropic-ratelimit-requests-reset"), NULL);
  g_assert_nonnull (rfc3339);
  ahead = g_date_time_difference (rfc3339, now);
  g_assert_cmpint (ahead, >=, 4 * G_TIME_SPAN_SECOND);
  g_assert_cmpint (ahead, <=, 7 * G_TIME_SPAN_SECOND);

  g_assert_cmpstr (soup_message_headers_get_one (headers, "x-ratelimit-reset-requests"), ==, "5000ms");
  fetch_clear (&f);
}

/* A stamped step names the request it answers wherever its strings say
 * "{request}"; an unstamped one is left as written. */
static void
test_stamp (Fixture       *fixture,
            gconstpointer  user_data)
{
  for (guint i = 0; i < 3; i++)
    {
      g_autofree char *body = NULL;
      g_autofree char *expected = NULL;
      guint status = 0;

      body = fetch (fixture, "POST", i < 2 ? "/v1/chat/completions" : "/plain", "{}", &status);
      if (i == 0)
        {
          g_assert_cmpuint (status, ==, 429);
          g_assert_nonnull (strstr (body, "\"Slow down [r0]\""));
        }
      else if (i == 1)
        {
          g_assert_cmpuint (status, ==, 200);
          expected = g_strdup_printf ("\"content\":\"[r%u] Hi", i);
          g_assert_nonnull (strstr (body, expected));
        }
      else
        {
          g_assert_cmpstr (body, ==, "as {request} said");
        }
    }
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

#define ADD(path, scenario, func) \
  g_test_add ("/fake-provider/" path, Fixture, scenario, fixture_set_up, func, fixture_tear_down)

  ADD ("steps-in-order",
       "{\"steps\": ["
       " {\"status\": 529, \"body\": {\"error\": \"first\"}},"
       " {\"status\": 429, \"headers\": {\"retry-after\": \"120\", \"x-count\": 2}, \"body\": \"\"},"
       " {\"body\": \"plain text\"}]}",
       test_steps_in_order);
  ADD ("paths",
       "{\"paths\": {"
       " \"/api/chat\": {\"steps\": [{\"status\": 503}, {\"kind\": \"ollama\", \"text\": \"ok\"}], \"repeat_last\": false},"
       " \"/api/tags\": [{\"body\": {\"models\": [{\"name\": \"llama3.2\"}]}}]}}",
       test_paths_and_exhaustion);
  ADD ("stats", "[{\"kind\": \"anthropic\", \"text\": \"hi\"}]", test_stats_endpoint);
  ADD ("openai-stream",
       "[{\"kind\": \"openai\", \"text\": \"Hello there, friend\", \"chunks\": 4, \"finish_reason\": \"length\","
       "  \"usage\": {\"input_tokens\": 9, \"output_tokens\": 4}}]",
       test_openai_stream);
  ADD ("anthropic-stream", "[{\"kind\": \"anthropic\", \"text\": \"Grüße, world\", \"usage\": {\"output_tokens\": 3}}]",
       test_anthropic_stream);
  ADD ("ollama-stream", "[{\"kind\": \"ollama\", \"text\": \"Hi!\", \"chunks\": 2}]", test_ollama_stream);
  ADD ("stream-error",
       "[{\"kind\": \"anthropic\", \"text\": \"Hello there\", \"error_after\": 1,"
       "  \"stream_error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}]",
       test_stream_error);
  ADD ("delays", "[{\"chunks\": [\"a \", \"b \", \"c \"], \"delay_ms\": 20, \"headers_delay_ms\": 30}]", test_delays);
  ADD ("cut-after-bytes", "[{\"body\": \"0123456789abcdefghij\", \"cut_after_bytes\": 10}]", test_cut_after_bytes);
  ADD ("cut-after-chunks",
       "[{\"chunks\": [\"data: one\\n\\n\", {\"data\": \"data: two\\n\\n\", \"delay_ms\": 5}, \"data: three\\n\\n\"],"
       "  \"cut_after_chunks\": 2}]",
       test_cut_after_chunks);
  ADD ("headers-before-chunks", "[{\"chunks\": [\"a\", \"b\"], \"delay_ms\": 60000}]",
       test_headers_before_chunks);
  ADD ("hang", "[{\"hang\": true}]", test_hang);
  ADD ("hang-after-chunks", "[{\"chunks\": [\"one\\n\", \"two\\n\"], \"hang_after_chunks\": 1}]", test_hang_after_chunks);

  ADD ("mix",
       "{\"mix\": true, \"seed\": 7, \"steps\": ["
       " {\"name\": \"often\", \"weight\": 9, \"body\": \"fine\"},"
       " {\"name\": \"rarely\", \"status\": 503}]}",
       test_mix);
  ADD ("reset-and-refuse",
       "{\"paths\": {\"/reset\": [{\"name\": \"reset\", \"reset\": true}],"
       " \"/refuse\": [{\"name\": \"refuse\", \"refuse_ms\": 300}]},"
       " \"steps\": [{\"body\": \"fine\"}]}",
       test_reset_and_refuse);
  ADD ("stamp",
       "{\"paths\": {\"/v1/chat/completions\": ["
       " {\"stamp\": true, \"status\": 429, \"body\": {\"error\": {\"message\": \"Slow down [r{request}]\"}}},"
       " {\"stamp\": true, \"kind\": \"openai\", \"text\": \"[r{request}] Hi there\", \"chunks\": 1}],"
       " \"/plain\": [{\"body\": \"as {request} said\"}]}}",
       test_stamp);
  ADD ("dated-headers",
       "[{\"status\": 429, \"date_in_ms\": 5000, \"dated_headers\": {"
       " \"retry-after\": \"http-date\", \"anthropic-ratelimit-requests-reset\": \"rfc3339\","
       " \"x-ratelimit-reset-requests\": \"seconds\"}}]",
       test_dated_headers);

#undef ADD

  g_test_add_func ("/fake-provider/bad-scenarios", test_bad_scenarios);
  g_test_add_func ("/fake-provider/example-scenarios", test_example_scenarios);
  g_test_add_func ("/fake-provider/program", test_program);
  g_test_add_func ("/fake-provider/program-help", test_program_help);

  return g_test_run ();
}
