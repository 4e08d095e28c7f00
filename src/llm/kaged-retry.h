/* kaged-retry.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include "kaged-clock.h"
#include "kaged-provider.h"
#include "kaged-random.h"

G_BEGIN_DECLS

/* DESIGN.md §4: Tier 1. */
#define KAGED_RETRY_MAX_ATTEMPTS 3
#define KAGED_RETRY_WINDOW_MS    30000
#define KAGED_RETRY_BASE_MS      1000

#define KAGED_TYPE_RETRY_PROVIDER (kaged_retry_provider_get_type ())

G_DECLARE_FINAL_TYPE (KagedRetryProvider, kaged_retry_provider, KAGED, RETRY_PROVIDER, GObject)

KagedProvider *kaged_retry_provider_new         (KagedProvider      *inner,
                                                 KagedClock         *clock,
                                                 KagedRandom        *random);
KagedProvider *kaged_retry_provider_get_inner   (KagedRetryProvider *self);
KagedClock    *kaged_retry_provider_get_clock   (KagedRetryProvider *self);
KagedRandom   *kaged_retry_provider_get_random  (KagedRetryProvider *self);

gboolean       kaged_retry_error_is_retryable   (const GError       *error);
guint64        kaged_retry_backoff_ms           (guint               failed_attempt,
                                                 KagedRandom        *random);

G_END_DECLS
