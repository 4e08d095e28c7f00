/* kaged-api-connections.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * The connections of the local HTTP API: accepting them, bounding how many
 * are open and how long each may keep the server waiting, and answering
 * at once (then closing) a request that is refused before its body.
 *
 * The server accepts connections itself and hands each to libsoup with
 * soup_server_accept_iostream(): libsoup 3.2's own listener removes its
 * accept watch at the first failed accept() (EMFILE when descriptors run
 * out) and never accepts on that socket again. Here a failed accept pauses
 * accepting, says so once, and resumes when a connection closes or after a
 * short wait.
 *
 * libsoup keeps a connection open between requests only while the server
 * has a listener of its own, so the server gives it one that never accepts
 * anything: one end of a socket pair whose other end never writes.
 *
 * Between requests, a kept connection is taken back from libsoup and
 * watched here: libsoup 3.2 never closes a kept connection that its client
 * closes before sending another request (it ends its next request without
 * telling anyone), which leaks a descriptor per connection. When the next
 * request starts coming it is handed to libsoup again; when the client
 * closes it, or sends nothing within the request timeout, it is closed.
 */

#define G_LOG_DOMAIN "kaged-api"

#include "config.h"

#include <errno.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>

#include "kaged-api-server-private.h"
#include "kaged-api-wire.h"

/* After a failed accept, try again this soon (or when a connection ends). */
#define ACCEPT_RETRY_MS       250
/* A refused request's answer is written, then what the client still sends
 * is read and dropped for this long, so the answer is not lost to a reset. */
#define LINGER_MS             2000
/* Answers being lingered over at once; beyond, a connection is just closed. */
#define MAX_LINGERING         64

struct _KagedApiListener
{
  KagedApiServer *server;     /* unowned: the server frees its listeners */
  GSocket        *socket;
  GSource        *watch;      /* NULL while accepting is paused */
};

struct _KagedApiConnection
{
  KagedApiServer    *server;     /* unowned */
  GSocket           *socket;
  GSocketAddress    *remote;     /* the key: libsoup hands this one back */
  GSocketConnection *stream;     /* weak: libsoup owns it */
  GSource           *deadline;   /* for the headers, or the body */
  SoupServerMessage *reading;    /* unowned: the request whose body is awaited */

  /* Between requests */
  SoupServerMessage *finished;   /* the request just answered */
  GSource           *reclaim;    /* takes the connection back from libsoup */
  GSocketConnection *idle;       /* held here while no request comes */
  GSource           *idle_watch;
};

typedef struct
{
  KagedApiServer *server;        /* unowned */
  GIOStream      *stream;
  GSocket        *socket;
  GBytes         *answer;
  GCancellable   *cancellable;
  GSource        *timeout;
  guint8          buffer[16 * 1024];
} Lingering;

static void accept_resume      (KagedApiServer *self);
static void connection_gone_cb (gpointer        data,
                                GObject        *where_the_object_was);

/* ---------------------------------------------------------------------------
 * Connections
 * ------------------------------------------------------------------------- */

static void
connection_clear_deadline (KagedApiConnection *connection)
{
  if (connection->deadline != NULL)
    {
      g_source_destroy (connection->deadline);
      g_clear_pointer (&connection->deadline, g_source_unref);
    }
}

static void
connection_clear_idle (KagedApiConnection *connection)
{
  if (connection->reclaim != NULL)
    {
      g_source_destroy (connection->reclaim);
      g_clear_pointer (&connection->reclaim, g_source_unref);
    }
  if (connection->idle_watch != NULL)
    {
      g_source_destroy (connection->idle_watch);
      g_clear_pointer (&connection->idle_watch, g_source_unref);
    }
  g_clear_object (&connection->finished);
}

void
kaged_api_connection_free (gpointer data)
{
  KagedApiConnection *connection = data;

  connection_clear_deadline (connection);
  connection_clear_idle (connection);
  if (connection->idle != NULL)
    {
      g_socket_close (connection->socket, NULL);
      g_object_weak_unref (G_OBJECT (connection->idle), connection_gone_cb, connection);
      g_clear_object (&connection->idle);
      connection->stream = NULL;
    }
  if (connection->stream != NULL)
    g_object_weak_unref (G_OBJECT (connection->stream), connection_gone_cb, connection);
  g_clear_object (&connection->socket);
  g_clear_object (&connection->remote);
  g_free (connection);
}

