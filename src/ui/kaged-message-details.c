/* kaged-message-details.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-message-details"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-message-details.h"
#include "kaged-retry-text.h"

/**
 * KagedMessageDetails:
 *
 * The popover of a reply's *Message Details*: the provider and model, the
 * run, how long it took, the tokens it used, and its attempt log — for
 * every attempt its time, the answer or error, and the wait that followed
 * with where the wait came from.
 */
struct _KagedMessageDetails
{
  GtkPopover parent_instance;

  GtkGrid *grid;
};

G_DEFINE_FINAL_TYPE (KagedMessageDetails, kaged_message_details, GTK_TYPE_POPOVER)

static void
add_detail (KagedMessageDetails *self,
            int                 *row,
            const char          *name,
            const char          *value)
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

  gtk_grid_attach (self->grid, name_label, 0, *row, 1, 1);
  gtk_grid_attach (self->grid, value_label, 1, *row, 1, 1);
  (*row)++;
}

static char *
describe_attempt (const KagedAttempt *attempt)
{
  g_autoptr(GString) text = g_string_new (NULL);

  if (attempt->http_status > 0 && attempt->error == NULL)
    g_string_append_printf (text, _("HTTP %u"), attempt->http_status);
  else if (attempt->http_status > 0)
    /* Translators: an HTTP status code and what went wrong */
    g_string_append_printf (text, _("HTTP %u: %s"), attempt->http_status, attempt->error);
  else if (attempt->error != NULL)
    g_string_append (text, attempt->error);
  else
    g_string_append (text, _("Answered"));

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

static void
kaged_message_details_class_init (KagedMessageDetailsClass *klass)
{
}

static void
kaged_message_details_init (KagedMessageDetails *self)
{
  GtkWidget *scroller = gtk_scrolled_window_new ();

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

  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), GTK_WIDGET (self->grid));
  gtk_popover_set_child (GTK_POPOVER (self), scroller);
}

GtkWidget *
kaged_message_details_new (void)
{
  return g_object_new (KAGED_TYPE_MESSAGE_DETAILS, NULL);
}

/**
 * kaged_message_details_fill:
 * @message: (nullable): the reply
 * @run: (nullable): the run that wrote it
 * @provider_name: (nullable): the provider that wrote it
 * @model_name: (nullable): the model that wrote it
 *
 * Shows the details of a reply, replacing what was shown.
 */
void
kaged_message_details_fill (KagedMessageDetails *self,
                            KagedMessage        *message,
                            KagedRun            *run,
                            const char          *provider_name,
                            const char          *model_name)
{
  GtkWidget *child;
  int row = 0;

  g_return_if_fail (KAGED_IS_MESSAGE_DETAILS (self));

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->grid))) != NULL)
    gtk_grid_remove (self->grid, child);

  add_detail (self, &row, _("Provider"), provider_name != NULL ? provider_name : _("Unknown"));
  add_detail (self, &row, _("Model"), model_name != NULL ? model_name : _("Unknown"));

  if (run == NULL)
    {
      if (message != NULL && kaged_message_get_run_id (message) > 0)
        {
          g_autofree char *id = g_strdup_printf ("%" G_GINT64_FORMAT,
                                                 kaged_message_get_run_id (message));

          add_detail (self, &row, _("Run"), id);
        }
      return;
    }

  {
    g_autofree char *id = g_strdup_printf ("%" G_GINT64_FORMAT, kaged_run_get_id (run));
    g_autofree char *duration = NULL;
    g_autofree char *tokens = NULL;
    gint64 started = kaged_run_get_started_at (run);
    gint64 finished = kaged_run_get_finished_at (run);

    if (started > 0 && finished >= started)
      duration = g_strdup_printf (_("%.1f s"), (finished - started) / 1000.0);
    else if (started > 0)
      duration = g_strdup (_("Still running"));
    else
      duration = g_strdup (_("Not started"));

    /* Translators: tokens sent to and received from the model */
    tokens = g_strdup_printf (_("%" G_GINT64_FORMAT " in, %" G_GINT64_FORMAT " out"),
                              kaged_run_get_input_tokens (run),
                              kaged_run_get_output_tokens (run));

    add_detail (self, &row, _("Run"), id);
    add_detail (self, &row, _("Duration"), duration);
    add_detail (self, &row, _("Tokens"), tokens);
  }

  {
    GPtrArray *attempts = kaged_run_get_attempts (run);

    for (guint i = 0; attempts != NULL && i < attempts->len; i++)
      {
        const KagedAttempt *attempt = g_ptr_array_index (attempts, i);
        g_autofree char *time = format_time (attempt->time);
        g_autofree char *name = g_strdup_printf (_("Attempt %u, %s"), i + 1, time);
        g_autofree char *value = describe_attempt (attempt);

        add_detail (self, &row, name, value);
      }
  }
}
