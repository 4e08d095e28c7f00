/* kaged-window-fixture.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * What the window tests share: a window on a core of its own, a fake
 * provider on 127.0.0.1 and a fresh database for each test, and the ways
 * a test reads what the window shows.
 */

#include "config.h"


#include "kaged-store.h"
#include "kaged-test-files.h"
#include "kaged-test-time.h"
#include "kaged-window-fixture.h"

guint n_preferences_opened;
char *preferences_profile_opened;
TestNotificationServer *notification_server;

static GtkApplication *the_application;

static void
preferences_cb (GSimpleAction *action,
                GVariant      *parameter,
                gpointer       user_data)
{
  n_preferences_opened++;
}

static void
preferences_profile_cb (GSimpleAction *action,
                        GVariant      *parameter,
                        gpointer       user_data)
{
  g_free (preferences_profile_opened);
  preferences_profile_opened = g_variant_dup_string (parameter, NULL);
}

static void
g_set_str_local (char       **where,
                 const char  *value)
{
  g_free (*where);
  *where = g_strdup (value);
}

static void
activate_cb (GApplication *application,
             gpointer      user_data)
{
}

gpointer
child (Fixture    *fixture,
       const char *name)
{
  return (gpointer)gtk_widget_get_template_child (GTK_WIDGET (fixture->window), KAGED_TYPE_WINDOW, name);
}

void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *url = NULL;
  gboolean unreachable = g_str_equal (data, "unreachable");
  const char *scenario = unreachable ? "[{\"kind\": \"openai\", \"text\": \"Unused\"}]" : data;

  fixture->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  fixture->db_path = g_build_filename (fixture->dir, "kaged.db", NULL);

  fixture->server = kaged_fake_server_new (scenario, &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (fixture->server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (fixture->server);
  /* Nothing listens on port 9 of this machine: a provider that is down. */
  if (unreachable)
    g_set_str_local (&url, "http://127.0.0.1:9/v1");

  /* Each test starts as a first start with these provider settings, which
   * become the profile "default". */
  fixture->settings = g_settings_new (BASE_APPLICATION_ID);
  g_settings_reset (fixture->settings, "profiles");
  g_settings_set_string (fixture->settings, "provider-kind", "openai");
  g_settings_set_string (fixture->settings, "provider-base-url", url);
  g_settings_set_string (fixture->settings, "provider-model", "test-model");

  fixture->store = kaged_store_open (fixture->db_path, &error);
  g_assert_no_error (error);

  /* One application for the whole program: it stays registered on the bus. */
  if (the_application == NULL)
    {
      static const GActionEntry app_entries[] = {
        { "preferences", preferences_cb, NULL, NULL, NULL, { 0 } },
        { "preferences-profile", preferences_profile_cb, "s", NULL, NULL, { 0 } },
      };

      the_application = gtk_application_new ("io.github.kaged.Kaged.WindowTest",
                                             G_APPLICATION_NON_UNIQUE);
      g_signal_connect (the_application, "activate", G_CALLBACK (activate_cb), NULL);
      /* What KagedApplication provides: the preferences, here counted. */
      g_action_map_add_action_entries (G_ACTION_MAP (the_application), app_entries,
                                       G_N_ELEMENTS (app_entries), NULL);
      g_application_register (G_APPLICATION (the_application), NULL, &error);
      g_assert_no_error (error);
      /* The desktop's notification server, for the whole program: an
       * application keeps the way it first sent a notification. */
      notification_server =
        test_notification_server_new (g_application_get_dbus_connection (G_APPLICATION (the_application)),
                                      g_application_get_application_id (G_APPLICATION (the_application)));
    }
  fixture->application = g_object_ref (the_application);
  fixture->core = kaged_core_new (fixture->store, NULL, NULL, NULL, KAGED_CORE_FLAGS_AUTO_RETRY);
  fixture->desktop = kaged_desktop_new (G_APPLICATION (fixture->application), fixture->settings,
                                        fixture->core, NULL);
  kaged_core_start (fixture->core);

  fixture->window = kaged_window_new (fixture->application);
  g_object_add_weak_pointer (G_OBJECT (fixture->window), (gpointer *)&fixture->window);
  kaged_window_set_core (fixture->window, fixture->core);
  g_signal_connect_object (fixture->desktop, "show-session", G_CALLBACK (kaged_window_show_session),
                           fixture->window, G_CONNECT_SWAPPED);
  gtk_window_set_default_size (GTK_WINDOW (fixture->window), 1000, 700);
  gtk_window_present (GTK_WINDOW (fixture->window));
  fixture->composer = child (fixture, "composer");
}

void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  /* GTK 4.8 keeps the surface a tooltip was asked for and reads it when
   * its timer fires, if the window has gone meanwhile: it fires first. */
  kaged_test_run_for (700 * 1000);
  if (fixture->window != NULL)
    gtk_window_destroy (GTK_WINDOW (fixture->window));
  kaged_desktop_shutdown (fixture->desktop);
  for (guint i = 0; i < 50; i++)
    g_main_context_iteration (NULL, FALSE);

  g_settings_reset (fixture->settings, "profiles");
  g_settings_reset (fixture->settings, "provider-kind");
  g_settings_reset (fixture->settings, "provider-base-url");
  g_settings_reset (fixture->settings, "provider-model");

  g_clear_object (&fixture->desktop);
  g_clear_object (&fixture->core);
  g_clear_object (&fixture->application);
  g_clear_object (&fixture->store);
  g_clear_object (&fixture->server);
  g_clear_object (&fixture->settings);

  kaged_test_remove_tree (fixture->dir);
  g_clear_pointer (&fixture->dir, g_free);
  g_clear_pointer (&fixture->db_path, g_free);
}

