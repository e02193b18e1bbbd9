//! SPIRAL-Exec end to end on an MCP-Bench Time MCP task, with `mcp-server-time` and the
//! scripted endpoint: the recorded tree folds to consistent values, the plan follows the
//! selection rule, and the same replies give the same trajectory.

use crate::support;

use std::path::Path;

use cosmos_trajectory::event::{Action, EventBody, PredictionRecord};
use cosmos_trajectory::fold::TreeState;
use cosmos_trajectory::run::Run;
use serde_json::{Value, json};
use support::*;

const KEY: &str = "sk-test-spiral-0123456789abcdef";

fn script() -> Value {
    let tokyo = json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "Asia/Tokyo"});
    let london =
        json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "Europe/London"});
    json!([
        {"when": "You write the final answer", "content": "09:00 UTC is 18:00 in Tokyo."},
        {"when": "Next step: finish with the answer", "content": {"score": 0.9, "reason": "answers"}},
        {"when": ["Next step: call", "Asia/Tokyo"], "content": {"score": 0.8, "reason": "the right conversion"}},
        {"when": "You are a strict critic", "content": {"score": 0.3, "reason": "less useful"}},
        {"when": "You simulate an MCP server", "content": predicted(r#"{"source":{"timezone":"UTC"},"target":{"timezone":"Asia/Tokyo","datetime":"2026-11-29T18:00:00+09:00"}}"#, false)},
        {"when": "2. Time MCP:", "content": {"candidates": [finish("")]}},
        {"when": "1. Time MCP:", "content": {"candidates": [finish(""), call("Time MCP:convert_time", json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "America/New_York"}))]}},
        {"when": "No tool has been called yet", "content": {"candidates": [
            call("Time MCP:convert_time", tokyo.clone()),
            call("Time MCP:convert_time", london),
            call("Time MCP:convert_time", json!({"time": "09:00"})),
            call("Time MCP:convert_time", tokyo)
        ]}}
    ])
}

fn spiral_run(dir: &Path, out: &str, llm: &ScriptedLlm) -> std::path::PathBuf {
    let extra = [
        "--world-model",
        "llm",
        "--iterations",
        "8",
        "--candidates",
        "3",
        "--max-depth",
        "4",
    ];
    run_in(dir, out, llm, &extra)
}

/// `cosmos run --agent spiral` on time_mcp_001 against mcp-server-time; the one trajectory.
fn run_in(dir: &Path, out: &str, llm: &ScriptedLlm, extra: &[&str]) -> std::path::PathBuf {
    let mcp = write_mcp_config(dir, bench_servers());
    let out_dir = dir.join(out);
    let args = cosmos_run_args(&mcp, &out_dir, "time_mcp_001", "spiral", extra);
    let output = cosmos(&args, llm, KEY);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    only_run(&out_dir)
}

/// The events with everything that depends on the clock removed.
fn timeless(path: &Path) -> Vec<Value> {
    events(path)
        .into_iter()
        .map(|mut e| {
            for key in ["t_ms", "latency_ms", "started_at", "run_id"] {
                e.as_object_mut().unwrap().remove(key);
            }
            if let Some(t) = e.get_mut("totals") {
                t.as_object_mut().unwrap().remove("wall_ms");
            }
            e
        })
        .collect()
}

