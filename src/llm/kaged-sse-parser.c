/* kaged-sse-parser.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-sse-parser"

#include "config.h"

#include <glib/gi18n.h>
#include <string.h>

#include "kaged-provider.h"
#include "kaged-sse-parser.h"

/*
 * An incremental parser for text/event-stream as the HTML standard defines
 * it: lines end with CR LF, LF or CR (a CR may end one chunk and its LF
 * start the next), a leading BOM is dropped, `:` starts a comment, a field
 * without a colon has an empty value, `data` lines are joined with LF and
 * an event is dispatched on a blank line. An event that never gets its
 * blank line before the end of the stream is discarded.
 *
 * Complete lines are parsed where they lie in the caller's buffer; only a
 * line split across chunks is copied, and only the data of the event being
 * built is kept. Both are capped (a line, and an event's data, may not
 * exceed max_size) so memory stays bounded whatever the server sends.
 */

/* After a large event, buffers above this are given back. */
#define KEEP_ALLOCATED (64 * 1024)

static const guint8 bom[3] = { 0xEF, 0xBB, 0xBF };

/* A byte buffer, always nul-terminated, appended to without a call. */
typedef struct
{
  char  *data;
  gsize  len;
  gsize  alloc;
} Buf;

static void
buf_init (Buf   *buf,
          gsize  size)
{
  buf->data = g_malloc (size);
  buf->data[0] = '\0';
  buf->len = 0;
  buf->alloc = size;
}

static void
buf_grow (Buf   *buf,
          gsize  need)
{
  gsize alloc = buf->alloc;

  while (alloc < need)
    alloc *= 2;
  buf->data = g_realloc (buf->data, alloc);
  buf->alloc = alloc;
}

static inline void
buf_append (Buf        *buf,
            const char *data,
            gsize       len)
{
  if (G_UNLIKELY (buf->len + len + 1 > buf->alloc))
    buf_grow (buf, buf->len + len + 1);
  memcpy (buf->data + buf->len, data, len);
  buf->len += len;
  buf->data[buf->len] = '\0';
}

static inline void
buf_set (Buf        *buf,
         const char *data,
         gsize       len)
{
  buf->len = 0;
  buf_append (buf, data, len);
}

static inline void
buf_truncate (Buf   *buf,
              gsize  len)
{
  buf->len = len;
  buf->data[len] = '\0';
}

static void
buf_shrink (Buf *buf)
{
  if (buf->alloc > KEEP_ALLOCATED && buf->len == 0)
    {
      g_free (buf->data);
      buf_init (buf, 256);
    }
}

struct _KagedSseParser
{
  KagedSseEventFunc  func;
  gpointer           user_data;
  gsize              max_size;
  Buf                line;
  Buf                data;
  Buf                type;
  Buf                id;
  gint64             retry;
  GError            *failure;
  guint              bom_matched;
  guint              bom_done : 1;
  guint              skip_lf : 1;
};

static gboolean
fail_too_large (KagedSseParser  *self,
                GError         **error)
{
  g_autofree char *size = g_format_size (self->max_size);

  self->failure = kaged_provider_error_new (KAGED_RETRY_CLASS_PROTOCOL_ERROR,
                                            _("The provider sent an event larger than %s"),
                                            size);
  g_propagate_error (error, g_error_copy (self->failure));
  return FALSE;
}

static gboolean
dispatch (KagedSseParser  *self,
          GError         **error)
{
  KagedSseEvent event;
  gboolean ret;

  if (self->data.len == 0)
    {
      buf_truncate (&self->type, 0);
      return TRUE;
    }

  /* Every data line appended a LF; the last one is not part of the data. */
  buf_truncate (&self->data, self->data.len - 1);

  event.type = self->type.len > 0 ? self->type.data : "message";
  event.data = self->data.data;
  event.data_len = self->data.len;
  event.id = self->id.data;

  ret = self->func (&event, self->user_data, error);

  buf_truncate (&self->data, 0);
  buf_truncate (&self->type, 0);
  buf_shrink (&self->data);

  if (!ret)
    {
      if (error != NULL && *error != NULL)
        self->failure = g_error_copy (*error);
      else
        self->failure = kaged_provider_error_new (KAGED_RETRY_CLASS_PROTOCOL_ERROR,
                                                  _("The provider’s stream was refused"));
    }

  return ret;
}

