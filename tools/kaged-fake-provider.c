/* kaged-fake-provider.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * kaged-fake-provider: a scripted LLM provider on 127.0.0.1, to watch how
 * Kaged retries, waits and gives up. It speaks the OpenAI-compatible,
 * Anthropic and Ollama wire formats from a scenario file; --help describes
 * the format and tools/scenarios/ has examples. Point a profile's base URL
 * at the address it prints.
 */

#define G_LOG_DOMAIN "kaged-fake-provider"

#include "config.h"

#include <glib-unix.h>
#include <stdio.h>
#include <stdlib.h>

#include "kaged-fake-server.h"

static gboolean
quit_cb (gpointer user_data)
{
  g_main_loop_quit (user_data);
  return G_SOURCE_REMOVE;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(GMainLoop) loop = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *scenario = NULL;
  g_autofree char *url = NULL;
  g_autofree char *models = NULL;
  g_autofree char *key_env = NULL;
  int port = 0;
  const GOptionEntry entries[] = {
    { "port", 'p', 0, G_OPTION_ARG_INT, &port, "Port to listen on, 0 for any free one (default 0)", "N" },
    { "scenario", 's', 0, G_OPTION_ARG_FILENAME, &scenario, "Scenario file (JSON, see below)", "FILE" },
    { "models", 'm', 0, G_OPTION_ARG_STRING, &models, "Serve model lists: GET /v1/models (OpenAI-compatible, or Anthropic with anthropic-version) and GET /api/tags (Ollama) list these comma-separated names", "NAMES" },
    { "api-key-env", 0, 0, G_OPTION_ARG_STRING, &key_env, "With --models, answer model lists 401 unless they carry the key in this environment variable", "VAR" },
    { NULL }
  };

  context = g_option_context_new ("- a scripted LLM provider on 127.0.0.1");
  g_option_context_add_main_entries (context, entries, NULL);
  g_option_context_set_description (context, kaged_fake_server_scenario_help ());

  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      g_printerr ("%s\n", error->message);
      return EXIT_FAILURE;
    }

  if (port < 0 || port > G_MAXUINT16)
    {
      g_printerr ("The port must be between 0 and 65535\n");
      return EXIT_FAILURE;
    }

  if (scenario != NULL)
    server = kaged_fake_server_new_from_file (scenario, &error);
  else
    server = kaged_fake_server_new ("[{\"kind\": \"openai\", \"text\": \"Hello from the fake provider.\"}]", &error);

  if (server == NULL || !kaged_fake_server_listen (server, port, &error))
    {
      g_printerr ("%s\n", error->message);
      return EXIT_FAILURE;
    }

  if (models != NULL)
    {
      g_auto(GStrv) names = g_strsplit (models, ",", -1);

      kaged_fake_server_set_models (server, (const char * const *)names);
    }

  if (key_env != NULL)
    {
      const char *key = g_getenv (key_env);

      if (key == NULL || key[0] == '\0')
        {
          g_printerr ("The environment variable %s is not set\n", key_env);
          return EXIT_FAILURE;
        }
      kaged_fake_server_set_api_key (server, key);
    }

  url = kaged_fake_server_get_url (server);
  g_print ("Listening on %s\n", url);
  fflush (stdout);

  loop = g_main_loop_new (NULL, FALSE);
  g_unix_signal_add (SIGINT, quit_cb, loop);
  g_unix_signal_add (SIGTERM, quit_cb, loop);
  g_main_loop_run (loop);

  return EXIT_SUCCESS;
}
