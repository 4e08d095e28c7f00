/* kaged-core-settings.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-core"

#include "config.h"

#include "kaged-core-settings.h"
#include "kaged-models.h"

/*
 * The core's side of per-conversation settings (profile, model, system
 * prompt), of the profile and model each run used, and of the model lists
 * of profiles, which the store caches: the window and the HTTP API use
 * these, never the store or the session manager directly.
 */

static KagedProfile *
lookup_saved_profile (const char *profile_id,
                      gpointer    user_data)
{
  KagedProfiles *profiles = kaged_core_get_profiles (user_data);

  return profiles != NULL ? kaged_profiles_lookup (profiles, profile_id) : NULL;
}

void
_kaged_core_settings_init (KagedCore *self)
{
  /* The manager belongs to the core: the core outlives every lookup. */
  kaged_session_manager_set_profile_lookup (kaged_core_get_manager (self),
                                            lookup_saved_profile, self, NULL);
}

/**
 * kaged_core_create_session_full:
 * @title: (nullable): the title, or %NULL to take it from the first message
 * @profile_id: (nullable): a profile's id, or %NULL for the default profile
 * @model: (nullable): a model, or %NULL for the profile's
 * @system_prompt: (nullable): a system prompt, or %NULL for none
 *
 * Creates a session set up as asked. A profile that does not exist is
 * %KAGED_ENGINE_ERROR_UNKNOWN_PROFILE, and no session is created.
 *
 * Returns: (transfer full): the new session, or %NULL with @error set
 */
KagedSession *
kaged_core_create_session_full (KagedCore   *self,
                                const char  *title,
                                const char  *profile_id,
                                const char  *model,
                                const char  *system_prompt,
                                GError     **error)
{
  KagedSessionManager *manager;
  g_autoptr(KagedSession) session = NULL;
  gint64 session_id;

  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  manager = kaged_core_get_manager (self);
  session = kaged_core_create_session (self, title, error);
  if (session == NULL)
    return NULL;

  if (profile_id == NULL && model == NULL && system_prompt == NULL)
    return g_steal_pointer (&session);

  session_id = kaged_session_get_id (session);
  if (!kaged_session_manager_set_session_settings (manager, session_id, profile_id, model,
                                                   system_prompt, error))
    {
      /* A request that fails changes nothing. */
      kaged_store_delete_session (kaged_core_get_store (self), session_id, NULL);
      return NULL;
    }

  return g_steal_pointer (&session);
}

/**
 * kaged_core_get_session_settings:
 *
 * See kaged_session_manager_get_session_settings().
 */
gboolean
kaged_core_get_session_settings (KagedCore   *self,
                                 gint64       session_id,
                                 char       **profile_id,
                                 char       **model,
                                 char       **system_prompt,
                                 GError     **error)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), FALSE);

  return kaged_session_manager_get_session_settings (kaged_core_get_manager (self), session_id,
                                                     profile_id, model, system_prompt, error);
}

/**
 * kaged_core_set_session_settings:
 *
 * See kaged_session_manager_set_session_settings().
 */
gboolean
kaged_core_set_session_settings (KagedCore   *self,
                                 gint64       session_id,
                                 const char  *profile_id,
                                 const char  *model,
                                 const char  *system_prompt,
                                 GError     **error)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), FALSE);

  return kaged_session_manager_set_session_settings (kaged_core_get_manager (self), session_id,
                                                     profile_id, model, system_prompt, error);
}

/**
 * kaged_core_dup_session_profile:
 * @model: (out) (optional): the model the session's next run asks for
 *
 * Returns: (transfer full) (nullable): the profile the session's next run
 *   goes through: the one it names, or the default one when it names none
 *   or one that is gone; %NULL when there is no profile at all
 */
