/* kaged-api-events.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * Event streams of the local HTTP API: chunked responses that stay open.
 * The engine's signals are written to them as server-sent events, and the
 * I/O paused by libsoup when a stream runs dry is resumed after each
 * append.
 */

#define G_LOG_DOMAIN "kaged-api"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "kaged-api-server-private.h"
#include "kaged-api-settings.h"
#include "kaged-api-wire.h"
#include "kaged-retry.h"

#define SSE_CONTENT_TYPE   "text/event-stream; charset=utf-8"

typedef struct
{
  KagedApiServer    *server;      /* unowned: the server frees its streams */
  SoupServerMessage *msg;
  gint64             session_id;
  gulong             finished_id;
  gulong             wrote_id;
  GSource           *keepalive;
  GSource           *drop_grace;
  /* Frames handed to libsoup and not written yet, and those waiting
   * behind them here. */
  gsize              in_flight;
  GQueue             waiting;     /* GBytes */
  gsize              waiting_bytes;
  gboolean           dropped;
} KagedApiEventStream;

void
kaged_api_event_stream_free (gpointer data)
{
  KagedApiEventStream *stream = data;

  if (stream->keepalive != NULL)
    {
      g_source_destroy (stream->keepalive);
      g_clear_pointer (&stream->keepalive, g_source_unref);
    }
  if (stream->drop_grace != NULL)
    {
      g_source_destroy (stream->drop_grace);
      g_clear_pointer (&stream->drop_grace, g_source_unref);
    }
  g_queue_clear_full (&stream->waiting, (GDestroyNotify)g_bytes_unref);
  g_clear_signal_handler (&stream->finished_id, stream->msg);
  g_clear_signal_handler (&stream->wrote_id, stream->msg);
  g_clear_object (&stream->msg);
  g_free (stream);
}

static GBytes *
frame_new (const char *event,
           const char *json)
{
  char *text = g_strdup_printf ("event: %s\ndata: %s\n\n", event, json);

  return g_bytes_new_take (text, strlen (text));
}

static void
event_stream_hand_over (KagedApiEventStream *stream,
                        GBytes              *frame)
{
  SoupMessageBody *body = soup_server_message_get_response_body (stream->msg);

  stream->in_flight += g_bytes_get_size (frame);
  soup_message_body_append_bytes (body, frame);
  soup_server_message_unpause (stream->msg);
}

/* libsoup wrote part of what it was handed: once all of it is out, what
 * waits here follows. */
static void
event_stream_wrote_cb (SoupServerMessage   *msg,
                       guint                size,
                       KagedApiEventStream *stream)
{
  stream->in_flight -= MIN (stream->in_flight, size);

  if (stream->in_flight > 0 || stream->dropped)
    return;

  while (!g_queue_is_empty (&stream->waiting))
    {
      g_autoptr(GBytes) frame = g_queue_pop_head (&stream->waiting);

      stream->waiting_bytes -= g_bytes_get_size (frame);
      event_stream_hand_over (stream, frame);
    }
}

/* The client did not read its events: the connection goes. */
static gboolean
event_stream_drop_grace_cb (gpointer user_data)
{
  KagedApiEventStream *stream = user_data;

  g_clear_pointer (&stream->drop_grace, g_source_unref);
  kaged_api_connections_close (stream->server, stream->msg);

  return G_SOURCE_REMOVE;
}

/* A client that left more than the backlog unread is dropped: what waits
 * is forgotten, a last event says why, and the stream ends. */
static void
event_stream_drop (KagedApiEventStream *stream)
{
  KagedApiServer *self = stream->server;
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autofree char *limit = g_format_size (self->max_stream_backlog);
  g_autofree char *message = NULL;
  g_autofree char *json = NULL;
  g_autoptr(GBytes) frame = NULL;

  g_warning ("Dropping an event stream of session %" G_GINT64_FORMAT
             ": its client left more than %s unread", stream->session_id, limit);

  g_queue_clear_full (&stream->waiting, (GDestroyNotify)g_bytes_unref);
  stream->waiting_bytes = 0;
  stream->dropped = TRUE;

  message = g_strdup_printf (_("The client left more than %s of events unread"), limit);
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "reason");
  json_builder_add_string_value (builder, "too_slow");
  json_builder_set_member_name (builder, "message");
  json_builder_add_string_value (builder, message);
  json_builder_end_object (builder);
  json = kaged_api_wire_to_string (builder, NULL);
  frame = frame_new ("stream.dropped", json);

  event_stream_hand_over (stream, frame);
  soup_message_body_complete (soup_server_message_get_response_body (stream->msg));
  soup_server_message_unpause (stream->msg);

  /* Unless it reads what was handed out, it goes after a moment. */
  stream->drop_grace = g_timeout_source_new_seconds (KAGED_API_STREAM_DROP_GRACE);
  g_source_set_callback (stream->drop_grace, event_stream_drop_grace_cb, stream, NULL);
  g_source_set_static_name (stream->drop_grace, "[kaged] API event stream drop");
  g_source_attach (stream->drop_grace, g_main_context_get_thread_default ());
}

