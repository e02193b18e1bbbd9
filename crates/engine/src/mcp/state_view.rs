//! A sandboxed server's state read as named fields (docs/world-models.md, "Worlds with
//! state"), so a change can be counted field by field, a prediction of the state compared with
//! the real one, and a final state with a task's reference.
//!
//! One reader per kind of state, chosen by what the seed's copy is:
//!
//! - **a SQLite database** (a file starting `SQLite format 3`): the field `TABLE` is the
//!   table's `CREATE` statement, and each row is the field `TABLE/KEY` (its primary key's values
//!   joined by `,`, or its `rowid`) holding the row as an object;
//! - **a JSON-lines file** (every non-empty line JSON, as the memory server keeps its graph): a
//!   line with a `name` is the field `TYPE/NAME` (or `NAME` without a `type`); any other line is
//!   the field `TYPE/` followed by the line's canonical JSON without its `type`;
//! - **a JSON document** (a `.json` file holding an object): each top-level key is a field;
//! - **any other file**: each line is the field `line N`;
//! - **a folder** (a directory tree): each file is the field of its relative path, holding its
//!   text (UTF-8, at most [`TEXT_CHARS`] characters) or `{"sha256", "bytes"}`, and each
//!   folder is the field `PATH/` holding `"folder"`;
//! - **a git repository** (a folder holding `.git`): its working tree as a folder (without
//!   `.git`), and `.git/HEAD`, `.git/branches`, `.git/log`, `.git/staged` (see [`read_git`]).
//!
//! A state larger than [`READ_BYTES`] is not read (calls on it are recorded without a change).
//!
//! A sandboxed state read as named fields (one reader per kind: SQLite, JSON
//! lines, a `.json` object, text, a folder, a git repository by the `git` command), `change` (the fields a call added, removed or
//! altered), `apply` and `agreement`. `pool.rs` reads the state around every call to a sandboxed
//! server, one call at a time on it, and puts the change in the `CallOutcome`; wm-eval replays
//! the recorded changes on the header's `start_state`.
//!
//! # State as fields
//!
//! A sandboxed state is read as named fields (`mcp::state_view`), by what the seed's copy is:
//!
//! | state | fields |
//! |---|---|
//! | SQLite database | `TABLE`: its `CREATE` statement; `TABLE/KEY`: a row as an object, `KEY` its primary key's values joined by `,` (or its `rowid`) |
//! | JSON-lines file (the memory server's graph) | `TYPE/NAME` for a line with a `name`; any other line `TYPE/` and its canonical JSON |
//! | `.json` file holding an object | each top-level key |
//! | any other file | `line N` for each line |
//! | folder | each file by relative path, its text (at most 16,384 characters) or `{"sha256", "bytes"}`; a folder `PATH/`; a link, pipe, socket or device by its kind, never followed or opened |
//! | git repository | its working tree as a folder, and `.git/HEAD`, `.git/branches`, `.git/log` (subjects, newest first, up to 200), `.git/staged`; no commit ids or dates |
//!
//! A state over 8 MiB is not read as fields. An observation (real or simulated) is `text` (text
//! items joined; other content a placeholder such as `[image/png, 2048 bytes]`), `structured`
//! (`structuredContent`), `is_error`, and `truncated_bytes` when a huge result was cut.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use cosmos_trajectory::canonical::canonical;
use cosmos_trajectory::event::{FieldChange, StateChange, StateFields};
use cosmos_trajectory::recorded_call::RecordedCall;
use cosmos_trajectory::run::Run;

/// Largest state read as fields, in bytes on disk.
pub const READ_BYTES: u64 = 8 << 20;

/// Longest file text kept as a folder's field; a longer or binary file is its digest.
pub const TEXT_CHARS: usize = 16 << 10;

/// Most bytes of changed fields a recorded [`StateChange`] holds; past that the fields are
/// left out (`cut`), their count kept.
pub const CHANGE_BYTES: usize = 16 << 10;

