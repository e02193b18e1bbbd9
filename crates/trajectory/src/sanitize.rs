//! The one sanitiser, below both `cli` and `tui` (docs/design.md, "Untrusted text"):
//! tool results, model output and file contents may hold escape sequences (OSC 52 writes the
//! clipboard, CSI 2J clears the screen) or bidi overrides (which reorder what is shown).
//! Every string from a run passes through here before it becomes a `Span` or is printed.
//!
//! The one sanitiser, below both CLI and TUI: control and bidi characters shown escaped, lines and
//! sizes capped (`inert` for printed output, `one_line`/`lines` for drawing, `inert_json` for JSON
//! documents, `InertWriter` for output streamed in pieces, as `cosmos export` writes).

/// Text for printing: control and bidi characters shown escaped (`\u{1b}`); newlines and
/// tabs kept.
pub fn inert(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c if is_unsafe(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// One display line: control characters shown escaped (`\u{1b}`), newlines as `⏎`,
/// tabs as a space, cut to `max_width` terminal columns (the `…` that marks a cut included).
/// Columns, not characters: a CJK character or an emoji takes two.
pub fn one_line(text: &str, max_width: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let mut out = String::with_capacity(text.len().min(max_width * 4 + 8));
    let mut width = 0;
    // The length of `out` at the last point that still leaves a column for the `…`.
    let mut cut_at = 0;
    let mut buf = [0u8; 4];
    let mut escaped = String::new();
    for c in text.chars() {
        let piece: &str = match c {
            '\n' => "⏎",
            '\r' => continue,
            '\t' => " ",
            c if is_unsafe(c) => {
                escaped.clear();
                escaped.extend(c.escape_unicode());
                &escaped
            }
            c => c.encode_utf8(&mut buf),
        };
        let w: usize = piece.chars().map(|c| c.width().unwrap_or(0)).sum();
        if width + w > max_width {
            out.truncate(cut_at);
            if max_width > 0 {
                out.push('…');
            }
            return out;
        }
        width += w;
        out.push_str(piece);
        if width < max_width {
            cut_at = out.len();
        }
    }
    out
}

/// Many lines: each line made inert like [`one_line`], at most `max_lines`, each cut to
/// `max_chars`; a final marker line says how much was left out.
pub fn lines(text: &str, max_lines: usize, max_chars: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some((line, tail)) = rest.split_once('\n').or(if rest.is_empty() {
        None
    } else {
        Some((rest, ""))
    }) {
        if out.len() == max_lines {
            let left = rest.len();
            out.push(format!("… cut: {left} more bytes not shown"));
            return out;
        }
        out.push(one_line(line, max_chars));
        rest = tail;
    }
    out
}

/// Control characters drive the terminal; right-to-left overrides and similar reorder
/// what it shows.
/// JSON text made inert without breaking it: every control or bidi character still raw in it
/// (serde_json leaves C1 controls and bidi overrides as they are) becomes a `\uXXXX` escape,
/// which a JSON reader turns back into the same string. Only correct for valid JSON text,
/// where such characters can only stand inside strings.
pub fn inert_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if is_unsafe(c) && !matches!(c, '\n' | '\t' | '\r') {
            // Every unsafe character is in the Basic Multilingual Plane: one escape each.
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A writer that makes what passes through it inert on its way to `inner`: [`inert`] for
/// text, [`inert_json`] for JSON (the same document, unsafe characters as `\u` escapes). For
/// output streamed in pieces (an export to standard output): a character split between two
/// writes waits for its end.
pub struct InertWriter<W: std::io::Write> {
    inner: W,
    json: bool,
    pending: Vec<u8>,
}

impl<W: std::io::Write> InertWriter<W> {
    /// Text made inert with [`inert`].
    pub fn text(inner: W) -> Self {
        Self {
            inner,
            json: false,
            pending: Vec::new(),
        }
    }

    /// JSON made inert with [`inert_json`].
    pub fn json(inner: W) -> Self {
        Self {
            json: true,
            ..Self::text(inner)
        }
    }

    fn pass(&mut self, text: &str) -> std::io::Result<()> {
        let safe = if self.json {
            inert_json(text)
        } else {
            inert(text)
        };
        self.inner.write_all(safe.as_bytes())
    }
}

impl<W: std::io::Write> std::io::Write for InertWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            // An incomplete character at the end waits; bytes that are no UTF-8 at all pass
            // as U+FFFD.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => {
                let text = String::from_utf8_lossy(&self.pending).into_owned();
                self.pending.clear();
                self.pass(&text)?;
                return Ok(buf.len());
            }
        };
        let rest = self.pending.split_off(valid);
        let done = std::mem::replace(&mut self.pending, rest);
        // Checked just above.
        self.pass(std::str::from_utf8(&done).unwrap_or_default())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            let text = String::from_utf8_lossy(&self.pending).into_owned();
            self.pending.clear();
            self.pass(&text)?;
        }
        self.inner.flush()
    }
}

fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_stays_json_and_inert() {
        let value = serde_json::json!({"task": "abc\u{202e}txt.exe\u{9b}31m\u{1b}[2J"});
        let text = serde_json::to_string_pretty(&value).unwrap();
        let safe = inert_json(&text);
        assert!(!safe.chars().any(|c| is_unsafe(c) && c != '\n'), "{safe}");
        assert!(safe.contains("abc\\u202etxt.exe"), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value, "the same document");
    }

    #[test]
    fn the_inert_writer_escapes_across_writes_split_mid_character() {
        use std::io::Write;
        let evil = "a\u{1b}]0;title\u{7}\u{1b}[2J é \u{9b}31m\u{202e}z\n";
        let mut out = Vec::new();
        {
            let mut w = InertWriter::text(&mut out);
            // One byte at a time: every character is split across writes.
            for b in evil.as_bytes() {
                w.write_all(std::slice::from_ref(b)).unwrap();
            }
            w.flush().unwrap();
        }
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, inert(evil));
        assert!(!text.chars().any(|c| is_unsafe(c) && c != '\n'), "{text:?}");
    }

    #[test]
    fn the_inert_writer_passes_bytes_that_are_no_utf8_as_replacement_characters() {
        use std::io::Write;
        let mut out = Vec::new();
        {
            let mut w = InertWriter::text(&mut out);
            w.write_all(b"a\xff\x1b[2Jb").unwrap();
            w.flush().unwrap();
        }
        assert_eq!(String::from_utf8(out).unwrap(), "a\u{fffd}\\u{1b}[2Jb");
    }

    #[test]
    fn escapes_never_survive() {
        let evil = "ok\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\u{9b}31m\u{202e}";
        let s = one_line(evil, 200);
        assert!(!s.chars().any(|c| c.is_control()), "{s:?}");
        assert!(s.contains("\\u{1b}]52;c;"));
    }

    #[test]
    fn printed_text_keeps_its_lines_but_not_its_escapes() {
        assert_eq!(
            inert("a\u{1b}]52;c;aGk=\u{7}b\n\tc"),
            "a\\u{1b}]52;c;aGk=\\u{7}b\n\tc"
        );
        assert_eq!(inert("\u{9b}2J \u{202e}x"), "\\u{9b}2J \\u{202e}x");
    }

    #[test]
    fn cuts_by_columns_not_characters() {
        use unicode_width::UnicodeWidthStr;
        // Each of these takes two columns: four of them are eight.
        assert_eq!(one_line("東京都庁", 8), "東京都庁");
        let cut = one_line("東京都庁", 7);
        assert_eq!(cut, "東京都…");
        assert!(cut.width() <= 7);
        let cut = one_line("ok 🚀🚀🚀", 6);
        assert_eq!(cut, "ok 🚀…");
        for w in 0..12 {
            assert!(one_line("a東b🚀c\u{1b}[2J", w).width() <= w, "width {w}");
        }
    }

    #[test]
    fn cuts_long_lines_and_many_lines() {
        assert_eq!(one_line("abcdef", 3), "ab…");
        assert_eq!(one_line("abc", 3), "abc");
        assert_eq!(one_line("abc", 0), "");
        assert_eq!(one_line("a\nb", 10), "a⏎b");
        let l = lines("1\n2\n3\n4", 2, 10);
        assert_eq!(l, vec!["1", "2", "… cut: 3 more bytes not shown"]);
        assert_eq!(lines("", 5, 5), Vec::<String>::new());
    }
}
