/* kaged-markdown.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-markdown"

#include "config.h"

#include <string.h>

#include <md4c.h>

#include "kaged-markdown.h"

/* Inline code: the monospace font, on a grey tint that reads on light and
 * dark backgrounds alike. */
#define CODE_SPAN_OPEN "<span font_family=\"monospace\" bgcolor=\"#80808026\">"

/**
 * KagedMarkdown:
 *
 * A Markdown document as a list of blocks, for a reply that may still be
 * growing. Text before the last blank line that is outside a fenced code
 * block, and that a line starting at the margin follows, cannot change
 * meaning when more text arrives: its blocks are *final* and kept. Only the
 * text after that point, the still-open tail, is parsed again when the text
 * grows. Raw HTML is never interpreted: it is text like any other.
 */
struct _KagedMarkdown
{
  GObject parent_instance;

  GString *text;
  gsize stable_end;
  guint defines_links : 1;

  GPtrArray *final_blocks;
  GPtrArray *tail_blocks;
  GPtrArray *blocks;

  guint64 next_serial;
  guint64 blocks_built;
};

G_DEFINE_FINAL_TYPE (KagedMarkdown, kaged_markdown, G_TYPE_OBJECT)

/* A line at the margin, for a line still being written. */
#define PROBE_LINE "x\n"

#define PARSER_FLAGS (MD_FLAG_TABLES | MD_FLAG_STRIKETHROUGH | MD_FLAG_TASKLISTS | \
                      MD_FLAG_NOHTML | MD_FLAG_PERMISSIVEURLAUTOLINKS | \
                      MD_FLAG_PERMISSIVEWWWAUTOLINKS)

/* --- blocks ------------------------------------------------------------------- */

static void
block_free (gpointer data)
{
  KagedMarkdownBlock *block = data;

  g_free (block->markup);
  g_free (block->text);
  g_free (block->language);
  g_clear_pointer (&block->children, g_ptr_array_unref);
  g_free (block);
}

/**
 * kaged_markdown_block_equal:
 *
 * Whether two blocks look the same: same kind, same text and the same
 * blocks inside. Serial numbers are not compared.
 */
gboolean
kaged_markdown_block_equal (const KagedMarkdownBlock *a,
                            const KagedMarkdownBlock *b)
{
  guint n_a;
  guint n_b;

  if (a == b)
    return TRUE;
  if (a == NULL || b == NULL)
    return FALSE;

  if (a->type != b->type ||
      a->level != b->level ||
      a->start != b->start ||
      a->ordered != b->ordered ||
      a->header != b->header ||
      a->align != b->align ||
      a->task != b->task ||
      g_strcmp0 (a->markup, b->markup) != 0 ||
      g_strcmp0 (a->text, b->text) != 0 ||
      g_strcmp0 (a->language, b->language) != 0)
    return FALSE;

  n_a = a->children != NULL ? a->children->len : 0;
  n_b = b->children != NULL ? b->children->len : 0;
  if (n_a != n_b)
    return FALSE;

  for (guint i = 0; i < n_a; i++)
    {
      if (!kaged_markdown_block_equal (g_ptr_array_index (a->children, i),
                                       g_ptr_array_index (b->children, i)))
        return FALSE;
    }

  return TRUE;
}

/**
 * kaged_markdown_uri_is_safe:
 *
 * Whether a link target may be opened from a reply: web pages and mail
 * addresses, nothing that would start a program or read a local file.
 */
gboolean
kaged_markdown_uri_is_safe (const char *uri)
{
  g_autofree char *scheme = NULL;

  if (uri == NULL)
    return FALSE;

  scheme = g_uri_parse_scheme (uri);
  if (scheme == NULL)
    return FALSE;

  return g_ascii_strcasecmp (scheme, "http") == 0 ||
         g_ascii_strcasecmp (scheme, "https") == 0 ||
         g_ascii_strcasecmp (scheme, "mailto") == 0;
}

/* --- entities ----------------------------------------------------------------- */

static const struct {
  const char *name;
  const char *value;
} named_entities[] = {
  { "amp", "&" }, { "lt", "<" }, { "gt", ">" }, { "quot", "\"" }, { "apos", "'" },
  { "nbsp", "\u00a0" }, { "copy", "©" }, { "reg", "®" }, { "trade", "™" },
  { "mdash", "—" }, { "ndash", "–" }, { "hellip", "…" }, { "laquo", "«" },
  { "raquo", "»" }, { "ldquo", "“" }, { "rdquo", "”" }, { "lsquo", "‘" },
  { "rsquo", "’" }, { "times", "×" }, { "divide", "÷" }, { "deg", "°" },
  { "plusmn", "±" }, { "middot", "·" }, { "bull", "•" }, { "euro", "€" },
  { "pound", "£" }, { "yen", "¥" }, { "cent", "¢" }, { "sect", "§" },
  { "para", "¶" }, { "larr", "←" }, { "rarr", "→" }, { "uarr", "↑" },
  { "darr", "↓" }, { "harr", "↔" }, { "le", "≤" }, { "ge", "≥" }, { "ne", "≠" },
  { "infin", "∞" }, { "minus", "−" }, { "shy", "\u00ad" },
};

