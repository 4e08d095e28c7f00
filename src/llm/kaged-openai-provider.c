/* kaged-openai-provider.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-openai-provider"

#include "config.h"

#include <string.h>

#include "kaged-openai-provider.h"

/**
 * KagedOpenaiProvider:
 *
 * OpenAI-compatible chat completions (OpenAI, OpenRouter, llama.cpp
 * server, vLLM, LM Studio): `POST {base}/chat/completions`, streamed as
 * server-sent events of `chat.completion.chunk` objects ending with
 * `data: [DONE]`.
 */
struct _KagedOpenaiProvider
{
  KagedHttpProvider parent_instance;
};

G_DEFINE_FINAL_TYPE (KagedOpenaiProvider, kaged_openai_provider, KAGED_TYPE_HTTP_PROVIDER)

static gboolean
on_event (const KagedSseEvent  *event,
          gpointer              user_data,
          GError              **error)
{
  KagedStreamDecoder *self = user_data;
  KagedChat *chat = self->chat;
  JsonObject *root;
  JsonObject *usage;
  JsonNode *error_node;
  JsonArray *choices;

  if (self->done)
    return TRUE;

  if (event->data_len == 6 && memcmp (event->data, "[DONE]", 6) == 0)
    {
      self->done = TRUE;
      self->recognized = TRUE;
      return TRUE;
    }

  /* Some servers name their events; only the default kind carries chunks. */
  if (strcmp (event->type, "message") != 0 && strcmp (event->type, "error") != 0)
    return TRUE;

  root = kaged_stream_decoder_parse (self, event->data, event->data_len, error);
  if (root == NULL)
    return FALSE;

  self->recognized = TRUE;

  error_node = json_object_get_member (root, "error");
  if (error_node != NULL && !JSON_NODE_HOLDS_NULL (error_node))
    {
      JsonObject *details = kaged_json_get_object (root, "error");
      const char *message = details != NULL ? kaged_json_get_string (details, "message")
                                            : kaged_json_get_string (root, "error");
      g_autofree char *code = NULL;
      gint64 number;

      if (details != NULL && !(code = g_strdup (kaged_json_get_string (details, "code"))) &&
          kaged_json_get_int (details, "code", &number))
        code = g_strdup_printf ("%" G_GINT64_FORMAT, number);

      g_propagate_error (error,
                         kaged_stream_decoder_error (self,
                                                     kaged_json_get_string (details, "type"),
                                                     code, message));
      return FALSE;
    }

  choices = kaged_json_get_array (root, "choices");
  if (choices != NULL)
    {
      guint n = json_array_get_length (choices);

      for (guint i = 0; i < n; i++)
        {
          JsonNode *node = json_array_get_element (choices, i);
          JsonObject *choice;
          JsonObject *delta;
          const char *text;
          gint64 index = 0;

          if (!JSON_NODE_HOLDS_OBJECT (node))
            continue;
          choice = json_node_get_object (node);

          /* One reply is asked for; other choices are not ours. */
          if (kaged_json_get_int (choice, "index", &index) && index != 0)
            continue;

          delta = kaged_json_get_object (choice, "delta");
          if ((text = kaged_json_get_string (delta, "reasoning_content")) != NULL ||
              (text = kaged_json_get_string (delta, "reasoning")) != NULL)
            kaged_chat_push_delta (chat, KAGED_DELTA_THINKING, text, -1);
          if ((text = kaged_json_get_string (delta, "content")) != NULL)
            kaged_chat_push_delta (chat, KAGED_DELTA_TEXT, text, -1);

          if ((text = kaged_json_get_string (choice, "finish_reason")) != NULL)
            {
              kaged_chat_set_finish_reason (chat, text);
              self->stopped = TRUE;
            }
        }
    }

  usage = kaged_json_get_object (root, "usage");
  if (usage != NULL)
    {
      gint64 input = kaged_chat_get_input_tokens (chat);
      gint64 output = kaged_chat_get_output_tokens (chat);

      kaged_json_get_int (usage, "prompt_tokens", &input);
      kaged_json_get_int (usage, "completion_tokens", &output);
      kaged_chat_set_usage (chat, input, output);
    }

  return TRUE;
}

/**
 * kaged_openai_decoder_new:
 * @chat: where the reply goes
 * @clock: (nullable): dates waits in stream errors
 * @max_event_size: cap on one event
 *
 * Returns: (transfer full): a reader of chat-completion event streams
 */
KagedStreamDecoder *
kaged_openai_decoder_new (KagedChat  *chat,
                          KagedClock *clock,
                          gsize       max_event_size)
{
  return kaged_stream_decoder_new_sse (sizeof (KagedStreamDecoder), on_event,
                                       chat, clock, max_event_size);
}

static void
kaged_openai_provider_add_body (KagedHttpProvider *provider,
                                KagedChat         *chat,
                                JsonBuilder       *builder)
{
  kaged_http_add_messages (builder, chat);

  json_builder_set_member_name (builder, "stream");
  json_builder_add_boolean_value (builder, TRUE);
  json_builder_set_member_name (builder, "stream_options");
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "include_usage");
  json_builder_add_boolean_value (builder, TRUE);
  json_builder_end_object (builder);
}

static void
kaged_openai_provider_class_init (KagedOpenaiProviderClass *klass)
{
  KagedHttpProviderClass *http_class = KAGED_HTTP_PROVIDER_CLASS (klass);

  http_class->path = "/chat/completions";
  http_class->accept = "text/event-stream";
  http_class->add_body = kaged_openai_provider_add_body;
  http_class->new_decoder = kaged_openai_decoder_new;
}

static void
kaged_openai_provider_init (KagedOpenaiProvider *self)
{
}

/**
 * kaged_openai_provider_new:
 * @session: (nullable): the shared session, or %NULL for the default one
 * @base_url: such as `https://api.openai.com/v1`
 * @model: the model name
 * @api_key: (nullable): sent as a bearer token when given
 *
 * Returns: (transfer full): a new provider
 */
KagedProvider *
kaged_openai_provider_new (SoupSession *session,
                           const char  *base_url,
                           const char  *model,
                           const char  *api_key)
{
  return kaged_http_provider_new (KAGED_TYPE_OPENAI_PROVIDER, session, base_url, model, api_key);
}
