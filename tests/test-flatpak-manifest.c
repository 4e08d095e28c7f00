/* test-flatpak-manifest.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Checks both Flatpak manifests, the release one and the development one:
 * that they are plain JSON, build the right application on the right
 * runtime with no more permissions than it needs, build what the runtime
 * lacks, and download nothing that is not pinned.
 */

#include "config.h"

#include <string.h>

#include <json-glib/json-glib.h>

/* The runtime branch whose contents were checked against Kaged's
 * dependencies: it ships GLib, GTK 4, libadwaita, GtkSourceView 5,
 * libsoup 3, json-glib, libsecret and SQLite, and no md4c. Moving to
 * another branch means checking that again. */
#define RUNTIME_VERSION "49"

#define MD4C_URL    "https://github.com/mity/md4c/archive/refs/tags/release-0.4.8.tar.gz"
#define MD4C_SHA256 "4a457df853425b6bb6e3457aa1d1a13bccec587a04c38c622b1013a0da41439f"

#define PROJECT_URL "https://github.com/kaged/kaged"

typedef struct
{
  const char *file;
  const char *app_id;
  const char *profile_option;
  gboolean    development;
} ManifestCase;

static const ManifestCase cases[] = {
  { "io.github.kaged.Kaged.json", BASE_APPLICATION_ID, "-Dprofile=default", FALSE },
  { "io.github.kaged.Kaged.Devel.json", BASE_APPLICATION_ID ".Devel", "-Dprofile=development",
    TRUE },
};

static char *
manifest_path (const ManifestCase *mcase)
{
  return g_test_build_filename (G_TEST_DIST, "..", "flatpak", mcase->file, NULL);
}

static JsonObject *
load_manifest (const ManifestCase  *mcase,
               JsonParser         **out_parser)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  g_autofree char *path = manifest_path (mcase);
  JsonNode *root;

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

static gboolean
is_hex (const char *value,
        gsize       length)
{
  if (value == NULL || strlen (value) != length)
    return FALSE;

  for (const char *c = value; *c != '\0'; c++)
    {
      if (!g_ascii_isxdigit (*c))
        return FALSE;
    }

  return TRUE;
}

static const char *
string_member (JsonObject *object,
               const char *name)
{
  JsonNode *node = json_object_get_member (object, name);

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node) ||
      json_node_get_value_type (node) != G_TYPE_STRING)
    return NULL;

  return json_node_get_string (node);
}

/* flatpak-builder reads JSON with comments, other tools (linters, the
 * Flathub checks, Python's json) do not: the manifests are plain JSON. */
