/* kaged-message.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-message"

#include "config.h"

#include "kaged-enum-types.h"
#include "kaged-message.h"

/**
 * KagedMessage:
 *
 * One message of a session: the operator's words, an agent reply or a summary.
 */
struct _KagedMessage
{
  GObject parent_instance;

  gint64 id;
  gint64 session_id;
  KagedMessageRole role;
  char *content;
  gint64 created_at;
  gint64 run_id;
  KagedMessageStatus status;
  char *error_message;
  guint retryable : 1;
  KagedRetryClass retry_class;
  gint64 retry_after_until;
  gint64 superseded_by_run;
  guint compacted : 1;
  guint queued : 1;
};

G_DEFINE_FINAL_TYPE (KagedMessage, kaged_message, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_ID,
  PROP_SESSION_ID,
  PROP_ROLE,
  PROP_CONTENT,
  PROP_CREATED_AT,
  PROP_RUN_ID,
  PROP_STATUS,
  PROP_ERROR_MESSAGE,
  PROP_RETRYABLE,
  PROP_RETRY_CLASS,
  PROP_RETRY_AFTER_UNTIL,
  PROP_SUPERSEDED_BY_RUN,
  PROP_COMPACTED,
  PROP_QUEUED,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static void
kaged_message_finalize (GObject *object)
{
  KagedMessage *self = (KagedMessage *)object;

  g_clear_pointer (&self->content, g_free);
  g_clear_pointer (&self->error_message, g_free);

  G_OBJECT_CLASS (kaged_message_parent_class)->finalize (object);
}

static void
kaged_message_get_property (GObject    *object,
                          guint       prop_id,
                          GValue     *value,
                          GParamSpec *pspec)
{
  KagedMessage *self = KAGED_MESSAGE (object);

  switch (prop_id)
    {
    case PROP_ID:
      g_value_set_int64 (value, self->id);
      break;

    case PROP_SESSION_ID:
      g_value_set_int64 (value, self->session_id);
      break;

    case PROP_ROLE:
      g_value_set_enum (value, self->role);
      break;

    case PROP_CONTENT:
      g_value_set_string (value, self->content);
      break;

    case PROP_CREATED_AT:
      g_value_set_int64 (value, self->created_at);
      break;

    case PROP_RUN_ID:
      g_value_set_int64 (value, self->run_id);
      break;

    case PROP_STATUS:
      g_value_set_enum (value, self->status);
      break;

    case PROP_ERROR_MESSAGE:
      g_value_set_string (value, self->error_message);
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

    case PROP_SUPERSEDED_BY_RUN:
      g_value_set_int64 (value, self->superseded_by_run);
      break;

    case PROP_COMPACTED:
      g_value_set_boolean (value, self->compacted);
      break;

    case PROP_QUEUED:
      g_value_set_boolean (value, self->queued);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_message_set_property (GObject      *object,
                          guint         prop_id,
                          const GValue *value,
                          GParamSpec   *pspec)
{
  KagedMessage *self = KAGED_MESSAGE (object);

  switch (prop_id)
    {
    case PROP_ID:
      kaged_message_set_id (self, g_value_get_int64 (value));
      break;

    case PROP_SESSION_ID:
      kaged_message_set_session_id (self, g_value_get_int64 (value));
      break;

    case PROP_ROLE:
      kaged_message_set_role (self, g_value_get_enum (value));
      break;

    case PROP_CONTENT:
      kaged_message_set_content (self, g_value_get_string (value));
      break;

    case PROP_CREATED_AT:
      kaged_message_set_created_at (self, g_value_get_int64 (value));
      break;

    case PROP_RUN_ID:
      kaged_message_set_run_id (self, g_value_get_int64 (value));
      break;

    case PROP_STATUS:
      kaged_message_set_status (self, g_value_get_enum (value));
      break;

    case PROP_ERROR_MESSAGE:
      kaged_message_set_error_message (self, g_value_get_string (value));
      break;

    case PROP_RETRYABLE:
      kaged_message_set_retryable (self, g_value_get_boolean (value));
      break;

    case PROP_RETRY_CLASS:
      kaged_message_set_retry_class (self, g_value_get_enum (value));
      break;

    case PROP_RETRY_AFTER_UNTIL:
      kaged_message_set_retry_after_until (self, g_value_get_int64 (value));
      break;

    case PROP_SUPERSEDED_BY_RUN:
      kaged_message_set_superseded_by_run (self, g_value_get_int64 (value));
      break;

    case PROP_COMPACTED:
      kaged_message_set_compacted (self, g_value_get_boolean (value));
      break;

    case PROP_QUEUED:
      kaged_message_set_queued (self, g_value_get_boolean (value));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_message_class_init (KagedMessageClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = kaged_message_finalize;
  object_class->get_property = kaged_message_get_property;
  object_class->set_property = kaged_message_set_property;

  /**
   * KagedMessage:id:
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
   * KagedMessage:session-id:
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
   * KagedMessage:role:
   *
   * Who wrote it.
   */
  properties [PROP_ROLE] =
    g_param_spec_enum ("role", NULL, NULL,
                          KAGED_TYPE_MESSAGE_ROLE,
                          KAGED_MESSAGE_ROLE_OPERATOR,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessage:content:
   *
   * The text.
   */
  properties [PROP_CONTENT] =
    g_param_spec_string ("content", NULL, NULL,
                          NULL,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessage:created-at:
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
   * KagedMessage:run-id:
   *
   * For agent rows, the run that produced it; 0 otherwise.
   */
  properties [PROP_RUN_ID] =
    g_param_spec_int64 ("run-id", NULL, NULL,
                          0, G_MAXINT64, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessage:status:
   *
   * The state of an agent reply.
   */
  properties [PROP_STATUS] =
    g_param_spec_enum ("status", NULL, NULL,
                          KAGED_TYPE_MESSAGE_STATUS,
                          KAGED_MESSAGE_STATUS_NONE,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessage:error-message:
   *
   * Why the reply failed, for people.
   */
  properties [PROP_ERROR_MESSAGE] =
    g_param_spec_string ("error-message", NULL, NULL,
                          NULL,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessage:retryable:
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
   * KagedMessage:retry-class:
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
   * KagedMessage:retry-after-until:
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
   * KagedMessage:superseded-by-run:
   *
   * The run that superseded it; 0 while current.
   */
  properties [PROP_SUPERSEDED_BY_RUN] =
    g_param_spec_int64 ("superseded-by-run", NULL, NULL,
                          0, G_MAXINT64, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessage:compacted:
   *
   * Whether a summary message replaces it in the context.
   */
  properties [PROP_COMPACTED] =
    g_param_spec_boolean ("compacted", NULL, NULL,
                          FALSE,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessage:queued:
   *
   * For an operator message, whether the run that answers it still waits
   * its turn behind another run of the session. Not stored: the read
   * model (#KagedConversation) keeps it.
   */
  properties [PROP_QUEUED] =
    g_param_spec_boolean ("queued", NULL, NULL,
                          FALSE,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_message_init (KagedMessage *self)
{
}

KagedMessage *
kaged_message_new (void)
{
  return g_object_new (KAGED_TYPE_MESSAGE, NULL);
}

gint64
kaged_message_get_id (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), 0);

  return self->id;
}

void
kaged_message_set_id (KagedMessage *self,
                    gint64 id)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  if (self->id != id)
    {
      self->id = id;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_ID]);
    }
}

gint64
kaged_message_get_session_id (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), 0);

  return self->session_id;
}

void
kaged_message_set_session_id (KagedMessage *self,
                            gint64 session_id)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  if (self->session_id != session_id)
    {
      self->session_id = session_id;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_SESSION_ID]);
    }
}

KagedMessageRole
kaged_message_get_role (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), 0);

  return self->role;
}

void
kaged_message_set_role (KagedMessage *self,
                      KagedMessageRole role)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  if (self->role != role)
    {
      self->role = role;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_ROLE]);
    }
}

