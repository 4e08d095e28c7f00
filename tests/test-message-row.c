/* test-message-row.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The widgets of a conversation, under a virtual X server: a reply's
 * Markdown, its code blocks, and the message row in each state.
 */

#include "config.h"

#include <adwaita.h>

#include "kaged-code-block.h"
#include "kaged-icons.h"
#include "kaged-later-messages.h"
#include "kaged-markdown-view.h"
#include "kaged-message-details.h"
#include "kaged-message-row.h"
#include "kaged-retry-text.h"
#include "kaged-test-time.h"

/* --- helpers ------------------------------------------------------------------------ */

static void
iterate (void)
{
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

/* Runs the main loop for @ms (longer on a slowed test run), through the
 * frames it lays out. */
static void
settle (guint ms)
{
  kaged_test_run_for (kaged_test_usec ((gint64)ms * 1000));
}

static GtkWindow *
show_in_window (GtkWidget *widget)
{
  GtkWindow *window = GTK_WINDOW (gtk_window_new ());

  gtk_window_set_default_size (window, 640, 480);
  gtk_window_set_child (window, widget);
  gtk_window_present (window);
  iterate ();

  return window;
}

/* Adds the nodes of @type drawn under @node to @found, in drawing order. */
static void
collect_nodes (GskRenderNode     *node,
               GskRenderNodeType  type,
               GPtrArray         *found)
{
  GskRenderNodeType node_type;
  GskRenderNode *child = NULL;

  if (node == NULL)
    return;

  node_type = gsk_render_node_get_node_type (node);
  if (node_type == type)
    g_ptr_array_add (found, node);

  if (node_type == GSK_CONTAINER_NODE)
    {
      for (guint i = 0; i < gsk_container_node_get_n_children (node); i++)
        collect_nodes (gsk_container_node_get_child (node, i), type, found);
      return;
    }

  if (node_type == GSK_TRANSFORM_NODE)
    child = gsk_transform_node_get_child (node);
  else if (node_type == GSK_CLIP_NODE)
    child = gsk_clip_node_get_child (node);
  else if (node_type == GSK_ROUNDED_CLIP_NODE)
    child = gsk_rounded_clip_node_get_child (node);
  else if (node_type == GSK_OPACITY_NODE)
    child = gsk_opacity_node_get_child (node);
  else if (node_type == GSK_COLOR_MATRIX_NODE)
    child = gsk_color_matrix_node_get_child (node);
  else if (node_type == GSK_DEBUG_NODE)
    child = gsk_debug_node_get_child (node);

  collect_nodes (child, type, found);
}

static guint frames_painted;

static void
count_frame_cb (GdkFrameClock *clock,
                gpointer       user_data)
{
  frames_painted++;
}

/* Draws @n frames of @window, as the frame clock does while a reply streams. */
static void
run_frames (GtkWindow *window,
            guint      n)
{
  GdkFrameClock *clock = gdk_surface_get_frame_clock (gtk_native_get_surface (GTK_NATIVE (window)));
  gulong handler = g_signal_connect (clock, "after-paint", G_CALLBACK (count_frame_cb), NULL);
  guint until = frames_painted + n;

  while (frames_painted < until)
    {
      gdk_frame_clock_request_phase (clock, GDK_FRAME_CLOCK_PHASE_PAINT);
      g_main_context_iteration (NULL, TRUE);
    }
  g_signal_handler_disconnect (clock, handler);
}

typedef gboolean (*Match) (GtkWidget  *widget,
                           const char *data);

static GtkWidget *
find_widget (GtkWidget  *root,
             Match       match,
             const char *data)
{
  if (match (root, data))
    return root;

  for (GtkWidget *child = gtk_widget_get_first_child (root);
       child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_widget (child, match, data);

      if (found != NULL)
        return found;
    }

  return NULL;
}

static gboolean
is_button_named (GtkWidget  *widget,
                 const char *tooltip)
{
  return GTK_IS_BUTTON (widget) &&
         (g_strcmp0 (gtk_widget_get_tooltip_text (widget), tooltip) == 0 ||
          g_strcmp0 (gtk_button_get_label (GTK_BUTTON (widget)), tooltip) == 0);
}

static gboolean
has_action (GtkWidget  *widget,
            const char *action_name)
{
  return GTK_IS_ACTIONABLE (widget) &&
         g_strcmp0 (gtk_actionable_get_action_name (GTK_ACTIONABLE (widget)), action_name) == 0;
}

static gboolean
is_label_with_text (GtkWidget  *widget,
                    const char *text)
{
  return GTK_IS_LABEL (widget) && g_strcmp0 (gtk_label_get_text (GTK_LABEL (widget)), text) == 0;
}

static gboolean
is_code_block (GtkWidget  *widget,
               const char *data)
{
  return KAGED_IS_CODE_BLOCK (widget);
}

static gboolean
is_text_view (GtkWidget  *widget,
              const char *data)
{
  return GTK_IS_TEXT_VIEW (widget);
}

static gboolean
is_grid (GtkWidget  *widget,
         const char *data)
{
  return GTK_IS_GRID (widget);
}

static GtkWidget *
button (GtkWidget  *root,
        const char *tooltip)
{
  GtkWidget *found = find_widget (root, is_button_named, tooltip);

  g_assert_nonnull (found);
  return found;
}

/* An icon-only button: its tooltip and its accessible name are @name. */
static void
assert_icon_button (GtkWidget  *root,
                    const char *name)
{
  GtkWidget *found = button (root, name);

  g_assert_cmpstr (gtk_widget_get_tooltip_text (found), ==, name);
  g_assert_null (gtk_button_get_label (GTK_BUTTON (found)));
  gtk_test_accessible_assert_property (GTK_ACCESSIBLE (found), GTK_ACCESSIBLE_PROPERTY_LABEL, name);
}

/* Whether the widget and all its ancestors are visible. */
static gboolean
shown (GtkWidget *widget)
{
  for (; widget != NULL; widget = gtk_widget_get_parent (widget))
    {
      if (!gtk_widget_get_visible (widget))
        return FALSE;
    }
  return TRUE;
}

static gboolean
is_shown_label_with_text (GtkWidget  *widget,
                          const char *text)
{
  return is_label_with_text (widget, text) && shown (widget);
}

static GtkWidget *
shown_label (GtkWidget  *root,
             const char *text)
{
  return find_widget (root, is_shown_label_with_text, text);
}

static void
click (GtkWidget *widget)
{
  g_assert_true (GTK_IS_BUTTON (widget));
  g_signal_emit_by_name (widget, "clicked");
}

static void
read_text_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  char **out = user_data;
  g_autoptr(GError) error = NULL;

  *out = gdk_clipboard_read_text_finish (GDK_CLIPBOARD (object), result, &error);
  g_assert_no_error (error);
  g_assert_nonnull (*out);
}

static char *
read_clipboard (GtkWidget *widget)
{
  char *text = NULL;

  gdk_clipboard_read_text_async (gtk_widget_get_clipboard (widget), NULL, read_text_cb, &text);
  while (text == NULL)
    g_main_context_iteration (NULL, TRUE);

  return text;
}

/* --- Markdown ------------------------------------------------------------------------ */

static const char fixture[] =
  "# Getting started\n"
  "\n"
  "Some **bold** text and a [link](https://gnome.org).\n"
  "\n"
  "| Name | Size |\n"
  "|------|-----:|\n"
  "| a.txt | 12 |\n"
  "| b.txt | 345 |\n"
  "\n"
  "```python\n"
  "def hello():\n"
  "    print(\"<hello>\")\n"
  "```\n"
  "\n"
  "<b>not bold</b> <span foreground=\"red\">plain</span>\n"
  "\n"
  "> quoted\n"
  "\n"
  "- one\n"
  "- two\n";

static gboolean
is_markdown_group (GtkWidget *widget)
{
  return widget != NULL && g_str_equal (G_OBJECT_TYPE_NAME (widget), "KagedMarkdownGroup");
}

/* The widget that holds the blocks of a reply not grouped yet: all of a
 * short one. It is the last that holds blocks, in shelves that may nest. */
static GtkWidget *
blocks_of (GtkWidget *view)
{
  GtkWidget *found = NULL;

  for (GtkWidget *child = gtk_widget_get_first_child (view); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *first = gtk_widget_get_first_child (child);

      if (!is_markdown_group (child) || first == NULL)
        continue;
      if (is_markdown_group (first))
        found = blocks_of (child) != NULL ? blocks_of (child) : found;
      else
        found = child;
    }

  return found;
}

static void
test_markdown_fixture (void)
{
  GtkWidget *view = kaged_markdown_view_new ();
  GtkWindow *window = show_in_window (view);
  GtkWidget *child;
  GtkWidget *grid;
  GtkWidget *code;
  GtkSourceBuffer *buffer;
  GtkSourceLanguage *language;
  g_autofree char *code_text = NULL;
  GtkTextIter start, end;
  guint n_children = 0;

  kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (view), fixture);
  iterate ();

  g_assert_cmpstr (kaged_markdown_view_get_text (KAGED_MARKDOWN_VIEW (view)), ==, fixture);

  for (child = gtk_widget_get_first_child (blocks_of (view)); child != NULL; child = gtk_widget_get_next_sibling (child))
    n_children++;
  g_assert_cmpuint (n_children, ==, 7);

  /* The heading, big. */
  child = gtk_widget_get_first_child (blocks_of (view));
  g_assert_true (GTK_IS_LABEL (child));
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (child)), ==, "Getting started");
  g_assert_true (gtk_widget_has_css_class (child, "title-1"));

  /* Emphasis and links are markup, the link opens only when safe. */
  child = gtk_widget_get_next_sibling (child);
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (child)), ==, "Some bold text and a link.");
  g_assert_true (gtk_label_get_selectable (GTK_LABEL (child)));
  g_assert_true (gtk_label_get_wrap (GTK_LABEL (child)));

  /* The table, as a grid of labels, the head in bold. */
  grid = find_widget (view, is_grid, NULL);
  g_assert_nonnull (grid);
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (gtk_grid_get_child_at (GTK_GRID (grid), 0, 0))), ==, "Name");
  g_assert_true (gtk_widget_has_css_class (gtk_grid_get_child_at (GTK_GRID (grid), 1, 0), "heading"));
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (gtk_grid_get_child_at (GTK_GRID (grid), 1, 2))), ==, "345");
  g_assert_cmpfloat (gtk_label_get_xalign (GTK_LABEL (gtk_grid_get_child_at (GTK_GRID (grid), 1, 2))), ==, 1.0);
  g_assert_null (gtk_grid_get_child_at (GTK_GRID (grid), 0, 3));

  /* The code, highlighted as Python. */
  code = find_widget (view, is_code_block, NULL);
  g_assert_nonnull (code);
  buffer = kaged_code_block_get_buffer (KAGED_CODE_BLOCK (code));
  language = gtk_source_buffer_get_language (buffer);
  g_assert_nonnull (language);
  g_assert_cmpstr (gtk_source_language_get_id (language), ==, "python3");
  gtk_text_buffer_get_bounds (GTK_TEXT_BUFFER (buffer), &start, &end);
  code_text = gtk_text_buffer_get_text (GTK_TEXT_BUFFER (buffer), &start, &end, FALSE);
  g_assert_cmpstr (code_text, ==, "def hello():\n    print(\"<hello>\")");
  g_assert_false (gtk_text_view_get_editable (GTK_TEXT_VIEW (find_widget (code, is_text_view, NULL))));
  g_assert_true (gtk_text_view_get_monospace (GTK_TEXT_VIEW (find_widget (code, is_text_view, NULL))));
  g_assert_nonnull (shown_label (code, "Python"));

  /* Raw HTML is text, not markup. */
  g_assert_nonnull (shown_label (view, "<b>not bold</b> <span foreground=\"red\">plain</span>"));

  gtk_window_destroy (window);
}

static void
test_markdown_streaming (void)
{
  KagedMarkdownView *view = KAGED_MARKDOWN_VIEW (kaged_markdown_view_new ());
  GtkWindow *window = show_in_window (GTK_WIDGET (view));
  g_autoptr(GString) text = g_string_new (NULL);
  GtkWidget *first;
  GtkWidget *last;
  GtkWidget *code;
  guint64 built;

  for (guint i = 0; i < 10; i++)
    g_string_append_printf (text, "Paragraph %u.\n\n", i);
  g_string_append (text, "Growing");
  kaged_markdown_view_set_text (view, text->str);
  iterate ();

  first = gtk_widget_get_first_child (blocks_of (GTK_WIDGET (view)));
  last = gtk_widget_get_last_child (blocks_of (GTK_WIDGET (view)));
  built = kaged_markdown_view_get_widgets_built (view);
  g_assert_cmpuint (built, ==, 11);

  /* Deltas into the last paragraph change its label, nothing else. */
  for (guint i = 0; i < 50; i++)
    {
      g_string_append (text, " word");
      kaged_markdown_view_set_text (view, text->str);
    }
  iterate ();
  g_assert_cmpuint (kaged_markdown_view_get_widgets_built (view), ==, built);
  g_assert_true (gtk_widget_get_first_child (blocks_of (GTK_WIDGET (view))) == first);
  g_assert_true (gtk_widget_get_last_child (blocks_of (GTK_WIDGET (view))) == last);
  g_assert_true (g_str_has_suffix (gtk_label_get_text (GTK_LABEL (last)), "word word"));

  /* A code block that grows stays the same widget. */
  g_string_append (text, "\n\n```c\nint a;\n");
  kaged_markdown_view_set_text (view, text->str);
  code = gtk_widget_get_last_child (blocks_of (GTK_WIDGET (view)));
  g_assert_true (KAGED_IS_CODE_BLOCK (code));
  built = kaged_markdown_view_get_widgets_built (view);
  for (guint i = 0; i < 20; i++)
    {
      g_string_append_printf (text, "int b%u;\n", i);
      kaged_markdown_view_set_text (view, text->str);
    }
  iterate ();
  g_assert_cmpuint (kaged_markdown_view_get_widgets_built (view), ==, built);
  g_assert_true (gtk_widget_get_last_child (blocks_of (GTK_WIDGET (view))) == code);
  g_assert_true (g_str_has_suffix (kaged_code_block_get_code (KAGED_CODE_BLOCK (code)), "int b19;"));
  g_assert_cmpstr (gtk_source_language_get_id (gtk_source_buffer_get_language (kaged_code_block_get_buffer (KAGED_CODE_BLOCK (code)))),
                   ==, "c");
  g_assert_true (gtk_widget_get_first_child (blocks_of (GTK_WIDGET (view))) == first);

  /* Text that is not a continuation (another version) replaces it all. */
  kaged_markdown_view_set_text (view, "Other");
  g_assert_true (gtk_widget_get_first_child (blocks_of (GTK_WIDGET (view))) == gtk_widget_get_last_child (blocks_of (GTK_WIDGET (view))));
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (gtk_widget_get_first_child (blocks_of (GTK_WIDGET (view))))), ==, "Other");

  gtk_window_destroy (window);
}

/* --- code blocks ------------------------------------------------------------------------- */

/* The id of the language @block highlights, once the idle that parses a
 * language no block used yet has run; %NULL for none. */
static const char *
language_id (KagedCodeBlock *block)
{
  GtkSourceLanguage *language;

  iterate ();
  language = gtk_source_buffer_get_language (kaged_code_block_get_buffer (block));

  return language != NULL ? gtk_source_language_get_id (language) : NULL;
}

