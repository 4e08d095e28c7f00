/* test-store-runs.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Runs and their attempts, the Tier 2 state, transactions.
 */

#include "config.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>

#include "kaged-clock.h"
#include "kaged-store.h"
#include "kaged-store-private.h"

#include "kaged-store-fixture.h"

static void
test_runs (Fixture       *fixture,
           gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Runs");
  g_autoptr(KagedSession) other = add_session (store, "Other");
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedRun) latest = NULL;
  g_autoptr(GPtrArray) queued = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 q1, reply, run_id, second_id;
  KagedAttempt first = {
    .time = T0 + 10, .http_status = 529, .error = (char *)"Overloaded",
    .retry_class = KAGED_RETRY_CLASS_OVERLOADED, .wait_ms = 1800, .wait_source = (char *)"backoff",
  };
  KagedAttempt second = { .time = T0 + 2000, .http_status = 200 };
  GPtrArray *attempts;
  const KagedAttempt *logged;

  q1 = add_operator (store, session_id, "Hello");
  run_id = add_run (store, session_id, q1, KAGED_RUN_STATUS_QUEUED);
  second_id = add_run (store, session_id, q1, KAGED_RUN_STATUS_QUEUED);

  queued = kaged_store_list_runs (store, session_id, KAGED_RUN_STATUS_QUEUED, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (queued->len, ==, 2);
  g_assert_cmpint (kaged_run_get_id (g_ptr_array_index (queued, 0)), ==, run_id);
  g_assert_cmpint (kaged_run_get_id (g_ptr_array_index (queued, 1)), ==, second_id);
  g_clear_pointer (&queued, g_ptr_array_unref);

  run = kaged_store_get_run (store, run_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_anchor_id (run), ==, q1);
  g_assert_cmpint (kaged_run_get_created_at (run), ==, T0);
  g_assert_cmpint (kaged_run_get_started_at (run), ==, 0);

  kaged_run_set_status (run, KAGED_RUN_STATUS_RUNNING);
  kaged_run_set_started_at (run, T0 + 5);
  g_assert_true (kaged_store_update_run (store, run, &error));
  g_assert_no_error (error);
  reply = add_agent (store, session_id, run_id, "Hi", KAGED_MESSAGE_STATUS_STREAMING);
  g_assert_true (kaged_store_append_attempt (store, run_id, &first, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_append_attempt (store, run_id, &second, &error));
  g_assert_no_error (error);

  kaged_run_set_status (run, KAGED_RUN_STATUS_FAILED);
  kaged_run_set_input_tokens (run, 120);
  kaged_run_set_output_tokens (run, 7);
  kaged_run_set_retryable (run, TRUE);
  kaged_run_set_retry_class (run, KAGED_RETRY_CLASS_QUOTA_SCHEDULED);
  kaged_run_set_retry_after_until (run, T0 + 3600000);
  kaged_run_set_http_status (run, 429);
  kaged_run_set_error_message (run, "No quota for 60 minutes");
  kaged_run_set_finished_at (run, T0 + 2500);
  g_assert_true (kaged_store_update_run (store, run, &error));
  g_assert_no_error (error);
  g_clear_object (&run);

  run = kaged_store_get_run (store, run_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_input_tokens (run), ==, 120);
  g_assert_cmpint (kaged_run_get_output_tokens (run), ==, 7);
  g_assert_true (kaged_run_get_retryable (run));
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_QUOTA_SCHEDULED);
  g_assert_cmpint (kaged_run_get_retry_after_until (run), ==, T0 + 3600000);
  g_assert_cmpuint (kaged_run_get_http_status (run), ==, 429);
  g_assert_cmpstr (kaged_run_get_error_message (run), ==, "No quota for 60 minutes");
  g_assert_cmpint (kaged_run_get_started_at (run), ==, T0 + 5);
  g_assert_cmpint (kaged_run_get_finished_at (run), ==, T0 + 2500);

  attempts = kaged_run_get_attempts (run);
  g_assert_cmpuint (attempts->len, ==, 2);
  logged = g_ptr_array_index (attempts, 0);
  g_assert_cmpint (logged->time, ==, T0 + 10);
  g_assert_cmpuint (logged->http_status, ==, 529);
  g_assert_cmpstr (logged->error, ==, "Overloaded");
  g_assert_cmpint (logged->retry_class, ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpint (logged->wait_ms, ==, 1800);
  g_assert_cmpstr (logged->wait_source, ==, "backoff");
  logged = g_ptr_array_index (attempts, 1);
  g_assert_cmpuint (logged->http_status, ==, 200);
  g_assert_null (logged->error);
  g_assert_null (logged->wait_source);
  g_assert_cmpint (logged->retry_class, ==, KAGED_RETRY_CLASS_NONE);

  /* Usage counts from the runs finished in the period and those running. */
  {
    gint64 input = 0, output = 0;
    g_autoptr(KagedRun) running = kaged_store_get_run (store, second_id, &error);

    g_assert_no_error (error);
    g_assert_true (kaged_store_sum_usage (store, T0 + 2500, &input, &output, &error));
    g_assert_no_error (error);
    g_assert_cmpint (input, ==, 120);
    g_assert_cmpint (output, ==, 7);
    g_assert_true (kaged_store_sum_usage (store, T0 + 2501, &input, &output, &error));
    g_assert_cmpint (input, ==, 0);
    g_assert_cmpint (output, ==, 0);

    kaged_run_set_status (running, KAGED_RUN_STATUS_RUNNING);
    kaged_run_set_input_tokens (running, 5);
    g_assert_true (kaged_store_update_run (store, running, &error));
    g_assert_true (kaged_store_sum_usage (store, T0 + 2501, &input, &output, &error));
    g_assert_cmpint (input, ==, 5);
    kaged_run_set_status (running, KAGED_RUN_STATUS_QUEUED);
    kaged_run_set_input_tokens (running, 0);
    g_assert_true (kaged_store_update_run (store, running, &error));
    g_assert_no_error (error);
  }

  latest = kaged_store_get_latest_run (store, session_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_id (latest), ==, second_id);
  g_assert_null (kaged_store_get_latest_run (store, kaged_session_get_id (other), &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  queued = kaged_store_list_runs (store, 0, KAGED_RUN_STATUS_QUEUED, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (queued->len, ==, 1);
  g_clear_pointer (&queued, g_ptr_array_unref);

  /* Requests that do not fit. */
  g_assert_false (kaged_store_append_attempt (store, 999999, &first, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  {
    g_autoptr(KagedRun) bad = kaged_run_new ();

    /* An agent message is no anchor. */
    kaged_run_set_session_id (bad, session_id);
    kaged_run_set_anchor_id (bad, reply);
    g_assert_false (kaged_store_create_run (store, bad, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
    g_clear_error (&error);

    /* Nor a message of another session. */
    kaged_run_set_session_id (bad, kaged_session_get_id (other));
    kaged_run_set_anchor_id (bad, q1);
    g_assert_false (kaged_store_create_run (store, bad, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
    g_clear_error (&error);

    kaged_run_set_id (bad, 999999);
    g_assert_false (kaged_store_update_run (store, bad, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
    g_clear_error (&error);
  }
  {
    g_autoptr(KagedMessage) bad = kaged_message_new ();

    /* An agent message of a run of another session. */
    kaged_message_set_session_id (bad, kaged_session_get_id (other));
    kaged_message_set_role (bad, KAGED_MESSAGE_ROLE_AGENT);
    kaged_message_set_run_id (bad, run_id);
    g_assert_false (kaged_store_append_message (store, bad, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
    g_clear_error (&error);

    /* An operator message with a run. */
    kaged_message_set_session_id (bad, session_id);
    kaged_message_set_role (bad, KAGED_MESSAGE_ROLE_OPERATOR);
    g_assert_false (kaged_store_append_message (store, bad, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
    g_clear_error (&error);

    /* A message of no session. */
    kaged_message_set_run_id (bad, 0);
    kaged_message_set_session_id (bad, 999999);
    g_assert_false (kaged_store_append_message (store, bad, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
    g_clear_error (&error);
    g_assert_cmpint (kaged_message_get_id (bad), ==, 0);
  }
}

static void
test_retry_state (Fixture       *fixture,
                  gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Retry");
  g_autoptr(KagedStoreRetryState) state = NULL;
  g_autoptr(KagedStoreRetryState) copy = NULL;
  g_autoptr(GPtrArray) states = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 anchor = add_operator (store, session_id, "Retry me");

  state = kaged_store_get_retry_state (store, session_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (state->session_id, ==, session_id);
  g_assert_cmpstr (state->state, ==, "idle");
  g_assert_cmpuint (state->attempt, ==, 0);
  g_assert_false (state->cancelled);

  g_free (state->state);
  state->state = g_strdup ("scheduled");
  state->attempt = 3;
  state->next_eligible_at = T0 + 3000000;
  state->anchor_id = anchor;
  g_assert_true (kaged_store_set_retry_state (store, state, &error));
  g_assert_no_error (error);
  g_clear_object (&store);

  store = open_store (fixture);
  copy = kaged_store_get_retry_state (store, session_id, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (copy->state, ==, "scheduled");
  g_assert_cmpuint (copy->attempt, ==, 3);
  g_assert_cmpint (copy->next_eligible_at, ==, T0 + 3000000);
  g_assert_cmpint (copy->anchor_id, ==, anchor);
  g_assert_cmpint (copy->updated_at, ==, T0);
  g_assert_false (copy->cancelled);

  copy->cancelled = TRUE;
  g_free (copy->state);
  copy->state = g_strdup ("cancelled");
  g_assert_true (kaged_store_set_retry_state (store, copy, &error));
  g_assert_no_error (error);

  states = kaged_store_list_retry_states (store, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (states->len, ==, 1);
  g_assert_true (((KagedStoreRetryState *)g_ptr_array_index (states, 0))->cancelled);
  g_clear_pointer (&states, g_ptr_array_unref);

  g_assert_true (kaged_store_clear_retry_state (store, session_id, &error));
  g_assert_no_error (error);
  states = kaged_store_list_retry_states (store, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (states->len, ==, 0);

  state->session_id = 999999;
  g_assert_false (kaged_store_set_retry_state (store, state, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
}

typedef struct
{
  gint64 session_id;
  gboolean fail;
} TransactionData;

static gboolean
append_two (KagedStore  *store,
            gpointer     user_data,
            GError     **error)
{
  TransactionData *data = user_data;

  add_operator (store, data->session_id, "one");
  add_operator (store, data->session_id, "two");

  if (data->fail)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "Changed my mind");
      return FALSE;
    }
  return TRUE;
}

static void
test_transaction (Fixture       *fixture,
                  gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Together");
  g_autoptr(GError) error = NULL;
  TransactionData data = { kaged_session_get_id (session), TRUE };
  guint n = 0;

  g_assert_false (kaged_store_transaction (store, append_two, &data, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  g_assert_true (kaged_store_count_messages (store, data.session_id, TRUE, &n, &error));
  g_assert_cmpuint (n, ==, 0);

  data.fail = FALSE;
  g_assert_true (kaged_store_transaction (store, append_two, &data, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_count_messages (store, data.session_id, TRUE, &n, &error));
  g_assert_cmpuint (n, ==, 2);

  /* Nested: the inner one rolls back alone, the outer one commits. */
  g_assert_true (kaged_store_begin (store, &error));
  add_operator (store, data.session_id, "three");
  data.fail = TRUE;
  g_assert_false (kaged_store_transaction (store, append_two, &data, &error));
  g_clear_error (&error);
  g_assert_true (kaged_store_commit (store, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_count_messages (store, data.session_id, TRUE, &n, &error));
  g_assert_cmpuint (n, ==, 3);

  /* A rolled back outer transaction undoes everything in it. */
  g_assert_true (kaged_store_begin (store, &error));
  add_operator (store, data.session_id, "four");
  kaged_store_rollback (store);
  g_assert_true (kaged_store_count_messages (store, data.session_id, TRUE, &n, &error));
  g_assert_cmpuint (n, ==, 3);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

#define ADD_TEST(path, func) \
  g_test_add (path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  ADD_TEST ("/store/runs", test_runs);
  ADD_TEST ("/store/retry-state", test_retry_state);
  ADD_TEST ("/store/transaction", test_transaction);

#undef ADD_TEST

  return g_test_run ();
}
