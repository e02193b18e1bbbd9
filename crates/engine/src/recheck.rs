//! `cosmos recheck`: a run's recorded real calls made again against today's servers, each
//! compared with its recording by the one fidelity function (`metrics::fidelity::compare`,
//! the recording in the place of the prediction), so a result from last month can be checked
//! against the servers of today. Only calls of tools the server annotates read-only today are
//! made unless the caller allows the rest (the run file's annotations are never trusted: a
//! file edited to call a destructive tool read-only would get it called); what was found is
//! appended to the run (`recheck`).
//!
//! `cosmos recheck`: a run's real calls (`recorded_calls`), those of read-only tools unless
//! `--all` (`partition`, from the annotations the servers give today, never the run file's: the
//! servers are started first), made again in order against today's
//! servers (`recheck`), each compared with its recording by `metrics::fidelity::compare`
//! (`compare`: same, changed, now fails, server gone), appended as a `recheck` event (`append`).
//! `trajectory::describe::recheck_summary` is its one line, in the CLI and the about view.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::mcp::mcp_json::McpConfig;
use crate::mcp::pool::{McpPool, Timeouts};
use crate::metrics::fidelity;
use cosmos_trajectory::event::{
    AgentKind, Drift, EventBody, Header, Observation, RecheckedCall, ToolInfo, own_tool_name,
};
use cosmos_trajectory::reader::EventStream;
use cosmos_trajectory::recorded_call::{OwnedCall, RecordedCall};
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::writer::Writer;

/// A finished run read for a recheck.
pub struct RecordedRun {
    /// Its header.
    pub header: Header,
    /// Its recorded real calls.
    pub calls: Vec<OwnedCall>,
    /// The last event's time.
    pub last_ms: u64,
    /// The lines the reader skipped (as `report` lists them): a call one held is not rechecked.
    pub unreadable: Vec<String>,
}

/// A finished run's header, its recorded real calls, the last event's time and the lines it
/// could not read.
pub fn recorded_calls(path: &Path) -> Result<RecordedRun> {
    let mut stream = EventStream::open(path)?;
    let header = stream.header().clone();
    if header.agent.kind == AgentKind::WmEval {
        bail!("a wm-eval file holds copies of other runs' calls: recheck those runs");
    }
    let mut calls = Vec::new();
    let mut last_ms = 0;
    let mut finished = false;
    while let Some(event) = stream.next_event()? {
        last_ms = last_ms.max(event.t_ms);
        finished |= matches!(event.body, EventBody::RunFinished { .. });
        if let Some(call) = RecordedCall::of(&event.body).filter(|c| !c.is_copy()) {
            calls.push(call.owned(event.seq));
        }
    }
    if !finished {
        // Its writer may still be appending: a line of ours would land among its own.
        bail!("the run has not finished; recheck it when it has");
    }
    let unreadable = stream
        .problems()
        .iter()
        .filter(|p| p.skipped)
        .map(ToString::to_string)
        .collect();
    Ok(RecordedRun {
        header,
        calls,
        last_ms,
        unreadable,
    })
}

/// True when the tool's server annotates it read-only (`readOnlyHint`) in `today`'s catalogue
/// (the tools the servers offer now): making it again changes nothing. A tool no server
/// offers today is not.
pub fn read_only(today: &[ToolInfo], tool: &str) -> bool {
    today
        .iter()
        .find(|t| t.name == tool)
        .is_some_and(ToolInfo::read_only)
}

/// Which recorded calls a recheck takes up (all with `all`, else those of tools read-only by
/// `today`'s catalogue, and those no server offers today, which are found gone without any
/// call) and which it leaves alone.
pub fn partition(today: &[ToolInfo], calls: &[OwnedCall], all: bool) -> (Vec<usize>, Vec<usize>) {
    (0..calls.len()).partition(|&i| {
        let tool = &calls[i].tool;
        all || read_only(today, tool) || !today.iter().any(|t| t.name == *tool)
    })
}

