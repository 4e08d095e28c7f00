/* bench-stream-frames.c
 *
 * A streaming reply in a message list, frame by frame, without a
 * provider: a reply of N tokens grows by 10 tokens at a time (200 tokens/s
 * shown 20 times a second), and FRAMES (default 1) frames are drawn after
 * each step; the list follows the end in the frame that lays it out, as the
 * window does. Prints the main thread's CPU time per step and per frame,
 * and what that makes at 20 steps a second; START tokens are shown at
 * once before, to measure the frames of a long reply; with NO_CODE set,
 * the reply has no code blocks. Run it under
 * `valgrind --tool=callgrind --toggle-collect=wait_frames` to count the
 * instructions of the frames alone.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <time.h>

#include <adwaita.h>

#include "kaged-message-row.h"
#include "kaged-message.h"

#define TOKENS_PER_STEP 10
#define STEPS_PER_SECOND 20

static guint frames_seen;

static double
cpu_seconds (void)
{
  struct timespec now;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &now);
  return now.tv_sec + now.tv_nsec / 1e9;
}

static void
after_paint_cb (GdkFrameClock *clock,
                gpointer       user_data)
{
  frames_seen++;
}

static void
layout_cb (GdkFrameClock *clock,
           GtkAdjustment *vadjustment)
{
  gtk_adjustment_set_value (vadjustment, gtk_adjustment_get_upper (vadjustment) -
                                         gtk_adjustment_get_page_size (vadjustment));
}

static void
setup_cb (GtkSignalListItemFactory *factory,
          GtkListItem              *item)
{
  gtk_list_item_set_child (item, kaged_message_row_new ());
}

static void
bind_cb (GtkSignalListItemFactory *factory,
         GtkListItem              *item)
{
  kaged_message_row_set_message (KAGED_MESSAGE_ROW (gtk_list_item_get_child (item)),
                                 gtk_list_item_get_item (item));
}

static GPtrArray *
markdown_tokens (guint n)
{
  static const char *prose[] = { "The ", "provider ", "streams ", "a ", "reply ", "in ",
                                 "small ", "pieces ", "and ", "the ", "window ", "shows ",
                                 "**each** ", "piece ", "as ", "it ", "comes, ", "with ",
                                 "`inline ", "code` ", "too. " };
  static const char *code[] = { "```c\n", "static ", "int\n", "add ", "(int ", "a, ", "int ",
                                "b)\n", "{\n", "  return ", "a + ", "b;\n", "}\n", "```\n" };
  GPtrArray *tokens = g_ptr_array_new_with_free_func (g_free);

  for (guint part = 0; tokens->len < n; part++)
    {
      g_ptr_array_add (tokens, g_strdup_printf ("\n## Part %u\n\n", part));
      for (guint i = 0; i < G_N_ELEMENTS (prose); i++)
        g_ptr_array_add (tokens, g_strdup (prose[i]));
      g_ptr_array_add (tokens, g_strdup ("\n\n- a list item\n- another one\n\n"));
      for (guint i = 0; i < G_N_ELEMENTS (code); i++)
        g_ptr_array_add (tokens, g_strdup (g_getenv ("NO_CODE") != NULL ? "word " : code[i]));
    }
  g_ptr_array_set_size (tokens, n);

  return tokens;
}

/* Not inlined: `valgrind --tool=callgrind --toggle-collect=wait_frames`
 * counts the frames alone. */
static G_GNUC_NO_INLINE void
wait_frames (GdkFrameClock *clock,
             guint          n)
{
  guint until = frames_seen + n;

  while (frames_seen < until)
    {
      gdk_frame_clock_request_phase (clock, GDK_FRAME_CLOCK_PHASE_PAINT);
      g_main_context_iteration (NULL, TRUE);
    }
}

/* Frames not counted by --toggle-collect=wait_frames. */
static G_GNUC_NO_INLINE void
settle (GdkFrameClock *clock)
{
  guint until = frames_seen + 5;

  while (frames_seen < until)
    {
      gdk_frame_clock_request_phase (clock, GDK_FRAME_CLOCK_PHASE_PAINT);
      g_main_context_iteration (NULL, TRUE);
    }
}

