/* kaged-session.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib-object.h>

#include "kaged-enums.h"

G_BEGIN_DECLS

#define KAGED_TYPE_SESSION (kaged_session_get_type ())

G_DECLARE_FINAL_TYPE (KagedSession, kaged_session, KAGED, SESSION, GObject)

KagedSession *kaged_session_new (void);

gint64            kaged_session_get_id         (KagedSession *self);
void              kaged_session_set_id         (KagedSession *self,
                                                gint64 id);
const char *      kaged_session_get_title      (KagedSession *self);
void              kaged_session_set_title      (KagedSession *self,
                                                const char *title);
gint64            kaged_session_get_created_at (KagedSession *self);
void              kaged_session_set_created_at (KagedSession *self,
                                                gint64 created_at);
gint64            kaged_session_get_updated_at (KagedSession *self);
void              kaged_session_set_updated_at (KagedSession *self,
                                                gint64 updated_at);
KagedSessionState kaged_session_get_state      (KagedSession *self);
void              kaged_session_set_state      (KagedSession *self,
                                                KagedSessionState state);

G_END_DECLS
