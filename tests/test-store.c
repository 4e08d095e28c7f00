/* test-store.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Sessions and messages: immutability, supersession, versions, paging and
 * conversation order, compaction marks.
 */

#include "config.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>

#include "kaged-clock.h"
#include "kaged-store.h"
#include "kaged-store-private.h"

#include "kaged-store-fixture.h"

static void
test_operator_immutable (Fixture       *fixture,
                         gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Immutable");
  g_autoptr(KagedMessage) operator = NULL;
  g_autoptr(KagedMessage) agent = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 operator_id;
  gint64 agent_id;
  gint64 run_id;
  g_autofree char *sql = NULL;
  sqlite3 *db;

  operator_id = add_operator (store, session_id, "Keep me");
  run_id = add_run (store, session_id, operator_id, KAGED_RUN_STATUS_RUNNING);
  agent_id = add_agent (store, session_id, run_id, "Partial", KAGED_MESSAGE_STATUS_STREAMING);

  /* Through the API. */
  operator = kaged_store_get_message (store, operator_id, &error);
  g_assert_no_error (error);
  kaged_message_set_content (operator, "Changed");
  g_assert_false (kaged_store_update_message (store, operator, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_IMMUTABLE);
  g_clear_error (&error);

  /* An agent message may change. */
  agent = kaged_store_get_message (store, agent_id, &error);
  g_assert_no_error (error);
  kaged_message_set_content (agent, "Partial and complete");
  kaged_message_set_status (agent, KAGED_MESSAGE_STATUS_FAILED);
  kaged_message_set_error_message (agent, "Overloaded");
  kaged_message_set_retryable (agent, TRUE);
  kaged_message_set_retry_class (agent, KAGED_RETRY_CLASS_OVERLOADED);
  kaged_message_set_retry_after_until (agent, T0 + 5000);
  g_assert_true (kaged_store_update_message (store, agent, &error));
  g_assert_no_error (error);
  g_clear_object (&agent);
  agent = kaged_store_get_message (store, agent_id, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kaged_message_get_content (agent), ==, "Partial and complete");
  g_assert_cmpint (kaged_message_get_status (agent), ==, KAGED_MESSAGE_STATUS_FAILED);
  g_assert_cmpstr (kaged_message_get_error_message (agent), ==, "Overloaded");
  g_assert_true (kaged_message_get_retryable (agent));
  g_assert_cmpint (kaged_message_get_retry_class (agent), ==, KAGED_RETRY_CLASS_OVERLOADED);
  g_assert_cmpint (kaged_message_get_retry_after_until (agent), ==, T0 + 5000);

  kaged_message_set_id (agent, agent_id + 100);
  g_assert_false (kaged_store_update_message (store, agent, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_clear_object (&store);

  /* Through raw SQL on the file, with no help from the store's code. */
  db = raw_open (fixture->path);
  g_assert_cmpint (raw_exec (db, "PRAGMA foreign_keys = ON"), ==, SQLITE_OK);

  sql = g_strdup_printf ("UPDATE messages SET content = 'Changed' WHERE id = %" G_GINT64_FORMAT,
                         operator_id);
  g_assert_cmpint (raw_exec (db, sql), ==, SQLITE_CONSTRAINT_TRIGGER);
  g_clear_pointer (&sql, g_free);
  g_assert_cmpint (raw_exec (db, "UPDATE messages SET role = 'agent' WHERE role = 'operator'"), ==,
                   SQLITE_CONSTRAINT_TRIGGER);
  g_assert_cmpint (raw_exec (db, "UPDATE messages SET role = 'operator' WHERE role = 'agent'"), ==,
                   SQLITE_CONSTRAINT_TRIGGER);
  g_assert_cmpint (raw_exec (db, "DELETE FROM messages WHERE role = 'operator'"), ==,
                   SQLITE_CONSTRAINT_TRIGGER);
  g_assert_cmpint (raw_exec (db, "DELETE FROM messages"), ==, SQLITE_CONSTRAINT_TRIGGER);

  /* Even with foreign keys off, nothing removes a message of a live session. */
  g_assert_cmpint (raw_exec (db, "PRAGMA foreign_keys = OFF"), ==, SQLITE_OK);
  g_assert_cmpint (raw_exec (db, "DELETE FROM messages WHERE role = 'operator'"), ==,
                   SQLITE_CONSTRAINT_TRIGGER);
  g_assert_cmpint (raw_exec (db, "PRAGMA foreign_keys = ON"), ==, SQLITE_OK);

  sql = g_strdup_printf ("SELECT content FROM messages WHERE id = %" G_GINT64_FORMAT, operator_id);
  {
    g_autofree char *content = raw_text (db, sql);
    g_assert_cmpstr (content, ==, "Keep me");
  }
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM messages"), ==, 2);

  /* Agent rows may be updated in raw SQL too. */
  g_assert_cmpint (raw_exec (db, "UPDATE messages SET content = 'x' WHERE role = 'agent'"), ==,
                   SQLITE_OK);

  /* Deleting the whole session is the one way out. */
  g_assert_cmpint (raw_exec (db, "DELETE FROM sessions"), ==, SQLITE_OK);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM messages"), ==, 0);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM runs"), ==, 0);
  sqlite3_close (db);
}

static void
test_supersede (Fixture       *fixture,
                gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Supersede");
  g_autoptr(KagedSession) other = add_session (store, "Other");
  g_autoptr(GArray) ids = NULL;
  g_autoptr(GArray) current_ids = NULL;
  g_autoptr(GPtrArray) current = NULL;
  g_autoptr(GPtrArray) all = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 other_id = kaged_session_get_id (other);
  gint64 q1, q2, q3, q4;
  gint64 a1, a2, a3;
  gint64 r1, r2, r3, rerun2, rerun1;
  gint64 a2b, q5;
  gint64 other_q;
  guint n = 0;

  q1 = add_operator (store, session_id, "q1");
  r1 = add_run (store, session_id, q1, KAGED_RUN_STATUS_SUCCEEDED);
  a1 = add_agent (store, session_id, r1, "a1", KAGED_MESSAGE_STATUS_COMPLETE);
  q2 = add_operator (store, session_id, "q2");
  r2 = add_run (store, session_id, q2, KAGED_RUN_STATUS_SUCCEEDED);
  a2 = add_agent (store, session_id, r2, "a2", KAGED_MESSAGE_STATUS_COMPLETE);
  q3 = add_operator (store, session_id, "q3");
  r3 = add_run (store, session_id, q3, KAGED_RUN_STATUS_FAILED);
  a3 = add_agent (store, session_id, r3, "a3", KAGED_MESSAGE_STATUS_FAILED);
  q4 = add_operator (store, session_id, "q4");
  other_q = add_operator (store, other_id, "elsewhere");

  /* Regenerate from q2: a2, q3, a3 and q4 go, q1, a1 and q2 stay. */
  rerun2 = add_run (store, session_id, q2, KAGED_RUN_STATUS_QUEUED);
  g_assert_true (kaged_store_supersede_after (store, session_id, q2, rerun2, &ids, &error));
  g_assert_no_error (error);
  assert_ids (ids, (const gint64[]) { a2, q3, a3, q4 }, 4);
  g_clear_pointer (&ids, g_array_unref);

  current = list_all (store, session_id, FALSE);
  current_ids = ids_of (current);
  assert_ids (current_ids, (const gint64[]) { q1, a1, q2 }, 3);
  g_clear_pointer (&current_ids, g_array_unref);
  g_clear_pointer (&current, g_ptr_array_unref);

  all = list_all (store, session_id, TRUE);
  g_assert_cmpuint (all->len, ==, 7);
  for (guint i = 0; i < all->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (all, i);
      gint64 id = kaged_message_get_id (message);
      gboolean later = id == a2 || id == q3 || id == a3 || id == q4;

      g_assert_cmpint (kaged_message_get_superseded_by_run (message), ==, later ? rerun2 : 0);
      g_assert_cmpint (kaged_message_is_superseded (message), ==, later);
    }
  /* Superseded operator messages keep their words. */
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (all, 6)), ==, "q4");
  g_clear_pointer (&all, g_ptr_array_unref);

  g_assert_true (kaged_store_count_messages (store, session_id, FALSE, &n, &error));
  g_assert_cmpuint (n, ==, 3);
  g_assert_true (kaged_store_count_messages (store, session_id, TRUE, &n, &error));
  g_assert_cmpuint (n, ==, 7);

  /* The new reply and a new question are current. */
  a2b = add_agent (store, session_id, rerun2, "a2, again", KAGED_MESSAGE_STATUS_COMPLETE);
  q5 = add_operator (store, session_id, "q5");

  /* A second supersede, from further back, returns only what was still
   * current: the first supersession is kept as it was. */
  rerun1 = add_run (store, session_id, q1, KAGED_RUN_STATUS_QUEUED);
  g_assert_true (kaged_store_supersede_after (store, session_id, q1, rerun1, &ids, &error));
  g_assert_no_error (error);
  assert_ids (ids, (const gint64[]) { a1, q2, a2b, q5 }, 4);
  g_clear_pointer (&ids, g_array_unref);

  current = list_all (store, session_id, FALSE);
  current_ids = ids_of (current);
  assert_ids (current_ids, (const gint64[]) { q1 }, 1);
  g_clear_pointer (&current_ids, g_array_unref);
  g_clear_pointer (&current, g_ptr_array_unref);
  {
    g_autoptr(KagedMessage) message = kaged_store_get_message (store, q3, &error);
    g_assert_no_error (error);
    g_assert_cmpint (kaged_message_get_superseded_by_run (message), ==, rerun2);
  }

  /* Nothing after the last message: an empty list, not an error. */
  {
    gint64 rerun = add_run (store, session_id, q1, KAGED_RUN_STATUS_QUEUED);

    g_assert_true (kaged_store_supersede_after (store, session_id, q1, rerun, &ids, &error));
    g_assert_no_error (error);
    g_assert_cmpuint (ids->len, ==, 0);
    g_clear_pointer (&ids, g_array_unref);
  }

  /* Bad requests change nothing. */
  g_assert_false (kaged_store_supersede_after (store, session_id, other_q, rerun1, &ids, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
  g_clear_error (&error);
  g_assert_false (kaged_store_supersede_after (store, session_id, q3, rerun1, &ids, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
  g_clear_error (&error);
  g_assert_false (kaged_store_supersede_after (store, session_id, 999999, rerun1, &ids, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_assert_false (kaged_store_supersede_after (store, session_id, q1, 999999, &ids, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_assert_null (ids);

  g_assert_true (kaged_store_count_messages (store, session_id, FALSE, &n, &error));
  g_assert_cmpuint (n, ==, 1);
  g_assert_true (kaged_store_count_messages (store, other_id, FALSE, &n, &error));
  g_assert_cmpuint (n, ==, 1);
}

static void
test_versions (Fixture       *fixture,
               gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Versions");
  g_autoptr(GPtrArray) versions = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 q1, q2;
  gint64 replies[3];
  gint64 other_reply;

  q1 = add_operator (store, session_id, "Write a haiku");
  for (guint i = 0; i < G_N_ELEMENTS (replies); i++)
    {
      g_autofree char *text = g_strdup_printf ("Haiku %u", i + 1);
      gint64 run_id = add_run (store, session_id, q1, KAGED_RUN_STATUS_SUCCEEDED);
      g_autoptr(GArray) ids = NULL;

      if (i > 0)
        {
          g_assert_true (kaged_store_supersede_after (store, session_id, q1, run_id, &ids, &error));
          g_assert_no_error (error);
          assert_ids (ids, &replies[i - 1], 1);
        }
      replies[i] = add_agent (store, session_id, run_id, text, KAGED_MESSAGE_STATUS_COMPLETE);
    }
  q2 = add_operator (store, session_id, "Another");
  other_reply = add_agent (store, session_id,
                           add_run (store, session_id, q2, KAGED_RUN_STATUS_SUCCEEDED),
                           "Other", KAGED_MESSAGE_STATUS_COMPLETE);

  versions = kaged_store_list_versions (store, q1, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (versions->len, ==, 3);
  for (guint i = 0; i < versions->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (versions, i);

      g_assert_cmpint (kaged_message_get_id (message), ==, replies[i]);
      g_assert_cmpint (kaged_message_is_superseded (message), ==, i < 2);
    }

  /* Every version, and the operator message itself, resolve to the anchor. */
  for (guint i = 0; i < G_N_ELEMENTS (replies); i++)
    {
      g_autoptr(KagedMessage) anchor = kaged_store_resolve_anchor (store, replies[i], &error);

      g_assert_no_error (error);
      g_assert_cmpint (kaged_message_get_id (anchor), ==, q1);
      g_assert_cmpint (kaged_message_get_role (anchor), ==, KAGED_MESSAGE_ROLE_OPERATOR);
    }
  {
    g_autoptr(KagedMessage) anchor = kaged_store_resolve_anchor (store, q1, &error);
    g_assert_no_error (error);
    g_assert_cmpint (kaged_message_get_id (anchor), ==, q1);
  }
  {
    g_autoptr(KagedMessage) anchor = kaged_store_resolve_anchor (store, other_reply, &error);
    g_assert_no_error (error);
    g_assert_cmpint (kaged_message_get_id (anchor), ==, q2);
  }
  g_assert_null (kaged_store_resolve_anchor (store, 424242, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
}

static void
assert_messages (GPtrArray          *messages,
                 const gint64       *expected,
                 guint               n_expected)
{
  g_assert_nonnull (messages);
  g_assert_cmpuint (messages->len, ==, n_expected);
  for (guint i = 0; i < n_expected; i++)
    g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (messages, i)), ==, expected[i]);
}

/* A regeneration takes a reply and the turns after it out of the
 * conversation together: each earlier version of a reply can list the
 * turns that followed it, as they were when it was current. */
static void
test_superseded_with (Fixture       *fixture,
                      gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Branches");
  g_autoptr(KagedSession) other = add_session (store, "Elsewhere");
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 q1, r1, q2, r2, q3, r3, r3b, r1b, q4, r4, r1c, run;
  gint64 other_q;

  q1 = add_operator (store, session_id, "Plan a trip");
  r1 = add_agent (store, session_id, add_run (store, session_id, q1, KAGED_RUN_STATUS_SUCCEEDED),
                  "Go to Lisbon", KAGED_MESSAGE_STATUS_COMPLETE);
  q2 = add_operator (store, session_id, "Where to stay?");
  r2 = add_agent (store, session_id, add_run (store, session_id, q2, KAGED_RUN_STATUS_SUCCEEDED),
                  "Alfama", KAGED_MESSAGE_STATUS_COMPLETE);
  q3 = add_operator (store, session_id, "What to eat?");
  r3 = add_agent (store, session_id, add_run (store, session_id, q3, KAGED_RUN_STATUS_SUCCEEDED),
                  "Sardines", KAGED_MESSAGE_STATUS_COMPLETE);
  other_q = add_operator (store, kaged_session_get_id (other), "Unrelated");

  /* The last reply is regenerated first ... */
  run = add_run (store, session_id, q3, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_true (kaged_store_supersede_after (store, session_id, q3, run, NULL, &error));
  g_assert_no_error (error);
  r3b = add_agent (store, session_id, run, "Custard tarts", KAGED_MESSAGE_STATUS_COMPLETE);

  /* ... then the first: everything after the first question leaves. */
  run = add_run (store, session_id, q1, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_true (kaged_store_supersede_after (store, session_id, q1, run, NULL, &error));
  g_assert_no_error (error);
  r1b = add_agent (store, session_id, run, "Go to Porto", KAGED_MESSAGE_STATUS_COMPLETE);
  q4 = add_operator (store, session_id, "By train?");
  r4 = add_agent (store, session_id, add_run (store, session_id, q4, KAGED_RUN_STATUS_SUCCEEDED),
                  "Yes", KAGED_MESSAGE_STATUS_COMPLETE);

  run = add_run (store, session_id, q1, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_true (kaged_store_supersede_after (store, session_id, q1, run, NULL, &error));
  g_assert_no_error (error);
  r1c = add_agent (store, session_id, run, "Go to Faro", KAGED_MESSAGE_STATUS_COMPLETE);

  /* The first version was followed by the turns as they stood then: the
   * second version of the last reply, not the first. */
  {
    g_autoptr(GPtrArray) later = kaged_store_list_superseded_with (store, r1, 0, NULL, &error);
    const gint64 expected[] = { q2, r2, q3, r3b };

    g_assert_no_error (error);
    assert_messages (later, expected, G_N_ELEMENTS (expected));
  }
  {
    g_autoptr(GPtrArray) later = kaged_store_list_superseded_with (store, r1b, 0, NULL, &error);
    const gint64 expected[] = { q4, r4 };

    g_assert_no_error (error);
    assert_messages (later, expected, G_N_ELEMENTS (expected));
  }
  /* A version nothing followed, and the current one, list nothing. */
  {
    g_autoptr(GPtrArray) later = kaged_store_list_superseded_with (store, r3, 0, NULL, &error);

    g_assert_no_error (error);
    assert_messages (later, NULL, 0);
  }
  {
    g_autoptr(GPtrArray) later = kaged_store_list_superseded_with (store, r1c, 0, NULL, &error);

    g_assert_no_error (error);
    assert_messages (later, NULL, 0);
  }
  /* From the middle of a branch: what came after it in that branch. */
  {
    g_autoptr(GPtrArray) later = kaged_store_list_superseded_with (store, r2, 0, NULL, &error);
    const gint64 expected[] = { q3, r3b };

    g_assert_no_error (error);
    assert_messages (later, expected, G_N_ELEMENTS (expected));
  }
  /* The first few, and how many in all. */
  {
    guint n_later = 0;
    g_autoptr(GPtrArray) later = kaged_store_list_superseded_with (store, r1, 3, &n_later, &error);
    const gint64 expected[] = { q2, r2, q3 };

    g_assert_no_error (error);
    assert_messages (later, expected, G_N_ELEMENTS (expected));
    g_assert_cmpuint (n_later, ==, 4);
  }
  {
    guint n_later = 0;
    g_autoptr(GPtrArray) later = kaged_store_list_superseded_with (store, r1b, 3, &n_later, &error);

    g_assert_no_error (error);
    g_assert_cmpuint (later->len, ==, 2);
    g_assert_cmpuint (n_later, ==, 2);
  }
  {
    g_autoptr(GPtrArray) later = kaged_store_list_superseded_with (store, other_q, 0, NULL, &error);

    g_assert_no_error (error);
    assert_messages (later, NULL, 0);
  }

  g_assert_null (kaged_store_list_superseded_with (store, 424242, 0, NULL, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
}

/* An edit posts the new text as a new operator message: the edited one and
 * those it replaced before are its earlier versions, oldest first. */
static void
test_edits (Fixture       *fixture,
            gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Edits");
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 q1, q2, q1b, q1c, q3, run;

  q1 = add_operator (store, session_id, "Plan a trip");
  add_agent (store, session_id, add_run (store, session_id, q1, KAGED_RUN_STATUS_SUCCEEDED),
             "Lisbon", KAGED_MESSAGE_STATUS_COMPLETE);
  q2 = add_operator (store, session_id, "Where to stay?");
  add_agent (store, session_id, add_run (store, session_id, q2, KAGED_RUN_STATUS_SUCCEEDED),
             "Alfama", KAGED_MESSAGE_STATUS_COMPLETE);

  /* Edited twice: each time from the first message on. */
  q1b = add_operator (store, session_id, "Plan a cheap trip");
  run = add_run (store, session_id, q1b, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_true (kaged_store_supersede_from (store, session_id, q1, run, q1b, NULL, &error));
  g_assert_no_error (error);
  add_agent (store, session_id, run, "Porto", KAGED_MESSAGE_STATUS_COMPLETE);
  q1c = add_operator (store, session_id, "Plan a cheap trip by train");
  run = add_run (store, session_id, q1c, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_true (kaged_store_supersede_from (store, session_id, q1b, run, q1c, NULL, &error));
  g_assert_no_error (error);
  add_agent (store, session_id, run, "Coimbra", KAGED_MESSAGE_STATUS_COMPLETE);

  /* A regeneration from it adds no version of the question, nor does a
   * message after it. */
  run = add_run (store, session_id, q1c, KAGED_RUN_STATUS_SUCCEEDED);
  g_assert_true (kaged_store_supersede_after (store, session_id, q1c, run, NULL, &error));
  g_assert_no_error (error);
  add_agent (store, session_id, run, "Braga", KAGED_MESSAGE_STATUS_COMPLETE);
  q3 = add_operator (store, session_id, "How long?");

  {
    g_autoptr(GPtrArray) edits = kaged_store_list_edits (store, q1c, &error);
    const gint64 expected[] = { q1, q1b };

    g_assert_no_error (error);
    assert_messages (edits, expected, G_N_ELEMENTS (expected));
    g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (edits, 0)), ==, "Plan a trip");
  }
  {
    g_autoptr(GPtrArray) edits = kaged_store_list_edits (store, q1b, &error);
    const gint64 expected[] = { q1 };

    g_assert_no_error (error);
    assert_messages (edits, expected, G_N_ELEMENTS (expected));
  }
  /* Never edited: the first text, the message after the edit, and one the
   * edit took out of the conversation with the first. */
  {
    g_autoptr(GPtrArray) edits = kaged_store_list_edits (store, q1, &error);

    g_assert_no_error (error);
    assert_messages (edits, NULL, 0);
  }
  {
    g_autoptr(GPtrArray) edits = kaged_store_list_edits (store, q3, &error);

    g_assert_no_error (error);
    assert_messages (edits, NULL, 0);
  }
  {
    g_autoptr(GPtrArray) edits = kaged_store_list_edits (store, q2, &error);

    g_assert_no_error (error);
    assert_messages (edits, NULL, 0);
  }

  g_assert_null (kaged_store_list_edits (store, 424242, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
}

/* The plan SQLite makes for one of the store's statements, one step a line. */
static char *
query_plan (sqlite3 *db,
            StmtId   id)
{
  g_autofree char *sql = g_strconcat ("EXPLAIN QUERY PLAN ", _kaged_store_stmt_sql[id], NULL);
  GString *plan = g_string_new (NULL);
  sqlite3_stmt *stmt = NULL;

  g_assert_cmpint (sqlite3_prepare_v2 (db, sql, -1, &stmt, NULL), ==, SQLITE_OK);
  while (sqlite3_step (stmt) == SQLITE_ROW)
    g_string_append_printf (plan, "%s\n", (const char *) sqlite3_column_text (stmt, 3));
  sqlite3_finalize (stmt);

  return g_string_free (plan, FALSE);
}

/* What one run superseded is read from the run, not by walking the whole
 * conversation up to the message: a question edited late in a long
 * conversation, or paged back to, costs the same as one early. */
static void
test_plans_start_from_run (Fixture       *fixture,
                           gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autofree char *with = NULL;
  g_autofree char *edited = NULL;
  sqlite3 *db;

  /* Opened, the store made the newest schema. */
  g_assert_true (KAGED_IS_STORE (store));
  db = raw_open (fixture->path);

  /* The plans' wording is SQLite's; what is checked is which index each
   * step uses, and that none reads a whole table or the conversation. */
  with = query_plan (db, STMT_MESSAGE_SUPERSEDED_WITH);
  g_test_message ("superseded with:\n%s", with);
  g_assert_true (g_str_has_prefix (with, "SEARCH s "));
  g_assert_nonnull (strstr (with, "message_supersessions_by_run (run_id=?"));
  g_assert_null (strstr (with, "messages_in_order"));
  g_assert_null (strstr (with, "SCAN"));

  edited = query_plan (db, STMT_MESSAGE_EDITED_FROM);
  g_test_message ("edited from:\n%s", edited);
  g_assert_true (g_str_has_prefix (edited, "SEARCH r "));
  g_assert_nonnull (strstr (edited, "runs_by_anchor (anchor_id=?)"));
  /* Up to the message only: what regenerations from it superseded is
   * not read. */
  g_assert_nonnull (strstr (edited, "message_supersessions_by_run (run_id=? AND rowid<?)"));
  g_assert_null (strstr (edited, "messages_in_order"));
  g_assert_null (strstr (edited, "SCAN"));

  sqlite3_close (db);
}

/* What was written in a conversation and not sent is kept across runs:
 * one text per conversation, and one for a conversation not started yet
 * (session 0). It goes with its conversation. */
static void
test_drafts (Fixture       *fixture,
             gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Drafts");
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  char *text = NULL;

  g_assert_true (kaged_store_get_draft (store, session_id, &text, &error));
  g_assert_no_error (error);
  g_assert_null (text);

  g_assert_true (kaged_store_set_draft (store, session_id, "Half a question", &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_set_draft (store, 0, "A new one", &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_set_draft (store, session_id, "Half a question, longer", &error));
  g_assert_no_error (error);

  g_clear_object (&store);
  store = open_store (fixture);
  g_assert_true (kaged_store_get_draft (store, session_id, &text, &error));
  g_assert_cmpstr (text, ==, "Half a question, longer");
  g_clear_pointer (&text, g_free);
  g_assert_true (kaged_store_get_draft (store, 0, &text, &error));
  g_assert_cmpstr (text, ==, "A new one");
  g_clear_pointer (&text, g_free);

  /* Empty is none. */
  g_assert_true (kaged_store_set_draft (store, 0, "", &error));
  g_assert_true (kaged_store_get_draft (store, 0, &text, &error));
  g_assert_null (text);

  /* Only for conversations there are. */
  g_assert_false (kaged_store_set_draft (store, session_id + 100, "Lost", &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  g_assert_true (kaged_store_delete_session (store, session_id, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_get_draft (store, session_id, &text, &error));
  g_assert_null (text);
}

static void
test_interrupted (Fixture       *fixture,
                  gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Crash");
  g_autoptr(KagedRun) run = NULL;
  g_autoptr(KagedMessage) reply = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 q1, q2, q3, q4;
  gint64 running_id, queued_id, done_id;
  gint64 partial_id, done_reply, stuck_id;
  GPtrArray *runs;

  q1 = add_operator (store, session_id, "First");
  done_id = add_run (store, session_id, q1, KAGED_RUN_STATUS_SUCCEEDED);
  done_reply = add_agent (store, session_id, done_id, "Done", KAGED_MESSAGE_STATUS_COMPLETE);
  q2 = add_operator (store, session_id, "Second");
  running_id = add_run (store, session_id, q2, KAGED_RUN_STATUS_RUNNING);
  partial_id = add_agent (store, session_id, running_id, "Half a rep",
                          KAGED_MESSAGE_STATUS_STREAMING);
  q3 = add_operator (store, session_id, "Third");
  queued_id = add_run (store, session_id, q3, KAGED_RUN_STATUS_QUEUED);
  /* A reply left streaming although its run was already recorded failed. */
  q4 = add_operator (store, session_id, "Fourth");
  stuck_id = add_agent (store, session_id, add_run (store, session_id, q4, KAGED_RUN_STATUS_FAILED),
                        "Stuck", KAGED_MESSAGE_STATUS_STREAMING);
  g_clear_object (&store);

  /* The program starts again a minute later. */
  kaged_fake_clock_set_wall_ms (KAGED_FAKE_CLOCK (fixture->clock), T0 + 60000);
  store = open_store (fixture);

  runs = kaged_store_get_interrupted_runs (store);
  g_assert_cmpuint (runs->len, ==, 1);
  g_assert_cmpint (kaged_run_get_id (g_ptr_array_index (runs, 0)), ==, running_id);
  runs = kaged_store_get_queued_runs (store);
  g_assert_cmpuint (runs->len, ==, 1);
  g_assert_cmpint (kaged_run_get_id (g_ptr_array_index (runs, 0)), ==, queued_id);

  run = kaged_store_get_run (store, running_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_FAILED);
  g_assert_cmpint (kaged_run_get_retry_class (run), ==, KAGED_RETRY_CLASS_INTERRUPTED);
  g_assert_false (kaged_run_get_retryable (run));
  g_assert_cmpint (kaged_run_get_finished_at (run), ==, T0 + 60000);

  reply = kaged_store_get_message (store, partial_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_INTERRUPTED);
  g_assert_cmpint (kaged_message_get_retry_class (reply), ==, KAGED_RETRY_CLASS_INTERRUPTED);
  g_assert_cmpstr (kaged_message_get_content (reply), ==, "Half a rep");
  g_clear_object (&reply);

  reply = kaged_store_get_message (store, stuck_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_INTERRUPTED);
  g_assert_cmpstr (kaged_message_get_content (reply), ==, "Stuck");
  g_clear_object (&reply);

  reply = kaged_store_get_message (store, done_reply, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_message_get_status (reply), ==, KAGED_MESSAGE_STATUS_COMPLETE);
  g_clear_object (&run);
  run = kaged_store_get_run (store, done_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_status (run), ==, KAGED_RUN_STATUS_SUCCEEDED);
  g_clear_object (&store);

  /* Recovered once: the next start finds nothing to recover. */
  store = open_store (fixture);
  g_assert_cmpuint (kaged_store_get_interrupted_runs (store)->len, ==, 0);
  g_assert_cmpuint (kaged_store_get_queued_runs (store)->len, ==, 1);
}

static void
test_paging (Fixture       *fixture,
             gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Long");
  g_autoptr(KagedSession) other = add_session (store, "Interleaved");
  g_autoptr(GArray) all_ids = g_array_new (FALSE, FALSE, sizeof (gint64));
  g_autoptr(GArray) superseded = NULL;
  g_autoptr(GArray) seen = g_array_new (FALSE, FALSE, sizeof (gint64));
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 anchor = 0;
  gint64 after = 0;
  gint64 before = 0;
  guint n_pages = 0;

  for (guint i = 0; i < 60; i++)
    {
      gint64 q = add_turn (store, session_id, i);

      /* Another session's messages fall between this one's ids. */
      add_turn (store, kaged_session_get_id (other), i);
      g_array_append_val (all_ids, q);
      q = q + 1;
      g_array_append_val (all_ids, q);
      if (i == 39)
        anchor = g_array_index (all_ids, gint64, all_ids->len - 2);
    }

  /* Forward pages of 25 see every message once, in order. */
  for (;;)
    {
      g_autoptr(GPtrArray) page = kaged_store_list_messages (store, session_id, FALSE, after, 25,
                                                             &error);
      g_assert_no_error (error);
      if (page->len == 0)
        break;
      g_assert_cmpuint (page->len, <=, 25);
      n_pages++;
      for (guint i = 0; i < page->len; i++)
        {
          gint64 id = kaged_message_get_id (g_ptr_array_index (page, i));

          g_assert_cmpint (kaged_message_get_session_id (g_ptr_array_index (page, i)), ==,
                           session_id);
          g_array_append_val (seen, id);
        }
      after = kaged_message_get_id (g_ptr_array_index (page, page->len - 1));
    }
  g_assert_cmpuint (n_pages, ==, 5);
  assert_ids (seen, (const gint64 *)(gpointer)all_ids->data, all_ids->len);

  /* Backward pages from the latest message end up in the same order. */
  g_array_set_size (seen, 0);
  for (;;)
    {
      g_autoptr(GPtrArray) page = kaged_store_list_messages_before (store, session_id, FALSE,
                                                                    before, 25, &error);
      g_assert_no_error (error);
      if (page->len == 0)
        break;
      for (guint i = page->len; i > 0; i--)
        {
          gint64 id = kaged_message_get_id (g_ptr_array_index (page, i - 1));
          g_array_prepend_val (seen, id);
        }
      for (guint i = 1; i < page->len; i++)
        g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (page, i - 1)), <,
                         kaged_message_get_id (g_ptr_array_index (page, i)));
      before = kaged_message_get_id (g_ptr_array_index (page, 0));
    }
  assert_ids (seen, (const gint64 *)(gpointer)all_ids->data, all_ids->len);

  /* After superseding the last 40 messages, current pages skip them and
   * pages with superseded ones still hold them in place. */
  {
    gint64 rerun = add_run (store, session_id, anchor, KAGED_RUN_STATUS_QUEUED);
    g_autoptr(GPtrArray) page = NULL;
    guint n = 0;

    g_assert_true (kaged_store_supersede_after (store, session_id, anchor, rerun, &superseded,
                                                &error));
    g_assert_no_error (error);
    g_assert_cmpuint (superseded->len, ==, 41);
    assert_ids (superseded, &g_array_index (all_ids, gint64, 79), 41);

    page = kaged_store_list_messages (store, session_id, FALSE, g_array_index (all_ids, gint64, 69),
                                      25, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (page->len, ==, 9);
    g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (page, 8)), ==, anchor);
    g_clear_pointer (&page, g_ptr_array_unref);

    page = kaged_store_list_messages (store, session_id, TRUE, anchor, 25, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (page->len, ==, 25);
    g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (page, 0)), ==,
                     g_array_index (all_ids, gint64, 79));
    g_clear_pointer (&page, g_ptr_array_unref);

    page = kaged_store_list_messages_before (store, session_id, FALSE, 0, 5, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (page->len, ==, 5);
    g_assert_cmpint (kaged_message_get_id (g_ptr_array_index (page, 4)), ==, anchor);
    g_clear_pointer (&page, g_ptr_array_unref);

    g_assert_true (kaged_store_count_messages (store, session_id, FALSE, &n, &error));
    g_assert_cmpuint (n, ==, 79);
    g_assert_true (kaged_store_count_messages (store, session_id, TRUE, &n, &error));
    g_assert_cmpuint (n, ==, 120);
  }
}

/* Q2 and Q3 posted while A1 was written: every listing, count and
 * supersession follows conversation order, not the order rows were
 * written in. */
static void
test_conversation_order (Fixture       *fixture,
                         gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Queued");
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) superseded = NULL;
  g_autoptr(KagedRun) latest = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 q1, q2, q3, r1, r2, r3, r3b, a1, a2, a3, a3b;
  guint n = 0;

  q1 = add_operator (store, session_id, "Q1");
  r1 = add_run (store, session_id, q1, KAGED_RUN_STATUS_RUNNING);
  a1 = add_agent (store, session_id, r1, "A1", KAGED_MESSAGE_STATUS_STREAMING);
  q2 = add_operator (store, session_id, "Q2");
  r2 = add_run (store, session_id, q2, KAGED_RUN_STATUS_QUEUED);
  q3 = add_operator (store, session_id, "Q3");
  r3 = add_run (store, session_id, q3, KAGED_RUN_STATUS_QUEUED);
  a2 = add_agent (store, session_id, r2, "A2", KAGED_MESSAGE_STATUS_COMPLETE);
  a3 = add_agent (store, session_id, r3, "A3", KAGED_MESSAGE_STATUS_COMPLETE);

  {
    g_autoptr(GPtrArray) all = list_all (store, session_id, FALSE);
    g_autoptr(GArray) ids = ids_of (all);
    const gint64 expected[] = { q1, a1, q2, a2, q3, a3 };

    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }

  /* Pages from a message, before a message and at a position. */
  {
    g_autoptr(GPtrArray) page = kaged_store_list_messages (store, session_id, FALSE, a2, 2,
                                                           &error);
    g_autoptr(GArray) ids = NULL;
    const gint64 expected[] = { q3, a3 };

    g_assert_no_error (error);
    ids = ids_of (page);
    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }
  {
    g_autoptr(GPtrArray) page = kaged_store_list_messages_before (store, session_id, FALSE,
                                                                  q3, 2, &error);
    g_autoptr(GArray) ids = NULL;
    const gint64 expected[] = { q2, a2 };

    g_assert_no_error (error);
    ids = ids_of (page);
    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }
  {
    g_autoptr(GPtrArray) page = kaged_store_list_messages_at (store, session_id, FALSE, 2, 3,
                                                              FALSE, &error);
    g_autoptr(GArray) ids = NULL;
    const gint64 expected[] = { q2, a2, q3 };

    g_assert_no_error (error);
    ids = ids_of (page);
    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }
  {
    g_autoptr(GPtrArray) page = kaged_store_list_messages_at (store, session_id, FALSE, 1, 3,
                                                              TRUE, &error);
    g_autoptr(GArray) ids = NULL;
    const gint64 expected[] = { q2, a2, q3 };

    g_assert_no_error (error);
    ids = ids_of (page);
    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }

  g_assert_true (kaged_store_count_messages_after (store, session_id, FALSE, a2, &n, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (n, ==, 2);
  g_assert_true (kaged_store_count_messages_after (store, session_id, FALSE, q1, &n, &error));
  g_assert_cmpuint (n, ==, 5);

  /* Regenerating Q3 supersedes its reply only, not A2 written after it. */
  r3b = add_run (store, session_id, q3, KAGED_RUN_STATUS_RUNNING);
  g_assert_true (kaged_store_supersede_after (store, session_id, q3, r3b, &superseded, &error));
  g_assert_no_error (error);
  {
    const gint64 expected[] = { a3 };

    assert_ids (superseded, expected, G_N_ELEMENTS (expected));
  }
  a3b = add_agent (store, session_id, r3b, "A3 again", KAGED_MESSAGE_STATUS_COMPLETE);

  /* Counting before: the current messages before a message, superseded or
   * not; all of them with the superseded ones. */
  g_assert_true (kaged_store_count_messages_before (store, session_id, FALSE, a2, &n, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (n, ==, 3);
  g_assert_true (kaged_store_count_messages_before (store, session_id, FALSE, a3b, &n, &error));
  g_assert_cmpuint (n, ==, 5);
  g_assert_true (kaged_store_count_messages_before (store, session_id, FALSE, a3, &n, &error));
  g_assert_cmpuint (n, ==, 5);
  g_assert_true (kaged_store_count_messages_before (store, session_id, TRUE, a3b, &n, &error));
  g_assert_cmpuint (n, ==, 6);
  g_assert_true (kaged_store_count_messages_before (store, session_id, FALSE, q1, &n, &error));
  g_assert_cmpuint (n, ==, 0);
  g_assert_false (kaged_store_count_messages_before (store, session_id + 1, FALSE, q1, &n,
                                                     &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  {
    g_autoptr(GPtrArray) all = list_all (store, session_id, TRUE);
    g_autoptr(GArray) ids = ids_of (all);
    const gint64 expected[] = { q1, a1, q2, a2, q3, a3, a3b };

    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }
  {
    g_autoptr(GPtrArray) versions = kaged_store_list_versions (store, q3, &error);
    g_autoptr(GArray) ids = NULL;
    const gint64 expected[] = { a3, a3b };

    g_assert_no_error (error);
    ids = ids_of (versions);
    assert_ids (ids, expected, G_N_ELEMENTS (expected));
  }

  /* The conversation ends with Q3's newest run, even once a run for an
   * earlier question is created later. */
  add_run (store, session_id, q2, KAGED_RUN_STATUS_QUEUED);
  latest = kaged_store_get_latest_run_in_conversation (store, session_id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kaged_run_get_id (latest), ==, r3b);
  g_clear_object (&latest);

  {
    g_autoptr(KagedSession) empty = add_session (store, "Empty");

    latest = kaged_store_get_latest_run_in_conversation (store, kaged_session_get_id (empty),
                                                         &error);
    g_assert_null (latest);
    g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  }
}

static void
test_delete_session (Fixture       *fixture,
                     gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) doomed = add_session (store, "Doomed");
  g_autoptr(KagedSession) kept = add_session (store, "Kept");
  g_autoptr(KagedStoreRetryState) state = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GPtrArray) sessions = NULL;
  g_autoptr(GArray) ids = NULL;
  g_autoptr(GError) error = NULL;
  gint64 doomed_id = kaged_session_get_id (doomed);
  gint64 kept_id = kaged_session_get_id (kept);
  gint64 q1, q2, run_id, last_id;
  KagedAttempt attempt = { .time = T0, .http_status = 503, .error = (char *)"Unavailable" };
  sqlite3 *db;

  q1 = add_turn (store, doomed_id, 1);
  add_turn (store, kept_id, 1);
  q2 = add_turn (store, doomed_id, 2);
  run_id = add_run (store, doomed_id, q1, KAGED_RUN_STATUS_QUEUED);
  g_assert_true (kaged_store_append_attempt (store, run_id, &attempt, &error));
  g_assert_no_error (error);
  g_assert_true (kaged_store_supersede_after (store, doomed_id, q1, run_id, &ids, &error));
  g_assert_no_error (error);
  state = kaged_store_retry_state_new (doomed_id);
  g_assert_true (kaged_store_set_retry_state (store, state, &error));
  g_assert_no_error (error);
  last_id = q2 + 1;

  g_assert_true (kaged_store_delete_session (store, doomed_id, &error));
  g_assert_no_error (error);

  messages = list_all (store, doomed_id, TRUE);
  g_assert_cmpuint (messages->len, ==, 0);
  g_clear_pointer (&messages, g_ptr_array_unref);
  g_assert_null (kaged_store_get_session (store, doomed_id, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_assert_null (kaged_store_get_run (store, run_id, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_assert_false (kaged_store_delete_session (store, doomed_id, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_NOT_FOUND);
  g_clear_error (&error);

  messages = list_all (store, kept_id, TRUE);
  g_assert_cmpuint (messages->len, ==, 2);
  sessions = kaged_store_list_sessions (store, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (sessions->len, ==, 1);

  /* Ids of deleted messages are never given out again. */
  g_assert_cmpint (add_operator (store, kept_id, "later"), >, last_id);
  g_clear_object (&store);

  db = raw_open (fixture->path);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM runs"), ==, 1);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM attempts"), ==, 0);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM message_supersessions"), ==, 0);
  g_assert_cmpint (raw_int (db, "SELECT count (*) FROM retry_states"), ==, 0);
  sqlite3_close (db);
}

static void
test_compacted (Fixture       *fixture,
                gconstpointer  user_data)
{
  g_autoptr(KagedStore) store = open_store (fixture);
  g_autoptr(KagedSession) session = add_session (store, "Compaction");
  g_autoptr(KagedMessage) summary = kaged_message_new ();
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GError) error = NULL;
  gint64 session_id = kaged_session_get_id (session);
  gint64 ids[4];
  gint64 q3;

  ids[0] = add_turn (store, session_id, 1);
  ids[1] = ids[0] + 1;
  ids[2] = add_turn (store, session_id, 2);
  ids[3] = ids[2] + 1;
  q3 = add_turn (store, session_id, 3);

  kaged_message_set_session_id (summary, session_id);
  kaged_message_set_role (summary, KAGED_MESSAGE_ROLE_SUMMARY);
  kaged_message_set_content (summary, "They asked two questions.");
  g_assert_true (kaged_store_append_message (store, summary, &error));
  g_assert_no_error (error);

  g_assert_true (kaged_store_mark_compacted (store, kaged_message_get_id (summary), ids,
                                             G_N_ELEMENTS (ids), &error));
  g_assert_no_error (error);

  messages = list_all (store, session_id, FALSE);
  g_assert_cmpuint (messages->len, ==, 7);
  for (guint i = 0; i < messages->len; i++)
    {
      KagedMessage *message = g_ptr_array_index (messages, i);

      g_assert_cmpint (kaged_message_get_compacted (message), ==, i < 4);
    }
  /* The originals are kept, operator words included. */
  g_assert_cmpstr (kaged_message_get_content (g_ptr_array_index (messages, 0)), ==, "Question 1");

  g_assert_false (kaged_store_mark_compacted (store, q3, ids, 1, &error));
  g_assert_error (error, KAGED_STORE_ERROR, KAGED_STORE_ERROR_INVALID);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

#define ADD_TEST(path, func) \
  g_test_add (path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  ADD_TEST ("/store/operator-immutable", test_operator_immutable);
  ADD_TEST ("/store/supersede", test_supersede);
  ADD_TEST ("/store/versions", test_versions);
  ADD_TEST ("/store/superseded-with", test_superseded_with);
  ADD_TEST ("/store/edits", test_edits);
  ADD_TEST ("/store/plans-start-from-run", test_plans_start_from_run);
  ADD_TEST ("/store/drafts", test_drafts);
  ADD_TEST ("/store/interrupted", test_interrupted);
  ADD_TEST ("/store/paging", test_paging);
  ADD_TEST ("/store/conversation-order", test_conversation_order);
  ADD_TEST ("/store/delete-session", test_delete_session);
  ADD_TEST ("/store/compacted", test_compacted);

#undef ADD_TEST

  return g_test_run ();
}
