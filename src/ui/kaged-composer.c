/* kaged-composer.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-composer"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-composer.h"

/**
 * KagedComposer:
 *
 * The message composer at the foot of a conversation.
 */
struct _KagedComposer
{
  GtkWidget          parent_instance;

  char              *disabled_reason;
  guint              running : 1;

  /* Template children */
  GtkLabel          *reason_label;
  GtkLabel          *placeholder_label;
  GtkScrolledWindow *scroller;
  GtkTextView       *text_view;
  GtkStack          *button_stack;
  GtkButton         *send_button;
  GtkButton         *stop_button;
};

G_DEFINE_FINAL_TYPE (KagedComposer, kaged_composer, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_RUNNING,
  PROP_DISABLED_REASON,
  N_PROPS
};

enum {
  SEND,
  STOP,
  CHANGED,
  N_SIGNALS
};

static GParamSpec *properties [N_PROPS];
static guint signals [N_SIGNALS];

static gboolean
has_text (KagedComposer *self)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (self->text_view);
  GtkTextIter iter;

  gtk_text_buffer_get_start_iter (buffer, &iter);
  do
    {
      if (!g_unichar_isspace (gtk_text_iter_get_char (&iter)) && !gtk_text_iter_is_end (&iter))
        return TRUE;
    }
  while (gtk_text_iter_forward_char (&iter));

  return FALSE;
}

static void
update_state (KagedComposer *self)
{
  gboolean available = self->disabled_reason == NULL;

  gtk_stack_set_visible_child_name (self->button_stack, self->running ? "stop" : "send");
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "composer.send", available && has_text (self));
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "composer.stop", self->running);
  gtk_text_view_set_editable (self->text_view, available);
  gtk_label_set_label (self->reason_label, self->disabled_reason);
  gtk_widget_set_visible (GTK_WIDGET (self->placeholder_label),
                          gtk_text_buffer_get_char_count (gtk_text_view_get_buffer (self->text_view)) == 0);
  gtk_widget_set_visible (GTK_WIDGET (self->reason_label), !available);

  if (available)
    gtk_accessible_reset_property (GTK_ACCESSIBLE (self->text_view),
                                   GTK_ACCESSIBLE_PROPERTY_DESCRIPTION);
  else
    gtk_accessible_update_property (GTK_ACCESSIBLE (self->text_view),
                                    GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, self->disabled_reason,
                                    -1);
}

static void
buffer_changed_cb (KagedComposer *self)
{
  update_state (self);
  g_signal_emit (self, signals [CHANGED], 0);
}

static gboolean
key_pressed_cb (GtkEventControllerKey *controller,
                guint                  keyval,
                guint                  keycode,
                GdkModifierType        state,
                KagedComposer         *self)
{
  state &= gtk_accelerator_get_default_mod_mask ();

  switch (keyval)
    {
    case GDK_KEY_Return:
    case GDK_KEY_KP_Enter:
    case GDK_KEY_ISO_Enter:
      if (state & (GDK_SHIFT_MASK | GDK_CONTROL_MASK | GDK_ALT_MASK))
        return FALSE;
      kaged_composer_send (self);
      return TRUE;

    case GDK_KEY_Escape:
      if (!self->running || state != 0)
        return FALSE;
      kaged_composer_stop (self);
      return TRUE;

    default:
      return FALSE;
    }
}

static void
send_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  kaged_composer_send (KAGED_COMPOSER (widget));
}

static void
stop_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  kaged_composer_stop (KAGED_COMPOSER (widget));
}

static gboolean
kaged_composer_grab_focus (GtkWidget *widget)
{
  return gtk_widget_grab_focus (GTK_WIDGET (KAGED_COMPOSER (widget)->text_view));
}

/* Only the controls inside take the focus. GtkWidget would stop on the
 * composer itself when Shift+Tab leaves its text view, and focusing the
 * composer focuses that text view again: Shift+Tab could not leave it. */
static gboolean
kaged_composer_focus_children (GtkWidget        *widget,
                               GtkDirectionType  direction)
{
  GtkWidget *child = gtk_widget_get_first_child (widget);

  return child != NULL && gtk_widget_child_focus (child, direction);
}

