//! Compare: two to four runs side by side. Metrics in columns with the best of each row marked
//! (world-model cost and the answer too); every run's calls aligned together, one row a call
//! across runs; the selected row's full arguments and, per run, its simulated and real results
//! with their fidelity. Column headers name what differs between the runs. Enter opens the run
//! of the chosen column at that step.

use cosmos_engine::metrics::figure;
use crossterm::event::MouseEventKind;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use crate::tui::action::Action;
use crate::tui::keymap::{Command, Mode};
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View, Work};
use crate::tui::widgets::scroll::Selection;
use crate::tui::widgets::wrap::wrap_line;
use cosmos_engine::metrics::fidelity::Fidelity;
use cosmos_engine::metrics::run::{RunFacts, RunMetrics};
use cosmos_trajectory::describe::call_label;
use cosmos_trajectory::event::{EventBody, Observation, PredictionRecord, Role};
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize::{lines, one_line};

/// Where a call's result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallSource {
    /// The run made it.
    Real,
    /// A copy of another run's call (a fork's history, or its recording's answer).
    Replayed,
    /// A world model answered it in place of a call that was never made (a fork's miss).
    Simulated,
}

/// One executed call of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Where its result came from.
    pub source: CallSource,
    /// Namespaced tool.
    pub tool: String,
    /// Arguments.
    pub arguments: serde_json::Value,
    /// It failed.
    pub is_error: bool,
    /// Its fidelity, when simulated.
    pub fidelity: Option<Fidelity>,
    /// The real result.
    pub real: Observation,
    /// The simulation it was compared with.
    pub simulated: Option<Observation>,
    /// Index of its `tool_called` (or, simulated, `call_simulated`) event.
    pub event: usize,
}

impl Call {
    /// The same call with the same result: what the first divergence looks for. A replayed
    /// copy is the same as the call it copies; a simulation is never the same as a real call.
    fn same_as(&self, other: &Call) -> bool {
        use cosmos_engine::world_model::canonical;
        self.tool == other.tool
            && canonical(&self.arguments) == canonical(&other.arguments)
            && self.real == other.real
            && (self.source == CallSource::Simulated) == (other.source == CallSource::Simulated)
    }
}

/// The first aligned row whose calls are not all the same call with the same result (a run
/// without a call there included): where the runs part ways.
pub fn first_divergence(rows: &[AlignedRow]) -> Option<usize> {
    rows.iter().position(|row| {
        let Some(Some(first)) = row.first() else {
            return true;
        };
        row.iter()
            .any(|c| c.as_ref().is_none_or(|c| !c.same_as(first)))
    })
}

/// One row: a call aligned across the runs (`None` where a run makes no such call here).
pub type AlignedRow = Vec<Option<Call>>;

/// State of the compare view.
#[derive(Debug)]
pub struct CompareView {
    /// Column labels: what differs between the runs.
    pub(crate) labels: Vec<String>,
    /// The runs' files (Enter reopens one at a step).
    pub(crate) paths: Vec<std::path::PathBuf>,
    /// Metrics of each run.
    pub(crate) metrics: Vec<RunMetrics>,
    answers: Vec<Option<String>>,
    /// Rows of aligned calls; one cell per run.
    pub(crate) rows: Vec<AlignedRow>,
    /// The first row where the runs' calls differ, if they ever do.
    pub(crate) first_divergence: Option<usize>,
    /// The metric table's rows (the rows that differ first), worked out once: the runs are
    /// loaded and do not change.
    metric_table: Vec<MetricRow>,
    /// Each run's outcome: clean, and ended (the status row's style).
    outcomes: Vec<(bool, bool)>,
    /// A warning (runs of different tasks).
    pub(crate) warning: Option<String>,
    /// The selected row.
    pub(crate) selection: Selection,
    /// The chosen column (the run Enter opens).
    pub(crate) column: usize,
    /// Keys move through the metrics table instead of the calls (Tab switches).
    pub(crate) metrics_focused: bool,
    /// The first metric row shown (the table scrolls when the screen is short).
    pub(crate) metrics_offset: usize,
    size: (u16, u16),
}

impl CompareView {
    /// The aligned rows: one per call position, each run's call in its column.
    pub fn rows(&self) -> &[AlignedRow] {
        &self.rows
    }

    /// Each run's metrics, in column order.
    pub fn metrics(&self) -> &[RunMetrics] {
        &self.metrics
    }

    /// The runs' files, in column order.
    pub fn paths(&self) -> &[std::path::PathBuf] {
        &self.paths
    }

    /// The columns' labels.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The first row where the runs' calls differ, when any does.
    pub fn first_divergence(&self) -> Option<usize> {
        self.first_divergence
    }

