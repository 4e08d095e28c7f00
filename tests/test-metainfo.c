/* test-metainfo.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Checks what software centres show of Kaged in the built AppStream
 * metadata, beyond what `appstreamcli validate --no-net` can see: that the
 * newest release is this version, that every screenshot exists in the tree
 * and says what it shows, and that the content rating, links, developer
 * and branding are there.
 */

#include "config.h"

#include <stdio.h>
#include <string.h>

#include <gio/gio.h>

#define SCREENSHOT_URL_PREFIX \
  "https://raw.githubusercontent.com/kaged/kaged/main/data/screenshots/"

static const char *metainfo_path;

typedef struct _Element Element;

struct _Element
{
  char       *name;
  GHashTable *attributes;
  GString    *text;
  GPtrArray  *children;
};

static void
element_free (Element *element)
{
  g_free (element->name);
  g_hash_table_unref (element->attributes);
  g_string_free (element->text, TRUE);
  g_ptr_array_unref (element->children);
  g_free (element);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Element, element_free)

static Element *
element_new (const char  *name,
             const char **attribute_names,
             const char **attribute_values)
{
  Element *element = g_new0 (Element, 1);

  element->name = g_strdup (name);
  element->attributes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  element->text = g_string_new (NULL);
  element->children = g_ptr_array_new_with_free_func ((GDestroyNotify)element_free);

  for (guint i = 0; attribute_names[i] != NULL; i++)
    g_hash_table_insert (element->attributes, g_strdup (attribute_names[i]),
                         g_strdup (attribute_values[i]));

  return element;
}

static void
start_element (GMarkupParseContext  *context,
               const char           *name,
               const char          **attribute_names,
               const char          **attribute_values,
               gpointer              user_data,
               GError              **error)
{
  GQueue *stack = user_data;
  Element *element = element_new (name, attribute_names, attribute_values);
  Element *parent = g_queue_peek_head (stack);

  if (parent != NULL)
    g_ptr_array_add (parent->children, element);
  g_queue_push_head (stack, element);
}

static void
end_element (GMarkupParseContext  *context,
             const char           *name,
             gpointer              user_data,
             GError              **error)
{
  GQueue *stack = user_data;

  /* The root stays, to be returned. */
  if (stack->length > 1)
    g_queue_pop_head (stack);
}

static void
text (GMarkupParseContext  *context,
      const char           *text_value,
      gsize                 text_len,
      gpointer              user_data,
      GError              **error)
{
  GQueue *stack = user_data;
  Element *element = g_queue_peek_head (stack);

  if (element != NULL)
    g_string_append_len (element->text, text_value, text_len);
}

static Element *
load_metainfo (void)
{
  static const GMarkupParser parser = { start_element, end_element, text, NULL, NULL };
  g_autoptr(GMarkupParseContext) context = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *contents = NULL;
  const char *path = metainfo_path;
  GQueue stack = G_QUEUE_INIT;
  gsize length = 0;

  g_assert_nonnull (path);
  g_file_get_contents (path, &contents, &length, &error);
  g_assert_no_error (error);

  context = g_markup_parse_context_new (&parser, G_MARKUP_PREFIX_ERROR_POSITION, &stack, NULL);
  g_markup_parse_context_parse (context, contents, length, &error);
  g_assert_no_error (error);
  g_markup_parse_context_end_parse (context, &error);
  g_assert_no_error (error);

  g_assert_cmpuint (stack.length, ==, 1);

  return g_queue_pop_head (&stack);
}

static const char *
attr (Element    *element,
      const char *name)
{
  return g_hash_table_lookup (element->attributes, name);
}

/* The untranslated children called @name. */
static GPtrArray *
children (Element    *element,
          const char *name)
{
  GPtrArray *found = g_ptr_array_new ();

  for (guint i = 0; i < element->children->len; i++)
    {
      Element *child = g_ptr_array_index (element->children, i);

      if (g_strcmp0 (child->name, name) == 0 && attr (child, "xml:lang") == NULL)
        g_ptr_array_add (found, child);
    }

  return found;
}

static Element *
child (Element    *element,
       const char *name)
{
  g_autoptr(GPtrArray) found = children (element, name);

  if (found->len != 1)
    g_error ("<%s> has %u <%s>, expected one", element->name, found->len, name);

  return g_ptr_array_index (found, 0);
}

