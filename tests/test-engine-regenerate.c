/* test-engine-regenerate.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <sqlite3.h>

#include "kaged-enum-types.h"
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-openai-provider.h"
#include "kaged-keyring.h"
#include "kaged-retry.h"
#include "kaged-retry-class.h"
#include "kaged-session-manager.h"

#include "kaged-engine-fixture.h"

static void
test_regenerate_latest_while_running (Fixture       *fixture,
                                      gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedReceipt) regen = NULL;
  g_autoptr(KagedMessage) old_reply = NULL;
  g_autoptr(KagedMessage) new_reply = NULL;
  g_autoptr(GPtrArray) versions = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);
  guint n_messages;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"First answer\"},"
                        " {\"kind\": \"openai\", \"text\": \"Endless\", \"chunks\": 4, "
                        "  \"hang_after_chunks\": 2},"
                        " {\"kind\": \"openai\", \"text\": \"Better answer\"}]");

  first = post (fixture, "Question one");
  wait_run (fixture, first->run_id);
  second = post (fixture, "Question two");
  fixture->n_deltas = 0;
  wait_until (fixture, reply_has_text, NULL);

  before = dump_operator_rows (fixture);
  n_messages = count_messages (fixture);

  regen = kaged_session_manager_regenerate (fixture->manager, session_id, second->message_id,
                                            &error);
  g_assert_no_error (error);
  g_assert_cmpint (regen->session_id, ==, session_id);
  g_assert_cmpint (regen->message_id, ==, second->message_id);
  g_assert_cmpint (regen->run_id, !=, second->run_id);
  g_assert_cmpint (regen->status, ==, KAGED_RECEIPT_STATUS_DISPATCHED);

  /* Only the streaming reply came after the anchor. */
  old_reply = get_reply (fixture, second->run_id);
  g_assert_cmpuint (regen->superseded_message_ids->len, ==, 1);
  g_assert_cmpint (g_array_index (regen->superseded_message_ids, gint64, 0), ==,
                   kaged_message_get_id (old_reply));
  g_clear_object (&old_reply);

  wait_run (fixture, regen->run_id);
  assert_cancelled (fixture, second->run_id, "");

  old_reply = get_reply (fixture, second->run_id);
  g_assert_true (kaged_message_is_superseded (old_reply));
  g_assert_cmpint (kaged_message_get_superseded_by_run (old_reply), ==, regen->run_id);

  new_reply = get_reply (fixture, regen->run_id);
  g_assert_cmpstr (kaged_message_get_content (new_reply), ==, "Better answer");
  g_assert_false (kaged_message_is_superseded (new_reply));

  /* No operator row was added or changed; nothing was deleted. */
  after = dump_operator_rows (fixture);
  g_assert_cmpstr (before, ==, after);
  g_assert_cmpuint (count_messages (fixture), ==, n_messages + 1);

  /* Both versions of the reply, in order, for the pager. */
  versions = kaged_session_manager_list_versions (fixture->manager, session_id,
                                                  second->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (versions->len, ==, 2);
  g_assert_cmpint (kaged_message_get_run_id (g_ptr_array_index (versions, 0)), ==, second->run_id);
  g_assert_cmpint (kaged_message_get_run_id (g_ptr_array_index (versions, 1)), ==, regen->run_id);

  /* An agent reply resolves to the operator message that produced it. */
  g_assert_cmpint (kaged_session_manager_resolve_anchor (fixture->manager, session_id,
                                                         kaged_message_get_id (new_reply),
                                                         &error), ==, second->message_id);
  g_assert_no_error (error);
}

