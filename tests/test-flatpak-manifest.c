/* test-flatpak-manifest.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Checks the development Flatpak manifest: that flatpak-builder can read
 * it, that it builds the right application with the right permissions,
 * and that everything it downloads is pinned.
 */

#include "config.h"

#include <string.h>

#include <json-glib/json-glib.h>

static JsonObject *
load_manifest (JsonParser **out_parser)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  JsonNode *root;

  path = g_test_build_filename (G_TEST_DIST, "..", "flatpak", "io.github.kaged.Kaged.Devel.json",
                                NULL);
  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);

  root = json_parser_get_root (parser);
  g_assert_nonnull (root);
  g_assert_true (JSON_NODE_HOLDS_OBJECT (root));

  *out_parser = g_steal_pointer (&parser);

  return json_node_get_object (root);
}

static gboolean
array_has_string (JsonArray  *array,
                  const char *value)
{
  for (guint i = 0; i < json_array_get_length (array); i++)
    {
      JsonNode *node = json_array_get_element (array, i);

      if (JSON_NODE_HOLDS_VALUE (node) &&
          json_node_get_value_type (node) == G_TYPE_STRING &&
          g_strcmp0 (json_node_get_string (node), value) == 0)
        return TRUE;
    }

  return FALSE;
}

static void
test_identity (void)
{
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *manifest = load_manifest (&parser);
  const char *runtime_version;

  g_assert_cmpstr (json_object_get_string_member (manifest, "id"), ==,
                   BASE_APPLICATION_ID ".Devel");
  g_assert_cmpstr (json_object_get_string_member (manifest, "id"), ==,
                   "io.github.kaged.Kaged.Devel");
  g_assert_cmpstr (json_object_get_string_member (manifest, "command"), ==, PACKAGE_NAME);
  g_assert_cmpstr (json_object_get_string_member (manifest, "runtime"), ==, "org.gnome.Platform");
  g_assert_cmpstr (json_object_get_string_member (manifest, "sdk"), ==, "org.gnome.Sdk");

  /* A stable branch ("49"), never the moving "master". */
  runtime_version = json_object_get_string_member (manifest, "runtime-version");
  g_assert_nonnull (runtime_version);
  g_assert_cmpuint (strlen (runtime_version), >, 0);
  for (const char *c = runtime_version; *c != '\0'; c++)
    g_assert_true (g_ascii_isdigit (*c));
}

static void
test_permissions (void)
{
  static const char *required[] = {
    "--share=network",
    "--share=ipc",
    "--socket=wayland",
    "--socket=fallback-x11",
    "--device=dri",
  };
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *manifest = load_manifest (&parser);
  JsonArray *finish_args = json_object_get_array_member (manifest, "finish-args");

  g_assert_nonnull (finish_args);

  for (guint i = 0; i < G_N_ELEMENTS (required); i++)
    {
      if (!array_has_string (finish_args, required[i]))
        g_error ("finish-args lack %s", required[i]);
    }

  /* Keys and notifications go through portals: no direct bus access, and
   * no access to the home folder. */
  for (guint i = 0; i < json_array_get_length (finish_args); i++)
    {
      const char *arg = json_array_get_string_element (finish_args, i);

      g_assert_false (g_str_has_prefix (arg, "--talk-name="));
      g_assert_false (g_str_has_prefix (arg, "--filesystem="));
      g_assert_false (g_str_has_prefix (arg, "--socket=x11"));
    }
}

static void
test_modules (void)
{
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *manifest = load_manifest (&parser);
  JsonArray *modules = json_object_get_array_member (manifest, "modules");
  JsonObject *app_module;
  JsonArray *config_opts;
  JsonArray *sources;
  JsonObject *source;
  guint n_modules;
  gboolean builds_md4c = FALSE;

  g_assert_nonnull (modules);
  n_modules = json_array_get_length (modules);
  g_assert_cmpuint (n_modules, >=, 1);

  /* Every module but the application downloads a pinned archive. */
  for (guint i = 0; i + 1 < n_modules; i++)
    {
      JsonObject *module = json_array_get_object_element (modules, i);
      JsonArray *module_sources = json_object_get_array_member (module, "sources");

      if (g_strcmp0 (json_object_get_string_member (module, "name"), "md4c") == 0)
        builds_md4c = TRUE;

      g_assert_nonnull (module_sources);
      for (guint j = 0; j < json_array_get_length (module_sources); j++)
        {
          JsonObject *module_source = json_array_get_object_element (module_sources, j);
          const char *type = json_object_get_string_member (module_source, "type");
          const char *sha256;

          g_assert_true (g_strcmp0 (type, "archive") == 0 || g_strcmp0 (type, "file") == 0);
          sha256 = json_object_get_string_member_with_default (module_source, "sha256", "");
          g_assert_cmpuint (strlen (sha256), ==, 64);
          for (const char *c = sha256; *c != '\0'; c++)
            g_assert_true (g_ascii_isxdigit (*c));
        }
    }

  /* The GNOME runtime has no md4c, which the reply view renders with. */
  g_assert_true (builds_md4c);

  /* The application is built last, from this checkout, in the
   * development profile. */
  app_module = json_array_get_object_element (modules, n_modules - 1);
  g_assert_cmpstr (json_object_get_string_member (app_module, "name"), ==, PACKAGE_NAME);
  g_assert_cmpstr (json_object_get_string_member (app_module, "buildsystem"), ==, "meson");

  config_opts = json_object_get_array_member (app_module, "config-opts");
  g_assert_nonnull (config_opts);
  g_assert_true (array_has_string (config_opts, "-Dprofile=development"));

  sources = json_object_get_array_member (app_module, "sources");
  g_assert_nonnull (sources);
  g_assert_cmpuint (json_array_get_length (sources), ==, 1);
  source = json_array_get_object_element (sources, 0);
  g_assert_cmpstr (json_object_get_string_member (source, "type"), ==, "dir");
  g_assert_cmpstr (json_object_get_string_member (source, "path"), ==, "..");
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/flatpak-manifest/identity", test_identity);
  g_test_add_func ("/flatpak-manifest/permissions", test_permissions);
  g_test_add_func ("/flatpak-manifest/modules", test_modules);

  return g_test_run ();
}
