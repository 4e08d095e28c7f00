/* kaged-store-private.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include "kaged-store.h"

G_BEGIN_DECLS

/* For tests only. */
void kaged_store_set_checkpoint_frames (KagedStore *self,
                                        int         frames);

G_END_DECLS
