/* kaged-run.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-run"

#include "config.h"

#include "kaged-enum-types.h"
#include "kaged-run.h"

/**
 * KagedRun:
 *
 * One attempt to produce an agent reply from an operator message.
 */
struct _KagedRun
{
  GObject parent_instance;

  gint64 id;
  gint64 session_id;
  gint64 anchor_id;
  KagedRunStatus status;
  gint64 input_tokens;
  gint64 output_tokens;
  guint retryable : 1;
  KagedRetryClass retry_class;
  gint64 retry_after_until;
  guint http_status;
  char *error_message;
  gint64 created_at;
  gint64 started_at;
  gint64 finished_at;
  GPtrArray *attempts;
  gint64 next_attempt_at;
};

G_DEFINE_FINAL_TYPE (KagedRun, kaged_run, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_ID,
  PROP_SESSION_ID,
  PROP_ANCHOR_ID,
  PROP_STATUS,
  PROP_INPUT_TOKENS,
  PROP_OUTPUT_TOKENS,
  PROP_RETRYABLE,
  PROP_RETRY_CLASS,
  PROP_RETRY_AFTER_UNTIL,
  PROP_HTTP_STATUS,
  PROP_ERROR_MESSAGE,
  PROP_CREATED_AT,
  PROP_STARTED_AT,
  PROP_FINISHED_AT,
  PROP_ATTEMPTS,
  PROP_NEXT_ATTEMPT_AT,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static void
kaged_run_finalize (GObject *object)
{
  KagedRun *self = (KagedRun *)object;

  g_clear_pointer (&self->error_message, g_free);
  g_clear_pointer (&self->attempts, g_ptr_array_unref);

  G_OBJECT_CLASS (kaged_run_parent_class)->finalize (object);
}

static void
kaged_run_get_property (GObject    *object,
                      guint       prop_id,
                      GValue     *value,
                      GParamSpec *pspec)
{
  KagedRun *self = KAGED_RUN (object);

  switch (prop_id)
    {
    case PROP_ID:
      g_value_set_int64 (value, self->id);
      break;

    case PROP_SESSION_ID:
      g_value_set_int64 (value, self->session_id);
      break;

    case PROP_ANCHOR_ID:
      g_value_set_int64 (value, self->anchor_id);
      break;

    case PROP_STATUS:
      g_value_set_enum (value, self->status);
      break;

    case PROP_INPUT_TOKENS:
      g_value_set_int64 (value, self->input_tokens);
      break;

    case PROP_OUTPUT_TOKENS:
      g_value_set_int64 (value, self->output_tokens);
      break;

    case PROP_RETRYABLE:
      g_value_set_boolean (value, self->retryable);
      break;

    case PROP_RETRY_CLASS:
      g_value_set_enum (value, self->retry_class);
      break;

    case PROP_RETRY_AFTER_UNTIL:
      g_value_set_int64 (value, self->retry_after_until);
      break;

    case PROP_HTTP_STATUS:
      g_value_set_uint (value, self->http_status);
      break;

    case PROP_ERROR_MESSAGE:
      g_value_set_string (value, self->error_message);
      break;

    case PROP_CREATED_AT:
      g_value_set_int64 (value, self->created_at);
      break;

    case PROP_STARTED_AT:
      g_value_set_int64 (value, self->started_at);
      break;

    case PROP_FINISHED_AT:
      g_value_set_int64 (value, self->finished_at);
      break;

    case PROP_ATTEMPTS:
      g_value_set_boxed (value, self->attempts);
      break;

    case PROP_NEXT_ATTEMPT_AT:
      g_value_set_int64 (value, self->next_attempt_at);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_run_set_property (GObject      *object,
                      guint         prop_id,
                      const GValue *value,
                      GParamSpec   *pspec)
{
  KagedRun *self = KAGED_RUN (object);

  switch (prop_id)
    {
    case PROP_ID:
      kaged_run_set_id (self, g_value_get_int64 (value));
      break;

    case PROP_SESSION_ID:
      kaged_run_set_session_id (self, g_value_get_int64 (value));
      break;

    case PROP_ANCHOR_ID:
      kaged_run_set_anchor_id (self, g_value_get_int64 (value));
      break;

    case PROP_STATUS:
      kaged_run_set_status (self, g_value_get_enum (value));
      break;

    case PROP_INPUT_TOKENS:
      kaged_run_set_input_tokens (self, g_value_get_int64 (value));
      break;

    case PROP_OUTPUT_TOKENS:
      kaged_run_set_output_tokens (self, g_value_get_int64 (value));
      break;

    case PROP_RETRYABLE:
      kaged_run_set_retryable (self, g_value_get_boolean (value));
      break;

    case PROP_RETRY_CLASS:
      kaged_run_set_retry_class (self, g_value_get_enum (value));
      break;

    case PROP_RETRY_AFTER_UNTIL:
      kaged_run_set_retry_after_until (self, g_value_get_int64 (value));
      break;

    case PROP_HTTP_STATUS:
      kaged_run_set_http_status (self, g_value_get_uint (value));
      break;

    case PROP_ERROR_MESSAGE:
      kaged_run_set_error_message (self, g_value_get_string (value));
      break;

    case PROP_CREATED_AT:
      kaged_run_set_created_at (self, g_value_get_int64 (value));
      break;

    case PROP_STARTED_AT:
      kaged_run_set_started_at (self, g_value_get_int64 (value));
      break;

    case PROP_FINISHED_AT:
      kaged_run_set_finished_at (self, g_value_get_int64 (value));
      break;

    case PROP_NEXT_ATTEMPT_AT:
      kaged_run_set_next_attempt_at (self, g_value_get_int64 (value));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_run_class_init (KagedRunClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = kaged_run_finalize;
  object_class->get_property = kaged_run_get_property;
  object_class->set_property = kaged_run_set_property;

  /**
   * KagedRun:id:
   *
   * The row id.
   */
  properties [PROP_ID] =
    g_param_spec_int64 ("id", NULL, NULL,
                          0, G_MAXINT64, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:session-id:
   *
   * The session it belongs to.
   */
  properties [PROP_SESSION_ID] =
    g_param_spec_int64 ("session-id", NULL, NULL,
                          0, G_MAXINT64, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:anchor-id:
   *
   * The operator message it answers.
   */
  properties [PROP_ANCHOR_ID] =
    g_param_spec_int64 ("anchor-id", NULL, NULL,
                          0, G_MAXINT64, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:status:
   *
   * Where the run stands.
   */
  properties [PROP_STATUS] =
    g_param_spec_enum ("status", NULL, NULL,
                          KAGED_TYPE_RUN_STATUS,
                          KAGED_RUN_STATUS_QUEUED,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:input-tokens:
   *
   * Input tokens used.
   */
  properties [PROP_INPUT_TOKENS] =
    g_param_spec_int64 ("input-tokens", NULL, NULL,
                          0, G_MAXINT64, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:output-tokens:
   *
   * Output tokens used.
   */
  properties [PROP_OUTPUT_TOKENS] =
    g_param_spec_int64 ("output-tokens", NULL, NULL,
                          0, G_MAXINT64, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:retryable:
   *
   * Whether the failure may be retried.
   */
  properties [PROP_RETRYABLE] =
    g_param_spec_boolean ("retryable", NULL, NULL,
                          FALSE,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:retry-class:
   *
   * How the failure was classified.
   */
  properties [PROP_RETRY_CLASS] =
    g_param_spec_enum ("retry-class", NULL, NULL,
                          KAGED_TYPE_RETRY_CLASS,
                          KAGED_RETRY_CLASS_NONE,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:retry-after-until:
   *
   * Not before this time, epoch milliseconds; 0 when unknown.
   */
  properties [PROP_RETRY_AFTER_UNTIL] =
    g_param_spec_int64 ("retry-after-until", NULL, NULL,
                          0, G_MAXINT64, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:http-status:
   *
   * The HTTP status of the last answer, 0 when none.
   */
  properties [PROP_HTTP_STATUS] =
    g_param_spec_uint ("http-status", NULL, NULL,
                          0, G_MAXUINT, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:error-message:
   *
   * Why the run failed, for people.
   */
  properties [PROP_ERROR_MESSAGE] =
    g_param_spec_string ("error-message", NULL, NULL,
                          NULL,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:created-at:
   *
   * Creation time, epoch milliseconds.
   */
  properties [PROP_CREATED_AT] =
    g_param_spec_int64 ("created-at", NULL, NULL,
                          0, G_MAXINT64, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:started-at:
   *
   * Start time, epoch milliseconds; 0 before it started.
   */
  properties [PROP_STARTED_AT] =
    g_param_spec_int64 ("started-at", NULL, NULL,
                          0, G_MAXINT64, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:finished-at:
   *
   * End time, epoch milliseconds; 0 while not finished.
   */
  properties [PROP_FINISHED_AT] =
    g_param_spec_int64 ("finished-at", NULL, NULL,
                          0, G_MAXINT64, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:attempts: (element-type KagedAttempt)
   *
   * The tier-1 attempt log, oldest first.
   */
  properties [PROP_ATTEMPTS] =
    g_param_spec_boxed ("attempts", NULL, NULL,
                        G_TYPE_PTR_ARRAY,
                        (G_PARAM_READABLE |
                         G_PARAM_EXPLICIT_NOTIFY |
                         G_PARAM_STATIC_STRINGS));

  /**
   * KagedRun:next-attempt-at:
   *
   * While Tier 1 waits to try the provider again, when the next attempt
   * starts, epoch milliseconds; 0 when none was planned. Not stored: it
   * matters only while the run lives.
   */
  properties [PROP_NEXT_ATTEMPT_AT] =
    g_param_spec_int64 ("next-attempt-at", NULL, NULL,
                        0, G_MAXINT64, 0,
                        (G_PARAM_READWRITE |
                         G_PARAM_EXPLICIT_NOTIFY |
                         G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_run_init (KagedRun *self)
{
  self->attempts = g_ptr_array_new_with_free_func ((GDestroyNotify)kaged_attempt_free);
}

KagedRun *
kaged_run_new (void)
{
  return g_object_new (KAGED_TYPE_RUN, NULL);
}

gint64
kaged_run_get_id (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->id;
}

void
kaged_run_set_id (KagedRun *self,
                gint64 id)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (self->id != id)
    {
      self->id = id;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_ID]);
    }
}

gint64
kaged_run_get_session_id (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->session_id;
}

void
kaged_run_set_session_id (KagedRun *self,
                        gint64 session_id)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (self->session_id != session_id)
    {
      self->session_id = session_id;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_SESSION_ID]);
    }
}

gint64
kaged_run_get_anchor_id (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->anchor_id;
}

void
kaged_run_set_anchor_id (KagedRun *self,
                       gint64 anchor_id)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (self->anchor_id != anchor_id)
    {
      self->anchor_id = anchor_id;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_ANCHOR_ID]);
    }
}

KagedRunStatus
kaged_run_get_status (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->status;
}

void
kaged_run_set_status (KagedRun *self,
                    KagedRunStatus status)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (self->status != status)
    {
      self->status = status;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_STATUS]);
    }
}

gint64
kaged_run_get_input_tokens (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->input_tokens;
}

void
kaged_run_set_input_tokens (KagedRun *self,
                          gint64 input_tokens)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (self->input_tokens != input_tokens)
    {
      self->input_tokens = input_tokens;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_INPUT_TOKENS]);
    }
}

gint64
kaged_run_get_output_tokens (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->output_tokens;
}

void
kaged_run_set_output_tokens (KagedRun *self,
                           gint64 output_tokens)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (self->output_tokens != output_tokens)
    {
      self->output_tokens = output_tokens;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_OUTPUT_TOKENS]);
    }
}

gboolean
kaged_run_get_retryable (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->retryable;
}

void
kaged_run_set_retryable (KagedRun *self,
                       gboolean retryable)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  retryable = !!retryable;

  if (self->retryable != retryable)
    {
      self->retryable = retryable;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_RETRYABLE]);
    }
}

KagedRetryClass
kaged_run_get_retry_class (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->retry_class;
}

void
kaged_run_set_retry_class (KagedRun *self,
                         KagedRetryClass retry_class)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (self->retry_class != retry_class)
    {
      self->retry_class = retry_class;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_RETRY_CLASS]);
    }
}

