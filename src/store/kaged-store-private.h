/* kaged-store-private.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <sqlite3.h>

#include "kaged-store.h"

G_BEGIN_DECLS

/* Shared by the files of the store; for its own use only. */

/* Waiting for another process's lock: short while opening, so a held
 * database is reported at once; a few seconds afterwards. */
#define OPEN_BUSY_TIMEOUT_MS 1000
#define BUSY_TIMEOUT_MS      3000

/* Every commit waits until the write-ahead log is on the disk, so what the
 * store says is saved survives a power cut; only the text of a streaming
 * reply is saved without waiting (docs/durability.md). */
#define STORE_SYNCHRONOUS         "FULL"
#define STORE_SYNCHRONOUS_RELAXED "NORMAL"
#define STORE_SYNCHRONOUS_RELAXED_LEVEL 1

typedef enum
{
  STMT_BEGIN,
  STMT_COMMIT,
  STMT_ROLLBACK,
  STMT_SAVEPOINT,
  STMT_RELEASE,
  STMT_ROLLBACK_TO,

  STMT_SESSION_INSERT,
  STMT_SESSION_GET,
  STMT_SESSION_LIST,
  STMT_SESSION_RENAME,
  STMT_SESSION_TOUCH,
  STMT_SESSION_DELETE,

  STMT_MESSAGE_INSERT,
  STMT_MESSAGE_TURN,
  STMT_MESSAGE_GET,
  STMT_MESSAGE_INFO,
  STMT_MESSAGE_UPDATE,
  STMT_MESSAGE_LIST_CURRENT_AFTER,
  STMT_MESSAGE_LIST_ALL_AFTER,
  STMT_MESSAGE_LIST_CURRENT_BEFORE,
  STMT_MESSAGE_LIST_ALL_BEFORE,
  STMT_MESSAGE_LIST_CURRENT_AT,
  STMT_MESSAGE_LIST_ALL_AT,
  STMT_MESSAGE_LIST_CURRENT_AT_END,
  STMT_MESSAGE_LIST_ALL_AT_END,
  STMT_MESSAGE_COUNT_CURRENT_AFTER,
  STMT_MESSAGE_COUNT_ALL_AFTER,
  STMT_MESSAGE_COUNT_CURRENT_BEFORE,
  STMT_MESSAGE_COUNT_ALL_BEFORE,
  STMT_MESSAGE_COUNT_CURRENT,
  STMT_MESSAGE_COUNT_ALL,
  STMT_MESSAGE_SUPERSEDE,
  STMT_MESSAGE_VERSIONS,
  STMT_MESSAGE_SUPERSEDED_WITH,
  STMT_MESSAGE_COUNT_SUPERSEDED_WITH,
  STMT_MESSAGE_EDITED_FROM,
  STMT_DRAFT_GET,
  STMT_DRAFT_SET,
  STMT_DRAFT_DELETE,
  STMT_MESSAGE_COMPACT,

  STMT_RUN_INSERT,
  STMT_RUN_GET,
  STMT_RUN_LATEST,
  STMT_RUN_LATEST_IN_CONVERSATION,
  STMT_RUN_UPDATE,
  STMT_RUN_LIST,
  STMT_RUN_LIST_ALL,
  STMT_RUN_USAGE,
  STMT_RUN_PROFILE_USAGE,
  STMT_ATTEMPT_INSERT,
  STMT_ATTEMPT_LIST,

  STMT_RECOVER_MESSAGES,
  STMT_RECOVER_STREAMING,
  STMT_RECOVER_RUNS,

  STMT_RETRY_GET,
  STMT_RETRY_SET,
  STMT_RETRY_CLEAR,
  STMT_RETRY_LIST,

  STMT_SESSION_SETTINGS_GET,
  STMT_SESSION_SETTINGS_SET,
  STMT_RUN_MODEL_GET,
  STMT_RUN_MODEL_SET,
  STMT_PROFILE_MODELS_GET,
  STMT_PROFILE_MODELS_SET,
  STMT_PROFILE_MODELS_DELETE,
  STMT_PROFILE_MODELS_IDS,

  N_STMTS
} StmtId;

extern const char * const _kaged_store_stmt_sql[N_STMTS];

typedef struct _KagedStoreCheckpointer KagedStoreCheckpointer;

struct _KagedStore
{
  GObject parent_instance;

  char *path;
  char *display_name;
  KagedClock *clock;

  sqlite3 *db;
  sqlite3_stmt *stmts[N_STMTS];
  guint depth;
  int owner_fd;
  guint64 n_commits;
  KagedStoreCheckpointer *checkpointer;
  GMainContext *context;          /* of the thread that opened the store */
  GSource *idle_checkpoint;

  GPtrArray *interrupted_runs;
  GPtrArray *queued_runs;
};

