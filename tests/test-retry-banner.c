/* test-retry-banner.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "config.h"

#include <adwaita.h>

#include "kaged-clock.h"
#include "kaged-profile.h"
#include "kaged-retry-banner.h"
#include "kaged-retry-scheduler.h"
#include "kaged-retry-text.h"
#include "kaged-run.h"
#include "kaged-test-doubles.h"

#define SESSION_ID 3
#define ANCHOR_ID  21

/* 2026-03-10 13:42:00 UTC */
#define START_WALL_MS ((gint64)1773150120000)

/* --- fixture ------------------------------------------------------------------- */

typedef struct
{
  KagedClock          *clock;
  TestDispatcher      *dispatcher;
  GNetworkMonitor     *monitor;
  KagedRetryScheduler *scheduler;
  GtkWindow           *window;
  KagedRetryBanner    *banner;
} Fixture;

static void
iterate (void)
{
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

static void
advance (Fixture *f,
         gint64   ms)
{
  test_clock_advance (f->clock, ms);
}

static GtkWidget *
find_named (GtkWidget  *widget,
            const char *name)
{
  if (g_strcmp0 (gtk_widget_get_name (widget), name) == 0)
    return widget;

  for (GtkWidget *child = gtk_widget_get_first_child (widget);
       child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_named (child, name);

      if (found != NULL)
        return found;
    }

  return NULL;
}

static const char *
label_text (Fixture    *f,
            const char *name)
{
  GtkWidget *label = find_named (GTK_WIDGET (f->banner), name);

  g_assert_true (GTK_IS_LABEL (label));
  return gtk_label_get_label (GTK_LABEL (label));
}

static GtkWidget *
button (Fixture    *f,
        const char *name)
{
  GtkWidget *widget = find_named (GTK_WIDGET (f->banner), name);

  g_assert_true (GTK_IS_BUTTON (widget));
  return widget;
}

/* What a pointer click or Enter on a focused button ends in. */
static void
click (Fixture    *f,
       const char *name)
{
  g_signal_emit_by_name (button (f, name), "clicked");
}

static void
fixture_set_up (Fixture       *f,
                gconstpointer  data)
{
  f->clock = kaged_fake_clock_new (START_WALL_MS);
  f->dispatcher = g_object_new (TEST_TYPE_DISPATCHER, NULL);
  f->monitor = g_object_new (TEST_TYPE_NETWORK_MONITOR, NULL);
  f->scheduler = kaged_retry_scheduler_new (SESSION_ID, KAGED_RETRY_DISPATCHER (f->dispatcher),
                                            NULL, f->clock, f->monitor);

  f->window = GTK_WINDOW (gtk_window_new ());
  gtk_window_set_default_size (f->window, 960, 120);
  f->banner = KAGED_RETRY_BANNER (kaged_retry_banner_new ());
  gtk_widget_set_valign (GTK_WIDGET (f->banner), GTK_ALIGN_START);
  gtk_window_set_child (f->window, GTK_WIDGET (f->banner));
  kaged_retry_banner_set_scheduler (f->banner, f->scheduler);
  gtk_window_present (f->window);
  iterate ();
}

static void
fixture_tear_down (Fixture       *f,
                   gconstpointer  data)
{
  gtk_window_destroy (f->window);
  iterate ();
  g_assert_finalize_object (f->scheduler);
  g_assert_finalize_object (f->dispatcher);
  g_assert_finalize_object (f->monitor);
  g_assert_finalize_object (f->clock);
}

static void
fail_run (Fixture         *f,
          gint64           id,
          KagedRetryClass  retry_class,
          guint            http_status,
          gint64           retry_after_until,
          const char      *wait_source)
{
  g_autoptr(KagedRun) run = kaged_run_new ();

  kaged_run_set_id (run, id);
  kaged_run_set_session_id (run, SESSION_ID);
  kaged_run_set_anchor_id (run, ANCHOR_ID);
  kaged_run_set_status (run, KAGED_RUN_STATUS_FAILED);
  kaged_run_set_retryable (run, TRUE);
  kaged_run_set_retry_class (run, retry_class);
  kaged_run_set_http_status (run, http_status);
  kaged_run_set_retry_after_until (run, retry_after_until);

  if (wait_source != NULL)
    {
      g_autoptr(KagedAttempt) attempt = kaged_attempt_new ();

      attempt->http_status = http_status;
      attempt->retry_class = retry_class;
      attempt->wait_ms = retry_after_until - kaged_clock_get_wall_ms (f->clock);
      attempt->wait_source = g_strdup (wait_source);
      kaged_run_add_attempt (run, attempt);
    }

  kaged_retry_scheduler_run_finished (f->scheduler, run);
}

static void
count_notify (GObject    *object,
              GParamSpec *pspec,
              guint      *count)
{
  (*count)++;
}

/* --- words ------------------------------------------------------------------- */

static void
test_format (void)
{
  static const struct {
    gint64      seconds;
    const char *text;
  } durations[] = {
    { 0, "0 s" }, { 1, "1 s" }, { 59, "59 s" }, { 60, "1 min" }, { 61, "1 min 1 s" },
    { 299, "4 min 59 s" }, { 3000, "50 min" }, { 3600, "1 h" }, { 5400, "1 h 30 min" },
  };
  g_autofree char *today = NULL;
  g_autofree char *today_12h = NULL;
  g_autofree char *tomorrow = NULL;
  g_autofree char *weekday = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (durations); i++)
    {
      g_autofree char *text = kaged_retry_format_duration (durations[i].seconds);

      g_assert_cmpstr (text, ==, durations[i].text);
    }

  /* TZ=UTC; 13:42 on Tuesday 10 March 2026. */
  today = kaged_retry_format_retry_after (START_WALL_MS + 50 * 60000, START_WALL_MS, FALSE);
  g_assert_cmpstr (today, ==, "Retry after 14:32");
  today_12h = kaged_retry_format_retry_after (START_WALL_MS + 50 * 60000, START_WALL_MS, TRUE);
  g_assert_cmpstr (today_12h, ==, "Retry after 2:32 PM");
  tomorrow = kaged_retry_format_retry_after (START_WALL_MS + 11 * 3600000, START_WALL_MS, FALSE);
  g_assert_cmpstr (tomorrow, ==, "Retry tomorrow after 00:42");
  weekday = kaged_retry_format_retry_after (START_WALL_MS + 3 * 86400000, START_WALL_MS, FALSE);
  g_assert_cmpstr (weekday, ==, "Retry Friday after 13:42");

  /* The same moments as a reply's card says them, in whole sentences;
   * with the date, for an exported conversation. */
  {
    static const struct {
      gint64      until_ms;
      gint64      now_ms;
      gboolean    use_12h;
      const char *text;
    } quota[] = {
      { START_WALL_MS + 50 * 60000, START_WALL_MS, FALSE,
        "Your quota with the provider is used up until 14:32" },
      { START_WALL_MS + 50 * 60000, START_WALL_MS, TRUE,
        "Your quota with the provider is used up until 2:32 PM" },
      { START_WALL_MS + 11 * 3600000, START_WALL_MS, FALSE,
        "Your quota with the provider is used up until tomorrow at 00:42" },
      { START_WALL_MS + 3 * 86400000, START_WALL_MS, FALSE,
        "Your quota with the provider is used up until Friday at 13:42" },
      { START_WALL_MS + 50 * 60000, 0, FALSE,
        "Your quota with the provider is used up until 03/10/26 at 14:32" },
    };

    for (guint i = 0; i < G_N_ELEMENTS (quota); i++)
      {
        g_autofree char *text = kaged_retry_describe_quota_until (quota[i].until_ms, quota[i].now_ms,
                                                                  quota[i].use_12h);

        g_assert_cmpstr (text, ==, quota[i].text);
      }
  }
}

