/* kaged-api-fixture.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "kaged-api-fixture.h"
#include "kaged-api-token.h"
#include "kaged-keyring.h"

void
response_free (Response *response)
{
  g_clear_pointer (&response->root, json_node_unref);
  g_clear_pointer (&response->headers, soup_message_headers_unref);
  g_free (response);
}

static gboolean
timeout_cb (gpointer user_data)
{
  gboolean *timed_out = user_data;

  *timed_out = TRUE;
  return G_SOURCE_REMOVE;
}

void
wait_until (Predicate predicate,
            gpointer  data)
{
  gboolean timed_out = FALSE;
  guint id = g_timeout_add_seconds (WAIT_SECONDS, timeout_cb, &timed_out);

  while (!predicate (data) && !timed_out)
    g_main_context_iteration (NULL, TRUE);

  g_assert_false (timed_out);
  g_source_remove (id);
}

/* ------------------------------------------------------------------------
 * Fixture
 * ------------------------------------------------------------------------ */

void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  fixture->data_dir = g_build_filename (fixture->dir, "data", NULL);
  fixture->config_dir = g_build_filename (fixture->dir, "config", NULL);
  fixture->token_path = g_build_filename (fixture->dir, "api-token", NULL);

  fixture->fake = kaged_fake_server_new ("[{\"kind\": \"openai\", \"text\": \"Hello\"}]", &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->fake, 0, &error);
  g_assert_no_error (error);
  fixture->fake_url = kaged_fake_server_get_url (fixture->fake);

  fixture->http = soup_session_new_with_options ("max-conns", 64,
                                                 "max-conns-per-host", 64,
                                                 "timeout", WAIT_SECONDS,
                                                 NULL);
  fixture->process_output = g_string_new (NULL);
}

static gboolean
process_gone (gpointer data)
{
  Fixture *fixture = data;

  return fixture->process == NULL || fixture->exited;
}

static void
wait_process_cb (GObject      *object,
                 GAsyncResult *result,
                 gpointer      user_data)
{
  Fixture *fixture = user_data;

  g_subprocess_wait_finish (G_SUBPROCESS (object), result, NULL);
  fixture->exited = TRUE;
}

gboolean
flag_set (gpointer data)
{
  return *(gboolean *)data;
}

void
fixture_wait_exit (Fixture *fixture)
{
  wait_until (process_gone, fixture);
}

void
fixture_stop (Fixture *fixture)
{
  if (fixture->process == NULL)
    return;

  if (!process_gone (fixture))
    {
      g_subprocess_send_signal (fixture->process, SIGTERM);
      fixture_wait_exit (fixture);
    }

  g_clear_object (&fixture->process_out);
  g_clear_object (&fixture->process);
  fixture->port = 0;
}

static gboolean
fake_idle (gpointer data)
{
  Fixture *fixture = data;

  return kaged_fake_server_get_n_active (fixture->fake) == 0;
}

void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  fixture_stop (fixture);

  if (fixture->core != NULL)
    kaged_core_shutdown (fixture->core);
  g_clear_object (&fixture->server);
  g_clear_object (&fixture->core);

  /* Let connections and cancelled calls wind down: the fake provider's
   * answers end at their next write once their client is gone. */
  wait_until (fake_idle, fixture);

  g_clear_object (&fixture->http);
  g_clear_object (&fixture->fake);
  g_clear_pointer (&fixture->fake_url, g_free);
  g_string_free (fixture->process_output, TRUE);

  kaged_test_remove_tree (fixture->dir);
  g_clear_pointer (&fixture->dir, g_free);
  g_clear_pointer (&fixture->data_dir, g_free);
  g_clear_pointer (&fixture->config_dir, g_free);
  g_clear_pointer (&fixture->token_path, g_free);
  g_clear_pointer (&fixture->token, g_free);
}

void
fixture_set_scenario (Fixture    *fixture,
                      const char *scenario)
{
  g_autoptr(GError) error = NULL;

  kaged_fake_server_set_scenario (fixture->fake, scenario, &error);
  g_assert_no_error (error);
  kaged_fake_server_reset (fixture->fake);
}

/* ------------------------------------------------------------------------
 * The headless program
 * ------------------------------------------------------------------------ */

