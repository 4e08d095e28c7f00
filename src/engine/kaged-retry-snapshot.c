/* kaged-retry-snapshot.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry-scheduler"

#include "config.h"

#include "kaged-retry-snapshot.h"

G_DEFINE_ENUM_TYPE (KagedRetrySchedulerState, kaged_retry_scheduler_state,
  G_DEFINE_ENUM_VALUE (KAGED_RETRY_SCHEDULER_STATE_IDLE, "idle"),
  G_DEFINE_ENUM_VALUE (KAGED_RETRY_SCHEDULER_STATE_ARMED, "armed"),
  G_DEFINE_ENUM_VALUE (KAGED_RETRY_SCHEDULER_STATE_SCHEDULED, "scheduled"),
  G_DEFINE_ENUM_VALUE (KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK, "waiting-for-network"),
  G_DEFINE_ENUM_VALUE (KAGED_RETRY_SCHEDULER_STATE_DISPATCHING, "dispatching"),
  G_DEFINE_ENUM_VALUE (KAGED_RETRY_SCHEDULER_STATE_WATCHING, "watching"),
  G_DEFINE_ENUM_VALUE (KAGED_RETRY_SCHEDULER_STATE_CANCELLED, "cancelled"))

G_DEFINE_BOXED_TYPE (KagedRetrySnapshot, kaged_retry_snapshot,
                     kaged_retry_snapshot_copy, kaged_retry_snapshot_free)

KagedRetrySnapshot *
kaged_retry_snapshot_new (void)
{
  return g_new0 (KagedRetrySnapshot, 1);
}

KagedRetrySnapshot *
kaged_retry_snapshot_copy (const KagedRetrySnapshot *self)
{
  KagedRetrySnapshot *copy;

  g_return_val_if_fail (self != NULL, NULL);

  copy = g_new0 (KagedRetrySnapshot, 1);
  *copy = *self;
  copy->wait_source = g_strdup (self->wait_source);

  return copy;
}

void
kaged_retry_snapshot_free (KagedRetrySnapshot *self)
{
  if (self == NULL)
    return;

  g_free (self->wait_source);
  g_free (self);
}
