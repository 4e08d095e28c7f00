/* kaged-provider.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-chat.h"
#include "kaged-enums.h"

G_BEGIN_DECLS

/*
 * Provider calls, and the runs around them, work just below the default
 * priority: input, and requests to the local API, are answered first, and a
 * busy stream does not hold them up. Redraws (G_PRIORITY_HIGH_IDLE and
 * below) still come after.
 */
#define KAGED_RUN_PRIORITY (G_PRIORITY_DEFAULT + 10)

/*
 * KAGED_PROVIDER_ERROR is an extended GError domain: the error code is the
 * KagedRetryClass, and each error carries the rest of the classification
 * (retryable, retry_after_until) plus what the provider said: the HTTP
 * status, its request id and message, the wait it advised and where that
 * came from, and its x-should-retry answer. Cancellation is never a
 * provider error: it is G_IO_ERROR_CANCELLED.
 */
#define KAGED_PROVIDER_ERROR (kaged_provider_error_quark ())

GQuark           kaged_provider_error_quark                 (void);
GError          *kaged_provider_error_new                   (KagedRetryClass  retry_class,
                                                             const char      *format,
                                                             ...) G_GNUC_PRINTF (2, 3);
KagedRetryClass  kaged_provider_error_get_retry_class       (const GError    *error);
gboolean         kaged_provider_error_get_retryable         (const GError    *error);
void             kaged_provider_error_set_retryable         (GError          *error,
                                                             gboolean         retryable);
gint64           kaged_provider_error_get_retry_after_until (const GError    *error);
void             kaged_provider_error_set_retry_after_until (GError          *error,
                                                             gint64           until_ms);
guint            kaged_provider_error_get_http_status       (const GError    *error);
void             kaged_provider_error_set_http_status       (GError          *error,
                                                             guint            http_status);
const char      *kaged_provider_error_get_request_id        (const GError    *error);
void             kaged_provider_error_set_request_id        (GError          *error,
                                                             const char      *request_id);
const char      *kaged_provider_error_get_provider_message  (const GError    *error);
void             kaged_provider_error_set_provider_message  (GError          *error,
                                                             const char      *message);
/* The wait the server advised (headers), -1 when none; and its source:
 * "retry-after-ms", "retry-after", "anthropic-ratelimit-reset",
 * "x-ratelimit-reset". */
gint64           kaged_provider_error_get_server_wait_ms    (const GError    *error);
const char      *kaged_provider_error_get_wait_source       (const GError    *error);
void             kaged_provider_error_set_server_wait       (GError          *error,
                                                             gint64           wait_ms,
                                                             const char      *source);
/* x-should-retry: -1 when absent, 0 for false, 1 for true. */
int              kaged_provider_error_get_should_retry      (const GError    *error);
void             kaged_provider_error_set_should_retry      (GError          *error,
                                                             int              should_retry);

#define KAGED_TYPE_PROVIDER (kaged_provider_get_type ())

G_DECLARE_INTERFACE (KagedProvider, kaged_provider, KAGED, PROVIDER, GObject)

/**
 * KagedProviderInterface:
 * @chat_async: send @chat's messages and stream the reply into @chat
 *   (kaged_chat_push_delta(), kaged_chat_set_usage(),
 *   kaged_chat_set_finish_reason()) until the provider ends it
 * @chat_finish: %TRUE when the reply ended normally; otherwise a
 *   %KAGED_PROVIDER_ERROR, or %G_IO_ERROR_CANCELLED
 */
struct _KagedProviderInterface
{
  GTypeInterface parent_iface;

  void     (*chat_async)  (KagedProvider        *self,
                           KagedChat            *chat,
                           GCancellable         *cancellable,
                           GAsyncReadyCallback   callback,
                           gpointer              user_data);
  gboolean (*chat_finish) (KagedProvider        *self,
                           GAsyncResult         *result,
                           GError              **error);
};

void     kaged_provider_chat_async  (KagedProvider        *self,
                                     KagedChat            *chat,
                                     GCancellable         *cancellable,
                                     GAsyncReadyCallback   callback,
                                     gpointer              user_data);
gboolean kaged_provider_chat_finish (KagedProvider        *self,
                                     GAsyncResult         *result,
                                     GError              **error);

G_END_DECLS
