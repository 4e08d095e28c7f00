/* kaged-fake-scenario.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

/*
 * The fake provider's scenarios: what a scenario may say (the help text),
 * reading and checking one, and turning one step into the answer a job
 * plays: a whole body, raw chunks, or a stream generated in a provider's
 * wire format.
 */

#define G_LOG_DOMAIN "kaged-fake-server"

#include "config.h"

#include <string.h>

#include "kaged-fake-server-private.h"

const char kaged_fake_scenario_help[] =
  "Scenario file (JSON)\n"
  "  { \"steps\": [STEP, ...], \"repeat_last\": true,\n"
  "    \"paths\": { \"/v1/messages\": [STEP, ...] } }\n"
  "  or a bare array of steps. Each request consumes the next step of its\n"
  "  path's list (or of \"steps\"); when the list is used up the last step\n"
  "  repeats, or, with \"repeat_last\": false, the server answers 500.\n"
  "  A list with \"mix\": true and a \"seed\" number instead draws each\n"
  "  request's step at random, each step as often as its \"weight\" (default\n"
  "  1) says: the same seed serves the same sequence.\n"
  "\n"
  "STEP fields (all optional):\n"
  "  name              what the step stands for; the request log keeps it as\n"
  "                    the request's \"fault\"\n"
  "  weight            how often a mix draws this step\n"
  "  status            HTTP status (default 200)\n"
  "  headers           object of response headers, e.g. {\"retry-after\": \"120\"}\n"
  "  dated_headers     object of headers whose value is a time \"date_in_ms\"\n"
  "                    from now, written as \"http-date\", \"rfc3339\" or\n"
  "                    \"seconds\" (e.g. 1s, as x-ratelimit-reset-* give it)\n"
  "  date_in_ms        see dated_headers (default 1000)\n"
  "  reset             true: close the connection before any answer\n"
  "  refuse_ms         close the connection, then refuse new connections for\n"
  "                    this many milliseconds (logged in \"refusals\")\n"
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
  "  stamp             true: \"{request}\" anywhere in the step's strings (text,\n"
  "                    body, chunks, headers) becomes the request's number in\n"
  "                    the request log (0 for the first), so that what the\n"
  "                    client keeps of an answer names the request it answered\n"
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
  "                          \"requests\": [{\"method\", \"path\", \"body\",\n"
  "                          \"fault\", \"time\"}], \"refusals\": [[FROM, TO]]}\n"
  "                          (times in ms since the epoch)\n"
  "  POST /__fake/reset     forget requests, restart every step list\n"
  "  POST /__fake/scenario  replace the scenario with the request body\n"
  "\n"
  "Point a Kaged profile's base URL at the address printed on start-up: every\n"
  "path is answered from \"steps\" unless \"paths\" names it. Examples are in\n"
  "tools/scenarios/ of the source tree (overloaded-then-ok.json,\n"
  "rate-limited-long.json, quota-50min.json, ...).\n";

void
kaged_fake_piece_free (Piece *piece)
{
  g_clear_pointer (&piece->data, g_bytes_unref);
  g_free (piece);
}

StepQueue *
kaged_fake_step_queue_new (void)
{
  StepQueue *queue = g_new0 (StepQueue, 1);

  queue->steps = g_ptr_array_new_with_free_func ((GDestroyNotify)json_object_unref);
  queue->repeat_last = TRUE;

  return queue;
}

void
kaged_fake_step_queue_free (StepQueue *queue)
{
  g_clear_pointer (&queue->steps, g_ptr_array_unref);
  g_clear_pointer (&queue->rand, g_rand_free);
  g_free (queue);
}

static guint64
step_weight (JsonObject *step)
{
  if (!json_object_has_member (step, "weight"))
    return 1;
  return json_object_get_int_member (step, "weight");
}

/* The step of the next request, or NULL when the list has none for it. */
JsonObject *
kaged_fake_step_queue_next (StepQueue *queue)
{
  if (queue->steps->len == 0)
    return NULL;

  if (queue->mix && queue->total_weight > 0)
    {
      guint64 pick = (guint64)(g_rand_double (queue->rand) * queue->total_weight);

      for (guint i = 0; i < queue->steps->len; i++)
        {
          JsonObject *step = g_ptr_array_index (queue->steps, i);
          guint64 weight = step_weight (step);

          if (pick < weight)
            return step;
          pick -= weight;
        }
      return g_ptr_array_index (queue->steps, queue->steps->len - 1);
    }

  if (queue->next < queue->steps->len)
    return g_ptr_array_index (queue->steps, queue->next++);
  if (queue->repeat_last)
    return g_ptr_array_index (queue->steps, queue->steps->len - 1);
  return NULL;
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
    "hang_after_chunks", "error_after", "weight", "refuse_ms", "date_in_ms",
  };
  static const char *bool_members[] = { "repeat_chunks", "reset", "hang", "stamp" };
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

  for (guint i = 0; i < G_N_ELEMENTS (bool_members); i++)
    {
      if ((member = json_object_get_member (step, bool_members[i])) != NULL &&
          (!JSON_NODE_HOLDS_VALUE (member) || json_node_get_value_type (member) != G_TYPE_BOOLEAN))
        {
          g_set_error (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                       "“%s” must be true or false", bool_members[i]);
          return FALSE;
        }
    }

  if ((member = json_object_get_member (step, "name")) != NULL &&
      (!JSON_NODE_HOLDS_VALUE (member) || json_node_get_value_type (member) != G_TYPE_STRING))
    {
      g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                           "“name” must be a string");
      return FALSE;
    }

  if ((member = json_object_get_member (step, "dated_headers")) != NULL)
    {
      JsonObjectIter iter;
      const char *name;
      JsonNode *value;

      if (!JSON_NODE_HOLDS_OBJECT (member))
        goto bad_dated;
      json_object_iter_init (&iter, json_node_get_object (member));
      while (json_object_iter_next (&iter, &name, &value))
        {
          const char *form = JSON_NODE_HOLDS_VALUE (value) &&
                             json_node_get_value_type (value) == G_TYPE_STRING
                             ? json_node_get_string (value) : NULL;

          if (g_strcmp0 (form, "http-date") != 0 && g_strcmp0 (form, "rfc3339") != 0 &&
              g_strcmp0 (form, "seconds") != 0)
            goto bad_dated;
        }
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

bad_dated:
  g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                       "“dated_headers” must map names to http-date, rfc3339 or seconds");
  return FALSE;

