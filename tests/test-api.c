/* test-api.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * The local HTTP API, over real HTTP on 127.0.0.1: most tests start the
 * real `kaged --headless` (no display, a temporary data folder and token
 * file) against a fake provider served by this process; a few drive the
 * in-process KagedApiServer where they need to look inside.
 */

#include "config.h"

#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>
#include <libsoup/soup.h>
#include <sqlite3.h>

#include "kaged-api-server.h"
#include "kaged-api-token.h"
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-session-manager.h"
#include "kaged-store.h"

#define WAIT_SECONDS 15

typedef struct
{
  char  *name;
  JsonNode *data;
} Event;

typedef struct
{
  SoupMessage      *msg;
  GCancellable     *cancellable;
  GDataInputStream *lines;
  GPtrArray        *events;     /* Event */
  char             *name;       /* of the event being read */
  GString          *data;
  guint             n_comments;
  guint             wanted_comments;
  guint             ended : 1;
} EventClient;

typedef struct
{
  char            *dir;
  char            *data_dir;
  char            *config_dir;
  char            *token_path;
  char            *token;

  KagedFakeServer *fake;
  char            *fake_url;

  GSubprocess     *process;
  GDataInputStream *process_out;
  GString         *process_output;
  guint            port;
  gboolean         exited;

  /* In-process server tests */
  KagedCore           *core;
  KagedApiServer      *server;

  SoupSession     *http;
} Fixture;

typedef struct
{
  guint               status;
  JsonNode           *root;
  SoupMessageHeaders *headers;
} Response;

static void
response_free (Response *response)
{
  g_clear_pointer (&response->root, json_node_unref);
  g_clear_pointer (&response->headers, soup_message_headers_unref);
  g_free (response);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Response, response_free)

/* ------------------------------------------------------------------------ */

static gboolean
timeout_cb (gpointer user_data)
{
  gboolean *timed_out = user_data;

  *timed_out = TRUE;
  return G_SOURCE_REMOVE;
}

typedef gboolean (*Predicate) (gpointer data);

static void
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

static void
remove_tree (const char *path)
{
  g_autoptr(GDir) dir = NULL;
  const char *name;

  if (!g_file_test (path, G_FILE_TEST_IS_DIR) || g_file_test (path, G_FILE_TEST_IS_SYMLINK))
    {
      g_unlink (path);
      return;
    }

  dir = g_dir_open (path, 0, NULL);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);

      remove_tree (child);
    }
  g_rmdir (path);
}

/* ------------------------------------------------------------------------
 * Fixture
 * ------------------------------------------------------------------------ */

static void
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

static gboolean
flag_set (gpointer data)
{
  return *(gboolean *)data;
}

static void
fixture_wait_exit (Fixture *fixture)
{
  wait_until (process_gone, fixture);
}

static void
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

static void
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

  remove_tree (fixture->dir);
  g_clear_pointer (&fixture->dir, g_free);
  g_clear_pointer (&fixture->data_dir, g_free);
  g_clear_pointer (&fixture->config_dir, g_free);
  g_clear_pointer (&fixture->token_path, g_free);
  g_clear_pointer (&fixture->token, g_free);
}

static void
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

static const char *
kaged_binary (void)
{
  const char *path = g_getenv ("KAGED_BINARY");

  g_assert_nonnull (path);
  return path;
}

static GSubprocessLauncher *
new_launcher (Fixture *fixture)
{
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
static void
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

static void
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
static int
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

static SoupMessage *
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

static Response *
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

static Response *
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

static JsonObject *
response_object (Response *response)
{
  g_assert_nonnull (response->root);
  g_assert_true (JSON_NODE_HOLDS_OBJECT (response->root));

  return json_node_get_object (response->root);
}

static void
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

static gint64
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

static JsonObject *
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

static JsonArray *
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
static char *
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

static JsonObject *
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

static void
event_free (Event *event)
{
  g_free (event->name);
  g_clear_pointer (&event->data, json_node_unref);
  g_free (event);
}

static void
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

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EventClient, event_client_free)

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

static EventClient *
open_events (Fixture *fixture,
             gint64   session_id)
{
  g_autofree char *path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/events",
                                           session_id);
  EventClient *client = g_new0 (EventClient, 1);
  Opened opened = { NULL, NULL, FALSE };
  g_autoptr(GInputStream) stream = NULL;

  client->msg = new_message (fixture, "GET", path);
  client->cancellable = g_cancellable_new ();
  client->events = g_ptr_array_new_with_free_func ((GDestroyNotify)event_free);
  client->data = g_string_new (NULL);

  soup_session_send_async (fixture->http, client->msg, G_PRIORITY_DEFAULT,
                           client->cancellable, events_opened_cb, &opened);
  wait_until (flag_set, &opened.done);
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
  while (client->n_comments == 0)
    g_main_context_iteration (NULL, TRUE);

  return client;
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
static JsonObject *
wait_event (EventClient *client,
            const char  *name,
            gint64       run_id)
{
  EventWait wait = { client, name, run_id, 0, NULL };

  wait_until (event_found, &wait);

  return json_node_get_object (wait.found->data);
}

static guint
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

static guint
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
 * The full flow
 * ------------------------------------------------------------------------ */

