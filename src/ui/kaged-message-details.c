/* kaged-message-details.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-message-details"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "kaged-fit-bin.h"
#include "kaged-message-details.h"
#include "kaged-retry-text.h"

/* How often the duration of a run still going is brought up to date. */
#define TICK_SECONDS 1

/**
 * KagedMessageDetails:
 *
 * The popover of a reply's *Message Details*: the provider and model, the
 * run, its state, how long it took, the tokens it used, and its attempt
 * log — for every attempt its time, the answer or error, and the wait that
 * followed with where the wait came from.
 *
 * It follows the reply and its run while it is open: a reply still
 * streaming or retrying shows its state, its running time and each attempt
 * as it happens, and its tokens once the provider counted them.
 */
struct _KagedMessageDetails
{
  GtkPopover parent_instance;

  KagedMessage *message;
  KagedRun *run;
  char *provider_name;
  char *model_name;
  guint retry_pending : 1;

  GSignalGroup *message_signals;
  GSignalGroup *run_signals;
  guint refresh_source;
  guint tick_source;

  GtkGrid *grid;
  GtkLabel *provider_label;
  GtkLabel *model_label;
  GtkLabel *run_label;
  GtkLabel *status_label;
  GtkLabel *duration_label;
  GtkLabel *tokens_label;
  GPtrArray *attempt_widgets;   /* GtkWidget, two per attempt */
  guint n_fixed_rows;
};

G_DEFINE_FINAL_TYPE (KagedMessageDetails, kaged_message_details, GTK_TYPE_POPOVER)

static void refresh (KagedMessageDetails *self);

