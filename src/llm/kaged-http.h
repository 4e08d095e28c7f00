/* kaged-http.h
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#pragma once

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

#include "kaged-chat.h"
#include "kaged-clock.h"
#include "kaged-json.h"
#include "kaged-ndjson-parser.h"
#include "kaged-provider.h"
#include "kaged-sse-parser.h"

G_BEGIN_DECLS

#define KAGED_HTTP_TIMEOUT_SECONDS         60
#define KAGED_HTTP_DEFAULT_DEADLINE_MS     (60 * 1000)
#define KAGED_HTTP_MAX_ERROR_BODY          (1024 * 1024)
#define KAGED_HTTP_MAX_REPLY_SIZE          (64 * 1024 * 1024)
#define KAGED_HTTP_MAX_DURATION_MS         (60 * 60 * 1000)
#define KAGED_HTTP_READ_SIZE               (16 * 1024)

SoupSession *kaged_http_session_new         (void);
SoupSession *kaged_http_get_default_session (void);

/*
 * What every provider holds: the shared session, where and what to ask,
 * the key (in memory only, never logged), the clock that dates server
 * waits, and the deadlines: until the answer's headers arrive
 * (first-byte-timeout-ms), without progress in its body (idle-timeout-ms:
 * no line completed; for an error body, all of it) and for the whole
 * answer (max-duration-ms). The caps: max-event-size on one SSE event or
 * NDJSON line, max-reply-size on a streamed body, max-error-body-size on
 * how much of an error body is read.
 */
typedef struct
{
  SoupSession *session;
  char        *base_url;
  char        *model;
  char        *api_key;
  KagedClock  *clock;
  guint        first_byte_timeout_ms;
  guint        idle_timeout_ms;
  guint        max_duration_ms;
  gsize        max_event_size;
  gsize        max_reply_size;
  gsize        max_error_body;
} KagedHttpConfig;

void         kaged_http_config_init                (KagedHttpConfig    *config);
void         kaged_http_config_clear               (KagedHttpConfig    *config);
void         kaged_http_config_set_base_url        (KagedHttpConfig    *config,
                                                    const char         *base_url);
void         kaged_http_config_set_api_key         (KagedHttpConfig    *config,
                                                    const char         *api_key);
SoupMessage *kaged_http_config_new_message         (KagedHttpConfig    *config,
                                                    const char         *path,
                                                    JsonBuilder        *body,
                                                    const char         *accept,
                                                    GError            **error);

/**
 * KagedStreamDecoder:
 * @feed: parse the next bytes of a successful answer, pushing into @chat;
 *   %FALSE with a %KAGED_PROVIDER_ERROR ends the call
 * @finish: the body ended; flush the parser
 * @free: release the decoder
 * @chat: where the reply goes
 * @headers: the answer's headers, set before the first @feed
 * @clock: dates waits advised in the stream
 * @sse: the event parser of a server-sent events stream, or %NULL
 * @ndjson: the line parser of an NDJSON stream, or %NULL
 * @json: parses one event or line at a time
 * @done: set once the provider's end marker was seen
 * @recognized: set once anything in the provider's format came
 * @stopped: set once the stream said why the reply stopped; a body that
 *   ends after that lacks only its end marker and counts as done
 *
 * A provider's reading of its stream format. Providers create one with
 * kaged_stream_decoder_new_sse() or kaged_stream_decoder_new_ndjson(),
 * which call back with the decoder itself as user data; a provider that
 * keeps more state puts the decoder first in its own struct.
 */
typedef struct _KagedStreamDecoder KagedStreamDecoder;

struct _KagedStreamDecoder
{
  gboolean (*feed)   (KagedStreamDecoder  *self,
                      const char          *data,
                      gsize                len,
                      GError             **error);
  gboolean (*finish) (KagedStreamDecoder  *self,
                      GError             **error);
  void     (*free)   (KagedStreamDecoder  *self);

  KagedChat          *chat;
  SoupMessageHeaders *headers;
  KagedClock         *clock;
  KagedSseParser     *sse;
  KagedNdjsonParser  *ndjson;
  JsonParser         *json;
  guint               done : 1;
  guint               recognized : 1;
  guint               stopped : 1;
};

KagedStreamDecoder *kaged_stream_decoder_new_sse    (gsize                 size,
                                                     KagedSseEventFunc     on_event,
                                                     KagedChat            *chat,
                                                     KagedClock           *clock,
                                                     gsize                 max_event_size);
KagedStreamDecoder *kaged_stream_decoder_new_ndjson (gsize                 size,
                                                     KagedNdjsonLineFunc   on_line,
                                                     KagedChat            *chat,
                                                     KagedClock           *clock,
                                                     gsize                 max_event_size);
void                kaged_stream_decoder_free       (KagedStreamDecoder   *self);
gint64              kaged_stream_decoder_now        (KagedStreamDecoder   *self);
JsonObject         *kaged_stream_decoder_parse      (KagedStreamDecoder   *self,
                                                     const char           *data,
                                                     gsize                 len,
                                                     GError              **error);
GError             *kaged_stream_decoder_error      (KagedStreamDecoder   *self,
                                                     const char           *type,
                                                     const char           *code,
                                                     const char           *message);

const char *kaged_http_role_name  (KagedMessageRole role);
void        kaged_http_add_message   (JsonBuilder *builder,
                                      const char  *role,
                                      const char  *content);
void        kaged_http_add_messages  (JsonBuilder *builder,
                                      KagedChat   *chat);

void     kaged_http_stream          (KagedHttpConfig    *config,
                                     SoupMessage        *message,
                                     KagedStreamDecoder *decoder,
                                     GTask              *task);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (KagedStreamDecoder, kaged_stream_decoder_free)

G_END_DECLS
