/* kaged-process.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-process"

#include "config.h"

#if HAVE_MALLOPT
# include <malloc.h>
#endif

#include "kaged-process.h"

/* What SQLite and libsoup free after each request would otherwise go back
 * to the system and be asked for again at once: with every post a few
 * transactions and a provider call, that churn was half of the time spent
 * serving the HTTP API. */
#define KEEP_FREE_BYTES (4 * 1024 * 1024)

/**
 * kaged_process_tune_allocator:
 *
 * Lets the C library keep a few megabytes of freed memory for reuse
 * instead of returning it to the system after every request. Call once,
 * early in main().
 */
void
kaged_process_tune_allocator (void)
{
#if HAVE_MALLOPT
  mallopt (M_TRIM_THRESHOLD, KEEP_FREE_BYTES);
  mallopt (M_MMAP_THRESHOLD, KEEP_FREE_BYTES);
#endif
}
