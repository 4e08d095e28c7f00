/* kaged-window-search.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-window"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-markdown.h"
#include "kaged-store-search.h"
#include "kaged-window-private.h"

/*
 * Search (Ctrl+F): titles and message text, from the store's full-text
 * index, the matched words in bold. A result opens its conversation,
 * scrolled to the message that matched.
 */

#define MAX_RESULTS 50

static const char *
describe_author (KagedMessageRole role)
{
  switch (role)
    {
    case KAGED_MESSAGE_ROLE_OPERATOR:
      return _("You");
    case KAGED_MESSAGE_ROLE_SUMMARY:
      /* Translators: a search result found in the summary Kaged wrote of
       * earlier messages, to fit a long conversation in a model */
      return C_("search result", "Summary");
    case KAGED_MESSAGE_ROLE_AGENT:
    default:
      return _("Assistant");
    }
}

static GtkWidget *
result_row_new (KagedWindow               *self,
                const KagedStoreSearchHit *hit)
{
  /* Replies and summaries are Markdown; what the operator wrote reads as
   * they wrote it, as in its bubble. */
  g_autofree char *plain = hit->message_id > 0 && hit->role != KAGED_MESSAGE_ROLE_OPERATOR
                           ? kaged_markdown_plain (hit->text) : NULL;
  g_autofree char *markup = kaged_store_search_markup (plain != NULL ? plain : hit->text);
  GtkWidget *row = gtk_list_box_row_new ();
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
  GtkWidget *label = gtk_label_new (NULL);
  KagedSession *session = NULL;
  gint64 *session_id = g_new (gint64, 1);
  gint64 *message_id = g_new (gint64, 1);

  *session_id = hit->session_id;
  *message_id = hit->message_id;
  g_object_set_data_full (G_OBJECT (row), "kaged-session-id", session_id, g_free);
  g_object_set_data_full (G_OBJECT (row), "kaged-message-id", message_id, g_free);

  gtk_label_set_markup (GTK_LABEL (label), markup);
  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_label_set_wrap (GTK_LABEL (label), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_lines (GTK_LABEL (label), 3);
  gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_END);

  if (hit->message_id > 0 && self->session_list != NULL)
    session = kaged_session_list_lookup (self->session_list, hit->session_id);

  if (session != NULL)
    {
      const char *title = kaged_session_get_title (session);
      g_autofree char *where = NULL;
      GtkWidget *caption;

      if (title == NULL || title[0] == '\0')
        title = _("New Conversation");
      /* Translators: where a search result was found: who wrote the
       * message, and the conversation's title, e.g. "Assistant · Baking at
       * home"; the title is cut short when it does not fit */
      where = g_strdup_printf (C_("search result: author, conversation", "%s · %s"), describe_author (hit->role), title);
      caption = gtk_label_new (where);

      gtk_label_set_xalign (GTK_LABEL (caption), 0);
      gtk_label_set_ellipsize (GTK_LABEL (caption), PANGO_ELLIPSIZE_END);
      gtk_widget_add_css_class (caption, "caption");
      gtk_widget_add_css_class (caption, "dim-label");
      gtk_box_append (GTK_BOX (box), caption);
    }

  gtk_box_append (GTK_BOX (box), label);
  gtk_widget_set_margin_top (box, 6);
  gtk_widget_set_margin_bottom (box, 6);
  gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), box);

  return row;
}

static void
clear_results (KagedWindow *self)
{
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->results_view))) != NULL)
    gtk_list_box_remove (self->results_view, child);
}

