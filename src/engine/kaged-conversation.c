/* kaged-conversation.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-engine"

#include "config.h"

#include "kaged-conversation.h"
#include "kaged-conversation-private.h"
#include "kaged-session-manager-private.h"

/**
 * KagedConversation:
 *
 * The read model of one session: a #GListModel of its current (not
 * superseded) messages in conversation order, for views such as the
 * window's list and the HTTP API.
 *
 * Messages are read from the store a page at a time, when an item of the
 * page is first asked for, so a long session costs memory only for what is
 * looked at. The objects are stable: the same #KagedMessage stands for the
 * same message as long as the conversation lives. The manager's
 * announcements update them in place: a streamed delta appends to the
 * content of the same object (one #GObject::notify per announcement, never
 * a reload), new messages and replies are inserted where they stand in
 * conversation order, and a regeneration removes what it superseded.
 *
 * An operator message whose run waits behind another run of the session
 * is #KagedMessage:queued until that run starts or is dropped, whoever
 * posted it.
 */

/* Messages read from the store at once. */
#define PAGE_SIZE 64

struct _KagedConversation
{
  GObject              parent_instance;

  KagedSessionManager *manager;
  KagedStore          *store;
  gint64               session_id;

  /* KagedMessage (borrowed from @objects) or NULL where not loaded yet;
   * one slot per current message, in conversation order */
  GPtrArray           *items;
  /* gint64 message id → KagedMessage: every object handed out, current or
   * not, so that a message keeps its object */
  GHashTable          *objects;
  /* gint64 run id → gint64 anchor id */
  GHashTable          *anchors;

  guint                n_loaded;

  gulong               added_id;
  gulong               delta_id;
  gulong               changed_id;
  gulong               superseded_id;
  gulong               run_changed_id;
};

static void kaged_conversation_list_model_iface_init (GListModelInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedConversation, kaged_conversation, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_LIST_MODEL,
                                                      kaged_conversation_list_model_iface_init))

enum {
  PROP_0,
  PROP_MANAGER,
  PROP_SESSION_ID,
  PROP_N_ITEMS,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static gint64 *
int64_key (gint64 value)
{
  return g_memdup2 (&value, sizeof value);
}

static void
copy_state (KagedMessage *to,
            KagedMessage *from)
{
  kaged_message_set_status (to, kaged_message_get_status (from));
  kaged_message_set_error_message (to, kaged_message_get_error_message (from));
  kaged_message_set_retryable (to, kaged_message_get_retryable (from));
  kaged_message_set_retry_class (to, kaged_message_get_retry_class (from));
  kaged_message_set_retry_after_until (to, kaged_message_get_retry_after_until (from));
  kaged_message_set_superseded_by_run (to, kaged_message_get_superseded_by_run (from));
  kaged_message_set_compacted (to, kaged_message_get_compacted (from));
}

/* The conversation's own object for a message the manager announced. */
static KagedMessage *
copy_message (KagedMessage *message)
{
  KagedMessage *copy = kaged_message_new ();

  kaged_message_set_id (copy, kaged_message_get_id (message));
  kaged_message_set_session_id (copy, kaged_message_get_session_id (message));
  kaged_message_set_role (copy, kaged_message_get_role (message));
  kaged_message_set_content (copy, kaged_message_get_content (message));
  kaged_message_set_created_at (copy, kaged_message_get_created_at (message));
  kaged_message_set_run_id (copy, kaged_message_get_run_id (message));
  copy_state (copy, message);

  return copy;
}

/*
 * Takes @message (read from the store or copied) as the object for its id,
 * or returns the object the id already has. A reply still streaming gets
 * the text announced so far rather than the text last saved, which may be
 * behind or ahead of the announcements: the next delta continues it.
 */
static KagedMessage *
adopt (KagedConversation *self,
       KagedMessage      *message)
{
  gint64 id = kaged_message_get_id (message);
  KagedMessage *known = g_hash_table_lookup (self->objects, &id);

  if (known != NULL)
    {
      g_object_unref (message);
      return known;
    }

  if (kaged_message_get_status (message) == KAGED_MESSAGE_STATUS_STREAMING)
    {
      g_autofree char *text = _kaged_session_manager_dup_announced_text (self->manager,
                                                                         self->session_id, id);

      if (text != NULL)
        kaged_message_set_content (message, text);
    }

  if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_OPERATOR)
    kaged_message_set_queued (message,
                              _kaged_session_manager_is_anchor_queued (self->manager,
                                                                       self->session_id, id));