static void
connection_set_deadline (KagedApiConnection *connection,
                         guint               seconds,
                         GSourceFunc         callback)
{
  connection_clear_deadline (connection);

  connection->deadline = g_timeout_source_new_seconds (seconds);
  g_source_set_callback (connection->deadline, callback, connection, NULL);
  g_source_set_static_name (connection->deadline, "[kaged] API connection deadline");
  g_source_attach (connection->deadline, g_main_context_get_thread_default ());
}

static KagedApiConnection *
lookup_connection (KagedApiServer    *self,
                   SoupServerMessage *msg)
{
  GSocketAddress *remote = soup_server_message_get_remote_address (msg);

  return remote != NULL ? g_hash_table_lookup (self->connections, remote) : NULL;
}

/* libsoup let go of the connection: it is closed. */
static void
connection_gone_cb (gpointer  data,
                    GObject  *where_the_object_was)
{
  KagedApiConnection *connection = data;
  KagedApiServer *self = connection->server;

  connection->stream = NULL;
  g_hash_table_remove (self->connections, connection->remote);

  accept_resume (self);
}

/* Headers that did not come in time: the connection is closed, which
 * libsoup reads as the client going away. */
static gboolean
headers_deadline_cb (gpointer user_data)
{
  KagedApiConnection *connection = user_data;

  g_clear_pointer (&connection->deadline, g_source_unref);
  g_debug ("Closing a connection that sent no complete request in %u s",
           connection->server->request_timeout);

  if (connection->idle != NULL)
    {
      /* Ours: close it; the connection goes with the stream. */
      g_autoptr(GSocketConnection) idle = g_steal_pointer (&connection->idle);

      connection_clear_idle (connection);
      g_socket_close (connection->socket, NULL);
      g_io_stream_close (G_IO_STREAM (idle), NULL, NULL);
      return G_SOURCE_REMOVE;
    }

  /* libsoup's, reading headers: it ends the connection at the end of input. */
  g_socket_shutdown (connection->socket, TRUE, TRUE, NULL);

  return G_SOURCE_REMOVE;
}

static void
arm_headers_deadline (KagedApiConnection *connection)
{
  connection_set_deadline (connection, connection->server->request_timeout,
                           headers_deadline_cb);
}

guint
kaged_api_connections_count (KagedApiServer *self)
{
  GHashTableIter iter;
  gpointer value;
  guint n = 0;

  g_hash_table_iter_init (&iter, self->connections);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    {
      KagedApiConnection *connection = value;

      if (!g_socket_is_closed (connection->socket))
        n++;
    }

  return n + self->lingering->len;
}

/* ---------------------------------------------------------------------------
 * Answering at once, then closing
 * ------------------------------------------------------------------------- */

static void
lingering_free (Lingering *lingering)
{
  if (lingering->timeout != NULL)
    {
      g_source_destroy (lingering->timeout);
      g_source_unref (lingering->timeout);
    }
  if (lingering->socket != NULL)
    g_socket_close (lingering->socket, NULL);
  if (lingering->stream != NULL)
    g_io_stream_close (lingering->stream, NULL, NULL);
  g_clear_object (&lingering->stream);
  g_clear_object (&lingering->socket);
  g_clear_object (&lingering->cancellable);
  g_clear_pointer (&lingering->answer, g_bytes_unref);
  g_free (lingering);
}

static void
lingering_done (Lingering *lingering)
{
  KagedApiServer *self = lingering->server;

  /* Unless the server stopped meanwhile. */
  if (self != NULL)
    g_ptr_array_remove_fast (self->lingering, lingering);
  lingering_free (lingering);
  if (self != NULL)
    accept_resume (self);
}

static gboolean
lingering_timeout_cb (gpointer user_data)
{
  Lingering *lingering = user_data;

  g_clear_pointer (&lingering->timeout, g_source_unref);
  g_cancellable_cancel (lingering->cancellable);

  return G_SOURCE_REMOVE;
}

static void
lingering_read_cb (GObject      *object,
                   GAsyncResult *result,
                   gpointer      user_data)
{
  Lingering *lingering = user_data;
  gssize n;

  n = g_input_stream_read_finish (G_INPUT_STREAM (object), result, NULL);
  if (n <= 0)
    {
      lingering_done (lingering);
      return;
    }

  g_input_stream_read_async (G_INPUT_STREAM (object), lingering->buffer,
                             sizeof lingering->buffer, G_PRIORITY_LOW,
                             lingering->cancellable, lingering_read_cb, lingering);
}

