/* kaged-ollama-provider.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <libsoup/soup.h>

#include "kaged-http-provider.h"

G_BEGIN_DECLS

#define KAGED_TYPE_OLLAMA_PROVIDER (kaged_ollama_provider_get_type ())

G_DECLARE_FINAL_TYPE (KagedOllamaProvider, kaged_ollama_provider, KAGED, OLLAMA_PROVIDER, KagedHttpProvider)

KagedProvider      *kaged_ollama_provider_new (SoupSession *session,
                                               const char  *base_url,
                                               const char  *model,
                                               const char  *api_key);
KagedStreamDecoder *kaged_ollama_decoder_new  (KagedChat   *chat,
                                               KagedClock  *clock,
                                               gsize        max_event_size);

G_END_DECLS
