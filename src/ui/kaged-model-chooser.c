/* kaged-model-chooser.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-model-chooser"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-core-settings.h"
#include "kaged-model-chooser.h"
#include "kaged-models.h"
#include "kaged-retry-text.h"

/**
 * KagedModelChooser:
 *
 * The conversation's profile, model and system prompt, in the header: a
 * button that reads "Profile · model" and opens a popover with the
 * profiles, the models last listed for the one chosen (with *Refresh
 * Models*), a free-text model for servers that cannot list theirs, and
 * the conversation's system prompt. When the list fails for something
 * mended in the profile's settings (its key, its address), *Open
 * Preferences* activates `app.preferences-profile` with the profile's id
 * (`app.preferences` for a profile that was never saved), which the
 * application provides. Every change goes through the engine
 * (kaged_core_set_session_settings()) and is kept with the conversation.
 * In a new conversation, not started yet, the choice waits for it: the
 * conversation the window starts with the first message gets it.
 */
struct _KagedModelChooser
{
  GtkWidget       parent_instance;

  KagedCore      *core;
  GListModel     *profiles;
  GCancellable   *refresh_cancellable;
  gulong          session_changed_id;
  gulong          profile_changed_id;
  KagedProfile   *given;     /* the profile given on the command line, listed first */
  gint64          session_id;

  /* The conversation's settings, NULL for the defaults; for a new
   * conversation (session 0), those chosen for it, kept until it starts */
  char           *profile_id;
  char           *model;
  char           *system_prompt;
  guint           pending : 1;
  guint           narrow : 1;
  GtkWidget      *wide_content;  /* the label and arrow, shown when not narrow */

  /* Template children */
  GtkMenuButton  *menu_button;
  GtkWidget      *button_content;
  GtkLabel       *button_label;
  GtkPopover     *popover;
  GtkDropDown    *profile_dropdown;
  GtkButton      *refresh_button;
  GtkScrolledWindow *models_scroller;
  GtkListBox     *models_list;
  GtkLabel       *status_label;
  GtkButton      *preferences_button;
  GtkEntry       *model_entry;
  GtkTextView    *prompt_view;
  GtkButton      *save_prompt_button;
};

G_DEFINE_FINAL_TYPE (KagedModelChooser, kaged_model_chooser, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_LABEL,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

/* ---------------------------------------------------------------------------
 * Profiles
 * ------------------------------------------------------------------------- */

/* A profile that was never saved (given on the command line) has no id:
 * its models are kept under "". */
static const char *
profile_id_of (KagedProfile *profile)
{
  const char *id = kaged_profile_get_id (profile);

  return id != NULL ? id : "";
}

/* The profile the core runs with when it was given on the command line
 * (not saved: no id), or %NULL. */
static KagedProfile *
given_profile (KagedCore *core)
{
  KagedProfile *running = kaged_core_get_profile (core);

  return running != NULL && profile_id_of (running)[0] == '\0' ? running : NULL;
}

/* The saved profiles, after the one given on the command line if the core
 * runs with one; without settings, the one the core runs with. */
static GListModel *
dup_profiles (KagedCore *core)
{
  KagedProfiles *profiles = kaged_core_get_profiles (core);
  KagedProfile *given = given_profile (core);
  GListStore *store;
  GListStore *parts;

  if (profiles != NULL && given == NULL)
    return g_object_ref (G_LIST_MODEL (profiles));

  store = g_list_store_new (KAGED_TYPE_PROFILE);
  if (kaged_core_get_profile (core) != NULL)
    g_list_store_append (store, kaged_core_get_profile (core));
  if (profiles == NULL)
    return G_LIST_MODEL (store);

  parts = g_list_store_new (G_TYPE_LIST_MODEL);
  g_list_store_append (parts, store);
  g_list_store_append (parts, profiles);
  g_object_unref (store);

  return G_LIST_MODEL (gtk_flatten_list_model_new (G_LIST_MODEL (parts)));
}

static KagedProfile *
default_profile (KagedModelChooser *self)
{
  return self->core != NULL ? kaged_core_get_profile (self->core) : NULL;
}

/* (transfer none) The profile of @profile_id, or the default. */
static KagedProfile *
find_profile (KagedModelChooser *self,
              const char        *profile_id)
{
  guint n = self->profiles != NULL ? g_list_model_get_n_items (self->profiles) : 0;

  for (guint i = 0; profile_id != NULL && i < n; i++)
    {
      g_autoptr(KagedProfile) profile = g_list_model_get_item (self->profiles, i);

      if (g_strcmp0 (profile_id_of (profile), profile_id) == 0)
        return profile;
    }

  return default_profile (self);
}

static KagedProfile *
selected_profile (KagedModelChooser *self)
{
  return gtk_drop_down_get_selected_item (self->profile_dropdown);
}

/* ---------------------------------------------------------------------------
 * Showing
 * ------------------------------------------------------------------------- */

static void
show_status (KagedModelChooser *self,
             const char        *text)
{
  gtk_label_set_label (self->status_label, text != NULL ? text : "");
  gtk_widget_set_visible (GTK_WIDGET (self->status_label), text != NULL);
  gtk_widget_set_visible (GTK_WIDGET (self->preferences_button), FALSE);
}

static void
set_label (KagedModelChooser *self,
           const char        *label)
{
  if (g_strcmp0 (gtk_label_get_label (self->button_label), label) == 0)
    return;

  gtk_label_set_label (self->button_label, label);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_LABEL]);
}

