/* test-keyring.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * API keys in the desktop keyring, through libsecret: a private
 * gnome-keyring-daemon on the private session bus the test runs on
 * (dbus-run-session), with its keyrings in a folder of the test's. A key
 * stored for a profile is read back and sent to the provider, and is found
 * nowhere else: not in the settings file, not in the database, not in
 * anything logged. Removing the profile removes the key.
 */

#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#define G_SETTINGS_ENABLE_BACKEND
#include <gio/gsettingsbackend.h>

#include "kaged-core.h"
#include "kaged-fake-server.h"
#include "kaged-profiles.h"
#include "kaged-test-files.h"

#define WAIT_SECONDS 30
#define SECRET_KEY "sk-kaged-test-4f1d9e0c7b2a"

/* LeakSanitizer's suppressions for this program only (the sanitizers test
 * setup, meson.build). libsecret 0.20 keeps the reply of each secret it
 * reads from the keyring daemon, a D-Bus message body parsed on GDBus's
 * worker thread, and never releases it: a program of twenty lines that only
 * stores a password with secret_password_store_sync() and reads it twice
 * with secret_password_lookup_sync(), freeing it with
 * secret_password_free(), leaks the same two bodies. libsecret's frames are
 * not on the allocation's stack, only GIO's, so the suppression names GIO's
 * parser. In this program only libsecret and secrets_service_is_up() (which
 * frees its reply) talk D-Bus, and no other test reads a real keyring, so
 * the suppression covers nothing of Kaged's. */
const char *__lsan_default_suppressions (void);

const char *
__lsan_default_suppressions (void)
{
  return "leak:g_dbus_message_new_from_blob\n";
}

static char *test_dir;
static GSubprocess *daemon_process;
static GString *log_text;

/* Everything logged, whatever the level, is kept to be searched. */
static GLogWriterOutput
log_writer (GLogLevelFlags   log_level,
            const GLogField *fields,
            gsize            n_fields,
            gpointer         user_data)
{
  for (gsize i = 0; i < n_fields; i++)
    {
      if (fields[i].length < 0)
        g_string_append (log_text, fields[i].value);
      else
        g_string_append_len (log_text, fields[i].value, fields[i].length);
      g_string_append_c (log_text, '\n');
    }

  return g_log_writer_default (log_level, fields, n_fields, user_data);
}

static gboolean
timeout_cb (gpointer user_data)
{
  gboolean *timed_out = user_data;

  *timed_out = TRUE;
  return G_SOURCE_REMOVE;
}

static gboolean
secrets_service_is_up (GDBusConnection *bus)
{
  g_autoptr(GVariant) reply = NULL;
  gboolean has_owner = FALSE;

  reply = g_dbus_connection_call_sync (bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "NameHasOwner",
                                       g_variant_new ("(s)", "org.freedesktop.secrets"),
                                       G_VARIANT_TYPE ("(b)"), G_DBUS_CALL_FLAGS_NONE, -1,
                                       NULL, NULL);
  if (reply != NULL)
    g_variant_get (reply, "(b)", &has_owner);

  return has_owner;
}

/* A keyring daemon of the test's own, its "login" keyring unlocked with a
 * password given on its standard input. */
static void
start_keyring_daemon (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusConnection) bus = NULL;
  g_autoptr(GBytes) password = g_bytes_new_static ("test", 4);
  GOutputStream *input;
  gint64 deadline;

  bus = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error);
  g_assert_no_error (error);
  g_assert_false (secrets_service_is_up (bus));

  daemon_process = g_subprocess_new (G_SUBPROCESS_FLAGS_STDIN_PIPE |
                                     G_SUBPROCESS_FLAGS_STDOUT_SILENCE,
                                     &error,
                                     "gnome-keyring-daemon", "--foreground", "--unlock",
                                     "--components=secrets", NULL);
  g_assert_no_error (error);

  input = g_subprocess_get_stdin_pipe (daemon_process);
  g_output_stream_write_bytes (input, password, NULL, &error);
  g_assert_no_error (error);
  g_output_stream_close (input, NULL, &error);
  g_assert_no_error (error);

  deadline = g_get_monotonic_time () + WAIT_SECONDS * G_USEC_PER_SEC;
  while (!secrets_service_is_up (bus))
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (50 * 1000);
    }
}

