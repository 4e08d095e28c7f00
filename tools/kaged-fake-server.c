/* kaged-fake-server.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * A scripted LLM provider on 127.0.0.1 for tests and for people who want
 * to watch Kaged retry. The scenario is JSON:
 *
 *   { "steps": [STEP, …], "repeat_last": true,
 *     "paths": { "/v1/messages": [STEP, …] | { "steps": […], "repeat_last": false } } }
 *
 * or a bare array of steps. Each request to a path consumes the next step of
 * that path's list (or of the top-level list when the path has none); once
 * the list is used up the last step answers again (unless repeat_last is
 * false: then 500). The full description is kaged_fake_scenario_help in
 * kaged-fake-scenario.c, which also turns a step into an answer; it is what
 * `kaged-fake-provider --help` prints.
 *
 * Requests are counted when their body has been read, before the step is
 * chosen. Requests under /__fake/ are the server's own (stats, reset,
 * scenario) and are not counted.
 */

#define G_LOG_DOMAIN "kaged-fake-server"

#include "config.h"

#include <string.h>

#include <libsoup/soup.h>

#include "kaged-fake-models.h"
#include "kaged-fake-server-private.h"

typedef struct
{
  char               *method;
  char               *path;
  GBytes             *body;
  SoupMessageHeaders *headers;
  char               *fault;   /* the step's name, or NULL */
  gint64              time_ms; /* when it arrived, ms since the epoch */
} Request;

struct _KagedFakeServer
{
  GObject      parent_instance;

  SoupServer     *server;
  GSocketService *service;   /* accepts connections for the server */
  guint           port;
  guint           refuse_id; /* while refusing connections */
  GArray         *refusals;  /* gint64 pairs: from, to (ms since the epoch) */

  StepQueue   *default_queue;
  GHashTable  *path_queues;   /* path → StepQueue */

  GPtrArray   *requests;      /* Request */
  GHashTable  *path_counts;   /* path → GUINT_TO_POINTER (n) */
  GHashTable  *client_ports;  /* the client ports requests came from */

  GPtrArray   *jobs;          /* Job, owned */

  char       **models;        /* what the model lists list */
  char        *api_key;       /* what model lists ask for, or NULL */
};

G_DEFINE_FINAL_TYPE (KagedFakeServer, kaged_fake_server, G_TYPE_OBJECT)

G_DEFINE_QUARK (kaged-fake-server-error-quark, kaged_fake_server_error)

static void job_next (Job *job);
static void raw_next (Job *job);

static void
request_free (Request *request)
{
  g_free (request->method);
  g_free (request->path);
  g_clear_pointer (&request->body, g_bytes_unref);
  g_clear_pointer (&request->headers, soup_message_headers_unref);
  g_free (request->fault);
  g_free (request);
}

static void
job_free (Job *job)
{
  if (job->timeout != NULL)
    {
      g_source_destroy (job->timeout);
      g_clear_pointer (&job->timeout, g_source_unref);
    }
  if (job->msg != NULL)
    {
      g_clear_signal_handler (&job->finished_id, job->msg);
      g_clear_object (&job->msg);
    }
  if (job->cancellable != NULL)
    g_cancellable_cancel (job->cancellable);
  g_clear_object (&job->cancellable);
  if (job->stream != NULL)
    g_io_stream_close (job->stream, NULL, NULL);
  g_clear_object (&job->stream);
  g_clear_pointer (&job->headers, soup_message_headers_unref);
  g_clear_pointer (&job->content_type, g_free);
  g_clear_pointer (&job->body, g_bytes_unref);
  g_clear_pointer (&job->pieces, g_ptr_array_unref);
  g_free (job);
}

static void
job_finish (Job *job)
{
  /* Frees the job. */
  g_ptr_array_remove (job->server->jobs, job);
}

/* ------------------------------------------------------------------------ */
/* Answering through SoupServer: bodies, streams with delays, hangs */

static void
job_pause (Job *job)
{
  if (!job->paused)
    {
      soup_server_message_pause (job->msg);
      job->paused = TRUE;
    }
}

static void
job_unpause (Job *job)
{
  if (job->paused)
    {
      job->paused = FALSE;
      soup_server_message_unpause (job->msg);
    }
}

/* A chunked answer whose body ran dry is paused by the server; after more
 * of the body is there, it must be told. */
static void
job_wake (Job *job)
{
  job->paused = FALSE;
  soup_server_message_unpause (job->msg);
}

static void
job_schedule (Job         *job,
              guint        delay_ms,
              GSourceFunc  func)
{
  g_assert (job->timeout == NULL);

  job->timeout = g_timeout_source_new (delay_ms);
  g_source_set_callback (job->timeout, func, job, NULL);
  g_source_set_static_name (job->timeout, "[kaged-fake-server] delay");
  g_source_attach (job->timeout, g_main_context_get_thread_default ());
}

