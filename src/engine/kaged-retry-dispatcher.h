/* kaged-retry-dispatcher.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* The engine's session manager (kaged-session-manager.h), which may itself
 * hold the schedulers. */
typedef struct _KagedSessionManager KagedSessionManager;

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

G_END_DECLS
