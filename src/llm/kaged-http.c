/* kaged-http.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-http"

#include "config.h"

#include <glib/gi18n.h>
#include <string.h>

#include "kaged-classify.h"
#include "kaged-http.h"
#include "kaged-provider.h"
#include "kaged-retry-class.h"
#include "kaged-sse-parser.h"

/*
 * The one streaming request every provider makes: send, then read the body
 * in chunks on the calling thread's main context and hand them to the
 * provider's decoder, with one cancellable for the send and every read.
 * A non-2xx answer has its body read (bounded in size and time) and
 * classified. Our own deadlines (until the headers; without a line
 * completed in the body, so that a trickle of bytes does not hold the
 * call open; for the whole answer) cancel that cancellable and report a
 * timeout; the caller's cancellable reports G_IO_ERROR_CANCELLED, whatever
 * else happened. A streamed body is capped in size as well as each event.
 */

SoupSession *
kaged_http_session_new (void)
{
  return soup_session_new_with_options ("timeout", KAGED_HTTP_TIMEOUT_SECONDS,
                                        "idle-timeout", KAGED_HTTP_TIMEOUT_SECONDS,
                                        "user-agent", PACKAGE_NAME "/" PACKAGE_VERSION,
                                        NULL);
}

/**
 * kaged_http_get_default_session:
 *
 * Returns: (transfer none): the session the application shares
 */
SoupSession *
kaged_http_get_default_session (void)
{
  static SoupSession *session;

  if (g_once_init_enter (&session))
    g_once_init_leave (&session, kaged_http_session_new ());

  return session;
}

void
kaged_http_config_init (KagedHttpConfig *config)
{
  memset (config, 0, sizeof *config);
  config->first_byte_timeout_ms = KAGED_HTTP_DEFAULT_DEADLINE_MS;
  config->idle_timeout_ms = KAGED_HTTP_DEFAULT_DEADLINE_MS;
  config->max_duration_ms = KAGED_HTTP_MAX_DURATION_MS;
  config->max_event_size = KAGED_STREAM_PARSER_DEFAULT_MAX_SIZE;
  config->max_reply_size = KAGED_HTTP_MAX_REPLY_SIZE;
  config->max_error_body = KAGED_HTTP_MAX_ERROR_BODY;
}

/* Overwrites the key before its memory is given back. */
static void
forget_key (char **key)
{
  if (*key != NULL)
    {
      volatile char *p = *key;

      while (*p != '\0')
        *p++ = '\0';
      g_clear_pointer (key, g_free);
    }
}

void
kaged_http_config_clear (KagedHttpConfig *config)
{
  g_clear_object (&config->session);
  g_clear_object (&config->clock);
  g_clear_pointer (&config->base_url, g_free);
  g_clear_pointer (&config->model, g_free);
  forget_key (&config->api_key);
}

/* Keeps @base_url without trailing slashes, so paths can be appended. */
void
kaged_http_config_set_base_url (KagedHttpConfig *config,
                                const char      *base_url)
{
  g_autofree char *url = g_strdup (base_url);
  gsize len = url != NULL ? strlen (url) : 0;

  while (len > 0 && url[len - 1] == '/')
    url[--len] = '\0';
  g_free (config->base_url);
  config->base_url = g_steal_pointer (&url);
}

/* Wipes the key held before; an empty key is no key. */
void
kaged_http_config_set_api_key (KagedHttpConfig *config,
                               const char      *api_key)
{
  forget_key (&config->api_key);
  if (api_key != NULL && api_key[0] != '\0')
    config->api_key = g_strdup (api_key);
}

/**
 * kaged_http_config_new_message:
 * @path: appended to the base URL, such as `/chat/completions`
 * @body: the JSON request body
 * @accept: the media type asked for
 *
 * Returns: (transfer full): a POST, or %NULL with an invalid_request
 *   error when the base URL is unusable
 */
