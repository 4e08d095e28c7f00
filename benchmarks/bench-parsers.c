/* bench-parsers.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * How fast provider streams are read: SSE and NDJSON framing alone (MB/s),
 * and framing plus JSON delta extraction into a KagedChat (deltas/s), fed
 * in 16 KiB chunks like the network reads. The streams are generated as
 * they are fed, from a 1 MiB pattern of varied events, so the input never
 * sits in memory whole; peak RSS after 16 MiB and after 64 MiB shows that
 * memory stays flat.
 */

#include "config.h"

#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "kaged-anthropic-provider.h"
#include "kaged-ndjson-parser.h"
#include "kaged-ollama-provider.h"
#include "kaged-openai-provider.h"
#include "kaged-sse-parser.h"

#define MIB            (1024 * 1024)
#define CHUNK          (16 * 1024)
#define PATTERN_SIZE   MIB

static const char * const words[] = {
  "the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog", ",",
  " café", " naïve", " 東京", " 🎉", " résumé", " and", " then", " some", ".", "\\n",
};

typedef enum
{
  OPENAI,
  ANTHROPIC,
  OLLAMA,
} Format;

/* One period of the stream: events (or lines) cut at an event boundary. */
static GString *
make_pattern (Format format)
{
  GString *pattern = g_string_sized_new (PATTERN_SIZE + 4096);
  guint i = 0;

  while (pattern->len < PATTERN_SIZE)
    {
      const char *word = words[(i * 7 + i / 3) % G_N_ELEMENTS (words)];

      switch (format)
        {
        case OPENAI:
          g_string_append_printf (pattern,
                                  "data: {\"id\":\"chatcmpl-Bq7vX2kLmN9pQr\",\"object\":\"chat.completion.chunk\","
                                  "\"created\":1764403200,\"model\":\"gpt-4o-mini-2024-07-18\","
                                  "\"service_tier\":\"default\",\"system_fingerprint\":\"fp_560af6e559\","
                                  "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"},\"logprobs\":null,"
                                  "\"finish_reason\":null}],\"usage\":null,\"obfuscation\":\"k%u\"}\n\n",
                                  word, i % 1000);
          break;

        case ANTHROPIC:
          g_string_append_printf (pattern,
                                  "event: content_block_delta\n"
                                  "data: {\"type\":\"content_block_delta\",\"index\":0,"
                                  "\"delta\":{\"type\":\"text_delta\",\"text\":\"%s\"}}\n\n",
                                  word);
          if (i % 50 == 0)
            g_string_append (pattern, "event: ping\ndata: {\"type\": \"ping\"}\n\n");
          break;

        case OLLAMA:
          g_string_append_printf (pattern,
                                  "{\"model\":\"qwen3:8b\",\"created_at\":\"2026-11-29T20:00:%02u.%06uZ\","
                                  "\"message\":{\"role\":\"assistant\",\"content\":\"%s\"},\"done\":false}\n",
                                  i % 60, i % 1000000, word);
          break;

        default:
          g_assert_not_reached ();
        }
      i++;
    }

  return pattern;
}

typedef gboolean (*FeedFunc) (gpointer target, const char *data, gsize len);

/*
 * The thread's CPU time in seconds: what reading costs, not how busy the
 * machine running the benchmark happens to be.
 */