static void
lingering_wrote_cb (GObject      *object,
                    GAsyncResult *result,
                    gpointer      user_data)
{
  Lingering *lingering = user_data;

  if (!g_output_stream_write_all_finish (G_OUTPUT_STREAM (object), result, NULL, NULL))
    {
      lingering_done (lingering);
      return;
    }

  /* The answer is out: say no more, and drop what still comes. */
  g_socket_shutdown (lingering->socket, FALSE, TRUE, NULL);
  g_input_stream_read_async (g_io_stream_get_input_stream (lingering->stream),
                             lingering->buffer, sizeof lingering->buffer, G_PRIORITY_LOW,
                             lingering->cancellable, lingering_read_cb, lingering);
}

/* Writes @answer on @stream, then closes it. */
static void
answer_and_close (KagedApiServer *self,
                  GIOStream      *stream,
                  GSocket        *socket,
                  GBytes         *answer)
{
  Lingering *lingering;

  if (self->lingering->len >= MAX_LINGERING)
    {
      g_socket_close (socket, NULL);
      g_io_stream_close (stream, NULL, NULL);
      return;
    }

  lingering = g_new0 (Lingering, 1);
  lingering->server = self;
  lingering->stream = g_object_ref (stream);
  lingering->socket = g_object_ref (socket);
  lingering->answer = g_bytes_ref (answer);
  lingering->cancellable = g_cancellable_new ();
  lingering->timeout = g_timeout_source_new (LINGER_MS);
  g_source_set_callback (lingering->timeout, lingering_timeout_cb, lingering, NULL);
  g_source_set_static_name (lingering->timeout, "[kaged] API answer linger");
  g_source_attach (lingering->timeout, g_main_context_get_thread_default ());
  g_ptr_array_add (self->lingering, lingering);

  g_output_stream_write_all_async (g_io_stream_get_output_stream (stream),
                                   g_bytes_get_data (answer, NULL), g_bytes_get_size (answer),
                                   G_PRIORITY_DEFAULT, lingering->cancellable,
                                   lingering_wrote_cb, lingering);
}

/* A whole HTTP/1.1 answer: @status with the error body, @headers' own
 * (if any) and `Connection: close`. */
static GBytes *
format_answer (guint               status,
               const char         *code,
               const char         *message,
               SoupMessageHeaders *headers)
{
  g_autofree char *body = NULL;
  GString *answer = g_string_new (NULL);
  gsize length = 0;

  body = kaged_api_error_to_string (code, message, &length);

  g_string_append_printf (answer, "HTTP/1.1 %u %s\r\n", status, soup_status_get_phrase (status));
  if (headers != NULL)
    {
      SoupMessageHeadersIter iter;
      const char *name;
      const char *value;

      soup_message_headers_iter_init (&iter, headers);
      while (soup_message_headers_iter_next (&iter, &name, &value))
        {
          if (g_ascii_strcasecmp (name, "Content-Type") == 0 ||
              g_ascii_strcasecmp (name, "Content-Length") == 0 ||
              g_ascii_strcasecmp (name, "Transfer-Encoding") == 0 ||
              g_ascii_strcasecmp (name, "Connection") == 0)
            continue;
          g_string_append_printf (answer, "%s: %s\r\n", name, value);
        }
    }
  g_string_append (answer,
                   "Content-Type: application/json; charset=utf-8\r\n"
                   "Cache-Control: no-store\r\n"
                   "X-Content-Type-Options: nosniff\r\n"
                   "Connection: close\r\n");
  g_string_append_printf (answer, "Content-Length: %" G_GSIZE_FORMAT "\r\n\r\n", length);
  g_string_append_len (answer, body, length);

  return g_string_free_to_bytes (answer);
}

/**
 * kaged_api_connections_refuse:
 * @msg: a request whose headers are in
 *
 * Answers @msg with the error at once, whatever of its body is still to
 * come, and closes its connection: libsoup would read the whole body (up
 * to the announced 10 GiB, or for ever when it does not come) before
 * answering. The response headers already set on @msg are kept.
 */
