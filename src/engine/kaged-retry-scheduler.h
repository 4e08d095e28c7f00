/* kaged-retry-scheduler.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-clock.h"
#include "kaged-enums.h"
#include "kaged-run.h"
#include "kaged-store.h"

G_BEGIN_DECLS

/* The engine's session manager (kaged-session-manager.h), which may itself
 * hold the schedulers. */
typedef struct _KagedSessionManager KagedSessionManager;

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
 * The Tier 2 retry states of DESIGN.md §6.
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

/* The countdown for consecutive attempt k is min (MAX, BASE × 2^(k-1)). */
#define KAGED_RETRY_SCHEDULER_BASE_DELAY_MS ((gint64)2000)
#define KAGED_RETRY_SCHEDULER_MAX_DELAY_MS  ((gint64)300000)

/* Values of KagedRetryScheduler:wait-source besides the tier-1 attempt
 * log's own (`retry-after-ms`, `retry-after`, `anthropic-ratelimit-reset`,
 * `x-ratelimit-reset`). */
#define KAGED_RETRY_WAIT_SOURCE_BACKOFF        "backoff"
#define KAGED_RETRY_WAIT_SOURCE_RETRY_AFTER    "retry-after"
#define KAGED_RETRY_WAIT_SOURCE_PROVIDER_RESET "provider-reset"

/* ------------------------------------------------------------------------ */

#define KAGED_TYPE_RETRY_SNAPSHOT (kaged_retry_snapshot_get_type ())

/**
 * KagedRetrySnapshot:
 * @state: the scheduler's state
 * @attempt: the consecutive attempt k the wait is for (0 when idle)
 * @next_eligible_time: when the retry may start, epoch milliseconds, or 0
 * @anchor_id: the operator message the retry regenerates from
 * @run_id: the newest run of the session the scheduler has accounted for;
 *   finished runs up to this id are not acted on again
 * @retry_class: the classification the wait was armed from
 * @http_status: the HTTP status of that failure, or 0
 * @retry_after_until: the failure's `retry_after_until`, or 0
 * @advised_wait_ms: how long the provider asked to wait, or 0
 * @wait_source: where the wait came from (see #KagedRetryScheduler:wait-source)
 *
 * What a scheduler persists so an armed or scheduled retry resumes after a
 * restart and a cancelled one stays cancelled.
 */
