/* kaged-retry-notifier.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry-notifier"

#include "config.h"

#include <glib/gi18n.h>
#include <gtk/gtk.h>

#include "kaged-retry-notifier.h"
#include "kaged-retry-policy.h"
#include "kaged-retry-text.h"

typedef struct
{
  KagedRetryNotifier       *notifier;   /* unowned: it owns the watches */
  KagedRetryScheduler      *scheduler;
  gulong                    state_id;
  KagedRetrySchedulerState  state;
  guint                     notified : 1;
} Watch;

struct _KagedRetryNotifier
{
  GObject                parent_instance;

  GApplication          *application;  /* weak: the application owns us */
  KagedRetryCoordinator *coordinator;
  KagedSessionManager   *manager;
  GPtrArray             *watches;
  gulong                 added_id;
};

G_DEFINE_FINAL_TYPE (KagedRetryNotifier, kaged_retry_notifier, G_TYPE_OBJECT)

static void
watch_free (Watch *watch)
{
  g_clear_signal_handler (&watch->state_id, watch->scheduler);
  g_clear_object (&watch->scheduler);
  g_free (watch);
}

/**
 * kaged_retry_notifier_dup_id:
 *
 * Returns: the id of a session's "retry scheduled" notification
 */
char *
kaged_retry_notifier_dup_id (gint64 session_id)
{
  return g_strdup_printf ("retry-%" G_GINT64_FORMAT, session_id);
}

/**
 * kaged_retry_notifier_dup_result_id:
 *
 * Returns: the id of a session's "reply ready" or "gave up" notification
 */
char *
kaged_retry_notifier_dup_result_id (gint64 session_id)
{
  return g_strdup_printf ("retry-result-%" G_GINT64_FORMAT, session_id);
}

static gboolean
application_has_focus (KagedRetryNotifier *self)
{
  GtkWindow *window;

  if (!GTK_IS_APPLICATION (self->application))
    return FALSE;

  window = gtk_application_get_active_window (GTK_APPLICATION (self->application));

  return window != NULL && gtk_widget_get_visible (GTK_WIDGET (window)) &&
         gtk_window_is_active (window);
}

static char *
session_title (KagedRetryNotifier *self,
               gint64              session_id)
{
  g_autoptr(KagedSession) session = NULL;

  session = kaged_store_get_session (kaged_session_manager_get_store (self->manager),
                                     session_id, NULL);
  if (session == NULL || kaged_session_get_title (session) == NULL ||
      *kaged_session_get_title (session) == '\0')
    return g_strdup (_("Untitled conversation"));

  return g_strdup (kaged_session_get_title (session));
}

typedef enum
{
  BUTTONS_NONE,
  BUTTONS_CANCEL,
  BUTTONS_RETRY_NOW_AND_CANCEL,
} Buttons;

static void
set_session_actions (GNotification *notification,
                     gint64         session_id,
                     Buttons        buttons)
{
  g_notification_set_default_action_and_target (notification, "app.show-session",
                                                 "x", session_id);

  if (buttons == BUTTONS_RETRY_NOW_AND_CANCEL)
    g_notification_add_button_with_target (notification, _("Retry Now"),
                                           "app.retry-now", "x", session_id);
  if (buttons != BUTTONS_NONE)
    g_notification_add_button_with_target (notification, _("Cancel Retry"),
                                           "app.cancel-retry", "x", session_id);
}

static void
notify_scheduled (KagedRetryNotifier *self,
                  Watch              *watch)
{
  KagedRetryScheduler *scheduler = watch->scheduler;
  gint64 session_id = kaged_retry_scheduler_get_session_id (scheduler);
  g_autoptr(GNotification) notification = NULL;
  g_autofree char *id = kaged_retry_notifier_dup_id (session_id);
  g_autofree char *title = session_title (self, session_id);
  g_autofree char *heading = NULL;
  g_autofree char *body = NULL;
  g_autofree char *reason = kaged_retry_dup_reason (scheduler);
  g_autofree char *when = kaged_retry_dup_scheduled_label (scheduler);

  /* Translators: the title of a notification; %s is a conversation's title */
  heading = g_strdup_printf (_("Reply in “%s” will be retried later"), title);
  /* Translators: "<why it failed>. <Retry after 14:32>, wait set by <where>." */
  body = g_strdup_printf (_("%s. %s, wait set by %s."),
                          reason != NULL ? reason : _("The provider is unavailable"),
                          when != NULL ? when : _("Retrying later"),
                          kaged_retry_describe_wait_source (kaged_retry_scheduler_get_wait_source (scheduler)));

  notification = g_notification_new (heading);
  g_notification_set_body (notification, body);
  g_notification_set_category (notification, "network.error");
  set_session_actions (notification, session_id, BUTTONS_RETRY_NOW_AND_CANCEL);

  g_application_send_notification (self->application, id, notification);
  watch->notified = TRUE;
}

