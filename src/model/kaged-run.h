/* kaged-run.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib-object.h>

#include "kaged-enums.h"
#include "kaged-attempt.h"

G_BEGIN_DECLS

#define KAGED_TYPE_RUN (kaged_run_get_type ())

G_DECLARE_FINAL_TYPE (KagedRun, kaged_run, KAGED, RUN, GObject)

KagedRun *kaged_run_new (void);

gint64          kaged_run_get_id                (KagedRun *self);
void            kaged_run_set_id                (KagedRun *self,
                                                 gint64 id);
gint64          kaged_run_get_session_id        (KagedRun *self);
void            kaged_run_set_session_id        (KagedRun *self,
                                                 gint64 session_id);
gint64          kaged_run_get_anchor_id         (KagedRun *self);
void            kaged_run_set_anchor_id         (KagedRun *self,
                                                 gint64 anchor_id);
KagedRunStatus  kaged_run_get_status            (KagedRun *self);
void            kaged_run_set_status            (KagedRun *self,
                                                 KagedRunStatus status);
gint64          kaged_run_get_input_tokens      (KagedRun *self);
void            kaged_run_set_input_tokens      (KagedRun *self,
                                                 gint64 input_tokens);
gint64          kaged_run_get_output_tokens     (KagedRun *self);
void            kaged_run_set_output_tokens     (KagedRun *self,
                                                 gint64 output_tokens);
gboolean        kaged_run_get_retryable         (KagedRun *self);
void            kaged_run_set_retryable         (KagedRun *self,
                                                 gboolean retryable);
KagedRetryClass kaged_run_get_retry_class       (KagedRun *self);
void            kaged_run_set_retry_class       (KagedRun *self,
                                                 KagedRetryClass retry_class);
gint64          kaged_run_get_retry_after_until (KagedRun *self);
void            kaged_run_set_retry_after_until (KagedRun *self,
                                                 gint64 retry_after_until);
guint           kaged_run_get_http_status       (KagedRun *self);
void            kaged_run_set_http_status       (KagedRun *self,
                                                 guint http_status);
const char *    kaged_run_get_error_message     (KagedRun *self);
void            kaged_run_set_error_message     (KagedRun *self,
                                                 const char *error_message);
gint64          kaged_run_get_created_at        (KagedRun *self);
void            kaged_run_set_created_at        (KagedRun *self,
                                                 gint64 created_at);
gint64          kaged_run_get_started_at        (KagedRun *self);
void            kaged_run_set_started_at        (KagedRun *self,
                                                 gint64 started_at);
gint64          kaged_run_get_finished_at       (KagedRun *self);
void            kaged_run_set_finished_at       (KagedRun *self,
                                                 gint64 finished_at);
GPtrArray *     kaged_run_get_attempts          (KagedRun *self);
void            kaged_run_add_attempt           (KagedRun *self,
                                                 const KagedAttempt *attempt);
void            kaged_run_clear_attempts        (KagedRun *self);
gint64          kaged_run_get_next_attempt_at   (KagedRun *self);
void            kaged_run_set_next_attempt_at   (KagedRun *self,
                                                 gint64 next_attempt_at);
gboolean        kaged_run_is_finished           (KagedRun *self);

G_END_DECLS
