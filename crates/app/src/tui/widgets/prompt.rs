//! The one text prompt (the browser's filter, find in a run): the usual editing keys from
//! `tui-input` (←/→, Home/End, Ctrl-U, Ctrl-W, Ctrl-K…), Enter submits, Esc cancels.

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent};
use tui_input::Input;
use tui_input::backend::crossterm::EventHandler;

use cosmos_trajectory::sanitize::one_line;

/// What a key did to the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Typed {
    /// The text changed (or the cursor moved).
    Edited,
    /// Enter: the text is final.
    Submitted(String),
    /// Esc: the prompt is abandoned.
    Cancelled,
}

/// A one-line text prompt.
#[derive(Debug, Clone, Default)]
pub struct Prompt {
    input: Input,
}

impl Prompt {
    /// A prompt holding `text`, the cursor at its end.
    pub fn new(text: &str) -> Self {
        Self {
            input: Input::new(text.to_string()),
        }
    }

    /// Applies a key.
    pub fn key(&mut self, key: &KeyEvent) -> Typed {
        match key.code {
            KeyCode::Enter => Typed::Submitted(self.input.value().to_string()),
            KeyCode::Esc => Typed::Cancelled,
            _ => {
                self.input.handle_event(&TermEvent::Key(*key));
                Typed::Edited
            }
        }
    }

    /// The text typed so far.
    pub fn value(&self) -> &str {
        self.input.value()
    }

    /// The text as drawn in `width` columns with a cursor mark: the part around the cursor
    /// when it is too long.
    pub fn shown(&self, width: usize) -> String {
        let width = width.max(4);
        let value = self.input.value();
        let cursor = self.input.cursor();
        let chars: Vec<char> = value.chars().collect();
        let start = cursor.saturating_sub(width.saturating_sub(2));
        let before: String = chars[start..cursor.min(chars.len())].iter().collect();
        let after: String = chars[cursor.min(chars.len())..].iter().collect();
        one_line(&format!("{before}▏{after}"), width)
    }
}

/// The words of a query, lower-cased: a text matches when it contains every one.
pub fn words(query: &str) -> Vec<String> {
    query.split_whitespace().map(str::to_lowercase).collect()
}

/// True when `text` (lower-cased by the caller) contains every word.
pub fn matches_all(text: &str, words: &[String]) -> bool {
    words.iter().all(|w| text.contains(w.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn edits_with_the_usual_keys() {
        let mut p = Prompt::default();
        for c in "spiral tokyo".chars() {
            assert_eq!(
                p.key(&key(KeyCode::Char(c), KeyModifiers::NONE)),
                Typed::Edited
            );
        }
        p.key(&key(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(
            p.value(),
            "spiral ",
            "Ctrl-W deletes a word, it types no `w`"
        );
        p.key(&key(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(p.value(), "", "Ctrl-U clears the line");
        p.key(&key(KeyCode::Char('x'), KeyModifiers::NONE));
        assert_eq!(
            p.key(&key(KeyCode::Enter, KeyModifiers::NONE)),
            Typed::Submitted("x".into())
        );
        assert_eq!(
            p.key(&key(KeyCode::Esc, KeyModifiers::NONE)),
            Typed::Cancelled
        );
    }

    #[test]
    fn every_word_must_match() {
        let w = words("  Spiral  TOKYO ");
        assert_eq!(w, ["spiral", "tokyo"]);
        assert!(matches_all("time_mcp_001 spiral memory tokyo", &w));
        assert!(!matches_all("time_mcp_001 spiral memory", &w));
        assert!(matches_all("anything", &[]));
    }

    #[test]
    fn a_long_text_shows_the_part_at_the_cursor() {
        let p = Prompt::new(&"a".repeat(50));
        let shown = p.shown(10);
        assert!(shown.ends_with('▏'), "{shown}");
        assert!(unicode_width::UnicodeWidthStr::width(shown.as_str()) <= 10);
    }
}
