/* kaged-profile-page.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-preferences"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-core-settings.h"
#include "kaged-http.h"
#include "kaged-models.h"
#include "kaged-profile-page.h"
#include "kaged-retry-text.h"

/**
 * KagedProfilePage:
 *
 * One provider profile in Preferences, shown as a subpage: its name, kind,
 * address and default model, its API key (typed into a password row and
 * kept in the keyring, or an environment variable), the models its server
 * lists (with *Refresh*; a model name can always be typed), *Test
 * Connection*, its prices and spend limit, and *Make Default* and *Remove*. Every row is bound to the live
 * profile, so a change is saved as it is made.
 */
struct _KagedProfilePage
{
  GtkBox         parent_instance;

  KagedProfiles *profiles;
  KagedProfile  *profile;
  KagedKeyring  *keyring;
  KagedCore     *core;        /* nullable */
  KagedResolver *resolver;
  GCancellable  *cancellable;
  GCancellable  *test_cancellable;
  GCancellable  *models_cancellable;

  /* Template children */
  AdwWindowTitle *window_title;
  AdwEntryRow   *name_row;
  AdwComboRow   *kind_row;
  AdwEntryRow   *base_url_row;
  AdwEntryRow   *model_row;
  GtkMenuButton *models_button;
  AdwActionRow  *models_row;
  GtkSpinner    *models_spinner;
  AdwActionRow  *test_row;
  GtkSpinner    *test_spinner;
  AdwPreferencesGroup *key_group;
  AdwEntryRow   *key_row;
  AdwActionRow  *key_status_row;
  GtkButton     *forget_key_button;
  AdwEntryRow   *api_key_env_row;
  GtkSpinButton *input_price_button;
  GtkSpinButton *output_price_button;
  AdwComboRow   *spend_period_row;
  GtkSpinButton *spend_limit_button;
  AdwActionRow  *default_row;
  GtkButton     *make_default_button;
  GtkButton     *remove_button;
};

G_DEFINE_FINAL_TYPE (KagedProfilePage, kaged_profile_page, GTK_TYPE_BOX)

static gboolean
enum_to_position (GBinding     *binding,
                  const GValue *from,
                  GValue       *to,
                  gpointer      user_data)
{
  g_value_set_uint (to, (guint)g_value_get_enum (from));
  return TRUE;
}

static gboolean
position_to_enum (GBinding     *binding,
                  const GValue *from,
                  GValue       *to,
                  gpointer      user_data)
{
  guint position = g_value_get_uint (from);
  guint n_values = GPOINTER_TO_UINT (user_data);

  if (position >= n_values)
    return FALSE;

  g_value_set_enum (to, (int)position);
  return TRUE;
}

static gboolean
string_to_text (GBinding     *binding,
                const GValue *from,
                GValue       *to,
                gpointer      user_data)
{
  const char *text = g_value_get_string (from);

  g_value_set_string (to, text != NULL ? text : "");
  return TRUE;
}

static gboolean
kind_wants_key (GBinding     *binding,
                const GValue *from,
                GValue       *to,
                gpointer      user_data)
{
  g_value_set_boolean (to, g_value_get_enum (from) != KAGED_PROVIDER_KIND_OLLAMA);
  return TRUE;
}

static gboolean
period_has_limit (GBinding     *binding,
                  const GValue *from,
                  GValue       *to,
                  gpointer      user_data)
{
  g_value_set_boolean (to, g_value_get_enum (from) != KAGED_SPEND_PERIOD_NONE);
  return TRUE;
}

static gboolean
is_kind_default_url (const char *url)
{
  static const KagedProviderKind kinds[] = {
    KAGED_PROVIDER_KIND_OLLAMA, KAGED_PROVIDER_KIND_OPENAI, KAGED_PROVIDER_KIND_ANTHROPIC,
  };

  if (url == NULL || url[0] == '\0')
    return TRUE;

  for (guint i = 0; i < G_N_ELEMENTS (kinds); i++)
    {
      if (g_str_equal (url, kaged_provider_kind_default_url (kinds[i])))
        return TRUE;
    }

  return FALSE;
}

/* Choosing another kind moves an untouched base URL along to the new
 * kind's usual address; an address the user typed is kept. */
