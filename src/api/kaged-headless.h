/* kaged-headless.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * `kaged --headless`: the engine and the local HTTP API with no window and
 * no display. main() asks kaged_headless_wanted() before it sets up
 * anything graphical.
 */
gboolean kaged_headless_wanted (int    argc,
                                char **argv);
int      kaged_headless_main   (int    argc,
                                char **argv);

G_END_DECLS