const char *
kaged_binary (void)
{
  const char *path = g_getenv ("KAGED_BINARY");

  g_assert_nonnull (path);
  return path;
}

typedef struct
{
  pid_t   parent;
  rlim_t  nofile_limit;
} ChildSetup;

/* Runs in the child between fork and exec: only async-signal-safe calls. */
static void
child_setup (gpointer user_data)
{
  const ChildSetup *setup = user_data;

  /* Killed with the test, however it ends, an abort included. */
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  if (getppid () != setup->parent)
    _exit (127);

  if (setup->nofile_limit > 0)
    {
      struct rlimit limit = { setup->nofile_limit, setup->nofile_limit };

      if (setrlimit (RLIMIT_NOFILE, &limit) != 0)
        _exit (126);
    }
}

GSubprocessLauncher *
new_launcher (Fixture *fixture)
{
  ChildSetup *setup = g_new0 (ChildSetup, 1);

  GSubprocessLauncher *launcher;
  g_autofree char *runtime = g_build_filename (fixture->dir, "runtime", NULL);
  g_autofree char *data_home = g_build_filename (fixture->dir, "xdg-data", NULL);
  g_autofree char *cache = g_build_filename (fixture->dir, "cache", NULL);
  g_autofree char *state = g_build_filename (fixture->dir, "state", NULL);

  g_mkdir_with_parents (runtime, 0700);

  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                        G_SUBPROCESS_FLAGS_STDERR_PIPE);
  /* No display, no desktop session: the headless program needs neither. */
  g_subprocess_launcher_unsetenv (launcher, "DISPLAY");
  g_subprocess_launcher_unsetenv (launcher, "WAYLAND_DISPLAY");
  g_subprocess_launcher_unsetenv (launcher, "DBUS_SESSION_BUS_ADDRESS");
  g_subprocess_launcher_setenv (launcher, "XDG_CONFIG_HOME", fixture->config_dir, TRUE);
  g_subprocess_launcher_setenv (launcher, "XDG_DATA_HOME", data_home, TRUE);
  g_subprocess_launcher_setenv (launcher, "XDG_CACHE_HOME", cache, TRUE);
  g_subprocess_launcher_setenv (launcher, "XDG_STATE_HOME", state, TRUE);
  g_subprocess_launcher_setenv (launcher, "XDG_RUNTIME_DIR", runtime, TRUE);
  g_subprocess_launcher_setenv (launcher, "LC_ALL", "C.UTF-8", TRUE);

  setup->parent = getpid ();
  setup->nofile_limit = fixture->nofile_limit;
  g_subprocess_launcher_set_child_setup (launcher, child_setup, setup, g_free);

  return launcher;
}

static GPtrArray *
headless_argv (Fixture    *fixture,
               gboolean    with_token_file,
               const char *first_extra,
               va_list     extra)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);

  g_ptr_array_add (argv, g_strdup (kaged_binary ()));
  g_ptr_array_add (argv, g_strdup ("--headless"));
  g_ptr_array_add (argv, g_strdup ("--api-port=0"));
  g_ptr_array_add (argv, g_strdup_printf ("--data-dir=%s", fixture->data_dir));
  if (with_token_file)
    g_ptr_array_add (argv, g_strdup_printf ("--api-token-file=%s", fixture->token_path));
  g_ptr_array_add (argv, g_strdup ("--provider-kind=openai"));
  g_ptr_array_add (argv, g_strdup_printf ("--provider-url=%s", fixture->fake_url));
  g_ptr_array_add (argv, g_strdup ("--model=test"));

  for (const char *arg = first_extra; arg != NULL; arg = va_arg (extra, const char *))
    g_ptr_array_add (argv, g_strdup (arg));

  g_ptr_array_add (argv, NULL);

  return argv;
}

typedef struct
{
  Fixture *fixture;
  gboolean done;
} LineRead;

