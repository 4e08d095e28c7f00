/* test-api-server.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * The in-process KagedApiServer, where a test needs to look inside: where
 * it listens, and its event streams.
 */

#include "config.h"

#include <string.h>
#include <sys/socket.h>

#include "kaged-api-fixture.h"

static void
test_listen_address (Fixture       *fixture,
                     gconstpointer  data)
{
  const char *refused[] = { "0.0.0.0", "::", "192.168.0.2", "8.8.8.8", "fe80::1",
                            "::ffff:192.168.0.2" };
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) urls = NULL;

  fixture_serve_in_process (fixture);

  for (guint i = 0; i < G_N_ELEMENTS (refused); i++)
    {
      g_assert_false (kaged_api_server_listen_address (fixture->server, refused[i], 0, &error));
      g_assert_error (error, KAGED_API_ERROR, KAGED_API_ERROR_NOT_LOOPBACK);
      g_clear_error (&error);
      g_assert_false (kaged_api_server_is_listening (fixture->server));
    }

  g_assert_false (kaged_api_server_listen_address (fixture->server, "not an address", 0, &error));
  g_assert_error (error, KAGED_API_ERROR, KAGED_API_ERROR_INVALID_ADDRESS);
  g_clear_error (&error);
  g_assert_cmpuint (kaged_api_server_get_port (fixture->server), ==, 0);

  g_assert_true (kaged_api_server_listen_address (fixture->server, "127.0.0.1", 0, &error));
  g_assert_no_error (error);
  fixture->port = kaged_api_server_get_port (fixture->server);
  g_assert_cmpuint (fixture->port, >, 0);

  urls = kaged_api_server_dup_urls (fixture->server);
  g_assert_cmpuint (g_strv_length (urls), ==, 1);
  g_assert_true (g_str_has_prefix (urls[0], "http://127.0.0.1:"));

  create_session (fixture, "In process");

  kaged_api_server_stop (fixture->server);
  g_assert_cmpuint (kaged_api_server_get_port (fixture->server), ==, 0);
  g_assert_false (kaged_api_server_is_listening (fixture->server));
}

static void
test_listen_loopback_only (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) urls = NULL;

  fixture_serve_in_process (fixture);

  g_assert_true (kaged_api_server_listen (fixture->server, 0, &error));
  g_assert_no_error (error);
  fixture->port = kaged_api_server_get_port (fixture->server);

  urls = kaged_api_server_dup_urls (fixture->server);
  g_assert_cmpuint (g_strv_length (urls), >=, 1);
  for (guint i = 0; urls[i] != NULL; i++)
    {
      g_autoptr(GUri) uri = g_uri_parse (urls[i], G_URI_FLAGS_NONE, NULL);
      g_autoptr(GInetAddress) address = NULL;
      g_autofree char *host = NULL;

      g_assert_nonnull (uri);
      host = g_strdup (g_uri_get_host (uri));
      address = g_inet_address_new_from_string (host);
      g_assert_nonnull (address);
      g_assert_true (g_inet_address_get_is_loopback (address));
      g_assert_cmpint (g_uri_get_port (uri), ==, fixture->port);
    }

  /* The port is taken: a second server on it fails cleanly. */
  {
    g_autoptr(KagedApiServer) second = kaged_api_server_new (fixture->core, fixture->token);

    g_assert_false (kaged_api_server_listen (second, fixture->port, &error));
    g_assert_nonnull (error);
    g_clear_error (&error);
  }

  create_session (fixture, "Loopback");
}

static gboolean
has_comments (gpointer data)
{
  EventClient *client = data;

  return client->n_comments >= client->wanted_comments;
}

static gboolean
no_streams (gpointer data)
{
  Fixture *fixture = data;

  return kaged_api_server_get_n_event_streams (fixture->server) == 0;
}

