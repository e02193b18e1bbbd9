//! The `memory` world model: a transition buffer of real `(tool, arguments) → result`
//! pairs from recorded trajectories. Exact match first, then the nearest recorded call of
//! the same tool ([`similarity`], the one distance over arguments the store's users share). No
//! LLM, deterministic, offline.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{SimFailure, SimRequest, Simulation, WorldModel, canonical};
use cosmos_trajectory::event::{EventBody, Observation, StateChange, WorldModelInfo};
use cosmos_trajectory::reader::{EventStream, collect_files};

/// A recorded real call: its arguments, its result, the run it came from (an index into the
/// store's sources; `u32::MAX` when added by hand), and how it changed its server's sandboxed
/// state when that was watched.
#[derive(Debug, Clone)]
pub struct RecordedTransition {
    /// The call's arguments.
    pub arguments: Value,
    /// Its real result.
    pub observation: Observation,
    /// The run it was recorded in.
    pub run: u32,
    /// Its change to its server's state, when watched.
    pub change: Option<Arc<StateChange>>,
    /// Its server's state before it ([`state_digest`]), when the run kept the start state and
    /// every change on the way (the one fold, `state_view::fold_step`).
    pub state_before: Option<u64>,
}

/// A state's digest for matching calls made in the same state: a hash of its canonical JSON.
pub fn state_digest(state: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    canonical(state).hash(&mut h);
    h.finish()
}

/// The most recorded calls a store holds (a few GiB at most, with results capped as recorded).
pub const MAX_STORED: usize = 2_000_000;

/// One tool's recorded calls, indexed by their canonical arguments.
#[derive(Debug, Default)]
struct ToolCalls {
    calls: Vec<RecordedTransition>,
    /// Canonical arguments → the calls with them (indexes into `calls`).
    by_arguments: HashMap<String, Vec<u32>>,
}

/// Recorded real calls, by tool: the one trace store (`memory` recalls from it, `traces`
/// fits its rules on it, `llm` is shown examples from it).
#[derive(Debug, Default)]
pub struct TransitionBuffer {
    by_tool: HashMap<String, ToolCalls>,
    /// A tool's own name → the first `SERVER:TOOL` recorded with it.
    by_bare: HashMap<String, String>,
    sources: Vec<PathBuf>,
    /// Each source as a file records it (`mcp::shown_location`: a run converted from another
    /// program's file by the file the person gave).
    shown: Vec<String>,
    count: usize,
}

/// One recorded call as the store takes it: its tool, its arguments' canonical form, and it.
type Read = (String, String, RecordedTransition);

/// The real calls of one run file (taken apart, not copied) and how the file records its run;
/// `None` for a file that cannot be read (logged) or a wm-eval file, whose calls are copies of
/// other runs' calls (reading them would let a call be predicted from its own recording).
fn calls_in(file: &std::path::Path) -> Option<(String, Vec<Read>)> {
    let Ok(mut stream) = EventStream::open(file) else {
        tracing::warn!(file = %file.display(), "memory: skipping unreadable run");
        return None;
    };
    if stream.header().agent.kind == cosmos_trajectory::event::AgentKind::WmEval {
        return None;
    }
    let mut calls = Vec::new();
    // Each sandboxed server's state as the run goes, from its start state by the one fold.
    let mut states: Vec<(String, Option<cosmos_trajectory::event::StateFields>)> = stream
        .header()
        .servers
        .iter()
        .filter_map(|s| {
            let Some(Value::Object(start)) = s.start_state.as_deref() else {
                return None;
            };
            Some((s.name.clone(), Some(start.clone().into_iter().collect())))
        })
        .collect();
    while let Ok(Some(e)) = stream.next_event() {
        // A replayed call (a fork's history, with an origin) is its original's, read there; a
        // call that never answered has no result.
        if let EventBody::ToolCalled {
            tool,
            arguments,
            result,
            error: None,
            origin: None,
            state_change,
            ..
        } = e.body
        {
            let key = canonical(&arguments);
            let mut state_before = None;
            if let Some((_, state)) = states
                .iter_mut()
                .find(|(server, _)| crate::mcp::state_view::is_servers(&tool, server))
            {
                state_before = state
                    .as_ref()
                    .map(|s| state_digest(&Value::Object(s.clone().into_iter().collect())));
                *state =
                    crate::mcp::state_view::fold_step(state.take(), state_change.as_deref(), None);
            }
            let transition = RecordedTransition {
                arguments: *arguments,
                observation: result,
                run: 0,
                change: state_change.map(|c| Arc::new(*c)),
                state_before,
            };
            calls.push((tool, key, transition));
        } else if let EventBody::ResourceRead(read) = &e.body
            && read.error.is_none()
            && let Some((tool, arguments, result)) = read.as_read_call()
        {
            let key = canonical(&arguments);
            let transition = RecordedTransition {
                arguments,
                observation: result,
                run: 0,
                change: None,
                state_before: None,
            };
            calls.push((tool.name.clone(), key, transition));
        }
    }
    Some((crate::mcp::shown_location(file, stream.header()), calls))
}