  g_hash_table_insert (self->objects, int64_key (id), message);
  self->n_loaded++;

  return message;
}

static void
set_n_items (KagedConversation *self,
             guint              position,
             guint              removed,
             guint              added)
{
  g_list_model_items_changed (G_LIST_MODEL (self), position, removed, added);
  if (removed != added)
    g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_N_ITEMS]);
}

/* Reads everything again from the store (keeping the objects) when the
 * announcements and the store disagree. */
static void
reload (KagedConversation *self)
{
  g_autoptr(GError) error = NULL;
  guint old_n = self->items->len;
  guint n = 0;

  if (!kaged_store_count_messages (self->store, self->session_id, FALSE, &n, &error))
    {
      g_warning ("Could not read conversation %" G_GINT64_FORMAT ": %s",
                 self->session_id, error->message);
      n = 0;
    }

  g_ptr_array_set_size (self->items, 0);
  g_ptr_array_set_size (self->items, n);
  set_n_items (self, 0, old_n, n);
}

/*
 * Loads the page around @position: from the loaded message next to it
 * where there is one (cheap anywhere), otherwise by its distance from the
 * nearer end of the conversation.
 */
static gboolean
load_page (KagedConversation  *self,
           guint               position,
           GError            **error)
{
  g_autoptr(GPtrArray) page = NULL;
  guint n = self->items->len;
  guint start = position - position % PAGE_SIZE;
  guint end = MIN (start + PAGE_SIZE, n);
  guint first;

  /* Only the slots not loaded yet around @position. */
  while (start < position && g_ptr_array_index (self->items, start) != NULL)
    start++;
  while (end > position + 1 && g_ptr_array_index (self->items, end - 1) != NULL)
    end--;

  if (start > 0 && g_ptr_array_index (self->items, start - 1) != NULL)
    {
      KagedMessage *before = g_ptr_array_index (self->items, start - 1);

      page = kaged_store_list_messages (self->store, self->session_id, FALSE,
                                        kaged_message_get_id (before), end - start, error);
      first = start;
    }
  else if (end < n && g_ptr_array_index (self->items, end) != NULL)
    {
      KagedMessage *after = g_ptr_array_index (self->items, end);

      page = kaged_store_list_messages_before (self->store, self->session_id, FALSE,
                                               kaged_message_get_id (after), end - start, error);
      first = page != NULL ? end - MIN (page->len, end - start) : start;
    }
  else if (start <= n - end)
    {
      page = kaged_store_list_messages_at (self->store, self->session_id, FALSE,
                                           start, end - start, FALSE, error);
      first = start;
    }
  else
    {
      page = kaged_store_list_messages_at (self->store, self->session_id, FALSE,
                                           n - end, end - start, TRUE, error);
      first = page != NULL ? end - MIN (page->len, end - start) : start;
    }

  if (page == NULL)
    return FALSE;

  for (guint i = 0; i < page->len && first + i < end; i++)
    {
      KagedMessage *message = g_object_ref (g_ptr_array_index (page, i));

      g_ptr_array_index (self->items, first + i) = adopt (self, message);
    }

  return TRUE;
}

static gint64
find_position (KagedConversation *self,
               KagedMessage      *message)
{
  guint position;

  if (g_ptr_array_find (self->items, message, &position))
    return position;

  return -1;
}

static void
message_added_cb (KagedSessionManager *manager,
                  KagedMessage        *message,
                  KagedConversation   *self)
{
  g_autoptr(GError) error = NULL;
  gint64 id = kaged_message_get_id (message);
  KagedMessage *object;
  guint n = self->items->len;
  guint n_after = 0;
  guint n_after_unannounced = 0;
  gint64 unannounced;
  guint position;

  if (kaged_message_get_session_id (message) != self->session_id ||
      kaged_message_is_superseded (message))
    return;

  object = g_hash_table_lookup (self->objects, &id);
  if (object != NULL && find_position (self, object) >= 0)
    return;

  /* Everything current after it in the store is in the list already, but
   * for the reply of a run being started, stored with its question and
   * announced right after it. */
  unannounced = _kaged_session_manager_get_unannounced_reply (self->manager, self->session_id);
  if (!kaged_store_count_messages_after (self->store, self->session_id, FALSE, id, &n_after,
                                         &error) ||
      (unannounced != 0 && unannounced != id &&
       !kaged_store_count_messages_after (self->store, self->session_id, FALSE, unannounced,
                                          &n_after_unannounced, &error)))
    {
      g_warning ("Could not place message %" G_GINT64_FORMAT ": %s", id, error->message);
      reload (self);
      return;
    }

  /* The counts fall along the conversation: a smaller one stands later. */
  if (unannounced != 0 && unannounced != id && n_after_unannounced < n_after)
    n_after--;

  if (n_after > n)
    {
      reload (self);
      return;
    }

  position = n - n_after;
  object = adopt (self, copy_message (message));
  g_ptr_array_insert (self->items, position, object);
  set_n_items (self, position, 0, 1);
}