/// Most bytes of a state recorded whole (a header's `start_state`).
pub const STATE_BYTES: usize = 64 << 10;

/// Reads the state at `root` (the seed's copy: a file or a folder) as fields.
pub fn read(root: &Path) -> Result<StateFields> {
    let size = super::state_tree::size(root)?;
    if size > READ_BYTES {
        bail!("the state is {size} bytes, over the {READ_BYTES} read as fields");
    }
    let meta = std::fs::symlink_metadata(root)
        .with_context(|| format!("reading the state at {}", root.display()))?;
    if meta.is_dir() {
        let mut fields = StateFields::new();
        let repository = root.join(".git").is_dir();
        read_folder(root, root, repository, &mut fields)?;
        if repository {
            read_git(root, &mut fields)?;
        }
        return Ok(fields);
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(super::seed::open_regular(root)?, READ_BYTES),
        &mut bytes,
    )
    .with_context(|| format!("reading {}", root.display()))?;
    if bytes.starts_with(b"SQLite format 3\0") {
        return read_sqlite(root);
    }
    let text = String::from_utf8_lossy(&bytes);
    let document = root.extension().is_some_and(|e| e == "json");
    if document && let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(&text) {
        return Ok(doc.into_iter().collect());
    }
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let parsed: Vec<Value> = lines
        .iter()
        .map_while(|l| serde_json::from_str(l).ok())
        .collect();
    if !lines.is_empty() && parsed.len() == lines.len() {
        return Ok(parsed.into_iter().map(|v| (line_name(&v), v)).collect());
    }
    Ok(text
        .lines()
        .enumerate()
        .map(|(i, l)| (format!("line {}", i + 1), Value::String(l.to_string())))
        .collect())
}

/// The field name of one JSON line (see the module's documentation).
fn line_name(line: &Value) -> String {
    let kind = line.get("type").and_then(Value::as_str);
    match (kind, line.get("name").and_then(Value::as_str)) {
        (Some(kind), Some(name)) => format!("{kind}/{name}"),
        (None, Some(name)) => name.to_string(),
        (kind, None) => {
            let mut rest = line.clone();
            if let Value::Object(m) = &mut rest {
                m.remove("type");
            }
            format!("{}/{}", kind.unwrap_or(""), canonical(&rest))
        }
    }
}

/// Reads the files under `folder` (without the repository's own `.git` when `repository`).
fn read_folder(
    root: &Path,
    folder: &Path,
    repository: bool,
    fields: &mut StateFields,
) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(folder)
        .with_context(|| format!("reading {}", folder.display()))?
        .collect::<std::io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let name = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let kind = entry.file_type()?;
        if repository && name == ".git" {
            continue;
        }
        if kind.is_dir() {
            fields.insert(format!("{name}/"), json!("folder"));
            read_folder(root, &path, repository, fields)?;
        } else if kind.is_file() {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut super::seed::open_regular(&path)?, &mut bytes)?;
            let value = match std::str::from_utf8(&bytes) {
                Ok(text) if text.chars().count() <= TEXT_CHARS => json!(text),
                _ => {
                    use sha2::Digest;
                    json!({"sha256": format!("{:x}", sha2::Sha256::digest(&bytes)), "bytes": bytes.len()})
                }
            };
            fields.insert(name, value);
        } else {
            // Never followed nor opened: a link, or a pipe, socket or device, by its kind.
            let kind = if kind.is_symlink() {
                "symlink"
            } else {
                super::seed::kind_name(&kind).trim_start_matches("a ")
            };
            fields.insert(name, json!(kind));
        }
    }
    Ok(())
}

/// Most commits of a repository's history read as its `.git/log` field.
const LOG_COMMITS: usize = 200;

