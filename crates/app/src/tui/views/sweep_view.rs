//! The sweep's matrix (`cosmos sweep` without `--no-tui`): one row per task (per task and
//! repeat when a spec repeats), one column per configuration, each cell's state and outcome
//! (real calls, failed calls, fidelity) updating live from the sweep's [`SweepNews`]. Enter
//! opens a cell's run: a finished one from its file, a running one from the events this view
//! has seen, followed as it grows.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::Sender;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table};

use crate::tui::action::Action;
use crate::tui::feed::SweepNews;
use crate::tui::keymap::{Command, Mode};
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View, Work};
use crate::tui::views::run_view::RunView;
use crate::tui::widgets::scroll::Selection;
use cosmos_engine::metrics::run::RunAccumulator;
use cosmos_trajectory::event::{Event, Header, RunStatus, Totals};
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize::one_line;

/// A cell's state as the matrix shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum CellState {
    /// Not run, not to be run by this process (yet).
    Missing,
    /// Waiting for a free job.
    Queued,
    /// Running; its totals so far.
    Running(Totals),
    /// Its servers would not start; tried again.
    Retrying(String),
    /// Finished (completed or failed: an agent's failure is a result), with its totals.
    Done(RunStatus, Totals),
    /// A file without a usable end (torn, interrupted): set aside and run again next time.
    Incomplete(String),
    /// Could not run at all (after its tries), and why.
    CouldNotRun(String),
    /// Another process runs it (what its claim says).
    Elsewhere(String),
}

impl CellState {
    /// The words and mark a cell shows: `✓ 4 calls ✗1 · 0.86`.
    fn label(&self) -> (String, Tone) {
        let figures = |t: &Totals| {
            let mut s = format!(
                "{} call{}",
                t.tool_calls,
                if t.tool_calls == 1 { "" } else { "s" }
            );
            let marks = t.marks();
            if !marks.is_empty() {
                s.push(' ');
                s.push_str(&marks);
            }
            if let Some(f) = t.fidelity {
                s.push_str(&format!(
                    " fid {}",
                    cosmos_engine::metrics::figure::fraction(f, 2)
                ));
            }
            s
        };
        match self {
            CellState::Missing => ("·".into(), Tone::Dim),
            CellState::Queued => ("queued".into(), Tone::Dim),
            CellState::Running(t) => (format!("▶ {}", figures(t)), Tone::Live),
            CellState::Retrying(_) => ("↻ retrying".into(), Tone::Bad),
            CellState::Done(status, t) if t.clean(*status) => {
                (format!("✓ {}", figures(t)), Tone::Good)
            }
            // Marked and coloured by the one rule ([`Totals::clean`]), as the browser does.
            CellState::Done(RunStatus::Completed, t) => (format!("✗ {}", figures(t)), Tone::Bad),
            CellState::Done(status, t) => {
                (format!("✗ {} {}", status.as_str(), figures(t)), Tone::Bad)
            }
            CellState::Incomplete(why) => (format!("… {why}"), Tone::Bad),
            CellState::CouldNotRun(_) => ("! could not run".into(), Tone::Bad),
            CellState::Elsewhere(_) => ("⋯ another process".into(), Tone::Dim),
        }
    }

    /// True for a cell with a run file to open.
    fn has_file(&self) -> bool {
        matches!(self, CellState::Done(..) | CellState::Incomplete(_))
    }