static void
test_code_block_language (void)
{
  KagedCodeBlock *block = KAGED_CODE_BLOCK (g_object_ref_sink (kaged_code_block_new ()));

  kaged_code_block_set_language (block, "rs");
  kaged_code_block_set_code (block, "fn main() {}");
  g_assert_cmpstr (language_id (block), ==, "rust");

  kaged_code_block_set_language (block, "JSON");
  g_assert_cmpstr (language_id (block), ==, "json");

  kaged_code_block_set_language (block, "no-such-language");
  g_assert_null (language_id (block));

  /* GtkSourceView's hidden languages are parts of others, not for a
   * fence: some do not even load on their own. */
  kaged_code_block_set_language (block, "jsdoc");
  g_assert_null (language_id (block));
  kaged_code_block_set_language (block, "def");
  g_assert_null (language_id (block));
  g_assert_false (kaged_code_block_get_language_kept ("jsdoc"));

  /* Without a name, a shebang tells. */
  kaged_code_block_set_language (block, NULL);
  kaged_code_block_set_code (block, "#!/bin/sh\necho hi\n");
  g_assert_cmpstr (language_id (block), ==, "sh");

  g_object_unref (block);
}

/* A language a block highlighted stays parsed once the block goes: a
 * list that recycles its rows does not parse it again for the next. */
static void
test_code_block_language_kept (void)
{
  KagedCodeBlock *block = KAGED_CODE_BLOCK (g_object_ref_sink (kaged_code_block_new ()));

  g_assert_false (kaged_code_block_get_language_kept ("yaml"));
  kaged_code_block_set_language (block, "yml");
  kaged_code_block_set_code (block, "key: value\n");
  g_assert_cmpstr (language_id (block), ==, "yaml");
  g_object_unref (block);
  g_assert_true (kaged_code_block_get_language_kept ("yaml"));

  /* A language nobody knows is not kept. */
  block = KAGED_CODE_BLOCK (g_object_ref_sink (kaged_code_block_new ()));
  kaged_code_block_set_language (block, "no-such-language");
  g_assert_false (kaged_code_block_get_language_kept ("no-such-language"));
  g_object_unref (block);
}

/* The first block of a language shows its code plain for a frame: the
 * language is parsed (10 ms and more) from an idle after it, not in it.
 * A language parsed before is set at once. */
static void
test_code_block_language_parsed_later (void)
{
  KagedCodeBlock *block = KAGED_CODE_BLOCK (kaged_code_block_new ());
  GtkWindow *window = show_in_window (GTK_WIDGET (block));
  KagedCodeBlock *gone;
  KagedCodeBlock *next;

  iterate ();
  g_assert_false (kaged_code_block_get_language_kept ("lua"));

  kaged_code_block_set_language (block, "lua");
  kaged_code_block_set_code (block, "print(1)\n");
  g_assert_null (gtk_source_buffer_get_language (kaged_code_block_get_buffer (block)));
  g_assert_nonnull (shown_label (GTK_WIDGET (block), "Lua"));
  g_assert_false (kaged_code_block_get_language_kept ("lua"));

  /* A block that goes before the idle runs leaves nothing behind. */
  gone = KAGED_CODE_BLOCK (g_object_ref_sink (kaged_code_block_new ()));
  kaged_code_block_set_language (gone, "lua");
  g_object_unref (gone);

  g_assert_cmpstr (language_id (block), ==, "lua");
  g_assert_true (kaged_code_block_get_language_kept ("lua"));

  next = KAGED_CODE_BLOCK (g_object_ref_sink (kaged_code_block_new ()));
  kaged_code_block_set_language (next, "lua");
  g_assert_cmpstr (gtk_source_language_get_id (gtk_source_buffer_get_language (kaged_code_block_get_buffer (next))),
                   ==, "lua");
  g_object_unref (next);

  gtk_window_destroy (window);
}

/* --- icons loaded ahead ------------------------------------------------------------------ */

/* The texture @paintable draws at the usual icon size. */
static GdkTexture *
drawn_texture (GdkPaintable  *paintable,
               GskRenderNode **node)
{
  GtkSnapshot *snapshot = gtk_snapshot_new ();
  g_autoptr(GPtrArray) found = g_ptr_array_new ();

  gdk_paintable_snapshot (paintable, GDK_SNAPSHOT (snapshot), KAGED_ICON_SIZE, KAGED_ICON_SIZE);

  *node = gtk_snapshot_free_to_node (snapshot);
  collect_nodes (*node, GSK_TEXTURE_NODE, found);

  return found->len > 0 ? gsk_texture_node_get_texture (g_ptr_array_index (found, 0)) : NULL;
}

/* An icon loaded ahead is the very one a button, or the style sheet (a
 * spinner), then draws: not a second copy read again in the frame that
 * shows it. */
static void
test_icons_preload (void)
{
  GdkDisplay *display = gdk_display_get_default ();
  g_autoptr(GtkIconPaintable) icon = kaged_icon_preload (display, "document-edit-symbolic", 1);
  g_autoptr(GskRenderNode) icon_node = NULL;
  g_autoptr(GskRenderNode) button_node = NULL;
  g_autoptr(GskRenderNode) spinner_node = NULL;
  g_autoptr(GskRenderNode) style_node = NULL;
  g_autoptr(GdkPaintable) button_paintable = NULL;
  g_autoptr(GdkPaintable) spinner_paintable = NULL;
  g_autoptr(GtkIconPaintable) style_icon = kaged_icon_preload_style (display, "process-working-symbolic", 1);
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
  GtkWidget *button = gtk_button_new_from_icon_name ("document-edit-symbolic");
  GtkWidget *spinner = gtk_spinner_new ();
  GtkWindow *window;
  GdkTexture *texture;

  g_assert_nonnull (icon);
  g_assert_nonnull (style_icon);

  gtk_spinner_start (GTK_SPINNER (spinner));
  gtk_box_append (GTK_BOX (box), button);
  gtk_box_append (GTK_BOX (box), spinner);
  window = show_in_window (box);
  run_frames (window, 2);

  texture = drawn_texture (GDK_PAINTABLE (icon), &icon_node);
  g_assert_nonnull (texture);
  button_paintable = gtk_widget_paintable_new (gtk_button_get_child (GTK_BUTTON (button)));
  g_assert_true (drawn_texture (button_paintable, &button_node) == texture);

  texture = drawn_texture (GDK_PAINTABLE (style_icon), &style_node);
  g_assert_nonnull (texture);
  spinner_paintable = gtk_widget_paintable_new (spinner);
  g_assert_true (drawn_texture (spinner_paintable, &spinner_node) == texture);

  gtk_window_destroy (window);
}

/* What the first block needs is loaded ahead, in steps, from idles. */
static void
test_code_block_warm_up (void)
{
  gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

  kaged_code_block_warm_up (gdk_display_get_default (), 1);
  g_assert_false (kaged_code_block_get_warmed_up ());
  while (!kaged_code_block_get_warmed_up () && g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_assert_true (kaged_code_block_get_warmed_up ());
}

static void
test_code_block_dark (void)
{
  AdwStyleManager *style_manager = adw_style_manager_get_default ();
  KagedCodeBlock *block = KAGED_CODE_BLOCK (kaged_code_block_new ());
  GtkWindow *window = show_in_window (GTK_WIDGET (block));
  GtkSourceBuffer *buffer = kaged_code_block_get_buffer (block);

  adw_style_manager_set_color_scheme (style_manager, ADW_COLOR_SCHEME_FORCE_DARK);
  iterate ();
  g_assert_cmpstr (gtk_source_style_scheme_get_id (gtk_source_buffer_get_style_scheme (buffer)), ==,
                   "Adwaita-dark");

  adw_style_manager_set_color_scheme (style_manager, ADW_COLOR_SCHEME_FORCE_LIGHT);
  iterate ();
  g_assert_cmpstr (gtk_source_style_scheme_get_id (gtk_source_buffer_get_style_scheme (buffer)), ==,
                   "Adwaita");

  adw_style_manager_set_color_scheme (style_manager, ADW_COLOR_SCHEME_DEFAULT);
  gtk_window_destroy (window);
}

/* Code that streams in is highlighted in the frame that shows it: no idle
 * lays out and draws the window again for its colours. */
static void
test_code_block_highlights_growth (void)
{
  KagedCodeBlock *block = KAGED_CODE_BLOCK (kaged_code_block_new ());
  GtkWindow *window = show_in_window (GTK_WIDGET (block));
  GtkTextBuffer *buffer = GTK_TEXT_BUFFER (kaged_code_block_get_buffer (block));
  GtkTextIter iter;
  GSList *tags;

  kaged_code_block_set_language (block, "c");
  kaged_code_block_set_code (block, "int a;\n");
  iterate ();

  kaged_code_block_set_code (block, "int a;\nreturn a;\n");
  gtk_text_buffer_get_iter_at_line (buffer, &iter, 1);
  tags = gtk_text_iter_get_tags (&iter);
  g_assert_nonnull (tags);
  g_slist_free (tags);

  gtk_window_destroy (window);
}

typedef struct
{
  KagedCodeBlock *block;
  const char *code;
  gboolean grown;
} GrowInFrame;

static gboolean
grow_in_frame_cb (GtkWidget     *widget,
                  GdkFrameClock *clock,
                  gpointer       user_data)
{
  GrowInFrame *grow = user_data;

  kaged_code_block_set_code (grow->block, grow->code);
  grow->grown = TRUE;

  return G_SOURCE_REMOVE;
}

static void
count_layout_cb (GdkFrameClock *clock,
                 gpointer       user_data)
{
  guint *layouts = user_data;

  (*layouts)++;
}

static gboolean
quit_loop_cb (gpointer user_data)
{
  g_main_loop_quit (user_data);

  return G_SOURCE_REMOVE;
}

/* How many times @window is laid out in the next @ms milliseconds. */
static guint
count_layouts (GtkWindow *window,
               guint      ms)
{
  GdkFrameClock *clock = gdk_surface_get_frame_clock (gtk_native_get_surface (GTK_NATIVE (window)));
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  guint layouts = 0;
  gulong handler = g_signal_connect (clock, "layout", G_CALLBACK (count_layout_cb), &layouts);

  g_timeout_add (ms, quit_loop_cb, loop);
  g_main_loop_run (loop);
  g_signal_handler_disconnect (clock, handler);

  return layouts;
}

/* Code that streams in, as a reply's update does, from a frame's tick: the
 * frame that adds the lines lays them out at their full height, and no
 * later frame lays out the window again to make room for them. */
static void
test_code_block_grows_in_one_frame (void)
{
  KagedCodeBlock *block = KAGED_CODE_BLOCK (kaged_code_block_new ());
  GtkWidget *scrolled = gtk_scrolled_window_new ();
  GtkWidget *view = find_widget (GTK_WIDGET (block), is_text_view, NULL);
  g_autoptr(GString) code = g_string_new ("int a;\n");
  GrowInFrame grow = { block, NULL, FALSE };
  GtkWindow *window;
  int before;

  /* As in a conversation: the window keeps its size while the code grows. */
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scrolled), GTK_WIDGET (block));
  window = show_in_window (scrolled);
  kaged_code_block_set_language (block, "c");
  kaged_code_block_set_code (block, code->str);
  run_frames (window, 3);
  count_layouts (window, 200);

  for (guint round = 0; round < 3; round++)
    {
      int grown;

      before = gtk_widget_get_height (view);
      for (guint i = 0; i < 12; i++)
        g_string_append_printf (code, "int b%u_%u = %u;\n", round, i, i);
      grow.code = code->str;
      grow.grown = FALSE;
      gtk_widget_add_tick_callback (GTK_WIDGET (block), grow_in_frame_cb, &grow, NULL);
      while (!grow.grown)
        g_main_context_iteration (NULL, TRUE);
      grown = gtk_widget_get_height (view);

      g_assert_cmpint (grown, >, before);
      g_assert_cmpuint (count_layouts (window, 200), ==, 0);
      g_assert_cmpint (gtk_widget_get_height (view), ==, grown);
    }

  gtk_window_destroy (window);
}

/* The event controller of @widget named @name. */
static GtkEventController *
controller_named (GtkWidget  *widget,
                  const char *name)
{
  g_autoptr(GListModel) controllers = gtk_widget_observe_controllers (widget);

  for (guint i = 0; i < g_list_model_get_n_items (controllers); i++)
    {
      g_autoptr(GtkEventController) controller = g_list_model_get_item (controllers, i);

      if (g_strcmp0 (gtk_event_controller_get_name (controller), name) == 0)
        return controller;
    }

  return NULL;
}

/* The wheel over a code block scrolls the conversation, as over the rest
 * of a reply; sideways, it scrolls the code's long lines. */
static void
test_code_block_wheel (void)
{
  KagedCodeBlock *block = KAGED_CODE_BLOCK (kaged_code_block_new ());
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  GtkWidget *conversation = gtk_scrolled_window_new ();
  GtkWidget *code_scroller;
  GtkEventController *wheel;
  GtkAdjustment *vadjustment;
  GtkWindow *window;
  gboolean handled = FALSE;
  double before;

  gtk_widget_set_size_request (box, -1, 3000);
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (block));
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (conversation), box);
  window = show_in_window (conversation);
  kaged_code_block_set_code (block, "a very long line of code that goes on and on and on and on and on "
                                    "and on and on and on and on and on and on and on and on and on");
  run_frames (window, 3);

  code_scroller = gtk_widget_get_ancestor (find_widget (GTK_WIDGET (block), is_text_view, NULL),
                                           GTK_TYPE_SCROLLED_WINDOW);
  g_assert_true (code_scroller != conversation);
  wheel = controller_named (code_scroller, "kaged-code-wheel");
  g_assert_nonnull (wheel);
  g_assert_true (GTK_IS_EVENT_CONTROLLER_SCROLL (wheel));
  g_assert_cmpint (gtk_event_controller_get_propagation_phase (wheel), ==, GTK_PHASE_CAPTURE);
  vadjustment = gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (conversation));
  before = gtk_adjustment_get_value (vadjustment);

  g_signal_emit_by_name (wheel, "scroll", 0.0, 1.0, &handled);
  g_assert_true (handled);
  g_assert_cmpfloat (gtk_adjustment_get_value (vadjustment), >, before);

  /* Sideways: the code's own. */
  before = gtk_adjustment_get_value (vadjustment);
  handled = TRUE;
  g_signal_emit_by_name (wheel, "scroll", 1.0, 0.0, &handled);
  g_assert_false (handled);
  g_assert_cmpfloat (gtk_adjustment_get_value (vadjustment), ==, before);

  gtk_window_destroy (window);
}

static void
test_code_block_copy (void)
{
  KagedCodeBlock *block = KAGED_CODE_BLOCK (kaged_code_block_new ());
  GtkWindow *window = show_in_window (GTK_WIDGET (block));
  GtkWidget *copy = button (GTK_WIDGET (block), "Copy");
  g_autofree char *copied = NULL;

  kaged_code_block_set_language (block, "sh");
  kaged_code_block_set_code (block, "ls -l | grep '<x>'");
  iterate ();
  assert_icon_button (GTK_WIDGET (block), "Copy");
  g_assert_true (shown (copy));

  g_assert_true (shown_label (GTK_WIDGET (block), "Copied") == NULL ||
                 !gtk_revealer_get_reveal_child (GTK_REVEALER (gtk_widget_get_parent (shown_label (GTK_WIDGET (block), "Copied")))));
  click (copy);
  iterate ();

  copied = read_clipboard (GTK_WIDGET (block));
  g_assert_cmpstr (copied, ==, "ls -l | grep '<x>'");
  g_assert_cmpstr (gtk_button_get_icon_name (GTK_BUTTON (copy)), ==, "object-select-symbolic");
  g_assert_nonnull (shown_label (GTK_WIDGET (block), "Copied"));
  g_assert_true (gtk_revealer_get_reveal_child (GTK_REVEALER (gtk_widget_get_parent (shown_label (GTK_WIDGET (block), "Copied")))));

  gtk_window_destroy (window);
}

