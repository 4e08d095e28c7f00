/* kaged-models.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-models"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

#include "kaged-classify.h"
#include "kaged-http.h"
#include "kaged-json.h"
#include "kaged-models.h"
#include "kaged-retry-class.h"

/*
 * The models a profile's server offers, asked with the cheapest request each
 * API has: `GET {base}/models` (OpenAI-compatible, the base ending in /v1),
 * `GET {base}/v1/models` (Anthropic) and `GET {base}/api/tags` (Ollama).
 * The key is found the way a run finds it and sent the way a run sends it.
 * Failures are classified exactly as a run's are, so a wrong key reads
 * auth_failed, a wrong address invalid_request (404) or network (nothing
 * listening), and the Test Connection of a profile is that same request.
 */

#define ANTHROPIC_VERSION "2023-06-01"

typedef struct
{
  KagedProfile  *profile;
  KagedResolver *resolver;
  SoupMessage   *message;
  GInputStream  *stream;
  GByteArray    *body;
  GCancellable  *cancellable;  /* cancelled by the caller's or the deadline */
  GSource       *deadline;
  char          *key;
  gulong         cancelled_id;
  GCancellable  *outer;
  guint          timed_out : 1;
  guint          truncated : 1;
} ListState;

static void
list_state_free (ListState *state)
{
  if (state->deadline != NULL)
    {
      g_source_destroy (state->deadline);
      g_clear_pointer (&state->deadline, g_source_unref);
    }
  if (state->outer != NULL)
    g_cancellable_disconnect (state->outer, state->cancelled_id);
  g_clear_object (&state->outer);
  g_clear_object (&state->profile);
  g_clear_object (&state->resolver);
  g_clear_object (&state->message);
  g_clear_object (&state->stream);
  g_clear_pointer (&state->body, g_byte_array_unref);
  g_clear_object (&state->cancellable);
  g_clear_pointer (&state->key, kaged_keyring_free_key);
  g_free (state);
}

static const char *
display_name (KagedProfile *profile)
{
  const char *name = kaged_profile_get_name (profile);

  return name != NULL ? name : "";
}

static char *
build_url (KagedProfile *profile)
{
  const char *base = kaged_profile_get_base_url (profile);
  g_autofree char *trimmed = g_strdup (base != NULL ? base : "");
  gsize len = strlen (trimmed);

  while (len > 0 && trimmed[len - 1] == '/')
    trimmed[--len] = '\0';

  switch (kaged_profile_get_kind (profile))
    {
    case KAGED_PROVIDER_KIND_OPENAI:
      return g_strconcat (trimmed, "/models", NULL);

    case KAGED_PROVIDER_KIND_ANTHROPIC:
      return g_strconcat (trimmed, "/v1/models?limit=1000", NULL);

    case KAGED_PROVIDER_KIND_OLLAMA:
    default:
      return g_strconcat (trimmed, "/api/tags", NULL);
    }
}

static void
add_headers (KagedProviderKind   kind,
             SoupMessageHeaders *headers,
             const char         *key)
{
  soup_message_headers_replace (headers, "Accept", "application/json");

  if (kind == KAGED_PROVIDER_KIND_ANTHROPIC)
    {
      soup_message_headers_replace (headers, "anthropic-version", ANTHROPIC_VERSION);
      if (key != NULL)
        soup_message_headers_replace (headers, "x-api-key", key);
    }
  else if (key != NULL)
    {
      g_autofree char *bearer = g_strconcat ("Bearer ", key, NULL);

      soup_message_headers_replace (headers, "Authorization", bearer);
      memset (bearer, 0, strlen (bearer));
    }
}

static int
compare_names (gconstpointer a,
               gconstpointer b)
{
  return g_strcmp0 (*(const char * const *)a, *(const char * const *)b);
}

/**
 * kaged_models_parse:
 * @kind: the API that answered
 * @body: (array length=len): a model list as that API sends it
 *
 * Returns: (transfer full): the model names, sorted, each once; or %NULL
 *   with a `protocol_error` when @body is not such a list
 */
