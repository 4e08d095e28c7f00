/* bench-api.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * POST /api/v1/sessions/:id/messages, 1,000 times over 50 concurrent
 * keep-alive connections, against a fake provider that answers at once.
 * The API server and the engine run on the main context, as in the
 * application; the fake provider (a remote service in real use) runs in a
 * thread of its own. The clients are a thread of plain sockets speaking
 * HTTP/1.1, light as a load generator should be, so that the figures are
 * the server's; with two CPUs or more, the server has one to itself and
 * the clients and the fake provider share the others. Prints requests per second, latency percentiles, the
 * longest main-loop stall and the store's write transactions.
 */

#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <libsoup/soup.h>

#include "bench-stalls.h"
#include "kaged-api-server.h"
#include "kaged-api-token.h"
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-process.h"
#include "kaged-session-manager.h"
#include "kaged-test-files.h"

#define N_REQUESTS    1000
#define N_CONNECTIONS 50
#define TARGET_P99_MS 20.0

typedef struct _Bench Bench;

typedef struct
{
  Bench   *bench;
  guint    index;
  int      fd;
  GString *in;          /* bytes of the answer read so far */
  gint64   session_id;
  gint64   started;
} Client;

typedef struct
{
  GMainContext *context;
  GMainLoop    *loop;
  GMutex        lock;
  GCond         cond;
  char         *url;
  guint         n_connections;
  cpu_set_t    *cpus;
} Provider;

struct _Bench
{
  /* Server side, main thread */
  char         *dir;
  char         *token;
  guint         port;
  guint         n_finished;   /* runs that ended */
  guint         n_succeeded;
  gboolean      clients_done;
  BenchStalls   stalls;

  /* Client side, its own thread */
  cpu_set_t    *harness_cpus;
  Client        clients[N_CONNECTIONS];
  guint         n_sent;
  guint         n_done;
  guint         n_errors;
  gint64        started;
  gint64        finished;
  GArray       *latencies;    /* double, milliseconds */
};

G_GNUC_NORETURN static void
fail (const char *what)
{
  g_printerr ("bench-api: %s\n", what);
  exit (EXIT_FAILURE);
}

/* Splits the CPUs this process may use: the first for the server, the rest
 * for the load. Returns how many there are; with one, both sets hold it. */
static guint
split_cpus (cpu_set_t *server,
            cpu_set_t *harness)
{
  cpu_set_t allowed;
  guint n = 0;

  CPU_ZERO (server);
  CPU_ZERO (harness);
  if (sched_getaffinity (0, sizeof allowed, &allowed) != 0)
    return 0;

  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    {
      if (!CPU_ISSET (cpu, &allowed))
        continue;
      if (n++ == 0)
        CPU_SET (cpu, server);
      else
        CPU_SET (cpu, harness);
    }

  if (n < 2)
    CPU_OR (harness, harness, server);

  return n;
}

static void
pin_thread (const cpu_set_t *cpus)
{
  if (CPU_COUNT (cpus) > 0)
    sched_setaffinity (0, sizeof *cpus, cpus);
}

/* ------------------------------------------------------------------------
 * The clients, in their thread
 * ------------------------------------------------------------------------ */

static void
client_connect (Client *client)
{
  struct sockaddr_in address = { 0 };
  int one = 1;

  address.sin_family = AF_INET;
  address.sin_port = htons (client->bench->port);
  address.sin_addr.s_addr = htonl (INADDR_LOOPBACK);

  client->fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client->fd < 0 ||
      connect (client->fd, (struct sockaddr *)&address, sizeof address) != 0)
    fail (g_strerror (errno));
  setsockopt (client->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  client->in = g_string_sized_new (1024);
}

static void
client_send (Client     *client,
             const char *path,
             const char *body)
{
  g_autofree char *request = NULL;
  gsize length, sent = 0;

  request = g_strdup_printf ("POST %s HTTP/1.1\r\n"
                             "Host: 127.0.0.1:%u\r\n"
                             "Authorization: Bearer %s\r\n"
                             "Content-Type: application/json\r\n"
                             "Content-Length: %" G_GSIZE_FORMAT "\r\n"
                             "\r\n"
                             "%s",
                             path, client->bench->port, client->bench->token,
                             strlen (body), body);
  length = strlen (request);

  client->started = g_get_monotonic_time ();
  while (sent < length)
    {
      gssize n = send (client->fd, request + sent, length - sent, MSG_NOSIGNAL);

      if (n < 0 && errno != EINTR)
        fail (g_strerror (errno));
      if (n > 0)
        sent += n;
    }
}

