//! OpenTelemetry export against a real receiver: Arize Phoenix (installed from PyPI by
//! `scripts/install-test-servers.sh`), started once for this file's one Phoenix test, spans
//! read back through Phoenix's REST API. And a live run whose receiver is down.

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cosmos_trajectory::event::EventBody;
use cosmos_trajectory::reader::EventStream;
use serde_json::{Value, json};
use support::*;

const KEY: &str = "sk-test-DO-NOT-LEAK-0123456789abcdef";
/// A secret no built-in rule knows: only the environment says it is one.
const ENV_SECRET: &str = "zz-custom-secret-4242-zz";

/// Why a Phoenix did not start.
enum Exit {
    /// It cannot run here.
    Missing(String),
    /// It started and exited (a port taken meanwhile, say).
    Exited(String),
}

/// A Phoenix server on free ports, stopped when dropped.
struct Phoenix {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Phoenix {
    /// Starts Phoenix, or says why it cannot. Its ports are free when asked for, but another
    /// test may take one before Phoenix binds it: a Phoenix that exits is started again on
    /// other ports, twice at most.
    fn start() -> Result<Self, String> {
        let mut failed = Vec::new();
        for _ in 0..3 {
            match Self::start_once() {
                Ok(phoenix) => return Ok(phoenix),
                Err(Exit::Missing(why)) => return Err(why),
                Err(Exit::Exited(why)) => failed.push(why),
            }
        }
        Err(failed.join("\n---\n"))
    }

