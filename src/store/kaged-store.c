/* kaged-store.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include "kaged-enum-types.h"
#include "kaged-retry-class.h"
#include "kaged-store.h"
#include "kaged-store-private.h"

/**
 * KagedStore:
 *
 * The SQLite database of sessions, messages, runs and their tier-1 attempt
 * logs. Use it from one thread.
 *
 * Operator messages are immutable and messages go only with their whole
 * session: both are enforced by triggers in the database itself. Supersession
 * and compaction are therefore recorded beside the messages, in
 * `message_supersessions` and `message_compactions`, never by rewriting a
 * message row.
 */

/* The WAL file is cut back to this size (4 MiB) when it starts over. */
#define WAL_SIZE_LIMIT         4194304

static void kaged_store_initable_iface_init (GInitableIface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedStore, kaged_store, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_INITABLE,
                                                      kaged_store_initable_iface_init))

G_DEFINE_QUARK (kaged-store-error-quark, kaged_store_error)

enum {
  PROP_0,
  PROP_PATH,
  PROP_CLOCK,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static int
check_progress (void *user_data)
{
  return g_cancellable_is_cancelled (user_data) ? 1 : 0;
}

/* --- Opening ----------------------------------------------------------- */

static gboolean
ensure_file (KagedStore  *self,
             GError     **error)
{
  g_autofree char *dir = g_path_get_dirname (self->path);
  int fd;

  if (!g_file_test (dir, G_FILE_TEST_IS_DIR) && g_mkdir_with_parents (dir, 0700) != 0)
    {
      int saved_errno = errno;
      g_autofree char *display_dir = g_filename_display_name (dir);

      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IO,
                   _("Could not create the folder “%s” for the database: %s"),
                   display_dir, g_strerror (saved_errno));
      return FALSE;
    }

  /* Conversations are private: a new database is readable by its owner only
   * (SQLite gives its -wal and -shm files the same mode). */
  fd = g_open (self->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0)
    g_close (fd, NULL);
  else if (errno != EEXIST)
    {
      int saved_errno = errno;

      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IO,
                   _("Could not create the database “%s”: %s"),
                   self->display_name, g_strerror (saved_errno));
      return FALSE;
    }

  return TRUE;
}

/*
 * One process at a time owns the database: recovery on open marks the runs
 * left running as interrupted, which must never happen to the runs of a
 * Kaged still running. The claim is an flock() on the file, which SQLite's
 * own fcntl() locks do not see; it goes when the store is finalized or the
 * process ends, however it ends.
 */
static gboolean
claim_file (KagedStore  *self,
            GError     **error)
{
  int fd = g_open (self->path, O_RDONLY | O_CLOEXEC, 0);

  if (fd < 0)
    {
      int saved_errno = errno;

      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IO,
                   _("Could not open the database “%s”: %s"),
                   self->display_name, g_strerror (saved_errno));
      return FALSE;
    }

  while (flock (fd, LOCK_EX | LOCK_NB) != 0)
    {
      int saved_errno = errno;

      if (saved_errno == EINTR)
        continue;

      g_close (fd, NULL);

      if (saved_errno == EWOULDBLOCK)
        g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_LOCKED,
                     _("The database “%s” is in use by another Kaged"),
                     self->display_name);
      else
        g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IO,
                     _("Could not lock the database “%s”: %s"),
                     self->display_name, g_strerror (saved_errno));
      return FALSE;
    }

  self->owner_fd = fd;
  return TRUE;
}

