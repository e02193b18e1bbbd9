//! Real MCP servers over stdio and streamable HTTP, through the project's pool.

use crate::support;

use std::time::Duration;

use cosmos_engine::mcp::McpConfig;
use cosmos_engine::mcp::{McpPool, Timeouts};
use serde_json::json;
use support::*;

fn config(servers: serde_json::Value) -> McpConfig {
    McpConfig::parse(&json!({"mcpServers": servers}).to_string()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_stdio() {
    let c = config(json!({"everything": {"command": npm_bin("mcp-server-everything")}}));
    let (pool, failures) = McpPool::connect(&c.servers, Timeouts::default()).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert!(pool.tools().iter().any(|t| t.name == "everything:echo"));
    let (server, out) = pool
        .call("everything:echo", &json!({"message": "hi there"}))
        .await;
    assert_eq!(server.as_deref(), Some("everything"));
    assert_eq!(out.error, None);
    assert!(out.result.text.contains("hi there"), "{:?}", out.result);
    let (_, sum) = pool
        .call("everything:get-sum", &json!({"a": 2, "b": 40}))
        .await;
    assert!(sum.result.text.contains("42"), "{:?}", sum.result);
    let (_, structured) = pool
        .call(
            "everything:get-structured-content",
            &json!({"location": "New York"}),
        )
        .await;
    assert!(
        structured.result.structured.is_some(),
        "{:?}",
        structured.result
    );
    let (_, image) = pool.call("everything:get-tiny-image", &json!({})).await;
    assert!(
        image.result.text.contains("[image/png"),
        "{:?}",
        image.result
    );
    let (_, bad) = pool.call("everything:nope", &json!({})).await;
    let why = bad.error.unwrap();
    assert!(why.contains("unknown tool \"everything:nope\""), "{why}");
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_streamable_http() {
    let (mut child, port) = everything_http();
    let c = config(json!({"web": {"url": format!("http://127.0.0.1:{port}/mcp")}}));
    let (pool, failures) = McpPool::connect(&c.servers, Timeouts::default()).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(pool.server_infos()[0].transport, "http");
    let (_, out) = pool
        .call("web:echo", &json!({"message": "over http"}))
        .await;
    assert!(out.result.text.contains("over http"), "{:?}", out);
    pool.shutdown().await;
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread")]
async fn two_servers_with_a_tool_of_the_same_name_stay_apart() {
    let c = config(bench_servers());
    let (pool, failures) = McpPool::connect(&c.servers, Timeouts::default()).await;
    assert!(failures.is_empty(), "{failures:?}");
    let names: Vec<String> = pool.tools().into_iter().map(|t| t.name).collect();
    assert!(
        names.contains(&"Time MCP:convert_time".to_string())
            && names.contains(&"Unit Converter:convert_time".to_string()),
        "{names:?}"
    );
    let (_, tz) = pool
        .call(
            "Time MCP:convert_time",
            &json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "Asia/Tokyo"}),
        )
        .await;
    assert!(
        tz.result.text.contains("Asia/Tokyo") && !tz.result.is_error,
        "{:?}",
        tz.result
    );
    let (_, units) = pool
        .call(
            "Unit Converter:convert_time",
            &json!({"value": 2, "from_unit": "hours", "to_unit": "seconds"}),
        )
        .await;
    assert!(units.result.text.contains("7200"), "{:?}", units.result);
    let (_, invalid) = pool
        .call(
            "Time MCP:convert_time",
            &json!({"source_timezone": "Mars/Olympus", "time": "09:00", "target_timezone": "UTC"}),
        )
        .await;
    assert!(invalid.result.is_error, "{:?}", invalid.result);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_server_keeps_state_in_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("memory.jsonl");
    let c = config(
        json!({"memory": {"command": npm_bin("mcp-server-memory"), "env": {"MEMORY_FILE_PATH": file.display().to_string()}}}),
    );
    let (pool, failures) = McpPool::connect(&c.servers, Timeouts::default()).await;
    assert!(failures.is_empty(), "{failures:?}");
    let entity = json!({"entities": [{"name": "Cosmos", "entityType": "project", "observations": ["plans with world models"]}]});
    let (_, out) = pool.call("memory:create_entities", &entity).await;
    assert_eq!(out.error, None, "{out:?}");
    let stored = std::fs::read_to_string(&file).unwrap();
    assert!(
        stored.contains("Cosmos") && stored.contains("plans with world models"),
        "{stored}"
    );
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn failing_dying_and_hanging_servers() {
    let c = config(json!({
        "flaky": flaky_server(),
        "broken": {"command": "sh", "args": ["-c", "echo 'cannot import thing' >&2; exit 2"]},
    }));
    let timeouts = Timeouts {
        startup: Duration::from_secs(30),
        call: Duration::from_secs(2),
        ..Timeouts::default()
    };
    let (pool, failures) = McpPool::connect(&c.servers, timeouts).await;
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].name, "broken");
    assert!(
        failures[0]
            .stderr_tail
            .as_deref()
            .unwrap()
            .contains("cannot import thing")
    );
    // The message itself says why, from the server's last words, not only the transport's
    // "connection closed".
    assert!(
        failures[0].message.contains("its last words:")
            && failures[0].message.contains("cannot import thing"),
        "{}",
        failures[0].message
    );

    let (_, hang) = pool.call("flaky:hang", &json!({"text": "x"})).await;
    assert!(hang.error.unwrap().contains("timed out after 2s"));
    let (_, ok) = pool.call("flaky:ok", &json!({"text": "still here"})).await;
    assert_eq!(
        ok.result.text, "ok: still here",
        "a hung call does not kill the server"
    );

    let (_, die) = pool.call("flaky:die", &json!({"text": "x"})).await;
    let died = die.server_died.expect("the call notices the server died");
    assert!(
        died.stderr_tail
            .unwrap_or_default()
            .contains("dying on purpose")
    );
    let (_, after) = pool.call("flaky:ok", &json!({"text": "x"})).await;
    assert!(after.error.unwrap().contains("not running"));
    pool.shutdown().await;
}

/// Peak resident memory of this test's process (nextest runs each test in its own), MB.
fn peak_rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_writing_junk_to_stderr_keeps_answering_in_bounded_memory() {
    // Bytes that are not UTF-8, then 10 MB without a newline: the stderr reader must neither
    // stop (the server's next write would fail on a pipe nobody reads) nor hold the line.
    let c = config(json!({"flaky": flaky_server()}));
    let (pool, failures) = McpPool::connect(&c.servers, Timeouts::default()).await;
    assert!(failures.is_empty(), "{failures:?}");
    for i in 0..3 {
        let (_, noisy) = pool
            .call("flaky:noisy", &json!({"text": i.to_string()}))
            .await;
        assert_eq!(noisy.error, None, "{noisy:?}");
        assert!(!noisy.result.is_error, "{noisy:?}");
        assert_eq!(noisy.result.text, format!("noisy: {i}"));
    }
    let (_, ok) = pool.call("flaky:ok", &json!({"text": "still here"})).await;
    assert_eq!(ok.result.text, "ok: still here");
    // 30 MB went through the pipe; cosmos kept a bounded tail of it.
    assert!(peak_rss_mb() < 150, "peak RSS {} MB", peak_rss_mb());
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_server_is_first_given_the_chance_to_end_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let exited = dir.path().join("exited");
    let mut flaky = flaky_server();
    flaky["env"] = json!({"FLAKY_EXITED_FILE": exited.display().to_string()});
    let c = config(json!({"flaky": flaky}));
    let (pool, failures) = McpPool::connect(&c.servers, Timeouts::default()).await;
    assert!(failures.is_empty(), "{failures:?}");
    pool.shutdown().await;
    // Stdin closed first: the server ended by itself before any signal reached it.
    assert!(
        exited.exists(),
        "the server was killed before it could end on its own"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_too_large_for_stdio_is_refused_at_once_with_its_size() {
    let c = config(json!({"flaky": flaky_server()}));
    let (pool, failures) = McpPool::connect(&c.servers, Timeouts::default()).await;
    assert!(failures.is_empty(), "{failures:?}");
    let started = std::time::Instant::now();
    let (_, huge) = pool.call("flaky:huge", &json!({"mib": 17})).await;
    let error = huge.error.unwrap_or_default();
    assert!(
        error.contains("over the 16 MiB an MCP message over stdio may be"),
        "{error}"
    );
    // Its size: the SDK sends the text twice (content and structured content), 34 MiB.
    assert!(error.contains("reply is 34.0 MiB"), "{error}");
    // Not the call timeout (60 s): told as soon as the line ended.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // The server is fine, and a large reply under the limit still comes through.
    let (_, ok) = pool.call("flaky:ok", &json!({"text": "after"})).await;
    assert_eq!(ok.result.text, "ok: after");
    let (_, big) = pool.call("flaky:huge", &json!({"mib": 2})).await;
    assert_eq!(big.error, None, "{big:?}");
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_watchdog_gets_nothing_of_cosmoss_environment_but_path() {
    // This process holds variables no child needs (cargo's stand in for API keys).
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let c = config(json!({"flaky": flaky_server()}));
    let (pool, failures) = McpPool::connect(&c.servers, Timeouts::default()).await;
    assert!(failures.is_empty(), "{failures:?}");
    // The watchdog is the `sh` that polls this process's pid.
    let me = std::process::id();
    let watchdogs: Vec<Vec<String>> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if !cmdline.starts_with("sh -c while kill -0 ") || !cmdline.contains(&format!(" {me} "))
            {
                return None;
            }
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            Some(
                environ
                    .split(|&b| b == 0)
                    .filter(|v| !v.is_empty())
                    .map(|v| {
                        String::from_utf8_lossy(v)
                            .split('=')
                            .next()
                            .unwrap_or_default()
                            .to_string()
                    })
                    .collect(),
            )
        })
        .collect();
    pool.shutdown().await;
    assert_eq!(watchdogs.len(), 1, "{watchdogs:?}");
    assert_eq!(watchdogs[0], ["PATH"], "the watchdog's environment");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stdio_server_sees_only_the_short_list_and_its_own_env() {
    // The real server's own account of its environment (`get-env` returns process.env). This
    // test process holds variables the server must not see: cargo's (CARGO_MANIFEST_DIR…) stand
    // in for OPENAI_API_KEY and the like, which a user's shell holds the same way.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let c = config(json!({"everything": {
        "command": npm_bin("mcp-server-everything"),
        "env": {"ASKED_FOR": "yes", "FORWARDED_PATH": "${PATH}"}
    }}));
    let (pool, failures) = McpPool::connect(&c.servers, Timeouts::default()).await;
    assert!(failures.is_empty(), "{failures:?}");
    let (_, out) = pool.call("everything:get-env", &json!({})).await;
    assert_eq!(out.error, None);
    let env: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&out.result.text).expect("get-env returns JSON");
    pool.shutdown().await;
    let names: Vec<&str> = env.keys().map(String::as_str).collect();
    assert_eq!(env["ASKED_FOR"], "yes", "its own env arrives");
    assert_eq!(
        env["FORWARDED_PATH"].as_str(),
        std::env::var("PATH").ok().as_deref(),
        "a variable the entry forwards with ${{VAR}} arrives"
    );
    assert!(names.contains(&"PATH"), "the short list arrives: {names:?}");
    for name in &names {
        let allowed = cosmos_engine::mcp::INHERITED_ENV.contains(name)
            || ["ASKED_FOR", "FORWARDED_PATH"].contains(name)
            // Set by node itself or its launcher script, not inherited.
            || name.starts_with("NODE")
            || name.starts_with("npm_")
            || *name == "_"
            || *name == "PWD"
            || *name == "SHLVL"
            || *name == "OLDPWD";
        assert!(allowed, "{name} reached the server; it has {names:?}");
    }
    assert!(!names.iter().any(|n| n.starts_with("CARGO")), "{names:?}");
}

