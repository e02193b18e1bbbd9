//! The world-model view: a `cosmos wm-eval` file opened. The leaderboard and the pairs on top;
//! below, one row per recorded call with the real result's head and, per world model, its
//! score and what it got wrong (the first differing JSON leaf, or the head of its text). `s`
//! puts the calls nobody got right first (then those the world models disagree on); Enter shows one
//! call whole, the real result and every simulation side by side, wrapped.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Clear, Paragraph, Row, Table};
use serde_json::Value;

use crate::tui::action::Action;
use crate::tui::keymap::{Command, Mode};
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View, Work};
use crate::tui::widgets::scroll::{Scroll, Selection};
use crate::tui::widgets::wrap::wrap_line;
use cosmos_engine::metrics::leaderboard::Leaderboard;
use cosmos_engine::metrics::routing_bound::{Choice, Judged, choose, judged_by_tool};
use cosmos_engine::metrics::{fidelity, figure};
use cosmos_engine::wm_eval::{Filed, Verdict};
use cosmos_trajectory::describe::call_label;
use cosmos_trajectory::event::{Leader, Observation};
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize::{lines, one_line};

/// One recorded call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRow {
    /// Its step in the file.
    pub step: u64,
    /// The namespaced tool.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// `tool(k=v, …)` without the server, the arguments that differ between the file's calls
    /// of the tool first.
    pub label: String,
    /// The same with the values alone, for a narrow column: `tool(v, …)`.
    compact: String,
    /// The real result.
    pub real: Observation,
    /// The run the call was copied from (its `origin`), empty when the file does not say.
    pub source: String,
    /// The call's `seq` in that run.
    pub source_seq: Option<u64>,
    /// The source run as `task_agent_world-model` (its file name without the time it was
    /// started, as `cosmos run` names files), `#2`… when two runs would read the same.
    pub run_name: String,
    /// One verdict per world model, as [`Filed::read`] tied it to this call.
    pub verdicts: Vec<Verdict>,
    /// Each verdict as the table shows it (score and what is wrong) and whether it is wrong,
    /// worked out once when the file is read, not at every frame.
    shown: Vec<(String, bool)>,
}

impl CallRow {
    /// The order of "calls nobody got right first": the best score any world model reached
    /// (a failure scores 0), lowest first; among equals, the widest spread between the world
    /// models' scores first.
    fn sort_key(&self) -> (f64, f64) {
        let scores = self.verdicts.iter().map(|v| match v {
            Verdict::Simulated(_, f, _, _) => f.score,
            _ => 0.0,
        });
        let (lo, hi) = scores.fold((1.0_f64, 0.0_f64), |(lo, hi), s| (lo.min(s), hi.max(s)));
        (hi, -(hi - lo).max(0.0))
    }
}

/// State of the world-model view.
#[derive(Debug)]
pub struct WmEvalView {
    /// The file.
    pub(crate) title: String,
    /// The world models, in the leaderboard's order.
    pub(crate) names: Vec<String>,
    /// The calls.
    pub(crate) rows: Vec<CallRow>,
    /// Row order shown (indices into `rows`).
    order: Vec<usize>,
    /// Sorted nobody-right-first (else by step).
    pub(crate) by_disagreement: bool,
    /// The leaderboard over the file ([`Filed::leaderboard`]).
    pub(crate) board: Leaderboard,
    /// Per world model, per tool: its predictions judged and the threshold routing would
    /// choose at ε = δ = 0.1 (`metrics::routing_bound`, as `wm-eval --routing-out` does).
    pub(crate) routing: Vec<Vec<ToolRouting>>,
    /// The leader the file recorded when it was written.
    recorded_leader: Option<Leader>,
    /// World-model failures the file does not tie to a call.
    unplaced_failures: usize,
    /// Lines of the file that could not be read.
    skipped_lines: usize,
    /// The selected row.
    pub(crate) selection: Selection,
    size: (u16, u16),
    /// The run column's width: its widest name, within bounds.
    run_width: u16,
}

impl WmEvalView {
    /// The leaderboard shown.
    pub fn board(&self) -> &Leaderboard {
        &self.board
    }

    /// The world models' names, in column order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// One row per evaluated call.
    pub fn rows(&self) -> &[CallRow] {
        &self.rows
    }

