/* kaged-window.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-window"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-code-block.h"
#include "kaged-composer.h"
#include "kaged-icons.h"
#include "kaged-message-row.h"
#include "kaged-retry-banner.h"
#include "kaged-session-list.h"
#include "kaged-session-row.h"
#include "kaged-window.h"
#include "kaged-window-private.h"

/**
 * KagedWindow:
 *
 * The main window: the conversations in a sidebar beside the one shown,
 * its messages, its Tier 2 retry banner and the composer. On a narrow
 * window the sidebar and the conversation take turns. Its size and
 * maximized state are kept in GSettings.
 */

G_DEFINE_FINAL_TYPE (KagedWindow, kaged_window, ADW_TYPE_APPLICATION_WINDOW)

/* ---------------------------------------------------------------------------
 * What runs behind the window
 * ------------------------------------------------------------------------- */

KagedSessionManager *
kaged_window_get_manager (KagedWindow *self)
{
  return self->core != NULL ? kaged_core_get_manager (self->core) : NULL;
}

static KagedRetryCoordinator *
get_coordinator (KagedWindow *self)
{
  return self->core != NULL ? kaged_core_get_coordinator (self->core) : NULL;
}

/* ---------------------------------------------------------------------------
 * State
 * ------------------------------------------------------------------------- */

static void
kaged_window_restore_state (KagedWindow *self)
{
  int width = g_settings_get_int (self->settings, "window-width");
  int height = g_settings_get_int (self->settings, "window-height");

  gtk_window_set_default_size (GTK_WINDOW (self), width, height);

  if (g_settings_get_boolean (self->settings, "window-maximized"))
    gtk_window_maximize (GTK_WINDOW (self));
}

static void
kaged_window_save_state (KagedWindow *self)
{
  int width = 0;
  int height = 0;
  gboolean maximized = gtk_window_is_maximized (GTK_WINDOW (self));

  g_settings_delay (self->settings);

  /* The default size of a maximized window is still its unmaximized size. */
  gtk_window_get_default_size (GTK_WINDOW (self), &width, &height);
  if (width > 0 && height > 0)
    {
      g_settings_set_int (self->settings, "window-width", width);
      g_settings_set_int (self->settings, "window-height", height);
    }
  g_settings_set_boolean (self->settings, "window-maximized", maximized);

  g_settings_apply (self->settings);
}

void
kaged_window_toast (KagedWindow *self,
                    const char  *title)
{
  AdwToast *toast = adw_toast_new (title);

  adw_toast_set_timeout (toast, 5);
  adw_toast_overlay_add_toast (self->toast_overlay, toast);
}

/* ---------------------------------------------------------------------------
 * The conversation shown
 * ------------------------------------------------------------------------- */

/* Whether the profile's key can only come from an environment variable
 * (`--api-key-env`: the keyring is not asked) that is not set, when its
 * provider needs one. */
static gboolean
key_variable_unset (KagedWindow  *self,
                    KagedProfile *profile)
{
  const char *name = kaged_profile_get_api_key_env (profile);
  const char *value;

  if ((kaged_core_get_flags (self->core) & KAGED_CORE_FLAGS_NO_KEYRING) == 0 ||
      !kaged_provider_kind_needs_key (kaged_profile_get_kind (profile),
                                      kaged_profile_get_base_url (profile)) ||
      name == NULL || name[0] == '\0')
    return FALSE;

  value = g_getenv (name);

  return value == NULL || value[0] == '\0';
}

/* Why nothing can be sent, in words, or NULL when a message can be. */
static char *
describe_unusable (KagedWindow *self)
{
  KagedProfile *profile;

  if (self->core == NULL)
    return g_strdup (_("Conversations could not be opened"));

  profile = kaged_core_get_profile (self->core);
  if (profile == NULL)
    return g_strdup (_("No provider is set up: choose one in Preferences"));

  if (kaged_profile_get_model (profile) == NULL || kaged_profile_get_model (profile)[0] == '\0')
    return g_strdup (_("The provider has no model chosen: choose one in Preferences"));

  if (kaged_profile_get_base_url (profile) == NULL || kaged_profile_get_base_url (profile)[0] == '\0')
    return g_strdup (_("The provider has no address: set one in Preferences"));

  if (key_variable_unset (self, profile))
    /* Translators: %s is the name of an environment variable, e.g. ANTHROPIC_API_KEY */
    return g_strdup_printf (_("No API key: the environment variable %s is not set"),
                            kaged_profile_get_api_key_env (profile));

  return NULL;
}

/* The first page says what to do, and where replies will come from. */
static void
update_empty_page (KagedWindow *self,
                   const char  *unusable)
{
  KagedProfile *profile = self->core != NULL ? kaged_core_get_profile (self->core) : NULL;
  g_autofree char *source = NULL;
  g_autofree char *description = NULL;

  if (unusable != NULL)
    /* Translators: %s says why no message can be sent yet, e.g. "No provider is set up: choose one in Preferences" */
    source = g_strdup_printf (_("%s."), unusable);
  else if (kaged_profile_get_kind (profile) == KAGED_PROVIDER_KIND_OLLAMA &&
           kaged_url_is_local (kaged_profile_get_base_url (profile)))
    /* Translators: %s is the name of a model, e.g. "llama3.2" */
    source = g_strdup_printf (_("Replies come from Ollama on this computer, with the model %s."),
                              kaged_profile_get_model (profile));
  else if (kaged_profile_get_id (profile) == NULL || kaged_profile_get_id (profile)[0] == '\0')
    /* A provider given on the command line, for this run: where it is. */
    /* Translators: the first %s is a server's address, the second a model's name */
    source = g_strdup_printf (_("Replies come from the server at %s, given on the command line, with the model %s."),
                              kaged_profile_get_base_url (profile), kaged_profile_get_model (profile));
  else
    /* Translators: the first %s is the name of a provider profile, the second a model's */
    source = g_strdup_printf (_("Replies come from %s, with the model %s."),
                              kaged_profile_get_name (profile), kaged_profile_get_model (profile));

  /* Translators: %s says where replies come from, e.g. "Replies come from Ollama on this computer, with the model llama3.2." */
  description = g_strdup_printf (_("Write a message below and press Enter. %s "
                                   "When the provider stumbles, Kaged retries and tells you why it is waiting."),
                                 source);
  adw_status_page_set_description (self->empty_page, description);

  /* A provider from the command line is this run's: the preferences do
   * not choose it. */
  gtk_widget_set_visible (adw_status_page_get_child (self->empty_page),
                          profile == NULL || unusable != NULL ||
                          (kaged_profile_get_id (profile) != NULL && kaged_profile_get_id (profile)[0] != '\0'));
}