static void
kind_selected_cb (KagedProfilePage *self)
{
  KagedProviderKind kind = kaged_profile_get_kind (self->profile);
  const char *default_url = kaged_provider_kind_default_url (kind);
  const char *base_url = gtk_editable_get_text (GTK_EDITABLE (self->base_url_row));

  if (is_kind_default_url (base_url) && g_strcmp0 (base_url, default_url) != 0)
    kaged_profile_set_base_url (self->profile, default_url);
}

static void
update_default (KagedProfilePage *self)
{
  gboolean is_default = kaged_profiles_get_default (self->profiles) == self->profile;

  gtk_widget_action_set_enabled (GTK_WIDGET (self), "profile.make-default", !is_default);
  adw_action_row_set_subtitle (self->default_row,
                               is_default ? _("New conversations start with this profile")
                                          : _("New conversations start with the default profile"));
}

static void
close_page (KagedProfilePage *self)
{
  GtkWidget *window = gtk_widget_get_ancestor (GTK_WIDGET (self), ADW_TYPE_PREFERENCES_WINDOW);

  if (window != NULL)
    adw_preferences_window_close_subpage (ADW_PREFERENCES_WINDOW (window));
}

static void
profiles_changed_cb (KagedProfilePage *self)
{
  guint n_profiles = g_list_model_get_n_items (G_LIST_MODEL (self->profiles));

  gtk_widget_action_set_enabled (GTK_WIDGET (self), "profile.remove", n_profiles > 1);

  /* Removed meanwhile, here or elsewhere: nothing left to show. */
  if (kaged_profiles_lookup (self->profiles, kaged_profile_get_id (self->profile)) != self->profile)
    close_page (self);
}

/* The keyring: whether it holds a key for the profile (never the key
 * itself on screen), storing a typed key and forgetting it. */

static void
show_key_state (KagedProfilePage *self,
                const char       *state,
                gboolean          has_key)
{
  adw_action_row_set_subtitle (self->key_status_row, state);
  gtk_widget_set_visible (GTK_WIDGET (self->forget_key_button), has_key);
}

static void
key_looked_up_cb (GObject      *object,
                  GAsyncResult *result,
                  gpointer      user_data)
{
  g_autoptr(KagedProfilePage) self = user_data;
  g_autoptr(GError) error = NULL;
  char *key;

  key = kaged_keyring_lookup_finish (KAGED_KEYRING (object), result, &error);
  if (g_cancellable_is_cancelled (self->cancellable))
    {
      kaged_keyring_free_key (key);
      return;
    }

  if (error != NULL)
    show_key_state (self, _("The keyring could not be asked"), FALSE);
  else if (key != NULL)
    show_key_state (self, _("A key is stored in the keyring"), TRUE);
  else
    show_key_state (self, _("No key is stored in the keyring"), FALSE);

  kaged_keyring_free_key (key);
}

static void
refresh_key_state (KagedProfilePage *self)
{
  if (self->keyring == NULL)
    {
      show_key_state (self, _("No keyring is available"), FALSE);
      gtk_widget_set_sensitive (GTK_WIDGET (self->key_row), FALSE);
      return;
    }

  kaged_keyring_lookup_async (self->keyring, kaged_profile_get_key_id (self->profile),
                              self->cancellable, key_looked_up_cb, g_object_ref (self));
}

static void
key_stored_cb (GObject      *object,
               GAsyncResult *result,
               gpointer      user_data)
{
  g_autoptr(KagedProfilePage) self = user_data;
  g_autoptr(GError) error = NULL;
  gboolean stored;

  stored = kaged_keyring_store_finish (KAGED_KEYRING (object), result, &error);
  if (g_cancellable_is_cancelled (self->cancellable))
    return;

  gtk_widget_set_sensitive (GTK_WIDGET (self->key_row), TRUE);
  if (!stored)
    {
      g_warning ("The API key could not be stored in the keyring: %s", error->message);
      show_key_state (self, _("The key could not be stored in the keyring"), FALSE);
      return;
    }

  refresh_key_state (self);
}

static void
key_applied_cb (KagedProfilePage *self)
{
  GtkEditable *editable = GTK_EDITABLE (self->key_row);
  g_autofree char *key = g_strstrip (g_strdup (gtk_editable_get_text (editable)));

  /* The row keeps nothing once the key is on its way to the keyring. */
  gtk_editable_set_text (editable, "");

  if (self->keyring == NULL || key[0] == '\0')
    {
      kaged_keyring_free_key (g_steal_pointer (&key));
      return;
    }

  gtk_widget_set_sensitive (GTK_WIDGET (self->key_row), FALSE);
  show_key_state (self, _("Storing the key…"), FALSE);
  kaged_keyring_store_async (self->keyring, kaged_profile_get_key_id (self->profile), key,
                             self->cancellable, key_stored_cb, g_object_ref (self));
  kaged_keyring_free_key (g_steal_pointer (&key));
}

