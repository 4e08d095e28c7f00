/* kaged-session-list.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-session-list"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-session-list.h"

/**
 * KagedSessionList:
 *
 * The conversations, newest first, as a #GListModel of #KagedSession kept
 * in step with a #KagedSessionManager: a session that changes moves to the
 * top, a new one appears, a deleted one goes. Its objects are stable: a
 * change updates the same #KagedSession in place.
 *
 * The engine gives an untitled session its title from its first operator
 * message (kaged_session_manager_post()); the list follows. A session can
 * be hidden (while the window offers to undo its deletion)
 * and deleted; a session with runs in flight has them cancelled first and
 * leaves the database as soon as it is idle.
 */
struct _KagedSessionList
{
  GObject              parent_instance;

  KagedSessionManager *manager;
  GPtrArray           *items;          /* KagedSession, newest first */
  GHashTable          *hidden;         /* gint64 id → KagedSession */
  GHashTable          *pending_delete; /* gint64 ids waiting to be idle */
  gulong               session_changed_id;
  guint                pending_delete_source;
};

static void list_model_iface_init (GListModelInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedSessionList, kaged_session_list, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_LIST_MODEL, list_model_iface_init))

enum {
  PROP_0,
  PROP_N_ITEMS,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

/* Newer first; among equals, the one created later. */
static int
compare_sessions (KagedSession *a,
                  KagedSession *b)
{
  gint64 ua = kaged_session_get_updated_at (a);
  gint64 ub = kaged_session_get_updated_at (b);

  if (ua != ub)
    return ua > ub ? -1 : 1;

  return kaged_session_get_id (a) > kaged_session_get_id (b) ? -1 :
         kaged_session_get_id (a) < kaged_session_get_id (b) ? 1 : 0;
}

static int
compare_session_ptrs (gconstpointer a,
                      gconstpointer b)
{
  return compare_sessions (*(KagedSession **)a, *(KagedSession **)b);
}

static guint
sorted_position (KagedSessionList *self,
                 KagedSession     *session)
{
  guint lo = 0;
  guint hi = self->items->len;

  while (lo < hi)
    {
      guint mid = (lo + hi) / 2;

      if (compare_sessions (g_ptr_array_index (self->items, mid), session) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }

  return lo;
}

static void
items_changed (KagedSessionList *self,
               guint             position,
               guint             removed,
               guint             added)
{
  g_list_model_items_changed (G_LIST_MODEL (self), position, removed, added);
  if (removed != added)
    g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_N_ITEMS]);
}

static void
insert_sorted (KagedSessionList *self,
               KagedSession     *session)
{
  guint position = sorted_position (self, session);

  g_ptr_array_insert (self->items, position, g_object_ref (session));
  items_changed (self, position, 0, 1);
}

static KagedSession *
remove_at (KagedSessionList *self,
           guint             position)
{
  KagedSession *session = g_ptr_array_steal_index (self->items, position);

  items_changed (self, position, 1, 0);

  return session;
}

/* Puts a session whose time changed where it now belongs. */
static void
resort (KagedSessionList *self,
        guint             position)
{
  g_autoptr(KagedSession) session = g_ptr_array_steal_index (self->items, position);
  guint new_position = sorted_position (self, session);

  g_ptr_array_insert (self->items, new_position, g_object_ref (session));
  if (new_position == position)
    return;

  /* Announced as a removal and an insertion, so views move the row. */
  g_ptr_array_remove_index (self->items, new_position);
  items_changed (self, position, 1, 0);
  g_ptr_array_insert (self->items, new_position, g_object_ref (session));
  items_changed (self, new_position, 0, 1);
}

static KagedSession *
lookup_any (KagedSessionList *self,
            gint64            session_id,
            guint            *position)
{
  for (guint i = 0; i < self->items->len; i++)
    {
      KagedSession *session = g_ptr_array_index (self->items, i);

      if (kaged_session_get_id (session) == session_id)
        {
          if (position != NULL)
            *position = i;
          return session;
        }
    }

  if (position != NULL)
    *position = G_MAXUINT;

  return g_hash_table_lookup (self->hidden, &session_id);
}

