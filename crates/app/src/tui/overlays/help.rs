//! The `?` overlay: the keys of the view behind it, then the global ones.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::tui::action::Action;
use crate::tui::keymap::{Command, Keymap, Mode};
use crate::tui::overlays::overlay::framed;
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View};
use crate::tui::widgets::scroll::Scroll;
use crate::tui::widgets::wrap::wrap_line;
use unicode_width::UnicodeWidthStr;

/// Width of the key column.
const KEYS_WIDTH: usize = 18;

/// The symbols and colours the view of `mode` draws, each with what it means.
pub fn legend(mode: Mode) -> &'static [(&'static str, &'static str)] {
    match mode {
        Mode::Run => &[
            (
                "★",
                "on the plan the run recorded (plan_selected); in the title, why it won",
            ),
            ("#3", "a node's id, as the timeline and the plan name it"),
            (
                "N=4",
                "visits: how many values were backed up through the node",
            ),
            (
                "Q=0.45",
                "mean value of those visits; coloured red (low) to green (high) across the tree, plain when all read the same",
            ),
            ("r=0.10", "the node's own reward (wide panes)"),
            (
                "⊘",
                "invalid: the validator rejected the call (unknown tool, arguments against the schema); never sent to the world model, never planned",
            ),
            (
                "∅",
                "not simulated: the world model failed; no value, no visit, never planned (\"older file: counted\" where a version before 2026-12-02 backed up its 0)",
            ),
            ("⚠", "the world model predicted an error"),
            (
                "⊕",
                "grounded: the prediction was under go_real_below and the tool read-only, so the call was made for real while planning and the search went on from the real result",
            ),
            (
                "◌",
                "risky: a plan rests on a prediction under go_real_below of a tool not read-only (nothing real was called); its reward is scaled by the confidence",
            ),
            (
                "⋯",
                "horizon: the confidence along the path fell below go_real_below, so the search imagined no further from here",
            ),
            (
                "◆",
                "answered by the world model: a cosmos proxy client's call (hybrid or simulate) whose prediction went back to the client; no server saw it",
            ),
            ("▸ ▾", "a closed or open subtree"),
            (
                "highlighted",
                "observation pane: the lines where the simulation and the real result differ",
            ),
            (
                "✗ ✓",
                "a real call that failed, or succeeded (timeline, steps)",
            ),
            (
                "!",
                "a call of a tool its server annotates destructive (it may delete or overwrite)",
            ),
        ],
        Mode::Browser => &[
            (
                "completed",
                "the agent answered; failed, interrupted (a stop), incomplete (no run_finished yet) otherwise",
            ),
            (
                "⊣steps",
                "the step limit ended it (⊣tokens, ⊣time: the token or time budget)",
            ),
            (
                "⊣early",
                "the search or chain stopped early: the planner or the world model failed",
            ),
            ("⊣no call", "the plan had no call: nothing was executed"),
            (
                "⊣no finish",
                "the search used its iterations and no path it found reached a finish",
            ),
            ("✗2", "two real calls failed"),
            ("?1", "one planner reply was no usable decision"),
            (
                "≠1",
                "one score its source recorded failed the run (an imported sample scored incorrect)",
            ),
            (
                "…",
                "totals of an older version, being computed again; or a cell cut to fit",
            ),
            ("●", "marked for compare"),
            (
                "⑂@N / ⑂×K",
                "a fork (of the run listed as its original, at step N) / a run with K listed forks",
            ),
            (
                "green / red",
                "status with nothing wrong / something went wrong",
            ),
        ],
        Mode::Compare => &[
            (
                "★",
                "the best value of the row (none when all are equal or the row has no better)",
            ),
            (
                "⑂",
                "the first row where the runs' calls differ (call, arguments or result)",
            ),
            ("≠", "other arguments than the row's first run"),
            (
                "↺",
                "a call replayed from a recording (a fork's history), not made again",
            ),
            (
                "≈",
                "a world model's answer in place of a call never made (a fork's miss)",
            ),
            ("✗ ✓", "a real call that failed, or succeeded"),
            ("⚠", "the world model predicted an error (as in the tree)"),
            ("—", "no such call, or no value"),
            ("“…”", "each run's answer, quoted"),
        ],
        _ => &[],
    }
}

/// State of the help overlay.
#[derive(Debug, Clone)]
pub struct HelpView {
    lines: Vec<(String, &'static str)>,
    /// The lines laid out for the box's width: keys (on a line's first row only) and text,
    /// wrapped rather than cut.
    rows: Vec<(String, String)>,
    footer: String,
    /// The scroll position.
    pub scroll: Scroll,
    size: (u16, u16),
}

impl HelpView {
    /// The help for `mode` (the view behind the overlay), laid out for a terminal of `size`.
    pub fn new(keymap: &Keymap, mode: Mode, size: (u16, u16)) -> Self {
        let path = Keymap::default_path()
            .map_or_else(|| "keys.toml".to_string(), |p| p.display().to_string());
        let mut lines = keymap.help(mode);
        let legend = legend(mode);
        if !legend.is_empty() {
            lines.push((String::new(), ""));
            lines.push(("what marks mean".to_string(), ""));
            lines.extend(legend.iter().map(|(mark, text)| (mark.to_string(), *text)));
        }
        let mut view = Self {
            lines,
            rows: Vec::new(),
            footer: format!("mouse: click selects, wheel scrolls · keys: {path}"),
            scroll: Scroll::default(),
            size,
        };
        view.lay_out();
        view
    }

