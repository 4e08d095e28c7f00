/* kaged-window-messages.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-window"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-conversation.h"
#include "kaged-core-settings.h"
#include "kaged-later-messages.h"
#include "kaged-message-row.h"
#include "kaged-window-private.h"

/**
 * kaged_window_open_conversation:
 *
 * Returns: (transfer full) (nullable): the current messages of
 *   @session_id, kept in step with the engine
 */
GListModel *
kaged_window_open_conversation (KagedWindow *self,
                                gint64       session_id)
{
  g_autoptr(GError) error = NULL;
  KagedConversation *conversation;

  conversation = kaged_conversation_new (kaged_window_get_manager (self), session_id, &error);
  if (conversation == NULL)
    kaged_window_toast (self, error->message);

  return G_LIST_MODEL (conversation);
}

/* ---------------------------------------------------------------------------
 * The part of a long conversation on screen: its last messages at first,
 * older ones added above as the user scrolls up (the list view keeps the
 * message it shows in place), later ones below after a search result
 * showed an earlier part.
 * ------------------------------------------------------------------------- */

/* Enough to fill a tall window; each is a row built and laid out. */
#define MESSAGES_SHOWN_AT_FIRST 20
#define MESSAGES_ADDED_AT_ONCE 15
/* At most this many at once: those far below or above what is seen go
 * (GTK 4.8's list keeps rows for 200 items around what it shows). */
#define MESSAGES_KEPT 120
/* Messages shown above a search result, for context. */
#define MESSAGES_BEFORE_RESULT 2

KagedListSpan *
kaged_window_span_conversation (KagedWindow *self,
                                GListModel  *conversation)
{
  g_clear_handle_id (&self->grow_source, g_source_remove);

  return kaged_list_span_new (conversation, MESSAGES_SHOWN_AT_FIRST);
}

static gboolean
grow_cb (gpointer user_data)
{
  KagedWindow *self = user_data;
  GtkAdjustment *adjustment = gtk_scrolled_window_get_vadjustment (self->scroller);
  double value = gtk_adjustment_get_value (adjustment);
  double page = gtk_adjustment_get_page_size (adjustment);
  double upper = gtk_adjustment_get_upper (adjustment);

  self->grow_source = 0;

  if (self->span == NULL || page <= 0)
    return G_SOURCE_REMOVE;

  /* Within a screen of either end of what is shown; what is furthest
   * from it goes. */
  if (value < page)
    {
      kaged_list_span_grow_start (self->span, MESSAGES_ADDED_AT_ONCE);
      if (g_list_model_get_n_items (G_LIST_MODEL (self->span)) > MESSAGES_KEPT)
        kaged_list_span_shrink_end (self->span,
                                    g_list_model_get_n_items (G_LIST_MODEL (self->span)) - MESSAGES_KEPT);
    }
  else if (value + 2 * page > upper)
    {
      kaged_list_span_grow_end (self->span, MESSAGES_ADDED_AT_ONCE);
      if (g_list_model_get_n_items (G_LIST_MODEL (self->span)) > MESSAGES_KEPT)
        kaged_list_span_shrink_start (self->span,
                                      g_list_model_get_n_items (G_LIST_MODEL (self->span)) - MESSAGES_KEPT);
    }

  return G_SOURCE_REMOVE;
}

/**
 * kaged_window_messages_scrolled:
 *
 * Adds the messages next to those shown when the view comes near the
 * first or the last of them; after the next layout, so that the list has
 * the rows it shows.
 */
void
kaged_window_messages_scrolled (KagedWindow *self)
{
  GtkAdjustment *adjustment = gtk_scrolled_window_get_vadjustment (self->scroller);
  double value = gtk_adjustment_get_value (adjustment);
  double page = gtk_adjustment_get_page_size (adjustment);
  double upper = gtk_adjustment_get_upper (adjustment);

  if (self->span == NULL || self->grow_source != 0 || page <= 0)
    return;

  if ((value < page && !kaged_list_span_reaches_start (self->span)) ||
      (value + 2 * page > upper && !kaged_list_span_reaches_end (self->span)))
    self->grow_source = g_idle_add_full (GDK_PRIORITY_REDRAW + 10, grow_cb, self, NULL);
}

static gboolean
update_jump_cb (gpointer user_data)
{
  KagedWindow *self = user_data;

  self->jump_source = 0;
  kaged_window_update_jump (self);

  return G_SOURCE_REMOVE;
}

/* How long the message a search result opened at stays marked. */
#define FOUND_MARK_MS 2000

