/* kaged-api-settings.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * A session's profile, model and system prompt on the wire: read on
 * `POST /api/v1/sessions` and `PATCH /api/v1/sessions/:id`, and written
 * into every session the API shows (a single session, the list, the
 * `session.changed` event) as `profile`, `model` and `system_prompt`
 * (null: the default). Only the profile's id travels; a
 * profile's key never does.
 */

#define G_LOG_DOMAIN "kaged-api"

#include "config.h"

#include <string.h>

#include "kaged-api-settings.h"
#include "kaged-api-wire.h"
#include "kaged-core-settings.h"

static const char * const members[] = { "profile", "model", "system_prompt" };

/**
 * kaged_api_settings_read:
 * @settings: (out caller-allocates): what @object says
 *
 * Reads the optional members `profile`, `model` and `system_prompt`, each
 * a string or null. On a wrong type, answers 400 and returns %FALSE.
 */
gboolean
kaged_api_settings_read (SoupServerMessage *msg,
                         JsonObject        *object,
                         KagedApiSettings  *settings)
{
  const char **values[] = { &settings->profile, &settings->model, &settings->system_prompt };

  memset (settings, 0, sizeof *settings);

  if (object == NULL)
    return TRUE;

  for (guint i = 0; i < G_N_ELEMENTS (members); i++)
    {
      if (!kaged_api_read_string_member (msg, object, members[i], TRUE, values[i]))
        return FALSE;
      if (json_object_has_member (object, members[i]))
        settings->present |= 1 << i;
    }

  return TRUE;
}

/**
 * kaged_api_settings_add_session:
 *
 * Writes @session, its settings included, into @builder: the same object
 * for a single session, the list and the event stream.
 *
 * Returns: %FALSE with @error set when the settings could not be read
 *   (nothing is written then)
 */
gboolean
kaged_api_settings_add_session (KagedApiServer  *self,
                                JsonBuilder     *builder,
                                KagedSession    *session,
                                GError         **error)
{
  g_autofree char *profile_id = NULL;
  g_autofree char *model = NULL;
  g_autofree char *system_prompt = NULL;

  if (!kaged_core_get_session_settings (self->core, kaged_session_get_id (session),
                                        &profile_id, &model, &system_prompt, error))
    return FALSE;

  kaged_api_wire_add_session (builder, session, profile_id, model, system_prompt);
  return TRUE;
}

/**
 * kaged_api_respond_session:
 *
 * Answers with @session, its settings included.
 */
void
kaged_api_respond_session (KagedApiServer    *self,
                           SoupServerMessage *msg,
                           KagedSession      *session,
                           guint              status)
{
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(GError) error = NULL;

  if (!kaged_api_settings_add_session (self, builder, session, &error))
    {
      kaged_api_respond_engine_error (msg, error);
      return;
    }

  kaged_api_respond_json (msg, status, builder);
}

/**
 * kaged_api_patch_session:
 *
 * `PATCH /api/v1/sessions/:id` `{profile, model, system_prompt}`: each
 * member given is set, null for the default; one left out stays, except
 * that a new profile without a model goes back to that profile's model.
 */
void
kaged_api_patch_session (KagedApiServer    *self,
                         SoupServerMessage *msg,
                         KagedSession      *session,
                         JsonObject        *body)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *profile_id = NULL;
  g_autofree char *model = NULL;
  g_autofree char *system_prompt = NULL;
  gint64 session_id = kaged_session_get_id (session);
  KagedApiSettings settings;

  if (!kaged_api_settings_read (msg, body, &settings))
    return;

  if (!kaged_core_get_session_settings (self->core, session_id,
                                        &profile_id, &model, &system_prompt, &error))
    {
      kaged_api_respond_engine_error (msg, error);
      return;
    }

  if (settings.present & KAGED_API_SETTINGS_PROFILE)
    {
      if (g_strcmp0 (profile_id, settings.profile) != 0 &&
          !(settings.present & KAGED_API_SETTINGS_MODEL))
        g_clear_pointer (&model, g_free);
      g_free (profile_id);
      profile_id = g_strdup (settings.profile);
    }
  if (settings.present & KAGED_API_SETTINGS_MODEL)
    {
      g_free (model);
      model = g_strdup (settings.model);
    }
  if (settings.present & KAGED_API_SETTINGS_SYSTEM_PROMPT)
    {
      g_free (system_prompt);
      system_prompt = g_strdup (settings.system_prompt);
    }

  if (!kaged_core_set_session_settings (self->core, session_id,
                                        profile_id, model, system_prompt, &error))
    {
      kaged_api_respond_engine_error (msg, error);
      return;
    }

  kaged_api_respond_session (self, msg, session, SOUP_STATUS_OK);
}
