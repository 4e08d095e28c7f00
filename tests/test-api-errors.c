/* test-api-errors.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * Requests the HTTP API refuses: each answered with the right status and
 * code, and none of them changes anything.
 */

#include "config.h"

#include <string.h>

#include "kaged-api-fixture.h"

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
      /* json-glib 1.6 reads \6 as an octal byte and \udc00 alone as
       * half a character: neither is JSON, and both would store text that
       * is not UTF-8. */
      { "POST", messages_path, "{\"content\": \"a\\60000b\", \"x\": [[1]]}", 400,
        "malformed_json" },
      { "POST", messages_path, "{\"content\": \"a\\udc00b\"}", 400, "malformed_json" },
      { "POST", messages_path, "{\"content\": \"a\\0b\"}", 400, "malformed_json" },
      { "POST", "/api/v1/sessions", "{\"title\": \"\\777\"}", 400, "malformed_json" },
      /* Nor strings in single quotes or comments, which json-glib reads
       * too: a '"' inside one must not hide an escape. */
      { "POST", messages_path, "{\"content\": /* \" */ \"\\777\"}", 400, "malformed_json" },
      { "POST", messages_path, "{'content': \"Hi\"}", 400, "malformed_json" },
      /* json-glib reads \U as \u; JSON has no \U. */
      { "POST", messages_path, "{\"content\": \"upper\\U0000case\"}", 400, "malformed_json" },
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

/* A JSON text nested this deep overflows json-glib's recursive parser. */
#define DEEP_LEVELS 75000

static char *
nested_body (const char *before,
             guint       levels,
             const char *after)
{
  GString *body = g_string_new (before);

  for (guint i = 0; i < levels; i++)
    g_string_append_c (body, '[');
  for (guint i = 0; i < levels; i++)
    g_string_append_c (body, ']');
  g_string_append (body, after);

  return g_string_free (body, FALSE);
}

static void
test_deep_json (Fixture       *fixture,
                gconstpointer  data)
{
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  g_autofree char *path = NULL;
  g_autofree char *regenerate_path = NULL;
  g_autoptr(JsonObject) receipt = NULL;
  g_autoptr(EventClient) events = NULL;
  gint64 session_id;

  fixture_start (fixture);
  session_id = create_session (fixture, "Deep");
  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages", session_id);
  events = open_events (fixture, session_id);
  receipt = post_message (fixture, session_id, "Hello");
  wait_event (events, "run.finished", json_object_get_int_member (receipt, "run_id"));
  regenerate_path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages/%"
                                     G_GINT64_FORMAT "/regenerate", session_id,
                                     json_object_get_int_member (receipt, "message_id"));
  before = snapshot (fixture);

  /* Every endpoint that reads a body refuses it, and the server lives. */
  {
    const char *paths[] = { "/api/v1/sessions", path, regenerate_path };
    g_autofree char *bare = nested_body ("", DEEP_LEVELS, "");
    g_autofree char *member = nested_body ("{\"content\": \"Hi\", \"title\": \"x\", \"x\": ",
                                           DEEP_LEVELS, "}");

    for (guint i = 0; i < G_N_ELEMENTS (paths); i++)
      {
        g_autoptr(Response) bare_response = request (fixture, "POST", paths[i], bare);
        g_autoptr(Response) member_response = request (fixture, "POST", paths[i], member);

        assert_error (bare_response, SOUP_STATUS_BAD_REQUEST, "malformed_json");
        assert_error (member_response, SOUP_STATUS_BAD_REQUEST, "malformed_json");
      }
  }

  /* Just beyond the bound of 512 levels: refused too. */
  {
    g_autofree char *body = nested_body ("{\"content\": \"Hi\", \"x\": ", 512, "}");
    g_autoptr(Response) response = request (fixture, "POST", path, body);

    assert_error (response, SOUP_STATUS_BAD_REQUEST, "malformed_json");
  }

  after = snapshot (fixture);
  g_assert_cmpstr (before, ==, after);

  /* Within it: accepted. */
  {
    g_autofree char *body = nested_body ("{\"content\": \"Nested\", \"x\": ", 511, "}");
    g_autoptr(Response) response = request (fixture, "POST", path, body);

    g_assert_cmpuint (response->status, ==, SOUP_STATUS_ACCEPTED);
  }
}

