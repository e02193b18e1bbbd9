//! Tasks (docs/guide.md, "Running a task"): the project's own task files and MCP-Bench's runner format,
//! read as they are.
//!
//! Own format (JSON): one task object, or `{"tasks": [...]}`:
//!
//! ```json
//! {"id": "tz_1", "request": "What time is it in Tokyo?", "reference": "…",
//!  "dependency_analysis": "one call; nothing depends on another",
//!  "reference_calls": [{"tool": "Time MCP:get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}],
//!  "servers": ["Time MCP"]}
//! ```
//!
//! A task over servers that keep state may say what it should leave behind, per server, as
//! fields of that server's state (docs/trajectory-format.md, "State as fields"):
//! `"expected_state": {"memory": {"entity/Ada": {"entityType": "person"}, "entity/Bob": null}}`.
//!
//! MCP-Bench runner format: `{"server_tasks": [{"servers": [...], "tasks": [{"task_id",
//! "fuzzy_description", "task_description", "dependency_analysis", ...}]}]}`; the agent gets
//! `fuzzy_description`, the judge `task_description` and `dependency_analysis` as well.
//!
//! The project's task files and MCP-Bench's runner format, read as they are.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::{Map, Value};

use cosmos_trajectory::event::TaskInfo;

/// A task to run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Task {
    /// Id.
    pub id: String,
    /// What the agent is asked.
    pub request: String,
    /// What the judge compares against.
    pub reference: Option<String>,
    /// Tool calls of a reference solution, when known.
    pub reference_calls: Option<Vec<Value>>,
    /// How the task's calls depend on each other (MCP-Bench `dependency_analysis`): for the
    /// judge only.
    pub dependency_analysis: Option<String>,
    /// Names of the MCP servers the task needs (looked up in the MCP config).
    pub servers: Vec<String>,
    /// Where it came from.
    pub source: String,
    /// The state it should leave, by server: fields and their expected values
    /// (`metrics::state_match`).
    pub expected_state: BTreeMap<String, Map<String, Value>>,
}