static void
update_composer (KagedWindow *self)
{
  KagedSessionManager *manager = kaged_window_get_manager (self);
  g_autofree char *unusable = describe_unusable (self);
  gboolean running = FALSE;

  if (manager != NULL && self->session_id > 0)
    running = kaged_session_manager_is_busy (manager, self->session_id);

  kaged_composer_set_running (self->composer, running);
  kaged_composer_set_disabled_reason (self->composer, unusable);
  update_empty_page (self, unusable);
}

static void
update_content (KagedWindow *self)
{
  gboolean has_messages = self->conversation != NULL &&
                          g_list_model_get_n_items (self->conversation) > 0;

  gtk_stack_set_visible_child_name (self->content_stack,
                                    has_messages ? "conversation" : "empty");
}

static void
update_title (KagedWindow *self)
{
  KagedSession *session = NULL;
  const char *title = NULL;

  if (self->session_list != NULL && self->session_id > 0)
    session = kaged_session_list_lookup (self->session_list, self->session_id);
  if (session != NULL)
    title = kaged_session_get_title (session);

  /* Renamed in the sidebar, or titled by its first message: follow it. */
  if (self->session_signals != NULL)
    {
      g_autoptr(GObject) followed = g_signal_group_dup_target (self->session_signals);

      if (followed != (GObject *)session)
        g_signal_group_set_target (self->session_signals, session);
    }

  adw_window_title_set_title (self->conversation_title,
                              title != NULL && title[0] != '\0' ? title : _("New Conversation"));
}

static void
select_shown_session (KagedWindow *self)
{
  guint position = GTK_INVALID_LIST_POSITION;

  if (self->session_list == NULL)
    return;

  if (self->session_id <= 0 ||
      !kaged_session_list_find (self->session_list, self->session_id, &position))
    position = GTK_INVALID_LIST_POSITION;

  if (gtk_single_selection_get_selected (self->session_selection) != position)
    gtk_single_selection_set_selected (self->session_selection, position);
}

static void
conversation_items_changed_cb (KagedWindow *self,
                               guint        position,
                               guint        removed,
                               guint        added,
                               GListModel  *model)
{
  /* A message after them, from here or elsewhere: the replies show the
   * versions it follows. */
  if (removed == 0 && position + added == g_list_model_get_n_items (model))
    {
      for (guint i = 0; i < added; i++)
        {
          g_autoptr(KagedMessage) message = g_list_model_get_item (model, position + i);

          if (message != NULL && kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_OPERATOR)
            {
              kaged_window_show_latest_versions (self);
              break;
            }
        }
    }

  update_content (self);
  kaged_window_follow_end (self);
}

static void
set_conversation (KagedWindow *self,
                  GListModel  *conversation)
{
  if (self->conversation != NULL)
    g_signal_handlers_disconnect_by_data (self->conversation, self);
  g_set_object (&self->conversation, conversation);

  g_clear_object (&self->message_selection);
  g_clear_object (&self->span);
  kaged_window_messages_dispose (self);
  g_clear_object (&self->span);
  if (conversation != NULL)
    {
      g_signal_connect_object (conversation, "items-changed",
                               G_CALLBACK (conversation_items_changed_cb), self,
                               G_CONNECT_SWAPPED | G_CONNECT_AFTER);
      self->span = kaged_window_span_conversation (self, conversation);
      self->message_selection = GTK_SELECTION_MODEL (gtk_no_selection_new (g_object_ref (G_LIST_MODEL (self->span))));
    }
  gtk_list_view_set_model (self->message_view, self->message_selection);
}

/* Each conversation keeps what was written in it and not sent: moving to
 * another must not carry the text there, where Enter would send it. It is
 * kept in the database, a moment after typing stops and whenever the
 * window leaves the conversation, so that neither quitting nor a crash
 * loses it. The text of a new conversation (session 0 until it starts)
 * goes with it when its first message starts it. */

#define DRAFT_SAVE_DELAY_MS 1000

/* Keeps @text (or, for %NULL, nothing) as the draft of @session_id. A
 * conversation deleted meanwhile (through the HTTP API) took its draft
 * with it. */
static void
keep_draft (KagedWindow *self,
            gint64       session_id,
            const char  *text)
{
  KagedSessionManager *manager = kaged_window_get_manager (self);
  g_autoptr(GError) error = NULL;

  if (manager != NULL && !kaged_session_manager_set_draft (manager, MAX (session_id, 0), text, &error) &&
      !g_error_matches (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_NOT_FOUND))
    g_warning ("Cannot keep what was written in conversation %" G_GINT64_FORMAT ": %s",
               session_id, error->message);
}

/* Keeps what the composer holds as the shown conversation's draft. */
static void
save_draft (KagedWindow *self)
{
  g_autofree char *text = NULL;

  g_clear_handle_id (&self->draft_source, g_source_remove);
  if (!self->draft_shown)
    return;

  text = kaged_composer_dup_text (self->composer);
  keep_draft (self, self->session_id, text);
}

/* Forgets the draft of @session_id, sent or gone elsewhere. */
static void
clear_draft (KagedWindow *self,
             gint64       session_id)
{
  if (session_id == self->session_id)
    g_clear_handle_id (&self->draft_source, g_source_remove);
  keep_draft (self, session_id, NULL);
}

static gboolean
save_draft_cb (gpointer user_data)
{
  KagedWindow *self = user_data;

  self->draft_source = 0;
  save_draft (self);

  return G_SOURCE_REMOVE;
}

