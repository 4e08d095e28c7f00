/* kaged-headless.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * `kaged --headless --api-port=PORT`: opens the conversation database,
 * sets up the provider from the command line (or the preferences), serves
 * the local HTTP API on the loopback interface and runs until SIGINT or
 * SIGTERM, when runs in flight are recorded cancelled. Nothing here may
 * touch GTK: there is no display.
 */

#define G_LOG_DOMAIN "kaged-headless"

#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gi18n.h>
#include <glib-unix.h>

#include "kaged-api-server.h"
#include "kaged-api-token.h"
#include "kaged-headless.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-profile.h"
#include "kaged-resolver.h"
#include "kaged-retry-class.h"
#include "kaged-session-manager.h"
#include "kaged-store.h"

/* How long runs cancelled at exit get to wind down. */
#define WIND_DOWN_MS 2000

typedef struct
{
  gboolean  headless;
  int       api_port;
  char     *api_bind;
  char     *api_token_file;
  char     *data_dir;
  char     *provider_kind;
  char     *provider_url;
  char     *model;
  char     *api_key_env;
} Options;

static void
options_clear (Options *options)
{
  g_clear_pointer (&options->api_bind, g_free);
  g_clear_pointer (&options->api_token_file, g_free);
  g_clear_pointer (&options->data_dir, g_free);
  g_clear_pointer (&options->provider_kind, g_free);
  g_clear_pointer (&options->provider_url, g_free);
  g_clear_pointer (&options->model, g_free);
  g_clear_pointer (&options->api_key_env, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Options, options_clear)

/**
 * kaged_headless_wanted:
 *
 * Returns: whether the command line asks for `--headless`
 */
gboolean
kaged_headless_wanted (int    argc,
                       char **argv)
{
  for (int i = 1; i < argc && argv[i] != NULL; i++)
    {
      if (g_str_equal (argv[i], "--"))
        return FALSE;
      if (g_str_equal (argv[i], "--headless"))
        return TRUE;
    }

  return FALSE;
}

static int
fail (const char *message)
{
  g_printerr ("%s: %s\n", PACKAGE_NAME, message);
  return EXIT_FAILURE;
}

static char *
describe_store_error (const GError *error,
                      const char   *path)
{
  if (error->domain == KAGED_STORE_ERROR)
    {
      switch ((KagedStoreError) error->code)
        {
        case KAGED_STORE_ERROR_NOT_A_DATABASE:
          return g_strdup_printf (_("“%s” is not a Kaged conversation database. It was left "
                                    "untouched; start with --data-dir to use another folder."),
                                  path);

        case KAGED_STORE_ERROR_TOO_NEW:
          return g_strdup_printf (_("The conversations in “%s” were saved by a newer version "
                                    "of Kaged. Update Kaged to open them. The file was left "
                                    "untouched."),
                                  path);

        case KAGED_STORE_ERROR_LOCKED:
          return g_strdup_printf (_("Another Kaged is using “%s”. Stop it and try again."),
                                  path);

        case KAGED_STORE_ERROR_CORRUPT:
          return g_strdup_printf (_("“%s” is damaged and was left untouched. Restore it from "
                                    "a backup, or move it away to start afresh."),
                                  path);

        case KAGED_STORE_ERROR_IO:
        case KAGED_STORE_ERROR_NOT_FOUND:
        case KAGED_STORE_ERROR_IMMUTABLE:
        case KAGED_STORE_ERROR_INVALID:
        default:
          break;
        }
    }

  return g_strdup_printf (_("“%s” could not be opened: %s"), path, error->message);
}

/* The preferences, when their schema is installed: there may be none on a
 * server, and that is no reason to stop. */
static GSettings *
lookup_settings (void)
{
  GSettingsSchemaSource *source = g_settings_schema_source_get_default ();
  g_autoptr(GSettingsSchema) schema = NULL;
  static const char * const keys[] = {
    "provider-kind", "provider-base-url", "provider-model", "provider-api-key-env", "api-port",
    "provider-input-price", "provider-output-price", "spend-limit-period", "spend-limit",
  };

  if (source != NULL)
    schema = g_settings_schema_source_lookup (source, BASE_APPLICATION_ID, TRUE);
  if (schema == NULL)
    return NULL;

  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      if (!g_settings_schema_has_key (schema, keys[i]))
        return NULL;
    }

  return g_settings_new_full (schema, NULL, NULL);
}

