/* kaged-core-server.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define KAGED_TYPE_CORE_SERVER (kaged_core_server_get_type ())

G_DECLARE_INTERFACE (KagedCoreServer, kaged_core_server, KAGED, CORE_SERVER, GObject)

/*
 * KagedCoreServer is what a KagedCore needs of a server that it owns (the
 * local HTTP API lives in a layer above the engine): where it listens, and
 * a way to stop it.
 */
struct _KagedCoreServerInterface
{
  GTypeInterface parent_iface;

  char **(*dup_urls) (KagedCoreServer *self);
  void   (*stop)     (KagedCoreServer *self);
};

char **kaged_core_server_dup_urls (KagedCoreServer *self);
void   kaged_core_server_stop     (KagedCoreServer *self);

G_END_DECLS
