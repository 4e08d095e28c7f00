/* kaged-message-details.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gtk/gtk.h>

#include "kaged-message.h"
#include "kaged-run.h"

G_BEGIN_DECLS

#define KAGED_TYPE_MESSAGE_DETAILS (kaged_message_details_get_type ())

G_DECLARE_FINAL_TYPE (KagedMessageDetails, kaged_message_details, KAGED, MESSAGE_DETAILS, GtkPopover)

GtkWidget *kaged_message_details_new               (void);
void       kaged_message_details_fill              (KagedMessageDetails *self,
                                                    KagedMessage        *message,
                                                    KagedRun            *run,
                                                    const char          *provider_name,
                                                    const char          *model_name);
void       kaged_message_details_set_retry_pending (KagedMessageDetails *self,
                                                    gboolean             retry_pending);
char      *kaged_message_details_describe_status   (KagedMessage        *message,
                                                    KagedRun            *run);
char      *kaged_message_details_describe_attempt  (const KagedAttempt  *attempt);
char      *kaged_message_details_describe_tokens   (KagedRun            *run);

G_END_DECLS
