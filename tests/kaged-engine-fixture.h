/* kaged-engine-fixture.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include "kaged-fake-server.h"
#include "kaged-session-manager.h"

G_BEGIN_DECLS

typedef struct
{
  char                *dir;
  char                *db_path;
  KagedStore          *store;
  KagedSessionManager *manager;
  KagedFakeServer     *server;
  char                *url;
  KagedClock          *retry_clock;   /* the Tier 1 clock: fake where a test waits */
  KagedSession        *session;
  guint                n_deltas;      /* ::message-delta emissions */
  gint64               last_delta_run; /* the run of the latest one */
  GPtrArray           *finished;      /* KagedRun, as ::run-changed reported them */
  double               input_price;
  double               output_price;
  KagedSpendPeriod     spend_limit_period;
  double               spend_limit;
} Fixture;

typedef gboolean (*Predicate) (Fixture *fixture, gpointer data);

void           fixture_set_model (Fixture                *fixture,
                                  KagedSessionManager    *manager);
void           on_delta (KagedSessionManager *manager,
                         gint64               session_id,
                         gint64               message_id,
                         gint64               run_id,
                         const char          *text,
                         Fixture             *fixture);
void           on_run_changed (KagedSessionManager *manager,
                               KagedRun            *run,
                               Fixture             *fixture);
void           fixture_set_scenario (Fixture    *fixture,
                                     const char *scenario);
void           fixture_set_up (Fixture       *fixture,
                               gconstpointer  data);
void           fixture_tear_down (Fixture       *fixture,
                                  gconstpointer  data);
void           wait_until (Fixture   *fixture,
                           Predicate  predicate,
                           gpointer   data);
gboolean       run_finished (Fixture  *fixture,
                             gpointer  data);
void           wait_run (Fixture *fixture,
                         gint64   run_id);
gboolean       pending_clock (Fixture  *fixture,
                              gpointer  data);
gboolean       no_pending_clock (Fixture  *fixture,
                                 gpointer  data);
KagedRun      *get_run (Fixture *fixture,
                        gint64   run_id);
KagedMessage  *get_reply (Fixture *fixture,
                          gint64   run_id);
KagedReceipt  *post (Fixture    *fixture,
                     const char *content);
void           settle (Fixture *fixture);
guint          count_messages (Fixture *fixture);
char          *dump_operator_rows (Fixture *fixture);
gboolean       reply_has_text (Fixture  *fixture,
                               gpointer  data);
void           assert_cancelled (Fixture    *fixture,
                                 gint64      run_id,
                                 const char *partial);
void           kaged_engine_test_init (int    *argc,
                                       char ***argv);

G_END_DECLS
