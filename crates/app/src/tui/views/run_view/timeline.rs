//! The timeline pane: the events around the cursor, one line each.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use crate::tui::theme::Theme;
use cosmos_trajectory::describe::{Latencies, summary};
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize::one_line;

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

/// The timeline's rows around a cursor. They are read when the cursor, the run or the pane
/// changes (reading may go back to the run's file), so drawing only lays them out.
#[derive(Debug, Default)]
pub struct Rows {
    /// What the rows were read for: run length, cursor, pane height and width.
    read_for: Option<(usize, usize, usize, usize)>,
    /// The index of the first row's event.
    start: usize,
    rows: Vec<Row>,
    /// The run's source recorded no times (an imported run): the time column says `—`.
    untimed: bool,
}

/// One event as the timeline shows it.
#[derive(Debug)]
struct Row {
    seq: u64,
    t_ms: u64,
    kind: String,
    failure: bool,
    /// The summary, already one safe line no wider than the pane.
    summary: String,
}

impl Rows {
    /// Reads the events shown in a pane `height` rows high and `width` columns wide at
    /// cursor `k`, unless they are the ones read last time.
    pub fn refresh(&mut self, run: &Run, k: usize, height: usize, width: usize) {
        let read_for = (run.len(), k, height, width);
        if self.read_for == Some(read_for) {
            return;
        }
        self.read_for = Some(read_for);
        self.start = window_start(run.len(), k, height);
        self.untimed = run.header.unrecorded().times;
        // At the start a marker line takes the first row.
        let rows = height.saturating_sub(usize::from(k == 0));
        self.rows = run
            .events_from(self.start)
            .take(rows)
            .map(|event| Row {
                seq: event.seq,
                t_ms: event.t_ms,
                kind: event.body.kind().to_string(),
                failure: event.body.is_failure(),
                summary: one_line(
                    &format!(
                        "{}{}",
                        called_mark(run, &event.body),
                        summary(&event, Latencies::of(&run.header))
                    ),
                    width,
                ),
            })
            .collect();
    }

    /// Draws the rows read, the event at `k` selected and the find's `hits` marked.
    pub fn draw(
        &self,
        frame: &mut Frame,
        area: Rect,
        block: Block,
        k: usize,
        hits: &[u32],
        theme: &Theme,
    ) {
        let inner = block.inner(area);
        let width = inner.width as usize;
        let current = k.checked_sub(1);
        let mut lines: Vec<Line> = Vec::with_capacity(inner.height as usize);
        if k == 0 {
            lines.push(Line::styled(
                "▶ start (no event applied; → to step)",
                theme.touched(),
            ));
        }
        for (i, row) in (self.start..).zip(&self.rows) {
            // Narrow panes drop the time column: what happened matters more than when.
            // A failure is marked by a sign as well as a colour, so it shows without colour.
            let mark = if row.failure { '✗' } else { ' ' };
            let head = if width >= 70 {
                format!(
                    "{:>6}{mark}{:>9} {:<15} ",
                    row.seq,
                    if self.untimed {
                        "—".to_string()
                    } else {
                        format_ms(row.t_ms)
                    },
                    row.kind
                )
            } else {
                format!("{:>6}{mark}{:<14} ", row.seq, row.kind)
            };
            let summary = one_line(
                &row.summary,
                width
                    .saturating_sub(unicode_width::UnicodeWidthStr::width(head.as_str()))
                    .max(4),
            );
            // A find's hit stands out whatever else the row is (its ✗ still says failure).
            let style = if hits.binary_search(&(i as u32)).is_ok() {
                theme.mark()
            } else if row.failure {
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
        if self.read_for.is_some_and(|(len, ..)| len == 0) {
            lines.push(Line::styled("no events", theme.dim()));
        }
        frame.render_widget(Paragraph::new(lines).block(block), area);
    }
}

/// `m:ss.s` for a time offset.
pub fn format_ms(ms: u64) -> String {
    format!("{}:{:04.1}", ms / 60_000, (ms % 60_000) as f64 / 1000.0)
}

/// The tree's destructive mark on a real call's row.
fn called_mark(run: &Run, body: &cosmos_trajectory::event::EventBody) -> &'static str {
    cosmos_trajectory::recorded_call::RecordedCall::of(body)
        .map_or("", |call| super::tree::destructive_mark(run, call.tool))
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::buffer::Buffer;

    use super::*;
    use cosmos_trajectory::synthetic::{self, Spec};

    fn drawn(rows: &Rows, k: usize) -> Buffer {
        let mut terminal = Terminal::new(TestBackend::new(82, 12)).unwrap();
        terminal
            .draw(|f| rows.draw(f, f.area(), Block::bordered(), k, &[], &Theme::new(false)))
            .unwrap();
        terminal.backend().buffer().clone()
    }

    fn text(buffer: &Buffer) -> String {
        buffer.content().iter().map(|c| c.symbol()).collect()
    }

    #[test]
    fn the_finds_hits_are_marked_in_the_timeline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        synthetic::write(
            &path,
            &Spec::default(),
            cosmos_engine::metrics::run::RunAccumulator::tally,
        )
        .unwrap();
        let run = Run::open(&path).unwrap();
        let mut rows = Rows::default();
        rows.refresh(&run, 2, 10, 80);
        let theme = Theme::new(true);
        let drawn_with = |hits: &[u32]| {
            let mut terminal = Terminal::new(TestBackend::new(82, 12)).unwrap();
            terminal
                .draw(|f| rows.draw(f, f.area(), Block::bordered(), 2, hits, &theme))
                .unwrap();
            terminal.backend().buffer().clone()
        };
        // Exactly one row, the hit's, is drawn differently, in the mark's colour.
        let (plain, marked) = (drawn_with(&[]), drawn_with(&[4]));
        let differing: Vec<u16> = (0..12)
            .filter(|&y| plain[(8, y)].style() != marked[(8, y)].style())
            .collect();
        assert_eq!(differing.len(), 1, "{differing:?}");
        assert_eq!(marked[(8, differing[0])].fg, theme.mark().fg.unwrap());
        let text: String = (0..82)
            .map(|x| marked[(x, differing[0])].symbol())
            .collect();
        assert!(text.contains("     5"), "event 4 is seq 5: {text}");
    }

    /// Drawing lays out the rows read at the last refresh and reads nothing itself, and a
    /// refresh for the same cursor and pane reads nothing either: a file emptied after the
    /// rows were read changes what is drawn only once the cursor moves.
    #[test]
    fn rows_are_read_when_the_cursor_moves_never_when_drawn() {
        let dir = tempfile::tempdir().unwrap();
        let run = super::super::synthetic_run(dir.path(), 20, 3);
        let path = run.path.clone();
        let k = run.len();
        let mut rows = Rows::default();
        rows.refresh(&run, k, 10, 80);
        let before = drawn(&rows, k);
        assert!(!text(&before).contains("error"), "{}", text(&before));

        std::fs::write(&path, b"").unwrap();
        assert_eq!(drawn(&rows, k), before);
        rows.refresh(&run, k, 10, 80);
        assert_eq!(drawn(&rows, k), before);

        rows.refresh(&run, k - 1, 10, 80);
        let after = text(&drawn(&rows, k - 1));
        assert!(after.contains("error"), "{after}");
    }
}
