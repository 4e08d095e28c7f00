/* kaged-preferences-window.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-preferences"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-api-token.h"
#include "kaged-preferences-window.h"
#include "kaged-profile-page.h"

/**
 * KagedPreferencesWindow:
 *
 * The preferences: the provider profiles, listed on the Providers page
 * with the default marked, each edited on a subpage of its own
 * (KagedProfilePage), and the local HTTP API, its rows bound to their
 * GSettings keys.
 */
struct _KagedPreferencesWindow
{
  AdwPreferencesWindow parent_instance;

  GSettings *settings;
  KagedProfiles *profiles;
  KagedKeyring *keyring;
  KagedCore *core;

  /* Template children */
  AdwPreferencesGroup *profiles_group;
  GtkListBox *profile_list;
  AdwPreferencesGroup *api_group;
  GtkSwitch *api_enabled_switch;
  GtkSpinButton *api_port_button;
  AdwActionRow *api_status_row;
};

static void update_profiles_description (KagedPreferencesWindow *self);

G_DEFINE_FINAL_TYPE (KagedPreferencesWindow, kaged_preferences_window, ADW_TYPE_PREFERENCES_WINDOW)

/* One row per profile: its name, what it is, and whether it is the
 * default. */

static void
update_profile_row (AdwActionRow *row)
{
  KagedProfile *profile = g_object_get_data (G_OBJECT (row), "kaged-profile");
  KagedProfiles *profiles = g_object_get_data (G_OBJECT (row), "kaged-profiles");
  GtkWidget *default_label = g_object_get_data (G_OBJECT (row), "kaged-default-label");
  const char *model = kaged_profile_get_model (profile);
  g_autofree char *subtitle = NULL;

  if (model != NULL && model[0] != '\0')
    /* Translators: a provider kind, then the profile's default model */
    subtitle = g_strdup_printf (_("%s · %s"),
                                kaged_provider_kind_to_label (kaged_profile_get_kind (profile)),
                                model);
  else
    subtitle = g_strdup (kaged_provider_kind_to_label (kaged_profile_get_kind (profile)));

  adw_action_row_set_subtitle (row, subtitle);
  gtk_widget_set_visible (default_label, kaged_profiles_get_default (profiles) == profile);
}

static gboolean
name_to_title (GBinding     *binding,
               const GValue *from,
               GValue       *to,
               gpointer      user_data)
{
  const char *name = g_value_get_string (from);

  g_value_set_string (to, name != NULL && name[0] != '\0' ? name : _("Unnamed Profile"));
  return TRUE;
}

static void
profile_row_activated_cb (AdwActionRow           *row,
                          KagedPreferencesWindow *self)
{
  KagedProfile *profile = g_object_get_data (G_OBJECT (row), "kaged-profile");

  kaged_preferences_window_show_profile (self, kaged_profile_get_id (profile));
}

static GtkWidget *
create_profile_row (gpointer item,
                    gpointer user_data)
{
  KagedPreferencesWindow *self = user_data;
  KagedProfile *profile = item;
  GtkWidget *row = adw_action_row_new ();
  GtkWidget *default_label = gtk_label_new (_("Default"));
  GtkWidget *arrow = gtk_image_new_from_icon_name ("go-next-symbolic");

  gtk_widget_add_css_class (default_label, "dim-label");
  gtk_widget_set_valign (default_label, GTK_ALIGN_CENTER);
  adw_action_row_add_suffix (ADW_ACTION_ROW (row), default_label);
  adw_action_row_add_suffix (ADW_ACTION_ROW (row), arrow);
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), TRUE);

  g_object_set_data_full (G_OBJECT (row), "kaged-profile", g_object_ref (profile), g_object_unref);
  g_object_set_data_full (G_OBJECT (row), "kaged-profiles", g_object_ref (self->profiles),
                          g_object_unref);
  g_object_set_data (G_OBJECT (row), "kaged-default-label", default_label);

  g_object_bind_property_full (profile, "name", row, "title", G_BINDING_SYNC_CREATE,
                               name_to_title, NULL, NULL, NULL);
  g_signal_connect_object (profile, "notify", G_CALLBACK (update_profile_row), row,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->profiles, "notify::default-profile",
                           G_CALLBACK (update_profile_row), row, G_CONNECT_SWAPPED);
  g_signal_connect_object (row, "activated", G_CALLBACK (profile_row_activated_cb), self, 0);
  update_profile_row (ADW_ACTION_ROW (row));

  return row;
}