gboolean
wait_for (Fixture       *fixture,
          Condition      condition,
          gconstpointer  data)
{
  gint64 deadline = g_get_monotonic_time () + kaged_test_usec (15 * G_USEC_PER_SEC);

  while (g_get_monotonic_time () < deadline && !condition (fixture, data))
    g_main_context_iteration (NULL, FALSE);

  return condition (fixture, data);
}

/* Lets the window lay out and paint for @ms milliseconds. */
void
settle (guint ms)
{
  kaged_test_run_for ((gint64)ms * 1000);
}

GListModel *
shown_messages (Fixture *fixture)
{
  GtkListView *view = child (fixture, "message_view");
  GtkSelectionModel *model = gtk_list_view_get_model (view);

  return model != NULL ? G_LIST_MODEL (model) : NULL;
}

KagedMessage *
shown_message (Fixture *fixture,
               guint    position)
{
  GListModel *model = shown_messages (fixture);
  g_autoptr(KagedMessage) message = NULL;

  if (model == NULL || (message = g_list_model_get_item (model, position)) == NULL)
    return NULL;

  return message;
}

guint
n_shown (Fixture *fixture)
{
  GListModel *model = shown_messages (fixture);

  return model != NULL ? g_list_model_get_n_items (model) : 0;
}

/* The label on screen, inside @widget, that reads @text: exactly, or
 * among other words; %NULL if none does. */
GtkLabel *
find_label (GtkWidget  *widget,
            const char *text,
            gboolean    exactly)
{
  if (GTK_IS_LABEL (widget) && gtk_widget_get_mapped (widget) &&
      (exactly ? g_strcmp0 (gtk_label_get_text (GTK_LABEL (widget)), text) == 0
               : strstr (gtk_label_get_text (GTK_LABEL (widget)), text) != NULL))
    return GTK_LABEL (widget);

  for (GtkWidget *c = gtk_widget_get_first_child (widget); c != NULL; c = gtk_widget_get_next_sibling (c))
    {
      GtkLabel *found = find_label (c, text, exactly);

      if (found != NULL)
        return found;
    }

  return NULL;
}

gboolean
label_shows (GtkWidget  *widget,
             const char *text)
{
  return find_label (widget, text, FALSE) != NULL;
}

/* The row on screen showing the message @message_id. */
KagedMessageRow *
row_of (Fixture *fixture,
        gint64   message_id)
{
  GtkWidget *view = child (fixture, "message_view");

  for (GtkWidget *item = gtk_widget_get_first_child (view); item != NULL;
       item = gtk_widget_get_next_sibling (item))
    {
      GtkWidget *row = gtk_widget_get_first_child (item);

      if (KAGED_IS_MESSAGE_ROW (row) &&
          kaged_message_row_get_message (KAGED_MESSAGE_ROW (row)) != NULL &&
          kaged_message_get_id (kaged_message_row_get_message (KAGED_MESSAGE_ROW (row))) == message_id)
        return KAGED_MESSAGE_ROW (row);
    }

  return NULL;
}

gboolean
reply_complete (Fixture       *fixture,
                gconstpointer  data)
{
  guint position = GPOINTER_TO_UINT (data);
  KagedMessage *message = shown_message (fixture, position);

  return message != NULL &&
         kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_AGENT &&
         kaged_message_get_status (message) == KAGED_MESSAGE_STATUS_COMPLETE;
}

gboolean
reply_on_screen (Fixture       *fixture,
                 gconstpointer  data)
{
  return label_shows (child (fixture, "message_view"), data);
}

gboolean
composer_running (Fixture       *fixture,
                  gconstpointer  data)
{
  return kaged_composer_get_running (fixture->composer) == GPOINTER_TO_INT (data);
}

void
send_text (Fixture    *fixture,
           const char *text)
{
  kaged_composer_set_text (fixture->composer, text);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture->composer), "composer.send", NULL));
}

gboolean
composer_has_focus (Fixture       *fixture,
                    gconstpointer  data)
{
  GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (fixture->window));

  return focus != NULL && gtk_widget_is_ancestor (focus, GTK_WIDGET (fixture->composer));
}

