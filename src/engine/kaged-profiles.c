/* kaged-profiles.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-profiles"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "kaged-profiles.h"
#include "kaged-retry-class.h"

/*
 * Each saved profile is an entry: the live KagedProfile and the
 * relocatable settings its properties are bound to.
 */
typedef struct
{
  KagedProfile *profile;
  GSettings    *settings;
} Entry;

struct _KagedProfiles
{
  GObject       parent_instance;

  GSettings    *settings;
  GSettingsSchema *profile_schema;
  KagedKeyring *keyring;
  char         *path_prefix;
  GPtrArray    *entries;    /* Entry*, in the order of the `profiles` key */
  KagedProfile *default_profile;
};

static void kaged_profiles_list_model_init (GListModelInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedProfiles, kaged_profiles, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_LIST_MODEL,
                                                      kaged_profiles_list_model_init))

G_DEFINE_QUARK (kaged-profiles-error-quark, kaged_profiles_error)

enum {
  PROP_0,
  PROP_DEFAULT_PROFILE,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

enum {
  PROFILE_REMOVED,
  N_SIGNALS
};

static guint signals [N_SIGNALS];

/* The keys of a profile, bound to the properties of the same name. */
static const char * const string_keys[] = { "name", "base-url", "model", "api-key-env" };
static const char * const amount_keys[] = { "input-price", "output-price", "spend-limit" };
static const char * const enum_keys[] = { "kind", "spend-limit-period" };

#define MAX_AMOUNT 1000000.0

static gboolean
valid_id (const char *id)
{
  if (id == NULL || id[0] == '\0' || strlen (id) > 64)
    return FALSE;

  for (const char *p = id; *p != '\0'; p++)
    {
      if (!g_ascii_isalnum (*p) && *p != '-' && *p != '_')
        return FALSE;
    }

  return TRUE;
}

static GVariant *
amount_to_settings (const GValue       *value,
                    const GVariantType *expected_type,
                    gpointer            user_data)
{
  return g_variant_new_double (CLAMP (g_value_get_double (value), 0.0, MAX_AMOUNT));
}

static gboolean
amount_from_settings (GValue   *value,
                      GVariant *variant,
                      gpointer  user_data)
{
  g_value_set_double (value, g_variant_get_double (variant));
  return TRUE;
}

static GVariant *
string_to_settings (const GValue       *value,
                    const GVariantType *expected_type,
                    gpointer            user_data)
{
  const char *string = g_value_get_string (value);

  return g_variant_new_string (string != NULL ? string : "");
}

static gboolean
string_from_settings (GValue   *value,
                      GVariant *variant,
                      gpointer  user_data)
{
  g_value_set_string (value, g_variant_get_string (variant, NULL));
  return TRUE;
}

static GSettings *
new_profile_settings (KagedProfiles *self,
                      const char    *id)
{
  g_autoptr(GSettingsBackend) backend = NULL;
  g_autofree char *path = g_strconcat (self->path_prefix, id, "/", NULL);

  g_object_get (self->settings, "backend", &backend, NULL);

  return g_settings_new_full (self->profile_schema, backend, path);
}

/* Writes what @profile says into the settings of @id, at once. */
static void
write_profile (KagedProfiles *self,
               const char    *id,
               KagedProfile  *profile)
{
  g_autoptr(GSettings) settings = new_profile_settings (self, id);
  const char *api_key_env = kaged_profile_get_api_key_env (profile);
  const char *name = kaged_profile_get_name (profile);
  const char *model = kaged_profile_get_model (profile);

  g_settings_delay (settings);
  g_settings_set_string (settings, "name", name != NULL ? name : "");
  g_settings_set_string (settings, "kind",
                         kaged_enum_to_nick (KAGED_TYPE_PROVIDER_KIND,
                                             kaged_profile_get_kind (profile)));
  g_settings_set_string (settings, "base-url", kaged_profile_get_base_url (profile));
  g_settings_set_string (settings, "model", model != NULL ? model : "");
  g_settings_set_string (settings, "api-key-env", api_key_env != NULL ? api_key_env : "");
  g_settings_set_double (settings, "input-price",
                         CLAMP (kaged_profile_get_input_price (profile), 0.0, MAX_AMOUNT));
  g_settings_set_double (settings, "output-price",
                         CLAMP (kaged_profile_get_output_price (profile), 0.0, MAX_AMOUNT));
  g_settings_set_string (settings, "spend-limit-period",
                         kaged_enum_to_nick (KAGED_TYPE_SPEND_PERIOD,
                                             kaged_profile_get_spend_limit_period (profile)));
  g_settings_set_double (settings, "spend-limit",
                         CLAMP (kaged_profile_get_spend_limit (profile), 0.0, MAX_AMOUNT));
  g_settings_apply (settings);
}

/* Ties the properties of @profile to @settings, both ways; the settings
 * win at first. */
static void
bind_profile (GSettings    *settings,
              KagedProfile *profile)
{
  for (guint i = 0; i < G_N_ELEMENTS (string_keys); i++)
    g_settings_bind_with_mapping (settings, string_keys[i], profile, string_keys[i],
                                  G_SETTINGS_BIND_DEFAULT,
                                  string_from_settings, string_to_settings, NULL, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (amount_keys); i++)
    g_settings_bind_with_mapping (settings, amount_keys[i], profile, amount_keys[i],
                                  G_SETTINGS_BIND_DEFAULT,
                                  amount_from_settings, amount_to_settings, NULL, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (enum_keys); i++)
    g_settings_bind (settings, enum_keys[i], profile, enum_keys[i], G_SETTINGS_BIND_DEFAULT);
}

static void
unbind_profile (KagedProfile *profile)
{
  for (guint i = 0; i < G_N_ELEMENTS (string_keys); i++)
    g_settings_unbind (profile, string_keys[i]);
  for (guint i = 0; i < G_N_ELEMENTS (amount_keys); i++)
    g_settings_unbind (profile, amount_keys[i]);
  for (guint i = 0; i < G_N_ELEMENTS (enum_keys); i++)
    g_settings_unbind (profile, enum_keys[i]);
}

static void
entry_free (Entry *entry)
{
  unbind_profile (entry->profile);
  g_clear_object (&entry->profile);
  g_clear_object (&entry->settings);
  g_free (entry);
}

static Entry *
entry_new (KagedProfiles *self,
           const char    *id,
           KagedProfile  *profile)
{
  Entry *entry = g_new0 (Entry, 1);

  if (profile != NULL)
    {
      entry->profile = g_object_ref (profile);
      write_profile (self, id, profile);
    }
  else
    entry->profile = g_object_new (KAGED_TYPE_PROFILE, NULL);

  kaged_profile_set_id (entry->profile, id);
  entry->settings = new_profile_settings (self, id);
  bind_profile (entry->settings, entry->profile);

  return entry;
}

static guint
find_entry (KagedProfiles *self,
            const char    *id)
{
  for (guint i = 0; i < self->entries->len; i++)
    {
      Entry *entry = g_ptr_array_index (self->entries, i);

      /* While the list is rebuilt, moved entries leave a hole. */
      if (entry != NULL && g_strcmp0 (kaged_profile_get_id (entry->profile), id) == 0)
        return i;
    }

  return G_MAXUINT;
}

static void
save_ids (KagedProfiles *self)
{
  g_autoptr(GStrvBuilder) builder = g_strv_builder_new ();
  g_auto(GStrv) ids = NULL;

  for (guint i = 0; i < self->entries->len; i++)
    {
      Entry *entry = g_ptr_array_index (self->entries, i);

      g_strv_builder_add (builder, kaged_profile_get_id (entry->profile));
    }

  ids = g_strv_builder_end (builder);
  g_settings_set_strv (self->settings, "profiles", (const char * const *)ids);
}

/* The default is the profile `default-profile` names, or the first one
 * when it names none. */
static void
update_default (KagedProfiles *self)
{
  g_autofree char *id = g_settings_get_string (self->settings, "default-profile");
  KagedProfile *profile = kaged_profiles_lookup (self, id);

  if (profile == NULL && self->entries->len > 0)
    profile = ((Entry *)g_ptr_array_index (self->entries, 0))->profile;

  if (g_set_object (&self->default_profile, profile))
    g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_DEFAULT_PROFILE]);
}

