//! The run browser: one row per run, read from each file's first and last lines; sort,
//! filter, mark for Compare, and the group table.

use std::cmp::Ordering;
use std::path::PathBuf;

use cosmos_engine::metrics::figure;
use crossterm::event::{MouseButton, MouseEventKind};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, Wrap};

use crate::tui::action::Action;
use crate::tui::jobs::groups::GroupsJob;
use crate::tui::jobs::recount::RecountJob;
use crate::tui::keymap::{Command, Mode};
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View, Work};
use crate::tui::widgets::prompt::{Prompt, Typed, matches_all, words};
use crate::tui::widgets::scroll::Selection;
use cosmos_engine::metrics::group::{GroupBy, GroupRow};
use cosmos_engine::metrics::run::METRICS_VERSION;
use cosmos_trajectory::event::{AgentKind, Source};
use cosmos_trajectory::listing::{Recount, RunSummary};
use cosmos_trajectory::sanitize::one_line;

/// Browser columns, in order; `s` cycles the sort through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// Task id.
    Task,
    /// The run's label (a sweep's configuration), or the folder it lies in under the root.
    Label,
    /// Agent.
    Agent,
    /// World model.
    WorldModel,
    /// Planner model.
    Planner,
    /// Status.
    Status,
    /// Real tool calls.
    Calls,
    /// Tool call success rate.
    Success,
    /// Simulation fidelity.
    Fidelity,
    /// Tokens.
    Tokens,
    /// Wall time.
    Time,
    /// Start time (from the header).
    Started,
}

/// Columns in display order with their least widths; `PRIORITY` decides which fit a narrow
/// terminal. The task, label, world model, planner and status columns fit their content
/// ([`ContentWidths`]).
const COLUMNS: [(Column, &str, u16); 12] = [
    (Column::Task, "task", 14),
    (Column::Label, "label", 8),
    (Column::Agent, "agent", 9),
    (Column::WorldModel, "world model", 11),
    (Column::Planner, "planner", 16),
    (Column::Status, "status", 14),
    (Column::Calls, "calls", 5),
    (Column::Success, "success", 7),
    (Column::Fidelity, "fidelity", 8),
    (Column::Tokens, "tokens", 8),
    (Column::Time, "time s", 7),
    (Column::Started, "started", 16),
];

/// Which columns to keep first when space is short (the task column always stays). The calls
/// and their success come before the label, so a narrow screen does not show two runs of one
/// configuration as the same row; the title says how many columns were left out.
const PRIORITY: [Column; 11] = [
    // The status first: its marks are what a person scans the list for, the last to hide.
    Column::Status,
    Column::Agent,
    Column::WorldModel,
    Column::Calls,
    Column::Success,
    Column::Label,
    Column::Fidelity,
    Column::Tokens,
    Column::Time,
    Column::Planner,
    Column::Started,
];

/// The widest text of each growing column over the runs listed (display columns), so no
/// column is wider than what it holds and the status column never cuts a marker.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ContentWidths {
    /// Task ids.
    pub task: u16,
    /// Labels; 0 when no run has one (the column is left out).
    pub label: u16,
    /// Planner models.
    pub planner: u16,
    /// World models (a wm-eval file names all it compares).
    pub world_model: u16,
    /// Status texts with their markers.
    pub status: u16,
    /// Agents (`external: <client>` for a proxy session).
    pub agent: u16,
}

impl ContentWidths {
    /// The widest of each over `runs`.
    fn of(runs: &[RunSummary], labels: &[String]) -> Self {
        use unicode_width::UnicodeWidthStr;
        let w = |s: &str| s.width().min(u16::MAX as usize) as u16;
        let mut out = Self::default();
        for (r, label) in runs.iter().zip(labels) {
            let (task, planner, world_model) = match &r.header {
                Ok(h) => (
                    w(&h.task.id),
                    w(&h.planner_label()),
                    w(&h.world_model_label()),
                ),
                Err(_) => (
                    r.path.file_name().map_or(0, |n| w(&n.to_string_lossy())),
                    0,
                    0,
                ),
            };
            out.task = out.task.max(task);
            out.planner = out.planner.max(planner);
            out.world_model = out.world_model.max(world_model);
            out.label = out.label.max(w(label));
            out.agent = out.agent.max(w(&r.agent_label()));
            // A stale row shows its status and "…" until recounted, which may add markers.
            out.status = out.status.max(w(&r.outcome())).max(w(r.status_label()) + 2);
        }
        out
    }
}