#[test]
fn spiral_searches_selects_and_executes_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(script());
    let first = spiral_run(dir.path(), "a", &llm);
    let run = Run::open(&first).unwrap();
    assert!(run.problems.is_empty(), "{:?}", run.problems);
    let h = &run.header;
    assert_eq!(h.agent.settings["iterations"], 8);
    assert_eq!(h.agent.settings["k"], 3);
    assert_eq!(h.agent.settings["alpha"], 0.5);
    assert_eq!(h.agent.settings["plan_rule"], "best_mean");

    // Duplicates merged: three root candidates (the repeated Tokyo call is dropped).
    let root_children = &run.nodes()[0].children;
    assert_eq!(root_children.len(), 3);
    // The candidate without the required arguments is kept, penalised, never simulated by the model.
    let invalid = run.all_events().iter().find_map(|e| match &e.body {
        EventBody::NodeEvaluated {
            node,
            verdict: cosmos_trajectory::event::Verdict::Invalid,
            reward,
            ..
        } => Some((*node, *reward)),
        _ => None,
    });
    let (invalid_node, invalid_reward) = invalid.expect("an invalid candidate");
    assert_eq!(invalid_reward, -1.0);
    assert!(run.all_events().iter().any(|e| matches!(&e.body, EventBody::NodeSimulated { node, prediction: PredictionRecord { world_model, .. }, .. } if *node == invalid_node && world_model == "validator")));

    // Folding the file: every node's visits equal the backpropagations through it, the root's
    // visits equal all of them, and the plan ends at the finish node with the best mean value.
    let state = TreeState::fold(&run, run.len());
    let backprops = run
        .all_events()
        .iter()
        .filter(|e| matches!(e.body, EventBody::Backpropagated { .. }))
        .count() as u32;
    assert_eq!(state.node(0).unwrap().visits, backprops);
    let plan = run.plan_at(run.len());
    let last = *plan.last().unwrap();
    let is_finish = |slot: u32| {
        matches!(
            &run.all_events()[run.nodes()[slot as usize].added_at as usize].body,
            EventBody::NodeAdded {
                action: Some(Action::Finish { .. }),
                ..
            }
        )
    };
    assert!(is_finish(last));
    let best = (0..state.visible_nodes() as u32)
        .filter(|&s| is_finish(s))
        .map(|s| state.node(s).unwrap().q().unwrap_or(f64::MIN))
        .fold(f64::MIN, f64::max);
    // The fold keeps sums in fixed point; the agent in f64: equal to well within 1e-6.
    assert!((state.node(last).unwrap().q().unwrap() - best).abs() < 1e-6);

    // Phase 2 ran the plan's calls for real, each linked to its node, then answered.
    let steps = run.steps();
    assert!(!steps.is_empty());
    for s in steps {
        assert!(plan.contains(&s.node.unwrap()));
    }
    assert!(run.answer_at(run.len()).unwrap().contains("Tokyo"));
    let m = cosmos_engine::metrics::run::RunFacts::of(&run).at(&run, run.len(), &state);
    assert!(
        m.fidelity.is_some(),
        "executed steps pair with their simulations"
    );
    assert!(m.llm[cosmos_trajectory::event::Role::Critic.index()].calls > 0);

    // The same replies give the same trajectory, but for times.
    let second = spiral_run(dir.path(), "b", &llm);
    assert_eq!(timeless(&first), timeless(&second));
}

/// A plan whose first real call fails (an unknown time zone the world model did not flag),
/// and, once the planner sees the real error, a plan that works.
fn failing_plan_script() -> Value {
    let mars =
        json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "Mars/Olympus_Mons"});
    let tokyo = json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "Asia/Tokyo"});
    json!([
        {"when": "You write the final answer", "content": "09:00 UTC is 18:00 in Tokyo."},
        {"when": "You are a strict critic", "content": {"score": 0.5, "reason": "fine"}},
        {"when": "You simulate an MCP server", "content": predicted(r#"{"source":{"timezone":"UTC"},"target":{"datetime":"2026-11-29T18:00:00"}}"#, false)},
        {"when": "2. Time MCP:", "content": {"candidates": [finish("")]}},
        {"when": ["1. Time MCP:", "[error]"], "content": {"candidates": [call("Time MCP:convert_time", tokyo)]}},
        {"when": "1. Time MCP:", "content": {"candidates": [finish("")]}},
        {"when": "No tool has been called yet", "content": {"candidates": [call("Time MCP:convert_time", mars)]}}
    ])
}

fn failing_plan_run(
    dir: &Path,
    out: &str,
    llm: &ScriptedLlm,
    extra: &[&str],
) -> std::path::PathBuf {
    let mut args = vec!["--world-model", "llm", "--iterations", "3"];
    args.extend_from_slice(extra);
    run_in(dir, out, llm, &args)
}

/// The `node_added` events without an action: search roots, as (node, parent).
fn roots(run: &Run) -> Vec<(u64, Option<u64>)> {
    run.all_events()
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::NodeAdded {
                node,
                parent,
                action: None,
                ..
            } => Some((*node, *parent)),
            _ => None,
        })
        .collect()
}

