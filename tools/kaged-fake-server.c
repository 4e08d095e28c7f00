/* kaged-fake-server.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * A scripted LLM provider on 127.0.0.1 for tests and for people who want
 * to watch Kaged retry. The scenario is JSON:
 *
 *   { "steps": [STEP, …], "repeat_last": true,
 *     "paths": { "/v1/messages": [STEP, …] | { "steps": […], "repeat_last": false } } }
 *
 * or a bare array of steps. Each request to a path consumes the next step of
 * that path's list (or of the top-level list when the path has none); once
 * the list is used up the last step answers again (unless repeat_last is
 * false: then 500). The full description is scenario_help below; it is also
 * what `kaged-fake-provider --help` prints.
 *
 * Requests are counted when their body has been read, before the step is
 * chosen. Requests under /__fake/ are the server's own (stats, reset,
 * scenario) and are not counted.
 */

#define G_LOG_DOMAIN "kaged-fake-server"

#include "config.h"

#include <string.h>

#include <libsoup/soup.h>

#include "kaged-fake-server.h"

static const char scenario_help[] =
  "Scenario file (JSON)\n"
  "  { \"steps\": [STEP, ...], \"repeat_last\": true,\n"
  "    \"paths\": { \"/v1/messages\": [STEP, ...] } }\n"
  "  or a bare array of steps. Each request consumes the next step of its\n"
  "  path's list (or of \"steps\"); when the list is used up the last step\n"
  "  repeats, or, with \"repeat_last\": false, the server answers 500.\n"
  "\n"
  "STEP fields (all optional):\n"
  "  status            HTTP status (default 200)\n"
  "  headers           object of response headers, e.g. {\"retry-after\": \"120\"}\n"
  "  content_type      Content-Type of the answer\n"
  "  body              the whole body: a string, or any JSON value\n"
  "  chunks            streamed body: an array of strings, or of objects\n"
  "                    {\"data\": STRING} | {\"sse\": JSON, \"event\": NAME} |\n"
  "                    {\"line\": JSON}, each with an optional \"delay_ms\"\n"
  "  delay_ms          wait before each chunk of a stream, or before a body\n"
  "  headers_delay_ms  wait before the status line and headers\n"
  "  cut_after_bytes   close the connection after this many body bytes\n"
  "  cut_after_chunks  close the connection after this many chunks\n"
  "  hang              true: never answer, until the client goes away\n"
  "  hang_after_chunks stream this many chunks, then go silent\n"
  "  repeat_chunks     true: after the last chunk start again from the first,\n"
  "                    until the client goes away (a stream without end)\n"
  "\n"
  "Generated streams in a provider's wire format:\n"
  "  kind              \"openai\" | \"anthropic\" | \"ollama\"\n"
  "  text              the reply, split into \"chunks\" (a number, default 3)\n"
  "                    content deltas\n"
  "  usage             {\"input_tokens\": N, \"output_tokens\": N}\n"
  "  finish_reason     default stop (openai, ollama) or end_turn (anthropic)\n"
  "  stream_error      a JSON value sent as the format's in-stream error after\n"
  "                    \"error_after\" content deltas (default 0); the stream\n"
  "                    then ends without a finish\n"
  "  For example {\"kind\": \"openai\", \"text\": \"Hello there\", \"chunks\": 20,\n"
  "  \"delay_ms\": 5, \"usage\": {\"input_tokens\": 9, \"output_tokens\": 3}}.\n"
  "\n"
  "The server's own paths (not counted):\n"
  "  GET  /__fake/stats     {\"total\", \"paths\": {PATH: N}, \"connections\": N,\n"
  "                          \"requests\": [...]}\n"
  "  POST /__fake/reset     forget requests, restart every step list\n"
  "  POST /__fake/scenario  replace the scenario with the request body\n"
  "\n"
  "Point a Kaged profile's base URL at the address printed on start-up: every\n"
  "path is answered from \"steps\" unless \"paths\" names it. Examples are in\n"
  "tools/scenarios/ of the source tree (overloaded-then-ok.json,\n"
  "rate-limited-long.json, quota-50min.json, ...).\n";

typedef struct
{
  GPtrArray *steps;       /* JsonObject */
  guint      next;
  guint      repeat_last : 1;
} StepQueue;

typedef struct
{
  char               *method;
  char               *path;
  GBytes             *body;
  SoupMessageHeaders *headers;
} Request;

typedef struct
{
  GBytes *data;
  guint   delay_ms;
} Piece;

typedef struct _Job Job;

struct _KagedFakeServer
{
  GObject      parent_instance;

  SoupServer  *server;
  guint        port;

  StepQueue   *default_queue;
  GHashTable  *path_queues;   /* path → StepQueue */

  GPtrArray   *requests;      /* Request */
  GHashTable  *path_counts;   /* path → GUINT_TO_POINTER (n) */
  GHashTable  *client_ports;  /* the client ports requests came from */

  GPtrArray   *jobs;          /* Job, owned */
};

G_DEFINE_FINAL_TYPE (KagedFakeServer, kaged_fake_server, G_TYPE_OBJECT)

G_DEFINE_QUARK (kaged-fake-server-error-quark, kaged_fake_server_error)

struct _Job
{
  KagedFakeServer   *server;        /* unowned: the server frees its jobs */
  SoupServerMessage *msg;           /* SoupServer mode */
  gulong             finished_id;
  GIOStream         *stream;        /* raw mode, after stealing the connection */
  GCancellable      *cancellable;
  GSource           *timeout;

  guint              status;
  SoupMessageHeaders *headers;
  char              *content_type;
  GBytes            *body;          /* a whole body, or NULL for a stream */
  GPtrArray         *pieces;        /* Piece, or NULL */
  guint              index;
  guint              headers_delay_ms;
  guint              body_delay_ms;

  gint64             cut_after_bytes;  /* -1: no cut */
  gint64             cut_after_chunks; /* -1: no cut */
  guint64            body_written;

  guint              hang : 1;
  guint              hang_at_end : 1;
  guint              repeat_chunks : 1;
  guint              paused : 1;
  guint              closing : 1;
  guint              mid_chunk : 1;
};

static void job_next (Job *job);
static void raw_next (Job *job);

static void
piece_free (Piece *piece)
{
  g_clear_pointer (&piece->data, g_bytes_unref);
  g_free (piece);
}

static void
request_free (Request *request)
{
  g_free (request->method);
  g_free (request->path);
  g_clear_pointer (&request->body, g_bytes_unref);
  g_clear_pointer (&request->headers, soup_message_headers_unref);
  g_free (request);
}

static StepQueue *
step_queue_new (void)
{
  StepQueue *queue = g_new0 (StepQueue, 1);

  queue->steps = g_ptr_array_new_with_free_func ((GDestroyNotify)json_object_unref);
  queue->repeat_last = TRUE;

  return queue;
}

static void
step_queue_free (StepQueue *queue)
{
  g_clear_pointer (&queue->steps, g_ptr_array_unref);
  g_free (queue);
}

