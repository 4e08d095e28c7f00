/* test-api-connections.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * The HTTP API's connections: how many may be open, how long each may
 * keep the server waiting, what a client that holds one open without a
 * token gets, and that the server keeps accepting after running out of
 * file descriptors.
 */

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>

#include <glib/gstdio.h>

#include "kaged-api-fixture.h"
#include "kaged-test-time.h"

/* An in-process server whose limits are those given, in seconds. */
static void
serve_with_limits (Fixture *fixture,
                   guint    request_timeout,
                   guint    max_connections)
{
  g_autoptr(GError) error = NULL;

  fixture_serve_in_process (fixture);
  g_object_set (fixture->server,
                "request-timeout", request_timeout,
                "max-connections", max_connections,
                NULL);
  g_assert_true (kaged_api_server_listen_address (fixture->server, "127.0.0.1", 0, &error));
  g_assert_no_error (error);
  fixture->port = kaged_api_server_get_port (fixture->server);
}

static gboolean
no_connections (gpointer data)
{
  Fixture *fixture = data;

  return kaged_api_server_get_n_connections (fixture->server) == 0;
}

/* A connection stays open between requests, but not for ever. */
static void
test_idle_closed (Fixture       *fixture,
                  gconstpointer  data)
{
  serve_with_limits (fixture, 1, 16);

  /* Two requests, one connection; idle past the request timeout, closed. */
  {
    g_autoptr(RawClient) client = raw_client_connect (fixture->port);

    for (guint i = 0; i < 2; i++)
      {
        raw_client_send_request (client, "GET /api/v1/sessions HTTP/1.1", fixture->token,
                                 NULL, NULL);
        g_assert_cmpuint (raw_client_wait_answer (client, 3000, NULL), ==, 200);
        raw_client_forget (client);
      }
    g_assert_cmpuint (kaged_api_server_get_n_connections (fixture->server), ==, 1);

    g_assert_true (raw_client_wait_closed (client, 3000));
    wait_until (no_connections, fixture);
  }

  /* A connection that never sends anything. */
  {
    g_autoptr(RawClient) client = raw_client_connect (fixture->port);

    g_assert_true (raw_client_wait_closed (client, 3000));
    g_assert_cmpstr (raw_client_get_received (client), ==, "");
  }

  /* Nor one that sends its headers a byte at a time, for ever. */
  {
    g_autoptr(RawClient) client = raw_client_connect (fixture->port);
    const char *line = "GET /api/v1/sessions HTTP/1.1\r\nX-Slow: ";
    gint64 start = g_get_monotonic_time ();

    raw_client_send (client, line);
    while (!raw_client_wait_closed (client, 200))
      {
        raw_client_send (client, "a");
        g_assert_cmpint (g_get_monotonic_time () - start, <, 4 * G_USEC_PER_SEC);
      }
  }

  /* The server still answers. */
  create_session (fixture, "Three");
}

/* A kept connection its client closes is closed at once, not at the
 * request timeout (libsoup alone never closes it). */
static void
test_closed_by_client (Fixture       *fixture,
                       gconstpointer  data)
{
  serve_with_limits (fixture, 600, 16);

  for (guint i = 0; i < 20; i++)
    {
      g_autoptr(RawClient) client = raw_client_connect (fixture->port);

      raw_client_send_request (client, "GET /api/v1/sessions HTTP/1.1", fixture->token,
                               NULL, NULL);
      g_assert_cmpuint (raw_client_wait_answer (client, 3000, NULL), ==, 200);
    }

  wait_until (no_connections, fixture);
}

