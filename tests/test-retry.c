/* test-retry.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <libsoup/soup.h>

#include "kaged-anthropic-provider.h"
#include "kaged-clock.h"
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-message.h"
#include "kaged-ollama-provider.h"
#include "kaged-openai-provider.h"
#include "kaged-provider.h"
#include "kaged-random.h"
#include "kaged-retry.h"

#define WALL_START_MS G_GINT64_CONSTANT (1767225600000) /* 2026-01-01T00:00:00Z */

/* ------------------------------------------------------------------------ */
/* A scripted provider: each call plays the next outcome of its script. */

typedef struct
{
  GError     *error;     /* NULL: the reply ends normally */
  const char *delta;     /* pushed before the outcome */
  gboolean    hang;      /* never answer until cancelled */
} Outcome;

#define TEST_TYPE_PROVIDER (test_provider_get_type ())
G_DECLARE_FINAL_TYPE (TestProvider, test_provider, TEST, PROVIDER, GObject)

struct _TestProvider
{
  GObject    parent_instance;
  GArray    *script;   /* Outcome */
  guint      n_calls;
  guint      n_cancelled;
};

static void test_provider_iface_init (KagedProviderInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (TestProvider, test_provider, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (KAGED_TYPE_PROVIDER, test_provider_iface_init))

typedef struct
{
  KagedChat *chat;
  Outcome   *outcome;
  gulong     cancelled_id;
} CallState;

static void
call_state_free (CallState *state)
{
  g_clear_object (&state->chat);
  g_free (state);
}

static gboolean
play_outcome_cb (gpointer user_data)
{
  GTask *task = user_data;
  CallState *state = g_task_get_task_data (task);

  if (g_task_return_error_if_cancelled (task))
    return G_SOURCE_REMOVE;

  if (state->outcome->delta != NULL)
    kaged_chat_push_delta (state->chat, KAGED_DELTA_TEXT, state->outcome->delta, -1);

  if (state->outcome->error != NULL)
    g_task_return_error (task, g_error_copy (state->outcome->error));
  else
    g_task_return_boolean (task, TRUE);

  return G_SOURCE_REMOVE;
}

static gboolean
return_cancelled_cb (gpointer user_data)
{
  GTask *task = user_data;
  TestProvider *self = g_task_get_source_object (task);
  CallState *state = g_task_get_task_data (task);

  g_cancellable_disconnect (g_task_get_cancellable (task), state->cancelled_id);
  state->cancelled_id = 0;
  self->n_cancelled++;
  g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "Operation was cancelled");

  return G_SOURCE_REMOVE;
}

static void
hang_cancelled_cb (GCancellable *cancellable,
                   GTask        *task)
{
  g_idle_add_full (G_PRIORITY_DEFAULT, return_cancelled_cb, g_object_ref (task), g_object_unref);
}

static void
test_provider_chat_async (KagedProvider       *provider,
                          KagedChat           *chat,
                          GCancellable        *cancellable,
                          GAsyncReadyCallback  callback,
                          gpointer             user_data)
{
  TestProvider *self = TEST_PROVIDER (provider);
  g_autoptr(GTask) task = g_task_new (self, cancellable, callback, user_data);
  CallState *state = g_new0 (CallState, 1);
  guint index = MIN (self->n_calls, self->script->len - 1);

  self->n_calls++;
  state->chat = g_object_ref (chat);
  state->outcome = &g_array_index (self->script, Outcome, index);
  g_task_set_task_data (task, state, (GDestroyNotify)call_state_free);

  if (state->outcome->hang)
    {
      g_assert_nonnull (cancellable);
      state->cancelled_id = g_cancellable_connect (cancellable, G_CALLBACK (hang_cancelled_cb),
                                                   g_object_ref (task), g_object_unref);
      return;
    }

  g_idle_add_full (G_PRIORITY_DEFAULT, play_outcome_cb, g_object_ref (task), g_object_unref);
}

static gboolean
test_provider_chat_finish (KagedProvider  *provider,
                           GAsyncResult   *result,
                           GError        **error)
{
  return g_task_propagate_boolean (G_TASK (result), error);
}

static void
test_provider_iface_init (KagedProviderInterface *iface)
{
  iface->chat_async = test_provider_chat_async;
  iface->chat_finish = test_provider_chat_finish;
}

static void
test_provider_finalize (GObject *object)
{
  TestProvider *self = TEST_PROVIDER (object);

  for (guint i = 0; i < self->script->len; i++)
    g_clear_error (&g_array_index (self->script, Outcome, i).error);
  g_array_unref (self->script);

  G_OBJECT_CLASS (test_provider_parent_class)->finalize (object);
}

static void
test_provider_class_init (TestProviderClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = test_provider_finalize;
}

static void
test_provider_init (TestProvider *self)
{
  self->script = g_array_new (FALSE, TRUE, sizeof (Outcome));
}

/* Takes @error. */
static void
test_provider_add (TestProvider *self,
                   GError       *error,
                   const char   *delta)
{
  Outcome outcome = { error, delta, FALSE };

  g_array_append_val (self->script, outcome);
}

static void
test_provider_add_hang (TestProvider *self)
{
  Outcome outcome = { NULL, NULL, TRUE };

  g_array_append_val (self->script, outcome);
}

static GError *
http_error (KagedRetryClass  retry_class,
            guint            status)
{
  GError *error = kaged_provider_error_new (retry_class, "HTTP %u from the test provider", status);

  kaged_provider_error_set_http_status (error, status);
  return error;
}

/* ------------------------------------------------------------------------ */
/* Driving a chat with the fake clock */

