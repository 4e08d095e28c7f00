/* kaged-store-search.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include "kaged-store.h"

G_BEGIN_DECLS

/* The marks around a matched word in KagedStoreSearchHit:text. */
#define KAGED_STORE_MATCH_START "\x01"
#define KAGED_STORE_MATCH_END   "\x02"

#define KAGED_TYPE_STORE_SEARCH_HIT (kaged_store_search_hit_get_type ())

/**
 * KagedStoreSearchHit:
 * @session_id: the conversation that matched
 * @message_id: the message that matched, or 0 when the title did
 * @text: the title, or an excerpt of the message around the match, with
 *   each matched word between %KAGED_STORE_MATCH_START and
 *   %KAGED_STORE_MATCH_END
 *
 * One match of kaged_store_search().
 */
typedef struct _KagedStoreSearchHit
{
  gint64            session_id;
  gint64            message_id;  /* 0 for a title */
  KagedMessageRole  role;        /* who wrote the message */
  char             *text;
} KagedStoreSearchHit;

GType                kaged_store_search_hit_get_type (void) G_GNUC_CONST;
KagedStoreSearchHit *kaged_store_search_hit_copy     (const KagedStoreSearchHit *self);
void                 kaged_store_search_hit_free     (KagedStoreSearchHit       *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (KagedStoreSearchHit, kaged_store_search_hit_free)

GPtrArray *kaged_store_search        (KagedStore  *self,
                                      const char  *query,
                                      guint        limit,
                                      GError     **error);
char      *kaged_store_search_markup (const char  *text);

G_END_DECLS
