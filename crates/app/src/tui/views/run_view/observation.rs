//! The observation pane: the world model's simulated result beside the real one, JSON
//! pretty-printed, lines that differ marked, the fidelity scores on top.
//!
//! The text is prepared in `update` (and capped) so that drawing a huge result costs no
//! more than drawing a small one.

use std::collections::HashSet;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::tree::Item;
use crate::tui::theme::Theme;
use crate::tui::widgets::scroll::Scroll;
use crate::tui::widgets::wrap::wrap_line;
use cosmos_engine::metrics::fidelity::{self, Fidelity};
use cosmos_engine::metrics::run::RunFacts;
use cosmos_trajectory::describe::{call_label, node_label};
use cosmos_trajectory::event::{Action, EventBody, Observation};
use cosmos_trajectory::fold::TreeState;
use cosmos_trajectory::lean::LeanBody;
use cosmos_trajectory::recorded_call::RecordedCall;
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize;

/// Most lines of one side kept for display.
pub const MAX_LINES: usize = 2_000;
/// Most characters of one line kept.
const MAX_LINE_CHARS: usize = 400;
/// Most bytes of a result pretty-printed; the rest is cut with a marker.
const MAX_BYTES: usize = 256 << 10;

/// One side, ready to draw.
#[derive(Debug, Clone, Default, PartialEq)]
struct Side {
    title: String,
    lines: Vec<(String, bool)>,
}

/// State of the observation pane.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObservationView {
    key: Option<Key>,
    heading: String,
    fidelity: Option<Fidelity>,
    /// A `finish` node: answers side by side, no fidelity to speak of.
    finish: bool,
    /// The real side is a call made while planning (`node_grounded`), which no step scores:
    /// the prediction's fidelity to it, as the inspector says it (no metric counts it).
    grounded: Option<Option<f64>>,
    simulated: Side,
    real: Side,
    /// First line shown.
    pub scroll: Scroll,
}

/// The event (before event `k`) that called node `slot` for real while planning, if one did.
fn grounded_at(run: &Run, slot: u32, k: usize) -> Option<u32> {
    // Only a run that routes by confidence grounds nodes: the others are not scanned.
    run.header.agent.go_real_below()?;
    run.briefs()[..k.min(run.briefs().len())]
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, brief)| match brief.whole().map(|e| &e.body) {
            Some(EventBody::NodeGrounded { node, .. }) if run.slot_of(*node) == Some(slot) => {
                Some(i as u32)
            }
            _ => None,
        })
}

/// What the view was prepared for: the item, its simulation's event, its real result's event,
/// and whether an answer was given (a finish node's other side).
type Key = (Item, u32, Option<u32>, bool);

impl ObservationView {
    /// A `finish` node's sides: its planned answer beside the answer the run gave (once given).
    fn finish(key: Key, action: String, planned: &str, given_answer: Option<&str>) -> Self {
        let side = |title: &str, text: &str, missing: &str| Side {
            title: title.into(),
            lines: if text.trim().is_empty() {
                vec![(missing.to_string(), false)]
            } else {
                sanitize::lines(text, MAX_LINES, MAX_LINE_CHARS)
                    .into_iter()
                    .map(|l| (l, false))
                    .collect()
            },
        };
        Self {
            key: Some(key),
            heading: action,
            fidelity: None,
            finish: true,
            grounded: None,
            simulated: side("planned answer", planned, "(the planner wrote none)"),
            real: side(
                "answer given",
                given_answer.unwrap_or(""),
                "(not answered at this point)",
            ),
            scroll: Scroll::default(),
        }
    }

