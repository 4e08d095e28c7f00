/* kaged-retry-banner.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry-banner"

#include "config.h"

#include <adwaita.h>
#include <glib/gi18n.h>

#include "kaged-retry-banner.h"
#include "kaged-retry-text.h"

/* A scheduled time is put in words again this often, so "tomorrow"
 * becomes today at midnight. */
#define LABEL_REFRESH_MS 60000

/* The same contents in three arrangements: in a row when the window is
 * wide, with the status and buttons under the words when it is narrow,
 * and on a phone with the status on a line of its own above the buttons. */
enum {
  LAYOUT_WIDE,
  LAYOUT_NARROW,
  LAYOUT_PHONE,
  N_LAYOUTS
};

typedef struct
{
  GtkWidget *box;
  GtkImage *icon;
  GtkLabel *reason_label;
  GtkLabel *detail_label;
  GtkLabel *status_label;
} Layout;

/**
 * KagedRetryBanner:
 *
 * The bar above a conversation that shows a pending Tier 2 retry: why it
 * waits (class, HTTP status, where the wait came from), the attempt, the
 * seconds left or the time it is scheduled for, and *Retry Now* and
 * *Cancel Retry*. It slides in while its #KagedRetryScheduler has a retry
 * waiting, stays (with *Cancel Retry* only) while the retried run is under
 * way, and slides out when the retry resolves, is cancelled or is no
 * longer needed. It redraws only when the scheduler's properties change — once a
 * second while counting down.
 */
struct _KagedRetryBanner
{
  GtkWidget parent_instance;

  KagedRetryScheduler *scheduler;
  GSignalGroup *scheduler_signals;
  gulong clock_format_id;
  GSource *refresh_source;

  GtkRevealer *revealer;
  Layout layouts[N_LAYOUTS];
};

