/* kaged-api-wire.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-api"

#include "config.h"

#include "kaged-api-wire.h"
#include "kaged-engine-enum-types.h"
#include "kaged-enum-types.h"
#include "kaged-retry-class.h"

static void
add_id (JsonBuilder *builder,
        const char  *name,
        gint64       value)
{
  json_builder_set_member_name (builder, name);
  if (value > 0)
    json_builder_add_int_value (builder, value);
  else
    json_builder_add_null_value (builder);
}

static void
add_time (JsonBuilder *builder,
          const char  *name,
          gint64       value)
{
  add_id (builder, name, value);
}

static void
add_string (JsonBuilder *builder,
            const char  *name,
            const char  *value)
{
  json_builder_set_member_name (builder, name);
  if (value != NULL)
    json_builder_add_string_value (builder, value);
  else
    json_builder_add_null_value (builder);
}

static const char *
nick_or_null (GType type,
              int   value,
              int   none)
{
  if (value == none)
    return NULL;

  return kaged_enum_to_nick (type, value);
}

void
kaged_api_wire_add_classification (JsonBuilder     *builder,
                                   gboolean         retryable,
                                   KagedRetryClass  retry_class,
                                   gint64           retry_after_until)
{
  json_builder_set_member_name (builder, "retry");
  if (retry_class == KAGED_RETRY_CLASS_NONE)
    {
      json_builder_add_null_value (builder);
      return;
    }

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "retryable");
  json_builder_add_boolean_value (builder, retryable);
  add_string (builder, "retry_class", kaged_retry_class_to_string (retry_class));
  add_time (builder, "retry_after_until", retry_after_until);
  json_builder_end_object (builder);
}

/* A session with its profile, model and system prompt (null: the
 * default), under the names PATCH takes. */
void
kaged_api_wire_add_session (JsonBuilder  *builder,
                            KagedSession *session,
                            const char   *profile_id,
                            const char   *model,
                            const char   *system_prompt)
{
  g_return_if_fail (JSON_IS_BUILDER (builder));
  g_return_if_fail (KAGED_IS_SESSION (session));

  json_builder_begin_object (builder);
  add_id (builder, "id", kaged_session_get_id (session));
  add_string (builder, "title", kaged_session_get_title (session));
  add_time (builder, "created_at", kaged_session_get_created_at (session));
  add_time (builder, "updated_at", kaged_session_get_updated_at (session));
  add_string (builder, "state",
              kaged_enum_to_nick (KAGED_TYPE_SESSION_STATE,
                                  kaged_session_get_state (session)));
  add_string (builder, "profile", profile_id);
  add_string (builder, "model", model);
  add_string (builder, "system_prompt", system_prompt);
  json_builder_end_object (builder);
}

void
kaged_api_wire_add_message (JsonBuilder  *builder,
                            KagedMessage *message)
{
  g_return_if_fail (JSON_IS_BUILDER (builder));
  g_return_if_fail (KAGED_IS_MESSAGE (message));

  json_builder_begin_object (builder);
  add_id (builder, "id", kaged_message_get_id (message));
  add_id (builder, "session_id", kaged_message_get_session_id (message));
  add_string (builder, "role",
              kaged_enum_to_nick (KAGED_TYPE_MESSAGE_ROLE,
                                  kaged_message_get_role (message)));
  add_string (builder, "content", kaged_message_get_content (message) ?: "");
  add_time (builder, "created_at", kaged_message_get_created_at (message));
  add_string (builder, "status",
              nick_or_null (KAGED_TYPE_MESSAGE_STATUS,
                            kaged_message_get_status (message),
                            KAGED_MESSAGE_STATUS_NONE));
  add_id (builder, "run_id", kaged_message_get_run_id (message));
  add_string (builder, "error_message", kaged_message_get_error_message (message));
  json_builder_set_member_name (builder, "superseded");
  json_builder_add_boolean_value (builder, kaged_message_is_superseded (message));
  add_id (builder, "superseded_by_run", kaged_message_get_superseded_by_run (message));
  json_builder_set_member_name (builder, "compacted");
  json_builder_add_boolean_value (builder, kaged_message_get_compacted (message));
  kaged_api_wire_add_classification (builder,
                                     kaged_message_get_retryable (message),
                                     kaged_message_get_retry_class (message),
                                     kaged_message_get_retry_after_until (message));
  json_builder_end_object (builder);
}

