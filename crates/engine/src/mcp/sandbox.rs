//! Per-run sandboxes for servers that keep state. An entry that declares
//! `"cosmos": {"state": {"seed": PATH}}` is given, before each run, a fresh folder holding a copy
//! of the seed under its own name; `${COSMOS_STATE_DIR}` in its `args`, `env` and `cwd` names
//! that folder. Two runs of a task so start from byte-identical state, and no run touches the
//! seed. The state's digest is taken at the start and at the end; the end state is kept beside
//! the run (`STEM.state/SERVER/`) when it is small enough.
//!
//! A server that marks a tool destructive (`destructiveHint: true`, its own annotation) and has
//! neither a sandbox nor `"cosmos": {"live_state": true}` is refused at start
//! ([`refuse_unguarded`]): a run must not destroy real data by accident.
//!
//! Per-run copies of a stateful server's state (`"cosmos": {"state": {"seed"}}`):
//! `prepare` copies the seed (or unpacks a `.tar` one) into a fresh folder and fills `${COSMOS_STATE_DIR}` in the entry
//! (`mcp_json.rs` leaves that variable unexpanded), `digest` (SHA-256 over the files in path
//! order), `finish` (end digests, the end state kept as `STEM.state/SERVER/`), and
//! `refuse_unguarded` (a tool its server marks destructive needs a sandbox or `live_state`).
//! Used by `agent::session::prepare` (runs, sweep cells, forks), `recheck`, `cosmos servers`,
//! probes and the proxy (one copy shared by its sessions, each recording where it found and
//! left it). Invariant: no server cosmos starts sees a seed or an unfilled
//! `${COSMOS_STATE_DIR}` (`server.rs` refuses to start one).
//!
//! # A run's state
//!
//! **State.** A server that keeps state can get a fresh copy of a seed for every run: its entry
//! names the seed (a file, a folder, or a `.tar`) and the copy with `${COSMOS_STATE_DIR}`:
//! `"memory": {"command": "mcp-server-memory", "env": {"MEMORY_FILE_PATH":
//! "${COSMOS_STATE_DIR}/memory.jsonl"}, "cosmos": {"state": {"seed": "state/memory.jsonl"}}}`. The
//! seed is never touched, so two runs start from byte-identical state. A seed holds files and
//! folders only (no link, pipe, socket or device; 1 GiB at most), and nothing in it runs: git hooks
//! and every `.git/config` key but layout and author are removed from the copy (the header's
//! `seed_removed` says what went). The copy lives in a new owner-only `cosmos-state-XXXXXX/` folder,
//! removed when the run ends. The header records each server's `start_digest` and state as fields,
//! each call its `state_change`, `run_finished` the `end_digest`, and the end state is kept as
//! `STEM.state/SERVER/` (up to 64 MiB). `cosmos proxy` keeps one copy for as long as it runs, shared
//! by its sessions. A fork's replayed steps are not made again, so its copy lacks their changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::mcp_json::{STATE_DIR_VAR, ServerConfig, Transport};
use super::sandbox_home::Home;
use super::state_tree::{digest, size};
use cosmos_trajectory::event::{ToolInfo, own_tool_name};

/// Most bytes of end state kept beside a run; a larger state is kept as its digest alone.
pub const KEEP_BYTES: u64 = 64 << 20;

/// One stateful server's copy of its state for one run; the folder goes when this does
/// (`mcp::sandbox_home`: private, unpredictable, and cleaned up later if cosmos is killed).
#[derive(Debug)]
pub struct Sandbox {
    /// The server's name.
    pub server: String,
    /// The folder `${COSMOS_STATE_DIR}` names.
    pub dir: PathBuf,
    /// The seed's copy in it (a file or a folder): the state.
    pub root: PathBuf,
    /// The state's digest before the run.
    pub start_digest: String,
    /// The state before the run as fields, when it could be read and is small
    /// (`mcp::state_view::whole`).
    pub start_state: Option<serde_json::Value>,
    /// What was taken out of the seed's copy because it names a program (`mcp::seed_git`).
    pub removed: Vec<String>,
    _home: Home,
}