static KagedProfile *
build_profile (const Options  *options,
               GSettings      *settings,
               GError        **error)
{
  g_autoptr(KagedProfile) profile = kaged_profile_new_from_settings (settings);

  if (options->provider_kind != NULL)
    {
      int kind;

      if (!kaged_enum_from_nick (KAGED_TYPE_PROVIDER_KIND, options->provider_kind, &kind))
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       _("Unknown provider kind “%s”: use ollama, openai or anthropic"),
                       options->provider_kind);
          return NULL;
        }

      if ((KagedProviderKind)kind != kaged_profile_get_kind (profile))
        {
          kaged_profile_set_kind (profile, kind);
          kaged_profile_set_base_url (profile, kaged_provider_kind_default_url (kind));
        }
    }

  if (options->provider_url != NULL)
    {
      g_autoptr(GUri) uri = g_uri_parse (options->provider_url, G_URI_FLAGS_NONE, NULL);

      if (uri == NULL ||
          (g_strcmp0 (g_uri_get_scheme (uri), "http") != 0 &&
           g_strcmp0 (g_uri_get_scheme (uri), "https") != 0))
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       _("“%s” is not an http or https address"), options->provider_url);
          return NULL;
        }

      kaged_profile_set_base_url (profile, options->provider_url);
    }

  if (options->model != NULL)
    {
      if (options->model[0] == '\0')
        {
          g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                               _("The model name is empty"));
          return NULL;
        }
      kaged_profile_set_model (profile, options->model);
    }

  if (options->api_key_env != NULL)
    kaged_profile_set_api_key_env (profile, options->api_key_env);

  return g_steal_pointer (&profile);
}

static gboolean
check_bind_address (const char  *address,
                    GError     **error)
{
  g_autoptr(GInetAddress) inet_address = NULL;

  if (g_ascii_strcasecmp (address, "localhost") == 0)
    return TRUE;

  inet_address = g_inet_address_new_from_string (address);
  if (inet_address == NULL)
    {
      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_INVALID_ADDRESS,
                   _("“%s” is not an IP address"), address);
      return FALSE;
    }

  if (!g_inet_address_get_is_loopback (inet_address))
    {
      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_NOT_LOOPBACK,
                   _("The API only listens on this computer (127.0.0.1 or ::1), not on %s"),
                   address);
      return FALSE;
    }

  return TRUE;
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

/**
 * kaged_headless_main:
 *
 * Returns: the exit status: 0 after SIGINT or SIGTERM, 1 when the API
 *   cannot start
 */
