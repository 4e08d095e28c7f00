/* kaged-later-messages.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-later-messages"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-later-messages.h"
#include "kaged-markdown-view.h"
#include "kaged-message.h"
#include "kaged-message-row.h"

/**
 * KagedLaterMessages:
 *
 * Under an earlier version of a reply, the turns that followed it while it
 * was current: a regeneration or an edit took them out of the conversation
 * with it, and nothing is deleted. Folded, it says how many there are;
 * unfolded, it shows each one, read-only — its author, its text (a
 * reply's as Markdown) and, for a reply that did not complete, why.
 *
 * The messages are shown when first unfolded, at most
 * %KAGED_LATER_MESSAGES_MAX_SHOWN of them.
 */
struct _KagedLaterMessages
{
  GtkWidget parent_instance;

  GPtrArray *messages;
  guint n_messages;
  guint built : 1;

  /* Template children */
  GtkExpander *expander;
  GtkBox *list;
};

G_DEFINE_FINAL_TYPE (KagedLaterMessages, kaged_later_messages, GTK_TYPE_WIDGET)

static const char *
describe_author (KagedMessage *message)
{
  switch (kaged_message_get_role (message))
    {
    case KAGED_MESSAGE_ROLE_OPERATOR:
      return _("You");
    case KAGED_MESSAGE_ROLE_SUMMARY:
      return _("Summary of earlier messages");
    case KAGED_MESSAGE_ROLE_AGENT:
    default:
      return _("Assistant");
    }
}

/* Why a reply has less to read than a complete one, or %NULL. */
static char *
describe_outcome (KagedMessage *message)
{
  if (kaged_message_get_role (message) != KAGED_MESSAGE_ROLE_AGENT)
    return NULL;

  switch (kaged_message_get_status (message))
    {
    case KAGED_MESSAGE_STATUS_FAILED:
    case KAGED_MESSAGE_STATUS_INTERRUPTED:
      return kaged_message_row_describe_failure (message, FALSE);
    case KAGED_MESSAGE_STATUS_CANCELLED:
      return g_strdup (_("Stopped"));
    case KAGED_MESSAGE_STATUS_STREAMING:
    case KAGED_MESSAGE_STATUS_NONE:
    case KAGED_MESSAGE_STATUS_COMPLETE:
    default:
      return NULL;
    }
}

static GtkWidget *
message_new (KagedMessage *message)
{
  const char *content = kaged_message_get_content (message);
  const char *author = describe_author (message);
  g_autofree char *outcome = describe_outcome (message);
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 3);
  GtkWidget *label = gtk_label_new (author);

  gtk_widget_add_css_class (box, "kaged-later-message");
  gtk_widget_add_css_class (label, "caption-heading");
  gtk_widget_add_css_class (label, "dim-label");
  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_box_append (GTK_BOX (box), label);

  if (content != NULL && content[0] != '\0')
    {
      GtkWidget *text;

      if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_OPERATOR)
        {
          text = gtk_label_new (content);
          gtk_label_set_wrap (GTK_LABEL (text), TRUE);
          gtk_label_set_wrap_mode (GTK_LABEL (text), PANGO_WRAP_WORD_CHAR);
          gtk_label_set_selectable (GTK_LABEL (text), TRUE);
          gtk_label_set_xalign (GTK_LABEL (text), 0);
        }
      else
        {
          text = kaged_markdown_view_new ();
          kaged_markdown_view_set_text (KAGED_MARKDOWN_VIEW (text), content);
        }
      gtk_box_append (GTK_BOX (box), text);
    }

  if (outcome != NULL)
    {
      GtkWidget *words = gtk_label_new (outcome);

      gtk_label_set_wrap (GTK_LABEL (words), TRUE);
      gtk_label_set_wrap_mode (GTK_LABEL (words), PANGO_WRAP_WORD_CHAR);
      gtk_label_set_xalign (GTK_LABEL (words), 0);
      gtk_widget_add_css_class (words, "dim-label");
      gtk_box_append (GTK_BOX (box), words);
    }

  /* As a message row is: named by its author, described by its text. */
  gtk_accessible_update_property (GTK_ACCESSIBLE (box),
                                  GTK_ACCESSIBLE_PROPERTY_LABEL, author,
                                  GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                  content != NULL && content[0] != '\0' ? content
                                                                        : (outcome != NULL ? outcome : ""),
                                  -1);

  return box;
}

static void
clear_list (KagedLaterMessages *self)
{
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->list))) != NULL)
    gtk_box_remove (self->list, child);
  self->built = FALSE;
}

