/* kaged-retry-dispatcher.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry-scheduler"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-retry-dispatcher.h"
#include "kaged-session-manager.h"

G_DEFINE_INTERFACE (KagedRetryDispatcher, kaged_retry_dispatcher, G_TYPE_OBJECT)

static void
kaged_retry_dispatcher_default_init (KagedRetryDispatcherInterface *iface)
{
}

/**
 * kaged_retry_dispatcher_regenerate:
 *
 * Returns: the id of the run started from @anchor_id, or 0 with @error set
 */
gint64
kaged_retry_dispatcher_regenerate (KagedRetryDispatcher  *self,
                                   gint64                 session_id,
                                   gint64                 anchor_id,
                                   GCancellable          *cancellable,
                                   GError               **error)
{
  g_return_val_if_fail (KAGED_IS_RETRY_DISPATCHER (self), 0);
  g_return_val_if_fail (!cancellable || G_IS_CANCELLABLE (cancellable), 0);
  g_return_val_if_fail (error == NULL || *error == NULL, 0);

  return KAGED_RETRY_DISPATCHER_GET_IFACE (self)->regenerate (self, session_id, anchor_id,
                                                              cancellable, error);
}

gboolean
kaged_retry_dispatcher_cancel_run (KagedRetryDispatcher  *self,
                                   gint64                 session_id,
                                   gint64                 run_id,
                                   GError               **error)
{
  g_return_val_if_fail (KAGED_IS_RETRY_DISPATCHER (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  return KAGED_RETRY_DISPATCHER_GET_IFACE (self)->cancel_run (self, session_id, run_id, error);
}

/* --- the dispatcher backed by the session manager ----------------------------- */

#define KAGED_TYPE_RETRY_MANAGER_DISPATCHER (kaged_retry_manager_dispatcher_get_type ())

G_DECLARE_FINAL_TYPE (KagedRetryManagerDispatcher, kaged_retry_manager_dispatcher, KAGED, RETRY_MANAGER_DISPATCHER, GObject)

struct _KagedRetryManagerDispatcher
{
  GObject              parent_instance;
  KagedSessionManager *manager;  /* weak: the manager may own the schedulers */
};

static void kaged_retry_manager_dispatcher_iface_init (KagedRetryDispatcherInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedRetryManagerDispatcher, kaged_retry_manager_dispatcher, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (KAGED_TYPE_RETRY_DISPATCHER,
                                                      kaged_retry_manager_dispatcher_iface_init))

static gint64
kaged_retry_manager_dispatcher_regenerate (KagedRetryDispatcher  *dispatcher,
                                           gint64                 session_id,
                                           gint64                 anchor_id,
                                           GCancellable          *cancellable,
                                           GError               **error)
{
  KagedRetryManagerDispatcher *self = KAGED_RETRY_MANAGER_DISPATCHER (dispatcher);
  g_autoptr(KagedReceipt) receipt = NULL;

  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return 0;

  if (self->manager == NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CLOSED, _("Kaged is shutting down"));
      return 0;
    }

  receipt = kaged_session_manager_regenerate_for_retry (self->manager, session_id, anchor_id,
                                                        error);
  if (receipt == NULL)
    return 0;

  return receipt->run_id;
}

static gboolean
kaged_retry_manager_dispatcher_cancel_run (KagedRetryDispatcher  *dispatcher,
                                           gint64                 session_id,
                                           gint64                 run_id,
                                           GError               **error)
{
  KagedRetryManagerDispatcher *self = KAGED_RETRY_MANAGER_DISPATCHER (dispatcher);

  if (self->manager == NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CLOSED, _("Kaged is shutting down"));
      return FALSE;
    }

  return kaged_session_manager_cancel (self->manager, session_id, run_id, error);
}

static void
kaged_retry_manager_dispatcher_iface_init (KagedRetryDispatcherInterface *iface)
{
  iface->regenerate = kaged_retry_manager_dispatcher_regenerate;
  iface->cancel_run = kaged_retry_manager_dispatcher_cancel_run;
}

static void
kaged_retry_manager_dispatcher_dispose (GObject *object)
{
  g_clear_weak_pointer (&KAGED_RETRY_MANAGER_DISPATCHER (object)->manager);

  G_OBJECT_CLASS (kaged_retry_manager_dispatcher_parent_class)->dispose (object);
}

static void
kaged_retry_manager_dispatcher_class_init (KagedRetryManagerDispatcherClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = kaged_retry_manager_dispatcher_dispose;
}

static void
kaged_retry_manager_dispatcher_init (KagedRetryManagerDispatcher *self)
{
}

/**
 * kaged_retry_dispatcher_new_for_manager:
 * @manager: the session manager
 *
 * Retries through @manager: kaged_session_manager_regenerate_for_retry()
 * from the anchor, kaged_session_manager_cancel() for the run. @manager is not kept
 * alive.
 *
 * Returns: (transfer full): a dispatcher to hand to the schedulers
 */
KagedRetryDispatcher *
kaged_retry_dispatcher_new_for_manager (KagedSessionManager *manager)
{
  KagedRetryManagerDispatcher *self;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (manager), NULL);

  self = g_object_new (KAGED_TYPE_RETRY_MANAGER_DISPATCHER, NULL);
  g_set_weak_pointer (&self->manager, manager);

  return KAGED_RETRY_DISPATCHER (self);
}
