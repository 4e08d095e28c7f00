/* kaged-fuzz.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* What libFuzzer calls with each input. */
int LLVMFuzzerTestOneInput (const guint8 *data,
                            size_t        size);

G_END_DECLS