static void
test_event_stream_keepalive_and_cleanup (Fixture       *fixture,
                                         gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  EventClient *client;
  gint64 session_id;
  guint comments;

  fixture_serve_in_process (fixture);
  kaged_api_server_set_keepalive_interval (fixture->server, 30);
  kaged_api_server_set_max_body_size (fixture->server, 256);
  g_object_set (fixture->server, "request-timeout", 1, NULL);
  g_assert_true (kaged_api_server_listen (fixture->server, 0, &error));
  g_assert_no_error (error);
  fixture->port = kaged_api_server_get_port (fixture->server);

  session_id = create_session (fixture, "Streams");
  client = open_events (fixture, session_id);
  g_assert_cmpuint (kaged_api_server_get_n_event_streams (fixture->server), ==, 1);

  /* Keep-alive comments arrive while nothing happens. */
  comments = client->n_comments;
  client->wanted_comments = comments + 2;
  wait_until (has_comments, client);
  g_assert_cmpuint (client->events->len, ==, 0);

  /* A stream outlives the time a connection has to send a request. */
  {
    gint64 end = g_get_monotonic_time () + 2500 * G_TIME_SPAN_MILLISECOND;

    while (g_get_monotonic_time () < end)
      g_main_context_iteration (NULL, TRUE);
    g_assert_cmpuint (kaged_api_server_get_n_event_streams (fixture->server), ==, 1);
    g_assert_false (client->ended);
  }

  /* The body limit is the server's to set. */
  {
    g_autoptr(Response) response = NULL;
    g_autofree char *path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages",
                                             session_id);
    g_autofree char *body = g_strdup_printf ("{\"content\": \"%0300d\"}", 7);

    response = request (fixture, "POST", path, body);
    assert_error (response, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "payload_too_large");
  }

  /* The client goes away: the server lets go of the stream. */
  event_client_free (client);
  soup_session_abort (fixture->http);
  wait_until (no_streams, fixture);

  /* Stopping ends the streams still open. */
  client = open_events (fixture, session_id);
  g_assert_cmpuint (kaged_api_server_get_n_event_streams (fixture->server), ==, 1);
  kaged_api_server_stop (fixture->server);
  g_assert_cmpuint (kaged_api_server_get_n_event_streams (fixture->server), ==, 0);
  {
    EventClient *watched = client;

    while (!watched->ended)
      g_main_context_iteration (NULL, TRUE);
  }
  event_client_free (client);
}

/* An event-stream client that stops reading is dropped once it left more
 * than the backlog unread, with a last event saying why; the server never
 * holds much more for it, and other clients keep getting their events. */