typedef void (*RowFunc) (KagedWindow     *self,
                         KagedMessageRow *row);

/* Calls @func on each message row the list has made. Rows bound later are
 * set up by message_bind_cb(). */
static void
foreach_row (KagedWindow *self,
             RowFunc      func)
{
  for (GtkWidget *item = gtk_widget_get_first_child (GTK_WIDGET (self->message_view)); item != NULL;
       item = gtk_widget_get_next_sibling (item))
    {
      GtkWidget *row = gtk_widget_get_first_child (item);

      if (KAGED_IS_MESSAGE_ROW (row))
        func (self, KAGED_MESSAGE_ROW (row));
    }
}

static void
set_found_class (KagedWindow     *self,
                 KagedMessageRow *row)
{
  KagedMessage *message = kaged_message_row_get_message (row);

  if (self->found_id > 0 && message != NULL && kaged_message_get_id (message) == self->found_id)
    gtk_widget_add_css_class (GTK_WIDGET (row), "found");
  else
    gtk_widget_remove_css_class (GTK_WIDGET (row), "found");
}

static gboolean
found_mark_done_cb (gpointer user_data)
{
  KagedWindow *self = user_data;

  self->found_source = 0;
  self->found_id = 0;
  foreach_row (self, set_found_class);

  return G_SOURCE_REMOVE;
}

/* Marks the message @message_id (0 for none) for a moment, where the eye
 * finds it among the messages around. */
static void
mark_found (KagedWindow *self,
            gint64       message_id)
{
  g_clear_handle_id (&self->found_source, g_source_remove);
  self->found_id = message_id;
  if (message_id > 0)
    self->found_source = g_timeout_add_full (G_PRIORITY_DEFAULT, FOUND_MARK_MS, found_mark_done_cb, self, NULL);
  foreach_row (self, set_found_class);
}

/**
 * kaged_window_show_message:
 *
 * Shows @session_id scrolled to its message @message_id, with a few of
 * the messages before it above.
 */
void
kaged_window_show_message (KagedWindow *self,
                           gint64       session_id,
                           gint64       message_id)
{
  g_autoptr(GError) error = NULL;
  GtkAdjustment *adjustment = gtk_scrolled_window_get_vadjustment (self->scroller);
  guint position;

  kaged_window_show_session (self, session_id);

  if (message_id <= 0 || self->span == NULL || !KAGED_IS_CONVERSATION (self->conversation))
    return;

  if (!kaged_conversation_find_position (KAGED_CONVERSATION (self->conversation), message_id,
                                         &position, &error))
    {
      kaged_window_toast (self, error->message);
      return;
    }

  /* The shown part starts just above the message, at the top of the view;
   * what is above comes as the user scrolls up. */
  kaged_list_span_show_around (self->span, position, MESSAGES_BEFORE_RESULT,
                               MESSAGES_SHOWN_AT_FIRST);
  mark_found (self, message_id);
  self->follow_end = FALSE;
  g_clear_handle_id (&self->scroll_source, g_source_remove);
  gtk_adjustment_set_value (adjustment, 0);
  gtk_revealer_set_reveal_child (self->jump_revealer, TRUE);
  /* Once laid out, the end may be in view. */
  g_clear_handle_id (&self->jump_source, g_source_remove);
  self->jump_source = g_idle_add_full (GDK_PRIORITY_REDRAW + 10, update_jump_cb, self, NULL);
}

void
kaged_window_messages_dispose (KagedWindow *self)
{
  g_clear_handle_id (&self->grow_source, g_source_remove);
  g_clear_handle_id (&self->jump_source, g_source_remove);
  mark_found (self, 0);
}

/* ---------------------------------------------------------------------------
 * Operations
 * ------------------------------------------------------------------------- */

/**
 * kaged_window_post:
 *
 * Posts @content to @session_id as the operator.
 *
 * Returns: (transfer full): the receipt, or %NULL with @error set
 */
KagedReceipt *
kaged_window_post (KagedWindow  *self,
                   gint64        session_id,
                   const char   *content,
                   GError      **error)
{
  return kaged_core_post (self->core, session_id, content, error);
}

/**
 * kaged_window_stop:
 *
 * Cancels the reply streaming in the shown conversation.
 */