static void
test_post_events_messages (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(Response) created = NULL;
  g_autoptr(Response) sessions = NULL;
  g_autoptr(Response) session = NULL;
  g_autoptr(EventClient) events = NULL;
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(JsonObject) run = NULL;
  g_autoptr(JsonArray) messages = NULL;
  g_autoptr(JsonArray) page = NULL;
  g_autoptr(GString) streamed = g_string_new (NULL);
  g_autofree char *page_query = NULL;
  JsonObject *finished;
  JsonObject *operator;
  JsonObject *reply;
  JsonArray *attempts;
  gint64 session_id;
  gint64 run_id;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"Paris is the capital of France.\", "
                        "\"chunks\": 6, \"delay_ms\": 20, "
                        "\"usage\": {\"input_tokens\": 11, \"output_tokens\": 7}}]");
  fixture_start (fixture);

  created = request (fixture, "POST", "/api/v1/sessions", "{\"title\": \"Geography\"}");
  g_assert_cmpuint (created->status, ==, SOUP_STATUS_CREATED);
  session_id = json_object_get_int_member (response_object (created), "id");
  g_assert_cmpint (session_id, >, 0);
  {
    g_autofree char *location = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT,
                                                 session_id);

    g_assert_cmpstr (soup_message_headers_get_one (created->headers, "Location"), ==, location);
  }
  g_assert_cmpint (json_object_get_int_member (response_object (created), "created_at"), >,
                   G_GINT64_CONSTANT (1600000000000));

  sessions = request (fixture, "GET", "/api/v1/sessions", NULL);
  g_assert_cmpuint (sessions->status, ==, SOUP_STATUS_OK);
  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (response_object (sessions),
                                                                         "sessions")), ==, 1);

  events = open_events (fixture, session_id);

  receipt = post_message (fixture, session_id, "What is the capital of France?");
  g_assert_cmpstr (json_object_get_string_member (receipt, "status"), ==, "dispatched");
  run_id = json_object_get_int_member (receipt, "run_id");

  finished = wait_event (events, "run.finished", run_id);
  g_assert_cmpstr (json_object_get_string_member (finished, "status"), ==, "succeeded");
  g_assert_true (json_object_get_null_member (finished, "retry"));

  /* Queued, started, the deltas, then finished, in that order. */
  g_assert_cmpuint (event_index (events, "run.queued", run_id), <,
                    event_index (events, "run.started", run_id));
  g_assert_cmpuint (event_index (events, "run.started", run_id), <,
                    event_index (events, "message.delta", run_id));
  g_assert_cmpuint (event_index (events, "message.delta", run_id), <,
                    event_index (events, "run.finished", run_id));
  g_assert_cmpuint (count_events (events, "message.delta", run_id), >=, 1);
  for (guint i = 0; i < events->events->len; i++)
    {
      Event *event = g_ptr_array_index (events->events, i);

      if (g_str_equal (event->name, "message.delta"))
        g_string_append (streamed, json_object_get_string_member (json_node_get_object (event->data),
                                                                  "text"));
    }
  g_assert_cmpstr (streamed->str, ==, "Paris is the capital of France.");

  messages = list_messages (fixture, session_id, NULL);
  g_assert_cmpuint (json_array_get_length (messages), ==, 2);
  operator = json_array_get_object_element (messages, 0);
  reply = json_array_get_object_element (messages, 1);
  g_assert_cmpint (json_object_get_int_member (operator, "id"), ==,
                   json_object_get_int_member (receipt, "message_id"));
  g_assert_cmpint (json_object_get_int_member (operator, "session_id"), ==, session_id);
  g_assert_cmpstr (json_object_get_string_member (operator, "role"), ==, "operator");
  g_assert_cmpstr (json_object_get_string_member (operator, "content"), ==,
                   "What is the capital of France?");
  g_assert_true (json_object_get_null_member (operator, "run_id"));
  g_assert_false (json_object_get_boolean_member (operator, "superseded"));
  g_assert_true (json_object_get_null_member (operator, "retry"));
  g_assert_cmpstr (json_object_get_string_member (reply, "role"), ==, "agent");
  g_assert_cmpstr (json_object_get_string_member (reply, "status"), ==, "complete");
  g_assert_cmpstr (json_object_get_string_member (reply, "content"), ==,
                   "Paris is the capital of France.");
  g_assert_cmpint (json_object_get_int_member (reply, "run_id"), ==, run_id);
  g_assert_true (json_object_get_null_member (reply, "error_message"));
  g_assert_cmpint (json_object_get_int_member (reply, "created_at"), >=,
                   json_object_get_int_member (operator, "created_at"));

  /* Paging: one message after the operator's. */
  page_query = g_strdup_printf ("?after=%" G_GINT64_FORMAT "&limit=1",
                                json_object_get_int_member (operator, "id"));
  page = list_messages (fixture, session_id, page_query);
  g_assert_cmpuint (json_array_get_length (page), ==, 1);
  g_assert_cmpint (json_object_get_int_member (json_array_get_object_element (page, 0), "id"), ==,
                   json_object_get_int_member (reply, "id"));

  run = get_run (fixture, session_id, run_id);
  g_assert_cmpstr (json_object_get_string_member (run, "status"), ==, "succeeded");
  g_assert_cmpint (json_object_get_int_member (run, "anchor_message_id"), ==,
                   json_object_get_int_member (operator, "id"));
  g_assert_cmpint (json_object_get_int_member (json_object_get_object_member (run, "usage"),
                                               "input_tokens"), ==, 11);
  g_assert_cmpint (json_object_get_int_member (json_object_get_object_member (run, "usage"),
                                               "output_tokens"), ==, 7);
  g_assert_cmpint (json_object_get_int_member (run, "started_at"), <=,
                   json_object_get_int_member (run, "finished_at"));
  attempts = json_object_get_array_member (run, "attempts");
  g_assert_nonnull (attempts);

  /* The session is idle again. */
  {
    g_autofree char *path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT, session_id);

    session = request (fixture, "GET", path, NULL);
    g_assert_cmpuint (session->status, ==, SOUP_STATUS_OK);
    g_assert_cmpstr (json_object_get_string_member (response_object (session), "state"), ==,
                     "idle");
    g_assert_cmpstr (json_object_get_string_member (response_object (session), "title"), ==,
                     "Geography");
  }

  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->fake, NULL), ==, 1);
}

/* A conversation made and spoken to over the API, with no window
 * anywhere, takes its title from its first message. */
static void
test_title_from_first_message (Fixture       *fixture,
                               gconstpointer  data)
{
  g_autoptr(Response) created = NULL;
  g_autoptr(Response) session = NULL;
  g_autoptr(JsonObject) receipt = NULL;
  g_autofree char *path = NULL;
  JsonObject *object;
  gint64 session_id;

  fixture_set_scenario (fixture, "[{\"kind\": \"openai\", \"text\": \"Knead it.\"}]");
  fixture_start (fixture);

  created = request (fixture, "POST", "/api/v1/sessions", "{}");
  g_assert_cmpuint (created->status, ==, SOUP_STATUS_CREATED);
  object = response_object (created);
  session_id = json_object_get_int_member (object, "id");
  g_assert_true (json_object_get_null_member (object, "title") ||
                 g_strcmp0 (json_object_get_string_member (object, "title"), "") == 0);

  receipt = post_message (fixture, session_id, "How do I knead dough?\nIt is sticky.");

  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT, session_id);
  session = request (fixture, "GET", path, NULL);
  g_assert_cmpuint (session->status, ==, SOUP_STATUS_OK);
  g_assert_cmpstr (json_object_get_string_member (response_object (session), "title"), ==,
                   "How do I knead dough?");
}

static void
test_queue_behind_active_run (Fixture       *fixture,
                              gconstpointer  data)
{
  g_autoptr(EventClient) events = NULL;
  g_autoptr(JsonObject) first = NULL;
  g_autoptr(JsonObject) second = NULL;
  gint64 session_id;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"One two three\", \"chunks\": 3, "
                        "\"delay_ms\": 40}]");
  fixture_start (fixture);
  session_id = create_session (fixture, "Queue");
  events = open_events (fixture, session_id);

  first = post_message (fixture, session_id, "First");
  second = post_message (fixture, session_id, "Second");
  g_assert_cmpstr (json_object_get_string_member (first, "status"), ==, "dispatched");
  g_assert_cmpstr (json_object_get_string_member (second, "status"), ==, "queued");

  wait_event (events, "run.finished", json_object_get_int_member (second, "run_id"));
  g_assert_cmpuint (event_index (events, "run.finished",
                                 json_object_get_int_member (first, "run_id")), <,
                    event_index (events, "run.started",
                                 json_object_get_int_member (second, "run_id")));
}

/* ------------------------------------------------------------------------
 * Regenerate
 * ------------------------------------------------------------------------ */