static void
job_free (Job *job)
{
  if (job->timeout != NULL)
    {
      g_source_destroy (job->timeout);
      g_clear_pointer (&job->timeout, g_source_unref);
    }
  if (job->msg != NULL)
    {
      g_clear_signal_handler (&job->finished_id, job->msg);
      g_clear_object (&job->msg);
    }
  if (job->cancellable != NULL)
    g_cancellable_cancel (job->cancellable);
  g_clear_object (&job->cancellable);
  if (job->stream != NULL)
    g_io_stream_close (job->stream, NULL, NULL);
  g_clear_object (&job->stream);
  g_clear_pointer (&job->headers, soup_message_headers_unref);
  g_clear_pointer (&job->content_type, g_free);
  g_clear_pointer (&job->body, g_bytes_unref);
  g_clear_pointer (&job->pieces, g_ptr_array_unref);
  g_free (job);
}

static void
job_finish (Job *job)
{
  /* Frees the job. */
  g_ptr_array_remove (job->server->jobs, job);
}

/* ------------------------------------------------------------------------ */
/* Scenario parsing */

static gboolean
check_uint_member (JsonObject  *step,
                   const char  *name,
                   GError     **error)
{
  JsonNode *node = json_object_get_member (step, name);

  if (node == NULL)
    return TRUE;
  if (JSON_NODE_HOLDS_VALUE (node) &&
      json_node_get_value_type (node) == G_TYPE_INT64 &&
      json_node_get_int (node) >= 0)
    return TRUE;

  g_set_error (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
               "“%s” must be a number ≥ 0", name);
  return FALSE;
}

static gboolean
check_step (JsonNode  *node,
            GError   **error)
{
  static const char *uint_members[] = {
    "status", "delay_ms", "headers_delay_ms", "cut_after_bytes", "cut_after_chunks",
    "hang_after_chunks", "error_after",
  };
  JsonObject *step;
  JsonNode *member;

  if (!JSON_NODE_HOLDS_OBJECT (node))
    {
      g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                           "A step must be a JSON object");
      return FALSE;
    }

  step = json_node_get_object (node);

  for (guint i = 0; i < G_N_ELEMENTS (uint_members); i++)
    if (!check_uint_member (step, uint_members[i], error))
      return FALSE;

  if (json_object_has_member (step, "status"))
    {
      gint64 status = json_object_get_int_member (step, "status");

      if (status < 100 || status > 599)
        {
          g_set_error (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                       "Status %" G_GINT64_FORMAT " is not an HTTP status", status);
          return FALSE;
        }
    }

  if ((member = json_object_get_member (step, "kind")) != NULL)
    {
      const char *kind = JSON_NODE_HOLDS_VALUE (member) ? json_node_get_string (member) : NULL;

      if (g_strcmp0 (kind, "openai") != 0 &&
          g_strcmp0 (kind, "anthropic") != 0 &&
          g_strcmp0 (kind, "ollama") != 0)
        {
          g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                               "“kind” must be openai, anthropic or ollama");
          return FALSE;
        }
      if (!check_uint_member (step, "chunks", error))
        return FALSE;
    }
  else if ((member = json_object_get_member (step, "chunks")) != NULL)
    {
      JsonArray *chunks;

      if (!JSON_NODE_HOLDS_ARRAY (member))
        {
          g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                               "“chunks” must be an array (or a number, with “kind”)");
          return FALSE;
        }

      chunks = json_node_get_array (member);
      for (guint i = 0; i < json_array_get_length (chunks); i++)
        {
          JsonNode *chunk = json_array_get_element (chunks, i);
          JsonObject *object;

          if (JSON_NODE_HOLDS_VALUE (chunk) && json_node_get_value_type (chunk) == G_TYPE_STRING)
            continue;
          if (!JSON_NODE_HOLDS_OBJECT (chunk))
            goto bad_chunk;
          object = json_node_get_object (chunk);
          if (!check_uint_member (object, "delay_ms", error))
            return FALSE;
          if (json_object_has_member (object, "data"))
            {
              JsonNode *data = json_object_get_member (object, "data");

              if (!JSON_NODE_HOLDS_VALUE (data) || json_node_get_value_type (data) != G_TYPE_STRING)
                goto bad_chunk;
            }
          else if (!json_object_has_member (object, "sse") && !json_object_has_member (object, "line"))
            goto bad_chunk;
        }
    }

  if ((member = json_object_get_member (step, "repeat_chunks")) != NULL &&
      (!JSON_NODE_HOLDS_VALUE (member) || json_node_get_value_type (member) != G_TYPE_BOOLEAN))
    {
      g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                           "“repeat_chunks” must be true or false");
      return FALSE;
    }

  if ((member = json_object_get_member (step, "headers")) != NULL)
    {
      if (!JSON_NODE_HOLDS_OBJECT (member))
        {
          g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                               "“headers” must be an object");
          return FALSE;
        }
    }

  return TRUE;

bad_chunk:
  g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                       "A chunk must be a string or an object with “data”, “sse” or “line”");
  return FALSE;
}

static StepQueue *
parse_queue (JsonNode  *node,
             GError   **error)
{
  StepQueue *queue = step_queue_new ();
  JsonArray *steps = NULL;

  if (JSON_NODE_HOLDS_ARRAY (node))
    {
      steps = json_node_get_array (node);
    }
  else if (JSON_NODE_HOLDS_OBJECT (node))
    {
      JsonObject *object = json_node_get_object (node);
      JsonNode *steps_node = json_object_get_member (object, "steps");

      if (steps_node != NULL && !JSON_NODE_HOLDS_ARRAY (steps_node))
        {
          g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                               "“steps” must be an array");
          step_queue_free (queue);
          return NULL;
        }
      if (steps_node != NULL)
        steps = json_node_get_array (steps_node);
      if (json_object_has_member (object, "repeat_last"))
        queue->repeat_last = json_object_get_boolean_member (object, "repeat_last");
    }
  else
    {
      g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                           "A scenario must be an array of steps or an object");
      step_queue_free (queue);
      return NULL;
    }

  for (guint i = 0; steps != NULL && i < json_array_get_length (steps); i++)
    {
      JsonNode *step = json_array_get_element (steps, i);

      if (!check_step (step, error))
        {
          g_prefix_error (error, "Step %u: ", i + 1);
          step_queue_free (queue);
          return NULL;
        }
      g_ptr_array_add (queue->steps, json_object_ref (json_node_get_object (step)));
    }

  return queue;
}

static gboolean
parse_scenario (const char  *json,
                StepQueue  **default_queue,
                GHashTable **path_queues,
                GError     **error)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GHashTable) paths = NULL;
  g_autoptr(GError) local_error = NULL;
  StepQueue *queue;
  JsonNode *root;

  if (!json_parser_load_from_data (parser, json, -1, &local_error))
    {
      g_set_error (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                   "The scenario is not JSON: %s", local_error->message);
      return FALSE;
    }

  root = json_parser_get_root (parser);
  if (root == NULL)
    {
      g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                           "The scenario is empty");
      return FALSE;
    }

  if (!(queue = parse_queue (root, error)))
    return FALSE;

  paths = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify)step_queue_free);

  if (JSON_NODE_HOLDS_OBJECT (root) &&
      json_object_has_member (json_node_get_object (root), "paths"))
    {
      JsonNode *paths_node = json_object_get_member (json_node_get_object (root), "paths");
      JsonObjectIter iter;
      const char *path;
      JsonNode *node;

      if (!JSON_NODE_HOLDS_OBJECT (paths_node))
        {
          g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                               "“paths” must be an object");
          step_queue_free (queue);
          return FALSE;
        }

      json_object_iter_init (&iter, json_node_get_object (paths_node));
      while (json_object_iter_next (&iter, &path, &node))
        {
          StepQueue *path_queue;

          if (path[0] != '/')
            {
              g_set_error (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                           "Path “%s” must start with /", path);
              step_queue_free (queue);
              return FALSE;
            }
          if (!(path_queue = parse_queue (node, error)))
            {
              g_prefix_error (error, "%s: ", path);
              step_queue_free (queue);
              return FALSE;
            }
          g_hash_table_insert (paths, g_strdup (path), path_queue);
        }
    }

  *default_queue = queue;
  *path_queues = g_steal_pointer (&paths);

  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Wire formats */

