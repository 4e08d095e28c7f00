/* kaged-soak-fixture.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <glib/gstdio.h>

#include "kaged-soak-fixture.h"
#include "kaged-test-time.h"
#include "kaged-test-files.h"

/* A safety net against a hang, never a measure of anything (times
 * KAGED_TEST_SLOWDOWN). */
#define START_SECONDS 30

gint64
soak_now_ms (void)
{
  return g_get_real_time () / 1000;
}

/* @ms times KAGED_TEST_SLOWDOWN (tests/kaged-test-time.h): how long a soak
 * allows the program for something, never what it asserts. */
guint
soak_scaled_ms (guint ms)
{
  return (guint)MIN (kaged_test_usec ((gint64)ms * 1000) / 1000, G_MAXUINT);
}

void
soak_sleep_ms (guint ms)
{
  g_usleep ((gulong)ms * 1000);
}

guint
soak_env_uint (const char *name,
               guint       fallback)
{
  const char *value = g_getenv (name);
  guint64 number = 0;

  if (value == NULL || !g_ascii_string_to_unsigned (value, 10, 1, G_MAXUINT, &number, NULL))
    return fallback;

  return (guint)number;
}

/* ------------------------------------------------------------------------
 * The fake provider, on a thread of its own so that blocking calls of the
 * drivers never hold it up
 * ------------------------------------------------------------------------ */

struct _SoakProvider
{
  GThread         *thread;
  GMainContext    *context;
  GMainLoop       *loop;
  KagedFakeServer *server;
  char            *scenario;
  char            *url;
  GMutex           lock;
  GCond            cond;
  gboolean         ready;
};

static gpointer
provider_thread (gpointer data)
{
  SoakProvider *self = data;
  g_autoptr(GError) error = NULL;

  g_main_context_push_thread_default (self->context);

  self->server = kaged_fake_server_new (self->scenario, &error);
  g_assert_no_error (error);
  kaged_fake_server_listen (self->server, 0, &error);
  g_assert_no_error (error);

  g_mutex_lock (&self->lock);
  self->url = kaged_fake_server_get_url (self->server);
  self->ready = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);

  g_main_loop_run (self->loop);

  g_main_context_pop_thread_default (self->context);

  return NULL;
}

SoakProvider *
soak_provider_start (const char *scenario_json)
{
  SoakProvider *self = g_new0 (SoakProvider, 1);

  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  self->context = g_main_context_new ();
  self->loop = g_main_loop_new (self->context, FALSE);
  self->scenario = g_strdup (scenario_json);
  self->thread = g_thread_new ("soak-provider", provider_thread, self);

  g_mutex_lock (&self->lock);
  while (!self->ready)
    g_cond_wait (&self->cond, &self->lock);
  g_mutex_unlock (&self->lock);

  return self;
}

char *
soak_provider_dup_url (SoakProvider *self)
{
  return g_strdup (self->url);
}

typedef struct
{
  SoakProvider *self;
  const char   *scenario;
  gboolean      done;
} SetScenario;

static gboolean
set_scenario_cb (gpointer data)
{
  SetScenario *set = data;
  g_autoptr(GError) error = NULL;

  kaged_fake_server_set_scenario (set->self->server, set->scenario, &error);
  g_assert_no_error (error);
  kaged_fake_server_reset (set->self->server);

  g_mutex_lock (&set->self->lock);
  set->done = TRUE;
  g_cond_broadcast (&set->self->cond);
  g_mutex_unlock (&set->self->lock);

  return G_SOURCE_REMOVE;
}

/* Replaces the scenario and forgets the requests seen. */
void
soak_provider_set_scenario (SoakProvider *self,
                            const char   *scenario_json)
{
  SetScenario set = { self, scenario_json, FALSE };

  g_main_context_invoke (self->context, set_scenario_cb, &set);

  g_mutex_lock (&self->lock);
  while (!set.done)
    g_cond_wait (&self->cond, &self->lock);
  g_mutex_unlock (&self->lock);
}

/* Stops serving. Returns: (transfer full): the server, to read its log */
KagedFakeServer *
soak_provider_stop (SoakProvider *self)
{
  KagedFakeServer *server;

  g_main_loop_quit (self->loop);
  g_thread_join (self->thread);

  server = g_steal_pointer (&self->server);
  g_main_loop_unref (self->loop);
  g_main_context_unref (self->context);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  g_free (self->scenario);
  g_free (self->url);
  g_free (self);

  return server;
}

