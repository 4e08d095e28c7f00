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

/*
 * json-glib 1.6 reads JSON with GScanner, which also takes two things
 * JSON does not have: a string in single quotes (no escapes inside it)
 * and a comment from one '/' to the next (which covers a C comment). A
 * check that walks the bytes must skip them as json-glib does, or a '"'
 * inside one would turn what follows inside out.
 */

/* @p is at a '\'' or a '/' outside a string: where the quoted string or
 * comment it starts ends (after its closing character), or @end when it
 * does not (json-glib then refuses the text). */
static const char *
skip_quoted_or_comment (const char *p,
                        const char *end)
{
  const char *close = memchr (p + 1, *p, end - p - 1);

  return close != NULL ? close + 1 : end;
}

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

        case '\'':
        case '/':
          p = skip_quoted_or_comment (p, end) - 1;
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

/*
 * json-glib 1.6 reads escapes JSON does not have: "\6" and "\777" as
 * octal bytes, "\0" as the end of the string, "\q" as "q", "\U" as "\u",
 * and "\udc00" without its pair as three bytes that are not UTF-8. Text
 * read that way would reach the database and GTK, which need UTF-8. So
 * every string's escapes are checked before json-glib sees them: refused
 * in what the HTTP API is sent, repaired in what a provider sends.
 */

typedef enum {
  ESCAPE_VALID,
  ESCAPE_UNKNOWN,     /* not a JSON escape */
  ESCAPE_UNPAIRED,    /* half of a UTF-16 surrogate pair */
  ESCAPE_NUL,         /* \u0000, which json-glib reads as the end of the string */
  ESCAPE_NOT_JSON,    /* not an escape: a string in single quotes or a comment */
} EscapeKind;

static gboolean
read_hex4 (const char *p,
           const char *end,
           gunichar   *value)
{
  gunichar v = 0;

  if (end - p < 4)
    return FALSE;

  for (guint i = 0; i < 4; i++)
    {
      int digit = g_ascii_xdigit_value (p[i]);

      if (digit < 0)
        return FALSE;
      v = v * 16 + (gunichar)digit;
    }

  *value = v;
  return TRUE;
}

/* Reads the escape at @p, a backslash inside a string; *@length is how
 * many bytes it takes (an unknown escape takes only its backslash, so the
 * character after it is read as text). */
static EscapeKind
read_escape (const char *p,
             const char *end,
             gsize      *length)
{
  gunichar value;
  gunichar low;

  *length = 1;
  if (p + 1 >= end)
    return ESCAPE_VALID;  /* an unterminated string: json-glib refuses it */

  if (strchr ("\"\\/bfnrt", p[1]) != NULL && p[1] != '\0')
    {
      *length = 2;
      return ESCAPE_VALID;
    }

  if (p[1] != 'u' || !read_hex4 (p + 2, end, &value))
    return ESCAPE_UNKNOWN;

  *length = 6;
  if (value == 0)
    return ESCAPE_NUL;
  if (value >= 0xdc00 && value <= 0xdfff)
    return ESCAPE_UNPAIRED;
  if (value < 0xd800 || value > 0xdbff)
    return ESCAPE_VALID;

  if (end - p >= 12 && p[6] == '\\' && p[7] == 'u' && read_hex4 (p + 8, end, &low) &&
      low >= 0xdc00 && low <= 0xdfff)
    {
      *length = 12;
      return ESCAPE_VALID;
    }

  return ESCAPE_UNPAIRED;
}

/* Walks the escapes in the strings of @data. Without @repaired, stops at
 * the first that is unknown or unpaired, or at a string in single quotes
 * or a comment, and returns %FALSE with its offset and kind. With
 * @repaired, skips single-quoted strings and comments as json-glib does,
 * writes @data to it with an escape made text ("\q" becomes "\\q") or
 * U+FFFD (an unpaired half, \u0000), and returns %FALSE when anything was
 * repaired. */
static gboolean
walk_escapes (const char *data,
              gsize       length,
              GString    *repaired,
              gsize      *bad_offset,
              EscapeKind *bad_kind)
{
  const char *p = data;
  const char *end = data + length;
  const char *copied = data;
  gboolean in_string = FALSE;
  gboolean clean = TRUE;

  while (p < end)
    {
      EscapeKind kind;
      gsize escape_length;

      if (*p == '"')
        {
          in_string = !in_string;
          p++;
          continue;
        }

      if (!in_string && (*p == '\'' || *p == '/'))
        {
          if (repaired == NULL)
            {
              *bad_offset = (gsize)(p - data);
              *bad_kind = ESCAPE_NOT_JSON;
              return FALSE;
            }
          p = skip_quoted_or_comment (p, end);
          continue;
        }

      if (!in_string || *p != '\\')
        {
          p++;
          continue;
        }

      kind = read_escape (p, end, &escape_length);
      if (kind == ESCAPE_VALID || (kind == ESCAPE_NUL && repaired == NULL))
        {
          p += escape_length;
          continue;
        }

      clean = FALSE;
      if (repaired == NULL)
        {
          *bad_offset = (gsize)(p - data);
          *bad_kind = kind;
          return FALSE;
        }

      g_string_append_len (repaired, copied, p - copied);
      g_string_append (repaired, kind == ESCAPE_UNKNOWN ? "\\\\" : "\\ufffd");
      p += escape_length;
      copied = p;
    }

  if (repaired != NULL && !clean)
    g_string_append_len (repaired, copied, end - copied);

  return clean;
}