/*
 * A cached statement, reset and unbound when the variable holding it goes
 * out of scope: `g_autoptr(KagedStoreCachedStmt) stmt = _kaged_store_get_stmt (…)`.
 */
typedef sqlite3_stmt KagedStoreCachedStmt;

void _kaged_store_cached_stmt_release (KagedStoreCachedStmt *stmt);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (KagedStoreCachedStmt, _kaged_store_cached_stmt_release)

typedef gpointer (*KagedStoreRowFunc) (sqlite3_stmt *stmt);

typedef enum
{
  MISSING_SESSION,
  MISSING_MESSAGE,
  MISSING_RUN,
  MISSING_SESSION_RUNS,
} KagedStoreMissing;

typedef struct
{
  gint64 session_id;
  KagedMessageRole role;
  gboolean superseded;
} KagedStoreMessageInfo;

gboolean        _kaged_store_set_error_for_db (sqlite3     *db,
                                               const char  *display_name,
                                               int          rc,
                                               GError     **error);
gboolean        _kaged_store_set_db_error (KagedStore  *self,
                                           int          rc,
                                           GError     **error);
sqlite3_stmt   *_kaged_store_get_stmt (KagedStore  *self,
                                       StmtId       id,
                                       GError     **error);
gboolean        _kaged_store_bind_int64 (KagedStore    *self,
                                         sqlite3_stmt  *stmt,
                                         int            idx,
                                         gint64         value,
                                         GError       **error);
gboolean        _kaged_store_bind_int64_or_null (KagedStore    *self,
                                                 sqlite3_stmt  *stmt,
                                                 int            idx,
                                                 gint64         value,
                                                 GError       **error);
gboolean        _kaged_store_bind_text (KagedStore    *self,
                                        sqlite3_stmt  *stmt,
                                        int            idx,
                                        const char    *value,
                                        GError       **error);
gboolean        _kaged_store_step_done (KagedStore    *self,
                                        sqlite3_stmt  *stmt,
                                        GError       **error);
gboolean        _kaged_store_step_row (KagedStore    *self,
                                       sqlite3_stmt  *stmt,
                                       gboolean      *has_row,
                                       GError       **error);
gboolean        _kaged_store_run_stmt (KagedStore  *self,
                                       StmtId       id,
                                       GError     **error);
gint64          _kaged_store_now_ms (KagedStore *self);
const char     *_kaged_store_column_text (sqlite3_stmt *stmt,
                                          int           col);
int             _kaged_store_enum_from_column (sqlite3_stmt *stmt,
                                               int           col,
                                               GType         enum_type,
                                               int           fallback);
KagedRetryClass _kaged_store_retry_class_from_column (sqlite3_stmt *stmt,
                                                      int           col);
const char     *_kaged_store_enum_nick (GType enum_type,
                                        int   value);
KagedSession   *_kaged_store_session_from_row (sqlite3_stmt *stmt);
KagedMessage   *_kaged_store_message_from_row (sqlite3_stmt *stmt);
KagedRun       *_kaged_store_run_from_row (sqlite3_stmt *stmt);
GPtrArray      *_kaged_store_collect_rows (KagedStore         *self,
                                           sqlite3_stmt       *stmt,
                                           KagedStoreRowFunc   row_func,
                                           GDestroyNotify      free_func,
                                           GError            **error);
gboolean        _kaged_store_set_not_found (GError            **error,
                                            KagedStoreMissing   what,
                                            gint64              id);
gpointer        _kaged_store_fetch_one (KagedStore         *self,
                                        sqlite3_stmt       *stmt,
                                        KagedStoreRowFunc   row_func,
                                        KagedStoreMissing   what,
                                        gint64              id,
                                        GError            **error);
gboolean        _kaged_store_expect_changed (KagedStore         *self,
                                             KagedStoreMissing   what,
                                             gint64              id,
                                             GError            **error);
gboolean        _kaged_store_exec_sql (KagedStore  *self,
                                       const char  *sql,
                                       GError     **error);
gboolean        _kaged_store_query_int (KagedStore  *self,
                                        const char  *sql,
                                        gint64      *value,
                                        GError     **error);
gboolean        _kaged_store_get_message_info (KagedStore             *self,
                                               gint64                  message_id,
                                               KagedStoreMessageInfo  *info,
                                               GError                **error);
gboolean        _kaged_store_read_version (KagedStore  *self,
                                           gint64      *version,
                                           GError     **error);
extern const char _kaged_store_schema_v5[];
extern const char _kaged_store_schema_v6[];
extern const char _kaged_store_schema_v7[];

gboolean        _kaged_store_migrate (KagedStore  *self,
                                      gint64       version,
                                      GError     **error);
void            _kaged_store_start_checkpointer (KagedStore *self);
void            _kaged_store_checkpointer_free (KagedStoreCheckpointer *checkpointer);


/* For tests only. */
void kaged_store_set_checkpoint_frames (KagedStore *self,
                                        int         frames);

G_END_DECLS
