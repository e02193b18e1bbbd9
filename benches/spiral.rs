//! SPIRAL-Exec benchmark: prints figures, asserts nothing. `cargo bench --bench spiral`.
//!
//! 1. Search overhead per iteration at 10^4 nodes, excluding model time: an environment
//!    whose planner, world model and critic answer instantly.
//! 2. Phase-1 wall time against a real HTTP endpoint (tests/support/scripted_llm.py) with a
//!    fixed 200 ms latency per call, at concurrency 1 versus K.
//! 3. Settled paths, revisited (SPIRAL's default) or skipped (`--skip-settled`): where the
//!    iterations go, and the plan each finds.

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cosmos_engine::agent::EventSink;
use cosmos_engine::agent::Prediction;
use cosmos_engine::agent::{
    Answer, Critique, PlanRule, Proposal, SearchEnv, Settings, Settled, Stopped, search,
};
use cosmos_engine::llm::LlmClient;
use cosmos_engine::llm::Message;
use cosmos_engine::llm::{Endpoint, OutputMode};
use cosmos_engine::world_model::HistoryStep;
use cosmos_trajectory::event::EventBody;
use cosmos_trajectory::event::{Action, Observation};
use serde_json::{Value, json};

/// Counts events and keeps none.
struct Count(usize);

impl EventSink for Count {
    fn emit(&mut self, _: EventBody) -> anyhow::Result<()> {
        self.0 += 1;
        Ok(())
    }
}

/// Proposes K distinct calls; answers instantly, or through a real endpoint when given one.
struct Instant0 {
    k: usize,
    http: Option<Arc<LlmClient>>,
    /// From this depth on, the first candidate is a finish.
    finish_from: usize,
}