static double
cpu_seconds (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Feeds @total bytes of the repeated pattern in CHUNK pieces. */
static double
feed_stream (GString  *pattern,
             gsize     total,
             FeedFunc  feed,
             gpointer  target)
{
  double start = cpu_seconds ();
  gsize offset = 0;
  gsize fed = 0;

  while (fed < total)
    {
      gsize piece = MIN (CHUNK, pattern->len - offset);

      piece = MIN (piece, total - fed);
      if (!feed (target, pattern->str + offset, piece))
        g_error ("The benchmark stream was refused");
      offset = (offset + piece) % pattern->len;
      fed += piece;
    }

  return cpu_seconds () - start;
}

static gsize n_events;
static gsize n_deltas;
static gsize delta_bytes;

static gboolean
count_event (const KagedSseEvent  *event,
             gpointer              user_data,
             GError              **error)
{
  n_events++;
  return TRUE;
}

static gboolean
count_line (const char  *line,
            gsize        len,
            gpointer     user_data,
            GError     **error)
{
  n_events++;
  return TRUE;
}

static gboolean
feed_sse (gpointer    target,
          const char *data,
          gsize       len)
{
  return kaged_sse_parser_feed (target, data, len, NULL);
}

static gboolean
feed_ndjson (gpointer    target,
             const char *data,
             gsize       len)
{
  return kaged_ndjson_parser_feed (target, data, len, NULL);
}

static gboolean
feed_decoder (gpointer    target,
              const char *data,
              gsize       len)
{
  KagedStreamDecoder *decoder = target;

  return decoder->feed (decoder, data, len, NULL);
}

static void
count_delta (KagedChat      *chat,
             KagedDeltaKind  kind,
             const char     *text,
             gpointer        user_data)
{
  n_deltas++;
  delta_bytes += strlen (text);
}

static long
peak_rss_kib (void)
{
  struct rusage usage;

  getrusage (RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

static void
bench_framing (const char *name,
               Format      format,
               gsize       total)
{
  g_autoptr(GString) pattern = make_pattern (format);
  double best = G_MAXDOUBLE;
  gsize events = 0;

  for (guint rep = 0; rep < 3; rep++)
    {
      double seconds;

      n_events = 0;
      if (format == OLLAMA)
        {
          g_autoptr(KagedNdjsonParser) parser = kaged_ndjson_parser_new (count_line, NULL);

          seconds = feed_stream (pattern, total, feed_ndjson, parser);
        }
      else
        {
          g_autoptr(KagedSseParser) parser = kaged_sse_parser_new (count_event, NULL);

          seconds = feed_stream (pattern, total, feed_sse, parser);
        }
      best = MIN (best, seconds);
      events = n_events;
    }

  g_print ("%-28s %4zu MiB  %8.0f MB/s  %9zu events  %6.1f M events/s\n",
           name, total / MIB, total / best / 1e6, events, events / best / 1e6);
}

static void
bench_decoder (const char *name,
               Format      format,
               gsize       total)
{
  g_autoptr(GString) pattern = make_pattern (format);
  g_autoptr(KagedChat) chat = kaged_chat_new (NULL, NULL);
  g_autoptr(KagedStreamDecoder) decoder = NULL;
  double seconds;

  switch (format)
    {
    case OPENAI:
      decoder = kaged_openai_decoder_new (chat, NULL, KAGED_STREAM_PARSER_DEFAULT_MAX_SIZE);
      break;

    case ANTHROPIC:
      decoder = kaged_anthropic_decoder_new (chat, NULL, KAGED_STREAM_PARSER_DEFAULT_MAX_SIZE);
      break;

    case OLLAMA:
      decoder = kaged_ollama_decoder_new (chat, NULL, KAGED_STREAM_PARSER_DEFAULT_MAX_SIZE);
      break;

    default:
      g_assert_not_reached ();
    }

  g_signal_connect (chat, "delta", G_CALLBACK (count_delta), NULL);
  n_deltas = 0;
  delta_bytes = 0;

  seconds = feed_stream (pattern, total, feed_decoder, decoder);

  g_print ("%-28s %4zu MiB  %8.1f MB/s  %9zu deltas  %8.0f deltas/s  peak RSS %6ld KiB\n",
           name, total / MIB, total / seconds / 1e6, n_deltas, n_deltas / seconds,
           peak_rss_kib ());
}

int
main (int   argc,
      char *argv[])
{
  g_print ("Reading provider streams, fed in %d KiB chunks (rates per CPU second)\n\n", CHUNK / 1024);
  g_print ("peak RSS at start: %ld KiB\n\n", peak_rss_kib ());

  g_print ("Framing alone (best of 3)\n");
  bench_framing ("SSE (OpenAI-style)", OPENAI, 64 * MIB);
  bench_framing ("SSE (Anthropic-style)", ANTHROPIC, 64 * MIB);
  bench_framing ("NDJSON (Ollama-style)", OLLAMA, 64 * MIB);

  g_print ("\nFraming + JSON delta extraction into a chat\n");
  bench_decoder ("OpenAI chat completions", OPENAI, 16 * MIB);
  bench_decoder ("OpenAI chat completions", OPENAI, 64 * MIB);
  bench_decoder ("Anthropic messages", ANTHROPIC, 16 * MIB);
  bench_decoder ("Anthropic messages", ANTHROPIC, 64 * MIB);
  bench_decoder ("Ollama chat", OLLAMA, 16 * MIB);
  bench_decoder ("Ollama chat", OLLAMA, 64 * MIB);

  g_print ("\npeak RSS at end: %ld KiB\n", peak_rss_kib ());

  return 0;
}
