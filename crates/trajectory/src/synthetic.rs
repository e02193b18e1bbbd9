//! Synthetic trajectories of any size, for tests and benchmarks only. Their headers say
//! `"synthetic": true` and name the generator as planner; they never belong in
//! `sample_runs/`.
//!
//! Generated SPIRAL-like runs of any size for tests and benchmarks (marked
//! `synthetic` in the header; never in `sample_runs/`).

use std::path::Path;

use anyhow::Result;
use serde_json::json;

use super::event::{
    Action, AgentInfo, AgentKind, Event, EventBody, Header, ModelInfo, Observation, Phase, Role,
    RunStatus, TaskInfo, ToolInfo, Verdict, WorldModelInfo,
};
use super::redact::Redactor;
use super::run::Run;
use super::writer::{Tally, Writer};
use crate::event::PredictionRecord;

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Search-tree nodes (about 7 events each).
    pub nodes: usize,
    /// Candidates per expansion.
    pub branching: usize,
    /// Extra bytes of padding in each observation (to make files of a given size).
    pub padding: usize,
    /// Seed: the same spec and seed give the same events.
    pub seed: u64,
}

impl Default for Spec {
    fn default() -> Self {
        Self {
            nodes: 100,
            branching: 3,
            padding: 0,
            seed: 1,
        }
    }
}

const TOOLS: [&str; 3] = [
    "time:get_current_time",
    "time:convert_time",
    "units:convert_length",
];
const ZONES: [&str; 4] = ["Europe/Paris", "Asia/Tokyo", "America/New_York", "UTC"];

