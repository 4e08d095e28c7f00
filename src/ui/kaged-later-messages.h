/* kaged-later-messages.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define KAGED_TYPE_LATER_MESSAGES (kaged_later_messages_get_type ())

/**
 * KAGED_LATER_MESSAGES_MAX_SHOWN:
 *
 * How many of the messages that followed it an earlier version shows; an
 * old branch can be as long as a conversation.
 */
#define KAGED_LATER_MESSAGES_MAX_SHOWN 100

G_DECLARE_FINAL_TYPE (KagedLaterMessages, kaged_later_messages, KAGED, LATER_MESSAGES, GtkWidget)

GtkWidget *kaged_later_messages_new          (void);
void       kaged_later_messages_set_messages (KagedLaterMessages *self,
                                              GPtrArray          *messages,
                                              guint               n_messages);
guint      kaged_later_messages_get_n_messages (KagedLaterMessages *self);
gboolean   kaged_later_messages_get_expanded (KagedLaterMessages *self);
void       kaged_later_messages_set_expanded (KagedLaterMessages *self,
                                              gboolean            expanded);

G_END_DECLS