/* ------------------------------------------------------------------------
 * The program
 * ------------------------------------------------------------------------ */

void
soak_kaged_init (SoakKaged   *self,
                 const char  *provider_url,
                 const char **extra_args)
{
  g_autoptr(GError) error = NULL;

  memset (self, 0, sizeof *self);
  g_mutex_init (&self->lock);
  self->dir = g_dir_make_tmp (NULL, &error);
  g_assert_no_error (error);
  self->data_dir = g_build_filename (self->dir, "data", NULL);
  self->token_path = g_build_filename (self->dir, "api-token", NULL);
  self->db_path = g_build_filename (self->data_dir, "kaged.db", NULL);
  self->log_path = g_build_filename (self->dir, "kaged.log", NULL);
  self->provider_url = g_strdup_printf ("%s/v1", provider_url);
  self->extra_args = g_strdupv ((char **)extra_args);
}

/* A soak that fails must not leave the program running behind it. */
static void
die_with_parent (gpointer user_data)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}

static gsize
file_size (const char *path)
{
  GStatBuf buf;

  return g_stat (path, &buf) == 0 ? (gsize)buf.st_size : 0;
}

/* The port of the first "Listening on http://127.0.0.1:PORT" line written
 * to the log after @offset, or 0. */
static guint
find_port (const char *log_path,
           gsize       offset)
{
  g_autofree char *contents = NULL;
  gsize len = 0;
  const char *prefix = "Listening on http://127.0.0.1:";
  const char *found;

  if (!g_file_get_contents (log_path, &contents, &len, NULL) || len <= offset)
    return 0;

  found = strstr (contents + offset, prefix);
  if (found == NULL || strchr (found, '\n') == NULL)
    return 0;

  return (guint)g_ascii_strtoull (found + strlen (prefix), NULL, 10);
}

/* Starts the program, or starts it again on the same database, and waits
 * until it serves. */
void
soak_kaged_start (SoakKaged *self)
{
  g_autoptr(GSubprocessLauncher) launcher = NULL;
  g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  g_autofree char *config = g_build_filename (self->dir, "config", NULL);
  g_autofree char *data_home = g_build_filename (self->dir, "xdg-data", NULL);
  g_autofree char *runtime = g_build_filename (self->dir, "runtime", NULL);
  g_autofree char *no_modules = g_build_filename (self->dir, "gio-modules", NULL);
  const char *binary = g_getenv ("KAGED_BINARY");
  gsize offset = file_size (self->log_path);
  gint64 deadline = g_get_monotonic_time () + kaged_test_usec (START_SECONDS * G_USEC_PER_SEC);
  guint port = 0;

  g_assert_nonnull (binary);
  g_assert_null (self->kaged);
  g_mkdir_with_parents (runtime, 0700);
  g_mkdir_with_parents (no_modules, 0700);

  g_ptr_array_add (argv, g_strdup (binary));
  g_ptr_array_add (argv, g_strdup ("--headless"));
  g_ptr_array_add (argv, g_strdup ("--api-port=0"));
  g_ptr_array_add (argv, g_strdup_printf ("--data-dir=%s", self->data_dir));
  g_ptr_array_add (argv, g_strdup_printf ("--api-token-file=%s", self->token_path));
  g_ptr_array_add (argv, g_strdup ("--provider-kind=openai"));
  g_ptr_array_add (argv, g_strdup_printf ("--provider-url=%s", self->provider_url));
  g_ptr_array_add (argv, g_strdup ("--model=soak"));
  for (guint i = 0; self->extra_args != NULL && self->extra_args[i] != NULL; i++)
    g_ptr_array_add (argv, g_strdup (self->extra_args[i]));
  g_ptr_array_add (argv, NULL);

  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDERR_MERGE);
  g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
  g_subprocess_launcher_unsetenv (launcher, "DISPLAY");
  g_subprocess_launcher_unsetenv (launcher, "WAYLAND_DISPLAY");
  g_subprocess_launcher_unsetenv (launcher, "DBUS_SESSION_BUS_ADDRESS");
  g_subprocess_launcher_setenv (launcher, "XDG_CONFIG_HOME", config, TRUE);
  g_subprocess_launcher_setenv (launcher, "XDG_DATA_HOME", data_home, TRUE);
  g_subprocess_launcher_setenv (launcher, "XDG_RUNTIME_DIR", runtime, TRUE);
  g_subprocess_launcher_setenv (launcher, "LC_ALL", "C.UTF-8", TRUE);
  /* None of the machine's GIO modules: the program talks to 127.0.0.1
   * only, and a proxy resolver module that GIO loads past its cache is
   * reported as a leak (tests/sanitizers/lsan.supp) that the soak's fast
   * stacks cannot tell from the program's own. */
  g_subprocess_launcher_setenv (launcher, "GIO_MODULE_DIR", no_modules, TRUE);
  /* Criticals are defects the soak must see, not stop at. */
  g_subprocess_launcher_unsetenv (launcher, "G_DEBUG");
