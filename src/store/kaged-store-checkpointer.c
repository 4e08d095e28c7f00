/* kaged-store-checkpointer.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include "kaged-store-private.h"

/*
 * Checkpoints, which copy the WAL back into the database file and sync it,
 * run in a thread of the store's on a connection of its own. SQLite's own
 * automatic checkpoint would run inside whichever commit crosses the
 * threshold, on the thread that writes, and hold it up for as long as the
 * disk takes. A passive checkpoint never blocks a writer.
 */
#define CHECKPOINT_FRAMES       1000
/* The WAL starts over at the first write after everything in it was
 * copied, which a writer that never pauses leaves no room for. From 16
 * times that (64 MiB) on, the thread is asked again once the writing
 * thread's main loop has nothing else to do; from 64 times (256 MiB) on,
 * the thread is no longer asked and every commit copies the rest itself,
 * as SQLite would, first waiting for a checkpoint the thread has under
 * way: giving way to it would let the WAL grow for as long as the disk
 * keeps the thread busy. */
#define CHECKPOINT_IDLE_FACTOR  16
#define CHECKPOINT_FORCE_FACTOR 64

struct _KagedStoreCheckpointer
{
  GMutex   lock;
  GCond    cond;
  GThread *thread;
  sqlite3 *db;
  char    *display_name;
  guint64  n_done;
  int      frames;        /* CHECKPOINT_FRAMES, but in tests */
  int      n_copied;      /* frames of the WAL in the file already */
  guint    wanted : 1;
  guint    running : 1;   /* a checkpoint is under way */
  guint    quit : 1;
};

static gpointer
checkpoint_thread (gpointer data)
{
  KagedStoreCheckpointer *checkpointer = data;

  g_mutex_lock (&checkpointer->lock);

  for (;;)
    {
      int n_frames = 0, n_copied = 0;
      int rc;

      while ((!checkpointer->wanted || checkpointer->running) && !checkpointer->quit)
        g_cond_wait (&checkpointer->cond, &checkpointer->lock);
      if (checkpointer->quit)
        break;
      checkpointer->wanted = FALSE;
      checkpointer->running = TRUE;
      g_mutex_unlock (&checkpointer->lock);

      rc = sqlite3_wal_checkpoint_v2 (checkpointer->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
                                      &n_frames, &n_copied);
      if (rc != SQLITE_OK && rc != SQLITE_BUSY)
        g_warning ("Could not copy the journal of “%s” into it: %s",
                   checkpointer->display_name, sqlite3_errmsg (checkpointer->db));
      else
        g_debug ("Checkpoint of “%s”: %d of %d frames copied",
                 checkpointer->display_name, n_copied, n_frames);

      g_mutex_lock (&checkpointer->lock);
      checkpointer->running = FALSE;
      checkpointer->n_done++;
      if (rc == SQLITE_OK)
        checkpointer->n_copied = MAX (n_copied, 0);
      g_cond_broadcast (&checkpointer->cond);
    }

  g_mutex_unlock (&checkpointer->lock);

  return NULL;
}

/* Nothing is being written: a checkpoint now copies all of the WAL, and
 * the next write starts it over. */
static gboolean
idle_checkpoint_cb (gpointer user_data)
{
  KagedStore *self = user_data;
  KagedStoreCheckpointer *checkpointer = self->checkpointer;

  g_clear_pointer (&self->idle_checkpoint, g_source_unref);

  g_mutex_lock (&checkpointer->lock);
  checkpointer->wanted = TRUE;
  g_cond_broadcast (&checkpointer->cond);
  g_mutex_unlock (&checkpointer->lock);

  return G_SOURCE_REMOVE;
}

/* On the writing thread, once the WAL is far too long: waits for the
 * thread's checkpoint to end, then copies what is left (SQLite calls the
 * WAL hook with the write lock released, so the thread is never waiting
 * for this thread meanwhile). */
static void
copy_rest (KagedStoreCheckpointer *checkpointer,
           sqlite3                *db,
           const char             *name)
{
  int n_copied = 0;
  int rc;

  g_mutex_lock (&checkpointer->lock);
  while (checkpointer->running)
    g_cond_wait (&checkpointer->cond, &checkpointer->lock);
  checkpointer->running = TRUE;
  g_mutex_unlock (&checkpointer->lock);

  rc = sqlite3_wal_checkpoint_v2 (db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, &n_copied);

  g_mutex_lock (&checkpointer->lock);
  checkpointer->running = FALSE;
  if (rc == SQLITE_OK)
    checkpointer->n_copied = MAX (n_copied, 0);
  g_cond_broadcast (&checkpointer->cond);
  g_mutex_unlock (&checkpointer->lock);
}

