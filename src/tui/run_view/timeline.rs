//! The timeline pane: the events around the cursor, one line each.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use crate::sanitize::one_line;
use crate::trajectory::describe::summary;
use crate::trajectory::run::Run;
use crate::tui::theme::Theme;

/// The first event shown in a pane `height` rows high at cursor `k`: the cursor a third of
/// the way down, so what comes next is visible. Drawing and clicks both use it.
pub fn window_start(len: usize, k: usize, height: usize) -> usize {
    k.saturating_sub(1)
        .saturating_sub(height / 3)
        .min(len.saturating_sub(height))
}

/// The event under a click `row` rows below the pane's first text row, at cursor `k`.
pub fn event_at(len: usize, k: usize, height: usize, row: usize) -> Option<usize> {
    // At the start a marker line takes the first row.
    let row = if k == 0 { row.checked_sub(1)? } else { row };
    let i = window_start(len, k, height) + row;
    (i < len).then_some(i)
}

/// Draws the window of events around cursor `k` (the last applied event is `k − 1`).
pub fn draw(frame: &mut Frame, area: Rect, block: Block, run: &Run, k: usize, theme: &Theme) {
    let inner = block.inner(area);
    let height = inner.height as usize;
    let width = inner.width as usize;
    let current = k.checked_sub(1);
    let start = window_start(run.len(), k, height);
    let mut lines: Vec<Line> = Vec::with_capacity(height);
    if k == 0 {
        lines.push(Line::styled(
            "▶ start (no event applied; → to step)",
            theme.touched(),
        ));
    }
    let rows = height.saturating_sub(lines.len());
    for (i, event) in (start..).zip(run.events_from(start).take(rows)) {
        // Narrow panes drop the time column: what happened matters more than when.
        // A failure is marked by a sign as well as a colour, so it shows without colour.
        let mark = if event.body.is_failure() { '✗' } else { ' ' };
        let head = if width >= 70 {
            format!(
                "{:>6}{mark}{:>9} {:<15} ",
                event.seq,
                format_ms(event.t_ms),
                event.body.kind()
            )
        } else {
            format!("{:>6}{mark}{:<14} ", event.seq, event.body.kind())
        };
        let summary = one_line(
            &summary(&event),
            width
                .saturating_sub(unicode_width::UnicodeWidthStr::width(head.as_str()))
                .max(4),
        );
        let style = if event.body.is_failure() {
            theme.error()
        } else if i >= k {
            theme.dim()
        } else {
            theme.text()
        };
        let mut line = Line::from(vec![
            Span::styled(head, style),
            Span::styled(summary, style),
        ]);
        if Some(i) == current {
            line = line.patch_style(theme.selected());
        }
        lines.push(line);
    }
    if run.is_empty() {
        lines.push(Line::styled("no events", theme.dim()));
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// `m:ss.s` for a time offset.
pub fn format_ms(ms: u64) -> String {
    format!("{}:{:04.1}", ms / 60_000, (ms % 60_000) as f64 / 1000.0)
}
