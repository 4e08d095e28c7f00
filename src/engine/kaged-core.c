/* kaged-core.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-core"

#include "config.h"

#include <errno.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>

#include "kaged-core.h"
#include "kaged-core-settings.h"
#include "kaged-http.h"

struct _KagedCore
{
  GObject                parent_instance;

  KagedStore            *store;
  KagedClock            *clock;
  KagedKeyring          *keyring;
  KagedResolver         *resolver;
  KagedProfiles         *profiles;
  KagedProfile          *override;    /* a profile for this run only, or NULL */
  KagedProfile          *profile;     /* the one runs use: override or default */
  GSignalGroup          *profile_signals;
  KagedSessionManager   *manager;
  KagedRetryCoordinator *coordinator;
  KagedCoreServer       *server;
  /* gint64 session id → KagedConversation, unowned: each stays while
   * someone holds it */
  GHashTable            *conversations;
  char                  *api_url;
  char                  *api_error;

  KagedCoreFlags         flags;
  guint                  started : 1;
  guint                  shut_down : 1;
};

G_DEFINE_FINAL_TYPE (KagedCore, kaged_core, G_TYPE_OBJECT)

G_DEFINE_QUARK (kaged-core-error-quark, kaged_core_error)

enum {
  PROP_0,
  PROP_API_URL,
  PROP_API_ERROR,
  PROP_PROFILE,
  N_PROPS
};

enum {
  RETRY_CHANGED,
  N_SIGNALS
};

static GParamSpec *properties [N_PROPS];
static guint signals [N_SIGNALS];

static void
set_api_state (KagedCore  *self,
               const char *url,
               const char *api_error)
{
  if (g_strcmp0 (self->api_url, url) != 0)
    {
      g_free (self->api_url);
      self->api_url = g_strdup (url);
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_API_URL]);
    }

  if (g_strcmp0 (self->api_error, api_error) != 0)
    {
      g_free (self->api_error);
      self->api_error = g_strdup (api_error);
      g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_API_ERROR]);
    }
}

static void
scheduler_state_cb (KagedRetryScheduler *scheduler,
                    GParamSpec          *pspec,
                    KagedCore           *self)
{
  g_signal_emit (self, signals [RETRY_CHANGED], 0,
                 kaged_retry_scheduler_get_session_id (scheduler));
}

static void
watch_scheduler (KagedCore           *self,
                 KagedRetryScheduler *scheduler)
{
  g_signal_connect_object (scheduler, "notify::state",
                           G_CALLBACK (scheduler_state_cb), self, 0);
}

static void
scheduler_added_cb (KagedRetryCoordinator *coordinator,
                    KagedRetryScheduler   *scheduler,
                    KagedCore             *self)
{
  watch_scheduler (self, scheduler);

  /* A scheduler starts idle, which is no change; one that resumed a saved
   * retry is. */
  if (kaged_retry_scheduler_get_state (scheduler) != KAGED_RETRY_SCHEDULER_STATE_IDLE)
    g_signal_emit (self, signals [RETRY_CHANGED], 0,
                   kaged_retry_scheduler_get_session_id (scheduler));
}

static void
conversation_gone_cb (gpointer  data,
                      GObject  *where_the_object_was)
{
  KagedCore *self = data;
  GHashTableIter iter;
  gpointer value;

  g_hash_table_iter_init (&iter, self->conversations);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    {
      if (value == (gpointer)where_the_object_was)
        {
          g_hash_table_iter_remove (&iter);
          break;
        }
    }
}

static void
forget_conversations (KagedCore *self)
{
  GHashTableIter iter;
  gpointer value;

  g_hash_table_iter_init (&iter, self->conversations);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    {
      g_object_weak_unref (value, conversation_gone_cb, self);
      g_hash_table_iter_remove (&iter);
    }
}

static void
kaged_core_dispose (GObject *object)
{
  KagedCore *self = (KagedCore *)object;

  kaged_core_shutdown (self);
  forget_conversations (self);

  if (self->coordinator != NULL)
    g_signal_handlers_disconnect_by_data (self->coordinator, self);

  g_clear_object (&self->server);
  g_clear_object (&self->coordinator);
  g_clear_object (&self->manager);
  if (self->profiles != NULL)
    g_signal_handlers_disconnect_by_data (self->profiles, self);
  if (self->profile_signals != NULL)
    g_signal_group_set_target (self->profile_signals, NULL);
  g_clear_object (&self->profile_signals);
  g_clear_object (&self->profile);
  g_clear_object (&self->override);
  g_clear_object (&self->profiles);
  g_clear_object (&self->resolver);
  g_clear_object (&self->keyring);
  g_clear_object (&self->clock);
  g_clear_object (&self->store);

  G_OBJECT_CLASS (kaged_core_parent_class)->dispose (object);
}