#[test]
fn without_revision_a_failed_real_call_does_not_replan() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(failing_plan_script());
    let run = Run::open(&failing_plan_run(dir.path(), "off", &llm, &[])).unwrap();
    assert_eq!(run.header.agent.settings["execution_time_revision"], false);
    assert_eq!(roots(&run), vec![(0, None)]);
    let steps = run.steps();
    assert_eq!(steps.len(), 1);
    assert!(
        matches!(&run.all_events()[steps[0].event as usize].body, EventBody::ToolCalled { result, .. } if result.is_error)
    );
}

#[test]
fn revision_searches_again_under_the_failed_node_and_runs_the_new_plan() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(failing_plan_script());
    let path = failing_plan_run(dir.path(), "on", &llm, &["--revisions", "1"]);
    let run = Run::open(&path).unwrap();
    assert!(run.problems.is_empty(), "{:?}", run.problems);
    assert_eq!(run.header.agent.settings["execution_time_revision"], true);
    assert_eq!(run.header.agent.settings["revisions"], 1);

    // Two real steps: the failed call, then the revised plan's call, each linked to its node.
    let called: Vec<(u64, bool, String)> = run
        .all_events()
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ToolCalled {
                node: Some(n),
                result,
                arguments,
                ..
            } => Some((
                *n,
                result.is_error,
                arguments["target_timezone"].to_string(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(called.len(), 2, "{called:?}");
    let (failed, true, _) = &called[0] else {
        panic!("the first real call should fail: {called:?}")
    };
    assert!(!called[1].1 && called[1].2.contains("Asia/Tokyo"));

    // The second search hangs under the failed node, with ids after the first search's.
    let roots = roots(&run);
    assert_eq!(roots.len(), 2, "{roots:?}");
    let (revision, parent) = roots[1];
    assert_eq!(parent, Some(*failed));
    assert!(revision > *failed);
    // Its planner saw the real error of step 1.
    let saw_error = llm.requests().iter().any(|r| {
        let body = r["body"].to_string();
        body.contains("Mars/Olympus_Mons")
            && body.contains("[error]")
            && body.contains("results of steps 1-1 are real")
            && body.contains("candidates")
    });
    assert!(
        saw_error,
        "the revision's planner is shown the real failure"
    );

    // The last plan is one path from the root: the failed step, the revision, the new steps.
    let plan = run.plan_at(run.len());
    let ids: Vec<u64> = plan.iter().map(|&s| run.nodes()[s as usize].id).collect();
    assert!(
        ids.contains(failed) && ids.contains(&revision) && ids.contains(&called[1].0),
        "{ids:?}"
    );
    for pair in plan.windows(2) {
        assert_eq!(run.nodes()[pair[1] as usize].parent, Some(pair[0]));
    }
    assert_eq!(run.nodes()[plan[0] as usize].parent, Some(0));

    // Folding: the revision's root was visited once per backpropagation of the second search.
    let state = TreeState::fold(&run, run.len());
    let revision_slot = run.slot_of(revision).unwrap();
    let through_revision = run
        .all_events()
        .iter()
        .filter(|e| matches!(&e.body, EventBody::Backpropagated { path, .. } if path.contains(&revision)))
        .count() as u32;
    assert!(through_revision > 0);
    assert_eq!(state.node(revision_slot).unwrap().visits, through_revision);
    assert!(run.answer_at(run.len()).unwrap().contains("Tokyo"));

    // The file passes the validator (unique ids, parents before children).
    let check = cosmos(&["validate", path.to_str().unwrap()], &llm, KEY);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
}

#[test]
fn a_revision_whose_planner_fails_still_answers_from_the_real_steps() {
    let dir = tempfile::tempdir().unwrap();
    // The same run, but the revision's planner answers with something that is not JSON.
    let mut script = failing_plan_script();
    let rules = script.as_array_mut().unwrap();
    let revision = rules
        .iter()
        .position(|r| r["when"] == json!(["1. Time MCP:", "[error]"]))
        .unwrap();
    rules[revision]["content"] = json!("I cannot plan this");
    let llm = ScriptedLlm::start(script);
    let path = failing_plan_run(dir.path(), "broken", &llm, &["--revisions", "1"]);
    let run = Run::open(&path).unwrap();
    assert!(run.problems.is_empty(), "{:?}", run.problems);
    // The revision was started (a second root under the failed node), found nothing to run,
    // said why, and the run still answered from its one real step.
    assert_eq!(roots(&run).len(), 2);
    assert_eq!(run.steps().len(), 1);
    let stopped = run.all_events().iter().any(|e| {
        matches!(&e.body, EventBody::Error { message, .. }
            if message.starts_with("the revision has no plan to execute")
                && message.contains("no usable decision"))
    });
    assert!(stopped, "the failed revision is recorded");
    assert!(run.answer_at(run.len()).is_some());
    assert!(matches!(
        run.finish_at(run.len()).map(|e| &e.body),
        Some(EventBody::RunFinished {
            status: cosmos_trajectory::event::RunStatus::Completed,
            ..
        })
    ));
    let check = cosmos(&["validate", path.to_str().unwrap()], &llm, KEY);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
}

/// A short search with the `llm` world model and no critic.
const SHORT_SEARCH: &[&str] = &[
    "--world-model",
    "llm",
    "--iterations",
    "3",
    "--candidates",
    "2",
    "--alpha",
    "1.0",
];

/// `cosmos run --agent spiral` on time_mcp_001 whatever its exit code: the output and the file.
fn run_any(
    dir: &Path,
    llm: &ScriptedLlm,
    extra: &[&str],
) -> (std::process::Output, std::path::PathBuf) {
    let mcp = write_mcp_config(dir, bench_servers());
    let out_dir = dir.join("runs");
    let args = cosmos_run_args(&mcp, &out_dir, "time_mcp_001", "spiral", extra);
    let output = cosmos(&args, llm, KEY);
    (output, only_run(&out_dir))
}

/// The planner's requests among those the endpoint received.
fn planner_requests(llm: &ScriptedLlm) -> Vec<Value> {
    llm.requests()
        .into_iter()
        .filter(|r| {
            r["body"]
                .to_string()
                .contains("You are an agent that solves")
        })
        .collect()
}

/// The run's one `search_finished`.
fn search_finished(path: &Path) -> Value {
    let finished: Vec<Value> = events(path)
        .into_iter()
        .filter(|e| e["kind"] == "search_finished")
        .collect();
    assert_eq!(finished.len(), 1, "{finished:?}");
    finished[0].clone()
}

fn tokyo() -> Value {
    json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "Asia/Tokyo"})
}