static void
test_regenerate (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autoptr(EventClient) events = NULL;
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(JsonArray) before = NULL;
  g_autoptr(JsonArray) current = NULL;
  g_autoptr(JsonArray) everything = NULL;
  g_autoptr(Response) again = NULL;
  g_autofree char *path = NULL;
  JsonObject *regenerated;
  JsonArray *superseded;
  gint64 session_id;
  gint64 operator_id;
  gint64 old_reply_id;
  gint64 new_run_id;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"First answer\", \"chunks\": 2},"
                        " {\"kind\": \"openai\", \"text\": \"Second answer\", \"chunks\": 2}]");
  fixture_start (fixture);
  session_id = create_session (fixture, "Regenerate");
  events = open_events (fixture, session_id);

  receipt = post_message (fixture, session_id, "Tell me something");
  operator_id = json_object_get_int_member (receipt, "message_id");
  wait_event (events, "run.finished", json_object_get_int_member (receipt, "run_id"));

  before = list_messages (fixture, session_id, NULL);
  g_assert_cmpuint (json_array_get_length (before), ==, 2);
  old_reply_id = json_object_get_int_member (json_array_get_object_element (before, 1), "id");

  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages/%" G_GINT64_FORMAT
                          "/regenerate", session_id, operator_id);
  again = request (fixture, "POST", path, NULL);
  g_assert_cmpuint (again->status, ==, SOUP_STATUS_ACCEPTED);
  regenerated = response_object (again);
  g_assert_cmpint (json_object_get_int_member (regenerated, "session_id"), ==, session_id);
  g_assert_cmpint (json_object_get_int_member (regenerated, "message_id"), ==, operator_id);
  g_assert_cmpstr (json_object_get_string_member (regenerated, "status"), ==, "dispatched");
  new_run_id = json_object_get_int_member (regenerated, "run_id");
  g_assert_cmpint (new_run_id, !=, json_object_get_int_member (receipt, "run_id"));
  superseded = json_object_get_array_member (regenerated, "superseded_message_ids");
  g_assert_cmpuint (json_array_get_length (superseded), ==, 1);
  g_assert_cmpint (json_array_get_int_element (superseded, 0), ==, old_reply_id);

  wait_event (events, "run.finished", new_run_id);

  current = list_messages (fixture, session_id, NULL);
  g_assert_cmpuint (json_array_get_length (current), ==, 2);
  g_assert_cmpint (json_object_get_int_member (json_array_get_object_element (current, 0), "id"),
                   ==, operator_id);
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (current, 1),
                                                  "content"), ==, "Second answer");

  everything = list_messages (fixture, session_id, "?include_superseded=true");
  g_assert_cmpuint (json_array_get_length (everything), ==, 3);
  for (guint i = 0; i < json_array_get_length (everything); i++)
    {
      JsonObject *message = json_array_get_object_element (everything, i);
      gboolean is_old = json_object_get_int_member (message, "id") == old_reply_id;

      g_assert_cmpint (json_object_get_boolean_member (message, "superseded"), ==, is_old);
      if (is_old)
        g_assert_cmpstr (json_object_get_string_member (message, "content"), ==, "First answer");
    }
}

/* The contents of listed messages, separated by spaces. */
static char *
listed_contents (JsonArray *messages)
{
  GString *out = g_string_new (NULL);

  for (guint i = 0; i < json_array_get_length (messages); i++)
    {
      JsonObject *message = json_array_get_object_element (messages, i);

      if (i > 0)
        g_string_append_c (out, ' ');
      g_string_append (out, json_object_get_string_member (message, "content"));
    }

  return g_string_free (out, FALSE);
}

static gint64
post_and_finish (Fixture     *fixture,
                 EventClient *events,
                 gint64       session_id,
                 const char  *content)
{
  g_autoptr(JsonObject) receipt = post_message (fixture, session_id, content);

  wait_event (events, "run.finished", json_object_get_int_member (receipt, "run_id"));

  return json_object_get_int_member (receipt, "message_id");
}

static gboolean
page_has_more (Fixture    *fixture,
               gint64      session_id,
               const char *query)
{
  g_autofree char *path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages%s",
                                           session_id, query);
  g_autoptr(Response) response = request (fixture, "GET", path, NULL);

  g_assert_cmpuint (response->status, ==, SOUP_STATUS_OK);

  return json_object_get_boolean_member (response_object (response), "has_more");
}

/* A regenerated reply stands with its question, before later turns whose
 * messages were written before it, and paging follows that order. */
static void
test_list_after_regenerate (Fixture       *fixture,
                            gconstpointer  data)
{
  g_autoptr(EventClient) events = NULL;
  g_autoptr(JsonArray) before = NULL;
  g_autoptr(JsonArray) current = NULL;
  g_autoptr(JsonArray) everything = NULL;
  g_autoptr(JsonArray) page = NULL;
  g_autoptr(Response) again = NULL;
  g_autoptr(Response) unknown = NULL;
  g_autofree char *path = NULL;
  g_autofree char *listed = NULL;
  g_autofree char *query = NULL;
  gint64 session_id;
  gint64 q1_id;
  gint64 old_a1_id;
  gint64 q2_id;
  gint64 new_run_id;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"A1\"},"
                        " {\"kind\": \"openai\", \"text\": \"A2\"},"
                        " {\"kind\": \"openai\", \"text\": \"A1'\"},"
                        " {\"kind\": \"openai\", \"text\": \"A3\"}]");
  fixture_start (fixture);
  session_id = create_session (fixture, "Order");
  events = open_events (fixture, session_id);

  q1_id = post_and_finish (fixture, events, session_id, "Q1");
  q2_id = post_and_finish (fixture, events, session_id, "Q2");
  before = list_messages (fixture, session_id, NULL);
  listed = listed_contents (before);
  g_assert_cmpstr (listed, ==, "Q1 A1 Q2 A2");
  old_a1_id = json_object_get_int_member (json_array_get_object_element (before, 1), "id");

  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages/%" G_GINT64_FORMAT
                          "/regenerate", session_id, q1_id);
  again = request (fixture, "POST", path, NULL);
  g_assert_cmpuint (again->status, ==, SOUP_STATUS_ACCEPTED);
  new_run_id = json_object_get_int_member (response_object (again), "run_id");
  wait_event (events, "run.finished", new_run_id);
  post_and_finish (fixture, events, session_id, "Q3");

  current = list_messages (fixture, session_id, NULL);
  g_clear_pointer (&listed, g_free);
  listed = listed_contents (current);
  g_assert_cmpstr (listed, ==, "Q1 A1' Q3 A3");

  everything = list_messages (fixture, session_id, "?include_superseded=true");
  g_clear_pointer (&listed, g_free);
  listed = listed_contents (everything);
  g_assert_cmpstr (listed, ==, "Q1 A1 A1' Q2 A2 Q3 A3");

  /* Pages of the current messages, from a current and from a superseded
   * message. */
  query = g_strdup_printf ("?after=%" G_GINT64_FORMAT "&limit=2", q1_id);
  page = list_messages (fixture, session_id, query);
  g_clear_pointer (&listed, g_free);
  listed = listed_contents (page);
  g_assert_cmpstr (listed, ==, "A1' Q3");
  g_assert_true (page_has_more (fixture, session_id, query));

  g_clear_pointer (&query, g_free);
  g_clear_pointer (&page, json_array_unref);
  query = g_strdup_printf ("?after=%" G_GINT64_FORMAT "&limit=3", old_a1_id);
  page = list_messages (fixture, session_id, query);
  g_clear_pointer (&listed, g_free);
  listed = listed_contents (page);
  g_assert_cmpstr (listed, ==, "A1' Q3 A3");
  g_assert_false (page_has_more (fixture, session_id, query));

  g_clear_pointer (&query, g_free);
  g_clear_pointer (&page, json_array_unref);
  query = g_strdup_printf ("?after=%" G_GINT64_FORMAT, q2_id);
  page = list_messages (fixture, session_id, query);
  g_clear_pointer (&listed, g_free);
  listed = listed_contents (page);
  g_assert_cmpstr (listed, ==, "Q3 A3");

  /* And with the superseded ones. */
  g_clear_pointer (&query, g_free);
  g_clear_pointer (&page, json_array_unref);
  query = g_strdup_printf ("?include_superseded=true&after=%" G_GINT64_FORMAT "&limit=3",
                           old_a1_id);
  page = list_messages (fixture, session_id, query);
  g_clear_pointer (&listed, g_free);
  listed = listed_contents (page);
  g_assert_cmpstr (listed, ==, "A1' Q2 A2");
  g_assert_true (page_has_more (fixture, session_id, query));

  /* After a message the session does not have. */
  g_clear_pointer (&path, g_free);
  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages?after=999999",
                          session_id);
  unknown = request (fixture, "GET", path, NULL);
  g_assert_cmpuint (unknown->status, ==, SOUP_STATUS_NOT_FOUND);
}