static void
test_reason_texts (void)
{
  static const struct {
    KagedRetryClass  retry_class;
    guint            http_status;
    gint64           advised_wait_ms;
    const char      *reason;
  } cases[] = {
    { KAGED_RETRY_CLASS_OVERLOADED, 529, 0, "The provider is overloaded (HTTP 529)" },
    { KAGED_RETRY_CLASS_SERVER_ERROR, 502, 0, "The provider had a server error (HTTP 502)" },
    { KAGED_RETRY_CLASS_RATE_LIMITED, 429, 90000,
      "Rate limited (HTTP 429) — the provider asked to wait 1 min 30 s" },
    { KAGED_RETRY_CLASS_NETWORK, 0, 0, "The connection to the provider failed" },
    /* The answer began (HTTP 200) and was cut off: its status says nothing. */
    { KAGED_RETRY_CLASS_NETWORK, 200, 0, "The connection was lost before the reply was complete" },
    { KAGED_RETRY_CLASS_TIMEOUT, 200, 0, "The provider did not answer in time" },
    { KAGED_RETRY_CLASS_RATE_LIMITED, 429, 1000,
      "Rate limited (HTTP 429) — the provider asked to wait 1 s" },
    { KAGED_RETRY_CLASS_QUOTA_SCHEDULED, 429, 2 * 3600 * 1000,
      "The provider’s quota is used up until it resets (HTTP 429) — the provider asked to wait 2 h" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *reason = kaged_retry_describe_reason (cases[i].retry_class,
                                                             cases[i].http_status,
                                                             cases[i].advised_wait_ms);

      g_assert_cmpstr (reason, ==, cases[i].reason);
    }

  g_assert_cmpstr (kaged_retry_describe_wait_source ("backoff"), ==, "Kaged, doubling after each failure up to a limit");
  g_assert_cmpstr (kaged_retry_describe_wait_source ("retry-after"), ==,
                   "the provider’s Retry-After header");
  g_assert_cmpstr (kaged_retry_describe_wait_source ("x-ratelimit-reset"), ==,
                   "the provider’s rate-limit reset time");
  g_assert_cmpstr (kaged_retry_describe_wait_source ("provider-reset"), ==,
                   "the provider’s quota reset time");
}

static KagedProfile *
new_profile (const char        *id,
             KagedProviderKind  kind,
             const char        *base_url)
{
  KagedProfile *profile = kaged_profile_new ("A Provider", kind, base_url, "a-model");

  kaged_profile_set_id (profile, id);

  return profile;
}

/* What a person can do about a server that cannot be reached: start
 * Ollama on this computer; check a server elsewhere, and in Preferences
 * its address, unless it was given on the command line. */
static void
test_unreachable_hint (void)
{
  struct {
    const char *id;
    KagedProviderKind kind;
    const char *base_url;
    const char *hint;
  } cases[] = {
    { "default", KAGED_PROVIDER_KIND_OLLAMA, "http://localhost:11434",
      "Is Ollama running? Start it on this computer." },
    { "default", KAGED_PROVIDER_KIND_OLLAMA, "http://gpu-box.lan:11434",
      "Check that the server at http://gpu-box.lan:11434 is running and that its address in Preferences is right." },
    { "work", KAGED_PROVIDER_KIND_OPENAI, "http://127.0.0.1:9/v1",
      "Check that the server at http://127.0.0.1:9/v1 is running and that its address in Preferences is right." },
    { NULL, KAGED_PROVIDER_KIND_OPENAI, "http://127.0.0.1:8080/v1",
      "Check that the server at http://127.0.0.1:8080/v1, given on the command line, is running." },
    { NULL, KAGED_PROVIDER_KIND_OLLAMA, "http://127.0.0.1:11434",
      "Is Ollama running? Start it on this computer." },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(KagedProfile) profile = new_profile (cases[i].id, cases[i].kind, cases[i].base_url);
      g_autofree char *hint = kaged_retry_describe_unreachable (profile);

      g_assert_cmpstr (hint, ==, cases[i].hint);
    }

  g_assert_null (kaged_retry_describe_unreachable (NULL));
}

/* A retry scheduled for after midnight says "tomorrow" until midnight. */
static void
test_scheduled_across_midnight (Fixture       *f,
                                gconstpointer  data)
{
  /* 13:42 + 11 h = 00:42 the next day. */
  fail_run (f, 1, KAGED_RETRY_CLASS_QUOTA_SCHEDULED, 429, START_WALL_MS + 11 * 3600000, NULL);
  g_assert_cmpstr (label_text (f, "status"), ==, "Retry tomorrow after 00:42");

  /* 23:59 → still tomorrow; 00:01 → today. */
  advance (f, (10 * 60 + 17) * 60000);
  g_assert_cmpstr (label_text (f, "status"), ==, "Retry tomorrow after 00:42");
  advance (f, 2 * 60000);
  g_assert_cmpstr (label_text (f, "status"), ==, "Retry after 00:42");
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);
  advance (f, 41 * 60000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
}

/* The desktop's 12h/24h choice, followed as it changes. */
static void
test_clock_format_setting (Fixture       *f,
                           gconstpointer  data)
{
  g_autoptr(GSettings) settings = kaged_retry_new_interface_settings ();

  if (settings == NULL)
    {
      g_test_skip ("org.gnome.desktop.interface is not installed");
      return;
    }

  g_settings_reset (settings, "clock-format");
  fail_run (f, 1, KAGED_RETRY_CLASS_QUOTA_SCHEDULED, 429, START_WALL_MS + 50 * 60000, NULL);
  g_assert_cmpstr (label_text (f, "status"), ==, "Retry after 14:32");

  g_settings_set_string (settings, "clock-format", "12h");
  iterate ();
  g_assert_cmpstr (label_text (f, "status"), ==, "Retry after 2:32 PM");

  g_settings_reset (settings, "clock-format");
  iterate ();
  g_assert_cmpstr (label_text (f, "status"), ==, "Retry after 14:32");
}

/* --- tests ----------------------------------------------------------------------- */

static void
test_hidden_when_idle (Fixture       *f,
                       gconstpointer  data)
{
  g_assert_false (kaged_retry_banner_get_revealed (f->banner));
  g_assert_false (gtk_widget_is_sensitive (button (f, "retry-now")));
}

static void
test_countdown (Fixture       *f,
                gconstpointer  data)
{
  GtkWidget *status = find_named (GTK_WIDGET (f->banner), "status");
  guint n_changes = 0;

  fail_run (f, 1, KAGED_RETRY_CLASS_RATE_LIMITED, 0, START_WALL_MS + 40000, "retry-after");

  g_assert_true (kaged_retry_banner_get_revealed (f->banner));
  g_assert_cmpstr (label_text (f, "reason"), ==, "Rate limited — the provider asked to wait 40 s");
  g_assert_cmpstr (label_text (f, "detail"), ==,
                   "Retry 1 · wait set by the provider’s Retry-After header");
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying in 40 s");

  g_signal_connect (status, "notify::label", G_CALLBACK (count_notify), &n_changes);

  advance (f, 1000);
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying in 39 s");
  g_assert_cmpuint (n_changes, ==, 1);

  /* The narrow arrangement says the same. */
  g_assert_cmpstr (label_text (f, "status-narrow"), ==, "Retrying in 39 s");
  g_assert_cmpstr (label_text (f, "reason-narrow"), ==,
                   "Rate limited — the provider asked to wait 40 s");

  /* Once a second, and not in between. */
  advance (f, 500);
  g_assert_cmpuint (n_changes, ==, 1);
  advance (f, 8500);
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying in 30 s");
  g_assert_cmpuint (n_changes, ==, 10);

  /* The retry starts: the banner says so, and Retry Now is done with. */
  advance (f, 30000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
  g_assert_cmpint (f->dispatcher->last_anchor_id, ==, ANCHOR_ID);
  g_assert_true (kaged_retry_banner_get_revealed (f->banner));
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying…");
  g_assert_false (gtk_widget_is_sensitive (button (f, "retry-now")));
}

static void
test_overloaded (Fixture       *f,
                 gconstpointer  data)
{
  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED, 529, 0, NULL);

  g_assert_true (kaged_retry_banner_get_revealed (f->banner));
  g_assert_cmpstr (label_text (f, "reason"), ==, "The provider is overloaded (HTTP 529)");
  g_assert_cmpstr (label_text (f, "detail"), ==, "Retry 1 · wait set by Kaged, doubling after each failure up to a limit");
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying in 2 s");

  /* The next failure of the retry: attempt 2. */
  advance (f, 2000);
  fail_run (f, kaged_retry_scheduler_get_run_id (f->scheduler), KAGED_RETRY_CLASS_OVERLOADED,
            503, 0, NULL);
  g_assert_cmpstr (label_text (f, "reason"), ==, "The provider is overloaded (HTTP 503)");
  g_assert_cmpstr (label_text (f, "detail"), ==, "Retry 2 · wait set by Kaged, doubling after each failure up to a limit");
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying in 4 s");
}

static void
test_scheduled (Fixture       *f,
                gconstpointer  data)
{
  fail_run (f, 1, KAGED_RETRY_CLASS_QUOTA_SCHEDULED, 429, START_WALL_MS + 50 * 60000, NULL);

  g_assert_true (kaged_retry_banner_get_revealed (f->banner));
  g_assert_cmpstr (label_text (f, "status"), ==, "Retry after 14:32");
  g_assert_cmpstr (label_text (f, "detail"), ==,
                   "Retry 1 · wait set by the provider’s quota reset time");
}

static void
test_waiting_for_network (Fixture       *f,
                          gconstpointer  data)
{
  fail_run (f, 1, KAGED_RETRY_CLASS_NETWORK, 0, 0, NULL);
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying in 2 s");

  kaged_retry_scheduler_set_network_available (f->scheduler, FALSE);
  g_assert_true (kaged_retry_banner_get_revealed (f->banner));
  g_assert_cmpstr (label_text (f, "status"), ==, "Waiting for network…");
  g_assert_cmpstr (label_text (f, "reason"), ==, "The connection to the provider failed");

  kaged_retry_scheduler_set_network_available (f->scheduler, TRUE);
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying…");
  iterate ();
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
  g_assert_true (kaged_retry_banner_get_revealed (f->banner));
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying…");
}

static void
test_retry_now_button (Fixture       *f,
                       gconstpointer  data)
{
  fail_run (f, 1, KAGED_RETRY_CLASS_SERVER_ERROR, 502, 0, NULL);
  advance (f, 2000);
  fail_run (f, kaged_retry_scheduler_get_run_id (f->scheduler), KAGED_RETRY_CLASS_SERVER_ERROR,
            502, 0, NULL);
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying in 4 s");

  g_assert_true (gtk_widget_is_sensitive (button (f, "retry-now")));
  click (f, "retry-now");
  iterate ();

  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 2);
  g_assert_cmpint (kaged_clock_get_wall_ms (f->clock), ==, START_WALL_MS + 2000);
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying…");
  g_assert_false (gtk_widget_is_sensitive (button (f, "retry-now")));
}

