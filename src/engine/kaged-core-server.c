/* kaged-core-server.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-core"

#include "config.h"

#include "kaged-core-server.h"

G_DEFINE_INTERFACE (KagedCoreServer, kaged_core_server, G_TYPE_OBJECT)

static void
kaged_core_server_default_init (KagedCoreServerInterface *iface)
{
}

/**
 * kaged_core_server_dup_urls:
 *
 * Returns: (transfer full) (nullable): the addresses the server answers on
 */
char **
kaged_core_server_dup_urls (KagedCoreServer *self)
{
  g_return_val_if_fail (KAGED_IS_CORE_SERVER (self), NULL);

  return KAGED_CORE_SERVER_GET_IFACE (self)->dup_urls (self);
}

/**
 * kaged_core_server_stop:
 *
 * Stops listening and closes the connections the server holds.
 */
void
kaged_core_server_stop (KagedCoreServer *self)
{
  g_return_if_fail (KAGED_IS_CORE_SERVER (self));

  KAGED_CORE_SERVER_GET_IFACE (self)->stop (self);
}
