/* kaged-retry-banner.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtk/gtk.h>

#include "kaged-retry-scheduler.h"

G_BEGIN_DECLS

#define KAGED_TYPE_RETRY_BANNER (kaged_retry_banner_get_type ())

G_DECLARE_FINAL_TYPE (KagedRetryBanner, kaged_retry_banner, KAGED, RETRY_BANNER, GtkWidget)

GtkWidget           *kaged_retry_banner_new           (void);
KagedRetryScheduler *kaged_retry_banner_get_scheduler (KagedRetryBanner    *self);
void                 kaged_retry_banner_set_scheduler (KagedRetryBanner    *self,
                                                       KagedRetryScheduler *scheduler);
gboolean             kaged_retry_banner_get_revealed  (KagedRetryBanner    *self);

G_END_DECLS
