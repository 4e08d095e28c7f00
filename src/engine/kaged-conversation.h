/* kaged-conversation.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-session-manager.h"

G_BEGIN_DECLS

#define KAGED_TYPE_CONVERSATION (kaged_conversation_get_type ())

G_DECLARE_FINAL_TYPE (KagedConversation, kaged_conversation, KAGED, CONVERSATION, GObject)

KagedConversation *kaged_conversation_new            (KagedSessionManager  *manager,
                                                      gint64                session_id,
                                                      GError              **error);
gint64             kaged_conversation_get_session_id (KagedConversation    *self);
GPtrArray         *kaged_conversation_list_versions  (KagedConversation    *self,
                                                      gint64                anchor_id,
                                                      GError              **error);
GPtrArray         *kaged_conversation_list_edits     (KagedConversation    *self,
                                                      gint64                message_id,
                                                      GError              **error);
GPtrArray         *kaged_conversation_list_superseded_with (KagedConversation *self,
                                                           gint64             message_id,
                                                           guint              limit,
                                                           guint             *n_messages,
                                                           GError           **error);
gint64             kaged_conversation_get_anchor_id  (KagedConversation    *self,
                                                      KagedMessage         *message);
gboolean           kaged_conversation_find_position  (KagedConversation    *self,
                                                      gint64                message_id,
                                                      guint                *position,
                                                      GError              **error);
GPtrArray         *kaged_conversation_list_all       (KagedConversation    *self,
                                                      gint64                after_id,
                                                      guint                 limit,
                                                      GError              **error);

G_END_DECLS
