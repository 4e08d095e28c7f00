/* kaged-anthropic-provider.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-anthropic-provider"

#include "config.h"

#include <string.h>

#include "kaged-anthropic-provider.h"

#define ANTHROPIC_VERSION  "2023-06-01"
#define DEFAULT_MAX_TOKENS 4096

/**
 * KagedAnthropicProvider:
 *
 * Anthropic Messages: `POST {base}/v1/messages`, streamed as named
 * server-sent events from `message_start` to `message_stop`. The system
 * prompt (and any summary of earlier turns) travels as the top-level
 * `system` field, and consecutive messages of one role are merged, since
 * roles must alternate.
 */
struct _KagedAnthropicProvider
{
  KagedHttpProvider parent_instance;

  guint             max_tokens;
};

G_DEFINE_FINAL_TYPE (KagedAnthropicProvider, kaged_anthropic_provider, KAGED_TYPE_HTTP_PROVIDER)

enum {
  PROP_0,
  PROP_MAX_TOKENS,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

typedef struct
{
  KagedStreamDecoder  parent;
  gint64              input_tokens;
  gint64              output_tokens;
} Decoder;

static void
take_usage (Decoder    *self,
            JsonObject *usage)
{
  if (usage == NULL)
    return;

  kaged_json_get_int (usage, "input_tokens", &self->input_tokens);
  kaged_json_get_int (usage, "output_tokens", &self->output_tokens);
  kaged_chat_set_usage (self->parent.chat, self->input_tokens, self->output_tokens);
}

static gboolean
on_event (const KagedSseEvent  *event,
          gpointer              user_data,
          GError              **error)
{
  Decoder *self = user_data;
  KagedChat *chat = self->parent.chat;
  JsonObject *root;
  const char *type;

  if (self->parent.done)
    return TRUE;

  root = kaged_stream_decoder_parse (&self->parent, event->data, event->data_len, error);
  if (root == NULL)
    return FALSE;

  /* The data repeats the event name; trust the data when the line was left out. */
  type = strcmp (event->type, "message") != 0 ? event->type : kaged_json_get_string (root, "type");
  if (type == NULL)
    return TRUE;

  self->parent.recognized = TRUE;

  if (strcmp (type, "content_block_delta") == 0)
    {
      JsonObject *delta = kaged_json_get_object (root, "delta");
      const char *kind = kaged_json_get_string (delta, "type");
      const char *text;

      if (g_strcmp0 (kind, "text_delta") == 0 && (text = kaged_json_get_string (delta, "text")) != NULL)
        kaged_chat_push_delta (chat, KAGED_DELTA_TEXT, text, -1);
      else if (g_strcmp0 (kind, "thinking_delta") == 0 &&
               (text = kaged_json_get_string (delta, "thinking")) != NULL)
        kaged_chat_push_delta (chat, KAGED_DELTA_THINKING, text, -1);
    }
  else if (strcmp (type, "content_block_start") == 0)
    {
      JsonObject *block = kaged_json_get_object (root, "content_block");
      const char *kind = kaged_json_get_string (block, "type");
      const char *text;

      if (g_strcmp0 (kind, "text") == 0 && (text = kaged_json_get_string (block, "text")) != NULL)
        kaged_chat_push_delta (chat, KAGED_DELTA_TEXT, text, -1);
      else if (g_strcmp0 (kind, "thinking") == 0 &&
               (text = kaged_json_get_string (block, "thinking")) != NULL)
        kaged_chat_push_delta (chat, KAGED_DELTA_THINKING, text, -1);
    }
  else if (strcmp (type, "message_start") == 0)
    {
      take_usage (self, kaged_json_get_object (kaged_json_get_object (root, "message"), "usage"));
    }
  else if (strcmp (type, "message_delta") == 0)
    {
      const char *stop_reason = kaged_json_get_string (kaged_json_get_object (root, "delta"),
                                                       "stop_reason");

      if (stop_reason != NULL)
        {
          kaged_chat_set_finish_reason (chat, stop_reason);
          self->parent.stopped = TRUE;
        }
      take_usage (self, kaged_json_get_object (root, "usage"));
    }
  else if (strcmp (type, "message_stop") == 0)
    {
      self->parent.done = TRUE;
    }
  else if (strcmp (type, "error") == 0)
    {
      JsonObject *details = kaged_json_get_object (root, "error");

      g_propagate_error (error,
                         kaged_stream_decoder_error (&self->parent,
                                                     kaged_json_get_string (details, "type"),
                                                     NULL,
                                                     kaged_json_get_string (details, "message")));
      return FALSE;
    }

  /* ping, content_block_stop and anything newer: nothing to do. */
  return TRUE;
}

/**
 * kaged_anthropic_decoder_new:
 * @chat: where the reply goes
 * @clock: (nullable): dates waits in stream errors
 * @max_event_size: cap on one event
 *
 * Returns: (transfer full): a reader of Messages event streams
 */
KagedStreamDecoder *
kaged_anthropic_decoder_new (KagedChat  *chat,
                             KagedClock *clock,
                             gsize       max_event_size)
{
  return kaged_stream_decoder_new_sse (sizeof (Decoder), on_event, chat, clock, max_event_size);
}

static void
add_turn (JsonBuilder *builder,
          const char  *role,
          GString     *content)
{
  if (role != NULL && content->len > 0)
    kaged_http_add_message (builder, role, content->str);
}

static void
kaged_anthropic_provider_add_body (KagedHttpProvider *provider,
                                   KagedChat         *chat,
                                   JsonBuilder       *builder)
{
  KagedAnthropicProvider *self = KAGED_ANTHROPIC_PROVIDER (provider);
  g_autoptr(GString) system = g_string_new (kaged_chat_get_system_prompt (chat));
  g_autoptr(GString) turn = g_string_new (NULL);
  GPtrArray *messages = kaged_chat_get_messages (chat);
  const char *turn_role = NULL;

  json_builder_set_member_name (builder, "max_tokens");
  json_builder_add_int_value (builder, self->max_tokens);

  json_builder_set_member_name (builder, "messages");
  json_builder_begin_array (builder);
  for (guint i = 0; i < messages->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (messages, i);
      const char *content = kaged_message_get_content (message);
      const char *role = kaged_http_role_name (kaged_message_get_role (message));

      if (content == NULL || content[0] == '\0')
        continue;

      if (strcmp (role, "system") == 0)
        {
          if (system->len > 0)
            g_string_append (system, "\n\n");
          g_string_append (system, content);
          continue;
        }

      if (g_strcmp0 (role, turn_role) != 0)
        {
          add_turn (builder, turn_role, turn);
          g_string_truncate (turn, 0);
          turn_role = role;
        }
      else
        {
          g_string_append (turn, "\n\n");
        }
      g_string_append (turn, content);
    }
  add_turn (builder, turn_role, turn);
  json_builder_end_array (builder);

  if (system->len > 0)
    {
      json_builder_set_member_name (builder, "system");
      json_builder_add_string_value (builder, system->str);
    }

  json_builder_set_member_name (builder, "stream");
  json_builder_add_boolean_value (builder, TRUE);
}

static void
kaged_anthropic_provider_add_headers (KagedHttpProvider  *provider,
                                      SoupMessageHeaders *headers,
                                      const char         *api_key)
{
  soup_message_headers_replace (headers, "anthropic-version", ANTHROPIC_VERSION);
  if (api_key != NULL)
    soup_message_headers_replace (headers, "x-api-key", api_key);
}

static void
kaged_anthropic_provider_get_property (GObject    *object,
                                       guint       prop_id,
                                       GValue     *value,
                                       GParamSpec *pspec)
{
  KagedAnthropicProvider *self = KAGED_ANTHROPIC_PROVIDER (object);

  switch (prop_id)
    {
    case PROP_MAX_TOKENS:
      g_value_set_uint (value, self->max_tokens);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_anthropic_provider_set_property (GObject      *object,
                                       guint         prop_id,
                                       const GValue *value,
                                       GParamSpec   *pspec)
{
  KagedAnthropicProvider *self = KAGED_ANTHROPIC_PROVIDER (object);

  switch (prop_id)
    {
    case PROP_MAX_TOKENS:
      if (self->max_tokens != g_value_get_uint (value))
        {
          self->max_tokens = g_value_get_uint (value);
          g_object_notify_by_pspec (object, pspec);
        }
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_anthropic_provider_class_init (KagedAnthropicProviderClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  KagedHttpProviderClass *http_class = KAGED_HTTP_PROVIDER_CLASS (klass);

  object_class->get_property = kaged_anthropic_provider_get_property;
  object_class->set_property = kaged_anthropic_provider_set_property;

  http_class->path = "/v1/messages";
  http_class->accept = "text/event-stream";
  http_class->add_body = kaged_anthropic_provider_add_body;
  http_class->add_headers = kaged_anthropic_provider_add_headers;
  http_class->new_decoder = kaged_anthropic_decoder_new;

  /**
   * KagedAnthropicProvider:max-tokens:
   *
   * The longest reply asked for; the Messages API requires one.
   */
  properties [PROP_MAX_TOKENS] =
    g_param_spec_uint ("max-tokens", NULL, NULL,
                       1, G_MAXUINT, DEFAULT_MAX_TOKENS,
                       (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (object_class, PROP_MAX_TOKENS, properties [PROP_MAX_TOKENS]);
}

static void
kaged_anthropic_provider_init (KagedAnthropicProvider *self)
{
  self->max_tokens = DEFAULT_MAX_TOKENS;
}

/**
 * kaged_anthropic_provider_new:
 * @session: (nullable): the shared session, or %NULL for the default one
 * @base_url: such as `https://api.anthropic.com`
 * @model: the model name
 * @api_key: (nullable): sent as `x-api-key` when given
 *
 * Returns: (transfer full): a new provider
 */
KagedProvider *
kaged_anthropic_provider_new (SoupSession *session,
                              const char  *base_url,
                              const char  *model,
                              const char  *api_key)
{
  return kaged_http_provider_new (KAGED_TYPE_ANTHROPIC_PROVIDER, session, base_url, model, api_key);
}
