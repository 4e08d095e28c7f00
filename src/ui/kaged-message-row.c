/* kaged-message-row.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-message-row"

#include "config.h"

#include <adwaita.h>
#include <glib/gi18n.h>
#include <string.h>

#include "kaged-later-messages.h"
#include "kaged-markdown-view.h"
#include "kaged-message-details.h"
#include "kaged-message-row.h"
#include "kaged-retry-snapshot.h"
#include "kaged-retry-text.h"

#define COPIED_FEEDBACK_SECONDS 2
#define DESCRIPTION_INTERVAL_MS 500
/* A streaming reply on screen changes at most this often, and less often
 * when showing a change costs more: a change may take a tenth of the time. */
#define STREAMING_INTERVAL_MIN_US (50 * G_TIME_SPAN_MILLISECOND)
#define STREAMING_INTERVAL_MAX_US (500 * G_TIME_SPAN_MILLISECOND)
#define STREAMING_COST_SHARE 10
/* While words arrive they show the reply is being written; the spinner
 * turns when none came for this long. */
#define SPINNER_PAUSE_MS 1000

/* How often a quota's time on a reply's card is put in words again. */
#define QUOTA_TIME_REFRESH_SECONDS 60

/* Bytes of an operator's text measured without a minimum width. */
#define SHORT_OPERATOR_TEXT 256

/**
 * KagedMessageRow:
 *
 * One message of a conversation. The operator's own messages stand in a
 * tinted bubble on the right under "You", with *Copy* and *Edit*; replies
 * take the full width as Markdown, with *Regenerate*, *Copy* and *Message
 * Details*. A reply with earlier versions, and a message with earlier
 * texts that edits replaced, has a pager; under an earlier one, what
 * followed it can be unfolded and read. The row says
 * in words what state a reply is in (writing, stopped, failed and why,
 * interrupted, queued) and keeps what was written before it stopped.
 *
 * The row follows its #KagedMessage through a #GBindingGroup and a
 * #GSignalGroup, so a list view can bind and recycle it freely.
 *
 * It activates these actions, which its owner (the window) provides, with
 * the message id (`x`) as parameter: `message.regenerate` (on a reply),
 * `message.edit` (on an operator message) and `message.show-version` (after
 * the pager showed another version). *Open Preferences* activates
 * `app.preferences-profile` with #KagedMessageRow:profile-id, or
 * `app.preferences` when the reply's profile has no page of its own.
 */
struct _KagedMessageRow
{
  GtkWidget parent_instance;

  KagedMessage *message;
  GListModel *versions;
  KagedRun *run;
  char *provider_name;
  char *profile_id;
  KagedProfile *server_profile;
  char *unreachable_hint;
  char *model_name;
  guint queued : 1;
  guint retry_pending : 1;
  /* The least a long operator's text is measured from (the template's) */
  int operator_width_chars;

  GBindingGroup *message_bindings;
  GSignalGroup *message_signals;
  GSignalGroup *versions_signals;
  GSignalGroup *run_signals;
  GSignalGroup *server_profile_signals;
  /* Counts down to the next attempt while Tier 1 waits */
  guint wait_source;
  /* While the card says until when a quota is used up: each minute, and
   * the desktop's clock format, say it again */
  guint quota_time_source;
  gulong clock_format_id;
  /* The status shown is of a streaming reply before its first words */
  guint awaiting_words : 1;
  guint copied_source;
  guint description_source;
  /* A change of a streaming reply waits for its interval (content_source,
   * a timeout), then for a frame to end (content_clock), then is shown
   * from an idle (content_source again) */
  guint content_source;
  GdkFrameClock *content_clock;
  gulong content_frame_id;
  gint64 content_shown_at;
  gint64 streaming_interval;
  /* What showing the last change cost: its Markdown, then the frame that
   * laid it out and painted it */
  gint64 update_cost;
  gint64 update_frame_started_at;
  GdkFrameClock *update_clock;
  gulong update_frame_id;
  gulong update_painted_id;
  guint spinner_source;

  /* Template children */
  GtkBox *header_box;
  GtkLabel *author_label;
  GtkSpinner *status_spinner;
  GtkLabel *status_label;
  GtkLabel *wait_label;
  AdwBin *bubble;
  GtkLabel *operator_label;
  KagedMarkdownView *markdown_view;
  GtkBox *error_box;
  GtkLabel *error_label;
  GtkLabel *error_detail_label;
  GtkLabel *hint_label;
  GtkButton *preferences_button;
  GtkBox *actions_box;
  KagedLaterMessages *later_messages;
  GtkBox *pager_box;
  GtkButton *previous_button;
  GtkLabel *pager_label;
  GtkButton *next_button;
  GtkButton *regenerate_button;
  GtkButton *copy_button;
  GtkButton *edit_button;
  GtkButton *details_button;
  GtkPopover *details_popover;
};