void
kaged_api_wire_add_attempt (JsonBuilder        *builder,
                            const KagedAttempt *attempt)
{
  g_return_if_fail (JSON_IS_BUILDER (builder));
  g_return_if_fail (attempt != NULL);

  json_builder_begin_object (builder);
  add_time (builder, "time", attempt->time);
  json_builder_set_member_name (builder, "http_status");
  if (attempt->http_status != 0)
    json_builder_add_int_value (builder, attempt->http_status);
  else
    json_builder_add_null_value (builder);
  add_string (builder, "error", attempt->error);
  add_string (builder, "retry_class",
              attempt->retry_class != KAGED_RETRY_CLASS_NONE
                ? kaged_retry_class_to_string (attempt->retry_class)
                : NULL);
  json_builder_set_member_name (builder, "wait_ms");
  json_builder_add_int_value (builder, attempt->wait_ms);
  add_string (builder, "wait_source", attempt->wait_source);
  json_builder_end_object (builder);
}

void
kaged_api_wire_add_run (JsonBuilder *builder,
                        KagedRun    *run)
{
  GPtrArray *attempts;

  g_return_if_fail (JSON_IS_BUILDER (builder));
  g_return_if_fail (KAGED_IS_RUN (run));

  json_builder_begin_object (builder);
  add_id (builder, "id", kaged_run_get_id (run));
  add_id (builder, "session_id", kaged_run_get_session_id (run));
  add_id (builder, "anchor_message_id", kaged_run_get_anchor_id (run));
  add_string (builder, "status",
              kaged_enum_to_nick (KAGED_TYPE_RUN_STATUS,
                                  kaged_run_get_status (run)));
  kaged_api_wire_add_classification (builder,
                                     kaged_run_get_retryable (run),
                                     kaged_run_get_retry_class (run),
                                     kaged_run_get_retry_after_until (run));
  json_builder_set_member_name (builder, "http_status");
  if (kaged_run_get_http_status (run) != 0)
    json_builder_add_int_value (builder, kaged_run_get_http_status (run));
  else
    json_builder_add_null_value (builder);
  add_string (builder, "error_message", kaged_run_get_error_message (run));

  json_builder_set_member_name (builder, "usage");
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "input_tokens");
  json_builder_add_int_value (builder, kaged_run_get_input_tokens (run));
  json_builder_set_member_name (builder, "output_tokens");
  json_builder_add_int_value (builder, kaged_run_get_output_tokens (run));
  json_builder_end_object (builder);

  add_time (builder, "created_at", kaged_run_get_created_at (run));
  add_time (builder, "started_at", kaged_run_get_started_at (run));
  add_time (builder, "finished_at", kaged_run_get_finished_at (run));

  json_builder_set_member_name (builder, "attempts");
  json_builder_begin_array (builder);
  attempts = kaged_run_get_attempts (run);
  for (guint i = 0; attempts != NULL && i < attempts->len; i++)
    kaged_api_wire_add_attempt (builder, g_ptr_array_index (attempts, i));
  json_builder_end_array (builder);

  json_builder_end_object (builder);
}

void
kaged_api_wire_add_receipt (JsonBuilder        *builder,
                            const KagedReceipt *receipt,
                            gboolean            with_superseded)
{
  g_return_if_fail (JSON_IS_BUILDER (builder));
  g_return_if_fail (receipt != NULL);

  json_builder_begin_object (builder);
  add_id (builder, "session_id", receipt->session_id);
  add_id (builder, "message_id", receipt->message_id);
  add_id (builder, "run_id", receipt->run_id);
  add_string (builder, "status",
              kaged_enum_to_nick (KAGED_TYPE_RECEIPT_STATUS, receipt->status));
  if (with_superseded)
    {
      json_builder_set_member_name (builder, "superseded_message_ids");
      json_builder_begin_array (builder);
      for (guint i = 0; receipt->superseded_message_ids != NULL &&
                        i < receipt->superseded_message_ids->len; i++)
        json_builder_add_int_value (builder,
                                    g_array_index (receipt->superseded_message_ids, gint64, i));
      json_builder_end_array (builder);
    }
  json_builder_end_object (builder);
}