static void
forget (KagedSessionList *self,
        gint64            session_id)
{
  guint position = G_MAXUINT;

  if (lookup_any (self, session_id, &position) != NULL && position != G_MAXUINT)
    g_object_unref (remove_at (self, position));

  g_hash_table_remove (self->hidden, &session_id);
  g_hash_table_remove (self->pending_delete, &session_id);
}

static gboolean
delete_now (KagedSessionList  *self,
            gint64             session_id,
            GError           **error)
{
  g_autoptr(GError) store_error = NULL;

  if (!kaged_store_delete_session (kaged_session_manager_get_store (self->manager),
                                   session_id, &store_error))
    {
      if (g_error_matches (store_error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND))
        {
          forget (self, session_id);
          g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND,
                       _("No such conversation"));
        }
      else
        {
          g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_STORE,
                       _("The conversation could not be deleted: %s"), store_error->message);
        }
      return FALSE;
    }

  forget (self, session_id);
  return TRUE;
}

/* Deletes the sessions whose runs have wound down, outside the engine's
 * signal emissions. */
static gboolean
finish_pending_deletes_cb (gpointer user_data)
{
  KagedSessionList *self = user_data;
  g_autoptr(GArray) ready = g_array_new (FALSE, FALSE, sizeof (gint64));
  GHashTableIter iter;
  gint64 *id;

  self->pending_delete_source = 0;

  g_hash_table_iter_init (&iter, self->pending_delete);
  while (g_hash_table_iter_next (&iter, (gpointer *)&id, NULL))
    if (!kaged_session_manager_is_busy (self->manager, *id))
      g_array_append_val (ready, *id);

  for (guint i = 0; i < ready->len; i++)
    {
      g_autoptr(GError) error = NULL;

      if (!delete_now (self, g_array_index (ready, gint64, i), &error))
        g_warning ("Could not delete a conversation: %s", error->message);
    }

  return G_SOURCE_REMOVE;
}

static void
schedule_pending_deletes (KagedSessionList *self)
{
  if (self->pending_delete_source == 0)
    self->pending_delete_source = g_idle_add (finish_pending_deletes_cb, self);
}

static void
session_changed_cb (KagedSessionManager *manager,
                    KagedSession        *changed,
                    KagedSessionList    *self)
{
  gint64 session_id = kaged_session_get_id (changed);
  KagedSession *session;
  guint position = G_MAXUINT;
  gboolean moved;

  if (g_hash_table_contains (self->pending_delete, &session_id))
    {
      schedule_pending_deletes (self);
      return;
    }

  session = lookup_any (self, session_id, &position);
  if (session == NULL)
    {
      insert_sorted (self, changed);
      return;
    }

  moved = kaged_session_get_updated_at (session) != kaged_session_get_updated_at (changed);

  kaged_session_set_title (session, kaged_session_get_title (changed));
  kaged_session_set_updated_at (session, kaged_session_get_updated_at (changed));
  kaged_session_set_state (session, kaged_session_get_state (changed));

  if (moved && position != G_MAXUINT)
    resort (self, position);
}

static gboolean
load (KagedSessionList  *self,
      GError           **error)
{
  g_autoptr(GPtrArray) sessions = NULL;

  sessions = kaged_store_list_sessions (kaged_session_manager_get_store (self->manager), error);
  if (sessions == NULL)
    return FALSE;

  for (guint i = 0; i < sessions->len; i++)
    {
      KagedSession *session = g_ptr_array_index (sessions, i);

      if (kaged_session_manager_is_busy (self->manager, kaged_session_get_id (session)))
        kaged_session_set_state (session, KAGED_SESSION_STATE_RUNNING);
      g_ptr_array_add (self->items, g_object_ref (session));
    }
  g_ptr_array_sort (self->items, compare_session_ptrs);

  return TRUE;
}

static GType
kaged_session_list_get_item_type (GListModel *model)
{
  return KAGED_TYPE_SESSION;
}

static guint
kaged_session_list_get_n_items (GListModel *model)
{
  return KAGED_SESSION_LIST (model)->items->len;
}

static gpointer
kaged_session_list_get_item (GListModel *model,
                             guint       position)
{
  KagedSessionList *self = KAGED_SESSION_LIST (model);

  if (position >= self->items->len)
    return NULL;

  return g_object_ref (g_ptr_array_index (self->items, position));
}

