//! The explorer in front of work running on the runtime (one run, or a sweep): the view's stop
//! key and a signal reach the work through one stop signal, a signal also closes the view, a
//! panic in the view stops the work, and leaving the view with the work still going turns its
//! news into progress lines.

use crate::cli::output::errln;
use std::sync::mpsc::Receiver;

use anyhow::Result;

use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::view::Exit;
use cosmos_engine::agent::StopSignal;

/// Runs `app` until the person leaves, fed by `actions` from the work; `ui_stop` is the view's
/// stop key. Once the view has ended, `go_headless` switches the work's news to progress lines;
/// unless the person chose to leave the work running, the work is then stopped. `what` and
/// `view` name them in messages ("run", "explorer"). The view's result comes back for the
/// caller to report after the work has ended and written its files.
pub(super) fn explore_while_running(
    runtime: &tokio::runtime::Runtime,
    signals: &StopSignal,
    app: App,
    actions: Receiver<Action>,
    ui_stop: Receiver<()>,
    (what, view): (&str, &str),
    go_headless: impl FnOnce(),
) -> Result<()> {
    let forward = signals.tx.clone();
    std::thread::spawn(move || {
        if ui_stop.recv().is_ok() {
            let _ = forward.send(true);
        }
    });
    // A signal stops the work and closes the view; the view's own stop key only stops the work.
    let (leave_tx, leave_rx) = std::sync::mpsc::channel();
    let mut signalled = signals.signalled.clone();
    runtime.spawn(async move {
        if signalled.wait_for(|s| *s).await.is_ok() {
            let _ = leave_tx.send(());
        }
    });
    // A panic in the view (its hook has restored the terminal) still lets the work end and
    // write its files before the error is reported.
    let ui = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::tui::terminal::run(app, Some(actions), Some(leave_rx))
    }))
    .unwrap_or_else(|_| {
        Err(anyhow::anyhow!(
            "the {view} panicked; the {what} was stopped"
        ))
    });
    go_headless();
    match &ui {
        Ok(Exit::LeaveRunning) => {
            errln!("cosmos: the {what} goes on without the {view}; Ctrl-C stops it. Progress:");
        }
        // Leaving any other way (or a panic) stops what is still running, forks started
        // from the view included.
        _ => {
            let _ = signals.tx.send(true);
            crate::tui::fork_work::stop_all(crate::tui::fork_work::STOP_WITHIN);
        }
    }
    ui.map(drop)
}
