/* kaged-headless.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include "kaged-options.h"

G_BEGIN_DECLS

int kaged_headless_run (const KagedOptions *options);

G_END_DECLS