#ifdef SOAK_ASAN
  {
    /* The program is built like the soak, here with AddressSanitizer.
     * It records where each block was allocated by frame pointers, not
     * through the unwind tables (fast_unwind_on_malloc=0 in the
     * sanitizers test setup, which suppressions of leaks inside libraries
     * need): with thousands of API requests and provider events, each
     * allocating dozens of blocks, walking every stack through GLib's
     * tables made the program about 30 times slower, too slow for any
     * deadline a soak holds it to. Memory errors are still reported with
     * the stack where they happen, and leaks still fail the soak; an
     * allocation's stack shows Kaged's frames (built with frame pointers)
     * and may skip the libraries'. None of the leaks suppressed for the
     * libraries (tests/sanitizers/lsan.supp) is met by the headless
     * program. */
    const char *options = g_getenv ("ASAN_OPTIONS");
    g_autofree char *fast = g_strdup_printf ("%s:fast_unwind_on_malloc=1",
                                             options != NULL ? options : "");

    g_subprocess_launcher_setenv (launcher, "ASAN_OPTIONS", fast, TRUE);
  }
#endif
  {
    int fd = g_open (self->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);

    g_assert_cmpint (fd, >=, 0);
    g_subprocess_launcher_take_stdout_fd (launcher, fd);
  }

  self->kaged = g_subprocess_launcher_spawnv (launcher, (const char * const *)argv->pdata,
                                              &error);
  g_assert_no_error (error);

  while ((port = find_port (self->log_path, offset)) == 0)
    {
      if (g_get_monotonic_time () > deadline || g_subprocess_get_identifier (self->kaged) == NULL)
        {
          g_autofree char *log = NULL;

          g_file_get_contents (self->log_path, &log, NULL, NULL);
          g_error ("kaged did not start:\n%s", log != NULL ? log + offset : "");
        }
      soak_sleep_ms (10);
    }

  g_mutex_lock (&self->lock);
  self->port = port;
  g_clear_pointer (&self->token, g_free);
  g_file_get_contents (self->token_path, &self->token, NULL, &error);
  g_assert_no_error (error);
  g_strstrip (self->token);
  g_mutex_unlock (&self->lock);
}

/* SIGTERM, as a person stopping it would, and waits for it to end. */
void
soak_kaged_stop (SoakKaged *self)
{
  if (self->kaged == NULL)
    return;

  g_subprocess_send_signal (self->kaged, SIGTERM);
  g_subprocess_wait (self->kaged, NULL, NULL);
  g_assert_true (g_subprocess_get_if_exited (self->kaged));
  g_assert_cmpint (g_subprocess_get_exit_status (self->kaged), ==, 0);
  g_clear_object (&self->kaged);
}

void
soak_kaged_kill (SoakKaged *self)
{
  if (self->kaged == NULL)
    return;

  g_subprocess_force_exit (self->kaged);
  g_subprocess_wait (self->kaged, NULL, NULL);
  g_clear_object (&self->kaged);
}

int
soak_kaged_get_pid (SoakKaged *self)
{
  const char *id = self->kaged != NULL ? g_subprocess_get_identifier (self->kaged) : NULL;

  return id != NULL ? atoi (id) : 0;
}