/* A request without the token is answered, and its connection closed. */
static void
test_unauthorized_closed (Fixture       *fixture,
                          gconstpointer  data)
{
  g_autoptr(RawClient) client = NULL;
  g_autofree char *code = NULL;

  serve_with_limits (fixture, 30, 16);

  client = raw_client_connect (fixture->port);
  raw_client_send_request (client, "GET /api/v1/sessions HTTP/1.1", NULL, NULL, NULL);
  g_assert_cmpuint (raw_client_wait_answer (client, 3000, &code), ==, 401);
  g_assert_cmpstr (code, ==, "unauthorized");
  g_assert_true (raw_client_wait_closed (client, 3000));
}

static gboolean
at_most_three (gpointer data)
{
  Fixture *fixture = data;

  return kaged_api_server_get_n_connections (fixture->server) <= 3;
}

/* Beyond the most connections, a new one is answered 503 and closed; once
 * one closes, another is taken. */
static void
test_connection_cap (Fixture       *fixture,
                     gconstpointer  data)
{
  g_autoptr(GPtrArray) clients = g_ptr_array_new_with_free_func ((GDestroyNotify)raw_client_free);

  serve_with_limits (fixture, 30, 3);

  for (guint i = 0; i < 3; i++)
    g_ptr_array_add (clients, raw_client_connect (fixture->port));

  g_test_expect_message ("kaged-api", G_LOG_LEVEL_WARNING, "*3 connections open*");
  {
    g_autoptr(RawClient) refused = raw_client_connect (fixture->port);
    g_autofree char *code = NULL;

    g_assert_cmpuint (raw_client_wait_answer (refused, 3000, &code), ==, 503);
    g_assert_cmpstr (code, ==, "too_many_connections");
    g_assert_true (raw_client_wait_closed (refused, 3000));
  }
  g_test_assert_expected_messages ();
  wait_until (at_most_three, fixture);

  /* One goes: a request gets through. */
  g_ptr_array_remove_index (clients, 0);
  while (kaged_api_server_get_n_connections (fixture->server) >= 3)
    g_main_context_iteration (NULL, TRUE);
  create_session (fixture, "Room again");
}

static guint
count_descriptors (void)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/fd", 0, NULL);
  guint n = 0;

  g_assert_nonnull (dir);
  while (g_dir_read_name (dir) != NULL)
    n++;

  return n;
}

/* Opens descriptors until the process may open no more; FALSE if it
 * never runs out (under valgrind, which keeps descriptors of its own). */
static gboolean
fill_descriptors (GArray *fds)
{
  for (guint i = 0; i < 4096; i++)
    {
      int fd = g_open ("/dev/null", O_RDONLY, 0);

      if (fd < 0)
        return errno == EMFILE;
      g_array_append_val (fds, fd);
    }

  return FALSE;
}

static void
close_descriptors (GArray *fds,
                   guint   n)
{
  for (; n > 0 && fds->len > 0; n--)
    {
      g_assert_true (g_close (g_array_index (fds, int, fds->len - 1), NULL));
      g_array_set_size (fds, fds->len - 1);
    }
}

/* accept() fails with EMFILE: the server says so once, and accepts again
 * once descriptors are free. A descriptor that frees up in the middle of
 * the shortage (one the process held for a moment) lets one more
 * connection in but ends nothing: no second warning. */
