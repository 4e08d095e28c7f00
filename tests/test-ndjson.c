/* test-ndjson.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "kaged-ndjson-parser.h"
#include "kaged-ollama-provider.h"
#include "kaged-provider.h"

static gboolean
record_line (const char  *line,
             gsize        len,
             gpointer     user_data,
             GError     **error)
{
  GString *out = user_data;

  g_assert_null (memchr (line, '\n', len));
  g_string_append_len (out, line, len);
  g_string_append_c (out, '|');

  return TRUE;
}

static char *
parse_in_pieces (const char *input,
                 gsize       len,
                 gsize       piece)
{
  GString *out = g_string_new (NULL);
  g_autoptr(KagedNdjsonParser) parser = kaged_ndjson_parser_new (record_line, out);
  g_autoptr(GError) error = NULL;

  for (gsize i = 0; i < len; i += piece)
    {
      g_assert_true (kaged_ndjson_parser_feed (parser, input + i, MIN (piece, len - i), &error));
      g_assert_no_error (error);
    }
  g_assert_true (kaged_ndjson_parser_finish (parser, &error));
  g_assert_no_error (error);

  return g_string_free (out, FALSE);
}

static void
test_lines (void)
{
  const char *input = "{\"a\":1}\n\n{\"b\":2}\r\n   \r\n\t\n{\"c\":\"x\\ny\"}\n{\"last\":true}";

  for (gsize piece = 1; piece <= strlen (input); piece++)
    {
      g_autofree char *lines = parse_in_pieces (input, strlen (input), piece);

      g_assert_cmpstr (lines, ==, "{\"a\":1}|{\"b\":2}|{\"c\":\"x\\ny\"}|{\"last\":true}|");
    }
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

static void
test_random_splits (void)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (112926);
  gsize len = 0;
  g_autofree char *input = read_fixture ("ollama-stream.ndjson", &len);
  g_autofree char *whole = parse_in_pieces (input, len, len);
  g_autofree char *bytewise = parse_in_pieces (input, len, 1);

  g_assert_cmpstr (bytewise, ==, whole);

  for (guint i = 0; i < 300; i++)
    {
      GString *out = g_string_new (NULL);
      g_autoptr(KagedNdjsonParser) parser = kaged_ndjson_parser_new (record_line, out);
      g_autofree char *lines = NULL;
      gsize at = 0;

      while (at < len)
        {
          gsize piece = g_rand_int_range (rand, 0, 50);

          /* One draw: MIN() would evaluate its arguments twice. */
          piece = MIN (piece, len - at);

          g_assert_true (kaged_ndjson_parser_feed (parser, input + at, piece, NULL));
          at += piece;
        }
      g_assert_true (kaged_ndjson_parser_finish (parser, NULL));
      lines = g_string_free (out, FALSE);
      g_assert_cmpstr (lines, ==, whole);
    }
}

static void
test_cap (void)
{
  GString *out = g_string_new (NULL);
  g_autoptr(KagedNdjsonParser) parser = kaged_ndjson_parser_new (record_line, out);
  g_autoptr(GError) error = NULL;
  g_autofree char *chunk = g_malloc (4096);
  gboolean ok = TRUE;
  gsize fed = 0;

  memset (chunk, 'x', 4096);
  kaged_ndjson_parser_set_max_size (parser, 32 * 1024);

  while (ok && fed < 16 * 1024 * 1024)
    {
      ok = kaged_ndjson_parser_feed (parser, chunk, 4096, &error);
      fed += 4096;
      g_assert_cmpuint (kaged_ndjson_parser_get_buffered (parser), <=, 4 * 32 * 1024);
    }
  g_assert_false (ok);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_assert_cmpuint (fed, <=, 32 * 1024 + 4096);
  g_clear_error (&error);

  /* A long line inside one chunk is refused too. */
  {
    GString *out2 = g_string_new (NULL);
    g_autoptr(KagedNdjsonParser) parser2 = kaged_ndjson_parser_new (record_line, out2);
    g_autofree char *big = g_malloc (8193);

    memset (big, 'y', 8192);
    big[8192] = '\n';
    kaged_ndjson_parser_set_max_size (parser2, 1024);
    g_assert_false (kaged_ndjson_parser_feed (parser2, big, 8193, &error));
    g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
    g_assert_cmpstr (out2->str, ==, "");
    g_string_free (out2, TRUE);
  }

  g_assert_cmpstr (out->str, ==, "");
  g_string_free (out, TRUE);
}

