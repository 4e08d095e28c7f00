/* kaged-api-server.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-api-error.h"
#include "kaged-core.h"

G_BEGIN_DECLS

/* Request bodies larger than this are refused with 413. */
#define KAGED_API_DEFAULT_MAX_BODY_SIZE (2 * 1024 * 1024)
/* Event streams get a comment this often, so proxies and clients see life. */
#define KAGED_API_DEFAULT_KEEPALIVE_MS  (15 * 1000)
/* At most this many event streams are open at once. */
#define KAGED_API_MAX_EVENT_STREAMS     64
/* At most this many connections are open at once; more are refused. */
#define KAGED_API_DEFAULT_MAX_CONNECTIONS 512
/* A connection whose reads or writes make no progress this long is closed (s). */
#define KAGED_API_DEFAULT_IDLE_TIMEOUT    60
/* A connection has this long to send a request's headers (s). */
#define KAGED_API_DEFAULT_REQUEST_TIMEOUT 30
/* A request body that stops coming this long is refused (s). */
#define KAGED_API_DEFAULT_BODY_TIMEOUT    10
/* An event stream whose client leaves more than this unread is dropped. */
#define KAGED_API_DEFAULT_MAX_STREAM_BACKLOG (8 * 1024 * 1024)

#define KAGED_TYPE_API_SERVER (kaged_api_server_get_type ())

G_DECLARE_FINAL_TYPE (KagedApiServer, kaged_api_server, KAGED, API_SERVER, GObject)

/*
 * KagedApiServer serves the local HTTP API (docs/http-api.md) of a
 * KagedCore on 127.0.0.1 and ::1 only. Every request needs the bearer
 * token; requests from web pages (with an Origin header) are refused. It
 * runs on the thread-default main context of the thread that calls
 * listen, which must be the core's. It is a KagedCoreServer: once it
 * listens, kaged_core_set_server() hands it to the core, which owns it.
 */
KagedApiServer *kaged_api_server_new                    (KagedCore            *core,
                                                         const char           *token);
KagedCore      *kaged_api_server_get_core               (KagedApiServer       *self);
gboolean        kaged_api_server_listen                 (KagedApiServer       *self,
                                                         guint                 port,
                                                         GError              **error);
gboolean        kaged_api_server_listen_address         (KagedApiServer       *self,
                                                         const char           *address,
                                                         guint                 port,
                                                         GError              **error);
gboolean        kaged_api_server_is_listening           (KagedApiServer       *self);
guint           kaged_api_server_get_port               (KagedApiServer       *self);
char          **kaged_api_server_dup_urls               (KagedApiServer       *self);
void            kaged_api_server_stop                   (KagedApiServer       *self);
gsize           kaged_api_server_get_max_body_size      (KagedApiServer       *self);
void            kaged_api_server_set_max_body_size      (KagedApiServer       *self,
                                                         gsize                 max_body_size);
guint           kaged_api_server_get_keepalive_interval (KagedApiServer       *self);
void            kaged_api_server_set_keepalive_interval (KagedApiServer       *self,
                                                         guint                 interval_ms);
guint           kaged_api_server_get_n_event_streams    (KagedApiServer       *self);
guint           kaged_api_server_get_n_connections      (KagedApiServer       *self);
gsize           kaged_api_server_get_n_buffered_bytes   (KagedApiServer       *self);

G_END_DECLS