static void
update_label (KagedModelChooser *self)
{
  KagedProfile *profile = find_profile (self, self->profile_id);
  g_autofree char *label = NULL;
  const char *model;

  if (profile == NULL)
    {
      set_label (self, _("Default Model"));
      gtk_widget_set_sensitive (GTK_WIDGET (self->menu_button), FALSE);
      return;
    }

  /* A conversation whose profile is gone goes on with the default one and
   * its model, as its runs do. */
  if (self->model != NULL &&
      (self->profile_id == NULL || g_strcmp0 (kaged_profile_get_id (profile), self->profile_id) == 0))
    model = self->model;
  else
    model = kaged_profile_get_model (profile);
  /* Translators: the conversation's provider profile and model, e.g. "Work · gpt-4o" */
  label = g_strdup_printf (_("%s · %s"), kaged_profile_get_name (profile),
                           model != NULL ? model : "");
  /* A narrow header reads it under the conversation's title, and a long
   * pair would read as the start of the one and the end of the other: the
   * model alone, which is what differs between conversations. The
   * description keeps both. */
  if (model != NULL && *model != '\0' &&
      (self->narrow || g_utf8_strlen (label, -1) > gtk_label_get_max_width_chars (self->button_label)))
    set_label (self, model);
  else
    set_label (self, label);
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->menu_button),
                                  GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, label,
                                  -1);
  gtk_widget_set_sensitive (GTK_WIDGET (self->menu_button), TRUE);
}

static void
reload (KagedModelChooser *self)
{
  g_autoptr(GError) error = NULL;

  /* A new conversation keeps what was chosen for it. */
  if (self->session_id <= 0 && self->pending)
    {
      update_label (self);
      return;
    }

  g_clear_pointer (&self->profile_id, g_free);
  g_clear_pointer (&self->model, g_free);
  g_clear_pointer (&self->system_prompt, g_free);

  if (self->core != NULL && self->session_id > 0 &&
      !kaged_core_get_session_settings (self->core, self->session_id, &self->profile_id,
                                        &self->model, &self->system_prompt, &error))
    g_debug ("The settings of conversation %" G_GINT64_FORMAT " could not be read: %s",
             self->session_id, error->message);

  update_label (self);
}

