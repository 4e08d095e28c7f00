/* kaged-fake-models.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

G_BEGIN_DECLS

void kaged_fake_models_handle (SoupServerMessage  *msg,
                               const char         *path,
                               const char * const *models,
                               const char         *key);

G_END_DECLS
