/* test-shortcuts.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The Keyboard Shortcuts window against what the application really
 * binds: every accelerator of the application and every shortcut of our
 * widgets is listed there, and everything listed there is bound.
 */

#include "config.h"

#include <adwaita.h>

#include "kaged-application.h"
#include "kaged-composer.h"
#include "kaged-message-row.h"
#include "kaged-retry-banner.h"
#include "kaged-session-row.h"
#include "kaged-window.h"
#include "kaged-window-private.h"

#define HELP_OVERLAY "/io/github/kaged/Kaged/gtk/help-overlay.ui"

/* The keys the composer handles itself, as a text view does, rather than
 * through shortcuts: listed in the window, checked on the composer. */
static const char * const composer_keys[] = { "Return", "<Shift>Return", "Escape", NULL };

typedef struct
{
  char *accelerator;   /* normalised, gtk_accelerator_name () */
  char *action;        /* or NULL */
} Entry;

static void
entry_free (Entry *entry)
{
  g_free (entry->accelerator);
  g_free (entry->action);
  g_free (entry);
}

static char *
normalise (const char *accelerator)
{
  guint keyval = 0;
  GdkModifierType mods = 0;

  g_assert_true (gtk_accelerator_parse (accelerator, &keyval, &mods));
  /* The keypad's Enter is Enter to a person: the window lists one. */
  if (keyval == GDK_KEY_KP_Enter)
    keyval = GDK_KEY_Return;

  return gtk_accelerator_name (keyval, mods);
}

static GPtrArray *
entry_list_new (void)
{
  return g_ptr_array_new_with_free_func ((GDestroyNotify) entry_free);
}

static void
add_entry (GPtrArray  *entries,
           const char *accelerator,
           const char *action)
{
  Entry *entry = g_new0 (Entry, 1);

  entry->accelerator = normalise (accelerator);
  entry->action = g_strdup (action);
  g_ptr_array_add (entries, entry);
}

static gboolean
has_accelerator (GPtrArray  *entries,
                 const char *accelerator)
{
  g_autofree char *wanted = normalise (accelerator);

  for (guint i = 0; i < entries->len; i++)
    {
      Entry *entry = g_ptr_array_index (entries, i);

      if (g_str_equal (entry->accelerator, wanted))
        return TRUE;
    }

  return FALSE;
}

/* Our own actions, not those GTK and libadwaita bind for every window
 * (GTK binds no key to window.close: the window binds Ctrl+W to it). */
static gboolean
is_our_action (const char *name)
{
  static const char * const prefixes[] = {
    "app.", "win.", "composer.", "edit.", "message.", "row.", "retry-banner.", "session.",
    "window.close", NULL
  };

  for (guint i = 0; prefixes[i] != NULL; i++)
    if (g_str_has_prefix (name, prefixes[i]))
      return TRUE;

  return FALSE;
}

/* The shortcuts our widget classes install, on @widget and below. */
static void
collect_widget_shortcuts (GtkWidget *widget,
                          GPtrArray *bound)
{
  g_autoptr(GListModel) controllers = gtk_widget_observe_controllers (widget);

  for (guint i = 0; i < g_list_model_get_n_items (controllers); i++)
    {
      g_autoptr(GObject) controller = g_list_model_get_item (controllers, i);

      if (!GTK_IS_SHORTCUT_CONTROLLER (controller))
        continue;

      for (guint j = 0; j < g_list_model_get_n_items (G_LIST_MODEL (controller)); j++)
        {
          g_autoptr(GtkShortcut) shortcut = g_list_model_get_item (G_LIST_MODEL (controller), j);
          GtkShortcutTrigger *trigger = gtk_shortcut_get_trigger (shortcut);
          GtkShortcutAction *action = gtk_shortcut_get_action (shortcut);
          const char *name;
          g_autofree char *accelerator = NULL;

          if (!GTK_IS_NAMED_ACTION (action) || !GTK_IS_KEYVAL_TRIGGER (trigger))
            continue;

          name = gtk_named_action_get_action_name (GTK_NAMED_ACTION (action));
          if (!is_our_action (name))
            continue;

          accelerator = gtk_accelerator_name (gtk_keyval_trigger_get_keyval (GTK_KEYVAL_TRIGGER (trigger)),
                                              gtk_keyval_trigger_get_modifiers (GTK_KEYVAL_TRIGGER (trigger)));
          add_entry (bound, accelerator, name);
        }
    }

  for (GtkWidget *child = gtk_widget_get_first_child (widget);
       child != NULL;
       child = gtk_widget_get_next_sibling (child))
    collect_widget_shortcuts (child, bound);
}

