/* kaged-options.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-core.h"
#include "kaged-profile.h"

G_BEGIN_DECLS

/*
 * KagedOptions: the command line of `kaged`, one parser for the window and
 * `--headless`. The provider options give a provider for this run only;
 * nothing of them is saved.
 */
typedef struct
{
  char     *data_dir;
  char     *provider_kind;
  char     *provider_url;
  char     *model;
  char     *api_key_env;
  gboolean  headless;
  gboolean  auto_retry;
  int       api_port;        /* -1: not given */
  char     *api_bind;
  char     *api_token_file;
  int       provider_timeout; /* seconds, 0: the default */
} KagedOptions;

void          kaged_options_add_entries        (GApplication        *application);
gboolean      kaged_options_read               (KagedOptions        *self,
                                                GVariantDict        *dict,
                                                GError             **error);
void          kaged_options_clear              (KagedOptions        *self);
gboolean      kaged_options_has_provider       (const KagedOptions  *self);
KagedProfile *kaged_options_build_profile      (const KagedOptions  *self,
                                                KagedProfile        *base,
                                                GError             **error);
KagedCoreFlags kaged_options_get_core_flags   (const KagedOptions  *self,
                                                gboolean             auto_retry);
char         *kaged_options_dup_db_path        (const KagedOptions  *self);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (KagedOptions, kaged_options_clear)

G_END_DECLS