static void
test_descriptors_run_out_in_process (Fixture       *fixture,
                                     gconstpointer  data)
{
  g_autoptr(GPtrArray) sockets = g_ptr_array_new_with_free_func (g_object_unref);
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) address = NULL;
  g_autoptr(GArray) fillers = g_array_new (FALSE, FALSE, sizeof (int));
  struct rlimit saved;
  struct rlimit limit;

  serve_with_limits (fixture, 30, 512);
  address = g_inet_socket_address_new (loopback, fixture->port);

  /* Room for exactly 10 more descriptors in this process, which is client
   * and server: the limit a little above what is open, the rest filled,
   * 10 freed. 8 clients leave the server 2 before accept() fails. */
  g_assert_cmpint (getrlimit (RLIMIT_NOFILE, &saved), ==, 0);
  limit = saved;
  limit.rlim_cur = count_descriptors () + 16;
  g_assert_cmpint (setrlimit (RLIMIT_NOFILE, &limit), ==, 0);
  if (!fill_descriptors (fillers))
    {
      close_descriptors (fillers, G_MAXUINT);
      g_assert_cmpint (setrlimit (RLIMIT_NOFILE, &saved), ==, 0);
      g_test_skip ("Descriptors do not run out here");
      return;
    }
  g_assert_cmpuint (fillers->len, >, 10);
  close_descriptors (fillers, 10);

  g_test_expect_message ("kaged-api", G_LOG_LEVEL_WARNING, "*cannot accept connections*");
  for (guint i = 0; i < 8; i++)
    {
      g_autoptr(GError) error = NULL;
      GSocket *socket = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
                                      G_SOCKET_PROTOCOL_TCP, &error);

      g_assert_no_error (error);
      g_socket_set_blocking (socket, FALSE);
      if (!g_socket_connect (socket, address, NULL, &error))
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_PENDING);
      g_ptr_array_add (sockets, socket);
    }

  /* Let the server take what it can. */
  {
    gint64 end = g_get_monotonic_time () + G_USEC_PER_SEC;

    while (g_get_monotonic_time () < end)
      g_main_context_iteration (NULL, FALSE);
  }
  g_test_assert_expected_messages ();

  /* One descriptor frees up: the server takes one more connection at its
   * next try, and the next accept() fails again, silently (any message
   * here would be fatal). */
  close_descriptors (fillers, 1);
  {
    guint before = kaged_api_server_get_n_connections (fixture->server);
    gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

    while (kaged_api_server_get_n_connections (fixture->server) == before &&
           g_get_monotonic_time () < end)
      g_main_context_iteration (NULL, FALSE);
    g_assert_cmpuint (kaged_api_server_get_n_connections (fixture->server), ==, before + 1);

    /* A few more tries, all failing. */
    end = g_get_monotonic_time () + G_USEC_PER_SEC;
    while (g_get_monotonic_time () < end)
      g_main_context_iteration (NULL, FALSE);
  }

  /* They go; descriptors are free again. */
  g_ptr_array_set_size (sockets, 0);
  close_descriptors (fillers, G_MAXUINT);
  g_assert_cmpint (setrlimit (RLIMIT_NOFILE, &saved), ==, 0);

  g_test_expect_message ("kaged-api", G_LOG_LEVEL_MESSAGE, "*accepts connections again*");
  create_session (fixture, "After the drought");
  g_test_assert_expected_messages ();
}

/* `kaged --headless` with `ulimit -n 1024`: 1,100 connections without a
 * token come and go, and both addresses answer afterwards. */