static GtkWidget *
new_model_row (const char *label,
               const char *model,
               gboolean    current)
{
  GtkWidget *row = gtk_list_box_row_new ();
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *text = gtk_label_new (label);
  GtkWidget *check = gtk_image_new_from_icon_name ("object-select-symbolic");

  gtk_label_set_xalign (GTK_LABEL (text), 0);
  gtk_label_set_ellipsize (GTK_LABEL (text), PANGO_ELLIPSIZE_MIDDLE);
  gtk_widget_set_hexpand (text, TRUE);
  gtk_widget_set_opacity (check, current ? 1 : 0);
  gtk_widget_set_margin_start (box, 6);
  gtk_widget_set_margin_end (box, 6);
  gtk_widget_set_margin_top (box, 6);
  gtk_widget_set_margin_bottom (box, 6);
  gtk_box_append (GTK_BOX (box), text);
  gtk_box_append (GTK_BOX (box), check);
  gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), box);
  gtk_accessible_update_property (GTK_ACCESSIBLE (row),
                                  GTK_ACCESSIBLE_PROPERTY_LABEL, label,
                                  -1);
  if (current)
    gtk_accessible_update_state (GTK_ACCESSIBLE (row),
                                 GTK_ACCESSIBLE_STATE_SELECTED, TRUE,
                                 -1);
  g_object_set_data_full (G_OBJECT (row), "kaged-model", g_strdup (model), g_free);

  return row;
}

/* A list that fits shows no scroll bar: one that may show takes the room
 * of its smallest, taller than a row or two. */
static void
update_models_scrolling (KagedModelChooser *self)
{
  int natural = 0;

  gtk_widget_measure (GTK_WIDGET (self->models_list), GTK_ORIENTATION_VERTICAL, -1,
                      NULL, &natural, NULL, NULL);
  gtk_scrolled_window_set_policy (self->models_scroller, GTK_POLICY_NEVER,
                                  natural > gtk_scrolled_window_get_max_content_height (self->models_scroller)
                                  ? GTK_POLICY_AUTOMATIC : GTK_POLICY_NEVER);
}

/* The models of the chosen profile: its own first, then those it listed. */
static void
fill_models (KagedModelChooser *self,
             const char * const *models)
{
  KagedProfile *profile = selected_profile (self);
  KagedProfile *current = find_profile (self, self->profile_id);
  const char *own;
  g_autofree char *own_label = NULL;
  gboolean is_current_profile;
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->models_list))) != NULL)
    gtk_list_box_remove (self->models_list, child);

  if (profile == NULL)
    {
      update_models_scrolling (self);
      return;
    }

  is_current_profile = profile == current;
  own = kaged_profile_get_model (profile);
  /* Translators: the profile's own model, e.g. "llama3.2 (profile default)" */
  own_label = g_strdup_printf (_("%s (profile default)"), own != NULL ? own : "");
  gtk_list_box_append (self->models_list,
                       new_model_row (own_label, NULL,
                                      is_current_profile &&
                                      (self->model == NULL || g_strcmp0 (self->model, own) == 0)));

  for (guint i = 0; models != NULL && models[i] != NULL; i++)
    {
      if (g_strcmp0 (models[i], own) == 0)
        continue;
      gtk_list_box_append (self->models_list,
                           new_model_row (models[i], models[i],
                                          is_current_profile && g_strcmp0 (self->model, models[i]) == 0));
    }

  update_models_scrolling (self);
}

static void refresh_models (KagedModelChooser *self);

static void
show_cached_models (KagedModelChooser *self,
                    gboolean           refresh_if_none)
{
  KagedProfile *profile = selected_profile (self);
  g_auto(GStrv) models = NULL;

  if (profile == NULL || self->core == NULL)
    {
      fill_models (self, NULL);
      return;
    }

  models = kaged_core_dup_cached_models (self->core, profile_id_of (profile));
  fill_models (self, (const char * const *)models);

  if (models == NULL && refresh_if_none)
    refresh_models (self);
}

/* ---------------------------------------------------------------------------
 * Changing
 * ------------------------------------------------------------------------- */

