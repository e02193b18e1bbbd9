//! Readable accounts of one run: `cosmos export markdown RUN`, for pasting into an issue or a
//! model (the task, the settings, the plan and why it won, each step with the simulated and
//! the real result side by side and their fidelity, the answer, the metrics, the notes), and
//! `cosmos export json RUN`, the whole run as one JSON document (docs/export.md). Both take
//! the metrics from `metrics::run` (`RunFacts::at` on the whole run, what `of_run` gives) and
//! the plan's reason from `plan_why`, as every view does.

use std::io::Write;

use anyhow::Result;
use serde_json::Value;

use cosmos_metrics::run::{RunFacts, RunMetrics, of_run};
use cosmos_trajectory::describe::{Latencies, call_label, summary};
use cosmos_trajectory::event::{EventBody, Observation, Source};
use cosmos_trajectory::fold::TreeState;
use cosmos_trajectory::plan_why::plan_why;
use cosmos_trajectory::recorded_call::RecordedCall;
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize::one_line;

/// The version of the JSON document's shape.
pub const JSON_VERSION: u32 = 2;

/// Longest result quoted whole in the markdown account; longer ones are cut, saying so.
const RESULT_CHARS: usize = 4_000;

/// A fenced block that no backtick run inside `text` can close early.
fn fenced(text: &str, lang: &str) -> String {
    let mut fence = "```".to_string();
    while text.contains(&fence) {
        fence.push('`');
    }
    format!("{fence}{lang}\n{}\n{fence}\n", text.trim_end())
}

fn cut(text: &str) -> String {
    let n = text.chars().count();
    if n <= RESULT_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(RESULT_CHARS).collect();
    format!(
        "{kept}\n… ({} more characters in the run's file)",
        n - RESULT_CHARS
    )
}

fn observation(o: &Observation) -> String {
    let text = if o.text.is_empty() {
        o.structured
            .as_ref()
            .map(|v| v.to_string())
            .unwrap_or_default()
    } else {
        o.text.clone()
    };
    let pretty = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or(text);
    cut(&pretty)
}

/// The markdown account of `run`, written to `out`.
pub fn markdown(run: &Run, out: &mut dyn Write) -> Result<()> {
    let k = run.len();
    // The run read once: its fold and facts serve the plan, the steps and the metrics alike
    // (the metrics as `metrics::run::of_run` makes them).
    let state = TreeState::fold(run, k);
    let facts = RunFacts::of(run);
    settings_section(run, out)?;
    plan_section(run, &state, out)?;
    steps_section(run, &facts, out)?;
    writeln!(out, "\n## Answer\n")?;
    match run.answer_at(k) {
        Some(answer) => out.write_all(fenced(answer, "text").as_bytes())?,
        None => writeln!(out, "No answer.")?,
    }
    metrics_section(&facts.at(run, k, &state), out)?;
    source_verdict_section(run, out)?;
    let notes: Vec<String> = run
        .all_events()
        .iter()
        .filter(|e| matches!(e.body, EventBody::Annotation { .. }))
        .map(|e| summary(e, Latencies::of(&run.header)))
        .collect();
    if !notes.is_empty() {
        writeln!(out, "\n## Notes\n")?;
        for note in notes {
            writeln!(out, "- {note}")?;
        }
    }
    Ok(())
}

/// The verdicts the run's source recorded (an imported sample's scores), as it said them.
fn source_verdict_section(run: &Run, out: &mut dyn Write) -> Result<()> {
    let scores: Vec<_> = run
        .source_scores()
        .iter()
        .map(|&i| run.event(i as usize))
        .collect();
    if scores.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n## The source's verdict\n")?;
    writeln!(
        out,
        "| scorer | value | answer | explanation | target |\n|---|---|---|---|---|"
    )?;
    for event in scores {
        if let EventBody::SourceScored {
            scorer,
            value,
            passed,
            answer,
            explanation,
            target,
        } = &event.body
        {
            let cell = |text: &str| one_line(text, 200).replace('|', "\\|");
            writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cell(scorer),
                cell(&cosmos_trajectory::describe::source_verdict(value, *passed)),
                cell(answer.as_deref().unwrap_or("—")),
                cell(explanation.as_deref().unwrap_or("—")),
                cell(&target.as_ref().map_or("—".to_string(), |t| match t {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })),
            )?;
        }
    }
    Ok(())
}