/// The tool's own name, without the server: lets runs under other server names match.
fn bare(tool: &str) -> &str {
    tool.split_once(':').map_or(tool, |(_, t)| t)
}

impl TransitionBuffer {
    /// Reads every real call (without transport errors) from the runs under `paths`, in one
    /// pass, up to [`MAX_STORED`] calls (the rest left out, said in the log). Unreadable files
    /// are skipped with a log line, not fatal; a file given twice (or by a link) is read once.
    pub fn from_runs(paths: &[PathBuf]) -> Result<Self> {
        Self::from_runs_within(paths, MAX_STORED)
    }

    fn from_runs_within(paths: &[PathBuf], most: usize) -> Result<Self> {
        let mut buffer = Self::default();
        let found = collect_files(paths)?;
        for skipped in &found.skipped {
            tracing::warn!(%skipped, "memory: skipping");
        }
        // Other programs' files reach the store converted (`--memory-from` of every command
        // does that); a table's `from` names cosmos runs.
        for foreign in &found.foreign {
            tracing::warn!(
                file = %foreign.display(),
                "memory: not a cosmos run; give it with --memory-from, or `cosmos import` it first"
            );
        }
        // Read a batch of files at once (one per core), added in the files' order; a batch at
        // a time, so the bound stops the reading, not only the keeping.
        let batch = 4 * cosmos_trajectory::parallel::workers();
        for files in found.files.chunks(batch) {
            if buffer.count >= most {
                tracing::warn!(
                    "memory: the store holds {most} recorded calls, its most; the rest are left out"
                );
                break;
            }
            for (file, read) in files
                .iter()
                .zip(cosmos_trajectory::parallel::map(files, |f| {
                    calls_in(f.as_path())
                }))
            {
                let Some((shown, calls)) = read else { continue };
                let source = buffer.sources.len() as u32;
                for (tool, key, transition) in calls {
                    if buffer.count >= most {
                        break;
                    }
                    buffer.add_keyed(
                        &tool,
                        key,
                        RecordedTransition {
                            run: source,
                            ..transition
                        },
                    );
                }
                buffer.shown.push(shown);
                buffer.sources.push(file.clone());
            }
        }
        Ok(buffer)
    }

    /// Adds one transition (tests build buffers by hand; runs come through `from_runs`).
    #[cfg(test)]
    pub fn add(&mut self, tool: &str, arguments: Value, result: Observation) {
        self.add_from(tool, arguments, result, u32::MAX, None);
    }

    #[cfg(test)]
    fn add_from(
        &mut self,
        tool: &str,
        arguments: Value,
        observation: Observation,
        run: u32,
        change: Option<Arc<StateChange>>,
    ) {
        let key = canonical(&arguments);
        let transition = RecordedTransition {
            arguments,
            observation,
            run,
            change,
            state_before: None,
        };
        self.add_keyed(tool, key, transition);
    }

