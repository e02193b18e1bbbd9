//! A styled line fitted to a width: cut where it no longer fits, ending in `…` (in the style
//! of the text it cuts), so a line cut by a narrow pane says so. Input is inert already.

use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// `line` as it fits `width` columns: whole when it fits, else cut to `width - 1` columns
/// and `…`.
pub fn fit(line: Line<'_>, width: usize) -> Line<'_> {
    if line.width() <= width {
        return line;
    }
    let room = width.saturating_sub(1);
    let mut used = 0;
    let mut spans: Vec<Span> = Vec::new();
    let mut last_style = line.style;
    for span in line.spans {
        last_style = span.style;
        let mut kept = String::new();
        let mut full = false;
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > room {
                full = true;
                break;
            }
            used += w;
            kept.push(c);
        }
        spans.push(Span::styled(kept, span.style));
        if full {
            break;
        }
    }
    if width > 0 {
        spans.push(Span::styled("…", last_style));
    }
    Line::from(spans).style(line.style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_too_wide_ends_in_an_ellipsis_and_one_that_fits_is_whole() {
        let line = Line::from(vec![Span::raw("calls "), Span::raw("12  success 100%")]);
        assert_eq!(fit(line.clone(), 40).to_string(), "calls 12  success 100%");
        let cut = fit(line, 12);
        assert_eq!(cut.to_string(), "calls 12  s…");
        assert_eq!(cut.width(), 12);
        // Wide characters are counted in columns.
        assert_eq!(fit(Line::raw("中中中中"), 5).to_string(), "中中…");
    }
}
