/* kaged-store-settings.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include <string.h>

#include "kaged-store-private.h"

/*
 * What a conversation asks for: the profile (by its id), the model and the
 * system prompt, each %NULL for "the default" (the default profile, its
 * default model, no system prompt). Every run records the profile (id and
 * name, so its details still read after the profile is gone) and the model
 * it actually used. The model lists of profiles are cached here too, one
 * name a line, with the time they were fetched.
 */

/* Version 6. Nothing is filled in: existing conversations follow the
 * default profile, and runs before this version used an unknown one. */
const char _kaged_store_schema_v6[] =
  "ALTER TABLE sessions ADD COLUMN profile_id TEXT;\n"
  "ALTER TABLE sessions ADD COLUMN model TEXT;\n"
  "ALTER TABLE sessions ADD COLUMN system_prompt TEXT;\n"
  "ALTER TABLE runs ADD COLUMN profile_id TEXT;\n"
  "ALTER TABLE runs ADD COLUMN profile_name TEXT;\n"
  "ALTER TABLE runs ADD COLUMN model TEXT;\n"
  "CREATE TABLE profile_models (\n"
  "  profile_id TEXT PRIMARY KEY,\n"
  "  models     TEXT NOT NULL,\n"
  "  fetched_at INTEGER NOT NULL\n"
  ") WITHOUT ROWID;\n";

static char *
dup_column (sqlite3_stmt *stmt,
            int           col)
{
  const char *text = _kaged_store_column_text (stmt, col);

  return g_strdup (text);
}

static const char *
empty_to_null (const char *text)
{
  return text != NULL && text[0] != '\0' ? text : NULL;
}

/**
 * kaged_store_get_session_settings:
 * @profile_id: (out) (optional) (nullable): the profile, %NULL for the default
 * @model: (out) (optional) (nullable): the model, %NULL for the profile's
 * @system_prompt: (out) (optional) (nullable): the system prompt, or %NULL
 *
 * Returns: %TRUE, or %FALSE with @error set (%KAGED_STORE_ERROR_NOT_FOUND
 *   when there is no such session)
 */
gboolean
kaged_store_get_session_settings (KagedStore  *self,
                                  gint64       session_id,
                                  char       **profile_id,
                                  char       **model,
                                  char       **system_prompt,
                                  GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_SESSION_SETTINGS_GET, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, session_id, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error))
    return FALSE;

  if (!has_row)
    return _kaged_store_set_not_found (error, MISSING_SESSION, session_id);

  if (profile_id != NULL)
    *profile_id = dup_column (stmt, 0);
  if (model != NULL)
    *model = dup_column (stmt, 1);
  if (system_prompt != NULL)
    *system_prompt = dup_column (stmt, 2);

  return TRUE;
}

/**
 * kaged_store_set_session_settings:
 * @profile_id: (nullable): the profile, %NULL or empty for the default
 * @model: (nullable): the model, %NULL or empty for the profile's
 * @system_prompt: (nullable): the system prompt, %NULL or empty for none
 *
 * Sets all three at once. The session's place in the list stays.
 */
gboolean
kaged_store_set_session_settings (KagedStore  *self,
                                  gint64       session_id,
                                  const char  *profile_id,
                                  const char  *model,
                                  const char  *system_prompt,
                                  GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_SESSION_SETTINGS_SET, error);
  return stmt != NULL &&
         _kaged_store_bind_int64 (self, stmt, 1, session_id, error) &&
         _kaged_store_bind_text (self, stmt, 2, empty_to_null (profile_id), error) &&
         _kaged_store_bind_text (self, stmt, 3, empty_to_null (model), error) &&
         _kaged_store_bind_text (self, stmt, 4, empty_to_null (system_prompt), error) &&
         _kaged_store_step_done (self, stmt, error) &&
         _kaged_store_expect_changed (self, MISSING_SESSION, session_id, error);
}

/**
 * kaged_store_get_run_model:
 * @profile_id: (out) (optional) (nullable): the profile the run used
 * @profile_name: (out) (optional) (nullable): its name then
 * @model: (out) (optional) (nullable): the model the run asked for
 *
 * All three are %NULL for a run that never started, or one from before
 * runs recorded them.
 */
gboolean
kaged_store_get_run_model (KagedStore  *self,
                           gint64       run_id,
                           char       **profile_id,
                           char       **profile_name,
                           char       **model,
                           GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_RUN_MODEL_GET, error);
  if (stmt == NULL ||
      !_kaged_store_bind_int64 (self, stmt, 1, run_id, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error))
    return FALSE;

  if (!has_row)
    return _kaged_store_set_not_found (error, MISSING_RUN, run_id);

  if (profile_id != NULL)
    *profile_id = dup_column (stmt, 0);
  if (profile_name != NULL)
    *profile_name = dup_column (stmt, 1);
  if (model != NULL)
    *model = dup_column (stmt, 2);

  return TRUE;
}