gboolean
kaged_window_stop (KagedWindow  *self,
                   GError      **error)
{
  KagedSessionManager *manager = kaged_window_get_manager (self);
  g_autoptr(GPtrArray) runs = NULL;

  if (manager == NULL || self->session_id <= 0)
    return TRUE;

  runs = kaged_store_list_runs (kaged_session_manager_get_store (manager), self->session_id,
                                KAGED_RUN_STATUS_RUNNING, error);
  if (runs == NULL)
    return FALSE;

  for (guint i = 0; i < runs->len; i++)
    if (!kaged_core_cancel_run (self->core, self->session_id,
                                kaged_run_get_id (g_ptr_array_index (runs, i)), error))
      return FALSE;

  return TRUE;
}

static void
regenerate (KagedWindow *self,
            gint64       message_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (self));
  gboolean focus_in_view;

  if (self->core == NULL || self->session_id <= 0)
    return;

  /* The reply that has the focus (its button, or its details) is about to
   * be superseded: the list would give the focus to another message's
   * text. It goes where the user types next. */
  focus_in_view = focus != NULL && gtk_widget_is_ancestor (focus, GTK_WIDGET (self->message_view));

  receipt = kaged_core_regenerate (self->core, self->session_id, message_id, &error);
  if (receipt == NULL)
    {
      kaged_window_toast (self, error->message);
      return;
    }

  if (focus_in_view)
    kaged_composer_focus (self->composer);

  self->follow_end = TRUE;
  kaged_window_follow_end (self);
}

/* How many messages leave the conversation when the reply @message_id
 * (any of its versions) is regenerated: those after the reply that
 * answers the same operator message. */
static guint
count_after (KagedWindow *self,
             gint64       message_id)
{
  KagedSessionManager *manager = kaged_window_get_manager (self);
  guint n;
  guint position;
  gint64 anchor_id;

  if (manager == NULL || !KAGED_IS_CONVERSATION (self->conversation) ||
      (anchor_id = kaged_session_manager_resolve_anchor (manager, self->session_id, message_id, NULL)) <= 0 ||
      !kaged_conversation_find_position (KAGED_CONVERSATION (self->conversation), anchor_id, &position, NULL))
    return 0;

  n = g_list_model_get_n_items (self->conversation);
  position++;
  /* Its reply, in whatever version, stays. */
  if (position < n)
    {
      g_autoptr(KagedMessage) next = g_list_model_get_item (self->conversation, position);

      if (next != NULL && kaged_message_get_role (next) == KAGED_MESSAGE_ROLE_AGENT)
        position++;
    }

  return n > position ? n - position : 0;
}

static void
regenerate_response_cb (AdwMessageDialog *dialog,
                        const char       *response,
                        KagedWindow      *self)
{
  gint64 *ids = g_object_get_data (G_OBJECT (dialog), "kaged-ids");

  /* Asked about the conversation shown then. */
  if (g_strcmp0 (response, "regenerate") == 0 && ids != NULL && ids[0] == self->session_id)
    regenerate (self, ids[1]);
}

/* A reply that later messages follow: they leave the conversation with
 * it, which is asked first, as for an edit. */
static void
ask_regenerate (KagedWindow *self,
                gint64       message_id)
{
  guint later = count_after (self, message_id);
  AdwMessageDialog *dialog;
  gint64 ids[2] = { self->session_id, message_id };

  if (later == 0)
    {
      regenerate (self, message_id);
      return;
    }

  dialog = ADW_MESSAGE_DIALOG (adw_message_dialog_new (GTK_WINDOW (self), _("Regenerate Reply?"), NULL));
  adw_message_dialog_format_body (dialog,
                                  /* Translators: %u is how many messages follow the reply */
                                  g_dngettext (GETTEXT_PACKAGE,
                                               "A new reply is written in its place, and the "
                                               "conversation continues from it. %u later message "
                                               "leaves the conversation. Nothing is deleted: it "
                                               "stays with the earlier version of the reply.",
                                               "A new reply is written in its place, and the "
                                               "conversation continues from it. %u later messages "
                                               "leave the conversation. Nothing is deleted: they "
                                               "stay with the earlier version of the reply.",
                                               later),
                                  later);
  adw_message_dialog_add_responses (dialog,
                                    "cancel", _("_Cancel"),
                                    "regenerate", _("_Regenerate"),
                                    NULL);
  adw_message_dialog_set_response_appearance (dialog, "regenerate", ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_default_response (dialog, "regenerate");
  adw_message_dialog_set_close_response (dialog, "cancel");
  g_object_set_data_full (G_OBJECT (dialog), "kaged-ids", g_memdup2 (ids, sizeof ids), g_free);
  g_signal_connect_object (dialog, "response", G_CALLBACK (regenerate_response_cb), self, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}

static void
regenerate_action (GtkWidget  *widget,
                   const char *action_name,
                   GVariant   *parameter)
{
  ask_regenerate (KAGED_WINDOW (widget), g_variant_get_int64 (parameter));
}

/* Ctrl+Shift+R: the latest reply, asked about as from its button. */
static void
regenerate_latest_action (GtkWidget  *widget,
                          const char *action_name,
                          GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);
  guint n;

  if (self->conversation == NULL)
    return;

  n = g_list_model_get_n_items (self->conversation);
  for (guint i = n; i > 0; i--)
    {
      g_autoptr(KagedMessage) message = g_list_model_get_item (self->conversation, i - 1);

      /* While it is written, Stop (Escape) ends it, as on its button. */
      if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_AGENT)
        {
          if (kaged_message_get_status (message) != KAGED_MESSAGE_STATUS_STREAMING)
            ask_regenerate (self, kaged_message_get_id (message));
          return;
        }
    }
}

