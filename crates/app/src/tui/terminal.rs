//! The terminal loop: raw mode and mouse on, a panic hook that restores the terminal, an
//! input thread, and a loop that turns messages into actions, runs effects in the
//! background and draws.
//!
//! Raw mode, mouse, the panic hook that restores the terminal (only when the
//! drawing thread panics: another thread's panic is caught where it runs, an agent's by the
//! session, background work's as `Action::WorkFailed`, and only logged by the hook), the input
//! thread, the thread for live actions (a run's events, a sweep's news), the tick; settles the views and draws once per batch of
//! messages, and only when something changed.

use std::io::stdout;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use anyhow::Result;
use crossterm::event::DisableMouseCapture;
use crossterm::execute;

use super::action::{Action, RequestId};
use super::app::App;
use super::view::{Exit, Work};
use cosmos_trajectory::run::Run;

/// Shortest time between two frames (60 a second at most).
const FRAME: Duration = Duration::from_millis(16);
/// Tick while playing.
const FAST_TICK: Duration = Duration::from_millis(50);
/// Tick otherwise (only to notice a resize or a live event quickly).
const SLOW_TICK: Duration = Duration::from_millis(250);

/// What the loop hears.
enum Msg {
    Input(crossterm::event::Event),
    Action(Action),
    /// Leave now (the run was stopped by a signal): no question, no overlay in the way.
    Leave,
}

/// An error unless stdin and stdout are a terminal: checked before anything is started or
/// written, so a script that forgot `--no-tui` leaves nothing behind.
pub fn require_terminal() -> Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "the explorer needs a terminal (stdin or stdout is not one); for scripts use \
             `cosmos run --no-tui`, `cosmos validate` or `cosmos report`"
        );
    }
    Ok(())
}

/// Runs the explorer until the person leaves (saying how), or until `leave` says so (a
/// signal ended the run). `live` feeds actions from background work that outlives a request:
/// events of a running agent or a growing file ([`Action::LiveEvent`]), a sweep's news.
pub fn run(
    mut app: App,
    live: Option<Receiver<Action>>,
    leave: Option<Receiver<()>>,
) -> Result<Exit> {
    require_terminal()?;
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            ratatui::restore();
            return Err(anyhow::Error::new(e).context("setting up the terminal"));
        }
    };
    install_panic_hook();
    execute!(stdout(), ButtonMouseCapture)?;
    let result = event_loop(&mut terminal, &mut app, live, leave);
    let _ = execute!(stdout(), DisableMouseCapture);
    ratatui::restore();
    result
}

/// Mouse capture of presses, releases, drags and the wheel, without the any-motion tracking
/// (`?1003h`) crossterm's `EnableMouseCapture` turns on: a moving mouse sends nothing, so it
/// neither redraws nor clears a message. SGR coordinates (`?1006h`). Undone by
/// `DisableMouseCapture`.
struct ButtonMouseCapture;

impl crossterm::Command for ButtonMouseCapture {
    fn write_ansi(&self, f: &mut impl std::fmt::Write) -> std::fmt::Result {
        f.write_str("\x1b[?1000h\x1b[?1002h\x1b[?1006h")
    }
}

