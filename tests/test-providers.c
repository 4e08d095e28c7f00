/* test-providers.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "kaged-anthropic-provider.h"
#include "kaged-clock.h"
#include "kaged-http.h"
#include "kaged-ollama-provider.h"
#include "kaged-openai-provider.h"
#include "kaged-provider.h"
#include "kaged-retry-class.h"
#include "kaged-test-time.h"

/* 2026-11-29T20:00:00Z, the providers' (fake) wall clock */
#define NOW_MS G_GINT64_CONSTANT (1795982400000)
#define API_KEY "sk-kaged-test-7f3a9c2e5b1d4f60"

typedef enum
{
  OPENAI,
  ANTHROPIC,
  OLLAMA,
} Kind;

typedef enum
{
  MODE_RESPOND,     /* the whole answer at once */
  MODE_STALL_OPEN,  /* never answer */
  MODE_STALL_BODY,  /* headers and the first part, then nothing */
  MODE_END_LATER,   /* the whole answer; the end of the body when the test
                     * releases it, or after END_LATER_SECONDS */
} Mode;

/* How long MODE_END_LATER holds the end of a body back at most: far longer
 * than the client needs to read an answer, even under the sanitizers. */
#define END_LATER_SECONDS 30

/* The server the test starts on 127.0.0.1, and what it is to answer. */
typedef struct
{
  SoupServer         *server;
  char               *base;
  Mode                mode;
  guint               status;
  char               *content_type;
  GBytes             *body;
  GPtrArray          *headers;
  guint               n_requests;
  char               *path;
  SoupMessageHeaders *request_headers;
  char               *request_body;
  GPtrArray          *paused;
  GHashTable         *client_ports;  /* one per connection */
  GPtrArray          *timeouts;      /* GSource, for MODE_END_LATER */
  guint               n_ended_later; /* bodies MODE_END_LATER completed */
} Server;

/* LeakSanitizer (the sanitizers setup, meson.build): the servers of this
 * program listen through libsoup 3.2's own listener
 * (soup_server_listen_local()), which accepts each connection with
 * g_socket_accept() and leaves the accepted GSocket with a reference
 * nobody holds once the connection ends. The allocation's stack is GIO's
 * g_socket_accept() called from libsoup's listener, whose frames have no
 * names. Kaged's own server accepts with g_socket_accept() too and is
 * checked without this suppression (the API tests and test-headless), so
 * it is declared here, for this program only. */
const char *__lsan_default_suppressions (void);

const char *
__lsan_default_suppressions (void)
{
  return "leak:g_socket_accept\n";
}

static GString *logged;

static GLogWriterOutput
capture_writer (GLogLevelFlags   log_level,
                const GLogField *fields,
                gsize            n_fields,
                gpointer         user_data)
{
  for (gsize i = 0; i < n_fields; i++)
    {
      if (fields[i].length < 0)
        g_string_append_printf (logged, "%s=%s\n", fields[i].key, (const char *)fields[i].value);
      else
        g_string_append_printf (logged, "%s=%.*s\n", fields[i].key, (int)fields[i].length,
                                (const char *)fields[i].value);
    }

  if (log_level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING | G_LOG_LEVEL_ERROR))
    return g_log_writer_default (log_level, fields, n_fields, user_data);

  return G_LOG_WRITER_HANDLED;
}

static gboolean
end_body_cb (gpointer data)
{
  SoupServerMessage *msg = data;
  Server *server = g_object_get_data (G_OBJECT (msg), "test-server");

  server->n_ended_later++;

  soup_message_body_complete (soup_server_message_get_response_body (msg));
  soup_server_message_unpause (msg);

  return G_SOURCE_REMOVE;
}

/* Ends the bodies MODE_END_LATER holds back, now. */
static void
server_end_bodies_now (Server *server)
{
  for (guint i = 0; i < server->timeouts->len; i++)
    {
      GSource *timeout = g_ptr_array_index (server->timeouts, i);

      if (!g_source_is_destroyed (timeout))
        g_source_set_ready_time (timeout, 0);
    }
}

static void
handler (SoupServer        *soup_server,
         SoupServerMessage *msg,
         const char        *path,
         GHashTable        *query,
         gpointer           user_data)
{
  Server *server = user_data;
  SoupMessageHeaders *response_headers = soup_server_message_get_response_headers (msg);
  g_autoptr(GBytes) request = NULL;
  gsize len = 0;
  const char *data;
  GSource *timeout;

  server->n_requests++;
  g_hash_table_add (server->client_ports,
                    GUINT_TO_POINTER (g_inet_socket_address_get_port (
                      G_INET_SOCKET_ADDRESS (soup_server_message_get_remote_address (msg)))));
  g_free (server->path);
  server->path = g_strdup (path);
  g_clear_pointer (&server->request_headers, soup_message_headers_unref);
  server->request_headers = soup_message_headers_ref (soup_server_message_get_request_headers (msg));
  request = soup_message_body_flatten (soup_server_message_get_request_body (msg));
  g_free (server->request_body);
  server->request_body = g_strndup (g_bytes_get_data (request, NULL), g_bytes_get_size (request));

  if (server->mode == MODE_STALL_OPEN)
    {
      soup_server_message_pause (msg);
      g_ptr_array_add (server->paused, g_object_ref (msg));
      return;
    }

  soup_server_message_set_status (msg, server->status, NULL);
  for (guint i = 0; i + 1 < server->headers->len; i += 2)
    soup_message_headers_append (response_headers,
                                 g_ptr_array_index (server->headers, i),
                                 g_ptr_array_index (server->headers, i + 1));

  data = server->body != NULL ? g_bytes_get_data (server->body, &len) : "";

  if (server->mode == MODE_END_LATER)
    {
      soup_message_headers_set_encoding (response_headers, SOUP_ENCODING_CHUNKED);
      soup_message_headers_set_content_type (response_headers, server->content_type, NULL);
      soup_message_body_append (soup_server_message_get_response_body (msg),
                                SOUP_MEMORY_COPY, data, len);
      g_object_set_data (G_OBJECT (msg), "test-server", server);
      timeout = g_timeout_source_new_seconds (END_LATER_SECONDS);
      g_source_set_callback (timeout, end_body_cb, g_object_ref (msg), g_object_unref);
      g_source_attach (timeout, NULL);
      g_ptr_array_add (server->timeouts, timeout);
      return;
    }

  if (server->mode == MODE_STALL_BODY)
    {
      soup_message_headers_set_encoding (response_headers, SOUP_ENCODING_CHUNKED);
      soup_message_headers_set_content_type (response_headers, server->content_type, NULL);
      soup_message_body_append (soup_server_message_get_response_body (msg),
                                SOUP_MEMORY_COPY, data, len);
      g_ptr_array_add (server->paused, g_object_ref (msg));
      return;
    }

  soup_server_message_set_response (msg, server->content_type, SOUP_MEMORY_COPY, data, len);
}

static Server *
server_new (void)
{
  Server *server = g_new0 (Server, 1);
  g_autoptr(GError) error = NULL;
  GSList *uris;

  server->server = soup_server_new (NULL, NULL);
  server->headers = g_ptr_array_new_with_free_func (g_free);
  server->paused = g_ptr_array_new_with_free_func (g_object_unref);
  server->client_ports = g_hash_table_new (NULL, NULL);
  server->timeouts = g_ptr_array_new_with_free_func ((GDestroyNotify)g_source_unref);
  server->status = 200;
  server->content_type = g_strdup ("text/event-stream");
  soup_server_add_handler (server->server, NULL, handler, server, NULL);
  soup_server_listen_local (server->server, 0, SOUP_SERVER_LISTEN_IPV4_ONLY, &error);
  g_assert_no_error (error);

  uris = soup_server_get_uris (server->server);
  g_assert_nonnull (uris);
  server->base = g_strdup_printf ("http://127.0.0.1:%d", g_uri_get_port (uris->data));
  g_slist_free_full (uris, (GDestroyNotify)g_uri_unref);

  return server;
}

