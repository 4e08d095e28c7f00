/* kaged-code-block.c
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#define G_LOG_DOMAIN "kaged-code-block"

#include "config.h"

#include <math.h>
#include <string.h>

#include <adwaita.h>
#include <glib/gi18n.h>

#include "kaged-code-block.h"
#include "kaged-code-view.h"
#include "kaged-icons.h"

#define COPIED_FEEDBACK_SECONDS 2
#define GUESS_BYTES 512
#define COPY_ICON "edit-copy-symbolic"

/**
 * KagedCodeBlock:
 *
 * A fenced code block of a reply: the code, read-only and highlighted for
 * the language its fence names (or the one it looks like), under a header
 * with the language's name and a *Copy* button. It follows the desktop's
 * dark style with the Adwaita and Adwaita-dark schemes.
 *
 * Unlike the project's other widgets it is built in code, not from a
 * template: a streaming reply builds several blocks a second, each in the
 * frame that shows it, and GtkBuilder took three quarters of that time.
 */
typedef enum {
  WHEEL_AXIS_UNDECIDED,
  WHEEL_AXIS_CONVERSATION,
  WHEEL_AXIS_CODE,
} WheelAxis;

struct _KagedCodeBlock
{
  GtkWidget parent_instance;

  char *code;
  char *language;
  guint copied_source;
  /* A language whose definition is not parsed yet, until an idle sets it */
  GtkSourceLanguage *pending_language;
  guint pending_source;

  GtkLabel *language_label;
  GtkRevealer *copied_revealer; /* made at the first copy */
  GtkButton *copy_button;
  GtkSourceView *source_view;
  GtkSourceBuffer *buffer;

  /* Where a touchpad's scroll goes, decided at its first event: the
   * conversation (up and down) or the code (sideways) */
  WheelAxis wheel_axis;
};

G_DEFINE_FINAL_TYPE (KagedCodeBlock, kaged_code_block, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_CODE,
  PROP_LANGUAGE,
  N_PROPS
};

static GParamSpec *properties [N_PROPS];

/* Names a fence may use for a language, and the id GtkSourceView knows it
 * by, where the two differ. */
static const struct {
  const char *name;
  const char *id;
} language_aliases[] = {
  { "py", "python3" }, { "python", "python3" }, { "py3", "python3" },
  { "javascript", "js" }, { "node", "js" }, { "mjs", "js" }, { "cjs", "js" },
  { "ts", "typescript" }, { "tsx", "typescript-jsx" },
  { "shell", "sh" }, { "bash", "sh" }, { "zsh", "sh" }, { "console", "sh" },
  { "shellsession", "sh" },
  { "c++", "cpp" }, { "cxx", "cpp" }, { "cc", "cpp" }, { "hpp", "cpphdr" },
  { "h", "chdr" }, { "rs", "rust" }, { "golang", "go" }, { "yml", "yaml" },
  { "md", "markdown" }, { "cs", "csharp" }, { "c#", "csharp" }, { "kt", "kotlin" },
  { "rb", "ruby" }, { "dockerfile", "docker" }, { "make", "makefile" },
  { "patch", "diff" }, { "jsonc", "json" }, { "htm", "html" }, { "toml", "toml" },
  { "pl", "perl" }, { "ps1", "powershell" }, { "pwsh", "powershell" },
};

/* A hidden language is part of others (JSDoc of JavaScript), not one to
 * highlight with: some do not even load on their own. */
static GtkSourceLanguage *
shown_or_null (GtkSourceLanguage *language)
{
  return language != NULL && !gtk_source_language_get_hidden (language) ? language : NULL;
}

static GtkSourceLanguage *
find_language (const char *name,
               const char *code)
{
  GtkSourceLanguageManager *manager = gtk_source_language_manager_get_default ();
  GtkSourceLanguage *language = NULL;
  g_autofree char *content_type = NULL;

  if (name != NULL && name[0] != '\0')
    {
      g_autofree char *lower = g_ascii_strdown (name, -1);
      g_autofree char *filename = NULL;
      const char *id = lower;

      for (guint i = 0; i < G_N_ELEMENTS (language_aliases); i++)
        {
          if (strcmp (lower, language_aliases[i].name) == 0)
            {
              id = language_aliases[i].id;
              break;
            }
        }

      language = shown_or_null (gtk_source_language_manager_get_language (manager, id));
      if (language != NULL)
        return language;

      /* A fence often names the file extension. */
      filename = g_strconcat ("code.", lower, NULL);
      language = shown_or_null (gtk_source_language_manager_guess_language (manager, filename, NULL));
      if (language != NULL)
        return language;
    }

  if (code == NULL || code[0] == '\0')
    return NULL;

  /* No name, or one nobody knows: what the code looks like (a shebang,
   * an XML declaration). Plain text is no language. */
  content_type = g_content_type_guess (NULL, (const guchar *)code, MIN (strlen (code), GUESS_BYTES),
                                      NULL);
  if (content_type == NULL || g_content_type_equals (content_type, "text/plain"))
    return NULL;

  return shown_or_null (gtk_source_language_manager_guess_language (manager, NULL, content_type));
}

