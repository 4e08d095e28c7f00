/* kaged-provider.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-provider"

#include "config.h"

#include "kaged-provider.h"
#include "kaged-retry-class.h"

/*
 * The classification a provider error carries beyond its code. The code is
 * the KagedRetryClass; everything here has a "none" value so an error made
 * from a bare class (a refused connection) still answers every getter.
 */
typedef struct
{
  gboolean  retryable;
  gint64    retry_after_until;
  guint     http_status;
  char     *request_id;
  char     *provider_message;
  gint64    server_wait_ms;
  char     *wait_source;
  int       should_retry;
} KagedProviderErrorPrivate;

static void
kaged_provider_error_private_init (KagedProviderErrorPrivate *priv)
{
  priv->retryable = FALSE;
  priv->retry_after_until = 0;
  priv->http_status = 0;
  priv->request_id = NULL;
  priv->provider_message = NULL;
  priv->server_wait_ms = -1;
  priv->wait_source = NULL;
  priv->should_retry = -1;
}

static void
kaged_provider_error_private_copy (const KagedProviderErrorPrivate *src,
                                   KagedProviderErrorPrivate       *dest)
{
  dest->retryable = src->retryable;
  dest->retry_after_until = src->retry_after_until;
  dest->http_status = src->http_status;
  dest->request_id = g_strdup (src->request_id);
  dest->provider_message = g_strdup (src->provider_message);
  dest->server_wait_ms = src->server_wait_ms;
  dest->wait_source = g_strdup (src->wait_source);
  dest->should_retry = src->should_retry;
}

static void
kaged_provider_error_private_clear (KagedProviderErrorPrivate *priv)
{
  g_clear_pointer (&priv->request_id, g_free);
  g_clear_pointer (&priv->provider_message, g_free);
  g_clear_pointer (&priv->wait_source, g_free);
}

G_DEFINE_EXTENDED_ERROR (KagedProviderError, kaged_provider_error)

/**
 * kaged_provider_error_new:
 * @retry_class: the classification, which becomes the error code
 * @format: printf()-style format for the message shown to people
 *
 * Creates a %KAGED_PROVIDER_ERROR whose `retryable` flag is the table
 * default of @retry_class (kaged_retry_class_is_retryable()). No HTTP
 * status, request id, server wait or x-should-retry answer is set.
 *
 * Returns: (transfer full): a new #GError
 */
GError *
kaged_provider_error_new (KagedRetryClass  retry_class,
                          const char      *format,
                          ...)
{
  GError *error;
  va_list args;

  g_return_val_if_fail (retry_class <= KAGED_RETRY_CLASS_INTERRUPTED, NULL);
  g_return_val_if_fail (format != NULL, NULL);

  va_start (args, format);
  error = g_error_new_valist (KAGED_PROVIDER_ERROR, retry_class, format, args);
  va_end (args);

  kaged_provider_error_get_private (error)->retryable = kaged_retry_class_is_retryable (retry_class);

  return error;
}

#define PRIV_OR_RETURN(error, val)                                               \
  G_STMT_START {                                                                 \
    g_return_val_if_fail (error != NULL, val);                                   \
    g_return_val_if_fail (error->domain == KAGED_PROVIDER_ERROR, val);           \
  } G_STMT_END

#define PRIV_OR_RETURN_VOID(error)                                               \
  G_STMT_START {                                                                 \
    g_return_if_fail (error != NULL);                                            \
    g_return_if_fail (error->domain == KAGED_PROVIDER_ERROR);                    \
  } G_STMT_END

KagedRetryClass
kaged_provider_error_get_retry_class (const GError *error)
{
  PRIV_OR_RETURN (error, KAGED_RETRY_CLASS_NONE);
  return (KagedRetryClass)error->code;
}

gboolean
kaged_provider_error_get_retryable (const GError *error)
{
  PRIV_OR_RETURN (error, FALSE);
  return kaged_provider_error_get_private (error)->retryable;
}

void
kaged_provider_error_set_retryable (GError   *error,
                                    gboolean  retryable)
{
  PRIV_OR_RETURN_VOID (error);
  kaged_provider_error_get_private (error)->retryable = !!retryable;
}

/**
 * kaged_provider_error_get_retry_after_until:
 *
 * Returns: epoch milliseconds before which a retry makes no sense, or 0
 *   when unknown
 */
gint64
kaged_provider_error_get_retry_after_until (const GError *error)
{
  PRIV_OR_RETURN (error, 0);
  return kaged_provider_error_get_private (error)->retry_after_until;
}

void
kaged_provider_error_set_retry_after_until (GError *error,
                                            gint64  until_ms)
{
  PRIV_OR_RETURN_VOID (error);
  kaged_provider_error_get_private (error)->retry_after_until = MAX (until_ms, 0);
}

/**
 * kaged_provider_error_get_http_status:
 *
 * Returns: the HTTP status of the answer, or 0 when none came
 */