static gint64
get_int (JsonObject *object,
         const char *name,
         gint64      fallback)
{
  JsonNode *node;

  if (object == NULL || !(node = json_object_get_member (object, name)))
    return fallback;
  if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_INT64)
    return fallback;
  return json_node_get_int (node);
}

static const char *
get_string (JsonObject *object,
            const char *name,
            const char *fallback)
{
  JsonNode *node;

  if (object == NULL || !(node = json_object_get_member (object, name)))
    return fallback;
  if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_STRING)
    return fallback;
  return json_node_get_string (node);
}

static char *
node_to_string (JsonNode *node)
{
  g_autoptr(JsonGenerator) generator = json_generator_new ();

  json_generator_set_root (generator, node);
  return json_generator_to_data (generator, NULL);
}

static char *
object_to_string (JsonObject *object)
{
  g_autoptr(JsonNode) node = json_node_new (JSON_NODE_OBJECT);

  json_node_set_object (node, object);
  return node_to_string (node);
}

static void
add_piece_take (GPtrArray *pieces,
                char      *data,
                guint      delay_ms)
{
  Piece *piece = g_new0 (Piece, 1);

  piece->data = g_bytes_new_take (data, strlen (data));
  piece->delay_ms = delay_ms;
  g_ptr_array_add (pieces, piece);
}

static void
add_sse (GPtrArray  *pieces,
         const char *event,
         JsonObject *object,
         guint       delay_ms)
{
  g_autofree char *json = object_to_string (object);

  if (event != NULL)
    add_piece_take (pieces, g_strdup_printf ("event: %s\ndata: %s\n\n", event, json), delay_ms);
  else
    add_piece_take (pieces, g_strdup_printf ("data: %s\n\n", json), delay_ms);
}

static void
add_line (GPtrArray  *pieces,
          JsonObject *object,
          guint       delay_ms)
{
  g_autofree char *json = object_to_string (object);

  add_piece_take (pieces, g_strdup_printf ("%s\n", json), delay_ms);
}

/* Splits @text into @n pieces of about the same number of characters. */
static GPtrArray *
split_text (const char *text,
            guint       n)
{
  GPtrArray *parts = g_ptr_array_new_with_free_func (g_free);
  glong len = g_utf8_strlen (text, -1);

  if (len == 0)
    return parts;

  /* One walk through the text: long streams split in linear time. */
  n = CLAMP (n, 1, (guint)len);
  {
    const char *begin = text;
    const char *end = text;
    glong offset = 0;

    for (guint i = 0; i < n; i++)
      {
        glong stop = len * (i + 1) / n;

        for (; offset < stop; offset++)
          end = g_utf8_next_char (end);

        g_ptr_array_add (parts, g_strndup (begin, end - begin));
        begin = end;
      }
  }

  return parts;
}

static JsonObject *
openai_chunk (const char *model)
{
  JsonObject *chunk = json_object_new ();

  json_object_set_string_member (chunk, "id", "chatcmpl-fake");
  json_object_set_string_member (chunk, "object", "chat.completion.chunk");
  json_object_set_int_member (chunk, "created", 1700000000);
  json_object_set_string_member (chunk, "model", model);
  return chunk;
}

static JsonObject *
openai_choice_chunk (const char *model,
                     const char *role,
                     const char *content,
                     const char *finish_reason)
{
  JsonObject *chunk = openai_chunk (model);
  JsonArray *choices = json_array_new ();
  JsonObject *choice = json_object_new ();
  JsonObject *delta = json_object_new ();

  if (role != NULL)
    json_object_set_string_member (delta, "role", role);
  if (content != NULL)
    json_object_set_string_member (delta, "content", content);
  json_object_set_int_member (choice, "index", 0);
  json_object_set_object_member (choice, "delta", delta);
  if (finish_reason != NULL)
    json_object_set_string_member (choice, "finish_reason", finish_reason);
  else
    json_object_set_null_member (choice, "finish_reason");
  json_array_add_object_element (choices, choice);
  json_object_set_array_member (chunk, "choices", choices);
  json_object_set_null_member (chunk, "usage");

  return chunk;
}

static JsonNode *
dup_member (JsonObject *object,
            const char *name)
{
  JsonNode *node = json_object_get_member (object, name);

  return node != NULL ? json_node_copy (node) : NULL;
}

static void
build_openai (GPtrArray  *pieces,
              JsonObject *step,
              const char *model,
              GPtrArray  *parts,
              gint64      input_tokens,
              gint64      output_tokens,
              guint       delay)
{
  JsonObject *chunk;
  JsonObject *usage;
  JsonNode *stream_error = dup_member (step, "stream_error");
  guint error_after = get_int (step, "error_after", 0);

  chunk = openai_choice_chunk (model, "assistant", "", NULL);
  add_sse (pieces, NULL, chunk, delay);
  json_object_unref (chunk);

  for (guint i = 0; i < parts->len; i++)
    {
      if (stream_error != NULL && i == error_after)
        break;
      chunk = openai_choice_chunk (model, NULL, g_ptr_array_index (parts, i), NULL);
      add_sse (pieces, NULL, chunk, delay);
      json_object_unref (chunk);
    }

  if (stream_error != NULL)
    {
      chunk = json_object_new ();
      json_object_set_member (chunk, "error", stream_error);
      add_sse (pieces, NULL, chunk, delay);
      json_object_unref (chunk);
      return;
    }

  chunk = openai_choice_chunk (model, NULL, NULL, get_string (step, "finish_reason", "stop"));
  add_sse (pieces, NULL, chunk, delay);
  json_object_unref (chunk);

  chunk = openai_chunk (model);
  usage = json_object_new ();
  json_object_set_int_member (usage, "prompt_tokens", input_tokens);
  json_object_set_int_member (usage, "completion_tokens", output_tokens);
  json_object_set_int_member (usage, "total_tokens", input_tokens + output_tokens);
  json_object_set_array_member (chunk, "choices", json_array_new ());
  json_object_set_object_member (chunk, "usage", usage);
  add_sse (pieces, NULL, chunk, delay);
  json_object_unref (chunk);

  add_piece_take (pieces, g_strdup ("data: [DONE]\n\n"), delay);
}

static void
add_anthropic_event (GPtrArray  *pieces,
                     const char *type,
                     JsonObject *event,
                     guint       delay)
{
  JsonObject *ordered = json_object_new ();
  JsonObjectIter iter;
  const char *name;
  JsonNode *member;

  /* "type" first, as the real service sends it. */
  json_object_set_string_member (ordered, "type", type);
  json_object_iter_init (&iter, event);
  while (json_object_iter_next (&iter, &name, &member))
    json_object_set_member (ordered, name, json_node_copy (member));

  add_sse (pieces, type, ordered, delay);
  json_object_unref (ordered);
  json_object_unref (event);
}