/// How today's outcome of a call compares with its recording.
pub fn compare(recorded: &OwnedCall, today: &Observation, error: Option<&str>) -> RecheckedCall {
    let failed_then = recorded.result.is_error || recorded.error.is_some();
    let failed_now = today.is_error || error.is_some();
    let score = fidelity::compare(&recorded.result, today).score;
    let drift = if failed_now && !failed_then {
        Drift::NowFails
    } else if score >= 1.0 - 1e-9 && failed_now == failed_then {
        Drift::Same
    } else {
        Drift::Changed
    };
    RecheckedCall {
        step: recorded.step,
        tool: recorded.tool.clone(),
        drift,
        fidelity: Some(score),
        result: (drift != Drift::Same).then(|| Box::new(today.clone())),
        error: error.map(str::to_string),
    }
}

fn gone(recorded: &OwnedCall, why: String) -> RecheckedCall {
    RecheckedCall {
        step: recorded.step,
        tool: recorded.tool.clone(),
        drift: Drift::ServerGone,
        fidelity: None,
        result: None,
        error: Some(why),
    }
}

/// The server a recorded call belongs to: the recorded one, else the header's server whose
/// name prefixes the tool.
fn server_of(header: &Header, call: &OwnedCall) -> Option<String> {
    call.server.clone().or_else(|| {
        header
            .servers
            .iter()
            .find(|s| own_tool_name(&call.tool, &s.name).is_some())
            .map(|s| s.name.clone())
    })
}

/// What one run's recheck found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// When the calls were made again.
    pub at: chrono::DateTime<chrono::Utc>,
    /// Each call made again, in order.
    pub calls: Vec<RecheckedCall>,
    /// Steps left alone.
    pub skipped: Vec<u64>,
}

/// Makes the run's calls again, in the run's order, against the servers of `mcp` that the run
/// used (started here, each stateful one on a fresh copy of its state, stopped after): those of
/// tools the servers annotate read-only today, or with `all` every one, after `warn` is told of
/// those that are not read-only. With `all`, a destructive tool of a server without a sandbox
/// refuses the recheck (`mcp::sandbox::refuse_unguarded`).
pub async fn recheck(
    header: &Header,
    calls: &[OwnedCall],
    all: bool,
    warn: &mut (dyn FnMut(&[String]) + Send),
    mcp: &McpConfig,
    timeouts: Timeouts,
) -> anyhow::Result<Found> {
    // Every server the run used is started first: what each says of its tools today decides
    // which calls are made.
    let wanted: BTreeSet<String> = calls.iter().filter_map(|c| server_of(header, c)).collect();
    let mut configs: Vec<_> = mcp
        .servers
        .iter()
        .filter(|s| wanted.contains(&s.name))
        .cloned()
        .collect();
    let _sandboxes = crate::mcp::sandbox::prepare(&mut configs)?;
    let (pool, failures) = McpPool::connect(&configs, timeouts).await;
    let today = pool.tools();
    if all && let Err(refused) = crate::mcp::sandbox::refuse_unguarded(&configs, &today) {
        pool.shutdown().await;
        return Err(refused);
    }
    let (indices, skipped) = partition(&today, calls, all);
    let not_read_only: Vec<String> = indices
        .iter()
        .filter(|&&i| {
            let tool = &calls[i].tool;
            today.iter().any(|t| t.name == *tool) && !read_only(&today, tool)
        })
        .map(|&i| format!("step {} {}", calls[i].step, calls[i].tool))
        .collect();
    if !not_read_only.is_empty() {
        warn(&not_read_only);
    }
    let mut found = Found {
        at: chrono::Utc::now(),
        calls: Vec::new(),
        skipped: skipped.iter().map(|&i| calls[i].step).collect(),
    };
    for i in indices {
        let call = &calls[i];
        let Some(server) = server_of(header, call) else {
            found.calls.push(gone(
                call,
                "the run does not say which server served it".into(),
            ));
            continue;
        };
        if !mcp.servers.iter().any(|s| s.name == server) {
            found.calls.push(gone(
                call,
                format!("server {server} is not in the MCP config"),
            ));
            continue;
        }
        if let Some(f) = failures.iter().find(|f| f.name == server) {
            found.calls.push(gone(
                call,
                format!("server {server} did not start: {}", f.message),
            ));
            continue;
        }
        let (answered_by, outcome) = pool.call(&call.tool, &call.arguments).await;
        if answered_by.is_none() {
            found.calls.push(gone(
                call,
                format!("server {server} no longer offers {}", call.tool),
            ));
            continue;
        }
        found
            .calls
            .push(compare(call, &outcome.result, outcome.error.as_deref()));
    }
    pool.shutdown().await;
    Ok(found)
}