impl SearchEnv for Instant0 {
    fn propose<'a>(
        &'a self,
        history: &'a [HistoryStep],
        k: usize,
        _feedback: Option<&'a str>,
    ) -> Answer<'a, Result<Proposal, String>> {
        let mut out: Vec<Action> = (0..k.min(self.k))
            .map(|i| Action::ToolCall {
                tool: "t:x".into(),
                arguments: json!({"i": i, "d": history.len()}),
            })
            .collect();
        // The overhead run only grows the tree; the others' paths finish from `finish_from` on.
        if history.len() >= self.finish_from {
            out[0] = Action::Finish { answer: None };
        }
        Box::pin(async move {
            let proposal = Proposal {
                actions: out,
                rejected: vec![],
            };
            (Ok(proposal), vec![])
        })
    }
    fn invalid(&self, _t: &str, _a: &Value) -> Option<String> {
        None
    }
    fn simulate<'a>(
        &'a self,
        _h: &'a [HistoryStep],
        _t: &'a str,
        a: &'a Value,
    ) -> Answer<'a, Result<Prediction, String>> {
        Box::pin(async move {
            if let Some(c) = &self.http {
                let _ = c.complete_text(&[Message::user("simulate")]).await;
            }
            let observation = Observation {
                text: a.to_string(),
                ..Default::default()
            };
            (
                Ok(Prediction {
                    observation,
                    tokens: None,
                    confidence: None,
                    members: Vec::new(),
                    predicted_state: None,
                }),
                vec![],
            )
        })
    }
    fn critique<'a>(
        &'a self,
        _h: &'a [HistoryStep],
        _a: &'a Action,
        _o: Option<&'a Observation>,
    ) -> Answer<'a, Option<Critique>> {
        Box::pin(async move {
            if let Some(c) = &self.http {
                let _ = c.complete_text(&[Message::user("critique")]).await;
            }
            (
                Some(Critique {
                    score: 0.5,
                    reason: String::new(),
                }),
                vec![],
            )
        })
    }
    fn should_stop(&self) -> Option<Stopped> {
        None
    }
    fn world_model_name(&self) -> String {
        "bench".into()
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();

    // 1. Overhead at 10^4 nodes.
    let env = Instant0 {
        k: 3,
        http: None,
        finish_from: usize::MAX,
    };
    let settings = Settings {
        iterations: 3_400,
        max_depth: 12,
        k: 3,
        plan_rule: PlanRule::BestMean,
        ..Settings::default()
    };
    let mut count = Count(0);
    let start = Instant::now();
    let tree = rt
        .block_on(search(&env, &settings, &mut count))
        .expect("counting never fails")
        .tree;
    let elapsed = start.elapsed();
    let events = count.0;
    println!(
        "search overhead: {} nodes, {} iterations, {events} events in {:.1} ms = {:.1} µs per iteration   (target < 100 µs)",
        tree.nodes.len(),
        settings.iterations,
        elapsed.as_secs_f64() * 1e3,
        elapsed.as_secs_f64() * 1e6 / settings.iterations as f64
    );
    let start = Instant::now();
    let plan = tree.plan(PlanRule::BestMean);
    println!(
        "plan selection over {} nodes: {:.2} ms ({} steps)",
        tree.nodes.len(),
        start.elapsed().as_secs_f64() * 1e3,
        plan.len()
    );

    // 2. Phase 1 against an endpoint with a fixed 200 ms latency.
    let dir = std::env::temp_dir().join("cosmos-spiral-bench");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("script.json");
    std::fs::write(
        &script,
        json!({"rules": [{"delay_s": 0.2, "content": "ok"}]}).to_string(),
    )
    .unwrap();
    let mut server = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/support/scripted_llm.py"
        ))
        .arg(&script)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port = first.trim().trim_start_matches("PORT ").to_string();
    let client = Arc::new(LlmClient::new(Endpoint {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        model: "bench".into(),
        api_key: None,
        temperature: 0.0,
        max_tokens: 8,
        timeout: Duration::from_secs(10),
        max_retries: 0,
        output: OutputMode::Json,
        record_messages: false,
        logprobs: false,
    }));
    let k = 3;
    let env = Instant0 {
        k,
        http: Some(client),
        finish_from: 3,
    };
    let mut times = Vec::new();
    for concurrency in [1, k] {
        let settings = Settings {
            iterations: 5,
            k,
            concurrency,
            ..Settings::default()
        };
        let start = Instant::now();
        rt.block_on(search(&env, &settings, &mut Count(0)))
            .expect("counting never fails");
        let t = start.elapsed().as_secs_f64();
        times.push(t);
        println!(
            "phase 1, 5 iterations × K={k} (2 calls of 200 ms per candidate), concurrency {concurrency}: {t:.2} s"
        );
    }
    println!(
        "speed-up at concurrency K: {:.2}×   (target: close to K = {k})",
        times[0] / times[1]
    );
    let _ = server.kill();
    let _ = server.wait();

    // 3. Settled paths: SPIRAL's revisits (the default) against skipping them, on a tree where
    // a finish is offered from depth 1 (base rewards only: a finish scores 1.0, a call 0.1).
    let env = Instant0 {
        k: 3,
        http: None,
        finish_from: 1,
    };
    for settled in [Settled::Revisit, Settled::Skip] {
        let settings = Settings {
            iterations: 200,
            max_depth: 4,
            k: 3,
            alpha: 1.0,
            settled,
            ..Settings::default()
        };
        let searched = rt
            .block_on(search(&env, &settings, &mut Count(0)))
            .expect("counting never fails");
        let a = searched.accounting;
        let plan = searched.tree.plan(PlanRule::BestMean);
        let best = plan
            .last()
            .map_or(f64::NAN, |&n| searched.tree.nodes[n].q());
        println!(
            "settled = {:<7}: {} iterations run of {}, {} expanded, {} revisited finished paths, {} nodes, stopped {:?}, plan depth {} ending at Q {best:.2}",
            settled.as_str(),
            a.iterations,
            settings.iterations,
            a.expanded,
            a.revisited,
            searched.tree.nodes.len(),
            searched.stopped,
            plan.len()
        );
    }
}
