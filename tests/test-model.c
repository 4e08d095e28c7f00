/* test-model.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include "kaged-enum-types.h"
#include "kaged-message.h"
#include "kaged-retry-class.h"
#include "kaged-run.h"
#include "kaged-session.h"

static void
test_retry_class_table (void)
{
  static const struct {
    const char *name;
    KagedRetryClass retry_class;
    gboolean retryable;
  } expected[] = {
    { "rate_limited", KAGED_RETRY_CLASS_RATE_LIMITED, TRUE },
    { "overloaded", KAGED_RETRY_CLASS_OVERLOADED, TRUE },
    { "server_error", KAGED_RETRY_CLASS_SERVER_ERROR, TRUE },
    { "network", KAGED_RETRY_CLASS_NETWORK, TRUE },
    { "timeout", KAGED_RETRY_CLASS_TIMEOUT, TRUE },
    { "quota_scheduled", KAGED_RETRY_CLASS_QUOTA_SCHEDULED, TRUE },
    { "quota_exhausted", KAGED_RETRY_CLASS_QUOTA_EXHAUSTED, FALSE },
    { "context_overflow", KAGED_RETRY_CLASS_CONTEXT_OVERFLOW, FALSE },
    { "auth_failed", KAGED_RETRY_CLASS_AUTH_FAILED, FALSE },
    { "credentials_unresolved", KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED, FALSE },
    { "spend_limit_exceeded", KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED, FALSE },
    { "invalid_request", KAGED_RETRY_CLASS_INVALID_REQUEST, FALSE },
    { "protocol_error", KAGED_RETRY_CLASS_PROTOCOL_ERROR, FALSE },
    { "interrupted", KAGED_RETRY_CLASS_INTERRUPTED, FALSE },
  };

  for (guint i = 0; i < G_N_ELEMENTS (expected); i++)
    {
      KagedRetryClass parsed = KAGED_RETRY_CLASS_NONE;

      g_assert_cmpstr (kaged_retry_class_to_string (expected[i].retry_class), ==, expected[i].name);
      g_assert_true (kaged_retry_class_from_string (expected[i].name, &parsed));
      g_assert_cmpint (parsed, ==, expected[i].retry_class);
      g_assert_cmpint (kaged_retry_class_is_retryable (parsed), ==, expected[i].retryable);
      g_assert_nonnull (kaged_retry_class_describe (parsed));
      g_assert_cmpint (kaged_retry_class_needs_until (parsed), ==,
                       parsed == KAGED_RETRY_CLASS_QUOTA_SCHEDULED);
    }

  g_assert_null (kaged_retry_class_to_string (KAGED_RETRY_CLASS_NONE));
  g_assert_false (kaged_retry_class_is_retryable (KAGED_RETRY_CLASS_NONE));
  g_assert_false (kaged_retry_class_from_string ("rate-limited", NULL));
  g_assert_false (kaged_retry_class_from_string ("", NULL));
  g_assert_false (kaged_retry_class_from_string (NULL, NULL));
}

static void
test_enum_nicks (void)
{
  int value = -1;

  g_assert_cmpstr (kaged_enum_to_nick (KAGED_TYPE_MESSAGE_ROLE, KAGED_MESSAGE_ROLE_OPERATOR), ==, "operator");
  g_assert_cmpstr (kaged_enum_to_nick (KAGED_TYPE_MESSAGE_STATUS, KAGED_MESSAGE_STATUS_INTERRUPTED), ==, "interrupted");
  g_assert_cmpstr (kaged_enum_to_nick (KAGED_TYPE_RUN_STATUS, KAGED_RUN_STATUS_CANCELLED), ==, "cancelled");
  g_assert_cmpstr (kaged_enum_to_nick (KAGED_TYPE_SESSION_STATE, KAGED_SESSION_STATE_RUNNING), ==, "running");
  g_assert_true (kaged_enum_from_nick (KAGED_TYPE_RUN_STATUS, "succeeded", &value));
  g_assert_cmpint (value, ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_false (kaged_enum_from_nick (KAGED_TYPE_RUN_STATUS, "done", &value));
}

static guint notify_count;

static void
count_notify (GObject    *object,
              GParamSpec *pspec,
              gpointer    user_data)
{
  notify_count++;
}

static void
test_message_properties (void)
{
  g_autoptr(KagedMessage) message = kaged_message_new ();
  g_autofree char *content = NULL;
  KagedMessageRole role;
  KagedRetryClass retry_class;
  gint64 until;

  g_signal_connect (message, "notify", G_CALLBACK (count_notify), NULL);
  notify_count = 0;

  g_object_set (message,
                "id", (gint64)7,
                "session-id", (gint64)3,
                "role", KAGED_MESSAGE_ROLE_AGENT,
                "content", "Hello",
                "run-id", (gint64)11,
                "status", KAGED_MESSAGE_STATUS_FAILED,
                "error-message", "Overloaded",
                "retryable", TRUE,
                "retry-class", KAGED_RETRY_CLASS_OVERLOADED,
                "retry-after-until", (gint64)1764400000000,
                NULL);
  g_assert_cmpuint (notify_count, ==, 10);

  /* Setting the same values again announces nothing. */
  kaged_message_set_content (message, "Hello");
  kaged_message_set_retryable (message, TRUE);
  g_assert_cmpuint (notify_count, ==, 10);

  g_object_get (message, "content", &content, "role", &role, "retry-class", &retry_class,
                "retry-after-until", &until, NULL);
  g_assert_cmpstr (content, ==, "Hello");
  g_assert_cmpint (role, ==, KAGED_MESSAGE_ROLE_AGENT);
  g_assert_cmpint (retry_class, ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpint (until, ==, 1764400000000);
  g_assert_cmpint (kaged_message_get_run_id (message), ==, 11);
  g_assert_cmpint (kaged_message_get_status (message), ==, KAGED_MESSAGE_STATUS_FAILED);
  g_assert_true (kaged_message_get_retryable (message));

  g_assert_false (kaged_message_is_superseded (message));
  kaged_message_set_superseded_by_run (message, 12);
  g_assert_true (kaged_message_is_superseded (message));
  kaged_message_set_compacted (message, TRUE);
  g_assert_true (kaged_message_get_compacted (message));
}

