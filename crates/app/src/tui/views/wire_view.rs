//! A proxy session's protocol (`W` in the run view): each JSON-RPC message between the client
//! and `cosmos proxy`, in order, with its direction, id, method, size and a reply's latency;
//! the selected message below the list. Read from the session's `STEM.wire`
//! (`trajectory::wire`) in the background.

use std::sync::Arc;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};

use crate::tui::action::Action;
use crate::tui::keymap::{Command, Mode};
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View};
use crate::tui::widgets::scroll::Selection;
use cosmos_trajectory::sanitize::{inert_json, one_line};
use cosmos_trajectory::wire::{Direction, WireLog, WireMessage};

/// The protocol of one session.
#[derive(Debug, Clone)]
pub struct WireView {
    log: Arc<WireLog>,
    /// The chosen message.
    pub selection: Selection,
    /// The terminal's size.
    size: (u16, u16),
}

/// One message's row: when, which way, id, method, size, latency.
pub fn row(m: &WireMessage, width: usize) -> String {
    let dir = match m.dir {
        Direction::In => "→",
        Direction::Out => "←",
    };
    let id = m.id.as_ref().map_or(String::new(), |id| match id {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let latency = m.latency_ms.map_or(String::new(), |l| format!("{l:>6} ms"));
    let cut = if m.cut { " (cut)" } else { "" };
    one_line(
        &format!(
            "{:>9.3}s {dir} {:<6} {:<32} {:>9} B {latency}{cut}",
            m.t_ms as f64 / 1000.0,
            one_line(&id, 6),
            one_line(m.method.as_deref().unwrap_or("?"), 32),
            m.bytes,
        ),
        width,
    )
}

impl WireView {
    /// The protocol `log` in a terminal of `size`.
    pub fn new(log: Arc<WireLog>, size: (u16, u16)) -> Self {
        Self {
            log,
            selection: Selection::default(),
            size,
        }
    }

    /// The list's and the selected message's areas in `rect`, the box's inside.
    fn panes(rect: Rect) -> [Rect; 2] {
        Layout::vertical([Constraint::Percentage(55), Constraint::Fill(1)]).areas(rect)
    }

    /// Rows of messages the list shows at once.
    fn page(&self) -> usize {
        let inner = Block::bordered().inner(crate::tui::overlays::overlay::inset(self.size));
        Self::panes(inner)[0].height.max(1) as usize
    }
}

impl View for WireView {
    fn mode(&self) -> Mode {
        Mode::List
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        let (len, page) = (self.log.messages.len(), self.page());
        match action {
            Action::Do(command) if self.selection.navigate(*command, len, page) => {}
            Action::Do(Command::Back | Command::Quit | Command::Open) => out.push(Request::Close),
            Action::Resize(w, h) => {
                self.size = (*w, *h);
                self.selection.settle(len, self.page());
            }
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let rect = crate::tui::overlays::overlay::inset(self.size).intersection(area);
        let log = &self.log;
        let mut title = format!(" Protocol · {} messages", log.messages.len());
        if log.more > 0 {
            title.push_str(&format!(" (and {} more, not read)", log.more));
        }
        if !log.problems.is_empty() {
            let n = log.problems.len();
            let lines = if n == 1 { "line" } else { "lines" };
            title.push_str(&format!(" · {n} {lines} unreadable"));
        }
        title.push(' ');
        let block = Block::bordered()
            .border_style(theme.focus_border())
            .title(title)
            .title_bottom(Line::styled(
                " → from the client · ← to the client · Esc close ",
                theme.dim(),
            ));
        let inner = block.inner(rect);
        frame.render_widget(Clear, rect);
        frame.render_widget(block, rect);
        let [list, detail] = Self::panes(inner);
        let width = list.width as usize;
        if log.messages.is_empty() {
            let hint = log
                .problems
                .first()
                .map_or("No messages recorded.".to_string(), |p| {
                    format!("No message could be read: {p}")
                });
            frame.render_widget(
                Paragraph::new(Line::styled(one_line(&hint, width), theme.dim())),
                list,
            );
            return;
        }
        let lines = self.selection.lines(
            log.messages.len(),
            list.height as usize,
            |i| row(&log.messages[i], width),
            theme.selected(),
        );
        frame.render_widget(Paragraph::new(lines), list);
        if let Some(m) = log.messages.get(self.selection.selected) {
            let pretty = serde_json::to_string_pretty(&m.message).unwrap_or_default();
            let shown: Vec<Line> = std::iter::once(Line::styled("─".repeat(width), theme.dim()))
                .chain(
                    inert_json(&pretty)
                        .lines()
                        .take(detail.height.saturating_sub(1) as usize)
                        .map(|l| Line::raw(one_line(l, width))),
                )
                .collect();
            frame.render_widget(Paragraph::new(shown), detail);
        }
    }

    fn is_overlay(&self) -> bool {
        true
    }
}