static void
server_free (Server *server)
{
  for (guint i = 0; i < server->timeouts->len; i++)
    g_source_destroy (g_ptr_array_index (server->timeouts, i));
  g_ptr_array_unref (server->timeouts);
  soup_server_disconnect (server->server);
  g_clear_object (&server->server);
  g_ptr_array_unref (server->paused);
  g_ptr_array_unref (server->headers);
  g_hash_table_unref (server->client_ports);
  g_clear_pointer (&server->body, g_bytes_unref);
  g_clear_pointer (&server->request_headers, soup_message_headers_unref);
  g_free (server->request_body);
  g_free (server->path);
  g_free (server->content_type);
  g_free (server->base);
  g_free (server);

  /* Let the closed connections settle before the next test. */
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Server, server_free)

static void
server_answer (Server     *server,
               guint       status,
               const char *content_type,
               const char *body,
               gssize      len)
{
  server->status = status;
  g_free (server->content_type);
  server->content_type = g_strdup (content_type);
  g_clear_pointer (&server->body, g_bytes_unref);
  if (body != NULL)
    server->body = g_bytes_new (body, len < 0 ? strlen (body) : (gsize)len);
}

static void
server_header (Server     *server,
               const char *name,
               const char *value)
{
  g_ptr_array_add (server->headers, g_strdup (name));
  g_ptr_array_add (server->headers, g_strdup (value));
}

static char *
read_fixture (const char *name,
              gsize      *len)
{
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "fixtures", "llm", name, NULL);
  g_autoptr(GError) error = NULL;
  char *contents = NULL;

  g_file_get_contents (path, &contents, len, &error);
  g_assert_no_error (error);

  return contents;
}

static KagedProvider *
provider_new (Kind        kind,
              Server     *server,
              const char *api_key)
{
  g_autoptr(SoupSession) session = kaged_http_session_new ();
  g_autoptr(KagedClock) clock = kaged_fake_clock_new (NOW_MS);
  g_autofree char *openai_base = g_strconcat (server->base, "/v1", NULL);
  KagedProvider *provider = NULL;

  switch (kind)
    {
    case OPENAI:
      provider = kaged_openai_provider_new (session, openai_base, "gpt-4o-mini", api_key);
      break;

    case ANTHROPIC:
      provider = kaged_anthropic_provider_new (session, server->base, "claude-sonnet-4-5", api_key);
      break;

    case OLLAMA:
      provider = kaged_ollama_provider_new (session, server->base, "qwen3:8b", api_key);
      break;

    default:
      g_assert_not_reached ();
    }

  g_object_set (provider, "clock", clock, NULL);
  return provider;
}

static KagedMessage *
message_new (KagedMessageRole  role,
             const char       *content)
{
  KagedMessage *message = kaged_message_new ();

  kaged_message_set_role (message, role);
  kaged_message_set_content (message, content);
  return message;
}

static KagedChat *
chat_new (void)
{
  g_autoptr(GPtrArray) messages = g_ptr_array_new_with_free_func (g_object_unref);

  g_ptr_array_add (messages, message_new (KAGED_MESSAGE_ROLE_SUMMARY, "Earlier: the user likes coffee."));
  g_ptr_array_add (messages, message_new (KAGED_MESSAGE_ROLE_OPERATOR, "Bonjour"));
  g_ptr_array_add (messages, message_new (KAGED_MESSAGE_ROLE_AGENT, "Salut !"));
  g_ptr_array_add (messages, message_new (KAGED_MESSAGE_ROLE_OPERATOR, "Le café ?"));
  g_ptr_array_add (messages, message_new (KAGED_MESSAGE_ROLE_OPERATOR, "Avec du lait."));

  return kaged_chat_new (messages, "Be brief.");
}

typedef struct
{
  GString      *text;
  GString      *thinking;
  GError       *error;
  gboolean      ok;
  gboolean      finished;
  GCancellable *cancel_on_delta;
} Call;

static void
on_delta (KagedChat      *chat,
          KagedDeltaKind  kind,
          const char     *text,
          Call           *call)
{
  g_assert_true (g_utf8_validate (text, -1, NULL));
  g_assert_cmpuint (strlen (text), >, 0);
  g_string_append (kind == KAGED_DELTA_TEXT ? call->text : call->thinking, text);

  if (call->cancel_on_delta != NULL)
    g_cancellable_cancel (call->cancel_on_delta);
}

static void
chat_done (GObject      *object,
           GAsyncResult *result,
           gpointer      user_data)
{
  Call *call = user_data;

  call->ok = kaged_provider_chat_finish (KAGED_PROVIDER (object), result, &call->error);
  call->finished = TRUE;
}

static void
call_clear (Call *call)
{
  g_string_free (call->text, TRUE);
  g_string_free (call->thinking, TRUE);
  g_clear_error (&call->error);
}

static void
run_chat (KagedProvider *provider,
          KagedChat     *chat,
          GCancellable  *cancellable,
          Call          *call)
{
  gulong handler_id;

  call->text = g_string_new (NULL);
  call->thinking = g_string_new (NULL);
  call->error = NULL;
  call->ok = FALSE;
  call->finished = FALSE;

  handler_id = g_signal_connect (chat, "delta", G_CALLBACK (on_delta), call);
  kaged_provider_chat_async (provider, chat, cancellable, chat_done, call);
  while (!call->finished)
    g_main_context_iteration (NULL, TRUE);
  g_signal_handler_disconnect (chat, handler_id);

  g_assert_true (call->ok == (call->error == NULL));
}

static const char *
stream_type (Kind kind)
{
  return kind == OLLAMA ? "application/x-ndjson" : "text/event-stream";
}

/* One call: a server the test starts, a provider pointed at it, a chat. */
typedef struct
{
  Server        *server;
  KagedProvider *provider;
  KagedChat     *chat;
  Call           call;
} Case;

static Case *
case_new (Kind        kind,
          const char *api_key)
{
  Case *c = g_new0 (Case, 1);

  c->server = server_new ();
  c->provider = provider_new (kind, c->server, api_key);
  c->chat = chat_new ();

  return c;
}

static void
case_free (Case *c)
{
  if (c->call.text != NULL)
    call_clear (&c->call);
  g_clear_object (&c->chat);
  g_clear_object (&c->provider);
  server_free (c->server);
  g_free (c);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Case, case_free)

/* Runs the chat; what an earlier run of the case left is cleared first. */
static void
case_run (Case         *c,
          GCancellable *cancellable)
{
  if (c->call.text != NULL)
    call_clear (&c->call);
  run_chat (c->provider, c->chat, cancellable, &c->call);
}

/* Each provider's fixture. */
static const char * const fixtures[] = {
  "openai-stream.sse", "anthropic-stream.sse", "ollama-stream.ndjson",
};

/* The first bytes of each fixture up to (not including) its Nth delta-bearing piece. */
static const struct {
  const char *cut_after;
  const char *partial;
} cuts[] = {
  [OPENAI] = { "\"content\":\"café\"", "Bonjour, le café" },
  [ANTHROPIC] = { "trois « r »", "Il y a trois « r »" },
  [OLLAMA] = { "、世界", "こんにちは、世界" },
};

static gsize
cut_length (const char *body,
            const char *after)
{
  const char *at = strstr (body, after);
  const char *end;

  g_assert_nonnull (at);
  end = strstr (at, "\n\n");
  if (end == NULL || strstr (at, "\n") < end)
    end = strchr (at, '\n');
  /* Keep the event's ending, so the cut falls between two events. */
  while (*end == '\n')
    end++;
  return end - body;
}

