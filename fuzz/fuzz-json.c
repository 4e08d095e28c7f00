/* fuzz-json.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include "kaged-fuzz.h"
#include "kaged-json.h"

/*
 * kaged_json_parse_bounded() against json-glib itself: on JSON within the
 * nesting bound both must agree, and beyond it the bounded parse refuses
 * without parsing (a document nested deeper than the bound is never given
 * to json-glib here, whose recursion it could exhaust).
 */

int
LLVMFuzzerTestOneInput (const guint8 *data,
                        size_t        size)
{
  const char *text = (const char *)data;
  g_autoptr(JsonParser) bounded = json_parser_new ();
  g_autoptr(GError) error = NULL;
  gboolean ok;

  ok = kaged_json_parse_bounded (bounded, text, size, &error);

  if (kaged_json_nested_deeper (text, size, KAGED_JSON_MAX_DEPTH))
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

  return 0;
}