static void
job_clear_timeout (Job *job)
{
  g_clear_pointer (&job->timeout, g_source_unref);
}

static void
on_message_finished (SoupServerMessage *msg,
                     Job               *job)
{
  job_finish (job);
}

static void
job_send_piece (Job *job)
{
  Piece *piece = g_ptr_array_index (job->pieces, job->index++);

  soup_message_body_append_bytes (soup_server_message_get_response_body (job->msg), piece->data);
  job_wake (job);
}

static gboolean
job_piece_cb (gpointer user_data)
{
  Job *job = user_data;

  job_clear_timeout (job);
  job_send_piece (job);
  job_next (job);

  return G_SOURCE_REMOVE;
}

static gboolean
job_round_cb (gpointer user_data)
{
  Job *job = user_data;

  job_clear_timeout (job);
  job_next (job);

  return G_SOURCE_REMOVE;
}

static void
job_next (Job *job)
{
  /* An endless stream starts its next round from the main loop, so that
   * what was appended is written out first. */
  if (job->repeat_chunks && job->index > 0 && job->index == job->pieces->len)
    {
      job->index = 0;
      job_schedule (job, 1, job_round_cb);
      return;
    }

  while (job->index < job->pieces->len)
    {
      Piece *piece = g_ptr_array_index (job->pieces, job->index);

      /* No pause here: the headers go out now, and the server waits for
       * the next chunk by itself. */
      if (piece->delay_ms > 0)
        {
          job_schedule (job, piece->delay_ms, job_piece_cb);
          return;
        }
      job_send_piece (job);
    }

  if (job->repeat_chunks && job->index > 0)
    {
      job_next (job);
      return;
    }

  if (job->hang_at_end)
    return;

  soup_message_body_complete (soup_server_message_get_response_body (job->msg));
  job_wake (job);
}

static void
job_start_response (Job *job)
{
  SoupMessageHeaders *response_headers = soup_server_message_get_response_headers (job->msg);
  SoupMessageHeadersIter iter;
  const char *name;
  const char *value;

  soup_message_headers_iter_init (&iter, job->headers);
  while (soup_message_headers_iter_next (&iter, &name, &value))
    soup_message_headers_append (response_headers, name, value);

  soup_server_message_set_status (job->msg, job->status, NULL);

  if (job->pieces == NULL)
    {
      gsize len = 0;
      const char *data = g_bytes_get_data (job->body, &len);

      soup_server_message_set_response (job->msg, job->content_type, SOUP_MEMORY_COPY, data, len);
      job_unpause (job);
      return;
    }

  if (job->content_type != NULL)
    soup_message_headers_replace (response_headers, "Content-Type", job->content_type);
  soup_message_headers_set_encoding (response_headers, SOUP_ENCODING_CHUNKED);
  /* Written chunks are dropped, not kept for the whole stream. */
  soup_message_body_set_accumulate (soup_server_message_get_response_body (job->msg), FALSE);
  job_unpause (job);
  job_next (job);
}

static gboolean
job_headers_cb (gpointer user_data)
{
  Job *job = user_data;

  job_clear_timeout (job);
  job_start_response (job);

  return G_SOURCE_REMOVE;
}

static gboolean
job_body_delay_cb (gpointer user_data)
{
  Job *job = user_data;

  job_clear_timeout (job);
  if (job->headers_delay_ms > 0)
    job_schedule (job, job->headers_delay_ms, job_headers_cb);
  else
    job_start_response (job);

  return G_SOURCE_REMOVE;
}

static void
job_start (Job *job)
{
  job->finished_id = g_signal_connect (job->msg, "finished", G_CALLBACK (on_message_finished), job);

  if (job->hang)
    {
      job_pause (job);
      return;
    }

  /* A whole body waits delay_ms (then headers_delay_ms); a stream waits
   * headers_delay_ms for its headers and delay_ms before each chunk. */
  if (job->pieces == NULL && job->body_delay_ms > 0)
    {
      job_pause (job);
      job_schedule (job, job->body_delay_ms, job_body_delay_cb);
    }
  else if (job->headers_delay_ms > 0)
    {
      job_pause (job);
      job_schedule (job, job->headers_delay_ms, job_headers_cb);
    }
  else
    {
      job_start_response (job);
    }
}

/* ------------------------------------------------------------------------ */
/* Answering on a stolen connection: streams cut after N bytes or chunks */

