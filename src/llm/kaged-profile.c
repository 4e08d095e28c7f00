/* kaged-profile.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-profile"

#include "config.h"

#include <string.h>

#include <gio/gio.h>

#include "kaged-profile.h"
#include "kaged-retry-class.h"

G_DEFINE_ENUM_TYPE (KagedProviderKind, kaged_provider_kind,
  G_DEFINE_ENUM_VALUE (KAGED_PROVIDER_KIND_OLLAMA, "ollama"),
  G_DEFINE_ENUM_VALUE (KAGED_PROVIDER_KIND_OPENAI, "openai"),
  G_DEFINE_ENUM_VALUE (KAGED_PROVIDER_KIND_ANTHROPIC, "anthropic"))

struct _KagedProfile
{
  GObject            parent_instance;

  char              *name;
  KagedProviderKind  kind;
  char              *base_url;
  char              *model;
  char              *api_key_env;
  double             input_price;
  double             output_price;
};

G_DEFINE_FINAL_TYPE (KagedProfile, kaged_profile, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_NAME,
  PROP_KIND,
  PROP_BASE_URL,
  PROP_MODEL,
  PROP_API_KEY_ENV,
  PROP_INPUT_PRICE,
  PROP_OUTPUT_PRICE,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static void
kaged_profile_finalize (GObject *object)
{
  KagedProfile *self = (KagedProfile *)object;

  g_clear_pointer (&self->name, g_free);
  g_clear_pointer (&self->base_url, g_free);
  g_clear_pointer (&self->model, g_free);
  g_clear_pointer (&self->api_key_env, g_free);

  G_OBJECT_CLASS (kaged_profile_parent_class)->finalize (object);
}

static void
kaged_profile_get_property (GObject    *object,
                            guint       prop_id,
                            GValue     *value,
                            GParamSpec *pspec)
{
  KagedProfile *self = KAGED_PROFILE (object);

  switch (prop_id)
    {
    case PROP_NAME:
      g_value_set_string (value, self->name);
      break;

    case PROP_KIND:
      g_value_set_enum (value, self->kind);
      break;

    case PROP_BASE_URL:
      g_value_set_string (value, self->base_url);
      break;

    case PROP_MODEL:
      g_value_set_string (value, self->model);
      break;

    case PROP_API_KEY_ENV:
      g_value_set_string (value, self->api_key_env);
      break;

    case PROP_INPUT_PRICE:
      g_value_set_double (value, self->input_price);
      break;

    case PROP_OUTPUT_PRICE:
      g_value_set_double (value, self->output_price);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_profile_set_property (GObject      *object,
                            guint         prop_id,
                            const GValue *value,
                            GParamSpec   *pspec)
{
  KagedProfile *self = KAGED_PROFILE (object);

  switch (prop_id)
    {
    case PROP_NAME:
      kaged_profile_set_name (self, g_value_get_string (value));
      break;

    case PROP_KIND:
      kaged_profile_set_kind (self, g_value_get_enum (value));
      break;

    case PROP_BASE_URL:
      kaged_profile_set_base_url (self, g_value_get_string (value));
      break;

    case PROP_MODEL:
      kaged_profile_set_model (self, g_value_get_string (value));
      break;

    case PROP_API_KEY_ENV:
      kaged_profile_set_api_key_env (self, g_value_get_string (value));
      break;

    case PROP_INPUT_PRICE:
      kaged_profile_set_input_price (self, g_value_get_double (value));
      break;

    case PROP_OUTPUT_PRICE:
      kaged_profile_set_output_price (self, g_value_get_double (value));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_profile_class_init (KagedProfileClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = kaged_profile_finalize;
  object_class->get_property = kaged_profile_get_property;
  object_class->set_property = kaged_profile_set_property;

  properties [PROP_NAME] =
    g_param_spec_string ("name", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  properties [PROP_KIND] =
    g_param_spec_enum ("kind", NULL, NULL,
                       KAGED_TYPE_PROVIDER_KIND,
                       KAGED_PROVIDER_KIND_OLLAMA,
                       (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  properties [PROP_BASE_URL] =
    g_param_spec_string ("base-url", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  properties [PROP_MODEL] =
    g_param_spec_string ("model", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  properties [PROP_API_KEY_ENV] =
    g_param_spec_string ("api-key-env", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  properties [PROP_INPUT_PRICE] =
    g_param_spec_double ("input-price", NULL, NULL,
                         -1.0, G_MAXDOUBLE, -1.0,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  properties [PROP_OUTPUT_PRICE] =
    g_param_spec_double ("output-price", NULL, NULL,
                         -1.0, G_MAXDOUBLE, -1.0,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_profile_init (KagedProfile *self)
{
  self->kind = KAGED_PROVIDER_KIND_OLLAMA;
  self->input_price = -1.0;
  self->output_price = -1.0;
}

/**
 * kaged_profile_new:
 * @name: the profile's name, which also finds its key in the keyring
 * @kind: the wire it speaks
 * @base_url: (nullable): where, or %NULL for the kind's default
 * @model: the model to ask for
 *
 * Returns: (transfer full): a new profile
 */
