/* kaged-preferences-window.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-preferences"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-api-token.h"
#include "kaged-preferences-window.h"
#include "kaged-profile.h"

/**
 * KagedPreferencesWindow:
 *
 * The preferences: the provider profile (kind, base URL, model and where
 * its API key comes from) and the local HTTP API, each row bound to its
 * GSettings key.
 */
struct _KagedPreferencesWindow
{
  AdwPreferencesWindow parent_instance;

  GSettings *settings;
  GSettings *profile_settings;
  KagedProfiles *profiles;
  KagedCore *core;

  /* Template children */
  AdwComboRow *kind_row;
  GtkSpinButton *input_price_button;
  GtkSpinButton *output_price_button;
  AdwComboRow *spend_period_row;
  GtkSpinButton *spend_limit_button;
  AdwEntryRow *base_url_row;
  AdwEntryRow *model_row;
  AdwEntryRow *api_key_env_row;
  AdwPreferencesGroup *api_group;
  GtkSwitch *api_enabled_switch;
  GtkSpinButton *api_port_button;
  AdwActionRow *api_status_row;
};

G_DEFINE_FINAL_TYPE (KagedPreferencesWindow, kaged_preferences_window, ADW_TYPE_PREFERENCES_WINDOW)

/* The provider kinds in the order of the combo row, with the base URL a
 * fresh profile of that kind starts from. */
static const struct {
  const char *kind;
  const char *default_base_url;
} provider_kinds[] = {
  { "ollama", KAGED_PROFILE_DEFAULT_OLLAMA_URL },
  { "openai", KAGED_PROFILE_DEFAULT_OPENAI_URL },
  { "anthropic", KAGED_PROFILE_DEFAULT_ANTHROPIC_URL },
};

static gboolean
kind_to_position (GValue   *value,
                  GVariant *variant,
                  gpointer  user_data)
{
  const char *kind = g_variant_get_string (variant, NULL);

  for (guint i = 0; i < G_N_ELEMENTS (provider_kinds); i++)
    {
      if (g_str_equal (kind, provider_kinds[i].kind))
        {
          g_value_set_uint (value, i);
          return TRUE;
        }
    }

  return FALSE;
}

static GVariant *
position_to_kind (const GValue       *value,
                  const GVariantType *expected_type,
                  gpointer            user_data)
{
  guint position = g_value_get_uint (value);

  if (position >= G_N_ELEMENTS (provider_kinds))
    return NULL;

  return g_variant_new_string (provider_kinds[position].kind);
}

/* The spend limit's period, in the order of the combo row. */
static const char * const spend_periods[] = { "none", "daily", "monthly" };

static gboolean
period_to_position (GValue   *value,
                    GVariant *variant,
                    gpointer  user_data)
{
  const char *period = g_variant_get_string (variant, NULL);

  for (guint i = 0; i < G_N_ELEMENTS (spend_periods); i++)
    {
      if (g_str_equal (period, spend_periods[i]))
        {
          g_value_set_uint (value, i);
          return TRUE;
        }
    }

  return FALSE;
}

static GVariant *
position_to_period (const GValue       *value,
                    const GVariantType *expected_type,
                    gpointer            user_data)
{
  guint position = g_value_get_uint (value);

  if (position >= G_N_ELEMENTS (spend_periods))
    return NULL;

  return g_variant_new_string (spend_periods[position]);
}

static gboolean
is_default_base_url (const char *url)
{
  for (guint i = 0; i < G_N_ELEMENTS (provider_kinds); i++)
    {
      if (g_strcmp0 (url, provider_kinds[i].default_base_url) == 0)
        return TRUE;
    }

  return FALSE;
}

/* Switching the kind moves an untouched base URL along to the new kind's
 * usual address; an address the user typed is kept. */
static void
kaged_preferences_window_kind_changed (KagedPreferencesWindow *self,
                                       const char             *key,
                                       GSettings              *settings)
{
  g_autofree char *kind = g_settings_get_string (settings, "kind");
  g_autofree char *base_url = g_settings_get_string (settings, "base-url");

  if (base_url[0] != '\0' && !is_default_base_url (base_url))
    return;

  for (guint i = 0; i < G_N_ELEMENTS (provider_kinds); i++)
    {
      if (g_str_equal (kind, provider_kinds[i].kind) &&
          g_strcmp0 (base_url, provider_kinds[i].default_base_url) != 0)
        {
          g_settings_set_string (settings, "base-url",
                                 provider_kinds[i].default_base_url);
          break;
        }
    }
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
  g_clear_object (&self->profile_settings);
  g_clear_object (&self->profiles);
  g_clear_object (&self->settings);

  G_OBJECT_CLASS (kaged_preferences_window_parent_class)->finalize (object);
}