static void
raw_write_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  g_autoptr(GError) error = NULL;
  Job *job = user_data;

  if (!g_output_stream_write_all_finish (G_OUTPUT_STREAM (object), result, NULL, &error))
    {
      if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        {
          g_debug ("Writing a cut stream failed: %s", error->message);
          job_finish (job);
        }
      return;
    }

  raw_next (job);
}

static void
raw_write (Job    *job,
           GBytes *bytes)
{
  gsize len = 0;
  const guint8 *data = g_bytes_get_data (bytes, &len);

  /* The stream, which a pending write keeps alive, holds the bytes: they
   * outlive the job if the server goes away in the middle of a write. */
  g_object_set_data_full (G_OBJECT (job->stream), "kaged-fake-server-writing",
                          g_bytes_ref (bytes), (GDestroyNotify)g_bytes_unref);
  g_output_stream_write_all_async (g_io_stream_get_output_stream (job->stream),
                                   data, len, G_PRIORITY_DEFAULT, job->cancellable,
                                   raw_write_cb, job);
}

static gboolean
raw_piece_cb (gpointer user_data)
{
  Job *job = user_data;
  Piece *piece = g_ptr_array_index (job->pieces, job->index++);
  gsize len = g_bytes_get_size (piece->data);
  gsize send = len;
  GString *frame;

  job_clear_timeout (job);

  if (job->cut_after_bytes >= 0 && job->body_written + len > (guint64)job->cut_after_bytes)
    send = job->cut_after_bytes - job->body_written;
  job->body_written += send;

  /* A chunk header announcing the whole piece, then maybe less of it. */
  frame = g_string_new (NULL);
  g_string_append_printf (frame, "%" G_GSIZE_MODIFIER "x\r\n", len);
  g_string_append_len (frame, g_bytes_get_data (piece->data, NULL), send);
  if (send == len)
    g_string_append (frame, "\r\n");
  else
    job->mid_chunk = TRUE;

  g_clear_pointer (&job->body, g_bytes_unref);
  job->body = g_string_free_to_bytes (frame);
  raw_write (job, job->body);

  return G_SOURCE_REMOVE;
}

static void
raw_write_string (Job  *job,
                  char *text)
{
  g_clear_pointer (&job->body, g_bytes_unref);
  job->body = g_bytes_new_take (text, strlen (text));
  raw_write (job, job->body);
}

static void
raw_next (Job *job)
{
  gboolean cut = (job->cut_after_chunks >= 0 && job->index >= (guint64)job->cut_after_chunks) ||
                 (job->cut_after_bytes >= 0 && job->body_written >= (guint64)job->cut_after_bytes);
  Piece *piece;

  if (job->closing || (cut && job->mid_chunk))
    {
      job_finish (job);
      return;
    }

  if (cut)
    {
      gsize next = job->index < job->pieces->len
                   ? g_bytes_get_size (((Piece *)g_ptr_array_index (job->pieces, job->index))->data)
                   : 1;

      /* Announce a chunk that never comes, then close: the client sees the
       * connection end in the middle of the body, wherever the cut falls. */
      g_debug ("Cutting the connection after %u chunks, %" G_GUINT64_FORMAT " bytes",
               job->index, job->body_written);
      job->closing = TRUE;
      raw_write_string (job, g_strdup_printf ("%" G_GSIZE_MODIFIER "x\r\n", next));
      return;
    }

  if (job->index >= job->pieces->len)
    {
      /* The cut was never reached: end the body properly. */
      job->closing = TRUE;
      raw_write_string (job, g_strdup ("0\r\n\r\n"));
      return;
    }

  piece = g_ptr_array_index (job->pieces, job->index);
  if (piece->delay_ms > 0)
    job_schedule (job, piece->delay_ms, raw_piece_cb);
  else
    raw_piece_cb (job);
}

static void
raw_start (Job *job)
{
  SoupMessageHeadersIter iter;
  const char *name;
  const char *value;
  const char *phrase;
  GString *head;

  if (job->pieces == NULL)
    {
      /* A whole body to cut: stream it as one piece. */
      Piece *piece = g_new0 (Piece, 1);

      piece->data = g_steal_pointer (&job->body);
      piece->delay_ms = job->body_delay_ms;
      job->pieces = g_ptr_array_new_with_free_func ((GDestroyNotify)kaged_fake_piece_free);
      g_ptr_array_add (job->pieces, piece);
    }

  phrase = soup_status_get_phrase (job->status);
  head = g_string_new (NULL);
  g_string_append_printf (head, "HTTP/1.1 %u %s\r\n", job->status, phrase ? phrase : "Unknown");
  soup_message_headers_iter_init (&iter, job->headers);
  while (soup_message_headers_iter_next (&iter, &name, &value))
    g_string_append_printf (head, "%s: %s\r\n", name, value);
  if (job->content_type != NULL)
    g_string_append_printf (head, "Content-Type: %s\r\n", job->content_type);
  g_string_append (head, "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");

  job->cancellable = g_cancellable_new ();
  job->body = g_string_free_to_bytes (head);
  raw_write (job, job->body);
}

