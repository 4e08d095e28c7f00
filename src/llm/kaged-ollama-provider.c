/* kaged-ollama-provider.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-ollama-provider"

#include "config.h"

#include <glib/gi18n.h>
#include <string.h>

#include "kaged-classify.h"
#include "kaged-ndjson-parser.h"
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
  GObject         parent_instance;

  KagedHttpConfig config;
};

static void provider_iface_init (KagedProviderInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedOllamaProvider, kaged_ollama_provider, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (KAGED_TYPE_PROVIDER, provider_iface_init))

static GParamSpec *properties [KAGED_HTTP_N_PROPS];

typedef struct
{
  KagedStreamDecoder  parent;
  KagedNdjsonParser  *ndjson;
  JsonParser         *json;
} Decoder;

static gboolean
on_line (const char  *line,
         gsize        len,
         gpointer     user_data,
         GError     **error)
{
  Decoder *self = user_data;
  KagedChat *chat = self->parent.chat;
  JsonObject *root;
  JsonObject *message;
  JsonNode *error_node;
  const char *text;

  if (self->parent.done)
    return TRUE;

  root = kaged_json_parse_object (self->json, line, len, error);
  if (root == NULL)
    return FALSE;

  error_node = json_object_get_member (root, "error");
  if (error_node != NULL && !JSON_NODE_HOLDS_NULL (error_node))
    {
      const char *said = kaged_json_get_string (root, "error");

      if (said == NULL)
        said = kaged_json_get_string (kaged_json_get_object (root, "error"), "message");

      self->parent.recognized = TRUE;
      g_propagate_error (error,
                         kaged_classify_stream_error (NULL, NULL, said, self->parent.headers,
                                                      kaged_stream_decoder_now (&self->parent)));
      return FALSE;
    }

  self->parent.recognized = TRUE;

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

      self->parent.done = TRUE;
    }

  return TRUE;
}

static gboolean
decoder_feed (KagedStreamDecoder  *decoder,
              const char          *data,
              gsize                len,
              GError             **error)
{
  Decoder *self = (Decoder *)decoder;

  return kaged_ndjson_parser_feed (self->ndjson, data, len, error);
}

static gboolean
decoder_finish (KagedStreamDecoder  *decoder,
                GError             **error)
{
  Decoder *self = (Decoder *)decoder;

  return kaged_ndjson_parser_finish (self->ndjson, error);
}

static void
decoder_free (KagedStreamDecoder *decoder)
{
  Decoder *self = (Decoder *)decoder;

  kaged_ndjson_parser_free (self->ndjson);
  g_clear_object (&self->json);
  kaged_stream_decoder_clear (decoder);
  g_free (self);
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
  Decoder *self;

  g_return_val_if_fail (KAGED_IS_CHAT (chat), NULL);

  self = g_new0 (Decoder, 1);
  kaged_stream_decoder_init (&self->parent, chat, clock);
  self->parent.feed = decoder_feed;
  self->parent.finish = decoder_finish;
  self->parent.free = decoder_free;
  self->ndjson = kaged_ndjson_parser_new (on_line, self);
  kaged_ndjson_parser_set_max_size (self->ndjson, max_event_size);
  self->json = json_parser_new_immutable ();

  return &self->parent;
}

static JsonBuilder *
build_body (KagedOllamaProvider *self,
            KagedChat           *chat)
{
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  GPtrArray *messages = kaged_chat_get_messages (chat);
  const char *system_prompt = kaged_chat_get_system_prompt (chat);

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "model");
  json_builder_add_string_value (builder, self->config.model != NULL ? self->config.model : "");

  json_builder_set_member_name (builder, "messages");
  json_builder_begin_array (builder);
  if (system_prompt != NULL && system_prompt[0] != '\0')
    {
      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "role");
      json_builder_add_string_value (builder, "system");
      json_builder_set_member_name (builder, "content");
      json_builder_add_string_value (builder, system_prompt);
      json_builder_end_object (builder);
    }
  for (guint i = 0; i < messages->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (messages, i);
      const char *content = kaged_message_get_content (message);

      if (content == NULL || content[0] == '\0')
        continue;

      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "role");
      json_builder_add_string_value (builder, kaged_http_role_name (kaged_message_get_role (message)));
      json_builder_set_member_name (builder, "content");
      json_builder_add_string_value (builder, content);
      json_builder_end_object (builder);
    }
  json_builder_end_array (builder);

  json_builder_set_member_name (builder, "stream");
  json_builder_add_boolean_value (builder, TRUE);
  json_builder_end_object (builder);

  return g_steal_pointer (&builder);
}

static void
kaged_ollama_provider_chat_async (KagedProvider       *provider,
                                  KagedChat           *chat,
                                  GCancellable        *cancellable,
                                  GAsyncReadyCallback  callback,
                                  gpointer             user_data)
{
  KagedOllamaProvider *self = KAGED_OLLAMA_PROVIDER (provider);
  g_autoptr(GTask) task = NULL;
  g_autoptr(JsonBuilder) body = NULL;
  g_autoptr(SoupMessage) message = NULL;
  g_autoptr(GError) error = NULL;

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_ollama_provider_chat_async);

  body = build_body (self, chat);
  message = kaged_http_config_new_message (&self->config, "/api/chat", body,
                                           "application/x-ndjson", &error);
  if (message == NULL)
    {
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }

  if (self->config.api_key != NULL)
    {
      g_autofree char *bearer = g_strconcat ("Bearer ", self->config.api_key, NULL);

      soup_message_headers_replace (soup_message_get_request_headers (message),
                                    "Authorization", bearer);
      memset (bearer, 0, strlen (bearer));
    }

  kaged_http_stream (&self->config, message,
                     kaged_ollama_decoder_new (chat, self->config.clock, self->config.max_event_size),
                     g_steal_pointer (&task));
}

static gboolean
kaged_ollama_provider_chat_finish (KagedProvider  *provider,
                                   GAsyncResult   *result,
                                   GError        **error)
{
  g_return_val_if_fail (g_task_is_valid (result, provider), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_ollama_provider_chat_async, FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

static void
provider_iface_init (KagedProviderInterface *iface)
{
  iface->chat_async = kaged_ollama_provider_chat_async;
  iface->chat_finish = kaged_ollama_provider_chat_finish;
}

static void
kaged_ollama_provider_finalize (GObject *object)
{
  KagedOllamaProvider *self = (KagedOllamaProvider *)object;

  kaged_http_config_clear (&self->config);

  G_OBJECT_CLASS (kaged_ollama_provider_parent_class)->finalize (object);
}

static void
kaged_ollama_provider_get_property (GObject    *object,
                                    guint       prop_id,
                                    GValue     *value,
                                    GParamSpec *pspec)
{
  KagedOllamaProvider *self = KAGED_OLLAMA_PROVIDER (object);

  if (!kaged_http_config_get_property (&self->config, prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
kaged_ollama_provider_set_property (GObject      *object,
                                    guint         prop_id,
                                    const GValue *value,
                                    GParamSpec   *pspec)
{
  KagedOllamaProvider *self = KAGED_OLLAMA_PROVIDER (object);

  if (!kaged_http_config_set_property (&self->config, object, properties, prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
kaged_ollama_provider_class_init (KagedOllamaProviderClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = kaged_ollama_provider_finalize;
  object_class->get_property = kaged_ollama_provider_get_property;
  object_class->set_property = kaged_ollama_provider_set_property;

  kaged_http_config_install_properties (object_class, properties);
}

static void
kaged_ollama_provider_init (KagedOllamaProvider *self)
{
  kaged_http_config_init (&self->config);
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
  g_return_val_if_fail (!session || SOUP_IS_SESSION (session), NULL);
  g_return_val_if_fail (base_url != NULL, NULL);

  return g_object_new (KAGED_TYPE_OLLAMA_PROVIDER,
                       "session", session,
                       "base-url", base_url,
                       "model", model,
                       "api-key", api_key,
                       NULL);
}
