/* kaged-attempt.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib-object.h>

#include "kaged-enums.h"

G_BEGIN_DECLS

#define KAGED_TYPE_ATTEMPT (kaged_attempt_get_type ())

/**
 * KagedAttempt:
 * @time: wall-clock time the attempt started, epoch milliseconds
 * @http_status: the HTTP status of the answer, or 0 when none came
 * @error: what went wrong, for people (never a secret), or %NULL on success
 * @retry_class: how the failure was classified, or %KAGED_RETRY_CLASS_NONE
 * @wait_ms: the wait chosen before the next attempt, or 0 when none follows
 * @wait_source: where that wait came from (`backoff`, `retry-after-ms`,
 *   `retry-after`, `anthropic-ratelimit-reset`, `x-ratelimit-reset`), or %NULL
 *
 * One entry of a run's tier-1 attempt log.
 */
typedef struct _KagedAttempt
{
  gint64           time;
  guint            http_status;
  char            *error;
  KagedRetryClass  retry_class;
  gint64           wait_ms;
  char            *wait_source;
} KagedAttempt;

GType         kaged_attempt_get_type (void) G_GNUC_CONST;
KagedAttempt *kaged_attempt_new      (void);
KagedAttempt *kaged_attempt_copy     (const KagedAttempt *self);
void          kaged_attempt_free     (KagedAttempt       *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (KagedAttempt, kaged_attempt_free)

G_END_DECLS