/* --- message rows ------------------------------------------------------------------------- */

static KagedMessage *
new_message (gint64              id,
             KagedMessageRole    role,
             const char         *content,
             KagedMessageStatus  status)
{
  KagedMessage *message = kaged_message_new ();

  kaged_message_set_id (message, id);
  kaged_message_set_role (message, role);
  kaged_message_set_content (message, content);
  kaged_message_set_status (message, status);

  return message;
}

typedef struct
{
  GtkWindow *window;
  KagedMessageRow *row;
  GSimpleActionGroup *actions;
  GSimpleActionGroup *app_actions;
  GPtrArray *activated;
} RowFixture;

static void
record_action (GSimpleAction *action,
               GVariant      *parameter,
               gpointer       user_data)
{
  RowFixture *f = user_data;

  if (parameter == NULL)
    g_ptr_array_add (f->activated, g_strdup (g_action_get_name (G_ACTION (action))));
  else if (g_variant_is_of_type (parameter, G_VARIANT_TYPE_STRING))
    g_ptr_array_add (f->activated,
                     g_strdup_printf ("%s %s", g_action_get_name (G_ACTION (action)),
                                      g_variant_get_string (parameter, NULL)));
  else
    g_ptr_array_add (f->activated,
                     g_strdup_printf ("%s %" G_GINT64_FORMAT, g_action_get_name (G_ACTION (action)),
                                      g_variant_get_int64 (parameter)));
}

static void
row_fixture_set_up (RowFixture    *f,
                    gconstpointer  data)
{
  static const GActionEntry entries[] = {
    { "regenerate", record_action, "x", NULL, NULL, { 0 } },
    { "edit", record_action, "x", NULL, NULL, { 0 } },
    { "show-version", record_action, "x", NULL, NULL, { 0 } },
  };
  static const GActionEntry app_entries[] = {
    { "preferences", record_action, NULL, NULL, NULL, { 0 } },
    { "preferences-profile", record_action, "s", NULL, NULL, { 0 } },
  };

  f->row = KAGED_MESSAGE_ROW (kaged_message_row_new ());
  f->window = show_in_window (GTK_WIDGET (f->row));
  f->activated = g_ptr_array_new_with_free_func (g_free);

  /* The window provides the message actions. */
  f->actions = g_simple_action_group_new ();
  g_action_map_add_action_entries (G_ACTION_MAP (f->actions), entries, G_N_ELEMENTS (entries), f);
  gtk_widget_insert_action_group (GTK_WIDGET (f->window), "message", G_ACTION_GROUP (f->actions));
  f->app_actions = g_simple_action_group_new ();
  g_action_map_add_action_entries (G_ACTION_MAP (f->app_actions), app_entries,
                                   G_N_ELEMENTS (app_entries), f);
  gtk_widget_insert_action_group (GTK_WIDGET (f->window), "app", G_ACTION_GROUP (f->app_actions));
}

static void
row_fixture_tear_down (RowFixture    *f,
                       gconstpointer  data)
{
  gtk_window_destroy (f->window);
  g_clear_object (&f->actions);
  g_clear_object (&f->app_actions);
  g_clear_pointer (&f->activated, g_ptr_array_unref);
  iterate ();
}

static char *
row_status (RowFixture *f)
{
  return kaged_message_row_describe_status (f->row);
}

static void
test_row_operator (RowFixture    *f,
                   gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (7, KAGED_MESSAGE_ROLE_OPERATOR,
                                                 "Plain *text*, not Markdown", KAGED_MESSAGE_STATUS_NONE);
  GtkWidget *row = GTK_WIDGET (f->row);

  kaged_message_row_set_message (f->row, message);
  iterate ();

  g_assert_true (kaged_message_row_get_message (f->row) == message);
  g_assert_nonnull (shown_label (row, "You"));
  g_assert_nonnull (shown_label (row, "Plain *text*, not Markdown"));
  g_assert_true (gtk_widget_has_css_class (row, "operator"));
  g_assert_true (shown (button (row, "Copy")));
  g_assert_true (shown (button (row, "Edit")));
  g_assert_false (shown (button (row, "Regenerate")));
  g_assert_false (shown (button (row, "Message Details")));
  g_assert_false (shown (button (row, "Previous Version")));
  g_assert_null (row_status (f));
  assert_icon_button (row, "Copy");
  assert_icon_button (row, "Edit");

  click (button (row, "Edit"));
  iterate ();
  g_assert_cmpuint (f->activated->len, ==, 1);
  g_assert_cmpstr (g_ptr_array_index (f->activated, 0), ==, "edit 7");

  kaged_message_row_set_queued (f->row, TRUE);
  iterate ();
  g_assert_nonnull (shown_label (row, "Queued"));
  kaged_message_row_set_queued (f->row, FALSE);
  iterate ();
  g_assert_null (shown_label (row, "Queued"));

  /* Blank lines typed before or after the text make no empty space in the
   * bubble; the text itself is kept as typed, indentation included. */
  kaged_message_set_content (message, "\n\n  Indented\nSecond line  \n\n\n");
  iterate ();
  g_assert_nonnull (shown_label (row, "  Indented\nSecond line"));
  g_assert_cmpstr (kaged_message_get_content (message), ==, "\n\n  Indented\nSecond line  \n\n\n");

  /* A short message's bubble is as wide as its text. */
  {
    GtkWidget *label = GTK_WIDGET (gtk_widget_get_template_child (row, KAGED_TYPE_MESSAGE_ROW,
                                                                  "operator_label"));
    int sixteen;
    int two;

    kaged_message_set_content (message, "sixteen letters!");
    run_frames (f->window, 2);
    sixteen = gtk_widget_get_width (label);
    kaged_message_set_content (message, "hi");
    run_frames (f->window, 2);
    two = gtk_widget_get_width (label);
    g_assert_cmpint (two, <, sixteen / 2);
  }
}

static void
test_row_agent (RowFixture    *f,
                gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (8, KAGED_MESSAGE_ROLE_AGENT,
                                                 "# Answer\n\nWith **bold**.", KAGED_MESSAGE_STATUS_COMPLETE);
  GtkWidget *row = GTK_WIDGET (f->row);

  kaged_message_row_set_message (f->row, message);
  iterate ();

  g_assert_nonnull (shown_label (row, "Assistant"));
  g_assert_nonnull (shown_label (row, "Answer"));
  g_assert_nonnull (shown_label (row, "With bold."));
  g_assert_true (gtk_widget_has_css_class (row, "agent"));
  g_assert_false (gtk_widget_has_css_class (row, "operator"));
  g_assert_true (shown (button (row, "Regenerate")));
  g_assert_true (shown (button (row, "Copy")));
  g_assert_true (shown (button (row, "Message Details")));
  g_assert_false (shown (button (row, "Edit")));
  g_assert_null (row_status (f));
  assert_icon_button (row, "Regenerate");
  assert_icon_button (row, "Copy");
  assert_icon_button (row, "Message Details");
  assert_icon_button (row, "Previous Version");
  assert_icon_button (row, "Next Version");

  click (button (row, "Regenerate"));
  iterate ();
  g_assert_cmpuint (f->activated->len, ==, 1);
  g_assert_cmpstr (g_ptr_array_index (f->activated, 0), ==, "regenerate 8");

  /* While a reply is written, Stop ends it, not Regenerate. */
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_STREAMING);
  iterate ();
  g_assert_true (shown (button (row, "Regenerate")));
  g_assert_false (gtk_widget_is_sensitive (button (row, "Regenerate")));
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_COMPLETE);
  iterate ();
  g_assert_true (gtk_widget_is_sensitive (button (row, "Regenerate")));

  /* An earlier version, paged back to, says so: the conversation goes on
   * from the latest. */
  kaged_message_set_superseded_by_run (message, 99);
  iterate ();
  {
    g_autofree char *status = row_status (f);

    g_assert_cmpstr (status, ==, "Earlier version");
    g_assert_nonnull (shown_label (row, "Earlier version"));
    g_assert_cmpstr (gtk_widget_get_tooltip_text (shown_label (row, "Earlier version")), ==,
                     "The conversation continues from the latest version");
  }
  /* One that failed says so, without the words of a whole version. */
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_FAILED);
  iterate ();
  g_assert_null (gtk_widget_get_tooltip_text (shown_label (row, "Failed")));
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_COMPLETE);
  kaged_message_set_superseded_by_run (message, 0);
  iterate ();
  g_assert_null (row_status (f));

  /* Its accessible description is the whole text. */
  gtk_test_accessible_assert_property (GTK_ACCESSIBLE (row), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                       "# Answer\n\nWith **bold**.");

  /* The row follows its message. */
  kaged_message_set_content (message, "# Answer\n\nWith **bold**.\n\nAnd more");
  iterate ();
  g_assert_nonnull (shown_label (row, "And more"));
  gtk_test_accessible_assert_property (GTK_ACCESSIBLE (row), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                       "# Answer\n\nWith **bold**.\n\nAnd more");
}

static gboolean description_is (GtkWidget  *widget,
                                const char *text);

/* Under an earlier version, the turns that followed it: folded to a count,
 * then each with its author and text, a reply's failure in words; showing
 * another message forgets them. */
static void
test_row_later_messages (RowFixture    *f,
                         gconstpointer  data)
{
  g_autoptr(KagedMessage) earlier = new_message (3, KAGED_MESSAGE_ROLE_AGENT, "First try",
                                                 KAGED_MESSAGE_STATUS_COMPLETE);
  g_autoptr(KagedMessage) latest = new_message (9, KAGED_MESSAGE_ROLE_AGENT, "Second try",
                                                KAGED_MESSAGE_STATUS_COMPLETE);
  g_autoptr(GPtrArray) later = g_ptr_array_new_with_free_func (g_object_unref);
  g_autoptr(GPtrArray) many = g_ptr_array_new_with_free_func (g_object_unref);
  GtkWidget *row = GTK_WIDGET (f->row);
  KagedMessage *failed;
  GtkWidget *question;

  g_ptr_array_add (later, new_message (4, KAGED_MESSAGE_ROLE_OPERATOR, "And then?",
                                       KAGED_MESSAGE_STATUS_NONE));
  failed = new_message (5, KAGED_MESSAGE_ROLE_AGENT, "", KAGED_MESSAGE_STATUS_FAILED);
  kaged_message_set_retry_class (failed, KAGED_RETRY_CLASS_OVERLOADED);
  g_ptr_array_add (later, failed);
  g_ptr_array_add (later, new_message (6, KAGED_MESSAGE_ROLE_OPERATOR, "Try again",
                                       KAGED_MESSAGE_STATUS_NONE));
  g_ptr_array_add (later, new_message (7, KAGED_MESSAGE_ROLE_AGENT, "A **bold** answer",
                                       KAGED_MESSAGE_STATUS_COMPLETE));

  kaged_message_row_set_message (f->row, earlier);
  iterate ();
  g_assert_null (shown_label (row, "Followed by 4 messages"));

  kaged_message_row_set_later_messages (f->row, later, later->len);
  iterate ();
  g_assert_nonnull (shown_label (row, "Followed by 4 messages"));
  /* A group, named as it reads. */
  {
    GtkWidget *group = gtk_widget_get_ancestor (shown_label (row, "Followed by 4 messages"),
                                                KAGED_TYPE_LATER_MESSAGES);

    g_assert_cmpint (gtk_accessible_get_accessible_role (GTK_ACCESSIBLE (group)), ==,
                     GTK_ACCESSIBLE_ROLE_GROUP);
    gtk_test_accessible_assert_property (GTK_ACCESSIBLE (group), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                         "Followed by 4 messages");
  }
  g_assert_null (shown_label (row, "And then?"));

  gtk_expander_set_expanded (GTK_EXPANDER (gtk_widget_get_ancestor (shown_label (row, "Followed by 4 messages"),
                                                            GTK_TYPE_EXPANDER)),
                             TRUE);
  iterate ();
  question = shown_label (row, "And then?");
  g_assert_nonnull (question);
  g_assert_nonnull (shown_label (row, "The provider is overloaded"));
  g_assert_nonnull (shown_label (row, "Try again"));
  g_assert_nonnull (shown_label (row, "Assistant"));
  g_assert_nonnull (shown_label (row, "You"));
  /* A reply reads as Markdown, and each message is described by its text. */
  g_assert_nonnull (shown_label (row, "A bold answer"));
  g_assert_true (description_is (gtk_widget_get_parent (question), "And then?"));
  gtk_test_accessible_assert_property (GTK_ACCESSIBLE (gtk_widget_get_parent (question)),
                                       GTK_ACCESSIBLE_PROPERTY_LABEL, "You");
  /* The row itself still reads as its own version. */
  g_assert_true (description_is (row, "First try"));

  /* The pager showed the latest version: nothing followed it. */
  kaged_message_row_set_message (f->row, latest);
  iterate ();
  g_assert_null (shown_label (row, "And then?"));
  g_assert_null (shown_label (row, "Followed by 4 messages"));

  /* A long branch shows its first hundred, and says how many more. */
  for (guint i = 0; i < KAGED_LATER_MESSAGES_MAX_SHOWN; i++)
    {
      g_autofree char *text = g_strdup_printf ("Turn %u", i);

      g_ptr_array_add (many, new_message (100 + i, KAGED_MESSAGE_ROLE_OPERATOR, text,
                                          KAGED_MESSAGE_STATUS_NONE));
    }
  kaged_message_row_set_message (f->row, earlier);
  kaged_message_row_set_later_messages (f->row, many, 102);
  iterate ();
  gtk_expander_set_expanded (GTK_EXPANDER (gtk_widget_get_ancestor (shown_label (row, "Followed by 102 messages"),
                                                            GTK_TYPE_EXPANDER)),
                             TRUE);
  iterate ();
  g_assert_nonnull (shown_label (row, "Turn 99"));
  g_assert_null (shown_label (row, "Turn 100"));
  g_assert_nonnull (shown_label (row, "And 2 more messages"));
}

/* A quota used up until a time says it as the retry banner does: in the
 * desktop's clock format, without seconds. */
static void
test_row_quota_until (void)
{
  g_autoptr(KagedMessage) message = new_message (9, KAGED_MESSAGE_ROLE_AGENT, "",
                                                 KAGED_MESSAGE_STATUS_FAILED);
  gint64 now_ms = g_get_real_time () / 1000;
  gint64 until_ms = now_ms + 50 * 60000;
  g_autofree char *sentence = NULL;
  g_autofree char *expected = NULL;
  g_autofree char *dated = NULL;
  g_autofree char *expected_dated = NULL;

  kaged_message_set_retry_class (message, KAGED_RETRY_CLASS_QUOTA_SCHEDULED);
  kaged_message_set_retry_after_until (message, until_ms);
  sentence = kaged_message_row_describe_failure (message, FALSE);
  expected = kaged_retry_describe_quota_until (until_ms, now_ms, kaged_retry_desktop_uses_12h ());
  g_assert_cmpstr (sentence, ==, expected);
  g_assert_null (strstr (sentence, ":00 "));
  /* With its date, for an export. */
  dated = kaged_message_row_describe_failure (message, TRUE);
  expected_dated = kaged_retry_describe_quota_until (until_ms, 0, kaged_retry_desktop_uses_12h ());
  g_assert_cmpstr (dated, ==, expected_dated);
  g_assert_cmpstr (dated, !=, sentence);
}

/* The card says the quota's time again when the desktop's clock format
 * changes, as the banner does. */