G_DEFINE_FINAL_TYPE (KagedRetryBanner, kaged_retry_banner, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_SCHEDULER,
  PROP_REVEALED,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static const char banner_css[] =
  ".kaged-retry-banner {\n"
  "  background-color: mix(@warning_bg_color, @window_bg_color, 0.8);\n"
  "  color: @window_fg_color;\n"
  "  box-shadow: inset 0 -1px alpha(currentColor, 0.15);\n"
  "}\n"
  ".kaged-retry-banner > .wide {\n"
  "  padding: 6px 6px 6px 12px;\n"
  "}\n"
  ".kaged-retry-banner > .narrow,\n"
  ".kaged-retry-banner > .phone {\n"
  "  padding: 6px;\n"
  "}\n"
  ".kaged-retry-banner .kaged-retry-status {\n"
  "  font-weight: bold;\n"
  "}\n";

static void
ensure_style (GtkWidget *widget)
{
  GdkDisplay *display = gtk_widget_get_display (widget);
  g_autoptr(GtkCssProvider) provider = NULL;

  if (display == NULL || g_object_get_data (G_OBJECT (display), "kaged-retry-banner-css") != NULL)
    return;

  provider = gtk_css_provider_new ();
  gtk_css_provider_load_from_data (provider, banner_css, -1);
  gtk_style_context_add_provider_for_display (display, GTK_STYLE_PROVIDER (provider),
                                              GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
  g_object_set_data_full (G_OBJECT (display), "kaged-retry-banner-css",
                          g_steal_pointer (&provider), g_object_unref);
}

static void
set_label (GtkLabel   *label,
           const char *text)
{
  if (text == NULL)
    text = "";

  /* Only real changes reach the label, so nothing redraws in between. */
  if (g_strcmp0 (gtk_label_get_label (label), text) != 0)
    gtk_label_set_label (label, text);
}

static gboolean
state_is_waiting (KagedRetrySchedulerState state)
{
  return state == KAGED_RETRY_SCHEDULER_STATE_ARMED ||
         state == KAGED_RETRY_SCHEDULER_STATE_SCHEDULED ||
         state == KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK;
}

/* Shown from the moment a retry waits until the retried run resolves:
 * Cancel works all along, and cancels the run once it is under way. */
static gboolean
state_is_shown (KagedRetrySchedulerState state)
{
  return state != KAGED_RETRY_SCHEDULER_STATE_IDLE &&
         state != KAGED_RETRY_SCHEDULER_STATE_CANCELLED;
}

static void kaged_retry_banner_update (KagedRetryBanner *self);

static gboolean
refresh_cb (gpointer user_data)
{
  KagedRetryBanner *self = user_data;

  g_clear_pointer (&self->refresh_source, g_source_unref);
  kaged_retry_banner_update (self);

  return G_SOURCE_REMOVE;
}

/* While shown, a status beside the buttons never needs less room than it
 * did: a countdown from "10 s" to "9 s", or to "Retrying…", would otherwise
 * let its arrangement take the place of the next narrower one, moving the
 * buttons under the pointer. */
static void
keep_status_width (KagedRetryBanner *self,
                   gboolean          keep)
{
  for (guint i = LAYOUT_WIDE; i <= LAYOUT_NARROW; i++)
    {
      GtkWidget *status = GTK_WIDGET (self->layouts[i].status_label);
      int minimum = 0;

      if (!keep)
        {
          gtk_widget_set_size_request (status, -1, -1);
          continue;
        }

      /* The measure includes the size request: the widest status so far. */
      gtk_widget_measure (status, GTK_ORIENTATION_HORIZONTAL, -1, &minimum, NULL, NULL, NULL);
      gtk_widget_set_size_request (status, minimum, -1);
    }
}

static void
kaged_retry_banner_update (KagedRetryBanner *self)
{
  KagedRetrySchedulerState state = KAGED_RETRY_SCHEDULER_STATE_IDLE;
  g_autofree char *detail = NULL;
  g_autofree char *status = NULL;
  g_autofree char *remaining = NULL;
  g_autofree char *reason = NULL;
  const char *icon_name = "view-refresh-symbolic";
  gboolean shown;
  gboolean was_revealed;

  if (self->scheduler != NULL)
    state = kaged_retry_scheduler_get_state (self->scheduler);
  shown = state_is_shown (state);

  gtk_widget_action_set_enabled (GTK_WIDGET (self), "retry-banner.retry-now",
                                 state_is_waiting (state));
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "retry-banner.cancel", shown);

  kaged_clock_clear_source (&self->refresh_source);

  was_revealed = gtk_revealer_get_reveal_child (self->revealer);
  gtk_revealer_set_reveal_child (self->revealer, shown);
  if (was_revealed != shown)
    g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_REVEALED]);

  /* While sliding out, the last words stay. */
  if (!shown)
    {
      keep_status_width (self, FALSE);
      return;
    }

  switch (state)
    {
    case KAGED_RETRY_SCHEDULER_STATE_ARMED:
      remaining = kaged_retry_format_duration (kaged_retry_scheduler_get_remaining_seconds (self->scheduler));
      /* Translators: the countdown of an automatic retry, e.g. "Retrying in 40 s" */
      status = g_strdup_printf (_("Retrying in %s"), remaining);
      break;

    case KAGED_RETRY_SCHEDULER_STATE_SCHEDULED:
      status = kaged_retry_dup_scheduled_label (self->scheduler);
      icon_name = "alarm-symbolic";
      self->refresh_source =
        kaged_clock_attach_timeout (kaged_retry_scheduler_get_clock (self->scheduler), NULL,
                                    LABEL_REFRESH_MS, refresh_cb, self, NULL,
                                    "[kaged] retry banner time");
      break;

    case KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK:
      status = g_strdup (_("Waiting for network…"));
      icon_name = "network-offline-symbolic";
      break;

    case KAGED_RETRY_SCHEDULER_STATE_DISPATCHING:
    case KAGED_RETRY_SCHEDULER_STATE_WATCHING:
      status = g_strdup (_("Retrying…"));
      break;

    case KAGED_RETRY_SCHEDULER_STATE_IDLE:
    case KAGED_RETRY_SCHEDULER_STATE_CANCELLED:
    default:
      g_assert_not_reached ();
    }

  /* Translators: the how-manieth retry of the reply this is, e.g. "Retry 3 · wait
   * set by the provider’s Retry-After header"; each retry can make a few requests */
  detail = g_strdup_printf (_("Retry %u · wait set by %s"),
                            kaged_retry_scheduler_get_attempt (self->scheduler),
                            kaged_retry_describe_wait_source (kaged_retry_scheduler_get_wait_source (self->scheduler)));

  reason = kaged_retry_dup_reason (self->scheduler);

  for (guint i = 0; i < N_LAYOUTS; i++)
    {
      Layout *layout = &self->layouts[i];

      set_label (layout->reason_label, reason);
      set_label (layout->detail_label, detail);
      set_label (layout->status_label, status);
      if (g_strcmp0 (gtk_image_get_icon_name (layout->icon), icon_name) != 0)
        gtk_image_set_from_icon_name (layout->icon, icon_name);
    }

  keep_status_width (self, TRUE);
}