static void
composer_changed_cb (KagedWindow *self)
{
  if (self->loading_draft || !self->draft_shown)
    return;

  g_clear_handle_id (&self->draft_source, g_source_remove);
  self->draft_source = g_timeout_add (DRAFT_SAVE_DELAY_MS, save_draft_cb, self);
}

static void
switch_draft (KagedWindow *self,
              gint64       session_id)
{
  KagedSessionManager *manager = kaged_window_get_manager (self);
  g_autoptr(GError) error = NULL;
  g_autofree char *draft = NULL;

  if (self->starting)
    return;

  save_draft (self);

  self->draft_shown = manager != NULL;
  if (manager != NULL && !kaged_session_manager_get_draft (manager, session_id, &draft, &error))
    {
      /* What is kept stays kept: an empty composer does not replace it. */
      g_warning ("Cannot read what was written in conversation %" G_GINT64_FORMAT ": %s",
                 session_id, error->message);
      self->draft_shown = FALSE;
    }
  self->loading_draft = TRUE;
  kaged_composer_set_draft (self->composer, draft);
  self->loading_draft = FALSE;
}

/**
 * kaged_window_show_session:
 * @session_id: the session to show, or 0 for a new conversation
 *
 * Makes @session_id the window's session: its messages, its composer and
 * its pending retry, if any, in the banner.
 */
void
kaged_window_show_session (KagedWindow *self,
                           gint64       session_id)
{
  g_autoptr(GListModel) conversation = NULL;
  KagedRetryScheduler *scheduler = NULL;
  KagedRetryCoordinator *coordinator;

  g_return_if_fail (KAGED_IS_WINDOW (self));

  session_id = MAX (session_id, 0);
  if (session_id != self->session_id || !self->draft_shown)
    switch_draft (self, session_id);
  self->session_id = session_id;

  coordinator = get_coordinator (self);
  if (coordinator != NULL && self->session_id > 0)
    scheduler = kaged_retry_coordinator_get_scheduler (coordinator, self->session_id);
  kaged_retry_banner_set_scheduler (self->retry_banner, scheduler);
  g_signal_group_set_target (self->retry_signals, scheduler);
  kaged_window_update_composer_placeholder (self);

  if (self->session_id > 0 && kaged_window_get_manager (self) != NULL)
    conversation = kaged_window_open_conversation (self, self->session_id);
  set_conversation (self, conversation);
  kaged_model_chooser_set_session (self->model_chooser, self->session_id);

  self->follow_end = TRUE;
  self->opening = TRUE;
  kaged_window_update_jump (self);

  update_title (self);
  update_content (self);
  update_composer (self);
  select_shown_session (self);
  kaged_window_follow_end (self);
}

/**
 * kaged_window_get_session_id:
 *
 * Returns: the session the window shows, or 0 for none
 */
gint64
kaged_window_get_session_id (KagedWindow *self)
{
  g_return_val_if_fail (KAGED_IS_WINDOW (self), 0);

  return self->session_id;
}

/* ---------------------------------------------------------------------------
 * Following the end of the conversation
 * ------------------------------------------------------------------------- */

#define AT_END_SLACK 48.0

static gboolean
is_at_end (GtkAdjustment *adjustment)
{
  return gtk_adjustment_get_value (adjustment) + gtk_adjustment_get_page_size (adjustment) >=
         gtk_adjustment_get_upper (adjustment) - AT_END_SLACK;
}

static gboolean
scroll_to_end_cb (gpointer user_data)
{
  KagedWindow *self = user_data;
  GtkAdjustment *adjustment = gtk_scrolled_window_get_vadjustment (self->scroller);

  self->scroll_source = 0;

  if (self->follow_end)
    {
      if (self->span != NULL)
        kaged_list_span_show_tail (self->span);
      self->scrolling = TRUE;
      gtk_adjustment_set_value (adjustment,
                                gtk_adjustment_get_upper (adjustment) -
                                gtk_adjustment_get_page_size (adjustment));
      self->scrolling = FALSE;
      if (is_at_end (adjustment))
        self->opening = FALSE;
    }

  return G_SOURCE_REMOVE;
}

/**
 * kaged_window_follow_end:
 *
 * Keeps the end of the conversation in view, unless the user scrolled up.
 */
void
kaged_window_follow_end (KagedWindow *self)
{
  if (self->follow_end && self->scroll_source == 0)
    self->scroll_source = g_idle_add_full (G_PRIORITY_HIGH_IDLE + 20, scroll_to_end_cb, self, NULL);
}

static void scroll_to_end_at_layout (KagedWindow *self);

static void
vadjustment_value_changed_cb (KagedWindow   *self,
                              GtkAdjustment *adjustment)
{
  if (self->scrolling)
    return;

  /* Not the user's scrolling: a conversation just shown starts at its
   * top, and the list moves itself while it lays out rows whose height it
   * learns, keeping one of them in place. The end is still followed. */
  if (self->follow_end && (self->opening || self->laying_out))
    {
      scroll_to_end_at_layout (self);
      kaged_window_follow_end (self);
      return;
    }

  self->follow_end = is_at_end (adjustment) &&
                     (self->span == NULL || kaged_list_span_reaches_end (self->span));
  kaged_window_update_jump (self);
  kaged_window_messages_scrolled (self);
}

static void
layout_cb (GdkFrameClock *clock,
           KagedWindow   *self)
{
  if (!self->scroll_at_layout)
    return;

  self->scroll_at_layout = FALSE;
  /* Once a frame: a list that grows again after that waits for the idle. */
  if (self->layout_frame == gdk_frame_clock_get_frame_counter (clock))
    return;
  if (self->follow_end && (self->span == NULL || kaged_list_span_reaches_end (self->span)))
    {
      self->layout_frame = gdk_frame_clock_get_frame_counter (clock);
      g_clear_handle_id (&self->scroll_source, g_source_remove);
      scroll_to_end_cb (self);
    }
}