/// Gives each server of `servers` that declares a state a fresh copy of its seed, and puts the
/// copy's folder in its entry wherever `${COSMOS_STATE_DIR}` stands. What a killed cosmos left
/// behind is removed first (once per process).
pub fn prepare(servers: &mut [ServerConfig]) -> Result<Vec<Sandbox>> {
    let mut sandboxes = Vec::new();
    for server in servers.iter_mut() {
        let Some(seed) = server.state_seed.clone() else {
            continue;
        };
        let home = super::sandbox_home::fresh()?;
        let dir = home.state();
        let name = seed.file_name().with_context(|| {
            format!(
                "server \"{}\": the seed {} has no name",
                server.name,
                seed.display()
            )
        })?;
        // A `.tar` seed (a git repository, whose `.git` cannot itself be committed) is
        // unpacked; anything else is copied.
        let unpacked = seed.extension().is_some_and(|e| e == "tar");
        let placed = if unpacked {
            super::seed::unpack(&seed, &dir)
        } else {
            super::seed::copy_seed(&seed, &dir.join(name)).map(|()| dir.join(name))
        };
        let root = placed.with_context(|| {
            format!(
                "server \"{}\": {} its state's seed {}",
                server.name,
                if unpacked { "unpacking" } else { "copying" },
                seed.display()
            )
        })?;
        let removed = super::seed_git::defuse(&root).with_context(|| {
            format!(
                "server \"{}\": making the seed {}'s repository safe",
                server.name,
                seed.display()
            )
        })?;
        for what in &removed {
            tracing::warn!(
                server = %server.name,
                "removed from the seed's copy, since it names a program git would run: {what}"
            );
        }
        let sandbox = Sandbox {
            server: server.name.clone(),
            start_digest: digest(&dir)?,
            start_state: super::state_view::read(&root)
                .ok()
                .and_then(|f| super::state_view::whole(&f)),
            root,
            dir,
            removed,
            _home: home,
        };
        fill(server, &sandbox.dir);
        server.state_root = Some(sandbox.root.clone());
        sandboxes.push(sandbox);
    }
    Ok(sandboxes)
}

impl Sandbox {
    /// The state's digest now, and the state as fields when it can be read and is small:
    /// where a proxy session, which shares the copy with the sessions before it, starts.
    pub fn now(&self) -> (Option<String>, Option<serde_json::Value>) {
        let state = super::state_view::read(&self.root)
            .ok()
            .and_then(|f| super::state_view::whole(&f));
        (digest(&self.dir).ok(), state)
    }
}

/// True when the entry still names `${COSMOS_STATE_DIR}`: its state was not prepared.
pub fn unfilled(server: &ServerConfig) -> bool {
    super::mcp_json::names_state_dir(&server.transport)
}

/// Puts `dir` where the entry names `${COSMOS_STATE_DIR}`.
fn fill(server: &mut ServerConfig, dir: &Path) {
    let named = format!("${{{STATE_DIR_VAR}}}");
    let dir = dir.display().to_string();
    if let Transport::Stdio { args, env, cwd, .. } = &mut server.transport {
        for value in args.iter_mut().chain(env.values_mut()) {
            *value = value.replace(&named, &dir);
        }
        if let Some(c) = cwd.as_mut() {
            *c = PathBuf::from(c.to_string_lossy().replace(&named, &dir));
        }
    }
}

/// Where the end state of the run at `run` is kept.
pub fn kept_path(run: &Path) -> PathBuf {
    run.with_extension("state")
}

