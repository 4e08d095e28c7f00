/* kaged-retry.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry"

#include "config.h"

#include <glib/gi18n.h>
#include <libsoup/soup.h>

#include "kaged-retry-class.h"
#include "kaged-retry.h"

/**
 * KagedRetryProvider:
 *
 * Tier 1 of DESIGN.md §4: a provider that wraps another one and retries
 * its open call — the request up to the first streamed delta — at most
 * %KAGED_RETRY_MAX_ATTEMPTS times.
 *
 * - Before attempt n+1 it waits min(30 s, 1 s × 2^(n-1)) × U[0.75, 1.0),
 *   or, when the server advised a wait of at most %KAGED_RETRY_WINDOW_MS,
 *   exactly that (no jitter). A longer advised wait ends Tier 1 at once:
 *   the error gets `retry_after_until = now + wait`, for Tier 2.
 * - Which failures it retries is kaged_retry_error_is_retryable().
 * - Once @chat has a delta nothing is retried: the failure is returned as
 *   the wrapped provider gave it, the partial reply left in @chat.
 * - The cancellable reaches the wrapped provider and the backoff sleep;
 *   cancelling ends either at once with %G_IO_ERROR_CANCELLED.
 *
 * Every attempt that reached the wrapped provider is logged with
 * kaged_chat_add_attempt(): its start time, HTTP status (200 for a reply
 * that ended normally, 0 when no answer came), error message and class,
 * and the wait chosen after it with its source (`backoff` or the header it
 * came from). An attempt after which nothing more is tried has wait 0 (no
 * next attempt follows in this run); when the server advised a wait, its
 * source is still recorded, because Tier 2 honours that wait through the
 * error's `retry_after_until` and says where it came from. A successful
 * attempt is logged too (status 200, no error, class none),
 * so the log always ends with how the open call ended. A cancelled attempt
 * is logged with the cancellation message and class none.
 */
struct _KagedRetryProvider
{
  GObject        parent_instance;

  KagedProvider *inner;
  KagedClock    *clock;
  KagedRandom   *random;
};

