/* kaged-services.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-services"

#include "config.h"


#include "kaged-api-token.h"
#include "kaged-http.h"
#include "kaged-keyring.h"
#include "kaged-retry-notifier.h"
#include "kaged-services.h"

struct _KagedServices
{
  GObject                parent_instance;

  GApplication          *application;  /* weak: the application owns us */
  GSettings             *settings;
  KagedStore            *store;
  KagedResolver         *resolver;
  KagedSessionManager   *manager;
  KagedRetryCoordinator *coordinator;
  KagedRetryNotifier    *notifier;
  KagedApiServer        *api;
  char                  *api_url;
  char                  *api_error;
};

G_DEFINE_FINAL_TYPE (KagedServices, kaged_services, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_API_URL,
  PROP_API_ERROR,
  N_PROPS
};

enum {
  SHOW_SESSION,
  N_SIGNALS
};

static GParamSpec *properties [N_PROPS];
static guint signals [N_SIGNALS];

static void
set_api_state (KagedServices *self,
               const char    *url,
               const char    *api_error)
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
stop_api (KagedServices *self)
{
  if (self->api == NULL)
    return;

  kaged_api_server_stop (self->api);
  g_clear_object (&self->api);
  g_message ("Local HTTP API stopped");
}

static void
update_api (KagedServices *self)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *token = NULL;
  g_auto(GStrv) urls = NULL;
  guint port;

  stop_api (self);

  if (!g_settings_get_boolean (self->settings, "api-enabled"))
    {
      set_api_state (self, NULL, NULL);
      return;
    }

  port = g_settings_get_uint (self->settings, "api-port");
  token = kaged_api_token_load_or_create (NULL, NULL, &error);
  if (token != NULL)
    {
      self->api = kaged_api_server_new (self->manager, token);
      if (!kaged_api_server_listen (self->api, port, &error))
        g_clear_object (&self->api);
    }

  if (self->api == NULL)
    {
      g_warning ("The local HTTP API could not be switched on: %s", error->message);
      set_api_state (self, NULL, error->message);
      return;
    }

  urls = kaged_api_server_dup_urls (self->api);
  g_message ("Local HTTP API listening on %s", urls != NULL && urls[0] != NULL ? urls[0] : "");
  set_api_state (self, urls != NULL ? urls[0] : NULL, NULL);
}

static void
update_model (KagedServices *self)
{
  g_autoptr(KagedProfile) profile = kaged_profile_new_from_settings (self->settings);

  kaged_session_manager_set_model (self->manager, self->resolver, profile);
}

static void
update_spend_limit (KagedServices *self)
{
  KagedSpendLimit spend;

  kaged_spend_limit_init_from_settings (&spend, self->settings);
  kaged_session_manager_set_spend_limit (self->manager, &spend);
}

static void
settings_changed_cb (GSettings     *settings,
                     const char    *key,
                     KagedServices *self)
{
  if (g_str_has_prefix (key, "provider-"))
    update_model (self);
  else if (g_str_has_prefix (key, "spend-limit"))
    update_spend_limit (self);
  else if (g_str_equal (key, "api-enabled") || g_str_equal (key, "api-port"))
    update_api (self);
}

static KagedRetryScheduler *
lookup_scheduler (KagedServices *self,
                  GVariant      *parameter)
{
  return kaged_retry_coordinator_lookup_scheduler (self->coordinator,
                                                   g_variant_get_int64 (parameter));
}

static void
retry_now_action (GSimpleAction *action,
                  GVariant      *parameter,
                  gpointer       user_data)
{
  KagedRetryScheduler *scheduler = lookup_scheduler (user_data, parameter);

  if (scheduler != NULL)
    kaged_retry_scheduler_retry_now (scheduler);
}

static void
cancel_retry_action (GSimpleAction *action,
                     GVariant      *parameter,
                     gpointer       user_data)
{
  KagedRetryScheduler *scheduler = lookup_scheduler (user_data, parameter);

  if (scheduler != NULL)
    kaged_retry_scheduler_cancel (scheduler);
}

static void
show_session_action (GSimpleAction *action,
                     GVariant      *parameter,
                     gpointer       user_data)
{
  KagedServices *self = user_data;

  if (self->application != NULL)
    g_application_activate (self->application);
  g_signal_emit (self, signals [SHOW_SESSION], 0, g_variant_get_int64 (parameter));
}

static void
kaged_services_dispose (GObject *object)
{
  KagedServices *self = (KagedServices *)object;

  kaged_services_shutdown (self);

  if (self->settings != NULL)
    g_signal_handlers_disconnect_by_data (self->settings, self);

  g_clear_object (&self->notifier);
  g_clear_object (&self->coordinator);
  g_clear_object (&self->manager);
  g_clear_object (&self->resolver);
  g_clear_object (&self->store);
  g_clear_object (&self->settings);
  g_clear_weak_pointer (&self->application);

  G_OBJECT_CLASS (kaged_services_parent_class)->dispose (object);
}