static GtkLabel *
add_detail (KagedMessageDetails *self,
            int                  row,
            const char          *name,
            const char          *value,
            GPtrArray           *widgets)
{
  GtkWidget *name_label = gtk_label_new (name);
  GtkWidget *value_label = gtk_label_new (value);

  gtk_label_set_xalign (GTK_LABEL (name_label), 1.0);
  gtk_widget_set_valign (name_label, GTK_ALIGN_START);
  gtk_widget_add_css_class (name_label, "dim-label");

  gtk_label_set_xalign (GTK_LABEL (value_label), 0.0);
  gtk_label_set_wrap (GTK_LABEL (value_label), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (value_label), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_max_width_chars (GTK_LABEL (value_label), 40);
  gtk_label_set_selectable (GTK_LABEL (value_label), TRUE);
  gtk_accessible_update_relation (GTK_ACCESSIBLE (value_label),
                                  GTK_ACCESSIBLE_RELATION_LABELLED_BY, name_label, NULL,
                                  -1);

  gtk_grid_attach (self->grid, name_label, 0, row, 1, 1);
  gtk_grid_attach (self->grid, value_label, 1, row, 1, 1);

  if (widgets != NULL)
    {
      g_ptr_array_add (widgets, name_label);
      g_ptr_array_add (widgets, value_label);
    }

  return GTK_LABEL (value_label);
}

static void
set_row_visible (GtkLabel *value_label,
                 gboolean  visible)
{
  GtkWidget *parent = gtk_widget_get_parent (GTK_WIDGET (value_label));
  int column, row, width, height;
  GtkWidget *name_label;

  gtk_widget_set_visible (GTK_WIDGET (value_label), visible);

  gtk_grid_query_child (GTK_GRID (parent), GTK_WIDGET (value_label), &column, &row, &width, &height);
  name_label = gtk_grid_get_child_at (GTK_GRID (parent), 0, row);
  if (name_label != NULL)
    gtk_widget_set_visible (name_label, visible);
}

/**
 * kaged_message_details_describe_attempt:
 * @attempt: an attempt of a run's log
 *
 * Returns: (transfer full): the attempt in words: its answer or what went
 *   wrong, and the wait after it and where it came from
 */
char *
kaged_message_details_describe_attempt (const KagedAttempt *attempt)
{
  g_autoptr(GString) text = g_string_new (NULL);
  g_autofree char *status = NULL;

  g_return_val_if_fail (attempt != NULL, NULL);

  if (attempt->http_status > 0)
    status = g_strdup_printf (_("HTTP %u"), attempt->http_status);

  if (attempt->error == NULL)
    g_string_append (text, status != NULL ? status : _("Answered"));
  else if (status == NULL ||
           /* The answer began, then failed: the status says nothing of it. */
           (attempt->http_status >= 200 && attempt->http_status < 300) ||
           strstr (attempt->error, status) != NULL)
    g_string_append (text, attempt->error);
  else
    /* Translators: an HTTP status code and what went wrong */
    g_string_append_printf (text, _("HTTP %u: %s"), attempt->http_status, attempt->error);

  if (attempt->wait_ms > 0)
    {
      const char *source = kaged_retry_describe_wait_source (attempt->wait_source);

      g_string_append (text, "\n");
      /* Translators: a wait in seconds and where it came from, e.g. "Waited 2.0 s,
       * set by the provider’s Retry-After header" */
      g_string_append_printf (text, _("Waited %.1f s, set by %s"), attempt->wait_ms / 1000.0, source);
    }

  return g_string_free (g_steal_pointer (&text), FALSE);
}

static char *
format_time (gint64 epoch_ms)
{
  g_autoptr(GDateTime) time = g_date_time_new_from_unix_local (epoch_ms / 1000);

  return g_date_time_format (time, "%X");
}

static gboolean
run_is_going (KagedRun *run)
{
  return run != NULL && kaged_run_get_started_at (run) > 0 && !kaged_run_is_finished (run);
}

/**
 * kaged_message_details_describe_status:
 * @message: (nullable): the reply
 * @run: (nullable): the run that writes or wrote it
 *
 * Returns: (transfer full): in words, where the reply stands: waiting for
 *   its turn, connecting, waiting to try again, being written, complete,
 *   failed, stopped or interrupted
 */
char *
kaged_message_details_describe_status (KagedMessage *message,
                                       KagedRun     *run)
{
  KagedMessageStatus message_status = message != NULL ? kaged_message_get_status (message)
                                                      : KAGED_MESSAGE_STATUS_NONE;

  if (message_status == KAGED_MESSAGE_STATUS_INTERRUPTED)
    return g_strdup (_("Interrupted when Kaged closed"));

  if (run == NULL)
    {
      switch (message_status)
        {
        case KAGED_MESSAGE_STATUS_STREAMING:
          return g_strdup (_("Writing the reply"));
        case KAGED_MESSAGE_STATUS_FAILED:
          return g_strdup (_("Failed"));
        case KAGED_MESSAGE_STATUS_CANCELLED:
          return g_strdup (_("Stopped"));
        case KAGED_MESSAGE_STATUS_COMPLETE:
        case KAGED_MESSAGE_STATUS_NONE:
        case KAGED_MESSAGE_STATUS_INTERRUPTED:
        default:
          return g_strdup (_("Complete"));
        }
    }

  switch (kaged_run_get_status (run))
    {
    case KAGED_RUN_STATUS_QUEUED:
      return g_strdup (_("Waiting for its turn"));

    case KAGED_RUN_STATUS_RUNNING:
      {
        GPtrArray *attempts = kaged_run_get_attempts (run);
        const char *content = message != NULL ? kaged_message_get_content (message) : NULL;
        const KagedAttempt *last = NULL;

        if (content != NULL && content[0] != '\0')
          return g_strdup (_("Writing the reply"));

        if (attempts != NULL && attempts->len > 0)
          last = g_ptr_array_index (attempts, attempts->len - 1);

        if (last != NULL && last->wait_ms > 0)
          /* Translators: %u is the number of the attempt coming, as in "attempt 2" */
          return g_strdup_printf (_("Waiting to try again (attempt %u)"), attempts->len + 1);

        if (last != NULL && last->error == NULL)
          return g_strdup (_("Writing the reply"));

        return g_strdup (_("Connecting to the provider"));
      }

    case KAGED_RUN_STATUS_SUCCEEDED:
      return g_strdup (_("Complete"));

    case KAGED_RUN_STATUS_FAILED:
      return g_strdup (_("Failed"));

    case KAGED_RUN_STATUS_CANCELLED:
      return g_strdup (_("Stopped"));

    default:
      return g_strdup (_("Complete"));
    }
}

static char *
describe_duration (KagedRun *run)
{
  gint64 started = kaged_run_get_started_at (run);
  gint64 finished = kaged_run_get_finished_at (run);

  if (started > 0 && finished >= started)
    return g_strdup_printf (_("%.1f s"), (finished - started) / 1000.0);

  if (started > 0 && !kaged_run_is_finished (run))
    {
      gint64 elapsed = MAX (0, g_get_real_time () / 1000 - started);

      /* Translators: how long a reply has been running, in seconds */
      return g_strdup_printf (_("%" G_GINT64_FORMAT " s so far"), elapsed / 1000);
    }

  if (kaged_run_is_finished (run))
    return g_strdup (_("Did not start"));

  return g_strdup (_("Not started"));
}

/**
 * kaged_message_details_describe_tokens:
 * @run: a run
 *
 * Returns: (transfer full): the tokens @run sent and received, in words
 */
char *
kaged_message_details_describe_tokens (KagedRun *run)
{
  gint64 input;
  gint64 output;

  g_return_val_if_fail (KAGED_IS_RUN (run), NULL);

  input = kaged_run_get_input_tokens (run);
  output = kaged_run_get_output_tokens (run);

  if (!kaged_run_is_finished (run) && input == 0 && output == 0)
    return g_strdup (_("Counted when the reply ends"));

  /* A failed or stopped reply, or a provider that does not count them */
  if (input == 0 && output == 0)
    return g_strdup (_("Not reported"));

  /* Translators: tokens sent to and received from the model */
  return g_strdup_printf (_("%" G_GINT64_FORMAT " in, %" G_GINT64_FORMAT " out"), input, output);
}

static void
refresh_attempts (KagedMessageDetails *self)
{
  GPtrArray *attempts = self->run != NULL ? kaged_run_get_attempts (self->run) : NULL;
  int row = self->n_fixed_rows;

  for (guint i = 0; i < self->attempt_widgets->len; i++)
    gtk_grid_remove (self->grid, g_ptr_array_index (self->attempt_widgets, i));
  g_ptr_array_set_size (self->attempt_widgets, 0);

  for (guint i = 0; attempts != NULL && i < attempts->len; i++)
    {
      const KagedAttempt *attempt = g_ptr_array_index (attempts, i);
      g_autofree char *time = format_time (attempt->time);
      g_autofree char *name = g_strdup_printf (_("Attempt %u, %s"), i + 1, time);
      g_autofree char *value = kaged_message_details_describe_attempt (attempt);

      add_detail (self, row++, name, value, self->attempt_widgets);
    }
}

static void
set_label (GtkLabel   *label,
           const char *text)
{
  if (g_strcmp0 (gtk_label_get_label (label), text) != 0)
    gtk_label_set_label (label, text);
}

static gboolean
tick_cb (gpointer user_data)
{
  KagedMessageDetails *self = user_data;

  if (!run_is_going (self->run))
    {
      self->tick_source = 0;
      refresh (self);
      return G_SOURCE_REMOVE;
    }

  refresh (self);
  return G_SOURCE_CONTINUE;
}

/* Keeps the running time current while the popover shows a run going. */
static void
update_tick (KagedMessageDetails *self)
{
  gboolean wanted = run_is_going (self->run) && gtk_widget_get_mapped (GTK_WIDGET (self));

  if (wanted && self->tick_source == 0)
    self->tick_source = g_timeout_add_seconds (TICK_SECONDS, tick_cb, self);
  else if (!wanted)
    g_clear_handle_id (&self->tick_source, g_source_remove);
}

static void
refresh (KagedMessageDetails *self)
{
  gboolean has_run = self->run != NULL;
  gint64 run_id = 0;

  set_label (self->provider_label, self->provider_name != NULL ? self->provider_name : _("Unknown"));
  set_label (self->model_label, self->model_name != NULL ? self->model_name : _("Unknown"));

  if (self->run != NULL)
    run_id = kaged_run_get_id (self->run);
  else if (self->message != NULL)
    run_id = kaged_message_get_run_id (self->message);

  set_row_visible (self->run_label, run_id > 0);
  if (run_id > 0)
    {
      g_autofree char *id = g_strdup_printf ("%" G_GINT64_FORMAT, run_id);

      set_label (self->run_label, id);
    }

  set_row_visible (self->status_label, has_run);
  set_row_visible (self->duration_label, has_run);
  set_row_visible (self->tokens_label, has_run);

  if (has_run)
    {
      g_autofree char *status = NULL;
      g_autofree char *duration = describe_duration (self->run);
      g_autofree char *tokens = kaged_message_details_describe_tokens (self->run);

      /* As the reply's header says: what comes next. */
      if (self->retry_pending && kaged_run_get_status (self->run) == KAGED_RUN_STATUS_FAILED)
        status = g_strdup (_("Failed, waiting to retry"));
      else
        status = kaged_message_details_describe_status (self->message, self->run);

      set_label (self->status_label, status);
      set_label (self->duration_label, duration);
      set_label (self->tokens_label, tokens);
    }

  update_tick (self);
}

static gboolean
refresh_later_cb (gpointer user_data)
{
  KagedMessageDetails *self = user_data;

  self->refresh_source = 0;
  refresh (self);

  return G_SOURCE_REMOVE;
}

/* Changes come in bursts (a run ending sets several properties): one
 * refresh for all of them. */
static void
queue_refresh (KagedMessageDetails *self)
{
  if (self->refresh_source == 0)
    self->refresh_source = g_idle_add (refresh_later_cb, self);
}

static void
attempts_changed_cb (KagedMessageDetails *self)
{
  refresh_attempts (self);
  queue_refresh (self);
}

static void
content_changed_cb (KagedMessageDetails *self)
{
  /* Only the first text of a reply changes what the popover says. */
  if (self->run != NULL && kaged_run_get_status (self->run) == KAGED_RUN_STATUS_RUNNING &&
      g_strcmp0 (gtk_label_get_label (self->status_label), _("Writing the reply")) != 0)
    queue_refresh (self);
}

static void
kaged_message_details_map (GtkWidget *widget)
{
  KagedMessageDetails *self = KAGED_MESSAGE_DETAILS (widget);

  GTK_WIDGET_CLASS (kaged_message_details_parent_class)->map (widget);

  refresh (self);
}

static void
kaged_message_details_unmap (GtkWidget *widget)
{
  KagedMessageDetails *self = KAGED_MESSAGE_DETAILS (widget);

  g_clear_handle_id (&self->tick_source, g_source_remove);

  GTK_WIDGET_CLASS (kaged_message_details_parent_class)->unmap (widget);
}

static void
kaged_message_details_dispose (GObject *object)
{
  KagedMessageDetails *self = KAGED_MESSAGE_DETAILS (object);

  g_clear_handle_id (&self->refresh_source, g_source_remove);
  g_clear_handle_id (&self->tick_source, g_source_remove);

  if (self->message_signals != NULL)
    g_signal_group_set_target (self->message_signals, NULL);
  if (self->run_signals != NULL)
    g_signal_group_set_target (self->run_signals, NULL);
  g_clear_object (&self->message_signals);
  g_clear_object (&self->run_signals);

  g_clear_object (&self->message);
  g_clear_object (&self->run);

  G_OBJECT_CLASS (kaged_message_details_parent_class)->dispose (object);
}

static void
kaged_message_details_finalize (GObject *object)
{
  KagedMessageDetails *self = KAGED_MESSAGE_DETAILS (object);

  g_clear_pointer (&self->provider_name, g_free);
  g_clear_pointer (&self->model_name, g_free);
  g_clear_pointer (&self->attempt_widgets, g_ptr_array_unref);

  G_OBJECT_CLASS (kaged_message_details_parent_class)->finalize (object);
}

static void
kaged_message_details_class_init (KagedMessageDetailsClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_message_details_dispose;
  object_class->finalize = kaged_message_details_finalize;

  widget_class->map = kaged_message_details_map;
  widget_class->unmap = kaged_message_details_unmap;
}

static void
kaged_message_details_init (KagedMessageDetails *self)
{
  GtkWidget *scroller = gtk_scrolled_window_new ();
  GtkWidget *fit;
  int row = 0;

  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scroller),
                                  GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_propagate_natural_height (GTK_SCROLLED_WINDOW (scroller), TRUE);
  gtk_scrolled_window_set_propagate_natural_width (GTK_SCROLLED_WINDOW (scroller), TRUE);
  gtk_scrolled_window_set_max_content_height (GTK_SCROLLED_WINDOW (scroller), 480);

  self->grid = GTK_GRID (gtk_grid_new ());
  gtk_grid_set_row_spacing (self->grid, 6);
  gtk_grid_set_column_spacing (self->grid, 12);
  gtk_widget_set_margin_top (GTK_WIDGET (self->grid), 6);
  gtk_widget_set_margin_bottom (GTK_WIDGET (self->grid), 6);
  gtk_widget_set_margin_start (GTK_WIDGET (self->grid), 6);
  gtk_widget_set_margin_end (GTK_WIDGET (self->grid), 6);
  gtk_widget_add_css_class (GTK_WIDGET (self->grid), "kaged-message-details");

  self->provider_label = add_detail (self, row++, _("Provider"), "", NULL);
  self->model_label = add_detail (self, row++, _("Model"), "", NULL);
  self->run_label = add_detail (self, row++, _("Run"), "", NULL);
  self->status_label = add_detail (self, row++, _("Status"), "", NULL);
  self->duration_label = add_detail (self, row++, _("Duration"), "", NULL);
  self->tokens_label = add_detail (self, row++, _("Tokens"), "", NULL);
  self->n_fixed_rows = row;
  self->attempt_widgets = g_ptr_array_new ();

  /* As tall as the grid at its width, up to the most above: not as tall
   * as its wrapped labels would be at their narrowest. */
  fit = kaged_fit_bin_new ();
  kaged_fit_bin_set_child (KAGED_FIT_BIN (fit), GTK_WIDGET (self->grid));
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), fit);
  gtk_popover_set_child (GTK_POPOVER (self), scroller);

  self->message_signals = g_signal_group_new (KAGED_TYPE_MESSAGE);
  g_signal_group_connect_swapped (self->message_signals, "notify::status",
                                  G_CALLBACK (queue_refresh), self);
  g_signal_group_connect_swapped (self->message_signals, "notify::run-id",
                                  G_CALLBACK (queue_refresh), self);
  g_signal_group_connect_swapped (self->message_signals, "notify::content",
                                  G_CALLBACK (content_changed_cb), self);

  self->run_signals = g_signal_group_new (KAGED_TYPE_RUN);
  g_signal_group_connect_swapped (self->run_signals, "notify::attempts",
                                  G_CALLBACK (attempts_changed_cb), self);
  g_signal_group_connect_swapped (self->run_signals, "notify::status",
                                  G_CALLBACK (queue_refresh), self);
  g_signal_group_connect_swapped (self->run_signals, "notify::started-at",
                                  G_CALLBACK (queue_refresh), self);
  g_signal_group_connect_swapped (self->run_signals, "notify::finished-at",
                                  G_CALLBACK (queue_refresh), self);
  g_signal_group_connect_swapped (self->run_signals, "notify::input-tokens",
                                  G_CALLBACK (queue_refresh), self);
  g_signal_group_connect_swapped (self->run_signals, "notify::output-tokens",
                                  G_CALLBACK (queue_refresh), self);

  refresh (self);
}