    /// The rows as laid out for the current size: keys, then the text's row.
    pub fn rows(&self) -> &[(String, String)] {
        &self.rows
    }

    /// Wraps each line's text to the box's width.
    fn lay_out(&mut self) {
        let width = self.width(self.size.0);
        let text_width = (width as usize).saturating_sub(2 + KEYS_WIDTH + 2).max(8);
        self.rows = self
            .lines
            .iter()
            .flat_map(|(keys, text)| {
                wrap_line(text, text_width)
                    .into_iter()
                    .enumerate()
                    .map(move |(i, row)| {
                        let keys = if i == 0 { keys.clone() } else { String::new() };
                        (keys, row)
                    })
            })
            .collect();
    }

    /// Rows of text (keys and footer).
    fn len(&self) -> usize {
        self.rows.len() + 1
    }

    /// The box's width in a terminal `columns` wide: wide enough for every line whole and
    /// the footer (the keys file's path) when the terminal is.
    fn width(&self, columns: u16) -> u16 {
        let widest = self
            .lines
            .iter()
            .map(|(_, text)| KEYS_WIDTH + 2 + UnicodeWidthStr::width(*text))
            .max()
            .unwrap_or(0);
        let footer = UnicodeWidthStr::width(self.footer.as_str());
        (widest.max(footer) as u16 + 2).max(80).min(columns)
    }

    fn rect(&self, area: Rect) -> Rect {
        let height = (self.len() as u16 + 2).min(area.height);
        crate::tui::overlays::overlay::centered(area, self.width(area.width), height)
    }

    /// Rows of text on screen.
    fn visible(&self) -> usize {
        let body = Rect::new(0, 0, self.size.0, self.size.1.saturating_sub(1));
        self.rect(body).height.saturating_sub(2) as usize
    }
}

impl View for HelpView {
    fn mode(&self) -> Mode {
        Mode::Reader
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        let (len, visible) = (self.len(), self.visible());
        match action {
            Action::Do(Command::Help | Command::Back | Command::Quit | Command::Inspect) => {
                out.push(Request::Close)
            }
            Action::Do(Command::Down) => self.scroll.by(1, len, visible),
            Action::Do(Command::Up) => self.scroll.by(-1, len, visible),
            Action::Do(Command::PageDown) => self.scroll.by(visible as isize, len, visible),
            Action::Do(Command::PageUp) => self.scroll.by(-(visible as isize), len, visible),
            Action::Do(Command::Top) => self.scroll.offset = 0,
            Action::Do(Command::Bottom) => self.scroll.by(isize::MAX, len, visible),
            Action::Resize(w, h) => {
                self.size = (*w, *h);
                self.lay_out();
                self.scroll.clamp(self.len(), self.visible());
            }
            _ => {}
        }
        Handled::Consumed
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let rect = self.rect(area);
        let inner_width = rect.width.saturating_sub(2) as usize;
        let mut lines: Vec<Line> = self
            .rows
            .iter()
            .map(|(keys, text)| {
                Line::from(vec![
                    Span::styled(
                        format!(
                            "{:>KEYS_WIDTH$}  ",
                            cosmos_trajectory::sanitize::one_line(keys, KEYS_WIDTH)
                        ),
                        theme.title(),
                    ),
                    Span::raw(text.as_str()),
                ])
            })
            .collect();
        lines.push(Line::styled(
            cosmos_trajectory::sanitize::one_line(&self.footer, inner_width),
            theme.dim(),
        ));
        let visible = rect.height.saturating_sub(2) as usize;
        let title = format!(
            " Keys · {} · Esc closes ",
            self.scroll.position(lines.len(), visible)
        );
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines)
                .scroll((self.scroll.offset as u16, 0))
                .block(framed(title, None, theme)),
            rect,
        );
    }

    fn is_overlay(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosmos_trajectory::event::Ending;

    #[test]
    fn the_browser_legend_explains_every_endings_mark() {
        let legend = legend(Mode::Browser);
        for ending in Ending::ALL {
            let mark = ending.mark();
            if !mark.is_empty() {
                assert!(
                    legend
                        .iter()
                        .any(|(m, text)| *m == mark || text.contains(mark)),
                    "{mark} ({ending:?}) is not in the legend"
                );
            }
        }
    }
}
