/* kaged-profile.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-profile"

#include "config.h"

#include <string.h>

#include <gio/gio.h>
#include <glib/gi18n.h>

#include "kaged-profile.h"
#include "kaged-retry-class.h"

G_DEFINE_ENUM_TYPE (KagedProviderKind, kaged_provider_kind,
  G_DEFINE_ENUM_VALUE (KAGED_PROVIDER_KIND_OLLAMA, "ollama"),
  G_DEFINE_ENUM_VALUE (KAGED_PROVIDER_KIND_OPENAI, "openai"),
  G_DEFINE_ENUM_VALUE (KAGED_PROVIDER_KIND_ANTHROPIC, "anthropic"))

G_DEFINE_ENUM_TYPE (KagedSpendPeriod, kaged_spend_period,
  G_DEFINE_ENUM_VALUE (KAGED_SPEND_PERIOD_NONE, "none"),
  G_DEFINE_ENUM_VALUE (KAGED_SPEND_PERIOD_DAILY, "daily"),
  G_DEFINE_ENUM_VALUE (KAGED_SPEND_PERIOD_MONTHLY, "monthly"))

struct _KagedProfile
{
  GObject            parent_instance;

  char              *id;
  char              *name;
  KagedProviderKind  kind;
  char              *base_url;
  char              *model;
  char              *api_key_env;
  double             input_price;
  double             output_price;
  KagedSpendPeriod   spend_limit_period;
  double             spend_limit;
};

G_DEFINE_FINAL_TYPE (KagedProfile, kaged_profile, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_ID,
  PROP_NAME,
  PROP_KIND,
  PROP_BASE_URL,
  PROP_MODEL,
  PROP_API_KEY_ENV,
  PROP_INPUT_PRICE,
  PROP_OUTPUT_PRICE,
  PROP_SPEND_LIMIT_PERIOD,
  PROP_SPEND_LIMIT,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static void
kaged_profile_finalize (GObject *object)
{
  KagedProfile *self = (KagedProfile *)object;

  g_clear_pointer (&self->id, g_free);
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
    case PROP_ID:
      g_value_set_string (value, self->id);
      break;

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

    case PROP_SPEND_LIMIT_PERIOD:
      g_value_set_enum (value, self->spend_limit_period);
      break;

    case PROP_SPEND_LIMIT:
      g_value_set_double (value, self->spend_limit);
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
    case PROP_ID:
      kaged_profile_set_id (self, g_value_get_string (value));
      break;

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

    case PROP_SPEND_LIMIT_PERIOD:
      kaged_profile_set_spend_limit_period (self, g_value_get_enum (value));
      break;

    case PROP_SPEND_LIMIT:
      kaged_profile_set_spend_limit (self, g_value_get_double (value));
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

  properties [PROP_ID] =
    g_param_spec_string ("id", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

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

  properties [PROP_SPEND_LIMIT_PERIOD] =
    g_param_spec_enum ("spend-limit-period", NULL, NULL,
                       KAGED_TYPE_SPEND_PERIOD,
                       KAGED_SPEND_PERIOD_NONE,
                       (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  properties [PROP_SPEND_LIMIT] =
    g_param_spec_double ("spend-limit", NULL, NULL,
                         0.0, G_MAXDOUBLE, 0.0,
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

/**
 * kaged_profile_copy:
 *
 * Returns: (transfer full): a new profile with the same id and settings,
 *   which follows neither @self nor the preferences
 */
KagedProfile *
kaged_profile_copy (KagedProfile *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), NULL);

  return g_object_new (KAGED_TYPE_PROFILE,
                       "id", self->id,
                       "name", self->name,
                       "kind", self->kind,
                       "base-url", self->base_url,
                       "model", self->model,
                       "api-key-env", self->api_key_env,
                       "input-price", self->input_price,
                       "output-price", self->output_price,
                       "spend-limit-period", self->spend_limit_period,
                       "spend-limit", self->spend_limit,
                       NULL);
}

/**
 * kaged_profile_get_id:
 *
 * Returns: (nullable): the stable id of a saved profile, or %NULL
 */
const char *
kaged_profile_get_id (KagedProfile *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), NULL);

  return self->id;
}

void
kaged_profile_set_id (KagedProfile *self,
                      const char   *id)
{
  g_return_if_fail (KAGED_IS_PROFILE (self));

  if (g_strcmp0 (self->id, id) != 0)
    {
      g_free (self->id);
      self->id = g_strdup (id);
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_ID]);
    }
}

/**
 * kaged_profile_get_key_id:
 *
 * Returns: (nullable): what the keyring knows the profile's key by: its
 *   id, or for a profile that was never saved, its name
 */
const char *
kaged_profile_get_key_id (KagedProfile *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), NULL);

  return (self->id != NULL && self->id[0] != '\0') ? self->id : self->name;
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

