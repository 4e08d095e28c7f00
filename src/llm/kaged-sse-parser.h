/* kaged-sse-parser.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The default cap on one line or one event, in bytes. */
#define KAGED_STREAM_PARSER_DEFAULT_MAX_SIZE (8 * 1024 * 1024)

/**
 * KagedSseEvent:
 * @type: the `event` field, or `message` when there was none
 * @data: the `data` lines joined with `\n`, nul-terminated
 * @data_len: length of @data
 * @id: the last event id seen on the stream, or ""
 *
 * One dispatched server-sent event. Everything is owned by the parser and
 * valid only during the callback.
 */
typedef struct
{
  const char *type;
  const char *data;
  gsize       data_len;
  const char *id;
} KagedSseEvent;

/*
 * Returns FALSE (with @error set) to stop the stream: the parser then
 * refuses further input and kaged_sse_parser_feed() returns that error.
 */
typedef gboolean (*KagedSseEventFunc) (const KagedSseEvent  *event,
                                       gpointer              user_data,
                                       GError              **error);

typedef struct _KagedSseParser KagedSseParser;

KagedSseParser *kaged_sse_parser_new          (KagedSseEventFunc   func,
                                               gpointer            user_data);
void            kaged_sse_parser_free         (KagedSseParser     *self);
void            kaged_sse_parser_set_max_size (KagedSseParser     *self,
                                               gsize               max_size);
gboolean        kaged_sse_parser_feed         (KagedSseParser     *self,
                                               const char         *data,
                                               gsize               len,
                                               GError            **error);
gboolean        kaged_sse_parser_finish       (KagedSseParser     *self,
                                               GError            **error);
gint64          kaged_sse_parser_get_retry    (KagedSseParser     *self);
gsize           kaged_sse_parser_get_buffered (KagedSseParser     *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (KagedSseParser, kaged_sse_parser_free)

G_END_DECLS