/* Takes one whole answer off the front of what was read: its status and
 * body. FALSE while it is not all there yet. */
static gboolean
client_take_answer (Client    *client,
                    guint     *status,
                    GString  **body)
{
  const char *end = g_strstr_len (client->in->str, client->in->len, "\r\n\r\n");
  g_auto(GStrv) lines = NULL;
  gsize head, length = 0;

  if (end == NULL)
    return FALSE;

  head = end - client->in->str + 4;
  {
    g_autofree char *text = g_strndup (client->in->str, head);

    lines = g_strsplit (text, "\r\n", -1);
  }
  if (sscanf (lines[0], "HTTP/1.1 %u", status) != 1)
    fail ("the server sent something that is not HTTP/1.1");
  for (guint i = 1; lines[i] != NULL; i++)
    if (g_ascii_strncasecmp (lines[i], "Content-Length:", 15) == 0)
      length = g_ascii_strtoull (lines[i] + 15, NULL, 10);

  if (client->in->len < head + length)
    return FALSE;

  *body = g_string_new_len (client->in->str + head, length);
  g_string_erase (client->in, 0, head + length);
  return TRUE;
}

/* Reads what there is; FALSE when the server closed the connection. */
static gboolean
client_read (Client *client,
             int     flags)
{
  char buffer[16 * 1024];
  gssize n;

  do
    n = recv (client->fd, buffer, sizeof buffer, flags);
  while (n < 0 && errno == EINTR);

  if (n < 0 && errno == EAGAIN)
    return TRUE;
  if (n <= 0)
    return FALSE;

  g_string_append_len (client->in, buffer, n);
  return TRUE;
}

static void
client_post (Client *client)
{
  Bench *bench = client->bench;
  g_autofree char *path = NULL;
  g_autofree char *body = NULL;

  if (bench->n_sent == N_REQUESTS)
    return;

  bench->n_sent++;
  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages", client->session_id);
  body = g_strdup_printf ("{\"content\": \"Message %u from connection %u: please note it.\"}",
                          bench->n_sent, client->index);
  client_send (client, path, body);
}

static void
client_answered (Client  *client,
                 guint    status,
                 GString *body)
{
  Bench *bench = client->bench;
  double ms = (g_get_monotonic_time () - client->started) / 1000.0;

  g_array_append_val (bench->latencies, ms);
  if (status != SOUP_STATUS_ACCEPTED && bench->n_errors++ < 5)
    g_printerr ("bench-api: POST failed: HTTP %u %s\n", status, body->str);
  bench->n_done++;

  client_post (client);
}

/* One session per connection, so runs do not queue behind each other; each
 * connection is open, and kept, before the clock starts. */
static void
create_session (Client *client)
{
  g_autofree char *body = g_strdup_printf ("{\"title\": \"Connection %u\"}", client->index);
  g_autoptr(GString) answer = NULL;
  g_autoptr(JsonNode) node = NULL;
  guint status = 0;

  client_connect (client);
  client_send (client, "/api/v1/sessions", body);
  while (!client_take_answer (client, &status, &answer))
    if (!client_read (client, 0))
      fail ("the server closed the connection");

  if (status != SOUP_STATUS_CREATED)
    fail ("could not create a session");

  node = json_from_string (answer->str, NULL);
  if (node == NULL || !JSON_NODE_HOLDS_OBJECT (node))
    fail ("the new session is not a JSON object");
  client->session_id = json_object_get_int_member (json_node_get_object (node), "id");
}

static gboolean
clients_done_cb (gpointer data)
{
  Bench *bench = data;

  bench->clients_done = TRUE;
  return G_SOURCE_REMOVE;
}

