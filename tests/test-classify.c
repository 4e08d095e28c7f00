/* test-classify.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "kaged-classify.h"
#include "kaged-provider.h"
#include "kaged-retry-class.h"

/* 2026-11-29T20:00:00Z */
#define NOW_MS G_GINT64_CONSTANT (1795982400000)

static SoupMessageHeaders *
headers_new (const char *first_name,
             ...)
{
  SoupMessageHeaders *headers = soup_message_headers_new (SOUP_MESSAGE_HEADERS_RESPONSE);
  const char *name = first_name;
  va_list args;

  va_start (args, first_name);
  while (name != NULL)
    {
      soup_message_headers_append (headers, name, va_arg (args, const char *));
      name = va_arg (args, const char *);
    }
  va_end (args);

  return headers;
}

static GError *
classify (guint               status,
          SoupMessageHeaders *headers,
          const char         *body)
{
  return kaged_classify_http_error (status, headers, body, body != NULL ? strlen (body) : 0, NOW_MS);
}

typedef struct
{
  guint            status;
  const char      *body;
  KagedRetryClass  retry_class;
  gboolean         retryable;
  const char      *provider_message;
} Row;

static void
test_table (void)
{
  static const Row rows[] = {
    /* OpenAI */
    { 429, "{\"error\":{\"message\":\"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM). Please try again in 84ms.\",\"type\":\"tokens\",\"param\":null,\"code\":\"rate_limit_exceeded\"}}",
      KAGED_RETRY_CLASS_RATE_LIMITED, TRUE, NULL },
    { 429, "{\"error\":{\"message\":\"You exceeded your current quota, please check your plan and billing details.\",\"type\":\"insufficient_quota\",\"param\":null,\"code\":\"insufficient_quota\"}}",
      KAGED_RETRY_CLASS_QUOTA_EXHAUSTED, FALSE,
      "You exceeded your current quota, please check your plan and billing details." },
    { 429, "{\"error\":{\"message\":\"Your credit balance is too low.\",\"type\":\"billing\",\"code\":\"credit_balance_exhausted\"}}",
      KAGED_RETRY_CLASS_QUOTA_EXHAUSTED, FALSE, NULL },
    { 429, "{\"error\":{\"message\":\"Organization spend limit reached.\",\"type\":\"billing\",\"code\":\"organization_spend_limit_exceeded\"}}",
      KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED, FALSE, NULL },
    { 429, "{\"error\":{\"message\":\"Project spend limit reached.\",\"code\":\"project_spend_limit_exceeded\"}}",
      KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED, FALSE, NULL },
    { 429, "{\"error\":{\"message\":\"Usage limit reached.\",\"code\":\"organization_usage_limit_exceeded\"}}",
      KAGED_RETRY_CLASS_QUOTA_EXHAUSTED, FALSE, NULL },
    { 400, "{\"error\":{\"message\":\"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens.\",\"type\":\"invalid_request_error\",\"param\":\"messages\",\"code\":\"context_length_exceeded\"}}",
      KAGED_RETRY_CLASS_CONTEXT_OVERFLOW, FALSE, NULL },
    { 401, "{\"error\":{\"message\":\"Incorrect API key provided: sk-abc***xyz.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"invalid_api_key\"}}",
      KAGED_RETRY_CLASS_AUTH_FAILED, FALSE, NULL },
    { 404, "{\"error\":{\"message\":\"The model `gpt-9` does not exist or you do not have access to it.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}",
      KAGED_RETRY_CLASS_INVALID_REQUEST, FALSE, NULL },
    { 422, "{\"error\":{\"message\":\"Unprocessable\"}}", KAGED_RETRY_CLASS_INVALID_REQUEST, FALSE, "Unprocessable" },
    { 400, "{\"error\":{\"message\":\"Invalid value for 'temperature'.\",\"type\":\"invalid_request_error\"}}",
      KAGED_RETRY_CLASS_INVALID_REQUEST, FALSE, NULL },
    { 500, "{\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\"}}",
      KAGED_RETRY_CLASS_SERVER_ERROR, TRUE, NULL },
    { 502, "<html><body>Bad Gateway</body></html>", KAGED_RETRY_CLASS_SERVER_ERROR, TRUE, NULL },
    { 504, NULL, KAGED_RETRY_CLASS_SERVER_ERROR, TRUE, NULL },
    { 503, "Service Unavailable", KAGED_RETRY_CLASS_OVERLOADED, TRUE, "Service Unavailable" },
    { 408, NULL, KAGED_RETRY_CLASS_TIMEOUT, TRUE, NULL },
    { 409, NULL, KAGED_RETRY_CLASS_SERVER_ERROR, TRUE, NULL },
    { 402, "{\"error\":{\"message\":\"Insufficient credits\",\"code\":402}}",
      KAGED_RETRY_CLASS_QUOTA_EXHAUSTED, FALSE, "Insufficient credits" },
    /* Anthropic */
    { 429, "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of request tokens has exceeded your per-minute rate limit\"},\"request_id\":\"req_011CSHoEeqs5C35K2UUqR7Fy\"}",
      KAGED_RETRY_CLASS_RATE_LIMITED, TRUE, NULL },
    { 529, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
      KAGED_RETRY_CLASS_OVERLOADED, TRUE, "Overloaded" },
    { 400, "{\"type\":\"error\",\"error\":{\"type\":\"billing_error\",\"message\":\"Your credit balance is too low to access the Anthropic API.\"}}",
      KAGED_RETRY_CLASS_QUOTA_EXHAUSTED, FALSE, NULL },
    { 400, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 208656 tokens > 200000 maximum\"}}",
      KAGED_RETRY_CLASS_CONTEXT_OVERFLOW, FALSE, "prompt is too long: 208656 tokens > 200000 maximum" },
    { 401, "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}",
      KAGED_RETRY_CLASS_AUTH_FAILED, FALSE, NULL },
    { 403, "{\"type\":\"error\",\"error\":{\"type\":\"permission_error\",\"message\":\"Your API key does not have permission to use the specified resource.\"}}",
      KAGED_RETRY_CLASS_AUTH_FAILED, FALSE, NULL },
    { 404, "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model: claude-9\"}}",
      KAGED_RETRY_CLASS_INVALID_REQUEST, FALSE, NULL },
    { 413, "{\"type\":\"error\",\"error\":{\"type\":\"request_too_large\",\"message\":\"Request exceeds the maximum allowed number of bytes.\"}}",
      KAGED_RETRY_CLASS_INVALID_REQUEST, FALSE, NULL },
    { 500, "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}",
      KAGED_RETRY_CLASS_SERVER_ERROR, TRUE, NULL },
    /* Ollama */
    { 404, "{\"error\":\"model \\\"llama9\\\" not found, try pulling it first\"}",
      KAGED_RETRY_CLASS_INVALID_REQUEST, FALSE, "model \"llama9\" not found, try pulling it first" },
    { 500, "{\"error\":\"model requires more system memory (12.0 GiB) than is available (8.0 GiB)\"}",
      KAGED_RETRY_CLASS_SERVER_ERROR, TRUE, NULL },
    /* Anything else that is not a stream */
    { 200, "<html>captive portal</html>", KAGED_RETRY_CLASS_PROTOCOL_ERROR, FALSE, NULL },
  };

  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    {
      g_autoptr(GError) error = classify (rows[i].status, NULL, rows[i].body);

      g_test_message ("row %u: HTTP %u", i, rows[i].status);
      g_assert_error (error, KAGED_PROVIDER_ERROR, (int)rows[i].retry_class);
      g_assert_cmpint (kaged_provider_error_get_retryable (error), ==, rows[i].retryable);
      g_assert_cmpuint (kaged_provider_error_get_http_status (error), ==, rows[i].status);
      g_assert_cmpint (kaged_provider_error_get_retry_after_until (error), ==, 0);
      g_assert_nonnull (strstr (error->message, kaged_retry_class_describe (rows[i].retry_class)));
      if (rows[i].provider_message != NULL)
        {
          g_assert_cmpstr (kaged_provider_error_get_provider_message (error), ==,
                           rows[i].provider_message);
          g_assert_nonnull (strstr (error->message, rows[i].provider_message));
        }
    }
}

