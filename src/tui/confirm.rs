//! The question asked when the person leaves while a run is still going: stop it, or leave
//! it running without the view. Never a silent kill.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::action::Action;
use super::keymap::{Command, Keymap, Mode};
use super::theme::Theme;
use super::view::{Exit, Handled, Request, View};

/// State of the question (only the keys to name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmLeave {
    stop_key: String,
    leave_key: String,
    cancel_key: String,
}

impl ConfirmLeave {
    /// The question, naming the keys the person has bound.
    pub fn new(keymap: &Keymap) -> Self {
        Self {
            stop_key: keymap.hint(Mode::Confirm, Command::StopRun),
            leave_key: keymap.hint(Mode::Confirm, Command::LeaveRunning),
            cancel_key: keymap.hint(Mode::Confirm, Command::Back),
        }
    }
}

impl View for ConfirmLeave {
    fn mode(&self) -> Mode {
        Mode::Confirm
    }

    fn update(&mut self, action: &Action, out: &mut Vec<Request>) -> Handled {
        match action {
            Action::Do(Command::StopRun) => {
                out.extend([Request::Close, Request::Exit(Exit::StopRun)])
            }
            Action::Do(Command::LeaveRunning) => {
                out.extend([Request::Close, Request::Exit(Exit::LeaveRunning)])
            }
            Action::Do(Command::Back | Command::Quit) => out.push(Request::Close),
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let lines = vec![
            Line::styled("The run is still going.", theme.title()),
            Line::raw(""),
            Line::raw(format!(
                "{:>5}  stop it (it ends as interrupted, its file kept), then leave",
                self.stop_key
            )),
            Line::raw(format!(
                "{:>5}  leave the view; the run goes on and prints its progress",
                self.leave_key
            )),
            Line::raw(format!("{:>5}  stay", self.cancel_key)),
        ];
        let [_, mid, _] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(lines.len() as u16 + 2),
            Constraint::Fill(1),
        ])
        .areas(area);
        let [_, rect, _] = Layout::horizontal([
            Constraint::Fill(1),
            Constraint::Length(74.min(area.width)),
            Constraint::Fill(1),
        ])
        .areas(mid);
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).block(
                Block::bordered()
                    .border_style(theme.focus_border())
                    .title(" Leave the run? "),
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
