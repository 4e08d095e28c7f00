/* kaged-api-settings.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include "kaged-api-server-private.h"

G_BEGIN_DECLS

typedef enum
{
  KAGED_API_SETTINGS_PROFILE       = 1 << 0,
  KAGED_API_SETTINGS_MODEL         = 1 << 1,
  KAGED_API_SETTINGS_SYSTEM_PROMPT = 1 << 2,
} KagedApiSettingsMember;

/* The members of a request body, borrowed from its parser; present says
 * which were there (a null one included). */
typedef struct
{
  const char *profile;
  const char *model;
  const char *system_prompt;
  guint       present;
} KagedApiSettings;

gboolean kaged_api_settings_read   (SoupServerMessage    *msg,
                                    JsonObject           *object,
                                    KagedApiSettings     *settings);
gboolean kaged_api_settings_add_session (KagedApiServer  *self,
                                         JsonBuilder     *builder,
                                         KagedSession    *session,
                                         GError         **error);
void     kaged_api_respond_session (KagedApiServer       *self,
                                    SoupServerMessage    *msg,
                                    KagedSession         *session,
                                    guint                 status);
void     kaged_api_patch_session   (KagedApiServer       *self,
                                    SoupServerMessage    *msg,
                                    KagedSession         *session,
                                    JsonObject           *body);

G_END_DECLS