static void
test_edit (Fixture       *fixture,
           gconstpointer  data)
{
  g_autoptr(EventClient) events = NULL;
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(JsonArray) before = NULL;
  g_autoptr(JsonArray) current = NULL;
  g_autoptr(Response) edited = NULL;
  g_autoptr(Response) refused = NULL;
  g_autofree char *path = NULL;
  g_autofree char *reply_path = NULL;
  JsonObject *edit;
  JsonArray *superseded;
  gint64 session_id;
  gint64 operator_id;
  gint64 reply_id;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"About Porto\", \"chunks\": 2},"
                        " {\"kind\": \"openai\", \"text\": \"About Lisbon\", \"chunks\": 2}]");
  fixture_start (fixture);
  session_id = create_session (fixture, "Edit");
  events = open_events (fixture, session_id);

  receipt = post_message (fixture, session_id, "Tell me about Porto");
  operator_id = json_object_get_int_member (receipt, "message_id");
  wait_event (events, "run.finished", json_object_get_int_member (receipt, "run_id"));
  before = list_messages (fixture, session_id, NULL);
  reply_id = json_object_get_int_member (json_array_get_object_element (before, 1), "id");

  /* Only an operator message can be edited, and only with content. */
  reply_path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages/%" G_GINT64_FORMAT
                                "/edit", session_id, reply_id);
  refused = request (fixture, "POST", reply_path, "{\"content\": \"x\"}");
  g_assert_cmpuint (refused->status, ==, SOUP_STATUS_CONFLICT);
  g_clear_pointer (&refused, response_free);
  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages/%" G_GINT64_FORMAT
                          "/edit", session_id, operator_id);
  refused = request (fixture, "POST", path, "{}");
  g_assert_cmpuint (refused->status, ==, SOUP_STATUS_BAD_REQUEST);

  edited = request (fixture, "POST", path, "{\"content\": \"Tell me about Lisbon\"}");
  g_assert_cmpuint (edited->status, ==, SOUP_STATUS_ACCEPTED);
  edit = response_object (edited);
  g_assert_cmpint (json_object_get_int_member (edit, "session_id"), ==, session_id);
  g_assert_cmpint (json_object_get_int_member (edit, "message_id"), >, reply_id);
  superseded = json_object_get_array_member (edit, "superseded_message_ids");
  g_assert_cmpuint (json_array_get_length (superseded), ==, 2);
  g_assert_cmpint (json_array_get_int_element (superseded, 0), ==, operator_id);
  g_assert_cmpint (json_array_get_int_element (superseded, 1), ==, reply_id);
  wait_event (events, "run.finished", json_object_get_int_member (edit, "run_id"));

  current = list_messages (fixture, session_id, NULL);
  g_assert_cmpuint (json_array_get_length (current), ==, 2);
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (current, 0),
                                                  "content"), ==, "Tell me about Lisbon");
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (current, 1),
                                                  "content"), ==, "About Lisbon");
}

/* ------------------------------------------------------------------------
 * Cancel
 * ------------------------------------------------------------------------ */

static void
test_cancel (Fixture       *fixture,
             gconstpointer  data)
{
  g_autoptr(EventClient) events = NULL;
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(Response) cancelled = NULL;
  g_autoptr(Response) again = NULL;
  g_autoptr(JsonArray) messages = NULL;
  g_autofree char *path = NULL;
  JsonObject *finished;
  JsonObject *reply;
  gint64 session_id;
  gint64 run_id;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"This reply goes on and on and on\", "
                        "\"chunks\": 40, \"delay_ms\": 50}]");
  fixture_start (fixture);
  session_id = create_session (fixture, "Cancel");
  events = open_events (fixture, session_id);

  receipt = post_message (fixture, session_id, "Go on and on");
  run_id = json_object_get_int_member (receipt, "run_id");
  wait_event (events, "message.delta", run_id);

  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/runs/%" G_GINT64_FORMAT
                          "/cancel", session_id, run_id);
  cancelled = request (fixture, "POST", path, NULL);
  g_assert_cmpuint (cancelled->status, ==, SOUP_STATUS_OK);
  g_assert_cmpint (json_object_get_int_member (response_object (cancelled), "id"), ==, run_id);
  g_assert_cmpstr (json_object_get_string_member (response_object (cancelled), "status"), ==,
                   "cancelled");
  g_assert_true (json_object_get_null_member (response_object (cancelled), "retry"));

  finished = wait_event (events, "run.finished", run_id);
  g_assert_cmpstr (json_object_get_string_member (finished, "status"), ==, "cancelled");

  messages = list_messages (fixture, session_id, NULL);
  reply = json_array_get_object_element (messages, 1);
  g_assert_cmpstr (json_object_get_string_member (reply, "status"), ==, "cancelled");
  g_assert_cmpstr (json_object_get_string_member (reply, "content"), !=, "");

  /* A finished run cannot be cancelled again. */
  again = request (fixture, "POST", path, NULL);
  assert_error (again, SOUP_STATUS_CONFLICT, "run_finished");
}

/* ------------------------------------------------------------------------
 * A failure's classification on the wire
 * ------------------------------------------------------------------------ */