gint64
kaged_run_get_retry_after_until (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->retry_after_until;
}

void
kaged_run_set_retry_after_until (KagedRun *self,
                               gint64 retry_after_until)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (self->retry_after_until != retry_after_until)
    {
      self->retry_after_until = retry_after_until;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_RETRY_AFTER_UNTIL]);
    }
}

guint
kaged_run_get_http_status (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->http_status;
}

void
kaged_run_set_http_status (KagedRun *self,
                         guint http_status)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (self->http_status != http_status)
    {
      self->http_status = http_status;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_HTTP_STATUS]);
    }
}

const char *
kaged_run_get_error_message (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), NULL);

  return self->error_message;
}

void
kaged_run_set_error_message (KagedRun *self,
                           const char *error_message)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (g_strcmp0 (self->error_message, error_message) != 0)
    {
      g_free (self->error_message);
      self->error_message = g_strdup (error_message);
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_ERROR_MESSAGE]);
    }
}

gint64
kaged_run_get_created_at (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->created_at;
}

void
kaged_run_set_created_at (KagedRun *self,
                        gint64 created_at)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (self->created_at != created_at)
    {
      self->created_at = created_at;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_CREATED_AT]);
    }
}

gint64
kaged_run_get_started_at (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->started_at;
}

void
kaged_run_set_started_at (KagedRun *self,
                        gint64 started_at)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (self->started_at != started_at)
    {
      self->started_at = started_at;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_STARTED_AT]);
    }
}

