/* test-markdown.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <string.h>

#include "kaged-markdown.h"

static KagedMarkdown *
parse (const char *text)
{
  KagedMarkdown *md = kaged_markdown_new ();

  kaged_markdown_set_text (md, text);
  return md;
}

static const KagedMarkdownBlock *
child (const KagedMarkdownBlock *block,
       guint                     i)
{
  g_assert_nonnull (block->children);
  g_assert_cmpuint (i, <, block->children->len);
  return g_ptr_array_index (block->children, i);
}

static void
test_headings (void)
{
  g_autoptr(KagedMarkdown) md = parse ("# Title\n\nSome text.\n\n### Smaller *one*\n");
  const KagedMarkdownBlock *block;

  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 3);

  block = kaged_markdown_get_block (md, 0);
  g_assert_cmpint (block->type, ==, KAGED_MARKDOWN_BLOCK_HEADING);
  g_assert_cmpuint (block->level, ==, 1);
  g_assert_cmpstr (block->markup, ==, "Title");

  block = kaged_markdown_get_block (md, 1);
  g_assert_cmpint (block->type, ==, KAGED_MARKDOWN_BLOCK_PARAGRAPH);
  g_assert_cmpstr (block->markup, ==, "Some text.");

  block = kaged_markdown_get_block (md, 2);
  g_assert_cmpint (block->type, ==, KAGED_MARKDOWN_BLOCK_HEADING);
  g_assert_cmpuint (block->level, ==, 3);
  g_assert_cmpstr (block->markup, ==, "Smaller <i>one</i>");
}

static void
test_lists (void)
{
  g_autoptr(KagedMarkdown) md = parse ("- one\n- two\n  1. inner\n  2. **second**\n\n"
                                        "3. three\n4. four\n\n- [ ] open\n- [x] done\n");
  const KagedMarkdownBlock *list;
  const KagedMarkdownBlock *item;
  const KagedMarkdownBlock *inner;

  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 3);

  list = kaged_markdown_get_block (md, 0);
  g_assert_cmpint (list->type, ==, KAGED_MARKDOWN_BLOCK_LIST);
  g_assert_false (list->ordered);
  g_assert_cmpuint (list->children->len, ==, 2);

  item = child (list, 0);
  g_assert_cmpint (item->type, ==, KAGED_MARKDOWN_BLOCK_LIST_ITEM);
  g_assert_cmpint (child (item, 0)->type, ==, KAGED_MARKDOWN_BLOCK_PARAGRAPH);
  g_assert_cmpstr (child (item, 0)->markup, ==, "one");

  item = child (list, 1);
  g_assert_cmpuint (item->children->len, ==, 2);
  g_assert_cmpstr (child (item, 0)->markup, ==, "two");
  inner = child (item, 1);
  g_assert_cmpint (inner->type, ==, KAGED_MARKDOWN_BLOCK_LIST);
  g_assert_true (inner->ordered);
  g_assert_cmpuint (inner->start, ==, 1);
  g_assert_cmpstr (child (child (inner, 1), 0)->markup, ==, "<b>second</b>");

  list = kaged_markdown_get_block (md, 1);
  g_assert_true (list->ordered);
  g_assert_cmpuint (list->start, ==, 3);
  g_assert_cmpuint (list->children->len, ==, 2);

  list = kaged_markdown_get_block (md, 2);
  g_assert_cmpint (child (list, 0)->task, ==, KAGED_MARKDOWN_TASK_OPEN);
  g_assert_cmpint (child (list, 1)->task, ==, KAGED_MARKDOWN_TASK_DONE);
  g_assert_cmpstr (child (child (list, 1), 0)->markup, ==, "done");
}

static void
test_emphasis (void)
{
  g_autoptr(KagedMarkdown) md = parse ("*a* _b_ **c** __d__ ~~e~~ ***f***");

  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 1);
  g_assert_cmpstr (kaged_markdown_get_block (md, 0)->markup, ==,
                   "<i>a</i> <i>b</i> <b>c</b> <b>d</b> <s>e</s> <i><b>f</b></i>");
}

static void
test_links (void)
{
  g_autoptr(KagedMarkdown) md = NULL;

  md = parse ("[GNOME](https://gnome.org/?a=1&b=\"2\") and <https://example.com> "
              "and www.example.org and [run](javascript:alert(1)) and [file](file:///etc/passwd)");
  g_assert_cmpstr (kaged_markdown_get_block (md, 0)->markup, ==,
                   "<a href=\"https://gnome.org/?a=1&amp;b=&quot;2&quot;\">GNOME</a> and "
                   "<a href=\"https://example.com\">https://example.com</a> and "
                   "<a href=\"http://www.example.org\">www.example.org</a> and "
                   "run and file");

  g_assert_true (kaged_markdown_uri_is_safe ("https://gnome.org"));
  g_assert_true (kaged_markdown_uri_is_safe ("mailto:someone@example.com"));
  g_assert_false (kaged_markdown_uri_is_safe ("file:///etc/passwd"));
  g_assert_false (kaged_markdown_uri_is_safe ("javascript:alert(1)"));
  g_assert_false (kaged_markdown_uri_is_safe ("relative/page.html"));
}

static void
test_tables (void)
{
  g_autoptr(KagedMarkdown) md = parse ("| Name | Count |\n|:-----|------:|\n| a&b | 1 |\n| `x` | 22 |\n");
  const KagedMarkdownBlock *table;
  const KagedMarkdownBlock *row;

  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 1);
  table = kaged_markdown_get_block (md, 0);
  g_assert_cmpint (table->type, ==, KAGED_MARKDOWN_BLOCK_TABLE);
  g_assert_cmpuint (table->children->len, ==, 3);

  row = child (table, 0);
  g_assert_cmpint (row->type, ==, KAGED_MARKDOWN_BLOCK_TABLE_ROW);
  g_assert_true (row->header);
  g_assert_cmpuint (row->children->len, ==, 2);
  g_assert_cmpstr (child (row, 0)->markup, ==, "Name");
  g_assert_true (child (row, 0)->header);
  g_assert_cmpint (child (row, 0)->align, ==, KAGED_MARKDOWN_ALIGN_LEFT);
  g_assert_cmpint (child (row, 1)->align, ==, KAGED_MARKDOWN_ALIGN_RIGHT);

  row = child (table, 1);
  g_assert_false (row->header);
  g_assert_false (child (row, 0)->header);
  g_assert_cmpstr (child (row, 0)->markup, ==, "a&amp;b");

  row = child (table, 2);
  g_assert_cmpstr (child (row, 0)->markup, ==, "<span font_family=\"monospace\" bgcolor=\"#80808026\">x</span>");
  g_assert_cmpstr (child (row, 1)->markup, ==, "22");
}

static void
test_block_quotes (void)
{
  g_autoptr(KagedMarkdown) md = parse ("> quoted *words*\n>\n> > nested\n\nafter\n");
  const KagedMarkdownBlock *quote;

  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 2);
  quote = kaged_markdown_get_block (md, 0);
  g_assert_cmpint (quote->type, ==, KAGED_MARKDOWN_BLOCK_QUOTE);
  g_assert_cmpuint (quote->children->len, ==, 2);
  g_assert_cmpstr (child (quote, 0)->markup, ==, "quoted <i>words</i>");
  g_assert_cmpint (child (quote, 1)->type, ==, KAGED_MARKDOWN_BLOCK_QUOTE);
  g_assert_cmpstr (child (child (quote, 1), 0)->markup, ==, "nested");
  g_assert_cmpstr (kaged_markdown_get_block (md, 1)->markup, ==, "after");
}

/* Inline code is set in the monospace font on a tint that reads in light
 * and dark styles. */