static void
test_cancel_button (Fixture       *f,
                    gconstpointer  data)
{
  guint n_revealed = 0;

  g_signal_connect (f->banner, "notify::revealed", G_CALLBACK (count_notify), &n_revealed);

  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED, 529, 0, NULL);
  g_assert_true (kaged_retry_banner_get_revealed (f->banner));

  g_assert_true (gtk_widget_is_sensitive (button (f, "cancel")));
  click (f, "cancel");
  g_assert_cmpint (kaged_retry_scheduler_get_state (f->scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_CANCELLED);
  g_assert_false (kaged_retry_banner_get_revealed (f->banner));
  g_assert_cmpuint (n_revealed, ==, 2);

  advance (f, 600000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 0);
  g_assert_false (kaged_retry_banner_get_revealed (f->banner));
}

/* Once the retry has gone out, the banner stays until the retried run
 * resolves, and its Cancel cancels that run. */
static void
test_cancel_while_retrying (Fixture       *f,
                            gconstpointer  data)
{
  gint64 retry_run_id;

  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED, 529, 0, NULL);
  advance (f, 2000);
  g_assert_cmpint (kaged_retry_scheduler_get_state (f->scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_WATCHING);
  retry_run_id = kaged_retry_scheduler_get_run_id (f->scheduler);

  g_assert_true (kaged_retry_banner_get_revealed (f->banner));
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying…");
  g_assert_false (gtk_widget_is_sensitive (button (f, "retry-now")));
  g_assert_true (gtk_widget_is_sensitive (button (f, "cancel")));

  click (f, "cancel");
  g_assert_cmpuint (f->dispatcher->n_cancel, ==, 1);
  g_assert_cmpint (f->dispatcher->last_cancelled_run_id, ==, retry_run_id);
  g_assert_cmpint (kaged_retry_scheduler_get_state (f->scheduler), ==,
                   KAGED_RETRY_SCHEDULER_STATE_CANCELLED);
  g_assert_false (kaged_retry_banner_get_revealed (f->banner));
}