    /// The selected row.
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// Builds the comparison of loaded runs.
    pub fn new(runs: &[Run], size: (u16, u16)) -> Self {
        let metrics: Vec<RunMetrics> = runs
            .iter()
            .map(cosmos_engine::metrics::run::of_run)
            .collect();
        // The world model's predictions per run (`None` for a run without a search or chain).
        let simulations: Vec<Option<u64>> = runs
            .iter()
            .map(|r| (!r.nodes().is_empty()).then(|| r.predictions()))
            .collect();
        let metric_table = metric_rows(&metrics, &simulations);
        let outcomes = metrics
            .iter()
            .map(|m| (m.outcome().1, m.status.is_some()))
            .collect();
        let calls: Vec<Vec<Call>> = runs.iter().map(calls_of).collect();
        let rows = align(&calls);
        let first_divergence = first_divergence(&rows);
        // A fork beside its original opens where they part ways.
        let forked = runs.iter().any(|r| {
            r.header.fork_of.as_ref().is_some_and(|f| {
                runs.iter()
                    .any(|o| o.header.run_id == f.run_id && o.header.run_id != r.header.run_id)
            })
        });
        let mut selection = Selection::default();
        if let (true, Some(row)) = (forked, first_divergence) {
            selection.selected = row;
        }
        let tasks: Vec<&str> = runs.iter().map(|r| r.header.task.id.as_str()).collect();
        let warning = tasks
            .windows(2)
            .any(|w| w[0] != w[1])
            .then(|| format!("runs of different tasks: {}", tasks.join(", ")));
        Self {
            labels: labels(runs),
            paths: runs.iter().map(|r| r.path.clone()).collect(),
            metrics,
            answers: runs
                .iter()
                .map(|r| r.answer_at(r.len()).map(String::from))
                .collect(),
            rows,
            first_divergence,
            metric_table,
            outcomes,
            warning,
            selection,
            column: 0,
            metrics_focused: false,
            metrics_offset: 0,
            size,
        }
    }

    /// Metrics on top, the aligned calls in the middle, the selected row below.
    fn split(&self, area: Rect) -> [Rect; 3] {
        let metric_rows = self.metric_table.len() + 2;
        Layout::vertical([
            Constraint::Length((metric_rows as u16 + 3).min(area.height / 3)),
            Constraint::Min(4),
            Constraint::Percentage(35),
        ])
        .areas(area)
    }

    /// Metric rows (the answer included) and how many fit on screen.
    fn metric_window(&self) -> (usize, usize) {
        let body = Rect::new(0, 0, self.size.0, self.size.1.saturating_sub(1));
        let [top, ..] = self.split(body);
        let total = self.metric_table.len() + 1;
        (total, top.height.saturating_sub(3).max(1) as usize)
    }

    /// Scrolls the metrics table by `delta` rows, within its rows.
    fn scroll_metrics(&mut self, delta: isize) {
        let (total, shown) = self.metric_window();
        let last = total.saturating_sub(shown);
        self.metrics_offset = self.metrics_offset.saturating_add_signed(delta).min(last);
    }

    /// Call rows on screen.
    fn visible(&self) -> usize {
        let body = Rect::new(0, 0, self.size.0, self.size.1.saturating_sub(1));
        let [_, calls, _] = self.split(body);
        calls.height.saturating_sub(3).max(1) as usize
    }
}