/// `--elicitation ask`: the server's request reaches the explorer as a form with its defaults
/// filled in; the person edits a field and accepts; the waiting call gets that answer, and the
/// exchange comes back with the call's outcome.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_for_input_is_answered_in_the_explorers_form() {
    use cosmos_app::tui::Action;
    use cosmos_app::tui::App;
    use cosmos_app::tui::ElicitForm;
    use cosmos_app::tui::Keymap;
    use cosmos_app::tui::Theme;
    use cosmos_engine::mcp::{Elicitation, ask_through};
    use crossterm::event::{KeyCode, KeyEvent};

    let c = config(json!({"flaky": flaky_server()}));
    let timeouts = Timeouts {
        elicitation: Elicitation::Ask,
        ..Timeouts::default()
    };
    let (pool, failures) = McpPool::connect(&c.servers, timeouts).await;
    assert!(failures.is_empty(), "{failures:?}");
    let (asker, questions) = std::sync::mpsc::channel();
    ask_through(Some(asker));
    let pool = std::sync::Arc::new(pool);
    let calling = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.call("flaky:ask", &json!({})).await })
    };
    // The question arrives while the call waits.
    let question = tokio::task::spawn_blocking(move || {
        questions
            .recv_timeout(Duration::from_secs(30))
            .expect("the question")
    })
    .await
    .unwrap();
    assert_eq!(question.message(), "Which city, and which units?");
    assert_eq!(question.server, "flaky");
    // The one call in flight on that server is the one that asks.
    assert_eq!(question.tool.as_deref(), Some("ask"));
    let browser = cosmos_app::tui::Browser::new(Vec::new(), Vec::new(), 20);
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), (100, 30));
    app.update(Action::Elicit(Box::new(question)));
    let form = app.top_as::<ElicitForm>().expect("the form");
    assert_eq!(
        form.content().unwrap(),
        json!({"city": "Lyon", "units": "metric"}),
        "the defaults filled in"
    );
    let key = |code| Action::Input(KeyEvent::from(code));
    for _ in 0.."Lyon".len() {
        app.update(key(KeyCode::Backspace));
    }
    for ch in "Paris".chars() {
        app.update(key(KeyCode::Char(ch)));
    }
    app.update(key(KeyCode::Enter));
    assert!(app.top_as::<ElicitForm>().is_none(), "answered and closed");
    let (_, outcome) = calling.await.unwrap();
    ask_through(None);
    assert_eq!(outcome.result.text, "accepted: Paris in metric");
    let [asked] = &outcome.elicited[..] else {
        panic!("{:?}", outcome.elicited);
    };
    assert_eq!(asked.action, "accept");
    assert_eq!(
        asked.content,
        Some(json!({"city": "Paris", "units": "metric"}))
    );
    assert_eq!(asked.reason, "answered in the explorer");
}

