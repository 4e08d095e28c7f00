/* kaged-attempt.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-attempt"

#include "config.h"

#include "kaged-attempt.h"

G_DEFINE_BOXED_TYPE (KagedAttempt, kaged_attempt, kaged_attempt_copy, kaged_attempt_free)

KagedAttempt *
kaged_attempt_new (void)
{
  return g_new0 (KagedAttempt, 1);
}

KagedAttempt *
kaged_attempt_copy (const KagedAttempt *self)
{
  KagedAttempt *copy;

  g_return_val_if_fail (self != NULL, NULL);

  copy = g_new0 (KagedAttempt, 1);
  *copy = *self;
  copy->error = g_strdup (self->error);
  copy->wait_source = g_strdup (self->wait_source);

  return copy;
}

void
kaged_attempt_free (KagedAttempt *self)
{
  if (self == NULL)
    return;

  g_free (self->error);
  g_free (self->wait_source);
  g_free (self);
}
