//! The `command` world model against real processes that misbehave: one that exits after
//! every answer (restarted), one that never answers (a clear error), one that hangs (killed
//! at the timeout, and a fresh one serves the next call), one that answers garbage, one that
//! writes without end (cut at the line cap, killed), one whose prediction is huge (capped like
//! a tool result).

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use cosmos_engine::world_model::CommandWorldModel;
use cosmos_engine::world_model::{SimRequest, WorldModel};
use cosmos_trajectory::event::ToolInfo;
use serde_json::{Value, json};

/// A world model in Python whose behaviour is picked by the call's `mode` argument; every
/// process counts its own requests, so replies show whether a process was restarted.
const SCRIPT: &str = r#"
import json, os, sys, time
served = 0
for line in sys.stdin:
    req = json.loads(line)
    served += 1
    mode = req["arguments"].get("mode")
    if mode == "hang":
        time.sleep(3600)
    if mode == "silent":
        sys.exit(0)
    if mode == "slow":
        time.sleep(1)
        print(json.dumps({"content": "the slow reply"}), flush=True)
        # Says the reply is in the pipe (beside this script).
        open(os.path.join(os.path.dirname(__file__), "slow-sent"), "w").close()
        continue
    if mode == "garbage":
        print("this is not json", flush=True)
        continue
    if mode == "endless":
        # Writes without a newline, far past any cap, until killed.
        chunk = "x" * (1 << 20)
        while True:
            sys.stdout.write(chunk)
            sys.stdout.flush()
    if mode == "sure":
        print(json.dumps({"content": "12:00", "confidence": 0.8, "confidence_source": "votes"}), flush=True)
        continue
    if mode == "plain-sure":
        print(json.dumps({"content": "12:00", "confidence": 0.25}), flush=True)
        continue
    if mode == "overconfident":
        print(json.dumps({"content": "12:00", "confidence": 1.7}), flush=True)
        continue
    if mode == "huge":
        print(json.dumps({"content": "y" * (3 << 20)}), flush=True)
        continue
    print(json.dumps({"content": f"pid {os.getpid()} request {served}"}), flush=True)
    if mode == "once":
        sys.exit(0)
"#;

fn model(dir: &Path, timeout: Duration) -> CommandWorldModel {
    let script = dir.join("wm.py");
    std::fs::write(&script, SCRIPT).unwrap();
    CommandWorldModel::new(format!("python3 {}", script.display()), timeout)
}

fn tool() -> ToolInfo {
    ToolInfo {
        name: "time:now".into(),
        description: "the time".into(),
        input_schema: cosmos_trajectory::event::ToolSchema::new(json!({"type": "object"})),
        ..Default::default()
    }
}

async fn ask(wm: &CommandWorldModel, mode: &str) -> Result<String, String> {
    let tool = tool();
    let arguments: Value = json!({"mode": mode});
    let req = SimRequest {
        tool: &tool,
        arguments: &arguments,
        user_request: "what time is it",
        history: &[],
        state: None,
    };
    wm.simulate(req)
        .await
        .map(|s| s.observation.text)
        .map_err(|f| f.message)
}

fn pid(reply: &str) -> &str {
    reply.split_whitespace().nth(1).unwrap()
}

#[tokio::test]
async fn a_world_model_gets_only_the_short_list_and_the_variables_its_table_names() {
    // This process holds variables no child needs (cargo's stand in for API keys).
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    // A world model in sh (python here is a shim that sets variables of its own) that answers
    // with the names of the variables it was started with.
    let env_names = || {
        CommandWorldModel::new(
            r#"while read -r line; do printf '{"content": "%s"}\n' "$(env | cut -d= -f1 | tr '\n' ' ')"; done"#
                .to_string(),
            Duration::from_secs(20),
        )
    };
    let names =
        |reply: String| -> Vec<String> { reply.split_whitespace().map(String::from).collect() };
    let seen = names(ask(&env_names(), "env").await.unwrap());
    let allowed = cosmos_engine::mcp::INHERITED_ENV;
    // `sh` sets a few of its own.
    let own = ["PWD", "OLDPWD", "SHLVL", "_"];
    let stray: Vec<&String> = seen
        .iter()
        .filter(|n| !allowed.contains(&n.as_str()) && !own.contains(&n.as_str()))
        .collect();
    assert!(stray.is_empty(), "given what it was not: {stray:?}");
    assert!(seen.iter().any(|n| n == "PATH"));
    let given = env_names().with_env(&["CARGO_MANIFEST_DIR".to_string()]);
    assert!(names(ask(&given, "env").await.unwrap()).contains(&"CARGO_MANIFEST_DIR".to_string()));
}

#[tokio::test]
async fn a_process_that_exits_after_answering_is_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let wm = model(dir.path(), Duration::from_secs(20));
    let first = ask(&wm, "once").await.unwrap();
    assert!(first.ends_with("request 1"), "{first}");
    // The process has exited; the next call starts a new one and is answered.
    let second = ask(&wm, "ok").await.unwrap();
    assert!(second.ends_with("request 1"), "{second}");
    assert_ne!(pid(&first), pid(&second));
    // A healthy process is kept.
    let third = ask(&wm, "ok").await.unwrap();
    assert_eq!(pid(&second), pid(&third));
    assert!(third.ends_with("request 2"), "{third}");
}