/// Takes each sandbox's end digest and keeps its state beside the run at `run`
/// (`STEM.state/SERVER/`) when the state is at most `KEEP_BYTES`; the digests by server.
pub fn finish(sandboxes: &[Sandbox], run: &Path) -> BTreeMap<String, String> {
    let mut digests = BTreeMap::new();
    for sandbox in sandboxes {
        match digest(&sandbox.dir) {
            Ok(d) => {
                digests.insert(sandbox.server.clone(), d);
            }
            Err(e) => {
                tracing::warn!(server = %sandbox.server, "the end state could not be read: {e:#}");
                continue;
            }
        }
        let size = size(&sandbox.dir).unwrap_or(u64::MAX);
        if size > KEEP_BYTES {
            tracing::warn!(
                server = %sandbox.server,
                "the end state ({size} bytes) is over {KEEP_BYTES}: kept as its digest only"
            );
            continue;
        }
        let to = kept_path(run).join(cosmos_trajectory::writer::file_safe(&sandbox.server, 80));
        // The kept state is this run's alone: anything at its place is an older run's and
        // must not be merged into it.
        if std::fs::symlink_metadata(&to).is_ok()
            && let Err(e) = std::fs::remove_dir_all(&to).or_else(|_| std::fs::remove_file(&to))
        {
            tracing::warn!(server = %sandbox.server, "the end state could not be kept: {}: {e}", to.display());
            continue;
        }
        let made = std::fs::create_dir_all(kept_path(run))
            .map_err(anyhow::Error::from)
            .and_then(|()| super::seed::copy_state(&sandbox.dir, &to));
        match made {
            Ok(skipped) => {
                for what in skipped {
                    tracing::warn!(server = %sandbox.server, "not kept in the end state: {what}");
                }
            }
            Err(e) => {
                tracing::warn!(server = %sandbox.server, "the end state could not be kept: {e:#}");
            }
        }
    }
    digests
}

