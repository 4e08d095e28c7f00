/* kaged-test-time.h: how long tests wait by the clock
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* @usec microseconds, times KAGED_TEST_SLOWDOWN from the environment (1 when
 * unset). The sanitizers test setup sets it (meson.build): there every step
 * of the program takes several times as long. Only the time a test allows
 * for something to happen grows; what it asserts stays the same. */
static inline gint64
kaged_test_usec (gint64 usec)
{
  const char *slowdown = g_getenv ("KAGED_TEST_SLOWDOWN");
  guint64 factor = slowdown != NULL ? g_ascii_strtoull (slowdown, NULL, 10) : 1;

  return usec * (gint64) CLAMP (factor, 1, 100);
}

/* Runs the default main context for @usec microseconds of the clock, as
 * given (pass it through kaged_test_usec() for a wait that lets something
 * happen), sleeping a millisecond whenever nothing is ready. */
static inline void
kaged_test_run_for (gint64 usec)
{
  gint64 until = g_get_monotonic_time () + usec;

  while (g_get_monotonic_time () < until)
    if (!g_main_context_iteration (NULL, FALSE))
      g_usleep (1000);
}

G_END_DECLS
