//! Long lines wrapped to the width, in terminal columns: a line breaks after a space or a
//! comma where it can (so JSON breaks between tokens, not inside them) and mid-word only when
//! a word is wider than the row; continuation rows keep the line's indentation and add two.
//! Input is inert already (`cosmos_trajectory::sanitize`); nothing is cut.

use unicode_width::UnicodeWidthChar;

/// Rows of one line wrapped to `width` columns (at least one row, even for an empty line).
pub fn wrap_line(line: &str, width: usize) -> Vec<String> {
    let width = width.max(2);
    let indent = line.len() - line.trim_start_matches(' ').len();
    // Deep indentation must still leave room for text.
    let hang = (indent + 2).min(width / 2);
    let mut rows = Vec::new();
    let mut rest = line;
    let mut avail = width;
    loop {
        let (take, next) = split_row(rest, avail);
        let row = &rest[..take];
        if rows.is_empty() {
            rows.push(row.to_string());
        } else {
            rows.push(format!("{}{}", " ".repeat(hang), row));
        }
        if next >= rest.len() {
            break;
        }
        rest = &rest[next..];
        avail = width - hang;
    }
    rows
}

/// How many bytes of `text` fill one row of `avail` columns, and where the next row starts
/// (past the spaces at the break).
fn split_row(text: &str, avail: usize) -> (usize, usize) {
    let mut used = 0;
    let mut last_break = None;
    for (i, c) in text.char_indices() {
        let w = c.width().unwrap_or(0);
        if used + w > avail {
            return match last_break {
                Some(b) if b > 0 => (b, skip_spaces(text, b)),
                // A word wider than the row (or a wide character at its edge): cut it.
                _ => {
                    let cut = if i == 0 { c.len_utf8() } else { i };
                    (cut, cut)
                }
            };
        }
        used += w;
        if c == ' ' || c == ',' {
            last_break = Some(i + c.len_utf8());
        }
    }
    (text.len(), text.len())
}

fn skip_spaces(text: &str, from: usize) -> usize {
    from + text[from..].len() - text[from..].trim_start_matches(' ').len()
}

/// A text of many lines with its rows for one width, rebuilt only when the width changes.
/// `T` is what each line carries for drawing (a diff mark, a link).
#[derive(Debug, Clone, PartialEq)]
pub struct Wrapped<T> {
    lines: Vec<(String, T)>,
    width: usize,
    rows: Vec<(u32, String)>,
}

impl<T> Default for Wrapped<T> {
    fn default() -> Self {
        Self {
            lines: Vec::new(),
            width: 0,
            rows: Vec::new(),
        }
    }
}

impl<T> Wrapped<T> {
    /// Lines (already inert), laid out for `width` columns.
    pub fn new(lines: Vec<(String, T)>, width: usize) -> Self {
        let mut w = Self {
            lines,
            width: 0,
            rows: Vec::new(),
        };
        w.fit(width);
        w
    }

    /// Lays the rows out again if `width` differs from the last layout.
    pub fn fit(&mut self, width: usize) {
        // Laid out already for this width (an empty text has no rows at any width).
        let laid_out = !self.rows.is_empty() || self.lines.is_empty();
        if width == self.width && laid_out {
            return;
        }
        self.width = width;
        self.rows.clear();
        for (i, (line, _)) in self.lines.iter().enumerate() {
            for row in wrap_line(line, width) {
                self.rows.push((i as u32, row));
            }
        }
    }

    /// The logical lines.
    pub fn lines(&self) -> &[(String, T)] {
        &self.lines
    }

    /// How many rows the text takes.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Rows from `offset`: each row's line index, text, and what its line carries.
    pub fn rows(&self, offset: usize, count: usize) -> impl Iterator<Item = (usize, &str, &T)> {
        self.rows
            .iter()
            .skip(offset)
            .take(count)
            .map(|(i, text)| (*i as usize, text.as_str(), &self.lines[*i as usize].1))
    }

    /// The first row of logical line `line`.
    pub fn row_of(&self, line: usize) -> usize {
        self.rows.partition_point(|(i, _)| (*i as usize) < line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

    #[test]
    fn breaks_between_words_and_keeps_the_indent() {
        let rows = wrap_line("    reason: the call converts London time, not Tokyo", 24);
        assert_eq!(
            rows,
            [
                "    reason: the call ",
                "      converts London ",
                "      time, not Tokyo"
            ]
        );
        for r in &rows {
            assert!(r.width() <= 24, "{r:?}");
        }
        let joined: String = rows
            .iter()
            .enumerate()
            .map(|(i, r)| if i == 0 { r.as_str() } else { &r[6..] })
            .collect();
        assert_eq!(
            joined,
            "    reason: the call converts London time, not Tokyo"
        );
    }

    #[test]
    fn json_breaks_after_commas_not_inside_tokens() {
        let rows = wrap_line(r#"  {"timezone":"Asia/Tokyo","time":"12:00"}"#, 30);
        assert_eq!(rows[0], r#"  {"timezone":"Asia/Tokyo","#);
        assert_eq!(rows[1], r#"    "time":"12:00"}"#);
    }

    #[test]
    fn long_words_and_wide_characters_are_cut_within_the_width() {
        // 10 on the first row, then 8 after the two-column hanging indent.
        let rows = wrap_line(&"x".repeat(25), 10);
        assert_eq!(rows.len(), 3);
        assert!(rows.iter().all(|r| r.width() <= 10));
        let rows = wrap_line(&"東".repeat(9), 7);
        assert!(rows.iter().all(|r| r.width() <= 7), "{rows:?}");
        assert_eq!(rows.concat().matches('東').count(), 9, "nothing lost");
        assert_eq!(wrap_line("", 10), [""]);
    }

    #[test]
    fn rows_follow_the_width() {
        // "a b c " | "  d e " | "  f", then "g".
        let mut w = Wrapped::new(vec![("a b c d e f".to_string(), 1), ("g".into(), 2)], 6);
        assert_eq!(w.len(), 4);
        assert_eq!(w.row_of(1), 3);
        w.fit(40);
        assert_eq!(w.len(), 2);
        let rows: Vec<_> = w
            .rows(1, 5)
            .map(|(i, t, tag)| (i, t.to_string(), *tag))
            .collect();
        assert_eq!(rows, [(1, "g".to_string(), 2)]);
    }
}
