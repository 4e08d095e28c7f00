/* kaged-code-block.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtksourceview/gtksource.h>

G_BEGIN_DECLS

#define KAGED_TYPE_CODE_BLOCK (kaged_code_block_get_type ())

G_DECLARE_FINAL_TYPE (KagedCodeBlock, kaged_code_block, KAGED, CODE_BLOCK, GtkWidget)

GtkWidget       *kaged_code_block_new          (void);
const char      *kaged_code_block_get_code     (KagedCodeBlock *self);
void             kaged_code_block_set_code     (KagedCodeBlock *self,
                                                const char     *code);
const char      *kaged_code_block_get_language (KagedCodeBlock *self);
void             kaged_code_block_set_language (KagedCodeBlock *self,
                                                const char     *language);
GtkSourceBuffer *kaged_code_block_get_buffer   (KagedCodeBlock *self);
void             kaged_code_block_copy         (KagedCodeBlock *self);

void             kaged_code_block_warm_up           (GdkDisplay *display,
                                                     int         scale);
gboolean         kaged_code_block_get_warmed_up     (void);
gboolean         kaged_code_block_get_language_kept (const char *id);

G_END_DECLS