static gboolean
file_contains (const char *path,
               const char *needle)
{
  g_autofree char *contents = NULL;
  gsize length = 0;

  if (!g_file_get_contents (path, &contents, &length, NULL))
    return FALSE;

  for (gsize i = 0; i + strlen (needle) <= length; i++)
    {
      if (memcmp (contents + i, needle, strlen (needle)) == 0)
        return TRUE;
    }

  return FALSE;
}

/* Whether @needle is in any file under @path. */
static gboolean
tree_contains (const char *path,
               const char *needle)
{
  g_autoptr(GDir) dir = NULL;
  const char *name;

  if (!g_file_test (path, G_FILE_TEST_IS_DIR))
    return file_contains (path, needle);

  dir = g_dir_open (path, 0, NULL);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);

      if (tree_contains (child, needle))
        return TRUE;
    }

  return FALSE;
}

static void
stored_cb (GObject      *object,
           GAsyncResult *result,
           gpointer      user_data)
{
  gboolean *done = user_data;
  g_autoptr(GError) error = NULL;

  g_assert_true (kaged_keyring_store_finish (KAGED_KEYRING (object), result, &error));
  g_assert_no_error (error);
  *done = TRUE;
}

static void
removed_cb (GObject      *object,
            GAsyncResult *result,
            gpointer      user_data)
{
  gboolean *done = user_data;
  g_autoptr(GError) error = NULL;

  g_assert_true (kaged_profiles_remove_finish (KAGED_PROFILES (object), result, &error));
  g_assert_no_error (error);
  *done = TRUE;
}

static void
wait_until (gboolean *done)
{
  gboolean timed_out = FALSE;
  guint timeout_id = g_timeout_add_seconds (WAIT_SECONDS, timeout_cb, &timed_out);

  while (!*done && !timed_out)
    g_main_context_iteration (NULL, TRUE);

  g_assert_false (timed_out);
  g_source_remove (timeout_id);
}

static KagedRun *
post_and_wait (KagedCore  *core,
               gint64      session_id,
               const char *content)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  gboolean timed_out = FALSE;
  guint timeout_id = g_timeout_add_seconds (WAIT_SECONDS, timeout_cb, &timed_out);
  KagedRun *run = NULL;

  receipt = kaged_core_post (core, session_id, content, &error);
  g_assert_no_error (error);

  for (;;)
    {
      g_clear_object (&run);
      run = kaged_session_manager_get_run (kaged_core_get_manager (core), session_id,
                                           receipt->run_id, &error);
      g_assert_no_error (error);
      if (kaged_run_is_finished (run) || timed_out)
        break;
      g_main_context_iteration (NULL, TRUE);
    }

  g_assert_false (timed_out);
  g_source_remove (timeout_id);

  return run;
}