typedef struct
{
  KagedClock    *clock;
  KagedRandom   *random;
  TestProvider  *inner;
  KagedProvider *retry;
  KagedChat     *chat;
  GCancellable  *cancellable;
  GError        *error;
  guint64        slept_ms;
  gboolean       done;
  gboolean       ok;

  /* Tests against real providers */
  KagedFakeServer *server;
  SoupSession     *session;
  GString         *text;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  user_data)
{
  g_autoptr(GPtrArray) messages = g_ptr_array_new_with_free_func (g_object_unref);
  KagedMessage *message = kaged_message_new ();

  kaged_message_set_role (message, KAGED_MESSAGE_ROLE_OPERATOR);
  kaged_message_set_content (message, "Hello?");
  g_ptr_array_add (messages, message);

  fixture->clock = kaged_fake_clock_new (WALL_START_MS);
  fixture->random = kaged_random_new_with_seed (GPOINTER_TO_UINT (user_data) + 7);
  fixture->inner = g_object_new (TEST_TYPE_PROVIDER, NULL);
  fixture->retry = kaged_retry_provider_new (KAGED_PROVIDER (fixture->inner),
                                             fixture->clock, fixture->random);
  fixture->chat = kaged_chat_new (messages, NULL);
  fixture->cancellable = g_cancellable_new ();
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  user_data)
{
  g_clear_error (&fixture->error);
  if (fixture->session != NULL)
    soup_session_abort (fixture->session);
  g_clear_object (&fixture->session);
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_clear_object (&fixture->server);
  if (fixture->text != NULL)
    g_string_free (g_steal_pointer (&fixture->text), TRUE);
  g_clear_object (&fixture->cancellable);
  g_clear_object (&fixture->chat);
  g_clear_object (&fixture->retry);
  g_clear_object (&fixture->inner);
  g_clear_object (&fixture->random);
  g_clear_object (&fixture->clock);

  while (g_main_context_iteration (NULL, FALSE))
    ;
}

static void
chat_done_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  Fixture *fixture = user_data;

  fixture->ok = kaged_provider_chat_finish (KAGED_PROVIDER (object), result, &fixture->error);
  fixture->done = TRUE;
}

static void
start_chat (Fixture *fixture)
{
  kaged_provider_chat_async (fixture->retry, fixture->chat, fixture->cancellable,
                             chat_done_cb, fixture);
}

/* Runs the main context; when nothing but fake-clock timeouts is left,
 * moves the clock to the next one. Never sleeps in real time. */
static void
run_until_done (Fixture *fixture)
{
  KagedFakeClock *clock = KAGED_FAKE_CLOCK (fixture->clock);

  while (!fixture->done)
    {
      if (g_main_context_iteration (NULL, FALSE))
        continue;

      if (kaged_fake_clock_get_n_pending (clock) > 0)
        {
          guint64 next = kaged_fake_clock_next_deadline (clock);

          fixture->slept_ms += next;
          kaged_fake_clock_advance (clock, next);
          continue;
        }

      g_main_context_iteration (NULL, TRUE);
    }
}

static KagedAttempt *
get_attempt (Fixture *fixture,
             guint    index)
{
  GPtrArray *attempts = kaged_chat_get_attempts (fixture->chat);

  g_assert_cmpuint (index, <, attempts->len);
  return g_ptr_array_index (attempts, index);
}

static guint
n_attempts (Fixture *fixture)
{
  return kaged_chat_get_attempts (fixture->chat)->len;
}

/* ------------------------------------------------------------------------ */
/* Tier 1 rules, with a scripted provider */

static void
test_backoff_bounds (void)
{
  g_autoptr(KagedRandom) random = kaged_random_new_with_seed (42);

  for (guint i = 0; i < 1000; i++)
    {
      guint64 first = kaged_retry_backoff_ms (1, random);
      guint64 second = kaged_retry_backoff_ms (2, random);
      guint64 late = kaged_retry_backoff_ms (10, random);

      g_assert_cmpuint (first, >=, 750);
      g_assert_cmpuint (first, <=, 1000);
      g_assert_cmpuint (second, >=, 1500);
      g_assert_cmpuint (second, <=, 2000);
      g_assert_cmpuint (late, >=, 22500);
      g_assert_cmpuint (late, <=, 30000);
    }
}

