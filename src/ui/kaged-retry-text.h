/* kaged-retry-text.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-models.h"
#include "kaged-profile.h"
#include "kaged-retry-scheduler.h"

G_BEGIN_DECLS

/*
 * The words a person reads about a Tier 2 retry, composed from the data a
 * #KagedRetryScheduler exposes: for the banner and the notifications.
 */
char       *kaged_retry_format_duration          (gint64               seconds);
char       *kaged_retry_format_retry_after       (gint64               when_ms,
                                                  gint64               now_ms,
                                                  gboolean             use_12h);
char       *kaged_retry_describe_quota_until     (gint64               until_ms,
                                                  gint64               now_ms,
                                                  gboolean             use_12h);
gboolean    kaged_retry_desktop_uses_12h         (void);
GSettings  *kaged_retry_desktop_clock_settings   (void);
const char *kaged_retry_describe_wait_source     (const char          *wait_source);
char       *kaged_retry_describe_reason          (KagedRetryClass      retry_class,
                                                  guint                http_status,
                                                  gint64               advised_wait_ms);
char       *kaged_retry_dup_reason               (KagedRetryScheduler *scheduler);
char       *kaged_retry_dup_scheduled_label      (KagedRetryScheduler *scheduler);
GSettings  *kaged_retry_new_interface_settings   (void);
char       *kaged_retry_describe_connection      (KagedConnectionResult *result);
char       *kaged_retry_describe_models_failure  (KagedRetryClass      retry_class,
                                                  guint                http_status);
char       *kaged_retry_describe_unreachable     (KagedProfile        *profile);

G_END_DECLS
