//! The explorer (docs/design.md, "Explorer (terminal UI)"): run browser, run view, compare.
//!
//! State and update (`app.rs`, each screen's struct) are apart from drawing (`draw(&self)`);
//! input becomes an [`action::Action`] via the [`keymap`]; background work talks to the UI
//! over channels (`terminal.rs`). Untrusted text is made inert by [`text`] before drawing.

pub mod action;
pub mod app;
pub mod browser;
pub mod compare;
pub mod help;
pub mod keymap;
pub mod run_view;
pub mod terminal;
pub mod theme;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use self::app::App;
use self::browser::Browser;
use self::keymap::Keymap;
use self::run_view::RunView;
use self::theme::Theme;
use crate::trajectory::listing::list_runs;
use crate::trajectory::run::Run;

/// The user's keymap: `keys.toml` in the XDG config folder, else the defaults.
pub fn load_keymap() -> Result<Keymap> {
    match Keymap::default_path() {
        Some(p) => Keymap::load(&p),
        None => Ok(Keymap::default()),
    }
}

/// The size the terminal reports, or 80×24 when it reports none.
fn terminal_size() -> (u16, u16) {
    crossterm::terminal::size().unwrap_or((80, 24))
}

/// Opens the explorer on `path`: a folder opens the browser, a file opens the run view.
pub fn explore(path: &Path) -> Result<()> {
    let keymap = load_keymap()?;
    let theme = Theme::from_env();
    let size = terminal_size();
    let app = if path.is_file() {
        let run = Run::open(path)?;
        App::with_run(
            RunView::opened(
                run,
                ratatui::layout::Rect::new(0, 0, size.0, size.1.saturating_sub(1)),
            ),
            keymap,
            theme,
            size,
        )
    } else {
        let roots: Vec<PathBuf> = vec![path.to_path_buf()];
        let runs = if path.exists() {
            list_runs(&roots).with_context(|| format!("listing {}", path.display()))?
        } else {
            Vec::new()
        };
        App::with_browser(
            Browser::new(roots, runs, size.1.saturating_sub(1)),
            keymap,
            theme,
            size,
        )
    };
    terminal::run(app, None, None)
}
