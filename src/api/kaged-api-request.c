/* kaged-api-request.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * Reading requests of the local HTTP API (the path, the JSON body, query
 * parameters) and writing its answers: JSON, and errors as
 * `{error: {code, message}}`.
 */

#define G_LOG_DOMAIN "kaged-api"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "kaged-api-server-private.h"
#include "kaged-api-wire.h"
#include "kaged-json.h"

#define JSON_CONTENT_TYPE  "application/json; charset=utf-8"

void
kaged_api_respond_json (SoupServerMessage *msg,
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

static JsonBuilder *
error_builder (const char *code,
               const char *message)
{
  JsonBuilder *builder = json_builder_new ();

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "error");
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "code");
  json_builder_add_string_value (builder, code);
  json_builder_set_member_name (builder, "message");
  json_builder_add_string_value (builder, message);
  json_builder_end_object (builder);
  json_builder_end_object (builder);

  return builder;
}

/* The body of an error answer: `{error: {code, message}}`. */
char *
kaged_api_error_to_string (const char *code,
                           const char *message,
                           gsize      *length)
{
  g_autoptr(JsonBuilder) builder = error_builder (code, message);

  return kaged_api_wire_to_string (builder, length);
}

void
kaged_api_respond_error (SoupServerMessage *msg,
                         guint              status,
                         const char        *code,
                         const char        *message)
{
  g_autoptr(JsonBuilder) builder = error_builder (code, message);

  kaged_api_respond_json (msg, status, builder);
}

void
kaged_api_respond_engine_error (SoupServerMessage *msg,
                                const GError      *error)
{
  if (error->domain == KAGED_ENGINE_ERROR)
    {
      switch ((KagedEngineError) error->code)
        {
        case KAGED_ENGINE_ERROR_EMPTY_CONTENT:
          kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "empty_content", error->message);
          return;

        case KAGED_ENGINE_ERROR_INVALID_CONTENT:
          kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_content", error->message);
          return;

        case KAGED_ENGINE_ERROR_TOO_LARGE:
          kaged_api_respond_error (msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "content_too_large",
                         error->message);
          return;

        case KAGED_ENGINE_ERROR_NOT_FOUND:
          kaged_api_respond_error (msg, SOUP_STATUS_NOT_FOUND, "not_found", error->message);
          return;

        case KAGED_ENGINE_ERROR_INVALID_ANCHOR:
          kaged_api_respond_error (msg, SOUP_STATUS_CONFLICT, "invalid_anchor", error->message);
          return;

        case KAGED_ENGINE_ERROR_RUN_FINISHED:
          kaged_api_respond_error (msg, SOUP_STATUS_CONFLICT, "run_finished", error->message);
          return;

        case KAGED_ENGINE_ERROR_UNKNOWN_PROFILE:
          kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "unknown_profile", error->message);
          return;

        case KAGED_ENGINE_ERROR_STORE:
        default:
          break;
        }
    }
  else if (error->domain == KAGED_CORE_ERROR)
    {
      switch ((KagedCoreError) error->code)
        {
        case KAGED_CORE_ERROR_RETRY_OFF:
          kaged_api_respond_error (msg, SOUP_STATUS_CONFLICT, "retry_off", error->message);
          return;

        case KAGED_CORE_ERROR_NO_RETRY:
          kaged_api_respond_error (msg, SOUP_STATUS_CONFLICT, "no_retry", error->message);
          return;

        default:
          break;
        }
    }
  else if (g_error_matches (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND))
    {
      kaged_api_respond_error (msg, SOUP_STATUS_NOT_FOUND, "not_found", error->message);
      return;
    }

  g_warning ("A request failed: %s", error->message);
  kaged_api_respond_error (msg, SOUP_STATUS_INTERNAL_SERVER_ERROR, "store_error", error->message);
}

void
kaged_api_respond_not_found (SoupServerMessage *msg)
{
  kaged_api_respond_error (msg, SOUP_STATUS_NOT_FOUND, "not_found",
                           _("There is nothing at this address"));
}

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