static void
test_inline_code (void)
{
  g_autoptr(KagedMarkdown) md = parse ("Call `g_free (p) < 0 && x` or ``a ` b``.");

  g_assert_cmpstr (kaged_markdown_get_block (md, 0)->markup, ==,
                   "Call <span font_family=\"monospace\" bgcolor=\"#80808026\">g_free (p) &lt; 0 &amp;&amp; x</span> or "
                   "<span font_family=\"monospace\" bgcolor=\"#80808026\">a ` b</span>.");
}

static void
test_fenced_code (void)
{
  g_autoptr(KagedMarkdown) md = parse ("Before\n\n```python title=x\nif a < b:\n\n    print(\"<&>\")\n```\n\n"
                                        "~~~\nplain\n~~~\n\n    indented\n");
  const KagedMarkdownBlock *code;

  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 4);

  code = kaged_markdown_get_block (md, 1);
  g_assert_cmpint (code->type, ==, KAGED_MARKDOWN_BLOCK_CODE);
  g_assert_cmpstr (code->language, ==, "python");
  g_assert_cmpstr (code->text, ==, "if a < b:\n\n    print(\"<&>\")");
  g_assert_null (code->markup);

  code = kaged_markdown_get_block (md, 2);
  g_assert_cmpint (code->type, ==, KAGED_MARKDOWN_BLOCK_CODE);
  g_assert_null (code->language);
  g_assert_cmpstr (code->text, ==, "plain");

  code = kaged_markdown_get_block (md, 3);
  g_assert_cmpint (code->type, ==, KAGED_MARKDOWN_BLOCK_CODE);
  g_assert_cmpstr (code->text, ==, "indented");
}

