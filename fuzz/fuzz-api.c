/* fuzz-api.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include <libsoup/soup.h>

#include "kaged-api-server-private.h"
#include "kaged-fuzz.h"

/*
 * Requests of the local HTTP API, as bytes on the wire. Each input is one
 * client's connection: libsoup's server reads it from memory, as it reads a
 * socket, and the API's own checks run on what it parsed: the early handler
 * (origin, host, bearer token, announced body size, the body's size as it
 * comes), then the path and method, the JSON body, its string members and
 * the query parameters, in the order the endpoints read them. The engine is
 * never reached.
 *
 * What must hold: every answer the API gives is a status with a JSON
 * `{error: {code, message}}` or the endpoint's turn; a path that parses
 * names ids of at least 1 and parses back the same from its canonical form;
 * the method check agrees with the Allow list; a body is an object exactly
 * when no error was given. Nothing crashes, leaks or raises a critical.
 */

#define FUZZ_TOKEN         "kaged-fuzz-token"
#define FUZZ_MAX_BODY_SIZE 4096
#define FUZZ_MAX_ROUNDS    10000

static KagedCore *core;
static KagedApiServer *api;
static SoupServer *server;
static char *data_dir;
static GSocketAddress *local_address;
static GSocketAddress *remote_address;

static void
assert_error_body (SoupServerMessage *msg)
{
  SoupMessageBody *body = soup_server_message_get_response_body (msg);
  g_autoptr(GBytes) bytes = soup_message_body_flatten (body);
  g_autoptr(JsonParser) parser = json_parser_new ();
  gsize length = 0;
  const char *text = g_bytes_get_data (bytes, &length);
  JsonObject *error;

  g_assert_true (json_parser_load_from_data (parser, text, length, NULL));
  g_assert_true (JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)));
  error = json_object_get_object_member (json_node_get_object (json_parser_get_root (parser)),
                                         "error");
  g_assert_nonnull (error);
  g_assert_nonnull (json_object_get_string_member (error, "code"));
  g_assert_nonnull (json_object_get_string_member (error, "message"));
}

static char *
canonical_path (const KagedApiTarget *target)
{
  gint64 s = target->session_id;
  gint64 i = target->item_id;

  switch (target->route)
    {
    case KAGED_API_ROUTE_SESSIONS:
      return g_strdup (KAGED_API_PREFIX "sessions");
    case KAGED_API_ROUTE_SESSION:
      return g_strdup_printf (KAGED_API_PREFIX "sessions/%" G_GINT64_FORMAT, s);
    case KAGED_API_ROUTE_MESSAGES:
      return g_strdup_printf (KAGED_API_PREFIX "sessions/%" G_GINT64_FORMAT "/messages", s);
    case KAGED_API_ROUTE_EVENTS:
      return g_strdup_printf (KAGED_API_PREFIX "sessions/%" G_GINT64_FORMAT "/events", s);
    case KAGED_API_ROUTE_RETRY:
      return g_strdup_printf (KAGED_API_PREFIX "sessions/%" G_GINT64_FORMAT "/retry", s);
    case KAGED_API_ROUTE_RETRY_CANCEL:
      return g_strdup_printf (KAGED_API_PREFIX "sessions/%" G_GINT64_FORMAT "/retry/cancel", s);
    case KAGED_API_ROUTE_RETRY_NOW:
      return g_strdup_printf (KAGED_API_PREFIX "sessions/%" G_GINT64_FORMAT "/retry/now", s);
    case KAGED_API_ROUTE_RUN:
      return g_strdup_printf (KAGED_API_PREFIX "sessions/%" G_GINT64_FORMAT "/runs/%" G_GINT64_FORMAT,
                              s, i);
    case KAGED_API_ROUTE_CANCEL:
      return g_strdup_printf (KAGED_API_PREFIX "sessions/%" G_GINT64_FORMAT "/runs/%" G_GINT64_FORMAT
                              "/cancel", s, i);
    case KAGED_API_ROUTE_REGENERATE:
      return g_strdup_printf (KAGED_API_PREFIX "sessions/%" G_GINT64_FORMAT "/messages/%"
                              G_GINT64_FORMAT "/regenerate", s, i);
    case KAGED_API_ROUTE_EDIT:
      return g_strdup_printf (KAGED_API_PREFIX "sessions/%" G_GINT64_FORMAT "/messages/%"
                              G_GINT64_FORMAT "/edit", s, i);
    case KAGED_API_N_ROUTES:
    default:
      g_assert_not_reached ();
    }
}