/* Appends the character an entity such as `&amp;` or `&#x26;` stands for,
 * unescaped; an entity it does not know is kept as written. */
static void
append_entity (GString    *out,
               const char *entity,
               gsize       size)
{
  g_autofree char *body = NULL;

  if (size < 3 || entity[0] != '&' || entity[size - 1] != ';')
    {
      g_string_append_len (out, entity, size);
      return;
    }

  body = g_strndup (entity + 1, size - 2);

  if (body[0] == '#')
    {
      gboolean hex = body[1] == 'x' || body[1] == 'X';
      const char *digits = body + (hex ? 2 : 1);
      char *end = NULL;
      guint64 code = g_ascii_strtoull (digits, &end, hex ? 16 : 10);

      if (*digits == '\0' || end == NULL || *end != '\0')
        {
          g_string_append_len (out, entity, size);
          return;
        }
      if (code == 0 || code > 0x10FFFF || !g_unichar_validate ((gunichar)code))
        code = 0xFFFD;
      g_string_append_unichar (out, (gunichar)code);
      return;
    }

  for (guint i = 0; i < G_N_ELEMENTS (named_entities); i++)
    {
      if (strcmp (body, named_entities[i].name) == 0)
        {
          g_string_append (out, named_entities[i].value);
          return;
        }
    }

  g_string_append_len (out, entity, size);
}

static void
append_escaped (GString    *out,
                const char *text,
                gsize       size)
{
  g_autofree char *escaped = NULL;
  g_autofree char *valid = NULL;

  /* Pango refuses invalid UTF-8; a reply may be cut inside a character. */
  valid = g_utf8_make_valid (text, size);
  escaped = g_markup_escape_text (valid, -1);
  g_string_append (out, escaped);
}

static char *
attribute_to_string (const MD_ATTRIBUTE *attr)
{
  GString *out = g_string_new (NULL);

  if (attr->text == NULL)
    return g_string_free (out, FALSE);

  for (guint i = 0; attr->substr_offsets[i] < attr->size; i++)
    {
      const char *start = attr->text + attr->substr_offsets[i];
      gsize len = attr->substr_offsets[i + 1] - attr->substr_offsets[i];

      switch (attr->substr_types[i])
        {
        case MD_TEXT_ENTITY:
          append_entity (out, start, len);
          break;
        case MD_TEXT_NULLCHAR:
          break;
        case MD_TEXT_NORMAL:
        case MD_TEXT_BR:
        case MD_TEXT_SOFTBR:
        case MD_TEXT_CODE:
        case MD_TEXT_HTML:
        case MD_TEXT_LATEXMATH:
        default:
          g_string_append_len (out, start, len);
          break;
        }
    }

  return g_string_free (out, FALSE);
}

/* --- the parser ---------------------------------------------------------------- */

typedef struct
{
  KagedMarkdown *self;
  GPtrArray *blocks;

  /* Open blocks, innermost last. */
  GPtrArray *stack;
  gboolean in_head;

  /* The block that receives text, and its text so far. */
  KagedMarkdownBlock *inline_block;
  GString *buffer;

  /* What closes each open span: "</b>", or "" for a span left out. */
  GPtrArray *span_closers;
  guint link_depth;
} Parser;

static KagedMarkdownBlock *
parser_new_block (Parser                 *parser,
                  KagedMarkdownBlockType  type)
{
  KagedMarkdownBlock *block = g_new0 (KagedMarkdownBlock, 1);
  KagedMarkdownBlock *parent = NULL;

  block->type = type;
  block->serial = ++parser->self->next_serial;

  if (parser->stack->len > 0)
    parent = g_ptr_array_index (parser->stack, parser->stack->len - 1);

  if (parent != NULL)
    {
      if (parent->children == NULL)
        parent->children = g_ptr_array_new_with_free_func (block_free);
      g_ptr_array_add (parent->children, block);
    }
  else
    {
      g_ptr_array_add (parser->blocks, block);
      parser->self->blocks_built++;
    }

  return block;
}

/* Stores the text gathered so far in the block that receives it. */
static void
parser_flush (Parser *parser)
{
  KagedMarkdownBlock *block = parser->inline_block;

  if (block == NULL)
    return;

  if (block->type == KAGED_MARKDOWN_BLOCK_CODE)
    {
      if (parser->buffer->len > 0 && parser->buffer->str[parser->buffer->len - 1] == '\n')
        g_string_truncate (parser->buffer, parser->buffer->len - 1);
      g_free (block->text);
      block->text = g_strdup (parser->buffer->str);
    }
  else
    {
      g_free (block->markup);
      block->markup = g_strdup (parser->buffer->str);
    }

  g_string_truncate (parser->buffer, 0);
  parser->inline_block = NULL;
}

static void
parser_begin_inline (Parser             *parser,
                     KagedMarkdownBlock *block)
{
  parser_flush (parser);
  parser->inline_block = block;
}