KagedProfile *
kaged_core_dup_session_profile (KagedCore  *self,
                                gint64      session_id,
                                char      **model)
{
  g_autofree char *profile_id = NULL;
  g_autofree char *session_model = NULL;
  KagedProfile *profile = NULL;

  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);

  if (model != NULL)
    *model = NULL;

  if (!kaged_core_get_session_settings (self, session_id, &profile_id, &session_model, NULL, NULL))
    g_clear_pointer (&profile_id, g_free);

  if (profile_id != NULL)
    profile = lookup_saved_profile (profile_id, self);
  if (profile == NULL)
    {
      profile = kaged_core_get_profile (self);
      g_clear_pointer (&session_model, g_free);
    }
  if (profile == NULL)
    return NULL;

  if (model != NULL)
    *model = session_model != NULL ? g_steal_pointer (&session_model)
                                   : g_strdup (kaged_profile_get_model (profile));

  return g_object_ref (profile);
}

/**
 * kaged_core_get_run_model:
 *
 * See kaged_session_manager_get_run_model().
 */
gboolean
kaged_core_get_run_model (KagedCore   *self,
                          gint64       run_id,
                          char       **profile_id,
                          char       **profile_name,
                          char       **model,
                          GError     **error)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), FALSE);

  return kaged_session_manager_get_run_model (kaged_core_get_manager (self), run_id,
                                              profile_id, profile_name, model, error);
}

/**
 * kaged_core_dup_cached_models:
 *
 * Returns: (transfer full) (nullable): the models last listed for the
 *   profile @profile_id, or %NULL when they never were
 */
char **
kaged_core_dup_cached_models (KagedCore  *self,
                              const char *profile_id)
{
  g_autoptr(GError) error = NULL;
  char **models;

  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);
  g_return_val_if_fail (profile_id != NULL, NULL);

  models = kaged_store_get_profile_models (kaged_core_get_store (self), profile_id, NULL, &error);
  if (error != NULL)
    g_debug ("The models of the profile “%s” could not be read: %s", profile_id, error->message);

  return models;
}

static void
refresh_cb (GObject      *object,
            GAsyncResult *result,
            gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  KagedCore *self = g_task_get_source_object (task);
  const char *profile_id = g_task_get_task_data (task);
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) models = NULL;

  models = kaged_profile_list_models_finish (KAGED_PROFILE (object), result, &error);
  if (models == NULL)
    {
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }

  if (!kaged_store_set_profile_models (kaged_core_get_store (self), profile_id,
                                       (const char * const *)models, &error))
    g_debug ("The models of the profile “%s” could not be kept: %s", profile_id, error->message);

  g_task_return_pointer (task, g_steal_pointer (&models), (GDestroyNotify)g_strfreev);
}

/**
 * kaged_core_refresh_models_async:
 * @profile: the profile to ask
 * @profile_id: the id its list is kept under
 *
 * Lists @profile's models (kaged_profile_list_models_async()) and keeps
 * the list for kaged_core_dup_cached_models().
 */
void
kaged_core_refresh_models_async (KagedCore           *self,
                                 KagedProfile        *profile,
                                 const char          *profile_id,
                                 GCancellable        *cancellable,
                                 GAsyncReadyCallback  callback,
                                 gpointer             user_data)
{
  GTask *task;

  g_return_if_fail (KAGED_IS_CORE (self));
  g_return_if_fail (KAGED_IS_PROFILE (profile));
  g_return_if_fail (profile_id != NULL);

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_core_refresh_models_async);
  g_task_set_task_data (task, g_strdup (profile_id), g_free);

  kaged_profile_list_models_async (profile, kaged_core_get_resolver (self), cancellable,
                                   refresh_cb, task);
}

/**
 * kaged_core_refresh_models_finish:
 *
 * Returns: (transfer full): the models, or %NULL with @error set as by
 *   kaged_profile_list_models_finish(); the cached list is then unchanged
 */
char **
kaged_core_refresh_models_finish (KagedCore     *self,
                                  GAsyncResult  *result,
                                  GError       **error)
{
  g_return_val_if_fail (KAGED_IS_CORE (self), NULL);
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_core_refresh_models_async, NULL);

  return g_task_propagate_pointer (G_TASK (result), error);
}