static void
message_delta_cb (KagedSessionManager *manager,
                  gint64               session_id,
                  gint64               message_id,
                  gint64               run_id,
                  const char          *text,
                  KagedConversation   *self)
{
  KagedMessage *object;
  g_autofree char *content = NULL;

  if (session_id != self->session_id)
    return;

  /* A message not loaded gets the text announced so far when it is. */
  object = g_hash_table_lookup (self->objects, &message_id);
  if (object == NULL)
    return;

  content = g_strconcat (kaged_message_get_content (object) ?: "", text, NULL);
  kaged_message_set_content (object, content);
}

static void
message_changed_cb (KagedSessionManager *manager,
                    KagedMessage        *message,
                    KagedConversation   *self)
{
  gint64 id = kaged_message_get_id (message);
  KagedMessage *object;
  gint64 position;

  if (kaged_message_get_session_id (message) != self->session_id)
    return;

  object = g_hash_table_lookup (self->objects, &id);
  if (object == NULL)
    return;

  g_object_freeze_notify (G_OBJECT (object));
  kaged_message_set_content (object, kaged_message_get_content (message));
  copy_state (object, message);
  g_object_thaw_notify (G_OBJECT (object));

  if (kaged_message_is_superseded (object) && (position = find_position (self, object)) >= 0)
    {
      g_ptr_array_remove_index (self->items, position);
      set_n_items (self, position, 1, 0);
    }
}

/* The operator message a run answers waits while the run is queued. */
static void
run_changed_cb (KagedSessionManager *manager,
                KagedRun            *run,
                KagedConversation   *self)
{
  gint64 anchor_id = kaged_run_get_anchor_id (run);
  KagedMessage *object;

  if (kaged_run_get_session_id (run) != self->session_id)
    return;

  object = g_hash_table_lookup (self->objects, &anchor_id);
  if (object == NULL || kaged_message_get_role (object) != KAGED_MESSAGE_ROLE_OPERATOR)
    return;

  kaged_message_set_queued (object,
                            kaged_run_get_status (run) == KAGED_RUN_STATUS_QUEUED ||
                            _kaged_session_manager_is_anchor_queued (manager, self->session_id,
                                                                     anchor_id));
}

/* A regeneration superseded every current message after its anchor: the
 * end of the list. */
static void
messages_superseded_cb (KagedSessionManager *manager,
                        gint64               session_id,
                        gint64               run_id,
                        GArray              *ids,
                        KagedConversation   *self)
{
  g_autoptr(GHashTable) gone = NULL;
  guint n = self->items->len;
  guint k = ids->len;

  if (session_id != self->session_id || k == 0)
    return;

  gone = g_hash_table_new (g_int64_hash, g_int64_equal);
  for (guint i = 0; i < k; i++)
    {
      gint64 *id = &g_array_index (ids, gint64, i);
      KagedMessage *object = g_hash_table_lookup (self->objects, id);

      g_hash_table_add (gone, id);
      if (object != NULL)
        kaged_message_set_superseded_by_run (object, run_id);
    }

  if (k > n)
    {
      reload (self);
      return;
    }

  for (guint i = n - k; i < n; i++)
    {
      KagedMessage *object = g_ptr_array_index (self->items, i);
      gint64 id;

      if (object == NULL)
        continue;

      id = kaged_message_get_id (object);
      if (!g_hash_table_contains (gone, &id))
        {
          reload (self);
          return;
        }
    }

  g_ptr_array_remove_range (self->items, n - k, k);
  set_n_items (self, n - k, k, 0);
}