G_DEFINE_FINAL_TYPE (KagedMessageRow, kaged_message_row, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_MESSAGE,
  PROP_VERSIONS,
  PROP_RUN,
  PROP_PROVIDER_NAME,
  PROP_PROFILE_ID,
  PROP_MODEL_NAME,
  PROP_QUEUED,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

static void update_pager (KagedMessageRow *self);

/* --- words --------------------------------------------------------------------- */

/**
 * kaged_message_row_describe_failure:
 * @message: a failed reply
 * @dated: whether a time it names is said with its date, for a text read
 *   later (an export), instead of as today, tomorrow or a weekday
 *
 * Returns: (transfer full): a sentence for people that says why @message
 *   failed
 */
char *
kaged_message_row_describe_failure (KagedMessage *message,
                                    gboolean      dated)
{
  KagedRetryClass retry_class;
  gint64 retry_after_until;
  const char *content;

  g_return_val_if_fail (KAGED_IS_MESSAGE (message), NULL);

  retry_class = kaged_message_get_retry_class (message);
  retry_after_until = kaged_message_get_retry_after_until (message);
  content = kaged_message_get_content (message);

  switch (retry_class)
    {
    case KAGED_RETRY_CLASS_RATE_LIMITED:
      return g_strdup (_("The provider is limiting how many requests you can send"));
    case KAGED_RETRY_CLASS_OVERLOADED:
      return g_strdup (_("The provider is overloaded"));
    case KAGED_RETRY_CLASS_SERVER_ERROR:
      return g_strdup (_("The provider had a problem on its side"));
    case KAGED_RETRY_CLASS_NETWORK:
      /* Part of the reply came: the server was reached, and the
       * connection lost on the way. */
      if (content != NULL && content[0] != '\0')
        return g_strdup (_("The connection was lost before the reply was complete"));
      return g_strdup (_("Could not reach the server"));
    case KAGED_RETRY_CLASS_TIMEOUT:
      return g_strdup (_("The server took too long to answer"));
    case KAGED_RETRY_CLASS_QUOTA_SCHEDULED:
      if (retry_after_until > 0)
        {
          char *until = kaged_retry_describe_quota_until (retry_after_until,
                                                          dated ? 0 : g_get_real_time () / 1000,
                                                          kaged_retry_desktop_uses_12h ());

          if (until != NULL)
            return until;
        }
      return g_strdup (_("Your quota with the provider is used up until it resets"));
    case KAGED_RETRY_CLASS_QUOTA_EXHAUSTED:
      return g_strdup (_("Your quota or credit with the provider is used up"));
    case KAGED_RETRY_CLASS_CONTEXT_OVERFLOW:
      return g_strdup (_("The conversation is too long for this model"));
    case KAGED_RETRY_CLASS_AUTH_FAILED:
      return g_strdup (_("The provider did not accept the API key"));
    case KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED:
      return g_strdup (_("No API key was found for this provider"));
    case KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED:
      return g_strdup (_("Your spend limit has been reached"));
    case KAGED_RETRY_CLASS_INVALID_REQUEST:
      return g_strdup (_("The provider refused the request"));
    case KAGED_RETRY_CLASS_PROTOCOL_ERROR:
      return g_strdup (_("The provider sent an answer Kaged does not understand"));
    case KAGED_RETRY_CLASS_INTERRUPTED:
      return g_strdup (_("Interrupted when Kaged closed"));
    case KAGED_RETRY_CLASS_NONE:
    default:
      return g_strdup (_("The reply could not be written"));
    }
}

static gboolean
needs_preferences (KagedRetryClass retry_class)
{
  return retry_class == KAGED_RETRY_CLASS_AUTH_FAILED ||
         retry_class == KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED;
}

static gboolean
is_agent (KagedMessageRow *self)
{
  return self->message != NULL &&
         kaged_message_get_role (self->message) != KAGED_MESSAGE_ROLE_OPERATOR;
}

/* While Tier 1 waits to try the provider again before the reply's first
 * words, the attempt that failed; @left_ms is set to the time until the
 * next one starts. Otherwise %NULL. */
static const KagedAttempt *
find_tier1_wait (KagedMessageRow *self,
                 gint64          *left_ms)
{
  const char *content;
  GPtrArray *attempts;
  const KagedAttempt *last;
  gint64 next;

  if (self->run == NULL || self->message == NULL || !is_agent (self) ||
      kaged_message_get_status (self->message) != KAGED_MESSAGE_STATUS_STREAMING)
    return NULL;

  content = kaged_message_get_content (self->message);
  if (content != NULL && content[0] != '\0')
    return NULL;

  next = kaged_run_get_next_attempt_at (self->run) - g_get_real_time () / 1000;
  attempts = kaged_run_get_attempts (self->run);
  if (next <= 0 || attempts == NULL || attempts->len == 0)
    return NULL;

  last = g_ptr_array_index (attempts, attempts->len - 1);
  if (last->wait_ms <= 0)
    return NULL;

  *left_ms = next;
  return last;
}

/* A reply stopped before its first words, after an attempt of its run had
 * failed (while Tier 1 waited to try the provider again, or tried it):
 * that attempt. Otherwise %NULL. The attempt the stop cut short is logged
 * too, without a class: it tells nothing about the provider. */
static const KagedAttempt *
find_stopped_failure (KagedMessageRow *self)
{
  const char *content;
  GPtrArray *attempts;

  if (self->run == NULL || self->message == NULL || !is_agent (self) ||
      kaged_message_get_status (self->message) != KAGED_MESSAGE_STATUS_CANCELLED)
    return NULL;

  content = kaged_message_get_content (self->message);
  if (content != NULL && content[0] != '\0')
    return NULL;

  attempts = kaged_run_get_attempts (self->run);
  for (guint i = attempts != NULL ? attempts->len : 0; i > 0; i--)
    {
      const KagedAttempt *attempt = g_ptr_array_index (attempts, i - 1);
      gboolean cut_short = attempt->retry_class == KAGED_RETRY_CLASS_NONE && attempt->error != NULL;

      if (!cut_short)
        return attempt->retry_class != KAGED_RETRY_CLASS_NONE ? attempt : NULL;
    }

  return NULL;
}

/* A whole message paged back to, which the conversation no longer goes
 * on from. (One that failed or stopped says that instead.) */
static gboolean
shows_earlier_version (KagedMessageRow *self)
{
  KagedMessageStatus status;

  if (self->message == NULL || !kaged_message_is_superseded (self->message))
    return FALSE;

  status = kaged_message_get_status (self->message);
  return status == KAGED_MESSAGE_STATUS_NONE || status == KAGED_MESSAGE_STATUS_COMPLETE;
}

/**
 * kaged_message_row_describe_status:
 *
 * Returns: (transfer full) (nullable): the words the row shows about the
 *   state of its message — "Queued", "Connecting…", "Writing…", "Stopped",
 *   "Failed", "Earlier version", … — or %NULL for a complete message the
 *   conversation goes on from
 */
char *
kaged_message_row_describe_status (KagedMessageRow *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE_ROW (self), NULL);

  if (self->message == NULL)
    return NULL;

  if (self->queued)
    return g_strdup (_("Queued"));

  if (kaged_message_get_role (self->message) == KAGED_MESSAGE_ROLE_SUMMARY)
    return g_strdup (_("Summary of earlier messages"));

  switch (kaged_message_get_status (self->message))
    {
    case KAGED_MESSAGE_STATUS_STREAMING:
      {
        const char *content = kaged_message_get_content (self->message);

        gint64 left_ms = 0;

        /* Until the first words arrive, the provider is being reached, or
         * Tier 1 waits to try it again. */
        if (find_tier1_wait (self, &left_ms) != NULL)
          {
            g_autofree char *left = kaged_retry_format_duration ((left_ms + 999) / 1000);

            /* Translators: %s is how long until the provider is tried again, e.g. "Trying again in 25 s" */
            return g_strdup_printf (_("Trying again in %s"), left);
          }
        if (content == NULL || content[0] == '\0')
          return g_strdup (_("Connecting…"));
        return g_strdup (_("Writing…"));
      }
    case KAGED_MESSAGE_STATUS_FAILED:
      /* Tier 2 retries it: the banner counts down. */
      if (self->retry_pending)
        return g_strdup (_("Waiting to retry"));
      return g_strdup (_("Failed"));
    case KAGED_MESSAGE_STATUS_CANCELLED:
      return g_strdup (_("Stopped"));
    case KAGED_MESSAGE_STATUS_INTERRUPTED:
      return g_strdup (_("Interrupted when Kaged closed"));
    case KAGED_MESSAGE_STATUS_NONE:
    case KAGED_MESSAGE_STATUS_COMPLETE:
    default:
      if (shows_earlier_version (self))
        return g_strdup (_("Earlier version"));
      return NULL;
    }
}

/* --- the state shown ---------------------------------------------------------------- */

static void
set_action_target (GtkButton *button,
                   gint64     id)
{
  gtk_actionable_set_action_target_value (GTK_ACTIONABLE (button), g_variant_new_int64 (id));
}

static void update_status (KagedMessageRow *self);

static gboolean
wait_tick_cb (gpointer user_data)
{
  KagedMessageRow *self = user_data;

  self->wait_source = 0;
  update_status (self);

  return G_SOURCE_REMOVE;
}

/* While Tier 1 waits, says why, and shows the countdown's next second when
 * it comes; a reply stopped meanwhile keeps saying why, without the wait. */
static void
update_tier1_wait (KagedMessageRow *self)
{
  gint64 left_ms = 0;
  const KagedAttempt *failed = find_tier1_wait (self, &left_ms);
  const KagedAttempt *stopped = failed == NULL ? find_stopped_failure (self) : NULL;

  g_clear_handle_id (&self->wait_source, g_source_remove);
  gtk_widget_set_visible (GTK_WIDGET (self->wait_label), failed != NULL || stopped != NULL);
  if (stopped != NULL)
    {
      g_autofree char *reason = kaged_retry_describe_reason (stopped->retry_class,
                                                             stopped->http_status, 0);

      gtk_label_set_label (self->wait_label, reason);
      return;
    }
  if (failed == NULL)
    return;

  {
    gboolean asked = failed->wait_source != NULL &&
                     !g_str_equal (failed->wait_source, KAGED_RETRY_WAIT_SOURCE_BACKOFF);
    g_autofree char *reason = kaged_retry_describe_reason (failed->retry_class, failed->http_status,
                                                           asked ? failed->wait_ms : 0);
    gint64 to_next_second = left_ms % 1000 != 0 ? left_ms % 1000 : 1000;

    gtk_label_set_label (self->wait_label, reason);
    self->wait_source = g_timeout_add ((guint) to_next_second + 1, wait_tick_cb, self);
  }
}