KagedProfile *
kaged_profile_new (const char        *name,
                   KagedProviderKind  kind,
                   const char        *base_url,
                   const char        *model)
{
  return g_object_new (KAGED_TYPE_PROFILE,
                       "name", name,
                       "kind", kind,
                       "base-url", base_url,
                       "model", model,
                       NULL);
}

const char *
kaged_profile_get_name (KagedProfile *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), NULL);

  return self->name;
}

void
kaged_profile_set_name (KagedProfile *self,
                        const char   *name)
{
  g_return_if_fail (KAGED_IS_PROFILE (self));

  if (g_strcmp0 (self->name, name) != 0)
    {
      g_free (self->name);
      self->name = g_strdup (name);
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_NAME]);
    }
}

KagedProviderKind
kaged_profile_get_kind (KagedProfile *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), KAGED_PROVIDER_KIND_OLLAMA);

  return self->kind;
}

void
kaged_profile_set_kind (KagedProfile      *self,
                        KagedProviderKind  kind)
{
  g_return_if_fail (KAGED_IS_PROFILE (self));
  g_return_if_fail (kind <= KAGED_PROVIDER_KIND_ANTHROPIC);

  if (self->kind != kind)
    {
      self->kind = kind;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_KIND]);
    }
}

/**
 * kaged_profile_get_base_url:
 *
 * Returns: the base URL, or the kind's default when none was set
 */
const char *
kaged_profile_get_base_url (KagedProfile *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), NULL);

  return (self->base_url != NULL && self->base_url[0] != '\0')
    ? self->base_url : kaged_provider_kind_default_url (self->kind);
}

void
kaged_profile_set_base_url (KagedProfile *self,
                            const char   *base_url)
{
  g_return_if_fail (KAGED_IS_PROFILE (self));

  if (g_strcmp0 (self->base_url, base_url) != 0)
    {
      g_free (self->base_url);
      self->base_url = g_strdup (base_url);
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_BASE_URL]);
    }
}

const char *
kaged_profile_get_model (KagedProfile *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), NULL);

  return self->model;
}

void
kaged_profile_set_model (KagedProfile *self,
                         const char   *model)
{
  g_return_if_fail (KAGED_IS_PROFILE (self));

  if (g_strcmp0 (self->model, model) != 0)
    {
      g_free (self->model);
      self->model = g_strdup (model);
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_MODEL]);
    }
}

const char *
kaged_profile_get_api_key_env (KagedProfile *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), NULL);

  return self->api_key_env;
}

void
kaged_profile_set_api_key_env (KagedProfile *self,
                               const char   *api_key_env)
{
  g_return_if_fail (KAGED_IS_PROFILE (self));

  if (g_strcmp0 (self->api_key_env, api_key_env) != 0)
    {
      g_free (self->api_key_env);
      self->api_key_env = g_strdup (api_key_env);
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_API_KEY_ENV]);
    }
}

/**
 * kaged_profile_get_input_price:
 *
 * Returns: the price per million tokens, or a negative number when unknown
 */
double
kaged_profile_get_input_price (KagedProfile *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), -1.0);

  return self->input_price;
}

void
kaged_profile_set_input_price (KagedProfile *self,
                               double        price)
{
  g_return_if_fail (KAGED_IS_PROFILE (self));

  price = MAX (price, -1.0);
  if (self->input_price != price)
    {
      self->input_price = price;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_INPUT_PRICE]);
    }
}

/**
 * kaged_profile_get_output_price:
 *
 * Returns: the price per million tokens, or a negative number when unknown
 */
double
kaged_profile_get_output_price (KagedProfile *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), -1.0);

  return self->output_price;
}

void
kaged_profile_set_output_price (KagedProfile *self,
                                double        price)
{
  g_return_if_fail (KAGED_IS_PROFILE (self));

  price = MAX (price, -1.0);
  if (self->output_price != price)
    {
      self->output_price = price;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_OUTPUT_PRICE]);
    }
}

/**
 * kaged_provider_kind_default_url:
 *
 * Returns: where a provider of @kind is found when a profile says nothing
 */
