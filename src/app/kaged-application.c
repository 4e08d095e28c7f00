/* kaged-application.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-application"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-application.h"
#include "kaged-desktop.h"
#include "kaged-headless.h"
#include "kaged-options.h"
#include "kaged-preferences-window.h"
#include "kaged-store-errors.h"
#include "kaged-window.h"

/**
 * KagedApplication:
 *
 * The application: command-line options, app actions and their
 * accelerators, and the one KagedCore it starts on first activation (or,
 * with `--headless`, without a window), tied to the desktop by a
 * KagedDesktop.
 */
struct _KagedApplication
{
  AdwApplication parent_instance;

  GSettings *settings;
  KagedProfiles *profiles;
  KagedOptions options;
  KagedCore *core;
  KagedDesktop *desktop;
  GError *store_error;
  char *store_path;
  GCancellable *check_cancellable;
};

G_DEFINE_FINAL_TYPE (KagedApplication, kaged_application, ADW_TYPE_APPLICATION)

enum {
  PROP_0,
  PROP_DATA_DIR,
  PROP_STORE,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static int
check_database (KagedApplication *self)
{
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *path = kaged_options_dup_db_path (&self->options);

  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_print (_("There is no conversation database at “%s” yet. Kaged creates it when it "
                 "starts."), path);
      g_print ("\n");
      return EXIT_SUCCESS;
    }

  store = kaged_store_open (path, &error);
  if (store != NULL && !kaged_store_check (store, NULL, &error))
    g_clear_object (&store);

  if (store == NULL)
    {
      g_autofree char *description = kaged_describe_store_error (error, path);

      g_printerr ("%s: %s\n%s\n", PACKAGE_NAME,
                  _("The conversation database could not be opened"), description);
      return EXIT_FAILURE;
    }

  g_print (_("The conversation database at “%s” is in good order."), path);
  g_print ("\n");

  return EXIT_SUCCESS;
}

static int
kaged_application_handle_local_options (GApplication *application,
                                        GVariantDict *options)
{
  KagedApplication *self = KAGED_APPLICATION (application);
  g_autoptr(GError) error = NULL;

  if (g_variant_dict_contains (options, "version"))
    {
      g_print ("%s %s\n", PACKAGE_NAME, PACKAGE_VERSION);
      return EXIT_SUCCESS;
    }

  kaged_options_clear (&self->options);
  if (!kaged_options_read (&self->options, options, &error))
    {
      g_printerr ("%s: %s\n", PACKAGE_NAME, error->message);
      return EXIT_FAILURE;
    }

  if (self->options.data_dir != NULL)
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_DATA_DIR]);

  if (g_variant_dict_contains (options, "check-database"))
    return check_database (self);

  /* No window, no display: the same core, serving the local HTTP API. */
  if (self->options.headless)
    return kaged_headless_run (&self->options);

  /* The database, and a provider given for this run, are chosen by the
   * instance that starts first; a second start only brings that one
   * forward. */
  if (self->options.data_dir != NULL || kaged_options_has_provider (&self->options))
    {
      if (!g_application_register (application, NULL, &error))
        {
          g_printerr ("%s: %s\n", PACKAGE_NAME, error->message);
          return EXIT_FAILURE;
        }

      if (g_application_get_is_remote (application))
        {
          g_printerr ("%s: ", PACKAGE_NAME);
          g_printerr (_("Kaged is already running with its own database and provider; "
                        "--data-dir and the provider options apply only when Kaged starts."));
          g_printerr ("\n");
        }
    }

  return G_APPLICATION_CLASS (kaged_application_parent_class)->handle_local_options (application,
                                                                                      options);
}

static void
kaged_application_store_dialog_response (AdwMessageDialog *dialog,
                                         const char       *response,
                                         KagedApplication *self)
{
  g_application_quit (G_APPLICATION (self));
}

