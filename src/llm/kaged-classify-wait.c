/* kaged-classify-wait.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-classify"

#include "config.h"

#include <math.h>
#include <string.h>

#include "kaged-classify.h"

/*
 * When a provider says to try again: from its headers and from the words
 * of its error message.
 *
 * Server-advised wait, first found wins: `retry-after-ms`; `retry-after`
 * (delta-seconds or an HTTP-date, minus now); the
 * `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset`
 * times; the `x-ratelimit-reset-{requests,tokens}` Go durations. Reset
 * headers are a wait only on a 429, and only for the limits that are in
 * the way: those whose `-remaining` header says 0 or is absent. The wait is
 * the latest of their resets (all of them must have reset). On any other
 * status, or when every limit has requests left, they are ignored: a 503
 * with `x-ratelimit-remaining-requests: 4999` is retried on the backoff.
 */

/*
 * Parses "1h2m3.5s"-style durations (Go's time.Duration strings) into
 * milliseconds, rounded up.
 */
gboolean
kaged_classify_parse_go_duration (const char *text,
                                  gint64     *ms)
{
  const char *p = text;
  double total = 0;
  gboolean any = FALSE;

  g_return_val_if_fail (ms != NULL, FALSE);

  if (text == NULL)
    return FALSE;

  while (g_ascii_isspace (*p))
    p++;

  if (p[0] == '0' && (p[1] == '\0' || g_ascii_isspace (p[1])))
    {
      *ms = 0;
      return TRUE;
    }

  while (*p != '\0' && !g_ascii_isspace (*p))
    {
      char *end = NULL;
      double value;
      double unit;

      if (!g_ascii_isdigit (*p) && *p != '.')
        return FALSE;

      value = g_ascii_strtod (p, &end);
      if (end == p || !isfinite (value) || value < 0)
        return FALSE;
      p = end;

      if (g_str_has_prefix (p, "ns"))
        unit = 1e-6, p += 2;
      else if (g_str_has_prefix (p, "us"))
        unit = 1e-3, p += 2;
      else if (g_str_has_prefix (p, "µs"))
        unit = 1e-3, p += strlen ("µs");
      else if (g_str_has_prefix (p, "ms"))
        unit = 1, p += 2;
      else if (*p == 's')
        unit = 1000, p += 1;
      else if (*p == 'm')
        unit = 60 * 1000, p += 1;
      else if (*p == 'h')
        unit = 3600 * 1000, p += 1;
      else
        return FALSE;

      total += value * unit;
      any = TRUE;
    }

  while (g_ascii_isspace (*p))
    p++;

  if (!any || *p != '\0' || total > (double)G_MAXINT64 / 2)
    return FALSE;

  *ms = (gint64)ceil (total);
  return TRUE;
}

