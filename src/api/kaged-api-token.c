/* kaged-api-token.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * The bearer token of the local HTTP API: 32 random bytes from the kernel,
 * hex-encoded, kept in a file only its owner can read
 * ($XDG_CONFIG_HOME/kaged/api-token unless another file is named). The
 * token is never logged.
 */

#define G_LOG_DOMAIN "kaged-api"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>

#include "kaged-api-error.h"
#include "kaged-api-token.h"

/* A token file larger than this is not one of ours. */
#define MAX_TOKEN_FILE_SIZE 4096
/* Tokens given in a file of the user's own must not be guessable either. */
#define MIN_TOKEN_LENGTH 32

G_DEFINE_QUARK (kaged-api-error-quark, kaged_api_error)

/**
 * kaged_api_token_default_path:
 *
 * Returns: (transfer full): `$XDG_CONFIG_HOME/kaged/api-token`
 */
char *
kaged_api_token_default_path (void)
{
  return g_build_filename (g_get_user_config_dir (), "kaged", "api-token", NULL);
}

static gboolean
read_urandom (guint8  *buffer,
              gsize    len,
              GError **error)
{
  gsize done = 0;
  int fd;

  fd = g_open ("/dev/urandom", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0)
    {
      int saved_errno = errno;

      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_RANDOM,
                   _("No random numbers are available: %s"), g_strerror (saved_errno));
      return FALSE;
    }

  while (done < len)
    {
      gssize n = read (fd, buffer + done, len - done);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        {
          int saved_errno = n < 0 ? errno : EIO;

          g_close (fd, NULL);
          g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_RANDOM,
                       _("No random numbers are available: %s"), g_strerror (saved_errno));
          return FALSE;
        }
      done += n;
    }

  g_close (fd, NULL);
  return TRUE;
}

static gboolean
fill_random (guint8  *buffer,
             gsize    len,
             GError **error)
{
  gsize done = 0;

  while (done < len)
    {
      gssize n = getrandom (buffer + done, len - done, 0);

      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return read_urandom (buffer + done, len - done, error);
      done += n;
    }

  return TRUE;
}

/**
 * kaged_api_token_generate:
 *
 * Returns: (transfer full): a new token of %KAGED_API_TOKEN_LENGTH hex
 *   digits, or %NULL with @error set
 */
char *
kaged_api_token_generate (GError **error)
{
  static const char hex[] = "0123456789abcdef";
  guint8 bytes[KAGED_API_TOKEN_BYTES];
  char *token;

  if (!fill_random (bytes, sizeof bytes, error))
    return NULL;

  token = g_malloc (KAGED_API_TOKEN_LENGTH + 1);
  for (guint i = 0; i < KAGED_API_TOKEN_BYTES; i++)
    {
      token[2 * i] = hex[bytes[i] >> 4];
      token[2 * i + 1] = hex[bytes[i] & 0xf];
    }
  token[KAGED_API_TOKEN_LENGTH] = '\0';

  memset (bytes, 0, sizeof bytes);

  return token;
}

static gboolean
write_all (int          fd,
           const char  *data,
           gsize        len)
{
  gsize done = 0;

  while (done < len)
    {
      gssize n = write (fd, data + done, len - done);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return FALSE;
      done += n;
    }

  return TRUE;
}

static char *
create_token_file (int          fd,
                   const char  *path,
                   GError     **error)
{
  g_autofree char *token = NULL;
  g_autofree char *line = NULL;
  int saved_errno;

  /* Whatever the umask, only the owner reads and writes it. */
  if (fchmod (fd, S_IRUSR | S_IWUSR) != 0)
    goto failed;

  token = kaged_api_token_generate (error);
  if (token == NULL)
    {
      g_close (fd, NULL);
      g_unlink (path);
      return NULL;
    }

  line = g_strconcat (token, "\n", NULL);
  if (!write_all (fd, line, strlen (line)) || fsync (fd) != 0)
    goto failed;

  memset (line, 0, strlen (line));

  if (!g_close (fd, NULL))
    {
      fd = -1;
      goto failed;
    }

  return g_steal_pointer (&token);

failed:
  saved_errno = errno;
  if (fd >= 0)
    g_close (fd, NULL);
  g_unlink (path);
  g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_TOKEN_FILE,
               _("Could not write the API token file “%s”: %s"),
               path, g_strerror (saved_errno));
  return NULL;
}

static gboolean
token_is_valid (const char *token)
{
  gsize len = strlen (token);

  if (len < MIN_TOKEN_LENGTH)
    return FALSE;

  for (gsize i = 0; i < len; i++)
    {
      if (!g_ascii_isgraph (token[i]))
        return FALSE;
    }

  return TRUE;
}

