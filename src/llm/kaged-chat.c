/* kaged-chat.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-chat"

#include "config.h"

#include <string.h>

#include "kaged-chat.h"
#include "kaged-llm-enum-types.h"

#define N_KINDS (KAGED_DELTA_THINKING + 1)

/*
 * A UTF-8 sequence is at most four bytes, so at most three can be left
 * waiting for the rest of their character.
 */
typedef struct
{
  guint8 bytes[4];
  guint8 len;
} Pending;

struct _KagedChat
{
  GObject    parent_instance;

  GPtrArray *messages;
  char      *system_prompt;
  char      *finish_reason;
  GPtrArray *attempts;
  gint64     input_tokens;
  gint64     output_tokens;
  Pending    pending[N_KINDS];

  guint      has_delta : 1;
};

G_DEFINE_FINAL_TYPE (KagedChat, kaged_chat, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_SYSTEM_PROMPT,
  PROP_HAS_DELTA,
  PROP_INPUT_TOKENS,
  PROP_OUTPUT_TOKENS,
  PROP_FINISH_REASON,
  N_PROPS
};

enum {
  DELTA,
  ATTEMPT,
  N_SIGNALS
};

static GParamSpec *properties [N_PROPS];
static guint signals [N_SIGNALS];

/*
 * How many bytes at the end of @text are the start of a character whose
 * remaining bytes have not arrived yet. Anything that cannot become valid
 * UTF-8 answers 0, and is repaired right away.
 */
static gsize
incomplete_tail (const guint8 *text,
                 gsize         len)
{
  gsize stop = len > 3 ? len - 3 : 0;

  for (gsize i = len; i > stop; i--)
    {
      guint8 c = text[i - 1];
      gsize have = len - (i - 1);
      gsize need;

      if ((c & 0xC0) == 0x80)
        continue;

      if (c >= 0xC2 && c <= 0xDF)
        need = 2;
      else if (c >= 0xE0 && c <= 0xEF)
        need = 3;
      else if (c >= 0xF0 && c <= 0xF4)
        need = 4;
      else
        return 0;

      if (have >= need)
        return 0;

      /* The second byte narrows the range for a few lead bytes. */
      if (have >= 2)
        {
          guint8 c2 = text[i];

          if ((c == 0xE0 && c2 < 0xA0) ||
              (c == 0xED && c2 > 0x9F) ||
              (c == 0xF0 && c2 < 0x90) ||
              (c == 0xF4 && c2 > 0x8F))
            return 0;
        }

      return have;
    }

  return 0;
}

static void
emit_valid (KagedChat      *self,
            KagedDeltaKind  kind,
            const char     *text,
            gsize           len,
            gboolean        terminated)
{
  g_autofree char *owned = NULL;
  g_autofree char *repaired = NULL;
  const char *end = NULL;

  if (len == 0)
    return;

  if (!g_utf8_validate_len (text, len, &end))
    {
      repaired = g_utf8_make_valid (text, len);
      text = repaired;
      len = strlen (repaired);
    }
  else if (!terminated)
    {
      owned = g_strndup (text, len);
      text = owned;
    }

  if (!self->has_delta)
    {
      self->has_delta = TRUE;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_HAS_DELTA]);
    }

  g_signal_emit (self, signals [DELTA], 0, kind, text);
}

static void
kaged_chat_finalize (GObject *object)
{
  KagedChat *self = (KagedChat *)object;

  g_clear_pointer (&self->messages, g_ptr_array_unref);
  g_clear_pointer (&self->attempts, g_ptr_array_unref);
  g_clear_pointer (&self->system_prompt, g_free);
  g_clear_pointer (&self->finish_reason, g_free);

  G_OBJECT_CLASS (kaged_chat_parent_class)->finalize (object);
}

