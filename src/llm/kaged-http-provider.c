/* kaged-http-provider.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-http-provider"

#include "config.h"

#include <string.h>

#include "kaged-http-provider.h"
#include "kaged-sse-parser.h"

/**
 * KagedHttpProvider:
 *
 * The base of the providers that stream a chat reply over HTTP. It holds
 * what they all need (the shared session, base URL, model, key, clock,
 * deadlines and the cap on one event) and makes the call: a JSON POST to
 * the subclass's path, its headers added, the answer read through the
 * subclass's stream decoder by kaged_http_stream().
 *
 * The key is write-only: it can be given, never read back, and it is
 * wiped from memory when replaced or when the provider goes.
 */
typedef struct
{
  KagedHttpConfig config;
} KagedHttpProviderPrivate;

static void provider_iface_init (KagedProviderInterface *iface);

G_DEFINE_ABSTRACT_TYPE_WITH_CODE (KagedHttpProvider, kaged_http_provider, G_TYPE_OBJECT,
                                  G_ADD_PRIVATE (KagedHttpProvider)
                                  G_IMPLEMENT_INTERFACE (KAGED_TYPE_PROVIDER, provider_iface_init))

enum {
  PROP_0,
  PROP_SESSION,
  PROP_BASE_URL,
  PROP_MODEL,
  PROP_API_KEY,
  PROP_CLOCK,
  PROP_FIRST_BYTE_TIMEOUT_MS,
  PROP_IDLE_TIMEOUT_MS,
  PROP_MAX_EVENT_SIZE,
  PROP_MAX_DURATION_MS,
  PROP_MAX_REPLY_SIZE,
  PROP_MAX_ERROR_BODY_SIZE,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static JsonBuilder *
build_body (KagedHttpProvider *self,
            KagedChat         *chat)
{
  KagedHttpProviderPrivate *priv = kaged_http_provider_get_instance_private (self);
  g_autoptr(JsonBuilder) builder = json_builder_new ();

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "model");
  json_builder_add_string_value (builder, priv->config.model != NULL ? priv->config.model : "");
  KAGED_HTTP_PROVIDER_GET_CLASS (self)->add_body (self, chat, builder);
  json_builder_end_object (builder);

  return g_steal_pointer (&builder);
}

static void
kaged_http_provider_chat_async (KagedProvider       *provider,
                                KagedChat           *chat,
                                GCancellable        *cancellable,
                                GAsyncReadyCallback  callback,
                                gpointer             user_data)
{
  KagedHttpProvider *self = KAGED_HTTP_PROVIDER (provider);
  KagedHttpProviderPrivate *priv = kaged_http_provider_get_instance_private (self);
  KagedHttpProviderClass *klass = KAGED_HTTP_PROVIDER_GET_CLASS (self);
  g_autoptr(GTask) task = NULL;
  g_autoptr(JsonBuilder) body = NULL;
  g_autoptr(SoupMessage) message = NULL;
  g_autoptr(GError) error = NULL;

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_http_provider_chat_async);

  body = build_body (self, chat);
  message = kaged_http_config_new_message (&priv->config, klass->path, body, klass->accept, &error);
  if (message == NULL)
    {
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }

  klass->add_headers (self, soup_message_get_request_headers (message), priv->config.api_key);

  kaged_http_stream (&priv->config, message,
                     klass->new_decoder (chat, priv->config.clock, priv->config.max_event_size),
                     g_steal_pointer (&task));
}

