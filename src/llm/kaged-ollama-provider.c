/* kaged-ollama-provider.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-ollama-provider"

#include "config.h"

#include <string.h>

#include "kaged-ollama-provider.h"

/**
 * KagedOllamaProvider:
 *
 * Ollama's chat: `POST {base}/api/chat`, streamed as one JSON object per
 * line until one says `"done": true`. A local Ollama needs no key; one
 * given (for a proxy in front of it) is sent as a bearer token.
 */
struct _KagedOllamaProvider
{
  KagedHttpProvider parent_instance;
};

G_DEFINE_FINAL_TYPE (KagedOllamaProvider, kaged_ollama_provider, KAGED_TYPE_HTTP_PROVIDER)

static gboolean
on_line (const char  *line,
         gsize        len,
         gpointer     user_data,
         GError     **error)
{
  KagedStreamDecoder *self = user_data;
  KagedChat *chat = self->chat;
  JsonObject *root;
  JsonObject *message;
  JsonNode *error_node;
  const char *text;

  if (self->done)
    return TRUE;

  root = kaged_stream_decoder_parse (self, line, len, error);
  if (root == NULL)
    return FALSE;

  error_node = json_object_get_member (root, "error");
  if (error_node != NULL && !JSON_NODE_HOLDS_NULL (error_node))
    {
      const char *said = kaged_json_get_string (root, "error");

      if (said == NULL)
        said = kaged_json_get_string (kaged_json_get_object (root, "error"), "message");

      self->recognized = TRUE;
      g_propagate_error (error, kaged_stream_decoder_error (self, NULL, NULL, said));
      return FALSE;
    }

  self->recognized = TRUE;

  message = kaged_json_get_object (root, "message");
  if ((text = kaged_json_get_string (message, "thinking")) != NULL)
    kaged_chat_push_delta (chat, KAGED_DELTA_THINKING, text, -1);
  if ((text = kaged_json_get_string (message, "content")) != NULL)
    kaged_chat_push_delta (chat, KAGED_DELTA_TEXT, text, -1);

  if (kaged_json_get_bool (root, "done"))
    {
      gint64 input = kaged_chat_get_input_tokens (chat);
      gint64 output = kaged_chat_get_output_tokens (chat);

      kaged_json_get_int (root, "prompt_eval_count", &input);
      kaged_json_get_int (root, "eval_count", &output);
      kaged_chat_set_usage (chat, input, output);

      if ((text = kaged_json_get_string (root, "done_reason")) != NULL)
        kaged_chat_set_finish_reason (chat, text);

      self->done = TRUE;
    }

  return TRUE;
}

/**
 * kaged_ollama_decoder_new:
 * @chat: where the reply goes
 * @clock: (nullable): dates waits in stream errors
 * @max_event_size: cap on one line
 *
 * Returns: (transfer full): a reader of Ollama's NDJSON chat stream
 */
KagedStreamDecoder *
kaged_ollama_decoder_new (KagedChat  *chat,
                          KagedClock *clock,
                          gsize       max_event_size)
{
  return kaged_stream_decoder_new_ndjson (sizeof (KagedStreamDecoder), on_line,
                                          chat, clock, max_event_size);
}

static void
kaged_ollama_provider_add_body (KagedHttpProvider *provider,
                                KagedChat         *chat,
                                JsonBuilder       *builder)
{
  kaged_http_add_messages (builder, chat);

  json_builder_set_member_name (builder, "stream");
  json_builder_add_boolean_value (builder, TRUE);
}

static void
kaged_ollama_provider_class_init (KagedOllamaProviderClass *klass)
{
  KagedHttpProviderClass *http_class = KAGED_HTTP_PROVIDER_CLASS (klass);

  http_class->path = "/api/chat";
  http_class->accept = "application/x-ndjson";
  http_class->add_body = kaged_ollama_provider_add_body;
  http_class->new_decoder = kaged_ollama_decoder_new;
}

static void
kaged_ollama_provider_init (KagedOllamaProvider *self)
{
}

/**
 * kaged_ollama_provider_new:
 * @session: (nullable): the shared session, or %NULL for the default one
 * @base_url: such as `http://127.0.0.1:11434`
 * @model: the model name
 * @api_key: (nullable): sent as a bearer token when given
 *
 * Returns: (transfer full): a new provider
 */
KagedProvider *
kaged_ollama_provider_new (SoupSession *session,
                           const char  *base_url,
                           const char  *model,
                           const char  *api_key)
{
  return kaged_http_provider_new (KAGED_TYPE_OLLAMA_PROVIDER, session, base_url, model, api_key);
}
