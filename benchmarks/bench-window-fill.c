/* bench-window-fill.c
 *
 * Writes a conversation of N messages into DIR/kaged.db through the store,
 * for bench-window.py to open.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <stdlib.h>

#include "kaged-store.h"

#define BATCH_SIZE 5000

static const char * const words[] = {
  "the", "model", "answer", "retry", "session", "because", "provider", "window", "quickly",
  "Lisbon", "token", "stream", "network", "a", "of", "and", "to", "in", "is", "that", "with",
  "context", "summary", "operator", "regenerate", "failure", "rate", "limit", "carefully",
};

static void
check (gboolean  ok,
       GError   *error)
{
  if (!ok)
    g_error ("%s", error != NULL ? error->message : "failed");
}

/* Prose of 200 to 2000 bytes. */
static char *
make_text (GRand *rand)
{
  guint target = g_rand_int_range (rand, 200, 2001);
  GString *text = g_string_sized_new (target + 16);

  while (text->len < target)
    {
      g_string_append (text, words[g_rand_int_range (rand, 0, G_N_ELEMENTS (words))]);
      g_string_append_c (text, g_rand_int_range (rand, 0, 12) == 0 ? '.' : ' ');
    }
  g_string_truncate (text, target);

  return g_string_free (text, FALSE);
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GRand) rand = g_rand_new_with_seed (20240601);
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autofree char *path = NULL;
  gint64 session_id;
  gint64 run_id = 0;
  guint n_messages;

  if (argc != 3)
    {
      g_printerr ("Usage: %s DIR N-MESSAGES\n", argv[0]);
      return 2;
    }
  n_messages = (guint) strtoul (argv[2], NULL, 10);
  path = g_build_filename (argv[1], "kaged.db", NULL);

  store = kaged_store_open (path, &error);
  check (store != NULL, error);
  session = kaged_store_create_session (store, "Benchmark", &error);
  check (session != NULL, error);
  session_id = kaged_session_get_id (session);

  for (guint i = 0; i < n_messages; i++)
    {
      g_autoptr(KagedMessage) message = kaged_message_new ();
      g_autofree char *text = make_text (rand);

      if (i % BATCH_SIZE == 0)
        check (kaged_store_begin (store, &error), error);

      kaged_message_set_session_id (message, session_id);
      kaged_message_set_content (message, text);

      if (i % 2 == 0)
        {
          kaged_message_set_role (message, KAGED_MESSAGE_ROLE_OPERATOR);
        }
      else
        {
          kaged_message_set_role (message, KAGED_MESSAGE_ROLE_AGENT);
          kaged_message_set_run_id (message, run_id);
          kaged_message_set_status (message, KAGED_MESSAGE_STATUS_COMPLETE);
        }
      check (kaged_store_append_message (store, message, &error), error);

      if (i % 2 == 0)
        {
          g_autoptr(KagedRun) run = kaged_run_new ();

          kaged_run_set_session_id (run, session_id);
          kaged_run_set_anchor_id (run, kaged_message_get_id (message));
          kaged_run_set_status (run, KAGED_RUN_STATUS_SUCCEEDED);
          kaged_run_set_input_tokens (run, 100 + i);
          kaged_run_set_output_tokens (run, 300);
          check (kaged_store_create_run (store, run, &error), error);
          run_id = kaged_run_get_id (run);
        }

      if (i % BATCH_SIZE == BATCH_SIZE - 1 || i == n_messages - 1)
        check (kaged_store_commit (store, &error), error);
    }

  return 0;
}