/* After every commit, with the frames in the WAL. */
static int
wal_hook_cb (gpointer    user_data,
             sqlite3    *db,
             const char *name,
             int         n_frames)
{
  KagedStore *self = user_data;
  KagedStoreCheckpointer *checkpointer = self->checkpointer;

  if (n_frames < checkpointer->frames)
    return SQLITE_OK;

  if (n_frames >= CHECKPOINT_FORCE_FACTOR * checkpointer->frames)
    {
      copy_rest (checkpointer, db, name);
      return SQLITE_OK;
    }

  if (n_frames >= CHECKPOINT_IDLE_FACTOR * checkpointer->frames && self->idle_checkpoint == NULL)
    {
      self->idle_checkpoint = g_idle_source_new ();
      g_source_set_priority (self->idle_checkpoint, G_PRIORITY_LOW);
      g_source_set_static_name (self->idle_checkpoint, "[kaged] finishing a checkpoint");
      g_source_set_callback (self->idle_checkpoint, idle_checkpoint_cb, self, NULL);
      g_source_attach (self->idle_checkpoint, self->context);
    }

  g_mutex_lock (&checkpointer->lock);
  /* Frames counted before the WAL started over are gone. */
  if (checkpointer->n_copied > n_frames)
    checkpointer->n_copied = 0;
  if (!checkpointer->wanted && n_frames - checkpointer->n_copied >= checkpointer->frames)
    {
      checkpointer->wanted = TRUE;
      g_cond_broadcast (&checkpointer->cond);
    }
  g_mutex_unlock (&checkpointer->lock);

  return SQLITE_OK;
}

void
_kaged_store_checkpointer_free (KagedStoreCheckpointer *checkpointer)
{
  if (checkpointer->thread != NULL)
    {
      g_mutex_lock (&checkpointer->lock);
      checkpointer->quit = TRUE;
      g_cond_broadcast (&checkpointer->cond);
      g_mutex_unlock (&checkpointer->lock);
      g_thread_join (checkpointer->thread);
    }

  sqlite3_close (checkpointer->db);
  g_mutex_clear (&checkpointer->lock);
  g_cond_clear (&checkpointer->cond);
  g_free (checkpointer->display_name);
  g_free (checkpointer);
}

/* Takes the checkpoints off the store's connection. Without a second
 * connection or a thread, SQLite keeps doing them itself. */
void
_kaged_store_start_checkpointer (KagedStore *self)
{
  g_autoptr(GError) error = NULL;
  KagedStoreCheckpointer *checkpointer;
  int rc;

  checkpointer = g_new0 (KagedStoreCheckpointer, 1);
  g_mutex_init (&checkpointer->lock);
  g_cond_init (&checkpointer->cond);
  checkpointer->display_name = g_strdup (self->display_name);
  checkpointer->frames = CHECKPOINT_FRAMES;

  rc = sqlite3_open_v2 (self->path, &checkpointer->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                        NULL);
  /* A connection learns that the file is in WAL mode when it first reads. */
  if (rc == SQLITE_OK)
    rc = sqlite3_exec (checkpointer->db, "PRAGMA journal_mode", NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    checkpointer->thread = g_thread_try_new ("kaged-checkpoint", checkpoint_thread,
                                             checkpointer, &error);

  if (checkpointer->thread == NULL)
    {
      g_warning ("Checkpoints of “%s” stay on the writing thread: %s", self->display_name,
                 error != NULL ? error->message : sqlite3_errstr (rc));
      _kaged_store_checkpointer_free (checkpointer);
      return;
    }

  self->checkpointer = checkpointer;
  self->context = g_main_context_ref_thread_default ();
  sqlite3_wal_hook (self->db, wal_hook_cb, self);
}

/*
 * kaged_store_set_checkpoint_frames:
 *
 * Checkpoints start at @frames pages of WAL instead of 1,000, the other
 * thresholds following: for tests, which then need not write hundreds of
 * megabytes.
 */
void
kaged_store_set_checkpoint_frames (KagedStore *self,
                                   int         frames)
{
  g_return_if_fail (KAGED_IS_STORE (self));
  g_return_if_fail (frames > 0);

  if (self->checkpointer == NULL)
    return;

  g_mutex_lock (&self->checkpointer->lock);
  self->checkpointer->frames = frames;
  g_mutex_unlock (&self->checkpointer->lock);
}

/**
 * kaged_store_get_n_checkpoints:
 *
 * Returns: how many checkpoints the store's checkpoint thread has run (it
 *   copies the WAL back into the database file once the WAL holds
 *   1,000 pages)
 */
guint64
kaged_store_get_n_checkpoints (KagedStore *self)
{
  guint64 n;

  g_return_val_if_fail (KAGED_IS_STORE (self), 0);

  if (self->checkpointer == NULL)
    return 0;

  g_mutex_lock (&self->checkpointer->lock);
  n = self->checkpointer->n_done;
  g_mutex_unlock (&self->checkpointer->lock);

  return n;
}

