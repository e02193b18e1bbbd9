//! Transition datasets (`cosmos export transitions`): one training example per real tool call
//! of the runs, for the people who write world models. The example's input is exactly what
//! the `llm` world model is sent to simulate that call (`world_model::simulation_messages`,
//! the one builder of it: the tool, its schema, the arguments, the user's request, the real
//! steps before it); its target is the real result, in the reply format that world model is
//! asked for. Examples are deduplicated (the same input once), redacted, and with `--split`
//! divided by task, so no task is on both sides; a datasheet says what is in them.
//!
//! # Transitions
//!
//! One example per real tool call of the runs (`tool_called` events; wm-eval files are skipped).
//! The example's input is exactly what the `llm` world model sends to simulate that call: its
//! system prompt, then the tool's name, description and input schema, the arguments, the user's
//! request and the run's real steps before the call (`world_model::simulation_messages`
//! builds both; a test checks the world model's HTTP requests equal the examples' inputs). No
//! recorded example of the tool is included: a trained world model should not need one. The
//! target is the real result in the reply format that world model is asked for:
//! `{"is_error": bool, "content": "the server's text"}` (a transport error is an error result
//! with its message).
//!
//! - `--format chat` (default): `{"messages": [system, user, assistant], "meta": {...}}`, the
//!   assistant's content being the target as a JSON string: the chat format fine-tuning tools
//!   take.
//! - `--format jsonl`: `{"prompt": [system, user], "completion": {target}, "meta": {...}}`.
//! - `meta`: `task`, `tool`, `server`, `source` (`FILE#seq` of the call).
//! - Deduplicated: the same input is written once (its first real result is the target).
//! - `--split S`: a share `S` of the tasks (a stable hash of the task id, the same on every
//!   machine) goes to `test.jsonl`, the rest to `train.jsonl`: never a task on both sides.
//! - Redacted: the built-in redaction rules and the keys in `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`
//!   and `HF_TOKEN`, should one have reached a run's text.
//! - `datasheet.md`: examples per side, real calls seen and duplicates dropped, the error share,
//!   the tasks on each side, examples and errors per server and tool, the source files, and any
//!   file that could not be read.
//! - Whole or not at all: each file is written under a random name beside it and renamed when
//!   the export is done, so an export cut off (an error, Ctrl-C) leaves the folder's last dataset as it was; an
//!   export without `--split` removes an earlier `test.jsonl`, which its datasheet would not
//!   count. `markdown -o FILE` and `json -o FILE` are written the same way.
//!
//! The loop from runs to a better world model is in
//! [world-models.md](world-models.md#training-a-world-model-on-your-runs).

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use cosmos_engine::wm_eval::{CallInContext, StateFold, recorded_calls};
use cosmos_engine::world_model::SimRequest;
use cosmos_engine::world_model::{Grounding, simulation_messages, simulation_reply};
use cosmos_trajectory::out_file::Staged;
use cosmos_trajectory::redact::Redactor;

/// How an example is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    /// `{"messages": [system, user, assistant]}`: the chat format fine-tuning tools take.
    #[default]
    Chat,
    /// `{"prompt": [system, user], "completion": {...}}`: input and target apart.
    Jsonl,
}

/// What to export and where.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Run files or folders.
    pub paths: Vec<PathBuf>,
    /// The folder written.
    pub out: PathBuf,
    /// How examples are written.
    pub format: Format,
    /// Share of tasks held out as `test.jsonl` (0: everything in `train.jsonl`).
    pub split: f64,
}

/// What was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// Examples in `train.jsonl`.
    pub train: usize,
    /// Examples in `test.jsonl`.
    pub test: usize,
    /// Real calls seen, before deduplication.
    pub calls: usize,
    /// Files that could not be read, with why.
    pub skipped: Vec<String>,
}

/// One example: the world model's input for a call (its server's state before it, from
/// `fold`) and the real result as its reply.
pub fn example(call: &CallInContext, format: Format, fold: &mut StateFold) -> Value {
    let state = fold.before(call);
    let req = SimRequest {
        tool: &call.tool,
        arguments: &call.arguments,
        user_request: &call.request,
        history: call.history(),
        state: state.as_ref(),
    };
    let input = serde_json::to_value(simulation_messages(&req, &Grounding::default()))
        .unwrap_or(Value::Null);
    let target = simulation_reply(&call.real);
    let meta = json!({
        "task": &*call.task,
        "tool": call.tool.name,
        "server": call.server,
        "source": format!("{}#{}", call.run.display(), call.seq),
    });
    match format {
        Format::Chat => {
            let mut messages = input.as_array().cloned().unwrap_or_default();
            messages.push(json!({"role": "assistant", "content": target.to_string()}));
            json!({"messages": messages, "meta": meta})
        }
        Format::Jsonl => json!({"prompt": input, "completion": target, "meta": meta}),
    }
}

