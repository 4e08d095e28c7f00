/* bench-api.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * POST /api/v1/sessions/:id/messages, 1,000 times over 50 concurrent
 * connections, against a fake provider that answers at once. The API
 * server and the engine run on the main context, as in the application;
 * the fake provider (a remote service in real use) and the clients each run
 * in a thread of their own with their own context. Prints requests per
 * second and latency percentiles.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>
#include <libsoup/soup.h>

#include "kaged-api-server.h"
#include "kaged-api-token.h"
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-process.h"
#include "kaged-session-manager.h"

#define N_REQUESTS    1000
#define N_CONNECTIONS 50
#define TARGET_P99_MS 20.0

typedef struct _Bench Bench;

typedef struct
{
  Bench   *bench;
  guint    index;
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

  /* Client side, its own thread */
  GMainContext *context;
  SoupSession  *http;
  Client        clients[N_CONNECTIONS];
  guint         n_sent;
  guint         n_done;
  guint         n_errors;
  gint64        started;
  gint64        finished;
  GArray       *latencies;    /* double, milliseconds */
};

static void
remove_tree (const char *path)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      g_autoptr(GDir) dir = g_dir_open (path, 0, NULL);
      const char *name;

      while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *child = g_build_filename (path, name, NULL);
          remove_tree (child);
        }
      g_rmdir (path);
    }
  else
    {
      g_unlink (path);
    }
}

/* ------------------------------------------------------------------------
 * The clients, in their thread
 * ------------------------------------------------------------------------ */

static SoupMessage *
new_message (Bench      *bench,
             const char *method,
             const char *path,
             const char *body)
{
  g_autofree char *url = g_strdup_printf ("http://127.0.0.1:%u%s", bench->port, path);
  g_autofree char *authorization = g_strdup_printf ("Bearer %s", bench->token);
  SoupMessage *msg = soup_message_new (method, url);

  soup_message_headers_replace (soup_message_get_request_headers (msg),
                                "Authorization", authorization);
  if (body != NULL)
    {
      g_autoptr(GBytes) bytes = g_bytes_new (body, strlen (body));

      soup_message_set_request_body_from_bytes (msg, "application/json", bytes);
    }

  return msg;
}

static void client_post (Client *client);

static void
post_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  Client *client = user_data;
  Bench *bench = client->bench;
  SoupMessage *msg = soup_session_get_async_result_message (SOUP_SESSION (object), result);
  g_autoptr(GBytes) body = NULL;
  g_autoptr(GError) error = NULL;
  double ms;

  body = soup_session_send_and_read_finish (SOUP_SESSION (object), result, &error);
  ms = (g_get_monotonic_time () - client->started) / 1000.0;
  g_array_append_val (bench->latencies, ms);

  if (body == NULL || soup_message_get_status (msg) != SOUP_STATUS_ACCEPTED)
    {
      if (bench->n_errors++ < 5)
        g_printerr ("bench-api: POST failed: %s (HTTP %u)\n",
                    error != NULL ? error->message : "unexpected answer",
                    soup_message_get_status (msg));
    }

  g_object_unref (msg);
  bench->n_done++;

  client_post (client);
}

static void
client_post (Client *client)
{
  Bench *bench = client->bench;
  g_autofree char *path = NULL;
  g_autofree char *body = NULL;
  SoupMessage *msg;

  if (bench->n_sent == N_REQUESTS)
    return;

  bench->n_sent++;
  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages", client->session_id);
  body = g_strdup_printf ("{\"content\": \"Message %u from connection %u: please note it.\"}",
                          bench->n_sent, client->index);
  msg = new_message (bench, "POST", path, body);

  client->started = g_get_monotonic_time ();
  soup_session_send_and_read_async (bench->http, msg, G_PRIORITY_DEFAULT, NULL, post_cb, client);
}

typedef struct
{
  GBytes  *body;
  gboolean done;
} Sync;

static void
sync_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  Sync *sync = user_data;

  sync->body = soup_session_send_and_read_finish (SOUP_SESSION (object), result, NULL);
  sync->done = TRUE;
}