static void
kaged_composer_dispose (GObject *object)
{
  gtk_widget_dispose_template (GTK_WIDGET (object), KAGED_TYPE_COMPOSER);
  {
    GtkWidget *child;

    while ((child = gtk_widget_get_first_child (GTK_WIDGET (object))) != NULL)
      gtk_widget_unparent (child);
  }

  G_OBJECT_CLASS (kaged_composer_parent_class)->dispose (object);
}

static void
kaged_composer_finalize (GObject *object)
{
  KagedComposer *self = KAGED_COMPOSER (object);

  g_clear_pointer (&self->disabled_reason, g_free);

  G_OBJECT_CLASS (kaged_composer_parent_class)->finalize (object);
}

static void
kaged_composer_get_property (GObject    *object,
                             guint       prop_id,
                             GValue     *value,
                             GParamSpec *pspec)
{
  KagedComposer *self = KAGED_COMPOSER (object);

  switch (prop_id)
    {
    case PROP_RUNNING:
      g_value_set_boolean (value, self->running);
      break;

    case PROP_DISABLED_REASON:
      g_value_set_string (value, self->disabled_reason);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_composer_set_property (GObject      *object,
                             guint         prop_id,
                             const GValue *value,
                             GParamSpec   *pspec)
{
  KagedComposer *self = KAGED_COMPOSER (object);

  switch (prop_id)
    {
    case PROP_RUNNING:
      kaged_composer_set_running (self, g_value_get_boolean (value));
      break;

    case PROP_DISABLED_REASON:
      kaged_composer_set_disabled_reason (self, g_value_get_string (value));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_composer_class_init (KagedComposerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_composer_dispose;
  object_class->finalize = kaged_composer_finalize;
  object_class->get_property = kaged_composer_get_property;
  object_class->set_property = kaged_composer_set_property;

  widget_class->grab_focus = kaged_composer_grab_focus;
  widget_class->focus = kaged_composer_focus_children;

  properties [PROP_RUNNING] =
    g_param_spec_boolean ("running", NULL, NULL,
                          FALSE,
                          (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  properties [PROP_DISABLED_REASON] =
    g_param_spec_string ("disabled-reason", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);

  signals [SEND] =
    g_signal_new ("send",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, G_TYPE_STRING);

  signals [STOP] =
    g_signal_new ("stop",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 0);

  signals [CHANGED] =
    g_signal_new ("changed",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 0);

  gtk_widget_class_set_template_from_resource (widget_class, APPLICATION_PATH "/kaged-composer.ui");
  gtk_widget_class_bind_template_child (widget_class, KagedComposer, reason_label);
  gtk_widget_class_bind_template_child (widget_class, KagedComposer, placeholder_label);
  gtk_widget_class_bind_template_child (widget_class, KagedComposer, scroller);
  gtk_widget_class_bind_template_child (widget_class, KagedComposer, text_view);
  gtk_widget_class_bind_template_child (widget_class, KagedComposer, button_stack);
  gtk_widget_class_bind_template_child (widget_class, KagedComposer, send_button);
  gtk_widget_class_bind_template_child (widget_class, KagedComposer, stop_button);

  gtk_widget_class_install_action (widget_class, "composer.send", NULL, send_action);
  gtk_widget_class_install_action (widget_class, "composer.stop", NULL, stop_action);

  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "composer");
}

static void
kaged_composer_init (KagedComposer *self)
{
  GtkEventController *keys;

  gtk_widget_init_template (GTK_WIDGET (self));

  keys = gtk_event_controller_key_new ();
  gtk_event_controller_set_propagation_phase (keys, GTK_PHASE_CAPTURE);
  g_signal_connect (keys, "key-pressed", G_CALLBACK (key_pressed_cb), self);
  gtk_widget_add_controller (GTK_WIDGET (self->text_view), keys);

  g_signal_connect_object (gtk_text_view_get_buffer (self->text_view), "changed",
                           G_CALLBACK (buffer_changed_cb), self, G_CONNECT_SWAPPED);

  update_state (self);
}

GtkWidget *
kaged_composer_new (void)
{
  return g_object_new (KAGED_TYPE_COMPOSER, NULL);
}

/**
 * kaged_composer_dup_text:
 *
 * Returns: (transfer full): the text written so far
 */
char *
kaged_composer_dup_text (KagedComposer *self)
{
  GtkTextBuffer *buffer;
  GtkTextIter start, end;

  g_return_val_if_fail (KAGED_IS_COMPOSER (self), NULL);

  buffer = gtk_text_view_get_buffer (self->text_view);
  gtk_text_buffer_get_bounds (buffer, &start, &end);

  return gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
}

void
kaged_composer_set_text (KagedComposer *self,
                         const char    *text)
{
  g_return_if_fail (KAGED_IS_COMPOSER (self));

  gtk_text_buffer_set_text (gtk_text_view_get_buffer (self->text_view),
                            text != NULL ? text : "", -1);
}

/**
 * kaged_composer_set_draft:
 * @text: (nullable): what was written in the conversation now shown
 *
 * Puts back the text of another conversation, with the cursor at its end.
 * Undo goes back through what is typed from here, never into the text of
 * the conversation shown before.
 */
void
kaged_composer_set_draft (KagedComposer *self,
                          const char    *text)
{
  GtkTextBuffer *buffer;
  GtkTextIter end;

  g_return_if_fail (KAGED_IS_COMPOSER (self));

  buffer = gtk_text_view_get_buffer (self->text_view);
  gtk_text_buffer_begin_irreversible_action (buffer);
  gtk_text_buffer_set_text (buffer, text != NULL ? text : "", -1);
  gtk_text_buffer_end_irreversible_action (buffer);
  gtk_text_buffer_get_end_iter (buffer, &end);
  gtk_text_buffer_place_cursor (buffer, &end);
}

/**
 * kaged_composer_clear:
 *
 * Empties the composer, once its text was posted.
 */
void
kaged_composer_clear (KagedComposer *self)
{
  g_return_if_fail (KAGED_IS_COMPOSER (self));

  kaged_composer_set_text (self, "");
}

gboolean
kaged_composer_get_running (KagedComposer *self)
{
  g_return_val_if_fail (KAGED_IS_COMPOSER (self), FALSE);

  return self->running;
}

/**
 * kaged_composer_set_running:
 *
 * While a reply streams the composer offers Stop instead of Send; a
 * message sent meanwhile waits its turn.
 */
void
kaged_composer_set_running (KagedComposer *self,
                            gboolean       running)
{
  g_return_if_fail (KAGED_IS_COMPOSER (self));

  running = !!running;
  if (self->running == running)
    return;

  self->running = running;
  update_state (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_RUNNING]);
}

const char *
kaged_composer_get_disabled_reason (KagedComposer *self)
{
  g_return_val_if_fail (KAGED_IS_COMPOSER (self), NULL);

  return self->disabled_reason;
}

/**
 * kaged_composer_set_disabled_reason:
 * @reason: (nullable): why nothing can be sent now, or %NULL when it can
 *
 * Disables sending and says why, under the text.
 */
void
kaged_composer_set_disabled_reason (KagedComposer *self,
                                    const char    *reason)
{
  g_return_if_fail (KAGED_IS_COMPOSER (self));

  if (g_strcmp0 (self->disabled_reason, reason) == 0)
    return;

  g_free (self->disabled_reason);
  self->disabled_reason = g_strdup (reason);
  update_state (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_DISABLED_REASON]);
}

/**
 * kaged_composer_set_placeholder:
 * @placeholder: (nullable): what the empty composer says, or %NULL for
 *   its usual "Write a message…"
 *
 * Says something of what sending does now, in the empty composer.
 */
void
kaged_composer_set_placeholder (KagedComposer *self,
                                const char    *placeholder)
{
  g_return_if_fail (KAGED_IS_COMPOSER (self));

  gtk_label_set_label (self->placeholder_label,
                       placeholder != NULL ? placeholder : _("Write a message…"));
}

/**
 * kaged_composer_send:
 *
 * Emits ::send with the text, unless it is empty or sending is disabled.
 */
void
kaged_composer_send (KagedComposer *self)
{
  g_autofree char *text = NULL;

  g_return_if_fail (KAGED_IS_COMPOSER (self));

  if (self->disabled_reason != NULL || !has_text (self))
    return;

  text = kaged_composer_dup_text (self);
  g_signal_emit (self, signals [SEND], 0, text);
}

void
kaged_composer_stop (KagedComposer *self)
{
  g_return_if_fail (KAGED_IS_COMPOSER (self));

  if (self->running)
    g_signal_emit (self, signals [STOP], 0);
}

void
kaged_composer_focus (KagedComposer *self)
{
  g_return_if_fail (KAGED_IS_COMPOSER (self));

  gtk_widget_grab_focus (GTK_WIDGET (self->text_view));
}
