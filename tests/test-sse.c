/* test-sse.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "kaged-anthropic-provider.h"
#include "kaged-openai-provider.h"
#include "kaged-provider.h"
#include "kaged-sse-parser.h"

/* Every event as one line "type|id|data" (data with LF shown as ⏎). */
static gboolean
record_event (const KagedSseEvent  *event,
              gpointer              user_data,
              GError              **error)
{
  GString *out = user_data;
  g_autoptr(GString) data = g_string_new_len (event->data, event->data_len);

  g_assert_cmpuint (strlen (event->data), ==, event->data_len);
  g_string_replace (data, "\n", "⏎", 0);
  g_string_append_printf (out, "%s|%s|%s\n", event->type, event->id, data->str);

  return TRUE;
}

static char *
parse_in_pieces (const char *input,
                 gsize       len,
                 gsize       piece)
{
  GString *out = g_string_new (NULL);
  g_autoptr(KagedSseParser) parser = kaged_sse_parser_new (record_event, out);
  g_autoptr(GError) error = NULL;

  for (gsize i = 0; i < len; i += piece)
    {
      g_assert_true (kaged_sse_parser_feed (parser, input + i, MIN (piece, len - i), &error));
      g_assert_no_error (error);
    }
  g_assert_true (kaged_sse_parser_finish (parser, &error));
  g_assert_no_error (error);

  return g_string_free (out, FALSE);
}

static char *
parse_randomly (const char *input,
                gsize       len,
                GRand      *rand)
{
  GString *out = g_string_new (NULL);
  g_autoptr(KagedSseParser) parser = kaged_sse_parser_new (record_event, out);
  g_autoptr(GError) error = NULL;
  gsize i = 0;

  while (i < len)
    {
      gsize piece = g_rand_int_range (rand, 0, 40);

      piece = MIN (piece, len - i);
      g_assert_true (kaged_sse_parser_feed (parser, input + i, piece, &error));
      g_assert_no_error (error);
      i += piece;
    }
  g_assert_true (kaged_sse_parser_finish (parser, &error));

  return g_string_free (out, FALSE);
}

static char *
parse_whole (const char *input)
{
  return parse_in_pieces (input, strlen (input), MAX (strlen (input), 1));
}

static void
test_fields (void)
{
  const char *input =
    ": a comment the client never sees\n"
    "data: first\n"
    "data:second\n"
    "data:  two spaces keep one\n"
    "\n"
    "event: update\n"
    "id: 42\n"
    "data\n"
    "\n"
    "event: lonely\n"
    "\n"
    "data: after an event with no data\n"
    "retry: 1500\n"
    "unknown: ignored\n"
    "\n"
    "id\n"
    "data: {\"a\": \"b: c\"}\n"
    "\n"
    "retry: soon\n"
    "data: no dispatch without a blank line\n";
  g_autofree char *events = parse_whole (input);
  GString *out = g_string_new (NULL);
  g_autoptr(KagedSseParser) parser = kaged_sse_parser_new (record_event, out);

  g_assert_cmpstr (events, ==,
                   "message||first⏎second⏎ two spaces keep one\n"
                   "update|42|\n"
                   "message|42|after an event with no data\n"
                   "message||{\"a\": \"b: c\"}\n");

  g_assert_true (kaged_sse_parser_feed (parser, input, strlen (input), NULL));
  g_assert_cmpint (kaged_sse_parser_get_retry (parser), ==, 1500);
  g_string_free (out, TRUE);
}

static void
test_line_endings (void)
{
  const char *lf = "event: a\ndata: 1\ndata: 2\n\n: c\ndata: 3\n\n";
  g_autofree char *crlf = NULL;
  g_autofree char *cr = NULL;
  g_autofree char *expected = parse_whole (lf);
  g_autoptr(GString) s = NULL;

  s = g_string_new (lf);
  g_string_replace (s, "\n", "\r\n", 0);
  crlf = g_strdup (s->str);
  g_string_replace (s, "\r\n", "\r", 0);
  cr = g_strdup (s->str);

  g_assert_cmpstr (expected, ==, "a||1⏎2\nmessage||3\n");

  for (gsize piece = 1; piece < 8; piece++)
    {
      g_autofree char *a = parse_in_pieces (crlf, strlen (crlf), piece);
      g_autofree char *b = parse_in_pieces (cr, strlen (cr), piece);
      g_autofree char *c = parse_in_pieces (lf, strlen (lf), piece);

      g_assert_cmpstr (a, ==, expected);
      g_assert_cmpstr (b, ==, expected);
      g_assert_cmpstr (c, ==, expected);
    }
}

