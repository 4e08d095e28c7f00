/* kaged-classify.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <libsoup/soup.h>

#include "kaged-provider.h"

G_BEGIN_DECLS

/* The shortest reset that makes a quota failure quota_scheduled. */
#define KAGED_CLASSIFY_QUOTA_MIN_RESET_MS (60 * 1000)

GError   *kaged_classify_http_error        (guint                status,
                                            SoupMessageHeaders  *headers,
                                            const char          *body,
                                            gsize                len,
                                            gint64               now_ms);
GError   *kaged_classify_stream_error      (const char          *type,
                                            const char          *code,
                                            const char          *message,
                                            SoupMessageHeaders  *headers,
                                            gint64               now_ms);
GError   *kaged_classify_transport_error   (const GError        *error);
void      kaged_classify_apply_headers     (GError              *error,
                                            SoupMessageHeaders  *headers,
                                            guint                status,
                                            gint64               now_ms);
gboolean  kaged_classify_server_wait       (SoupMessageHeaders  *headers,
                                            guint                status,
                                            gint64               now_ms,
                                            gint64              *wait_ms,
                                            const char         **source);
gboolean  kaged_classify_parse_go_duration (const char          *text,
                                            gint64              *ms);
gboolean  kaged_classify_message_reset     (const char          *message,
                                            gint64               now_ms,
                                            gint64              *wait_ms);
void      kaged_classify_redact            (GError              *error,
                                            const char          *secret);

G_END_DECLS
