/* kaged-window-private.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <adwaita.h>

#include "kaged-composer.h"
#include "kaged-core.h"
#include "kaged-list-span.h"
#include "kaged-model-chooser.h"
#include "kaged-retry-banner.h"
#include "kaged-session-list.h"
#include "kaged-window.h"

G_BEGIN_DECLS

struct _KagedWindow
{
  AdwApplicationWindow  parent_instance;

  GSettings            *settings;
  KagedCore            *core;
  KagedSessionList     *session_list;
  GtkSingleSelection   *session_selection;
  GListModel           *conversation;
  KagedListSpan        *span;       /* the part of @conversation the list shows */
  GtkSelectionModel    *message_selection;
  GSignalGroup         *session_signals; /* the shown KagedSession */
  GSignalGroup         *retry_signals;   /* the shown session's KagedRetryScheduler */
  GHashTable           *deleting;   /* gint64 session ids waiting for their toast → whether each was shown */
  gint64                session_id;
  guint                 scroll_source;
  GdkFrameClock        *layout_clock; /* weak; scrolls to the end in its layout phase */
  gulong                layout_handler;
  gint64                layout_frame;  /* the frame it last scrolled in */
  guint                 search_source;
  char                 *searched;       /* the words the results are for */
  guint                 grow_source;
  GtkWidget            *last_focus;   /* weak; where the focus was before */
  guint                 jump_source;
  gint64                found_id;     /* the message a search result opened at, marked a moment */
  guint                 found_source;
  guint                 draft_source;  /* keeps the composer's text a moment after typing */
  guint                 follow_end : 1;
  guint                 scrolling : 1;
  guint                 opening : 1;  /* not yet scrolled to the end it opened at */
  guint                 laying_out : 1;  /* from a frame's update to its layout's end */
  GdkFrameClock        *phase_clock;     /* weak; tells laying_out */
  gulong                update_handler;
  gulong                laid_out_handler;
  gulong                after_paint_handler;
  guint                 scroll_at_layout : 1;
  guint                 drafting : 1;
  guint                 draft_shown : 1;   /* the composer holds the shown conversation's draft */
  guint                 loading_draft : 1;
  guint                 starting : 1;   /* the new conversation's first message starts it */
  guint                 search_from_list : 1;  /* the search started in the list, not a conversation */
  guint                 search_noted : 1;      /* Ctrl+F noted where, before opening it */
  guint                 narrow_header : 1;
  guint                 laid_out : 1;   /* allocated once: a fold is the person's resize */
  guint                 focus_in_banner : 1;

  /* Template children */
  AdwToastOverlay      *toast_overlay;
  AdwLeaflet           *leaflet;
  GtkButton            *new_button;
  GtkToggleButton      *search_button;
  GtkSearchBar         *search_bar;
  GtkSearchEntry       *search_entry;
  GtkStack             *sidebar_stack;
  GtkListView          *session_view;
  GtkListBox           *results_view;
  AdwHeaderBar         *header_bar;
  AdwWindowTitle       *conversation_title;
  KagedModelChooser    *model_chooser;
  GtkMenuButton        *primary_menu_button;
  GtkMenuButton        *sidebar_menu_button;
  GtkStack             *content_stack;
  AdwStatusPage        *empty_page;
  GtkScrolledWindow    *scroller;
  GtkListView          *message_view;
  GtkRevealer          *jump_revealer;
  KagedRetryBanner     *retry_banner;
  KagedComposer        *composer;
};

/* kaged-window.c */
KagedSessionManager *kaged_window_get_manager          (KagedWindow      *self);
void                 kaged_window_show_sessions_page   (KagedWindow      *self);
void                 kaged_window_toast                (KagedWindow      *self,
                                                        const char       *title);
void                 kaged_window_follow_end           (KagedWindow      *self);

/* kaged-window-messages.c: the conversation and what is done to it */
void                 kaged_window_class_init_messages  (GtkWidgetClass   *widget_class);
void                 kaged_window_show_latest_versions (KagedWindow      *self);
GtkListItemFactory  *kaged_window_message_factory_new  (KagedWindow      *self);
GListModel          *kaged_window_open_conversation    (KagedWindow      *self,
                                                        gint64            session_id);
KagedReceipt        *kaged_window_post                 (KagedWindow      *self,
                                                        gint64            session_id,
                                                        const char       *content,
                                                        GError          **error);
gboolean             kaged_window_stop                 (KagedWindow      *self,
                                                        GError          **error);
KagedListSpan       *kaged_window_span_conversation    (KagedWindow      *self,
                                                        GListModel       *conversation);
void                 kaged_window_update_composer_placeholder (KagedWindow *self);
void                 kaged_window_update_retry_pending (KagedWindow      *self);
GtkWidget           *kaged_window_new_edit_dialog      (KagedWindow      *self,
                                                        gint64            message_id,
                                                        const char       *text);
void                 kaged_window_messages_scrolled    (KagedWindow      *self);
void                 kaged_window_update_jump          (KagedWindow      *self);
void                 kaged_window_show_message         (KagedWindow      *self,
                                                        gint64            session_id,
                                                        gint64            message_id);
void                 kaged_window_messages_dispose     (KagedWindow      *self);

/* kaged-window-sessions.c: deleting conversations, with Undo */
void                 kaged_window_class_init_sessions  (GtkWidgetClass   *widget_class);
void                 kaged_window_finish_deletes       (KagedWindow      *self);

/* kaged-window-export.c: the conversation as Markdown */
void                 kaged_window_class_init_export    (GtkWidgetClass   *widget_class);

/* kaged-window-search.c: searching titles and messages */
void                 kaged_window_class_init_search    (GtkWidgetClass   *widget_class);
void                 kaged_window_init_search          (KagedWindow      *self);
void                 kaged_window_search_dispose       (KagedWindow      *self);

G_END_DECLS
