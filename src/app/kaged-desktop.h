/* kaged-desktop.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-core.h"
#include "kaged-options.h"

G_BEGIN_DECLS

#define KAGED_TYPE_DESKTOP (kaged_desktop_get_type ())

G_DECLARE_FINAL_TYPE (KagedDesktop, kaged_desktop, KAGED, DESKTOP, GObject)

/*
 * KagedDesktop ties the running KagedCore of the window to the desktop:
 * its provider (unless the command line gives one for this run), spend
 * limit and local HTTP API follow the preferences, and Tier 2 retries send
 * notifications. It adds the application actions `app.retry-now`,
 * `app.cancel-retry` and `app.show-session` (target: a session id, int64).
 * It builds none of the engine: the core does.
 *
 * Signals: ::show-session (gint64 session_id)
 */
KagedDesktop *kaged_desktop_new      (GApplication       *application,
                                      GSettings          *settings,
                                      KagedCore          *core,
                                      const KagedOptions *options);
KagedCore    *kaged_desktop_get_core (KagedDesktop       *self);
void          kaged_desktop_shutdown (KagedDesktop       *self);

G_END_DECLS
