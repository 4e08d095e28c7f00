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
 * A non-2xx answer has its body read (bounded) and classified. Our own
 * deadlines (until the headers, between two body reads) cancel that
 * cancellable and report a timeout; the caller's cancellable reports
 * G_IO_ERROR_CANCELLED, whatever else happened.
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
  config->max_event_size = KAGED_STREAM_PARSER_DEFAULT_MAX_SIZE;
}

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

/**
 * kaged_http_config_install_properties:
 * @pspecs: the class's property array; its entries 1 to
 *   %KAGED_HTTP_N_PROPS - 1 are filled and installed
 */
void
kaged_http_config_install_properties (GObjectClass  *klass,
                                      GParamSpec   **pspecs)
{
  pspecs [KAGED_HTTP_PROP_SESSION] =
    g_param_spec_object ("session", NULL, NULL,
                         SOUP_TYPE_SESSION,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));
  pspecs [KAGED_HTTP_PROP_BASE_URL] =
    g_param_spec_string ("base-url", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));
  pspecs [KAGED_HTTP_PROP_MODEL] =
    g_param_spec_string ("model", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));
  /* Write-only: the key can be given, never read back. */
  pspecs [KAGED_HTTP_PROP_API_KEY] =
    g_param_spec_string ("api-key", NULL, NULL,
                         NULL,
                         (G_PARAM_WRITABLE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));
  pspecs [KAGED_HTTP_PROP_CLOCK] =
    g_param_spec_object ("clock", NULL, NULL,
                         KAGED_TYPE_CLOCK,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));
  pspecs [KAGED_HTTP_PROP_FIRST_BYTE_TIMEOUT_MS] =
    g_param_spec_uint ("first-byte-timeout-ms", NULL, NULL,
                       1, G_MAXUINT, KAGED_HTTP_DEFAULT_DEADLINE_MS,
                       (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));
  pspecs [KAGED_HTTP_PROP_IDLE_TIMEOUT_MS] =
    g_param_spec_uint ("idle-timeout-ms", NULL, NULL,
                       1, G_MAXUINT, KAGED_HTTP_DEFAULT_DEADLINE_MS,
                       (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));
  pspecs [KAGED_HTTP_PROP_MAX_EVENT_SIZE] =
    g_param_spec_uint64 ("max-event-size", NULL, NULL,
                         1, G_MAXSIZE, KAGED_STREAM_PARSER_DEFAULT_MAX_SIZE,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  for (guint i = KAGED_HTTP_PROP_SESSION; i < KAGED_HTTP_N_PROPS; i++)
    g_object_class_install_property (klass, i, pspecs [i]);
}

gboolean
kaged_http_config_get_property (KagedHttpConfig *config,
                                guint            prop_id,
                                GValue          *value)
{
  switch (prop_id)
    {
    case KAGED_HTTP_PROP_SESSION:
      g_value_set_object (value, config->session);
      return TRUE;

    case KAGED_HTTP_PROP_BASE_URL:
      g_value_set_string (value, config->base_url);
      return TRUE;

    case KAGED_HTTP_PROP_MODEL:
      g_value_set_string (value, config->model);
      return TRUE;

    case KAGED_HTTP_PROP_CLOCK:
      g_value_set_object (value, config->clock);
      return TRUE;

    case KAGED_HTTP_PROP_FIRST_BYTE_TIMEOUT_MS:
      g_value_set_uint (value, config->first_byte_timeout_ms);
      return TRUE;

    case KAGED_HTTP_PROP_IDLE_TIMEOUT_MS:
      g_value_set_uint (value, config->idle_timeout_ms);
      return TRUE;

    case KAGED_HTTP_PROP_MAX_EVENT_SIZE:
      g_value_set_uint64 (value, config->max_event_size);
      return TRUE;

    default:
      return FALSE;
    }
}