char **
kaged_models_parse (KagedProviderKind   kind,
                    const char         *body,
                    gsize               len,
                    GError            **error)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *repaired = NULL;
  gsize repaired_length = 0;
  const char *array_name = kind == KAGED_PROVIDER_KIND_OLLAMA ? "models" : "data";
  JsonNode *root;
  JsonObject *object;
  JsonArray *array;

  /* A list nested deeper than any server's is refused unparsed; names
   * keep their text when a byte or an escape is wrong. */
  if (body != NULL && len > 0 && len <= G_MAXSSIZE &&
      !kaged_json_nested_deeper (body, len, KAGED_JSON_MAX_DEPTH))
    repaired = kaged_json_repair (body, len, &repaired_length);
  else
    len = 0;
  if (repaired != NULL)
    {
      body = repaired;
      len = repaired_length;
    }

  if (body == NULL || len == 0 ||
      !json_parser_load_from_data (parser, body, len, NULL) ||
      (root = json_parser_get_root (parser)) == NULL ||
      !JSON_NODE_HOLDS_OBJECT (root) ||
      (object = json_node_get_object (root)) == NULL ||
      !json_object_has_member (object, array_name) ||
      !JSON_NODE_HOLDS_ARRAY (json_object_get_member (object, array_name)))
    {
      g_propagate_error (error,
                         kaged_provider_error_new (KAGED_RETRY_CLASS_PROTOCOL_ERROR, "%s",
                                                   _("The server did not answer with a list of models")));
      return NULL;
    }

  array = json_object_get_array_member (object, array_name);
  for (guint i = 0; i < json_array_get_length (array); i++)
    {
      JsonNode *node = json_array_get_element (array, i);
      JsonObject *entry;
      const char *name = NULL;

      if (!JSON_NODE_HOLDS_OBJECT (node))
        continue;
      entry = json_node_get_object (node);

      if (kind == KAGED_PROVIDER_KIND_OLLAMA)
        {
          name = json_object_get_string_member_with_default (entry, "name", NULL);
          if (name == NULL)
            name = json_object_get_string_member_with_default (entry, "model", NULL);
        }
      else
        {
          name = json_object_get_string_member_with_default (entry, "id", NULL);
        }

      if (name != NULL && name[0] != '\0' && g_utf8_validate (name, -1, NULL))
        g_ptr_array_add (names, g_strdup (name));
    }

  g_ptr_array_sort (names, compare_names);
  for (guint i = 1; i < names->len; )
    {
      if (g_str_equal (g_ptr_array_index (names, i - 1), g_ptr_array_index (names, i)))
        g_ptr_array_remove_index (names, i);
      else
        i++;
    }

  g_ptr_array_add (names, NULL);
  return (char **)g_ptr_array_free (g_steal_pointer (&names), FALSE);
}

static void
list_return_error (GTask  *task,
                   GError *error)
{
  ListState *state = g_task_get_task_data (task);

  if (state->key != NULL && error->domain == KAGED_PROVIDER_ERROR)
    kaged_classify_redact (error, state->key);

  g_task_return_error (task, error);
}

static void
list_return_transport_error (GTask        *task,
                             const GError *error)
{
  ListState *state = g_task_get_task_data (task);

  if (state->timed_out)
    list_return_error (task,
                       kaged_provider_error_new (KAGED_RETRY_CLASS_TIMEOUT,
                                                 _("The server at “%s” did not answer in time"),
                                                 kaged_profile_get_base_url (state->profile)));
  else if (state->outer != NULL && g_cancellable_is_cancelled (state->outer))
    g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "%s",
                             _("The operation was cancelled"));
  else
    list_return_error (task, kaged_classify_transport_error (error));
}

static void
list_complete (GTask *task)
{
  ListState *state = g_task_get_task_data (task);
  guint status = soup_message_get_status (state->message);
  g_autoptr(GError) error = NULL;
  char **models;

  if (status != SOUP_STATUS_OK)
    {
      error = kaged_classify_http_error (status,
                                         soup_message_get_response_headers (state->message),
                                         (const char *)state->body->data, state->body->len,
                                         g_get_real_time () / 1000);
      list_return_error (task, g_steal_pointer (&error));
      return;
    }

  if (state->truncated)
    {
      list_return_error (task,
                         kaged_provider_error_new (KAGED_RETRY_CLASS_PROTOCOL_ERROR, "%s",
                                                   _("The list of models is too large")));
      return;
    }

  models = kaged_models_parse (kaged_profile_get_kind (state->profile),
                               (const char *)state->body->data, state->body->len, &error);
  if (models == NULL)
    {
      list_return_error (task, g_steal_pointer (&error));
      return;
    }

  g_debug ("Profile “%s”: %u models", display_name (state->profile), g_strv_length (models));
  g_task_return_pointer (task, models, (GDestroyNotify)g_strfreev);
}