/* ---------------------------------------------------------------------------
 * Edit: the operator's message said again; the old one and everything
 * after it are kept as an earlier version.
 * ------------------------------------------------------------------------- */

/**
 * kaged_window_edit:
 *
 * Replaces the operator message @message_id by @content.
 *
 * Returns: whether the edited message was posted
 */
gboolean
kaged_window_edit (KagedWindow *self,
                   gint64       message_id,
                   const char  *content)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;

  g_return_val_if_fail (KAGED_IS_WINDOW (self), FALSE);

  if (self->core == NULL || self->session_id <= 0)
    return FALSE;

  receipt = kaged_core_edit (self->core, self->session_id, message_id, content, &error);
  if (receipt == NULL)
    {
      kaged_window_toast (self, error->message);
      return FALSE;
    }

  self->follow_end = TRUE;
  kaged_window_follow_end (self);
  return TRUE;
}

static void
edit_response_cb (AdwMessageDialog *dialog,
                  const char       *response,
                  KagedWindow      *self)
{
  GtkTextView *view = g_object_get_data (G_OBJECT (dialog), "kaged-text-view");
  gint64 *message_id = g_object_get_data (G_OBJECT (dialog), "kaged-message-id");
  g_autofree char *text = NULL;
  GtkTextBuffer *buffer;
  GtkTextIter start, end;

  if (g_strcmp0 (response, "send") != 0 || view == NULL || message_id == NULL)
    return;

  buffer = gtk_text_view_get_buffer (view);
  gtk_text_buffer_get_bounds (buffer, &start, &end);
  text = gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
  /* The message edited, whose button had the focus, leaves the view: the
   * window takes the focus back where the user types next. */
  if (kaged_window_edit (self, *message_id, text))
    kaged_composer_focus (self->composer);
}

/* Ctrl+Enter: what the composer's Enter does, where Enter starts a line. */
static void
edit_send_cb (GSimpleAction *action,
              GVariant      *parameter,
              gpointer       user_data)
{
  AdwMessageDialog *dialog = user_data;

  adw_message_dialog_response (dialog, "send");
  gtk_window_destroy (GTK_WINDOW (dialog));
}

/**
 * kaged_window_new_edit_dialog:
 * @message_id: the operator's message to edit
 * @text: its text
 *
 * The dialog that edits a message: *Send* (or Ctrl+Enter) posts the edited
 * text through kaged_window_edit().
 *
 * Returns: (transfer none): the dialog, not yet shown
 */