/* The words of the header's status, the spinner beside them, and while
 * Tier 1 waits the reason and its countdown. */
static void
update_status (KagedMessageRow *self)
{
  g_autofree char *status = kaged_message_row_describe_status (self);
  gboolean streaming = is_agent (self) &&
                       kaged_message_get_status (self->message) == KAGED_MESSAGE_STATUS_STREAMING;
  const char *content = streaming ? kaged_message_get_content (self->message) : NULL;

  self->awaiting_words = streaming && (content == NULL || content[0] == '\0');

  gtk_widget_set_visible (GTK_WIDGET (self->status_label), status != NULL);
  gtk_label_set_label (self->status_label, status != NULL ? status : "");
  /* Set only when it changes: GTK 4.8 on X11 asks the display server
   * where the pointer is each time a visible widget is given a tooltip. */
  {
    const char *tooltip = !self->queued && shows_earlier_version (self)
                          ? _("The conversation continues from the latest version") : NULL;

    if (g_strcmp0 (gtk_widget_get_tooltip_text (GTK_WIDGET (self->status_label)), tooltip) != 0)
      gtk_widget_set_tooltip_text (GTK_WIDGET (self->status_label), tooltip);
  }
  update_tier1_wait (self);

  gtk_widget_set_visible (GTK_WIDGET (self->status_spinner), streaming);
  if (!streaming)
    g_clear_handle_id (&self->spinner_source, g_source_remove);
  /* A spinner draws a frame of the window 60 times a second. */
  gtk_spinner_set_spinning (self->status_spinner, streaming && self->spinner_source == 0);
}

static void update_state (KagedMessageRow *self);

static gboolean
quota_time_cb (gpointer user_data)
{
  update_state (user_data);

  return G_SOURCE_CONTINUE;
}

/* A quota's time on the card names its day ("tomorrow", "Friday") and is
 * in the desktop's clock format: while it is shown, both are followed. It
 * is said again each minute, as the retry banner does, so that a night
 * asleep (when timers stand still) does not leave "tomorrow" for today. */
static void
watch_quota_time (KagedMessageRow *self,
                  gboolean         watch)
{
  GSettings *clock_settings = kaged_retry_desktop_clock_settings ();

  if (!watch)
    {
      g_clear_handle_id (&self->quota_time_source, g_source_remove);
      if (clock_settings != NULL)
        g_clear_signal_handler (&self->clock_format_id, clock_settings);
      return;
    }

  /* Connected before the format is read: GSettings tells of changes to
   * keys read while a handler is connected. */
  if (clock_settings != NULL && self->clock_format_id == 0)
    self->clock_format_id = g_signal_connect_object (clock_settings, "changed::clock-format",
                                                     G_CALLBACK (update_state), self,
                                                     G_CONNECT_SWAPPED);
  if (self->quota_time_source == 0)
    {
      self->quota_time_source = g_timeout_add_seconds (QUOTA_TIME_REFRESH_SECONDS, quota_time_cb, self);
      g_source_set_static_name (g_main_context_find_source_by_id (NULL, self->quota_time_source),
                                "[kaged] quota card time");
    }
}

static void
update_state (KagedMessageRow *self)
{
  KagedMessageStatus message_status = KAGED_MESSAGE_STATUS_NONE;
  gboolean agent = is_agent (self);
  gboolean failed;
  gint64 id = 0;

  if (self->message != NULL)
    {
      message_status = kaged_message_get_status (self->message);
      id = kaged_message_get_id (self->message);
    }

  if (agent)
    {
      gtk_widget_remove_css_class (GTK_WIDGET (self), "operator");
      gtk_widget_add_css_class (GTK_WIDGET (self), "agent");
      gtk_label_set_label (self->author_label, _("Assistant"));
    }
  else
    {
      gtk_widget_remove_css_class (GTK_WIDGET (self), "agent");
      gtk_widget_add_css_class (GTK_WIDGET (self), "operator");
      gtk_label_set_label (self->author_label, _("You"));
    }

  gtk_accessible_update_property (GTK_ACCESSIBLE (self),
                                  GTK_ACCESSIBLE_PROPERTY_LABEL, gtk_label_get_label (self->author_label),
                                  -1);

  gtk_widget_set_halign (GTK_WIDGET (self->header_box), agent ? GTK_ALIGN_START : GTK_ALIGN_END);
  gtk_widget_set_halign (GTK_WIDGET (self->actions_box), agent ? GTK_ALIGN_START : GTK_ALIGN_END);
  gtk_widget_set_visible (GTK_WIDGET (self->bubble), !agent);
  gtk_widget_set_visible (GTK_WIDGET (self->markdown_view), agent);

  gtk_widget_set_visible (GTK_WIDGET (self->regenerate_button), agent);
  /* While the reply is written, Stop ends it. */
  gtk_widget_set_sensitive (GTK_WIDGET (self->regenerate_button),
                            message_status != KAGED_MESSAGE_STATUS_STREAMING);
  gtk_widget_set_visible (GTK_WIDGET (self->details_button), agent);
  /* An earlier text, paged back to, is read, not edited again. */
  gtk_widget_set_visible (GTK_WIDGET (self->edit_button),
                          !agent && self->message != NULL && !kaged_message_is_superseded (self->message));
  set_action_target (self->regenerate_button, id);
  set_action_target (self->edit_button, id);

  update_status (self);

  failed = agent && message_status == KAGED_MESSAGE_STATUS_FAILED;
  gtk_widget_set_visible (GTK_WIDGET (self->error_box), failed);
  if (failed)
    {
      KagedRetryClass retry_class = kaged_message_get_retry_class (self->message);
      const char *detail = kaged_message_get_error_message (self->message);
      g_autofree char *sentence = NULL;

      watch_quota_time (self, retry_class == KAGED_RETRY_CLASS_QUOTA_SCHEDULED &&
                              kaged_message_get_retry_after_until (self->message) > 0);
      sentence = kaged_message_row_describe_failure (self->message, FALSE);
      if (self->retry_pending)
        gtk_widget_add_css_class (GTK_WIDGET (self->error_box), "retry-pending");
      else
        gtk_widget_remove_css_class (GTK_WIDGET (self->error_box), "retry-pending");
      gtk_label_set_label (self->error_label, sentence);
      gtk_label_set_label (self->error_detail_label, detail != NULL ? detail : "");
      gtk_widget_set_visible (GTK_WIDGET (self->error_detail_label),
                              detail != NULL && detail[0] != '\0' && g_strcmp0 (detail, sentence) != 0);
      /* The server was not reached: what to do about it, and where. */
      {
        const char *content = kaged_message_get_content (self->message);
        gboolean unreached = retry_class == KAGED_RETRY_CLASS_NETWORK &&
                             (content == NULL || content[0] == '\0');
        gboolean has_page = self->profile_id != NULL && self->profile_id[0] != '\0';

        gtk_label_set_label (self->hint_label, unreached && self->unreachable_hint != NULL
                                               ? self->unreachable_hint : "");
        gtk_widget_set_visible (GTK_WIDGET (self->hint_label),
                                unreached && self->unreachable_hint != NULL);
        gtk_widget_set_visible (GTK_WIDGET (self->preferences_button),
                                needs_preferences (retry_class) || (unreached && has_page));
      }
    }
  else
    {
      watch_quota_time (self, FALSE);
    }

  update_pager (self);
}

static void
update_description (KagedMessageRow *self)
{
  const char *content = NULL;

  g_clear_handle_id (&self->description_source, g_source_remove);

  if (self->message != NULL)
    content = kaged_message_get_content (self->message);

  gtk_accessible_update_property (GTK_ACCESSIBLE (self),
                                  GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, content != NULL ? content : "",
                                  -1);
}