static void
kaged_application_show_store_error (KagedApplication *self,
                                    GtkWindow        *parent)
{
  g_autofree char *description = NULL;
  const char *heading = _("The conversation database could not be opened");
  GtkWidget *dialog;

  g_assert (self->store_error != NULL);

  description = kaged_describe_store_error (self->store_error, self->store_path);

  dialog = adw_message_dialog_new (parent, heading, description);
  /* The title names the dialog for assistive technologies. */
  gtk_window_set_title (GTK_WINDOW (dialog), heading);
  adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "quit", _("_Quit"));
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "quit");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "quit");
  g_signal_connect_object (dialog, "response",
                           G_CALLBACK (kaged_application_store_dialog_response),
                           self, 0);

  gtk_window_present (GTK_WINDOW (dialog));
}

static void
kaged_application_damage_dialog_response (AdwMessageDialog *dialog,
                                          const char       *response,
                                          KagedApplication *self)
{
  if (g_strcmp0 (response, "quit") == 0)
    g_application_quit (G_APPLICATION (self));
}

static void
kaged_application_show_damage (KagedApplication *self,
                               const GError     *error)
{
  g_autofree char *description = NULL;
  const char *heading = _("The conversation database is damaged");
  GtkWindow *parent = gtk_application_get_active_window (GTK_APPLICATION (self));
  GtkWidget *dialog;

  description = g_strdup_printf (_("Kaged found damage in “%s”, so some conversations may be "
                                   "incomplete. The file was left as it is: quit and restore "
                                   "it from a backup, or go on using it."),
                                 self->store_path);
  g_printerr ("%s: %s\n%s\n%s\n", PACKAGE_NAME, heading, description, error->message);

  dialog = adw_message_dialog_new (parent, heading, description);
  gtk_window_set_title (GTK_WINDOW (dialog), heading);
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog),
                                    "quit", _("_Quit"),
                                    "continue", _("_Continue"),
                                    NULL);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "continue");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "continue");
  g_signal_connect_object (dialog, "response",
                           G_CALLBACK (kaged_application_damage_dialog_response),
                           self, 0);

  gtk_window_present (GTK_WINDOW (dialog));
}

static void
kaged_application_check_cb (GObject      *object,
                            GAsyncResult *result,
                            gpointer      user_data)
{
  g_autoptr(KagedApplication) self = user_data;
  g_autoptr(GError) error = NULL;

  if (kaged_store_check_finish (KAGED_STORE (object), result, &error))
    return;

  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;

  if (g_error_matches (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_CORRUPT))
    {
      kaged_application_show_damage (self, error);
      return;
    }

  g_printerr ("%s: %s\n", PACKAGE_NAME, error->message);
}

static GSettings *
kaged_application_get_settings (KagedApplication *self)
{
  /* Created on first use: --version and --check-database need no schema. */
  if (self->settings == NULL)
    self->settings = g_settings_new (BASE_APPLICATION_ID);

  return self->settings;
}

static KagedProfiles *
kaged_application_get_profiles (KagedApplication *self)
{
  if (self->profiles == NULL)
    self->profiles = kaged_profiles_new (kaged_application_get_settings (self));

  return self->profiles;
}

static void
desktop_show_session_cb (KagedDesktop     *desktop,
                         gint64            session_id,
                         KagedApplication *self)
{
  GtkWindow *window = gtk_application_get_active_window (GTK_APPLICATION (self));

  if (KAGED_IS_WINDOW (window))
    kaged_window_show_session (KAGED_WINDOW (window), session_id);
}