/* The retried run ends with a reply: the banner goes. */
static void
test_hidden_when_retry_succeeds (Fixture       *f,
                                 gconstpointer  data)
{
  g_autoptr(KagedRun) run = kaged_run_new ();

  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED, 529, 0, NULL);
  advance (f, 2000);
  g_assert_true (kaged_retry_banner_get_revealed (f->banner));

  kaged_run_set_id (run, kaged_retry_scheduler_get_run_id (f->scheduler));
  kaged_run_set_session_id (run, SESSION_ID);
  kaged_run_set_anchor_id (run, ANCHOR_ID);
  kaged_run_set_status (run, KAGED_RUN_STATUS_SUCCEEDED);
  kaged_retry_scheduler_run_finished (f->scheduler, run);
  g_assert_false (kaged_retry_banner_get_revealed (f->banner));
}

static void
test_accessible (Fixture       *f,
                 gconstpointer  data)
{
  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED, 529, 0, NULL);

  gtk_test_accessible_assert_property (GTK_ACCESSIBLE (button (f, "retry-now")),
                                       GTK_ACCESSIBLE_PROPERTY_LABEL, "Retry now");
  gtk_test_accessible_assert_property (GTK_ACCESSIBLE (button (f, "cancel")),
                                       GTK_ACCESSIBLE_PROPERTY_LABEL, "Cancel retry");
  gtk_test_accessible_assert_property (GTK_ACCESSIBLE (button (f, "retry-now-narrow")),
                                       GTK_ACCESSIBLE_PROPERTY_LABEL, "Retry now");
  gtk_test_accessible_assert_property (GTK_ACCESSIBLE (button (f, "cancel-narrow")),
                                       GTK_ACCESSIBLE_PROPERTY_LABEL, "Cancel retry");
  gtk_test_accessible_assert_property (GTK_ACCESSIBLE (button (f, "retry-now-phone")),
                                       GTK_ACCESSIBLE_PROPERTY_LABEL, "Retry now");
  gtk_test_accessible_assert_property (GTK_ACCESSIBLE (button (f, "cancel-phone")),
                                       GTK_ACCESSIBLE_PROPERTY_LABEL, "Cancel retry");
  gtk_test_accessible_assert_property (GTK_ACCESSIBLE (f->banner),
                                       GTK_ACCESSIBLE_PROPERTY_LABEL, "Automatic retry");
  /* Only the arrangement shown is there for a screen reader, not copies
   * of its words and buttons. */
  advance (f, 100);
  g_assert_true (gtk_widget_get_mapped (find_named (GTK_WIDGET (f->banner), "arrangement")));
  gtk_test_accessible_assert_state (GTK_ACCESSIBLE (find_named (GTK_WIDGET (f->banner), "arrangement")),
                                    GTK_ACCESSIBLE_STATE_HIDDEN, FALSE);
  gtk_test_accessible_assert_state (GTK_ACCESSIBLE (find_named (GTK_WIDGET (f->banner), "arrangement-narrow")),
                                    GTK_ACCESSIBLE_STATE_HIDDEN, TRUE);
  gtk_test_accessible_assert_state (GTK_ACCESSIBLE (find_named (GTK_WIDGET (f->banner), "arrangement-phone")),
                                    GTK_ACCESSIBLE_STATE_HIDDEN, TRUE);
  gtk_test_accessible_assert_role (GTK_ACCESSIBLE (f->banner), GTK_ACCESSIBLE_ROLE_GROUP);

  g_assert_cmpstr (gtk_widget_get_tooltip_text (button (f, "retry-now")), ==,
                   "Start the retry without waiting");
  g_assert_cmpstr (gtk_widget_get_tooltip_text (button (f, "cancel")), ==,
                   "Stop retrying this reply");
}