static void
kaged_preferences_window_dispose (GObject *object)
{
  KagedPreferencesWindow *self = KAGED_PREFERENCES_WINDOW (object);

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
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, kind_row);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, base_url_row);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, model_row);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, api_key_env_row);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, input_price_button);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, output_price_button);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, spend_period_row);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, spend_limit_button);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, api_group);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, api_enabled_switch);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, api_port_button);
  gtk_widget_class_bind_template_child (widget_class, KagedPreferencesWindow, api_status_row);

  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_w, GDK_CONTROL_MASK,
                                       "window.close", NULL);
}

static void
kaged_preferences_window_init (KagedPreferencesWindow *self)
{
  g_autofree char *token_path = NULL;
  g_autofree char *api_description = NULL;

  gtk_widget_init_template (GTK_WIDGET (self));

  self->settings = g_settings_new (BASE_APPLICATION_ID);
  self->profiles = kaged_profiles_new (self->settings);
  {
    g_autofree char *path = NULL;
    g_autofree char *profile_path = NULL;

    g_object_get (self->settings, "path", &path, NULL);
    profile_path = g_strdup_printf ("%sprofiles/%s/", path,
                                    kaged_profile_get_id (kaged_profiles_get_default (self->profiles)));
    self->profile_settings = g_settings_new_with_path (KAGED_PROFILE_SCHEMA_ID, profile_path);
  }

  g_settings_bind_with_mapping (self->profile_settings, "kind",
                                self->kind_row, "selected",
                                G_SETTINGS_BIND_DEFAULT,
                                kind_to_position, position_to_kind,
                                NULL, NULL);
  g_settings_bind (self->profile_settings, "base-url",
                   self->base_url_row, "text",
                   G_SETTINGS_BIND_DEFAULT);
  g_settings_bind (self->profile_settings, "model",
                   self->model_row, "text",
                   G_SETTINGS_BIND_DEFAULT);
  g_settings_bind (self->profile_settings, "api-key-env",
                   self->api_key_env_row, "text",
                   G_SETTINGS_BIND_DEFAULT);

  g_signal_connect_object (self->profile_settings, "changed::kind",
                           G_CALLBACK (kaged_preferences_window_kind_changed),
                           self, G_CONNECT_SWAPPED);

  g_settings_bind (self->profile_settings, "input-price",
                   gtk_spin_button_get_adjustment (self->input_price_button), "value",
                   G_SETTINGS_BIND_DEFAULT);
  g_settings_bind (self->profile_settings, "output-price",
                   gtk_spin_button_get_adjustment (self->output_price_button), "value",
                   G_SETTINGS_BIND_DEFAULT);
  g_settings_bind_with_mapping (self->profile_settings, "spend-limit-period",
                                self->spend_period_row, "selected",
                                G_SETTINGS_BIND_DEFAULT,
                                period_to_position, position_to_period,
                                NULL, NULL);
  g_settings_bind (self->profile_settings, "spend-limit",
                   gtk_spin_button_get_adjustment (self->spend_limit_button), "value",
                   G_SETTINGS_BIND_DEFAULT);
  g_object_bind_property (self->spend_period_row, "selected",
                          self->spend_limit_button, "sensitive",
                          G_BINDING_SYNC_CREATE);

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

/**
 * kaged_preferences_window_set_core:
 * @self: a #KagedPreferencesWindow
 * @core: (nullable): the running core
 *
 * Shows where the local HTTP API of @core listens, or why it could not be
 * switched on, and follows it while the window is open.
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

  if (core != NULL)
    {
      g_signal_connect_object (core, "notify::api-url",
                               G_CALLBACK (kaged_preferences_window_update_api_status),
                               self, G_CONNECT_SWAPPED);
      g_signal_connect_object (core, "notify::api-error",
                               G_CALLBACK (kaged_preferences_window_update_api_status),
                               self, G_CONNECT_SWAPPED);
    }

  kaged_preferences_window_update_api_status (self);
}