static void
test_escaped_nul (Fixture       *fixture,
                  gconstpointer  data)
{
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  g_autofree char *path = NULL;
  g_autoptr(JsonArray) messages = NULL;
  gint64 session_id;
  const char *refused[] = {
    "{\"content\": \"before\\u0000after\"}",
    "{\"content\": \"\\u0000\"}",
    "{\"content\": \"tail\\u0000\"}",
    "{\"content\": \"\\\\\\u0000\"}",
  };

  fixture_start (fixture);
  session_id = create_session (fixture, "Nul");
  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages", session_id);
  before = snapshot (fixture);

  for (guint i = 0; i < G_N_ELEMENTS (refused); i++)
    {
      g_autoptr(Response) response = NULL;

      g_test_message ("%s", refused[i]);
      response = request (fixture, "POST", path, refused[i]);
      assert_error (response, SOUP_STATUS_BAD_REQUEST, "invalid_content");
    }

  /* A title is text too. */
  {
    g_autoptr(Response) response = request (fixture, "POST", "/api/v1/sessions",
                                            "{\"title\": \"a\\u0000b\"}");

    assert_error (response, SOUP_STATUS_BAD_REQUEST, "invalid_content");
  }

  after = snapshot (fixture);
  g_assert_cmpstr (before, ==, after);

  /* A backslash followed by the letters u0000 is ordinary text. */
  {
    g_autoptr(Response) response = request (fixture, "POST", path,
                                            "{\"content\": \"path\\\\u0000x\"}");
    JsonObject *operator;

    g_assert_cmpuint (response->status, ==, SOUP_STATUS_ACCEPTED);
    messages = list_messages (fixture, session_id, NULL);
    operator = json_array_get_object_element (messages, 0);
    g_assert_cmpstr (json_object_get_string_member (operator, "content"), ==, "path\\u0000x");
  }
}

typedef struct
{
  const char *headers;
  const char *body;
  guint       status;
  const char *code;
} EarlyCase;

/* What is wrong with a request's headers is answered from them, without
 * waiting for a body that may never come, and the connection closes. */
static void
test_early_answers (Fixture       *fixture,
                    gconstpointer  data)
{
  const EarlyCase cases[] = {
    /* 11 MiB and 10 GiB announced, nothing sent. */
    { "Content-Length: 11534336\r\n", NULL, 413, "payload_too_large" },
    { "Content-Length: 10737418240\r\n", NULL, 413, "payload_too_large" },
    /* Two ways to tell where the body ends. */
    { "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "hello", 400, "invalid_framing" },
    { "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n", 400,
      "invalid_framing" },
    /* Not a length. */
    { "Content-Length: -5\r\n", NULL, 400, "invalid_framing" },
    { "Content-Length: 18446744073709551615\r\n", NULL, 400, "invalid_framing" },
    /* No token: the body is not waited for either. */
    { "Content-Length: 100\r\n", NULL, 401, "unauthorized" },
  };
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  g_autofree char *path = NULL;
  g_autofree char *request_line = NULL;
  g_autofree char *err = NULL;
  gint64 session_id;

  fixture_start (fixture);
  session_id = create_session (fixture, "Early");
  path = g_strdup_printf ("/api/v1/sessions/%" G_GINT64_FORMAT "/messages", session_id);
  request_line = g_strdup_printf ("POST %s HTTP/1.1", path);
  before = snapshot (fixture);

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(RawClient) client = raw_client_connect (fixture->port);
      g_autofree char *code = NULL;
      gint64 start = g_get_monotonic_time ();
      guint status;

      g_test_message ("%s", cases[i].headers);
      raw_client_send_request (client, request_line,
                               cases[i].status == 401 ? NULL : fixture->token,
                               cases[i].headers, cases[i].body);
      status = raw_client_wait_answer (client, 5000, &code);
      g_assert_cmpuint (status, ==, cases[i].status);
      g_assert_cmpstr (code, ==, cases[i].code);
      g_assert_nonnull (strstr (raw_client_get_received (client), "Connection: close\r\n"));
      g_assert_true (raw_client_wait_closed (client, 5000));
      g_assert_cmpint (g_get_monotonic_time () - start, <, 5 * G_USEC_PER_SEC);
    }

  /* A body shorter than announced: refused once it stops coming (after
   * the body timeout, 10 s), not after the connection's idle time. */
  {
    g_autoptr(RawClient) client = raw_client_connect (fixture->port);
    g_autofree char *code = NULL;
    gint64 start = g_get_monotonic_time ();

    raw_client_send_request (client, request_line, fixture->token,
                             "Content-Type: application/json\r\nContent-Length: 100\r\n",
                             "{\"content\": \"short\"}");
    g_assert_cmpuint (raw_client_wait_answer (client, 14000, &code), ==, 400);
    g_assert_cmpstr (code, ==, "incomplete_body");
    g_assert_cmpint (g_get_monotonic_time () - start, >=, 9 * G_USEC_PER_SEC);
    g_assert_true (raw_client_wait_closed (client, 5000));
  }

  after = snapshot (fixture);
  g_assert_cmpstr (before, ==, after);

  /* libsoup was never asked to read a negative length: nothing warned. */
  err = fixture_stop_and_read_stderr (fixture);
  g_assert_null (strstr (err, "WARNING"));
  g_assert_null (strstr (err, "CRITICAL"));
}

int
main (int   argc,
      char *argv[])
{
  kaged_api_test_init (&argc, &argv);

  KAGED_API_TEST_ADD ("errors/bad-requests", test_bad_requests);
  KAGED_API_TEST_ADD ("errors/body-limits", test_body_limits);
  KAGED_API_TEST_ADD ("errors/deep-json", test_deep_json);
  KAGED_API_TEST_ADD ("errors/escaped-nul", test_escaped_nul);
  KAGED_API_TEST_ADD ("errors/early-answers", test_early_answers);

  return g_test_run ();
}
