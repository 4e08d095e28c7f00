/* kaged-export.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-export"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "kaged-export.h"
#include "kaged-markdown.h"
#include "kaged-message.h"
#include "kaged-message-row.h"

/* A note under a reply that did not complete, or %NULL. */
static char *
describe_outcome (KagedMessage *message)
{
  switch (kaged_message_get_status (message))
    {
    case KAGED_MESSAGE_STATUS_FAILED:
      {
        g_autofree char *reason = kaged_message_row_describe_failure (message, TRUE);

        /* Translators: %s says why, such as "The provider is overloaded" */
        return g_strdup_printf (_("The reply failed: %s."), reason);
      }
    case KAGED_MESSAGE_STATUS_CANCELLED:
      return g_strdup (_("The reply was stopped."));
    case KAGED_MESSAGE_STATUS_INTERRUPTED:
      return g_strdup (_("The reply was interrupted when Kaged closed."));
    case KAGED_MESSAGE_STATUS_STREAMING:
      return g_strdup (_("The reply was still being written."));
    case KAGED_MESSAGE_STATUS_NONE:
    case KAGED_MESSAGE_STATUS_COMPLETE:
    default:
      return NULL;
    }
}

static void
append_content (GString    *out,
                const char *content)
{
  g_autofree char *closing = NULL;
  g_autofree char *demoted = NULL;
  gsize len;

  if (content == NULL)
    content = "";

  /* Its headings stand under the turn's. */
  demoted = kaged_markdown_demote_headings (content, 2);
  content = demoted;

  len = strlen (content);
  while (len > 0 && (content[len - 1] == '\n' || content[len - 1] == '\r'))
    len--;

  g_string_append_len (out, content, len);
  g_string_append_c (out, '\n');

  /* A reply cut inside a code block would swallow the turns after it. */
  closing = kaged_markdown_close_fence (content);
  if (closing != NULL)
    g_string_append_printf (out, "%s\n", closing);
}

/**
 * kaged_export_to_markdown:
 * @messages: a list of #KagedMessage in conversation order
 * @title: (nullable): the conversation's title
 *
 * Writes a conversation as Markdown: each turn under a "You" or
 * "Assistant" heading with its text as it was written (its own ATX
 * headings two levels down, below the turn's; setext ones stay as they
 * are), and a note under a reply that did not complete. Superseded versions and summaries Kaged
 * wrote for itself are left out.
 *
 * Returns: (transfer full): the Markdown
 */
char *
kaged_export_to_markdown (GListModel *messages,
                          const char *title)
{
  g_autoptr(GString) out = g_string_new (NULL);
  guint n;

  g_return_val_if_fail (G_IS_LIST_MODEL (messages), NULL);

  if (title != NULL && title[0] != '\0')
    {
      g_autofree char *one_line = g_strdelimit (g_strdup (title), "\r\n", ' ');

      g_string_append_printf (out, "# %s\n", one_line);
    }

  n = g_list_model_get_n_items (messages);
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(KagedMessage) message = g_list_model_get_item (messages, i);
      g_autofree char *outcome = NULL;
      const char *heading;

      if (!KAGED_IS_MESSAGE (message) || kaged_message_is_superseded (message))
        continue;

      switch (kaged_message_get_role (message))
        {
        case KAGED_MESSAGE_ROLE_OPERATOR:
          heading = _("You");
          break;
        case KAGED_MESSAGE_ROLE_AGENT:
          heading = _("Assistant");
          break;
        case KAGED_MESSAGE_ROLE_SUMMARY:
        default:
          continue;
        }

      if (out->len > 0)
        g_string_append_c (out, '\n');
      g_string_append_printf (out, "## %s\n\n", heading);
      append_content (out, kaged_message_get_content (message));

      outcome = describe_outcome (message);
      if (outcome != NULL)
        g_string_append_printf (out, "\n*%s*\n", outcome);
    }

  return g_string_free (g_steal_pointer (&out), FALSE);
}

static void
write_cb (GObject      *object,
          GAsyncResult *result,
          gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  g_autoptr(GError) error = NULL;

  if (!g_file_replace_contents_finish (G_FILE (object), result, NULL, &error))
    g_task_return_error (task, g_steal_pointer (&error));
  else
    g_task_return_boolean (task, TRUE);
}

/**
 * kaged_export_write_async:
 *
 * Writes the Markdown of kaged_export_to_markdown() to @file, replacing
 * what was there.
 */
void
kaged_export_write_async (GListModel          *messages,
                          const char          *title,
                          GFile               *file,
                          GCancellable        *cancellable,
                          GAsyncReadyCallback  callback,
                          gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  g_autoptr(GBytes) bytes = NULL;
  char *markdown;

  g_return_if_fail (G_IS_LIST_MODEL (messages));
  g_return_if_fail (G_IS_FILE (file));
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  task = g_task_new (NULL, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_export_write_async);

  markdown = kaged_export_to_markdown (messages, title);
  bytes = g_bytes_new_take (markdown, strlen (markdown));

  g_file_replace_contents_bytes_async (file, bytes, NULL, FALSE, G_FILE_CREATE_REPLACE_DESTINATION,
                                       cancellable, write_cb, g_steal_pointer (&task));
}

gboolean
kaged_export_write_finish (GAsyncResult  *result,
                           GError       **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_export_write_async, FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}
