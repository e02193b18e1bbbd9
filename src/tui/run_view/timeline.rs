//! The timeline pane: the events around the cursor, one line each.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use crate::sanitize::one_line;
use crate::trajectory::describe::summary;
use crate::trajectory::run::Run;
use crate::tui::theme::Theme;

/// Draws the window of events around cursor `k` (the last applied event is `k − 1`).
pub fn draw(frame: &mut Frame, area: Rect, block: Block, run: &Run, k: usize, theme: &Theme) {
    let inner = block.inner(area);
    let height = inner.height as usize;
    let width = inner.width as usize;
    let current = k.checked_sub(1);
    // Keep the cursor a third of the way down, so what comes next is visible.
    let anchor = current.unwrap_or(0);
    let start = anchor
        .saturating_sub(height / 3)
        .min(run.len().saturating_sub(height));
    let mut lines: Vec<Line> = Vec::with_capacity(height);
    if k == 0 {
        lines.push(Line::styled(
            "▶ start (no event applied; → to step)",
            theme.touched(),
        ));
    }
    for (i, event) in run
        .events
        .iter()
        .enumerate()
        .skip(start)
        .take(height.saturating_sub(lines.len()))
    {
        // Narrow panes drop the time column: what happened matters more than when.
        let head = if width >= 70 {
            format!(
                "{:>6} {:>9} {:<15} ",
                event.seq,
                format_ms(event.t_ms),
                event.body.kind()
            )
        } else {
            format!("{:>6} {:<14} ", event.seq, event.body.kind())
        };
        let summary = one_line(
            &summary(event),
            width.saturating_sub(head.chars().count()).max(4),
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