void
soak_kaged_clear (SoakKaged *self)
{
  soak_kaged_kill (self);
  if (self->dir != NULL && g_getenv ("SOAK_KEEP") == NULL)
    kaged_test_remove_tree (self->dir);
  g_clear_pointer (&self->dir, g_free);
  g_clear_pointer (&self->data_dir, g_free);
  g_clear_pointer (&self->token_path, g_free);
  g_clear_pointer (&self->token, g_free);
  g_clear_pointer (&self->db_path, g_free);
  g_clear_pointer (&self->log_path, g_free);
  g_clear_pointer (&self->provider_url, g_free);
  g_clear_pointer (&self->extra_args, g_strfreev);
  g_mutex_clear (&self->lock);
}

/* ------------------------------------------------------------------------
 * The API, blocking: each thread has a session of its own
 * ------------------------------------------------------------------------ */

SoupSession *
soak_http_new (void)
{
  return soup_session_new_with_options ("timeout", soak_scaled_ms (60 * 1000) / 1000, NULL);
}

/* Returns: (nullable): the answer's JSON, with its status in @status (0
 * when no answer came: the program was not there). */
JsonNode *
soak_api (SoakKaged   *self,
          SoupSession *http,
          const char  *method,
          const char  *body,
          guint       *status,
          const char  *path_format,
          ...)
{
  g_autofree char *path = NULL;
  g_autofree char *url = NULL;
  g_autofree char *authorization = NULL;
  g_autoptr(SoupMessage) msg = NULL;
  g_autoptr(GBytes) answer = NULL;
  g_autoptr(GError) error = NULL;
  va_list args;

  va_start (args, path_format);
  path = g_strdup_vprintf (path_format, args);
  va_end (args);

  g_mutex_lock (&self->lock);
  url = g_strdup_printf ("http://127.0.0.1:%u/api/v1/%s", self->port, path);
  authorization = g_strdup_printf ("Bearer %s", self->token);
  g_mutex_unlock (&self->lock);

  msg = soup_message_new (method, url);
  soup_message_headers_replace (soup_message_get_request_headers (msg),
                                "Authorization", authorization);
  if (body != NULL)
    {
      g_autoptr(GBytes) bytes = g_bytes_new (body, strlen (body));

      soup_message_set_request_body_from_bytes (msg, "application/json", bytes);
    }

  answer = soup_session_send_and_read (http, msg, NULL, &error);
  *status = answer != NULL ? soup_message_get_status (msg) : 0;
  if (answer == NULL || g_bytes_get_size (answer) == 0)
    return NULL;

  {
    g_autofree char *text = g_strndup (g_bytes_get_data (answer, NULL), g_bytes_get_size (answer));

    return json_from_string (text, NULL);
  }
}

gint64
soak_create_session (SoakKaged   *self,
                     SoupSession *http,
                     const char  *title)
{
  g_autofree char *body = g_strdup_printf ("{\"title\": \"%s\"}", title);
  g_autoptr(JsonNode) node = NULL;
  guint status = 0;

  node = soak_api (self, http, "POST", body, &status, "sessions");
  g_assert_cmpuint (status, ==, 201);
  g_assert_nonnull (node);

  return json_object_get_int_member (json_node_get_object (node), "id");
}

/* Whether the session runs nothing and has nothing queued (and the
 * program answers). */
gboolean
soak_session_is_idle (SoakKaged   *self,
                      SoupSession *http,
                      gint64       session_id)
{
  g_autoptr(JsonNode) node = NULL;
  guint status = 0;

  node = soak_api (self, http, "GET", NULL, &status, "sessions/%" G_GINT64_FORMAT, session_id);
  if (status != 200 || node == NULL)
    return FALSE;

  return g_strcmp0 (json_object_get_string_member (json_node_get_object (node), "state"),
                    "idle") == 0;
}

/* ------------------------------------------------------------------------
 * The database left behind
 * ------------------------------------------------------------------------ */

sqlite3 *
soak_open_db (const char *path)
{
  sqlite3 *db = NULL;

  g_assert_cmpint (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READWRITE, NULL), ==, SQLITE_OK);
  sqlite3_busy_timeout (db, (int)soak_scaled_ms (5000));

  return db;
}