static gboolean
recover (KagedStore  *self,
         GError     **error)
{
  g_autoptr(GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint64));
  gboolean has_row = FALSE;

  /* Taking the write lock here is also what tells a database held by
   * another process from a free one. */
  if (!kaged_store_begin (self, error))
    return FALSE;

  /* The replies of runs left running, and any reply still marked as
   * streaming: nothing streams into them any more. */
  if (!_kaged_store_run_stmt (self, STMT_RECOVER_MESSAGES, error) ||
      !_kaged_store_run_stmt (self, STMT_RECOVER_STREAMING, error))
    goto failed;

  {
    g_autoptr(KagedStoreCachedStmt) stmt = _kaged_store_get_stmt (self, STMT_RECOVER_RUNS, error);

    if (stmt == NULL || !_kaged_store_bind_int64 (self, stmt, 1, _kaged_store_now_ms (self), error))
      goto failed;

    for (;;)
      {
        gint64 id;

        if (!_kaged_store_step_row (self, stmt, &has_row, error))
          goto failed;
        if (!has_row)
          break;
        id = sqlite3_column_int64 (stmt, 0);
        g_array_append_val (ids, id);
      }
  }

  if (!kaged_store_commit (self, error))
    return FALSE;

  for (guint i = 0; i < ids->len; i++)
    {
      KagedRun *run = kaged_store_get_run (self, g_array_index (ids, gint64, i), error);

      if (run == NULL)
        return FALSE;
      g_ptr_array_add (self->interrupted_runs, run);
    }

  if (ids->len > 0)
    g_debug ("Marked %u runs left running as interrupted", ids->len);

  self->queued_runs = kaged_store_list_runs (self, 0, KAGED_RUN_STATUS_QUEUED, error);
  return self->queued_runs != NULL;

failed:
  kaged_store_rollback (self);
  return FALSE;
}

/* Counts every transaction that writes, explicit or not. */
static int
count_commit (gpointer user_data)
{
  KagedStore *self = user_data;

  self->n_commits++;
  return 0;
}

static gboolean
kaged_store_initable_init (GInitable     *initable,
                           GCancellable  *cancellable,
                           GError       **error)
{
  KagedStore *self = KAGED_STORE (initable);
  gint64 version = 0;
  int rc;

  g_return_val_if_fail (self->path != NULL, FALSE);
  g_return_val_if_fail (self->db == NULL, FALSE);

  if (!ensure_file (self, error) || !claim_file (self, error))
    return FALSE;

  rc = sqlite3_open_v2 (self->path, &self->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                        NULL);
  if (rc != SQLITE_OK)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IO,
                   _("Could not open the database “%s”: %s"),
                   self->display_name,
                   self->db != NULL ? sqlite3_errmsg (self->db) : sqlite3_errstr (rc));
      g_clear_pointer (&self->db, sqlite3_close);
      return FALSE;
    }

  sqlite3_extended_result_codes (self->db, TRUE);
  sqlite3_busy_timeout (self->db, OPEN_BUSY_TIMEOUT_MS);
  sqlite3_commit_hook (self->db, count_commit, self);

  /* Nothing is written before the file is known to be ours and not newer
   * than this build: a file that is not is left exactly as it was. */
  if (!_kaged_store_read_version (self, &version, error))
    return FALSE;

  if (version > KAGED_STORE_SCHEMA_VERSION)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_TOO_NEW,
                   _("The database “%s” was written by a newer version of Kaged "
                     "(schema %d; this version reads up to %d)"),
                   self->display_name, (int)version, KAGED_STORE_SCHEMA_VERSION);
      return FALSE;
    }

  if (!_kaged_store_exec_sql (self, "PRAGMA journal_mode = WAL", error) ||
      !_kaged_store_exec_sql (self, "PRAGMA journal_size_limit = " G_STRINGIFY (WAL_SIZE_LIMIT),
                              error) ||
      !_kaged_store_exec_sql (self, "PRAGMA synchronous = " STORE_SYNCHRONOUS, error) ||
      !_kaged_store_exec_sql (self, "PRAGMA foreign_keys = ON", error))
    return FALSE;

  if (!_kaged_store_migrate (self, version, error) || !recover (self, error))
    return FALSE;

  sqlite3_busy_timeout (self->db, BUSY_TIMEOUT_MS);
  _kaged_store_start_checkpointer (self);

  return TRUE;
}

