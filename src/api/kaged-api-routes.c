/* kaged-api-routes.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * The endpoints of the local HTTP API (docs/http-api.md), each a thin
 * layer over the core: posts, regenerates, cancels and Tier 2 retries go
 * through KagedCore as they do from the window.
 */

#define G_LOG_DOMAIN "kaged-api"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-api-server-private.h"
#include "kaged-api-settings.h"
#include "kaged-api-wire.h"
#include "kaged-core-settings.h"

/* Pages of messages hold at most this many. */
#define MAX_PAGE_SIZE      1000

/*
 * Every endpoint is a row of the route table at the end of this file: the
 * route and method it answers, what it needs read first, and its function.
 * The dispatcher reads the body and looks the session up before calling
 * it, so an endpoint starts with what it needs in its KagedApiRequest and
 * only does its own work.
 */
typedef enum
{
  REQUEST_NONE          = 0,
  /* The session of the path must exist (404 otherwise). */
  REQUEST_SESSION       = 1 << 0,
  /* A JSON object body is needed (400 otherwise). */
  REQUEST_BODY          = 1 << 1,
  /* A body may be sent; one that is must be a JSON object. */
  REQUEST_OPTIONAL_BODY = 1 << 2,
} RequestNeeds;

typedef struct
{
  KagedApiServer    *self;
  SoupServerMessage *msg;
  GHashTable        *query;
  KagedApiTarget     target;
  /* With REQUEST_SESSION, else NULL. */
  KagedSession      *session;
  /* With REQUEST_BODY or REQUEST_OPTIONAL_BODY (an empty object when
   * nothing was sent), else NULL. */
  JsonParser        *parser;
  JsonObject        *body;
} KagedApiRequest;

typedef void (*RouteFunc) (KagedApiRequest *request);

typedef struct
{
  KagedApiRoute route;
  const char   *method;
  RequestNeeds  needs;
  RouteFunc     func;
} Route;

static void
request_clear (KagedApiRequest *request)
{
  g_clear_object (&request->session);
  g_clear_pointer (&request->body, json_object_unref);
  g_clear_object (&request->parser);
}

/* Answers @builder's JSON with @status. */
static void
respond (KagedApiRequest *request,
         guint            status,
         JsonBuilder     *builder)
{
  kaged_api_respond_json (request->msg, status, builder);
}

static void
respond_error (KagedApiRequest *request,
               const GError    *error)
{
  kaged_api_respond_engine_error (request->msg, error);
}

/* The string member @name of the body, which must be there. */
static gboolean
read_required_string (KagedApiRequest  *request,
                      const char       *name,
                      const char      **value)
{
  if (!kaged_api_read_string_member (request->msg, request->body, name, FALSE, value))
    return FALSE;

  if (*value == NULL)
    {
      g_autofree char *message = g_strdup_printf (_("“%s” is needed"), name);

      kaged_api_respond_error (request->msg, SOUP_STATUS_BAD_REQUEST, "invalid_request", message);
      return FALSE;
    }

  return TRUE;
}

/* 202 with the receipt of a post, edit or regenerate, or the error that
 * kept it from being made. */
static void
respond_receipt (KagedApiRequest *request,
                 KagedReceipt    *receipt,
                 const GError    *error,
                 gboolean         with_superseded)
{
  g_autoptr(JsonBuilder) builder = NULL;

  if (receipt == NULL)
    {
      respond_error (request, error);
      return;
    }

  builder = json_builder_new ();
  kaged_api_wire_add_receipt (builder, receipt, with_superseded);
  respond (request, SOUP_STATUS_ACCEPTED, builder);
}

static KagedSession *
lookup_session (KagedApiServer    *self,
                SoupServerMessage *msg,
                gint64             session_id)
{
  g_autoptr(GError) error = NULL;
  KagedSession *session;

  session = kaged_store_get_session (kaged_core_get_store (self->core),
                                     session_id, &error);
  if (session == NULL)
    {
      kaged_api_respond_engine_error (msg, error);
      return NULL;
    }

  kaged_session_set_state (session,
                           kaged_session_manager_is_busy (self->manager, session_id)
                             ? KAGED_SESSION_STATE_RUNNING
                             : KAGED_SESSION_STATE_IDLE);

  return session;
}

/* ---------------------------------------------------------------------------
 * The endpoints
 * ------------------------------------------------------------------------- */