GtkWidget *
kaged_window_new_edit_dialog (KagedWindow *self,
                              gint64       message_id,
                              const char  *text)
{
  static const GActionEntry entries[] = {
    { "send", edit_send_cb, NULL, NULL, NULL, { 0 } },
  };
  g_autoptr(GSimpleActionGroup) actions = g_simple_action_group_new ();
  GtkEventController *shortcuts;
  GtkWidget *dialog;
  GtkWidget *scroller;
  GtkWidget *view;
  GtkWidget *hint;
  GtkWidget *extra;

  dialog = adw_message_dialog_new (GTK_WINDOW (self), _("Edit Message"),
                                   _("The edited message is sent as a new one, and the "
                                     "conversation continues from it. This message and the "
                                     "replies after it leave the conversation. Nothing is "
                                     "deleted: they stay with the message’s earlier version."));
  view = gtk_text_view_new ();
  gtk_text_view_set_wrap_mode (GTK_TEXT_VIEW (view), GTK_WRAP_WORD_CHAR);
  gtk_text_view_set_top_margin (GTK_TEXT_VIEW (view), 6);
  gtk_text_view_set_bottom_margin (GTK_TEXT_VIEW (view), 6);
  gtk_text_view_set_left_margin (GTK_TEXT_VIEW (view), 6);
  gtk_text_view_set_right_margin (GTK_TEXT_VIEW (view), 6);
  gtk_text_buffer_set_text (gtk_text_view_get_buffer (GTK_TEXT_VIEW (view)), text != NULL ? text : "", -1);
  gtk_accessible_update_property (GTK_ACCESSIBLE (view),
                                  GTK_ACCESSIBLE_PROPERTY_LABEL, _("Edited Message"),
                                  -1);
  scroller = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), view);
  gtk_scrolled_window_set_min_content_height (GTK_SCROLLED_WINDOW (scroller), 120);
  gtk_scrolled_window_set_max_content_height (GTK_SCROLLED_WINDOW (scroller), 300);
  gtk_scrolled_window_set_propagate_natural_height (GTK_SCROLLED_WINDOW (scroller), TRUE);
  gtk_widget_add_css_class (scroller, "card");
  /* Enter starts a new line here, unlike in the composer: said where the
   * text is. */
  hint = gtk_label_new (_("Ctrl+Enter sends"));
  gtk_label_set_xalign (GTK_LABEL (hint), 1.0);
  gtk_widget_add_css_class (hint, "caption");
  gtk_widget_add_css_class (hint, "dim-label");
  gtk_accessible_update_relation (GTK_ACCESSIBLE (view),
                                  GTK_ACCESSIBLE_RELATION_DESCRIBED_BY, hint, NULL,
                                  -1);
  extra = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  gtk_box_append (GTK_BOX (extra), scroller);
  gtk_box_append (GTK_BOX (extra), hint);
  adw_message_dialog_set_extra_child (ADW_MESSAGE_DIALOG (dialog), extra);

  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog),
                                    "cancel", _("_Cancel"),
                                    "send", _("_Send"),
                                    NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "send",
                                              ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "send");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");

  /* Before the text view, which would start a line. */
  g_action_map_add_action_entries (G_ACTION_MAP (actions), entries, G_N_ELEMENTS (entries), dialog);
  gtk_widget_insert_action_group (dialog, "edit", G_ACTION_GROUP (actions));
  shortcuts = gtk_shortcut_controller_new ();
  gtk_event_controller_set_propagation_phase (shortcuts, GTK_PHASE_CAPTURE);
  gtk_shortcut_controller_add_shortcut (GTK_SHORTCUT_CONTROLLER (shortcuts),
                                        gtk_shortcut_new (gtk_keyval_trigger_new (GDK_KEY_Return, GDK_CONTROL_MASK),
                                                          gtk_named_action_new ("edit.send")));
  gtk_shortcut_controller_add_shortcut (GTK_SHORTCUT_CONTROLLER (shortcuts),
                                        gtk_shortcut_new (gtk_keyval_trigger_new (GDK_KEY_KP_Enter, GDK_CONTROL_MASK),
                                                          gtk_named_action_new ("edit.send")));
  gtk_widget_add_controller (dialog, shortcuts);

  g_object_set_data (G_OBJECT (dialog), "kaged-text-view", view);
  g_object_set_data_full (G_OBJECT (dialog), "kaged-message-id",
                          g_memdup2 (&message_id, sizeof message_id), g_free);
  g_signal_connect_object (dialog, "response", G_CALLBACK (edit_response_cb), self, 0);

  return dialog;
}

static void
edit_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);
  gint64 message_id = g_variant_get_int64 (parameter);
  g_autoptr(KagedMessage) message = NULL;
  GtkWidget *dialog;

  if (self->core == NULL ||
      (message = kaged_store_get_message (kaged_core_get_store (self->core), message_id, NULL)) == NULL)
    return;

  dialog = kaged_window_new_edit_dialog (self, message_id, kaged_message_get_content (message));
  gtk_window_present (GTK_WINDOW (dialog));
  gtk_widget_grab_focus (GTK_WIDGET (g_object_get_data (G_OBJECT (dialog), "kaged-text-view")));
}

/* ---------------------------------------------------------------------------
 * Rows
 * ------------------------------------------------------------------------- */

/* What the pager of @message's row pages through: the versions of a
 * reply, or the texts of an operator message that edits replaced. */
