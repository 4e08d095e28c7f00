/* kaged-markdown-view.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtk/gtk.h>

#include "kaged-markdown.h"

G_BEGIN_DECLS

#define KAGED_TYPE_MARKDOWN_VIEW (kaged_markdown_view_get_type ())

G_DECLARE_FINAL_TYPE (KagedMarkdownView, kaged_markdown_view, KAGED, MARKDOWN_VIEW, GtkWidget)

GtkWidget     *kaged_markdown_view_new               (void);
const char    *kaged_markdown_view_get_text          (KagedMarkdownView *self);
void           kaged_markdown_view_set_text          (KagedMarkdownView *self,
                                                      const char        *text);
KagedMarkdown *kaged_markdown_view_get_document      (KagedMarkdownView *self);
guint64        kaged_markdown_view_get_widgets_built (KagedMarkdownView *self);
guint64        kaged_markdown_view_get_group_layouts (KagedMarkdownView *self);
guint64        kaged_markdown_view_get_width_measures (KagedMarkdownView *self);

gboolean       kaged_markdown_view_focus_past_text   (GtkWidget         *widget,
                                                      GtkDirectionType   direction);

G_END_DECLS
