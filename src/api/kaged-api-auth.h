/* kaged-api-auth.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-api-error.h"

G_BEGIN_DECLS

gboolean kaged_api_check_address (const char    *address,
                                  GInetAddress **out_address,
                                  GError       **error);

G_END_DECLS
