/* test-headless.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Tier 2 over the HTTP API, end to end: a real `kaged --headless
 * --auto-retry` (no display, a temporary data folder and token) against a
 * real `kaged-fake-provider`, both on 127.0.0.1, driven as an API client
 * would: requests, and the session's event stream. The fake provider
 * counts the requests it gets at /__fake/stats.
 */

#include "config.h"

#include <signal.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

#include "kaged-event-client.h"
#include "kaged-test-files.h"

/* A safety net against a hang, never a measure of anything. */
#define WAIT_SECONDS 30

typedef struct
{
  char             *dir;
  char             *data_dir;
  char             *token_path;
  char             *token;

  GSubprocess      *fake;
  char             *fake_url;
  GSubprocess      *kaged;
  GString          *kaged_output;
  guint             port;

  SoupSession      *http;
  EventClient      *events;
  gint64            session_id;
} Fixture;

/* ------------------------------------------------------------------------
 * Waiting for things to happen
 * ------------------------------------------------------------------------ */

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

static gboolean
flag_set (gpointer data)
{
  return *(gboolean *)data;
}

/* Lets the moment pass at which a retry armed for @wall_ms (epoch ms)
 * would have fired, and a little more for what it would have started. */
static void
let_pass (gint64 wall_ms)
{
  gint64 wait_ms = wall_ms - g_get_real_time () / 1000 + 1000;
  gboolean passed = FALSE;

  g_assert_cmpint (wait_ms, <, WAIT_SECONDS * 1000);
  if (wait_ms <= 0)
    return;

  g_timeout_add ((guint)wait_ms, timeout_cb, &passed);
  while (!passed)
    g_main_context_iteration (NULL, TRUE);
}

/* ------------------------------------------------------------------------
 * Processes
 * ------------------------------------------------------------------------ */

typedef struct
{
  GString  *output;
  char     *prefix;     /* the line that carries the address */
  char     *end;        /* the line that ends the start-up lines */
  char     *found;
  gboolean  done;
} StartLines;

static void
start_line_cb (GObject      *object,
               GAsyncResult *result,
               gpointer      user_data)
{
  StartLines *lines = user_data;
  g_autofree char *line = NULL;

  line = g_data_input_stream_read_line_finish_utf8 (G_DATA_INPUT_STREAM (object), result,
                                                    NULL, NULL);
  if (line == NULL)
    {
      lines->done = TRUE;
      return;
    }

  g_string_append_printf (lines->output, "%s\n", line);
  if (lines->found == NULL && g_str_has_prefix (line, lines->prefix))
    lines->found = g_strdup (line + strlen (lines->prefix));

  if (g_str_has_prefix (line, lines->end))
    {
      lines->done = TRUE;
      return;
    }

  g_data_input_stream_read_line_async (G_DATA_INPUT_STREAM (object), G_PRIORITY_DEFAULT,
                                       NULL, start_line_cb, lines);
}

/* A test that fails must not leave its programs running behind it. */
static void
die_with_parent (gpointer user_data)
{
  prctl (PR_SET_PDEATHSIG, SIGTERM);
}