static void
build_anthropic (GPtrArray  *pieces,
                 JsonObject *step,
                 const char *model,
                 GPtrArray  *parts,
                 gint64      input_tokens,
                 gint64      output_tokens,
                 guint       delay)
{
  JsonObject *event;
  JsonObject *object;
  JsonObject *usage;
  JsonNode *stream_error = dup_member (step, "stream_error");
  guint error_after = get_int (step, "error_after", 0);

  event = json_object_new ();
  object = json_object_new ();
  usage = json_object_new ();
  json_object_set_string_member (object, "id", "msg_fake");
  json_object_set_string_member (object, "type", "message");
  json_object_set_string_member (object, "role", "assistant");
  json_object_set_string_member (object, "model", model);
  json_object_set_array_member (object, "content", json_array_new ());
  json_object_set_null_member (object, "stop_reason");
  json_object_set_null_member (object, "stop_sequence");
  json_object_set_int_member (usage, "input_tokens", input_tokens);
  json_object_set_int_member (usage, "output_tokens", 1);
  json_object_set_object_member (object, "usage", usage);
  json_object_set_object_member (event, "message", object);
  add_anthropic_event (pieces, "message_start", event, delay);

  if (stream_error == NULL || error_after > 0)
    {
      event = json_object_new ();
      object = json_object_new ();
      json_object_set_int_member (event, "index", 0);
      json_object_set_string_member (object, "type", "text");
      json_object_set_string_member (object, "text", "");
      json_object_set_object_member (event, "content_block", object);
      add_anthropic_event (pieces, "content_block_start", event, delay);

      add_anthropic_event (pieces, "ping", json_object_new (), delay);
    }

  for (guint i = 0; i < parts->len; i++)
    {
      if (stream_error != NULL && i == error_after)
        break;
      event = json_object_new ();
      object = json_object_new ();
      json_object_set_int_member (event, "index", 0);
      json_object_set_string_member (object, "type", "text_delta");
      json_object_set_string_member (object, "text", g_ptr_array_index (parts, i));
      json_object_set_object_member (event, "delta", object);
      add_anthropic_event (pieces, "content_block_delta", event, delay);
    }

  if (stream_error != NULL)
    {
      event = json_object_new ();
      json_object_set_member (event, "error", stream_error);
      add_anthropic_event (pieces, "error", event, delay);
      return;
    }

  event = json_object_new ();
  json_object_set_int_member (event, "index", 0);
  add_anthropic_event (pieces, "content_block_stop", event, delay);

  event = json_object_new ();
  object = json_object_new ();
  usage = json_object_new ();
  json_object_set_string_member (object, "stop_reason", get_string (step, "finish_reason", "end_turn"));
  json_object_set_null_member (object, "stop_sequence");
  json_object_set_int_member (usage, "output_tokens", output_tokens);
  json_object_set_object_member (event, "delta", object);
  json_object_set_object_member (event, "usage", usage);
  add_anthropic_event (pieces, "message_delta", event, delay);

  add_anthropic_event (pieces, "message_stop", json_object_new (), delay);
}

static JsonObject *
ollama_line (const char *model,
             const char *content,
             gboolean    done)
{
  JsonObject *line = json_object_new ();
  JsonObject *message = json_object_new ();

  json_object_set_string_member (line, "model", model);
  json_object_set_string_member (line, "created_at", "2026-01-01T00:00:00.000000Z");
  json_object_set_string_member (message, "role", "assistant");
  json_object_set_string_member (message, "content", content);
  json_object_set_object_member (line, "message", message);
  json_object_set_boolean_member (line, "done", done);

  return line;
}

static void
build_ollama (GPtrArray  *pieces,
              JsonObject *step,
              const char *model,
              GPtrArray  *parts,
              gint64      input_tokens,
              gint64      output_tokens,
              guint       delay)
{
  JsonObject *line;
  JsonNode *stream_error = dup_member (step, "stream_error");
  guint error_after = get_int (step, "error_after", 0);

  for (guint i = 0; i < parts->len; i++)
    {
      if (stream_error != NULL && i == error_after)
        break;
      line = ollama_line (model, g_ptr_array_index (parts, i), FALSE);
      add_line (pieces, line, delay);
      json_object_unref (line);
    }

  if (stream_error != NULL)
    {
      line = json_object_new ();
      json_object_set_member (line, "error", stream_error);
      add_line (pieces, line, delay);
      json_object_unref (line);
      return;
    }

  line = ollama_line (model, "", TRUE);
  json_object_set_string_member (line, "done_reason", get_string (step, "finish_reason", "stop"));
  json_object_set_int_member (line, "total_duration", 5000000);
  json_object_set_int_member (line, "load_duration", 1000000);
  json_object_set_int_member (line, "prompt_eval_count", input_tokens);
  json_object_set_int_member (line, "prompt_eval_duration", 1000000);
  json_object_set_int_member (line, "eval_count", output_tokens);
  json_object_set_int_member (line, "eval_duration", 3000000);
  add_line (pieces, line, delay);
  json_object_unref (line);
}

static char *
request_model (GBytes *body)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  gsize len = 0;
  const char *data = g_bytes_get_data (body, &len);
  JsonNode *root;

  if (len == 0 || !json_parser_load_from_data (parser, data, len, NULL))
    return g_strdup ("fake-model");

  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    return g_strdup ("fake-model");

  return g_strdup (get_string (json_node_get_object (root), "model", "fake-model"));
}

static void
build_generated (Job        *job,
                 JsonObject *step,
                 GBytes     *request_body)
{
  const char *kind = get_string (step, "kind", NULL);
  g_autoptr(GPtrArray) parts = split_text (get_string (step, "text", ""), get_int (step, "chunks", 3));
  g_autofree char *model = request_model (request_body);
  JsonObject *usage = NULL;
  gint64 input_tokens;
  gint64 output_tokens;
  guint delay = job->body_delay_ms;

  if (json_object_has_member (step, "usage") &&
      JSON_NODE_HOLDS_OBJECT (json_object_get_member (step, "usage")))
    usage = json_object_get_object_member (step, "usage");
  input_tokens = get_int (usage, "input_tokens", 12);
  output_tokens = get_int (usage, "output_tokens", parts->len);

  job->pieces = g_ptr_array_new_with_free_func ((GDestroyNotify)piece_free);

  if (g_str_equal (kind, "openai"))
    {
      build_openai (job->pieces, step, model, parts, input_tokens, output_tokens, delay);
      job->content_type = g_strdup ("text/event-stream");
    }
  else if (g_str_equal (kind, "anthropic"))
    {
      build_anthropic (job->pieces, step, model, parts, input_tokens, output_tokens, delay);
      job->content_type = g_strdup ("text/event-stream");
    }
  else
    {
      build_ollama (job->pieces, step, model, parts, input_tokens, output_tokens, delay);
      job->content_type = g_strdup ("application/x-ndjson");
    }
}