static gboolean
update_description_later_cb (gpointer user_data)
{
  KagedMessageRow *self = user_data;

  self->description_source = 0;
  update_description (self);

  return G_SOURCE_REMOVE;
}

/* A frame clock drops its handlers when its window is destroyed. */
static void
disconnect_clock_handler (GdkFrameClock *clock,
                          gulong        *handler_id)
{
  if (*handler_id != 0 && g_signal_handler_is_connected (clock, *handler_id))
    g_signal_handler_disconnect (clock, *handler_id);
  *handler_id = 0;
}

/* Whether a change of a streaming reply waits to be shown. */
static gboolean
content_pending (KagedMessageRow *self)
{
  return self->content_source != 0 || self->content_clock != NULL;
}

static void
forget_pending_content (KagedMessageRow *self)
{
  g_clear_handle_id (&self->content_source, g_source_remove);
  if (self->content_clock != NULL)
    disconnect_clock_handler (self->content_clock, &self->content_frame_id);
  g_clear_object (&self->content_clock);
}

/* The operator's text as typed, without the blank lines before or after
 * it, which would only leave empty space in the bubble. */
static void
set_operator_text (KagedMessageRow *self,
                   const char      *content)
{
  const char *start = content != NULL ? content : "";
  const char *end;
  const char *line;

  /* Whole blank lines at the start; the indentation of the first line
   * with text stays. */
  for (line = start; *line == ' ' || *line == '\t' || *line == '\r' || *line == '\n'; line++)
    if (*line == '\n')
      start = line + 1;

  end = start + strlen (start);
  while (end > start && g_ascii_isspace (end[-1]))
    end--;

  /* A long text is measured from a minimum of some characters (the
   * template's): one word per line, the least GTK would measure it from,
   * costs many times the layout shown. A short one is measured as it is,
   * cheaply, and its bubble is as wide as its text. */
  gtk_label_set_width_chars (self->operator_label,
                             end - start <= SHORT_OPERATOR_TEXT ? -1 : self->operator_width_chars);

  if (*end == '\0' && start == content)
    {
      gtk_label_set_label (self->operator_label, content);
    }
  else
    {
      g_autofree char *text = g_strndup (start, end - start);

      gtk_label_set_label (self->operator_label, text);
    }
}

/* The text on screen: the operator's as written, a reply as Markdown. Only
 * the one shown is set, so a row does not parse Markdown it hides. */
static void
show_content (KagedMessageRow *self)
{
  const char *content = self->message != NULL ? kaged_message_get_content (self->message) : NULL;

  forget_pending_content (self);
  self->content_shown_at = g_get_monotonic_time ();

  if (is_agent (self))
    {
      gtk_label_set_label (self->operator_label, "");
      kaged_markdown_view_set_text (self->markdown_view, content);
    }
  else
    {
      kaged_markdown_view_set_text (self->markdown_view, NULL);
      set_operator_text (self, content);
    }

  gtk_widget_set_visible (GTK_WIDGET (self->copy_button), content != NULL && content[0] != '\0');
}

/**
 * kaged_message_row_streaming_interval:
 * @update_cost: how long showing the last change of a streaming reply took:
 *   parsing its Markdown and building its widgets, then the frame that laid
 *   it out and painted it, in microseconds
 *
 * How long a streaming reply waits before it shows its next change: 50 ms
 * (20 changes a second) while changes are cheap, ten times the cost of the
 * last one when that is more, up to half a second. A long reply with many
 * blocks then keeps the main thread free nine tenths of the time however
 * slow the machine, and its words still appear several times a second.
 *
 * Returns: the wait, in microseconds
 */
gint64
kaged_message_row_streaming_interval (gint64 update_cost)
{
  if (update_cost <= 0)
    return STREAMING_INTERVAL_MIN_US;

  return CLAMP (update_cost * STREAMING_COST_SHARE,
                STREAMING_INTERVAL_MIN_US, STREAMING_INTERVAL_MAX_US);
}

/**
 * kaged_message_row_get_streaming_interval:
 * @self: a #KagedMessageRow
 *
 * How long @self now waits between two changes of its streaming reply on
 * screen (see kaged_message_row_streaming_interval()).
 *
 * Returns: the wait, in microseconds
 */
gint64
kaged_message_row_get_streaming_interval (KagedMessageRow *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE_ROW (self), 0);

  return self->streaming_interval;
}

static void
forget_update_clock (KagedMessageRow *self)
{
  if (self->update_clock != NULL)
    {
      disconnect_clock_handler (self->update_clock, &self->update_frame_id);
      disconnect_clock_handler (self->update_clock, &self->update_painted_id);
    }
  g_clear_object (&self->update_clock);
}

/* A frame that starts again after one cut short by a freeze counts from
 * its own start. */
static void
on_update_frame_started (KagedMessageRow *self,
                         GdkFrameClock   *frame_clock)
{
  self->update_frame_started_at = g_get_monotonic_time ();
}

static void
on_update_painted (KagedMessageRow *self,
                   GdkFrameClock   *frame_clock)
{
  /* A frame that ended before the one that shows the change */
  if (self->update_frame_started_at == 0)
    return;

  self->update_cost += g_get_monotonic_time () - self->update_frame_started_at;
  forget_update_clock (self);
  self->streaming_interval = kaged_message_row_streaming_interval (self->update_cost);
}

/* Shows the change between two frames: parsing and building happen here,
 * and the next frame only lays the change out and paints it. */
static gboolean
show_between_frames_cb (gpointer user_data)
{
  KagedMessageRow *self = user_data;
  GdkFrameClock *frame_clock;
  gint64 started_at;

  self->content_source = 0;

  started_at = g_get_monotonic_time ();
  show_content (self);

  frame_clock = gtk_widget_get_frame_clock (GTK_WIDGET (self));
  forget_update_clock (self);
  if (frame_clock == NULL)
    return G_SOURCE_REMOVE;

  /* Its whole cost is known once the next frame is painted. */
  self->update_cost = g_get_monotonic_time () - started_at;
  self->update_frame_started_at = 0;
  self->update_clock = g_object_ref (frame_clock);
  self->update_frame_id = g_signal_connect_swapped (frame_clock, "before-paint",
                                                    G_CALLBACK (on_update_frame_started), self);
  self->update_painted_id = g_signal_connect_swapped (frame_clock, "after-paint",
                                                      G_CALLBACK (on_update_painted), self);
  gdk_frame_clock_request_phase (frame_clock, GDK_FRAME_CLOCK_PHASE_BEFORE_PAINT);

  return G_SOURCE_REMOVE;
}

static void
on_frame_ended (KagedMessageRow *self,
                GdkFrameClock   *frame_clock)
{
  disconnect_clock_handler (self->content_clock, &self->content_frame_id);
  g_clear_object (&self->content_clock);

  /* After the events already waiting (the rest of the deltas), before
   * other idles and the next frame, which is due in a few milliseconds. */
  self->content_source = g_idle_add_full (G_PRIORITY_HIGH_IDLE, show_between_frames_cb, self, NULL);
}

/* Shows the change once the frame being drawn, or one asked for, ends:
 * parsing the Markdown and building widgets then fills the time between
 * two frames, not the next frame. */
static void
show_after_frame (KagedMessageRow *self)
{
  GdkFrameClock *frame_clock = gtk_widget_get_frame_clock (GTK_WIDGET (self));

  if (frame_clock == NULL || !gtk_widget_get_mapped (GTK_WIDGET (self)))
    {
      show_content (self);
      return;
    }

  self->content_clock = g_object_ref (frame_clock);
  self->content_frame_id = g_signal_connect_swapped (frame_clock, "after-paint",
                                                     G_CALLBACK (on_frame_ended), self);
  gdk_frame_clock_request_phase (frame_clock, GDK_FRAME_CLOCK_PHASE_AFTER_PAINT);
}