static void
test_three_attempts_on_503 (Fixture       *fixture,
                            gconstpointer  user_data)
{
  KagedAttempt *attempt;

  test_provider_add (fixture->inner, http_error (KAGED_RETRY_CLASS_OVERLOADED, 503), NULL);
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_false (fixture->ok);
  g_assert_error (fixture->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpuint (fixture->inner->n_calls, ==, 3);
  g_assert_cmpuint (n_attempts (fixture), ==, 3);

  attempt = get_attempt (fixture, 0);
  g_assert_cmpint (attempt->time, ==, WALL_START_MS);
  g_assert_cmpuint (attempt->http_status, ==, 503);
  g_assert_cmpint (attempt->retry_class, ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpstr (attempt->wait_source, ==, "backoff");
  g_assert_cmpint (attempt->wait_ms, >=, 750);
  g_assert_cmpint (attempt->wait_ms, <=, 1000);
  g_assert_nonnull (attempt->error);

  attempt = get_attempt (fixture, 1);
  g_assert_cmpstr (attempt->wait_source, ==, "backoff");
  g_assert_cmpint (attempt->wait_ms, >=, 1500);
  g_assert_cmpint (attempt->wait_ms, <=, 2000);
  g_assert_cmpint (attempt->time, ==, WALL_START_MS + get_attempt (fixture, 0)->wait_ms);

  attempt = get_attempt (fixture, 2);
  g_assert_cmpint (attempt->wait_ms, ==, 0);
  g_assert_null (attempt->wait_source);
  g_assert_cmpuint (attempt->http_status, ==, 503);

  /* The waits logged are the waits the clock went through. */
  g_assert_cmpuint (fixture->slept_ms, ==, get_attempt (fixture, 0)->wait_ms + get_attempt (fixture, 1)->wait_ms);
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (fixture->error), ==, 0);
}

static void
test_success_after_retry (Fixture       *fixture,
                          gconstpointer  user_data)
{
  KagedAttempt *attempt;

  test_provider_add (fixture->inner, http_error (KAGED_RETRY_CLASS_OVERLOADED, 529), NULL);
  test_provider_add (fixture->inner, NULL, "Hello");
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_no_error (fixture->error);
  g_assert_true (fixture->ok);
  g_assert_true (kaged_chat_has_delta (fixture->chat));
  g_assert_cmpuint (fixture->inner->n_calls, ==, 2);
  g_assert_cmpuint (n_attempts (fixture), ==, 2);

  attempt = get_attempt (fixture, 1);
  g_assert_cmpuint (attempt->http_status, ==, 200);
  g_assert_null (attempt->error);
  g_assert_cmpint (attempt->retry_class, ==, KAGED_RETRY_CLASS_NONE);
  g_assert_cmpint (attempt->wait_ms, ==, 0);
}

typedef struct
{
  KagedRetryClass retry_class;
  guint           status;
  int             should_retry;
  guint           expected_calls;
} StatusCase;

static void
test_status_rules (void)
{
  static const StatusCase cases[] = {
    /* Retried: three attempts. */
    { KAGED_RETRY_CLASS_TIMEOUT, 408, -1, 3 },
    { KAGED_RETRY_CLASS_INVALID_REQUEST, 409, -1, 3 },
    { KAGED_RETRY_CLASS_RATE_LIMITED, 429, -1, 3 },
    { KAGED_RETRY_CLASS_SERVER_ERROR, 500, -1, 3 },
    { KAGED_RETRY_CLASS_SERVER_ERROR, 502, -1, 3 },
    { KAGED_RETRY_CLASS_OVERLOADED, 503, -1, 3 },
    { KAGED_RETRY_CLASS_SERVER_ERROR, 504, -1, 3 },
    { KAGED_RETRY_CLASS_OVERLOADED, 529, -1, 3 },
    { KAGED_RETRY_CLASS_NETWORK, 0, -1, 3 },
    { KAGED_RETRY_CLASS_TIMEOUT, 0, -1, 3 },
    { KAGED_RETRY_CLASS_OVERLOADED, 200, -1, 3 },   /* error event before the first delta */
    /* Never retried. */
    { KAGED_RETRY_CLASS_INVALID_REQUEST, 400, -1, 1 },
    { KAGED_RETRY_CLASS_AUTH_FAILED, 401, -1, 1 },
    { KAGED_RETRY_CLASS_AUTH_FAILED, 403, -1, 1 },
    { KAGED_RETRY_CLASS_INVALID_REQUEST, 404, -1, 1 },
    { KAGED_RETRY_CLASS_INVALID_REQUEST, 422, -1, 1 },
    { KAGED_RETRY_CLASS_CONTEXT_OVERFLOW, 400, -1, 1 },
    { KAGED_RETRY_CLASS_QUOTA_EXHAUSTED, 429, -1, 1 },
    { KAGED_RETRY_CLASS_QUOTA_SCHEDULED, 429, -1, 1 },
    { KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED, 429, -1, 1 },
    { KAGED_RETRY_CLASS_PROTOCOL_ERROR, 200, -1, 1 },
    { KAGED_RETRY_CLASS_PROTOCOL_ERROR, 0, -1, 1 },
    { KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED, 0, -1, 1 },
    /* x-should-retry overrides the status rule … */
    { KAGED_RETRY_CLASS_INVALID_REQUEST, 400, 1, 3 },
    { KAGED_RETRY_CLASS_AUTH_FAILED, 401, 1, 3 },
    { KAGED_RETRY_CLASS_OVERLOADED, 503, 0, 1 },
    { KAGED_RETRY_CLASS_RATE_LIMITED, 429, 0, 1 },
    /* … but not a hard quota. */
    { KAGED_RETRY_CLASS_QUOTA_EXHAUSTED, 429, 1, 1 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      Fixture fixture = { 0 };
      GError *error;

      fixture_set_up (&fixture, GUINT_TO_POINTER (i));
      error = http_error (cases[i].retry_class, cases[i].status);
      kaged_provider_error_set_should_retry (error, cases[i].should_retry);
      test_provider_add (fixture.inner, error, NULL);

      start_chat (&fixture);
      run_until_done (&fixture);

      g_test_message ("case %u: class %d, HTTP %u, x-should-retry %d", i,
                      cases[i].retry_class, cases[i].status, cases[i].should_retry);
      g_assert_false (fixture.ok);
      g_assert_error (fixture.error, KAGED_PROVIDER_ERROR, (int)cases[i].retry_class);
      g_assert_cmpuint (fixture.inner->n_calls, ==, cases[i].expected_calls);
      g_assert_cmpuint (n_attempts (&fixture), ==, cases[i].expected_calls);
      g_assert_cmpuint (get_attempt (&fixture, 0)->http_status, ==, cases[i].status);
      if (cases[i].expected_calls == 1)
        g_assert_cmpuint (fixture.slept_ms, ==, 0);

      fixture_tear_down (&fixture, NULL);
    }
}

static void
test_server_wait_in_window (Fixture       *fixture,
                            gconstpointer  user_data)
{
  GError *error = http_error (KAGED_RETRY_CLASS_RATE_LIMITED, 429);

  kaged_provider_error_set_server_wait (error, 12345, "retry-after-ms");
  test_provider_add (fixture->inner, error, NULL);
  test_provider_add (fixture->inner, NULL, "Hi");
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_no_error (fixture->error);
  g_assert_cmpuint (fixture->inner->n_calls, ==, 2);
  /* Exactly the advised wait: no jitter. */
  g_assert_cmpint (get_attempt (fixture, 0)->wait_ms, ==, 12345);
  g_assert_cmpstr (get_attempt (fixture, 0)->wait_source, ==, "retry-after-ms");
  g_assert_cmpuint (fixture->slept_ms, ==, 12345);
  g_assert_cmpint (get_attempt (fixture, 1)->time, ==, WALL_START_MS + 12345);
}

static void
test_server_wait_at_window (Fixture       *fixture,
                            gconstpointer  user_data)
{
  GError *error = http_error (KAGED_RETRY_CLASS_OVERLOADED, 529);

  kaged_provider_error_set_server_wait (error, KAGED_RETRY_WINDOW_MS, "retry-after");
  test_provider_add (fixture->inner, error, NULL);
  start_chat (fixture);
  run_until_done (fixture);

  /* 30 s is still inside the window: all three attempts, 30 s apart. */
  g_assert_cmpuint (fixture->inner->n_calls, ==, 3);
  g_assert_cmpuint (fixture->slept_ms, ==, 2 * KAGED_RETRY_WINDOW_MS);
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (fixture->error), ==,
                   WALL_START_MS + 3 * KAGED_RETRY_WINDOW_MS);
  g_assert_cmpint (get_attempt (fixture, 1)->wait_ms, ==, KAGED_RETRY_WINDOW_MS);
  g_assert_cmpstr (get_attempt (fixture, 1)->wait_source, ==, "retry-after");
  g_assert_cmpint (get_attempt (fixture, 2)->wait_ms, ==, 0);
  g_assert_cmpstr (get_attempt (fixture, 2)->wait_source, ==, "retry-after");
}

static void
test_server_wait_beyond_window (Fixture       *fixture,
                                gconstpointer  user_data)
{
  GError *error = http_error (KAGED_RETRY_CLASS_RATE_LIMITED, 429);
  KagedAttempt *attempt;

  kaged_provider_error_set_server_wait (error, 31000, "retry-after");
  test_provider_add (fixture->inner, error, NULL);
  test_provider_add (fixture->inner, NULL, "too early");
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_error (fixture->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_RATE_LIMITED);
  g_assert_cmpuint (fixture->inner->n_calls, ==, 1);
  g_assert_cmpuint (fixture->slept_ms, ==, 0);
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (fixture->error), ==, WALL_START_MS + 31000);
  g_assert_true (kaged_provider_error_get_retryable (fixture->error));

  g_assert_cmpuint (n_attempts (fixture), ==, 1);
  attempt = get_attempt (fixture, 0);
  g_assert_cmpuint (attempt->http_status, ==, 429);
  /* No attempt follows in this run; where Tier 2's wait comes from stays. */
  g_assert_cmpint (attempt->wait_ms, ==, 0);
  g_assert_cmpstr (attempt->wait_source, ==, "retry-after");
}