static void
key_cleared_cb (GObject      *object,
                GAsyncResult *result,
                gpointer      user_data)
{
  g_autoptr(KagedProfilePage) self = user_data;
  g_autoptr(GError) error = NULL;

  if (!kaged_keyring_clear_finish (KAGED_KEYRING (object), result, &error) &&
      !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    g_warning ("The API key could not be removed from the keyring: %s", error->message);

  if (!g_cancellable_is_cancelled (self->cancellable))
    refresh_key_state (self);
}

static void
forget_key_action (GtkWidget  *widget,
                   const char *action_name,
                   GVariant   *parameter)
{
  KagedProfilePage *self = KAGED_PROFILE_PAGE (widget);

  if (self->keyring == NULL)
    return;

  kaged_keyring_clear_async (self->keyring, kaged_profile_get_key_id (self->profile),
                             self->cancellable, key_cleared_cb, g_object_ref (self));
}

/* The models the server lists: offered in the model row's menu, kept per
 * profile by the core. A name can always be typed instead. */

static void
show_models (KagedProfilePage   *self,
             const char * const *models)
{
  g_autoptr(GMenu) menu = g_menu_new ();
  guint n = models != NULL ? g_strv_length ((char **)models) : 0;

  for (guint i = 0; i < n; i++)
    {
      g_autoptr(GMenuItem) item = g_menu_item_new (models[i], NULL);

      g_menu_item_set_action_and_target_value (item, "profile.choose-model",
                                               g_variant_new_string (models[i]));
      g_menu_append_item (menu, item);
    }

  gtk_menu_button_set_menu_model (self->models_button, G_MENU_MODEL (menu));
  gtk_widget_set_sensitive (GTK_WIDGET (self->models_button), n > 0);

  if (models == NULL)
    return;

  if (n == 0)
    {
      adw_action_row_set_subtitle (self->models_row,
                                   _("The server lists no models: type a model name"));
    }
  else
    {
      /* Translators: how many models the provider's server listed */
      g_autofree char *subtitle = g_strdup_printf (g_dngettext (GETTEXT_PACKAGE,
                                                                "%u model listed",
                                                                "%u models listed", n), n);

      adw_action_row_set_subtitle (self->models_row, subtitle);
    }
}

static void
set_busy (GtkSpinner *spinner,
          gboolean    busy)
{
  gtk_widget_set_visible (GTK_WIDGET (spinner), busy);
  gtk_spinner_set_spinning (spinner, busy);
}

static void
models_refreshed (KagedProfilePage  *self,
                  char             **models,
                  GError            *error)
{
  set_busy (self->models_spinner, FALSE);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "profile.refresh-models", TRUE);

  if (models != NULL)
    {
      show_models (self, (const char * const *)models);
      return;
    }

  {
    /* Translators: the model list could not be read; the reason follows */
    g_autofree char *subtitle = g_strdup_printf (_("Could not list the models: %s — type a "
                                                   "model name"),
                                                 error->message);

    adw_action_row_set_subtitle (self->models_row, subtitle);
  }
}

static void
core_models_cb (GObject      *object,
                GAsyncResult *result,
                gpointer      user_data)
{
  g_autoptr(KagedProfilePage) self = user_data;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) models = NULL;

  models = kaged_core_refresh_models_finish (KAGED_CORE (object), result, &error);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED) ||
      g_cancellable_is_cancelled (self->cancellable))
    return;

  models_refreshed (self, models, error);
}

static void
profile_models_cb (GObject      *object,
                   GAsyncResult *result,
                   gpointer      user_data)
{
  g_autoptr(KagedProfilePage) self = user_data;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) models = NULL;

  models = kaged_profile_list_models_finish (KAGED_PROFILE (object), result, &error);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED) ||
      g_cancellable_is_cancelled (self->cancellable))
    return;

  models_refreshed (self, models, error);
}