/* Spawns @argv and reads its first lines: returns what follows @prefix. */
static char *
spawn (Fixture             *fixture,
       const char * const  *argv,
       const char          *prefix,
       const char          *end,
       GSubprocess        **process)
{
  g_autoptr(GSubprocessLauncher) launcher = NULL;
  g_autoptr(GDataInputStream) out = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *config = g_build_filename (fixture->dir, "config", NULL);
  g_autofree char *data_home = g_build_filename (fixture->dir, "xdg-data", NULL);
  g_autofree char *runtime = g_build_filename (fixture->dir, "runtime", NULL);
  StartLines lines = { fixture->kaged_output, (char *)prefix, (char *)end, NULL, FALSE };

  g_mkdir_with_parents (runtime, 0700);

  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
  /* No display, no desktop session: headless needs neither. */
  g_subprocess_launcher_unsetenv (launcher, "DISPLAY");
  g_subprocess_launcher_unsetenv (launcher, "WAYLAND_DISPLAY");
  g_subprocess_launcher_unsetenv (launcher, "DBUS_SESSION_BUS_ADDRESS");
  g_subprocess_launcher_setenv (launcher, "XDG_CONFIG_HOME", config, TRUE);
  g_subprocess_launcher_setenv (launcher, "XDG_DATA_HOME", data_home, TRUE);
  g_subprocess_launcher_setenv (launcher, "XDG_RUNTIME_DIR", runtime, TRUE);
  g_subprocess_launcher_setenv (launcher, "LC_ALL", "C.UTF-8", TRUE);

  *process = g_subprocess_launcher_spawnv (launcher, argv, &error);
  g_assert_no_error (error);

  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (*process));
  g_data_input_stream_read_line_async (out, G_PRIORITY_DEFAULT, NULL, start_line_cb, &lines);
  wait_until (flag_set, &lines.done);

  if (lines.found == NULL)
    g_error ("%s did not start:\n%s", argv[0], fixture->kaged_output->str);

  return lines.found;
}

static void
stop_process (GSubprocess **process)
{
  if (*process == NULL)
    return;

  g_subprocess_send_signal (*process, SIGTERM);
  g_subprocess_wait (*process, NULL, NULL);
  g_clear_object (process);
}

/* ------------------------------------------------------------------------
 * HTTP
 * ------------------------------------------------------------------------ */

typedef struct
{
  GBytes  *body;
  gboolean done;
} Sent;

static void
send_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  Sent *sent = user_data;

  sent->body = soup_session_send_and_read_finish (SOUP_SESSION (object), result, NULL);
  sent->done = TRUE;
}

/* Sends @method @url with @body (JSON, or NULL); returns the answer's JSON
 * and its status in @status. */
static JsonNode *
send_json (Fixture    *fixture,
           const char *method,
           const char *url,
           const char *body,
           guint      *status)
{
  g_autoptr(SoupMessage) msg = soup_message_new (method, url);
  g_autoptr(GError) error = NULL;
  Sent sent = { NULL, FALSE };
  JsonNode *node = NULL;

  if (fixture->token != NULL && strstr (url, "/api/v1/") != NULL)
    {
      g_autofree char *authorization = g_strdup_printf ("Bearer %s", fixture->token);

      soup_message_headers_replace (soup_message_get_request_headers (msg),
                                    "Authorization", authorization);
    }
  if (body != NULL)
    {
      g_autoptr(GBytes) bytes = g_bytes_new (body, strlen (body));

      soup_message_set_request_body_from_bytes (msg, "application/json", bytes);
    }

  soup_session_send_and_read_async (fixture->http, msg, G_PRIORITY_DEFAULT, NULL,
                                    send_cb, &sent);
  wait_until (flag_set, &sent.done);
  g_assert_nonnull (sent.body);

  if (status != NULL)
    *status = soup_message_get_status (msg);

  if (g_bytes_get_size (sent.body) > 0)
    {
      g_autofree char *text = g_strndup (g_bytes_get_data (sent.body, NULL),
                                         g_bytes_get_size (sent.body));

      node = json_from_string (text, &error);
      g_assert_no_error (error);
    }
  g_bytes_unref (sent.body);

  return node;
}

static JsonObject *api (Fixture    *fixture,
                        const char *method,
                        guint       expected_status,
                        const char *body,
                        const char *path_format,
                        ...) G_GNUC_PRINTF (5, 6);

static JsonObject *
api (Fixture    *fixture,
     const char *method,
     guint       expected_status,
     const char *body,
     const char *path_format,
     ...)
{
  g_autofree char *path = NULL;
  g_autofree char *url = NULL;
  g_autoptr(JsonNode) node = NULL;
  guint status = 0;
  va_list args;

  va_start (args, path_format);
  path = g_strdup_vprintf (path_format, args);
  va_end (args);

  url = g_strdup_printf ("http://127.0.0.1:%u/api/v1/%s", fixture->port, path);
  node = send_json (fixture, method, url, body, &status);
  if (status != expected_status)
    g_error ("%s %s: %u, not %u", method, path, status, expected_status);
  g_assert_nonnull (node);

  return json_object_ref (json_node_get_object (node));
}

