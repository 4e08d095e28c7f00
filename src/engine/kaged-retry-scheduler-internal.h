/* kaged-retry-scheduler-internal.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * What the two halves of KagedRetryScheduler share: the object and its
 * properties (kaged-retry-scheduler.c) and the state machine
 * (kaged-retry-scheduler-machine.c). Nothing else includes this.
 */

#pragma once

#include "kaged-retry-scheduler-private.h"

G_BEGIN_DECLS

/**
 * KagedRetryScheduler:
 *
 * The Tier 2 retry of one session (DESIGN.md §6): a state machine over a
 * #KagedClock that arms from the classification of the session's latest
 * run, counts down in the open, and regenerates from the anchor operator
 * message through a #KagedRetryDispatcher when the wait is over.
 *
 * The engine tells it about finished runs and new operator posts; the
 * window and the notifications read its properties. Everything happens on
 * the main context it was created on.
 */
struct _KagedRetryScheduler
{
  GObject parent_instance;

  gint64 session_id;
  KagedRetryDispatcher *dispatcher;   /* weak */
  KagedRetryStateStore *state_store;  /* weak */
  KagedClock *clock;
  GNetworkMonitor *network_monitor;
  GMainContext *context;

  /* Moves on at every arm, fire, cancel and disarm. */
  guint64 generation;
  GCancellable *cancellable;
  GSource *deadline_source;
  GSource *tick_source;
  GSource *dispatch_source;

  KagedRetrySchedulerState state;
  guint attempt;
  gint64 remaining_seconds;
  gint64 next_eligible_time;  /* wall, epoch ms */
  gint64 deadline;            /* monotonic µs, while armed */
  gint64 anchor_id;
  gint64 run_id;              /* the retried run, while dispatching or watching */
  gint64 latest_run_id;
  KagedRetryClass retry_class;
  guint http_status;
  gint64 retry_after_until;
  gint64 advised_wait_ms;
  char *wait_source;

  guint network_available : 1;
};

typedef enum
{
  PROP_0,
  PROP_SESSION_ID,
  PROP_DISPATCHER,
  PROP_STATE_STORE,
  PROP_CLOCK,
  PROP_NETWORK_MONITOR,
  PROP_STATE,
  PROP_PENDING,
  PROP_ATTEMPT,
  PROP_REMAINING_SECONDS,
  PROP_NEXT_ELIGIBLE_TIME,
  PROP_ANCHOR_ID,
  PROP_RUN_ID,
  PROP_RETRY_CLASS,
  PROP_HTTP_STATUS,
  PROP_WAIT_SOURCE,
  PROP_ADVISED_WAIT_MS,
  PROP_NETWORK_AVAILABLE,
  N_PROPS
} KagedRetrySchedulerProp;


void     _kaged_retry_scheduler_notify           (KagedRetryScheduler      *self,
                                                  KagedRetrySchedulerProp   prop);
void     _kaged_retry_scheduler_stop_pending     (KagedRetryScheduler      *self);
gboolean _kaged_retry_scheduler_state_is_pending (KagedRetrySchedulerState  state);

G_END_DECLS