/*
 * A reply that grows at the end of the view is scrolled in the frame that
 * lays it out, once the list has its new size, and is drawn once per
 * growth, already scrolled: the layout phase goes on while widgets ask for
 * it. The idle is for growth outside of a frame.
 */
static void
scroll_to_end_at_layout (KagedWindow *self)
{
  GdkFrameClock *clock = gtk_widget_get_frame_clock (GTK_WIDGET (self));

  if (clock == NULL)
    return;

  if (clock != self->layout_clock)
    {
      if (self->layout_clock != NULL)
        g_clear_signal_handler (&self->layout_handler, self->layout_clock);
      g_set_weak_pointer (&self->layout_clock, clock);
      self->layout_handler = g_signal_connect_object (clock, "layout", G_CALLBACK (layout_cb),
                                                      self, G_CONNECT_AFTER);
    }

  self->scroll_at_layout = TRUE;
}

static void
frame_update_cb (GdkFrameClock *clock,
                 KagedWindow   *self)
{
  self->laying_out = TRUE;
}

static void
frame_laid_out_cb (GdkFrameClock *clock,
                   KagedWindow   *self)
{
  self->laying_out = FALSE;
}

/* The user's scrolling comes with events, before a frame's update; what
 * moves the list after the update and until the layout is done is GTK
 * laying it out (the update's own work, such as kinetic scrolling, comes
 * first). */
static void
watch_frame_phases (KagedWindow *self)
{
  GdkFrameClock *clock = gtk_widget_get_frame_clock (GTK_WIDGET (self));

  if (clock == self->phase_clock)
    return;

  if (self->phase_clock != NULL)
    {
      g_clear_signal_handler (&self->update_handler, self->phase_clock);
      g_clear_signal_handler (&self->laid_out_handler, self->phase_clock);
      g_clear_signal_handler (&self->after_paint_handler, self->phase_clock);
    }
  g_set_weak_pointer (&self->phase_clock, clock);
  self->laying_out = FALSE;
  if (clock == NULL)
    return;

  self->update_handler = g_signal_connect_object (clock, "update", G_CALLBACK (frame_update_cb),
                                                  self, G_CONNECT_AFTER);
  /* Once GTK has laid the window out; a frame without a layout ends with
   * its after-paint all the same. */
  self->laid_out_handler = g_signal_connect_object (clock, "layout", G_CALLBACK (frame_laid_out_cb),
                                                    self, G_CONNECT_AFTER);
  self->after_paint_handler = g_signal_connect_object (clock, "after-paint", G_CALLBACK (frame_laid_out_cb),
                                                       self, 0);
}

static void
vadjustment_bounds_changed_cb (KagedWindow   *self,
                               GParamSpec    *pspec,
                               GtkAdjustment *adjustment)
{
  if (self->follow_end)
    {
      scroll_to_end_at_layout (self);
      kaged_window_follow_end (self);
    }
  else
    {
      kaged_window_update_jump (self);
    }
  kaged_window_messages_scrolled (self);
}

/**
 * kaged_window_update_jump:
 *
 * Offers to jump to the end while the end is out of view. Opened at a
 * message, the end may be in view all the same (a short conversation):
 * nothing further to jump to, until it grows.
 */
void
kaged_window_update_jump (KagedWindow *self)
{
  GtkAdjustment *adjustment = gtk_scrolled_window_get_vadjustment (self->scroller);

  gtk_revealer_set_reveal_child (self->jump_revealer,
                                 !self->follow_end &&
                                 (!is_at_end (adjustment) ||
                                  (self->span != NULL && !kaged_list_span_reaches_end (self->span))));
}

/*
 * libadwaita 1.2's leaflet sets the CSS classes of the parts of its shadow
 * each time it is laid out, and GTK 4.8 then checks the style of every
 * widget after those parts under the leaflet — the whole conversation, on
 * every frame in which a streaming reply grows. Its pages come first, so
 * that nothing follows the parts: they are never picked or focused and the
 * leaflet draws them itself, after its pages, wherever they are.
 */
static void
put_pages_before_shadow (AdwLeaflet *leaflet)
{
  g_autoptr(GPtrArray) parts = g_ptr_array_new ();

  for (GtkWidget *child = gtk_widget_get_first_child (GTK_WIDGET (leaflet)); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    if (adw_leaflet_get_page (leaflet, child) == NULL)
      g_ptr_array_add (parts, child);

  for (guint i = 0; i < parts->len; i++)
    gtk_widget_insert_before (g_ptr_array_index (parts, i), GTK_WIDGET (leaflet), NULL);
}

static void
jump_to_bottom_action (GtkWidget  *widget,
                       const char *action_name,
                       GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);

  self->follow_end = TRUE;
  kaged_window_update_jump (self);
  scroll_to_end_cb (self);
  kaged_window_follow_end (self);
  kaged_composer_focus (self->composer);
}

/* ---------------------------------------------------------------------------
 * Posting and stopping
 * ------------------------------------------------------------------------- */

static void
composer_send_cb (KagedWindow   *self,
                  const char    *text,
                  KagedComposer *composer)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  KagedSessionManager *manager = kaged_window_get_manager (self);

  if (manager == NULL)
    return;

  if (self->session_id <= 0)
    {
      g_autoptr(KagedSession) session = NULL;

      /* Shown as it is created (the window follows the first conversation
       * to start), or here. */
      self->starting = TRUE;
      session = kaged_core_create_session (self->core, NULL, &error);
      if (session != NULL)
        kaged_window_show_session (self, kaged_session_get_id (session));
      self->starting = FALSE;
      if (session == NULL)
        {
          kaged_window_toast (self, error->message);
          return;
        }
      /* The text is the new conversation's now: kept there, until it is
       * sent, instead of as the text of a conversation not started. */
      save_draft (self);
      clear_draft (self, 0);
    }

  receipt = kaged_window_post (self, self->session_id, text, &error);
  if (receipt == NULL)
    {
      /* The text stays in the composer, to be shortened or sent again. */
      kaged_window_toast (self, error->message);
      return;
    }

  /* Sent: no longer a draft, at once, lest a crash bring it back. */
  clear_draft (self, self->session_id);
  self->loading_draft = TRUE;
  kaged_composer_clear (composer);
  self->loading_draft = FALSE;
  self->follow_end = TRUE;
  kaged_window_update_jump (self);
  kaged_window_follow_end (self);
  update_composer (self);
}