GtkWidget *
kaged_message_details_new (void)
{
  return g_object_new (KAGED_TYPE_MESSAGE_DETAILS, NULL);
}

/**
 * kaged_message_details_fill:
 * @message: (nullable): the reply
 * @run: (nullable): the run that writes or wrote it
 * @provider_name: (nullable): the provider that wrote it
 * @model_name: (nullable): the model that wrote it
 *
 * Shows the details of a reply, replacing what was shown, and follows
 * @message and @run from then on.
 */
void
kaged_message_details_fill (KagedMessageDetails *self,
                            KagedMessage        *message,
                            KagedRun            *run,
                            const char          *provider_name,
                            const char          *model_name)
{
  g_return_if_fail (KAGED_IS_MESSAGE_DETAILS (self));
  g_return_if_fail (message == NULL || KAGED_IS_MESSAGE (message));
  g_return_if_fail (run == NULL || KAGED_IS_RUN (run));

  g_set_object (&self->message, message);
  g_set_object (&self->run, run);
  if (g_strcmp0 (self->provider_name, provider_name) != 0)
    {
      g_free (self->provider_name);
      self->provider_name = g_strdup (provider_name);
    }
  if (g_strcmp0 (self->model_name, model_name) != 0)
    {
      g_free (self->model_name);
      self->model_name = g_strdup (model_name);
    }

  g_signal_group_set_target (self->message_signals, message);
  g_signal_group_set_target (self->run_signals, run);

  g_clear_handle_id (&self->refresh_source, g_source_remove);
  refresh_attempts (self);
  refresh (self);
}

/**
 * kaged_message_details_set_retry_pending:
 * @retry_pending: whether a Tier 2 retry waits to write the reply again
 *
 * A failed reply that a retry waits for says so in its state.
 */
void
kaged_message_details_set_retry_pending (KagedMessageDetails *self,
                                         gboolean             retry_pending)
{
  g_return_if_fail (KAGED_IS_MESSAGE_DETAILS (self));

  retry_pending = !!retry_pending;
  if (self->retry_pending == retry_pending)
    return;

  self->retry_pending = retry_pending;
  refresh (self);
}