gboolean
kaged_http_config_set_property (KagedHttpConfig  *config,
                                GObject          *object,
                                GParamSpec      **pspecs,
                                guint             prop_id,
                                const GValue     *value)
{
  switch (prop_id)
    {
    case KAGED_HTTP_PROP_SESSION:
      g_set_object (&config->session, g_value_get_object (value));
      return TRUE;

    case KAGED_HTTP_PROP_BASE_URL:
      {
        g_autofree char *url = g_value_dup_string (value);
        gsize len = url != NULL ? strlen (url) : 0;

        while (len > 0 && url[len - 1] == '/')
          url[--len] = '\0';
        g_free (config->base_url);
        config->base_url = g_steal_pointer (&url);
      }
      return TRUE;

    case KAGED_HTTP_PROP_MODEL:
      g_free (config->model);
      config->model = g_value_dup_string (value);
      return TRUE;

    case KAGED_HTTP_PROP_API_KEY:
      forget_key (&config->api_key);
      if (g_value_get_string (value) != NULL && g_value_get_string (value)[0] != '\0')
        config->api_key = g_value_dup_string (value);
      return TRUE;

    case KAGED_HTTP_PROP_CLOCK:
      if (g_set_object (&config->clock, g_value_get_object (value)))
        g_object_notify_by_pspec (object, pspecs [prop_id]);
      return TRUE;

    case KAGED_HTTP_PROP_FIRST_BYTE_TIMEOUT_MS:
      if (config->first_byte_timeout_ms != g_value_get_uint (value))
        {
          config->first_byte_timeout_ms = g_value_get_uint (value);
          g_object_notify_by_pspec (object, pspecs [prop_id]);
        }
      return TRUE;

    case KAGED_HTTP_PROP_IDLE_TIMEOUT_MS:
      if (config->idle_timeout_ms != g_value_get_uint (value))
        {
          config->idle_timeout_ms = g_value_get_uint (value);
          g_object_notify_by_pspec (object, pspecs [prop_id]);
        }
      return TRUE;

    case KAGED_HTTP_PROP_MAX_EVENT_SIZE:
      if (config->max_event_size != g_value_get_uint64 (value))
        {
          config->max_event_size = g_value_get_uint64 (value);
          g_object_notify_by_pspec (object, pspecs [prop_id]);
        }
      return TRUE;

    default:
      return FALSE;
    }
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

  json_generator_set_root (generator, root);
  json = json_generator_to_data (generator, &len);
  bytes = g_bytes_new_take (g_steal_pointer (&json), len);
  soup_message_set_request_body_from_bytes (message, "application/json", bytes);
  soup_message_headers_replace (soup_message_get_request_headers (message), "Accept", accept);

  return message;
}

void
kaged_stream_decoder_init (KagedStreamDecoder *self,
                           KagedChat          *chat,
                           KagedClock         *clock)
{
  self->chat = g_object_ref (chat);
  self->clock = clock != NULL ? g_object_ref (clock) : g_object_ref (kaged_clock_get_default ());
  self->headers = NULL;
  self->done = FALSE;
  self->recognized = FALSE;
}

void
kaged_stream_decoder_clear (KagedStreamDecoder *self)
{
  g_clear_object (&self->chat);
  g_clear_object (&self->clock);
  g_clear_pointer (&self->headers, soup_message_headers_unref);
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

JsonObject *
kaged_json_get_object (JsonObject *object,
                       const char *name)
{
  JsonNode *node = object != NULL ? json_object_get_member (object, name) : NULL;

  return node != NULL && JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
}

JsonArray *
kaged_json_get_array (JsonObject *object,
                      const char *name)
{
  JsonNode *node = object != NULL ? json_object_get_member (object, name) : NULL;

  return node != NULL && JSON_NODE_HOLDS_ARRAY (node) ? json_node_get_array (node) : NULL;
}

const char *
kaged_json_get_string (JsonObject *object,
                       const char *name)
{
  JsonNode *node = object != NULL ? json_object_get_member (object, name) : NULL;

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_STRING)
    return NULL;
  return json_node_get_string (node);
}

gboolean
kaged_json_get_int (JsonObject *object,
                    const char *name,
                    gint64     *value)
{
  JsonNode *node = object != NULL ? json_object_get_member (object, name) : NULL;

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node))
    return FALSE;

  switch (json_node_get_value_type (node))
    {
    case G_TYPE_INT64:
      *value = json_node_get_int (node);
      return TRUE;

    case G_TYPE_DOUBLE:
      *value = (gint64)json_node_get_double (node);
      return TRUE;

    default:
      return FALSE;
    }
}

gboolean
kaged_json_get_bool (JsonObject *object,
                     const char *name)
{
  JsonNode *node = object != NULL ? json_object_get_member (object, name) : NULL;

  return node != NULL && JSON_NODE_HOLDS_VALUE (node) &&
         json_node_get_value_type (node) == G_TYPE_BOOLEAN &&
         json_node_get_boolean (node);
}

/**
 * kaged_json_parse_object:
 *
 * Returns: (transfer none) (nullable): the root object of @data, owned by
 *   @parser; %NULL with a protocol_error when @data is not a JSON object
 */