static void
test_long_wait_after_backoff (Fixture       *fixture,
                              gconstpointer  user_data)
{
  GError *error = http_error (KAGED_RETRY_CLASS_OVERLOADED, 529);

  /* The second answer asks for two minutes: Tier 1 stops there. */
  test_provider_add (fixture->inner, http_error (KAGED_RETRY_CLASS_OVERLOADED, 529), NULL);
  kaged_provider_error_set_server_wait (error, 120000, "retry-after");
  test_provider_add (fixture->inner, error, NULL);
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_cmpuint (fixture->inner->n_calls, ==, 2);
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (fixture->error), ==,
                   WALL_START_MS + (gint64)fixture->slept_ms + 120000);
}

static void
test_provider_until_kept (Fixture       *fixture,
                          gconstpointer  user_data)
{
  GError *error = http_error (KAGED_RETRY_CLASS_QUOTA_SCHEDULED, 429);

  /* The quota resets in 50 minutes; the header only speaks of a minute. */
  kaged_provider_error_set_retry_after_until (error, WALL_START_MS + 50 * 60 * 1000);
  kaged_provider_error_set_server_wait (error, 60000, "retry-after");
  test_provider_add (fixture->inner, error, NULL);
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_error (fixture->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_QUOTA_SCHEDULED);
  g_assert_cmpuint (fixture->inner->n_calls, ==, 1);
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (fixture->error), ==,
                   WALL_START_MS + 50 * 60 * 1000);
}

static void
test_no_retry_after_first_delta (Fixture       *fixture,
                                 gconstpointer  user_data)
{
  GError *error = kaged_provider_error_new (KAGED_RETRY_CLASS_NETWORK, "The stream was cut");

  kaged_provider_error_set_http_status (error, 200);
  test_provider_add (fixture->inner, error, "Partial ");
  test_provider_add (fixture->inner, NULL, "never");
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_error (fixture->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_NETWORK);
  g_assert_cmpstr (fixture->error->message, ==, "The stream was cut");
  g_assert_true (kaged_chat_has_delta (fixture->chat));
  g_assert_cmpuint (fixture->inner->n_calls, ==, 1);
  g_assert_cmpuint (n_attempts (fixture), ==, 1);
  g_assert_cmpint (get_attempt (fixture, 0)->wait_ms, ==, 0);
}