/* Answers with the stream @name, whole or cut just after @cut_after. */
static void
case_answer_fixture (Case       *c,
                     Kind        kind,
                     const char *name,
                     const char *cut_after)
{
  g_autofree char *body = NULL;
  gsize len = 0;

  body = read_fixture (name, &len);
  if (cut_after != NULL)
    len = cut_length (body, cut_after);
  server_answer (c->server, 200, stream_type (kind), body, len);
}

static JsonObject *
request_json (Server      *server,
              JsonParser **parser)
{
  g_autoptr(GError) error = NULL;

  *parser = json_parser_new ();
  json_parser_load_from_data (*parser, server->request_body, -1, &error);
  g_assert_no_error (error);
  return json_node_get_object (json_parser_get_root (*parser));
}

/* The chat of chat_new() as OpenAI and Ollama take it. */
static const char * const chat_messages[] = {
  "system", "Be brief.",
  "system", "Earlier: the user likes coffee.",
  "user", "Bonjour",
  "assistant", "Salut !",
  "user", "Le café ?",
  "user", "Avec du lait.",
  NULL,
};

/* And as Anthropic takes it: system apart, one turn a role. */
static const char * const merged_messages[] = {
  "user", "Bonjour",
  "assistant", "Salut !",
  "user", "Le café ?\n\nAvec du lait.",
  NULL,
};

typedef struct
{
  const char        *path;
  Kind               kind;
  const char        *api_key;
  const char        *fixture;
  const char        *content_type;

  /* What the reply was */
  const char        *text;
  const char        *thinking;
  const char        *finish_reason;
  gint64             input_tokens;    /* -1: not said */
  gint64             output_tokens;

  /* What was asked; request_path NULL: the request is not looked at */
  const char        *request_path;
  const char        *model;
  const char        *system;
  gint64             max_tokens;      /* -1: none sent */
  gboolean           include_usage;
  const char * const *messages;
} StreamRow;

static const StreamRow stream_rows[] = {
  { "/providers/openai/stream", OPENAI, API_KEY, "openai-stream.sse", "text/event-stream",
    "Bonjour, le café est prêt ☕.", "", "stop", 19, 9,
    "/v1/chat/completions", "gpt-4o-mini", NULL, -1, TRUE, chat_messages },
  { "/providers/openai/reasoning-without-key", OPENAI, NULL, "openai-reasoning.sse",
    "text/event-stream; charset=utf-8",
    "2 + 2 = 4", "The user asks for 2+2.", "length", -1, 17,
    NULL, NULL, NULL, -1, FALSE, NULL },
  { "/providers/anthropic/stream", ANTHROPIC, API_KEY, "anthropic-stream.sse", "text/event-stream",
    "Il y a trois « r » dans “strawberry” 🍓.", "Let me count the letters.", "end_turn", 472, 58,
    "/v1/messages", "claude-sonnet-4-5", "Be brief.\n\nEarlier: the user likes coffee.", 4096, FALSE,
    merged_messages },
  { "/providers/ollama/stream", OLLAMA, NULL, "ollama-stream.ndjson", "application/x-ndjson",
    "こんにちは、世界！", "Greeting in Japanese…simple.", "stop", 26, 282,
    "/api/chat", "qwen3:8b", NULL, -1, FALSE, chat_messages },
};

/* How the key went: as x-api-key to Anthropic, else as a bearer token. */
static void
assert_key_sent (Server     *server,
                 Kind        kind,
                 const char *api_key)
{
  SoupMessageHeaders *headers = server->request_headers;
  g_autofree char *bearer = NULL;

  if (kind == ANTHROPIC)
    {
      g_assert_cmpstr (soup_message_headers_get_one (headers, "x-api-key"), ==, api_key);
      g_assert_cmpstr (soup_message_headers_get_one (headers, "anthropic-version"), ==, "2023-06-01");
      g_assert_null (soup_message_headers_get_one (headers, "Authorization"));
      return;
    }

  if (api_key != NULL)
    bearer = g_strconcat ("Bearer ", api_key, NULL);
  g_assert_cmpstr (soup_message_headers_get_one (headers, "Authorization"), ==, bearer);
}

static void
assert_request (const StreamRow *row,
                Server          *server)
{
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *request;
  JsonArray *messages;
  guint n = 0;

  g_assert_cmpstr (server->path, ==, row->request_path);

  request = request_json (server, &parser);
  g_assert_cmpstr (json_object_get_string_member (request, "model"), ==, row->model);
  g_assert_true (json_object_get_boolean_member (request, "stream"));
  g_assert_cmpstr (json_object_get_string_member_with_default (request, "system", NULL), ==, row->system);
  g_assert_cmpint (json_object_get_int_member_with_default (request, "max_tokens", -1), ==, row->max_tokens);
  if (row->include_usage)
    g_assert_true (json_object_get_boolean_member (json_object_get_object_member (request, "stream_options"),
                                                   "include_usage"));
  else
    g_assert_false (json_object_has_member (request, "stream_options"));

  messages = json_object_get_array_member (request, "messages");
  for (; row->messages[2 * n] != NULL; n++)
    {
      JsonObject *message = json_array_get_object_element (messages, n);

      g_assert_cmpstr (json_object_get_string_member (message, "role"), ==, row->messages[2 * n]);
      g_assert_cmpstr (json_object_get_string_member (message, "content"), ==, row->messages[2 * n + 1]);
    }
  g_assert_cmpuint (json_array_get_length (messages), ==, n);
}

static void
test_stream (gconstpointer data)
{
  const StreamRow *row = data;
  g_autoptr(Case) c = case_new (row->kind, row->api_key);
  g_autofree char *body = NULL;
  gsize len = 0;

  body = read_fixture (row->fixture, &len);
  server_answer (c->server, 200, row->content_type, body, len);
  case_run (c, NULL);

  g_assert_no_error (c->call.error);
  g_assert_cmpstr (c->call.text->str, ==, row->text);
  g_assert_cmpstr (c->call.thinking->str, ==, row->thinking);
  g_assert_cmpstr (kaged_chat_get_finish_reason (c->chat), ==, row->finish_reason);
  if (row->input_tokens >= 0)
    g_assert_cmpint (kaged_chat_get_input_tokens (c->chat), ==, row->input_tokens);
  g_assert_cmpint (kaged_chat_get_output_tokens (c->chat), ==, row->output_tokens);

  assert_key_sent (c->server, row->kind, row->api_key);
  if (row->request_path != NULL)
    assert_request (row, c->server);
}

typedef struct
{
  Kind             kind;
  guint            status;
  const char      *content_type;
  const char      *body;
  const char      *header_name;
  const char      *header_value;
  KagedRetryClass  retry_class;
  gint64           server_wait_ms;
  const char      *wait_source;
} ErrorRow;

