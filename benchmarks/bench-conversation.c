/* bench-conversation.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The read model of a long session: opening a conversation of 50,000
 * messages and reading its last 50 (targets: <= 20 ms and <= 30 MB above
 * an empty core), and streaming 20,000 provider pieces into an open
 * conversation, counting the content notifications of the reply (one per
 * announcement of the manager, which coalesces the pieces).
 */

#include "config.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdio.h>

#include "kaged-conversation.h"
#include "kaged-core.h"
#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-test-files.h"

#define N_TURNS    25000
#define N_LAST     50
#define N_PIECES   20000

static void
check (gboolean  ok,
       GError   *error)
{
  if (!ok)
    g_error ("%s", error != NULL ? error->message : "failed");
}

/* The resident set, in KiB. */
static long
rss_kib (void)
{
  g_autofree char *status = NULL;
  const char *line;

  if (!g_file_get_contents ("/proc/self/status", &status, NULL, NULL))
    return 0;

  line = strstr (status, "VmRSS:");
  return line != NULL ? strtol (line + strlen ("VmRSS:"), NULL, 10) : 0;
}

/* 25,000 questions and answers of a few hundred bytes, written straight
 * into the file; every other answer was written after the next question,
 * as a queued post's is. */
static gint64
fill (const char *db_path)
{
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *sql = NULL;
  sqlite3 *db = NULL;
  char *errmsg = NULL;
  gint64 session_id;

  store = kaged_store_open (db_path, &error);
  check (store != NULL, error);
  session = kaged_store_create_session (store, "Long", &error);
  check (session != NULL, error);
  session_id = kaged_session_get_id (session);
  g_clear_object (&store);

  sql = g_strdup_printf (
    "BEGIN;"
    "WITH RECURSIVE t(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM t WHERE n + 1 < %d) "
    "INSERT INTO runs (id, session_id, anchor_id, status, created_at) "
    "SELECT n + 1, %" G_GINT64_FORMAT ", 1000 + 2 * n, 'succeeded', 1 FROM t;"
    "WITH RECURSIVE t(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM t WHERE n + 1 < %d) "
    "INSERT INTO messages (id, session_id, role, content, created_at) "
    "SELECT 1000 + 2 * n, %" G_GINT64_FORMAT ", 'operator', "
    "'Question ' || n || ': ' || printf ('%%.*c', 120 + n %% 200, 'q'), 1 FROM t;"
    "WITH RECURSIVE t(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM t WHERE n + 1 < %d) "
    "INSERT INTO messages (id, session_id, role, content, created_at, run_id, status, "
    "anchor_id) "
    "SELECT CASE WHEN n %% 2 = 0 THEN 100000000 + n ELSE 1000 + 2 * n + 1 END, "
    "%" G_GINT64_FORMAT ", 'agent', 'Answer ' || n || ': ' || printf ('%%.*c', 400 + n %% 900, "
    "'a'), 1, n + 1, 'complete', 1000 + 2 * n FROM t;"
    "COMMIT;",
    N_TURNS, session_id, N_TURNS, session_id, N_TURNS, session_id);

  if (sqlite3_open (db_path, &db) != SQLITE_OK ||
      sqlite3_exec (db, sql, NULL, NULL, &errmsg) != SQLITE_OK)
    g_error ("Could not fill the database: %s", errmsg != NULL ? errmsg : sqlite3_errmsg (db));
  sqlite3_close (db);

  return session_id;
}

static void
open_and_read_last (const char *db_path,
                    gint64      session_id)
{
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedCore) core = NULL;
  g_autoptr(KagedConversation) conversation = NULL;
  g_autoptr(GError) error = NULL;
  GListModel *model;
  gint64 start;
  double elapsed_ms;
  long before_kib;
  long after_kib;
  guint n;

  core = kaged_core_open (db_path, keyring, KAGED_CORE_FLAGS_NONE, &error);
  check (core != NULL, error);
  before_kib = rss_kib ();

  start = g_get_monotonic_time ();
  conversation = kaged_conversation_new (kaged_core_get_manager (core), session_id, &error);
  check (conversation != NULL, error);
  model = G_LIST_MODEL (conversation);
  n = g_list_model_get_n_items (model);
  for (guint i = n; i > n - N_LAST; i--)
    {
      g_autoptr(KagedMessage) message = g_list_model_get_item (model, i - 1);

      if (message == NULL)
        g_error ("No message at %u", i - 1);
    }
  elapsed_ms = (g_get_monotonic_time () - start) / 1000.0;
  after_kib = rss_kib ();

  printf ("open a conversation of %u messages and read its last %d: %.2f ms (target <= 20 ms)\n",
          n, N_LAST, elapsed_ms);
  printf ("memory above the open core: %.1f MB (target <= 30 MB)\n",
          (after_kib - before_kib) / 1024.0);
}

