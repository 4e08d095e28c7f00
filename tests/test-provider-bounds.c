/* test-provider-bounds.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "kaged-anthropic-provider.h"
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-message.h"
#include "kaged-ollama-provider.h"
#include "kaged-openai-provider.h"
#include "kaged-provider.h"
#include "kaged-retry-class.h"

/*
 * A provider that never stops, sends one endless line, trickles its answer
 * or its error body, or sends an error body without end, is cut off by a
 * cap or a deadline with the class that says what happened. The caps are
 * made small here; a watchdog cancels a call that nothing cuts off, which
 * the tests then report.
 */

#define WATCHDOG_MS 10000

typedef struct
{
  KagedFakeServer *server;
  SoupSession     *session;
  KagedProvider   *provider;
  KagedChat       *chat;
  GCancellable    *watchdog;
  GString         *text;
  GError          *error;
  gint64           elapsed_ms;
  gboolean         done;
} Call;

static void
on_delta (KagedChat      *chat,
          KagedDeltaKind  kind,
          const char     *text,
          Call           *call)
{
  if (kind == KAGED_DELTA_TEXT)
    g_string_append (call->text, text);
}

static void
call_free (Call *call)
{
  g_clear_object (&call->provider);
  g_clear_object (&call->chat);
  g_clear_object (&call->watchdog);
  g_clear_object (&call->session);
  g_clear_object (&call->server);
  g_string_free (call->text, TRUE);
  g_clear_error (&call->error);
  g_free (call);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Call, call_free)

/* A provider of @type speaking to a fake server that plays @scenario,
 * with @first_property… set on it. */
static Call *
call_new (GType       type,
          const char *scenario,
          const char *first_property,
          ...)
{
  g_autoptr(GPtrArray) messages = g_ptr_array_new_with_free_func (g_object_unref);
  g_autoptr(GError) error = NULL;
  g_autofree char *url = NULL;
  KagedMessage *message = kaged_message_new ();
  Call *call = g_new0 (Call, 1);
  va_list args;

  call->server = kaged_fake_server_new (scenario, &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (call->server, 0, &error);
  g_assert_no_error (error);

  url = kaged_fake_server_get_url (call->server);
  if (type == KAGED_TYPE_OPENAI_PROVIDER)
    {
      g_autofree char *v1 = g_strconcat (url, "/v1", NULL);

      g_free (url);
      url = g_steal_pointer (&v1);
    }

  call->session = kaged_http_session_new ();
  call->provider = g_object_new (type,
                                 "session", call->session,
                                 "base-url", url,
                                 "model", "test-model",
                                 "api-key", "sk-test-0123456789",
                                 NULL);
  va_start (args, first_property);
  g_object_set_valist (G_OBJECT (call->provider), first_property, args);
  va_end (args);

  kaged_message_set_role (message, KAGED_MESSAGE_ROLE_OPERATOR);
  kaged_message_set_content (message, "Hello?");
  g_ptr_array_add (messages, message);
  call->chat = kaged_chat_new (messages, NULL);
  call->text = g_string_new (NULL);
  g_signal_connect (call->chat, "delta", G_CALLBACK (on_delta), call);
  call->watchdog = g_cancellable_new ();

  return call;
}

static void
chat_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  Call *call = user_data;

  kaged_provider_chat_finish (KAGED_PROVIDER (object), result, &call->error);
  call->done = TRUE;
}

static gboolean
watchdog_cb (gpointer user_data)
{
  g_cancellable_cancel (user_data);
  return G_SOURCE_REMOVE;
}

static void
call_run (Call *call)
{
  gint64 started = g_get_monotonic_time ();
  guint watchdog = g_timeout_add (WATCHDOG_MS, watchdog_cb, call->watchdog);

  kaged_provider_chat_async (call->provider, call->chat, call->watchdog, chat_cb, call);
  while (!call->done)
    g_main_context_iteration (NULL, TRUE);

  if (!g_cancellable_is_cancelled (call->watchdog))
    g_source_remove (watchdog);
  call->elapsed_ms = (g_get_monotonic_time () - started) / 1000;

  /* Cut off by Kaged, not by the watchdog. */
  g_assert_false (g_error_matches (call->error, G_IO_ERROR, G_IO_ERROR_CANCELLED));
}

static char *
repeat (char   c,
        gsize  n)
{
  return g_strnfill (n, c);
}