/* ------------------------------------------------------------------------ */
/* The server */

static StepQueue *
queue_for_path (KagedFakeServer *self,
                const char      *path)
{
  StepQueue *queue = g_hash_table_lookup (self->path_queues, path);

  return queue != NULL ? queue : self->default_queue;
}

static JsonObject *
next_step (KagedFakeServer *self,
           const char      *path)
{
  return kaged_fake_step_queue_next (queue_for_path (self, path));
}

static void
set_json_response (SoupServerMessage *msg,
                   guint              status,
                   JsonObject        *object)
{
  g_autofree char *json = kaged_fake_object_to_string (object);

  soup_server_message_set_status (msg, status, NULL);
  soup_server_message_set_response (msg, "application/json", SOUP_MEMORY_COPY, json, strlen (json));
}

static void
set_error_response (SoupServerMessage *msg,
                    guint              status,
                    const char        *message)
{
  g_autoptr(JsonObject) object = json_object_new ();

  json_object_set_string_member (object, "error", message);
  set_json_response (msg, status, object);
}

static JsonObject *
build_stats (KagedFakeServer *self)
{
  JsonObject *stats = json_object_new ();
  JsonObject *paths = json_object_new ();
  JsonArray *requests = json_array_new ();
  GHashTableIter iter;
  gpointer key;
  gpointer value;

  g_hash_table_iter_init (&iter, self->path_counts);
  while (g_hash_table_iter_next (&iter, &key, &value))
    json_object_set_int_member (paths, key, GPOINTER_TO_UINT (value));
  json_object_set_int_member (stats, "connections", g_hash_table_size (self->client_ports));

  /* Headers are left out on purpose: they carry API keys. */
  for (guint i = 0; i < self->requests->len; i++)
    {
      Request *request = g_ptr_array_index (self->requests, i);
      JsonObject *entry = json_object_new ();
      gsize len = 0;
      const char *data = g_bytes_get_data (request->body, &len);

      json_object_set_string_member (entry, "method", request->method);
      json_object_set_string_member (entry, "path", request->path);
      if (request->fault != NULL)
        json_object_set_string_member (entry, "fault", request->fault);
      else
        json_object_set_null_member (entry, "fault");
      json_object_set_int_member (entry, "time", request->time_ms);
      if (g_utf8_validate (data, len, NULL))
        {
          g_autofree char *text = g_strndup (data, len);

          json_object_set_string_member (entry, "body", text);
        }
      else
        {
          json_object_set_null_member (entry, "body");
        }
      json_array_add_object_element (requests, entry);
    }

  json_object_set_int_member (stats, "total", self->requests->len);
  json_object_set_object_member (stats, "paths", paths);
  json_object_set_array_member (stats, "requests", requests);
  {
    JsonArray *refusals = json_array_new ();

    for (guint i = 0; i + 1 < self->refusals->len; i += 2)
      {
        JsonArray *pair = json_array_new ();

        json_array_add_int_element (pair, g_array_index (self->refusals, gint64, i));
        json_array_add_int_element (pair, g_array_index (self->refusals, gint64, i + 1));
        json_array_add_array_element (refusals, pair);
      }
    json_object_set_array_member (stats, "refusals", refusals);
  }

  return stats;
}

static void
handle_own_path (KagedFakeServer   *self,
                 SoupServerMessage *msg,
                 const char        *path)
{
  const char *method = soup_server_message_get_method (msg);

  if (g_str_equal (path, "/__fake/stats") && g_str_equal (method, "GET"))
    {
      g_autoptr(JsonObject) stats = build_stats (self);

      set_json_response (msg, SOUP_STATUS_OK, stats);
    }
  else if (g_str_equal (path, "/__fake/reset") && g_str_equal (method, "POST"))
    {
      kaged_fake_server_reset (self);
      soup_server_message_set_status (msg, SOUP_STATUS_NO_CONTENT, NULL);
    }
  else if (g_str_equal (path, "/__fake/scenario") && g_str_equal (method, "POST"))
    {
      SoupMessageBody *body = soup_server_message_get_request_body (msg);
      g_autoptr(GBytes) bytes = soup_message_body_flatten (body);
      g_autoptr(GError) error = NULL;
      g_autofree char *json = g_strndup (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes));

      if (kaged_fake_server_set_scenario (self, json, &error))
        soup_server_message_set_status (msg, SOUP_STATUS_NO_CONTENT, NULL);
      else
        set_error_response (msg, SOUP_STATUS_BAD_REQUEST, error->message);
    }
  else
    {
      set_error_response (msg, SOUP_STATUS_NOT_FOUND, "No such path");
    }
}

