//! The sweep with its live matrix view: cells run on the runtime while the explorer shows the
//! matrix (through `cli::live`, as one live run is shown).

use std::path::Path;

use anyhow::{Context, Result};

use super::disk::{self, State};
use super::runner::{Reporter, Workers, run_cells};
use super::spec::Cell;
use crate::tui::app::App;
use crate::tui::views::sweep_view::{CellState, GridCell, SweepView};
use cosmos_engine::agent;

/// Runs `todo` with the matrix over `mine` (their `states` read from disk) until the person
/// leaves; returns the number of cells that could not run.
pub fn run_with_matrix(
    runtime: &tokio::runtime::Runtime,
    out: &Path,
    title: String,
    mine: &[Cell],
    states: Vec<State>,
    todo: Vec<(usize, Cell)>,
    workers: Workers,
) -> Result<(usize, bool)> {
    let keymap = crate::tui::load_keymap()?;
    let signals = runtime.block_on(async { agent::stop_on_signals() });
    let size = crossterm::terminal::size().unwrap_or((80, 24));
    let area = ratatui::layout::Rect::new(0, 0, size.0, size.1.saturating_sub(1));
    let grid = mine
        .iter()
        .zip(states)
        .map(|(cell, state)| GridCell {
            id: cell.id.clone(),
            task: cell.task_id.clone(),
            config: cell.config.clone(),
            repeat: cell.repeat,
            path: disk::run_path(out, cell),
            state: cell_state(state),
        })
        .collect();
    let (ui_stop_tx, ui_stop_rx) = std::sync::mpsc::channel::<()>();
    let mut view = SweepView::new(title, grid, Some(ui_stop_tx), area);
    view.queue(todo.iter().map(|(i, _)| *i));
    let (ui_tx, ui_rx) = std::sync::mpsc::channel();
    let reporter = Reporter::to_view(ui_tx);
    let driver = {
        let out = out.to_path_buf();
        let reporter = reporter.clone();
        let stop = signals.rx.clone();
        runtime.spawn(async move { run_cells(&out, todo, &workers, reporter, stop).await })
    };
    let app = App::new(view, keymap, crate::tui::theme::Theme::from_env(), size);
    let ui = crate::cli::live::explore_while_running(
        runtime,
        &signals,
        app,
        ui_rx,
        ui_stop_rx,
        ("sweep", "view"),
        || reporter.go_headless(),
    );
    let could_not_run = runtime
        .block_on(driver)
        .context("the sweep's task panicked")?;
    ui?;
    let stopped = *signals.rx.borrow();
    Ok((could_not_run, stopped))
}

/// How the matrix shows a cell's state on disk.
fn cell_state(state: State) -> CellState {
    match state {
        State::Done(status, totals) => CellState::Done(status, totals),
        State::Running(who) => CellState::Elsewhere(who),
        State::Incomplete(why) => CellState::Incomplete(why),
        State::Missing => CellState::Missing,
    }
}

/// How the matrix shows the cell whose run file is `path` (claims aside): what a sweep
/// started over `path`'s folder shows before it runs anything.
pub fn finished_cell(path: &Path) -> CellState {
    cell_state(disk::finished_state(path))
}