static gboolean
content_later_cb (gpointer user_data)
{
  KagedMessageRow *self = user_data;

  self->content_source = 0;
  show_after_frame (self);

  return G_SOURCE_REMOVE;
}

static gboolean
is_streaming (KagedMessageRow *self)
{
  return self->message != NULL &&
         kaged_message_get_status (self->message) == KAGED_MESSAGE_STATUS_STREAMING;
}

static gboolean
spinner_pause_cb (gpointer user_data)
{
  KagedMessageRow *self = user_data;

  self->spinner_source = 0;
  gtk_spinner_set_spinning (self->status_spinner, is_streaming (self) && is_agent (self));

  return G_SOURCE_REMOVE;
}

/* Words arrived: the spinner rests until they stop coming. */
static void
rest_spinner (KagedMessageRow *self)
{
  g_clear_handle_id (&self->spinner_source, g_source_remove);
  self->spinner_source = g_timeout_add (SPINNER_PAUSE_MS, spinner_pause_cb, self);
  gtk_spinner_set_spinning (self->status_spinner, FALSE);
}

/*
 * While a reply streams on screen, its text changes at most once a frame
 * and at most every kaged_message_row_get_streaming_interval(), however many
 * deltas came since: the Markdown is parsed, laid out and painted once for
 * all of them. It is parsed, and its new blocks built, right after a frame
 * ends; the next frame lays them out and paints them.
 * Assistive technologies hear of it a few times a second; once the reply
 * ends, at once.
 */
static void
on_content_changed (KagedMessageRow *self)
{
  if (is_streaming (self))
    {
      rest_spinner (self);

      /* The first words: from "Connecting…" or a Tier 1 wait to "Writing…". */
      if (self->awaiting_words)
        update_status (self);

      if (!gtk_widget_get_mapped (GTK_WIDGET (self)) || !is_agent (self))
        {
          show_content (self);
        }
      else if (!content_pending (self))
        {
          gint64 wait = self->content_shown_at + self->streaming_interval - g_get_monotonic_time ();

          if (wait > 0)
            self->content_source = g_timeout_add ((guint)(wait / G_TIME_SPAN_MILLISECOND) + 1,
                                                  content_later_cb, self);
          else
            show_after_frame (self);
        }

      if (self->description_source == 0)
        self->description_source = g_timeout_add (DESCRIPTION_INTERVAL_MS,
                                                  update_description_later_cb, self);
      return;
    }

  show_content (self);
  /* What a failure says depends on whether part of the reply came. */
  if (kaged_message_get_status (self->message) == KAGED_MESSAGE_STATUS_FAILED)
    update_state (self);
  update_description (self);
}

/* A reply that stops streaming shows its last words at once. */
static void
on_status_changed (KagedMessageRow *self)
{
  if (content_pending (self) && !is_streaming (self))
    show_content (self);
  update_description (self);
}

/* --- versions ---------------------------------------------------------------------- */

static guint
find_version (KagedMessageRow *self,
              guint           *n_versions)
{
  guint n = self->versions != NULL ? g_list_model_get_n_items (self->versions) : 0;
  gint64 id = self->message != NULL ? kaged_message_get_id (self->message) : 0;

  *n_versions = n;

  for (guint i = 0; i < n; i++)
    {
      g_autoptr(KagedMessage) version = g_list_model_get_item (self->versions, i);

      if (version == self->message || (id != 0 && kaged_message_get_id (version) == id))
        return i;
    }

  return G_MAXUINT;
}

static void
update_pager (KagedMessageRow *self)
{
  guint n_versions = 0;
  guint position = find_version (self, &n_versions);
  gboolean shown = n_versions > 1 && position != G_MAXUINT;

  gtk_widget_set_visible (GTK_WIDGET (self->pager_box), shown);

  if (shown)
    {
      /* Translators: the version of a reply or of an edited message shown,
       * and how many there are, as in 2/3 */
      g_autofree char *label = g_strdup_printf (_("%u/%u"), position + 1, n_versions);

      gtk_label_set_label (self->pager_label, label);
    }

  gtk_widget_action_set_enabled (GTK_WIDGET (self), "row.previous-version", shown && position > 0);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "row.next-version",
                                 shown && position + 1 < n_versions);
}

static void
show_version (KagedMessageRow *self,
              int              delta)
{
  g_autoptr(KagedMessage) version = NULL;
  guint n_versions = 0;
  guint position = find_version (self, &n_versions);
  gint64 id;

  if (position == G_MAXUINT || (delta < 0 && position == 0) ||
      (delta > 0 && position + 1 >= n_versions))
    return;

  version = g_list_model_get_item (self->versions, position + delta);
  kaged_message_row_set_message (self, version);

  id = kaged_message_get_id (version);
  gtk_widget_activate_action (GTK_WIDGET (self), "message.show-version", "x", id);
}

/**
 * kaged_message_row_show_latest_version:
 *
 * When the pager shows an earlier version of the reply, shows its latest
 * one again: the one the conversation goes on from.
 */
void
kaged_message_row_show_latest_version (KagedMessageRow *self)
{
  guint n_versions = 0;
  guint position;

  g_return_if_fail (KAGED_IS_MESSAGE_ROW (self));

  position = find_version (self, &n_versions);
  if (position != G_MAXUINT && position + 1 < n_versions)
    show_version (self, (int)(n_versions - 1 - position));
}

static void
previous_version_action (GtkWidget  *widget,
                         const char *action_name,
                         GVariant   *parameter)
{
  show_version (KAGED_MESSAGE_ROW (widget), -1);
}

static void
next_version_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *parameter)
{
  show_version (KAGED_MESSAGE_ROW (widget), 1);
}

/* --- copy ------------------------------------------------------------------------- */

static gboolean
hide_copied (gpointer user_data)
{
  KagedMessageRow *self = user_data;

  self->copied_source = 0;
  gtk_button_set_icon_name (self->copy_button, "edit-copy-symbolic");

  return G_SOURCE_REMOVE;
}

static void
copy_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  KagedMessageRow *self = KAGED_MESSAGE_ROW (widget);
  const char *content;

  if (self->message == NULL)
    return;

  content = kaged_message_get_content (self->message);
  gdk_clipboard_set_text (gtk_widget_get_clipboard (widget), content != NULL ? content : "");

  gtk_button_set_icon_name (self->copy_button, "object-select-symbolic");
  g_clear_handle_id (&self->copied_source, g_source_remove);
  self->copied_source = g_timeout_add_seconds (COPIED_FEEDBACK_SECONDS, hide_copied, self);
}

static void
show_details_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *parameter)
{
  KagedMessageRow *self = KAGED_MESSAGE_ROW (widget);
  graphene_rect_t bounds;

  /* Made when first asked for: most rows never show it, and a list
   * builds many rows. */
  if (self->details_popover == NULL)
    {
      self->details_popover = g_object_new (KAGED_TYPE_MESSAGE_DETAILS, NULL);
      gtk_widget_set_parent (GTK_WIDGET (self->details_popover), widget);
    }

  kaged_message_details_fill (KAGED_MESSAGE_DETAILS (self->details_popover), self->message,
                              self->run, self->provider_name, self->model_name);
  kaged_message_details_set_retry_pending (KAGED_MESSAGE_DETAILS (self->details_popover),
                                           self->retry_pending);

  if (gtk_widget_compute_bounds (GTK_WIDGET (self->details_button), widget, &bounds))
    {
      GdkRectangle rect = {
        .x = bounds.origin.x,
        .y = bounds.origin.y,
        .width = bounds.size.width,
        .height = bounds.size.height,
      };

      gtk_popover_set_pointing_to (self->details_popover, &rect);
    }

  gtk_popover_popup (self->details_popover);
}