static void
refresh_models_action (GtkWidget  *widget,
                       const char *action_name,
                       GVariant   *parameter)
{
  KagedProfilePage *self = KAGED_PROFILE_PAGE (widget);

  g_cancellable_cancel (self->models_cancellable);
  g_clear_object (&self->models_cancellable);
  self->models_cancellable = g_cancellable_new ();
  g_signal_connect_object (self->cancellable, "cancelled",
                           G_CALLBACK (g_cancellable_cancel), self->models_cancellable,
                           G_CONNECT_SWAPPED);

  set_busy (self->models_spinner, TRUE);
  gtk_widget_action_set_enabled (widget, "profile.refresh-models", FALSE);
  adw_action_row_set_subtitle (self->models_row, _("Asking the server…"));

  if (self->core != NULL)
    kaged_core_refresh_models_async (self->core, self->profile,
                                     kaged_profile_get_id (self->profile),
                                     self->models_cancellable, core_models_cb,
                                     g_object_ref (self));
  else
    kaged_profile_list_models_async (self->profile, self->resolver, self->models_cancellable,
                                     profile_models_cb, g_object_ref (self));
}

static void
choose_model_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *parameter)
{
  KagedProfilePage *self = KAGED_PROFILE_PAGE (widget);

  kaged_profile_set_model (self->profile, g_variant_get_string (parameter, NULL));
}

/* Test Connection: the cheapest real request, its result in words. */

static void
tested_cb (GObject      *object,
           GAsyncResult *result,
           gpointer      user_data)
{
  g_autoptr(KagedProfilePage) self = user_data;
  g_autoptr(KagedConnectionResult) connection = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *words = NULL;

  connection = kaged_profile_test_connection_finish (KAGED_PROFILE (object), result, &error);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED) ||
      g_cancellable_is_cancelled (self->cancellable))
    return;

  set_busy (self->test_spinner, FALSE);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "profile.test-connection", TRUE);

  if (connection == NULL)
    {
      adw_action_row_set_subtitle (self->test_row, error->message);
      return;
    }

  words = kaged_retry_describe_connection (connection);
  adw_action_row_set_subtitle (self->test_row, words);

  /* What the test listed is the model list too. */
  if (kaged_connection_result_get_ok (connection))
    show_models (self, kaged_connection_result_get_models (connection));
}

static void
test_connection_action (GtkWidget  *widget,
                        const char *action_name,
                        GVariant   *parameter)
{
  KagedProfilePage *self = KAGED_PROFILE_PAGE (widget);

  g_cancellable_cancel (self->test_cancellable);
  g_clear_object (&self->test_cancellable);
  self->test_cancellable = g_cancellable_new ();
  g_signal_connect_object (self->cancellable, "cancelled",
                           G_CALLBACK (g_cancellable_cancel), self->test_cancellable,
                           G_CONNECT_SWAPPED);

  set_busy (self->test_spinner, TRUE);
  gtk_widget_action_set_enabled (widget, "profile.test-connection", FALSE);
  adw_action_row_set_subtitle (self->test_row, _("Testing…"));
  kaged_profile_test_connection_async (self->profile, self->resolver, self->test_cancellable,
                                       tested_cb, g_object_ref (self));
}

static void
make_default_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *parameter)
{
  KagedProfilePage *self = KAGED_PROFILE_PAGE (widget);

  kaged_profiles_set_default (self->profiles, kaged_profile_get_id (self->profile));
}

static void
back_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  close_page (KAGED_PROFILE_PAGE (widget));
}

static void
removed_cb (GObject      *object,
            GAsyncResult *result,
            gpointer      user_data)
{
  g_autoptr(GError) error = NULL;

  /* The profile is gone from the list already; only its key may linger. */
  kaged_profiles_remove_finish (KAGED_PROFILES (object), result, &error);
}

static void
remove_response_cb (AdwMessageDialog *dialog,
                    const char       *response,
                    KagedProfilePage *self)
{
  g_autofree char *id = NULL;

  if (!g_str_equal (response, "remove"))
    return;

  id = g_strdup (kaged_profile_get_id (self->profile));
  kaged_profiles_remove_async (self->profiles, id, NULL, removed_cb, NULL);
}

