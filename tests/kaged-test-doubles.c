/* kaged-test-doubles.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include "kaged-test-doubles.h"

/* --- a dispatcher that records what it was asked ------------------------- */

static void test_dispatcher_iface_init (KagedRetryDispatcherInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (TestDispatcher, test_dispatcher, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (KAGED_TYPE_RETRY_DISPATCHER,
                                                      test_dispatcher_iface_init))

static gint64
test_dispatcher_regenerate (KagedRetryDispatcher  *dispatcher,
                            gint64                 session_id,
                            gint64                 anchor_id,
                            GCancellable          *cancellable,
                            GError               **error)
{
  TestDispatcher *self = TEST_DISPATCHER (dispatcher);

  self->n_regenerate++;
  self->last_session_id = session_id;
  self->last_anchor_id = anchor_id;
  self->cancellable_seen = G_IS_CANCELLABLE (cancellable);

  if (self->fail)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no such message");
      return 0;
    }

  if (self->during != NULL)
    self->during (self->during_data);

  return self->next_run_id++;
}

static gboolean
test_dispatcher_cancel_run (KagedRetryDispatcher  *dispatcher,
                            gint64                 session_id,
                            gint64                 run_id,
                            GError               **error)
{
  TestDispatcher *self = TEST_DISPATCHER (dispatcher);

  self->n_cancel++;
  self->last_cancelled_run_id = run_id;

  return TRUE;
}

static void
test_dispatcher_iface_init (KagedRetryDispatcherInterface *iface)
{
  iface->regenerate = test_dispatcher_regenerate;
  iface->cancel_run = test_dispatcher_cancel_run;
}

static void
test_dispatcher_class_init (TestDispatcherClass *klass)
{
}

static void
test_dispatcher_init (TestDispatcher *self)
{
  self->next_run_id = 100;
}

/* --- a network monitor the test switches ----------------------------------- */

enum {
  MONITOR_PROP_0,
  MONITOR_PROP_NETWORK_AVAILABLE,
  MONITOR_PROP_NETWORK_METERED,
  MONITOR_PROP_CONNECTIVITY,
};

static void test_network_monitor_iface_init (GNetworkMonitorInterface *iface);
static void test_network_monitor_initable_iface_init (GInitableIface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (TestNetworkMonitor, test_network_monitor, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_INITABLE,
                                                      test_network_monitor_initable_iface_init)
                               G_IMPLEMENT_INTERFACE (G_TYPE_NETWORK_MONITOR,
                                                      test_network_monitor_iface_init))

static gboolean
test_network_monitor_initable_init (GInitable     *initable,
                                    GCancellable  *cancellable,
                                    GError       **error)
{
  return TRUE;
}

static void
test_network_monitor_initable_iface_init (GInitableIface *iface)
{
  iface->init = test_network_monitor_initable_init;
}

static void
test_network_monitor_iface_init (GNetworkMonitorInterface *iface)
{
}

static void
test_network_monitor_get_property (GObject    *object,
                                   guint       prop_id,
                                   GValue     *value,
                                   GParamSpec *pspec)
{
  TestNetworkMonitor *self = TEST_NETWORK_MONITOR (object);

  switch (prop_id)
    {
    case MONITOR_PROP_NETWORK_AVAILABLE:
      g_value_set_boolean (value, self->available);
      break;

    case MONITOR_PROP_NETWORK_METERED:
      g_value_set_boolean (value, FALSE);
      break;

    case MONITOR_PROP_CONNECTIVITY:
      g_value_set_enum (value, self->available ? G_NETWORK_CONNECTIVITY_FULL
                                               : G_NETWORK_CONNECTIVITY_LOCAL);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
test_network_monitor_class_init (TestNetworkMonitorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = test_network_monitor_get_property;

  g_object_class_override_property (object_class, MONITOR_PROP_NETWORK_AVAILABLE,
                                    "network-available");
  g_object_class_override_property (object_class, MONITOR_PROP_NETWORK_METERED,
                                    "network-metered");
  g_object_class_override_property (object_class, MONITOR_PROP_CONNECTIVITY, "connectivity");
}

static void
test_network_monitor_init (TestNetworkMonitor *self)
{
  self->available = TRUE;
}

void
test_network_monitor_set_available (TestNetworkMonitor *self,
                                    gboolean            available)
{
  self->available = available;
  g_object_notify (G_OBJECT (self), "network-available");
  g_signal_emit_by_name (self, "network-changed", available);
}

/* Moves the fake @clock forward by @ms, letting every timeout due on the
 * way dispatch at its own time, and what that starts run. */
void
test_clock_advance (KagedClock *clock,
                    gint64      ms)
{
  KagedFakeClock *fake = KAGED_FAKE_CLOCK (clock);

  while (g_main_context_iteration (NULL, FALSE))
    ;

  while (ms > 0)
    {
      guint64 next = kaged_fake_clock_next_deadline (fake);
      gint64 step = next == 0 || next > (guint64)ms ? ms : (gint64)next;

      kaged_fake_clock_advance (fake, step);
      ms -= step;
      while (g_main_context_iteration (NULL, FALSE))
        ;
    }
}