static int
enter_block (MD_BLOCKTYPE  type,
             void         *detail,
             void         *user_data)
{
  Parser *parser = user_data;
  KagedMarkdownBlock *block = NULL;

  parser_flush (parser);

  switch (type)
    {
    case MD_BLOCK_DOC:
    case MD_BLOCK_TBODY:
      parser->in_head = FALSE;
      return 0;

    case MD_BLOCK_THEAD:
      parser->in_head = TRUE;
      return 0;

    case MD_BLOCK_QUOTE:
      block = parser_new_block (parser, KAGED_MARKDOWN_BLOCK_QUOTE);
      break;

    case MD_BLOCK_UL:
      block = parser_new_block (parser, KAGED_MARKDOWN_BLOCK_LIST);
      break;

    case MD_BLOCK_OL:
      {
        const MD_BLOCK_OL_DETAIL *ol = detail;

        block = parser_new_block (parser, KAGED_MARKDOWN_BLOCK_LIST);
        block->ordered = TRUE;
        block->start = ol->start;
      }
      break;

    case MD_BLOCK_LI:
      {
        const MD_BLOCK_LI_DETAIL *li = detail;

        block = parser_new_block (parser, KAGED_MARKDOWN_BLOCK_LIST_ITEM);
        if (li->is_task)
          block->task = li->task_mark == ' ' ? KAGED_MARKDOWN_TASK_OPEN : KAGED_MARKDOWN_TASK_DONE;
      }
      break;

    case MD_BLOCK_HR:
      block = parser_new_block (parser, KAGED_MARKDOWN_BLOCK_RULE);
      break;

    case MD_BLOCK_H:
      {
        const MD_BLOCK_H_DETAIL *h = detail;

        block = parser_new_block (parser, KAGED_MARKDOWN_BLOCK_HEADING);
        block->level = h->level;
        parser_begin_inline (parser, block);
      }
      break;

    case MD_BLOCK_CODE:
      {
        const MD_BLOCK_CODE_DETAIL *code = detail;
        g_autofree char *lang = attribute_to_string (&code->lang);

        block = parser_new_block (parser, KAGED_MARKDOWN_BLOCK_CODE);
        if (lang[0] != '\0')
          block->language = g_steal_pointer (&lang);
        parser_begin_inline (parser, block);
      }
      break;

    case MD_BLOCK_HTML:
    case MD_BLOCK_P:
      block = parser_new_block (parser, KAGED_MARKDOWN_BLOCK_PARAGRAPH);
      parser_begin_inline (parser, block);
      break;

    case MD_BLOCK_TABLE:
      block = parser_new_block (parser, KAGED_MARKDOWN_BLOCK_TABLE);
      break;

    case MD_BLOCK_TR:
      block = parser_new_block (parser, KAGED_MARKDOWN_BLOCK_TABLE_ROW);
      block->header = parser->in_head;
      break;

    case MD_BLOCK_TH:
    case MD_BLOCK_TD:
      {
        const MD_BLOCK_TD_DETAIL *td = detail;

        block = parser_new_block (parser, KAGED_MARKDOWN_BLOCK_TABLE_CELL);
        block->header = type == MD_BLOCK_TH || parser->in_head;
        switch (td->align)
          {
          case MD_ALIGN_LEFT:
            block->align = KAGED_MARKDOWN_ALIGN_LEFT;
            break;
          case MD_ALIGN_CENTER:
            block->align = KAGED_MARKDOWN_ALIGN_CENTER;
            break;
          case MD_ALIGN_RIGHT:
            block->align = KAGED_MARKDOWN_ALIGN_RIGHT;
            break;
          case MD_ALIGN_DEFAULT:
          default:
            block->align = KAGED_MARKDOWN_ALIGN_DEFAULT;
            break;
          }
        parser_begin_inline (parser, block);
      }
      break;

    default:
      return 0;
    }

  g_ptr_array_add (parser->stack, block);
  return 0;
}

static int
leave_block (MD_BLOCKTYPE  type,
             void         *detail,
             void         *user_data)
{
  Parser *parser = user_data;

  parser_flush (parser);

  switch (type)
    {
    case MD_BLOCK_DOC:
    case MD_BLOCK_THEAD:
    case MD_BLOCK_TBODY:
      return 0;

    case MD_BLOCK_QUOTE:
    case MD_BLOCK_UL:
    case MD_BLOCK_OL:
    case MD_BLOCK_LI:
    case MD_BLOCK_HR:
    case MD_BLOCK_H:
    case MD_BLOCK_CODE:
    case MD_BLOCK_HTML:
    case MD_BLOCK_P:
    case MD_BLOCK_TABLE:
    case MD_BLOCK_TR:
    case MD_BLOCK_TH:
    case MD_BLOCK_TD:
    default:
      if (parser->stack->len > 0)
        g_ptr_array_set_size (parser->stack, parser->stack->len - 1);
      return 0;
    }
}

/* Text that arrives where no paragraph is open (the items of a tight list)
 * gets a paragraph of its own. */
static void
parser_ensure_inline (Parser *parser)
{
  KagedMarkdownBlock *block;

  if (parser->inline_block != NULL)
    return;

  block = parser_new_block (parser, KAGED_MARKDOWN_BLOCK_PARAGRAPH);
  parser->inline_block = block;
}