static void
test_overloaded_classification (Fixture       *fixture,
                                gconstpointer  data)
{
  g_autoptr(EventClient) events = NULL;
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(JsonObject) run = NULL;
  g_autoptr(JsonArray) messages = NULL;
  JsonObject *finished;
  JsonObject *retrying;
  JsonObject *retry;
  JsonObject *reply;
  JsonArray *attempts;
  gint64 session_id;
  gint64 run_id;

  fixture_set_scenario (fixture,
                        "[{\"status\": 529, \"headers\": {\"retry-after-ms\": \"10\"}, "
                        "  \"body\": {\"type\": \"error\", \"error\": "
                        "    {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}}]");
  fixture_start (fixture);
  session_id = create_session (fixture, "Overloaded");
  events = open_events (fixture, session_id);

  receipt = post_message (fixture, session_id, "Are you there?");
  run_id = json_object_get_int_member (receipt, "run_id");

  finished = wait_event (events, "run.finished", run_id);
  g_assert_cmpstr (json_object_get_string_member (finished, "status"), ==, "failed");
  retry = json_object_get_object_member (finished, "retry");
  g_assert_nonnull (retry);
  g_assert_true (json_object_get_boolean_member (retry, "retryable"));
  g_assert_cmpstr (json_object_get_string_member (retry, "retry_class"), ==, "overloaded");

  /* Tier 1 tried three times, waiting what the server advised. */
  g_assert_cmpuint (count_events (events, "run.retrying", run_id), ==, 2);
  retrying = wait_event (events, "run.retrying", run_id);
  g_assert_cmpint (json_object_get_int_member (retrying, "attempt"), ==, 1);
  g_assert_cmpint (json_object_get_int_member (retrying, "wait_ms"), ==, 10);
  g_assert_cmpstr (json_object_get_string_member (json_object_get_object_member (retrying,
                                                                                 "failed_attempt"),
                                                  "wait_source"), ==, "retry-after-ms");
  g_assert_cmpint (json_object_get_int_member (json_object_get_object_member (retrying,
                                                                              "failed_attempt"),
                                               "http_status"), ==, 529);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->fake, NULL), ==, 3);

  run = get_run (fixture, session_id, run_id);
  g_assert_cmpstr (json_object_get_string_member (run, "status"), ==, "failed");
  g_assert_cmpint (json_object_get_int_member (run, "http_status"), ==, 529);
  g_assert_cmpstr (json_object_get_string_member (json_object_get_object_member (run, "retry"),
                                                  "retry_class"), ==, "overloaded");
  attempts = json_object_get_array_member (run, "attempts");
  g_assert_cmpuint (json_array_get_length (attempts), ==, 3);
  for (guint i = 0; i < 3; i++)
    {
      JsonObject *attempt = json_array_get_object_element (attempts, i);

      g_assert_cmpint (json_object_get_int_member (attempt, "http_status"), ==, 529);
      g_assert_cmpstr (json_object_get_string_member (attempt, "retry_class"), ==, "overloaded");
      g_assert_cmpint (json_object_get_int_member (attempt, "time"), >, 0);
    }

  messages = list_messages (fixture, session_id, NULL);
  reply = json_array_get_object_element (messages, 1);
  g_assert_cmpstr (json_object_get_string_member (reply, "status"), ==, "failed");
  g_assert_cmpstr (json_object_get_string_member (reply, "error_message"), !=, "");
  retry = json_object_get_object_member (reply, "retry");
  g_assert_nonnull (retry);
  g_assert_true (json_object_get_boolean_member (retry, "retryable"));
  g_assert_cmpstr (json_object_get_string_member (retry, "retry_class"), ==, "overloaded");
  g_assert_true (json_object_has_member (retry, "retry_after_until"));

  /* Without --auto-retry, Tier 2 is the client's to drive: nothing is
   * armed, and there is no retry to cancel or to hurry. */
  {
    g_autofree char *retry_path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/retry",
                                                   session_id);
    g_autofree char *now_path = g_strconcat (retry_path, "/now", NULL);
    g_autofree char *cancel_path = g_strconcat (retry_path, "/cancel", NULL);
    g_autoptr(Response) state = request (fixture, "GET", retry_path, NULL);
    g_autoptr(Response) now = request (fixture, "POST", now_path, NULL);
    g_autoptr(Response) cancel = request (fixture, "POST", cancel_path, NULL);
    g_autoptr(Response) wrong_method = request (fixture, "POST", retry_path, NULL);

    g_assert_cmpuint (state->status, ==, SOUP_STATUS_OK);
    g_assert_cmpstr (json_object_get_string_member (response_object (state), "state"), ==, "idle");
    g_assert_true (json_object_get_null_member (response_object (state), "next_at"));
    assert_error (now, SOUP_STATUS_CONFLICT, "retry_off");
    assert_error (cancel, SOUP_STATUS_CONFLICT, "retry_off");
    g_assert_cmpuint (wrong_method->status, ==, SOUP_STATUS_METHOD_NOT_ALLOWED);
    g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->fake, NULL), ==, 3);
  }
}

/* ------------------------------------------------------------------------
 * Errors change nothing
 * ------------------------------------------------------------------------ */

typedef struct
{
  const char *method;
  const char *path;     /* %1$ld: the session, %2$ld: its operator message, … */
  const char *body;
  guint       status;
  const char *code;
} BadRequest;