static void
test_event_stream_slow_client (Fixture       *fixture,
                               gconstpointer  data)
{
  const gsize backlog = 64 * 1024;
  const gsize content_size = 400 * 1024;
  g_autoptr(GError) error = NULL;
  g_autoptr(GSocket) stalled = NULL;
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) address = NULL;
  g_autoptr(EventClient) reader = NULL;
  g_autoptr(GString) received = g_string_new (NULL);
  g_autofree char *content = NULL;
  g_autofree char *request_text = NULL;
  gsize most_buffered = 0;
  gint64 session_id;
  guint n_posts = 0;

  /* Under valgrind the stalled client has not read the final event within
   * the wait (see tests/RELIABILITY.md); the plain and sanitized suites run
   * this check. */
  if (g_getenv ("KAGED_TEST_VALGRIND") != NULL)
    {
      g_test_skip ("The stalled client's last event is not read in time under valgrind");
      return;
    }

  fixture_serve_in_process (fixture);
  g_object_set (fixture->server, "max-stream-backlog", (guint64) backlog, NULL);
  g_assert_true (kaged_api_server_listen_address (fixture->server, "127.0.0.1", 0, &error));
  g_assert_no_error (error);
  fixture->port = kaged_api_server_get_port (fixture->server);

  session_id = create_session (fixture, "Firehose");
  reader = open_events (fixture, session_id);

  /* A client that asks for the events and never reads them. */
  stalled = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP,
                          &error);
  g_assert_no_error (error);
  g_socket_set_option (stalled, SOL_SOCKET, SO_RCVBUF, 4096, NULL);
  address = g_inet_socket_address_new (loopback, fixture->port);
  g_assert_true (g_socket_connect (stalled, address, NULL, &error));
  g_assert_no_error (error);
  request_text = g_strdup_printf ("GET /api/v1/sessions/%" G_GINT64_FORMAT "/events HTTP/1.1\r\n"
                                  "Host: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n",
                                  session_id, fixture->token);
  g_assert_cmpint (g_socket_send (stalled, request_text, strlen (request_text), NULL, &error),
                   ==, (gssize) strlen (request_text));
  while (kaged_api_server_get_n_event_streams (fixture->server) < 2)
    g_main_context_iteration (NULL, TRUE);

  /* Large messages, until the stalled client is dropped: far more than
   * the socket buffers hold. */
  g_test_expect_message ("kaged-api", G_LOG_LEVEL_WARNING, "*Dropping an event stream*");
  content = g_malloc (content_size + 1);
  memset (content, 'x', content_size);
  content[content_size] = '\0';
  while (kaged_api_server_get_n_event_streams (fixture->server) == 2)
    {
      g_autoptr(JsonObject) receipt = NULL;

      g_assert_cmpuint (n_posts, <, 200);
      receipt = post_message (fixture, session_id, content);
      n_posts++;
      wait_event (reader, "run.finished", json_object_get_int_member (receipt, "run_id"));
      most_buffered = MAX (most_buffered,
                           kaged_api_server_get_n_buffered_bytes (fixture->server));
    }
  g_test_assert_expected_messages ();
  g_assert_cmpuint (n_posts, >, 1);

  /* Never much more than the backlog and one event (a message is a bit
   * more than its content on the wire), however long it went on. */
  g_test_message ("%u posts of %" G_GSIZE_FORMAT " KiB; at most %" G_GSIZE_FORMAT
                  " bytes buffered", n_posts, content_size / 1024, most_buffered);
  g_assert_cmpuint (most_buffered, <=, backlog + 2 * (content_size + 4096));

  /* What the stalled client reads at last (soon enough) ends with why it
   * was dropped. */
  {
    gint64 end = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
    char buffer[65536];

    g_socket_set_blocking (stalled, FALSE);
    while (strstr (received->str, "\"reason\":\"too_slow\"") == NULL &&
           g_get_monotonic_time () < end)
      {
        gssize n = g_socket_receive (stalled, buffer, sizeof buffer, NULL, NULL);

        if (n > 0)
          g_string_append_len (received, buffer, n);
        else if (n == 0)
          break;
        g_main_context_iteration (NULL, FALSE);
      }
  }
  g_assert_nonnull (strstr (received->str, "event: stream.dropped\n"));
  g_assert_nonnull (strstr (received->str, "\"reason\":\"too_slow\""));

  /* The reader got every message, and still gets events. */
  g_assert_cmpuint (count_events (reader, "message.added", 0), ==, 2 * n_posts);
  {
    g_autoptr(JsonObject) receipt = post_message (fixture, session_id, "Still there?");

    wait_event (reader, "run.finished", json_object_get_int_member (receipt, "run_id"));
  }

}

int
main (int   argc,
      char *argv[])
{
  kaged_api_test_init (&argc, &argv);

  KAGED_API_TEST_ADD ("server/listen-address", test_listen_address);
  KAGED_API_TEST_ADD ("server/listen-loopback-only", test_listen_loopback_only);
  KAGED_API_TEST_ADD ("server/event-streams", test_event_stream_keepalive_and_cleanup);
  KAGED_API_TEST_ADD ("server/event-stream-slow-client", test_event_stream_slow_client);

  return g_test_run ();
}