static double
unit_ms (const char *word,
         gsize       len)
{
  static const struct {
    const char *name;
    double      ms;
  } units[] = {
    { "ms", 1 }, { "millisecond", 1 }, { "milliseconds", 1 },
    { "s", 1000 }, { "sec", 1000 }, { "secs", 1000 }, { "second", 1000 }, { "seconds", 1000 },
    { "m", 60000 }, { "min", 60000 }, { "mins", 60000 }, { "minute", 60000 }, { "minutes", 60000 },
    { "h", 3600000 }, { "hr", 3600000 }, { "hrs", 3600000 }, { "hour", 3600000 },
    { "hours", 3600000 },
    { "d", 86400000 }, { "day", 86400000 }, { "days", 86400000 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (units); i++)
    {
      if (strlen (units[i].name) == len && memcmp (units[i].name, word, len) == 0)
        return units[i].ms;
    }
  return 0;
}

/*
 * "50 minutes", "1 hour and 30 minutes", "84ms", "6m0s", "1.5 s" → ms.
 * @p is lower case.
 */
static gboolean
parse_human_duration (const char *p,
                      gint64     *ms)
{
  double total = 0;
  gboolean any = FALSE;

  for (;;)
    {
      const char *word;
      char *end = NULL;
      double value;
      double unit;

      while (*p == ' ')
        p++;
      if (any && g_str_has_prefix (p, "and "))
        p += 4;
      while (*p == ' ')
        p++;

      if (!g_ascii_isdigit (*p))
        break;

      value = g_ascii_strtod (p, &end);
      if (end == p || !isfinite (value) || value < 0)
        break;
      p = end;
      while (*p == ' ')
        p++;

      word = p;
      while (g_ascii_isalpha (*p))
        p++;
      unit = unit_ms (word, p - word);
      if (unit == 0)
        {
          /* "6m0s" splits into "m0s": take the letters up to a digit. */
          break;
        }

      total += value * unit;
      any = TRUE;

      if (*p == ',')
        p++;
    }

  if (!any || total > (double)G_MAXINT64 / 2)
    return FALSE;

  *ms = (gint64)ceil (total);
  return TRUE;
}

static gboolean
parse_reset_time (const char *p,
                  gint64      now_ms,
                  gint64     *wait_ms)
{
  g_autoptr(GDateTime) when = NULL;
  g_autofree char *token = NULL;
  gsize len = 0;

  while (*p == ' ')
    p++;

  while (p[len] != '\0' && p[len] != ' ' && p[len] != ',' && p[len] != ')' && p[len] != ';')
    len++;
  token = g_ascii_strup (p, len);

  /* A sentence may end right after the time. */
  if (len > 0 && token[len - 1] == '.')
    token[len - 1] = '\0';

  when = g_date_time_new_from_iso8601 (token, NULL);
  if (when == NULL)
    return FALSE;

  *wait_ms = MAX (0, g_date_time_to_unix (when) * 1000 +
                     g_date_time_get_microsecond (when) / 1000 - now_ms);
  return TRUE;
}

/**
 * kaged_classify_message_reset:
 * @message: what the provider said
 * @now_ms: the wall clock, epoch milliseconds
 * @wait_ms: (out): how long until the limit resets
 *
 * Finds a reset time in a provider's error message: "try again in 50
 * minutes", "retry after 2 hours", "no quota for 1 hour", "resets in 6m0s",
 * "resets at 2026-01-01T10:00:00Z".
 */
gboolean
kaged_classify_message_reset (const char *message,
                              gint64      now_ms,
                              gint64     *wait_ms)
{
  static const char * const in_phrases[] = {
    "try again in ", "retry in ", "retry after ", "resets in ", "reset in ",
    "available in ", "quota for ", "limit for ",
    NULL
  };
  static const char * const at_phrases[] = {
    "resets at ", "reset at ", "resets on ", "reset on ", "try again at ", "try again after ",
    "available at ", "available after ", "until ",
    NULL
  };
  g_autofree char *lower = NULL;

  g_return_val_if_fail (wait_ms != NULL, FALSE);

  if (message == NULL)
    return FALSE;

  lower = g_ascii_strdown (message, -1);

  for (guint i = 0; at_phrases[i] != NULL; i++)
    {
      const char *found = lower;

      while ((found = strstr (found, at_phrases[i])) != NULL)
        {
          found += strlen (at_phrases[i]);
          if (parse_reset_time (found, now_ms, wait_ms))
            return TRUE;
        }
    }

  for (guint i = 0; in_phrases[i] != NULL; i++)
    {
      const char *found = lower;

      while ((found = strstr (found, in_phrases[i])) != NULL)
        {
          const char *start = found + strlen (in_phrases[i]);
          gsize len = 0;
          g_autofree char *token = NULL;

          while (g_ascii_isalnum (start[len]) || start[len] == '.')
            len++;
          token = g_strndup (start, len);
          if (token[0] != '\0' && token[len - 1] == '.')
            token[len - 1] = '\0';

          if (kaged_classify_parse_go_duration (token, wait_ms) ||
              parse_human_duration (start, wait_ms))
            return TRUE;

          found = start;
        }
    }

  return FALSE;
}

static gboolean
parse_rfc3339_wait (const char *value,
                    gint64      now_ms,
                    gint64     *wait_ms)
{
  g_autoptr(GDateTime) when = NULL;

  if (value == NULL)
    return FALSE;

  when = g_date_time_new_from_iso8601 (value, NULL);
  if (when == NULL)
    return FALSE;

  *wait_ms = MAX (0, g_date_time_to_unix (when) * 1000 +
                     g_date_time_get_microsecond (when) / 1000 - now_ms);
  return TRUE;
}

static gboolean
reset_family (SoupMessageHeaders  *headers,
              const char * const  *reset_names,
              const char * const  *remaining_names,
              gboolean             go_durations,
              gint64               now_ms,
              gint64              *wait_ms)
{
  gint64 latest_exhausted = -1;

  for (guint i = 0; reset_names[i] != NULL; i++)
    {
      const char *value = soup_message_headers_get_one (headers, reset_names[i]);
      const char *remaining = soup_message_headers_get_one (headers, remaining_names[i]);
      g_autofree char *trimmed = NULL;
      gint64 wait = -1;
      gboolean ok;

      if (value == NULL)
        continue;

      trimmed = g_strstrip (g_strdup (value));
      if (go_durations)
        ok = kaged_classify_parse_go_duration (trimmed, &wait);
      else
        ok = parse_rfc3339_wait (trimmed, now_ms, &wait);

      if (!ok)
        continue;

      if (remaining != NULL)
        {
          g_autofree char *left = g_strstrip (g_strdup (remaining));

          /* A limit with requests left is not what stopped this one. */
          if (g_strcmp0 (left, "0") != 0)
            continue;
        }

      latest_exhausted = MAX (latest_exhausted, wait);
    }

  if (latest_exhausted < 0)
    return FALSE;

  *wait_ms = latest_exhausted;
  return TRUE;
}

/**
 * kaged_classify_server_wait:
 * @headers: (nullable): the response headers
 * @status: the HTTP status of the answer; reset headers count on a 429
 *   only (0 for an error inside a stream)
 * @now_ms: the wall clock, epoch milliseconds
 * @wait_ms: (out): the advised wait in milliseconds
 * @source: (out) (transfer none): `retry-after-ms`, `retry-after`,
 *   `anthropic-ratelimit-reset` or `x-ratelimit-reset`
 *
 * Returns: %TRUE when the headers advise a wait
 */
gboolean
kaged_classify_server_wait (SoupMessageHeaders  *headers,
                            guint                status,
                            gint64               now_ms,
                            gint64              *wait_ms,
                            const char         **source)
{
  static const char * const anthropic_reset[] = {
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-reset",
    NULL
  };
  static const char * const anthropic_remaining[] = {
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-tokens-remaining",
    "anthropic-ratelimit-input-tokens-remaining",
    "anthropic-ratelimit-output-tokens-remaining",
    NULL
  };
  static const char * const openai_reset[] = {
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    NULL
  };
  static const char * const openai_remaining[] = {
    "x-ratelimit-remaining-requests",
    "x-ratelimit-remaining-tokens",
    NULL
  };
  const char *value;
  gint64 wait = -1;

  g_return_val_if_fail (wait_ms != NULL, FALSE);
  g_return_val_if_fail (source != NULL, FALSE);

  if (headers == NULL)
    return FALSE;

  value = soup_message_headers_get_one (headers, "retry-after-ms");
  if (value != NULL)
    {
      char *end = NULL;
      double ms = g_ascii_strtod (value, &end);

      while (end != NULL && g_ascii_isspace (*end))
        end++;
      if (end != value && end != NULL && *end == '\0' && isfinite (ms) && ms >= 0 &&
          ms < (double)G_MAXINT64 / 2)
        {
          *wait_ms = (gint64)ceil (ms);
          *source = "retry-after-ms";
          return TRUE;
        }
    }

  value = soup_message_headers_get_one (headers, "retry-after");
  if (value != NULL)
    {
      g_autofree char *trimmed = g_strstrip (g_strdup (value));
      char *end = NULL;
      double seconds = g_ascii_strtod (trimmed, &end);

      if (g_ascii_isdigit (trimmed[0]) && end != NULL && *end == '\0' &&
          isfinite (seconds) && seconds >= 0 && seconds < (double)G_MAXINT64 / 2000)
        {
          *wait_ms = (gint64)ceil (seconds * 1000);
          *source = "retry-after";
          return TRUE;
        }
      else
        {
          g_autoptr(GDateTime) when = soup_date_time_new_from_http_string (trimmed);

          if (when != NULL)
            {
              *wait_ms = MAX (0, g_date_time_to_unix (when) * 1000 - now_ms);
              *source = "retry-after";
              return TRUE;
            }
        }
    }

  if (status != 429)
    return FALSE;

  if (reset_family (headers, anthropic_reset, anthropic_remaining, FALSE, now_ms, &wait))
    {
      *wait_ms = wait;
      *source = "anthropic-ratelimit-reset";
      return TRUE;
    }

  if (reset_family (headers, openai_reset, openai_remaining, TRUE, now_ms, &wait))
    {
      *wait_ms = wait;
      *source = "x-ratelimit-reset";
      return TRUE;
    }

  return FALSE;
}

/**
 * kaged_classify_apply_headers:
 * @error: a %KAGED_PROVIDER_ERROR
 * @headers: (nullable): the response headers
 * @status: the HTTP status of the answer (0 for an error inside a stream)
 * @now_ms: the wall clock, epoch milliseconds
 *
 * Records on @error what the headers say: the server-advised wait and
 * where it came from, `x-should-retry`, and the request id (`x-request-id`
 * or `request-id`) unless one is already set.
 */
void
kaged_classify_apply_headers (GError             *error,
                              SoupMessageHeaders *headers,
                              guint               status,
                              gint64              now_ms)
{
  const char *value;
  const char *source = NULL;
  gint64 wait = -1;

  g_return_if_fail (error != NULL && error->domain == KAGED_PROVIDER_ERROR);

  if (headers == NULL)
    return;

  if (kaged_classify_server_wait (headers, status, now_ms, &wait, &source))
    kaged_provider_error_set_server_wait (error, wait, source);

  value = soup_message_headers_get_one (headers, "x-should-retry");
  if (value != NULL)
    {
      g_autofree char *trimmed = g_strstrip (g_strdup (value));

      if (g_ascii_strcasecmp (trimmed, "true") == 0)
        kaged_provider_error_set_should_retry (error, 1);
      else if (g_ascii_strcasecmp (trimmed, "false") == 0)
        kaged_provider_error_set_should_retry (error, 0);
    }

  value = soup_message_headers_get_one (headers, "x-request-id");
  if (value == NULL)
    value = soup_message_headers_get_one (headers, "request-id");
  if (value != NULL)
    kaged_provider_error_set_request_id (error, value);
}
