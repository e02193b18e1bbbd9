//! One client session of `cosmos proxy`, recorded as one run (`agent.kind = "external"`) in
//! the events every agent writes: a real call is `tool_called` (through
//! `agent::record_call`); a call the world model predicted is a node of a chain, one
//! node per call under the one before (`node_added`, then `agent::record_rehearsal`'s
//! `node_simulated`/`error` and `node_evaluated`), and in shadow mode its `tool_called` names
//! that node, so every view pairs the prediction with the real result as it pairs a plan's.
//!
//! Invariant: a real call is written the moment its result comes, whether its prediction has
//! come or not: nothing the server did is held in memory, so a killed proxy keeps every call it
//! answered. A prediction that comes after its call is written when it comes, and the readers
//! pair it with that call (`trajectory::run::StepRef::simulated`); a session that ends before
//! it comes says so in an `error`.
//!
//! One session's file, opened at the client's first call. Real calls through
//! `agent::record_call`; predicted calls as a chain of nodes recorded by
//! `agent::record_rehearsal`. Invariant: a real call is written the moment its result comes,
//! its prediction when that comes (before or after: `trajectory::run` and `metrics::run` pair a
//! late one with its call), so a killed proxy keeps every answered call; calls
//! in flight when the session ends are recorded as cut off; `close` writes `run_finished` once
//! (a dropped session is one its client ended). Over HTTP, `close_when_idle` ends a session that
//! has served nothing for `--session-idle-s` (`idle_expired`; `Serving` marks a call in service,
//! however long); the handler opens a new one at the client's next call.
//!
//! # A session as a run
//!
//! `cosmos proxy` records each client session as a run in the same events. The header's agent is
//! `{"kind": "external", "settings": {"client": {"name", "version"}, "protocol"?, "sessionless"?,
//! "mode", "transport", "on_miss"?, "go_real_below"? or "routing"?, "simulate_writes"?,
//! "tools_from"?, "server_startup_timeout_s", "tool_call_timeout_s", "close_idle_after_s"?,
//! "elicitation": "client"}}`; `planner.model` is the client; `task` is `--task-id` and
//! `--task-request`. A real call is `tool_called`, in the order results came back. In shadow,
//! simulate and hybrid modes each call is a node under the previous call's, rehearsed as any agent
//! rehearses (`node_simulated` or an `error`, `node_evaluated`); a call answered by the world model
//! has no `tool_called`. A call still out when the session ends is recorded as cut off. A
//! `sessionless` run is a stateless-era client's requests of one name and version from one address,
//! each within `close_idle_after_s` of the last.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::Value;

use cosmos_engine::agent::EventSink;
use cosmos_engine::agent::Recorder;
use cosmos_engine::agent::{PlannedCall, record_call};
use cosmos_engine::agent::{Rehearsal, record_rehearsal};
use cosmos_engine::mcp::{CallOutcome, ServerFailure};
use cosmos_engine::world_model::HistoryStep;
use cosmos_metrics::run::RunAccumulator;
use cosmos_trajectory::event::{Action, AnsweredBy, Ending, EventBody, Header, NodeId, RunStatus};
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::writer::Writer;

/// What a new session's file starts with ([`Session::create`]).
pub struct Start<'a> {
    /// The header, its client named.
    pub header: Header,
    /// The file's path before numbering.
    pub base: PathBuf,
    /// Takes secrets out of every line.
    pub redactor: Redactor,
    /// Upstreams that did not start, recorded first.
    pub failures: &'a [ServerFailure],
    /// A world model predicts: the chain's root is written.
    pub predicts: bool,
    /// Told when the session ends.
    pub closed: Arc<tokio::sync::Notify>,
    /// The stateful upstreams' copies (shared by every session): the session's end digests
    /// and kept end state are taken from them.
    pub sandboxes: Arc<Vec<cosmos_engine::mcp::Sandbox>>,
}

/// A session's recording.
pub struct Session {
    path: PathBuf,
    state: Mutex<State>,
    /// Told when the session ends (the proxy waits on it before exiting).
    closed: Arc<tokio::sync::Notify>,
    /// The client's protocol log, written beside this run until the session ends.
    wire: Mutex<Option<Weak<super::wire::Wire>>>,
    /// The stateful upstreams' copies, read when the session ends.
    sandboxes: Arc<Vec<cosmos_engine::mcp::Sandbox>>,
}