/* The scheduled retry went out: the same notification says so, and keeps
 * a way to cancel the run until the retry resolves. */
static void
notify_retrying (KagedRetryNotifier *self,
                 Watch              *watch)
{
  gint64 session_id = kaged_retry_scheduler_get_session_id (watch->scheduler);
  g_autoptr(GNotification) notification = NULL;
  g_autofree char *id = kaged_retry_notifier_dup_id (session_id);
  g_autofree char *title = session_title (self, session_id);
  g_autofree char *heading = NULL;

  if (!watch->notified)
    return;

  /* Translators: the title of a notification; %s is a conversation's title */
  heading = g_strdup_printf (_("Retrying the reply in “%s”"), title);
  notification = g_notification_new (heading);
  g_notification_set_body (notification, _("The scheduled retry is under way."));
  g_notification_set_category (notification, "network");
  set_session_actions (notification, session_id, BUTTONS_CANCEL);

  g_application_send_notification (self->application, id, notification);
}

static void
withdraw_scheduled (KagedRetryNotifier *self,
                    Watch              *watch)
{
  g_autofree char *id = NULL;

  if (!watch->notified)
    return;

  id = kaged_retry_notifier_dup_id (kaged_retry_scheduler_get_session_id (watch->scheduler));
  g_application_withdraw_notification (self->application, id);
  watch->notified = FALSE;
}

/* A dispatched retry came back: say how it went, if nobody is looking. */
static void
notify_result (KagedRetryNotifier *self,
               Watch              *watch)
{
  gint64 session_id = kaged_retry_scheduler_get_session_id (watch->scheduler);
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GNotification) notification = NULL;
  g_autofree char *id = kaged_retry_notifier_dup_result_id (session_id);
  g_autofree char *title = session_title (self, session_id);
  g_autofree char *heading = NULL;

  if (application_has_focus (self))
    return;

  run = kaged_session_manager_get_latest_run (self->manager, session_id, NULL);
  if (run == NULL || !kaged_run_is_finished (run))
    return;

  switch (kaged_run_get_status (run))
    {
    case KAGED_RUN_STATUS_SUCCEEDED:
      /* Translators: %s is a conversation's title */
      heading = g_strdup_printf (_("Reply ready in “%s”"), title);
      notification = g_notification_new (heading);
      g_notification_set_body (notification, _("The retry went through."));
      break;

    case KAGED_RUN_STATUS_FAILED:
      /* A failure Tier 2 arms from again is not the end. */
      if (kaged_retry_run_is_armable (run))
        return;
      /* Translators: %s is a conversation's title */
      heading = g_strdup_printf (_("Kaged gave up retrying in “%s”"), title);
      notification = g_notification_new (heading);
      g_notification_set_body (notification, kaged_run_get_error_message (run));
      break;

    case KAGED_RUN_STATUS_QUEUED:
    case KAGED_RUN_STATUS_RUNNING:
    case KAGED_RUN_STATUS_CANCELLED:
    default:
      return;
    }

  set_session_actions (notification, session_id, BUTTONS_NONE);
  g_application_send_notification (self->application, id, notification);
}

