/* kaged-desktop.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-desktop"

#include "config.h"

#include "kaged-api-server.h"
#include "kaged-api-token.h"
#include "kaged-desktop.h"
#include "kaged-retry-notifier.h"

struct _KagedDesktop
{
  GObject                parent_instance;

  GApplication          *application;  /* weak: the application owns us */
  GSettings             *settings;
  KagedCore             *core;
  KagedOptions          *options;      /* a provider for this run, or NULL */
  KagedRetryNotifier    *notifier;
};

G_DEFINE_FINAL_TYPE (KagedDesktop, kaged_desktop, G_TYPE_OBJECT)

enum {
  SHOW_SESSION,
  N_SIGNALS
};

static guint signals [N_SIGNALS];

static void
update_api (KagedDesktop *self)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedApiServer) server = NULL;
  g_autofree char *token = NULL;

  if (kaged_core_get_server (self->core) != NULL)
    {
      kaged_core_set_server (self->core, NULL);
      g_message ("Local HTTP API stopped");
    }

  if (!g_settings_get_boolean (self->settings, "api-enabled"))
    {
      kaged_core_set_api_error (self->core, NULL);
      return;
    }

  token = kaged_api_token_load_or_create (NULL, NULL, &error);
  if (token != NULL)
    {
      server = kaged_api_server_new (self->core, token);
      if (!kaged_api_server_listen (server, g_settings_get_uint (self->settings, "api-port"),
                                    &error))
        g_clear_object (&server);
    }

  if (server == NULL)
    {
      g_warning ("The local HTTP API could not be switched on: %s", error->message);
      kaged_core_set_api_error (self->core, error->message);
      return;
    }

  kaged_core_set_server (self->core, KAGED_CORE_SERVER (server));
  g_message ("Local HTTP API listening on %s", kaged_core_get_api_url (self->core));
}

/* A provider given on the command line holds for this run only: it is
 * laid over the default profile as it is at start, and nothing of it is
 * saved. Without one, the core follows the default profile. */
static void
set_profile_for_this_run (KagedDesktop *self)
{
  g_autoptr(KagedProfile) profile = NULL;
  g_autoptr(GError) error = NULL;
  KagedProfiles *profiles = kaged_core_get_profiles (self->core);

  if (self->options == NULL)
    return;

  profile = kaged_options_build_profile (self->options,
                                         profiles != NULL ? kaged_profiles_get_default (profiles)
                                                          : NULL,
                                         &error);
  if (profile == NULL)
    {
      g_warning ("%s", error->message);
      return;
    }

  kaged_core_set_profile (self->core, profile);
}

static void
settings_changed_cb (GSettings    *settings,
                     const char   *key,
                     KagedDesktop *self)
{
  if (g_str_equal (key, "api-enabled") || g_str_equal (key, "api-port"))
    update_api (self);
}

static void
retry_now_action (GSimpleAction *action,
                  GVariant      *parameter,
                  gpointer       user_data)
{
  KagedDesktop *self = user_data;

  /* A retry that resolved meanwhile: nothing to do. */
  kaged_core_retry_now (self->core, g_variant_get_int64 (parameter), NULL);
}

static void
cancel_retry_action (GSimpleAction *action,
                     GVariant      *parameter,
                     gpointer       user_data)
{
  KagedDesktop *self = user_data;

  kaged_core_cancel_retry (self->core, g_variant_get_int64 (parameter), NULL);
}

static void
show_session_action (GSimpleAction *action,
                     GVariant      *parameter,
                     gpointer       user_data)
{
  KagedDesktop *self = user_data;

  if (self->application != NULL)
    g_application_activate (self->application);
  g_signal_emit (self, signals [SHOW_SESSION], 0, g_variant_get_int64 (parameter));
}

static void
kaged_desktop_dispose (GObject *object)
{
  KagedDesktop *self = (KagedDesktop *)object;

  kaged_desktop_shutdown (self);

  if (self->settings != NULL)
    g_signal_handlers_disconnect_by_data (self->settings, self);

  g_clear_object (&self->notifier);
  g_clear_object (&self->core);
  g_clear_object (&self->settings);
  g_clear_weak_pointer (&self->application);

  G_OBJECT_CLASS (kaged_desktop_parent_class)->dispose (object);
}

