/* kaged-receipt.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

typedef enum
{
  KAGED_RECEIPT_STATUS_DISPATCHED, /*< nick=dispatched >*/
  KAGED_RECEIPT_STATUS_QUEUED,     /*< nick=queued >*/
} KagedReceiptStatus;

#define KAGED_TYPE_RECEIPT (kaged_receipt_get_type ())

/**
 * KagedReceipt:
 * @session_id: the session
 * @message_id: the operator message the run answers (posted, or the anchor)
 * @run_id: the run created for it
 * @status: whether the run started at once or waits behind another
 * @superseded_message_ids: (element-type gint64): for regenerate, the
 *   messages it superseded, ascending; empty for a post
 *
 * What post and regenerate hand back.
 */
typedef struct _KagedReceipt
{
  gint64              session_id;
  gint64              message_id;
  gint64              run_id;
  KagedReceiptStatus  status;
  GArray             *superseded_message_ids;
} KagedReceipt;

GType         kaged_receipt_get_type (void) G_GNUC_CONST;
KagedReceipt *kaged_receipt_new      (void);
KagedReceipt *kaged_receipt_copy     (const KagedReceipt *self);
void          kaged_receipt_free     (KagedReceipt       *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (KagedReceipt, kaged_receipt_free)

G_END_DECLS