static void
list_model_iface_init (GListModelInterface *iface)
{
  iface->get_item_type = kaged_session_list_get_item_type;
  iface->get_n_items = kaged_session_list_get_n_items;
  iface->get_item = kaged_session_list_get_item;
}

static void
kaged_session_list_dispose (GObject *object)
{
  KagedSessionList *self = KAGED_SESSION_LIST (object);

  if (self->manager != NULL)
    {
      g_clear_signal_handler (&self->session_changed_id, self->manager);
    }
  g_clear_object (&self->manager);
  g_clear_handle_id (&self->pending_delete_source, g_source_remove);

  G_OBJECT_CLASS (kaged_session_list_parent_class)->dispose (object);
}

static void
kaged_session_list_finalize (GObject *object)
{
  KagedSessionList *self = KAGED_SESSION_LIST (object);

  g_clear_pointer (&self->items, g_ptr_array_unref);
  g_clear_pointer (&self->hidden, g_hash_table_unref);
  g_clear_pointer (&self->pending_delete, g_hash_table_unref);

  G_OBJECT_CLASS (kaged_session_list_parent_class)->finalize (object);
}

static void
kaged_session_list_get_property (GObject    *object,
                                 guint       prop_id,
                                 GValue     *value,
                                 GParamSpec *pspec)
{
  KagedSessionList *self = KAGED_SESSION_LIST (object);

  switch (prop_id)
    {
    case PROP_N_ITEMS:
      g_value_set_uint (value, self->items->len);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_session_list_class_init (KagedSessionListClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = kaged_session_list_dispose;
  object_class->finalize = kaged_session_list_finalize;
  object_class->get_property = kaged_session_list_get_property;

  properties [PROP_N_ITEMS] =
    g_param_spec_uint ("n-items", NULL, NULL,
                       0, G_MAXUINT, 0,
                       (G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_session_list_init (KagedSessionList *self)
{
  self->items = g_ptr_array_new_with_free_func (g_object_unref);
  self->hidden = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_object_unref);
  self->pending_delete = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
}

/**
 * kaged_session_list_new:
 * @manager: the session manager to follow
 *
 * Returns: (transfer full): the conversations of @manager's store, newest
 *   first
 */
KagedSessionList *
kaged_session_list_new (KagedSessionManager *manager)
{
  g_autoptr(GError) error = NULL;
  KagedSessionList *self;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (manager), NULL);

  self = g_object_new (KAGED_TYPE_SESSION_LIST, NULL);
  self->manager = g_object_ref (manager);

  if (!load (self, &error))
    g_warning ("Could not list the conversations: %s", error->message);

  self->session_changed_id = g_signal_connect (manager, "session-changed",
                                               G_CALLBACK (session_changed_cb), self);

  return self;
}

/**
 * kaged_session_list_get_manager:
 *
 * Returns: (transfer none): the session manager the list follows
 */
KagedSessionManager *
kaged_session_list_get_manager (KagedSessionList *self)
{
  g_return_val_if_fail (KAGED_IS_SESSION_LIST (self), NULL);

  return self->manager;
}

/**
 * kaged_session_list_lookup:
 *
 * Returns: (transfer none) (nullable): the session @session_id, shown or
 *   hidden, or %NULL
 */
KagedSession *
kaged_session_list_lookup (KagedSessionList *self,
                           gint64            session_id)
{
  g_return_val_if_fail (KAGED_IS_SESSION_LIST (self), NULL);

  return lookup_any (self, session_id, NULL);
}

/**
 * kaged_session_list_find:
 * @position: (out) (optional): where the session stands in the list
 *
 * Returns: whether @session_id is in the list (and not hidden)
 */
gboolean
kaged_session_list_find (KagedSessionList *self,
                         gint64            session_id,
                         guint            *position)
{
  guint found = G_MAXUINT;

  g_return_val_if_fail (KAGED_IS_SESSION_LIST (self), FALSE);

  lookup_any (self, session_id, &found);
  if (position != NULL)
    *position = found;

  return found != G_MAXUINT;
}

/**
 * kaged_session_list_rename:
 * @title: the new title; surrounding spaces are dropped
 *
 * Gives the session @session_id a new title, in the database and in the
 * list.
 *
 * Returns: whether the session was renamed
 */
gboolean
kaged_session_list_rename (KagedSessionList  *self,
                           gint64             session_id,
                           const char        *title,
                           GError           **error)
{
  g_autoptr(GError) store_error = NULL;
  g_autoptr(KagedSession) stored = NULL;
  g_autofree char *clean = NULL;
  KagedStore *store;
  KagedSession *session;
  guint position = G_MAXUINT;

  g_return_val_if_fail (KAGED_IS_SESSION_LIST (self), FALSE);
  g_return_val_if_fail (title != NULL, FALSE);

  clean = g_utf8_make_valid (title, -1);
  g_strstrip (clean);
  if (clean[0] == '\0')
    {
      g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_EMPTY_CONTENT,
                   _("A conversation needs a title"));
      return FALSE;
    }

  store = kaged_session_manager_get_store (self->manager);
  if (!kaged_store_rename_session (store, session_id, clean, &store_error) ||
      !(stored = kaged_store_get_session (store, session_id, &store_error)))
    {
      if (g_error_matches (store_error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND))
        g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND,
                     _("No such conversation"));
      else
        g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_STORE,
                     _("The conversation could not be renamed: %s"), store_error->message);
      return FALSE;
    }

  session = lookup_any (self, session_id, &position);
  if (session == NULL)
    {
      kaged_session_set_state (stored,
                               kaged_session_manager_is_busy (self->manager, session_id)
                                 ? KAGED_SESSION_STATE_RUNNING : KAGED_SESSION_STATE_IDLE);
      insert_sorted (self, stored);
      return TRUE;
    }

  kaged_session_set_title (session, kaged_session_get_title (stored));
  if (kaged_session_get_updated_at (session) != kaged_session_get_updated_at (stored))
    {
      kaged_session_set_updated_at (session, kaged_session_get_updated_at (stored));
      if (position != G_MAXUINT)
        resort (self, position);
    }

  return TRUE;
}

