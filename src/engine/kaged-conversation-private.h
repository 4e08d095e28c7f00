/* kaged-conversation-private.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include "kaged-conversation.h"

G_BEGIN_DECLS

/* For tests: how many messages were read from the store or announced. */
guint _kaged_conversation_get_n_loaded (KagedConversation *self);

G_END_DECLS
