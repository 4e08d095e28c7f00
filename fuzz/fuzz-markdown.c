/* fuzz-markdown.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Feeds arbitrary text to the Markdown parser, whole and streamed in
 * pieces, and checks that both give the same blocks, that all markup is
 * valid UTF-8 and that nothing crashes.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "kaged-markdown.h"

int LLVMFuzzerTestOneInput (const guint8 *data,
                            size_t        size);

static void
check_block (const KagedMarkdownBlock *block)
{
  if (block->markup != NULL && !g_utf8_validate (block->markup, -1, NULL))
    abort ();
  if (block->text != NULL && !g_utf8_validate (block->text, -1, NULL))
    abort ();

  for (guint i = 0; block->children != NULL && i < block->children->len; i++)
    check_block (g_ptr_array_index (block->children, i));
}

/* Whether every \1 (a search match's start) is followed by its \2 on
 * the same line, as a search's snippets have them; with @per_line FALSE,
 * only that they alternate. */
static gboolean
marks_paired (const char *text,
              gboolean    per_line)
{
  gboolean open = FALSE;

  for (const char *p = text; *p != '\0'; p++)
    {
      if ((*p == '\001' && open) || (*p == '\002' && !open) || (*p == '\n' && open && per_line))
        return FALSE;
      if (*p == '\001' || *p == '\002')
        open = !open;
    }

  return !open;
}

int
LLVMFuzzerTestOneInput (const guint8 *data,
                        size_t        size)
{
  g_autofree char *text = NULL;
  g_autoptr(KagedMarkdown) whole = kaged_markdown_new ();
  g_autoptr(KagedMarkdown) streamed = kaged_markdown_new ();
  g_autofree char *closing = NULL;
  gsize step;
  gsize length;

  if (size < 1)
    return 0;

  /* The first byte chooses the size of the streamed pieces. */
  step = 1 + data[0] % 16;
  text = g_strndup ((const char *)data + 1, size - 1);
  length = strlen (text);

  kaged_markdown_set_text (whole, text);

  for (gsize end = step; ; end += step)
    {
      g_autofree char *prefix = g_strndup (text, MIN (end, length));

      kaged_markdown_set_text (streamed, prefix);
      if (end >= length)
        break;
    }

  if (kaged_markdown_get_n_blocks (whole) != kaged_markdown_get_n_blocks (streamed))
    abort ();

  for (guint i = 0; i < kaged_markdown_get_n_blocks (whole); i++)
    {
      const KagedMarkdownBlock *block = kaged_markdown_get_block (whole, i);

      check_block (block);
      if (!kaged_markdown_block_equal (block, kaged_markdown_get_block (streamed, i)))
        abort ();
    }

  closing = kaged_markdown_close_fence (text);

  /* Demoting headings adds '#'s and touches no fence. */
  {
    g_autofree char *same = kaged_markdown_demote_headings (text, 0);
    g_autofree char *demoted = kaged_markdown_demote_headings (text, 2);
    g_autofree char *demoted_closing = kaged_markdown_close_fence (demoted);

    if (strcmp (same, text) != 0 || strlen (demoted) < length ||
        g_strcmp0 (closing, demoted_closing) != 0)
      abort ();
  }

  /* Plain text leaves out (but for a link target a search marked, which
   * it closes), and keeps no more of a search's marks than there were. */
  {
    g_autofree char *plain = kaged_markdown_plain (text);
    gsize marks = 0, plain_marks = 0, targets = 0;

    for (const char *p = text; *p != '\0'; p++)
      {
        marks += *p == '\001' || *p == '\002';
        targets += p[0] == ']' && p[1] == '(';
      }
    for (const char *p = plain; *p != '\0'; p++)
      plain_marks += *p == '\001' || *p == '\002';
    if (strlen (plain) > strlen (text) + targets || plain_marks > marks ||
        (marks_paired (text, TRUE) && !marks_paired (plain, FALSE)) ||
        (g_utf8_validate (text, -1, NULL) && !g_utf8_validate (plain, -1, NULL)))
      abort ();
  }

  return 0;
}