static void
parser_open_span (Parser     *parser,
                  const char *opener,
                  const char *closer)
{
  parser_ensure_inline (parser);
  g_string_append (parser->buffer, opener);
  g_ptr_array_add (parser->span_closers, (gpointer)closer);
}

/* A link becomes `<a href>` when its target is safe to open and it is not
 * inside another link; otherwise its text stays, without the link. */
static void
parser_open_link (Parser             *parser,
                  const MD_ATTRIBUTE *href)
{
  g_autofree char *target = attribute_to_string (href);

  if (g_str_has_prefix (target, "www."))
    {
      char *with_scheme = g_strconcat ("http://", target, NULL);

      g_free (target);
      target = with_scheme;
    }

  if (parser->link_depth == 0 && kaged_markdown_uri_is_safe (target))
    {
      g_autofree char *valid = g_utf8_make_valid (target, -1);
      g_autofree char *escaped = g_markup_escape_text (valid, -1);
      g_autofree char *opener = g_strdup_printf ("<a href=\"%s\">", escaped);

      parser_open_span (parser, opener, "</a>");
    }
  else
    {
      parser_open_span (parser, "", "");
    }

  parser->link_depth++;
}

static int
enter_span (MD_SPANTYPE  type,
            void        *detail,
            void        *user_data)
{
  Parser *parser = user_data;

  switch (type)
    {
    case MD_SPAN_EM:
      parser_open_span (parser, "<i>", "</i>");
      break;
    case MD_SPAN_STRONG:
      parser_open_span (parser, "<b>", "</b>");
      break;
    case MD_SPAN_DEL:
      parser_open_span (parser, "<s>", "</s>");
      break;
    case MD_SPAN_U:
      parser_open_span (parser, "<u>", "</u>");
      break;
    case MD_SPAN_CODE:
      parser_open_span (parser, CODE_SPAN_OPEN, "</span>");
      break;
    case MD_SPAN_A:
      parser_open_link (parser, &((const MD_SPAN_A_DETAIL *)detail)->href);
      break;
    case MD_SPAN_IMG:
      parser_open_link (parser, &((const MD_SPAN_IMG_DETAIL *)detail)->src);
      break;
    case MD_SPAN_LATEXMATH:
    case MD_SPAN_LATEXMATH_DISPLAY:
    case MD_SPAN_WIKILINK:
    default:
      parser_open_span (parser, "", "");
      break;
    }

  return 0;
}

static int
leave_span (MD_SPANTYPE  type,
            void        *detail,
            void        *user_data)
{
  Parser *parser = user_data;
  const char *closer;

  if (parser->span_closers->len == 0)
    return 0;

  closer = g_ptr_array_steal_index (parser->span_closers, parser->span_closers->len - 1);
  parser_ensure_inline (parser);
  g_string_append (parser->buffer, closer);

  if (type == MD_SPAN_A || type == MD_SPAN_IMG)
    parser->link_depth--;

  return 0;
}

static int
on_text (MD_TEXTTYPE     type,
         const MD_CHAR  *chars,
         MD_SIZE         size,
         void           *user_data)
{
  Parser *parser = user_data;

  parser_ensure_inline (parser);

  if (parser->inline_block->type == KAGED_MARKDOWN_BLOCK_CODE)
    {
      g_autofree char *valid = g_utf8_make_valid (chars, size);

      g_string_append (parser->buffer, valid);
      return 0;
    }

  switch (type)
    {
    case MD_TEXT_NULLCHAR:
      g_string_append (parser->buffer, "\uFFFD");
      break;

    case MD_TEXT_BR:
    case MD_TEXT_SOFTBR:
      g_string_append_c (parser->buffer, '\n');
      break;

    case MD_TEXT_ENTITY:
      {
        g_autoptr(GString) decoded = g_string_new (NULL);

        append_entity (decoded, chars, size);
        append_escaped (parser->buffer, decoded->str, decoded->len);
      }
      break;

    case MD_TEXT_NORMAL:
    case MD_TEXT_CODE:
    case MD_TEXT_HTML:
    case MD_TEXT_LATEXMATH:
    default:
      append_escaped (parser->buffer, chars, size);
      break;
    }

  return 0;
}

/* Parses @size bytes of @text into top-level blocks, appended to @blocks. */
static void
parse_into (KagedMarkdown *self,
            const char    *text,
            gsize          size,
            GPtrArray     *blocks)
{
  MD_PARSER md = {
    .abi_version = 0,
    .flags = PARSER_FLAGS,
    .enter_block = enter_block,
    .leave_block = leave_block,
    .enter_span = enter_span,
    .leave_span = leave_span,
    .text = on_text,
  };
  Parser parser = {
    .self = self,
    .blocks = blocks,
    .stack = g_ptr_array_new (),
    .buffer = g_string_new (NULL),
    .span_closers = g_ptr_array_new (),
  };

  if (size > 0)
    md_parse (text, size, &md, &parser);

  parser_flush (&parser);

  g_ptr_array_unref (parser.stack);
  g_ptr_array_unref (parser.span_closers);
  g_string_free (parser.buffer, TRUE);
}

