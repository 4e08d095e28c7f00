/* kaged-headless.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * `kaged --headless --api-port=PORT`: the application without a window.
 * It starts the same KagedCore the window does, hands it the local HTTP
 * API on the loopback interface and runs until SIGINT or SIGTERM, when
 * runs in flight are recorded cancelled. Tier 2 retries run only with
 * `--auto-retry`. Nothing here may touch GTK: there is no display.
 */

#define G_LOG_DOMAIN "kaged-headless"

#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <glib/gi18n.h>
#include <glib-unix.h>

#include "kaged-api-auth.h"
#include "kaged-api-server.h"
#include "kaged-api-token.h"
#include "kaged-core.h"
#include "kaged-headless.h"
#include "kaged-resolver.h"
#include "kaged-retry-class.h"
#include "kaged-store-errors.h"

/* How long runs cancelled at exit get to wind down. */
#define WIND_DOWN_MS 2000

static int
fail (const char *message)
{
  g_printerr ("%s: %s\n", PACKAGE_NAME, message);
  return EXIT_FAILURE;
}

/* The preferences, when their schema is installed: there may be none on a
 * server, and that is no reason to stop. */
static GSettings *
lookup_settings (void)
{
  GSettingsSchemaSource *source = g_settings_schema_source_get_default ();
  g_autoptr(GSettingsSchema) schema = NULL;
  g_autoptr(GSettingsSchema) profile_schema = NULL;
  static const char * const keys[] = {
    "profiles", "default-profile", "api-port",
    "provider-kind", "provider-base-url", "provider-model", "provider-api-key-env",
    "provider-input-price", "provider-output-price", "spend-limit-period", "spend-limit",
  };

  if (source != NULL)
    {
      schema = g_settings_schema_source_lookup (source, BASE_APPLICATION_ID, TRUE);
      profile_schema = g_settings_schema_source_lookup (source, KAGED_PROFILE_SCHEMA_ID, TRUE);
    }
  if (schema == NULL || profile_schema == NULL)
    return NULL;

  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      if (!g_settings_schema_has_key (schema, keys[i]))
        return NULL;
    }

  return g_settings_new_full (schema, NULL, NULL);
}

static gboolean
quit_cb (gpointer user_data)
{
  GMainLoop *loop = user_data;

  g_main_loop_quit (loop);

  return G_SOURCE_CONTINUE;
}

static gboolean
wind_down_timeout_cb (gpointer user_data)
{
  gboolean *timed_out = user_data;

  *timed_out = TRUE;

  return G_SOURCE_REMOVE;
}

/* Lets cancelled provider calls and the last event frames finish, until
 * the manager is gone or the time is up. */
static void
wind_down (KagedSessionManager **manager)
{
  gboolean timed_out = FALSE;
  guint timeout_id;

  timeout_id = g_timeout_add (WIND_DOWN_MS, wind_down_timeout_cb, &timed_out);

  while (*manager != NULL && !timed_out)
    g_main_context_iteration (NULL, TRUE);

  if (!timed_out)
    g_source_remove (timeout_id);
}

static void
flush_pending (void)
{
  for (guint i = 0; i < 100 && g_main_context_iteration (NULL, FALSE); i++)
    ;
}

static void
print_start (KagedCore  *core,
             const char *token_path,
             gboolean    token_created)
{
  KagedProfile *profile = kaged_core_get_profile (core);
  g_auto(GStrv) urls = kaged_core_server_dup_urls (kaged_core_get_server (core));
  g_autofree char *token_line = NULL;
  g_autofree char *provider_line = NULL;

  /* The first lines are for programs too: not translated. */
  for (guint i = 0; urls[i] != NULL; i++)
    g_print ("Listening on %s\n", urls[i]);

  if (token_created)
    token_line = g_strdup_printf (_("Created the API token in %s"), token_path);
  else
    token_line = g_strdup_printf (_("The API token is in %s"), token_path);
  provider_line = g_strdup_printf (_("Provider: %s at %s, model %s"),
                                   kaged_enum_to_nick (KAGED_TYPE_PROVIDER_KIND,
                                                       kaged_profile_get_kind (profile)),
                                   kaged_profile_get_base_url (profile),
                                   kaged_profile_get_model (profile));
  g_print ("%s\n%s\n", token_line, provider_line);
  fflush (stdout);
}