static void
composer_stop_cb (KagedWindow   *self,
                  KagedComposer *composer)
{
  g_autoptr(GError) error = NULL;

  if (!kaged_window_stop (self, &error))
    kaged_window_toast (self, error->message);

  /* Stop goes once the reply has stopped: typing goes on where it was. */
  kaged_composer_focus (composer);
}

/* ---------------------------------------------------------------------------
 * The engine's news
 * ------------------------------------------------------------------------- */

static void
session_changed_cb (KagedSessionManager *manager,
                    KagedSession        *session,
                    KagedWindow         *self)
{
  /* With no conversation shown yet, the first one to start shows. */
  if (self->session_id == 0 && !self->drafting)
    {
      kaged_window_show_session (self, kaged_session_get_id (session));
      return;
    }

  if (kaged_session_get_id (session) == self->session_id)
    {
      update_title (self);
      update_composer (self);
    }
}

static void
run_changed_cb (KagedSessionManager *manager,
                KagedRun            *run,
                KagedWindow         *self)
{
  if (kaged_run_get_session_id (run) != self->session_id)
    return;

  update_composer (self);
}

/* ---------------------------------------------------------------------------
 * The sidebar
 * ------------------------------------------------------------------------- */

static void
session_setup_cb (GtkSignalListItemFactory *factory,
                  GtkListItem              *item,
                  KagedWindow              *self)
{
  gtk_list_item_set_child (item, kaged_session_row_new (get_coordinator (self)));
}

/* A row keeps its conversation until it is bound to another: GTK 4.8
 * binds a row again whenever its selection changes, and a rename under
 * way in it must not end then. */
static void
session_bind_cb (GtkSignalListItemFactory *factory,
                 GtkListItem              *item,
                 KagedWindow              *self)
{
  kaged_session_row_set_session (KAGED_SESSION_ROW (gtk_list_item_get_child (item)),
                                 gtk_list_item_get_item (item));
}

static void
session_activate_cb (KagedWindow *self,
                     guint        position,
                     GtkListView *view)
{
  g_autoptr(KagedSession) session = NULL;

  session = g_list_model_get_item (G_LIST_MODEL (self->session_selection), position);
  if (session == NULL)
    return;

  self->drafting = FALSE;
  if (kaged_session_get_id (session) != self->session_id)
    kaged_window_show_session (self, kaged_session_get_id (session));
  adw_leaflet_navigate (self->leaflet, ADW_NAVIGATION_DIRECTION_FORWARD);
  kaged_composer_focus (self->composer);
}

/**
 * kaged_window_show_sessions_page:
 *
 * Shows the conversations in the sidebar, or that there are none yet.
 */
void
kaged_window_show_sessions_page (KagedWindow *self)
{
  gboolean none = self->session_list == NULL ||
                  g_list_model_get_n_items (G_LIST_MODEL (self->session_list)) == 0;

  gtk_stack_set_visible_child_name (self->sidebar_stack, none ? "no-sessions" : "sessions");
}

static void
session_list_items_changed_cb (KagedWindow *self)
{
  const char *page = gtk_stack_get_visible_child_name (self->sidebar_stack);

  select_shown_session (self);
  update_title (self);
  /* Search results stay until the search ends. */
  if (g_strcmp0 (page, "sessions") == 0 || g_strcmp0 (page, "no-sessions") == 0)
    kaged_window_show_sessions_page (self);
}

static void
new_conversation_action (GtkWidget  *widget,
                         const char *action_name,
                         GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);

  self->drafting = TRUE;
  kaged_window_show_session (self, 0);
  adw_leaflet_navigate (self->leaflet, ADW_NAVIGATION_DIRECTION_FORWARD);
  kaged_composer_focus (self->composer);
}

/* Below this width the model button's label gives up its room first, so
 * that the conversation's header fits a phone. It is the header's widest
 * form (about 470 px) with some margin: at this width or more the wide
 * header always fits, so the choice cannot change the width it is made on. */
#define NARROW_HEADER_WIDTH 500

/* A narrow header's model button is an icon: the model reads under the
 * conversation's title instead. */
static void
update_subtitle (KagedWindow *self)
{
  adw_window_title_set_subtitle (self->conversation_title,
                                 self->narrow_header
                                 ? kaged_model_chooser_get_label (self->model_chooser)
                                 : NULL);
}

static void
set_narrow_header (KagedWindow *self,
                   gboolean     narrow)
{
  /* Not yet, or no longer, built from its template. */
  if (self->model_chooser == NULL || narrow == self->narrow_header)
    return;

  self->narrow_header = narrow;
  kaged_model_chooser_set_narrow (self->model_chooser, narrow);
  update_subtitle (self);
}

/* Before the window has a size, and whenever it is given one by
 * gtk_window_set_default_size() or by the person resizing it, the size it
 * will get is its default size: choosing the header's form from it lets a
 * narrow window be that narrow, not as wide as the wide header. A
 * maximized or full-screen window keeps the default size it will have
 * again afterwards, which says nothing about its width now. */
static void
default_width_cb (KagedWindow *self)
{
  int width = 0;
  int height = 0;

  if (gtk_window_is_maximized (GTK_WINDOW (self)) || gtk_window_is_fullscreen (GTK_WINDOW (self)))
    return;

  gtk_window_get_default_size (GTK_WINDOW (self), &width, &height);
  if (width > 0)
    set_narrow_header (self, width < NARROW_HEADER_WIDTH);
}

/* The width the window really gets, from the window manager too (maximized
 * or tiled on a narrow screen), whatever its default size. Chosen before
 * the children are allocated, so they are laid out once, in the header's
 * form for that width. */