static GListModel *
list_versions (KagedWindow  *self,
               KagedMessage *message)
{
  KagedConversation *conversation;
  g_autoptr(GPtrArray) versions = NULL;
  GListStore *store;
  gint64 anchor_id;

  if (!KAGED_IS_CONVERSATION (self->conversation))
    return NULL;
  conversation = KAGED_CONVERSATION (self->conversation);

  switch (kaged_message_get_role (message))
    {
    case KAGED_MESSAGE_ROLE_AGENT:
      anchor_id = kaged_conversation_get_anchor_id (conversation, message);
      if (anchor_id > 0)
        versions = kaged_conversation_list_versions (conversation, anchor_id, NULL);
      break;
    case KAGED_MESSAGE_ROLE_OPERATOR:
      versions = kaged_conversation_list_edits (conversation, kaged_message_get_id (message), NULL);
      break;
    case KAGED_MESSAGE_ROLE_SUMMARY:
    default:
      break;
    }
  if (versions == NULL)
    return NULL;

  store = g_list_store_new (KAGED_TYPE_MESSAGE);
  g_list_store_splice (store, 0, 0, versions->pdata, versions->len);

  return G_LIST_MODEL (store);
}

static void
message_setup_cb (GtkSignalListItemFactory *factory,
                  GtkListItem              *item,
                  KagedWindow              *self)
{
  gtk_list_item_set_activatable (item, FALSE);
  gtk_list_item_set_child (item, kaged_message_row_new ());
}

/* Gives @row what it shows of the run that wrote @message, one of the
 * versions of a reply: the run, the profile and model it went through,
 * and the profile *Open Preferences* shows. */
static void
bind_reply_run (KagedWindow     *self,
                KagedMessageRow *row,
                KagedMessage    *message)
{
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedProfile) conversation_profile = NULL;
  g_autofree char *run_profile_id = NULL;
  g_autofree char *run_profile = NULL;
  g_autofree char *run_model = NULL;

  if (kaged_message_get_run_id (message) > 0)
    run = kaged_session_manager_get_run (kaged_window_get_manager (self),
                                         kaged_message_get_session_id (message),
                                         kaged_message_get_run_id (message), NULL);
  kaged_message_row_set_run (row, run);

  /* The profile and model the run went through, once it recorded them. */
  if (run != NULL)
    kaged_core_get_run_model (self->core, kaged_run_get_id (run), &run_profile_id,
                              &run_profile, &run_model, NULL);
  if (run_model != NULL)
    {
      kaged_message_row_set_provider_name (row, run_profile);
      kaged_message_row_set_model_name (row, run_model);
    }
  else if (run != NULL && (kaged_run_get_status (run) == KAGED_RUN_STATUS_RUNNING ||
                           kaged_run_get_status (run) == KAGED_RUN_STATUS_QUEUED))
    {
      /* Still going: it records them when it ends; until then, what
       * the conversation asks for is what it uses. */
      g_autoptr(KagedProfile) going = NULL;
      g_autofree char *going_model = NULL;

      going = kaged_core_dup_session_profile (self->core, kaged_message_get_session_id (message),
                                              &going_model);
      kaged_message_row_set_provider_name (row, going != NULL ? kaged_profile_get_name (going) : NULL);
      kaged_message_row_set_model_name (row, going_model);
    }
  else
    {
      /* A run from before runs recorded them, or one that never started. */
      kaged_message_row_set_provider_name (row, NULL);
      kaged_message_row_set_model_name (row, NULL);
    }

  /* Open Preferences shows the page of the profile the reply went
   * through, or, before it recorded one, the conversation's. */
  if (run_profile_id == NULL)
    {
      conversation_profile = kaged_core_dup_session_profile (self->core,
                                                             kaged_message_get_session_id (message),
                                                             NULL);
      if (conversation_profile != NULL)
        run_profile_id = g_strdup (kaged_profile_get_id (conversation_profile));
    }
  kaged_message_row_set_profile_id (row, run_profile_id);

  /* What a reply that did not reach the server says to do: about the
   * server of the profile Open Preferences shows, as it is now. A reply
   * still being written may fail while shown; a complete one needs
   * nothing. */
  if (kaged_message_get_status (message) == KAGED_MESSAGE_STATUS_FAILED ||
      kaged_message_get_status (message) == KAGED_MESSAGE_STATUS_STREAMING)
    {
      KagedProfiles *profiles = kaged_core_get_profiles (self->core);
      KagedProfile *profile = NULL;

      if (profiles != NULL && run_profile_id != NULL && run_profile_id[0] != '\0')
        profile = kaged_profiles_lookup (profiles, run_profile_id);
      if (profile == NULL)
        {
          if (conversation_profile == NULL)
            conversation_profile = kaged_core_dup_session_profile (self->core,
                                                                   kaged_message_get_session_id (message),
                                                                   NULL);
          profile = conversation_profile;
        }
      kaged_message_row_set_server_profile (row, profile);
    }
  else
    {
      kaged_message_row_set_server_profile (row, NULL);
    }
}