static void
state_changed_cb (KagedRetryScheduler *scheduler,
                  GParamSpec          *pspec,
                  Watch               *watch)
{
  KagedRetryNotifier *self = watch->notifier;
  KagedRetrySchedulerState previous = watch->state;
  KagedRetrySchedulerState state = kaged_retry_scheduler_get_state (scheduler);

  if (state == previous)
    return;
  watch->state = state;

  if (self->application == NULL)
    return;

  switch (state)
    {
    case KAGED_RETRY_SCHEDULER_STATE_SCHEDULED:
      notify_scheduled (self, watch);
      break;

    case KAGED_RETRY_SCHEDULER_STATE_IDLE:
      withdraw_scheduled (self, watch);
      if (previous == KAGED_RETRY_SCHEDULER_STATE_WATCHING ||
          previous == KAGED_RETRY_SCHEDULER_STATE_DISPATCHING)
        notify_result (self, watch);
      break;

    case KAGED_RETRY_SCHEDULER_STATE_DISPATCHING:
    case KAGED_RETRY_SCHEDULER_STATE_WATCHING:
      if (previous != KAGED_RETRY_SCHEDULER_STATE_DISPATCHING &&
          previous != KAGED_RETRY_SCHEDULER_STATE_WATCHING)
        notify_retrying (self, watch);
      break;

    case KAGED_RETRY_SCHEDULER_STATE_CANCELLED:
    case KAGED_RETRY_SCHEDULER_STATE_ARMED:
    case KAGED_RETRY_SCHEDULER_STATE_WAITING_FOR_NETWORK:
    default:
      withdraw_scheduled (self, watch);
      break;
    }
}

static void
watch_scheduler (KagedRetryNotifier  *self,
                 KagedRetryScheduler *scheduler)
{
  Watch *watch = g_new0 (Watch, 1);

  watch->notifier = self;
  watch->scheduler = g_object_ref (scheduler);
  watch->state = KAGED_RETRY_SCHEDULER_STATE_IDLE;
  watch->state_id = g_signal_connect (scheduler, "notify::state",
                                      G_CALLBACK (state_changed_cb), watch);
  g_ptr_array_add (self->watches, watch);

  /* A retry resumed at start-up may already be scheduled. */
  state_changed_cb (scheduler, NULL, watch);
}

static void
scheduler_added_cb (KagedRetryCoordinator *coordinator,
                    KagedRetryScheduler   *scheduler,
                    KagedRetryNotifier    *self)
{
  watch_scheduler (self, scheduler);
}

static void
kaged_retry_notifier_dispose (GObject *object)
{
  KagedRetryNotifier *self = (KagedRetryNotifier *)object;

  if (self->coordinator != NULL)
    g_clear_signal_handler (&self->added_id, self->coordinator);
  g_clear_pointer (&self->watches, g_ptr_array_unref);
  g_clear_object (&self->coordinator);
  g_clear_object (&self->manager);
  g_clear_weak_pointer (&self->application);

  G_OBJECT_CLASS (kaged_retry_notifier_parent_class)->dispose (object);
}

static void
kaged_retry_notifier_class_init (KagedRetryNotifierClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = kaged_retry_notifier_dispose;
}

static void
kaged_retry_notifier_init (KagedRetryNotifier *self)
{
  self->watches = g_ptr_array_new_with_free_func ((GDestroyNotify)watch_free);
}

/**
 * kaged_retry_notifier_new:
 * @application: the application that sends the notifications
 * @coordinator: the schedulers to follow
 * @manager: where the outcome of a retry is looked up
 *
 * Returns: (transfer full): a notifier following every scheduler of
 *   @coordinator, present and future
 */
KagedRetryNotifier *
kaged_retry_notifier_new (GApplication          *application,
                          KagedRetryCoordinator *coordinator,
                          KagedSessionManager   *manager)
{
  KagedRetryNotifier *self;
  g_autoptr(GPtrArray) schedulers = NULL;

  g_return_val_if_fail (G_IS_APPLICATION (application), NULL);
  g_return_val_if_fail (KAGED_IS_RETRY_COORDINATOR (coordinator), NULL);
  g_return_val_if_fail (KAGED_IS_SESSION_MANAGER (manager), NULL);

  self = g_object_new (KAGED_TYPE_RETRY_NOTIFIER, NULL);
  g_set_weak_pointer (&self->application, application);
  self->coordinator = g_object_ref (coordinator);
  self->manager = g_object_ref (manager);

  self->added_id = g_signal_connect (coordinator, "scheduler-added",
                                     G_CALLBACK (scheduler_added_cb), self);

  schedulers = kaged_retry_coordinator_list_schedulers (coordinator);
  for (guint i = 0; i < schedulers->len; i++)
    watch_scheduler (self, g_ptr_array_index (schedulers, i));

  return self;
}