static gboolean
start_accepting (KagedFakeServer  *self,
                 GError          **error);

static gboolean
refusal_end_cb (gpointer user_data)
{
  KagedFakeServer *self = user_data;
  g_autoptr(GError) error = NULL;
  gint64 now = g_get_real_time () / 1000;

  self->refuse_id = 0;
  g_array_append_val (self->refusals, now);
  if (!start_accepting (self, &error))
    g_warning ("Could not listen again on port %u: %s", self->port, error->message);

  return G_SOURCE_REMOVE;
}

/* Stops listening for @ms: connecting meanwhile is refused. */
static void
refuse_connections (KagedFakeServer *self,
                    guint            ms)
{
  gint64 now = g_get_real_time () / 1000;

  if (self->refuse_id != 0)
    return;

  g_debug ("Refusing connections for %u ms", ms);
  g_socket_service_stop (self->service);
  g_socket_listener_close (G_SOCKET_LISTENER (self->service));
  g_clear_object (&self->service);
  g_array_append_val (self->refusals, now);
  {
    g_autoptr(GSource) source = g_timeout_source_new (ms);

    g_source_set_callback (source, refusal_end_cb, self, NULL);
    g_source_set_static_name (source, "[kaged-fake-server] refusal");
    self->refuse_id = g_source_attach (source, g_main_context_get_thread_default ());
  }
}

/* A copy of @step with "{request}" in its strings replaced by @index. */
static JsonObject *
stamp_step (JsonObject *step,
            guint       index)
{
  g_autofree char *json = kaged_fake_object_to_string (step);
  g_autoptr(GString) stamped = g_string_new (json);
  g_autofree char *number = g_strdup_printf ("%u", index);
  g_autoptr(JsonNode) node = NULL;

  g_string_replace (stamped, "{request}", number, 0);
  node = json_from_string (stamped->str, NULL);
  g_assert (node != NULL && JSON_NODE_HOLDS_OBJECT (node));

  return json_object_ref (json_node_get_object (node));
}

static void
server_callback (SoupServer        *server,
                 SoupServerMessage *msg,
                 const char        *path,
                 GHashTable        *query,
                 gpointer           user_data)
{
  KagedFakeServer *self = user_data;
  SoupMessageBody *request_body = soup_server_message_get_request_body (msg);
  g_autoptr(JsonObject) stamped = NULL;
  GSocketAddress *remote;
  Request *request;
  JsonObject *step;
  Job *job;
  guint n;

  if (g_str_has_prefix (path, "/__fake/"))
    {
      handle_own_path (self, msg, path);
      return;
    }

  request = g_new0 (Request, 1);
  request->method = g_strdup (soup_server_message_get_method (msg));
  request->path = g_strdup (path);
  request->body = soup_message_body_flatten (request_body);
  request->headers = soup_message_headers_ref (soup_server_message_get_request_headers (msg));
  request->time_ms = g_get_real_time () / 1000;
  g_ptr_array_add (self->requests, request);

  n = GPOINTER_TO_UINT (g_hash_table_lookup (self->path_counts, path));
  g_hash_table_insert (self->path_counts, g_strdup (path), GUINT_TO_POINTER (n + 1));

  /* Every connection of a client on loopback has a port of its own. */
  remote = soup_server_message_get_remote_address (msg);
  if (G_IS_INET_SOCKET_ADDRESS (remote))
    g_hash_table_add (self->client_ports,
                      GUINT_TO_POINTER (g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (remote))));

  g_debug ("%s %s (request %u)", request->method, path, self->requests->len);

  /* Chats are POSTs: with models set, a GET is a model list, unless a
   * scenario names its path. */
  if (self->models != NULL && g_str_equal (request->method, "GET") &&
      g_hash_table_lookup (self->path_queues, path) == NULL)
    {
      kaged_fake_models_handle (msg, path, (const char * const *)self->models, self->api_key);
      return;
    }

  if (!(step = next_step (self, path)))
    {
      set_error_response (msg, queue_for_path (self, path)->steps->len == 0 ? SOUP_STATUS_NOT_FOUND
                                                                             : SOUP_STATUS_INTERNAL_SERVER_ERROR,
                          "The fake scenario has no step for this request");
      return;
    }

  if (json_object_has_member (step, "name"))
    request->fault = g_strdup (json_object_get_string_member (step, "name"));
  if (json_object_get_boolean_member_with_default (step, "stamp", FALSE))
    step = stamped = stamp_step (step, self->requests->len - 1);

  job = g_new0 (Job, 1);
  job->server = self;
  kaged_fake_job_build (job, step, request->body);
  g_ptr_array_add (self->jobs, job);

  if (job->reset || job->refuse_ms > 0)
    {
      /* Closed before a byte of the answer. */
      g_autoptr(GIOStream) stream = soup_server_message_steal_connection (msg);

      g_io_stream_close (stream, NULL, NULL);
      if (job->refuse_ms > 0)
        refuse_connections (self, job->refuse_ms);
      job_finish (job);
      return;
    }

  if (job->cut_after_bytes >= 0 || job->cut_after_chunks >= 0)
    {
      job->stream = soup_server_message_steal_connection (msg);
      raw_start (job);
      return;
    }

  job->msg = g_object_ref (msg);
  job_start (job);
}