static void
test_run_properties (void)
{
  g_autoptr(KagedRun) run = kaged_run_new ();
  g_autoptr(KagedAttempt) attempt = kaged_attempt_new ();
  GPtrArray *attempts = NULL;
  const KagedAttempt *stored;

  g_object_set (run,
                "id", (gint64)5,
                "session-id", (gint64)2,
                "anchor-id", (gint64)9,
                "status", KAGED_RUN_STATUS_FAILED,
                "input-tokens", (gint64)120,
                "output-tokens", (gint64)33,
                "retryable", TRUE,
                "retry-class", KAGED_RETRY_CLASS_RATE_LIMITED,
                "http-status", 429u,
                "started-at", (gint64)1000,
                "finished-at", (gint64)2000,
                NULL);
  g_assert_cmpint (kaged_run_get_anchor_id (run), ==, 9);
  g_assert_cmpint (kaged_run_get_input_tokens (run), ==, 120);
  g_assert_cmpint (kaged_run_get_output_tokens (run), ==, 33);
  g_assert_cmpuint (kaged_run_get_http_status (run), ==, 429);
  g_assert_true (kaged_run_is_finished (run));
  kaged_run_set_status (run, KAGED_RUN_STATUS_RUNNING);
  g_assert_false (kaged_run_is_finished (run));

  attempt->time = 1500;
  attempt->http_status = 429;
  attempt->error = g_strdup ("Rate limit reached");
  attempt->retry_class = KAGED_RETRY_CLASS_RATE_LIMITED;
  attempt->wait_ms = 840;
  attempt->wait_source = g_strdup ("retry-after-ms");
  kaged_run_add_attempt (run, attempt);

  /* The run keeps its own copy. */
  g_free (attempt->error);
  attempt->error = g_strdup ("changed");

  g_object_get (run, "attempts", &attempts, NULL);
  g_assert_cmpuint (attempts->len, ==, 1);
  stored = g_ptr_array_index (attempts, 0);
  g_assert_cmpstr (stored->error, ==, "Rate limit reached");
  g_assert_cmpstr (stored->wait_source, ==, "retry-after-ms");
  g_assert_cmpint (stored->wait_ms, ==, 840);
  g_ptr_array_unref (attempts);

  kaged_run_clear_attempts (run);
  g_assert_cmpuint (kaged_run_get_attempts (run)->len, ==, 0);
}

static void
test_session_properties (void)
{
  g_autoptr(KagedSession) session = kaged_session_new ();
  g_autofree char *title = NULL;

  g_object_set (session, "id", (gint64)1, "title", "Trip to Lyon",
                "state", KAGED_SESSION_STATE_RUNNING, NULL);
  g_object_get (session, "title", &title, NULL);
  g_assert_cmpstr (title, ==, "Trip to Lyon");
  g_assert_cmpint (kaged_session_get_state (session), ==, KAGED_SESSION_STATE_RUNNING);
  kaged_session_set_title (session, NULL);
  g_assert_null (kaged_session_get_title (session));
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/model/retry-class/table", test_retry_class_table);
  g_test_add_func ("/model/enums/nicks", test_enum_nicks);
  g_test_add_func ("/model/message/properties", test_message_properties);
  g_test_add_func ("/model/run/properties", test_run_properties);
  g_test_add_func ("/model/session/properties", test_session_properties);

  return g_test_run ();
}