/// Connects to the flaky server started with `env` (a discover mode), checks it speaks the
/// handshake era and answers a call; how long connecting took.
async fn reached_by_the_handshake(name: &str, env: serde_json::Value) -> Duration {
    let mut server = flaky_server();
    server["env"] = env;
    let c = config(json!({ name: server }));
    let started = std::time::Instant::now();
    let (pool, failures) = McpPool::connect(&c.servers, Timeouts::default()).await;
    let took = started.elapsed();
    assert!(failures.is_empty(), "{failures:?}");
    let spoken: Vec<Option<String>> = pool
        .server_infos()
        .into_iter()
        .map(|s| s.protocol)
        .collect();
    assert_eq!(spoken, [Some("2025-11-25".to_string())]);
    let (_, ok) = pool
        .call(&format!("{name}:ok"), &json!({"text": "after"}))
        .await;
    assert_eq!(ok.error, None);
    assert_eq!(ok.result.text, "ok: after");
    pool.shutdown().await;
    took
}

/// A server of the handshake era that never answers `server/discover` (it ignores a method it
/// does not know) is spoken to by the handshake once rmcp's 10 s wait for the answer is over:
/// connected, in 2025-11-25, well within the start-up bound.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_silent_to_discover_is_reached_by_the_handshake_after_the_wait() {
    let took = reached_by_the_handshake("silent", json!({"FLAKY_SILENT_DISCOVER": "1"})).await;
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(30),
        "{took:?}: the fallback is the discover wait, then the handshake"
    );
}

