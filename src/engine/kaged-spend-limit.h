/* kaged-spend-limit.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-profile.h"
#include "kaged-store.h"

G_BEGIN_DECLS

/**
 * KagedSpendLimit:
 * @period: how often the limit starts over; %KAGED_SPEND_PERIOD_NONE for no limit
 * @limit: the most to spend in a period, in the prices' currency
 * @input_price: price per million input tokens
 * @output_price: price per million output tokens
 *
 * The local spend limit of DESIGN.md §5.5, as a profile sets it.
 */
typedef struct _KagedSpendLimit
{
  KagedSpendPeriod period;
  double           limit;
  double           input_price;
  double           output_price;
} KagedSpendLimit;

void     kaged_spend_limit_init_from_profile (KagedSpendLimit *self,
                                             KagedProfile    *profile);
gint64   kaged_spend_limit_period_start (const KagedSpendLimit  *self,
                                         gint64                  now_ms);
double   kaged_spend_limit_cost         (const KagedSpendLimit  *self,
                                         gint64                  input_tokens,
                                         gint64                  output_tokens);
gboolean kaged_spend_limit_check        (const KagedSpendLimit  *self,
                                         KagedStore             *store,
                                         const char             *profile_id,
                                         gint64                  now_ms,
                                         GError                **error);

G_END_DECLS