/**
 * kaged_api_wire_to_string:
 * @length: (out) (optional): the length of the text
 *
 * Returns: (transfer full): the builder's value as compact JSON
 */
char *
kaged_api_wire_to_string (JsonBuilder *builder,
                          gsize       *length)
{
  g_autoptr(JsonGenerator) generator = json_generator_new ();
  g_autoptr(JsonNode) root = json_builder_get_root (builder);

  json_generator_set_root (generator, root);

  return json_generator_to_data (generator, length);
}

static const char *
retry_state_name (KagedRetrySchedulerState state)
{
  switch (state)
    {
    case KAGED_RETRY_SCHEDULER_STATE_ARMED:
      return "armed";

    case KAGED_RETRY_SCHEDULER_STATE_SCHEDULED:
      return "scheduled";

    case KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK:
      return "waiting_for_network";

    case KAGED_RETRY_SCHEDULER_STATE_DISPATCHING:
      return "dispatching";

    case KAGED_RETRY_SCHEDULER_STATE_WATCHING:
      return "watching";

    case KAGED_RETRY_SCHEDULER_STATE_CANCELLED:
      return "cancelled";

    case KAGED_RETRY_SCHEDULER_STATE_IDLE:
    default:
      return "idle";
    }
}

/**
 * kaged_api_wire_add_retry:
 * @scheduler: (nullable): the session's Tier 2 scheduler, or %NULL for a
 *   session that has none (idle)
 *
 * The Tier 2 retry of a session: `{session_id, state, attempt, next_at,
 * retry_class, http_status, wait_source, anchor_message_id, run_id}`.
 */
void
kaged_api_wire_add_retry (JsonBuilder         *builder,
                          gint64               session_id,
                          KagedRetryScheduler *scheduler)
{
  KagedRetrySchedulerState state = KAGED_RETRY_SCHEDULER_STATE_IDLE;
  KagedRetryClass retry_class = KAGED_RETRY_CLASS_NONE;
  gint64 next_at = 0;
  guint http_status = 0;
  guint attempt = 0;

  if (scheduler != NULL)
    {
      attempt = kaged_retry_scheduler_get_attempt (scheduler);
      state = kaged_retry_scheduler_get_state (scheduler);
      retry_class = kaged_retry_scheduler_get_retry_class (scheduler);
      http_status = kaged_retry_scheduler_get_http_status (scheduler);
      if (state == KAGED_RETRY_SCHEDULER_STATE_ARMED ||
          state == KAGED_RETRY_SCHEDULER_STATE_SCHEDULED ||
          state == KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK)
        next_at = kaged_retry_scheduler_get_next_eligible_time (scheduler);
    }

  json_builder_begin_object (builder);
  add_id (builder, "session_id", session_id);
  add_string (builder, "state", retry_state_name (state));
  json_builder_set_member_name (builder, "attempt");
  json_builder_add_int_value (builder, attempt);
  add_time (builder, "next_at", next_at);
  add_string (builder, "retry_class",
              retry_class != KAGED_RETRY_CLASS_NONE ? kaged_retry_class_to_string (retry_class)
                                                    : NULL);
  add_id (builder, "http_status", http_status);
  add_string (builder, "wait_source",
              scheduler != NULL ? kaged_retry_scheduler_get_wait_source (scheduler) : NULL);
  add_id (builder, "anchor_message_id",
          scheduler != NULL ? kaged_retry_scheduler_get_anchor_id (scheduler) : 0);
  add_id (builder, "run_id", scheduler != NULL ? kaged_retry_scheduler_get_run_id (scheduler) : 0);
  json_builder_end_object (builder);
}