    /// Adds one call, its arguments' canonical form `key` made already.
    fn add_keyed(&mut self, tool: &str, key: String, transition: RecordedTransition) {
        if !self.by_tool.contains_key(tool) {
            // The first server recorded with this tool answers for the tool under another
            // server's name.
            self.by_bare
                .entry(bare(tool).to_string())
                .or_insert_with(|| tool.to_string());
        }
        let calls = self.by_tool.entry(tool.to_string()).or_default();
        calls
            .by_arguments
            .entry(key)
            .or_default()
            .push(calls.calls.len() as u32);
        calls.calls.push(transition);
        self.count += 1;
    }

    /// The index of a run the buffer was read from (paths compared as given and resolved).
    pub fn source_of(&self, path: &std::path::Path) -> Option<u32> {
        let resolved = path.canonicalize().ok();
        self.sources
            .iter()
            .position(|s| s == path || (resolved.is_some() && s.canonicalize().ok() == resolved))
            .map(|i| i as u32)
    }

    /// What a world model reading the store records of it in a run's header: how many calls,
    /// from which runs (as each file records its run).
    pub fn details(&self) -> [(&'static str, Value); 2] {
        [
            ("transitions", json!(self.count)),
            ("runs", json!(self.shown)),
        ]
    }

    /// Transitions held.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn tool_calls(&self, tool: &str) -> Option<&ToolCalls> {
        self.by_tool
            .get(tool)
            .or_else(|| self.by_tool.get(self.by_bare.get(bare(tool))?))
    }

    /// Every recorded call of `tool` (under another server's name too, when none under this
    /// one), in the order read.
    pub fn calls_of(&self, tool: &str) -> &[RecordedTransition] {
        self.tool_calls(tool).map_or(&[], |t| &t.calls)
    }

    /// The recorded calls of `tool` with exactly these arguments, outside run `excluded`.
    pub fn same_calls<'a>(
        &'a self,
        tool: &str,
        arguments: &Value,
        excluded: Option<u32>,
    ) -> impl Iterator<Item = &'a RecordedTransition> + 'a {
        let calls = self.tool_calls(tool);
        let found = calls.and_then(|t| t.by_arguments.get(&canonical(arguments)));
        found
            .into_iter()
            .flatten()
            .filter_map(move |i| calls.map(|t| &t.calls[*i as usize]))
            .filter(move |c| Some(c.run) != excluded)
    }

    /// The `k` recorded calls of `tool` outside run `excluded` nearest to `arguments` (by
    /// [`similarity`]; the earlier recorded first among equals), nearest first.
    pub fn nearest(
        &self,
        tool: &str,
        arguments: &Value,
        excluded: Option<u32>,
        k: usize,
    ) -> Vec<&RecordedTransition> {
        let mut scored: Vec<(f64, usize, &RecordedTransition)> = self
            .calls_of(tool)
            .iter()
            .enumerate()
            .filter(|(_, c)| Some(c.run) != excluded)
            .map(|(i, c)| (similarity(&c.arguments, arguments), i, c))
            .collect();
        let k = k.min(scored.len());
        if k == 0 {
            return Vec::new();
        }
        let order = |a: &(f64, usize, &RecordedTransition),
                     b: &(f64, usize, &RecordedTransition)| {
            b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
        };
        scored.select_nth_unstable_by(k - 1, order);
        scored.truncate(k);
        scored.sort_by(order);
        scored.into_iter().map(|(_, _, c)| c).collect()
    }

    /// Adds one transition recorded in the `source`th run with its server in `state`.
    #[cfg(test)]
    pub fn add_in_state(
        &mut self,
        tool: &str,
        arguments: Value,
        result: Observation,
        source: u32,
        state: &Value,
    ) {
        let key = canonical(&arguments);
        let transition = RecordedTransition {
            arguments,
            observation: result,
            run: source,
            change: None,
            state_before: Some(state_digest(state)),
        };
        self.add_keyed(tool, key, transition);
    }

    /// Adds one transition as recorded in the `source`th run (tests build buffers by hand).
    #[cfg(test)]
    pub fn add_recorded(&mut self, tool: &str, arguments: Value, result: Observation, source: u32) {
        self.add_from(tool, arguments, result, source, None);
    }

    /// The recorded result for this call: exact match, else the nearest call of the tool.
    #[cfg(test)]
    pub fn lookup(&self, tool: &str, arguments: &Value) -> Option<(&Observation, bool)> {
        self.lookup_without(tool, arguments, None)
            .map(|r| (r.observation, r.exact))
    }

    /// The recorded result for this call without the calls of run `excluded` (leave one run out:
    /// a call is never predicted from its own recording), with how close the recall is.
    pub fn lookup_without(
        &self,
        tool: &str,
        arguments: &Value,
        excluded: Option<u32>,
    ) -> Option<Recall<'_>> {
        let exact_calls: Vec<&RecordedTransition> =
            self.same_calls(tool, arguments, excluded).collect();
        if !exact_calls.is_empty() {
            // The result recorded most often for this very call (the first on a tie), and the
            // share of its recordings that agree with it.
            let count =
                |o: &Observation| exact_calls.iter().filter(|e| e.observation == *o).count();
            let (first, agreeing) = exact_calls
                .iter()
                .map(|c| (*c, count(&c.observation)))
                .fold(
                    None::<(&RecordedTransition, usize)>,
                    |best, (c, n)| match best {
                        Some((_, m)) if m >= n => best,
                        _ => Some((c, n)),
                    },
                )?;
            return Some(Recall {
                observation: &first.observation,
                exact: true,
                closeness: agreeing as f64 / exact_calls.len() as f64,
                // The state change recorded with that result (its first recording's).
                change: first.change.as_deref(),
            });
        }
        self.calls_of(tool)
            .iter()
            .filter(|c| Some(c.run) != excluded)
            .map(|c| (&c.observation, similarity(&c.arguments, arguments)))
            .max_by(|(_, a), (_, b)| a.total_cmp(b))
            .map(|(observation, closeness)| Recall {
                observation,
                exact: false,
                closeness,
                // Another call's change is not this call's: no state is replayed from it.
                change: None,
            })
    }
}