static void
test_rebind (Fixture       *f,
             gconstpointer  data)
{
  g_autoptr(KagedRetryScheduler) other = NULL;

  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED, 529, 0, NULL);
  g_assert_true (kaged_retry_banner_get_revealed (f->banner));

  /* Another conversation with nothing pending. */
  other = kaged_retry_scheduler_new (SESSION_ID + 1, KAGED_RETRY_DISPATCHER (f->dispatcher),
                                     NULL, f->clock, f->monitor);
  kaged_retry_banner_set_scheduler (f->banner, other);
  g_assert_false (kaged_retry_banner_get_revealed (f->banner));

  /* The first one's countdown no longer reaches the banner. */
  advance (f, 1000);
  g_assert_false (kaged_retry_banner_get_revealed (f->banner));
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying in 2 s");

  kaged_retry_banner_set_scheduler (f->banner, f->scheduler);
  g_assert_true (kaged_retry_banner_get_revealed (f->banner));
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying in 1 s");

  kaged_retry_banner_set_scheduler (f->banner, NULL);
  g_assert_false (kaged_retry_banner_get_revealed (f->banner));
  g_assert_null (kaged_retry_banner_get_scheduler (f->banner));

  /* The scheduler goes on after the banner is gone. */
  kaged_retry_banner_set_scheduler (f->banner, f->scheduler);
  gtk_window_destroy (f->window);
  f->window = GTK_WINDOW (gtk_window_new ());
  advance (f, 1000);
  g_assert_cmpuint (f->dispatcher->n_regenerate, ==, 1);
}