static void
test_message_is_for_people (void)
{
  g_autoptr(GError) error = classify (529, NULL,
                                      "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}");

  g_assert_cmpstr (error->message, ==, "The provider is overloaded (HTTP 529): Overloaded");
}

static void
test_request_id (void)
{
  g_autoptr(SoupMessageHeaders) openai = headers_new ("x-request-id", "req_abc123", NULL);
  g_autoptr(SoupMessageHeaders) anthropic = headers_new ("request-id", "req_011CSHo", NULL);
  g_autoptr(GError) e1 = classify (500, openai, NULL);
  g_autoptr(GError) e2 = classify (500, anthropic, NULL);
  g_autoptr(GError) e3 = classify (529, NULL, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"},\"request_id\":\"req_body\"}");

  g_assert_cmpstr (kaged_provider_error_get_request_id (e1), ==, "req_abc123");
  g_assert_cmpstr (kaged_provider_error_get_request_id (e2), ==, "req_011CSHo");
  g_assert_cmpstr (kaged_provider_error_get_request_id (e3), ==, "req_body");
}

static void
test_should_retry (void)
{
  g_autoptr(SoupMessageHeaders) yes = headers_new ("x-should-retry", "true", NULL);
  g_autoptr(SoupMessageHeaders) no = headers_new ("x-should-retry", " false ", NULL);
  g_autoptr(GError) e1 = classify (400, yes, NULL);
  g_autoptr(GError) e2 = classify (500, no, NULL);
  g_autoptr(GError) e3 = classify (500, NULL, NULL);

  g_assert_cmpint (kaged_provider_error_get_should_retry (e1), ==, 1);
  g_assert_cmpint (kaged_provider_error_get_should_retry (e2), ==, 0);
  g_assert_cmpint (kaged_provider_error_get_should_retry (e3), ==, -1);
}