    /// True for a cell whose outcome is a failure of any kind (for `f`).
    fn failed(&self) -> bool {
        match self {
            CellState::Done(status, t) => !t.clean(*status),
            CellState::Incomplete(_) | CellState::CouldNotRun(_) => true,
            CellState::Retrying(_) => true,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tone {
    Dim,
    Live,
    Good,
    Bad,
}

/// One cell of the grid.
#[derive(Debug, Clone)]
pub struct GridCell {
    /// The cell's id (derived from its content by the sweep).
    pub id: String,
    /// Its task.
    pub task: String,
    /// Its configuration.
    pub config: String,
    /// Its repeat (1-based).
    pub repeat: usize,
    /// Its run file.
    pub path: PathBuf,
    /// Its state.
    pub state: CellState,
}

/// A running cell's events so far: its metrics, and what a run view opened on it starts from.
struct LiveCell {
    header: Header,
    events: Vec<Event>,
    metrics: RunAccumulator,
    /// Events arrived since its state was last refreshed.
    dirty: bool,
}

impl LiveCell {
    fn totals(&self) -> Totals {
        self.metrics.metrics().totals(self.events.len() as u64)
    }
}

impl std::fmt::Debug for LiveCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveCell")
            .field("events", &self.events.len())
            .finish_non_exhaustive()
    }
}

/// State of the matrix view.
#[derive(Debug)]
pub struct SweepView {
    title: String,
    rows: Vec<String>,
    columns: Vec<String>,
    cells: Vec<GridCell>,
    /// `grid[row][column]` is a cell's index.
    grid: Vec<Vec<Option<usize>>>,
    selection: Selection,
    column: usize,
    live: HashMap<usize, LiveCell>,
    progress: String,
    /// The sweep's latest remark.
    note: Option<String>,
    over: bool,
    stop: Option<Sender<()>>,
    stopping: bool,
    area: Rect,
}

impl SweepView {
    /// A matrix over `cells` (in spec order: each task's configurations, then repeats).
    /// `stop` asks the sweep to stop; `None` when it is not this process's to stop.
    pub fn new(title: String, cells: Vec<GridCell>, stop: Option<Sender<()>>, area: Rect) -> Self {
        let repeats = cells.iter().map(|c| c.repeat).max().unwrap_or(1);
        let mut rows: Vec<(String, usize)> = Vec::new();
        let mut columns: Vec<String> = Vec::new();
        for c in &cells {
            if !rows.iter().any(|(t, r)| *t == c.task && *r == c.repeat) {
                rows.push((c.task.clone(), c.repeat));
            }
            if !columns.contains(&c.config) {
                columns.push(c.config.clone());
            }
        }
        // Rows by task, then repeat (spec order of tasks kept).
        let order: Vec<String> = {
            let mut seen = Vec::new();
            for (t, _) in &rows {
                if !seen.contains(t) {
                    seen.push(t.clone());
                }
            }
            seen
        };
        rows.sort_by_key(|(t, r)| (order.iter().position(|o| o == t), *r));
        let mut grid = vec![vec![None; columns.len()]; rows.len()];
        for (i, c) in cells.iter().enumerate() {
            let row = rows
                .iter()
                .position(|(t, r)| *t == c.task && *r == c.repeat);
            let col = columns.iter().position(|n| *n == c.config);
            if let (Some(row), Some(col)) = (row, col) {
                grid[row][col] = Some(i);
            }
        }
        let rows = rows
            .into_iter()
            .map(|(t, r)| {
                if repeats > 1 {
                    format!("{t} · r{r}")
                } else {
                    t
                }
            })
            .collect();
        Self {
            title,
            rows,
            columns,
            cells,
            grid,
            selection: Selection::default(),
            column: 0,
            live: HashMap::new(),
            progress: String::new(),
            note: None,
            over: false,
            stop,
            stopping: false,
            area,
        }
    }

    /// The cells, in the sweep's order.
    pub fn cells(&self) -> &[GridCell] {
        &self.cells
    }

    /// The selected cell, if the grid has one there.
    pub fn selected(&self) -> Option<&GridCell> {
        self.selected_index().map(|i| &self.cells[i])
    }

    fn selected_index(&self) -> Option<usize> {
        self.grid
            .get(self.selection.selected)
            .and_then(|r| r.get(self.column))
            .copied()
            .flatten()
    }

    /// True while cells are still to run or running (and this process can stop them).
    pub fn is_running(&self) -> bool {
        self.stop.is_some() && !self.over
    }