/* --- the widget -------------------------------------------------------------------- */

/*
 * The operator's bubble: as wide as its text up to the row's width, at the
 * row's end. GTK would place a label aligned to the end itself by asking
 * how wide it must be at its height, which it answers by laying the whole
 * text out again at widths it narrows down, for every row at every
 * allocation; this asks only for its widths and its height at a width.
 */
static GtkSizeRequestMode
bubble_request_mode (GtkWidget *widget)
{
  return GTK_SIZE_REQUEST_HEIGHT_FOR_WIDTH;
}

static int
bubble_width (GtkWidget *child,
              int        available)
{
  int minimum = 0;
  int natural = 0;

  gtk_widget_measure (child, GTK_ORIENTATION_HORIZONTAL, -1, &minimum, &natural, NULL, NULL);

  return available < 0 ? natural : MAX (MIN (natural, available), MIN (minimum, available));
}

static void
bubble_measure (GtkWidget      *widget,
                GtkOrientation  orientation,
                int             for_size,
                int            *minimum,
                int            *natural,
                int            *minimum_baseline,
                int            *natural_baseline)
{
  GtkWidget *child = gtk_widget_get_first_child (widget);

  *minimum = *natural = 0;
  if (child == NULL || !gtk_widget_should_layout (child))
    return;

  /* Never wider than its text's natural width: at most that tall. */
  if (orientation == GTK_ORIENTATION_HORIZONTAL)
    gtk_widget_measure (child, orientation, -1, minimum, natural, NULL, NULL);
  else
    gtk_widget_measure (child, orientation, bubble_width (child, for_size),
                        minimum, natural, NULL, NULL);
}

static void
bubble_allocate (GtkWidget *widget,
                 int        width,
                 int        height,
                 int        baseline)
{
  GtkWidget *child = gtk_widget_get_first_child (widget);
  int child_width;

  if (child == NULL || !gtk_widget_should_layout (child))
    return;

  child_width = bubble_width (child, width);
  gtk_widget_size_allocate (child,
                            &(GtkAllocation) {
                              gtk_widget_get_direction (widget) == GTK_TEXT_DIR_RTL ? 0 : width - child_width,
                              0, child_width, height
                            }, -1);
}

static void
kaged_message_row_size_allocate (GtkWidget *widget,
                                 int        width,
                                 int        height,
                                 int        baseline)
{
  KagedMessageRow *self = KAGED_MESSAGE_ROW (widget);

  GTK_WIDGET_CLASS (kaged_message_row_parent_class)->size_allocate (widget, width, height, baseline);

  if (self->details_popover != NULL)
    gtk_popover_present (self->details_popover);
}

/* Tab goes from control to control: the message's text is read from the
 * row, and a click still selects it. */
static gboolean
kaged_message_row_focus (GtkWidget        *widget,
                         GtkDirectionType  direction)
{
  if (direction != GTK_DIR_TAB_FORWARD && direction != GTK_DIR_TAB_BACKWARD)
    return GTK_WIDGET_CLASS (kaged_message_row_parent_class)->focus (widget, direction);

  return kaged_markdown_view_focus_past_text (widget, direction);
}

/* What a reply that did not reach the server says to do depends on the
 * server's address and kind, which Preferences can change while it shows. */
static void
server_profile_changed_cb (KagedMessageRow *self)
{
  g_autofree char *hint = kaged_retry_describe_unreachable (self->server_profile);

  if (g_strcmp0 (self->unreachable_hint, hint) == 0)
    return;

  g_free (self->unreachable_hint);
  self->unreachable_hint = g_steal_pointer (&hint);
  update_state (self);
}

static void
kaged_message_row_dispose (GObject *object)
{
  GtkWidget *child;
  KagedMessageRow *self = (KagedMessageRow *)object;

  g_clear_handle_id (&self->copied_source, g_source_remove);
  g_clear_handle_id (&self->description_source, g_source_remove);
  forget_pending_content (self);
  g_clear_handle_id (&self->spinner_source, g_source_remove);
  g_clear_handle_id (&self->wait_source, g_source_remove);
  watch_quota_time (self, FALSE);
  forget_update_clock (self);

  if (self->message_bindings != NULL)
    g_binding_group_set_source (self->message_bindings, NULL);
  if (self->message_signals != NULL)
    g_signal_group_set_target (self->message_signals, NULL);
  if (self->versions_signals != NULL)
    g_signal_group_set_target (self->versions_signals, NULL);
  if (self->run_signals != NULL)
    g_signal_group_set_target (self->run_signals, NULL);
  if (self->server_profile_signals != NULL)
    g_signal_group_set_target (self->server_profile_signals, NULL);
  g_clear_object (&self->run_signals);
  g_clear_object (&self->server_profile_signals);
  g_clear_object (&self->message_bindings);
  g_clear_object (&self->message_signals);
  g_clear_object (&self->versions_signals);

  if (self->details_popover != NULL)
    gtk_widget_unparent (GTK_WIDGET (self->details_popover));
  self->details_popover = NULL;
  gtk_widget_dispose_template (GTK_WIDGET (self), KAGED_TYPE_MESSAGE_ROW);
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))) != NULL)
    gtk_widget_unparent (child);

  g_clear_object (&self->message);
  g_clear_object (&self->versions);
  g_clear_object (&self->run);
  g_clear_object (&self->server_profile);

  G_OBJECT_CLASS (kaged_message_row_parent_class)->dispose (object);
}

static void
kaged_message_row_finalize (GObject *object)
{
  KagedMessageRow *self = (KagedMessageRow *)object;

  g_clear_pointer (&self->provider_name, g_free);
  g_clear_pointer (&self->unreachable_hint, g_free);
  g_clear_pointer (&self->profile_id, g_free);
  g_clear_pointer (&self->model_name, g_free);

  G_OBJECT_CLASS (kaged_message_row_parent_class)->finalize (object);
}