/*
 * GtkSourceView parses a language's definition when a buffer first
 * highlights it, and frees it with the last buffer that does: from 10 ms
 * (C) to over 100 ms (HTML), each time. A list recycles the rows of a long
 * conversation as it scrolls, and with them the blocks that highlight a
 * language; so once a block used a language, a buffer of its own, kept
 * here, keeps it parsed.
 *
 * The parse stays on the main thread: GtkSourceView checks every pattern
 * it compiles against one regex shared by the whole process, whose
 * reference count it changes without a lock, and the main thread uses
 * that regex too whenever it highlights. Parsing on another thread would
 * race with it, and a lost update frees the regex while it is in use.
 */
static GHashTable *kept_languages;

static void
keep_language (GtkSourceLanguage *language)
{
  const char *id = gtk_source_language_get_id (language);

  if (kept_languages == NULL)
    kept_languages = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_object_unref);
  if (!g_hash_table_contains (kept_languages, id))
    g_hash_table_insert (kept_languages, g_strdup (id), gtk_source_buffer_new_with_language (language));
}

static void
set_language (KagedCodeBlock    *self,
              GtkSourceLanguage *language)
{
  g_clear_handle_id (&self->pending_source, g_source_remove);
  self->pending_language = NULL;

  if (gtk_source_buffer_get_language (self->buffer) != language)
    gtk_source_buffer_set_language (self->buffer, language);
  if (language != NULL)
    keep_language (language);
}

static gboolean
set_pending_language_cb (gpointer user_data)
{
  KagedCodeBlock *self = user_data;

  self->pending_source = 0;
  set_language (self, self->pending_language);

  return G_SOURCE_REMOVE;
}

/*
 * A language no block used yet is parsed from an idle after the frame
 * that shows the block: the parse takes 10 ms and more, and in the frame
 * it would make the frame late. Until then the code shows plain.
 */
static void
update_language (KagedCodeBlock *self)
{
  GtkSourceLanguage *language = find_language (self->language, self->code);

  if (language == NULL || kaged_code_block_get_language_kept (gtk_source_language_get_id (language)))
    {
      set_language (self, language);
    }
  else
    {
      if (gtk_source_buffer_get_language (self->buffer) != NULL)
        gtk_source_buffer_set_language (self->buffer, NULL);
      self->pending_language = language;
      if (self->pending_source == 0)
        {
          self->pending_source = g_idle_add_full (G_PRIORITY_DEFAULT_IDLE, set_pending_language_cb,
                                                  self, NULL);
          g_source_set_static_name (g_main_context_find_source_by_id (NULL, self->pending_source),
                                    "[kaged] parse a language");
        }
    }

  if (language != NULL)
    gtk_label_set_label (self->language_label, gtk_source_language_get_name (language));
  else if (self->language != NULL)
    gtk_label_set_label (self->language_label, self->language);
  else
    gtk_label_set_label (self->language_label, _("Code"));
}

static void
update_style_scheme (KagedCodeBlock *self)
{
  GtkSourceStyleSchemeManager *manager = gtk_source_style_scheme_manager_get_default ();
  gboolean dark = adw_style_manager_get_dark (adw_style_manager_get_default ());
  GtkSourceStyleScheme *scheme;

  scheme = gtk_source_style_scheme_manager_get_scheme (manager, dark ? "Adwaita-dark" : "Adwaita");
  gtk_source_buffer_set_style_scheme (self->buffer, scheme);
}

static gboolean
hide_copied (gpointer user_data)
{
  KagedCodeBlock *self = user_data;

  self->copied_source = 0;
  gtk_revealer_set_reveal_child (self->copied_revealer, FALSE);
  gtk_button_set_icon_name (self->copy_button, COPY_ICON);

  return G_SOURCE_REMOVE;
}

static void
copy_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  kaged_code_block_copy (KAGED_CODE_BLOCK (widget));
}