/// True when a task goes to the held-out side: a stable hash of its id against the share, so
/// every call of a task lands on the same side, on every machine.
fn held_out(task: &str, split: f64) -> bool {
    let hash = cosmos_trajectory::fnv::fnv1a(task.as_bytes());
    (hash % 10_000) as f64 / 10_000.0 < split
}

/// Writes `train.jsonl` (and `test.jsonl` with a split) and `datasheet.md` into `spec.out`.
pub fn export(spec: &Spec, redactor: &Redactor) -> Result<Written> {
    if !(0.0..1.0).contains(&spec.split) {
        bail!("--split {}: must be from 0 to below 1", spec.split);
    }
    let (calls, skipped) = recorded_calls(&spec.paths)?;
    std::fs::create_dir_all(&spec.out)
        .with_context(|| format!("creating {}", spec.out.display()))?;
    // Written beside their names and renamed at the end: a cut-off export leaves the last
    // whole dataset as it was.
    let open = |name: &str| Staged::create(&spec.out.join(name));
    let mut train = open("train.jsonl")?;
    let mut test = if spec.split > 0.0 {
        Some(open("test.jsonl")?)
    } else {
        None
    };
    let mut seen = HashSet::new();
    let mut sheet = Sheet::default();
    let mut written = Written {
        train: 0,
        test: 0,
        calls: calls.len(),
        skipped,
    };
    let mut fold = StateFold::default();
    for call in &calls {
        let mut value = example(call, spec.format, &mut fold);
        redactor.redact(&mut value);
        // The same input once: the first real result given for it is the target.
        let input_key = match spec.format {
            Format::Chat => value["messages"]
                .as_array()
                .map(|m| Value::from(m[..m.len().saturating_sub(1)].to_vec()).to_string())
                .unwrap_or_default(),
            Format::Jsonl => value["prompt"].to_string(),
        };
        if !seen.insert(input_key) {
            sheet.duplicates += 1;
            continue;
        }
        let held = test.is_some() && held_out(&call.task, spec.split);
        let side = if held { "test" } else { "train" };
        sheet.count(call, side);
        let file = match (&mut test, held) {
            (Some(t), true) => {
                written.test += 1;
                t
            }
            _ => {
                written.train += 1;
                &mut train
            }
        };
        let out = file.writer();
        serde_json::to_writer(&mut *out, &value)?;
        out.write_all(b"\n")?;
    }
    let mut datasheet = open("datasheet.md")?;
    datasheet
        .writer()
        // Names and task ids are the servers' and the runs' text: made inert, as on a terminal.
        .write_all(cosmos_trajectory::sanitize::inert(&sheet.render(spec, &written)).as_bytes())?;
    train.finish()?;
    match test {
        Some(t) => t.finish()?,
        // A test set of an earlier export with a split would not match this datasheet.
        None => match std::fs::remove_file(spec.out.join("test.jsonl")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).context("removing the earlier export's test.jsonl");
            }
            _ => {}
        },
    }
    datasheet.finish()?;
    Ok(written)
}

/// Counts for the datasheet.
#[derive(Default)]
struct Sheet {
    /// (server, tool) → (examples, errors).
    tools: BTreeMap<(String, String), (usize, usize)>,
    /// Side → tasks on it.
    tasks: BTreeMap<&'static str, std::collections::BTreeSet<String>>,
    sources: std::collections::BTreeSet<PathBuf>,
    errors: usize,
    duplicates: usize,
}

impl Sheet {
    fn count(&mut self, call: &CallInContext, side: &'static str) {
        let key = (
            call.server.clone().unwrap_or_else(|| "(no server)".into()),
            call.tool.name.clone(),
        );
        let entry = self.tools.entry(key).or_default();
        entry.0 += 1;
        if call.real.is_error {
            entry.1 += 1;
            self.errors += 1;
        }
        self.tasks
            .entry(side)
            .or_default()
            .insert(call.task.to_string());
        self.sources.insert(call.run.clone());
    }