static void
read_line_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  LineRead *read = user_data;
  Fixture *fixture = read->fixture;
  g_autofree char *line = NULL;
  const char *prefix = "Listening on http://127.0.0.1:";

  line = g_data_input_stream_read_line_finish_utf8 (G_DATA_INPUT_STREAM (object), result,
                                                    NULL, NULL);
  if (line == NULL)
    {
      read->done = TRUE;
      return;
    }

  g_string_append_printf (fixture->process_output, "%s\n", line);

  if (g_str_has_prefix (line, prefix))
    {
      guint64 port = 0;

      g_assert_true (g_ascii_string_to_unsigned (line + strlen (prefix), 10, 1, 65535,
                                                 &port, NULL));
      fixture->port = port;
    }

  /* The provider line ends what is printed at start-up. */
  if (g_str_has_prefix (line, "Provider: "))
    {
      read->done = TRUE;
      return;
    }

  g_data_input_stream_read_line_async (G_DATA_INPUT_STREAM (object), G_PRIORITY_DEFAULT,
                                       NULL, read_line_cb, read);
}

/* Starts `kaged --headless` and waits for the port it prints. */
void
fixture_start_full (Fixture    *fixture,
                    gboolean    with_token_file,
                    const char *first_extra,
                    ...)
{
  g_autoptr(GSubprocessLauncher) launcher = new_launcher (fixture);
  g_autoptr(GPtrArray) argv = NULL;
  g_autoptr(GError) error = NULL;
  LineRead read = { fixture, FALSE };
  va_list extra;

  va_start (extra, first_extra);
  argv = headless_argv (fixture, with_token_file, first_extra, extra);
  va_end (extra);

  fixture->process = g_subprocess_launcher_spawnv (launcher,
                                                   (const char * const *)argv->pdata, &error);
  g_assert_no_error (error);
  fixture->exited = FALSE;
  g_subprocess_wait_async (fixture->process, NULL, wait_process_cb, fixture);

  fixture->process_out =
    g_data_input_stream_new (g_subprocess_get_stdout_pipe (fixture->process));
  g_data_input_stream_read_line_async (fixture->process_out, G_PRIORITY_DEFAULT, NULL,
                                       read_line_cb, &read);
  wait_until (flag_set, &read.done);

  if (fixture->port == 0)
    g_error ("kaged --headless did not start:\n%s", fixture->process_output->str);

  if (with_token_file)
    {
      g_file_get_contents (fixture->token_path, &fixture->token, NULL, &error);
      g_assert_no_error (error);
      g_strstrip (fixture->token);
    }
}

void
fixture_start (Fixture *fixture)
{
  fixture_start_full (fixture, TRUE, NULL);
}

typedef struct
{
  char    *out;
  char    *err;
  gboolean done;
} Communicated;

static void
communicate_cb (GObject      *object,
                GAsyncResult *result,
                gpointer      user_data)
{
  Communicated *communicated = user_data;
  g_autoptr(GError) error = NULL;

  g_subprocess_communicate_utf8_finish (G_SUBPROCESS (object), result,
                                        &communicated->out, &communicated->err, &error);
  g_assert_no_error (error);
  communicated->done = TRUE;
}

/* Runs `kaged --headless` with @args that make it fail at once; returns
 * its exit status and what it printed on stderr. */
int
run_failing (Fixture     *fixture,
             const char  *const *args,
             char       **err)
{
  g_autoptr(GSubprocessLauncher) launcher = new_launcher (fixture);
  g_autoptr(GSubprocess) process = NULL;
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;
  Communicated communicated = { NULL, NULL, FALSE };

  g_ptr_array_add (argv, (char *)kaged_binary ());
  for (guint i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (char *)args[i]);
  g_ptr_array_add (argv, NULL);

  process = g_subprocess_launcher_spawnv (launcher, (const char * const *)argv->pdata, &error);
  g_assert_no_error (error);

  g_subprocess_communicate_utf8_async (process, NULL, NULL, communicate_cb, &communicated);
  wait_until (flag_set, &communicated.done);

  g_free (communicated.out);
  *err = communicated.err;

  g_assert_true (g_subprocess_get_if_exited (process));
  return g_subprocess_get_exit_status (process);
}

/* ------------------------------------------------------------------------
 * HTTP
 * ------------------------------------------------------------------------ */

SoupMessage *
new_message (Fixture    *fixture,
             const char *method,
             const char *path)
{
  g_autofree char *url = g_strdup_printf ("http://127.0.0.1:%u%s", fixture->port, path);
  SoupMessage *msg = soup_message_new (method, url);
  g_autofree char *authorization = NULL;

  g_assert_nonnull (msg);

  authorization = g_strdup_printf ("Bearer %s", fixture->token);
  soup_message_headers_replace (soup_message_get_request_headers (msg),
                                "Authorization", authorization);

  return msg;
}