static char *
stripped_text (Element *element)
{
  return g_strstrip (g_strdup (element->text->str));
}

static void
test_identity (void)
{
  g_autoptr(Element) root = load_metainfo ();
  g_autofree char *id = NULL;
  g_autofree char *launchable = NULL;
  g_autofree char *binary = NULL;
  g_autofree char *developer_name = NULL;
  g_autofree char *desktop_id = g_strconcat (APPLICATION_ID, ".desktop", NULL);
  Element *developer;

  g_assert_cmpstr (root->name, ==, "component");
  g_assert_cmpstr (attr (root, "type"), ==, "desktop-application");

  id = stripped_text (child (root, "id"));
  g_assert_cmpstr (id, ==, APPLICATION_ID);

  launchable = stripped_text (child (root, "launchable"));
  g_assert_cmpstr (attr (child (root, "launchable"), "type"), ==, "desktop-id");
  g_assert_cmpstr (launchable, ==, desktop_id);

  /* Software centres offer to run it by this name, and look for it. */
  binary = stripped_text (child (child (root, "provides"), "binary"));
  g_assert_cmpstr (binary, ==, PACKAGE_NAME);

  developer = child (root, "developer");
  g_assert_nonnull (attr (developer, "id"));
  g_assert_true (g_str_has_prefix (attr (developer, "id"), "io.github.kaged"));
  developer_name = stripped_text (child (developer, "name"));
  g_assert_cmpuint (strlen (developer_name), >, 0);
}

static void
test_releases (void)
{
  g_autoptr(Element) root = load_metainfo ();
  g_autoptr(GPtrArray) releases = children (child (root, "releases"), "release");
  g_autoptr(GDate) previous = NULL;

  g_assert_cmpuint (releases->len, >=, 1);

  /* The newest first, and that is the version being built. */
  g_assert_cmpstr (attr (g_ptr_array_index (releases, 0), "version"), ==, PACKAGE_VERSION);

  for (guint i = 0; i < releases->len; i++)
    {
      Element *release = g_ptr_array_index (releases, i);
      const char *date_text = attr (release, "date");
      g_autoptr(GPtrArray) paragraphs = NULL;
      g_autoptr(GDate) date = g_date_new ();
      unsigned int year, month, day;

      g_assert_nonnull (attr (release, "version"));
      g_assert_nonnull (date_text);
      g_assert_cmpint (sscanf (date_text, "%4u-%2u-%2u", &year, &month, &day), ==, 3);
      g_assert_cmpuint (strlen (date_text), ==, strlen ("YYYY-MM-DD"));
      g_assert_true (g_date_valid_dmy (day, month, year));
      g_date_set_dmy (date, day, month, year);
      if (previous != NULL)
        g_assert_cmpint (g_date_compare (date, previous), <=, 0);
      g_clear_pointer (&previous, g_date_free);
      previous = g_steal_pointer (&date);

      paragraphs = children (child (release, "description"), "p");
      g_assert_cmpuint (paragraphs->len, >=, 1);
      for (guint j = 0; j < paragraphs->len; j++)
        {
          g_autofree char *p = stripped_text (g_ptr_array_index (paragraphs, j));

          g_assert_cmpuint (strlen (p), >, 0);
        }
    }
}

static void
test_content_rating (void)
{
  g_autoptr(Element) root = load_metainfo ();
  Element *rating = child (root, "content_rating");
  g_autoptr(GPtrArray) attributes = children (rating, "content_attribute");
  g_autoptr(GHashTable) values = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);

  g_assert_cmpstr (attr (rating, "type"), ==, "oars-1.1");

  for (guint i = 0; i < attributes->len; i++)
    {
      Element *attribute = g_ptr_array_index (attributes, i);

      g_hash_table_insert (values, (gpointer)attr (attribute, "id"), stripped_text (attribute));
    }

  /* A model's answers are not moderated by Kaged: an uncontrolled
   * conversation. What is written goes to the provider chosen, with the
   * key of the person's account there. */
  g_assert_cmpstr (g_hash_table_lookup (values, "social-chat"), ==, "intense");
  g_assert_cmpstr (g_hash_table_lookup (values, "social-info"), ==, "intense");
}