/* --- where the text is final ------------------------------------------------------ */

static gsize
line_indent (const char *line,
             const char *end)
{
  gsize n = 0;

  while (line + n < end && line[n] == ' ')
    n++;
  return n;
}

/* Whether @line opens (or, with @closing, closes) a fence of @fence_char
 * at least @fence_len long. Returns the fence's length or 0. */
static gsize
fence_length (const char *line,
              const char *end,
              char        fence_char,
              gsize       min_len,
              gboolean    closing)
{
  gsize indent = line_indent (line, end);
  const char *p = line + indent;
  gsize n = 0;
  char c;

  if (indent > 3 || p >= end)
    return 0;

  c = *p;
  if (c != '`' && c != '~')
    return 0;
  if (fence_char != '\0' && c != fence_char)
    return 0;

  while (p + n < end && p[n] == c)
    n++;
  if (n < 3 || n < min_len)
    return 0;

  for (const char *q = p + n; q < end; q++)
    {
      if (closing && *q != ' ' && *q != '\t' && *q != '\r')
        return 0;
      if (!closing && c == '`' && *q == '`')
        return 0;
    }

  return n;
}

static gboolean
line_is_blank (const char *line,
               const char *end)
{
  for (const char *p = line; p < end; p++)
    {
      if (*p != ' ' && *p != '\t' && *p != '\r')
        return FALSE;
    }
  return TRUE;
}

/* A line that may continue a list before it: an item marker. */
static gboolean
line_is_list_item (const char *line,
                   const char *end)
{
  const char *p = line;

  if (p < end && (*p == '-' || *p == '+' || *p == '*'))
    return p + 1 == end || p[1] == ' ' || p[1] == '\t' || p[1] == '\r';

  while (p < end && p - line < 9 && g_ascii_isdigit (*p))
    p++;
  if (p == line || p >= end || (*p != '.' && *p != ')'))
    return FALSE;
  p++;
  return p == end || *p == ' ' || *p == '\t' || *p == '\r';
}

/* A line that may end a link reference definition (`[label]: url`, the
 * label perhaps over several lines, in a quote or a list item). Such a
 * definition gives meaning to links anywhere in the document, before it
 * too. */
static gboolean
line_may_define_link (const char *line,
                      const char *end)
{
  return g_strstr_len (line, end - line, "]:") != NULL;
}

/* The last offset after @from where the text before can no longer change
 * meaning: a line that starts at the margin (and is not a list item, which
 * would continue a list), after a blank line, outside a fenced code block.
 * Returns @from when there is none. Sets @defines_links when a line may
 * define a link reference. */
static gsize
find_stable_end (const char *text,
                 gsize       from,
                 gsize       size,
                 gboolean   *defines_links)
{
  const char *p = text + from;
  const char *end = text + size;
  gsize stable = from;
  gboolean previous_blank = FALSE;
  char fence_char = '\0';
  gsize fence_len = 0;
  gboolean fence_uncertain = FALSE;
  gboolean previous_has_pipe = FALSE;

  while (p < end)
    {
      const char *eol = memchr (p, '\n', end - p);

      /* In a fence at the margin nothing defines a link (code such as
       * `for x in a[1:]:` would otherwise make every reply with it be parsed
       * whole); but an indented fence may be in a list item that ended it,
       * and a fence line right under a table may be a row of it. */
      if ((fence_char == '\0' || fence_uncertain) &&
          line_may_define_link (p, eol != NULL ? eol : end))
        *defines_links = TRUE;

      /* The last line may still grow: it ends what comes before only when
       * no list item marker or fence can come of it. */
      if (eol == NULL)
        {
          if (fence_char == '\0' && previous_blank && strchr (" \t\r-+*0123456789`~", *p) == NULL)
            stable = p - text;
          break;
        }

      if (fence_char != '\0')
        {
          if (fence_length (p, eol, fence_char, fence_len, TRUE) > 0)
            fence_char = '\0';
          previous_blank = FALSE;
        }
      else if (line_is_blank (p, eol))
        {
          previous_blank = TRUE;
          previous_has_pipe = FALSE;
        }
      else
        {
          gsize n = fence_length (p, eol, '\0', 0, FALSE);

          if (previous_blank && *p != ' ' && *p != '\t' && !line_is_list_item (p, eol))
            stable = p - text;

          if (n > 0)
            {
              gsize indent = line_indent (p, eol);

              fence_char = p[indent];
              fence_len = n;
              fence_uncertain = indent > 0 || previous_has_pipe;
            }
          previous_blank = FALSE;
          previous_has_pipe = memchr (p, '|', eol - p) != NULL;
        }

      p = eol + 1;
    }

  return stable;
}

/* Where a walk line by line stands: inside a fenced code block or not. */
typedef struct
{
  char  fence_char;  /* '\0' outside */
  gsize fence_len;
} FenceState;

/* Moves @state past the line from @line to @eol. Returns whether the line
 * belongs to a fenced code block, its fences included. */