static void
build_raw_chunks (Job        *job,
                  JsonObject *step)
{
  JsonArray *chunks = json_object_get_array_member (step, "chunks");

  job->pieces = g_ptr_array_new_with_free_func ((GDestroyNotify)piece_free);
  job->content_type = g_strdup ("text/event-stream");

  for (guint i = 0; i < json_array_get_length (chunks); i++)
    {
      JsonNode *chunk = json_array_get_element (chunks, i);
      JsonObject *object;
      JsonNode *value;
      guint delay;

      if (JSON_NODE_HOLDS_VALUE (chunk))
        {
          add_piece_take (job->pieces, g_strdup (json_node_get_string (chunk)), job->body_delay_ms);
          continue;
        }

      object = json_node_get_object (chunk);
      delay = get_int (object, "delay_ms", job->body_delay_ms);

      if (json_object_has_member (object, "data"))
        {
          add_piece_take (job->pieces, g_strdup (get_string (object, "data", "")), delay);
        }
      else if ((value = json_object_get_member (object, "sse")) != NULL)
        {
          g_autofree char *json = node_to_string (value);
          const char *event = get_string (object, "event", NULL);

          if (event != NULL)
            add_piece_take (job->pieces, g_strdup_printf ("event: %s\ndata: %s\n\n", event, json), delay);
          else
            add_piece_take (job->pieces, g_strdup_printf ("data: %s\n\n", json), delay);
        }
      else
        {
          g_autofree char *json = node_to_string (json_object_get_member (object, "line"));

          add_piece_take (job->pieces, g_strdup_printf ("%s\n", json), delay);
        }
    }
}

static void
build_job (Job        *job,
           JsonObject *step,
           GBytes     *request_body)
{
  JsonNode *body;

  job->status = get_int (step, "status", SOUP_STATUS_OK);
  job->headers_delay_ms = get_int (step, "headers_delay_ms", 0);
  job->body_delay_ms = get_int (step, "delay_ms", 0);
  job->cut_after_bytes = get_int (step, "cut_after_bytes", -1);
  job->cut_after_chunks = get_int (step, "cut_after_chunks", -1);
  job->hang = json_object_has_member (step, "hang") && json_object_get_boolean_member (step, "hang");
  job->repeat_chunks = json_object_has_member (step, "repeat_chunks") &&
                       json_object_get_boolean_member (step, "repeat_chunks");
  job->headers = soup_message_headers_new (SOUP_MESSAGE_HEADERS_RESPONSE);

  if (json_object_has_member (step, "headers"))
    {
      JsonObjectIter iter;
      const char *name;
      JsonNode *value;

      json_object_iter_init (&iter, json_object_get_object_member (step, "headers"));
      while (json_object_iter_next (&iter, &name, &value))
        {
          g_autofree char *text = NULL;

          if (!JSON_NODE_HOLDS_VALUE (value))
            continue;
          if (json_node_get_value_type (value) == G_TYPE_STRING)
            text = g_strdup (json_node_get_string (value));
          else
            text = node_to_string (value);
          soup_message_headers_append (job->headers, name, text);
        }
    }

  if (json_object_has_member (step, "kind"))
    {
      build_generated (job, step, request_body);
    }
  else if (json_object_has_member (step, "chunks"))
    {
      build_raw_chunks (job, step);
    }
  else if ((body = json_object_get_member (step, "body")) != NULL)
    {
      if (JSON_NODE_HOLDS_VALUE (body) && json_node_get_value_type (body) == G_TYPE_STRING)
        {
          const char *text = json_node_get_string (body);

          job->body = g_bytes_new (text, strlen (text));
          job->content_type = g_strdup ("text/plain; charset=utf-8");
        }
      else
        {
          char *text = node_to_string (body);

          job->body = g_bytes_new_take (text, strlen (text));
          job->content_type = g_strdup ("application/json");
        }
    }
  else
    {
      job->body = g_bytes_new_static ("", 0);
    }

  if (json_object_has_member (step, "hang_after_chunks") && job->pieces != NULL)
    {
      guint n = get_int (step, "hang_after_chunks", 0);

      if (n < job->pieces->len)
        g_ptr_array_set_size (job->pieces, n);
      job->hang_at_end = TRUE;
    }

  if (json_object_has_member (step, "content_type"))
    {
      g_free (job->content_type);
      job->content_type = g_strdup (get_string (step, "content_type", NULL));
    }
}

/* ------------------------------------------------------------------------ */
/* Answering through SoupServer: bodies, streams with delays, hangs */

static void
job_pause (Job *job)
{
  if (!job->paused)
    {
      soup_server_message_pause (job->msg);
      job->paused = TRUE;
    }
}

static void
job_unpause (Job *job)
{
  if (job->paused)
    {
      job->paused = FALSE;
      soup_server_message_unpause (job->msg);
    }
}

/* A chunked answer whose body ran dry is paused by the server; after more
 * of the body is there, it must be told. */
static void
job_wake (Job *job)
{
  job->paused = FALSE;
  soup_server_message_unpause (job->msg);
}

static void
job_schedule (Job         *job,
              guint        delay_ms,
              GSourceFunc  func)
{
  g_assert (job->timeout == NULL);

  job->timeout = g_timeout_source_new (delay_ms);
  g_source_set_callback (job->timeout, func, job, NULL);
  g_source_set_static_name (job->timeout, "[kaged-fake-server] delay");
  g_source_attach (job->timeout, g_main_context_get_thread_default ());
}

static void
job_clear_timeout (Job *job)
{
  g_clear_pointer (&job->timeout, g_source_unref);
}

static void
on_message_finished (SoupServerMessage *msg,
                     Job               *job)
{
  job_finish (job);
}

static void
job_send_piece (Job *job)
{
  Piece *piece = g_ptr_array_index (job->pieces, job->index++);

  soup_message_body_append_bytes (soup_server_message_get_response_body (job->msg), piece->data);
  job_wake (job);
}

static gboolean
job_piece_cb (gpointer user_data)
{
  Job *job = user_data;

  job_clear_timeout (job);
  job_send_piece (job);
  job_next (job);

  return G_SOURCE_REMOVE;
}

static gboolean
job_round_cb (gpointer user_data)
{
  Job *job = user_data;

  job_clear_timeout (job);
  job_next (job);

  return G_SOURCE_REMOVE;
}

static void
job_next (Job *job)
{
  /* An endless stream starts its next round from the main loop, so that
   * what was appended is written out first. */
  if (job->repeat_chunks && job->index > 0 && job->index == job->pieces->len)
    {
      job->index = 0;
      job_schedule (job, 1, job_round_cb);
      return;
    }

  while (job->index < job->pieces->len)
    {
      Piece *piece = g_ptr_array_index (job->pieces, job->index);

      /* No pause here: the headers go out now, and the server waits for
       * the next chunk by itself. */
      if (piece->delay_ms > 0)
        {
          job_schedule (job, piece->delay_ms, job_piece_cb);
          return;
        }
      job_send_piece (job);
    }

  if (job->repeat_chunks && job->index > 0)
    {
      job_next (job);
      return;
    }

  if (job->hang_at_end)
    return;

  soup_message_body_complete (soup_server_message_get_response_body (job->msg));
  job_wake (job);
}

static void
job_start_response (Job *job)
{
  SoupMessageHeaders *response_headers = soup_server_message_get_response_headers (job->msg);
  SoupMessageHeadersIter iter;
  const char *name;
  const char *value;

  soup_message_headers_iter_init (&iter, job->headers);
  while (soup_message_headers_iter_next (&iter, &name, &value))
    soup_message_headers_append (response_headers, name, value);

  soup_server_message_set_status (job->msg, job->status, NULL);

  if (job->pieces == NULL)
    {
      gsize len = 0;
      const char *data = g_bytes_get_data (job->body, &len);

      soup_server_message_set_response (job->msg, job->content_type, SOUP_MEMORY_COPY, data, len);
      job_unpause (job);
      return;
    }

  if (job->content_type != NULL)
    soup_message_headers_replace (response_headers, "Content-Type", job->content_type);
  soup_message_headers_set_encoding (response_headers, SOUP_ENCODING_CHUNKED);
  /* Written chunks are dropped, not kept for the whole stream. */
  soup_message_body_set_accumulate (soup_server_message_get_response_body (job->msg), FALSE);
  job_unpause (job);
  job_next (job);
}