static inline gboolean
process_line (KagedSseParser  *self,
              const char      *line,
              gsize            len,
              GError         **error)
{
  const char *colon;
  const char *value;
  gsize field_len;
  gsize value_len;

  if (len == 0)
    return dispatch (self, error);

  if (line[0] == ':')
    return TRUE;

  colon = memchr (line, ':', len);
  if (colon != NULL)
    {
      field_len = colon - line;
      value = colon + 1;
      value_len = len - field_len - 1;
      if (value_len > 0 && value[0] == ' ')
        {
          value++;
          value_len--;
        }
    }
  else
    {
      field_len = len;
      value = line + len;
      value_len = 0;
    }

  switch (field_len)
    {
    case 4:
      if (memcmp (line, "data", 4) == 0)
        {
          if (self->data.len + value_len + 1 > self->max_size)
            return fail_too_large (self, error);
          buf_append (&self->data, value, value_len);
          buf_append (&self->data, "\n", 1);
        }
      break;

    case 5:
      if (memcmp (line, "event", 5) == 0)
        {
          buf_set (&self->type, value, value_len);
        }
      else if (memcmp (line, "retry", 5) == 0 && value_len > 0 && value_len < 19)
        {
          gint64 retry = 0;
          gsize i;

          for (i = 0; i < value_len && g_ascii_isdigit (value[i]); i++)
            retry = retry * 10 + (value[i] - '0');
          if (i == value_len)
            self->retry = retry;
        }
      break;

    case 2:
      if (memcmp (line, "id", 2) == 0 && memchr (value, '\0', value_len) == NULL)
        {
          buf_set (&self->id, value, value_len);
        }
      break;

    default:
      break;
    }

  return TRUE;
}

static gboolean
feed_lines (KagedSseParser  *self,
            const char      *p,
            const char      *end,
            GError         **error)
{
  gboolean has_cr;

  if (self->skip_lf && p < end)
    {
      if (*p == '\n')
        p++;
      self->skip_lf = FALSE;
    }

  /* Most servers never send a CR: then one scan per line is enough. */
  has_cr = memchr (p, '\r', end - p) != NULL;

  while (p < end)
    {
      const char *nl = memchr (p, '\n', end - p);
      const char *limit = nl != NULL ? nl : end;
      const char *cr = has_cr ? memchr (p, '\r', limit - p) : NULL;
      const char *eol;
      const char *next;

      if (cr != NULL)
        {
          eol = cr;
          next = cr + 1;
          if (next < end)
            {
              if (*next == '\n')
                next++;
            }
          else
            {
              self->skip_lf = TRUE;
            }
        }
      else if (nl != NULL)
        {
          eol = nl;
          next = nl + 1;
        }
      else
        {
          if (self->line.len + (end - p) > self->max_size)
            return fail_too_large (self, error);
          buf_append (&self->line, p, end - p);
          break;
        }

      if (self->line.len > 0)
        {
          gboolean ok;

          if (self->line.len + (eol - p) > self->max_size)
            return fail_too_large (self, error);
          buf_append (&self->line, p, eol - p);
          ok = process_line (self, self->line.data, self->line.len, error);
          buf_truncate (&self->line, 0);
          buf_shrink (&self->line);
          if (!ok)
            return FALSE;
        }
      else
        {
          /* The same cap as for a line split across chunks. */
          if ((gsize)(eol - p) > self->max_size)
            return fail_too_large (self, error);
          if (!process_line (self, p, eol - p, error))
            return FALSE;
        }

      p = next;
    }

  return TRUE;
}