static void
run_search (KagedWindow *self)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) hits = NULL;
  KagedSessionManager *manager = kaged_window_get_manager (self);
  const char *query = gtk_editable_get_text (GTK_EDITABLE (self->search_entry));
  guint n_shown = 0;

  g_free (self->searched);
  self->searched = g_strdup (query);
  clear_results (self);

  if (manager == NULL || query[0] == '\0' || !gtk_search_bar_get_search_mode (self->search_bar))
    {
      kaged_window_show_sessions_page (self);
      return;
    }

  hits = kaged_store_search (kaged_session_manager_get_store (manager), query, MAX_RESULTS, &error);
  if (hits == NULL)
    {
      kaged_window_toast (self, error->message);
      return;
    }

  for (guint i = 0; i < hits->len; i++)
    {
      const KagedStoreSearchHit *hit = g_ptr_array_index (hits, i);

      /* Conversations waiting for their Undo stay out of sight. */
      if (self->session_list != NULL && !kaged_session_list_find (self->session_list, hit->session_id, NULL))
        continue;

      gtk_list_box_append (self->results_view, result_row_new (self, hit));
      n_shown++;
    }

  gtk_stack_set_visible_child_name (self->sidebar_stack, n_shown > 0 ? "results" : "no-results");
}

static void
search_changed_cb (KagedWindow *self)
{
  /* Already run for Enter or Down, which came before the pause: the
   * results stay, with the focus they may have. */
  if (g_strcmp0 (self->searched, gtk_editable_get_text (GTK_EDITABLE (self->search_entry))) == 0 &&
      gtk_search_bar_get_search_mode (self->search_bar))
    return;

  run_search (self);
}

/* Where a search starts: in the list of conversations (or its header), or
 * in the conversation shown. */
static void
note_search_start (KagedWindow *self)
{
  GtkWidget *content = adw_leaflet_get_child_by_name (self->leaflet, "content");
  GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (self));

  if (adw_leaflet_get_folded (self->leaflet))
    self->search_from_list = g_strcmp0 (adw_leaflet_get_visible_child_name (self->leaflet), "sidebar") == 0;
  else
    self->search_from_list = focus != NULL && !gtk_widget_is_ancestor (focus, content);
}

/* Escape in the entry: back to where the search started, the list of
 * conversations or the conversation shown, which a narrow window had left
 * for the search. */
static void
return_from_search (KagedWindow *self)
{
  if (self->search_from_list)
    {
      gtk_widget_grab_focus (GTK_WIDGET (self->session_view));
      return;
    }

  adw_leaflet_navigate (self->leaflet, ADW_NAVIGATION_DIRECTION_FORWARD);
  kaged_composer_focus (self->composer);
}

static void
search_mode_cb (KagedWindow *self)
{
  gboolean returning = FALSE;

  if (!gtk_search_bar_get_search_mode (self->search_bar))
    {
      GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (self));

      /* Closed from its entry or its results, which go (the bar has
       * emptied its entry, and the results went with the words): the focus
       * would be left nowhere. The search button keeps it. */
      returning = focus == NULL || gtk_widget_get_root (focus) != GTK_ROOT (self) ||
                  gtk_widget_is_ancestor (focus, GTK_WIDGET (self->search_bar)) ||
                  gtk_widget_is_ancestor (focus, GTK_WIDGET (self->results_view));
      gtk_editable_set_text (GTK_EDITABLE (self->search_entry), "");
    }
  else if (!self->search_noted)
    {
      /* Opened by the search button, which is in the list's header. */
      self->search_from_list = TRUE;
    }
  self->search_noted = FALSE;
  run_search (self);

  /* Once the list of conversations is back in place of the results. */
  if (returning)
    return_from_search (self);
}

static void
result_activated_cb (KagedWindow   *self,
                     GtkListBoxRow *row)
{
  gint64 *session_id = g_object_get_data (G_OBJECT (row), "kaged-session-id");
  gint64 *message_id = g_object_get_data (G_OBJECT (row), "kaged-message-id");

  if (session_id == NULL)
    return;

  /* A message found opens its conversation there; a title, at the end. */
  kaged_window_show_message (self, *session_id, message_id != NULL ? *message_id : 0);
  adw_leaflet_navigate (self->leaflet, ADW_NAVIGATION_DIRECTION_FORWARD);
  kaged_composer_focus (self->composer);
}

