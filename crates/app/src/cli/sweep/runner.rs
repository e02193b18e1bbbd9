//! Runs a sweep's cells, J at once: each cell claimed, its unfinished run set aside, its
//! servers retried with backoff when they would not start, its run written under the cell's
//! name. What happens is told to a [`Reporter`]: progress lines, or news for the matrix view.

use crate::cli::output::{errln, outln};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use anyhow::Result;
use tokio::sync::watch;

use super::disk::{self, State};
use super::spec::{Cell, parse_run};
use crate::cli::run::prepare_or_stop;
use crate::tui::action::Action;
use crate::tui::feed::SweepNews;
use cosmos_engine::agent::{self, Outcome};
use cosmos_engine::mcp::SharedServers;
use cosmos_trajectory::event::{EventBody, RunStatus};
use cosmos_trajectory::sanitize::inert;

/// Tries for a cell whose infrastructure fails (servers that would not start).
const TRIES: u32 = 3;

/// Where the sweep's progress goes: the matrix view while it is open, lines on stdout
/// otherwise (and from the moment the person leaves the view with the sweep running).
#[derive(Clone)]
pub struct Reporter {
    ui: Option<Sender<Action>>,
    headless: Arc<AtomicBool>,
}

impl Reporter {
    /// Progress lines only (`--no-tui`).
    pub fn lines() -> Self {
        Self {
            ui: None,
            headless: Arc::new(AtomicBool::new(true)),
        }
    }

    /// News to the matrix view until [`Reporter::go_headless`].
    pub fn to_view(ui: Sender<Action>) -> Self {
        Self {
            ui: Some(ui),
            headless: Arc::new(AtomicBool::new(false)),
        }
    }

    /// From now on, lines: the view is gone.
    pub fn go_headless(&self) {
        self.headless.store(true, Ordering::Release);
    }

    fn viewing(&self) -> bool {
        self.ui.is_some() && !self.headless.load(Ordering::Acquire)
    }

    /// Tells the view; false when there is no view to tell (the caller prints instead).
    fn tell(&self, news: SweepNews) -> bool {
        if !self.viewing() {
            return false;
        }
        let sent = self
            .ui
            .as_ref()
            .is_some_and(|ui| ui.send(Action::Sweep(Box::new(news))).is_ok());
        if !sent {
            // The view is gone (it panicked, or left): print from here on.
            self.go_headless();
        }
        sent
    }

    /// A remark that is no cell's result (a run set aside).
    fn note(&self, text: String) {
        if !self.tell(SweepNews::Note(text.clone())) {
            errln!("cosmos: {}", inert(&text));
        }
    }
}

/// How a cell's turn ended.
enum Ended {
    /// Its run ended (any status), the time its servers took to start (last try), and the
    /// cell's whole time.
    Ran(Outcome, Duration, Duration),
    /// Another process holds it, or finished it meanwhile.
    Skipped(String),
    /// The sweep was stopped before it started.
    NotStarted,
}

/// How a sweep's cells are run.
#[derive(Debug, Clone)]
pub struct Workers {
    /// Cells at once: one per worker.
    pub jobs: usize,
    /// Servers each worker shares between its cells beside those declared shared.
    pub shared: Vec<String>,
}

/// Runs `todo` (grid index, cell) into `out`, `workers.jobs` workers at once, until done or `stop`.
/// Each worker takes the next cell when its last one ends, and keeps the stateless servers its
/// cells share (`mcp::shared`; those declared so, and those named in `workers.shared`) from one cell to
/// the next. Returns the number of cells that could not run (infrastructure, after their
/// tries).
pub async fn run_cells(
    out: &Path,
    todo: Vec<(usize, Cell)>,
    workers: &Workers,
    reporter: Reporter,
    stop: watch::Receiver<bool>,
) -> usize {
    let started = Instant::now();
    let n = todo.len();
    let mut ended = 0usize;
    let mut failed = 0usize;
    let queue = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::from(
        todo,
    )));
    let (done_tx, mut results) = tokio::sync::mpsc::unbounded_channel();
    // Each worker a task of its own: one cell's blocking moments (a flush, a seed's copy) hold
    // up no other cell.
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.jobs.max(1) {
        let (stop, reporter, done_tx, queue) = (
            stop.clone(),
            reporter.clone(),
            done_tx.clone(),
            queue.clone(),
        );
        let (out, shared) = (out.to_path_buf(), workers.shared.clone());
        tasks.spawn(async move {
            let servers = Arc::new(SharedServers::new(shared));
            loop {
                let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                let Some((index, cell)) = next else { break };
                let result = if *stop.borrow() {
                    Ok(Ended::NotStarted)
                } else {
                    run_cell(&out, index, &cell, stop.clone(), &reporter, &servers).await
                };
                let _ = done_tx.send((index, cell, result));
            }
            if let Some(servers) = Arc::into_inner(servers) {
                servers.shutdown().await;
            }
        });
    }
    drop(done_tx);
    let workers = async move { while tasks.join_next().await.is_some() {} };
    let mut workers = std::pin::pin!(workers);
    let mut working = true;
    loop {
        let next = tokio::select! {
            next = results.recv() => next,
            _ = &mut workers, if working => {
                working = false;
                continue;
            }
        };
        let Some((index, cell, result)) = next else {
            break;
        };
        if matches!(result, Ok(Ended::NotStarted)) {
            continue;
        }
        ended += 1;
        let elapsed = started.elapsed().as_secs_f64();
        let left = elapsed / ended as f64 * (n - ended) as f64;
        let progress = format!("{ended}/{n} · {left:.0}s left");
        let (what, news) = match result {
            Ok(Ended::Skipped(why)) => (
                format!("skipped: {why}"),
                SweepNews::Skipped {
                    cell: index,
                    why,
                    progress: progress.clone(),
                },
            ),
            Ok(Ended::Ran(outcome, servers, whole)) => (
                format!(
                    "{} · {} · {:.1}s (servers {:.1}s)",
                    outcome.status.as_str(),
                    outcome.path.display(),
                    whole.as_secs_f64(),
                    servers.as_secs_f64()
                ),
                SweepNews::Ended {
                    cell: index,
                    result: Ok(outcome.status),
                    progress: progress.clone(),
                },
            ),
            Ok(Ended::NotStarted) => continue,
            Err(e) => {
                failed += 1;
                (
                    format!("could not run: {e:#}"),
                    SweepNews::Ended {
                        cell: index,
                        result: Err(format!("{e:#}")),
                        progress: progress.clone(),
                    },
                )
            }
        };
        let told = reporter.tell(news);
        if !told {
            outln!(
                "{}",
                inert(&format!(
                    "[{ended}/{n}] {} {} × {} r{}: {what} · {left:.0}s left",
                    cell.id, cell.task_id, cell.config, cell.repeat
                ))
            );
        }
    }
    reporter.tell(SweepNews::Over);
    failed
}