/// Hardening VI: a server that answers `server/discover` only after rmcp gave up on it (and
/// sent `initialize`) still completes the handshake: its late reply is dropped, not taken as
/// the handshake's.
#[tokio::test(flavor = "multi_thread")]
async fn a_late_answer_to_discover_does_not_break_the_handshake() {
    reached_by_the_handshake("late", json!({"FLAKY_LATE_DISCOVER": "1"})).await;
}

/// Hardening VI: `cosmos servers` reaches a server that takes 12 s to start (longer than
/// rmcp's discovery wait, well within `--startup-timeout-s`): both requests wait in its pipe,
/// and it answers the abandoned discover first.
#[test]
fn cosmos_servers_reaches_a_server_that_starts_in_twelve_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let mut slow = flaky_server();
    slow["env"] = json!({"FLAKY_START_DELAY_S": "12"});
    let mcp = write_mcp_config(dir.path(), json!({"slow": slow}));
    let started = std::time::Instant::now();
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["servers", "--mcp-config", mcp.to_str().unwrap()])
        .env("COSMOS_LOG_FILE", dir.path().join("cosmos.log"))
        .output()
        .unwrap();
    let took = started.elapsed();
    let said = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(said.contains("slow:ok") || said.contains("ok"), "{said}");
    assert!(
        took >= Duration::from_secs(12),
        "{took:?}: it really started late"
    );
}

