/* kaged-options.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-options"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "kaged-options.h"
#include "kaged-retry-class.h"
#include "kaged-store.h"

static const GOptionEntry entries[] = {
  { "version", 0, 0, G_OPTION_ARG_NONE, NULL,
    N_("Print the version and exit"), NULL },
  { "data-dir", 0, 0, G_OPTION_ARG_FILENAME, NULL,
    N_("Keep the conversation database in DIR"), N_("DIR") },
  { "check-database", 0, 0, G_OPTION_ARG_NONE, NULL,
    N_("Check that the conversation database can be opened, then exit"), NULL },
  { "provider-kind", 0, 0, G_OPTION_ARG_STRING, NULL,
    N_("For this run, the provider’s protocol: ollama, openai or anthropic"), N_("KIND") },
  { "provider-url", 0, 0, G_OPTION_ARG_STRING, NULL,
    N_("For this run, the provider’s base URL"), N_("URL") },
  { "model", 0, 0, G_OPTION_ARG_STRING, NULL,
    N_("For this run, the model to ask"), N_("NAME") },
  { "api-key-env", 0, 0, G_OPTION_ARG_STRING, NULL,
    N_("Take the provider’s API key from the environment variable NAME"), N_("NAME") },
  { "headless", 0, 0, G_OPTION_ARG_NONE, NULL,
    N_("Run without a window, serving the local HTTP API"), NULL },
  { "auto-retry", 0, 0, G_OPTION_ARG_NONE, NULL,
    N_("With --headless: retry failed replies on a countdown, as the window does"), NULL },
  { "api-port", 0, 0, G_OPTION_ARG_INT, NULL,
    N_("With --headless: serve the API on PORT (0 picks a free port)"), N_("PORT") },
  { "api-bind", 0, 0, G_OPTION_ARG_STRING, NULL,
    N_("With --headless: serve on this loopback address only (127.0.0.1 or ::1)"),
    N_("ADDRESS") },
  { "api-token-file", 0, 0, G_OPTION_ARG_FILENAME, NULL,
    N_("With --headless: read the bearer token from FILE, creating it when missing"),
    N_("FILE") },
  { "provider-timeout", 0, 0, G_OPTION_ARG_INT, NULL,
    N_("With --headless: give up on a provider that stays silent for SECONDS (default 60)"),
    N_("SECONDS") },
  { G_OPTION_REMAINING, 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME_ARRAY, NULL,
    NULL, NULL },
  { NULL }
};

/**
 * kaged_options_add_entries:
 *
 * Adds the options of `kaged` to @application's command line.
 */
void
kaged_options_add_entries (GApplication *application)
{
  g_application_add_main_option_entries (application, entries);
}

static char *
dup_string (GVariantDict *dict,
            const char   *name)
{
  const char *value = NULL;

  if (g_variant_dict_lookup (dict, name, "&s", &value))
    return g_strdup (value);

  return NULL;
}

static char *
dup_filename (GVariantDict *dict,
              const char   *name)
{
  const char *value = NULL;

  if (g_variant_dict_lookup (dict, name, "^&ay", &value) && value[0] != '\0')
    return g_strdup (value);

  return NULL;
}

/**
 * kaged_options_read:
 * @dict: the options GApplication parsed
 *
 * Returns: %TRUE, or %FALSE with @error set (a #G_OPTION_ERROR) when the
 *   command line does not make sense
 */
gboolean
kaged_options_read (KagedOptions  *self,
                    GVariantDict  *dict,
                    GError       **error)
{
  g_autofree const char **remaining = NULL;
  g_autofree char *data_dir = NULL;
  static const char * const headless_only[] = {
    "auto-retry", "api-port", "api-bind", "api-token-file", "provider-timeout",
  };

  g_return_val_if_fail (self != NULL, FALSE);

  memset (self, 0, sizeof *self);
  self->api_port = -1;

  if (g_variant_dict_lookup (dict, G_OPTION_REMAINING, "^a&ay", &remaining) &&
      remaining != NULL && remaining[0] != NULL)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   _("Unexpected argument “%s”"), remaining[0]);
      return FALSE;
    }

  data_dir = dup_filename (dict, "data-dir");
  if (data_dir != NULL)
    self->data_dir = g_canonicalize_filename (data_dir, NULL);
  self->provider_kind = dup_string (dict, "provider-kind");
  self->provider_url = dup_string (dict, "provider-url");
  self->model = dup_string (dict, "model");
  self->api_key_env = dup_string (dict, "api-key-env");
  self->headless = g_variant_dict_contains (dict, "headless");
  self->auto_retry = g_variant_dict_contains (dict, "auto-retry");
  self->api_bind = dup_string (dict, "api-bind");
  self->api_token_file = dup_filename (dict, "api-token-file");
  g_variant_dict_lookup (dict, "api-port", "i", &self->api_port);
  g_variant_dict_lookup (dict, "provider-timeout", "i", &self->provider_timeout);

  if (!self->headless)
    {
      for (guint i = 0; i < G_N_ELEMENTS (headless_only); i++)
        {
          if (g_variant_dict_contains (dict, headless_only[i]))
            {
              g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           _("--%s applies only with --headless"), headless_only[i]);
              return FALSE;
            }
        }
    }

  if (self->api_port < -1 || self->api_port > G_MAXUINT16)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           _("The port must be between 0 and 65535"));
      return FALSE;
    }

  if (self->provider_timeout < 0 || self->provider_timeout > 3600)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           _("The provider timeout must be between 1 and 3600 seconds, or 0 "
                             "for the default"));
      return FALSE;
    }

  /* The provider options are checked now, before anything starts. */
  {
    g_autoptr(KagedProfile) profile = kaged_options_build_profile (self, NULL, error);

    if (profile == NULL)
      return FALSE;
  }

  return TRUE;
}

