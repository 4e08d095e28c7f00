/* kaged-markdown-view.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-markdown-view"

#include "config.h"

#include <string.h>

#include "kaged-code-block.h"
#include "kaged-markdown-view.h"

#if GTK_CHECK_VERSION (4, 10, 0)
# define HAVE_URI_LAUNCHER (GDK_VERSION_MAX_ALLOWED >= GDK_VERSION_4_10)
#else
# define HAVE_URI_LAUNCHER 0
#endif

/**
 * KagedMarkdownView:
 *
 * A reply's Markdown as widgets, one per block: labels for paragraphs and
 * headings, a grid for a table, a #KagedCodeBlock for code, boxes for lists
 * and quotes. Setting new text changes only the widgets of blocks that
 * changed — while a reply streams, the last one — and updates a widget in
 * place when it can, so a growing paragraph or code block is not rebuilt
 * for every delta.
 */
struct _KagedMarkdownView
{
  GtkWidget parent_instance;

  KagedMarkdown *document;
  guint64 widgets_built;

  /* The first blocks, all final, sit in groups of about GROUP_SIZE */
  guint n_grouped;
  guint64 group_layouts;
  guint64 width_measures;

  /* The blocks after the groups: the last child of the last shelf */
  GtkWidget *tail;

  /* The list or view that scrolls this one, and its vertical adjustment */
  GtkWidget *scrollable;
  GtkAdjustment *vadjustment;
};

