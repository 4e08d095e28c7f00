/* soak-faults-check.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib.h>

#include "kaged-soak-fixture.h"

G_BEGIN_DECLS

/*
 * What the fault soak holds the runs Kaged recorded to, against the
 * requests the fake provider served. Nothing here goes by time: every
 * answer of the provider names the request it answers (its "stamp",
 * "[rN]" with N the request's number in the provider's log, in the reply's
 * text and in the error messages the provider writes), so the reply a run
 * kept and the attempts it logged say exactly which requests reached it.
 */

typedef struct
{
  const char *name;
  guint       weight;
  const char *step;          /* the rest of the fake provider's step */
  const char *retry_class;   /* of a run whose last answer this was; NULL: success */
  gboolean    delta;         /* the answer publishes text before it ends */
} SoakFault;

/* A request the provider served, by its number in the provider's log. */
typedef struct
{
  const SoakFault *fault;
  int              conversation;   /* -1: the request named none */
} SoakServed;

typedef struct
{
  gint64  http_status;   /* -1: no answer */
  char   *error;
  char   *retry_class;   /* NULL: none */
} SoakAttempt;

typedef struct
{
  gint64     id;
  int        conversation;
  char      *status;
  char      *retry_class;
  char      *reply;       /* the text of its reply, or NULL */
  GPtrArray *attempts;    /* SoakAttempt, in the order logged */
} SoakRun;

typedef struct
{
  guint       n_compacted;
  guint       max_attempts;         /* logged in a run */
  guint       max_attempts_plain;   /* logged in a run without compaction */
  GHashTable *class_counts;         /* class → count of failed runs; the caller's */
} SoakRunFigures;

SoakRun  *soak_run_new               (gint64            id,
                                      int               conversation,
                                      const char       *status,
                                      const char       *retry_class,
                                      const char       *reply);
void      soak_run_add_attempt       (SoakRun          *run,
                                      gint64            http_status,
                                      const char       *error,
                                      const char       *retry_class);
void      soak_run_free              (SoakRun          *run);

GArray   *soak_parse_stamps          (const char       *text);

void      soak_check_runs            (GPtrArray        *runs,
                                      const SoakServed *served,
                                      guint             n_served,
                                      GPtrArray        *summaries,
                                      guint             n_conversations,
                                      SoakViolations   *violations,
                                      SoakRunFigures   *figures);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SoakRun, soak_run_free)

G_END_DECLS