gint64
kaged_run_get_finished_at (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->finished_at;
}

void
kaged_run_set_finished_at (KagedRun *self,
                         gint64 finished_at)
{
  g_return_if_fail (KAGED_IS_RUN (self));


  if (self->finished_at != finished_at)
    {
      self->finished_at = finished_at;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_FINISHED_AT]);
    }
}

/**
 * kaged_run_get_attempts:
 *
 * Returns: (transfer none) (element-type KagedAttempt): the attempt log
 */
GPtrArray *
kaged_run_get_attempts (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), NULL);

  return self->attempts;
}

void
kaged_run_add_attempt (KagedRun           *self,
                       const KagedAttempt *attempt)
{
  g_return_if_fail (KAGED_IS_RUN (self));
  g_return_if_fail (attempt != NULL);

  g_ptr_array_add (self->attempts, kaged_attempt_copy (attempt));
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_ATTEMPTS]);
}

void
kaged_run_clear_attempts (KagedRun *self)
{
  g_return_if_fail (KAGED_IS_RUN (self));

  if (self->attempts->len == 0)
    return;

  g_ptr_array_set_size (self->attempts, 0);
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_ATTEMPTS]);
}

gint64
kaged_run_get_next_attempt_at (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), 0);

  return self->next_attempt_at;
}

void
kaged_run_set_next_attempt_at (KagedRun *self,
                               gint64    next_attempt_at)
{
  g_return_if_fail (KAGED_IS_RUN (self));

  if (self->next_attempt_at != next_attempt_at)
    {
      self->next_attempt_at = next_attempt_at;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_NEXT_ATTEMPT_AT]);
    }
}

/**
 * kaged_run_is_finished:
 *
 * Returns: whether the run succeeded, failed or was cancelled
 */
gboolean
kaged_run_is_finished (KagedRun *self)
{
  g_return_val_if_fail (KAGED_IS_RUN (self), FALSE);

  return self->status == KAGED_RUN_STATUS_SUCCEEDED ||
         self->status == KAGED_RUN_STATUS_FAILED ||
         self->status == KAGED_RUN_STATUS_CANCELLED;
}