static void
test_raw_html (void)
{
  g_autoptr(KagedMarkdown) md = parse ("<div onclick=\"x()\">\n<b>bold?</b>\n</div>\n\n"
                                        "Inline <span foreground=\"red\">red</span> &lt;tag&gt; &copy; &#x26; &bogus;\n\n"
                                        "<!-- comment -->\n");
  const KagedMarkdownBlock *block;

  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 3);

  block = kaged_markdown_get_block (md, 0);
  g_assert_cmpint (block->type, ==, KAGED_MARKDOWN_BLOCK_PARAGRAPH);
  g_assert_cmpstr (block->markup, ==,
                   "&lt;div onclick=&quot;x()&quot;&gt;\n&lt;b&gt;bold?&lt;/b&gt;\n&lt;/div&gt;");

  block = kaged_markdown_get_block (md, 1);
  g_assert_cmpstr (block->markup, ==,
                   "Inline &lt;span foreground=&quot;red&quot;&gt;red&lt;/span&gt; "
                   "&lt;tag&gt; © &amp; &amp;bogus;");

  block = kaged_markdown_get_block (md, 2);
  g_assert_cmpstr (block->markup, ==, "&lt;!-- comment --&gt;");
}

static void
test_escaping (void)
{
  g_autoptr(KagedMarkdown) md = parse ("1 < 2 && 3 > 2 'quoted' \"double\"\n\n# A <b> & C\n");

  g_assert_cmpstr (kaged_markdown_get_block (md, 0)->markup, ==,
                   "1 &lt; 2 &amp;&amp; 3 &gt; 2 &apos;quoted&apos; &quot;double&quot;");
  g_assert_cmpstr (kaged_markdown_get_block (md, 1)->markup, ==, "A &lt;b&gt; &amp; C");
}

static void
test_invalid_utf8 (void)
{
  /* A reply cut inside a character still gives valid markup. */
  g_autoptr(KagedMarkdown) md = parse ("caf\xc3");

  g_assert_true (g_utf8_validate (kaged_markdown_get_block (md, 0)->markup, -1, NULL));
}

static void
test_rule (void)
{
  g_autoptr(KagedMarkdown) md = parse ("above\n\n---\n\nbelow\n");

  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 3);
  g_assert_cmpint (kaged_markdown_get_block (md, 1)->type, ==, KAGED_MARKDOWN_BLOCK_RULE);
}

/* --- streaming ------------------------------------------------------------------- */