static void
kaged_fake_server_dispose (GObject *object)
{
  KagedFakeServer *self = (KagedFakeServer *)object;

  if (self->jobs != NULL)
    g_ptr_array_set_size (self->jobs, 0);
  if (self->refuse_id != 0)
    {
      GSource *source = g_main_context_find_source_by_id (g_main_context_get_thread_default (),
                                                          self->refuse_id);

      if (source != NULL)
        g_source_destroy (source);
      self->refuse_id = 0;
    }
  if (self->service != NULL)
    {
      g_socket_service_stop (self->service);
      g_socket_listener_close (G_SOCKET_LISTENER (self->service));
    }
  g_clear_object (&self->service);
  if (self->server != NULL)
    soup_server_disconnect (self->server);
  g_clear_object (&self->server);

  G_OBJECT_CLASS (kaged_fake_server_parent_class)->dispose (object);
}

static void
kaged_fake_server_finalize (GObject *object)
{
  KagedFakeServer *self = (KagedFakeServer *)object;

  g_clear_pointer (&self->jobs, g_ptr_array_unref);
  g_clear_pointer (&self->default_queue, kaged_fake_step_queue_free);
  g_clear_pointer (&self->path_queues, g_hash_table_unref);
  g_clear_pointer (&self->requests, g_ptr_array_unref);
  g_clear_pointer (&self->path_counts, g_hash_table_unref);
  g_clear_pointer (&self->client_ports, g_hash_table_unref);
  g_clear_pointer (&self->refusals, g_array_unref);
  g_clear_pointer (&self->models, g_strfreev);
  g_clear_pointer (&self->api_key, g_free);

  G_OBJECT_CLASS (kaged_fake_server_parent_class)->finalize (object);
}

static void
kaged_fake_server_class_init (KagedFakeServerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = kaged_fake_server_dispose;
  object_class->finalize = kaged_fake_server_finalize;
}

static void
kaged_fake_server_init (KagedFakeServer *self)
{
  self->requests = g_ptr_array_new_with_free_func ((GDestroyNotify)request_free);
  self->path_counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  self->client_ports = g_hash_table_new (NULL, NULL);
  self->jobs = g_ptr_array_new_with_free_func ((GDestroyNotify)job_free);
  self->refusals = g_array_new (FALSE, FALSE, sizeof (gint64));
  self->server = soup_server_new ("server-header", "kaged-fake-provider ", NULL);
  soup_server_add_handler (self->server, NULL, server_callback, self, NULL);
}

/**
 * kaged_fake_server_scenario_help:
 *
 * Returns: the description of the scenario format, for people
 */
const char *
kaged_fake_server_scenario_help (void)
{
  return kaged_fake_scenario_help;
}

/**
 * kaged_fake_server_new:
 * @scenario_json: the scenario, as JSON text
 *
 * Returns: (transfer full): a server, not listening yet, or %NULL with
 *   @error set when the scenario is not valid
 */
KagedFakeServer *
kaged_fake_server_new (const char  *scenario_json,
                       GError     **error)
{
  g_autoptr(KagedFakeServer) self = g_object_new (KAGED_TYPE_FAKE_SERVER, NULL);

  g_return_val_if_fail (scenario_json != NULL, NULL);

  if (!kaged_fake_server_set_scenario (self, scenario_json, error))
    return NULL;

  return g_steal_pointer (&self);
}

KagedFakeServer *
kaged_fake_server_new_from_file (const char  *path,
                                 GError     **error)
{
  g_autofree char *contents = NULL;

  g_return_val_if_fail (path != NULL, NULL);

  if (!g_file_get_contents (path, &contents, NULL, error))
    return NULL;

  return kaged_fake_server_new (contents, error);
}

