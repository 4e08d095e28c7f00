/* kaged-models.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-profile.h"
#include "kaged-resolver.h"

G_BEGIN_DECLS

/* How long a model list may take, from the request to its last byte. */
#define KAGED_MODELS_TIMEOUT_MS (20 * 1000)
/* The cap on a model list's body; the rest is not read. */
#define KAGED_MODELS_MAX_BODY   (8 * 1024 * 1024)

#define KAGED_TYPE_CONNECTION_RESULT (kaged_connection_result_get_type ())

G_DECLARE_FINAL_TYPE (KagedConnectionResult, kaged_connection_result, KAGED, CONNECTION_RESULT, GObject)

void     kaged_profile_list_models_async        (KagedProfile          *self,
                                                 KagedResolver         *resolver,
                                                 GCancellable          *cancellable,
                                                 GAsyncReadyCallback    callback,
                                                 gpointer               user_data);
char   **kaged_profile_list_models_finish       (KagedProfile          *self,
                                                 GAsyncResult          *result,
                                                 GError               **error);
void     kaged_profile_test_connection_async    (KagedProfile          *self,
                                                 KagedResolver         *resolver,
                                                 GCancellable          *cancellable,
                                                 GAsyncReadyCallback    callback,
                                                 gpointer               user_data);
KagedConnectionResult *
         kaged_profile_test_connection_finish   (KagedProfile          *self,
                                                 GAsyncResult          *result,
                                                 GError               **error);
char   **kaged_models_parse                     (KagedProviderKind      kind,
                                                 const char            *body,
                                                 gsize                  len,
                                                 GError               **error);

gboolean         kaged_connection_result_get_ok                (KagedConnectionResult *self);
KagedRetryClass  kaged_connection_result_get_retry_class       (KagedConnectionResult *self);
guint            kaged_connection_result_get_http_status       (KagedConnectionResult *self);
const char      *kaged_connection_result_get_message           (KagedConnectionResult *self);
const char * const *
                 kaged_connection_result_get_models            (KagedConnectionResult *self);
gboolean         kaged_connection_result_needs_preferences     (KagedConnectionResult *self);
gboolean         kaged_retry_class_needs_preferences           (KagedRetryClass        retry_class);
gboolean         kaged_models_failure_needs_preferences        (KagedRetryClass        retry_class,
                                                                guint                  http_status);

G_END_DECLS
