/* fuzz-ndjson.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "kaged-fuzz.h"
#include "kaged-ndjson-parser.h"

/*
 * The NDJSON parser on any bytes, fed whole and in three pieces cut where
 * the first two bytes say: both must hand over the same lines, byte for
 * byte, and give the same verdict.
 */

static gboolean
record_line (const char  *line,
             gsize        len,
             gpointer     user_data,
             GError     **error)
{
  GString *out = user_data;

  g_assert (len > 0);
  g_assert (memchr (line, '\n', len) == NULL);
  g_string_append_printf (out, "%" G_GSIZE_FORMAT ":", len);
  g_string_append_len (out, line, len);

  return TRUE;
}

static GString *
parse (const char  *data,
       gsize        size,
       const gsize *cuts,
       guint        n_cuts)
{
  GString *out = g_string_new (NULL);
  g_autoptr(KagedNdjsonParser) parser = kaged_ndjson_parser_new (record_line, out);
  gboolean ok = TRUE;
  gsize at = 0;

  kaged_ndjson_parser_set_max_size (parser, 512);
  for (guint i = 0; ok && i <= n_cuts; i++)
    {
      gsize next = i < n_cuts ? cuts[i] : size;

      ok = kaged_ndjson_parser_feed (parser, size > 0 ? data + at : NULL, next - at, NULL);
      at = next;
    }
  if (ok)
    ok = kaged_ndjson_parser_finish (parser, NULL);
  g_string_append (out, ok ? "ok" : "failed");

  return out;
}

int
LLVMFuzzerTestOneInput (const guint8 *data,
                        size_t        size)
{
  g_autoptr(GString) whole = NULL;
  g_autoptr(GString) split = NULL;
  gsize cuts[2];

  if (size < 2)
    return 0;

  cuts[0] = data[0] % (size - 1);
  cuts[1] = cuts[0] + data[1] % (size - 1 - cuts[0]);
  data += 2;
  size -= 2;

  whole = parse ((const char *)data, size, NULL, 0);
  split = parse ((const char *)data, size, cuts, 2);
  g_assert_cmpmem (whole->str, whole->len, split->str, split->len);

  return 0;
}
