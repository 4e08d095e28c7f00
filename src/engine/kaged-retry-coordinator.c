/* kaged-retry-coordinator.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry-coordinator"

#include "config.h"

#include "kaged-retry-coordinator.h"
#include "kaged-retry-policy.h"

struct _KagedRetryCoordinator
{
  GObject               parent_instance;

  KagedSessionManager  *manager;
  KagedClock           *clock;
  GNetworkMonitor      *network_monitor;
  KagedRetryDispatcher *dispatcher;
  KagedRetryStateStore *state_store;

  /* gint64 session id → KagedRetryScheduler */
  GHashTable           *schedulers;

  /* Sessions a run of which finished, to check from the main loop. */
  GHashTable           *to_check;
  GSource              *check_source;

  gulong                run_changed_id;
  gulong                operator_request_id;
};

G_DEFINE_FINAL_TYPE (KagedRetryCoordinator, kaged_retry_coordinator, G_TYPE_OBJECT)

enum {
  SCHEDULER_ADDED,
  N_SIGNALS
};

static guint signals [N_SIGNALS];

/* Tells each session's scheduler what the database now says about it. */
static gboolean
check_cb (gpointer user_data)
{
  KagedRetryCoordinator *self = user_data;
  g_autoptr(GHashTable) sessions = g_steal_pointer (&self->to_check);
  GHashTableIter iter;
  gpointer key;

  g_clear_pointer (&self->check_source, g_source_unref);
  self->to_check = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);

  g_hash_table_iter_init (&iter, sessions);
  while (g_hash_table_iter_next (&iter, &key, NULL))
    {
      gint64 session_id = *(gint64 *)key;
      g_autoptr(KagedRun) latest = NULL;
      g_autoptr(GError) error = NULL;
      KagedRetryScheduler *scheduler;
      KagedRetryVerdict verdict;

      verdict = kaged_retry_policy_check (kaged_session_manager_get_store (self->manager),
                                          session_id, &latest, &error);
      if (error != NULL)
        g_warning ("Could not check session %" G_GINT64_FORMAT " for a retry: %s",
                   session_id, error->message);
      if (verdict == KAGED_RETRY_VERDICT_BUSY)
        continue;

      scheduler = kaged_retry_coordinator_lookup_scheduler (self, session_id);
      if (scheduler == NULL && verdict != KAGED_RETRY_VERDICT_ARMABLE)
        continue;
      if (scheduler == NULL)
        scheduler = kaged_retry_coordinator_get_scheduler (self, session_id);

      kaged_retry_scheduler_run_finished (scheduler, latest);
    }

  return G_SOURCE_REMOVE;
}

static void
queue_check (KagedRetryCoordinator *self,
             gint64                 session_id)
{
  g_hash_table_add (self->to_check, g_memdup2 (&session_id, sizeof session_id));

  if (self->check_source != NULL)
    return;

  self->check_source = g_idle_source_new ();
  g_source_set_priority (self->check_source, G_PRIORITY_DEFAULT);
  g_source_set_callback (self->check_source, check_cb, self, NULL);
  g_source_set_static_name (self->check_source, "[kaged] retry check");
  g_source_attach (self->check_source, g_main_context_get_thread_default ());
}

/* Every end of a run has the session checked from the main loop, never
 * from inside the call that ended it, once the manager has moved on to the
 * next queued run. */
static void
run_changed_cb (KagedSessionManager   *manager,
                KagedRun              *run,
                KagedRetryCoordinator *self)
{
  if (kaged_run_is_finished (run))
    queue_check (self, kaged_run_get_session_id (run));
}

/* A post or a regenerate of the session — from the window, a notification
 * or the HTTP API; Tier 2's own regenerate does not ask — stands a pending
 * retry down before it changes anything. */
static void
operator_request_cb (KagedSessionManager   *manager,
                     gint64                 session_id,
                     KagedRetryCoordinator *self)
{
  KagedRetryScheduler *scheduler = kaged_retry_coordinator_lookup_scheduler (self, session_id);

  if (scheduler != NULL)
    kaged_retry_scheduler_operator_posted (scheduler);
}

static void
kaged_retry_coordinator_dispose (GObject *object)
{
  KagedRetryCoordinator *self = (KagedRetryCoordinator *)object;

  if (self->manager != NULL)
    {
      g_clear_signal_handler (&self->run_changed_id, self->manager);
      g_clear_signal_handler (&self->operator_request_id, self->manager);
    }

  kaged_clock_clear_source (&self->check_source);
  g_clear_pointer (&self->to_check, g_hash_table_unref);
  g_clear_pointer (&self->schedulers, g_hash_table_unref);

  G_OBJECT_CLASS (kaged_retry_coordinator_parent_class)->dispose (object);
}

