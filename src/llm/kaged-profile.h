/* kaged-profile.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/**
 * KagedProviderKind:
 *
 * Which wire a profile speaks. The nicks are the names settings use.
 */
typedef enum
{
  KAGED_PROVIDER_KIND_OLLAMA,    /*< nick=ollama >*/
  KAGED_PROVIDER_KIND_OPENAI,    /*< nick=openai >*/
  KAGED_PROVIDER_KIND_ANTHROPIC, /*< nick=anthropic >*/
} KagedProviderKind;

#define KAGED_TYPE_PROVIDER_KIND (kaged_provider_kind_get_type ())
GType kaged_provider_kind_get_type (void) G_GNUC_CONST;

/**
 * KagedSpendPeriod:
 *
 * How often a profile's spend limit starts over. The nicks are the names
 * settings use.
 */
typedef enum
{
  KAGED_SPEND_PERIOD_NONE,    /*< nick=none >*/
  KAGED_SPEND_PERIOD_DAILY,   /*< nick=daily >*/
  KAGED_SPEND_PERIOD_MONTHLY, /*< nick=monthly >*/
} KagedSpendPeriod;

#define KAGED_TYPE_SPEND_PERIOD (kaged_spend_period_get_type ())
GType kaged_spend_period_get_type (void) G_GNUC_CONST;

#define KAGED_PROFILE_DEFAULT_ID "default"

#define KAGED_PROFILE_DEFAULT_OLLAMA_URL    "http://127.0.0.1:11434"
#define KAGED_PROFILE_DEFAULT_OPENAI_URL    "https://api.openai.com/v1"
#define KAGED_PROFILE_DEFAULT_ANTHROPIC_URL "https://api.anthropic.com"

#define KAGED_TYPE_PROFILE (kaged_profile_get_type ())

G_DECLARE_FINAL_TYPE (KagedProfile, kaged_profile, KAGED, PROFILE, GObject)

/*
 * KagedProfile: how to reach one model — the wire (kind), base URL and
 * model name, and where its API key comes from: the environment variable
 * named by api-key-env when it is set and not empty, otherwise the keyring
 * entry of the profile's id. The id is stable (a saved profile keeps it
 * for life; the name is what people read). Prices (per million tokens,
 * < 0 unknown) and the spend limit (period and amount) are for the spend
 * limit of runs through the profile. A profile never holds a key itself.
 */
KagedProfile      *kaged_profile_new                 (const char        *name,
                                                      KagedProviderKind  kind,
                                                      const char        *base_url,
                                                      const char        *model);
KagedProfile      *kaged_profile_copy                (KagedProfile      *self);
const char        *kaged_profile_get_id              (KagedProfile      *self);
void               kaged_profile_set_id              (KagedProfile      *self,
                                                      const char        *id);
const char        *kaged_profile_get_key_id          (KagedProfile      *self);
const char        *kaged_profile_get_name            (KagedProfile      *self);
void               kaged_profile_set_name            (KagedProfile      *self,
                                                      const char        *name);
KagedProviderKind  kaged_profile_get_kind            (KagedProfile      *self);
void               kaged_profile_set_kind            (KagedProfile      *self,
                                                      KagedProviderKind  kind);
const char        *kaged_profile_get_base_url        (KagedProfile      *self);
void               kaged_profile_set_base_url        (KagedProfile      *self,
                                                      const char        *base_url);
const char        *kaged_profile_get_model           (KagedProfile      *self);
void               kaged_profile_set_model           (KagedProfile      *self,
                                                      const char        *model);
const char        *kaged_profile_get_api_key_env     (KagedProfile      *self);
void               kaged_profile_set_api_key_env     (KagedProfile      *self,
                                                      const char        *api_key_env);
double             kaged_profile_get_input_price     (KagedProfile      *self);
void               kaged_profile_set_input_price     (KagedProfile      *self,
                                                      double             price);
double             kaged_profile_get_output_price    (KagedProfile      *self);
void               kaged_profile_set_output_price    (KagedProfile      *self,
                                                      double             price);
KagedSpendPeriod   kaged_profile_get_spend_limit_period (KagedProfile   *self);
void               kaged_profile_set_spend_limit_period (KagedProfile   *self,
                                                      KagedSpendPeriod   period);
double             kaged_profile_get_spend_limit     (KagedProfile      *self);
void               kaged_profile_set_spend_limit     (KagedProfile      *self,
                                                      double             limit);
const char        *kaged_provider_kind_default_url   (KagedProviderKind  kind);
gboolean           kaged_provider_kind_needs_key     (KagedProviderKind  kind,
                                                      const char        *base_url);
const char        *kaged_provider_kind_to_label      (KagedProviderKind  kind);
gboolean           kaged_url_is_local                (const char        *url);
KagedProfile      *kaged_profile_new_from_settings   (GSettings         *settings);

G_END_DECLS
