/* kaged-retry-policy.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-run.h"
#include "kaged-store.h"

G_BEGIN_DECLS

/**
 * KagedRetryVerdict:
 * @KAGED_RETRY_VERDICT_BUSY: a run of the session is queued or running, or
 *   the session has no finished run: nothing to decide yet
 * @KAGED_RETRY_VERDICT_SETTLED: the latest run finished and is not armable
 * @KAGED_RETRY_VERDICT_ARMABLE: Tier 2 may arm from the latest run
 *
 * What the persisted state of a session says about Tier 2.
 */
typedef enum
{
  KAGED_RETRY_VERDICT_BUSY,
  KAGED_RETRY_VERDICT_SETTLED,
  KAGED_RETRY_VERDICT_ARMABLE,
} KagedRetryVerdict;

gboolean          kaged_retry_run_is_armable (KagedRun    *run);
KagedRetryVerdict kaged_retry_policy_check   (KagedStore  *store,
                                              gint64       session_id,
                                              KagedRun   **latest,
                                              GError     **error);

G_END_DECLS