static void
test_descriptors_run_out_headless (Fixture       *fixture,
                                   gconstpointer  data)
{
  g_autoptr(GPtrArray) sockets = g_ptr_array_new_with_free_func (g_object_unref);
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) address = NULL;

  /* valgrind refuses the child's lower hard limit, and the child never
   * starts. */
  if (g_getenv ("KAGED_TEST_VALGRIND") != NULL)
    {
      g_test_skip ("valgrind cannot lower a child's descriptor limit");
      return;
    }

  fixture->nofile_limit = 1024;
  fixture_start (fixture);
  address = g_inet_socket_address_new (loopback, fixture->port);

  for (guint i = 0; i < 1100; i++)
    {
      g_autoptr(GError) error = NULL;
      GSocket *socket = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
                                      G_SOCKET_PROTOCOL_TCP, &error);

      g_assert_no_error (error);
      g_socket_set_blocking (socket, FALSE);
      if (!g_socket_connect (socket, address, NULL, &error))
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_PENDING);
      g_ptr_array_add (sockets, socket);
    }

  /* Until every connection is either held by the server or refused (the
   * last wait for their SYN to be sent again), or the server holds as
   * many descriptors as it may. */
  {
    g_autofree char *fd_dir = g_strdup_printf ("/proc/%s/fd",
                                               g_subprocess_get_identifier (fixture->process));
    gint64 end = g_get_monotonic_time () + 15 * G_USEC_PER_SEC;

    while (g_get_monotonic_time () < end)
      {
        g_autoptr(GDir) dir = g_dir_open (fd_dir, 0, NULL);
        guint n_descriptors = 0;
        guint n_refused = 0;

        while (dir != NULL && g_dir_read_name (dir) != NULL)
          n_descriptors++;
        for (guint i = 0; i < sockets->len; i++)
          if (g_socket_condition_check (g_ptr_array_index (sockets, i), G_IO_IN) != 0)
            n_refused++;

        if (n_descriptors >= 1024 ||
            n_refused + KAGED_API_DEFAULT_MAX_CONNECTIONS >= sockets->len)
          {
            g_test_message ("The server holds %u descriptors; %u connections were refused",
                            n_descriptors, n_refused);
            break;
          }
        if (g_get_monotonic_time () >= end - 100 * 1000)
          g_test_message ("Still: %u descriptors, %u refused", n_descriptors, n_refused);
        g_usleep (100 * G_TIME_SPAN_MILLISECOND);
      }

    /* Long enough for the next accept() to fail. */
    g_usleep (500 * G_TIME_SPAN_MILLISECOND);
  }

  g_ptr_array_set_size (sockets, 0);

  /* 127.0.0.1 answers, promptly. */
  {
    gint64 start = g_get_monotonic_time ();

    create_session (fixture, "Still here");
    g_assert_cmpint (g_get_monotonic_time () - start, <, kaged_test_usec (5 * G_USEC_PER_SEC));
  }
}

/* Clients that send their headers a byte at a time do not delay others. */
static void
test_slow_loris (Fixture       *fixture,
                 gconstpointer  data)
{
  const guint counts[] = { 1, 300 };

  fixture_start (fixture);
  create_session (fixture, "Warm");

  for (guint c = 0; c < G_N_ELEMENTS (counts); c++)
    {
      g_autoptr(GPtrArray) clients = g_ptr_array_new_with_free_func ((GDestroyNotify)raw_client_free);
      gint64 slowest = 0;

      for (guint i = 0; i < counts[c]; i++)
        {
          RawClient *client = raw_client_connect (fixture->port);

          raw_client_send (client, "POST /api/v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
          g_ptr_array_add (clients, client);
        }

      /* Ten requests while they dribble. */
      for (guint i = 0; i < 10; i++)
        {
          gint64 start = g_get_monotonic_time ();

          for (guint j = 0; j < clients->len; j++)
            raw_client_send (g_ptr_array_index (clients, j), "a");
          create_session (fixture, "Fast");
          slowest = MAX (slowest, g_get_monotonic_time () - start);
        }

      g_test_message ("%u slow clients: the slowest request took %" G_GINT64_FORMAT " ms",
                      counts[c], slowest / 1000);
      g_assert_cmpint (slowest, <, 2 * G_USEC_PER_SEC);
    }
}

int
main (int   argc,
      char *argv[])
{
  kaged_api_test_init (&argc, &argv);

  KAGED_API_TEST_ADD ("connections/idle-closed", test_idle_closed);
  KAGED_API_TEST_ADD ("connections/closed-by-client", test_closed_by_client);
  KAGED_API_TEST_ADD ("connections/unauthorized-closed", test_unauthorized_closed);
  KAGED_API_TEST_ADD ("connections/cap", test_connection_cap);
  KAGED_API_TEST_ADD ("connections/descriptors-run-out", test_descriptors_run_out_in_process);
  KAGED_API_TEST_ADD ("connections/descriptors-run-out-headless",
                      test_descriptors_run_out_headless);
  KAGED_API_TEST_ADD ("connections/slow-loris", test_slow_loris);

  return g_test_run ();
}