/**
 * kaged_session_list_set_hidden:
 *
 * Hides the session @session_id from the list, or shows it again where
 * it belongs. Hidden sessions stay in the database.
 */
void
kaged_session_list_set_hidden (KagedSessionList *self,
                               gint64            session_id,
                               gboolean          hidden)
{
  guint position = G_MAXUINT;
  KagedSession *session;

  g_return_if_fail (KAGED_IS_SESSION_LIST (self));

  session = lookup_any (self, session_id, &position);
  if (session == NULL)
    return;

  if (hidden && position != G_MAXUINT)
    {
      session = remove_at (self, position);
      g_hash_table_insert (self->hidden, g_memdup2 (&session_id, sizeof session_id), session);
    }
  else if (!hidden && position == G_MAXUINT)
    {
      insert_sorted (self, session);
      g_hash_table_remove (self->hidden, &session_id);
    }
}

/**
 * kaged_session_list_delete:
 *
 * Deletes the session @session_id with all its messages. Its queued and
 * running runs are cancelled first; it leaves the list at once and the
 * database as soon as the cancelled run has wound down.
 *
 * Returns: whether the session is gone or going
 */
gboolean
kaged_session_list_delete (KagedSessionList  *self,
                           gint64             session_id,
                           GError           **error)
{
  KagedStore *store;

  g_return_val_if_fail (KAGED_IS_SESSION_LIST (self), FALSE);

  if (!kaged_session_manager_is_busy (self->manager, session_id))
    return delete_now (self, session_id, error);

  store = kaged_session_manager_get_store (self->manager);
  kaged_session_list_set_hidden (self, session_id, TRUE);
  g_hash_table_add (self->pending_delete, g_memdup2 (&session_id, sizeof session_id));

  /* Queued runs first, so cancelling the active one starts none of them. */
  for (guint s = 0; s < 2; s++)
    {
      g_autoptr(GPtrArray) runs = NULL;

      runs = kaged_store_list_runs (store, session_id,
                                    s == 0 ? KAGED_RUN_STATUS_QUEUED : KAGED_RUN_STATUS_RUNNING,
                                    NULL);
      for (guint i = 0; runs != NULL && i < runs->len; i++)
        kaged_session_manager_cancel (self->manager, session_id,
                                      kaged_run_get_id (g_ptr_array_index (runs, i)), NULL);
    }

  schedule_pending_deletes (self);

  return TRUE;
}