static void
check_target (const char           *path,
              const KagedApiTarget *target)
{
  g_autofree char *again = canonical_path (target);
  KagedApiTarget reparsed;
  gboolean has_session = target->route != KAGED_API_ROUTE_SESSIONS;
  gboolean has_item = target->route == KAGED_API_ROUTE_RUN ||
                      target->route == KAGED_API_ROUTE_CANCEL ||
                      target->route == KAGED_API_ROUTE_REGENERATE ||
                      target->route == KAGED_API_ROUTE_EDIT;

  g_assert_cmpint (has_session, ==, target->session_id >= 1);
  g_assert_cmpint (has_item, ==, target->item_id >= 1);

  g_assert_true (kaged_api_parse_target (again, &reparsed));
  g_assert_cmpint (reparsed.route, ==, target->route);
  g_assert_cmpint (reparsed.session_id, ==, target->session_id);
  g_assert_cmpint (reparsed.item_id, ==, target->item_id);
}

static void
check_method (KagedApiRoute  route,
              const char    *method)
{
  g_auto(GStrv) allowed = g_strsplit (kaged_api_route_allow (route), ", ", -1);

  g_assert_cmpint (kaged_api_method_allowed (route, method), ==,
                   g_strv_contains ((const char * const *)allowed, method));
}

/* What the dispatcher and an endpoint read before they ask the engine, in
 * their order (kaged-api-routes.c). */
static void
read_request (SoupServerMessage    *msg,
              GHashTable           *query,
              const KagedApiTarget *target,
              const char           *method)
{
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(JsonObject) object = NULL;
  gboolean post = g_str_equal (method, "POST");
  gboolean optional = FALSE;
  const char *value = NULL;

  switch (target->route)
    {
    case KAGED_API_ROUTE_MESSAGES:
      if (!post)
        {
          gboolean include_superseded;
          guint64 after;
          guint64 limit;

          if (kaged_api_read_bool_parameter (msg, query, "include_superseded", &include_superseded) &&
              kaged_api_read_int_parameter (msg, query, "after", G_MAXINT64, &after) &&
              kaged_api_read_int_parameter (msg, query, "limit", 1000, &limit))
            g_assert_cmpuint (limit, <=, 1000);
          return;
        }
      break;

    case KAGED_API_ROUTE_EDIT:
      break;

    case KAGED_API_ROUTE_SESSIONS:
      if (!post)
        return;
      optional = TRUE;
      break;

    case KAGED_API_ROUTE_REGENERATE:
      optional = TRUE;
      break;

    case KAGED_API_ROUTE_SESSION:
    case KAGED_API_ROUTE_RUN:
    case KAGED_API_ROUTE_CANCEL:
    case KAGED_API_ROUTE_EVENTS:
    case KAGED_API_ROUTE_RETRY:
    case KAGED_API_ROUTE_RETRY_CANCEL:
    case KAGED_API_ROUTE_RETRY_NOW:
    case KAGED_API_N_ROUTES:
    default:
      return;
    }

  if (optional && soup_server_message_get_request_body (msg)->length == 0)
    return;

  /* A body is an object exactly when no error was given for it. */
  object = kaged_api_read_body (msg, FALSE, &parser);
  if (object == NULL)
    {
      g_assert_cmpuint (soup_server_message_get_status (msg), ==, SOUP_STATUS_BAD_REQUEST);
      return;
    }
  g_assert_cmpuint (soup_server_message_get_status (msg), ==, 0);

  if (target->route == KAGED_API_ROUTE_SESSIONS)
    kaged_api_read_string_member (msg, object, "title", TRUE, &value);
  else if (target->route != KAGED_API_ROUTE_REGENERATE &&
           kaged_api_read_string_member (msg, object, "content", FALSE, &value))
    g_assert_true (value == NULL || g_utf8_validate (value, -1, NULL));
}