impl Task {
    /// The header's task section.
    pub fn info(&self) -> TaskInfo {
        TaskInfo {
            id: self.id.clone(),
            request: self.request.clone(),
            reference: self.reference.clone(),
            dependency_analysis: self.dependency_analysis.clone(),
            reference_call_count: self.reference_calls.as_ref().map(|c| c.len() as u32),
            source: Some(self.source.clone()),
            expected_state: self.expected_state.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OwnTask {
    id: String,
    request: String,
    reference: Option<String>,
    reference_calls: Option<Vec<Value>>,
    dependency_analysis: Option<String>,
    #[serde(default)]
    servers: Vec<String>,
    #[serde(default)]
    expected_state: BTreeMap<String, Map<String, Value>>,
}

#[derive(Deserialize)]
struct BenchFile {
    server_tasks: Vec<BenchGroup>,
}

#[derive(Deserialize)]
struct BenchGroup {
    #[serde(default)]
    servers: Vec<String>,
    #[serde(default)]
    server_name: Option<String>,
    tasks: Vec<BenchTask>,
}

#[derive(Deserialize)]
struct BenchTask {
    task_id: String,
    fuzzy_description: String,
    task_description: Option<String>,
    dependency_analysis: Option<String>,
}

/// Every task in a file, in file order.
pub fn load(path: &Path) -> Result<Vec<Task>> {
    let text = cosmos_trajectory::small_file::read_string_within(
        path,
        cosmos_trajectory::small_file::TASKS_BYTES,
    )
    .with_context(|| format!("reading task file {}", path.display()))?;
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("task file {} is not JSON", path.display()))?;
    let source = path.display().to_string();
    let tasks: Vec<Task> = if value.get("server_tasks").is_some() {
        let file: BenchFile = serde_json::from_value(value)
            .with_context(|| format!("{source}: not MCP-Bench's runner format"))?;
        file.server_tasks
            .into_iter()
            .flat_map(|g| {
                // Older files name the servers only in server_name, joined with '+'.
                let servers = if g.servers.is_empty() {
                    g.server_name
                        .map(|n| n.split('+').map(|s| s.trim().to_string()).collect())
                        .unwrap_or_default()
                } else {
                    g.servers
                };
                let source = source.clone();
                g.tasks.into_iter().map(move |t| Task {
                    id: t.task_id,
                    request: t.fuzzy_description,
                    reference: t.task_description,
                    reference_calls: None,
                    dependency_analysis: t.dependency_analysis,
                    servers: servers.clone(),
                    source: source.clone(),
                    expected_state: BTreeMap::new(),
                })
            })
            .collect()
    } else {
        let list: Vec<OwnTask> = match value.get("tasks") {
            Some(tasks) => serde_json::from_value(tasks.clone()),
            None => serde_json::from_value(value).map(|t| vec![t]),
        }
        .with_context(|| format!("{source}: expected a task {{id, request, …}}, {{\"tasks\": [...]}} or MCP-Bench's runner format"))?;
        list.into_iter()
            .map(|t| Task {
                id: t.id,
                request: t.request,
                reference: t.reference,
                reference_calls: t.reference_calls,
                dependency_analysis: t.dependency_analysis,
                servers: t.servers,
                source: source.clone(),
                expected_state: t.expected_state,
            })
            .collect()
    };
    refuse_duplicate_ids(&tasks, &source)?;
    Ok(tasks)
}

/// Two tasks with one id would make `--task-id` pick one silently and a sweep's cells collide.
fn refuse_duplicate_ids(tasks: &[Task], source: &str) -> Result<()> {
    let mut seen: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (i, t) in tasks.iter().enumerate() {
        seen.entry(t.id.as_str()).or_default().push(i + 1);
    }
    let mut repeated: Vec<(&str, Vec<usize>)> =
        seen.into_iter().filter(|(_, at)| at.len() > 1).collect();
    repeated.sort();
    if let Some((id, at)) = repeated.first() {
        let places: Vec<String> = at.iter().map(usize::to_string).collect();
        bail!(
            "{source}: task id {id:?} is given to {} tasks (tasks {} in file order); ids must be unique{}",
            at.len(),
            places.join(", "),
            if repeated.len() > 1 {
                format!(" ({} more ids repeat)", repeated.len() - 1)
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// The task with `id`, or the only task when `id` is `None`.
pub fn select(tasks: Vec<Task>, id: Option<&str>, path: &Path) -> Result<Task> {
    let ids = || {
        tasks
            .iter()
            .map(|t| t.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match id {
        Some(id) => {
            let listing = ids();
            tasks.into_iter().find(|t| t.id == id).with_context(|| {
                format!("no task \"{id}\" in {}; it has: {listing}", path.display())
            })
        }
        None if tasks.len() == 1 => Ok(tasks.into_iter().next().expect("one task")),
        None if tasks.is_empty() => bail!("{} has no tasks", path.display()),
        None => bail!(
            "{} has {} tasks; pick one with --task-id ({})",
            path.display(),
            tasks.len(),
            ids()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_given_twice_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.json");
        std::fs::write(
            &path,
            r#"{"tasks": [{"id": "a", "request": "x"}, {"id": "b", "request": "y"}, {"id": "a", "request": "z"}]}"#,
        )
        .unwrap();
        let err = format!("{:#}", load(&path).unwrap_err());
        assert!(
            err.contains("\"a\" is given to 2 tasks (tasks 1, 3"),
            "{err}"
        );
    }

    #[test]
    fn reads_the_mcp_bench_sample() {
        let path = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/mcp-bench/single_server_time_unit.json"
        ));
        let tasks = load(path).unwrap();
        assert_eq!(tasks.len(), 4);
        let t = select(tasks, Some("time_mcp_000"), path).unwrap();
        assert_eq!(t.servers, vec!["Time MCP"]);
        assert!(t.request.starts_with("Hey, I’m trying to schedule"));
        assert!(t.reference.unwrap().len() > 100);
        assert!(
            t.dependency_analysis
                .is_some_and(|d| d.contains("convert_time")),
            "the judge's dependency analysis is read"
        );
    }

    #[test]
    fn own_format_single_and_list() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        std::fs::write(&p, r#"{"id": "a", "request": "q", "reference_calls": [{"tool": "s:t"}], "servers": ["s"]}"#).unwrap();
        let t = select(load(&p).unwrap(), None, &p).unwrap();
        assert_eq!(t.info().reference_call_count, Some(1));
        std::fs::write(
            &p,
            r#"{"tasks": [{"id": "a", "request": "q"}, {"id": "b", "request": "r"}]}"#,
        )
        .unwrap();
        let err = format!("{:#}", select(load(&p).unwrap(), None, &p).unwrap_err());
        assert!(err.contains("pick one with --task-id (a, b)"), "{err}");
        let err = format!(
            "{:#}",
            select(load(&p).unwrap(), Some("z"), &p).unwrap_err()
        );
        assert!(err.contains("it has: a, b"), "{err}");
    }
}
