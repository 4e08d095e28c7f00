/* kaged-api-server.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * The local HTTP API: JSON over HTTP/1.1 on the loopback interface, each
 * request checked before its body is read (browser origin, bearer token,
 * declared size), then routed to the session manager. Event streams are
 * chunked responses that stay open: the manager's signals are written to
 * them as server-sent events, and the I/O paused by libsoup when a stream
 * runs dry is resumed after each append.
 */

#define G_LOG_DOMAIN "kaged-api"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>
#include <libsoup/soup.h>

#include "kaged-api-server.h"
#include "kaged-api-token.h"
#include "kaged-api-wire.h"
#include "kaged-retry.h"

#define JSON_CONTENT_TYPE  "application/json; charset=utf-8"
#define SSE_CONTENT_TYPE   "text/event-stream; charset=utf-8"
#define API_PREFIX         "/api/v1/"
/* Connections waiting to be accepted. */
#define LISTEN_BACKLOG     256
/* Pages of messages hold at most this many. */
#define MAX_PAGE_SIZE      1000

typedef struct _EventStream EventStream;

struct _KagedApiServer
{
  GObject              parent_instance;

  KagedSessionManager *manager;
  char                *token;
  SoupServer          *server;

  GPtrArray           *urls;        /* char *, the addresses listened on */
  GPtrArray           *streams;     /* EventStream */

  gsize                max_body_size;
  guint                keepalive_interval;
  guint                port;

  gulong               signal_ids[6];
};

struct _EventStream
{
  KagedApiServer    *server;      /* unowned: the server frees its streams */
  SoupServerMessage *msg;
  gint64             session_id;
  gulong             finished_id;
  GSource           *keepalive;
};

typedef enum
{
  ROUTE_SESSIONS,
  ROUTE_SESSION,
  ROUTE_MESSAGES,
  ROUTE_REGENERATE,
  ROUTE_RUN,
  ROUTE_CANCEL,
  ROUTE_EVENTS,
} Route;

typedef struct
{
  Route  route;
  gint64 session_id;
  gint64 item_id;   /* the message or run */
} Target;

G_DEFINE_FINAL_TYPE (KagedApiServer, kaged_api_server, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_MANAGER,
  PROP_TOKEN,
  PROP_PORT,
  PROP_MAX_BODY_SIZE,
  PROP_KEEPALIVE_INTERVAL,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

/* ---------------------------------------------------------------------------
 * Answers
 * ------------------------------------------------------------------------- */

static void
respond_json (SoupServerMessage *msg,
              guint              status,
              JsonBuilder       *builder)
{
  SoupMessageHeaders *headers = soup_server_message_get_response_headers (msg);
  char *data;
  gsize length = 0;

  data = kaged_api_wire_to_string (builder, &length);

  soup_message_headers_replace (headers, "Cache-Control", "no-store");
  soup_message_headers_replace (headers, "X-Content-Type-Options", "nosniff");
  soup_server_message_set_status (msg, status, NULL);
  soup_server_message_set_response (msg, JSON_CONTENT_TYPE, SOUP_MEMORY_TAKE, data, length);
}

static void
respond_error (SoupServerMessage *msg,
               guint              status,
               const char        *code,
               const char        *message)
{
  g_autoptr(JsonBuilder) builder = json_builder_new ();

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "error");
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "code");
  json_builder_add_string_value (builder, code);
  json_builder_set_member_name (builder, "message");
  json_builder_add_string_value (builder, message);
  json_builder_end_object (builder);
  json_builder_end_object (builder);

  respond_json (msg, status, builder);
}

static void
respond_engine_error (SoupServerMessage *msg,
                      const GError      *error)
{
  if (error->domain == KAGED_ENGINE_ERROR)
    {
      switch ((KagedEngineError) error->code)
        {
        case KAGED_ENGINE_ERROR_EMPTY_CONTENT:
          respond_error (msg, SOUP_STATUS_BAD_REQUEST, "empty_content", error->message);
          return;

        case KAGED_ENGINE_ERROR_INVALID_CONTENT:
          respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_content", error->message);
          return;

        case KAGED_ENGINE_ERROR_TOO_LARGE:
          respond_error (msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "content_too_large",
                         error->message);
          return;

        case KAGED_ENGINE_ERROR_NOT_FOUND:
          respond_error (msg, SOUP_STATUS_NOT_FOUND, "not_found", error->message);
          return;

        case KAGED_ENGINE_ERROR_INVALID_ANCHOR:
          respond_error (msg, SOUP_STATUS_CONFLICT, "invalid_anchor", error->message);
          return;

        case KAGED_ENGINE_ERROR_RUN_FINISHED:
          respond_error (msg, SOUP_STATUS_CONFLICT, "run_finished", error->message);
          return;

        case KAGED_ENGINE_ERROR_STORE:
        default:
          break;
        }
    }
  else if (g_error_matches (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND))
    {
      respond_error (msg, SOUP_STATUS_NOT_FOUND, "not_found", error->message);
      return;
    }

  g_warning ("A request failed: %s", error->message);
  respond_error (msg, SOUP_STATUS_INTERNAL_SERVER_ERROR, "store_error", error->message);
}

static void
respond_not_found (SoupServerMessage *msg)
{
  respond_error (msg, SOUP_STATUS_NOT_FOUND, "not_found", _("There is nothing at this address"));
}

/* ---------------------------------------------------------------------------
 * Event streams
 * ------------------------------------------------------------------------- */

static void
event_stream_free (EventStream *stream)
{
  if (stream->keepalive != NULL)
    {
      g_source_destroy (stream->keepalive);
      g_clear_pointer (&stream->keepalive, g_source_unref);
    }
  g_clear_signal_handler (&stream->finished_id, stream->msg);
  g_clear_object (&stream->msg);
  g_free (stream);
}

static void
event_stream_write (EventStream *stream,
                    const char  *frame,
                    gsize        length)
{
  SoupMessageBody *body = soup_server_message_get_response_body (stream->msg);

  soup_message_body_append (body, SOUP_MEMORY_COPY, frame, length);
  soup_server_message_unpause (stream->msg);
}

