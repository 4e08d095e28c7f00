/* kaged-application.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <adwaita.h>

#include "kaged-core.h"
#include "kaged-profile.h"
#include "kaged-store.h"

G_BEGIN_DECLS

#define KAGED_TYPE_APPLICATION (kaged_application_get_type ())

G_DECLARE_FINAL_TYPE (KagedApplication, kaged_application, KAGED, APPLICATION, AdwApplication)

KagedApplication *kaged_application_new          (void);
const char       *kaged_application_get_data_dir (KagedApplication *self);
KagedStore       *kaged_application_get_store    (KagedApplication *self);
KagedProfile     *kaged_application_dup_profile  (KagedApplication *self);
KagedCore        *kaged_application_get_core     (KagedApplication *self);

G_END_DECLS
