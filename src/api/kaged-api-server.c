/* kaged-api-server.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * The local HTTP API: JSON over HTTP/1.1 on the loopback interface. This
 * file holds the server itself — where it listens, its limits, and the
 * KagedCoreServer a core owns. Each request is checked before its body
 * is read (kaged-api-auth.c), then routed (kaged-api-routes.c); event
 * streams live in kaged-api-events.c.
 */

#define G_LOG_DOMAIN "kaged-api"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "kaged-api-auth.h"
#include "kaged-api-server-private.h"

/* Connections waiting to be accepted. */
#define LISTEN_BACKLOG     256

static void kaged_api_server_core_server_init (KagedCoreServerInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedApiServer, kaged_api_server, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (KAGED_TYPE_CORE_SERVER,
                                                      kaged_api_server_core_server_init))

enum {
  PROP_0,
  PROP_CORE,
  PROP_TOKEN,
  PROP_PORT,
  PROP_MAX_BODY_SIZE,
  PROP_KEEPALIVE_INTERVAL,
  PROP_MAX_CONNECTIONS,
  PROP_IDLE_TIMEOUT,
  PROP_REQUEST_TIMEOUT,
  PROP_BODY_TIMEOUT,
  PROP_MAX_STREAM_BACKLOG,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static char **
kaged_api_server_core_dup_urls (KagedCoreServer *server)
{
  return kaged_api_server_dup_urls (KAGED_API_SERVER (server));
}

static void
kaged_api_server_core_stop (KagedCoreServer *server)
{
  kaged_api_server_stop (KAGED_API_SERVER (server));
}

static void
kaged_api_server_core_server_init (KagedCoreServerInterface *iface)
{
  iface->dup_urls = kaged_api_server_core_dup_urls;
  iface->stop = kaged_api_server_core_stop;
}

static void
kaged_api_server_constructed (GObject *object)
{
  KagedApiServer *self = (KagedApiServer *)object;

  G_OBJECT_CLASS (kaged_api_server_parent_class)->constructed (object);

  g_assert (KAGED_IS_CORE (self->core));
  g_assert (self->token != NULL);

  self->manager = g_object_ref (kaged_core_get_manager (self->core));
  kaged_api_events_connect (self);
}

static void
kaged_api_server_dispose (GObject *object)
{
  KagedApiServer *self = (KagedApiServer *)object;

  kaged_api_server_stop (self);

  kaged_api_events_disconnect (self);

  if (self->server != NULL)
    soup_server_remove_handler (self->server, "/");
  g_clear_object (&self->server);
  g_clear_pointer (&self->connections, g_hash_table_unref);
  g_clear_object (&self->manager);
  g_clear_object (&self->core);

  G_OBJECT_CLASS (kaged_api_server_parent_class)->dispose (object);
}

static void
kaged_api_server_finalize (GObject *object)
{
  KagedApiServer *self = (KagedApiServer *)object;

  if (self->token != NULL)
    {
      memset (self->token, 0, strlen (self->token));
      g_clear_pointer (&self->token, g_free);
    }
  g_clear_pointer (&self->urls, g_ptr_array_unref);
  g_clear_pointer (&self->streams, g_ptr_array_unref);
  g_clear_pointer (&self->listeners, g_ptr_array_unref);
  g_clear_pointer (&self->lingering, g_ptr_array_unref);

  G_OBJECT_CLASS (kaged_api_server_parent_class)->finalize (object);
}

static void
kaged_api_server_get_property (GObject    *object,
                               guint       prop_id,
                               GValue     *value,
                               GParamSpec *pspec)
{
  KagedApiServer *self = KAGED_API_SERVER (object);

  switch (prop_id)
    {
    case PROP_CORE:
      g_value_set_object (value, self->core);
      break;

    case PROP_PORT:
      g_value_set_uint (value, self->port);
      break;

    case PROP_MAX_BODY_SIZE:
      g_value_set_uint64 (value, self->max_body_size);
      break;

    case PROP_KEEPALIVE_INTERVAL:
      g_value_set_uint (value, self->keepalive_interval);
      break;

    case PROP_MAX_CONNECTIONS:
      g_value_set_uint (value, self->max_connections);
      break;

    case PROP_IDLE_TIMEOUT:
      g_value_set_uint (value, self->idle_timeout);
      break;

    case PROP_REQUEST_TIMEOUT:
      g_value_set_uint (value, self->request_timeout);
      break;

    case PROP_BODY_TIMEOUT:
      g_value_set_uint (value, self->body_timeout);
      break;

    case PROP_MAX_STREAM_BACKLOG:
      g_value_set_uint64 (value, self->max_stream_backlog);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_api_server_set_property (GObject      *object,
                               guint         prop_id,
                               const GValue *value,
                               GParamSpec   *pspec)
{
  KagedApiServer *self = KAGED_API_SERVER (object);

  switch (prop_id)
    {
    case PROP_CORE:
      self->core = g_value_dup_object (value);
      break;

    case PROP_TOKEN:
      self->token = g_value_dup_string (value);
      break;

    case PROP_MAX_BODY_SIZE:
      kaged_api_server_set_max_body_size (self, g_value_get_uint64 (value));
      break;

    case PROP_KEEPALIVE_INTERVAL:
      kaged_api_server_set_keepalive_interval (self, g_value_get_uint (value));
      break;

    case PROP_MAX_CONNECTIONS:
      self->max_connections = g_value_get_uint (value);
      break;

    case PROP_IDLE_TIMEOUT:
      self->idle_timeout = g_value_get_uint (value);
      break;

    case PROP_REQUEST_TIMEOUT:
      self->request_timeout = g_value_get_uint (value);
      break;

    case PROP_BODY_TIMEOUT:
      self->body_timeout = g_value_get_uint (value);
      break;

    case PROP_MAX_STREAM_BACKLOG:
      self->max_stream_backlog = g_value_get_uint64 (value);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_api_server_class_init (KagedApiServerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->constructed = kaged_api_server_constructed;
  object_class->dispose = kaged_api_server_dispose;
  object_class->finalize = kaged_api_server_finalize;
  object_class->get_property = kaged_api_server_get_property;
  object_class->set_property = kaged_api_server_set_property;

  properties [PROP_CORE] =
    g_param_spec_object ("core", NULL, NULL,
                         KAGED_TYPE_CORE,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  /* Write-only: the token is not handed out again. */
  properties [PROP_TOKEN] =
    g_param_spec_string ("token", NULL, NULL,
                         NULL,
                         (G_PARAM_WRITABLE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  properties [PROP_PORT] =
    g_param_spec_uint ("port", NULL, NULL,
                       0, G_MAXUINT16, 0,
                       (G_PARAM_READABLE |
                        G_PARAM_EXPLICIT_NOTIFY |
                        G_PARAM_STATIC_STRINGS));

  properties [PROP_MAX_BODY_SIZE] =
    g_param_spec_uint64 ("max-body-size", NULL, NULL,
                         1, G_MAXUINT64, KAGED_API_DEFAULT_MAX_BODY_SIZE,
                         (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  properties [PROP_KEEPALIVE_INTERVAL] =
    g_param_spec_uint ("keepalive-interval", NULL, NULL,
                       1, G_MAXUINT, KAGED_API_DEFAULT_KEEPALIVE_MS,
                       (G_PARAM_READWRITE |
                        G_PARAM_EXPLICIT_NOTIFY |
                        G_PARAM_STATIC_STRINGS));

  /* Connections open at once; more are answered 503 and closed. */
  properties [PROP_MAX_CONNECTIONS] =
    g_param_spec_uint ("max-connections", NULL, NULL,
                       1, G_MAXUINT, KAGED_API_DEFAULT_MAX_CONNECTIONS,
                       (G_PARAM_READWRITE |
                        G_PARAM_STATIC_STRINGS));

  /* Seconds a read or write may make no progress before the connection
   * is closed. Applies to connections accepted from then on. */
  properties [PROP_IDLE_TIMEOUT] =
    g_param_spec_uint ("idle-timeout", NULL, NULL,
                       1, G_MAXUINT, KAGED_API_DEFAULT_IDLE_TIMEOUT,
                       (G_PARAM_READWRITE |
                        G_PARAM_STATIC_STRINGS));

  /* Seconds a connection has to send a request's headers, from when it
   * opens or the previous answer went out; then it is closed. */
  properties [PROP_REQUEST_TIMEOUT] =
    g_param_spec_uint ("request-timeout", NULL, NULL,
                       1, G_MAXUINT, KAGED_API_DEFAULT_REQUEST_TIMEOUT,
                       (G_PARAM_READWRITE |
                        G_PARAM_STATIC_STRINGS));

  /* Seconds a request body may stop coming before it is answered 400. */
  properties [PROP_BODY_TIMEOUT] =
    g_param_spec_uint ("body-timeout", NULL, NULL,
                       1, G_MAXUINT, KAGED_API_DEFAULT_BODY_TIMEOUT,
                       (G_PARAM_READWRITE |
                        G_PARAM_STATIC_STRINGS));

  /* Bytes of events an event stream's client may leave unread; beyond,
   * the stream is dropped with a last `stream.dropped` event. */
  properties [PROP_MAX_STREAM_BACKLOG] =
    g_param_spec_uint64 ("max-stream-backlog", NULL, NULL,
                         1, G_MAXUINT64, KAGED_API_DEFAULT_MAX_STREAM_BACKLOG,
                         (G_PARAM_READWRITE |
                          G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_api_server_init (KagedApiServer *self)
{
  self->max_body_size = KAGED_API_DEFAULT_MAX_BODY_SIZE;
  self->keepalive_interval = KAGED_API_DEFAULT_KEEPALIVE_MS;
  self->max_connections = KAGED_API_DEFAULT_MAX_CONNECTIONS;
  self->idle_timeout = KAGED_API_DEFAULT_IDLE_TIMEOUT;
  self->request_timeout = KAGED_API_DEFAULT_REQUEST_TIMEOUT;
  self->body_timeout = KAGED_API_DEFAULT_BODY_TIMEOUT;
  self->max_stream_backlog = KAGED_API_DEFAULT_MAX_STREAM_BACKLOG;
  kaged_api_connections_init (self);
  self->urls = g_ptr_array_new_with_free_func (g_free);
  self->streams = g_ptr_array_new_with_free_func (kaged_api_event_stream_free);
}

/* ---------------------------------------------------------------------------
 * Public API
 * ------------------------------------------------------------------------- */

/**
 * kaged_api_server_new:
 * @core: the core the API drives
 * @token: the bearer token every request must carry (see
 *   kaged_api_token_load_or_create())
 *
 * Returns: (transfer full): a server that does not listen yet; hand it to
 *   the core with kaged_core_set_server() once it listens
 */
KagedApiServer *
kaged_api_server_new (KagedCore  *core,
                      const char *token)
{
  g_return_val_if_fail (KAGED_IS_CORE (core), NULL);
  g_return_val_if_fail (token != NULL && token[0] != '\0', NULL);

  return g_object_new (KAGED_TYPE_API_SERVER,
                       "core", core,
                       "token", token,
                       NULL);
}

/**
 * kaged_api_server_get_core:
 *
 * Returns: (transfer none): the core
 */
KagedCore *
kaged_api_server_get_core (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), NULL);

  return self->core;
}

static SoupServer *
ensure_server (KagedApiServer *self)
{
  if (self->server == NULL)
    {
      self->server = soup_server_new (NULL, NULL);
      soup_server_add_early_handler (self->server, "/", kaged_api_auth_early_handler, self, NULL);
      soup_server_add_handler (self->server, "/", kaged_api_routes_handler, self, NULL);
      kaged_api_connections_follow (self);
    }

  return self->server;
}

static gboolean
listen_on (KagedApiServer  *self,
           GInetAddress    *address,
           guint            port,
           GError         **error)
{
  g_autoptr(GSocketAddress) socket_address = NULL;
  g_autoptr(GSocketAddress) bound = NULL;
  g_autoptr(GSocket) socket = NULL;
  g_autofree char *host = NULL;
  guint bound_port;

  g_assert (g_inet_address_get_is_loopback (address));

  /* The socket is made here rather than by soup_server_listen() so its
   * backlog holds a burst of clients connecting at once. */
  socket = g_socket_new (g_inet_address_get_family (address), G_SOCKET_TYPE_STREAM,
                         G_SOCKET_PROTOCOL_TCP, error);
  if (socket == NULL)
    return FALSE;

  g_socket_set_listen_backlog (socket, LISTEN_BACKLOG);
  socket_address = g_inet_socket_address_new (address, port);

  if (!g_socket_bind (socket, socket_address, TRUE, error) ||
      !g_socket_listen (socket, error) ||
      !(bound = g_socket_get_local_address (socket, error)))
    return FALSE;

  /* Only ever a loopback address, whatever the caller asked. */
  if (!g_inet_address_get_is_loopback (g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (bound))))
    {
      g_set_error_literal (error, KAGED_API_ERROR, KAGED_API_ERROR_NOT_LOOPBACK,
                           _("The API only listens on this computer"));
      return FALSE;
    }

  ensure_server (self);
  if (!kaged_api_connections_listen (self, socket, error))
    return FALSE;

  bound_port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));

  host = g_inet_address_to_string (address);
  if (g_inet_address_get_family (address) == G_SOCKET_FAMILY_IPV6)
    g_ptr_array_add (self->urls, g_strdup_printf ("http://[%s]:%u", host, bound_port));
  else
    g_ptr_array_add (self->urls, g_strdup_printf ("http://%s:%u", host, bound_port));

  if (self->port == 0)
    {
      self->port = bound_port;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_PORT]);
    }

  return TRUE;
}

/**
 * kaged_api_server_listen:
 * @port: the TCP port, or 0 for a free one
 *
 * Listens on 127.0.0.1 and, where the system has it, on ::1 at the same
 * port. Only the loopback interface is ever used.
 *
 * Returns: %TRUE once listening on 127.0.0.1
 */
gboolean
kaged_api_server_listen (KagedApiServer  *self,
                         guint            port,
                         GError         **error)
{
  g_autoptr(GInetAddress) ipv4 = NULL;
  g_autoptr(GInetAddress) ipv6 = NULL;
  g_autoptr(GError) ipv6_error = NULL;

  g_return_val_if_fail (KAGED_IS_API_SERVER (self), FALSE);
  g_return_val_if_fail (port <= G_MAXUINT16, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  ipv4 = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  if (!listen_on (self, ipv4, port, error))
    return FALSE;

  ipv6 = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV6);
  if (!listen_on (self, ipv6, self->port, &ipv6_error))
    g_debug ("Not listening on [::1]:%u: %s", self->port, ipv6_error->message);

  return TRUE;
}

/**
 * kaged_api_server_listen_address:
 * @address: an IP address of the loopback interface (`127.0.0.1`, `::1`)
 *   or `localhost`
 * @port: the TCP port, or 0 for a free one
 *
 * Listens on one loopback address. Any other address is refused with
 * %KAGED_API_ERROR_NOT_LOOPBACK: the API is for this computer only.
 *
 * Returns: %TRUE once listening
 */
gboolean
kaged_api_server_listen_address (KagedApiServer  *self,
                                 const char      *address,
                                 guint            port,
                                 GError         **error)
{
  g_autoptr(GInetAddress) inet_address = NULL;

  g_return_val_if_fail (KAGED_IS_API_SERVER (self), FALSE);
  g_return_val_if_fail (address != NULL, FALSE);
  g_return_val_if_fail (port <= G_MAXUINT16, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!kaged_api_check_address (address, &inet_address, error))
    return FALSE;

  if (inet_address == NULL)
    return kaged_api_server_listen (self, port, error);

  return listen_on (self, inet_address, port, error);
}

gboolean
kaged_api_server_is_listening (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), FALSE);

  return self->urls->len > 0;
}

/**
 * kaged_api_server_get_port:
 *
 * Returns: the port listened on, or 0 when not listening
 */
guint
kaged_api_server_get_port (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), 0);

  return self->port;
}

/**
 * kaged_api_server_dup_urls:
 *
 * Returns: (transfer full): the base URLs listened on, 127.0.0.1 first
 */
char **
kaged_api_server_dup_urls (KagedApiServer *self)
{
  GStrvBuilder *builder;
  char **urls;

  g_return_val_if_fail (KAGED_IS_API_SERVER (self), NULL);

  builder = g_strv_builder_new ();
  for (guint i = 0; i < self->urls->len; i++)
    g_strv_builder_add (builder, g_ptr_array_index (self->urls, i));
  urls = g_strv_builder_end (builder);
  g_strv_builder_unref (builder);

  return urls;
}

/**
 * kaged_api_server_stop:
 *
 * Ends the event streams, closes every connection and stops listening.
 * The server may listen again later.
 */
void
kaged_api_server_stop (KagedApiServer *self)
{
  g_return_if_fail (KAGED_IS_API_SERVER (self));

  kaged_api_events_end_all (self);

  if (self->server != NULL)
    soup_server_disconnect (self->server);
  kaged_api_connections_stop (self);

  g_ptr_array_set_size (self->urls, 0);
  if (self->port != 0)
    {
      self->port = 0;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_PORT]);
    }
}