SoupMessage *
kaged_http_config_new_message (KagedHttpConfig  *config,
                               const char       *path,
                               JsonBuilder      *body,
                               const char       *accept,
                               GError          **error)
{
  g_autoptr(JsonGenerator) generator = json_generator_new ();
  g_autoptr(JsonNode) root = json_builder_get_root (body);
  g_autofree char *url = NULL;
  g_autofree char *json = NULL;
  g_autoptr(GUri) uri = NULL;
  g_autoptr(GBytes) bytes = NULL;
  SoupMessage *message;
  gsize len = 0;

  url = g_strconcat (config->base_url != NULL ? config->base_url : "", path, NULL);
  uri = g_uri_parse (url, SOUP_HTTP_URI_FLAGS, NULL);
  if (uri == NULL ||
      (g_strcmp0 (g_uri_get_scheme (uri), "http") != 0 &&
       g_strcmp0 (g_uri_get_scheme (uri), "https") != 0) ||
      g_uri_get_host (uri) == NULL || g_uri_get_host (uri)[0] == '\0')
    {
      g_propagate_error (error,
                         kaged_provider_error_new (KAGED_RETRY_CLASS_INVALID_REQUEST,
                                                   _("The provider address “%s” is not a valid HTTP address"),
                                                   config->base_url != NULL ? config->base_url : ""));
      return NULL;
    }

  message = soup_message_new_from_uri (SOUP_METHOD_POST, uri);

  /* Without this libsoup opens a new connection, and a new TLS handshake,
   * for every POST. It also lets libsoup send the request again, unseen by
   * Tier 1, when a kept connection turns out to be closed before any byte
   * of an answer came: almost always a connection the server had dropped
   * while idle, very rarely one that dropped after the server took the
   * request, which would then be answered twice. */
  soup_message_add_flags (message, SOUP_MESSAGE_IDEMPOTENT);

  json_generator_set_root (generator, root);
  json = json_generator_to_data (generator, &len);
  bytes = g_bytes_new_take (g_steal_pointer (&json), len);
  soup_message_set_request_body_from_bytes (message, "application/json", bytes);
  soup_message_headers_replace (soup_message_get_request_headers (message), "Accept", accept);

  return message;
}

static gboolean
decoder_feed (KagedStreamDecoder  *self,
              const char          *data,
              gsize                len,
              GError             **error)
{
  if (self->sse != NULL)
    return kaged_sse_parser_feed (self->sse, data, len, error);
  return kaged_ndjson_parser_feed (self->ndjson, data, len, error);
}

static gboolean
decoder_finish (KagedStreamDecoder  *self,
                GError             **error)
{
  if (self->sse != NULL ? !kaged_sse_parser_finish (self->sse, error)
                        : !kaged_ndjson_parser_finish (self->ndjson, error))
    return FALSE;

  /* A stream that said why it stopped only lacks its end marker. */
  if (self->stopped)
    self->done = TRUE;

  return TRUE;
}

static void
decoder_free (KagedStreamDecoder *self)
{
  g_clear_pointer (&self->sse, kaged_sse_parser_free);
  g_clear_pointer (&self->ndjson, kaged_ndjson_parser_free);
  g_clear_object (&self->json);
  g_clear_object (&self->chat);
  g_clear_object (&self->clock);
  g_clear_pointer (&self->headers, soup_message_headers_unref);
  g_free (self);
}

static KagedStreamDecoder *
decoder_new (gsize       size,
             KagedChat  *chat,
             KagedClock *clock)
{
  KagedStreamDecoder *self;

  g_assert (size >= sizeof (KagedStreamDecoder));

  self = g_malloc0 (size);
  self->feed = decoder_feed;
  self->finish = decoder_finish;
  self->free = decoder_free;
  self->chat = g_object_ref (chat);
  self->clock = clock != NULL ? g_object_ref (clock) : g_object_ref (kaged_clock_get_default ());
  self->json = json_parser_new_immutable ();

  return self;
}

/**
 * kaged_stream_decoder_new_sse:
 * @size: the size of the provider's decoder struct, which starts with a
 *   #KagedStreamDecoder; the rest is zeroed
 * @on_event: called with each event and the decoder
 * @chat: where the reply goes
 * @clock: (nullable): dates waits in stream errors
 * @max_event_size: cap on one event
 *
 * Returns: (transfer full): a decoder of a server-sent events stream
 */
KagedStreamDecoder *
kaged_stream_decoder_new_sse (gsize              size,
                              KagedSseEventFunc  on_event,
                              KagedChat         *chat,
                              KagedClock        *clock,
                              gsize              max_event_size)
{
  KagedStreamDecoder *self;

  g_return_val_if_fail (on_event != NULL, NULL);
  g_return_val_if_fail (KAGED_IS_CHAT (chat), NULL);

  self = decoder_new (size, chat, clock);
  self->sse = kaged_sse_parser_new (on_event, self);
  kaged_sse_parser_set_max_size (self->sse, max_event_size);

  return self;
}

