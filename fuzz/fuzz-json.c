/* fuzz-json.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include "kaged-fuzz.h"
#include "kaged-json.h"

/*
 * kaged_json_parse_bounded() against json-glib itself: on JSON within the
 * nesting bound and with JSON's escapes only, both must agree, and beyond
 * either the bounded parse refuses without parsing (a document nested
 * deeper than the bound is never given to json-glib here, whose recursion
 * it could exhaust). Whatever either of Kaged's parses accepts, a
 * provider's text repaired included, holds nothing but UTF-8.
 */

static void
assert_utf8 (JsonNode *node)
{
  switch (json_node_get_node_type (node))
    {
    case JSON_NODE_OBJECT:
      {
        JsonObjectIter iter;
        const char *name;
        JsonNode *member;

        json_object_iter_init (&iter, json_node_get_object (node));
        while (json_object_iter_next (&iter, &name, &member))
          {
            g_assert_true (g_utf8_validate (name, -1, NULL));
            assert_utf8 (member);
          }
      }
      break;

    case JSON_NODE_ARRAY:
      {
        JsonArray *array = json_node_get_array (node);

        for (guint i = 0; i < json_array_get_length (array); i++)
          assert_utf8 (json_array_get_element (array, i));
      }
      break;

    case JSON_NODE_VALUE:
      if (json_node_get_value_type (node) == G_TYPE_STRING)
        g_assert_true (g_utf8_validate (json_node_get_string (node), -1, NULL));
      break;

    case JSON_NODE_NULL:
    default:
      break;
    }
}

int
LLVMFuzzerTestOneInput (const guint8 *data,
                        size_t        size)
{
  const char *text = (const char *)data;
  g_autoptr(JsonParser) bounded = json_parser_new ();
  g_autoptr(JsonParser) repaired = json_parser_new ();
  g_autoptr(GError) error = NULL;
  JsonObject *object;
  gboolean ok;

  ok = kaged_json_parse_bounded (bounded, text, size, &error);
  if (ok && json_parser_get_root (bounded) != NULL)
    assert_utf8 (json_parser_get_root (bounded));

  if (kaged_json_nested_deeper (text, size, KAGED_JSON_MAX_DEPTH) ||
      !kaged_json_escapes_valid (text, size, NULL))
    {
      g_assert_false (ok);
      g_assert_error (error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_INVALID_DATA);
    }
  else
    {
      g_autoptr(JsonParser) plain = json_parser_new ();
      gboolean plain_ok = json_parser_load_from_data (plain, text, size, NULL);

      g_assert_cmpint (ok, ==, plain_ok);
      if (ok && json_parser_get_root (plain) != NULL)
        g_assert_cmpint (json_node_get_node_type (json_parser_get_root (bounded)), ==,
                         json_node_get_node_type (json_parser_get_root (plain)));
    }

  object = kaged_json_parse_object (repaired, text, size, NULL);
  if (object != NULL)
    assert_utf8 (json_parser_get_root (repaired));

  return 0;
}