/// What a session keeps between calls.
struct State {
    /// `None` once `run_finished` is written.
    recorder: Option<Recorder>,
    /// Real calls recorded.
    steps: u64,
    /// The last calls ([`HISTORY_KEPT`] at most) as the world model is told them: real
    /// results (shadow, hybrid), or the predictions the client was given (simulate). Shared
    /// with the rehearsals that read it, never copied per call; empty when no world model
    /// predicts (record mode keeps no result in memory).
    history: Arc<Vec<HistoryStep>>,
    /// A world model predicts this session's calls: the history is kept.
    predicts: bool,
    /// The chain's last node and the next id.
    last_node: NodeId,
    last_depth: u32,
    next_node: NodeId,
    /// Shadowed calls whose prediction or real result is still to come.
    pending: HashMap<NodeId, Pending>,
    /// Real calls on their way, by ticket: a session that ends first records each as cut off
    /// (the server may have acted on it).
    in_flight: HashMap<u64, (PlannedCall, Instant)>,
    next_ticket: u64,
    /// Client calls being served now ([`Session::serving`]).
    serving: u32,
    /// When the session last did anything: a call began or ended, an event was written.
    last_active: Instant,
}

/// Half of a shadowed call.
enum Pending {
    /// The prediction is written; the real result is still to come.
    Predicted,
    /// The real result is written; the prediction is still to come.
    Real,
}

/// A real call waiting to be recorded.
struct Waiting {
    planned: PlannedCall,
    server: Option<String>,
    outcome: CallOutcome,
}

impl Session {
    /// Creates the session's file (`base`, numbered when taken) and writes its header, the
    /// servers that did not start, and the chain's root when a world model predicts.
    pub fn create(start: Start<'_>) -> Result<Self> {
        let Start {
            header,
            base,
            redactor,
            failures,
            predicts,
            closed,
            sandboxes,
        } = start;
        let client_name = header.planner.model.clone();
        // Two sessions opened in the same millisecond would share a name: the later one
        // takes the next free number (the writer never overwrites).
        let mut n = 1;
        let (path, writer) = loop {
            let path = numbered(&base, n);
            match Writer::create(
                &path,
                &header,
                redactor.clone(),
                Some(RunAccumulator::tally(&header)),
            ) {
                Ok(writer) => break (path, writer),
                Err(_) if path.exists() && n < 1000 => n += 1,
                Err(e) => return Err(e),
            }
        };
        let mut recorder = Recorder::new(writer, None, None);
        for f in failures {
            recorder.emit(f.event())?;
        }
        if predicts {
            recorder.emit(EventBody::root())?;
        }
        tracing::info!(path = %path.display(), client = %client_name, "proxy session opened");
        Ok(Self {
            path,
            closed,
            wire: Mutex::new(None),
            sandboxes,
            state: Mutex::new(State {
                recorder: Some(recorder),
                steps: 0,
                history: Arc::default(),
                predicts,
                last_node: 0,
                last_depth: 0,
                next_node: 1,
                pending: HashMap::new(),
                in_flight: HashMap::new(),
                next_ticket: 0,
                serving: 0,
                last_active: Instant::now(),
            }),
        })
    }

    /// The trajectory file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True once `run_finished` is written.
    pub fn is_closed(&self) -> bool {
        self.state().recorder.is_none()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes a client call being served until the guard is dropped: the session is not idle
    /// meanwhile, however long the call takes.
    pub fn serving(self: &Arc<Self>) -> Serving {
        let mut state = self.state();
        state.serving += 1;
        state.last_active = Instant::now();
        Serving(self.clone())
    }

    /// How long the session has done nothing: no call served or out, no prediction still to
    /// come, nothing written. `None` while it is busy or once it has ended.
    pub fn idle_for(&self) -> Option<std::time::Duration> {
        let state = self.state();
        let busy = state.serving > 0
            || !state.in_flight.is_empty()
            || state.pending.values().any(|p| matches!(p, Pending::Real));
        (state.recorder.is_some() && !busy).then(|| state.last_active.elapsed())
    }

    /// Ends the session as [`Ending::IdleExpired`] once it has done nothing for `bound`,
    /// checking as long as it is open and held.
    pub async fn close_when_idle(session: Weak<Self>, bound: std::time::Duration) {
        let mut wait = bound;
        loop {
            tokio::time::sleep(wait).await;
            let Some(session) = session.upgrade() else {
                return;
            };
            if session.is_closed() {
                return;
            }
            wait = match session.idle_for() {
                Some(idle) if idle >= bound => {
                    tracing::info!(
                        path = %session.path.display(),
                        "the client sent nothing for {}s: closing its session",
                        bound.as_secs()
                    );
                    session.close(RunStatus::Completed, Ending::IdleExpired);
                    return;
                }
                Some(idle) => bound - idle,
                // Busy: look again after a bound (the call's end restarts the count).
                None => bound,
            };
        }
    }

    /// Writes the client's protocol log beside this run until the session ends.
    pub fn keep_wire(&self, wire: &Arc<super::wire::Wire>) {
        wire.attach(&self.path);
        *self.wire.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::downgrade(wire));
    }