static int
minimum_width (GtkWidget *widget)
{
  int minimum = 0;

  gtk_widget_measure (widget, GTK_ORIENTATION_HORIZONTAL, -1, &minimum, NULL, NULL, NULL);

  return minimum;
}

/* While a retry counts down, the wide arrangement needs no less room from
 * one second to the next: it would otherwise take the place of the narrow
 * one at "9 s" on a window where "10 s" did not fit, and move the buttons
 * under the pointer. */
static void
test_steady_width (Fixture       *f,
                   gconstpointer  data)
{
  GtkWidget *status = find_named (GTK_WIDGET (f->banner), "status");
  int at_ten;

  fail_run (f, 1, KAGED_RETRY_CLASS_RATE_LIMITED, 429, START_WALL_MS + 10000, "retry-after");
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying in 10 s");
  at_ten = minimum_width (status);

  advance (f, 1000);
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying in 9 s");
  g_assert_cmpint (minimum_width (status), >=, at_ten);

  /* Nor once the retry is under way. */
  advance (f, 9000);
  g_assert_cmpstr (label_text (f, "status"), ==, "Retrying…");
  g_assert_cmpint (minimum_width (status), >=, at_ten);
}

/* The same for the narrow arrangement, whose status sits beside the
 * buttons too: it would otherwise give way to the phone's at "9 s". */