#[test]
fn an_unusable_first_decision_is_retried_with_what_went_wrong_and_the_valid_call_runs() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "You write the final answer", "content": "09:00 UTC is 18:00 in Tokyo."},
        {"when": "You simulate an MCP server", "content": predicted(r#"{"target":{"datetime":"2026-11-29T18:00:00+09:00"}}"#, false)},
        {"when": "1. Time MCP:", "content": {"candidates": [finish("")]}},
        {"when": ["No tool has been called yet", "names no tool"], "content": {"candidates": [call("Time MCP:convert_time", tokyo())]}},
        {"when": "No tool has been called yet", "content": {"action": "call"}}
    ]));
    let (output, path) = run_any(dir.path(), &llm, SHORT_SEARCH);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let events = events(&path);
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "decision_rejected" && e["problem"] == "no_tool")
    );
    let called: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "tool_called")
        .collect();
    assert_eq!(called.len(), 1, "the retried decision ran for real");
    assert_eq!(called[0]["arguments"]["target_timezone"], "Asia/Tokyo");
    let last = events.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(search_finished(&path)["retried"], 1);

    // The decision schema sent has one branch per tool, each with that tool's own input
    // schema for its arguments, and a finish branch that requires an answer.
    let first = &planner_requests(&llm)[0]["body"];
    assert_eq!(first["response_format"]["type"], "json_schema");
    let items =
        &first["response_format"]["json_schema"]["schema"]["properties"]["candidates"]["items"];
    let branches = items["anyOf"].as_array().expect("anyOf over the decisions");
    let convert = branches
        .iter()
        .find(|b| b["properties"]["tool"]["enum"] == json!(["Time MCP:convert_time"]))
        .expect("a branch for convert_time");
    assert_eq!(convert["properties"]["action"]["enum"], json!(["call"]));
    assert!(
        convert["required"]
            .as_array()
            .unwrap()
            .contains(&json!("arguments"))
    );
    let required = convert["properties"]["arguments"]["required"]
        .as_array()
        .unwrap();
    assert!(required.contains(&json!("target_timezone")), "{convert}");
    assert!(
        branches
            .iter()
            .any(|b| b["properties"]["action"]["enum"] == json!(["finish"]))
    );
    let header = &events[0];
    assert_eq!(header["agent"]["settings"]["decision_schema"], "per_tool");
}