static gboolean
event_stream_keepalive_cb (gpointer user_data)
{
  static const char comment[] = ": keep-alive\n\n";
  EventStream *stream = user_data;

  event_stream_write (stream, comment, strlen (comment));

  return G_SOURCE_CONTINUE;
}

static void
event_stream_finished_cb (SoupServerMessage *msg,
                          EventStream       *stream)
{
  KagedApiServer *self = stream->server;

  g_debug ("An event stream of session %" G_GINT64_FORMAT " ended", stream->session_id);
  g_ptr_array_remove_fast (self->streams, stream);
}

static gboolean
has_streams (KagedApiServer *self,
             gint64          session_id)
{
  for (guint i = 0; i < self->streams->len; i++)
    {
      EventStream *stream = g_ptr_array_index (self->streams, i);

      if (stream->session_id == session_id)
        return TRUE;
    }

  return FALSE;
}

static void
broadcast (KagedApiServer *self,
           gint64          session_id,
           const char     *event,
           JsonBuilder    *builder)
{
  g_autofree char *json = NULL;
  g_autofree char *frame = NULL;

  json = kaged_api_wire_to_string (builder, NULL);
  frame = g_strdup_printf ("event: %s\ndata: %s\n\n", event, json);

  for (guint i = 0; i < self->streams->len; i++)
    {
      EventStream *stream = g_ptr_array_index (self->streams, i);

      if (stream->session_id == session_id)
        event_stream_write (stream, frame, strlen (frame));
    }
}

static void
start_event_stream (KagedApiServer    *self,
                    SoupServerMessage *msg,
                    gint64             session_id)
{
  static const char hello[] = ": kaged events\n\n";
  SoupMessageHeaders *headers = soup_server_message_get_response_headers (msg);
  SoupMessageBody *body = soup_server_message_get_response_body (msg);
  EventStream *stream;

  if (self->streams->len >= KAGED_API_MAX_EVENT_STREAMS)
    {
      respond_error (msg, SOUP_STATUS_SERVICE_UNAVAILABLE, "too_many_streams",
                     _("Too many event streams are open"));
      return;
    }

  soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
  soup_message_headers_replace (headers, "Content-Type", SSE_CONTENT_TYPE);
  soup_message_headers_replace (headers, "Cache-Control", "no-store");
  soup_message_headers_set_encoding (headers, SOUP_ENCODING_CHUNKED);
  /* What was written is not kept: a stream may stay open for days. */
  soup_message_body_set_accumulate (body, FALSE);
  soup_message_body_append (body, SOUP_MEMORY_STATIC, hello, strlen (hello));

  stream = g_new0 (EventStream, 1);
  stream->server = self;
  stream->msg = g_object_ref (msg);
  stream->session_id = session_id;
  stream->finished_id = g_signal_connect (msg, "finished",
                                          G_CALLBACK (event_stream_finished_cb), stream);
  /* On the context the server runs on, which need not be the global one. */
  stream->keepalive = g_timeout_source_new (self->keepalive_interval);
  g_source_set_callback (stream->keepalive, event_stream_keepalive_cb, stream, NULL);
  g_source_set_static_name (stream->keepalive, "[kaged] API event stream keep-alive");
  g_source_attach (stream->keepalive, g_main_context_get_thread_default ());
  g_ptr_array_add (self->streams, stream);

  g_debug ("An event stream of session %" G_GINT64_FORMAT " started", session_id);
}

static void
end_event_streams (KagedApiServer *self)
{
  while (self->streams->len > 0)
    {
      EventStream *stream = g_ptr_array_steal_index_fast (self->streams, 0);
      SoupServerMessage *msg = g_object_ref (stream->msg);

      event_stream_free (stream);
      soup_message_body_complete (soup_server_message_get_response_body (msg));
      soup_server_message_unpause (msg);
      g_object_unref (msg);
    }
}

/* ---------------------------------------------------------------------------
 * The manager's signals, as events
 * ------------------------------------------------------------------------- */

static void
message_event (KagedApiServer *self,
               const char     *event,
               KagedMessage   *message)
{
  g_autoptr(JsonBuilder) builder = NULL;
  gint64 session_id = kaged_message_get_session_id (message);

  if (!has_streams (self, session_id))
    return;

  builder = json_builder_new ();
  kaged_api_wire_add_message (builder, message);
  broadcast (self, session_id, event, builder);
}

static void
message_added_cb (KagedSessionManager *manager,
                  KagedMessage        *message,
                  KagedApiServer      *self)
{
  message_event (self, "message.added", message);
}

static void
message_changed_cb (KagedSessionManager *manager,
                    KagedMessage        *message,
                    KagedApiServer      *self)
{
  message_event (self, "message.changed", message);
}

static void
message_delta_cb (KagedSessionManager *manager,
                  gint64               session_id,
                  gint64               message_id,
                  gint64               run_id,
                  const char          *text,
                  KagedApiServer      *self)
{
  g_autoptr(JsonBuilder) builder = NULL;

  if (!has_streams (self, session_id))
    return;

  builder = json_builder_new ();
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "session_id");
  json_builder_add_int_value (builder, session_id);
  json_builder_set_member_name (builder, "message_id");
  json_builder_add_int_value (builder, message_id);
  json_builder_set_member_name (builder, "run_id");
  json_builder_add_int_value (builder, run_id);
  json_builder_set_member_name (builder, "text");
  json_builder_add_string_value (builder, text != NULL ? text : "");
  json_builder_end_object (builder);

  broadcast (self, session_id, "message.delta", builder);
}

static void
run_changed_cb (KagedSessionManager *manager,
                KagedRun            *run,
                KagedApiServer      *self)
{
  g_autoptr(JsonBuilder) builder = NULL;
  gint64 session_id = kaged_run_get_session_id (run);
  const char *event;

  if (!has_streams (self, session_id))
    return;

  switch (kaged_run_get_status (run))
    {
    case KAGED_RUN_STATUS_QUEUED:
      event = "run.queued";
      break;

    case KAGED_RUN_STATUS_RUNNING:
      event = "run.started";
      break;

    case KAGED_RUN_STATUS_SUCCEEDED:
    case KAGED_RUN_STATUS_FAILED:
    case KAGED_RUN_STATUS_CANCELLED:
    default:
      event = "run.finished";
      break;
    }

  builder = json_builder_new ();
  kaged_api_wire_add_run (builder, run);
  broadcast (self, session_id, event, builder);
}