static GType
kaged_conversation_get_item_type (GListModel *model)
{
  return KAGED_TYPE_MESSAGE;
}

static guint
kaged_conversation_get_n_items (GListModel *model)
{
  KagedConversation *self = KAGED_CONVERSATION (model);

  return self->items->len;
}

static gpointer
kaged_conversation_get_item (GListModel *model,
                             guint       position)
{
  KagedConversation *self = KAGED_CONVERSATION (model);
  g_autoptr(GError) error = NULL;
  KagedMessage *message;

  if (position >= self->items->len)
    return NULL;

  message = g_ptr_array_index (self->items, position);
  if (message == NULL)
    {
      if (!load_page (self, position, &error))
        {
          g_warning ("Could not read conversation %" G_GINT64_FORMAT ": %s",
                     self->session_id, error->message);
          return NULL;
        }
      message = g_ptr_array_index (self->items, position);
    }

  return message != NULL ? g_object_ref (message) : NULL;
}

static void
kaged_conversation_list_model_iface_init (GListModelInterface *iface)
{
  iface->get_item_type = kaged_conversation_get_item_type;
  iface->get_n_items = kaged_conversation_get_n_items;
  iface->get_item = kaged_conversation_get_item;
}

static void
kaged_conversation_constructed (GObject *object)
{
  KagedConversation *self = (KagedConversation *)object;

  G_OBJECT_CLASS (kaged_conversation_parent_class)->constructed (object);

  g_assert (KAGED_IS_SESSION_MANAGER (self->manager));

  self->store = g_object_ref (kaged_session_manager_get_store (self->manager));
  self->added_id = g_signal_connect (self->manager, "message-added",
                                     G_CALLBACK (message_added_cb), self);
  self->delta_id = g_signal_connect (self->manager, "message-delta",
                                     G_CALLBACK (message_delta_cb), self);
  self->changed_id = g_signal_connect (self->manager, "message-changed",
                                       G_CALLBACK (message_changed_cb), self);
  self->superseded_id = g_signal_connect (self->manager, "messages-superseded",
                                          G_CALLBACK (messages_superseded_cb), self);
  self->run_changed_id = g_signal_connect (self->manager, "run-changed",
                                           G_CALLBACK (run_changed_cb), self);
}

static void
kaged_conversation_dispose (GObject *object)
{
  KagedConversation *self = (KagedConversation *)object;

  if (self->manager != NULL)
    {
      g_clear_signal_handler (&self->added_id, self->manager);
      g_clear_signal_handler (&self->delta_id, self->manager);
      g_clear_signal_handler (&self->changed_id, self->manager);
      g_clear_signal_handler (&self->superseded_id, self->manager);
      g_clear_signal_handler (&self->run_changed_id, self->manager);
    }
  g_clear_object (&self->manager);
  g_clear_object (&self->store);

  G_OBJECT_CLASS (kaged_conversation_parent_class)->dispose (object);
}

static void
kaged_conversation_finalize (GObject *object)
{
  KagedConversation *self = (KagedConversation *)object;

  g_clear_pointer (&self->items, g_ptr_array_unref);
  g_clear_pointer (&self->objects, g_hash_table_unref);
  g_clear_pointer (&self->anchors, g_hash_table_unref);

  G_OBJECT_CLASS (kaged_conversation_parent_class)->finalize (object);
}