static void
handler (SoupServer        *soup_server,
         SoupServerMessage *msg,
         const char        *path,
         GHashTable        *query,
         gpointer           user_data)
{
  KagedApiServer *self = user_data;
  SoupMessageBody *body = soup_server_message_get_request_body (msg);
  const char *method = soup_server_message_get_method (msg);
  KagedApiTarget target;
  guint status;

  /* The early handler refused it: the body was not kept. */
  if (soup_server_message_get_status (msg) != 0)
    {
      g_assert_cmpuint (soup_server_message_get_status (msg), >=, 400);
      assert_error_body (msg);
      return;
    }

  if ((guint64)body->length > self->max_body_size)
    {
      kaged_api_respond_error (msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "payload_too_large",
                               "too large");
      return;
    }

  if (!kaged_api_parse_target (path, &target))
    {
      kaged_api_respond_not_found (msg);
      assert_error_body (msg);
      return;
    }

  check_target (path, &target);
  check_method (target.route, method);

  if (!kaged_api_method_allowed (target.route, method))
    {
      kaged_api_respond_error (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "method_not_allowed",
                               "not allowed");
      return;
    }

  read_request (msg, query, &target, method);

  status = soup_server_message_get_status (msg);
  if (status != 0)
    {
      g_assert_cmpuint (status, >=, 400);
      assert_error_body (msg);
    }
  else
    {
      /* Where the endpoint would hand over to the engine. */
      soup_server_message_set_status (msg, SOUP_STATUS_NO_CONTENT, NULL);
    }
}

static void
fuzz_init (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *db_path = NULL;

  data_dir = g_dir_make_tmp ("kaged-fuzz-api-XXXXXX", &error);
  g_assert_no_error (error);
  db_path = g_build_filename (data_dir, "kaged.db", NULL);

  core = kaged_core_open (db_path, NULL, KAGED_CORE_FLAGS_NO_KEYRING, &error);
  g_assert_no_error (error);

  api = kaged_api_server_new (core, FUZZ_TOKEN);
  kaged_api_server_set_max_body_size (api, FUZZ_MAX_BODY_SIZE);

  /* As the API's server is set up: the same handlers in the same order,
   * the endpoints stopping where they would reach the engine. */
  local_address = g_inet_socket_address_new_from_string ("127.0.0.1", 8642);
  remote_address = g_inet_socket_address_new_from_string ("127.0.0.1", 40000);
  server = soup_server_new (NULL, NULL);
  soup_server_add_early_handler (server, "/", kaged_api_auth_early_handler, api, NULL);
  soup_server_add_handler (server, "/", handler, api, NULL);
}

int
LLVMFuzzerTestOneInput (const guint8 *data,
                        size_t        size)
{
  g_autoptr(GInputStream) input = NULL;
  g_autoptr(GOutputStream) output = NULL;
  g_autoptr(GIOStream) stream = NULL;
  g_autoptr(GError) error = NULL;
  const char *answer;
  gsize answer_length;

  if (server == NULL)
    fuzz_init ();

  input = g_memory_input_stream_new_from_data (g_memdup2 (data, size), size, g_free);
  output = g_memory_output_stream_new_resizable ();
  stream = g_simple_io_stream_new (input, output);

  g_assert_true (soup_server_accept_iostream (server, stream, local_address, remote_address, &error));
  g_assert_no_error (error);

  for (guint i = 0; i < FUZZ_MAX_ROUNDS && !g_io_stream_is_closed (stream); i++)
    g_main_context_iteration (NULL, FALSE);
  g_assert_true (g_io_stream_is_closed (stream));

  /* Whatever was answered is HTTP. */
  answer = g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (output));
  answer_length = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (output));
  if (answer_length > 0)
    g_assert_true (answer_length >= 9 && memcmp (answer, "HTTP/1.", 7) == 0);

  return 0;
}