static void
run_retrying_cb (KagedSessionManager *manager,
                 KagedRun            *run,
                 KagedAttempt        *attempt,
                 KagedApiServer      *self)
{
  g_autoptr(JsonBuilder) builder = NULL;
  gint64 session_id = kaged_run_get_session_id (run);
  GPtrArray *attempts = kaged_run_get_attempts (run);
  guint number = attempts != NULL ? attempts->len : 1;
  KagedClock *clock;

  if (!has_streams (self, session_id))
    return;

  /* The last attempt, or one told to wait beyond Tier 1's window, carries
   * the server's wait for Tier 2: no attempt follows it in this run. */
  if (number >= KAGED_RETRY_MAX_ATTEMPTS || attempt->wait_ms > KAGED_RETRY_WINDOW_MS)
    return;

  clock = kaged_session_manager_get_clock (self->manager);

  builder = json_builder_new ();
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "session_id");
  json_builder_add_int_value (builder, session_id);
  json_builder_set_member_name (builder, "run_id");
  json_builder_add_int_value (builder, kaged_run_get_id (run));
  json_builder_set_member_name (builder, "attempt");
  json_builder_add_int_value (builder, MAX (number, 1));
  json_builder_set_member_name (builder, "next_attempt");
  json_builder_add_int_value (builder, MAX (number, 1) + 1);
  json_builder_set_member_name (builder, "wait_ms");
  json_builder_add_int_value (builder, attempt->wait_ms);
  json_builder_set_member_name (builder, "retry_at");
  json_builder_add_int_value (builder, kaged_clock_get_wall_ms (clock) + attempt->wait_ms);
  json_builder_set_member_name (builder, "failed_attempt");
  kaged_api_wire_add_attempt (builder, attempt);
  json_builder_end_object (builder);

  broadcast (self, session_id, "run.retrying", builder);
}

static void
session_changed_cb (KagedSessionManager *manager,
                    KagedSession        *session,
                    KagedApiServer      *self)
{
  g_autoptr(JsonBuilder) builder = NULL;
  gint64 session_id = kaged_session_get_id (session);

  if (!has_streams (self, session_id))
    return;

  builder = json_builder_new ();
  kaged_api_wire_add_session (builder, session);
  broadcast (self, session_id, "session.changed", builder);
}

/* ---------------------------------------------------------------------------
 * Reading requests
 * ------------------------------------------------------------------------- */

static gboolean
parse_id (const char *text,
          gint64     *id)
{
  guint64 value = 0;

  if (text == NULL || !g_ascii_isdigit (text[0]))
    return FALSE;

  if (!g_ascii_string_to_unsigned (text, 10, 1, G_MAXINT64, &value, NULL))
    return FALSE;

  *id = (gint64)value;
  return TRUE;
}

static gboolean
parse_target (const char *path,
              Target     *target)
{
  g_auto(GStrv) parts = NULL;
  guint n;

  if (path == NULL || !g_str_has_prefix (path, API_PREFIX))
    return FALSE;

  parts = g_strsplit (path + strlen (API_PREFIX), "/", -1);
  n = g_strv_length (parts);

  /* One trailing slash is forgiven. */
  if (n > 1 && parts[n - 1][0] == '\0')
    n--;

  if (n == 0 || !g_str_equal (parts[0], "sessions"))
    return FALSE;

  memset (target, 0, sizeof *target);

  if (n == 1)
    {
      target->route = ROUTE_SESSIONS;
      return TRUE;
    }

  if (!parse_id (parts[1], &target->session_id))
    return FALSE;

  switch (n)
    {
    case 2:
      target->route = ROUTE_SESSION;
      return TRUE;

    case 3:
      if (g_str_equal (parts[2], "messages"))
        target->route = ROUTE_MESSAGES;
      else if (g_str_equal (parts[2], "events"))
        target->route = ROUTE_EVENTS;
      else
        return FALSE;
      return TRUE;

    case 4:
      if (!g_str_equal (parts[2], "runs") || !parse_id (parts[3], &target->item_id))
        return FALSE;
      target->route = ROUTE_RUN;
      return TRUE;

    case 5:
      if (!parse_id (parts[3], &target->item_id))
        return FALSE;
      if (g_str_equal (parts[2], "messages") && g_str_equal (parts[4], "regenerate"))
        target->route = ROUTE_REGENERATE;
      else if (g_str_equal (parts[2], "runs") && g_str_equal (parts[4], "cancel"))
        target->route = ROUTE_CANCEL;
      else
        return FALSE;
      return TRUE;

    default:
      return FALSE;
    }
}

static const char *
route_allow (Route route)
{
  switch (route)
    {
    case ROUTE_SESSIONS:
    case ROUTE_MESSAGES:
      return "GET, POST";

    case ROUTE_SESSION:
    case ROUTE_RUN:
    case ROUTE_EVENTS:
      return "GET";

    case ROUTE_REGENERATE:
    case ROUTE_CANCEL:
    default:
      return "POST";
    }
}

static gboolean
method_allowed (Route       route,
                const char *method)
{
  g_auto(GStrv) allowed = g_strsplit (route_allow (route), ", ", -1);

  return g_strv_contains ((const char * const *)allowed, method);
}

/* The Host a request names must be this machine, so a web page cannot
 * reach the API through a name it controls that resolves to 127.0.0.1. */
static gboolean
host_is_loopback (const char *host)
{
  g_autofree char *name = NULL;
  g_autoptr(GInetAddress) address = NULL;
  const char *end;

  if (host == NULL)
    return TRUE;

  if (host[0] == '[')
    {
      end = strchr (host, ']');
      if (end == NULL)
        return FALSE;
      name = g_strndup (host + 1, end - host - 1);
    }
  else
    {
      end = strchr (host, ':');
      name = end != NULL ? g_strndup (host, end - host) : g_strdup (host);
    }

  if (g_ascii_strcasecmp (name, "localhost") == 0)
    return TRUE;

  address = g_inet_address_new_from_string (name);

  return address != NULL && g_inet_address_get_is_loopback (address);
}