#[test]
fn a_planner_that_never_gives_a_usable_decision_fails_the_run_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "You write the final answer", "content": "should not be asked"},
        {"when": "No tool has been called yet", "content": "I think I should call a tool."}
    ]));
    let (output, path) = run_any(
        dir.path(),
        &llm,
        &[
            "--world-model",
            "llm",
            "--iterations",
            "5",
            "--candidates",
            "2",
            "--retries",
            "2",
        ],
    );
    assert_ne!(output.status.code(), Some(0), "{}", text(&output));
    let events = events(&path);
    let last = events.last().unwrap();
    assert_eq!(last["status"], "failed");
    let error = last["error"].as_str().unwrap();
    assert!(
        error.contains("no plan to execute") && error.contains("no usable decision"),
        "{error}"
    );
    // Asked once and retried twice, each reply recorded as a rejection that is not JSON.
    let rejected: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "decision_rejected")
        .collect();
    assert_eq!(rejected.len(), 3);
    assert!(rejected.iter().all(|e| e["problem"] == "not_json"));
    assert_eq!(planner_requests(&llm).len(), 3);
    assert!(
        !events
            .iter()
            .any(|e| e["kind"] == "tool_called" || e["kind"] == "answer")
    );
    let finished = search_finished(&path);
    assert_eq!(finished["retried"], 2);
    assert_eq!(finished["stopped"], "exhausted");
}

#[test]
fn a_world_model_that_fails_a_whole_expansion_stops_the_search_and_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "You simulate an MCP server", "status": 500, "raw": "world model is down"},
        {"when": "No tool has been called yet", "content": {"candidates": [
            call("Time MCP:convert_time", tokyo()),
            call("Time MCP:get_current_time", json!({"timezone": "UTC"}))
        ]}}
    ]));
    let (output, path) = run_any(
        dir.path(),
        &llm,
        &[
            "--world-model",
            "llm",
            "--iterations",
            "6",
            "--candidates",
            "2",
            "--alpha",
            "1.0",
        ],
    );
    assert_ne!(output.status.code(), Some(0), "{}", text(&output));
    // One planner call, not one per iteration.
    assert_eq!(planner_requests(&llm).len(), 1);
    let finished = search_finished(&path);
    assert_eq!(finished["stopped"], "world_model_failed");
    assert_eq!(finished["iterations"], 1);
    let last = events(&path).last().unwrap().clone();
    assert_eq!(last["status"], "failed");
    assert_eq!(last["ending"], "search_ended_early");
    assert!(
        last["error"]
            .as_str()
            .unwrap()
            .contains("world model could not simulate")
    );
}

#[test]
fn an_endpoint_that_refuses_the_per_tool_schema_gets_the_flat_one_and_the_run_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "\"anyOf\"", "status": 400, "raw": "{\"error\": \"unsupported schema: anyOf\"}"},
        {"when": "You write the final answer", "content": "18:00 in Tokyo."},
        {"when": "You simulate an MCP server", "content": predicted(r#"{"target":{"datetime":"2026-11-29T18:00:00+09:00"}}"#, false)},
        {"when": "1. Time MCP:", "content": {"candidates": [finish("")]}},
        {"when": "No tool has been called yet", "content": {"candidates": [call("Time MCP:convert_time", tokyo())]}}
    ]));
    let (output, path) = run_any(dir.path(), &llm, SHORT_SEARCH);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let events = events(&path);
    assert!(events.iter().any(|e| {
        e["kind"] == "error"
            && e["message"]
                .as_str()
                .unwrap()
                .contains("refused the per-tool decision schema")
    }));
    let planner = planner_requests(&llm);
    // The refused request, its flat retry, and every later one flat, still as a JSON schema.
    assert!(planner[0]["body"].to_string().contains("anyOf"));
    for r in &planner[1..] {
        assert!(!r["body"].to_string().contains("anyOf"));
        assert_eq!(r["body"]["response_format"]["type"], "json_schema");
    }
    assert_eq!(events.last().unwrap()["status"], "completed");
}

/// A raw chat completion whose reply stopped at the token cap.
fn cut_reply(text: &str) -> Value {
    json!({"raw": json!({
        "id": "scripted", "object": "chat.completion", "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 400, "completion_tokens": 320, "total_tokens": 720}
    }).to_string()})
}

