/* kaged-retry-text.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry-text"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-models.h"
#include "kaged-retry-class.h"
#include "kaged-retry-text.h"

/**
 * kaged_retry_format_duration:
 * @seconds: a duration in seconds
 *
 * Returns: (transfer full): the duration for people: "40 s", "4 min 5 s",
 *   "2 h 30 min"
 */
char *
kaged_retry_format_duration (gint64 seconds)
{
  int h, m, s;

  seconds = CLAMP (seconds, 0, (gint64)G_MAXINT / 2);
  h = (int)(seconds / 3600);
  m = (int)((seconds % 3600) / 60);
  s = (int)(seconds % 60);

  if (h > 0 && m > 0)
    /* Translators: a duration in hours and minutes */
    return g_strdup_printf (_("%d h %d min"), h, m);
  if (h > 0)
    /* Translators: a duration in hours */
    return g_strdup_printf (_("%d h"), h);
  if (m > 0 && s > 0)
    /* Translators: a duration in minutes and seconds */
    return g_strdup_printf (_("%d min %d s"), m, s);
  if (m > 0)
    /* Translators: a duration in minutes */
    return g_strdup_printf (_("%d min"), m);

  /* Translators: a duration in seconds */
  return g_strdup_printf (_("%d s"), s);
}

/* The time of day of @when_ms, local, on the desktop's clock, and how
 * many days from @now_ms's day it falls; for a day other than today or
 * tomorrow, @day names it: the weekday within a week, else the date.
 * %NULL for a time that cannot be told. */
static char *
format_moment (gint64     when_ms,
               gint64     now_ms,
               gboolean   use_12h,
               int       *days,
               char     **day)
{
  g_autoptr(GDateTime) when = g_date_time_new_from_unix_local (when_ms / 1000);
  g_autoptr(GDateTime) now = g_date_time_new_from_unix_local (now_ms / 1000);
  GDate when_date;
  GDate now_date;
  char *time;

  *day = NULL;
  if (when == NULL || now == NULL)
    return NULL;

  if (use_12h)
    /* Translators: the time of day on a 12-hour clock, see g_date_time_format()
     * xgettext:no-c-format */
    time = g_date_time_format (when, _("%-l:%M %p"));
  else
    /* Translators: the time of day on a 24-hour clock, see g_date_time_format()
     * xgettext:no-c-format */
    time = g_date_time_format (when, _("%H:%M"));

  g_date_clear (&when_date, 1);
  g_date_clear (&now_date, 1);
  g_date_set_dmy (&when_date, g_date_time_get_day_of_month (when),
                  g_date_time_get_month (when), g_date_time_get_year (when));
  g_date_set_dmy (&now_date, g_date_time_get_day_of_month (now),
                  g_date_time_get_month (now), g_date_time_get_year (now));
  *days = g_date_days_between (&now_date, &when_date);

  if (*days > 1 && *days < 7)
    /* Translators: the weekday of a retry within a week, see g_date_time_format()
     * xgettext:no-c-format */
    *day = g_date_time_format (when, _("%A"));
  else if (*days != 0 && *days != 1)
    /* Translators: the date of a retry further away, see g_date_time_format()
     * xgettext:no-c-format */
    *day = g_date_time_format (when, _("%x"));

  return time;
}

/**
 * kaged_retry_format_retry_after:
 * @when_ms: when the retry may start, epoch milliseconds
 * @now_ms: the time now, epoch milliseconds
 * @use_12h: whether the desktop shows a 12-hour clock
 *
 * Returns: (transfer full): "Retry after 14:32" in local time, naming the
 *   day when it is not today
 */
char *
kaged_retry_format_retry_after (gint64   when_ms,
                                gint64   now_ms,
                                gboolean use_12h)
{
  g_autofree char *time = NULL;
  g_autofree char *day = NULL;
  int days = 0;

  time = format_moment (when_ms, now_ms, use_12h, &days, &day);
  if (time == NULL)
    return NULL;

  if (days == 0)
    /* Translators: shown while a retry waits for a time today, e.g. "Retry after 14:32" */
    return g_strdup_printf (_("Retry after %s"), time);

  if (days == 1)
    /* Translators: e.g. "Retry tomorrow after 00:20" */
    return g_strdup_printf (_("Retry tomorrow after %s"), time);

  /* Translators: a day and a time, e.g. "Retry Friday after 14:32" */
  return g_strdup_printf (_("Retry %s after %s"), day, time);
}