static void
kaged_message_row_get_property (GObject    *object,
                                guint       prop_id,
                                GValue     *value,
                                GParamSpec *pspec)
{
  KagedMessageRow *self = KAGED_MESSAGE_ROW (object);

  switch (prop_id)
    {
    case PROP_MESSAGE:
      g_value_set_object (value, self->message);
      break;

    case PROP_VERSIONS:
      g_value_set_object (value, self->versions);
      break;

    case PROP_RUN:
      g_value_set_object (value, self->run);
      break;

    case PROP_PROVIDER_NAME:
      g_value_set_string (value, self->provider_name);
      break;

    case PROP_PROFILE_ID:
      g_value_set_string (value, self->profile_id);
      break;

    case PROP_MODEL_NAME:
      g_value_set_string (value, self->model_name);
      break;

    case PROP_QUEUED:
      g_value_set_boolean (value, self->queued);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_message_row_set_property (GObject      *object,
                                guint         prop_id,
                                const GValue *value,
                                GParamSpec   *pspec)
{
  KagedMessageRow *self = KAGED_MESSAGE_ROW (object);

  switch (prop_id)
    {
    case PROP_MESSAGE:
      kaged_message_row_set_message (self, g_value_get_object (value));
      break;

    case PROP_VERSIONS:
      kaged_message_row_set_versions (self, g_value_get_object (value));
      break;

    case PROP_RUN:
      kaged_message_row_set_run (self, g_value_get_object (value));
      break;

    case PROP_PROVIDER_NAME:
      kaged_message_row_set_provider_name (self, g_value_get_string (value));
      break;

    case PROP_PROFILE_ID:
      kaged_message_row_set_profile_id (self, g_value_get_string (value));
      break;

    case PROP_MODEL_NAME:
      kaged_message_row_set_model_name (self, g_value_get_string (value));
      break;

    case PROP_QUEUED:
      kaged_message_row_set_queued (self, g_value_get_boolean (value));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_message_row_unmap (GtkWidget *widget)
{
  KagedMessageRow *self = KAGED_MESSAGE_ROW (widget);

  /* No frame comes to an unmapped row: what waited for one shows now, and
   * the next frame of this window no longer measures its cost. */
  if (content_pending (self))
    show_content (self);
  forget_update_clock (self);

  GTK_WIDGET_CLASS (kaged_message_row_parent_class)->unmap (widget);
}

static void
kaged_message_row_class_init (KagedMessageRowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_message_row_dispose;
  object_class->finalize = kaged_message_row_finalize;
  object_class->get_property = kaged_message_row_get_property;
  object_class->set_property = kaged_message_row_set_property;

  widget_class->size_allocate = kaged_message_row_size_allocate;
  widget_class->focus = kaged_message_row_focus;
  widget_class->unmap = kaged_message_row_unmap;

  /**
   * KagedMessageRow:message:
   *
   * The message shown.
   */
  properties [PROP_MESSAGE] =
    g_param_spec_object ("message", NULL, NULL,
                         KAGED_TYPE_MESSAGE,
                         (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessageRow:versions:
   *
   * The versions of the reply, or the texts of the operator message,
   * oldest first, the message among them; with more than one the row
   * shows a pager.
   */
  properties [PROP_VERSIONS] =
    g_param_spec_object ("versions", NULL, NULL,
                         G_TYPE_LIST_MODEL,
                         (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessageRow:run:
   *
   * The run that wrote the reply, for its details.
   */
  properties [PROP_RUN] =
    g_param_spec_object ("run", NULL, NULL,
                         KAGED_TYPE_RUN,
                         (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessageRow:provider-name:
   *
   * The provider that wrote the reply, for its details.
   */
  properties [PROP_PROVIDER_NAME] =
    g_param_spec_string ("provider-name", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessageRow:profile-id:
   *
   * The id of the profile the reply went through; *Open Preferences* shows
   * its page.
   */
  properties [PROP_PROFILE_ID] =
    g_param_spec_string ("profile-id", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessageRow:model-name:
   *
   * The model that wrote the reply, for its details.
   */
  properties [PROP_MODEL_NAME] =
    g_param_spec_string ("model-name", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedMessageRow:queued:
   *
   * Whether the message waits for the reply before it to finish.
   */
  properties [PROP_QUEUED] =
    g_param_spec_boolean ("queued", NULL, NULL,
                          FALSE,
                          (G_PARAM_READWRITE |
                           G_PARAM_EXPLICIT_NOTIFY |
                           G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);

  g_type_ensure (KAGED_TYPE_LATER_MESSAGES);
  g_type_ensure (KAGED_TYPE_MARKDOWN_VIEW);
  g_type_ensure (KAGED_TYPE_MESSAGE_DETAILS);

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/io/github/kaged/Kaged/kaged-message-row.ui");
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, header_box);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, author_label);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, status_spinner);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, status_label);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, wait_label);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, bubble);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, operator_label);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, markdown_view);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, error_box);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, error_label);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, error_detail_label);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, hint_label);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, preferences_button);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, actions_box);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, later_messages);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, pager_box);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, previous_button);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, pager_label);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, next_button);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, regenerate_button);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, copy_button);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, edit_button);
  gtk_widget_class_bind_template_child (widget_class, KagedMessageRow, details_button);

  gtk_widget_class_install_action (widget_class, "row.copy", NULL, copy_action);
  gtk_widget_class_install_action (widget_class, "row.previous-version", NULL, previous_version_action);
  gtk_widget_class_install_action (widget_class, "row.next-version", NULL, next_version_action);
  gtk_widget_class_install_action (widget_class, "row.show-details", NULL, show_details_action);

  gtk_widget_class_set_css_name (widget_class, "messagerow");
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_GROUP);
}

static void
kaged_message_row_init (KagedMessageRow *self)
{
  self->streaming_interval = STREAMING_INTERVAL_MIN_US;
  gtk_widget_init_template (GTK_WIDGET (self));
  self->operator_width_chars = gtk_label_get_width_chars (self->operator_label);
  gtk_widget_set_layout_manager (GTK_WIDGET (self->bubble),
                                 gtk_custom_layout_new (bubble_request_mode, bubble_measure,
                                                        bubble_allocate));

  self->message_bindings = g_binding_group_new ();
  g_binding_group_bind (self->message_bindings, "queued", self, "queued",
                        G_BINDING_SYNC_CREATE);

  self->message_signals = g_signal_group_new (KAGED_TYPE_MESSAGE);
  g_signal_group_connect_swapped (self->message_signals, "notify::content",
                                  G_CALLBACK (on_content_changed), self);
  g_signal_group_connect_swapped (self->message_signals, "notify::status",
                                  G_CALLBACK (on_status_changed), self);
  g_signal_group_connect_swapped (self->message_signals, "notify::role",
                                  G_CALLBACK (show_content), self);
  g_signal_group_connect_swapped (self->message_signals, "notify::role",
                                  G_CALLBACK (update_state), self);
  g_signal_group_connect_swapped (self->message_signals, "notify::status",
                                  G_CALLBACK (update_state), self);
  g_signal_group_connect_swapped (self->message_signals, "notify::error-message",
                                  G_CALLBACK (update_state), self);
  g_signal_group_connect_swapped (self->message_signals, "notify::retry-class",
                                  G_CALLBACK (update_state), self);
  g_signal_group_connect_swapped (self->message_signals, "notify::retry-after-until",
                                  G_CALLBACK (update_state), self);
  g_signal_group_connect_swapped (self->message_signals, "notify::id",
                                  G_CALLBACK (update_state), self);
  g_signal_group_connect_swapped (self->message_signals, "notify::superseded-by-run",
                                  G_CALLBACK (update_state), self);

  self->server_profile_signals = g_signal_group_new (KAGED_TYPE_PROFILE);
  g_signal_group_connect_swapped (self->server_profile_signals, "notify",
                                  G_CALLBACK (server_profile_changed_cb), self);

  self->versions_signals = g_signal_group_new (G_TYPE_LIST_MODEL);
  g_signal_group_connect_swapped (self->versions_signals, "items-changed",
                                  G_CALLBACK (update_pager), self);

  /* Tier 1's waits before the first words */
  self->run_signals = g_signal_group_new (KAGED_TYPE_RUN);
  g_signal_group_connect_swapped (self->run_signals, "notify::next-attempt-at",
                                  G_CALLBACK (update_state), self);
  g_signal_group_connect_swapped (self->run_signals, "notify::attempts",
                                  G_CALLBACK (update_state), self);

  update_state (self);
  update_description (self);
}

GtkWidget *
kaged_message_row_new (void)
{
  return g_object_new (KAGED_TYPE_MESSAGE_ROW, NULL);
}

/**
 * kaged_message_row_get_message:
 *
 * Returns: (transfer none) (nullable): the message shown
 */
KagedMessage *
kaged_message_row_get_message (KagedMessageRow *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE_ROW (self), NULL);

  return self->message;
}

void
kaged_message_row_set_message (KagedMessageRow *self,
                               KagedMessage    *message)
{
  g_return_if_fail (KAGED_IS_MESSAGE_ROW (self));
  g_return_if_fail (message == NULL || KAGED_IS_MESSAGE (message));

  if (!g_set_object (&self->message, message))
    return;

  if (message == NULL)
    kaged_message_row_set_queued (self, FALSE);

  g_binding_group_set_source (self->message_bindings, message);
  g_signal_group_set_target (self->message_signals, message);
  /* They followed the message shown before. */
  kaged_later_messages_set_messages (self->later_messages, NULL, 0);
  g_clear_handle_id (&self->spinner_source, g_source_remove);
  forget_update_clock (self);
  self->streaming_interval = STREAMING_INTERVAL_MIN_US;
  show_content (self);

  if (self->details_popover != NULL)
    gtk_popover_popdown (self->details_popover);
  update_state (self);
  update_description (self);

  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_MESSAGE]);
}