static gpointer
client_thread (gpointer data)
{
  Bench *bench = data;
  struct pollfd fds[N_CONNECTIONS];
  pin_thread (bench->harness_cpus);

  for (guint i = 0; i < N_CONNECTIONS; i++)
    {
      bench->clients[i].bench = bench;
      bench->clients[i].index = i;
      create_session (&bench->clients[i]);
      fds[i].fd = bench->clients[i].fd;
      fds[i].events = POLLIN;
    }

  bench->started = g_get_monotonic_time ();
  for (guint i = 0; i < N_CONNECTIONS; i++)
    client_post (&bench->clients[i]);

  while (bench->n_done < N_REQUESTS)
    {
      if (poll (fds, N_CONNECTIONS, 60 * 1000) <= 0)
        fail ("the server stopped answering");

      for (guint i = 0; i < N_CONNECTIONS; i++)
        {
          Client *client = &bench->clients[i];
          GString *answer = NULL;
          guint status = 0;

          if (fds[i].revents == 0)
            continue;
          if (!client_read (client, MSG_DONTWAIT))
            fail ("the server closed a connection");
          while (client_take_answer (client, &status, &answer))
            {
              client_answered (client, status, answer);
              g_string_free (answer, TRUE);
            }
        }
    }
  bench->finished = g_get_monotonic_time ();

  for (guint i = 0; i < N_CONNECTIONS; i++)
    {
      close (bench->clients[i].fd);
      g_string_free (bench->clients[i].in, TRUE);
    }

  g_main_context_invoke (NULL, clients_done_cb, bench);

  return NULL;
}

/* ------------------------------------------------------------------------
 * The fake provider, in its thread
 * ------------------------------------------------------------------------ */

static gpointer
provider_thread (gpointer data)
{
  Provider *provider = data;
  g_autoptr(KagedFakeServer) fake = NULL;
  g_autoptr(GError) error = NULL;

  g_main_context_push_thread_default (provider->context);
  pin_thread (provider->cpus);

  fake = kaged_fake_server_new ("[{\"kind\": \"openai\", \"text\": \"Noted.\", \"chunks\": 1, "
                                "\"usage\": {\"input_tokens\": 5, \"output_tokens\": 1}}]",
                                &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fake, 0, &error);
  g_assert_no_error (error);

  g_mutex_lock (&provider->lock);
  provider->url = kaged_fake_server_get_url (fake);
  g_cond_signal (&provider->cond);
  g_mutex_unlock (&provider->lock);

  g_main_loop_run (provider->loop);

  provider->n_connections = kaged_fake_server_get_n_connections (fake);
  g_clear_object (&fake);
  for (guint i = 0; i < 100 && g_main_context_iteration (provider->context, FALSE); i++)
    ;

  g_main_context_pop_thread_default (provider->context);

  return NULL;
}