static void
kaged_desktop_finalize (GObject *object)
{
  KagedDesktop *self = (KagedDesktop *)object;

  if (self->options != NULL)
    {
      kaged_options_clear (self->options);
      g_free (self->options);
    }

  G_OBJECT_CLASS (kaged_desktop_parent_class)->finalize (object);
}

static void
kaged_desktop_class_init (KagedDesktopClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = kaged_desktop_dispose;
  object_class->finalize = kaged_desktop_finalize;

  signals [SHOW_SESSION] =
    g_signal_new ("show-session",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, G_TYPE_INT64);
}

static void
kaged_desktop_init (KagedDesktop *self)
{
}

/**
 * kaged_desktop_new:
 * @application: the application whose actions and notifications these are
 * @settings: the application's settings
 * @core: the running core
 * @options: (nullable): the command line, whose provider options hold for
 *   this run in place of the preferences
 *
 * Ties @core to the desktop: replies come from the default profile of the
 * preferences (each with its spend limit), the local HTTP API comes up if the preference says so, and
 * Tier 2 retries send notifications whose actions it adds to @application.
 *
 * Returns: (transfer full): the link
 */
KagedDesktop *
kaged_desktop_new (GApplication       *application,
                   GSettings          *settings,
                   KagedCore          *core,
                   const KagedOptions *options)
{
  static const GActionEntry actions[] = {
    { "retry-now", retry_now_action, "x" },
    { "cancel-retry", cancel_retry_action, "x" },
    { "show-session", show_session_action, "x" },
  };
  KagedDesktop *self;

  g_return_val_if_fail (G_IS_APPLICATION (application), NULL);
  g_return_val_if_fail (G_IS_SETTINGS (settings), NULL);
  g_return_val_if_fail (KAGED_IS_CORE (core), NULL);

  self = g_object_new (KAGED_TYPE_DESKTOP, NULL);
  g_set_weak_pointer (&self->application, application);
  self->settings = g_object_ref (settings);
  self->core = g_object_ref (core);
  if (options != NULL && kaged_options_has_provider (options))
    {
      self->options = g_new0 (KagedOptions, 1);
      self->options->provider_kind = g_strdup (options->provider_kind);
      self->options->provider_url = g_strdup (options->provider_url);
      self->options->model = g_strdup (options->model);
      self->options->api_key_env = g_strdup (options->api_key_env);
    }

  if (kaged_core_get_profiles (core) == NULL)
    {
      g_autoptr(KagedProfiles) profiles = kaged_profiles_new (settings);

      kaged_core_set_profiles (core, profiles);
    }
  set_profile_for_this_run (self);

  if (kaged_core_get_coordinator (core) != NULL)
    self->notifier = kaged_retry_notifier_new (application, kaged_core_get_coordinator (core),
                                               kaged_core_get_manager (core));

  g_action_map_add_action_entries (G_ACTION_MAP (application), actions,
                                   G_N_ELEMENTS (actions), self);

  g_signal_connect (settings, "changed", G_CALLBACK (settings_changed_cb), self);

  update_api (self);

  return self;
}

/**
 * kaged_desktop_get_core:
 *
 * Returns: (transfer none): the core
 */
KagedCore *
kaged_desktop_get_core (KagedDesktop *self)
{
  g_return_val_if_fail (KAGED_IS_DESKTOP (self), NULL);

  return self->core;
}

/**
 * kaged_desktop_shutdown:
 *
 * Removes the actions and shuts the core down: the API stops and the runs
 * in flight are recorded cancelled. Call when the application quits.
 */
void
kaged_desktop_shutdown (KagedDesktop *self)
{
  g_return_if_fail (KAGED_IS_DESKTOP (self));

  if (self->application != NULL)
    {
      static const char *names[] = { "retry-now", "cancel-retry", "show-session" };

      for (guint i = 0; i < G_N_ELEMENTS (names); i++)
        g_action_map_remove_action (G_ACTION_MAP (self->application), names[i]);
    }
  if (self->core != NULL)
    kaged_core_shutdown (self->core);
}
