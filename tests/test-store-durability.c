/* test-store-durability.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * What reaches the disk before the store says it is saved: every commit
 * waits for the write-ahead log to be synced, so a power cut loses nothing
 * acknowledged, except the text of a reply saved while it streams, which
 * is saved without waiting (the next synced commit takes it along). The
 * syncs are counted by a VFS that SQLite opens every file through.
 */

#include "config.h"

#include "kaged-fake-server.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-session-manager.h"
#include "kaged-store-fixture.h"

/* --- a VFS that counts syncs of WAL files --------------------------------- */

typedef struct
{
  sqlite3_file  base;
  sqlite3_file *real;
  int           flags;
} CountingFile;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs counting_vfs;
static sqlite3_io_methods counting_io_methods;
static GThread *counted_thread;
static gint wal_syncs;

#define REAL(file) (((CountingFile *)(file))->real)

static int
counting_close (sqlite3_file *file)
{
  return REAL (file)->pMethods->xClose (REAL (file));
}

static int
counting_read (sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset)
{
  return REAL (file)->pMethods->xRead (REAL (file), buffer, amount, offset);
}

static int
counting_write (sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset)
{
  return REAL (file)->pMethods->xWrite (REAL (file), buffer, amount, offset);
}

static int
counting_truncate (sqlite3_file *file, sqlite3_int64 size)
{
  return REAL (file)->pMethods->xTruncate (REAL (file), size);
}

static int
counting_sync (sqlite3_file *file, int flags)
{
  /* The checkpoint thread syncs too, on its own connection: only the
   * syncs of the thread that writes count. */
  if ((((CountingFile *)file)->flags & SQLITE_OPEN_WAL) != 0 && g_thread_self () == counted_thread)
    g_atomic_int_inc (&wal_syncs);

  return REAL (file)->pMethods->xSync (REAL (file), flags);
}

static int
counting_file_size (sqlite3_file *file, sqlite3_int64 *size)
{
  return REAL (file)->pMethods->xFileSize (REAL (file), size);
}

static int
counting_lock (sqlite3_file *file, int lock)
{
  return REAL (file)->pMethods->xLock (REAL (file), lock);
}

static int
counting_unlock (sqlite3_file *file, int lock)
{
  return REAL (file)->pMethods->xUnlock (REAL (file), lock);
}

static int
counting_check_reserved_lock (sqlite3_file *file, int *out)
{
  return REAL (file)->pMethods->xCheckReservedLock (REAL (file), out);
}

static int
counting_file_control (sqlite3_file *file, int op, void *arg)
{
  return REAL (file)->pMethods->xFileControl (REAL (file), op, arg);
}

static int
counting_sector_size (sqlite3_file *file)
{
  return REAL (file)->pMethods->xSectorSize (REAL (file));
}

static int
counting_device_characteristics (sqlite3_file *file)
{
  return REAL (file)->pMethods->xDeviceCharacteristics (REAL (file));
}

static int
counting_shm_map (sqlite3_file *file, int page, int page_size, int extend, void volatile **out)
{
  return REAL (file)->pMethods->xShmMap (REAL (file), page, page_size, extend, out);
}

static int
counting_shm_lock (sqlite3_file *file, int offset, int n, int flags)
{
  return REAL (file)->pMethods->xShmLock (REAL (file), offset, n, flags);
}

static void
counting_shm_barrier (sqlite3_file *file)
{
  REAL (file)->pMethods->xShmBarrier (REAL (file));
}

static int
counting_shm_unmap (sqlite3_file *file, int delete_flag)
{
  return REAL (file)->pMethods->xShmUnmap (REAL (file), delete_flag);
}

static int
counting_fetch (sqlite3_file *file, sqlite3_int64 offset, int amount, void **out)
{
  return REAL (file)->pMethods->xFetch (REAL (file), offset, amount, out);
}

static int
counting_unfetch (sqlite3_file *file, sqlite3_int64 offset, void *page)
{
  return REAL (file)->pMethods->xUnfetch (REAL (file), offset, page);
}

static int
counting_open (sqlite3_vfs  *vfs,
               const char   *name,
               sqlite3_file *file,
               int           flags,
               int          *out_flags)
{
  CountingFile *counting = (CountingFile *)file;
  int rc;

  counting->real = (sqlite3_file *)&counting[1];
  counting->flags = flags;
  rc = real_vfs->xOpen (real_vfs, name, counting->real, flags, out_flags);

  if (counting->real->pMethods == NULL)
    {
      counting->base.pMethods = NULL;
      return rc;
    }

  /* Offer what the real file offers: WAL needs the shared-memory methods. */
  counting_io_methods.iVersion = counting->real->pMethods->iVersion;
  counting->base.pMethods = &counting_io_methods;

  return rc;
}

