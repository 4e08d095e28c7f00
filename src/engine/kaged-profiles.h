/* kaged-profiles.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-keyring.h"
#include "kaged-profile.h"

G_BEGIN_DECLS

#define KAGED_PROFILES_ERROR (kaged_profiles_error_quark ())

/**
 * KagedProfilesError:
 * @KAGED_PROFILES_ERROR_NOT_FOUND: there is no profile with that id
 * @KAGED_PROFILES_ERROR_LAST_PROFILE: the last profile cannot be removed
 */
typedef enum
{
  KAGED_PROFILES_ERROR_NOT_FOUND,
  KAGED_PROFILES_ERROR_LAST_PROFILE,
} KagedProfilesError;

#define KAGED_PROFILE_SCHEMA_ID BASE_APPLICATION_ID ".Profile"

#define KAGED_TYPE_PROFILES (kaged_profiles_get_type ())

G_DECLARE_FINAL_TYPE (KagedProfiles, kaged_profiles, KAGED, PROFILES, GObject)

/*
 * KagedProfiles: the saved provider profiles, a GListModel of
 * KagedProfile in the order of the `profiles` key. Each item is live: its
 * properties and the relocatable settings at
 * /io/github/kaged/Kaged/profiles/<id>/ follow each other both ways. The
 * single provider of older settings becomes the profile "default" the
 * first time profiles are read. There is always at least one profile, and
 * one of them is the default.
 *
 * Properties: default-profile (KagedProfile, the one new replies come
 *             from; notified when another becomes the default).
 * Signals: profile-removed (the id of a profile that left the list, here
 *          or elsewhere).
 */
GQuark         kaged_profiles_error_quark    (void);
KagedProfiles *kaged_profiles_new            (GSettings            *settings);
GSettings     *kaged_profiles_get_settings   (KagedProfiles        *self);
KagedKeyring  *kaged_profiles_get_keyring    (KagedProfiles        *self);
void           kaged_profiles_set_keyring    (KagedProfiles        *self,
                                              KagedKeyring         *keyring);
KagedProfile  *kaged_profiles_lookup         (KagedProfiles        *self,
                                              const char           *id);
KagedProfile  *kaged_profiles_get_default    (KagedProfiles        *self);
void           kaged_profiles_set_default    (KagedProfiles        *self,
                                              const char           *id);
KagedProfile  *kaged_profiles_add            (KagedProfiles        *self,
                                              KagedProfile         *profile);
gboolean       kaged_profiles_remove         (KagedProfiles        *self,
                                              const char           *id,
                                              GError              **error);
void           kaged_profiles_remove_async   (KagedProfiles        *self,
                                              const char           *id,
                                              GCancellable         *cancellable,
                                              GAsyncReadyCallback   callback,
                                              gpointer              user_data);
gboolean       kaged_profiles_remove_finish  (KagedProfiles        *self,
                                              GAsyncResult         *result,
                                              GError              **error);

G_END_DECLS
