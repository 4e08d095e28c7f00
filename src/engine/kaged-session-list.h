/* kaged-session-list.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-session-manager.h"

G_BEGIN_DECLS

#define KAGED_TYPE_SESSION_LIST (kaged_session_list_get_type ())

G_DECLARE_FINAL_TYPE (KagedSessionList, kaged_session_list, KAGED, SESSION_LIST, GObject)

KagedSessionList *kaged_session_list_new            (KagedSessionManager  *manager);
KagedSessionManager *kaged_session_list_get_manager (KagedSessionList     *self);
KagedSession     *kaged_session_list_lookup         (KagedSessionList     *self,
                                                     gint64                session_id);
gboolean          kaged_session_list_find           (KagedSessionList     *self,
                                                     gint64                session_id,
                                                     guint                *position);
gboolean          kaged_session_list_rename         (KagedSessionList     *self,
                                                     gint64                session_id,
                                                     const char           *title,
                                                     GError              **error);
void              kaged_session_list_set_hidden     (KagedSessionList     *self,
                                                     gint64                session_id,
                                                     gboolean              hidden);
gboolean          kaged_session_list_delete         (KagedSessionList     *self,
                                                     gint64                session_id,
                                                     GError              **error);

G_END_DECLS