static void
set_profiles (KagedPreferencesWindow *self,
              KagedProfiles          *profiles,
              KagedKeyring           *keyring)
{
  g_set_object (&self->keyring, keyring);

  if (self->profiles == profiles)
    return;

  /* A subpage shows a profile of the list that is going away. */
  adw_preferences_window_close_subpage (ADW_PREFERENCES_WINDOW (self));

  g_set_object (&self->profiles, profiles);
  gtk_list_box_bind_model (self->profile_list, G_LIST_MODEL (profiles),
                           create_profile_row, self, NULL);
}

static void
add_profile_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *parameter)
{
  KagedPreferencesWindow *self = KAGED_PREFERENCES_WINDOW (widget);
  g_autoptr(KagedProfile) profile = NULL;

  profile = kaged_profile_new (_("New Profile"), KAGED_PROVIDER_KIND_OLLAMA,
                               KAGED_PROFILE_DEFAULT_OLLAMA_URL, "llama3.2");
  kaged_profiles_add (self->profiles, profile);
  kaged_preferences_window_show_profile (self, kaged_profile_get_id (profile));
}

/* Where the API listens, or why it could not be switched on. */
static void
kaged_preferences_window_update_api_status (KagedPreferencesWindow *self)
{
  const char *url = NULL;
  const char *error = NULL;

  if (self->core != NULL)
    {
      url = kaged_core_get_api_url (self->core);
      error = kaged_core_get_api_error (self->core);
    }

  if (url != NULL)
    {
      adw_preferences_row_set_title (ADW_PREFERENCES_ROW (self->api_status_row), _("Address"));
      adw_action_row_set_subtitle (self->api_status_row, url);
    }
  else if (error != NULL)
    {
      adw_preferences_row_set_title (ADW_PREFERENCES_ROW (self->api_status_row),
                                     _("Could Not Start"));
      adw_action_row_set_subtitle (self->api_status_row, error);
    }

  gtk_widget_set_visible (GTK_WIDGET (self->api_status_row), url != NULL || error != NULL);
}

static void
kaged_preferences_window_finalize (GObject *object)
{
  KagedPreferencesWindow *self = KAGED_PREFERENCES_WINDOW (object);

  g_clear_object (&self->core);
  g_clear_object (&self->keyring);
  g_clear_object (&self->profiles);
  g_clear_object (&self->settings);

  G_OBJECT_CLASS (kaged_preferences_window_parent_class)->finalize (object);
}

static void
kaged_preferences_window_dispose (GObject *object)
{
  KagedPreferencesWindow *self = KAGED_PREFERENCES_WINDOW (object);

  /* The core outlives the window: nothing of it reaches the window's
   * children once they are gone. */
  if (self->core != NULL)
    g_signal_handlers_disconnect_by_data (self->core, self);
  g_clear_object (&self->core);
  if (self->profile_list != NULL)
    gtk_list_box_bind_model (self->profile_list, NULL, NULL, NULL, NULL);
  gtk_widget_dispose_template (GTK_WIDGET (self), KAGED_TYPE_PREFERENCES_WINDOW);

  G_OBJECT_CLASS (kaged_preferences_window_parent_class)->dispose (object);
}

static void
kaged_preferences_window_class_init (KagedPreferencesWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_preferences_window_dispose;
  object_class->finalize = kaged_preferences_window_finalize;

  gtk_widget_class_set_template_from_resource (widget_class,
                                               APPLICATION_PATH "/kaged-preferences-window.ui");
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, profiles_group);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, profile_list);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, api_group);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, api_enabled_switch);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, api_port_button);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, api_status_row);

  gtk_widget_class_install_action (widget_class, "preferences.add-profile", NULL,
                                   add_profile_action);

  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_w, GDK_CONTROL_MASK,
                                       "window.close", NULL);
}

static void
kaged_preferences_window_init (KagedPreferencesWindow *self)
{
  g_autofree char *token_path = NULL;
  g_autofree char *api_description = NULL;

  gtk_widget_init_template (GTK_WIDGET (self));
  update_profiles_description (self);

  self->settings = g_settings_new (BASE_APPLICATION_ID);

  /* The profiles of the settings, until a core hands its own. */
  {
    g_autoptr(KagedProfiles) profiles = kaged_profiles_new (self->settings);

    set_profiles (self, profiles, NULL);
  }

  g_settings_bind (self->settings, "api-enabled",
                   self->api_enabled_switch, "active",
                   G_SETTINGS_BIND_DEFAULT);
  g_settings_bind (self->settings, "api-port",
                   gtk_spin_button_get_adjustment (self->api_port_button), "value",
                   G_SETTINGS_BIND_DEFAULT);

  token_path = kaged_api_token_default_path ();
  api_description = g_strdup_printf (_("Programs on this computer can read and post to your "
                                       "conversations over HTTP on 127.0.0.1. Every request "
                                       "needs the token kept in “%s”."),
                                     token_path);
  adw_preferences_group_set_description (self->api_group, api_description);
}