const char *
kaged_provider_kind_default_url (KagedProviderKind kind)
{
  switch (kind)
    {
    case KAGED_PROVIDER_KIND_OPENAI:
      return KAGED_PROFILE_DEFAULT_OPENAI_URL;

    case KAGED_PROVIDER_KIND_ANTHROPIC:
      return KAGED_PROFILE_DEFAULT_ANTHROPIC_URL;

    case KAGED_PROVIDER_KIND_OLLAMA:
    default:
      return KAGED_PROFILE_DEFAULT_OLLAMA_URL;
    }
}

/**
 * kaged_url_is_local:
 *
 * Returns: %TRUE when @url points at this machine: `localhost`, a name
 *   under `.localhost`, or a loopback address (127.0.0.0/8, ::1)
 */
gboolean
kaged_url_is_local (const char *url)
{
  g_autoptr(GUri) uri = NULL;
  g_autoptr(GInetAddress) address = NULL;
  g_autofree char *host = NULL;
  const char *raw;
  gsize len;

  if (url == NULL || !(uri = g_uri_parse (url, G_URI_FLAGS_NONE, NULL)))
    return FALSE;
  if ((raw = g_uri_get_host (uri)) == NULL)
    return FALSE;

  /* A name may end with the root's dot. */
  host = g_ascii_strdown (raw, -1);
  len = strlen (host);
  if (len > 0 && host[len - 1] == '.')
    host[len - 1] = '\0';

  if (g_str_equal (host, "localhost") || g_str_has_suffix (host, ".localhost"))
    return TRUE;

  address = g_inet_address_new_from_string (host);
  return address != NULL && g_inet_address_get_is_loopback (address);
}

/**
 * kaged_provider_kind_needs_key:
 * @base_url: (nullable): where the provider is, %NULL for the default
 *
 * Whether a provider of @kind at @base_url can only be used with an API
 * key: never for Ollama; for the OpenAI-compatible wire unless it is on
 * this machine (llama.cpp, vLLM, LM Studio — then no Authorization header
 * is sent); always for Anthropic.
 */
gboolean
kaged_provider_kind_needs_key (KagedProviderKind  kind,
                               const char        *base_url)
{
  if (base_url == NULL)
    base_url = kaged_provider_kind_default_url (kind);

  switch (kind)
    {
    case KAGED_PROVIDER_KIND_OLLAMA:
      return FALSE;

    case KAGED_PROVIDER_KIND_OPENAI:
      return !kaged_url_is_local (base_url);

    case KAGED_PROVIDER_KIND_ANTHROPIC:
    default:
      return TRUE;
    }
}

/**
 * kaged_profile_new_from_settings:
 * @settings: (nullable): the application's settings, or %NULL
 *
 * The provider of the preferences (`provider-kind`, `provider-base-url`,
 * `provider-model`, `provider-api-key-env` and its prices); without
 * settings, a local Ollama.
 *
 * Returns: (transfer full): a profile named "default"
 */
KagedProfile *
kaged_profile_new_from_settings (GSettings *settings)
{
  g_autofree char *kind_name = NULL;
  g_autofree char *base_url = NULL;
  g_autofree char *model = NULL;
  g_autofree char *api_key_env = NULL;
  int kind = KAGED_PROVIDER_KIND_OLLAMA;
  KagedProfile *profile;

  g_return_val_if_fail (!settings || G_IS_SETTINGS (settings), NULL);

  if (settings == NULL)
    return kaged_profile_new ("default", KAGED_PROVIDER_KIND_OLLAMA,
                              KAGED_PROFILE_DEFAULT_OLLAMA_URL, "llama3.2");

  kind_name = g_settings_get_string (settings, "provider-kind");
  base_url = g_settings_get_string (settings, "provider-base-url");
  model = g_settings_get_string (settings, "provider-model");
  api_key_env = g_settings_get_string (settings, "provider-api-key-env");

  if (!kaged_enum_from_nick (KAGED_TYPE_PROVIDER_KIND, kind_name, &kind))
    kind = KAGED_PROVIDER_KIND_OLLAMA;

  profile = kaged_profile_new ("default", kind,
                               base_url[0] != '\0' ? base_url : kaged_provider_kind_default_url (kind),
                               model);
  if (api_key_env[0] != '\0')
    kaged_profile_set_api_key_env (profile, api_key_env);

  kaged_profile_set_input_price (profile, g_settings_get_double (settings, "provider-input-price"));
  kaged_profile_set_output_price (profile, g_settings_get_double (settings, "provider-output-price"));

  return profile;
}