void
kaged_api_connections_refuse (KagedApiServer    *self,
                              SoupServerMessage *msg,
                              guint              status,
                              const char        *code,
                              const char        *message)
{
  KagedApiConnection *connection = lookup_connection (self, msg);
  g_autoptr(GIOStream) stream = NULL;
  g_autoptr(GBytes) answer = NULL;
  g_autoptr(GSocket) socket = NULL;

  if (connection == NULL)
    {
      /* Not one of ours: answer when libsoup has read the body. */
      soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                    "Connection", "close");
      soup_message_body_set_accumulate (soup_server_message_get_request_body (msg), FALSE);
      kaged_api_respond_error (msg, status, code, message);
      return;
    }

  g_debug ("Refusing %s %s at once: %u %s", soup_server_message_get_method (msg),
           g_uri_get_path (soup_server_message_get_uri (msg)), status, code);

  answer = format_answer (status, code, message, soup_server_message_get_response_headers (msg));
  connection_clear_deadline (connection);
  connection->reading = NULL;
  socket = g_object_ref (connection->socket);

  /* libsoup stops reading and writing this connection. */
  stream = soup_server_message_steal_connection (msg);
  if (stream == NULL)
    {
      g_socket_shutdown (socket, TRUE, TRUE, NULL);
      return;
    }

  answer_and_close (self, stream, socket, answer);
}

/* Closes the connection of @msg, whatever it is doing. */
void
kaged_api_connections_close (KagedApiServer    *self,
                             SoupServerMessage *msg)
{
  KagedApiConnection *connection = lookup_connection (self, msg);

  if (connection != NULL)
    g_socket_shutdown (connection->socket, TRUE, TRUE, NULL);
}

/* ---------------------------------------------------------------------------
 * Requests on a connection
 * ------------------------------------------------------------------------- */

static gboolean
body_deadline_cb (gpointer user_data)
{
  KagedApiConnection *connection = user_data;
  SoupServerMessage *msg = connection->reading;

  g_clear_pointer (&connection->deadline, g_source_unref);

  if (msg != NULL)
    kaged_api_connections_refuse (connection->server, msg, SOUP_STATUS_BAD_REQUEST,
                                  "incomplete_body",
                                  _("The request body stopped before the length it announced"));

  return G_SOURCE_REMOVE;
}

/**
 * kaged_api_connections_await_body:
 * @msg: a request whose headers are in and whose body is to come
 *
 * The body must keep coming: once none of it came for the body timeout,
 * the request is answered 400 and its connection closed. Call
 * kaged_api_connections_body_progress() for each part.
 */
void
kaged_api_connections_await_body (KagedApiServer    *self,
                                  SoupServerMessage *msg)
{
  KagedApiConnection *connection = lookup_connection (self, msg);

  if (connection == NULL)
    return;

  connection->reading = msg;
  connection_set_deadline (connection, self->body_timeout, body_deadline_cb);
}

void
kaged_api_connections_body_progress (KagedApiServer    *self,
                                     SoupServerMessage *msg)
{
  KagedApiConnection *connection = lookup_connection (self, msg);

  if (connection != NULL && connection->reading == msg)
    connection_set_deadline (connection, self->body_timeout, body_deadline_cb);
}

static void
got_headers_cb (SoupServerMessage *msg,
                KagedApiServer    *self)
{
  KagedApiConnection *connection = lookup_connection (self, msg);

  /* The early handler ran first: it may have refused it, or be awaiting
   * its body. */
  if (connection != NULL && connection->reading != msg)
    connection_clear_deadline (connection);
}

static void
got_body_cb (SoupServerMessage *msg,
             KagedApiServer    *self)
{
  KagedApiConnection *connection = lookup_connection (self, msg);

  if (connection != NULL && connection->reading == msg)
    {
      connection->reading = NULL;
      connection_clear_deadline (connection);
    }
}

static void
request_started_cb (SoupServer        *server,
                    SoupServerMessage *msg,
                    KagedApiServer    *self)
{
  g_signal_connect_object (msg, "got-headers", G_CALLBACK (got_headers_cb), self, 0);
  g_signal_connect_object (msg, "got-body", G_CALLBACK (got_body_cb), self, 0);
}