static void
kaged_application_ensure_core (KagedApplication *self)
{
  g_autoptr(GError) error = NULL;

  if (self->core != NULL || self->store_error != NULL)
    return;

  g_free (self->store_path);
  self->store_path = kaged_options_dup_db_path (&self->options);

  /* Tier 2 always runs behind the window. */
  self->core = kaged_core_open (self->store_path, NULL,
                                kaged_options_get_core_flags (&self->options, TRUE), &error);
  if (self->core == NULL)
    {
      g_autofree char *description = kaged_describe_store_error (error, self->store_path);

      g_printerr ("%s: %s\n%s\n", PACKAGE_NAME,
                  _("The conversation database could not be opened"), description);
      self->store_error = g_steal_pointer (&error);
      return;
    }

  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_STORE]);

  /* Opening reads little of the file; read all of it in the background
   * to find damage early. */
  self->check_cancellable = g_cancellable_new ();
  kaged_store_check_async (kaged_core_get_store (self->core), self->check_cancellable,
                           kaged_application_check_cb, g_object_ref (self));

  /* The engine behind the window follows the preferences. */
  kaged_core_set_profiles (self->core, kaged_application_get_profiles (self));
  self->desktop = kaged_desktop_new (G_APPLICATION (self), kaged_application_get_settings (self),
                                     self->core, &self->options);
  g_signal_connect_object (self->desktop, "show-session",
                           G_CALLBACK (desktop_show_session_cb), self, 0);

  /* Queued runs start again; saved retries resumed with the core. */
  kaged_core_start (self->core);
}

static void
kaged_application_activate (GApplication *application)
{
  KagedApplication *self = KAGED_APPLICATION (application);
  GtkWindow *window;

  kaged_application_ensure_core (self);

  window = gtk_application_get_active_window (GTK_APPLICATION (self));
  if (window == NULL)
    {
      window = GTK_WINDOW (kaged_window_new (GTK_APPLICATION (self)));
      if (self->core != NULL)
        kaged_window_set_core (KAGED_WINDOW (window), self->core);
      gtk_window_present (window);

      if (self->store_error != NULL)
        kaged_application_show_store_error (self, window);

      return;
    }

  gtk_window_present (window);
}

static void
kaged_application_quit_action (GSimpleAction *action,
                               GVariant      *parameter,
                               gpointer       user_data)
{
  KagedApplication *self = user_data;
  GList *windows;

  /* Closing the windows lets each one save its state first. */
  windows = g_list_copy_deep (gtk_application_get_windows (GTK_APPLICATION (self)),
                              (GCopyFunc) g_object_ref, NULL);
  for (const GList *iter = windows; iter != NULL; iter = iter->next)
    gtk_window_close (GTK_WINDOW (iter->data));
  g_list_free_full (windows, g_object_unref);

  g_application_quit (G_APPLICATION (self));
}

static void
kaged_application_preferences_action (GSimpleAction *action,
                                      GVariant      *parameter,
                                      gpointer       user_data)
{
  KagedApplication *self = user_data;
  GtkWindow *parent = gtk_application_get_active_window (GTK_APPLICATION (self));
  KagedPreferencesWindow *preferences;

  preferences = kaged_preferences_window_new (parent);
  kaged_preferences_window_set_core (preferences, self->core);
  gtk_window_present (GTK_WINDOW (preferences));
}

/* The Preferences, at the page of the profile the parameter names. */
static void
kaged_application_preferences_profile_action (GSimpleAction *action,
                                              GVariant      *parameter,
                                              gpointer       user_data)
{
  KagedApplication *self = user_data;
  GtkWindow *parent = gtk_application_get_active_window (GTK_APPLICATION (self));
  const char *id = g_variant_get_string (parameter, NULL);
  KagedPreferencesWindow *preferences;

  preferences = kaged_preferences_window_new (parent);
  kaged_preferences_window_set_core (preferences, self->core);
  gtk_window_present (GTK_WINDOW (preferences));
  if (!kaged_preferences_window_show_profile (preferences, id))
    g_debug ("There is no profile “%s” to show", id);
}

static char *
kaged_application_debug_info (KagedApplication *self)
{
  GString *info = g_string_new (NULL);

  g_string_append_printf (info, "Kaged %s (%s)\n", PACKAGE_VERSION, APPLICATION_ID);
  g_string_append_printf (info, "Profile: %s\n", PROFILE);
  g_string_append_printf (info, "Database: %s\n",
                          self->store_path != NULL ? self->store_path : "(not opened)");
  g_string_append_printf (info, "GLib %u.%u.%u\n",
                          glib_major_version, glib_minor_version, glib_micro_version);
  g_string_append_printf (info, "GTK %u.%u.%u\n",
                          gtk_get_major_version (), gtk_get_minor_version (),
                          gtk_get_micro_version ());
  g_string_append_printf (info, "libadwaita %u.%u.%u\n",
                          adw_get_major_version (), adw_get_minor_version (),
                          adw_get_micro_version ());

  return g_string_free (info, FALSE);
}