static void
test_key_round_trip (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *settings_path = g_build_filename (test_dir, "settings.ini", NULL);
  g_autofree char *db_dir = g_build_filename (test_dir, "db", NULL);
  g_autofree char *db_path = g_build_filename (db_dir, "kaged.db", NULL);
  g_autofree char *keyrings = g_build_filename (test_dir, "data", "keyrings", NULL);
  g_autofree char *url = NULL;
  g_autofree char *key = NULL;
  g_autofree char *id = NULL;
  g_autoptr(GSettingsBackend) backend = NULL;
  g_autoptr(GSettings) settings = NULL;
  g_autoptr(KagedProfiles) profiles = NULL;
  g_autoptr(KagedKeyring) keyring = kaged_secret_keyring_new ();
  g_autoptr(KagedFakeServer) server = NULL;
  g_autoptr(KagedCore) core = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedProfile) remote = NULL;
  g_autoptr(KagedRun) run = NULL;
  gboolean done = FALSE;

  server = kaged_fake_server_new ("[{\"kind\": \"openai\", \"text\": \"Hello\"}]", &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (server, 0, &error);
  g_assert_no_error (error);
  url = kaged_fake_server_get_url (server);

  backend = g_keyfile_settings_backend_new (settings_path, "/", NULL);
  settings = g_settings_new_with_backend (BASE_APPLICATION_ID, backend);
  profiles = kaged_profiles_new (settings);

  /* A remote profile: an OpenAI-compatible server that wants a key. */
  remote = kaged_profile_new ("Remote", KAGED_PROVIDER_KIND_OPENAI, url, "test-model");
  kaged_profiles_add (profiles, remote);
  id = g_strdup (kaged_profile_get_id (remote));
  g_assert_true (kaged_provider_kind_needs_key (KAGED_PROVIDER_KIND_OPENAI,
                                                "https://api.example.org/v1"));

  core = kaged_core_open (db_path, keyring, KAGED_CORE_FLAGS_NONE, &error);
  g_assert_no_error (error);
  kaged_core_set_profiles (core, profiles);
  kaged_profiles_set_default (profiles, id);
  kaged_core_start (core);

  /* Stored under the profile's id, read back through the keyring. */
  kaged_keyring_store_async (keyring, id, SECRET_KEY, NULL, stored_cb, &done);
  wait_until (&done);
  key = kaged_keyring_lookup (keyring, id, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (key, ==, SECRET_KEY);
  kaged_keyring_free_key (g_steal_pointer (&key));

  /* And the engine sends it to the provider of that profile. */
  session = kaged_core_create_session (core, "Keys", &error);
  g_assert_no_error (error);
  run = post_and_wait (core, kaged_session_get_id (session), "Hello with a key");
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_cmpstr (kaged_fake_server_get_request_header (server, 0, "Authorization"), ==,
                   "Bearer " SECRET_KEY);

  /* It went into the keyring's own files only... */
  g_settings_sync ();
  kaged_core_shutdown (core);
  g_clear_object (&core);
  g_assert_true (g_file_test (settings_path, G_FILE_TEST_EXISTS));
  g_assert_true (file_contains (settings_path, id));
  g_assert_false (file_contains (settings_path, SECRET_KEY));
  g_assert_true (g_file_test (db_path, G_FILE_TEST_EXISTS));
  g_assert_true (tree_contains (db_dir, "Hello with a key"));
  g_assert_false (tree_contains (db_dir, SECRET_KEY));
  g_assert_true (g_file_test (keyrings, G_FILE_TEST_IS_DIR));
  g_assert_cmpuint (log_text->len, >, 0);
  g_assert_null (strstr (log_text->str, SECRET_KEY));

  /* Removing the profile removes its key. */
  done = FALSE;
  kaged_profiles_remove_async (profiles, id, NULL, removed_cb, &done);
  wait_until (&done);
  key = kaged_keyring_lookup (keyring, id, NULL, &error);
  g_assert_no_error (error);
  g_assert_null (key);
  g_assert_null (strstr (log_text->str, SECRET_KEY));
}

typedef struct
{
  gboolean  done;
  char     *key;
  GError   *error;
} Lookup;

static void
looked_up_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  Lookup *lookup = user_data;

  lookup->key = kaged_keyring_lookup_finish (KAGED_KEYRING (object), result, &lookup->error);
  lookup->done = TRUE;
}

static gboolean
lookup_on_main_loop_cb (gpointer user_data)
{
  Lookup *lookup = user_data;
  g_autoptr(KagedKeyring) keyring = kaged_secret_keyring_new ();

  lookup->key = kaged_keyring_lookup (keyring, "main-loop", NULL, &lookup->error);
  lookup->done = TRUE;

  return G_SOURCE_REMOVE;
}

/* Looking a key up from the main loop goes through libsecret's own async
 * D-Bus calls, which a cancel ends; the blocking lookup is refused there. */
