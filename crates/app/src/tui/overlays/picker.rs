//! Picking a world model to probe a node with (`p` on a tree node).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};

use crate::tui::action::Action;
use crate::tui::keymap::{Command, Mode};
use crate::tui::overlays::overlay::framed;
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View};
use crate::tui::widgets::scroll::Selection;
use cosmos_trajectory::event::NodeId;
use cosmos_trajectory::sanitize::one_line;

/// State of the picker.
#[derive(Debug, Clone)]
pub struct WorldModelPicker {
    names: Vec<String>,
    /// The chosen row.
    pub selection: Selection,
    node: NodeId,
}

impl WorldModelPicker {
    /// A picker over the world models `names`, for node `node`. The choice goes back to the
    /// view behind it as [`Action::Probe`].
    pub fn new(node: NodeId, names: Vec<String>) -> Self {
        Self {
            names,
            selection: Selection::default(),
            node,
        }
    }
}

impl View for WorldModelPicker {
    fn mode(&self) -> Mode {
        Mode::List
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        let len = self.names.len();
        match action {
            Action::Do(Command::Up) => self.selection.by(-1, len, len),
            Action::Do(Command::Down) => self.selection.by(1, len, len),
            Action::Do(Command::Open) => {
                if let Some(name) = self.names.get(self.selection.selected) {
                    out.push(Request::CloseThen(Action::Probe(
                        self.node,
                        Some(name.clone()),
                    )));
                }
            }
            Action::Do(Command::Back | Command::Quit) => out.push(Request::Close),
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let height = (self.names.len() as u16 + 2).min(area.height);
        let rect = crate::tui::overlays::overlay::centered(area, 56, height);
        let lines: Vec<Line> = self
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let line = Line::raw(one_line(n, 52));
                if i == self.selection.selected {
                    line.style(theme.selected())
                } else {
                    line
                }
            })
            .collect();
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines).block(framed(
                format!(" Probe #{} with which world model? ", self.node),
                Some(" Enter probe · Esc cancel "),
                theme,
            )),
            rect,
        );
    }

    fn is_overlay(&self) -> bool {
        true
    }
}
