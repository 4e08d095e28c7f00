/* kaged-json.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* The deepest nesting of arrays and objects Kaged hands to json-glib,
 * whose parser recurses once per level and would run out of stack on a
 * document nested tens of thousands of levels deep. */
#define KAGED_JSON_MAX_DEPTH 512

gboolean    kaged_json_nested_deeper    (const char  *data,
                                         gssize       length,
                                         guint        max_depth);
gboolean    kaged_json_escapes_valid    (const char  *data,
                                         gssize       length,
                                         GError     **error);
char       *kaged_json_repair           (const char  *data,
                                         gsize        length,
                                         gsize       *repaired_length);
gboolean    kaged_json_parse_bounded    (JsonParser  *parser,
                                         const char  *data,
                                         gssize       length,
                                         GError     **error);

/* Lenient JSON access: the wrong type reads as absent. */
JsonObject *kaged_json_get_object       (JsonObject  *object,
                                         const char  *name);
JsonArray  *kaged_json_get_array        (JsonObject  *object,
                                         const char  *name);
const char *kaged_json_get_string       (JsonObject  *object,
                                         const char  *name);
gboolean    kaged_json_get_int          (JsonObject  *object,
                                         const char  *name,
                                         gint64      *value);
gboolean    kaged_json_get_bool         (JsonObject  *object,
                                         const char  *name);
JsonObject *kaged_json_parse_object     (JsonParser  *parser,
                                         const char  *data,
                                         gsize        len,
                                         GError     **error);

G_END_DECLS