/**
 * kaged_message_row_set_later_messages:
 * @messages: (nullable) (element-type KagedMessage): what followed the
 *   version shown while it was current, in conversation order: all of
 *   it, or its first %KAGED_LATER_MESSAGES_MAX_SHOWN messages
 * @n_messages: how many followed in all
 *
 * Under an earlier version of a reply, offers to read the turns that left
 * the conversation with it. Showing another message forgets them.
 */
void
kaged_message_row_set_later_messages (KagedMessageRow *self,
                                      GPtrArray       *messages,
                                      guint            n_messages)
{
  g_return_if_fail (KAGED_IS_MESSAGE_ROW (self));

  kaged_later_messages_set_messages (self->later_messages, messages, n_messages);
}

/**
 * kaged_message_row_get_versions:
 *
 * Returns: (transfer none) (nullable): the versions of the reply
 */
GListModel *
kaged_message_row_get_versions (KagedMessageRow *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE_ROW (self), NULL);

  return self->versions;
}

/**
 * kaged_message_row_set_versions:
 * @versions: (nullable): a list of #KagedMessage, oldest first
 *
 * Gives the row the versions of its reply. With more than one, the row
 * shows which one it shows (`2/3`) and *Previous Version* and *Next
 * Version* to read the others.
 */
void
kaged_message_row_set_versions (KagedMessageRow *self,
                                GListModel      *versions)
{
  g_return_if_fail (KAGED_IS_MESSAGE_ROW (self));
  g_return_if_fail (versions == NULL || G_IS_LIST_MODEL (versions));

  if (!g_set_object (&self->versions, versions))
    return;

  g_signal_group_set_target (self->versions_signals, versions);
  update_pager (self);

  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_VERSIONS]);
}

/**
 * kaged_message_row_get_run:
 *
 * Returns: (transfer none) (nullable): the run that wrote the reply
 */
KagedRun *
kaged_message_row_get_run (KagedMessageRow *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE_ROW (self), NULL);

  return self->run;
}

void
kaged_message_row_set_run (KagedMessageRow *self,
                           KagedRun        *run)
{
  g_return_if_fail (KAGED_IS_MESSAGE_ROW (self));
  g_return_if_fail (run == NULL || KAGED_IS_RUN (run));

  if (!g_set_object (&self->run, run))
    return;

  g_signal_group_set_target (self->run_signals, run);
  update_state (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_RUN]);
}

const char *
kaged_message_row_get_provider_name (KagedMessageRow *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE_ROW (self), NULL);

  return self->provider_name;
}

void
kaged_message_row_set_provider_name (KagedMessageRow *self,
                                     const char      *provider_name)
{
  g_return_if_fail (KAGED_IS_MESSAGE_ROW (self));

  if (g_strcmp0 (self->provider_name, provider_name) == 0)
    return;

  g_free (self->provider_name);
  self->provider_name = g_strdup (provider_name);
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_PROVIDER_NAME]);
}

const char *
kaged_message_row_get_profile_id (KagedMessageRow *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE_ROW (self), NULL);

  return self->profile_id;
}

/**
 * kaged_message_row_set_profile_id:
 * @self: a #KagedMessageRow
 * @profile_id: (nullable): the id of the profile the reply went through
 *
 * Sets the profile whose page *Open Preferences* shows. %NULL or an empty
 * id (a profile given on the command line) opens the general preferences.
 */
void
kaged_message_row_set_profile_id (KagedMessageRow *self,
                                  const char      *profile_id)
{
  g_return_if_fail (KAGED_IS_MESSAGE_ROW (self));

  if (g_strcmp0 (self->profile_id, profile_id) == 0)
    return;

  g_free (self->profile_id);
  self->profile_id = g_strdup (profile_id);

  /* The button never carries a target its action does not take. */
  gtk_actionable_set_action_name (GTK_ACTIONABLE (self->preferences_button), NULL);
  if (profile_id != NULL && profile_id[0] != '\0')
    {
      gtk_actionable_set_action_target_value (GTK_ACTIONABLE (self->preferences_button),
                                              g_variant_new_string (profile_id));
      gtk_actionable_set_action_name (GTK_ACTIONABLE (self->preferences_button),
                                      "app.preferences-profile");
    }
  else
    {
      gtk_actionable_set_action_target_value (GTK_ACTIONABLE (self->preferences_button), NULL);
      gtk_actionable_set_action_name (GTK_ACTIONABLE (self->preferences_button), "app.preferences");
    }

  update_state (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_PROFILE_ID]);
}

/**
 * kaged_message_row_set_server_profile:
 * @profile: (nullable): the profile whose server the reply goes through
 *
 * Sets the profile a reply that failed without reaching its server speaks
 * of ("Is Ollama running? …", "Check that the server at … is running"),
 * following its changes.
 */
void
kaged_message_row_set_server_profile (KagedMessageRow *self,
                                      KagedProfile    *profile)
{
  g_return_if_fail (KAGED_IS_MESSAGE_ROW (self));
  g_return_if_fail (profile == NULL || KAGED_IS_PROFILE (profile));

  if (g_set_object (&self->server_profile, profile))
    g_signal_group_set_target (self->server_profile_signals, profile);

  server_profile_changed_cb (self);
}

const char *
kaged_message_row_get_model_name (KagedMessageRow *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE_ROW (self), NULL);

  return self->model_name;
}

void
kaged_message_row_set_model_name (KagedMessageRow *self,
                                  const char      *model_name)
{
  g_return_if_fail (KAGED_IS_MESSAGE_ROW (self));

  if (g_strcmp0 (self->model_name, model_name) == 0)
    return;

  g_free (self->model_name);
  self->model_name = g_strdup (model_name);
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_MODEL_NAME]);
}

gboolean
kaged_message_row_get_queued (KagedMessageRow *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE_ROW (self), FALSE);

  return self->queued;
}

gboolean
kaged_message_row_get_retry_pending (KagedMessageRow *self)
{
  g_return_val_if_fail (KAGED_IS_MESSAGE_ROW (self), FALSE);

  return self->retry_pending;
}

/**
 * kaged_message_row_set_retry_pending:
 *
 * Marks a failed reply as one a Tier 2 retry waits to write again: it says
 * it waits, in the colours of the retry banner, rather than that it
 * failed.
 */
void
kaged_message_row_set_retry_pending (KagedMessageRow *self,
                                     gboolean         retry_pending)
{
  g_return_if_fail (KAGED_IS_MESSAGE_ROW (self));

  retry_pending = !!retry_pending;
  if (self->retry_pending == retry_pending)
    return;

  self->retry_pending = retry_pending;
  if (self->details_popover != NULL)
    kaged_message_details_set_retry_pending (KAGED_MESSAGE_DETAILS (self->details_popover),
                                             retry_pending);
  update_state (self);
}

/**
 * kaged_message_row_set_queued:
 *
 * Marks the message as waiting for the reply before it: the row says
 * "Queued". The row follows #KagedMessage:queued of its message.
 */
void
kaged_message_row_set_queued (KagedMessageRow *self,
                              gboolean         queued)
{
  g_return_if_fail (KAGED_IS_MESSAGE_ROW (self));

  queued = !!queued;
  if (self->queued == queued)
    return;

  self->queued = queued;
  update_state (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_QUEUED]);
}