/**
 * kaged_fake_server_set_scenario:
 *
 * Replaces the scenario; every step list starts again from its first step.
 * The requests seen so far are kept. On error nothing changes.
 */
gboolean
kaged_fake_server_set_scenario (KagedFakeServer  *self,
                                const char       *scenario_json,
                                GError          **error)
{
  StepQueue *queue = NULL;
  GHashTable *paths = NULL;

  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), FALSE);
  g_return_val_if_fail (scenario_json != NULL, FALSE);

  if (!kaged_fake_parse_scenario (scenario_json, &queue, &paths, error))
    return FALSE;

  g_clear_pointer (&self->default_queue, kaged_fake_step_queue_free);
  g_clear_pointer (&self->path_queues, g_hash_table_unref);
  self->default_queue = queue;
  self->path_queues = paths;

  return TRUE;
}

/**
 * kaged_fake_server_listen:
 * @port: the port, or 0 for any free one
 *
 * Listens on 127.0.0.1 only.
 */
static gboolean
incoming_cb (GSocketService    *service,
             GSocketConnection *connection,
             GObject           *source_object,
             gpointer           user_data)
{
  KagedFakeServer *self = user_data;
  g_autoptr(GSocketAddress) local = g_socket_connection_get_local_address (connection, NULL);
  g_autoptr(GSocketAddress) remote = g_socket_connection_get_remote_address (connection, NULL);
  g_autoptr(GError) error = NULL;

  if (!soup_server_accept_iostream (self->server, G_IO_STREAM (connection), local, remote, &error))
    g_debug ("Could not take a connection: %s", error->message);

  return TRUE;
}

static gboolean
start_accepting (KagedFakeServer  *self,
                 GError          **error)
{
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) address = g_inet_socket_address_new (loopback, self->port);
  g_autoptr(GSocketAddress) effective = NULL;

  /* A listener once closed cannot listen again: each period of listening
   * has one of its own. */
  if (self->service == NULL)
    {
      self->service = g_socket_service_new ();
      g_signal_connect (self->service, "incoming", G_CALLBACK (incoming_cb), self);
    }

  if (!g_socket_listener_add_address (G_SOCKET_LISTENER (self->service), address,
                                      G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP,
                                      NULL, &effective, error))
    return FALSE;

  self->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (effective));
  g_socket_service_start (self->service);

  return TRUE;
}

/**
 * kaged_fake_server_listen:
 * @port: the port, or 0 for any free one
 *
 * Listens on 127.0.0.1 only.
 */
gboolean
kaged_fake_server_listen (KagedFakeServer  *self,
                          guint             port,
                          GError          **error)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), FALSE);
  g_return_val_if_fail (port <= G_MAXUINT16, FALSE);
  g_return_val_if_fail (self->service == NULL && self->refuse_id == 0, FALSE);

  self->port = port;

  if (!start_accepting (self, error))
    {
      g_clear_object (&self->service);
      return FALSE;
    }

  return TRUE;
}

guint
kaged_fake_server_get_port (KagedFakeServer *self)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), 0);

  return self->port;
}

/**
 * kaged_fake_server_get_url:
 *
 * Returns: (transfer full): `http://127.0.0.1:PORT`, without a trailing slash
 */
char *
kaged_fake_server_get_url (KagedFakeServer *self)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), NULL);

  return g_strdup_printf ("http://127.0.0.1:%u", self->port);
}

/**
 * kaged_fake_server_reset:
 *
 * Forgets the requests seen and starts every step list again.
 */
void
kaged_fake_server_reset (KagedFakeServer *self)
{
  GHashTableIter iter;
  gpointer value;

  g_return_if_fail (KAGED_IS_FAKE_SERVER (self));

  g_ptr_array_set_size (self->requests, 0);
  g_hash_table_remove_all (self->path_counts);
  g_hash_table_remove_all (self->client_ports);
  if (self->refuse_id == 0)
    g_array_set_size (self->refusals, 0);
  self->default_queue->next = 0;
  g_hash_table_iter_init (&iter, self->path_queues);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    ((StepQueue *)value)->next = 0;
}

/**
 * kaged_fake_server_get_n_requests:
 * @path: (nullable): a path, or %NULL for all
 *
 * Returns: how many requests arrived (to @path)
 */
guint
kaged_fake_server_get_n_requests (KagedFakeServer *self,
                                  const char      *path)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), 0);

  if (path == NULL)
    return self->requests->len;

  return GPOINTER_TO_UINT (g_hash_table_lookup (self->path_counts, path));
}

/**
 * kaged_fake_server_get_n_connections:
 *
 * Returns: how many connections the requests came over (one, for any
 *   number of requests on a connection kept open)
 */
