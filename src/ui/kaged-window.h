/* kaged-window.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define KAGED_TYPE_WINDOW (kaged_window_get_type ())

G_DECLARE_FINAL_TYPE (KagedWindow, kaged_window, KAGED, WINDOW, AdwApplicationWindow)

KagedWindow *kaged_window_new (GtkApplication *application);

G_END_DECLS