static void
install_counting_vfs (void)
{
  real_vfs = sqlite3_vfs_find (NULL);
  g_assert_nonnull (real_vfs);
  g_assert_cmpint (real_vfs->iVersion, >=, 2);

  counting_io_methods = (sqlite3_io_methods) {
    .iVersion = 3,
    .xClose = counting_close,
    .xRead = counting_read,
    .xWrite = counting_write,
    .xTruncate = counting_truncate,
    .xSync = counting_sync,
    .xFileSize = counting_file_size,
    .xLock = counting_lock,
    .xUnlock = counting_unlock,
    .xCheckReservedLock = counting_check_reserved_lock,
    .xFileControl = counting_file_control,
    .xSectorSize = counting_sector_size,
    .xDeviceCharacteristics = counting_device_characteristics,
    .xShmMap = counting_shm_map,
    .xShmLock = counting_shm_lock,
    .xShmBarrier = counting_shm_barrier,
    .xShmUnmap = counting_shm_unmap,
    .xFetch = counting_fetch,
    .xUnfetch = counting_unfetch,
  };

  counting_vfs = *real_vfs;
  counting_vfs.zName = "kaged-counting";
  counting_vfs.szOsFile = sizeof (CountingFile) + real_vfs->szOsFile;
  counting_vfs.xOpen = counting_open;

  g_assert_cmpint (sqlite3_vfs_register (&counting_vfs, TRUE), ==, SQLITE_OK);
  counted_thread = g_thread_self ();
}

static guint
get_wal_syncs (void)
{
  return (guint)g_atomic_int_get (&wal_syncs);
}

/* --- the store ----------------------------------------------------------- */

