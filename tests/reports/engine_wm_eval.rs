//! `cosmos wm-eval` end to end: the real binary over the committed sample runs, the `memory`
//! world model and an `llm` world model named in cosmos.toml on the scripted endpoint over HTTP.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::*;

#[test]
fn wm_eval_prints_the_leaderboard_shape_and_writes_a_trajectory() {
    let dir = tempfile::tempdir().unwrap();
    // A world model that answers every call with a plausible time conversion, and fails the
    // calls that ask for a zone it does not know.
    let llm = ScriptedLlm::start(json!([
        {"when": ["You simulate an MCP server", "Mars"], "content": predicted("Invalid timezone", true)},
        {"when": "You simulate an MCP server", "content": {"is_error": false, "confidence": 0.6, "content": r#"{"timezone":"UTC","datetime":"2026-11-30T09:00:00+00:00","day_of_week":"Monday","is_dst":false}"#}}
    ]));
    let config = dir.path().join("cosmos.toml");
    std::fs::write(
        &config,
        format!(
            "[world_models.scripted]\nkind = \"llm\"\nbase_url = \"{}\"\nmodel = \"wm-model\"\n",
            llm.base_url()
        ),
    )
    .unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let out = dir.path().join("out");
    let args = [
        "wm-eval",
        samples.to_str().unwrap(),
        "--world-model",
        "memory",
        "--world-model",
        "scripted",
        "--config",
        config.to_str().unwrap(),
        "--format",
        "json",
        "--concurrency",
        "8",
        "--out",
        out.to_str().unwrap(),
    ];
    let output = cosmos(&args, &llm, "sk-test-wm-eval-0123456789");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("stdout is the JSON document");
    let models = doc["world_models"].as_array().unwrap();
    assert_eq!(models.len(), 2);
    assert_eq!(models[0]["name"], "memory");
    assert_eq!(models[1]["name"], "scripted");
    for m in models {
        assert!(m["n"].as_u64().unwrap() > 0, "{m}");
        assert!(m["fidelity"]["mean"].is_number(), "{m}");
        assert!(m["fidelity"]["ci"].is_array(), "{m}");
        let e = &m["error_prediction"];
        assert!(e.get("precision").is_some() && e.get("recall").is_some() && e.get("f1").is_some());
        assert!(!m["by_tool"].as_array().unwrap().is_empty());
    }
    // Recall is measured exactly when some real call of the sample runs failed.
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let failed = std::fs::read_dir(&samples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| !p.to_string_lossy().contains("wm-eval"))
        .any(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .any(|l| l.contains("\"kind\":\"tool_called\"") && l.contains("\"is_error\":true"))
        });
    assert_eq!(
        models[0]["error_prediction"]["recall"].is_number(),
        failed,
        "{}",
        models[0]
    );
    let pairs = doc["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1);
    let p = &pairs[0];
    assert_eq!(
        (p["a"].as_str(), p["b"].as_str()),
        (Some("memory"), Some("scripted"))
    );
    assert!(p["n"].as_u64().unwrap() > 0);
    assert_eq!(
        p["wins"].as_u64().unwrap() + p["ties"].as_u64().unwrap() + p["losses"].as_u64().unwrap(),
        p["n"].as_u64().unwrap()
    );
    assert!(p["ci"].is_array());
    // Every simulation went to the named world model's own model.
    assert!(
        llm.requests()
            .iter()
            .all(|r| r["body"]["model"] == "wm-model")
    );

    // The simulations are a trajectory the other commands read.
    let file = only_run(&out);
    let validate = cosmos(&["validate", file.to_str().unwrap()], &llm, "x");
    assert_eq!(validate.status.code(), Some(0), "{}", text(&validate));
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["agent"]["kind"], "wm_eval");
    let calls = lines.iter().filter(|e| e["kind"] == "tool_called").count();
    let sims = lines
        .iter()
        .filter(|e| e["kind"] == "call_simulated")
        .count();
    let failures = lines
        .iter()
        .filter(|e| e["kind"] == "error" && e["source"] == "world_model")
        .count();
    assert_eq!(
        sims + failures,
        2 * calls,
        "every call, every world model: a prediction or an error"
    );
    // Each simulation carries its world model's own confidence: memory's from its recall,
    // the LLM's in its own word when it gave one (none is made up for the others).
    for sim in lines.iter().filter(|e| e["kind"] == "call_simulated") {
        match sim["world_model"].as_str().unwrap() {
            "memory" => assert_eq!(sim["confidence_source"], "recall", "{sim}"),
            _ if sim["observation"]["is_error"] == true => {
                assert!(sim.get("confidence").is_none(), "{sim}")
            }
            _ => assert_eq!(
                (&sim["confidence"], &sim["confidence_source"]),
                (&json!(0.6), &json!("self")),
                "{sim}"
            ),
        }
    }
    let scripted = &models[1]["calibration"];
    let unsure = lines
        .iter()
        .filter(|e| {
            e["kind"] == "call_simulated"
                && e["world_model"] == "scripted"
                && e.get("confidence").is_none()
        })
        .count();
    assert_eq!(scripted["without_confidence"], unsure, "{scripted}");
    assert_eq!(
        scripted["n"].as_u64().unwrap() + unsure as u64,
        models[1]["n"].as_u64().unwrap(),
        "{scripted}"
    );
    assert!(models[0]["calibration"]["ece"].is_number());
    assert!(
        !std::fs::read_to_string(&file)
            .unwrap()
            .contains("sk-test-wm-eval"),
        "no key in the file"
    );
    // Listed as what it is: an evaluation with its leaderboard's head, never a run with
    // failures (its recorded calls' failures are its data), so `f` passes it by.
    let best = models
        .iter()
        .filter(|m| m["fidelity"]["mean"].is_number())
        .max_by(|a, b| {
            a["fidelity"]["mean"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["fidelity"]["mean"].as_f64().unwrap())
        })
        .unwrap();
    let listed = cosmos_trajectory::listing::RunSummary::read(&file);
    let outcome = listed.outcome();
    assert!(
        outcome.starts_with("evaluation ★ ") && outcome.contains(best["name"].as_str().unwrap()),
        "{outcome}"
    );
    assert!(outcome.ends_with("of 2"), "{outcome}");
    assert!(!outcome.contains('✗'), "{outcome}");
    assert!(listed.clean());
}

#[test]
fn decision_fidelity_asks_the_planner_given_the_real_result_and_each_simulation() {
    let dir = tempfile::tempdir().unwrap();
    // The world model's simulations carry a marker; a planner that sees it finishes, one that
    // sees a real result (or memory's recorded one) calls the clock.
    let llm = ScriptedLlm::start(json!([
        {"when": "You simulate an MCP server", "content": predicted(r#"{"note":"SIMULATED-BY-SCRIPT"}"#, false)},
        {"when": ["next action", "SIMULATED-BY-SCRIPT"], "content": finish("done")},
        {"when": "next action", "content": call("Time MCP:get_current_time", json!({"timezone": "UTC"}))}
    ]));
    let config = dir.path().join("cosmos.toml");
    std::fs::write(
        &config,
        format!(
            "[default]\nbase_url = \"{}\"\nmodel = \"planner-model\"\n[world_models.scripted]\nkind = \"llm\"\n",
            llm.base_url()
        ),
    )
    .unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let out = dir.path().join("out");
    let output = cosmos(
        &[
            "wm-eval",
            samples.to_str().unwrap(),
            "--world-model",
            "memory",
            "--world-model",
            "scripted",
            "--config",
            config.to_str().unwrap(),
            "--decision",
            "--format",
            "json",
            "--out",
            out.to_str().unwrap(),
        ],
        &llm,
        "sk-test-decisions-0123456789",
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    let memory = &doc["world_models"][0]["decision"];
    let scripted = &doc["world_models"][1]["decision"];
    assert!(memory["n"].as_u64().unwrap() > 0, "{doc}");
    assert_eq!(
        memory["same"], memory["n"],
        "recorded results lead to the real decision"
    );
    assert_eq!(
        scripted["same"], 0,
        "the marked simulations lead elsewhere: {scripted}"
    );
    assert!(scripted["rate"]["ci"].is_array());
    // The decisions are in the file, the real one first after each call.
    let file = only_run(&out);
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decided: Vec<&Value> = lines
        .iter()
        .filter(|e| e["kind"] == "planner_decided")
        .collect();
    assert!(decided.iter().any(|e| {
        e["given"] == "real"
            && e["decision"]
                .as_str()
                .unwrap()
                .starts_with("call Time MCP:get_current_time")
    }));
    assert!(
        decided
            .iter()
            .any(|e| e["given"] == "scripted" && e["decision"] == "finish")
    );
    assert!(
        lines
            .iter()
            .any(|e| e["kind"] == "llm_call" && e["role"] == "planner")
    );
}

/// The scripted world model's config, and the wm-eval arguments over the sample runs.
fn held_eval(dir: &Path, llm: &ScriptedLlm, out: &Path) -> Vec<String> {
    let config = dir.join("cosmos.toml");
    std::fs::write(
        &config,
        format!(
            "[world_models.scripted]\nkind = \"llm\"\nbase_url = \"{}\"\nmodel = \"wm-model\"\nmax_retries = 0\n",
            llm.base_url()
        ),
    )
    .unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    [
        "wm-eval",
        samples.to_str().unwrap(),
        "--world-model",
        "scripted",
        "--config",
        config.to_str().unwrap(),
        "--concurrency",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn an_interrupted_wm_eval_keeps_its_simulations_and_a_rerun_does_not_pay_for_them_again() {
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("release");
    // Calls about Tokyo are answered at once; every other call waits for `release`.
    let llm = ScriptedLlm::start(json!([
        {"when": ["You simulate an MCP server", "Tokyo"], "content": predicted("18:00 in Tokyo", false)},
        {"when": "You simulate an MCP server", "content": predicted("{\"ok\": true}", false),
         "hold_until_file": release.to_str().unwrap()}
    ]));
    let out = dir.path().join("out");
    let args = held_eval(dir.path(), &llm, &out);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(&args)
        .env("COSMOS_LOG_FILE", dir.path().join("log"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until some simulations are written (each is written as it completes).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let file = loop {
        let written = std::fs::read_dir(&out).ok().and_then(|d| {
            d.flatten().map(|e| e.path()).find(|p| {
                std::fs::read_to_string(p)
                    .unwrap_or_default()
                    .contains("call_simulated")
            })
        });
        if let Some(f) = written {
            break f;
        }
        assert!(std::time::Instant::now() < deadline, "nothing was written");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // Wait until a held request is in flight (the endpoint logs it as it arrives), then Ctrl-C.
    while !llm
        .requests()
        .iter()
        .any(|r| !r["body"].to_string().contains("Tokyo"))
    {
        assert!(std::time::Instant::now() < deadline, "no request was held");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let asked_before_stop = llm.requests().len();
    let stopped_at = std::time::Instant::now();
    // SAFETY: a signal to the child this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let ended = child.wait_with_output().unwrap();
    assert!(
        stopped_at.elapsed() < std::time::Duration::from_secs(3),
        "stopping took {:?}",
        stopped_at.elapsed()
    );
    let said = String::from_utf8_lossy(&ended.stderr).to_string();
    assert_eq!(ended.status.code(), Some(130), "{said}");
    let first = events(&file);
    let kept = first
        .iter()
        .filter(|e| e["kind"] == "call_simulated")
        .count();
    assert!(kept > 0);
    assert_eq!(first.last().unwrap()["status"], "interrupted");
    let validate = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["validate", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(validate.status.code(), Some(0), "{}", text(&validate));

    // The rerun takes those simulations from the file and asks only for the others.
    std::fs::write(&release, "").unwrap();
    let again = cosmos(&args, &llm, "sk-x");
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(
        text(&again).contains(&format!("{kept} simulation(s) taken from earlier")),
        "{}",
        text(&again)
    );
    // Every call once over both runs: the rerun asked only for the ones not kept.
    let second = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p != &file)
        .unwrap();
    let calls = events(&second)
        .iter()
        .filter(|e| e["kind"] == "tool_called")
        .count();
    // (Identical calls in the same context share one simulation, so fewer may be asked.)
    let asked_again = llm.requests().len() - asked_before_stop;
    assert!(
        asked_again > 0 && asked_again <= calls - kept,
        "{asked_again} asked again: {calls} calls, {kept} kept"
    );
    assert_eq!(
        events(&second)
            .iter()
            .filter(|e| e["kind"] == "call_simulated")
            .count(),
        calls,
        "the rerun's file is whole"
    );
    // A third run has every simulation in the folder already: it asks for nothing.
    let asked = llm.requests().len();
    let third = cosmos(&args, &llm, "sk-x");
    assert_eq!(third.status.code(), Some(0), "{}", text(&third));
    assert_eq!(llm.requests().len(), asked, "{}", text(&third));
    assert!(
        text(&third).contains(&format!("{calls} simulation(s) taken from earlier")),
        "{}",
        text(&third)
    );
}

#[test]
fn an_out_folder_that_cannot_be_written_is_refused_before_any_simulation() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "You simulate an MCP server", "content": predicted("x", false)}
    ]));
    // A file where the folder should be.
    let out = dir.path().join("not-a-folder");
    std::fs::write(&out, "").unwrap();
    let args = held_eval(dir.path(), &llm, &out);
    let o = cosmos(&args, &llm, "sk-x");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("not-a-folder"), "{}", text(&o));
    assert!(llm.requests().is_empty(), "nothing was simulated");
}

/// An ensemble of `memory` and an `llm` world model on the scripted endpoint: both asked each
/// call, each member's prediction recorded beside the one picked, the members' agreement
/// (their fidelity to each other, by the one function) as its confidence; where the LLM fails
/// (HTTP 500 on every temperature call) its error is recorded as that member's and the ensemble
/// answers from memory alone, with no confidence (one answer agrees with nothing).
#[test]
fn an_ensemble_records_each_member_and_answers_with_their_agreement() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": ["You simulate an MCP server", "convert_temperature"], "status": 500, "content": "down"},
        {"when": "You simulate an MCP server", "content": {"is_error": false, "confidence": 0.7, "content": r#"{"timezone":"UTC","datetime":"2026-11-30T09:00:00+00:00","day_of_week":"Monday","is_dst":false}"#}}
    ]));
    let (doc, events) = wm_eval_over_samples(
        dir.path(),
        &llm,
        &format!(
            "[world_models.scripted]\nkind = \"llm\"\nbase_url = \"{}\"\nmodel = \"wm-model\"\nmax_retries = 0\n\
             [world_models.both]\nkind = \"ensemble\"\nmembers = [\"memory\", \"scripted\"]\n",
            llm.base_url()
        ),
        &["both"],
    );
    assert_eq!(doc["world_models"][0]["name"], "both");
    assert!(doc["world_models"][0]["n"].as_u64().unwrap() > 0);
    let described = &events[0]["agent"]["settings"]["world_models"][0];
    assert_eq!(described["kind"], "ensemble", "{described}");
    assert_eq!(described["pick"], "closest", "{described}");
    assert_eq!(described["members"][1]["name"], "scripted", "{described}");
    let sims: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "call_simulated")
        .collect();
    let (mut agreed, mut alone) = (0, 0);
    for sim in &sims {
        let members = sim["members"].as_array().expect("each member recorded");
        let names: Vec<&str> = members
            .iter()
            .map(|m| m["world_model"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["memory", "scripted"], "{sim}");
        let answered: Vec<&Value> = members
            .iter()
            .filter(|m| m.get("observation").is_some())
            .collect();
        for m in members {
            // A member gives a prediction or an error, never both.
            assert_ne!(
                m.get("observation").is_some(),
                m.get("error").is_some(),
                "{m}"
            );
        }
        if answered.len() == 2 {
            agreed += 1;
            let observation = |m: &Value| -> cosmos_trajectory::event::Observation {
                serde_json::from_value(m["observation"].clone()).unwrap()
            };
            let (a, b) = (observation(answered[0]), observation(answered[1]));
            let both_ways = (cosmos_engine::metrics::fidelity::compare(&a, &b).score
                + cosmos_engine::metrics::fidelity::compare(&b, &a).score)
                / 2.0;
            assert_eq!(sim["confidence_source"], "agreement", "{sim}");
            assert!(
                (sim["confidence"].as_f64().unwrap() - both_ways).abs() < 1e-9,
                "{sim}"
            );
            // With two answers each is as close to the other: the first is picked.
            assert_eq!(sim["observation"], answered[0]["observation"], "{sim}");
            assert_eq!(members[1]["confidence_source"], "self", "{sim}");
        } else {
            assert_eq!(answered.len(), 1, "{sim}");
            alone += 1;
            assert!(sim.get("confidence").is_none(), "{sim}");
            assert_eq!(sim["observation"], answered[0]["observation"], "{sim}");
        }
    }
    assert!(agreed > 0 && alone > 0, "agreed {agreed}, alone {alone}");
    // The scripted member's failure is its own: the temperature calls it failed were answered.
    let failed_llm = sims
        .iter()
        .filter(|s| {
            s["members"][1]["error"]
                .as_str()
                .is_some_and(|e| e.contains("500"))
        })
        .count();
    assert!(failed_llm > 0);
    // Its LLM calls are the run's, counted as every world model's are.
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "llm_call" && e["role"] == "world_model")
    );
}

