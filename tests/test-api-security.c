/* test-api-security.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * Who may use the HTTP API: the bearer token, no web pages, loopback only,
 * and the token file.
 */

#include "config.h"

#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#include "kaged-api-fixture.h"
#include "kaged-api-token.h"

/* ------------------------------------------------------------------------
 * Security
 * ------------------------------------------------------------------------ */

static void
test_unauthorized (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  g_autofree char *wrong = NULL;
  g_autofree char *prefix = NULL;
  const char *authorizations[5];

  fixture_start (fixture);
  create_session (fixture, "Secret");
  before = snapshot (fixture);

  /* A token one character off, a prefix of it, another scheme, none. */
  wrong = g_strdup (fixture->token);
  wrong[strlen (wrong) - 1] = wrong[strlen (wrong) - 1] == '0' ? '1' : '0';
  prefix = g_strndup (fixture->token, strlen (fixture->token) / 2);
  {
    g_autofree char *bearer_wrong = g_strdup_printf ("Bearer %s", wrong);
    g_autofree char *bearer_prefix = g_strdup_printf ("Bearer %s", prefix);
    g_autofree char *basic = g_strdup_printf ("Basic %s", fixture->token);

    authorizations[0] = bearer_wrong;
    authorizations[1] = bearer_prefix;
    authorizations[2] = basic;
    authorizations[3] = "Bearer ";
    authorizations[4] = NULL;

    for (guint i = 0; i < G_N_ELEMENTS (authorizations); i++)
      {
        const char *paths[] = { "/api/v1/sessions", "/api/v1/sessions/1/messages" };

        for (guint j = 0; j < G_N_ELEMENTS (paths); j++)
          {
            g_autoptr(SoupMessage) msg = new_message (fixture, "POST", paths[j]);
            static const char text[] = "{\"content\": \"Hi\", \"title\": \"x\"}";
            g_autoptr(GBytes) body = g_bytes_new_static (text, sizeof text - 1);
            g_autoptr(Response) response = NULL;
            SoupMessageHeaders *headers = soup_message_get_request_headers (msg);

            if (authorizations[i] != NULL)
              soup_message_headers_replace (headers, "Authorization", authorizations[i]);
            else
              soup_message_headers_remove (headers, "Authorization");
            soup_message_set_request_body_from_bytes (msg, "application/json", body);

            response = send_message (fixture, msg);
            assert_error (response, SOUP_STATUS_UNAUTHORIZED, "unauthorized");
            g_assert_true (g_str_has_prefix (soup_message_headers_get_one (response->headers,
                                                                           "WWW-Authenticate"),
                                             "Bearer"));
          }
      }
  }

  /* A web page may not use the API, even with the token. */
  {
    g_autoptr(SoupMessage) msg = new_message (fixture, "POST", "/api/v1/sessions");
    g_autoptr(Response) response = NULL;

    soup_message_headers_replace (soup_message_get_request_headers (msg), "Origin",
                                  "http://example.com");
    response = send_message (fixture, msg);
    assert_error (response, SOUP_STATUS_FORBIDDEN, "forbidden_origin");
  }

  /* Nor a name that only resolves to this computer. */
  {
    g_autoptr(SoupMessage) msg = new_message (fixture, "POST", "/api/v1/sessions");
    g_autoptr(Response) response = NULL;

    soup_message_headers_replace (soup_message_get_request_headers (msg), "Host",
                                  "attacker.example:80");
    response = send_message (fixture, msg);
    assert_error (response, SOUP_STATUS_FORBIDDEN, "forbidden_host");
  }

  after = snapshot (fixture);
  g_assert_cmpstr (before, ==, after);
}

static void
test_token_file_created (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autofree char *path = g_build_filename (fixture->config_dir, "kaged", "api-token", NULL);
  g_autofree char *folder = g_path_get_dirname (path);
  g_autofree char *first = NULL;
  g_autofree char *second = NULL;
  GStatBuf st;

  fixture_start_full (fixture, FALSE, NULL);
  g_assert_true (strstr (fixture->process_output->str, "Listening on http://127.0.0.1:") != NULL);

  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0600);
  g_assert_cmpint (g_stat (folder, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0700);

  g_file_get_contents (path, &first, NULL, NULL);
  g_assert_nonnull (first);
  g_strstrip (first);
  g_assert_cmpuint (strlen (first), ==, KAGED_API_TOKEN_LENGTH);
  for (const char *p = first; *p != '\0'; p++)
    g_assert_true (g_ascii_isxdigit (*p));

  /* The token works, and the token is not printed. */
  fixture->token = g_strdup (first);
  create_session (fixture, "With the created token");
  g_assert_null (strstr (fixture->process_output->str, first));

  /* The next start reuses it. */
  fixture_stop (fixture);
  fixture_start_full (fixture, FALSE, NULL);
  g_file_get_contents (path, &second, NULL, NULL);
  g_strstrip (second);
  g_assert_cmpstr (first, ==, second);
  create_session (fixture, "Again");

  /* Two tokens made one after the other differ. */
  {
    g_autofree char *a = kaged_api_token_generate (NULL);
    g_autofree char *b = kaged_api_token_generate (NULL);

    g_assert_cmpstr (a, !=, b);
  }
}

