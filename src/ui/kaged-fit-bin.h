/* kaged-fit-bin.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define KAGED_TYPE_FIT_BIN (kaged_fit_bin_get_type ())

G_DECLARE_FINAL_TYPE (KagedFitBin, kaged_fit_bin, KAGED, FIT_BIN, GtkWidget)

GtkWidget *kaged_fit_bin_new       (void);
GtkWidget *kaged_fit_bin_get_child (KagedFitBin *self);
void       kaged_fit_bin_set_child (KagedFitBin *self,
                                    GtkWidget   *child);

G_END_DECLS