/// The columns that fit in `width` (display order) with their widths. The status column is as
/// wide as its widest text (so every marker shows whole); the task and label columns share what
/// is left, each up to its content, and the task takes the rest.
fn fitting_columns(width: u16, content: &ContentWidths) -> Vec<(usize, u16)> {
    const STATUS_MAX: u16 = 32;
    let least = |c: Column| match c {
        Column::Status => content.status.clamp(6, STATUS_MAX),
        Column::Task => content.task.clamp(4, 14),
        Column::Label => content.label.clamp(5, 8),
        Column::Agent => content.agent.clamp(9, 24),
        // As narrow as its names (`none`, `llm`) when they are short: room for the figures.
        Column::WorldModel => content.world_model.clamp(6, 11),
        _ => COLUMNS
            .iter()
            .find(|(k, _, _)| *k == c)
            .map_or(0, |(_, _, w)| *w),
    };
    let mut used = least(Column::Task);
    let mut keep = vec![Column::Task];
    for c in PRIORITY {
        if c == Column::Label && content.label == 0 {
            continue;
        }
        if used + 1 + least(c) <= width {
            used += 1 + least(c);
            keep.push(c);
        }
    }
    // What is left goes to the growing columns up to their content, the planner last; then
    // the task takes the rest.
    let mut left = width.saturating_sub(used);
    // The task and the label share what is left, half each at first.
    let half = left / 2;
    let mut share = |c: Column, content: u16, at_most: u16| -> u16 {
        if !keep.contains(&c) {
            return 0;
        }
        let extra = content.saturating_sub(least(c)).min(at_most).min(left);
        left -= extra;
        extra
    };
    let task_first = share(Column::Task, content.task, half);
    let label_extra = share(Column::Label, content.label, u16::MAX);
    let task_extra = task_first
        + share(
            Column::Task,
            content.task.saturating_sub(task_first),
            u16::MAX,
        );
    // Room left gives the column its heading's width back ("world model").
    let world_model_extra = share(
        Column::WorldModel,
        content.world_model.clamp(11, 32),
        u16::MAX,
    );
    let planner_extra = share(Column::Planner, content.planner.min(40), u16::MAX);
    COLUMNS
        .iter()
        .enumerate()
        .filter(|(_, (c, _, _))| keep.contains(c))
        .map(|(i, (c, _, _))| {
            let extra = match c {
                Column::Task => task_extra + left,
                Column::Label => label_extra,
                Column::WorldModel => world_model_extra,
                Column::Planner => planner_extra,
                _ => 0,
            };
            (i, least(*c) + extra)
        })
        .collect()
}

/// The group table's state.
#[derive(Debug, Clone, PartialEq)]
pub enum Groups {
    /// Not shown.
    Hidden,
    /// Being computed in the background.
    Loading,
    /// Ready.
    Ready(Vec<GroupRow>),
    /// Could not be computed: why.
    Failed(String),
}

/// State of the run browser.
#[derive(Debug)]
pub struct Browser {
    /// The folders or files listed.
    pub(crate) roots: Vec<PathBuf>,
    runs: Vec<RunSummary>,
    /// Each run's label column: its header's label, or its folder under the root.
    labels: Vec<String>,
    /// Each run's searchable text, lower-cased once.
    haystacks: Vec<String>,
    /// The widest text of each growing column, read when the listing changes.
    content: ContentWidths,
    view: Vec<usize>,
    /// The selected row of the view and the scroll.
    pub(crate) selection: Selection,
    /// Sort column and direction (true = descending).
    pub(crate) sort: (Column, bool),
    /// The filter's words (all must match).
    pub(crate) filter: String,
    /// The filter prompt, while typing.
    pub(crate) prompt: Option<Prompt>,
    /// Marked runs (indices into the listing), in marking order.
    pub(crate) marked: Vec<usize>,
    /// The group table.
    pub(crate) groups: Groups,
    /// The group table as text, laid out once when it arrives.
    group_lines: Vec<String>,
    /// Where each column of the group table starts (characters into its lines); the first,
    /// the group's label, stays in view while the others scroll.
    group_columns: Vec<usize>,
    /// How many of the group table's lines are the table (its header and rows); the notes
    /// below it do not scroll.
    group_table_lines: usize,
    /// Columns the group table is scrolled sideways by (it is often wider than the pane).
    pub(crate) groups_x: usize,
    /// Height of the table area (set on resize).
    pub(crate) height: u16,
}

impl Browser {
    /// The filter prompt, while it is open.
    pub fn prompt(&self) -> Option<&Prompt> {
        self.prompt.as_ref()
    }

    /// The filter in force.
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// The sort column, and whether it is descending.
    pub fn sort(&self) -> (Column, bool) {
        self.sort
    }

    /// The group table's state.
    pub fn groups(&self) -> &Groups {
        &self.groups
    }