/// What tells the runs apart, for their column headers: the agent and world model always,
/// then every setting, model, label or start time whose value differs between the runs, each
/// named as the header names it (`alpha=0.5`, `k=3`); a setting a run does not have is left
/// out of its label rather than shown as a dash.
fn labels(runs: &[Run]) -> Vec<String> {
    // Every fact of a header that can tell runs apart, as (name, value) pairs.
    let facts = |r: &Run| -> Vec<(String, String)> {
        let h = &r.header;
        let mut facts: Vec<(String, String)> = h
            .agent
            .settings
            .iter()
            .map(|(k, v)| {
                let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                (k.clone(), v)
            })
            .collect();
        facts.push(("planner".into(), h.planner.model.clone()));
        for (role, m) in &h.roles {
            facts.push((role.clone(), m.model.clone()));
        }
        if let Some(label) = &h.label {
            facts.push(("label".into(), label.clone()));
        }
        facts.push(("started".into(), h.started_shown("%m-%d %H:%M:%S")));
        facts
    };
    let all: Vec<Vec<(String, String)>> = runs.iter().map(facts).collect();
    let value = |run: usize, name: &str| {
        all[run]
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let mut names: Vec<&str> = Vec::new();
    for facts in &all {
        for (name, _) in facts {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    // The start time tells runs apart only when nothing else does.
    let differing: Vec<&str> = names
        .into_iter()
        .filter(|name| (1..runs.len()).any(|i| value(i, name) != value(0, name)))
        .collect();
    let others_differ = differing.iter().any(|n| *n != "started");
    runs.iter()
        .enumerate()
        .map(|(i, r)| {
            // A fork beside its original says which it is, as the browser marks it (`⑂@N`).
            let fork_at = r.header.fork_of.as_ref().and_then(|f| {
                runs.iter()
                    .any(|o| o.header.run_id == f.run_id)
                    .then_some(f.step)
            });
            let is_original = runs.iter().any(|o| {
                o.header
                    .fork_of
                    .as_ref()
                    .is_some_and(|f| f.run_id == r.header.run_id)
            });
            let mut label = match (fork_at, is_original) {
                (Some(step), _) => format!("⑂@{step} fork · "),
                (None, true) => "original · ".to_string(),
                (None, false) => String::new(),
            };
            label.push_str(&format!(
                "{} / {}",
                r.header.agent.kind.as_str(),
                r.header.world_model_name()
            ));
            for name in &differing {
                if *name == "started" && others_differ {
                    continue;
                }
                if let Some(v) = value(i, name) {
                    label.push_str(&format!(" {name}={v}"));
                }
            }
            label
        })
        .collect()
}

impl CompareView {
    fn scrolled(&mut self, delta: isize) -> Handled {
        self.scroll_metrics(delta);
        Handled::Consumed
    }
}

impl View for CompareView {
    fn mode(&self) -> Mode {
        Mode::Compare
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        let (len, visible) = (self.rows.len(), self.visible());
        let columns = self.labels.len().max(1);
        if self.metrics_focused {
            let page = self.metric_window().1 as isize;
            match action {
                Action::Do(Command::Up) => return self.scrolled(-1),
                Action::Do(Command::Down) => return self.scrolled(1),
                Action::Do(Command::PageUp) => return self.scrolled(-page),
                Action::Do(Command::PageDown) => return self.scrolled(page),
                Action::Do(Command::Top) => return self.scrolled(isize::MIN / 2),
                Action::Do(Command::Bottom) => return self.scrolled(isize::MAX / 2),
                _ => {}
            }
        }
        match action {
            Action::Do(Command::FocusNext) => self.metrics_focused = !self.metrics_focused,
            Action::Mouse(m) => {
                let delta = match m.kind {
                    MouseEventKind::ScrollUp => -1,
                    MouseEventKind::ScrollDown => 1,
                    _ => return Handled::Ignored,
                };
                // The wheel scrolls what is under the mouse.
                let body = Rect::new(0, 0, self.size.0, self.size.1.saturating_sub(1));
                let [top, ..] = self.split(body);
                if m.row < top.y + top.height {
                    self.scroll_metrics(delta);
                } else {
                    self.selection.by(delta * 3, len, visible);
                }
            }
            Action::Do(Command::Up) => self.selection.by(-1, len, visible),
            Action::Do(Command::Down) => self.selection.by(1, len, visible),
            Action::Do(Command::PageUp) => self.selection.by(-(visible as isize), len, visible),
            Action::Do(Command::PageDown) => self.selection.by(visible as isize, len, visible),
            Action::Do(Command::Top) => self.selection.select(0, len, visible),
            Action::Do(Command::Bottom) => self.selection.select(usize::MAX, len, visible),
            Action::Do(Command::StepBack) => self.column = (self.column + columns - 1) % columns,
            Action::Do(Command::StepForward) => self.column = (self.column + 1) % columns,
            Action::Do(Command::Open) => {
                let call = self
                    .rows
                    .get(self.selection.selected)
                    .and_then(|row| row.get(self.column))
                    .and_then(Option::as_ref);
                match call {
                    Some(c) => out.push(Request::Start(Work::OpenRunAt(
                        self.paths[self.column].clone(),
                        c.event,
                    ))),
                    None => out.push(Request::Say(
                        "this run makes no call on this row (←/→ picks another run)".into(),
                    )),
                }
            }
            Action::Resize(w, h) => {
                self.size = (*w, *h);
                self.selection.settle(len, self.visible());
            }
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn status(&self) -> Option<String> {
        let keys = if self.metrics_focused {
            "↑/↓ scroll the metrics · Tab the calls"
        } else {
            "←/→ column · Enter opens it at the selected call · Tab the metrics"
        };
        let parted = self.first_divergence.map_or(String::new(), |row| {
            format!(" · ⑂ part at call {}", row + 1)
        });
        Some(format!(
            "compare {} runs{parted} · column {} · {keys}",
            self.labels.len(),
            self.column + 1
        ))
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let [top, middle, bottom] = self.split(area);
        let columns = self.columns(area);
        self.draw_metrics(frame, top, &columns, theme);
        self.draw_calls(frame, middle, &columns, theme);
        self.draw_selected(frame, bottom, theme);
    }
}

impl CompareView {
    /// The table's columns (the row names, then one per run) and what a run's column holds.
    fn columns(&self, area: Rect) -> (Vec<Constraint>, usize) {
        let n = self.labels.len();
        let widths: Vec<Constraint> = std::iter::once(Constraint::Length(14))
            .chain((0..n).map(|_| Constraint::Ratio(1, n as u32)))
            .collect();
        // What a run's column really holds: the table's borders (2) and the first column (14)
        // off, and a column's spacing (1) each, so a cut text ends in `…` inside the column
        // instead of being cut again, silently, by the table.
        let column_width = (area.width as usize)
            .saturating_sub(2 + 14 + n)
            .checked_div(n.max(1))
            .unwrap_or(0);
        (widths, column_width)
    }

    /// The header row: `first`, then each run's label (the focused column marked).
    fn header_row(&self, first: &str, column_width: usize, theme: &Theme) -> Row<'static> {
        Row::new(std::iter::once(Cell::from(first.to_string())).chain(
            self.labels.iter().enumerate().map(|(i, l)| {
                let style = if i == self.column {
                    theme.title().patch(theme.selected())
                } else {
                    theme.title()
                };
                Cell::from(Span::styled(one_line(l, column_width), style))
            }),
        ))
        .style(theme.title())
    }

    /// The metrics, one row each (★ on the best), the rows that differ first, then the answers.
    fn draw_metrics(
        &self,
        frame: &mut Frame,
        top: Rect,
        (widths, column_width): &(Vec<Constraint>, usize),
        theme: &Theme,
    ) {
        let (widths, column_width) = (widths.clone(), *column_width);
        let rows = &self.metric_table;
        let differing = rows.iter().take_while(|row| differs(row)).count();
        let mut metric_lines: Vec<Row> =
            rows.iter()
                .map(|(name, values, best)| {
                    Row::new(std::iter::once(Cell::from(*name)).chain(
                        values.iter().enumerate().map(|(i, v)| {
                            if best.contains(&i) {
                                Cell::from(Span::styled(format!("{v} ★"), theme.mark()))
                            } else if *name == "status" {
                                // The outcome as the browser and the run view style it.
                                let (clean, ended) = self.outcomes[i];
                                Cell::from(Span::styled(v.as_str(), theme.outcome(clean, ended)))
                            } else {
                                Cell::from(v.as_str())
                            }
                        }),
                    ))
                })
                .collect();
        // The answers, each quoted so that neighbouring ones never read as one, right after
        // the rows that differ.
        // Two columns for the quotes, and one spare: the ratio split may round a column down.
        let answer_width = column_width.saturating_sub(3);
        metric_lines.insert(
            differing,
            Row::new(
                std::iter::once(Cell::from("answer")).chain(self.answers.iter().map(|a| {
                    Cell::from(match a {
                        Some(a) => format!("“{}”", one_line(a, answer_width)),
                        None => "—".to_string(),
                    })
                })),
            ),
        );
        let title = match &self.warning {
            Some(w) => format!(" Compare · ★ best · {w} "),
            None => " Compare · ★ best of each row ".to_string(),
        };
        let (total, shown) = (metric_lines.len(), top.height.saturating_sub(3) as usize);
        let offset = self.metrics_offset.min(total.saturating_sub(shown));
        let position = if total > shown {
            format!(
                " rows {}–{} of {total} · Tab, then ↑/↓ ",
                offset + 1,
                (offset + shown).min(total)
            )
        } else {
            String::new()
        };
        let metric_lines: Vec<Row> = metric_lines.into_iter().skip(offset).collect();
        frame.render_widget(
            Table::new(metric_lines, widths)
                .header(self.header_row("metric", column_width, theme))
                .block(
                    Block::bordered()
                        .border_style(if self.metrics_focused {
                            theme.focus_border()
                        } else {
                            theme.border()
                        })
                        .title(Line::styled(title, theme.title()))
                        .title_bottom(Line::styled(position, theme.dim()).right_aligned()),
                ),
            top,
        );
    }

    /// The real calls aligned across the runs.
    fn draw_calls(
        &self,
        frame: &mut Frame,
        middle: Rect,
        (widths, column_width): &(Vec<Constraint>, usize),
        theme: &Theme,
    ) {
        let (widths, column_width) = (widths.clone(), *column_width);
        let inner_h = middle.height.saturating_sub(3) as usize;
        let block = Block::bordered().border_style(theme.border()).title(Line::styled(
            format!(
                " Calls, aligned across the runs (⑂ first divergence, ≠ other arguments than the row's first, ↺ replayed, ≈ simulated, ✗ failed, — none) · {} ",
                self.selection.scroll.position(self.rows.len(), inner_h)
            ),
            theme.title(),
        ));
        if self.rows.is_empty() {
            frame.render_widget(
                Paragraph::new(Line::styled(
                    "no real tool calls in these runs",
                    theme.dim(),
                ))
                .block(block),
                middle,
            );
        } else {
            let rows = self
                .rows
                .iter()
                .enumerate()
                .skip(self.selection.scroll.offset)
                .take(inner_h)
                .map(|(i, cells)| {
                    let first = cells.iter().flatten().next();
                    let name = if self.first_divergence == Some(i) {
                        Cell::from(Span::styled(format!("⑂ call {}", i + 1), theme.mark()))
                    } else {
                        Cell::from(format!("call {}", i + 1))
                    };
                    let mut row = Row::new(
                        std::iter::once(name).chain(
                            cells
                                .iter()
                                .map(|c| aligned_cell(c.as_ref(), first, column_width, theme)),
                        ),
                    );
                    if i == self.selection.selected {
                        row = row.style(theme.selected());
                    }
                    row
                });
            frame.render_widget(
                Table::new(rows, widths)
                    .header(self.header_row("", column_width, theme))
                    .block(block),
                middle,
            );
        }
    }
}

impl CompareView {
    /// Run `r`'s part of the selected-call pane, divided from the one before it, so "(no call
    /// here)" never reads as the run beside it; the room inside.
    fn run_pane(&self, frame: &mut Frame, r: usize, area: Rect, theme: &Theme) -> Rect {
        let pane = if r == 0 {
            Block::new()
        } else {
            Block::new()
                .borders(Borders::LEFT)
                .border_style(theme.border())
        };
        let inner = pane.inner(area);
        frame.render_widget(pane, area);
        inner
    }

    /// The selected row: its full arguments, then per run its simulated and real results.
    fn draw_selected(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let title = if self.first_divergence == Some(self.selection.selected) {
            " The selected call, per run · ⑂ where the runs first part ways "
        } else {
            " The selected call, per run "
        };
        let block = Block::bordered()
            .border_style(theme.border())
            .title(Line::styled(title, theme.title()));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let Some(row) = self.rows.get(self.selection.selected) else {
            return;
        };
        let n = row.len().max(1) as u32;
        let columns = Layout::horizontal((0..n).map(|_| Constraint::Ratio(1, n)))
            .spacing(1)
            .split(inner);
        // The arguments whose values differ between the runs come first, so a short pane
        // still shows what tells the calls apart.
        let differing = differing_arguments(row);
        for (r, (cell, rect)) in row.iter().zip(columns.iter()).enumerate() {
            let rect = &self.run_pane(frame, r, *rect, theme);
            let width = rect.width as usize;
            let name = self.labels.get(r).map_or("", String::as_str);
            let mut text: Vec<Line> = vec![Line::styled(
                one_line(&format!("run {} · {name}", r + 1), width),
                theme.dim(),
            )];
            match cell {
                None => text.push(Line::styled("(no call here)", theme.dim())),
                Some(c) => {
                    let args = match c.arguments.as_object() {
                        Some(map) => {
                            let mut ordered = serde_json::Map::new();
                            let first = |k: &String| differing.contains(&k.as_str());
                            for (k, v) in map.iter().filter(|(k, _)| first(k)) {
                                ordered.insert(k.clone(), v.clone());
                            }
                            for (k, v) in map.iter().filter(|(k, _)| !first(k)) {
                                ordered.insert(k.clone(), v.clone());
                            }
                            serde_json::Value::Object(ordered).to_string()
                        }
                        None => c.arguments.to_string(),
                    };
                    for l in wrap_line(&one_line(&format!("{} {args}", c.tool), 4_000), width) {
                        text.push(Line::styled(l, theme.title()));
                    }
                    let fid = match (c.fidelity, c.source) {
                        (Some(f), _) => format!("fidelity {}", figure::fraction(f.score, 2)),
                        // The world model's answer stands where the call would be: there is
                        // no real result to score it against.
                        (None, CallSource::Simulated) => "no real call to score it against".into(),
                        (None, CallSource::Replayed) => {
                            "copied from the recording (no metric counts it)".into()
                        }
                        (None, CallSource::Real) => "no simulation".into(),
                    };
                    text.push(Line::styled(fid, theme.dim()));
                    let side = |label: &str, o: &Observation, text: &mut Vec<Line>| {
                        text.push(Line::styled(
                            format!("{label}{}", if o.is_error { " ✗" } else { "" }),
                            if o.is_error {
                                theme.error()
                            } else {
                                theme.dim()
                            },
                        ));
                        for l in lines(&o.text, 30, 2_000) {
                            for w in wrap_line(&l, width) {
                                text.push(Line::raw(w));
                            }
                        }
                    };
                    if let Some(sim) = &c.simulated {
                        side("simulated", sim, &mut text);
                    }
                    let label = match c.source {
                        CallSource::Real => "real",
                        CallSource::Replayed => "real, replayed from the recording",
                        CallSource::Simulated => "simulated in place of a call never made",
                    };
                    side(label, &c.real, &mut text);
                }
            }
            text.truncate(rect.height as usize);
            frame.render_widget(Paragraph::new(text), *rect);
        }
    }
}

fn calls_of(run: &Run) -> Vec<Call> {
    let facts = RunFacts::of(run);
    let mut calls: Vec<Call> = run
        .steps()
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let mut call = call_at(run, s.event as usize)?;
            call.is_error = s.is_error;
            call.fidelity = facts.step(i).and_then(|f| f.fidelity);
            call.simulated = s.simulated.and_then(|e| run.simulated_observation(e));
            Some(call)
        })
        .collect();
    // A fork's copies and simulated calls are calls of its story too: its original's calls
    // align with them.
    calls.extend(
        run.replayed()
            .iter()
            .chain(run.simulated_calls())
            .filter_map(|&e| call_at(run, e as usize)),
    );
    calls.sort_by_key(|c| c.event);
    calls
}

/// The call recorded at event `event` (a `tool_called`, or a fork's `call_simulated`).
fn call_at(run: &Run, event: usize) -> Option<Call> {
    let body = &run.event(event).body;
    if let Some(call) = cosmos_trajectory::recorded_call::RecordedCall::of(body) {
        return Some(Call {
            source: if call.is_copy() {
                CallSource::Replayed
            } else {
                CallSource::Real
            },
            tool: call.tool.to_string(),
            arguments: call.arguments.clone(),
            is_error: call.failed(),
            fidelity: None,
            real: call.result.clone(),
            simulated: None,
            event,
        });
    }
    match body {
        EventBody::CallSimulated {
            tool: Some(tool),
            arguments,
            prediction: PredictionRecord { observation, .. },
            ..
        } => Some(Call {
            source: CallSource::Simulated,
            tool: tool.clone(),
            arguments: arguments.as_deref().cloned().unwrap_or_default(),
            is_error: observation.is_error,
            fidelity: None,
            real: observation.clone(),
            simulated: None,
            event,
        }),
        _ => None,
    }
}

/// Aligns every run's calls together: each run in turn is aligned to the rows so far by the
/// longest common subsequence of tool names (a row's tool is that of its first call); a call
/// that matches no row becomes a row of its own, after the last row matched before it.
pub fn align(calls: &[Vec<Call>]) -> Vec<AlignedRow> {
    let n = calls.len();
    let mut rows: Vec<AlignedRow> = Vec::new();
    for (r, run) in calls.iter().enumerate() {
        let tools: Vec<&str> = rows
            .iter()
            .map(|row| row.iter().flatten().next().map_or("", |c| c.tool.as_str()))
            .collect();
        let theirs: Vec<&str> = run.iter().map(|c| c.tool.as_str()).collect();
        let pairs = lcs(&tools, &theirs);
        let mut merged: Vec<AlignedRow> = Vec::with_capacity(rows.len() + run.len());
        let (mut i, mut j) = (0, 0);
        for &(pi, pj) in pairs
            .iter()
            .chain(std::iter::once(&(rows.len(), run.len())))
        {
            // Rows before the match, then this run's calls before it (new rows), then the match.
            while i < pi {
                merged.push(std::mem::take(&mut rows[i]));
                i += 1;
            }
            while j < pj {
                let mut row = vec![None; n];
                row[r] = Some(run[j].clone());
                merged.push(row);
                j += 1;
            }
            if pi < rows.len() && pj < run.len() {
                let mut row = std::mem::take(&mut rows[pi]);
                row[r] = Some(run[pj].clone());
                merged.push(row);
                i += 1;
                j += 1;
            }
        }
        rows = merged;
    }
    rows
}

/// How long one alignment of two call lists may take. Myers' diff (`similar`) needs memory
/// linear in the calls, but time grows with how much they differ; past the deadline it
/// finishes with a coarser alignment (still in order, still every call) instead of holding
/// the view. Two runs of 25,000 calls once took a table of n×m cells: over 1 GB.
const ALIGN_WITHIN: std::time::Duration = std::time::Duration::from_millis(500);

/// Index pairs of a common subsequence: the longest one, when found within [`ALIGN_WITHIN`].
fn lcs(a: &[&str], b: &[&str]) -> Vec<(usize, usize)> {
    let deadline = std::time::Instant::now() + ALIGN_WITHIN;
    similar::capture_diff_slices_deadline(similar::Algorithm::Myers, a, b, Some(deadline))
        .into_iter()
        .filter_map(|op| match op {
            similar::DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => Some((0..len).map(move |k| (old_index + k, new_index + k))),
            _ => None,
        })
        .flatten()
        .collect()
}

fn aligned_cell<'a>(
    call: Option<&Call>,
    first: Option<&Call>,
    width: usize,
    theme: &Theme,
) -> Cell<'a> {
    let Some(c) = call else {
        return Cell::from(Span::styled("—", theme.dim()));
    };
    // The marks go first: a narrow column cuts the call's arguments, never what happened.
    let mut s = match c.source {
        CallSource::Real => String::new(),
        CallSource::Replayed => "↺ ".to_string(),
        CallSource::Simulated => "≈ ".to_string(),
    };
    // ✗ and ✓ are what a real call did; a world model's answer that is an error is a
    // predicted one, marked as the tree marks it (⚠).
    s.push_str(match (c.source, c.is_error) {
        (CallSource::Simulated, true) => "⚠ ",
        (CallSource::Simulated, false) => "",
        (_, true) => "✗ ",
        (_, false) => "✓ ",
    });
    if let Some(f) = c.fidelity {
        s.push_str(&format!("fid {} ", figure::fraction(f.score, 2)));
    }
    s.push_str(&call_label(&c.tool, &c.arguments));
    let differs = first.is_some_and(|f| f.arguments != c.arguments);
    if differs {
        Cell::from(Span::styled(
            one_line(&format!("≠ {s}"), width),
            theme.diff(),
        ))
    } else {
        let style = if c.is_error && c.source != CallSource::Simulated {
            theme.error()
        } else {
            theme.text()
        };
        Cell::from(Span::styled(one_line(&s, width), style))
    }
}