/// An `llm` world model with `logprobs = true` asks the endpoint for token log-probabilities
/// and, when they come, takes its confidence from them (the geometric mean of the reply's
/// token probabilities, source `logprobs`) instead of the model's own word; one without it
/// never asks, and keeps the model's word (`self`).
#[test]
fn an_llm_world_model_asked_for_logprobs_takes_its_confidence_from_them() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "You simulate an MCP server", "logprobs": [-0.1, -0.3],
         "content": {"is_error": false, "confidence": 0.6, "content": "{\"timezone\":\"UTC\"}"}}
    ]));
    let (_, events) = wm_eval_over_samples(
        dir.path(),
        &llm,
        &format!(
            "[world_models.probs]\nkind = \"llm\"\nbase_url = \"{0}\"\nmodel = \"wm-probs\"\nlogprobs = true\n\
             [world_models.words]\nkind = \"llm\"\nbase_url = \"{0}\"\nmodel = \"wm-words\"\n",
            llm.base_url()
        ),
        &["probs", "words"],
    );
    let expected = (-0.2f64).exp();
    let mut seen = (0, 0);
    for sim in events.iter().filter(|e| e["kind"] == "call_simulated") {
        match sim["world_model"].as_str().unwrap() {
            "probs" => {
                seen.0 += 1;
                assert_eq!(sim["confidence_source"], "logprobs", "{sim}");
                assert!(
                    (sim["confidence"].as_f64().unwrap() - expected).abs() < 1e-9,
                    "{sim}"
                );
            }
            "words" => {
                seen.1 += 1;
                assert_eq!(
                    (&sim["confidence"], &sim["confidence_source"]),
                    (&json!(0.6), &json!("self")),
                    "{sim}"
                );
            }
            other => panic!("{other}"),
        }
    }
    assert!(seen.0 > 0 && seen.1 > 0, "{seen:?}");
    // Only the world model that takes them asked.
    let requests = llm.requests();
    assert!(
        requests.iter().all(|r| {
            (r["body"]["model"] == "wm-probs") == (r["body"]["logprobs"] == json!(true))
        })
    );
    let described = &events[0]["agent"]["settings"]["world_models"];
    assert_eq!(described[0]["logprobs"], true, "{described}");
    assert!(described[1].get("logprobs").is_none(), "{described}");
}