typedef struct
{
  GBytes  *body;
  GError  *error;
  gboolean done;
} Sent;

static void
send_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  Sent *sent = user_data;

  sent->body = soup_session_send_and_read_finish (SOUP_SESSION (object), result, &sent->error);
  sent->done = TRUE;
}

Response *
send_message (Fixture     *fixture,
              SoupMessage *msg)
{
  Sent sent = { NULL, NULL, FALSE };
  Response *response;
  const char *content_type;
  const char *data;
  gsize length = 0;

  soup_session_send_and_read_async (fixture->http, msg, G_PRIORITY_DEFAULT, NULL,
                                    send_cb, &sent);
  wait_until (flag_set, &sent.done);
  g_assert_no_error (sent.error);

  response = g_new0 (Response, 1);
  response->status = soup_message_get_status (msg);
  response->headers = soup_message_headers_ref (soup_message_get_response_headers (msg));

  content_type = soup_message_headers_get_one (response->headers, "Content-Type");
  data = g_bytes_get_data (sent.body, &length);
  if (length > 0)
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *text = g_strndup (data, length);

      g_assert_cmpstr (content_type, ==, "application/json; charset=utf-8");
      response->root = json_from_string (text, &error);
      g_assert_no_error (error);
    }
  g_bytes_unref (sent.body);

  return response;
}

Response *
request (Fixture    *fixture,
         const char *method,
         const char *path,
         const char *body)
{
  g_autoptr(SoupMessage) msg = new_message (fixture, method, path);

  if (body != NULL)
    {
      g_autoptr(GBytes) bytes = g_bytes_new (body, strlen (body));

      soup_message_set_request_body_from_bytes (msg, "application/json", bytes);
    }

  return send_message (fixture, msg);
}

JsonObject *
response_object (Response *response)
{
  g_assert_nonnull (response->root);
  g_assert_true (JSON_NODE_HOLDS_OBJECT (response->root));

  return json_node_get_object (response->root);
}

void
assert_error (Response   *response,
              guint       status,
              const char *code)
{
  JsonObject *error;

  g_assert_cmpuint (response->status, ==, status);
  error = json_object_get_object_member (response_object (response), "error");
  g_assert_nonnull (error);
  g_assert_cmpstr (json_object_get_string_member (error, "code"), ==, code);
  g_assert_cmpstr (json_object_get_string_member (error, "message"), !=, "");
}

gint64
create_session (Fixture    *fixture,
                const char *title)
{
  g_autofree char *body = g_strdup_printf ("{\"title\": \"%s\"}", title);
  g_autoptr(Response) response = request (fixture, "POST", "/api/v1/sessions", body);
  JsonObject *session;

  g_assert_cmpuint (response->status, ==, SOUP_STATUS_CREATED);
  session = response_object (response);
  g_assert_cmpstr (json_object_get_string_member (session, "title"), ==, title);
  g_assert_cmpstr (json_object_get_string_member (session, "state"), ==, "idle");

  return json_object_get_int_member (session, "id");
}

JsonObject *
post_message (Fixture    *fixture,
              gint64      session_id,
              const char *content)
{
  g_autofree char *path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages",
                                           session_id);
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(JsonNode) node = NULL;
  g_autofree char *body = NULL;
  g_autoptr(Response) response = NULL;
  JsonObject *receipt;

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "content");
  json_builder_add_string_value (builder, content);
  json_builder_end_object (builder);
  node = json_builder_get_root (builder);
  body = json_to_string (node, FALSE);

  response = request (fixture, "POST", path, body);
  g_assert_cmpuint (response->status, ==, SOUP_STATUS_ACCEPTED);
  receipt = response_object (response);
  g_assert_cmpint (json_object_get_int_member (receipt, "session_id"), ==, session_id);
  g_assert_cmpint (json_object_get_int_member (receipt, "message_id"), >, 0);
  g_assert_cmpint (json_object_get_int_member (receipt, "run_id"), >, 0);
  g_assert_false (json_object_has_member (receipt, "superseded_message_ids"));

  return json_object_ref (receipt);
}