static void
test_bad_requests (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(EventClient) events = NULL;
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(JsonObject) other_receipt = NULL;
  g_autoptr(JsonArray) messages = NULL;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  gint64 session_id;
  gint64 other_id;
  gint64 operator_id;
  gint64 reply_id;
  gint64 run_id;
  gint64 other_operator_id;
  gint64 other_run_id;

  fixture_set_scenario (fixture, "[{\"kind\": \"openai\", \"text\": \"Fine\"}]");
  fixture_start (fixture);

  session_id = create_session (fixture, "Main");
  other_id = create_session (fixture, "Other");
  events = open_events (fixture, session_id);

  receipt = post_message (fixture, session_id, "Hello");
  operator_id = json_object_get_int_member (receipt, "message_id");
  run_id = json_object_get_int_member (receipt, "run_id");
  wait_event (events, "run.finished", run_id);
  messages = list_messages (fixture, session_id, NULL);
  reply_id = json_object_get_int_member (json_array_get_object_element (messages, 1), "id");

  other_receipt = post_message (fixture, other_id, "Elsewhere");
  other_operator_id = json_object_get_int_member (other_receipt, "message_id");
  other_run_id = json_object_get_int_member (other_receipt, "run_id");
  {
    g_autoptr(EventClient) other_events = open_events (fixture, other_id);
    g_autoptr(JsonObject) other_run = get_run (fixture, other_id, other_run_id);

    if (!g_str_equal (json_object_get_string_member (other_run, "status"), "succeeded"))
      wait_event (other_events, "run.finished", other_run_id);
  }

  before = snapshot (fixture);

  {
    g_autofree char *s = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT, session_id);
    g_autofree char *messages_path = g_strdup_printf ("%s/messages", s);
    g_autofree char *regenerate_reply = g_strdup_printf ("%s/messages/%" G_GINT64_FORMAT
                                                         "/regenerate", s, reply_id);
    g_autofree char *regenerate_other = g_strdup_printf ("%s/messages/%" G_GINT64_FORMAT
                                                         "/regenerate", s, other_operator_id);
    g_autofree char *regenerate_unknown = g_strdup_printf ("%s/messages/999999/regenerate", s);
    g_autofree char *regenerate_get = g_strdup_printf ("%s/messages/%" G_GINT64_FORMAT
                                                       "/regenerate", s, operator_id);
    g_autofree char *run_of_other = g_strdup_printf ("%s/runs/%" G_GINT64_FORMAT, s,
                                                     other_run_id);
    g_autofree char *cancel_finished = g_strdup_printf ("%s/runs/%" G_GINT64_FORMAT "/cancel",
                                                        s, run_id);
    g_autofree char *cancel_unknown = g_strdup_printf ("%s/runs/999999/cancel", s);
    g_autofree char *bad_paging = g_strdup_printf ("%s?limit=many", messages_path);
    g_autofree char *bad_flag = g_strdup_printf ("%s?include_superseded=perhaps", messages_path);
    const BadRequest cases[] = {
      { "POST", messages_path, "{\"content\": ", 400, "malformed_json" },
      { "POST", messages_path, "", 400, "malformed_json" },
      { "POST", messages_path, "[\"Hello\"]", 400, "invalid_request" },
      { "POST", messages_path, "{}", 400, "invalid_request" },
      { "POST", messages_path, "{\"content\": 42}", 400, "invalid_request" },
      { "POST", messages_path, "{\"content\": null}", 400, "invalid_request" },
      { "POST", messages_path, "{\"content\": \"\"}", 400, "empty_content" },
      { "POST", messages_path, "{\"content\": \" \\n\\t \"}", 400, "empty_content" },
      { "POST", messages_path, "{\"content\": \"caf\xe9\"}", 400, "invalid_utf8" },
      { "POST", "/api/v1/sessions", "{\"title\": 3}", 400, "invalid_request" },
      { "POST", "/api/v1/sessions", "{\"title\": ", 400, "malformed_json" },
      { "POST", "/api/v1/sessions/999999/messages", "{\"content\": \"Hi\"}", 404, "not_found" },
      { "GET", "/api/v1/sessions/999999", NULL, 404, "not_found" },
      { "GET", "/api/v1/sessions/999999/messages", NULL, 404, "not_found" },
      { "GET", "/api/v1/sessions/999999/events", NULL, 404, "not_found" },
      { "GET", "/api/v1/sessions/abc", NULL, 404, "not_found" },
      { "GET", "/api/v1/sessions/-1", NULL, 404, "not_found" },
      { "GET", "/api/v1/nothing", NULL, 404, "not_found" },
      { "GET", "/", NULL, 404, "not_found" },
      { "GET", run_of_other, NULL, 404, "not_found" },
      { "POST", regenerate_reply, NULL, 409, "invalid_anchor" },
      { "POST", regenerate_other, NULL, 404, "not_found" },
      { "POST", regenerate_unknown, NULL, 404, "not_found" },
      { "POST", regenerate_get, "{", 400, "malformed_json" },
      { "POST", cancel_finished, NULL, 409, "run_finished" },
      { "POST", cancel_unknown, NULL, 404, "not_found" },
      { "GET", bad_paging, NULL, 400, "invalid_parameter" },
      { "GET", bad_flag, NULL, 400, "invalid_parameter" },
      { "DELETE", s, NULL, 405, "method_not_allowed" },
      { "PUT", messages_path, "{\"content\": \"Hi\"}", 405, "method_not_allowed" },
      { "GET", regenerate_get, NULL, 405, "method_not_allowed" },
      { "DELETE", "/api/v1/sessions", NULL, 405, "method_not_allowed" },
    };

    for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
      {
        g_autoptr(Response) response = NULL;
        g_autofree char *shown = g_strescape (cases[i].body != NULL ? cases[i].body : "", NULL);

        g_test_message ("%s %s %s", cases[i].method, cases[i].path, shown);
        response = request (fixture, cases[i].method, cases[i].path, cases[i].body);
        assert_error (response, cases[i].status, cases[i].code);

        if (cases[i].status == 405)
          g_assert_nonnull (soup_message_headers_get_one (response->headers, "Allow"));
      }

    /* The Allow header names what is allowed. */
    {
      g_autoptr(Response) response = request (fixture, "DELETE", "/api/v1/sessions", NULL);

      g_assert_cmpstr (soup_message_headers_get_one (response->headers, "Allow"), ==,
                       "GET, POST");
    }
    {
      g_autoptr(Response) response = request (fixture, "GET", regenerate_get, NULL);

      g_assert_cmpstr (soup_message_headers_get_one (response->headers, "Allow"), ==, "POST");
    }

    /* None of that changed anything. */
    after = snapshot (fixture);
    g_assert_cmpstr (before, ==, after);

    /* Regenerating from a superseded operator message is a conflict too:
     * post a second message, then regenerate from the first, which
     * supersedes the second and its reply. */
    {
      g_autoptr(JsonObject) second = post_message (fixture, session_id, "And another thing");
      g_autoptr(Response) regenerated = NULL;
      g_autoptr(Response) from_superseded = NULL;
      g_autofree char *regenerate_second = NULL;
      JsonArray *superseded;
      gint64 new_run_id;

      wait_event (events, "run.finished", json_object_get_int_member (second, "run_id"));

      regenerated = request (fixture, "POST", regenerate_get, NULL);
      g_assert_cmpuint (regenerated->status, ==, SOUP_STATUS_ACCEPTED);
      superseded = json_object_get_array_member (response_object (regenerated),
                                                 "superseded_message_ids");
      g_assert_cmpuint (json_array_get_length (superseded), ==, 3);
      g_assert_cmpint (json_array_get_int_element (superseded, 1), ==,
                       json_object_get_int_member (second, "message_id"));
      new_run_id = json_object_get_int_member (response_object (regenerated), "run_id");
      wait_event (events, "run.finished", new_run_id);

      g_clear_pointer (&before, g_free);
      before = snapshot (fixture);

      regenerate_second = g_strdup_printf ("%s/messages/%" G_GINT64_FORMAT "/regenerate", s,
                                           json_object_get_int_member (second, "message_id"));
      from_superseded = request (fixture, "POST", regenerate_second, NULL);
      assert_error (from_superseded, SOUP_STATUS_CONFLICT, "invalid_anchor");
    }
  }

  g_clear_pointer (&after, g_free);
  after = snapshot (fixture);
  g_assert_cmpstr (before, ==, after);
}

static void
test_body_limits (Fixture       *fixture,
                  gconstpointer  data)
{
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  g_autofree char *path = NULL;
  gint64 session_id;

  fixture_start (fixture);
  session_id = create_session (fixture, "Limits");
  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages", session_id);
  before = snapshot (fixture);

  /* Over the body limit (2 MiB), announced by Content-Length. */
  {
    gsize size = 3 * 1024 * 1024;
    g_autofree char *body = g_malloc (size + 1);
    g_autoptr(Response) response = NULL;

    memset (body, 'a', size);
    memcpy (body, "{\"content\": \"", 13);
    memcpy (body + size - 2, "\"}", 2);
    body[size] = '\0';
    response = request (fixture, "POST", path, body);
    assert_error (response, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "payload_too_large");
  }

  /* Over the limit without a Content-Length: chunked. */
  {
    gsize size = 3 * 1024 * 1024;
    char *body = g_malloc (size);
    g_autoptr(GInputStream) stream = NULL;
    g_autoptr(SoupMessage) msg = new_message (fixture, "POST", path);
    g_autoptr(Response) response = NULL;

    memset (body, ' ', size);
    body[0] = '{';
    stream = g_memory_input_stream_new_from_data (body, size, g_free);
    soup_message_set_request_body (msg, "application/json", stream, -1);
    response = send_message (fixture, msg);
    assert_error (response, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "payload_too_large");
  }

  /* Under the body limit, over what one message may hold (1 MiB). */
  {
    gsize size = 1536 * 1024;
    g_autofree char *body = g_malloc (size + 1);
    g_autoptr(Response) response = NULL;

    memset (body, 'b', size);
    memcpy (body, "{\"content\": \"", 13);
    memcpy (body + size - 2, "\"}", 2);
    body[size] = '\0';
    response = request (fixture, "POST", path, body);
    assert_error (response, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "content_too_large");
  }

  /* The connection is still good for the next request. */
  after = snapshot (fixture);
  g_assert_cmpstr (before, ==, after);
}

