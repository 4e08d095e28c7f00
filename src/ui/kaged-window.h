/* kaged-window.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <adwaita.h>

#include "kaged-core.h"

G_BEGIN_DECLS

#define KAGED_TYPE_WINDOW (kaged_window_get_type ())

G_DECLARE_FINAL_TYPE (KagedWindow, kaged_window, KAGED, WINDOW, AdwApplicationWindow)

KagedWindow *kaged_window_new                  (GtkApplication *application);
void         kaged_window_set_core             (KagedWindow    *self,
                                                KagedCore      *core);
void         kaged_window_show_session         (KagedWindow    *self,
                                                gint64          session_id);
gint64       kaged_window_get_session_id       (KagedWindow    *self);
void         kaged_window_delete_session       (KagedWindow    *self,
                                                gint64          session_id);
void         kaged_window_export_to_file       (KagedWindow    *self,
                                                GFile          *file);
gboolean     kaged_window_edit                 (KagedWindow    *self,
                                                gint64          message_id,
                                                const char     *content);

G_END_DECLS