/* A CR ending one chunk and its LF starting the next is one line end. */
static void
test_cr_at_chunk_end (void)
{
  GString *out = g_string_new (NULL);
  g_autoptr(KagedSseParser) parser = kaged_sse_parser_new (record_event, out);

  g_assert_true (kaged_sse_parser_feed (parser, "data: a\r", 8, NULL));
  g_assert_true (kaged_sse_parser_feed (parser, "\ndata: b\r", 9, NULL));
  g_assert_cmpstr (out->str, ==, "");
  /* A lone CR ends the blank line at once; the LF after it is not a second one. */
  g_assert_true (kaged_sse_parser_feed (parser, "\n\r", 2, NULL));
  g_assert_cmpstr (out->str, ==, "message||a⏎b\n");
  g_assert_true (kaged_sse_parser_feed (parser, "\ndata: d\r", 10, NULL));
  g_assert_true (kaged_sse_parser_feed (parser, "\n\n", 2, NULL));
  g_assert_cmpstr (out->str, ==, "message||a⏎b\nmessage||d\n");

  /* An empty feed between the CR and the LF changes nothing. */
  g_assert_true (kaged_sse_parser_feed (parser, "data: c\r", 8, NULL));
  g_assert_true (kaged_sse_parser_feed (parser, "", 0, NULL));
  g_assert_true (kaged_sse_parser_feed (parser, "\n\r\n", 3, NULL));
  g_assert_cmpstr (out->str, ==, "message||a⏎b\nmessage||d\nmessage||c\n");

  g_string_free (out, TRUE);
}