static void
test_screenshots (void)
{
  g_autoptr(Element) root = load_metainfo ();
  g_autoptr(GPtrArray) screenshots = children (child (root, "screenshots"), "screenshot");
  guint n_default = 0;

  g_assert_cmpuint (screenshots->len, >=, 1);

  for (guint i = 0; i < screenshots->len; i++)
    {
      Element *screenshot = g_ptr_array_index (screenshots, i);
      g_autofree char *url = stripped_text (child (screenshot, "image"));
      g_autofree char *caption = stripped_text (child (screenshot, "caption"));
      g_autofree char *path = NULL;
      g_autofree char *contents = NULL;
      g_autoptr(GError) error = NULL;
      gsize length = 0;

      if (g_strcmp0 (attr (screenshot, "type"), "default") == 0)
        n_default++;

      g_assert_cmpuint (strlen (caption), >, 0);

      /* Published from the tree: the file must be in it, under that name. */
      g_assert_true (g_str_has_prefix (url, SCREENSHOT_URL_PREFIX));
      g_assert_null (strchr (url + strlen (SCREENSHOT_URL_PREFIX), '/'));
      path = g_test_build_filename (G_TEST_DIST, "..", "data", "screenshots",
                                    url + strlen (SCREENSHOT_URL_PREFIX), NULL);
      g_file_get_contents (path, &contents, &length, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (length, >, 8);
      g_assert_cmpmem (contents, 8, "\x89PNG\r\n\x1a\n", 8);
    }

  g_assert_cmpuint (n_default, ==, 1);
}

static void
test_links_and_branding (void)
{
  static const char *url_types[] = { "homepage", "bugtracker", "vcs-browser" };
  g_autoptr(Element) root = load_metainfo ();
  g_autoptr(GPtrArray) urls = children (root, "url");
  g_autoptr(GPtrArray) colors = children (child (root, "branding"), "color");
  gboolean light = FALSE, dark = FALSE;

  for (guint i = 0; i < G_N_ELEMENTS (url_types); i++)
    {
      gboolean found = FALSE;

      for (guint j = 0; j < urls->len; j++)
        {
          Element *url = g_ptr_array_index (urls, j);
          g_autofree char *href = stripped_text (url);

          if (g_strcmp0 (attr (url, "type"), url_types[i]) != 0)
            continue;
          g_assert_true (g_str_has_prefix (href, "https://github.com/kaged/kaged"));
          found = TRUE;
        }
      if (!found)
        g_error ("no <url type=\"%s\">", url_types[i]);
    }

  /* A colour behind the icon in each style. */
  for (guint i = 0; i < colors->len; i++)
    {
      Element *color = g_ptr_array_index (colors, i);
      g_autofree char *value = stripped_text (color);
      const char *scheme = attr (color, "scheme_preference");

      g_assert_cmpstr (attr (color, "type"), ==, "primary");
      g_assert_cmpuint (strlen (value), ==, 7);
      g_assert_true (value[0] == '#');
      for (const char *c = value + 1; *c != '\0'; c++)
        g_assert_true (g_ascii_isxdigit (*c));

      light |= g_strcmp0 (scheme, "light") == 0;
      dark |= g_strcmp0 (scheme, "dark") == 0;
    }
  g_assert_true (light);
  g_assert_true (dark);
}

/* The window fits a phone held upright, and needs no particular input. */
static void
test_device_support (void)
{
  g_autoptr(Element) root = load_metainfo ();
  g_autofree char *length = stripped_text (child (child (root, "requires"), "display_length"));
  g_autoptr(GPtrArray) controls = children (child (root, "supports"), "control");

  g_assert_cmpstr (attr (child (child (root, "requires"), "display_length"), "compare"), ==, "ge");
  g_assert_cmpstr (length, ==, "360");

  g_assert_cmpuint (controls->len, ==, 3);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  /* The metadata as built, with the application id substituted. */
  if (argc != 2)
    {
      g_printerr ("Usage: %s METAINFO-FILE\n", argv[0]);
      return 1;
    }
  metainfo_path = argv[1];

  g_test_add_func ("/metainfo/identity", test_identity);
  g_test_add_func ("/metainfo/releases", test_releases);
  g_test_add_func ("/metainfo/content-rating", test_content_rating);
  g_test_add_func ("/metainfo/screenshots", test_screenshots);
  g_test_add_func ("/metainfo/links-and-branding", test_links_and_branding);
  g_test_add_func ("/metainfo/device-support", test_device_support);

  return g_test_run ();
}