    /// Applies what the sweep said.
    pub fn apply(&mut self, news: &SweepNews) {
        match news {
            SweepNews::Started { cell, header } => {
                if let Some(c) = self.cells.get_mut(*cell) {
                    c.state = CellState::Running(Totals::default());
                    self.live.insert(
                        *cell,
                        LiveCell {
                            metrics: RunAccumulator::new(header),
                            header: (**header).clone(),
                            events: Vec::new(),
                            dirty: false,
                        },
                    );
                }
            }
            SweepNews::Event { cell, event } => {
                if let Some(live) = self.live.get_mut(cell) {
                    live.metrics.push(event);
                    live.events.push((**event).clone());
                    live.dirty = true;
                }
            }
            SweepNews::Retrying { cell, reason } => {
                self.live.remove(cell);
                if let Some(c) = self.cells.get_mut(*cell) {
                    c.state = CellState::Retrying(reason.clone());
                }
            }
            SweepNews::Ended {
                cell,
                result,
                progress,
            } => {
                let live = self.live.remove(cell);
                if let Some(c) = self.cells.get_mut(*cell) {
                    c.state = match (result, live) {
                        (Ok(status), Some(live)) => CellState::Done(*status, live.totals()),
                        (Ok(status), None) => CellState::Done(*status, Totals::default()),
                        (Err(why), _) => CellState::CouldNotRun(why.clone()),
                    };
                }
                self.progress = progress.clone();
            }
            SweepNews::Skipped {
                cell,
                why,
                progress,
            } => {
                self.live.remove(cell);
                if let Some(c) = self.cells.get_mut(*cell) {
                    c.state = CellState::Elsewhere(why.clone());
                }
                self.progress = progress.clone();
            }
            SweepNews::Note(text) => self.note = Some(text.clone()),
            SweepNews::Over => {
                self.over = true;
                // Cells that never started stay as they are on disk: missing.
                for c in &mut self.cells {
                    if c.state == CellState::Queued {
                        c.state = CellState::Missing;
                    }
                }
                self.live.clear();
            }
        }
    }

    /// Marks every cell not done as queued (the sweep is about to run them).
    pub fn queue(&mut self, cells: impl IntoIterator<Item = usize>) {
        for i in cells {
            if let Some(c) = self.cells.get_mut(i) {
                c.state = CellState::Queued;
            }
        }
    }

    fn height(&self) -> usize {
        // Borders, header row, and the detail lines below the grid.
        self.area.height.saturating_sub(2 + 1 + DETAIL_LINES) as usize
    }

    fn open(&mut self, out: &mut Vec<Request>) {
        let Some(i) = self.selected_index() else {
            return;
        };
        let cell = &self.cells[i];
        if let Some(live) = self.live.get(&i) {
            let mut run = Run::new(cell.path.clone(), live.header.clone());
            for e in &live.events {
                run.push(e.clone());
            }
            let view = RunView::following_cell(run, self.area, i);
            out.push(Request::Push(Box::new(view)));
        } else if cell.state.has_file() {
            out.push(Request::Start(Work::OpenRun(cell.path.clone())));
        } else {
            out.push(Request::Say(format!(
                "{} × {} r{}: no run yet",
                one_line(&cell.task, 40),
                one_line(&cell.config, 30),
                cell.repeat
            )));
        }
    }

    /// Selects the next (or previous) cell that failed, in reading order, wrapping around.
    fn next_failure(&mut self, forward: bool, out: &mut Vec<Request>) {
        let width = self.columns.len().max(1);
        let n = self.rows.len() * width;
        let here = self.selection.selected * width + self.column;
        for step in 1..=n {
            let at = if forward {
                (here + step) % n
            } else {
                (here + n - step % n) % n
            };
            let (row, col) = (at / width, at % width);
            if let Some(Some(i)) = self.grid.get(row).and_then(|r| r.get(col))
                && self.cells[*i].state.failed()
            {
                self.selection.select(row, self.rows.len(), self.height());
                self.column = col;
                return;
            }
        }
        out.push(Request::Say("no cell has failed".into()));
    }

    fn counts(&self) -> String {
        let mut done = 0;
        let mut short = 0;
        let mut failed = 0;
        let mut running = 0;
        let mut queued = 0;
        let mut other = 0;
        for c in &self.cells {
            // Counted as the cells are marked ([`Totals::clean`]).
            match &c.state {
                CellState::Done(status, t) if t.clean(*status) => done += 1,
                CellState::Done(RunStatus::Completed, _) => short += 1,
                CellState::Done(..) => failed += 1,
                CellState::Running(_) | CellState::Retrying(_) => running += 1,
                CellState::Queued => queued += 1,
                _ => other += 1,
            }
        }
        let mut parts = vec![format!("{done} completed")];
        if short > 0 {
            parts.push(format!("{short} completed with marks"));
        }
        if failed > 0 {
            parts.push(format!("{failed} failed"));
        }
        if running > 0 {
            parts.push(format!("{running} running"));
        }
        if queued > 0 {
            parts.push(format!("{queued} queued"));
        }
        if other > 0 {
            parts.push(format!("{other} not run"));
        }
        parts.join(" · ")
    }