guint
kaged_fake_server_get_n_connections (KagedFakeServer *self)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), 0);

  return g_hash_table_size (self->client_ports);
}

/**
 * kaged_fake_server_get_n_active:
 *
 * Returns: how many answers are still being written (or held back)
 */
guint
kaged_fake_server_get_n_active (KagedFakeServer *self)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), 0);

  return self->jobs->len;
}

static Request *
get_request (KagedFakeServer *self,
             guint            index)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), NULL);
  g_return_val_if_fail (index < self->requests->len, NULL);

  return g_ptr_array_index (self->requests, index);
}

/**
 * kaged_fake_server_get_request_body:
 * @index: the request's number, from 0, in arrival order
 *
 * Returns: (transfer none): the body of that request
 */
GBytes *
kaged_fake_server_get_request_body (KagedFakeServer *self,
                                    guint            index)
{
  Request *request = get_request (self, index);

  return request != NULL ? request->body : NULL;
}

const char *
kaged_fake_server_get_request_path (KagedFakeServer *self,
                                    guint            index)
{
  Request *request = get_request (self, index);

  return request != NULL ? request->path : NULL;
}

/**
 * kaged_fake_server_get_request_header:
 *
 * Returns: (nullable): the value of header @name of request @index
 */
const char *
kaged_fake_server_get_request_header (KagedFakeServer *self,
                                      guint            index,
                                      const char      *name)
{
  Request *request = get_request (self, index);

  g_return_val_if_fail (name != NULL, NULL);

  return request != NULL ? soup_message_headers_get_one (request->headers, name) : NULL;
}

/**
 * kaged_fake_server_get_last_body:
 * @path: (nullable): a path, or %NULL for any
 *
 * Returns: (transfer none) (nullable): the body of the last request (to @path)
 */
GBytes *
kaged_fake_server_get_last_body (KagedFakeServer *self,
                                 const char      *path)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), NULL);

  for (guint i = self->requests->len; i > 0; i--)
    {
      Request *request = g_ptr_array_index (self->requests, i - 1);

      if (path == NULL || g_str_equal (path, request->path))
        return request->body;
    }

  return NULL;
}

/**
 * kaged_fake_server_dup_stats:
 *
 * Returns: (transfer full): what `GET /__fake/stats` answers
 */
char *
kaged_fake_server_dup_stats (KagedFakeServer *self)
{
  g_autoptr(JsonObject) stats = NULL;

  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), NULL);

  stats = build_stats (self);
  return kaged_fake_object_to_string (stats);
}

/**
 * kaged_fake_server_get_request_fault:
 *
 * Returns: (nullable): the name of the step that answered request @index
 */
const char *
kaged_fake_server_get_request_fault (KagedFakeServer *self,
                                     guint            index)
{
  Request *request = get_request (self, index);

  return request != NULL ? request->fault : NULL;
}

/**
 * kaged_fake_server_get_request_time:
 *
 * Returns: when request @index arrived, in ms since the epoch
 */
gint64
kaged_fake_server_get_request_time (KagedFakeServer *self,
                                    guint            index)
{
  Request *request = get_request (self, index);

  return request != NULL ? request->time_ms : 0;
}

/**
 * kaged_fake_server_get_refusals:
 * @n_refusals: (out): how many times connections were refused
 *
 * Returns: (transfer none): the times (ms since the epoch) from and to
 *   which connections were refused, in pairs; the last pair may lack its
 *   end while refusing
 */
const gint64 *
kaged_fake_server_get_refusals (KagedFakeServer *self,
                                guint           *n_refusals)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), NULL);

  *n_refusals = self->refusals->len / 2;
  return (const gint64 *)(gpointer)self->refusals->data;
}

/**
 * kaged_fake_server_set_models:
 * @models: (nullable): the model names the model lists give, or %NULL to
 *   answer GET requests from the scenario like any other
 *
 * With models set, a GET that no scenario path names is answered by
 * kaged-fake-models.c: a model list, a 401 without the key, or a 404.
 */
void
kaged_fake_server_set_models (KagedFakeServer    *self,
                              const char * const *models)
{
  g_return_if_fail (KAGED_IS_FAKE_SERVER (self));

  g_strfreev (self->models);
  self->models = models != NULL ? g_strdupv ((char **)models) : NULL;
}

/**
 * kaged_fake_server_set_api_key:
 * @api_key: (nullable): the key a model list request must carry, or %NULL
 *   to list models for anyone
 */
void
kaged_fake_server_set_api_key (KagedFakeServer *self,
                               const char      *api_key)
{
  g_return_if_fail (KAGED_IS_FAKE_SERVER (self));

  g_free (self->api_key);
  self->api_key = g_strdup (api_key);
}