    fn start_once() -> Result<Self, Exit> {
        cosmos_engine::llm::install_tls_provider();
        let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/phoenix/venv/bin/phoenix");
        if !bin.exists() {
            return Err(Exit::Missing(format!(
                "{} is missing (scripts/install-test-servers.sh installs arize-phoenix from PyPI)",
                bin.display()
            )));
        }
        let dir = tempfile::tempdir().unwrap();
        // Phoenix takes ports, not a listener: free ones are asked for and handed over.
        let (port, grpc) = (unused_port(), unused_port());
        let child = Command::new(&bin)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("phoenix.log")).unwrap())
            .spawn()
            .map_err(|e| Exit::Missing(format!("starting {}: {e}", bin.display())))?;
        let mut phoenix = Phoenix {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        // Phoenix starts slowly (migrations, the app): wait for its health check.
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if let Ok(r) = reqwest::blocking::get(format!("{}/healthz", phoenix.url))
                && r.status().is_success()
            {
                return Ok(phoenix);
            }
            if let Ok(Some(status)) = phoenix.child.try_wait() {
                let log = std::fs::read_to_string(phoenix._dir.path().join("phoenix.log"))
                    .unwrap_or_default();
                return Err(Exit::Exited(format!("phoenix exited ({status}): {log}")));
            }
            assert!(
                Instant::now() < deadline,
                "Phoenix did not become healthy in 180 s"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Every span Phoenix holds, through its REST API.
    fn spans(&self) -> Vec<Value> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!("{}/v1/projects/default/spans?limit=1000", self.url);
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={c}"));
            }
            let page: Value = reqwest::blocking::get(&url).unwrap().json().unwrap();
            out.extend(page["data"].as_array().cloned().unwrap_or_default());
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => return out,
            }
        }
    }

    /// The spans of the run `run_id`, once Phoenix has taken `want` of them (it ingests in
    /// the background).
    fn trace_of(&self, run_id: &str, want: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let spans = self.spans();
            let trace = spans
                .iter()
                .find(|s| s["attributes"]["cosmos.run.id"] == run_id)
                .map(|root| root["context"]["trace_id"].clone());
            let of_run: Vec<Value> = spans
                .into_iter()
                .filter(|s| Some(&s["context"]["trace_id"]) == trace.as_ref())
                .collect();
            if of_run.len() >= want {
                return of_run;
            }
            assert!(
                Instant::now() < deadline,
                "Phoenix holds {} of the run's {want} spans after 60 s",
                of_run.len()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

fn sample(part: &str) -> PathBuf {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    std::fs::read_dir(&samples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(part))
        .unwrap_or_else(|| panic!("sample_runs holds a {part} run"))
}

fn export(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .arg("export")
        .arg("otel")
        .args(args)
        .env("OPENAI_API_KEY", ENV_SECRET)
        .output()
        .unwrap()
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// What the file says the trace must hold.
struct Expected {
    run_id: String,
    planner_model: String,
    llm_calls: usize,
    input_tokens: u64,
    output_tokens: u64,
    real_calls: usize,
    simulations: usize,
    nodes: usize,
    spans: usize,
}

fn expected(path: &Path) -> Expected {
    let mut stream = EventStream::open(path).unwrap();
    let header = stream.header().clone();
    let mut e = Expected {
        run_id: header.run_id.clone(),
        planner_model: header.planner.model.clone(),
        llm_calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        real_calls: 0,
        simulations: 0,
        nodes: 0,
        spans: 1,
    };
    while let Some(event) = stream.next_event().unwrap() {
        match event.body {
            EventBody::LlmCall {
                prompt_tokens,
                completion_tokens,
                ..
            } => {
                e.llm_calls += 1;
                e.input_tokens += prompt_tokens;
                e.output_tokens += completion_tokens;
            }
            EventBody::ToolCalled { .. } => e.real_calls += 1,
            EventBody::NodeSimulated { .. } => e.simulations += 1,
            EventBody::NodeAdded { .. } => e.nodes += 1,
            EventBody::Phase { .. } | EventBody::SearchFinished { .. } => e.spans += 1,
            _ => {}
        }
    }
    e.spans += e.llm_calls + e.real_calls + e.simulations + e.nodes;
    e
}

#[test]
fn a_spiral_run_and_a_live_run_in_phoenix() {
    // A receiver that cannot start is a failure that says why, never a pass.
    let phoenix = Phoenix::start().unwrap_or_else(|why| {
        panic!(
            "the Phoenix receiver test cannot run here: {why} (scripts/install-test-servers.sh \
             installs Arize Phoenix)"
        )
    });

    // A SPIRAL run made against real servers, with a note that quotes a secret only the
    // environment names.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("spiral.jsonl");
    std::fs::copy(sample("unit_converter_001_spiral_memory"), &run).unwrap();
    let note = EventBody::Annotation {
        node: Some(2),
        event: None,
        text: format!("the key {ENV_SECRET} was pasted here"),
        who: "e2e".into(),
    };
    cosmos_engine::probe::annotate(&run, note, 120_000, &Default::default()).unwrap();
    let want = expected(&run);
    let out = export(&[
        run.to_str().unwrap(),
        "--endpoint",
        &phoenix.url,
        "--content",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{} span(s) of 1 run(s) sent", want.spans)),
        "{}",
        text(&out)
    );
    let spans = phoenix.trace_of(&want.run_id, want.spans);
    assert_eq!(spans.len(), want.spans);

    // One trace, `invoke_agent` at its root, every other span's parent in the trace.
    let ids: HashMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["context"]["span_id"].as_str().unwrap(), s))
        .collect();
    let roots: Vec<&Value> = spans.iter().filter(|s| s["parent_id"].is_null()).collect();
    assert_eq!(roots.len(), 1);
    let root = roots[0];
    assert_eq!(root["name"], "invoke_agent spiral");
    assert_eq!(attr(root, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attr(root, "cosmos.run.status"), "completed");
    for s in &spans {
        if let Some(parent) = s["parent_id"].as_str() {
            assert!(
                ids.contains_key(parent),
                "{} has a parent outside the trace",
                s["name"]
            );
        }
    }

    // `chat` spans with the GenAI attributes and the run's token counts.
    let chats: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), want.llm_calls);
    for c in &chats {
        assert_eq!(attr(c, "gen_ai.operation.name"), "chat");
        assert_eq!(attr(c, "gen_ai.request.model"), want.planner_model.as_str());
        assert_eq!(attr(c, "gen_ai.provider.name"), "openai");
        assert!(attr(c, "cosmos.role").is_string());
    }
    let sum = |key: &str| -> u64 { chats.iter().map(|c| attr(c, key).as_u64().unwrap()).sum() };
    assert_eq!(sum("gen_ai.usage.input_tokens"), want.input_tokens);
    assert_eq!(sum("gen_ai.usage.output_tokens"), want.output_tokens);

    // Real calls and simulated ones, each real one paired with its node's simulation.
    let tools: Vec<&Value> = spans
        .iter()
        .filter(|s| attr(s, "gen_ai.operation.name") == "execute_tool")
        .collect();
    let (simulated, real): (Vec<&Value>, Vec<&Value>) = tools
        .iter()
        .partition(|s| attr(s, "cosmos.simulated") == true);
    assert_eq!(real.len(), want.real_calls);
    assert_eq!(simulated.len(), want.simulations);
    let facts = {
        let opened = cosmos_trajectory::run::Run::open(&run).unwrap();
        let facts = cosmos_engine::metrics::run::RunFacts::of(&opened);
        (0..opened.steps().len())
            .map(|i| facts.step(i).and_then(|f| f.fidelity).map(|f| f.score))
            .collect::<Vec<_>>()
    };
    for r in &real {
        assert_eq!(attr(r, "mcp.method.name"), "tools/call");
        assert!(r["name"].as_str().unwrap().starts_with("execute_tool "));
        let twin_id = attr(r, "cosmos.simulation.span_id")
            .as_str()
            .expect("paired");
        let twin = ids[twin_id];
        assert_eq!(attr(twin, "cosmos.simulated"), true);
        assert_eq!(attr(twin, "cosmos.node.id"), attr(r, "cosmos.node.id"));
        assert_eq!(attr(twin, "gen_ai.tool.name"), attr(r, "gen_ai.tool.name"));
        assert_eq!(attr(twin, "cosmos.world_model"), "memory");
        // The fidelity is the one the explorer and the report show for that step.
        let step = attr(r, "cosmos.step").as_u64().unwrap() as usize;
        let fidelity = attr(r, "cosmos.fidelity").as_f64();
        assert_eq!(fidelity, facts[step - 1], "step {step}");
        assert!(
            attr(r, "gen_ai.tool.call.arguments").is_string(),
            "--content sends arguments"
        );
    }
    // Search nodes as spans, children of their parent node's span.
    let nodes: BTreeMap<i64, &Value> = spans
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("search_node #"))
        .map(|s| (attr(s, "cosmos.node.id").as_i64().unwrap(), s))
        .collect();
    assert_eq!(nodes.len(), want.nodes);
    for n in nodes.values() {
        if let Some(p) = attr(n, "cosmos.node.parent").as_i64() {
            assert_eq!(n["parent_id"], nodes[&p]["context"]["span_id"]);
        }
    }
    // The note is a span event on the root, with the secret taken out.
    let all = serde_json::to_string(&spans).unwrap();
    assert!(
        !all.contains(ENV_SECRET),
        "the environment's key reached the receiver"
    );
    assert!(!all.contains(KEY));
    let notes: Vec<&Value> = root["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "cosmos.annotation")
        .collect();
    assert_eq!(notes.len(), 1, "{}", root["events"]);
    assert!(
        notes[0]["attributes"]["cosmos.annotation.text"]
            .as_str()
            .unwrap()
            .contains("was pasted here")
    );

    // Without --content: no prompts, arguments or results. (A run whose four real calls
    // failed, each a failed span with an error status: the sample Plan-Exec run, its results
    // turned into the server's errors here, as no call of today's samples failed.)
    let quiet = dir.path().join("quiet.jsonl");
    let failing: Vec<String> = std::fs::read_to_string(sample("unit_converter_001_plan_exec_llm"))
        .unwrap()
        .lines()
        .map(|line| {
            let mut event: Value = serde_json::from_str(line).unwrap();
            if event["kind"] == "tool_called" {
                event["result"]["is_error"] = true.into();
            }
            event.to_string()
        })
        .collect();
    std::fs::write(&quiet, failing.join("\n") + "\n").unwrap();
    let want_quiet = expected(&quiet);
    let out = export(&[quiet.to_str().unwrap(), "--endpoint", &phoenix.url]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let spans = phoenix.trace_of(&want_quiet.run_id, want_quiet.spans);
    for s in &spans {
        for key in [
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
            "gen_ai.input.messages",
            "cosmos.answer",
        ] {
            assert!(attr(s, key).is_null(), "{key} sent without --content");
        }
    }
    let failed: Vec<&Value> = spans
        .iter()
        .filter(|s| attr(s, "error.type") == "tool_error")
        .collect();
    assert_eq!(failed.len(), 4, "{spans:?}");
    for s in &failed {
        assert_eq!(s["status_code"], "ERROR", "{s}");
    }

    // Live: a ReAct run against the real time server shows up while it runs (its planner is
    // held after the first call until the test lets it go), then whole.
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let out_dir = dir.path().join("live");
    let release = dir.path().join("release");
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish("It is 04:00 in New York."),
         "hold_until_file": release.to_str().unwrap()},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time",
            json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "America/New_York"}))}
    ]));
    let mut args = cosmos_run_args(&mcp, &out_dir, "time_mcp_000", "react", &[]);
    args.extend(["--otel-endpoint".to_string(), phoenix.url.clone()]);
    let traces_before: std::collections::HashSet<String> = phoenix
        .spans()
        .iter()
        .map(|s| s["context"]["trace_id"].as_str().unwrap().to_string())
        .collect();
    let log = dir.path().join("live.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(&args)
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", KEY)
        .env("COSMOS_MODEL", "scripted-model")
        .env("COSMOS_LOG_FILE", &log)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Held mid-run: its real call is in Phoenix already, in a trace not seen before (the
    // run's root span ends with the run).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let live_call = phoenix.spans().into_iter().any(|s| {
            s["name"] == "execute_tool Time MCP:convert_time"
                && !traces_before.contains(s["context"]["trace_id"].as_str().unwrap())
        });
        if live_call {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no span of the held run reached Phoenix in 60 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(child.try_wait().unwrap().is_none(), "the run is still held");
    std::fs::write(&release, "").unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let file = only_run(&out_dir);
    let want_live = expected(&file);
    let spans = phoenix.trace_of(&want_live.run_id, want_live.spans);
    assert_eq!(spans.len(), want_live.spans);
    let real: Vec<&Value> = spans
        .iter()
        .filter(|s| attr(s, "gen_ai.tool.name") == "Time MCP:convert_time")
        .collect();
    assert_eq!(real.len(), 1);
    assert!(!serde_json::to_string(&spans).unwrap().contains(KEY));
    assert!(
        !events(&file).iter().any(|e| e["kind"] == "error"),
        "a receiver that is up is no error"
    );
}

