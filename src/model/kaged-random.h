/* kaged-random.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

#define KAGED_TYPE_RANDOM (kaged_random_get_type ())

G_DECLARE_FINAL_TYPE (KagedRandom, kaged_random, KAGED, RANDOM, GObject)

KagedRandom *kaged_random_new           (void);
KagedRandom *kaged_random_new_with_seed (guint32      seed);
KagedRandom *kaged_random_get_default   (void);
double       kaged_random_double_range  (KagedRandom *self,
                                         double       begin,
                                         double       end);
gint32       kaged_random_int_range     (KagedRandom *self,
                                         gint32       begin,
                                         gint32       end);

G_END_DECLS