static void
kaged_store_initable_iface_init (GInitableIface *iface)
{
  iface->init = kaged_store_initable_init;
}

/* --- GObject ----------------------------------------------------------- */

static void
kaged_store_finalize (GObject *object)
{
  KagedStore *self = (KagedStore *)object;

  if (self->db != NULL && self->depth > 0)
    {
      g_warning ("Store finalized inside a transaction; rolling it back");
      sqlite3_exec (self->db, "ROLLBACK", NULL, NULL, NULL);
    }

  for (guint i = 0; i < N_STMTS; i++)
    g_clear_pointer (&self->stmts[i], sqlite3_finalize);

  /* First, so that the store's own connection is the last one: closing it
   * copies what is left of the WAL into the file and removes the WAL. */
  if (self->db != NULL)
    sqlite3_wal_hook (self->db, NULL, NULL);
  if (self->idle_checkpoint != NULL)
    g_source_destroy (self->idle_checkpoint);
  g_clear_pointer (&self->idle_checkpoint, g_source_unref);
  g_clear_pointer (&self->context, g_main_context_unref);
  g_clear_pointer (&self->checkpointer, _kaged_store_checkpointer_free);

  if (self->db != NULL)
    {
      int rc = sqlite3_close (self->db);

      if (rc != SQLITE_OK)
        g_warning ("Could not close the database “%s”: %s",
                   self->display_name, sqlite3_errstr (rc));
      self->db = NULL;
    }

  /* Only now that SQLite is done with the file: closing a descriptor of it
   * releases every fcntl() lock this process holds on it. */
  if (self->owner_fd >= 0)
    {
      g_close (self->owner_fd, NULL);
      self->owner_fd = -1;
    }

  g_clear_pointer (&self->interrupted_runs, g_ptr_array_unref);
  g_clear_pointer (&self->queued_runs, g_ptr_array_unref);
  g_clear_object (&self->clock);
  g_clear_pointer (&self->path, g_free);
  g_clear_pointer (&self->display_name, g_free);

  G_OBJECT_CLASS (kaged_store_parent_class)->finalize (object);
}

