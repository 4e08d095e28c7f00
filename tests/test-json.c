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

  /* json-glib also reads strings in single quotes and comments from one
   * '/' to the next: brackets and '"' inside them count for nothing. */
  g_assert_false (kaged_json_nested_deeper ("[ / [[[ / 1]", -1, 1));
  g_assert_false (kaged_json_nested_deeper ("['[[[\\', 1]", -1, 1));
  g_assert_true (kaged_json_nested_deeper ("[/ \" /, [[]]]", -1, 2));
  g_assert_true (kaged_json_nested_deeper ("['\"', [[]]]", -1, 2));
  g_assert_false (kaged_json_nested_deeper ("[/ [[[", -1, 1));

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

/* The first string in the array @json, as kaged_json_parse_bounded() reads it. */
static char *
bounded_string (const char  *json,
                GError     **error)
{
  g_autoptr(JsonParser) parser = json_parser_new ();

  if (!kaged_json_parse_bounded (parser, json, -1, error))
    return NULL;

  return g_strdup (json_array_get_string_element (json_node_get_array (json_parser_get_root (parser)), 0));
}

static void
test_strict_escapes (void)
{
  /* json-glib 1.6 reads some escapes JSON does not have: \6 and \777 as
   * octal bytes, \0 as the end of the string, \udc00 alone as half a
   * character, \q as q. Text from outside must not reach Kaged that way. */
  const char *invalid[] = {
    "[\"a\\60000b\"]",
    "[\"\\777\"]",
    "[\"a\\0b\"]",
    "[\"\\q\"]",
    "[\"\\x41\"]",
    "[\"\\v\"]",
    "[\"\\U0041\"]",
    "[\"\\u12\"]",
    "[\"\\u12g4\"]",
    "[\"a\\udc00b\"]",
    "[\"\\ud800\"]",
    "[\"\\ud800x\"]",
    "[\"\\ud800\\u0041\"]",
    "[\"\\ud800\\ud800\"]",
    "[\"ok\", \"\\6\"]",
    "{\"\\6\": 1}",
    /* Strings in single quotes and comments are not JSON either; a '"'
     * inside one must not hide the escape after it. */
    "{\"a\": /* \" */ \"\\777\"}",
    "{'\"': \"\\777\"}",
    "[' \" ', \"\\0z\"]",
    "[1 /x/]",
    "['a']",
  };
  const struct {
    const char *json;
    const char *text;
  } valid[] = {
    { "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]", "\"\\/\b\f\n\r\t" },
    { "[\"\\u0041\\u00e9\\u20AC\"]", "A\xc3\xa9\xe2\x82\xac" },
    { "[\"\\ud83d\\ude00\"]", "\xf0\x9f\x98\x80" },
    { "[\"\\uD83D\\uDE00\"]", "\xf0\x9f\x98\x80" },
    /* An escaped backslash ends its escape: what follows is text. */
    { "[\"\\\\6 \\\\u12\"]", "\\6 \\u12" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (invalid); i++)
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *text = NULL;

      g_test_message ("%s", invalid[i]);
      text = bounded_string (invalid[i], &error);
      g_assert_null (text);
      g_assert_error (error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_INVALID_DATA);
    }

  for (guint i = 0; i < G_N_ELEMENTS (valid); i++)
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *text = NULL;

      g_test_message ("%s", valid[i].json);
      text = bounded_string (valid[i].json, &error);
      g_assert_no_error (error);
      g_assert_cmpstr (text, ==, valid[i].text);
    }

  /* A backslash outside a string is json-glib's to refuse. */
  {
    g_autoptr(GError) error = NULL;
    g_autofree char *text = bounded_string ("[\\\"a\\\"]", &error);

    g_assert_null (text);
    g_assert_nonnull (error);
  }
}

static void
test_repaired_escapes (void)
{
  /* A provider's event keeps its text, repaired: an escape JSON does not
   * have is read as the backslash and the character after it, and a
   * character that cannot be (half a surrogate pair, U+0000) becomes
   * U+FFFD. */
  const struct {
    const char *json;
    const char *text;
  } cases[] = {
    { "{\"t\": \"a\\60000b\"}", "a\\60000b" },
    { "{\"t\": \"\\777\"}", "\\777" },
    { "{\"t\": \"a\\0b\"}", "a\\0b" },
    { "{\"t\": \"C:\\q\\x\"}", "C:\\q\\x" },
    { "{\"t\": \"a\\udc00b\"}", "a\xef\xbf\xbd" "b" },
    { "{\"t\": \"a\\ud800b\"}", "a\xef\xbf\xbd" "b" },
    { "{\"t\": \"a\\ud800\"}", "a\xef\xbf\xbd" },
    { "{\"t\": \"\\ud800\\ud83d\\ude00\"}", "\xef\xbf\xbd\xf0\x9f\x98\x80" },
    { "{\"t\": \"a\\u0000b\"}", "a\xef\xbf\xbd" "b" },
    { "{\"t\": \"\\u12\"}", "\\u12" },
    { "{\"t\": \"fine \\u00e9 \\n\"}", "fine \xc3\xa9 \n" },
    /* Single-quoted strings and comments are skipped as json-glib reads
     * them: a '"' inside one hides nothing, and a single-quoted string
     * has no escapes. */
    { "{\"t\": /* \" */ \"a\\777\"}", "a\\777" },
    { "{'\"': 1, \"t\": \"\\udc00\"}", "\xef\xbf\xbd" },
    { "{\"t\": 'a\\qb'}", "a\\qb" },
    /* A backslash as the very last byte. */
    { "{\"t\": \"a\\", NULL },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(JsonParser) parser = json_parser_new ();
      g_autoptr(GError) error = NULL;
      JsonObject *object;

      g_test_message ("%s", cases[i].json);
      object = kaged_json_parse_object (parser, cases[i].json, strlen (cases[i].json), &error);
      if (cases[i].text == NULL)
        {
          g_assert_null (object);
          g_assert_nonnull (error);
          continue;
        }

      g_assert_no_error (error);
      g_assert_nonnull (object);
      g_assert_cmpstr (kaged_json_get_string (object, "t"), ==, cases[i].text);
      g_assert_true (g_utf8_validate (kaged_json_get_string (object, "t"), -1, NULL));
    }

  /* A '"' in a comment hides no nesting: refused unparsed, not a crash. */
  {
    g_autoptr(GString) deep = g_string_new ("{\"t\": / \" / ");
    g_autoptr(JsonParser) parser = json_parser_new ();
    g_autoptr(GError) error = NULL;

    for (guint i = 0; i < 300000; i++)
      g_string_append_c (deep, '[');
    g_assert_null (kaged_json_parse_object (parser, deep->str, deep->len, &error));
    g_assert_nonnull (error);
  }
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/json/nested-deeper", test_nested_deeper);
  g_test_add_func ("/json/parse-bounded", test_parse_bounded);
  g_test_add_func ("/json/strict-escapes", test_strict_escapes);
  g_test_add_func ("/json/repaired-escapes", test_repaired_escapes);

  return g_test_run ();
}