/**
 * kaged_retry_describe_quota_until:
 * @until_ms: when the provider's quota resets, epoch milliseconds
 * @now_ms: the time now, epoch milliseconds, or 0 for a text that says
 *   the date whenever it is read (as in an exported conversation)
 * @use_12h: whether the desktop shows a 12-hour clock
 *
 * Says until when a quota is used up, as the retry banner says the time:
 * "…until 14:32" today, "…until tomorrow at 00:20", "…until Friday at
 * 14:32".
 *
 * Returns: (transfer full) (nullable): the sentence, or %NULL for a time
 *   that cannot be told
 */
char *
kaged_retry_describe_quota_until (gint64   until_ms,
                                  gint64   now_ms,
                                  gboolean use_12h)
{
  g_autofree char *time = NULL;
  g_autofree char *day = NULL;
  int days = 0;

  /* Without a now, from a week before: neither today nor tomorrow nor a
   * weekday, always the date. */
  time = format_moment (until_ms, now_ms > 0 ? now_ms : until_ms - 7 * 24 * 3600 * G_GINT64_CONSTANT (1000),
                        use_12h, &days, &day);
  if (time == NULL)
    return NULL;

  if (days == 0)
    /* Translators: %s is a time of day today, e.g. 14:32 */
    return g_strdup_printf (_("Your quota with the provider is used up until %s"), time);

  if (days == 1)
    /* Translators: %s is a time of day tomorrow, e.g. 00:20 */
    return g_strdup_printf (_("Your quota with the provider is used up until tomorrow at %s"), time);

  /* Translators: a day (a weekday within a week, else a date) and a time
   * of day, e.g. "…used up until Friday at 14:32" */
  return g_strdup_printf (_("Your quota with the provider is used up until %s at %s"), day, time);
}

/**
 * kaged_retry_desktop_clock_settings:
 *
 * The desktop's interface settings, one object for the process, to read
 * its `clock-format` and to hear when it changes.
 *
 * Returns: (transfer none) (nullable): the settings, or %NULL when the
 *   desktop's schema is not installed
 */
GSettings *
kaged_retry_desktop_clock_settings (void)
{
  static GSettings *settings;
  static gsize looked_up;

  if (g_once_init_enter (&looked_up))
    {
      settings = kaged_retry_new_interface_settings ();
      g_once_init_leave (&looked_up, 1);
    }

  return settings;
}

/**
 * kaged_retry_desktop_uses_12h:
 *
 * Returns: whether the desktop's clock shows 12 hours (GNOME's
 *   `clock-format`); %FALSE when it cannot be told
 */
gboolean
kaged_retry_desktop_uses_12h (void)
{
  GSettings *settings = kaged_retry_desktop_clock_settings ();
  g_autofree char *format = NULL;

  if (settings == NULL)
    return FALSE;

  format = g_settings_get_string (settings, "clock-format");

  return g_strcmp0 (format, "12h") == 0;
}

/**
 * kaged_retry_describe_wait_source:
 *
 * Returns: where a wait came from, in words to follow "wait set by", e.g.
 *   "the provider’s Retry-After header"
 */
const char *
kaged_retry_describe_wait_source (const char *wait_source)
{
  if (wait_source == NULL || g_str_equal (wait_source, KAGED_RETRY_WAIT_SOURCE_BACKOFF))
    /* Translators: who set a wait before a retry, after "wait set by" or
     * "Waited 2.0 s, set by"; each wait is twice the one before, up to a limit */
    return _("Kaged, doubling after each failure up to a limit");

  if (g_str_equal (wait_source, "retry-after") || g_str_equal (wait_source, "retry-after-ms"))
    return _("the provider’s Retry-After header");

  if (g_str_equal (wait_source, "anthropic-ratelimit-reset") ||
      g_str_equal (wait_source, "x-ratelimit-reset"))
    return _("the provider’s rate-limit reset time");

  if (g_str_equal (wait_source, KAGED_RETRY_WAIT_SOURCE_PROVIDER_RESET))
    return _("the provider’s quota reset time");

  return wait_source;
}

