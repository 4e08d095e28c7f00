/* kaged-composer.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define KAGED_TYPE_COMPOSER (kaged_composer_get_type ())

G_DECLARE_FINAL_TYPE (KagedComposer, kaged_composer, KAGED, COMPOSER, GtkWidget)

/*
 * KagedComposer is where a message is written: a multi-line text view
 * ("Message") and a Send button, which becomes Stop while a reply streams.
 * Enter sends, Shift+Enter starts a new line, Escape stops.
 *
 * Signals:
 *   ::send (const char *text) — the text to post; the composer keeps it
 *                               until kaged_composer_clear() is called
 *   ::stop ()                 — the streaming reply should end
 *   ::changed ()              — the text changed, by typing or otherwise
 */
GtkWidget  *kaged_composer_new                (void);
char       *kaged_composer_dup_text           (KagedComposer *self);
void        kaged_composer_set_text           (KagedComposer *self,
                                               const char    *text);
void        kaged_composer_clear              (KagedComposer *self);
void        kaged_composer_set_draft          (KagedComposer *self,
                                               const char    *text);
gboolean    kaged_composer_get_running        (KagedComposer *self);
void        kaged_composer_set_running        (KagedComposer *self,
                                               gboolean       running);
const char *kaged_composer_get_disabled_reason (KagedComposer *self);
void        kaged_composer_set_disabled_reason (KagedComposer *self,
                                               const char    *reason);
void        kaged_composer_set_placeholder    (KagedComposer *self,
                                               const char    *placeholder);
void        kaged_composer_send               (KagedComposer *self);
void        kaged_composer_stop               (KagedComposer *self);
void        kaged_composer_focus              (KagedComposer *self);

G_END_DECLS