/* A stream without end is cut off at the reply cap; what came is kept. */
static void
test_endless_stream (void)
{
  g_autofree char *content = repeat ('x', 1000);
  g_autofree char *scenario =
    g_strdup_printf ("[{\"chunks\": [{\"sse\": {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"%s\"}}]}}],"
                     " \"repeat_chunks\": true}]", content);
  g_autoptr(Call) call = call_new (KAGED_TYPE_OPENAI_PROVIDER, scenario,
                                   "max-reply-size", (guint64)(64 * 1024),
                                   NULL);

  call_run (call);

  g_assert_error (call->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_assert_cmpuint (kaged_provider_error_get_http_status (call->error), ==, 200);
  g_assert_true (kaged_chat_has_delta (call->chat));
  g_assert_cmpuint (call->text->len, >=, 32 * 1000);
  g_assert_cmpuint (call->text->len, <=, 64 * 1024);
}

/* One line without end is cut off at the event cap. */
static void
test_endless_line (void)
{
  g_autofree char *content = repeat ('y', 1000);
  g_autofree char *scenario =
    g_strdup_printf ("[{\"content_type\": \"application/x-ndjson\","
                     " \"chunks\": [\"{\\\"message\\\": {\\\"content\\\": \\\"\", \"%s\"],"
                     " \"repeat_chunks\": true}]", content);
  g_autoptr(Call) call = call_new (KAGED_TYPE_OLLAMA_PROVIDER, scenario,
                                   "max-event-size", (guint64)(16 * 1024),
                                   NULL);

  call_run (call);

  g_assert_error (call->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_assert_false (kaged_chat_has_delta (call->chat));
}

/* A byte at a time, never a whole line: no progress, so the idle deadline
 * is not pushed back by each byte. */
static void
test_trickle (void)
{
  g_autoptr(Call) call = call_new (KAGED_TYPE_ANTHROPIC_PROVIDER,
                                   "[{\"chunks\": [{\"data\": \"e\", \"delay_ms\": 10}],"
                                   " \"repeat_chunks\": true}]",
                                   "idle-timeout-ms", 300,
                                   NULL);

  call_run (call);

  g_assert_error (call->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_TIMEOUT);
  g_assert_true (kaged_provider_error_get_retryable (call->error));
  g_assert_false (kaged_chat_has_delta (call->chat));
}

/* Whole lines, slowly and for ever (keep-alive comments): the deadline of
 * the whole reply ends it. */
static void
test_endless_keepalive (void)
{
  g_autoptr(Call) call = call_new (KAGED_TYPE_OPENAI_PROVIDER,
                                   "[{\"chunks\": [{\"data\": \": still here\\n\", \"delay_ms\": 20}],"
                                   " \"repeat_chunks\": true}]",
                                   "idle-timeout-ms", 300,
                                   "max-duration-ms", 800,
                                   NULL);

  call_run (call);

  g_assert_error (call->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_TIMEOUT);
  g_assert_cmpint (call->elapsed_ms, >=, 800);
}

/* The same deadline after part of the reply: still a timeout, the part
 * kept. */
static void
test_endless_slow_reply (void)
{
  g_autoptr(Call) call = call_new (KAGED_TYPE_OLLAMA_PROVIDER,
                                   "[{\"content_type\": \"application/x-ndjson\","
                                   " \"chunks\": [{\"line\": {\"message\": {\"content\": \"a\"}, \"done\": false},"
                                   " \"delay_ms\": 20}], \"repeat_chunks\": true}]",
                                   "max-duration-ms", 500,
                                   NULL);

  call_run (call);

  g_assert_error (call->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_TIMEOUT);
  g_assert_true (kaged_chat_has_delta (call->chat));
  g_assert_cmpuint (call->text->len, >, 0);
}

/* An error body without end is read up to its cap and classified by what
 * arrived. */
static void
test_endless_error_body (void)
{
  g_autofree char *filler = repeat ('z', 1000);
  g_autofree char *scenario =
    g_strdup_printf ("[{\"status\": 500, \"chunks\": [\"%s\"], \"repeat_chunks\": true}]", filler);
  g_autoptr(Call) call = call_new (KAGED_TYPE_OPENAI_PROVIDER, scenario,
                                   "max-error-body-size", (guint64)(16 * 1024),
                                   NULL);

  call_run (call);

  g_assert_error (call->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_SERVER_ERROR);
  g_assert_cmpuint (kaged_provider_error_get_http_status (call->error), ==, 500);
}

/* A trickled error body gets the idle time in all. */
static void
test_trickled_error_body (void)
{
  g_autoptr(Call) call = call_new (KAGED_TYPE_ANTHROPIC_PROVIDER,
                                   "[{\"status\": 529, \"chunks\": [{\"data\": \"{\", \"delay_ms\": 10}],"
                                   " \"repeat_chunks\": true}]",
                                   "idle-timeout-ms", 300,
                                   NULL);

  call_run (call);

  g_assert_error (call->error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpuint (kaged_provider_error_get_http_status (call->error), ==, 529);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/provider-bounds/endless-stream", test_endless_stream);
  g_test_add_func ("/provider-bounds/endless-line", test_endless_line);
  g_test_add_func ("/provider-bounds/trickle", test_trickle);
  g_test_add_func ("/provider-bounds/endless-keepalive", test_endless_keepalive);
  g_test_add_func ("/provider-bounds/endless-slow-reply", test_endless_slow_reply);
  g_test_add_func ("/provider-bounds/endless-error-body", test_endless_error_body);
  g_test_add_func ("/provider-bounds/trickled-error-body", test_trickled_error_body);

  return g_test_run ();
}