/* The next request is coming (or the client closed): libsoup reads it. */
static gboolean
idle_readable_cb (GSocket      *socket,
                  GIOCondition  condition,
                  gpointer      user_data)
{
  KagedApiConnection *connection = user_data;
  KagedApiServer *self = connection->server;
  g_autoptr(GSocketConnection) idle = g_steal_pointer (&connection->idle);
  g_autoptr(GSocketAddress) local = NULL;

  g_clear_pointer (&connection->idle_watch, g_source_unref);

  local = g_socket_get_local_address (socket, NULL);
  if (local == NULL)
    {
      g_socket_close (socket, NULL);
      g_io_stream_close (G_IO_STREAM (idle), NULL, NULL);
      return G_SOURCE_REMOVE;
    }

  soup_server_accept_iostream (self->server, G_IO_STREAM (idle), local, connection->remote, NULL);

  return G_SOURCE_REMOVE;
}

static gboolean
reclaim_cb (gpointer user_data)
{
  KagedApiConnection *connection = user_data;
  g_autoptr(SoupServerMessage) finished = g_steal_pointer (&connection->finished);
  g_autoptr(GIOStream) wrapper = NULL;

  g_clear_pointer (&connection->reclaim, g_source_unref);

  /* Closed by libsoup meanwhile: nothing to take back. */
  if (g_socket_is_closed (connection->socket) || connection->stream == NULL)
    return G_SOURCE_REMOVE;

  connection->idle = g_object_ref (connection->stream);
  /* libsoup's own wrapper of our stream, which it does not close. */
  wrapper = soup_server_message_steal_connection (finished);
  if (wrapper == NULL)
    {
      g_clear_object (&connection->idle);
      return G_SOURCE_REMOVE;
    }

  connection->idle_watch = g_socket_create_source (connection->socket, G_IO_IN, NULL);
  g_source_set_callback (connection->idle_watch, G_SOURCE_FUNC (idle_readable_cb), connection,
                         NULL);
  g_source_set_static_name (connection->idle_watch, "[kaged] API idle connection");
  g_source_attach (connection->idle_watch, g_main_context_get_thread_default ());

  return G_SOURCE_REMOVE;
}

/* The answer is out: the next request's headers are due within the
 * request timeout, or the connection closes. */
static void
request_ended_cb (SoupServer        *server,
                  SoupServerMessage *msg,
                  KagedApiServer    *self)
{
  KagedApiConnection *connection = lookup_connection (self, msg);

  if (connection == NULL)
    return;

  if (connection->reading == msg)
    connection->reading = NULL;
  if (g_socket_is_closed (connection->socket))
    return;

  arm_headers_deadline (connection);

  if (connection->reclaim == NULL)
    {
      /* libsoup sets up the next request once this handler returns, or
       * closes the connection (then there is nothing to take): take it
       * back right after, before it reads anything. */
      g_set_object (&connection->finished, msg);
      connection->reclaim = g_idle_source_new ();
      g_source_set_priority (connection->reclaim, G_PRIORITY_HIGH);
      g_source_set_callback (connection->reclaim, reclaim_cb, connection, NULL);
      g_source_set_static_name (connection->reclaim, "[kaged] API connection reclaim");
      g_source_attach (connection->reclaim, g_main_context_get_thread_default ());
    }
}

/* ---------------------------------------------------------------------------
 * Accepting
 * ------------------------------------------------------------------------- */

static GBytes *
too_many_answer (void)
{
  return format_answer (SOUP_STATUS_SERVICE_UNAVAILABLE, "too_many_connections",
                        _("Too many connections are open; try again shortly"), NULL);
}