/* Brings the list in line with the `profiles` key, keeping the entries of
 * the ids that stay. */
static void
sync_ids (KagedProfiles *self)
{
  g_auto(GStrv) ids = g_settings_get_strv (self->settings, "profiles");
  g_autoptr(GPtrArray) entries = g_ptr_array_new_with_free_func ((GDestroyNotify)entry_free);
  g_autoptr(GPtrArray) removed = g_ptr_array_new_with_free_func (g_free);
  gboolean same = TRUE;
  guint old_len;

  for (guint i = 0; ids[i] != NULL; i++)
    {
      guint position;

      if (!valid_id (ids[i]))
        {
          g_debug ("Skipping the profile id “%s”, which cannot name a settings path", ids[i]);
          continue;
        }

      /* Listed twice: the first counts. */
      for (guint j = 0; j < entries->len; j++)
        {
          Entry *entry = g_ptr_array_index (entries, j);

          if (g_str_equal (kaged_profile_get_id (entry->profile), ids[i]))
            goto next;
        }

      position = find_entry (self, ids[i]);
      if (position != G_MAXUINT)
        {
          if (position != entries->len)
            same = FALSE;
          g_ptr_array_add (entries, g_ptr_array_steal_index (self->entries, position));
          g_ptr_array_insert (self->entries, position, NULL);
        }
      else
        {
          same = FALSE;
          g_ptr_array_add (entries, entry_new (self, ids[i], NULL));
        }

    next:
      ;
    }

  old_len = self->entries->len;
  for (guint i = 0; i < old_len; i++)
    {
      if (g_ptr_array_index (self->entries, i) != NULL)
        same = FALSE;
    }
  same = same && entries->len == old_len;

  /* The placeholders of the entries that moved over are not freed; the
   * others are profiles removed elsewhere. */
  g_ptr_array_set_free_func (self->entries, NULL);
  for (guint i = 0; i < old_len; i++)
    {
      Entry *entry = g_ptr_array_index (self->entries, i);

      if (entry != NULL)
        {
          g_ptr_array_add (removed, g_strdup (kaged_profile_get_id (entry->profile)));
          entry_free (entry);
        }
    }
  g_ptr_array_unref (self->entries);
  self->entries = g_steal_pointer (&entries);

  if (!same)
    g_list_model_items_changed (G_LIST_MODEL (self), 0, old_len, self->entries->len);

  update_default (self);

  for (guint i = 0; i < removed->len; i++)
    g_signal_emit (self, signals [PROFILE_REMOVED], 0, g_ptr_array_index (removed, i));
}