    /// Reads a wm-eval run, through [`Filed::read`] as `cosmos wm-eval` does.
    pub fn new(run: &Run, size: (u16, u16)) -> Self {
        let filed = Filed::read(run);
        let board = filed.leaderboard();
        let table = filed.table();
        let routing = (0..filed.names.len())
            .map(|w| {
                judged_by_tool(&table, w, filed.good_fidelity)
                    .into_iter()
                    .map(|(tool, judged)| ToolRouting {
                        choice: choose(&judged, ROUTING_ERROR, ROUTING_DELTA),
                        tool,
                        judged,
                    })
                    .collect()
            })
            .collect();
        let mut rows: Vec<CallRow> = filed
            .calls
            .iter()
            .map(|c| CallRow {
                step: c.step,
                tool: c.tool.clone(),
                arguments: c.arguments.clone(),
                label: String::new(),
                compact: String::new(),
                real: c.real.clone(),
                source: c.origin.as_ref().map(|o| o.run.clone()).unwrap_or_default(),
                source_seq: c.origin.as_ref().map(|o| o.seq),
                run_name: String::new(),
                verdicts: c.verdicts.clone(),
                shown: Vec::new(),
            })
            .collect();
        name_runs(&mut rows);
        label_calls(&mut rows);
        for row in &mut rows {
            row.shown = row
                .verdicts
                .iter()
                .map(|v| cell_text(v, &row.real))
                .collect();
        }
        let names = filed.names;
        let order = (0..rows.len()).collect();
        let run_width = rows
            .iter()
            .map(|r| unicode_width::UnicodeWidthStr::width(r.run_name.as_str()))
            .max()
            .unwrap_or(0)
            .clamp(3, 32) as u16;
        Self {
            title: run.path.display().to_string(),
            names,
            rows,
            order,
            by_disagreement: false,
            board,
            routing,
            recorded_leader: filed.recorded_leader,
            unplaced_failures: filed.unplaced_failures,
            skipped_lines: run.problems.len(),
            selection: Selection::default(),
            size,
            run_width,
        }
    }

    /// The row under the selection.
    pub fn selected(&self) -> Option<&CallRow> {
        self.order
            .get(self.selection.selected)
            .map(|&i| &self.rows[i])
    }

    /// The calls in the order shown.
    pub fn shown(&self) -> impl Iterator<Item = &CallRow> {
        self.order.iter().map(|&i| &self.rows[i])
    }

    fn split(&self, area: Rect) -> [Rect; 2] {
        let top = (self.names.len() + self.board.pairs.len().min(6) + 5) as u16;
        Layout::vertical([
            Constraint::Length(top.min(area.height / 2)),
            Constraint::Min(0),
        ])
        .areas(area)
    }

    fn page(&self) -> usize {
        let body = Rect::new(0, 0, self.size.0, self.size.1.saturating_sub(1));
        let [_, calls] = self.split(body);
        calls.height.saturating_sub(3).max(1) as usize
    }

    fn sort(&mut self) {
        let selected = self.order.get(self.selection.selected).copied();
        self.order = (0..self.rows.len()).collect();
        if self.by_disagreement {
            let rows = &self.rows;
            self.order.sort_by(|&a, &b| {
                let (ka, kb) = (rows[a].sort_key(), rows[b].sort_key());
                ka.0.total_cmp(&kb.0)
                    .then(ka.1.total_cmp(&kb.1))
                    .then(a.cmp(&b))
            });
        }
        let _ = selected;
        // The cursor goes to the head of the new order: the call that most needs a look.
        self.selection.select(0, self.rows.len(), self.page());
    }
}

/// A call's label in `width` columns: whole when it fits, else its argument values before their
/// keys and its tool's name (`…(Asia/Tokyo, …)`), which is what tells calls of one tool apart.
fn fit_call(label: &str, compact: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthStr;
    if label.width() <= width {
        return label.to_string();
    }
    if compact.width() <= width {
        return compact.to_string();
    }
    match compact.find('(') {
        Some(open) => one_line(&format!("…{}", &compact[open..]), width),
        None => one_line(compact, width),
    }
}

