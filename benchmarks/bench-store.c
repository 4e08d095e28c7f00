/* bench-store.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <glib/gstdio.h>
#include <sys/resource.h>

#include "kaged-store.h"
#include "kaged-test-files.h"

#define N_MESSAGES   50000
#define N_SUPERSEDED 10000
#define PAGE_SIZE    50
#define BATCH_SIZE   5000

static const char * const words[] = {
  "the", "model", "answer", "retry", "session", "because", "provider", "window", "quickly",
  "Lisbon", "token", "stream", "network", "a", "of", "and", "to", "in", "is", "that", "with",
  "context", "summary", "operator", "regenerate", "failure", "rate", "limit", "carefully",
};

/* Prose of 200 to 2000 bytes. */
static char *
make_text (GRand *rand)
{
  guint target = g_rand_int_range (rand, 200, 2001);
  GString *text = g_string_sized_new (target + 16);

  while (text->len < target)
    {
      g_string_append (text, words[g_rand_int_range (rand, 0, G_N_ELEMENTS (words))]);
      g_string_append_c (text, g_rand_int_range (rand, 0, 12) == 0 ? '.' : ' ');
    }
  g_string_truncate (text, target);

  return g_string_free (text, FALSE);
}

static double
ms_since (gint64 start)
{
  return (g_get_monotonic_time () - start) / 1000.0;
}

static void
check (gboolean  ok,
       GError   *error)
{
  if (!ok)
    g_error ("%s", error != NULL ? error->message : "failed");
}

