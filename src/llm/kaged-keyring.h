/* kaged-keyring.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define KAGED_TYPE_KEYRING (kaged_keyring_get_type ())

G_DECLARE_INTERFACE (KagedKeyring, kaged_keyring, KAGED, KEYRING, GObject)

/**
 * KagedKeyringInterface:
 * @lookup: the API key stored for a profile, or %NULL (no error) when
 *   there is none; may block, and may be called from a worker thread
 * @store: store (or replace) the key of a profile
 * @clear: forget the key of a profile; no key is not an error
 * @lookup_async: (optional) look up a key without blocking the calling
 *   thread; without it, kaged_keyring_lookup_async() runs @lookup in a
 *   worker thread
 * @lookup_finish: (optional) the key @lookup_async found, as @lookup
 *
 * Where API keys live: never in the database, settings or logs. Keys are
 * found by profile id.
 */
struct _KagedKeyringInterface
{
  GTypeInterface parent_iface;

  char     *(*lookup) (KagedKeyring  *self,
                       const char    *profile,
                       GCancellable  *cancellable,
                       GError       **error);
  gboolean  (*store)  (KagedKeyring  *self,
                       const char    *profile,
                       const char    *key,
                       GCancellable  *cancellable,
                       GError       **error);
  gboolean  (*clear)  (KagedKeyring  *self,
                       const char    *profile,
                       GCancellable  *cancellable,
                       GError       **error);
  void      (*lookup_async)  (KagedKeyring         *self,
                              const char           *profile,
                              GCancellable         *cancellable,
                              GAsyncReadyCallback   callback,
                              gpointer              user_data);
  char     *(*lookup_finish) (KagedKeyring         *self,
                              GAsyncResult         *result,
                              GError              **error);
};

char     *kaged_keyring_lookup        (KagedKeyring         *self,
                                       const char           *profile,
                                       GCancellable         *cancellable,
                                       GError              **error);
void      kaged_keyring_lookup_async  (KagedKeyring         *self,
                                       const char           *profile,
                                       GCancellable         *cancellable,
                                       GAsyncReadyCallback   callback,
                                       gpointer              user_data);
char     *kaged_keyring_lookup_finish (KagedKeyring         *self,
                                       GAsyncResult         *result,
                                       GError              **error);
gboolean  kaged_keyring_store         (KagedKeyring         *self,
                                       const char           *profile,
                                       const char           *key,
                                       GCancellable         *cancellable,
                                       GError              **error);
gboolean  kaged_keyring_clear         (KagedKeyring         *self,
                                       const char           *profile,
                                       GCancellable         *cancellable,
                                       GError              **error);
void      kaged_keyring_store_async   (KagedKeyring         *self,
                                       const char           *profile,
                                       const char           *key,
                                       GCancellable         *cancellable,
                                       GAsyncReadyCallback   callback,
                                       gpointer              user_data);
gboolean  kaged_keyring_store_finish  (KagedKeyring         *self,
                                       GAsyncResult         *result,
                                       GError              **error);
void      kaged_keyring_clear_async   (KagedKeyring         *self,
                                       const char           *profile,
                                       GCancellable         *cancellable,
                                       GAsyncReadyCallback   callback,
                                       gpointer              user_data);
gboolean  kaged_keyring_clear_finish  (KagedKeyring         *self,
                                       GAsyncResult         *result,
                                       GError              **error);
void      kaged_keyring_free_key      (char                 *key);

/* The keyring of the desktop, through libsecret: schema
 * io.github.kaged.Kaged.ApiKey, attribute "profile". */
#define KAGED_TYPE_SECRET_KEYRING (kaged_secret_keyring_get_type ())

G_DECLARE_FINAL_TYPE (KagedSecretKeyring, kaged_secret_keyring, KAGED, SECRET_KEYRING, GObject)

KagedKeyring *kaged_secret_keyring_new (void);

/* Keys in memory only, for tests and for a session without a keyring. */
#define KAGED_TYPE_MEMORY_KEYRING (kaged_memory_keyring_get_type ())

G_DECLARE_FINAL_TYPE (KagedMemoryKeyring, kaged_memory_keyring, KAGED, MEMORY_KEYRING, GObject)

KagedKeyring *kaged_memory_keyring_new     (void);
guint         kaged_memory_keyring_get_n_lookups (KagedMemoryKeyring *self);

G_END_DECLS
