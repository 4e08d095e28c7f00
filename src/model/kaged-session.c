/* kaged-session.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-session"

#include "config.h"

#include "kaged-enum-types.h"
#include "kaged-session.h"

/**
 * KagedSession:
 *
 * A conversation: its title, times and whether a run is active.
 */
struct _KagedSession
{
  GObject parent_instance;

  gint64 id;
  char *title;
  gint64 created_at;
  gint64 updated_at;
  KagedSessionState state;
};

G_DEFINE_FINAL_TYPE (KagedSession, kaged_session, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_ID,
  PROP_TITLE,
  PROP_CREATED_AT,
  PROP_UPDATED_AT,
  PROP_STATE,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static void
kaged_session_finalize (GObject *object)
{
  KagedSession *self = (KagedSession *)object;

  g_clear_pointer (&self->title, g_free);

  G_OBJECT_CLASS (kaged_session_parent_class)->finalize (object);
}

static void
kaged_session_get_property (GObject    *object,
                          guint       prop_id,
                          GValue     *value,
                          GParamSpec *pspec)
{
  KagedSession *self = KAGED_SESSION (object);

  switch (prop_id)
    {
    case PROP_ID:
      g_value_set_int64 (value, self->id);
      break;

    case PROP_TITLE:
      g_value_set_string (value, self->title);
      break;

    case PROP_CREATED_AT:
      g_value_set_int64 (value, self->created_at);
      break;

    case PROP_UPDATED_AT:
      g_value_set_int64 (value, self->updated_at);
      break;

    case PROP_STATE:
      g_value_set_enum (value, self->state);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_session_set_property (GObject      *object,
                          guint         prop_id,
                          const GValue *value,
                          GParamSpec   *pspec)
{
  KagedSession *self = KAGED_SESSION (object);

  switch (prop_id)
    {
    case PROP_ID:
      kaged_session_set_id (self, g_value_get_int64 (value));
      break;

    case PROP_TITLE:
      kaged_session_set_title (self, g_value_get_string (value));
      break;

    case PROP_CREATED_AT:
      kaged_session_set_created_at (self, g_value_get_int64 (value));
      break;

    case PROP_UPDATED_AT:
      kaged_session_set_updated_at (self, g_value_get_int64 (value));
      break;

    case PROP_STATE:
      kaged_session_set_state (self, g_value_get_enum (value));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_session_class_init (KagedSessionClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = kaged_session_finalize;
  object_class->get_property = kaged_session_get_property;
  object_class->set_property = kaged_session_set_property;

  /**
   * KagedSession:id:
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
   * KagedSession:title:
   *
   * The title shown in the sidebar.
   */
  properties [PROP_TITLE] =
    g_param_spec_string ("title", NULL, NULL,
                          NULL,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedSession:created-at:
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
   * KagedSession:updated-at:
   *
   * Last change, epoch milliseconds.
   */
  properties [PROP_UPDATED_AT] =
    g_param_spec_int64 ("updated-at", NULL, NULL,
                          0, G_MAXINT64, 0,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedSession:state:
   *
   * Whether a run is active.
   */
  properties [PROP_STATE] =
    g_param_spec_enum ("state", NULL, NULL,
                          KAGED_TYPE_SESSION_STATE,
                          KAGED_SESSION_STATE_IDLE,
                          (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_session_init (KagedSession *self)
{
}

KagedSession *
kaged_session_new (void)
{
  return g_object_new (KAGED_TYPE_SESSION, NULL);
}

gint64
kaged_session_get_id (KagedSession *self)
{
  g_return_val_if_fail (KAGED_IS_SESSION (self), 0);

  return self->id;
}

void
kaged_session_set_id (KagedSession *self,
                    gint64 id)
{
  g_return_if_fail (KAGED_IS_SESSION (self));


  if (self->id != id)
    {
      self->id = id;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_ID]);
    }
}

const char *
kaged_session_get_title (KagedSession *self)
{
  g_return_val_if_fail (KAGED_IS_SESSION (self), NULL);

  return self->title;
}

void
kaged_session_set_title (KagedSession *self,
                       const char *title)
{
  g_return_if_fail (KAGED_IS_SESSION (self));


  if (g_strcmp0 (self->title, title) != 0)
    {
      g_free (self->title);
      self->title = g_strdup (title);
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_TITLE]);
    }
}

gint64
kaged_session_get_created_at (KagedSession *self)
{
  g_return_val_if_fail (KAGED_IS_SESSION (self), 0);

  return self->created_at;
}

void
kaged_session_set_created_at (KagedSession *self,
                            gint64 created_at)
{
  g_return_if_fail (KAGED_IS_SESSION (self));


  if (self->created_at != created_at)
    {
      self->created_at = created_at;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_CREATED_AT]);
    }
}

gint64
kaged_session_get_updated_at (KagedSession *self)
{
  g_return_val_if_fail (KAGED_IS_SESSION (self), 0);

  return self->updated_at;
}

void
kaged_session_set_updated_at (KagedSession *self,
                            gint64 updated_at)
{
  g_return_if_fail (KAGED_IS_SESSION (self));


  if (self->updated_at != updated_at)
    {
      self->updated_at = updated_at;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_UPDATED_AT]);
    }
}

KagedSessionState
kaged_session_get_state (KagedSession *self)
{
  g_return_val_if_fail (KAGED_IS_SESSION (self), 0);

  return self->state;
}

void
kaged_session_set_state (KagedSession *self,
                       KagedSessionState state)
{
  g_return_if_fail (KAGED_IS_SESSION (self));


  if (self->state != state)
    {
      self->state = state;
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_STATE]);
    }
}