static void
test_plain_json (gconstpointer data)
{
  const ManifestCase *mcase = data;
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *path = manifest_path (mcase);
  g_autofree char *contents = NULL;
  gboolean in_string = FALSE;

  g_assert_true (g_file_get_contents (path, &contents, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (g_utf8_validate (contents, -1, NULL));

  for (const char *c = contents; *c != '\0'; c++)
    {
      if (in_string)
        {
          if (*c == '\\' && c[1] != '\0')
            c++;
          else if (*c == '"')
            in_string = FALSE;
        }
      else if (*c == '"')
        {
          in_string = TRUE;
        }
      else if (*c == '/' || *c == '#')
        {
          g_error ("%s: a comment outside a string at byte %td", mcase->file, c - contents);
        }
    }
  g_assert_false (in_string);

  load_manifest (mcase, &parser);
}

static void
test_identity (gconstpointer data)
{
  const ManifestCase *mcase = data;
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *manifest = load_manifest (mcase, &parser);

  g_assert_cmpstr (string_member (manifest, "id"), ==, mcase->app_id);
  g_assert_null (json_object_get_member (manifest, "app-id"));
  g_assert_cmpstr (string_member (manifest, "command"), ==, PACKAGE_NAME);
  g_assert_cmpstr (string_member (manifest, "runtime"), ==, "org.gnome.Platform");
  g_assert_cmpstr (string_member (manifest, "sdk"), ==, "org.gnome.Sdk");
  /* A stable branch, never the moving "master". */
  g_assert_cmpstr (string_member (manifest, "runtime-version"), ==, RUNTIME_VERSION);
}

static void
test_permissions (gconstpointer data)
{
  static const char *needed[] = {
    "--share=network",       /* providers, and the HTTP API on 127.0.0.1 */
    "--share=ipc",           /* X11's shared memory */
    "--socket=wayland",
    "--socket=fallback-x11", /* X11 only where there is no Wayland */
    "--device=dri",          /* GTK's GL renderer */
  };
  /* Notifications go through the Notification portal and API keys through
   * the Secret portal; Kaged reads and writes no file of the user's. */
  static const char *forbidden_prefixes[] = {
    "--talk-name=org.freedesktop.Notifications",
    "--talk-name=org.freedesktop.secrets",
    "--talk-name=org.gnome.keyring",
    "--talk-name=org.freedesktop.portal.",
    "--filesystem=host",
    "--filesystem=home",
    "--filesystem=~",
    "--socket=x11",
    "--socket=session-bus",
    "--socket=system-bus",
    "--device=all",
  };
  const ManifestCase *mcase = data;
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *manifest = load_manifest (mcase, &parser);
  JsonArray *finish_args = json_object_get_array_member (manifest, "finish-args");

  g_assert_nonnull (finish_args);

  for (guint i = 0; i < G_N_ELEMENTS (needed); i++)
    {
      if (!array_has_string (finish_args, needed[i]))
        g_error ("%s: finish-args lack %s", mcase->file, needed[i]);
    }

  for (guint i = 0; i < json_array_get_length (finish_args); i++)
    {
      const char *arg = json_array_get_string_element (finish_args, i);
      gboolean is_needed = FALSE;

      g_assert_nonnull (arg);

      for (guint j = 0; j < G_N_ELEMENTS (forbidden_prefixes); j++)
        {
          if (g_str_has_prefix (arg, forbidden_prefixes[j]))
            g_error ("%s: finish-args grant %s", mcase->file, arg);
        }

      /* No more than needed: anything else must be argued for here. */
      for (guint j = 0; j < G_N_ELEMENTS (needed); j++)
        is_needed |= g_strcmp0 (arg, needed[j]) == 0;
      if (!is_needed)
        g_error ("%s: finish-args grant %s, which Kaged does not need", mcase->file, arg);
    }

  g_assert_cmpuint (json_array_get_length (finish_args), ==, G_N_ELEMENTS (needed));
}

static void
assert_source_pinned (const ManifestCase *mcase,
                      JsonObject         *module,
                      JsonObject         *source,
                      gboolean            is_app_module)
{
  const char *module_name = string_member (module, "name");
  const char *type = string_member (source, "type");
  const char *url = string_member (source, "url");

  g_assert_nonnull (type);

  if (url != NULL && !g_str_has_prefix (url, "https://"))
    g_error ("%s: module %s downloads %s without TLS", mcase->file, module_name, url);

  if (g_strcmp0 (type, "archive") == 0 || g_strcmp0 (type, "file") == 0)
    {
      /* A file from the tree (a "path") is pinned by the tree itself. */
      if (url != NULL || g_strcmp0 (type, "archive") == 0)
        {
          if (!is_hex (string_member (source, "sha256"), 64))
            g_error ("%s: module %s: %s has no sha256", mcase->file, module_name,
                     url != NULL ? url : "an archive");
        }
    }
  else if (g_strcmp0 (type, "git") == 0)
    {
      /* A branch or a tag alone moves; the commit pins it. */
      if (!is_hex (string_member (source, "commit"), 40))
        g_error ("%s: module %s: a git source without a full commit id", mcase->file,
                 module_name);
    }
  else if (g_strcmp0 (type, "dir") == 0)
    {
      /* The one exception: the development manifest builds the checkout it
       * sits in, as it is. That is what a development build is for, the
       * tree is the pin, and nothing is downloaded. A release must name
       * what it builds. */
      if (!mcase->development || !is_app_module)
        g_error ("%s: module %s builds from an unpinned directory", mcase->file, module_name);
      g_assert_cmpstr (string_member (source, "path"), ==, "..");
    }
  else if (g_strcmp0 (type, "patch") != 0 && g_strcmp0 (type, "shell") != 0)
    {
      g_error ("%s: module %s: source type %s cannot be checked", mcase->file, module_name,
               type);
    }
}

static void
check_module_sources (const ManifestCase *mcase,
                      JsonObject         *module,
                      gboolean            is_app_module,
                      guint              *n_sources)
{
  JsonArray *sources = json_object_get_array_member (module, "sources");

  g_assert_nonnull (sources);

  for (guint i = 0; i < json_array_get_length (sources); i++)
    {
      JsonNode *node = json_array_get_element (sources, i);

      /* A source in a file of its own would escape these checks. */
      if (!JSON_NODE_HOLDS_OBJECT (node))
        g_error ("%s: module %s names a source file", mcase->file,
                 string_member (module, "name"));

      assert_source_pinned (mcase, module, json_node_get_object (node), is_app_module);
      (*n_sources)++;
    }

  if (json_object_has_member (module, "modules"))
    {
      JsonArray *nested = json_object_get_array_member (module, "modules");

      for (guint i = 0; i < json_array_get_length (nested); i++)
        check_module_sources (mcase, json_array_get_object_element (nested, i), FALSE,
                              n_sources);
    }
}

static void
test_sources_pinned (gconstpointer data)
{
  const ManifestCase *mcase = data;
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *manifest = load_manifest (mcase, &parser);
  JsonArray *modules = json_object_get_array_member (manifest, "modules");
  guint n_modules;
  guint n_sources = 0;

  g_assert_nonnull (modules);
  n_modules = json_array_get_length (modules);
  g_assert_cmpuint (n_modules, >=, 2);

  for (guint i = 0; i < n_modules; i++)
    {
      JsonNode *node = json_array_get_element (modules, i);

      if (!JSON_NODE_HOLDS_OBJECT (node))
        g_error ("%s: module %u is in a file of its own", mcase->file, i);

      check_module_sources (mcase, json_node_get_object (node), i + 1 == n_modules,
                            &n_sources);
    }

  g_assert_cmpuint (n_sources, >=, n_modules);
}

static void
test_md4c (gconstpointer data)
{
  const ManifestCase *mcase = data;
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *manifest = load_manifest (mcase, &parser);
  JsonArray *modules = json_object_get_array_member (manifest, "modules");
  JsonObject *md4c = NULL;
  JsonArray *sources;
  JsonObject *source;

  for (guint i = 0; i < json_array_get_length (modules); i++)
    {
      JsonObject *module = json_array_get_object_element (modules, i);

      if (g_strcmp0 (string_member (module, "name"), "md4c") == 0)
        {
          g_assert_null (md4c);
          md4c = module;
        }
    }

  /* The GNOME runtime has no md4c, which the reply view renders with. */
  g_assert_nonnull (md4c);
  g_assert_cmpstr (string_member (md4c, "buildsystem"), ==, "cmake-ninja");

  sources = json_object_get_array_member (md4c, "sources");
  g_assert_nonnull (sources);
  g_assert_cmpuint (json_array_get_length (sources), ==, 1);
  source = json_array_get_object_element (sources, 0);
  g_assert_cmpstr (string_member (source, "type"), ==, "archive");
  g_assert_cmpstr (string_member (source, "url"), ==, MD4C_URL);
  g_assert_cmpstr (string_member (source, "sha256"), ==, MD4C_SHA256);
}

static void
test_app_module (gconstpointer data)
{
  const ManifestCase *mcase = data;
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *manifest = load_manifest (mcase, &parser);
  JsonArray *modules = json_object_get_array_member (manifest, "modules");
  JsonObject *app_module;
  JsonArray *config_opts;
  JsonArray *sources;
  JsonObject *source;
  const char *type;

  /* The application is built last, on top of what it links to. */
  app_module = json_array_get_object_element (modules, json_array_get_length (modules) - 1);
  g_assert_cmpstr (string_member (app_module, "name"), ==, PACKAGE_NAME);
  g_assert_cmpstr (string_member (app_module, "buildsystem"), ==, "meson");

  /* The profile gives the application id the manifest exports. */
  config_opts = json_object_get_array_member (app_module, "config-opts");
  g_assert_nonnull (config_opts);
  g_assert_true (array_has_string (config_opts, mcase->profile_option));
  for (guint i = 0; i < json_array_get_length (config_opts); i++)
    {
      const char *opt = json_array_get_string_element (config_opts, i);

      if (g_str_has_prefix (opt, "-Dprofile="))
        g_assert_cmpstr (opt, ==, mcase->profile_option);
    }

  sources = json_object_get_array_member (app_module, "sources");
  g_assert_nonnull (sources);
  g_assert_cmpuint (json_array_get_length (sources), ==, 1);
  source = json_array_get_object_element (sources, 0);
  type = string_member (source, "type");

  if (mcase->development)
    {
      g_assert_cmpstr (type, ==, "dir");
    }
  else
    {
      /* A release builds a named commit or archive of the project. */
      g_assert_true (g_strcmp0 (type, "git") == 0 || g_strcmp0 (type, "archive") == 0);
      g_assert_true (g_str_has_prefix (string_member (source, "url"), PROJECT_URL "/") ||
                     g_strcmp0 (string_member (source, "url"), PROJECT_URL ".git") == 0);
    }
}

/* What the runtime lacks is built the same way in both manifests, so a
 * development build tests the release's libraries. */
static void
test_same_dependencies (void)
{
  g_autoptr(JsonParser) release_parser = NULL;
  g_autoptr(JsonParser) devel_parser = NULL;
  JsonObject *release = load_manifest (&cases[0], &release_parser);
  JsonObject *devel = load_manifest (&cases[1], &devel_parser);
  JsonArray *release_modules = json_object_get_array_member (release, "modules");
  JsonArray *devel_modules = json_object_get_array_member (devel, "modules");
  guint n_modules = json_array_get_length (release_modules);

  g_assert_false (cases[0].development);
  g_assert_true (cases[1].development);

  g_assert_cmpuint (json_array_get_length (devel_modules), ==, n_modules);
  for (guint i = 0; i + 1 < n_modules; i++)
    g_assert_true (json_node_equal (json_array_get_element (release_modules, i),
                                    json_array_get_element (devel_modules, i)));

  g_assert_true (json_node_equal (json_object_get_member (release, "finish-args"),
                                  json_object_get_member (devel, "finish-args")));
  g_assert_true (json_node_equal (json_object_get_member (release, "runtime-version"),
                                  json_object_get_member (devel, "runtime-version")));
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const char *name = cases[i].development ? "devel" : "release";
      struct {
        const char *test;
        GTestDataFunc func;
      } tests[] = {
        { "plain-json", test_plain_json },
        { "identity", test_identity },
        { "permissions", test_permissions },
        { "sources-pinned", test_sources_pinned },
        { "md4c", test_md4c },
        { "app-module", test_app_module },
      };

      for (guint j = 0; j < G_N_ELEMENTS (tests); j++)
        {
          g_autofree char *path = g_strdup_printf ("/flatpak-manifest/%s/%s", name,
                                                   tests[j].test);

          g_test_add_data_func (path, &cases[i], tests[j].func);
        }
    }

  g_test_add_func ("/flatpak-manifest/same-dependencies", test_same_dependencies);

  return g_test_run ();
}