/**
 * kaged_headless_run:
 * @options: the command line, read already
 *
 * Returns: the exit status: 0 after SIGINT or SIGTERM, 1 when the API
 *   cannot start
 */
int
kaged_headless_run (const KagedOptions *options)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GSettings) settings = NULL;
  g_autoptr(KagedProfiles) profiles = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedCore) core = NULL;
  g_autoptr(KagedApiServer) server = NULL;
  g_autoptr(GMainLoop) loop = NULL;
  g_autofree char *token = NULL;
  g_autofree char *token_path = NULL;
  g_autofree char *db_path = NULL;
  KagedSessionManager *manager = NULL;
  gboolean token_created = FALSE;
  guint port;
  guint sigint_id;
  guint sigterm_id;

  if (options->api_bind != NULL && !kaged_api_check_address (options->api_bind, NULL, &error))
    return fail (error->message);

  settings = lookup_settings ();
  if (settings != NULL)
    profiles = kaged_profiles_new (settings);

  /* The default profile, or one the command line gives for this run. */
  if (profiles == NULL || kaged_options_has_provider (options))
    {
      profile = kaged_options_build_profile (options,
                                             profiles != NULL
                                               ? kaged_profiles_get_default (profiles) : NULL,
                                             &error);
      if (profile == NULL)
        return fail (error->message);
    }

  token_path = options->api_token_file != NULL ? g_strdup (options->api_token_file)
                                               : kaged_api_token_default_path ();
  token = kaged_api_token_load_or_create (token_path, &token_created, &error);
  if (token == NULL)
    return fail (error->message);

  if (options->api_key_env != NULL)
    {
      const char *value = g_getenv (options->api_key_env);

      if (value == NULL || value[0] == '\0')
        {
          g_autofree char *message =
            g_strdup_printf (_("The environment variable %s is not set; a provider that "
                               "needs a key will fail"),
                             options->api_key_env);

          g_printerr ("%s: %s\n", PACKAGE_NAME, message);
        }
    }

  db_path = kaged_options_dup_db_path (options);
  core = kaged_core_open (db_path, NULL,
                          kaged_options_get_core_flags (options, options->auto_retry), &error);
  if (core == NULL)
    {
      g_autofree char *message = kaged_describe_store_error (error, db_path);

      return fail (message);
    }

  if (options->provider_timeout > 0)
    kaged_resolver_set_timeout (kaged_core_get_resolver (core),
                                (guint)options->provider_timeout * 1000);
  /* The profiles of the preferences, each with its spend limit, hold
   * without a window too. */
  kaged_core_set_profiles (core, profiles);
  if (profile != NULL)
    kaged_core_set_profile (core, profile);

  if (options->api_port >= 0)
    port = options->api_port;
  else if (settings != NULL)
    port = MIN (g_settings_get_uint (settings, "api-port"), G_MAXUINT16);
  else
    port = 0;

  server = kaged_api_server_new (core, token);
  if (options->api_bind != NULL)
    kaged_api_server_listen_address (server, options->api_bind, port, &error);
  else
    kaged_api_server_listen (server, port, &error);

  if (error != NULL)
    {
      g_autofree char *message = g_strdup_printf (_("Could not serve the API: %s"),
                                                  error->message);

      return fail (message);
    }

  kaged_core_set_server (core, KAGED_CORE_SERVER (server));
  kaged_core_start (core);

  print_start (core, token_path, token_created);

  loop = g_main_loop_new (NULL, FALSE);
  sigint_id = g_unix_signal_add (SIGINT, quit_cb, loop);
  sigterm_id = g_unix_signal_add (SIGTERM, quit_cb, loop);

  g_main_loop_run (loop);

  g_message ("Stopping: runs in flight are recorded cancelled");

  manager = kaged_core_get_manager (core);
  g_object_add_weak_pointer (G_OBJECT (manager), (gpointer *)&manager);

  /* Runs in flight are recorded cancelled; event streams hear it first. */
  kaged_session_manager_shutdown (manager);
  flush_pending ();
  kaged_core_shutdown (core);
  flush_pending ();

  g_clear_object (&server);
  g_clear_object (&core);
  wind_down (&manager);

  g_source_remove (sigint_id);
  g_source_remove (sigterm_id);

  return EXIT_SUCCESS;
}