static char *
read_token_file (const char  *path,
                 GError     **error)
{
  char buffer[MAX_TOKEN_FILE_SIZE + 1];
  struct stat st;
  gsize done = 0;
  int fd;

  fd = g_open (path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0)
    {
      int saved_errno = errno;

      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_TOKEN_FILE,
                   _("Could not read the API token file “%s”: %s"),
                   path, g_strerror (saved_errno));
      return NULL;
    }

  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode))
    {
      g_close (fd, NULL);
      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_TOKEN_FILE,
                   _("The API token file “%s” is not a regular file"), path);
      return NULL;
    }

  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
    {
      g_close (fd, NULL);
      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_TOKEN_FILE,
                   _("The API token file “%s” can be read by other users. "
                     "Make it private with “chmod 600 %s”, or delete it to get a new token."),
                   path, path);
      return NULL;
    }

  if (st.st_uid != getuid ())
    {
      g_close (fd, NULL);
      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_TOKEN_FILE,
                   _("The API token file “%s” belongs to another user"), path);
      return NULL;
    }

  while (done < MAX_TOKEN_FILE_SIZE)
    {
      gssize n = read (fd, buffer + done, MAX_TOKEN_FILE_SIZE - done);

      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          int saved_errno = errno;

          g_close (fd, NULL);
          g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_TOKEN_FILE,
                       _("Could not read the API token file “%s”: %s"),
                       path, g_strerror (saved_errno));
          return NULL;
        }
      if (n == 0)
        break;
      done += n;
    }
  g_close (fd, NULL);
  buffer[done] = '\0';

  /* A NUL inside would hide the rest of the file from the check below. */
  if (memchr (buffer, '\0', done) != NULL)
    buffer[0] = '\0';

  g_strstrip (buffer);
  if (!token_is_valid (buffer))
    {
      memset (buffer, 0, sizeof buffer);
      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_TOKEN_FILE,
                   _("The API token file “%s” does not hold a token of at least %d "
                     "printable characters"),
                   path, MIN_TOKEN_LENGTH);
      return NULL;
    }

  {
    char *token = g_strdup (buffer);

    memset (buffer, 0, sizeof buffer);
    return token;
  }
}

/**
 * kaged_api_token_load_or_create:
 * @path: (nullable): the token file, or %NULL for the default
 * @created: (out) (optional): set to whether the file was created now
 * @error: where to put the reason the token cannot be had
 *
 * Reads the API token from @path, or creates the file with a new random
 * token (mode 0600, its folder 0700) when it does not exist. A file that
 * other users can read, that is not a regular file or that holds no usable
 * token is refused.
 *
 * Returns: (transfer full): the token, or %NULL with @error set
 */
char *
kaged_api_token_load_or_create (const char  *path,
                                gboolean    *created,
                                GError     **error)
{
  g_autofree char *default_path = NULL;
  g_autofree char *dir = NULL;
  int fd;

  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (created != NULL)
    *created = FALSE;

  if (path == NULL)
    path = default_path = kaged_api_token_default_path ();

  dir = g_path_get_dirname (path);
  if (g_mkdir_with_parents (dir, 0700) != 0)
    {
      int saved_errno = errno;

      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_TOKEN_FILE,
                   _("Could not create the folder “%s”: %s"), dir, g_strerror (saved_errno));
      return NULL;
    }

  fd = g_open (path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, S_IRUSR | S_IWUSR);
  if (fd >= 0)
    {
      char *token = create_token_file (fd, path, error);

      if (token != NULL && created != NULL)
        *created = TRUE;
      return token;
    }

  if (errno != EEXIST)
    {
      int saved_errno = errno;

      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_TOKEN_FILE,
                   _("Could not create the API token file “%s”: %s"),
                   path, g_strerror (saved_errno));
      return NULL;
    }

  return read_token_file (path, error);
}

/**
 * kaged_api_token_equal:
 * @expected: the token
 * @given: (nullable): what a client sent
 *
 * Compares in time that depends only on the length of @expected, so the
 * answer's timing tells nothing about how much of a guess was right.
 *
 * Returns: whether @given is @expected
 */
gboolean
kaged_api_token_equal (const char *expected,
                       const char *given)
{
  gsize expected_len;
  gsize given_len;
  volatile guint8 diff = 0;

  g_return_val_if_fail (expected != NULL, FALSE);

  if (given == NULL)
    given = "";

  expected_len = strlen (expected);
  given_len = strlen (given);

  for (gsize i = 0; i < expected_len; i++)
    {
      guint8 g = i < given_len ? (guint8)given[i] : 0;

      diff |= (guint8)expected[i] ^ g;
    }

  return diff == 0 && expected_len == given_len && expected_len > 0;
}