static void
test_lookup_on_main_loop (void)
{
  g_autoptr(KagedKeyring) keyring = kaged_secret_keyring_new ();
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GError) error = NULL;
  Lookup found = { FALSE, NULL, NULL };
  Lookup missing = { FALSE, NULL, NULL };
  Lookup cancelled = { FALSE, NULL, NULL };
  Lookup blocking = { FALSE, NULL, NULL };

  g_assert_true (kaged_keyring_store (keyring, "main-loop", SECRET_KEY, NULL, &error));
  g_assert_no_error (error);

  kaged_keyring_lookup_async (keyring, "main-loop", NULL, looked_up_cb, &found);
  kaged_keyring_lookup_async (keyring, "nobody", NULL, looked_up_cb, &missing);
  wait_until (&found.done);
  wait_until (&missing.done);
  g_assert_no_error (found.error);
  g_assert_cmpstr (found.key, ==, SECRET_KEY);
  g_assert_no_error (missing.error);
  g_assert_null (missing.key);

  kaged_keyring_lookup_async (keyring, "main-loop", cancellable, looked_up_cb, &cancelled);
  g_cancellable_cancel (cancellable);
  wait_until (&cancelled.done);
  g_assert_error (cancelled.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_null (cancelled.key);

  /* The blocking lookup, from a callback of the main loop, is reported
   * with a critical (and still answers). */
  g_test_expect_message ("kaged-keyring", G_LOG_LEVEL_CRITICAL, "*main loop*");
  g_idle_add (lookup_on_main_loop_cb, &blocking);
  wait_until (&blocking.done);
  g_test_assert_expected_messages ();
  g_assert_cmpstr (blocking.key, ==, SECRET_KEY);

  g_assert_true (kaged_keyring_clear (keyring, "main-loop", NULL, &error));
  g_assert_no_error (error);
  g_assert_null (strstr (log_text->str, SECRET_KEY));

  kaged_keyring_free_key (found.key);
  kaged_keyring_free_key (blocking.key);
  g_clear_error (&cancelled.error);
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *home = NULL;
  g_autofree char *runtime = NULL;
  g_autofree char *data = NULL;
  g_autofree char *config = NULL;
  g_autofree char *cache = NULL;
  int ret;

  test_dir = g_dir_make_tmp (NULL, NULL);
  g_assert_nonnull (test_dir);

  /* The keyring daemon keeps its files, and everything else its state,
   * under the test's folder. */
  home = g_build_filename (test_dir, "home", NULL);
  runtime = g_build_filename (test_dir, "run", NULL);
  g_mkdir_with_parents (home, 0700);
  g_mkdir_with_parents (runtime, 0700);
  g_setenv ("HOME", home, TRUE);
  g_setenv ("XDG_RUNTIME_DIR", runtime, TRUE);
  data = g_build_filename (test_dir, "data", NULL);
  config = g_build_filename (test_dir, "config", NULL);
  cache = g_build_filename (test_dir, "cache", NULL);
  g_setenv ("XDG_DATA_HOME", data, TRUE);
  g_setenv ("XDG_CONFIG_HOME", config, TRUE);
  g_setenv ("XDG_CACHE_HOME", cache, TRUE);
  g_setenv ("G_MESSAGES_DEBUG", "all", TRUE);

  /* Debug messages too, on standard error, apart from the TAP output. */
  log_text = g_string_new (NULL);
  g_log_writer_default_set_use_stderr (TRUE);
  g_log_set_writer_func (log_writer, NULL, NULL);

  g_test_init (&argc, &argv, NULL);

  if (g_getenv ("DBUS_SESSION_BUS_ADDRESS") == NULL)
    g_error ("This test needs a private session bus: run it through meson, which wraps it in "
             "dbus-run-session");

  start_keyring_daemon ();

  g_test_add_func ("/keyring/lookup-on-main-loop", test_lookup_on_main_loop);
  g_test_add_func ("/keyring/round-trip", test_key_round_trip);

  ret = g_test_run ();

  g_subprocess_force_exit (daemon_process);
  g_subprocess_wait (daemon_process, NULL, NULL);
  g_clear_object (&daemon_process);
  kaged_test_remove_tree (test_dir);
  g_string_free (log_text, TRUE);
  g_free (test_dir);

  return ret;
}