/**
 * kaged_preferences_window_new:
 * @transient_for: (nullable): the window the preferences belong to
 *
 * Returns: (transfer full): a new preferences window
 */
KagedPreferencesWindow *
kaged_preferences_window_new (GtkWindow *transient_for)
{
  g_return_val_if_fail (!transient_for || GTK_IS_WINDOW (transient_for), NULL);

  return g_object_new (KAGED_TYPE_PREFERENCES_WINDOW,
                       "transient-for", transient_for,
                       NULL);
}

/* A profile given on the command line is where this run's replies come
 * from, whatever the default profile: said where the profiles are. */
static void
update_profiles_description (KagedPreferencesWindow *self)
{
  KagedProfile *run = self->core != NULL ? kaged_core_get_run_profile (self->core) : NULL;
  g_autofree char *description = NULL;

  if (run != NULL)
    {
      const char *where = kaged_profile_get_base_url (run);
      const char *model = kaged_profile_get_model (run);

      if (where == NULL || where[0] == '\0')
        where = kaged_profile_get_name (run);

      if (model != NULL && model[0] != '\0')
        /* Translators: the first %s is a server's address (or a profile's
         * name), the second a model's name */
        description = g_strdup_printf (_("Until Kaged quits, replies come from %s with the model %s, "
                                         "as given on the command line. Otherwise they come from "
                                         "these profiles: new conversations start with the default "
                                         "one. A local Ollama needs no key."),
                                       where, model);
      else
        /* Translators: %s is a server's address, or a profile's name */
        description = g_strdup_printf (_("Until Kaged quits, replies come from %s, as given on the "
                                         "command line. Otherwise they come from these profiles: new "
                                         "conversations start with the default one. A local Ollama "
                                         "needs no key."),
                                       where != NULL ? where : "");
    }
  else
    description = g_strdup (_("Where replies come from. New conversations start with the default "
                              "profile. A local Ollama needs no key."));

  adw_preferences_group_set_description (self->profiles_group, description);
}

/**
 * kaged_preferences_window_set_core:
 * @self: a #KagedPreferencesWindow
 * @core: (nullable): the running core
 *
 * Shows the profiles of @core (whose keys are in its keyring), where its
 * local HTTP API listens, or why it could not be switched on, and follows
 * them while the window is open.
 */
void
kaged_preferences_window_set_core (KagedPreferencesWindow *self,
                                   KagedCore              *core)
{
  g_return_if_fail (KAGED_IS_PREFERENCES_WINDOW (self));
  g_return_if_fail (!core || KAGED_IS_CORE (core));

  if (self->core == core)
    return;

  if (self->core != NULL)
    g_signal_handlers_disconnect_by_data (self->core, self);

  g_set_object (&self->core, core);

  if (core != NULL && kaged_core_get_profiles (core) != NULL)
    set_profiles (self, kaged_core_get_profiles (core), kaged_core_get_keyring (core));

  if (core != NULL)
    {
      g_signal_connect_object (core, "notify::api-url",
                               G_CALLBACK (kaged_preferences_window_update_api_status),
                               self, G_CONNECT_SWAPPED);
      g_signal_connect_object (core, "notify::api-error",
                               G_CALLBACK (kaged_preferences_window_update_api_status),
                               self, G_CONNECT_SWAPPED);
      g_signal_connect_object (core, "notify::profile",
                               G_CALLBACK (update_profiles_description),
                               self, G_CONNECT_SWAPPED);
    }

  kaged_preferences_window_update_api_status (self);
  update_profiles_description (self);
}

/**
 * kaged_preferences_window_show_profile:
 * @id: a profile's id
 *
 * Opens the page of the profile @id, where it is edited.
 *
 * Returns: %TRUE, or %FALSE when there is no such profile
 */
gboolean
kaged_preferences_window_show_profile (KagedPreferencesWindow *self,
                                       const char             *id)
{
  KagedProfile *profile;

  g_return_val_if_fail (KAGED_IS_PREFERENCES_WINDOW (self), FALSE);

  profile = kaged_profiles_lookup (self->profiles, id);
  if (profile == NULL)
    return FALSE;

  adw_preferences_window_present_subpage (ADW_PREFERENCES_WINDOW (self),
                                          GTK_WIDGET (kaged_profile_page_new (self->profiles,
                                                                              profile,
                                                                              self->core,
                                                                              self->keyring)));
  return TRUE;
}
