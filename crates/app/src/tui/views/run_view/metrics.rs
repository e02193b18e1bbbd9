//! The metrics pane: the run's numbers at the cursor and small charts over time.

use cosmos_engine::metrics::figure;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Sparkline};

use crate::tui::theme::Theme;
use cosmos_engine::metrics::run::{
    RunMetrics, decisions_are_calls, is_the_agents, rejection_is_a_call,
};
use cosmos_trajectory::event::{EventBody, Phase, Role};
use cosmos_trajectory::fold::TreeState;
use cosmos_trajectory::lean::LeanBody;
use cosmos_trajectory::recorded_call::RecordedCall;
use cosmos_trajectory::run::Run;

/// Samples per chart.
const SAMPLES: usize = 120;

/// Values over time, sampled at fixed event positions; the pane shows the samples before the
/// cursor, then the cursor's own values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    /// Cursor position of each sample.
    pub at: Vec<usize>,
    /// Real tool calls so far.
    pub tool_calls: Vec<u64>,
    /// Tokens so far.
    pub tokens: Vec<u64>,
    /// Best mean value Q over the tree so far, ×100 (sparklines take integers).
    pub best_value: Vec<u64>,
    /// Real tool calls after the last event taken in (the calls chart's scale).
    pub tool_calls_so_far: u64,
    /// Tokens after the last event taken in (the tokens chart's scale).
    pub tokens_so_far: u64,
}

impl Series {
    /// What each chart draws at cursor `k`: the samples before it, then the cursor's own
    /// values (`at_cursor`: calls, tokens, best Q as a bar), the ones the numbers above say.
    pub fn bars(&self, k: usize, at_cursor: [u64; 3]) -> [Vec<u64>; 3] {
        let before = self.at.partition_point(|&a| a < k);
        [&self.tool_calls, &self.tokens, &self.best_value]
            .into_iter()
            .zip(at_cursor)
            .map(|(samples, now)| {
                let mut bars = samples[..before].to_vec();
                if k > 0 {
                    bars.push(now);
                }
                bars
            })
            .collect::<Vec<_>>()
            .try_into()
            .expect("three charts")
    }
}

/// Best Q as a bar: shifted by 1 so that values in [−1, 1] map onto [0, 200].
fn best_bar(best: Option<f64>) -> u64 {
    best.filter(|b| b.is_finite())
        .map_or(0, |b| ((b + 1.0) * 100.0).max(0.0) as u64)
}

/// Builds a [`Series`] from the states of a fold, one call per event applied, so the fold
/// that opens a run can fill the charts on its way.
///
/// The samples do not depend on the run's length: every `every`-th event, `every` a power of
/// two doubled as the run outgrows the samples. So a run taken in whole, in parts or event by
/// event gets the same charts, and a view that read its run in parts keeps the charts it grew.
#[derive(Debug)]
pub struct SeriesBuilder {
    every: usize,
    series: Series,
    best: BestQ,
}

impl Default for SeriesBuilder {
    fn default() -> Self {
        Self {
            every: 1,
            series: Series::default(),
            best: BestQ::Known(None),
        }
    }
}

/// The best mean value Q over the tree, kept up as values are backpropagated, so a sample
/// does not scan every node (a run samples thousands of times as its spacing doubles).
#[derive(Debug, Clone, Copy)]
enum BestQ {
    /// The best Q and its node's slot (`None`: no node has a value yet).
    Known(Option<(f64, u32)>),
    /// The node that held it lost value: the next sample looks for it again.
    Lost,
}

impl BestQ {
    /// Takes in a backpropagation along `path`, already applied to `state`: only the nodes on
    /// it changed.
    fn backpropagated(&mut self, run: &Run, state: &TreeState, path: &[u64]) {
        let BestQ::Known(best) = self else {
            return;
        };
        for id in path {
            let Some((slot, q)) = run
                .slot_of(*id)
                .and_then(|slot| Some((slot, state.node(slot)?.q()?)))
            else {
                continue;
            };
            match *best {
                Some((held, at)) if at == slot && q < held => {
                    *self = BestQ::Lost;
                    return;
                }
                Some((held, at)) if at != slot && q <= held => {}
                _ => *best = Some((q, slot)),
            }
        }
    }