/* The first start with profiles: the single provider of older versions
 * becomes the profile "default" (on a fresh install, a local Ollama). */
static void
migrate (KagedProfiles *self)
{
  g_autoptr(KagedProfile) legacy = kaged_profile_new_from_settings (self->settings);
  const char * const ids[] = { KAGED_PROFILE_DEFAULT_ID, NULL };

  g_debug ("Moving the provider settings to the profile “%s”", KAGED_PROFILE_DEFAULT_ID);

  write_profile (self, KAGED_PROFILE_DEFAULT_ID, legacy);
  g_settings_set_string (self->settings, "default-profile", KAGED_PROFILE_DEFAULT_ID);
  g_settings_set_strv (self->settings, "profiles", ids);
}

static void
profiles_changed_cb (KagedProfiles *self,
                     const char    *key,
                     GSettings     *settings)
{
  sync_ids (self);
}

static void
default_changed_cb (KagedProfiles *self,
                    const char    *key,
                    GSettings     *settings)
{
  update_default (self);
}

static GType
kaged_profiles_get_item_type (GListModel *model)
{
  return KAGED_TYPE_PROFILE;
}

static guint
kaged_profiles_get_n_items (GListModel *model)
{
  return KAGED_PROFILES (model)->entries->len;
}

static gpointer
kaged_profiles_get_item (GListModel *model,
                         guint       position)
{
  KagedProfiles *self = KAGED_PROFILES (model);
  Entry *entry;

  if (position >= self->entries->len)
    return NULL;

  entry = g_ptr_array_index (self->entries, position);

  return g_object_ref (entry->profile);
}

