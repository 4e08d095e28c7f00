/* bench-stalls.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * Watches the main loop of the thread-default context: a high-priority
 * timer asks to run every millisecond, and a longer gap between two runs is
 * a stall, counted when it passes @threshold_ms.
 */
typedef struct
{
  GSource *tick;
  gint64   threshold_us;
  gint64   last_tick;
  gint64   worst_gap;      /* microseconds */
  guint    n_stalls;
} BenchStalls;

void bench_stalls_start (BenchStalls *stalls,
                         guint        threshold_ms);
void bench_stalls_stop  (BenchStalls *stalls);

G_END_DECLS