/* --- the wheel over the code ---------------------------------------------------- */

/* GTK 4.8's scrolled window, once it can scroll its child sideways, keeps
 * every scroll event it gets, up and down too: the code's would stop the
 * conversation from scrolling under the pointer wherever a line is too
 * long. Up and down go to the conversation, by the steps its own wheel
 * takes (a touchpad's swipe without its momentum, which only the
 * conversation's own controller gives); sideways and Shift+wheel stay the
 * code's. A touchpad's swipe goes one way from its first event to its
 * end, so that a diagonal one does not jerk between the two. */
static gboolean
code_wheel_cb (GtkEventControllerScroll *controller,
               double                    dx,
               double                    dy,
               KagedCodeBlock           *self)
{
  GtkWidget *scroller = gtk_event_controller_get_widget (GTK_EVENT_CONTROLLER (controller));
  GdkModifierType state = gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (controller));
  GtkWidget *outer;
  GtkAdjustment *adjustment;
  WheelAxis axis = self->wheel_axis;
  double step;

  if (axis == WHEEL_AXIS_UNDECIDED)
    {
      axis = (dy != 0.0 && fabs (dy) >= fabs (dx) && (state & GDK_SHIFT_MASK) == 0)
             ? WHEEL_AXIS_CONVERSATION : WHEEL_AXIS_CODE;
      /* Kept until the swipe ends; a mouse wheel's clicks have no end. */
      if (gtk_event_controller_scroll_get_unit (controller) != GDK_SCROLL_UNIT_WHEEL)
        self->wheel_axis = axis;
    }

  if (axis != WHEEL_AXIS_CONVERSATION || dy == 0.0)
    return GDK_EVENT_PROPAGATE;

  outer = gtk_widget_get_parent (scroller) != NULL
          ? gtk_widget_get_ancestor (gtk_widget_get_parent (scroller), GTK_TYPE_SCROLLED_WINDOW)
          : NULL;
  if (outer == NULL)
    return GDK_EVENT_PROPAGATE;

  adjustment = gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (outer));
  if (gtk_event_controller_scroll_get_unit (controller) == GDK_SCROLL_UNIT_WHEEL)
    step = pow (gtk_adjustment_get_page_size (adjustment), 2.0 / 3.0);
  else
    step = 2.5;
  gtk_adjustment_set_value (adjustment, gtk_adjustment_get_value (adjustment) + dy * step);

  return GDK_EVENT_STOP;
}

static void
code_wheel_ended_cb (KagedCodeBlock *self)
{
  self->wheel_axis = WHEEL_AXIS_UNDECIDED;
}

static void
kaged_code_block_dispose (GObject *object)
{
  GtkWidget *child;
  KagedCodeBlock *self = (KagedCodeBlock *)object;

  g_clear_handle_id (&self->copied_source, g_source_remove);
  g_clear_handle_id (&self->pending_source, g_source_remove);
  self->pending_language = NULL;
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))) != NULL)
    gtk_widget_unparent (child);

  G_OBJECT_CLASS (kaged_code_block_parent_class)->dispose (object);
}

static void
kaged_code_block_finalize (GObject *object)
{
  KagedCodeBlock *self = (KagedCodeBlock *)object;

  g_clear_pointer (&self->code, g_free);
  g_clear_pointer (&self->language, g_free);

  G_OBJECT_CLASS (kaged_code_block_parent_class)->finalize (object);
}