static void
list_sessions (KagedApiRequest *request)
{
  KagedApiServer *self = request->self;
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(GPtrArray) sessions = NULL;
  g_autoptr(GError) error = NULL;

  sessions = kaged_store_list_sessions (kaged_core_get_store (self->core), &error);
  if (sessions == NULL)
    {
      respond_error (request, error);
      return;
    }

  builder = json_builder_new ();
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "sessions");
  json_builder_begin_array (builder);
  for (guint i = 0; i < sessions->len; i++)
    {
      KagedSession *session = g_ptr_array_index (sessions, i);

      kaged_session_set_state (session,
                               kaged_session_manager_is_busy (self->manager,
                                                              kaged_session_get_id (session))
                                 ? KAGED_SESSION_STATE_RUNNING
                                 : KAGED_SESSION_STATE_IDLE);
      if (!kaged_api_settings_add_session (self, builder, session, &error))
        {
          respond_error (request, error);
          return;
        }
    }
  json_builder_end_array (builder);
  json_builder_end_object (builder);

  respond (request, SOUP_STATUS_OK, builder);
}

static void
create_session (KagedApiRequest *request)
{
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *location = NULL;
  const char *title = NULL;
  KagedApiSettings settings;

  if (!kaged_api_read_string_member (request->msg, request->body, "title", TRUE, &title) ||
      !kaged_api_settings_read (request->msg, request->body, &settings))
    return;

  session = kaged_core_create_session_full (request->self->core, title, settings.profile,
                                            settings.model, settings.system_prompt, &error);
  if (session == NULL)
    {
      respond_error (request, error);
      return;
    }

  kaged_api_respond_session (request->self, request->msg, session, SOUP_STATUS_CREATED);

  location = g_strdup_printf (KAGED_API_PREFIX "sessions/%" G_GINT64_FORMAT,
                              kaged_session_get_id (session));
  soup_message_headers_replace (soup_server_message_get_response_headers (request->msg),
                                "Location", location);
}

static void
get_session (KagedApiRequest *request)
{
  kaged_api_respond_session (request->self, request->msg, request->session, SOUP_STATUS_OK);
}

static void
patch_session (KagedApiRequest *request)
{
  kaged_api_patch_session (request->self, request->msg, request->session, request->body);
}

/* The messages from the conversation's list, a page from the first after
 * @after (0: from the start); the superseded ones with them when asked. */
static GPtrArray *
read_messages (KagedConversation  *conversation,
               gboolean            include_superseded,
               gint64              after,
               guint64             limit,
               gboolean           *has_more,
               GError            **error)
{
  GListModel *model = G_LIST_MODEL (conversation);
  g_autoptr(GPtrArray) messages = NULL;
  guint start = 0;
  guint end;
  guint n;

  /* @after must be a message of the session, superseded or not. */
  if (after > 0 && !kaged_conversation_find_position (conversation, after, &start, error))
    return NULL;

  if (include_superseded)
    {
      /* One more than asked tells whether another page follows. */
      messages = kaged_conversation_list_all (conversation, after,
                                              limit > 0 ? (guint)limit + 1 : 0, error);
      if (messages == NULL)
        return NULL;

      *has_more = limit > 0 && messages->len > limit;
      if (*has_more)
        g_ptr_array_set_size (messages, (guint)limit);

      return g_steal_pointer (&messages);
    }

  n = g_list_model_get_n_items (model);
  if (after > 0)
    {
      /* A superseded @after stands just before @start, a current one at it. */
      g_autoptr(KagedMessage) first = g_list_model_get_item (model, start);

      if (first != NULL && kaged_message_get_id (first) == after)
        start++;
    }

  end = limit > 0 && limit < n - start ? start + (guint)limit : n;
  *has_more = end < n;

  messages = g_ptr_array_new_full (end - start, g_object_unref);
  for (guint i = start; i < end; i++)
    {
      KagedMessage *message = g_list_model_get_item (model, i);

      if (message == NULL)
        {
          g_set_error (error, KAGED_ENGINE_ERROR, KAGED_ENGINE_ERROR_STORE,
                       _("The messages of session %lld could not be read"),
                       (long long) kaged_conversation_get_session_id (conversation));
          return NULL;
        }
      g_ptr_array_add (messages, message);
    }

  return g_steal_pointer (&messages);
}