/* ------------------------------------------------------------------------
 * Security
 * ------------------------------------------------------------------------ */

static void
test_unauthorized (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  g_autofree char *wrong = NULL;
  g_autofree char *prefix = NULL;
  const char *authorizations[5];

  fixture_start (fixture);
  create_session (fixture, "Secret");
  before = snapshot (fixture);

  /* A token one character off, a prefix of it, another scheme, none. */
  wrong = g_strdup (fixture->token);
  wrong[strlen (wrong) - 1] = wrong[strlen (wrong) - 1] == '0' ? '1' : '0';
  prefix = g_strndup (fixture->token, strlen (fixture->token) / 2);
  {
    g_autofree char *bearer_wrong = g_strdup_printf ("Bearer %s", wrong);
    g_autofree char *bearer_prefix = g_strdup_printf ("Bearer %s", prefix);
    g_autofree char *basic = g_strdup_printf ("Basic %s", fixture->token);

    authorizations[0] = bearer_wrong;
    authorizations[1] = bearer_prefix;
    authorizations[2] = basic;
    authorizations[3] = "Bearer ";
    authorizations[4] = NULL;

    for (guint i = 0; i < G_N_ELEMENTS (authorizations); i++)
      {
        const char *paths[] = { "/api/v1/sessions", "/api/v1/sessions/1/messages" };

        for (guint j = 0; j < G_N_ELEMENTS (paths); j++)
          {
            g_autoptr(SoupMessage) msg = new_message (fixture, "POST", paths[j]);
            g_autoptr(GBytes) body = g_bytes_new_static ("{\"content\": \"Hi\", \"title\": \"x\"}",
                                                         34);
            g_autoptr(Response) response = NULL;
            SoupMessageHeaders *headers = soup_message_get_request_headers (msg);

            if (authorizations[i] != NULL)
              soup_message_headers_replace (headers, "Authorization", authorizations[i]);
            else
              soup_message_headers_remove (headers, "Authorization");
            soup_message_set_request_body_from_bytes (msg, "application/json", body);

            response = send_message (fixture, msg);
            assert_error (response, SOUP_STATUS_UNAUTHORIZED, "unauthorized");
            g_assert_true (g_str_has_prefix (soup_message_headers_get_one (response->headers,
                                                                           "WWW-Authenticate"),
                                             "Bearer"));
          }
      }
  }

  /* A web page may not use the API, even with the token. */
  {
    g_autoptr(SoupMessage) msg = new_message (fixture, "POST", "/api/v1/sessions");
    g_autoptr(Response) response = NULL;

    soup_message_headers_replace (soup_message_get_request_headers (msg), "Origin",
                                  "http://example.com");
    response = send_message (fixture, msg);
    assert_error (response, SOUP_STATUS_FORBIDDEN, "forbidden_origin");
  }

  /* Nor a name that only resolves to this computer. */
  {
    g_autoptr(SoupMessage) msg = new_message (fixture, "POST", "/api/v1/sessions");
    g_autoptr(Response) response = NULL;

    soup_message_headers_replace (soup_message_get_request_headers (msg), "Host",
                                  "attacker.example:80");
    response = send_message (fixture, msg);
    assert_error (response, SOUP_STATUS_FORBIDDEN, "forbidden_host");
  }

  after = snapshot (fixture);
  g_assert_cmpstr (before, ==, after);
}

static void
test_token_file_created (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autofree char *path = g_build_filename (fixture->config_dir, "kaged", "api-token", NULL);
  g_autofree char *folder = g_path_get_dirname (path);
  g_autofree char *first = NULL;
  g_autofree char *second = NULL;
  GStatBuf st;

  fixture_start_full (fixture, FALSE, NULL);
  g_assert_true (strstr (fixture->process_output->str, "Listening on http://127.0.0.1:") != NULL);

  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0600);
  g_assert_cmpint (g_stat (folder, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0700);

  g_file_get_contents (path, &first, NULL, NULL);
  g_assert_nonnull (first);
  g_strstrip (first);
  g_assert_cmpuint (strlen (first), ==, KAGED_API_TOKEN_LENGTH);
  for (const char *p = first; *p != '\0'; p++)
    g_assert_true (g_ascii_isxdigit (*p));

  /* The token works, and the token is not printed. */
  fixture->token = g_strdup (first);
  create_session (fixture, "With the created token");
  g_assert_null (strstr (fixture->process_output->str, first));

  /* The next start reuses it. */
  fixture_stop (fixture);
  fixture_start_full (fixture, FALSE, NULL);
  g_file_get_contents (path, &second, NULL, NULL);
  g_strstrip (second);
  g_assert_cmpstr (first, ==, second);
  create_session (fixture, "Again");

  /* Two tokens made one after the other differ. */
  {
    g_autofree char *a = kaged_api_token_generate (NULL);
    g_autofree char *b = kaged_api_token_generate (NULL);

    g_assert_cmpstr (a, !=, b);
  }
}

static void
test_token_file_refused (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autofree char *err = NULL;
  g_autofree char *token_arg = g_strdup_printf ("--api-token-file=%s", fixture->token_path);
  g_autofree char *data_arg = g_strdup_printf ("--data-dir=%s", fixture->data_dir);
  const char *args[] = { "--headless", "--api-port=0", data_arg, token_arg, NULL };
  g_autofree char *db_path = g_build_filename (fixture->data_dir, "kaged.db", NULL);
  g_autoptr(GError) error = NULL;

  /* Readable by others: refused. */
  g_file_set_contents (fixture->token_path,
                       "0123456789abcdef0123456789abcdef0123456789abcdef\n", -1, &error);
  g_assert_no_error (error);
  g_chmod (fixture->token_path, 0644);
  g_assert_cmpint (run_failing (fixture, args, &err), ==, 1);
  g_assert_nonnull (strstr (err, "chmod 600"));
  g_clear_pointer (&err, g_free);

  /* Too short to be a secret: refused. */
  g_file_set_contents (fixture->token_path, "short\n", -1, &error);
  g_assert_no_error (error);
  g_chmod (fixture->token_path, 0600);
  g_assert_cmpint (run_failing (fixture, args, &err), ==, 1);
  g_assert_nonnull (strstr (err, fixture->token_path));

  /* Nothing was started: no database. */
  g_assert_false (g_file_test (db_path, G_FILE_TEST_EXISTS));
}

static void
test_bind_refused (Fixture       *fixture,
                   gconstpointer  data)
{
  const char *addresses[] = { "0.0.0.0", "::", "192.168.1.10", "10.0.0.1" };
  g_autofree char *data_arg = g_strdup_printf ("--data-dir=%s", fixture->data_dir);
  g_autofree char *token_arg = g_strdup_printf ("--api-token-file=%s", fixture->token_path);
  g_autofree char *db_path = g_build_filename (fixture->data_dir, "kaged.db", NULL);

  for (guint i = 0; i < G_N_ELEMENTS (addresses); i++)
    {
      g_autofree char *bind_arg = g_strdup_printf ("--api-bind=%s", addresses[i]);
      const char *args[] = { "--headless", "--api-port=0", data_arg, token_arg, bind_arg, NULL };
      g_autofree char *err = NULL;

      g_assert_cmpint (run_failing (fixture, args, &err), ==, 1);
      g_assert_nonnull (strstr (err, addresses[i]));
    }

  {
    const char *args[] = { "--headless", "--api-port=0", data_arg, token_arg,
                           "--api-bind=example.com", NULL };
    g_autofree char *err = NULL;

    g_assert_cmpint (run_failing (fixture, args, &err), ==, 1);
  }

  g_assert_false (g_file_test (db_path, G_FILE_TEST_EXISTS));

  /* A loopback address is fine. */
  fixture_start_full (fixture, TRUE, "--api-bind=127.0.0.1", NULL);
  create_session (fixture, "Bound");
}