static void
test_commits (Fixture       *fixture,
             gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) session = add_session (store, "Durable");
  guint syncs;

  g_assert_cmpstr (sqlite3_vfs_find (NULL)->zName, ==, "kaged-counting");

  /* A write outside a transaction, and one inside, each wait for the disk. */
  syncs = get_wal_syncs ();
  add_operator (store, kaged_session_get_id (session), "Keep this");
  g_assert_cmpuint (get_wal_syncs (), >, syncs);

  syncs = get_wal_syncs ();
  g_assert_true (kaged_store_begin (store, &error));
  g_assert_no_error (error);
  add_operator (store, kaged_session_get_id (session), "And this");
  add_operator (store, kaged_session_get_id (session), "And that");
  g_assert_cmpuint (get_wal_syncs (), ==, syncs);
  g_assert_true (kaged_store_commit (store, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (get_wal_syncs (), ==, syncs + 1);
}

static void
test_streaming_text (Fixture       *fixture,
                     gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) session = add_session (store, "Durable");
  g_autoptr(KagedMessage) reply = NULL;
  gint64 operator_id;
  gint64 run_id;
  gint64 reply_id;
  guint syncs;

  operator_id = add_operator (store, kaged_session_get_id (session), "Tell me");
  run_id = add_run (store, kaged_session_get_id (session), operator_id, KAGED_RUN_STATUS_RUNNING);
  reply_id = add_agent (store, kaged_session_get_id (session), run_id, "",
                        KAGED_MESSAGE_STATUS_STREAMING);
  reply = kaged_store_get_message (store, reply_id, &error);
  g_assert_no_error (error);

  /* The text so far: saved, without waiting for the disk. */
  syncs = get_wal_syncs ();
  for (guint i = 0; i < 5; i++)
    {
      g_autofree char *text = g_strnfill (10 * (i + 1), 'a');

      kaged_message_set_content (reply, text);
      g_assert_true (kaged_store_save_streaming_text (store, reply, &error));
      g_assert_no_error (error);
    }
  g_assert_cmpuint (get_wal_syncs (), ==, syncs);

  {
    g_autoptr(KagedMessage) stored = kaged_store_get_message (store, reply_id, &error);

    g_assert_no_error (error);
    g_assert_cmpstr (kaged_message_get_content (stored), ==, kaged_message_get_content (reply));
  }

  /* The end of the reply waits, and takes the text before it along. */
  kaged_message_set_status (reply, KAGED_MESSAGE_STATUS_COMPLETE);
  g_assert_true (kaged_store_update_message (store, reply, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (get_wal_syncs (), ==, syncs + 1);

  /* Inside a transaction, the transaction decides. */
  syncs = get_wal_syncs ();
  g_assert_true (kaged_store_begin (store, &error));
  g_assert_true (kaged_store_save_streaming_text (store, reply, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_commit (store, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (get_wal_syncs (), ==, syncs + 1);

  /* Operator messages never change, this way either. */
  {
    g_autoptr(KagedMessage) operator = kaged_store_get_message (store, operator_id, &error);

    g_assert_no_error (error);
    kaged_message_set_content (operator, "Changed");
    g_assert_false (kaged_store_save_streaming_text (store, operator, &error));
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IMMUTABLE);
  }
}

/* --- through the engine --------------------------------------------------- */

typedef struct
{
  KagedStore *store;
  gint64      run_id;
  guint       syncs_at_first_delta;
  guint       syncs_at_last_delta;
  guint64     writes_at_first_delta;
  guint64     writes_at_last_delta;
  guint       n_deltas;
  gboolean    finished;
} Streaming;

static void
delta_cb (KagedSessionManager *manager,
          gint64               session_id,
          gint64               message_id,
          gint64               run_id,
          const char          *text,
          Streaming           *streaming)
{
  if (streaming->n_deltas++ == 0)
    {
      streaming->syncs_at_first_delta = get_wal_syncs ();
      streaming->writes_at_first_delta = kaged_store_get_n_write_transactions (streaming->store);
    }
  streaming->syncs_at_last_delta = get_wal_syncs ();
  streaming->writes_at_last_delta = kaged_store_get_n_write_transactions (streaming->store);
}

static void
run_changed_cb (KagedSessionManager *manager,
                KagedRun            *run,
                Streaming           *streaming)
{
  if (kaged_run_get_id (run) == streaming->run_id && kaged_run_is_finished (run))
    streaming->finished = TRUE;
}

static void
test_engine (Fixture       *fixture,
             gconstpointer  user_data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedSessionManager) manager = NULL;
  g_autoptr(KagedResolver) resolver = NULL;
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_memory_keyring_new ();
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(KagedRun) run = NULL;
  g_autofree char *url = NULL;
  Streaming streaming = { 0 };
  guint syncs;

  /* About 1.2 s of streaming: several saves of the text on the way. */
  server = kaged_fake_server_new ("[{\"kind\": \"openai\", \"text\": \"One two three four five "
                                  "six seven eight nine ten eleven twelve\", \"chunks\": 12, "
                                  "\"delay_ms\": 100}]", &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (server);

  store = kaged_store_open (fixture->path, &error);
  g_assert_no_error (error);
  streaming.store = store;

  resolver = kaged_resolver_new (kaged_http_get_default_session (), keyring);
  profile = kaged_profile_new ("durable", KAGED_PROVIDER_KIND_OPENAI, url, "model");
  manager = kaged_session_manager_new (store, NULL);
  kaged_session_manager_set_model (manager, resolver, profile);
  g_signal_connect (manager, "message-delta", G_CALLBACK (delta_cb), &streaming);
  g_signal_connect (manager, "run-changed", G_CALLBACK (run_changed_cb), &streaming);

  session = kaged_session_manager_create_session (manager, "Durable", &error);
  g_assert_no_error (error);

  /* The operator's message is on disk once the post returns. */
  syncs = get_wal_syncs ();
  receipt = kaged_session_manager_post (manager, kaged_session_get_id (session), "Count to twelve",
                                        &error);
  g_assert_no_error (error);
  g_assert_cmpuint (get_wal_syncs (), >, syncs);
  streaming.run_id = receipt->run_id;

  while (!streaming.finished)
    g_main_context_iteration (NULL, TRUE);

  run = kaged_store_get_run (store, receipt->run_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);

  /* While it streamed, the text was saved, without a sync each time... */
  g_assert_cmpuint (streaming.n_deltas, >=, 3);
  g_assert_cmpuint (streaming.writes_at_last_delta, >, streaming.writes_at_first_delta);
  g_assert_cmpuint (streaming.syncs_at_last_delta, ==, streaming.syncs_at_first_delta);
  /* ...and its end waited for the disk. */
  g_assert_cmpuint (get_wal_syncs (), >, streaming.syncs_at_last_delta);

  kaged_session_manager_shutdown (manager);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  install_counting_vfs ();

  g_test_add ("/store-durability/commits-wait-for-the-disk", Fixture, NULL,
              fixture_set_up, test_commits, fixture_tear_down);
  g_test_add ("/store-durability/streaming-text", Fixture, NULL,
              fixture_set_up, test_streaming_text, fixture_tear_down);
  g_test_add ("/store-durability/engine", Fixture, NULL,
              fixture_set_up, test_engine, fixture_tear_down);

  return g_test_run ();
}
