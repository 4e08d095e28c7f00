/* kaged-store-search.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-store"

#include "config.h"

#include <glib/gi18n.h>

#include "kaged-enum-types.h"
#include "kaged-store-private.h"
#include "kaged-store-search.h"

/*
 * Full-text search over conversation titles and message text, on SQLite
 * FTS5 tables that triggers keep in step with `sessions` and `messages`
 * (a reply once it has stopped streaming). Both are external-content
 * tables: the text lives once, in its own table.
 */

/* Version 5: the search index. */
const char _kaged_store_schema_v5[] =
  "CREATE VIRTUAL TABLE sessions_search USING fts5 (\n"
  "  title, content = 'sessions', content_rowid = 'id',\n"
  "  tokenize = 'unicode61 remove_diacritics 2'\n"
  ");\n"
  "CREATE VIRTUAL TABLE messages_search USING fts5 (\n"
  "  content, content = 'messages', content_rowid = 'id',\n"
  "  tokenize = 'unicode61 remove_diacritics 2'\n"
  ");\n"

  "CREATE TRIGGER sessions_search_insert AFTER INSERT ON sessions\n"
  "BEGIN\n"
  "  INSERT INTO sessions_search (rowid, title) VALUES (NEW.id, NEW.title);\n"
  "END;\n"
  "CREATE TRIGGER sessions_search_update AFTER UPDATE OF title ON sessions\n"
  "BEGIN\n"
  "  INSERT INTO sessions_search (sessions_search, rowid, title)\n"
  "    VALUES ('delete', OLD.id, OLD.title);\n"
  "  INSERT INTO sessions_search (rowid, title) VALUES (NEW.id, NEW.title);\n"
  "END;\n"
  "CREATE TRIGGER sessions_search_delete AFTER DELETE ON sessions\n"
  "BEGIN\n"
  "  INSERT INTO sessions_search (sessions_search, rowid, title)\n"
  "    VALUES ('delete', OLD.id, OLD.title);\n"
  "END;\n"

  "CREATE TRIGGER messages_search_insert AFTER INSERT ON messages\n"
  "BEGIN\n"
  "  INSERT INTO messages_search (rowid, content) VALUES (NEW.id, NEW.content);\n"
  "END;\n"
  "CREATE TRIGGER messages_search_update AFTER UPDATE OF content ON messages\n"
  "BEGIN\n"
  "  INSERT INTO messages_search (messages_search, rowid, content)\n"
  "    VALUES ('delete', OLD.id, OLD.content);\n"
  "  INSERT INTO messages_search (rowid, content) VALUES (NEW.id, NEW.content);\n"
  "END;\n"
  "CREATE TRIGGER messages_search_delete AFTER DELETE ON messages\n"
  "BEGIN\n"
  "  INSERT INTO messages_search (messages_search, rowid, content)\n"
  "    VALUES ('delete', OLD.id, OLD.content);\n"
  "END;\n"

  "INSERT INTO sessions_search (sessions_search) VALUES ('rebuild');\n"
  "INSERT INTO messages_search (messages_search) VALUES ('rebuild');\n";

/*
 * Version 7: a reply is indexed once it has stopped streaming. While it
 * streams its text is saved every few hundred milliseconds, and taking all
 * of it out of the index and back in each time cost far more than saving
 * it. A message is in the index exactly while its status is not
 * `streaming`, with its text as it is; replies streaming at the upgrade
 * leave the index until they end.
 */
