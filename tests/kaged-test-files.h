/* kaged-test-files.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

void kaged_test_remove_tree (const char *path);

G_END_DECLS
