/* kaged-api-server-private.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

#include "kaged-api-server.h"

G_BEGIN_DECLS

#define KAGED_API_PREFIX "/api/v1/"

typedef struct _KagedApiListener   KagedApiListener;
typedef struct _KagedApiConnection KagedApiConnection;

struct _KagedApiServer
{
  GObject              parent_instance;

  KagedCore           *core;
  KagedSessionManager *manager;     /* the core's */
  char                *token;
  SoupServer          *server;

  GPtrArray           *urls;        /* char *, the addresses listened on */
  GPtrArray           *streams;     /* KagedApiEventStream */

  /* kaged-api-connections.c */
  GPtrArray           *listeners;   /* KagedApiListener */
  GHashTable          *connections; /* GSocketAddress (remote) → KagedApiConnection */
  GPtrArray           *lingering;   /* answers written before closing */
  GSource             *accept_retry;
  int                  anchor_peer;
  guint                accept_failing : 1;
  guint                at_capacity : 1;

  gsize                max_body_size;
  guint                keepalive_interval;
  guint                port;
  guint                max_connections;
  guint                idle_timeout;      /* seconds */
  guint                request_timeout;   /* seconds */
  guint                body_timeout;      /* seconds */
  gsize                max_stream_backlog;

  gulong               signal_ids[7];
};

typedef enum
{
  KAGED_API_ROUTE_SESSIONS,
  KAGED_API_ROUTE_SESSION,
  KAGED_API_ROUTE_MESSAGES,
  KAGED_API_ROUTE_REGENERATE,
  KAGED_API_ROUTE_EDIT,
  KAGED_API_ROUTE_RUN,
  KAGED_API_ROUTE_CANCEL,
  KAGED_API_ROUTE_EVENTS,
  KAGED_API_ROUTE_RETRY,
  KAGED_API_ROUTE_RETRY_CANCEL,
  KAGED_API_ROUTE_RETRY_NOW,
  KAGED_API_N_ROUTES
} KagedApiRoute;

typedef struct
{
  KagedApiRoute route;
  gint64        session_id;
  gint64        item_id;   /* the message or run */
} KagedApiTarget;

/* kaged-api-request.c: reading requests, writing answers */
gboolean    kaged_api_parse_target          (const char         *path,
                                             KagedApiTarget     *target);
JsonObject *kaged_api_read_body             (SoupServerMessage  *msg,
                                             gboolean            optional,
                                             JsonParser        **out_parser);
gboolean    kaged_api_read_string_member    (SoupServerMessage  *msg,
                                             JsonObject         *object,
                                             const char         *name,
                                             gboolean            nullable,
                                             const char        **value);
gboolean    kaged_api_read_bool_parameter   (SoupServerMessage  *msg,
                                             GHashTable         *query,
                                             const char         *name,
                                             gboolean           *value);
gboolean    kaged_api_read_int_parameter    (SoupServerMessage  *msg,
                                             GHashTable         *query,
                                             const char         *name,
                                             guint64             max,
                                             guint64            *value);
void        kaged_api_respond_json          (SoupServerMessage  *msg,
                                             guint               status,
                                             JsonBuilder        *builder);
char       *kaged_api_error_to_string       (const char         *code,
                                             const char         *message,
                                             gsize              *length);
void        kaged_api_respond_error         (SoupServerMessage  *msg,
                                             guint               status,
                                             const char         *code,
                                             const char         *message);
void        kaged_api_respond_engine_error  (SoupServerMessage  *msg,
                                             const GError       *error);
void        kaged_api_respond_not_found     (SoupServerMessage  *msg);

/* kaged-api-auth.c: what is checked before a body is read */
void        kaged_api_auth_early_handler    (SoupServer         *server,
                                             SoupServerMessage  *msg,
                                             const char         *path,
                                             GHashTable         *query,
                                             gpointer            user_data);

/* kaged-api-connections.c: accepting, bounding and closing connections */
void        kaged_api_connections_init      (KagedApiServer     *self);
void        kaged_api_connections_follow    (KagedApiServer     *self);
gboolean    kaged_api_connections_listen    (KagedApiServer     *self,
                                             GSocket            *socket,
                                             GError            **error);
void        kaged_api_connections_stop      (KagedApiServer     *self);
guint       kaged_api_connections_count     (KagedApiServer     *self);
void        kaged_api_connections_refuse    (KagedApiServer     *self,
                                             SoupServerMessage  *msg,
                                             guint               status,
                                             const char         *code,
                                             const char         *message);
void        kaged_api_connections_close     (KagedApiServer     *self,
                                             SoupServerMessage  *msg);
void        kaged_api_connections_await_body (KagedApiServer    *self,
                                             SoupServerMessage  *msg);
void        kaged_api_connections_body_progress (KagedApiServer *self,
                                             SoupServerMessage  *msg);
void        kaged_api_listener_free         (gpointer            listener);
void        kaged_api_connection_free       (gpointer            connection);

/* kaged-api-events.c: server-sent event streams */
void        kaged_api_events_connect        (KagedApiServer     *self);
void        kaged_api_events_disconnect     (KagedApiServer     *self);
void        kaged_api_events_open           (KagedApiServer     *self,
                                             SoupServerMessage  *msg,
                                             gint64              session_id);
void        kaged_api_events_end_all        (KagedApiServer     *self);
void        kaged_api_event_stream_free     (gpointer            stream);
gsize       kaged_api_events_get_buffered   (KagedApiServer     *self);
guint       kaged_api_events_count          (KagedApiServer     *self);

/* A dropped event stream's client has this long (s) to read the rest. */
#define KAGED_API_STREAM_DROP_GRACE 5

/* kaged-api-routes.c: the endpoints */
const char *kaged_api_route_allow           (KagedApiRoute       route);
gboolean    kaged_api_method_allowed        (KagedApiRoute       route,
                                             const char         *method);
void        kaged_api_routes_handler        (SoupServer         *server,
                                             SoupServerMessage  *msg,
                                             const char         *path,
                                             GHashTable         *query,
                                             gpointer            user_data);

G_END_DECLS