G_DEFINE_FINAL_TYPE (KagedMarkdownView, kaged_markdown_view, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_TEXT,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

/* What a block widget shows, to decide whether it can show a new block. */
typedef struct
{
  KagedMarkdownBlockType type;
  guint64 serial;
  guint level;
  guint start;
  gboolean ordered;
  KagedMarkdownTask task;
  guint n_rows;
  guint n_columns;
} BlockInfo;

static GQuark block_info_quark;

static void sync_children (KagedMarkdownView *self,
                           GtkWidget         *container,
                           GtkWidget         *child,
                           GPtrArray         *blocks);

static BlockInfo *
get_info (GtkWidget *widget)
{
  return g_object_get_qdata (G_OBJECT (widget), block_info_quark);
}

static void
open_uri (GtkWidget  *widget,
          const char *uri)
{
  GtkRoot *root = gtk_widget_get_root (widget);
  GtkWindow *parent = GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL;

#if HAVE_URI_LAUNCHER
  g_autoptr(GtkUriLauncher) launcher = gtk_uri_launcher_new (uri);

  gtk_uri_launcher_launch (launcher, parent, NULL, NULL, NULL);
#else
  gtk_show_uri (parent, uri, GDK_CURRENT_TIME);
#endif
}

static gboolean
on_activate_link (GtkLabel   *label,
                  const char *uri,
                  gpointer    user_data)
{
  /* Only links the parser let through reach here; check once more. */
  if (kaged_markdown_uri_is_safe (uri))
    open_uri (GTK_WIDGET (label), uri);

  return TRUE;
}

/*
 * The narrowest a wrapped label of text gets, in characters. Without it
 * GTK measures a wrapped label's minimum width by laying it out one word
 * per line, which for a long paragraph costs many times its real layout.
 */
#define LABEL_MIN_WIDTH_CHARS 16

static GtkWidget *
new_label (const char *markup)
{
  GtkWidget *label = gtk_label_new (NULL);

  gtk_label_set_markup (GTK_LABEL (label), markup != NULL ? markup : "");
  gtk_label_set_wrap (GTK_LABEL (label), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_selectable (GTK_LABEL (label), TRUE);
  gtk_label_set_xalign (GTK_LABEL (label), 0.0);
  gtk_label_set_width_chars (GTK_LABEL (label), LABEL_MIN_WIDTH_CHARS);
  gtk_widget_set_halign (label, GTK_ALIGN_FILL);
  g_signal_connect (label, "activate-link", G_CALLBACK (on_activate_link), NULL);

  return label;
}

static void
label_set_markup (GtkWidget  *label,
                  const char *markup)
{
  if (markup == NULL)
    markup = "";
  if (g_strcmp0 (gtk_label_get_label (GTK_LABEL (label)), markup) != 0)
    gtk_label_set_markup (GTK_LABEL (label), markup);
}

static const char *
heading_class (guint level)
{
  switch (level)
    {
    case 1:
      return "title-1";
    case 2:
      return "title-2";
    case 3:
      return "title-3";
    case 4:
      return "title-4";
    default:
      return "heading";
    }
}

/* --- lists ---------------------------------------------------------------------- */

static GtkWidget *
item_get_marker (GtkWidget *item)
{
  return gtk_widget_get_first_child (item);
}

static GtkWidget *
item_get_content (GtkWidget *item)
{
  return gtk_widget_get_last_child (item);
}

static void
update_markers (GtkWidget *list)
{
  BlockInfo *info = get_info (list);
  guint n = 0;

  for (GtkWidget *item = gtk_widget_get_first_child (list);
       item != NULL;
       item = gtk_widget_get_next_sibling (item), n++)
    {
      BlockInfo *item_info = get_info (item);
      g_autofree char *marker = NULL;

      if (item_info->task == KAGED_MARKDOWN_TASK_OPEN)
        marker = g_strdup ("☐");
      else if (item_info->task == KAGED_MARKDOWN_TASK_DONE)
        marker = g_strdup ("☑");
      else if (info->ordered)
        marker = g_strdup_printf ("%u.", info->start + n);
      else
        marker = g_strdup ("•");

      gtk_label_set_label (GTK_LABEL (item_get_marker (item)), marker);
    }
}

/* --- tables --------------------------------------------------------------------- */

static guint
count_columns (const KagedMarkdownBlock *table)
{
  guint columns = 0;

  for (guint r = 0; table->children != NULL && r < table->children->len; r++)
    {
      const KagedMarkdownBlock *row = g_ptr_array_index (table->children, r);

      if (row->children != NULL)
        columns = MAX (columns, row->children->len);
    }

  return columns;
}

static guint
count_rows (const KagedMarkdownBlock *table)
{
  return table->children != NULL ? table->children->len : 0;
}

static float
cell_xalign (KagedMarkdownAlign align)
{
  switch (align)
    {
    case KAGED_MARKDOWN_ALIGN_CENTER:
      return 0.5;
    case KAGED_MARKDOWN_ALIGN_RIGHT:
      return 1.0;
    case KAGED_MARKDOWN_ALIGN_DEFAULT:
    case KAGED_MARKDOWN_ALIGN_LEFT:
    default:
      return 0.0;
    }
}

/* Fills a grid of the table's size with the table's cells. */
static void
fill_table (GtkGrid                  *grid,
            const KagedMarkdownBlock *table,
            gboolean                  create)
{
  for (guint r = 0; r < count_rows (table); r++)
    {
      const KagedMarkdownBlock *row = g_ptr_array_index (table->children, r);
      guint n_cells = row->children != NULL ? row->children->len : 0;

      for (guint c = 0; c < n_cells; c++)
        {
          const KagedMarkdownBlock *cell = g_ptr_array_index (row->children, c);
          GtkWidget *label;

          if (create)
            {
              label = new_label (cell->markup);
              /* Cells are short; a table keeps its narrow columns. */
              gtk_label_set_width_chars (GTK_LABEL (label), -1);
              gtk_widget_add_css_class (label, "kaged-markdown-cell");
              if (cell->header)
                gtk_widget_add_css_class (label, "heading");
              if (r % 2 == 1)
                gtk_widget_add_css_class (label, "odd");
              gtk_widget_set_hexpand (label, TRUE);
              gtk_grid_attach (grid, label, c, r, 1, 1);
            }
          else
            {
              label = gtk_grid_get_child_at (grid, c, r);
              label_set_markup (label, cell->markup);
            }

          gtk_label_set_xalign (GTK_LABEL (label), cell_xalign (cell->align));
        }
    }
}

/* --- block widgets ------------------------------------------------------------------ */

static GtkWidget *
build_block (KagedMarkdownView        *self,
             const KagedMarkdownBlock *block)
{
  GtkWidget *widget = NULL;
  BlockInfo *info = g_new0 (BlockInfo, 1);

  info->type = block->type;
  info->serial = block->serial;
  info->level = block->level;
  info->start = block->start;
  info->ordered = block->ordered;
  info->task = block->task;

  switch (block->type)
    {
    case KAGED_MARKDOWN_BLOCK_PARAGRAPH:
    case KAGED_MARKDOWN_BLOCK_TABLE_CELL:
      widget = new_label (block->markup);
      gtk_widget_add_css_class (widget, "kaged-markdown-paragraph");
      break;

    case KAGED_MARKDOWN_BLOCK_HEADING:
      widget = new_label (block->markup);
      gtk_widget_add_css_class (widget, "kaged-markdown-heading");
      gtk_widget_add_css_class (widget, heading_class (block->level));
      break;

    case KAGED_MARKDOWN_BLOCK_CODE:
      widget = kaged_code_block_new ();
      kaged_code_block_set_language (KAGED_CODE_BLOCK (widget), block->language);
      kaged_code_block_set_code (KAGED_CODE_BLOCK (widget), block->text);
      break;

    case KAGED_MARKDOWN_BLOCK_RULE:
      widget = gtk_separator_new (GTK_ORIENTATION_HORIZONTAL);
      gtk_widget_add_css_class (widget, "kaged-markdown-rule");
      break;

    case KAGED_MARKDOWN_BLOCK_QUOTE:
      widget = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
      gtk_widget_add_css_class (widget, "kaged-markdown-quote");
      break;

    case KAGED_MARKDOWN_BLOCK_LIST:
      widget = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
      gtk_widget_add_css_class (widget, "kaged-markdown-list");
      break;

    case KAGED_MARKDOWN_BLOCK_LIST_ITEM:
      {
        GtkWidget *marker = gtk_label_new (NULL);
        GtkWidget *content = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);

        widget = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
        gtk_widget_add_css_class (marker, "kaged-markdown-marker");
        gtk_label_set_xalign (GTK_LABEL (marker), 1.0);
        gtk_widget_set_valign (marker, GTK_ALIGN_START);
        gtk_widget_set_hexpand (content, TRUE);
        gtk_box_append (GTK_BOX (widget), marker);
        gtk_box_append (GTK_BOX (widget), content);
      }
      break;

    case KAGED_MARKDOWN_BLOCK_TABLE:
    case KAGED_MARKDOWN_BLOCK_TABLE_ROW:
    default:
      widget = gtk_grid_new ();
      gtk_widget_add_css_class (widget, "kaged-markdown-table");
      if (block->type == KAGED_MARKDOWN_BLOCK_TABLE)
        {
          info->n_rows = count_rows (block);
          info->n_columns = count_columns (block);
          fill_table (GTK_GRID (widget), block, TRUE);
        }
      break;
    }

  g_object_set_qdata_full (G_OBJECT (widget), block_info_quark, info, g_free);
  self->widgets_built++;

  /* Containers are filled once they carry their info. */
  if (block->type == KAGED_MARKDOWN_BLOCK_QUOTE || block->type == KAGED_MARKDOWN_BLOCK_LIST)
    sync_children (self, widget, NULL, block->children);
  else if (block->type == KAGED_MARKDOWN_BLOCK_LIST_ITEM)
    sync_children (self, item_get_content (widget), NULL, block->children);

  if (block->type == KAGED_MARKDOWN_BLOCK_LIST)
    update_markers (widget);

  return widget;
}

/* Shows @block in @widget, built for an earlier version of the block, if
 * it can; returns whether it did. */
static gboolean
update_block (KagedMarkdownView        *self,
              GtkWidget                *widget,
              const KagedMarkdownBlock *block)
{
  BlockInfo *info = get_info (widget);

  if (info == NULL || info->type != block->type)
    return FALSE;

  switch (block->type)
    {
    case KAGED_MARKDOWN_BLOCK_PARAGRAPH:
    case KAGED_MARKDOWN_BLOCK_TABLE_CELL:
      label_set_markup (widget, block->markup);
      break;

    case KAGED_MARKDOWN_BLOCK_HEADING:
      if (info->level != block->level)
        return FALSE;
      label_set_markup (widget, block->markup);
      break;

    case KAGED_MARKDOWN_BLOCK_CODE:
      kaged_code_block_set_language (KAGED_CODE_BLOCK (widget), block->language);
      kaged_code_block_set_code (KAGED_CODE_BLOCK (widget), block->text);
      break;

    case KAGED_MARKDOWN_BLOCK_RULE:
      break;

    case KAGED_MARKDOWN_BLOCK_QUOTE:
      sync_children (self, widget, gtk_widget_get_first_child (widget), block->children);
      break;

    case KAGED_MARKDOWN_BLOCK_LIST:
      if (info->ordered != block->ordered || info->start != block->start)
        return FALSE;
      sync_children (self, widget, gtk_widget_get_first_child (widget), block->children);
      update_markers (widget);
      break;

    case KAGED_MARKDOWN_BLOCK_LIST_ITEM:
      info->task = block->task;
      sync_children (self, item_get_content (widget),
                     gtk_widget_get_first_child (item_get_content (widget)), block->children);
      break;

    case KAGED_MARKDOWN_BLOCK_TABLE:
      if (info->n_rows != count_rows (block) || info->n_columns != count_columns (block))
        return FALSE;
      fill_table (GTK_GRID (widget), block, FALSE);
      break;

    case KAGED_MARKDOWN_BLOCK_TABLE_ROW:
    default:
      return FALSE;
    }

  info->serial = block->serial;
  return TRUE;
}

/* Takes the keyboard focus from @widget or what it holds, before it goes.
 * GTK 4.8 would keep pointing at a widget that went inside another one,
 * and then ask that freed widget where the focus should move. */
static void
release_focus (GtkWidget *widget)
{
  GtkRoot *root = gtk_widget_get_root (widget);
  GtkWidget *focus = root != NULL ? gtk_root_get_focus (root) : NULL;

  if (focus != NULL && (focus == widget || gtk_widget_is_ancestor (focus, widget)))
    gtk_root_set_focus (root, NULL);
}

static void
remove_child (GtkWidget *container,
              GtkWidget *child)
{
  release_focus (child);
  if (GTK_IS_BOX (container))
    gtk_box_remove (GTK_BOX (container), child);
  else
    gtk_widget_unparent (child);
}

/* Makes @child, a child of @container or %NULL, show @block: it stays as
 * it is when its block was not parsed again, is updated in place if it
 * can be, or is replaced by a new widget (one added at the end for %NULL).
 * Returns the child after it. */
static GtkWidget *
sync_block (KagedMarkdownView        *self,
            GtkWidget                *container,
            GtkWidget                *child,
            const KagedMarkdownBlock *block)
{
  GtkWidget *next = child != NULL ? gtk_widget_get_next_sibling (child) : NULL;

  if (child != NULL && get_info (child) != NULL && get_info (child)->serial == block->serial)
    return next;

  if (child == NULL || !update_block (self, child, block))
    {
      GtkWidget *widget = build_block (self, block);

      gtk_widget_insert_before (widget, container, child);
      if (child != NULL)
        remove_child (container, child);
    }

  return next;
}

/* Removes the children of @container from @child on. */
static void
remove_from (GtkWidget *container,
             GtkWidget *child)
{
  while (child != NULL)
    {
      GtkWidget *next = gtk_widget_get_next_sibling (child);

      remove_child (container, child);
      child = next;
    }
}

/* Makes the children of @container from @child on show @blocks, and
 * removes the widgets left over. */
static void
sync_children (KagedMarkdownView *self,
               GtkWidget         *container,
               GtkWidget         *child,
               GPtrArray         *blocks)
{
  guint n_blocks = blocks != NULL ? blocks->len : 0;

  for (guint i = 0; i < n_blocks; i++)
    child = sync_block (self, container, child, g_ptr_array_index (blocks, i));

  remove_from (container, child);
}

/* --- groups of final blocks ------------------------------------------------------------ */

/*
 * Blocks that are final never change while the reply grows. In a long
 * reply they sit in groups of about GROUP_SIZE, each a widget of its own:
 * when the last block grows, the view lays out and draws its few groups
 * and the blocks still open, and GTK keeps each group's size and drawing
 * as they were instead of going through every block of the reply.
 *
 * New blocks go to the tail, the last group, which holds the blocks still
 * open. Once it holds GROUP_SIZE blocks, all final, and another block
 * starts, the tail becomes a group as it is and a new tail takes the new
 * block. A widget stays in the group it was built in: moving it would
 * unrealize it and have GTK compute its style and lay it out anew.
 *
 * Adding a widget to a parent makes GTK check the style of every widget
 * under that parent again (its first child and all that follow, with their
 * children). So groups sit in shelves of SHELF_SIZE, and shelves are made
 * SHELF_SIZE at a time, empty, inside the last shelf of the ones before:
 * a block that starts restyles the tail's few blocks, and a new tail the
 * groups of one shelf, however long the reply. Shelves nest a level deeper
 * after the first GROUP_SIZE × SHELF_SIZE blocks, then once every
 * GROUP_SIZE × SHELF_SIZE × SHELF_SIZE.
 */
#define GROUP_SIZE 16
#define SHELF_SIZE 16
#define BLOCK_SPACING 12

#define KAGED_TYPE_MARKDOWN_GROUP (kaged_markdown_group_get_type ())
G_DECLARE_FINAL_TYPE (KagedMarkdownGroup, kaged_markdown_group, KAGED, MARKDOWN_GROUP, GtkWidget)

struct _KagedMarkdownGroup
{
  GtkWidget parent_instance;

  KagedMarkdownView *view;
  /* A shelf holds groups; the tail, the blocks not grouped yet */
  gboolean shelf;
  gboolean tail;
};

G_DEFINE_FINAL_TYPE (KagedMarkdownGroup, kaged_markdown_group, GTK_TYPE_WIDGET)

static void kaged_markdown_group_snapshot (GtkWidget   *widget,
                                           GtkSnapshot *snapshot);

static gboolean
is_shelf (GtkWidget *widget)
{
  return KAGED_IS_MARKDOWN_GROUP (widget) && KAGED_MARKDOWN_GROUP (widget)->shelf;
}

/* Whether @child is laid out: a shelf made ahead, still empty, is not,
 * nor spaced from the others. */
static gboolean
takes_room (GtkWidget *child)
{
  if (!gtk_widget_should_layout (child))
    return FALSE;
  if (!is_shelf (child))
    return TRUE;

  for (GtkWidget *grandchild = gtk_widget_get_first_child (child); grandchild != NULL;
       grandchild = gtk_widget_get_next_sibling (grandchild))
    if (gtk_widget_should_layout (grandchild))
      return TRUE;

  return FALSE;
}

/* Whether measuring or laying out @self goes through blocks that are
 * final: a group does, a shelf only asks its groups, which keep their size
 * while the tail changes, and the tail holds the blocks still open. */
static void
count_layout (KagedMarkdownGroup *self)
{
  if (self->view != NULL && !self->tail && !self->shelf)
    self->view->group_layouts++;
}

/*
 * How narrow a block gets does not depend on its text: a wrapped label's
 * narrowest is LABEL_MIN_WIDTH_CHARS, a code block scrolls, a list item or a
 * quote holds such labels. So a block's minimum width, once measured, is
 * kept. Measuring its width again would also lay all its text out on one
 * line, for a natural width nothing here uses: milliseconds for a long
 * paragraph, each time anything before it in the reply changes.
 */
static int
block_minimum_width (KagedMarkdownGroup *group,
                     GtkWidget          *block)
{
  static GQuark quark;
  gpointer kept;
  int minimum = 0;

  if (G_UNLIKELY (quark == 0))
    quark = g_quark_from_static_string ("kaged-markdown-minimum-width");

  if ((kept = g_object_get_qdata (G_OBJECT (block), quark)) != NULL)
    return GPOINTER_TO_INT (kept) - 1;

  gtk_widget_measure (block, GTK_ORIENTATION_HORIZONTAL, -1, &minimum, NULL, NULL, NULL);
  g_object_set_qdata (G_OBJECT (block), quark, GINT_TO_POINTER (minimum + 1));
  if (group->view != NULL)
    group->view->width_measures++;

  return minimum;
}

static void
kaged_markdown_group_measure (GtkWidget      *widget,
                              GtkOrientation  orientation,
                              int             for_size,
                              int            *minimum,
                              int            *natural,
                              int            *minimum_baseline,
                              int            *natural_baseline)
{
  gboolean first = TRUE;

  count_layout (KAGED_MARKDOWN_GROUP (widget));

  *minimum = *natural = 0;
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      int child_minimum = 0;
      int child_natural = 0;

      if (!takes_room (child))
        continue;

      if (orientation == GTK_ORIENTATION_VERTICAL)
        {
          gtk_widget_measure (child, orientation, for_size, &child_minimum, &child_natural, NULL, NULL);
          *minimum += child_minimum + (first ? 0 : BLOCK_SPACING);
          *natural += child_natural + (first ? 0 : BLOCK_SPACING);
        }
      else
        {
          /* The width a group needs is its widest block's minimum; it
           * takes whatever width the reply has. */
          if (KAGED_IS_MARKDOWN_GROUP (child))
            gtk_widget_measure (child, orientation, -1, &child_minimum, NULL, NULL, NULL);
          else
            child_minimum = block_minimum_width (KAGED_MARKDOWN_GROUP (widget), child);
          *minimum = *natural = MAX (*minimum, child_minimum);
        }
      first = FALSE;
    }
}

