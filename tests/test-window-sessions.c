/* test-window-sessions.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The window around a conversation, driven as a person would: the sidebar
 * of conversations (new, rename, delete with Undo), search, the draft each
 * conversation keeps, long conversations opening at their end, and windows
 * as narrow as a phone, against a fake provider on 127.0.0.1.
 */

#include "config.h"

#include <adwaita.h>
#include <gdk/x11/gdkx.h>
#include <X11/Xatom.h>
#include <X11/Xlib.h>

#include "kaged-conversation-private.h"
#include "kaged-model-chooser.h"
#include "kaged-retry-banner.h"
#include "kaged-retry-text.h"
#include "kaged-session-list.h"
#include "kaged-session-row.h"
#include "kaged-window-fixture.h"

/* LeakSanitizer (the sanitizers setup, meson.build): libadwaita 1.2's
 * AdwLeaflet drops a container render node made in its own snapshot while
 * it is folded (/window/narrow folds it). The allocation's stack is
 * gtk_snapshot_pop() called from the leaflet's snapshot (the first frame
 * of libadwaita-1.so.0 on it lies in adw-leaflet's code, whose names are
 * not exported), with what the node holds leaking indirectly. Kaged makes
 * no render node of its own in this program's windows other than through
 * the Markdown view, which test-message-row checks without this
 * suppression. */
const char *__lsan_default_suppressions (void);

const char *
__lsan_default_suppressions (void)
{
  return "leak:gsk_container_node_new\n";
}

static gboolean model_label_room (Fixture       *fixture,
                                  gconstpointer  data);
static gboolean entry_has_focus  (Fixture       *fixture,
                                  gconstpointer  data);

/* Escape as @widget's key controllers get it; whether one handled it. */
static gboolean
press_escape (GtkWidget *widget)
{
  g_autoptr(GListModel) controllers = gtk_widget_observe_controllers (widget);

  for (guint i = 0; i < g_list_model_get_n_items (controllers); i++)
    {
      g_autoptr(GObject) controller = g_list_model_get_item (controllers, i);
      gboolean handled = FALSE;

      if (!GTK_IS_EVENT_CONTROLLER_KEY (controller))
        continue;
      g_signal_emit_by_name (controller, "key-pressed", GDK_KEY_Escape, 0, 0, &handled);
      if (handled)
        return TRUE;
    }

  return FALSE;
}

/* Down as @widget's shortcut controllers get it; whether one took it. One
 * that none takes goes on to GTK's own moving of the focus by arrows. */
static gboolean
press_down (GtkWidget *widget)
{
  g_autoptr(GListModel) controllers = gtk_widget_observe_controllers (widget);
  g_autoptr(GtkShortcutTrigger) down = gtk_keyval_trigger_new (GDK_KEY_Down, 0);

  for (guint i = 0; i < g_list_model_get_n_items (controllers); i++)
    {
      g_autoptr(GObject) controller = g_list_model_get_item (controllers, i);

      if (!GTK_IS_SHORTCUT_CONTROLLER (controller))
        continue;
      for (guint j = 0; j < g_list_model_get_n_items (G_LIST_MODEL (controller)); j++)
        {
          g_autoptr(GtkShortcut) shortcut = g_list_model_get_item (G_LIST_MODEL (controller), j);
          GtkShortcutTrigger *trigger = gtk_shortcut_get_trigger (shortcut);

          if (GTK_IS_ALTERNATIVE_TRIGGER (trigger))
            trigger = gtk_alternative_trigger_get_first (GTK_ALTERNATIVE_TRIGGER (trigger));
          if (gtk_shortcut_trigger_equal (trigger, down) &&
              gtk_shortcut_action_activate (gtk_shortcut_get_action (shortcut), 0, widget,
                                            gtk_shortcut_get_arguments (shortcut)))
            return TRUE;
        }
    }

  return FALSE;
}

static const char *
empty_page_says (Fixture *fixture)
{
  return adw_status_page_get_description (child (fixture, "empty_page"));
}

/* The first page names where replies will come from: the provider the
 * window was given, whichever it is. */
static void
test_empty_names_provider (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(KagedCore) core = NULL;
  g_autoptr(KagedProfile) remote = NULL;
  g_autoptr(KagedProfile) ollama = NULL;

  remote = kaged_profile_new ("Work", KAGED_PROVIDER_KIND_OPENAI,
                              "http://127.0.0.1:9/v1", "demo");
  kaged_profile_set_id (remote, "work");
  core = show_with_core (fixture, KAGED_CORE_FLAGS_NONE, remote);

  g_assert_nonnull (strstr (empty_page_says (fixture), "Replies come from Work, with the model demo."));
  g_assert_null (strstr (empty_page_says (fixture), "Ollama"));
  g_assert_true (gtk_widget_get_visible (adw_status_page_get_child (child (fixture, "empty_page"))));

  /* One from the command line (it has no id) says where it is. */
  kaged_profile_set_id (remote, NULL);
  kaged_core_set_profile (core, NULL);
  kaged_core_set_profile (core, remote);
  g_assert_nonnull (strstr (empty_page_says (fixture),
                            "Replies come from the server at http://127.0.0.1:9/v1, given on the "
                            "command line, with the model demo."));
  /* The preferences do not choose it: no button to them. */
  g_assert_false (gtk_widget_get_visible (adw_status_page_get_child (child (fixture, "empty_page"))));

  /* A local Ollama is called so. */
  ollama = kaged_profile_new ("Default", KAGED_PROVIDER_KIND_OLLAMA,
                              "http://localhost:11434", "llama3.2");
  kaged_core_set_profile (core, ollama);
  g_assert_nonnull (strstr (empty_page_says (fixture),
                            "Replies come from Ollama on this computer, with the model llama3.2."));

  /* Without a usable provider, what to do about it. */
  kaged_core_set_profile (core, NULL);
  g_assert_nonnull (strstr (empty_page_says (fixture), "choose one in Preferences"));
  g_assert_null (strstr (empty_page_says (fixture), "Replies come from"));
  g_assert_true (gtk_widget_get_visible (adw_status_page_get_child (child (fixture, "empty_page"))));

  kaged_window_set_core (fixture->window, fixture->core);
  kaged_core_shutdown (core);
}

static gboolean
leaflet_folded (Fixture       *fixture,
                gconstpointer  data)
{
  return adw_leaflet_get_folded (child (fixture, "leaflet")) == GPOINTER_TO_INT (data);
}

static gboolean
child_mapped (Fixture       *fixture,
              gconstpointer  data)
{
  return gtk_widget_get_mapped (child (fixture, data));
}

/* Whether the conversation's title reads whole in the header. */
static gboolean
title_reads_whole (Fixture       *fixture,
                   gconstpointer  data)
{
  AdwWindowTitle *title = child (fixture, "conversation_title");
  GtkLabel *label = find_label (GTK_WIDGET (title), adw_window_title_get_title (title), TRUE);

  return label != NULL && !pango_layout_is_ellipsized (gtk_label_get_layout (label));
}

