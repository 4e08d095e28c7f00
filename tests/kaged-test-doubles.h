/* kaged-test-doubles.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Stand-ins shared by the retry tests: a dispatcher that records what the
 * scheduler asked of the engine, and a network monitor the test switches.
 */

#pragma once

#include <gio/gio.h>

#include "kaged-retry-scheduler.h"

G_BEGIN_DECLS

#define TEST_TYPE_DISPATCHER (test_dispatcher_get_type ())
G_DECLARE_FINAL_TYPE (TestDispatcher, test_dispatcher, TEST, DISPATCHER, GObject)

typedef void (*DuringRegenerate) (gpointer user_data);

struct _TestDispatcher
{
  GObject           parent_instance;
  guint             n_regenerate;
  guint             n_cancel;
  gint64            last_session_id;
  gint64            last_anchor_id;
  gint64            last_cancelled_run_id;
  gint64            next_run_id;
  gboolean          fail;
  gboolean          cancellable_seen;
  DuringRegenerate  during;
  gpointer          during_data;
};

#define TEST_TYPE_NETWORK_MONITOR (test_network_monitor_get_type ())
G_DECLARE_FINAL_TYPE (TestNetworkMonitor, test_network_monitor, TEST, NETWORK_MONITOR, GObject)

struct _TestNetworkMonitor
{
  GObject  parent_instance;
  gboolean available;
};

void test_network_monitor_set_available (TestNetworkMonitor *self,
                                         gboolean            available);

void test_clock_advance                 (KagedClock         *clock,
                                         gint64              ms);

G_END_DECLS