static void
kaged_markdown_group_size_allocate (GtkWidget *widget,
                                    int        width,
                                    int        height,
                                    int        baseline)
{
  int minimum = 0;
  int natural = 0;
  gboolean use_natural;
  int y = 0;

  kaged_markdown_group_measure (widget, GTK_ORIENTATION_VERTICAL, width, &minimum, &natural, NULL, NULL);
  use_natural = natural <= height;

  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      int child_minimum = 0;
      int child_natural = 0;
      int child_height;

      if (!takes_room (child))
        {
          if (gtk_widget_should_layout (child))
            gtk_widget_size_allocate (child, &(GtkAllocation) { 0, y, width, 0 }, -1);
          continue;
        }

      gtk_widget_measure (child, GTK_ORIENTATION_VERTICAL, width, &child_minimum, &child_natural, NULL, NULL);
      child_height = use_natural ? child_natural : child_minimum;
      gtk_widget_size_allocate (child, &(GtkAllocation) { 0, y, width, child_height }, -1);
      y += child_height + BLOCK_SPACING;
    }
}

/* Wrapped paragraphs are taller when narrower: the group's height depends
 * on the width it is given, as its blocks' do. */
static GtkSizeRequestMode
kaged_markdown_group_get_request_mode (GtkWidget *widget)
{
  return GTK_SIZE_REQUEST_HEIGHT_FOR_WIDTH;
}