/// Appends what a recheck found to the run at `path`, after its last event.
pub fn append(path: &Path, found: &Found, last_ms: u64, redactor: Redactor) -> Result<()> {
    let mut writer = Writer::append(path, redactor).context("appending the recheck")?;
    writer.write(
        last_ms,
        EventBody::Recheck {
            at: found.at,
            calls: found.calls.clone(),
            skipped: found.skipped.clone(),
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn recorded(text: &str, is_error: bool) -> OwnedCall {
        OwnedCall {
            seq: 5,
            step: 1,
            tool: "s:t".into(),
            server: Some("s".into()),
            arguments: json!({}),
            result: Observation {
                text: text.into(),
                is_error,
                ..Default::default()
            },
            error: None,
            latency_ms: 1,
        }
    }

    fn obs(text: &str, is_error: bool) -> Observation {
        Observation::of_text(text, is_error)
    }

    #[test]
    fn drift_is_read_by_the_one_fidelity_function() {
        let same = compare(
            &recorded("sunny in Lyon", false),
            &obs("sunny in Lyon", false),
            None,
        );
        assert_eq!(
            (same.drift, same.fidelity, same.result),
            (Drift::Same, Some(1.0), None)
        );
        let changed = compare(
            &recorded("sunny in Lyon", false),
            &obs("rain in Lyon", false),
            None,
        );
        assert_eq!(changed.drift, Drift::Changed);
        assert!(changed.fidelity.unwrap() < 1.0);
        assert_eq!(changed.result.unwrap().text, "rain in Lyon");
        let fails = compare(
            &recorded("ok", false),
            &obs("boom", true),
            Some("timed out"),
        );
        assert_eq!(fails.drift, Drift::NowFails);
        assert_eq!(fails.error.as_deref(), Some("timed out"));
        let works = compare(&recorded("boom", true), &obs("ok", false), None);
        assert_eq!(works.drift, Drift::Changed);
    }

    #[test]
    fn a_run_still_being_written_is_not_rechecked() {
        use cosmos_trajectory::event::{AgentInfo, ModelInfo, TaskInfo};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.jsonl");
        let header = Header::new(
            "r",
            TaskInfo::default(),
            AgentInfo {
                kind: AgentKind::React,
                settings: Default::default(),
            },
            ModelInfo::default(),
        );
        let mut writer = Writer::create(&path, &header, Redactor::default(), None).unwrap();
        writer
            .write(
                5,
                EventBody::ToolCalled {
                    step: 1,
                    tool: "s:t".into(),
                    server: Some("s".into()),
                    arguments: Box::new(json!({})),
                    result: obs("ok", false),
                    latency_ms: 1,
                    node: None,
                    error: None,
                    origin: None,
                    state_change: None,
                },
            )
            .unwrap();
        let err = recorded_calls(&path).map(drop).unwrap_err().to_string();
        assert!(err.contains("has not finished"), "{err}");
    }

    #[test]
    fn only_tools_annotated_read_only_are_made_again_by_default() {
        let tool = |name: &str, annotations: Value| ToolInfo {
            name: name.into(),
            annotations: Some(Box::new(annotations)),
            ..Default::default()
        };
        let today = [
            tool("s:a", json!({"readOnlyHint": true})),
            tool("s:b", json!({"readOnlyHint": false})),
            tool("s:c", json!({"destructiveHint": false})),
        ];
        assert!(read_only(&today, "s:a"));
        assert!(!read_only(&today, "s:b"));
        assert!(!read_only(&today, "s:c"));
        // A tool no server offers today is not known to be read-only.
        assert!(!read_only(&today, "s:gone"));
    }
}