const char _kaged_store_schema_v7[] =
  "DROP TRIGGER messages_search_insert;\n"
  "DROP TRIGGER messages_search_update;\n"
  "DROP TRIGGER messages_search_delete;\n"
  "INSERT INTO messages_search (messages_search, rowid, content)\n"
  "  SELECT 'delete', id, content FROM messages WHERE status = 'streaming';\n"

  "CREATE TRIGGER messages_search_insert AFTER INSERT ON messages\n"
  "  WHEN NEW.status <> 'streaming'\n"
  "BEGIN\n"
  "  INSERT INTO messages_search (rowid, content) VALUES (NEW.id, NEW.content);\n"
  "END;\n"
  "CREATE TRIGGER messages_search_update AFTER UPDATE OF content, status ON messages\n"
  "  WHEN OLD.status <> 'streaming' OR NEW.status <> 'streaming'\n"
  "BEGIN\n"
  "  INSERT INTO messages_search (messages_search, rowid, content)\n"
  "    SELECT 'delete', OLD.id, OLD.content WHERE OLD.status <> 'streaming';\n"
  "  INSERT INTO messages_search (rowid, content)\n"
  "    SELECT NEW.id, NEW.content WHERE NEW.status <> 'streaming';\n"
  "END;\n"
  "CREATE TRIGGER messages_search_delete AFTER DELETE ON messages\n"
  "  WHEN OLD.status <> 'streaming'\n"
  "BEGIN\n"
  "  INSERT INTO messages_search (messages_search, rowid, content)\n"
  "    VALUES ('delete', OLD.id, OLD.content);\n"
  "END;\n";

/* A search is rare and its statements differ by nothing worth keeping:
 * they are prepared for each search. */
static const char titles_sql[] =
  "SELECT rowid, highlight (sessions_search, 0, char (1), char (2)) "
  "FROM sessions_search WHERE sessions_search MATCH ?1 ORDER BY rank LIMIT ?2";

static const char messages_sql[] =
  "SELECT m.session_id, m.id, snippet (messages_search, 0, char (1), char (2), '…', 12), m.role "
  "FROM messages_search JOIN messages m ON m.id = messages_search.rowid "
  "WHERE messages_search MATCH ?1 "
  "AND NOT EXISTS (SELECT 1 FROM message_supersessions s WHERE s.message_id = m.id) "
  "ORDER BY rank LIMIT ?2";

G_DEFINE_BOXED_TYPE (KagedStoreSearchHit, kaged_store_search_hit,
                     kaged_store_search_hit_copy, kaged_store_search_hit_free)

KagedStoreSearchHit *
kaged_store_search_hit_copy (const KagedStoreSearchHit *self)
{
  KagedStoreSearchHit *copy = g_new0 (KagedStoreSearchHit, 1);

  copy->session_id = self->session_id;
  copy->message_id = self->message_id;
  copy->role = self->role;
  copy->text = g_strdup (self->text);

  return copy;
}

void
kaged_store_search_hit_free (KagedStoreSearchHit *self)
{
  if (self == NULL)
    return;

  g_free (self->text);
  g_free (self);
}

/* Every word of what was typed, quoted so nothing in it is FTS5 syntax;
 * the last one also matches as the start of a word. */
static char *
build_match (const char *query)
{
  g_autofree char *valid = g_utf8_make_valid (query, -1);
  g_auto(GStrv) words = NULL;
  GString *match = g_string_new (NULL);

  g_strdelimit (valid, "\t\n\r", ' ');
  words = g_strsplit (valid, " ", -1);

  for (guint i = 0; words[i] != NULL; i++)
    {
      if (words[i][0] == '\0')
        continue;

      if (match->len > 0)
        g_string_append_c (match, ' ');
      g_string_append_c (match, '"');
      for (const char *p = words[i]; *p != '\0'; p++)
        {
          if (*p == '"')
            g_string_append_c (match, '"');
          g_string_append_c (match, *p);
        }
      g_string_append_c (match, '"');
    }

  if (match->len > 0)
    g_string_append_c (match, '*');

  return g_string_free (match, FALSE);
}