static void
kaged_markdown_group_dispose (GObject *object)
{
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (object))) != NULL)
    gtk_widget_unparent (child);

  G_OBJECT_CLASS (kaged_markdown_group_parent_class)->dispose (object);
}

static void
kaged_markdown_group_class_init (KagedMarkdownGroupClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_markdown_group_dispose;
  widget_class->get_request_mode = kaged_markdown_group_get_request_mode;
  widget_class->measure = kaged_markdown_group_measure;
  widget_class->size_allocate = kaged_markdown_group_size_allocate;
  widget_class->snapshot = kaged_markdown_group_snapshot;
}

static void
kaged_markdown_group_init (KagedMarkdownGroup *self)
{
}

static GtkWidget *
new_group (KagedMarkdownView *self,
           gboolean           shelf)
{
  KagedMarkdownGroup *group = g_object_new (KAGED_TYPE_MARKDOWN_GROUP, NULL);

  group->view = self;
  group->shelf = shelf;

  return GTK_WIDGET (group);
}

/* How many groups @shelf holds. */
static guint
count_groups (GtkWidget *shelf)
{
  guint n_groups = 0;

  for (GtkWidget *child = gtk_widget_get_first_child (shelf); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    if (!is_shelf (child))
      n_groups++;

  return n_groups;
}

/* Starts a new tail at the end of the tail's shelf, or in the next shelf
 * when that one is full: made with SHELF_SIZE - 1 others, inside the full
 * one, when there is none. */
static void
add_tail (KagedMarkdownView *self)
{
  GtkWidget *shelf = self->tail != NULL ? gtk_widget_get_parent (self->tail) : NULL;

  if (shelf == NULL)
    {
      shelf = new_group (self, TRUE);
      gtk_widget_set_parent (shelf, GTK_WIDGET (self));
    }
  else if (count_groups (shelf) >= SHELF_SIZE)
    {
      GtkWidget *next = gtk_widget_get_next_sibling (shelf);

      for (guint i = 0; next == NULL && i < SHELF_SIZE; i++)
        gtk_widget_insert_before (new_group (self, TRUE), shelf, NULL);
      if (next == NULL)
        next = gtk_widget_get_next_sibling (self->tail);

      shelf = next;
    }

  self->tail = new_group (self, FALSE);
  KAGED_MARKDOWN_GROUP (self->tail)->tail = TRUE;
  gtk_widget_set_visible (self->tail, FALSE);
  gtk_widget_insert_before (self->tail, shelf, NULL);
}

/* The tail, holding @n_blocks final blocks, becomes a group as it is. */
static void
seal_tail (KagedMarkdownView *self,
           guint              n_blocks)
{
  KAGED_MARKDOWN_GROUP (self->tail)->tail = FALSE;
  gtk_widget_set_visible (self->tail, TRUE);
  self->n_grouped += n_blocks;
  add_tail (self);
}

/* The widget of the last block in a group, or %NULL. */
static GtkWidget *
last_grouped (KagedMarkdownView *self)
{
  GtkWidget *group = gtk_widget_get_prev_sibling (self->tail);

  /* The first in its shelf: the group before is the last one of the
   * shelf before, or the one before the shelf, in the shelf that holds it. */
  if (group == NULL)
    {
      group = gtk_widget_get_prev_sibling (gtk_widget_get_parent (self->tail));
      if (group != NULL && is_shelf (group))
        group = gtk_widget_get_last_child (group);
    }

  return group != NULL ? gtk_widget_get_last_child (group) : NULL;
}

/* Whether the groups still show the first blocks of the document: they
 * do unless the text was replaced by one that does not continue it. */
static gboolean
groups_hold (KagedMarkdownView *self)
{
  GtkWidget *last;

  if (self->n_grouped == 0)
    return TRUE;
  if (kaged_markdown_get_n_final (self->document) < self->n_grouped)
    return FALSE;

  /* Final blocks stay at their address with their serial until the
   * text is replaced, when all of them are parsed anew. */
  last = last_grouped (self);
  return last != NULL && get_info (last) != NULL &&
         get_info (last)->serial ==
           kaged_markdown_get_block (self->document, self->n_grouped - 1)->serial;
}

/* Removes the groups, the shelves and the tail, for a new tail. */
static void
remove_groups (KagedMarkdownView *self)
{
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))) != NULL)
    {
      release_focus (child);
      gtk_widget_unparent (child);
    }
  self->tail = NULL;
  self->n_grouped = 0;
  add_tail (self);
}