/**
 * kaged_stream_decoder_new_ndjson:
 * @size: as for kaged_stream_decoder_new_sse()
 * @on_line: called with each line and the decoder
 * @chat: where the reply goes
 * @clock: (nullable): dates waits in stream errors
 * @max_event_size: cap on one line
 *
 * Returns: (transfer full): a decoder of a stream of JSON lines
 */
KagedStreamDecoder *
kaged_stream_decoder_new_ndjson (gsize                size,
                                 KagedNdjsonLineFunc  on_line,
                                 KagedChat           *chat,
                                 KagedClock          *clock,
                                 gsize                max_event_size)
{
  KagedStreamDecoder *self;

  g_return_val_if_fail (on_line != NULL, NULL);
  g_return_val_if_fail (KAGED_IS_CHAT (chat), NULL);

  self = decoder_new (size, chat, clock);
  self->ndjson = kaged_ndjson_parser_new (on_line, self);
  kaged_ndjson_parser_set_max_size (self->ndjson, max_event_size);

  return self;
}

void
kaged_stream_decoder_free (KagedStreamDecoder *self)
{
  if (self != NULL)
    self->free (self);
}

gint64
kaged_stream_decoder_now (KagedStreamDecoder *self)
{
  return kaged_clock_get_wall_ms (self->clock);
}

/**
 * kaged_stream_decoder_parse:
 *
 * Returns: (transfer none) (nullable): one event or line as a JSON object,
 *   valid until the next call; %NULL with a protocol_error otherwise
 */
JsonObject *
kaged_stream_decoder_parse (KagedStreamDecoder  *self,
                            const char          *data,
                            gsize                len,
                            GError             **error)
{
  return kaged_json_parse_object (self->json, data, len, error);
}

/**
 * kaged_stream_decoder_error:
 * @type: (nullable): the provider's error type
 * @code: (nullable): the provider's error code
 * @message: (nullable): what the provider said
 *
 * Returns: (transfer full): the classified error the stream reported,
 *   with any wait the answer's headers advise
 */
GError *
kaged_stream_decoder_error (KagedStreamDecoder *self,
                            const char         *type,
                            const char         *code,
                            const char         *message)
{
  return kaged_classify_stream_error (type, code, message, self->headers,
                                      kaged_stream_decoder_now (self));
}

/**
 * kaged_http_role_name:
 *
 * Returns: the chat role a message is sent as: an operator's message is
 *   the user's, an agent's the assistant's, a summary is system context
 */
const char *
kaged_http_role_name (KagedMessageRole role)
{
  switch (role)
    {
    case KAGED_MESSAGE_ROLE_OPERATOR:
      return "user";

    case KAGED_MESSAGE_ROLE_AGENT:
      return "assistant";

    case KAGED_MESSAGE_ROLE_SUMMARY:
      return "system";

    default:
      g_return_val_if_reached ("user");
    }
}

/* Adds one `{"role", "content"}` object to the array being built. */
void
kaged_http_add_message (JsonBuilder *builder,
                        const char  *role,
                        const char  *content)
{
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "role");
  json_builder_add_string_value (builder, role);
  json_builder_set_member_name (builder, "content");
  json_builder_add_string_value (builder, content);
  json_builder_end_object (builder);
}

/**
 * kaged_http_add_messages:
 *
 * Adds the `messages` member the way chat-completion style APIs take it:
 * the system prompt first as a system message, then every message that
 * has content, in order.
 */
void
kaged_http_add_messages (JsonBuilder *builder,
                         KagedChat   *chat)
{
  GPtrArray *messages = kaged_chat_get_messages (chat);
  const char *system_prompt = kaged_chat_get_system_prompt (chat);

  json_builder_set_member_name (builder, "messages");
  json_builder_begin_array (builder);
  if (system_prompt != NULL && system_prompt[0] != '\0')
    kaged_http_add_message (builder, "system", system_prompt);
  for (guint i = 0; i < messages->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (messages, i);
      const char *content = kaged_message_get_content (message);

      if (content == NULL || content[0] == '\0')
        continue;

      kaged_http_add_message (builder, kaged_http_role_name (kaged_message_get_role (message)),
                              content);
    }
  json_builder_end_array (builder);
}

/* How much of a body that is not a stream is kept to classify it. */
#define UNRECOGNIZED_MAX (64 * 1024)
/* While a reply streams, how long a read waits for more to gather, and how
 * much it takes at once. */
#define BATCH_PAUSE_MS 20
#define BATCH_MAX_BYTES (256 * 1024)

typedef enum
{
  PHASE_SEND,
  PHASE_ERROR_BODY,
  PHASE_BODY,
} Phase;