    /// The best Q at `state`, looking for it when it was lost.
    fn at(&mut self, state: &TreeState) -> Option<f64> {
        let best = match *self {
            BestQ::Known(best) => best,
            BestQ::Lost => {
                let found = (0u32..)
                    .zip(state.nodes())
                    .filter_map(|(slot, d)| Some((d.q()?, slot)))
                    .reduce(|a, b| if b.0 > a.0 { b } else { a });
                *self = BestQ::Known(found);
                found
            }
        };
        best.map(|(q, _)| q)
    }
}

impl SeriesBuilder {
    /// Takes in the event just applied to `state` (the `state.applied()`-th).
    pub fn observe(&mut self, run: &Run, state: &TreeState) {
        let n = state.applied();
        let Some(event) = n.checked_sub(1).and_then(|i| run.briefs().get(i)) else {
            return;
        };
        match &event.body {
            LeanBody::Backpropagated { path, .. } => self.best.backpropagated(run, state, path),
            // The run's tokens, as the numbers above the charts count them.
            LeanBody::LlmCall(call) if is_the_agents(call.role) => {
                self.series.tokens_so_far = self
                    .series
                    .tokens_so_far
                    .saturating_add(call.prompt_tokens.saturating_add(call.completion_tokens))
            }
            LeanBody::Full(e) => match &e.body {
                // A replayed call (a fork's history) is not one of this run's.
                body if RecordedCall::of(body).is_some_and(|c| !c.is_copy()) => {
                    self.series.tool_calls_so_far += 1
                }
                EventBody::DecisionRejected { problem, .. }
                    if rejection_is_a_call(
                        *problem,
                        decisions_are_calls(run.header.agent.kind),
                    ) =>
                {
                    self.series.tool_calls_so_far += 1
                }
                _ => {}
            },
            _ => {}
        }
        if n.is_multiple_of(self.every) {
            let best = self.best.at(state);
            let series = &mut self.series;
            series.at.push(n);
            series.tool_calls.push(series.tool_calls_so_far);
            series.tokens.push(series.tokens_so_far);
            series.best_value.push(best_bar(best));
            if series.at.len() >= 2 * SAMPLES {
                self.halve();
            }
        }
    }

    /// The series so far.
    pub fn series(&self) -> &Series {
        &self.series
    }

    /// The series, the builder done with (tests build one whole).
    #[cfg(test)]
    pub fn finish(self) -> Series {
        self.series
    }

    /// The run outgrew the samples: keep every other one (those on the doubled spacing) and
    /// sample half as often, so the charts stay [`SAMPLES`]–2×[`SAMPLES`] points long
    /// whatever the run's length.
    fn halve(&mut self) {
        fn every_other(v: &mut Vec<impl Copy>) {
            let kept: Vec<_> = v.iter().copied().skip(1).step_by(2).collect();
            *v = kept;
        }
        let s = &mut self.series;
        every_other(&mut s.at);
        every_other(&mut s.tool_calls);
        every_other(&mut s.tokens);
        every_other(&mut s.best_value);
        self.every *= 2;
    }
}

/// What the metrics pane shows at one cursor.
pub struct MetricsAt<'a> {
    /// The metrics.
    pub metrics: &'a RunMetrics,
    /// Best mean value over the tree.
    pub best_q: Option<f64>,
    /// The charts' data.
    pub series: &'a Series,
    /// The cursor.
    pub k: usize,
    /// Why the run did not complete, as its `run_finished` says, once the cursor is past it.
    pub error: Option<&'a str>,
}

/// Draws the numbers and charts.
pub fn draw(frame: &mut Frame, area: Rect, block: Block, at: &MetricsAt<'_>, theme: &Theme) {
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let lines = text_lines(at, theme);
    let text_height = lines.len() as u16;
    let [text_area, charts] =
        Layout::vertical([Constraint::Length(text_height), Constraint::Min(0)]).areas(inner);
    // A line wider than the pane ends in `…`, never cut without a sign.
    let width = text_area.width as usize;
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|l| crate::tui::widgets::fit::fit(l, width))
        .collect();
    frame.render_widget(Paragraph::new(lines), text_area);
    if charts.height >= 3 {
        draw_charts(frame, charts, at, theme);
    }
}