/* At 360 px the sidebar and the conversation take turns. */
static void
test_narrow (Fixture       *fixture,
             gconstpointer  data)
{
  AdwLeaflet *leaflet = child (fixture, "leaflet");
  GtkListView *sessions = child (fixture, "session_view");
  AdwWindowTitle *title = child (fixture, "conversation_title");
  GtkSettings *settings = gtk_widget_get_settings (GTK_WIDGET (fixture->window));
  g_autofree char *layout = NULL;
  int minimum = 0;

  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 360, 640);
  g_assert_true (wait_for (fixture, leaflet_folded, GINT_TO_POINTER (TRUE)));

  /* A first start shows what to do, not an empty list of conversations. */
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "content");
  g_assert_cmpstr (gtk_stack_get_visible_child_name (child (fixture, "content_stack")), ==, "empty");
  g_assert_true (gtk_widget_get_mapped (child (fixture, "empty_page")));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.show-sidebar", NULL));
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "sidebar");
  /* The main menu (Preferences, Shortcuts, About) is on this page too. */
  g_assert_true (wait_for (fixture, child_mapped, "sidebar_menu_button"));
  g_assert_true (gtk_menu_button_get_menu_model (child (fixture, "sidebar_menu_button")) ==
                 gtk_menu_button_get_menu_model (child (fixture, "primary_menu_button")));

  /* New Conversation leads from the sidebar to the composer. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.new-conversation", NULL));
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "content");
  send_text (fixture, "Why is the sky blue?");
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "content");
  g_assert_true (wait_for (fixture, reply_on_screen, REPLY));

  /* Everything on the conversation's page, its header too, fits in 360 px. */
  gtk_widget_measure (GTK_WIDGET (leaflet), GTK_ORIENTATION_HORIZONTAL, -1, &minimum, NULL, NULL, NULL);
  g_assert_cmpint (minimum, <=, 360);
  g_assert_cmpint (gtk_widget_get_width (GTK_WIDGET (leaflet)), <=, 360);

  /* The model button is an icon there, and the model reads under the
   * conversation's title, which reads whole beside GNOME's title buttons
   * (close alone). */
  g_assert_true (wait_for (fixture, model_label_room, GINT_TO_POINTER (48)));
  g_assert_cmpstr (adw_window_title_get_subtitle (title), ==, "test-model");
  g_object_get (settings, "gtk-decoration-layout", &layout, NULL);
  g_object_set (settings, "gtk-decoration-layout", "appmenu:close", NULL);
  g_assert_true (wait_for (fixture, title_reads_whole, NULL));
  g_object_set (settings, "gtk-decoration-layout", layout, NULL);

  /* Back to the conversations, and into one again. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.show-sidebar", NULL));
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "sidebar");
  g_signal_emit_by_name (sessions, "activate", 0);
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "content");

  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 1000, 700);
  g_assert_true (wait_for (fixture, leaflet_folded, GINT_TO_POINTER (FALSE)));
  /* Wide, the conversation's header has it: once is enough. */
  g_assert_false (gtk_widget_get_visible (child (fixture, "sidebar_menu_button")));
  /* The model button reads the model again, and only it. */
  g_assert_cmpstr (adw_window_title_get_subtitle (title), ==, "");

  /* A wide window keeps room for the model's name (20 characters and more). */
  for (guint i = 0; i < 20; i++)
    g_main_context_iteration (NULL, FALSE);
  g_assert_cmpint (gtk_widget_get_width (child (fixture, "model_chooser")), >=, 150);
}

/* A window made narrow keeps the page the person was in: the conversation
 * they were writing in, or the sidebar they were searching. */
static void
test_narrow_keeps_place (Fixture       *fixture,
                         gconstpointer  data)
{
  AdwLeaflet *leaflet = child (fixture, "leaflet");

  g_assert_true (wait_for (fixture, leaflet_folded, GINT_TO_POINTER (FALSE)));
  send_text (fixture, "Why is the sky blue?");
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));
  g_assert_true (wait_for (fixture, reply_on_screen, REPLY));
  g_assert_true (composer_has_focus (fixture, NULL));

  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 360, 640);
  g_assert_true (wait_for (fixture, leaflet_folded, GINT_TO_POINTER (TRUE)));
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "content");
  g_assert_true (wait_for (fixture, reply_on_screen, REPLY));
  g_assert_true (wait_for (fixture, child_mapped, "composer"));

  /* Searching, in a wide window: made narrow, it stays with the search. */
  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 1000, 700);
  g_assert_true (wait_for (fixture, leaflet_folded, GINT_TO_POINTER (FALSE)));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.search", NULL));
  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 360, 640);
  g_assert_true (wait_for (fixture, leaflet_folded, GINT_TO_POINTER (TRUE)));
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "sidebar");
  g_assert_true (gtk_search_bar_get_search_mode (child (fixture, "search_bar")));
  g_assert_true (wait_for (fixture, child_mapped, "search_entry"));

  /* Back to writing, in a wide window again. */
  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 1000, 700);
  g_assert_true (wait_for (fixture, leaflet_folded, GINT_TO_POINTER (FALSE)));
  kaged_composer_focus (fixture->composer);
  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 360, 640);
  g_assert_true (wait_for (fixture, leaflet_folded, GINT_TO_POINTER (TRUE)));
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "content");

  /* A window that opens narrow, with conversations, opens on their list. */
  gtk_window_destroy (GTK_WINDOW (fixture->window));
  g_assert_null (fixture->window);
  fixture->window = kaged_window_new (fixture->application);
  g_object_add_weak_pointer (G_OBJECT (fixture->window), (gpointer *)&fixture->window);
  kaged_window_set_core (fixture->window, fixture->core);
  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 360, 640);
  gtk_window_present (GTK_WINDOW (fixture->window));
  fixture->composer = child (fixture, "composer");
  leaflet = child (fixture, "leaflet");
  g_assert_true (wait_for (fixture, leaflet_folded, GINT_TO_POINTER (TRUE)));
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "sidebar");
}

static gboolean   results_show         (Fixture       *fixture,
                                        gconstpointer  data);

static gboolean
session_list_has_focus (Fixture       *fixture,
                        gconstpointer  data)
{
  GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (fixture->window));

  return focus != NULL && gtk_widget_is_ancestor (focus, child (fixture, "session_view"));
}

/* Escape in the search entry goes back to where the search started: to
 * the conversation (and its composer), or to the list of conversations,
 * in a narrow window too; the focus is never left nowhere. */
static void
test_search_escape (Fixture       *fixture,
                    gconstpointer  data)
{
  AdwLeaflet *leaflet = child (fixture, "leaflet");
  GtkWidget *entry = child (fixture, "search_entry");
  GtkSearchBar *bar = child (fixture, "search_bar");

  send_text (fixture, "Why is the sky blue?");
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));

  /* Wide. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.search", NULL));
  g_assert_true (wait_for (fixture, entry_has_focus, entry));
  g_signal_emit_by_name (entry, "stop-search");
  g_assert_false (gtk_search_bar_get_search_mode (bar));
  g_assert_true (wait_for (fixture, composer_has_focus, NULL));

  /* Narrow, from the conversation: back to it. */
  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 360, 640);
  g_assert_true (wait_for (fixture, leaflet_folded, GINT_TO_POINTER (TRUE)));
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "content");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.search", NULL));
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "sidebar");
  g_assert_true (wait_for (fixture, entry_has_focus, entry));
  g_signal_emit_by_name (entry, "stop-search");
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "content");
  g_assert_true (wait_for (fixture, composer_has_focus, NULL));

  /* Narrow, from the list: the list, its conversation in focus. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.show-sidebar", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.search", NULL));
  g_assert_true (wait_for (fixture, entry_has_focus, entry));
  g_signal_emit_by_name (entry, "stop-search");
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "sidebar");
  g_assert_true (wait_for (fixture, session_list_has_focus, NULL));

  /* By the list's search button, with Escape among the results: the list
   * again, also when the conversation was where the last search began. */
  adw_leaflet_navigate (leaflet, ADW_NAVIGATION_DIRECTION_FORWARD);
  kaged_composer_focus (fixture->composer);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.search", NULL));
  g_assert_true (wait_for (fixture, entry_has_focus, entry));
  g_signal_emit_by_name (entry, "stop-search");
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "content");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.show-sidebar", NULL));
  gtk_toggle_button_set_active (child (fixture, "search_button"), TRUE);
  g_assert_true (gtk_search_bar_get_search_mode (bar));
  gtk_editable_set_text (GTK_EDITABLE (entry), "sky");
  g_assert_true (wait_for (fixture, results_show, "You \u00b7 Why is the sky blue?"));
  gtk_widget_grab_focus (gtk_widget_get_first_child (child (fixture, "results_view")));
  g_assert_true (press_escape (child (fixture, "results_view")));
  g_assert_false (gtk_search_bar_get_search_mode (bar));
  g_assert_cmpstr (adw_leaflet_get_visible_child_name (leaflet), ==, "sidebar");
  g_assert_true (wait_for (fixture, session_list_has_focus, NULL));
}

/* Whether the window's content is at most (data > 0) or at least (data < 0)
 * that wide. */
static gboolean
width_within (Fixture    *fixture,
              const char *name,
              int         bound)
{
  int width = gtk_widget_get_width (child (fixture, name));

  return bound > 0 ? width > 0 && width <= bound : width >= -bound;
}