    /// The last calls, as the world model is told them (shared, not copied).
    pub fn history(&self) -> Arc<Vec<HistoryStep>> {
        self.state().history.clone()
    }

    /// Adds the node of a call the world model will predict, under the chain's last node;
    /// returns it and its depth.
    pub fn add_node(&self, tool: &str, arguments: &Value) -> Result<(NodeId, u32)> {
        let mut state = self.state();
        let (node, parent, depth) = (state.next_node, state.last_node, state.last_depth + 1);
        state.emit(EventBody::NodeAdded {
            node,
            parent: Some(parent),
            depth,
            action: Some(Action::ToolCall {
                tool: tool.to_string(),
                arguments: arguments.clone(),
            }),
            prior: None,
        })?;
        state.next_node += 1;
        state.last_node = node;
        state.last_depth = depth;
        Ok((node, depth))
    }

    /// Records the world model's rehearsal of `node`. In simulate mode (`given` is true) the
    /// prediction is what the client was given, and joins the history.
    pub fn rehearsed(
        &self,
        node: NodeId,
        call: &PlannedCall,
        rehearsal: &Rehearsal,
        given: bool,
    ) -> Result<()> {
        let mut state = self.state();
        record_rehearsal(&mut *state, node, rehearsal)?;
        if given && let Some(predicted) = rehearsal.prediction() {
            state.remember(HistoryStep {
                tool: call.tool.clone(),
                arguments: call.arguments.clone(),
                observation: predicted.clone(),
                state_change: None,
                predicted_state: rehearsal.predicted_state(),
            });
        }
        match state.pending.remove(&node) {
            Some(Pending::Real) => {}
            // Simulate mode's `--on-miss real` call comes after; shadow's may too.
            _ => {
                state.pending.insert(node, Pending::Predicted);
            }
        }
        Ok(())
    }

    /// Records who answered the call of `node`, and why it went real (as `_meta` tells the
    /// client).
    pub fn routed(
        &self,
        node: NodeId,
        answered_by: AnsweredBy,
        why: Option<&str>,
        confidence: Option<f64>,
        threshold: Option<f64>,
    ) -> Result<()> {
        self.state().emit(EventBody::Routed {
            node,
            answered_by,
            why: why.map(str::to_string),
            confidence,
            threshold,
        })
    }

    /// Records an event that belongs to no call (a server started again).
    pub fn record(&self, body: EventBody) -> Result<()> {
        self.state().emit(body)
    }

    /// Notes a real call going out; [`Session::real`] with the ticket records its end.
    pub fn sending(&self, planned: &PlannedCall) -> u64 {
        let mut state = self.state();
        state.next_ticket += 1;
        let ticket = state.next_ticket;
        state
            .in_flight
            .insert(ticket, (planned.clone(), Instant::now()));
        ticket
    }

    /// Records a real call (`ticket` from [`Session::sending`], when it was noted) at once; a
    /// shadowed call's (`planned.node` set) prediction may still come after it.
    pub fn real(
        &self,
        ticket: Option<u64>,
        planned: PlannedCall,
        server: Option<String>,
        outcome: CallOutcome,
    ) -> Result<()> {
        let mut state = self.state();
        if let Some(ticket) = ticket
            && state.in_flight.remove(&ticket).is_none()
        {
            // The session ended while the call was out, and recorded it as cut off.
            return Ok(());
        }
        // The world model's next prediction knows this result at once, recorded or not.
        state.remember(HistoryStep {
            tool: planned.tool.clone(),
            arguments: planned.arguments.clone(),
            observation: outcome.result.clone(),
            state_change: outcome
                .state_change
                .clone()
                .map(|c| std::sync::Arc::new(*c)),
            predicted_state: None,
        });
        let node = planned.node;
        let waiting = Waiting {
            planned,
            server,
            outcome,
        };
        if let Some(node) = node
            && !matches!(state.pending.remove(&node), Some(Pending::Predicted))
        {
            state.pending.insert(node, Pending::Real);
        }
        state.real(waiting)
    }