/// `cosmos wm-eval` over the sample runs with `config` (a cosmos.toml's text) and `models`,
/// writing into `dir/out`: its JSON document on stdout (it must succeed) and its file's events.
fn wm_eval_over_samples(
    dir: &Path,
    llm: &ScriptedLlm,
    config: &str,
    models: &[&str],
) -> (Value, Vec<Value>) {
    let path = dir.join("cosmos.toml");
    std::fs::write(&path, config).unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let out = dir.join("out");
    let mut args = vec!["wm-eval".to_string(), samples.display().to_string()];
    for m in models {
        args.extend(["--world-model".to_string(), m.to_string()]);
    }
    args.extend(
        [
            "--config",
            path.to_str().unwrap(),
            "--format",
            "json",
            "--out",
            out.to_str().unwrap(),
        ]
        .map(String::from),
    );
    let output = cosmos(&args, llm, "sk-test-wm-eval-samples-0123456789");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let doc = serde_json::from_slice(&output.stdout).expect("stdout is the JSON document");
    (doc, events(&only_run(&out)))
}

/// Truth III: a world model whose endpoint is down predicts nothing; `wm-eval` says so, naming
/// the endpoint in the first failure, and exits non-zero (never `0/19 failed 19` and exit 0),
/// while the file keeps every failure and the other world model's figures.
#[test]
fn a_world_model_that_predicted_nothing_fails_the_command_naming_its_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let dead = dead_port();
    let llm = ScriptedLlm::start(json!([]));
    let config = dir.path().join("cosmos.toml");
    std::fs::write(
        &config,
        format!(
            "[world_models.down]\nkind = \"llm\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nmodel = \"wm-model\"\nmax_retries = 0\n",
            dead.port
        ),
    )
    .unwrap();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let out = dir.path().join("out");
    let output = cosmos(
        &[
            "wm-eval",
            sample.to_str().unwrap(),
            "--world-model",
            "memory",
            "--world-model",
            "down",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &llm,
        "sk-test-wm-eval-down-0123456789",
    );
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains("world model \"down\" made no prediction of any of its")
            && said.contains(&dead.port.to_string()),
        "{said}"
    );
    assert!(!said.contains("world model \"memory\" made no"), "{said}");
    let events = events(&only_run(&out));
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "error" && e["name"] == "down"),
        "the failures are kept"
    );
    // Truth IV: the file ends failed too, so no view draws the evaluation as a success.
    let finished = events.last().unwrap();
    assert_eq!(finished["status"], "failed", "{finished}");
    assert!(
        finished["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("down predicted none of its")),
        "{finished}"
    );
}