static void
kaged_code_block_get_property (GObject    *object,
                               guint       prop_id,
                               GValue     *value,
                               GParamSpec *pspec)
{
  KagedCodeBlock *self = KAGED_CODE_BLOCK (object);

  switch (prop_id)
    {
    case PROP_CODE:
      g_value_set_string (value, kaged_code_block_get_code (self));
      break;

    case PROP_LANGUAGE:
      g_value_set_string (value, kaged_code_block_get_language (self));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_code_block_set_property (GObject      *object,
                               guint         prop_id,
                               const GValue *value,
                               GParamSpec   *pspec)
{
  KagedCodeBlock *self = KAGED_CODE_BLOCK (object);

  switch (prop_id)
    {
    case PROP_CODE:
      kaged_code_block_set_code (self, g_value_get_string (value));
      break;

    case PROP_LANGUAGE:
      kaged_code_block_set_language (self, g_value_get_string (value));
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
kaged_code_block_class_init (KagedCodeBlockClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = kaged_code_block_dispose;
  object_class->finalize = kaged_code_block_finalize;
  object_class->get_property = kaged_code_block_get_property;
  object_class->set_property = kaged_code_block_set_property;

  /**
   * KagedCodeBlock:code:
   *
   * The code shown.
   */
  properties [PROP_CODE] =
    g_param_spec_string ("code", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  /**
   * KagedCodeBlock:language:
   *
   * The language as the fence names it (`python`, `sh`, `rs`), or %NULL to
   * guess it from the code.
   */
  properties [PROP_LANGUAGE] =
    g_param_spec_string ("language", NULL, NULL,
                         NULL,
                         (G_PARAM_READWRITE |
                          G_PARAM_EXPLICIT_NOTIFY |
                          G_PARAM_STATIC_STRINGS));

  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_source_init ();

  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BOX_LAYOUT);
  gtk_widget_class_install_action (widget_class, "code.copy", NULL, copy_action);

  gtk_widget_class_set_css_name (widget_class, "codeblock");
}

static void
kaged_code_block_init (KagedCodeBlock *self)
{
  GtkLayoutManager *layout = gtk_widget_get_layout_manager (GTK_WIDGET (self));
  GtkWidget *header;
  GtkWidget *scroller;
  GtkEventController *wheel;

  gtk_orientable_set_orientation (GTK_ORIENTABLE (layout), GTK_ORIENTATION_VERTICAL);
  gtk_widget_set_overflow (GTK_WIDGET (self), GTK_OVERFLOW_HIDDEN);
  gtk_widget_add_css_class (GTK_WIDGET (self), "kaged-code-block");

  /* The language's name and Copy */
  header = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_widget_add_css_class (header, "kaged-code-header");
  gtk_widget_set_parent (header, GTK_WIDGET (self));

  self->language_label = GTK_LABEL (gtk_label_new (NULL));
  gtk_widget_set_hexpand (GTK_WIDGET (self->language_label), TRUE);
  gtk_label_set_xalign (self->language_label, 0);
  gtk_label_set_ellipsize (self->language_label, PANGO_ELLIPSIZE_END);
  gtk_widget_add_css_class (GTK_WIDGET (self->language_label), "caption");
  gtk_widget_add_css_class (GTK_WIDGET (self->language_label), "dim-label");
  gtk_box_append (GTK_BOX (header), GTK_WIDGET (self->language_label));

  /* Made hidden, given its tooltip, then shown: GTK 4.8 asks the display
   * server where the pointer is when a visible widget gets a tooltip, a
   * round trip for each block a streaming reply adds. */
  self->copy_button = g_object_new (GTK_TYPE_BUTTON,
                                    "visible", FALSE,
                                    "icon-name", COPY_ICON,
                                    "tooltip-text", _("Copy"),
                                    NULL);
  gtk_widget_set_visible (GTK_WIDGET (self->copy_button), TRUE);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (self->copy_button), "code.copy");
  gtk_widget_set_valign (GTK_WIDGET (self->copy_button), GTK_ALIGN_CENTER);
  gtk_widget_add_css_class (GTK_WIDGET (self->copy_button), "flat");
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->copy_button),
                                  GTK_ACCESSIBLE_PROPERTY_LABEL, _("Copy"),
                                  -1);
  gtk_box_append (GTK_BOX (header), GTK_WIDGET (self->copy_button));

  /* The code, scrolled sideways when its lines are long */
  scroller = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scroller), GTK_POLICY_AUTOMATIC, GTK_POLICY_NEVER);
  gtk_scrolled_window_set_propagate_natural_height (GTK_SCROLLED_WINDOW (scroller), TRUE);
  gtk_widget_set_parent (scroller, GTK_WIDGET (self));
  wheel = gtk_event_controller_scroll_new (GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
  gtk_event_controller_set_name (wheel, "kaged-code-wheel");
  gtk_event_controller_set_propagation_phase (wheel, GTK_PHASE_CAPTURE);
  g_signal_connect_object (wheel, "scroll", G_CALLBACK (code_wheel_cb), self, 0);
  g_signal_connect_object (wheel, "scroll-begin", G_CALLBACK (code_wheel_ended_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (wheel, "scroll-end", G_CALLBACK (code_wheel_ended_cb), self, G_CONNECT_SWAPPED);
  gtk_widget_add_controller (scroller, wheel);

  self->buffer = gtk_source_buffer_new (NULL);
  gtk_source_buffer_set_highlight_matching_brackets (self->buffer, FALSE);
  self->source_view = g_object_new (KAGED_TYPE_CODE_VIEW,
                                    "buffer", self->buffer,
                                    "editable", FALSE,
                                    "cursor-visible", FALSE,
                                    "monospace", TRUE,
                                    "wrap-mode", GTK_WRAP_NONE,
                                    "top-margin", 6,
                                    "bottom-margin", 12,
                                    "left-margin", 12,
                                    "right-margin", 12,
                                    NULL);
  g_object_unref (self->buffer);
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->source_view),
                                  GTK_ACCESSIBLE_PROPERTY_LABEL, _("Code"),
                                  -1);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), GTK_WIDGET (self->source_view));

  g_signal_connect_object (adw_style_manager_get_default (),
                           "notify::dark",
                           G_CALLBACK (update_style_scheme),
                           self,
                           G_CONNECT_SWAPPED);
  update_style_scheme (self);
  update_language (self);
}