KagedSpendPeriod
kaged_profile_get_spend_limit_period (KagedProfile *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), KAGED_SPEND_PERIOD_NONE);

  return self->spend_limit_period;
}

void
kaged_profile_set_spend_limit_period (KagedProfile     *self,
                                      KagedSpendPeriod  period)
{
  g_return_if_fail (KAGED_IS_PROFILE (self));
  g_return_if_fail (period <= KAGED_SPEND_PERIOD_MONTHLY);

  if (self->spend_limit_period != period)
    {
      self->spend_limit_period = period;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_SPEND_LIMIT_PERIOD]);
    }
}

/**
 * kaged_profile_get_spend_limit:
 *
 * Returns: the most to spend through the profile in one period, in the
 *   prices' currency; 0 for no limit
 */
double
kaged_profile_get_spend_limit (KagedProfile *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), 0.0);

  return self->spend_limit;
}

void
kaged_profile_set_spend_limit (KagedProfile *self,
                               double        limit)
{
  g_return_if_fail (KAGED_IS_PROFILE (self));

  limit = MAX (limit, 0.0);
  if (self->spend_limit != limit)
    {
      self->spend_limit = limit;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_SPEND_LIMIT]);
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
 * kaged_provider_kind_to_label:
 *
 * Returns: how people call a provider of @kind, translated
 */
const char *
kaged_provider_kind_to_label (KagedProviderKind kind)
{
  switch (kind)
    {
    case KAGED_PROVIDER_KIND_OPENAI:
      return _("OpenAI-compatible");

    case KAGED_PROVIDER_KIND_ANTHROPIC:
      return _("Anthropic");

    case KAGED_PROVIDER_KIND_OLLAMA:
    default:
      return _("Ollama");
    }
}

/**
 * kaged_profile_new_from_settings:
 * @settings: (nullable): the application's settings, or %NULL
 *
 * The single provider of the settings of older versions
 * (`provider-kind`, `provider-base-url`, `provider-model`,
 * `provider-api-key-env`, its prices and `spend-limit-period`,
 * `spend-limit`): what becomes the profile "default" on the first start
 * with profiles. Without settings, a local Ollama.
 *
 * Returns: (transfer full): a profile with the id "default", named after
 *   its kind
 */
KagedProfile *
kaged_profile_new_from_settings (GSettings *settings)
{
  g_autofree char *kind_name = NULL;
  g_autofree char *base_url = NULL;
  g_autofree char *model = NULL;
  g_autofree char *api_key_env = NULL;
  g_autofree char *period_name = NULL;
  int kind = KAGED_PROVIDER_KIND_OLLAMA;
  int period = KAGED_SPEND_PERIOD_NONE;
  KagedProfile *profile;

  g_return_val_if_fail (!settings || G_IS_SETTINGS (settings), NULL);

  if (settings == NULL)
    {
      profile = kaged_profile_new (kaged_provider_kind_to_label (KAGED_PROVIDER_KIND_OLLAMA),
                                   KAGED_PROVIDER_KIND_OLLAMA,
                                   KAGED_PROFILE_DEFAULT_OLLAMA_URL, "llama3.2");
      kaged_profile_set_id (profile, KAGED_PROFILE_DEFAULT_ID);
      return profile;
    }

  kind_name = g_settings_get_string (settings, "provider-kind");
  base_url = g_settings_get_string (settings, "provider-base-url");
  model = g_settings_get_string (settings, "provider-model");
  api_key_env = g_settings_get_string (settings, "provider-api-key-env");
  period_name = g_settings_get_string (settings, "spend-limit-period");

  if (!kaged_enum_from_nick (KAGED_TYPE_PROVIDER_KIND, kind_name, &kind))
    kind = KAGED_PROVIDER_KIND_OLLAMA;
  if (!kaged_enum_from_nick (KAGED_TYPE_SPEND_PERIOD, period_name, &period))
    period = KAGED_SPEND_PERIOD_NONE;

  profile = kaged_profile_new (kaged_provider_kind_to_label (kind), kind,
                               base_url[0] != '\0' ? base_url : kaged_provider_kind_default_url (kind),
                               model);
  kaged_profile_set_id (profile, KAGED_PROFILE_DEFAULT_ID);
  if (api_key_env[0] != '\0')
    kaged_profile_set_api_key_env (profile, api_key_env);

  kaged_profile_set_input_price (profile, g_settings_get_double (settings, "provider-input-price"));
  kaged_profile_set_output_price (profile, g_settings_get_double (settings, "provider-output-price"));
  kaged_profile_set_spend_limit_period (profile, period);
  kaged_profile_set_spend_limit (profile, g_settings_get_double (settings, "spend-limit"));

  return profile;
}