typedef struct
{
  const char *name;
  const char *value;
  gint64      wait_ms;
  const char *source;
} WaitRow;

static void
test_server_wait (void)
{
  static const WaitRow rows[] = {
    { "retry-after-ms", "1500", 1500, "retry-after-ms" },
    { "retry-after-ms", "12.25", 13, "retry-after-ms" },
    { "retry-after", "7", 7000, "retry-after" },
    { "retry-after", "0", 0, "retry-after" },
    /* 20:00:30 on the fake now of 20:00:00 */
    { "retry-after", "Sun, 29 Nov 2026 20:00:30 GMT", 30000, "retry-after" },
    { "retry-after", "Sun, 29 Nov 2026 19:00:00 GMT", 0, "retry-after" },
    { "anthropic-ratelimit-requests-reset", "2026-11-29T20:00:42Z", 42000, "anthropic-ratelimit-reset" },
    { "x-ratelimit-reset-requests", "6m0s", 360000, "x-ratelimit-reset" },
    { "x-ratelimit-reset-tokens", "12ms", 12, "x-ratelimit-reset" },
    { "x-ratelimit-reset-tokens", "1h2m3s", 3723000, "x-ratelimit-reset" },
    { "x-ratelimit-reset-tokens", "1.5s", 1500, "x-ratelimit-reset" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    {
      g_autoptr(SoupMessageHeaders) headers = headers_new (rows[i].name, rows[i].value, NULL);
      g_autoptr(GError) error = classify (429, headers, NULL);

      g_test_message ("%s: %s", rows[i].name, rows[i].value);
      g_assert_cmpint (kaged_provider_error_get_server_wait_ms (error), ==, rows[i].wait_ms);
      g_assert_cmpstr (kaged_provider_error_get_wait_source (error), ==, rows[i].source);
      /* A rate limit stays a rate limit, however long the wait. */
      g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_RATE_LIMITED);
      g_assert_cmpint (kaged_provider_error_get_retry_after_until (error), ==, 0);
    }

  /* Unparsable values are no advice at all. */
  {
    g_autoptr(SoupMessageHeaders) headers = headers_new ("retry-after", "soon",
                                                         "retry-after-ms", "-5",
                                                         "x-ratelimit-reset-requests", "6 minutes",
                                                         NULL);
    g_autoptr(GError) error = classify (429, headers, NULL);

    g_assert_cmpint (kaged_provider_error_get_server_wait_ms (error), ==, -1);
    g_assert_null (kaged_provider_error_get_wait_source (error));
  }
}

static void
test_server_wait_order (void)
{
  g_autoptr(SoupMessageHeaders) all = headers_new ("x-ratelimit-reset-requests", "1s",
                                                   "anthropic-ratelimit-tokens-reset", "2026-11-29T20:00:05Z",
                                                   "retry-after", "3",
                                                   "retry-after-ms", "2500",
                                                   NULL);
  g_autoptr(SoupMessageHeaders) no_ms = headers_new ("x-ratelimit-reset-requests", "1s",
                                                     "anthropic-ratelimit-tokens-reset", "2026-11-29T20:00:05Z",
                                                     "retry-after", "3",
                                                     NULL);
  g_autoptr(SoupMessageHeaders) resets = headers_new ("x-ratelimit-reset-requests", "1s",
                                                      "anthropic-ratelimit-tokens-reset", "2026-11-29T20:00:05Z",
                                                      NULL);
  gint64 wait = -1;
  const char *source = NULL;

  g_assert_true (kaged_classify_server_wait (all, 429, NOW_MS, &wait, &source));
  g_assert_cmpint (wait, ==, 2500);
  g_assert_cmpstr (source, ==, "retry-after-ms");
  g_assert_true (kaged_classify_server_wait (no_ms, 429, NOW_MS, &wait, &source));
  g_assert_cmpint (wait, ==, 3000);
  g_assert_cmpstr (source, ==, "retry-after");
  g_assert_true (kaged_classify_server_wait (resets, 429, NOW_MS, &wait, &source));
  g_assert_cmpint (wait, ==, 5000);
  g_assert_cmpstr (source, ==, "anthropic-ratelimit-reset");

  /* On another status only Retry-After counts. */
  g_assert_true (kaged_classify_server_wait (all, 503, NOW_MS, &wait, &source));
  g_assert_cmpint (wait, ==, 2500);
  g_assert_cmpstr (source, ==, "retry-after-ms");
  g_assert_false (kaged_classify_server_wait (resets, 503, NOW_MS, &wait, &source));
  g_assert_false (kaged_classify_server_wait (resets, 0, NOW_MS, &wait, &source));
}

/* Of several reset headers, the exhausted limits decide (a limit without a
 * `remaining` header counts as exhausted); all of them must have reset. */
static void
test_reset_families (void)
{
  g_autoptr(SoupMessageHeaders) anthropic = headers_new (
    "anthropic-ratelimit-requests-remaining", "40",
    "anthropic-ratelimit-requests-reset", "2026-11-29T20:00:02Z",
    "anthropic-ratelimit-input-tokens-remaining", "0",
    "anthropic-ratelimit-input-tokens-reset", "2026-11-29T20:00:20Z",
    "anthropic-ratelimit-output-tokens-remaining", "0",
    "anthropic-ratelimit-output-tokens-reset", "2026-11-29T20:00:09Z",
    NULL);
  g_autoptr(SoupMessageHeaders) openai = headers_new (
    "x-ratelimit-remaining-requests", "499",
    "x-ratelimit-reset-requests", "120ms",
    "x-ratelimit-remaining-tokens", "0",
    "x-ratelimit-reset-tokens", "6m0s",
    NULL);
  g_autoptr(SoupMessageHeaders) no_remaining = headers_new (
    "x-ratelimit-reset-requests", "2s",
    "x-ratelimit-reset-tokens", "500ms",
    NULL);
  gint64 wait = -1;
  const char *source = NULL;

  g_assert_true (kaged_classify_server_wait (anthropic, 429, NOW_MS, &wait, &source));
  g_assert_cmpint (wait, ==, 20000);
  g_assert_true (kaged_classify_server_wait (openai, 429, NOW_MS, &wait, &source));
  g_assert_cmpint (wait, ==, 360000);
  g_assert_cmpstr (source, ==, "x-ratelimit-reset");
  g_assert_true (kaged_classify_server_wait (no_remaining, 429, NOW_MS, &wait, &source));
  g_assert_cmpint (wait, ==, 2000);
}

/* Reset headers are a wait only on a 429, and only for a limit that is
 * exhausted: its `remaining` header is 0 or absent (DESIGN.md §4). */
static void
test_reset_only_when_exhausted (void)
{
  g_autoptr(SoupMessageHeaders) plenty = headers_new (
    "x-ratelimit-remaining-requests", "4999",
    "x-ratelimit-reset-requests", "1m0s",
    "x-ratelimit-reset-tokens", "45s",
    NULL);
  g_autoptr(SoupMessageHeaders) all_left = headers_new (
    "x-ratelimit-remaining-requests", "4999",
    "x-ratelimit-reset-requests", "1m0s",
    "x-ratelimit-remaining-tokens", "150000",
    "x-ratelimit-reset-tokens", "45s",
    "anthropic-ratelimit-requests-remaining", "40",
    "anthropic-ratelimit-requests-reset", "2026-11-29T20:00:42Z",
    NULL);
  g_autoptr(SoupMessageHeaders) anthropic_exhausted = headers_new (
    "anthropic-ratelimit-requests-remaining", "0",
    "anthropic-ratelimit-requests-reset", "2026-11-29T20:00:42Z",
    NULL);
  g_autoptr(SoupMessageHeaders) retry_after = headers_new (
    "retry-after", "5",
    "x-ratelimit-remaining-requests", "0",
    "x-ratelimit-reset-requests", "1m0s",
    NULL);
  g_autoptr(SoupMessageHeaders) retry_after_ms = headers_new (
    "retry-after-ms", "250",
    NULL);
  g_autoptr(GError) overloaded = classify (503, plenty, "{\"error\":{\"message\":\"Service unavailable\"}}");
  g_autoptr(GError) rate = classify (429, plenty, NULL);
  g_autoptr(GError) rate_all_left = classify (429, all_left, NULL);
  g_autoptr(GError) anthropic_529 = classify (529, anthropic_exhausted, NULL);
  g_autoptr(GError) anthropic_429 = classify (429, anthropic_exhausted, NULL);
  g_autoptr(GError) server_503 = classify (503, retry_after, NULL);
  g_autoptr(GError) server_500 = classify (500, retry_after_ms, NULL);
  g_autoptr(GError) in_stream = kaged_classify_stream_error ("overloaded_error", NULL, "Overloaded",
                                                             anthropic_exhausted, NOW_MS);

  /* The 503 of the issue: nothing is exhausted, the backoff applies. */
  g_assert_error (overloaded, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpint (kaged_provider_error_get_server_wait_ms (overloaded), ==, -1);
  g_assert_null (kaged_provider_error_get_wait_source (overloaded));
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (overloaded), ==, 0);

  /* On a 429 the token limit, with no `remaining` header, is in the way;
   * the request limit with 4999 left is not. */
  g_assert_error (rate, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_RATE_LIMITED);
  g_assert_cmpint (kaged_provider_error_get_server_wait_ms (rate), ==, 45000);
  g_assert_cmpstr (kaged_provider_error_get_wait_source (rate), ==, "x-ratelimit-reset");

  /* A 429 where every limit has requests left: no advice from resets. */
  g_assert_error (rate_all_left, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_RATE_LIMITED);
  g_assert_cmpint (kaged_provider_error_get_server_wait_ms (rate_all_left), ==, -1);
  g_assert_null (kaged_provider_error_get_wait_source (rate_all_left));

  /* An exhausted limit counts on a 429 only. */
  g_assert_error (anthropic_529, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpint (kaged_provider_error_get_server_wait_ms (anthropic_529), ==, -1);
  g_assert_cmpint (kaged_provider_error_get_server_wait_ms (anthropic_429), ==, 42000);
  g_assert_cmpstr (kaged_provider_error_get_wait_source (anthropic_429), ==, "anthropic-ratelimit-reset");
  g_assert_cmpint (kaged_provider_error_get_server_wait_ms (in_stream), ==, -1);

  /* Retry-After keeps working on any status. */
  g_assert_error (server_503, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpint (kaged_provider_error_get_server_wait_ms (server_503), ==, 5000);
  g_assert_cmpstr (kaged_provider_error_get_wait_source (server_503), ==, "retry-after");
  g_assert_error (server_500, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_SERVER_ERROR);
  g_assert_cmpint (kaged_provider_error_get_server_wait_ms (server_500), ==, 250);
  g_assert_cmpstr (kaged_provider_error_get_wait_source (server_500), ==, "retry-after-ms");
}

/* "[[[…]]]" @depth levels deep around @inner, as an error body's "detail". */
static char *
nested_body (const char *type,
             guint       depth)
{
  GString *body = g_string_new (NULL);

  g_string_append_printf (body, "{\"error\":{\"type\":\"%s\",\"message\":\"Deep\",\"detail\":", type);
  /* The error object and its root are two levels already. */
  for (guint i = 2; i < depth; i++)
    g_string_append_c (body, '[');
  for (guint i = 2; i < depth; i++)
    g_string_append_c (body, ']');
  g_string_append (body, "}}");

  return g_string_free (body, FALSE);
}

/* JSON nested too deep for json-glib's recursive parser is refused before
 * it is parsed: any provider or proxy could otherwise crash Kaged. */
static void
test_deep_body (void)
{
  g_autofree char *bounded = nested_body ("overloaded_error", 512);
  g_autofree char *too_deep = nested_body ("overloaded_error", 513);
  g_autofree char *crashing = nested_body ("overloaded_error", 200000);
  g_autoptr(GString) unbalanced = g_string_new ("{\"error\":");
  g_autoptr(GError) e1 = NULL;
  g_autoptr(GError) e2 = NULL;
  g_autoptr(GError) e3 = NULL;
  g_autoptr(GError) e4 = NULL;
  g_autoptr(GError) e5 = NULL;

  for (guint i = 0; i < 200000; i++)
    g_string_append (unbalanced, "{\"a\":");

  e1 = classify (500, NULL, bounded);
  g_assert_error (e1, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpstr (kaged_provider_error_get_provider_message (e1), ==, "Deep");

  e2 = classify (500, NULL, too_deep);
  g_assert_error (e2, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
  g_assert_cmpuint (kaged_provider_error_get_http_status (e2), ==, 500);
  g_assert_false (kaged_provider_error_get_retryable (e2));

  e3 = classify (429, NULL, crashing);
  g_assert_error (e3, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);

  e4 = classify (503, NULL, unbalanced->str);
  g_assert_error (e4, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);

  /* A 2xx body that is no stream goes the same way. */
  e5 = classify (200, NULL, crashing);
  g_assert_error (e5, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR);
}

/* A body of only white space is no JSON and no message. */
static void
test_blank_body (void)
{
  static const char * const bodies[] = { " ", "\n", " \r\n\t ", "\n\n\n" };

  for (guint i = 0; i < G_N_ELEMENTS (bodies); i++)
    {
      g_autoptr(GError) error = classify (503, NULL, bodies[i]);

      g_assert_error (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_OVERLOADED);
      g_assert_null (kaged_provider_error_get_provider_message (error));
    }
}

static void
test_go_durations (void)
{
  static const struct {
    const char *text;
    gint64      ms;
  } good[] = {
    { "0", 0 }, { "12ms", 12 }, { "1s", 1000 }, { "6m0s", 360000 }, { "1h2m3s", 3723000 },
    { "1.5s", 1500 }, { "2h", 7200000 }, { "500us", 1 }, { "250ns", 1 }, { "0.5ms", 1 },
    { "1m30.25s", 90250 },
  };
  static const char * const bad[] = { "", "s", "12", "1x", "-1s", "1 s", "abc", "1s2" };
  gint64 ms = -1;

  for (guint i = 0; i < G_N_ELEMENTS (good); i++)
    {
      g_assert_true (kaged_classify_parse_go_duration (good[i].text, &ms));
      g_assert_cmpint (ms, ==, good[i].ms);
    }
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    g_assert_false (kaged_classify_parse_go_duration (bad[i], &ms));
}

static void
test_message_reset (void)
{
  static const struct {
    const char *message;
    gint64      wait_ms;
  } rows[] = {
    { "You have no quota for 50 minutes.", 50 * 60000 },
    { "Usage limit reached. Please try again in 1 hour and 30 minutes.", 90 * 60000 },
    { "Please try again in 84ms.", 84 },
    { "Rate limit reached. Please try again in 6m0s.", 360000 },
    { "Your usage limit resets at 2026-11-29T21:15:00Z.", 75 * 60000 },
    { "Quota exceeded; try again at 2026-11-29T20:30:00+00:00", 30 * 60000 },
    { "Retry after 2 hours", 2 * 3600000 },
  };
  gint64 wait = -1;

  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    {
      g_test_message ("%s", rows[i].message);
      g_assert_true (kaged_classify_message_reset (rows[i].message, NOW_MS, &wait));
      g_assert_cmpint (wait, ==, rows[i].wait_ms);
    }

  g_assert_false (kaged_classify_message_reset ("You exceeded your current quota.", NOW_MS, &wait));
  g_assert_false (kaged_classify_message_reset ("no quota for this model", NOW_MS, &wait));
  g_assert_false (kaged_classify_message_reset (NULL, NOW_MS, &wait));
}

/* A quota with a known reset is scheduled; without one it is exhausted. */
static void
test_quota_scheduled (void)
{
  g_autoptr(GError) by_message = NULL;
  g_autoptr(GError) by_header = NULL;
  g_autoptr(GError) billing_header = NULL;
  g_autoptr(GError) short_reset = NULL;
  g_autoptr(GError) at_time = NULL;
  g_autoptr(SoupMessageHeaders) long_wait = headers_new ("x-ratelimit-reset-requests", "3h0m0s",
                                                         "x-ratelimit-remaining-requests", "0",
                                                         NULL);
  g_autoptr(SoupMessageHeaders) retry_after = headers_new ("retry-after", "3000", NULL);

  by_message = classify (429, NULL, "{\"error\":{\"message\":\"You have no quota for 50 minutes.\",\"type\":\"usage_limit\"}}");
  g_assert_error (by_message, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_QUOTA_SCHEDULED);
  g_assert_true (kaged_provider_error_get_retryable (by_message));
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (by_message), ==, NOW_MS + 50 * 60000);

  by_header = classify (429, long_wait, "{\"error\":{\"message\":\"Daily request limit reached.\",\"code\":\"organization_usage_limit_exceeded\"}}");
  g_assert_error (by_header, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_QUOTA_SCHEDULED);
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (by_header), ==, NOW_MS + 3 * 3600000);
  g_assert_cmpstr (kaged_provider_error_get_wait_source (by_header), ==, "x-ratelimit-reset");

  /* For billing, reset headers describe the rate window, not the quota. */
  billing_header = classify (429, retry_after, "{\"error\":{\"message\":\"You exceeded your current quota, please check your plan and billing details.\",\"code\":\"insufficient_quota\"}}");
  g_assert_error (billing_header, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_QUOTA_EXHAUSTED);
  g_assert_false (kaged_provider_error_get_retryable (billing_header));
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (billing_header), ==, 0);

  /* A "quota" that clears in seconds is a rate limit. */
  short_reset = classify (429, NULL, "{\"error\":{\"message\":\"Quota exceeded for requests per minute, try again in 20s.\"}}");
  g_assert_error (short_reset, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_RATE_LIMITED);

  at_time = classify (429, NULL, "{\"error\":{\"message\":\"Your usage limit resets at 2026-11-30T00:00:00Z.\"}}");
  g_assert_error (at_time, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_QUOTA_SCHEDULED);
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (at_time), ==, NOW_MS + 4 * 3600000);
}

static void
test_stream_errors (void)
{
  g_autoptr(GError) overloaded = kaged_classify_stream_error ("overloaded_error", NULL, "Overloaded", NULL, NOW_MS);
  g_autoptr(GError) api = kaged_classify_stream_error ("api_error", NULL, "Internal", NULL, NOW_MS);
  g_autoptr(GError) unknown = kaged_classify_stream_error (NULL, NULL, "something broke", NULL, NOW_MS);
  g_autoptr(GError) invalid = kaged_classify_stream_error ("invalid_request_error", NULL, "bad", NULL, NOW_MS);

  g_assert_error (overloaded, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpuint (kaged_provider_error_get_http_status (overloaded), ==, 0);
  g_assert_cmpstr (overloaded->message, ==, "The provider is overloaded: Overloaded");
  g_assert_error (api, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_SERVER_ERROR);
  g_assert_error (unknown, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_SERVER_ERROR);
  g_assert_error (invalid, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_INVALID_REQUEST);
}

static void
test_transport (void)
{
  static const struct {
    GQuark          domain;
    int             code;
    KagedRetryClass retry_class;
    gboolean        retryable;
  } rows[] = {
    { 0, G_IO_ERROR_CONNECTION_REFUSED, KAGED_RETRY_CLASS_NETWORK, TRUE },
    { 0, G_IO_ERROR_CONNECTION_CLOSED, KAGED_RETRY_CLASS_NETWORK, TRUE },
    { 0, G_IO_ERROR_BROKEN_PIPE, KAGED_RETRY_CLASS_NETWORK, TRUE },
    { 0, G_IO_ERROR_HOST_UNREACHABLE, KAGED_RETRY_CLASS_NETWORK, TRUE },
    { 0, G_IO_ERROR_TIMED_OUT, KAGED_RETRY_CLASS_TIMEOUT, TRUE },
    { 1, G_RESOLVER_ERROR_TEMPORARY_FAILURE, KAGED_RETRY_CLASS_NETWORK, TRUE },
    { 1, G_RESOLVER_ERROR_NOT_FOUND, KAGED_RETRY_CLASS_NETWORK, TRUE },
    { 2, G_TLS_ERROR_BAD_CERTIFICATE, KAGED_RETRY_CLASS_PROTOCOL_ERROR, FALSE },
    { 2, G_TLS_ERROR_NOT_TLS, KAGED_RETRY_CLASS_PROTOCOL_ERROR, FALSE },
    { 2, G_TLS_ERROR_EOF, KAGED_RETRY_CLASS_NETWORK, TRUE },
    { 3, SOUP_SESSION_ERROR_PARSING, KAGED_RETRY_CLASS_PROTOCOL_ERROR, FALSE },
  };
  g_autoptr(GError) cancelled = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED, "Operation was cancelled");
  g_autoptr(GError) still_cancelled = kaged_classify_transport_error (cancelled);

  g_assert_error (still_cancelled, G_IO_ERROR, G_IO_ERROR_CANCELLED);

  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    {
      GQuark domains[] = { G_IO_ERROR, G_RESOLVER_ERROR, G_TLS_ERROR, SOUP_SESSION_ERROR };
      g_autoptr(GError) cause = g_error_new_literal (domains[rows[i].domain], rows[i].code, "cause");
      g_autoptr(GError) error = kaged_classify_transport_error (cause);

      g_assert_error (error, KAGED_PROVIDER_ERROR, (int)rows[i].retry_class);
      g_assert_cmpint (kaged_provider_error_get_retryable (error), ==, rows[i].retryable);
      g_assert_cmpuint (kaged_provider_error_get_http_status (error), ==, 0);
      g_assert_nonnull (strstr (error->message, "cause"));
    }
}

static void
test_redact (void)
{
  const char *key = "sk-test-0123456789abcdef";
  g_autoptr(GError) error = classify (401, NULL,
                                      "{\"error\":{\"message\":\"Incorrect API key provided: sk-test-0123456789abcdef.\",\"code\":\"invalid_api_key\"}}");

  g_assert_nonnull (strstr (error->message, key));
  kaged_classify_redact (error, key);
  g_assert_null (strstr (error->message, key));
  g_assert_null (strstr (kaged_provider_error_get_provider_message (error), key));
  g_assert_nonnull (strstr (error->message, "[redacted]"));
}

static void
test_error_domain (void)
{
  g_autoptr(GError) error = kaged_provider_error_new (KAGED_RETRY_CLASS_OVERLOADED, "x %d", 1);
  g_autoptr(GError) copy = NULL;

  g_assert_true (kaged_provider_error_get_retryable (error));
  g_assert_cmpint (kaged_provider_error_get_server_wait_ms (error), ==, -1);
  g_assert_cmpint (kaged_provider_error_get_should_retry (error), ==, -1);
  g_assert_cmpuint (kaged_provider_error_get_http_status (error), ==, 0);

  kaged_provider_error_set_server_wait (error, 1200, "retry-after");
  kaged_provider_error_set_request_id (error, "req_1");
  kaged_provider_error_set_provider_message (error, "busy");
  kaged_provider_error_set_http_status (error, 529);
  kaged_provider_error_set_should_retry (error, 1);
  kaged_provider_error_set_retry_after_until (error, 99);

  copy = g_error_copy (error);
  g_assert_error (copy, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpint (kaged_provider_error_get_server_wait_ms (copy), ==, 1200);
  g_assert_cmpstr (kaged_provider_error_get_wait_source (copy), ==, "retry-after");
  g_assert_cmpstr (kaged_provider_error_get_request_id (copy), ==, "req_1");
  g_assert_cmpstr (kaged_provider_error_get_provider_message (copy), ==, "busy");
  g_assert_cmpuint (kaged_provider_error_get_http_status (copy), ==, 529);
  g_assert_cmpint (kaged_provider_error_get_should_retry (copy), ==, 1);
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (copy), ==, 99);

}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/classify/table", test_table);
  g_test_add_func ("/classify/message-is-for-people", test_message_is_for_people);
  g_test_add_func ("/classify/request-id", test_request_id);
  g_test_add_func ("/classify/should-retry", test_should_retry);
  g_test_add_func ("/classify/server-wait", test_server_wait);
  g_test_add_func ("/classify/server-wait-order", test_server_wait_order);
  g_test_add_func ("/classify/reset-families", test_reset_families);
  g_test_add_func ("/classify/reset-only-when-exhausted", test_reset_only_when_exhausted);
  g_test_add_func ("/classify/deep-body", test_deep_body);
  g_test_add_func ("/classify/blank-body", test_blank_body);
  g_test_add_func ("/classify/go-durations", test_go_durations);
  g_test_add_func ("/classify/message-reset", test_message_reset);
  g_test_add_func ("/classify/quota-scheduled", test_quota_scheduled);
  g_test_add_func ("/classify/stream-errors", test_stream_errors);
  g_test_add_func ("/classify/transport", test_transport);
  g_test_add_func ("/classify/redact", test_redact);
  g_test_add_func ("/classify/error-domain", test_error_domain);

  return g_test_run ();
}