static gboolean
quit_loop_cb (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

/* ------------------------------------------------------------------------
 * The server, on the main context
 * ------------------------------------------------------------------------ */

static void
run_changed_cb (KagedSessionManager *manager,
                KagedRun            *run,
                Bench               *bench)
{
  if (!kaged_run_is_finished (run))
    return;

  bench->n_finished++;
  if (kaged_run_get_status (run) == KAGED_RUN_STATUS_SUCCEEDED)
    bench->n_succeeded++;
}

static int
compare_double (gconstpointer a,
                gconstpointer b)
{
  double x = *(const double *)a;
  double y = *(const double *)b;

  return x < y ? -1 : x > y ? 1 : 0;
}

static double
percentile (GArray *sorted,
            double  p)
{
  guint index = (guint)(p * (sorted->len - 1) + 0.5);

  return g_array_index (sorted, double, MIN (index, sorted->len - 1));
}

static gboolean
timeout_cb (gpointer data)
{
  gboolean *timed_out = data;

  *timed_out = TRUE;
  return G_SOURCE_REMOVE;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedCore) core = NULL;
  g_autoptr(KagedKeyring) keyring = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedApiServer) api = NULL;
  g_autofree char *db_path = NULL;
  Provider provider = { 0 };
  Bench bench = { 0 };
  GThread *provider_thread_handle;
  GThread *thread;
  gboolean timed_out = FALSE;
  guint timeout_id;
  cpu_set_t server_cpus;
  cpu_set_t harness_cpus;
  guint n_cpus;
  double seconds;
  double p50, p90, p99, max;

  /* The server gets a CPU of its own when there are two or more; the
   * clients and the fake provider (a remote machine in real use) share
   * the others. The threads the server starts run on its CPU too. */
  n_cpus = split_cpus (&server_cpus, &harness_cpus);
  pin_thread (&server_cpus);
  bench.harness_cpus = &harness_cpus;
  provider.cpus = &harness_cpus;

  /* As kaged's main() does. */
  kaged_process_tune_allocator ();

  bench.dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  bench.token = kaged_api_token_generate (&error);
  g_assert_no_error (error);

  provider.context = g_main_context_new ();
  provider.loop = g_main_loop_new (provider.context, FALSE);
  g_mutex_init (&provider.lock);
  g_cond_init (&provider.cond);
  provider_thread_handle = g_thread_new ("fake-provider", provider_thread, &provider);
  g_mutex_lock (&provider.lock);
  while (provider.url == NULL)
    g_cond_wait (&provider.cond, &provider.lock);
  g_mutex_unlock (&provider.lock);

  db_path = g_build_filename (bench.dir, "kaged.db", NULL);
  store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);

  keyring = kaged_memory_keyring_new ();
  profile = kaged_profile_new ("bench", KAGED_PROVIDER_KIND_OPENAI, provider.url, "bench");

  core = kaged_core_new (store, keyring, NULL, NULL, KAGED_CORE_FLAGS_NONE);
  kaged_core_set_profile (core, profile);
  kaged_core_start (core);
  g_signal_connect (kaged_core_get_manager (core), "run-changed",
                    G_CALLBACK (run_changed_cb), &bench);

  api = kaged_api_server_new (core, bench.token);
  kaged_api_server_listen (api, 0, &error);
  g_assert_no_error (error);
  bench.port = kaged_api_server_get_port (api);
  kaged_core_set_server (core, KAGED_CORE_SERVER (api));

  bench.latencies = g_array_sized_new (FALSE, FALSE, sizeof (double), N_REQUESTS);
  thread = g_thread_new ("api-clients", client_thread, &bench);

  /* Serve until the clients are done and every reply is in (a minute at
   * most). */
  timeout_id = g_timeout_add_seconds (60, timeout_cb, &timed_out);
  bench_stalls_start (&bench.stalls, 10);
  while (!timed_out && (!bench.clients_done || bench.n_finished < N_REQUESTS))
    g_main_context_iteration (NULL, TRUE);
  if (!timed_out)
    g_source_remove (timeout_id);
  bench_stalls_stop (&bench.stalls);
  g_thread_join (thread);

  seconds = (bench.finished - bench.started) / (double)G_USEC_PER_SEC;
  g_array_sort (bench.latencies, compare_double);
  p50 = percentile (bench.latencies, 0.50);
  p90 = percentile (bench.latencies, 0.90);
  p99 = percentile (bench.latencies, 0.99);
  max = g_array_index (bench.latencies, double, bench.latencies->len - 1);

  g_print ("POST /api/v1/sessions/:id/messages: %u requests over %u connections in %.2f s\n",
           N_REQUESTS, N_CONNECTIONS, seconds);
  g_print ("  cpus:        %s\n",
           n_cpus >= 2 ? "the server on one, the clients and the fake provider on the others"
                       : "one, shared by the server, the clients and the fake provider");
  g_print ("  throughput:  %.0f requests/s\n", N_REQUESTS / seconds);
  g_print ("  latency:     p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms "
           "(target p99 <= %.0f ms: %s)\n",
           p50, p90, p99, max, TARGET_P99_MS, p99 <= TARGET_P99_MS ? "met" : "missed");
  g_print ("  errors:      %u\n", bench.n_errors);
  g_print ("  main loop:   %u stalls over 10 ms, worst gap %.1f ms\n",
           bench.stalls.n_stalls, bench.stalls.worst_gap / 1000.0);
  g_print ("  store:       %" G_GUINT64_FORMAT " write transactions\n",
           kaged_store_get_n_write_transactions (store));
  g_print ("  replies:     %u of %u runs finished, %u succeeded, %.2f s after the first post\n",
           bench.n_finished, N_REQUESTS, bench.n_succeeded,
           (g_get_monotonic_time () - bench.started) / (double)G_USEC_PER_SEC);

  kaged_core_shutdown (core);
  for (guint i = 0; i < 100 && g_main_context_iteration (NULL, FALSE); i++)
    ;

  g_clear_object (&api);
  g_clear_object (&core);
  g_clear_object (&store);

  g_main_context_invoke (provider.context, quit_loop_cb, provider.loop);
  g_thread_join (provider_thread_handle);
  g_print ("  provider:    %u requests over %u connections\n",
           bench.n_finished, provider.n_connections);
  g_main_loop_unref (provider.loop);
  g_main_context_unref (provider.context);
  g_mutex_clear (&provider.lock);
  g_cond_clear (&provider.cond);
  g_free (provider.url);
  g_array_unref (bench.latencies);
  kaged_test_remove_tree (bench.dir);
  g_free (bench.dir);
  g_free (bench.token);

  return bench.n_errors == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