static void
kaged_chat_get_property (GObject    *object,
                         guint       prop_id,
                         GValue     *value,
                         GParamSpec *pspec)
{
  KagedChat *self = KAGED_CHAT (object);

  switch (prop_id)
    {
    case PROP_SYSTEM_PROMPT:
      g_value_set_string (value, self->system_prompt);
      break;

    case PROP_HAS_DELTA:
      g_value_set_boolean (value, self->has_delta);
      break;

    case PROP_INPUT_TOKENS:
      g_value_set_int64 (value, self->input_tokens);
      break;

    case PROP_OUTPUT_TOKENS:
      g_value_set_int64 (value, self->output_tokens);
      break;

    case PROP_FINISH_REASON:
      g_value_set_string (value, self->finish_reason);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_chat_set_property (GObject      *object,
                         guint         prop_id,
                         const GValue *value,
                         GParamSpec   *pspec)
{
  KagedChat *self = KAGED_CHAT (object);

  switch (prop_id)
    {
    case PROP_SYSTEM_PROMPT:
      g_free (self->system_prompt);
      self->system_prompt = g_value_dup_string (value);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_chat_class_init (KagedChatClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = kaged_chat_finalize;
  object_class->get_property = kaged_chat_get_property;
  object_class->set_property = kaged_chat_set_property;

  properties [PROP_SYSTEM_PROMPT] =
    g_param_spec_string ("system-prompt", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedChat:has-delta:
   *
   * Whether a non-empty delta reached ::delta; from then on nothing
   * may be retried inside the run.
   */
  properties [PROP_HAS_DELTA] =
    g_param_spec_boolean ("has-delta", NULL, NULL,
                          FALSE,
                          (G_PARAM_READABLE |
                           G_PARAM_EXPLICIT_NOTIFY |
                           G_PARAM_STATIC_STRINGS));

  properties [PROP_INPUT_TOKENS] =
    g_param_spec_int64 ("input-tokens", NULL, NULL,
                        0, G_MAXINT64, 0,
                        (G_PARAM_READABLE |
                         G_PARAM_EXPLICIT_NOTIFY |
                         G_PARAM_STATIC_STRINGS));

  properties [PROP_OUTPUT_TOKENS] =
    g_param_spec_int64 ("output-tokens", NULL, NULL,
                        0, G_MAXINT64, 0,
                        (G_PARAM_READABLE |
                         G_PARAM_EXPLICIT_NOTIFY |
                         G_PARAM_STATIC_STRINGS));

  properties [PROP_FINISH_REASON] =
    g_param_spec_string ("finish-reason", NULL, NULL,
                         NULL,
                         (G_PARAM_READABLE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);

  /**
   * KagedChat::delta:
   * @kind: text or thinking
   * @text: the new piece, valid UTF-8, never empty
   */
  signals [DELTA] =
    g_signal_new ("delta",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 2,
                  KAGED_TYPE_DELTA_KIND,
                  G_TYPE_STRING | G_SIGNAL_TYPE_STATIC_SCOPE);

  /**
   * KagedChat::attempt:
   * @attempt: the tier-1 attempt that just ended
   */
  signals [ATTEMPT] =
    g_signal_new ("attempt",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1,
                  KAGED_TYPE_ATTEMPT | G_SIGNAL_TYPE_STATIC_SCOPE);
}

static void
kaged_chat_init (KagedChat *self)
{
  self->messages = g_ptr_array_new_with_free_func (g_object_unref);
  self->attempts = g_ptr_array_new_with_free_func ((GDestroyNotify)kaged_attempt_free);
}

/**
 * kaged_chat_new:
 * @messages: (element-type KagedMessage) (nullable): the conversation to
 *   send, oldest first; the chat keeps its own references
 * @system_prompt: (nullable): instructions sent ahead of the messages
 *
 * Returns: (transfer full): a new #KagedChat
 */
KagedChat *
kaged_chat_new (GPtrArray  *messages,
                const char *system_prompt)
{
  KagedChat *self;

  self = g_object_new (KAGED_TYPE_CHAT,
                       "system-prompt", system_prompt,
                       NULL);

  if (messages != NULL)
    {
      for (guint i = 0; i < messages->len; i++)
        {
          KagedMessage *message = g_ptr_array_index (messages, i);

          g_return_val_if_fail (KAGED_IS_MESSAGE (message), self);
          g_ptr_array_add (self->messages, g_object_ref (message));
        }
    }

  return self;
}

/**
 * kaged_chat_get_messages:
 *
 * Returns: (transfer none) (element-type KagedMessage): the messages sent
 */
GPtrArray *
kaged_chat_get_messages (KagedChat *self)
{
  g_return_val_if_fail (KAGED_IS_CHAT (self), NULL);

  return self->messages;
}

const char *
kaged_chat_get_system_prompt (KagedChat *self)
{
  g_return_val_if_fail (KAGED_IS_CHAT (self), NULL);

  return self->system_prompt;
}

/**
 * kaged_chat_push_delta:
 * @kind: text or thinking
 * @text: bytes of the reply as the provider sent them
 * @len: length of @text, or -1 when nul-terminated
 *
 * Publishes a piece of the reply on ::delta. Invalid UTF-8 is repaired;
 * a character split across two pushes of the same kind is held back
 * until its last byte arrives (or kaged_chat_flush() gives up on it).
 */
void
kaged_chat_push_delta (KagedChat      *self,
                       KagedDeltaKind  kind,
                       const char     *text,
                       gssize          len)
{
  Pending *pending;
  gsize ulen;
  gsize tail;

  g_return_if_fail (KAGED_IS_CHAT (self));
  g_return_if_fail (kind == KAGED_DELTA_TEXT || kind == KAGED_DELTA_THINKING);
  g_return_if_fail (text != NULL || len == 0);

  if (text == NULL)
    return;

  ulen = len < 0 ? strlen (text) : (gsize)len;
  if (ulen == 0)
    return;

  pending = &self->pending[kind];

  if (pending->len == 0)
    {
      tail = incomplete_tail ((const guint8 *)text, ulen);
      memcpy (pending->bytes, text + ulen - tail, tail);
      pending->len = tail;
      emit_valid (self, kind, text, ulen - tail, len < 0 && tail == 0);
    }
  else
    {
      g_autofree char *joined = g_malloc (pending->len + ulen + 1);
      gsize joined_len = pending->len + ulen;

      memcpy (joined, pending->bytes, pending->len);
      memcpy (joined + pending->len, text, ulen);
      joined[joined_len] = '\0';

      tail = incomplete_tail ((const guint8 *)joined, joined_len);
      memcpy (pending->bytes, joined + joined_len - tail, tail);
      pending->len = tail;
      joined[joined_len - tail] = '\0';
      emit_valid (self, kind, joined, joined_len - tail, TRUE);
    }
}

/**
 * kaged_chat_flush:
 *
 * Publishes what kaged_chat_push_delta() held back of an unfinished
 * character, repaired; providers call it when the reply ends, however it
 * ends.
 */
void
kaged_chat_flush (KagedChat *self)
{
  g_return_if_fail (KAGED_IS_CHAT (self));

  for (guint kind = 0; kind < N_KINDS; kind++)
    {
      Pending *pending = &self->pending[kind];
      char bytes[5] = { 0 };
      gsize len = pending->len;

      if (len == 0)
        continue;

      memcpy (bytes, pending->bytes, len);
      pending->len = 0;
      emit_valid (self, kind, bytes, len, TRUE);
    }
}

gboolean
kaged_chat_has_delta (KagedChat *self)
{
  g_return_val_if_fail (KAGED_IS_CHAT (self), FALSE);

  return self->has_delta;
}

void
kaged_chat_set_usage (KagedChat *self,
                      gint64     input_tokens,
                      gint64     output_tokens)
{
  g_return_if_fail (KAGED_IS_CHAT (self));

  input_tokens = MAX (input_tokens, 0);
  output_tokens = MAX (output_tokens, 0);

  if (self->input_tokens != input_tokens)
    {
      self->input_tokens = input_tokens;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_INPUT_TOKENS]);
    }

  if (self->output_tokens != output_tokens)
    {
      self->output_tokens = output_tokens;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_OUTPUT_TOKENS]);
    }
}

gint64
kaged_chat_get_input_tokens (KagedChat *self)
{
  g_return_val_if_fail (KAGED_IS_CHAT (self), 0);

  return self->input_tokens;
}

gint64
kaged_chat_get_output_tokens (KagedChat *self)
{
  g_return_val_if_fail (KAGED_IS_CHAT (self), 0);

  return self->output_tokens;
}

void
kaged_chat_set_finish_reason (KagedChat  *self,
                              const char *finish_reason)
{
  g_return_if_fail (KAGED_IS_CHAT (self));

  if (g_strcmp0 (self->finish_reason, finish_reason) != 0)
    {
      g_free (self->finish_reason);
      self->finish_reason = g_strdup (finish_reason);
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_FINISH_REASON]);
    }
}

const char *
kaged_chat_get_finish_reason (KagedChat *self)
{
  g_return_val_if_fail (KAGED_IS_CHAT (self), NULL);

  return self->finish_reason;
}

/**
 * kaged_chat_add_attempt:
 * @attempt: one tier-1 attempt that ended; copied
 *
 * Appends @attempt to the log and announces it on ::attempt.
 */
void
kaged_chat_add_attempt (KagedChat          *self,
                        const KagedAttempt *attempt)
{
  KagedAttempt *copy;

  g_return_if_fail (KAGED_IS_CHAT (self));
  g_return_if_fail (attempt != NULL);

  copy = kaged_attempt_copy (attempt);
  g_ptr_array_add (self->attempts, copy);
  g_signal_emit (self, signals [ATTEMPT], 0, copy);
}

/**
 * kaged_chat_get_attempts:
 *
 * Returns: (transfer none) (element-type KagedAttempt): the attempt log,
 *   oldest first
 */
GPtrArray *
kaged_chat_get_attempts (KagedChat *self)
{
  g_return_val_if_fail (KAGED_IS_CHAT (self), NULL);

  return self->attempts;
}