/// Names each row's source run for the run column: its file name without the start time,
/// numbered when two runs would read the same.
fn name_runs(rows: &mut [CallRow]) {
    let stem = |source: &str| {
        let stem = std::path::Path::new(source)
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        // `cosmos run` names files `<start time>_<task>_<agent>_<world model>`.
        match stem.split_once('_') {
            Some((time, rest)) if time.starts_with(|c: char| c.is_ascii_digit()) => {
                rest.to_string()
            }
            _ => stem,
        }
    };
    let mut sources: Vec<&str> = Vec::new();
    for r in rows.iter() {
        if !sources.contains(&r.source.as_str()) {
            sources.push(&r.source);
        }
    }
    let names: Vec<(String, String)> = sources
        .iter()
        .map(|src| {
            let base = stem(src);
            let same: Vec<&&str> = sources.iter().filter(|o| stem(o) == base).collect();
            let name = match same.iter().position(|o| **o == *src) {
                Some(i) if same.len() > 1 => format!("{base} #{}", i + 1),
                _ => base,
            };
            (src.to_string(), name)
        })
        .collect();
    for r in rows.iter_mut() {
        if let Some((_, name)) = names.iter().find(|(src, _)| *src == r.source) {
            r.run_name = name.clone();
        }
    }
}

/// Labels each call `tool(k=v, …)` with the tool's name without its server, and the
/// arguments whose values differ between the file's calls of that tool first, so a narrow
/// column still tells the calls apart.
fn label_calls(rows: &mut [CallRow]) {
    use std::collections::{BTreeMap, BTreeSet};
    let mut seen: BTreeMap<&str, BTreeMap<&str, BTreeSet<String>>> = BTreeMap::new();
    for r in rows.iter() {
        if let Some(map) = r.arguments.as_object() {
            let keys = seen.entry(&r.tool).or_default();
            for (k, v) in map {
                keys.entry(k).or_default().insert(v.to_string());
            }
        }
    }
    let labels: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            let short = r.tool.rsplit(':').next().unwrap_or(&r.tool);
            let Some(map) = r.arguments.as_object() else {
                let label = call_label(short, &r.arguments);
                return (label.clone(), label);
            };
            let varies = |k: &str| {
                seen.get(r.tool.as_str())
                    .and_then(|keys| keys.get(k))
                    .is_some_and(|values| values.len() > 1)
            };
            let mut ordered = serde_json::Map::new();
            for (k, v) in map.iter().filter(|(k, _)| varies(k)) {
                ordered.insert(k.clone(), v.clone());
            }
            for (k, v) in map.iter().filter(|(k, _)| !varies(k)) {
                ordered.insert(k.clone(), v.clone());
            }
            let ordered = Value::Object(ordered);
            (
                call_label(short, &ordered),
                cosmos_trajectory::describe::compact_call_label(short, &ordered),
            )
        })
        .collect();
    for (r, (label, compact)) in rows.iter_mut().zip(labels) {
        r.label = label;
        r.compact = compact;
    }
}

/// A cell's text: the score, then what is wrong (the first differing leaf), or `= real`.
fn cell_text(cell: &Verdict, real: &Observation) -> (String, bool) {
    match cell {
        Verdict::Missing => ("— not reached".into(), false),
        Verdict::Failed(why) => (format!("✗ {why}"), true),
        Verdict::Simulated(o, f, _, _) => {
            let score = figure::fraction(f.score, 2);
            if f.no_prediction {
                return (format!("{score} no prediction"), true);
            }
            if f.score >= 1.0 {
                return (format!("{score} = real"), false);
            }
            let err = if o.is_error != real.is_error {
                if o.is_error {
                    " predicts an error"
                } else {
                    " misses the error"
                }
            } else {
                ""
            };
            let what = match fidelity::differences(o, real).first() {
                Some(d) => format!(
                    " {}: {} ≠ {}",
                    d.path,
                    d.simulated.as_deref().unwrap_or("∅"),
                    d.real.as_deref().unwrap_or("∅")
                ),
                None => format!(" {}", o.text.lines().next().unwrap_or_default()),
            };
            (format!("{score}{err}{what}"), true)
        }
    }
}