#[test]
fn replies_cut_at_the_token_cap_are_named_so_a_planners_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let mut planner_cut =
        cut_reply("{\"candidates\": [{\"action\": \"call\", \"tool\": \"Time MCP:conv");
    planner_cut["when"] = json!("No tool has been called yet");
    planner_cut["times"] = json!(1);
    let mut wm_cut = cut_reply("{\"is_error\": false, \"content\": \"Here are the times conver");
    wm_cut["when"] = json!("You simulate an MCP server");
    let llm = ScriptedLlm::start(json!([
        {"when": "You write the final answer", "content": "unused"},
        wm_cut,
        planner_cut,
        {"when": "No tool has been called yet", "content": {"candidates": [call("Time MCP:convert_time", tokyo())]}}
    ]));
    let (output, path) = run_any(dir.path(), &llm, SHORT_SEARCH);
    assert_ne!(output.status.code(), Some(0), "{}", text(&output));
    let events = events(&path);
    // The planner's cut reply is a rejection of its own kind, told back, and retried.
    let rejected: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "decision_rejected")
        .collect();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["problem"], "cut");
    assert!(
        rejected[0]["detail"]
            .as_str()
            .unwrap()
            .contains("token cap (320 tokens)")
    );
    // The world model's cut reply says so, and what to change.
    let wm_error = events
        .iter()
        .find(|e| e["kind"] == "error" && e["source"] == "world_model")
        .expect("the world model's failure");
    let message = wm_error["message"].as_str().unwrap();
    assert!(
        message.contains("stopped at the token cap (320 tokens)") && message.contains("max_tokens"),
        "{message}"
    );
}