void
kaged_options_clear (KagedOptions *self)
{
  g_clear_pointer (&self->data_dir, g_free);
  g_clear_pointer (&self->provider_kind, g_free);
  g_clear_pointer (&self->provider_url, g_free);
  g_clear_pointer (&self->model, g_free);
  g_clear_pointer (&self->api_key_env, g_free);
  g_clear_pointer (&self->api_bind, g_free);
  g_clear_pointer (&self->api_token_file, g_free);
}

/**
 * kaged_options_has_provider:
 *
 * Returns: whether the command line names a provider, a model or a key for
 *   this run
 */
gboolean
kaged_options_has_provider (const KagedOptions *self)
{
  return self->provider_kind != NULL || self->provider_url != NULL ||
         self->model != NULL || self->api_key_env != NULL;
}

/**
 * kaged_options_build_profile:
 * @base: (nullable): the default profile, or %NULL for a local Ollama
 *
 * The profile for this run: a copy of @base with what the command line
 * gives in its place. It is never saved. When the command line names
 * another kind or address, the copy stops being @base: it no longer finds
 * @base's key in the keyring, so that key never goes to another server.
 *
 * Returns: (transfer full): the profile, or %NULL with @error set
 */
KagedProfile *
kaged_options_build_profile (const KagedOptions  *self,
                             KagedProfile        *base,
                             GError             **error)
{
  g_autoptr(KagedProfile) profile = NULL;
  gboolean elsewhere = FALSE;

  g_return_val_if_fail (!base || KAGED_IS_PROFILE (base), NULL);

  profile = base != NULL ? kaged_profile_copy (base) : kaged_profile_new_from_settings (NULL);

  if (self->provider_kind != NULL)
    {
      int kind;

      if (!kaged_enum_from_nick (KAGED_TYPE_PROVIDER_KIND, self->provider_kind, &kind))
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       _("Unknown provider kind “%s”: use ollama, openai or anthropic"),
                       self->provider_kind);
          return NULL;
        }

      if ((KagedProviderKind)kind != kaged_profile_get_kind (profile))
        {
          kaged_profile_set_kind (profile, kind);
          kaged_profile_set_base_url (profile, kaged_provider_kind_default_url (kind));
          elsewhere = TRUE;
        }
    }

  if (self->provider_url != NULL)
    {
      g_autoptr(GUri) uri = g_uri_parse (self->provider_url, G_URI_FLAGS_NONE, NULL);

      if (uri == NULL ||
          (g_strcmp0 (g_uri_get_scheme (uri), "http") != 0 &&
           g_strcmp0 (g_uri_get_scheme (uri), "https") != 0))
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       _("“%s” is not an http or https address"), self->provider_url);
          return NULL;
        }

      if (g_strcmp0 (self->provider_url, kaged_profile_get_base_url (profile)) != 0)
        elsewhere = TRUE;
      kaged_profile_set_base_url (profile, self->provider_url);
    }

  if (self->model != NULL)
    {
      if (self->model[0] == '\0')
        {
          g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                               _("The model name is empty"));
          return NULL;
        }
      kaged_profile_set_model (profile, self->model);
    }

  if (self->api_key_env != NULL)
    kaged_profile_set_api_key_env (profile, self->api_key_env);

  if (elsewhere)
    {
      kaged_profile_set_id (profile, NULL);
      kaged_profile_set_name (profile, _("Command Line"));
    }

  return g_steal_pointer (&profile);
}

/**
 * kaged_options_get_core_flags:
 * @auto_retry: whether Tier 2 retries run
 *
 * With `--api-key-env` the key comes from the environment only, and the
 * desktop keyring is not asked (there may be none).
 *
 * Returns: the flags of the core to start
 */
KagedCoreFlags
kaged_options_get_core_flags (const KagedOptions *self,
                              gboolean            auto_retry)
{
  KagedCoreFlags flags = KAGED_CORE_FLAGS_NONE;

  if (auto_retry)
    flags |= KAGED_CORE_FLAGS_AUTO_RETRY;
  if (self->api_key_env != NULL)
    flags |= KAGED_CORE_FLAGS_NO_KEYRING;

  return flags;
}

/**
 * kaged_options_dup_db_path:
 *
 * Returns: (transfer full): where the conversation database is
 */
char *
kaged_options_dup_db_path (const KagedOptions *self)
{
  return kaged_store_default_path (self->data_dir);
}