static void
kaged_store_get_property (GObject    *object,
                          guint       prop_id,
                          GValue     *value,
                          GParamSpec *pspec)
{
  KagedStore *self = KAGED_STORE (object);

  switch (prop_id)
    {
    case PROP_PATH:
      g_value_set_string (value, self->path);
      break;

    case PROP_CLOCK:
      g_value_set_object (value, self->clock);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_store_set_property (GObject      *object,
                          guint         prop_id,
                          const GValue *value,
                          GParamSpec   *pspec)
{
  KagedStore *self = KAGED_STORE (object);

  switch (prop_id)
    {
    case PROP_PATH:
      g_assert (self->path == NULL);
      self->path = g_value_dup_string (value);
      if (self->path != NULL)
        {
          g_free (self->display_name);
          self->display_name = g_filename_display_name (self->path);
        }
      break;

    case PROP_CLOCK:
      g_assert (self->clock == NULL);
      self->clock = g_value_dup_object (value);
      if (self->clock == NULL)
        self->clock = g_object_ref (kaged_clock_get_default ());
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_store_class_init (KagedStoreClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = kaged_store_finalize;
  object_class->get_property = kaged_store_get_property;
  object_class->set_property = kaged_store_set_property;

  /**
   * KagedStore:path:
   *
   * The database file.
   */
  properties [PROP_PATH] =
    g_param_spec_string ("path", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedStore:clock:
   *
   * The clock giving the times stored when the caller gives none.
   */
  properties [PROP_CLOCK] =
    g_param_spec_object ("clock", NULL, NULL,
                         KAGED_TYPE_CLOCK,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_store_init (KagedStore *self)
{
  self->display_name = g_strdup ("");
  self->owner_fd = -1;
  self->interrupted_runs = g_ptr_array_new_with_free_func (g_object_unref);
}

/* --- Public API: opening ------------------------------------------------ */

/**
 * kaged_store_default_path:
 * @data_dir: (nullable): the directory given with `--data-dir`, or %NULL
 *
 * Returns: (transfer full): `@data_dir/kaged.db`, or
 *   `$XDG_DATA_HOME/kaged/kaged.db` when @data_dir is %NULL
 */
char *
kaged_store_default_path (const char *data_dir)
{
  if (data_dir != NULL)
    return g_build_filename (data_dir, "kaged.db", NULL);

  return g_build_filename (g_get_user_data_dir (), "kaged", "kaged.db", NULL);
}

/**
 * kaged_store_open:
 * @path: the database file; it and its folder are created when missing
 * @error: where to put the reason the database cannot be used
 *
 * Opens the database, brings its schema up to date and marks runs left
 * running by a previous process as failed with the class `interrupted`
 * (see kaged_store_get_interrupted_runs()).
 *
 * A file that is not a Kaged database, is newer, damaged or held by another
 * process is reported with the matching #KagedStoreError and left untouched.
 *
 * Returns: (transfer full): the store, or %NULL with @error set
 */
KagedStore *
kaged_store_open (const char  *path,
                  GError     **error)
{
  return kaged_store_open_with_clock (path, NULL, error);
}

/**
 * kaged_store_open_with_clock:
 * @path: the database file
 * @clock: (nullable): the clock for the times the store fills in
 * @error: where to put the reason the database cannot be used
 *
 * Like kaged_store_open(), with the times of new rows and of start-up
 * recovery taken from @clock.
 *
 * Returns: (transfer full): the store, or %NULL with @error set
 */
KagedStore *
kaged_store_open_with_clock (const char  *path,
                             KagedClock  *clock,
                             GError     **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_return_val_if_fail (clock == NULL || KAGED_IS_CLOCK (clock), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  return g_initable_new (KAGED_TYPE_STORE, NULL, error,
                         "path", path,
                         "clock", clock,
                         NULL);
}

const char *
kaged_store_get_path (KagedStore *self)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  return self->path;
}

/**
 * kaged_store_get_clock:
 *
 * Returns: (transfer none): the clock the store takes times from
 */
KagedClock *
kaged_store_get_clock (KagedStore *self)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  return self->clock;
}

/**
 * kaged_store_get_interrupted_runs:
 *
 * The runs a previous process left `running`, which opening marked failed
 * with the class `interrupted` (their agent messages `interrupted`, the
 * partial text kept).
 *
 * Returns: (transfer none) (element-type KagedRun): the runs recovered on open
 */
GPtrArray *
kaged_store_get_interrupted_runs (KagedStore *self)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  return self->interrupted_runs;
}

/**
 * kaged_store_get_queued_runs:
 *
 * Returns: (transfer none) (element-type KagedRun): the runs that were
 *   `queued` when the store was opened, oldest first
 */
GPtrArray *
kaged_store_get_queued_runs (KagedStore *self)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);

  return self->queued_runs;
}

/* Runs `PRAGMA quick_check` on @db, stopping early when @cancellable is
 * cancelled. */
static gboolean
check_db (sqlite3       *db,
          const char    *display_name,
          GCancellable  *cancellable,
          GError       **error)
{
  g_autofree char *problem = NULL;
  sqlite3_stmt *stmt = NULL;
  int rc;

  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;

  if (cancellable != NULL)
    sqlite3_progress_handler (db, 1000, check_progress, cancellable);

  rc = sqlite3_prepare_v2 (db, "PRAGMA quick_check (1)", -1, &stmt, NULL);
  if (rc == SQLITE_OK)
    {
      rc = sqlite3_step (stmt);
      if (rc == SQLITE_ROW)
        {
          const char *result = (const char *)sqlite3_column_text (stmt, 0);

          if (g_strcmp0 (result, "ok") != 0)
            problem = g_strdup (result != NULL ? result : "");
          rc = SQLITE_OK;
        }
    }

  sqlite3_progress_handler (db, 0, NULL, NULL);

  if (rc != SQLITE_OK)
    {
      if (!g_cancellable_set_error_if_cancelled (cancellable, error))
        _kaged_store_set_error_for_db (db, display_name, rc, error);
      sqlite3_finalize (stmt);
      return FALSE;
    }
  sqlite3_finalize (stmt);

  if (problem != NULL)
    {
      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_CORRUPT,
                   _("The database “%s” is damaged: %s"), display_name, problem);
      return FALSE;
    }

  return TRUE;
}

/**
 * kaged_store_check:
 * @cancellable: (nullable): a #GCancellable
 *
 * Reads the whole database to find damage (`PRAGMA quick_check`). Opening
 * does not do this, as it takes time in proportion to the size of the
 * database (about 0.3 s for 70 MB); kaged_store_check_async() does it
 * without blocking.
 *
 * Returns: %TRUE when no damage was found, or %FALSE with @error set
 *   (%KAGED_STORE_ERROR_CORRUPT naming the first problem, or
 *   %G_IO_ERROR_CANCELLED)
 */
gboolean
kaged_store_check (KagedStore    *self,
                   GCancellable  *cancellable,
                   GError       **error)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), FALSE);

  return check_db (self->db, self->display_name, cancellable, error);
}