/// `--routing FILE`: each tool held to its own threshold. A tool the file does not trust is
/// called for real while planning however sure the world model is (its tools are read-only),
/// the file's digest and thresholds are in the header, and a file chosen for another world
/// model is refused before anything is written.
#[test]
fn a_routing_file_holds_each_tool_to_its_own_threshold() {
    let dir = tempfile::tempdir().unwrap();
    // The world model is sure of every prediction.
    let mut rules = script();
    for rule in rules.as_array_mut().unwrap() {
        if rule["when"] == "You simulate an MCP server" {
            rule["content"]["confidence"] = json!(0.99);
        }
    }
    let routing = dir.path().join("routing.toml");
    std::fs::write(
        &routing,
        "world_model = \"llm\"\n[tools.\"Time MCP:convert_time\"]\ntrust = false\nwhy = \"test\"\n\
         [tools.\"Time MCP:get_current_time\"]\ngo_real_below = 0.5\n",
    )
    .unwrap();
    let llm = ScriptedLlm::start(rules.clone());
    let routed = run_in(
        dir.path(),
        "routed",
        &llm,
        &small_search(&["--routing", routing.to_str().unwrap()]),
    );
    let events = events(&routed);
    let recorded = &events[0]["agent"]["settings"]["routing"];
    assert!(
        recorded["digest"].as_str().unwrap().starts_with("sha256:"),
        "{recorded}"
    );
    assert_eq!(recorded["thresholds"]["Time MCP:convert_time"], Value::Null);
    assert_eq!(recorded["thresholds"]["Time MCP:get_current_time"], 0.5);
    let simulated: Vec<u64> = events
        .iter()
        .filter(|e| e["kind"] == "node_simulated" && e["confidence"] == 0.99)
        .map(|e| e["node"].as_u64().unwrap())
        .collect();
    let grounded: Vec<u64> = events
        .iter()
        .filter(|e| e["kind"] == "node_grounded")
        .map(|e| e["node"].as_u64().unwrap())
        .collect();
    assert!(
        !simulated.is_empty(),
        "no sure prediction was made: {:?}",
        events
            .iter()
            .filter(|e| e["kind"] == "node_simulated")
            .collect::<Vec<_>>()
    );
    for node in &simulated {
        assert!(
            grounded.contains(node),
            "#{node} sure (0.99) yet not called for real: {grounded:?}"
        );
    }
    // Each prediction records how routing treated it: the untrusted tool's grounded, the
    // trusted one's a real call saved.
    let routes = |events: &[Value], route: &str| -> Vec<u64> {
        events
            .iter()
            .filter(|e| e["kind"] == "node_simulated" && e["route"] == route)
            .map(|e| e["node"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(routes(&events, "grounded"), grounded);
    let saved = routes(&events, "saved");
    let called = |events: &[Value], tool: &str| -> Vec<u64> {
        events
            .iter()
            .filter(|e| e["kind"] == "node_added" && e["action"]["tool"] == tool)
            .map(|e| e["node"].as_u64().unwrap())
            .collect()
    };
    let current_time = called(&events, "Time MCP:get_current_time");
    assert!(saved.iter().all(|n| current_time.contains(n)), "{saved:?}");
    // The report counts them, per run, as the events say.
    let figures = report_row(&routed, &llm);
    assert_eq!(
        figures["trusted_predictions"]["mean"],
        json!(saved.len() as f64)
    );
    assert_eq!(
        figures["real_calls_saved"]["mean"],
        json!(saved.len() as f64)
    );
    // The same run with one threshold for all trusts every one of them.
    let llm = ScriptedLlm::start(rules);
    let single = run_in(
        dir.path(),
        "single",
        &llm,
        &small_search(&["--go-real-below", "0.9"]),
    );
    let single_events = events_of(&single);
    assert!(
        !single_events.iter().any(|e| e["kind"] == "node_grounded"),
        "0.99 ≥ 0.9: nothing goes real"
    );
    let predictions = single_events
        .iter()
        .filter(|e| e["kind"] == "node_simulated" && e["world_model"] == "llm")
        .count();
    assert!(predictions > 0);
    assert_eq!(routes(&single_events, "saved").len(), predictions);
    // Of the trusted predictions, those the plan's real call found poor (under 0.9).
    let poor = single_events
        .iter()
        .filter(|e| e["kind"] == "tool_called")
        .filter(|call| {
            let node = &call["node"];
            single_events.iter().any(|e| {
                e["kind"] == "node_simulated"
                    && &e["node"] == node
                    && e["route"] == "saved"
                    && e["observation"]["text"] != call["result"]["text"]
            })
        })
        .count();
    let figures = report_row(&single, &llm);
    assert_eq!(
        figures["trusted_predictions"]["mean"],
        json!(predictions as f64)
    );
    assert!(figures["trusted_poor"]["mean"].as_f64().unwrap() <= poor as f64);
    // A file chosen for another world model is refused, and no run is written.
    std::fs::write(
        &routing,
        "world_model = \"memory\"\n[tools.\"Time MCP:convert_time\"]\ngo_real_below = 0.5\n",
    )
    .unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    // A fork of the routed run is routed by the same file, read again: changed, it is refused.
    let forked = cosmos(
        &[
            "fork",
            routed.to_str().unwrap(),
            "--at",
            "1",
            "--mcp-config",
            mcp.to_str().unwrap(),
            "--out",
            dir.path().join("forks").to_str().unwrap(),
            "--no-tui",
        ],
        &ScriptedLlm::start(json!([])),
        KEY,
    );
    assert_eq!(forked.status.code(), Some(1), "{}", text(&forked));
    assert!(
        text(&forked).contains("changed since the original run used it"),
        "{}",
        text(&forked)
    );
    let refused_dir = dir.path().join("refused");
    let args = cosmos_run_args(
        &mcp,
        &refused_dir,
        "time_mcp_001",
        "spiral",
        &[
            "--world-model",
            "llm",
            "--routing",
            routing.to_str().unwrap(),
        ],
    );
    let refused = cosmos(&args, &ScriptedLlm::start(json!([])), KEY);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("was chosen for the world model \"memory\"; this run's is \"llm\""),
        "{}",
        text(&refused)
    );
    assert!(runs_in(&refused_dir).is_empty());
}

/// The report's one row (`--format json`) for the run at `path`.
fn report_row(path: &Path, llm: &ScriptedLlm) -> Value {
    let done = cosmos(
        &["report", path.to_str().unwrap(), "--format", "json"],
        llm,
        KEY,
    );
    assert!(done.status.success(), "{}", text(&done));
    serde_json::from_slice::<Value>(&done.stdout).unwrap()["groups"][0].clone()
}

/// A small search with the llm world model, routed as `how` says.
fn small_search<'a>(how: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--world-model",
        "llm",
        "--iterations",
        "4",
        "--candidates",
        "3",
        "--max-depth",
        "3",
    ];
    args.extend_from_slice(how);
    args
}

fn events_of(path: &Path) -> Vec<Value> {
    events(path)
}