/// cosmos asks `server/discover` first and falls back to the handshake: a server of the
/// stateless era (the MCP Python SDK 2.x; today's mcp-server-time) is spoken to in 2026-07-28
/// over stdio and HTTP, one of the handshake era (mcp 1.x, the TypeScript SDK) in 2025-11-25,
/// and each connection's version is what the run header records.
#[tokio::test(flavor = "multi_thread")]
async fn both_protocol_eras_are_spoken_over_stdio_and_http() {
    let (mut modern_http, url) = modern_server_http();
    let (mut everything_http, port) = everything_http();
    let c = config(json!({
        "modern": modern_server(),
        "modern_web": {"url": url},
        "time_today": {"command": modern_python(), "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "time_2026_10": {"command": python(), "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "everything": {"command": npm_bin("mcp-server-everything")},
        "everything_web": {"url": format!("http://127.0.0.1:{port}/mcp")},
    }));
    let (pool, failures) = McpPool::connect(&c.servers, Timeouts::default()).await;
    assert!(failures.is_empty(), "{failures:?}");
    let spoken: std::collections::BTreeMap<String, Option<String>> = pool
        .server_infos()
        .into_iter()
        .map(|s| (s.name, s.protocol))
        .collect();
    let era = |name: &str| spoken[name].as_deref();
    for modern in ["modern", "modern_web", "time_today"] {
        assert_eq!(era(modern), Some("2026-07-28"), "{spoken:?}");
    }
    for handshake in ["time_2026_10", "everything", "everything_web"] {
        assert_eq!(era(handshake), Some("2025-11-25"), "{spoken:?}");
    }
    for tool in ["modern:add", "modern_web:add"] {
        let (_, sum) = pool.call(tool, &json!({"a": 2, "b": 3})).await;
        assert_eq!(sum.error, None, "{tool}");
        assert_eq!(
            sum.result.structured.as_deref(),
            Some(&json!({"result": 5})),
            "{tool}: {:?}",
            sum.result
        );
    }
    // The listing keeps what the server said of its tools beyond their schemas.
    let add = pool
        .tools()
        .into_iter()
        .find(|t| t.name == "modern_web:add")
        .unwrap();
    assert_eq!(add.title.as_deref(), Some("Add two numbers"));
    assert_eq!(
        add.meta.as_deref(),
        Some(&json!({"fixture/kind": "arithmetic"}))
    );
    let (_, now) = pool
        .call(
            "time_today:get_current_time",
            &json!({"timezone": "Europe/Paris"}),
        )
        .await;
    assert_eq!(now.error, None);
    assert!(now.result.text.contains("Europe/Paris"), "{:?}", now.result);
    pool.shutdown().await;
    for child in [&mut modern_http, &mut everything_http] {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The MCP conformance suite's client scenarios, both spec versions (and the 2025-03-26
/// back-compat and extension suites), with cosmos as the client (tests/conformance/client.py
/// says which command drives which scenario): every scenario passes but those in
/// tests/conformance/baseline.yml, each there with its reason, and none of those passes
/// (the suite fails a stale entry too).
#[test]
fn the_conformance_suites_client_scenarios_pass_but_the_baselines() {
    let (node, cli) = conformance_suite();
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let baseline = here.join("tests/conformance/baseline.yml");
    let driver = format!(
        "python3 {}",
        here.join("tests/conformance/client.py").display()
    );
    let mut passed = std::collections::BTreeSet::new();
    for suite in [
        &["--suite", "all", "--spec-version", "2025-11-25"][..],
        &["--suite", "all", "--spec-version", "2026-07-28"],
        &["--suite", "backcompat"],
        &["--suite", "extensions"],
    ] {
        let results = tempfile::tempdir().unwrap();
        let ran = std::process::Command::new(&node)
            .arg(&cli)
            .args(["client", "--command", &driver])
            .args(suite)
            .arg("--expected-failures")
            .arg(&baseline)
            .arg("-o")
            .arg(results.path())
            .env("COSMOS_BIN", env!("CARGO_BIN_EXE_cosmos"))
            .env("COSMOS_LOG_FILE", results.path().join("cosmos.log"))
            .output()
            .unwrap();
        let said = text(&ran);
        assert!(
            ran.status.success(),
            "{suite:?}:\n{}",
            &said[said.len().saturating_sub(6000)..]
        );
        // Each scenario's checks, as the suite wrote them: passed when none failed.
        for checks in walk(results.path(), "checks.json") {
            let all: Vec<serde_json::Value> =
                serde_json::from_str(&std::fs::read_to_string(&checks).unwrap()).unwrap();
            if !all.is_empty() && all.iter().all(|c| c["status"] != "FAILURE") {
                let scenario = checks
                    .parent()
                    .unwrap()
                    .strip_prefix(results.path())
                    .unwrap();
                passed.insert(conformance_scenario(&scenario.to_string_lossy()));
            }
        }
    }
    // The figure the docs quote (tests/conformance/README.md).
    eprintln!("client scenarios passed: {} {passed:?}", passed.len());
    assert!(passed.len() >= 41, "{passed:?}");
}

/// Every file named `name` under `dir`.
fn walk(dir: &std::path::Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path, name));
        } else if path.file_name().is_some_and(|n| n == name) {
            found.push(path);
        }
    }
    found
}