static gboolean
apply (KagedModelChooser *self,
       KagedProfile      *profile,
       const char        *model,
       const char        *system_prompt)
{
  g_autoptr(GError) error = NULL;
  const char *profile_id = NULL;

  if (self->core == NULL || profile == NULL)
    return FALSE;

  /* The default profile is followed, not named, and so is a profile's own model. */
  if (profile != default_profile (self))
    profile_id = kaged_profile_get_id (profile);
  if (model != NULL && (model[0] == '\0' || g_strcmp0 (model, kaged_profile_get_model (profile)) == 0))
    model = NULL;
  if (system_prompt != NULL && system_prompt[0] == '\0')
    system_prompt = NULL;

  if (self->session_id <= 0)
    {
      g_autofree char *new_profile_id = g_strdup (profile_id);
      g_autofree char *new_model = g_strdup (model);
      g_autofree char *new_prompt = g_strdup (system_prompt);

      g_free (self->profile_id);
      self->profile_id = g_steal_pointer (&new_profile_id);
      g_free (self->model);
      self->model = g_steal_pointer (&new_model);
      g_free (self->system_prompt);
      self->system_prompt = g_steal_pointer (&new_prompt);
      self->pending = TRUE;
      update_label (self);
      return TRUE;
    }

  if (!kaged_core_set_session_settings (self->core, self->session_id, profile_id, model,
                                        system_prompt, &error))
    {
      show_status (self, error->message);
      return FALSE;
    }

  reload (self);
  return TRUE;
}

static void
model_activated_cb (KagedModelChooser *self,
                    GtkListBoxRow     *row)
{
  const char *model = g_object_get_data (G_OBJECT (row), "kaged-model");

  if (apply (self, selected_profile (self), model, self->system_prompt))
    gtk_popover_popdown (self->popover);
}

static void
model_entry_activate_cb (KagedModelChooser *self)
{
  g_autofree char *model = g_strstrip (g_strdup (gtk_editable_get_text (GTK_EDITABLE (self->model_entry))));

  if (model[0] == '\0')
    return;

  if (apply (self, selected_profile (self), model, self->system_prompt))
    {
      gtk_editable_set_text (GTK_EDITABLE (self->model_entry), "");
      gtk_popover_popdown (self->popover);
    }
}

/* Use This Model, beside a name to use: not beside an empty entry. */
static void
model_entry_changed_cb (KagedModelChooser *self)
{
  g_autofree char *model = g_strstrip (g_strdup (gtk_editable_get_text (GTK_EDITABLE (self->model_entry))));

  gboolean offered = gtk_entry_get_icon_name (self->model_entry, GTK_ENTRY_ICON_SECONDARY) != NULL;

  /* Changed only when it comes or goes, not at each key. */
  if ((model[0] != '\0') == offered)
    return;

  gtk_entry_set_icon_from_icon_name (self->model_entry, GTK_ENTRY_ICON_SECONDARY,
                                     offered ? NULL : "object-select-symbolic");
  if (!offered)
    gtk_entry_set_icon_tooltip_text (self->model_entry, GTK_ENTRY_ICON_SECONDARY, _("Use This Model"));
}

static void
save_prompt_clicked_cb (KagedModelChooser *self)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (self->prompt_view);
  g_autofree char *text = NULL;
  g_autofree char *model = g_strdup (self->model);
  GtkTextIter start, end;

  gtk_text_buffer_get_bounds (buffer, &start, &end);
  text = gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
  g_strstrip (text);

  if (apply (self, find_profile (self, self->profile_id), model, text))
    show_status (self, text[0] != '\0' ? _("The system prompt is saved") : _("No system prompt"));
}

static void
profile_selected_cb (KagedModelChooser *self)
{
  /* Models are listed for people looking at them, not for a model set. */
  if (!gtk_widget_get_visible (GTK_WIDGET (self->popover)))
    return;

  show_status (self, NULL);
  show_cached_models (self, TRUE);
}

