/* kaged-spend-limit.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-store.h"

G_BEGIN_DECLS

typedef enum
{
  KAGED_SPEND_PERIOD_NONE,    /*< nick=none >*/
  KAGED_SPEND_PERIOD_DAILY,   /*< nick=daily >*/
  KAGED_SPEND_PERIOD_MONTHLY, /*< nick=monthly >*/
} KagedSpendPeriod;

/**
 * KagedSpendLimit:
 * @period: how often the limit starts over; %KAGED_SPEND_PERIOD_NONE for no limit
 * @limit: the most to spend in a period, in the prices' currency
 * @input_price: price per million input tokens (the manager takes it from the profile)
 * @output_price: price per million output tokens (likewise)
 *
 * The local spend limit of DESIGN.md §5.5.
 */
typedef struct _KagedSpendLimit
{
  KagedSpendPeriod period;
  double           limit;
  double           input_price;
  double           output_price;
} KagedSpendLimit;

void     kaged_spend_limit_init_from_settings (KagedSpendLimit *self,
                                              GSettings       *settings);
gint64   kaged_spend_limit_period_start (const KagedSpendLimit  *self,
                                         gint64                  now_ms);
double   kaged_spend_limit_cost         (const KagedSpendLimit  *self,
                                         gint64                  input_tokens,
                                         gint64                  output_tokens);
gboolean kaged_spend_limit_check        (const KagedSpendLimit  *self,
                                         KagedStore             *store,
                                         gint64                  now_ms,
                                         GError                **error);

G_END_DECLS