/// The header of a synthetic run.
pub fn header(spec: &Spec) -> Header {
    let task = TaskInfo {
        id: format!("synthetic_{:03}", spec.seed % 1000),
        request: "What time is it in Tokyo when it is 9:00 in Paris?".into(),
        reference: Some("Convert 09:00 Europe/Paris to Asia/Tokyo.".into()),
        reference_call_count: Some(2),
        source: Some("synthetic".into()),
        ..TaskInfo::default()
    };
    let agent = AgentInfo {
        kind: AgentKind::Spiral,
        settings: [
            ("iterations", json!(spec.nodes / spec.branching.max(1))),
            ("k", json!(spec.branching)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
    };
    let mut h = Header::new(
        format!("synthetic-{}", spec.seed),
        task,
        agent,
        ModelInfo {
            model: "synthetic".into(),
            base_url: None,
        },
    );
    h.synthetic = true;
    h.world_model = Some(WorldModelInfo {
        name: "synthetic".into(),
        details: Default::default(),
    });
    h.tools = TOOLS
        .iter()
        .map(|name| ToolInfo {
            name: name.to_string(),
            description: format!("synthetic {name}"),
            input_schema: crate::event::ToolSchema::new(json!({"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]})),
            ..Default::default()
        })
        .collect();
    h
}

/// Generates the events of a synthetic SPIRAL run, with their times, in order.
pub fn events(spec: &Spec) -> Vec<(u64, EventBody)> {
    let mut rng = fastrand::Rng::with_seed(spec.seed);
    let mut out = Vec::with_capacity(spec.nodes * 7 + 16);
    let mut t = 0u64;
    let mut tick = |rng: &mut fastrand::Rng| {
        t += rng.u64(1..40);
        t
    };
    // Per node: parent, depth, running mean for plan choice, whether it can be expanded.
    let mut parent: Vec<Option<usize>> = vec![None];
    let mut depth: Vec<u32> = vec![0];
    let mut sum: Vec<f64> = vec![0.0];
    let mut visits: Vec<u32> = vec![0];
    let mut expandable: Vec<usize> = vec![0];
    let mut action_of: Vec<Option<Action>> = vec![None];
    let pad = "x".repeat(spec.padding);

    out.push((tick(&mut rng), EventBody::Phase { phase: Phase::Plan }));
    out.push((tick(&mut rng), EventBody::root()));
    while parent.len() < spec.nodes && !expandable.is_empty() {
        // Prefer recent nodes so the tree grows deep as well as wide.
        let pick = expandable.len() - 1 - rng.usize(..expandable.len().min(8));
        let at = expandable[pick];
        if depth[at] >= 8 {
            expandable.swap_remove(pick);
            continue;
        }
        for _ in 0..spec.branching.max(1) {
            if parent.len() >= spec.nodes {
                break;
            }
            let id = parent.len();
            let tool = TOOLS[rng.usize(..TOOLS.len())];
            let zone = ZONES[rng.usize(..ZONES.len())];
            let finish = rng.u8(..10) == 0;
            let action = if finish {
                Action::Finish {
                    answer: Some(format!("It is 16:00 in {zone}.")),
                }
            } else {
                Action::ToolCall {
                    tool: tool.into(),
                    arguments: json!({"timezone": zone}),
                }
            };
            out.push((
                tick(&mut rng),
                EventBody::LlmCall {
                    role: Role::Planner,
                    model: "synthetic".into(),
                    prompt_tokens: 900 + rng.u64(..300),
                    completion_tokens: 40 + rng.u64(..40),
                    tokens_estimated: false,
                    latency_ms: rng.u64(100..900),
                    error: None,
                    messages: None,
                },
            ));
            out.push((
                tick(&mut rng),
                EventBody::NodeAdded {
                    node: id as u64,
                    parent: Some(at as u64),
                    depth: depth[at] + 1,
                    action: Some(action.clone()),
                    prior: None,
                },
            ));
            let predicted_error = rng.u8(..12) == 0;
            if !finish {
                out.push((
                    tick(&mut rng),
                    EventBody::NodeSimulated {
                        node: id as u64,
                        route: None,
                        prediction: PredictionRecord {
                            world_model: "synthetic".into(),
                            observation: observation(zone, predicted_error, &pad),
                            latency_ms: rng.u64(50..400),
                            tokens: Some(200),
                            confidence: None,
                            confidence_source: None,
                            members: Vec::new(),
                            predicted_state: None,
                        },
                    },
                ));
            }
            out.push((
                tick(&mut rng),
                EventBody::LlmCall {
                    role: Role::Critic,
                    model: "synthetic".into(),
                    prompt_tokens: 700,
                    completion_tokens: 20,
                    tokens_estimated: false,
                    latency_ms: rng.u64(50..300),
                    error: None,
                    messages: None,
                },
            ));
            let (verdict, base) = if finish {
                (Verdict::Finish, 1.0)
            } else if predicted_error {
                (Verdict::DeadEnd, -0.5)
            } else {
                (Verdict::Valid, 0.1)
            };
            let critic = (rng.f64() * 100.0).round() / 100.0;
            let reward = 0.5 * base + 0.5 * critic;
            out.push((
                tick(&mut rng),
                EventBody::NodeEvaluated {
                    node: id as u64,
                    verdict,
                    base_reward: base,
                    critic_reward: Some(critic),
                    critic_reason: Some("synthetic".into()),
                    reward,
                    terminal: finish || predicted_error,
                    horizon: None,
                },
            ));
            parent.push(Some(at));
            depth.push(depth[at] + 1);
            sum.push(0.0);
            visits.push(0);
            action_of.push(Some(action));
            let path: Vec<usize> = {
                let mut p = vec![id];
                let mut cur = at;
                loop {
                    p.push(cur);
                    match parent[cur] {
                        Some(up) => cur = up,
                        None => break,
                    }
                }
                p.reverse();
                p
            };
            for &n in &path {
                sum[n] += reward;
                visits[n] += 1;
            }
            out.push((
                tick(&mut rng),
                EventBody::Backpropagated {
                    path: path.iter().map(|&n| n as u64).collect(),
                    value: reward,
                },
            ));
            if !(finish || predicted_error) {
                expandable.push(id);
            }
        }
    }

    // Plan: from the root, follow the tool-call child with the best mean value, then
    // end on the best finish child if there is one.
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); parent.len()];
    for (n, p) in parent.iter().enumerate() {
        if let Some(p) = p {
            children[*p].push(n);
        }
    }
    let mean = |n: usize| sum[n] / f64::from(visits[n].max(1));
    let best = |cur: usize, want_finish: bool| {
        children[cur]
            .iter()
            .copied()
            .filter(|&c| matches!(action_of[c], Some(Action::Finish { .. })) == want_finish)
            .max_by(|&a, &b| mean(a).total_cmp(&mean(b)))
    };
    let mut plan = Vec::new();
    let mut cur = 0usize;
    while let Some(next) = best(cur, false) {
        plan.push(next);
        cur = next;
    }
    plan.extend(best(cur, true));
    out.push((
        tick(&mut rng),
        EventBody::PlanSelected {
            nodes: plan.iter().map(|&n| n as u64).collect(),
            rule: "best_mean".into(),
            choice: None,
            risky: Vec::new(),
        },
    ));
    out.push((
        tick(&mut rng),
        EventBody::Phase {
            phase: Phase::Execute,
        },
    ));
    let mut step = 0;
    for &n in &plan {
        if let Some(Action::ToolCall { tool, arguments }) = &action_of[n] {
            step += 1;
            let zone = arguments["timezone"].as_str().unwrap_or("UTC");
            let failed = rng.u8(..5) == 0;
            out.push((
                tick(&mut rng),
                EventBody::ToolCalled {
                    step,
                    tool: tool.clone(),
                    server: tool.split(':').next().map(str::to_string),
                    arguments: Box::new(arguments.clone()),
                    result: observation(zone, failed, &pad),
                    latency_ms: rng.u64(5..80),
                    node: Some(n as u64),
                    error: None,
                    origin: None,
                    state_change: None,
                },
            ));
        }
    }
    out.push((
        tick(&mut rng),
        EventBody::Phase {
            phase: Phase::Answer,
        },
    ));
    out.push((
        tick(&mut rng),
        EventBody::Answer {
            text: "It is 16:00 in Tokyo.".into(),
        },
    ));
    out
}

fn observation(zone: &str, is_error: bool, pad: &str) -> Observation {
    if is_error {
        Observation {
            text: format!("Error: invalid timezone {zone}{pad}"),
            is_error: true,
            ..Default::default()
        }
    } else {
        Observation {
            text: json!({"timezone": zone, "datetime": "2026-11-29T16:00:00+09:00", "is_dst": false, "pad": pad}).to_string(),
            ..Default::default()
        }
    }
}

/// Pushes the synthetic run's events into `run` (numbered from 1), as a live run's arrive: a
/// run in memory, with no file.
pub fn push_events(run: &mut Run, spec: &Spec) {
    for (i, (t_ms, body)) in events(spec).into_iter().enumerate() {
        run.push(Event {
            seq: i as u64 + 1,
            t_ms,
            body,
        });
    }
}

/// Writes a synthetic run to `path` through the real writer, ending with `run_finished`
/// whose totals come from the tally `tally` makes for the header
/// (`metrics::run::RunAccumulator::tally`).
pub fn write(
    path: &Path,
    spec: &Spec,
    tally: impl FnOnce(&Header) -> Box<dyn Tally>,
) -> Result<()> {
    let header = header(spec);
    let mut writer = Writer::create(path, &header, Redactor::new(), Some(tally(&header)))?;
    let mut last_t = 0;
    for (t, body) in events(spec) {
        writer.write(t, body)?;
        last_t = t;
    }
    // The writer fills in the totals.
    let totals = Default::default();
    writer.write(
        last_t + 1,
        EventBody::RunFinished {
            status: RunStatus::Completed,
            error: None,
            ending: None,
            totals,
            end_digest: Default::default(),
            state_match: Default::default(),
        },
    )?;
    Ok(())
}