gboolean
kaged_store_set_run_model (KagedStore  *self,
                           gint64       run_id,
                           const char  *profile_id,
                           const char  *profile_name,
                           const char  *model,
                           GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_RUN_MODEL_SET, error);
  return stmt != NULL &&
         _kaged_store_bind_int64 (self, stmt, 1, run_id, error) &&
         _kaged_store_bind_text (self, stmt, 2, profile_id, error) &&
         _kaged_store_bind_text (self, stmt, 3, profile_name, error) &&
         _kaged_store_bind_text (self, stmt, 4, model, error) &&
         _kaged_store_step_done (self, stmt, error) &&
         _kaged_store_expect_changed (self, MISSING_RUN, run_id, error);
}

/**
 * kaged_store_get_profile_models:
 * @fetched_at: (out) (optional): when the list was fetched (epoch ms)
 *
 * Returns: (transfer full) (nullable): the cached model list of
 *   @profile_id; %NULL without an error when there is none
 */
char **
kaged_store_get_profile_models (KagedStore  *self,
                                const char  *profile_id,
                                gint64      *fetched_at,
                                GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  gboolean has_row = FALSE;
  const char *text;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);
  g_return_val_if_fail (profile_id != NULL, NULL);

  stmt = _kaged_store_get_stmt (self, STMT_PROFILE_MODELS_GET, error);
  if (stmt == NULL ||
      !_kaged_store_bind_text (self, stmt, 1, profile_id, error) ||
      !_kaged_store_step_row (self, stmt, &has_row, error) ||
      !has_row)
    return NULL;

  text = _kaged_store_column_text (stmt, 0);
  if (fetched_at != NULL)
    *fetched_at = sqlite3_column_int64 (stmt, 1);

  if (text == NULL || text[0] == '\0')
    return g_new0 (char *, 1);
  return g_strsplit (text, "\n", -1);
}

gboolean
kaged_store_set_profile_models (KagedStore          *self,
                                const char          *profile_id,
                                const char * const  *models,
                                GError             **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  g_autoptr(GString) text = g_string_new (NULL);

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (profile_id != NULL, FALSE);

  for (guint i = 0; models != NULL && models[i] != NULL; i++)
    {
      if (models[i][0] == '\0' || strchr (models[i], '\n') != NULL)
        continue;
      if (text->len > 0)
        g_string_append_c (text, '\n');
      g_string_append (text, models[i]);
    }

  stmt = _kaged_store_get_stmt (self, STMT_PROFILE_MODELS_SET, error);
  return stmt != NULL &&
         _kaged_store_bind_text (self, stmt, 1, profile_id, error) &&
         _kaged_store_bind_text (self, stmt, 2, text->str, error) &&
         _kaged_store_bind_int64 (self, stmt, 3, _kaged_store_now_ms (self), error) &&
         _kaged_store_step_done (self, stmt, error);
}

/**
 * kaged_store_delete_profile_models:
 *
 * Forgets the cached model list of @profile_id, if there is one.
 */
gboolean
kaged_store_delete_profile_models (KagedStore  *self,
                                   const char  *profile_id,
                                   GError     **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (profile_id != NULL, FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_PROFILE_MODELS_DELETE, error);
  return stmt != NULL &&
         _kaged_store_bind_text (self, stmt, 1, profile_id, error) &&
         _kaged_store_step_done (self, stmt, error);
}

static gpointer
profile_id_from_row (sqlite3_stmt *stmt)
{
  return g_strdup (_kaged_store_column_text (stmt, 0));
}

/**
 * kaged_store_keep_profile_models:
 * @profile_ids: the profiles that exist
 *
 * Forgets the cached model lists of every profile not in @profile_ids.
 */
gboolean
kaged_store_keep_profile_models (KagedStore          *self,
                                 const char * const  *profile_ids,
                                 GError             **error)
{
  g_autoptr(KagedStoreCachedStmt) stmt = NULL;
  g_autoptr(GPtrArray) cached = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), FALSE);
  g_return_val_if_fail (profile_ids != NULL, FALSE);

  stmt = _kaged_store_get_stmt (self, STMT_PROFILE_MODELS_IDS, error);
  if (stmt == NULL)
    return FALSE;
  cached = _kaged_store_collect_rows (self, stmt, profile_id_from_row, g_free, error);
  g_clear_pointer (&stmt, _kaged_store_cached_stmt_release);
  if (cached == NULL)
    return FALSE;

  for (guint i = 0; i < cached->len; i++)
    {
      const char *id = g_ptr_array_index (cached, i);

      if (id != NULL && !g_strv_contains (profile_ids, id) &&
          !kaged_store_delete_profile_models (self, id, error))
        return FALSE;
    }

  return TRUE;
}