GtkWidget *
kaged_code_block_new (void)
{
  return g_object_new (KAGED_TYPE_CODE_BLOCK, NULL);
}

const char *
kaged_code_block_get_code (KagedCodeBlock *self)
{
  g_return_val_if_fail (KAGED_IS_CODE_BLOCK (self), NULL);

  return self->code;
}

/**
 * kaged_code_block_set_code:
 *
 * Sets the code. While a reply streams, the code of its last block grows:
 * only what was added is inserted, so the highlighting is not redone from
 * the start.
 */
void
kaged_code_block_set_code (KagedCodeBlock *self,
                           const char     *code)
{
  g_return_if_fail (KAGED_IS_CODE_BLOCK (self));

  if (g_strcmp0 (self->code, code) == 0)
    return;

  if (code != NULL && self->code != NULL && g_str_has_prefix (code, self->code))
    {
      GtkTextIter start, end;
      int line;

      gtk_text_buffer_get_end_iter (GTK_TEXT_BUFFER (self->buffer), &end);
      line = gtk_text_iter_get_line (&end);
      gtk_text_buffer_insert (GTK_TEXT_BUFFER (self->buffer), &end,
                              code + strlen (self->code), -1);

      /* What was added is highlighted now, in the frame that shows it,
       * rather than from an idle that would lay out and draw the window
       * once more; only it, so that this stays short however long the
       * code grows. */
      if (gtk_source_buffer_get_highlight_syntax (self->buffer) &&
          gtk_source_buffer_get_language (self->buffer) != NULL)
        {
          gtk_text_buffer_get_iter_at_line (GTK_TEXT_BUFFER (self->buffer), &start, line);
          gtk_text_buffer_get_end_iter (GTK_TEXT_BUFFER (self->buffer), &end);
          gtk_source_buffer_ensure_highlight (self->buffer, &start, &end);
        }
    }
  else
    {
      gtk_text_buffer_set_text (GTK_TEXT_BUFFER (self->buffer), code != NULL ? code : "", -1);
      /* Code shown several lines at once is checked once laid out; a
       * block that streams in starts with one line, and each change that
       * adds one asks for a new size anyway. */
      if (gtk_text_buffer_get_line_count (GTK_TEXT_BUFFER (self->buffer)) > 1)
        kaged_code_view_text_replaced (KAGED_CODE_VIEW (self->source_view));
    }

  g_free (self->code);
  self->code = g_strdup (code);

  /* Without a name, the language is guessed from the code's beginning
   * until one is found. */
  if (self->language == NULL && gtk_source_buffer_get_language (self->buffer) == NULL &&
      self->pending_language == NULL)
    update_language (self);

  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_CODE]);
}

const char *
kaged_code_block_get_language (KagedCodeBlock *self)
{
  g_return_val_if_fail (KAGED_IS_CODE_BLOCK (self), NULL);

  return self->language;
}

void
kaged_code_block_set_language (KagedCodeBlock *self,
                               const char     *language)
{
  g_return_if_fail (KAGED_IS_CODE_BLOCK (self));

  if (g_strcmp0 (self->language, language) == 0)
    return;

  g_free (self->language);
  self->language = g_strdup (language);
  update_language (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties [PROP_LANGUAGE]);
}

/**
 * kaged_code_block_get_buffer:
 *
 * Returns: (transfer none): the buffer that holds the code
 */
GtkSourceBuffer *
kaged_code_block_get_buffer (KagedCodeBlock *self)
{
  g_return_val_if_fail (KAGED_IS_CODE_BLOCK (self), NULL);

  return self->buffer;
}

/**
 * kaged_code_block_copy:
 *
 * Puts the code on the clipboard and says so for a moment.
 */