static gboolean
content_width_within (Fixture       *fixture,
                      gconstpointer  data)
{
  return width_within (fixture, "toast_overlay", GPOINTER_TO_INT (data));
}

static gboolean
window_maximized (Fixture       *fixture,
                  gconstpointer  data)
{
  return gtk_window_is_maximized (GTK_WINDOW (fixture->window));
}

static gboolean
model_label_room (Fixture       *fixture,
                  gconstpointer  data)
{
  return width_within (fixture, "model_chooser", GPOINTER_TO_INT (data));
}

/* What a window manager does to a window it maximizes on a screen of that
 * width: it says so in _NET_WM_STATE and gives the window the screen's size,
 * whatever the window's own default size. */
static void
maximize_as_window_manager (Fixture *fixture,
                            int      width)
{
  GdkSurface *surface = gtk_native_get_surface (GTK_NATIVE (fixture->window));
  Display *xdisplay = gdk_x11_display_get_xdisplay (gdk_surface_get_display (surface));
  Window xid = gdk_x11_surface_get_xid (surface);
  Atom state[2];

  state[0] = XInternAtom (xdisplay, "_NET_WM_STATE_MAXIMIZED_VERT", False);
  state[1] = XInternAtom (xdisplay, "_NET_WM_STATE_MAXIMIZED_HORZ", False);
  XChangeProperty (xdisplay, xid, XInternAtom (xdisplay, "_NET_WM_STATE", False), XA_ATOM, 32,
                   PropModeReplace, (guchar *)state, G_N_ELEMENTS (state));
  XResizeWindow (xdisplay, xid, width, 700);
  XFlush (xdisplay);
}

static void
count_layout_cb (GdkFrameClock *clock,
                 guint         *n_layouts)
{
  (*n_layouts)++;
}

/* Whether the window comes to rest: a spell of 300 ms in which it is not
 * laid out again. A header whose form changed the width it is chosen on
 * would keep it busy for ever. */
static gboolean
window_settles (Fixture *fixture)
{
  GdkFrameClock *clock = gtk_widget_get_frame_clock (GTK_WIDGET (fixture->window));
  guint n_layouts = 1;
  gulong handler = g_signal_connect (clock, "layout", G_CALLBACK (count_layout_cb), &n_layouts);

  for (guint i = 0; i < 20 && n_layouts > 0; i++)
    {
      gint64 end = g_get_monotonic_time () + 300 * G_USEC_PER_SEC / 1000;

      n_layouts = 0;
      while (g_get_monotonic_time () < end)
        g_main_context_iteration (NULL, FALSE);
    }
  g_signal_handler_disconnect (clock, handler);

  return n_layouts == 0;
}

/* The header follows the width the window really has, not the size it
 * asked for: maximized on a phone's screen (or tiled on a narrow half of
 * one), a window that was wide keeps its wide default size, and its
 * header still fits. */
static void
test_narrow_maximized (Fixture       *fixture,
                       gconstpointer  data)
{
  GtkWidget *leaflet = child (fixture, "leaflet");
  GtkWidget *header = child (fixture, "header_bar");
  int minimum = 0;
  int width = 0;
  int height = 0;

  g_assert_true (wait_for (fixture, content_width_within, GINT_TO_POINTER (-900)));
  g_assert_true (wait_for (fixture, model_label_room, GINT_TO_POINTER (-150)));

  maximize_as_window_manager (fixture, 360);
  g_assert_true (wait_for (fixture, window_maximized, NULL));
  g_assert_true (wait_for (fixture, content_width_within, GINT_TO_POINTER (360)));
  g_assert_true (wait_for (fixture, leaflet_folded, GINT_TO_POINTER (TRUE)));
  /* What the window would have when it is unmaximized stays wide. */
  gtk_window_get_default_size (GTK_WINDOW (fixture->window), &width, &height);
  g_assert_cmpint (width, >=, 900);

  /* The model button gives up its room; the header and the whole
   * conversation page fit in the screen's width. */
  g_assert_true (wait_for (fixture, model_label_room, GINT_TO_POINTER (100)));
  gtk_widget_measure (header, GTK_ORIENTATION_HORIZONTAL, -1, &minimum, NULL, NULL, NULL);
  g_assert_cmpint (minimum, <=, 360);
  gtk_widget_measure (leaflet, GTK_ORIENTATION_HORIZONTAL, -1, &minimum, NULL, NULL, NULL);
  g_assert_cmpint (minimum, <=, 360);
  g_assert_cmpint (gtk_widget_get_width (leaflet), <=, 360);
  g_assert_true (window_settles (fixture));

  /* Between the widths at which the sidebar folds away with the wide
   * header (about 700 px) and with the narrow one (about 630 px), the header
   * keeps one form and the window comes to rest. */
  maximize_as_window_manager (fixture, 660);
  g_assert_true (wait_for (fixture, content_width_within, GINT_TO_POINTER (-640)));
  g_assert_true (window_settles (fixture));
  g_assert_true (wait_for (fixture, model_label_room, GINT_TO_POINTER (-150)));

  /* Maximized on a wide screen, the model's name has its room again. */
  maximize_as_window_manager (fixture, 1280);
  g_assert_true (wait_for (fixture, content_width_within, GINT_TO_POINTER (-1200)));
  g_assert_true (wait_for (fixture, leaflet_folded, GINT_TO_POINTER (FALSE)));
  g_assert_true (wait_for (fixture, model_label_room, GINT_TO_POINTER (-150)));
  g_assert_true (window_settles (fixture));
}

/* Whether the entry @data is shown with the focus in it. */
static gboolean
entry_has_focus (Fixture       *fixture,
                 gconstpointer  data)
{
  GtkWidget *entry = (GtkWidget *)data;

  return gtk_widget_is_visible (entry) &&
         (gtk_widget_is_focus (entry) || gtk_widget_get_focus_child (entry) != NULL);
}

/* Writes in two conversations, "One" then "Two", each answered; the second
 * is shown. Returns the first's id. */
static gint64
write_two_conversations (Fixture *fixture)
{
  gint64 first;

  send_text (fixture, "One");
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));
  first = kaged_window_get_session_id (fixture->window);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.new-conversation", NULL));
  send_text (fixture, "Two");
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));

  return first;
}

/* Whether the composer reads @text. */
static void
assert_composer_reads (Fixture    *fixture,
                       const char *text)
{
  g_autofree char *shown = kaged_composer_dup_text (fixture->composer);

  g_assert_cmpstr (shown, ==, text);
}

/* Each conversation keeps what was written in it and not sent: moving to
 * another one does not carry the text there, where Enter would send it,
 * and Undo there does not bring it back. */
/* Whether the database keeps @text (or nothing, for %NULL) as what was
 * written in @session_id and not sent. */
