/* kaged-api-auth.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * Who may use the local HTTP API: only this computer (a loopback address
 * to listen on, a loopback Host), never a web page (no Origin), and only
 * with the bearer token. All of it is checked once the headers are in,
 * before a body is read; bodies over the size limit are refused early too.
 */

#define G_LOG_DOMAIN "kaged-api"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "kaged-api-auth.h"
#include "kaged-api-server-private.h"
#include "kaged-api-token.h"

/**
 * kaged_api_check_address:
 * @address: an IP address of the loopback interface (`127.0.0.1`, `::1`)
 *   or `localhost`
 * @out_address: (out) (optional) (nullable): the address, or %NULL for
 *   `localhost` (every loopback address)
 *
 * The API listens on this computer only: any other address is refused with
 * %KAGED_API_ERROR_NOT_LOOPBACK.
 *
 * Returns: whether the API may listen on @address
 */
gboolean
kaged_api_check_address (const char    *address,
                         GInetAddress **out_address,
                         GError       **error)
{
  g_autoptr(GInetAddress) inet_address = NULL;

  g_return_val_if_fail (address != NULL, FALSE);

  if (out_address != NULL)
    *out_address = NULL;

  if (g_ascii_strcasecmp (address, "localhost") == 0)
    return TRUE;

  inet_address = g_inet_address_new_from_string (address);
  if (inet_address == NULL)
    {
      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_INVALID_ADDRESS,
                   _("“%s” is not an IP address"), address);
      return FALSE;
    }

  if (!g_inet_address_get_is_loopback (inet_address))
    {
      g_set_error (error, KAGED_API_ERROR, KAGED_API_ERROR_NOT_LOOPBACK,
                   _("The API only listens on this computer (127.0.0.1 or ::1), not on %s"),
                   address);
      return FALSE;
    }

  if (out_address != NULL)
    *out_address = g_steal_pointer (&inet_address);

  return TRUE;
}

static gboolean
host_is_loopback (const char *host)
{
  g_autofree char *name = NULL;
  g_autoptr(GInetAddress) address = NULL;
  const char *end;

  if (host == NULL)
    return TRUE;

  if (host[0] == '[')
    {
      end = strchr (host, ']');
      if (end == NULL)
        return FALSE;
      name = g_strndup (host + 1, end - host - 1);
    }
  else
    {
      end = strchr (host, ':');
      name = end != NULL ? g_strndup (host, end - host) : g_strdup (host);
    }

  if (g_ascii_strcasecmp (name, "localhost") == 0)
    return TRUE;

  address = g_inet_address_new_from_string (name);

  return address != NULL && g_inet_address_get_is_loopback (address);
}

static const char *
bearer_token (SoupMessageHeaders *headers)
{
  const char *value = soup_message_headers_get_one (headers, "Authorization");

  if (value == NULL || g_ascii_strncasecmp (value, "Bearer ", strlen ("Bearer ")) != 0)
    return NULL;

  value += strlen ("Bearer ");
  while (*value == ' ')
    value++;

  return value;
}

static void
request_got_chunk_cb (SoupServerMessage *msg,
                      GBytes            *chunk,
                      KagedApiServer    *self)
{
  SoupMessageBody *body = soup_server_message_get_request_body (msg);

  if (soup_server_message_get_status (msg) != 0)
    return;

  if ((guint64)body->length > self->max_body_size)
    {
      g_autofree char *limit = g_format_size (self->max_body_size);
      g_autofree char *message = g_strdup_printf (_("The request body is larger than %s"), limit);

      kaged_api_connections_refuse (self, msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE,
                                    "payload_too_large", message);
      return;
    }

  kaged_api_connections_body_progress (self, msg);
}

/* Runs once the headers are in, before the body is read. Whatever is
 * refused here is answered at once, and its connection closed. */
void
kaged_api_auth_early_handler (SoupServer        *server,
                              SoupServerMessage *msg,
                              const char        *path,
                              GHashTable        *query,
                              gpointer           user_data)
{
  KagedApiServer *self = user_data;
  SoupMessageHeaders *headers = soup_server_message_get_request_headers (msg);
  const char *fetch_site;
  SoupEncoding encoding;
  goffset length = 0;

  if (soup_message_headers_get_one (headers, "Origin") != NULL ||
      ((fetch_site = soup_message_headers_get_one (headers, "Sec-Fetch-Site")) != NULL &&
       !g_str_equal (fetch_site, "none")))
    {
      kaged_api_connections_refuse (self, msg, SOUP_STATUS_FORBIDDEN, "forbidden_origin",
                                    _("Requests from web pages are not accepted"));
      return;
    }

  if (!host_is_loopback (soup_message_headers_get_one (headers, "Host")))
    {
      kaged_api_connections_refuse (self, msg, SOUP_STATUS_FORBIDDEN, "forbidden_host",
                                    _("Requests must name this computer as their host"));
      return;
    }

  if (!kaged_api_token_equal (self->token, bearer_token (headers)))
    {
      soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                    "WWW-Authenticate", "Bearer realm=\"kaged\"");
      kaged_api_connections_refuse (self, msg, SOUP_STATUS_UNAUTHORIZED, "unauthorized",
                                    _("A valid bearer token is needed"));
      return;
    }

  /* Where one body ends and the next request starts must be beyond doubt. */
  if (soup_message_headers_get_one (headers, "Transfer-Encoding") != NULL &&
      soup_message_headers_get_one (headers, "Content-Length") != NULL)
    {
      kaged_api_connections_refuse (self, msg, SOUP_STATUS_BAD_REQUEST, "invalid_framing",
                                    _("A request may not have both Transfer-Encoding and Content-Length"));
      return;
    }

  encoding = soup_message_headers_get_encoding (headers);
  if (encoding == SOUP_ENCODING_CONTENT_LENGTH)
    length = soup_message_headers_get_content_length (headers);

  /* libsoup reads "-5" (or a number past 2^63) as a negative length. */
  if (length < 0)
    {
      kaged_api_connections_refuse (self, msg, SOUP_STATUS_BAD_REQUEST, "invalid_framing",
                                    _("The Content-Length is not a length"));
      return;
    }

  if ((guint64)length > self->max_body_size)
    {
      g_autofree char *limit = g_format_size (self->max_body_size);
      g_autofree char *message = g_strdup_printf (_("The request body is larger than %s"), limit);

      kaged_api_connections_refuse (self, msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE,
                                    "payload_too_large", message);
      return;
    }

  g_signal_connect_object (msg, "got-chunk", G_CALLBACK (request_got_chunk_cb), self, 0);

  if (length > 0 || encoding == SOUP_ENCODING_CHUNKED)
    kaged_api_connections_await_body (self, msg);
}