static void
test_error_rows (void)
{
  static const ErrorRow rows[] = {
    { OPENAI, 429, "application/json",
      "{\"error\":{\"message\":\"Rate limit reached for gpt-4o-mini. Please try again in 1.5s.\",\"type\":\"requests\",\"param\":null,\"code\":\"rate_limit_exceeded\"}}",
      "retry-after-ms", "1500", KAGED_RETRY_CLASS_RATE_LIMITED, 1500, "retry-after-ms" },
    { OPENAI, 429, "application/json",
      "{\"error\":{\"message\":\"Rate limit reached.\",\"code\":\"rate_limit_exceeded\"}}",
      "retry-after", "Sun, 29 Nov 2026 20:00:30 GMT", KAGED_RETRY_CLASS_RATE_LIMITED, 30000, "retry-after" },
    { OPENAI, 429, "application/json",
      "{\"error\":{\"message\":\"Rate limit reached on tokens per day.\",\"code\":\"rate_limit_exceeded\"}}",
      "x-ratelimit-reset-tokens", "1h2m3s", KAGED_RETRY_CLASS_RATE_LIMITED, 3723000, "x-ratelimit-reset" },
    { OPENAI, 429, "application/json",
      "{\"error\":{\"message\":\"You exceeded your current quota, please check your plan and billing details.\",\"type\":\"insufficient_quota\",\"param\":null,\"code\":\"insufficient_quota\"}}",
      NULL, NULL, KAGED_RETRY_CLASS_QUOTA_EXHAUSTED, -1, NULL },
    { OPENAI, 429, "application/json",
      "{\"error\":{\"message\":\"Organization spend limit reached.\",\"code\":\"organization_spend_limit_exceeded\"}}",
      NULL, NULL, KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED, -1, NULL },
    { OPENAI, 400, "application/json",
      "{\"error\":{\"message\":\"This model's maximum context length is 128000 tokens.\",\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}",
      NULL, NULL, KAGED_RETRY_CLASS_CONTEXT_OVERFLOW, -1, NULL },
    { OPENAI, 401, "application/json",
      "{\"error\":{\"message\":\"Incorrect API key provided.\",\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}",
      NULL, NULL, KAGED_RETRY_CLASS_AUTH_FAILED, -1, NULL },
    { OPENAI, 404, "application/json",
      "{\"error\":{\"message\":\"The model `gpt-9` does not exist.\",\"code\":\"model_not_found\"}}",
      NULL, NULL, KAGED_RETRY_CLASS_INVALID_REQUEST, -1, NULL },
    { OPENAI, 422, "application/json", "{\"detail\":\"bad\"}", NULL, NULL, KAGED_RETRY_CLASS_INVALID_REQUEST, -1, NULL },
    { OPENAI, 408, "text/plain", "Request Timeout", NULL, NULL, KAGED_RETRY_CLASS_TIMEOUT, -1, NULL },
    { OPENAI, 500, "application/json", "{\"error\":{\"message\":\"The server had an error.\",\"type\":\"server_error\"}}",
      NULL, NULL, KAGED_RETRY_CLASS_SERVER_ERROR, -1, NULL },
    { OPENAI, 502, "text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>",
      NULL, NULL, KAGED_RETRY_CLASS_SERVER_ERROR, -1, NULL },
    { OPENAI, 503, "text/plain", "upstream connect error", "retry-after", "2",
      KAGED_RETRY_CLASS_OVERLOADED, 2000, "retry-after" },
    { OPENAI, 504, "text/plain", "", NULL, NULL, KAGED_RETRY_CLASS_SERVER_ERROR, -1, NULL },
    { OPENAI, 200, "text/html", "<!DOCTYPE html><html><body>Sign in to the Wi-Fi</body></html>",
      NULL, NULL, KAGED_RETRY_CLASS_PROTOCOL_ERROR, -1, NULL },
    { OPENAI, 200, "application/json",
      "{\"error\":{\"message\":\"Rate limit exceeded: free-models-per-min.\",\"code\":\"rate_limit_exceeded\"}}",
      "retry-after", "20", KAGED_RETRY_CLASS_RATE_LIMITED, 20000, "retry-after" },
    { ANTHROPIC, 529, "application/json",
      "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"},\"request_id\":\"req_011CSHoEeqs5C35K2UUqR7Fy\"}",
      "retry-after", "7", KAGED_RETRY_CLASS_OVERLOADED, 7000, "retry-after" },
    { ANTHROPIC, 429, "application/json",
      "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of request tokens has exceeded your per-minute rate limit\"}}",
      "anthropic-ratelimit-tokens-reset", "2026-11-29T20:00:42Z", KAGED_RETRY_CLASS_RATE_LIMITED, 42000,
      "anthropic-ratelimit-reset" },
    { ANTHROPIC, 400, "application/json",
      "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 208656 tokens > 200000 maximum\"}}",
      NULL, NULL, KAGED_RETRY_CLASS_CONTEXT_OVERFLOW, -1, NULL },
    { ANTHROPIC, 400, "application/json",
      "{\"type\":\"error\",\"error\":{\"type\":\"billing_error\",\"message\":\"Your credit balance is too low to access the Anthropic API.\"}}",
      NULL, NULL, KAGED_RETRY_CLASS_QUOTA_EXHAUSTED, -1, NULL },
    { ANTHROPIC, 401, "application/json",
      "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}",
      NULL, NULL, KAGED_RETRY_CLASS_AUTH_FAILED, -1, NULL },
    { ANTHROPIC, 403, "application/json",
      "{\"type\":\"error\",\"error\":{\"type\":\"permission_error\",\"message\":\"Not allowed\"}}",
      NULL, NULL, KAGED_RETRY_CLASS_AUTH_FAILED, -1, NULL },
    { ANTHROPIC, 404, "application/json",
      "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model: claude-9\"}}",
      NULL, NULL, KAGED_RETRY_CLASS_INVALID_REQUEST, -1, NULL },
    { ANTHROPIC, 500, "application/json",
      "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}",
      "x-should-retry", "false", KAGED_RETRY_CLASS_SERVER_ERROR, -1, NULL },
    { OLLAMA, 404, "application/json", "{\"error\":\"model \\\"llama9\\\" not found, try pulling it first\"}",
      NULL, NULL, KAGED_RETRY_CLASS_INVALID_REQUEST, -1, NULL },
    { OLLAMA, 400, "application/json", "{\"error\":\"invalid message format\"}",
      NULL, NULL, KAGED_RETRY_CLASS_INVALID_REQUEST, -1, NULL },
    { OLLAMA, 500, "application/json",
      "{\"error\":\"model requires more system memory (12.0 GiB) than is available (8.0 GiB)\"}",
      NULL, NULL, KAGED_RETRY_CLASS_SERVER_ERROR, -1, NULL },
    { OLLAMA, 503, "application/json", "{\"error\":\"server busy, please try again.  maximum pending requests exceeded\"}",
      NULL, NULL, KAGED_RETRY_CLASS_OVERLOADED, -1, NULL },
    { OLLAMA, 200, "text/plain", "Ollama is running", NULL, NULL, KAGED_RETRY_CLASS_PROTOCOL_ERROR, -1, NULL },
  };

  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    {
      g_autoptr(Case) c = case_new (rows[i].kind, API_KEY);
      GError *error;

      g_test_message ("row %u: HTTP %u %s", i, rows[i].status, rows[i].body);
      server_answer (c->server, rows[i].status, rows[i].content_type, rows[i].body, -1);
      server_header (c->server, "x-request-id", "req_test_1");
      if (rows[i].header_name != NULL)
        server_header (c->server, rows[i].header_name, rows[i].header_value);

      case_run (c, NULL);
      error = c->call.error;

      g_assert_error (error, KAGED_PROVIDER_ERROR, (int)rows[i].retry_class);
      g_assert_cmpint (kaged_provider_error_get_retryable (error), ==,
                       kaged_retry_class_is_retryable (rows[i].retry_class));
      g_assert_cmpuint (kaged_provider_error_get_http_status (error), ==, rows[i].status);
      g_assert_cmpint (kaged_provider_error_get_server_wait_ms (error), ==, rows[i].server_wait_ms);
      g_assert_cmpstr (kaged_provider_error_get_wait_source (error), ==, rows[i].wait_source);
      g_assert_cmpstr (kaged_provider_error_get_request_id (error), ==, "req_test_1");
      g_assert_false (kaged_chat_has_delta (c->chat));
      g_assert_cmpstr (c->call.text->str, ==, "");
      g_assert_cmpuint (c->server->n_requests, ==, 1);

      if (g_strcmp0 (rows[i].header_name, "x-should-retry") == 0)
        g_assert_cmpint (kaged_provider_error_get_should_retry (error), ==, 0);
      else
        g_assert_cmpint (kaged_provider_error_get_should_retry (error), ==, -1);
    }
}