static void
event_stream_write (KagedApiEventStream *stream,
                    GBytes              *frame)
{
  if (stream->dropped)
    return;

  if (stream->in_flight == 0 && g_queue_is_empty (&stream->waiting))
    {
      event_stream_hand_over (stream, frame);
      return;
    }

  g_queue_push_tail (&stream->waiting, g_bytes_ref (frame));
  stream->waiting_bytes += g_bytes_get_size (frame);

  if (stream->waiting_bytes > stream->server->max_stream_backlog)
    event_stream_drop (stream);
}

static gboolean
event_stream_keepalive_cb (gpointer user_data)
{
  static const char comment[] = ": keep-alive\n\n";
  KagedApiEventStream *stream = user_data;
  g_autoptr(GBytes) frame = g_bytes_new_static (comment, strlen (comment));

  event_stream_write (stream, frame);

  return G_SOURCE_CONTINUE;
}

static void
event_stream_finished_cb (SoupServerMessage   *msg,
                          KagedApiEventStream *stream)
{
  KagedApiServer *self = stream->server;

  g_debug ("An event stream of session %" G_GINT64_FORMAT " ended", stream->session_id);
  g_ptr_array_remove_fast (self->streams, stream);
}

static gboolean
has_streams (KagedApiServer *self,
             gint64          session_id)
{
  for (guint i = 0; i < self->streams->len; i++)
    {
      KagedApiEventStream *stream = g_ptr_array_index (self->streams, i);

      if (stream->session_id == session_id)
        return TRUE;
    }

  return FALSE;
}

static void
broadcast (KagedApiServer *self,
           gint64          session_id,
           const char     *event,
           JsonBuilder    *builder)
{
  g_autofree char *json = NULL;
  g_autoptr(GBytes) frame = NULL;

  /* One frame, shared by every stream of the session. */
  json = kaged_api_wire_to_string (builder, NULL);
  frame = frame_new (event, json);

  for (guint i = 0; i < self->streams->len; i++)
    {
      KagedApiEventStream *stream = g_ptr_array_index (self->streams, i);

      if (stream->session_id == session_id)
        event_stream_write (stream, frame);
    }
}

void
kaged_api_events_open (KagedApiServer    *self,
                       SoupServerMessage *msg,
                       gint64             session_id)
{
  static const char hello[] = ": kaged events\n\n";
  SoupMessageHeaders *headers = soup_server_message_get_response_headers (msg);
  SoupMessageBody *body = soup_server_message_get_response_body (msg);
  KagedApiEventStream *stream;

  if (self->streams->len >= KAGED_API_MAX_EVENT_STREAMS)
    {
      kaged_api_respond_error (msg, SOUP_STATUS_SERVICE_UNAVAILABLE, "too_many_streams",
                     _("Too many event streams are open"));
      return;
    }

  soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
  soup_message_headers_replace (headers, "Content-Type", SSE_CONTENT_TYPE);
  soup_message_headers_replace (headers, "Cache-Control", "no-store");
  soup_message_headers_set_encoding (headers, SOUP_ENCODING_CHUNKED);
  /* What was written is not kept: a stream may stay open for days. */
  soup_message_body_set_accumulate (body, FALSE);

  stream = g_new0 (KagedApiEventStream, 1);
  stream->server = self;
  stream->msg = g_object_ref (msg);
  stream->session_id = session_id;
  g_queue_init (&stream->waiting);
  stream->finished_id = g_signal_connect (msg, "finished",
                                          G_CALLBACK (event_stream_finished_cb), stream);
  stream->wrote_id = g_signal_connect (msg, "wrote-body-data",
                                       G_CALLBACK (event_stream_wrote_cb), stream);
  {
    g_autoptr(GBytes) frame = g_bytes_new_static (hello, strlen (hello));

    event_stream_hand_over (stream, frame);
  }
  /* On the context the server runs on, which need not be the global one. */
  stream->keepalive = g_timeout_source_new (self->keepalive_interval);
  g_source_set_callback (stream->keepalive, event_stream_keepalive_cb, stream, NULL);
  g_source_set_static_name (stream->keepalive, "[kaged] API event stream keep-alive");
  g_source_attach (stream->keepalive, g_main_context_get_thread_default ());
  g_ptr_array_add (self->streams, stream);

  g_debug ("An event stream of session %" G_GINT64_FORMAT " started", session_id);
}