static void
kaged_conversation_get_property (GObject    *object,
                                 guint       prop_id,
                                 GValue     *value,
                                 GParamSpec *pspec)
{
  KagedConversation *self = KAGED_CONVERSATION (object);

  switch (prop_id)
    {
    case PROP_MANAGER:
      g_value_set_object (value, self->manager);
      break;

    case PROP_SESSION_ID:
      g_value_set_int64 (value, self->session_id);
      break;

    case PROP_N_ITEMS:
      g_value_set_uint (value, self->items->len);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_conversation_set_property (GObject      *object,
                                 guint         prop_id,
                                 const GValue *value,
                                 GParamSpec   *pspec)
{
  KagedConversation *self = KAGED_CONVERSATION (object);

  switch (prop_id)
    {
    case PROP_MANAGER:
      self->manager = g_value_dup_object (value);
      break;

    case PROP_SESSION_ID:
      self->session_id = g_value_get_int64 (value);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_conversation_class_init (KagedConversationClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->constructed = kaged_conversation_constructed;
  object_class->dispose = kaged_conversation_dispose;
  object_class->finalize = kaged_conversation_finalize;
  object_class->get_property = kaged_conversation_get_property;
  object_class->set_property = kaged_conversation_set_property;

  /**
   * KagedConversation:manager:
   *
   * The session manager whose announcements keep the conversation current.
   */
  properties [PROP_MANAGER] =
    g_param_spec_object ("manager", NULL, NULL,
                         KAGED_TYPE_SESSION_MANAGER,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedConversation:session-id:
   *
   * The session.
   */
  properties [PROP_SESSION_ID] =
    g_param_spec_int64 ("session-id", NULL, NULL,
                        0, G_MAXINT64, 0,
                        (G_PARAM_READWRITE |
                         G_PARAM_CONSTRUCT_ONLY |
                         G_PARAM_STATIC_STRINGS));

  /**
   * KagedConversation:n-items:
   *
   * How many current messages the conversation holds.
   */
  properties [PROP_N_ITEMS] =
    g_param_spec_uint ("n-items", NULL, NULL,
                       0, G_MAXUINT, 0,
                       (G_PARAM_READABLE |
                        G_PARAM_EXPLICIT_NOTIFY |
                        G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_conversation_init (KagedConversation *self)
{
  self->items = g_ptr_array_new ();
  self->objects = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_object_unref);
  self->anchors = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
}

/**
 * kaged_conversation_new:
 * @manager: the session manager
 * @session_id: the session
 *
 * Opens the conversation of a session. It counts the session's current
 * messages and reads none of them before they are asked for.
 *
 * Returns: (transfer full): the conversation, or %NULL with @error set
 *   (%KAGED_ENGINE_ERROR_NOT_FOUND when there is no such session)
 */
KagedConversation *
kaged_conversation_new (KagedSessionManager  *manager,
                        gint64                session_id,
                        GError              **error)
{
  g_autoptr(KagedConversation) self = NULL;
  g_autoptr(KagedSession) session = NULL;
  GError *store_error = NULL;
  guint n = 0;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (manager), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  self = g_object_new (KAGED_TYPE_CONVERSATION,
                       "manager", manager,
                       "session-id", session_id,
                       NULL);

  session = kaged_store_get_session (self->store, session_id, &store_error);
  if (session == NULL ||
      !kaged_store_count_messages (self->store, session_id, FALSE, &n, &store_error))
    {
      _kaged_session_manager_propagate_store_error (error, store_error);
      return NULL;
    }

  g_ptr_array_set_size (self->items, n);

  return g_steal_pointer (&self);
}

gint64
kaged_conversation_get_session_id (KagedConversation *self)
{
  g_return_val_if_fail (KAGED_IS_CONVERSATION (self), 0);

  return self->session_id;
}

static gboolean
is_empty (KagedMessage *message)
{
  const char *content = kaged_message_get_content (message);

  return content == NULL || content[0] == '\0';
}

/* @messages as the conversation's objects: each one it holds is the same
 * object as its list's. */
static GPtrArray *
adopt_all (KagedConversation *self,
           GPtrArray         *messages)
{
  GPtrArray *objects = g_ptr_array_new_full (messages->len, g_object_unref);

  for (guint i = 0; i < messages->len; i++)
    g_ptr_array_add (objects, g_object_ref (adopt (self, g_object_ref (g_ptr_array_index (messages, i)))));

  return objects;
}

/* Whether turns followed @message before it left the conversation. */
static gboolean
was_followed (KagedConversation *self,
              KagedMessage      *message)
{
  g_autoptr(GPtrArray) later = NULL;
  g_autoptr(GError) error = NULL;

  later = kaged_session_manager_list_superseded_with (self->manager, self->session_id,
                                                      kaged_message_get_id (message), 1, NULL,
                                                      &error);
  if (later == NULL)
    g_debug ("Cannot tell what followed message %" G_GINT64_FORMAT ": %s",
             kaged_message_get_id (message), error->message);

  return later != NULL && later->len > 0;
}

/**
 * kaged_conversation_list_versions:
 * @anchor_id: an operator message of the session
 *
 * Lists the versions of the reply to @anchor_id, for the window's
 * `‹ 2/3 ›` pager. The current version is the same object as the list's.
 * Earlier versions without a word of text — a failure before the reply
 * began, a retry that failed again — have nothing to read and are left
 * out, but for the one just before a current version that was stopped
 * before its first word (not one still under way): that one says why the
 * reply is missing; and but for one that turns followed, which are read
 * from it.
 * kaged_session_manager_list_versions() lists them all.
 *
 * Returns: (transfer full) (element-type KagedMessage): the replies, oldest
 *   first, the current one last, or %NULL with @error set
 */
GPtrArray *
kaged_conversation_list_versions (KagedConversation  *self,
                                  gint64              anchor_id,
                                  GError            **error)
{
  g_autoptr(GPtrArray) versions = NULL;
  GPtrArray *objects;
  KagedMessage *current;
  gboolean keep_before_current;

  g_return_val_if_fail (KAGED_IS_CONVERSATION (self), NULL);

  versions = kaged_session_manager_list_versions (self->manager, self->session_id, anchor_id,
                                                  error);
  if (versions == NULL)
    return NULL;

  objects = g_ptr_array_new_full (versions->len, g_object_unref);
  current = versions->len > 0 ? g_ptr_array_index (versions, versions->len - 1) : NULL;
  /* A retry that ended before its first word without failing (stopped):
   * the failure before it is kept, to say why there is no reply. Not
   * while the retry is under way: until it ends, what it gives is read. */
  keep_before_current = current != NULL && is_empty (current) &&
                        kaged_message_get_status (current) != KAGED_MESSAGE_STATUS_FAILED &&
                        kaged_message_get_status (current) != KAGED_MESSAGE_STATUS_STREAMING;
  for (guint i = 0; i < versions->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (versions, i);

      if (i + 1 < versions->len && is_empty (message) &&
          !(keep_before_current && i + 2 == versions->len) &&
          !was_followed (self, message))
        continue;

      g_ptr_array_add (objects, g_object_ref (adopt (self, g_object_ref (message))));
    }

  return objects;
}

/**
 * kaged_conversation_list_edits:
 * @message_id: an operator message of the session
 *
 * Lists the texts of an operator message for the window's `‹ 1/2 ›`
 * pager: those edits replaced, then the message itself. Messages the
 * conversation holds are the same objects as its list's.
 *
 * Returns: (transfer full) (element-type KagedMessage): the texts, oldest
 *   first, @message_id last, or %NULL with @error set
 */
GPtrArray *
kaged_conversation_list_edits (KagedConversation  *self,
                               gint64              message_id,
                               GError            **error)
{
  g_autoptr(GPtrArray) edits = NULL;
  KagedMessage *message;

  g_return_val_if_fail (KAGED_IS_CONVERSATION (self), NULL);

  edits = kaged_session_manager_list_edits (self->manager, self->session_id, message_id, error);
  if (edits == NULL)
    return NULL;
  message = _kaged_session_manager_get_message_in_session (self->manager, self->session_id, message_id,
                                                           error);
  if (message == NULL)
    return NULL;
  g_ptr_array_add (edits, message);

  return adopt_all (self, edits);
}

/**
 * kaged_conversation_list_superseded_with:
 * @message_id: a message of the session, superseded or not
 * @limit: list at most this many, or 0 for all
 * @n_messages: (out) (optional): how many there are in all
 *
 * Lists what followed an earlier version of a reply while it was current:
 * the messages after @message_id that a regeneration or an edit took out
 * of the conversation together with it, in conversation order. Messages
 * the conversation holds are the same objects as its list's.
 *
 * Returns: (transfer full) (element-type KagedMessage): the messages (none
 *   for a current message), or %NULL with @error set
 */
GPtrArray *
kaged_conversation_list_superseded_with (KagedConversation  *self,
                                         gint64              message_id,
                                         guint               limit,
                                         guint              *n_messages,
                                         GError            **error)
{
  g_autoptr(GPtrArray) later = NULL;

  g_return_val_if_fail (KAGED_IS_CONVERSATION (self), NULL);

  later = kaged_session_manager_list_superseded_with (self->manager, self->session_id, message_id,
                                                      limit, n_messages, error);
  if (later == NULL)
    return NULL;

  return adopt_all (self, later);
}

/**
 * kaged_conversation_get_anchor_id:
 * @message: a message of the conversation
 *
 * Returns: the operator message @message answers; for an operator message
 *   its own id; 0 for a summary or when it cannot be told
 */
gint64
kaged_conversation_get_anchor_id (KagedConversation *self,
                                  KagedMessage      *message)
{
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GError) error = NULL;
  gint64 run_id;
  gint64 *anchor_id;

  g_return_val_if_fail (KAGED_IS_CONVERSATION (self), 0);
  g_return_val_if_fail (KAGED_IS_MESSAGE (message), 0);

  switch (kaged_message_get_role (message))
    {
    case KAGED_MESSAGE_ROLE_OPERATOR:
      return kaged_message_get_id (message);

    case KAGED_MESSAGE_ROLE_AGENT:
      break;

    case KAGED_MESSAGE_ROLE_SUMMARY:
    default:
      return 0;
    }

  run_id = kaged_message_get_run_id (message);
  anchor_id = g_hash_table_lookup (self->anchors, &run_id);
  if (anchor_id != NULL)
    return *anchor_id;

  run = kaged_store_get_run (self->store, run_id, &error);
  if (run == NULL)
    {
      g_debug ("No anchor for message %" G_GINT64_FORMAT ": %s",
               kaged_message_get_id (message), error->message);
      return 0;
    }

  g_hash_table_insert (self->anchors, int64_key (run_id),
                       int64_key (kaged_run_get_anchor_id (run)));
  return kaged_run_get_anchor_id (run);
}

/**
 * kaged_conversation_find_position:
 * @message_id: a message of the session
 * @position: (out): where it stands in the list
 *
 * Finds where a message stands without reading the messages before it:
 * the store counts them. A message not in the list (superseded) gets the
 * position it would have, that of the first current message after it, or
 * the number of items when none follows.
 *
 * Returns: %TRUE, or %FALSE with @error set
 *   (%KAGED_ENGINE_ERROR_NOT_FOUND when the session has no such message)
 */
gboolean
kaged_conversation_find_position (KagedConversation  *self,
                                  gint64              message_id,
                                  guint              *position,
                                  GError            **error)
{
  GError *store_error = NULL;
  KagedMessage *object;
  guint n_before = 0;
  gint64 known;

  g_return_val_if_fail (KAGED_IS_CONVERSATION (self), FALSE);
  g_return_val_if_fail (position != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  object = g_hash_table_lookup (self->objects, &message_id);
  if (object != NULL && (known = find_position (self, object)) >= 0)
    {
      *position = (guint)known;
      return TRUE;
    }

  if (!kaged_store_count_messages_before (self->store, self->session_id, FALSE, message_id,
                                          &n_before, &store_error))
    return _kaged_session_manager_propagate_store_error (error, store_error);

  *position = MIN (n_before, self->items->len);
  return TRUE;
}

/**
 * kaged_conversation_list_all:
 * @after_id: list messages after this one, or 0 to start at the beginning
 * @limit: at most this many, or 0 for all
 *
 * Pages through every message of the session in conversation order, the
 * superseded ones included (which the list leaves out), as
 * kaged_store_list_messages() does. The messages of the list are the
 * list's objects, a streaming reply with the text announced so far.
 *
 * Returns: (transfer full) (element-type KagedMessage): the messages, or
 *   %NULL with @error set
 */
GPtrArray *
kaged_conversation_list_all (KagedConversation  *self,
                             gint64              after_id,
                             guint               limit,
                             GError            **error)
{
  g_autoptr(GPtrArray) page = NULL;
  GError *store_error = NULL;
  GPtrArray *objects;

  g_return_val_if_fail (KAGED_IS_CONVERSATION (self), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  page = kaged_store_list_messages (self->store, self->session_id, TRUE, after_id, limit,
                                    &store_error);
  if (page == NULL)
    {
      _kaged_session_manager_propagate_store_error (error, store_error);
      return NULL;
    }

  objects = g_ptr_array_new_full (page->len, g_object_unref);
  for (guint i = 0; i < page->len; i++)
    {
      KagedMessage *message = g_object_ref (g_ptr_array_index (page, i));

      g_ptr_array_add (objects, g_object_ref (adopt (self, message)));
    }

  return objects;
}

/* How many messages were read from the store so far, for tests. */
guint
_kaged_conversation_get_n_loaded (KagedConversation *self)
{
  g_return_val_if_fail (KAGED_IS_CONVERSATION (self), 0);

  return self->n_loaded;
}