gboolean
kaged_api_parse_target (const char     *path,
                        KagedApiTarget *target)
{
  g_auto(GStrv) parts = NULL;
  guint n;

  if (path == NULL || !g_str_has_prefix (path, KAGED_API_PREFIX))
    return FALSE;

  parts = g_strsplit (path + strlen (KAGED_API_PREFIX), "/", -1);
  n = g_strv_length (parts);

  /* One trailing slash is forgiven. */
  if (n > 1 && parts[n - 1][0] == '\0')
    n--;

  if (n == 0 || !g_str_equal (parts[0], "sessions"))
    return FALSE;

  memset (target, 0, sizeof *target);

  if (n == 1)
    {
      target->route = KAGED_API_ROUTE_SESSIONS;
      return TRUE;
    }

  if (!parse_id (parts[1], &target->session_id))
    return FALSE;

  switch (n)
    {
    case 2:
      target->route = KAGED_API_ROUTE_SESSION;
      return TRUE;

    case 3:
      if (g_str_equal (parts[2], "messages"))
        target->route = KAGED_API_ROUTE_MESSAGES;
      else if (g_str_equal (parts[2], "events"))
        target->route = KAGED_API_ROUTE_EVENTS;
      else if (g_str_equal (parts[2], "retry"))
        target->route = KAGED_API_ROUTE_RETRY;
      else
        return FALSE;
      return TRUE;

    case 4:
      if (g_str_equal (parts[2], "retry"))
        {
          if (g_str_equal (parts[3], "cancel"))
            target->route = KAGED_API_ROUTE_RETRY_CANCEL;
          else if (g_str_equal (parts[3], "now"))
            target->route = KAGED_API_ROUTE_RETRY_NOW;
          else
            return FALSE;
          return TRUE;
        }
      if (!g_str_equal (parts[2], "runs") || !parse_id (parts[3], &target->item_id))
        return FALSE;
      target->route = KAGED_API_ROUTE_RUN;
      return TRUE;

    case 5:
      if (!parse_id (parts[3], &target->item_id))
        return FALSE;
      if (g_str_equal (parts[2], "messages") && g_str_equal (parts[4], "regenerate"))
        target->route = KAGED_API_ROUTE_REGENERATE;
      else if (g_str_equal (parts[2], "messages") && g_str_equal (parts[4], "edit"))
        target->route = KAGED_API_ROUTE_EDIT;
      else if (g_str_equal (parts[2], "runs") && g_str_equal (parts[4], "cancel"))
        target->route = KAGED_API_ROUTE_CANCEL;
      else
        return FALSE;
      return TRUE;

    default:
      return FALSE;
    }
}

/* Whether a string of the JSON text @data holds an escaped NUL (`\u0000`),
 * which json-glib would decode into a string cut short at it. */
static gboolean
has_escaped_nul (const char *data,
                 gsize       length)
{
  for (gsize i = 0; i + 1 < length; i++)
    {
      if (data[i] != '\\')
        continue;

      /* Every escape is two characters, the backslash and the next
       * (kaged_json_parse_bounded() has refused any other). */
      if (data[i + 1] == 'u' && i + 5 < length &&
          g_ascii_strncasecmp (data + i + 2, "0000", 4) == 0)
        return TRUE;
      i++;
    }

  return FALSE;
}

/* Parses the request body as a JSON object; an empty body is an empty
 * object when @optional. */
JsonObject *
kaged_api_read_body (SoupServerMessage  *msg,
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
      kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_utf8",
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

      kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "malformed_json",
                     _("The request needs a JSON body"));
      return NULL;
    }

  if (memchr (data, '\0', length) != NULL ||
      !kaged_json_parse_bounded (parser, data, length, &error))
    {
      g_autofree char *message = g_strdup_printf (_("The request body is not valid JSON: %s"),
                                                  error != NULL ? error->message : _("a NUL byte"));

      kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "malformed_json", message);
      return NULL;
    }

  if (has_escaped_nul (data, length))
    {
      kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_content",
                               _("Text in the request holds a NUL character (\\u0000)"));
      return NULL;
    }

  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_request",
                     _("The request body must be a JSON object"));
      return NULL;
    }

  *out_parser = g_steal_pointer (&parser);

  return json_object_ref (json_node_get_object (root));
}

/* Reads the string member @name: %TRUE with *@value NULL when it is absent
 * (or null and @nullable); a kaged_api_respond_error() and %FALSE when it has
 * another type. */
gboolean
kaged_api_read_string_member (SoupServerMessage  *msg,
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

    kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_request", message);
  }

  return FALSE;
}

gboolean
kaged_api_read_bool_parameter (SoupServerMessage *msg,
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

    kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_parameter", message);
  }

  return FALSE;
}

gboolean
kaged_api_read_int_parameter (SoupServerMessage *msg,
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

    kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_parameter", message);
  }

  return FALSE;
}