    /// A browser over already-listed runs.
    pub fn new(roots: Vec<PathBuf>, runs: Vec<RunSummary>, height: u16) -> Self {
        let mut labels: Vec<String> = runs.iter().map(|r| label(r, &roots)).collect();
        mark_forks(&runs, &mut labels);
        let mut b = Self {
            haystacks: runs
                .iter()
                .zip(&labels)
                .map(|(r, l)| haystack(r, l))
                .collect(),
            content: ContentWidths::of(&runs, &labels),
            labels,
            roots,
            runs,
            view: Vec::new(),
            selection: Selection::default(),
            sort: (Column::Started, true),
            filter: String::new(),
            prompt: None,
            marked: Vec::new(),
            groups: Groups::Hidden,
            group_lines: Vec::new(),
            group_columns: Vec::new(),
            group_table_lines: 0,
            groups_x: 0,
            height,
        };
        b.rebuild_view();
        b
    }

    /// The runs listed (all, unfiltered).
    pub fn runs(&self) -> &[RunSummary] {
        &self.runs
    }

    /// Rows shown, as indices into [`Browser::runs`].
    pub fn view(&self) -> &[usize] {
        &self.view
    }

    /// The run under the selection.
    pub fn selected_run(&self) -> Option<&RunSummary> {
        self.view
            .get(self.selection.selected)
            .map(|&i| &self.runs[i])
    }

    /// Files whose totals were written by an older metrics version (to be recounted).
    pub fn stale_paths(&self) -> Vec<PathBuf> {
        self.runs
            .iter()
            .filter(|r| is_stale(r))
            .map(|r| r.path.clone())
            .collect()
    }

    /// Takes in totals computed again with today's metrics.
    fn recounted(&mut self, recounts: &[Recount]) {
        for recount in recounts {
            if let Some(i) = self.runs.iter().position(|r| r.path == recount.path) {
                self.runs[i].recounted(recount);
                self.haystacks[i] = haystack(&self.runs[i], &self.labels[i]);
            }
        }
        self.content = ContentWidths::of(&self.runs, &self.labels);
        self.rebuild_view();
    }

    /// Lists the run at `path` (or reads it again when listed), when it lies under one of the
    /// folders this browser lists: a fork started from the explorer shows at once, not after
    /// a restart.
    fn written(&mut self, path: &std::path::Path) {
        let selected = self.selected_run().map(|r| r.path.clone());
        let summary = RunSummary::read(path);
        match self.runs.iter().position(|r| r.path == path) {
            Some(i) => self.runs[i] = summary,
            None if self.roots.iter().any(|root| path.starts_with(root)) => self.runs.push(summary),
            None => return,
        }
        let mut labels: Vec<String> = self.runs.iter().map(|r| label(r, &self.roots)).collect();
        mark_forks(&self.runs, &mut labels);
        self.haystacks = self
            .runs
            .iter()
            .zip(&labels)
            .map(|(r, l)| haystack(r, l))
            .collect();
        self.content = ContentWidths::of(&self.runs, &labels);
        self.labels = labels;
        self.rebuild_view();
        // The run that was selected stays selected, wherever the new row sorts.
        if let Some(at) =
            selected.and_then(|s| self.view.iter().position(|&i| self.runs[i].path == s))
        {
            let (len, page) = (self.view.len(), self.page());
            self.selection.select(at, len, page);
        }
    }

    /// Paths of the marked runs.
    pub fn marked_paths(&self) -> Vec<PathBuf> {
        self.marked
            .iter()
            .map(|&i| self.runs[i].path.clone())
            .collect()
    }

    fn rebuild_view(&mut self) {
        let words = words(&self.filter);
        self.view = (0..self.runs.len())
            .filter(|&i| matches_all(&self.haystacks[i], &words))
            .collect();
        let (col, desc) = self.sort;
        let (runs, labels) = (&self.runs, &self.labels);
        self.view.sort_by(|&a, &b| {
            let o = match col {
                // The label shown, a folder's included.
                Column::Label => labels[a]
                    .cmp(&labels[b])
                    .then_with(|| runs[a].path.cmp(&runs[b].path)),
                _ => compare(&runs[a], &runs[b], col),
            };
            if desc { o.reverse() } else { o }
        });
        self.selection.settle(self.view.len(), self.page());
    }

    fn page(&self) -> usize {
        let table = match self.groups {
            Groups::Hidden => self.height,
            _ => self.height * 55 / 100,
        };
        table.saturating_sub(3).max(1) as usize
    }

    fn move_by(&mut self, delta: isize) {
        self.selection.by(delta, self.view.len(), self.page());
    }