static gboolean
fence_step (FenceState *state,
            const char *line,
            const char *eol)
{
  gsize n;

  if (state->fence_char != '\0')
    {
      if (fence_length (line, eol, state->fence_char, state->fence_len, TRUE) > 0)
        state->fence_char = '\0';
      return TRUE;
    }

  n = fence_length (line, eol, '\0', 0, FALSE);
  if (n == 0)
    return FALSE;

  state->fence_char = line[line_indent (line, eol)];
  state->fence_len = n;
  return TRUE;
}

/**
 * kaged_markdown_close_fence:
 * @text: a Markdown document
 *
 * A document cut short (a reply that stopped) may end inside a fenced code
 * block; whatever follows it would then read as code.
 *
 * Returns: (transfer full) (nullable): the line that closes the fenced code
 *   block @text ends in, or %NULL when it ends outside one
 */
char *
kaged_markdown_close_fence (const char *text)
{
  const char *p = text;
  const char *end;
  FenceState state = { '\0', 0 };

  g_return_val_if_fail (text != NULL, NULL);

  end = text + strlen (text);
  while (p < end)
    {
      const char *eol = memchr (p, '\n', end - p);

      if (eol == NULL)
        eol = end;
      fence_step (&state, p, eol);
      p = eol < end ? eol + 1 : end;
    }

  if (state.fence_char == '\0')
    return NULL;

  {
    char *closing = g_malloc (state.fence_len + 1);

    memset (closing, state.fence_char, state.fence_len);
    closing[state.fence_len] = '\0';
    return closing;
  }
}

/**
 * kaged_markdown_demote_headings:
 * @text: a Markdown document
 * @levels: how many levels down its headings go
 *
 * Puts a document under a heading of another: its ATX headings ("# Title")
 * go @levels down, to the sixth at most. Code blocks are left as they are,
 * and so are setext headings (a line underlined with "===" or "---") and
 * headings inside block quotes or list items.
 *
 * Returns: (transfer full): the document with its headings demoted
 */
char *
kaged_markdown_demote_headings (const char *text,
                                guint       levels)
{
  g_autoptr(GString) out = NULL;
  const char *p = text;
  const char *end;
  FenceState state = { '\0', 0 };

  g_return_val_if_fail (text != NULL, NULL);

  end = text + strlen (text);
  out = g_string_sized_new (end - text + 16);
  while (p < end)
    {
      const char *eol = memchr (p, '\n', end - p);
      const char *next;
      gsize indent;
      gsize hashes = 0;

      if (eol == NULL)
        eol = end;
      next = eol < end ? eol + 1 : end;

      indent = line_indent (p, eol);
      if (!fence_step (&state, p, eol) && indent < 4)
        {
          while (p + indent + hashes < eol && p[indent + hashes] == '#')
            hashes++;
        }

      /* "#" to "######", then a space or the end of the line. */
      if (hashes >= 1 && hashes <= 6 &&
          (p + indent + hashes == eol || p[indent + hashes] == ' ' || p[indent + hashes] == '\t' ||
           p[indent + hashes] == '\r'))
        {
          g_string_append_len (out, p, indent);
          for (gsize i = 0; i < MIN (hashes + levels, 6); i++)
            g_string_append_c (out, '#');
          g_string_append_len (out, p + indent + hashes, next - (p + indent + hashes));
        }
      else
        {
          g_string_append_len (out, p, next - p);
        }

      p = next;
    }

  return g_string_free (g_steal_pointer (&out), FALSE);
}

/* Whether @probe, the blocks of the texts of @head and @line together, are
 * @head's and then @line's. */
static gboolean
head_is_closed (GPtrArray *head,
                GPtrArray *line,
                GPtrArray *probe)
{
  if (probe->len != head->len + line->len)
    return FALSE;

  for (guint i = 0; i < probe->len; i++)
    {
      const KagedMarkdownBlock *part = i < head->len ? g_ptr_array_index (head, i)
                                                     : g_ptr_array_index (line, i - head->len);

      if (!kaged_markdown_block_equal (part, g_ptr_array_index (probe, i)))
        return FALSE;
    }

  return TRUE;
}

/* --- the object ------------------------------------------------------------------- */

static void
kaged_markdown_finalize (GObject *object)
{
  KagedMarkdown *self = (KagedMarkdown *)object;

  g_string_free (self->text, TRUE);
  g_clear_pointer (&self->final_blocks, g_ptr_array_unref);
  g_clear_pointer (&self->tail_blocks, g_ptr_array_unref);
  g_clear_pointer (&self->blocks, g_ptr_array_unref);

  G_OBJECT_CLASS (kaged_markdown_parent_class)->finalize (object);
}

static void
kaged_markdown_class_init (KagedMarkdownClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = kaged_markdown_finalize;
}

static void
kaged_markdown_init (KagedMarkdown *self)
{
  self->text = g_string_new (NULL);
  self->final_blocks = g_ptr_array_new_with_free_func (block_free);
  self->tail_blocks = g_ptr_array_new_with_free_func (block_free);
  self->blocks = g_ptr_array_new ();
}

KagedMarkdown *
kaged_markdown_new (void)
{
  return g_object_new (KAGED_TYPE_MARKDOWN, NULL);
}