static void
test_cancel_during_backoff (Fixture       *fixture,
                            gconstpointer  user_data)
{
  KagedFakeClock *clock = KAGED_FAKE_CLOCK (fixture->clock);

  test_provider_add (fixture->inner, http_error (KAGED_RETRY_CLASS_SERVER_ERROR, 500), NULL);
  start_chat (fixture);

  while (kaged_fake_clock_get_n_pending (clock) == 0)
    g_main_context_iteration (NULL, TRUE);

  g_assert_cmpuint (fixture->inner->n_calls, ==, 1);
  g_assert_false (fixture->done);
  g_cancellable_cancel (fixture->cancellable);

  while (!fixture->done)
    g_main_context_iteration (NULL, TRUE);

  g_assert_error (fixture->error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (kaged_fake_clock_get_n_pending (clock), ==, 0);

  /* Time passing changes nothing: no further attempt. */
  kaged_fake_clock_advance (clock, 60000);
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_assert_cmpuint (fixture->inner->n_calls, ==, 1);
  g_assert_cmpuint (n_attempts (fixture), ==, 1);
}

static void
test_cancel_during_call (Fixture       *fixture,
                         gconstpointer  user_data)
{
  test_provider_add_hang (fixture->inner);
  start_chat (fixture);

  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_assert_cmpuint (fixture->inner->n_calls, ==, 1);
  g_assert_false (fixture->done);

  g_cancellable_cancel (fixture->cancellable);
  while (!fixture->done)
    g_main_context_iteration (NULL, TRUE);

  g_assert_error (fixture->error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  /* The wrapped provider saw the cancellation: the request was aborted. */
  g_assert_cmpuint (fixture->inner->n_cancelled, ==, 1);
  g_assert_cmpuint (fixture->inner->n_calls, ==, 1);
  g_assert_cmpuint (n_attempts (fixture), ==, 1);
  g_assert_cmpint (get_attempt (fixture, 0)->retry_class, ==, KAGED_RETRY_CLASS_NONE);
}

static void
test_cancelled_before_start (Fixture       *fixture,
                             gconstpointer  user_data)
{
  test_provider_add (fixture->inner, NULL, "never");
  g_cancellable_cancel (fixture->cancellable);
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_error (fixture->error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (fixture->inner->n_calls, ==, 0);
  g_assert_cmpuint (n_attempts (fixture), ==, 0);
}

/* ------------------------------------------------------------------------ */
/* Tier 1 around the real providers, against a fake server on 127.0.0.1 */

static void
on_delta (KagedChat      *chat,
          KagedDeltaKind  kind,
          const char     *text,
          Fixture        *fixture)
{
  if (kind == KAGED_DELTA_TEXT)
    g_string_append (fixture->text, text);
}

/* Replaces the scripted provider with a real one of @kind, speaking to a
 * fake server that plays @scenario. */
static void
use_server (Fixture    *fixture,
            const char *kind,
            const char *scenario)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedProvider) inner = NULL;
  g_autofree char *url = NULL;
  GType type;

  if (fixture->server == NULL)
    {
      fixture->server = kaged_fake_server_new (scenario, &error);
      g_assert_no_error (error);
      kaged_fake_server_listen (fixture->server, 0, &error);
      g_assert_no_error (error);
      fixture->session = kaged_http_session_new ();
      fixture->text = g_string_new (NULL);
      g_signal_connect (fixture->chat, "delta", G_CALLBACK (on_delta), fixture);
    }
  else
    {
      kaged_fake_server_set_scenario (fixture->server, scenario, &error);
      g_assert_no_error (error);
      kaged_fake_server_reset (fixture->server);
    }

  url = kaged_fake_server_get_url (fixture->server);
  if (g_str_equal (kind, "anthropic"))
    type = KAGED_TYPE_ANTHROPIC_PROVIDER;
  else if (g_str_equal (kind, "ollama"))
    type = KAGED_TYPE_OLLAMA_PROVIDER;
  else
    {
      g_autofree char *v1 = g_strconcat (url, "/v1", NULL);

      g_free (url);
      url = g_steal_pointer (&v1);
      type = KAGED_TYPE_OPENAI_PROVIDER;
    }

  inner = g_object_new (type,
                        "session", fixture->session,
                        "base-url", url,
                        "model", "test-model",
                        "api-key", "sk-test-0123456789",
                        "clock", fixture->clock,
                        NULL);
  g_clear_object (&fixture->retry);
  fixture->retry = kaged_retry_provider_new (inner, fixture->clock, fixture->random);
}

/* Starts again with a fresh chat (and log), keeping the server. */
static void
reset_chat (Fixture *fixture)
{
  g_autoptr(GPtrArray) messages = g_ptr_array_new_with_free_func (g_object_unref);
  KagedMessage *message = kaged_message_new ();

  kaged_message_set_role (message, KAGED_MESSAGE_ROLE_OPERATOR);
  kaged_message_set_content (message, "Hello?");
  g_ptr_array_add (messages, message);

  g_clear_object (&fixture->chat);
  fixture->chat = kaged_chat_new (messages, NULL);
  if (fixture->text != NULL)
    {
      g_string_truncate (fixture->text, 0);
      g_signal_connect (fixture->chat, "delta", G_CALLBACK (on_delta), fixture);
    }
  g_clear_error (&fixture->error);
  fixture->done = FALSE;
  fixture->ok = FALSE;
  fixture->slept_ms = 0;
}

static const char openai_rate_limit_body[] =
  "{\"error\": {\"message\": \"Rate limit reached for requests\", \"type\": \"requests\","
  " \"param\": null, \"code\": \"rate_limit_exceeded\"}}";

typedef struct
{
  const char *kind;
  const char *header;
  const char *value;         /* NULL: computed from the fake clock */
  gint64      expected_ms;
  const char *source;
} WaitCase;

static char *
date_in (gint64  wall_ms,
         gint64  delta_ms,
         gboolean http_date)
{
  g_autoptr(GDateTime) now = g_date_time_new_from_unix_utc ((wall_ms + delta_ms) / 1000);

  if (http_date)
    return soup_date_time_to_string (now, SOUP_DATE_HTTP);
  return g_date_time_format_iso8601 (now);
}

static void
test_http_server_wait_forms (Fixture       *fixture,
                             gconstpointer  user_data)
{
  const WaitCase cases[] = {
    { "openai", "retry-after-ms", "1500", 1500, "retry-after-ms" },
    { "openai", "retry-after", "7", 7000, "retry-after" },
    { "openai", "retry-after", NULL, 9000, "retry-after" },
    { "anthropic", "anthropic-ratelimit-requests-reset", NULL, 5000, "anthropic-ratelimit-reset" },
    { "openai", "x-ratelimit-reset-requests", "6s", 6000, "x-ratelimit-reset" },
    { "openai", "x-ratelimit-reset-requests", "1.5s", 1500, "x-ratelimit-reset" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *value = NULL;
      g_autofree char *scenario = NULL;
      const char *body;
      KagedAttempt *attempt;

      g_test_message ("%s: %s", cases[i].kind, cases[i].header);
      reset_chat (fixture);

      if (cases[i].value != NULL)
        {
          value = g_strdup (cases[i].value);
        }
      else
        {
          /* Dates have whole seconds: start on one. */
          gint64 wall = kaged_clock_get_wall_ms (fixture->clock);

          kaged_fake_clock_advance (KAGED_FAKE_CLOCK (fixture->clock), (1000 - wall % 1000) % 1000);
          value = date_in (kaged_clock_get_wall_ms (fixture->clock), cases[i].expected_ms,
                           g_str_equal (cases[i].header, "retry-after"));
        }

      if (g_str_equal (cases[i].kind, "anthropic"))
        body = "{\"type\": \"error\", \"error\": {\"type\": \"rate_limit_error\", \"message\": \"Slow down\"}}";
      else
        body = openai_rate_limit_body;

      scenario = g_strdup_printf ("[{\"status\": 429, \"headers\": {\"%s\": \"%s\","
                                  " \"anthropic-ratelimit-requests-remaining\": \"0\","
                                  " \"x-ratelimit-remaining-requests\": \"0\"},"
                                  " \"body\": %s},"
                                  " {\"kind\": \"%s\", \"text\": \"Hello there\", \"chunks\": 2}]",
                                  cases[i].header, value, body, cases[i].kind);
      use_server (fixture, cases[i].kind, scenario);

      start_chat (fixture);
      run_until_done (fixture);

      g_assert_no_error (fixture->error);
      g_assert_true (fixture->ok);
      g_assert_cmpstr (fixture->text->str, ==, "Hello there");
      g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 2);
      g_assert_cmpuint (n_attempts (fixture), ==, 2);

      attempt = get_attempt (fixture, 0);
      g_assert_cmpuint (attempt->http_status, ==, 429);
      g_assert_cmpint (attempt->retry_class, ==, KAGED_RETRY_CLASS_RATE_LIMITED);
      g_assert_cmpint (attempt->wait_ms, ==, cases[i].expected_ms);
      g_assert_cmpstr (attempt->wait_source, ==, cases[i].source);
      g_assert_cmpuint (fixture->slept_ms, ==, cases[i].expected_ms);

      attempt = get_attempt (fixture, 1);
      g_assert_cmpuint (attempt->http_status, ==, 200);
      g_assert_null (attempt->error);
    }
}

static void
test_http_wait_beyond_window (Fixture       *fixture,
                              gconstpointer  user_data)
{
  g_autofree char *scenario =
    g_strdup_printf ("[{\"status\": 429, \"headers\": {\"retry-after\": \"31\"}, \"body\": %s},"
                     " {\"kind\": \"openai\", \"text\": \"too early\"}]",
                     openai_rate_limit_body);

  use_server (fixture, "openai", scenario);
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_error (fixture->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_RATE_LIMITED);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);
  g_assert_cmpuint (fixture->slept_ms, ==, 0);
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (fixture->error), ==, WALL_START_MS + 31000);
  g_assert_true (kaged_provider_error_get_retryable (fixture->error));
  g_assert_cmpuint (n_attempts (fixture), ==, 1);
  g_assert_cmpint (get_attempt (fixture, 0)->wait_ms, ==, 0);
  g_assert_cmpstr (get_attempt (fixture, 0)->wait_source, ==, "retry-after");
}