static void
test_append_reparses_tail (void)
{
  g_autoptr(KagedMarkdown) md = kaged_markdown_new ();
  g_autoptr(GString) text = g_string_new (NULL);
  const KagedMarkdownBlock *first;
  guint64 first_serial;
  guint64 built;

  for (guint i = 0; i < 20; i++)
    g_string_append_printf (text, "Paragraph %u with *some* words.\n\n", i);
  g_string_append (text, "The last one");

  g_assert_true (kaged_markdown_set_text (md, text->str));
  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 21);
  g_assert_cmpuint (kaged_markdown_get_n_final (md), ==, 20);
  first = kaged_markdown_get_block (md, 0);
  first_serial = first->serial;

  /* 100 more deltas, each into the last paragraph: every parse builds
   * that paragraph alone. */
  built = kaged_markdown_get_blocks_built (md);
  for (guint i = 0; i < 100; i++)
    {
      g_string_append (text, " more");
      g_assert_true (kaged_markdown_set_text (md, text->str));
    }
  g_assert_cmpuint (kaged_markdown_get_blocks_built (md) - built, ==, 100);
  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 21);
  g_assert_true (kaged_markdown_get_block (md, 0) == first);
  g_assert_cmpuint (kaged_markdown_get_block (md, 0)->serial, ==, first_serial);

  /* The same text again is no change. */
  built = kaged_markdown_get_blocks_built (md);
  g_assert_false (kaged_markdown_set_text (md, text->str));
  g_assert_cmpuint (kaged_markdown_get_blocks_built (md), ==, built);

  /* A new paragraph makes the previous one final: the previous one is
   * parsed alone, then with the new one's first line and that line alone
   * (to check that the split holds), then the new one as the tail; from
   * then on only the new one. */
  g_string_append (text, ".\n\nNew paragraph\n");
  kaged_markdown_set_text (md, text->str);
  g_string_append (text, "continues");
  kaged_markdown_set_text (md, text->str);
  g_assert_cmpuint (kaged_markdown_get_blocks_built (md) - built, ==, 6);
  g_assert_cmpuint (kaged_markdown_get_n_final (md), ==, 21);
  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 22);
  g_assert_cmpstr (kaged_markdown_get_block (md, 21)->markup, ==, "New paragraph\ncontinues");

  /* Text that is not a continuation is parsed from the start, its split
   * checked the same way. */
  built = kaged_markdown_get_blocks_built (md);
  kaged_markdown_set_text (md, "Other\n\ntext");
  g_assert_cmpuint (kaged_markdown_get_blocks_built (md) - built, ==, 5);
  g_assert_cmpuint (kaged_markdown_get_n_final (md), ==, 1);
  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 2);
  g_assert_cmpstr (kaged_markdown_get_block (md, 0)->markup, ==, "Other");
}

static void
test_fence_stays_open (void)
{
  g_autoptr(KagedMarkdown) md = kaged_markdown_new ();
  const KagedMarkdownBlock *code;

  /* Blank lines inside an open fence are not boundaries. */
  kaged_markdown_set_text (md, "Intro\n\n```c\nint a;\n\nint b;\n\nint c;\n");
  g_assert_cmpuint (kaged_markdown_get_n_final (md), ==, 1);
  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 2);
  code = kaged_markdown_get_block (md, 1);
  g_assert_cmpint (code->type, ==, KAGED_MARKDOWN_BLOCK_CODE);
  g_assert_cmpstr (code->text, ==, "int a;\n\nint b;\n\nint c;");

  kaged_markdown_set_text (md, "Intro\n\n```c\nint a;\n\nint b;\n\nint c;\n```\n\nDone\n");
  g_assert_cmpuint (kaged_markdown_get_n_final (md), ==, 2);
  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 3);
  g_assert_cmpstr (kaged_markdown_get_block (md, 1)->language, ==, "c");
}

static void
test_definitions_parse_whole (void)
{
  g_autoptr(KagedMarkdown) md = kaged_markdown_new ();

  /* A link defined after its use: the paragraph that uses it is not final. */
  kaged_markdown_set_text (md, "See [the site].\n\nMore text\n\nAnd more");
  g_assert_cmpuint (kaged_markdown_get_n_final (md), ==, 2);
  kaged_markdown_set_text (md, "See [the site].\n\nMore text\n\nAnd more\n\n[the site]: https://gnome.org\n");
  g_assert_cmpuint (kaged_markdown_get_n_final (md), ==, 0);
  g_assert_cmpstr (kaged_markdown_get_block (md, 0)->markup, ==,
                   "See <a href=\"https://gnome.org\">the site</a>.");
}

static void
test_code_does_not_define_links (void)
{
  g_autoptr(KagedMarkdown) md = kaged_markdown_new ();

  /* `]:` in code at the margin is code, not a link definition: the blocks
   * before it stay final. */
  kaged_markdown_set_text (md, "Intro\n\n```python\nfor x in items[1:]:\n    print(x)\n```\n\nAfter");
  g_assert_cmpuint (kaged_markdown_get_n_final (md), ==, 2);
  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 3);
}