JsonArray *
list_messages (Fixture    *fixture,
               gint64      session_id,
               const char *query)
{
  g_autofree char *path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages%s",
                                           session_id, query != NULL ? query : "");
  g_autoptr(Response) response = request (fixture, "GET", path, NULL);

  g_assert_cmpuint (response->status, ==, SOUP_STATUS_OK);

  return json_array_ref (json_object_get_array_member (response_object (response), "messages"));
}

/* Everything the API shows of the store: sessions and every message,
 * superseded ones included, as text. */
char *
snapshot (Fixture *fixture)
{
  g_autoptr(Response) sessions = request (fixture, "GET", "/api/v1/sessions", NULL);
  GString *out = g_string_new (NULL);
  JsonArray *array;

  g_assert_cmpuint (sessions->status, ==, SOUP_STATUS_OK);
  array = json_object_get_array_member (response_object (sessions), "sessions");

  for (guint i = 0; i < json_array_get_length (array); i++)
    {
      JsonObject *session = json_array_get_object_element (array, i);
      gint64 id = json_object_get_int_member (session, "id");
      g_autoptr(JsonArray) messages = list_messages (fixture, id, "?include_superseded=true");
      g_autoptr(JsonNode) node = json_node_init_array (json_node_alloc (), messages);
      g_autofree char *session_text = json_to_string (json_array_get_element (array, i), FALSE);
      g_autofree char *messages_text = json_to_string (node, FALSE);

      g_string_append_printf (out, "%s\n%s\n", session_text, messages_text);
    }

  return g_string_free (out, FALSE);
}

JsonObject *
get_run (Fixture *fixture,
         gint64   session_id,
         gint64   run_id)
{
  g_autofree char *path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/runs/%"
                                           G_GINT64_FORMAT, session_id, run_id);
  g_autoptr(Response) response = request (fixture, "GET", path, NULL);

  g_assert_cmpuint (response->status, ==, SOUP_STATUS_OK);

  return json_object_ref (response_object (response));
}

/* ------------------------------------------------------------------------
 * Event streams
 * ------------------------------------------------------------------------ */

EventClient *
open_events (Fixture *fixture,
             gint64   session_id)
{
  g_autofree char *path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/events",
                                           session_id);

  return event_client_open (fixture->http, new_message (fixture, "GET", path));
}

typedef struct
{
  EventClient *client;
  const char  *name;
  gint64       run_id;
  guint        from;
  Event       *found;
} EventWait;

static gboolean
event_found (gpointer data)
{
  EventWait *wait = data;

  for (guint i = wait->from; i < wait->client->events->len; i++)
    {
      Event *event = g_ptr_array_index (wait->client->events, i);
      JsonObject *object = json_node_get_object (event->data);
      gint64 run_id = 0;

      if (!g_str_equal (event->name, wait->name))
        continue;

      if (json_object_has_member (object, "run_id"))
        run_id = json_object_get_int_member (object, "run_id");
      else if (g_str_has_prefix (event->name, "run."))
        run_id = json_object_get_int_member (object, "id");

      if (wait->run_id == 0 || run_id == wait->run_id)
        {
          wait->found = event;
          return TRUE;
        }
    }

  return FALSE;
}

/* Waits for the first event @name (of @run_id, unless 0). */
JsonObject *
wait_event (EventClient *client,
            const char  *name,
            gint64       run_id)
{
  EventWait wait = { client, name, run_id, 0, NULL };

  wait_until (event_found, &wait);

  return json_node_get_object (wait.found->data);
}

guint
count_events (EventClient *client,
              const char  *name,
              gint64       run_id)
{
  guint n = 0;

  for (guint i = 0; i < client->events->len; i++)
    {
      EventWait wait = { client, name, run_id, i, NULL };

      if (event_found (&wait) && wait.found == g_ptr_array_index (client->events, i))
        n++;
    }

  return n;
}

guint
event_index (EventClient *client,
             const char  *name,
             gint64       run_id)
{
  for (guint i = 0; i < client->events->len; i++)
    {
      EventWait wait = { client, name, run_id, i, NULL };

      if (event_found (&wait) && wait.found == g_ptr_array_index (client->events, i))
        return i;
    }

  return G_MAXUINT;
}

/* ------------------------------------------------------------------------
 * In process
 * ------------------------------------------------------------------------ */