static void
take_connection (KagedApiServer *self,
                 GSocket        *socket)
{
  g_autoptr(GSocketConnection) stream = NULL;
  g_autoptr(GSocketAddress) local = NULL;
  g_autoptr(GSocketAddress) remote = NULL;
  g_autoptr(GError) error = NULL;
  KagedApiConnection *connection;

  stream = g_socket_connection_factory_create_connection (socket);

  if (kaged_api_connections_count (self) >= self->max_connections)
    {
      g_autoptr(GBytes) answer = too_many_answer ();

      if (!self->at_capacity)
        {
          self->at_capacity = TRUE;
          g_warning ("The API has %u connections open, its most: refusing more until some close",
                     self->max_connections);
        }
      answer_and_close (self, G_IO_STREAM (stream), socket, answer);
      return;
    }

  if (self->at_capacity)
    {
      self->at_capacity = FALSE;
      g_message ("The API takes connections again");
    }

  local = g_socket_get_local_address (socket, &error);
  if (local != NULL)
    remote = g_socket_get_remote_address (socket, &error);
  if (remote == NULL)
    {
      g_debug ("Dropping a connection that went away: %s", error->message);
      g_socket_close (socket, NULL);
      return;
    }

  g_socket_set_option (socket, IPPROTO_TCP, TCP_NODELAY, TRUE, NULL);
  /* Reads and writes that make no progress for this long fail. */
  g_socket_set_timeout (socket, self->idle_timeout);

  connection = g_new0 (KagedApiConnection, 1);
  connection->server = self;
  connection->socket = g_object_ref (socket);
  connection->remote = g_object_ref (remote);
  connection->stream = stream;
  g_object_weak_ref (G_OBJECT (stream), connection_gone_cb, connection);
  g_hash_table_insert (self->connections, connection->remote, connection);
  arm_headers_deadline (connection);

  soup_server_accept_iostream (self->server, G_IO_STREAM (stream), local, remote, NULL);
}

static gboolean accept_cb (GSocket      *socket,
                           GIOCondition  condition,
                           gpointer      user_data);

static void
listener_watch (KagedApiListener *listener)
{
  if (listener->watch != NULL)
    return;

  listener->watch = g_socket_create_source (listener->socket, G_IO_IN, NULL);
  g_source_set_callback (listener->watch, G_SOURCE_FUNC (accept_cb), listener, NULL);
  g_source_set_static_name (listener->watch, "[kaged] API accept");
  g_source_attach (listener->watch, g_main_context_get_thread_default ());
}

static void
listener_pause (KagedApiListener *listener)
{
  if (listener->watch != NULL)
    {
      g_source_destroy (listener->watch);
      g_clear_pointer (&listener->watch, g_source_unref);
    }
}

void
kaged_api_listener_free (gpointer data)
{
  KagedApiListener *listener = data;

  listener_pause (listener);
  g_socket_close (listener->socket, NULL);
  g_clear_object (&listener->socket);
  g_free (listener);
}

static gboolean
accept_retry_cb (gpointer user_data)
{
  KagedApiServer *self = user_data;

  g_clear_pointer (&self->accept_retry, g_source_unref);
  accept_resume (self);

  return G_SOURCE_REMOVE;
}

/* Accepting failed: pause every listener until a connection closes or a
 * short wait has passed. */
static void
accept_pause (KagedApiServer *self,
              const GError   *error)
{
  for (guint i = 0; i < self->listeners->len; i++)
    listener_pause (g_ptr_array_index (self->listeners, i));

  if (!self->accept_failing)
    {
      self->accept_failing = TRUE;
      g_warning ("The API cannot accept connections (%s): trying again as connections close",
                 error->message);
    }

  if (self->accept_retry == NULL)
    {
      self->accept_retry = g_timeout_source_new (ACCEPT_RETRY_MS);
      g_source_set_callback (self->accept_retry, accept_retry_cb, self, NULL);
      g_source_set_static_name (self->accept_retry, "[kaged] API accept retry");
      g_source_attach (self->accept_retry, g_main_context_get_thread_default ());
    }
}

static void
accept_resume (KagedApiServer *self)
{
  if (!self->accept_failing)
    return;

  for (guint i = 0; i < self->listeners->len; i++)
    listener_watch (g_ptr_array_index (self->listeners, i));
}

/* Everything waiting was taken without accept() failing: the shortage is
 * over. A single connection taken in between (a descriptor freed for a
 * moment) does not end it, so that it is reported once, not once a
 * connection. */
static void
accept_recovered (KagedApiServer *self)
{
  if (!self->accept_failing)
    return;

  self->accept_failing = FALSE;
  g_message ("The API accepts connections again");
  if (self->accept_retry != NULL)
    {
      g_source_destroy (self->accept_retry);
      g_clear_pointer (&self->accept_retry, g_source_unref);
    }
}