#[tokio::test]
async fn a_process_that_never_answers_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let wm = model(dir.path(), Duration::from_secs(20));
    let err = ask(&wm, "silent").await.unwrap_err();
    assert!(err.contains("exited without answering"), "{err}");
    // The model still works for a call that can be answered.
    assert!(ask(&wm, "ok").await.is_ok());
}

#[tokio::test]
async fn a_hanging_process_is_killed_at_the_timeout_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let wm = model(dir.path(), Duration::from_millis(1500));
    let before = ask(&wm, "ok").await.unwrap();
    let start = Instant::now();
    let err = ask(&wm, "hang").await.unwrap_err();
    assert!(
        err.contains("did not answer within") && err.contains("killed"),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    // The Python process itself, not only the `sh` around it, is gone (or a zombie waiting
    // to be reaped): a hung world model must not outlive its timeout.
    let hung = pid(&before).to_string();
    assert!(
        support::ends_within(&hung, Duration::from_secs(5)),
        "the hung process {hung} was killed"
    );
    let after = ask(&wm, "ok").await.unwrap();
    assert_ne!(pid(&before), pid(&after));
}

#[tokio::test]
async fn a_reply_that_is_not_json_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let wm = model(dir.path(), Duration::from_secs(20));
    let err = ask(&wm, "garbage").await.unwrap_err();
    assert!(
        err.contains("not JSON") && err.contains("this is not json"),
        "{err}"
    );
}

#[tokio::test]
async fn a_process_that_writes_without_end_is_cut_at_the_cap_and_killed() {
    let dir = tempfile::tempdir().unwrap();
    let wm = model(dir.path(), Duration::from_secs(60));
    let started = Instant::now();
    let err = ask(&wm, "endless").await.unwrap_err();
    assert!(
        err.contains("over 4 MiB") && err.contains("killed"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "cut at the cap, not at the timeout"
    );
    // A fresh process serves the next call.
    let next = ask(&wm, "ok").await.unwrap();
    assert!(next.ends_with("request 1"), "{next}");
}

#[tokio::test]
async fn a_huge_prediction_is_capped_like_a_tool_result() {
    let dir = tempfile::tempdir().unwrap();
    let wm = model(dir.path(), Duration::from_secs(60));
    let tool = tool();
    let arguments: Value = json!({"mode": "huge"});
    let req = SimRequest {
        tool: &tool,
        arguments: &arguments,
        user_request: "what time is it",
        history: &[],
        state: None,
    };
    let sim = wm.simulate(req).await.map_err(|f| f.message).unwrap();
    let cap = cosmos_engine::mcp::MAX_RESULT_BYTES;
    assert_eq!(sim.observation.text.len(), cap);
    assert_eq!(sim.observation.truncated_bytes, ((3 << 20) - cap) as u64);
}

#[tokio::test]
async fn an_ask_dropped_mid_way_never_hands_its_reply_to_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let wm = model(dir.path(), Duration::from_secs(10));
    // The caller gives up (a stop, the run's deadline) while the reply is on its way.
    let dropped = tokio::time::timeout(Duration::from_millis(200), ask(&wm, "slow")).await;
    assert!(dropped.is_err(), "the slow ask was cut off");
    // Wait until the slow reply is in the pipe of the process that was asked.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !dir.path().join("slow-sent").exists() {
        assert!(Instant::now() < deadline, "the slow reply was never sent");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let next = ask(&wm, "ok").await.unwrap();
    assert!(
        next.starts_with("pid "),
        "the next ask got its own reply: {next}"
    );
    assert!(next.ends_with("request 1"), "from a fresh process: {next}");
}

/// The command's own confidence is recorded as it gives it (its word for how it knows, else
/// `command`); a number outside [0, 1] is no confidence, never clamped into one.
#[tokio::test]
async fn a_commands_confidence_is_taken_as_given_and_an_impossible_one_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let wm = model(dir.path(), Duration::from_secs(20));
    let tool = tool();
    let confidence_of = |mode: &'static str| {
        let arguments: Value = json!({"mode": mode});
        let tool = &tool;
        let wm = &wm;
        async move {
            wm.simulate(SimRequest {
                tool,
                arguments: &arguments,
                user_request: "what time is it",
                history: &[],
                state: None,
            })
            .await
            .unwrap()
            .confidence
        }
    };
    let sure = confidence_of("sure").await.unwrap();
    assert_eq!((sure.value, sure.source.as_str()), (0.8, "votes"));
    let plain = confidence_of("plain-sure").await.unwrap();
    assert_eq!((plain.value, plain.source.as_str()), (0.25, "command"));
    assert_eq!(confidence_of("overconfident").await, None);
    assert_eq!(confidence_of("other").await, None);
}