static void
kaged_application_about_action (GSimpleAction *action,
                                GVariant      *parameter,
                                gpointer       user_data)
{
  static const char *developers[] = { "The Kaged developers", NULL };
  KagedApplication *self = user_data;
  GtkWindow *parent = gtk_application_get_active_window (GTK_APPLICATION (self));
  g_autofree char *debug_info = kaged_application_debug_info (self);
  GtkWidget *about;

  about = g_object_new (ADW_TYPE_ABOUT_WINDOW,
                        "transient-for", parent,
                        "application-icon", APPLICATION_ID,
                        "application-name", g_get_application_name (),
                        "developer-name", _("The Kaged developers"),
                        "version", PACKAGE_VERSION,
                        "comments", _("Chat with language models that keep trying."),
                        "website", "https://github.com/kaged/kaged",
                        "issue-url", "https://github.com/kaged/kaged/issues",
                        "copyright", _("© 2026 The Kaged developers"),
                        "license-type", GTK_LICENSE_GPL_3_0,
                        "developers", developers,
                        /* Translators: Replace "translator-credits" with your name/alias and
                         * email, one per line. */
                        "translator-credits", _("translator-credits"),
                        "debug-info", debug_info,
                        "debug-info-filename", "kaged-debug-info.txt",
                        NULL);

  gtk_window_present (GTK_WINDOW (about));
}

static const GActionEntry app_actions[] = {
  { "quit", kaged_application_quit_action },
  { "preferences", kaged_application_preferences_action },
  { "preferences-profile", kaged_application_preferences_profile_action, "s" },
  { "about", kaged_application_about_action },
};

static void
kaged_application_startup (GApplication *application)
{
  static const char *quit_accels[] = { "<Control>q", NULL };
  static const char *preferences_accels[] = { "<Control>comma", NULL };
  static const char *help_overlay_accels[] = { "<Control>question", NULL };
  KagedApplication *self = KAGED_APPLICATION (application);

  G_APPLICATION_CLASS (kaged_application_parent_class)->startup (application);

  g_action_map_add_action_entries (G_ACTION_MAP (self), app_actions,
                                   G_N_ELEMENTS (app_actions), self);

  gtk_application_set_accels_for_action (GTK_APPLICATION (self), "app.quit", quit_accels);
  gtk_application_set_accels_for_action (GTK_APPLICATION (self), "app.preferences",
                                         preferences_accels);
  gtk_application_set_accels_for_action (GTK_APPLICATION (self), "win.show-help-overlay",
                                         help_overlay_accels);
}

static void
kaged_application_shutdown (GApplication *application)
{
  KagedApplication *self = KAGED_APPLICATION (application);

  g_cancellable_cancel (self->check_cancellable);
  if (self->desktop != NULL)
    kaged_desktop_shutdown (self->desktop);

  G_APPLICATION_CLASS (kaged_application_parent_class)->shutdown (application);

  /* The windows saved their state as they closed; get it to disk. */
  g_settings_sync ();
}

static void
kaged_application_finalize (GObject *object)
{
  KagedApplication *self = KAGED_APPLICATION (object);

  g_clear_object (&self->desktop);
  g_clear_object (&self->core);
  g_clear_object (&self->check_cancellable);
  g_clear_object (&self->profiles);
  g_clear_object (&self->settings);
  g_clear_error (&self->store_error);
  g_clear_pointer (&self->store_path, g_free);
  kaged_options_clear (&self->options);

  G_OBJECT_CLASS (kaged_application_parent_class)->finalize (object);
}

