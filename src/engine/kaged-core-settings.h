/* kaged-core-settings.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include "kaged-core.h"

G_BEGIN_DECLS

KagedSession *kaged_core_create_session_full      (KagedCore            *self,
                                                   const char           *title,
                                                   const char           *profile_id,
                                                   const char           *model,
                                                   const char           *system_prompt,
                                                   GError              **error);
gboolean      kaged_core_get_session_settings     (KagedCore            *self,
                                                   gint64                session_id,
                                                   char                **profile_id,
                                                   char                **model,
                                                   char                **system_prompt,
                                                   GError              **error);
gboolean      kaged_core_set_session_settings     (KagedCore            *self,
                                                   gint64                session_id,
                                                   const char           *profile_id,
                                                   const char           *model,
                                                   const char           *system_prompt,
                                                   GError              **error);
KagedProfile *kaged_core_dup_session_profile      (KagedCore            *self,
                                                   gint64                session_id,
                                                   char                **model);
gboolean      kaged_core_get_run_model            (KagedCore            *self,
                                                   gint64                run_id,
                                                   char                **profile_id,
                                                   char                **profile_name,
                                                   char                **model,
                                                   GError              **error);
char        **kaged_core_dup_cached_models        (KagedCore            *self,
                                                   const char           *profile_id);
void          kaged_core_refresh_models_async     (KagedCore            *self,
                                                   KagedProfile         *profile,
                                                   const char           *profile_id,
                                                   GCancellable         *cancellable,
                                                   GAsyncReadyCallback   callback,
                                                   gpointer              user_data);
char        **kaged_core_refresh_models_finish    (KagedCore            *self,
                                                   GAsyncResult         *result,
                                                   GError              **error);

/* For kaged-core.c: conversations find their profiles among the core's. */
void          _kaged_core_settings_init           (KagedCore            *self);

G_END_DECLS