    /// Prepares the text for `item` at the cursor, unless it is already prepared.
    pub fn refresh(&mut self, run: &Run, facts: &RunFacts, state: &TreeState, item: Option<Item>) {
        let Some(item) = item else {
            *self = Self::default();
            return;
        };
        let k = state.applied();
        let steps = run.steps_at(k);
        let (action, sim_event, step) = selected(run, state, item);
        let step_index = step;
        let step = step_index.and_then(|i| steps.get(i));
        // A `finish` node has no simulation or real call: its planned answer goes beside the
        // answer the run gave (once given).
        let added = match item {
            Item::Node(slot) => Some(run.event(run.nodes()[slot as usize].added_at as usize)),
            Item::Step(_) => None,
        };
        let planned_answer = match added.as_deref().map(|e| &e.body) {
            Some(EventBody::NodeAdded {
                action: Some(Action::Finish { answer }),
                ..
            }) => Some(answer.as_deref().unwrap_or("")),
            _ => None,
        };
        let given_answer = planned_answer.and(run.answer_at(k));
        // A node never executed may have been called for real while planning (its prediction
        // unsure): that real result is the one beside the prediction.
        let grounded = match item {
            Item::Node(slot) if step.is_none() => grounded_at(run, slot, k),
            _ => None,
        };
        let key = (
            item,
            sim_event,
            step.map(|s| s.event).or(grounded),
            given_answer.is_some(),
        );
        if self.key == Some(key) {
            return;
        }
        if let Some(planned) = planned_answer {
            *self = Self::finish(key, action, planned, given_answer);
            return;
        }
        let simulated = run.simulated_observation(sim_event);
        let real_event = step
            .map(|s| s.event)
            .or(grounded)
            .map(|e| run.event(e as usize));
        let real = match real_event.as_deref().map(|e| &e.body) {
            Some(EventBody::NodeGrounded {
                observation, error, ..
            }) => Some((observation, error.as_deref())),
            Some(body) => RecordedCall::of(body).map(|call| (call.result, call.error)),
            None => None,
        };
        let sim_text = simulated.as_ref().map(render);
        let real_text = real.map(|(r, err)| {
            let mut t = render(r);
            if let Some(e) = err {
                t.insert(0, format!("transport error: {e}"));
            }
            t
        });
        let sim_set: HashSet<&str> = sim_text.iter().flatten().map(|l| normalize(l)).collect();
        let real_set: HashSet<&str> = real_text.iter().flatten().map(|l| normalize(l)).collect();
        let both = sim_text.is_some() && real_text.is_some();
        let mark = |lines: &Option<Vec<String>>,
                    other: &HashSet<&str>,
                    missing: &str|
         -> Vec<(String, bool)> {
            match lines {
                Some(lines) => lines
                    .iter()
                    .map(|l| (l.clone(), both && !other.contains(normalize(l))))
                    .collect(),
                None => vec![(missing.to_string(), false)],
            }
        };
        // What is missing says why: a run over, a run without a world model, or not yet.
        let over = run.finish_at(k).is_some();
        let no_simulation = if run.header.world_model.is_none() {
            "(this run has no world model)"
        } else if over {
            "(never simulated)"
        } else {
            "(not simulated at this point)"
        };
        let by_validator = matches!(
            run.briefs().get(sim_event as usize).map(|e| &e.body),
            Some(LeanBody::NodeSimulated {
                by_validator: true,
                ..
            })
        );
        let simulated_side = Side {
            title: match simulated {
                Some(_) if by_validator => "rejected by the validator ⊘".into(),
                Some(ref o) if o.is_error => "simulated: predicts an error ⚠".into(),
                _ => "simulated".into(),
            },
            lines: mark(&sim_text, &real_set, no_simulation),
        };
        let real_side = Side {
            title: match real {
                Some((o, e)) if o.is_error || e.is_some() => "real: failed ✗".into(),
                Some(_) if grounded.is_some() => "real, called while planning ⊕".into(),
                _ => "real".into(),
            },
            lines: mark(
                &real_text,
                &sim_set,
                if over {
                    "(never executed)"
                } else {
                    "(not executed at this point)"
                },
            ),
        };
        // The one fidelity of the step, as the metrics count it (none for a validator's rejection).
        let fidelity = match (&simulated, step_index) {
            (Some(_), Some(i)) => facts.step(i).and_then(|f| f.fidelity),
            _ => None,
        };
        *self = Self {
            key: Some(key),
            heading: action,
            fidelity,
            finish: false,
            grounded: (grounded.is_some() && step_index.is_none()).then(|| {
                simulated
                    .as_ref()
                    .zip(real)
                    .map(|(sim, (real, _))| fidelity::compare(sim, real).score)
            }),
            simulated: simulated_side,
            real: real_side,
            scroll: Scroll::default(),
        };
    }

    /// Longest side, in lines.
    pub fn len(&self) -> usize {
        self.simulated.lines.len().max(self.real.lines.len())
    }

    /// Scrolls by `delta` lines (of the longer side).
    pub fn scroll_by(&mut self, delta: isize) {
        let len = self.len();
        // The last line can come to the top: a side's wrapped rows may need it.
        self.scroll.by(delta, len, 1);
    }

