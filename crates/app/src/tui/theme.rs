//! Colours and emphasis, in one place. With `NO_COLOR` set, only modifiers are used.
//!
//! Styles; `NO_COLOR` honoured. Every string from a run is drawn through
//! `crate::sanitize`, which cuts by terminal columns (CJK and emoji take two).

use ratatui::style::{Color, Modifier, Style};

/// The styles the views use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theme {
    /// Colours allowed (false under `NO_COLOR`).
    pub color: bool,
}

impl Default for Theme {
    fn default() -> Self {
        Self::from_env()
    }
}

impl Theme {
    /// Colour unless `NO_COLOR` is set to anything non-empty (no-color.org).
    pub fn from_env() -> Self {
        Self {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    /// A theme with colours on or off.
    pub fn new(color: bool) -> Self {
        Self { color }
    }

    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    /// Plain text.
    pub fn text(&self) -> Style {
        Style::new()
    }
    /// Less important text.
    pub fn dim(&self) -> Style {
        self.fg(Color::DarkGray).add_modifier(if self.color {
            Modifier::empty()
        } else {
            Modifier::DIM
        })
    }
    /// Titles and headers.
    pub fn title(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    /// The border of the focused pane.
    pub fn focus_border(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    /// Other borders.
    pub fn border(&self) -> Style {
        self.fg(Color::DarkGray)
    }
    /// The selected row.
    pub fn selected(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
    /// The node or event the cursor's event touched.
    pub fn touched(&self) -> Style {
        self.fg(Color::Yellow)
            .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }
    /// Errors and failures.
    pub fn error(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    /// Good outcomes.
    pub fn good(&self) -> Style {
        self.fg(Color::Green)
    }

    /// A run's outcome, in every view alike: a clean success good, a run not ended dim,
    /// anything else (a limit, a failed call, a failure) an error.
    pub fn outcome(&self, clean: bool, ended: bool) -> Style {
        match (clean, ended) {
            (true, _) => self.good(),
            (false, false) => self.dim(),
            (false, true) => self.error(),
        }
    }
    /// Marks (chosen plan, marked runs, best in a row).
    pub fn mark(&self) -> Style {
        self.fg(Color::Magenta).add_modifier(Modifier::BOLD)
    }
    /// A difference between simulated and real.
    pub fn diff(&self) -> Style {
        if self.color {
            Style::new().fg(Color::Black).bg(Color::Yellow)
        } else {
            Style::new().add_modifier(Modifier::UNDERLINED)
        }
    }
    /// The status line.
    pub fn status(&self) -> Style {
        if self.color {
            Style::new().fg(Color::Black).bg(Color::Cyan)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }

    /// A value's colour on a low→high scale (`t` in 0..=1): red, yellow, green.
    pub fn scale(&self, t: f64) -> Style {
        if !self.color {
            return if t >= 0.8 {
                Style::new().add_modifier(Modifier::BOLD)
            } else {
                Style::new()
            };
        }
        let t = t.clamp(0.0, 1.0);
        let (r, g) = if t < 0.5 {
            (230, (60.0 + 340.0 * t) as u8)
        } else {
            ((230.0 - 400.0 * (t - 0.5)) as u8, 230)
        };
        Style::new().fg(Color::Rgb(r, g, 60))
    }
}
