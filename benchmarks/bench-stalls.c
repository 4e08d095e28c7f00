/* bench-stalls.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "bench-stalls.h"

static gboolean
tick_cb (gpointer user_data)
{
  BenchStalls *stalls = user_data;
  gint64 now = g_get_monotonic_time ();

  if (stalls->last_tick != 0)
    {
      gint64 gap = now - stalls->last_tick;

      if (gap > stalls->threshold_us)
        stalls->n_stalls++;
      stalls->worst_gap = MAX (stalls->worst_gap, gap);
    }
  stalls->last_tick = now;

  return G_SOURCE_CONTINUE;
}

void
bench_stalls_start (BenchStalls *stalls,
                    guint        threshold_ms)
{
  memset (stalls, 0, sizeof *stalls);
  stalls->threshold_us = threshold_ms * (gint64)1000;

  stalls->tick = g_timeout_source_new (1);
  g_source_set_priority (stalls->tick, G_PRIORITY_HIGH);
  g_source_set_static_name (stalls->tick, "[bench] main-loop tick");
  g_source_set_callback (stalls->tick, tick_cb, stalls, NULL);
  g_source_attach (stalls->tick, g_main_context_get_thread_default ());
}

void
bench_stalls_stop (BenchStalls *stalls)
{
  if (stalls->tick == NULL)
    return;

  g_source_destroy (stalls->tick);
  g_clear_pointer (&stalls->tick, g_source_unref);
}