/// The argument names whose values differ between a row's calls.
fn differing_arguments(row: &AlignedRow) -> Vec<&str> {
    let calls: Vec<&Call> = row.iter().flatten().collect();
    let mut keys: Vec<&str> = calls
        .iter()
        .filter_map(|c| c.arguments.as_object())
        .flat_map(|m| m.keys().map(String::as_str))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.retain(|k| {
        calls
            .windows(2)
            .any(|w| w[0].arguments.get(*k) != w[1].arguments.get(*k))
    });
    keys
}

/// A metric's name, its value per run, and the runs that are best at it.
type MetricRow = (&'static str, Vec<String>, Vec<usize>);

/// The rows of the metric table.
/// The rows of the metric table: those whose values differ between the runs first (so a short
/// screen shows them), in their usual order, then the rest.
fn metric_rows(ms: &[RunMetrics], simulations: &[Option<u64>]) -> Vec<MetricRow> {
    let rows = metric_rows_in_order(ms, simulations);
    let (mut first, rest): (Vec<MetricRow>, Vec<MetricRow>) = rows.into_iter().partition(differs);
    first.extend(rest);
    first
}

/// The runs' values of a metric row are not all the same.
fn differs((_, values, _): &MetricRow) -> bool {
    values.windows(2).any(|w| w[0] != w[1])
}

/// The rows of the metric table in their usual order.
fn metric_rows_in_order(ms: &[RunMetrics], simulations: &[Option<u64>]) -> Vec<MetricRow> {
    type Get = fn(&RunMetrics) -> Option<f64>;
    type Format = fn(f64) -> String;
    // (name, value, Some(higher is better), format)
    let specs: [(&str, Get, Option<bool>, Format); 14] = [
        ("status", |_| None, None, |_| String::new()),
        (
            "tool calls",
            |m| Some(m.tool_calls as f64),
            None,
            |v| format!("{v:.0}"),
        ),
        (
            // A proxy session's calls the world model answered: counted apart, never hidden.
            ANSWERED_ROW,
            |m| (m.simulated_answers > 0).then_some(m.simulated_answers as f64),
            None,
            |v| format!("{v:.0}"),
        ),
        (
            "success",
            |m| m.tool_call_success_rate,
            Some(true),
            |v| figure::percent(v, 0),
        ),
        (
            "valid names",
            |m| m.valid_tool_name_rate,
            Some(true),
            |v| figure::percent(v, 0),
        ),
        (
            "schema",
            |m| m.input_schema_compliance,
            Some(true),
            |v| figure::percent(v, 0),
        ),
        (
            "fidelity",
            |m| m.fidelity.map(|f| f.score),
            Some(true),
            |v| figure::fraction(v, 2),
        ),
        ("w2r", |m| m.w2r, Some(true), |v| figure::fraction(v, 2)),
        (
            "tokens",
            |m| (!m.tokens_unrecorded).then(|| m.tokens() as f64),
            Some(false),
            |v| format!("{v:.0}"),
        ),
        (
            "time s",
            |m| (!m.times_unrecorded).then(|| m.wall_ms as f64 / 1000.0),
            Some(false),
            |v| format!("{v:.1}"),
        ),
        (
            "nodes",
            |m| Some(m.nodes as f64),
            None,
            |v| format!("{v:.0}"),
        ),
        // The world model's predictions (validators' rejections are none); filled from the
        // runs below, as the metrics do not keep them.
        ("simulations", |_| None, None, |v| format!("{v:.0}")),
        (
            "wm tokens",
            |m| {
                let u = m.llm[Role::WorldModel.index()];
                (m.nodes > 0).then(|| u.prompt_tokens.saturating_add(u.completion_tokens) as f64)
            },
            Some(false),
            |v| format!("{v:.0}"),
        ),
        (
            "judge overall",
            |m| m.judge.as_ref().map(|j| j.overall),
            Some(true),
            |v| format!("{v:.1}"),
        ),
    ];
    // The world model's answers to a proxy client have a row only where some run has them.
    let answered = ms.iter().any(|m| m.simulated_answers > 0);
    specs
        .iter()
        .filter(|(name, ..)| answered || *name != ANSWERED_ROW)
        .map(|(name, get, higher_better, fmt)| -> MetricRow {
            if *name == "status" {
                let v = ms.iter().map(|m| m.outcome().0).collect();
                return (*name, v, Vec::new());
            }
            let vals: Vec<Option<f64>> = if *name == "simulations" {
                simulations.iter().map(|n| n.map(|n| n as f64)).collect()
            } else {
                ms.iter().map(get).collect()
            };
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

/// The compare row of a proxy session's calls the world model answered (`routed`).
const ANSWERED_ROW: &str = "◆ wm answered";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(tool: &str, arg: i64) -> Call {
        Call {
            source: CallSource::Real,
            tool: tool.into(),
            arguments: json!({"x": arg}),
            is_error: false,
            fidelity: None,
            real: Observation::default(),
            simulated: None,
            event: 0,
        }
    }

    #[test]
    fn a_predicted_error_is_marked_as_the_tree_marks_it_and_a_real_failure_as_failed() {
        let theme = Theme::new(true);
        let text = |c: &Call| {
            let cell = aligned_cell(Some(c), None, 80, &theme);
            let mut buffer = ratatui::buffer::Buffer::empty(Rect::new(0, 0, 80, 1));
            ratatui::widgets::Widget::render(
                Table::new([Row::new([cell])], [Constraint::Length(80)]),
                buffer.area,
                &mut buffer,
            );
            buffer
                .content()
                .iter()
                .map(|c| c.symbol())
                .collect::<String>()
        };
        let mut predicted = call("t:x", 1);
        predicted.source = CallSource::Simulated;
        predicted.is_error = true;
        assert!(
            text(&predicted).contains("≈ ⚠ t:x(x=1)"),
            "{}",
            text(&predicted)
        );
        assert!(!text(&predicted).contains('✗'));
        let mut failed = call("t:x", 1);
        failed.is_error = true;
        assert!(text(&failed).contains("✗ t:x(x=1)"), "{}", text(&failed));
        // In a column too narrow for the call, the mark stays.
        let cell = aligned_cell(Some(&failed), None, 4, &theme);
        let mut buffer = ratatui::buffer::Buffer::empty(Rect::new(0, 0, 4, 1));
        ratatui::widgets::Widget::render(
            Table::new([Row::new([cell])], [Constraint::Length(4)]),
            buffer.area,
            &mut buffer,
        );
        assert_eq!(buffer.content()[0].symbol(), "✗");
    }

    #[test]
    fn the_first_divergence_is_the_first_row_not_all_the_same_call_with_the_same_result() {
        let copy = Call {
            source: CallSource::Replayed,
            ..call("s:a", 1)
        };
        let simulated = Call {
            source: CallSource::Simulated,
            ..call("s:b", 2)
        };
        let other_result = Call {
            real: Observation {
                text: "other".into(),
                ..Default::default()
            },
            ..call("s:b", 2)
        };
        let row = |a: Option<Call>, b: Option<Call>| vec![a, b];
        // A copy is the call it copies.
        let same = row(Some(call("s:a", 1)), Some(copy));
        assert_eq!(first_divergence(std::slice::from_ref(&same)), None);
        for parted in [
            row(Some(call("s:b", 2)), Some(simulated)),
            row(Some(call("s:b", 2)), Some(other_result)),
            row(Some(call("s:b", 2)), Some(call("s:b", 3))),
            row(Some(call("s:b", 2)), None),
            row(None, Some(call("s:b", 2))),
        ] {
            assert_eq!(
                first_divergence(&[same.clone(), parted.clone()]),
                Some(1),
                "{parted:?}"
            );
        }
    }

    fn tools(row: &AlignedRow) -> Vec<Option<(&str, i64)>> {
        row.iter()
            .map(|c| {
                c.as_ref()
                    .map(|c| (c.tool.as_str(), c.arguments["x"].as_i64().unwrap()))
            })
            .collect()
    }

    #[test]
    fn every_run_is_aligned_with_every_other() {
        let a = vec![call("t:a", 1), call("t:b", 1), call("t:c", 1)];
        let b = vec![call("t:a", 1), call("t:z", 0), call("t:c", 2)];
        // c makes the same extra call as b: it shares b's row, not a row of its own.
        let c = vec![call("t:a", 1), call("t:z", 0), call("t:c", 1)];
        let rows = align(&[a, b, c]);
        let shown: Vec<_> = rows.iter().map(tools).collect();
        assert_eq!(
            shown,
            vec![
                vec![Some(("t:a", 1)), Some(("t:a", 1)), Some(("t:a", 1))],
                vec![Some(("t:b", 1)), None, None],
                vec![None, Some(("t:z", 0)), Some(("t:z", 0))],
                vec![Some(("t:c", 1)), Some(("t:c", 2)), Some(("t:c", 1))],
            ]
        );
    }

    #[test]
    fn four_same_calls_sit_side_by_side() {
        let run = vec![call("time:convert", 1), call("time:convert", 2)];
        let rows = align(&[run.clone(), run.clone(), run.clone(), run]);
        assert_eq!(rows.len(), 2, "not rows 1–4 and 5–8");
        assert!(rows.iter().all(|r| r.iter().all(Option::is_some)));
    }
}