    fn type_key(&mut self, key: &crossterm::event::KeyEvent) {
        let Some(prompt) = &mut self.prompt else {
            return;
        };
        match prompt.key(key) {
            Typed::Edited => self.filter = prompt.value().to_string(),
            Typed::Submitted(_) => self.prompt = None,
            Typed::Cancelled => {
                self.prompt = None;
                self.filter.clear();
            }
        }
        self.rebuild_view();
    }

    /// Selects the next (or previous) listed run that did not end cleanly: failed calls, a
    /// malformed decision, a failed or unfinished run. Enter then opens it at its failure.
    /// Follows `fork_of` from the selected run: a fork's original, else the original's first
    /// listed fork (the other way back is the same key on the fork).
    fn fork_link(&mut self, out: &mut Vec<Request>) {
        let Some(Ok(h)) = self.selected_run().map(|r| &r.header) else {
            return;
        };
        let row_of = |i: usize| self.view.iter().position(|&v| v == i);
        let (target, said) = match &h.fork_of {
            Some(of) => {
                let original = self
                    .runs
                    .iter()
                    .position(|r| r.header.as_ref().is_ok_and(|o| o.run_id == of.run_id));
                let said = match original {
                    Some(_) => format!("the original of this fork (forked at step {})", of.step),
                    None => format!("its original is not listed here: {}", of.file),
                };
                (original, said)
            }
            None => {
                let forks: Vec<usize> = (0..self.runs.len())
                    .filter(|&i| fork_of(&self.runs[i]) == Some(h.run_id.as_str()))
                    .collect();
                let said = match forks.len() {
                    0 => "no listed run is a fork of this one".to_string(),
                    n => format!("fork 1 of {n} of this run (b on it comes back)"),
                };
                (forks.first().copied(), said)
            }
        };
        match target.map(|i| (i, row_of(i))) {
            Some((_, Some(row))) => {
                let n = self.view.len();
                self.selection.select(row, n, self.page());
                out.push(Request::Say(said));
            }
            Some((_, None)) => out.push(Request::Say(format!("{said}; the filter hides it"))),
            None => out.push(Request::Say(said)),
        }
    }

    fn next_failure(&mut self, forward: bool, out: &mut Vec<Request>) {
        let n = self.view.len();
        let at = self.selection.selected;
        let found = (1..=n)
            .map(|i| {
                if forward {
                    (at + i) % n
                } else {
                    (at + n - i) % n
                }
            })
            .find(|&row| !self.runs[self.view[row]].clean());
        match found {
            Some(row) => self.selection.select(row, n, self.page()),
            None => out.push(Request::Say("no listed run has a failure".into())),
        }
    }

    fn toggle_mark(&mut self, out: &mut Vec<Request>) {
        let Some(&i) = self.view.get(self.selection.selected) else {
            return;
        };
        if let Some(pos) = self.marked.iter().position(|&m| m == i) {
            self.marked.remove(pos);
        } else if self.marked.len() >= 4 {
            out.push(Request::Say("at most 4 runs can be compared".into()));
            return;
        } else {
            self.marked.push(i);
        }
        out.push(Request::Say(format!(
            "{} marked; c compares",
            self.marked.len()
        )));
        self.move_by(1);
    }
}

impl View for Browser {
    fn mode(&self) -> Mode {
        Mode::Browser
    }

    fn typing(&self) -> bool {
        self.prompt.is_some()
    }