    fn render(&self, spec: &Spec, w: &Written) -> String {
        let total = w.train + w.test;
        let mut s = String::from("# Transition dataset\n\n");
        s.push_str(&format!(
            "One example per real tool call: the `llm` world model's input for the call, and the \
             real result as its reply (`{{\"is_error\", \"content\"}}`). Format `{:?}`.\n\n",
            spec.format
        ));
        s.push_str(&format!(
            "- examples: {total} (train {}, test {}), from {} real calls ({} duplicates of an \
             input dropped)\n",
            w.train, w.test, w.calls, self.duplicates
        ));
        let share = if total == 0 {
            0.0
        } else {
            self.errors as f64 / total as f64
        };
        s.push_str(&format!(
            "- error share: {:.1}% ({} of {total})\n",
            share * 100.0,
            self.errors
        ));
        for (side, tasks) in &self.tasks {
            s.push_str(&format!(
                "- {side} tasks ({}): {}\n",
                tasks.len(),
                tasks.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        if spec.split > 0.0 {
            s.push_str(&format!(
                "- split by task (held out: a stable hash of the task id below {}), never a task \
                 on both sides\n",
                spec.split
            ));
        }
        s.push_str("\n| server | tool | examples | errors |\n|---|---|---:|---:|\n");
        for ((server, tool), (n, errors)) in &self.tools {
            let cell = |text: &str| text.replace('|', "\\|");
            s.push_str(&format!(
                "| {} | {} | {n} | {errors} |\n",
                cell(server),
                cell(tool)
            ));
        }
        s.push_str(&format!("\n## Sources ({})\n\n", self.sources.len()));
        for source in &self.sources {
            s.push_str(&format!("- {}\n", source.display()));
        }
        if !w.skipped.is_empty() {
            s.push_str("\n## Skipped\n\n");
            for why in &w.skipped {
                s.push_str(&format!("- {why}\n"));
            }
        }
        s
    }
}

/// `out` must not be a file: a folder is written.
pub fn check_out(out: &Path) -> Result<()> {
    if out.is_file() {
        bail!("{} is a file; --out names a folder", out.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool name is the server's text: its escape sequence reaches the datasheet inert, and
    /// a `|` in it does not break the table.
    #[test]
    fn the_datasheet_holds_no_escape_sequence_a_tool_name_carried() {
        let dir = tempfile::tempdir().unwrap();
        let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../sample_runs/20261202T025240.637Z_time_mcp_000_react_none.jsonl");
        let text = std::fs::read_to_string(sample)
            .unwrap()
            .replace("convert_time", r"convert\u001b]0;pwned\u0007|time");
        let runs = dir.path().join("runs");
        std::fs::create_dir(&runs).unwrap();
        std::fs::write(runs.join("planted.jsonl"), text).unwrap();
        let spec = Spec {
            paths: vec![runs],
            out: dir.path().join("out"),
            format: Format::Chat,
            split: 0.0,
        };
        export(&spec, &Redactor::new()).unwrap();
        let sheet = std::fs::read_to_string(dir.path().join("out/datasheet.md")).unwrap();
        assert!(
            !sheet.contains('\u{1b}') && !sheet.contains('\u{7}'),
            "{sheet:?}"
        );
        assert!(sheet.contains("\\u{1b}]0;pwned\\u{7}\\|time"), "{sheet}");
    }

    #[test]
    fn a_split_out_of_range_and_an_out_that_is_a_file_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let spec = |split| Spec {
            paths: vec![dir.path().to_path_buf()],
            out: dir.path().join("out"),
            format: Format::Chat,
            split,
        };
        for split in [-0.1, 1.0, f64::NAN] {
            let err = export(&spec(split), &Redactor::new())
                .unwrap_err()
                .to_string();
            assert!(err.contains("--split"), "{err}");
        }
        assert!(
            !dir.path().join("out").exists(),
            "nothing written for a refused split"
        );
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        assert!(
            check_out(&file)
                .unwrap_err()
                .to_string()
                .contains("is a file")
        );
        assert!(check_out(dir.path()).is_ok());
    }

    #[test]
    fn a_task_is_held_out_the_same_way_every_time_and_the_share_is_near_the_split() {
        let held = (0..1000)
            .filter(|i| held_out(&format!("task_{i}"), 0.25))
            .count();
        assert!((200..300).contains(&held), "{held}");
        assert_eq!(held_out("time_mcp_000", 0.5), held_out("time_mcp_000", 0.5));
        assert!(!held_out("time_mcp_000", 0.0));
    }
}