typedef struct
{
  SoupSession        *session;
  SoupMessage        *message;
  KagedStreamDecoder *decoder;
  KagedClock         *clock;
  char               *api_key;
  GCancellable       *cancellable;
  GCancellable       *caller;
  gulong              caller_handler;
  GInputStream       *stream;
  GSource            *deadline;
  GSource            *overall;
  GSource            *pause;
  guint8             *buffer;
  GByteArray         *error_body;
  GByteArray         *unrecognized;
  guint               first_byte_timeout_ms;
  guint               idle_timeout_ms;
  guint               max_duration_ms;
  gsize               max_reply_size;
  gsize               max_error_body;
  guint               status;
  gsize               received;
  Phase               phase;
  guint               timed_out : 1;
  guint               overran : 1;
  guint               at_end : 1;
} Stream;

static void
stream_free (Stream *state)
{
  if (state->pause != NULL)
    {
      g_source_destroy (state->pause);
      g_clear_pointer (&state->pause, g_source_unref);
    }
  if (state->deadline != NULL)
    {
      g_source_destroy (state->deadline);
      g_clear_pointer (&state->deadline, g_source_unref);
    }
  if (state->overall != NULL)
    {
      g_source_destroy (state->overall);
      g_clear_pointer (&state->overall, g_source_unref);
    }
  if (state->caller != NULL && state->caller_handler != 0)
    g_cancellable_disconnect (state->caller, state->caller_handler);
  g_clear_object (&state->caller);
  g_clear_object (&state->cancellable);
  g_clear_object (&state->stream);
  g_clear_object (&state->message);
  g_clear_object (&state->session);
  g_clear_object (&state->clock);
  g_clear_pointer (&state->decoder, kaged_stream_decoder_free);
  g_clear_pointer (&state->error_body, g_byte_array_unref);
  g_clear_pointer (&state->unrecognized, g_byte_array_unref);
  forget_key (&state->api_key);
  g_free (state->buffer);
  g_free (state);
}

/* After a stream's end marker only the end of the HTTP body is left to
 * come. Reading it hands the connection back to the session to be used
 * again, where dropping the stream would close it. The caller has its
 * answer already; this goes on alone, a little at most. */
#define DRAIN_MAX_BYTES   (64 * 1024)
#define DRAIN_TIMEOUT_MS  1000

typedef struct
{
  GInputStream *stream;
  GCancellable *cancellable;
  GSource      *timeout;
  gsize         drained;
} Drain;

static void
drain_free (Drain *drain)
{
  g_source_destroy (drain->timeout);
  g_source_unref (drain->timeout);
  g_object_unref (drain->cancellable);
  g_object_unref (drain->stream);
  g_free (drain);
}

static gboolean
drain_timeout_cb (gpointer user_data)
{
  Drain *drain = user_data;

  g_cancellable_cancel (drain->cancellable);
  return G_SOURCE_REMOVE;
}

static void
drain_read_cb (GObject      *object,
               GAsyncResult *result,
               gpointer      user_data)
{
  Drain *drain = user_data;
  gssize n;

  n = g_input_stream_skip_finish (G_INPUT_STREAM (object), result, NULL);
  if (n > 0 && (drain->drained += n) < DRAIN_MAX_BYTES)
    {
      g_input_stream_skip_async (drain->stream, DRAIN_MAX_BYTES - drain->drained,
                                 G_PRIORITY_LOW, drain->cancellable, drain_read_cb, drain);
      return;
    }

  drain_free (drain);
}

static void
drain_body (GInputStream *stream)
{
  Drain *drain = g_new0 (Drain, 1);

  drain->stream = stream;
  drain->cancellable = g_cancellable_new ();
  drain->timeout = g_timeout_source_new (DRAIN_TIMEOUT_MS);
  g_source_set_static_name (drain->timeout, "[kaged] draining a provider reply");
  g_source_set_callback (drain->timeout, drain_timeout_cb, drain, NULL);
  g_source_attach (drain->timeout, g_main_context_get_thread_default ());

  g_input_stream_skip_async (stream, DRAIN_MAX_BYTES, G_PRIORITY_LOW,
                             drain->cancellable, drain_read_cb, drain);
}

static void read_next (GTask    *task,
                       gboolean  progress);
static void pause_then_read (GTask    *task,
                             gboolean  progress);

