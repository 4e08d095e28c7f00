/* kaged-session-row.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtk/gtk.h>

#include "kaged-retry-coordinator.h"
#include "kaged-session.h"

G_BEGIN_DECLS

#define KAGED_TYPE_SESSION_ROW (kaged_session_row_get_type ())

G_DECLARE_FINAL_TYPE (KagedSessionRow, kaged_session_row, KAGED, SESSION_ROW, GtkWidget)

/*
 * KagedSessionRow is a conversation in the sidebar: its title (renamed in
 * place), a mark while a Tier 2 retry is pending or running (its countdown
 * in the tooltip) and a menu with Rename and Delete. It asks its window
 * through the widget actions `session.rename` ((xs): id, new title) and
 * `session.delete` (x: id).
 */
GtkWidget     *kaged_session_row_new             (KagedRetryCoordinator *coordinator);
KagedSession  *kaged_session_row_get_session     (KagedSessionRow       *self);
void           kaged_session_row_set_session     (KagedSessionRow       *self,
                                                  KagedSession          *session);
void           kaged_session_row_start_rename    (KagedSessionRow       *self);
gboolean       kaged_session_row_get_retry_shown (KagedSessionRow       *self);

G_END_DECLS