static void
test_steady_width_narrow (Fixture       *f,
                          gconstpointer  data)
{
  GtkWidget *status = find_named (GTK_WIDGET (f->banner), "status-narrow");
  int at_ten;

  fail_run (f, 1, KAGED_RETRY_CLASS_RATE_LIMITED, 429, START_WALL_MS + 10000, "retry-after");
  g_assert_cmpstr (label_text (f, "status-narrow"), ==, "Retrying in 10 s");
  at_ten = minimum_width (status);

  advance (f, 1000);
  g_assert_cmpstr (label_text (f, "status-narrow"), ==, "Retrying in 9 s");
  g_assert_cmpint (minimum_width (status), >=, at_ten);

  advance (f, 9000);
  g_assert_cmpstr (label_text (f, "status-narrow"), ==, "Retrying…");
  g_assert_cmpint (minimum_width (status), >=, at_ten);
}

/* The label named @name shown in @banner, in whichever arrangement. */
static GtkLabel *
shown_label (GtkWidget  *banner,
             const char *name)
{
  static const char * const suffixes[] = { "", "-narrow", "-phone" };
  GtkWidget *shown = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (suffixes); i++)
    {
      g_autofree char *full = g_strconcat (name, suffixes[i], NULL);
      GtkWidget *label = find_named (banner, full);

      g_assert_true (GTK_IS_LABEL (label));
      if (gtk_widget_get_mapped (label))
        {
          /* One arrangement is ever shown. */
          g_assert_null (shown);
          shown = label;
        }
    }
  g_assert_nonnull (shown);

  return GTK_LABEL (shown);
}

static int
lines_of (GtkLabel *label)
{
  return pango_layout_get_line_count (gtk_label_get_layout (label));
}

/* On a narrow window the buttons go under the words; on a phone the
 * countdown has a line of its own above them. One arrangement is ever
 * shown, and what it says reads on whole lines. */
static void
test_narrow (Fixture       *f,
             gconstpointer  data)
{
  GtkWindow *narrow = GTK_WINDOW (gtk_window_new ());
  GtkWindow *phone = GTK_WINDOW (gtk_window_new ());
  KagedRetryBanner *narrow_banner = KAGED_RETRY_BANNER (kaged_retry_banner_new ());
  KagedRetryBanner *phone_banner = KAGED_RETRY_BANNER (kaged_retry_banner_new ());
  GtkLabel *status;

  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED, 503, 0, NULL);

  /* The wide window of the fixture shows the wide arrangement. */
  advance (f, 100);
  g_assert_true (gtk_widget_get_mapped (find_named (GTK_WIDGET (f->banner), "status")));
  g_assert_false (gtk_widget_get_mapped (find_named (GTK_WIDGET (f->banner), "status-narrow")));

  gtk_window_set_default_size (narrow, 560, 200);
  kaged_retry_banner_set_scheduler (narrow_banner, f->scheduler);
  gtk_window_set_child (narrow, GTK_WIDGET (narrow_banner));
  gtk_window_present (narrow);
  gtk_window_set_default_size (phone, 360, 200);
  kaged_retry_banner_set_scheduler (phone_banner, f->scheduler);
  gtk_window_set_child (phone, GTK_WIDGET (phone_banner));
  gtk_window_present (phone);
  advance (f, 100);

  /* Beside the sidebar or alone in a small window: the status beside the
   * buttons. */
  status = shown_label (GTK_WIDGET (narrow_banner), "status");
  g_assert_cmpstr (gtk_widget_get_name (GTK_WIDGET (status)), ==, "status-narrow");
  g_assert_cmpstr (gtk_label_get_label (status), ==, "Retrying in 2 s");
  g_assert_cmpint (lines_of (status), ==, 1);

  /* On a phone: the reason, the countdown, each on a line. */
  status = shown_label (GTK_WIDGET (phone_banner), "status");
  g_assert_cmpstr (gtk_widget_get_name (GTK_WIDGET (status)), ==, "status-phone");
  g_assert_cmpstr (gtk_label_get_label (status), ==, "Retrying in 2 s");
  g_assert_cmpint (lines_of (status), ==, 1);
  g_assert_cmpstr (gtk_label_get_label (shown_label (GTK_WIDGET (phone_banner), "reason")), ==,
                   "The provider is overloaded (HTTP 503)");
  g_assert_cmpint (lines_of (shown_label (GTK_WIDGET (phone_banner), "reason")), ==, 1);

  /* It fits the narrowest window, with a long countdown too. */
  g_assert_cmpint (minimum_width (GTK_WIDGET (phone_banner)), <=, 360);
  advance (f, 100);
  fail_run (f, 2, KAGED_RETRY_CLASS_QUOTA_SCHEDULED, 429, START_WALL_MS + 299 * 1000, NULL);
  advance (f, 100);
  status = shown_label (GTK_WIDGET (phone_banner), "status");
  g_assert_cmpstr (gtk_widget_get_name (GTK_WIDGET (status)), ==, "status-phone");
  g_assert_cmpint (lines_of (status), ==, 1);
  g_assert_cmpint (minimum_width (GTK_WIDGET (phone_banner)), <=, 360);
  g_assert_cmpint (gtk_widget_get_width (GTK_WIDGET (phone)), <=, 360);
  status = shown_label (GTK_WIDGET (narrow_banner), "status");
  g_assert_cmpstr (gtk_widget_get_name (GTK_WIDGET (status)), ==, "status-narrow");
  g_assert_cmpint (lines_of (status), ==, 1);

  gtk_window_destroy (narrow);
  gtk_window_destroy (phone);
  iterate ();
}