/// An `llm` world model shown recorded results (`examples_from`: up to 5 nearest calls) is
/// evaluated leave one run out, as `memory` is: a call of one run is never shown a result
/// recorded in that same run, which could be the very answer it is asked for.
#[test]
fn an_llm_shown_recorded_examples_is_never_shown_its_own_runs_calls() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let mut calls_of_run: Vec<Vec<Value>> = Vec::new();
    for name in [
        "20261202T025240.637Z_time_mcp_000_react_none.jsonl",
        "20261202T025519.823Z_time_mcp_001_react_none.jsonl",
    ] {
        std::fs::copy(samples.join(name), runs.join(name)).unwrap();
        let text = std::fs::read_to_string(runs.join(name)).unwrap();
        calls_of_run.push(
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|e| e["kind"] == "tool_called")
                .map(|e| e["arguments"].clone())
                .collect(),
        );
    }
    let llm = ScriptedLlm::start(json!([
        {"when": "You simulate an MCP server", "content": predicted("{}", false)}
    ]));
    let config = dir.path().join("cosmos.toml");
    std::fs::write(
        &config,
        format!(
            "[world_models.shown]\nkind = \"llm\"\nbase_url = \"{}\"\nmodel = \"wm-model\"\n\
             examples_from = [\"{}\"]\n",
            llm.base_url(),
            runs.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let args = [
        "wm-eval",
        runs.to_str().unwrap(),
        "--world-model",
        "shown",
        "--config",
        config.to_str().unwrap(),
        "--format",
        "json",
        "--out",
        out.to_str().unwrap(),
    ];
    let output = cosmos(&args, &llm, "sk-test-wm-eval-0123456789");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    // The first JSON value after `marker` in `said`.
    let json_after = |said: &str, marker: &str| -> Option<Value> {
        let from = said.find(marker)? + marker.len();
        serde_json::Deserializer::from_str(&said[from..])
            .into_iter::<Value>()
            .next()?
            .ok()
    };
    let mut shown = 0;
    for request in llm.requests() {
        let said = request["body"]["messages"][1]["content"]
            .as_str()
            .unwrap_or_default();
        let Some(asked) = json_after(said, "Arguments: ") else {
            continue;
        };
        // Every example line: `- arguments {…}: result`.
        let examples: Vec<Value> = said
            .match_indices("\n- arguments ")
            .filter_map(|(at, marker)| json_after(&said[at..], marker))
            .collect();
        assert!(examples.len() <= 5, "more than the default 5: {said}");
        shown += examples.len();
        let own: Vec<&Vec<Value>> = calls_of_run.iter().filter(|c| c.contains(&asked)).collect();
        if let [own] = own[..] {
            for example in &examples {
                assert!(
                    !own.contains(example),
                    "a call of {asked} was shown {example}, recorded in its own run"
                );
            }
        }
    }
    assert!(shown > 0, "no request showed an example");
}