static void
test_regenerate_earlier (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedReceipt) third = NULL;
  g_autoptr(KagedReceipt) regen = NULL;
  g_autoptr(GPtrArray) current = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedMessage) first_reply = NULL;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);
  GBytes *body = NULL;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"A1\"},"
                        " {\"kind\": \"openai\", \"text\": \"A2\"},"
                        " {\"kind\": \"openai\", \"text\": \"never\", \"chunks\": 3, "
                        "  \"hang_after_chunks\": 2},"
                        " {\"kind\": \"openai\", \"text\": \"A1 again\"}]");

  first = post (fixture, "Q1");
  wait_run (fixture, first->run_id);
  second = post (fixture, "Q2");
  wait_run (fixture, second->run_id);
  third = post (fixture, "Q3");
  fixture->n_deltas = 0;
  wait_until (fixture, reply_has_text, NULL);

  before = dump_operator_rows (fixture);
  first_reply = get_reply (fixture, first->run_id);

  regen = kaged_session_manager_regenerate (fixture->manager, session_id, first->message_id,
                                            &error);
  g_assert_no_error (error);

  /* A1, Q2, A2, Q3 and the streaming A3: everything after Q1. */
  g_assert_cmpuint (regen->superseded_message_ids->len, ==, 5);
  g_assert_cmpint (g_array_index (regen->superseded_message_ids, gint64, 0), ==,
                   kaged_message_get_id (first_reply));
  g_assert_cmpint (g_array_index (regen->superseded_message_ids, gint64, 1), ==,
                   second->message_id);
  g_assert_cmpint (g_array_index (regen->superseded_message_ids, gint64, 3), ==,
                   third->message_id);

  wait_run (fixture, regen->run_id);
  assert_cancelled (fixture, third->run_id, "");

  current = kaged_store_list_messages (fixture->store, session_id, FALSE, 0, G_MAXUINT, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (current->len, ==, 2);
  g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (current, 0)), ==, first->message_id);
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (current, 1)), ==, "A1 again");

  /* The new run sent only Q1 as context. */
  body = kaged_fake_server_get_last_body (fixture->server, NULL);
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body), "Q1"));
  g_assert_null (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body), "Q2"));

  after = dump_operator_rows (fixture);
  g_assert_cmpstr (before, ==, after);
}

static gboolean
run_has_text (Fixture  *fixture,
              gpointer  data)
{
  return fixture->last_delta_run == GPOINTER_TO_SIZE (data);
}

/* The current messages' contents, in the order the store lists them. */
static char *
list_current (Fixture *fixture)
{
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) out = g_string_new (NULL);

  messages = kaged_store_list_messages (fixture->store, kaged_session_get_id (fixture->session),
                                        FALSE, 0, G_MAXUINT, &error);
  g_assert_no_error (error);

  for (guint i = 0; i < messages->len; i++)
    {
      if (i > 0)
        g_string_append_c (out, ' ');
      g_string_append (out, kaged_message_get_content (g_ptr_array_index (messages, i)));
    }

  return g_strdup (out->str);
}

/* Q2 and Q3 posted while A1 streams are answered in turn: each reply
 * stands after its question, Q3's run sees A2, and regenerating Q3 leaves
 * Q2 and its running reply alone. */
static void
test_conversation_order_with_queued_posts (Fixture       *fixture,
                                           gconstpointer  data)
{
  g_autoptr(KagedReceipt) q1 = NULL;
  g_autoptr(KagedReceipt) q2 = NULL;
  g_autoptr(KagedReceipt) q3 = NULL;
  g_autoptr(KagedReceipt) regen = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) a2 = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *order = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);
  GBytes *body = NULL;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"A1\", \"chunks\": 2, \"delay_ms\": 20},"
                        " {\"kind\": \"openai\", \"text\": \"A2 in ten pieces\", \"chunks\": 10, "
                        "  \"delay_ms\": 30},"
                        " {\"kind\": \"openai\", \"text\": \"A3\"}]");

  q1 = post (fixture, "Q1");
  wait_until (fixture, run_has_text, GSIZE_TO_POINTER (q1->run_id));
  q2 = post (fixture, "Q2");
  q3 = post (fixture, "Q3");
  g_assert_cmpint (q3->status, ==, KAGED_RECEIPT_STATUS_QUEUED);

  /* A2 is streaming: it stands after Q2, before Q3. */
  wait_until (fixture, run_has_text, GSIZE_TO_POINTER (q2->run_id));
  a2 = get_reply (fixture, q2->run_id);
  {
    g_autoptr(GPtrArray) messages =
      kaged_store_list_messages (fixture->store, session_id, FALSE, 0, G_MAXUINT, &error);

    g_assert_no_error (error);
    g_assert_cmpuint (messages->len, ==, 5);
    g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (messages, 3)), ==,
                     kaged_message_get_id (a2));
  }

  /* Nothing stands after Q3 yet: nothing is superseded, and Q2's run
   * goes on. */
  regen = kaged_session_manager_regenerate (fixture->manager, session_id, q3->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (regen->superseded_message_ids->len, ==, 0);
  g_assert_cmpint (regen->status, ==, KAGED_RECEIPT_STATUS_QUEUED);

  wait_run (fixture, regen->run_id);

  run = get_run (fixture, q2->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_clear_object (&run);
  run = get_run (fixture, q3->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_CANCELLED);
  g_clear_object (&a2);
  a2 = get_reply (fixture, q2->run_id);
  g_assert_false (kaged_message_is_superseded (a2));
  g_assert_cmpint (kaged_message_get_status (a2), ==, KAGED_MESSAGE_STATUS_COMPLETE);

  order = list_current (fixture);
  g_assert_cmpstr (order, ==, "Q1 A1 Q2 A2 in ten pieces Q3 A3");

  /* Q3's run was sent A2. */
  body = kaged_fake_server_get_last_body (fixture->server, NULL);
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body),
                                  "A2 in ten pieces"));

  /* The latest run in conversation order is Q3's newest. */
  g_clear_object (&run);
  run = kaged_store_get_latest_run_in_conversation (fixture->store, session_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_id (run), ==, regen->run_id);
}