/**
 * kaged_sse_parser_new:
 * @func: called for every dispatched event
 *
 * Returns: (transfer full): a parser with the default size cap
 */
KagedSseParser *
kaged_sse_parser_new (KagedSseEventFunc func,
                      gpointer          user_data)
{
  KagedSseParser *self;

  g_return_val_if_fail (func != NULL, NULL);

  self = g_new0 (KagedSseParser, 1);
  self->func = func;
  self->user_data = user_data;
  self->max_size = KAGED_STREAM_PARSER_DEFAULT_MAX_SIZE;
  buf_init (&self->line, 256);
  buf_init (&self->data, 256);
  buf_init (&self->type, 32);
  buf_init (&self->id, 32);
  self->retry = -1;

  return self;
}

void
kaged_sse_parser_free (KagedSseParser *self)
{
  if (self == NULL)
    return;

  g_free (self->line.data);
  g_free (self->data.data);
  g_free (self->type.data);
  g_free (self->id.data);
  g_clear_error (&self->failure);
  g_free (self);
}

/**
 * kaged_sse_parser_set_max_size:
 * @max_size: the most bytes one line or one event's data may hold
 */
void
kaged_sse_parser_set_max_size (KagedSseParser *self,
                               gsize           max_size)
{
  g_return_if_fail (self != NULL);
  g_return_if_fail (max_size > 0);

  self->max_size = max_size;
}

/**
 * kaged_sse_parser_feed:
 * @data: the next bytes of the stream, split anywhere
 *
 * Returns: %FALSE with @error set when a line or event went over the cap
 *   (a %KAGED_RETRY_CLASS_PROTOCOL_ERROR) or the callback refused an event
 */
gboolean
kaged_sse_parser_feed (KagedSseParser  *self,
                       const char      *data,
                       gsize            len,
                       GError         **error)
{
  const char *p;
  const char *end;

  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (data != NULL || len == 0, FALSE);

  if (self->failure != NULL)
    {
      g_propagate_error (error, g_error_copy (self->failure));
      return FALSE;
    }

  /* @data may be NULL then, where no arithmetic is defined. */
  if (len == 0)
    return TRUE;

  p = data;
  end = data + len;

  while (!self->bom_done && p < end)
    {
      if ((guint8)*p == bom[self->bom_matched])
        {
          p++;
          if (++self->bom_matched == sizeof bom)
            self->bom_done = TRUE;
        }
      else
        {
          guint matched = self->bom_matched;

          /* A partial match was the start of an ordinary line after all. */
          self->bom_done = TRUE;
          if (matched > 0 && !feed_lines (self, (const char *)bom, (const char *)bom + matched, error))
            return FALSE;
        }
    }

  return feed_lines (self, p, end, error);
}

/**
 * kaged_sse_parser_finish:
 *
 * Ends the stream: an event without its closing blank line is discarded.
 *
 * Returns: %FALSE if the parser had failed
 */
gboolean
kaged_sse_parser_finish (KagedSseParser  *self,
                         GError         **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  if (self->failure != NULL)
    {
      g_propagate_error (error, g_error_copy (self->failure));
      return FALSE;
    }

  buf_truncate (&self->line, 0);
  buf_truncate (&self->data, 0);
  buf_truncate (&self->type, 0);
  self->skip_lf = FALSE;

  return TRUE;
}

/**
 * kaged_sse_parser_get_retry:
 *
 * Returns: the last `retry` field in milliseconds, or -1
 */
gint64
kaged_sse_parser_get_retry (KagedSseParser *self)
{
  g_return_val_if_fail (self != NULL, -1);

  return self->retry;
}

/**
 * kaged_sse_parser_get_buffered:
 *
 * Returns: the bytes the parser holds allocated for its buffers
 */
gsize
kaged_sse_parser_get_buffered (KagedSseParser *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->line.alloc + self->data.alloc + self->type.alloc + self->id.alloc;
}
