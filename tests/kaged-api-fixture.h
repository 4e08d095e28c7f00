/* kaged-api-fixture.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * What the HTTP API tests share: a fixture with a fake provider served by
 * the test, the real `kaged --headless` started against it (or an
 * in-process KagedApiServer), and HTTP and event-stream clients (the
 * latter in kaged-event-client.c, which test-headless shares). A
 * `kaged --headless` started here dies with the test, even one that
 * aborts.
 */

#pragma once

#include <libsoup/soup.h>
#include <json-glib/json-glib.h>

#include "kaged-api-server.h"
#include "kaged-core.h"
#include "kaged-event-client.h"
#include "kaged-fake-server.h"
#include "kaged-test-files.h"

G_BEGIN_DECLS

#define WAIT_SECONDS 15

typedef struct
{
  char            *dir;
  char            *data_dir;
  char            *config_dir;
  char            *token_path;
  char            *token;

  KagedFakeServer *fake;
  char            *fake_url;

  GSubprocess     *process;
  GDataInputStream *process_out;
  GString         *process_output;
  guint            port;
  gboolean         exited;

  /* In-process server tests */
  KagedCore           *core;
  KagedApiServer      *server;

  /* The headless program's descriptor limit (RLIMIT_NOFILE), when not 0 */
  guint            nofile_limit;

  SoupSession     *http;
} Fixture;

typedef struct
{
  guint               status;
  JsonNode           *root;
  SoupMessageHeaders *headers;
} Response;

void        response_free             (Response     *response);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Response, response_free)

typedef gboolean (*Predicate) (gpointer data);

void        kaged_api_test_init       (int          *argc,
                                       char       ***argv);

void        wait_until                (Predicate     predicate,
                                       gpointer      data);
gboolean    flag_set                  (gpointer      data);

void        fixture_set_up            (Fixture      *fixture,
                                       gconstpointer data);
void        fixture_tear_down         (Fixture      *fixture,
                                       gconstpointer data);
void        fixture_set_scenario      (Fixture      *fixture,
                                       const char   *scenario);
void        fixture_start             (Fixture      *fixture);
void        fixture_start_full        (Fixture      *fixture,
                                       gboolean      with_token_file,
                                       const char   *first_extra,
                                       ...);
void        fixture_stop              (Fixture      *fixture);
void        fixture_wait_exit         (Fixture      *fixture);
void        fixture_serve_in_process  (Fixture      *fixture);

const char *kaged_binary              (void);
GSubprocessLauncher *new_launcher     (Fixture      *fixture);
int         run_failing               (Fixture      *fixture,
                                       const char   *const *args,
                                       char        **err);

SoupMessage *new_message              (Fixture      *fixture,
                                       const char   *method,
                                       const char   *path);
Response   *send_message              (Fixture      *fixture,
                                       SoupMessage  *msg);
Response   *request                   (Fixture      *fixture,
                                       const char   *method,
                                       const char   *path,
                                       const char   *body);
JsonObject *response_object           (Response     *response);
void        assert_error              (Response     *response,
                                       guint         status,
                                       const char   *code);

gint64      create_session            (Fixture      *fixture,
                                       const char   *title);
JsonObject *post_message              (Fixture      *fixture,
                                       gint64        session_id,
                                       const char   *content);
JsonArray  *list_messages             (Fixture      *fixture,
                                       gint64        session_id,
                                       const char   *query);
char       *snapshot                  (Fixture      *fixture);
JsonObject *get_run                   (Fixture      *fixture,
                                       gint64        session_id,
                                       gint64        run_id);

EventClient *open_events              (Fixture      *fixture,
                                       gint64        session_id);
JsonObject *wait_event                (EventClient  *client,
                                       const char   *name,
                                       gint64        run_id);
guint       count_events              (EventClient  *client,
                                       const char   *name,
                                       gint64        run_id);
guint       event_index               (EventClient  *client,
                                       const char   *name,
                                       gint64        run_id);

/* A client that writes and reads HTTP byte by byte, on the main loop. */
typedef struct _RawClient RawClient;

RawClient  *raw_client_connect        (guint         port);
void        raw_client_send           (RawClient    *client,
                                       const char   *text);
void        raw_client_send_request   (RawClient    *client,
                                       const char   *request_line,
                                       const char   *token,
                                       const char   *headers,
                                       const char   *body);
gboolean    raw_client_wait_closed    (RawClient    *client,
                                       guint         milliseconds);
guint       raw_client_wait_answer    (RawClient    *client,
                                       guint         milliseconds,
                                       char        **code);
const char *raw_client_get_received   (RawClient    *client);
void        raw_client_forget         (RawClient    *client);
void        raw_client_free           (RawClient    *client);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (RawClient, raw_client_free)

char       *fixture_stop_and_read_stderr (Fixture   *fixture);

/* Adds a test of the fixture at /api/@path. */
#define KAGED_API_TEST_ADD(path, func) \
  g_test_add ("/api/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

G_END_DECLS
