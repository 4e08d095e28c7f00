/* kaged-keyring.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-keyring"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>
#include <libsecret/secret.h>

#include "kaged-keyring.h"

/*
 * Nothing here logs a key, or puts one in an error message: only profile
 * names appear.
 */

G_DEFINE_INTERFACE (KagedKeyring, kaged_keyring, G_TYPE_OBJECT)

static void
kaged_keyring_default_init (KagedKeyringInterface *iface)
{
}

/**
 * kaged_keyring_free_key:
 * @key: (nullable) (transfer full): a key from kaged_keyring_lookup()
 *
 * Overwrites @key before freeing it.
 */
void
kaged_keyring_free_key (char *key)
{
  if (key == NULL)
    return;

  for (volatile char *p = key; *p != '\0'; p++)
    *p = '\0';
  g_free (key);
}

/**
 * kaged_keyring_lookup:
 *
 * Looks up the key of @profile. This may block on D-Bus: it is for worker
 * threads (and code that runs no main loop); called from a callback of
 * the main loop it says so with a critical. The main loop uses
 * kaged_keyring_lookup_async().
 *
 * Returns: (transfer full) (nullable): the key (free it with
 *   kaged_keyring_free_key()), or %NULL — with @error set only when the
 *   keyring could not be asked
 */
char *
kaged_keyring_lookup (KagedKeyring  *self,
                      const char    *profile,
                      GCancellable  *cancellable,
                      GError       **error)
{
  g_return_val_if_fail (KAGED_IS_KEYRING (self), NULL);
  g_return_val_if_fail (profile != NULL, NULL);
  g_return_val_if_fail (!cancellable || G_IS_CANCELLABLE (cancellable), NULL);

  /* A keyring may wait on D-Bus: the main loop would stop meanwhile. */
  if (g_main_context_is_owner (g_main_context_default ()))
    g_critical ("The key of “%s” was looked up on the main loop, which blocks it; "
                "use kaged_keyring_lookup_async()", profile);

  return KAGED_KEYRING_GET_IFACE (self)->lookup (self, profile, cancellable, error);
}

gboolean
kaged_keyring_store (KagedKeyring  *self,
                     const char    *profile,
                     const char    *key,
                     GCancellable  *cancellable,
                     GError       **error)
{
  g_return_val_if_fail (KAGED_IS_KEYRING (self), FALSE);
  g_return_val_if_fail (profile != NULL, FALSE);
  g_return_val_if_fail (key != NULL, FALSE);
  g_return_val_if_fail (!cancellable || G_IS_CANCELLABLE (cancellable), FALSE);

  return KAGED_KEYRING_GET_IFACE (self)->store (self, profile, key, cancellable, error);
}

gboolean
kaged_keyring_clear (KagedKeyring  *self,
                     const char    *profile,
                     GCancellable  *cancellable,
                     GError       **error)
{
  g_return_val_if_fail (KAGED_IS_KEYRING (self), FALSE);
  g_return_val_if_fail (profile != NULL, FALSE);
  g_return_val_if_fail (!cancellable || G_IS_CANCELLABLE (cancellable), FALSE);

  return KAGED_KEYRING_GET_IFACE (self)->clear (self, profile, cancellable, error);
}

/* The lookup is also offered async: through the keyring's own async
 * lookup when it has one, or else in a worker thread, the profile name as
 * its task data. */

static void
lookup_thread (GTask        *task,
               gpointer      source_object,
               gpointer      task_data,
               GCancellable *cancellable)
{
  const char *profile = task_data;
  g_autoptr(GError) error = NULL;
  char *key;

  key = kaged_keyring_lookup (source_object, profile, cancellable, &error);
  if (error != NULL)
    g_task_return_error (task, g_steal_pointer (&error));
  else
    g_task_return_pointer (task, key, (GDestroyNotify)kaged_keyring_free_key);
}

static void
lookup_async_cb (GObject      *object,
                 GAsyncResult *result,
                 gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  g_autoptr(GError) error = NULL;
  char *key;

  key = KAGED_KEYRING_GET_IFACE (object)->lookup_finish (KAGED_KEYRING (object), result, &error);
  if (error != NULL)
    g_task_return_error (task, g_steal_pointer (&error));
  else
    g_task_return_pointer (task, key, (GDestroyNotify)kaged_keyring_free_key);
}