static void
assert_draft_kept (Fixture    *fixture,
                   gint64      session_id,
                   const char *text)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *kept = NULL;

  g_assert_true (kaged_store_get_draft (fixture->store, session_id, &kept, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (kept, ==, text);
}

/* The window keeps a draft a second after typing stops. */
#define DRAFT_KEPT_MS 1300

static void
test_drafts (Fixture       *fixture,
             gconstpointer  data)
{
  GtkWidget *sessions = child (fixture, "session_view");
  GtkTextBuffer *buffer = composer_buffer (fixture);
  gint64 first;
  gint64 second;
  gint64 third;
  gint64 fourth;

  first = write_two_conversations (fixture);
  second = kaged_window_get_session_id (fixture->window);
  type_in_composer (fixture, "Draft for Two");

  /* The list is newest first: "One" is second. */
  g_signal_emit_by_name (sessions, "activate", 1);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, first);
  assert_composer_reads (fixture, "");
  g_assert_false (gtk_text_buffer_get_can_undo (buffer));
  type_in_composer (fixture, "Draft for One");

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.new-conversation", NULL));
  assert_composer_reads (fixture, "");
  type_in_composer (fixture, "A new question");

  g_signal_emit_by_name (sessions, "activate", 0);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, second);
  assert_composer_reads (fixture, "Draft for Two");
  /* Undo goes back through this conversation's typing only. */
  g_assert_false (gtk_text_buffer_get_can_undo (buffer));

  /* The new conversation's text is sent from it and stays sent. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.new-conversation", NULL));
  assert_composer_reads (fixture, "A new question");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->composer), "composer.send", NULL));
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));
  third = kaged_window_get_session_id (fixture->window);
  g_assert_cmpint (third, !=, first);
  g_assert_cmpint (third, !=, second);
  g_assert_true (wait_for (fixture, reply_on_screen, "A new question"));
  assert_composer_reads (fixture, "");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.new-conversation", NULL));
  assert_composer_reads (fixture, "");

  /* Newest first: "A new question", "Two", "One". */
  g_signal_emit_by_name (sessions, "activate", 2);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, first);
  assert_composer_reads (fixture, "Draft for One");
  g_signal_emit_by_name (sessions, "activate", 0);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, third);
  assert_composer_reads (fixture, "");

  /* Unsent text outlives the window, and Kaged: it is kept in the
   * database, as typed last. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.new-conversation", NULL));
  type_in_composer (fixture, "An idea for later");
  g_signal_emit_by_name (sessions, "activate", 1);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, second);
  type_in_composer (fixture, " and more");
  assert_composer_reads (fixture, "Draft for Two and more");
  /* A moment after typing stops, before anything else happens. */
  settle (DRAFT_KEPT_MS);
  assert_draft_kept (fixture, second, "Draft for Two and more");
  type_in_composer (fixture, "!");

  gtk_window_destroy (GTK_WINDOW (fixture->window));
  g_assert_null (fixture->window);
  assert_draft_kept (fixture, second, "Draft for Two and more!");

  fixture->window = kaged_window_new (fixture->application);
  g_object_add_weak_pointer (G_OBJECT (fixture->window), (gpointer *)&fixture->window);
  kaged_window_set_core (fixture->window, fixture->core);
  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 1000, 700);
  gtk_window_present (GTK_WINDOW (fixture->window));
  fixture->composer = child (fixture, "composer");
  sessions = child (fixture, "session_view");
  buffer = composer_buffer (fixture);

  /* It opens on the newest conversation, with nothing written there. */
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, third);
  assert_composer_reads (fixture, "");
  g_signal_emit_by_name (sessions, "activate", 1);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, second);
  assert_composer_reads (fixture, "Draft for Two and more!");
  g_assert_false (gtk_text_buffer_get_can_undo (buffer));
  g_signal_emit_by_name (sessions, "activate", 2);
  assert_composer_reads (fixture, "Draft for One");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.new-conversation", NULL));
  assert_composer_reads (fixture, "An idea for later");

  /* Sent, it is no longer a draft anywhere, at once: a crash right after
   * must not offer it again. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->composer), "composer.send", NULL));
  fourth = kaged_window_get_session_id (fixture->window);
  g_assert_cmpint (fourth, >, third);
  assert_draft_kept (fixture, 0, NULL);
  assert_draft_kept (fixture, fourth, NULL);
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));

  g_signal_emit_by_name (sessions, "activate", 2);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, second);
  assert_draft_kept (fixture, second, "Draft for Two and more!");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->composer), "composer.send", NULL));
  assert_draft_kept (fixture, second, NULL);
  assert_composer_reads (fixture, "");
  g_assert_true (wait_for (fixture, composer_running, GINT_TO_POINTER (FALSE)));
}

/* Rename… on a conversation not shown: the pointer that opened its menu
 * selects its row, and the window marks the conversation shown again; the
 * entry stays open for the new title all the same (GTK 4.8 binds a row
 * again each time its selection changes). */
static void
test_rename_other (Fixture       *fixture,
                   gconstpointer  data)
{
  GtkWidget *sessions = child (fixture, "session_view");
  GtkSingleSelection *selection = GTK_SINGLE_SELECTION (gtk_list_view_get_model (GTK_LIST_VIEW (sessions)));
  KagedSessionRow *other = NULL;
  GtkWidget *entry;
  gint64 first;
  guint position = 0;

  first = write_two_conversations (fixture);

  for (GtkWidget *item = gtk_widget_get_first_child (sessions); item != NULL;
       item = gtk_widget_get_next_sibling (item))
    {
      GtkWidget *row = gtk_widget_get_first_child (item);

      if (KAGED_IS_SESSION_ROW (row) &&
          kaged_session_get_id (kaged_session_row_get_session (KAGED_SESSION_ROW (row))) == first)
        other = KAGED_SESSION_ROW (row);
    }
  g_assert_nonnull (other);
  entry = (GtkWidget *)gtk_widget_get_template_child (GTK_WIDGET (other), KAGED_TYPE_SESSION_ROW,
                                                      "title_entry");

  kaged_session_row_start_rename (other);
  g_assert_true (kaged_session_list_find (KAGED_SESSION_LIST (gtk_single_selection_get_model (selection)),
                                          first, &position));
  gtk_single_selection_set_selected (selection, position);
  settle (200);
  g_assert_true (gtk_widget_is_visible (entry));
  g_assert_true (entry_has_focus (fixture, entry));
  gtk_editable_set_text (GTK_EDITABLE (entry), "The first one");
  g_signal_emit_by_name (entry, "activate");
  g_assert_cmpstr (kaged_session_get_title (kaged_session_row_get_session (other)), ==, "The first one");
}

/* The sidebar marks the conversation shown, whatever the pointer passes
 * over: GTK's lists select the row under the pointer when one click opens
 * it, and the row the keyboard moves to. A row opened is marked. */