static gint64
create_session (Bench *bench,
                guint  index)
{
  g_autofree char *body = g_strdup_printf ("{\"title\": \"Connection %u\"}", index);
  g_autoptr(SoupMessage) msg = new_message (bench, "POST", "/api/v1/sessions", body);
  g_autoptr(JsonNode) node = NULL;
  g_autofree char *text = NULL;
  Sync sync = { NULL, FALSE };
  gsize length = 0;
  const char *data;

  soup_session_send_and_read_async (bench->http, msg, G_PRIORITY_DEFAULT, NULL, sync_cb, &sync);
  while (!sync.done)
    g_main_context_iteration (bench->context, TRUE);

  if (sync.body == NULL || soup_message_get_status (msg) != SOUP_STATUS_CREATED)
    {
      g_printerr ("bench-api: could not create a session (HTTP %u)\n",
                  soup_message_get_status (msg));
      exit (EXIT_FAILURE);
    }

  data = g_bytes_get_data (sync.body, &length);
  text = g_strndup (data, length);
  g_bytes_unref (sync.body);
  node = json_from_string (text, NULL);

  return json_object_get_int_member (json_node_get_object (node), "id");
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

  g_main_context_push_thread_default (bench->context);

  /* A session of this thread: libsoup sessions keep to their context. */
  bench->http = soup_session_new_with_options ("max-conns", N_CONNECTIONS * 2,
                                               "max-conns-per-host", N_CONNECTIONS,
                                               "timeout", 60,
                                               NULL);

  /* One session per connection, so runs do not queue behind each other. */
  for (guint i = 0; i < N_CONNECTIONS; i++)
    {
      bench->clients[i].bench = bench;
      bench->clients[i].index = i;
      bench->clients[i].session_id = create_session (bench, i);
    }

  bench->started = g_get_monotonic_time ();
  for (guint i = 0; i < N_CONNECTIONS; i++)
    client_post (&bench->clients[i]);
  while (bench->n_done < N_REQUESTS)
    g_main_context_iteration (bench->context, TRUE);
  bench->finished = g_get_monotonic_time ();

  g_clear_object (&bench->http);
  for (guint i = 0; i < 100 && g_main_context_iteration (bench->context, FALSE); i++)
    ;

  g_main_context_pop_thread_default (bench->context);

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
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedKeyring) keyring = NULL;
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedApiServer) api = NULL;
  g_autofree char *db_path = NULL;
  Provider provider = { 0 };
  Bench bench = { 0 };
  GThread *provider_thread_handle;
  GThread *thread;
  gboolean timed_out = FALSE;
  guint timeout_id;
  double seconds;
  double p50, p90, p99, max;

  /* As kaged's main() does. */
  kaged_process_tune_allocator ();

  bench.dir = g_dir_make_tmp ("kaged-bench-api-XXXXXX", &error);
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
  resolver = kaged_resolver_new (kaged_http_get_default_session (), keyring);
  profile = kaged_profile_new ("bench", KAGED_PROVIDER_KIND_OPENAI, provider.url, "bench");

  manager = kaged_session_manager_new (store, NULL);
  kaged_session_manager_set_model (manager, resolver, profile);
  g_signal_connect (manager, "run-changed", G_CALLBACK (run_changed_cb), &bench);

  api = kaged_api_server_new (manager, bench.token);
  kaged_api_server_listen (api, 0, &error);
  g_assert_no_error (error);
  bench.port = kaged_api_server_get_port (api);

  bench.context = g_main_context_new ();
  bench.latencies = g_array_sized_new (FALSE, FALSE, sizeof (double), N_REQUESTS);
  thread = g_thread_new ("api-clients", client_thread, &bench);

  /* Serve until the clients are done and every reply is in (a minute at
   * most). */
  timeout_id = g_timeout_add_seconds (60, timeout_cb, &timed_out);
  while (!timed_out && (!bench.clients_done || bench.n_finished < N_REQUESTS))
    g_main_context_iteration (NULL, TRUE);
  if (!timed_out)
    g_source_remove (timeout_id);
  g_thread_join (thread);

  seconds = (bench.finished - bench.started) / (double)G_USEC_PER_SEC;
  g_array_sort (bench.latencies, compare_double);
  p50 = percentile (bench.latencies, 0.50);
  p90 = percentile (bench.latencies, 0.90);
  p99 = percentile (bench.latencies, 0.99);
  max = g_array_index (bench.latencies, double, bench.latencies->len - 1);

  g_print ("POST /api/v1/sessions/:id/messages: %u requests over %u connections in %.2f s\n",
           N_REQUESTS, N_CONNECTIONS, seconds);
  g_print ("  throughput:  %.0f requests/s\n", N_REQUESTS / seconds);
  g_print ("  latency:     p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms "
           "(target p99 <= %.0f ms: %s)\n",
           p50, p90, p99, max, TARGET_P99_MS, p99 <= TARGET_P99_MS ? "met" : "missed");
  g_print ("  errors:      %u\n", bench.n_errors);
  g_print ("  replies:     %u of %u runs finished, %u succeeded, %.2f s after the first post\n",
           bench.n_finished, N_REQUESTS, bench.n_succeeded,
           (g_get_monotonic_time () - bench.started) / (double)G_USEC_PER_SEC);

  kaged_session_manager_shutdown (manager);
  kaged_api_server_stop (api);
  for (guint i = 0; i < 100 && g_main_context_iteration (NULL, FALSE); i++)
    ;

  g_clear_object (&api);
  g_clear_object (&manager);
  g_clear_object (&store);

  g_main_context_invoke (provider.context, quit_loop_cb, provider.loop);
  g_thread_join (provider_thread_handle);
  g_main_loop_unref (provider.loop);
  g_main_context_unref (provider.context);
  g_mutex_clear (&provider.lock);
  g_cond_clear (&provider.cond);
  g_free (provider.url);
  g_array_unref (bench.latencies);
  g_main_context_unref (bench.context);
  remove_tree (bench.dir);
  g_free (bench.dir);
  g_free (bench.token);

  return bench.n_errors == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