/**
 * kaged_retry_describe_unreachable:
 * @profile: (nullable): the profile whose server could not be reached
 *
 * What a person can do when the server of @profile cannot be reached:
 * start Ollama on this computer, or check the server and its address. A
 * profile given on the command line (without an id) is not in the
 * preferences.
 *
 * Returns: (transfer full) (nullable): a sentence or two, or %NULL
 *   without a profile
 */
char *
kaged_retry_describe_unreachable (KagedProfile *profile)
{
  const char *id;
  const char *base_url;
  gboolean saved;

  if (profile == NULL)
    return NULL;

  id = kaged_profile_get_id (profile);
  base_url = kaged_profile_get_base_url (profile);
  saved = id != NULL && id[0] != '\0';

  if (kaged_profile_get_kind (profile) == KAGED_PROVIDER_KIND_OLLAMA && kaged_url_is_local (base_url))
    return g_strdup (_("Is Ollama running? Start it on this computer."));

  if (saved)
    /* Translators: %s is a server's address, e.g. http://localhost:8080/v1 */
    return g_strdup_printf (_("Check that the server at %s is running and that its address in Preferences is right."),
                            base_url != NULL ? base_url : "");

  /* Translators: %s is a server's address, e.g. http://localhost:8080/v1 */
  return g_strdup_printf (_("Check that the server at %s, given on the command line, is running."),
                          base_url != NULL ? base_url : "");
}

/**
 * kaged_retry_describe_reason:
 * @retry_class: the class of the failure a retry waits for
 * @http_status: its HTTP status, or 0
 * @advised_wait_ms: how long the provider asked to wait, or 0
 *
 * Returns: (transfer full): why a retry waits, for people: "The provider
 *   is overloaded (HTTP 529)", "Rate limited — the provider asked to wait
 *   40 s"
 */
char *
kaged_retry_describe_reason (KagedRetryClass retry_class,
                             guint           http_status,
                             gint64          advised_wait_ms)
{
  g_autofree char *base = NULL;
  const char *described;
  /* A successful status means the answer began and then failed: the
   * status tells nothing about why. */
  gboolean answer_began = http_status >= 200 && http_status < 300;

  if (retry_class == KAGED_RETRY_CLASS_RATE_LIMITED)
    described = _("Rate limited");
  else if (retry_class == KAGED_RETRY_CLASS_NETWORK && answer_began)
    described = _("The connection was lost before the reply was complete");
  else
    described = kaged_retry_class_describe (retry_class);

  if (described == NULL)
    described = _("The provider failed");

  if (http_status != 0 && !answer_began)
    /* Translators: a failure and its HTTP status, e.g. "The provider is overloaded (HTTP 529)" */
    base = g_strdup_printf (_("%s (HTTP %u)"), described, http_status);
  else
    base = g_strdup (described);

  if (advised_wait_ms > 0)
    {
      g_autofree char *wait = kaged_retry_format_duration ((advised_wait_ms + 999) / 1000);

      /* Translators: "Rate limited — the provider asked to wait 40 s" */
      return g_strdup_printf (_("%s — the provider asked to wait %s"), base, wait);
    }

  return g_steal_pointer (&base);
}

/**
 * kaged_retry_dup_reason:
 *
 * Returns: (transfer full) (nullable): why @scheduler's retry waits, in
 *   words, or %NULL when nothing waits
 */