static const char *
bearer_token (SoupMessageHeaders *headers)
{
  const char *value = soup_message_headers_get_one (headers, "Authorization");

  if (value == NULL || g_ascii_strncasecmp (value, "Bearer ", strlen ("Bearer ")) != 0)
    return NULL;

  value += strlen ("Bearer ");
  while (*value == ' ')
    value++;

  return value;
}

static void
request_got_chunk_cb (SoupServerMessage *msg,
                      GBytes            *chunk,
                      KagedApiServer    *self)
{
  SoupMessageBody *body = soup_server_message_get_request_body (msg);

  if (soup_server_message_get_status (msg) != 0)
    return;

  if ((guint64)body->length > self->max_body_size)
    {
      g_autofree char *limit = g_format_size (self->max_body_size);
      g_autofree char *message = g_strdup_printf (_("The request body is larger than %s"), limit);

      /* Read the rest and forget it, so the connection stays in step. */
      soup_message_body_set_accumulate (body, FALSE);
      soup_message_body_truncate (body);
      respond_error (msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "payload_too_large", message);
    }
}

/* Answers before the body is read; the body that still comes is read and
 * dropped, never kept. */
static void
refuse_early (SoupServerMessage *msg,
              guint              status,
              const char        *code,
              const char        *message)
{
  soup_message_body_set_accumulate (soup_server_message_get_request_body (msg), FALSE);
  respond_error (msg, status, code, message);
}

/* Runs once the headers are in, before the body is read. */
static void
early_handler_cb (SoupServer        *server,
                  SoupServerMessage *msg,
                  const char        *path,
                  GHashTable        *query,
                  gpointer           user_data)
{
  KagedApiServer *self = user_data;
  SoupMessageHeaders *headers = soup_server_message_get_request_headers (msg);
  const char *fetch_site;
  goffset length;

  if (soup_message_headers_get_one (headers, "Origin") != NULL ||
      ((fetch_site = soup_message_headers_get_one (headers, "Sec-Fetch-Site")) != NULL &&
       !g_str_equal (fetch_site, "none")))
    {
      refuse_early (msg, SOUP_STATUS_FORBIDDEN, "forbidden_origin",
                     _("Requests from web pages are not accepted"));
      return;
    }

  if (!host_is_loopback (soup_message_headers_get_one (headers, "Host")))
    {
      refuse_early (msg, SOUP_STATUS_FORBIDDEN, "forbidden_host",
                     _("Requests must name this computer as their host"));
      return;
    }

  if (!kaged_api_token_equal (self->token, bearer_token (headers)))
    {
      soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                    "WWW-Authenticate", "Bearer realm=\"kaged\"");
      refuse_early (msg, SOUP_STATUS_UNAUTHORIZED, "unauthorized",
                     _("A valid bearer token is needed"));
      return;
    }

  if (soup_message_headers_get_encoding (headers) == SOUP_ENCODING_CONTENT_LENGTH &&
      (length = soup_message_headers_get_content_length (headers)) > 0 &&
      (guint64)length > self->max_body_size)
    {
      g_autofree char *limit = g_format_size (self->max_body_size);
      g_autofree char *message = g_strdup_printf (_("The request body is larger than %s"), limit);

      soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                    "Connection", "close");
      refuse_early (msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "payload_too_large", message);
      return;
    }

  g_signal_connect_object (msg, "got-chunk", G_CALLBACK (request_got_chunk_cb), self, 0);
}

/* Parses the request body as a JSON object; an empty body is an empty
 * object when @optional. */
static JsonObject *
read_body (SoupServerMessage  *msg,
           gboolean            optional,
           JsonParser        **out_parser)
{
  SoupMessageBody *body = soup_server_message_get_request_body (msg);
  g_autoptr(GBytes) bytes = soup_message_body_flatten (body);
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(GError) error = NULL;
  const char *data;
  gsize length = 0;
  JsonNode *root;

  data = g_bytes_get_data (bytes, &length);

  if (length > 0 && !g_utf8_validate (data, length, NULL))
    {
      respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_utf8",
                     _("The request body is not valid UTF-8"));
      return NULL;
    }

  parser = json_parser_new_immutable ();

  if (length == 0)
    {
      if (optional)
        {
          *out_parser = g_steal_pointer (&parser);
          return json_object_new ();
        }

      respond_error (msg, SOUP_STATUS_BAD_REQUEST, "malformed_json",
                     _("The request needs a JSON body"));
      return NULL;
    }

  if (memchr (data, '\0', length) != NULL ||
      !json_parser_load_from_data (parser, data, length, &error))
    {
      g_autofree char *message = g_strdup_printf (_("The request body is not valid JSON: %s"),
                                                  error != NULL ? error->message : _("a NUL byte"));

      respond_error (msg, SOUP_STATUS_BAD_REQUEST, "malformed_json", message);
      return NULL;
    }

  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_request",
                     _("The request body must be a JSON object"));
      return NULL;
    }

  *out_parser = g_steal_pointer (&parser);

  return json_object_ref (json_node_get_object (root));
}

/* Reads the string member @name: %TRUE with *@value NULL when it is absent
 * (or null and @nullable); a respond_error() and %FALSE when it has
 * another type. */
static gboolean
read_string_member (SoupServerMessage  *msg,
                    JsonObject         *object,
                    const char         *name,
                    gboolean            nullable,
                    const char        **value)
{
  JsonNode *node = json_object_get_member (object, name);

  *value = NULL;

  if (node == NULL || (nullable && JSON_NODE_HOLDS_NULL (node)))
    return TRUE;

  if (JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == G_TYPE_STRING)
    {
      *value = json_node_get_string (node);
      return TRUE;
    }

  {
    g_autofree char *message = g_strdup_printf (_("“%s” must be a string"), name);

    respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_request", message);
  }

  return FALSE;
}

static gboolean
read_bool_parameter (SoupServerMessage *msg,
                     GHashTable        *query,
                     const char        *name,
                     gboolean          *value)
{
  const char *text = query != NULL ? g_hash_table_lookup (query, name) : NULL;

  *value = FALSE;

  if (text == NULL || g_str_equal (text, "false") || g_str_equal (text, "0"))
    return TRUE;

  if (g_str_equal (text, "true") || g_str_equal (text, "1") || text[0] == '\0')
    {
      *value = TRUE;
      return TRUE;
    }

  {
    g_autofree char *message = g_strdup_printf (_("“%s” must be true or false"), name);

    respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_parameter", message);
  }

  return FALSE;
}