void
fixture_serve_in_process (Fixture *fixture)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedProfile) profile = NULL;
  g_autofree char *db_path = g_build_filename (fixture->data_dir, "kaged.db", NULL);

  fixture->core = kaged_core_open (db_path, keyring, KAGED_CORE_FLAGS_NONE, &error);
  g_assert_no_error (error);

  profile = kaged_profile_new ("test", KAGED_PROVIDER_KIND_OPENAI, fixture->fake_url, "test");
  kaged_core_set_profile (fixture->core, profile);
  kaged_core_start (fixture->core);

  fixture->token = kaged_api_token_generate (&error);
  g_assert_no_error (error);
  fixture->server = kaged_api_server_new (fixture->core, fixture->token);
}


/* g_test_init() and what every API test needs. */
void
kaged_api_test_init (int    *argc,
                     char ***argv)
{
  g_test_init (argc, argv, NULL);

  /* The headless program must not need a display; neither do these tests. */
  g_unsetenv ("DISPLAY");
  g_unsetenv ("WAYLAND_DISPLAY");
}

/* ------------------------------------------------------------------------
 * Raw HTTP, byte by byte
 * ------------------------------------------------------------------------ */

struct _RawClient
{
  GSocketConnection *connection;
  GCancellable      *cancellable;
  GString           *received;
  guint8             buffer[4096];
  gboolean           closed;
};

static void
raw_read_cb (GObject      *object,
             GAsyncResult *result,
             gpointer      user_data)
{
  RawClient *client = user_data;
  g_autoptr(GError) error = NULL;
  gssize n;

  n = g_input_stream_read_finish (G_INPUT_STREAM (object), result, &error);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;
  if (n <= 0)
    {
      client->closed = TRUE;
      return;
    }

  g_string_append_len (client->received, (const char *)client->buffer, n);
  g_input_stream_read_async (G_INPUT_STREAM (object), client->buffer, sizeof client->buffer,
                             G_PRIORITY_DEFAULT, client->cancellable, raw_read_cb, client);
}

typedef struct
{
  GSocketConnection *connection;
  GError            *error;
  gboolean           done;
} Connected;

static void
raw_connected_cb (GObject      *object,
                  GAsyncResult *result,
                  gpointer      user_data)
{
  Connected *connected = user_data;

  connected->connection = g_socket_client_connect_to_host_finish (G_SOCKET_CLIENT (object),
                                                                  result, &connected->error);
  connected->done = TRUE;
}

/* A connection to 127.0.0.1:@port that reads everything that comes. */
RawClient *
raw_client_connect (guint port)
{
  g_autoptr(GSocketClient) socket_client = g_socket_client_new ();
  g_autofree char *host = g_strdup_printf ("127.0.0.1:%u", port);
  Connected connected = { NULL, NULL, FALSE };
  RawClient *client;

  g_socket_client_connect_to_host_async (socket_client, host, port, NULL,
                                         raw_connected_cb, &connected);
  wait_until (flag_set, &connected.done);
  g_assert_no_error (connected.error);

  client = g_new0 (RawClient, 1);
  client->connection = connected.connection;
  client->cancellable = g_cancellable_new ();
  client->received = g_string_new (NULL);
  g_input_stream_read_async (g_io_stream_get_input_stream (G_IO_STREAM (client->connection)),
                             client->buffer, sizeof client->buffer, G_PRIORITY_DEFAULT,
                             client->cancellable, raw_read_cb, client);

  return client;
}

void
raw_client_send (RawClient  *client,
                 const char *text)
{
  GSocket *socket = g_socket_connection_get_socket (client->connection);
  gsize length = strlen (text);
  gsize sent = 0;

  /* Small writes: the kernel takes them at once. */
  while (sent < length)
    {
      g_autoptr(GError) error = NULL;
      gssize n = g_socket_send_with_blocking (socket, text + sent, length - sent, FALSE, NULL,
                                              &error);

      if (n < 0)
        {
          g_assert_error (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK);
          g_main_context_iteration (NULL, FALSE);
          continue;
        }
      sent += n;
    }
}

/* Sends a request with the headers @headers (each ending in CRLF) and
 * @body, if any, as they are: no Content-Length is added. */
