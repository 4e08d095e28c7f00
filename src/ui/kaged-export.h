/* kaged-export.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

char     *kaged_export_to_markdown (GListModel           *messages,
                                    const char           *title);
void      kaged_export_write_async (GListModel           *messages,
                                    const char           *title,
                                    GFile                *file,
                                    GCancellable         *cancellable,
                                    GAsyncReadyCallback   callback,
                                    gpointer              user_data);
gboolean  kaged_export_write_finish (GAsyncResult        *result,
                                     GError             **error);

G_END_DECLS
