/* kaged-core.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <gio/gio.h>

#include "kaged-clock.h"
#include "kaged-conversation.h"
#include "kaged-core-server.h"
#include "kaged-keyring.h"
#include "kaged-profile.h"
#include "kaged-profiles.h"
#include "kaged-receipt.h"
#include "kaged-resolver.h"
#include "kaged-retry-coordinator.h"
#include "kaged-session-manager.h"
#include "kaged-spend-limit.h"
#include "kaged-store.h"

G_BEGIN_DECLS

#define KAGED_CORE_ERROR (kaged_core_error_quark ())

/**
 * KagedCoreError:
 * @KAGED_CORE_ERROR_RETRY_OFF: Tier 2 retries are not running in this core
 * @KAGED_CORE_ERROR_NO_RETRY: the session has no retry to act on
 */
typedef enum
{
  KAGED_CORE_ERROR_RETRY_OFF,
  KAGED_CORE_ERROR_NO_RETRY,
} KagedCoreError;

/**
 * KagedCoreFlags:
 * @KAGED_CORE_FLAGS_NONE: no Tier 2 retries
 * @KAGED_CORE_FLAGS_AUTO_RETRY: Tier 2 retries run (always in the window;
 *   with `--auto-retry` in `--headless`)
 * @KAGED_CORE_FLAGS_NO_KEYRING: API keys come from the environment only
 *   (`--api-key-env`); the desktop keyring is not asked
 */
typedef enum
{
  KAGED_CORE_FLAGS_NONE       = 0,
  KAGED_CORE_FLAGS_AUTO_RETRY = 1 << 0,
  KAGED_CORE_FLAGS_NO_KEYRING = 1 << 1,
} KagedCoreFlags;

#define KAGED_TYPE_CORE (kaged_core_get_type ())

G_DECLARE_FINAL_TYPE (KagedCore, kaged_core, KAGED, CORE, GObject)

/*
 * KagedCore is the one composition root of DESIGN.md §2: it builds and
 * owns the store, the keyring, the provider resolver, the session manager,
 * the Tier 2 coordinator and, when handed one, the server of the local
 * HTTP API. The window and `kaged --headless` each start exactly one.
 * Posts, regenerates and cancels from every entry point go through it.
 *
 * Properties: api-url (where the handed server answers, or NULL),
 *             api-error (why the API could not be switched on, or NULL),
 *             profile (the profile runs use now; notified when another one
 *             takes its place or when it changes).
 * Signals:    ::retry-changed (gint64 session_id) — a session's Tier 2
 *             retry changed state (a scheduler was added, or its state
 *             moved).
 */
GQuark                 kaged_core_error_quark        (void);
KagedCore             *kaged_core_new                (KagedStore      *store,
                                                      KagedKeyring    *keyring,
                                                      KagedClock      *clock,
                                                      GNetworkMonitor *network_monitor,
                                                      KagedCoreFlags   flags);
KagedCore             *kaged_core_open               (const char      *db_path,
                                                      KagedKeyring    *keyring,
                                                      KagedCoreFlags   flags,
                                                      GError         **error);
KagedStore            *kaged_core_get_store          (KagedCore       *self);
KagedSessionManager   *kaged_core_get_manager        (KagedCore       *self);
KagedRetryCoordinator *kaged_core_get_coordinator    (KagedCore       *self);
KagedClock            *kaged_core_get_clock          (KagedCore       *self);
KagedResolver         *kaged_core_get_resolver       (KagedCore       *self);
KagedCoreFlags         kaged_core_get_flags          (KagedCore       *self);
KagedProfile          *kaged_core_get_profile        (KagedCore       *self);
void                   kaged_core_set_profile        (KagedCore       *self,
                                                      KagedProfile    *profile);
KagedProfile          *kaged_core_get_run_profile    (KagedCore       *self);
KagedProfiles         *kaged_core_get_profiles       (KagedCore       *self);
void                   kaged_core_set_profiles       (KagedCore       *self,
                                                      KagedProfiles   *profiles);
KagedKeyring          *kaged_core_get_keyring        (KagedCore       *self);
void                   kaged_core_start              (KagedCore       *self);
void                   kaged_core_shutdown           (KagedCore       *self);
KagedSession          *kaged_core_create_session     (KagedCore       *self,
                                                      const char      *title,
                                                      GError         **error);
KagedReceipt          *kaged_core_post               (KagedCore       *self,
                                                      gint64           session_id,
                                                      const char      *content,
                                                      GError         **error);
KagedReceipt          *kaged_core_regenerate         (KagedCore       *self,
                                                      gint64           session_id,
                                                      gint64           message_id,
                                                      GError         **error);
KagedReceipt          *kaged_core_regenerate_anchor  (KagedCore       *self,
                                                      gint64           session_id,
                                                      gint64           anchor_id,
                                                      GError         **error);
KagedReceipt          *kaged_core_edit               (KagedCore       *self,
                                                      gint64           session_id,
                                                      gint64           operator_message_id,
                                                      const char      *content,
                                                      GError         **error);
gboolean               kaged_core_cancel_run         (KagedCore       *self,
                                                      gint64           session_id,
                                                      gint64           run_id,
                                                      GError         **error);
KagedConversation     *kaged_core_open_conversation  (KagedCore       *self,
                                                      gint64           session_id,
                                                      GError         **error);
KagedRetryScheduler   *kaged_core_lookup_retry       (KagedCore       *self,
                                                      gint64           session_id);
gboolean               kaged_core_retry_now          (KagedCore       *self,
                                                      gint64           session_id,
                                                      GError         **error);
gboolean               kaged_core_cancel_retry       (KagedCore       *self,
                                                      gint64           session_id,
                                                      GError         **error);
void                   kaged_core_set_server         (KagedCore       *self,
                                                      KagedCoreServer *server);
KagedCoreServer       *kaged_core_get_server         (KagedCore       *self);
void                   kaged_core_set_api_error      (KagedCore       *self,
                                                      const char      *message);
const char            *kaged_core_get_api_url        (KagedCore       *self);
const char            *kaged_core_get_api_error      (KagedCore       *self);

G_END_DECLS
