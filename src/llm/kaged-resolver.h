/* kaged-resolver.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <libsoup/soup.h>

#include "kaged-clock.h"
#include "kaged-keyring.h"
#include "kaged-profile.h"
#include "kaged-provider.h"
#include "kaged-random.h"

G_BEGIN_DECLS

#define KAGED_TYPE_RESOLVER (kaged_resolver_get_type ())

G_DECLARE_FINAL_TYPE (KagedResolver, kaged_resolver, KAGED, RESOLVER, GObject)

KagedResolver *kaged_resolver_new            (SoupSession          *session,
                                              KagedKeyring         *keyring);
KagedResolver *kaged_resolver_new_full       (SoupSession          *session,
                                              KagedKeyring         *keyring,
                                              KagedClock           *clock,
                                              KagedRandom          *random);
SoupSession   *kaged_resolver_get_session    (KagedResolver        *self);
KagedKeyring  *kaged_resolver_get_keyring    (KagedResolver        *self);
void           kaged_resolver_set_timeout    (KagedResolver        *self,
                                              guint                 timeout_ms);
KagedProvider *kaged_resolver_resolve        (KagedResolver        *self,
                                              KagedProfile         *profile,
                                              GCancellable         *cancellable,
                                              GError              **error);
void           kaged_resolver_resolve_async  (KagedResolver        *self,
                                              KagedProfile         *profile,
                                              GCancellable         *cancellable,
                                              GAsyncReadyCallback   callback,
                                              gpointer              user_data);
KagedProvider *kaged_resolver_resolve_finish (KagedResolver        *self,
                                              GAsyncResult         *result,
                                              GError              **error);
void           kaged_resolver_lookup_key_async  (KagedResolver        *self,
                                                 KagedProfile         *profile,
                                                 GCancellable         *cancellable,
                                                 GAsyncReadyCallback   callback,
                                                 gpointer              user_data);
char          *kaged_resolver_lookup_key_finish (KagedResolver        *self,
                                                 GAsyncResult         *result,
                                                 GError              **error);

G_END_DECLS