/// Refuses a run whose `tools` include one its own server marks destructive
/// (`destructiveHint: true`) when that server's entry declares neither a sandbox nor
/// `live_state`. Tools without annotations are not refused: most servers annotate nothing.
pub fn refuse_unguarded(servers: &[ServerConfig], tools: &[ToolInfo]) -> Result<()> {
    for server in servers
        .iter()
        .filter(|s| s.state_seed.is_none() && !s.live_state)
    {
        // Every tool of the server it marks destructive, named: not the first alone.
        let destructive: Vec<&str> = tools
            .iter()
            .filter(|t| t.hint("destructiveHint") == Some(true))
            .filter(|t| own_tool_name(&t.name, &server.name).is_some())
            .map(|t| t.name.as_str())
            .collect();
        if destructive.is_empty() {
            continue;
        }
        bail!(
            "server \"{}\" offers {}, which it marks destructive (destructiveHint), and its \
             entry declares no sandbox: add \"cosmos\": {{\"state\": {{\"seed\": PATH}}}} to \
             give each run a fresh copy of its state (named by ${{{STATE_DIR_VAR}}} in its \
             args or env), or \"cosmos\": {{\"live_state\": true}} to let runs change its \
             real state",
            server.name,
            destructive.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::mcp_json::McpConfig;

    fn config(seed: &Path) -> McpConfig {
        McpConfig::parse(
            &serde_json::json!({"mcpServers": {"kv": {
                "command": "kv-server",
                "args": ["--db", "${COSMOS_STATE_DIR}/db"],
                "env": {"STATE": "${COSMOS_STATE_DIR}"},
                "cosmos": {"state": {"seed": seed}},
            }}})
            .to_string(),
        )
        .unwrap()
    }

    #[test]
    fn each_sandbox_is_a_fresh_copy_named_in_the_entry_and_gone_after() {
        let dir = tempfile::tempdir().unwrap();
        let seed = dir.path().join("db");
        std::fs::create_dir_all(seed.join("tables")).unwrap();
        std::fs::write(seed.join("tables/a"), "1").unwrap();
        let mut servers = config(&seed).servers;
        assert!(unfilled(&servers[0]), "the variable waits for a run");
        let sandboxes = prepare(&mut servers).unwrap();
        let copy = sandboxes[0].dir.clone();
        assert!(!unfilled(&servers[0]));
        let Transport::Stdio { args, env, .. } = &servers[0].transport else {
            panic!()
        };
        assert_eq!(args[1], format!("{}/db", copy.display()));
        assert_eq!(env["STATE"], copy.display().to_string());
        assert_eq!(
            std::fs::read_to_string(copy.join("db/tables/a")).unwrap(),
            "1"
        );
        // A second run's copy: another folder, the same digest.
        let mut again = config(&seed).servers;
        let second = prepare(&mut again).unwrap();
        assert_ne!(second[0].dir, copy);
        assert_eq!(second[0].start_digest, sandboxes[0].start_digest);
        // A change is seen; the seed is not touched.
        std::fs::write(copy.join("db/tables/a"), "2").unwrap();
        assert_ne!(digest(&copy).unwrap(), sandboxes[0].start_digest);
        assert_eq!(std::fs::read_to_string(seed.join("tables/a")).unwrap(), "1");
        drop(sandboxes);
        assert!(!copy.exists(), "the copy goes with its run");
    }

    /// A git repository's seed is a tar file (its `.git` cannot be committed): unpacked into
    /// each sandbox, byte for byte the same each time, and read with the repository's own
    /// state.
    #[test]
    fn a_tar_seed_is_unpacked_the_same_each_time_and_a_repository_is_read_as_such() {
        let seed = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/stateful/seed/notes-repo.tar");
        let [first, second] = [(), ()].map(|()| {
            let mut servers = config(&seed).servers;
            prepare(&mut servers).unwrap().remove(0)
        });
        assert_eq!(first.root, first.dir.join("notes-repo"));
        assert_eq!(first.start_digest, second.start_digest);
        let state = first.start_state.clone().unwrap();
        assert_eq!(state[".git/HEAD"], "main", "{state}");
        assert_eq!(state[".git/log"], serde_json::json!(["Start the notes"]));
        assert_eq!(state[".git/staged"], serde_json::json!([]));
        assert!(state["notes.md"].as_str().unwrap().starts_with("# Notes"));
        assert!(state.get("todo.md").is_some() && state.get(".git/config").is_none());
        // An archive whose entries are not under the folder it is named for is refused.
        let dir = tempfile::tempdir().unwrap();
        let stray = dir.path().join("other.tar");
        std::fs::copy(&seed, &stray).unwrap();
        let e = format!("{:#}", prepare(&mut config(&stray).servers).unwrap_err());
        assert!(e.contains("outside the folder other/"), "{e}");
    }

    #[test]
    fn a_seed_with_a_link_or_missing_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let seed = dir.path().join("db");
        std::fs::create_dir_all(&seed).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc/passwd", seed.join("escape")).unwrap();
            let e = format!("{:#}", prepare(&mut config(&seed).servers).unwrap_err());
            assert!(e.contains("symbolic link"), "{e}");
        }
        let e = format!(
            "{:#}",
            prepare(&mut config(&dir.path().join("none")).servers).unwrap_err()
        );
        assert!(e.contains("server \"kv\"") && e.contains("none"), "{e}");
    }

    #[test]
    fn an_entry_naming_the_variable_without_a_state_cannot_start() {
        let c = McpConfig::parse(
            r#"{"mcpServers": {"kv": {"command": "kv", "args": ["${COSMOS_STATE_DIR}"]}}}"#,
        )
        .unwrap();
        let problem = c.servers[0].problem.clone().unwrap();
        assert!(problem.contains("declares no"), "{problem}");
        let e = McpConfig::parse(
            r#"{"mcpServers": {"kv": {"url": "http://x/mcp", "cosmos": {"state": {"seed": "s"}}}}}"#,
        )
        .map(|_| ())
        .unwrap_err();
        assert!(format!("{e:#}").contains("is for a server cosmos starts"));
        // Where cosmos does not fill it, the variable is refused, not used as written.
        for (entry, place) in [
            (
                r#"{"command": "${COSMOS_STATE_DIR}/kv", "cosmos": {"state": {"seed": "s"}}}"#,
                "\"command\"",
            ),
            (r#"{"url": "http://x/${COSMOS_STATE_DIR}"}"#, "\"url\""),
            (
                r#"{"url": "http://x/mcp", "headers": {"X-Dir": "${COSMOS_STATE_DIR}"}}"#,
                "\"headers\"",
            ),
        ] {
            let c = McpConfig::parse(&format!(r#"{{"mcpServers": {{"kv": {entry}}}}}"#)).unwrap();
            let problem = c.servers[0].problem.clone().unwrap_or_default();
            assert!(
                problem.contains(place) && problem.contains("used as written"),
                "{entry}: {problem}"
            );
        }
    }
}