const char *
kaged_message_get_content (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), NULL);

  return self->content;
}

void
kaged_message_set_content (KagedMessage *self,
                         const char *content)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  if (g_strcmp0 (self->content, content) != 0)
    {
      g_free (self->content);
      self->content = g_strdup (content);
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_CONTENT]);
    }
}

gint64
kaged_message_get_created_at (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), 0);

  return self->created_at;
}

void
kaged_message_set_created_at (KagedMessage *self,
                            gint64 created_at)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  if (self->created_at != created_at)
    {
      self->created_at = created_at;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_CREATED_AT]);
    }
}

gint64
kaged_message_get_run_id (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), 0);

  return self->run_id;
}

void
kaged_message_set_run_id (KagedMessage *self,
                        gint64 run_id)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  if (self->run_id != run_id)
    {
      self->run_id = run_id;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_RUN_ID]);
    }
}

KagedMessageStatus
kaged_message_get_status (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), 0);

  return self->status;
}

void
kaged_message_set_status (KagedMessage *self,
                        KagedMessageStatus status)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  if (self->status != status)
    {
      self->status = status;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_STATUS]);
    }
}

const char *
kaged_message_get_error_message (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), NULL);

  return self->error_message;
}

void
kaged_message_set_error_message (KagedMessage *self,
                               const char *error_message)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  if (g_strcmp0 (self->error_message, error_message) != 0)
    {
      g_free (self->error_message);
      self->error_message = g_strdup (error_message);
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_ERROR_MESSAGE]);
    }
}

