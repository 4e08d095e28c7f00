/* kaged-source-languages.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtksourceview/gtksource.h>

G_BEGIN_DECLS

gboolean kaged_source_language_get_loaded (GtkSourceLanguage    *language);
gboolean kaged_source_language_id_loaded  (const char           *id);
void     kaged_source_language_load_async (GtkSourceLanguage    *language,
                                           GCancellable         *cancellable,
                                           GAsyncReadyCallback   callback,
                                           gpointer              user_data);
gboolean kaged_source_language_load_finish (GAsyncResult        *result,
                                            GError             **error);

G_END_DECLS