void
kaged_code_block_copy (KagedCodeBlock *self)
{
  g_return_if_fail (KAGED_IS_CODE_BLOCK (self));

  gdk_clipboard_set_text (gtk_widget_get_clipboard (GTK_WIDGET (self)),
                          self->code != NULL ? self->code : "");

  /* Few blocks are ever copied: what says so is made the first time. */
  if (self->copied_revealer == NULL)
    {
      GtkWidget *copied = gtk_label_new (_("Copied"));

      gtk_widget_add_css_class (copied, "caption");
      self->copied_revealer = GTK_REVEALER (gtk_revealer_new ());
      gtk_revealer_set_transition_type (self->copied_revealer, GTK_REVEALER_TRANSITION_TYPE_CROSSFADE);
      gtk_revealer_set_child (self->copied_revealer, copied);
      gtk_box_insert_child_after (GTK_BOX (gtk_widget_get_parent (GTK_WIDGET (self->copy_button))),
                                  GTK_WIDGET (self->copied_revealer),
                                  GTK_WIDGET (self->language_label));
    }

  gtk_button_set_icon_name (self->copy_button, "object-select-symbolic");
  gtk_revealer_set_reveal_child (self->copied_revealer, TRUE);
  g_clear_handle_id (&self->copied_source, g_source_remove);
  self->copied_source = g_timeout_add_seconds (COPIED_FEEDBACK_SECONDS, hide_copied, self);
}

/* --- what the first block needs, loaded ahead ------------------------------------------ */

/*
 * The first block of a run loads what every block then shares: the list
 * of languages, the style schemes, the classes of its widgets, and the
 * icon of its *Copy* button — about 50 ms, in the middle of a streaming
 * reply. kaged_code_block_warm_up() loads them ahead, one at a time from
 * idles, each about a frame long or less.
 */
typedef struct
{
  GdkDisplay *display;
  int scale;
  guint step;
} WarmUp;

static gboolean warm_up_started;
static gboolean warm_up_done;

static void
warm_up_free (gpointer data)
{
  WarmUp *warm = data;

  g_clear_object (&warm->display);
  g_free (warm);
}

static gboolean
warm_up_step_cb (gpointer user_data)
{
  WarmUp *warm = user_data;

  switch (warm->step++)
    {
    case 0:
      gtk_source_init ();
      gtk_source_language_manager_get_language_ids (gtk_source_language_manager_get_default ());
      return G_SOURCE_CONTINUE;

    case 1:
      gtk_source_style_scheme_manager_get_scheme (gtk_source_style_scheme_manager_get_default (),
                                                  "Adwaita");
      return G_SOURCE_CONTINUE;

    case 2:
      g_object_unref (g_object_ref_sink (kaged_code_block_new ()));
      return G_SOURCE_CONTINUE;

    case 3:
      g_object_unref (kaged_icon_preload (warm->display, COPY_ICON, warm->scale));
      return G_SOURCE_CONTINUE;

    default:
      warm_up_done = TRUE;
      return G_SOURCE_REMOVE;
    }
}

/**
 * kaged_code_block_warm_up:
 * @display: the display blocks will show on
 * @scale: the scale of the window they will show in
 *
 * Loads, from idles of low priority, what the first code block would load
 * while it is built; once a run, and only what is not loaded yet. Call it
 * once the window shows.
 */
void
kaged_code_block_warm_up (GdkDisplay *display,
                          int         scale)
{
  WarmUp *warm;

  g_return_if_fail (GDK_IS_DISPLAY (display));

  if (warm_up_started)
    return;
  warm_up_started = TRUE;

  warm = g_new0 (WarmUp, 1);
  warm->display = g_object_ref (display);
  warm->scale = MAX (scale, 1);
  g_idle_add_full (G_PRIORITY_LOW, warm_up_step_cb, warm, warm_up_free);
}

/**
 * kaged_code_block_get_warmed_up:
 *
 * Returns: whether kaged_code_block_warm_up() has loaded all it loads
 */
gboolean
kaged_code_block_get_warmed_up (void)
{
  return warm_up_done;
}

/**
 * kaged_code_block_get_language_kept:
 * @id: a language's id, as GtkSourceView knows it
 *
 * Returns: whether the language stays parsed, because a block used it
 */
gboolean
kaged_code_block_get_language_kept (const char *id)
{
  g_return_val_if_fail (id != NULL, FALSE);

  return kept_languages != NULL && g_hash_table_contains (kept_languages, id);
}