static void
test_row_quota_clock_format (RowFixture    *f,
                             gconstpointer  data)
{
  GSettings *settings = kaged_retry_desktop_clock_settings ();
  g_autoptr(KagedMessage) message = new_message (9, KAGED_MESSAGE_ROLE_AGENT, "",
                                                 KAGED_MESSAGE_STATUS_FAILED);
  GtkLabel *label = GTK_LABEL (gtk_widget_get_template_child (GTK_WIDGET (f->row), KAGED_TYPE_MESSAGE_ROW,
                                                              "error_label"));
  gint64 until_ms = g_get_real_time () / 1000 + 50 * 60000;
  g_autofree char *in_24h = NULL;
  g_autofree char *in_12h = NULL;

  if (settings == NULL)
    {
      g_test_skip ("org.gnome.desktop.interface is not installed");
      return;
    }

  g_settings_set_string (settings, "clock-format", "24h");
  kaged_message_set_retry_class (message, KAGED_RETRY_CLASS_QUOTA_SCHEDULED);
  kaged_message_set_retry_after_until (message, until_ms);
  kaged_message_row_set_message (f->row, message);
  iterate ();
  in_24h = kaged_message_row_describe_failure (message, FALSE);
  g_assert_cmpstr (gtk_label_get_label (label), ==, in_24h);

  g_settings_set_string (settings, "clock-format", "12h");
  iterate ();
  in_12h = kaged_message_row_describe_failure (message, FALSE);
  g_assert_cmpstr (in_12h, !=, in_24h);
  g_assert_cmpstr (gtk_label_get_label (label), ==, in_12h);

  g_assert_cmpuint (g_signal_handler_find (settings, G_SIGNAL_MATCH_DATA, 0, 0, NULL, NULL, f->row), !=, 0);

  /* Another failure has no time to say again: the card stops listening. */
  kaged_message_set_retry_class (message, KAGED_RETRY_CLASS_OVERLOADED);
  iterate ();
  g_assert_cmpuint (g_signal_handler_find (settings, G_SIGNAL_MATCH_DATA, 0, 0, NULL, NULL, f->row), ==, 0);
  g_settings_set_string (settings, "clock-format", "24h");
  iterate ();
  g_assert_cmpstr (gtk_label_get_label (label), ==, "The provider is overloaded");

  g_settings_reset (settings, "clock-format");
}

static gboolean
description_is (GtkWidget  *widget,
                const char *text)
{
  g_autofree char *mismatch = gtk_test_accessible_check_property (GTK_ACCESSIBLE (widget),
                                                                  GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                                                  text);

  return mismatch == NULL;
}

static KagedMarkdownView *
markdown_view_of (GtkWidget *row)
{
  return KAGED_MARKDOWN_VIEW (gtk_widget_get_template_child (row, KAGED_TYPE_MESSAGE_ROW,
                                                             "markdown_view"));
}

static void
test_row_description_while_streaming (RowFixture    *f,
                                      gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (5, KAGED_MESSAGE_ROLE_AGENT, "One",
                                                 KAGED_MESSAGE_STATUS_STREAMING);
  GtkWidget *row = GTK_WIDGET (f->row);
  gint64 deadline;

  kaged_message_row_set_message (f->row, message);
  iterate ();
  g_assert_true (description_is (row, "One"));

  /* Deltas reach the screen at the next frame, together; the description
   * a little later. */
  kaged_message_set_content (message, "One two");
  kaged_message_set_content (message, "One two three");
  g_assert_cmpstr (kaged_markdown_view_get_text (markdown_view_of (row)), ==, "One");
  deadline = g_get_monotonic_time () + kaged_test_usec (5 * G_USEC_PER_SEC);
  while (shown_label (row, "One two three") == NULL && g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_assert_nonnull (shown_label (row, "One two three"));
  g_assert_true (description_is (row, "One"));

  deadline = g_get_monotonic_time () + kaged_test_usec (5 * G_USEC_PER_SEC);
  while (!description_is (row, "One two three") && g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_assert_true (description_is (row, "One two three"));

  /* The end of the reply, at once. */
  kaged_message_set_content (message, "One two three four");
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_COMPLETE);
  g_assert_true (description_is (row, "One two three four"));
  g_assert_cmpstr (kaged_markdown_view_get_text (markdown_view_of (row)), ==, "One two three four");
}

/* How long a streaming reply waits between changes on screen: 20 a second
 * while they are cheap, a tenth of the time when they cost more, never
 * less than twice a second. */
static void
test_row_streaming_interval_rule (void)
{
  g_assert_cmpint (kaged_message_row_streaming_interval (0), ==, 50 * G_TIME_SPAN_MILLISECOND);
  g_assert_cmpint (kaged_message_row_streaming_interval (-3), ==, 50 * G_TIME_SPAN_MILLISECOND);
  g_assert_cmpint (kaged_message_row_streaming_interval (G_TIME_SPAN_MILLISECOND), ==,
                   50 * G_TIME_SPAN_MILLISECOND);
  g_assert_cmpint (kaged_message_row_streaming_interval (5 * G_TIME_SPAN_MILLISECOND), ==,
                   50 * G_TIME_SPAN_MILLISECOND);
  g_assert_cmpint (kaged_message_row_streaming_interval (8 * G_TIME_SPAN_MILLISECOND), ==,
                   80 * G_TIME_SPAN_MILLISECOND);
  g_assert_cmpint (kaged_message_row_streaming_interval (30 * G_TIME_SPAN_MILLISECOND), ==,
                   300 * G_TIME_SPAN_MILLISECOND);
  g_assert_cmpint (kaged_message_row_streaming_interval (2 * G_USEC_PER_SEC), ==,
                   500 * G_TIME_SPAN_MILLISECOND);
}

/* A streaming reply whose changes are costly to show (here hundreds of
 * paragraphs appearing at once) shows the next change later, so the window
 * keeps most of its time for everything else; a new message starts again
 * at 20 changes a second. */
static void
test_row_streaming_interval (RowFixture    *f,
                             gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (12, KAGED_MESSAGE_ROLE_AGENT, "Start",
                                                 KAGED_MESSAGE_STATUS_STREAMING);
  g_autoptr(KagedMessage) other = new_message (13, KAGED_MESSAGE_ROLE_AGENT, "Other",
                                               KAGED_MESSAGE_STATUS_STREAMING);
  g_autoptr(GString) text = g_string_new ("Start");
  GtkWidget *row = GTK_WIDGET (f->row);
  gint64 deadline, interval;

  kaged_message_row_set_message (f->row, message);
  iterate ();
  g_assert_cmpint (kaged_message_row_get_streaming_interval (f->row), ==,
                   50 * G_TIME_SPAN_MILLISECOND);

  for (guint i = 0; i < 500; i++)
    g_string_append_printf (text, "\n\nParagraph %u with **some** `code` and words.", i);
  kaged_message_set_content (message, text->str);

  /* Shown in a frame; once that frame is painted the wait follows its cost. */
  deadline = g_get_monotonic_time () + kaged_test_usec (20 * G_USEC_PER_SEC);
  while (g_strcmp0 (kaged_markdown_view_get_text (markdown_view_of (row)), text->str) != 0 &&
         g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpstr (kaged_markdown_view_get_text (markdown_view_of (row)), ==, text->str);
  while (kaged_message_row_get_streaming_interval (f->row) == 50 * G_TIME_SPAN_MILLISECOND &&
         g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  interval = kaged_message_row_get_streaming_interval (f->row);
  g_assert_cmpint (interval, >, 50 * G_TIME_SPAN_MILLISECOND);
  g_assert_cmpint (interval, <=, 500 * G_TIME_SPAN_MILLISECOND);

  /* The next change still reaches the screen. */
  g_string_append (text, " More.");
  kaged_message_set_content (message, text->str);
  while (g_strcmp0 (kaged_markdown_view_get_text (markdown_view_of (row)), text->str) != 0 &&
         g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpstr (kaged_markdown_view_get_text (markdown_view_of (row)), ==, text->str);

  kaged_message_row_set_message (f->row, other);
  g_assert_cmpint (kaged_message_row_get_streaming_interval (f->row), ==,
                   50 * G_TIME_SPAN_MILLISECOND);
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_COMPLETE);
  kaged_message_set_status (other, KAGED_MESSAGE_STATUS_COMPLETE);
  iterate ();
}

/* Where a streaming reply's changes were shown: inside a frame of the
 * window, or between two. */
typedef struct
{
  gboolean in_frame;
  gboolean shown_since_frame;
  guint shown_in_frame;
  guint shown_between;
  guint shown_before_frame_ended;
  guint frames_ended_since_change;
  guint painted;
} FrameWatch;

static void
watch_frame_started_cb (GdkFrameClock *clock,
                        FrameWatch    *watch)
{
  watch->in_frame = TRUE;
}

static void
watch_frame_ended_cb (GdkFrameClock *clock,
                      FrameWatch    *watch)
{
  watch->in_frame = FALSE;
  watch->frames_ended_since_change++;
  if (watch->shown_since_frame)
    watch->painted++;
  watch->shown_since_frame = FALSE;
}

static void
watch_text_shown_cb (GObject    *view,
                     GParamSpec *pspec,
                     FrameWatch *watch)
{
  if (watch->in_frame)
    watch->shown_in_frame++;
  else
    watch->shown_between++;
  /* A change waits for the end of a frame, drawn or asked for */
  if (watch->frames_ended_since_change == 0)
    watch->shown_before_frame_ended++;
  watch->shown_since_frame = TRUE;
}

/* Each change of a streaming reply is parsed and its blocks built between
 * two frames, and the next frame lays it out and paints it: that work is
 * not added to a frame's. */
static void
test_row_streaming_between_frames (RowFixture    *f,
                                   gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (14, KAGED_MESSAGE_ROLE_AGENT, "Start",
                                                 KAGED_MESSAGE_STATUS_STREAMING);
  g_autoptr(GString) text = g_string_new ("Start");
  GdkFrameClock *clock = gdk_surface_get_frame_clock (gtk_native_get_surface (GTK_NATIVE (f->window)));
  KagedMarkdownView *view = markdown_view_of (GTK_WIDGET (f->row));
  FrameWatch watch = { FALSE, FALSE, 0, 0, 0, 0, 0 };
  gulong started, ended, shown;
  gint64 deadline = g_get_monotonic_time () + kaged_test_usec (20 * G_USEC_PER_SEC);

  kaged_message_row_set_message (f->row, message);
  run_frames (f->window, 2);

  started = g_signal_connect (clock, "before-paint", G_CALLBACK (watch_frame_started_cb), &watch);
  ended = g_signal_connect (clock, "after-paint", G_CALLBACK (watch_frame_ended_cb), &watch);
  shown = g_signal_connect (view, "notify::text", G_CALLBACK (watch_text_shown_cb), &watch);

  for (guint i = 0; i < 4; i++)
    {
      g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);

      /* The even changes come once the last change's wait is over, so
       * nothing holds them back but the frame; the odd ones during it. */
      if (i % 2 == 0)
        {
          g_timeout_add (kaged_message_row_get_streaming_interval (f->row) / G_TIME_SPAN_MILLISECOND + 20,
                         quit_loop_cb, loop);
          g_main_loop_run (loop);
        }

      g_string_append_printf (text, "\n\n## Part %u\n\nWords with **bold** text.\n\n"
                              "```c\nint part_%u;\n```\n", i, i);
      watch.frames_ended_since_change = 0;
      kaged_message_set_content (message, text->str);
      g_assert_cmpstr (kaged_markdown_view_get_text (view), !=, text->str);

      while ((g_strcmp0 (kaged_markdown_view_get_text (view), text->str) != 0 ||
              watch.shown_since_frame) &&
             g_get_monotonic_time () < deadline)
        g_main_context_iteration (NULL, TRUE);
      g_assert_cmpstr (kaged_markdown_view_get_text (view), ==, text->str);
      g_assert_false (watch.shown_since_frame);
    }

  g_assert_cmpuint (watch.shown_in_frame, ==, 0);
  g_assert_cmpuint (watch.shown_before_frame_ended, ==, 0);
  g_assert_cmpuint (watch.shown_between, ==, 4);
  g_assert_cmpuint (watch.painted, ==, 4);

  g_signal_handler_disconnect (clock, started);
  g_signal_handler_disconnect (clock, ended);
  g_signal_handler_disconnect (view, shown);
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_COMPLETE);
  iterate ();
}

static gboolean
destroy_window_cb (gpointer user_data)
{
  gtk_window_destroy (user_data);
  return G_SOURCE_REMOVE;
}

static void
destroy_window_when_shown_cb (GObject    *view,
                              GParamSpec *pspec,
                              GtkWindow  *window)
{
  /* Right after the change is shown, before the frame that paints it */
  g_signal_handlers_disconnect_by_func (view, destroy_window_when_shown_cb, window);
  g_idle_add_full (G_PRIORITY_HIGH, destroy_window_cb, window, NULL);
}

/* A window closed between a change of a streaming reply and the frame that
 * would have painted it takes its frame clock with it: the row lets go of
 * it without a warning, and keeps the change. */
static void
test_row_streaming_window_closed (void)
{
  g_autoptr(KagedMessage) message = new_message (15, KAGED_MESSAGE_ROLE_AGENT, "Start",
                                                 KAGED_MESSAGE_STATUS_STREAMING);
  g_autoptr(GtkWidget) row = g_object_ref_sink (kaged_message_row_new ());
  GtkWindow *window = show_in_window (row);
  KagedMarkdownView *view = markdown_view_of (row);
  gint64 deadline = g_get_monotonic_time () + kaged_test_usec (20 * G_USEC_PER_SEC);

  g_object_add_weak_pointer (G_OBJECT (window), (gpointer *)&window);
  kaged_message_row_set_message (KAGED_MESSAGE_ROW (row), message);
  run_frames (window, 2);

  g_signal_connect (view, "notify::text", G_CALLBACK (destroy_window_when_shown_cb), window);
  kaged_message_set_content (message, "Start\n\nMore words");
  while (window != NULL && g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_assert_null (window);
  g_assert_cmpstr (kaged_markdown_view_get_text (view), ==, "Start\n\nMore words");

  kaged_message_row_set_message (KAGED_MESSAGE_ROW (row), NULL);
  iterate ();
}

static void
test_row_statuses (RowFixture    *f,
                   gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (9, KAGED_MESSAGE_ROLE_AGENT, "Partial answ",
                                                 KAGED_MESSAGE_STATUS_STREAMING);
  g_autoptr(KagedProfile) ollama = NULL;
  GtkWidget *row = GTK_WIDGET (f->row);
  g_autofree char *status = NULL;

  kaged_message_row_set_message (f->row, message);
  iterate ();
  g_assert_nonnull (shown_label (row, "Writing…"));
  g_assert_nonnull (shown_label (row, "Partial answ"));

  /* Failed: why, in words, and the partial text kept. The server was
   * reached: the connection was lost on the way. */
  kaged_message_set_retry_class (message, KAGED_RETRY_CLASS_NETWORK);
  kaged_message_set_error_message (message, "Connection reset by peer");
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_FAILED);
  iterate ();
  g_assert_null (shown_label (row, "Writing…"));
  g_assert_nonnull (shown_label (row, "Failed"));
  g_assert_nonnull (shown_label (row, "The connection was lost before the reply was complete"));
  g_assert_null (shown_label (row, "Could not reach the server"));
  g_assert_nonnull (shown_label (row, "Connection reset by peer"));
  g_assert_nonnull (shown_label (row, "Partial answ"));
  g_assert_false (shown (button (row, "Open Preferences")));

  /* Without a word of the reply, the server was not reached: the row says
   * what to do about it, and offers the preferences where the profile has
   * a page. */
  ollama = kaged_profile_new ("Default", KAGED_PROVIDER_KIND_OLLAMA, "http://localhost:11434", "llama3.2");
  kaged_message_row_set_server_profile (f->row, ollama);
  kaged_message_set_content (message, "");
  iterate ();
  g_assert_nonnull (shown_label (row, "Could not reach the server"));
  g_assert_null (shown_label (row, "The connection was lost before the reply was complete"));
  g_assert_nonnull (shown_label (row, "Is Ollama running? Start it on this computer."));
  g_assert_false (shown (button (row, "Open Preferences")));

  /* It follows the profile: Ollama moved to another computer. */
  kaged_profile_set_base_url (ollama, "http://gpu-box.lan:11434");
  iterate ();
  g_assert_null (shown_label (row, "Is Ollama running? Start it on this computer."));
  g_assert_nonnull (shown_label (row, "Check that the server at http://gpu-box.lan:11434, given on the "
                                      "command line, is running."));
  kaged_profile_set_base_url (ollama, "http://localhost:11434");
  iterate ();
  g_assert_nonnull (shown_label (row, "Is Ollama running? Start it on this computer."));
  kaged_message_row_set_profile_id (f->row, "profile-7");
  iterate ();
  g_assert_true (shown (button (row, "Open Preferences")));
  kaged_message_row_set_profile_id (f->row, NULL);
  iterate ();
  g_assert_false (shown (button (row, "Open Preferences")));
  kaged_message_set_content (message, "Partial answ");
  iterate ();
  g_assert_null (shown_label (row, "Is Ollama running? Start it on this computer."));

  kaged_message_set_retry_class (message, KAGED_RETRY_CLASS_OVERLOADED);
  kaged_message_set_content (message, "");
  iterate ();
  g_assert_nonnull (shown_label (row, "The provider is overloaded"));
  g_assert_null (shown_label (row, "Is Ollama running? Start it on this computer."));
  kaged_message_set_content (message, "Partial answ");

  /* A key problem offers the preferences. */
  kaged_message_set_retry_class (message, KAGED_RETRY_CLASS_AUTH_FAILED);
  iterate ();
  g_assert_nonnull (shown_label (row, "The provider did not accept the API key"));
  g_assert_true (shown (button (row, "Open Preferences")));
  g_assert_cmpstr (gtk_actionable_get_action_name (GTK_ACTIONABLE (button (row, "Open Preferences"))), ==,
                   "app.preferences");

  kaged_message_set_retry_class (message, KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED);
  iterate ();
  g_assert_nonnull (shown_label (row, "No API key was found for this provider"));
  g_assert_true (shown (button (row, "Open Preferences")));

  /* Knowing the conversation's profile, it opens the preferences at that
   * profile's page. */
  kaged_message_row_set_profile_id (f->row, "profile-7");
  iterate ();
  g_assert_cmpstr (gtk_actionable_get_action_name (GTK_ACTIONABLE (button (row, "Open Preferences"))), ==,
                   "app.preferences-profile");
  g_assert_cmpstr (g_variant_get_string (gtk_actionable_get_action_target_value (
                     GTK_ACTIONABLE (button (row, "Open Preferences"))), NULL), ==, "profile-7");
  g_assert_cmpstr (kaged_message_row_get_profile_id (f->row), ==, "profile-7");
  g_signal_emit_by_name (button (row, "Open Preferences"), "clicked");
  iterate ();
  g_assert_cmpuint (f->activated->len, ==, 1);
  g_assert_cmpstr (g_ptr_array_index (f->activated, 0), ==, "preferences-profile profile-7");

  /* A profile from the command line has no page: the general preferences. */
  kaged_message_row_set_profile_id (f->row, "");
  iterate ();
  g_assert_cmpstr (gtk_actionable_get_action_name (GTK_ACTIONABLE (button (row, "Open Preferences"))), ==,
                   "app.preferences");
  g_assert_null (gtk_actionable_get_action_target_value (GTK_ACTIONABLE (button (row, "Open Preferences"))));
  kaged_message_row_set_profile_id (f->row, NULL);
  g_assert_null (kaged_message_row_get_profile_id (f->row));

  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_CANCELLED);
  iterate ();
  g_assert_nonnull (shown_label (row, "Stopped"));
  g_assert_null (shown_label (row, "No API key was found for this provider"));
  g_assert_nonnull (shown_label (row, "Partial answ"));

  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_INTERRUPTED);
  iterate ();
  g_assert_nonnull (shown_label (row, "Interrupted when Kaged closed"));
  g_assert_nonnull (shown_label (row, "Partial answ"));

  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_COMPLETE);
  iterate ();
  g_assert_null (shown_label (row, "Interrupted when Kaged closed"));
  status = row_status (f);
  g_assert_null (status);
}