/* How many chat requests the fake provider has had. */
static gint64
provider_requests (Fixture *fixture)
{
  g_autofree char *url = g_strdup_printf ("%s/__fake/stats", fixture->fake_url);
  g_autoptr(JsonNode) node = send_json (fixture, "GET", url, NULL, NULL);

  return json_object_get_int_member (json_node_get_object (node), "total");
}

static void
set_scenario (Fixture    *fixture,
              const char *scenario)
{
  g_autofree char *url = g_strdup_printf ("%s/__fake/scenario", fixture->fake_url);
  g_autofree char *reset = g_strdup_printf ("%s/__fake/reset", fixture->fake_url);
  g_autoptr(JsonNode) answer = NULL;
  g_autoptr(JsonNode) reset_answer = NULL;
  guint status = 0;

  answer = send_json (fixture, "POST", url, scenario, &status);
  g_assert_true (SOUP_STATUS_IS_SUCCESSFUL (status));
  reset_answer = send_json (fixture, "POST", reset, "{}", &status);
  g_assert_true (SOUP_STATUS_IS_SUCCESSFUL (status));
}

/* ------------------------------------------------------------------------
 * The event stream
 * ------------------------------------------------------------------------ */

static void
open_events (Fixture *fixture)
{
  g_autofree char *url = g_strdup_printf ("http://127.0.0.1:%u/api/v1/sessions/%"
                                          G_GINT64_FORMAT "/events",
                                          fixture->port, fixture->session_id);
  g_autofree char *authorization = g_strdup_printf ("Bearer %s", fixture->token);
  SoupMessage *msg = soup_message_new ("GET", url);

  soup_message_headers_replace (soup_message_get_request_headers (msg),
                                "Authorization", authorization);
  fixture->events = event_client_open (fixture->http, msg);
}

typedef struct
{
  EventClient *client;
  const char  *name;
  const char  *member;     /* NULL: any event of that name */
  const char  *string;     /* the member's value, when a string */
  gint64       number;     /* or when a number */
  guint        from;
  JsonObject  *found;
} EventWait;

static gboolean
event_matches (EventWait *wait,
               Event     *event)
{
  JsonObject *object = json_node_get_object (event->data);
  JsonNode *node;

  if (!g_str_equal (event->name, wait->name))
    return FALSE;
  if (wait->member == NULL)
    return TRUE;

  node = json_object_get_member (object, wait->member);
  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node))
    return FALSE;
  if (wait->string != NULL)
    return json_node_get_value_type (node) == G_TYPE_STRING &&
           g_str_equal (json_node_get_string (node), wait->string);

  return json_node_get_value_type (node) == G_TYPE_INT64 && json_node_get_int (node) == wait->number;
}

static gboolean
event_found (gpointer data)
{
  EventWait *wait = data;

  for (guint i = wait->from; i < wait->client->events->len; i++)
    {
      Event *event = g_ptr_array_index (wait->client->events, i);

      if (event_matches (wait, event))
        {
          wait->found = json_node_get_object (event->data);
          wait->from = i + 1;
          return TRUE;
        }
    }

  return FALSE;
}

/* Waits for the first `retry.changed` to @state from event @from on. */
static JsonObject *
wait_retry_state (Fixture    *fixture,
                  const char *state,
                  guint      *from)
{
  EventWait wait = { fixture->events, "retry.changed", "state", state, 0, *from, NULL };

  wait_until (event_found, &wait);
  *from = wait.from;

  return wait.found;
}

/* Waits for the `run.finished` of @run_id. */
static JsonObject *
wait_run_finished (Fixture *fixture,
                   gint64   run_id)
{
  EventWait wait = { fixture->events, "run.finished", "id", NULL, run_id, 0, NULL };

  wait_until (event_found, &wait);

  return wait.found;
}

