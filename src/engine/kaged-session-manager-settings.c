/* kaged-session-manager-settings.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-engine"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "kaged-session-manager-private.h"

/*
 * What each conversation asks for: a profile (by id), a model and a system
 * prompt, each unset for the default — the default profile, that
 * profile's model, the manager's system prompt. A run reads them when it
 * starts, goes through that profile with that model, and records which it
 * used. Providers of conversations that differ from the default are kept,
 * one for each profile and model, until the profiles change.
 */

static KagedProfile *
lookup_profile (KagedSessionManager *self,
                const char          *profile_id)
{
  if (profile_id == NULL || self->lookup_profile == NULL)
    return NULL;

  return self->lookup_profile (profile_id, self->lookup_data);
}

/**
 * kaged_session_manager_set_profile_lookup:
 * @lookup: (nullable): finds a profile by its id
 *
 * Sets how the profiles conversations name are found. Providers built for
 * earlier profiles are forgotten.
 */
void
kaged_session_manager_set_profile_lookup (KagedSessionManager    *self,
                                          KagedProfileLookupFunc  lookup,
                                          gpointer                user_data,
                                          GDestroyNotify          destroy)
{
  g_return_if_fail (KAGED_IS_SESSION_MANAGER (self));

  if (self->lookup_destroy != NULL)
    self->lookup_destroy (self->lookup_data);

  self->lookup_profile = lookup;
  self->lookup_data = user_data;
  self->lookup_destroy = destroy;

  if (self->providers != NULL)
    g_hash_table_remove_all (self->providers);
}

/**
 * kaged_session_manager_get_session_settings:
 * @profile_id: (out) (optional) (nullable): the profile's id, %NULL for the default
 * @model: (out) (optional) (nullable): the model, %NULL for the profile's
 * @system_prompt: (out) (optional) (nullable): the system prompt, or %NULL
 */
gboolean
kaged_session_manager_get_session_settings (KagedSessionManager  *self,
                                            gint64                session_id,
                                            char                **profile_id,
                                            char                **model,
                                            char                **system_prompt,
                                            GError              **error)
{
  GError *store_error = NULL;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), FALSE);

  if (!kaged_store_get_session_settings (self->store, session_id, profile_id, model,
                                         system_prompt, &store_error))
    return _kaged_session_manager_propagate_store_error (error, store_error);

  return TRUE;
}

/**
 * kaged_session_manager_set_session_settings:
 * @profile_id: (nullable): a profile's id, or %NULL (or empty) for the default
 * @model: (nullable): a model, or %NULL (or empty) for the profile's
 * @system_prompt: (nullable): the system prompt, or %NULL (or empty) for none
 *
 * Sets what the conversation's next runs use; a run already going keeps
 * what it started with. A profile that does not exist is
 * %KAGED_ENGINE_ERROR_UNKNOWN_PROFILE, and nothing changes.
 */
gboolean
kaged_session_manager_set_session_settings (KagedSessionManager  *self,
                                            gint64                session_id,
                                            const char           *profile_id,
                                            const char           *model,
                                            const char           *system_prompt,
                                            GError              **error)
{
  GError *store_error = NULL;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), FALSE);

  if (profile_id != NULL && profile_id[0] != '\0' && lookup_profile (self, profile_id) == NULL)
    {
      g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_UNKNOWN_PROFILE,
                   _("There is no provider profile “%s”"), profile_id);
      return FALSE;
    }

  if ((system_prompt != NULL && !g_utf8_validate (system_prompt, -1, NULL)) ||
      (model != NULL && (!g_utf8_validate (model, -1, NULL) || strchr (model, '\n') != NULL)))
    {
      g_set_error_literal (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_INVALID_CONTENT,
                           _("The model or system prompt is not valid text"));
      return FALSE;
    }

  if ((system_prompt != NULL && strlen (system_prompt) > self->max_content) ||
      (model != NULL && strlen (model) > KAGED_ENGINE_MAX_MODEL_NAME))
    {
      g_set_error_literal (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_TOO_LARGE,
                           _("The model name or system prompt is too long"));
      return FALSE;
    }

  if (!kaged_store_set_session_settings (self->store, session_id, profile_id, model,
                                         system_prompt, &store_error))
    return _kaged_session_manager_propagate_store_error (error, store_error);

  _kaged_session_manager_emit_session_changed (self, session_id);
  return TRUE;
}

/**
 * kaged_session_manager_get_run_model:
 * @profile_id: (out) (optional) (nullable): the id of the profile the run used
 * @profile_name: (out) (optional) (nullable): that profile's name then
 * @model: (out) (optional) (nullable): the model it asked for
 *
 * All are %NULL for a run that has not started.
 */