static void
kaged_window_size_allocate (GtkWidget *widget,
                            int        width,
                            int        height,
                            int        baseline)
{
  set_narrow_header (KAGED_WINDOW (widget), width < NARROW_HEADER_WIDTH);

  GTK_WIDGET_CLASS (kaged_window_parent_class)->size_allocate (widget, width, height, baseline);
  KAGED_WINDOW (widget)->laid_out = TRUE;
}

static void
show_sidebar_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);

  adw_leaflet_navigate (self->leaflet, ADW_NAVIGATION_DIRECTION_BACK);
}

static void
rename_session_action (GtkWidget  *widget,
                       const char *action_name,
                       GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);
  g_autoptr(GError) error = NULL;
  const char *title = NULL;
  gint64 session_id = 0;

  g_variant_get (parameter, "(x&s)", &session_id, &title);

  if (self->session_list == NULL)
    return;

  if (!kaged_session_list_rename (self->session_list, session_id, title, &error))
    kaged_window_toast (self, error->message);
}

static void
rename_shown_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);
  GtkWidget *child;

  /* The row of the shown conversation, among the rows on screen. */
  for (child = gtk_widget_get_first_child (GTK_WIDGET (self->session_view));
       child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *row = gtk_widget_get_first_child (child);
      KagedSession *session;

      if (!KAGED_IS_SESSION_ROW (row))
        continue;

      session = kaged_session_row_get_session (KAGED_SESSION_ROW (row));
      if (session != NULL && kaged_session_get_id (session) == self->session_id)
        {
          adw_leaflet_navigate (self->leaflet, ADW_NAVIGATION_DIRECTION_BACK);
          kaged_session_row_start_rename (KAGED_SESSION_ROW (row));
          return;
        }
    }
}

/* ---------------------------------------------------------------------------
 * Set-up
 * ------------------------------------------------------------------------- */

static gboolean
kaged_window_close_request (GtkWindow *window)
{
  KagedWindow *self = KAGED_WINDOW (window);

  kaged_window_save_state (self);
  save_draft (self);
  kaged_window_finish_deletes (self);

  return GTK_WINDOW_CLASS (kaged_window_parent_class)->close_request (window);
}

static void
kaged_window_disconnect_core (KagedWindow *self)
{
  KagedSessionManager *manager = kaged_window_get_manager (self);

  if (self->core == NULL)
    return;

  save_draft (self);
  self->draft_shown = FALSE;
  kaged_window_finish_deletes (self);
  if (manager != NULL)
    g_signal_handlers_disconnect_by_data (manager, self);
  g_signal_handlers_disconnect_by_data (self->core, self);
  if (self->session_list != NULL)
    g_signal_handlers_disconnect_by_data (self->session_list, self);

  gtk_single_selection_set_model (self->session_selection, NULL);
  g_clear_object (&self->session_list);
  set_conversation (self, NULL);
  g_clear_object (&self->core);
}

static void
kaged_window_dispose (GObject *object)
{
  KagedWindow *self = KAGED_WINDOW (object);

  kaged_window_disconnect_core (self);
  kaged_window_messages_dispose (self);
  kaged_window_search_dispose (self);
  g_clear_handle_id (&self->draft_source, g_source_remove);
  g_clear_handle_id (&self->scroll_source, g_source_remove);
  if (self->layout_clock != NULL)
    g_clear_signal_handler (&self->layout_handler, self->layout_clock);
  g_clear_weak_pointer (&self->layout_clock);
  g_clear_weak_pointer (&self->last_focus);
  if (self->phase_clock != NULL)
    {
      g_clear_signal_handler (&self->update_handler, self->phase_clock);
      g_clear_signal_handler (&self->laid_out_handler, self->phase_clock);
      g_clear_signal_handler (&self->after_paint_handler, self->phase_clock);
    }
  g_clear_weak_pointer (&self->phase_clock);
  g_clear_object (&self->message_selection);
  g_clear_object (&self->session_signals);
  g_clear_object (&self->retry_signals);

  gtk_widget_dispose_template (GTK_WIDGET (self), KAGED_TYPE_WINDOW);

  G_OBJECT_CLASS (kaged_window_parent_class)->dispose (object);
}

/* The icons a conversation shows that the empty window does not: on its
 * messages, in the composer while a reply streams, in the sidebar's rows
 * and in the retry banner. */
static const char * const conversation_icons[] = {
  "document-edit-symbolic",
  "edit-copy-symbolic",
  "view-refresh-symbolic",
  "help-about-symbolic",
  "dialog-warning-symbolic",
  "go-previous-symbolic",
  "go-next-symbolic",
  "go-bottom-symbolic",
  "media-playback-stop-symbolic",
  "view-more-symbolic",
  "alarm-symbolic",
  "network-offline-symbolic",
};

static gboolean
preload_icons_cb (gpointer user_data)
{
  GtkWidget *widget = user_data;

  for (guint i = 0; i < G_N_ELEMENTS (conversation_icons); i++)
    g_object_unref (kaged_icon_preload (gtk_widget_get_display (widget), conversation_icons[i],
                                        gtk_widget_get_scale_factor (widget)));
  /* A reply's spinner, while it waits for words. */
  g_object_unref (kaged_icon_preload_style (gtk_widget_get_display (widget), "process-working-symbolic",
                                            gtk_widget_get_scale_factor (widget)));

  return G_SOURCE_REMOVE;
}

/* Once the window shows, what the first message and the first code block
 * of a reply need is loaded ahead, rather than in the frame that shows
 * them. */
static gboolean
first_frame_cb (GtkWidget     *widget,
                GdkFrameClock *clock,
                gpointer       user_data)
{
  kaged_code_block_warm_up (gtk_widget_get_display (widget), gtk_widget_get_scale_factor (widget));
  g_idle_add_full (G_PRIORITY_LOW, preload_icons_cb, g_object_ref (widget), g_object_unref);

  return G_SOURCE_REMOVE;
}

static void
kaged_window_finalize (GObject *object)
{
  KagedWindow *self = KAGED_WINDOW (object);

  g_clear_object (&self->settings);
  g_clear_object (&self->session_selection);
  g_clear_pointer (&self->deleting, g_hash_table_unref);

  G_OBJECT_CLASS (kaged_window_parent_class)->finalize (object);
}

