//! Compare: two to four runs of one task side by side: metrics in columns with the best of
//! each row marked, the executed plans aligned step by step, fidelity per step.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table};

use super::action::Action;
use super::keymap::{Command, Mode};
use super::scroll::Scroll;
use super::theme::Theme;
use super::view::{Handled, Request, View};
use crate::metrics::run::{RunFacts, RunMetrics};
use crate::sanitize::one_line;
use crate::trajectory::describe::call_label;
use crate::trajectory::event::EventBody;
use crate::trajectory::run::Run;

/// One executed call of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Namespaced tool.
    pub tool: String,
    /// Arguments.
    pub arguments: serde_json::Value,
    /// It failed.
    pub is_error: bool,
    /// Its fidelity score, when simulated.
    pub fidelity: Option<f64>,
}

/// How a run's step relates to the first run's step on the same row.
#[derive(Debug, Clone, PartialEq)]
pub enum Aligned {
    /// Same tool, same arguments.
    Same(Call),
    /// Same tool, different arguments.
    ArgsDiffer(Call),
    /// A call the first run does not make here.
    Extra(Call),
    /// No matching call.
    Missing,
}

/// State of the compare view.
#[derive(Debug)]
pub struct CompareView {
    /// Column labels.
    pub labels: Vec<String>,
    /// Metrics of each run.
    pub metrics: Vec<RunMetrics>,
    /// Rows of aligned steps; one cell per run.
    pub rows: Vec<Vec<Aligned>>,
    /// A warning (runs of different tasks).
    pub warning: Option<String>,
    scroll: Scroll,
    size: (u16, u16),
}

impl CompareView {
    /// Builds the comparison of loaded runs (the first is the reference).
    pub fn new(runs: &[Run], size: (u16, u16)) -> Self {
        let labels = runs
            .iter()
            .map(|r| {
                format!(
                    "{} / {}",
                    r.header.agent.kind.as_str(),
                    r.header.world_model_name()
                )
            })
            .collect();
        let metrics = runs.iter().map(crate::metrics::run::of_run).collect();
        let calls: Vec<Vec<Call>> = runs.iter().map(calls_of).collect();
        let tasks: Vec<&str> = runs.iter().map(|r| r.header.task.id.as_str()).collect();
        let warning = tasks
            .windows(2)
            .any(|w| w[0] != w[1])
            .then(|| format!("runs of different tasks: {}", tasks.join(", ")));
        Self {
            labels,
            metrics,
            rows: align(&calls),
            warning,
            scroll: Scroll::default(),
            size,
        }
    }

    /// The metrics table above, the plans below.
    fn split(&self, area: Rect, metric_rows: usize) -> [Rect; 2] {
        Layout::vertical([
            Constraint::Length(metric_rows as u16 + 3),
            Constraint::Min(0),
        ])
        .areas(area)
    }

    /// Plan rows on screen.
    fn visible(&self) -> usize {
        let body = Rect::new(0, 0, self.size.0, self.size.1.saturating_sub(1));
        let [_, bottom] = self.split(body, metric_rows(&self.metrics).len());
        bottom.height.saturating_sub(3) as usize
    }
}

impl View for CompareView {
    fn mode(&self) -> Mode {
        Mode::Compare
    }