static JsonObject *
wait_run_started (Fixture *fixture,
                  gint64   run_id)
{
  EventWait wait = { fixture->events, "run.started", "id", NULL, run_id, 0, NULL };

  wait_until (event_found, &wait);

  return wait.found;
}

/* How many `retry.changed` events to @state the stream carried. */
static guint
count_retry_state (Fixture    *fixture,
                   const char *state)
{
  EventWait wait = { fixture->events, "retry.changed", "state", state, 0, 0, NULL };
  guint n = 0;

  for (guint i = 0; i < fixture->events->events->len; i++)
    {
      if (event_matches (&wait, g_ptr_array_index (fixture->events->events, i)))
        n++;
    }

  return n;
}

/* ------------------------------------------------------------------------
 * Fixture
 * ------------------------------------------------------------------------ */

/* A provider that fails with 529 at once (no Tier 1 retry: the answer says
 * not to), the way a long overload looks to Tier 2. */
#define OVERLOADED \
  "{\"status\": 529, \"headers\": {\"x-should-retry\": \"false\"}, " \
  "\"body\": {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", " \
  "\"message\": \"Overloaded\"}}}"

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  const char *fake_argv[] = { FAKE_PROVIDER, "--port=0", NULL };
  g_autoptr(GError) error = NULL;
  g_autofree char *data_arg = NULL;
  g_autofree char *token_arg = NULL;
  g_autofree char *url_arg = NULL;
  g_autofree char *port = NULL;
  g_autoptr(JsonObject) session = NULL;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  fixture->data_dir = g_build_filename (fixture->dir, "data", NULL);
  fixture->token_path = g_build_filename (fixture->dir, "api-token", NULL);
  fixture->kaged_output = g_string_new (NULL);
  fixture->http = soup_session_new ();

  fixture->fake_url = spawn (fixture, fake_argv, "Listening on ", "Listening on ",
                             &fixture->fake);

  data_arg = g_strdup_printf ("--data-dir=%s", fixture->data_dir);
  token_arg = g_strdup_printf ("--api-token-file=%s", fixture->token_path);
  url_arg = g_strdup_printf ("--provider-url=%s", fixture->fake_url);
  {
    const char *argv[] = { g_getenv ("KAGED_BINARY"), "--headless", "--auto-retry",
                           "--api-port=0", data_arg, token_arg, "--provider-kind=openai",
                           url_arg, "--model=test", NULL };

    g_assert_nonnull (argv[0]);
    port = spawn (fixture, argv, "Listening on http://127.0.0.1:", "Provider: ", &fixture->kaged);
  }
  fixture->port = atoi (port);
  g_assert_cmpuint (fixture->port, >, 0);

  g_assert_true (g_file_get_contents (fixture->token_path, &fixture->token, NULL, NULL));
  g_strstrip (fixture->token);

  session = api (fixture, "POST", SOUP_STATUS_CREATED, "{\"title\": \"Tier 2\"}", "sessions");
  fixture->session_id = json_object_get_int_member (session, "id");
  open_events (fixture);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_clear_pointer (&fixture->events, event_client_free);
  stop_process (&fixture->kaged);
  stop_process (&fixture->fake);
  g_clear_object (&fixture->http);
  g_string_free (fixture->kaged_output, TRUE);
  kaged_test_remove_tree (fixture->dir);
  g_free (fixture->dir);
  g_free (fixture->data_dir);
  g_free (fixture->token_path);
  g_free (fixture->token);
  g_free (fixture->fake_url);
}

static JsonObject *
post (Fixture    *fixture,
      const char *content)
{
  g_autofree char *body = g_strdup_printf ("{\"content\": \"%s\"}", content);

  return api (fixture, "POST", SOUP_STATUS_ACCEPTED, body,
              "sessions/%" G_GINT64_FORMAT "/messages", fixture->session_id);
}

static JsonObject *
get_retry (Fixture *fixture)
{
  return api (fixture, "GET", SOUP_STATUS_OK, NULL,
              "sessions/%" G_GINT64_FORMAT "/retry", fixture->session_id);
}

static const char *
run_status (JsonObject *run)
{
  return json_object_get_string_member (run, "status");
}