static gboolean
job_headers_cb (gpointer user_data)
{
  Job *job = user_data;

  job_clear_timeout (job);
  job_start_response (job);

  return G_SOURCE_REMOVE;
}

static gboolean
job_body_delay_cb (gpointer user_data)
{
  Job *job = user_data;

  job_clear_timeout (job);
  if (job->headers_delay_ms > 0)
    job_schedule (job, job->headers_delay_ms, job_headers_cb);
  else
    job_start_response (job);

  return G_SOURCE_REMOVE;
}

static void
job_start (Job *job)
{
  job->finished_id = g_signal_connect (job->msg, "finished", G_CALLBACK (on_message_finished), job);

  if (job->hang)
    {
      job_pause (job);
      return;
    }

  /* A whole body waits delay_ms (then headers_delay_ms); a stream waits
   * headers_delay_ms for its headers and delay_ms before each chunk. */
  if (job->pieces == NULL && job->body_delay_ms > 0)
    {
      job_pause (job);
      job_schedule (job, job->body_delay_ms, job_body_delay_cb);
    }
  else if (job->headers_delay_ms > 0)
    {
      job_pause (job);
      job_schedule (job, job->headers_delay_ms, job_headers_cb);
    }
  else
    {
      job_start_response (job);
    }
}

/* ------------------------------------------------------------------------ */
/* Answering on a stolen connection: streams cut after N bytes or chunks */

static void
raw_write_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  g_autoptr(GError) error = NULL;
  Job *job = user_data;

  if (!g_output_stream_write_all_finish (G_OUTPUT_STREAM (object), result, NULL, &error))
    {
      if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        {
          g_debug ("Writing a cut stream failed: %s", error->message);
          job_finish (job);
        }
      return;
    }

  raw_next (job);
}

static void
raw_write (Job    *job,
           GBytes *bytes)
{
  gsize len = 0;
  const guint8 *data = g_bytes_get_data (bytes, &len);

  /* The stream, which a pending write keeps alive, holds the bytes: they
   * outlive the job if the server goes away in the middle of a write. */
  g_object_set_data_full (G_OBJECT (job->stream), "kaged-fake-server-writing",
                          g_bytes_ref (bytes), (GDestroyNotify)g_bytes_unref);
  g_output_stream_write_all_async (g_io_stream_get_output_stream (job->stream),
                                   data, len, G_PRIORITY_DEFAULT, job->cancellable,
                                   raw_write_cb, job);
}

static gboolean
raw_piece_cb (gpointer user_data)
{
  Job *job = user_data;
  Piece *piece = g_ptr_array_index (job->pieces, job->index++);
  gsize len = g_bytes_get_size (piece->data);
  gsize send = len;
  GString *frame;

  job_clear_timeout (job);

  if (job->cut_after_bytes >= 0 && job->body_written + len > (guint64)job->cut_after_bytes)
    send = job->cut_after_bytes - job->body_written;
  job->body_written += send;

  /* A chunk header announcing the whole piece, then maybe less of it. */
  frame = g_string_new (NULL);
  g_string_append_printf (frame, "%" G_GSIZE_MODIFIER "x\r\n", len);
  g_string_append_len (frame, g_bytes_get_data (piece->data, NULL), send);
  if (send == len)
    g_string_append (frame, "\r\n");
  else
    job->mid_chunk = TRUE;

  g_clear_pointer (&job->body, g_bytes_unref);
  job->body = g_string_free_to_bytes (frame);
  raw_write (job, job->body);

  return G_SOURCE_REMOVE;
}

static void
raw_write_string (Job  *job,
                  char *text)
{
  g_clear_pointer (&job->body, g_bytes_unref);
  job->body = g_bytes_new_take (text, strlen (text));
  raw_write (job, job->body);
}

static void
raw_next (Job *job)
{
  gboolean cut = (job->cut_after_chunks >= 0 && job->index >= (guint64)job->cut_after_chunks) ||
                 (job->cut_after_bytes >= 0 && job->body_written >= (guint64)job->cut_after_bytes);
  Piece *piece;

  if (job->closing || (cut && job->mid_chunk))
    {
      job_finish (job);
      return;
    }

  if (cut)
    {
      gsize next = job->index < job->pieces->len
                   ? g_bytes_get_size (((Piece *)g_ptr_array_index (job->pieces, job->index))->data)
                   : 1;

      /* Announce a chunk that never comes, then close: the client sees the
       * connection end in the middle of the body, wherever the cut falls. */
      g_debug ("Cutting the connection after %u chunks, %" G_GUINT64_FORMAT " bytes",
               job->index, job->body_written);
      job->closing = TRUE;
      raw_write_string (job, g_strdup_printf ("%" G_GSIZE_MODIFIER "x\r\n", next));
      return;
    }

  if (job->index >= job->pieces->len)
    {
      /* The cut was never reached: end the body properly. */
      job->closing = TRUE;
      raw_write_string (job, g_strdup ("0\r\n\r\n"));
      return;
    }

  piece = g_ptr_array_index (job->pieces, job->index);
  if (piece->delay_ms > 0)
    job_schedule (job, piece->delay_ms, raw_piece_cb);
  else
    raw_piece_cb (job);
}

static void
raw_start (Job *job)
{
  SoupMessageHeadersIter iter;
  const char *name;
  const char *value;
  const char *phrase;
  GString *head;

  if (job->pieces == NULL)
    {
      /* A whole body to cut: stream it as one piece. */
      Piece *piece = g_new0 (Piece, 1);

      piece->data = g_steal_pointer (&job->body);
      piece->delay_ms = job->body_delay_ms;
      job->pieces = g_ptr_array_new_with_free_func ((GDestroyNotify)piece_free);
      g_ptr_array_add (job->pieces, piece);
    }

  phrase = soup_status_get_phrase (job->status);
  head = g_string_new (NULL);
  g_string_append_printf (head, "HTTP/1.1 %u %s\r\n", job->status, phrase ? phrase : "Unknown");
  soup_message_headers_iter_init (&iter, job->headers);
  while (soup_message_headers_iter_next (&iter, &name, &value))
    g_string_append_printf (head, "%s: %s\r\n", name, value);
  if (job->content_type != NULL)
    g_string_append_printf (head, "Content-Type: %s\r\n", job->content_type);
  g_string_append (head, "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");

  job->cancellable = g_cancellable_new ();
  job->body = g_string_free_to_bytes (head);
  raw_write (job, job->body);
}

/* ------------------------------------------------------------------------ */
/* The server */

static StepQueue *
queue_for_path (KagedFakeServer *self,
                const char      *path)
{
  StepQueue *queue = g_hash_table_lookup (self->path_queues, path);

  return queue != NULL ? queue : self->default_queue;
}