static void
scheduler_notify_cb (KagedRetryBanner *self,
                     GParamSpec       *pspec,
                     GObject          *scheduler)
{
  kaged_retry_banner_update (self);
}

static void
retry_now_action (GtkWidget  *widget,
                  const char *action_name,
                  GVariant   *param)
{
  KagedRetryBanner *self = KAGED_RETRY_BANNER (widget);

  if (self->scheduler != NULL)
    kaged_retry_scheduler_retry_now (self->scheduler);
}

static void
cancel_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *param)
{
  KagedRetryBanner *self = KAGED_RETRY_BANNER (widget);

  if (self->scheduler != NULL)
    kaged_retry_scheduler_cancel (self->scheduler);
}

static GtkLabel *
new_label (const char *name,
           const char *css_class)
{
  GtkWidget *label = gtk_label_new (NULL);

  gtk_widget_set_name (label, name);
  gtk_label_set_xalign (GTK_LABEL (label), 0.0f);
  gtk_label_set_wrap (GTK_LABEL (label), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
  if (css_class != NULL)
    gtk_widget_add_css_class (label, css_class);

  return GTK_LABEL (label);
}

static GtkButton *
new_button (const char *name,
            const char *mnemonic,
            const char *action_name,
            const char *accessible_label,
            const char *tooltip)
{
  GtkWidget *button = gtk_button_new_with_mnemonic (mnemonic);

  gtk_widget_set_name (button, name);
  gtk_widget_set_valign (button, GTK_ALIGN_CENTER);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (button), action_name);
  gtk_widget_set_tooltip_text (button, tooltip);
  gtk_accessible_update_property (GTK_ACCESSIBLE (button),
                                  GTK_ACCESSIBLE_PROPERTY_LABEL, accessible_label,
                                  GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, tooltip,
                                  -1);

  return GTK_BUTTON (button);
}

static void
kaged_retry_banner_dispose (GObject *object)
{
  KagedRetryBanner *self = (KagedRetryBanner *)object;

  if (self->scheduler_signals != NULL)
    g_signal_group_set_target (self->scheduler_signals, NULL);
  g_clear_object (&self->scheduler_signals);
  g_clear_object (&self->scheduler);
  kaged_clock_clear_source (&self->refresh_source);
  g_clear_signal_handler (&self->clock_format_id, kaged_retry_desktop_clock_settings ());

  g_clear_pointer ((GtkWidget **)&self->revealer, gtk_widget_unparent);

  G_OBJECT_CLASS (kaged_retry_banner_parent_class)->dispose (object);
}