typedef struct _KagedRetrySnapshot
{
  KagedRetrySchedulerState  state;
  guint                     attempt;
  gint64                    next_eligible_time;
  gint64                    anchor_id;
  gint64                    run_id;
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

/* ------------------------------------------------------------------------ */

#define KAGED_TYPE_RETRY_DISPATCHER (kaged_retry_dispatcher_get_type ())

G_DECLARE_INTERFACE (KagedRetryDispatcher, kaged_retry_dispatcher, KAGED, RETRY_DISPATCHER, GObject)

/**
 * KagedRetryDispatcherInterface:
 * @regenerate: start a fresh run from the operator message @anchor_id of
 *   @session_id (the engine's regenerate); returns the new run's id, or 0
 *   and sets @error
 * @cancel_run: cancel the run @run_id of @session_id, which the engine then
 *   records as cancelled
 *
 * How a scheduler reaches the engine.
 */
struct _KagedRetryDispatcherInterface
{
  GTypeInterface parent_iface;

  gint64   (*regenerate) (KagedRetryDispatcher  *self,
                          gint64                 session_id,
                          gint64                 anchor_id,
                          GCancellable          *cancellable,
                          GError               **error);
  gboolean (*cancel_run) (KagedRetryDispatcher  *self,
                          gint64                 session_id,
                          gint64                 run_id,
                          GError               **error);
};

gint64   kaged_retry_dispatcher_regenerate (KagedRetryDispatcher  *self,
                                            gint64                 session_id,
                                            gint64                 anchor_id,
                                            GCancellable          *cancellable,
                                            GError               **error);
gboolean kaged_retry_dispatcher_cancel_run (KagedRetryDispatcher  *self,
                                            gint64                 session_id,
                                            gint64                 run_id,
                                            GError               **error);

KagedRetryDispatcher *kaged_retry_dispatcher_new_for_manager (KagedSessionManager *manager);

/* ------------------------------------------------------------------------ */

#define KAGED_TYPE_RETRY_STATE_STORE (kaged_retry_state_store_get_type ())

G_DECLARE_INTERFACE (KagedRetryStateStore, kaged_retry_state_store, KAGED, RETRY_STATE_STORE, GObject)

/**
 * KagedRetryStateStoreInterface:
 * @load: the snapshot saved for @session_id, or %NULL without an error when
 *   none was saved
 * @save: replace the snapshot of @session_id; a snapshot in the idle state
 *   may be stored as the absence of one
 *
 * Where a scheduler keeps its state across restarts.
 */
struct _KagedRetryStateStoreInterface
{
  GTypeInterface parent_iface;

  KagedRetrySnapshot *(*load) (KagedRetryStateStore      *self,
                               gint64                     session_id,
                               GError                   **error);
  gboolean            (*save) (KagedRetryStateStore      *self,
                               gint64                     session_id,
                               const KagedRetrySnapshot  *snapshot,
                               GError                   **error);
};

KagedRetrySnapshot *kaged_retry_state_store_load (KagedRetryStateStore      *self,
                                                  gint64                     session_id,
                                                  GError                   **error);
gboolean            kaged_retry_state_store_save (KagedRetryStateStore      *self,
                                                  gint64                     session_id,
                                                  const KagedRetrySnapshot  *snapshot,
                                                  GError                   **error);

KagedRetryStateStore *kaged_retry_state_store_new_for_store (KagedStore *store);

/* ------------------------------------------------------------------------ */

#define KAGED_TYPE_RETRY_SCHEDULER (kaged_retry_scheduler_get_type ())

G_DECLARE_FINAL_TYPE (KagedRetryScheduler, kaged_retry_scheduler, KAGED, RETRY_SCHEDULER, GObject)

KagedRetryScheduler      *kaged_retry_scheduler_new                     (gint64                    session_id,
                                                                         KagedRetryDispatcher     *dispatcher,
                                                                         KagedRetryStateStore     *state_store,
                                                                         KagedClock               *clock,
                                                                         GNetworkMonitor          *network_monitor);
gint64                    kaged_retry_scheduler_get_session_id          (KagedRetryScheduler      *self);
KagedRetrySchedulerState  kaged_retry_scheduler_get_state               (KagedRetryScheduler      *self);
gboolean                  kaged_retry_scheduler_is_pending              (KagedRetryScheduler      *self);
guint                     kaged_retry_scheduler_get_attempt             (KagedRetryScheduler      *self);
gint64                    kaged_retry_scheduler_get_remaining_seconds   (KagedRetryScheduler      *self);
gint64                    kaged_retry_scheduler_get_next_eligible_time  (KagedRetryScheduler      *self);
gint64                    kaged_retry_scheduler_get_anchor_id           (KagedRetryScheduler      *self);
gint64                    kaged_retry_scheduler_get_run_id              (KagedRetryScheduler      *self);
KagedRetryClass           kaged_retry_scheduler_get_retry_class         (KagedRetryScheduler      *self);
guint                     kaged_retry_scheduler_get_http_status         (KagedRetryScheduler      *self);
const char               *kaged_retry_scheduler_get_wait_source         (KagedRetryScheduler      *self);
const char               *kaged_retry_scheduler_get_reason              (KagedRetryScheduler      *self);
const char               *kaged_retry_scheduler_get_scheduled_label     (KagedRetryScheduler      *self);
gboolean                  kaged_retry_scheduler_get_network_available   (KagedRetryScheduler      *self);
void                      kaged_retry_scheduler_set_network_available   (KagedRetryScheduler      *self,
                                                                         gboolean                  network_available);
void                      kaged_retry_scheduler_run_finished            (KagedRetryScheduler      *self,
                                                                         KagedRun                 *run);
void                      kaged_retry_scheduler_operator_posted         (KagedRetryScheduler      *self);
gboolean                  kaged_retry_scheduler_retry_now               (KagedRetryScheduler      *self);
gboolean                  kaged_retry_scheduler_cancel                  (KagedRetryScheduler      *self);
void                      kaged_retry_scheduler_restore                 (KagedRetryScheduler      *self,
                                                                         const KagedRetrySnapshot *snapshot);
KagedRetrySnapshot       *kaged_retry_scheduler_dup_snapshot            (KagedRetryScheduler      *self);

gint64                    kaged_retry_scheduler_delay_for_attempt       (guint                     attempt);
char                     *kaged_retry_format_duration                   (gint64                    seconds);
char                     *kaged_retry_format_retry_after                (gint64                    when_ms,
                                                                         gint64                    now_ms,
                                                                         gboolean                  use_12h);
const char               *kaged_retry_describe_wait_source              (const char               *wait_source);

G_END_DECLS
