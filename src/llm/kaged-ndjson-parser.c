/* kaged-ndjson-parser.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-ndjson-parser"

#include "config.h"

#include <glib/gi18n.h>
#include <string.h>

#include "kaged-ndjson-parser.h"
#include "kaged-provider.h"

/*
 * Newline-delimited JSON, incrementally: lines end with LF (a CR before it
 * is dropped), blank lines are skipped, a last line without its LF still
 * counts at the end of the stream. Complete lines are handed over where
 * they lie in the caller's buffer; only a line split across chunks is
 * copied, and no line may exceed max_size.
 */

#define KEEP_ALLOCATED (64 * 1024)

struct _KagedNdjsonParser
{
  KagedNdjsonLineFunc  func;
  gpointer             user_data;
  gsize                max_size;
  GString             *line;
  GError              *failure;
};

static gboolean
fail (KagedNdjsonParser  *self,
      GError            **error)
{
  g_autofree char *size = g_format_size (self->max_size);

  self->failure = kaged_provider_error_new (KAGED_RETRY_CLASS_PROTOCOL_ERROR,
                                            _("The provider sent a line longer than %s"),
                                            size);
  g_propagate_error (error, g_error_copy (self->failure));
  return FALSE;
}

static inline gboolean
is_blank (const char *line,
          gsize       len)
{
  for (gsize i = 0; i < len; i++)
    {
      if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
        return FALSE;
    }
  return TRUE;
}

static gboolean
process_line (KagedNdjsonParser  *self,
              const char         *line,
              gsize               len,
              GError            **error)
{
  if (len > 0 && line[len - 1] == '\r')
    len--;

  if (len > self->max_size)
    return fail (self, error);

  if (len == 0 || is_blank (line, len))
    return TRUE;

  if (!self->func (line, len, self->user_data, error))
    {
      if (error != NULL && *error != NULL)
        self->failure = g_error_copy (*error);
      else
        self->failure = kaged_provider_error_new (KAGED_RETRY_CLASS_PROTOCOL_ERROR,
                                                  _("The provider’s stream was refused"));
      return FALSE;
    }

  return TRUE;
}

KagedNdjsonParser *
kaged_ndjson_parser_new (KagedNdjsonLineFunc func,
                         gpointer            user_data)
{
  KagedNdjsonParser *self;

  g_return_val_if_fail (func != NULL, NULL);

  self = g_new0 (KagedNdjsonParser, 1);
  self->func = func;
  self->user_data = user_data;
  self->max_size = KAGED_STREAM_PARSER_DEFAULT_MAX_SIZE;
  self->line = g_string_sized_new (256);

  return self;
}

void
kaged_ndjson_parser_free (KagedNdjsonParser *self)
{
  if (self == NULL)
    return;

  g_string_free (self->line, TRUE);
  g_clear_error (&self->failure);
  g_free (self);
}

void
kaged_ndjson_parser_set_max_size (KagedNdjsonParser *self,
                                  gsize              max_size)
{
  g_return_if_fail (self != NULL);
  g_return_if_fail (max_size > 0);

  self->max_size = max_size;
}

/**
 * kaged_ndjson_parser_feed:
 * @data: the next bytes of the stream, split anywhere
 *
 * Returns: %FALSE with @error set when a line went over the cap (a
 *   %KAGED_RETRY_CLASS_PROTOCOL_ERROR) or the callback refused a line
 */
gboolean
kaged_ndjson_parser_feed (KagedNdjsonParser  *self,
                          const char         *data,
                          gsize               len,
                          GError            **error)
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

  while (p < end)
    {
      const char *nl = memchr (p, '\n', end - p);

      if (nl == NULL)
        {
          /* One byte of slack for a CR that the LF will drop. */
          if (self->line->len + (end - p) > self->max_size + 1)
            return fail (self, error);
          g_string_append_len (self->line, p, end - p);
          break;
        }

      if (self->line->len > 0)
        {
          gboolean ok;

          if (self->line->len + (nl - p) > self->max_size + 1)
            return fail (self, error);
          g_string_append_len (self->line, p, nl - p);
          ok = process_line (self, self->line->str, self->line->len, error);
          g_string_truncate (self->line, 0);
          if (self->line->allocated_len > KEEP_ALLOCATED)
            {
              g_string_free (self->line, TRUE);
              self->line = g_string_sized_new (256);
            }
          if (!ok)
            return FALSE;
        }
      else if (!process_line (self, p, nl - p, error))
        {
          return FALSE;
        }

      p = nl + 1;
    }

  return TRUE;
}

/**
 * kaged_ndjson_parser_finish:
 *
 * Ends the stream: a last line without its LF is processed now.
 */
gboolean
kaged_ndjson_parser_finish (KagedNdjsonParser  *self,
                            GError            **error)
{
  gboolean ok = TRUE;

  g_return_val_if_fail (self != NULL, FALSE);

  if (self->failure != NULL)
    {
      g_propagate_error (error, g_error_copy (self->failure));
      return FALSE;
    }

  if (self->line->len > 0)
    {
      /* All of it, a NUL inside included. */
      g_autoptr(GString) last = g_steal_pointer (&self->line);

      self->line = g_string_sized_new (256);
      ok = process_line (self, last->str, last->len, error);
    }

  return ok;
}

gsize
kaged_ndjson_parser_get_buffered (KagedNdjsonParser *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->line->allocated_len;
}