static gboolean
read_int_parameter (SoupServerMessage *msg,
                    GHashTable        *query,
                    const char        *name,
                    guint64            max,
                    guint64           *value)
{
  const char *text = query != NULL ? g_hash_table_lookup (query, name) : NULL;

  *value = 0;

  if (text == NULL)
    return TRUE;

  if (g_ascii_isdigit (text[0]) &&
      g_ascii_string_to_unsigned (text, 10, 0, max, value, NULL))
    return TRUE;

  {
    g_autofree char *message =
      g_strdup_printf (_("“%s” must be a whole number from 0 to %llu"), name,
                       (unsigned long long) max);

    respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_parameter", message);
  }

  return FALSE;
}

/* ---------------------------------------------------------------------------
 * Endpoints
 * ------------------------------------------------------------------------- */

static KagedSession *
lookup_session (KagedApiServer    *self,
                SoupServerMessage *msg,
                gint64             session_id)
{
  g_autoptr(GError) error = NULL;
  KagedSession *session;

  session = kaged_store_get_session (kaged_session_manager_get_store (self->manager),
                                     session_id, &error);
  if (session == NULL)
    {
      respond_engine_error (msg, error);
      return NULL;
    }

  kaged_session_set_state (session,
                           kaged_session_manager_is_busy (self->manager, session_id)
                             ? KAGED_SESSION_STATE_RUNNING
                             : KAGED_SESSION_STATE_IDLE);

  return session;
}

static void
list_sessions (KagedApiServer    *self,
               SoupServerMessage *msg)
{
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(GPtrArray) sessions = NULL;
  g_autoptr(GError) error = NULL;

  sessions = kaged_store_list_sessions (kaged_session_manager_get_store (self->manager), &error);
  if (sessions == NULL)
    {
      respond_engine_error (msg, error);
      return;
    }

  builder = json_builder_new ();
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "sessions");
  json_builder_begin_array (builder);
  for (guint i = 0; i < sessions->len; i++)
    {
      KagedSession *session = g_ptr_array_index (sessions, i);

      kaged_session_set_state (session,
                               kaged_session_manager_is_busy (self->manager,
                                                              kaged_session_get_id (session))
                                 ? KAGED_SESSION_STATE_RUNNING
                                 : KAGED_SESSION_STATE_IDLE);
      kaged_api_wire_add_session (builder, session);
    }
  json_builder_end_array (builder);
  json_builder_end_object (builder);

  respond_json (msg, SOUP_STATUS_OK, builder);
}

static void
create_session (KagedApiServer    *self,
                SoupServerMessage *msg)
{
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(JsonObject) object = NULL;
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *location = NULL;
  const char *title = NULL;

  object = read_body (msg, TRUE, &parser);
  if (object == NULL)
    return;

  if (!read_string_member (msg, object, "title", TRUE, &title))
    return;

  session = kaged_session_manager_create_session (self->manager, title, &error);
  if (session == NULL)
    {
      respond_engine_error (msg, error);
      return;
    }

  builder = json_builder_new ();
  kaged_api_wire_add_session (builder, session);
  respond_json (msg, SOUP_STATUS_CREATED, builder);

  location = g_strdup_printf (API_PREFIX "sessions/%" G_GINT64_FORMAT,
                              kaged_session_get_id (session));
  soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                "Location", location);
}

static void
get_session (KagedApiServer    *self,
             SoupServerMessage *msg,
             const Target      *target)
{
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(JsonBuilder) builder = NULL;

  session = lookup_session (self, msg, target->session_id);
  if (session == NULL)
    return;

  builder = json_builder_new ();
  kaged_api_wire_add_session (builder, session);
  respond_json (msg, SOUP_STATUS_OK, builder);
}

static void
list_messages (KagedApiServer    *self,
               SoupServerMessage *msg,
               GHashTable        *query,
               const Target      *target)
{
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(GError) error = NULL;
  gboolean include_superseded;
  guint64 after;
  guint64 limit;
  gboolean has_more = FALSE;
  guint n;

  if (!read_bool_parameter (msg, query, "include_superseded", &include_superseded) ||
      !read_int_parameter (msg, query, "after", G_MAXINT64, &after) ||
      !read_int_parameter (msg, query, "limit", MAX_PAGE_SIZE, &limit))
    return;

  session = lookup_session (self, msg, target->session_id);
  if (session == NULL)
    return;

  /* One more than asked tells whether another page follows. */
  messages = kaged_store_list_messages (kaged_session_manager_get_store (self->manager),
                                        target->session_id, include_superseded,
                                        (gint64)after, limit > 0 ? (guint)limit + 1 : 0,
                                        &error);
  if (messages == NULL)
    {
      respond_engine_error (msg, error);
      return;
    }

  n = messages->len;
  if (limit > 0 && n > limit)
    {
      n = limit;
      has_more = TRUE;
    }

  builder = json_builder_new ();
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "messages");
  json_builder_begin_array (builder);
  for (guint i = 0; i < n; i++)
    kaged_api_wire_add_message (builder, g_ptr_array_index (messages, i));
  json_builder_end_array (builder);
  json_builder_set_member_name (builder, "has_more");
  json_builder_add_boolean_value (builder, has_more);
  json_builder_end_object (builder);

  respond_json (msg, SOUP_STATUS_OK, builder);
}

static void
post_message (KagedApiServer    *self,
              SoupServerMessage *msg,
              const Target      *target)
{
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(JsonObject) object = NULL;
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  const char *content = NULL;

  object = read_body (msg, FALSE, &parser);
  if (object == NULL)
    return;

  if (!read_string_member (msg, object, "content", FALSE, &content))
    return;

  if (content == NULL)
    {
      respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_request",
                     _("“content” is needed"));
      return;
    }

  receipt = kaged_session_manager_post (self->manager, target->session_id, content, &error);
  if (receipt == NULL)
    {
      respond_engine_error (msg, error);
      return;
    }

  builder = json_builder_new ();
  kaged_api_wire_add_receipt (builder, receipt, FALSE);
  respond_json (msg, SOUP_STATUS_ACCEPTED, builder);
}