static void provider_iface_init (KagedProviderInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (KagedRetryProvider, kaged_retry_provider, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (KAGED_TYPE_PROVIDER, provider_iface_init))

enum {
  PROP_0,
  PROP_INNER,
  PROP_CLOCK,
  PROP_RANDOM,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

typedef struct
{
  KagedChat *chat;
  guint      attempt;      /* 1-based number of the current attempt */
  gint64     started_ms;   /* wall time the current attempt started */
} RetryState;

static void start_attempt (GTask *task);

static void
retry_state_free (RetryState *state)
{
  g_clear_object (&state->chat);
  g_free (state);
}

static void
log_attempt (KagedRetryProvider *self,
             RetryState         *state,
             const GError       *error,
             gint64              wait_ms,
             const char         *wait_source)
{
  g_autoptr(KagedAttempt) attempt = kaged_attempt_new ();

  attempt->time = state->started_ms;
  attempt->wait_ms = wait_ms;
  attempt->wait_source = g_strdup (wait_source);

  if (error == NULL)
    {
      attempt->http_status = SOUP_STATUS_OK;
      attempt->retry_class = KAGED_RETRY_CLASS_NONE;
    }
  else if (error->domain == KAGED_PROVIDER_ERROR)
    {
      attempt->http_status = kaged_provider_error_get_http_status (error);
      attempt->retry_class = kaged_provider_error_get_retry_class (error);
      attempt->error = g_strdup (error->message);
    }
  else
    {
      attempt->http_status = 0;
      attempt->retry_class = KAGED_RETRY_CLASS_NONE;
      attempt->error = g_strdup (error->message);
    }

  kaged_chat_add_attempt (state->chat, attempt);
}

/* Ends the open call with @error: nothing more is tried. */
static void
return_final_error (GTask  *task,
                    GError *error)
{
  KagedRetryProvider *self = g_task_get_source_object (task);
  RetryState *state = g_task_get_task_data (task);
  gint64 server_wait = -1;
  const char *source = NULL;

  if (error->domain == KAGED_PROVIDER_ERROR && kaged_provider_error_get_retryable (error))
    {
      server_wait = kaged_provider_error_get_server_wait_ms (error);
      source = kaged_provider_error_get_wait_source (error);
    }

  if (server_wait >= 0 && !kaged_chat_has_delta (state->chat))
    {
      gint64 now = kaged_clock_get_wall_ms (self->clock);

      /* A time the provider set itself (a quota's reset) is kept. */
      if (kaged_provider_error_get_retry_after_until (error) <= 0)
        kaged_provider_error_set_retry_after_until (error, now + server_wait);
      log_attempt (self, state, error, 0, source);
    }
  else
    {
      log_attempt (self, state, error, 0, NULL);
    }

  g_debug ("Attempt %u ended the open call: %s (%s, HTTP %u)",
           state->attempt, error->message,
           error->domain == KAGED_PROVIDER_ERROR
             ? kaged_retry_class_to_string (kaged_provider_error_get_retry_class (error))
             : g_quark_to_string (error->domain),
           error->domain == KAGED_PROVIDER_ERROR ? kaged_provider_error_get_http_status (error) : 0);

  g_task_return_error (task, error);
}

static void
sleep_cb (GObject      *object,
          GAsyncResult *result,
          gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  g_autoptr(GError) error = NULL;

  if (!kaged_clock_sleep_finish (KAGED_CLOCK (object), result, &error))
    {
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }

  start_attempt (g_steal_pointer (&task));
}

static void
chat_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  g_autoptr(GError) error = NULL;
  KagedRetryProvider *self = g_task_get_source_object (task);
  RetryState *state = g_task_get_task_data (task);
  GCancellable *cancellable = g_task_get_cancellable (task);
  gint64 server_wait;
  const char *source;
  guint64 wait;

  if (kaged_provider_chat_finish (KAGED_PROVIDER (object), result, &error))
    {
      log_attempt (self, state, NULL, 0, NULL);
      g_task_return_boolean (task, TRUE);
      return;
    }

  /* Cancelled is cancelled, whatever the wrapped provider made of it. */
  if (g_cancellable_is_cancelled (cancellable) ||
      g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_autoptr(GError) cancelled = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                                         _("The request was cancelled"));

      log_attempt (self, state, cancelled, 0, NULL);
      g_task_return_error (task, g_steal_pointer (&cancelled));
      return;
    }

  if (kaged_chat_has_delta (state->chat) ||
      !kaged_retry_error_is_retryable (error))
    {
      return_final_error (task, g_steal_pointer (&error));
      return;
    }

  server_wait = kaged_provider_error_get_server_wait_ms (error);
  source = kaged_provider_error_get_wait_source (error);

  /* A wait beyond the window is Tier 2's, at once: no attempt is burnt. */
  if (server_wait > KAGED_RETRY_WINDOW_MS || state->attempt >= KAGED_RETRY_MAX_ATTEMPTS)
    {
      return_final_error (task, g_steal_pointer (&error));
      return;
    }

  if (server_wait >= 0)
    {
      wait = server_wait;
      if (source == NULL)
        source = "server";
    }
  else
    {
      wait = kaged_retry_backoff_ms (state->attempt, self->random);
      source = "backoff";
    }

  log_attempt (self, state, error, wait, source);

  g_debug ("Attempt %u of %u failed: %s (%s, HTTP %u); next in %" G_GUINT64_FORMAT " ms (%s)",
           state->attempt, KAGED_RETRY_MAX_ATTEMPTS, error->message,
           kaged_retry_class_to_string (kaged_provider_error_get_retry_class (error)),
           kaged_provider_error_get_http_status (error), wait, source);

  kaged_clock_sleep_async (self->clock, wait, cancellable, sleep_cb, g_steal_pointer (&task));
}

static void
start_attempt (GTask *task)
{
  KagedRetryProvider *self = g_task_get_source_object (task);
  RetryState *state = g_task_get_task_data (task);

  if (g_task_return_error_if_cancelled (task))
    {
      g_object_unref (task);
      return;
    }

  state->attempt++;
  state->started_ms = kaged_clock_get_wall_ms (self->clock);

  kaged_provider_chat_async (self->inner, state->chat, g_task_get_cancellable (task),
                             chat_cb, task);
}

static void
kaged_retry_provider_chat_async (KagedProvider       *provider,
                                 KagedChat           *chat,
                                 GCancellable        *cancellable,
                                 GAsyncReadyCallback  callback,
                                 gpointer             user_data)
{
  KagedRetryProvider *self = KAGED_RETRY_PROVIDER (provider);
  GTask *task;
  RetryState *state;

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, kaged_retry_provider_chat_async);

  state = g_new0 (RetryState, 1);
  state->chat = g_object_ref (chat);
  g_task_set_task_data (task, state, (GDestroyNotify)retry_state_free);

  start_attempt (task);
}

