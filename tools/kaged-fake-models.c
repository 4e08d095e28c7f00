/* kaged-fake-models.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * The fake provider's model lists: `GET /v1/models` (OpenAI-compatible, or
 * Anthropic when the request carries `anthropic-version`) and
 * `GET /api/tags` (Ollama), in each API's format. With a key set, a
 * request without it (`Authorization: Bearer KEY`, or `x-api-key: KEY` for
 * Anthropic) is answered 401 in the API's error format. Any other GET that
 * no scenario path names is answered 404, as a server at a wrong base URL
 * would.
 */

#define G_LOG_DOMAIN "kaged-fake-server"

#include "config.h"

#include <string.h>

#include "kaged-fake-models.h"

typedef enum
{
  LIST_OPENAI,
  LIST_ANTHROPIC,
  LIST_OLLAMA,
} ListKind;

static void
respond (SoupServerMessage *msg,
         guint              status,
         JsonObject        *object)
{
  g_autoptr(JsonNode) node = json_node_init_object (json_node_alloc (), object);
  g_autofree char *json = json_to_string (node, FALSE);

  soup_server_message_set_status (msg, status, NULL);
  soup_server_message_set_response (msg, "application/json", SOUP_MEMORY_COPY,
                                    json, strlen (json));
}

static void
respond_unauthorized (SoupServerMessage *msg,
                      ListKind           kind)
{
  g_autoptr(JsonObject) object = json_object_new ();
  JsonObject *error;

  switch (kind)
    {
    case LIST_ANTHROPIC:
      error = json_object_new ();
      json_object_set_string_member (error, "type", "authentication_error");
      json_object_set_string_member (error, "message", "invalid x-api-key");
      json_object_set_string_member (object, "type", "error");
      json_object_set_object_member (object, "error", error);
      json_object_set_string_member (object, "request_id", "req_fake_models");
      break;

    case LIST_OLLAMA:
      json_object_set_string_member (object, "error", "unauthorized");
      break;

    case LIST_OPENAI:
    default:
      error = json_object_new ();
      json_object_set_string_member (error, "message", "Incorrect API key provided.");
      json_object_set_string_member (error, "type", "invalid_request_error");
      json_object_set_null_member (error, "param");
      json_object_set_string_member (error, "code", "invalid_api_key");
      json_object_set_object_member (object, "error", error);
      break;
    }

  respond (msg, SOUP_STATUS_UNAUTHORIZED, object);
}

static void
respond_list (SoupServerMessage  *msg,
              ListKind            kind,
              const char * const *models)
{
  g_autoptr(JsonObject) object = json_object_new ();
  JsonArray *array = json_array_new ();

  for (guint i = 0; models != NULL && models[i] != NULL; i++)
    {
      JsonObject *entry = json_object_new ();

      switch (kind)
        {
        case LIST_ANTHROPIC:
          json_object_set_string_member (entry, "type", "model");
          json_object_set_string_member (entry, "id", models[i]);
          json_object_set_string_member (entry, "display_name", models[i]);
          json_object_set_string_member (entry, "created_at", "2026-01-01T00:00:00Z");
          break;

        case LIST_OLLAMA:
          json_object_set_string_member (entry, "name", models[i]);
          json_object_set_string_member (entry, "model", models[i]);
          json_object_set_string_member (entry, "modified_at", "2026-01-01T00:00:00Z");
          json_object_set_int_member (entry, "size", 1000000 + i);
          break;

        case LIST_OPENAI:
        default:
          json_object_set_string_member (entry, "id", models[i]);
          json_object_set_string_member (entry, "object", "model");
          json_object_set_int_member (entry, "created", 1767225600);
          json_object_set_string_member (entry, "owned_by", "kaged-fake-provider");
          break;
        }

      json_array_add_object_element (array, entry);
    }

  if (kind == LIST_OLLAMA)
    {
      json_object_set_array_member (object, "models", array);
    }
  else
    {
      if (kind == LIST_OPENAI)
        json_object_set_string_member (object, "object", "list");
      json_object_set_array_member (object, "data", array);
      if (kind == LIST_ANTHROPIC)
        json_object_set_boolean_member (object, "has_more", FALSE);
    }

  respond (msg, SOUP_STATUS_OK, object);
}

static gboolean
authorized (SoupMessageHeaders *headers,
            ListKind            kind,
            const char         *key)
{
  g_autofree char *bearer = NULL;

  if (key == NULL)
    return TRUE;

  if (kind == LIST_ANTHROPIC)
    return g_strcmp0 (soup_message_headers_get_one (headers, "x-api-key"), key) == 0;

  bearer = g_strconcat ("Bearer ", key, NULL);
  return g_strcmp0 (soup_message_headers_get_one (headers, "Authorization"), bearer) == 0;
}

/**
 * kaged_fake_models_handle:
 * @msg: a GET request no scenario path names
 * @models: the model names to list
 * @key: (nullable): the key a request must carry
 *
 * Answers @msg with a model list, a 401 or a 404.
 */
void
kaged_fake_models_handle (SoupServerMessage  *msg,
                          const char         *path,
                          const char * const *models,
                          const char         *key)
{
  SoupMessageHeaders *headers = soup_server_message_get_request_headers (msg);
  ListKind kind;

  if (g_str_equal (path, "/api/tags"))
    kind = LIST_OLLAMA;
  else if (g_str_equal (path, "/v1/models") &&
           soup_message_headers_get_one (headers, "anthropic-version") != NULL)
    kind = LIST_ANTHROPIC;
  else if (g_str_equal (path, "/v1/models"))
    kind = LIST_OPENAI;
  else
    {
      g_autoptr(JsonObject) object = json_object_new ();

      json_object_set_string_member (object, "error", "404 page not found");
      respond (msg, SOUP_STATUS_NOT_FOUND, object);
      return;
    }

  if (!authorized (headers, kind, key))
    {
      respond_unauthorized (msg, kind);
      return;
    }

  respond_list (msg, kind, models);
}