async fn run_cell(
    out: &Path,
    index: usize,
    cell: &Cell,
    stop: watch::Receiver<bool>,
    reporter: &Reporter,
    shared: &Arc<SharedServers>,
) -> Result<Ended> {
    let began = Instant::now();
    let path = disk::run_path(out, cell);
    let _claim = match disk::claim(out, cell)? {
        Ok(claim) => claim,
        Err(who) => {
            return Ok(Ended::Skipped(format!(
                "running in another process ({who})"
            )));
        }
    };
    // Another process may have finished it between our reading the folder and our claim.
    if let State::Done(status, _) = disk::finished_state(&path) {
        return Ok(Ended::Skipped(format!(
            "finished meanwhile ({})",
            status.as_str()
        )));
    }
    let mut last = None;
    for attempt in 0..TRIES {
        note_set_aside(disk::set_aside(&path)?, reporter);
        let run_args = parse_run(&cell.args)?;
        let otel = run_args.options.otel.target()?;
        let mut spec = run_args.spec()?;
        // A sweep's cells have no form to answer in: asking is declining.
        if spec.timeouts.elicitation == cosmos_engine::mcp::Elicitation::Ask {
            spec.timeouts.elicitation = cosmos_engine::mcp::Elicitation::Decline;
        }
        spec.out_dir = out.to_path_buf();
        spec.file_name = Some(cell.file_name());
        spec.shared = Some(shared.clone());
        let starting = Instant::now();
        match prepare_or_stop(&spec, stop.clone()).await {
            Ok(Some(mut prepared)) => {
                let exporting = crate::cli::run::export_live(&mut prepared, otel).await?;
                let servers = starting.elapsed();
                reporter.tell(SweepNews::Started {
                    cell: index,
                    header: Box::new(prepared.header.clone()),
                });
                let hook = reporter.viewing().then(|| {
                    let reporter = reporter.clone();
                    Box::new(move |event: &cosmos_trajectory::event::Event| {
                        reporter.tell(SweepNews::Event {
                            cell: index,
                            event: Box::new(event.clone()),
                        });
                    }) as cosmos_engine::agent::Hook
                });
                let outcome = agent::execute_run(prepared, None, hook).await;
                crate::cli::run::finish_export(exporting);
                let outcome = outcome?;
                match infrastructure_failure(&outcome) {
                    None => return Ok(Ended::Ran(outcome, servers, began.elapsed())),
                    Some(why) => last = Some(anyhow::anyhow!("{why}")),
                }
            }
            Ok(None) => return Ok(Ended::NotStarted),
            Err(e) => last = Some(e),
        }
        // Infrastructure, not the agent: wait and try again.
        if attempt + 1 < TRIES {
            let why = last.as_ref().map(|e| format!("{e:#}")).unwrap_or_default();
            reporter.tell(SweepNews::Retrying {
                cell: index,
                reason: why,
            });
            tokio::time::sleep(Duration::from_secs(2u64.pow(attempt + 1))).await;
        }
    }
    // Not a result: kept aside, so the next run of the sweep tries the cell again.
    note_set_aside(disk::set_aside(&path)?, reporter);
    Err(last.unwrap_or_else(|| anyhow::anyhow!("failed")))
}

/// Why a failed run is the infrastructure's fault rather than a result of the agent: none of
/// its servers started, or its model endpoint never answered (every LLM call failed). Such a
/// run is tried again; any other failure is the agent's, and a result.
fn infrastructure_failure(outcome: &Outcome) -> Option<String> {
    if outcome.status != RunStatus::Failed {
        return None;
    }
    let error = outcome.error.clone().unwrap_or_default();
    if error.contains(agent::NO_SERVER_STARTED) {
        return Some(error);
    }
    let mut stream = cosmos_trajectory::reader::EventStream::open(&outcome.path).ok()?;
    let (mut calls, mut answered, mut last_error) = (0, 0, None);
    while let Ok(Some(event)) = stream.next_event() {
        if let EventBody::LlmCall { error, .. } = event.body {
            calls += 1;
            match error {
                Some(e) => last_error = Some(e),
                None => answered += 1,
            }
        }
    }
    (calls > 0 && answered == 0).then(|| {
        format!(
            "the model endpoint never answered ({calls} call(s) failed; last: {})",
            last_error.unwrap_or_default()
        )
    })
}

fn note_set_aside(aside: Option<(PathBuf, PathBuf)>, reporter: &Reporter) {
    if let Some((from, to)) = aside {
        reporter.note(format!(
            "{} did not finish; set aside as {}",
            from.display(),
            to.display()
        ));
    }
}
