/* kaged-list-span.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define KAGED_TYPE_LIST_SPAN (kaged_list_span_get_type ())

G_DECLARE_FINAL_TYPE (KagedListSpan, kaged_list_span, KAGED, LIST_SPAN, GObject)

KagedListSpan *kaged_list_span_new            (GListModel    *model,
                                               guint          tail);
GListModel    *kaged_list_span_get_model      (KagedListSpan *self);
guint          kaged_list_span_get_start      (KagedListSpan *self);
guint          kaged_list_span_get_end        (KagedListSpan *self);
gboolean       kaged_list_span_reaches_start  (KagedListSpan *self);
gboolean       kaged_list_span_reaches_end    (KagedListSpan *self);
guint          kaged_list_span_grow_start     (KagedListSpan *self,
                                               guint          n);
guint          kaged_list_span_grow_end       (KagedListSpan *self,
                                               guint          n);
guint          kaged_list_span_shrink_start   (KagedListSpan *self,
                                               guint          n);
guint          kaged_list_span_shrink_end     (KagedListSpan *self,
                                               guint          n);
void           kaged_list_span_show_tail      (KagedListSpan *self);
guint          kaged_list_span_show_around    (KagedListSpan *self,
                                               guint          position,
                                               guint          before,
                                               guint          after);

G_END_DECLS