typedef struct
{
  char *path;
  char *display_name;
} CheckData;

static void
check_data_free (CheckData *data)
{
  g_free (data->path);
  g_free (data->display_name);
  g_free (data);
}

/* In a worker thread, on a connection of its own: the store's connection
 * stays with the thread that uses the store. */
static void
check_thread (GTask        *task,
              gpointer      source_object,
              gpointer      task_data,
              GCancellable *cancellable)
{
  CheckData *data = task_data;
  GError *error = NULL;
  sqlite3 *db = NULL;
  gboolean ok;
  int rc;

  rc = sqlite3_open_v2 (data->path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_EXRESCODE, NULL);
  if (rc != SQLITE_OK)
    {
      _kaged_store_set_error_for_db (db, data->display_name, rc, &error);
      sqlite3_close (db);
      g_task_return_error (task, error);
      return;
    }

  sqlite3_busy_timeout (db, BUSY_TIMEOUT_MS);

  ok = check_db (db, data->display_name, cancellable, &error);

  /* Closed before the answer: whoever gets it may close the store next,
   * and the last connection to close is the one that empties the WAL. */
  sqlite3_close (db);

  if (ok)
    g_task_return_boolean (task, TRUE);
  else
    g_task_return_error (task, error);
}

/* Back in the caller's context: answers the caller's task. */
static void
check_thread_done_cb (GObject      *object,
                      GAsyncResult *result,
                      gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  GError *error = NULL;

  if (g_task_propagate_boolean (G_TASK (result), &error))
    g_task_return_boolean (task, TRUE);
  else
    g_task_return_error (task, error);
}

/**
 * kaged_store_check_async:
 * @cancellable: (nullable): a #GCancellable
 * @callback: called when the check is done
 * @user_data: data for @callback
 *
 * Like kaged_store_check(), in a worker thread with a read-only connection
 * of its own, so the store can be used meanwhile.
 */
void
kaged_store_check_async (KagedStore          *self,
                         GCancellable        *cancellable,
                         GAsyncReadyCallback  callback,
                         gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  g_autoptr(GTask) worker = NULL;
  CheckData *data;

  g_return_if_fail (KAGED_IS_STORE (self));
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  data = g_new0 (CheckData, 1);
  data->path = g_strdup (self->path);
  data->display_name = g_strdup (self->display_name);

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_store_check_async);

  /* The thread's task holds no reference to the store: its thread may drop
   * that task a moment after @callback ran, and a store it held would then
   * outlive its last owner, with its connection and the WAL still open. */
  worker = g_task_new (NULL, cancellable, check_thread_done_cb, g_steal_pointer (&task));
  g_task_set_source_tag (worker, check_thread);
  g_task_set_task_data (worker, data, (GDestroyNotify)check_data_free);
  g_task_run_in_thread (worker, check_thread);
}