    fn detail(&self) -> Vec<String> {
        let Some(c) = self.selected() else {
            return vec!["(no cell here)".into()];
        };
        let mut first = format!("{} × {} r{} · cell {}", c.task, c.config, c.repeat, c.id);
        let what = match &c.state {
            CellState::Missing => "not run".to_string(),
            CellState::Queued => "queued".to_string(),
            CellState::Running(t) => format!("running · {}", totals_words(t)),
            CellState::Retrying(why) => format!("servers would not start, trying again: {why}"),
            CellState::Done(s, t) => format!("{} · {}", s.as_str(), totals_words(t)),
            CellState::Incomplete(why) => format!("{why}: set aside and run again next time"),
            CellState::CouldNotRun(why) => format!("could not run: {why}"),
            CellState::Elsewhere(why) => format!("left to another process: {why}"),
        };
        first.push_str(" · ");
        first.push_str(&what);
        vec![first, c.path.display().to_string()]
    }
}

/// Lines under the grid: the selected cell (two) and the totals.
const DETAIL_LINES: u16 = 3;

fn totals_words(t: &Totals) -> String {
    let mut s = format!("{} real calls", t.tool_calls);
    if t.tool_errors > 0 {
        s.push_str(&format!(", {} failed", t.tool_errors));
    }
    if let Some(f) = t.fidelity {
        s.push_str(&format!(
            " · fidelity {}",
            cosmos_engine::metrics::figure::fraction(f, 2)
        ));
    }
    s.push_str(&format!(
        " · {} LLM calls · {} tokens · {:.0} s",
        t.llm_calls,
        t.tokens,
        t.wall_ms as f64 / 1000.0
    ));
    s
}

impl View for SweepView {
    fn mode(&self) -> Mode {
        Mode::Sweep
    }

    fn subscribes(&self, feed: &Action) -> bool {
        matches!(feed, Action::Sweep(_))
    }

    fn running(&self) -> Option<&'static str> {
        self.is_running().then_some("sweep")
    }

    fn settle(&mut self) {
        for (i, live) in &mut self.live {
            if live.dirty {
                live.dirty = false;
                if let Some(c) = self.cells.get_mut(*i) {
                    c.state = CellState::Running(live.totals());
                }
            }
        }
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        let (rows, height) = (self.rows.len(), self.height());
        match action {
            Action::Sweep(news) => self.apply(news),
            Action::Do(Command::Up) => self.selection.by(-1, rows, height),
            Action::Do(Command::Down) => self.selection.by(1, rows, height),
            Action::Do(Command::PageUp) => self.selection.by(-(height as isize), rows, height),
            Action::Do(Command::PageDown) => self.selection.by(height as isize, rows, height),
            Action::Do(Command::Top) => self.selection.select(0, rows, height),
            Action::Do(Command::Bottom) => self.selection.select(rows, rows, height),
            Action::Do(Command::StepBack) => self.column = self.column.saturating_sub(1),
            Action::Do(Command::StepForward) => {
                self.column = (self.column + 1).min(self.columns.len().saturating_sub(1))
            }
            Action::Do(Command::NextFailure) => self.next_failure(true, out),
            Action::Do(Command::PrevFailure) => self.next_failure(false, out),
            Action::Do(Command::Open) => self.open(out),
            Action::Do(Command::StopRun) => match &self.stop {
                Some(stop) if self.is_running() => {
                    let _ = stop.send(());
                    self.stopping = true;
                    out.push(Request::Say(
                        "stopping the sweep: running cells end as interrupted (set aside, run \
                         again next time)"
                            .into(),
                    ));
                }
                _ => out.push(Request::Say("the sweep is not running".into())),
            },
            Action::Resize(w, h) => {
                self.area = Rect::new(0, 0, *w, h.saturating_sub(1));
                self.selection.settle(rows, self.height());
            }
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let [grid_area, detail_area] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(DETAIL_LINES)]).areas(area);
        self.draw_grid(frame, grid_area, theme);
        self.draw_detail(frame, detail_area, theme);
    }

    fn status(&self) -> Option<String> {
        Some(if self.is_running() {
            "sweep · Enter opens a cell's run (live while it runs) · f next failure · x stops"
                .into()
        } else {
            "sweep · Enter opens a cell's run · f next failure · q quits".into()
        })
    }
}