impl View for WmEvalView {
    fn mode(&self) -> Mode {
        Mode::Compare
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        let (len, page) = (self.rows.len(), self.page());
        match action {
            Action::Do(command) if self.selection.navigate(*command, len, page) => {}
            Action::Do(Command::SortNext) => {
                self.by_disagreement = !self.by_disagreement;
                self.sort();
            }
            Action::Do(Command::OpenSource) => match self.selected() {
                Some(CallRow {
                    source,
                    source_seq: Some(seq),
                    ..
                }) if !source.is_empty() => out.push(Request::Start(Work::OpenRunAt(
                    std::path::PathBuf::from(source),
                    seq.saturating_sub(1) as usize,
                ))),
                Some(_) => out.push(Request::Say(
                    "this file does not say which run the call came from".into(),
                )),
                None => {}
            },
            Action::Do(Command::Open) => {
                if let Some(row) = self.selected() {
                    let detail = CallDetail::new(row, &self.names, self.size);
                    out.push(Request::Push(Box::new(detail)));
                }
            }
            Action::Do(Command::About) => {
                let sections = self
                    .board
                    .world_models
                    .iter()
                    .map(|w| {
                        let (heading, mut lines) = calibration_lines(&w.name, &w.calibration);
                        let tools = self
                            .names
                            .iter()
                            .position(|n| *n == w.name)
                            .and_then(|k| self.routing.get(k));
                        lines.extend(routing_lines(tools.map_or(&[][..], Vec::as_slice)));
                        (heading, lines)
                    })
                    .collect();
                out.push(Request::Push(Box::new(
                    crate::tui::views::run_view::inspector::Inspector::sections(
                        " Calibration: when to trust each world model ".into(),
                        sections,
                        self.size,
                    ),
                )));
            }
            Action::Resize(w, h) => {
                self.size = (*w, *h);
                self.selection.settle(len, self.page());
            }
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let [top, calls] = self.split(area);
        self.draw_leaderboard(frame, top, theme);
        self.draw_calls(frame, calls, theme);
    }

    fn status(&self) -> Option<String> {
        let mut said = Vec::new();
        if self.skipped_lines > 0 {
            said.push(format!(
                "{} unreadable line(s) skipped (a: about; cosmos validate names them)",
                self.skipped_lines
            ));
        }
        if self.unplaced_failures > 0 {
            said.push(format!(
                "{} world-model failure(s) name no call of the file",
                self.unplaced_failures
            ));
        }
        if let Some(differs) = self.leader_differs() {
            said.push(differs);
        }
        said.push(format!(
            "wm-eval · {} world model(s) · {} call(s){}",
            self.names.len(),
            self.rows.len(),
            if self.by_disagreement {
                " · nobody right first"
            } else {
                ""
            },
        ));
        said.push(self.title.clone());
        Some(said.join(" · "))
    }
}

impl WmEvalView {
    /// What the file recorded as its leader when that is not what it reads as today (an older
    /// metrics version, or a file edited since): said, so neither figure stands alone.
    fn leader_differs(&self) -> Option<String> {
        let recorded = self.recorded_leader.as_ref()?;
        let today = cosmos_engine::wm_eval::leader_of(&self.board);
        let same = today.as_ref().is_some_and(|t| {
            // Equal as the screen shows them: two decimals.
            t.world_model == recorded.world_model
                && format!("{:.2}", t.fidelity) == format!("{:.2}", recorded.fidelity)
        });
        (!same).then(|| {
            format!(
                "the file recorded {} {:.2} as leader; read today {}",
                one_line(&recorded.world_model, 20),
                recorded.fidelity,
                today.map_or("none".to_string(), |t| format!(
                    "{} {:.2}",
                    one_line(&t.world_model, 20),
                    t.fidelity
                ))
            )
        })
    }
}

/// One call whole: the real result and every simulation side by side, wrapped, scrolled
/// together.
#[derive(Debug, Clone)]
pub struct CallDetail {
    title: String,
    /// Column headings and their lines (inert), the real result first.
    columns: Vec<(String, Vec<String>, bool)>,
    scroll: Scroll,
    size: (u16, u16),
}

impl CallDetail {
    /// The detail of `row`.
    pub fn new(row: &CallRow, names: &[String], size: (u16, u16)) -> Self {
        let pretty = |o: &Observation| -> Vec<String> {
            let text = fidelity::as_json(o)
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or_else(|| o.text.clone());
            lines(&text, 2_000, 4_000)
        };
        let mut columns = vec![(
            format!("real{}", if row.real.is_error { " ✗" } else { "" }),
            pretty(&row.real),
            false,
        )];
        for (name, cell) in names.iter().zip(&row.verdicts) {
            let (heading, body, wrong) = match cell {
                Verdict::Simulated(o, f, _, confidence) => {
                    let fraction = |v: f64| figure::fraction(v, 2);
                    let mut body = vec![format!(
                        "score {} · errors agree {:.0} · structure {} · values {} · text {} · {}",
                        fraction(f.score),
                        f.error_agreement,
                        f.structure.map_or("—".into(), fraction),
                        f.values.map_or("—".into(), fraction),
                        fraction(f.token_f1),
                        confidence.map_or("no confidence given".into(), |c| {
                            format!("confidence {}", fraction(c))
                        })
                    )];
                    for d in fidelity::differences(o, &row.real).iter().take(20) {
                        body.push(one_line(
                            &format!(
                                "≠ {}: {} (real {})",
                                d.path,
                                d.simulated.as_deref().unwrap_or("∅"),
                                d.real.as_deref().unwrap_or("∅")
                            ),
                            4_000,
                        ));
                    }
                    body.push(String::new());
                    body.extend(pretty(o));
                    (name.clone(), body, f.score < 1.0)
                }
                Verdict::Failed(why) => (format!("{name} ✗ failed"), lines(why, 200, 4_000), true),
                Verdict::Missing => (
                    name.clone(),
                    vec!["(not reached: the evaluation stopped before this call)".into()],
                    false,
                ),
            };
            columns.push((heading, body, wrong));
        }
        Self {
            title: format!(" Step {} · {} ", row.step, one_line(&row.label, 120)),
            columns,
            scroll: Scroll::default(),
            size,
        }
    }