gboolean
kaged_message_get_retryable (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), 0);

  return self->retryable;
}

void
kaged_message_set_retryable (KagedMessage *self,
                           gboolean retryable)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  retryable = !!retryable;

  if (self->retryable != retryable)
    {
      self->retryable = retryable;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_RETRYABLE]);
    }
}

KagedRetryClass
kaged_message_get_retry_class (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), 0);

  return self->retry_class;
}

void
kaged_message_set_retry_class (KagedMessage *self,
                             KagedRetryClass retry_class)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  if (self->retry_class != retry_class)
    {
      self->retry_class = retry_class;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_RETRY_CLASS]);
    }
}

gint64
kaged_message_get_retry_after_until (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), 0);

  return self->retry_after_until;
}

void
kaged_message_set_retry_after_until (KagedMessage *self,
                                   gint64 retry_after_until)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  if (self->retry_after_until != retry_after_until)
    {
      self->retry_after_until = retry_after_until;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_RETRY_AFTER_UNTIL]);
    }
}

gint64
kaged_message_get_superseded_by_run (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), 0);

  return self->superseded_by_run;
}

void
kaged_message_set_superseded_by_run (KagedMessage *self,
                                   gint64 superseded_by_run)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  if (self->superseded_by_run != superseded_by_run)
    {
      self->superseded_by_run = superseded_by_run;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_SUPERSEDED_BY_RUN]);
    }
}

gboolean
kaged_message_get_compacted (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), 0);

  return self->compacted;
}

void
kaged_message_set_compacted (KagedMessage *self,
                           gboolean compacted)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));


  compacted = !!compacted;

  if (self->compacted != compacted)
    {
      self->compacted = compacted;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_COMPACTED]);
    }
}

gboolean
kaged_message_get_queued (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), FALSE);

  return self->queued;
}

void
kaged_message_set_queued (KagedMessage *self,
                          gboolean      queued)
{
  g_return_if_fail (KAGED_IS_MESSAGE (self));

  queued = !!queued;

  if (self->queued != queued)
    {
      self->queued = queued;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_QUEUED]);
    }
}

/**
 * kaged_message_is_superseded:
 *
 * Returns: whether a later run superseded this message
 */
gboolean
kaged_message_is_superseded (KagedMessage *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE (self), FALSE);

  return self->superseded_by_run != 0;
}