    fn opened(&mut self, out: &mut Vec<Request>) {
        // Totals written by an older metrics version are computed again in the background.
        let stale = self.stale_paths();
        if !stale.is_empty() {
            out.push(Request::Start(Work::Job(Box::new(RecountJob::new(stale)))));
        }
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        let page = self.page() as isize;
        match action {
            Action::Do(Command::Up) => self.move_by(-1),
            Action::Do(Command::Down) => self.move_by(1),
            Action::Do(Command::PageUp) => self.move_by(-page),
            Action::Do(Command::PageDown) => self.move_by(page),
            Action::Do(Command::Top) => self.move_by(isize::MIN / 2),
            Action::Do(Command::Bottom) => self.move_by(isize::MAX / 2),
            Action::Do(Command::Search) => self.prompt = Some(Prompt::new(&self.filter)),
            Action::Input(key) => self.type_key(key),
            Action::Do(Command::SortNext) => {
                let i = COLUMNS
                    .iter()
                    .position(|(c, _, _)| *c == self.sort.0)
                    .unwrap_or(0);
                self.sort = (COLUMNS[(i + 1) % COLUMNS.len()].0, self.sort.1);
                self.rebuild_view();
            }
            Action::Do(Command::SortReverse) => {
                self.sort.1 = !self.sort.1;
                self.rebuild_view();
            }
            Action::Do(Command::Mark) => self.toggle_mark(out),
            Action::Do(Command::NextFailure) => self.next_failure(true, out),
            Action::Do(Command::Branch) => self.fork_link(out),
            Action::Do(Command::PrevFailure) => self.next_failure(false, out),
            Action::Do(Command::Open) => {
                if let Some(r) = self.selected_run() {
                    match &r.header {
                        Err(e) => {
                            out.push(Request::Say(format!("cannot open: {}", one_line(e, 200))))
                        }
                        Ok(_) => out.push(Request::Start(Work::OpenRun(r.path.clone()))),
                    }
                }
            }
            Action::Do(Command::ToggleGroups) => {
                if self.groups == Groups::Hidden {
                    self.groups = Groups::Loading;
                    out.push(Request::Start(Work::Job(Box::new(GroupsJob::new(
                        self.roots.clone(),
                    )))));
                } else {
                    self.groups = Groups::Hidden;
                }
                self.selection.settle(self.view.len(), self.page());
            }
            Action::Do(Command::Compare) => {
                let paths = self.marked_paths();
                if (2..=4).contains(&paths.len()) {
                    out.push(Request::Start(Work::Compare(paths)));
                } else {
                    out.push(Request::Say(format!(
                        "mark 2 to 4 runs with m first ({} marked)",
                        paths.len()
                    )));
                }
            }
            Action::Do(Command::Back) if self.groups != Groups::Hidden => {
                self.groups = Groups::Hidden;
                self.selection.settle(self.view.len(), self.page());
            }
            Action::Recounted(_, totals) => self.recounted(totals),
            Action::GroupsReady(_, answer) => {
                if self.groups == Groups::Loading {
                    self.groups = match answer {
                        Ok(rows) => {
                            let text =
                                cosmos_engine::metrics::table::render(rows, GroupBy::Config, false);
                            self.group_lines =
                                cosmos_trajectory::sanitize::lines(&text, 500, 4_000);
                            self.group_columns = self
                                .group_lines
                                .first()
                                .map_or_else(Vec::new, |header| column_starts(header));
                            self.group_table_lines = rows.len() + 1;
                            self.groups_x = 0;
                            Groups::Ready(rows.clone())
                        }
                        Err(why) => Groups::Failed(why.clone()),
                    };
                }
            }
            Action::Do(Command::ScrollRight) if self.groups != Groups::Hidden => {
                // One column at a time; the last one stays.
                let last = self.group_columns.len().saturating_sub(2);
                self.groups_x = (self.groups_x + 1).min(last);
            }
            Action::Do(Command::ScrollLeft) if self.groups != Groups::Hidden => {
                self.groups_x = self.groups_x.saturating_sub(1);
            }
            Action::Resize(_, h) => {
                self.height = h.saturating_sub(1);
                self.selection.settle(self.view.len(), self.page());
            }
            Action::Mouse(m) => match m.kind {
                MouseEventKind::ScrollUp => self.move_by(-3),
                MouseEventKind::ScrollDown => self.move_by(3),
                // Rows start under the border and the header.
                MouseEventKind::Down(MouseButton::Left) if m.row >= 2 => {
                    if let Some(i) = self.selection.row_at((m.row - 2) as usize, self.view.len()) {
                        self.selection.select(i, self.view.len(), self.page());
                    }
                }
                _ => {}
            },
            Action::Written(path) => self.written(path),
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn status(&self) -> Option<String> {
        let roots: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        let (col, desc) = self.sort;
        let sort = COLUMNS
            .iter()
            .find(|(c, _, _)| *c == col)
            .map_or("", |(_, n, _)| n);
        let stale = self.runs.iter().filter(|r| is_stale(r)).count();
        let recounting = if stale > 0 {
            format!("  … {stale} written by an older version: recomputing")
        } else {
            String::new()
        };
        // The counts first: a long path is what gets cut.
        Some(format!(
            "{} of {} runs{recounting}  sort {sort} {}{}  {}",
            self.view.len(),
            self.runs.len(),
            if desc { "↓" } else { "↑" },
            if self.filter.is_empty() {
                String::new()
            } else {
                format!("  filter \"{}\"", one_line(&self.filter, 30))
            },
            roots.join(" "),
        ))
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let (table_area, groups_area) = match self.groups {
            Groups::Hidden => (area, None),
            _ => {
                let [a, b] =
                    Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)])
                        .areas(area);
                (a, Some(b))
            }
        };
        self.draw_runs(frame, table_area, theme);
        if let Some(area) = groups_area {
            self.draw_groups(frame, area, theme);
        }
    }
}

