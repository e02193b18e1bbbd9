//! Picking a world model to probe a node with (`p` on a tree node).

use std::path::PathBuf;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};

use super::action::Action;
use super::keymap::{Command, Mode};
use super::scroll::Selection;
use super::theme::Theme;
use super::view::{Handled, Request, View, Work};
use crate::probe::ProbeSetup;
use crate::sanitize::one_line;
use crate::trajectory::event::NodeId;

/// State of the picker.
#[derive(Debug, Clone)]
pub struct WorldModelPicker {
    names: Vec<String>,
    /// The chosen row.
    pub selection: Selection,
    path: PathBuf,
    node: NodeId,
    setup: ProbeSetup,
}

impl WorldModelPicker {
    /// A picker over the world models `setup` knows, for node `node` of the run at `path`.
    pub fn new(path: PathBuf, node: NodeId, setup: ProbeSetup) -> Self {
        Self {
            names: setup.world_models(),
            selection: Selection::default(),
            path,
            node,
            setup,
        }
    }
}

impl View for WorldModelPicker {
    fn mode(&self) -> Mode {
        Mode::Compare
    }

    fn update(&mut self, action: &Action, out: &mut Vec<Request>) -> Handled {
        let len = self.names.len();
        match action {
            Action::Do(Command::Up) => self.selection.by(-1, len, len),
            Action::Do(Command::Down) => self.selection.by(1, len, len),
            Action::Do(Command::Open) => {
                if let Some(name) = self.names.get(self.selection.selected) {
                    out.push(Request::Close);
                    out.push(Request::Start(Work::Probe {
                        path: self.path.clone(),
                        node: self.node,
                        world_model: name.clone(),
                        setup: self.setup.clone(),
                    }));
                    out.push(Request::Say(format!(
                        "probing #{} with {}…",
                        self.node,
                        one_line(name, 40)
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
        let rect = super::overlay::centered(area, 56, height);
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
            Paragraph::new(lines).block(
                Block::bordered()
                    .border_style(theme.focus_border())
                    .title(format!(" Probe #{} with which world model? ", self.node))
                    .title_bottom(Line::styled(" Enter probe · Esc cancel ", theme.dim())),
            ),
            rect,
        );
    }

    fn status(&self) -> Option<String> {
        None
    }

    fn is_overlay(&self) -> bool {
        true
    }
}
