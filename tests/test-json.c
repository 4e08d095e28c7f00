/* test-json.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "kaged-json.h"

/* Arrays and objects in turn, @depth levels deep: valid JSON. */
static char *
nested (guint depth)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < depth; i++)
    g_string_append (s, i % 2 == 0 ? "[" : "{\"k\":");
  g_string_append (s, "1");
  for (guint i = depth; i > 0; i--)
    g_string_append_c (s, (i - 1) % 2 == 0 ? ']' : '}');

  return g_string_free (s, FALSE);
}

static void
test_nested_deeper (void)
{
  g_autofree char *at_bound = g_strnfill (KAGED_JSON_MAX_DEPTH, '[');
  g_autofree char *past_bound = g_strnfill (KAGED_JSON_MAX_DEPTH + 1, '[');

  g_assert_false (kaged_json_nested_deeper (NULL, 0, 1));
  g_assert_false (kaged_json_nested_deeper ("", -1, 0));
  g_assert_false (kaged_json_nested_deeper ("42", -1, 0));
  g_assert_true (kaged_json_nested_deeper ("[]", -1, 0));
  g_assert_false (kaged_json_nested_deeper ("[]", -1, 1));
  g_assert_false (kaged_json_nested_deeper ("[[]]", -1, 2));
  g_assert_true (kaged_json_nested_deeper ("[[]]", -1, 1));
  g_assert_false (kaged_json_nested_deeper ("[][][]{}", -1, 1));
  g_assert_true (kaged_json_nested_deeper ("{\"a\":{\"b\":[1]}}", -1, 2));

  /* Brackets inside strings, escaped quotes among them, do not count. */
  g_assert_false (kaged_json_nested_deeper ("[\"[[[{{{\"]", -1, 1));
  g_assert_false (kaged_json_nested_deeper ("[\"\\\"[[[\\\\\"]", -1, 1));
  g_assert_true (kaged_json_nested_deeper ("[\"\\\\\",[[]]]", -1, 2));

  /* Closing brackets never go below zero, and the length is respected. */
  g_assert_false (kaged_json_nested_deeper ("]]]][", -1, 1));
  g_assert_false (kaged_json_nested_deeper ("[[[[", 2, 2));
  g_assert_true (kaged_json_nested_deeper ("[[[[", 3, 2));

  /* An escape as the last byte is not read past. */
  g_assert_false (kaged_json_nested_deeper ("[\"\\", 3, 1));

  g_assert_false (kaged_json_nested_deeper (at_bound, -1, KAGED_JSON_MAX_DEPTH));
  g_assert_true (kaged_json_nested_deeper (past_bound, -1, KAGED_JSON_MAX_DEPTH));
}

static void
test_parse_bounded (void)
{
  g_autofree char *at_bound = nested (KAGED_JSON_MAX_DEPTH);
  g_autofree char *past_bound = nested (KAGED_JSON_MAX_DEPTH + 1);
  g_autofree char *crashing = g_strnfill (300000, '[');
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;

  g_assert_true (kaged_json_parse_bounded (parser, at_bound, -1, &error));
  g_assert_no_error (error);
  g_assert_true (JSON_NODE_HOLDS_ARRAY (json_parser_get_root (parser)));

  g_assert_false (kaged_json_parse_bounded (parser, past_bound, -1, &error));
  g_assert_error (error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_INVALID_DATA);
  g_clear_error (&error);

  g_assert_false (kaged_json_parse_bounded (parser, crashing, strlen (crashing), &error));
  g_assert_error (error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_INVALID_DATA);
  g_clear_error (&error);

  /* Other failures are json-glib's own. */
  g_assert_false (kaged_json_parse_bounded (parser, "{\"a\":", -1, &error));
  g_assert_nonnull (error);
  g_clear_error (&error);

  g_assert_true (kaged_json_parse_bounded (parser, "{\"a\":[1,2]}", 11, &error));
  g_assert_no_error (error);
  g_assert_true (JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)));
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/json/nested-deeper", test_nested_deeper);
  g_test_add_func ("/json/parse-bounded", test_parse_bounded);

  return g_test_run ();
}