static gboolean
accept_cb (GSocket      *listen_socket,
           GIOCondition  condition,
           gpointer      user_data)
{
  KagedApiListener *listener = user_data;
  KagedApiServer *self = listener->server;

  /* Take what is waiting, a bounded batch at a time. */
  for (guint i = 0; i < 64; i++)
    {
      g_autoptr(GSocket) socket = NULL;
      g_autoptr(GError) error = NULL;

      socket = g_socket_accept (listen_socket, NULL, &error);
      if (socket == NULL)
        {
          if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
            {
              accept_recovered (self);
              break;
            }
          if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED) ||
              g_error_matches (error, G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE))
            continue;

          accept_pause (self, error);
          return G_SOURCE_CONTINUE;
        }

      take_connection (self, socket);
    }

  return G_SOURCE_CONTINUE;
}

/* libsoup keeps connections open between requests only when it has a
 * listener of its own: give it one that never accepts. */
static gboolean
ensure_anchor (KagedApiServer  *self,
               GError         **error)
{
  g_autoptr(GSocket) anchor = NULL;
  GSList *listeners;
  int fds[2];

  listeners = soup_server_get_listeners (self->server);
  g_slist_free (listeners);
  if (listeners != NULL)
    return TRUE;

  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    {
      int saved = errno;

      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (saved),
                   "socketpair: %s", g_strerror (saved));
      return FALSE;
    }

  self->anchor_peer = fds[1];
  anchor = g_socket_new_from_fd (fds[0], error);
  if (anchor == NULL)
    return FALSE;

  return soup_server_listen_socket (self->server, anchor, 0, error);
}

/**
 * kaged_api_connections_listen:
 * @socket: a listening socket
 *
 * Accepts connections on @socket from now on.
 */
gboolean
kaged_api_connections_listen (KagedApiServer  *self,
                              GSocket         *socket,
                              GError         **error)
{
  KagedApiListener *listener;

  if (!ensure_anchor (self, error))
    return FALSE;

  g_socket_set_blocking (socket, FALSE);

  listener = g_new0 (KagedApiListener, 1);
  listener->server = self;
  listener->socket = g_object_ref (socket);
  g_ptr_array_add (self->listeners, listener);

  if (!self->accept_failing)
    listener_watch (listener);

  return TRUE;
}

/* Stops accepting; libsoup closes the connections it serves. */
void
kaged_api_connections_stop (KagedApiServer *self)
{
  g_autoptr(GPtrArray) idle = g_ptr_array_new_with_free_func (g_object_unref);
  GHashTableIter iter;
  gpointer value;

  g_ptr_array_set_size (self->listeners, 0);

  /* The connections held between requests: closed here (libsoup closes
   * its own). */
  g_hash_table_iter_init (&iter, self->connections);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    {
      KagedApiConnection *connection = value;

      connection_clear_deadline (connection);
      connection_clear_idle (connection);
      if (connection->idle != NULL)
        {
          g_socket_close (connection->socket, NULL);
          g_ptr_array_add (idle, g_steal_pointer (&connection->idle));
        }
    }
  g_ptr_array_set_size (idle, 0);

  if (self->accept_retry != NULL)
    {
      g_source_destroy (self->accept_retry);
      g_clear_pointer (&self->accept_retry, g_source_unref);
    }
  self->accept_failing = FALSE;
  self->at_capacity = FALSE;

  /* Answers still lingering finish on their own, without the server. */
  for (guint i = 0; i < self->lingering->len; i++)
    {
      Lingering *lingering = g_ptr_array_index (self->lingering, i);

      lingering->server = NULL;
      g_cancellable_cancel (lingering->cancellable);
    }
  g_ptr_array_set_size (self->lingering, 0);

  if (self->anchor_peer >= 0)
    {
      g_close (self->anchor_peer, NULL);
      self->anchor_peer = -1;
    }
}

void
kaged_api_connections_init (KagedApiServer *self)
{
  self->listeners = g_ptr_array_new_with_free_func (kaged_api_listener_free);
  self->connections = g_hash_table_new_full (NULL, NULL, NULL, kaged_api_connection_free);
  self->lingering = g_ptr_array_new ();
  self->anchor_peer = -1;
}

/* Once the SoupServer exists. */
void
kaged_api_connections_follow (KagedApiServer *self)
{
  g_signal_connect_object (self->server, "request-started",
                           G_CALLBACK (request_started_cb), self, 0);
  g_signal_connect_object (self->server, "request-finished",
                           G_CALLBACK (request_ended_cb), self, 0);
  g_signal_connect_object (self->server, "request-aborted",
                           G_CALLBACK (request_ended_cb), self, 0);
}