/// The pane's text: status, calls, fidelity, tree, tokens, LLM calls, time, and (when the run
/// has them) rejected replies, grounded calls, routing and the judge.
fn text_lines<'a>(at: &MetricsAt<'_>, theme: &Theme) -> Vec<Line<'a>> {
    let (m, best_q) = (at.metrics, at.best_q);
    let role_tokens = role_tokens(m);
    let phases = phase_times(m);
    let kv = |k: &str, v: String| {
        Line::from(vec![
            Span::styled(format!("{k:<10}"), theme.dim()),
            Span::raw(v),
        ])
    };
    let rejected = (m.rejected_decisions > 0).then(|| {
        let n = m.rejected_decisions;
        let noun = if n == 1 { "reply" } else { "replies" };
        Line::from(vec![
            Span::styled(format!("{:<10}", "rejected"), theme.dim()),
            Span::styled(format!("{n} malformed planner {noun}"), theme.error()),
        ])
    });
    let (status, clean) = status_text(at);
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!("{:<10}", "status"), theme.dim()),
            Span::styled(status, theme.outcome(clean, m.status.is_some())),
        ]),
        kv("calls", calls_text(m)),
        kv(
            "fidelity",
            m.fidelity.map_or("—".into(), |f| {
                format!(
                    "{} over {} step(s), token F1 {}",
                    figure::fraction(f.score, 2),
                    f.steps,
                    figure::fraction(f.token_f1, 2)
                )
            }),
        ),
        kv(
            "tree",
            format!(
                "{} nodes, best Q {}",
                m.nodes,
                best_q.map_or("—".into(), |q| format!("{q:.2}"))
            ),
        ),
        kv("tokens", tokens_text(m)),
        kv(
            "llm",
            if role_tokens.is_empty() {
                "—".into()
            } else {
                role_tokens.join("  ")
            },
        ),
        kv(
            "time",
            if m.times_unrecorded {
                "— (the source recorded no times)".to_string()
            } else {
                format!("{:.1}s  {}", m.wall_ms as f64 / 1000.0, phases.join("  "))
            },
        ),
    ];
    // A malformed reply is a failure to see at once, right below the calls.
    if let Some(line) = rejected {
        lines.insert(2, line);
    }
    // Real calls made while planning are real traffic, though no step of the run: said apart.
    if m.grounded_calls > 0 {
        lines.insert(
            2,
            kv(
                "grounded",
                format!(
                    "{} real call(s) while planning, in place of unsure predictions",
                    m.grounded_calls
                ),
            ),
        );
    }
    lines.extend(w2r_text(m).map(|text| kv("w2r", text)));
    lines.extend(routing_text(m).map(|text| kv("routing", text)));
    // The source's own verdict (an imported sample's scorers), beside the judge, never merged.
    lines.extend(source_line(m).map(|text| kv("source", text)));
    if let Some(j) = &m.judge {
        lines.push(kv(
            "judge",
            format!(
                "completion {:.1}  tools {:.1}  planning {:.1}  overall {:.1}{}",
                j.task_completion,
                j.tool_selection,
                j.planning_effectiveness,
                j.overall,
                if j.trials > 1 {
                    format!("  (mean of {} trials)", j.trials)
                } else {
                    String::new()
                }
            ),
        ));
    }
    lines
}

/// How the plan held against reality, for a planner's run with simulated calls.
fn w2r_text(m: &RunMetrics) -> Option<String> {
    let at = m
        .w2r_divergence
        .map_or("every call went as simulated".to_string(), |step| {
            format!("calls went as simulated until call {step}")
        });
    Some(format!("{} ({at})", figure::fraction(m.w2r?, 2)))
}

/// What routing did, when the run routes and recorded it.
fn routing_text(m: &RunMetrics) -> Option<String> {
    let (trusted, saved) = (m.trusted_predictions?, m.real_calls_saved?);
    let poor = m.trusted_poor.map_or(String::new(), |p| {
        format!(", {p} found poor by the real call")
    });
    Some(format!(
        "{trusted} prediction(s) trusted{poor}; {saved} real call(s) saved"
    ))
}