impl SweepView {
    /// The grid: a row per task, as many configuration columns as fit (the selected one among
    /// them), each cell its state.
    fn draw_grid(&self, frame: &mut Frame, grid_area: Rect, theme: &Theme) {
        let label_width = self
            .rows
            .iter()
            .map(|r| unicode_width::UnicodeWidthStr::width(r.as_str()))
            .max()
            .unwrap_or(4)
            .clamp(4, 30) as u16;
        // Each configuration column as wide as its longest label (within reason); as many
        // columns as fit, the selected one among them.
        let width_of = |t: &str| unicode_width::UnicodeWidthStr::width(t);
        let column_width = self
            .columns
            .iter()
            .map(|c| width_of(c))
            .chain(self.cells.iter().map(|c| width_of(&c.state.label().0)))
            .max()
            .unwrap_or(8)
            .clamp(10, 30) as u16;
        let room = grid_area.width.saturating_sub(2 + label_width + 1);
        let fit = ((room / (column_width + 1)) as usize).max(1);
        let first = self.column.saturating_sub(fit - 1);
        let shown: Vec<usize> = (first..self.columns.len()).take(fit).collect();
        let style = |tone: Tone| match tone {
            Tone::Dim => theme.dim(),
            Tone::Live => theme.touched(),
            Tone::Good => theme.good(),
            Tone::Bad => theme.error(),
        };
        let header = Row::new(
            std::iter::once(Cell::from(""))
                .chain(shown.iter().map(|&c| {
                    Cell::from(one_line(&self.columns[c], column_width as usize))
                        .style(theme.title())
                }))
                .collect::<Vec<_>>(),
        );
        let height = grid_area.height.saturating_sub(3) as usize;
        let offset = self.selection.scroll.offset;
        let body = self
            .grid
            .iter()
            .enumerate()
            .skip(offset)
            .take(height)
            .map(|(r, cols)| {
                let mut cells = vec![Cell::from(one_line(&self.rows[r], label_width as usize))];
                for &c in &shown {
                    let (text, tone) = cols[c]
                        .map(|i| self.cells[i].state.label())
                        .unwrap_or(("".into(), Tone::Dim));
                    let mut cell =
                        Cell::from(one_line(&text, column_width as usize)).style(style(tone));
                    if r == self.selection.selected && c == self.column {
                        cell = cell.style(theme.selected());
                    }
                    cells.push(cell);
                }
                Row::new(cells)
            });
        let widths = std::iter::once(Constraint::Length(label_width))
            .chain(shown.iter().map(|_| Constraint::Length(column_width)));
        let more = if shown.len() < self.columns.len() {
            format!(
                " · configurations {}–{}/{} ←→",
                first + 1,
                first + shown.len(),
                self.columns.len()
            )
        } else {
            String::new()
        };
        let title = format!(
            " Sweep {} · rows {}{} ",
            one_line(&self.title, 40),
            self.selection.scroll.position(self.rows.len(), height),
            more
        );
        let legend = " ✓ completed  ✗ failed or marked: ⊣ending ✗N failed calls ?N bad replies  ▶ running  ! could not run · fid fidelity ";
        frame.render_widget(
            Table::new(body, widths)
                .header(header)
                .column_spacing(1)
                .block(
                    Block::bordered()
                        .border_style(theme.focus_border())
                        .title(Line::styled(title, theme.title()))
                        .title_bottom(Line::styled(legend, theme.dim())),
                ),
            grid_area,
        );
    }

    /// Under the grid: the selected cell, then the counts and the sweep's state.
    fn draw_detail(&self, frame: &mut Frame, detail_area: Rect, theme: &Theme) {
        let width = detail_area.width as usize;
        let mut lines: Vec<Line> = self
            .detail()
            .iter()
            .map(|l| Line::raw(one_line(l, width)))
            .collect();
        let state = if self.stop.is_none() {
            // Not this process's sweep to run: it runs nothing here.
            "not running here".to_string()
        } else if self.stopping && !self.over {
            "stopping…".to_string()
        } else if self.over {
            "sweep over".to_string()
        } else if self.progress.is_empty() {
            "running".to_string()
        } else {
            self.progress.clone()
        };
        let state = match &self.note {
            Some(note) => format!("{state} · {note}"),
            None => state,
        };
        lines.push(Line::from(vec![Span::styled(
            one_line(&format!("{} · {state}", self.counts()), width),
            theme.dim(),
        )]));
        frame.render_widget(Paragraph::new(lines), detail_area);
    }
}
