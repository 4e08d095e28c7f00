/* kaged-retry-class.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-retry-class"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-enum-types.h"
#include "kaged-retry-class.h"

/*
 * The retry-class table of DESIGN.md §3: wire name (the enum nick) ↔ enum ↔
 * whether a failure of that class is retryable by default, and the sentence
 * shown to a person. Every other layer asks here.
 */
static const struct {
  KagedRetryClass retry_class;
  gboolean        retryable;
  gboolean        needs_until;
  const char     *description;
} retry_classes[] = {
  { KAGED_RETRY_CLASS_NONE, FALSE, FALSE, NULL },
  { KAGED_RETRY_CLASS_RATE_LIMITED, TRUE, FALSE, N_("The provider is rate limiting requests") },
  { KAGED_RETRY_CLASS_OVERLOADED, TRUE, FALSE, N_("The provider is overloaded") },
  { KAGED_RETRY_CLASS_SERVER_ERROR, TRUE, FALSE, N_("The provider had a server error") },
  { KAGED_RETRY_CLASS_NETWORK, TRUE, FALSE, N_("The connection to the provider failed") },
  { KAGED_RETRY_CLASS_TIMEOUT, TRUE, FALSE, N_("The provider did not answer in time") },
  { KAGED_RETRY_CLASS_QUOTA_SCHEDULED, TRUE, TRUE, N_("The provider’s quota is used up until it resets") },
  { KAGED_RETRY_CLASS_QUOTA_EXHAUSTED, FALSE, FALSE, N_("The provider’s quota or credit is used up") },
  { KAGED_RETRY_CLASS_CONTEXT_OVERFLOW, FALSE, FALSE, N_("The conversation is too long for the model") },
  { KAGED_RETRY_CLASS_AUTH_FAILED, FALSE, FALSE, N_("The provider rejected the API key") },
  { KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED, FALSE, FALSE, N_("No API key was found for this provider") },
  { KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED, FALSE, FALSE, N_("The spend limit has been reached") },
  { KAGED_RETRY_CLASS_INVALID_REQUEST, FALSE, FALSE, N_("The provider refused the request") },
  { KAGED_RETRY_CLASS_PROTOCOL_ERROR, FALSE, FALSE, N_("The provider sent an answer Kaged does not understand") },
  { KAGED_RETRY_CLASS_INTERRUPTED, FALSE, FALSE, N_("Kaged stopped while the reply was being written") },
};

G_STATIC_ASSERT (G_N_ELEMENTS (retry_classes) == KAGED_RETRY_CLASS_INTERRUPTED + 1);

const char *
kaged_enum_to_nick (GType enum_type,
                    int   value)
{
  GEnumClass *klass = g_type_class_ref (enum_type);
  GEnumValue *ev = g_enum_get_value (klass, value);
  const char *nick = ev != NULL ? ev->value_nick : NULL;

  /* Enum classes are static once referenced; the nick outlives this unref. */
  g_type_class_unref (klass);
  return nick;
}

gboolean
kaged_enum_from_nick (GType       enum_type,
                      const char *nick,
                      int        *value)
{
  GEnumClass *klass;
  GEnumValue *ev;

  if (nick == NULL)
    return FALSE;

  klass = g_type_class_ref (enum_type);
  ev = g_enum_get_value_by_nick (klass, nick);
  if (ev != NULL && value != NULL)
    *value = ev->value;
  g_type_class_unref (klass);

  return ev != NULL;
}

/**
 * kaged_retry_class_to_string:
 *
 * Returns: the wire name, such as `rate_limited`, or %NULL for
 *   %KAGED_RETRY_CLASS_NONE.
 */
const char *
kaged_retry_class_to_string (KagedRetryClass retry_class)
{
  if (retry_class == KAGED_RETRY_CLASS_NONE)
    return NULL;
  return kaged_enum_to_nick (KAGED_TYPE_RETRY_CLASS, retry_class);
}

gboolean
kaged_retry_class_from_string (const char      *name,
                               KagedRetryClass *retry_class)
{
  int value = 0;

  if (!kaged_enum_from_nick (KAGED_TYPE_RETRY_CLASS, name, &value))
    return FALSE;
  if (retry_class != NULL)
    *retry_class = value;
  return TRUE;
}

/**
 * kaged_retry_class_is_retryable:
 *
 * Whether a failure of this class may be retried by default. For
 * %KAGED_RETRY_CLASS_QUOTA_SCHEDULED this holds only together with a
 * `retry_after_until`; see kaged_retry_class_needs_until().
 */
gboolean
kaged_retry_class_is_retryable (KagedRetryClass retry_class)
{
  g_return_val_if_fail (retry_class <= KAGED_RETRY_CLASS_INTERRUPTED, FALSE);
  g_assert (retry_classes[retry_class].retry_class == retry_class);
  return retry_classes[retry_class].retryable;
}

gboolean
kaged_retry_class_needs_until (KagedRetryClass retry_class)
{
  g_return_val_if_fail (retry_class <= KAGED_RETRY_CLASS_INTERRUPTED, FALSE);
  g_assert (retry_classes[retry_class].retry_class == retry_class);
  return retry_classes[retry_class].needs_until;
}

/**
 * kaged_retry_class_describe:
 *
 * Returns: a translated sentence for people, or %NULL for
 *   %KAGED_RETRY_CLASS_NONE.
 */
const char *
kaged_retry_class_describe (KagedRetryClass retry_class)
{
  g_return_val_if_fail (retry_class <= KAGED_RETRY_CLASS_INTERRUPTED, NULL);
  if (retry_classes[retry_class].description == NULL)
    return NULL;
  return _(retry_classes[retry_class].description);
}