    /// Draws both sides.
    pub fn draw(&self, frame: &mut Frame, area: Rect, block: Block, theme: &Theme) {
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if self.key.is_none() {
            frame.render_widget(
                Paragraph::new(Line::styled("select a node or step", theme.dim())),
                inner,
            );
            return;
        }
        let [head, body] =
            Layout::vertical([Constraint::Length(2), Constraint::Min(0)]).areas(inner);
        let fid = match &self.fidelity {
            Some(f) => {
                let opt = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.2}"));
                format!(
                    "fidelity {:.2}  error agree {:.0}  structure {}  values {}  token F1 {:.2}",
                    f.score,
                    f.error_agreement,
                    opt(f.structure),
                    opt(f.values),
                    f.token_f1
                )
            }
            None if self.finish => "the planner's answer at this node, and the run's".to_string(),
            // The same figure the inspector gives the grounded call, said as not counted.
            None if self.grounded.is_some() => match self.grounded.flatten() {
                Some(score) => format!(
                    "fidelity {score:.2} to the result called while planning (no metric counts \
                     it: fidelity scores executed steps)"
                ),
                None => "fidelity — (scored on executed steps; this call was made while planning)"
                    .to_string(),
            },
            None => "fidelity — (needs both a simulation and a real result)".to_string(),
        };
        let heading = vec![
            Line::styled(
                sanitize::one_line(&self.heading, inner.width as usize),
                theme.title(),
            ),
            crate::tui::widgets::fit::fit(Line::styled(fid, theme.text()), inner.width as usize),
        ];
        frame.render_widget(Paragraph::new(heading), head);
        // Two columns with a rule between them, so they never run together.
        let [left, rule, right] = Layout::horizontal([
            Constraint::Fill(1),
            Constraint::Length(3),
            Constraint::Fill(1),
        ])
        .areas(body);
        let rules: Vec<Line> = (0..rule.height)
            .map(|_| Line::styled(" │ ", theme.border()))
            .collect();
        frame.render_widget(Paragraph::new(rules), rule);
        for (side, rect, right) in [(&self.simulated, left, false), (&self.real, right, true)] {
            let height = rect.height.saturating_sub(1) as usize;
            let width = rect.width as usize;
            // Where the pane is scrolled to, said once, over the right-hand side.
            let title = if right && self.len() > height {
                format!(
                    "{} · line {}/{}",
                    side.title,
                    (self.scroll.offset + 1).min(self.len()),
                    self.len()
                )
            } else {
                side.title.clone()
            };
            let mut lines = vec![Line::styled(sanitize::one_line(&title, width), theme.dim())];
            // Only the lines on screen are wrapped: the cost is the pane's, not the result's.
            'fill: for (l, differs) in side.lines.iter().skip(self.scroll.offset) {
                for row in wrap_line(l, width) {
                    if lines.len() > height {
                        break 'fill;
                    }
                    lines.push(if *differs {
                        Line::from(Span::styled(row, theme.diff()))
                    } else {
                        Line::raw(row)
                    });
                }
            }
            frame.render_widget(Paragraph::new(lines), rect);
        }
    }
}

/// Pretty JSON when the result is JSON, its text otherwise; capped and made inert.
fn render(obs: &Observation) -> Vec<String> {
    let mut out = Vec::new();
    let cut_input = obs.text.len() > MAX_BYTES;
    let pretty = if cut_input {
        None
    } else {
        fidelity::as_json(obs).and_then(|v| serde_json::to_string_pretty(&v).ok())
    };
    let body: &str = match &pretty {
        Some(p) => p,
        None => {
            let mut end = obs.text.len().min(MAX_BYTES);
            while !obs.text.is_char_boundary(end) {
                end -= 1;
            }
            &obs.text[..end]
        }
    };
    out.extend(sanitize::lines(body, MAX_LINES, MAX_LINE_CHARS));
    if cut_input {
        out.push(format!(
            "… cut: result is {} bytes; first {} shown",
            obs.text.len(),
            MAX_BYTES
        ));
    }
    if obs.truncated_bytes > 0 {
        out.push(format!(
            "… {} bytes were cut when the run was recorded",
            obs.truncated_bytes
        ));
    }
    out
}

/// A line without indentation and trailing comma, so reordered JSON still matches.
fn normalize(line: &str) -> &str {
    line.trim().trim_end_matches(',')
}

/// The selected item's heading, its latest simulation's event (`u32::MAX` when none) and the
/// index of the step that executed it, at the cursor.
fn selected(run: &Run, state: &TreeState, item: Item) -> (String, u32, Option<usize>) {
    let k = state.applied();
    let steps = run.steps_at(k);
    match item {
        Item::Node(slot) => {
            let info = &run.nodes()[slot as usize];
            let action = node_label(&run.event(info.added_at as usize).body);
            let sim = state.node(slot).map_or(u32::MAX, |n| n.simulated);
            (
                action,
                sim,
                steps.iter().rposition(|s| s.node == Some(slot)),
            )
        }
        Item::Step(i) => {
            let s = steps.get(i);
            let sim = s
                .and_then(|s| s.simulated)
                .filter(|&e| (e as usize) < k)
                .unwrap_or(u32::MAX);
            let action = s
                .and_then(|s| {
                    RecordedCall::of(&run.event(s.event as usize).body)
                        .map(|call| call_label(call.tool, call.arguments))
                })
                .unwrap_or_default();
            (action, sim, s.map(|_| i))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_results_are_cut_with_a_marker() {
        let obs = Observation {
            text: "z".repeat(MAX_BYTES * 4),
            ..Default::default()
        };
        let lines = render(&obs);
        assert!(lines.last().unwrap().starts_with("… cut: result is"));
        assert!(lines.len() <= MAX_LINES + 2);
        let many = Observation {
            text: "a\n".repeat(MAX_LINES * 3),
            ..Default::default()
        };
        assert!(render(&many).last().unwrap().starts_with("… cut:"));
    }

    #[test]
    fn json_is_pretty_printed() {
        let obs = Observation {
            text: r#"{"a":1,"b":[2]}"#.into(),
            ..Default::default()
        };
        assert_eq!(
            render(&obs),
            vec!["{", "  \"a\": 1,", "  \"b\": [", "    2", "  ]", "}"]
        );
    }
}