/**
 * kaged_keyring_lookup_async:
 *
 * Looks up the key of @profile without blocking the calling thread: what
 * the main loop uses.
 */
void
kaged_keyring_lookup_async (KagedKeyring        *self,
                            const char          *profile,
                            GCancellable        *cancellable,
                            GAsyncReadyCallback  callback,
                            gpointer             user_data)
{
  KagedKeyringInterface *iface;
  g_autoptr(GTask) task = NULL;

  g_return_if_fail (KAGED_IS_KEYRING (self));
  g_return_if_fail (profile != NULL);
  g_return_if_fail (!cancellable || G_IS_CANCELLABLE (cancellable));

  iface = KAGED_KEYRING_GET_IFACE (self);
  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_keyring_lookup_async);
  g_task_set_task_data (task, g_strdup (profile), g_free);

  if (iface->lookup_async != NULL && iface->lookup_finish != NULL)
    iface->lookup_async (self, profile, cancellable, lookup_async_cb, g_steal_pointer (&task));
  else
    g_task_run_in_thread (task, lookup_thread);
}

/**
 * kaged_keyring_lookup_finish:
 *
 * Returns: (transfer full) (nullable): as kaged_keyring_lookup()
 */
char *
kaged_keyring_lookup_finish (KagedKeyring  *self,
                             GAsyncResult  *result,
                             GError       **error)
{
  g_return_val_if_fail (KAGED_IS_KEYRING (self), NULL);
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_keyring_lookup_async, NULL);

  return g_task_propagate_pointer (G_TASK (result), error);
}

/* Storing and clearing run in a worker thread too, with this state. */
typedef struct
{
  char *profile;
  char *key;      /* NULL when clearing */
} WriteState;

static void
write_state_free (WriteState *state)
{
  g_free (state->profile);
  kaged_keyring_free_key (state->key);
  g_free (state);
}

static void
write_thread (GTask        *task,
              gpointer      source_object,
              gpointer      task_data,
              GCancellable *cancellable)
{
  WriteState *state = task_data;
  g_autoptr(GError) error = NULL;
  gboolean ok;

  if (state->key != NULL)
    ok = kaged_keyring_store (source_object, state->profile, state->key, cancellable, &error);
  else
    ok = kaged_keyring_clear (source_object, state->profile, cancellable, &error);

  if (!ok)
    g_task_return_error (task, g_steal_pointer (&error));
  else
    g_task_return_boolean (task, TRUE);
}

static void
start_write (KagedKeyring        *self,
             gpointer             source_tag,
             const char          *profile,
             const char          *key,
             GCancellable        *cancellable,
             GAsyncReadyCallback  callback,
             gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  WriteState *state;

  state = g_new0 (WriteState, 1);
  state->profile = g_strdup (profile);
  state->key = g_strdup (key);

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, source_tag);
  g_task_set_task_data (task, state, (GDestroyNotify)write_state_free);
  g_task_run_in_thread (task, write_thread);
}

/**
 * kaged_keyring_store_async:
 *
 * Stores (or replaces) the key of @profile without blocking the caller.
 */
void
kaged_keyring_store_async (KagedKeyring        *self,
                           const char          *profile,
                           const char          *key,
                           GCancellable        *cancellable,
                           GAsyncReadyCallback  callback,
                           gpointer             user_data)
{
  g_return_if_fail (KAGED_IS_KEYRING (self));
  g_return_if_fail (profile != NULL);
  g_return_if_fail (key != NULL);

  start_write (self, kaged_keyring_store_async, profile, key, cancellable, callback, user_data);
}