gboolean
kaged_store_check_finish (KagedStore    *self,
                          GAsyncResult  *result,
                          GError       **error)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_store_check_async, FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

/* --- Public API: transactions ------------------------------------------ */

/**
 * kaged_store_begin:
 *
 * Starts a transaction, or a nested one inside the current transaction.
 * Each successful call is paired with kaged_store_commit() or
 * kaged_store_rollback().
 */
gboolean
kaged_store_begin (KagedStore  *self,
                   GError     **error)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);

  if (!_kaged_store_run_stmt (self, self->depth == 0 ? STMT_BEGIN : STMT_SAVEPOINT, error))
    return FALSE;

  self->depth++;
  return TRUE;
}

/**
 * kaged_store_commit:
 *
 * Ends the innermost transaction, keeping its writes. If the outermost
 * commit fails, the transaction is rolled back and ended all the same.
 */
gboolean
kaged_store_commit (KagedStore  *self,
                    GError     **error)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (self->depth > 0, FALSE);

  if (self->depth == 1)
    {
      if (!_kaged_store_run_stmt (self, STMT_COMMIT, error))
        {
          if (!sqlite3_get_autocommit (self->db))
            _kaged_store_run_stmt (self, STMT_ROLLBACK, NULL);
          self->depth--;
          return FALSE;
        }
    }
  else if (!_kaged_store_run_stmt (self, STMT_RELEASE, error))
    {
      return FALSE;
    }

  self->depth--;
  return TRUE;
}

/**
 * kaged_store_rollback:
 *
 * Ends the innermost transaction, undoing its writes.
 */
void
kaged_store_rollback (KagedStore *self)
{
  g_autoptr(GError) error = NULL;

  g_return_if_fail (KAGED_IS_STORE (self));
  g_return_if_fail (self->depth > 0);

  if (self->depth == 1)
    {
      if (!sqlite3_get_autocommit (self->db) &&
          !_kaged_store_run_stmt (self, STMT_ROLLBACK, &error))
        g_warning ("%s", error->message);
    }
  else if (!_kaged_store_run_stmt (self, STMT_ROLLBACK_TO, &error) ||
           !_kaged_store_run_stmt (self, STMT_RELEASE, &error))
    {
      g_warning ("%s", error->message);
    }

  self->depth--;
}

/**
 * kaged_store_transaction:
 * @func: (scope call): the writes to make together
 * @user_data: data for @func
 *
 * Runs @func inside a transaction: everything it wrote is kept if it returns
 * %TRUE and undone if it returns %FALSE. Transactions nest.
 *
 * Returns: whether @func succeeded and its writes were committed
 */
gboolean
kaged_store_transaction (KagedStore                 *self,
                         KagedStoreTransactionFunc   func,
                         gpointer                    user_data,
                         GError                    **error)
{
  g_autoptr(GError) local_error = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (func != NULL, FALSE);

  if (!kaged_store_begin (self, error))
    return FALSE;

  if (!func (self, user_data, &local_error))
    {
      kaged_store_rollback (self);
      if (local_error == NULL)
        g_set_error_literal (&local_error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID,
                             _("The change was abandoned"));
      g_propagate_error (error, g_steal_pointer (&local_error));
      return FALSE;
    }

  return kaged_store_commit (self, error);
}

/**
 * kaged_store_get_n_write_transactions:
 *
 * Returns: how many write transactions were committed since the store was
 *   opened, for measuring how often streaming text reaches the disk
 */
guint64
kaged_store_get_n_write_transactions (KagedStore *self)
{
  g_return_val_if_fail (KAGED_IS_STORE (self), 0);

  return self->n_commits;
}
