//! The question asked when the person leaves while a run is still going: stop it, or leave
//! it running without the view. Never a silent kill.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Wrap};

use crate::tui::action::Action;
use crate::tui::keymap::{Command, Keymap, Mode};
use crate::tui::overlays::overlay::framed;
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Exit, Handled, Request, View};

/// State of the question (only the keys to name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmLeave {
    /// What is still going: "run" or "sweep".
    what: &'static str,
    stop_key: String,
    leave_key: String,
    cancel_key: String,
}

impl ConfirmLeave {
    /// The question about a live `what` ("run" or "sweep"), naming the keys the person has
    /// bound.
    pub fn new(keymap: &Keymap, what: &'static str) -> Self {
        Self {
            what,
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

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
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
            Line::styled(format!("The {} is still going.", self.what), theme.title()),
            Line::raw(""),
            Line::raw(if self.what == "sweep" {
                format!(
                    "{:>5}  stop it, then leave (running cells end interrupted; rerun them)",
                    self.stop_key
                )
            } else {
                format!(
                    "{:>5}  stop it (it ends as interrupted, its file kept), then leave",
                    self.stop_key
                )
            }),
            Line::raw(format!(
                "{:>5}  leave the view; the {} goes on and prints its progress",
                self.leave_key, self.what
            )),
            Line::raw(format!("{:>5}  stay", self.cancel_key)),
        ];
        // As wide as the longest line, so nothing wraps and the last line (how to stay) shows.
        let widest = lines.iter().map(Line::width).max().unwrap_or(0) as u16;
        let width = (widest + 4).min(area.width);
        let inner = usize::from(width.saturating_sub(2)).max(1);
        let rows: usize = lines.iter().map(|l| l.width().max(1).div_ceil(inner)).sum();
        let paragraph = Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(framed(format!(" Leave the {}? ", self.what), None, theme));
        let rect = crate::tui::overlays::overlay::centered(area, width, rows as u16 + 2);
        frame.render_widget(Clear, rect);
        frame.render_widget(paragraph, rect);
    }

    fn is_overlay(&self) -> bool {
        true
    }
}

/// The question asked before a node's call is made for real: real calls can have side effects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmCall {
    /// The call, in words (server, tool and arguments).
    pub call: String,
    /// Why it is asked (the tool's annotations).
    pub why: &'static str,
    node: cosmos_trajectory::event::NodeId,
}

impl ConfirmCall {
    /// The question for node `node`, whose call is `call`, asked because of `why`. A yes goes
    /// back to the view behind it as [`Action::Probe`] without a world model.
    pub fn new(call: String, why: &'static str, node: cosmos_trajectory::event::NodeId) -> Self {
        Self { call, why, node }
    }
}

impl View for ConfirmCall {
    fn mode(&self) -> Mode {
        Mode::Confirm
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        match action {
            Action::Do(Command::Yes) => {
                out.push(Request::CloseThen(Action::Probe(self.node, None)));
            }
            Action::Do(Command::Back | Command::Quit) => out.push(Request::Close),
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let lines = vec![
            Line::styled("Make this call for real?", theme.title()),
            Line::raw(""),
            Line::raw(cosmos_trajectory::sanitize::one_line(&self.call, 400)),
            Line::raw(""),
            Line::raw(format!("Asked because {}.", self.why)),
            Line::raw("y  make the call (its result is added to the run's file)"),
            Line::raw("Esc  no"),
        ];
        let rect = crate::tui::overlays::overlay::centered(area, 74, lines.len() as u16 + 4);
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(framed(" A real call ", None, theme)),
            rect,
        );
    }

    fn is_overlay(&self) -> bool {
        true
    }
}