static void
list_messages (KagedApiRequest *request)
{
  g_autoptr(KagedConversation) conversation = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(GError) error = NULL;
  gboolean include_superseded;
  guint64 after;
  guint64 limit;
  gboolean has_more = FALSE;

  if (!kaged_api_read_bool_parameter (request->msg, request->query, "include_superseded",
                                      &include_superseded) ||
      !kaged_api_read_int_parameter (request->msg, request->query, "after", G_MAXINT64, &after) ||
      !kaged_api_read_int_parameter (request->msg, request->query, "limit", MAX_PAGE_SIZE, &limit))
    return;

  conversation = kaged_core_open_conversation (request->self->core, request->target.session_id,
                                               &error);
  if (conversation != NULL)
    messages = read_messages (conversation, include_superseded, (gint64)after, limit,
                              &has_more, &error);
  if (messages == NULL)
    {
      respond_error (request, error);
      return;
    }

  builder = json_builder_new ();
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "messages");
  json_builder_begin_array (builder);
  for (guint i = 0; i < messages->len; i++)
    kaged_api_wire_add_message (builder, g_ptr_array_index (messages, i));
  json_builder_end_array (builder);
  json_builder_set_member_name (builder, "has_more");
  json_builder_add_boolean_value (builder, has_more);
  json_builder_end_object (builder);

  respond (request, SOUP_STATUS_OK, builder);
}

static void
post_message (KagedApiRequest *request)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  const char *content = NULL;

  if (!read_required_string (request, "content", &content))
    return;

  receipt = kaged_core_post (request->self->core, request->target.session_id, content, &error);
  respond_receipt (request, receipt, error, FALSE);
}

/* POST …/messages/:mid/edit {content}: the operator message said again. */
static void
edit_message (KagedApiRequest *request)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  const char *content = NULL;

  if (!read_required_string (request, "content", &content))
    return;

  receipt = kaged_core_edit (request->self->core, request->target.session_id,
                             request->target.item_id, content, &error);
  respond_receipt (request, receipt, error, TRUE);
}

static void
regenerate (KagedApiRequest *request)
{
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;

  receipt = kaged_core_regenerate_anchor (request->self->core, request->target.session_id,
                                          request->target.item_id, &error);
  respond_receipt (request, receipt, error, TRUE);
}

static void
get_run (KagedApiRequest *request)
{
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(GError) error = NULL;

  run = kaged_session_manager_get_run (request->self->manager, request->target.session_id,
                                       request->target.item_id, &error);
  if (run == NULL)
    {
      respond_error (request, error);
      return;
    }

  builder = json_builder_new ();
  kaged_api_wire_add_run (builder, run);
  respond (request, SOUP_STATUS_OK, builder);
}

static void
cancel_run (KagedApiRequest *request)
{
  g_autoptr(GError) error = NULL;

  if (!kaged_core_cancel_run (request->self->core, request->target.session_id,
                              request->target.item_id, &error))
    {
      respond_error (request, error);
      return;
    }

  get_run (request);
}

static void
open_events (KagedApiRequest *request)
{
  kaged_api_events_open (request->self, request->msg, request->target.session_id);
}

static void
respond_retry (KagedApiRequest *request)
{
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  gint64 session_id = request->target.session_id;

  kaged_api_wire_add_retry (builder, session_id,
                            kaged_core_lookup_retry (request->self->core, session_id));
  respond (request, SOUP_STATUS_OK, builder);
}

static void
get_retry (KagedApiRequest *request)
{
  respond_retry (request);
}

/* retry/cancel and retry/now: 409 when Tier 2 is off (`--headless`
 * without `--auto-retry`) or nothing is pending. */
static void
act_on_retry (KagedApiRequest *request)
{
  g_autoptr(GError) error = NULL;
  gboolean done;

  if (request->target.route == KAGED_API_ROUTE_RETRY_NOW)
    done = kaged_core_retry_now (request->self->core, request->target.session_id, &error);
  else
    done = kaged_core_cancel_retry (request->self->core, request->target.session_id, &error);

  if (!done)
    {
      respond_error (request, error);
      return;
    }

  respond_retry (request);
}

/* ---------------------------------------------------------------------------
 * Routing
 * ------------------------------------------------------------------------- */