guint
kaged_api_events_count (KagedApiServer *self)
{
  guint n = 0;

  for (guint i = 0; i < self->streams->len; i++)
    {
      KagedApiEventStream *stream = g_ptr_array_index (self->streams, i);

      if (!stream->dropped)
        n++;
    }

  return n;
}

/* Bytes of events handed to libsoup or waiting here, of every stream. */
gsize
kaged_api_events_get_buffered (KagedApiServer *self)
{
  gsize total = 0;

  for (guint i = 0; i < self->streams->len; i++)
    {
      KagedApiEventStream *stream = g_ptr_array_index (self->streams, i);

      total += stream->in_flight + stream->waiting_bytes;
    }

  return total;
}

void
kaged_api_events_end_all (KagedApiServer *self)
{
  while (self->streams->len > 0)
    {
      KagedApiEventStream *stream = g_ptr_array_steal_index_fast (self->streams, 0);
      SoupServerMessage *msg = g_object_ref (stream->msg);
      gboolean ended = stream->dropped;

      kaged_api_event_stream_free (stream);
      /* A dropped stream's body is complete already. */
      if (!ended)
        soup_message_body_complete (soup_server_message_get_response_body (msg));
      soup_server_message_unpause (msg);
      g_object_unref (msg);
    }
}

/* ---------------------------------------------------------------------------
 * The manager's signals, as events
 * ------------------------------------------------------------------------- */

static void
message_event (KagedApiServer *self,
               const char     *event,
               KagedMessage   *message)
{
  g_autoptr(JsonBuilder) builder = NULL;
  gint64 session_id = kaged_message_get_session_id (message);

  if (!has_streams (self, session_id))
    return;

  builder = json_builder_new ();
  kaged_api_wire_add_message (builder, message);
  broadcast (self, session_id, event, builder);
}

static void
message_added_cb (KagedSessionManager *manager,
                  KagedMessage        *message,
                  KagedApiServer      *self)
{
  message_event (self, "message.added", message);
}

static void
message_changed_cb (KagedSessionManager *manager,
                    KagedMessage        *message,
                    KagedApiServer      *self)
{
  message_event (self, "message.changed", message);
}

static void
message_delta_cb (KagedSessionManager *manager,
                  gint64               session_id,
                  gint64               message_id,
                  gint64               run_id,
                  const char          *text,
                  KagedApiServer      *self)
{
  g_autoptr(JsonBuilder) builder = NULL;

  if (!has_streams (self, session_id))
    return;

  builder = json_builder_new ();
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "session_id");
  json_builder_add_int_value (builder, session_id);
  json_builder_set_member_name (builder, "message_id");
  json_builder_add_int_value (builder, message_id);
  json_builder_set_member_name (builder, "run_id");
  json_builder_add_int_value (builder, run_id);
  json_builder_set_member_name (builder, "text");
  json_builder_add_string_value (builder, text != NULL ? text : "");
  json_builder_end_object (builder);

  broadcast (self, session_id, "message.delta", builder);
}

static void
run_changed_cb (KagedSessionManager *manager,
                KagedRun            *run,
                KagedApiServer      *self)
{
  g_autoptr(JsonBuilder) builder = NULL;
  gint64 session_id = kaged_run_get_session_id (run);
  const char *event;

  if (!has_streams (self, session_id))
    return;

  switch (kaged_run_get_status (run))
    {
    case KAGED_RUN_STATUS_QUEUED:
      event = "run.queued";
      break;

    case KAGED_RUN_STATUS_RUNNING:
      event = "run.started";
      break;

    case KAGED_RUN_STATUS_SUCCEEDED:
    case KAGED_RUN_STATUS_FAILED:
    case KAGED_RUN_STATUS_CANCELLED:
    default:
      event = "run.finished";
      break;
    }

  builder = json_builder_new ();
  kaged_api_wire_add_run (builder, run);
  broadcast (self, session_id, event, builder);
}

