/* kaged-message-row.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtk/gtk.h>

#include "kaged-message.h"
#include "kaged-profile.h"
#include "kaged-run.h"

G_BEGIN_DECLS

#define KAGED_TYPE_MESSAGE_ROW (kaged_message_row_get_type ())

G_DECLARE_FINAL_TYPE (KagedMessageRow, kaged_message_row, KAGED, MESSAGE_ROW, GtkWidget)

GtkWidget    *kaged_message_row_new               (void);
KagedMessage *kaged_message_row_get_message       (KagedMessageRow *self);
void          kaged_message_row_set_message       (KagedMessageRow *self,
                                                   KagedMessage    *message);
GListModel   *kaged_message_row_get_versions      (KagedMessageRow *self);
void          kaged_message_row_show_latest_version (KagedMessageRow *self);
void          kaged_message_row_set_versions      (KagedMessageRow *self,
                                                   GListModel      *versions);
void          kaged_message_row_set_later_messages (KagedMessageRow *self,
                                                   GPtrArray       *messages,
                                                   guint            n_messages);
KagedRun     *kaged_message_row_get_run           (KagedMessageRow *self);
void          kaged_message_row_set_run           (KagedMessageRow *self,
                                                   KagedRun        *run);
const char   *kaged_message_row_get_provider_name (KagedMessageRow *self);
void          kaged_message_row_set_provider_name (KagedMessageRow *self,
                                                   const char      *provider_name);
void          kaged_message_row_set_server_profile (KagedMessageRow *self,
                                                   KagedProfile    *profile);
const char   *kaged_message_row_get_profile_id    (KagedMessageRow *self);
void          kaged_message_row_set_profile_id    (KagedMessageRow *self,
                                                   const char      *profile_id);
const char   *kaged_message_row_get_model_name    (KagedMessageRow *self);
void          kaged_message_row_set_model_name    (KagedMessageRow *self,
                                                   const char      *model_name);
gboolean      kaged_message_row_get_retry_pending (KagedMessageRow *self);
void          kaged_message_row_set_retry_pending (KagedMessageRow *self,
                                                   gboolean         retry_pending);
gboolean      kaged_message_row_get_queued        (KagedMessageRow *self);
void          kaged_message_row_set_queued        (KagedMessageRow *self,
                                                   gboolean         queued);
char         *kaged_message_row_describe_status   (KagedMessageRow *self);
gint64        kaged_message_row_get_streaming_interval (KagedMessageRow *self);

gint64        kaged_message_row_streaming_interval (gint64 update_cost);

char         *kaged_message_row_describe_failure  (KagedMessage    *message,
                                                   gboolean         dated);

G_END_DECLS