static void
regenerate (KagedApiServer    *self,
            SoupServerMessage *msg,
            const Target      *target)
{
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  SoupMessageBody *body = soup_server_message_get_request_body (msg);

  /* No body is needed; one that is sent must at least be JSON. */
  if (body->length > 0)
    {
      g_autoptr(JsonParser) parser = NULL;
      g_autoptr(JsonObject) object = read_body (msg, TRUE, &parser);

      if (object == NULL)
        return;
    }

  receipt = kaged_session_manager_regenerate (self->manager, target->session_id,
                                              target->item_id, &error);
  if (receipt == NULL)
    {
      respond_engine_error (msg, error);
      return;
    }

  builder = json_builder_new ();
  kaged_api_wire_add_receipt (builder, receipt, TRUE);
  respond_json (msg, SOUP_STATUS_ACCEPTED, builder);
}

static void
get_run (KagedApiServer    *self,
         SoupServerMessage *msg,
         const Target      *target)
{
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(GError) error = NULL;

  run = kaged_session_manager_get_run (self->manager, target->session_id, target->item_id, &error);
  if (run == NULL)
    {
      respond_engine_error (msg, error);
      return;
    }

  builder = json_builder_new ();
  kaged_api_wire_add_run (builder, run);
  respond_json (msg, SOUP_STATUS_OK, builder);
}

static void
cancel_run (KagedApiServer    *self,
            SoupServerMessage *msg,
            const Target      *target)
{
  g_autoptr(GError) error = NULL;

  if (!kaged_session_manager_cancel (self->manager, target->session_id, target->item_id, &error))
    {
      respond_engine_error (msg, error);
      return;
    }

  get_run (self, msg, target);
}

static void
open_events (KagedApiServer    *self,
             SoupServerMessage *msg,
             const Target      *target)
{
  g_autoptr(KagedSession) session = NULL;

  session = lookup_session (self, msg, target->session_id);
  if (session == NULL)
    return;

  start_event_stream (self, msg, target->session_id);
}

static void
handler_cb (SoupServer        *server,
            SoupServerMessage *msg,
            const char        *path,
            GHashTable        *query,
            gpointer           user_data)
{
  KagedApiServer *self = user_data;
  SoupMessageBody *body = soup_server_message_get_request_body (msg);
  const char *method = soup_server_message_get_method (msg);
  Target target;

  /* The early handler refused it already. */
  if (soup_server_message_get_status (msg) != 0)
    return;

  if ((guint64)body->length > self->max_body_size)
    {
      respond_error (msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "payload_too_large",
                     _("The request body is too large"));
      return;
    }

  if (!parse_target (path, &target))
    {
      respond_not_found (msg);
      return;
    }

  if (!method_allowed (target.route, method))
    {
      soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                    "Allow", route_allow (target.route));
      respond_error (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "method_not_allowed",
                     _("This method is not allowed here"));
      return;
    }

  switch (target.route)
    {
    case ROUTE_SESSIONS:
      if (g_str_equal (method, "POST"))
        create_session (self, msg);
      else
        list_sessions (self, msg);
      break;

    case ROUTE_SESSION:
      get_session (self, msg, &target);
      break;

    case ROUTE_MESSAGES:
      if (g_str_equal (method, "POST"))
        post_message (self, msg, &target);
      else
        list_messages (self, msg, query, &target);
      break;

    case ROUTE_REGENERATE:
      regenerate (self, msg, &target);
      break;

    case ROUTE_RUN:
      get_run (self, msg, &target);
      break;

    case ROUTE_CANCEL:
      cancel_run (self, msg, &target);
      break;

    case ROUTE_EVENTS:
      open_events (self, msg, &target);
      break;

    default:
      g_assert_not_reached ();
    }

  g_debug ("%s %s → %u", method, path, soup_server_message_get_status (msg));
}

/* ---------------------------------------------------------------------------
 * GObject
 * ------------------------------------------------------------------------- */

static void
kaged_api_server_constructed (GObject *object)
{
  KagedApiServer *self = (KagedApiServer *)object;
  guint i = 0;

  G_OBJECT_CLASS (kaged_api_server_parent_class)->constructed (object);

  g_assert (KAGED_IS_SESSION_MANAGER (self->manager));
  g_assert (self->token != NULL);

  self->signal_ids[i++] = g_signal_connect (self->manager, "message-added",
                                            G_CALLBACK (message_added_cb), self);
  self->signal_ids[i++] = g_signal_connect (self->manager, "message-changed",
                                            G_CALLBACK (message_changed_cb), self);
  self->signal_ids[i++] = g_signal_connect (self->manager, "message-delta",
                                            G_CALLBACK (message_delta_cb), self);
  self->signal_ids[i++] = g_signal_connect (self->manager, "run-changed",
                                            G_CALLBACK (run_changed_cb), self);
  self->signal_ids[i++] = g_signal_connect (self->manager, "run-retrying",
                                            G_CALLBACK (run_retrying_cb), self);
  self->signal_ids[i++] = g_signal_connect (self->manager, "session-changed",
                                            G_CALLBACK (session_changed_cb), self);
  g_assert (i == G_N_ELEMENTS (self->signal_ids));
}

static void
kaged_api_server_dispose (GObject *object)
{
  KagedApiServer *self = (KagedApiServer *)object;

  kaged_api_server_stop (self);

  if (self->manager != NULL)
    {
      for (guint i = 0; i < G_N_ELEMENTS (self->signal_ids); i++)
        g_clear_signal_handler (&self->signal_ids[i], self->manager);
    }

  if (self->server != NULL)
    soup_server_remove_handler (self->server, "/");
  g_clear_object (&self->server);
  g_clear_object (&self->manager);

  G_OBJECT_CLASS (kaged_api_server_parent_class)->dispose (object);
}