static gboolean
deadline_cb (gpointer user_data)
{
  Stream *state = user_data;

  state->timed_out = TRUE;
  g_cancellable_cancel (state->cancellable);
  g_clear_pointer (&state->deadline, g_source_unref);

  return G_SOURCE_REMOVE;
}

static void
arm_deadline (Stream *state,
              guint   ms)
{
  if (state->deadline != NULL)
    {
      g_source_destroy (state->deadline);
      g_clear_pointer (&state->deadline, g_source_unref);
    }

  state->deadline = g_timeout_source_new (ms);
  g_source_set_static_name (state->deadline, "[kaged] http deadline");
  g_source_set_callback (state->deadline, deadline_cb, state, NULL);
  g_source_attach (state->deadline, g_main_context_get_thread_default ());
}

static void
disarm_deadline (Stream *state)
{
  if (state->deadline != NULL)
    {
      g_source_destroy (state->deadline);
      g_clear_pointer (&state->deadline, g_source_unref);
    }
}

static gboolean
overall_cb (gpointer user_data)
{
  Stream *state = user_data;

  state->overran = TRUE;
  g_cancellable_cancel (state->cancellable);
  g_clear_pointer (&state->overall, g_source_unref);

  return G_SOURCE_REMOVE;
}

/* The call is over: no deadline is left to fire. */
static void
disarm_all (Stream *state)
{
  disarm_deadline (state);
  if (state->overall != NULL)
    {
      g_source_destroy (state->overall);
      g_clear_pointer (&state->overall, g_source_unref);
    }
}

static void
caller_cancelled_cb (GCancellable *caller,
                     GCancellable *cancellable)
{
  g_cancellable_cancel (cancellable);
}

static void
return_error (GTask  *task,
              GError *error)
{
  Stream *state = g_task_get_task_data (task);
  KagedChat *chat = state->decoder->chat;

  disarm_all (state);

  if (g_cancellable_is_cancelled (state->caller))
    {
      g_error_free (error);
      g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "%s", _("Cancelled"));
      return;
    }

  kaged_chat_flush (chat);

  /* An answer the parser refused carries its status; an error the provider
   * reported inside the stream has no status of its own. */
  if (g_error_matches (error, KAGED_PROVIDER_ERROR, KAGED_RETRY_CLASS_PROTOCOL_ERROR) &&
      state->phase == PHASE_BODY && kaged_provider_error_get_http_status (error) == 0)
    kaged_provider_error_set_http_status (error, state->status);

  if (error->domain == KAGED_PROVIDER_ERROR)
    {
      if (kaged_provider_error_get_request_id (error) == NULL && state->decoder->headers != NULL)
        {
          SoupMessageHeaders *headers = state->decoder->headers;
          const char *id = soup_message_headers_get_one (headers, "x-request-id");

          if (id == NULL)
            id = soup_message_headers_get_one (headers, "request-id");
          kaged_provider_error_set_request_id (error, id);
        }
    }

  kaged_classify_redact (error, state->api_key);
  g_debug ("Request failed: %s", error->message);
  g_task_return_error (task, error);
}

