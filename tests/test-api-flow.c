/* test-api-flow.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * The local HTTP API end to end, over real HTTP against `kaged --headless`:
 * posting, event streams, listing, regenerating, editing, cancelling, and
 * how a failure is classified on the wire.
 */

#include "config.h"

#include <string.h>

#include "kaged-api-fixture.h"

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

int
main (int   argc,
      char *argv[])
{
  kaged_api_test_init (&argc, &argv);

  KAGED_API_TEST_ADD ("flow/post-events-messages", test_post_events_messages);
  KAGED_API_TEST_ADD ("flow/queue", test_queue_behind_active_run);
  KAGED_API_TEST_ADD ("flow/title-from-first-message", test_title_from_first_message);
  KAGED_API_TEST_ADD ("flow/regenerate", test_regenerate);
  KAGED_API_TEST_ADD ("flow/list-after-regenerate", test_list_after_regenerate);
  KAGED_API_TEST_ADD ("flow/edit", test_edit);
  KAGED_API_TEST_ADD ("flow/cancel", test_cancel);
  KAGED_API_TEST_ADD ("flow/overloaded-classification", test_overloaded_classification);

  return g_test_run ();
}