/// A recorded call recalled for a new one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recall<'a> {
    /// Its recorded result.
    pub observation: &'a Observation,
    /// The same tool with the same arguments was recorded.
    pub exact: bool,
    /// Exact: the share of that call's recordings that hold this result; else how alike the
    /// recorded call's arguments are to the new one's ([`similarity`]).
    pub closeness: f64,
    /// The state change recorded with an exact recall's result, when one was.
    pub change: Option<&'a StateChange>,
}

impl Recall<'_> {
    /// The documented mapping (docs/world-models.md, "When to trust a prediction"): the same
    /// call recorded is 0.9 times the share of its recordings that agree (a result can change
    /// between days); another call of the tool is 0.1 plus 0.6 times how alike the arguments
    /// are ([`similarity`]; under 0.7: its values are another call's).
    pub fn confidence(&self) -> f64 {
        if self.exact {
            0.9 * self.closeness
        } else {
            0.1 + 0.6 * self.closeness
        }
    }
}

/// How alike two calls' arguments are, from 0 to 1: one minus the mean distance over the keys
/// of either, where equal values are 0 apart, two numbers `|a − b| / (|a| + |b|)`, and
/// anything else (a value one lacks, two different strings) 1.
pub fn similarity(a: &Value, b: &Value) -> f64 {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return if a == b { 1.0 } else { 0.0 };
    };
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    if keys.is_empty() {
        return 1.0;
    }
    let distance: f64 = keys
        .iter()
        .map(|k| match (a.get(k.as_str()), b.get(k.as_str())) {
            (Some(x), Some(y)) if x == y => 0.0,
            (Some(Value::Number(x)), Some(Value::Number(y))) => {
                let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                let scale = x.abs() + y.abs();
                if scale == 0.0 {
                    0.0
                } else {
                    ((x - y).abs() / scale).min(1.0)
                }
            }
            _ => 1.0,
        })
        .sum();
    1.0 - distance / keys.len() as f64
}

/// A recorded call's `change` replayed on the `state` a prediction is given (as fields), when
/// both are known: the state after a recalled call, for memory and traces alike.
pub fn replayed(state: Option<&Value>, change: Option<&StateChange>) -> Option<Value> {
    let (Some(Value::Object(state)), Some(change)) = (state, change) else {
        return None;
    };
    let state = state.clone().into_iter().collect();
    crate::mcp::state_view::apply(&state, change)
        .map(|after| Value::Object(after.into_iter().collect()))
}

