/* kaged-anthropic-provider.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <libsoup/soup.h>

#include "kaged-http-provider.h"

G_BEGIN_DECLS

#define KAGED_TYPE_ANTHROPIC_PROVIDER (kaged_anthropic_provider_get_type ())

G_DECLARE_FINAL_TYPE (KagedAnthropicProvider, kaged_anthropic_provider, KAGED, ANTHROPIC_PROVIDER, KagedHttpProvider)

KagedProvider      *kaged_anthropic_provider_new (SoupSession *session,
                                                  const char  *base_url,
                                                  const char  *model,
                                                  const char  *api_key);
KagedStreamDecoder *kaged_anthropic_decoder_new  (KagedChat   *chat,
                                                  KagedClock  *clock,
                                                  gsize        max_event_size);

G_END_DECLS
