/* kaged-store.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-message.h"
#include "kaged-run.h"
#include "kaged-session.h"

G_BEGIN_DECLS

#define KAGED_STORE_ERROR (kaged_store_error_quark ())

/**
 * KagedStoreError:
 * @KAGED_STORE_ERROR_NOT_A_DATABASE: the file is not a Kaged database
 * @KAGED_STORE_ERROR_TOO_NEW: the database was written by a newer Kaged
 * @KAGED_STORE_ERROR_LOCKED: another process holds the database
 * @KAGED_STORE_ERROR_CORRUPT: the database is damaged
 * @KAGED_STORE_ERROR_IO: reading or writing failed (disk full, permissions)
 * @KAGED_STORE_ERROR_NOT_FOUND: no such session, message or run
 * @KAGED_STORE_ERROR_IMMUTABLE: operator messages cannot be changed
 * @KAGED_STORE_ERROR_INVALID: the request does not fit the data
 */
typedef enum
{
  KAGED_STORE_ERROR_NOT_A_DATABASE,
  KAGED_STORE_ERROR_TOO_NEW,
  KAGED_STORE_ERROR_LOCKED,
  KAGED_STORE_ERROR_CORRUPT,
  KAGED_STORE_ERROR_IO,
  KAGED_STORE_ERROR_NOT_FOUND,
  KAGED_STORE_ERROR_IMMUTABLE,
  KAGED_STORE_ERROR_INVALID,
} KagedStoreError;

#define KAGED_TYPE_STORE (kaged_store_get_type ())

G_DECLARE_FINAL_TYPE (KagedStore, kaged_store, KAGED, STORE, GObject)

GQuark      kaged_store_error_quark      (void);
char       *kaged_store_default_path     (const char  *data_dir);
KagedStore *kaged_store_open             (const char  *path,
                                          GError     **error);

G_END_DECLS
