/* kaged-openai-provider.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <libsoup/soup.h>

#include "kaged-http-provider.h"

G_BEGIN_DECLS

#define KAGED_TYPE_OPENAI_PROVIDER (kaged_openai_provider_get_type ())

G_DECLARE_FINAL_TYPE (KagedOpenaiProvider, kaged_openai_provider, KAGED, OPENAI_PROVIDER, KagedHttpProvider)

KagedProvider      *kaged_openai_provider_new (SoupSession *session,
                                               const char  *base_url,
                                               const char  *model,
                                               const char  *api_key);
KagedStreamDecoder *kaged_openai_decoder_new  (KagedChat   *chat,
                                               KagedClock  *clock,
                                               gsize        max_event_size);

G_END_DECLS
