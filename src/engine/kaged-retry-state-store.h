/* kaged-retry-state-store.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-retry-snapshot.h"
#include "kaged-store.h"

G_BEGIN_DECLS

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

G_END_DECLS
