/* kaged-event-client.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * A client of a session's event stream (`GET …/events`), shared by the
 * tests of the HTTP API: it reads the stream on the main loop and keeps
 * every event, in order, for the test to look through.
 */

#pragma once

#include <libsoup/soup.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

typedef struct
{
  char     *name;
  JsonNode *data;
} Event;

typedef struct
{
  SoupMessage      *msg;
  GCancellable     *cancellable;
  GDataInputStream *lines;
  GPtrArray        *events;     /* Event */
  char             *name;       /* of the event being read */
  GString          *data;
  guint             n_comments;
  guint             wanted_comments;
  guint             ended : 1;
} EventClient;

EventClient *event_client_open (SoupSession *http,
                                SoupMessage *msg);
void         event_client_free (EventClient *client);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EventClient, event_client_free)

G_END_DECLS
