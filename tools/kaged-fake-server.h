/* kaged-fake-server.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define KAGED_FAKE_SERVER_ERROR (kaged_fake_server_error_quark ())

typedef enum
{
  KAGED_FAKE_SERVER_ERROR_SCENARIO,
} KagedFakeServerError;

#define KAGED_TYPE_FAKE_SERVER (kaged_fake_server_get_type ())

G_DECLARE_FINAL_TYPE (KagedFakeServer, kaged_fake_server, KAGED, FAKE_SERVER, GObject)

/*
 * KagedFakeServer answers like an LLM provider (OpenAI-compatible,
 * Anthropic Messages, Ollama) from a scripted scenario, on 127.0.0.1 only.
 * It counts the requests it gets, per path, and keeps what was sent, so a
 * test can assert how many attempts reached the wire and with what body.
 * The scenario format is described in kaged_fake_server_scenario_help().
 *
 * It runs on the thread-default main context of the thread that called
 * kaged_fake_server_listen(); delays use real time.
 */
GQuark           kaged_fake_server_error_quark           (void);
const char      *kaged_fake_server_scenario_help         (void);

KagedFakeServer *kaged_fake_server_new                   (const char       *scenario_json,
                                                          GError          **error);
KagedFakeServer *kaged_fake_server_new_from_file         (const char       *path,
                                                          GError          **error);
gboolean         kaged_fake_server_set_scenario          (KagedFakeServer  *self,
                                                          const char       *scenario_json,
                                                          GError          **error);
gboolean         kaged_fake_server_listen                (KagedFakeServer  *self,
                                                          guint             port,
                                                          GError          **error);
guint            kaged_fake_server_get_port              (KagedFakeServer  *self);
char            *kaged_fake_server_get_url               (KagedFakeServer  *self);
void             kaged_fake_server_reset                 (KagedFakeServer  *self);

guint            kaged_fake_server_get_n_requests        (KagedFakeServer  *self,
                                                          const char       *path);
guint            kaged_fake_server_get_n_connections     (KagedFakeServer  *self);
guint            kaged_fake_server_get_n_active          (KagedFakeServer  *self);
GBytes          *kaged_fake_server_get_request_body      (KagedFakeServer  *self,
                                                          guint             index);
const char      *kaged_fake_server_get_request_path      (KagedFakeServer  *self,
                                                          guint             index);
const char      *kaged_fake_server_get_request_header    (KagedFakeServer  *self,
                                                          guint             index,
                                                          const char       *name);
GBytes          *kaged_fake_server_get_last_body         (KagedFakeServer  *self,
                                                          const char       *path);
const char      *kaged_fake_server_get_request_fault     (KagedFakeServer  *self,
                                                          guint             index);
gint64           kaged_fake_server_get_request_time      (KagedFakeServer  *self,
                                                          guint             index);
const gint64    *kaged_fake_server_get_refusals          (KagedFakeServer  *self,
                                                          guint            *n_refusals);
char            *kaged_fake_server_dup_stats             (KagedFakeServer  *self);
void             kaged_fake_server_set_models            (KagedFakeServer    *self,
                                                          const char * const *models);
void             kaged_fake_server_set_api_key           (KagedFakeServer  *self,
                                                          const char       *api_key);

G_END_DECLS