static void
read_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  ListState *state = g_task_get_task_data (task);
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GError) error = NULL;
  gsize len;

  bytes = g_input_stream_read_bytes_finish (G_INPUT_STREAM (object), result, &error);
  if (bytes == NULL)
    {
      list_return_transport_error (task, error);
      return;
    }

  len = g_bytes_get_size (bytes);
  if (len == 0)
    {
      list_complete (task);
      return;
    }

  if (state->body->len + len > KAGED_MODELS_MAX_BODY)
    {
      state->truncated = TRUE;
      list_complete (task);
      return;
    }

  g_byte_array_append (state->body, g_bytes_get_data (bytes, NULL), len);
  g_input_stream_read_bytes_async (state->stream, KAGED_HTTP_READ_SIZE, G_PRIORITY_DEFAULT,
                                   state->cancellable, read_cb, g_steal_pointer (&task));
}

static void
send_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  ListState *state = g_task_get_task_data (task);
  g_autoptr(GError) error = NULL;

  state->stream = soup_session_send_finish (SOUP_SESSION (object), result, &error);
  if (state->stream == NULL)
    {
      list_return_transport_error (task, error);
      return;
    }

  g_input_stream_read_bytes_async (state->stream, KAGED_HTTP_READ_SIZE, G_PRIORITY_DEFAULT,
                                   state->cancellable, read_cb, g_steal_pointer (&task));
}

static gboolean
deadline_cb (gpointer user_data)
{
  ListState *state = user_data;

  state->timed_out = TRUE;
  g_cancellable_cancel (state->cancellable);
  g_clear_pointer (&state->deadline, g_source_unref);

  return G_SOURCE_REMOVE;
}

static void
outer_cancelled_cb (GCancellable *outer,
                    GCancellable *inner)
{
  g_cancellable_cancel (inner);
}

static void
key_cb (GObject      *object,
        GAsyncResult *result,
        gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  ListState *state = g_task_get_task_data (task);
  KagedProviderKind kind = kaged_profile_get_kind (state->profile);
  const char *base_url = kaged_profile_get_base_url (state->profile);
  g_autoptr(GError) error = NULL;
  g_autofree char *url = NULL;
  g_autoptr(GUri) uri = NULL;

  state->key = kaged_resolver_lookup_key_finish (KAGED_RESOLVER (object), result, &error);
  if (error != NULL)
    {
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }

  if (state->key == NULL && kaged_provider_kind_needs_key (kind, base_url))
    {
      const char *env = kaged_profile_get_api_key_env (state->profile);

      if (env != NULL && env[0] != '\0')
        error = kaged_provider_error_new (KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED,
                                          _("No API key for the profile “%s”: set the environment variable %s or store a key in Preferences"),
                                          display_name (state->profile), env);
      else
        error = kaged_provider_error_new (KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED,
                                          _("No API key for the profile “%s”: store a key in Preferences"),
                                          display_name (state->profile));
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }

  url = build_url (state->profile);
  uri = g_uri_parse (url, SOUP_HTTP_URI_FLAGS, NULL);
  state->message = soup_message_new_from_uri (SOUP_METHOD_GET, uri);
  add_headers (kind, soup_message_get_request_headers (state->message), state->key);

  state->cancellable = g_cancellable_new ();
  if (state->outer != NULL)
    state->cancelled_id = g_cancellable_connect (state->outer, G_CALLBACK (outer_cancelled_cb),
                                                 g_object_ref (state->cancellable), g_object_unref);

  state->deadline = g_timeout_source_new (KAGED_MODELS_TIMEOUT_MS);
  g_source_set_static_name (state->deadline, "[kaged] model list deadline");
  g_source_set_callback (state->deadline, deadline_cb, state, NULL);
  g_source_attach (state->deadline, g_task_get_context (task));

  soup_session_send_async (kaged_resolver_get_session (state->resolver), state->message,
                           G_PRIORITY_DEFAULT, state->cancellable, send_cb,
                           g_steal_pointer (&task));
}