static void
test_http_503_jitter (Fixture       *fixture,
                      gconstpointer  user_data)
{
  use_server (fixture, "openai",
              "[{\"status\": 503, \"body\": {\"error\": {\"message\": \"Service unavailable\"}}}]");
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_error (fixture->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, "/v1/chat/completions"), ==, 3);
  g_assert_cmpuint (n_attempts (fixture), ==, 3);
  g_assert_cmpint (get_attempt (fixture, 0)->wait_ms, >=, 750);
  g_assert_cmpint (get_attempt (fixture, 0)->wait_ms, <=, 1000);
  g_assert_cmpint (get_attempt (fixture, 1)->wait_ms, >=, 1500);
  g_assert_cmpint (get_attempt (fixture, 1)->wait_ms, <=, 2000);
  g_assert_cmpint (get_attempt (fixture, 2)->wait_ms, ==, 0);
  for (guint i = 0; i < 3; i++)
    {
      g_assert_cmpuint (get_attempt (fixture, i)->http_status, ==, 503);
      g_assert_cmpint (get_attempt (fixture, i)->retry_class, ==, KAGED_RETRY_CLASS_OVERLOADED);
    }
  g_assert_cmpuint (fixture->slept_ms, ==, get_attempt (fixture, 0)->wait_ms + get_attempt (fixture, 1)->wait_ms);
}

/* A 503 with rate-limit headers that show requests left is retried on the
 * backoff: its reset headers are no wait (DESIGN.md §4). */
static void
test_http_503_reset_headers (Fixture       *fixture,
                             gconstpointer  user_data)
{
  KagedAttempt *attempt;

  use_server (fixture, "openai",
              "[{\"status\": 503, \"headers\": {\"x-ratelimit-remaining-requests\": \"4999\","
              " \"x-ratelimit-reset-requests\": \"1m0s\", \"x-ratelimit-reset-tokens\": \"45s\"},"
              " \"body\": {\"error\": {\"message\": \"Service unavailable\"}}},"
              " {\"kind\": \"openai\", \"text\": \"Hello there\", \"chunks\": 2}]");
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_no_error (fixture->error);
  g_assert_true (fixture->ok);
  g_assert_cmpstr (fixture->text->str, ==, "Hello there");
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, "/v1/chat/completions"), ==, 2);
  g_assert_cmpuint (n_attempts (fixture), ==, 2);

  attempt = get_attempt (fixture, 0);
  g_assert_cmpuint (attempt->http_status, ==, 503);
  g_assert_cmpint (attempt->retry_class, ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpstr (attempt->wait_source, ==, "backoff");
  g_assert_cmpint (attempt->wait_ms, >=, 750);
  g_assert_cmpint (attempt->wait_ms, <=, 1000);
  g_assert_cmpuint (fixture->slept_ms, ==, attempt->wait_ms);
  g_assert_cmpuint (get_attempt (fixture, 1)->http_status, ==, 200);
}

typedef struct
{
  const char *kind;
  guint       status;
  const char *headers;
  const char *body;
  guint       expected_requests;
  KagedRetryClass retry_class;
} HttpStatusCase;

static void
test_http_status_rules (Fixture       *fixture,
                        gconstpointer  user_data)
{
  static const HttpStatusCase cases[] = {
    { "openai", 408, "{}", "{\"error\": {\"message\": \"Request timeout\"}}", 3, KAGED_RETRY_CLASS_TIMEOUT },
    { "openai", 409, "{}", "{\"error\": {\"message\": \"Conflict\"}}", 3, KAGED_RETRY_CLASS_NONE },
    { "openai", 429, "{}", "{\"error\": {\"message\": \"Slow down\", \"code\": \"rate_limit_exceeded\"}}", 3, KAGED_RETRY_CLASS_RATE_LIMITED },
    { "openai", 500, "{}", "{\"error\": {\"message\": \"Internal error\"}}", 3, KAGED_RETRY_CLASS_SERVER_ERROR },
    { "openai", 502, "{}", "\"Bad gateway\"", 3, KAGED_RETRY_CLASS_SERVER_ERROR },
    { "anthropic", 529, "{}", "{\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}", 3, KAGED_RETRY_CLASS_OVERLOADED },
    { "ollama", 500, "{}", "{\"error\": \"llama runner crashed\"}", 3, KAGED_RETRY_CLASS_SERVER_ERROR },
    { "openai", 400, "{}", "{\"error\": {\"message\": \"Bad request\", \"type\": \"invalid_request_error\"}}", 1, KAGED_RETRY_CLASS_INVALID_REQUEST },
    { "openai", 401, "{}", "{\"error\": {\"message\": \"Incorrect API key provided\", \"code\": \"invalid_api_key\"}}", 1, KAGED_RETRY_CLASS_AUTH_FAILED },
    { "anthropic", 403, "{}", "{\"type\": \"error\", \"error\": {\"type\": \"permission_error\", \"message\": \"No\"}}", 1, KAGED_RETRY_CLASS_AUTH_FAILED },
    { "ollama", 404, "{}", "{\"error\": \"model \\\"x\\\" not found, try pulling it first\"}", 1, KAGED_RETRY_CLASS_INVALID_REQUEST },
    { "openai", 422, "{}", "{\"error\": {\"message\": \"Unprocessable\"}}", 1, KAGED_RETRY_CLASS_INVALID_REQUEST },
    { "openai", 429, "{}", "{\"error\": {\"message\": \"You exceeded your current quota\", \"type\": \"insufficient_quota\", \"code\": \"insufficient_quota\"}}", 1, KAGED_RETRY_CLASS_QUOTA_EXHAUSTED },
    /* x-should-retry overrides the status rule */
    { "openai", 400, "{\"x-should-retry\": \"true\"}", "{\"error\": {\"message\": \"Try again\"}}", 3, KAGED_RETRY_CLASS_INVALID_REQUEST },
    { "openai", 503, "{\"x-should-retry\": \"false\"}", "{\"error\": {\"message\": \"Unavailable\"}}", 1, KAGED_RETRY_CLASS_OVERLOADED },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *scenario =
        g_strdup_printf ("[{\"status\": %u, \"headers\": %s, \"body\": %s}]",
                         cases[i].status, cases[i].headers, cases[i].body);

      g_test_message ("%s: HTTP %u %s", cases[i].kind, cases[i].status, cases[i].headers);
      reset_chat (fixture);
      use_server (fixture, cases[i].kind, scenario);
      start_chat (fixture);
      run_until_done (fixture);

      g_assert_false (fixture->ok);
      g_assert_nonnull (fixture->error);
      g_assert_true (fixture->error->domain == KAGED_PROVIDER_ERROR);
      if (cases[i].retry_class != KAGED_RETRY_CLASS_NONE)
        g_assert_cmpint (fixture->error->code, ==, cases[i].retry_class);
      g_assert_cmpuint (kaged_provider_error_get_http_status (fixture->error), ==, cases[i].status);
      g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, cases[i].expected_requests);
      g_assert_cmpuint (n_attempts (fixture), ==, cases[i].expected_requests);
    }
}