static void
test_sidebar_marks_shown (Fixture       *fixture,
                          gconstpointer  data)
{
  GtkWidget *sessions = child (fixture, "session_view");
  GtkSingleSelection *selection = GTK_SINGLE_SELECTION (gtk_list_view_get_model (GTK_LIST_VIEW (sessions)));
  KagedSessionList *list;
  gint64 first;
  gint64 second;
  guint first_position = 0;
  guint second_position = 0;

  first = write_two_conversations (fixture);
  second = kaged_window_get_session_id (fixture->window);
  settle (100);

  list = KAGED_SESSION_LIST (gtk_single_selection_get_model (selection));
  g_assert_true (kaged_session_list_find (list, first, &first_position));
  g_assert_true (kaged_session_list_find (list, second, &second_position));
  g_assert_cmpuint (gtk_single_selection_get_selected (selection), ==, second_position);

  /* Passed over, or reached by the arrow keys: still the one shown. */
  g_assert_true (gtk_widget_activate_action (sessions, "list.select-item", "(ubb)",
                                             first_position, FALSE, FALSE));
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, second);
  g_assert_cmpuint (gtk_single_selection_get_selected (selection), ==, second_position);

  /* Clicked, or Enter: it opens, and is marked. */
  g_assert_true (gtk_widget_activate_action (sessions, "list.activate-item", "u", first_position));
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, first);
  g_assert_cmpuint (gtk_single_selection_get_selected (selection), ==, first_position);

  /* A new conversation not yet written in is in no row: none is marked. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.new-conversation", NULL));
  g_assert_cmpuint (gtk_single_selection_get_selected (selection), ==, GTK_INVALID_LIST_POSITION);
  g_assert_true (gtk_widget_activate_action (sessions, "list.select-item", "(ubb)",
                                             second_position, FALSE, FALSE));
  g_assert_cmpuint (gtk_single_selection_get_selected (selection), ==, GTK_INVALID_LIST_POSITION);
}

/* Renamed in place: F2 puts the title in an entry; Enter keeps it. */
static void
test_rename (Fixture       *fixture,
             gconstpointer  data)
{
  AdwWindowTitle *title = child (fixture, "conversation_title");
  GtkWidget *sessions = child (fixture, "session_view");
  GtkWidget *entry = NULL;
  KagedSessionRow *row = NULL;

  send_text (fixture, "Why is the sky blue?");
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));
  g_assert_cmpstr (adw_window_title_get_title (title), ==, "Why is the sky blue?");

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.rename-conversation", NULL));
  for (GtkWidget *item = gtk_widget_get_first_child (sessions); item != NULL && row == NULL;
       item = gtk_widget_get_next_sibling (item))
    if (KAGED_IS_SESSION_ROW (gtk_widget_get_first_child (item)))
      row = KAGED_SESSION_ROW (gtk_widget_get_first_child (item));
  g_assert_nonnull (row);
  entry = (GtkWidget *)gtk_widget_get_template_child (GTK_WIDGET (row), KAGED_TYPE_SESSION_ROW,
                                                      "title_entry");
  g_assert_true (gtk_widget_is_visible (entry));
  gtk_editable_set_text (GTK_EDITABLE (entry), "Rayleigh scattering");
  g_signal_emit_by_name (entry, "activate");

  g_assert_cmpstr (kaged_session_get_title (kaged_session_row_get_session (row)), ==,
                   "Rayleigh scattering");
  g_assert_cmpstr (adw_window_title_get_title (title), ==, "Rayleigh scattering");
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(KagedSession) stored = kaged_store_get_session (fixture->store,
                                                              kaged_window_get_session_id (fixture->window),
                                                              &error);

    g_assert_no_error (error);
    g_assert_cmpstr (kaged_session_get_title (stored), ==, "Rayleigh scattering");
  }

  /* The row's menu is made when it first opens, with Rename and Delete. */
  {
    GtkMenuButton *menu_button = (GtkMenuButton *)gtk_widget_get_template_child (GTK_WIDGET (row),
                                                                                  KAGED_TYPE_SESSION_ROW,
                                                                                  "menu_button");
    GMenuModel *menu;
    g_autofree char *first = NULL;
    g_autofree char *second = NULL;

    g_assert_null (gtk_menu_button_get_menu_model (menu_button));
    gtk_menu_button_popup (menu_button);
    menu = gtk_menu_button_get_menu_model (menu_button);
    g_assert_nonnull (menu);
    g_assert_cmpint (g_menu_model_get_n_items (menu), ==, 2);
    g_assert_true (g_menu_model_get_item_attribute (menu, 0, G_MENU_ATTRIBUTE_ACTION, "s", &first));
    g_assert_true (g_menu_model_get_item_attribute (menu, 1, G_MENU_ATTRIBUTE_ACTION, "s", &second));
    g_assert_cmpstr (first, ==, "row.rename");
    g_assert_cmpstr (second, ==, "row.delete");
    gtk_menu_button_popdown (menu_button);

    gtk_menu_button_popup (menu_button);
    g_assert_true (gtk_menu_button_get_menu_model (menu_button) == menu);
    gtk_menu_button_popdown (menu_button);

    /* Rename… as the menu does it: the action, then the menu closes and
     * gives the focus back to its button. The entry stays open. */
    gtk_menu_button_popup (menu_button);
    g_assert_true (gtk_widget_activate_action (GTK_WIDGET (row), "row.rename", NULL));
    gtk_menu_button_popdown (menu_button);
    g_assert_true (wait_for (fixture, entry_has_focus, entry));
    settle (200);
    g_assert_true (gtk_widget_is_visible (entry));
    g_assert_true (entry_has_focus (fixture, entry));
    gtk_editable_set_text (GTK_EDITABLE (entry), "Blue skies");
    g_signal_emit_by_name (entry, "activate");
    g_assert_cmpstr (kaged_session_get_title (kaged_session_row_get_session (row)), ==, "Blue skies");
  }
}

static gboolean
sidebar_shows (Fixture       *fixture,
               gconstpointer  data)
{
  return g_strcmp0 (gtk_stack_get_visible_child_name (child (fixture, "sidebar_stack")), data) == 0;
}

static void
test_new_conversation_and_delete (Fixture       *fixture,
                                  gconstpointer  data)
{
  GtkListView *sessions = child (fixture, "session_view");
  GListModel *model = G_LIST_MODEL (gtk_list_view_get_model (sessions));
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) gone = NULL;
  gint64 first;
  gint64 second;

  /* Nothing yet: the sidebar says so. */
  g_assert_true (sidebar_shows (fixture, "no-sessions"));

  send_text (fixture, "One");
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));
  first = kaged_window_get_session_id (fixture->window);
  g_assert_true (sidebar_shows (fixture, "sessions"));

  /* Ctrl+N: an empty conversation, made real by its first message. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.new-conversation", NULL));
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, 0);
  g_assert_cmpuint (n_shown (fixture), ==, 0);
  send_text (fixture, "Two & <b>three</b>");
  second = kaged_window_get_session_id (fixture->window);
  g_assert_cmpint (second, !=, first);
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 2);

  /* Deleted: hidden at once, back with Undo. The toast says which one,
   * its title as written. */
  kaged_window_delete_session (fixture->window, second);
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 1);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, first);
  g_assert_true (wait_for (fixture, toast_shown, "\u201cTwo & <b>three</b>\u201d deleted"));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "session.undo-delete",
                                             "x", second));
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 2);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, second);

  /* Another conversation than the one read, deleted and back: the one
   * read stays. */
  kaged_window_delete_session (fixture->window, first);
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 1);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, second);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "session.undo-delete",
                                             "x", first));
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 2);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, second);

  /* Both deleted: the sidebar says there is none; Undo brings one back. */
  kaged_window_delete_session (fixture->window, first);
  kaged_window_delete_session (fixture->window, second);
  g_assert_true (sidebar_shows (fixture, "no-sessions"));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "session.undo-delete",
                                             "x", first));
  g_assert_true (sidebar_shows (fixture, "sessions"));

  /* Deleted for good once the toast goes without Undo. */
  g_assert_cmpuint (g_list_model_get_n_items (model), ==, 1);
  gone = kaged_store_get_session (fixture->store, second, &error);
  g_assert_no_error (error);
  g_clear_object (&gone);
  gtk_window_close (GTK_WINDOW (fixture->window));
  gone = kaged_store_get_session (fixture->store, second, &error);
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_assert_null (gone);
}

static gboolean
results_show (Fixture       *fixture,
              gconstpointer  data)
{
  GtkStack *stack = child (fixture, "sidebar_stack");

  return g_strcmp0 (gtk_stack_get_visible_child_name (stack), "results") == 0 &&
         label_shows (child (fixture, "results_view"), data);
}

static gboolean
jump_hidden (Fixture       *fixture,
             gconstpointer  data)
{
  return !gtk_revealer_get_reveal_child (child (fixture, "jump_revealer"));
}

/* Whether the message @data, and only it, is marked as the one found; with
 * %NULL, whether none is. */
static gboolean
found_marked (Fixture       *fixture,
              gconstpointer  data)
{
  guint marked = 0;

  for (GtkWidget *item = gtk_widget_get_first_child (child (fixture, "message_view")); item != NULL;
       item = gtk_widget_get_next_sibling (item))
    {
      GtkWidget *row = gtk_widget_get_first_child (item);

      if (!KAGED_IS_MESSAGE_ROW (row) || !gtk_widget_has_css_class (row, "found"))
        continue;
      if (kaged_message_row_get_message (KAGED_MESSAGE_ROW (row)) != data)
        return FALSE;
      marked++;
    }

  return data != NULL ? marked == 1 : marked == 0;
}