static JsonObject *
next_step (KagedFakeServer *self,
           const char      *path)
{
  StepQueue *queue = queue_for_path (self, path);

  if (queue->steps->len == 0)
    return NULL;
  if (queue->next < queue->steps->len)
    return g_ptr_array_index (queue->steps, queue->next++);
  if (queue->repeat_last)
    return g_ptr_array_index (queue->steps, queue->steps->len - 1);
  return NULL;
}

static void
set_json_response (SoupServerMessage *msg,
                   guint              status,
                   JsonObject        *object)
{
  g_autofree char *json = object_to_string (object);

  soup_server_message_set_status (msg, status, NULL);
  soup_server_message_set_response (msg, "application/json", SOUP_MEMORY_COPY, json, strlen (json));
}

static void
set_error_response (SoupServerMessage *msg,
                    guint              status,
                    const char        *message)
{
  g_autoptr(JsonObject) object = json_object_new ();

  json_object_set_string_member (object, "error", message);
  set_json_response (msg, status, object);
}

static JsonObject *
build_stats (KagedFakeServer *self)
{
  JsonObject *stats = json_object_new ();
  JsonObject *paths = json_object_new ();
  JsonArray *requests = json_array_new ();
  GHashTableIter iter;
  gpointer key;
  gpointer value;

  g_hash_table_iter_init (&iter, self->path_counts);
  while (g_hash_table_iter_next (&iter, &key, &value))
    json_object_set_int_member (paths, key, GPOINTER_TO_UINT (value));
  json_object_set_int_member (stats, "connections", g_hash_table_size (self->client_ports));

  /* Headers are left out on purpose: they carry API keys. */
  for (guint i = 0; i < self->requests->len; i++)
    {
      Request *request = g_ptr_array_index (self->requests, i);
      JsonObject *entry = json_object_new ();
      gsize len = 0;
      const char *data = g_bytes_get_data (request->body, &len);

      json_object_set_string_member (entry, "method", request->method);
      json_object_set_string_member (entry, "path", request->path);
      if (g_utf8_validate (data, len, NULL))
        {
          g_autofree char *text = g_strndup (data, len);

          json_object_set_string_member (entry, "body", text);
        }
      else
        {
          json_object_set_null_member (entry, "body");
        }
      json_array_add_object_element (requests, entry);
    }

  json_object_set_int_member (stats, "total", self->requests->len);
  json_object_set_object_member (stats, "paths", paths);
  json_object_set_array_member (stats, "requests", requests);

  return stats;
}

static void
handle_own_path (KagedFakeServer   *self,
                 SoupServerMessage *msg,
                 const char        *path)
{
  const char *method = soup_server_message_get_method (msg);

  if (g_str_equal (path, "/__fake/stats") && g_str_equal (method, "GET"))
    {
      g_autoptr(JsonObject) stats = build_stats (self);

      set_json_response (msg, SOUP_STATUS_OK, stats);
    }
  else if (g_str_equal (path, "/__fake/reset") && g_str_equal (method, "POST"))
    {
      kaged_fake_server_reset (self);
      soup_server_message_set_status (msg, SOUP_STATUS_NO_CONTENT, NULL);
    }
  else if (g_str_equal (path, "/__fake/scenario") && g_str_equal (method, "POST"))
    {
      SoupMessageBody *body = soup_server_message_get_request_body (msg);
      g_autoptr(GBytes) bytes = soup_message_body_flatten (body);
      g_autoptr(GError) error = NULL;
      g_autofree char *json = g_strndup (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes));

      if (kaged_fake_server_set_scenario (self, json, &error))
        soup_server_message_set_status (msg, SOUP_STATUS_NO_CONTENT, NULL);
      else
        set_error_response (msg, SOUP_STATUS_BAD_REQUEST, error->message);
    }
  else
    {
      set_error_response (msg, SOUP_STATUS_NOT_FOUND, "No such path");
    }
}

static void
server_callback (SoupServer        *server,
                 SoupServerMessage *msg,
                 const char        *path,
                 GHashTable        *query,
                 gpointer           user_data)
{
  KagedFakeServer *self = user_data;
  SoupMessageBody *request_body = soup_server_message_get_request_body (msg);
  GSocketAddress *remote;
  Request *request;
  JsonObject *step;
  Job *job;
  guint n;

  if (g_str_has_prefix (path, "/__fake/"))
    {
      handle_own_path (self, msg, path);
      return;
    }

  request = g_new0 (Request, 1);
  request->method = g_strdup (soup_server_message_get_method (msg));
  request->path = g_strdup (path);
  request->body = soup_message_body_flatten (request_body);
  request->headers = soup_message_headers_ref (soup_server_message_get_request_headers (msg));
  g_ptr_array_add (self->requests, request);

  n = GPOINTER_TO_UINT (g_hash_table_lookup (self->path_counts, path));
  g_hash_table_insert (self->path_counts, g_strdup (path), GUINT_TO_POINTER (n + 1));

  /* Every connection of a client on loopback has a port of its own. */
  remote = soup_server_message_get_remote_address (msg);
  if (G_IS_INET_SOCKET_ADDRESS (remote))
    g_hash_table_add (self->client_ports,
                      GUINT_TO_POINTER (g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (remote))));

  g_debug ("%s %s (request %u)", request->method, path, self->requests->len);

  if (!(step = next_step (self, path)))
    {
      set_error_response (msg, queue_for_path (self, path)->steps->len == 0 ? SOUP_STATUS_NOT_FOUND
                                                                             : SOUP_STATUS_INTERNAL_SERVER_ERROR,
                          "The fake scenario has no step for this request");
      return;
    }

  job = g_new0 (Job, 1);
  job->server = self;
  build_job (job, step, request->body);
  g_ptr_array_add (self->jobs, job);

  if (job->cut_after_bytes >= 0 || job->cut_after_chunks >= 0)
    {
      job->stream = soup_server_message_steal_connection (msg);
      raw_start (job);
      return;
    }

  job->msg = g_object_ref (msg);
  job_start (job);
}

static void
kaged_fake_server_dispose (GObject *object)
{
  KagedFakeServer *self = (KagedFakeServer *)object;

  if (self->jobs != NULL)
    g_ptr_array_set_size (self->jobs, 0);
  if (self->server != NULL)
    soup_server_disconnect (self->server);
  g_clear_object (&self->server);

  G_OBJECT_CLASS (kaged_fake_server_parent_class)->dispose (object);
}

static void
kaged_fake_server_finalize (GObject *object)
{
  KagedFakeServer *self = (KagedFakeServer *)object;

  g_clear_pointer (&self->jobs, g_ptr_array_unref);
  g_clear_pointer (&self->default_queue, step_queue_free);
  g_clear_pointer (&self->path_queues, g_hash_table_unref);
  g_clear_pointer (&self->requests, g_ptr_array_unref);
  g_clear_pointer (&self->path_counts, g_hash_table_unref);
  g_clear_pointer (&self->client_ports, g_hash_table_unref);

  G_OBJECT_CLASS (kaged_fake_server_parent_class)->finalize (object);
}

static void
kaged_fake_server_class_init (KagedFakeServerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = kaged_fake_server_dispose;
  object_class->finalize = kaged_fake_server_finalize;
}

static void
kaged_fake_server_init (KagedFakeServer *self)
{
  self->requests = g_ptr_array_new_with_free_func ((GDestroyNotify)request_free);
  self->path_counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  self->client_ports = g_hash_table_new (NULL, NULL);
  self->jobs = g_ptr_array_new_with_free_func ((GDestroyNotify)job_free);
  self->server = soup_server_new ("server-header", "kaged-fake-provider ", NULL);
  soup_server_add_handler (self->server, NULL, server_callback, self, NULL);
}