static void
remove_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *parameter)
{
  KagedProfilePage *self = KAGED_PROFILE_PAGE (widget);
  GtkRoot *root = gtk_widget_get_root (widget);
  g_autofree char *heading = NULL;
  AdwMessageDialog *dialog;

  heading = g_strdup_printf (_("Remove “%s”?"), kaged_profile_get_name (self->profile));
  dialog = ADW_MESSAGE_DIALOG (adw_message_dialog_new (GTK_IS_WINDOW (root) ? GTK_WINDOW (root)
                                                                              : NULL,
                                                       heading,
                                                       _("Its settings and its API key in the "
                                                         "keyring are removed. Conversations "
                                                         "keep their messages.")));
  adw_message_dialog_add_responses (dialog,
                                    "cancel", _("_Cancel"),
                                    "remove", _("_Remove"),
                                    NULL);
  adw_message_dialog_set_response_appearance (dialog, "remove", ADW_RESPONSE_DESTRUCTIVE);
  adw_message_dialog_set_default_response (dialog, "cancel");
  adw_message_dialog_set_close_response (dialog, "cancel");
  g_signal_connect_object (dialog, "response", G_CALLBACK (remove_response_cb), self, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}

static void
kaged_profile_page_bind (KagedProfilePage *self)
{
  const GBindingFlags both = G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE;

  g_object_bind_property_full (self->profile, "name", self->window_title, "title",
                               G_BINDING_SYNC_CREATE, string_to_text, NULL, NULL, NULL);
  g_object_bind_property_full (self->profile, "name", self->name_row, "text", both,
                               string_to_text, NULL, NULL, NULL);
  g_object_bind_property_full (self->profile, "kind", self->kind_row, "selected", both,
                               enum_to_position, position_to_enum,
                               GUINT_TO_POINTER (KAGED_PROVIDER_KIND_ANTHROPIC + 1), NULL);
  g_object_bind_property_full (self->profile, "base-url", self->base_url_row, "text", both,
                               string_to_text, NULL, NULL, NULL);
  g_object_bind_property_full (self->profile, "model", self->model_row, "text", both,
                               string_to_text, NULL, NULL, NULL);
  g_object_bind_property_full (self->profile, "api-key-env", self->api_key_env_row, "text", both,
                               string_to_text, NULL, NULL, NULL);
  g_object_bind_property_full (self->profile, "kind", self->key_group, "visible",
                               G_BINDING_SYNC_CREATE, kind_wants_key, NULL, NULL, NULL);

  g_object_bind_property (self->profile, "input-price",
                          gtk_spin_button_get_adjustment (self->input_price_button), "value",
                          both);
  g_object_bind_property (self->profile, "output-price",
                          gtk_spin_button_get_adjustment (self->output_price_button), "value",
                          both);
  g_object_bind_property_full (self->profile, "spend-limit-period", self->spend_period_row,
                               "selected", both, enum_to_position, position_to_enum,
                               GUINT_TO_POINTER (KAGED_SPEND_PERIOD_MONTHLY + 1), NULL);
  g_object_bind_property (self->profile, "spend-limit",
                          gtk_spin_button_get_adjustment (self->spend_limit_button), "value",
                          both);
  g_object_bind_property_full (self->profile, "spend-limit-period", self->spend_limit_button,
                               "sensitive", G_BINDING_SYNC_CREATE, period_has_limit, NULL,
                               NULL, NULL);

  g_signal_connect_object (self->kind_row, "notify::selected",
                           G_CALLBACK (kind_selected_cb), self,
                           G_CONNECT_SWAPPED | G_CONNECT_AFTER);
  g_signal_connect_object (self->key_row, "apply",
                           G_CALLBACK (key_applied_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->profiles, "notify::default-profile",
                           G_CALLBACK (update_default), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->profiles, "items-changed",
                           G_CALLBACK (profiles_changed_cb), self, G_CONNECT_SWAPPED);

  update_default (self);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "profile.remove",
                                 g_list_model_get_n_items (G_LIST_MODEL (self->profiles)) > 1);
  refresh_key_state (self);

  /* The list kept from the last time, if any. */
  if (self->core != NULL)
    {
      g_auto(GStrv) models = kaged_core_dup_cached_models (self->core,
                                                           kaged_profile_get_id (self->profile));

      show_models (self, (const char * const *)models);
    }
}

static void
kaged_profile_page_dispose (GObject *object)
{
  KagedProfilePage *self = KAGED_PROFILE_PAGE (object);

  g_cancellable_cancel (self->cancellable);
  gtk_widget_dispose_template (GTK_WIDGET (self), KAGED_TYPE_PROFILE_PAGE);

  G_OBJECT_CLASS (kaged_profile_page_parent_class)->dispose (object);
}

static void
kaged_profile_page_finalize (GObject *object)
{
  KagedProfilePage *self = KAGED_PROFILE_PAGE (object);

  g_clear_object (&self->models_cancellable);
  g_clear_object (&self->test_cancellable);
  g_clear_object (&self->cancellable);
  g_clear_object (&self->resolver);
  g_clear_object (&self->core);
  g_clear_object (&self->keyring);
  g_clear_object (&self->profile);
  g_clear_object (&self->profiles);

  G_OBJECT_CLASS (kaged_profile_page_parent_class)->finalize (object);
}

static void
kaged_profile_page_class_init (KagedProfilePageClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_profile_page_dispose;
  object_class->finalize = kaged_profile_page_finalize;

  gtk_widget_class_set_template_from_resource (widget_class,
                                               APPLICATION_PATH "/kaged-profile-page.ui");
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, window_title);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, name_row);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, kind_row);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, base_url_row);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, model_row);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, models_button);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, models_row);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, models_spinner);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, test_row);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, test_spinner);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, key_group);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, key_row);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, key_status_row);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, forget_key_button);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, api_key_env_row);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, input_price_button);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, output_price_button);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, spend_period_row);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, spend_limit_button);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, default_row);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, make_default_button);
  gtk_widget_class_bind_template_child (widget_class, KagedProfilePage, remove_button);

  gtk_widget_class_install_action (widget_class, "profile.back", NULL, back_action);
  gtk_widget_class_install_action (widget_class, "profile.make-default", NULL,
                                   make_default_action);
  gtk_widget_class_install_action (widget_class, "profile.remove", NULL, remove_action);
  gtk_widget_class_install_action (widget_class, "profile.forget-key", NULL, forget_key_action);
  gtk_widget_class_install_action (widget_class, "profile.refresh-models", NULL,
                                   refresh_models_action);
  gtk_widget_class_install_action (widget_class, "profile.choose-model", "s",
                                   choose_model_action);
  gtk_widget_class_install_action (widget_class, "profile.test-connection", NULL,
                                   test_connection_action);
}