/// The Markdown account's title, task, settings and the lines the reader skipped.
fn settings_section(run: &Run, out: &mut dyn Write) -> Result<()> {
    let h = &run.header;
    writeln!(
        out,
        "# {} · {} · {}\n",
        h.task.id,
        h.agent.kind.as_str(),
        h.world_model_name()
    )?;
    writeln!(
        out,
        "Run `{}`, started {}, mcp-cosmos {}.\n",
        h.run_id,
        h.started_at
            .map_or_else(|| "—".to_string(), |t| t.to_string()),
        h.tool_version
    )?;
    writeln!(out, "## Task\n")?;
    out.write_all(fenced(&h.task.request, "text").as_bytes())?;
    writeln!(out, "\n## Settings\n")?;
    writeln!(out, "| setting | value |\n|---|---|")?;
    writeln!(out, "| made | {} |", h.made_by())?;
    for (key, value) in &h.agent.settings {
        writeln!(out, "| {key} | `{value}` |")?;
    }
    writeln!(out, "| planner | {} |", h.planner.model)?;
    for (role, m) in &h.roles {
        writeln!(out, "| {role} | {} |", m.model)?;
    }
    if let Some(label) = &h.label {
        writeln!(out, "| label | {label} |")?;
    }
    let servers: Vec<&str> = h.servers.iter().map(|s| s.name.as_str()).collect();
    if servers.is_empty() && h.source.is_some() {
        writeln!(out, "| servers | — (the source listed none) |")?;
    } else {
        writeln!(out, "| servers | {} |", servers.join(", "))?;
    }
    // A source that listed no tools says nothing of how many there were.
    if h.recorded(Source::TOOLS) {
        writeln!(out, "| tools | {} |", h.tools.len())?;
    } else {
        writeln!(out, "| tools | — (the source listed none) |")?;
    }
    let skipped: Vec<String> = skipped_lines(run).collect();
    if !skipped.is_empty() {
        writeln!(
            out,
            "\n## Lines skipped\n\n{} line(s) of the file could not be read; nothing below \
             counts what they held:\n",
            skipped.len()
        )?;
        for line in &skipped {
            writeln!(out, "- `{line}`")?;
        }
    }

    Ok(())
}

/// Why the plan was chosen (its rule and candidates), and each search's accounting.
fn plan_section(run: &Run, state: &TreeState, out: &mut dyn Write) -> Result<()> {
    let k = run.len();
    if let Some(why) = plan_why(run, state, k) {
        writeln!(out, "\n## Plan\n")?;
        writeln!(out, "Rule `{}`: {}.", why.rule, why.path)?;
        if !why.pool.is_empty() {
            let pool = if why.finished {
                "finished paths"
            } else {
                "nodes (no path finished)"
            };
            writeln!(out, "Chosen among {} {pool}:\n", why.pool_size)?;
            if let Some(caveat) = why.caveat() {
                writeln!(out, "({caveat}.)\n")?;
            }
            writeln!(out, "| | node | Q | N | action |\n|---|---|---:|---:|---|")?;
            let tie = match why.tie_rule() {
                Some(rule) => format!("= (tie: {})", rule.words()),
                None => "= (tie)".to_string(),
            };
            for c in why.pool.iter().take(12) {
                let (id, label) = c.described(run);
                let mark = if c.chosen {
                    "★"
                } else if c.ties {
                    tie.as_str()
                } else {
                    ""
                };
                writeln!(
                    out,
                    "| {mark} | #{id} | {} | {} | `{label}` |",
                    c.q_text(),
                    c.visits
                )?;
            }
        }
    }
    for &i in run.searches_before(k) {
        if let Some(said) =
            cosmos_trajectory::describe::search_accounting(&run.event(i as usize).body)
        {
            writeln!(out, "\nSearch: {said}.")?;
        }
    }

    Ok(())
}