/* ------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------ */

/* What the retry endpoint says, and that it is the event's object. */
static void
test_retry_state (Fixture       *fixture,
                  gconstpointer  data)
{
  g_autoptr(JsonObject) idle = NULL;
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(JsonObject) armed = NULL;
  JsonObject *event;
  guint from = 0;

  set_scenario (fixture, "[" OVERLOADED "]");

  idle = get_retry (fixture);
  g_assert_cmpstr (json_object_get_string_member (idle, "state"), ==, "idle");
  g_assert_true (json_object_get_null_member (idle, "next_at"));

  receipt = post (fixture, "Hello");
  event = wait_retry_state (fixture, "armed", &from);

  armed = get_retry (fixture);
  g_assert_cmpstr (json_object_get_string_member (armed, "state"), ==, "armed");
  g_assert_cmpint (json_object_get_int_member (armed, "attempt"), ==, 1);
  g_assert_cmpstr (json_object_get_string_member (armed, "retry_class"), ==, "overloaded");
  g_assert_cmpint (json_object_get_int_member (armed, "http_status"), ==, 529);
  g_assert_cmpstr (json_object_get_string_member (armed, "wait_source"), ==, "backoff");
  g_assert_cmpint (json_object_get_int_member (armed, "anchor_message_id"), ==,
                   json_object_get_int_member (receipt, "message_id"));
  /* No retry run yet: it has not been dispatched. */
  g_assert_true (json_object_get_null_member (armed, "run_id"));
  g_assert_cmpint (json_object_get_int_member (armed, "next_at"), >, 0);
  g_assert_cmpint (json_object_get_int_member (event, "next_at"), ==,
                   json_object_get_int_member (armed, "next_at"));
  g_assert_cmpint (json_object_get_int_member (event, "session_id"), ==, fixture->session_id);

  /* Nothing is armed in another session: idle, and 404 for none. */
  {
    g_autoptr(JsonObject) other = api (fixture, "POST", SOUP_STATUS_CREATED, "{}", "sessions");
    g_autoptr(JsonObject) other_retry = NULL;
    g_autoptr(JsonObject) conflict = NULL;
    g_autoptr(JsonObject) missing = NULL;

    other_retry = api (fixture, "GET", SOUP_STATUS_OK, NULL, "sessions/%" G_GINT64_FORMAT "/retry",
                       json_object_get_int_member (other, "id"));
    g_assert_cmpstr (json_object_get_string_member (other_retry, "state"), ==, "idle");
    conflict = api (fixture, "POST", SOUP_STATUS_CONFLICT, NULL,
                    "sessions/%" G_GINT64_FORMAT "/retry/now",
                    json_object_get_int_member (other, "id"));
    g_assert_cmpstr (json_object_get_string_member (json_object_get_object_member (conflict,
                                                                                   "error"),
                                                    "code"),
                     ==, "no_retry");
    missing = api (fixture, "GET", SOUP_STATUS_NOT_FOUND, NULL, "sessions/424242/retry");
  }
}

/* (a) A regenerate through the API while a retry is armed stands it down:
 * no second regenerate, no duplicate request to the provider. */
static void
test_regenerate_stands_retry_down (Fixture       *fixture,
                                   gconstpointer  data)
{
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(JsonObject) regen = NULL;
  g_autoptr(JsonObject) after = NULL;
  JsonObject *armed;
  JsonObject *finished;
  gint64 next_at;
  guint from = 0;

  set_scenario (fixture,
                "{\"steps\": [" OVERLOADED ", {\"kind\": \"openai\", \"text\": \"Better now\"}]}");

  receipt = post (fixture, "Hello");
  armed = wait_retry_state (fixture, "armed", &from);
  next_at = json_object_get_int_member (armed, "next_at");
  g_assert_cmpint (provider_requests (fixture), ==, 1);

  regen = api (fixture, "POST", SOUP_STATUS_ACCEPTED, NULL,
               "sessions/%" G_GINT64_FORMAT "/messages/%" G_GINT64_FORMAT "/regenerate",
               fixture->session_id, json_object_get_int_member (receipt, "message_id"));
  finished = wait_run_finished (fixture, json_object_get_int_member (regen, "run_id"));
  g_assert_cmpstr (run_status (finished), ==, "succeeded");

  /* The countdown would have fired by now; it was stood down instead. */
  let_pass (next_at);
  after = get_retry (fixture);
  g_assert_cmpstr (json_object_get_string_member (after, "state"), !=, "armed");
  g_assert_cmpuint (count_retry_state (fixture, "dispatching"), ==, 0);
  g_assert_cmpint (provider_requests (fixture), ==, 2);
}

