/* kaged-preferences-window.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-preferences"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-preferences-window.h"
#include "kaged-profile.h"

/**
 * KagedPreferencesWindow:
 *
 * The preferences: the provider profile (kind, base URL, model and where
 * its API key comes from), each row bound to its GSettings key.
 */
struct _KagedPreferencesWindow
{
  AdwPreferencesWindow parent_instance;

  GSettings *settings;

  /* Template children */
  AdwComboRow *kind_row;
  AdwEntryRow *base_url_row;
  AdwEntryRow *model_row;
  AdwEntryRow *api_key_env_row;
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
  g_autofree char *kind = g_settings_get_string (settings, "provider-kind");
  g_autofree char *base_url = g_settings_get_string (settings, "provider-base-url");

  if (base_url[0] != '\0' && !is_default_base_url (base_url))
    return;

  for (guint i = 0; i < G_N_ELEMENTS (provider_kinds); i++)
    {
      if (g_str_equal (kind, provider_kinds[i].kind) &&
          g_strcmp0 (base_url, provider_kinds[i].default_base_url) != 0)
        {
          g_settings_set_string (settings, "provider-base-url",
                                 provider_kinds[i].default_base_url);
          break;
        }
    }
}

static void
kaged_preferences_window_finalize (GObject *object)
{
  KagedPreferencesWindow *self = KAGED_PREFERENCES_WINDOW (object);

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

  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_w, GDK_CONTROL_MASK,
                                       "window.close", NULL);
}

static void
kaged_preferences_window_init (KagedPreferencesWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));

  self->settings = g_settings_new (BASE_APPLICATION_ID);

  g_settings_bind_with_mapping (self->settings, "provider-kind",
                                self->kind_row, "selected",
                                G_SETTINGS_BIND_DEFAULT,
                                kind_to_position, position_to_kind,
                                NULL, NULL);
  g_settings_bind (self->settings, "provider-base-url",
                   self->base_url_row, "text",
                   G_SETTINGS_BIND_DEFAULT);
  g_settings_bind (self->settings, "provider-model",
                   self->model_row, "text",
                   G_SETTINGS_BIND_DEFAULT);
  g_settings_bind (self->settings, "provider-api-key-env",
                   self->api_key_env_row, "text",
                   G_SETTINGS_BIND_DEFAULT);

  g_signal_connect_object (self->settings, "changed::provider-kind",
                           G_CALLBACK (kaged_preferences_window_kind_changed),
                           self, G_CONNECT_SWAPPED);
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