static void
test_store_errors (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autofree char *db_path = g_build_filename (fixture->data_dir, "kaged.db", NULL);
  g_autofree char *data_arg = g_strdup_printf ("--data-dir=%s", fixture->data_dir);
  g_autofree char *token_arg = g_strdup_printf ("--api-token-file=%s", fixture->token_path);
  const char *args[] = { "--headless", "--api-port=0", data_arg, token_arg, NULL };
  const char garbage[] = "These are my notes, not a database.\n";
  g_autofree char *err = NULL;
  g_autofree char *contents = NULL;
  g_autoptr(GError) error = NULL;
  gsize length = 0;

  g_mkdir_with_parents (fixture->data_dir, 0700);
  g_file_set_contents (db_path, garbage, -1, &error);
  g_assert_no_error (error);

  g_assert_cmpint (run_failing (fixture, args, &err), ==, 1);
  g_assert_nonnull (strstr (err, db_path));
  g_assert_nonnull (strstr (err, "untouched"));

  g_file_get_contents (db_path, &contents, &length, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (contents, length, garbage, strlen (garbage));
  g_clear_pointer (&err, g_free);
  g_clear_pointer (&contents, g_free);

  /* A database from a newer Kaged. */
  {
    sqlite3 *db = NULL;
    g_autofree char *pragma = g_strdup_printf ("PRAGMA user_version = %d",
                                               KAGED_STORE_SCHEMA_VERSION + 5);
    g_autofree char *before = NULL;
    gsize before_length = 0;

    g_unlink (db_path);
    g_assert_cmpint (sqlite3_open (db_path, &db), ==, SQLITE_OK);
    g_assert_cmpint (sqlite3_exec (db, "PRAGMA application_id = 1262569284", NULL, NULL, NULL),
                     ==, SQLITE_OK);
    g_assert_cmpint (sqlite3_exec (db, "CREATE TABLE future (x)", NULL, NULL, NULL), ==, SQLITE_OK);
    g_assert_cmpint (sqlite3_exec (db, pragma, NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_close (db);

    g_file_get_contents (db_path, &before, &before_length, &error);
    g_assert_no_error (error);

    g_assert_cmpint (run_failing (fixture, args, &err), ==, 1);
    g_assert_nonnull (strstr (err, "newer version"));

    g_file_get_contents (db_path, &contents, &length, &error);
    g_assert_no_error (error);
    g_assert_cmpmem (contents, length, before, before_length);
  }
}

/* ------------------------------------------------------------------------
 * Stopping
 * ------------------------------------------------------------------------ */

static void
test_sigterm_records_cancelled (Fixture       *fixture,
                                gconstpointer  data)
{
  g_autoptr(EventClient) events = NULL;
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *db_path = g_build_filename (fixture->data_dir, "kaged.db", NULL);
  KagedMessage *reply;
  gint64 session_id;
  gint64 run_id;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"A very long story that goes on\", "
                        "\"chunks\": 40, \"delay_ms\": 50}]");
  fixture_start (fixture);
  session_id = create_session (fixture, "Interrupted");
  events = open_events (fixture, session_id);

  receipt = post_message (fixture, session_id, "Tell me a story");
  run_id = json_object_get_int_member (receipt, "run_id");
  wait_event (events, "message.delta", run_id);

  g_subprocess_send_signal (fixture->process, SIGTERM);
  fixture_wait_exit (fixture);
  g_assert_true (g_subprocess_get_if_exited (fixture->process));
  g_assert_cmpint (g_subprocess_get_exit_status (fixture->process), ==, 0);

  store = kaged_store_open (db_path, &error);
  g_assert_no_error (error);
  run = kaged_store_get_run (store, run_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_CANCELLED);
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_NONE);
  g_assert_cmpint (kaged_run_get_finished_at (run), >, 0);

  messages = kaged_store_list_messages (store, session_id, TRUE, 0, 0, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (messages->len, ==, 2);
  reply = g_ptr_array_index (messages, 1);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_CANCELLED);
}

static void
test_sigint_idle (Fixture       *fixture,
                  gconstpointer  data)
{
  fixture_start (fixture);
  create_session (fixture, "Idle");

  g_subprocess_send_signal (fixture->process, SIGINT);
  fixture_wait_exit (fixture);
  g_assert_true (g_subprocess_get_if_exited (fixture->process));
  g_assert_cmpint (g_subprocess_get_exit_status (fixture->process), ==, 0);
}

/* ------------------------------------------------------------------------
 * In process
 * ------------------------------------------------------------------------ */

static void
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

static void
test_token_compare (void)
{
  g_assert_true (kaged_api_token_equal ("abcdef0123456789", "abcdef0123456789"));
  g_assert_false (kaged_api_token_equal ("abcdef0123456789", "abcdef012345678"));
  g_assert_false (kaged_api_token_equal ("abcdef0123456789", "abcdef01234567890"));
  g_assert_false (kaged_api_token_equal ("abcdef0123456789", "bbcdef0123456789"));
  g_assert_false (kaged_api_token_equal ("abcdef0123456789", ""));
  g_assert_false (kaged_api_token_equal ("abcdef0123456789", NULL));
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  /* The headless program must not need a display; neither do these tests. */
  g_unsetenv ("DISPLAY");
  g_unsetenv ("WAYLAND_DISPLAY");

#define ADD(path, func) \
  g_test_add ("/api/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  ADD ("flow/post-events-messages", test_post_events_messages);
  ADD ("flow/queue", test_queue_behind_active_run);
  ADD ("flow/title-from-first-message", test_title_from_first_message);
  ADD ("flow/regenerate", test_regenerate);
  ADD ("flow/list-after-regenerate", test_list_after_regenerate);
  ADD ("flow/edit", test_edit);
  ADD ("flow/cancel", test_cancel);
  ADD ("flow/overloaded-classification", test_overloaded_classification);
  ADD ("errors/bad-requests", test_bad_requests);
  ADD ("errors/body-limits", test_body_limits);
  ADD ("security/unauthorized", test_unauthorized);
  ADD ("security/token-file-created", test_token_file_created);
  ADD ("security/token-file-refused", test_token_file_refused);
  ADD ("security/bind-refused", test_bind_refused);
  ADD ("headless/store-errors", test_store_errors);
  ADD ("headless/sigterm-records-cancelled", test_sigterm_records_cancelled);
  ADD ("headless/sigint-idle", test_sigint_idle);
  ADD ("server/listen-address", test_listen_address);
  ADD ("server/listen-loopback-only", test_listen_loopback_only);
  ADD ("server/event-streams", test_event_stream_keepalive_and_cleanup);
  g_test_add_func ("/api/token/compare", test_token_compare);

#undef ADD

  return g_test_run ();
}