gboolean
kaged_keyring_store_finish (KagedKeyring  *self,
                            GAsyncResult  *result,
                            GError       **error)
{
  g_return_val_if_fail (KAGED_IS_KEYRING (self), FALSE);
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_keyring_store_async, FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

/**
 * kaged_keyring_clear_async:
 *
 * Forgets the key of @profile without blocking the caller.
 */
void
kaged_keyring_clear_async (KagedKeyring        *self,
                           const char          *profile,
                           GCancellable        *cancellable,
                           GAsyncReadyCallback  callback,
                           gpointer             user_data)
{
  g_return_if_fail (KAGED_IS_KEYRING (self));
  g_return_if_fail (profile != NULL);

  start_write (self, kaged_keyring_clear_async, profile, NULL, cancellable, callback, user_data);
}

gboolean
kaged_keyring_clear_finish (KagedKeyring  *self,
                            GAsyncResult  *result,
                            GError       **error)
{
  g_return_val_if_fail (KAGED_IS_KEYRING (self), FALSE);
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_keyring_clear_async, FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

/* ------------------------------------------------------------------------ */

struct _KagedSecretKeyring
{
  GObject parent_instance;
};

static void secret_keyring_iface_init (KagedKeyringInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedSecretKeyring, kaged_secret_keyring, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (KAGED_TYPE_KEYRING, secret_keyring_iface_init))

static const SecretSchema api_key_schema = {
  "io.github.kaged.Kaged.ApiKey", SECRET_SCHEMA_NONE,
  {
    { "profile", SECRET_SCHEMA_ATTRIBUTE_STRING },
    { NULL, 0 },
  }
};

static char *
kaged_secret_keyring_lookup (KagedKeyring  *keyring,
                             const char    *profile,
                             GCancellable  *cancellable,
                             GError       **error)
{
  g_autoptr(GError) local_error = NULL;
  char *secret;
  char *key;

  secret = secret_password_lookup_sync (&api_key_schema, cancellable, &local_error,
                                        "profile", profile,
                                        NULL);
  if (local_error != NULL)
    {
      g_propagate_error (error, g_steal_pointer (&local_error));
      return NULL;
    }
  if (secret == NULL)
    return NULL;

  key = g_strdup (secret);
  secret_password_free (secret);

  return key;
}

static void
secret_lookup_cb (GObject      *object,
                  GAsyncResult *result,
                  gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  g_autoptr(GError) error = NULL;
  char *secret;

  secret = secret_password_lookup_finish (result, &error);
  if (error != NULL)
    g_task_return_error (task, g_steal_pointer (&error));
  else if (secret == NULL)
    g_task_return_pointer (task, NULL, NULL);
  else
    {
      g_task_return_pointer (task, g_strdup (secret), (GDestroyNotify)kaged_keyring_free_key);
      secret_password_free (secret);
    }
}

/* libsecret's own async lookup: D-Bus from the calling thread's main
 * context, no worker thread, cancelled at once through @cancellable. */
static void
kaged_secret_keyring_lookup_async (KagedKeyring        *keyring,
                                   const char          *profile,
                                   GCancellable        *cancellable,
                                   GAsyncReadyCallback  callback,
                                   gpointer             user_data)
{
  GTask *task = g_task_new (keyring, cancellable, callback, user_data);

  g_task_set_source_tag (task, kaged_secret_keyring_lookup_async);
  secret_password_lookup (&api_key_schema, cancellable, secret_lookup_cb, task,
                          "profile", profile,
                          NULL);
}

static char *
kaged_secret_keyring_lookup_finish (KagedKeyring  *keyring,
                                    GAsyncResult  *result,
                                    GError       **error)
{
  g_return_val_if_fail (g_task_is_valid (result, keyring), NULL);

  return g_task_propagate_pointer (G_TASK (result), error);
}

static gboolean
kaged_secret_keyring_store (KagedKeyring  *keyring,
                            const char    *profile,
                            const char    *key,
                            GCancellable  *cancellable,
                            GError       **error)
{
  g_autofree char *label = g_strdup_printf (_("Kaged API key for “%s”"), profile);

  return secret_password_store_sync (&api_key_schema, SECRET_COLLECTION_DEFAULT,
                                     label, key, cancellable, error,
                                     "profile", profile,
                                     NULL);
}

static gboolean
kaged_secret_keyring_clear (KagedKeyring  *keyring,
                            const char    *profile,
                            GCancellable  *cancellable,
                            GError       **error)
{
  g_autoptr(GError) local_error = NULL;

  secret_password_clear_sync (&api_key_schema, cancellable, &local_error,
                              "profile", profile,
                              NULL);
  if (local_error != NULL)
    {
      g_propagate_error (error, g_steal_pointer (&local_error));
      return FALSE;
    }

  return TRUE;
}

static void
secret_keyring_iface_init (KagedKeyringInterface *iface)
{
  iface->lookup = kaged_secret_keyring_lookup;
  iface->lookup_async = kaged_secret_keyring_lookup_async;
  iface->lookup_finish = kaged_secret_keyring_lookup_finish;
  iface->store = kaged_secret_keyring_store;
  iface->clear = kaged_secret_keyring_clear;
}

static void
kaged_secret_keyring_class_init (KagedSecretKeyringClass *klass)
{
}

static void
kaged_secret_keyring_init (KagedSecretKeyring *self)
{
}

/**
 * kaged_secret_keyring_new:
 *
 * Returns: (transfer full): the desktop keyring, through libsecret
 */
KagedKeyring *
kaged_secret_keyring_new (void)
{
  return g_object_new (KAGED_TYPE_SECRET_KEYRING, NULL);
}

/* ------------------------------------------------------------------------ */

struct _KagedMemoryKeyring
{
  GObject     parent_instance;
  GMutex      mutex;
  GHashTable *keys;       /* profile → key */
  guint       n_lookups;
};

static void memory_keyring_iface_init (KagedKeyringInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedMemoryKeyring, kaged_memory_keyring, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (KAGED_TYPE_KEYRING, memory_keyring_iface_init))

static char *
kaged_memory_keyring_lookup (KagedKeyring  *keyring,
                             const char    *profile,
                             GCancellable  *cancellable,
                             GError       **error)
{
  KagedMemoryKeyring *self = KAGED_MEMORY_KEYRING (keyring);
  char *key;

  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return NULL;

  g_mutex_lock (&self->mutex);
  self->n_lookups++;
  key = g_strdup (g_hash_table_lookup (self->keys, profile));
  g_mutex_unlock (&self->mutex);

  return key;
}

static gboolean
kaged_memory_keyring_store (KagedKeyring  *keyring,
                            const char    *profile,
                            const char    *key,
                            GCancellable  *cancellable,
                            GError       **error)
{
  KagedMemoryKeyring *self = KAGED_MEMORY_KEYRING (keyring);

  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;

  g_mutex_lock (&self->mutex);
  g_hash_table_insert (self->keys, g_strdup (profile), g_strdup (key));
  g_mutex_unlock (&self->mutex);

  return TRUE;
}

static gboolean
kaged_memory_keyring_clear (KagedKeyring  *keyring,
                            const char    *profile,
                            GCancellable  *cancellable,
                            GError       **error)
{
  KagedMemoryKeyring *self = KAGED_MEMORY_KEYRING (keyring);

  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;

  g_mutex_lock (&self->mutex);
  g_hash_table_remove (self->keys, profile);
  g_mutex_unlock (&self->mutex);

  return TRUE;
}

static void
memory_keyring_iface_init (KagedKeyringInterface *iface)
{
  iface->lookup = kaged_memory_keyring_lookup;
  iface->store = kaged_memory_keyring_store;
  iface->clear = kaged_memory_keyring_clear;
}

static void
kaged_memory_keyring_finalize (GObject *object)
{
  KagedMemoryKeyring *self = (KagedMemoryKeyring *)object;

  g_clear_pointer (&self->keys, g_hash_table_unref);
  g_mutex_clear (&self->mutex);

  G_OBJECT_CLASS (kaged_memory_keyring_parent_class)->finalize (object);
}

static void
kaged_memory_keyring_class_init (KagedMemoryKeyringClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = kaged_memory_keyring_finalize;
}

static void
kaged_memory_keyring_init (KagedMemoryKeyring *self)
{
  g_mutex_init (&self->mutex);
  self->keys = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                      (GDestroyNotify)kaged_keyring_free_key);
}

/**
 * kaged_memory_keyring_new:
 *
 * Returns: (transfer full): an empty keyring that lives in memory only
 */
KagedKeyring *
kaged_memory_keyring_new (void)
{
  return g_object_new (KAGED_TYPE_MEMORY_KEYRING, NULL);
}

/**
 * kaged_memory_keyring_get_n_lookups:
 *
 * Returns: how many times a key was looked up, found or not
 */
guint
kaged_memory_keyring_get_n_lookups (KagedMemoryKeyring *self)
{
  guint n;

  g_return_val_if_fail (KAGED_IS_MEMORY_KEYRING (self), 0);

  g_mutex_lock (&self->mutex);
  n = self->n_lookups;
  g_mutex_unlock (&self->mutex);

  return n;
}
