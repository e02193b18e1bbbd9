//! The sweep with its live matrix view: cells run on the runtime while the explorer shows the
//! matrix; the view's stop key and a signal reach the cells through one stop signal, and
//! leaving the view with the sweep running turns its news into progress lines.

use std::path::Path;

use anyhow::{Context, Result};

use super::disk::{self, State};
use super::runner::{Reporter, run_cells};
use super::spec::Cell;
use crate::agent::session;
use crate::tui::app::{App, Layer};
use crate::tui::sweep_view::{CellState, GridCell, SweepView};
use crate::tui::view::Exit;

/// Runs `todo` with the matrix over `mine` (their `states` read from disk) until the person
/// leaves; returns the number of cells that could not run.
pub fn run_with_matrix(
    runtime: &tokio::runtime::Runtime,
    out: &Path,
    title: String,
    mine: &[Cell],
    states: Vec<State>,
    todo: Vec<(usize, Cell)>,
    jobs: usize,
) -> Result<usize> {
    let keymap = crate::tui::load_keymap()?;
    let signals = runtime.block_on(async { session::stop_on_signals() });
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
            state: match state {
                State::Done(status, totals) => CellState::Done(status, totals),
                State::Running(who) => CellState::Elsewhere(who),
                State::Incomplete(why) => CellState::Incomplete(why),
                State::Missing => CellState::Missing,
            },
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
        runtime.spawn(async move { run_cells(&out, todo, jobs, reporter, stop).await })
    };
    // The view's stop key reaches the cells through the same stop signal as Ctrl-C.
    let stop_tx = signals.tx.clone();
    let forward = stop_tx.clone();
    std::thread::spawn(move || {
        if ui_stop_rx.recv().is_ok() {
            let _ = forward.send(true);
        }
    });
    // A signal stops the cells and closes the view.
    let (leave_tx, leave_rx) = std::sync::mpsc::channel();
    let mut signalled = signals.signalled.clone();
    runtime.spawn(async move {
        if signalled.wait_for(|s| *s).await.is_ok() {
            let _ = leave_tx.send(());
        }
    });
    let app = App::on(
        Layer::Sweep(view),
        keymap,
        crate::tui::theme::Theme::from_env(),
        size,
    );
    // A panic in the view (its hook has restored the terminal) stops the cells, which still
    // end their files before the error is reported.
    let ui = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::tui::terminal::run(app, Some(ui_rx), Some(leave_rx))
    }))
    .unwrap_or_else(|_| {
        Err(anyhow::anyhow!(
            "the sweep view panicked; the sweep was stopped"
        ))
    });
    match &ui {
        Ok(Exit::LeaveRunning) => {
            reporter.go_headless();
            eprintln!("cosmos: the sweep goes on without the view; Ctrl-C stops it. Progress:");
        }
        // Leaving any other way (or a panic) stops what is still running.
        _ => {
            reporter.go_headless();
            let _ = stop_tx.send(true);
        }
    }
    let could_not_run = runtime
        .block_on(driver)
        .context("the sweep's task panicked")?;
    ui?;
    Ok(could_not_run)
}