/**
 * kaged_markdown_set_text:
 * @text: (nullable): the whole document
 *
 * Sets the document. When @text extends the final part of the previous
 * text, the final blocks are kept and only the rest is parsed; otherwise
 * everything is parsed again.
 *
 * Returns: whether the text changed
 */
gboolean
kaged_markdown_set_text (KagedMarkdown *self,
                         const char    *text)
{
  gsize size;
  gsize stable_end;
  gboolean defines_links;

  g_return_val_if_fail (KAGED_IS_MARKDOWN (self), FALSE);

  if (text == NULL)
    text = "";
  size = strlen (text);

  if (size == self->text->len && memcmp (text, self->text->str, size) == 0)
    return FALSE;

  if (size < self->stable_end || memcmp (text, self->text->str, self->stable_end) != 0 ||
      (self->defines_links && !g_str_has_prefix (text, self->text->str)))
    {
      g_ptr_array_set_size (self->final_blocks, 0);
      self->stable_end = 0;
      self->defines_links = FALSE;
    }

  defines_links = self->defines_links;
  stable_end = find_stable_end (text, self->stable_end, size, &defines_links);

  /* A document with link definitions is parsed whole: a definition gives
   * meaning to the blocks before it. */
  if (defines_links && !self->defines_links)
    {
      g_ptr_array_set_size (self->final_blocks, 0);
      self->stable_end = 0;
      self->defines_links = TRUE;
    }
  if (self->defines_links)
    stable_end = 0;

  g_ptr_array_set_size (self->tail_blocks, 0);

  if (stable_end > self->stable_end)
    {
      g_autoptr(GPtrArray) head = g_ptr_array_new_with_free_func (block_free);
      g_autoptr(GPtrArray) probe = g_ptr_array_new_with_free_func (block_free);
      g_autoptr(GPtrArray) line_blocks = g_ptr_array_new_with_free_func (block_free);
      g_autofree char *probe_text = NULL;
      g_autofree char *line = NULL;
      const char *eol;

      parse_into (self, text + self->stable_end, stable_end - self->stable_end, head);

      /* The lines alone cannot tell every construct (a fence that a list
       * item ended early, a table row of backticks): the head is final only
       * if the line after it reads the same after the head as on its own.
       * Nothing after that line can reach back into the head. */
      eol = memchr (text + stable_end, '\n', size - stable_end);
      if (eol != NULL)
        line = g_strndup (text + stable_end, eol + 1 - (text + stable_end));
      else
        line = g_strdup (PROBE_LINE);
      probe_text = g_strdup_printf ("%.*s%s", (int)(stable_end - self->stable_end),
                                    text + self->stable_end, line);
      parse_into (self, probe_text, strlen (probe_text), probe);
      parse_into (self, line, strlen (line), line_blocks);

      if (head_is_closed (head, line_blocks, probe))
        {
          g_ptr_array_extend_and_steal (self->final_blocks, g_steal_pointer (&head));
          self->stable_end = stable_end;
        }
    }

  parse_into (self, text + self->stable_end, size - self->stable_end, self->tail_blocks);

  g_string_assign (self->text, text);

  g_ptr_array_set_size (self->blocks, 0);
  for (guint i = 0; i < self->final_blocks->len; i++)
    g_ptr_array_add (self->blocks, g_ptr_array_index (self->final_blocks, i));
  for (guint i = 0; i < self->tail_blocks->len; i++)
    g_ptr_array_add (self->blocks, g_ptr_array_index (self->tail_blocks, i));

  return TRUE;
}

const char *
kaged_markdown_get_text (KagedMarkdown *self)
{
  g_return_val_if_fail (KAGED_IS_MARKDOWN (self), NULL);

  return self->text->str;
}

guint
kaged_markdown_get_n_blocks (KagedMarkdown *self)
{
  g_return_val_if_fail (KAGED_IS_MARKDOWN (self), 0);

  return self->blocks->len;
}

/**
 * kaged_markdown_get_block:
 *
 * Returns: (transfer none): the top-level block at @position; valid until
 *   the next kaged_markdown_set_text() for a block that is not final
 */
const KagedMarkdownBlock *
kaged_markdown_get_block (KagedMarkdown *self,
                          guint          position)
{
  g_return_val_if_fail (KAGED_IS_MARKDOWN (self), NULL);
  g_return_val_if_fail (position < self->blocks->len, NULL);

  return g_ptr_array_index (self->blocks, position);
}

/**
 * kaged_markdown_get_n_final:
 *
 * Returns: how many of the first blocks are final: they stay as they are,
 *   at the same address, while the text grows
 */
guint
kaged_markdown_get_n_final (KagedMarkdown *self)
{
  g_return_val_if_fail (KAGED_IS_MARKDOWN (self), 0);

  return self->final_blocks->len;
}

/**
 * kaged_markdown_get_blocks_built:
 *
 * Returns: how many top-level blocks all parses so far have built; it
 *   shows how much work streaming text costs
 */
guint64
kaged_markdown_get_blocks_built (KagedMarkdown *self)
{
  g_return_val_if_fail (KAGED_IS_MARKDOWN (self), 0);

  return self->blocks_built;
}

