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

static void
list_sessions (KagedApiServer    *self,
               SoupServerMessage *msg)
{
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(GPtrArray) sessions = NULL;
  g_autoptr(GError) error = NULL;

  sessions = kaged_store_list_sessions (kaged_core_get_store (self->core), &error);
  if (sessions == NULL)
    {
      kaged_api_respond_engine_error (msg, error);
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
      kaged_api_wire_add_session (builder, session);
    }
  json_builder_end_array (builder);
  json_builder_end_object (builder);

  kaged_api_respond_json (msg, SOUP_STATUS_OK, builder);
}

static void
create_session (KagedApiServer    *self,
                SoupServerMessage *msg)
{
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(JsonObject) object = NULL;
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *location = NULL;
  const char *title = NULL;
  KagedApiSettings settings;

  object = kaged_api_read_body (msg, TRUE, &parser);
  if (object == NULL)
    return;

  if (!kaged_api_read_string_member (msg, object, "title", TRUE, &title) ||
      !kaged_api_settings_read (msg, object, &settings))
    return;

  session = kaged_core_create_session_full (self->core, title, settings.profile, settings.model,
                                            settings.system_prompt, &error);
  if (session == NULL)
    {
      kaged_api_respond_engine_error (msg, error);
      return;
    }

  kaged_api_respond_session (self, msg, session, SOUP_STATUS_CREATED);

  location = g_strdup_printf (KAGED_API_PREFIX "sessions/%" G_GINT64_FORMAT,
                              kaged_session_get_id (session));
  soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                "Location", location);
}