static void
test_provider_message (void)
{
  g_autoptr(Case) c = case_new (OLLAMA, NULL);

  server_answer (c->server, 404, "application/json",
                 "{\"error\":\"model \\\"qwen3:8b\\\" not found, try pulling it first\"}", -1);
  case_run (c, NULL);

  g_assert_error (c->call.error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_INVALID_REQUEST);
  g_assert_cmpstr (kaged_provider_error_get_provider_message (c->call.error), ==,
                   "model \"qwen3:8b\" not found, try pulling it first");
  g_assert_cmpstr (c->call.error->message, ==,
                   "The provider refused the request (HTTP 404): model \"qwen3:8b\" not found, try pulling it first");
}

static void
test_stream_cut (void)
{
  for (Kind kind = OPENAI; kind <= OLLAMA; kind++)
    {
      g_autoptr(Case) c = case_new (kind, API_KEY);

      case_answer_fixture (c, kind, fixtures[kind], cuts[kind].cut_after);
      server_header (c->server, "request-id", "req_cut");
      case_run (c, NULL);

      g_assert_error (c->call.error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_NETWORK);
      g_assert_true (kaged_provider_error_get_retryable (c->call.error));
      g_assert_cmpstr (kaged_provider_error_get_request_id (c->call.error), ==, "req_cut");
      g_assert_true (kaged_chat_has_delta (c->chat));
      g_assert_cmpstr (c->call.text->str, ==, cuts[kind].partial);
    }
}

static void
test_closed_without_answer (void)
{
  for (Kind kind = OPENAI; kind <= OLLAMA; kind++)
    {
      g_autoptr(Case) c = case_new (kind, API_KEY);

      server_answer (c->server, 200, "text/event-stream", "", 0);
      case_run (c, NULL);

      g_assert_error (c->call.error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_NETWORK);
      g_assert_false (kaged_chat_has_delta (c->chat));
    }
}

/* An error the provider reports inside a successful stream. */
typedef struct
{
  const char      *path;
  Kind             kind;
  const char      *api_key;
  const char      *body;
  const char      *request_id;        /* sent as request-id, and expected back */
  KagedRetryClass  retry_class;
  gboolean         retryable;
  const char      *provider_message;  /* NULL: not looked at */
  const char      *text;              /* what arrived before the error */
} StreamErrorRow;

