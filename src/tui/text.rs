//! Untrusted text made inert for drawing: tool results, model output and file contents may
//! hold escape sequences (OSC 52 writes the clipboard, CSI 2J clears the screen). Every
//! string from a run passes through here before it becomes a `Span`.

/// One display line: control characters shown escaped (`\u{1b}`), newlines as `⏎`,
/// tabs as a space, cut to `max_chars` with `…`.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars + 8));
    for (count, c) in text.chars().enumerate() {
        if count >= max_chars {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push('⏎'),
            '\r' => {}
            '\t' => out.push(' '),
            c if c.is_control() || is_bidi_control(c) => {
                out.extend(c.escape_unicode());
            }
            c => out.push(c),
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

/// Right-to-left overrides and similar can reorder what the terminal shows.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_never_survive() {
        let evil = "ok\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\u{9b}31m\u{202e}";
        let s = one_line(evil, 200);
        assert!(!s.chars().any(|c| c.is_control()), "{s:?}");
        assert!(s.contains("\\u{1b}]52;c;"));
    }

    #[test]
    fn cuts_long_lines_and_many_lines() {
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("a\nb", 10), "a⏎b");
        let l = lines("1\n2\n3\n4", 2, 10);
        assert_eq!(l, vec!["1", "2", "… cut: 3 more bytes not shown"]);
        assert_eq!(lines("", 5, 5), Vec::<String>::new());
    }
}
