/* kaged-random.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-random"

#include "config.h"

#include "kaged-random.h"

/**
 * KagedRandom:
 *
 * The source of jitter for the retry tiers; seedable so tests are
 * repeatable.
 */
struct _KagedRandom
{
  GObject  parent_instance;
  GRand   *rand;
  GMutex   mutex;
};

G_DEFINE_FINAL_TYPE (KagedRandom, kaged_random, G_TYPE_OBJECT)

static void
kaged_random_finalize (GObject *object)
{
  KagedRandom *self = (KagedRandom *)object;

  g_clear_pointer (&self->rand, g_rand_free);
  g_mutex_clear (&self->mutex);

  G_OBJECT_CLASS (kaged_random_parent_class)->finalize (object);
}

static void
kaged_random_class_init (KagedRandomClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = kaged_random_finalize;
}

static void
kaged_random_init (KagedRandom *self)
{
  g_mutex_init (&self->mutex);
}

KagedRandom *
kaged_random_new (void)
{
  KagedRandom *self = g_object_new (KAGED_TYPE_RANDOM, NULL);

  self->rand = g_rand_new ();
  return self;
}

KagedRandom *
kaged_random_new_with_seed (guint32 seed)
{
  KagedRandom *self = g_object_new (KAGED_TYPE_RANDOM, NULL);

  self->rand = g_rand_new_with_seed (seed);
  return self;
}

/**
 * kaged_random_get_default:
 *
 * Returns: (transfer none): the process-wide random source
 */
KagedRandom *
kaged_random_get_default (void)
{
  static KagedRandom *instance;

  if (g_once_init_enter (&instance))
    g_once_init_leave (&instance, kaged_random_new ());

  return instance;
}

/**
 * kaged_random_double_range:
 *
 * Returns: a number in [@begin, @end)
 */
double
kaged_random_double_range (KagedRandom *self,
                           double       begin,
                           double       end)
{
  double ret;

  g_return_val_if_fail (KAGED_IS_RANDOM (self), begin);

  g_mutex_lock (&self->mutex);
  ret = g_rand_double_range (self->rand, begin, end);
  g_mutex_unlock (&self->mutex);

  return ret;
}

/**
 * kaged_random_int_range:
 *
 * Returns: a number in [@begin, @end)
 */
gint32
kaged_random_int_range (KagedRandom *self,
                        gint32       begin,
                        gint32       end)
{
  gint32 ret;

  g_return_val_if_fail (KAGED_IS_RANDOM (self), begin);

  g_mutex_lock (&self->mutex);
  ret = g_rand_int_range (self->rand, begin, end);
  g_mutex_unlock (&self->mutex);

  return ret;
}