static gboolean
kaged_retry_provider_chat_finish (KagedProvider  *provider,
                                  GAsyncResult   *result,
                                  GError        **error)
{
  g_return_val_if_fail (g_task_is_valid (result, provider), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == kaged_retry_provider_chat_async, FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

static void
provider_iface_init (KagedProviderInterface *iface)
{
  iface->chat_async = kaged_retry_provider_chat_async;
  iface->chat_finish = kaged_retry_provider_chat_finish;
}

static void
kaged_retry_provider_constructed (GObject *object)
{
  KagedRetryProvider *self = (KagedRetryProvider *)object;

  G_OBJECT_CLASS (kaged_retry_provider_parent_class)->constructed (object);

  g_assert (self->inner != NULL);

  if (self->clock == NULL)
    self->clock = g_object_ref (kaged_clock_get_default ());
  if (self->random == NULL)
    self->random = g_object_ref (kaged_random_get_default ());
}

static void
kaged_retry_provider_dispose (GObject *object)
{
  KagedRetryProvider *self = (KagedRetryProvider *)object;

  g_clear_object (&self->inner);
  g_clear_object (&self->clock);
  g_clear_object (&self->random);

  G_OBJECT_CLASS (kaged_retry_provider_parent_class)->dispose (object);
}

static void
kaged_retry_provider_get_property (GObject    *object,
                                   guint       prop_id,
                                   GValue     *value,
                                   GParamSpec *pspec)
{
  KagedRetryProvider *self = KAGED_RETRY_PROVIDER (object);

  switch (prop_id)
    {
    case PROP_INNER:
      g_value_set_object (value, self->inner);
      break;

    case PROP_CLOCK:
      g_value_set_object (value, self->clock);
      break;

    case PROP_RANDOM:
      g_value_set_object (value, self->random);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_retry_provider_set_property (GObject      *object,
                                   guint         prop_id,
                                   const GValue *value,
                                   GParamSpec   *pspec)
{
  KagedRetryProvider *self = KAGED_RETRY_PROVIDER (object);

  switch (prop_id)
    {
    case PROP_INNER:
      self->inner = g_value_dup_object (value);
      break;

    case PROP_CLOCK:
      self->clock = g_value_dup_object (value);
      break;

    case PROP_RANDOM:
      self->random = g_value_dup_object (value);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_retry_provider_class_init (KagedRetryProviderClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->constructed = kaged_retry_provider_constructed;
  object_class->dispose = kaged_retry_provider_dispose;
  object_class->get_property = kaged_retry_provider_get_property;
  object_class->set_property = kaged_retry_provider_set_property;

  properties [PROP_INNER] =
    g_param_spec_object ("inner", NULL, NULL,
                         KAGED_TYPE_PROVIDER,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));

  properties [PROP_CLOCK] =
    g_param_spec_object ("clock", NULL, NULL,
                         KAGED_TYPE_CLOCK,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));

  properties [PROP_RANDOM] =
    g_param_spec_object ("random", NULL, NULL,
                         KAGED_TYPE_RANDOM,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
kaged_retry_provider_init (KagedRetryProvider *self)
{
}

/**
 * kaged_retry_provider_new:
 * @inner: the provider whose open call is retried
 * @clock: (nullable): the clock for waits, or %NULL for the system's
 * @random: (nullable): the source of jitter, or %NULL for the default
 *
 * Returns: (transfer full): a provider that retries @inner's open call
 */
KagedProvider *
kaged_retry_provider_new (KagedProvider *inner,
                          KagedClock    *clock,
                          KagedRandom   *random)
{
  g_return_val_if_fail (KAGED_IS_PROVIDER (inner), NULL);
  g_return_val_if_fail (!clock || KAGED_IS_CLOCK (clock), NULL);
  g_return_val_if_fail (!random || KAGED_IS_RANDOM (random), NULL);

  return g_object_new (KAGED_TYPE_RETRY_PROVIDER,
                       "inner", inner,
                       "clock", clock,
                       "random", random,
                       NULL);
}

/**
 * kaged_retry_provider_get_inner:
 *
 * Returns: (transfer none): the wrapped provider
 */
KagedProvider *
kaged_retry_provider_get_inner (KagedRetryProvider *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_PROVIDER (self), NULL);

  return self->inner;
}

/**
 * kaged_retry_provider_get_clock:
 *
 * Returns: (transfer none): the clock the waits are measured with
 */
KagedClock *
kaged_retry_provider_get_clock (KagedRetryProvider *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_PROVIDER (self), NULL);

  return self->clock;
}

/**
 * kaged_retry_provider_get_random:
 *
 * Returns: (transfer none): the source of the backoff's jitter
 */
KagedRandom *
kaged_retry_provider_get_random (KagedRetryProvider *self)
{
  g_return_val_if_fail (KAGED_IS_RETRY_PROVIDER (self), NULL);

  return self->random;
}

/**
 * kaged_retry_error_is_retryable:
 * @error: (nullable): how an open call failed
 *
 * Whether Tier 1 tries again after @error (attempts and waits aside).
 *
 * Never after a cancellation or an error outside %KAGED_PROVIDER_ERROR, and
 * never for the classes no retry can help: hard quota (`quota_exhausted`,
 * `quota_scheduled`, `spend_limit_exceeded`), `credentials_unresolved`,
 * `context_overflow` (the runner compacts instead), `protocol_error` (TLS
 * certificate failures included) and `interrupted`. Otherwise an
 * `x-should-retry: true|false` answer decides; without one, an HTTP error
 * status is retried when it is 408, 409, 429 or 5xx (529 included), and a
 * failure without one (a connection error, a timeout, an error event in
 * the stream before the first delta) when its class is `rate_limited`,
 * `overloaded`, `server_error`, `network` or `timeout`.
 *
 * Returns: %TRUE when the open call may be tried again
 */
gboolean
kaged_retry_error_is_retryable (const GError *error)
{
  KagedRetryClass retry_class;
  guint status;
  int should_retry;

  if (error == NULL || error->domain != KAGED_PROVIDER_ERROR)
    return FALSE;

  retry_class = kaged_provider_error_get_retry_class (error);

  switch (retry_class)
    {
    case KAGED_RETRY_CLASS_NONE:
    case KAGED_RETRY_CLASS_QUOTA_SCHEDULED:
    case KAGED_RETRY_CLASS_QUOTA_EXHAUSTED:
    case KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED:
    case KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED:
    case KAGED_RETRY_CLASS_CONTEXT_OVERFLOW:
    case KAGED_RETRY_CLASS_PROTOCOL_ERROR:
    case KAGED_RETRY_CLASS_INTERRUPTED:
      return FALSE;

    case KAGED_RETRY_CLASS_RATE_LIMITED:
    case KAGED_RETRY_CLASS_OVERLOADED:
    case KAGED_RETRY_CLASS_SERVER_ERROR:
    case KAGED_RETRY_CLASS_NETWORK:
    case KAGED_RETRY_CLASS_TIMEOUT:
    case KAGED_RETRY_CLASS_AUTH_FAILED:
    case KAGED_RETRY_CLASS_INVALID_REQUEST:
    default:
      break;
    }

  should_retry = kaged_provider_error_get_should_retry (error);
  if (should_retry >= 0)
    return should_retry > 0;

  status = kaged_provider_error_get_http_status (error);
  if (status >= 400)
    return status == 408 || status == 409 || status == 429 || status >= 500;

  switch (retry_class)
    {
    case KAGED_RETRY_CLASS_RATE_LIMITED:
    case KAGED_RETRY_CLASS_OVERLOADED:
    case KAGED_RETRY_CLASS_SERVER_ERROR:
    case KAGED_RETRY_CLASS_NETWORK:
    case KAGED_RETRY_CLASS_TIMEOUT:
      return TRUE;

    case KAGED_RETRY_CLASS_NONE:
    case KAGED_RETRY_CLASS_QUOTA_SCHEDULED:
    case KAGED_RETRY_CLASS_QUOTA_EXHAUSTED:
    case KAGED_RETRY_CLASS_CONTEXT_OVERFLOW:
    case KAGED_RETRY_CLASS_AUTH_FAILED:
    case KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED:
    case KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED:
    case KAGED_RETRY_CLASS_INVALID_REQUEST:
    case KAGED_RETRY_CLASS_PROTOCOL_ERROR:
    case KAGED_RETRY_CLASS_INTERRUPTED:
    default:
      return FALSE;
    }
}

/**
 * kaged_retry_backoff_ms:
 * @failed_attempt: the number of the attempt that failed, from 1
 * @random: the source of jitter
 *
 * Returns: the wait before the next attempt,
 *   min(30 s, 1 s × 2^(@failed_attempt - 1)) × U[0.75, 1.0), in ms
 */
guint64
kaged_retry_backoff_ms (guint        failed_attempt,
                        KagedRandom *random)
{
  guint64 base = KAGED_RETRY_BASE_MS;
  double factor;

  g_return_val_if_fail (failed_attempt >= 1, 0);
  g_return_val_if_fail (KAGED_IS_RANDOM (random), 0);

  for (guint i = 1; i < failed_attempt && base < KAGED_RETRY_WINDOW_MS; i++)
    base *= 2;
  base = MIN (base, KAGED_RETRY_WINDOW_MS);

  factor = kaged_random_double_range (random, 0.75, 1.0);

  return (guint64)(base * factor);
}
