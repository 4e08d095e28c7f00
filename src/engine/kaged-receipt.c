/* kaged-receipt.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-receipt"

#include "config.h"

#include "kaged-receipt.h"

G_DEFINE_BOXED_TYPE (KagedReceipt, kaged_receipt, kaged_receipt_copy, kaged_receipt_free)

KagedReceipt *
kaged_receipt_new (void)
{
  KagedReceipt *self = g_new0 (KagedReceipt, 1);

  self->superseded_message_ids = g_array_new (FALSE, FALSE, sizeof (gint64));

  return self;
}

KagedReceipt *
kaged_receipt_copy (const KagedReceipt *self)
{
  KagedReceipt *copy;

  g_return_val_if_fail (self != NULL, NULL);

  copy = kaged_receipt_new ();
  copy->session_id = self->session_id;
  copy->message_id = self->message_id;
  copy->run_id = self->run_id;
  copy->status = self->status;
  g_array_append_vals (copy->superseded_message_ids,
                       self->superseded_message_ids->data,
                       self->superseded_message_ids->len);

  return copy;
}

void
kaged_receipt_free (KagedReceipt *self)
{
  if (self == NULL)
    return;

  g_clear_pointer (&self->superseded_message_ids, g_array_unref);
  g_free (self);
}
