/* kaged-retry-class.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include "kaged-enums.h"

G_BEGIN_DECLS

const char      *kaged_retry_class_to_string      (KagedRetryClass  retry_class);
gboolean         kaged_retry_class_from_string    (const char      *name,
                                                   KagedRetryClass *retry_class);
gboolean         kaged_retry_class_is_retryable   (KagedRetryClass  retry_class);
gboolean         kaged_retry_class_needs_until    (KagedRetryClass  retry_class);
const char      *kaged_retry_class_describe       (KagedRetryClass  retry_class);

/* Generic helpers for the other enums' wire names (their GEnum nicks). */
const char      *kaged_enum_to_nick               (GType            enum_type,
                                                   int              value);
gboolean         kaged_enum_from_nick             (GType            enum_type,
                                                   const char      *nick,
                                                   int             *value);

G_END_DECLS