/* Whether the Tier 2 retry of the conversation shown waits: it counts
 * down, or waits for its time or the network. */
static gboolean
retry_waiting (KagedWindow *self)
{
  KagedRetryScheduler *scheduler = kaged_retry_banner_get_scheduler (self->retry_banner);

  if (scheduler == NULL)
    return FALSE;

  switch (kaged_retry_scheduler_get_state (scheduler))
    {
    case KAGED_RETRY_SCHEDULER_STATE_ARMED:
    case KAGED_RETRY_SCHEDULER_STATE_SCHEDULED:
    case KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK:
      return TRUE;
    case KAGED_RETRY_SCHEDULER_STATE_IDLE:
    case KAGED_RETRY_SCHEDULER_STATE_DISPATCHING:
    case KAGED_RETRY_SCHEDULER_STATE_WATCHING:
    case KAGED_RETRY_SCHEDULER_STATE_CANCELLED:
    default:
      return FALSE;
    }
}

/* Whether @message is the reply a waiting Tier 2 retry of the
 * conversation shown will write again: the current reply to its anchor. */
static gboolean
retry_waits_for (KagedWindow  *self,
                 KagedMessage *message)
{
  if (!retry_waiting (self) || !KAGED_IS_CONVERSATION (self->conversation) || message == NULL ||
      kaged_message_get_role (message) != KAGED_MESSAGE_ROLE_AGENT ||
      kaged_message_is_superseded (message))
    return FALSE;

  return kaged_conversation_get_anchor_id (KAGED_CONVERSATION (self->conversation), message) ==
         kaged_retry_scheduler_get_anchor_id (kaged_retry_banner_get_scheduler (self->retry_banner));
}

static void
update_row_retry_pending (KagedWindow     *self,
                          KagedMessageRow *row)
{
  kaged_message_row_set_retry_pending (row, retry_waits_for (self, kaged_message_row_get_message (row)));
}

/**
 * kaged_window_update_composer_placeholder:
 *
 * While a retry waits, a message sent stands it down (the conversation
 * goes on from the message): the empty composer says so.
 */
void
kaged_window_update_composer_placeholder (KagedWindow *self)
{
  kaged_composer_set_placeholder (self->composer,
                                  retry_waiting (self) ? _("Sending a message cancels the retry") : NULL);
}

/**
 * kaged_window_update_retry_pending:
 *
 * After the retry of the conversation shown changed: tells the rows shown
 * which reply it waits to write again, and the composer what sending does.
 */
void
kaged_window_update_retry_pending (KagedWindow *self)
{
  foreach_row (self, update_row_retry_pending);
  kaged_window_update_composer_placeholder (self);
}

/* Which versions a reply's pager offers depends on how the reply ended
 * (an earlier failure without a word is worth reading beside a retry
 * stopped before its first word, not beside one still under way or one
 * that failed the same way): once it ends, its row lists them again,
 * unless it shows another version. */
static void
reply_status_cb (KagedMessage *message,
                 GParamSpec   *pspec,
                 GtkListItem  *item)
{
  KagedMessageRow *row = KAGED_MESSAGE_ROW (gtk_list_item_get_child (item));
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (row));
  g_autoptr(GListModel) versions = NULL;

  if (!KAGED_IS_WINDOW (root) || kaged_message_row_get_message (row) != message ||
      kaged_message_get_status (message) == KAGED_MESSAGE_STATUS_STREAMING)
    return;

  versions = list_versions (KAGED_WINDOW (root), message);
  kaged_message_row_set_versions (row, versions);
}

static void
message_bind_cb (GtkSignalListItemFactory *factory,
                 GtkListItem              *item,
                 KagedWindow              *self)
{
  KagedMessageRow *row = KAGED_MESSAGE_ROW (gtk_list_item_get_child (item));
  KagedMessage *message = gtk_list_item_get_item (item);

  kaged_message_row_set_message (row, message);
  kaged_message_row_set_retry_pending (row, retry_waits_for (self, message));
  set_found_class (self, row);

  if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_OPERATOR && self->core != NULL)
    {
      g_autoptr(GListModel) versions = list_versions (self, message);

      kaged_message_row_set_versions (row, versions);
    }
  else if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_AGENT && self->core != NULL)
    {
      g_autoptr(GListModel) versions = list_versions (self, message);

      kaged_message_row_set_versions (row, versions);
      bind_reply_run (self, row, message);
      if (kaged_message_get_status (message) == KAGED_MESSAGE_STATUS_STREAMING)
        g_signal_connect_object (message, "notify::status", G_CALLBACK (reply_status_cb), item, 0);
    }
}