/* --- plain text ------------------------------------------------------------ */

/* A search's marks around a match (see kaged_store_search()) are passed
 * through and read as part of the word they mark. */
static gboolean
is_mark (char c)
{
  return c == '\001' || c == '\002';
}

/* Whether @c ends a word: nothing, a space or punctuation. */
static gboolean
is_blank (char c)
{
  return c == '\0' || g_ascii_isspace (c) || (g_ascii_ispunct (c) && c != '*' && c != '_');
}

/* The character before @p, marks skipped, or '\0' at @start. */
static char
char_before (const char *start,
             const char *p)
{
  while (p > start && is_mark (p[-1]))
    p--;

  return p > start ? p[-1] : '\0';
}

static char
char_after (const char *p)
{
  while (is_mark (*p))
    p++;

  return *p;
}

/* Skips what marks a line as a heading, quote, list item or fence; returns
 * where its words start, or %NULL for a fence line, which has none. */
static const char *
skip_line_marks (const char *p)
{
  for (guint i = 0; i < 3 && *p == ' '; i++)
    p++;

  if (g_str_has_prefix (p, "```") || g_str_has_prefix (p, "~~~"))
    return NULL;

  for (;;)
    {
      const char *q = p;

      if (*q == '#')
        {
          guint n = 0;

          while (*q == '#' && n < 7)
            q++, n++;
          if (n <= 6 && (*q == ' ' || *q == '\n' || *q == '\0'))
            return *q == ' ' ? q + 1 : q;
          return p;
        }
      if (*q == '>')
        {
          p = q[1] == ' ' ? q + 2 : q + 1;
          continue;
        }
      if ((*q == '-' || *q == '*' || *q == '+') && q[1] == ' ')
        return q + 2;
      if (g_ascii_isdigit (*q))
        {
          guint n = 0;

          while (g_ascii_isdigit (*q) && n < 10)
            q++, n++;
          if (n < 10 && (*q == '.' || *q == ')') && q[1] == ' ')
            return q + 2;
        }
      return p;
    }
}

/* Whether the '[' at @p opens a link: "](" follows on its line. */
static gboolean
opens_link (const char *p)
{
  for (p++; *p != '\0' && *p != '\n' && *p != '['; p++)
    if (p[0] == ']' && p[1] == '(')
      return TRUE;

  return FALSE;
}

/**
 * kaged_markdown_plain:
 * @text: Markdown, or a piece of it such as a search result's snippet
 *
 * Leaves out what marks Markdown up — headings' "#", quotes' ">", list
 * markers, fence lines, emphasis, backticks, the targets of links and
 * images — and keeps the words, lines and a search's marks (\1, \2). A
 * "*" or "_" that is not at the edge of a word stays, as in "2 * 3" or
 * "snake_case".
 *
 * Returns: (transfer full): the text as it reads
 */
char *
kaged_markdown_plain (const char *text)
{
  GString *plain;
  const char *p;
  gboolean line_start = TRUE;

  g_return_val_if_fail (text != NULL, NULL);

  plain = g_string_sized_new (strlen (text));
  p = text;

  while (*p != '\0')
    {
      if (line_start)
        {
          const char *words = skip_line_marks (p);

          line_start = FALSE;
          if (words == NULL)
            {
              /* A fence line: left out with its end. */
              p += strcspn (p, "\n");
              if (*p == '\n')
                p++;
              line_start = TRUE;
              continue;
            }
          p = words;
          continue;
        }

      if (*p == '\n')
        {
          g_string_append_c (plain, '\n');
          p++;
          line_start = TRUE;
          continue;
        }

      if (*p == '`')
        {
          p++;
          continue;
        }

      if (*p == '*' || *p == '_')
        {
          const char *end = p;
          char before, after;

          while (*end == *p)
            end++;
          before = char_before (text, p);
          after = char_after (end);
          /* Emphasis opens before a word or closes after one. */
          if (is_blank (before) != is_blank (after))
            {
              p = end;
              continue;
            }
          g_string_append_len (plain, p, end - p);
          p = end;
          continue;
        }

      if ((*p == '[' && opens_link (p)) || (p[0] == '!' && p[1] == '[' && opens_link (p + 1)))
        {
          p += *p == '!' ? 2 : 1;
          continue;
        }

      if (p[0] == ']' && p[1] == '(')
        {
          const char *target = p + 2;
          gboolean marked = FALSE;
          guint depth = 0;

          /* The target, with any parentheses inside it. */
          for (p = target; *p != '\0' && *p != '\n'; p++)
            {
              marked |= is_mark (*p);
              if (*p == '(')
                depth++;
              else if (*p == ')' && depth > 0)
                depth--;
              else if (*p == ')')
                break;
            }
          /* A search found its words there: they stay, to be seen. */
          if (marked)
            {
              g_string_append (plain, " (");
              g_string_append_len (plain, target, p - target);
              g_string_append_c (plain, ')');
            }
          if (*p == ')')
            p++;
          continue;
        }

      g_string_append_c (plain, *p);
      p++;
    }

  return g_string_free (plain, FALSE);
}