static void
kaged_services_finalize (GObject *object)
{
  KagedServices *self = (KagedServices *)object;

  g_clear_pointer (&self->api_url, g_free);
  g_clear_pointer (&self->api_error, g_free);

  G_OBJECT_CLASS (kaged_services_parent_class)->finalize (object);
}

static void
kaged_services_get_property (GObject    *object,
                             guint       prop_id,
                             GValue     *value,
                             GParamSpec *pspec)
{
  KagedServices *self = KAGED_SERVICES (object);

  switch (prop_id)
    {
    case PROP_API_URL:
      g_value_set_string (value, self->api_url);
      break;

    case PROP_API_ERROR:
      g_value_set_string (value, self->api_error);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_services_class_init (KagedServicesClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = kaged_services_dispose;
  object_class->finalize = kaged_services_finalize;
  object_class->get_property = kaged_services_get_property;

  properties [PROP_API_URL] =
    g_param_spec_string ("api-url", NULL, NULL,
                         NULL,
                         (G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  properties [PROP_API_ERROR] =
    g_param_spec_string ("api-error", NULL, NULL,
                         NULL,
                         (G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);

  signals [SHOW_SESSION] =
    g_signal_new ("show-session",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, G_TYPE_INT64);
}

static void
kaged_services_init (KagedServices *self)
{
}

/**
 * kaged_services_new:
 * @application: the application whose actions and notifications these are
 * @settings: the application's settings
 * @store: the open conversation store
 *
 * Starts everything that runs behind the window: runs still queued from
 * the last time start again, saved retries resume, and the local HTTP API
 * comes up if the preference says so.
 *
 * Returns: (transfer full): the services
 */
KagedServices *
kaged_services_new (GApplication *application,
                    GSettings    *settings,
                    KagedStore   *store)
{
  static const GActionEntry actions[] = {
    { "retry-now", retry_now_action, "x" },
    { "cancel-retry", cancel_retry_action, "x" },
    { "show-session", show_session_action, "x" },
  };
  g_autoptr(KagedKeyring) keyring = NULL;
  KagedServices *self;

  g_return_val_if_fail (G_IS_APPLICATION (application), NULL);
  g_return_val_if_fail (G_IS_SETTINGS (settings), NULL);
  g_return_val_if_fail (KAGED_IS_STORE (store), NULL);

  self = g_object_new (KAGED_TYPE_SERVICES, NULL);
  g_set_weak_pointer (&self->application, application);
  self->settings = g_object_ref (settings);
  self->store = g_object_ref (store);

  keyring = kaged_secret_keyring_new ();
  self->resolver = kaged_resolver_new (kaged_http_get_default_session (), keyring);
  self->manager = kaged_session_manager_new (store, NULL);
  update_model (self);
  update_spend_limit (self);

  self->coordinator = kaged_retry_coordinator_new (self->manager, NULL, NULL);
  self->notifier = kaged_retry_notifier_new (application, self->coordinator, self->manager);

  g_action_map_add_action_entries (G_ACTION_MAP (application), actions,
                                   G_N_ELEMENTS (actions), self);

  g_signal_connect (settings, "changed", G_CALLBACK (settings_changed_cb), self);

  kaged_session_manager_resume (self->manager);
  update_api (self);

  return self;
}

/**
 * kaged_services_get_manager:
 *
 * Returns: (transfer none): the session manager
 */
KagedSessionManager *
kaged_services_get_manager (KagedServices *self)
{
  g_return_val_if_fail (KAGED_IS_SERVICES (self), NULL);

  return self->manager;
}

/**
 * kaged_services_get_coordinator:
 *
 * Returns: (transfer none): the Tier 2 retries of every session
 */
KagedRetryCoordinator *
kaged_services_get_coordinator (KagedServices *self)
{
  g_return_val_if_fail (KAGED_IS_SERVICES (self), NULL);

  return self->coordinator;
}

const char *
kaged_services_get_api_url (KagedServices *self)
{
  g_return_val_if_fail (KAGED_IS_SERVICES (self), NULL);

  return self->api_url;
}

const char *
kaged_services_get_api_error (KagedServices *self)
{
  g_return_val_if_fail (KAGED_IS_SERVICES (self), NULL);

  return self->api_error;
}

/**
 * kaged_services_shutdown:
 *
 * Stops the API and records the runs in flight as cancelled. Call when
 * the application quits.
 */
void
kaged_services_shutdown (KagedServices *self)
{
  g_return_if_fail (KAGED_IS_SERVICES (self));

  stop_api (self);
  if (self->application != NULL)
    {
      static const char *names[] = { "retry-now", "cancel-retry", "show-session" };

      for (guint i = 0; i < G_N_ELEMENTS (names); i++)
        g_action_map_remove_action (G_ACTION_MAP (self->application), names[i]);
    }
  if (self->manager != NULL)
    kaged_session_manager_shutdown (self->manager);
}