static void
test_regenerate_invalid (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedReceipt) regen = NULL;
  g_autoptr(KagedSession) other = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  gint64 session_id = kaged_session_get_id (fixture->session);
  guint n_messages;
  guint n_requests;
  KagedReceipt *receipt;

  fixture_set_scenario (fixture, "[{\"kind\": \"openai\", \"text\": \"Fine\"}]");

  first = post (fixture, "Q1");
  wait_run (fixture, first->run_id);
  second = post (fixture, "Q2");
  wait_run (fixture, second->run_id);
  regen = kaged_session_manager_regenerate (fixture->manager, session_id, first->message_id,
                                            &error);
  g_assert_no_error (error);
  wait_run (fixture, regen->run_id);

  other = kaged_session_manager_create_session (fixture->manager, "Other", &error);
  g_assert_no_error (error);

  before = dump_operator_rows (fixture);
  n_messages = count_messages (fixture);
  n_requests = kaged_fake_server_get_n_requests (fixture->server, NULL);
  reply = get_reply (fixture, regen->run_id);

  /* Unknown message */
  receipt = kaged_session_manager_regenerate (fixture->manager, session_id, 987654, &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  /* A message of another session */
  receipt = kaged_session_manager_regenerate (fixture->manager, kaged_session_get_id (other),
                                              first->message_id, &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  /* Unknown session */
  receipt = kaged_session_manager_regenerate (fixture->manager, 31337, first->message_id, &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  /* An agent reply as anchor */
  receipt = kaged_session_manager_regenerate (fixture->manager, session_id,
                                              kaged_message_get_id (reply), &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_ANCHOR);
  g_clear_error (&error);

  /* A superseded operator message as anchor */
  receipt = kaged_session_manager_regenerate (fixture->manager, session_id, second->message_id,
                                              &error);
  g_assert_null (receipt);
  g_assert_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_ANCHOR);
  g_clear_error (&error);

  after = dump_operator_rows (fixture);
  g_assert_cmpstr (before, ==, after);
  g_assert_cmpuint (count_messages (fixture), ==, n_messages);
  settle (fixture);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, n_requests + 1);
  g_assert_false (kaged_session_manager_is_busy (fixture->manager, session_id));
}

static void
test_context_overflow_compacts (Fixture       *fixture,
                                gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  g_autoptr(KagedMessage) q1 = NULL;
  g_autoptr(GPtrArray) current = NULL;
  g_autoptr(GError) error = NULL;
  gboolean found_summary = FALSE;
  gint64 session_id = kaged_session_get_id (fixture->session);

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"Long first answer\"},"
                        " {\"status\": 400, \"body\": {\"error\": {\"message\": \"This model's "
                        "  maximum context length is 8192 tokens.\", \"type\": "
                        "  \"invalid_request_error\", \"code\": \"context_length_exceeded\"}}},"
                        " {\"kind\": \"openai\", \"text\": \"The user asked a long question.\"},"
                        " {\"kind\": \"openai\", \"text\": \"Short second answer\"}]");

  first = post (fixture, "Long first question");
  wait_run (fixture, first->run_id);
  second = post (fixture, "Second question");
  wait_run (fixture, second->run_id);

  run = get_run (fixture, second->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  /* The overflowing attempt, the summary's and the re-run's are all logged. */
  g_assert_cmpuint (kaged_run_get_attempts (run)->len, >=, 3);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 4);

  reply = get_reply (fixture, second->run_id);
  g_assert_cmpstr (kaged_message_get_content (reply), ==, "Short second answer");

  /* The original is kept, marked compacted, and a summary stands for it. */
  q1 = kaged_store_get_message (fixture->store, first->message_id, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_message_get_content (q1), ==, "Long first question");
  g_assert_true (kaged_message_get_compacted (q1));

  current = kaged_store_list_messages (fixture->store, session_id, FALSE, 0, G_MAXUINT, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < current->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (current, i);

      if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_SUMMARY)
        {
          g_assert_cmpstr (kaged_message_get_content (message), ==,
                           "The user asked a long question.");
          found_summary = TRUE;
        }
    }
  g_assert_true (found_summary);
}

