/* kaged-api-token.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* 32 random bytes, hex-encoded. */
#define KAGED_API_TOKEN_BYTES  32
#define KAGED_API_TOKEN_LENGTH (KAGED_API_TOKEN_BYTES * 2)

char     *kaged_api_token_default_path   (void);
char     *kaged_api_token_generate       (GError     **error);
char     *kaged_api_token_load_or_create (const char  *path,
                                          gboolean    *created,
                                          GError     **error);
gboolean  kaged_api_token_equal          (const char  *expected,
                                          const char  *given);

G_END_DECLS
