/* kaged-list-span.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-list-span"

#include "config.h"

#include "kaged-list-span.h"

/**
 * KagedListSpan:
 *
 * A run of consecutive items of another #GListModel, for a view that
 * should not see all of a long conversation at once. It starts with the
 * last items and grows at either end on request; growing at the start
 * inserts items before the ones shown, which a #GtkListView takes as
 * items above the one it keeps in place, so nothing on screen moves.
 *
 * Changes of the model inside the span are passed on; changes before it
 * move it along; a span that reaches the end of the model takes in the
 * items appended to it.
 */
struct _KagedListSpan
{
  GObject     parent_instance;

  GListModel *model;
  guint       tail;
  guint       start;
  guint       end;
  guint       n_model; /* the model's length, as last told */
};

static void kaged_list_span_list_model_iface_init (GListModelInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedListSpan, kaged_list_span, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_LIST_MODEL,
                                                      kaged_list_span_list_model_iface_init))

enum {
  PROP_0,
  PROP_MODEL,
  PROP_TAIL,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static void
replace (KagedListSpan *self,
         guint          start,
         guint          end)
{
  guint removed = self->end - self->start;

  self->start = start;
  self->end = end;
  if (removed > 0 || end > start)
    g_list_model_items_changed (G_LIST_MODEL (self), 0, removed, end - start);
}

static void
model_items_changed_cb (KagedListSpan *self,
                        guint          position,
                        guint          removed,
                        guint          added,
                        GListModel    *model)
{
  gboolean following = self->end == self->n_model;
  guint old_n = self->n_model;
  guint view_position;
  guint view_removed;

  self->n_model = g_list_model_get_n_items (model);

  /* Everything changed: keep as many of the last items as were shown. */
  if (position == 0 && removed == old_n && old_n > 0)
    {
      guint length = MAX (self->end - self->start, self->tail);

      replace (self, self->n_model - MIN (length, self->n_model), self->n_model);
      return;
    }

  /* Before the span: it moves along. */
  if (removed == 0 ? (position < self->start ||
                      (position == self->start && self->start > 0 && self->start < self->end))
                   : position + removed <= self->start)
    {
      self->start = self->start + added - removed;
      self->end = self->end + added - removed;
      return;
    }

  /* After it, unless it follows the end. */
  if (removed == 0 ? (position > self->end || (position == self->end && !following))
                   : position >= self->end)
    return;

  view_position = position > self->start ? position - self->start : 0;
  view_removed = MIN (position + removed, self->end) - MAX (position, self->start);

  if (position + removed < self->end)
    self->end = self->end - removed + added;
  else
    self->end = position + added;
  self->start = MIN (self->start, position);

  g_list_model_items_changed (G_LIST_MODEL (self), view_position, view_removed, added);
}

static GType
kaged_list_span_get_item_type (GListModel *list)
{
  KagedListSpan *self = KAGED_LIST_SPAN (list);

  return g_list_model_get_item_type (self->model);
}

static guint
kaged_list_span_get_n_items (GListModel *list)
{
  KagedListSpan *self = KAGED_LIST_SPAN (list);

  return self->end - self->start;
}

static gpointer
kaged_list_span_get_item (GListModel *list,
                          guint       position)
{
  KagedListSpan *self = KAGED_LIST_SPAN (list);

  if (position >= self->end - self->start)
    return NULL;

  return g_list_model_get_item (self->model, self->start + position);
}

static void
kaged_list_span_list_model_iface_init (GListModelInterface *iface)
{
  iface->get_item_type = kaged_list_span_get_item_type;
  iface->get_n_items = kaged_list_span_get_n_items;
  iface->get_item = kaged_list_span_get_item;
}

static void
kaged_list_span_constructed (GObject *object)
{
  KagedListSpan *self = (KagedListSpan *)object;

  G_OBJECT_CLASS (kaged_list_span_parent_class)->constructed (object);

  g_assert (G_IS_LIST_MODEL (self->model));

  self->n_model = g_list_model_get_n_items (self->model);
  self->end = self->n_model;
  self->start = self->n_model - MIN (self->tail, self->n_model);
  g_signal_connect_object (self->model, "items-changed",
                           G_CALLBACK (model_items_changed_cb), self, G_CONNECT_SWAPPED);
}

static void
kaged_list_span_dispose (GObject *object)
{
  KagedListSpan *self = (KagedListSpan *)object;

  g_clear_object (&self->model);

  G_OBJECT_CLASS (kaged_list_span_parent_class)->dispose (object);
}

static void
kaged_list_span_get_property (GObject    *object,
                              guint       prop_id,
                              GValue     *value,
                              GParamSpec *pspec)
{
  KagedListSpan *self = KAGED_LIST_SPAN (object);

  switch (prop_id)
    {
    case PROP_MODEL:
      g_value_set_object (value, self->model);
      break;

    case PROP_TAIL:
      g_value_set_uint (value, self->tail);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_list_span_set_property (GObject      *object,
                              guint         prop_id,
                              const GValue *value,
                              GParamSpec   *pspec)
{
  KagedListSpan *self = KAGED_LIST_SPAN (object);

  switch (prop_id)
    {
    case PROP_MODEL:
      self->model = g_value_dup_object (value);
      break;

    case PROP_TAIL:
      self->tail = g_value_get_uint (value);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_list_span_class_init (KagedListSpanClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->constructed = kaged_list_span_constructed;
  object_class->dispose = kaged_list_span_dispose;
  object_class->get_property = kaged_list_span_get_property;
  object_class->set_property = kaged_list_span_set_property;

  /**
   * KagedListSpan:model:
   *
   * The model whose items the span shows.
   */
  properties [PROP_MODEL] =
    g_param_spec_object ("model", NULL, NULL,
                         G_TYPE_LIST_MODEL,
                         (G_PARAM_READWRITE |
                          G_PARAM_CONSTRUCT_ONLY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedListSpan:tail:
   *
   * How many of the last items the span shows at first.
   */
  properties [PROP_TAIL] =
    g_param_spec_uint ("tail", NULL, NULL,
                       0, G_MAXUINT, 0,
                       (G_PARAM_READWRITE |
                        G_PARAM_CONSTRUCT_ONLY |
                        G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_list_span_init (KagedListSpan *self)
{
}

/**
 * kaged_list_span_new:
 * @model: the model to show a span of
 * @tail: how many of its last items to show at first
 *
 * Returns: (transfer full): a new span of the last @tail items of @model
 */
KagedListSpan *
kaged_list_span_new (GListModel *model,
                     guint       tail)
{
  g_return_val_if_fail (G_IS_LIST_MODEL (model), NULL);

  return g_object_new (KAGED_TYPE_LIST_SPAN,
                       "model", model,
                       "tail", tail,
                       NULL);
}

/**
 * kaged_list_span_get_model:
 *
 * Returns: (transfer none): the model the span shows part of
 */
GListModel *
kaged_list_span_get_model (KagedListSpan *self)
{
  g_return_val_if_fail (KAGED_IS_LIST_SPAN (self), NULL);

  return self->model;
}

/**
 * kaged_list_span_get_start:
 *
 * Returns: the position in the model of the span's first item
 */
guint
kaged_list_span_get_start (KagedListSpan *self)
{
  g_return_val_if_fail (KAGED_IS_LIST_SPAN (self), 0);

  return self->start;
}

/**
 * kaged_list_span_get_end:
 *
 * Returns: the position in the model after the span's last item
 */
guint
kaged_list_span_get_end (KagedListSpan *self)
{
  g_return_val_if_fail (KAGED_IS_LIST_SPAN (self), 0);

  return self->end;
}

gboolean
kaged_list_span_reaches_start (KagedListSpan *self)
{
  g_return_val_if_fail (KAGED_IS_LIST_SPAN (self), TRUE);

  return self->start == 0;
}

gboolean
kaged_list_span_reaches_end (KagedListSpan *self)
{
  g_return_val_if_fail (KAGED_IS_LIST_SPAN (self), TRUE);

  return self->end == self->n_model;
}

/**
 * kaged_list_span_grow_start:
 * @n: how many items to add at most
 *
 * Adds up to @n of the items before the span at its start.
 *
 * Returns: how many were added
 */
guint
kaged_list_span_grow_start (KagedListSpan *self,
                            guint          n)
{
  g_return_val_if_fail (KAGED_IS_LIST_SPAN (self), 0);

  n = MIN (n, self->start);
  if (n == 0)
    return 0;

  self->start -= n;
  g_list_model_items_changed (G_LIST_MODEL (self), 0, 0, n);

  return n;
}

/**
 * kaged_list_span_grow_end:
 * @n: how many items to add at most
 *
 * Adds up to @n of the items after the span at its end.
 *
 * Returns: how many were added
 */
guint
kaged_list_span_grow_end (KagedListSpan *self,
                          guint          n)
{
  guint length;

  g_return_val_if_fail (KAGED_IS_LIST_SPAN (self), 0);

  n = MIN (n, self->n_model - self->end);
  if (n == 0)
    return 0;

  length = self->end - self->start;
  self->end += n;
  g_list_model_items_changed (G_LIST_MODEL (self), length, 0, n);

  return n;
}

/**
 * kaged_list_span_shrink_start:
 * @n: how many items to take away at most
 *
 * Takes up to @n items away from the span's start.
 *
 * Returns: how many were taken away
 */
guint
kaged_list_span_shrink_start (KagedListSpan *self,
                              guint          n)
{
  g_return_val_if_fail (KAGED_IS_LIST_SPAN (self), 0);

  n = MIN (n, self->end - self->start);
  if (n == 0)
    return 0;

  self->start += n;
  g_list_model_items_changed (G_LIST_MODEL (self), 0, n, 0);

  return n;
}

/**
 * kaged_list_span_shrink_end:
 * @n: how many items to take away at most
 *
 * Takes up to @n items away from the span's end; it no longer follows
 * the end of the model then.
 *
 * Returns: how many were taken away
 */
guint
kaged_list_span_shrink_end (KagedListSpan *self,
                            guint          n)
{
  g_return_val_if_fail (KAGED_IS_LIST_SPAN (self), 0);

  n = MIN (n, self->end - self->start);
  if (n == 0)
    return 0;

  self->end -= n;
  g_list_model_items_changed (G_LIST_MODEL (self), self->end - self->start, n, 0);

  return n;
}

/**
 * kaged_list_span_show_tail:
 *
 * Shows the last items of the model again, as many as at first, unless
 * the span reaches the end already.
 */
void
kaged_list_span_show_tail (KagedListSpan *self)
{
  g_return_if_fail (KAGED_IS_LIST_SPAN (self));

  if (self->end == self->n_model)
    return;

  replace (self, self->n_model - MIN (self->tail, self->n_model), self->n_model);
}

/**
 * kaged_list_span_show_around:
 * @position: a position in the model
 * @before: how many items before it to show
 * @after: how many items after it to show
 *
 * Makes the span start @before items above @position (fewer at the start
 * of the model), and hold up to @after items after it: the span moves
 * even when it holds @position already, so that the item shown first is
 * the one above @position.
 *
 * Returns: where @position stands in the span
 */
guint
kaged_list_span_show_around (KagedListSpan *self,
                             guint          position,
                             guint          before,
                             guint          after)
{
  guint start;
  guint end;

  g_return_val_if_fail (KAGED_IS_LIST_SPAN (self), 0);

  position = MIN (position, self->n_model > 0 ? self->n_model - 1 : 0);
  start = position - MIN (before, position);
  end = MIN (self->n_model, position + 1 + after);
  replace (self, start, end);

  return position - start;
}