/* A failure of the transport (not an answer the provider gave). */
static void
return_transport_error (GTask        *task,
                        const GError *cause)
{
  Stream *state = g_task_get_task_data (task);
  KagedChat *chat = state->decoder->chat;
  GError *error;

  if (state->overran && g_error_matches (cause, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      /* Ours to end, however steadily it came: a timeout, part kept or not. */
      error = kaged_provider_error_new (KAGED_RETRY_CLASS_TIMEOUT,
                                        _("The provider’s answer took longer than %u s"),
                                        (state->max_duration_ms + 999) / 1000);
    }
  else if (state->timed_out && g_error_matches (cause, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      if (kaged_chat_has_delta (chat))
        error = kaged_provider_error_new (KAGED_RETRY_CLASS_NETWORK,
                                          _("The reply stopped coming for %u s after part of it arrived"),
                                          (state->idle_timeout_ms + 999) / 1000);
      else if (state->phase == PHASE_SEND)
        error = kaged_provider_error_new (KAGED_RETRY_CLASS_TIMEOUT,
                                          _("The provider did not answer within %u s"),
                                          (state->first_byte_timeout_ms + 999) / 1000);
      else
        error = kaged_provider_error_new (KAGED_RETRY_CLASS_TIMEOUT,
                                          _("The provider stopped sending for %u s"),
                                          (state->idle_timeout_ms + 999) / 1000);
    }
  else if (kaged_chat_has_delta (chat) && cause->domain != KAGED_PROVIDER_ERROR)
    {
      error = kaged_provider_error_new (KAGED_RETRY_CLASS_NETWORK,
                                        _("The connection was lost after part of the reply arrived: %s"),
                                        cause->message);
    }
  else
    {
      error = kaged_classify_transport_error (cause);
    }

  if (error->domain == KAGED_PROVIDER_ERROR && state->status != 0 && state->phase == PHASE_BODY)
    kaged_provider_error_set_http_status (error, state->status);

  return_error (task, error);
}

static void
return_success (GTask *task)
{
  Stream *state = g_task_get_task_data (task);

  disarm_all (state);

  if (g_cancellable_is_cancelled (state->caller))
    {
      g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "%s", _("Cancelled"));
      return;
    }

  if (state->stream != NULL && !state->at_end)
    drain_body (g_steal_pointer (&state->stream));

  kaged_chat_flush (state->decoder->chat);
  g_task_return_boolean (task, TRUE);
}

static void
end_of_body (GTask *task)
{
  Stream *state = g_task_get_task_data (task);
  KagedStreamDecoder *decoder = state->decoder;
  g_autoptr(GError) error = NULL;

  if (!decoder->done && !decoder->finish (decoder, &error))
    {
      return_error (task, g_steal_pointer (&error));
      return;
    }

  if (decoder->done)
    {
      return_success (task);
      return;
    }

  if (state->received == 0)
    {
      error = kaged_provider_error_new (KAGED_RETRY_CLASS_NETWORK,
                                        _("The provider closed the connection without answering"));
    }
  else if (!decoder->recognized)
    {
      /* Not a stream at all: perhaps an error object sent with a success
       * status, else a page from something in between. Either way the
       * start of the body says more than the stream parser could. */
      return_error (task,
                    kaged_classify_http_error (state->status, decoder->headers,
                                               (const char *)state->unrecognized->data,
                                               state->unrecognized->len,
                                               kaged_clock_get_wall_ms (state->clock)));
      return;
    }
  else
    error = kaged_provider_error_new (KAGED_RETRY_CLASS_NETWORK,
                                      _("The provider’s reply was cut off"));

  kaged_provider_error_set_http_status (error, state->status);
  return_error (task, g_steal_pointer (&error));
}

static void
error_body_read_cb (GObject      *object,
                    GAsyncResult *result,
                    gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  Stream *state = g_task_get_task_data (task);
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GError) error = NULL;
  GError *classified;

  /* The deadline armed before the first read covers the whole error body. */
  bytes = g_input_stream_read_bytes_finish (G_INPUT_STREAM (object), result, &error);

  if (bytes != NULL && g_bytes_get_size (bytes) > 0 &&
      state->error_body->len < state->max_error_body)
    {
      gsize size = g_bytes_get_size (bytes);
      gsize room = state->max_error_body - state->error_body->len;

      g_byte_array_append (state->error_body, g_bytes_get_data (bytes, NULL), MIN (size, room));
      if (size <= room)
        {
          g_input_stream_read_bytes_async (state->stream, KAGED_HTTP_READ_SIZE,
                                           KAGED_RUN_PRIORITY, state->cancellable,
                                           error_body_read_cb, g_steal_pointer (&task));
          return;
        }
    }

  if (g_cancellable_is_cancelled (state->caller))
    {
      return_error (task, g_steal_pointer (&error));
      return;
    }

  /* A body cut short is classified with what arrived of it. */
  classified = kaged_classify_http_error (state->status,
                                          soup_message_get_response_headers (state->message),
                                          (const char *)state->error_body->data,
                                          state->error_body->len,
                                          kaged_clock_get_wall_ms (state->clock));
  return_error (task, classified);
}

/* Hands @size bytes of the body to the decoder. Returns %FALSE when
 * that ended the call: an error, the reply's end marker, a cancel from
 * a ::delta handler. */