static void
kaged_window_class_init (KagedWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  GtkWindowClass *window_class = GTK_WINDOW_CLASS (klass);

  g_type_ensure (KAGED_TYPE_RETRY_BANNER);
  g_type_ensure (KAGED_TYPE_COMPOSER);
  g_type_ensure (KAGED_TYPE_MODEL_CHOOSER);

  object_class->dispose = kaged_window_dispose;
  object_class->finalize = kaged_window_finalize;

  widget_class->size_allocate = kaged_window_size_allocate;

  window_class->close_request = kaged_window_close_request;

  gtk_widget_class_set_template_from_resource (widget_class, APPLICATION_PATH "/kaged-window.ui");
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, toast_overlay);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, leaflet);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, new_button);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, search_button);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, search_bar);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, search_entry);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, sidebar_stack);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, session_view);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, results_view);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, header_bar);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, conversation_title);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, model_chooser);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, primary_menu_button);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, sidebar_menu_button);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, content_stack);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, empty_page);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, scroller);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, message_view);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, jump_revealer);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, retry_banner);
  gtk_widget_class_bind_template_child (widget_class, KagedWindow, composer);
  gtk_widget_class_bind_template_callback (widget_class, composer_send_cb);
  gtk_widget_class_bind_template_callback (widget_class, composer_stop_cb);
  gtk_widget_class_bind_template_callback (widget_class, composer_changed_cb);

  gtk_widget_class_install_action (widget_class, "win.new-conversation", NULL,
                                   new_conversation_action);
  gtk_widget_class_install_action (widget_class, "win.show-sidebar", NULL, show_sidebar_action);
  gtk_widget_class_install_action (widget_class, "win.jump-to-bottom", NULL,
                                   jump_to_bottom_action);
  gtk_widget_class_install_action (widget_class, "win.rename-conversation", NULL,
                                   rename_shown_action);
  gtk_widget_class_install_action (widget_class, "session.rename", "(xs)", rename_session_action);

  kaged_window_class_init_messages (widget_class);
  kaged_window_class_init_sessions (widget_class);
  kaged_window_class_init_search (widget_class);
  kaged_window_class_init_export (widget_class);

  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_w, GDK_CONTROL_MASK,
                                       "window.close", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_n, GDK_CONTROL_MASK,
                                       "win.new-conversation", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_F2, 0,
                                       "win.rename-conversation", NULL);
}

/* The list item of the latest message on screen, if any. */
static GtkWidget *
latest_message_item (KagedWindow *self)
{
  for (GtkWidget *item = gtk_widget_get_last_child (GTK_WIDGET (self->message_view));
       item != NULL;
       item = gtk_widget_get_prev_sibling (item))
    {
      GtkWidget *row = gtk_widget_get_first_child (item);

      if (KAGED_IS_MESSAGE_ROW (row) && kaged_message_row_get_message (KAGED_MESSAGE_ROW (row)) != NULL &&
          gtk_widget_get_mapped (item))
        return item;
    }

  return NULL;
}

/* Going back from the composer (Shift+Tab), the list would focus the first
 * message it shows, scrolled away from the end: the latest one is what
 * comes before the composer. */
static void
focus_widget_changed_cb (KagedWindow *self)
{
  GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (self));
  GtkWidget *from = self->last_focus;

  g_set_weak_pointer (&self->last_focus, focus);

  if (focus != NULL && from != NULL &&
      gtk_widget_is_ancestor (from, GTK_WIDGET (self->composer)) &&
      gtk_widget_is_ancestor (focus, GTK_WIDGET (self->message_view)))
    {
      GtkWidget *latest = latest_message_item (self);

      if (latest != NULL && focus != latest && !gtk_widget_is_ancestor (focus, latest))
        gtk_widget_grab_focus (latest);
    }
}

/* A window made narrow shows one page: the one the person was in, the
 * sidebar if the focus is there (searching, renaming), else the
 * conversation, whatever page the wide window last navigated to. A window
 * that opens narrow opens on the page it chose (the list of conversations,
 * or what to do on a first start). */
static void
leaflet_folded_cb (KagedWindow *self)
{
  GtkWidget *sidebar;
  GtkWidget *focus;

  if (!adw_leaflet_get_folded (self->leaflet) || !self->laid_out)
    return;

  sidebar = adw_leaflet_get_child_by_name (self->leaflet, "sidebar");
  focus = gtk_root_get_focus (GTK_ROOT (self));
  adw_leaflet_set_visible_child_name (self->leaflet,
                                      focus != NULL && gtk_widget_is_ancestor (focus, sidebar)
                                      ? "sidebar" : "content");
}

/* The banner's buttons go with it when its retry is cancelled or
 * resolved: the focus they had goes back to the composer, where typing
 * goes, instead of nowhere. */
static void
focus_widget_cb (KagedWindow *self)
{
  GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (self));
  gboolean was_in_banner = self->focus_in_banner;

  self->focus_in_banner = focus != NULL && gtk_widget_is_ancestor (focus, GTK_WIDGET (self->retry_banner));
  if (focus == NULL && was_in_banner && !gtk_widget_in_destruction (GTK_WIDGET (self)))
    kaged_composer_focus (self->composer);
}