static void
kaged_core_finalize (GObject *object)
{
  KagedCore *self = (KagedCore *)object;

  g_clear_pointer (&self->conversations, g_hash_table_unref);
  g_clear_pointer (&self->api_url, g_free);
  g_clear_pointer (&self->api_error, g_free);

  G_OBJECT_CLASS (kaged_core_parent_class)->finalize (object);
}

static void
kaged_core_get_property (GObject    *object,
                         guint       prop_id,
                         GValue     *value,
                         GParamSpec *pspec)
{
  KagedCore *self = KAGED_CORE (object);

  switch (prop_id)
    {
    case PROP_API_URL:
      g_value_set_string (value, self->api_url);
      break;

    case PROP_API_ERROR:
      g_value_set_string (value, self->api_error);
      break;

    case PROP_PROFILE:
      g_value_set_object (value, self->profile);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_core_class_init (KagedCoreClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = kaged_core_dispose;
  object_class->finalize = kaged_core_finalize;
  object_class->get_property = kaged_core_get_property;

  properties [PROP_API_URL] =
    g_param_spec_string ("api-url", NULL, NULL,
                         NULL,
                         (G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  properties [PROP_API_ERROR] =
    g_param_spec_string ("api-error", NULL, NULL,
                         NULL,
                         (G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  properties [PROP_PROFILE] =
    g_param_spec_object ("profile", NULL, NULL,
                         KAGED_TYPE_PROFILE,
                         (G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);

  signals [RETRY_CHANGED] =
    g_signal_new ("retry-changed",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, G_TYPE_INT64);
}

/* Runs ask the profile of this run when the command line gave one, else
 * the default profile; a change to it reaches the next run. */
static void
update_profile (KagedCore *self)
{
  KagedProfile *profile = self->override;

  if (profile == NULL && self->profiles != NULL)
    profile = kaged_profiles_get_default (self->profiles);

  g_set_object (&self->profile, profile);
  g_signal_group_set_target (self->profile_signals, profile);
  if (self->manager != NULL)
    kaged_session_manager_set_model (self->manager, self->resolver, profile);

  /* Another profile, or a change to this one. */
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_PROFILE]);
}

static void
kaged_core_init (KagedCore *self)
{
  self->conversations = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
  self->profile_signals = g_signal_group_new (KAGED_TYPE_PROFILE);
  g_signal_group_connect_object (self->profile_signals, "notify",
                                 G_CALLBACK (update_profile), self, G_CONNECT_SWAPPED);
}

/**
 * kaged_core_new:
 * @store: the open conversation store
 * @keyring: (nullable): where API keys are looked up, or %NULL for the
 *   desktop keyring (libsecret; none with %KAGED_CORE_FLAGS_NO_KEYRING)
 * @clock: (nullable): the clock, or %NULL for the system's
 * @network_monitor: (nullable): the network monitor of Tier 2, or %NULL
 *   for the system's
 * @flags: what runs
 *
 * Builds the engine on @store. Nothing runs before kaged_core_start(): set
 * the profiles (or a profile) first.
 *
 * Returns: (transfer full): the core
 */
KagedCore *
kaged_core_new (KagedStore      *store,
                KagedKeyring    *keyring,
                KagedClock      *clock,
                GNetworkMonitor *network_monitor,
                KagedCoreFlags   flags)
{
  KagedCore *self;

  g_return_val_if_fail (KAGED_IS_STORE (store), NULL);
  g_return_val_if_fail (!keyring || KAGED_IS_KEYRING (keyring), NULL);
  g_return_val_if_fail (!clock || KAGED_IS_CLOCK (clock), NULL);
  g_return_val_if_fail (!network_monitor || G_IS_NETWORK_MONITOR (network_monitor), NULL);

  self = g_object_new (KAGED_TYPE_CORE, NULL);
  self->flags = flags;
  self->store = g_object_ref (store);
  self->clock = clock != NULL ? g_object_ref (clock) : g_object_ref (kaged_clock_get_default ());
  if (keyring != NULL)
    self->keyring = g_object_ref (keyring);
  else if ((flags & KAGED_CORE_FLAGS_NO_KEYRING) != 0)
    self->keyring = kaged_memory_keyring_new ();
  else
    self->keyring = kaged_secret_keyring_new ();
  self->resolver = kaged_resolver_new (kaged_http_get_default_session (), self->keyring);
  self->manager = kaged_session_manager_new (store, self->clock);
  _kaged_core_settings_init (self);

  if ((flags & KAGED_CORE_FLAGS_AUTO_RETRY) != 0)
    {
      g_autoptr(GPtrArray) schedulers = NULL;

      self->coordinator = kaged_retry_coordinator_new (self->manager, self->clock,
                                                       network_monitor);
      schedulers = kaged_retry_coordinator_list_schedulers (self->coordinator);
      for (guint i = 0; i < schedulers->len; i++)
        watch_scheduler (self, g_ptr_array_index (schedulers, i));
      g_signal_connect (self->coordinator, "scheduler-added",
                        G_CALLBACK (scheduler_added_cb), self);
    }

  return self;
}

/**
 * kaged_core_open:
 * @db_path: the conversation database, created (with its folder) when missing
 * @keyring: (nullable): as for kaged_core_new()
 * @flags: what runs
 * @error: a #KAGED_STORE_ERROR when the database cannot be opened
 *
 * Returns: (transfer full): the core, or %NULL with @error set
 */
KagedCore *
kaged_core_open (const char      *db_path,
                 KagedKeyring    *keyring,
                 KagedCoreFlags   flags,
                 GError         **error)
{
  g_autofree char *dir = NULL;
  g_autoptr(KagedStore) store = NULL;

  g_return_val_if_fail (db_path != NULL, NULL);

  dir = g_path_get_dirname (db_path);
  if (g_mkdir_with_parents (dir, 0700) != 0)
    {
      int saved_errno = errno;

      g_set_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IO,
                   _("Could not create the folder “%s”: %s"),
                   dir, g_strerror (saved_errno));
      return NULL;
    }

  store = kaged_store_open (db_path, error);
  if (store == NULL)
    return NULL;

  return kaged_core_new (store, keyring, NULL, NULL, flags);
}

/**
 * kaged_core_get_store:
 *
 * Returns: (transfer none): the conversation store
 */
KagedStore *
kaged_core_get_store (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return self->store;
}

/**
 * kaged_core_get_manager:
 *
 * Returns: (transfer none): the session manager
 */
KagedSessionManager *
kaged_core_get_manager (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return self->manager;
}

/**
 * kaged_core_get_coordinator:
 *
 * Returns: (transfer none) (nullable): the Tier 2 retries of every session,
 *   or %NULL when the core runs without them
 */
KagedRetryCoordinator *
kaged_core_get_coordinator (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return self->coordinator;
}

/**
 * kaged_core_get_clock:
 *
 * Returns: (transfer none): the clock every part of the engine reads
 */
KagedClock *
kaged_core_get_clock (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return self->clock;
}

/**
 * kaged_core_get_resolver:
 *
 * Returns: (transfer none): the provider resolver
 */
KagedResolver *
kaged_core_get_resolver (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return self->resolver;
}

KagedCoreFlags
kaged_core_get_flags (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), KAGED_CORE_FLAGS_NONE);

  return self->flags;
}

/**
 * kaged_core_get_profile:
 *
 * Returns: (transfer none) (nullable): the provider profile replies come
 *   from: the one set for this run, else the default profile; %NULL when
 *   there is neither
 */
KagedProfile *
kaged_core_get_profile (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return self->profile;
}

/**
 * kaged_core_get_run_profile:
 *
 * Returns: (transfer none) (nullable): the profile set for this run only
 *   (given on the command line), which replies come from whatever the
 *   default profile is, or %NULL
 */
KagedProfile *
kaged_core_get_run_profile (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return self->override;
}

/**
 * kaged_core_set_profile:
 * @profile: (nullable): the provider, base URL and model replies come
 *   from, or %NULL to follow the default profile again
 *
 * Runs that start from now on ask @profile's model, whatever the default
 * profile is. Nothing of @profile is saved.
 */
void
kaged_core_set_profile (KagedCore    *self,
                        KagedProfile *profile)
{
  g_return_if_fail (KAGED_IS_CORE (self));
  g_return_if_fail (!profile || KAGED_IS_PROFILE (profile));

  g_set_object (&self->override, profile);
  update_profile (self);
}

/**
 * kaged_core_get_profiles:
 *
 * Returns: (transfer none) (nullable): the saved profiles, or %NULL when
 *   the core runs without settings
 */
KagedProfiles *
kaged_core_get_profiles (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return self->profiles;
}

/* A removed profile's cached model list goes with it. */
static void
profile_removed_cb (KagedCore  *self,
                    const char *profile_id)
{
  g_autoptr(GError) error = NULL;

  if (self->store != NULL &&
      !kaged_store_drop_profile_models (self->store, profile_id, &error))
    g_warning ("The models listed for the removed profile “%s” could not be forgotten: %s",
               profile_id, error->message);
}

/* The lists of profiles removed while no core listened go too; "" is a
 * profile that was never saved (given on the command line). */
static void
forget_removed_profiles (KagedCore *self)
{
  g_autoptr(GStrvBuilder) builder = g_strv_builder_new ();
  g_auto(GStrv) ids = NULL;
  g_autoptr(GError) error = NULL;
  guint n = g_list_model_get_n_items (G_LIST_MODEL (self->profiles));

  g_strv_builder_add (builder, "");
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(KagedProfile) profile = g_list_model_get_item (G_LIST_MODEL (self->profiles), i);

      g_strv_builder_add (builder, kaged_profile_get_id (profile));
    }
  ids = g_strv_builder_end (builder);

  if (self->store != NULL &&
      !kaged_store_keep_profile_models (self->store, (const char * const *)ids, &error))
    g_warning ("The models listed for removed profiles could not be forgotten: %s",
               error->message);
}

/**
 * kaged_core_set_profiles:
 * @profiles: (nullable): the saved profiles
 *
 * Runs follow the default profile of @profiles (unless
 * kaged_core_set_profile() gave one for this run), and removing a profile
 * removes its key from the core's keyring and the models listed for it
 * from the store.
 */
void
kaged_core_set_profiles (KagedCore     *self,
                         KagedProfiles *profiles)
{
  g_return_if_fail (KAGED_IS_CORE (self));
  g_return_if_fail (!profiles || KAGED_IS_PROFILES (profiles));

  if (self->profiles == profiles)
    return;

  if (self->profiles != NULL)
    g_signal_handlers_disconnect_by_data (self->profiles, self);

  g_set_object (&self->profiles, profiles);

  if (profiles != NULL)
    {
      kaged_profiles_set_keyring (profiles, self->keyring);
      g_signal_connect_object (profiles, "notify::default-profile",
                               G_CALLBACK (update_profile), self, G_CONNECT_SWAPPED);
      g_signal_connect_object (profiles, "profile-removed",
                               G_CALLBACK (profile_removed_cb), self, G_CONNECT_SWAPPED);
      forget_removed_profiles (self);
    }

  update_profile (self);
}

/**
 * kaged_core_get_keyring:
 *
 * Returns: (transfer none): where API keys are kept
 */
KagedKeyring *
kaged_core_get_keyring (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return self->keyring;
}

/**
 * kaged_core_start:
 *
 * Runs still queued from the last time start again. Saved Tier 2 retries
 * resumed when the core was built.
 */
void
kaged_core_start (KagedCore *self)
{
  g_return_if_fail (KAGED_IS_CORE (self));

  if (self->started || self->shut_down)
    return;

  self->started = TRUE;
  kaged_session_manager_resume (self->manager);
}

/**
 * kaged_core_shutdown:
 *
 * Records the runs in flight as cancelled and stops the server. Call
 * when the program quits; the core answers nothing after.
 */
void
kaged_core_shutdown (KagedCore *self)
{
  g_return_if_fail (KAGED_IS_CORE (self));

  if (self->shut_down)
    return;

  /* Event streams hear of the cancelled runs before the server stops. */
  if (self->manager != NULL)
    kaged_session_manager_shutdown (self->manager);
  kaged_core_set_server (self, NULL);
  self->shut_down = TRUE;
}

/**
 * kaged_core_create_session:
 * @title: (nullable): the title, or %NULL to take it from the first message
 *
 * Returns: (transfer full): the new session, or %NULL with @error set
 */
KagedSession *
kaged_core_create_session (KagedCore   *self,
                           const char  *title,
                           GError     **error)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return kaged_session_manager_create_session (self->manager, title, error);
}

