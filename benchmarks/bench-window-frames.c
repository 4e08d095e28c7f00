/* bench-window-frames.c
 *
 * Loaded into kaged with LD_PRELOAD by bench-window.py: watches the frame
 * clock of each toplevel window and appends one line per frame to the file
 * named by BENCH_WINDOW_FRAMES,
 *
 *   END DURATION
 *
 * in microseconds of CLOCK_MONOTONIC (the clock of Python's
 * time.monotonic()): when the frame's painting ended, and how long the
 * frame took from the first phase the frame clock ran (flush-events,
 * before-paint, update, layout or paint) to its after-paint, which covers
 * the tick callbacks, the layout, the snapshot and the rendering.
 *
 * and, for a frame that waited for the X server's replies (round trips,
 * in which the server first finishes every request sent before), a line
 *
 *   wait END DURATION
 *
 * with the same END and the time spent waiting, and a line
 *
 *   cpu END DURATION
 *
 * with the CPU time the main thread used in the frame, both in
 * microseconds: a frame longer than their sum waited for something else
 * (the kernel, or a CPU given to another program). Only Xlib's replies
 * count as waits; waits for events, or made through xcb, do not.
 *
 * It also appends a line
 *
 *   busy END DURATION
 *
 * for each iteration of the main loop that worked over BUSY_MS: from one
 * return of poll() to its next call. A frame is one such iteration, and
 * so is an idle that work moved out of a frame runs in: a short frame
 * cannot hide a main loop held up between frames. (Iterations that follow
 * each other without waiting are counted apart.)
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

#include <gtk/gtk.h>

/* Often until the first window shows, so as not to miss its first frame;
 * then now and then, for windows opened later. */
#define POLL_MS 2
#define POLL_LATER_MS 500
#define FLUSH_MS 250

#define BUSY_MS 8

static FILE *out;
static gint64 last_flush;
static GPollFunc next_poll;
static gint64 poll_returned;
static gint64 x_wait;
static gint64 frame_cpu_start;

static gint64
thread_cpu_time (void)
{
  struct timespec now;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &now);

  return (gint64)now.tv_sec * G_USEC_PER_SEC + now.tv_nsec / 1000;
}

/* Every round trip of Xlib waits in _XReply(); Display, xReply and Status
 * are passed through untouched. */
typedef int (*XReplyFunc) (void *display, void *reply, int extra, int discard);

int _XReply (void *display, void *reply, int extra, int discard);

int
_XReply (void       *display,
         void       *reply,
         int         extra,
         int         discard)
{
  static XReplyFunc next_reply;
  gint64 start = g_get_monotonic_time ();
  int status;

  if (next_reply == NULL)
    next_reply = (XReplyFunc) dlsym (RTLD_NEXT, "_XReply");
  status = next_reply (display, reply, extra, discard);
  x_wait += g_get_monotonic_time () - start;

  return status;
}

/* A frame runs only the phases it needs: it starts at the first one seen. */
static void
phase_cb (GdkFrameClock *clock,
          gpointer       user_data)
{
  if (g_object_get_data (G_OBJECT (clock), "bench-frame-start") == NULL)
    {
      g_object_set_data (G_OBJECT (clock), "bench-frame-start",
                         GSIZE_TO_POINTER ((gsize)g_get_monotonic_time ()));
      x_wait = 0;
      frame_cpu_start = thread_cpu_time ();
    }
}

static void
after_paint_cb (GdkFrameClock *clock,
                gpointer       user_data)
{
  gint64 start = (gint64)GPOINTER_TO_SIZE (g_object_get_data (G_OBJECT (clock), "bench-frame-start"));
  gint64 now = g_get_monotonic_time ();

  if (start == 0)
    return;

  fprintf (out, "%" G_GINT64_FORMAT " %" G_GINT64_FORMAT "\n", now, now - start);
  if (x_wait > 0)
    fprintf (out, "wait %" G_GINT64_FORMAT " %" G_GINT64_FORMAT "\n", now, x_wait);
  fprintf (out, "cpu %" G_GINT64_FORMAT " %" G_GINT64_FORMAT "\n", now,
           thread_cpu_time () - frame_cpu_start);
  g_object_set_data (G_OBJECT (clock), "bench-frame-start", NULL);

  if (now - last_flush > FLUSH_MS * 1000)
    {
      fflush (out);
      last_flush = now;
    }
}

static gboolean
watch_windows_cb (gpointer user_data)
{
  g_autoptr(GList) toplevels = NULL;
  gboolean watching = FALSE;

  if (!gtk_is_initialized ())
    return G_SOURCE_CONTINUE;

  toplevels = gtk_window_list_toplevels ();
  for (GList *l = toplevels; l != NULL; l = l->next)
    {
      GdkSurface *surface = gtk_native_get_surface (GTK_NATIVE (l->data));
      GdkFrameClock *clock;

      if (surface == NULL || (clock = gdk_surface_get_frame_clock (surface)) == NULL)
        continue;
      watching = TRUE;
      if (g_object_get_data (G_OBJECT (clock), "bench-watched") != NULL)
        continue;

      g_object_set_data (G_OBJECT (clock), "bench-watched", GINT_TO_POINTER (TRUE));
      g_signal_connect (clock, "flush-events", G_CALLBACK (phase_cb), NULL);
      g_signal_connect (clock, "before-paint", G_CALLBACK (phase_cb), NULL);
      g_signal_connect (clock, "update", G_CALLBACK (phase_cb), NULL);
      g_signal_connect (clock, "layout", G_CALLBACK (phase_cb), NULL);
      g_signal_connect (clock, "paint", G_CALLBACK (phase_cb), NULL);
      g_signal_connect_after (clock, "after-paint", G_CALLBACK (after_paint_cb), NULL);
    }

  if (watching && user_data == NULL)
    {
      g_timeout_add (POLL_LATER_MS, watch_windows_cb, GINT_TO_POINTER (TRUE));
      return G_SOURCE_REMOVE;
    }

  return G_SOURCE_CONTINUE;
}

static int
poll_cb (GPollFD *fds,
         guint    n_fds,
         int      timeout)
{
  gint64 now = g_get_monotonic_time ();
  int result;

  if (poll_returned != 0 && now - poll_returned > BUSY_MS * 1000)
    {
      fprintf (out, "busy %" G_GINT64_FORMAT " %" G_GINT64_FORMAT "\n", now, now - poll_returned);
      if (now - last_flush > FLUSH_MS * 1000)
        {
          fflush (out);
          last_flush = now;
        }
    }

  result = next_poll (fds, n_fds, timeout);
  poll_returned = g_get_monotonic_time ();

  return result;
}

__attribute__((constructor)) static void
bench_window_frames_init (void)
{
  const char *path = g_getenv ("BENCH_WINDOW_FRAMES");

  if (path == NULL || (out = fopen (path, "w")) == NULL)
    return;

  g_timeout_add (POLL_MS, watch_windows_cb, NULL);

  next_poll = g_main_context_get_poll_func (NULL);
  g_main_context_set_poll_func (NULL, poll_cb);
}

__attribute__((destructor)) static void
bench_window_frames_fini (void)
{
  if (out != NULL)
    fflush (out);
}