/* Until its first words arrive, a reply says it is reaching the provider,
 * not that it is writing. */
static void
test_row_connecting (RowFixture    *f,
                     gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (10, KAGED_MESSAGE_ROLE_AGENT, "",
                                                 KAGED_MESSAGE_STATUS_STREAMING);
  GtkWidget *row = GTK_WIDGET (f->row);

  kaged_message_row_set_message (f->row, message);
  iterate ();
  g_assert_nonnull (shown_label (row, "Connecting…"));
  g_assert_null (shown_label (row, "Writing…"));

  kaged_message_set_content (message, "Hel");
  iterate ();
  g_assert_null (shown_label (row, "Connecting…"));
  g_assert_nonnull (shown_label (row, "Writing…"));
}

static GtkSpinner *
spinner_of (GtkWidget *row)
{
  return GTK_SPINNER (gtk_widget_get_template_child (row, KAGED_TYPE_MESSAGE_ROW, "status_spinner"));
}

/* Iterates until the row's status reads @status. */
static gboolean
wait_for_status (RowFixture *f,
                 const char *status)
{
  gint64 deadline = g_get_monotonic_time () + kaged_test_usec (10 * G_USEC_PER_SEC);

  for (;;)
    {
      g_autofree char *now = row_status (f);

      if (g_strcmp0 (now, status) == 0 && shown_label (GTK_WIDGET (f->row), status) != NULL)
        return TRUE;
      if (g_get_monotonic_time () > deadline)
        return FALSE;
      g_main_context_iteration (NULL, TRUE);
    }
}

/* Shows @message, a reply still without words, beside @run, started at
 * @now_ms and running. */
static void
show_running_reply (RowFixture   *f,
                    KagedMessage *message,
                    KagedRun     *run,
                    gint64        now_ms)
{
  kaged_run_set_status (run, KAGED_RUN_STATUS_RUNNING);
  kaged_run_set_started_at (run, now_ms);
  kaged_message_row_set_message (f->row, message);
  kaged_message_row_set_run (f->row, run);
  iterate ();
}

/* While Tier 1 waits to try the provider again, the reply says why, and
 * counts down to the next attempt; then it connects again. */
static void
test_row_tier1_wait (RowFixture    *f,
                     gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (17, KAGED_MESSAGE_ROLE_AGENT, "",
                                                 KAGED_MESSAGE_STATUS_STREAMING);
  g_autoptr(KagedRun) run = kaged_run_new ();
  g_autoptr(KagedAttempt) attempt = kaged_attempt_new ();
  const char *reason = "The provider is overloaded (HTTP 503) \u2014 the provider asked to wait 3 s";
  GtkWidget *row = GTK_WIDGET (f->row);
  gint64 now_ms = g_get_real_time () / 1000;

  show_running_reply (f, message, run, now_ms);
  g_assert_nonnull (shown_label (row, "Connecting…"));

  attempt->time = now_ms;
  attempt->http_status = 503;
  attempt->error = g_strdup ("Service Unavailable");
  attempt->retry_class = KAGED_RETRY_CLASS_OVERLOADED;
  attempt->wait_ms = 3000;
  attempt->wait_source = g_strdup ("retry-after");
  kaged_run_add_attempt (run, attempt);
  kaged_run_set_next_attempt_at (run, now_ms + 3000);
  iterate ();

  /* Why, and how long. */
  g_assert_null (shown_label (row, "Connecting…"));
  g_assert_nonnull (shown_label (row, reason));
  g_assert_true (wait_for_status (f, "Trying again in 3 s") || wait_for_status (f, "Trying again in 2 s"));
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (spinner_of (row))));

  /* It counts down, then connects again. */
  g_assert_true (wait_for_status (f, "Trying again in 1 s"));
  g_assert_true (wait_for_status (f, "Connecting…"));
  g_assert_null (shown_label (row, reason));

  /* Another wait; the row that lets go of the run no longer counts down. */
  kaged_run_add_attempt (run, attempt);
  kaged_run_set_next_attempt_at (run, g_get_real_time () / 1000 + 3000);
  iterate ();
  g_assert_nonnull (shown_label (row, reason));
  kaged_message_row_set_run (f->row, NULL);
  iterate ();
  g_assert_true (wait_for_status (f, "Connecting…"));
  g_assert_null (shown_label (row, reason));

  /* The words come, even while the row still counts down: it says so at
   * once, not at the countdown's next second. */
  kaged_message_row_set_run (f->row, run);
  iterate ();
  g_assert_nonnull (shown_label (row, reason));
  kaged_message_set_content (message, "Hello");
  iterate ();
  g_assert_nonnull (shown_label (row, "Writing…"));
  g_assert_null (shown_label (row, reason));

  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_COMPLETE);
  iterate ();
}

/* Stopped while Tier 1 waited to try the provider again, a reply without
 * a word still says why the attempts failed; one stopped while it was
 * being written, or before anything failed, says only that it stopped. */
static void
test_row_stopped_while_retrying (RowFixture    *f,
                                 gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (18, KAGED_MESSAGE_ROLE_AGENT, "",
                                                 KAGED_MESSAGE_STATUS_STREAMING);
  g_autoptr(KagedRun) run = kaged_run_new ();
  g_autoptr(KagedAttempt) attempt = kaged_attempt_new ();
  const char *waiting = "The provider is overloaded (HTTP 503) \u2014 the provider asked to wait 30 s";
  const char *reason = "The provider is overloaded (HTTP 503)";
  GtkWidget *row = GTK_WIDGET (f->row);
  gint64 now_ms = g_get_real_time () / 1000;

  show_running_reply (f, message, run, now_ms);

  /* Stopped before anything failed. */
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_CANCELLED);
  iterate ();
  g_assert_nonnull (shown_label (row, "Stopped"));
  g_assert_null (shown_label (row, reason));

  /* Stopped while Tier 1 waited. */
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_STREAMING);
  attempt->time = now_ms;
  attempt->http_status = 503;
  attempt->error = g_strdup ("Service Unavailable");
  attempt->retry_class = KAGED_RETRY_CLASS_OVERLOADED;
  attempt->wait_ms = 30000;
  attempt->wait_source = g_strdup ("retry-after");
  kaged_run_add_attempt (run, attempt);
  kaged_run_set_next_attempt_at (run, now_ms + 30000);
  iterate ();
  g_assert_nonnull (shown_label (row, waiting));

  kaged_run_set_status (run, KAGED_RUN_STATUS_CANCELLED);
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_CANCELLED);
  iterate ();
  g_assert_nonnull (shown_label (row, "Stopped"));
  g_assert_nonnull (shown_label (row, reason));
  g_assert_null (shown_label (row, waiting));
  g_assert_false (gtk_widget_get_visible (GTK_WIDGET (spinner_of (row))));

  /* The attempt the stop cut short is logged after it: it is not why. */
  {
    g_autoptr(KagedAttempt) cut_short = kaged_attempt_new ();

    cut_short->time = now_ms + 30000;
    cut_short->error = g_strdup ("The request was cancelled");
    kaged_run_add_attempt (run, cut_short);
    iterate ();
    g_assert_nonnull (shown_label (row, reason));
  }

  /* Shown again later, from the store. */
  kaged_message_row_set_run (f->row, NULL);
  iterate ();
  g_assert_null (shown_label (row, reason));
  kaged_message_row_set_run (f->row, run);
  iterate ();
  g_assert_nonnull (shown_label (row, reason));

  /* Words came before the stop: the failures before them are not why. */
  {
    g_autoptr(KagedMessage) written = new_message (19, KAGED_MESSAGE_ROLE_AGENT, "Hello",
                                                   KAGED_MESSAGE_STATUS_CANCELLED);

    kaged_message_row_set_message (f->row, written);
    iterate ();
    g_assert_nonnull (shown_label (row, "Stopped"));
    g_assert_null (shown_label (row, reason));
  }
}

/* The spinner turns while the reply waits for words; while they arrive it
 * rests (they show the reply is being written, and a spinner redraws the
 * window at every frame), and turns again when they stop coming. */
static void
test_row_spinner (RowFixture    *f,
                  gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (11, KAGED_MESSAGE_ROLE_AGENT, "",
                                                 KAGED_MESSAGE_STATUS_STREAMING);
  GtkWidget *row = GTK_WIDGET (f->row);
  gint64 deadline;

  kaged_message_row_set_message (f->row, message);
  iterate ();
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (spinner_of (row))));
  g_assert_true (gtk_spinner_get_spinning (spinner_of (row)));

  kaged_message_set_content (message, "Hel");
  iterate ();
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (spinner_of (row))));
  g_assert_false (gtk_spinner_get_spinning (spinner_of (row)));
  kaged_message_set_content (message, "Hello");
  iterate ();
  g_assert_false (gtk_spinner_get_spinning (spinner_of (row)));

  /* No word for a second: it turns again. */
  deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
  while (!gtk_spinner_get_spinning (spinner_of (row)) && g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_assert_true (gtk_spinner_get_spinning (spinner_of (row)));

  /* The end: no spinner. */
  kaged_message_set_content (message, "Hello there");
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_COMPLETE);
  iterate ();
  g_assert_false (gtk_widget_get_visible (GTK_WIDGET (spinner_of (row))));
  g_assert_false (gtk_spinner_get_spinning (spinner_of (row)));
}

static void
test_row_rebind (RowFixture    *f,
                 gconstpointer  data)
{
  g_autoptr(KagedMessage) first = new_message (1, KAGED_MESSAGE_ROLE_AGENT, "First", KAGED_MESSAGE_STATUS_STREAMING);
  g_autoptr(KagedMessage) second = new_message (2, KAGED_MESSAGE_ROLE_OPERATOR, "Second", KAGED_MESSAGE_STATUS_NONE);
  GtkWidget *row = GTK_WIDGET (f->row);

  kaged_message_row_set_message (f->row, first);
  kaged_message_row_set_message (f->row, second);
  iterate ();

  /* The first message no longer reaches the row. */
  kaged_message_set_content (first, "Changed");
  kaged_message_set_status (first, KAGED_MESSAGE_STATUS_FAILED);
  iterate ();
  g_assert_nonnull (shown_label (row, "Second"));
  g_assert_null (shown_label (row, "Changed"));
  g_assert_null (shown_label (row, "Failed"));
  g_assert_true (shown (button (row, "Edit")));

  kaged_message_row_set_message (f->row, NULL);
  iterate ();
  g_assert_null (shown_label (row, "Second"));
}

static void
test_row_copy (RowFixture    *f,
               gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (3, KAGED_MESSAGE_ROLE_AGENT,
                                                 "Use `ls`:\n\n```sh\nls\n```", KAGED_MESSAGE_STATUS_COMPLETE);
  g_autofree char *copied = NULL;
  GtkWidget *copy;

  kaged_message_row_set_message (f->row, message);
  iterate ();

  /* The reply's own Copy, not the one of its code block. */
  copy = find_widget (GTK_WIDGET (f->row), has_action, "row.copy");
  g_assert_true (is_button_named (copy, "Copy"));
  click (copy);
  iterate ();

  copied = read_clipboard (GTK_WIDGET (f->row));
  g_assert_cmpstr (copied, ==, "Use `ls`:\n\n```sh\nls\n```");
}

