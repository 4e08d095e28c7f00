/* kaged-process.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

void kaged_process_tune_allocator (void);

G_END_DECLS
