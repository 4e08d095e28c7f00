/* kaged-icons.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include "kaged-icons.h"

/**
 * kaged_icon_preload:
 * @display: the display the icon will show on
 * @name: a symbolic icon's name, as a button or an image is given it
 * @scale: the scale of the window it will show in
 *
 * Starts loading the icon a button or image of @name shows at the usual
 * size, on one of GTK's worker threads. Otherwise the frame that first
 * shows the icon reads and renders its file.
 *
 * The icon theme keeps the icons it loaded last by name, size, scale and
 * lookup flags; the look-up here is the one GTK's images make once their
 * style is known, so they find this one.
 *
 * Returns: (transfer full): the icon
 */
GtkIconPaintable *
kaged_icon_preload (GdkDisplay *display,
                    const char *name,
                    int         scale)
{
  g_autoptr(GIcon) icon = NULL;

  g_return_val_if_fail (GDK_IS_DISPLAY (display), NULL);
  g_return_val_if_fail (name != NULL, NULL);

  icon = g_themed_icon_new (name);

  return gtk_icon_theme_lookup_by_gicon (gtk_icon_theme_get_for_display (display), icon,
                                         KAGED_ICON_SIZE, MAX (scale, 1),
                                         gtk_widget_get_default_direction (),
                                         GTK_ICON_LOOKUP_PRELOAD);
}

/**
 * kaged_icon_preload_style:
 * @display: the display the icon will show on
 * @name: the name of an icon the style sheet draws, as a spinner's
 * @scale: the scale of the window it will show in
 *
 * Loads an icon the style sheet draws (`-gtk-icontheme()`), such as a
 * spinner's, at the usual size. GTK looks these up without preloading and
 * reads the file in the frame that first draws one; this reads it now.
 *
 * Returns: (transfer full): the icon
 */
GtkIconPaintable *
kaged_icon_preload_style (GdkDisplay *display,
                          const char *name,
                          int         scale)
{
  GtkIconPaintable *icon;
  g_autoptr(GtkSnapshot) snapshot = NULL;
  g_autoptr(GskRenderNode) node = NULL;

  g_return_val_if_fail (GDK_IS_DISPLAY (display), NULL);
  g_return_val_if_fail (name != NULL, NULL);

  icon = gtk_icon_theme_lookup_icon (gtk_icon_theme_get_for_display (display), name, NULL,
                                     KAGED_ICON_SIZE, MAX (scale, 1), GTK_TEXT_DIR_NONE, 0);
  snapshot = gtk_snapshot_new ();
  gdk_paintable_snapshot (GDK_PAINTABLE (icon), GDK_SNAPSHOT (snapshot),
                          KAGED_ICON_SIZE, KAGED_ICON_SIZE);
  node = gtk_snapshot_free_to_node (g_steal_pointer (&snapshot));

  return icon;
}