static void
run_retrying_cb (KagedSessionManager *manager,
                 KagedRun            *run,
                 KagedAttempt        *attempt,
                 KagedApiServer      *self)
{
  g_autoptr(JsonBuilder) builder = NULL;
  gint64 session_id = kaged_run_get_session_id (run);
  GPtrArray *attempts = kaged_run_get_attempts (run);
  guint number = attempts != NULL ? attempts->len : 1;
  KagedClock *clock;

  if (!has_streams (self, session_id))
    return;

  /* The last attempt, or one told to wait beyond Tier 1's window, carries
   * the server's wait for Tier 2: no attempt follows it in this run. */
  if (number >= KAGED_RETRY_MAX_ATTEMPTS || attempt->wait_ms > KAGED_RETRY_WINDOW_MS)
    return;

  clock = kaged_core_get_clock (self->core);

  builder = json_builder_new ();
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "session_id");
  json_builder_add_int_value (builder, session_id);
  json_builder_set_member_name (builder, "run_id");
  json_builder_add_int_value (builder, kaged_run_get_id (run));
  json_builder_set_member_name (builder, "attempt");
  json_builder_add_int_value (builder, MAX (number, 1));
  json_builder_set_member_name (builder, "next_attempt");
  json_builder_add_int_value (builder, MAX (number, 1) + 1);
  json_builder_set_member_name (builder, "wait_ms");
  json_builder_add_int_value (builder, attempt->wait_ms);
  json_builder_set_member_name (builder, "retry_at");
  json_builder_add_int_value (builder, kaged_clock_get_wall_ms (clock) + attempt->wait_ms);
  json_builder_set_member_name (builder, "failed_attempt");
  kaged_api_wire_add_attempt (builder, attempt);
  json_builder_end_object (builder);

  broadcast (self, session_id, "run.retrying", builder);
}

static void
session_changed_cb (KagedSessionManager *manager,
                    KagedSession        *session,
                    KagedApiServer      *self)
{
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);

  if (!has_streams (self, session_id))
    return;

  builder = json_builder_new ();
  if (!kaged_api_settings_add_session (self, builder, session, &error))
    {
      g_warning ("The settings of session %" G_GINT64_FORMAT " could not be read: %s",
                 session_id, error->message);
      return;
    }
  broadcast (self, session_id, "session.changed", builder);
}

static void
retry_changed_cb (KagedCore      *core,
                  gint64          session_id,
                  KagedApiServer *self)
{
  g_autoptr(JsonBuilder) builder = NULL;

  if (!has_streams (self, session_id))
    return;

  builder = json_builder_new ();
  kaged_api_wire_add_retry (builder, session_id, kaged_core_lookup_retry (core, session_id));
  broadcast (self, session_id, "retry.changed", builder);
}

/* Follows the engine's signals for as long as the server lives. */
void
kaged_api_events_connect (KagedApiServer *self)
{
  guint i = 0;

  self->signal_ids[i++] = g_signal_connect (self->manager, "message-added",
                                            G_CALLBACK (message_added_cb), self);
  self->signal_ids[i++] = g_signal_connect (self->manager, "message-changed",
                                            G_CALLBACK (message_changed_cb), self);
  self->signal_ids[i++] = g_signal_connect (self->manager, "message-delta",
                                            G_CALLBACK (message_delta_cb), self);
  self->signal_ids[i++] = g_signal_connect (self->manager, "run-changed",
                                            G_CALLBACK (run_changed_cb), self);
  self->signal_ids[i++] = g_signal_connect (self->manager, "run-retrying",
                                            G_CALLBACK (run_retrying_cb), self);
  self->signal_ids[i++] = g_signal_connect (self->manager, "session-changed",
                                            G_CALLBACK (session_changed_cb), self);
  self->signal_ids[i++] = g_signal_connect (self->core, "retry-changed",
                                            G_CALLBACK (retry_changed_cb), self);
  g_assert (i == G_N_ELEMENTS (self->signal_ids));
}

void
kaged_api_events_disconnect (KagedApiServer *self)
{
  guint i = 0;

  if (self->manager != NULL)
    {
      for (; i < G_N_ELEMENTS (self->signal_ids) - 1; i++)
        g_clear_signal_handler (&self->signal_ids[i], self->manager);
    }

  if (self->core != NULL)
    g_clear_signal_handler (&self->signal_ids[G_N_ELEMENTS (self->signal_ids) - 1], self->core);
}
