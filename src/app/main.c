/* main.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <locale.h>

#include <glib/gi18n.h>

#include "kaged-application.h"
#include "kaged-process.h"

int
main (int   argc,
      char *argv[])
{
  g_autoptr(KagedApplication) app = NULL;

  kaged_process_tune_allocator ();

  setlocale (LC_ALL, "");
  bindtextdomain (GETTEXT_PACKAGE, LOCALEDIR);
  bind_textdomain_codeset (GETTEXT_PACKAGE, "UTF-8");
  textdomain (GETTEXT_PACKAGE);

#if DEVELOPMENT_BUILD
  g_set_application_name (_("Kaged (Development)"));
#else
  g_set_application_name (_("Kaged"));
#endif

  app = kaged_application_new ();

  return g_application_run (G_APPLICATION (app), argc, argv);
}