static void
test_bom (void)
{
  const char *input = "\xEF\xBB\xBF" "data: x\n\n\xEF\xBB\xBF" "data: y\n\n";
  g_autofree char *whole = parse_whole (input);

  /* Only the first BOM is dropped; the second makes an unknown field. */
  g_assert_cmpstr (whole, ==, "message||x\n");

  for (gsize piece = 1; piece < 5; piece++)
    {
      g_autofree char *split = parse_in_pieces (input, strlen (input), piece);

      g_assert_cmpstr (split, ==, whole);
    }

  /* Bytes that only start like a BOM are kept. */
  {
    const char *almost = "\xEF\xBB" "data: z\n\n";
    g_autofree char *events = parse_in_pieces (almost, strlen (almost), 1);

    g_assert_cmpstr (events, ==, "");
  }
  {
    const char *comment = ": \xEF\n" "data: w\n\n";
    g_autofree char *events = parse_in_pieces (comment, strlen (comment), 1);

    g_assert_cmpstr (events, ==, "message||w\n");
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
  static const char * const fixtures[] = {
    "openai-stream.sse", "openai-reasoning.sse", "anthropic-stream.sse",
  };
  g_autoptr(GRand) rand = g_rand_new_with_seed (20261129);

  for (guint f = 0; f < G_N_ELEMENTS (fixtures); f++)
    {
      gsize len = 0;
      g_autofree char *input = read_fixture (fixtures[f], &len);
      g_autofree char *whole = parse_in_pieces (input, len, len);
      g_autofree char *bytewise = parse_in_pieces (input, len, 1);

      g_assert_cmpuint (strlen (whole), >, 100);
      g_assert_cmpstr (bytewise, ==, whole);

      for (guint i = 0; i < 200; i++)
        {
          g_autofree char *random = parse_randomly (input, len, rand);

          g_assert_cmpstr (random, ==, whole);
        }
    }
}

static void
test_cap (void)
{
  GString *out = g_string_new (NULL);
  g_autoptr(KagedSseParser) parser = kaged_sse_parser_new (record_event, out);
  g_autoptr(KagedSseParser) parser2 = kaged_sse_parser_new (record_event, out);
  g_autoptr(GError) error = NULL;
  g_autofree char *chunk = g_malloc (4096);
  gboolean ok = TRUE;
  gsize fed = 0;

  memset (chunk, 'a', 4096);
  kaged_sse_parser_set_max_size (parser, 64 * 1024);

  /* One endless line: refused once past the cap, and never held beyond it. */
  g_assert_true (kaged_sse_parser_feed (parser, "data: ", 6, NULL));
  while (ok && fed < 16 * 1024 * 1024)
    {
      ok = kaged_sse_parser_feed (parser, chunk, 4096, &error);
      fed += 4096;
      g_assert_cmpuint (kaged_sse_parser_get_buffered (parser), <=, 4 * 64 * 1024);
    }
  g_assert_false (ok);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_assert_cmpuint (fed, <=, 64 * 1024 + 4096);
  g_clear_error (&error);

  /* A failed parser stays failed. */
  g_assert_false (kaged_sse_parser_feed (parser, "\n\n", 2, &error));
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_clear_error (&error);
  g_assert_false (kaged_sse_parser_finish (parser, &error));
  g_clear_error (&error);

  /* Many short data lines adding up past the cap fail the same way. */
  kaged_sse_parser_set_max_size (parser2, 64 * 1024);
  ok = TRUE;
  fed = 0;
  while (ok && fed < 1024 * 1024)
    {
      ok = kaged_sse_parser_feed (parser2, "data: 0123456789abcdef\n", 23, &error);
      fed += 23;
    }
  g_assert_false (ok);
  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_assert_cmpstr (out->str, ==, "");

  g_string_free (out, TRUE);
}

/* What a parser with a 16-byte cap makes of @input fed in @pieces: the
 * events, then "FAIL" if it refused the stream. */
static char *
outcome (const char  *input,
         gsize        len,
         const gsize *cuts,
         guint        n_cuts)
{
  GString *out = g_string_new (NULL);
  g_autoptr(KagedSseParser) parser = kaged_sse_parser_new (record_event, out);
  gboolean ok = TRUE;
  gsize at = 0;

  kaged_sse_parser_set_max_size (parser, 16);
  for (guint i = 0; ok && i <= n_cuts; i++)
    {
      gsize next = i < n_cuts ? cuts[i] : len;

      ok = kaged_sse_parser_feed (parser, input + at, next - at, NULL);
      at = next;
    }
  if (ok)
    ok = kaged_sse_parser_finish (parser, NULL);
  if (!ok)
    g_string_append (out, "FAIL");

  return g_string_free (out, FALSE);
}

/* Whether the cap trips depends on the stream, never on how it is split. */
static void
test_cap_split (void)
{
  static const struct {
    const char *input;
    const char *expected;
  } rows[] = {
    /* Lines of 16 bytes fit; of 17 they do not, whatever their field. */
    { "data: 0123456789\n\n", "message||0123456789\n" },
    { "data: 0123456789a\n\n", "FAIL" },
    { ": 0123456789abcd\ndata: x\n\n", "message||x\n" },
    { ": 0123456789abcde\ndata: x\n\n", "FAIL" },
    { "event: 012345678\ndata: x\n\n", "012345678||x\n" },
    { "event: 0123456789\ndata: x\n\n", "FAIL" },
    { "data: 0123456789a\r\n\r\n", "FAIL" },
    { "data: 0123456789a\r\r", "FAIL" },
    /* An event's data is capped over its lines. */
    { "data: 0123456\ndata: 0123456\n\n", "message||0123456⏎0123456\n" },
    { "data: 01234567\ndata: 0123456\n\n", "FAIL" },
  };

  for (guint r = 0; r < G_N_ELEMENTS (rows); r++)
    {
      const char *input = rows[r].input;
      gsize len = strlen (input);
      g_autofree char *whole = outcome (input, len, NULL, 0);
      g_autofree gsize *every = g_new (gsize, len);

      g_test_message ("%s", input);
      g_assert_cmpstr (whole, ==, rows[r].expected);

      for (gsize i = 0; i < len; i++)
        every[i] = i;

      for (gsize cut = 1; cut < len; cut++)
        {
          g_autofree char *split = outcome (input, len, &cut, 1);

          g_assert_cmpstr (split, ==, whole);
        }

      {
        g_autofree char *bytewise = outcome (input, len, every + 1, len - 1);

        g_assert_cmpstr (bytewise, ==, whole);
      }
    }
}

/* Feeding nothing, from no buffer, is allowed and changes nothing. */
static void
test_feed_nothing (void)
{
  GString *out = g_string_new (NULL);
  g_autoptr(KagedSseParser) parser = kaged_sse_parser_new (record_event, out);
  g_autoptr(GError) error = NULL;

  g_assert_true (kaged_sse_parser_feed (parser, NULL, 0, &error));
  g_assert_true (kaged_sse_parser_feed (parser, "\xEF\xBB", 2, &error));
  g_assert_true (kaged_sse_parser_feed (parser, NULL, 0, &error));
  g_assert_true (kaged_sse_parser_feed (parser, "\xBF" "data: a\r", 9, &error));
  g_assert_true (kaged_sse_parser_feed (parser, NULL, 0, &error));
  g_assert_true (kaged_sse_parser_feed (parser, "\n\n", 2, &error));
  g_assert_true (kaged_sse_parser_feed (parser, NULL, 0, &error));
  g_assert_true (kaged_sse_parser_finish (parser, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (out->str, ==, "message||a\n");
  g_string_free (out, TRUE);
}

static gboolean
refuse_second (const KagedSseEvent  *event,
               gpointer              user_data,
               GError              **error)
{
  guint *count = user_data;

  if (++(*count) == 2)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED, "refused");
      return FALSE;
    }
  return TRUE;
}

static void
test_callback_stops (void)
{
  guint count = 0;
  g_autoptr(KagedSseParser) parser = kaged_sse_parser_new (refuse_second, &count);
  g_autoptr(GError) error = NULL;
  const char *input = "data: 1\n\ndata: 2\n\ndata: 3\n\n";

  g_assert_false (kaged_sse_parser_feed (parser, input, strlen (input), &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_FAILED);
  g_assert_cmpuint (count, ==, 2);
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

typedef KagedStreamDecoder *(*DecoderNew) (KagedChat *, KagedClock *, gsize);

static KagedChat *
decode (DecoderNew  decoder_new,
        const char *input,
        gsize       len,
        gsize       piece,
        Reply      *reply,
        GError    **error)
{
  KagedChat *chat = kaged_chat_new (NULL, NULL);
  g_autoptr(KagedStreamDecoder) decoder = decoder_new (chat, NULL, 1024 * 1024);
  gboolean ok = TRUE;

  reply->text = g_string_new (NULL);
  reply->thinking = g_string_new (NULL);
  g_signal_connect (chat, "delta", G_CALLBACK (on_delta), reply);

  for (gsize i = 0; ok && i < len; i += piece)
    ok = decoder->feed (decoder, input + i, MIN (piece, len - i), error);
  if (ok)
    ok = decoder->finish (decoder, error);
  if (ok)
    g_assert_true (decoder->done);
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
check_fixture (DecoderNew  decoder_new,
               const char *name,
               const char *thinking,
               const char *text,
               const char *finish,
               gint64      input_tokens,
               gint64      output_tokens)
{
  gsize len = 0;
  g_autofree char *input = read_fixture (name, &len);

  for (gsize piece = 1; piece <= len; piece = piece < 16 ? piece + 1 : piece * 4)
    {
      g_autoptr(GError) error = NULL;
      Reply reply;
      g_autoptr(KagedChat) chat = decode (decoder_new, input, len, piece, &reply, &error);

      g_assert_no_error (error);
      g_assert_cmpstr (reply.thinking->str, ==, thinking);
      g_assert_cmpstr (reply.text->str, ==, text);
      g_assert_cmpstr (kaged_chat_get_finish_reason (chat), ==, finish);
      g_assert_cmpint (kaged_chat_get_input_tokens (chat), ==, input_tokens);
      g_assert_cmpint (kaged_chat_get_output_tokens (chat), ==, output_tokens);
      reply_clear (&reply);
    }
}

static void
test_openai_fixtures (void)
{
  check_fixture (kaged_openai_decoder_new, "openai-stream.sse",
                 "", "Bonjour, le café est prêt ☕.", "stop", 19, 9);
  check_fixture (kaged_openai_decoder_new, "openai-reasoning.sse",
                 "The user asks for 2+2.", "2 + 2 = 4", "length", 31, 17);
}

static void
test_anthropic_fixture (void)
{
  check_fixture (kaged_anthropic_decoder_new, "anthropic-stream.sse",
                 "Let me count the letters.", "Il y a trois « r » dans “strawberry” 🍓.",
                 "end_turn", 472, 58);
}

/* A stream that said how it finished only lacks its end marker: complete. */
static void
test_finished_without_end_marker (void)
{
  static const struct {
    DecoderNew  decoder_new;
    const char *fixture;
    const char *end_marker;
    const char *text;
  } rows[] = {
    { kaged_openai_decoder_new, "openai-stream.sse", "data: [DONE]", "Bonjour, le café est prêt ☕." },
    { kaged_anthropic_decoder_new, "anthropic-stream.sse", "event: message_stop",
      "Il y a trois « r » dans “strawberry” 🍓." },
  };

  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    {
      gsize len = 0;
      g_autofree char *input = read_fixture (rows[i].fixture, &len);
      const char *marker = strstr (input, rows[i].end_marker);
      g_autoptr(GError) error = NULL;
      Reply reply;
      g_autoptr(KagedChat) chat = NULL;

      g_assert_nonnull (marker);
      chat = decode (rows[i].decoder_new, input, marker - input, 5, &reply, &error);
      g_assert_no_error (error);
      g_assert_cmpstr (reply.text->str, ==, rows[i].text);
      reply_clear (&reply);
    }
}

/* Invalid UTF-8 inside an event is repaired, never passed on. */
static void
test_invalid_utf8 (void)
{
  const char *input =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok \xFF\xFE end\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" \xE2\x82\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: [DONE]\n\n";
  g_autoptr(GError) error = NULL;
  Reply reply;
  g_autoptr(KagedChat) chat G_GNUC_UNUSED = decode (kaged_openai_decoder_new, input, strlen (input), 7,
                                                    &reply, &error);

  g_assert_no_error (error);
  /* One U+FFFD for each byte that is not part of a valid character. */
  g_assert_cmpstr (reply.text->str, ==, "ok \xEF\xBF\xBD\xEF\xBF\xBD end \xEF\xBF\xBD\xEF\xBF\xBD");
  reply_clear (&reply);
}

/* Events that are not JSON are a protocol error. */
static void
test_not_json (void)
{
  const char *input = "data: <html>Bad gateway</html>\n\n";
  g_autoptr(GError) error = NULL;
  Reply reply;
  g_autoptr(KagedChat) chat = decode (kaged_openai_decoder_new, input, strlen (input), 64,
                                      &reply, &error);

  g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_assert_false (kaged_chat_has_delta (chat));
  reply_clear (&reply);
}

/* An event nested deeper than json-glib's recursion can take is refused
 * before it is parsed, as any JSON that is not understood. */
static void
test_deep_event (void)
{
  static const DecoderNew decoders[] = { kaged_openai_decoder_new, kaged_anthropic_decoder_new };

  for (guint d = 0; d < G_N_ELEMENTS (decoders); d++)
    {
      g_autoptr(GString) input = g_string_new ("data: {\"choices\":");
      g_autoptr(GError) error = NULL;
      Reply reply;
      g_autoptr(KagedChat) chat = NULL;

      for (guint i = 0; i < 200000; i++)
        g_string_append_c (input, '[');
      g_string_append (input, "\n\n");

      chat = decode (decoders[d], input->str, input->len, input->len, &reply, &error);
      g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
      g_assert_false (kaged_chat_has_delta (chat));
      reply_clear (&reply);
    }
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/sse/fields", test_fields);
  g_test_add_func ("/sse/line-endings", test_line_endings);
  g_test_add_func ("/sse/cr-at-chunk-end", test_cr_at_chunk_end);
  g_test_add_func ("/sse/bom", test_bom);
  g_test_add_func ("/sse/random-splits", test_random_splits);
  g_test_add_func ("/sse/cap", test_cap);
  g_test_add_func ("/sse/cap-split", test_cap_split);
  g_test_add_func ("/sse/feed-nothing", test_feed_nothing);
  g_test_add_func ("/sse/callback-stops", test_callback_stops);
  g_test_add_func ("/sse/openai-fixtures", test_openai_fixtures);
  g_test_add_func ("/sse/anthropic-fixture", test_anthropic_fixture);
  g_test_add_func ("/sse/finished-without-end-marker", test_finished_without_end_marker);
  g_test_add_func ("/sse/invalid-utf8", test_invalid_utf8);
  g_test_add_func ("/sse/not-json", test_not_json);
  g_test_add_func ("/sse/deep-event", test_deep_event);

  return g_test_run ();
}