static void
kaged_profiles_list_model_init (GListModelInterface *iface)
{
  iface->get_item_type = kaged_profiles_get_item_type;
  iface->get_n_items = kaged_profiles_get_n_items;
  iface->get_item = kaged_profiles_get_item;
}

static void
kaged_profiles_dispose (GObject *object)
{
  KagedProfiles *self = (KagedProfiles *)object;

  if (self->settings != NULL)
    g_signal_handlers_disconnect_by_data (self->settings, self);

  g_clear_pointer (&self->entries, g_ptr_array_unref);
  g_clear_object (&self->default_profile);
  g_clear_object (&self->keyring);
  g_clear_object (&self->settings);

  G_OBJECT_CLASS (kaged_profiles_parent_class)->dispose (object);
}

static void
kaged_profiles_finalize (GObject *object)
{
  KagedProfiles *self = (KagedProfiles *)object;

  g_clear_pointer (&self->profile_schema, g_settings_schema_unref);
  g_clear_pointer (&self->path_prefix, g_free);

  G_OBJECT_CLASS (kaged_profiles_parent_class)->finalize (object);
}

static void
kaged_profiles_get_property (GObject    *object,
                             guint       prop_id,
                             GValue     *value,
                             GParamSpec *pspec)
{
  KagedProfiles *self = KAGED_PROFILES (object);

  switch (prop_id)
    {
    case PROP_DEFAULT_PROFILE:
      g_value_set_object (value, self->default_profile);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_profiles_class_init (KagedProfilesClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = kaged_profiles_dispose;
  object_class->finalize = kaged_profiles_finalize;
  object_class->get_property = kaged_profiles_get_property;

  properties [PROP_DEFAULT_PROFILE] =
    g_param_spec_object ("default-profile", NULL, NULL,
                         KAGED_TYPE_PROFILE,
                         (G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);

  /**
   * KagedProfiles::profile-removed:
   * @id: the id the profile had
   *
   * A profile left the list, removed here or elsewhere (in the settings);
   * what was kept for it elsewhere can go.
   */
  signals [PROFILE_REMOVED] =
    g_signal_new ("profile-removed",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void
kaged_profiles_init (KagedProfiles *self)
{
  self->entries = g_ptr_array_new_with_free_func ((GDestroyNotify)entry_free);
}

/**
 * kaged_profiles_new:
 * @settings: the application's settings (schema io.github.kaged.Kaged);
 *   the profiles use its backend
 *
 * Reads the profiles, moving the provider settings of older versions to
 * the profile "default" when there are none yet.
 *
 * Returns: (transfer full): the profiles
 */
KagedProfiles *
kaged_profiles_new (GSettings *settings)
{
  GSettingsSchemaSource *source = g_settings_schema_source_get_default ();
  g_autofree char *path = NULL;
  g_auto(GStrv) ids = NULL;
  KagedProfiles *self;

  g_return_val_if_fail (G_IS_SETTINGS (settings), NULL);

  self = g_object_new (KAGED_TYPE_PROFILES, NULL);
  self->settings = g_object_ref (settings);
  self->profile_schema = source != NULL
    ? g_settings_schema_source_lookup (source, KAGED_PROFILE_SCHEMA_ID, TRUE) : NULL;
  if (self->profile_schema == NULL)
    g_error ("The settings schema %s is not installed", KAGED_PROFILE_SCHEMA_ID);

  g_object_get (settings, "path", &path, NULL);
  self->path_prefix = g_strconcat (path, "profiles/", NULL);

  ids = g_settings_get_strv (settings, "profiles");
  if (ids[0] == NULL)
    migrate (self);

  sync_ids (self);
  if (self->entries->len == 0)
    {
      /* Only ids no settings path can hold: start over from the old keys. */
      migrate (self);
      sync_ids (self);
    }

  g_signal_connect_object (settings, "changed::profiles",
                           G_CALLBACK (profiles_changed_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (settings, "changed::default-profile",
                           G_CALLBACK (default_changed_cb), self, G_CONNECT_SWAPPED);

  return self;
}

/**
 * kaged_profiles_get_settings:
 *
 * Returns: (transfer none): the application's settings
 */
GSettings *
kaged_profiles_get_settings (KagedProfiles *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILES (self), NULL);

  return self->settings;
}

/**
 * kaged_profiles_get_keyring:
 *
 * Returns: (transfer none) (nullable): where the profiles' keys are
 */
KagedKeyring *
kaged_profiles_get_keyring (KagedProfiles *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILES (self), NULL);

  return self->keyring;
}

/**
 * kaged_profiles_set_keyring:
 * @keyring: (nullable): where the profiles' keys are
 *
 * Removing a profile removes its key from @keyring.
 */
void
kaged_profiles_set_keyring (KagedProfiles *self,
                            KagedKeyring  *keyring)
{
  g_return_if_fail (KAGED_IS_PROFILES (self));
  g_return_if_fail (!keyring || KAGED_IS_KEYRING (keyring));

  g_set_object (&self->keyring, keyring);
}

/**
 * kaged_profiles_lookup:
 *
 * Returns: (transfer none) (nullable): the profile of @id, or %NULL
 */
KagedProfile *
kaged_profiles_lookup (KagedProfiles *self,
                       const char    *id)
{
  guint position;

  g_return_val_if_fail (KAGED_IS_PROFILES (self), NULL);

  if (id == NULL)
    return NULL;

  position = find_entry (self, id);
  if (position == G_MAXUINT)
    return NULL;

  return ((Entry *)g_ptr_array_index (self->entries, position))->profile;
}

/**
 * kaged_profiles_get_default:
 *
 * Returns: (transfer none): the profile new replies come from
 */
KagedProfile *
kaged_profiles_get_default (KagedProfiles *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILES (self), NULL);

  return self->default_profile;
}

/**
 * kaged_profiles_set_default:
 * @id: a profile's id
 *
 * Makes the profile of @id the default, and saves it so.
 */
void
kaged_profiles_set_default (KagedProfiles *self,
                            const char    *id)
{
  g_return_if_fail (KAGED_IS_PROFILES (self));
  g_return_if_fail (kaged_profiles_lookup (self, id) != NULL);

  g_settings_set_string (self->settings, "default-profile", id);
  update_default (self);
}

/**
 * kaged_profiles_add:
 * @profile: a profile that is not saved yet
 *
 * Saves @profile at the end of the list. Without an id, or with one
 * already taken, it gets a new random one. From now on @profile is live:
 * what is set on it is saved, and changes to the settings show in it.
 *
 * Returns: (transfer none): @profile
 */
KagedProfile *
kaged_profiles_add (KagedProfiles *self,
                    KagedProfile  *profile)
{
  const char *id;
  g_autofree char *new_id = NULL;
  guint position;

  g_return_val_if_fail (KAGED_IS_PROFILES (self), NULL);
  g_return_val_if_fail (KAGED_IS_PROFILE (profile), NULL);

  id = kaged_profile_get_id (profile);
  if (!valid_id (id) || kaged_profiles_lookup (self, id) != NULL)
    {
      do
        {
          g_free (new_id);
          new_id = g_uuid_string_random ();
        }
      while (kaged_profiles_lookup (self, new_id) != NULL);
      id = new_id;
    }

  position = self->entries->len;
  g_ptr_array_add (self->entries, entry_new (self, id, profile));
  save_ids (self);
  g_list_model_items_changed (G_LIST_MODEL (self), position, 0, 1);

  return profile;
}

/* Removing: the profile leaves the list at once; its key leaves the
 * keyring in a worker thread. */

static void
clear_key_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  g_autoptr(GError) error = NULL;

  if (!kaged_keyring_clear_finish (KAGED_KEYRING (object), result, &error))
    {
      if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_warning ("The key of a removed profile could not be removed from the keyring: %s",
                   error->message);
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }

  g_task_return_boolean (task, TRUE);
}

/**
 * kaged_profiles_remove_async:
 * @id: a profile's id
 *
 * Removes the profile of @id from the list and its settings, and its key
 * from the keyring. The last profile cannot be removed; when the default
 * goes, the first profile left becomes the default.
 */
void
kaged_profiles_remove_async (KagedProfiles       *self,
                             const char          *id,
                             GCancellable        *cancellable,
                             GAsyncReadyCallback  callback,
                             gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  g_auto(GStrv) keys = NULL;
  g_autofree char *key_id = NULL;
  g_autofree char *removed_id = NULL;
  Entry *entry;
  guint position;

  g_return_if_fail (KAGED_IS_PROFILES (self));
  g_return_if_fail (id != NULL);

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_profiles_remove_async);

  /* The id may belong to the profile about to go. */
  removed_id = g_strdup (id);
  id = removed_id;

  position = find_entry (self, id);
  if (position == G_MAXUINT)
    {
      g_task_return_new_error (task, KAGED_PROFILES_ERROR, KAGED_PROFILES_ERROR_NOT_FOUND,
                               _("There is no profile “%s”"), id);
      return;
    }
  if (self->entries->len == 1)
    {
      g_task_return_new_error (task, KAGED_PROFILES_ERROR, KAGED_PROFILES_ERROR_LAST_PROFILE,
                               "%s", _("The last profile cannot be removed"));
      return;
    }

  entry = g_ptr_array_steal_index (self->entries, position);
  key_id = g_strdup (kaged_profile_get_key_id (entry->profile));
  unbind_profile (entry->profile);

  keys = g_settings_schema_list_keys (self->profile_schema);
  for (guint i = 0; keys[i] != NULL; i++)
    g_settings_reset (entry->settings, keys[i]);

  /* The item stays alive for whoever holds it, detached. */
  g_clear_object (&entry->settings);
  g_clear_object (&entry->profile);
  g_free (entry);

  save_ids (self);
  g_list_model_items_changed (G_LIST_MODEL (self), position, 1, 0);
  update_default (self);
  g_signal_emit (self, signals [PROFILE_REMOVED], 0, id);

  if (self->keyring == NULL)
    {
      g_task_return_boolean (task, TRUE);
      return;
    }

  kaged_keyring_clear_async (self->keyring, key_id, cancellable,
                             clear_key_cb, g_steal_pointer (&task));
}

gboolean
kaged_profiles_remove_finish (KagedProfiles  *self,
                              GAsyncResult   *result,
                              GError        **error)
{
  g_return_val_if_fail (KAGED_IS_PROFILES (self), FALSE);
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

/**
 * kaged_profiles_remove:
 * @id: a profile's id
 *
 * As kaged_profiles_remove_async(), without waiting for the keyring.
 *
 * Returns: %TRUE when the profile left the list, or %FALSE with @error set
 */
gboolean
kaged_profiles_remove (KagedProfiles  *self,
                       const char     *id,
                       GError        **error)
{
  g_return_val_if_fail (KAGED_IS_PROFILES (self), FALSE);
  g_return_val_if_fail (id != NULL, FALSE);

  if (kaged_profiles_lookup (self, id) == NULL)
    {
      g_set_error (error, KAGED_PROFILES_ERROR, KAGED_PROFILES_ERROR_NOT_FOUND,
                   _("There is no profile “%s”"), id);
      return FALSE;
    }
  if (self->entries->len == 1)
    {
      g_set_error_literal (error, KAGED_PROFILES_ERROR, KAGED_PROFILES_ERROR_LAST_PROFILE,
                           _("The last profile cannot be removed"));
      return FALSE;
    }

  kaged_profiles_remove_async (self, id, NULL, NULL, NULL);

  return TRUE;
}