/* Everything the application binds: its accelerators and the shortcuts of
 * the window and of the widgets that live in it. */
static GPtrArray *
collect_bound (GtkApplication *application,
               GtkWidget      *window)
{
  GPtrArray *bound = entry_list_new ();
  g_auto(GStrv) actions = gtk_application_list_action_descriptions (application);
  GtkWidget *extras[] = {
    kaged_message_row_new (),
    kaged_retry_banner_new (),
    kaged_session_row_new (NULL),
  };

  for (guint i = 0; actions[i] != NULL; i++)
    {
      g_autofree char *name = NULL;
      g_autoptr(GVariant) target = NULL;
      g_auto(GStrv) accels = NULL;

      g_assert_true (g_action_parse_detailed_name (actions[i], &name, &target, NULL));
      accels = gtk_application_get_accels_for_action (application, actions[i]);
      for (guint j = 0; accels[j] != NULL; j++)
        add_entry (bound, accels[j], name);
    }

  collect_widget_shortcuts (window, bound);
  /* The dialog that edits a message binds its own keys while it is open. */
  {
    GtkWidget *dialog = kaged_window_new_edit_dialog (KAGED_WINDOW (window), 1, "An edited message");

    collect_widget_shortcuts (dialog, bound);
    gtk_window_destroy (GTK_WINDOW (dialog));
  }
  for (guint i = 0; i < G_N_ELEMENTS (extras); i++)
    {
      g_object_ref_sink (extras[i]);
      collect_widget_shortcuts (extras[i], bound);
      g_object_unref (extras[i]);
    }

  return bound;
}

/* What the Keyboard Shortcuts window lists: an accelerator, or an action
 * whose accelerators it shows. */
static void
collect_listed (GtkWidget      *widget,
                GtkApplication *application,
                GPtrArray      *listed,
                GPtrArray      *by_action)
{
  if (GTK_IS_SHORTCUTS_SHORTCUT (widget))
    {
      g_autofree char *accelerator = NULL;
      g_autofree char *action = NULL;
      g_autofree char *title = NULL;

      g_object_get (widget,
                    "accelerator", &accelerator,
                    "action-name", &action,
                    "title", &title,
                    NULL);

      g_assert_nonnull (title);
      g_assert_cmpstr (title, !=, "");

      if (action != NULL)
        {
          g_auto(GStrv) accels = gtk_application_get_accels_for_action (application, action);

          /* An action listed without an accelerator would show nothing. */
          if (accels[0] == NULL)
            g_error ("The shortcuts window lists “%s” (%s), which has no accelerator", title, action);
          for (guint i = 0; accels[i] != NULL; i++)
            add_entry (listed, accels[i], action);
          g_ptr_array_add (by_action, g_strdup (action));
        }
      else
        {
          g_auto(GStrv) accelerators = NULL;

          g_assert_nonnull (accelerator);
          /* GTK shows a keypad key by its raw name ("KP_Enter"). */
          g_assert_null (strstr (accelerator, "KP_"));
          accelerators = g_strsplit (accelerator, " ", -1);
          for (guint i = 0; accelerators[i] != NULL; i++)
            if (accelerators[i][0] != '\0')
              add_entry (listed, accelerators[i], NULL);
        }
    }

  for (GtkWidget *child = gtk_widget_get_first_child (widget);
       child != NULL;
       child = gtk_widget_get_next_sibling (child))
    collect_listed (child, application, listed, by_action);
}