/**
 * kaged_window_show_latest_versions:
 *
 * Shows every reply on screen in the version the conversation goes on
 * from, not an earlier one its pager showed. Rows bound later show it
 * anyway.
 */
static void
show_row_latest_version (KagedWindow     *self,
                         KagedMessageRow *row)
{
  kaged_message_row_show_latest_version (row);
}

void
kaged_window_show_latest_versions (KagedWindow *self)
{
  foreach_row (self, show_row_latest_version);
}

/* Under an earlier version of a reply, the turns that followed it: the
 * regeneration that replaced it took them out of the conversation too. */
static void
show_later_messages (KagedWindow     *self,
                     KagedMessageRow *row,
                     KagedMessage    *message)
{
  g_autoptr(GPtrArray) later = NULL;
  g_autoptr(GError) error = NULL;
  guint n_later = 0;

  if (!kaged_message_is_superseded (message) || !KAGED_IS_CONVERSATION (self->conversation))
    return;

  later = kaged_conversation_list_superseded_with (KAGED_CONVERSATION (self->conversation),
                                                   kaged_message_get_id (message),
                                                   KAGED_LATER_MESSAGES_MAX_SHOWN, &n_later,
                                                   &error);
  if (later == NULL)
    {
      g_warning ("Cannot list what followed message %" G_GINT64_FORMAT ": %s",
                 kaged_message_get_id (message), error->message);
      return;
    }
  kaged_message_row_set_later_messages (row, later, n_later);
}

/* A pager showed another version, @message_id: of a reply, whose row
 * describes that version's run; or an operator message's earlier text.
 * Either shows what followed it. */
static void
show_version_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);
  gint64 message_id = g_variant_get_int64 (parameter);

  if (self->core == NULL)
    return;

  for (GtkWidget *item = gtk_widget_get_first_child (GTK_WIDGET (self->message_view)); item != NULL;
       item = gtk_widget_get_next_sibling (item))
    {
      GtkWidget *row = gtk_widget_get_first_child (item);
      KagedMessage *message;

      if (!KAGED_IS_MESSAGE_ROW (row) ||
          (message = kaged_message_row_get_message (KAGED_MESSAGE_ROW (row))) == NULL ||
          kaged_message_get_id (message) != message_id)
        continue;

      if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_AGENT)
        {
          bind_reply_run (self, KAGED_MESSAGE_ROW (row), message);
          /* An earlier version is not what a retry writes again. */
          kaged_message_row_set_retry_pending (KAGED_MESSAGE_ROW (row),
                                               retry_waits_for (self, message));
        }
      show_later_messages (self, KAGED_MESSAGE_ROW (row), message);
      return;
    }
}

static void
message_unbind_cb (GtkSignalListItemFactory *factory,
                   GtkListItem              *item,
                   KagedWindow              *self)
{
  KagedMessageRow *row = KAGED_MESSAGE_ROW (gtk_list_item_get_child (item));
  KagedMessage *message = gtk_list_item_get_item (item);

  if (message != NULL)
    g_signal_handlers_disconnect_by_func (message, reply_status_cb, item);
  kaged_message_row_set_message (row, NULL);
  kaged_message_row_set_versions (row, NULL);
  kaged_message_row_set_run (row, NULL);
  kaged_message_row_set_server_profile (row, NULL);
}

GtkListItemFactory *
kaged_window_message_factory_new (KagedWindow *self)
{
  GtkListItemFactory *factory = gtk_signal_list_item_factory_new ();

  g_signal_connect (factory, "setup", G_CALLBACK (message_setup_cb), self);
  g_signal_connect (factory, "bind", G_CALLBACK (message_bind_cb), self);
  g_signal_connect (factory, "unbind", G_CALLBACK (message_unbind_cb), self);

  return factory;
}

void
kaged_window_class_init_messages (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "message.regenerate", "x", regenerate_action);
  gtk_widget_class_install_action (widget_class, "message.edit", "x", edit_action);
  gtk_widget_class_install_action (widget_class, "message.show-version", "x", show_version_action);
  gtk_widget_class_install_action (widget_class, "win.regenerate-latest", NULL,
                                   regenerate_latest_action);

  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_r,
                                       GDK_CONTROL_MASK | GDK_SHIFT_MASK,
                                       "win.regenerate-latest", NULL);
}