static void
kaged_application_get_property (GObject    *object,
                                guint       prop_id,
                                GValue     *value,
                                GParamSpec *pspec)
{
  KagedApplication *self = KAGED_APPLICATION (object);

  switch (prop_id)
    {
    case PROP_DATA_DIR:
      g_value_set_string (value, self->options.data_dir);
      break;

    case PROP_STORE:
      g_value_set_object (value, self->core != NULL ? kaged_core_get_store (self->core) : NULL);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_application_class_init (KagedApplicationClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GApplicationClass *app_class = G_APPLICATION_CLASS (klass);

  object_class->finalize = kaged_application_finalize;
  object_class->get_property = kaged_application_get_property;

  app_class->handle_local_options = kaged_application_handle_local_options;
  app_class->startup = kaged_application_startup;
  app_class->activate = kaged_application_activate;
  app_class->shutdown = kaged_application_shutdown;

  /**
   * KagedApplication:data-dir:
   *
   * The folder given with --data-dir, or %NULL for the default.
   */
  properties [PROP_DATA_DIR] =
    g_param_spec_string ("data-dir", NULL, NULL,
                         NULL,
                         (G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  /**
   * KagedApplication:store:
   *
   * The conversation store, once it opened.
   */
  properties [PROP_STORE] =
    g_param_spec_object ("store", NULL, NULL,
                         KAGED_TYPE_STORE,
                         (G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_application_init (KagedApplication *self)
{
  kaged_options_add_entries (G_APPLICATION (self));
  g_application_set_option_context_summary (G_APPLICATION (self),
                                            _("Chat with language models that keep trying."));
}

/**
 * kaged_application_new:
 *
 * Returns: (transfer full): the application, ready for g_application_run()
 */
KagedApplication *
kaged_application_new (void)
{
  return g_object_new (KAGED_TYPE_APPLICATION,
                       "application-id", APPLICATION_ID,
                       "resource-base-path", APPLICATION_PATH,
                       "flags", G_APPLICATION_DEFAULT_FLAGS,
                       NULL);
}

/**
 * kaged_application_get_data_dir:
 * @self: a #KagedApplication
 *
 * Returns: (nullable): the folder given with --data-dir, or %NULL
 */
const char *
kaged_application_get_data_dir (KagedApplication *self)
{
  g_return_val_if_fail (KAGED_IS_APPLICATION (self), NULL);

  return self->options.data_dir;
}

/**
 * kaged_application_get_store:
 * @self: a #KagedApplication
 *
 * Returns: (transfer none) (nullable): the conversation store, or %NULL
 *   before activation or when it could not be opened
 */
KagedStore *
kaged_application_get_store (KagedApplication *self)
{
  g_return_val_if_fail (KAGED_IS_APPLICATION (self), NULL);

  return self->core != NULL ? kaged_core_get_store (self->core) : NULL;
}

/**
 * kaged_application_dup_profile:
 * @self: a #KagedApplication
 *
 * The provider profile replies come from, as it is now: the default
 * profile, with what the command line gives for this run in its place.
 *
 * Returns: (transfer full): a copy, which follows nothing
 */
KagedProfile *
kaged_application_dup_profile (KagedApplication *self)
{
  KagedProfile *base;
  g_autoptr(KagedProfile) profile = NULL;

  g_return_val_if_fail (KAGED_IS_APPLICATION (self), NULL);

  base = kaged_profiles_get_default (kaged_application_get_profiles (self));
  profile = kaged_options_build_profile (&self->options, base, NULL);
  if (profile == NULL)
    profile = kaged_profile_copy (base);

  return g_steal_pointer (&profile);
}

/**
 * kaged_application_get_core:
 * @self: a #KagedApplication
 *
 * Returns: (transfer none) (nullable): the engine behind the window, its
 *   retries and the local HTTP API, running once the store opened; %NULL
 *   before that or when it could not be opened
 */
KagedCore *
kaged_application_get_core (KagedApplication *self)
{
  g_return_val_if_fail (KAGED_IS_APPLICATION (self), NULL);

  return self->core;
}