/// The run's status as the browser and compare write it (`completed ⊣steps ✗2`), with its
/// ending or, without one, what `run_finished` says went wrong; and whether it ended cleanly.
fn status_text(at: &MetricsAt<'_>) -> (String, bool) {
    let m = at.metrics;
    let (outcome, clean) = m.outcome();
    let status = match (m.status, m.ending) {
        (None, _) => "running / incomplete".into(),
        (Some(_), Some(e)) => format!("{outcome} · ending {}", e.as_str()),
        // No ending: the agent never ran (its servers did not start), or an older file.
        // What run_finished says is the reason.
        (Some(_), None) => match at.error {
            Some(why) => format!(
                "{outcome} · {}",
                cosmos_trajectory::sanitize::one_line(why, 200)
            ),
            None => outcome,
        },
    };
    (status, clean)
}

/// The real calls and their rates; answers by the world model, though not by a server, are
/// counted apart, never hidden.
fn calls_text(m: &RunMetrics) -> String {
    let pct = |v: Option<f64>| v.map_or("—".to_string(), |v| figure::percent(v, 0));
    let answered = if m.simulated_answers > 0 {
        format!(
            " real + {} answered by the world model",
            m.simulated_answers
        )
    } else {
        String::new()
    };
    format!(
        "{}{answered}  success {}  names {}  schema {}",
        m.tool_calls,
        pct(m.tool_call_success_rate),
        pct(m.valid_tool_name_rate),
        pct(m.input_schema_compliance)
    )
}

/// The run's tokens, or why there are none.
fn tokens_text(m: &RunMetrics) -> String {
    if m.tokens_unrecorded {
        "— (the source counted no tokens)".to_string()
    } else if m.tokens_estimated() {
        format!("{} (some estimated)", m.tokens())
    } else {
        m.tokens().to_string()
    }
}

/// Each role's LLM calls and tokens (`planner 3×/1200`), for the roles that made any.
fn role_tokens(m: &RunMetrics) -> Vec<String> {
    Role::ALL
        .iter()
        .filter(|r| m.llm[r.index()].calls > 0)
        .map(|r| {
            let u = m.llm[r.index()];
            let tokens = if m.tokens_unrecorded {
                "—".to_string()
            } else {
                u.prompt_tokens
                    .saturating_add(u.completion_tokens)
                    .to_string()
            };
            format!("{} {}×/{tokens}", r.as_str(), u.calls)
        })
        .collect()
}

/// The time of each phase the run spent any in, and the time a person spent answering.
fn phase_times(m: &RunMetrics) -> Vec<String> {
    let mut phases: Vec<String> = Phase::ALL
        .iter()
        .filter(|p| m.phase_ms[**p as usize] > 0)
        .map(|p| {
            format!(
                "{} {:.1}s",
                p.as_str(),
                m.phase_ms[*p as usize] as f64 / 1000.0
            )
        })
        .collect();
    // Time a person spent answering a server is theirs, not any phase's.
    if m.waiting_ms > 0 {
        phases.push(format!("answering {:.1}s", m.waiting_ms as f64 / 1000.0));
    }
    phases
}

/// The three charts under the text: tool calls, tokens and best Q, each against the run's total.
fn draw_charts(frame: &mut Frame, charts: Rect, at: &MetricsAt<'_>, theme: &Theme) {
    let (m, best_q, series, k) = (at.metrics, at.best_q, at.series, at.k);
    let bars = series.bars(k, [m.tool_calls, m.tokens(), best_bar(best_q)]);
    // Counts are drawn against the run's total, so a bar's height does not move with the cursor.
    let scales = [series.tool_calls_so_far, series.tokens_so_far, 200];
    let rows = Layout::vertical([Constraint::Ratio(1, 3); 3]).split(charts);
    for (i, (title, bars)) in ["tool calls", "tokens", "best Q"]
        .into_iter()
        .zip(bars)
        .enumerate()
    {
        let [label, chart] =
            Layout::horizontal([Constraint::Length(11), Constraint::Min(0)]).areas(rows[i]);
        frame.render_widget(Paragraph::new(Line::styled(title, theme.dim())), label);
        let data = fit_to_width(&bars, chart.width as usize);
        let max = scales[i].max(1);
        frame.render_widget(
            Sparkline::default()
                .data(&data)
                .max(max)
                .style(theme.good()),
            chart,
        );
    }
}

/// At most `width` samples, spread evenly over all of them and ending with the last: a
/// sparkline draws only its first `width` values, which would leave out the end of a run.
fn fit_to_width(data: &[u64], width: usize) -> Vec<u64> {
    if data.len() <= width || width == 0 {
        return data.to_vec();
    }
    (0..width)
        .map(|i| data[(i + 1) * data.len() / width - 1])
        .collect()
}