static gboolean
composer_handles (KagedComposer *composer,
                  const char    *accelerator)
{
  g_autoptr(GListModel) controllers = NULL;
  GtkWidget *text_view;
  guint keyval = 0;
  GdkModifierType mods = 0;

  text_view = (GtkWidget *) gtk_widget_get_template_child (GTK_WIDGET (composer), KAGED_TYPE_COMPOSER,
                                                           "text_view");
  g_assert_true (gtk_accelerator_parse (accelerator, &keyval, &mods));

  /* Shift+Enter is the text view's own: a new line. */
  if (keyval == GDK_KEY_Return && (mods & GDK_SHIFT_MASK) != 0)
    return GTK_IS_TEXT_VIEW (text_view) && gtk_text_view_get_editable (GTK_TEXT_VIEW (text_view));

  controllers = gtk_widget_observe_controllers (text_view);
  for (guint i = 0; i < g_list_model_get_n_items (controllers); i++)
    {
      g_autoptr(GObject) controller = g_list_model_get_item (controllers, i);
      gboolean handled = FALSE;

      if (!GTK_IS_EVENT_CONTROLLER_KEY (controller))
        continue;

      g_signal_emit_by_name (controller, "key-pressed", keyval, 0, mods, &handled);
      if (handled)
        return TRUE;
    }

  return FALSE;
}

static void
test_shortcuts_window_lists_every_shortcut (void)
{
  g_autoptr(KagedApplication) application = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GtkBuilder) builder = NULL;
  g_autoptr(GPtrArray) bound = NULL;
  g_autoptr(GPtrArray) listed = entry_list_new ();
  g_autoptr(GPtrArray) by_action = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(KagedComposer) composer = NULL;
  GtkWidget *window;
  GtkWidget *overlay;

  application = kaged_application_new ();
  g_application_register (G_APPLICATION (application), NULL, &error);
  g_assert_no_error (error);

  window = GTK_WIDGET (kaged_window_new (GTK_APPLICATION (application)));
  bound = collect_bound (GTK_APPLICATION (application), window);

  builder = gtk_builder_new_from_resource (HELP_OVERLAY);
  overlay = GTK_WIDGET (gtk_builder_get_object (builder, "help_overlay"));
  g_assert_true (GTK_IS_SHORTCUTS_WINDOW (overlay));
  collect_listed (overlay, GTK_APPLICATION (application), listed, by_action);

  /* Sanity: the application binds its well-known keys. */
  g_assert_true (has_accelerator (bound, "<Control>q"));
  g_assert_true (has_accelerator (bound, "<Control>n"));
  g_assert_true (has_accelerator (bound, "<Control><Shift>r"));
  g_assert_true (has_accelerator (bound, "<Control>Return"));

  /* Everything bound is listed. */
  for (guint i = 0; i < bound->len; i++)
    {
      Entry *entry = g_ptr_array_index (bound, i);

      if (!has_accelerator (listed, entry->accelerator))
        g_error ("%s (%s) is bound but not in the shortcuts window",
                 entry->accelerator, entry->action);
    }

  /* Everything listed is bound, by the application or by the composer. */
  composer = g_object_ref_sink (KAGED_COMPOSER (kaged_composer_new ()));
  kaged_composer_set_running (composer, TRUE);
  for (guint i = 0; i < listed->len; i++)
    {
      Entry *entry = g_ptr_array_index (listed, i);

      if (has_accelerator (bound, entry->accelerator))
        continue;
      if (g_strv_contains (composer_keys, entry->accelerator) &&
          composer_handles (composer, entry->accelerator))
        continue;

      g_error ("The shortcuts window lists %s, which nothing binds", entry->accelerator);
    }

  gtk_window_destroy (GTK_WINDOW (overlay));
  gtk_window_destroy (GTK_WINDOW (window));
}

int
main (int   argc,
      char *argv[])
{
  gtk_test_init (&argc, &argv, NULL);
  adw_init ();

  g_test_add_func ("/shortcuts/window-lists-every-shortcut", test_shortcuts_window_lists_every_shortcut);

  return g_test_run ();
}