static void
kaged_profile_page_init (KagedProfilePage *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));

  self->cancellable = g_cancellable_new ();
}

/**
 * kaged_profile_page_new:
 * @profiles: the saved profiles
 * @profile: the one to show, live from @profiles
 * @core: (nullable): the running core, whose resolver asks the server
 *   and which keeps the profile's model list
 * @keyring: (nullable): where its key is kept, or %NULL when there is no
 *   keyring to ask
 *
 * Returns: (transfer floating): the page, for
 *   adw_preferences_window_present_subpage()
 */
KagedProfilePage *
kaged_profile_page_new (KagedProfiles *profiles,
                        KagedProfile  *profile,
                        KagedCore     *core,
                        KagedKeyring  *keyring)
{
  KagedProfilePage *self;

  g_return_val_if_fail (KAGED_IS_PROFILES (profiles), NULL);
  g_return_val_if_fail (KAGED_IS_PROFILE (profile), NULL);
  g_return_val_if_fail (!core || KAGED_IS_CORE (core), NULL);
  g_return_val_if_fail (!keyring || KAGED_IS_KEYRING (keyring), NULL);

  self = g_object_new (KAGED_TYPE_PROFILE_PAGE, NULL);
  self->profiles = g_object_ref (profiles);
  self->profile = g_object_ref (profile);
  self->keyring = keyring != NULL ? g_object_ref (keyring) : NULL;
  self->core = core != NULL ? g_object_ref (core) : NULL;
  if (core != NULL)
    {
      self->resolver = g_object_ref (kaged_core_get_resolver (core));
    }
  else
    {
      /* Without a core, keys come from the environment only. */
      g_autoptr(KagedKeyring) memory = kaged_memory_keyring_new ();

      self->resolver = kaged_resolver_new (kaged_http_get_default_session (),
                                           keyring != NULL ? keyring : memory);
    }
  kaged_profile_page_bind (self);

  return self;
}

/**
 * kaged_profile_page_get_profile:
 *
 * Returns: (transfer none): the profile shown
 */
KagedProfile *
kaged_profile_page_get_profile (KagedProfilePage *self)
{
  g_return_val_if_fail (KAGED_IS_PROFILE_PAGE (self), NULL);

  return self->profile;
}
