/* kaged-ndjson-parser.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include "kaged-sse-parser.h"

G_BEGIN_DECLS

/*
 * Called for every non-blank line, without its line ending. @line is not
 * nul-terminated. Returns FALSE (with @error set) to stop the stream.
 */
typedef gboolean (*KagedNdjsonLineFunc) (const char  *line,
                                         gsize        len,
                                         gpointer     user_data,
                                         GError     **error);

typedef struct _KagedNdjsonParser KagedNdjsonParser;

KagedNdjsonParser *kaged_ndjson_parser_new          (KagedNdjsonLineFunc   func,
                                                     gpointer              user_data);
void               kaged_ndjson_parser_free         (KagedNdjsonParser    *self);
void               kaged_ndjson_parser_set_max_size (KagedNdjsonParser    *self,
                                                     gsize                 max_size);
gboolean           kaged_ndjson_parser_feed         (KagedNdjsonParser    *self,
                                                     const char           *data,
                                                     gsize                 len,
                                                     GError              **error);
gboolean           kaged_ndjson_parser_finish       (KagedNdjsonParser    *self,
                                                     GError              **error);
gsize              kaged_ndjson_parser_get_buffered (KagedNdjsonParser    *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (KagedNdjsonParser, kaged_ndjson_parser_free)

G_END_DECLS