/// Each real step: the simulated result beside the real one, and its fidelity.
fn steps_section(run: &Run, facts: &RunFacts, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "\n## Steps\n")?;
    if run.steps().is_empty() {
        writeln!(out, "No real tool call was made.")?;
    }
    for (i, step) in run.steps().iter().enumerate() {
        let event = run.event(step.event as usize);
        let Some(RecordedCall {
            step: n,
            tool,
            arguments,
            result,
            error,
            ..
        }) = RecordedCall::of(&event.body)
        else {
            continue;
        };
        let mark = if step.is_error { " ✗" } else { "" };
        writeln!(out, "### {n}. `{}`{mark}\n", call_label(tool, arguments))?;
        let simulated = step.simulated.and_then(|e| run.simulated_observation(e));
        match &simulated {
            Some(sim) => {
                writeln!(
                    out,
                    "Simulated{}:\n",
                    if sim.is_error { " (an error)" } else { "" }
                )?;
                out.write_all(fenced(&observation(sim), "").as_bytes())?;
            }
            None => writeln!(
                out,
                "Simulated: none (no world model rehearsed this call).\n"
            )?,
        }
        writeln!(
            out,
            "\nReal{}:\n",
            if step.is_error { " (an error)" } else { "" }
        )?;
        let real = match error {
            Some(e) => e.to_string(),
            None => observation(result),
        };
        out.write_all(fenced(&real, "").as_bytes())?;
        if let Some(f) = facts.step(i).and_then(|f| f.fidelity) {
            writeln!(out, "\nFidelity {:.2}.\n", f.score)?;
        }
    }

    Ok(())
}

/// The run's metrics, as `metrics::run` computes them.
fn metrics_section(metrics: &RunMetrics, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "\n## Metrics\n")?;
    writeln!(out, "| metric | value |\n|---|---|")?;
    let rate = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.3}"));
    writeln!(
        out,
        "| status | {} |",
        metrics.status.map_or("incomplete", |s| s.as_str())
    )?;
    if let Some(ending) = metrics.ending {
        writeln!(out, "| ending | {} |", ending.as_str())?;
    }
    writeln!(out, "| tool calls | {} |", metrics.tool_calls)?;
    writeln!(
        out,
        "| tool call success rate | {} |",
        rate(metrics.tool_call_success_rate)
    )?;
    writeln!(
        out,
        "| valid tool name rate | {} |",
        rate(metrics.valid_tool_name_rate)
    )?;
    writeln!(
        out,
        "| input schema compliance | {} |",
        rate(metrics.input_schema_compliance)
    )?;
    writeln!(
        out,
        "| rejected decisions | {} |",
        metrics.rejected_decisions
    )?;
    writeln!(
        out,
        "| fidelity | {} |",
        rate(metrics.fidelity.map(|f| f.score))
    )?;
    // What the source did not record reads "—", never a made-up 0.
    let tokens = if metrics.tokens_unrecorded {
        "—".to_string()
    } else {
        metrics.tokens().to_string()
    };
    writeln!(out, "| tokens | {tokens} |")?;
    let wall = if metrics.times_unrecorded {
        "—".to_string()
    } else {
        format!("{:.1} s", metrics.wall_ms as f64 / 1000.0)
    };
    writeln!(out, "| wall time | {wall} |")?;

    Ok(())
}

/// The run's lines the reader skipped, each as `report`'s `skipped_lines` gives it.
pub fn skipped_lines(run: &Run) -> impl Iterator<Item = String> + '_ {
    run.problems
        .iter()
        .filter(|p| p.skipped)
        .map(ToString::to_string)
}

/// The whole run as one JSON document: `{format, version, header, events, metrics,
/// skipped_lines}`, events as the file holds them, metrics as every view shows them, the lines
/// the reader could not use as `report` lists them. Written as it is read.
pub fn json(run: &Run, out: &mut dyn Write) -> Result<()> {
    let metrics = of_run(run);
    write!(
        out,
        "{{\"format\":\"mcp-cosmos-run\",\"version\":{JSON_VERSION},\"header\":"
    )?;
    serde_json::to_writer(&mut *out, &run.header)?;
    out.write_all(b",\"events\":[")?;
    for i in 0..run.len() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &*run.event(i))?;
    }
    out.write_all(b"],\"metrics\":")?;
    serde_json::to_writer(&mut *out, &metrics)?;
    // What the reader could not use, as `report` lists it: nothing above counts it.
    out.write_all(b",\"skipped_lines\":")?;
    let skipped: Vec<String> = skipped_lines(run).collect();
    serde_json::to_writer(&mut *out, &skipped)?;
    out.write_all(b"}\n")?;
    Ok(())
}