static gboolean
kaged_http_provider_chat_finish (KagedProvider  *provider,
                                 GAsyncResult   *result,
                                 GError        **error)
{
  g_return_val_if_fail (g_task_is_valid (result, provider), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_http_provider_chat_async, FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

static void
provider_iface_init (KagedProviderInterface *iface)
{
  iface->chat_async = kaged_http_provider_chat_async;
  iface->chat_finish = kaged_http_provider_chat_finish;
}

/* The key as a bearer token, wiped once it is in the headers. */
static void
kaged_http_provider_real_add_headers (KagedHttpProvider  *self,
                                      SoupMessageHeaders *headers,
                                      const char         *api_key)
{
  g_autofree char *bearer = NULL;

  if (api_key == NULL)
    return;

  bearer = g_strconcat ("Bearer ", api_key, NULL);
  soup_message_headers_replace (headers, "Authorization", bearer);
  memset (bearer, 0, strlen (bearer));
}

static void
kaged_http_provider_finalize (GObject *object)
{
  KagedHttpProvider *self = (KagedHttpProvider *)object;
  KagedHttpProviderPrivate *priv = kaged_http_provider_get_instance_private (self);

  kaged_http_config_clear (&priv->config);

  G_OBJECT_CLASS (kaged_http_provider_parent_class)->finalize (object);
}

static void
kaged_http_provider_get_property (GObject    *object,
                                  guint       prop_id,
                                  GValue     *value,
                                  GParamSpec *pspec)
{
  KagedHttpProvider *self = KAGED_HTTP_PROVIDER (object);
  KagedHttpProviderPrivate *priv = kaged_http_provider_get_instance_private (self);

  switch (prop_id)
    {
    case PROP_SESSION:
      g_value_set_object (value, priv->config.session);
      break;

    case PROP_BASE_URL:
      g_value_set_string (value, priv->config.base_url);
      break;

    case PROP_MODEL:
      g_value_set_string (value, priv->config.model);
      break;

    case PROP_CLOCK:
      g_value_set_object (value, priv->config.clock);
      break;

    case PROP_FIRST_BYTE_TIMEOUT_MS:
      g_value_set_uint (value, priv->config.first_byte_timeout_ms);
      break;

    case PROP_IDLE_TIMEOUT_MS:
      g_value_set_uint (value, priv->config.idle_timeout_ms);
      break;

    case PROP_MAX_EVENT_SIZE:
      g_value_set_uint64 (value, priv->config.max_event_size);
      break;

    case PROP_MAX_DURATION_MS:
      g_value_set_uint (value, priv->config.max_duration_ms);
      break;

    case PROP_MAX_REPLY_SIZE:
      g_value_set_uint64 (value, priv->config.max_reply_size);
      break;

    case PROP_MAX_ERROR_BODY_SIZE:
      g_value_set_uint64 (value, priv->config.max_error_body);
      break;

    case PROP_API_KEY:
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
set_uint (GObject    *object,
          guint      *field,
          guint       value,
          GParamSpec *pspec)
{
  if (*field != value)
    {
      *field = value;
      g_object_notify_by_pspec (object, pspec);
    }
}

static void
set_size (GObject    *object,
          gsize      *field,
          guint64     value,
          GParamSpec *pspec)
{
  if (*field != value)
    {
      *field = value;
      g_object_notify_by_pspec (object, pspec);
    }
}

static void
kaged_http_provider_set_property (GObject      *object,
                                  guint         prop_id,
                                  const GValue *value,
                                  GParamSpec   *pspec)
{
  KagedHttpProvider *self = KAGED_HTTP_PROVIDER (object);
  KagedHttpProviderPrivate *priv = kaged_http_provider_get_instance_private (self);

  switch (prop_id)
    {
    case PROP_SESSION:
      g_set_object (&priv->config.session, g_value_get_object (value));
      break;

    case PROP_BASE_URL:
      kaged_http_config_set_base_url (&priv->config, g_value_get_string (value));
      break;

    case PROP_MODEL:
      g_free (priv->config.model);
      priv->config.model = g_value_dup_string (value);
      break;

    case PROP_API_KEY:
      kaged_http_config_set_api_key (&priv->config, g_value_get_string (value));
      break;

    case PROP_CLOCK:
      if (g_set_object (&priv->config.clock, g_value_get_object (value)))
        g_object_notify_by_pspec (object, pspec);
      break;

    case PROP_FIRST_BYTE_TIMEOUT_MS:
      set_uint (object, &priv->config.first_byte_timeout_ms, g_value_get_uint (value), pspec);
      break;

    case PROP_IDLE_TIMEOUT_MS:
      set_uint (object, &priv->config.idle_timeout_ms, g_value_get_uint (value), pspec);
      break;

    case PROP_MAX_EVENT_SIZE:
      set_size (object, &priv->config.max_event_size, g_value_get_uint64 (value), pspec);
      break;

    case PROP_MAX_DURATION_MS:
      set_uint (object, &priv->config.max_duration_ms, g_value_get_uint (value), pspec);
      break;

    case PROP_MAX_REPLY_SIZE:
      set_size (object, &priv->config.max_reply_size, g_value_get_uint64 (value), pspec);
      break;

    case PROP_MAX_ERROR_BODY_SIZE:
      set_size (object, &priv->config.max_error_body, g_value_get_uint64 (value), pspec);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_http_provider_class_init (KagedHttpProviderClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = kaged_http_provider_finalize;
  object_class->get_property = kaged_http_provider_get_property;
  object_class->set_property = kaged_http_provider_set_property;

  klass->add_headers = kaged_http_provider_real_add_headers;

  /**
   * KagedHttpProvider:session:
   *
   * The session to send with, or %NULL for the application's.
   */
  properties [PROP_SESSION] =
    g_param_spec_object ("session", NULL, NULL,
                         SOUP_TYPE_SESSION,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));

  /**
   * KagedHttpProvider:base-url:
   *
   * Where the API is; trailing slashes are dropped.
   */
  properties [PROP_BASE_URL] =
    g_param_spec_string ("base-url", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));

  /**
   * KagedHttpProvider:model:
   *
   * The model asked for.
   */
  properties [PROP_MODEL] =
    g_param_spec_string ("model", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));

  /**
   * KagedHttpProvider:api-key:
   *
   * The key, kept in memory only. Write-only: it can be given, never
   * read back.
   */
  properties [PROP_API_KEY] =
    g_param_spec_string ("api-key", NULL, NULL,
                         NULL,
                         (G_PARAM_WRITABLE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));

  /**
   * KagedHttpProvider:clock:
   *
   * Dates the waits servers advise; %NULL for the system clock.
   */
  properties [PROP_CLOCK] =
    g_param_spec_object ("clock", NULL, NULL,
                         KAGED_TYPE_CLOCK,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  /**
   * KagedHttpProvider:first-byte-timeout-ms:
   *
   * How long to wait for the answer's headers.
   */
  properties [PROP_FIRST_BYTE_TIMEOUT_MS] =
    g_param_spec_uint ("first-byte-timeout-ms", NULL, NULL,
                       1, G_MAXUINT, KAGED_HTTP_DEFAULT_DEADLINE_MS,
                       (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  /**
   * KagedHttpProvider:idle-timeout-ms:
   *
   * How long the answer's body may go without progress: without a line
   * completed (bytes that never make a line do not count), and, for an
   * error body, how long all of it may take.
   */
  properties [PROP_IDLE_TIMEOUT_MS] =
    g_param_spec_uint ("idle-timeout-ms", NULL, NULL,
                       1, G_MAXUINT, KAGED_HTTP_DEFAULT_DEADLINE_MS,
                       (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  /**
   * KagedHttpProvider:max-event-size:
   *
   * The cap on one SSE event or NDJSON line.
   */
  properties [PROP_MAX_EVENT_SIZE] =
    g_param_spec_uint64 ("max-event-size", NULL, NULL,
                         1, G_MAXSIZE, KAGED_STREAM_PARSER_DEFAULT_MAX_SIZE,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  /**
   * KagedHttpProvider:max-duration-ms:
   *
   * How long the whole answer may take, from sending the request to the
   * end of the reply, however steadily it comes.
   */
  properties [PROP_MAX_DURATION_MS] =
    g_param_spec_uint ("max-duration-ms", NULL, NULL,
                       1, G_MAXUINT, KAGED_HTTP_MAX_DURATION_MS,
                       (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  /**
   * KagedHttpProvider:max-reply-size:
   *
   * The cap on the bytes of a streamed reply.
   */
  properties [PROP_MAX_REPLY_SIZE] =
    g_param_spec_uint64 ("max-reply-size", NULL, NULL,
                         1, G_MAXSIZE, KAGED_HTTP_MAX_REPLY_SIZE,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  /**
   * KagedHttpProvider:max-error-body-size:
   *
   * How much of an error body is read to classify it; the rest is not.
   */
  properties [PROP_MAX_ERROR_BODY_SIZE] =
    g_param_spec_uint64 ("max-error-body-size", NULL, NULL,
                         1, G_MAXSIZE, KAGED_HTTP_MAX_ERROR_BODY,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_http_provider_init (KagedHttpProvider *self)
{
  KagedHttpProviderPrivate *priv = kaged_http_provider_get_instance_private (self);

  kaged_http_config_init (&priv->config);
}

/**
 * kaged_http_provider_new:
 * @type: a subclass of #KagedHttpProvider
 * @session: (nullable): the shared session, or %NULL for the default one
 * @base_url: where the API is
 * @model: (nullable): the model name
 * @api_key: (nullable): the key, when the provider needs one
 *
 * Returns: (transfer full): a new provider of @type
 */
KagedProvider *
kaged_http_provider_new (GType        type,
                         SoupSession *session,
                         const char  *base_url,
                         const char  *model,
                         const char  *api_key)
{
  g_return_val_if_fail (g_type_is_a (type, KAGED_TYPE_HTTP_PROVIDER), NULL);
  g_return_val_if_fail (!session || SOUP_IS_SESSION (session), NULL);
  g_return_val_if_fail (base_url != NULL, NULL);

  return g_object_new (type,
                       "session", session,
                       "base-url", base_url,
                       "model", model,
                       "api-key", api_key,
                       NULL);
}