gboolean
toast_shown (Fixture       *fixture,
             gconstpointer  data)
{
  return label_shows (child (fixture, "toast_overlay"), data);
}

/* Gives the window a core of its own on the fixture's store, started
 * with @profile; the test gives the window the fixture's back. */
KagedCore *
show_with_core (Fixture        *fixture,
                KagedCoreFlags  flags,
                KagedProfile   *profile)
{
  KagedCore *core = kaged_core_new (fixture->store, NULL, NULL, NULL, flags);

  kaged_core_set_profile (core, profile);
  kaged_core_start (core);
  kaged_window_set_core (fixture->window, core);

  return core;
}

GtkTextBuffer *
composer_buffer (Fixture *fixture)
{
  GObject *view = gtk_widget_get_template_child (GTK_WIDGET (fixture->composer), KAGED_TYPE_COMPOSER,
                                                 "text_view");

  return gtk_text_view_get_buffer (GTK_TEXT_VIEW (view));
}

/* Types @text in the composer as a person would: one undoable step. */
void
type_in_composer (Fixture    *fixture,
                  const char *text)
{
  gtk_text_buffer_insert_at_cursor (composer_buffer (fixture), text, -1);
}

/* Writes a conversation of @n messages straight to the store, message
 * @marked with a word no other has, and returns the session. */
gint64
fill_conversation (Fixture *fixture,
                   guint    n,
                   guint    marked,
                   gint64  *marked_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedSession) session = kaged_core_create_session (fixture->core, "Long", &error);
  gint64 session_id;
  gint64 run_id = 0;

  g_assert_no_error (error);
  session_id = kaged_session_get_id (session);

  g_assert_true (kaged_store_begin (fixture->store, &error));
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(KagedMessage) message = kaged_message_new ();
      g_autofree char *text = NULL;

      text = g_strdup_printf ("Message %u%s. Some prose to give the row a few lines: the provider "
                              "streams a reply in small pieces and the window shows each piece "
                              "as it comes, with *emphasis* and `code` too.",
                              i, i == marked ? " about zanzibar" : "");
      kaged_message_set_session_id (message, session_id);
      kaged_message_set_content (message, text);
      if (i % 2 == 0)
        {
          kaged_message_set_role (message, KAGED_MESSAGE_ROLE_OPERATOR);
        }
      else
        {
          kaged_message_set_role (message, KAGED_MESSAGE_ROLE_AGENT);
          kaged_message_set_run_id (message, run_id);
          kaged_message_set_status (message, KAGED_MESSAGE_STATUS_COMPLETE);
        }
      g_assert_true (kaged_store_append_message (fixture->store, message, &error));
      g_assert_no_error (error);
      if (i == marked && marked_id != NULL)
        *marked_id = kaged_message_get_id (message);

      if (i % 2 == 0)
        {
          g_autoptr(KagedRun) run = kaged_run_new ();

          kaged_run_set_session_id (run, session_id);
          kaged_run_set_anchor_id (run, kaged_message_get_id (message));
          kaged_run_set_status (run, KAGED_RUN_STATUS_SUCCEEDED);
          g_assert_true (kaged_store_create_run (fixture->store, run, &error));
          run_id = kaged_run_get_id (run);
        }
    }
  g_assert_true (kaged_store_commit (fixture->store, &error));

  return session_id;
}

/* Where the top of the row of @message_id stands in the viewport, or
 * G_MAXDOUBLE when the row is not on screen. */
double
row_top (Fixture *fixture,
         gint64   message_id)
{
  KagedMessageRow *row = row_of (fixture, message_id);
  GtkScrolledWindow *scroller = child (fixture, "scroller");
  double x = 0, y = 0;

  if (row == NULL || !gtk_widget_get_mapped (GTK_WIDGET (row)) ||
      !gtk_widget_translate_coordinates (GTK_WIDGET (row), GTK_WIDGET (scroller), 0, 0, &x, &y))
    return G_MAXDOUBLE;

  return y;
}

gboolean
at_end (Fixture       *fixture,
        gconstpointer  data)
{
  GtkAdjustment *adjustment = gtk_scrolled_window_get_vadjustment (child (fixture, "scroller"));
  gint64 last_id = GPOINTER_TO_SIZE (data);
  double top = row_top (fixture, last_id);

  return gtk_adjustment_get_upper (adjustment) > gtk_adjustment_get_page_size (adjustment) &&
         top < gtk_adjustment_get_page_size (adjustment);
}

gint64
last_message_id (Fixture *fixture,
                 gint64   session_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) last = kaged_store_list_messages_at (fixture->store, session_id, FALSE,
                                                            0, 1, TRUE, &error);

  g_assert_no_error (error);
  g_assert_cmpuint (last->len, ==, 1);
  return kaged_message_get_id (g_ptr_array_index (last, 0));
}