impl Browser {
    /// The runs' table, its columns fitted to the width (those left out said in the title),
    /// or what to do when there are none.
    fn draw_runs(&self, frame: &mut Frame, table_area: Rect, theme: &Theme) {
        let shown = fitting_columns(table_area.width.saturating_sub(2), &self.content);
        // Columns left out for the width are said, never dropped in silence.
        let hidden = COLUMNS
            .iter()
            .filter(|(c, _, _)| *c != Column::Label || self.content.label > 0)
            .count()
            .saturating_sub(shown.len());
        let hidden = match hidden {
            _ if self.runs.is_empty() => String::new(),
            0 => String::new(),
            n => format!("{n} columns hidden (wider shows them) · "),
        };
        let title = if let Some(prompt) = &self.prompt {
            format!(
                " Runs · filter (words): {} · Enter keeps · Esc clears ",
                prompt.shown(40)
            )
        } else if table_area.width >= 90 {
            format!(
                " Runs · {hidden}Enter open · m mark · c compare · / filter · s sort · g groups · ? help "
            )
        } else {
            format!(" Runs · {hidden}Enter open · ? help ")
        };
        let block = Block::bordered()
            .border_style(theme.border())
            .title(Line::styled(title, theme.title()));
        if self.runs.is_empty() {
            let msg = vec![
                Line::styled("No runs here.", theme.title()),
                Line::raw(""),
                Line::raw(format!(
                    "No cosmos runs (*.jsonl), ATIF or Inspect logs (*.json, *.eval) under {}.",
                    self.roots
                        .iter()
                        .map(|r| r.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                Line::raw(
                    "Record one with `cosmos run …`, bring another program's with `cosmos import \
                     FILE`, or open a folder with `cosmos replay PATH`.",
                ),
            ];
            frame.render_widget(
                Paragraph::new(msg).wrap(Wrap { trim: false }).block(block),
                table_area,
            );
        } else {
            let header = Row::new(shown.iter().map(|&(i, width)| {
                let (c, name, _) = COLUMNS[i];
                let arrow = if c == self.sort.0 {
                    if self.sort.1 { "↓" } else { "↑" }
                } else {
                    ""
                };
                // A heading cut to its column says so ("world m…"), never reads as another.
                Cell::from(one_line(&format!("{name}{arrow}"), width as usize))
            }))
            .style(theme.title());
            let inner_h = table_area.height.saturating_sub(3) as usize;
            let rows = self
                .view
                .iter()
                .enumerate()
                .skip(self.selection.scroll.offset)
                .take(inner_h)
                .map(|(pos, &i)| {
                    let marked = self.marked.contains(&i);
                    let mut all = cells(&self.runs[i], &self.labels[i], marked, theme, &shown);
                    let mut row = Row::new(shown.iter().map(|&(c, _)| std::mem::take(&mut all[c])));
                    if pos == self.selection.selected {
                        row = row.style(theme.selected());
                    }
                    row
                });
            let widths: Vec<Constraint> =
                shown.iter().map(|&(_, w)| Constraint::Length(w)).collect();
            frame.render_widget(
                Table::new(rows, widths)
                    .header(header)
                    .block(block)
                    .column_spacing(1),
                table_area,
            );
        }
    }

    /// The group table under the runs, scrolled sideways, or why it is not there yet.
    fn draw_groups(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let block = Block::bordered()
            .border_style(theme.border())
            .title(Line::styled(
                " Groups (config) · ←/→ scroll sideways ",
                theme.title(),
            ));
        let width = block.inner(area).width as usize;
        let lines: Vec<Line> = match &self.groups {
            // A line wider than the pane ends in `…`: a number is never silently cut.
            Groups::Ready(_) => self
                .group_lines
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    if i < self.group_table_lines {
                        Line::raw(one_line(&self.group_line_shifted(l), width))
                    } else {
                        Line::raw(one_line(l, width))
                    }
                })
                .collect(),
            Groups::Failed(why) => vec![Line::styled(
                one_line(&format!("could not compute the groups: {why}"), width),
                theme.error(),
            )],
            _ => vec![Line::raw("computing…")],
        };
        frame.render_widget(Paragraph::new(lines).block(block), area);
    }

    /// A line of the group table with its label column kept and `groups_x` columns after it
    /// scrolled out of view.
    fn group_line_shifted(&self, line: &str) -> String {
        let (Some(&second), Some(&from)) = (
            self.group_columns.get(1),
            self.group_columns.get(1 + self.groups_x),
        ) else {
            return line.to_string();
        };
        let chars: Vec<char> = line.chars().collect();
        let label: String = chars.iter().take(second).collect();
        let rest: String = chars.iter().skip(from).collect();
        format!("{label}{rest}")
    }
}

/// Where each column of an aligned text table starts, read from its header line: a column
/// follows two spaces or more.
fn column_starts(header: &str) -> Vec<usize> {
    let chars: Vec<char> = header.chars().collect();
    let mut starts = vec![0];
    for i in 2..chars.len() {
        if chars[i] != ' ' && chars[i - 1] == ' ' && chars[i - 2] == ' ' {
            starts.push(i);
        }
    }
    starts
}

fn cells<'a>(
    r: &RunSummary,
    label: &str,
    marked: bool,
    theme: &Theme,
    shown: &[(usize, u16)],
) -> Vec<Cell<'a>> {
    let width = |col: usize| {
        shown
            .iter()
            .find(|(c, _)| *c == col)
            .map_or(0, |(_, w)| *w as usize)
    };
    // Totals of an older metrics version are never shown as current: "…" until recounted.
    let stale = is_stale(r);
    let t = r.finished.as_ref().map(|f| &f.totals).filter(|_| !stale);
    let none = if stale { "…" } else { "—" };
    let (task, agent, wm, planner, started) = match &r.header {
        Ok(h) => (
            h.task.id.clone(),
            h.agent_label(),
            h.world_model_label(),
            h.planner_label(),
            h.started_shown("%Y-%m-%d %H:%M"),
        ),
        Err(e) => (
            r.path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default(),
            "?".into(),
            String::new(),
            e.clone(),
            String::new(),
        ),
    };
    let status_style = match r.status_label() {
        _ if r.clean() => theme.good(),
        "incomplete" => theme.dim(),
        _ => theme.error(),
    };
    let task_cell = if marked {
        Cell::from(Line::from(vec![
            Span::styled("● ", theme.mark()),
            Span::raw(one_line(&task, width(0).saturating_sub(2))),
        ]))
    } else {
        Cell::from(one_line(&task, width(0)))
    };
    let status = if stale {
        format!("{} …", r.status_label())
    } else {
        r.outcome()
    };
    vec![
        task_cell,
        Cell::from(one_line(label, width(1))),
        // A cut agent says so ("external: mcp-pyth…"), never reads as another.
        Cell::from(one_line(&agent, width(2))),
        Cell::from(one_line(&wm, width(3))),
        Cell::from(one_line(&planner, width(4))),
        Cell::from(Span::styled(one_line(&status, width(5)), status_style)),
        Cell::from(match own_calls(r).filter(|_| !stale) {
            // A proxy session's calls the world model answered: counted apart, never hidden.
            Some(t) if t.simulated_answers > 0 => {
                format!("{}+{}◆", t.tool_calls, t.simulated_answers)
            }
            Some(t) => t.tool_calls.to_string(),
            None => none.into(),
        }),
        Cell::from(match own_calls(r).filter(|_| !stale) {
            Some(t) => success(t).map_or("—".into(), |s| figure::percent(s, 0)),
            None => none.into(),
        }),
        Cell::from(match t {
            None => none.to_string(),
            Some(t) => t.fidelity.map_or("—".into(), |v| figure::fraction(v, 2)),
        }),
        Cell::from(match t {
            Some(_) if r.header.as_ref().is_ok_and(|h| !h.recorded(Source::TOKENS)) => "—".into(),
            Some(t) => t.tokens.to_string(),
            None => none.into(),
        }),
        Cell::from(match t {
            // An imported run whose source recorded no times has no wall time to show.
            Some(_) if r.header.as_ref().is_ok_and(|h| !h.recorded(Source::TIMES)) => "—".into(),
            Some(t) => format!("{:.1}", t.wall_ms as f64 / 1000.0),
            None => none.into(),
        }),
        Cell::from(started),
    ]
}