static void
test_search (Fixture       *fixture,
             gconstpointer  data)
{
  GtkEditable *entry = child (fixture, "search_entry");
  GtkWidget *results = child (fixture, "results_view");
  GtkWidget *row;
  GtkWidget *label;

  send_text (fixture, "Why is the sky blue?");
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.new-conversation", NULL));
  send_text (fixture, "Bread <recipes> & more");
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));

  /* Ctrl+F: the words are found in the text of both replies, in bold. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.search", NULL));
  gtk_editable_set_text (entry, "wavelen");
  g_assert_true (wait_for (fixture, results_show, "scatters"));
  row = gtk_widget_get_first_child (results);
  g_assert_nonnull (row);
  g_assert_nonnull (gtk_widget_get_next_sibling (row));
  g_assert_null (gtk_widget_get_next_sibling (gtk_widget_get_next_sibling (row)));
  /* Each says who wrote it and where it was found, its author first, so
   * a long title does not hide it; with room between results. */
  g_assert_cmpint (gtk_widget_get_margin_top (gtk_list_box_row_get_child (GTK_LIST_BOX_ROW (row))), >, 0);
  g_assert_cmpint (gtk_widget_get_margin_bottom (gtk_list_box_row_get_child (GTK_LIST_BOX_ROW (row))), >, 0);
  g_assert_true (results_show (fixture, "Assistant \u00b7 Why is the sky blue?"));
  g_assert_true (results_show (fixture, "Assistant \u00b7 Bread <recipes> & more"));

  /* Down in the entry goes to the first result; Enter in the entry opens
   * it, as in other searches of the desktop. */
  g_assert_true (press_down (GTK_WIDGET (entry)));
  g_assert_true (gtk_widget_has_focus (row));
  gtk_widget_grab_focus (GTK_WIDGET (entry));
  g_assert_cmpstr (kaged_message_get_content (shown_message (fixture, 0)), ==, "Bread <recipes> & more");
  g_signal_emit_by_name (entry, "activate");
  g_assert_cmpstr (kaged_message_get_content (shown_message (fixture, 0)), ==, "Why is the sky blue?");
  /* Opened: typing goes to its composer. */
  g_assert_true (composer_has_focus (fixture, NULL));
  /* The message found is marked for a moment, to be seen at once. */
  g_assert_true (wait_for (fixture, found_marked, shown_message (fixture, 1)));
  g_assert_true (wait_for (fixture, found_marked, NULL));

  /* Enter right after typing, before the entry's pause: what was typed is
   * found and opened, not the first result of before. */
  gtk_editable_set_text (entry, "recipes");
  g_signal_emit_by_name (entry, "activate");
  g_assert_cmpstr (kaged_message_get_content (shown_message (fixture, 0)), ==, "Bread <recipes> & more");

  /* The conversation a result opened fits in the window: nothing further
   * down to jump to. */
  g_signal_emit_by_name (entry, "activate");
  g_assert_true (wait_for (fixture, jump_hidden, NULL));

  /* A result reads as text, not as the Markdown it was written in; a
   * summary Kaged wrote of earlier messages says so. */
  {
    g_autoptr(KagedMessage) summary = kaged_message_new ();
    g_autoptr(GError) error = NULL;
    GtkWidget *snippet;
    const char *markup;

    kaged_message_set_session_id (summary, kaged_message_get_session_id (shown_message (fixture, 0)));
    kaged_message_set_role (summary, KAGED_MESSAGE_ROLE_SUMMARY);
    kaged_message_set_content (summary, "## Rayleigh\n\n**Rayleigh** scattering, see "
                                        "[the article](https://example.org/wiki_(physics)) and `code`");
    g_assert_true (kaged_store_append_message (fixture->store, summary, &error));
    g_assert_no_error (error);

    gtk_editable_set_text (entry, "rayleigh");
    g_assert_true (wait_for (fixture, results_show, "scattering, see the article and"));
    g_assert_true (results_show (fixture, "Summary \u00b7 Bread <recipes> & more"));
    snippet = gtk_widget_get_last_child (gtk_widget_get_first_child (gtk_widget_get_first_child (results)));
    markup = gtk_label_get_label (GTK_LABEL (snippet));
    g_assert_null (strstr (markup, "**"));
    g_assert_null (strstr (markup, "##"));
    g_assert_null (strstr (markup, "example.org"));
    g_assert_nonnull (strstr (markup, "<b>Rayleigh</b> <b>Rayleigh</b> scattering"));
  }

  /* Markup in a title is shown as text. */
  gtk_editable_set_text (entry, "recipes");
  g_assert_true (wait_for (fixture, results_show, "<recipes>"));
  row = gtk_widget_get_first_child (results);
  label = gtk_widget_get_last_child (gtk_widget_get_first_child (row));
  g_assert_true (GTK_IS_LABEL (label));
  g_assert_nonnull (strstr (gtk_label_get_label (GTK_LABEL (label)), "&lt;<b>recipes</b>&gt;"));

  /* A result opens its conversation. */
  g_signal_emit_by_name (results, "row-activated", row);
  g_assert_cmpstr (kaged_message_get_content (shown_message (fixture, 0)), ==, "Bread <recipes> & more");

  gtk_editable_set_text (entry, "nothing-like-this");
  g_assert_true (wait_for (fixture, sidebar_shows, "no-results"));
  /* With nothing found, Down is GTK's again, to move the focus. */
  gtk_widget_grab_focus (GTK_WIDGET (entry));
  g_assert_false (press_down (GTK_WIDGET (entry)));

  /* A conversation found by its title alone opens on its composer too. */
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(KagedSession) titled = kaged_core_create_session (fixture->core, "Weekend in Lisbon", &error);

    g_assert_no_error (error);
    gtk_widget_grab_focus (GTK_WIDGET (entry));
    gtk_editable_set_text (entry, "Lisbon");
    g_assert_true (wait_for (fixture, results_show, "Lisbon"));
    g_signal_emit_by_name (entry, "activate");
    g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, kaged_session_get_id (titled));
    settle (100);
    g_assert_true (composer_has_focus (fixture, NULL));
  }

  /* Leaving the search shows the conversations again, the one a result
   * opened selected among them. */
  gtk_editable_set_text (entry, "wavelen");
  g_assert_true (wait_for (fixture, results_show, "scatters"));
  g_signal_emit_by_name (entry, "activate");
  g_assert_cmpstr (kaged_message_get_content (shown_message (fixture, 0)), ==, "Why is the sky blue?");
  gtk_search_bar_set_search_mode (child (fixture, "search_bar"), FALSE);
  g_assert_true (wait_for (fixture, sidebar_shows, "sessions"));
  settle (100);
  {
    GtkSingleSelection *selection = GTK_SINGLE_SELECTION (gtk_list_view_get_model (child (fixture, "session_view")));
    g_autoptr(KagedSession) selected = gtk_single_selection_get_selected_item (selection) != NULL
                                       ? g_object_ref (gtk_single_selection_get_selected_item (selection)) : NULL;

    g_assert_nonnull (selected);
    g_assert_cmpint (kaged_session_get_id (selected), ==, kaged_window_get_session_id (fixture->window));
  }
}

/* --- a long conversation --------------------------------------------------------- */

#define LONG_CONVERSATION 3000
#define MARKED_POSITION 7

/* The conversation behind the list, under whatever wraps it. */
static KagedConversation *
shown_conversation (Fixture *fixture)
{
  GObject *model = G_OBJECT (shown_messages (fixture));

  while (model != NULL && !KAGED_IS_CONVERSATION (model))
    {
      g_autoptr(GObject) inner = NULL;

      if (g_object_class_find_property (G_OBJECT_GET_CLASS (model), "model") == NULL)
        return NULL;
      g_object_get (model, "model", &inner, NULL);
      model = inner;
    }

  return KAGED_CONVERSATION (model);
}

/* Rows the list view holds with a message bound. */
static guint
n_bound_rows (Fixture *fixture)
{
  GtkWidget *view = child (fixture, "message_view");
  guint n = 0;

  for (GtkWidget *item = gtk_widget_get_first_child (view); item != NULL;
       item = gtk_widget_get_next_sibling (item))
    {
      GtkWidget *row = gtk_widget_get_first_child (item);

      if (KAGED_IS_MESSAGE_ROW (row) && kaged_message_row_get_message (KAGED_MESSAGE_ROW (row)) != NULL)
        n++;
    }

  return n;
}

/* A long conversation opens at its end having read and bound only about a
 * screenful of messages, not hundreds. */
static void
test_long_conversation_opens_at_end (Fixture       *fixture,
                                     gconstpointer  data)
{
  gint64 session_id = fill_conversation (fixture, LONG_CONVERSATION, MARKED_POSITION, NULL);
  gint64 last_id = last_message_id (fixture, session_id);
  KagedConversation *conversation;

  kaged_window_show_session (fixture->window, session_id);
  g_assert_true (wait_for (fixture, at_end, GSIZE_TO_POINTER (last_id)));
  settle (300);
  g_assert_true (at_end (fixture, GSIZE_TO_POINTER (last_id)));

  conversation = shown_conversation (fixture);
  g_assert_nonnull (conversation);
  g_assert_cmpuint (_kaged_conversation_get_n_loaded (conversation), <=, 128);
  g_assert_cmpuint (n_bound_rows (fixture), <=, 64);
}

