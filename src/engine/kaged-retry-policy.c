/* kaged-retry-policy.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry-policy"

#include "config.h"

#include "kaged-retry-class.h"
#include "kaged-retry-policy.h"

/*
 * When Tier 2 may arm (DESIGN.md §6), decided here and nowhere else: from
 * the persisted classification of the session's latest run, when it is
 * retryable, no operator message stands after its anchor and no run of the
 * session is queued or running. The coordinator asks kaged_retry_policy_check()
 * before it tells a scheduler about a run; the scheduler asks
 * kaged_retry_run_is_armable() of the run it was given.
 */

#define MESSAGE_PAGE 32

/**
 * kaged_retry_run_is_armable:
 * @run: a finished run, as the database holds it
 *
 * Whether the classification of @run allows a Tier 2 retry: it failed, its
 * classification says retryable, its class is one that is retried, and a
 * class that is retried only at a known time (`quota_scheduled`) has one.
 * Whether @run is the session's latest is kaged_retry_policy_check()'s part.
 *
 * Returns: %TRUE if a retry may arm from @run
 */
gboolean
kaged_retry_run_is_armable (KagedRun *run)
{
  KagedRetryClass retry_class;

  g_return_val_if_fail (KAGED_IS_RUN (run), FALSE);

  retry_class = kaged_run_get_retry_class (run);

  if (kaged_run_get_status (run) != KAGED_RUN_STATUS_FAILED)
    return FALSE;
  if (!kaged_run_get_retryable (run))
    return FALSE;
  if (retry_class > KAGED_RETRY_CLASS_INTERRUPTED || !kaged_retry_class_is_retryable (retry_class))
    return FALSE;
  if (kaged_retry_class_needs_until (retry_class) && kaged_run_get_retry_after_until (run) <= 0)
    return FALSE;

  return TRUE;
}

static gboolean
has_runs (KagedStore      *store,
          gint64           session_id,
          KagedRunStatus   status,
          gboolean        *found,
          GError         **error)
{
  g_autoptr(GPtrArray) runs = kaged_store_list_runs (store, session_id, status, error);

  if (runs == NULL)
    return FALSE;

  *found = runs->len > 0;
  return TRUE;
}

/* Whether a current operator message stands after @anchor_id in
 * conversation order. Operator messages stand in the order they were
 * posted, so a later one also has a larger id. */
static gboolean
has_operator_after (KagedStore  *store,
                    gint64       session_id,
                    gint64       anchor_id,
                    gboolean    *found,
                    GError     **error)
{
  gint64 after = anchor_id;

  *found = FALSE;

  for (;;)
    {
      g_autoptr(GPtrArray) page = NULL;

      page = kaged_store_list_messages (store, session_id, FALSE, after, MESSAGE_PAGE, error);
      if (page == NULL)
        return FALSE;

      for (guint i = 0; i < page->len; i++)
        {
          KagedMessage *message = g_ptr_array_index (page, i);

          if (kaged_message_get_role (message) == KAGED_MESSAGE_ROLE_OPERATOR &&
              kaged_message_get_id (message) > anchor_id)
            {
              *found = TRUE;
              return TRUE;
            }
        }

      /* The next page starts after the last message of this one. */
      if (page->len > 0)
        after = kaged_message_get_id (g_ptr_array_index (page, page->len - 1));

      if (page->len < MESSAGE_PAGE)
        return TRUE;
    }
}

/**
 * kaged_retry_policy_check:
 * @store: the database
 * @session_id: the session
 * @latest: (out) (optional) (transfer full): the session's latest run when
 *   the verdict is not busy
 * @error: where a database error goes
 *
 * Reads what the database says about the session — never a run object in
 * memory, whose end may not have been recorded — and decides whether
 * Tier 2 may arm.
 *
 * Returns: the verdict; %KAGED_RETRY_VERDICT_BUSY with @error set when the
 *   database could not be read
 */
KagedRetryVerdict
kaged_retry_policy_check (KagedStore  *store,
                          gint64       session_id,
                          KagedRun   **latest,
                          GError     **error)
{
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(GError) local_error = NULL;
  gboolean found = FALSE;

  g_return_val_if_fail (KAGED_IS_STORE (store), KAGED_RETRY_VERDICT_BUSY);

  if (latest != NULL)
    *latest = NULL;

  if (!has_runs (store, session_id, KAGED_RUN_STATUS_QUEUED, &found, error) || found)
    return KAGED_RETRY_VERDICT_BUSY;
  if (!has_runs (store, session_id, KAGED_RUN_STATUS_RUNNING, &found, error) || found)
    return KAGED_RETRY_VERDICT_BUSY;

  run = kaged_store_get_latest_run (store, session_id, &local_error);
  if (run == NULL)
    {
      if (!g_error_matches (local_error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND))
        g_propagate_error (error, g_steal_pointer (&local_error));
      return KAGED_RETRY_VERDICT_BUSY;
    }

  if (!kaged_run_is_finished (run))
    return KAGED_RETRY_VERDICT_BUSY;

  if (latest != NULL)
    *latest = g_object_ref (run);

  if (!kaged_retry_run_is_armable (run))
    return KAGED_RETRY_VERDICT_SETTLED;

  if (!has_operator_after (store, session_id, kaged_run_get_anchor_id (run), &found, error))
    {
      if (latest != NULL)
        g_clear_object (latest);
      return KAGED_RETRY_VERDICT_BUSY;
    }

  return found ? KAGED_RETRY_VERDICT_SETTLED : KAGED_RETRY_VERDICT_ARMABLE;
}