/// The memory world model.
#[derive(Debug, Clone)]
pub struct MemoryWorldModel {
    buffer: std::sync::Arc<TransitionBuffer>,
    /// The run whose calls it must not use (leave one run out), if any.
    excluded: Option<u32>,
}

impl MemoryWorldModel {
    /// A world model over a buffer.
    pub fn new(buffer: std::sync::Arc<TransitionBuffer>) -> Self {
        Self {
            buffer,
            excluded: None,
        }
    }

    /// The same buffer without the calls recorded in `run` (for evaluating calls of `run`).
    pub fn without(&self, run: &std::path::Path) -> Self {
        Self {
            buffer: self.buffer.clone(),
            excluded: self.buffer.source_of(run),
        }
    }
}

impl WorldModel for MemoryWorldModel {
    fn name(&self) -> String {
        "memory".into()
    }

    fn describe(&self) -> WorldModelInfo {
        super::describe(self.name(), self.buffer.details())
    }

    fn simulate<'a>(
        &'a self,
        req: SimRequest<'a>,
    ) -> BoxFuture<'a, Result<Simulation, SimFailure>> {
        Box::pin(async move {
            let start = Instant::now();
            match self
                .buffer
                .lookup_without(&req.tool.name, req.arguments, self.excluded)
            {
                Some(recall) => {
                    let mut simulation = Simulation::new(
                        recall.observation.clone(),
                        start.elapsed(),
                        None,
                        super::Confidence::new(recall.confidence(), "recall"),
                    );
                    // The same call's recorded change, replayed on the state it is given.
                    simulation.predicted_state = replayed(req.state, recall.change);
                    Ok(simulation)
                }
                // Nothing to go on is no prediction (not a predicted error, which would score
                // as a dead end and count in fidelity): the world model failed to simulate.
                None => Err(SimFailure::new(format!(
                    "memory world model: no recorded call of {} to predict from",
                    req.tool.name
                ))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(t: &str) -> Observation {
        Observation {
            text: t.into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_tool_never_recorded_is_no_prediction() {
        let wm = MemoryWorldModel::new(std::sync::Arc::new(TransitionBuffer::default()));
        let tool = cosmos_trajectory::event::ToolInfo {
            name: "units:convert_angle".into(),
            description: String::new(),
            input_schema: cosmos_trajectory::event::ToolSchema::new(serde_json::json!({})),
            ..Default::default()
        };
        let args = serde_json::json!({"value": 1});
        let req = SimRequest {
            tool: &tool,
            arguments: &args,
            user_request: "q",
            history: &[],
            state: None,
        };
        let failure = wm.simulate(req).await.unwrap_err();
        assert!(
            failure
                .message
                .contains("no recorded call of units:convert_angle")
        );
    }

    #[test]
    fn confidence_follows_how_close_the_recalled_call_is() {
        let mut b = TransitionBuffer::default();
        let call = json!({"source": "A", "target": "B", "time": "09:00"});
        b.add("t:convert", call.clone(), obs("ab9"));
        // The same call recorded three times, twice with one result.
        b.add("t:convert", call.clone(), obs("ab9"));
        b.add("t:convert", call.clone(), obs("ab9 (other day)"));
        b.add(
            "t:convert",
            json!({"source": "A", "target": "C", "time": "10:00"}),
            obs("ac10"),
        );
        let exact = b.lookup_without("t:convert", &call, None).unwrap();
        assert_eq!(exact.observation, &obs("ab9"));
        assert!((exact.confidence() - 0.9 * 2.0 / 3.0).abs() < 1e-12);
        // Another call of the tool: 0.1 + 0.6 × the share of argument values in common.
        let near = b
            .lookup_without(
                "t:convert",
                &json!({"source": "A", "target": "C", "time": "11:00"}),
                None,
            )
            .unwrap();
        assert!(!near.exact);
        assert!((near.confidence() - (0.1 + 0.6 * 2.0 / 3.0)).abs() < 1e-12);
        let none = b
            .lookup_without("t:convert", &json!({"x": 1}), None)
            .unwrap();
        assert!((none.confidence() - 0.1).abs() < 1e-12);
    }

    #[test]
    fn the_nearest_calls_are_never_from_the_run_left_out() {
        let mut b = TransitionBuffer::default();
        b.add_recorded("t:f", json!({"x": 1}), obs("from run 0"), 0);
        b.add_recorded("t:f", json!({"x": 2}), obs("from run 1"), 1);
        b.add_recorded("t:f", json!({"x": 9}), obs("far, run 2"), 2);
        let shown = |excluded, k| -> Vec<String> {
            b.nearest("t:f", &json!({"x": 1}), excluded, k)
                .iter()
                .map(|c| c.observation.text.clone())
                .collect()
        };
        assert_eq!(shown(None, 2), ["from run 0", "from run 1"]);
        assert_eq!(shown(Some(0), 5), ["from run 1", "far, run 2"]);
        assert_eq!(shown(Some(1), 1), ["from run 0"]);
        assert!(shown(None, 0).is_empty());
        let mut alone = TransitionBuffer::default();
        alone.add_recorded("t:f", json!({"x": 1}), obs("its own"), 0);
        assert!(
            alone
                .nearest("t:f", &json!({"x": 1}), Some(0), 5)
                .is_empty(),
            "its own result shown"
        );
    }

    #[test]
    fn exact_then_nearest_then_other_server_names() {
        let mut b = TransitionBuffer::default();
        b.add(
            "Time MCP:convert_time",
            json!({"source": "A", "target": "B", "time": "09:00"}),
            obs("ab9"),
        );
        b.add(
            "Time MCP:convert_time",
            json!({"source": "A", "target": "C", "time": "10:00"}),
            obs("ac10"),
        );
        assert_eq!(
            b.lookup(
                "Time MCP:convert_time",
                &json!({"time": "09:00", "target": "B", "source": "A"})
            ),
            Some((&obs("ab9"), true))
        );
        assert_eq!(
            b.lookup(
                "Time MCP:convert_time",
                &json!({"source": "A", "target": "C", "time": "11:00"})
            ),
            Some((&obs("ac10"), false))
        );
        assert_eq!(
            b.lookup(
                "time:convert_time",
                &json!({"source": "A", "target": "B", "time": "09:00"})
            )
            .unwrap()
            .0,
            &obs("ab9")
        );
        assert_eq!(b.lookup("time:get_current_time", &json!({})), None);
    }

    /// Writes a run of `n` calls of `t:f` into `dir/name`.
    fn run_of(dir: &std::path::Path, name: &str, n: usize) -> PathBuf {
        use cosmos_trajectory::synthetic::{self, Spec};
        let path = dir.join(name);
        let mut header = synthetic::header(&Spec::default());
        header.agent.kind = cosmos_trajectory::event::AgentKind::React;
        let mut w = cosmos_trajectory::writer::Writer::create(
            &path,
            &header,
            cosmos_trajectory::redact::Redactor::new(),
            None,
        )
        .unwrap();
        for i in 0..n {
            w.write(
                i as u64,
                EventBody::ToolCalled {
                    step: i as u64 + 1,
                    tool: "t:f".into(),
                    server: None,
                    arguments: Box::new(json!({"x": i})),
                    result: obs(&format!("{name} {i}")),
                    latency_ms: 1,
                    node: None,
                    error: None,
                    origin: None,
                    state_change: None,
                },
            )
            .unwrap();
        }
        path
    }

    /// A run given twice (by its folder, by its path and by a link) is read once; past its
    /// most, the store reads no more.
    #[test]
    fn the_store_reads_each_run_once_and_holds_at_most_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let a = run_of(dir.path(), "a.jsonl", 3);
        let b = run_of(dir.path(), "b.jsonl", 3);
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let given = [dir.path().to_path_buf(), a.clone(), link];
        let store = TransitionBuffer::from_runs(&given).unwrap();
        assert_eq!(store.len(), 6, "a and b once each");
        assert_eq!(store.details()[1].1.as_array().unwrap().len(), 2);
        let bounded = TransitionBuffer::from_runs_within(&[a, b], 4).unwrap();
        assert_eq!(bounded.len(), 4);
    }
}