/* The position of @session_id in the sidebar. */
static guint
sidebar_position (Fixture *fixture,
                  gint64   session_id)
{
  GListModel *model = G_LIST_MODEL (gtk_list_view_get_model (child (fixture, "session_view")));

  for (guint i = 0; i < g_list_model_get_n_items (model); i++)
    {
      g_autoptr(KagedSession) session = g_list_model_get_item (model, i);

      if (kaged_session_get_id (session) == session_id)
        return i;
    }
  g_assert_not_reached ();
}

/* Chosen in the sidebar, a conversation of a few screens opens at its end,
 * as does the one shown before when chosen again. */
static void
test_conversation_opens_at_end (Fixture       *fixture,
                                gconstpointer  data)
{
  gint64 first = fill_conversation (fixture, 16, G_MAXUINT, NULL);
  gint64 second = fill_conversation (fixture, 16, G_MAXUINT, NULL);
  GtkWidget *sessions = child (fixture, "session_view");

  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 960, 680);
  g_signal_emit_by_name (sessions, "activate", sidebar_position (fixture, second));
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, second);
  g_assert_true (wait_for (fixture, at_end, GSIZE_TO_POINTER (last_message_id (fixture, second))));
  settle (300);
  g_assert_true (at_end (fixture, GSIZE_TO_POINTER (last_message_id (fixture, second))));

  g_signal_emit_by_name (sessions, "activate", sidebar_position (fixture, first));
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, first);
  g_assert_true (wait_for (fixture, at_end, GSIZE_TO_POINTER (last_message_id (fixture, first))));
  settle (300);
  g_assert_true (at_end (fixture, GSIZE_TO_POINTER (last_message_id (fixture, first))));
  g_assert_false (gtk_revealer_get_reveal_child (child (fixture, "jump_revealer")));
}

static void
count_frame_cb (GdkFrameClock *clock,
                guint         *n_frames)
{
  (*n_frames)++;
}

/* Once a long conversation has opened at its end and settled, the window
 * paints nothing while nothing changes, and offers no jump to the end it
 * already shows. */
static void
test_long_conversation_rests (Fixture       *fixture,
                              gconstpointer  data)
{
  gint64 session_id = fill_conversation (fixture, LONG_CONVERSATION, MARKED_POSITION, NULL);
  gint64 last_id = last_message_id (fixture, session_id);
  GdkFrameClock *clock;
  guint n_frames = 0;
  gulong handler;

  /* As at launch: a new window opens on the newest conversation. */
  gtk_window_destroy (GTK_WINDOW (fixture->window));
  g_assert_null (fixture->window);
  fixture->window = kaged_window_new (fixture->application);
  g_object_add_weak_pointer (G_OBJECT (fixture->window), (gpointer *)&fixture->window);
  kaged_window_set_core (fixture->window, fixture->core);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, session_id);
  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 1000, 700);
  gtk_window_present (GTK_WINDOW (fixture->window));
  fixture->composer = child (fixture, "composer");

  g_assert_true (wait_for (fixture, at_end, GSIZE_TO_POINTER (last_id)));
  settle (500);
  g_assert_true (at_end (fixture, GSIZE_TO_POINTER (last_id)));
  g_assert_false (gtk_revealer_get_reveal_child (child (fixture, "jump_revealer")));

  clock = gtk_widget_get_frame_clock (GTK_WIDGET (fixture->window));
  g_assert_nonnull (clock);
  handler = g_signal_connect (clock, "after-paint", G_CALLBACK (count_frame_cb), &n_frames);
  settle (3000);
  g_signal_handler_disconnect (clock, handler);

  /* Over 3 s: a blinking cursor paints a few frames; a scroll bar fading
   * in and out after the scroll to the end would paint 60 a second. */
  g_test_message ("%u frames painted in 3 s", n_frames);
  g_assert_cmpuint (n_frames, <=, 10);
  g_assert_false (gtk_revealer_get_reveal_child (child (fixture, "jump_revealer")));
}

/* The parts of the leaflet's shadow restyle what follows them each time
 * the leaflet is laid out: its pages, with the conversation, must not. */
static void
test_layout_restyles_no_page (Fixture       *fixture,
                              gconstpointer  data)
{
  AdwLeaflet *leaflet = child (fixture, "leaflet");
  gboolean after_part = FALSE;
  guint n_pages = 0;

  for (GtkWidget *widget = gtk_widget_get_first_child (GTK_WIDGET (leaflet)); widget != NULL;
       widget = gtk_widget_get_next_sibling (widget))
    {
      if (adw_leaflet_get_page (leaflet, widget) == NULL)
        {
          after_part = TRUE;
          continue;
        }
      g_assert_false (after_part);
      n_pages++;
    }

  g_assert_cmpuint (n_pages, ==, 3);
  g_assert_true (after_part);
}

typedef struct
{
  gint64 message_id;
} Anchor;

/* Older messages are shown above the anchor, which stays at the top of
 * the view (below the list's padding). */
static gboolean
grown_above (Fixture       *fixture,
             gconstpointer  data)
{
  const Anchor *anchor = data;
  GtkAdjustment *adjustment = gtk_scrolled_window_get_vadjustment (child (fixture, "scroller"));
  double top = row_top (fixture, anchor->message_id);

  return kaged_message_get_id (shown_message (fixture, 0)) < anchor->message_id &&
         gtk_adjustment_get_value (adjustment) > 0 &&
         top >= 0 && top <= 6;
}

/* Scrolling to the top of what is shown brings older messages above it,
 * and the message the view showed stays where it was; on to the first. */
static void
test_long_conversation_scrolls_back (Fixture       *fixture,
                                     gconstpointer  data)
{
  GtkAdjustment *adjustment = gtk_scrolled_window_get_vadjustment (child (fixture, "scroller"));
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) first = NULL;
  gint64 session_id = fill_conversation (fixture, 400, MARKED_POSITION, NULL);
  gint64 last_id = last_message_id (fixture, session_id);
  gint64 first_id;
  guint steps = 0;

  first = kaged_store_list_messages (fixture->store, session_id, FALSE, 0, 1, &error);
  g_assert_no_error (error);
  first_id = kaged_message_get_id (g_ptr_array_index (first, 0));

  kaged_window_show_session (fixture->window, session_id);
  g_assert_true (wait_for (fixture, at_end, GSIZE_TO_POINTER (last_id)));
  settle (200);
  g_assert_cmpuint (n_shown (fixture), <, 400);

  while (kaged_message_get_id (shown_message (fixture, 0)) != first_id)
    {
      Anchor anchor = { kaged_message_get_id (shown_message (fixture, 0)) };

      g_assert_cmpuint (++steps, <=, 40);

      /* The user reaches the top: the oldest message shown is at its top. */
      gtk_adjustment_set_value (adjustment, 0);

      /* Older messages come above it, and it does not move. */
      g_assert_true (wait_for (fixture, grown_above, &anchor));
      settle (100);
      g_assert_true (grown_above (fixture, &anchor));
    }

  /* Reached, with the end of the conversation no longer held. */
  g_assert_cmpuint (n_shown (fixture), <, 400);
  g_assert_cmpuint (n_bound_rows (fixture), <=, 200);
}

static gboolean
row_in_view (Fixture       *fixture,
             gconstpointer  data)
{
  GtkAdjustment *adjustment = gtk_scrolled_window_get_vadjustment (child (fixture, "scroller"));
  double top = row_top (fixture, GPOINTER_TO_SIZE (data));

  return top != G_MAXDOUBLE && top >= -1.0 && top < gtk_adjustment_get_page_size (adjustment);
}

/* A search result in a message opens the conversation scrolled to it,
 * however far back it stands: in a long conversation, far back; in a short
 * one, among the messages a conversation opens with. */