static void
test_fence_ended_by_list_item (void)
{
  g_autoptr(KagedMarkdown) md = kaged_markdown_new ();
  g_autoptr(KagedMarkdown) whole = kaged_markdown_new ();
  const char *text = "1. one\n   ```sh\n\"x\n   ```\n\nfoo\n\nbar\n";

  /* The line at the margin ends the item and its fence; the second fence
   * line opens a fence that holds the rest. */
  kaged_markdown_set_text (whole, text);
  for (gsize end = 1; end <= strlen (text); end++)
    {
      g_autofree char *prefix = g_strndup (text, end);

      kaged_markdown_set_text (md, prefix);
    }

  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, kaged_markdown_get_n_blocks (whole));
  for (guint i = 0; i < kaged_markdown_get_n_blocks (whole); i++)
    g_assert_true (kaged_markdown_block_equal (kaged_markdown_get_block (md, i),
                                               kaged_markdown_get_block (whole, i)));
  g_assert_cmpint (kaged_markdown_get_block (whole, kaged_markdown_get_n_blocks (whole) - 1)->type, ==,
                   KAGED_MARKDOWN_BLOCK_CODE);
}

static void
test_loose_list_stays_open (void)
{
  g_autoptr(KagedMarkdown) md = kaged_markdown_new ();

  kaged_markdown_set_text (md, "1. one\n\n2. two\n\n3. three\n");
  g_assert_cmpuint (kaged_markdown_get_n_final (md), ==, 0);
  g_assert_cmpuint (kaged_markdown_get_n_blocks (md), ==, 1);
  g_assert_cmpuint (kaged_markdown_get_block (md, 0)->children->len, ==, 3);
}

/* Streaming any document in pieces gives the blocks a parse of the whole
 * text gives. */
static const char *streamed_documents[] = {
  "# Title\n\nText with **bold** and `code`.\n\n- a\n- b\n\n  continued\n\n- c\n\nEnd.\n",
  "Intro\n\n```python\ndef f():\n\n    return 1\n\nprint(f())\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> quote\n\n> second\n",
  "1. one\n\n   ```sh\n   ls\n\n   pwd\n   ```\n\n2. two\n\nAfter the list.\n\n---\n\n* x\n  * y\n\n    z\n\nLast",
  "Line one\nline two  \nline three\n\n    indented code\n\n    more code\nText\n\n~~~~\n```\n~~~\n~~~~\n\nend",
  "<div>\n\nhtml?\n\n</div>\n\n***\n\n[a](https://a.example) <https://b.example>\n",
  /* Found by fuzz/fuzz-markdown.c. */
  "&[a]\n\n[   ```\n\n2. lw\n   ```\n\n--\n\f* x\n  * yx\n\nconn[a]\n\n[  \na]: ht]\n",
  "I\n\na | b |\n|---|---|\n| 11\n```\n---|\n\n`` M11\n```\n\n\n`````\n`````\n\nn+/\n`/\n",
  "0. one\n\n     `one\n\n     ```0. one\n\n``0. one\n\n--|---|\n| 1rn 1 | @l",
};

static void
test_streaming_matches_whole (void)
{
  for (guint d = 0; d < G_N_ELEMENTS (streamed_documents); d++)
    {
      const char *doc = streamed_documents[d];
      gsize size = strlen (doc);
      g_autoptr(KagedMarkdown) whole = parse (doc);

      for (gsize step = 1; step <= 7; step += 3)
        {
          g_autoptr(KagedMarkdown) streamed = kaged_markdown_new ();

          for (gsize end = step; ; end += step)
            {
              g_autofree char *prefix = g_strndup (doc, MIN (end, size));

              kaged_markdown_set_text (streamed, prefix);
              if (end >= size)
                break;
            }

          g_assert_cmpuint (kaged_markdown_get_n_blocks (streamed), ==,
                            kaged_markdown_get_n_blocks (whole));
          for (guint i = 0; i < kaged_markdown_get_n_blocks (whole); i++)
            g_assert_true (kaged_markdown_block_equal (kaged_markdown_get_block (streamed, i),
                                                       kaged_markdown_get_block (whole, i)));
        }
    }
}

