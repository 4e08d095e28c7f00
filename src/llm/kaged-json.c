/* kaged-json.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-json"

#include "config.h"

#include <glib/gi18n.h>
#include <string.h>

#include "kaged-json.h"
#include "kaged-provider.h"
#include "kaged-retry-class.h"

/*
 * JSON from outside (a provider's events and error bodies, a request to
 * the HTTP API) is checked for its nesting before json-glib sees it:
 * json-glib's parser recurses once per array or object, so a document of
 * "[[[[…" some 75,000 levels deep overflows the stack. The check is one
 * pass over the bytes that counts brackets outside strings; it does not
 * validate anything else, json-glib does that afterwards.
 */

/**
 * kaged_json_nested_deeper:
 * @data: a JSON text, valid or not
 * @length: its length, or -1 when it is nul-terminated
 * @max_depth: the deepest nesting allowed
 *
 * Returns: %TRUE when arrays and objects in @data nest deeper than
 *   @max_depth
 */
gboolean
kaged_json_nested_deeper (const char *data,
                          gssize      length,
                          guint       max_depth)
{
  const char *p = data;
  const char *end;
  gboolean in_string = FALSE;
  guint depth = 0;

  if (data == NULL)
    return FALSE;

  end = data + (length < 0 ? strlen (data) : (gsize)length);

  for (; p < end; p++)
    {
      if (in_string)
        {
          if (*p == '\\' && p + 1 < end)
            p++;
          else if (*p == '"')
            in_string = FALSE;
          continue;
        }

      switch (*p)
        {
        case '"':
          in_string = TRUE;
          break;

        case '[':
        case '{':
          if (++depth > max_depth)
            return TRUE;
          break;

        case ']':
        case '}':
          if (depth > 0)
            depth--;
          break;

        default:
          break;
        }
    }

  return FALSE;
}

/**
 * kaged_json_parse_bounded:
 * @parser: the parser to load
 * @data: a JSON text from outside
 * @length: its length, or -1 when it is nul-terminated
 * @error: return location for a #JSON_PARSER_ERROR
 *
 * json_parser_load_from_data(), refusing first, without parsing, a text
 * nested deeper than %KAGED_JSON_MAX_DEPTH (with
 * %JSON_PARSER_ERROR_INVALID_DATA). Use it for every JSON that does not
 * come from Kaged itself.
 *
 * Returns: %TRUE when @parser holds @data
 */
gboolean
kaged_json_parse_bounded (JsonParser  *parser,
                          const char  *data,
                          gssize       length,
                          GError     **error)
{
  g_return_val_if_fail (JSON_IS_PARSER (parser), FALSE);
  g_return_val_if_fail (data != NULL || length == 0, FALSE);

  if (kaged_json_nested_deeper (data, length, KAGED_JSON_MAX_DEPTH))
    {
      g_set_error (error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_INVALID_DATA,
                   _("JSON nested deeper than %u levels"), KAGED_JSON_MAX_DEPTH);
      return FALSE;
    }

  return json_parser_load_from_data (parser, data != NULL ? data : "", length, error);
}

JsonObject *
kaged_json_get_object (JsonObject *object,
                       const char *name)
{
  JsonNode *node = object != NULL ? json_object_get_member (object, name) : NULL;

  return node != NULL && JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
}

JsonArray *
kaged_json_get_array (JsonObject *object,
                      const char *name)
{
  JsonNode *node = object != NULL ? json_object_get_member (object, name) : NULL;

  return node != NULL && JSON_NODE_HOLDS_ARRAY (node) ? json_node_get_array (node) : NULL;
}

const char *
kaged_json_get_string (JsonObject *object,
                       const char *name)
{
  JsonNode *node = object != NULL ? json_object_get_member (object, name) : NULL;

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_STRING)
    return NULL;
  return json_node_get_string (node);
}

gboolean
kaged_json_get_int (JsonObject *object,
                    const char *name,
                    gint64     *value)
{
  JsonNode *node = object != NULL ? json_object_get_member (object, name) : NULL;

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node))
    return FALSE;

  switch (json_node_get_value_type (node))
    {
    case G_TYPE_INT64:
      *value = json_node_get_int (node);
      return TRUE;

    case G_TYPE_DOUBLE:
      *value = (gint64)json_node_get_double (node);
      return TRUE;

    default:
      return FALSE;
    }
}

gboolean
kaged_json_get_bool (JsonObject *object,
                     const char *name)
{
  JsonNode *node = object != NULL ? json_object_get_member (object, name) : NULL;

  return node != NULL && JSON_NODE_HOLDS_VALUE (node) &&
         json_node_get_value_type (node) == G_TYPE_BOOLEAN &&
         json_node_get_boolean (node);
}

/**
 * kaged_json_parse_object:
 *
 * Returns: (transfer none) (nullable): the root object of @data, owned by
 *   @parser; %NULL with a protocol_error when @data is not a JSON object
 *   or is nested deeper than %KAGED_JSON_MAX_DEPTH
 */
JsonObject *
kaged_json_parse_object (JsonParser  *parser,
                         const char  *data,
                         gsize        len,
                         GError     **error)
{
  g_autofree char *repaired = NULL;
  JsonNode *root;

  if (len > G_MAXSSIZE)
    len = G_MAXSSIZE;

  if (kaged_json_nested_deeper (data, len, KAGED_JSON_MAX_DEPTH))
    {
      g_propagate_error (error,
                         kaged_provider_error_new (KAGED_RETRY_CLASS_PROTOCOL_ERROR,
                                                   _("The provider sent JSON nested deeper than %u levels"),
                                                   KAGED_JSON_MAX_DEPTH));
      return NULL;
    }

  /* Invalid UTF-8 is repaired here so one bad byte does not lose the event. */
  if (!g_utf8_validate_len (data, len, NULL))
    {
      repaired = g_utf8_make_valid (data, len);
      data = repaired;
      len = strlen (repaired);
    }

  if (!json_parser_load_from_data (parser, data, len, NULL) ||
      (root = json_parser_get_root (parser)) == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_propagate_error (error,
                         kaged_provider_error_new (KAGED_RETRY_CLASS_PROTOCOL_ERROR,
                                                   _("The provider sent a piece of its reply that is not a JSON object")));
      return NULL;
    }

  return json_node_get_object (root);
}