static void
kaged_retry_banner_get_property (GObject    *object,
                                 guint       prop_id,
                                 GValue     *value,
                                 GParamSpec *pspec)
{
  KagedRetryBanner *self = KAGED_RETRY_BANNER (object);

  switch (prop_id)
    {
    case PROP_SCHEDULER:
      g_value_set_object (value, self->scheduler);
      break;

    case PROP_REVEALED:
      g_value_set_boolean (value, kaged_retry_banner_get_revealed (self));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_retry_banner_set_property (GObject      *object,
                                 guint         prop_id,
                                 const GValue *value,
                                 GParamSpec   *pspec)
{
  KagedRetryBanner *self = KAGED_RETRY_BANNER (object);

  switch (prop_id)
    {
    case PROP_SCHEDULER:
      kaged_retry_banner_set_scheduler (self, g_value_get_object (value));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_retry_banner_class_init (KagedRetryBannerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_retry_banner_dispose;
  object_class->get_property = kaged_retry_banner_get_property;
  object_class->set_property = kaged_retry_banner_set_property;

  /**
   * KagedRetryBanner:scheduler:
   *
   * The retry scheduler of the conversation shown.
   */
  properties [PROP_SCHEDULER] =
    g_param_spec_object ("scheduler", NULL, NULL,
                         KAGED_TYPE_RETRY_SCHEDULER,
                         (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedRetryBanner:revealed:
   *
   * Whether the banner is shown (or sliding in): a retry waits or runs.
   */
  properties [PROP_REVEALED] =
    g_param_spec_boolean ("revealed", NULL, NULL,
                          FALSE,
                          (G_PARAM_READABLE |
                           G_PARAM_EXPLICIT_NOTIFY |
                           G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_widget_class_install_action (widget_class, "retry-banner.retry-now", NULL, retry_now_action);
  gtk_widget_class_install_action (widget_class, "retry-banner.cancel", NULL, cancel_action);

  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "retrybanner");
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_GROUP);
}

static GtkWidget *
build_texts (Layout     *layout,
             const char *suffix)
{
  g_autofree char *reason_name = g_strconcat ("reason", suffix, NULL);
  g_autofree char *detail_name = g_strconcat ("detail", suffix, NULL);
  GtkWidget *texts = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);

  gtk_widget_set_hexpand (texts, TRUE);
  gtk_widget_set_valign (texts, GTK_ALIGN_CENTER);

  layout->icon = GTK_IMAGE (gtk_image_new_from_icon_name ("view-refresh-symbolic"));
  gtk_widget_set_valign (GTK_WIDGET (layout->icon), GTK_ALIGN_CENTER);
  gtk_accessible_update_state (GTK_ACCESSIBLE (layout->icon), GTK_ACCESSIBLE_STATE_HIDDEN, TRUE, -1);

  layout->reason_label = new_label (reason_name, "heading");
  gtk_box_append (GTK_BOX (texts), GTK_WIDGET (layout->reason_label));

  layout->detail_label = new_label (detail_name, "caption");
  gtk_box_append (GTK_BOX (texts), GTK_WIDGET (layout->detail_label));

  return texts;
}

static GtkLabel *
build_status (Layout     *layout,
              const char *suffix)
{
  g_autofree char *name = g_strconcat ("status", suffix, NULL);

  layout->status_label = new_label (name, "numeric");
  gtk_label_set_wrap (layout->status_label, FALSE);
  gtk_widget_add_css_class (GTK_WIDGET (layout->status_label), "kaged-retry-status");
  gtk_widget_set_valign (GTK_WIDGET (layout->status_label), GTK_ALIGN_CENTER);

  return layout->status_label;
}

static void
append_buttons (GtkBox     *box,
                const char *suffix,
                gboolean    expand)
{
  g_autofree char *retry_name = g_strconcat ("retry-now", suffix, NULL);
  g_autofree char *cancel_name = g_strconcat ("cancel", suffix, NULL);
  GtkWidget *retry_now = GTK_WIDGET (new_button (retry_name, _("_Retry Now"),
                                                 "retry-banner.retry-now", _("Retry now"),
                                                 _("Start the retry without waiting")));
  GtkWidget *cancel = GTK_WIDGET (new_button (cancel_name, _("_Cancel Retry"),
                                              "retry-banner.cancel", _("Cancel retry"),
                                              _("Stop retrying this reply")));

  gtk_widget_set_hexpand (retry_now, expand);
  gtk_widget_set_hexpand (cancel, expand);
  gtk_box_append (box, retry_now);
  gtk_box_append (box, cancel);
}

/* Only the arrangement shown is there for assistive technologies: the
 * others are copies of it, which the squeezer keeps unmapped but visible. */
static void
squeezer_visible_child_cb (KagedRetryBanner *self,
                           GParamSpec       *pspec,
                           AdwSqueezer      *squeezer)
{
  GtkWidget *shown = adw_squeezer_get_visible_child (squeezer);

  for (guint i = 0; i < N_LAYOUTS; i++)
    gtk_accessible_update_state (GTK_ACCESSIBLE (self->layouts[i].box),
                                 GTK_ACCESSIBLE_STATE_HIDDEN, self->layouts[i].box != shown,
                                 -1);
}

static void
kaged_retry_banner_init (KagedRetryBanner *self)
{
  Layout *wide = &self->layouts[LAYOUT_WIDE];
  Layout *narrow = &self->layouts[LAYOUT_NARROW];
  Layout *phone = &self->layouts[LAYOUT_PHONE];
  GSettings *clock_settings;
  GtkWidget *squeezer;
  GtkWidget *box;
  GtkWidget *row;
  GtkWidget *texts;

  ensure_style (GTK_WIDGET (self));

  /* The desktop's 12h/24h choice, when the desktop's schema is installed. */
  clock_settings = kaged_retry_desktop_clock_settings ();
  if (clock_settings != NULL)
    self->clock_format_id = g_signal_connect_swapped (clock_settings, "changed::clock-format",
                                                      G_CALLBACK (kaged_retry_banner_update), self);

  self->scheduler_signals = g_signal_group_new (KAGED_TYPE_RETRY_SCHEDULER);
  g_signal_group_connect_object (self->scheduler_signals, "notify",
                                 G_CALLBACK (scheduler_notify_cb), self, G_CONNECT_SWAPPED);

  self->revealer = GTK_REVEALER (gtk_revealer_new ());
  gtk_revealer_set_transition_type (self->revealer, GTK_REVEALER_TRANSITION_TYPE_SLIDE_DOWN);
  gtk_widget_set_parent (GTK_WIDGET (self->revealer), GTK_WIDGET (self));

  /* The first arrangement whose minimum width fits is shown. */
  squeezer = adw_squeezer_new ();
  adw_squeezer_set_switch_threshold_policy (ADW_SQUEEZER (squeezer), ADW_FOLD_THRESHOLD_POLICY_MINIMUM);
  adw_squeezer_set_homogeneous (ADW_SQUEEZER (squeezer), FALSE);
  adw_squeezer_set_transition_type (ADW_SQUEEZER (squeezer), ADW_SQUEEZER_TRANSITION_TYPE_NONE);
  gtk_widget_add_css_class (squeezer, "kaged-retry-banner");
  gtk_revealer_set_child (self->revealer, squeezer);

  /* Wide: icon, words, status and buttons in a row. */
  box = wide->box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 12);
  gtk_widget_set_name (box, "arrangement");
  gtk_widget_add_css_class (box, "wide");
  texts = build_texts (wide, "");
  /* Below this the words would squeeze into a column: go narrow instead. */
  gtk_label_set_width_chars (wide->reason_label, 32);
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (wide->icon));
  gtk_box_append (GTK_BOX (box), texts);
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (build_status (wide, "")));
  append_buttons (GTK_BOX (box), "", FALSE);
  adw_squeezer_add (ADW_SQUEEZER (squeezer), box);

  /* Narrow: icon and words, then status and buttons. */
  box = narrow->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  gtk_widget_set_name (box, "arrangement-narrow");
  gtk_widget_add_css_class (box, "narrow");
  row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 12);
  gtk_widget_set_margin_start (row, 6);
  texts = build_texts (narrow, "-narrow");
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (narrow->icon));
  gtk_box_append (GTK_BOX (row), texts);
  gtk_box_append (GTK_BOX (box), row);
  row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_widget_set_margin_start (row, 6);
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (build_status (narrow, "-narrow")));
  gtk_widget_set_hexpand (GTK_WIDGET (narrow->status_label), TRUE);
  append_buttons (GTK_BOX (row), "-narrow", FALSE);
  gtk_box_append (GTK_BOX (box), row);
  adw_squeezer_add (ADW_SQUEEZER (squeezer), box);

  /* Phone: the words with the whole width, the icon and status, then the
   * buttons sharing a row. Nothing here is kept wider than it needs: this
   * arrangement is the last, and always fits. */
  box = phone->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  gtk_widget_set_name (box, "arrangement-phone");
  gtk_widget_add_css_class (box, "phone");
  texts = build_texts (phone, "-phone");
  gtk_widget_set_margin_start (texts, 6);
  gtk_box_append (GTK_BOX (box), texts);
  row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 12);
  gtk_widget_set_margin_start (row, 6);
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (phone->icon));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (build_status (phone, "-phone")));
  gtk_label_set_wrap (phone->status_label, TRUE);
  gtk_label_set_wrap_mode (phone->status_label, PANGO_WRAP_WORD_CHAR);
  gtk_box_append (GTK_BOX (box), row);
  row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_box_set_homogeneous (GTK_BOX (row), TRUE);
  append_buttons (GTK_BOX (row), "-phone", TRUE);
  gtk_box_append (GTK_BOX (box), row);
  adw_squeezer_add (ADW_SQUEEZER (squeezer), box);

  g_signal_connect_object (squeezer, "notify::visible-child",
                           G_CALLBACK (squeezer_visible_child_cb), self, G_CONNECT_SWAPPED);
  squeezer_visible_child_cb (self, NULL, ADW_SQUEEZER (squeezer));

  gtk_accessible_update_property (GTK_ACCESSIBLE (self),
                                  GTK_ACCESSIBLE_PROPERTY_LABEL, _("Automatic retry"),
                                  -1);

  kaged_retry_banner_update (self);
}