gsize
kaged_api_server_get_max_body_size (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), 0);

  return self->max_body_size;
}

/**
 * kaged_api_server_set_max_body_size:
 * @max_body_size: the largest request body accepted, in bytes
 *
 * Larger bodies are answered 413 without reaching the engine.
 */
void
kaged_api_server_set_max_body_size (KagedApiServer *self,
                                    gsize           max_body_size)
{
  g_return_if_fail (KAGED_IS_API_SERVER (self));
  g_return_if_fail (max_body_size > 0);

  if (self->max_body_size != max_body_size)
    {
      self->max_body_size = max_body_size;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_MAX_BODY_SIZE]);
    }
}

guint
kaged_api_server_get_keepalive_interval (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), 0);

  return self->keepalive_interval;
}

/**
 * kaged_api_server_set_keepalive_interval:
 * @interval_ms: how often an idle event stream gets a comment
 *
 * Applies to event streams opened from now on.
 */
void
kaged_api_server_set_keepalive_interval (KagedApiServer *self,
                                         guint           interval_ms)
{
  g_return_if_fail (KAGED_IS_API_SERVER (self));
  g_return_if_fail (interval_ms > 0);

  if (self->keepalive_interval != interval_ms)
    {
      self->keepalive_interval = interval_ms;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_KEEPALIVE_INTERVAL]);
    }
}

/**
 * kaged_api_server_get_n_event_streams:
 *
 * Returns: how many event streams are open, not counting those dropped
 *   and ending
 */
guint
kaged_api_server_get_n_event_streams (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), 0);

  return kaged_api_events_count (self);
}

/**
 * kaged_api_server_get_n_buffered_bytes:
 *
 * Returns: how many bytes of events wait to be written to their clients
 */
gsize
kaged_api_server_get_n_buffered_bytes (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), 0);

  return kaged_api_events_get_buffered (self);
}

/**
 * kaged_api_server_get_n_connections:
 *
 * Returns: how many connections are open, those being answered and
 *   closed included
 */
guint
kaged_api_server_get_n_connections (KagedApiServer *self)
{
  g_return_val_if_fail (KAGED_IS_API_SERVER (self), 0);

  return kaged_api_connections_count (self);
}
