/* kaged-code-view.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-code-view"

#include "config.h"

#include <string.h>

#include "kaged-code-view.h"

/**
 * KagedCodeView:
 *
 * The view of a code block: a #GtkSourceView that asks for the height of
 * all its lines at once.
 *
 * GtkTextView counts a line's height only once it has laid the line out,
 * from an idle after the frame that showed the change. Code that grows
 * while a reply streams would then be laid out and drawn twice: first
 * without its new lines, then, a frame later, the whole window again with
 * them. Lines not laid out yet are counted here at the height of the last
 * line that was, so that the view gets its full height in the frame that
 * adds them and lays them out there. For the same reason the view asks
 * for a new size as soon as lines are added, not once they are laid out.
 *
 * Lines that replace the view's text all at once (as when the pager shows
 * an earlier version) may be laid out taller than counted while the view
 * is allocated. GtkTextView then asks for a new size, but from inside the
 * allocation, where GTK forgets it: after kaged_code_view_text_replaced()
 * the view checks its height once allocated, and asks again on the next
 * frame if it changed. Lines that stream in are counted right.
 */
struct _KagedCodeView
{
  GtkSourceView parent_instance;

  GSignalGroup *buffer_signals;

  /* The last height the view asked for, and for which width */
  int asked_width;
  int asked_height;
  /* Whether its text was replaced and its height not yet checked */
  guint check_height : 1;
  guint resize_tick_id;
};

G_DEFINE_FINAL_TYPE (KagedCodeView, kaged_code_view, GTK_SOURCE_TYPE_VIEW)

/* A line of the view's font: for a view none of whose lines was laid out. */
static int
font_line_height (GtkWidget *widget)
{
  PangoLayout *layout = gtk_widget_create_pango_layout (widget, "X");
  PangoRectangle logical;

  pango_layout_get_extents (layout, NULL, &logical);
  g_object_unref (layout);

  return PANGO_PIXELS (logical.height);
}

/* The lines at the end that were added since the view last laid out its
 * text have no height yet; every other line has the one it was laid out
 * with. */
static int
unmeasured_height (KagedCodeView *self)
{
  GtkTextView *view = GTK_TEXT_VIEW (self);
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (view);
  int line = gtk_text_buffer_get_line_count (buffer) - 1;
  int unmeasured = 0;
  int height = 0;

  for (; line >= 0; line--)
    {
      GtkTextIter iter;

      gtk_text_buffer_get_iter_at_line (buffer, &iter, line);
      gtk_text_view_get_line_yrange (view, &iter, NULL, &height);
      if (height > 0)
        break;
      unmeasured++;
    }

  if (unmeasured == 0)
    return 0;

  return unmeasured * (height > 0 ? height : font_line_height (GTK_WIDGET (self)));
}

static void
kaged_code_view_measure (GtkWidget      *widget,
                         GtkOrientation  orientation,
                         int             for_size,
                         int            *minimum,
                         int            *natural,
                         int            *minimum_baseline,
                         int            *natural_baseline)
{
  GTK_WIDGET_CLASS (kaged_code_view_parent_class)->measure (widget, orientation, for_size,
                                                            minimum, natural,
                                                            minimum_baseline, natural_baseline);

  if (orientation == GTK_ORIENTATION_VERTICAL)
    {
      KagedCodeView *self = KAGED_CODE_VIEW (widget);
      int unmeasured = unmeasured_height (self);

      *minimum += unmeasured;
      *natural += unmeasured;
      self->asked_width = for_size;
      self->asked_height = *natural;
    }
}

static gboolean
resize_tick_cb (GtkWidget     *widget,
                GdkFrameClock *frame_clock,
                gpointer       user_data)
{
  KAGED_CODE_VIEW (widget)->resize_tick_id = 0;
  gtk_widget_queue_resize (widget);

  return G_SOURCE_REMOVE;
}

static void
kaged_code_view_size_allocate (GtkWidget *widget,
                               int        width,
                               int        height,
                               int        baseline)
{
  KagedCodeView *self = KAGED_CODE_VIEW (widget);
  int asked_width = self->asked_width;
  int asked_height = self->asked_height;
  int minimum = 0;
  int natural = 0;

  /* Lays out the lines that were not yet, which may change their height. */
  GTK_WIDGET_CLASS (kaged_code_view_parent_class)->size_allocate (widget, width, height, baseline);

  if (!self->check_height || self->resize_tick_id != 0)
    return;

  /* Not gtk_widget_measure(): its answer is still kept. */
  kaged_code_view_measure (widget, GTK_ORIENTATION_VERTICAL, asked_width, &minimum, &natural, NULL, NULL);
  /* Once: lines out of sight may never be laid out. */
  self->check_height = FALSE;
  if (natural != asked_height)
    self->resize_tick_id = gtk_widget_add_tick_callback (widget, resize_tick_cb, NULL, NULL);
}

static void
on_insert_text (KagedCodeView *self,
                GtkTextIter   *location,
                const char    *text,
                int            len)
{
  if (len < 0 ? strchr (text, '\n') != NULL : memchr (text, '\n', len) != NULL)
    gtk_widget_queue_resize (GTK_WIDGET (self));
}

static void
kaged_code_view_dispose (GObject *object)
{
  KagedCodeView *self = KAGED_CODE_VIEW (object);

  if (self->resize_tick_id != 0)
    {
      gtk_widget_remove_tick_callback (GTK_WIDGET (self), self->resize_tick_id);
      self->resize_tick_id = 0;
    }
  if (self->buffer_signals != NULL)
    g_signal_group_set_target (self->buffer_signals, NULL);
  g_clear_object (&self->buffer_signals);

  G_OBJECT_CLASS (kaged_code_view_parent_class)->dispose (object);
}

static void
kaged_code_view_class_init (KagedCodeViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_code_view_dispose;

  widget_class->measure = kaged_code_view_measure;
  widget_class->size_allocate = kaged_code_view_size_allocate;
}

static void
kaged_code_view_init (KagedCodeView *self)
{
  self->buffer_signals = g_signal_group_new (GTK_TYPE_TEXT_BUFFER);
  g_signal_group_connect_object (self->buffer_signals, "insert-text",
                                 G_CALLBACK (on_insert_text), self,
                                 G_CONNECT_SWAPPED | G_CONNECT_AFTER);
  g_object_bind_property (self, "buffer", self->buffer_signals, "target",
                          G_BINDING_SYNC_CREATE);
}

GtkWidget *
kaged_code_view_new (void)
{
  return g_object_new (KAGED_TYPE_CODE_VIEW, NULL);
}

/**
 * kaged_code_view_text_replaced:
 * @self: a #KagedCodeView
 *
 * Tells @self that its text was replaced, not added to: it checks its height
 * once laid out.
 */
void
kaged_code_view_text_replaced (KagedCodeView *self)
{
  g_return_if_fail (KAGED_IS_CODE_VIEW (self));

  self->check_height = TRUE;
}