typedef struct
{
  GListModel *model;
  KagedMessage *reply;
  guint       n_notify;
  guint       n_deltas;
  gboolean    done;
  gint64      run_id;
} Streaming;

static void
notify_content_cb (GObject    *object,
                   GParamSpec *pspec,
                   Streaming  *streaming)
{
  streaming->n_notify++;
}

static void
items_changed_cb (GListModel *model,
                  guint       position,
                  guint       removed,
                  guint       added,
                  Streaming  *streaming)
{
  g_autoptr(KagedMessage) message = NULL;

  if (added == 0 || streaming->reply != NULL)
    return;

  message = g_list_model_get_item (model, position);
  if (kaged_message_get_role (message) != KAGED_MESSAGE_ROLE_AGENT)
    return;

  streaming->reply = g_object_ref (message);
  g_signal_connect (streaming->reply, "notify::content", G_CALLBACK (notify_content_cb),
                    streaming);
}

static void
delta_cb (KagedSessionManager *manager,
          gint64               session_id,
          gint64               message_id,
          gint64               run_id,
          const char          *text,
          Streaming           *streaming)
{
  streaming->n_deltas++;
}

static void
run_changed_cb (KagedSessionManager *manager,
                KagedRun            *run,
                Streaming           *streaming)
{
  if (kaged_run_get_id (run) == streaming->run_id && kaged_run_is_finished (run))
    streaming->done = TRUE;
}

static void
stream_into_open_conversation (const char *dir)
{
  g_autofree char *db_path = g_build_filename (dir, "stream.db", NULL);
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedCore) core = NULL;
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedConversation) conversation = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *text = g_strnfill (N_PIECES, 'x');
  g_autofree char *scenario = NULL;
  g_autofree char *url = NULL;
  KagedSessionManager *manager;
  Streaming streaming = { NULL, };
  gint64 start;

  scenario = g_strdup_printf ("[{\"kind\": \"openai\", \"text\": \"%s\", \"chunks\": %d}]",
                              text, N_PIECES);
  server = kaged_fake_server_new (scenario, &error);
  check (server != NULL, error);
  check (kaged_fake_server_listen (server, 0, &error), error);
  url = kaged_fake_server_get_url (server);

  core = kaged_core_open (db_path, keyring, KAGED_CORE_FLAGS_NONE, &error);
  check (core != NULL, error);
  profile = kaged_profile_new ("bench", KAGED_PROVIDER_KIND_OPENAI, url, "bench-model");
  kaged_core_set_profile (core, profile);
  kaged_core_start (core);
  manager = kaged_core_get_manager (core);

  session = kaged_core_create_session (core, "Stream", &error);
  check (session != NULL, error);
  conversation = kaged_conversation_new (manager, kaged_session_get_id (session), &error);
  check (conversation != NULL, error);
  streaming.model = G_LIST_MODEL (conversation);
  g_signal_connect (conversation, "items-changed", G_CALLBACK (items_changed_cb), &streaming);
  g_signal_connect (manager, "message-delta", G_CALLBACK (delta_cb), &streaming);
  g_signal_connect (manager, "run-changed", G_CALLBACK (run_changed_cb), &streaming);

  start = g_get_monotonic_time ();
  receipt = kaged_session_manager_post (manager, kaged_session_get_id (session), "Stream", &error);
  check (receipt != NULL, error);
  streaming.run_id = receipt->run_id;
  while (!streaming.done)
    g_main_context_iteration (NULL, TRUE);

  if (streaming.reply == NULL ||
      g_strcmp0 (kaged_message_get_content (streaming.reply), text) != 0)
    g_error ("The reply in the conversation is not the streamed text");

  printf ("stream %d pieces into an open conversation: %.0f ms, %u announcements, "
          "%u content notifications (one per announcement)\n",
          N_PIECES, (g_get_monotonic_time () - start) / 1000.0, streaming.n_deltas,
          streaming.n_notify);

  g_signal_handlers_disconnect_by_data (manager, &streaming);
  g_clear_object (&streaming.reply);
  kaged_core_shutdown (core);
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = NULL;
  g_autofree char *db_path = NULL;
  gint64 session_id;

  dir = g_dir_make_tmp (NULL, &error);
  check (dir != NULL, error);
  db_path = g_build_filename (dir, "kaged.db", NULL);

  session_id = fill (db_path);
  open_and_read_last (db_path, session_id);
  stream_into_open_conversation (dir);

  kaged_test_remove_tree (dir);
  return 0;
}
