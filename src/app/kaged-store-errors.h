/* kaged-store-errors.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

char *kaged_describe_store_error (const GError *error,
                                  const char   *path);

G_END_DECLS
