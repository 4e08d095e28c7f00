/* kaged-spend-limit.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-spend-limit"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-provider.h"
#include "kaged-spend-limit.h"

/**
 * kaged_spend_limit_init_from_profile:
 * @profile: (nullable): the profile a run goes through
 *
 * Reads the profile's prices, period and limit; without a profile there
 * is no limit.
 */
void
kaged_spend_limit_init_from_profile (KagedSpendLimit *self,
                                     KagedProfile    *profile)
{
  g_return_if_fail (self != NULL);
  g_return_if_fail (!profile || KAGED_IS_PROFILE (profile));

  *self = (KagedSpendLimit) { KAGED_SPEND_PERIOD_NONE, 0.0, 0.0, 0.0 };
  if (profile == NULL)
    return;

  self->period = kaged_profile_get_spend_limit_period (profile);
  self->limit = kaged_profile_get_spend_limit (profile);
  self->input_price = MAX (kaged_profile_get_input_price (profile), 0.0);
  self->output_price = MAX (kaged_profile_get_output_price (profile), 0.0);
}

/**
 * kaged_spend_limit_period_start:
 *
 * Returns: the start of the current period in local time, epoch
 *   milliseconds, or 0 when there is no limit
 */
gint64
kaged_spend_limit_period_start (const KagedSpendLimit *self,
                                gint64                 now_ms)
{
  g_autoptr(GDateTime) now = NULL;
  g_autoptr(GDateTime) start = NULL;

  g_return_val_if_fail (self != NULL, 0);

  now = g_date_time_new_from_unix_local (now_ms / 1000);
  if (now == NULL)
    return 0;

  switch (self->period)
    {
    case KAGED_SPEND_PERIOD_DAILY:
      start = g_date_time_new_local (g_date_time_get_year (now),
                                     g_date_time_get_month (now),
                                     g_date_time_get_day_of_month (now),
                                     0, 0, 0);
      break;

    case KAGED_SPEND_PERIOD_MONTHLY:
      start = g_date_time_new_local (g_date_time_get_year (now),
                                     g_date_time_get_month (now),
                                     1, 0, 0, 0);
      break;

    case KAGED_SPEND_PERIOD_NONE:
    default:
      return 0;
    }

  return start != NULL ? g_date_time_to_unix (start) * 1000 : 0;
}

double
kaged_spend_limit_cost (const KagedSpendLimit *self,
                        gint64                 input_tokens,
                        gint64                 output_tokens)
{
  g_return_val_if_fail (self != NULL, 0.0);

  return (input_tokens * self->input_price + output_tokens * self->output_price) / 1e6;
}

/**
 * kaged_spend_limit_check:
 *
 * @profile_id: (nullable): the profile the run goes through, whose runs
 *   alone count; %NULL to count every run
 *
 * Whether a run may start: %FALSE with a `spend_limit_exceeded` provider
 * error when the usage recorded in the current period costs the limit or
 * more. Nothing is sent to the provider in that case.
 */
gboolean
kaged_spend_limit_check (const KagedSpendLimit  *self,
                         KagedStore             *store,
                         const char             *profile_id,
                         gint64                  now_ms,
                         GError                **error)
{
  gint64 input_tokens = 0;
  gint64 output_tokens = 0;
  double spent;

  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (KAGED_IS_STORE (store), FALSE);

  if (self->period == KAGED_SPEND_PERIOD_NONE || self->limit <= 0.0)
    return TRUE;

  if (profile_id != NULL)
    {
      if (!kaged_store_sum_profile_usage (store, kaged_spend_limit_period_start (self, now_ms),
                                          profile_id, &input_tokens, &output_tokens, error))
        return FALSE;
    }
  else if (!kaged_store_sum_usage (store, kaged_spend_limit_period_start (self, now_ms),
                                   &input_tokens, &output_tokens, error))
    {
      return FALSE;
    }

  spent = kaged_spend_limit_cost (self, input_tokens, output_tokens);
  if (spent < self->limit)
    return TRUE;

  if (error != NULL)
    {
      *error = kaged_provider_error_new (KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED,
                                         self->period == KAGED_SPEND_PERIOD_DAILY
                                           ? _("Today’s spend limit of %.2f has been reached (%.2f spent)")
                                           : _("This month’s spend limit of %.2f has been reached (%.2f spent)"),
                                         self->limit, spent);
      kaged_provider_error_set_retryable (*error, FALSE);
    }

  return FALSE;
}