/**
 * kaged_core_post:
 * @content: what the operator wrote
 *
 * Stores the operator message and starts its run, or queues it behind the
 * session's active run. A pending Tier 2 retry of the session stands down.
 *
 * Returns: (transfer full): the receipt, or %NULL with @error set
 */
KagedReceipt *
kaged_core_post (KagedCore   *self,
                 gint64       session_id,
                 const char  *content,
                 GError     **error)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);
  g_return_val_if_fail (content != NULL, NULL);

  return kaged_session_manager_post (self->manager, session_id, content, error);
}

/**
 * kaged_core_regenerate:
 * @message_id: an operator message, or an agent reply (which stands for the
 *   operator message it answers)
 *
 * Supersedes everything after the anchor and starts a fresh reply to it. A
 * pending Tier 2 retry of the session stands down.
 *
 * Returns: (transfer full): the receipt, or %NULL with @error set
 */
KagedReceipt *
kaged_core_regenerate (KagedCore  *self,
                       gint64      session_id,
                       gint64      message_id,
                       GError    **error)
{
  gint64 anchor_id;

  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  anchor_id = kaged_session_manager_resolve_anchor (self->manager, session_id, message_id, error);
  if (anchor_id <= 0)
    return NULL;

  return kaged_session_manager_regenerate (self->manager, session_id, anchor_id, error);
}