static void
search_opens_at_match (Fixture *fixture,
                       guint    n,
                       guint    marked)
{
  GtkEditable *entry = child (fixture, "search_entry");
  GtkWidget *results = child (fixture, "results_view");
  gint64 marked_id = 0;
  gint64 session_id = fill_conversation (fixture, n, marked, &marked_id);
  GtkWidget *row;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.search", NULL));
  gtk_editable_set_text (entry, "zanzibar");
  g_assert_true (wait_for (fixture, results_show, "zanzibar"));
  row = gtk_widget_get_first_child (results);
  g_assert_nonnull (row);

  g_signal_emit_by_name (results, "row-activated", row);
  g_assert_cmpint (kaged_window_get_session_id (fixture->window), ==, session_id);
  g_assert_true (wait_for (fixture, row_in_view, GSIZE_TO_POINTER (marked_id)));
  settle (300);
  g_assert_true (row_in_view (fixture, GSIZE_TO_POINTER (marked_id)));
  g_assert_cmpuint (_kaged_conversation_get_n_loaded (shown_conversation (fixture)), <=, 256);

  /* Escape among the results ends the search. */
  g_assert_true (press_escape (results));
  g_assert_false (gtk_search_bar_get_search_mode (child (fixture, "search_bar")));
}

static void
test_search_opens_at_match (Fixture       *fixture,
                            gconstpointer  data)
{
  search_opens_at_match (fixture, LONG_CONVERSATION, MARKED_POSITION);
}

static void
test_search_opens_at_recent_match (Fixture       *fixture,
                                   gconstpointer  data)
{
  search_opens_at_match (fixture, 40, 35);
}

/* In a window of the usual size, the model button reads a provider given
 * on the command line and its model whole, beside a conversation's title. */
static void
test_model_button_whole (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(KagedProfile) profile = NULL;
  g_autofree char *url = kaged_fake_server_get_url (fixture->server);
  GtkWidget *chooser = child (fixture, "model_chooser");
  GtkLabel *label = GTK_LABEL (gtk_widget_get_template_child (chooser, KAGED_TYPE_MODEL_CHOOSER,
                                                              "button_label"));

  profile = kaged_profile_new ("Command Line", KAGED_PROVIDER_KIND_OPENAI, url, "demo");
  kaged_profile_set_id (profile, NULL);
  kaged_core_set_profile (fixture->core, profile);
  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 960, 680);
  send_text (fixture, "How do I keep only the even numbers of a list in Python?");
  g_assert_true (wait_for (fixture, reply_complete, GUINT_TO_POINTER (1)));
  settle (300);

  g_assert_cmpstr (gtk_label_get_label (label), ==, "Command Line \u00b7 demo");
  g_assert_false (pango_layout_is_ellipsized (gtk_label_get_layout (label)));
}

/* The row of @session_id in the sidebar. */
static KagedSessionRow *
session_row_of (Fixture *fixture,
                gint64   session_id)
{
  GtkWidget *sessions = child (fixture, "session_view");

  for (GtkWidget *item = gtk_widget_get_first_child (sessions); item != NULL;
       item = gtk_widget_get_next_sibling (item))
    {
      GtkWidget *row = gtk_widget_get_first_child (item);

      if (KAGED_IS_SESSION_ROW (row) &&
          kaged_session_row_get_session (KAGED_SESSION_ROW (row)) != NULL &&
          kaged_session_get_id (kaged_session_row_get_session (KAGED_SESSION_ROW (row))) == session_id)
        return KAGED_SESSION_ROW (row);
    }

  return NULL;
}

static gboolean
session_tooltip_has (Fixture       *fixture,
                     gconstpointer  data)
{
  KagedSessionRow *row = session_row_of (fixture, kaged_window_get_session_id (fixture->window));
  const char *tooltip = row != NULL ? gtk_widget_get_tooltip_text (GTK_WIDGET (row)) : NULL;

  return tooltip != NULL && strstr (tooltip, data) != NULL;
}

/* Whether the banner says its time of day in 12 hours (@data TRUE) or 24. */
static gboolean
banner_in_12h (Fixture       *fixture,
               gconstpointer  data)
{
  GtkWidget *banner = child (fixture, "retry_banner");
  gboolean in_12h = label_shows (banner, "AM") || label_shows (banner, "PM");

  return label_shows (banner, " after ") && in_12h == GPOINTER_TO_INT (data);
}

/* A retry scheduled for later: the conversation's row in the sidebar says
 * when in the desktop's clock format, as the banner does, and follows it
 * when it changes. */
static void
test_sidebar_retry_clock_format (Fixture       *fixture,
                                 gconstpointer  data)
{
  g_autoptr(GSettings) interface_settings = kaged_retry_new_interface_settings ();
  GPtrArray *notifications = test_notification_server_get_events (notification_server);
  guint n_notifications = notifications->len;
  KagedRetryBanner *banner = child (fixture, "retry_banner");
  TestNotificationEvent *sent;
  const char *body = NULL;

  if (interface_settings == NULL)
    {
      g_test_skip ("org.gnome.desktop.interface is not installed");
      return;
    }


  g_settings_set_string (interface_settings, "clock-format", "12h");
  send_text (fixture, "Hello");
  g_assert_true (wait_for (fixture, session_tooltip_has, " after "));
  g_assert_true (session_tooltip_has (fixture, "AM") || session_tooltip_has (fixture, "PM"));
  test_notification_server_wait (notification_server, n_notifications + 1);
  sent = g_ptr_array_index (notifications, n_notifications);
  g_assert_true (g_variant_lookup (sent->notification, "body", "&s", &body));
  g_assert_true (strstr (body, " AM") != NULL || strstr (body, " PM") != NULL);
  g_assert_true (wait_for (fixture, banner_in_12h, GINT_TO_POINTER (TRUE)));

  g_settings_set_string (interface_settings, "clock-format", "24h");
  settle (50);
  g_assert_false (session_tooltip_has (fixture, "AM") || session_tooltip_has (fixture, "PM"));
  g_assert_true (session_tooltip_has (fixture, " after "));
  g_assert_true (banner_in_12h (fixture, GINT_TO_POINTER (FALSE)));

  g_settings_reset (interface_settings, "clock-format");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (banner), "retry-banner.cancel", NULL));
  /* Withdrawn with the retry. */
  test_notification_server_wait (notification_server, n_notifications + 2);
}

int
main (int   argc,
      char *argv[])
{
  /* GTK's own test accessibility backend, to read accessible names. */
  g_setenv ("GTK_A11Y", "test", TRUE);
  gtk_test_init (&argc, &argv, NULL);
  adw_init ();

#define ADD_TEST(path, func) \
  g_test_add ((path), Fixture, REPLY_SCENARIO, fixture_set_up, (func), fixture_tear_down)

  ADD_TEST ("/window/narrow", test_narrow);
  ADD_TEST ("/window/narrow-keeps-place", test_narrow_keeps_place);
  ADD_TEST ("/window/search-escape", test_search_escape);
  ADD_TEST ("/window/narrow-maximized", test_narrow_maximized);
  ADD_TEST ("/window/rename", test_rename);
  ADD_TEST ("/window/conversation-opens-at-end", test_conversation_opens_at_end);
  ADD_TEST ("/window/model-button-whole", test_model_button_whole);
  ADD_TEST ("/window/empty-names-provider", test_empty_names_provider);
  ADD_TEST ("/window/new-conversation-and-delete", test_new_conversation_and_delete);
  ADD_TEST ("/window/search", test_search);
  ADD_TEST ("/window/rename-other", test_rename_other);
  ADD_TEST ("/window/sidebar-marks-shown", test_sidebar_marks_shown);
  ADD_TEST ("/window/drafts", test_drafts);
  ADD_TEST ("/window/long-conversation-opens-at-end", test_long_conversation_opens_at_end);
  ADD_TEST ("/window/long-conversation-scrolls-back", test_long_conversation_scrolls_back);
  ADD_TEST ("/window/long-conversation-rests", test_long_conversation_rests);
  ADD_TEST ("/window/layout-restyles-no-page", test_layout_restyles_no_page);
  ADD_TEST ("/window/search-opens-at-match", test_search_opens_at_match);
  ADD_TEST ("/window/search-opens-at-recent-match", test_search_opens_at_recent_match);
  /* The provider asks for an hour: a retry scheduled for a time of day. */
  g_test_add ("/window/sidebar-retry-clock-format", Fixture,
              "[{\"status\": 503, \"headers\": {\"x-should-retry\": \"false\", \"retry-after\": \"3600\"},"
              " \"body\": \"Unavailable\"}]",
              fixture_set_up, test_sidebar_retry_clock_format, fixture_tear_down);

  return g_test_run ();
}