int
kaged_headless_main (int    argc,
                     char **argv)
{
  g_auto(Options) options = { .api_port = -1 };
  const GOptionEntry entries[] = {
    { "headless", 0, 0, G_OPTION_ARG_NONE, &options.headless,
      N_("Run without a window, serving the local HTTP API"), NULL },
    { "api-port", 0, 0, G_OPTION_ARG_INT, &options.api_port,
      N_("Serve the API on PORT (0 picks a free port)"), N_("PORT") },
    { "api-bind", 0, 0, G_OPTION_ARG_STRING, &options.api_bind,
      N_("Serve on this loopback address only (127.0.0.1 or ::1)"), N_("ADDRESS") },
    { "api-token-file", 0, 0, G_OPTION_ARG_FILENAME, &options.api_token_file,
      N_("Read the bearer token from FILE, creating it when missing"), N_("FILE") },
    { "data-dir", 0, 0, G_OPTION_ARG_FILENAME, &options.data_dir,
      N_("Keep the conversation database in DIR"), N_("DIR") },
    { "provider-kind", 0, 0, G_OPTION_ARG_STRING, &options.provider_kind,
      N_("The provider’s protocol: ollama, openai or anthropic"), N_("KIND") },
    { "provider-url", 0, 0, G_OPTION_ARG_STRING, &options.provider_url,
      N_("The provider’s base URL"), N_("URL") },
    { "model", 0, 0, G_OPTION_ARG_STRING, &options.model,
      N_("The model to ask"), N_("NAME") },
    { "api-key-env", 0, 0, G_OPTION_ARG_STRING, &options.api_key_env,
      N_("Take the provider’s API key from the environment variable NAME"), N_("NAME") },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GSettings) settings = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedKeyring) keyring = NULL;
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedApiServer) server = NULL;
  g_autoptr(GMainLoop) loop = NULL;
  g_auto(GStrv) args = NULL;
  g_auto(GStrv) urls = NULL;
  g_autofree char *token = NULL;
  g_autofree char *token_path = NULL;
  g_autofree char *db_path = NULL;
  KagedSessionManager *manager = NULL;
  gboolean token_created = FALSE;
  guint port;
  guint sigint_id;
  guint sigterm_id;

  context = g_option_context_new (NULL);
  g_option_context_set_summary (context, _("Serve Kaged’s local HTTP API without a window."));
  g_option_context_add_main_entries (context, entries, GETTEXT_PACKAGE);

  args = g_new0 (char *, argc + 1);
  for (int i = 0; i < argc; i++)
    args[i] = g_strdup (argv[i]);

  if (!g_option_context_parse_strv (context, &args, &error))
    return fail (error->message);

  if (args[0] != NULL && args[1] != NULL)
    {
      g_autofree char *message = g_strdup_printf (_("Unexpected argument “%s”"), args[1]);

      return fail (message);
    }

  if (options.api_port < -1 || options.api_port > G_MAXUINT16)
    return fail (_("The port must be between 0 and 65535"));

  if (options.api_bind != NULL && !check_bind_address (options.api_bind, &error))
    return fail (error->message);

  settings = lookup_settings ();

  profile = build_profile (&options, settings, &error);
  if (profile == NULL)
    return fail (error->message);

  token_path = options.api_token_file != NULL ? g_strdup (options.api_token_file)
                                              : kaged_api_token_default_path ();
  token = kaged_api_token_load_or_create (token_path, &token_created, &error);
  if (token == NULL)
    return fail (error->message);

  db_path = kaged_store_default_path (options.data_dir);
  store = kaged_store_open (db_path, &error);
  if (store == NULL)
    {
      g_autofree char *message = describe_store_error (error, db_path);

      return fail (message);
    }

  if (options.api_key_env != NULL)
    {
      const char *value = g_getenv (options.api_key_env);

      if (value == NULL || value[0] == '\0')
        {
          g_autofree char *message =
            g_strdup_printf (_("The environment variable %s is not set; a provider that "
                               "needs a key will fail"),
                             options.api_key_env);

          g_printerr ("%s: %s\n", PACKAGE_NAME, message);
        }
      keyring = kaged_memory_keyring_new ();
    }
  else
    {
      keyring = kaged_secret_keyring_new ();
    }

  resolver = kaged_resolver_new (kaged_http_get_default_session (), keyring);

  manager = kaged_session_manager_new (store, NULL);
  g_object_add_weak_pointer (G_OBJECT (manager), (gpointer *)&manager);
  kaged_session_manager_set_model (manager, resolver, profile);
  {
    KagedSpendLimit spend;

    /* The spend limit of the preferences holds without a window too. */
    kaged_spend_limit_init_from_settings (&spend, settings);
    kaged_session_manager_set_spend_limit (manager, &spend);
  }

  if (options.api_port >= 0)
    port = options.api_port;
  else if (settings != NULL)
    port = MIN (g_settings_get_uint (settings, "api-port"), G_MAXUINT16);
  else
    port = 0;

  server = kaged_api_server_new (manager, token);
  if (options.api_bind != NULL)
    kaged_api_server_listen_address (server, options.api_bind, port, &error);
  else
    kaged_api_server_listen (server, port, &error);

  if (error != NULL)
    {
      g_autofree char *message = g_strdup_printf (_("Could not serve the API: %s"),
                                                  error->message);

      g_clear_object (&server);
      g_object_unref (manager);
      return fail (message);
    }

  kaged_session_manager_resume (manager);

  /* The first lines are for programs too: not translated. */
  urls = kaged_api_server_dup_urls (server);
  for (guint i = 0; urls[i] != NULL; i++)
    g_print ("Listening on %s\n", urls[i]);
  {
    g_autofree char *token_line = NULL;
    g_autofree char *provider_line = NULL;

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
  }
  fflush (stdout);

  loop = g_main_loop_new (NULL, FALSE);
  sigint_id = g_unix_signal_add (SIGINT, quit_cb, loop);
  sigterm_id = g_unix_signal_add (SIGTERM, quit_cb, loop);

  g_main_loop_run (loop);

  g_message ("Stopping: runs in flight are recorded cancelled");

  /* Runs in flight are recorded cancelled; event streams hear it first. */
  kaged_session_manager_shutdown (manager);
  flush_pending ();
  kaged_api_server_stop (server);
  flush_pending ();

  g_clear_object (&server);
  g_object_unref (manager);
  wind_down (&manager);

  g_source_remove (sigint_id);
  g_source_remove (sigterm_id);

  return EXIT_SUCCESS;
}
