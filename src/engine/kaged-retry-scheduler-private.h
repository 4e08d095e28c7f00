/* kaged-retry-scheduler-private.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include "kaged-retry-scheduler.h"

G_BEGIN_DECLS

/* Every arm, fire, cancel and disarm moves the generation on; a timer or
 * dispatch callback carrying an older one does nothing. */
guint64 _kaged_retry_scheduler_get_generation (KagedRetryScheduler *self);

/* What the countdown's timer does when it expires, for @generation. */
void    _kaged_retry_scheduler_expire         (KagedRetryScheduler *self,
                                               guint64              generation);

G_END_DECLS
