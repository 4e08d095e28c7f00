/* kaged-classify.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-classify"

#include "config.h"

#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "kaged-classify.h"
#include "kaged-json.h"
#include "kaged-retry-class.h"

/*
 * Turning a provider's failure into the retry classification of
 * DESIGN.md §3. The rules, first match wins:
 *
 *  1. context_overflow — code or type `context_length_exceeded`, or a
 *     message saying "prompt is too long", "maximum context length",
 *     "context length exceeded" or "context window".
 *  2. spend_limit_exceeded — a provider spend-cap code
 *     (`organization_spend_limit_exceeded`, `project_spend_limit_exceeded`,
 *     `spend_limit_exceeded`).
 *  3. Quota. Hard quota is billing: `insufficient_quota`, `billing_error`,
 *     `credit_balance_exhausted`, `billing_hard_limit_reached`,
 *     `billing_not_active`, HTTP 402, or "exceeded your current quota".
 *     Usage quota is a limit that resets by itself:
 *     `organization_usage_limit_exceeded`, `usage_limit_exceeded`,
 *     `quota_exceeded`, or a 429 whose message speaks of a "quota" or a
 *     "usage limit". The reset time comes from the message ("try again in
 *     50 minutes", "no quota for 1 hour", "resets at 2026-01-01T10:00:00Z")
 *     and, for usage quota only, from the server-advised wait of the
 *     headers (for billing errors those headers describe the rate window,
 *     not the quota). A reset at least KAGED_CLASSIFY_QUOTA_MIN_RESET_MS
 *     away makes it quota_scheduled with retry_after_until = now + reset;
 *     a shorter one is only a rate limit (rate_limited); no reset at all
 *     is quota_exhausted.
 *  4. auth_failed — 401, 403, `invalid_api_key`, `authentication_error`,
 *     `permission_error`, `invalid_authentication`.
 *  5. rate_limited — `rate_limit_exceeded`, `rate_limit_error`, or 429.
 *     A long server wait stays on the error (server_wait_ms); the tier-1
 *     retry turns it into retry_after_until.
 *  6. overloaded — `overloaded_error`, 529, 503.
 *  7. By status: 408 → timeout; 409 → server_error (a conflict on the
 *     provider's side that clears by itself); other 4xx → invalid_request
 *     (404 "model not found" among them); 5xx → server_error; anything
 *     else (a 2xx or 3xx that is not a stream) → protocol_error. An error
 *     reported inside a stream has no status of its own: `api_error` and
 *     unknown types are server_error, `invalid_request_error` and
 *     `not_found_error` invalid_request.
 *
 * Transport failures (kaged_classify_transport_error()): timeouts are
 * timeout; refused, reset, unreachable and every resolver failure are
 * network — a host that does not resolve is far more often a machine
 * without network than a mistyped address, and the tier-2 banner names the
 * host either way. TLS certificate failures (bad, missing or not TLS at
 * all) are protocol_error and never retried: the answer cannot be shown
 * to come from the provider. Other TLS failures (a handshake cut short)
 * are network.
 *
 * The server-advised wait is read in kaged-classify-wait.c.
 */

#define MAX_PROVIDER_MESSAGE 1000

typedef struct
{
  char     *type;
  char     *code;
  char     *message;
  char     *request_id;
  gboolean  too_deep;
} BodyInfo;