gboolean
soak_db_integrity_ok (sqlite3 *db)
{
  sqlite3_stmt *stmt = NULL;
  gboolean ok;

  g_assert_cmpint (sqlite3_prepare_v2 (db, "PRAGMA integrity_check", -1, &stmt, NULL), ==,
                   SQLITE_OK);
  ok = sqlite3_step (stmt) == SQLITE_ROW &&
       g_strcmp0 ((const char *)sqlite3_column_text (stmt, 0), "ok") == 0;
  sqlite3_finalize (stmt);

  return ok;
}

gint64
soak_db_count (sqlite3    *db,
               const char *sql)
{
  sqlite3_stmt *stmt = NULL;
  gint64 count = -1;

  g_assert_cmpint (sqlite3_prepare_v2 (db, sql, -1, &stmt, NULL), ==, SQLITE_OK);
  if (sqlite3_step (stmt) == SQLITE_ROW)
    count = sqlite3_column_int64 (stmt, 0);
  sqlite3_finalize (stmt);

  return count;
}

/* Returns: (transfer full): message id (gint64 *) → content, of every
 * operator message */
GHashTable *
soak_db_operator_rows (sqlite3 *db)
{
  GHashTable *rows = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  sqlite3_stmt *stmt = NULL;

  g_assert_cmpint (sqlite3_prepare_v2 (db, "SELECT id, content FROM messages "
                                           "WHERE role = 'operator'", -1, &stmt, NULL),
                   ==, SQLITE_OK);
  while (sqlite3_step (stmt) == SQLITE_ROW)
    {
      gint64 *id = g_new (gint64, 1);

      *id = sqlite3_column_int64 (stmt, 0);
      g_hash_table_insert (rows, id, g_strdup ((const char *)sqlite3_column_text (stmt, 1)));
    }
  sqlite3_finalize (stmt);

  return rows;
}

/* A field of /proc/PID/status in kB (VmRSS, VmHWM), or 0. */
guint64
soak_read_status_kb (int         pid,
                     const char *field)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/status", pid);
  g_autofree char *contents = NULL;
  g_autofree char *prefix = g_strdup_printf ("\n%s:", field);
  const char *found;

  if (pid <= 0 || !g_file_get_contents (path, &contents, NULL, NULL))
    return 0;

  found = strstr (contents, prefix);
  if (found == NULL)
    return 0;

  return g_ascii_strtoull (found + strlen (prefix), NULL, 10);
}

/* ------------------------------------------------------------------------
 * What every soak sets up
 * ------------------------------------------------------------------------ */

static void
drop_log (const char     *domain,
          GLogLevelFlags  level,
          const char     *message,
          gpointer        user_data)
{
}

/* Thousands of requests: the provider's own debug log says nothing here. */
void
soak_test_init (int    *argc,
                char ***argv)
{
  g_test_init (argc, argv, NULL);
  g_log_set_handler ("kaged-fake-server", G_LOG_LEVEL_DEBUG, drop_log, NULL);
}

/* Starts the fake provider on @scenario_json, then the program against
 * it with @extra_args; returns the provider, for soak_provider_stop(). */
SoakProvider *
soak_start (SoakKaged   *kaged,
            const char  *scenario_json,
            const char **extra_args)
{
  SoakProvider *provider = soak_provider_start (scenario_json);
  g_autofree char *provider_url = soak_provider_dup_url (provider);

  soak_kaged_init (kaged, provider_url, extra_args);
  soak_kaged_start (kaged);

  return provider;
}

void
soak_violations_init (SoakViolations *self)
{
  g_mutex_init (&self->lock);
  self->texts = g_ptr_array_new_with_free_func (g_free);
}

/* Keeps a broken invariant, from any thread; the first 50 are said at once. */
void
soak_violations_add (SoakViolations *self,
                     const char     *format,
                     ...)
{
  va_list args;
  char *text;

  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);

  g_mutex_lock (&self->lock);
  if (self->texts->len < 50)
    g_test_message ("violation: %s", text);
  g_ptr_array_add (self->texts, text);
  g_mutex_unlock (&self->lock);
}

guint
soak_violations_count (SoakViolations *self)
{
  guint n;

  g_mutex_lock (&self->lock);
  n = self->texts->len;
  g_mutex_unlock (&self->lock);

  return n;
}

void
soak_violations_clear (SoakViolations *self)
{
  g_clear_pointer (&self->texts, g_ptr_array_unref);
  g_mutex_clear (&self->lock);
}