/**
 * kaged_core_regenerate_anchor:
 * @anchor_id: an operator message: an agent reply is refused with
 *   %KAGED_ENGINE_ERROR_INVALID_ANCHOR, as the HTTP API promises
 *
 * As kaged_core_regenerate(), from the operator message itself.
 *
 * Returns: (transfer full): the receipt, or %NULL with @error set
 */
KagedReceipt *
kaged_core_regenerate_anchor (KagedCore  *self,
                              gint64      session_id,
                              gint64      anchor_id,
                              GError    **error)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return kaged_session_manager_regenerate (self->manager, session_id, anchor_id, error);
}

/**
 * kaged_core_edit:
 * @operator_message_id: a current operator message
 * @content: what it should have said
 *
 * Supersedes the operator message and everything after it (never changing
 * a stored row) and posts @content as a new message.
 *
 * Returns: (transfer full): the receipt of the new message, or %NULL with
 *   @error set
 */
KagedReceipt *
kaged_core_edit (KagedCore   *self,
                 gint64       session_id,
                 gint64       operator_message_id,
                 const char  *content,
                 GError     **error)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return kaged_session_manager_edit (self->manager, session_id, operator_message_id, content,
                                     error);
}

/**
 * kaged_core_cancel_run:
 *
 * Cancels a queued or running run; it is recorded cancelled.
 *
 * Returns: %TRUE, or %FALSE with @error set (unknown run, or one that ended)
 */