/* Makes the tail show the blocks after the groups: a block that starts
 * after GROUP_SIZE final ones starts a new tail. */
static void
sync_tail (KagedMarkdownView *self)
{
  guint n_blocks = kaged_markdown_get_n_blocks (self->document);
  guint n_final = kaged_markdown_get_n_final (self->document);
  GtkWidget *child = gtk_widget_get_first_child (self->tail);
  guint n_tail = 0;

  for (guint i = self->n_grouped; i < n_blocks; i++)
    {
      if (child == NULL && n_tail >= GROUP_SIZE && i <= n_final)
        {
          seal_tail (self, n_tail);
          n_tail = 0;
        }

      child = sync_block (self, self->tail, child, kaged_markdown_get_block (self->document, i));
      n_tail++;
    }

  remove_from (self->tail, child);

  /* An empty tail takes no room, nor spacing. */
  gtk_widget_set_visible (self->tail, gtk_widget_get_first_child (self->tail) != NULL);
}

/* --- drawing only what can be seen ----------------------------------------------------- */

/* A reply with fewer blocks is drawn whole. */
#define CULL_MIN_BLOCKS 48

/* What is drawn of the shelves follows the scrolling. */
static void
queue_draw_shelves (GtkWidget *widget)
{
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      if (!is_shelf (child))
        continue;
      gtk_widget_queue_draw (child);
      queue_draw_shelves (child);
    }
}