/// A git repository's own state, by the `git` command (which must be installed; run by
/// `mcp::git::command`, so nothing the repository names runs): `.git/HEAD`
/// (the branch checked out, or `detached`), `.git/branches` (local branches, sorted),
/// `.git/log` (the subjects of HEAD's commits, newest first, up to [`LOG_COMMITS`]) and
/// `.git/staged` (`STATUS PATH` of each staged change). Commit ids and dates are left out:
/// they differ between two runs that make the same commits.
fn read_git(root: &Path, fields: &mut StateFields) -> Result<()> {
    let git = |args: &[&str]| -> Result<Vec<String>> {
        let out = super::git::command(root)
            .args(args)
            .output()
            .context("running git to read a repository's state (is git installed?)")?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect())
    };
    let head = git(&["symbolic-ref", "--short", "-q", "HEAD"])?;
    fields.insert(
        ".git/HEAD".into(),
        json!(head.first().map_or("detached", String::as_str)),
    );
    let mut branches = git(&["for-each-ref", "--format=%(refname:short)", "refs/heads"])?;
    branches.sort();
    fields.insert(".git/branches".into(), json!(branches));
    let limit = format!("--max-count={LOG_COMMITS}");
    fields.insert(
        ".git/log".into(),
        json!(git(&["log", &limit, "--format=%s"])?),
    );
    let staged: Vec<String> = git(&[
        "diff",
        "--cached",
        "--no-ext-diff",
        "--no-textconv",
        "--name-status",
    ])?
    .into_iter()
    .map(|l| l.replace('\t', " "))
    .collect();
    fields.insert(".git/staged".into(), json!(staged));
    Ok(())
}

