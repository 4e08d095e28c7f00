/* kaged-enums.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

/**
 * KagedMessageRole:
 *
 * Who wrote a message. Operator rows are immutable once stored.
 */
typedef enum
{
  KAGED_MESSAGE_ROLE_OPERATOR, /*< nick=operator >*/
  KAGED_MESSAGE_ROLE_AGENT,    /*< nick=agent >*/
  KAGED_MESSAGE_ROLE_SUMMARY,  /*< nick=summary >*/
} KagedMessageRole;

/**
 * KagedMessageStatus:
 *
 * The state of an agent message. Operator and summary rows use
 * %KAGED_MESSAGE_STATUS_NONE.
 */
typedef enum
{
  KAGED_MESSAGE_STATUS_NONE,        /*< nick=none >*/
  KAGED_MESSAGE_STATUS_STREAMING,   /*< nick=streaming >*/
  KAGED_MESSAGE_STATUS_COMPLETE,    /*< nick=complete >*/
  KAGED_MESSAGE_STATUS_FAILED,      /*< nick=failed >*/
  KAGED_MESSAGE_STATUS_CANCELLED,   /*< nick=cancelled >*/
  KAGED_MESSAGE_STATUS_INTERRUPTED, /*< nick=interrupted >*/
} KagedMessageStatus;

typedef enum
{
  KAGED_RUN_STATUS_QUEUED,    /*< nick=queued >*/
  KAGED_RUN_STATUS_RUNNING,   /*< nick=running >*/
  KAGED_RUN_STATUS_SUCCEEDED, /*< nick=succeeded >*/
  KAGED_RUN_STATUS_FAILED,    /*< nick=failed >*/
  KAGED_RUN_STATUS_CANCELLED, /*< nick=cancelled >*/
} KagedRunStatus;

typedef enum
{
  KAGED_SESSION_STATE_IDLE,    /*< nick=idle >*/
  KAGED_SESSION_STATE_RUNNING, /*< nick=running >*/
} KagedSessionState;

/**
 * KagedRetryClass:
 *
 * Why a run failed, as persisted on the run and shown on the wire. The nick
 * of each value is its wire name; whether a class is retryable by default is
 * answered by kaged_retry_class_is_retryable() in kaged-retry-class.c, the one
 * place that table lives.
 */
typedef enum
{
  KAGED_RETRY_CLASS_NONE,                   /*< nick=none >*/
  KAGED_RETRY_CLASS_RATE_LIMITED,           /*< nick=rate_limited >*/
  KAGED_RETRY_CLASS_OVERLOADED,             /*< nick=overloaded >*/
  KAGED_RETRY_CLASS_SERVER_ERROR,           /*< nick=server_error >*/
  KAGED_RETRY_CLASS_NETWORK,                /*< nick=network >*/
  KAGED_RETRY_CLASS_TIMEOUT,                /*< nick=timeout >*/
  KAGED_RETRY_CLASS_QUOTA_SCHEDULED,        /*< nick=quota_scheduled >*/
  KAGED_RETRY_CLASS_QUOTA_EXHAUSTED,        /*< nick=quota_exhausted >*/
  KAGED_RETRY_CLASS_CONTEXT_OVERFLOW,       /*< nick=context_overflow >*/
  KAGED_RETRY_CLASS_AUTH_FAILED,            /*< nick=auth_failed >*/
  KAGED_RETRY_CLASS_CREDENTIALS_UNRESOLVED, /*< nick=credentials_unresolved >*/
  KAGED_RETRY_CLASS_SPEND_LIMIT_EXCEEDED,   /*< nick=spend_limit_exceeded >*/
  KAGED_RETRY_CLASS_INVALID_REQUEST,        /*< nick=invalid_request >*/
  KAGED_RETRY_CLASS_PROTOCOL_ERROR,         /*< nick=protocol_error >*/
  KAGED_RETRY_CLASS_INTERRUPTED,            /*< nick=interrupted >*/
} KagedRetryClass;

G_END_DECLS