typedef struct
{
  GString *text;
  GString *thinking;
} Reply;

static void
on_delta (KagedChat      *chat,
          KagedDeltaKind  kind,
          const char     *text,
          Reply          *reply)
{
  g_assert_true (g_utf8_validate (text, -1, NULL));
  g_string_append (kind == KAGED_DELTA_TEXT ? reply->text : reply->thinking, text);
}

static KagedChat *
decode (const char  *input,
        gsize        len,
        gsize        piece,
        Reply       *reply,
        gboolean    *done,
        GError     **error)
{
  KagedChat *chat = kaged_chat_new (NULL, NULL);
  g_autoptr(KagedStreamDecoder) decoder = kaged_ollama_decoder_new (chat, NULL, 1024 * 1024);
  gboolean ok = TRUE;

  reply->text = g_string_new (NULL);
  reply->thinking = g_string_new (NULL);
  g_signal_connect (chat, "delta", G_CALLBACK (on_delta), reply);

  for (gsize i = 0; ok && i < len; i += piece)
    ok = decoder->feed (decoder, input + i, MIN (piece, len - i), error);
  if (ok)
    ok = decoder->finish (decoder, error);
  *done = decoder->done;
  kaged_chat_flush (chat);

  return chat;
}

static void
reply_clear (Reply *reply)
{
  g_string_free (reply->text, TRUE);
  g_string_free (reply->thinking, TRUE);
}

static void
test_ollama_fixture (void)
{
  gsize len = 0;
  g_autofree char *input = read_fixture ("ollama-stream.ndjson", &len);

  for (gsize piece = 1; piece <= len; piece = piece < 16 ? piece + 1 : piece * 3)
    {
      g_autoptr(GError) error = NULL;
      gboolean done = FALSE;
      Reply reply;
      g_autoptr(KagedChat) chat G_GNUC_UNUSED = decode (input, len, piece, &reply, &done, &error);

      g_assert_no_error (error);
      g_assert_true (done);
      g_assert_cmpstr (reply.thinking->str, ==, "Greeting in Japanese…simple.");
      g_assert_cmpstr (reply.text->str, ==, "こんにちは、世界！");
      g_assert_cmpstr (kaged_chat_get_finish_reason (chat), ==, "stop");
      g_assert_cmpint (kaged_chat_get_input_tokens (chat), ==, 26);
      g_assert_cmpint (kaged_chat_get_output_tokens (chat), ==, 282);
      reply_clear (&reply);
    }
}

static void
test_ollama_error_line (void)
{
  const char *input =
    "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"Partial\"},\"done\":false}\n"
    "{\"error\":\"an error was encountered while running the model: unexpected EOF\"}\n";
  g_autoptr(GError) error = NULL;
  gboolean done = FALSE;
  Reply reply;
  g_autoptr(KagedChat) chat G_GNUC_UNUSED = decode (input, strlen (input), 5, &reply, &done, &error);

  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_SERVER_ERROR);
  g_assert_cmpstr (kaged_provider_error_get_provider_message (error), ==,
                   "an error was encountered while running the model: unexpected EOF");
  g_assert_false (done);
  g_assert_cmpstr (reply.text->str, ==, "Partial");
  reply_clear (&reply);
}