static GArray *
fill (KagedStore *store,
      gint64      session_id)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (20240601);
  GArray *ids = g_array_sized_new (FALSE, FALSE, sizeof (gint64), N_MESSAGES);
  gint64 run_id = 0;
  gint64 start = g_get_monotonic_time ();
  guint64 bytes = 0;

  for (guint i = 0; i < N_MESSAGES; i++)
    {
      g_autoptr(KagedMessage) message = kaged_message_new ();
      g_autoptr(GError) error = NULL;
      g_autofree char *text = make_text (rand);
      gint64 id;

      if (i % BATCH_SIZE == 0)
        check (kaged_store_begin (store, &error), error);

      bytes += strlen (text);
      kaged_message_set_session_id (message, session_id);
      kaged_message_set_content (message, text);

      if (i % 2 == 0)
        {
          kaged_message_set_role (message, KAGED_MESSAGE_ROLE_OPERATOR);
        }
      else
        {
          kaged_message_set_role (message, KAGED_MESSAGE_ROLE_AGENT);
          kaged_message_set_run_id (message, run_id);
          kaged_message_set_status (message, KAGED_MESSAGE_STATUS_COMPLETE);
        }
      check (kaged_store_append_message (store, message, &error), error);
      id = kaged_message_get_id (message);
      g_array_append_val (ids, id);

      if (i % 2 == 0)
        {
          g_autoptr(KagedRun) run = kaged_run_new ();

          kaged_run_set_session_id (run, session_id);
          kaged_run_set_anchor_id (run, id);
          kaged_run_set_status (run, KAGED_RUN_STATUS_SUCCEEDED);
          kaged_run_set_input_tokens (run, 100 + i);
          kaged_run_set_output_tokens (run, 300);
          check (kaged_store_create_run (store, run, &error), error);
          run_id = kaged_run_get_id (run);
        }

      if (i % BATCH_SIZE == BATCH_SIZE - 1)
        check (kaged_store_commit (store, &error), error);
    }

  g_print ("insert %d messages (%.1f MB of text, %d runs): %.0f ms\n",
           N_MESSAGES, bytes / 1e6, N_MESSAGES / 2, ms_since (start));

  return ids;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp (NULL, &error);
  g_autofree char *path = NULL;
  g_autoptr(KagedStore) store = NULL;
  g_autoptr(KagedSession) session = NULL;
  g_autoptr(GArray) ids = NULL;
  g_autoptr(GArray) superseded = NULL;
  g_autoptr(GPtrArray) page = NULL;
  g_autoptr(KagedRun) rerun = NULL;
  GStatBuf st;
  struct rusage usage;
  double open_ms, first_page_ms, latest_page_ms, supersede_ms;
  double page_superseded_ms, page_current_ms, walk_ms, count_ms;
  double followed_ms, edits_ms;
  gint64 session_id;
  gint64 anchor_id;
  gint64 start;
  guint n_current = 0;
  guint n_walked = 0;
  guint n_followed = 0;
  gint64 after;

  check (dir != NULL, error);
  path = g_build_filename (dir, "kaged.db", NULL);

  store = kaged_store_open (path, &error);
  check (store != NULL, error);
  session = kaged_store_create_session (store, "Benchmark", &error);
  check (session != NULL, error);
  session_id = kaged_session_get_id (session);
  ids = fill (store, session_id);
  g_clear_object (&store);

  g_stat (path, &st);
  g_print ("database size: %.1f MB\n", st.st_size / 1e6);

  /* Start-up: open the store and show the first page of the session. */
  start = g_get_monotonic_time ();
  store = kaged_store_open (path, &error);
  check (store != NULL, error);
  open_ms = ms_since (start);
  start = g_get_monotonic_time ();
  page = kaged_store_list_messages (store, session_id, FALSE, 0, PAGE_SIZE, &error);
  check (page != NULL && page->len == PAGE_SIZE, error);
  first_page_ms = ms_since (start);
  g_clear_pointer (&page, g_ptr_array_unref);

  start = g_get_monotonic_time ();
  page = kaged_store_list_messages_before (store, session_id, FALSE, 0, PAGE_SIZE, &error);
  check (page != NULL && page->len == PAGE_SIZE, error);
  latest_page_ms = ms_since (start);
  g_clear_pointer (&page, g_ptr_array_unref);

  /* Regenerate from the last operator message before the last 10,000 messages. */
  anchor_id = g_array_index (ids, gint64, N_MESSAGES - N_SUPERSEDED - 2);
  rerun = kaged_run_new ();
  kaged_run_set_session_id (rerun, session_id);
  kaged_run_set_anchor_id (rerun, anchor_id);
  check (kaged_store_create_run (store, rerun, &error), error);

  start = g_get_monotonic_time ();
  check (kaged_store_supersede_after (store, session_id,
                                      g_array_index (ids, gint64, N_MESSAGES - N_SUPERSEDED - 1),
                                      kaged_run_get_id (rerun), &superseded, &error),
         error);
  supersede_ms = ms_since (start);
  check (superseded->len == N_SUPERSEDED, NULL);

  /* Paged back to the earliest superseded message: the first hundred
   * that followed it, and how many in all, as its row shows them. */
  start = g_get_monotonic_time ();
  page = kaged_store_list_superseded_with (store,
                                           g_array_index (ids, gint64, N_MESSAGES - N_SUPERSEDED),
                                           100, &n_followed, &error);
  check (page != NULL && page->len == 100 && n_followed == N_SUPERSEDED - 1, error);
  followed_ms = ms_since (start);
  g_clear_pointer (&page, g_ptr_array_unref);

  /* The earlier texts of the question regenerated from, which its row
   * asks for each time it is shown: none, past 10,000 superseded after it. */
  start = g_get_monotonic_time ();
  page = kaged_store_list_edits (store, anchor_id, &error);
  check (page != NULL && page->len == 0, error);
  edits_ms = ms_since (start);
  g_clear_pointer (&page, g_ptr_array_unref);

  /* A page inside the superseded messages, with them shown. */
  start = g_get_monotonic_time ();
  page = kaged_store_list_messages (store, session_id, TRUE,
                                    g_array_index (ids, gint64, N_MESSAGES - N_SUPERSEDED - 1),
                                    PAGE_SIZE, &error);
  check (page != NULL && page->len == PAGE_SIZE && kaged_message_is_superseded (page->pdata[0]),
         error);
  page_superseded_ms = ms_since (start);
  g_clear_pointer (&page, g_ptr_array_unref);

  /* The current messages around them: past all 10,000 superseded ones. */
  start = g_get_monotonic_time ();
  page = kaged_store_list_messages (store, session_id, FALSE,
                                    g_array_index (ids, gint64, N_MESSAGES - N_SUPERSEDED - 30),
                                    PAGE_SIZE, &error);
  check (page != NULL && page->len == 29, error);
  page_current_ms = ms_since (start);
  g_clear_pointer (&page, g_ptr_array_unref);

  start = g_get_monotonic_time ();
  check (kaged_store_count_messages (store, session_id, FALSE, &n_current, &error), error);
  count_ms = ms_since (start);
  check (n_current == N_MESSAGES - N_SUPERSEDED, NULL);

  /* Every message, superseded included, page by page. */
  start = g_get_monotonic_time ();
  after = 0;
  for (;;)
    {
      page = kaged_store_list_messages (store, session_id, TRUE, after, 500, &error);
      check (page != NULL, error);
      if (page->len == 0)
        break;
      n_walked += page->len;
      after = kaged_message_get_id (page->pdata[page->len - 1]);
      g_clear_pointer (&page, g_ptr_array_unref);
    }
  walk_ms = ms_since (start);
  check (n_walked == N_MESSAGES, NULL);
  g_clear_pointer (&page, g_ptr_array_unref);

  g_clear_object (&store);
  getrusage (RUSAGE_SELF, &usage);

  g_print ("open: %.2f ms\n", open_ms);
  g_print ("first page (%d current messages): %.2f ms\n", PAGE_SIZE, first_page_ms);
  g_print ("open + first page: %.2f ms (target <= 50 ms)\n", open_ms + first_page_ms);
  g_print ("latest page (%d current messages): %.2f ms\n", PAGE_SIZE, latest_page_ms);
  g_print ("supersede the last %d messages: %.2f ms (target <= 50 ms)\n",
           N_SUPERSEDED, supersede_ms);
  g_print ("what followed the first of them (100 of %d messages, and their count): %.2f ms\n",
           N_SUPERSEDED - 1, followed_ms);
  g_print ("earlier texts of the question they followed: %.2f ms\n", edits_ms);
  g_print ("page of %d with superseded: %.2f ms\n", PAGE_SIZE, page_superseded_ms);
  g_print ("page of current messages skipping %d superseded: %.2f ms\n",
           N_SUPERSEDED, page_current_ms);
  g_print ("count current messages: %.2f ms\n", count_ms);
  g_print ("walk all %d messages with superseded, pages of 500: %.0f ms\n", N_MESSAGES, walk_ms);
  g_print ("peak RSS: %.1f MB (target <= 60 MB)\n", usage.ru_maxrss / 1024.0);

  /* `bench-store --keep` leaves the database behind for a closer look. */
  if (argc > 1 && g_str_equal (argv[1], "--keep"))
    g_print ("database kept: %s\n", path);
  else
    kaged_test_remove_tree (dir);

  return 0;
}
