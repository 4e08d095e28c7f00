/* kaged-window-fixture.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <adwaita.h>

#include "kaged-composer.h"
#include "kaged-core.h"
#include "kaged-desktop.h"
#include "kaged-fake-server.h"
#include "kaged-message-row.h"
#include "kaged-test-notifications.h"
#include "kaged-window.h"

G_BEGIN_DECLS

#define REPLY "The sky is blue because air scatters short wavelengths most."

/* The provider streams REPLY in four parts. */
#define REPLY_SCENARIO "[{\"kind\": \"openai\", \"text\": \"" REPLY "\", \"chunks\": 4, \"delay_ms\": 20}]"

/* A window on a core of its own, its provider a fake server on 127.0.0.1
 * playing the scenario the test was added with ("unreachable": nothing
 * listens where the provider should be), its database fresh. */
typedef struct
{
  char            *dir;
  char            *db_path;
  GSettings       *settings;
  KagedFakeServer *server;
  KagedStore      *store;
  GtkApplication  *application;
  KagedCore       *core;
  KagedDesktop    *desktop;
  KagedWindow     *window;
  KagedComposer   *composer;
} Fixture;

typedef gboolean (*Condition) (Fixture *fixture, gconstpointer data);

/* How often the application's preferences were opened, and for which
 * profile the last time they were opened at one. */
extern guint n_preferences_opened;
extern char *preferences_profile_opened;

/* What the application asked of the desktop's notification server. */
extern TestNotificationServer *notification_server;

void             fixture_set_up     (Fixture        *fixture,
                                     gconstpointer   data);
void             fixture_tear_down  (Fixture        *fixture,
                                     gconstpointer   data);
gpointer         child              (Fixture        *fixture,
                                     const char     *name);
gboolean         wait_for           (Fixture        *fixture,
                                     Condition       condition,
                                     gconstpointer   data);
void             settle             (guint           ms);
KagedCore       *show_with_core     (Fixture        *fixture,
                                     KagedCoreFlags  flags,
                                     KagedProfile   *profile);

GListModel      *shown_messages     (Fixture        *fixture);
KagedMessage    *shown_message      (Fixture        *fixture,
                                     guint           position);
guint            n_shown            (Fixture        *fixture);
KagedMessageRow *row_of             (Fixture        *fixture,
                                     gint64          message_id);
GtkLabel        *find_label         (GtkWidget      *widget,
                                     const char     *text,
                                     gboolean        exactly);
gboolean         label_shows        (GtkWidget      *widget,
                                     const char     *text);

void             send_text          (Fixture        *fixture,
                                     const char     *text);
GtkTextBuffer   *composer_buffer    (Fixture        *fixture);
void             type_in_composer   (Fixture        *fixture,
                                     const char     *text);

/* Conditions for wait_for(). */
gboolean         reply_complete     (Fixture        *fixture,
                                     gconstpointer   data);
gboolean         reply_on_screen    (Fixture        *fixture,
                                     gconstpointer   data);
gboolean         composer_running   (Fixture        *fixture,
                                     gconstpointer   data);
gboolean         composer_has_focus (Fixture        *fixture,
                                     gconstpointer   data);
gboolean         toast_shown        (Fixture        *fixture,
                                     gconstpointer   data);
gboolean         at_end             (Fixture        *fixture,
                                     gconstpointer   data);

/* A long conversation. */
gint64           fill_conversation  (Fixture        *fixture,
                                     guint           n,
                                     guint           marked,
                                     gint64         *marked_id);
gint64           last_message_id    (Fixture        *fixture,
                                     gint64          session_id);
double           row_top            (Fixture        *fixture,
                                     gint64          message_id);

G_END_DECLS
