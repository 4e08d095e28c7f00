/* kaged-store-fixture.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <sqlite3.h>

#include "kaged-clock.h"
#include "kaged-store.h"
#include "kaged-test-files.h"

G_BEGIN_DECLS

#define T0 1750000000000

typedef struct
{
  char *dir;
  char *path;
  KagedClock *clock;
} Fixture;

void           fixture_set_up (Fixture       *fixture,
                               gconstpointer  user_data);
void           fixture_tear_down (Fixture       *fixture,
                                  gconstpointer  user_data);
KagedStore    *open_store (Fixture *fixture);
sqlite3       *raw_open (const char *path);
int            raw_exec (sqlite3    *db,
                         const char *sql);
gint64         raw_int (sqlite3    *db,
                        const char *sql);
char          *raw_text (sqlite3    *db,
                         const char *sql);
char          *raw_schema (const char *path);
GBytes        *read_bytes (const char *path);
KagedSession  *add_session (KagedStore *store,
                            const char *title);
gint64         add_operator (KagedStore *store,
                             gint64      session_id,
                             const char *content);
gint64         add_run (KagedStore     *store,
                        gint64          session_id,
                        gint64          anchor_id,
                        KagedRunStatus  status);
gint64         add_agent (KagedStore         *store,
                          gint64              session_id,
                          gint64              run_id,
                          const char         *content,
                          KagedMessageStatus  status);
gint64         add_turn (KagedStore *store,
                         gint64      session_id,
                         guint       n);
GArray        *ids_of (GPtrArray *messages);
void           assert_ids (GArray       *ids,
                           const gint64 *expected,
                           guint         n_expected);
GPtrArray     *list_all (KagedStore *store,
                         gint64      session_id,
                         gboolean    include_superseded);

G_END_DECLS