    fn update(&mut self, action: &Action, _out: &mut Vec<Request>) -> Handled {
        let (len, visible) = (self.rows.len(), self.visible());
        match action {
            Action::Do(Command::Up) => self.scroll.by(-1, len, visible),
            Action::Do(Command::Down) => self.scroll.by(1, len, visible),
            Action::Do(Command::PageUp) => self.scroll.by(-(visible as isize), len, visible),
            Action::Do(Command::PageDown) => self.scroll.by(visible as isize, len, visible),
            Action::Do(Command::Top) => self.scroll.offset = 0,
            Action::Do(Command::Bottom) => self.scroll.by(isize::MAX, len, visible),
            Action::Resize(w, h) => {
                self.size = (*w, *h);
                self.scroll.clamp(len, self.visible());
            }
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn status(&self) -> Option<String> {
        Some(format!("compare {} runs", self.labels.len()))
    }

    /// Draws metrics on top, aligned plans below.
    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let metric_rows = metric_rows(&self.metrics);
        let [top, bottom] = self.split(area, metric_rows.len());
        let n = self.labels.len();
        let widths: Vec<Constraint> = std::iter::once(Constraint::Length(16))
            .chain((0..n).map(|_| Constraint::Ratio(1, n as u32)))
            .collect();
        let header = Row::new(
            std::iter::once(Cell::from("metric"))
                .chain(self.labels.iter().map(|l| Cell::from(one_line(l, 40)))),
        )
        .style(theme.title());
        let rows = metric_rows.iter().map(|(name, values, best)| {
            Row::new(
                std::iter::once(Cell::from(*name)).chain(values.iter().enumerate().map(
                    |(i, v)| {
                        if best.contains(&i) {
                            Cell::from(Span::styled(format!("{v} ★"), theme.mark()))
                        } else {
                            Cell::from(v.clone())
                        }
                    },
                )),
            )
        });
        let title = match &self.warning {
            Some(w) => format!(" Compare · ★ best · {w} "),
            None => " Compare · ★ best of each row ".to_string(),
        };
        let block = Block::bordered()
            .border_style(theme.border())
            .title(Line::styled(title, theme.title()));
        frame.render_widget(
            Table::new(rows, widths.clone()).header(header).block(block),
            top,
        );

        let inner_h = bottom.height.saturating_sub(3) as usize;
        let block = Block::bordered().border_style(theme.border()).title(Line::styled(
            format!(
                " Plans, step by step (aligned to the first run; ≠ other arguments, + extra, — missing) · {} ",
                self.scroll.position(self.rows.len(), inner_h)
            ),
            theme.title(),
        ));
        let plan_rows = self
            .rows
            .iter()
            .enumerate()
            .skip(self.scroll.offset)
            .take(inner_h)
            .map(|(i, cells)| {
                Row::new(
                    std::iter::once(Cell::from(format!("step {}", i + 1)))
                        .chain(cells.iter().map(|c| aligned_cell(c, theme))),
                )
            });
        let header = Row::new(
            std::iter::once(Cell::from(""))
                .chain(self.labels.iter().map(|l| Cell::from(one_line(l, 40)))),
        )
        .style(theme.title());
        if self.rows.is_empty() {
            frame.render_widget(
                Paragraph::new(Line::styled(
                    "no real tool calls in these runs",
                    theme.dim(),
                ))
                .block(block),
                bottom,
            );
        } else {
            frame.render_widget(
                Table::new(plan_rows, widths).header(header).block(block),
                bottom,
            );
        }
    }
}

fn calls_of(run: &Run) -> Vec<Call> {
    let facts = RunFacts::of(run);
    run.steps()
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match &run.events[s.event as usize].body {
            EventBody::ToolCalled {
                tool, arguments, ..
            } => Some(Call {
                tool: tool.clone(),
                arguments: arguments.clone(),
                is_error: s.is_error,
                fidelity: facts.step(i).and_then(|f| f.fidelity).map(|f| f.score),
            }),
            _ => None,
        })
        .collect()
}

/// Aligns each run's calls to the first run's by the longest common subsequence of tool
/// names; unmatched calls of later runs become `Extra` rows after their predecessor.
pub fn align(calls: &[Vec<Call>]) -> Vec<Vec<Aligned>> {
    let Some(reference) = calls.first() else {
        return Vec::new();
    };
    let n = calls.len();
    // rows[i] = reference step i; extras[i] = extra rows placed after reference step i (i = 0 means before all).
    let mut rows: Vec<Vec<Aligned>> = reference
        .iter()
        .map(|c| {
            let mut row = vec![Aligned::Missing; n];
            row[0] = Aligned::Same(c.clone());
            row
        })
        .collect();
    let mut extras: Vec<Vec<Vec<Aligned>>> = vec![Vec::new(); reference.len() + 1];
    for (r, other) in calls.iter().enumerate().skip(1) {
        let pairs = lcs(reference, other);
        let mut next_ref = 0usize;
        let mut matched = pairs.iter().peekable();
        for (j, call) in other.iter().enumerate() {
            if let Some(&&(i, jj)) = matched.peek()
                && jj == j
            {
                matched.next();
                rows[i][r] = if reference[i].arguments == call.arguments {
                    Aligned::Same(call.clone())
                } else {
                    Aligned::ArgsDiffer(call.clone())
                };
                next_ref = i + 1;
            } else {
                let mut row = vec![Aligned::Missing; n];
                row[r] = Aligned::Extra(call.clone());
                extras[next_ref].push(row);
            }
        }
    }
    let mut out = Vec::new();
    for (i, row) in rows.into_iter().enumerate() {
        out.append(&mut extras[i]);
        out.push(row);
    }
    out.append(&mut extras[reference.len()]);
    out
}