static void
test_http_connection_refused (Fixture       *fixture,
                              gconstpointer  user_data)
{
  g_autoptr(GSocket) socket = NULL;
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) address = g_inet_socket_address_new (loopback, 0);
  g_autoptr(GSocketAddress) bound = NULL;
  g_autoptr(KagedProvider) inner = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(SoupSession) session = kaged_http_session_new ();
  g_autofree char *url = NULL;

  /* A port that was free a moment ago and has nobody listening. */
  socket = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &error);
  g_assert_no_error (error);
  g_socket_bind (socket, address, FALSE, &error);
  g_assert_no_error (error);
  bound = g_socket_get_local_address (socket, &error);
  g_assert_no_error (error);
  url = g_strdup_printf ("http://127.0.0.1:%u",
                         g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound)));

  inner = kaged_ollama_provider_new (session, url, "test-model", NULL);
  g_clear_object (&fixture->retry);
  fixture->retry = kaged_retry_provider_new (inner, fixture->clock, fixture->random);

  start_chat (fixture);
  run_until_done (fixture);

  g_assert_error (fixture->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_NETWORK);
  g_assert_cmpuint (n_attempts (fixture), ==, 3);
  g_assert_cmpuint (get_attempt (fixture, 0)->http_status, ==, 0);
  g_assert_cmpstr (get_attempt (fixture, 0)->wait_source, ==, "backoff");
  soup_session_abort (session);
}

static void
test_http_first_delta (Fixture       *fixture,
                       gconstpointer  user_data)
{
  /* The role chunk and one content chunk, then the connection is cut. */
  use_server (fixture, "openai",
              "[{\"kind\": \"openai\", \"text\": \"Hello there\", \"chunks\": 2, \"cut_after_chunks\": 2}]");
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_error (fixture->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_NETWORK);
  g_assert_cmpstr (fixture->text->str, ==, "Hello");
  g_assert_true (kaged_chat_has_delta (fixture->chat));
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);
  g_assert_cmpuint (n_attempts (fixture), ==, 1);
  g_assert_cmpuint (fixture->slept_ms, ==, 0);
}

static void
test_http_error_event_before_delta (Fixture       *fixture,
                                    gconstpointer  user_data)
{
  /* Anthropic's overloaded_error inside a 200 stream, before any text: still
   * the open call, so retried. */
  use_server (fixture, "anthropic",
              "[{\"kind\": \"anthropic\", \"text\": \"x\","
              "  \"stream_error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}},"
              " {\"kind\": \"anthropic\", \"text\": \"Hello there\", \"chunks\": 3}]");
  start_chat (fixture);
  run_until_done (fixture);

  g_assert_no_error (fixture->error);
  g_assert_cmpstr (fixture->text->str, ==, "Hello there");
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 2);
  g_assert_cmpint (get_attempt (fixture, 0)->retry_class, ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpstr (get_attempt (fixture, 0)->wait_source, ==, "backoff");
}

static void
test_http_cancel_during_backoff (Fixture       *fixture,
                                 gconstpointer  user_data)
{
  KagedFakeClock *clock = KAGED_FAKE_CLOCK (fixture->clock);

  use_server (fixture, "openai",
              "[{\"status\": 500, \"body\": {\"error\": {\"message\": \"Internal error\"}}},"
              " {\"kind\": \"openai\", \"text\": \"never\"}]");
  start_chat (fixture);

  while (kaged_fake_clock_get_n_pending (clock) == 0 && !fixture->done)
    g_main_context_iteration (NULL, TRUE);
  g_assert_false (fixture->done);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);

  g_cancellable_cancel (fixture->cancellable);
  while (!fixture->done)
    g_main_context_iteration (NULL, TRUE);

  g_assert_error (fixture->error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  kaged_fake_clock_advance (clock, 60000);
  for (guint i = 0; i < 50; i++)
    g_main_context_iteration (NULL, FALSE);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);
  g_assert_cmpuint (n_attempts (fixture), ==, 1);
}

static void
test_http_cancel_during_call (Fixture       *fixture,
                              gconstpointer  user_data)
{
  KagedFakeClock *clock = KAGED_FAKE_CLOCK (fixture->clock);

  use_server (fixture, "anthropic",
              "[{\"hang\": true}, {\"kind\": \"anthropic\", \"text\": \"never\"}]");
  start_chat (fixture);

  while (kaged_fake_server_get_n_requests (fixture->server, NULL) == 0)
    g_main_context_iteration (NULL, TRUE);
  g_assert_false (fixture->done);

  g_cancellable_cancel (fixture->cancellable);
  while (!fixture->done)
    g_main_context_iteration (NULL, TRUE);

  g_assert_error (fixture->error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (kaged_fake_clock_get_n_pending (clock), ==, 0);
  kaged_fake_clock_advance (clock, 60000);
  for (guint i = 0; i < 50; i++)
    g_main_context_iteration (NULL, FALSE);
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 1);
  g_assert_cmpuint (n_attempts (fixture), ==, 1);
}