/// The run's `run_finished` totals were written by another metrics version than this one's
/// (a wm-eval file's totals are no metrics, and are never recounted).
pub fn is_stale(r: &RunSummary) -> bool {
    let Ok(header) = &r.header else { return false };
    header.agent.kind != AgentKind::WmEval
        && r.finished
            .as_ref()
            .is_some_and(|f| f.totals.metrics_version != METRICS_VERSION)
}

fn success(t: &cosmos_trajectory::event::Totals) -> Option<f64> {
    (t.tool_calls > 0).then(|| 1.0 - t.tool_errors as f64 / t.tool_calls as f64)
}

/// The totals a row's calls and success are read from: none for a wm-eval file, which makes no
/// call of its own (its copies of other runs' calls were counted by some versions and not by
/// others, so two files over the same calls read `52 100%` and `0 —`): every wm-eval row
/// shows `—` for both, by this one rule.
fn own_calls(r: &RunSummary) -> Option<&cosmos_trajectory::event::Totals> {
    let wm_eval = r
        .header
        .as_ref()
        .is_ok_and(|h| h.agent.kind == AgentKind::WmEval);
    r.finished.as_ref().map(|f| &f.totals).filter(|_| !wm_eval)
}

/// The original a listed run was forked from, by run id.
fn fork_of(r: &RunSummary) -> Option<&str> {
    r.header
        .as_ref()
        .ok()?
        .fork_of
        .as_ref()
        .map(|f| f.run_id.as_str())
}

