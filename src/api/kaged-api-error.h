/* kaged-api-error.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define KAGED_API_ERROR (kaged_api_error_quark ())

/**
 * KagedApiError:
 * @KAGED_API_ERROR_NOT_LOOPBACK: the API may only listen on 127.0.0.1 or ::1
 * @KAGED_API_ERROR_INVALID_ADDRESS: the address is not an IP address
 * @KAGED_API_ERROR_TOKEN_FILE: the token file cannot be created, read or
 *   trusted (readable by other users)
 * @KAGED_API_ERROR_RANDOM: no random bytes could be had for a token
 *
 * Why the local HTTP API could not start.
 */
typedef enum
{
  KAGED_API_ERROR_NOT_LOOPBACK,
  KAGED_API_ERROR_INVALID_ADDRESS,
  KAGED_API_ERROR_TOKEN_FILE,
  KAGED_API_ERROR_RANDOM,
} KagedApiError;

GQuark kaged_api_error_quark (void);

G_END_DECLS