static void
test_http_timeouts (Fixture       *fixture,
                    gconstpointer  user_data)
{
  g_autoptr(KagedProvider) inner = NULL;
  g_autofree char *url = NULL;

  /* No headers in time, then silence after the role chunk (no text yet),
   * then a reply: two timeouts of the open call, both retried. A second
   * leaves the reply time enough on a slow (sanitized, loaded) machine. */
  use_server (fixture, "openai",
              "[{\"kind\": \"openai\", \"text\": \"late\", \"headers_delay_ms\": 5000},"
              " {\"kind\": \"openai\", \"text\": \"stuck\", \"hang_after_chunks\": 1},"
              " {\"kind\": \"openai\", \"text\": \"Hello there\"}]");
  url = kaged_fake_server_get_url (fixture->server);
  inner = g_object_new (KAGED_TYPE_OPENAI_PROVIDER,
                        "session", fixture->session,
                        "base-url", url,
                        "model", "test-model",
                        "clock", fixture->clock,
                        "first-byte-timeout-ms", 1000,
                        "idle-timeout-ms", 1000,
                        NULL);
  g_clear_object (&fixture->retry);
  fixture->retry = kaged_retry_provider_new (inner, fixture->clock, fixture->random);

  start_chat (fixture);
  run_until_done (fixture);

  g_assert_no_error (fixture->error);
  g_assert_cmpstr (fixture->text->str, ==, "Hello there");
  g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, 3);
  g_assert_cmpuint (n_attempts (fixture), ==, 3);
  g_assert_cmpint (get_attempt (fixture, 0)->retry_class, ==, KAGED_RETRY_CLASS_TIMEOUT);
  g_assert_cmpint (get_attempt (fixture, 1)->retry_class, ==, KAGED_RETRY_CLASS_TIMEOUT);
  g_assert_cmpstr (get_attempt (fixture, 1)->wait_source, ==, "backoff");
  g_assert_cmpuint (get_attempt (fixture, 2)->http_status, ==, 200);
}

typedef struct
{
  const char      *file;
  const char      *kind;
  guint            expected_requests;
  KagedRetryClass  retry_class;      /* NONE: the reply arrives */
  gint64           until_after_ms;   /* retry_after_until - the end, or 0 */
} ExampleCase;

/* The scenarios shipped for people to watch retries do what they say. */
static void
test_http_example_scenarios (Fixture       *fixture,
                             gconstpointer  user_data)
{
  static const ExampleCase cases[] = {
    { "overloaded-then-ok.json", "anthropic", 3, KAGED_RETRY_CLASS_NONE, 0 },
    { "rate-limited-long.json", "openai", 1, KAGED_RETRY_CLASS_RATE_LIMITED, 120000 },
    { "quota-50min.json", "openai", 1, KAGED_RETRY_CLASS_QUOTA_SCHEDULED, 50 * 60 * 1000 },
    { "cut-after-first-delta.json", "openai", 1, KAGED_RETRY_CLASS_NETWORK, 0 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_build_filename (SCENARIO_DIR, cases[i].file, NULL);
      g_autofree char *scenario = NULL;
      g_autoptr(GError) error = NULL;

      g_test_message ("%s", cases[i].file);
      g_file_get_contents (path, &scenario, NULL, &error);
      g_assert_no_error (error);

      reset_chat (fixture);
      use_server (fixture, cases[i].kind, scenario);
      start_chat (fixture);
      run_until_done (fixture);

      g_assert_cmpuint (kaged_fake_server_get_n_requests (fixture->server, NULL), ==, cases[i].expected_requests);
      if (cases[i].retry_class == KAGED_RETRY_CLASS_NONE)
        {
          g_assert_no_error (fixture->error);
          g_assert_cmpuint (fixture->text->len, >, 0);
          continue;
        }

      g_assert_error (fixture->error, KAGED_PROVIDER_ERROR, (int)cases[i].retry_class);
      if (cases[i].until_after_ms > 0)
        g_assert_cmpint (kaged_provider_error_get_retry_after_until (fixture->error), ==,
                         kaged_clock_get_wall_ms (fixture->clock) + cases[i].until_after_ms);
    }
}

static void
test_defaults (void)
{
  g_autoptr(TestProvider) inner = g_object_new (TEST_TYPE_PROVIDER, NULL);
  g_autoptr(KagedProvider) retry = kaged_retry_provider_new (KAGED_PROVIDER (inner), NULL, NULL);

  g_assert_true (KAGED_IS_RETRY_PROVIDER (retry));
  g_assert_true (kaged_retry_provider_get_inner (KAGED_RETRY_PROVIDER (retry)) == KAGED_PROVIDER (inner));
  g_assert_true (kaged_retry_provider_get_clock (KAGED_RETRY_PROVIDER (retry)) == kaged_clock_get_default ());
  g_assert_true (kaged_retry_provider_get_random (KAGED_RETRY_PROVIDER (retry)) == kaged_random_get_default ());
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

#define ADD(path, func) \
  g_test_add ("/retry/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  g_test_add_func ("/retry/backoff-bounds", test_backoff_bounds);
  g_test_add_func ("/retry/defaults", test_defaults);
  g_test_add_func ("/retry/status-rules", test_status_rules);
  ADD ("three-attempts-on-503", test_three_attempts_on_503);
  ADD ("success-after-retry", test_success_after_retry);
  ADD ("server-wait/in-window", test_server_wait_in_window);
  ADD ("server-wait/at-window", test_server_wait_at_window);
  ADD ("server-wait/beyond-window", test_server_wait_beyond_window);
  ADD ("server-wait/long-after-backoff", test_long_wait_after_backoff);
  ADD ("server-wait/provider-until-kept", test_provider_until_kept);
  ADD ("first-delta", test_no_retry_after_first_delta);
  ADD ("cancel/during-backoff", test_cancel_during_backoff);
  ADD ("cancel/during-call", test_cancel_during_call);
  ADD ("cancel/before-start", test_cancelled_before_start);
  ADD ("http/server-wait-forms", test_http_server_wait_forms);
  ADD ("http/wait-beyond-window", test_http_wait_beyond_window);
  ADD ("http/503-jitter", test_http_503_jitter);
  ADD ("http/503-reset-headers", test_http_503_reset_headers);
  ADD ("http/status-rules", test_http_status_rules);
  ADD ("http/connection-refused", test_http_connection_refused);
  ADD ("http/first-delta", test_http_first_delta);
  ADD ("http/error-event-before-delta", test_http_error_event_before_delta);
  ADD ("http/cancel-during-backoff", test_http_cancel_during_backoff);
  ADD ("http/cancel-during-call", test_http_cancel_during_call);
  ADD ("http/example-scenarios", test_http_example_scenarios);
  ADD ("http/timeouts", test_http_timeouts);

#undef ADD

  return g_test_run ();
}