static void
vadjustment_changed_cb (KagedMarkdownView *self)
{
  if (self->n_grouped >= CULL_MIN_BLOCKS)
    queue_draw_shelves (GTK_WIDGET (self));
}

static void
watch_scrollable (KagedMarkdownView *self,
                  GtkWidget         *scrollable)
{
  GtkAdjustment *vadjustment = NULL;

  if (scrollable != NULL)
    vadjustment = gtk_scrollable_get_vadjustment (GTK_SCROLLABLE (scrollable));

  if (self->vadjustment != NULL)
    g_signal_handlers_disconnect_by_data (self->vadjustment, self);
  g_set_object (&self->vadjustment, vadjustment);
  self->scrollable = scrollable;

  /* What is visible moves with the scrolling: drawn again then. */
  if (vadjustment != NULL)
    g_signal_connect_object (vadjustment, "value-changed",
                             G_CALLBACK (vadjustment_changed_cb), self, G_CONNECT_SWAPPED);
}

static void
kaged_markdown_view_map (GtkWidget *widget)
{
  KagedMarkdownView *self = KAGED_MARKDOWN_VIEW (widget);

  GTK_WIDGET_CLASS (kaged_markdown_view_parent_class)->map (widget);

  watch_scrollable (self, gtk_widget_get_ancestor (widget, GTK_TYPE_SCROLLABLE));
}

static void
kaged_markdown_view_unmap (GtkWidget *widget)
{
  KagedMarkdownView *self = KAGED_MARKDOWN_VIEW (widget);

  watch_scrollable (self, NULL);

  GTK_WIDGET_CLASS (kaged_markdown_view_parent_class)->unmap (widget);
}

/* The part of @widget within a screen of what the scrollable of @self
 * shows, in @widget's coordinates; FALSE when it is not known. */