/**
 * kaged_fake_server_scenario_help:
 *
 * Returns: the description of the scenario format, for people
 */
const char *
kaged_fake_server_scenario_help (void)
{
  return scenario_help;
}

/**
 * kaged_fake_server_new:
 * @scenario_json: the scenario, as JSON text
 *
 * Returns: (transfer full): a server, not listening yet, or %NULL with
 *   @error set when the scenario is not valid
 */
KagedFakeServer *
kaged_fake_server_new (const char  *scenario_json,
                       GError     **error)
{
  g_autoptr(KagedFakeServer) self = g_object_new (KAGED_TYPE_FAKE_SERVER, NULL);

  g_return_val_if_fail (scenario_json != NULL, NULL);

  if (!kaged_fake_server_set_scenario (self, scenario_json, error))
    return NULL;

  return g_steal_pointer (&self);
}

KagedFakeServer *
kaged_fake_server_new_from_file (const char  *path,
                                 GError     **error)
{
  g_autofree char *contents = NULL;

  g_return_val_if_fail (path != NULL, NULL);

  if (!g_file_get_contents (path, &contents, NULL, error))
    return NULL;

  return kaged_fake_server_new (contents, error);
}

/**
 * kaged_fake_server_set_scenario:
 *
 * Replaces the scenario; every step list starts again from its first step.
 * The requests seen so far are kept. On error nothing changes.
 */
gboolean
kaged_fake_server_set_scenario (KagedFakeServer  *self,
                                const char       *scenario_json,
                                GError          **error)
{
  StepQueue *queue = NULL;
  GHashTable *paths = NULL;

  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), FALSE);
  g_return_val_if_fail (scenario_json != NULL, FALSE);

  if (!parse_scenario (scenario_json, &queue, &paths, error))
    return FALSE;

  g_clear_pointer (&self->default_queue, step_queue_free);
  g_clear_pointer (&self->path_queues, g_hash_table_unref);
  self->default_queue = queue;
  self->path_queues = paths;

  return TRUE;
}

/**
 * kaged_fake_server_listen:
 * @port: the port, or 0 for any free one
 *
 * Listens on 127.0.0.1 only.
 */
gboolean
kaged_fake_server_listen (KagedFakeServer  *self,
                          guint             port,
                          GError          **error)
{
  g_autoptr(GInetAddress) loopback = NULL;
  g_autoptr(GSocketAddress) address = NULL;
  GSList *listeners;

  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), FALSE);
  g_return_val_if_fail (port <= G_MAXUINT16, FALSE);

  loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  address = g_inet_socket_address_new (loopback, port);

  if (!soup_server_listen (self->server, address, 0, error))
    return FALSE;

  self->port = port;
  listeners = soup_server_get_listeners (self->server);
  if (listeners != NULL)
    {
      g_autoptr(GSocketAddress) local = g_socket_get_local_address (listeners->data, error);

      if (local == NULL)
        {
          g_slist_free (listeners);
          return FALSE;
        }
      self->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (local));
    }
  g_slist_free (listeners);

  return TRUE;
}

guint
kaged_fake_server_get_port (KagedFakeServer *self)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), 0);

  return self->port;
}

/**
 * kaged_fake_server_get_url:
 *
 * Returns: (transfer full): `http://127.0.0.1:PORT`, without a trailing slash
 */
char *
kaged_fake_server_get_url (KagedFakeServer *self)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), NULL);

  return g_strdup_printf ("http://127.0.0.1:%u", self->port);
}

/**
 * kaged_fake_server_reset:
 *
 * Forgets the requests seen and starts every step list again.
 */
void
kaged_fake_server_reset (KagedFakeServer *self)
{
  GHashTableIter iter;
  gpointer value;

  g_return_if_fail (KAGED_IS_FAKE_SERVER (self));

  g_ptr_array_set_size (self->requests, 0);
  g_hash_table_remove_all (self->path_counts);
  g_hash_table_remove_all (self->client_ports);
  self->default_queue->next = 0;
  g_hash_table_iter_init (&iter, self->path_queues);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    ((StepQueue *)value)->next = 0;
}

/**
 * kaged_fake_server_get_n_requests:
 * @path: (nullable): a path, or %NULL for all
 *
 * Returns: how many requests arrived (to @path)
 */
guint
kaged_fake_server_get_n_requests (KagedFakeServer *self,
                                  const char      *path)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), 0);

  if (path == NULL)
    return self->requests->len;

  return GPOINTER_TO_UINT (g_hash_table_lookup (self->path_counts, path));
}

/**
 * kaged_fake_server_get_n_connections:
 *
 * Returns: how many connections the requests came over (one, for any
 *   number of requests on a connection kept open)
 */
guint
kaged_fake_server_get_n_connections (KagedFakeServer *self)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), 0);

  return g_hash_table_size (self->client_ports);
}

/**
 * kaged_fake_server_get_n_active:
 *
 * Returns: how many answers are still being written (or held back)
 */
guint
kaged_fake_server_get_n_active (KagedFakeServer *self)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), 0);

  return self->jobs->len;
}

static Request *
get_request (KagedFakeServer *self,
             guint            index)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), NULL);
  g_return_val_if_fail (index < self->requests->len, NULL);

  return g_ptr_array_index (self->requests, index);
}

/**
 * kaged_fake_server_get_request_body:
 * @index: the request's number, from 0, in arrival order
 *
 * Returns: (transfer none): the body of that request
 */
GBytes *
kaged_fake_server_get_request_body (KagedFakeServer *self,
                                    guint            index)
{
  Request *request = get_request (self, index);

  return request != NULL ? request->body : NULL;
}

const char *
kaged_fake_server_get_request_path (KagedFakeServer *self,
                                    guint            index)
{
  Request *request = get_request (self, index);

  return request != NULL ? request->path : NULL;
}

/**
 * kaged_fake_server_get_request_header:
 *
 * Returns: (nullable): the value of header @name of request @index
 */
const char *
kaged_fake_server_get_request_header (KagedFakeServer *self,
                                      guint            index,
                                      const char      *name)
{
  Request *request = get_request (self, index);

  g_return_val_if_fail (name != NULL, NULL);

  return request != NULL ? soup_message_headers_get_one (request->headers, name) : NULL;
}

/**
 * kaged_fake_server_get_last_body:
 * @path: (nullable): a path, or %NULL for any
 *
 * Returns: (transfer none) (nullable): the body of the last request (to @path)
 */
GBytes *
kaged_fake_server_get_last_body (KagedFakeServer *self,
                                 const char      *path)
{
  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), NULL);

  for (guint i = self->requests->len; i > 0; i--)
    {
      Request *request = g_ptr_array_index (self->requests, i - 1);

      if (path == NULL || g_str_equal (path, request->path))
        return request->body;
    }

  return NULL;
}

/**
 * kaged_fake_server_dup_stats:
 *
 * Returns: (transfer full): what `GET /__fake/stats` answers
 */
char *
kaged_fake_server_dup_stats (KagedFakeServer *self)
{
  g_autoptr(JsonObject) stats = NULL;

  g_return_val_if_fail (KAGED_IS_FAKE_SERVER (self), NULL);

  stats = build_stats (self);
  return object_to_string (stats);
}