static void
get_session (KagedApiServer       *self,
             SoupServerMessage    *msg,
             const KagedApiTarget *target)
{
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(JsonBuilder) builder = NULL;

  session = lookup_session (self, msg, target->session_id);
  if (session == NULL)
    return;

  kaged_api_respond_session (self, msg, session, SOUP_STATUS_OK);
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
list_messages (KagedApiServer       *self,
               SoupServerMessage    *msg,
               GHashTable           *query,
               const KagedApiTarget *target)
{
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(KagedConversation) conversation = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(GError) error = NULL;
  gboolean include_superseded;
  guint64 after;
  guint64 limit;
  gboolean has_more = FALSE;

  if (!kaged_api_read_bool_parameter (msg, query, "include_superseded", &include_superseded) ||
      !kaged_api_read_int_parameter (msg, query, "after", G_MAXINT64, &after) ||
      !kaged_api_read_int_parameter (msg, query, "limit", MAX_PAGE_SIZE, &limit))
    return;

  session = lookup_session (self, msg, target->session_id);
  if (session == NULL)
    return;

  conversation = kaged_core_open_conversation (self->core, target->session_id, &error);
  if (conversation != NULL)
    messages = read_messages (conversation, include_superseded, (gint64)after, limit,
                              &has_more, &error);
  if (messages == NULL)
    {
      kaged_api_respond_engine_error (msg, error);
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

  kaged_api_respond_json (msg, SOUP_STATUS_OK, builder);
}

static void
post_message (KagedApiServer       *self,
              SoupServerMessage    *msg,
              const KagedApiTarget *target)
{
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(JsonObject) object = NULL;
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  const char *content = NULL;

  object = kaged_api_read_body (msg, FALSE, &parser);
  if (object == NULL)
    return;

  if (!kaged_api_read_string_member (msg, object, "content", FALSE, &content))
    return;

  if (content == NULL)
    {
      kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_request",
                     _("“content” is needed"));
      return;
    }

  receipt = kaged_core_post (self->core, target->session_id, content, &error);
  if (receipt == NULL)
    {
      kaged_api_respond_engine_error (msg, error);
      return;
    }

  builder = json_builder_new ();
  kaged_api_wire_add_receipt (builder, receipt, FALSE);
  kaged_api_respond_json (msg, SOUP_STATUS_ACCEPTED, builder);
}

/* POST …/messages/:mid/edit {content}: the operator message said again. */
static void
edit_message (KagedApiServer       *self,
              SoupServerMessage    *msg,
              const KagedApiTarget *target)
{
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(JsonObject) object = NULL;
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  const char *content = NULL;

  object = kaged_api_read_body (msg, FALSE, &parser);
  if (object == NULL)
    return;

  if (!kaged_api_read_string_member (msg, object, "content", FALSE, &content))
    return;

  if (content == NULL)
    {
      kaged_api_respond_error (msg, SOUP_STATUS_BAD_REQUEST, "invalid_request",
                     _("“content” is needed"));
      return;
    }

  receipt = kaged_core_edit (self->core, target->session_id, target->item_id, content, &error);
  if (receipt == NULL)
    {
      kaged_api_respond_engine_error (msg, error);
      return;
    }

  builder = json_builder_new ();
  kaged_api_wire_add_receipt (builder, receipt, TRUE);
  kaged_api_respond_json (msg, SOUP_STATUS_ACCEPTED, builder);
}

static void
regenerate (KagedApiServer       *self,
            SoupServerMessage    *msg,
            const KagedApiTarget *target)
{
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(KagedReceipt) receipt = NULL;
  g_autoptr(GError) error = NULL;
  SoupMessageBody *body = soup_server_message_get_request_body (msg);

  /* No body is needed; one that is sent must at least be JSON. */
  if (body->length > 0)
    {
      g_autoptr(JsonParser) parser = NULL;
      g_autoptr(JsonObject) object = kaged_api_read_body (msg, TRUE, &parser);

      if (object == NULL)
        return;
    }

  receipt = kaged_core_regenerate_anchor (self->core, target->session_id, target->item_id,
                                          &error);
  if (receipt == NULL)
    {
      kaged_api_respond_engine_error (msg, error);
      return;
    }

  builder = json_builder_new ();
  kaged_api_wire_add_receipt (builder, receipt, TRUE);
  kaged_api_respond_json (msg, SOUP_STATUS_ACCEPTED, builder);
}

static void
get_run (KagedApiServer       *self,
         SoupServerMessage    *msg,
         const KagedApiTarget *target)
{
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(GError) error = NULL;

  run = kaged_session_manager_get_run (self->manager, target->session_id, target->item_id, &error);
  if (run == NULL)
    {
      kaged_api_respond_engine_error (msg, error);
      return;
    }

  builder = json_builder_new ();
  kaged_api_wire_add_run (builder, run);
  kaged_api_respond_json (msg, SOUP_STATUS_OK, builder);
}

static void
cancel_run (KagedApiServer       *self,
            SoupServerMessage    *msg,
            const KagedApiTarget *target)
{
  g_autoptr(GError) error = NULL;

  if (!kaged_core_cancel_run (self->core, target->session_id, target->item_id, &error))
    {
      kaged_api_respond_engine_error (msg, error);
      return;
    }

  get_run (self, msg, target);
}

static void
open_events (KagedApiServer       *self,
             SoupServerMessage    *msg,
             const KagedApiTarget *target)
{
  g_autoptr(KagedSession) session = NULL;

  session = lookup_session (self, msg, target->session_id);
  if (session == NULL)
    return;

  kaged_api_events_open (self, msg, target->session_id);
}

static void
respond_retry (KagedApiServer    *self,
               SoupServerMessage *msg,
               gint64             session_id)
{
  g_autoptr(JsonBuilder) builder = json_builder_new ();

  kaged_api_wire_add_retry (builder, session_id, kaged_core_lookup_retry (self->core, session_id));
  kaged_api_respond_json (msg, SOUP_STATUS_OK, builder);
}

static void
get_retry (KagedApiServer       *self,
           SoupServerMessage    *msg,
           const KagedApiTarget *target)
{
  g_autoptr(KagedSession) session = NULL;

  session = lookup_session (self, msg, target->session_id);
  if (session == NULL)
    return;

  respond_retry (self, msg, target->session_id);
}

/* retry/cancel and retry/now: 409 when Tier 2 is off (`--headless`
 * without `--auto-retry`) or nothing is pending. */
static void
act_on_retry (KagedApiServer       *self,
              SoupServerMessage    *msg,
              const KagedApiTarget *target)
{
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(GError) error = NULL;
  gboolean done;

  session = lookup_session (self, msg, target->session_id);
  if (session == NULL)
    return;

  if (target->route == KAGED_API_ROUTE_RETRY_NOW)
    done = kaged_core_retry_now (self->core, target->session_id, &error);
  else
    done = kaged_core_cancel_retry (self->core, target->session_id, &error);

  if (!done)
    {
      kaged_api_respond_engine_error (msg, error);
      return;
    }

  respond_retry (self, msg, target->session_id);
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
  KagedApiTarget target;

  /* The early handler refused it already. */
  if (soup_server_message_get_status (msg) != 0)
    return;

  if ((guint64)body->length > self->max_body_size)
    {
      kaged_api_respond_error (msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "payload_too_large",
                     _("The request body is too large"));
      return;
    }

  if (!kaged_api_parse_target (path, &target))
    {
      kaged_api_respond_not_found (msg);
      return;
    }

  if (!kaged_api_method_allowed (target.route, method))
    {
      soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                    "Allow", kaged_api_route_allow (target.route));
      kaged_api_respond_error (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "method_not_allowed",
                     _("This method is not allowed here"));
      return;
    }

  switch (target.route)
    {
    case KAGED_API_ROUTE_SESSIONS:
      if (g_str_equal (method, "POST"))
        create_session (self, msg);
      else
        list_sessions (self, msg);
      break;

    case KAGED_API_ROUTE_SESSION:
      if (g_str_equal (method, "PATCH"))
        kaged_api_patch_session (self, msg, &target);
      else
        get_session (self, msg, &target);
      break;

    case KAGED_API_ROUTE_MESSAGES:
      if (g_str_equal (method, "POST"))
        post_message (self, msg, &target);
      else
        list_messages (self, msg, query, &target);
      break;

    case KAGED_API_ROUTE_REGENERATE:
      regenerate (self, msg, &target);
      break;

    case KAGED_API_ROUTE_EDIT:
      edit_message (self, msg, &target);
      break;

    case KAGED_API_ROUTE_RUN:
      get_run (self, msg, &target);
      break;

    case KAGED_API_ROUTE_CANCEL:
      cancel_run (self, msg, &target);
      break;

    case KAGED_API_ROUTE_EVENTS:
      open_events (self, msg, &target);
      break;

    case KAGED_API_ROUTE_RETRY:
      get_retry (self, msg, &target);
      break;

    case KAGED_API_ROUTE_RETRY_CANCEL:
    case KAGED_API_ROUTE_RETRY_NOW:
      act_on_retry (self, msg, &target);
      break;

    default:
      g_assert_not_reached ();
    }

  g_debug ("%s %s → %u", method, path, soup_server_message_get_status (msg));
}