/// How many of the scores the run's source recorded passed it; `None` without any.
fn source_line(m: &RunMetrics) -> Option<String> {
    (m.source_scored > 0).then(|| {
        format!(
            "{} of {} score(s) passed, {} failed",
            m.source_passed, m.source_scored, m.source_failed
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosmos_trajectory::event::Event;
    use cosmos_trajectory::fold::Cursor;
    use cosmos_trajectory::synthetic::{self, Spec};

    /// The charts of the whole run, by a fold of their own.
    fn series_of(run: &Run) -> Series {
        let mut builder = SeriesBuilder::default();
        let mut state = TreeState::default();
        for _ in 0..run.len() {
            state.apply(run);
            builder.observe(run, &state);
        }
        builder.finish()
    }

    /// Every sample, and the scale, say what the metrics pane says at that cursor.
    fn samples_count_what_the_metrics_count(run: &Run) {
        use cosmos_engine::metrics::run::RunFacts;
        let series = series_of(run);
        let facts = RunFacts::of(run);
        let mut cursor = Cursor::new(run);
        assert!(!series.at.is_empty());
        for (i, &k) in series.at.iter().enumerate() {
            cursor.seek(run, k);
            let metrics = facts.at(run, k, cursor.state());
            assert_eq!(series.tool_calls[i], metrics.tool_calls, "calls at {k}");
            assert_eq!(series.tokens[i], metrics.tokens(), "tokens at {k}");
            // Kept up event by event, the best Q is the one a scan of the tree finds.
            let scanned = cursor
                .state()
                .nodes()
                .iter()
                .filter_map(|d| d.q())
                .reduce(f64::max);
            assert_eq!(series.best_value[i], best_bar(scanned), "best Q at {k}");
        }
        cursor.seek(run, run.len());
        let end = facts.at(run, run.len(), cursor.state());
        assert_eq!(series.tool_calls_so_far, end.tool_calls);
        assert_eq!(series.tokens_so_far, end.tokens());
    }

    #[test]
    fn charts_fit_the_width_and_keep_the_end() {
        let data: Vec<u64> = (1..=300).collect();
        let fitted = fit_to_width(&data, 40);
        assert_eq!(fitted.len(), 40);
        assert_eq!(fitted.last(), Some(&300), "the end of the run is drawn");
        assert!(fitted.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(fit_to_width(&data[..10], 40).len(), 10);
    }

    #[test]
    fn a_growing_run_keeps_its_charts_short_and_gets_the_whole_runs_charts() {
        let spec = Spec {
            nodes: 3_000,
            ..Spec::default()
        };
        let mut run = Run::new("live".into(), synthetic::header(&spec));
        // Built for an empty run, as a live view's charts are, then fed event by event.
        let mut charts = SeriesBuilder::default();
        let mut state = TreeState::default();
        for (i, (t_ms, body)) in synthetic::events(&spec).into_iter().enumerate() {
            run.push(Event {
                seq: i as u64 + 1,
                t_ms,
                body,
            });
            state.apply(&run);
            charts.observe(&run, &state);
        }
        let series = charts.series();
        assert!(
            (SAMPLES..2 * SAMPLES).contains(&series.at.len()),
            "{}",
            series.at.len()
        );
        assert!(series.at.windows(2).all(|w| w[0] < w[1]));
        assert!(*series.at.last().unwrap() > run.len() * 3 / 4);
        // How the run arrived does not change its charts.
        assert_eq!(series, &series_of(&run));
    }

    #[test]
    fn the_best_q_kept_up_is_the_one_a_scan_finds_after_every_event() {
        let spec = Spec {
            nodes: 400,
            ..Spec::default()
        };
        let mut run = Run::new("best".into(), synthetic::header(&spec));
        synthetic::push_events(&mut run, &spec);
        let (mut state, mut best, mut lost) = (TreeState::default(), BestQ::Known(None), 0);
        for i in 0..run.len() {
            state.apply(&run);
            if let LeanBody::Backpropagated { path, .. } = &run.brief(i).body {
                best.backpropagated(&run, &state, path);
            }
            lost += usize::from(matches!(best, BestQ::Lost));
            let scanned = state.nodes().iter().filter_map(|d| d.q()).reduce(f64::max);
            assert_eq!(best.at(&state), scanned, "after event {i}");
        }
        assert!(lost > 0, "the best node lost value at least once");
    }

    #[test]
    fn a_chart_ends_at_the_cursors_own_values() {
        let series = Series {
            at: vec![4, 8, 12],
            tool_calls: vec![1, 2, 3],
            tokens: vec![10, 20, 30],
            best_value: vec![100, 150, 120],
            tool_calls_so_far: 4,
            tokens_so_far: 40,
        };
        // Between samples: those before, then the cursor's.
        assert_eq!(
            series.bars(10, [2, 25, 151]),
            [vec![1, 2, 2], vec![10, 20, 25], vec![100, 150, 151]]
        );
        // On a sample: the cursor's values stand in for it.
        assert_eq!(series.bars(8, [2, 20, 150])[1], vec![10, 20]);
        assert!(series.bars(0, [0, 0, 0]).iter().all(Vec::is_empty));
        assert_eq!(best_bar(Some(0.5)), 150);
        assert_eq!(best_bar(None), 0);
    }

    #[test]
    fn the_tokens_chart_counts_the_runs_tokens_after_a_judge_scored_it() {
        let spec = Spec {
            nodes: 50,
            ..Spec::default()
        };
        let mut run = Run::new("judged".into(), synthetic::header(&spec));
        let mut seq = 0;
        let mut push = |run: &mut Run, t_ms, body| {
            seq += 1;
            run.push(Event { seq, t_ms, body });
        };
        for (t_ms, body) in synthetic::events(&spec) {
            push(&mut run, t_ms, body);
        }
        // `cosmos judge` appends its own call after the run's end: its cost, not the run's.
        push(
            &mut run,
            u64::MAX / 2,
            EventBody::LlmCall {
                role: Role::Judge,
                model: "judge".into(),
                prompt_tokens: 9_000,
                completion_tokens: 900,
                tokens_estimated: false,
                latency_ms: 1,
                error: None,
                messages: None,
            },
        );
        let metrics = cosmos_engine::metrics::run::of_run(&run);
        assert!(metrics.tokens() > 0);
        samples_count_what_the_metrics_count(&run);
    }

    #[test]
    fn the_calls_chart_counts_the_calls_the_metrics_count() {
        use cosmos_trajectory::event::{AgentKind, DecisionProblem};
        let spec = Spec {
            nodes: 50,
            ..Spec::default()
        };
        let mut header = synthetic::header(&spec);
        // An older ReAct run: a decision naming an unknown tool is a "not found" call.
        header.agent.kind = AgentKind::React;
        let mut run = Run::new("react".into(), header);
        let mut events = synthetic::events(&spec);
        let end = events.len() - 1;
        events.insert(
            end,
            (
                events[end].0,
                EventBody::DecisionRejected {
                    problem: DecisionProblem::UnknownTool,
                    detail: "no such tool".into(),
                    reply: serde_json::json!({"tool": "nope"}),
                },
            ),
        );
        for (i, (t_ms, body)) in events.into_iter().enumerate() {
            run.push(Event {
                seq: i as u64 + 1,
                t_ms,
                body,
            });
        }
        let metrics = cosmos_engine::metrics::run::of_run(&run);
        assert!(metrics.tool_calls > 1);
        samples_count_what_the_metrics_count(&run);
    }

    #[test]
    fn charts_built_during_the_cursors_fold_match_a_fold_of_their_own() {
        // 3,000 nodes ≈ 21,000 events: past the cursor's first snapshot.
        let spec = Spec {
            nodes: 3_000,
            ..Spec::default()
        };
        let mut run = Run::new("mem".into(), synthetic::header(&spec));
        synthetic::push_events(&mut run, &spec);
        let mut cursor = Cursor::new(&run);
        let mut charts = SeriesBuilder::default();
        cursor.advance_observing(&run, run.len(), |state| charts.observe(&run, state));
        let series = charts.finish();
        assert_eq!(series, series_of(&run));
        assert!(*series.at.last().unwrap() > run.len() / 2);
        assert!(series.tool_calls_so_far > 0);
        assert!(series.best_value.iter().any(|&v| v > 0));
        assert_eq!(cursor.position(), run.len());
        samples_count_what_the_metrics_count(&run);
    }
}
