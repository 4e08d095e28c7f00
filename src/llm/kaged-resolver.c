/* kaged-resolver.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-resolver"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-anthropic-provider.h"
#include "kaged-http.h"
#include "kaged-ollama-provider.h"
#include "kaged-openai-provider.h"
#include "kaged-resolver.h"
#include "kaged-retry.h"

/**
 * KagedResolver:
 *
 * Turns a #KagedProfile into a #KagedProvider the engine can use: the
 * provider of the profile's kind over the one shared #SoupSession, with the
 * profile's key, always wrapped in a #KagedRetryProvider (Tier 1). This is
 * the only way the engine gets a provider.
 *
 * The key comes from the environment variable the profile names, when it
 * is set and not empty, or else from the keyring entry of the profile's
 * name. Ollama needs none (the keyring is not asked); an OpenAI-compatible
 * server on this machine may do without one (then no Authorization header
 * is sent); Anthropic and remote OpenAI-compatible servers need one: with
 * none found, resolving fails with `credentials_unresolved` and no request
 * is ever sent. Keys are handed to the provider and wiped here; they never
 * reach a log or an error message.
 */
struct _KagedResolver
{
  GObject       parent_instance;

  SoupSession  *session;
  KagedKeyring *keyring;
  KagedClock   *clock;
  KagedRandom  *random;
  guint         timeout_ms;
};