gboolean
kaged_core_cancel_run (KagedCore  *self,
                       gint64      session_id,
                       gint64      run_id,
                       GError    **error)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), FALSE);

  return kaged_session_manager_cancel (self->manager, session_id, run_id, error);
}

/**
 * kaged_core_open_conversation:
 *
 * The read model of a session: its current messages in conversation
 * order, updated in place as replies stream. There is one per session
 * while anyone holds it; every caller shares it.
 *
 * Returns: (transfer full): the conversation, or %NULL with @error set
 *   (%KAGED_ENGINE_ERROR_NOT_FOUND when there is no such session)
 */
KagedConversation *
kaged_core_open_conversation (KagedCore  *self,
                              gint64      session_id,
                              GError    **error)
{
  KagedConversation *conversation;

  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  conversation = g_hash_table_lookup (self->conversations, &session_id);
  if (conversation != NULL)
    return g_object_ref (conversation);

  conversation = kaged_conversation_new (self->manager, session_id, error);
  if (conversation == NULL)
    return NULL;

  g_hash_table_insert (self->conversations, g_memdup2 (&session_id, sizeof session_id),
                       conversation);
  g_object_weak_ref (G_OBJECT (conversation), conversation_gone_cb, self);

  return conversation;
}

/**
 * kaged_core_lookup_retry:
 *
 * Returns: (transfer none) (nullable): the session's Tier 2 scheduler, if
 *   Tier 2 runs and the session has one
 */