static void
test_token_file_refused (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autofree char *err = NULL;
  g_autofree char *token_arg = g_strdup_printf ("--api-token-file=%s", fixture->token_path);
  g_autofree char *data_arg = g_strdup_printf ("--data-dir=%s", fixture->data_dir);
  const char *args[] = { "--headless", "--api-port=0", data_arg, token_arg, NULL };
  g_autofree char *db_path = g_build_filename (fixture->data_dir, "kaged.db", NULL);
  g_autoptr(GError) error = NULL;

  /* Readable by others: refused. */
  g_file_set_contents (fixture->token_path,
                       "0123456789abcdef0123456789abcdef0123456789abcdef\n", -1, &error);
  g_assert_no_error (error);
  g_chmod (fixture->token_path, 0644);
  g_assert_cmpint (run_failing (fixture, args, &err), ==, 1);
  g_assert_nonnull (strstr (err, "chmod 600"));
  g_clear_pointer (&err, g_free);

  /* Too short to be a secret: refused. */
  g_file_set_contents (fixture->token_path, "short\n", -1, &error);
  g_assert_no_error (error);
  g_chmod (fixture->token_path, 0600);
  g_assert_cmpint (run_failing (fixture, args, &err), ==, 1);
  g_assert_nonnull (strstr (err, fixture->token_path));

  /* Nothing was started: no database. */
  g_assert_false (g_file_test (db_path, G_FILE_TEST_EXISTS));
}

static void
test_bind_refused (Fixture       *fixture,
                   gconstpointer  data)
{
  const char *addresses[] = { "0.0.0.0", "::", "192.168.1.10", "10.0.0.1" };
  g_autofree char *data_arg = g_strdup_printf ("--data-dir=%s", fixture->data_dir);
  g_autofree char *token_arg = g_strdup_printf ("--api-token-file=%s", fixture->token_path);
  g_autofree char *db_path = g_build_filename (fixture->data_dir, "kaged.db", NULL);

  for (guint i = 0; i < G_N_ELEMENTS (addresses); i++)
    {
      g_autofree char *bind_arg = g_strdup_printf ("--api-bind=%s", addresses[i]);
      const char *args[] = { "--headless", "--api-port=0", data_arg, token_arg, bind_arg, NULL };
      g_autofree char *err = NULL;

      g_assert_cmpint (run_failing (fixture, args, &err), ==, 1);
      g_assert_nonnull (strstr (err, addresses[i]));
    }

  {
    const char *args[] = { "--headless", "--api-port=0", data_arg, token_arg,
                           "--api-bind=example.com", NULL };
    g_autofree char *err = NULL;

    g_assert_cmpint (run_failing (fixture, args, &err), ==, 1);
  }

  g_assert_false (g_file_test (db_path, G_FILE_TEST_EXISTS));

  /* A loopback address is fine. */
  fixture_start_full (fixture, TRUE, "--api-bind=127.0.0.1", NULL);
  create_session (fixture, "Bound");
}

static void
test_token_compare (void)
{
  g_assert_true (kaged_api_token_equal ("abcdef0123456789", "abcdef0123456789"));
  g_assert_false (kaged_api_token_equal ("abcdef0123456789", "abcdef012345678"));
  g_assert_false (kaged_api_token_equal ("abcdef0123456789", "abcdef01234567890"));
  g_assert_false (kaged_api_token_equal ("abcdef0123456789", "bbcdef0123456789"));
  g_assert_false (kaged_api_token_equal ("abcdef0123456789", ""));
  g_assert_false (kaged_api_token_equal ("abcdef0123456789", NULL));
}

int
main (int   argc,
      char *argv[])
{
  kaged_api_test_init (&argc, &argv);

  KAGED_API_TEST_ADD ("security/unauthorized", test_unauthorized);
  KAGED_API_TEST_ADD ("security/token-file-created", test_token_file_created);
  KAGED_API_TEST_ADD ("security/token-file-refused", test_token_file_refused);
  KAGED_API_TEST_ADD ("security/bind-refused", test_bind_refused);
  g_test_add_func ("/api/token/compare", test_token_compare);

  return g_test_run ();
}
