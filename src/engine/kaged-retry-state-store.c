/* kaged-retry-state-store.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry-scheduler"

#include "config.h"

#include "kaged-retry-class.h"
#include "kaged-retry-state-store.h"

G_DEFINE_INTERFACE (KagedRetryStateStore, kaged_retry_state_store, G_TYPE_OBJECT)

static void
kaged_retry_state_store_default_init (KagedRetryStateStoreInterface *iface)
{
}

/**
 * kaged_retry_state_store_load:
 *
 * Returns: (transfer full) (nullable): the saved snapshot, or %NULL when
 *   there is none or @error is set
 */
KagedRetrySnapshot *
kaged_retry_state_store_load (KagedRetryStateStore  *self,
                              gint64                 session_id,
                              GError               **error)
{
  g_return_val_if_fail (KAGED_IS_RETRY_STATE_STORE (self), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  return KAGED_RETRY_STATE_STORE_GET_IFACE (self)->load (self, session_id, error);
}

gboolean
kaged_retry_state_store_save (KagedRetryStateStore      *self,
                              gint64                     session_id,
                              const KagedRetrySnapshot  *snapshot,
                              GError                   **error)
{
  g_return_val_if_fail (KAGED_IS_RETRY_STATE_STORE (self), FALSE);
  g_return_val_if_fail (snapshot != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  return KAGED_RETRY_STATE_STORE_GET_IFACE (self)->save (self, session_id, snapshot, error);
}

/* --- the state store backed by the database ---------------------------------- */

#define KAGED_TYPE_RETRY_STORE_ADAPTER (kaged_retry_store_adapter_get_type ())

G_DECLARE_FINAL_TYPE (KagedRetryStoreAdapter, kaged_retry_store_adapter, KAGED, RETRY_STORE_ADAPTER, GObject)

struct _KagedRetryStoreAdapter
{
  GObject     parent_instance;
  KagedStore *store;
};

static void kaged_retry_store_adapter_iface_init (KagedRetryStateStoreInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedRetryStoreAdapter, kaged_retry_store_adapter, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (KAGED_TYPE_RETRY_STATE_STORE,
                                                      kaged_retry_store_adapter_iface_init))

/* The database keeps the whole snapshot: the scheduler's own fields and
 * why it waits. An idle scheduler is the absence of a row. */
static KagedRetrySnapshot *
kaged_retry_store_adapter_load (KagedRetryStateStore  *state_store,
                                gint64                 session_id,
                                GError               **error)
{
  KagedRetryStoreAdapter *self = KAGED_RETRY_STORE_ADAPTER (state_store);
  g_autoptr(KagedStoreRetryState) saved = NULL;
  KagedRetrySnapshot *snapshot;
  int state = KAGED_RETRY_SCHEDULER_STATE_IDLE;

  saved = kaged_store_get_retry_state (self->store, session_id, error);
  if (saved == NULL)
    return NULL;

  if (!kaged_enum_from_nick (KAGED_TYPE_RETRY_SCHEDULER_STATE, saved->state, &state))
    state = KAGED_RETRY_SCHEDULER_STATE_IDLE;
  if (saved->cancelled)
    state = KAGED_RETRY_SCHEDULER_STATE_CANCELLED;
  if (state == KAGED_RETRY_SCHEDULER_STATE_IDLE)
    return NULL;

  snapshot = kaged_retry_snapshot_new ();
  snapshot->state = state;
  snapshot->attempt = saved->attempt;
  snapshot->next_eligible_time = saved->next_eligible_at;
  snapshot->anchor_id = saved->anchor_id;
  snapshot->run_id = saved->seen_run_id;
  snapshot->retry_run_id = saved->retry_run_id;
  snapshot->retry_class = saved->retry_class;
  snapshot->http_status = saved->http_status;
  snapshot->retry_after_until = saved->retry_after_until;
  snapshot->advised_wait_ms = saved->advised_wait_ms;
  snapshot->wait_source = g_strdup (saved->wait_source);

  return snapshot;
}

static gboolean
kaged_retry_store_adapter_save (KagedRetryStateStore      *state_store,
                                gint64                     session_id,
                                const KagedRetrySnapshot  *snapshot,
                                GError                   **error)
{
  KagedRetryStoreAdapter *self = KAGED_RETRY_STORE_ADAPTER (state_store);
  g_autoptr(KagedStoreRetryState) state = NULL;

  if (snapshot->state == KAGED_RETRY_SCHEDULER_STATE_IDLE)
    return kaged_store_clear_retry_state (self->store, session_id, error);

  state = kaged_store_retry_state_new (session_id);
  state->attempt = snapshot->attempt;
  state->next_eligible_at = snapshot->next_eligible_time;
  g_free (state->state);
  state->state = g_strdup (kaged_enum_to_nick (KAGED_TYPE_RETRY_SCHEDULER_STATE, snapshot->state));
  state->cancelled = snapshot->state == KAGED_RETRY_SCHEDULER_STATE_CANCELLED;
  state->anchor_id = snapshot->anchor_id;
  state->seen_run_id = snapshot->run_id;
  state->retry_run_id = snapshot->retry_run_id;
  state->retry_class = snapshot->retry_class;
  state->http_status = snapshot->http_status;
  state->retry_after_until = snapshot->retry_after_until;
  state->advised_wait_ms = snapshot->advised_wait_ms;
  state->wait_source = g_strdup (snapshot->wait_source);

  return kaged_store_set_retry_state (self->store, state, error);
}

static void
kaged_retry_store_adapter_iface_init (KagedRetryStateStoreInterface *iface)
{
  iface->load = kaged_retry_store_adapter_load;
  iface->save = kaged_retry_store_adapter_save;
}

static void
kaged_retry_store_adapter_finalize (GObject *object)
{
  g_clear_object (&KAGED_RETRY_STORE_ADAPTER (object)->store);

  G_OBJECT_CLASS (kaged_retry_store_adapter_parent_class)->finalize (object);
}

static void
kaged_retry_store_adapter_class_init (KagedRetryStoreAdapterClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = kaged_retry_store_adapter_finalize;
}

static void
kaged_retry_store_adapter_init (KagedRetryStoreAdapter *self)
{
}

/**
 * kaged_retry_state_store_new_for_store:
 * @store: the database
 *
 * The schedulers' state kept whole in @store's `retry_states` table.
 *
 * Returns: (transfer full): a state store to hand to the schedulers; keep
 *   it alive as long as they are
 */
KagedRetryStateStore *
kaged_retry_state_store_new_for_store (KagedStore *store)
{
  KagedRetryStoreAdapter *self;

  g_return_val_if_fail (KAGED_IS_STORE (store), NULL);

  self = g_object_new (KAGED_TYPE_RETRY_STORE_ADAPTER, NULL);
  self->store = g_object_ref (store);

  return KAGED_RETRY_STATE_STORE (self);
}

