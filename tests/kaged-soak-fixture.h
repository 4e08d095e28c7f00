/* kaged-soak-fixture.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <sqlite3.h>

#include "kaged-fake-server.h"

G_BEGIN_DECLS

/* Defined when the soaks, and so the program they start (the same build),
 * are built with AddressSanitizer. */
#if defined(__SANITIZE_ADDRESS__)
#define SOAK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOAK_ASAN 1
#endif
#endif

/*
 * What the soaks of the real `kaged --headless` share: a fake provider
 * serving on a thread of its own, the program started and stopped (or
 * killed) as a user would, blocking API calls that any thread may make,
 * and reading the database the program leaves behind.
 */

typedef struct _SoakProvider SoakProvider;

SoakProvider    *soak_provider_start          (const char    *scenario_json);
char            *soak_provider_dup_url        (SoakProvider  *self);
void             soak_provider_set_scenario   (SoakProvider  *self,
                                               const char    *scenario_json);
KagedFakeServer *soak_provider_stop           (SoakProvider  *self);

typedef struct
{
  char        *dir;          /* a temporary folder, removed at the end */
  char        *data_dir;
  char        *token_path;
  char        *token;
  char        *db_path;
  char        *log_path;
  char        *provider_url;
  GStrv        extra_args;
  GSubprocess *kaged;
  guint        port;
  GMutex       lock;
} SoakKaged;

void         soak_kaged_init        (SoakKaged       *self,
                                     const char      *provider_url,
                                     const char     **extra_args);
void         soak_kaged_start       (SoakKaged       *self);
void         soak_kaged_stop        (SoakKaged       *self);
void         soak_kaged_kill        (SoakKaged       *self);
int          soak_kaged_get_pid     (SoakKaged       *self);
void         soak_kaged_clear       (SoakKaged       *self);

SoupSession *soak_http_new          (void);
JsonNode    *soak_api               (SoakKaged       *self,
                                     SoupSession     *http,
                                     const char      *method,
                                     const char      *body,
                                     guint           *status,
                                     const char      *path_format,
                                     ...) G_GNUC_PRINTF (6, 7);
gint64       soak_create_session    (SoakKaged       *self,
                                     SoupSession     *http,
                                     const char      *title);
gboolean     soak_session_is_idle   (SoakKaged       *self,
                                     SoupSession     *http,
                                     gint64           session_id);

sqlite3     *soak_open_db           (const char      *path);
gboolean     soak_db_integrity_ok   (sqlite3         *db);
gint64       soak_db_count          (sqlite3         *db,
                                     const char      *sql);
GHashTable  *soak_db_operator_rows  (sqlite3         *db);

/* Broken invariants, collected from any thread. */
typedef struct
{
  GMutex     lock;
  GPtrArray *texts;
} SoakViolations;

void         soak_violations_init   (SoakViolations  *self);
void         soak_violations_add    (SoakViolations  *self,
                                     const char      *format,
                                     ...) G_GNUC_PRINTF (2, 3);
guint        soak_violations_count  (SoakViolations  *self);
void         soak_violations_clear  (SoakViolations  *self);

void          soak_test_init        (int             *argc,
                                     char          ***argv);
SoakProvider *soak_start            (SoakKaged       *kaged,
                                     const char      *scenario_json,
                                     const char     **extra_args);

gint64       soak_now_ms            (void);
guint        soak_scaled_ms         (guint            ms);
void         soak_sleep_ms          (guint            ms);
guint64      soak_read_status_kb    (int              pid,
                                     const char      *field);
guint        soak_env_uint          (const char      *name,
                                     guint            fallback);

G_END_DECLS
