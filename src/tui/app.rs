//! The explorer's state machine: screens, the one `update` that applies actions, and the
//! effects (background work) that updates ask for. Drawing reads this state and nothing
//! else; the terminal loop in `terminal.rs` runs the effects and feeds results back as
//! actions.

use std::path::PathBuf;

use crossterm::event::{Event as TermEvent, KeyEventKind};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::action::Action;
use super::browser::{Browser, Groups};
use super::compare::CompareView;
use super::keymap::Keymap;
use super::run_view::RunView;
use super::theme::Theme;
use crate::sanitize::one_line;
use crate::trajectory::run::Run;

/// Background work an update asks the loop to do; results come back as actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Open a run file (→ [`Action::Loaded`]).
    LoadRun(PathBuf),
    /// Compute the group table (→ [`Action::GroupsReady`]).
    ComputeGroups(Vec<PathBuf>),
    /// Load runs for Compare (→ [`Action::Loaded`] for each, then the view opens).
    LoadCompare(Vec<PathBuf>),
}

/// Which screen is in front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// The run browser.
    Browser,
    /// One run.
    Run,
    /// Several runs side by side.
    Compare,
}

/// The whole explorer state.
#[derive(Debug)]
pub struct App {
    /// The screen in front.
    pub screen: Screen,
    /// The browser, when started on a folder.
    pub browser: Option<Browser>,
    /// The open run.
    pub run: Option<RunView>,
    /// The open comparison.
    pub compare: Option<CompareView>,
    /// The help overlay is shown, scrolled down by this many lines.
    pub help: Option<usize>,
    /// Set when the user quits.
    pub quit: bool,
    /// What is loading, for the status line.
    pub loading: Option<String>,
    /// A message for the status line.
    pub message: Option<String>,
    /// Key bindings.
    pub keymap: Keymap,
    /// Styles.
    pub theme: Theme,
    /// Terminal size.
    pub size: (u16, u16),
    effects: Vec<Effect>,
    compare_pending: Option<(usize, Vec<Run>)>,
}

impl App {
    /// An app on the run browser.
    pub fn with_browser(browser: Browser, keymap: Keymap, theme: Theme, size: (u16, u16)) -> Self {
        let mut app = Self::empty(keymap, theme, size);
        app.browser = Some(browser);
        app
    }

    /// An app straight on one run (no browser behind it).
    pub fn with_run(run: RunView, keymap: Keymap, theme: Theme, size: (u16, u16)) -> Self {
        let mut app = Self::empty(keymap, theme, size);
        app.run = Some(run);
        app.screen = Screen::Run;
        app
    }

    fn empty(keymap: Keymap, theme: Theme, size: (u16, u16)) -> Self {
        Self {
            screen: Screen::Browser,
            browser: None,
            run: None,
            compare: None,
            help: None,
            quit: false,
            loading: None,
            message: None,
            keymap,
            theme,
            size,
            effects: Vec::new(),
            compare_pending: None,
        }
    }

    /// The area screens draw into (all but the status line).
    pub fn body_area(&self) -> Rect {
        Rect::new(0, 0, self.size.0, self.size.1.saturating_sub(1))
    }

    /// Takes the effects asked for since the last call.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// Turns terminal input into an action, honouring the search prompt and the keymap.
    pub fn map_input(&self, event: TermEvent) -> Option<Action> {
        match event {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => {
                let typing = match self.screen {
                    Screen::Browser => self.browser.as_ref().is_some_and(|b| b.typing),
                    Screen::Run => self.run.as_ref().is_some_and(|r| r.finding),
                    Screen::Compare => false,
                };
                if typing {
                    Some(Action::Input(key))
                } else {
                    self.keymap.action(&key)
                }
            }
            TermEvent::Mouse(m) => Some(Action::Mouse(m)),
            TermEvent::Resize(w, h) => Some(Action::Resize(w, h)),
            _ => None,
        }
    }

    /// Applies one action.
    pub fn update(&mut self, action: Action) {
        if let Action::Resize(w, h) = action {
            self.size = (w, h);
        }
        // Background results go to their owner whatever is in front.
        match action {
            Action::Loaded(result) => return self.loaded(*result),
            Action::GroupsReady(rows) => {
                if let Some(b) = &mut self.browser {
                    b.update(&Action::GroupsReady(rows));
                }
                return;
            }
            Action::LiveEvent(e) => {
                if let Some(r) = &mut self.run {
                    r.push(*e);
                }
                return;
            }
            _ => {}
        }
        if let Some(scroll) = self.help {
            // A short terminal cannot show every key at once: the help scrolls, as far as
            // its last line (the keys, a footer, a border above and below, the status line).
            let visible = self.size.1.saturating_sub(3).max(1) as usize;
            let last = (self.keymap.help().len() + 1).saturating_sub(visible);
            self.help = match action {
                Action::ToggleHelp | Action::Back | Action::Quit => None,
                Action::Down => Some(scroll + 1),
                Action::Up => Some(scroll.saturating_sub(1)),
                Action::PageDown => Some(scroll + visible),
                Action::PageUp => Some(scroll.saturating_sub(visible)),
                _ => Some(scroll),
            }
            .map(|s| s.min(last));
            return;
        }
        match action {
            Action::Quit => {
                self.quit = true;
                return;
            }
            Action::ToggleHelp => {
                self.help = Some(0);
                return;
            }
            _ => {}
        }
        self.message = None;
        match self.screen {
            Screen::Browser => self.update_browser(action),
            Screen::Run => {
                let inspecting = self.run.as_ref().is_some_and(|r| r.inspector.is_some());
                if matches!(action, Action::Back) && !inspecting {
                    self.back();
                } else if let Some(r) = &mut self.run {
                    r.update(&action);
                }
            }
            Screen::Compare => {
                if matches!(action, Action::Back) {
                    self.back();
                } else if let Some(c) = &mut self.compare {
                    c.update(&action);
                }
            }
        }
    }

