/* fuzz-classify.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "kaged-classify.h"
#include "kaged-fuzz.h"
#include "kaged-provider.h"

/*
 * Classification of a provider's failure on any answer. The input is
 *
 *   two bytes of status, then "name: value" header lines, a blank line,
 *   and the body
 *
 * (without a blank line, all of it is the body). Every answer must give a
 * classified provider error; the waits it advises are never negative.
 */

#define NOW_MS G_GINT64_CONSTANT (1795982400000)

static void
check (GError *error)
{
  g_assert_nonnull (error);
  g_assert_true (error->domain == KAGED_PROVIDER_ERROR);
  g_assert_cmpint (kaged_provider_error_get_server_wait_ms (error), >=, -1);
  g_assert_cmpint (kaged_provider_error_get_retry_after_until (error), >=, 0);
  g_error_free (error);
}

int
LLVMFuzzerTestOneInput (const guint8 *data,
                        size_t        size)
{
  g_autoptr(SoupMessageHeaders) headers = soup_message_headers_new (SOUP_MESSAGE_HEADERS_RESPONSE);
  g_autofree char *text = NULL;
  const char *body;
  const char *blank;
  gsize body_len;
  guint status;
  gint64 wait = -1;
  const char *source = NULL;

  if (size < 2)
    return 0;

  status = 100 + (data[0] << 8 | data[1]) % 500;
  text = g_strndup ((const char *)data + 2, size - 2);
  body = (const char *)data + 2;
  body_len = size - 2;

  blank = strstr (text, "\n\n");
  if (blank != NULL)
    {
      g_autofree char *head = g_strndup (text, blank - text);
      g_auto(GStrv) lines = g_strsplit (head, "\n", -1);

      for (guint i = 0; lines[i] != NULL; i++)
        {
          char *colon = strchr (lines[i], ':');

          g_strdelimit (lines[i], "\r", ' ');
          if (colon == NULL || colon == lines[i] || !g_utf8_validate (lines[i], -1, NULL))
            continue;
          *colon = '\0';
          g_strstrip (lines[i]);
          /* Only what libsoup would have parsed as a header. */
          if (lines[i][0] == '\0' || strpbrk (lines[i], " \t") != NULL)
            continue;
          soup_message_headers_append (headers, lines[i], g_strstrip (colon + 1));
        }

      body = (const char *)data + 2 + (blank - text) + 2;
      body_len = size - 2 - (blank - text) - 2;
    }

  check (kaged_classify_http_error (status, headers, body, body_len, NOW_MS));
  check (kaged_classify_http_error (429, headers, body, body_len, NOW_MS));
  check (kaged_classify_stream_error (text, NULL, text, headers, NOW_MS));

  if (kaged_classify_server_wait (headers, 429, NOW_MS, &wait, &source))
    {
      g_assert_cmpint (wait, >=, 0);
      g_assert_nonnull (source);
    }
  if (kaged_classify_message_reset (text, NOW_MS, &wait))
    g_assert_cmpint (wait, >=, 0);
  if (kaged_classify_parse_go_duration (text, &wait))
    g_assert_cmpint (wait, >=, 0);

  return 0;
}