bad_chunk:
  g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                       "A chunk must be a string or an object with “data”, “sse” or “line”");
  return FALSE;
}

static StepQueue *
parse_queue (JsonNode  *node,
             GError   **error)
{
  StepQueue *queue = kaged_fake_step_queue_new ();
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
          kaged_fake_step_queue_free (queue);
          return NULL;
        }
      if (steps_node != NULL)
        steps = json_node_get_array (steps_node);
      if (json_object_has_member (object, "repeat_last"))
        queue->repeat_last = json_object_get_boolean_member (object, "repeat_last");
      if (json_object_has_member (object, "mix") &&
          json_object_get_boolean_member (object, "mix"))
        {
          JsonNode *seed = json_object_get_member (object, "seed");

          if (seed == NULL || !JSON_NODE_HOLDS_VALUE (seed) ||
              json_node_get_value_type (seed) != G_TYPE_INT64)
            {
              g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                                   "A “mix” needs a “seed” number");
              kaged_fake_step_queue_free (queue);
              return NULL;
            }
          queue->mix = TRUE;
          queue->rand = g_rand_new_with_seed ((guint32)json_node_get_int (seed));
        }
    }
  else
    {
      g_set_error_literal (error, KAGED_FAKE_SERVER_ERROR, KAGED_FAKE_SERVER_ERROR_SCENARIO,
                           "A scenario must be an array of steps or an object");
      kaged_fake_step_queue_free (queue);
      return NULL;
    }

  for (guint i = 0; steps != NULL && i < json_array_get_length (steps); i++)
    {
      JsonNode *step = json_array_get_element (steps, i);

      if (!check_step (step, error))
        {
          g_prefix_error (error, "Step %u: ", i + 1);
          kaged_fake_step_queue_free (queue);
          return NULL;
        }
      g_ptr_array_add (queue->steps, json_object_ref (json_node_get_object (step)));
      queue->total_weight += step_weight (json_node_get_object (step));
    }

  return queue;
}

gboolean
kaged_fake_parse_scenario (const char  *json,
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

  paths = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify)kaged_fake_step_queue_free);

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
          kaged_fake_step_queue_free (queue);
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
              kaged_fake_step_queue_free (queue);
              return FALSE;
            }
          if (!(path_queue = parse_queue (node, error)))
            {
              g_prefix_error (error, "%s: ", path);
              kaged_fake_step_queue_free (queue);
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

char *
kaged_fake_object_to_string (JsonObject *object)
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
  g_autofree char *json = kaged_fake_object_to_string (object);

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
  g_autofree char *json = kaged_fake_object_to_string (object);

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

  job->pieces = g_ptr_array_new_with_free_func ((GDestroyNotify)kaged_fake_piece_free);

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

  job->pieces = g_ptr_array_new_with_free_func ((GDestroyNotify)kaged_fake_piece_free);
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

/* Headers naming a time @in_ms from now, in the form each one asks for. */
static void
add_dated_headers (SoupMessageHeaders *headers,
                   JsonObject         *dated,
                   gint64              in_ms)
{
  gint64 when_us = g_get_real_time () + in_ms * 1000;
  g_autoptr(GDateTime) when = g_date_time_new_from_unix_utc (when_us / G_USEC_PER_SEC);
  JsonObjectIter iter;
  const char *name;
  JsonNode *value;

  json_object_iter_init (&iter, dated);
  while (json_object_iter_next (&iter, &name, &value))
    {
      const char *form = json_node_get_string (value);
      g_autofree char *text = NULL;

      if (g_str_equal (form, "http-date"))
        {
          /* An HTTP date has whole seconds: round up, so the wait is not
           * shorter than asked. */
          g_autoptr(GDateTime) later = g_date_time_add_seconds (when, 1);

          text = g_date_time_format (later, "%a, %d %b %Y %H:%M:%S GMT");
        }
      else if (g_str_equal (form, "rfc3339"))
        {
          g_autoptr(GDateTime) precise = g_date_time_add (when, when_us % G_USEC_PER_SEC);

          text = g_date_time_format (precise, "%Y-%m-%dT%H:%M:%S.%fZ");
        }
      else
        {
          text = g_strdup_printf ("%" G_GINT64_FORMAT "ms", MAX (in_ms, 0));
        }
      soup_message_headers_replace (headers, name, text);
    }
}

void
kaged_fake_job_build (Job        *job,
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
  job->reset = json_object_has_member (step, "reset") && json_object_get_boolean_member (step, "reset");
  job->refuse_ms = get_int (step, "refuse_ms", 0);
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

  if (json_object_has_member (step, "dated_headers"))
    add_dated_headers (job->headers, json_object_get_object_member (step, "dated_headers"),
                       get_int (step, "date_in_ms", 1000));

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