    fn back(&mut self) {
        if self.browser.is_some() {
            self.screen = Screen::Browser;
            self.run = None;
            self.compare = None;
        } else {
            self.quit = true;
        }
    }

    fn update_browser(&mut self, action: Action) {
        let Some(browser) = &mut self.browser else {
            return;
        };
        match action {
            Action::Back => {
                if browser.groups != Groups::Hidden {
                    browser.groups = Groups::Hidden;
                } else {
                    self.quit = true;
                }
            }
            Action::Open => {
                if let Some(r) = browser.selected_run() {
                    if let Err(e) = &r.header {
                        self.message = Some(format!("cannot open: {}", one_line(e, 200)));
                    } else {
                        self.loading = Some(format!("opening {}", r.path.display()));
                        self.effects.push(Effect::LoadRun(r.path.clone()));
                    }
                }
            }
            Action::ToggleGroups => {
                if browser.groups == Groups::Hidden {
                    browser.groups = Groups::Loading;
                    self.effects
                        .push(Effect::ComputeGroups(browser.roots.clone()));
                } else {
                    browser.groups = Groups::Hidden;
                }
            }
            Action::Compare => {
                let paths = browser.marked_paths();
                if !(2..=4).contains(&paths.len()) {
                    self.message = Some(format!(
                        "mark 2 to 4 runs with m first ({} marked)",
                        paths.len()
                    ));
                } else {
                    self.loading = Some(format!("loading {} runs", paths.len()));
                    self.compare_pending = Some((paths.len(), Vec::new()));
                    self.effects.push(Effect::LoadCompare(paths));
                }
            }
            other => {
                browser.update(&other);
            }
        }
    }

    fn loaded(&mut self, result: anyhow::Result<Run>) {
        if let Some((want, runs)) = &mut self.compare_pending {
            match result {
                Ok(run) => runs.push(run),
                Err(e) => {
                    self.compare_pending = None;
                    self.loading = None;
                    self.message =
                        Some(format!("cannot open: {}", one_line(&format!("{e:#}"), 200)));
                    return;
                }
            }
            if runs.len() == *want {
                let runs = std::mem::take(runs);
                self.compare_pending = None;
                self.loading = None;
                self.compare = Some(CompareView::new(&runs));
                self.screen = Screen::Compare;
            }
            return;
        }
        self.loading = None;
        match result {
            Ok(run) => {
                let problems = run.problems.len();
                self.run = Some(RunView::opened(run, self.body_area()));
                self.screen = Screen::Run;
                if problems > 0 {
                    self.message = Some(format!(
                        "{problems} problem(s) reading this run; `cosmos validate` lists them"
                    ));
                }
            }
            Err(e) => {
                self.message = Some(format!("cannot open: {}", one_line(&format!("{e:#}"), 200)))
            }
        }
    }

    /// True while something in the view moves by itself (play), so the loop ticks fast.
    pub fn animating(&self) -> bool {
        self.screen == Screen::Run && self.run.as_ref().is_some_and(|r| r.playing.is_some())
    }

    /// Draws the screen in front, the help overlay and the status line.
    pub fn draw(&self, frame: &mut Frame) {
        let [body, status] =
            Layout::vertical([Constraint::Min(0), Constraint::Length(1)]).areas(frame.area());
        let theme = &self.theme;
        let status_text = match self.screen {
            Screen::Browser => self.browser.as_ref().map(Browser::status),
            Screen::Run => self.run.as_ref().map(RunView::status),
            Screen::Compare => self
                .compare
                .as_ref()
                .map(|c| format!("compare {} runs", c.labels.len())),
        }
        .unwrap_or_default();
        match self.screen {
            Screen::Browser => {
                if let Some(b) = &self.browser {
                    b.draw(frame, body, theme);
                }
            }
            Screen::Run => {
                if let Some(r) = &self.run {
                    r.draw(frame, body, theme);
                }
            }
            Screen::Compare => {
                if let Some(c) = &self.compare {
                    c.draw(frame, body, theme);
                }
            }
        }
        if let Some(scroll) = self.help {
            super::help::draw(frame, body, &self.keymap, scroll, theme);
        }
        let note = self
            .loading
            .clone()
            .or_else(|| self.message.clone())
            .or_else(|| {
                self.run
                    .as_ref()
                    .filter(|_| self.screen == Screen::Run)
                    .and_then(|r| r.message.clone())
            })
            .or_else(|| {
                self.browser
                    .as_ref()
                    .filter(|_| self.screen == Screen::Browser)
                    .and_then(|b| b.message.clone())
            });
        let line = match note {
            Some(n) => format!(" {status_text}  ·  {n}  ·  ? help "),
            None => format!(" {status_text}  ·  ? help  q quit "),
        };
        frame.render_widget(
            Paragraph::new(Line::raw(one_line(&line, status.width as usize))).style(theme.status()),
            status,
        );
    }
}