/* While Tier 2 waits to retry a failed reply, the reply says it waits,
 * as the banner under it counts down, rather than that it failed for
 * good; when the retry is cancelled it has failed. */
static void
test_row_retry_pending (RowFixture    *f,
                        gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (6, KAGED_MESSAGE_ROLE_AGENT, "", KAGED_MESSAGE_STATUS_FAILED);
  GtkWidget *row = GTK_WIDGET (f->row);
  GtkWidget *card = (GtkWidget *) gtk_widget_get_template_child (row, KAGED_TYPE_MESSAGE_ROW, "error_box");
  g_autofree char *status = NULL;

  kaged_message_set_retry_class (message, KAGED_RETRY_CLASS_OVERLOADED);
  kaged_message_row_set_message (f->row, message);
  iterate ();
  g_assert_nonnull (shown_label (row, "Failed"));
  g_assert_false (gtk_widget_has_css_class (card, "retry-pending"));

  kaged_message_row_set_retry_pending (f->row, TRUE);
  g_assert_true (kaged_message_row_get_retry_pending (f->row));
  iterate ();
  g_assert_null (shown_label (row, "Failed"));
  g_assert_nonnull (shown_label (row, "Waiting to retry"));
  g_assert_nonnull (shown_label (row, "The provider is overloaded"));
  g_assert_true (gtk_widget_has_css_class (card, "retry-pending"));

  kaged_message_row_set_retry_pending (f->row, FALSE);
  iterate ();
  g_assert_nonnull (shown_label (row, "Failed"));
  g_assert_false (gtk_widget_has_css_class (card, "retry-pending"));

  /* Only a failed reply waits for a retry. */
  kaged_message_row_set_retry_pending (f->row, TRUE);
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_CANCELLED);
  iterate ();
  status = row_status (f);
  g_assert_cmpstr (status, ==, "Stopped");
}

/* A reply with no text, one that failed before its first words, offers
 * nothing to copy; its details stay, they tell why it failed. Copy comes
 * with the first words of a reply that streams. */
static void
test_row_copy_needs_text (RowFixture    *f,
                          gconstpointer  data)
{
  g_autoptr(KagedMessage) failed = new_message (4, KAGED_MESSAGE_ROLE_AGENT, "", KAGED_MESSAGE_STATUS_FAILED);
  g_autoptr(KagedMessage) streaming = new_message (5, KAGED_MESSAGE_ROLE_AGENT, "",
                                                   KAGED_MESSAGE_STATUS_STREAMING);
  GtkWidget *row = GTK_WIDGET (f->row);

  kaged_message_set_retry_class (failed, KAGED_RETRY_CLASS_NETWORK);
  kaged_message_row_set_message (f->row, failed);
  iterate ();
  g_assert_false (shown (button (row, "Copy")));
  g_assert_true (shown (button (row, "Message Details")));
  g_assert_true (shown (button (row, "Regenerate")));

  kaged_message_row_set_message (f->row, streaming);
  iterate ();
  g_assert_false (shown (button (row, "Copy")));
  kaged_message_set_content (streaming, "First words");
  {
    gint64 deadline = g_get_monotonic_time () + kaged_test_usec (10 * G_USEC_PER_SEC);

    while (!shown (button (row, "Copy")) && g_get_monotonic_time () < deadline)
      g_main_context_iteration (NULL, TRUE);
  }
  g_assert_true (shown (button (row, "Copy")));
  g_assert_cmpint (kaged_message_get_status (streaming), ==, KAGED_MESSAGE_STATUS_STREAMING);
  kaged_message_set_status (streaming, KAGED_MESSAGE_STATUS_COMPLETE);
  iterate ();
  g_assert_true (shown (button (row, "Copy")));
}

static void
test_row_pager (RowFixture    *f,
                gconstpointer  data)
{
  g_autoptr(GListStore) versions = g_list_store_new (KAGED_TYPE_MESSAGE);
  g_autoptr(KagedMessage) v1 = new_message (11, KAGED_MESSAGE_ROLE_AGENT, "Version one", KAGED_MESSAGE_STATUS_COMPLETE);
  g_autoptr(KagedMessage) v2 = new_message (12, KAGED_MESSAGE_ROLE_AGENT, "Version two", KAGED_MESSAGE_STATUS_CANCELLED);
  g_autoptr(KagedMessage) v3 = new_message (13, KAGED_MESSAGE_ROLE_AGENT, "Version three", KAGED_MESSAGE_STATUS_COMPLETE);
  GtkWidget *row = GTK_WIDGET (f->row);
  graphene_point_t regenerate_at;
  GtkWidget *previous;
  GtkWidget *next;

  kaged_message_row_set_message (f->row, v3);
  iterate ();
  g_assert_false (shown (button (row, "Previous Version")));

  /* One version: no pager. */
  g_list_store_append (versions, v3);
  kaged_message_row_set_versions (f->row, G_LIST_MODEL (versions));
  iterate ();
  g_assert_false (shown (button (row, "Previous Version")));
  settle (200);
  g_assert_true (gtk_widget_compute_point (button (row, "Regenerate"), row, &GRAPHENE_POINT_INIT (0, 0),
                                           &regenerate_at));

  /* Three: it shows, and follows the list. It comes after the reply's
   * buttons, which stay where they were under the pointer. */
  g_list_store_insert (versions, 0, v1);
  g_list_store_insert (versions, 1, v2);
  iterate ();
  {
    graphene_point_t now;

    settle (200);
    g_assert_cmpint (gtk_widget_get_width (button (row, "Previous Version")), >, 0);

    g_assert_true (gtk_widget_compute_point (button (row, "Regenerate"), row, &GRAPHENE_POINT_INIT (0, 0),
                                             &now));
    g_assert_cmpfloat (now.x, ==, regenerate_at.x);
  }
  previous = button (row, "Previous Version");
  next = button (row, "Next Version");
  g_assert_true (shown (previous));
  g_assert_true (shown (next));
  g_assert_nonnull (shown_label (row, "3/3"));
  g_assert_true (gtk_widget_is_sensitive (previous));
  g_assert_false (gtk_widget_is_sensitive (next));

  click (previous);
  iterate ();
  g_assert_true (kaged_message_row_get_message (f->row) == v2);
  g_assert_nonnull (shown_label (row, "2/3"));
  g_assert_nonnull (shown_label (row, "Version two"));
  g_assert_nonnull (shown_label (row, "Stopped"));
  g_assert_true (gtk_widget_is_sensitive (next));
  g_assert_cmpuint (f->activated->len, ==, 1);
  g_assert_cmpstr (g_ptr_array_index (f->activated, 0), ==, "show-version 12");

  click (previous);
  iterate ();
  g_assert_true (kaged_message_row_get_message (f->row) == v1);
  g_assert_nonnull (shown_label (row, "1/3"));
  g_assert_false (gtk_widget_is_sensitive (previous));

  click (next);
  click (next);
  iterate ();
  g_assert_true (kaged_message_row_get_message (f->row) == v3);
  g_assert_nonnull (shown_label (row, "3/3"));
  g_assert_null (shown_label (row, "Stopped"));

  kaged_message_row_set_versions (f->row, NULL);
  iterate ();
  g_assert_false (shown (previous));
}

static void
test_row_details (RowFixture    *f,
                  gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (4, KAGED_MESSAGE_ROLE_AGENT, "Done", KAGED_MESSAGE_STATUS_COMPLETE);
  g_autoptr(KagedRun) run = kaged_run_new ();
  KagedAttempt attempt = { 0 };
  GtkWidget *popover;

  kaged_run_set_id (run, 42);
  kaged_run_set_started_at (run, 1773150120000);
  kaged_run_set_finished_at (run, 1773150123500);
  kaged_run_set_input_tokens (run, 120);
  kaged_run_set_output_tokens (run, 48);

  attempt.time = 1773150120000;
  attempt.http_status = 503;
  attempt.error = (char *)"Service unavailable";
  attempt.retry_class = KAGED_RETRY_CLASS_OVERLOADED;
  attempt.wait_ms = 2000;
  attempt.wait_source = (char *)"retry-after";
  kaged_run_add_attempt (run, &attempt);

  attempt.time = 1773150122000;
  attempt.http_status = 200;
  attempt.error = NULL;
  attempt.retry_class = KAGED_RETRY_CLASS_NONE;
  attempt.wait_ms = 0;
  attempt.wait_source = NULL;
  kaged_run_add_attempt (run, &attempt);

  kaged_message_set_run_id (message, 42);
  kaged_message_row_set_message (f->row, message);
  kaged_message_row_set_run (f->row, run);
  kaged_message_row_set_provider_name (f->row, "Ollama");
  kaged_message_row_set_model_name (f->row, "llama3.2");
  iterate ();

  click (button (GTK_WIDGET (f->row), "Message Details"));
  iterate ();

  popover = gtk_widget_get_last_child (GTK_WIDGET (f->row));
  g_assert_true (GTK_IS_POPOVER (popover));
  g_assert_true (gtk_widget_get_visible (popover));
  g_assert_nonnull (find_widget (popover, is_label_with_text, "Ollama"));
  g_assert_nonnull (find_widget (popover, is_label_with_text, "llama3.2"));
  g_assert_nonnull (find_widget (popover, is_label_with_text, "42"));
  g_assert_nonnull (find_widget (popover, is_label_with_text, "3.5 s"));
  g_assert_nonnull (find_widget (popover, is_label_with_text, "120 in, 48 out"));
  g_assert_nonnull (find_widget (popover, is_label_with_text, "Attempt 1, 13:42:00"));
  g_assert_nonnull (find_widget (popover, is_label_with_text,
                                 "HTTP 503: Service unavailable\n"
                                 "Waited 2.0 s, set by the provider’s Retry-After header"));
  g_assert_nonnull (find_widget (popover, is_label_with_text, "Attempt 2, 13:42:02"));
  g_assert_nonnull (find_widget (popover, is_label_with_text, "HTTP 200"));

  /* It is as tall as what it says at its width, not as tall as it may
   * grow (480 pixels, then it scrolls). */
  {
    GtkWidget *grid = find_widget (popover, is_grid, NULL);
    int content = 0;
    int width = 0;
    int height = 0;

    g_assert_nonnull (grid);
    gtk_widget_measure (grid, GTK_ORIENTATION_HORIZONTAL, -1, NULL, &width, NULL, NULL);
    gtk_widget_measure (grid, GTK_ORIENTATION_VERTICAL, width, NULL, &height, NULL, NULL);
    gtk_widget_measure (gtk_popover_get_child (GTK_POPOVER (popover)), GTK_ORIENTATION_VERTICAL, -1,
                        NULL, &content, NULL, NULL);
    g_assert_cmpint (height, <, 480);
    g_assert_cmpint (content, ==, height);
  }

  gtk_popover_popdown (GTK_POPOVER (popover));
}

/* A long paragraph of short words is measured from a minimum of some
 * characters, not from its longest word: GTK lays a wrapped label out at
 * its minimum width, one word per line for the longest-word minimum, which
 * costs many times the layout shown. */
static int
min_width (GtkWidget *widget)
{
  int minimum = 0;

  gtk_widget_measure (widget, GTK_ORIENTATION_HORIZONTAL, -1, &minimum, NULL, NULL, NULL);
  return minimum;
}

static void
test_markdown_long_paragraph (void)
{
  KagedMarkdownView *view = KAGED_MARKDOWN_VIEW (kaged_markdown_view_new ());
  GtkWindow *window = show_in_window (GTK_WIDGET (view));
  g_autoptr(GString) text = g_string_new (NULL);
  g_autoptr(KagedMessage) message = NULL;
  KagedMessageRow *row;
  GtkWidget *label;

  while (text->len < 2000)
    g_string_append (text, "a of it to in is an ");
  kaged_markdown_view_set_text (view, text->str);
  iterate ();

  label = gtk_widget_get_first_child (blocks_of (GTK_WIDGET (view)));
  g_assert_true (GTK_IS_LABEL (label));
  g_assert_cmpint (min_width (label), >=, 100);
  gtk_window_destroy (window);

  /* The operator's bubble too. */
  row = KAGED_MESSAGE_ROW (kaged_message_row_new ());
  window = show_in_window (GTK_WIDGET (row));
  message = new_message (7, KAGED_MESSAGE_ROLE_OPERATOR, text->str, KAGED_MESSAGE_STATUS_NONE);
  kaged_message_row_set_message (row, message);
  iterate ();
  label = GTK_WIDGET (gtk_widget_get_template_child (GTK_WIDGET (row), KAGED_TYPE_MESSAGE_ROW,
                                                     "operator_label"));
  g_assert_true (gtk_widget_get_mapped (label));
  g_assert_cmpint (min_width (label), >=, 100);
  gtk_window_destroy (window);
}

/* --- how often the operator's text is laid out --------------------------------------- */

static GtkWidget *counted_label;
static guint n_width_for_height;
static void (*label_measure) (GtkWidget      *widget,
                              GtkOrientation  orientation,
                              int             for_size,
                              int            *minimum,
                              int            *natural,
                              int            *minimum_baseline,
                              int            *natural_baseline);

/* GtkLabel's measure, counting the times @counted_label is asked how wide
 * it must be to fit a height: to answer, GTK lays the whole text out again
 * and again at widths it narrows down. */
static void
counting_label_measure (GtkWidget      *widget,
                        GtkOrientation  orientation,
                        int             for_size,
                        int            *minimum,
                        int            *natural,
                        int            *minimum_baseline,
                        int            *natural_baseline)
{
  if (widget == counted_label && orientation == GTK_ORIENTATION_HORIZONTAL && for_size >= 0)
    n_width_for_height++;

  label_measure (widget, orientation, for_size, minimum, natural, minimum_baseline,
                 natural_baseline);
}

/* A long message of the operator is laid out for the width the list gives
 * its row, never searched for the width that fits some height: with a list
 * of such rows that search made a long conversation take seconds to open. */
static void
test_row_operator_long_text_layout (void)
{
  static const int widths[] = { 600, 420, 300 };
  GtkWidgetClass *label_class = g_type_class_ref (GTK_TYPE_LABEL);
  KagedMessageRow *row = KAGED_MESSAGE_ROW (kaged_message_row_new ());
  g_autoptr(GString) text = g_string_new (NULL);
  g_autoptr(KagedMessage) message = NULL;
  GtkWindow *window;
  int previous = G_MAXINT;

  while (text->len < 2000)
    g_string_append (text, "a of it to in is an ");
  message = new_message (7, KAGED_MESSAGE_ROLE_OPERATOR, text->str, KAGED_MESSAGE_STATUS_NONE);

  window = show_in_window (GTK_WIDGET (row));
  kaged_message_row_set_message (row, message);
  iterate ();
  counted_label = GTK_WIDGET (gtk_widget_get_template_child (GTK_WIDGET (row), KAGED_TYPE_MESSAGE_ROW,
                                                             "operator_label"));
  g_assert_true (gtk_widget_get_mapped (counted_label));

  /* As a list view asks each row: its height for the list's width; then
   * it gives the row that size. */
  n_width_for_height = 0;
  label_measure = label_class->measure;
  label_class->measure = counting_label_measure;
  for (guint i = 0; i < G_N_ELEMENTS (widths); i++)
    {
      int height = 0;

      gtk_widget_queue_resize (counted_label);
      gtk_widget_measure (GTK_WIDGET (row), GTK_ORIENTATION_VERTICAL, widths[i],
                          &height, NULL, NULL, NULL);
      /* Narrower, taller: the text wraps to the width. */
      g_assert_cmpint (height, >, 100);
      g_assert_cmpint (height, <, G_MAXINT);
      if (i > 0)
        g_assert_cmpint (height, >, previous);
      previous = height;

      /* And given that size. */
      gtk_widget_size_allocate (GTK_WIDGET (row),
                                &(GtkAllocation) { 0, 0, widths[i], height }, -1);
    }
  label_class->measure = label_measure;
  counted_label = NULL;

  g_assert_cmpuint (n_width_for_height, ==, 0);

  gtk_window_destroy (window);
  g_type_class_unref (label_class);
}

