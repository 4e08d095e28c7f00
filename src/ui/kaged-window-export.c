/* kaged-window-export.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-window"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-export.h"
#include "kaged-window-private.h"

/*
 * Export: the conversation shown, as Markdown, to a file the user picks.
 */

typedef struct
{
  KagedWindow *window;
  GFile *file;
} Export;

static void
export_free (Export *export)
{
  g_object_unref (export->window);
  g_object_unref (export->file);
  g_free (export);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Export, export_free)

static void
export_written_cb (GObject      *object,
                   GAsyncResult *result,
                   gpointer      user_data)
{
  g_autoptr(Export) export = user_data;
  g_autoptr(GError) error = NULL;
  g_autofree char *uri = NULL;
  AdwToast *toast;

  if (!kaged_export_write_finish (result, &error))
    {
      if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        kaged_window_toast (export->window, error->message);
      return;
    }

  /* What was written can be read at once. */
  uri = g_file_get_uri (export->file);
  toast = adw_toast_new (_("Conversation exported"));
  adw_toast_set_timeout (toast, 5);
  adw_toast_set_button_label (toast, _("_Open"));
  adw_toast_set_action_name (toast, "win.open-export");
  adw_toast_set_action_target_value (toast, g_variant_new_string (uri));
  adw_toast_overlay_add_toast (export->window->toast_overlay, toast);
}

#if GTK_CHECK_VERSION (4, 10, 0)
# define HAVE_FILE_LAUNCHER (GDK_VERSION_MAX_ALLOWED >= GDK_VERSION_4_10)
#else
# define HAVE_FILE_LAUNCHER 0
#endif

/* Opens an exported file in the application that reads Markdown. */
static void
open_export_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *parameter)
{
  const char *uri = g_variant_get_string (parameter, NULL);

#if HAVE_FILE_LAUNCHER
  g_autoptr(GFile) file = g_file_new_for_uri (uri);
  g_autoptr(GtkFileLauncher) launcher = gtk_file_launcher_new (file);

  gtk_file_launcher_launch (launcher, GTK_WINDOW (widget), NULL, NULL, NULL);
#else
  gtk_show_uri (GTK_WINDOW (widget), uri, GDK_CURRENT_TIME);
#endif
}

/**
 * kaged_window_export_to_file:
 * @file: where to write the Markdown
 *
 * Writes the conversation shown to @file, in the background; a toast says
 * how it went, and offers to open the file.
 */
void
kaged_window_export_to_file (KagedWindow *self,
                             GFile       *file)
{
  KagedSession *session = NULL;
  const char *title = NULL;
  Export *export;

  g_return_if_fail (KAGED_IS_WINDOW (self));
  g_return_if_fail (G_IS_FILE (file));

  if (self->conversation == NULL)
    return;

  if (self->session_list != NULL)
    session = kaged_session_list_lookup (self->session_list, self->session_id);
  if (session != NULL)
    title = kaged_session_get_title (session);

  export = g_new0 (Export, 1);
  export->window = g_object_ref (self);
  export->file = g_object_ref (file);
  kaged_export_write_async (self->conversation,
                            title != NULL && title[0] != '\0' ? title : _("Conversation"),
                            file, NULL, export_written_cb, export);
}

static char *
suggested_name (KagedWindow *self)
{
  KagedSession *session = NULL;
  const char *title = NULL;
  g_autofree char *name = NULL;

  if (self->session_list != NULL)
    session = kaged_session_list_lookup (self->session_list, self->session_id);
  if (session != NULL)
    title = kaged_session_get_title (session);

  name = g_strdup (title != NULL && title[0] != '\0' ? title : _("Conversation"));
  g_strdelimit (name, "/\\:", '-');

  return g_strconcat (name, ".md", NULL);
}

#if GTK_CHECK_VERSION (4, 10, 0)
static void
file_chosen_cb (GObject      *object,
                GAsyncResult *result,
                gpointer      user_data)
{
  g_autoptr(KagedWindow) self = user_data;
  g_autoptr(GFile) file = gtk_file_dialog_save_finish (GTK_FILE_DIALOG (object), result, NULL);

  if (file != NULL)
    kaged_window_export_to_file (self, file);
}
#else
static void
file_chosen_cb (GtkNativeDialog *dialog,
                int              response,
                KagedWindow     *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));

      if (file != NULL)
        kaged_window_export_to_file (self, file);
    }

  gtk_native_dialog_destroy (dialog);
  g_object_unref (dialog);
}
#endif

/* Where an export is offered to go first: the Documents folder, or home,
 * not wherever Kaged was started from. */
static GFile *
export_folder (void)
{
  const char *documents = g_get_user_special_dir (G_USER_DIRECTORY_DOCUMENTS);

  if (documents != NULL && g_file_test (documents, G_FILE_TEST_IS_DIR))
    return g_file_new_for_path (documents);

  return g_file_new_for_path (g_get_home_dir ());
}

static void
export_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *parameter)
{
  KagedWindow *self = KAGED_WINDOW (widget);
  g_autofree char *name = NULL;
  g_autoptr(GFile) folder = NULL;

  if (self->conversation == NULL || g_list_model_get_n_items (self->conversation) == 0)
    {
      kaged_window_toast (self, _("There is nothing to export yet"));
      return;
    }

  name = suggested_name (self);
  folder = export_folder ();

#if GTK_CHECK_VERSION (4, 10, 0)
  {
    g_autoptr(GtkFileDialog) dialog = gtk_file_dialog_new ();

    gtk_file_dialog_set_title (dialog, _("Export Conversation"));
    gtk_file_dialog_set_initial_folder (dialog, folder);
    gtk_file_dialog_set_initial_name (dialog, name);
    gtk_file_dialog_save (dialog, GTK_WINDOW (self), NULL, file_chosen_cb, g_object_ref (self));
  }
#else
  {
    GtkFileChooserNative *chooser;

    chooser = gtk_file_chooser_native_new (_("Export Conversation"), GTK_WINDOW (self),
                                           GTK_FILE_CHOOSER_ACTION_SAVE, _("_Export"),
                                           _("_Cancel"));
    gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (chooser), TRUE);
    gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (chooser), folder, NULL);
    gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (chooser), name);
    g_signal_connect_object (chooser, "response", G_CALLBACK (file_chosen_cb), self, 0);
    gtk_native_dialog_show (GTK_NATIVE_DIALOG (chooser));
  }
#endif
}

void
kaged_window_class_init_export (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.export", NULL, export_action);
  gtk_widget_class_install_action (widget_class, "win.open-export", "s", open_export_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_e, GDK_CONTROL_MASK,
                                       "win.export", NULL);
}
