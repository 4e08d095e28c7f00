/* fuzz-stream.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "kaged-anthropic-provider.h"
#include "kaged-fuzz.h"
#include "kaged-ollama-provider.h"
#include "kaged-openai-provider.h"
#include "kaged-provider.h"

/*
 * A provider's streamed body, read by the OpenAI, Anthropic or Ollama
 * decoder (the first byte chooses) in pieces of a size the second byte
 * chooses. Whatever comes, the decoders push only valid UTF-8, and a
 * failure is a classified provider error.
 */

static void
on_delta (KagedChat      *chat,
          KagedDeltaKind  kind,
          const char     *text,
          gpointer        user_data)
{
  g_assert_true (g_utf8_validate (text, -1, NULL));
}

int
LLVMFuzzerTestOneInput (const guint8 *data,
                        size_t        size)
{
  static KagedStreamDecoder *(*const decoders[]) (KagedChat *, KagedClock *, gsize) = {
    kaged_openai_decoder_new, kaged_anthropic_decoder_new, kaged_ollama_decoder_new,
  };
  g_autoptr(KagedChat) chat = NULL;
  g_autoptr(KagedStreamDecoder) decoder = NULL;
  g_autoptr(GError) error = NULL;
  gboolean ok = TRUE;
  gsize piece;

  if (size < 2)
    return 0;

  chat = kaged_chat_new (NULL, NULL);
  g_signal_connect (chat, "delta", G_CALLBACK (on_delta), NULL);
  decoder = decoders[data[0] % G_N_ELEMENTS (decoders)] (chat, NULL, 4096);
  piece = 1 + data[1];
  data += 2;
  size -= 2;

  for (gsize at = 0; ok && at < size; at += piece)
    ok = decoder->feed (decoder, (const char *)data + at, MIN (piece, size - at), &error);
  if (ok && !decoder->done)
    ok = decoder->finish (decoder, &error);
  kaged_chat_flush (chat);

  if (!ok)
    g_assert_true (error != NULL && error->domain == KAGED_PROVIDER_ERROR);

  return 0;
}
