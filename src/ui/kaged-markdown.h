/* kaged-markdown.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

typedef enum
{
  KAGED_MARKDOWN_BLOCK_PARAGRAPH,
  KAGED_MARKDOWN_BLOCK_HEADING,
  KAGED_MARKDOWN_BLOCK_LIST,
  KAGED_MARKDOWN_BLOCK_LIST_ITEM,
  KAGED_MARKDOWN_BLOCK_QUOTE,
  KAGED_MARKDOWN_BLOCK_TABLE,
  KAGED_MARKDOWN_BLOCK_TABLE_ROW,
  KAGED_MARKDOWN_BLOCK_TABLE_CELL,
  KAGED_MARKDOWN_BLOCK_CODE,
  KAGED_MARKDOWN_BLOCK_RULE,
} KagedMarkdownBlockType;

typedef enum
{
  KAGED_MARKDOWN_ALIGN_DEFAULT,
  KAGED_MARKDOWN_ALIGN_LEFT,
  KAGED_MARKDOWN_ALIGN_CENTER,
  KAGED_MARKDOWN_ALIGN_RIGHT,
} KagedMarkdownAlign;

typedef enum
{
  KAGED_MARKDOWN_TASK_NONE,
  KAGED_MARKDOWN_TASK_OPEN,
  KAGED_MARKDOWN_TASK_DONE,
} KagedMarkdownTask;

typedef struct _KagedMarkdownBlock KagedMarkdownBlock;

/**
 * KagedMarkdownBlock:
 * @type: what kind of block this is
 * @serial: a number no other block of the same #KagedMarkdown carries; a
 *   block keeps it as long as it is not parsed again
 * @level: for a heading, 1 to 6
 * @start: for an ordered list, the number of its first item
 * @ordered: for a list, whether it is numbered
 * @header: for a table row or cell, whether it is in the table's head
 * @align: for a table cell, its column's alignment
 * @task: for a list item, whether it is a task and whether it is done
 * @markup: for a paragraph, heading or table cell, its text as Pango
 *   markup (links as `<a href>`, as #GtkLabel reads them)
 * @text: for a code block, its code, without the last newline
 * @language: for a code block, the first word of its fence's info string,
 *   or %NULL
 * @children: the blocks inside: items of a list, blocks of an item or a
 *   quote, rows of a table, cells of a row
 *
 * One block of a Markdown document. Blocks are read-only to their users.
 */
struct _KagedMarkdownBlock
{
  KagedMarkdownBlockType  type;
  guint64                 serial;
  guint                   level;
  guint                   start;
  guint                   ordered : 1;
  guint                   header : 1;
  KagedMarkdownAlign      align;
  KagedMarkdownTask       task;
  char                   *markup;
  char                   *text;
  char                   *language;
  GPtrArray              *children;
};

gboolean kaged_markdown_block_equal (const KagedMarkdownBlock *a,
                                     const KagedMarkdownBlock *b);

#define KAGED_TYPE_MARKDOWN (kaged_markdown_get_type ())

G_DECLARE_FINAL_TYPE (KagedMarkdown, kaged_markdown, KAGED, MARKDOWN, GObject)

KagedMarkdown            *kaged_markdown_new              (void);
gboolean                  kaged_markdown_set_text         (KagedMarkdown *self,
                                                           const char    *text);
const char               *kaged_markdown_get_text         (KagedMarkdown *self);
guint                     kaged_markdown_get_n_blocks     (KagedMarkdown *self);
const KagedMarkdownBlock *kaged_markdown_get_block        (KagedMarkdown *self,
                                                           guint          position);
guint                     kaged_markdown_get_n_final      (KagedMarkdown *self);
guint64                   kaged_markdown_get_blocks_built (KagedMarkdown *self);

gboolean                  kaged_markdown_uri_is_safe      (const char    *uri);
char                     *kaged_markdown_close_fence      (const char    *text);
char                     *kaged_markdown_demote_headings  (const char    *text,
                                                           guint          levels);
char                     *kaged_markdown_plain            (const char    *text);

G_END_DECLS