static gboolean
consume (GTask      *task,
         const char *data,
         gsize       size)
{
  Stream *state = g_task_get_task_data (task);
  KagedStreamDecoder *decoder = state->decoder;
  g_autoptr(GError) error = NULL;

  state->received += size;
  if (state->received > state->max_reply_size)
    {
      g_autofree char *cap = g_format_size (state->max_reply_size);

      return_error (task,
                    kaged_provider_error_new (KAGED_RETRY_CLASS_PROTOCOL_ERROR,
                                              _("The provider’s reply went on past %s"),
                                              cap));
      return FALSE;
    }

  if (!decoder->recognized && state->unrecognized->len < UNRECOGNIZED_MAX)
    g_byte_array_append (state->unrecognized, (const guint8 *)data,
                         MIN (size, UNRECOGNIZED_MAX - state->unrecognized->len));

  if (!decoder->feed (decoder, data, size, &error))
    {
      return_error (task, g_steal_pointer (&error));
      return FALSE;
    }

  /* The reply is complete at its end marker: a server that keeps the
   * connection open after it must not keep the caller waiting. */
  if (decoder->done)
    {
      return_success (task);
      return FALSE;
    }

  /* A ::delta handler may have cancelled. */
  if (g_cancellable_is_cancelled (state->caller))
    {
      return_error (task, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED, _("Cancelled")));
      return FALSE;
    }

  return TRUE;
}

/* Progress is a line completed, not a byte that came. */
static gboolean
completes_line (const char *data,
                gsize       size)
{
  return memchr (data, '\n', size) != NULL || memchr (data, '\r', size) != NULL;
}

/* Takes what else of the body has already come, without waiting for
 * more. Returns %FALSE when that ended the call; @taken and @progress
 * say whether anything came and whether it completed a line. */
static gboolean
take_available (GTask    *task,
                gboolean *taken,
                gboolean *progress)
{
  Stream *state = g_task_get_task_data (task);
  GPollableInputStream *pollable;
  gsize total = 0;

  if (!G_IS_POLLABLE_INPUT_STREAM (state->stream) ||
      !g_pollable_input_stream_can_poll (G_POLLABLE_INPUT_STREAM (state->stream)))
    return TRUE;

  pollable = G_POLLABLE_INPUT_STREAM (state->stream);
  if (state->buffer == NULL)
    state->buffer = g_malloc (KAGED_HTTP_READ_SIZE);

  while (total < BATCH_MAX_BYTES)
    {
      g_autoptr(GError) error = NULL;
      gssize n;

      n = g_pollable_input_stream_read_nonblocking (pollable, state->buffer, KAGED_HTTP_READ_SIZE,
                                                    state->cancellable, &error);
      if (n < 0 && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
        break;
      if (n < 0)
        {
          return_transport_error (task, error);
          return FALSE;
        }
      if (n == 0)
        {
          state->at_end = TRUE;
          end_of_body (task);
          return FALSE;
        }

      *taken = TRUE;
      *progress = *progress || completes_line ((const char *)state->buffer, n);
      total += n;
      if (!consume (task, (const char *)state->buffer, n))
        return FALSE;
    }

  return TRUE;
}

static gboolean
pause_cb (gpointer user_data)
{
  GTask *task = user_data;
  Stream *state = g_task_get_task_data (task);
  gboolean taken = FALSE;
  gboolean progress = FALSE;

  g_clear_pointer (&state->pause, g_source_unref);

  if (!take_available (task, &taken, &progress))
    return G_SOURCE_REMOVE;

  if (taken)
    {
      /* Still coming fast: gather again. */
      pause_then_read (g_object_ref (task), progress);
      return G_SOURCE_REMOVE;
    }

  read_next (g_object_ref (task), FALSE);

  return G_SOURCE_REMOVE;
}

/*
 * A fast model sends an event every few milliseconds. Read one by one,
 * each would wake the main loop, where the window draws its frames;
 * instead, after each read the rest of the body is gathered once a short
 * pause has let a few more events come, and the next wait for data
 * starts only when a pause found none.
 */
static void
pause_then_read (GTask    *task,
                 gboolean  progress)
{
  Stream *state = g_task_get_task_data (task);

  if (progress || state->deadline == NULL)
    arm_deadline (state, state->idle_timeout_ms);

  g_assert (state->pause == NULL);
  state->pause = g_timeout_source_new (BATCH_PAUSE_MS);
  g_source_set_static_name (state->pause, "[kaged] http gather");
  g_source_set_priority (state->pause, KAGED_RUN_PRIORITY);
  g_source_set_callback (state->pause, pause_cb, task, g_object_unref);
  g_source_attach (state->pause, g_main_context_get_thread_default ());
}

static void
body_read_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GError) error = NULL;
  gboolean taken = FALSE;
  gboolean progress;
  const char *data;
  gsize size;

  bytes = g_input_stream_read_bytes_finish (G_INPUT_STREAM (object), result, &error);

  if (bytes == NULL)
    {
      return_transport_error (task, error);
      return;
    }

  data = g_bytes_get_data (bytes, &size);
  if (size == 0)
    {
      Stream *state = g_task_get_task_data (task);

      state->at_end = TRUE;
      end_of_body (task);
      return;
    }

  if (!consume (task, data, size))
    return;
  progress = completes_line (data, size);

  if (!take_available (task, &taken, &progress))
    return;

  pause_then_read (g_steal_pointer (&task), progress);
}