/**
 * kaged_json_escapes_valid:
 * @data: a JSON text, valid or not
 * @length: its length, or -1 when it is nul-terminated
 * @error: return location for a %JSON_PARSER_ERROR_INVALID_DATA
 *
 * Checks that every escape in the strings of @data is one JSON has, and
 * that every \u escape of half a UTF-16 surrogate pair has its other
 * half; and that there is no string in single quotes or comment, which
 * json-glib takes too. \u0000 is valid JSON and passes.
 *
 * Returns: %TRUE when they are
 */
gboolean
kaged_json_escapes_valid (const char  *data,
                          gssize       length,
                          GError     **error)
{
  gsize bad_offset = 0;
  EscapeKind bad_kind = ESCAPE_VALID;
  gsize len;

  if (data == NULL)
    return TRUE;

  len = length < 0 ? strlen (data) : (gsize)length;
  if (walk_escapes (data, len, NULL, &bad_offset, &bad_kind))
    return TRUE;

  if (bad_kind == ESCAPE_NOT_JSON)
    {
      g_set_error (error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_INVALID_DATA,
                   data[bad_offset] == '/'
                   ? _("The “/” at byte %" G_GSIZE_FORMAT " starts a comment, which JSON does not have")
                   : _("The “'” at byte %" G_GSIZE_FORMAT " starts a string in single quotes, which JSON does not have"),
                   bad_offset + 1);
    }
  else if (bad_kind == ESCAPE_UNPAIRED)
    {
      g_set_error (error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_INVALID_DATA,
                   _("“%.6s” at byte %" G_GSIZE_FORMAT " is half of a character without its other half"),
                   data + bad_offset, bad_offset + 1);
    }
  else if (bad_offset + 1 < len && g_ascii_isgraph (data[bad_offset + 1]))
    {
      g_set_error (error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_INVALID_DATA,
                   _("“%.2s” at byte %" G_GSIZE_FORMAT " is not a JSON escape"),
                   data + bad_offset, bad_offset + 1);
    }
  else
    {
      g_set_error (error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_INVALID_DATA,
                   _("The backslash at byte %" G_GSIZE_FORMAT " does not start a JSON escape"),
                   bad_offset + 1);
    }

  return FALSE;
}

/**
 * kaged_json_repair:
 * @data: a JSON text from a provider
 * @length: its length
 * @repaired_length: (out): the length of the repaired text
 *
 * Makes @data safe to hand to json-glib without losing what it says:
 * bytes that are not UTF-8 become U+FFFD, an escape JSON does not have is
 * read as text ("\q" as a backslash and q), and a \u escape json-glib
 * cannot turn into UTF-8 (half a surrogate pair, \u0000) becomes U+FFFD.
 *
 * Returns: (transfer full) (nullable): the repaired text, or %NULL when
 *   @data needs no repair
 */
char *
kaged_json_repair (const char *data,
                   gsize       length,
                   gsize      *repaired_length)
{
  g_autofree char *valid = NULL;
  GString *repaired;

  if (!g_utf8_validate_len (data, length, NULL))
    {
      valid = g_utf8_make_valid (data, length);
      data = valid;
      length = strlen (valid);
    }

  repaired = g_string_new (NULL);
  if (walk_escapes (data, length, repaired, NULL, NULL))
    {
      g_string_free (repaired, TRUE);
      if (valid != NULL)
        *repaired_length = length;
      return g_steal_pointer (&valid);
    }

  *repaired_length = repaired->len;
  return g_string_free (repaired, FALSE);
}

/**
 * kaged_json_parse_bounded:
 * @parser: the parser to load
 * @data: a JSON text from outside
 * @length: its length, or -1 when it is nul-terminated
 * @error: return location for a #JSON_PARSER_ERROR
 *
 * json_parser_load_from_data(), refusing first, without parsing, a text
 * nested deeper than %KAGED_JSON_MAX_DEPTH or with an escape that
 * kaged_json_escapes_valid() refuses (with
 * %JSON_PARSER_ERROR_INVALID_DATA). Use it for JSON that must be exactly
 * right, such as a request to the HTTP API.
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

  if (!kaged_json_escapes_valid (data, length, error))
    return FALSE;

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
  gsize repaired_length = 0;
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

  /* Repaired here so one bad byte or escape does not lose the event. */
  repaired = kaged_json_repair (data, len, &repaired_length);
  if (repaired != NULL)
    {
      data = repaired;
      len = repaired_length;
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