static const Route routes[] = {
  { KAGED_API_ROUTE_SESSIONS,     "GET",  REQUEST_NONE,          list_sessions },
  { KAGED_API_ROUTE_SESSIONS,     "POST", REQUEST_OPTIONAL_BODY, create_session },
  { KAGED_API_ROUTE_SESSION,      "GET",  REQUEST_SESSION,       get_session },
  { KAGED_API_ROUTE_SESSION,      "PATCH", REQUEST_SESSION | REQUEST_BODY, patch_session },
  { KAGED_API_ROUTE_MESSAGES,     "GET",  REQUEST_SESSION,       list_messages },
  { KAGED_API_ROUTE_MESSAGES,     "POST", REQUEST_BODY,          post_message },
  { KAGED_API_ROUTE_REGENERATE,   "POST", REQUEST_OPTIONAL_BODY, regenerate },
  { KAGED_API_ROUTE_EDIT,         "POST", REQUEST_BODY,          edit_message },
  { KAGED_API_ROUTE_RUN,          "GET",  REQUEST_NONE,          get_run },
  { KAGED_API_ROUTE_CANCEL,       "POST", REQUEST_NONE,          cancel_run },
  { KAGED_API_ROUTE_EVENTS,       "GET",  REQUEST_SESSION,       open_events },
  { KAGED_API_ROUTE_RETRY,        "GET",  REQUEST_SESSION,       get_retry },
  { KAGED_API_ROUTE_RETRY_CANCEL, "POST", REQUEST_SESSION,       act_on_retry },
  { KAGED_API_ROUTE_RETRY_NOW,    "POST", REQUEST_SESSION,       act_on_retry },
};

static const Route *
find_route (KagedApiRoute  route,
            const char    *method)
{
  for (guint i = 0; i < G_N_ELEMENTS (routes); i++)
    {
      if (routes[i].route == route && g_str_equal (routes[i].method, method))
        return &routes[i];
    }

  return NULL;
}

/**
 * kaged_api_route_allow:
 *
 * Returns: the methods @route answers, as an `Allow` header lists them
 */
const char *
kaged_api_route_allow (KagedApiRoute route)
{
  static char *allow[KAGED_API_N_ROUTES];

  g_assert (route < KAGED_API_N_ROUTES);

  if (g_once_init_enter (&allow[route]))
    {
      g_autoptr(GString) methods = g_string_new (NULL);

      for (guint i = 0; i < G_N_ELEMENTS (routes); i++)
        {
          if (routes[i].route != route)
            continue;
          if (methods->len > 0)
            g_string_append (methods, ", ");
          g_string_append (methods, routes[i].method);
        }

      g_once_init_leave (&allow[route], g_string_free (g_steal_pointer (&methods), FALSE));
    }

  return allow[route];
}

gboolean
kaged_api_method_allowed (KagedApiRoute  route,
                          const char    *method)
{
  return find_route (route, method) != NULL;
}

/* Reads what @route needs into @request; answers and returns %FALSE when
 * that cannot be had. */
static gboolean
request_prepare (KagedApiRequest *request,
                 const Route     *route)
{
  SoupMessageBody *body = soup_server_message_get_request_body (request->msg);

  if ((route->needs & REQUEST_BODY) != 0 ||
      ((route->needs & REQUEST_OPTIONAL_BODY) != 0 && body->length > 0))
    {
      request->body = kaged_api_read_body (request->msg, FALSE, &request->parser);
      if (request->body == NULL)
        return FALSE;
    }
  else if ((route->needs & REQUEST_OPTIONAL_BODY) != 0)
    request->body = json_object_new ();

  if ((route->needs & REQUEST_SESSION) != 0)
    {
      request->session = lookup_session (request->self, request->msg, request->target.session_id);
      if (request->session == NULL)
        return FALSE;
    }

  return TRUE;
}

void
kaged_api_routes_handler (SoupServer        *server,
                          SoupServerMessage *msg,
                          const char        *path,
                          GHashTable        *query,
                          gpointer           user_data)
{
  KagedApiServer *self = user_data;
  SoupMessageBody *body = soup_server_message_get_request_body (msg);
  const char *method = soup_server_message_get_method (msg);
  KagedApiRequest request = { self, msg, query, };
  const Route *route;

  /* The early handler refused it already. */
  if (soup_server_message_get_status (msg) != 0)
    return;

  if ((guint64)body->length > self->max_body_size)
    {
      kaged_api_respond_error (msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "payload_too_large",
                               _("The request body is too large"));
      return;
    }

  if (!kaged_api_parse_target (path, &request.target))
    {
      kaged_api_respond_not_found (msg);
      return;
    }

  route = find_route (request.target.route, method);
  if (route == NULL)
    {
      soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                    "Allow", kaged_api_route_allow (request.target.route));
      kaged_api_respond_error (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "method_not_allowed",
                               _("This method is not allowed here"));
      return;
    }

  if (request_prepare (&request, route))
    route->func (&request);
  request_clear (&request);

  g_debug ("%s %s → %u", method, path, soup_server_message_get_status (msg));
}
