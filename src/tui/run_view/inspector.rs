//! The event inspector (`i`, or Enter on the timeline): one event in full, every field,
//! with multi-line strings (prompts, replies, tool results) unfolded rather than escaped.
//! The text is laid out once when opened; drawing only slices it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};
use serde_json::Value;

use crate::sanitize::one_line;
use crate::trajectory::event::Event;
use crate::tui::theme::Theme;

/// Lines kept for one event; a tool result is capped at 1 MiB, this keeps the view bounded.
const MAX_LINES: usize = 50_000;
/// Characters kept per line before drawing cuts to the width.
const MAX_CHARS: usize = 2_000;

/// State of the inspector overlay.
#[derive(Debug, Clone, PartialEq)]
pub struct Inspector {
    title: String,
    lines: Vec<String>,
    scroll: usize,
}

impl Inspector {
    /// Lays out `event` (already inert: every line passed through [`one_line`]).
    pub fn of(event: &Event) -> Self {
        let value = serde_json::to_value(event).unwrap_or(Value::Null);
        let mut lines = Vec::new();
        layout(&value, 0, &mut lines);
        if lines.len() > MAX_LINES {
            let left = lines.len() - MAX_LINES;
            lines.truncate(MAX_LINES);
            lines.push(format!("… {left} more lines not shown"));
        }
        Self {
            title: format!(" Event {} · {} ", event.seq, event.body.kind()),
            lines,
            scroll: 0,
        }
    }

    /// Every line laid out (what the tests read).
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Scrolls by `delta` lines, within the text.
    pub fn scroll_by(&mut self, delta: isize) {
        let last = self.lines.len().saturating_sub(1);
        self.scroll = self.scroll.saturating_add_signed(delta).min(last);
    }

    /// Draws the overlay over most of `area`.
    pub fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let [_, mid, _] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Fill(1),
            Constraint::Length(1),
        ])
        .areas(area);
        let [_, rect, _] = Layout::horizontal([
            Constraint::Length(2),
            Constraint::Fill(1),
            Constraint::Length(2),
        ])
        .areas(mid);
        let block = Block::bordered()
            .border_style(theme.focus_border())
            .title(Line::styled(self.title.clone(), theme.title()))
            .title_bottom(Line::styled(
                format!(
                    " line {}/{} · ↑↓ PgUp PgDn scroll · Esc closes ",
                    (self.scroll + 1).min(self.lines.len()),
                    self.lines.len()
                ),
                theme.dim(),
            ));
        let inner = block.inner(rect);
        let width = inner.width as usize;
        let shown: Vec<Line> = self
            .lines
            .iter()
            .skip(self.scroll)
            .take(inner.height as usize)
            // Lines are inert already; `one_line` only cuts them to the width here.
            .map(|l| Line::raw(one_line(l, width.saturating_sub(1))))
            .collect();
        frame.render_widget(Clear, rect);
        frame.render_widget(Paragraph::new(shown).block(block), rect);
    }
}

/// YAML-like lines: `key: value`, nested values indented, multi-line strings as a block.
fn layout(value: &Value, indent: usize, out: &mut Vec<String>) {
    let pad = "  ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                field(&format!("{pad}{}", one_line(key, 80)), v, indent, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                field(&format!("{pad}[{i}]"), v, indent, out);
            }
        }
        scalar => out.push(format!("{pad}{}", scalar_text(scalar))),
    }
}

fn field(label: &str, value: &Value, indent: usize, out: &mut Vec<String>) {
    match value {
        Value::Object(m) if !m.is_empty() => {
            out.push(format!("{label}:"));
            layout(value, indent + 1, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push(format!("{label}:"));
            layout(value, indent + 1, out);
        }
        Value::String(s) if s.contains('\n') => {
            out.push(format!("{label}: |"));
            let pad = "  ".repeat(indent + 1);
            out.extend(
                s.lines()
                    .map(|l| format!("{pad}{}", one_line(l, MAX_CHARS))),
            );
        }
        other => out.push(format!("{label}: {}", scalar_text(other))),
    }
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => one_line(s, MAX_CHARS),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trajectory::event::{EventBody, Observation};

    fn called(text: &str) -> Event {
        Event {
            seq: 7,
            t_ms: 100,
            body: EventBody::ToolCalled {
                step: 1,
                tool: "time:now".into(),
                server: None,
                arguments: serde_json::json!({"tz": "UTC"}),
                result: Observation {
                    text: text.into(),
                    ..Default::default()
                },
                latency_ms: 3,
                node: None,
                error: None,
            },
        }
    }

    #[test]
    fn unfolds_multi_line_text_and_keeps_escapes_inert() {
        let i = Inspector::of(&called("line one\nline \u{1b}]52;c;eA==\u{7}two"));
        let text = i.lines().join("\n");
        assert!(
            text.contains("  text: |\n    line one\n    line \\u{1b}]52;c;eA==\\u{7}two"),
            "{text}"
        );
        assert!(text.contains("arguments:\n  tz: UTC"), "{text}");
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'));
    }

    #[test]
    fn huge_results_are_capped_and_scrolling_stays_inside() {
        let big = "x\n".repeat(MAX_LINES * 2);
        let mut i = Inspector::of(&called(&big));
        assert_eq!(i.lines().len(), MAX_LINES + 1);
        assert!(i.lines().last().unwrap().contains("more lines not shown"));
        i.scroll_by(isize::MAX);
        assert_eq!(i.scroll, MAX_LINES);
        i.scroll_by(-5);
        assert_eq!(i.scroll, MAX_LINES - 5);
        i.scroll_by(isize::MIN);
        assert_eq!(i.scroll, 0);
    }
}