static void
refresh_cb (GObject      *object,
            GAsyncResult *result,
            gpointer      user_data)
{
  g_autoptr(KagedModelChooser) self = user_data;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) models = NULL;

  models = kaged_core_refresh_models_finish (KAGED_CORE (object), result, &error);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;

  gtk_widget_set_sensitive (GTK_WIDGET (self->refresh_button), TRUE);

  if (models == NULL)
    {
      g_autofree char *reason = NULL;
      g_autofree char *text = NULL;

      reason = kaged_retry_describe_models_failure (kaged_provider_error_get_retry_class (error),
                                                    kaged_provider_error_get_http_status (error));
      /* Translators: why the models could not be listed, e.g. "The API key was
       * refused (HTTP 401). Type a model name below." */
      text = g_strdup_printf (_("%s. Type a model name below."), reason);
      show_status (self, text);
      gtk_widget_set_visible (GTK_WIDGET (self->preferences_button),
                              kaged_models_failure_needs_preferences (
                                kaged_provider_error_get_retry_class (error),
                                kaged_provider_error_get_http_status (error)));
      return;
    }

  show_status (self, NULL);
  fill_models (self, (const char * const *)models);
}

static void
preferences_clicked_cb (KagedModelChooser *self)
{
  KagedProfile *profile = selected_profile (self);
  const char *id = profile != NULL ? kaged_profile_get_id (profile) : NULL;

  gtk_popover_popdown (self->popover);

  /* A profile given on the command line has no page of its own. */
  if (id != NULL && id[0] != '\0')
    gtk_widget_activate_action (GTK_WIDGET (self), "app.preferences-profile", "s", id);
  else
    gtk_widget_activate_action (GTK_WIDGET (self), "app.preferences", NULL);
}

static void
refresh_models (KagedModelChooser *self)
{
  KagedProfile *profile = selected_profile (self);

  if (profile == NULL || self->core == NULL)
    return;

  g_cancellable_cancel (self->refresh_cancellable);
  g_clear_object (&self->refresh_cancellable);
  self->refresh_cancellable = g_cancellable_new ();

  gtk_widget_set_sensitive (GTK_WIDGET (self->refresh_button), FALSE);
  show_status (self, _("Asking the server for its models…"));
  kaged_core_refresh_models_async (self->core, profile, profile_id_of (profile),
                                   self->refresh_cancellable, refresh_cb, g_object_ref (self));
}

static void
refresh_clicked_cb (KagedModelChooser *self)
{
  refresh_models (self);
}

static void
popover_visible_cb (KagedModelChooser *self)
{
  KagedProfile *current = find_profile (self, self->profile_id);
  guint n = self->profiles != NULL ? g_list_model_get_n_items (self->profiles) : 0;
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (self->prompt_view);

  if (!gtk_widget_get_visible (GTK_WIDGET (self->popover)))
    return;

  show_status (self, NULL);
  gtk_text_buffer_set_text (buffer, self->system_prompt != NULL ? self->system_prompt : "", -1);
  gtk_editable_set_text (GTK_EDITABLE (self->model_entry), "");

  for (guint i = 0; i < n; i++)
    {
      g_autoptr(KagedProfile) profile = g_list_model_get_item (self->profiles, i);

      if (profile == current)
        {
          gtk_drop_down_set_selected (self->profile_dropdown, i);
          break;
        }
    }

  show_cached_models (self, TRUE);
}

static void
session_changed_cb (KagedModelChooser *self,
                    KagedSession      *session)
{
  if (kaged_session_get_id (session) == self->session_id)
    reload (self);
}

/* The profiles to choose from, for the core as it runs now. */
static void
list_profiles (KagedModelChooser *self)
{
  if (self->profiles != NULL)
    g_signal_handlers_disconnect_by_data (self->profiles, self);
  g_clear_object (&self->profiles);
  g_clear_object (&self->given);

  if (self->core != NULL)
    {
      g_set_object (&self->given, given_profile (self->core));
      self->profiles = dup_profiles (self->core);
      /* A profile added, renamed or removed in Preferences reads at once. */
      g_signal_connect_object (self->profiles, "items-changed",
                               G_CALLBACK (update_label), self, G_CONNECT_SWAPPED);
    }

  gtk_drop_down_set_model (self->profile_dropdown, self->profiles);
}