/**
 * kaged_retry_banner_new:
 *
 * Returns: (transfer floating): a banner bound to no scheduler, hidden
 */
GtkWidget *
kaged_retry_banner_new (void)
{
  return g_object_new (KAGED_TYPE_RETRY_BANNER, NULL);
}

/**
 * kaged_retry_banner_get_scheduler:
 *
 * Returns: (transfer none) (nullable): the scheduler shown
 */
KagedRetryScheduler *
kaged_retry_banner_get_scheduler (KagedRetryBanner *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_BANNER (self), NULL);

  return self->scheduler;
}

/**
 * kaged_retry_banner_set_scheduler:
 * @scheduler: (nullable): the scheduler of the conversation now shown
 *
 * Follows @scheduler from now on; the previous one is let go.
 */
void
kaged_retry_banner_set_scheduler (KagedRetryBanner    *self,
                                  KagedRetryScheduler *scheduler)
{
  g_return_if_fail (KAGED_IS_RETRY_BANNER (self));
  g_return_if_fail (!scheduler || KAGED_IS_RETRY_SCHEDULER (scheduler));

  if (!g_set_object (&self->scheduler, scheduler))
    return;

  g_signal_group_set_target (self->scheduler_signals, scheduler);
  kaged_retry_banner_update (self);

  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_SCHEDULER]);
}

/**
 * kaged_retry_banner_get_revealed:
 *
 * Returns: whether the banner shows (a retry waits or runs)
 */
gboolean
kaged_retry_banner_get_revealed (KagedRetryBanner *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_BANNER (self), FALSE);

  return gtk_revealer_get_reveal_child (self->revealer);
}
