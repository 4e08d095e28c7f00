/* kaged-api-wire.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <json-glib/json-glib.h>

#include "kaged-attempt.h"
#include "kaged-message.h"
#include "kaged-receipt.h"
#include "kaged-retry-scheduler.h"
#include "kaged-run.h"
#include "kaged-session.h"

G_BEGIN_DECLS

/*
 * How the local HTTP API writes the model as JSON (docs/http-api.md).
 * Timestamps are epoch milliseconds, ids JSON integers, enums their nicks;
 * a value that is not set (a time of 0, no run, no error) is null.
 */
void  kaged_api_wire_add_session        (JsonBuilder        *builder,
                                         KagedSession       *session,
                                         const char         *profile_id,
                                         const char         *model,
                                         const char         *system_prompt);
void  kaged_api_wire_add_message        (JsonBuilder        *builder,
                                         KagedMessage       *message);
void  kaged_api_wire_add_run            (JsonBuilder        *builder,
                                         KagedRun           *run);
void  kaged_api_wire_add_attempt        (JsonBuilder        *builder,
                                         const KagedAttempt *attempt);
void  kaged_api_wire_add_receipt        (JsonBuilder        *builder,
                                         const KagedReceipt *receipt,
                                         gboolean            with_superseded);
void  kaged_api_wire_add_classification (JsonBuilder        *builder,
                                         gboolean            retryable,
                                         KagedRetryClass     retry_class,
                                         gint64              retry_after_until);
void  kaged_api_wire_add_retry          (JsonBuilder         *builder,
                                         gint64               session_id,
                                         KagedRetryScheduler *scheduler);
char *kaged_api_wire_to_string          (JsonBuilder        *builder,
                                         gsize              *length);

G_END_DECLS