static void
test_context_overflow_twice (Fixture       *fixture,
                             gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;

  fixture_set_scenario (fixture,
                        "[{\"kind\": \"openai\", \"text\": \"First answer\"},"
                        " {\"status\": 400, \"body\": {\"error\": {\"message\": \"too long\", "
                        "  \"type\": \"invalid_request_error\", \"code\": \"context_length_exceeded\"}}},"
                        " {\"kind\": \"openai\", \"text\": \"A summary.\"},"
                        " {\"status\": 400, \"body\": {\"error\": {\"message\": \"still too long\", "
                        "  \"type\": \"invalid_request_error\", \"code\": \"context_length_exceeded\"}}}]");

  first = post (fixture, "First question");
  wait_run (fixture, first->run_id);
  second = post (fixture, "Second question");
  wait_run (fixture, second->run_id);

  run = get_run (fixture, second->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_CONTEXT_OVERFLOW);
  g_assert_false (kaged_run_get_retryable (run));
  g_assert_cmpuint (kaged_run_get_attempts (run)->len, >=, 3);
  /* Exactly one re-run: no fifth request. */
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 4);

  reply = get_reply (fixture, second->run_id);
  g_assert_cmpint (kaged_message_get_retry_class (reply), ==, KAGED_RETRY_CLASS_CONTEXT_OVERFLOW);
  g_assert_false (kaged_message_get_retryable (reply));
}

static void
test_context_overflow_summary_overflows (Fixture       *fixture,
                                         gconstpointer  data)
{
  g_autoptr(KagedReceipt) first = NULL;
  g_autoptr(KagedReceipt) second = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) q1 = NULL;
  GBytes *body = NULL;
  g_autoptr(GError) error = NULL;
  const char *overflow = "{\"status\": 400, \"body\": {\"error\": {\"message\": \"too long\", "
                         "\"type\": \"invalid_request_error\", \"code\": \"context_length_exceeded\"}}}";
  g_autofree char *scenario =
    g_strdup_printf ("[{\"kind\": \"openai\", \"text\": \"First answer\"}, %s, %s, "
                     "{\"kind\": \"openai\", \"text\": \"Answer without the old turns\"}]",
                     overflow, overflow);

  fixture_set_scenario (fixture, scenario);

  first = post (fixture, "An enormous first question");
  wait_run (fixture, first->run_id);
  second = post (fixture, "Second question");
  wait_run (fixture, second->run_id);

  run = get_run (fixture, second->run_id);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);

  /* The oldest turn was left out of the re-run, and kept in the store. */
  q1 = kaged_store_get_message (fixture->store, first->message_id, &error);
  g_assert_no_error (error);
  g_assert_true (kaged_message_get_compacted (q1));
  body = kaged_fake_server_get_last_body (fixture->server, NULL);
  g_assert_null (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body),
                               "An enormous first question"));
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body),
                                  "Second question"));
}

int
main (int   argc,
      char *argv[])
{
  kaged_engine_test_init (&argc, &argv);

#define ADD(path, func) \
  g_test_add ("/engine/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  ADD ("regenerate/latest-while-running", test_regenerate_latest_while_running);
  ADD ("regenerate/earlier", test_regenerate_earlier);
  ADD ("regenerate/invalid", test_regenerate_invalid);
  ADD ("order/queued-posts", test_conversation_order_with_queued_posts);
  ADD ("overflow/compacts", test_context_overflow_compacts);
  ADD ("overflow/twice", test_context_overflow_twice);
  ADD ("overflow/summary-overflows", test_context_overflow_summary_overflows);

#undef ADD

  return g_test_run ();
}