static gboolean
check_address (KagedProfile  *profile,
               GError       **error)
{
  g_autofree char *url = build_url (profile);
  g_autoptr(GUri) uri = g_uri_parse (url, SOUP_HTTP_URI_FLAGS, NULL);

  if (uri == NULL ||
      (g_ascii_strcasecmp (g_uri_get_scheme (uri), "http") != 0 &&
       g_ascii_strcasecmp (g_uri_get_scheme (uri), "https") != 0) ||
      g_uri_get_host (uri) == NULL || g_uri_get_host (uri)[0] == '\0')
    {
      const char *base_url = kaged_profile_get_base_url (profile);

      g_propagate_error (error,
                         kaged_provider_error_new (KAGED_RETRY_CLASS_INVALID_REQUEST,
                                                   _("The address “%s” of the profile “%s” is not an HTTP or HTTPS URL"),
                                                   base_url != NULL ? base_url : "",
                                                   display_name (profile)));
      return FALSE;
    }

  return TRUE;
}

/**
 * kaged_profile_list_models_async:
 * @resolver: finds the key and gives the HTTP session
 *
 * Asks @self's server which models it offers. Nothing blocks: the key is
 * looked up the way a run does it, the answer is read in pieces, at most
 * %KAGED_MODELS_MAX_BODY of it, and the whole request may take
 * %KAGED_MODELS_TIMEOUT_MS.
 */
void
kaged_profile_list_models_async (KagedProfile        *self,
                                 KagedResolver       *resolver,
                                 GCancellable        *cancellable,
                                 GAsyncReadyCallback  callback,
                                 gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  g_autoptr(GError) error = NULL;
  ListState *state;

  g_return_if_fail (KAGED_IS_PROFILE (self));
  g_return_if_fail (KAGED_IS_RESOLVER (resolver));
  g_return_if_fail (!cancellable || G_IS_CANCELLABLE (cancellable));

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_profile_list_models_async);

  state = g_new0 (ListState, 1);
  state->profile = g_object_ref (self);
  state->resolver = g_object_ref (resolver);
  state->body = g_byte_array_new ();
  state->outer = cancellable != NULL ? g_object_ref (cancellable) : NULL;
  g_task_set_task_data (task, state, (GDestroyNotify)list_state_free);

  if (g_task_return_error_if_cancelled (task))
    return;

  if (!check_address (self, &error))
    {
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }

  kaged_resolver_lookup_key_async (resolver, self, cancellable, key_cb, g_steal_pointer (&task));
}

/**
 * kaged_profile_list_models_finish:
 *
 * Returns: (transfer full): the model names, sorted; or %NULL with a
 *   %KAGED_PROVIDER_ERROR classified as a run's failure would be, or
 *   %G_IO_ERROR_CANCELLED
 */
char **
kaged_profile_list_models_finish (KagedProfile  *self,
                                  GAsyncResult  *result,
                                  GError       **error)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), NULL);
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_profile_list_models_async, NULL);

  return g_task_propagate_pointer (G_TASK (result), error);
}

/* ---------------------------------------------------------------------------
 * Test Connection
 * ------------------------------------------------------------------------- */

struct _KagedConnectionResult
{
  GObject          parent_instance;

  KagedRetryClass  retry_class;
  guint            http_status;
  char            *message;
  char           **models;
  guint            ok : 1;
};

G_DEFINE_FINAL_TYPE (KagedConnectionResult, kaged_connection_result, G_TYPE_OBJECT)

static void
kaged_connection_result_finalize (GObject *object)
{
  KagedConnectionResult *self = (KagedConnectionResult *)object;

  g_clear_pointer (&self->message, g_free);
  g_clear_pointer (&self->models, g_strfreev);

  G_OBJECT_CLASS (kaged_connection_result_parent_class)->finalize (object);
}

static void
kaged_connection_result_class_init (KagedConnectionResultClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = kaged_connection_result_finalize;
}

static void
kaged_connection_result_init (KagedConnectionResult *self)
{
}

