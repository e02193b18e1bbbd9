//! `cosmos fork`'s reading of the original run (docs/design.md, "Recheck and forks"): its header, every call
//! it recorded, and the fork point checked against them, made into the
//! `agent::fork::ForkPlan` the session runs. The file is read once, in one
//! pass, whatever its size: the history is built here, never per step.
//!
//! `cosmos fork`: the original read once (`Original::read`: header, every recorded call, the steps
//! a world model answered), the fork point checked (`plan`: within the run, after no simulated
//! step) and made into the `agent::fork::ForkPlan` the session runs. Invariant: no metric counts a
//! copy (`tool_called` with `origin`) or a `call_simulated`: `Run::steps`, `RunAccumulator`,
//! `RunFacts` and the memory world model skip copies; `Run::replayed` keeps them for the judge,
//! which reads them with the real calls (`Run::calls_with_replayed`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::agent::fork::{ForkPlan, OnMiss};
use cosmos_trajectory::event::{AgentKind, EventBody, ForkOf, Header};
use cosmos_trajectory::reader::{EventStream, Problem};
use cosmos_trajectory::recorded_call::{OwnedCall, RecordedCall};

/// A recorded run, read for forking.
#[derive(Debug)]
pub struct Original {
    /// Its file, as given.
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// Every call it recorded as made (its own, and the ones it replayed itself), in step
    /// order.
    pub calls: std::sync::Arc<[OwnedCall]>,
    /// Steps a world model answered in place of a call (a fork's `call_simulated`).
    pub simulated_steps: Vec<u64>,
    /// Lines that could not be read, skipped: a step they held is not in `calls`.
    pub unreadable: Vec<Problem>,
}

/// How the fork's calls after the fork point are answered (`--tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tools {
    /// By the real servers.
    Real,
    /// From the original's recording, a miss going where `OnMiss` says.
    Recorded(OnMiss),
}

impl Original {
    /// Reads `path`. Lines the reader cannot use are skipped as everywhere (a torn last line of
    /// a run that was killed included); a wm-eval file is refused (it is no run).
    pub fn read(path: &Path) -> Result<Self> {
        let mut stream =
            EventStream::open(path).with_context(|| format!("reading {}", path.display()))?;
        let header = stream.header().clone();
        if header.agent.kind == AgentKind::WmEval {
            bail!(
                "{} is a wm-eval file, not a run: fork one of the runs it copied",
                path.display()
            );
        }
        let mut calls = Vec::new();
        let mut simulated_steps = Vec::new();
        while let Some(event) = stream.next_event()? {
            if let Some(call) = RecordedCall::of(&event.body) {
                calls.push(call.owned(event.seq));
            } else if let EventBody::CallSimulated { step, .. } = event.body {
                simulated_steps.push(step);
            }
        }
        // Steps are written in order; a file that is not is put in order, so the history is a
        // prefix.
        calls.sort_by_key(|c| c.step);
        let unreadable = stream
            .problems()
            .iter()
            .filter(|p| p.skipped)
            .cloned()
            .collect();
        Ok(Self {
            path: path.to_path_buf(),
            header,
            calls: calls.into(),
            simulated_steps,
            unreadable,
        })
    }

    /// The last step the run took (0 for none).
    pub fn last_step(&self) -> u64 {
        self.calls
            .iter()
            .map(|c| c.step)
            .chain(self.simulated_steps.iter().copied())
            .max()
            .unwrap_or(0)
    }

    /// The fork that decides afresh from step `at` (1 replays nothing), its calls answered as
    /// `tools` says.
    pub fn plan(&self, at: u64, tools: Tools) -> Result<ForkPlan> {
        let last = self.last_step();
        if at == 0 || at > last + 1 {
            bail!(
                "--at {at}: {} has steps 1 to {last}; a fork starts at one of them, or at {} to \
                 go on after the last",
                self.path.display(),
                last + 1
            );
        }
        if let Some(step) = self.simulated_steps.iter().find(|&&s| s < at) {
            bail!(
                "--at {at}: step {step} of {} was answered by a world model, not a server, so it \
                 cannot be replayed as a real step; fork at {step} or earlier",
                self.path.display()
            );
        }
        // A step the file lost (an unreadable line held it) cannot be replayed: refused, never
        // skipped, so the fork's history is the original's.
        if let Some(lost) = (1..at).find(|s| {
            !self.simulated_steps.contains(s)
                && self.calls.binary_search_by_key(s, |c| c.step).is_err()
        }) {
            let why = match self.unreadable.first() {
                Some(p) => format!(
                    "{} line(s) could not be read (line {}: {})",
                    self.unreadable.len(),
                    p.line,
                    p.reason
                ),
                None => "no line records it".to_string(),
            };
            bail!(
                "--at {at}: step {lost} of {} is not in the file: {why}; fork at {lost} or \
                 earlier, or mend the file (cosmos validate names its lines)",
                self.path.display()
            );
        }
        // Calls are in step order, so the history is a prefix of them.
        let history_len = self.calls.partition_point(|c| c.step < at);
        let (recorded, offline) = match tools {
            Tools::Real => (None, None),
            Tools::Recorded(on_miss) => (
                Some(on_miss),
                (on_miss != OnMiss::Real)
                    .then(|| (self.header.tools.clone(), self.header.servers.clone())),
            ),
        };
        Ok(ForkPlan {
            of: ForkOf {
                run_id: self.header.run_id.clone(),
                file: self.path.display().to_string(),
                step: at,
            },
            calls: self.calls.clone(),
            history_len,
            recorded,
            offline,
        })
    }

    /// The servers the run used, by name (a fork started against real servers starts these).
    pub fn servers(&self) -> Vec<String> {
        self.header.servers.iter().map(|s| s.name.clone()).collect()
    }
}
