/* kaged-store-errors.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-application"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-store.h"
#include "kaged-store-errors.h"

/**
 * kaged_describe_store_error:
 * @error: why the conversation database could not be opened
 * @path: the database
 *
 * Returns: (transfer full): what happened and what to do, in words a
 *   person understands
 */
char *
kaged_describe_store_error (const GError *error,
                            const char   *path)
{
  if (error->domain == KAGED_STORE_ERROR)
    {
      switch ((KagedStoreError) error->code)
        {
        case KAGED_STORE_ERROR_NOT_A_DATABASE:
          return g_strdup_printf (_("The file “%s” is not a Kaged conversation database. "
                                    "It was left untouched. Move it elsewhere, or start Kaged "
                                    "with --data-dir to keep conversations in another folder."),
                                  path);

        case KAGED_STORE_ERROR_TOO_NEW:
          return g_strdup_printf (_("The conversations in “%s” were saved by a newer version "
                                    "of Kaged. Update Kaged to open them. The file was left "
                                    "untouched."),
                                  path);

        case KAGED_STORE_ERROR_LOCKED:
          return g_strdup_printf (_("Another Kaged is using “%s”. Close it and start "
                                    "Kaged again."),
                                  path);

        case KAGED_STORE_ERROR_CORRUPT:
          return g_strdup_printf (_("The file “%s” is damaged. It was left untouched: restore "
                                    "it from a backup, or move it elsewhere to start with an "
                                    "empty history."),
                                  path);

        case KAGED_STORE_ERROR_IO:
          return g_strdup_printf (_("“%s” could not be read or written (%s). Check the free "
                                    "disk space and the permissions of its folder."),
                                  path, error->message);

        case KAGED_STORE_ERROR_NOT_FOUND:
        case KAGED_STORE_ERROR_IMMUTABLE:
        case KAGED_STORE_ERROR_INVALID:
        default:
          break;
        }
    }

  return g_strdup_printf (_("“%s” could not be opened: %s"), path, error->message);
}