static void
test_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  g_autoptr(KagedConnectionResult) outcome = NULL;
  g_autoptr(GError) error = NULL;
  char **models;

  models = kaged_profile_list_models_finish (KAGED_PROFILE (object), result, &error);
  if (models == NULL && error->domain != KAGED_PROVIDER_ERROR)
    {
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }

  outcome = g_object_new (KAGED_TYPE_CONNECTION_RESULT, NULL);
  if (models != NULL)
    {
      outcome->ok = TRUE;
      outcome->models = models;
    }
  else
    {
      const char *said = kaged_provider_error_get_provider_message (error);

      outcome->retry_class = kaged_provider_error_get_retry_class (error);
      outcome->http_status = kaged_provider_error_get_http_status (error);
      outcome->message = g_strdup (said != NULL && said[0] != '\0' ? said : error->message);
    }

  g_task_return_pointer (task, g_steal_pointer (&outcome), g_object_unref);
}

/**
 * kaged_profile_test_connection_async:
 *
 * Tries @self with its cheapest real request, the model list.
 */
void
kaged_profile_test_connection_async (KagedProfile        *self,
                                     KagedResolver       *resolver,
                                     GCancellable        *cancellable,
                                     GAsyncReadyCallback  callback,
                                     gpointer             user_data)
{
  GTask *task;

  g_return_if_fail (KAGED_IS_PROFILE (self));
  g_return_if_fail (KAGED_IS_RESOLVER (resolver));

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_profile_test_connection_async);

  kaged_profile_list_models_async (self, resolver, cancellable, test_cb, task);
}

/**
 * kaged_profile_test_connection_finish:
 *
 * Returns: (transfer full): what the test found, a failure included; %NULL
 *   only with %G_IO_ERROR_CANCELLED
 */
KagedConnectionResult *
kaged_profile_test_connection_finish (KagedProfile  *self,
                                      GAsyncResult  *result,
                                      GError       **error)
{
  g_return_val_if_fail (KAGED_IS_PROFILE (self), NULL);
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_profile_test_connection_async, NULL);

  return g_task_propagate_pointer (G_TASK (result), error);
}

gboolean
kaged_connection_result_get_ok (KagedConnectionResult *self)
{
  g_return_val_if_fail (KAGED_IS_CONNECTION_RESULT (self), FALSE);

  return self->ok;
}

/* The class of the failure; meaningless when the test succeeded. */
KagedRetryClass
kaged_connection_result_get_retry_class (KagedConnectionResult *self)
{
  g_return_val_if_fail (KAGED_IS_CONNECTION_RESULT (self), 0);

  return self->retry_class;
}

guint
kaged_connection_result_get_http_status (KagedConnectionResult *self)
{
  g_return_val_if_fail (KAGED_IS_CONNECTION_RESULT (self), 0);

  return self->http_status;
}

/* What the server or the transport said about the failure, or %NULL. */
const char *
kaged_connection_result_get_message (KagedConnectionResult *self)
{
  g_return_val_if_fail (KAGED_IS_CONNECTION_RESULT (self), NULL);

  return self->message;
}

/* The models found, or %NULL when the test failed. */
const char * const *
kaged_connection_result_get_models (KagedConnectionResult *self)
{
  g_return_val_if_fail (KAGED_IS_CONNECTION_RESULT (self), NULL);

  return (const char * const *)self->models;
}

/**
 * kaged_retry_class_needs_preferences:
 *
 * Returns: whether a failure of @retry_class is mended in a profile's
 *   settings (its key or its address) rather than by waiting
 */
gboolean
kaged_retry_class_needs_preferences (KagedRetryClass retry_class)
{
  return retry_class == KAGED_RETRY_CLASS_AUTH_FAILED ||
         retry_class == KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED;
}

/**
 * kaged_models_failure_needs_preferences:
 * @retry_class: why a model list or a connection test failed
 * @http_status: the status the server answered, or 0
 *
 * Returns: whether the failure is mended in the profile's settings: its
 *   key, or its address when nothing answers there (HTTP 404)
 */
gboolean
kaged_models_failure_needs_preferences (KagedRetryClass retry_class,
                                        guint           http_status)
{
  return kaged_retry_class_needs_preferences (retry_class) ||
         (retry_class == KAGED_RETRY_CLASS_INVALID_REQUEST && http_status == 404);
}

gboolean
kaged_connection_result_needs_preferences (KagedConnectionResult *self)
{
  g_return_val_if_fail (KAGED_IS_CONNECTION_RESULT (self), FALSE);

  if (self->ok)
    return FALSE;

  return kaged_models_failure_needs_preferences (self->retry_class, self->http_status);
}