/* Beside the sidebar of a usual window, the banner has some 680 px: a long
 * reason reads on one or two lines, not in a column of three beside the
 * buttons. */
static void
test_reason_room (Fixture       *f,
                  gconstpointer  data)
{
  fail_run (f, 1, KAGED_RETRY_CLASS_OVERLOADED, 503, START_WALL_MS + 30 * 1000, "retry-after");
  g_assert_cmpstr (label_text (f, "reason"), ==,
                   "The provider is overloaded (HTTP 503) — the provider asked to wait 30 s");

  for (int width = 1000; width >= 520; width -= 80)
    {
      GtkWindow *window = GTK_WINDOW (gtk_window_new ());
      KagedRetryBanner *banner = KAGED_RETRY_BANNER (kaged_retry_banner_new ());

      gtk_window_set_default_size (window, width, 200);
      kaged_retry_banner_set_scheduler (banner, f->scheduler);
      gtk_window_set_child (window, GTK_WIDGET (banner));
      gtk_window_present (window);
      for (guint i = 0; i < 50; i++)
        iterate ();

      g_test_message ("%d px: the reason takes %d lines", gtk_widget_get_width (GTK_WIDGET (banner)),
                      lines_of (shown_label (GTK_WIDGET (banner), "reason")));
      g_assert_cmpint (lines_of (shown_label (GTK_WIDGET (banner), "reason")), <=, 2);

      gtk_window_destroy (window);
      iterate ();
    }
}

int
main (int   argc,
      char *argv[])
{
  gtk_test_init (&argc, &argv, NULL);
  adw_init ();

  g_object_set (gtk_settings_get_default (), "gtk-enable-animations", FALSE, NULL);

#define ADD(path, func) \
  g_test_add ("/retry-banner/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  ADD ("hidden-when-idle", test_hidden_when_idle);
  ADD ("reason-room", test_reason_room);
  ADD ("countdown", test_countdown);
  ADD ("overloaded", test_overloaded);
  ADD ("scheduled", test_scheduled);
  ADD ("waiting-for-network", test_waiting_for_network);
  ADD ("retry-now-button", test_retry_now_button);
  ADD ("cancel-button", test_cancel_button);
  ADD ("accessible", test_accessible);
  ADD ("rebind", test_rebind);
  ADD ("cancel-while-retrying", test_cancel_while_retrying);
  ADD ("hidden-when-retry-succeeds", test_hidden_when_retry_succeeds);
  ADD ("narrow", test_narrow);
  ADD ("steady-width", test_steady_width);
  ADD ("steady-width-narrow", test_steady_width_narrow);
  ADD ("scheduled-across-midnight", test_scheduled_across_midnight);
  ADD ("clock-format-setting", test_clock_format_setting);
  g_test_add_func ("/retry-banner/format", test_format);
  g_test_add_func ("/retry-banner/reason-texts", test_reason_texts);
  g_test_add_func ("/retry-banner/unreachable-hint", test_unreachable_hint);

#undef ADD

  return g_test_run ();
}
