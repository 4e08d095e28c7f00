/* kaged-test-files.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The folders tests make, removed when they are done.
 */

#include "config.h"

#include <glib/gstdio.h>

#include "kaged-test-files.h"

/* Removes @path and, when it is a folder, all it holds; a symbolic link is
 * removed, never followed. */
void
kaged_test_remove_tree (const char *path)
{
  g_autoptr(GDir) dir = NULL;
  const char *name;

  if (!g_file_test (path, G_FILE_TEST_IS_DIR) || g_file_test (path, G_FILE_TEST_IS_SYMLINK))
    {
      g_unlink (path);
      return;
    }

  dir = g_dir_open (path, 0, NULL);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);

      kaged_test_remove_tree (child);
    }
  g_rmdir (path);
}
