/* kaged-fit-bin.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-fit-bin"

#include "config.h"

#include "kaged-fit-bin.h"

/**
 * KagedFitBin:
 *
 * Holds one child, and answers a request for its height at no width in
 * particular with the child's height at its natural width.
 *
 * GTK 4.8's scrolled window asks its child for such a height when it
 * propagates the child's natural height; text that wraps answers it for
 * the narrowest it could be, one word a line, far taller than it is shown.
 * Put between the scrolled window and such a child, this bin makes the
 * scrolled window as tall as what it shows, up to its most. Its minimum
 * height then is the child's at its natural width too: it belongs inside
 * a parent that scrolls up and down.
 */
struct _KagedFitBin
{
  GtkWidget parent_instance;

  GtkWidget *child;
};

G_DEFINE_FINAL_TYPE (KagedFitBin, kaged_fit_bin, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_CHILD,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static GtkSizeRequestMode
kaged_fit_bin_get_request_mode (GtkWidget *widget)
{
  return GTK_SIZE_REQUEST_HEIGHT_FOR_WIDTH;
}

static void
kaged_fit_bin_measure (GtkWidget      *widget,
                       GtkOrientation  orientation,
                       int             for_size,
                       int            *minimum,
                       int            *natural,
                       int            *minimum_baseline,
                       int            *natural_baseline)
{
  KagedFitBin *self = KAGED_FIT_BIN (widget);

  *minimum = *natural = 0;
  if (self->child == NULL || !gtk_widget_should_layout (self->child))
    return;

  if (orientation == GTK_ORIENTATION_VERTICAL && for_size < 0)
    gtk_widget_measure (self->child, GTK_ORIENTATION_HORIZONTAL, -1, NULL, &for_size, NULL, NULL);
  gtk_widget_measure (self->child, orientation, for_size, minimum, natural, NULL, NULL);
}

static void
kaged_fit_bin_size_allocate (GtkWidget *widget,
                             int        width,
                             int        height,
                             int        baseline)
{
  KagedFitBin *self = KAGED_FIT_BIN (widget);

  if (self->child != NULL && gtk_widget_should_layout (self->child))
    gtk_widget_allocate (self->child, width, height, baseline, NULL);
}

static void
kaged_fit_bin_compute_expand (GtkWidget *widget,
                              gboolean  *hexpand,
                              gboolean  *vexpand)
{
  KagedFitBin *self = KAGED_FIT_BIN (widget);

  *hexpand = self->child != NULL && gtk_widget_compute_expand (self->child, GTK_ORIENTATION_HORIZONTAL);
  *vexpand = self->child != NULL && gtk_widget_compute_expand (self->child, GTK_ORIENTATION_VERTICAL);
}

static void
kaged_fit_bin_dispose (GObject *object)
{
  KagedFitBin *self = KAGED_FIT_BIN (object);

  g_clear_pointer (&self->child, gtk_widget_unparent);

  G_OBJECT_CLASS (kaged_fit_bin_parent_class)->dispose (object);
}

static void
kaged_fit_bin_get_property (GObject    *object,
                            guint       prop_id,
                            GValue     *value,
                            GParamSpec *pspec)
{
  KagedFitBin *self = KAGED_FIT_BIN (object);

  switch (prop_id)
    {
    case PROP_CHILD:
      g_value_set_object (value, self->child);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_fit_bin_set_property (GObject      *object,
                            guint         prop_id,
                            const GValue *value,
                            GParamSpec   *pspec)
{
  KagedFitBin *self = KAGED_FIT_BIN (object);

  switch (prop_id)
    {
    case PROP_CHILD:
      kaged_fit_bin_set_child (self, g_value_get_object (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_fit_bin_class_init (KagedFitBinClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_fit_bin_dispose;
  object_class->get_property = kaged_fit_bin_get_property;
  object_class->set_property = kaged_fit_bin_set_property;

  widget_class->get_request_mode = kaged_fit_bin_get_request_mode;
  widget_class->measure = kaged_fit_bin_measure;
  widget_class->size_allocate = kaged_fit_bin_size_allocate;
  widget_class->compute_expand = kaged_fit_bin_compute_expand;

  /**
   * KagedFitBin:child:
   *
   * The widget held.
   */
  properties [PROP_CHILD] =
    g_param_spec_object ("child", NULL, NULL,
                         GTK_TYPE_WIDGET,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_fit_bin_init (KagedFitBin *self)
{
}

/**
 * kaged_fit_bin_new:
 *
 * Returns: (transfer floating): a new #KagedFitBin
 */
GtkWidget *
kaged_fit_bin_new (void)
{
  return g_object_new (KAGED_TYPE_FIT_BIN, NULL);
}

/**
 * kaged_fit_bin_get_child:
 *
 * Returns: (transfer none) (nullable): the widget held
 */
GtkWidget *
kaged_fit_bin_get_child (KagedFitBin *self)
{
  g_return_val_if_fail (KAGED_IS_FIT_BIN (self), NULL);

  return self->child;
}

/**
 * kaged_fit_bin_set_child:
 * @child: (nullable): the widget to hold
 *
 * Holds @child, in place of the widget held before.
 */
void
kaged_fit_bin_set_child (KagedFitBin *self,
                         GtkWidget   *child)
{
  g_return_if_fail (KAGED_IS_FIT_BIN (self));
  g_return_if_fail (!child || GTK_IS_WIDGET (child));
  g_return_if_fail (!child || child == self->child || gtk_widget_get_parent (child) == NULL);

  if (self->child == child)
    return;

  g_clear_pointer (&self->child, gtk_widget_unparent);
  if (child != NULL)
    {
      self->child = child;
      gtk_widget_set_parent (child, GTK_WIDGET (self));
    }

  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_CHILD]);
}