static const StreamErrorRow stream_error_rows[] = {
  /* Before any delta it is still the open call: nothing delivered. */
  { "/providers/anthropic/overloaded-in-stream", ANTHROPIC, API_KEY,
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n"
    "event: ping\n"
    "data: {\"type\":\"ping\"}\n\n"
    "event: error\n"
    "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    "req_in_stream", KAGED_RETRY_CLASS_OVERLOADED, TRUE, "Overloaded", "" },
  { "/providers/anthropic/overloaded-in-stream", ANTHROPIC, API_KEY,
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half a\"}}\n\n"
    "event: error\n"
    "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    NULL, KAGED_RETRY_CLASS_OVERLOADED, TRUE, NULL, "Half a" },
  { "/providers/openai/error-in-stream", OPENAI, API_KEY,
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n"
    "data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\"}}\n\n",
    NULL, KAGED_RETRY_CLASS_SERVER_ERROR, TRUE, NULL, "Hi" },
  { "/providers/ollama/error-line", OLLAMA, NULL,
    "{\"model\":\"qwen3:8b\",\"message\":{\"role\":\"assistant\",\"content\":\"Un\"},\"done\":false}\n"
    "{\"error\":\"an error was encountered while running the model: CUDA error\"}\n",
    NULL, KAGED_RETRY_CLASS_SERVER_ERROR, TRUE, "an error was encountered while running the model: CUDA error", "Un" },
};

/* Runs every row filed under the test's path. */
static void
test_stream_error (gconstpointer data)
{
  const char *path = data;

  for (guint i = 0; i < G_N_ELEMENTS (stream_error_rows); i++)
    {
      const StreamErrorRow *row = &stream_error_rows[i];
      g_autoptr(Case) c = NULL;

      if (strcmp (row->path, path) != 0)
        continue;

      c = case_new (row->kind, row->api_key);
      server_answer (c->server, 200, stream_type (row->kind), row->body, -1);
      if (row->request_id != NULL)
        server_header (c->server, "request-id", row->request_id);
      case_run (c, NULL);

      g_assert_error (c->call.error, KAGED_PROVIDER_ERROR, (int)row->retry_class);
      g_assert_cmpint (kaged_provider_error_get_retryable (c->call.error), ==, row->retryable);
      if (row->provider_message != NULL)
        g_assert_cmpstr (kaged_provider_error_get_provider_message (c->call.error), ==,
                         row->provider_message);
      if (row->request_id != NULL)
        g_assert_cmpstr (kaged_provider_error_get_request_id (c->call.error), ==, row->request_id);
      g_assert_cmpint (kaged_chat_has_delta (c->chat), ==, row->text[0] != '\0');
      g_assert_cmpstr (c->call.text->str, ==, row->text);
    }
}

static void
test_unknown_fields_and_events (void)
{
  g_autoptr(Case) c = case_new (OPENAI, API_KEY);

  server_answer (c->server, 200, "text/event-stream",
                 ": OPENROUTER PROCESSING\n\n"
                 "event: keepalive\ndata: {\"ts\":1}\n\n"
                 "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"A\",\"annotations\":[]},\"logprobs\":{\"content\":[]},\"native_finish_reason\":null,\"finish_reason\":null}],\"provider\":\"Some\",\"usage\":null}\n\n"
                 "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"not ours\"}}]}\n\n"
                 "id: 7\nretry: 3000\ndata: {\"choices\":null,\"obfuscation\":\"abc\"}\n\n"
                 "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"B\"},\"finish_reason\":\"stop\"}]}\n\n"
                 "data: [DONE]\n\n",
                 -1);
  case_run (c, NULL);

  g_assert_no_error (c->call.error);
  g_assert_cmpstr (c->call.text->str, ==, "AB");
  g_assert_cmpstr (kaged_chat_get_finish_reason (c->chat), ==, "stop");
}

static void
test_over_cap (void)
{
  g_autoptr(Case) c = case_new (OPENAI, API_KEY);
  g_autoptr(GString) body = g_string_new ("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"");

  for (guint i = 0; i < 256 * 1024; i++)
    g_string_append_c (body, 'z');
  g_string_append (body, "\"}}]}\n\ndata: [DONE]\n\n");

  g_object_set (c->provider, "max-event-size", (guint64)(64 * 1024), NULL);
  server_answer (c->server, 200, "text/event-stream", body->str, body->len);
  case_run (c, NULL);

  g_assert_error (c->call.error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_assert_false (kaged_provider_error_get_retryable (c->call.error));
  g_assert_cmpstr (c->call.text->str, ==, "");
}

typedef struct
{
  Server       *server;
  GCancellable *cancellable;
} CancelOnRequest;

/* Cancels once the server has the request, however slow the machine. */
static gboolean
cancel_on_request (gpointer user_data)
{
  CancelOnRequest *data = user_data;

  if (data->server->n_requests == 0)
    return G_SOURCE_CONTINUE;

  g_cancellable_cancel (data->cancellable);
  return G_SOURCE_REMOVE;
}

static void
test_cancel_open (void)
{
  for (Kind kind = OPENAI; kind <= OLLAMA; kind++)
    {
      g_autoptr(Case) c = case_new (kind, API_KEY);
      g_autoptr(GCancellable) cancellable = g_cancellable_new ();
      gint64 started = g_get_monotonic_time ();

      CancelOnRequest data = { NULL, cancellable };

      c->server->mode = MODE_STALL_OPEN;
      data.server = c->server;
      g_timeout_add (10, cancel_on_request, &data);
      case_run (c, cancellable);

      g_assert_error (c->call.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
      g_assert_cmpint (g_get_monotonic_time () - started, <, 5 * G_USEC_PER_SEC);
      g_assert_cmpuint (c->server->n_requests, ==, 1);
    }

  /* Cancelled before it started: nothing is sent. */
  {
    g_autoptr(Case) c = case_new (OPENAI, API_KEY);
    g_autoptr(GCancellable) cancellable = g_cancellable_new ();

    g_cancellable_cancel (cancellable);
    case_run (c, cancellable);
    g_assert_error (c->call.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  }
}

static const char *stall_bodies[] = {
  "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Partial\"}}]}\n\n",
  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Partial\"}}\n\n",
  "{\"message\":{\"role\":\"assistant\",\"content\":\"Partial\"},\"done\":false}\n",
};

/* A case whose server sends @body, then keeps the connection open. */
static Case *
case_new_stalled (Kind        kind,
                  const char *body)
{
  Case *c = case_new (kind, API_KEY);

  c->server->mode = MODE_STALL_BODY;
  server_answer (c->server, 200, stream_type (kind), body, -1);

  return c;
}

static void
test_cancel_stream (void)
{
  for (Kind kind = OPENAI; kind <= OLLAMA; kind++)
    {
      g_autoptr(Case) c = case_new_stalled (kind, stall_bodies[kind]);
      g_autoptr(GCancellable) cancellable = g_cancellable_new ();

      c->call.cancel_on_delta = cancellable;
      case_run (c, cancellable);

      g_assert_error (c->call.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
      g_assert_cmpstr (c->call.text->str, ==, "Partial");
    }
}

static void
test_first_byte_timeout (void)
{
  g_autoptr(Case) c = case_new (ANTHROPIC, API_KEY);

  c->server->mode = MODE_STALL_OPEN;
  g_object_set (c->provider, "first-byte-timeout-ms", 150, NULL);
  case_run (c, NULL);

  g_assert_error (c->call.error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_TIMEOUT);
  g_assert_true (kaged_provider_error_get_retryable (c->call.error));
  g_assert_cmpuint (kaged_provider_error_get_http_status (c->call.error), ==, 0);
}

static void
test_idle_timeout (void)
{
  /* After the first delta a stalled stream is a cut: network, partial kept. */
  for (Kind kind = OPENAI; kind <= OLLAMA; kind++)
    {
      g_autoptr(Case) c = case_new_stalled (kind, stall_bodies[kind]);

      g_object_set (c->provider, "idle-timeout-ms", 150, NULL);
      case_run (c, NULL);

      g_assert_error (c->call.error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_NETWORK);
      g_assert_true (kaged_provider_error_get_retryable (c->call.error));
      g_assert_cmpstr (c->call.text->str, ==, "Partial");
    }

  /* Before it, a timeout. */
  {
    g_autoptr(Case) c = case_new_stalled (OPENAI, ": waiting\n\n");

    g_object_set (c->provider, "idle-timeout-ms", 150, NULL);
    case_run (c, NULL);

    g_assert_error (c->call.error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_TIMEOUT);
    g_assert_false (kaged_chat_has_delta (c->chat));
  }
}

/* The end marker completes the reply, even if the server keeps sending nothing. */
static void
test_done_while_open (void)
{
  for (Kind kind = OPENAI; kind <= OLLAMA; kind++)
    {
      g_autoptr(Case) c = case_new (kind, API_KEY);
      gint64 started = g_get_monotonic_time ();

      c->server->mode = MODE_STALL_BODY;
      case_answer_fixture (c, kind, fixtures[kind], NULL);
      case_run (c, NULL);

      g_assert_no_error (c->call.error);
      g_assert_cmpuint (c->call.text->len, >, 0);
      g_assert_cmpint (g_get_monotonic_time () - started, <, 10 * G_USEC_PER_SEC);
    }
}

static gboolean
set_flag_cb (gpointer data)
{
  *(gboolean *)data = TRUE;
  return G_SOURCE_REMOVE;
}

/* A reply is complete at its end marker, and the rest of the body is still
 * read, after the caller has its answer: the connection is then used again,
 * without a new TCP (or TLS) handshake. */
static void
test_keeps_connection (void)
{
  for (Kind kind = OPENAI; kind <= OLLAMA; kind++)
    {
      g_autoptr(Case) c = case_new (kind, API_KEY);
      gboolean settled = FALSE;

      c->server->mode = MODE_END_LATER;
      case_answer_fixture (c, kind, fixtures[kind], NULL);
      case_run (c, NULL);
      g_assert_no_error (c->call.error);
      /* The answer did not wait for the end of the body. */
      g_assert_cmpuint (c->server->n_ended_later, ==, 0);

      /* Now the end of the body, read after the answer. */
      server_end_bodies_now (c->server);
      while (c->server->n_ended_later < 1)
        g_main_context_iteration (NULL, TRUE);
      g_timeout_add (kaged_test_usec (200 * 1000) / 1000, set_flag_cb, &settled);
      while (!settled)
        g_main_context_iteration (NULL, TRUE);

      g_clear_object (&c->chat);
      c->chat = chat_new ();
      case_run (c, NULL);
      g_assert_no_error (c->call.error);

      g_assert_cmpuint (c->server->n_requests, ==, 2);
      g_assert_cmpuint (g_hash_table_size (c->server->client_ports), ==, 1);
    }
}

static void
test_connection_refused (void)
{
  g_autofree char *base = NULL;
  g_autoptr(KagedProvider) provider = NULL;
  g_autoptr(KagedChat) chat = chat_new ();
  Call call = { 0, };

  {
    g_autoptr(Server) server = server_new ();

    base = g_strdup (server->base);
  }

  provider = kaged_ollama_provider_new (NULL, base, "qwen3:8b", NULL);
  run_chat (provider, chat, NULL, &call);

  g_assert_error (call.error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_NETWORK);
  g_assert_true (kaged_provider_error_get_retryable (call.error));
  g_assert_cmpuint (kaged_provider_error_get_http_status (call.error), ==, 0);
  call_clear (&call);
}

static void
test_bad_base_url (void)
{
  g_autoptr(KagedProvider) provider = kaged_openai_provider_new (NULL, "not an address", "m", NULL);
  g_autoptr(KagedChat) chat = chat_new ();
  Call call = { 0, };

  run_chat (provider, chat, NULL, &call);
  g_assert_error (call.error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_INVALID_REQUEST);
  g_assert_false (kaged_provider_error_get_retryable (call.error));
  call_clear (&call);
}

static void
test_bad_certificate (void)
{
  g_autofree char *pem = g_test_build_filename (G_TEST_DIST, "fixtures", "llm", "self-signed.pem", NULL);
  g_autoptr(GTlsCertificate) certificate = NULL;
  g_autoptr(SoupServer) server = NULL;
  g_autoptr(KagedProvider) provider = NULL;
  g_autoptr(KagedChat) chat = chat_new ();
  g_autoptr(GError) error = NULL;
  g_autofree char *base = NULL;
  GSList *uris;
  Call call = { 0, };

  if (!g_tls_backend_supports_tls (g_tls_backend_get_default ()))
    {
      g_test_skip ("No TLS backend");
      return;
    }

  certificate = g_tls_certificate_new_from_file (pem, &error);
  g_assert_no_error (error);
  server = soup_server_new ("tls-certificate", certificate, NULL);
  soup_server_listen_local (server, 0, SOUP_SERVER_LISTEN_IPV4_ONLY | SOUP_SERVER_LISTEN_HTTPS, &error);
  g_assert_no_error (error);
  uris = soup_server_get_uris (server);
  base = g_strdup_printf ("https://127.0.0.1:%d", g_uri_get_port (uris->data));
  g_slist_free_full (uris, (GDestroyNotify)g_uri_unref);

  /* A self-signed certificate is refused, and that is never retried. */
  provider = kaged_anthropic_provider_new (NULL, base, "claude-sonnet-4-5", API_KEY);
  run_chat (provider, chat, NULL, &call);

  g_assert_error (call.error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_assert_false (kaged_provider_error_get_retryable (call.error));
  g_assert_cmpuint (kaged_provider_error_get_http_status (call.error), ==, 0);
  call_clear (&call);

  soup_server_disconnect (server);
}

/* Reads a whole request from @connection, as a server does before it answers. */
static void
read_request (GSocketConnection *connection)
{
  GInputStream *input = g_io_stream_get_input_stream (G_IO_STREAM (connection));
  g_autoptr(GString) request = g_string_new (NULL);
  gsize content_length = 0;
  const char *end = NULL;

  for (;;)
    {
      g_autoptr(GError) error = NULL;
      char buffer[4096];
      gssize n;

      if (end == NULL && (end = strstr (request->str, "\r\n\r\n")) != NULL)
        {
          const char *length = strstr (request->str, "Content-Length: ");

          g_assert_nonnull (length);
          content_length = g_ascii_strtoull (length + strlen ("Content-Length: "), NULL, 10);
        }
      if (end != NULL && request->len >= (gsize)(end - request->str) + 4 + content_length)
        break;

      n = g_input_stream_read (input, buffer, sizeof buffer, NULL, &error);
      g_assert_no_error (error);
      g_assert_cmpint (n, >, 0);
      g_string_append_len (request, buffer, n);
      end = NULL;
    }
}

static void
write_answer (GSocketConnection *connection,
              const char        *answer)
{
  g_autoptr(GError) error = NULL;

  g_output_stream_write_all (g_io_stream_get_output_stream (G_IO_STREAM (connection)),
                             answer, strlen (answer), NULL, NULL, &error);
  g_assert_no_error (error);
}

/* The next request to @listener, read whole: a connection to answer on. */
static GSocketConnection *
accept_request (GSocketListener *listener)
{
  g_autoptr(GError) error = NULL;
  GSocketConnection *connection = g_socket_listener_accept (listener, NULL, NULL, &error);

  g_assert_no_error (error);
  read_request (connection);

  return connection;
}

/* Listens on a port of 127.0.0.1 that a thread serves by hand; returns
 * the base URL of an OpenAI-compatible provider there. */
static char *
listen_by_hand (GSocketListener *listener)
{
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) address = g_inet_socket_address_new (loopback, 0);
  g_autoptr(GSocketAddress) effective = NULL;
  g_autoptr(GError) error = NULL;

  g_socket_listener_add_address (listener, address, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP,
                                 NULL, &effective, &error);
  g_assert_no_error (error);

  return g_strdup_printf ("http://127.0.0.1:%u/v1",
                          g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (effective)));
}

/* A server that answers with a length it never delivers, then hangs up. */
static gpointer
hang_up_thread (gpointer user_data)
{
  g_autoptr(GSocketConnection) connection = accept_request (user_data);

  write_answer (connection,
                "HTTP/1.1 200 OK\r\n"
                "Content-Type: text/event-stream\r\n"
                "Content-Length: 100000\r\n"
                "x-request-id: req_hang_up\r\n"
                "\r\n"
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half\"}}]}\n\n");
  g_io_stream_close (G_IO_STREAM (connection), NULL, NULL);

  return NULL;
}

#define TRICKLE_EVENTS 80
#define TRICKLE_GAP_US 2000

/* A server that sends its answer the way a fast model does: one event per
 * chunk, a couple of milliseconds apart. */
static gpointer
trickle_thread (gpointer user_data)
{
  g_autoptr(GSocketConnection) connection = accept_request (user_data);

  write_answer (connection,
                "HTTP/1.1 200 OK\r\n"
                "Content-Type: text/event-stream\r\n"
                "Transfer-Encoding: chunked\r\n"
                "\r\n");

  for (guint i = 0; i <= TRICKLE_EVENTS; i++)
    {
      g_autofree char *event = NULL;
      g_autofree char *chunk = NULL;

      if (i < TRICKLE_EVENTS)
        event = g_strdup_printf ("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w%u \"}}]}\n\n", i);
      else
        event = g_strdup ("data: [DONE]\n\n");
      chunk = g_strdup_printf ("%zx\r\n%s\r\n", strlen (event), event);
      write_answer (connection, chunk);
      g_usleep (TRICKLE_GAP_US);
    }
  write_answer (connection, "0\r\n\r\n");
  g_io_stream_close (G_IO_STREAM (connection), NULL, NULL);

  return NULL;
}

static guint polls;

static int
counting_poll (GPollFD *fds,
               guint    n_fds,
               int      timeout)
{
  polls++;

  return g_poll (fds, n_fds, timeout);
}

/* A fast stream wakes the main loop for a few events at a time, not for
 * each: every wake-up costs the window a share of its frame. */
static void
test_trickle_batched (void)
{
  g_autoptr(GSocketListener) listener = g_socket_listener_new ();
  g_autoptr(KagedProvider) provider = NULL;
  g_autoptr(KagedChat) chat = chat_new ();
  g_autoptr(GString) expected = g_string_new (NULL);
  g_autofree char *base = listen_by_hand (listener);
  GThread *thread;
  Call call = { 0, };

  thread = g_thread_new ("trickle", trickle_thread, listener);

  provider = kaged_openai_provider_new (NULL, base, "gpt-4o-mini", API_KEY);
  polls = 0;
  g_main_context_set_poll_func (NULL, counting_poll);
  run_chat (provider, chat, NULL, &call);
  g_main_context_set_poll_func (NULL, g_poll);
  g_thread_join (thread);

  for (guint i = 0; i < TRICKLE_EVENTS; i++)
    g_string_append_printf (expected, "w%u ", i);
  g_assert_no_error (call.error);
  g_assert_cmpstr (call.text->str, ==, expected->str);
  g_test_message ("%u events, %u main loop wake-ups", TRICKLE_EVENTS, polls);
  g_assert_cmpuint (polls, <=, TRICKLE_EVENTS / 2);
  call_clear (&call);
}

static void
test_hang_up_after_delta (void)
{
  g_autoptr(GSocketListener) listener = g_socket_listener_new ();
  g_autoptr(KagedProvider) provider = NULL;
  g_autoptr(KagedChat) chat = chat_new ();
  g_autofree char *base = listen_by_hand (listener);
  GThread *thread;
  Call call = { 0, };

  thread = g_thread_new ("hang-up", hang_up_thread, listener);

  provider = kaged_openai_provider_new (NULL, base, "gpt-4o-mini", API_KEY);
  run_chat (provider, chat, NULL, &call);
  g_thread_join (thread);

  g_assert_error (call.error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_NETWORK);
  g_assert_true (kaged_provider_error_get_retryable (call.error));
  g_assert_cmpstr (kaged_provider_error_get_request_id (call.error), ==, "req_hang_up");
  g_assert_cmpstr (call.text->str, ==, "Half");
  g_assert_true (kaged_chat_has_delta (chat));
  call_clear (&call);
}

static void
test_key_never_logged (void)
{
  g_autofree char *echo = g_strdup_printf ("{\"error\":{\"message\":\"Incorrect API key provided: %s. You can find your API key at https://example.invalid.\",\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}",
                                           API_KEY);
  g_autofree char *echo_anthropic = g_strdup_printf ("{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key %s\"}}",
                                                     API_KEY);

  g_string_truncate (logged, 0);

  for (Kind kind = OPENAI; kind <= OLLAMA; kind++)
    {
      g_autoptr(Case) c = case_new (kind, API_KEY);
      GParamSpec *pspec;

      /* A success, then a failure whose body repeats the key. */
      case_answer_fixture (c, OPENAI, "openai-stream.sse", NULL);
      case_run (c, NULL);

      g_object_unref (c->chat);
      c->chat = chat_new ();
      server_answer (c->server, 401, "application/json", kind == ANTHROPIC ? echo_anthropic : echo, -1);
      case_run (c, NULL);
      g_assert_error (c->call.error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_AUTH_FAILED);
      g_assert_null (strstr (c->call.error->message, API_KEY));
      g_assert_null (strstr (kaged_provider_error_get_provider_message (c->call.error), API_KEY));
      g_assert_nonnull (strstr (c->call.error->message, "[redacted]"));

      /* The key did reach the server, where it belongs. */
      g_assert_nonnull (strstr (kind == ANTHROPIC
                                  ? soup_message_headers_get_one (c->server->request_headers, "x-api-key")
                                  : soup_message_headers_get_one (c->server->request_headers, "Authorization"),
                                API_KEY));

      /* And it cannot be read back from the provider. */
      pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (c->provider), "api-key");
      g_assert_true (pspec->flags & G_PARAM_WRITABLE);
      g_assert_false (pspec->flags & G_PARAM_READABLE);
    }

  /* Something was logged (debug messages are on), and never the key. */
  g_assert_nonnull (strstr (logged->str, "POST /"));
  g_assert_nonnull (strstr (logged->str, "Request failed"));
  g_assert_null (strstr (logged->str, API_KEY));
}

typedef struct
{
  GString  *text;
  GString  *thinking;
  guint     n_text;
} Deltas;

static void
collect_delta (KagedChat      *chat,
               KagedDeltaKind  kind,
               const char     *text,
               Deltas         *deltas)
{
  g_assert_true (g_utf8_validate (text, -1, NULL));
  g_assert_cmpuint (strlen (text), >, 0);
  if (kind == KAGED_DELTA_TEXT)
    {
      g_string_append (deltas->text, text);
      deltas->n_text++;
    }
  else
    {
      g_string_append (deltas->thinking, text);
    }
}

static void
test_chat_split_characters (void)
{
  g_autoptr(KagedChat) chat = kaged_chat_new (NULL, NULL);
  Deltas deltas = { g_string_new (NULL), g_string_new (NULL), 0 };
  const char *emoji = "\xF0\x9F\x8E\x89";

  g_signal_connect (chat, "delta", G_CALLBACK (collect_delta), &deltas);

  g_assert_false (kaged_chat_has_delta (chat));
  kaged_chat_push_delta (chat, KAGED_DELTA_TEXT, "", 0);
  g_assert_false (kaged_chat_has_delta (chat));

  /* "é" split between two pushes comes out whole. */
  kaged_chat_push_delta (chat, KAGED_DELTA_TEXT, "caf\xC3", -1);
  g_assert_cmpstr (deltas.text->str, ==, "caf");
  g_assert_true (kaged_chat_has_delta (chat));
  kaged_chat_push_delta (chat, KAGED_DELTA_TEXT, "\xA9!", 2);
  g_assert_cmpstr (deltas.text->str, ==, "café!");

  /* A four-byte character pushed one byte at a time, thinking interleaved. */
  for (guint i = 0; i < 4; i++)
    {
      kaged_chat_push_delta (chat, KAGED_DELTA_TEXT, emoji + i, 1);
      kaged_chat_push_delta (chat, KAGED_DELTA_THINKING, &"\xE2\x9C\x93"[i % 3], 1);
    }
  g_assert_cmpstr (deltas.text->str, ==, "café!🎉");
  g_assert_cmpstr (deltas.thinking->str, ==, "✓");

  /* Bytes that can never be valid are repaired at once. */
  kaged_chat_push_delta (chat, KAGED_DELTA_TEXT, "a\xFF" "b\xC0\xAF", 5);
  g_assert_cmpstr (deltas.text->str, ==, "café!🎉a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD");

  /* What is left unfinished at the end is flushed, repaired. */
  kaged_chat_push_delta (chat, KAGED_DELTA_TEXT, " \xE2\x82", 3);
  g_assert_true (g_str_has_suffix (deltas.text->str, " "));
  kaged_chat_flush (chat);
  g_assert_true (g_str_has_suffix (deltas.text->str, " \xEF\xBF\xBD\xEF\xBF\xBD"));
  kaged_chat_flush (chat);
  g_assert_true (g_str_has_suffix (deltas.text->str, " \xEF\xBF\xBD\xEF\xBF\xBD"));

  g_string_free (deltas.text, TRUE);
  g_string_free (deltas.thinking, TRUE);
}

static void
on_attempt (KagedChat    *chat,
            KagedAttempt *attempt,
            guint        *count)
{
  g_assert_cmpuint (attempt->http_status, ==, 529);
  (*count)++;
}

static void
test_chat_attempts_and_usage (void)
{
  g_autoptr(KagedChat) chat = kaged_chat_new (NULL, "sys");
  g_autoptr(KagedAttempt) attempt = kaged_attempt_new ();
  guint count = 0;

  g_signal_connect (chat, "attempt", G_CALLBACK (on_attempt), &count);
  attempt->http_status = 529;
  attempt->retry_class = KAGED_RETRY_CLASS_OVERLOADED;
  kaged_chat_add_attempt (chat, attempt);
  kaged_chat_add_attempt (chat, attempt);
  g_assert_cmpuint (count, ==, 2);
  g_assert_cmpuint (kaged_chat_get_attempts (chat)->len, ==, 2);

  kaged_chat_set_usage (chat, 10, 20);
  g_assert_cmpint (kaged_chat_get_input_tokens (chat), ==, 10);
  g_assert_cmpint (kaged_chat_get_output_tokens (chat), ==, 20);
  g_assert_cmpstr (kaged_chat_get_system_prompt (chat), ==, "sys");
  g_assert_cmpuint (kaged_chat_get_messages (chat)->len, ==, 0);
}

int
main (int   argc,
      char *argv[])
{
  g_setenv ("G_MESSAGES_DEBUG", "all", TRUE);
  logged = g_string_new (NULL);
  g_log_set_writer_func (capture_writer, NULL, NULL);

  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/chat/split-characters", test_chat_split_characters);
  g_test_add_func ("/chat/attempts-and-usage", test_chat_attempts_and_usage);
  for (guint i = 0; i < G_N_ELEMENTS (stream_rows); i++)
    g_test_add_data_func (stream_rows[i].path, &stream_rows[i], test_stream);
  g_test_add_func ("/providers/error-rows", test_error_rows);
  g_test_add_func ("/providers/provider-message", test_provider_message);
  g_test_add_func ("/providers/stream-cut", test_stream_cut);
  g_test_add_func ("/providers/closed-without-answer", test_closed_without_answer);
  for (guint i = 0; i < G_N_ELEMENTS (stream_error_rows); i++)
    {
      /* Rows filed under one path run as one test. */
      if (i == 0 || strcmp (stream_error_rows[i].path, stream_error_rows[i - 1].path) != 0)
        g_test_add_data_func (stream_error_rows[i].path, stream_error_rows[i].path, test_stream_error);
    }
  g_test_add_func ("/providers/unknown-fields-and-events", test_unknown_fields_and_events);
  g_test_add_func ("/providers/over-cap", test_over_cap);
  g_test_add_func ("/providers/cancel-open", test_cancel_open);
  g_test_add_func ("/providers/cancel-stream", test_cancel_stream);
  g_test_add_func ("/providers/first-byte-timeout", test_first_byte_timeout);
  g_test_add_func ("/providers/idle-timeout", test_idle_timeout);
  g_test_add_func ("/providers/done-while-open", test_done_while_open);
  g_test_add_func ("/providers/keeps-connection", test_keeps_connection);
  g_test_add_func ("/providers/connection-refused", test_connection_refused);
  g_test_add_func ("/providers/bad-base-url", test_bad_base_url);
  g_test_add_func ("/providers/bad-certificate", test_bad_certificate);
  g_test_add_func ("/providers/hang-up-after-delta", test_hang_up_after_delta);
  g_test_add_func ("/providers/trickle-batched", test_trickle_batched);
  g_test_add_func ("/providers/key-never-logged", test_key_never_logged);

  return g_test_run ();
}