int
main (int   argc,
      char *argv[])
{
  guint n_tokens = argc > 1 ? (guint)g_ascii_strtoull (argv[1], NULL, 10) : 4000;
  guint frames_per_step = MAX (1, (guint)g_ascii_strtoull (g_getenv ("FRAMES") ?: "1", NULL, 10));
  g_autoptr(GPtrArray) tokens = markdown_tokens (n_tokens);
  g_autoptr(GListStore) store = g_list_store_new (KAGED_TYPE_MESSAGE);
  g_autoptr(KagedMessage) question = kaged_message_new ();
  g_autoptr(KagedMessage) reply = kaged_message_new ();
  g_autoptr(GString) text = g_string_new (NULL);
  GtkListItemFactory *factory;
  GtkWidget *window, *scroller, *list;
  GtkAdjustment *vadjustment;
  GdkFrameClock *clock;
  gint64 start, first_part = 0, last_part = 0;
  guint steps, part, start_tokens;
  double cpu_start, cpu_streaming;

  adw_init ();

  kaged_message_set_id (question, 1);
  kaged_message_set_role (question, KAGED_MESSAGE_ROLE_OPERATOR);
  kaged_message_set_content (question, "Write a long answer");
  kaged_message_set_id (reply, 2);
  kaged_message_set_role (reply, KAGED_MESSAGE_ROLE_AGENT);
  kaged_message_set_status (reply, KAGED_MESSAGE_STATUS_STREAMING);
  g_list_store_append (store, question);
  g_list_store_append (store, reply);

  factory = gtk_signal_list_item_factory_new ();
  g_signal_connect (factory, "setup", G_CALLBACK (setup_cb), NULL);
  g_signal_connect (factory, "bind", G_CALLBACK (bind_cb), NULL);
  list = gtk_list_view_new (GTK_SELECTION_MODEL (gtk_no_selection_new (g_object_ref (G_LIST_MODEL (store)))),
                            factory);
  scroller = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scroller), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), list);
  window = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (window), 1000, 700);
  gtk_window_set_child (GTK_WINDOW (window), scroller);
  gtk_window_present (GTK_WINDOW (window));

  while (gtk_native_get_surface (GTK_NATIVE (window)) == NULL ||
         !gtk_widget_get_mapped (window))
    g_main_context_iteration (NULL, TRUE);
  clock = gdk_surface_get_frame_clock (gtk_native_get_surface (GTK_NATIVE (window)));
  g_signal_connect (clock, "after-paint", G_CALLBACK (after_paint_cb), NULL);
  settle (clock);

  vadjustment = gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (scroller));
  g_signal_connect_after (clock, "layout", G_CALLBACK (layout_cb), vadjustment);
  /* START tokens arrived before: the frames of a reply already long. */
  start_tokens = MIN (n_tokens, (guint)g_ascii_strtoull (g_getenv ("START") ?: "0", NULL, 10));
  for (guint i = 0; i < start_tokens; i++)
    g_string_append (text, g_ptr_array_index (tokens, i));
  kaged_message_set_content (reply, text->str);
  settle (clock);
  g_ptr_array_remove_range (tokens, 0, start_tokens);
  n_tokens -= start_tokens;

  steps = (n_tokens + TOKENS_PER_STEP - 1) / TOKENS_PER_STEP;
  part = MAX (steps / 10, 1);
  start = g_get_monotonic_time ();
  cpu_start = cpu_seconds ();
  for (guint step = 0; step < steps; step++)
    {
      gint64 step_start = g_get_monotonic_time ();

      for (guint i = step * TOKENS_PER_STEP; i < MIN ((step + 1) * TOKENS_PER_STEP, tokens->len); i++)
        g_string_append (text, g_ptr_array_index (tokens, i));
      kaged_message_set_content (reply, text->str);
      wait_frames (clock, frames_per_step);

      if (step < part)
        first_part += g_get_monotonic_time () - step_start;
      else if (step >= steps - part)
        last_part += g_get_monotonic_time () - step_start;
    }

  cpu_streaming = cpu_seconds () - cpu_start;
  g_print ("%u tokens, %u frames: %.1f s; per frame %.2f ms in the first tenth, %.2f ms in the last\n",
           n_tokens, steps * frames_per_step, (g_get_monotonic_time () - start) / 1e6,
           first_part / 1e3 / (part * frames_per_step), last_part / 1e3 / (part * frames_per_step));
  g_print ("main-thread CPU while streaming: %.2f s, %.2f ms per step, %.2f ms per frame; "
           "%.1f %% of a core at %u steps a second\n",
           cpu_streaming, cpu_streaming * 1e3 / steps, cpu_streaming * 1e3 / (steps * frames_per_step),
           100.0 * cpu_streaming / steps * STEPS_PER_SECOND, STEPS_PER_SECOND);

  /* The reply still streaming, with no new text: what each frame costs. */
  cpu_start = cpu_seconds ();
  wait_frames (clock, 120);
  g_print ("frames without new text: %.2f ms of CPU each\n", (cpu_seconds () - cpu_start) * 1e3 / 120);

  gtk_window_destroy (GTK_WINDOW (window));
  return 0;
}
