/* test-export.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <glib/gstdio.h>
#include <string.h>

#include "kaged-export.h"
#include "kaged-message.h"
#include "kaged-retry-text.h"

static KagedMessage *
add_message (GListStore         *store,
             KagedMessageRole    role,
             const char         *content,
             KagedMessageStatus  status)
{
  g_autoptr(KagedMessage) message = kaged_message_new ();

  kaged_message_set_id (message, g_list_model_get_n_items (G_LIST_MODEL (store)) + 1);
  kaged_message_set_role (message, role);
  kaged_message_set_content (message, content);
  kaged_message_set_status (message, status);
  g_list_store_append (store, message);

  return message;
}

static GListStore *
new_conversation (void)
{
  GListStore *store = g_list_store_new (KAGED_TYPE_MESSAGE);
  KagedMessage *message;

  add_message (store, KAGED_MESSAGE_ROLE_OPERATOR, "How do I list files?\n", KAGED_MESSAGE_STATUS_NONE);
  message = add_message (store, KAGED_MESSAGE_ROLE_AGENT, "An older answer.", KAGED_MESSAGE_STATUS_COMPLETE);
  kaged_message_set_superseded_by_run (message, 9);
  add_message (store, KAGED_MESSAGE_ROLE_AGENT,
               "# Listing\n\nUse `ls`:\n\n```sh\nls -l\n\n# ## not a turn\n```\n\n"
               "  ##### Deep #####\n#not-a-heading\n    # indented code\n",
               KAGED_MESSAGE_STATUS_COMPLETE);
  add_message (store, KAGED_MESSAGE_ROLE_SUMMARY, "Internal summary", KAGED_MESSAGE_STATUS_NONE);
  add_message (store, KAGED_MESSAGE_ROLE_OPERATOR, "And <hidden> ones?", KAGED_MESSAGE_STATUS_NONE);
  message = add_message (store, KAGED_MESSAGE_ROLE_AGENT, "Use:\n\n```sh\nls -a", KAGED_MESSAGE_STATUS_FAILED);
  kaged_message_set_retry_class (message, KAGED_RETRY_CLASS_OVERLOADED);
  add_message (store, KAGED_MESSAGE_ROLE_OPERATOR, "Thanks", KAGED_MESSAGE_STATUS_NONE);
  add_message (store, KAGED_MESSAGE_ROLE_AGENT, "You're", KAGED_MESSAGE_STATUS_CANCELLED);

  return store;
}

static const char expected_markdown[] =
  "# Files\n"
  "\n"
  "## You\n"
  "\n"
  "How do I list files?\n"
  "\n"
  "## Assistant\n"
  "\n"
  "### Listing\n"
  "\n"
  "Use `ls`:\n"
  "\n"
  "```sh\n"
  "ls -l\n"
  "\n"
  "# ## not a turn\n"
  "```\n"
  "\n"
  "  ###### Deep #####\n"
  "#not-a-heading\n"
  "    # indented code\n"
  "\n"
  "## You\n"
  "\n"
  "And <hidden> ones?\n"
  "\n"
  "## Assistant\n"
  "\n"
  "Use:\n"
  "\n"
  "```sh\n"
  "ls -a\n"
  "```\n"
  "\n"
  "*The reply failed: The provider is overloaded.*\n"
  "\n"
  "## You\n"
  "\n"
  "Thanks\n"
  "\n"
  "## Assistant\n"
  "\n"
  "You're\n"
  "\n"
  "*The reply was stopped.*\n";

/* A reply's own headings stand under its turn's "Assistant" heading, as
 * an outline of the document reads them. */
static void
test_to_markdown (void)
{
  g_autoptr(GListStore) store = new_conversation ();
  g_autofree char *markdown = kaged_export_to_markdown (G_LIST_MODEL (store), "Files");

  g_assert_cmpstr (markdown, ==, expected_markdown);
}

static void
test_empty (void)
{
  g_autoptr(GListStore) store = g_list_store_new (KAGED_TYPE_MESSAGE);
  g_autofree char *untitled = kaged_export_to_markdown (G_LIST_MODEL (store), NULL);
  g_autofree char *titled = kaged_export_to_markdown (G_LIST_MODEL (store), "Line\nbreak");

  g_assert_cmpstr (untitled, ==, "");
  g_assert_cmpstr (titled, ==, "# Line break\n");
}

static void
write_done (GObject      *object,
            GAsyncResult *result,
            gpointer      user_data)
{
  GAsyncResult **out = user_data;

  *out = g_object_ref (result);
}

static void
test_write (void)
{
  g_autoptr(GListStore) store = new_conversation ();
  g_autoptr(GError) error = NULL;
  g_autoptr(GAsyncResult) result = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *path = NULL;
  g_autofree char *contents = NULL;
  g_autoptr(GFile) file = NULL;

  g_assert_no_error (error);
  path = g_build_filename (dir, "conversation.md", NULL);
  file = g_file_new_for_path (path);

  g_file_set_contents (path, "old contents that are longer than nothing", -1, &error);
  g_assert_no_error (error);

  kaged_export_write_async (G_LIST_MODEL (store), "Files", file, NULL, write_done, &result);
  while (result == NULL)
    g_main_context_iteration (NULL, TRUE);

  g_assert_true (kaged_export_write_finish (result, &error));
  g_assert_no_error (error);

  g_file_get_contents (path, &contents, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (contents, ==, expected_markdown);

  g_unlink (path);
  g_rmdir (dir);
}

/* A time a failure names is written with its date: the file is read
 * later, when "tomorrow" would be wrong. */
static void
test_dated (void)
{
  g_autoptr(GListStore) store = g_list_store_new (KAGED_TYPE_MESSAGE);
  gint64 until_ms = g_get_real_time () / 1000 + 3600 * 1000;
  g_autofree char *markdown = NULL;
  g_autofree char *reason = NULL;
  g_autofree char *note = NULL;
  KagedMessage *message;

  add_message (store, KAGED_MESSAGE_ROLE_OPERATOR, "Hello", KAGED_MESSAGE_STATUS_NONE);
  message = add_message (store, KAGED_MESSAGE_ROLE_AGENT, "", KAGED_MESSAGE_STATUS_FAILED);
  kaged_message_set_retry_class (message, KAGED_RETRY_CLASS_QUOTA_SCHEDULED);
  kaged_message_set_retry_after_until (message, until_ms);

  markdown = kaged_export_to_markdown (G_LIST_MODEL (store), "Quota");
  reason = kaged_retry_describe_quota_until (until_ms, 0, kaged_retry_desktop_uses_12h ());
  note = g_strdup_printf ("*The reply failed: %s.*\n", reason);
  g_assert_true (g_str_has_suffix (markdown, note));
  g_assert_null (strstr (markdown, "tomorrow"));
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/export/to-markdown", test_to_markdown);
  g_test_add_func ("/export/empty", test_empty);
  g_test_add_func ("/export/write", test_write);
  g_test_add_func ("/export/dated", test_dated);

  return g_test_run ();
}