    fn rect(&self) -> Rect {
        crate::tui::overlays::overlay::inset(self.size)
    }

    /// Rows of the tallest column once wrapped to its width.
    fn len(&self) -> usize {
        let inner = Block::bordered().inner(self.rect());
        let width = (inner.width as usize / self.columns.len().max(1))
            .saturating_sub(1)
            .max(8);
        self.columns
            .iter()
            .map(|(_, body, _)| {
                body.iter()
                    .map(|l| wrap_line(l, width).len())
                    .sum::<usize>()
                    + 1
            })
            .max()
            .unwrap_or(0)
    }

    fn height(&self) -> usize {
        Block::bordered().inner(self.rect()).height as usize
    }

    /// Every column's text (what the tests read).
    pub fn text(&self) -> String {
        self.columns
            .iter()
            .map(|(h, b, _)| format!("{h}\n{}", b.join("\n")))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl View for CallDetail {
    fn mode(&self) -> Mode {
        Mode::Reader
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        let (len, h) = (self.len(), self.height());
        match action {
            Action::Do(Command::Up) => self.scroll.by(-1, len, h),
            Action::Do(Command::Down) => self.scroll.by(1, len, h),
            Action::Do(Command::PageUp) => self.scroll.by(-(h as isize), len, h),
            Action::Do(Command::PageDown) => self.scroll.by(h as isize, len, h),
            Action::Do(Command::Top) => self.scroll.offset = 0,
            Action::Do(Command::Bottom) => self.scroll.by(isize::MAX, len, h),
            Action::Do(Command::Back | Command::Open | Command::Inspect) => {
                out.push(Request::Close)
            }
            Action::Resize(w, hh) => {
                self.size = (*w, *hh);
                self.scroll.clamp(self.len(), self.height());
            }
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn draw(&self, frame: &mut Frame, _area: Rect, theme: &Theme) {
        let rect = self.rect();
        let block = Block::bordered()
            .border_style(theme.focus_border())
            .title(Line::styled(self.title.clone(), theme.title()))
            .title_bottom(Line::styled(
                format!(
                    " rows {} · ↑↓ PgUp PgDn · Esc closes ",
                    self.scroll.position(self.len(), self.height())
                ),
                theme.dim(),
            ));
        let inner = block.inner(rect);
        frame.render_widget(Clear, rect);
        frame.render_widget(block, rect);
        let n = self.columns.len().max(1) as u32;
        let areas = Layout::horizontal((0..n).map(|_| Constraint::Ratio(1, n)))
            .spacing(1)
            .split(inner);
        for ((heading, body, wrong), area) in self.columns.iter().zip(areas.iter()) {
            let width = area.width as usize;
            let mut shown = vec![Line::styled(
                one_line(heading, width),
                if *wrong { theme.diff() } else { theme.title() },
            )];
            let rows = body.iter().flat_map(|l| wrap_line(l, width));
            shown.extend(
                rows.skip(self.scroll.offset)
                    .take(area.height.saturating_sub(1) as usize)
                    .map(|r| {
                        if r.trim_start().starts_with('≠') {
                            Line::styled(r, theme.diff())
                        } else {
                            Line::raw(r)
                        }
                    }),
            );
            frame.render_widget(Paragraph::new(shown), *area);
        }
    }

    fn is_overlay(&self) -> bool {
        true
    }
}

impl WmEvalView {
    /// The leaderboard (★ on the best fidelity) and the pairs' paired differences.
    fn draw_leaderboard(&self, frame: &mut Frame, top: Rect, theme: &Theme) {
        let mut text = vec![Line::styled(
            // 78 columns, laid out as the rows are: whole at 80.
            format!(
                "{:<11} {:>6} {:>4} {:>7}  {:<17}  {:<5} {:<5} {:<6} {:>7}",
                "world model",
                "sim",
                "fail",
                "no pred",
                "fidelity [95% CI]",
                "err P",
                "err R",
                "err F1",
                "tokens"
            ),
            theme.title(),
        )];
        let best = self
            .board
            .world_models
            .iter()
            .filter_map(|w| w.fidelity.map(|f| f.mean))
            .fold(f64::NEG_INFINITY, f64::max);
        for w in &self.board.world_models {
            let fid = match w.fidelity {
                Some(m) => match m.ci {
                    Some([lo, hi]) => format!(
                        "{} [{}, {}]",
                        figure::fraction(m.mean, 2),
                        figure::fraction(lo, 2),
                        figure::fraction(hi, 2)
                    ),
                    None => figure::fraction(m.mean, 2),
                },
                None => "—".into(),
            };
            let star = w.fidelity.is_some_and(|f| f.mean == best) && self.names.len() > 1;
            let before = format!(
                "{:<11} {:>6} {:>4} {:>7}  {:<17}",
                one_line(&w.name, 11),
                format!("{}/{}", w.n, w.calls),
                w.failed,
                w.no_prediction,
                fid,
            );
            let rate = |r: Option<f64>| r.map_or("—".to_string(), |f| format!("{f:.2}"));
            let e = &w.error_prediction;
            let after = format!(
                "{:<5} {:<5} {:<6} {:>7}",
                rate(e.precision),
                rate(e.recall),
                rate(e.f1),
                w.tokens
            );
            // The star sits in the fidelity column, which it is awarded for.
            text.push(Line::from(vec![
                Span::raw(before),
                Span::styled(if star { " ★" } else { "  " }, theme.mark()),
                Span::raw(after),
            ]));
        }
        for p in self.board.pairs.iter().take(6) {
            let diff = match (p.mean_diff, p.ci) {
                (Some(m), Some([lo, hi])) => format!("{m:+.2} [{lo:+.2}, {hi:+.2}]"),
                (Some(m), None) => format!("{m:+.2}"),
                _ => "—".into(),
            };
            text.push(Line::styled(
                one_line(
                    &format!(
                        "{} − {}: {diff} on {} calls both simulated; wins {} ties {} losses {}",
                        p.a, p.b, p.n, p.wins, p.ties, p.losses
                    ),
                    top.width.saturating_sub(2) as usize,
                ),
                theme.dim(),
            ));
        }
        frame.render_widget(
            Paragraph::new(text).block(Block::bordered().border_style(theme.border()).title(
                Line::styled(" World models · ★ best fidelity ", theme.title()),
            )),
            top,
        );
    }

    /// The calls: each real result beside every world model's, wrong ones marked.
    fn draw_calls(&self, frame: &mut Frame, calls: Rect, theme: &Theme) {
        // The world models' cells get the most room: what each got wrong is the point.
        let n = self.names.len().max(1);
        let widths: Vec<Constraint> = [
            Constraint::Length(5),
            Constraint::Length(self.run_width),
            Constraint::Fill(2),
            Constraint::Fill(2),
        ]
        .into_iter()
        .chain((0..n).map(|_| Constraint::Fill(3)))
        .collect();
        // Every column's width, as the table will lay it out: a cell cut to it ends in `…`,
        // never cut short by the table with nothing to say so.
        let laid = Layout::horizontal(widths.clone())
            .spacing(1)
            .split(Block::bordered().inner(calls));
        let width_of = |c: usize| laid.get(c).map_or(20, |r| r.width as usize);
        let header = Row::new(
            ["step", "run", "call", "real"]
                .into_iter()
                .map(|h| Cell::from(h.to_string()))
                .chain(
                    self.names
                        .iter()
                        .enumerate()
                        .map(|(w, n)| Cell::from(one_line(n, width_of(4 + w)))),
                ),
        )
        .style(theme.title());
        let inner_h = calls.height.saturating_sub(3) as usize;
        let call_width = width_of(2);
        let rows = self
            .order
            .iter()
            .enumerate()
            .skip(self.selection.scroll.offset)
            .take(inner_h)
            .map(|(pos, &i)| {
                let r = &self.rows[i];
                let real_head = r.real.text.split_whitespace().collect::<Vec<_>>().join(" ");
                let real_style = if r.real.is_error {
                    theme.error()
                } else {
                    theme.text()
                };
                let mut cells = vec![
                    Cell::from(r.step.to_string()),
                    Cell::from(one_line(&r.run_name, width_of(1))),
                    Cell::from(fit_call(&r.label, &r.compact, call_width)),
                    Cell::from(Span::styled(
                        one_line(
                            &format!("{}{real_head}", if r.real.is_error { "✗ " } else { "" }),
                            width_of(3),
                        ),
                        real_style,
                    )),
                ];
                for (w, (t, wrong)) in r.shown.iter().enumerate() {
                    let style = if *wrong { theme.diff() } else { theme.good() };
                    cells.push(Cell::from(Span::styled(
                        one_line(t, width_of(4 + w)),
                        style,
                    )));
                }
                let mut row = Row::new(cells);
                if pos == self.selection.selected {
                    row = row.style(theme.selected());
                }
                row
            });
        let title = format!(
            " Calls · {} · s: {} · Enter: one call whole · r: its run ",
            self.selection.scroll.position(self.rows.len(), inner_h),
            if self.by_disagreement {
                "by step"
            } else {
                "nobody right first"
            }
        );
        frame.render_widget(
            Table::new(rows, widths)
                .header(header)
                .column_spacing(1)
                .block(
                    Block::bordered()
                        .border_style(theme.border())
                        .title(Line::styled(title, theme.title())),
                ),
            calls,
        );
    }
}

/// Columns of a bar in the reliability diagram.
const BAR: usize = 20;

/// The target error and level the overlay chooses each tool's threshold at (the defaults a
/// user starts `wm-eval --target-error 0.1 --routing-out` with).
const ROUTING_ERROR: f64 = 0.1;
const ROUTING_DELTA: f64 = 0.1;

/// One tool's predictions by one world model, judged, and the threshold chosen on them.
#[derive(Debug, Clone)]
pub(crate) struct ToolRouting {
    pub(crate) tool: String,
    pub(crate) judged: Vec<Judged>,
    pub(crate) choice: Choice,
}

/// Per tool: its risk–coverage curve (the poor share among the surest predictions, as more are
/// trusted, by tenths of its predictions; `|` after the chosen threshold's tenth) and what the
/// bound allows: the threshold with its trusted share, bound and n, or why none.
fn routing_lines(tools: &[ToolRouting]) -> Vec<String> {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let mut lines = vec![format!(
        "  per tool, at ε = δ = {ROUTING_ERROR} (cosmos wm-eval --target-error {ROUTING_ERROR} --routing-out FILE): risk by coverage, surest first"
    )];
    for t in tools {
        let mut sorted = t.judged.clone();
        sorted.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
        let n = sorted.len();
        let trusted = match &t.choice {
            Choice::Trusted { n, .. } => *n,
            Choice::Untrusted { .. } => 0,
        };
        let mut curve = String::new();
        for tenth in 1..=10 {
            let k = (n * tenth).div_ceil(10).max(1).min(n.max(1));
            let poor = sorted.iter().take(k).filter(|j| j.poor).count();
            let risk = if n == 0 { 0.0 } else { poor as f64 / k as f64 };
            curve.push(LEVELS[((risk * 7.0).round() as usize).min(7)]);
            if trusted > 0 && k >= trusted && !curve.contains('|') {
                curve.push('|');
            }
        }
        let verdict = match &t.choice {
            Choice::Trusted {
                threshold,
                n: k,
                poor,
                bound,
            } => format!(
                "trust ≥ {threshold}: {} of {n} ({}), {poor} poor, bound {}",
                k,
                figure::percent(*k as f64 / n.max(1) as f64, 0),
                figure::fraction(*bound, 3)
            ),
            Choice::Untrusted { why, more_needed } => format!(
                "never trusted: {why}{}",
                more_needed.map_or(String::new(), |m| format!("; {m} more needed"))
            ),
        };
        lines.push(format!(
            "  {}  {}  {verdict}",
            one_line(&t.tool, 60),
            if n == 0 { "(none)".to_string() } else { curve }
        ));
    }
    lines
}

/// One world model's calibration as the overlay shows it (`a`): its figures as the leaderboard
/// has them, the reliability diagram (each bin's mean confidence and mean fidelity as bars) and
/// the selective curve.
fn calibration_lines(
    name: &str,
    c: &cosmos_engine::metrics::calibration::Calibration,
) -> (String, Vec<String>) {
    let fraction = |v: f64| figure::fraction(v, 2);
    let num = |v: Option<f64>| v.map_or("—".to_string(), fraction);
    let heading = format!(
        "{name} · {} of {} predictions with a confidence",
        c.n,
        c.n + c.without_confidence
    );
    let mut lines = Vec::new();
    if c.n == 0 {
        lines.push(
            "  no confidence given: nothing to calibrate (routing counts it as unsure)".into(),
        );
        return (heading, lines);
    }
    lines.push(format!(
        "  ECE {} · Brier {} · AUROC {} · good: fidelity at least {} ({} of {})",
        num(c.ece),
        num(c.brier),
        num(c.auroc),
        fraction(c.good_fidelity),
        c.good,
        c.n
    ));
    lines.push("  reliability: confidence (c) beside the fidelity it had (f), per bin".into());
    let bar = |v: f64| {
        let full = (v * BAR as f64).round() as usize;
        format!("{}{}", "█".repeat(full), "·".repeat(BAR - full.min(BAR)))
    };
    for b in c.reliability.iter().filter(|b| b.n > 0) {
        let (conf, fid) = (b.confidence.unwrap_or(0.0), b.fidelity.unwrap_or(0.0));
        lines.push(format!(
            "  {:.1}–{:.1}  n {:>4}  c {} {}  f {} {}",
            b.from,
            b.to,
            b.n,
            bar(conf),
            fraction(conf),
            bar(fid),
            fraction(fid)
        ));
    }
    lines.push("  selective: trusting only predictions with at least this confidence".into());
    for s in &c.selective {
        let interval = s.fidelity.ci.map_or(String::new(), |[lo, hi]| {
            format!(" [{}, {}]", fraction(lo), fraction(hi))
        });
        lines.push(format!(
            "  ≥ {}  coverage {} ({})  fidelity {}{interval}",
            s.threshold_shown,
            figure::percent(s.coverage, 0),
            s.n,
            fraction(s.fidelity.mean)
        ));
    }
    (heading, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(source: &str) -> CallRow {
        CallRow {
            step: 1,
            tool: "t:x".into(),
            arguments: Value::Null,
            label: String::new(),
            compact: String::new(),
            real: Observation::default(),
            source: source.into(),
            source_seq: Some(1),
            run_name: String::new(),
            verdicts: Vec::new(),
            shown: Vec::new(),
        }
    }

    #[test]
    fn runs_are_named_without_their_start_time_and_numbered_when_two_read_the_same() {
        let mut rows = vec![
            row("runs/20261202T015325.079Z_time_mcp_001_spiral_memory.jsonl"),
            row("runs/20261202T023237.833Z_time_mcp_001_spiral_memory.jsonl"),
            row("runs/20261202T025240.637Z_time_mcp_000_react_none.jsonl"),
            row("runs/20261202T015325.079Z_time_mcp_001_spiral_memory.jsonl"),
        ];
        name_runs(&mut rows);
        let names: Vec<&str> = rows.iter().map(|r| r.run_name.as_str()).collect();
        assert_eq!(
            names,
            [
                "time_mcp_001_spiral_memory #1",
                "time_mcp_001_spiral_memory #2",
                "time_mcp_000_react_none",
                "time_mcp_001_spiral_memory #1",
            ]
        );
    }
}