    /// Ends the file with `run_finished`, once: each real call whose prediction never came
    /// gets an `error` saying so, and each call still out is recorded as cut off.
    pub fn close(&self, status: RunStatus, ending: Ending) {
        let mut state = self.state();
        if state.recorder.is_none() {
            return;
        }
        let unpredicted: Vec<NodeId> = {
            let mut nodes: Vec<NodeId> = state
                .pending
                .iter()
                .filter(|(_, p)| matches!(p, Pending::Real))
                .map(|(n, _)| *n)
                .collect();
            nodes.sort_unstable();
            nodes
        };
        let mut written = Ok(());
        for node in unpredicted {
            state.pending.remove(&node);
            written = written.and_then(|()| {
                state.emit(EventBody::Error {
                    source: cosmos_trajectory::event::ErrorSource::WorldModel,
                    name: None,
                    message: format!(
                        "no prediction of node {node}: the session ended before it came"
                    ),
                    stderr_tail: None,
                    step: None,
                })
            });
        }
        let mut cut: Vec<(u64, (PlannedCall, Instant))> = state.in_flight.drain().collect();
        cut.sort_unstable_by_key(|(ticket, _)| *ticket);
        for (_, (planned, sent)) in cut {
            let message = format!(
                "cut off after {:.1}s: the session ended before the server answered",
                sent.elapsed().as_secs_f64()
            );
            let outcome = CallOutcome::failure(message, sent.elapsed());
            let server = None;
            written = written.and_then(|()| {
                state.real(Waiting {
                    planned,
                    server,
                    outcome,
                })
            });
        }
        // Where the shared copies of the upstreams' state stand now, kept beside the run.
        let end_digest = if self.sandboxes.is_empty() {
            Default::default()
        } else {
            cosmos_engine::mcp::finish_sandboxes(&self.sandboxes, &self.path)
        };
        let finished = written.and_then(|()| {
            state.emit(EventBody::RunFinished {
                status,
                error: None,
                ending: Some(ending),
                totals: Default::default(),
                end_digest,
                state_match: Default::default(),
            })
        });
        if let Err(e) = finished {
            tracing::warn!(path = %self.path.display(), "ending a proxy session: {e:#}");
        }
        state.recorder = None;
        drop(state);
        // Its protocol log's file is closed with it (an idle client may hold its HTTP session
        // for long after).
        let wire = self.wire.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(wire) = wire.and_then(|w| w.upgrade()) {
            wire.detach(&self.path);
        }
        self.closed.notify_waiters();
        tracing::info!(path = %self.path.display(), "proxy session closed");
    }
}

/// A client call in service ([`Session::serving`]).
pub struct Serving(Arc<Session>);

impl Drop for Serving {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.serving -= 1;
        state.last_active = Instant::now();
    }
}

impl Drop for Session {
    /// A session nobody holds any more is one its client ended.
    fn drop(&mut self) {
        self.close(RunStatus::Completed, Ending::ClientClosed);
    }
}

/// Most calls a session's world model is told of (the latest): a session of any length holds
/// no more than this of its results in memory.
pub const HISTORY_KEPT: usize = 100;

impl State {
    /// Adds a call to what the world model is told, the oldest going past [`HISTORY_KEPT`];
    /// nothing when no world model predicts.
    fn remember(&mut self, step: HistoryStep) {
        if !self.predicts {
            return;
        }
        // Copied only when a rehearsal still reads the last one: at most HISTORY_KEPT steps.
        let history = Arc::make_mut(&mut self.history);
        if history.len() >= HISTORY_KEPT {
            history.remove(0);
        }
        history.push(step);
    }

    /// Records a real call as the next step (its history step is already taken).
    fn real(&mut self, waiting: Waiting) -> Result<()> {
        self.steps += 1;
        let step = self.steps;
        let Waiting {
            planned,
            server,
            outcome,
        } = waiting;
        record_call(self, step, &planned, server, outcome).map(drop)
    }
}

impl EventSink for State {
    fn emit(&mut self, body: EventBody) -> Result<()> {
        self.last_active = Instant::now();
        self.recorder
            .as_mut()
            .context("the session has ended")?
            .emit(body)
    }
}

/// `path` for the first of a name, else `path` with `-N` before its extension.
fn numbered(path: &Path, n: u32) -> PathBuf {
    if n == 1 {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{stem}-{n}.jsonl"))
}