static guint
count_text_nodes (GskRenderNode *node)
{
  g_autoptr(GPtrArray) found = g_ptr_array_new ();

  collect_nodes (node, GSK_TEXT_NODE, found);

  return found->len;
}

static guint
drawn_paragraphs (GtkWidget *view)
{
  GtkSnapshot *snapshot = gtk_snapshot_new ();
  g_autoptr(GskRenderNode) node = NULL;

  GTK_WIDGET_GET_CLASS (view)->snapshot (view, snapshot);
  node = gtk_snapshot_free_to_node (snapshot);

  return count_text_nodes (node);
}

/* A long reply in a scrolled list draws the blocks near the visible part,
 * not all of them at every frame. */
static void
test_markdown_long_reply_drawn_in_part (void)
{
  GtkWidget *view = kaged_markdown_view_new ();
  GtkWidget *scroller = gtk_scrolled_window_new ();
  GtkWindow *window;
  g_autoptr(GString) text = g_string_new (NULL);

  for (guint i = 0; i < 300; i++)
    g_string_append_printf (text, "Paragraph %u.\n\n", i);
  kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (view), text->str);

  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), view);
  window = show_in_window (scroller);
  iterate ();
  g_assert_cmpuint (drawn_paragraphs (view), >, 0);
  g_assert_cmpuint (drawn_paragraphs (view), <, 100);

  /* Scrolled to the end: the last paragraph is among those drawn. */
  gtk_adjustment_set_value (gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (scroller)),
                            G_MAXDOUBLE);
  /* Laid out there: a frame, which an idle iteration may not reach. */
  run_frames (window, 2);
  g_assert_cmpuint (drawn_paragraphs (view), >, 0);
  g_assert_cmpuint (drawn_paragraphs (view), <, 100);
  {
    GtkSnapshot *snapshot = gtk_snapshot_new ();
    g_autoptr(GskRenderNode) node = NULL;
    GtkWidget *last = gtk_widget_get_last_child (blocks_of (view));
    graphene_rect_t bounds;
    graphene_rect_t drawn;

    GTK_WIDGET_GET_CLASS (view)->snapshot (view, snapshot);
    node = gtk_snapshot_free_to_node (snapshot);
    g_assert_nonnull (node);
    gsk_render_node_get_bounds (node, &drawn);
    g_assert_true (gtk_widget_compute_bounds (last, view, &bounds));
    g_assert_cmpfloat (drawn.origin.y + drawn.size.height, >=, bounds.origin.y + bounds.size.height - 1);
  }
  gtk_window_destroy (window);
}

static void
collect_label_texts (GtkWidget *widget,
                     GString   *texts)
{
  if (GTK_IS_LABEL (widget))
    {
      g_string_append (texts, gtk_label_get_text (GTK_LABEL (widget)));
      g_string_append_c (texts, '|');
      return;
    }
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    collect_label_texts (child, texts);
}

static guint
count_children (GtkWidget *widget)
{
  guint n = 0;

  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    n++;

  return n;
}

/* While a long reply grows at its end, the blocks it finished are neither
 * built, measured nor laid out again: the view goes through a few groups
 * of them and the blocks still open, not through every block. */
static void
collect_labels (GtkWidget *widget,
                GPtrArray *labels)
{
  if (GTK_IS_LABEL (widget))
    {
      g_ptr_array_add (labels, widget);
      return;
    }
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    collect_labels (child, labels);
}

/* A block's widget stays where it was built while the reply streams on:
 * moving it to another parent would unrealize it and make GTK compute its
 * style and lay it out again, a long frame each time finished blocks were
 * gathered. */
static void
count_unrealize_cb (GtkWidget *widget,
                    gpointer   user_data)
{
  (*(guint *)user_data)++;
}

/* Watches the paragraphs under @widget not watched yet. */
static void
watch_blocks (GtkWidget  *widget,
              GHashTable *watched,
              guint      *unrealized)
{
  if (GTK_IS_LABEL (widget))
    {
      if (g_hash_table_contains (watched, widget))
        return;
      g_assert_true (gtk_widget_get_realized (widget));
      g_hash_table_insert (watched, widget, gtk_widget_get_parent (widget));
      g_signal_connect (widget, "unrealize", G_CALLBACK (count_unrealize_cb), unrealized);
      return;
    }
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    watch_blocks (child, watched, unrealized);
}

static void
test_markdown_blocks_stay_put (void)
{
  GtkWidget *view = kaged_markdown_view_new ();
  GtkWidget *scroller = gtk_scrolled_window_new ();
  g_autoptr(GHashTable) watched = g_hash_table_new (NULL, NULL);
  g_autoptr(GString) text = g_string_new (NULL);
  g_autoptr(GString) expected = g_string_new (NULL);
  g_autoptr(GString) shown = g_string_new (NULL);
  GHashTableIter iter;
  gpointer block, parent;
  GtkWindow *window;
  guint unrealized = 0;

  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), view);
  window = show_in_window (scroller);
  gtk_window_set_focus (window, NULL);

  for (guint i = 0; i < 3 * 16 + 5; i++)
    {
      g_string_append_printf (text, "Paragraph %u.\n\n", i);
      g_string_append_printf (expected, "Paragraph %u.|", i);
      kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (view), text->str);
      run_frames (window, 1);
      watch_blocks (view, watched, &unrealized);
    }

  collect_label_texts (view, shown);
  g_assert_cmpstr (shown->str, ==, expected->str);
  /* The finished blocks were gathered, or the check below proves nothing. */
  g_assert_cmpuint (count_children (gtk_widget_get_first_child (view)), >=, 3);
  g_assert_cmpuint (g_hash_table_size (watched), ==, 3 * 16 + 5);

  g_assert_cmpuint (unrealized, ==, 0);
  g_hash_table_iter_init (&iter, watched);
  while (g_hash_table_iter_next (&iter, &block, &parent))
    {
      g_assert_true (gtk_widget_get_parent (block) == parent);
      g_assert_true (gtk_widget_get_mapped (block));
    }

  g_hash_table_iter_init (&iter, watched);
  while (g_hash_table_iter_next (&iter, &block, NULL))
    g_signal_handlers_disconnect_by_func (block, count_unrealize_cb, &unrealized);

  /* Text that does not continue it replaces the blocks, one of them
   * holding the focus (a label the person selected text in). */
  block = gtk_widget_get_first_child (gtk_widget_get_first_child (gtk_widget_get_first_child (view)));
  g_assert_true (GTK_IS_LABEL (block));
  g_assert_true (gtk_widget_grab_focus (block));
  kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (view), "Other");
  run_frames (window, 2);
  g_string_truncate (shown, 0);
  collect_label_texts (view, shown);
  g_assert_cmpstr (shown->str, ==, "Other|");

  gtk_window_destroy (window);
}

/* @n paragraphs too long for one line of a narrow window, then @tail. */
static GString *
wrapping_paragraphs (guint       n,
                     const char *tail)
{
  GString *text = g_string_new (NULL);

  for (guint i = 0; i < n; i++)
    g_string_append_printf (text, "Paragraph %u says a good deal more than fits on one line of "
                            "a narrow window, so that its words wrap onto several lines.\n\n", i);
  g_string_append (text, tail);

  return text;
}

/* A reply of @text, in a window that scrolls it up and down only. */
static GtkWindow *
show_scrolled_reply (const char  *text,
                     GtkWidget  **view)
{
  GtkWidget *scroller = gtk_scrolled_window_new ();

  *view = kaged_markdown_view_new ();
  kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (*view), text);
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scroller), GTK_POLICY_NEVER,
                                  GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), *view);

  return show_in_window (scroller);
}

/* The finished blocks of a long reply, gathered into groups, take the
 * height their wrapped text needs at the view's width: no paragraph is
 * drawn over the next, however narrow the window. */
static void
test_markdown_long_reply_wraps_in_groups (void)
{
  g_autoptr(GString) text = wrapping_paragraphs (60, "Growing");
  g_autoptr(GPtrArray) labels = g_ptr_array_new ();
  GtkWidget *view;
  GtkWindow *window = show_scrolled_reply (text->str, &view);
  int wrapped = 0;

  gtk_window_set_default_size (window, 300, 480);
  gtk_window_set_focus (window, NULL);
  run_frames (window, 3);
  g_assert_cmpint (gtk_widget_get_width (view), <=, 300);
  g_assert_cmpuint (kaged_markdown_view_get_group_layouts (KAGED_MARKDOWN_VIEW (view)), >, 0);

  collect_labels (view, labels);
  g_assert_cmpuint (labels->len, ==, 61);
  for (guint i = 1; i < labels->len; i++)
    {
      graphene_rect_t above, below;

      g_assert_true (gtk_widget_compute_bounds (g_ptr_array_index (labels, i - 1), view, &above));
      g_assert_true (gtk_widget_compute_bounds (g_ptr_array_index (labels, i), view, &below));
      if (above.size.height > 2 * gtk_widget_get_height (g_ptr_array_index (labels, labels->len - 1)))
        wrapped++;
      g_assert_cmpfloat (below.origin.y, >=, above.origin.y + above.size.height);
    }
  /* The paragraphs did wrap, or the check above proves nothing. */
  g_assert_cmpint (wrapped, >, 50);

  gtk_window_destroy (window);
}

/* How narrow a block gets does not change with its text: the view
 * measures each block's width once, not again as the reply grows or the
 * window is resized, which would lay each paragraph out once more. */
static void
test_markdown_widths_measured_once (void)
{
  g_autoptr(GString) text = wrapping_paragraphs (10, "- an item\n- another\n\n```c\nint a;\n```\n\nGrowing");
  GtkWidget *view;
  GtkWindow *window = show_scrolled_reply (text->str, &view);
  guint64 measured;

  run_frames (window, 3);
  measured = kaged_markdown_view_get_width_measures (KAGED_MARKDOWN_VIEW (view));
  g_assert_cmpuint (measured, >=, 13);

  for (guint i = 0; i < 20; i++)
    {
      g_string_append (text, " and more words");
      kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (view), text->str);
      run_frames (window, 1);
    }
  gtk_window_set_default_size (window, 360, 480);
  run_frames (window, 3);
  g_assert_cmpint (gtk_widget_get_width (view), <=, 360);
  g_assert_cmpuint (kaged_markdown_view_get_width_measures (KAGED_MARKDOWN_VIEW (view)), ==, measured);

  /* A new block is measured, once. */
  g_string_append (text, "\n\nA new paragraph");
  kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (view), text->str);
  run_frames (window, 3);
  g_assert_cmpuint (kaged_markdown_view_get_width_measures (KAGED_MARKDOWN_VIEW (view)), ==, measured + 1);

  gtk_window_destroy (window);
}

static void
test_markdown_long_reply_grows_at_end (void)
{
  GtkWidget *view = kaged_markdown_view_new ();
  GtkWidget *scroller = gtk_scrolled_window_new ();
  g_autoptr(GString) text = g_string_new (NULL);
  g_autoptr(GString) expected = g_string_new (NULL);
  g_autoptr(GString) shown = g_string_new (NULL);
  GtkWindow *window;
  guint64 layouts;
  guint64 built;
  int height;

  for (guint i = 0; i < 200; i++)
    {
      g_string_append_printf (text, "Paragraph %u.\n\n", i);
      g_string_append_printf (expected, "Paragraph %u.|", i);
    }
  g_string_append (text, "Growing");
  kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (view), text->str);

  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), view);
  window = show_in_window (scroller);
  /* Focus is for later: the window gave it to the first label. */
  gtk_window_set_focus (window, NULL);
  run_frames (window, 2);

  /* All of it shown, in order; the view itself holds a few widgets. */
  collect_label_texts (view, shown);
  g_string_append (expected, "Growing|");
  g_assert_cmpstr (shown->str, ==, expected->str);
  g_assert_cmpuint (count_children (view), <, 40);

  layouts = kaged_markdown_view_get_group_layouts (KAGED_MARKDOWN_VIEW (view));
  built = kaged_markdown_view_get_widgets_built (KAGED_MARKDOWN_VIEW (view));
  height = gtk_widget_get_height (view);
  g_assert_cmpuint (layouts, >, 0);

  for (guint i = 0; i < 40; i++)
    {
      g_string_append (text, " word word word word word word word word word word");
      kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (view), text->str);
      run_frames (window, 1);
    }
  g_assert_cmpuint (kaged_markdown_view_get_group_layouts (KAGED_MARKDOWN_VIEW (view)), ==, layouts);
  g_assert_cmpuint (kaged_markdown_view_get_widgets_built (KAGED_MARKDOWN_VIEW (view)), ==, built);
  g_assert_true (g_str_has_suffix (gtk_label_get_text (GTK_LABEL (gtk_widget_get_last_child (blocks_of (view)))),
                                   "word word"));
  g_assert_cmpint (gtk_widget_get_height (view), >, height);

  /* New paragraphs join the groups as they end, in order. */
  g_string_truncate (expected, 0);
  for (guint i = 0; i < 200; i++)
    g_string_append_printf (expected, "Paragraph %u.|", i);
  g_string_append (expected, strrchr (text->str, 'G'));
  g_string_append_c (expected, '|');
  for (guint i = 200; i < 260; i++)
    {
      g_string_append_printf (text, "\n\nParagraph %u.", i);
      g_string_append_printf (expected, "Paragraph %u.|", i);
      kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (view), text->str);
      if (i % 10 == 0)
        run_frames (window, 1);
    }
  run_frames (window, 1);
  g_string_truncate (shown, 0);
  collect_label_texts (view, shown);
  g_assert_cmpstr (shown->str, ==, expected->str);
  g_assert_cmpuint (count_children (view), <, 40);

  /* A block that has the focus (its text being selected) keeps it. */
  {
    GtkWidget *focused = gtk_widget_get_last_child (blocks_of (view));

    g_assert_true (gtk_widget_grab_focus (focused));
    for (guint i = 260; i < 300; i++)
      {
        g_string_append_printf (text, "\n\nParagraph %u.", i);
        g_string_append_printf (expected, "Paragraph %u.|", i);
        kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (view), text->str);
      }
    run_frames (window, 1);
    g_assert_true (gtk_widget_has_focus (focused));
    g_string_truncate (shown, 0);
    collect_label_texts (view, shown);
    g_assert_cmpstr (shown->str, ==, expected->str);
    gtk_window_set_focus (window, NULL);
  }

  /* Text that does not continue it replaces it all. */
  kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (view), "Other");
  run_frames (window, 1);
  g_assert_cmpuint (count_children (view), ==, 1);
  g_string_truncate (shown, 0);
  collect_label_texts (view, shown);
  g_assert_cmpstr (shown->str, ==, "Other|");

  gtk_window_destroy (window);
}

static gboolean
is_label_ending_with (GtkWidget  *widget,
                      const char *suffix)
{
  return GTK_IS_LABEL (widget) && g_str_has_suffix (gtk_label_get_text (GTK_LABEL (widget)), suffix);
}

static GtkWidget *
popover_label (GtkWidget  *popover,
               const char *text)
{
  return find_widget (popover, is_shown_label_with_text, text);
}

/* The details of a reply being written follow it while they are open:
 * its state, its running time, each attempt as it comes, and its tokens
 * and duration once it ends, without opening them again. */
