/* kaged-retry-snapshot.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib-object.h>

#include "kaged-enums.h"

G_BEGIN_DECLS

/**
 * KagedRetrySchedulerState:
 * @KAGED_RETRY_SCHEDULER_STATE_IDLE: nothing to retry
 * @KAGED_RETRY_SCHEDULER_STATE_ARMED: counting down to the next retry
 * @KAGED_RETRY_SCHEDULER_STATE_SCHEDULED: waiting for a time more than five
 *   minutes away; the countdown is paused
 * @KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK: a network or timeout
 *   failure waits for the system to report a network again
 * @KAGED_RETRY_SCHEDULER_STATE_DISPATCHING: the wait is over and the
 *   regeneration is being handed to the engine
 * @KAGED_RETRY_SCHEDULER_STATE_WATCHING: the retried run is under way
 * @KAGED_RETRY_SCHEDULER_STATE_CANCELLED: the operator cancelled the retry
 *
 * The Tier 2 retry states of DESIGN.md §6. Their nicks (`idle`, `armed`,
 * `scheduled`, `waiting-for-network`, `dispatching`, `watching`,
 * `cancelled`) are what the database stores.
 */
typedef enum
{
  KAGED_RETRY_SCHEDULER_STATE_IDLE,
  KAGED_RETRY_SCHEDULER_STATE_ARMED,
  KAGED_RETRY_SCHEDULER_STATE_SCHEDULED,
  KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK,
  KAGED_RETRY_SCHEDULER_STATE_DISPATCHING,
  KAGED_RETRY_SCHEDULER_STATE_WATCHING,
  KAGED_RETRY_SCHEDULER_STATE_CANCELLED,
} KagedRetrySchedulerState;

#define KAGED_TYPE_RETRY_SCHEDULER_STATE (kaged_retry_scheduler_state_get_type ())

GType kaged_retry_scheduler_state_get_type (void) G_GNUC_CONST;

/* Values of KagedRetrySnapshot.wait_source besides the tier-1 attempt
 * log's own (`retry-after-ms`, `retry-after`, `anthropic-ratelimit-reset`,
 * `x-ratelimit-reset`). */
#define KAGED_RETRY_WAIT_SOURCE_BACKOFF        "backoff"
#define KAGED_RETRY_WAIT_SOURCE_RETRY_AFTER    "retry-after"
#define KAGED_RETRY_WAIT_SOURCE_PROVIDER_RESET "provider-reset"

#define KAGED_TYPE_RETRY_SNAPSHOT (kaged_retry_snapshot_get_type ())

/**
 * KagedRetrySnapshot:
 * @state: the scheduler's state
 * @attempt: the consecutive attempt k the wait is for (0 when idle)
 * @next_eligible_time: when the retry may start, epoch milliseconds, or 0
 * @anchor_id: the operator message the retry regenerates from, or 0
 * @run_id: the newest run of the session the scheduler has accounted for;
 *   finished runs up to this id are not acted on again
 * @retry_run_id: the run the retry started, while dispatching or watching,
 *   or 0
 * @retry_class: the classification the wait was armed from
 * @http_status: the HTTP status of that failure, or 0
 * @retry_after_until: the failure's `retry_after_until`, epoch ms, or 0
 * @advised_wait_ms: how long the provider asked to wait, or 0
 * @wait_source: where the wait came from: `backoff`, a header the provider
 *   set (`retry-after`, `retry-after-ms`, `anthropic-ratelimit-reset`,
 *   `x-ratelimit-reset`) or `provider-reset` for a quota reset time
 *
 * Everything a scheduler knows, as data: what the database keeps so an
 * armed or scheduled retry resumes after a restart (and a cancelled one
 * stays cancelled), and what the HTTP API sends as a session's `retry`
 * object. kaged_retry_scheduler_dup_snapshot() makes one.
 */
typedef struct _KagedRetrySnapshot
{
  KagedRetrySchedulerState  state;
  guint                     attempt;
  gint64                    next_eligible_time;
  gint64                    anchor_id;
  gint64                    run_id;
  gint64                    retry_run_id;
  KagedRetryClass           retry_class;
  guint                     http_status;
  gint64                    retry_after_until;
  gint64                    advised_wait_ms;
  char                     *wait_source;
} KagedRetrySnapshot;

GType               kaged_retry_snapshot_get_type (void) G_GNUC_CONST;
KagedRetrySnapshot *kaged_retry_snapshot_new      (void);
KagedRetrySnapshot *kaged_retry_snapshot_copy     (const KagedRetrySnapshot *self);
void                kaged_retry_snapshot_free     (KagedRetrySnapshot       *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (KagedRetrySnapshot, kaged_retry_snapshot_free)

G_END_DECLS
