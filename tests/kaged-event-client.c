/* kaged-event-client.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "kaged-event-client.h"

/* A safety net against a hang, never a measure of anything. */
#define EVENT_WAIT_SECONDS 30

static gboolean
timeout_cb (gpointer user_data)
{
  *(gboolean *)user_data = TRUE;
  return G_SOURCE_REMOVE;
}

static void
event_free (Event *event)
{
  g_free (event->name);
  g_clear_pointer (&event->data, json_node_unref);
  g_free (event);
}

void
event_client_free (EventClient *client)
{
  g_cancellable_cancel (client->cancellable);
  g_clear_object (&client->lines);
  g_clear_object (&client->msg);
  g_clear_object (&client->cancellable);
  g_clear_pointer (&client->events, g_ptr_array_unref);
  g_clear_pointer (&client->name, g_free);
  g_string_free (client->data, TRUE);
  g_free (client);
}

static void
event_line_cb (GObject      *object,
               GAsyncResult *result,
               gpointer      user_data)
{
  EventClient *client = user_data;
  g_autoptr(GError) error = NULL;
  g_autofree char *line = NULL;

  line = g_data_input_stream_read_line_finish_utf8 (G_DATA_INPUT_STREAM (object), result,
                                                    NULL, &error);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;
  if (line == NULL)
    {
      client->ended = TRUE;
      return;
    }

  if (line[0] == '\0')
    {
      if (client->name != NULL)
        {
          Event *event = g_new0 (Event, 1);
          g_autoptr(GError) parse_error = NULL;

          event->name = g_steal_pointer (&client->name);
          event->data = json_from_string (client->data->str, &parse_error);
          g_assert_no_error (parse_error);
          g_ptr_array_add (client->events, event);
        }
      g_string_truncate (client->data, 0);
    }
  else if (line[0] == ':')
    client->n_comments++;
  else if (g_str_has_prefix (line, "event: "))
    {
      g_free (client->name);
      client->name = g_strdup (line + strlen ("event: "));
    }
  else if (g_str_has_prefix (line, "data: "))
    g_string_append (client->data, line + strlen ("data: "));
  else
    g_error ("Unexpected event stream line “%s”", line);

  g_data_input_stream_read_line_async (client->lines, G_PRIORITY_DEFAULT, client->cancellable,
                                       event_line_cb, client);
}

typedef struct
{
  GInputStream *stream;
  GError       *error;
  gboolean      done;
} Opened;

static void
events_opened_cb (GObject      *object,
                  GAsyncResult *result,
                  gpointer      user_data)
{
  Opened *opened = user_data;

  opened->stream = soup_session_send_finish (SOUP_SESSION (object), result, &opened->error);
  opened->done = TRUE;
}

/**
 * event_client_open:
 * @msg: (transfer full): the `GET …/events` request, authorized
 *
 * Opens the stream and reads it from now on. Returns once the stream's
 * first comment is in, when the server listens.
 */
EventClient *
event_client_open (SoupSession *http,
                   SoupMessage *msg)
{
  EventClient *client = g_new0 (EventClient, 1);
  Opened opened = { NULL, NULL, FALSE };
  g_autoptr(GInputStream) stream = NULL;
  gboolean timed_out = FALSE;
  guint timeout_id;

  client->msg = msg;
  client->cancellable = g_cancellable_new ();
  client->events = g_ptr_array_new_with_free_func ((GDestroyNotify)event_free);
  client->data = g_string_new (NULL);

  timeout_id = g_timeout_add_seconds (EVENT_WAIT_SECONDS, timeout_cb, &timed_out);
  soup_session_send_async (http, client->msg, G_PRIORITY_DEFAULT,
                           client->cancellable, events_opened_cb, &opened);
  while (!opened.done && !timed_out)
    g_main_context_iteration (NULL, TRUE);
  g_assert_false (timed_out);
  g_assert_no_error (opened.error);
  stream = opened.stream;

  g_assert_cmpuint (soup_message_get_status (client->msg), ==, SOUP_STATUS_OK);
  g_assert_cmpstr (soup_message_headers_get_one (soup_message_get_response_headers (client->msg),
                                                 "Content-Type"),
                   ==, "text/event-stream; charset=utf-8");

  client->lines = g_data_input_stream_new (stream);
  g_data_input_stream_set_newline_type (client->lines, G_DATA_STREAM_NEWLINE_TYPE_LF);
  g_data_input_stream_read_line_async (client->lines, G_PRIORITY_DEFAULT, client->cancellable,
                                       event_line_cb, client);

  /* The stream opens with a comment: once it is in, the server listens. */
  while (client->n_comments == 0 && !timed_out)
    g_main_context_iteration (NULL, TRUE);
  g_assert_false (timed_out);
  g_source_remove (timeout_id);

  return client;
}