static void
test_row_details_live (RowFixture    *f,
                       gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (6, KAGED_MESSAGE_ROLE_AGENT, "",
                                                 KAGED_MESSAGE_STATUS_STREAMING);
  g_autoptr(KagedRun) run = kaged_run_new ();
  gint64 started = g_get_real_time () / 1000 - 2000;
  KagedAttempt attempt = { 0 };
  GtkWidget *popover;
  GtkWidget *duration;
  gint64 deadline;

  kaged_run_set_id (run, 43);
  kaged_run_set_status (run, KAGED_RUN_STATUS_RUNNING);
  kaged_run_set_started_at (run, started);
  kaged_message_set_run_id (message, 43);
  kaged_message_row_set_message (f->row, message);
  kaged_message_row_set_run (f->row, run);
  iterate ();

  click (button (GTK_WIDGET (f->row), "Message Details"));
  iterate ();
  popover = gtk_widget_get_last_child (GTK_WIDGET (f->row));
  g_assert_true (GTK_IS_POPOVER (popover));
  g_assert_true (gtk_widget_get_visible (popover));

  g_assert_nonnull (popover_label (popover, "Connecting to the provider"));
  g_assert_nonnull (popover_label (popover, "Counted when the reply ends"));
  duration = find_widget (popover, is_label_ending_with, " s so far");
  g_assert_nonnull (duration);
  g_assert_null (popover_label (popover, "Attempt 1, 13:42:00"));

  /* The first attempt fails and Tier 1 waits. */
  attempt.time = 1773150120000;
  attempt.http_status = 503;
  attempt.error = (char *)"Service unavailable";
  attempt.retry_class = KAGED_RETRY_CLASS_OVERLOADED;
  attempt.wait_ms = 2000;
  attempt.wait_source = (char *)"backoff";
  kaged_run_add_attempt (run, &attempt);
  iterate ();
  g_assert_nonnull (popover_label (popover, "Attempt 1, 13:42:00"));
  g_assert_nonnull (popover_label (popover, "Waiting to try again (attempt 2)"));

  /* The running time moves on by itself. */
  {
    g_autofree char *before = g_strdup (gtk_label_get_text (GTK_LABEL (duration)));

    deadline = g_get_monotonic_time () + kaged_test_usec (5 * G_USEC_PER_SEC);
    while (g_str_equal (before, gtk_label_get_text (GTK_LABEL (duration))) &&
           g_get_monotonic_time () < deadline)
      g_main_context_iteration (NULL, TRUE);
    g_assert_cmpstr (before, !=, gtk_label_get_text (GTK_LABEL (duration)));
  }

  /* The second answers and the text comes. */
  attempt.time = 1773150122000;
  attempt.http_status = 200;
  attempt.error = NULL;
  attempt.retry_class = KAGED_RETRY_CLASS_NONE;
  attempt.wait_ms = 0;
  attempt.wait_source = NULL;
  kaged_run_add_attempt (run, &attempt);
  kaged_message_set_content (message, "Hello");
  iterate ();
  g_assert_nonnull (popover_label (popover, "Attempt 2, 13:42:02"));
  g_assert_nonnull (popover_label (popover, "HTTP 200"));
  g_assert_nonnull (popover_label (popover, "Writing the reply"));

  /* It ends: tokens, duration and state, in the same open popover. */
  kaged_run_set_input_tokens (run, 30);
  kaged_run_set_output_tokens (run, 12);
  kaged_run_set_finished_at (run, started + 4200);
  kaged_run_set_status (run, KAGED_RUN_STATUS_SUCCEEDED);
  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_COMPLETE);
  iterate ();
  g_assert_true (gtk_widget_get_visible (popover));
  g_assert_nonnull (popover_label (popover, "30 in, 12 out"));
  g_assert_nonnull (popover_label (popover, "4.2 s"));
  g_assert_nonnull (popover_label (popover, "Complete"));
  g_assert_null (popover_label (popover, "Writing the reply"));
  g_assert_null (find_widget (popover, is_label_ending_with, " s so far"));

  gtk_popover_popdown (GTK_POPOVER (popover));
}

/* A failed reply that a Tier 2 retry waits to write again says so in its
 * details too, as its header does, and no longer once the retry is
 * cancelled. */
static void
test_row_details_retry_pending (RowFixture    *f,
                                gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (8, KAGED_MESSAGE_ROLE_AGENT, "",
                                                 KAGED_MESSAGE_STATUS_FAILED);
  g_autoptr(KagedRun) run = kaged_run_new ();
  GtkWidget *popover;

  kaged_run_set_id (run, 44);
  kaged_run_set_status (run, KAGED_RUN_STATUS_FAILED);
  kaged_message_set_run_id (message, 44);
  kaged_message_set_retry_class (message, KAGED_RETRY_CLASS_OVERLOADED);
  kaged_message_row_set_message (f->row, message);
  kaged_message_row_set_run (f->row, run);
  kaged_message_row_set_retry_pending (f->row, TRUE);
  iterate ();
  g_assert_nonnull (shown_label (GTK_WIDGET (f->row), "Waiting to retry"));

  click (button (GTK_WIDGET (f->row), "Message Details"));
  iterate ();
  popover = gtk_widget_get_last_child (GTK_WIDGET (f->row));
  g_assert_true (GTK_IS_POPOVER (popover));
  g_assert_nonnull (popover_label (popover, "Failed, waiting to retry"));

  /* Cancelled while the details are open. */
  kaged_message_row_set_retry_pending (f->row, FALSE);
  iterate ();
  g_assert_null (popover_label (popover, "Failed, waiting to retry"));
  g_assert_nonnull (popover_label (popover, "Failed"));

  gtk_popover_popdown (GTK_POPOVER (popover));
}

/* Tab through a reply stops on what can be used (its links, a code
 * block's Copy, its own buttons), not on each paragraph, list item and
 * table cell, which a click still selects. */
static void
test_row_tab_stops (RowFixture    *f,
                    gconstpointer  data)
{
  g_autoptr(KagedMessage) message = NULL;
  g_autoptr(GPtrArray) visited = g_ptr_array_new ();
  GtkWidget *window = GTK_WIDGET (f->window);
  gboolean link_reached = FALSE;
  gboolean code_copy_reached = FALSE;
  gboolean regenerate_reached = FALSE;

  message = new_message (12, KAGED_MESSAGE_ROLE_AGENT,
                         "# A heading\n\nA paragraph.\n\n- one\n- two\n\n"
                         "| Name | Value |\n|---|---|\n| a | 1 |\n\n> A quote\n\n"
                         "See [the docs](https://example.org/).\n\n```c\nint x;\n```\n",
                         KAGED_MESSAGE_STATUS_COMPLETE);
  kaged_message_row_set_message (f->row, message);
  iterate ();

  gtk_root_set_focus (GTK_ROOT (window), NULL);
  for (guint i = 0; i < 100 && gtk_widget_child_focus (window, GTK_DIR_TAB_FORWARD); i++)
    {
      GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (window));

      if (focus == NULL || (visited->len > 0 && focus == g_ptr_array_index (visited, 0)))
        break;
      g_ptr_array_add (visited, focus);
    }

  for (guint i = 0; i < visited->len; i++)
    {
      GtkWidget *widget = g_ptr_array_index (visited, i);

      if (GTK_IS_LABEL (widget))
        {
          g_assert_nonnull (strstr (gtk_label_get_label (GTK_LABEL (widget)), "<a "));
          link_reached = TRUE;
        }
      if (gtk_widget_get_ancestor (widget, KAGED_TYPE_CODE_BLOCK) != NULL && GTK_IS_BUTTON (widget))
        code_copy_reached = TRUE;
      if (widget == button (GTK_WIDGET (f->row), "Regenerate"))
        regenerate_reached = TRUE;
    }
  g_assert_true (link_reached);
  g_assert_true (code_copy_reached);
  g_assert_true (regenerate_reached);

  /* Backwards, the same way. */
  gtk_root_set_focus (GTK_ROOT (window), NULL);
  for (guint i = 0; i < 100 && gtk_widget_child_focus (window, GTK_DIR_TAB_BACKWARD); i++)
    {
      GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (window));

      g_assert_nonnull (focus);
      if (GTK_IS_LABEL (focus))
        g_assert_nonnull (strstr (gtk_label_get_label (GTK_LABEL (focus)), "<a "));
    }
}

/* A failed or stopped reply says so in its details. */
static void
test_row_details_outcomes (RowFixture    *f,
                           gconstpointer  data)
{
  g_autoptr(KagedMessage) message = new_message (7, KAGED_MESSAGE_ROLE_AGENT, "Part",
                                                 KAGED_MESSAGE_STATUS_STREAMING);
  g_autoptr(KagedRun) run = kaged_run_new ();
  g_autofree char *queued = NULL;
  g_autofree char *failed = NULL;
  g_autofree char *stopped = NULL;
  g_autofree char *interrupted = NULL;

  kaged_run_set_status (run, KAGED_RUN_STATUS_QUEUED);
  queued = kaged_message_details_describe_status (message, run);
  g_assert_cmpstr (queued, ==, "Waiting for its turn");

  kaged_run_set_status (run, KAGED_RUN_STATUS_FAILED);
  failed = kaged_message_details_describe_status (message, run);
  g_assert_cmpstr (failed, ==, "Failed");

  kaged_run_set_status (run, KAGED_RUN_STATUS_CANCELLED);
  stopped = kaged_message_details_describe_status (message, run);
  g_assert_cmpstr (stopped, ==, "Stopped");

  kaged_message_set_status (message, KAGED_MESSAGE_STATUS_INTERRUPTED);
  interrupted = kaged_message_details_describe_status (message, NULL);
  g_assert_cmpstr (interrupted, ==, "Interrupted when Kaged closed");
}

/* Each attempt of the log in words: a status says nothing more when the
 * answer began (HTTP 200) or when the error already names it. */
static void
test_details_attempt_texts (void)
{
  static const struct {
    guint       http_status;
    const char *error;
    const char *text;
  } cases[] = {
    { 200, NULL, "HTTP 200" },
    { 429, "Too many requests", "HTTP 429: Too many requests" },
    { 200, "The connection was lost after part of the reply arrived: Connection reset",
      "The connection was lost after part of the reply arrived: Connection reset" },
    { 503, "The provider is overloaded (HTTP 503): Unavailable",
      "The provider is overloaded (HTTP 503): Unavailable" },
    { 0, "Could not connect: Connection refused", "Could not connect: Connection refused" },
  };
  g_autoptr(KagedRun) run = kaged_run_new ();
  g_autofree char *unknown = NULL;
  g_autofree char *counted = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      KagedAttempt attempt = { 0 };
      g_autofree char *text = NULL;

      attempt.http_status = cases[i].http_status;
      attempt.error = (char *)cases[i].error;
      text = kaged_message_details_describe_attempt (&attempt);
      g_assert_cmpstr (text, ==, cases[i].text);
    }

  /* Tokens a provider did not report are not "0 in, 0 out". */
  kaged_run_set_status (run, KAGED_RUN_STATUS_FAILED);
  unknown = kaged_message_details_describe_tokens (run);
  g_assert_cmpstr (unknown, ==, "Not reported");
  kaged_run_set_input_tokens (run, 30);
  kaged_run_set_output_tokens (run, 12);
  counted = kaged_message_details_describe_tokens (run);
  g_assert_cmpstr (counted, ==, "30 in, 12 out");
}

int
main (int   argc,
      char *argv[])
{
  g_setenv ("TZ", "UTC", TRUE);
  /* GTK's own test accessibility backend, to read accessible properties. */
  g_setenv ("GTK_A11Y", "test", TRUE);
  gtk_disable_setlocale ();
  g_test_init (&argc, &argv, NULL);
  adw_init ();

  g_test_add_func ("/markdown-view/fixture", test_markdown_fixture);
  g_test_add_func ("/markdown-view/streaming", test_markdown_streaming);
  g_test_add_func ("/markdown-view/long-paragraph", test_markdown_long_paragraph);
  g_test_add_func ("/markdown-view/long-reply-drawn-in-part", test_markdown_long_reply_drawn_in_part);
  g_test_add_func ("/markdown-view/long-reply-grows-at-end", test_markdown_long_reply_grows_at_end);
  g_test_add_func ("/markdown-view/long-reply-wraps-in-groups", test_markdown_long_reply_wraps_in_groups);
  g_test_add_func ("/markdown-view/blocks-stay-put", test_markdown_blocks_stay_put);
  g_test_add_func ("/markdown-view/widths-measured-once", test_markdown_widths_measured_once);
  g_test_add_func ("/message-row/operator-long-text-layout", test_row_operator_long_text_layout);
  g_test_add_func ("/code-block/language", test_code_block_language);
  g_test_add_func ("/code-block/wheel", test_code_block_wheel);
  g_test_add_func ("/code-block/language-kept", test_code_block_language_kept);
  g_test_add_func ("/code-block/language-parsed-later", test_code_block_language_parsed_later);
  g_test_add_func ("/code-block/warm-up", test_code_block_warm_up);
  g_test_add_func ("/icons/preload", test_icons_preload);
  g_test_add_func ("/code-block/dark", test_code_block_dark);
  g_test_add_func ("/code-block/copy", test_code_block_copy);
  g_test_add_func ("/message-details/attempt-texts", test_details_attempt_texts);
  g_test_add_func ("/code-block/highlights-growth", test_code_block_highlights_growth);
  g_test_add_func ("/code-block/grows-in-one-frame", test_code_block_grows_in_one_frame);

#define ROW_TEST(path, func) \
  g_test_add (path, RowFixture, NULL, row_fixture_set_up, func, row_fixture_tear_down)

  ROW_TEST ("/message-row/operator", test_row_operator);
  ROW_TEST ("/message-row/agent", test_row_agent);
  ROW_TEST ("/message-row/description-while-streaming", test_row_description_while_streaming);
  ROW_TEST ("/message-row/statuses", test_row_statuses);
  g_test_add_func ("/message-row/quota-until", test_row_quota_until);
  ROW_TEST ("/message-row/quota-clock-format", test_row_quota_clock_format);
  ROW_TEST ("/message-row/connecting", test_row_connecting);
  ROW_TEST ("/message-row/spinner", test_row_spinner);
  ROW_TEST ("/message-row/tier1-wait", test_row_tier1_wait);
  ROW_TEST ("/message-row/stopped-while-retrying", test_row_stopped_while_retrying);
  ROW_TEST ("/message-row/streaming-interval", test_row_streaming_interval);
  ROW_TEST ("/message-row/streaming-between-frames", test_row_streaming_between_frames);
  g_test_add_func ("/message-row/streaming-window-closed", test_row_streaming_window_closed);
  g_test_add_func ("/message-row/streaming-interval-rule", test_row_streaming_interval_rule);
  ROW_TEST ("/message-row/rebind", test_row_rebind);
  ROW_TEST ("/message-row/copy", test_row_copy);
  ROW_TEST ("/message-row/copy-needs-text", test_row_copy_needs_text);
  ROW_TEST ("/message-row/retry-pending", test_row_retry_pending);
  ROW_TEST ("/message-row/pager", test_row_pager);
  ROW_TEST ("/message-row/later-messages", test_row_later_messages);
  ROW_TEST ("/message-row/details", test_row_details);
  ROW_TEST ("/message-row/details-live", test_row_details_live);
  ROW_TEST ("/message-row/details-outcomes", test_row_details_outcomes);
  ROW_TEST ("/message-row/tab-stops", test_row_tab_stops);
  ROW_TEST ("/message-row/details-retry-pending", test_row_details_retry_pending);

  return g_test_run ();
}