/// Index pairs of a longest common subsequence of tool names.
fn lcs(a: &[Call], b: &[Call]) -> Vec<(usize, usize)> {
    let mut table = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            table[i][j] = if a[i].tool == b[j].tool {
                table[i + 1][j + 1] + 1
            } else {
                table[i + 1][j].max(table[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        if a[i].tool == b[j].tool {
            out.push((i, j));
            i += 1;
            j += 1;
        } else if table[i + 1][j] >= table[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

fn aligned_cell<'a>(a: &Aligned, theme: &Theme) -> Cell<'a> {
    let label = |c: &Call| {
        let mut s = call_label(&c.tool, &c.arguments);
        s.push_str(if c.is_error { " ✗" } else { " ✓" });
        if let Some(f) = c.fidelity {
            s.push_str(&format!(" fid {f:.2}"));
        }
        one_line(&s, 120)
    };
    match a {
        Aligned::Same(c) => Cell::from(Span::styled(
            label(c),
            if c.is_error {
                theme.error()
            } else {
                theme.text()
            },
        )),
        Aligned::ArgsDiffer(c) => Cell::from(Span::styled(format!("≠ {}", label(c)), theme.diff())),
        Aligned::Extra(c) => Cell::from(Span::styled(format!("+ {}", label(c)), theme.mark())),
        Aligned::Missing => Cell::from(Span::styled("—", theme.dim())),
    }
}

/// A metric's name, its value per run, and the runs that are best at it.
type MetricRow = (&'static str, Vec<String>, Vec<usize>);

/// The rows of the metric table.
fn metric_rows(ms: &[RunMetrics]) -> Vec<MetricRow> {
    type Get = fn(&RunMetrics) -> Option<f64>;
    type Format = fn(f64) -> String;
    // (name, value, Some(higher is better), format)
    let specs: [(&str, Get, Option<bool>, Format); 10] = [
        ("status", |_| None, None, |_| String::new()),
        (
            "tool calls",
            |m| Some(m.tool_calls as f64),
            None,
            |v| format!("{v:.0}"),
        ),
        (
            "success",
            |m| m.tool_call_success_rate,
            Some(true),
            |v| format!("{:.0}%", v * 100.0),
        ),
        (
            "valid names",
            |m| m.valid_tool_name_rate,
            Some(true),
            |v| format!("{:.0}%", v * 100.0),
        ),
        (
            "schema",
            |m| m.input_schema_compliance,
            Some(true),
            |v| format!("{:.0}%", v * 100.0),
        ),
        (
            "fidelity",
            |m| m.fidelity.map(|f| f.score),
            Some(true),
            |v| format!("{v:.2}"),
        ),
        (
            "tokens",
            |m| Some(m.tokens() as f64),
            Some(false),
            |v| format!("{v:.0}"),
        ),
        (
            "time s",
            |m| Some(m.wall_ms as f64 / 1000.0),
            Some(false),
            |v| format!("{v:.1}"),
        ),
        (
            "nodes",
            |m| Some(m.nodes as f64),
            None,
            |v| format!("{v:.0}"),
        ),
        (
            "judge overall",
            |m| m.judge.map(|j| j.overall),
            Some(true),
            |v| format!("{v:.1}"),
        ),
    ];
    specs
        .iter()
        .map(|(name, get, higher_better, fmt)| -> MetricRow {
            if *name == "status" {
                let v = ms
                    .iter()
                    .map(|m| {
                        m.status
                            .map_or("incomplete".into(), |s| s.as_str().to_string())
                    })
                    .collect();
                return (*name, v, Vec::new());
            }
            let vals: Vec<Option<f64>> = ms.iter().map(get).collect();
            let text = vals
                .iter()
                .map(|v| v.map_or("—".to_string(), fmt))
                .collect();
            // Every run that reaches the best value is marked; none when all are equal.
            let best = higher_better.map_or_else(Vec::new, |hb| {
                let present: Vec<(usize, f64)> = vals
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| v.map(|v| (i, v)))
                    .collect();
                if present.len() < 2 || present.iter().all(|(_, v)| *v == present[0].1) {
                    return Vec::new();
                }
                let values = present.iter().map(|(_, v)| *v);
                let target = if hb {
                    values.fold(f64::NEG_INFINITY, f64::max)
                } else {
                    values.fold(f64::INFINITY, f64::min)
                };
                present
                    .iter()
                    .filter(|(_, v)| *v == target)
                    .map(|(i, _)| *i)
                    .collect()
            });
            (*name, text, best)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(tool: &str, arg: i64) -> Call {
        Call {
            tool: tool.into(),
            arguments: json!({"x": arg}),
            is_error: false,
            fidelity: None,
        }
    }

    #[test]
    fn alignment_marks_same_differing_extra_and_missing() {
        let a = vec![call("t:a", 1), call("t:b", 1), call("t:c", 1)];
        let b = vec![call("t:a", 1), call("t:z", 0), call("t:c", 2)];
        let rows = align(&[a, b]);
        // a1 same; z extra after a; b missing; c args differ.
        assert_eq!(rows.len(), 4);
        assert!(matches!(rows[0][1], Aligned::Same(_)));
        assert!(matches!(rows[1][1], Aligned::Extra(ref c) if c.tool == "t:z"));
        assert!(matches!(rows[1][0], Aligned::Missing));
        assert!(matches!(rows[2][1], Aligned::Missing));
        assert!(matches!(rows[3][1], Aligned::ArgsDiffer(_)));
    }
}