/* (b) P1 fails retryable while P2 waits in the queue: Tier 2 does not arm
 * on P1, and P2's reply completes. */
static void
test_no_arm_behind_queued_post (Fixture       *fixture,
                                gconstpointer  data)
{
  g_autoptr(JsonObject) first = NULL;
  g_autoptr(JsonObject) second = NULL;
  g_autoptr(JsonObject) after = NULL;
  g_autoptr(JsonObject) messages = NULL;
  JsonObject *finished;
  JsonArray *list;
  gboolean second_answered = FALSE;

  /* P1's failure comes late enough that P2 is queued behind it. */
  set_scenario (fixture,
                "{\"steps\": [{\"status\": 529, \"headers_delay_ms\": 1500, "
                "\"headers\": {\"x-should-retry\": \"false\"}, "
                "\"body\": {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", "
                "\"message\": \"Overloaded\"}}}, "
                "{\"kind\": \"openai\", \"text\": \"Second answer\"}]}");

  first = post (fixture, "First");
  wait_run_started (fixture, json_object_get_int_member (first, "run_id"));
  second = post (fixture, "Second");
  g_assert_cmpstr (json_object_get_string_member (second, "status"), ==, "queued");

  finished = wait_run_finished (fixture, json_object_get_int_member (first, "run_id"));
  g_assert_cmpstr (run_status (finished), ==, "failed");
  finished = wait_run_finished (fixture, json_object_get_int_member (second, "run_id"));
  g_assert_cmpstr (run_status (finished), ==, "succeeded");

  g_assert_cmpuint (count_retry_state (fixture, "armed"), ==, 0);
  g_assert_cmpuint (count_retry_state (fixture, "dispatching"), ==, 0);
  after = get_retry (fixture);
  g_assert_cmpstr (json_object_get_string_member (after, "state"), ==, "idle");
  g_assert_cmpint (provider_requests (fixture), ==, 2);

  /* P2's reply stands, current, after P2. */
  messages = api (fixture, "GET", SOUP_STATUS_OK, NULL,
                  "sessions/%" G_GINT64_FORMAT "/messages", fixture->session_id);
  list = json_object_get_array_member (messages, "messages");
  for (guint i = 0; i < json_array_get_length (list); i++)
    {
      JsonObject *message = json_array_get_object_element (list, i);

      if (json_object_get_int_member (message, "run_id") ==
          json_object_get_int_member (second, "run_id") &&
          g_str_equal (json_object_get_string_member (message, "role"), "agent"))
        {
          g_assert_false (json_object_get_boolean_member (message, "superseded"));
          g_assert_cmpstr (json_object_get_string_member (message, "status"), ==, "complete");
          g_assert_cmpstr (json_object_get_string_member (message, "content"), ==,
                           "Second answer");
          second_answered = TRUE;
        }
    }
  g_assert_true (second_answered);
}