#[test]
fn a_receiver_that_accepts_and_never_answers_holds_the_exit_no_longer_than_promised() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let out_dir = dir.path().join("runs");
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish("It is 04:00 in New York.")},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time",
            json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "America/New_York"}))}
    ]));
    // Listening, so connections are accepted by the system, and never answered.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://127.0.0.1:{}", silent.local_addr().unwrap().port());
    let mut args = cosmos_run_args(&mcp, &out_dir, "time_mcp_000", "react", &[]);
    args.extend(["--otel-endpoint".to_string(), endpoint]);
    let started = std::time::Instant::now();
    let out = cosmos(&args, &llm, KEY);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let file = only_run(&out_dir);
    let ev = events(&file);
    assert_eq!(ev.last().unwrap()["status"], "completed");
    let ran_ms = ev.last().unwrap()["t_ms"].as_u64().unwrap();
    // The run itself, the receiver's check before it (3 s at most), and the last spans'
    // wait after it (LIVE_FINISH, 2 s): the rest is start-up. A request's own 10 s timeout,
    // twice, is what it took before.
    let bound =
        std::time::Duration::from_millis(ran_ms) + std::time::Duration::from_secs(3 + 2 + 4);
    assert!(took < bound, "{took:?} against {bound:?}");
    assert!(
        text(&out).contains("did not take the last spans"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_receiver_that_is_down_is_an_error_event_and_a_warning_never_a_failed_run() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let out_dir = dir.path().join("runs");
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish("It is 04:00 in New York.")},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time",
            json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "America/New_York"}))}
    ]));
    // A port nobody listens on.
    let dead = dead_port();
    let down = format!("http://user:hunter2@127.0.0.1:{}", dead.port);
    let mut args = cosmos_run_args(&mcp, &out_dir, "time_mcp_000", "react", &[]);
    args.extend(["--otel-endpoint".to_string(), down]);
    let out = cosmos(&args, &llm, KEY);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("warning: OpenTelemetry export"),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("hunter2"), "{}", text(&out));
    let file = only_run(&out_dir);
    let ev = events(&file);
    let errors: Vec<&Value> = ev
        .iter()
        .filter(|e| e["kind"] == "error" && e["source"] == "otel")
        .collect();
    assert_eq!(
        errors.len(),
        1,
        "one error event, not one per span: {errors:?}"
    );
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("cannot send spans")
    );
    assert!(!std::fs::read_to_string(&file).unwrap().contains("hunter2"));
    assert_eq!(ev.last().unwrap()["status"], "completed");
    let check = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["validate", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
}

#[test]
fn a_bad_endpoint_or_header_is_refused_before_anything_is_sent() {
    let run = sample("time_mcp_000_react_none");
    let out = export(&[run.to_str().unwrap(), "--endpoint", "localhost:6006"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("http or https"), "{}", text(&out));
    let out = export(&[
        run.to_str().unwrap(),
        "--endpoint",
        "http://127.0.0.1:9",
        "--header",
        "no-equals-sign",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("NAME=VALUE"), "{}", text(&out));
    // Nothing listens: the run is not delivered, and the command says so and fails.
    let dead = dead_port();
    let out = export(&[
        run.to_str().unwrap(),
        "--endpoint",
        &format!("http://127.0.0.1:{}", dead.port),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("not delivered whole"), "{}", text(&out));
}
