/* kaged-http-provider.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

#include "kaged-http.h"
#include "kaged-provider.h"

G_BEGIN_DECLS

#define KAGED_TYPE_HTTP_PROVIDER (kaged_http_provider_get_type ())

G_DECLARE_DERIVABLE_TYPE (KagedHttpProvider, kaged_http_provider, KAGED, HTTP_PROVIDER, GObject)

/**
 * KagedHttpProviderClass:
 * @path: appended to the base URL, such as `/chat/completions`
 * @accept: the media type of the stream asked for
 * @add_body: adds the request body's members after `model`
 * @add_headers: adds the provider's headers; @api_key (nullable) is the
 *   key to authenticate with: anything derived from it must be wiped. The
 *   default sends it as a bearer token.
 * @new_decoder: creates the reader of the provider's stream format
 *
 * What one provider API does differently from another.
 */
struct _KagedHttpProviderClass
{
  GObjectClass parent_class;

  const char          *path;
  const char          *accept;

  void                 (*add_body)    (KagedHttpProvider  *self,
                                       KagedChat          *chat,
                                       JsonBuilder        *builder);
  void                 (*add_headers) (KagedHttpProvider  *self,
                                       SoupMessageHeaders *headers,
                                       const char         *api_key);
  KagedStreamDecoder * (*new_decoder) (KagedChat          *chat,
                                       KagedClock         *clock,
                                       gsize               max_event_size);

  /*< private >*/
  gpointer _reserved[8];
};

KagedProvider *kaged_http_provider_new (GType        type,
                                        SoupSession *session,
                                        const char  *base_url,
                                        const char  *model,
                                        const char  *api_key);

G_END_DECLS