static void
kaged_retry_coordinator_finalize (GObject *object)
{
  KagedRetryCoordinator *self = (KagedRetryCoordinator *)object;

  g_clear_object (&self->dispatcher);
  g_clear_object (&self->state_store);
  g_clear_object (&self->network_monitor);
  g_clear_object (&self->clock);
  g_clear_object (&self->manager);

  G_OBJECT_CLASS (kaged_retry_coordinator_parent_class)->finalize (object);
}

static void
kaged_retry_coordinator_class_init (KagedRetryCoordinatorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = kaged_retry_coordinator_dispose;
  object_class->finalize = kaged_retry_coordinator_finalize;

  signals [SCHEDULER_ADDED] =
    g_signal_new ("scheduler-added",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, KAGED_TYPE_RETRY_SCHEDULER);
}

static void
kaged_retry_coordinator_init (KagedRetryCoordinator *self)
{
  self->schedulers = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_object_unref);
  self->to_check = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
}

/**
 * kaged_retry_coordinator_new:
 * @manager: the session manager whose runs are retried
 * @clock: (nullable): the clock, or %NULL for the manager's
 * @network_monitor: (nullable): the network monitor, or %NULL for the system's
 *
 * Returns: (transfer full): a new coordinator, with the schedulers whose
 *   state was saved already resumed
 */
KagedRetryCoordinator *
kaged_retry_coordinator_new (KagedSessionManager *manager,
                             KagedClock          *clock,
                             GNetworkMonitor     *network_monitor)
{
  KagedRetryCoordinator *self;
  g_autoptr(GPtrArray) saved = NULL;
  g_autoptr(GError) error = NULL;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (manager), NULL);
  g_return_val_if_fail (!clock || KAGED_IS_CLOCK (clock), NULL);
  g_return_val_if_fail (!network_monitor || G_IS_NETWORK_MONITOR (network_monitor), NULL);

  self = g_object_new (KAGED_TYPE_RETRY_COORDINATOR, NULL);
  self->manager = g_object_ref (manager);
  self->clock = g_object_ref (clock != NULL ? clock : kaged_session_manager_get_clock (manager));
  self->network_monitor = network_monitor != NULL ? g_object_ref (network_monitor) : NULL;
  self->dispatcher = kaged_retry_dispatcher_new_for_manager (manager);
  self->state_store = kaged_retry_state_store_new_for_store (kaged_session_manager_get_store (manager));

  self->run_changed_id = g_signal_connect (manager, "run-changed",
                                           G_CALLBACK (run_changed_cb), self);
  self->operator_request_id = g_signal_connect (manager, "operator-request",
                                                G_CALLBACK (operator_request_cb), self);

  saved = kaged_store_list_retry_states (kaged_session_manager_get_store (manager), &error);
  if (saved == NULL)
    {
      g_warning ("Could not read the saved retries: %s", error->message);
      return self;
    }

  for (guint i = 0; i < saved->len; i++)
    {
      const KagedStoreRetryState *state = g_ptr_array_index (saved, i);

      kaged_retry_coordinator_get_scheduler (self, state->session_id);
    }

  return self;
}

/**
 * kaged_retry_coordinator_lookup_scheduler:
 *
 * Returns: (transfer none) (nullable): the session's scheduler, if it has one
 */
KagedRetryScheduler *
kaged_retry_coordinator_lookup_scheduler (KagedRetryCoordinator *self,
                                          gint64                 session_id)
{
  g_return_val_if_fail (KAGED_IS_RETRY_COORDINATOR (self), NULL);

  return g_hash_table_lookup (self->schedulers, &session_id);
}

/**
 * kaged_retry_coordinator_get_scheduler:
 *
 * Returns: (transfer none): the session's scheduler, created when needed
 */
KagedRetryScheduler *
kaged_retry_coordinator_get_scheduler (KagedRetryCoordinator *self,
                                       gint64                 session_id)
{
  KagedRetryScheduler *scheduler;

  g_return_val_if_fail (KAGED_IS_RETRY_COORDINATOR (self), NULL);

  scheduler = g_hash_table_lookup (self->schedulers, &session_id);
  if (scheduler != NULL)
    return scheduler;

  scheduler = kaged_retry_scheduler_new (session_id, self->dispatcher, self->state_store,
                                         self->clock, self->network_monitor);
  g_hash_table_insert (self->schedulers, g_memdup2 (&session_id, sizeof session_id), scheduler);
  g_signal_emit (self, signals [SCHEDULER_ADDED], 0, scheduler);

  return scheduler;
}

/**
 * kaged_retry_coordinator_list_schedulers:
 *
 * Returns: (transfer container) (element-type KagedRetryScheduler): every
 *   scheduler, in no particular order
 */
GPtrArray *
kaged_retry_coordinator_list_schedulers (KagedRetryCoordinator *self)
{
  GPtrArray *ret;
  GHashTableIter iter;
  gpointer value;

  g_return_val_if_fail (KAGED_IS_RETRY_COORDINATOR (self), NULL);

  ret = g_ptr_array_new ();
  g_hash_table_iter_init (&iter, self->schedulers);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    g_ptr_array_add (ret, value);

  return ret;
}