KagedRetryScheduler *
kaged_core_lookup_retry (KagedCore *self,
                         gint64     session_id)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  if (self->coordinator == NULL)
    return NULL;

  return kaged_retry_coordinator_lookup_scheduler (self->coordinator, session_id);
}

static KagedRetryScheduler *
require_retry (KagedCore  *self,
               gint64      session_id,
               GError    **error)
{
  KagedRetryScheduler *scheduler;

  if (self->coordinator == NULL)
    {
      g_set_error_literal (error, KAGED_CORE_ERROR, KAGED_CORE_ERROR_RETRY_OFF,
                           _("Automatic retries are off"));
      return NULL;
    }

  scheduler = kaged_retry_coordinator_lookup_scheduler (self->coordinator, session_id);
  if (scheduler == NULL)
    g_set_error_literal (error, KAGED_CORE_ERROR, KAGED_CORE_ERROR_NO_RETRY,
                         _("The conversation has no retry pending"));

  return scheduler;
}

/**
 * kaged_core_retry_now:
 *
 * Dispatches the session's armed or scheduled retry at once.
 *
 * Returns: %TRUE, or %FALSE with @error set when no retry was pending
 */
gboolean
kaged_core_retry_now (KagedCore  *self,
                      gint64      session_id,
                      GError    **error)
{
  KagedRetryScheduler *scheduler;

  g_return_val_if_fail (KAGED_IS_CORE (self), FALSE);

  if ((scheduler = require_retry (self, session_id, error)) == NULL)
    return FALSE;

  if (!kaged_retry_scheduler_retry_now (scheduler))
    {
      g_set_error_literal (error, KAGED_CORE_ERROR, KAGED_CORE_ERROR_NO_RETRY,
                           _("The conversation has no retry pending"));
      return FALSE;
    }

  return TRUE;
}

/**
 * kaged_core_cancel_retry:
 *
 * Cancels the session's retry: a countdown stops, a dispatched retry run
 * is cancelled and recorded so.
 *
 * Returns: %TRUE, or %FALSE with @error set when there was nothing to cancel
 */
gboolean
kaged_core_cancel_retry (KagedCore  *self,
                         gint64      session_id,
                         GError    **error)
{
  KagedRetryScheduler *scheduler;

  g_return_val_if_fail (KAGED_IS_CORE (self), FALSE);

  if ((scheduler = require_retry (self, session_id, error)) == NULL)
    return FALSE;

  if (!kaged_retry_scheduler_cancel (scheduler))
    {
      g_set_error_literal (error, KAGED_CORE_ERROR, KAGED_CORE_ERROR_NO_RETRY,
                           _("The conversation has no retry to cancel"));
      return FALSE;
    }

  return TRUE;
}

/**
 * kaged_core_set_server:
 * @server: (nullable): a server that already listens, or %NULL
 *
 * The core takes a reference on @server, reports where it listens in
 * #KagedCore:api-url, and stops it when it is replaced or the core shuts
 * down. %NULL stops the current one.
 */
void
kaged_core_set_server (KagedCore       *self,
                       KagedCoreServer *server)
{
  g_autoptr(KagedCoreServer) old = NULL;
  g_auto(GStrv) urls = NULL;

  g_return_if_fail (KAGED_IS_CORE (self));
  g_return_if_fail (!server || KAGED_IS_CORE_SERVER (server));

  if (server == self->server)
    return;

  old = g_steal_pointer (&self->server);
  if (old != NULL)
    kaged_core_server_stop (old);

  if (server != NULL && !self->shut_down)
    {
      self->server = g_object_ref (server);
      urls = kaged_core_server_dup_urls (server);
    }

  set_api_state (self, urls != NULL ? urls[0] : NULL, NULL);
}

/**
 * kaged_core_get_server:
 *
 * Returns: (transfer none) (nullable): the server the core holds
 */
KagedCoreServer *
kaged_core_get_server (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return self->server;
}

/**
 * kaged_core_set_api_error:
 * @message: (nullable): why the API could not be switched on
 *
 * Records why there is no server (stopping one that runs), for the
 * preferences to show.
 */
void
kaged_core_set_api_error (KagedCore  *self,
                          const char *message)
{
  g_return_if_fail (KAGED_IS_CORE (self));

  kaged_core_set_server (self, NULL);
  set_api_state (self, NULL, message);
}

const char *
kaged_core_get_api_url (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return self->api_url;
}

const char *
kaged_core_get_api_error (KagedCore *self)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  return self->api_error;
}
