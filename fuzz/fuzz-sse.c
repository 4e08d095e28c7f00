/* fuzz-sse.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "kaged-fuzz.h"
#include "kaged-sse-parser.h"

/*
 * The SSE parser on any bytes, fed whole and in three pieces cut where the
 * first two bytes say: both must give the same events and the same
 * verdict, and every event's data is nul-terminated at its length.
 */

static gboolean
record_event (const KagedSseEvent  *event,
              gpointer              user_data,
              GError              **error)
{
  GString *out = user_data;

  g_assert (event->data[event->data_len] == '\0');
  g_string_append_printf (out, "%s|%s|", event->type, event->id);
  g_string_append_len (out, event->data, event->data_len);
  g_string_append_c (out, '\n');

  return TRUE;
}

static char *
parse (const char  *data,
       gsize        size,
       const gsize *cuts,
       guint        n_cuts)
{
  GString *out = g_string_new (NULL);
  g_autoptr(KagedSseParser) parser = kaged_sse_parser_new (record_event, out);
  gboolean ok = TRUE;
  gsize at = 0;

  kaged_sse_parser_set_max_size (parser, 512);
  for (guint i = 0; ok && i <= n_cuts; i++)
    {
      gsize next = i < n_cuts ? cuts[i] : size;

      ok = kaged_sse_parser_feed (parser, size > 0 ? data + at : NULL, next - at, NULL);
      at = next;
    }
  if (ok)
    ok = kaged_sse_parser_finish (parser, NULL);
  g_string_append (out, ok ? "ok" : "failed");

  return g_string_free (out, FALSE);
}

int
LLVMFuzzerTestOneInput (const guint8 *data,
                        size_t        size)
{
  g_autofree char *whole = NULL;
  g_autofree char *split = NULL;
  gsize cuts[2];

  if (size < 2)
    return 0;

  cuts[0] = data[0] % (size - 1);
  cuts[1] = cuts[0] + data[1] % (size - 1 - cuts[0]);
  data += 2;
  size -= 2;

  whole = parse ((const char *)data, size, NULL, 0);
  split = parse ((const char *)data, size, cuts, 2);
  g_assert_cmpstr (whole, ==, split);

  return 0;
}