gboolean
kaged_session_manager_get_run_model (KagedSessionManager  *self,
                                     gint64                run_id,
                                     char                **profile_id,
                                     char                **profile_name,
                                     char                **model,
                                     GError              **error)
{
  GError *store_error = NULL;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), FALSE);

  if (!kaged_store_get_run_model (self->store, run_id, profile_id, profile_name, model,
                                  &store_error))
    return _kaged_session_manager_propagate_store_error (error, store_error);

  return TRUE;
}

/* A profile like @profile but for @model. */
static KagedProfile *
profile_with_model (KagedProfile *profile,
                    const char   *model)
{
  KagedProfile *copy = kaged_profile_copy (profile);

  kaged_profile_set_model (copy, model);

  return copy;
}

/* Everything the provider of @profile is built from. */
static char *
provider_key (KagedProfile *profile)
{
  const char *env = kaged_profile_get_api_key_env (profile);
  const char *key_id = kaged_profile_get_key_id (profile);

  return g_strdup_printf ("%d\n%s\n%s\n%s\n%s",
                          (int)kaged_profile_get_kind (profile),
                          kaged_profile_get_base_url (profile),
                          kaged_profile_get_model (profile),
                          env != NULL ? env : "",
                          key_id != NULL ? key_id : "");
}

/*
 * Chooses what the run of @state goes through: its conversation's
 * profile (the default when it names none, or one that is gone) with the
 * conversation's model (the profile's when it names none), and its
 * system prompt. The run records the profile and model when it ends.
 */
gboolean
_kaged_run_state_choose_profile (KagedRunState  *state,
                                 GError        **error)
{
  KagedSessionManager *self = state->manager;
  g_autofree char *profile_id = NULL;
  g_autofree char *model = NULL;
  g_autofree char *system_prompt = NULL;
  g_autoptr(GError) local_error = NULL;
  KagedProfile *profile = NULL;
  gint64 session_id = kaged_run_get_session_id (state->run);

  if (!kaged_store_get_session_settings (self->store, session_id, &profile_id, &model,
                                         &system_prompt, &local_error))
    {
      g_propagate_error (error, g_steal_pointer (&local_error));
      return FALSE;
    }

  if (profile_id != NULL)
    {
      profile = lookup_profile (self, profile_id);
      if (profile == NULL)
        {
          /* Its profile was removed: the conversation goes on with the
           * default one, and that one's model. */
          g_debug ("Session %" G_GINT64_FORMAT ": the profile “%s” is gone, using the default",
                   session_id, profile_id);
          g_clear_pointer (&profile_id, g_free);
          g_clear_pointer (&model, g_free);
        }
    }

  if (profile == NULL)
    profile = self->profile;

  g_clear_object (&state->profile);
  g_clear_pointer (&state->provider_key, g_free);

  if (model != NULL && g_strcmp0 (model, kaged_profile_get_model (profile)) != 0)
    state->profile = profile_with_model (profile, model);
  else
    state->profile = g_object_ref (profile);

  if (state->profile != self->profile)
    state->provider_key = provider_key (state->profile);

  g_free (state->system_prompt);
  state->system_prompt = system_prompt != NULL ? g_steal_pointer (&system_prompt)
                                               : g_strdup (self->system_prompt);

  /* The run records the id of the profile it went through, the default's too. */
  g_free (state->profile_id);
  state->profile_id = g_strdup (kaged_profile_get_id (profile));

  return TRUE;
}

/**
 * kaged_session_manager_get_draft:
 * @session_id: a conversation, or 0 for one not started yet
 * @text: (out) (transfer full) (nullable): what was written there and not
 *   sent, or %NULL
 */
gboolean
kaged_session_manager_get_draft (KagedSessionManager  *self,
                                 gint64                session_id,
                                 char                **text,
                                 GError              **error)
{
  GError *store_error = NULL;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), FALSE);

  if (!kaged_store_get_draft (self->store, session_id, text, &store_error))
    return _kaged_session_manager_propagate_store_error (error, store_error);

  return TRUE;
}

/**
 * kaged_session_manager_set_draft:
 * @session_id: a conversation, or 0 for one not started yet
 * @text: (nullable): what was written there and not sent; %NULL or empty
 *   for nothing
 *
 * Keeps @text for the next time the conversation is shown, also after
 * Kaged restarts.
 */
gboolean
kaged_session_manager_set_draft (KagedSessionManager  *self,
                                 gint64                session_id,
                                 const char           *text,
                                 GError              **error)
{
  GError *store_error = NULL;

  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (self), FALSE);
  g_return_val_if_fail (session_id >= 0, FALSE);

  if (!kaged_store_set_draft (self->store, session_id, text, &store_error))
    return _kaged_session_manager_propagate_store_error (error, store_error);

  return TRUE;
}