G_DEFINE_FINAL_TYPE (KagedResolver, kaged_resolver, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_SESSION,
  PROP_KEYRING,
  PROP_CLOCK,
  PROP_RANDOM,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

/* The profile's name for messages (an unnamed profile has none). */
static const char *
display_name (KagedProfile *profile)
{
  const char *name = kaged_profile_get_name (profile);

  return name != NULL ? name : "";
}

static char *
key_from_env (KagedProfile *profile)
{
  const char *name = kaged_profile_get_api_key_env (profile);
  const char *value;

  if (name == NULL || name[0] == '\0')
    return NULL;

  value = g_getenv (name);
  if (value == NULL || value[0] == '\0')
    {
      g_debug ("Profile “%s”: the environment variable %s is not set",
               display_name (profile), name);
      return NULL;
    }

  return g_strdup (value);
}

/* Whether the keyring is worth asking: every kind but Ollama may use a key. */
static gboolean
wants_keyring (KagedProfile *profile)
{
  const char *key_id = kaged_profile_get_key_id (profile);

  return kaged_profile_get_kind (profile) != KAGED_PROVIDER_KIND_OLLAMA &&
         key_id != NULL && key_id[0] != '\0';
}

static gboolean
check_profile (KagedProfile  *profile,
               GError       **error)
{
  const char *base_url = kaged_profile_get_base_url (profile);
  const char *model = kaged_profile_get_model (profile);
  g_autoptr(GUri) uri = NULL;
  const char *scheme;

  if (model == NULL || model[0] == '\0')
    {
      g_propagate_error (error,
                         kaged_provider_error_new (KAGED_RETRY_CLASS_INVALID_REQUEST,
                                                   _("The profile “%s” names no model"),
                                                   display_name (profile)));
      return FALSE;
    }

  uri = g_uri_parse (base_url, G_URI_FLAGS_NONE, NULL);
  scheme = uri != NULL ? g_uri_get_scheme (uri) : NULL;
  if (scheme == NULL ||
      (g_ascii_strcasecmp (scheme, "http") != 0 && g_ascii_strcasecmp (scheme, "https") != 0) ||
      g_uri_get_host (uri) == NULL || g_uri_get_host (uri)[0] == '\0')
    {
      g_propagate_error (error,
                         kaged_provider_error_new (KAGED_RETRY_CLASS_INVALID_REQUEST,
                                                   _("The address “%s” of the profile “%s” is not an HTTP or HTTPS URL"),
                                                   base_url, display_name (profile)));
      return FALSE;
    }

  return TRUE;
}

static KagedProvider *
build_provider (KagedResolver  *self,
                KagedProfile   *profile,
                const char     *key,
                GError        **error)
{
  KagedProviderKind kind = kaged_profile_get_kind (profile);
  const char *base_url = kaged_profile_get_base_url (profile);
  const char *env = kaged_profile_get_api_key_env (profile);
  g_autoptr(GObject) inner = NULL;
  GType type;

  if (!check_profile (profile, error))
    return NULL;

  if (key == NULL && kaged_provider_kind_needs_key (kind, base_url))
    {
      GError *local_error;

      if (env != NULL && env[0] != '\0')
        local_error = kaged_provider_error_new (KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED,
                                                _("No API key for the profile “%s”: set the environment variable %s or store a key in Preferences"),
                                                display_name (profile), env);
      else
        local_error = kaged_provider_error_new (KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED,
                                                _("No API key for the profile “%s”: store a key in Preferences"),
                                                display_name (profile));
      g_debug ("Profile “%s”: no key found", display_name (profile));
      g_propagate_error (error, local_error);
      return NULL;
    }

  switch (kind)
    {
    case KAGED_PROVIDER_KIND_OPENAI:
      type = KAGED_TYPE_OPENAI_PROVIDER;
      break;

    case KAGED_PROVIDER_KIND_ANTHROPIC:
      type = KAGED_TYPE_ANTHROPIC_PROVIDER;
      break;

    case KAGED_PROVIDER_KIND_OLLAMA:
    default:
      type = KAGED_TYPE_OLLAMA_PROVIDER;
      break;
    }

  inner = g_object_new (type,
                        "session", self->session,
                        "base-url", base_url,
                        "model", kaged_profile_get_model (profile),
                        "api-key", key,
                        "clock", self->clock,
                        NULL);
  if (self->timeout_ms > 0)
    g_object_set (inner,
                  "first-byte-timeout-ms", self->timeout_ms,
                  "idle-timeout-ms", self->timeout_ms,
                  NULL);

  g_debug ("Profile “%s”: %s at %s, model %s, %s",
           display_name (profile), g_type_name (type), base_url,
           kaged_profile_get_model (profile), key != NULL ? "with a key" : "without a key");

  return kaged_retry_provider_new (KAGED_PROVIDER (inner), self->clock, self->random);
}

static void
kaged_resolver_constructed (GObject *object)
{
  KagedResolver *self = (KagedResolver *)object;

  G_OBJECT_CLASS (kaged_resolver_parent_class)->constructed (object);

  if (self->session == NULL)
    self->session = g_object_ref (kaged_http_get_default_session ());
  if (self->keyring == NULL)
    self->keyring = kaged_secret_keyring_new ();
  if (self->clock == NULL)
    self->clock = g_object_ref (kaged_clock_get_default ());
  if (self->random == NULL)
    self->random = g_object_ref (kaged_random_get_default ());
}

static void
kaged_resolver_dispose (GObject *object)
{
  KagedResolver *self = (KagedResolver *)object;

  g_clear_object (&self->session);
  g_clear_object (&self->keyring);
  g_clear_object (&self->clock);
  g_clear_object (&self->random);

  G_OBJECT_CLASS (kaged_resolver_parent_class)->dispose (object);
}

static void
kaged_resolver_get_property (GObject    *object,
                             guint       prop_id,
                             GValue     *value,
                             GParamSpec *pspec)
{
  KagedResolver *self = KAGED_RESOLVER (object);

  switch (prop_id)
    {
    case PROP_SESSION:
      g_value_set_object (value, self->session);
      break;

    case PROP_KEYRING:
      g_value_set_object (value, self->keyring);
      break;

    case PROP_CLOCK:
      g_value_set_object (value, self->clock);
      break;

    case PROP_RANDOM:
      g_value_set_object (value, self->random);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_resolver_set_property (GObject      *object,
                             guint         prop_id,
                             const GValue *value,
                             GParamSpec   *pspec)
{
  KagedResolver *self = KAGED_RESOLVER (object);

  switch (prop_id)
    {
    case PROP_SESSION:
      self->session = g_value_dup_object (value);
      break;

    case PROP_KEYRING:
      self->keyring = g_value_dup_object (value);
      break;

    case PROP_CLOCK:
      self->clock = g_value_dup_object (value);
      break;

    case PROP_RANDOM:
      self->random = g_value_dup_object (value);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_resolver_class_init (KagedResolverClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->constructed = kaged_resolver_constructed;
  object_class->dispose = kaged_resolver_dispose;
  object_class->get_property = kaged_resolver_get_property;
  object_class->set_property = kaged_resolver_set_property;

  properties [PROP_SESSION] =
    g_param_spec_object ("session", NULL, NULL,
                         SOUP_TYPE_SESSION,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));

  properties [PROP_KEYRING] =
    g_param_spec_object ("keyring", NULL, NULL,
                         KAGED_TYPE_KEYRING,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));

  properties [PROP_CLOCK] =
    g_param_spec_object ("clock", NULL, NULL,
                         KAGED_TYPE_CLOCK,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));

  properties [PROP_RANDOM] =
    g_param_spec_object ("random", NULL, NULL,
                         KAGED_TYPE_RANDOM,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_resolver_init (KagedResolver *self)
{
}

/**
 * kaged_resolver_new:
 * @session: (nullable): the session every provider shares, or %NULL for
 *   the application's
 * @keyring: (nullable): where keys are stored, or %NULL for the desktop
 *   keyring
 *
 * Returns: (transfer full): a resolver on the system clock
 */
KagedResolver *
kaged_resolver_new (SoupSession  *session,
                    KagedKeyring *keyring)
{
  return kaged_resolver_new_full (session, keyring, NULL, NULL);
}

/**
 * kaged_resolver_new_full:
 * @clock: (nullable): the clock of Tier 1's waits and of the providers'
 *   dates, or %NULL for the system's
 * @random: (nullable): the source of Tier 1's jitter, or %NULL
 *
 * Returns: (transfer full): a resolver
 */
KagedResolver *
kaged_resolver_new_full (SoupSession  *session,
                         KagedKeyring *keyring,
                         KagedClock   *clock,
                         KagedRandom  *random)
{
  g_return_val_if_fail (!session || SOUP_IS_SESSION (session), NULL);
  g_return_val_if_fail (!keyring || KAGED_IS_KEYRING (keyring), NULL);
  g_return_val_if_fail (!clock || KAGED_IS_CLOCK (clock), NULL);
  g_return_val_if_fail (!random || KAGED_IS_RANDOM (random), NULL);

  return g_object_new (KAGED_TYPE_RESOLVER,
                       "session", session,
                       "keyring", keyring,
                       "clock", clock,
                       "random", random,
                       NULL);
}

/**
 * kaged_resolver_get_session:
 *
 * Returns: (transfer none): the session every resolved provider uses
 */
SoupSession *
kaged_resolver_get_session (KagedResolver *self)
{
  g_return_val_if_fail (KAGED_IS_RESOLVER (self), NULL);

  return self->session;
}

/**
 * kaged_resolver_set_timeout:
 * @timeout_ms: how long a provider may stay silent, or 0 for the
 *   providers' own deadlines
 *
 * Sets how long providers resolved from now on wait for the headers of an
 * answer, and for progress in its body, before the call fails with
 * `timeout`.
 */
void
kaged_resolver_set_timeout (KagedResolver *self,
                            guint          timeout_ms)
{
  g_return_if_fail (KAGED_IS_RESOLVER (self));

  self->timeout_ms = timeout_ms;
}

/**
 * kaged_resolver_get_keyring:
 *
 * Returns: (transfer none): where keys are looked up
 */
KagedKeyring *
kaged_resolver_get_keyring (KagedResolver *self)
{
  g_return_val_if_fail (KAGED_IS_RESOLVER (self), NULL);

  return self->keyring;
}

/**
 * kaged_resolver_resolve:
 *
 * Resolves @profile now; the keyring lookup may block, so from the main
 * thread prefer kaged_resolver_resolve_async().
 *
 * Returns: (transfer full): a #KagedRetryProvider around the profile's
 *   provider, or %NULL with a %KAGED_PROVIDER_ERROR (`credentials_unresolved`
 *   when a key is needed and none was found, `invalid_request` for a
 *   profile without a model or a usable address) or %G_IO_ERROR_CANCELLED
 */
KagedProvider *
kaged_resolver_resolve (KagedResolver  *self,
                        KagedProfile   *profile,
                        GCancellable   *cancellable,
                        GError        **error)
{
  g_autoptr(GError) keyring_error = NULL;
  char *key;
  KagedProvider *provider;

  g_return_val_if_fail (KAGED_IS_RESOLVER (self), NULL);
  g_return_val_if_fail (KAGED_IS_PROFILE (profile), NULL);
  g_return_val_if_fail (!cancellable || G_IS_CANCELLABLE (cancellable), NULL);

  if (!check_profile (profile, error))
    return NULL;

  key = key_from_env (profile);

  if (key == NULL && wants_keyring (profile))
    {
      key = kaged_keyring_lookup (self->keyring, kaged_profile_get_key_id (profile),
                                  cancellable, &keyring_error);
      if (g_error_matches (keyring_error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        {
          g_propagate_error (error, g_steal_pointer (&keyring_error));
          return NULL;
        }
      if (keyring_error != NULL)
        g_debug ("The keyring could not be asked: %s", keyring_error->message);
    }

  provider = build_provider (self, profile, key, error);
  kaged_keyring_free_key (key);

  return provider;
}

static void
lookup_cb (GObject      *object,
           GAsyncResult *result,
           gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  g_autoptr(GError) error = NULL;
  KagedResolver *self = g_task_get_source_object (task);
  KagedProfile *profile = g_task_get_task_data (task);
  KagedProvider *provider;
  char *key;

  key = kaged_keyring_lookup_finish (KAGED_KEYRING (object), result, &error);

  if (g_task_return_error_if_cancelled (task))
    {
      kaged_keyring_free_key (key);
      return;
    }
  if (error != NULL)
    g_debug ("The keyring could not be asked: %s", error->message);
  g_clear_error (&error);

  provider = build_provider (self, profile, key, &error);
  kaged_keyring_free_key (key);

  if (provider == NULL)
    g_task_return_error (task, g_steal_pointer (&error));
  else
    g_task_return_pointer (task, provider, g_object_unref);
}

/**
 * kaged_resolver_resolve_async:
 *
 * Resolves @profile, asking the keyring in a worker thread when needed.
 */
void
kaged_resolver_resolve_async (KagedResolver       *self,
                              KagedProfile        *profile,
                              GCancellable        *cancellable,
                              GAsyncReadyCallback  callback,
                              gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  g_autoptr(GError) error = NULL;
  KagedProvider *provider;
  char *key;

  g_return_if_fail (KAGED_IS_RESOLVER (self));
  g_return_if_fail (KAGED_IS_PROFILE (profile));
  g_return_if_fail (!cancellable || G_IS_CANCELLABLE (cancellable));

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_resolver_resolve_async);
  g_task_set_task_data (task, g_object_ref (profile), g_object_unref);

  if (g_task_return_error_if_cancelled (task))
    return;

  if (!check_profile (profile, &error))
    {
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }

  key = key_from_env (profile);

  if (key == NULL && wants_keyring (profile))
    {
      kaged_keyring_lookup_async (self->keyring, kaged_profile_get_key_id (profile),
                                  cancellable, lookup_cb, g_steal_pointer (&task));
      return;
    }

  provider = build_provider (self, profile, key, &error);
  kaged_keyring_free_key (key);

  if (provider == NULL)
    g_task_return_error (task, g_steal_pointer (&error));
  else
    g_task_return_pointer (task, provider, g_object_unref);
}

/**
 * kaged_resolver_resolve_finish:
 *
 * Returns: (transfer full): as kaged_resolver_resolve()
 */
KagedProvider *
kaged_resolver_resolve_finish (KagedResolver  *self,
                               GAsyncResult   *result,
                               GError        **error)
{
  g_return_val_if_fail (KAGED_IS_RESOLVER (self), NULL);
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_resolver_resolve_async, NULL);

  return g_task_propagate_pointer (G_TASK (result), error);
}

static void
key_lookup_cb (GObject      *object,
               GAsyncResult *result,
               gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  g_autoptr(GError) error = NULL;
  char *key;

  key = kaged_keyring_lookup_finish (KAGED_KEYRING (object), result, &error);

  if (g_task_return_error_if_cancelled (task))
    {
      kaged_keyring_free_key (key);
      return;
    }
  if (error != NULL)
    g_debug ("The keyring could not be asked: %s", error->message);

  g_task_return_pointer (task, key, (GDestroyNotify)kaged_keyring_free_key);
}

/**
 * kaged_resolver_lookup_key_async:
 *
 * Finds the API key of @profile the way a run does: the environment
 * variable the profile names, then the keyring (in a worker thread).
 */
void
kaged_resolver_lookup_key_async (KagedResolver       *self,
                                 KagedProfile        *profile,
                                 GCancellable        *cancellable,
                                 GAsyncReadyCallback  callback,
                                 gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  char *key;

  g_return_if_fail (KAGED_IS_RESOLVER (self));
  g_return_if_fail (KAGED_IS_PROFILE (profile));
  g_return_if_fail (!cancellable || G_IS_CANCELLABLE (cancellable));

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_resolver_lookup_key_async);

  if (g_task_return_error_if_cancelled (task))
    return;

  key = key_from_env (profile);
  if (key == NULL && wants_keyring (profile))
    {
      kaged_keyring_lookup_async (self->keyring, kaged_profile_get_key_id (profile),
                                  cancellable, key_lookup_cb, g_steal_pointer (&task));
      return;
    }

  g_task_return_pointer (task, key, (GDestroyNotify)kaged_keyring_free_key);
}

/**
 * kaged_resolver_lookup_key_finish:
 *
 * Returns: (transfer full) (nullable): the key, to be released with
 *   kaged_keyring_free_key(), or %NULL when there is none (not an error)
 *   or with %G_IO_ERROR_CANCELLED
 */
char *
kaged_resolver_lookup_key_finish (KagedResolver  *self,
                                  GAsyncResult   *result,
                                  GError        **error)
{
  g_return_val_if_fail (KAGED_IS_RESOLVER (self), NULL);
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_resolver_lookup_key_async, NULL);

  return g_task_propagate_pointer (G_TASK (result), error);
}