static void
body_info_clear (BodyInfo *info)
{
  g_clear_pointer (&info->type, g_free);
  g_clear_pointer (&info->code, g_free);
  g_clear_pointer (&info->message, g_free);
  g_clear_pointer (&info->request_id, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (BodyInfo, body_info_clear)

static char *
member_string (JsonObject *object,
               const char *name)
{
  JsonNode *node;

  if (object == NULL || !json_object_has_member (object, name))
    return NULL;

  node = json_object_get_member (object, name);
  if (!JSON_NODE_HOLDS_VALUE (node))
    return NULL;

  switch (json_node_get_value_type (node))
    {
    case G_TYPE_STRING:
      return g_strdup (json_node_get_string (node));

    case G_TYPE_INT64:
      return g_strdup_printf ("%" G_GINT64_FORMAT, json_node_get_int (node));

    default:
      return NULL;
    }
}

static void
parse_body (const char *body,
            gsize       len,
            BodyInfo   *info)
{
  g_autoptr(JsonParser) parser = NULL;
  g_autofree char *repaired = NULL;
  gsize repaired_length = 0;
  JsonObject *root;
  JsonNode *root_node;
  JsonNode *error_node;

  if (body == NULL || len == 0)
    return;

  if (len > G_MAXSSIZE)
    len = G_MAXSSIZE;

  /* No provider nests its errors that deep: refused unparsed. */
  if (kaged_json_nested_deeper (body, len, KAGED_JSON_MAX_DEPTH))
    {
      info->too_deep = TRUE;
      return;
    }

  /* What the body says is kept even when a byte or an escape is wrong. */
  repaired = kaged_json_repair (body, len, &repaired_length);

  parser = json_parser_new ();
  if (!json_parser_load_from_data (parser, repaired != NULL ? repaired : body,
                                   repaired != NULL ? repaired_length : len, NULL))
    {
      /* A short plain-text body is still what the server said. */
      if (len <= 300 && body[0] != '<' && g_utf8_validate_len (body, len, NULL))
        info->message = g_strstrip (g_strndup (body, len));
      if (info->message != NULL && info->message[0] == '\0')
        g_clear_pointer (&info->message, g_free);
      return;
    }

  /* Only white space parses to no root at all. */
  root_node = json_parser_get_root (parser);
  if (root_node == NULL || !JSON_NODE_HOLDS_OBJECT (root_node))
    return;

  root = json_node_get_object (root_node);
  info->request_id = member_string (root, "request_id");

  error_node = json_object_get_member (root, "error");
  if (error_node != NULL && JSON_NODE_HOLDS_OBJECT (error_node))
    {
      JsonObject *error = json_node_get_object (error_node);

      info->message = member_string (error, "message");
      info->type = member_string (error, "type");
      info->code = member_string (error, "code");
    }
  else if (error_node != NULL && JSON_NODE_HOLDS_VALUE (error_node))
    {
      info->message = member_string (root, "error");
    }
  else if (json_object_has_member (root, "message"))
    {
      info->message = member_string (root, "message");
      info->type = member_string (root, "type");
      info->code = member_string (root, "code");
    }
}

static gboolean
is_one_of (const char         *type,
           const char         *code,
           const char * const *names)
{
  for (guint i = 0; names[i] != NULL; i++)
    {
      if (g_strcmp0 (type, names[i]) == 0 || g_strcmp0 (code, names[i]) == 0)
        return TRUE;
    }
  return FALSE;
}

static gboolean
says (const char         *lower_message,
      const char * const *phrases)
{
  if (lower_message == NULL)
    return FALSE;

  for (guint i = 0; phrases[i] != NULL; i++)
    {
      if (strstr (lower_message, phrases[i]) != NULL)
        return TRUE;
    }
  return FALSE;
}

static KagedRetryClass
classify_fields (guint               status,
                 const char         *type,
                 const char         *code,
                 const char         *message,
                 SoupMessageHeaders *headers,
                 gint64              now_ms,
                 gint64             *until_ms)
{
  static const char * const overflow_codes[] = { "context_length_exceeded", NULL };
  static const char * const overflow_phrases[] = {
    "prompt is too long", "maximum context length", "context length exceeded",
    "context window", NULL
  };
  static const char * const spend_codes[] = {
    "organization_spend_limit_exceeded", "project_spend_limit_exceeded",
    "spend_limit_exceeded", NULL
  };
  static const char * const billing_codes[] = {
    "insufficient_quota", "billing_error", "credit_balance_exhausted",
    "billing_hard_limit_reached", "billing_not_active", NULL
  };
  static const char * const billing_phrases[] = { "exceeded your current quota", NULL };
  static const char * const usage_codes[] = {
    "organization_usage_limit_exceeded", "usage_limit_exceeded", "quota_exceeded", NULL
  };
  static const char * const usage_phrases[] = { "quota", "usage limit", NULL };
  static const char * const auth_codes[] = {
    "invalid_api_key", "authentication_error", "permission_error",
    "invalid_authentication", NULL
  };
  static const char * const rate_codes[] = {
    "rate_limit_exceeded", "rate_limit_error", NULL
  };
  static const char * const overloaded_codes[] = { "overloaded_error", "overloaded", NULL };
  static const char * const invalid_codes[] = {
    "invalid_request_error", "not_found_error", "request_too_large", "model_not_found", NULL
  };
  g_autofree char *lower = message != NULL ? g_ascii_strdown (message, -1) : NULL;
  gboolean billing;
  gboolean usage;

  *until_ms = 0;

  if (is_one_of (type, code, overflow_codes) || says (lower, overflow_phrases))
    return KAGED_RETRY_CLASS_CONTEXT_OVERFLOW;

  if (is_one_of (type, code, spend_codes))
    return KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED;

  billing = is_one_of (type, code, billing_codes) || status == 402 || says (lower, billing_phrases);
  usage = !billing &&
          (is_one_of (type, code, usage_codes) ||
           (status == 429 && !is_one_of (type, code, rate_codes) && says (lower, usage_phrases)));

  if (billing || usage)
    {
      gint64 reset = -1;
      const char *source = NULL;

      if (!kaged_classify_message_reset (message, now_ms, &reset) && usage)
        {
          if (!kaged_classify_server_wait (headers, status, now_ms, &reset, &source))
            reset = -1;
        }

      if (reset >= KAGED_CLASSIFY_QUOTA_MIN_RESET_MS)
        {
          *until_ms = now_ms + reset;
          return KAGED_RETRY_CLASS_QUOTA_SCHEDULED;
        }
      if (reset >= 0)
        return KAGED_RETRY_CLASS_RATE_LIMITED;
      return KAGED_RETRY_CLASS_QUOTA_EXHAUSTED;
    }

  if (status == 401 || status == 403 || is_one_of (type, code, auth_codes))
    return KAGED_RETRY_CLASS_AUTH_FAILED;

  if (is_one_of (type, code, rate_codes))
    return KAGED_RETRY_CLASS_RATE_LIMITED;

  if (status == 529 || status == 503 || is_one_of (type, code, overloaded_codes))
    return KAGED_RETRY_CLASS_OVERLOADED;

  if (status == 0)
    {
      if (is_one_of (type, code, invalid_codes))
        return KAGED_RETRY_CLASS_INVALID_REQUEST;
      return KAGED_RETRY_CLASS_SERVER_ERROR;
    }

  if (status == 408)
    return KAGED_RETRY_CLASS_TIMEOUT;
  if (status == 409)
    return KAGED_RETRY_CLASS_SERVER_ERROR;
  if (status == 429)
    return KAGED_RETRY_CLASS_RATE_LIMITED;
  if (status >= 400 && status < 500)
    return KAGED_RETRY_CLASS_INVALID_REQUEST;
  if (status >= 500 && status < 600)
    return KAGED_RETRY_CLASS_SERVER_ERROR;

  return KAGED_RETRY_CLASS_PROTOCOL_ERROR;
}

static char *
shorten (const char *message)
{
  g_autofree char *valid = NULL;
  const char *cut;

  if (message == NULL || message[0] == '\0')
    return NULL;

  valid = g_utf8_make_valid (message, -1);
  if (g_utf8_strlen (valid, -1) <= MAX_PROVIDER_MESSAGE)
    return g_strstrip (g_steal_pointer (&valid));

  cut = g_utf8_offset_to_pointer (valid, MAX_PROVIDER_MESSAGE);
  return g_strdup_printf ("%.*s…", (int)(cut - valid), valid);
}

static GError *
build_error (KagedRetryClass  retry_class,
             guint            status,
             const char      *provider_message,
             gint64           until_ms)
{
  const char *what = kaged_retry_class_describe (retry_class);
  g_autofree char *said = shorten (provider_message);
  GError *error;

  if (status > 0 && said != NULL)
    /* Translators: "<what went wrong> (HTTP <status>): <what the provider said>" */
    error = kaged_provider_error_new (retry_class, _("%s (HTTP %u): %s"), what, status, said);
  else if (status > 0)
    error = kaged_provider_error_new (retry_class, _("%s (HTTP %u)"), what, status);
  else if (said != NULL)
    error = kaged_provider_error_new (retry_class, _("%s: %s"), what, said);
  else
    error = kaged_provider_error_new (retry_class, "%s", what);

  kaged_provider_error_set_http_status (error, status);
  kaged_provider_error_set_provider_message (error, said);
  if (until_ms > 0)
    kaged_provider_error_set_retry_after_until (error, until_ms);
  if (retry_class == KAGED_RETRY_CLASS_QUOTA_SCHEDULED && until_ms <= 0)
    kaged_provider_error_set_retryable (error, FALSE);

  return error;
}

/**
 * kaged_classify_http_error:
 * @status: the HTTP status of a failed answer
 * @headers: (nullable): its headers
 * @body: (nullable): its body, as much of it as was read
 * @len: length of @body
 * @now_ms: the wall clock, epoch milliseconds
 *
 * Classifies an HTTP answer that is not a stream: the status, the error
 * object of the body (OpenAI's and Anthropic's `error.{type,code,message}`,
 * Ollama's `error` string) and the headers.
 *
 * Returns: (transfer full): a fully populated %KAGED_PROVIDER_ERROR
 */
GError *
kaged_classify_http_error (guint               status,
                           SoupMessageHeaders *headers,
                           const char         *body,
                           gsize               len,
                           gint64              now_ms)
{
  g_auto(BodyInfo) info = { NULL, };
  KagedRetryClass retry_class;
  gint64 until_ms = 0;
  GError *error;

  parse_body (body, len, &info);
  if (info.too_deep)
    retry_class = KAGED_RETRY_CLASS_PROTOCOL_ERROR;
  else
    retry_class = classify_fields (status, info.type, info.code, info.message, headers, now_ms,
                                   &until_ms);

  error = build_error (retry_class, status, info.message, until_ms);
  if (info.request_id != NULL)
    kaged_provider_error_set_request_id (error, info.request_id);
  kaged_classify_apply_headers (error, headers, status, now_ms);

  return error;
}

/**
 * kaged_classify_stream_error:
 * @type: (nullable): the error type the stream named
 * @code: (nullable): its code
 * @message: (nullable): its message
 * @headers: (nullable): the headers of the (successful) answer
 * @now_ms: the wall clock, epoch milliseconds
 *
 * Classifies an error reported inside a stream that had started with a
 * success status: Anthropic's `error` event, an OpenAI `data: {"error":…}`
 * or an Ollama `{"error":…}` line. The error's HTTP status is 0.
 *
 * Returns: (transfer full): a %KAGED_PROVIDER_ERROR
 */
GError *
kaged_classify_stream_error (const char         *type,
                             const char         *code,
                             const char         *message,
                             SoupMessageHeaders *headers,
                             gint64              now_ms)
{
  KagedRetryClass retry_class;
  gint64 until_ms = 0;
  GError *error;

  retry_class = classify_fields (0, type, code, message, NULL, now_ms, &until_ms);
  error = build_error (retry_class, 0, message, until_ms);
  kaged_classify_apply_headers (error, headers, 0, now_ms);

  return error;
}

/**
 * kaged_classify_transport_error:
 * @error: a failure from libsoup or GIO before or while reading an answer
 *
 * Returns: (transfer full): a %KAGED_PROVIDER_ERROR, or a copy of @error
 *   when it is a cancellation (%G_IO_ERROR_CANCELLED) or already a
 *   %KAGED_PROVIDER_ERROR
 */
GError *
kaged_classify_transport_error (const GError *error)
{
  KagedRetryClass retry_class = KAGED_RETRY_CLASS_NETWORK;
  GError *classified;

  g_return_val_if_fail (error != NULL, NULL);

  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED) ||
      error->domain == KAGED_PROVIDER_ERROR)
    return g_error_copy (error);

  if (error->domain == G_IO_ERROR)
    {
      switch (error->code)
        {
        case G_IO_ERROR_TIMED_OUT:
          retry_class = KAGED_RETRY_CLASS_TIMEOUT;
          break;

        case G_IO_ERROR_INVALID_DATA:
          retry_class = KAGED_RETRY_CLASS_PROTOCOL_ERROR;
          break;

        default:
          retry_class = KAGED_RETRY_CLASS_NETWORK;
          break;
        }
    }
  else if (error->domain == G_TLS_ERROR)
    {
      switch (error->code)
        {
        case G_TLS_ERROR_BAD_CERTIFICATE:
        case G_TLS_ERROR_NOT_TLS:
        case G_TLS_ERROR_CERTIFICATE_REQUIRED:
        case G_TLS_ERROR_HANDSHAKE:
        case G_TLS_ERROR_UNAVAILABLE:
        case G_TLS_ERROR_BAD_CERTIFICATE_PASSWORD:
        case G_TLS_ERROR_INAPPROPRIATE_FALLBACK:
          retry_class = KAGED_RETRY_CLASS_PROTOCOL_ERROR;
          break;

        case G_TLS_ERROR_EOF:
        case G_TLS_ERROR_MISC:
        default:
          retry_class = KAGED_RETRY_CLASS_NETWORK;
          break;
        }
    }
  else if (error->domain == G_RESOLVER_ERROR)
    {
      retry_class = KAGED_RETRY_CLASS_NETWORK;
    }
  else if (error->domain == SOUP_SESSION_ERROR)
    {
      switch (error->code)
        {
        case SOUP_SESSION_ERROR_MESSAGE_ALREADY_IN_QUEUE:
          retry_class = KAGED_RETRY_CLASS_INVALID_REQUEST;
          break;

        case SOUP_SESSION_ERROR_TOO_MANY_RESTARTS:
          retry_class = KAGED_RETRY_CLASS_NETWORK;
          break;

        case SOUP_SESSION_ERROR_PARSING:
        case SOUP_SESSION_ERROR_ENCODING:
        case SOUP_SESSION_ERROR_TOO_MANY_REDIRECTS:
        case SOUP_SESSION_ERROR_REDIRECT_NO_LOCATION:
        case SOUP_SESSION_ERROR_REDIRECT_BAD_URI:
        default:
          retry_class = KAGED_RETRY_CLASS_PROTOCOL_ERROR;
          break;
        }
    }

  classified = kaged_provider_error_new (retry_class, _("%s: %s"),
                                         kaged_retry_class_describe (retry_class),
                                         error->message);
  return classified;
}

/**
 * kaged_classify_redact:
 * @error: (nullable): an error about to leave the provider
 * @secret: (nullable): the API key
 *
 * Replaces every occurrence of @secret in the message of @error (and its
 * provider message) so a key a server echoed back never reaches a person
 * or a log.
 */
void
kaged_classify_redact (GError     *error,
                       const char *secret)
{
  if (error == NULL || secret == NULL || secret[0] == '\0')
    return;

  if (error->message != NULL && strstr (error->message, secret) != NULL)
    {
      g_autoptr(GString) s = g_string_new (error->message);

      g_string_replace (s, secret, "[redacted]", 0);
      g_free (error->message);
      error->message = g_string_free (g_steal_pointer (&s), FALSE);
    }

  if (error->domain == KAGED_PROVIDER_ERROR)
    {
      const char *said = kaged_provider_error_get_provider_message (error);

      if (said != NULL && strstr (said, secret) != NULL)
        {
          g_autoptr(GString) s = g_string_new (said);

          g_string_replace (s, secret, "[redacted]", 0);
          kaged_provider_error_set_provider_message (error, s->str);
        }
    }
}
