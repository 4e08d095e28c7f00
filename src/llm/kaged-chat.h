/* kaged-chat.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-attempt.h"
#include "kaged-message.h"

G_BEGIN_DECLS

typedef enum
{
  KAGED_DELTA_TEXT,     /*< nick=text >*/
  KAGED_DELTA_THINKING, /*< nick=thinking >*/
} KagedDeltaKind;

#define KAGED_TYPE_CHAT (kaged_chat_get_type ())

G_DECLARE_FINAL_TYPE (KagedChat, kaged_chat, KAGED, CHAT, GObject)

/*
 * KagedChat is one call to a model: what is sent (the messages, in order,
 * operator → "user", agent → "assistant", summary → system context) and
 * what comes back. Providers push into it; the Tier 1 retry reads
 * kaged_chat_has_delta() for the first-delta invariant and logs every
 * attempt with kaged_chat_add_attempt(); the engine listens to
 * ::delta and ::attempt.
 *
 * Signals:
 *   ::delta   (KagedDeltaKind kind, const char *text) — valid UTF-8 always
 *   ::attempt (KagedAttempt *attempt) — one tier-1 attempt ended
 */
KagedChat      *kaged_chat_new                (GPtrArray          *messages,
                                               const char         *system_prompt);
GPtrArray      *kaged_chat_get_messages       (KagedChat          *self);
const char     *kaged_chat_get_system_prompt  (KagedChat          *self);
void            kaged_chat_push_delta         (KagedChat          *self,
                                               KagedDeltaKind      kind,
                                               const char         *text,
                                               gssize              len);
void            kaged_chat_flush              (KagedChat          *self);
gboolean        kaged_chat_has_delta          (KagedChat          *self);
void            kaged_chat_set_usage          (KagedChat          *self,
                                               gint64              input_tokens,
                                               gint64              output_tokens);
gint64          kaged_chat_get_input_tokens   (KagedChat          *self);
gint64          kaged_chat_get_output_tokens  (KagedChat          *self);
void            kaged_chat_set_finish_reason  (KagedChat          *self,
                                               const char         *finish_reason);
const char     *kaged_chat_get_finish_reason  (KagedChat          *self);
void            kaged_chat_add_attempt        (KagedChat          *self,
                                               const KagedAttempt *attempt);
GPtrArray      *kaged_chat_get_attempts       (KagedChat          *self);

G_END_DECLS