static void
kaged_window_init (KagedWindow *self)
{
  GtkListItemFactory *factory;
  GtkAdjustment *vadjustment;

  gtk_widget_init_template (GTK_WIDGET (self));
  put_pages_before_shadow (self->leaflet);
  g_signal_connect_object (self->leaflet, "notify::folded", G_CALLBACK (leaflet_folded_cb), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect (self, "notify::focus-widget", G_CALLBACK (focus_widget_cb), NULL);
  gtk_widget_add_tick_callback (GTK_WIDGET (self), first_frame_cb, NULL, NULL);
  g_signal_connect (self, "notify::default-width", G_CALLBACK (default_width_cb), NULL);
  g_signal_connect_object (self->model_chooser, "notify::label", G_CALLBACK (update_subtitle), self,
                           G_CONNECT_SWAPPED);

#if DEVELOPMENT_BUILD
  gtk_widget_add_css_class (GTK_WIDGET (self), "devel");
  gtk_window_set_title (GTK_WINDOW (self), _("Kaged (Development)"));
#endif

  self->deleting = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
  self->follow_end = TRUE;

  /* Messages and a reply's details are selectable text: the focus that
   * reaches one, by Tab or when a popover opens, would select all of it,
   * and what is typed next would go nowhere. */
  g_object_set (gtk_widget_get_settings (GTK_WIDGET (self)), "gtk-label-select-on-focus", FALSE, NULL);

  self->retry_signals = g_signal_group_new (KAGED_TYPE_RETRY_SCHEDULER);
  g_signal_group_connect_swapped (self->retry_signals, "changed",
                                  G_CALLBACK (kaged_window_update_retry_pending), self);

  self->session_signals = g_signal_group_new (KAGED_TYPE_SESSION);
  g_signal_group_connect_swapped (self->session_signals, "notify::title",
                                  G_CALLBACK (update_title), self);

  self->session_selection = gtk_single_selection_new (NULL);
  gtk_single_selection_set_autoselect (self->session_selection, FALSE);
  gtk_single_selection_set_can_unselect (self->session_selection, TRUE);
  /* One click opens a conversation, so GTK selects the row under the
   * pointer, and the one the arrow keys reach: the row marked stays the
   * conversation shown, and changes when another one opens. */
  g_signal_connect_object (self->session_selection, "notify::selected",
                           G_CALLBACK (select_shown_session), self, G_CONNECT_SWAPPED);
  gtk_list_view_set_model (self->session_view, GTK_SELECTION_MODEL (self->session_selection));

  factory = gtk_signal_list_item_factory_new ();
  g_signal_connect (factory, "setup", G_CALLBACK (session_setup_cb), self);
  g_signal_connect (factory, "bind", G_CALLBACK (session_bind_cb), self);
  gtk_list_view_set_factory (self->session_view, factory);
  g_object_unref (factory);
  g_signal_connect_swapped (self->session_view, "activate", G_CALLBACK (session_activate_cb), self);

  factory = kaged_window_message_factory_new (self);
  gtk_list_view_set_factory (self->message_view, factory);
  g_object_unref (factory);

  vadjustment = gtk_scrolled_window_get_vadjustment (self->scroller);
  g_signal_connect_object (vadjustment, "value-changed",
                           G_CALLBACK (vadjustment_value_changed_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (vadjustment, "notify::upper",
                           G_CALLBACK (vadjustment_bounds_changed_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (vadjustment, "notify::page-size",
                           G_CALLBACK (vadjustment_bounds_changed_cb), self, G_CONNECT_SWAPPED);

  kaged_window_init_search (self);
  g_signal_connect (self, "notify::focus-widget", G_CALLBACK (focus_widget_changed_cb), NULL);
  g_signal_connect_after (self, "realize", G_CALLBACK (watch_frame_phases), NULL);
  g_signal_connect (self, "unrealize", G_CALLBACK (watch_frame_phases), NULL);

  self->settings = g_settings_new (BASE_APPLICATION_ID);
  kaged_window_restore_state (self);
  /* The provider follows the preferences; so does whether one is usable. */
  g_signal_connect_object (self->settings, "changed", G_CALLBACK (update_composer), self,
                           G_CONNECT_SWAPPED | G_CONNECT_AFTER);

  update_content (self);
  update_composer (self);

  /* Ready to write in at once. */
  kaged_composer_focus (self->composer);
}

/**
 * kaged_window_new:
 * @application: the application the window belongs to
 *
 * Returns: (transfer full): a new main window
 */
KagedWindow *
kaged_window_new (GtkApplication *application)
{
  g_return_val_if_fail (GTK_IS_APPLICATION (application), NULL);

  return g_object_new (KAGED_TYPE_WINDOW,
                       "application", application,
                       NULL);
}

/**
 * kaged_window_set_core:
 * @core: (nullable): the engine behind the window
 *
 * Connects the window to the running engine and shows the conversation
 * changed most recently.
 */
void
kaged_window_set_core (KagedWindow *self,
                       KagedCore   *core)
{
  KagedSessionManager *manager;
  gint64 session_id = 0;

  g_return_if_fail (KAGED_IS_WINDOW (self));
  g_return_if_fail (!core || KAGED_IS_CORE (core));

  kaged_window_disconnect_core (self);
  self->session_id = 0;
  kaged_model_chooser_set_core (self->model_chooser, core);

  if (core == NULL)
    {
      kaged_window_show_session (self, 0);
      return;
    }

  self->core = g_object_ref (core);
  manager = kaged_window_get_manager (self);

  g_signal_connect (manager, "session-changed", G_CALLBACK (session_changed_cb), self);
  g_signal_connect (manager, "run-changed", G_CALLBACK (run_changed_cb), self);
  /* Whether a message can be sent follows the profile replies come from. */
  g_signal_connect_object (core, "notify::profile", G_CALLBACK (update_composer), self,
                           G_CONNECT_SWAPPED);

  self->session_list = kaged_session_list_new (manager);
  g_signal_connect_object (self->session_list, "items-changed",
                           G_CALLBACK (session_list_items_changed_cb), self,
                           G_CONNECT_SWAPPED | G_CONNECT_AFTER);
  gtk_single_selection_set_model (self->session_selection, G_LIST_MODEL (self->session_list));
  kaged_window_show_sessions_page (self);

  if (g_list_model_get_n_items (G_LIST_MODEL (self->session_list)) > 0)
    {
      g_autoptr(KagedSession) newest = g_list_model_get_item (G_LIST_MODEL (self->session_list), 0);

      session_id = kaged_session_get_id (newest);
    }

  /* With no conversation yet, a folded window opens on what to do. */
  if (session_id == 0)
    adw_leaflet_set_visible_child_name (self->leaflet, "content");

  kaged_window_show_session (self, session_id);
}
