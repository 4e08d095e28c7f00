/* kaged-model-chooser.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtk/gtk.h>

#include "kaged-core.h"

G_BEGIN_DECLS

#define KAGED_TYPE_MODEL_CHOOSER (kaged_model_chooser_get_type ())

G_DECLARE_FINAL_TYPE (KagedModelChooser, kaged_model_chooser, KAGED, MODEL_CHOOSER, GtkWidget)

GtkWidget  *kaged_model_chooser_new         (void);
void        kaged_model_chooser_set_narrow  (KagedModelChooser *self,
                                             gboolean           narrow);
void        kaged_model_chooser_set_core    (KagedModelChooser *self,
                                             KagedCore         *core);
void        kaged_model_chooser_set_session (KagedModelChooser *self,
                                             gint64             session_id);
const char *kaged_model_chooser_get_label   (KagedModelChooser *self);

G_END_DECLS