/// Marks forks and their originals in the label column: a fork's label starts `⑂@N` (the
/// step it was forked at); a listed original's ends `⑂×K` (its listed forks).
fn mark_forks(runs: &[RunSummary], labels: &mut [String]) {
    let mut forks: std::collections::HashMap<&str, usize> = Default::default();
    for r in runs {
        if let Some(of) = fork_of(r) {
            *forks.entry(of).or_default() += 1;
        }
    }
    for (r, label) in runs.iter().zip(labels.iter_mut()) {
        let Ok(h) = &r.header else { continue };
        if let Some(of) = &h.fork_of {
            *label = format!("⑂@{} {label}", of.step).trim_end().to_string();
        }
        if let Some(n) = forks.get(h.run_id.as_str()) {
            *label = format!("{label} ⑂×{n}").trim_start().to_string();
        }
    }
}

/// A run's label column: the label its header carries (a sweep's configuration), else the
/// folder it lies in below the root it was listed from (empty at the root itself).
fn label(r: &RunSummary, roots: &[PathBuf]) -> String {
    if let Some(label) = r.header.as_ref().ok().and_then(|h| h.label.clone()) {
        return label;
    }
    let Some(dir) = r.path.parent() else {
        return String::new();
    };
    roots
        .iter()
        .find_map(|root| dir.strip_prefix(root).ok())
        .map(|rel| rel.display().to_string())
        .unwrap_or_default()
}

/// A run's searchable text, lower-cased: path, label, task, agent, world model, planner,
/// request, outcome.
fn haystack(r: &RunSummary, label: &str) -> String {
    let mut s = r.path.display().to_string();
    s.push(' ');
    s.push_str(label);
    if let Ok(h) = &r.header {
        s.push_str(&format!(
            " {} {} {} {} {}",
            h.task.id,
            h.agent_label(),
            h.world_model_label(),
            h.planner.model,
            h.task.request
        ));
    }
    s.push(' ');
    s.push_str(&r.outcome());
    s.to_lowercase()
}

fn compare(a: &RunSummary, b: &RunSummary, col: Column) -> Ordering {
    let ta = a.finished.as_ref().map(|f| &f.totals);
    let tb = b.finished.as_ref().map(|f| &f.totals);
    let h = |r: &RunSummary, f: fn(&cosmos_trajectory::event::Header) -> String| {
        r.header.as_ref().map(f).unwrap_or_default()
    };
    let num = |x: Option<f64>, y: Option<f64>| {
        x.unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&y.unwrap_or(f64::NEG_INFINITY))
    };
    let o = match col {
        Column::Task => h(a, |h| h.task.id.clone()).cmp(&h(b, |h| h.task.id.clone())),
        Column::Label => h(a, |h| h.label.clone().unwrap_or_default())
            .cmp(&h(b, |h| h.label.clone().unwrap_or_default())),
        Column::Agent => h(a, |h| h.agent_label()).cmp(&h(b, |h| h.agent_label())),
        Column::WorldModel => h(a, |h| h.world_model_label()).cmp(&h(b, |h| h.world_model_label())),
        Column::Planner => h(a, |h| h.planner_label()).cmp(&h(b, |h| h.planner_label())),
        Column::Status => a.outcome().cmp(&b.outcome()),
        Column::Calls => num(
            own_calls(a).map(|t| t.tool_calls as f64),
            own_calls(b).map(|t| t.tool_calls as f64),
        ),
        Column::Success => num(
            own_calls(a).and_then(success),
            own_calls(b).and_then(success),
        ),
        Column::Fidelity => num(ta.and_then(|t| t.fidelity), tb.and_then(|t| t.fidelity)),
        Column::Tokens => num(ta.map(|t| t.tokens as f64), tb.map(|t| t.tokens as f64)),
        Column::Time => num(ta.map(|t| t.wall_ms as f64), tb.map(|t| t.wall_ms as f64)),
        Column::Started => h(a, |h| h.started_shown("%+")).cmp(&h(b, |h| h.started_shown("%+"))),
    };
    o.then_with(|| a.path.cmp(&b.path))
}