static void
read_next (GTask    *task,
           gboolean  progress)
{
  Stream *state = g_task_get_task_data (task);

  if (progress || state->deadline == NULL)
    arm_deadline (state, state->idle_timeout_ms);
  g_input_stream_read_bytes_async (state->stream, KAGED_HTTP_READ_SIZE,
                                   KAGED_RUN_PRIORITY, state->cancellable,
                                   body_read_cb, task);
}

static void
send_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  Stream *state = g_task_get_task_data (task);
  g_autoptr(GError) error = NULL;

  disarm_deadline (state);

  state->stream = soup_session_send_finish (SOUP_SESSION (object), result, &error);
  if (state->stream == NULL)
    {
      return_transport_error (task, error);
      return;
    }

  state->status = soup_message_get_status (state->message);
  state->decoder->headers =
    soup_message_headers_ref (soup_message_get_response_headers (state->message));

  g_debug ("HTTP %u from %s", state->status,
           g_uri_get_host (soup_message_get_uri (state->message)));

  if (state->status < 200 || state->status >= 300)
    {
      state->phase = PHASE_ERROR_BODY;
      state->error_body = g_byte_array_new ();
      arm_deadline (state, state->idle_timeout_ms);
      g_input_stream_read_bytes_async (state->stream, KAGED_HTTP_READ_SIZE,
                                       KAGED_RUN_PRIORITY, state->cancellable,
                                       error_body_read_cb, g_steal_pointer (&task));
      return;
    }

  state->phase = PHASE_BODY;
  state->unrecognized = g_byte_array_new ();
  read_next (g_steal_pointer (&task), TRUE);
}

/**
 * kaged_http_stream:
 * @config: the provider's configuration
 * @message: (transfer none): the request, headers and body set
 * @decoder: (transfer full): reads the provider's stream format
 * @task: (transfer full): completed with %TRUE, a %KAGED_PROVIDER_ERROR
 *   or %G_IO_ERROR_CANCELLED; its cancellable is the caller's
 *
 * Sends @message and streams the answer through @decoder.
 */
void
kaged_http_stream (KagedHttpConfig    *config,
                   SoupMessage        *message,
                   KagedStreamDecoder *decoder,
                   GTask              *task)
{
  Stream *state;

  g_return_if_fail (config != NULL);
  g_return_if_fail (SOUP_IS_MESSAGE (message));
  g_return_if_fail (decoder != NULL);
  g_return_if_fail (G_IS_TASK (task));

  state = g_new0 (Stream, 1);
  state->session = g_object_ref (config->session != NULL ? config->session
                                                         : kaged_http_get_default_session ());
  state->message = g_object_ref (message);
  state->decoder = decoder;
  state->clock = g_object_ref (decoder->clock);
  state->api_key = g_strdup (config->api_key);
  state->first_byte_timeout_ms = config->first_byte_timeout_ms;
  state->idle_timeout_ms = config->idle_timeout_ms;
  state->max_duration_ms = config->max_duration_ms;
  state->max_reply_size = config->max_reply_size;
  state->max_error_body = config->max_error_body;
  state->cancellable = g_cancellable_new ();
  state->phase = PHASE_SEND;
  g_task_set_task_data (task, state, (GDestroyNotify)stream_free);

  if (g_task_get_cancellable (task) != NULL)
    {
      state->caller = g_object_ref (g_task_get_cancellable (task));
      state->caller_handler = g_cancellable_connect (state->caller,
                                                     G_CALLBACK (caller_cancelled_cb),
                                                     g_object_ref (state->cancellable),
                                                     g_object_unref);
    }

  g_debug ("POST %s (model %s)",
           g_uri_get_path (soup_message_get_uri (message)),
           config->model != NULL ? config->model : "");

  state->overall = g_timeout_source_new (state->max_duration_ms);
  g_source_set_static_name (state->overall, "[kaged] http answer deadline");
  g_source_set_callback (state->overall, overall_cb, state, NULL);
  g_source_attach (state->overall, g_main_context_get_thread_default ());

  arm_deadline (state, state->first_byte_timeout_ms);
  soup_session_send_async (state->session, message, KAGED_RUN_PRIORITY, state->cancellable,
                           send_cb, task);
}