static void
search_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);
  GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (self));

  /* Ctrl+F again in the search stays where it started. */
  if (!gtk_search_bar_get_search_mode (self->search_bar) ||
      focus == NULL || !gtk_widget_is_ancestor (focus, GTK_WIDGET (self->search_bar)))
    note_search_start (self);
  self->search_noted = !gtk_search_bar_get_search_mode (self->search_bar);
  adw_leaflet_navigate (self->leaflet, ADW_NAVIGATION_DIRECTION_BACK);
  gtk_search_bar_set_search_mode (self->search_bar, TRUE);
  gtk_widget_grab_focus (GTK_WIDGET (self->search_entry));
}

static GtkListBoxRow *
first_result (KagedWindow *self)
{
  /* Typed a moment ago: the entry tells of it only after a pause, and the
   * results are still those of what was there before. */
  if (g_strcmp0 (self->searched, gtk_editable_get_text (GTK_EDITABLE (self->search_entry))) != 0)
    run_search (self);

  if (!gtk_widget_get_mapped (GTK_WIDGET (self->results_view)))
    return NULL;

  return gtk_list_box_get_row_at_index (self->results_view, 0);
}

/* Down in the entry goes to the results, to the first one; with nothing
 * found, it is left to GTK, which moves the focus down. */
static gboolean
first_result_cb (GtkWidget *widget,
                 GVariant  *args,
                 gpointer   user_data)
{
  KagedWindow *self = KAGED_WINDOW (user_data);
  GtkListBoxRow *row = first_result (self);

  if (row == NULL)
    return FALSE;

  gtk_widget_grab_focus (GTK_WIDGET (row));
  return TRUE;
}

/* Enter in the entry opens the first result. */
static void
search_activate_cb (KagedWindow *self)
{
  GtkListBoxRow *row = first_result (self);

  if (row != NULL)
    gtk_widget_activate (GTK_WIDGET (row));
}

/* Escape among the results ends the search, as it does in its entry. */
static gboolean
results_key_pressed_cb (GtkEventControllerKey *controller,
                        guint                  keyval,
                        guint                  keycode,
                        GdkModifierType        state,
                        KagedWindow           *self)
{
  if (keyval != GDK_KEY_Escape || !gtk_search_bar_get_search_mode (self->search_bar))
    return FALSE;

  /* The focus goes back to where the search started. */
  gtk_search_bar_set_search_mode (self->search_bar, FALSE);
  return TRUE;
}

void
kaged_window_init_search (KagedWindow *self)
{
  GtkEventController *keys = gtk_event_controller_key_new ();

  g_signal_connect_object (keys, "key-pressed", G_CALLBACK (results_key_pressed_cb), self, 0);
  gtk_widget_add_controller (GTK_WIDGET (self->results_view), keys);

  /* After the entry's text, and its input method, had their say. */
  keys = gtk_shortcut_controller_new ();
  gtk_shortcut_controller_add_shortcut (GTK_SHORTCUT_CONTROLLER (keys),
                                        gtk_shortcut_new (gtk_alternative_trigger_new (gtk_keyval_trigger_new (GDK_KEY_Down, 0),
                                                                                       gtk_keyval_trigger_new (GDK_KEY_KP_Down, 0)),
                                                          gtk_callback_action_new (first_result_cb, self, NULL)));
  gtk_widget_add_controller (GTK_WIDGET (self->search_entry), keys);

  gtk_search_bar_connect_entry (self->search_bar, GTK_EDITABLE (self->search_entry));
  g_signal_connect_object (self->search_entry, "activate",
                           G_CALLBACK (search_activate_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->search_entry, "search-changed",
                           G_CALLBACK (search_changed_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->search_bar, "notify::search-mode-enabled",
                           G_CALLBACK (search_mode_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->results_view, "row-activated",
                           G_CALLBACK (result_activated_cb), self, G_CONNECT_SWAPPED);
}

void
kaged_window_search_dispose (KagedWindow *self)
{
  g_clear_handle_id (&self->search_source, g_source_remove);
  g_clear_pointer (&self->searched, g_free);
}

void
kaged_window_class_init_search (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.search", NULL, search_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_f, GDK_CONTROL_MASK,
                                       "win.search", NULL);
}
