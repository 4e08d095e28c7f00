/* kaged-source-languages.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-source-languages"

#include "config.h"

#include "kaged-source-languages.h"

/*
 * The definitions of GtkSourceView's languages, parsed away from the main
 * thread and kept parsed.
 *
 * GtkSourceView parses a language's definition when a buffer first
 * highlights it: it reads and validates the file and compiles every
 * pattern, from 10 ms (C) to over 100 ms (Markdown, HTML) on a main thread
 * that should draw a frame every 16 ms. It frees the definition again with
 * the last buffer that highlights it, and a list recycles the rows of a
 * long conversation, with their code, as it scrolls.
 *
 * So a language is loaded once a run, on a worker thread, into a buffer of
 * its own that then keeps the definition parsed: a later buffer only takes
 * a reference. Loads run one at a time, in the order they were asked for.
 *
 * The worker touches nothing the main thread writes meanwhile:
 *  - the buffer is its own, with no style scheme, so no scheme is styled
 *    and no tag is made from one;
 *  - a language's definition is only read or written where a buffer takes
 *    the language; the main thread takes one only once it is loaded here,
 *    and no two loads run at once;
 *  - the lists of languages and style schemes are loaded on the main thread
 *    before the first load (load_next()), so the worker only reads them.
 * The engine the language gives the buffer schedules its first pass from
 * an idle of the main context, which then runs on the main thread, on an
 * empty buffer nobody else uses.
 */

typedef struct
{
  /* id → the GtkSourceBuffer that keeps the language's definition parsed */
  GHashTable *loaded;
  /* id → GPtrArray of the GTasks waiting for it */
  GHashTable *waiting;
  /* GtkSourceLanguage (owned), in the order they were asked for */
  GQueue queue;
  GtkSourceLanguage *loading; /* owned */
} Loader;

static Loader loader;

static void load_next (void);

static void
parse_in_thread (GTask        *task,
                 gpointer      source_object,
                 gpointer      task_data,
                 GCancellable *cancellable)
{
  GtkSourceLanguage *language = task_data;
  GtkSourceBuffer *buffer = gtk_source_buffer_new (NULL);

  gtk_source_buffer_set_style_scheme (buffer, NULL);
  gtk_source_buffer_set_language (buffer, language);

  g_task_return_pointer (task, buffer, g_object_unref);
}

static void
parsed_cb (GObject      *source_object,
           GAsyncResult *result,
           gpointer      user_data)
{
  g_autoptr(GtkSourceLanguage) language = g_steal_pointer (&loader.loading);
  const char *id = gtk_source_language_get_id (language);
  GtkSourceBuffer *buffer = g_task_propagate_pointer (G_TASK (result), NULL);
  g_autoptr(GPtrArray) waiting = NULL;
  g_autofree char *waiting_id = NULL;

  g_assert (buffer != NULL);

  g_hash_table_insert (loader.loaded, g_strdup (id), buffer);

  if (g_hash_table_steal_extended (loader.waiting, id, (gpointer *) &waiting_id, (gpointer *) &waiting))
    {
      for (guint i = 0; i < waiting->len; i++)
        g_task_return_boolean (g_ptr_array_index (waiting, i), TRUE);
    }

  load_next ();
}

static void
load_next (void)
{
  g_autoptr(GTask) task = NULL;

  if (loader.loading != NULL || g_queue_is_empty (&loader.queue))
    return;

  /* What the worker reads, loaded here first (a no-op once loaded). */
  gtk_source_init ();
  gtk_source_language_manager_get_language_ids (gtk_source_language_manager_get_default ());
  gtk_source_style_scheme_manager_get_scheme_ids (gtk_source_style_scheme_manager_get_default ());

  loader.loading = g_queue_pop_head (&loader.queue);
  task = g_task_new (NULL, NULL, parsed_cb, NULL);
  g_task_set_source_tag (task, load_next);
  g_task_set_name (task, "[kaged] parse a language");
  g_task_set_task_data (task, g_object_ref (loader.loading), g_object_unref);
  g_task_run_in_thread (task, parse_in_thread);
}

static gboolean
is_queued (GtkSourceLanguage *language)
{
  return loader.loading == language || g_queue_find (&loader.queue, language) != NULL;
}

/**
 * kaged_source_language_get_loaded:
 * @language: a language
 *
 * Returns: whether @language's definition is parsed, so that a buffer
 *   takes it at once
 */
gboolean
kaged_source_language_get_loaded (GtkSourceLanguage *language)
{
  g_return_val_if_fail (GTK_SOURCE_IS_LANGUAGE (language), FALSE);

  return kaged_source_language_id_loaded (gtk_source_language_get_id (language));
}

/**
 * kaged_source_language_id_loaded:
 * @id: a language's id, as GtkSourceView knows it
 *
 * Returns: whether the language of that id is parsed and kept parsed
 */
gboolean
kaged_source_language_id_loaded (const char *id)
{
  g_return_val_if_fail (id != NULL, FALSE);

  return loader.loaded != NULL && g_hash_table_contains (loader.loaded, id);
}

/**
 * kaged_source_language_load_async:
 * @language: a language
 * @cancellable: (nullable): a #GCancellable
 * @callback: called on the calling thread once @language is loaded
 * @user_data: data for @callback
 *
 * Parses @language's definition on a worker thread, once a run, and keeps
 * it parsed. Call it from the main thread; a buffer given the language
 * after @callback takes the parsed definition without parsing it again.
 */
void
kaged_source_language_load_async (GtkSourceLanguage   *language,
                                  GCancellable        *cancellable,
                                  GAsyncReadyCallback  callback,
                                  gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  const char *id;
  GPtrArray *waiting;

  g_return_if_fail (GTK_SOURCE_IS_LANGUAGE (language));
  g_return_if_fail (!cancellable || G_IS_CANCELLABLE (cancellable));

  task = g_task_new (NULL, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_source_language_load_async);

  if (kaged_source_language_get_loaded (language))
    {
      g_task_return_boolean (task, TRUE);
      return;
    }

  if (loader.loaded == NULL)
    {
      loader.loaded = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_object_unref);
      loader.waiting = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                              (GDestroyNotify) g_ptr_array_unref);
    }

  id = gtk_source_language_get_id (language);
  waiting = g_hash_table_lookup (loader.waiting, id);
  if (waiting == NULL)
    {
      waiting = g_ptr_array_new_with_free_func (g_object_unref);
      g_hash_table_insert (loader.waiting, g_strdup (id), waiting);
    }
  g_ptr_array_add (waiting, g_steal_pointer (&task));

  if (!is_queued (language))
    {
      g_queue_push_tail (&loader.queue, g_object_ref (language));
      load_next ();
    }
}

/**
 * kaged_source_language_load_finish:
 * @result: the result given to the callback
 * @error: return location for an error (cancelled only)
 *
 * Returns: %TRUE once the language is loaded
 */
gboolean
kaged_source_language_load_finish (GAsyncResult  *result,
                                   GError       **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}