static void
kaged_api_server_finalize (GObject *object)
{
  KagedApiServer *self = (KagedApiServer *)object;

  if (self->token != NULL)
    {
      memset (self->token, 0, strlen (self->token));
      g_clear_pointer (&self->token, g_free);
    }
  g_clear_pointer (&self->urls, g_ptr_array_unref);
  g_clear_pointer (&self->streams, g_ptr_array_unref);

  G_OBJECT_CLASS (kaged_api_server_parent_class)->finalize (object);
}

static void
kaged_api_server_get_property (GObject    *object,
                               guint       prop_id,
                               GValue     *value,
                               GParamSpec *pspec)
{
  KagedApiServer *self = KAGED_API_SERVER (object);

  switch (prop_id)
    {
    case PROP_MANAGER:
      g_value_set_object (value, self->manager);
      break;

    case PROP_PORT:
      g_value_set_uint (value, self->port);
      break;

    case PROP_MAX_BODY_SIZE:
      g_value_set_uint64 (value, self->max_body_size);
      break;

    case PROP_KEEPALIVE_INTERVAL:
      g_value_set_uint (value, self->keepalive_interval);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_api_server_set_property (GObject      *object,
                               guint         prop_id,
                               const GValue *value,
                               GParamSpec   *pspec)
{
  KagedApiServer *self = KAGED_API_SERVER (object);

  switch (prop_id)
    {
    case PROP_MANAGER:
      self->manager = g_value_dup_object (value);
      break;

    case PROP_TOKEN:
      self->token = g_value_dup_string (value);
      break;

    case PROP_MAX_BODY_SIZE:
      kaged_api_server_set_max_body_size (self, g_value_get_uint64 (value));
      break;

    case PROP_KEEPALIVE_INTERVAL:
      kaged_api_server_set_keepalive_interval (self, g_value_get_uint (value));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_api_server_class_init (KagedApiServerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->constructed = kaged_api_server_constructed;
  object_class->dispose = kaged_api_server_dispose;
  object_class->finalize = kaged_api_server_finalize;
  object_class->get_property = kaged_api_server_get_property;
  object_class->set_property = kaged_api_server_set_property;

  properties [PROP_MANAGER] =
    g_param_spec_object ("manager", NULL, NULL,
                         KAGED_TYPE_SESSION_MANAGER,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  /* Write-only: the token is not handed out again. */
  properties [PROP_TOKEN] =
    g_param_spec_string ("token", NULL, NULL,
                         NULL,
                         (G_PARAM_WRITABLE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  properties [PROP_PORT] =
    g_param_spec_uint ("port", NULL, NULL,
                       0, G_MAXUINT16, 0,
                       (G_PARAM_READABLE |
                        G_PARAM_EXPLICIT_NOTIFY |
                        G_PARAM_STATIC_STRINGS));

  properties [PROP_MAX_BODY_SIZE] =
    g_param_spec_uint64 ("max-body-size", NULL, NULL,
                         1, G_MAXUINT64, KAGED_API_DEFAULT_MAX_BODY_SIZE,
                         (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  properties [PROP_KEEPALIVE_INTERVAL] =
    g_param_spec_uint ("keepalive-interval", NULL, NULL,
                       1, G_MAXUINT, KAGED_API_DEFAULT_KEEPALIVE_MS,
                       (G_PARAM_READWRITE |
                        G_PARAM_EXPLICIT_NOTIFY |
                        G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_api_server_init (KagedApiServer *self)
{
  self->max_body_size = KAGED_API_DEFAULT_MAX_BODY_SIZE;
  self->keepalive_interval = KAGED_API_DEFAULT_KEEPALIVE_MS;
  self->urls = g_ptr_array_new_with_free_func (g_free);
  self->streams = g_ptr_array_new_with_free_func ((GDestroyNotify)event_stream_free);
}

/* ---------------------------------------------------------------------------
 * Public API
 * ------------------------------------------------------------------------- */

/**
 * kaged_api_server_new:
 * @manager: the session manager the API drives
 * @token: the bearer token every request must carry (see
 *   kaged_api_token_load_or_create())
 *
 * Returns: (transfer full): a server that does not listen yet
 */
KagedApiServer *
kaged_api_server_new (KagedSessionManager *manager,
                      const char          *token)
{
  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (manager), NULL);
  g_return_val_if_fail (token != NULL && token[0] != '\0', NULL);

  return g_object_new (KAGED_TYPE_API_SERVER,
                       "manager", manager,
                       "token", token,
                       NULL);
}

/**
 * kaged_api_server_get_manager:
 *
 * Returns: (transfer none): the session manager
 */
KagedSessionManager *
kaged_api_server_get_manager (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), NULL);

  return self->manager;
}

static SoupServer *
ensure_server (KagedApiServer *self)
{
  if (self->server == NULL)
    {
      self->server = soup_server_new (NULL, NULL);
      soup_server_add_early_handler (self->server, "/", early_handler_cb, self, NULL);
      soup_server_add_handler (self->server, "/", handler_cb, self, NULL);
    }

  return self->server;
}

static gboolean
listen_on (KagedApiServer  *self,
           GInetAddress    *address,
           guint            port,
           GError         **error)
{
  g_autoptr(GSocketAddress) socket_address = NULL;
  g_autoptr(GSocketAddress) bound = NULL;
  g_autoptr(GSocket) socket = NULL;
  g_autofree char *host = NULL;
  guint bound_port;

  g_assert (g_inet_address_get_is_loopback (address));

  /* The socket is made here rather than by soup_server_listen() so its
   * backlog holds a burst of clients connecting at once. */
  socket = g_socket_new (g_inet_address_get_family (address), G_SOCKET_TYPE_STREAM,
                         G_SOCKET_PROTOCOL_TCP, error);
  if (socket == NULL)
    return FALSE;

  g_socket_set_listen_backlog (socket, LISTEN_BACKLOG);
  socket_address = g_inet_socket_address_new (address, port);

  if (!g_socket_bind (socket, socket_address, TRUE, error) ||
      !g_socket_listen (socket, error) ||
      !(bound = g_socket_get_local_address (socket, error)))
    return FALSE;

  /* Only ever a loopback address, whatever the caller asked. */
  if (!g_inet_address_get_is_loopback (g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (bound))))
    {
      g_set_error_literal (error, KAGED_API_ERROR, KAGED_API_ERROR_NOT_LOOPBACK,
                           _("The API only listens on this computer"));
      return FALSE;
    }

  if (!soup_server_listen_socket (ensure_server (self), socket, 0, error))
    return FALSE;

  bound_port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));

  host = g_inet_address_to_string (address);
  if (g_inet_address_get_family (address) == G_SOCKET_FAMILY_IPV6)
    g_ptr_array_add (self->urls, g_strdup_printf ("http://[%s]:%u", host, bound_port));
  else
    g_ptr_array_add (self->urls, g_strdup_printf ("http://%s:%u", host, bound_port));

  if (self->port == 0)
    {
      self->port = bound_port;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_PORT]);
    }

  return TRUE;
}

/**
 * kaged_api_server_listen:
 * @port: the TCP port, or 0 for a free one
 *
 * Listens on 127.0.0.1 and, where the system has it, on ::1 at the same
 * port. Only the loopback interface is ever used.
 *
 * Returns: %TRUE once listening on 127.0.0.1
 */
gboolean
kaged_api_server_listen (KagedApiServer  *self,
                         guint            port,
                         GError         **error)
{
  g_autoptr(GInetAddress) ipv4 = NULL;
  g_autoptr(GInetAddress) ipv6 = NULL;
  g_autoptr(GError) ipv6_error = NULL;

  g_return_val_if_fail (KAGED_IS_API_SERVER (self), FALSE);
  g_return_val_if_fail (port <= G_MAXUINT16, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  ipv4 = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  if (!listen_on (self, ipv4, port, error))
    return FALSE;

  ipv6 = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV6);
  if (!listen_on (self, ipv6, self->port, &ipv6_error))
    g_debug ("Not listening on [::1]:%u: %s", self->port, ipv6_error->message);

  return TRUE;
}

/**
 * kaged_api_server_listen_address:
 * @address: an IP address of the loopback interface (`127.0.0.1`, `::1`)
 *   or `localhost`
 * @port: the TCP port, or 0 for a free one
 *
 * Listens on one loopback address. Any other address is refused with
 * %KAGED_API_ERROR_NOT_LOOPBACK: the API is for this computer only.
 *
 * Returns: %TRUE once listening
 */
gboolean
kaged_api_server_listen_address (KagedApiServer  *self,
                                 const char      *address,
                                 guint            port,
                                 GError         **error)
{
  g_autoptr(GInetAddress) inet_address = NULL;

  g_return_val_if_fail (KAGED_IS_API_SERVER (self), FALSE);
  g_return_val_if_fail (address != NULL, FALSE);
  g_return_val_if_fail (port <= G_MAXUINT16, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (g_ascii_strcasecmp (address, "localhost") == 0)
    return kaged_api_server_listen (self, port, error);

  inet_address = g_inet_address_new_from_string (address);
  if (inet_address == NULL)
    {
      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_INVALID_ADDRESS,
                   _("“%s” is not an IP address"), address);
      return FALSE;
    }

  if (!g_inet_address_get_is_loopback (inet_address))
    {
      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_NOT_LOOPBACK,
                   _("The API only listens on this computer (127.0.0.1 or ::1), not on %s"),
                   address);
      return FALSE;
    }

  return listen_on (self, inet_address, port, error);
}

gboolean
kaged_api_server_is_listening (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), FALSE);

  return self->urls->len > 0;
}

/**
 * kaged_api_server_get_port:
 *
 * Returns: the port listened on, or 0 when not listening
 */
guint
kaged_api_server_get_port (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), 0);

  return self->port;
}