/* Headings go down, to the sixth level at most; what only looks like one
 * (no space after the marks, seven marks, in code, indented four) stays,
 * and so do headings inside block quotes. */
/* A search result's words read as text: the Markdown that marks them up
 * is left out, the words it marks and a match's marks (\1, \2) stay. */
static void
test_plain (void)
{
  static const struct {
    const char *text;
    const char *plain;
  } cases[] = {
    { "## Heading\n\nSome **bold** and `code`.", "Heading\n\nSome bold and code." },
    { "A [link](https://example.org/a_(b)) and ![a cat](cat.png).", "A link and a cat." },
    { "- one\n* two\n+ three\n12. four\n> quoted", "one\ntwo\nthree\nfour\nquoted" },
    { "```c\nint x = 2 * 3;\n```\nsnake_case stays, 2 * 3 too", "int x = 2 * 3;\nsnake_case stays, 2 * 3 too" },
    { "a \001**bold**\002 and _it_ and __u__", "a \001bold\002 and it and u" },
    { "**\001bold\002** word", "\001bold\002 word" },
    { "…cut [in the middle](http", "…cut in the middle" },
    { "an [unclosed bracket and a ) stay", "an [unclosed bracket and a ) stay" },
    { "see [docs](https://\001example\002.org) now", "see docs (https://\001example\002.org) now" },
    { "#hashtag, # heading", "#hashtag, # heading" },
    { "", "" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *plain = kaged_markdown_plain (cases[i].text);

      g_assert_cmpstr (plain, ==, cases[i].plain);
    }
}

static void
test_demote_headings (void)
{
  static const struct {
    const char *text;
    const char *demoted;
  } cases[] = {
    { "# Title\n", "### Title\n" },
    { "#\n", "###\n" },
    { "##\tTabbed\r\n", "####\tTabbed\r\n" },
    { "   #### Closed ####", "   ###### Closed ####" },
    { "###### Sixth\n", "###### Sixth\n" },
    { "####### Seven\n", "####### Seven\n" },
    { "#hashtag\n", "#hashtag\n" },
    { "    # indented\n", "    # indented\n" },
    { "~~~\n# code\n~~~\n# After\n", "~~~\n# code\n~~~\n### After\n" },
    { "````\n```\n# still code\n````\n", "````\n```\n# still code\n````\n" },
    { "Text # not\n> # quoted\n", "Text # not\n> # quoted\n" },
    { "", "" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *demoted = kaged_markdown_demote_headings (cases[i].text, 2);

      g_assert_cmpstr (demoted, ==, cases[i].demoted);
    }
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/markdown/headings", test_headings);
  g_test_add_func ("/markdown/lists", test_lists);
  g_test_add_func ("/markdown/emphasis", test_emphasis);
  g_test_add_func ("/markdown/links", test_links);
  g_test_add_func ("/markdown/tables", test_tables);
  g_test_add_func ("/markdown/block-quotes", test_block_quotes);
  g_test_add_func ("/markdown/inline-code", test_inline_code);
  g_test_add_func ("/markdown/fenced-code", test_fenced_code);
  g_test_add_func ("/markdown/raw-html", test_raw_html);
  g_test_add_func ("/markdown/escaping", test_escaping);
  g_test_add_func ("/markdown/invalid-utf8", test_invalid_utf8);
  g_test_add_func ("/markdown/rule", test_rule);
  g_test_add_func ("/markdown/demote-headings", test_demote_headings);
  g_test_add_func ("/markdown/plain", test_plain);
  g_test_add_func ("/markdown/streaming/append-reparses-tail", test_append_reparses_tail);
  g_test_add_func ("/markdown/streaming/fence-stays-open", test_fence_stays_open);
  g_test_add_func ("/markdown/streaming/loose-list-stays-open", test_loose_list_stays_open);
  g_test_add_func ("/markdown/streaming/definitions-parse-whole", test_definitions_parse_whole);
  g_test_add_func ("/markdown/streaming/fence-ended-by-list-item", test_fence_ended_by_list_item);
  g_test_add_func ("/markdown/streaming/code-does-not-define-links", test_code_does_not_define_links);
  g_test_add_func ("/markdown/streaming/matches-whole", test_streaming_matches_whole);

  return g_test_run ();
}
