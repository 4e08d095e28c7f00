/* kaged-fake-server-private.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

#include "kaged-fake-server.h"

G_BEGIN_DECLS

typedef struct
{
  GPtrArray *steps;       /* JsonObject */
  guint      next;
  guint      repeat_last : 1;
  guint      mix : 1;     /* draw each step at random, by "weight" */
  GRand     *rand;        /* seeded, for a mix */
  guint64    total_weight;
} StepQueue;

typedef struct
{
  GBytes *data;
  guint   delay_ms;
} Piece;

typedef struct _Job Job;

/* One answer being played: built from a step by kaged_fake_job_build(),
 * served by the server. */
struct _Job
{
  KagedFakeServer   *server;        /* unowned: the server frees its jobs */
  SoupServerMessage *msg;           /* SoupServer mode */
  gulong             finished_id;
  GIOStream         *stream;        /* raw mode, after stealing the connection */
  GCancellable      *cancellable;
  GSource           *timeout;

  guint              status;
  SoupMessageHeaders *headers;
  char              *content_type;
  GBytes            *body;          /* a whole body, or NULL for a stream */
  GPtrArray         *pieces;        /* Piece, or NULL */
  guint              index;
  guint              headers_delay_ms;
  guint              body_delay_ms;

  gint64             cut_after_bytes;  /* -1: no cut */
  gint64             cut_after_chunks; /* -1: no cut */
  guint64            body_written;

  guint              refuse_ms;

  guint              reset : 1;
  guint              hang : 1;
  guint              hang_at_end : 1;
  guint              repeat_chunks : 1;
  guint              paused : 1;
  guint              closing : 1;
  guint              mid_chunk : 1;
};

extern const char kaged_fake_scenario_help[];

void        kaged_fake_piece_free       (Piece        *piece);
StepQueue  *kaged_fake_step_queue_new   (void);
JsonObject *kaged_fake_step_queue_next  (StepQueue    *queue);
void        kaged_fake_step_queue_free  (StepQueue    *queue);
gboolean    kaged_fake_parse_scenario   (const char   *json,
                                         StepQueue   **default_queue,
                                         GHashTable  **path_queues,
                                         GError      **error);
void        kaged_fake_job_build        (Job          *job,
                                         JsonObject   *step,
                                         GBytes       *request_body);
char       *kaged_fake_object_to_string (JsonObject   *object);

G_END_DECLS