char *
kaged_retry_dup_reason (KagedRetryScheduler *scheduler)
{
  KagedRetryClass retry_class;

  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (scheduler), NULL);

  retry_class = kaged_retry_scheduler_get_retry_class (scheduler);
  if (retry_class == KAGED_RETRY_CLASS_NONE)
    return NULL;

  return kaged_retry_describe_reason (retry_class,
                                      kaged_retry_scheduler_get_http_status (scheduler),
                                      kaged_retry_scheduler_get_advised_wait_ms (scheduler));
}

/**
 * kaged_retry_new_interface_settings:
 *
 * Returns: (transfer full) (nullable): the desktop's interface settings,
 *   whose `clock-format` says 12h or 24h, or %NULL when the desktop's
 *   schema is not installed
 */
GSettings *
kaged_retry_new_interface_settings (void)
{
  GSettingsSchemaSource *source = g_settings_schema_source_get_default ();
  g_autoptr(GSettingsSchema) schema = NULL;

  if (source != NULL)
    schema = g_settings_schema_source_lookup (source, "org.gnome.desktop.interface", TRUE);
  if (schema == NULL || !g_settings_schema_has_key (schema, "clock-format"))
    return NULL;

  return g_settings_new_full (schema, NULL, NULL);
}

/**
 * kaged_retry_dup_scheduled_label:
 *
 * Returns: (transfer full) (nullable): "Retry after 14:32" in the
 *   desktop's clock format (kaged_retry_desktop_clock_settings(), which
 *   tells when it changes) while @scheduler is scheduled, else %NULL
 */
char *
kaged_retry_dup_scheduled_label (KagedRetryScheduler *scheduler)
{
  gint64 next;
  gint64 now;

  g_return_val_if_fail (KAGED_IS_RETRY_SCHEDULER (scheduler), NULL);

  next = kaged_retry_scheduler_get_next_eligible_time (scheduler);
  if (kaged_retry_scheduler_get_state (scheduler) != KAGED_RETRY_SCHEDULER_STATE_SCHEDULED ||
      next <= 0)
    return NULL;

  now = kaged_clock_get_wall_ms (kaged_retry_scheduler_get_clock (scheduler));

  return kaged_retry_format_retry_after (next, now, kaged_retry_desktop_uses_12h ());
}

/**
 * kaged_retry_describe_connection:
 * @result: what a profile's Test Connection found
 *
 * Returns: (transfer full): the result for people: "Connected — 12 models
 *   available", "The provider rejected the API key (HTTP 401)", "Nothing
 *   answers at this address (HTTP 404) — check the base URL"
 */
char *
kaged_retry_describe_connection (KagedConnectionResult *result)
{
  KagedRetryClass retry_class;
  guint http_status;

  g_return_val_if_fail (KAGED_IS_CONNECTION_RESULT (result), NULL);

  if (kaged_connection_result_get_ok (result))
    {
      const char * const *models = kaged_connection_result_get_models (result);
      guint n = models != NULL ? g_strv_length ((char **)models) : 0;

      if (n == 0)
        return g_strdup (_("Connected — the server lists no models; type one in"));
      /* Translators: a successful connection test */
      return g_strdup_printf (g_dngettext (GETTEXT_PACKAGE, "Connected — %u model available",
                                           "Connected — %u models available", n), n);
    }

  retry_class = kaged_connection_result_get_retry_class (result);
  http_status = kaged_connection_result_get_http_status (result);

  return kaged_retry_describe_models_failure (retry_class, http_status);
}

/**
 * kaged_retry_describe_models_failure:
 * @retry_class: why a connection test or a model list failed
 * @http_status: the status the server answered, or 0
 *
 * Returns: (transfer full): the failure for people, as Test Connection
 *   and the model chooser say it: "Nothing answers at this address (HTTP
 *   404) — check the base URL" when there is no API at the base URL
 */
char *
kaged_retry_describe_models_failure (KagedRetryClass retry_class,
                                     guint           http_status)
{
  if (retry_class == KAGED_RETRY_CLASS_INVALID_REQUEST && http_status == 404)
    /* Translators: no API answers at the profile's base URL */
    return g_strdup (_("Nothing answers at this address (HTTP 404) — check the base URL"));

  return kaged_retry_describe_reason (retry_class, http_status, 0);
}