void
raw_client_send_request (RawClient  *client,
                         const char *request_line,
                         const char *token,
                         const char *headers,
                         const char *body)
{
  g_autofree char *text = NULL;
  g_autofree char *authorization = NULL;

  if (token != NULL)
    authorization = g_strdup_printf ("Authorization: Bearer %s\r\n", token);
  text = g_strdup_printf ("%s\r\nHost: 127.0.0.1\r\n%s%s\r\n%s", request_line,
                          authorization != NULL ? authorization : "",
                          headers != NULL ? headers : "", body != NULL ? body : "");
  raw_client_send (client, text);
}

void
raw_client_free (RawClient *client)
{
  g_cancellable_cancel (client->cancellable);
  g_io_stream_close (G_IO_STREAM (client->connection), NULL, NULL);
  g_clear_object (&client->connection);
  g_clear_object (&client->cancellable);
  g_string_free (client->received, TRUE);
  g_free (client);
}

static gboolean
raw_closed (gpointer data)
{
  return ((RawClient *)data)->closed;
}

static gboolean
raw_has_answer (gpointer data)
{
  RawClient *client = data;
  const char *end = strstr (client->received->str, "\r\n\r\n");
  const char *length;

  if (end == NULL)
    return client->closed;

  length = strstr (client->received->str, "Content-Length: ");
  if (length == NULL || length > end)
    return client->closed;

  return client->received->str + client->received->len >=
         end + 4 + g_ascii_strtoull (length + strlen ("Content-Length: "), NULL, 10);
}

static gboolean
wait_for (Predicate predicate,
          gpointer  data,
          guint     milliseconds)
{
  gboolean timed_out = FALSE;
  guint id = g_timeout_add (milliseconds, timeout_cb, &timed_out);

  while (!predicate (data) && !timed_out)
    g_main_context_iteration (NULL, TRUE);

  if (!timed_out)
    g_source_remove (id);

  return !timed_out;
}

/* Whether the server closed the connection within @milliseconds. */
gboolean
raw_client_wait_closed (RawClient *client,
                        guint      milliseconds)
{
  return wait_for (raw_closed, client, milliseconds);
}

/* Waits @milliseconds at most for a whole answer; returns its status, or
 * 0 when none came. The error code of its body, if any, is in *@code. */
guint
raw_client_wait_answer (RawClient  *client,
                        guint       milliseconds,
                        char      **code)
{
  const char *text = client->received->str;
  const char *body;
  guint64 status = 0;

  if (code != NULL)
    *code = NULL;

  if (!wait_for (raw_has_answer, client, milliseconds) ||
      !g_str_has_prefix (client->received->str, "HTTP/1.1 "))
    return 0;

  text = client->received->str;
  {
    char digits[4] = { text[9], text[10], text[11], '\0' };

    g_assert_true (g_ascii_string_to_unsigned (digits, 10, 100, 599, &status, NULL));
  }
  body = strstr (text, "\r\n\r\n") + 4;

  if (code != NULL && body[0] == '{')
    {
      g_autoptr(JsonNode) root = json_from_string (body, NULL);
      JsonObject *error = NULL;

      if (root != NULL && JSON_NODE_HOLDS_OBJECT (root))
        error = json_object_get_object_member (json_node_get_object (root), "error");
      if (error != NULL)
        *code = g_strdup (json_object_get_string_member (error, "code"));
    }

  return status;
}

/* Forgets what was received so far: the next answer is read afresh. */
void
raw_client_forget (RawClient *client)
{
  g_string_truncate (client->received, 0);
}

const char *
raw_client_get_received (RawClient *client)
{
  return client->received->str;
}

/* Stops the program and returns what it wrote on stderr. */
char *
fixture_stop_and_read_stderr (Fixture *fixture)
{
  g_autoptr(GInputStream) err = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GByteArray) bytes = g_byte_array_new ();
  guint8 buffer[4096];
  gssize n;

  g_assert_nonnull (fixture->process);
  err = g_object_ref (g_subprocess_get_stderr_pipe (fixture->process));
  fixture_stop (fixture);

  while ((n = g_input_stream_read (err, buffer, sizeof buffer, NULL, &error)) > 0)
    g_byte_array_append (bytes, buffer, n);
  g_assert_no_error (error);
  g_byte_array_append (bytes, (const guint8 *)"", 1);

  return (char *)g_byte_array_free (g_steal_pointer (&bytes), FALSE);
}