static gboolean
visible_range (KagedMarkdownView *self,
               GtkWidget         *widget,
               float             *top,
               float             *bottom)
{
  graphene_rect_t visible;

  /* A scrollable places what it scrolls (a viewport its child, a list its
   * rows) where the scrolling puts it: its bounds are what it shows. */
  if (self->scrollable == NULL || !gtk_widget_compute_bounds (self->scrollable, widget, &visible))
    return FALSE;

  *top = visible.origin.y - visible.size.height;
  *bottom = visible.origin.y + 2 * visible.size.height;
  return TRUE;
}

static void
snapshot_children (GtkWidget   *widget,
                   GtkSnapshot *snapshot,
                   gboolean     cull,
                   float        top,
                   float        bottom)
{
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      graphene_rect_t bounds;

      if (!cull)
        {
          gtk_widget_snapshot_child (widget, child, snapshot);
          continue;
        }

      if (!gtk_widget_compute_bounds (child, widget, &bounds))
        continue;
      if (bounds.origin.y > bottom)
        break;
      if (bounds.origin.y + bounds.size.height >= top)
        gtk_widget_snapshot_child (widget, child, snapshot);
    }
}

/*
 * A long reply in a scrolled list is mostly out of sight, and while it
 * streams every frame would draw all of its blocks again: only the shelves
 * and groups within a screen of the visible part are drawn.
 */
/* Draws the children of @widget, only those near what is visible when
 * @may_cull and that is known. */
static void
snapshot_near_visible (GtkWidget         *widget,
                       GtkSnapshot       *snapshot,
                       KagedMarkdownView *view,
                       gboolean           may_cull)
{
  float top = 0;
  float bottom = 0;
  gboolean cull = may_cull && view != NULL && visible_range (view, widget, &top, &bottom);

  snapshot_children (widget, snapshot, cull, top, bottom);
}

static void
kaged_markdown_group_snapshot (GtkWidget   *widget,
                               GtkSnapshot *snapshot)
{
  KagedMarkdownGroup *self = KAGED_MARKDOWN_GROUP (widget);

  snapshot_near_visible (widget, snapshot, self->view,
                         self->shelf && self->view != NULL && self->view->n_grouped >= CULL_MIN_BLOCKS);
}

/* --- the widget ---------------------------------------------------------------------- */

static void
kaged_markdown_view_dispose (GObject *object)
{
  KagedMarkdownView *self = (KagedMarkdownView *)object;
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))) != NULL)
    {
      release_focus (child);
      gtk_widget_unparent (child);
    }
  self->tail = NULL;

  g_clear_object (&self->document);
  watch_scrollable (self, NULL);

  G_OBJECT_CLASS (kaged_markdown_view_parent_class)->dispose (object);
}