static void
build_list (KagedLaterMessages *self)
{
  guint n = self->messages != NULL ? MIN (self->messages->len, KAGED_LATER_MESSAGES_MAX_SHOWN) : 0;

  if (self->built)
    return;

  for (guint i = 0; i < n; i++)
    gtk_box_append (self->list, message_new (g_ptr_array_index (self->messages, i)));

  if (self->n_messages > n)
    {
      g_autofree char *more = NULL;
      GtkWidget *label;

      /* Translators: %u is a number of messages not shown, after a hundred that are */
      more = g_strdup_printf (ngettext ("And %u more message",
                                        "And %u more messages", self->n_messages - n),
                              self->n_messages - n);
      label = gtk_label_new (more);
      gtk_label_set_xalign (GTK_LABEL (label), 0);
      gtk_widget_add_css_class (label, "dim-label");
      gtk_box_append (self->list, label);
    }

  self->built = TRUE;
}

static void
expanded_cb (KagedLaterMessages *self)
{
  if (gtk_expander_get_expanded (self->expander))
    build_list (self);
}

/**
 * kaged_later_messages_set_messages:
 * @messages: (nullable) (element-type KagedMessage): the first messages
 *   that followed, in conversation order
 * @n_messages: how many followed in all, at least as many as @messages
 *
 * Shows @messages, folded; with none, the widget hides.
 */
void
kaged_later_messages_set_messages (KagedLaterMessages *self,
                                   GPtrArray          *messages,
                                   guint               n_messages)
{
  guint n;

  g_return_if_fail (KAGED_IS_LATER_MESSAGES (self));

  if (messages == self->messages && n_messages == self->n_messages)
    return;

  if (messages != NULL)
    g_ptr_array_ref (messages);
  g_clear_pointer (&self->messages, g_ptr_array_unref);
  self->messages = messages;
  self->n_messages = messages != NULL ? MAX (n_messages, messages->len) : 0;

  clear_list (self);
  gtk_expander_set_expanded (self->expander, FALSE);

  n = kaged_later_messages_get_n_messages (self);
  gtk_widget_set_visible (GTK_WIDGET (self), n > 0);
  if (n > 0)
    {
      /* Translators: under an earlier version of a reply, or an earlier
       * text of an edited message; %u is how many messages came after it
       * before it was regenerated or edited */
      g_autofree char *label = g_strdup_printf (ngettext ("Followed by %u message",
                                                          "Followed by %u messages", n), n);

      gtk_expander_set_label (self->expander, label);
      gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
    }
}

guint
kaged_later_messages_get_n_messages (KagedLaterMessages *self)
{
  g_return_val_if_fail (KAGED_IS_LATER_MESSAGES (self), 0);

  return self->n_messages;
}

gboolean
kaged_later_messages_get_expanded (KagedLaterMessages *self)
{
  g_return_val_if_fail (KAGED_IS_LATER_MESSAGES (self), FALSE);

  return gtk_expander_get_expanded (self->expander);
}

void
kaged_later_messages_set_expanded (KagedLaterMessages *self,
                                   gboolean            expanded)
{
  g_return_if_fail (KAGED_IS_LATER_MESSAGES (self));

  gtk_expander_set_expanded (self->expander, expanded);
}

static void
kaged_later_messages_dispose (GObject *object)
{
  KagedLaterMessages *self = KAGED_LATER_MESSAGES (object);

  gtk_widget_dispose_template (GTK_WIDGET (self), KAGED_TYPE_LATER_MESSAGES);
  g_clear_pointer (&self->messages, g_ptr_array_unref);

  G_OBJECT_CLASS (kaged_later_messages_parent_class)->dispose (object);
}

static void
kaged_later_messages_class_init (KagedLaterMessagesClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_later_messages_dispose;

  gtk_widget_class_set_css_name (widget_class, "latermessages");
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_GROUP);

  gtk_widget_class_set_template_from_resource (widget_class, APPLICATION_PATH "/kaged-later-messages.ui");
  gtk_widget_class_bind_template_child (widget_class, KagedLaterMessages, expander);
  gtk_widget_class_bind_template_child (widget_class, KagedLaterMessages, list);
  gtk_widget_class_bind_template_callback (widget_class, expanded_cb);
}

static void
kaged_later_messages_init (KagedLaterMessages *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
}

GtkWidget *
kaged_later_messages_new (void)
{
  return g_object_new (KAGED_TYPE_LATER_MESSAGES, NULL);
}