JsonObject *
kaged_json_parse_object (JsonParser  *parser,
                         const char  *data,
                         gsize        len,
                         GError     **error)
{
  g_autofree char *repaired = NULL;
  JsonNode *root;

  /* Invalid UTF-8 is repaired here so one bad byte does not lose the event. */
  if (!g_utf8_validate_len (data, len, NULL))
    {
      repaired = g_utf8_make_valid (data, len);
      data = repaired;
      len = strlen (repaired);
    }

  if (len > G_MAXSSIZE || !json_parser_load_from_data (parser, data, len, NULL) ||
      (root = json_parser_get_root (parser)) == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_propagate_error (error,
                         kaged_provider_error_new (KAGED_RETRY_CLASS_PROTOCOL_ERROR,
                                                   _("The provider sent a piece of its reply that is not a JSON object")));
      return NULL;
    }

  return json_node_get_object (root);
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

/* How much of a body that is not a stream is kept to classify it. */
#define UNRECOGNIZED_MAX (64 * 1024)

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
  GByteArray         *error_body;
  GByteArray         *unrecognized;
  guint               first_byte_timeout_ms;
  guint               idle_timeout_ms;
  guint               status;
  gsize               received;
  Phase               phase;
  guint               timed_out : 1;
} Stream;

static void
stream_free (Stream *state)
{
  if (state->deadline != NULL)
    {
      g_source_destroy (state->deadline);
      g_clear_pointer (&state->deadline, g_source_unref);
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
  g_free (state);
}

static void read_next (GTask *task);

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

  disarm_deadline (state);

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

  if (state->timed_out && g_error_matches (cause, G_IO_ERROR, G_IO_ERROR_CANCELLED))
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

  disarm_deadline (state);

  if (g_cancellable_is_cancelled (state->caller))
    {
      g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "%s", _("Cancelled"));
      return;
    }

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

  disarm_deadline (state);

  bytes = g_input_stream_read_bytes_finish (G_INPUT_STREAM (object), result, &error);

  if (bytes != NULL && g_bytes_get_size (bytes) > 0 &&
      state->error_body->len < KAGED_HTTP_MAX_ERROR_BODY)
    {
      gsize size = g_bytes_get_size (bytes);
      gsize room = KAGED_HTTP_MAX_ERROR_BODY - state->error_body->len;

      g_byte_array_append (state->error_body, g_bytes_get_data (bytes, NULL), MIN (size, room));
      if (size <= room)
        {
          arm_deadline (state, state->idle_timeout_ms);
          g_input_stream_read_bytes_async (state->stream, KAGED_HTTP_READ_SIZE,
                                           G_PRIORITY_DEFAULT, state->cancellable,
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

static void
body_read_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  Stream *state = g_task_get_task_data (task);
  KagedStreamDecoder *decoder = state->decoder;
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GError) error = NULL;
  gsize size;

  disarm_deadline (state);

  bytes = g_input_stream_read_bytes_finish (G_INPUT_STREAM (object), result, &error);

  if (bytes == NULL)
    {
      return_transport_error (task, error);
      return;
    }

  size = g_bytes_get_size (bytes);
  if (size == 0)
    {
      end_of_body (task);
      return;
    }

  state->received += size;

  if (!decoder->recognized && state->unrecognized->len < UNRECOGNIZED_MAX)
    g_byte_array_append (state->unrecognized, g_bytes_get_data (bytes, NULL),
                         MIN (size, UNRECOGNIZED_MAX - state->unrecognized->len));

  if (!decoder->feed (decoder, g_bytes_get_data (bytes, NULL), size, &error))
    {
      return_error (task, g_steal_pointer (&error));
      return;
    }

  /* The reply is complete at its end marker: a server that keeps the
   * connection open after it must not keep the caller waiting. */
  if (decoder->done)
    {
      return_success (task);
      return;
    }

  /* A ::delta handler may have cancelled. */
  if (g_cancellable_is_cancelled (state->caller))
    {
      return_error (task, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED, _("Cancelled")));
      return;
    }

  read_next (g_steal_pointer (&task));
}

static void
read_next (GTask *task)
{
  Stream *state = g_task_get_task_data (task);

  arm_deadline (state, state->idle_timeout_ms);
  g_input_stream_read_bytes_async (state->stream, KAGED_HTTP_READ_SIZE,
                                   G_PRIORITY_DEFAULT, state->cancellable,
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
                                       G_PRIORITY_DEFAULT, state->cancellable,
                                       error_body_read_cb, g_steal_pointer (&task));
      return;
    }

  state->phase = PHASE_BODY;
  state->unrecognized = g_byte_array_new ();
  read_next (g_steal_pointer (&task));
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

  arm_deadline (state, state->first_byte_timeout_ms);
  soup_session_send_async (state->session, message, G_PRIORITY_DEFAULT, state->cancellable,
                           send_cb, task);
}
