/* kaged-code-view.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtksourceview/gtksource.h>

G_BEGIN_DECLS

#define KAGED_TYPE_CODE_VIEW (kaged_code_view_get_type ())

G_DECLARE_FINAL_TYPE (KagedCodeView, kaged_code_view, KAGED, CODE_VIEW, GtkSourceView)

GtkWidget *kaged_code_view_new           (void);
void       kaged_code_view_text_replaced (KagedCodeView *self);

G_END_DECLS
