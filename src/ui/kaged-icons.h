/* kaged-icons.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define KAGED_ICON_SIZE 16

GtkIconPaintable *kaged_icon_preload (GdkDisplay *display,
                                      const char *name,
                                      int         scale);
GtkIconPaintable *kaged_icon_preload_style (GdkDisplay *display,
                                            const char *name,
                                            int         scale);

G_END_DECLS