static void
kaged_markdown_view_get_property (GObject    *object,
                                  guint       prop_id,
                                  GValue     *value,
                                  GParamSpec *pspec)
{
  KagedMarkdownView *self = KAGED_MARKDOWN_VIEW (object);

  switch (prop_id)
    {
    case PROP_TEXT:
      g_value_set_string (value, kaged_markdown_view_get_text (self));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_markdown_view_set_property (GObject      *object,
                                  guint         prop_id,
                                  const GValue *value,
                                  GParamSpec   *pspec)
{
  KagedMarkdownView *self = KAGED_MARKDOWN_VIEW (object);

  switch (prop_id)
    {
    case PROP_TEXT:
      kaged_markdown_view_set_text (self, g_value_get_string (value));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

/*
 * Tab through the text
 *
 * Paragraphs, headings, list items and table cells are selectable labels,
 * focusable so that a click can select their text and Ctrl+C copy it. Tab
 * passes them by: it stops on what can be used, links (a label that has
 * some) and what code blocks offer, in the order they are shown. A message
 * row moves the focus the same way, past its own text.
 */

static gboolean move_focus_into (GtkWidget        *widget,
                                 GtkDirectionType  direction);

static gboolean
label_has_links (GtkWidget *label)
{
  return strstr (gtk_label_get_label (GTK_LABEL (label)), "<a ") != NULL;
}

/* Moves the focus on from where it is in @widget, or into it. */
static gboolean
move_focus_within (GtkWidget        *widget,
                   GtkDirectionType  direction)
{
  gboolean forward = direction == GTK_DIR_TAB_FORWARD;
  GtkWidget *focus_child = gtk_widget_get_focus_child (widget);
  GtkWidget *child;

  if (focus_child != NULL)
    {
      if (move_focus_into (focus_child, direction))
        return TRUE;
      child = forward ? gtk_widget_get_next_sibling (focus_child)
                      : gtk_widget_get_prev_sibling (focus_child);
    }
  else
    {
      child = forward ? gtk_widget_get_first_child (widget) : gtk_widget_get_last_child (widget);
    }

  for (; child != NULL;
       child = forward ? gtk_widget_get_next_sibling (child) : gtk_widget_get_prev_sibling (child))
    {
      if (move_focus_into (child, direction))
        return TRUE;
    }

  return FALSE;
}

static gboolean
move_focus_into (GtkWidget        *widget,
                 GtkDirectionType  direction)
{
  /* Shown: not hidden, nor on a stack's other page or in a closed revealer. */
  if (!gtk_widget_get_visible (widget) || !gtk_widget_get_child_visible (widget) ||
      !gtk_widget_get_can_focus (widget) || !gtk_widget_is_sensitive (widget))
    return FALSE;

  /* A label with links moves from link to link, then on. */
  if (GTK_IS_LABEL (widget))
    return label_has_links (widget) && gtk_widget_child_focus (widget, direction);

  /* A control, or a code block's text view: as it moves the focus itself. */
  if (gtk_widget_get_focusable (widget) || gtk_widget_get_first_child (widget) == NULL)
    return gtk_widget_child_focus (widget, direction);

  return move_focus_within (widget, direction);
}

/**
 * kaged_markdown_view_focus_past_text:
 * @widget: a widget holding text and controls: a #KagedMarkdownView, or a
 *   widget that holds one
 * @direction: where the focus moves
 *
 * Moves the focus with Tab in @widget as a reader expects: past its
 * selectable text, to its links and controls.
 *
 * Returns: whether the focus moved within @widget
 */
gboolean
kaged_markdown_view_focus_past_text (GtkWidget        *widget,
                                     GtkDirectionType  direction)
{
  g_return_val_if_fail (GTK_IS_WIDGET (widget), FALSE);

  return move_focus_within (widget, direction);
}

static gboolean
kaged_markdown_view_focus (GtkWidget        *widget,
                           GtkDirectionType  direction)
{
  if (direction != GTK_DIR_TAB_FORWARD && direction != GTK_DIR_TAB_BACKWARD)
    return GTK_WIDGET_CLASS (kaged_markdown_view_parent_class)->focus (widget, direction);

  return kaged_markdown_view_focus_past_text (widget, direction);
}

static void
kaged_markdown_view_class_init (KagedMarkdownViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_markdown_view_dispose;
  object_class->get_property = kaged_markdown_view_get_property;
  object_class->set_property = kaged_markdown_view_set_property;
  widget_class->focus = kaged_markdown_view_focus;

  /**
   * KagedMarkdownView:text:
   *
   * The Markdown shown.
   */
  properties [PROP_TEXT] =
    g_param_spec_string ("text", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);

  block_info_quark = g_quark_from_static_string ("kaged-markdown-block-info");

  widget_class->map = kaged_markdown_view_map;
  widget_class->unmap = kaged_markdown_view_unmap;

  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BOX_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "markdown");
}

static void
kaged_markdown_view_init (KagedMarkdownView *self)
{
  GtkLayoutManager *layout = gtk_widget_get_layout_manager (GTK_WIDGET (self));

  gtk_orientable_set_orientation (GTK_ORIENTABLE (layout), GTK_ORIENTATION_VERTICAL);
  gtk_box_layout_set_spacing (GTK_BOX_LAYOUT (layout), BLOCK_SPACING);

  self->document = kaged_markdown_new ();

  add_tail (self);
}

GtkWidget *
kaged_markdown_view_new (void)
{
  return g_object_new (KAGED_TYPE_MARKDOWN_VIEW, NULL);
}

const char *
kaged_markdown_view_get_text (KagedMarkdownView *self)
{
  g_return_val_if_fail (KAGED_IS_MARKDOWN_VIEW (self), NULL);

  return kaged_markdown_get_text (self->document);
}

/**
 * kaged_markdown_view_set_text:
 *
 * Shows @text. When it extends the previous text (a streamed reply), only
 * the blocks after the last final one are parsed and only their widgets
 * change.
 */
void
kaged_markdown_view_set_text (KagedMarkdownView *self,
                              const char        *text)
{
  g_return_if_fail (KAGED_IS_MARKDOWN_VIEW (self));

  if (!kaged_markdown_set_text (self->document, text))
    return;

  if (!groups_hold (self))
    remove_groups (self);
  sync_tail (self);

  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_TEXT]);
}

/**
 * kaged_markdown_view_get_group_layouts:
 *
 * Returns: how many times the groups of final blocks were measured or laid
 *   out; it stays the same while only the blocks after them change
 */
guint64
kaged_markdown_view_get_group_layouts (KagedMarkdownView *self)
{
  g_return_val_if_fail (KAGED_IS_MARKDOWN_VIEW (self), 0);

  return self->group_layouts;
}

/**
 * kaged_markdown_view_get_width_measures:
 *
 * Returns: how many times the view measured the width of one of its
 *   blocks: once a block
 */
guint64
kaged_markdown_view_get_width_measures (KagedMarkdownView *self)
{
  g_return_val_if_fail (KAGED_IS_MARKDOWN_VIEW (self), 0);

  return self->width_measures;
}

/**
 * kaged_markdown_view_get_document:
 *
 * Returns: (transfer none): the parsed document shown
 */
KagedMarkdown *
kaged_markdown_view_get_document (KagedMarkdownView *self)
{
  g_return_val_if_fail (KAGED_IS_MARKDOWN_VIEW (self), NULL);

  return self->document;
}

/**
 * kaged_markdown_view_get_widgets_built:
 *
 * Returns: how many block widgets the view has built so far
 */
guint64
kaged_markdown_view_get_widgets_built (KagedMarkdownView *self)
{
  g_return_val_if_fail (KAGED_IS_MARKDOWN_VIEW (self), 0);

  return self->widgets_built;
}