/* A content piece that ends inside a character is completed by the next. */
static void
test_split_character (void)
{
  const char *input =
    "{\"message\":{\"content\":\"caf\xC3\"},\"done\":false}\n"
    "{\"message\":{\"content\":\"\xA9\"},\"done\":true}\n";
  g_autoptr(GError) error = NULL;
  gboolean done = FALSE;
  Reply reply;
  g_autoptr(KagedChat) chat G_GNUC_UNUSED = decode (input, strlen (input), 3, &reply, &done, &error);

  /* Each line is JSON of its own: its broken byte is repaired there. */
  g_assert_no_error (error);
  g_assert_true (done);
  g_assert_cmpstr (reply.text->str, ==, "caf\xEF\xBF\xBD\xEF\xBF\xBD");
  reply_clear (&reply);
}

/* A line nested deeper than json-glib's recursion can take is refused
 * before it is parsed. */
static void
test_deep_line (void)
{
  g_autoptr(GString) input = g_string_new ("{\"message\":{\"content\":\"Partial\"},\"done\":false}\n");
  g_autoptr(GError) error = NULL;
  gboolean done = FALSE;
  Reply reply;
  g_autoptr(KagedChat) chat = NULL;

  g_string_append (input, "{\"message\":");
  for (guint i = 0; i < 200000; i++)
    g_string_append_c (input, '[');
  g_string_append_c (input, '\n');

  chat = decode (input->str, input->len, 4096, &reply, &done, &error);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_assert_false (done);
  g_assert_cmpstr (reply.text->str, ==, "Partial");
  reply_clear (&reply);
}

/* Every byte of a line reaches the callback, a NUL among them, whether the
 * line ends with its LF or with the stream. */
static void
test_embedded_nul (void)
{
  static const char input[] = "{\"a\":\"x\0y\"}\n{\"b\":\"p\0q\"}";
  gsize len = sizeof input - 1;

  for (gsize piece = 1; piece <= len; piece++)
    {
      GString *out = g_string_new (NULL);
      g_autoptr(KagedNdjsonParser) parser = kaged_ndjson_parser_new (record_line, out);
      g_autoptr(GError) error = NULL;
      static const char expected[] = "{\"a\":\"x\0y\"}|{\"b\":\"p\0q\"}|";

      for (gsize i = 0; i < len; i += piece)
        g_assert_true (kaged_ndjson_parser_feed (parser, input + i, MIN (piece, len - i), &error));
      g_assert_true (kaged_ndjson_parser_finish (parser, &error));
      g_assert_no_error (error);

      g_assert_cmpmem (out->str, out->len, expected, sizeof expected - 1);
      g_string_free (out, TRUE);
    }
}

static gboolean
count_line (const char  *line,
            gsize        len,
            gpointer     user_data,
            GError     **error)
{
  guint *count = user_data;

  (*count)++;
  return TRUE;
}

/* Feeding nothing, from no buffer, is allowed and changes nothing. */
static void
test_feed_nothing (void)
{
  guint count = 0;
  g_autoptr(KagedNdjsonParser) parser = kaged_ndjson_parser_new (count_line, &count);
  g_autoptr(GError) error = NULL;

  g_assert_true (kaged_ndjson_parser_feed (parser, NULL, 0, &error));
  g_assert_true (kaged_ndjson_parser_feed (parser, "{\"a\"", 5, &error));
  g_assert_true (kaged_ndjson_parser_feed (parser, NULL, 0, &error));
  g_assert_true (kaged_ndjson_parser_feed (parser, ":1}\n", 4, &error));
  g_assert_true (kaged_ndjson_parser_feed (parser, NULL, 0, &error));
  g_assert_true (kaged_ndjson_parser_finish (parser, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count, ==, 1);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/ndjson/lines", test_lines);
  g_test_add_func ("/ndjson/random-splits", test_random_splits);
  g_test_add_func ("/ndjson/cap", test_cap);
  g_test_add_func ("/ndjson/ollama-fixture", test_ollama_fixture);
  g_test_add_func ("/ndjson/ollama-error-line", test_ollama_error_line);
  g_test_add_func ("/ndjson/split-character", test_split_character);
  g_test_add_func ("/ndjson/deep-line", test_deep_line);
  g_test_add_func ("/ndjson/embedded-nul", test_embedded_nul);
  g_test_add_func ("/ndjson/feed-nothing", test_feed_nothing);

  return g_test_run ();
}