static gboolean
collect (KagedStore  *self,
         const char  *sql,
         const char  *match,
         guint        limit,
         gboolean     titles,
         GPtrArray   *hits,
         GError     **error)
{
  sqlite3_stmt *stmt = NULL;
  int rc;

  rc = sqlite3_prepare_v2 (self->db, sql, -1, &stmt, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_text (stmt, 1, match, -1, SQLITE_TRANSIENT);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_int64 (stmt, 2, limit);

  while (rc == SQLITE_OK && (rc = sqlite3_step (stmt)) == SQLITE_ROW)
    {
      KagedStoreSearchHit *hit = g_new0 (KagedStoreSearchHit, 1);

      if (titles)
        {
          hit->session_id = sqlite3_column_int64 (stmt, 0);
          hit->text = g_strdup (_kaged_store_column_text (stmt, 1));
        }
      else
        {
          hit->session_id = sqlite3_column_int64 (stmt, 0);
          hit->message_id = sqlite3_column_int64 (stmt, 1);
          hit->text = g_strdup (_kaged_store_column_text (stmt, 2));
          hit->role = _kaged_store_enum_from_column (stmt, 3, KAGED_TYPE_MESSAGE_ROLE,
                                                     KAGED_MESSAGE_ROLE_AGENT);
        }
      g_ptr_array_add (hits, hit);
      rc = SQLITE_OK;
    }

  sqlite3_finalize (stmt);

  if (rc != SQLITE_DONE)
    return _kaged_store_set_db_error (self, rc, error);

  return TRUE;
}

/**
 * kaged_store_search:
 * @query: the words to look for, as typed; the last may be the start of a
 *   word
 * @limit: at most this many titles and this many messages
 *
 * Finds the conversations whose title, and the current messages whose
 * text, hold every word of @query (letters compared without case or
 * accents). Titles come first, then messages, each best match first.
 *
 * Returns: (transfer full) (element-type KagedStoreSearchHit): the
 *   matches, or %NULL with @error set
 */
GPtrArray *
kaged_store_search (KagedStore  *self,
                    const char  *query,
                    guint        limit,
                    GError     **error)
{
  g_autoptr(GPtrArray) hits = NULL;
  g_autofree char *match = NULL;

  g_return_val_if_fail (KAGED_IS_STORE (self), NULL);
  g_return_val_if_fail (query != NULL, NULL);

  hits = g_ptr_array_new_with_free_func ((GDestroyNotify)kaged_store_search_hit_free);
  match = build_match (query);
  if (match[0] == '\0' || limit == 0)
    return g_steal_pointer (&hits);

  if (!collect (self, titles_sql, match, limit, TRUE, hits, error) ||
      !collect (self, messages_sql, match, limit, FALSE, hits, error))
    return NULL;

  return g_steal_pointer (&hits);
}

/**
 * kaged_store_search_markup:
 * @text: the text of a #KagedStoreSearchHit
 *
 * Returns: (transfer full): @text as Pango markup: escaped, with each
 *   matched word in bold, on one line (each run of spaces and line breaks
 *   is one space)
 */
char *
kaged_store_search_markup (const char *text)
{
  GString *markup = g_string_new (NULL);
  g_autoptr(GString) line = g_string_new (NULL);
  const char *p;

  g_return_val_if_fail (text != NULL, NULL);

  for (p = text; *p != '\0'; p++)
    {
      if (!g_ascii_isspace (*p))
        g_string_append_c (line, *p);
      else if (line->len > 0 && line->str[line->len - 1] != ' ')
        g_string_append_c (line, ' ');
    }
  if (line->len > 0 && line->str[line->len - 1] == ' ')
    g_string_truncate (line, line->len - 1);
  p = line->str;

  while (*p != '\0')
    {
      gsize span = strcspn (p, KAGED_STORE_MATCH_START KAGED_STORE_MATCH_END);
      g_autofree char *escaped = g_markup_escape_text (p, span);

      g_string_append (markup, escaped);
      p += span;
      if (*p == KAGED_STORE_MATCH_START[0])
        g_string_append (markup, "<b>");
      else if (*p == KAGED_STORE_MATCH_END[0])
        g_string_append (markup, "</b>");
      if (*p != '\0')
        p++;
    }

  return g_string_free (markup, FALSE);
}
