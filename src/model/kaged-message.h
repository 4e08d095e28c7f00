/* kaged-message.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib-object.h>

#include "kaged-enums.h"

G_BEGIN_DECLS

#define KAGED_TYPE_MESSAGE (kaged_message_get_type ())

G_DECLARE_FINAL_TYPE (KagedMessage, kaged_message, KAGED, MESSAGE, GObject)

KagedMessage *kaged_message_new (void);

gint64             kaged_message_get_id                (KagedMessage *self);
void               kaged_message_set_id                (KagedMessage *self,
                                                        gint64 id);
gint64             kaged_message_get_session_id        (KagedMessage *self);
void               kaged_message_set_session_id        (KagedMessage *self,
                                                        gint64 session_id);
KagedMessageRole   kaged_message_get_role              (KagedMessage *self);
void               kaged_message_set_role              (KagedMessage *self,
                                                        KagedMessageRole role);
const char *       kaged_message_get_content           (KagedMessage *self);
void               kaged_message_set_content           (KagedMessage *self,
                                                        const char *content);
gint64             kaged_message_get_created_at        (KagedMessage *self);
void               kaged_message_set_created_at        (KagedMessage *self,
                                                        gint64 created_at);
gint64             kaged_message_get_run_id            (KagedMessage *self);
void               kaged_message_set_run_id            (KagedMessage *self,
                                                        gint64 run_id);
KagedMessageStatus kaged_message_get_status            (KagedMessage *self);
void               kaged_message_set_status            (KagedMessage *self,
                                                        KagedMessageStatus status);
const char *       kaged_message_get_error_message     (KagedMessage *self);
void               kaged_message_set_error_message     (KagedMessage *self,
                                                        const char *error_message);
gboolean           kaged_message_get_retryable         (KagedMessage *self);
void               kaged_message_set_retryable         (KagedMessage *self,
                                                        gboolean retryable);
KagedRetryClass    kaged_message_get_retry_class       (KagedMessage *self);
void               kaged_message_set_retry_class       (KagedMessage *self,
                                                        KagedRetryClass retry_class);
gint64             kaged_message_get_retry_after_until (KagedMessage *self);
void               kaged_message_set_retry_after_until (KagedMessage *self,
                                                        gint64 retry_after_until);
gint64             kaged_message_get_superseded_by_run (KagedMessage *self);
void               kaged_message_set_superseded_by_run (KagedMessage *self,
                                                        gint64 superseded_by_run);
gboolean           kaged_message_get_compacted         (KagedMessage *self);
void               kaged_message_set_compacted         (KagedMessage *self,
                                                        gboolean compacted);
gboolean           kaged_message_get_queued            (KagedMessage *self);
void               kaged_message_set_queued            (KagedMessage *self,
                                                        gboolean queued);
gboolean           kaged_message_is_superseded         (KagedMessage *self);

G_END_DECLS