/**
 * kaged_api_server_dup_urls:
 *
 * Returns: (transfer full): the base URLs listened on, 127.0.0.1 first
 */
char **
kaged_api_server_dup_urls (KagedApiServer *self)
{
  GStrvBuilder *builder;
  char **urls;

  g_return_val_if_fail (KAGED_IS_API_SERVER (self), NULL);

  builder = g_strv_builder_new ();
  for (guint i = 0; i < self->urls->len; i++)
    g_strv_builder_add (builder, g_ptr_array_index (self->urls, i));
  urls = g_strv_builder_end (builder);
  g_strv_builder_unref (builder);

  return urls;
}

/**
 * kaged_api_server_stop:
 *
 * Ends the event streams, closes every connection and stops listening.
 * The server may listen again later.
 */
void
kaged_api_server_stop (KagedApiServer *self)
{
  g_return_if_fail (KAGED_IS_API_SERVER (self));

  end_event_streams (self);

  if (self->server != NULL)
    soup_server_disconnect (self->server);

  g_ptr_array_set_size (self->urls, 0);
  if (self->port != 0)
    {
      self->port = 0;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_PORT]);
    }
}

gsize
kaged_api_server_get_max_body_size (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), 0);

  return self->max_body_size;
}

/**
 * kaged_api_server_set_max_body_size:
 * @max_body_size: the largest request body accepted, in bytes
 *
 * Larger bodies are answered 413 without reaching the engine.
 */
void
kaged_api_server_set_max_body_size (KagedApiServer *self,
                                    gsize           max_body_size)
{
  g_return_if_fail (KAGED_IS_API_SERVER (self));
  g_return_if_fail (max_body_size > 0);

  if (self->max_body_size != max_body_size)
    {
      self->max_body_size = max_body_size;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_MAX_BODY_SIZE]);
    }
}

guint
kaged_api_server_get_keepalive_interval (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), 0);

  return self->keepalive_interval;
}

/**
 * kaged_api_server_set_keepalive_interval:
 * @interval_ms: how often an idle event stream gets a comment
 *
 * Applies to event streams opened from now on.
 */
void
kaged_api_server_set_keepalive_interval (KagedApiServer *self,
                                         guint           interval_ms)
{
  g_return_if_fail (KAGED_IS_API_SERVER (self));
  g_return_if_fail (interval_ms > 0);

  if (self->keepalive_interval != interval_ms)
    {
      self->keepalive_interval = interval_ms;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_KEEPALIVE_INTERVAL]);
    }
}

/**
 * kaged_api_server_get_n_event_streams:
 *
 * Returns: how many event streams are open
 */
guint
kaged_api_server_get_n_event_streams (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), 0);

  return self->streams->len;
}