/* The core runs with another profile: one given on the command line joins
 * the list, or leaves it. */
static void
core_profile_cb (KagedModelChooser *self)
{
  if (given_profile (self->core) != self->given)
    list_profiles (self);
  update_label (self);
}

/* ---------------------------------------------------------------------------
 * GObject
 * ------------------------------------------------------------------------- */

static void
disconnect_core (KagedModelChooser *self)
{
  g_cancellable_cancel (self->refresh_cancellable);
  g_clear_object (&self->refresh_cancellable);

  if (self->core != NULL)
    {
      g_clear_signal_handler (&self->session_changed_id, kaged_core_get_manager (self->core));
      g_clear_signal_handler (&self->profile_changed_id, self->core);
    }
  g_clear_object (&self->core);
  if (self->profiles != NULL)
    g_signal_handlers_disconnect_by_data (self->profiles, self);
  g_clear_object (&self->profiles);
  g_clear_object (&self->given);
}

static void
kaged_model_chooser_dispose (GObject *object)
{
  KagedModelChooser *self = (KagedModelChooser *)object;

  disconnect_core (self);
  gtk_widget_dispose_template (GTK_WIDGET (self), KAGED_TYPE_MODEL_CHOOSER);
  g_clear_object (&self->wide_content);

  G_OBJECT_CLASS (kaged_model_chooser_parent_class)->dispose (object);
}

static void
kaged_model_chooser_finalize (GObject *object)
{
  KagedModelChooser *self = (KagedModelChooser *)object;

  g_clear_pointer (&self->profile_id, g_free);
  g_clear_pointer (&self->model, g_free);
  g_clear_pointer (&self->system_prompt, g_free);

  G_OBJECT_CLASS (kaged_model_chooser_parent_class)->finalize (object);
}

static void
kaged_model_chooser_get_property (GObject    *object,
                                  guint       prop_id,
                                  GValue     *value,
                                  GParamSpec *pspec)
{
  KagedModelChooser *self = KAGED_MODEL_CHOOSER (object);

  switch (prop_id)
    {
    case PROP_LABEL:
      g_value_set_string (value, kaged_model_chooser_get_label (self));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_model_chooser_class_init (KagedModelChooserClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_model_chooser_dispose;
  object_class->finalize = kaged_model_chooser_finalize;
  object_class->get_property = kaged_model_chooser_get_property;

  /**
   * KagedModelChooser:label:
   *
   * What the button reads, e.g. "Work · gpt-4o", or the model alone when
   * narrow (then shown by the window, not the button).
   */
  properties[PROP_LABEL] =
    g_param_spec_string ("label", NULL, NULL, NULL,
                         G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_widget_class_set_template_from_resource (widget_class, "/io/github/kaged/Kaged/kaged-model-chooser.ui");
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, menu_button);
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, button_content);
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, button_label);
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, popover);
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, profile_dropdown);
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, refresh_button);
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, models_scroller);
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, models_list);
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, status_label);
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, preferences_button);
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, model_entry);
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, prompt_view);
  gtk_widget_class_bind_template_child (widget_class, KagedModelChooser, save_prompt_button);
  gtk_widget_class_bind_template_callback (widget_class, popover_visible_cb);
  gtk_widget_class_bind_template_callback (widget_class, profile_selected_cb);
  gtk_widget_class_bind_template_callback (widget_class, refresh_clicked_cb);
  gtk_widget_class_bind_template_callback (widget_class, preferences_clicked_cb);
  gtk_widget_class_bind_template_callback (widget_class, model_activated_cb);
  gtk_widget_class_bind_template_callback (widget_class, model_entry_activate_cb);
  gtk_widget_class_bind_template_callback (widget_class, model_entry_changed_cb);
  gtk_widget_class_bind_template_callback (widget_class, save_prompt_clicked_cb);

  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
}