/// Restores the terminal when the thread that draws panics, and only then: a panic on another
/// thread (an agent's task, background work) is caught where it runs and reported there, so it
/// must not pull the screen from under the explorer that goes on drawing. Those are logged
/// instead of printed over the screen.
fn install_panic_hook() {
    let owner = std::thread::current().id();
    // ratatui::init's hook restores the screen; mouse capture is ours to undo.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == owner {
            let _ = execute!(stdout(), DisableMouseCapture);
            ratatui::restore();
            previous(info);
        } else {
            tracing::error!(
                thread = std::thread::current().name().unwrap_or("unnamed"),
                "panic: {info}"
            );
        }
    }));
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    live: Option<Receiver<Action>>,
    leave: Option<Receiver<()>>,
) -> Result<Exit> {
    let (tx, rx) = mpsc::channel::<Msg>();
    if let Some(leave) = leave {
        let leave_tx = tx.clone();
        std::thread::spawn(move || {
            if leave.recv().is_ok() {
                let _ = leave_tx.send(Msg::Leave);
            }
        });
    }
    let input_tx = tx.clone();
    std::thread::spawn(move || {
        while let Ok(ev) = crossterm::event::read() {
            if input_tx.send(Msg::Input(ev)).is_err() {
                break;
            }
        }
    });
    if let Some(live) = live {
        let live_tx = tx.clone();
        std::thread::spawn(move || {
            for action in live {
                if live_tx.send(Msg::Action(action)).is_err() {
                    break;
                }
            }
        });
    }
    let size = terminal.size()?;
    app.update(Action::Resize(size.width, size.height));
    let mut last_tick = Instant::now();
    let mut last_frame: Option<Instant> = None;
    let mut dirty = false;
    loop {
        // Views catch up once per frame, and a frame is drawn only when something changed,
        // at most one per FRAME (what changes in between is drawn by the next one).
        dirty |= app.take_changed();
        let frame_wait = last_frame.map_or(Duration::ZERO, |at| FRAME.saturating_sub(at.elapsed()));
        if dirty && frame_wait.is_zero() {
            app.settle();
            terminal.draw(|f| app.draw(f))?;
            last_frame = Some(Instant::now());
            dirty = false;
        }
        let tick = if app.animating() {
            FAST_TICK
        } else {
            SLOW_TICK
        };
        let mut timeout = tick.saturating_sub(last_tick.elapsed());
        if dirty {
            timeout = timeout.min(frame_wait);
        }
        let first = match rx.recv_timeout(timeout) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        // Drain whatever else is waiting, so bursts (live events, key repeat) draw once.
        for msg in first
            .into_iter()
            .chain(std::iter::from_fn(|| rx.try_recv().ok()))
        {
            let action = match msg {
                Msg::Input(ev) => app.map_input(ev),
                Msg::Action(a) => Some(a),
                Msg::Leave => return Ok(Exit::Quit),
            };
            if let Some(a) = action {
                app.update(a);
            }
        }
        if last_tick.elapsed() >= tick {
            app.update(Action::Tick);
            last_tick = Instant::now();
        }
        for (id, work) in app.take_work() {
            spawn_work(id, work, tx.clone());
        }
        if let Some(exit) = app.exit {
            return Ok(exit);
        }
    }
    Ok(Exit::Quit)
}

fn spawn_work(id: RequestId, work: Work, tx: Sender<Msg>) {
    if let Work::OpenRun(path) | Work::OpenRunAt(path, _) = &work {
        // Read in parts on a thread of its own: the view opens on the first, the rest follow.
        let path = path.clone();
        std::thread::spawn(move || {
            let send = |action| tx.send(Msg::Action(action)).is_ok();
            match super::reading::open_in_parts(&path) {
                Ok(super::reading::Opened::Whole(run)) => {
                    send(Action::Loaded(id, Box::new(Ok(run))));
                }
                Ok(super::reading::Opened::Head {
                    run,
                    read,
                    total,
                    rest,
                }) => {
                    if send(Action::LoadedHead(id, Box::new(run), read, total)) {
                        for action in rest {
                            if !send(action) {
                                break;
                            }
                        }
                    }
                }
                Err(e) => {
                    send(Action::Loaded(id, Box::new(Err(e))));
                }
            }
        });
        return;
    }
    if let Work::Fork(fork) = work {
        // A fork runs for minutes: a thread of its own, never one of the pool's four.
        std::thread::spawn(move || {
            super::fork_work::run(id, fork, &mut |action| {
                let _ = tx.send(Msg::Action(action));
            })
        });
        return;
    }
    cosmos_trajectory::parallel::background(move || {
        // A panic (a bug) ends this request with a message, not the explorer.
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| perform(id, work)));
        let actions = done.unwrap_or_else(|panic| {
            vec![Action::WorkFailed(
                id,
                cosmos_trajectory::parallel::panic_message(panic.as_ref()),
            )]
        });
        for action in actions {
            let _ = tx.send(Msg::Action(action));
        }
    });
}

/// Does background work and returns the actions that carry its results, marked with the
/// request's id. Tests call this directly to run work without a terminal.
pub fn perform(id: RequestId, work: Work) -> Vec<Action> {
    match work {
        Work::OpenRun(path) | Work::OpenRunAt(path, _) => {
            vec![Action::Loaded(id, Box::new(Run::open(&path)))]
        }
        // The runs are read and their calls aligned here, off the UI thread; the app gives
        // the view the terminal's size when it shows it.
        Work::Compare(paths) => {
            let runs: anyhow::Result<Vec<Run>> = paths.iter().map(|p| Run::open(p)).collect();
            let view =
                runs.map(|runs| super::action::Made::new(super::open::compare(&runs, (80, 24))));
            vec![Action::Compared(id, view)]
        }
        Work::Fork(fork) => {
            let mut actions = Vec::new();
            super::fork_work::run(id, fork, &mut |action| actions.push(action));
            actions
        }
        Work::Job(job) => job.run(id),
    }
}