fn read_sqlite(path: &Path) -> Result<StateFields> {
    use rusqlite::{Connection, OpenFlags, types::ValueRef};
    let db = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("opening the database {}", path.display()))?;
    let mut fields = StateFields::new();
    let tables: Vec<(String, String)> = db
        .prepare(
            "SELECT name, coalesce(sql, '') FROM sqlite_master \
             WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (table, sql) in tables {
        fields.insert(table.clone(), json!(sql));
        let quoted = format!("\"{}\"", table.replace('"', "\"\""));
        // The primary key's columns, in key order; none means the rowid names a row.
        let mut key: Vec<(i64, String)> = db
            .prepare(&format!("PRAGMA table_info({quoted})"))?
            .query_map([], |r| Ok((r.get::<_, i64>(5)?, r.get::<_, String>(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?
            .into_iter()
            .filter(|(pk, _)| *pk > 0)
            .collect();
        key.sort();
        let mut rows = db.prepare(&format!("SELECT rowid AS \"rowid \", * FROM {quoted}"))?;
        let columns: Vec<String> = rows.column_names().map(str::to_string).collect();
        let mut cursor = rows.query([])?;
        while let Some(row) = cursor.next()? {
            let mut object = Map::new();
            for (i, column) in columns.iter().enumerate().skip(1) {
                let value = match row.get_ref(i)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(n) => json!(n),
                    ValueRef::Real(x) => json!(x),
                    ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                    ValueRef::Blob(b) => {
                        use sha2::Digest;
                        json!({"sha256": format!("{:x}", sha2::Sha256::digest(b)), "bytes": b.len()})
                    }
                };
                object.insert(column.clone(), value);
            }
            let name = if key.is_empty() {
                row.get::<_, i64>(0)?.to_string()
            } else {
                key.iter()
                    .map(|(_, c)| match &object[c] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            };
            fields.insert(format!("{table}/{name}"), Value::Object(object));
        }
    }
    Ok(fields)
}

/// What changed from `before` to `after`: every field added, removed or altered, with its
/// values (kept up to `CHANGE_BYTES`).
pub fn change(before: &StateFields, after: &StateFields) -> StateChange {
    let names: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut recorded = StateChange::default();
    let mut bytes = 0;
    for name in names {
        let (was, is) = (before.get(name), after.get(name));
        if was == is {
            continue;
        }
        recorded.fields_changed += 1;
        let field = FieldChange {
            before: was.cloned(),
            after: is.cloned(),
        };
        // The name quoted, a colon and a comma beside the field.
        bytes += name.len() + 4 + serde_json::to_string(&field).map_or(0, |s| s.len());
        if bytes > CHANGE_BYTES {
            recorded.cut = true;
        } else {
            recorded.fields.insert(name.clone(), field);
        }
    }
    recorded
}

/// The fields as one JSON object when it is at most [`STATE_BYTES`] long (a header's
/// `start_state`).
pub fn whole(fields: &StateFields) -> Option<Value> {
    let value = Value::Object(fields.clone().into_iter().collect());
    (value.to_string().len() <= STATE_BYTES).then_some(value)
}

/// The state after `change`, from the state before it (`None` when the change was cut).
pub fn apply(state: &StateFields, change: &StateChange) -> Option<StateFields> {
    let mut after = state.clone();
    apply_in_place(&mut after, change).then_some(after)
}

/// Moves `state` on by `change` in place; false (and `state` left half-moved) when the change
/// was cut, so the state after it is unknown.
pub fn apply_in_place(state: &mut StateFields, change: &StateChange) -> bool {
    if change.cut {
        return false;
    }
    for (name, field) in &change.fields {
        match &field.after {
            Some(v) => state.insert(name.clone(), v.clone()),
            None => state.remove(name),
        };
    }
    true
}

/// A sandboxed server's state just before and just after one real call of a recorded run.
#[derive(Debug, Clone, PartialEq)]
pub struct StateAround {
    /// The server.
    pub server: String,
    /// Its state before the call.
    pub before: StateFields,
    /// Its state after it.
    pub after: StateFields,
}

/// The state around the real call at event `event` of `run`: the state its server began the
/// run with (the header's `start_state`) moved on by the recorded change of each of the
/// server's real calls before it, then by its own. `None` when the event is no call whose
/// change was recorded, the run kept no start state for its server, or a change on the way was
/// cut (the state after it is unknown). Reads the server's earlier calls back from the file.
pub fn around_call(run: &Run, event: usize) -> Option<StateAround> {
    let event_read = run.event(event);
    let call = RecordedCall::of(&event_read.body)?;
    let (server, change) = (call.server?, call.state_change?);
    let before = moved_on(run, server, event)?;
    let after = apply(&before, change)?;
    Some(StateAround {
        server: server.to_string(),
        before,
        after,
    })
}

/// A sandboxed server's state at the start of `run` and at its end, as fields (the start moved
/// on by every recorded change): whether the run changed it is a comparison of these, not of
/// bytes (a file rewritten with one more trailing newline is no change of a field). `None`
/// when the run kept no start state for it, or a change on the way was cut.
pub fn start_and_end(run: &Run, server: &str) -> Option<(StateFields, StateFields)> {
    let end = moved_on(run, server, usize::MAX)?;
    let start = moved_on(run, server, 0)?;
    Some((start, end))
}

/// The state `server` began `run` with (the header's `start_state`) moved on by the recorded
/// change of each of its real calls before event `until` ([`fold_step`]).
fn moved_on(run: &Run, server: &str, until: usize) -> Option<StateFields> {
    let start = run
        .header
        .servers
        .iter()
        .find(|s| s.name == server)?
        .start_state
        .as_deref()?;
    let Value::Object(start) = start else {
        return None;
    };
    let mut state: Option<StateFields> = Some(start.clone().into_iter().collect());
    for step in run
        .steps()
        .iter()
        .take_while(|s| (s.event as usize) < until)
    {
        let event = run.event(step.event as usize);
        if let Some(call) = RecordedCall::of(&event.body)
            && is_servers(call.tool, server)
        {
            state = Some(fold_step(state, call.state_change, None)?);
        }
    }
    state
}

/// Whether a call of `tool` (its `SERVER:TOOL` name) is one of `server`'s: the one rule of
/// every fold of a server's state (a world model's belief, wm-eval's, the views').
pub fn is_servers(tool: &str, server: &str) -> bool {
    cosmos_trajectory::event::own_tool_name(tool, server).is_some()
}

/// The one fold of a server's state by its calls, one call at a time: a simulated call's state
/// is the one predicted (`None` when that is no object); a real call's is the state before
/// moved on by its recorded change (`None`, unknown, after a change that was cut); a call that
/// tells nothing of the state leaves it as it was.
pub fn fold_step(
    state: Option<StateFields>,
    change: Option<&StateChange>,
    predicted: Option<&Value>,
) -> Option<StateFields> {
    match (predicted, change) {
        (Some(Value::Object(p)), _) => Some(p.clone().into_iter().collect()),
        (Some(_), _) => None,
        (None, Some(change)) => state.and_then(|mut s| apply_in_place(&mut s, change).then_some(s)),
        (None, None) => state,
    }
}

/// How many fields of `predicted` and `real` agree, of all the fields either names (1.0 when
/// both are empty): the fidelity of a predicted state.
pub fn agreement(predicted: &StateFields, real: &StateFields) -> f64 {
    let names: std::collections::BTreeSet<&String> = predicted.keys().chain(real.keys()).collect();
    if names.is_empty() {
        return 1.0;
    }
    let equal = names
        .iter()
        .filter(|n| predicted.get(**n) == real.get(**n))
        .count();
    equal as f64 / names.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calls on `server` of `run` whose change was recorded, by event index.
    fn changing_calls(run: &Run, server: &str) -> Vec<usize> {
        run.steps()
            .iter()
            .map(|s| s.event as usize)
            .filter(|&i| {
                RecordedCall::of(&run.event(i).body)
                    .is_some_and(|c| c.server == Some(server) && c.state_change.is_some())
            })
            .collect()
    }

    /// On every stateful sample run (real servers, the local model), server by server: the
    /// state around the first call starts from the recorded start state, and the recorded
    /// changes replayed up to the last call give the end state the run kept beside it.
    #[test]
    fn the_recorded_changes_replayed_give_the_kept_end_state() {
        let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample_runs/stateful");
        let mut checked = 0;
        for entry in std::fs::read_dir(&samples).unwrap() {
            let path = entry.unwrap().path();
            let kept = path.with_extension("state");
            if path.extension().is_none_or(|e| e != "jsonl") || !kept.is_dir() {
                continue;
            }
            let run = Run::open(&path).unwrap();
            for server in &run.header.servers {
                let Some(Value::Object(start)) = server.start_state.as_deref() else {
                    continue;
                };
                let calls = changing_calls(&run, &server.name);
                let (Some(&first), Some(&last)) = (calls.first(), calls.last()) else {
                    continue;
                };
                let start: StateFields = start.clone().into_iter().collect();
                let around = around_call(&run, first).expect("the first call's state");
                assert_eq!(around.before, start, "{}", path.display());
                let around = around_call(&run, last).expect("no change on the way was cut");
                let folder = kept.join(&server.name);
                let root = std::fs::read_dir(&folder)
                    .unwrap()
                    .next()
                    .unwrap()
                    .unwrap()
                    .path();
                assert_eq!(around.after, read(&root).unwrap(), "{}", path.display());
                checked += 1;
            }
        }
        assert!(checked >= 5, "checked {checked} servers' states");
    }

    /// A call whose server kept no start state, or an event that is no call, has no state
    /// around it.
    #[test]
    fn no_state_is_made_up_where_none_was_kept() {
        let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample_runs/stateful");
        let path = std::fs::read_dir(&samples)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.to_string_lossy().contains("_mem_add_person_")
                    && p.extension().is_some_and(|e| e == "jsonl")
            })
            .unwrap();
        let mut run = Run::open(&path).unwrap();
        let call = changing_calls(&run, "memory")[0];
        assert!(around_call(&run, call).is_some());
        assert!(around_call(&run, 0).is_none(), "the first event is no call");
        for server in &mut run.header.servers {
            server.start_state = None;
        }
        assert!(around_call(&run, call).is_none());
    }

    #[test]
    fn a_memory_graph_is_one_field_an_entity_and_one_a_relation() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("memory.jsonl");
        std::fs::write(
            &file,
            concat!(
                r#"{"type":"entity","name":"Ada","entityType":"person","observations":["writes"]}"#,
                "\n",
                r#"{"type":"relation","from":"Ada","to":"Bob","relationType":"knows"}"#,
                "\n"
            ),
        )
        .unwrap();
        let fields = read(&file).unwrap();
        let names: Vec<&str> = fields.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "entity/Ada",
                r#"relation/{"from":"Ada","relationType":"knows","to":"Bob"}"#
            ]
        );
        assert_eq!(fields["entity/Ada"]["entityType"], "person");
    }

    #[test]
    fn a_folder_a_database_and_text_are_read_as_fields() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("files");
        std::fs::create_dir_all(root.join("notes")).unwrap();
        std::fs::write(root.join("notes/a.txt"), "hello").unwrap();
        std::fs::write(root.join("bin"), [0u8, 159, 146, 150]).unwrap();
        let fields = read(&root).unwrap();
        assert_eq!(fields["notes/"], "folder");
        assert_eq!(fields["notes/a.txt"], "hello");
        assert_eq!(fields["bin"]["bytes"], 4);

        let db = dir.path().join("shop.db");
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE item (sku TEXT PRIMARY KEY, qty INTEGER);
             INSERT INTO item VALUES ('a1', 3);
             CREATE TABLE log (line TEXT); INSERT INTO log VALUES ('x');",
        )
        .unwrap();
        drop(c);
        let fields = read(&db).unwrap();
        assert_eq!(fields["item/a1"], json!({"sku": "a1", "qty": 3}));
        assert_eq!(fields["log/1"], json!({"line": "x"}));
        assert!(fields["item"].as_str().unwrap().starts_with("CREATE TABLE"));

        let text = dir.path().join("t.txt");
        std::fs::write(&text, "one\ntwo\n").unwrap();
        assert_eq!(read(&text).unwrap()["line 2"], "two");
    }

    #[test]
    fn a_change_counts_each_field_added_removed_or_altered_and_applies_back() {
        let before: StateFields = [("a", json!(1)), ("b", json!(2)), ("c", json!(3))]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let mut after = before.clone();
        after.remove("a");
        after.insert("b".into(), json!(20));
        after.insert("d".into(), json!(4));
        let change = change(&before, &after);
        assert_eq!(change.fields_changed, 3);
        assert_eq!(change.fields["a"].after, None);
        assert_eq!(change.fields["b"].before, Some(json!(2)));
        assert_eq!(apply(&before, &change).unwrap(), after);
        assert_eq!(agreement(&before, &after), 1.0 / 4.0);
        assert_eq!(agreement(&StateFields::new(), &StateFields::new()), 1.0);
        let same = super::change(&before, &before);
        assert_eq!((same.fields_changed, same.fields.len()), (0, 0));
    }

    #[test]
    fn a_big_change_keeps_its_count_and_is_cut() {
        let after: StateFields = (0..2_000)
            .map(|i| (format!("row/{i}"), json!("x".repeat(40))))
            .collect();
        let change = change(&StateFields::new(), &after);
        assert_eq!(change.fields_changed, 2_000);
        assert!(change.cut && change.fields.len() < 2_000);
        assert!(serde_json::to_string(&change).unwrap().len() < CHANGE_BYTES + 1024);
        assert_eq!(apply(&StateFields::new(), &change), None);
    }
}