static void
kaged_model_chooser_init (KagedModelChooser *self)
{
  g_autoptr(GtkExpression) name = NULL;

  gtk_widget_init_template (GTK_WIDGET (self));
  /* Kept while a narrow header shows the icon in its place. */
  self->wide_content = g_object_ref (self->button_content);

  name = gtk_property_expression_new (KAGED_TYPE_PROFILE, NULL, "name");
  gtk_drop_down_set_expression (self->profile_dropdown, name);

  update_label (self);
}

GtkWidget *
kaged_model_chooser_new (void)
{
  return g_object_new (KAGED_TYPE_MODEL_CHOOSER, NULL);
}

/**
 * kaged_model_chooser_set_core:
 * @core: (nullable): the engine
 */
void
kaged_model_chooser_set_core (KagedModelChooser *self,
                              KagedCore         *core)
{
  g_return_if_fail (KAGED_IS_MODEL_CHOOSER (self));
  g_return_if_fail (!core || KAGED_IS_CORE (core));

  disconnect_core (self);
  self->pending = FALSE;

  if (core != NULL)
    {
      self->core = g_object_ref (core);
      self->session_changed_id =
        g_signal_connect_object (kaged_core_get_manager (core), "session-changed",
                                 G_CALLBACK (session_changed_cb), self, G_CONNECT_SWAPPED);
      /* Another default profile, or an edited one, reads at once. */
      self->profile_changed_id =
        g_signal_connect_object (core, "notify::profile",
                                 G_CALLBACK (core_profile_cb), self, G_CONNECT_SWAPPED);
    }

  list_profiles (self);
  reload (self);
}

/**
 * kaged_model_chooser_set_session:
 * @session_id: the conversation, or 0 for none (a new one not yet started)
 */
void
kaged_model_chooser_set_session (KagedModelChooser *self,
                                 gint64             session_id)
{
  g_return_if_fail (KAGED_IS_MODEL_CHOOSER (self));

  if (self->session_id == session_id)
    return;

  if (self->session_id <= 0 && session_id > 0 && self->pending && self->core != NULL)
    {
      g_autoptr(KagedRun) run = NULL;
      g_autoptr(GError) error = NULL;

      /* The conversation the first message started gets what was chosen
       * for it; one shown from the list keeps its own. */
      run = kaged_session_manager_get_latest_run (kaged_core_get_manager (self->core),
                                                  session_id, NULL);
      if (run == NULL &&
          !kaged_core_set_session_settings (self->core, session_id, self->profile_id,
                                            self->model, self->system_prompt, &error))
        g_warning ("The model chosen for the new conversation could not be kept: %s",
                   error->message);
    }

  self->pending = FALSE;
  self->session_id = session_id;
  gtk_popover_popdown (self->popover);
  reload (self);
}

/* What the button reads, e.g. "Work · gpt-4o"; when narrow, the model
 * alone, for the window to show. */
const char *
kaged_model_chooser_get_label (KagedModelChooser *self)
{
  g_return_val_if_fail (KAGED_IS_MODEL_CHOOSER (self), NULL);

  return gtk_label_get_label (self->button_label);
}

/**
 * kaged_model_chooser_set_narrow:
 * @self: a #KagedModelChooser
 * @narrow: whether the header it sits in is narrow
 *
 * In a narrow header the button shows an icon, leaving the room to the
 * conversation's title, and its label (the model alone) is for the window
 * to show under that title; otherwise the button reads the profile and the
 * model and keeps room for 20 characters.
 */
void
kaged_model_chooser_set_narrow (KagedModelChooser *self,
                                gboolean           narrow)
{
  g_return_if_fail (KAGED_IS_MODEL_CHOOSER (self));

  narrow = !!narrow;
  if (self->narrow == narrow)
    return;

  self->narrow = narrow;
  if (narrow)
    gtk_menu_button_set_icon_name (self->menu_button, "kaged-model-symbolic");
  else
    gtk_menu_button_set_child (self->menu_button, self->wide_content);
  update_label (self);
}