/* (c) retry/cancel while armed: the countdown stops, nothing is sent. */
static void
test_cancel_armed (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(JsonObject) cancelled = NULL;
  g_autoptr(JsonObject) again = NULL;
  g_autoptr(JsonObject) after = NULL;
  JsonObject *armed;
  gint64 next_at;
  guint from = 0;

  set_scenario (fixture, "[" OVERLOADED "]");

  receipt = post (fixture, "Hello");
  armed = wait_retry_state (fixture, "armed", &from);
  next_at = json_object_get_int_member (armed, "next_at");

  cancelled = api (fixture, "POST", SOUP_STATUS_OK, NULL,
                   "sessions/%" G_GINT64_FORMAT "/retry/cancel", fixture->session_id);
  g_assert_cmpstr (json_object_get_string_member (cancelled, "state"), ==, "cancelled");
  wait_retry_state (fixture, "cancelled", &from);

  /* Nothing left to cancel. */
  again = api (fixture, "POST", SOUP_STATUS_CONFLICT, NULL,
               "sessions/%" G_GINT64_FORMAT "/retry/cancel", fixture->session_id);

  let_pass (next_at);
  after = get_retry (fixture);
  g_assert_cmpstr (json_object_get_string_member (after, "state"), ==, "cancelled");
  g_assert_cmpuint (count_retry_state (fixture, "dispatching"), ==, 0);
  g_assert_cmpint (provider_requests (fixture), ==, 1);
}

/* (c) retry/cancel while the retry's run streams: the run is recorded
 * cancelled, and the provider gets no further request. */
static void
test_cancel_dispatched (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(JsonObject) now = NULL;
  g_autoptr(JsonObject) cancelled = NULL;
  g_autoptr(JsonObject) run = NULL;
  g_autoptr(JsonObject) after = NULL;
  JsonObject *watching;
  JsonObject *finished;
  gint64 retry_run_id;
  guint from = 0;

  /* The retry's reply starts and then goes silent. */
  set_scenario (fixture,
                "{\"steps\": [" OVERLOADED ", {\"kind\": \"openai\", \"text\": \"Slow going\", "
                "\"chunks\": 4, \"hang_after_chunks\": 2}]}");

  receipt = post (fixture, "Hello");
  wait_retry_state (fixture, "armed", &from);

  now = api (fixture, "POST", SOUP_STATUS_OK, NULL,
             "sessions/%" G_GINT64_FORMAT "/retry/now", fixture->session_id);
  watching = wait_retry_state (fixture, "watching", &from);
  retry_run_id = json_object_get_int_member (watching, "run_id");
  g_assert_cmpint (retry_run_id, >, 0);
  g_assert_cmpint (retry_run_id, !=, json_object_get_int_member (receipt, "run_id"));
  wait_run_started (fixture, retry_run_id);
  /* Its reply has begun: the provider has the request. */
  {
    EventWait delta = { fixture->events, "message.delta", "run_id", NULL, retry_run_id, 0, NULL };

    wait_until (event_found, &delta);
  }
  g_assert_cmpint (provider_requests (fixture), ==, 2);

  cancelled = api (fixture, "POST", SOUP_STATUS_OK, NULL,
                   "sessions/%" G_GINT64_FORMAT "/retry/cancel", fixture->session_id);
  finished = wait_run_finished (fixture, retry_run_id);
  g_assert_cmpstr (run_status (finished), ==, "cancelled");

  run = api (fixture, "GET", SOUP_STATUS_OK, NULL,
             "sessions/%" G_GINT64_FORMAT "/runs/%" G_GINT64_FORMAT,
             fixture->session_id, retry_run_id);
  g_assert_cmpstr (run_status (run), ==, "cancelled");

  wait_retry_state (fixture, "cancelled", &from);
  after = get_retry (fixture);
  g_assert_cmpstr (json_object_get_string_member (after, "state"), ==, "cancelled");
  g_assert_true (json_object_get_null_member (after, "next_at"));
  g_assert_cmpint (provider_requests (fixture), ==, 2);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  /* Neither program needs a display; nor does this test. */
  g_unsetenv ("DISPLAY");
  g_unsetenv ("WAYLAND_DISPLAY");

#define ADD(path, func) \
  g_test_add ("/headless/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  ADD ("retry/state", test_retry_state);
  ADD ("retry/regenerate-stands-down", test_regenerate_stands_retry_down);
  ADD ("retry/no-arm-behind-queued-post", test_no_arm_behind_queued_post);
  ADD ("retry/cancel-armed", test_cancel_armed);
  ADD ("retry/cancel-dispatched", test_cancel_dispatched);

#undef ADD

  return g_test_run ();
}