guint
kaged_provider_error_get_http_status (const GError *error)
{
  PRIV_OR_RETURN (error, 0);
  return kaged_provider_error_get_private (error)->http_status;
}

void
kaged_provider_error_set_http_status (GError *error,
                                      guint   http_status)
{
  PRIV_OR_RETURN_VOID (error);
  kaged_provider_error_get_private (error)->http_status = http_status;
}

const char *
kaged_provider_error_get_request_id (const GError *error)
{
  PRIV_OR_RETURN (error, NULL);
  return kaged_provider_error_get_private (error)->request_id;
}

void
kaged_provider_error_set_request_id (GError     *error,
                                     const char *request_id)
{
  KagedProviderErrorPrivate *priv;

  PRIV_OR_RETURN_VOID (error);
  priv = kaged_provider_error_get_private (error);
  if (priv->request_id != request_id)
    {
      g_free (priv->request_id);
      priv->request_id = g_strdup (request_id);
    }
}

const char *
kaged_provider_error_get_provider_message (const GError *error)
{
  PRIV_OR_RETURN (error, NULL);
  return kaged_provider_error_get_private (error)->provider_message;
}

void
kaged_provider_error_set_provider_message (GError     *error,
                                           const char *message)
{
  KagedProviderErrorPrivate *priv;

  PRIV_OR_RETURN_VOID (error);
  priv = kaged_provider_error_get_private (error);
  if (priv->provider_message != message)
    {
      g_free (priv->provider_message);
      priv->provider_message = g_strdup (message);
    }
}

gint64
kaged_provider_error_get_server_wait_ms (const GError *error)
{
  PRIV_OR_RETURN (error, -1);
  return kaged_provider_error_get_private (error)->server_wait_ms;
}

const char *
kaged_provider_error_get_wait_source (const GError *error)
{
  PRIV_OR_RETURN (error, NULL);
  return kaged_provider_error_get_private (error)->wait_source;
}

/**
 * kaged_provider_error_set_server_wait:
 * @wait_ms: the advised wait in milliseconds, or -1 for none
 * @source: (nullable): where it came from, such as `retry-after`
 */
void
kaged_provider_error_set_server_wait (GError     *error,
                                      gint64      wait_ms,
                                      const char *source)
{
  KagedProviderErrorPrivate *priv;
  char *old_source;

  PRIV_OR_RETURN_VOID (error);
  priv = kaged_provider_error_get_private (error);
  priv->server_wait_ms = wait_ms < 0 ? -1 : wait_ms;
  old_source = priv->wait_source;
  priv->wait_source = priv->server_wait_ms < 0 ? NULL : g_strdup (source);
  g_free (old_source);
}

int
kaged_provider_error_get_should_retry (const GError *error)
{
  PRIV_OR_RETURN (error, -1);
  return kaged_provider_error_get_private (error)->should_retry;
}

void
kaged_provider_error_set_should_retry (GError *error,
                                       int     should_retry)
{
  PRIV_OR_RETURN_VOID (error);
  g_return_if_fail (should_retry >= -1 && should_retry <= 1);
  kaged_provider_error_get_private (error)->should_retry = should_retry;
}

G_DEFINE_INTERFACE (KagedProvider, kaged_provider, G_TYPE_OBJECT)

static void
kaged_provider_default_init (KagedProviderInterface *iface)
{
}

/**
 * kaged_provider_chat_async:
 * @self: a #KagedProvider
 * @chat: the call: messages to send, and where the reply streams to
 * @cancellable: (nullable): aborts the request and every read
 *
 * Sends @chat to the model and streams the reply into it. @callback runs
 * on the calling thread's main context once the reply ended or failed.
 */
void
kaged_provider_chat_async (KagedProvider       *self,
                           KagedChat           *chat,
                           GCancellable        *cancellable,
                           GAsyncReadyCallback  callback,
                           gpointer             user_data)
{
  g_return_if_fail (KAGED_IS_PROVIDER (self));
  g_return_if_fail (KAGED_IS_CHAT (chat));
  g_return_if_fail (!cancellable || G_IS_CANCELLABLE (cancellable));

  KAGED_PROVIDER_GET_IFACE (self)->chat_async (self, chat, cancellable, callback, user_data);
}

/**
 * kaged_provider_chat_finish:
 *
 * Returns: %TRUE when the reply ended normally; otherwise %FALSE with
 *   @error set to a %KAGED_PROVIDER_ERROR or %G_IO_ERROR_CANCELLED
 */
gboolean
kaged_provider_chat_finish (KagedProvider  *self,
                            GAsyncResult   *result,
                            GError        **error)
{
  g_return_val_if_fail (KAGED_IS_PROVIDER (self), FALSE);
  g_return_val_if_fail (G_IS_ASYNC_RESULT (result), FALSE);

  return KAGED_PROVIDER_GET_IFACE (self)->chat_finish (self, result, error);
}
