/* kaged-profile-page.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <adwaita.h>

#include "kaged-core.h"

G_BEGIN_DECLS

#define KAGED_TYPE_PROFILE_PAGE (kaged_profile_page_get_type ())

G_DECLARE_FINAL_TYPE (KagedProfilePage, kaged_profile_page, KAGED, PROFILE_PAGE, GtkBox)

KagedProfilePage *kaged_profile_page_new         (KagedProfiles    *profiles,
                                                  KagedProfile     *profile,
                                                  KagedCore        *core,
                                                  KagedKeyring     *keyring);
KagedProfile     *kaged_profile_page_get_profile (KagedProfilePage *self);

G_END_DECLS
