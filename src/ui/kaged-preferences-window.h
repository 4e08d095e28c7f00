/* kaged-preferences-window.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <adwaita.h>

#include "kaged-core.h"

G_BEGIN_DECLS

#define KAGED_TYPE_PREFERENCES_WINDOW (kaged_preferences_window_get_type ())

G_DECLARE_FINAL_TYPE (KagedPreferencesWindow, kaged_preferences_window, KAGED, PREFERENCES_WINDOW,
                      AdwPreferencesWindow)

KagedPreferencesWindow *kaged_preferences_window_new          (GtkWindow              *transient_for);
void                    kaged_preferences_window_set_core     (KagedPreferencesWindow *self,
                                                               KagedCore              *core);
gboolean                kaged_preferences_window_show_profile (KagedPreferencesWindow *self,
                                                               const char             *id);

G_END_DECLS
