//! The run view: tree, timeline, observation and metrics, all at the cursor's time.
//!
//! State and update live here; each pane's drawing is in its own file. Events are applied
//! to the run's indices as they come; `refresh` is the one place that brings derived view
//! state (tree rows, observation text, metrics, charts) in line, and it runs at most once
//! per frame (`settle`), so a burst of live events costs one refresh. `draw` only reads.

mod additions;
mod branch;
pub(crate) mod inspector;
pub(crate) mod metrics;
pub(crate) mod observation;
pub(crate) mod playback;
pub(crate) mod search;
pub(crate) mod timeline;
pub(crate) mod tree;

use std::sync::mpsc::Sender;

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType};

use self::additions::{Adding, NoteDraft};
use self::inspector::Inspector;
use self::metrics::SeriesBuilder;
use self::observation::ObservationView;
use self::playback::Playback;
use self::search::Search;
use self::tree::{Item, TreeView};
use crate::tui::action::{Action, LiveSource, RequestId};
use crate::tui::feed::SweepNews;
use crate::tui::jobs::find::FindJob;
use crate::tui::jobs::wire::ReadWireJob;
use crate::tui::keymap::{Command, Mode};
use crate::tui::overlays::confirm::ConfirmCall;
use crate::tui::overlays::picker::WorldModelPicker;
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View, Work};
use crate::tui::views::notes::NotesView;
use crate::tui::views::wire_view::WireView;
use crate::tui::widgets::prompt::Typed;
use cosmos_engine::metrics::run::{RunFacts, RunMetrics};
use cosmos_trajectory::event::{Event, EventBody};
use cosmos_trajectory::fold::{Cursor, TreeState};
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize::one_line;
use cosmos_trajectory::wire::wire_path;

/// The four panes, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// The search tree (or ReAct's steps).
    Tree,
    /// The event timeline.
    Timeline,
    /// Simulated beside real.
    Observation,
    /// Numbers and charts.
    Metrics,
}

const PANES: [Pane; 4] = [Pane::Tree, Pane::Timeline, Pane::Observation, Pane::Metrics];

/// Where each pane is on screen; the same function serves drawing and mouse clicks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaneAreas {
    /// Tree.
    pub tree: Rect,
    /// Timeline.
    pub timeline: Rect,
    /// Observation.
    pub observation: Rect,
    /// Metrics.
    pub metrics: Rect,
}

impl PaneAreas {
    /// Splits the run view's area.
    pub fn of(area: Rect) -> Self {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(area);
        let [tree, timeline] =
            Layout::vertical([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(left);
        let [observation, metrics] =
            Layout::vertical([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(right);
        Self {
            tree,
            timeline,
            observation,
            metrics,
        }
    }

    fn pane_at(&self, x: u16, y: u16) -> Option<Pane> {
        let p = Position { x, y };
        [
            (self.tree, Pane::Tree),
            (self.timeline, Pane::Timeline),
            (self.observation, Pane::Observation),
            (self.metrics, Pane::Metrics),
        ]
        .into_iter()
        .find(|(r, _)| r.contains(p))
        .map(|(_, pane)| pane)
    }
}

/// A live run's controls.
#[derive(Debug)]
pub struct Live {
    /// Asks the agent to stop.
    pub stop: Option<Sender<()>>,
    /// True while the cursor follows new events.
    pub following: bool,
    /// Why following the file stopped, once it has (the file shrank, was replaced or
    /// renamed): the view no longer says LIVE.
    pub lost: Option<String>,
    /// The sweep cell whose run this is, when a sweep feeds it (its news carries the events).
    pub cell: Option<usize>,
    /// Whose `LiveEvent`s are this run's.
    pub source: LiveSource,
}

/// State of the run view.
#[derive(Debug)]
pub struct RunView {
    /// The run.
    pub(crate) run: Run,
    /// Its metric facts, grown beside it.
    facts: RunFacts,
    cursor: Cursor,
    /// The focused pane.
    pub(crate) focus: Pane,
    /// The tree pane.
    pub(crate) tree: TreeView,
    /// The observation pane.
    pub(crate) observation: ObservationView,
    /// The timeline pane's rows.
    timeline: timeline::Rows,
    charts: SeriesBuilder,
    /// A growing run's own fold at its end, feeding the charts whatever the cursor does.
    chart_fold: Option<TreeState>,
    metrics: RunMetrics,
    /// Replay's clock.
    playback: Playback,
    /// Present for a live run.
    pub(crate) live: Option<Live>,
    /// The area of the whole view (set by resize; used for paging and mouse).
    pub(crate) area: Rect,
    /// Find in the run.
    pub(crate) search: Search,
    /// Derived state is behind the run or the cursor; `settle` brings it in line.
    stale: bool,
    /// Followed live events arrived since the last refresh: if the newest is a real call,
    /// its step (or plan node) is selected.
    follow_newest: Option<usize>,
    /// Where the view opened, said on the status line until the person acts.
    note: Option<&'static str>,
    /// A note being written (`A`): the prompt and what it is about.
    draft: Option<NoteDraft>,
    /// A probe or note on its way to the file.
    adding: Option<Adding>,
    /// The rest of the file while it is still being read (`Run::read_in_parts`).
    reading: Option<Reading>,
}

/// A run view opened before its file was read to the end.
#[derive(Debug)]
struct Reading {
    /// Bytes read, of the file's.
    read: u64,
    total: u64,
    /// The person has moved: the view stays where they are when the rest arrives, instead of
    /// opening as a whole run does (at the first failed call, or the end).
    touched: bool,
    /// Where they asked to go beyond what is read (`usize::MAX`: the end): the cursor goes
    /// there once that part is in.
    waiting_for: Option<usize>,
    /// The view opened at the end of what was read and nobody moved it: it follows the end as
    /// parts come in, when it is next drawn (parts that come between two frames cost nothing).
    following: bool,
}

impl RunView {
    /// The run shown.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// The focused pane.
    pub fn focus(&self) -> Pane {
        self.focus
    }

    /// The tree pane.
    pub fn tree(&self) -> &TreeView {
        &self.tree
    }

    /// The find in the run.
    pub fn search(&self) -> &Search {
        &self.search
    }

    /// True while the run is live (followed as it grows).
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// A view of a loaded run with the cursor at its end.
    pub fn new(run: Run, area: Rect) -> Self {
        // One fold to the end both places the cursor and fills the charts.
        let mut cursor = Cursor::new(&run);
        let mut charts = SeriesBuilder::default();
        cursor.advance_observing(&run, run.len(), |state| charts.observe(&run, state));
        let facts = RunFacts::of(&run);
        let mut view = Self::assembled(run, area, cursor, charts, facts);
        let end = view.run.len();
        view.seek(end);
        view
    }

    /// A view of `run` made from what folding it has given: a cursor, the charts and the
    /// facts of the whole run. Its tree opens the way to the run's last plan; nothing is
    /// drawn from it until it is refreshed.
    fn assembled(
        run: Run,
        area: Rect,
        cursor: Cursor,
        charts: SeriesBuilder,
        facts: RunFacts,
    ) -> Self {
        Self {
            tree: TreeView::new(&run),
            charts,
            chart_fold: None,
            facts,
            run,
            cursor,
            focus: Pane::Tree,
            observation: ObservationView::default(),
            timeline: timeline::Rows::default(),
            metrics: RunMetrics::default(),
            playback: Playback::default(),
            live: None,
            area,
            search: Search::default(),
            stale: false,
            follow_newest: None,
            note: None,
            draft: None,
            adding: None,
            reading: None,
        }
    }

    /// A view of a run as a person opens one to debug it: at its first failed real call, with
    /// that call's node selected and its simulation beside the real result, when it has one;
    /// at its end otherwise. The returned message says where it opened.
    pub fn opened(run: Run, area: Rect) -> Self {
        let mut view = Self::new(run, area);
        view.go_to_first_failure();
        view
    }

    /// Moves to the run's first failed real call, if it has one, saying so.
    fn go_to_first_failure(&mut self) {
        if let Some(event) = self.run.first_failed_call() {
            self.jump(Some(event + 1), "", &mut Vec::new());
            self.note = Some("opened at the first failed call · End goes to the end");
        }
    }

    /// A view of the first part of a finished run's file, the rest still being read (its parts
    /// come as `Action::RunRead` of the run's path): the first screen at once, keys working on
    /// what is read. Meanwhile the charts grow with every part, and a view left at the end of
    /// what is read follows it (the tree and the timeline fill in). Once the last part is in, a
    /// view the person has not moved opens as [`RunView::opened`] opens the whole run.
    pub fn reading(run: Run, area: Rect, read: u64, total: u64) -> Self {
        let mut view = Self::new(run, area);
        // The charts take in later parts as a live run's take in its events.
        view.chart_fold = Some(view.cursor.state().clone());
        view.go_to_first_failure();
        view.reading = Some(Reading {
            read,
            total,
            touched: false,
            waiting_for: None,
            following: view.position() == view.run.len(),
        });
        view
    }

    /// True while the rest of the file is still being read.
    pub fn is_reading(&self) -> bool {
        self.reading.is_some()
    }

    /// A part of the file read: its events added; the last one ends the reading.
    fn read_part(&mut self, part: cosmos_trajectory::run::Part, out: &mut Vec<Request>) {
        let Some(reading) = &mut self.reading else {
            return;
        };
        reading.read = part.read;
        let last = self.run.extend(part);
        self.facts.sync(&self.run);
        let (touched, waiting_for) = (reading.touched, reading.waiting_for);
        let to_end = waiting_for == Some(usize::MAX);
        if !last {
            match waiting_for {
                // The end as it is read.
                Some(usize::MAX) => self.seek(self.run.len()),
                Some(k) if k <= self.run.len() => {
                    if let Some(reading) = &mut self.reading {
                        reading.waiting_for = None;
                    }
                    self.jump(Some(k), "", out);
                }
                // A view that follows the end catches up when it is drawn (`refresh`).
                _ => self.stale = true,
            }
            return;
        }
        self.reading = None;
        if let Some(said) = problems_said(self.run.problems.len()) {
            out.push(Request::Say(said));
        }
        // The charts grew part by part. Their samples do not depend on the run's length, so
        // caught up to the end they are the ones opening the whole file draws.
        self.catch_up_charts();
        self.chart_fold = None;
        if touched && !to_end {
            match waiting_for {
                // Past the end of the file: as far as there is.
                Some(k) => self.jump(Some(k.min(self.run.len())), "", out),
                None => self.stale = true,
            }
            return;
        }
        // Untouched, it becomes what opening the whole file would have shown. Its cursor is at
        // the first failed call or follows the end, so at most the last part is left to fold:
        // only the tree is made again, over the whole run, and the view goes where `opened`
        // goes.
        let placeholder = Run::new(std::path::PathBuf::new(), self.run.header.clone());
        let cursor = std::mem::replace(&mut self.cursor, Cursor::new(&placeholder));
        let run = std::mem::replace(&mut self.run, placeholder);
        let charts = std::mem::take(&mut self.charts);
        let facts = std::mem::take(&mut self.facts);
        let (area, focus) = (self.area, self.focus);
        *self = Self::assembled(run, area, cursor, charts, facts);
        self.focus = focus;
        if to_end || self.run.first_failed_call().is_none() {
            let end = self.run.len();
            self.seek(end);
        } else {
            self.go_to_first_failure();
        }
    }

    /// Folds the events the charts have not taken in yet (a growing run's).
    fn catch_up_charts(&mut self) {
        if let Some(fold) = &mut self.chart_fold {
            while fold.applied() < self.run.len() {
                fold.apply(&self.run);
                self.charts.observe(&self.run, fold);
            }
        }
    }

    /// A view of a run that is still being written; events arrive by [`RunView::push`].
    pub fn live(run: Run, area: Rect, stop: Option<Sender<()>>) -> Self {
        let mut view = Self::new(run, area);
        view.chart_fold = Some(view.cursor.state().clone());
        view.live = Some(Live {
            stop,
            following: true,
            lost: None,
            cell: None,
            source: LiveSource::Followed,
        });
        view
    }

    /// A view of a fork the explorer started by request `id`, while it runs.
    pub fn fork(run: Run, area: Rect, stop: Sender<()>, id: RequestId) -> Self {
        let mut view = Self::live(run, area, Some(stop));
        if let Some(live) = &mut view.live {
            live.source = LiveSource::Fork(id);
        }
        view
    }

    /// A view that follows a file another process is still writing (no stop: the run is
    /// not ours).
    pub fn following(run: Run, area: Rect) -> Self {
        Self::live(run, area, None)
    }

    /// A view of a sweep cell's run while it runs: its later events come with the sweep's
    /// news.
    pub fn following_cell(run: Run, area: Rect, cell: usize) -> Self {
        let mut view = Self::following(run, area);
        if let Some(live) = &mut view.live {
            live.cell = Some(cell);
        }
        view
    }

    /// The cursor position (events applied).
    pub fn position(&self) -> usize {
        self.cursor.position()
    }

    /// The metrics at the cursor.
    pub fn metrics(&self) -> &RunMetrics {
        &self.metrics
    }

    /// True for a live run that has not finished yet.
    pub fn is_running(&self) -> bool {
        self.live.as_ref().is_some_and(|l| l.stop.is_some()) && !self.finished()
    }

    /// True once the run has recorded its end.
    pub fn finished(&self) -> bool {
        self.run.finish_at(self.run.len()).is_some()
    }

    /// A new event of a live run: applied to the run's indices at once; the views catch up
    /// at the next frame.
    pub fn push(&mut self, event: Event) {
        let at_end = self.position() == self.run.len();
        self.run.push(event);
        self.facts.sync(&self.run);
        let follow = self.live.as_ref().is_none_or(|l| l.following);
        if at_end && follow {
            // The tree grows where the agent works: open the way to the node this event
            // touched, without moving the person's selection.
            if let Some(slot) = self
                .run
                .briefs()
                .last()
                .and_then(|e| e.node())
                .and_then(|id| self.run.slot_of(id))
            {
                self.tree.open_ancestors(&self.run, slot);
            }
            let end = self.run.len();
            // Remember where following started since the last frame.
            self.follow_newest.get_or_insert(end - 1);
            self.cursor.seek(&self.run, end);
        }
        self.stale = true;
    }

    /// A probe appended to the run's file after it ended: added to the run; the cursor stays.
    pub fn add_probe(&mut self, event: Event) {
        self.run.push(event);
        self.stale = true;
    }

    fn seek(&mut self, k: usize) {
        self.cursor.seek(&self.run, k);
        self.refresh();
    }

    /// Brings every derived view in line with the run, the cursor and the selection.
    fn refresh(&mut self) {
        self.stale = false;
        // Left at the end of what is read, the view fills in as the reading goes. When the
        // charts are where the cursor is, its fold feeds them: one fold of the new events, not two.
        if self.reading.as_ref().is_some_and(|r| r.following) {
            match &mut self.chart_fold {
                Some(fold) if fold.applied() == self.cursor.position() => {
                    let (run, charts) = (&self.run, &mut self.charts);
                    self.cursor
                        .advance_observing(run, run.len(), |state| charts.observe(run, state));
                    fold.clone_from(self.cursor.state());
                }
                _ => self.cursor.seek(&self.run, self.run.len()),
            }
        }
        self.catch_up_charts();
        self.search.catch_up(&self.run);
        let state = self.cursor.state();
        let k = state.applied();
        let height = Self::inner_height(PaneAreas::of(self.area).tree);
        self.tree.refresh(&self.run, state);
        if let Some(since) = self.follow_newest.take()
            && let Some(step) = self
                .run
                .steps_at(k)
                .last()
                .filter(|s| s.event as usize >= since)
        {
            // A real call just happened: show it beside its simulation. A run without a
            // tree lists its steps; a plan's call selects its node.
            match step.node {
                None if self.run.nodes().is_empty() => self.tree.select_last(height),
                Some(slot) => self.tree.reveal(&self.run, state, slot),
                None => {}
            }
        }
        self.tree.scroll_to_selection(height);
        let timeline = PaneAreas::of(self.area).timeline;
        self.timeline.refresh(
            &self.run,
            k,
            Self::inner_height(timeline),
            timeline.width.saturating_sub(2) as usize,
        );
        self.observation
            .refresh(&self.run, &self.facts, state, self.tree.selected_item());
        self.metrics = self.facts.at(&self.run, k, state);
    }

    fn inner_height(r: Rect) -> usize {
        r.height.saturating_sub(2) as usize
    }

    fn size(&self) -> (u16, u16) {
        (self.area.width, self.area.height + 1)
    }

    fn update_command(&mut self, command: Command, cx: Context, out: &mut Vec<Request>) -> Handled {
        let k = self.position();
        let page = Self::inner_height(PaneAreas::of(self.area).tree).max(1) as isize;
        match command {
            Command::StepBack => self.step_to(k.saturating_sub(1)),
            Command::StepForward => self.step_to(k + 1),
            Command::Top => self.step_to(0),
            Command::Bottom => self.step_to(self.run.len()),
            Command::NextToolCall => self.jump(
                self.run.next_tool_call(k).map(|e| e + 1),
                "no later tool call",
                out,
            ),
            Command::PrevToolCall => self.jump(
                k.checked_sub(1)
                    .and_then(|c| self.run.prev_tool_call(c))
                    .map(|e| e + 1),
                "no earlier tool call",
                out,
            ),
            Command::NextFailure => self.jump(
                self.run.next_failure(k).map(|e| e + 1),
                "no later failure",
                out,
            ),
            Command::PrevFailure => self.jump(
                k.checked_sub(1)
                    .and_then(|c| self.run.prev_failure(c))
                    .map(|e| e + 1),
                "no earlier failure",
                out,
            ),
            Command::NextMatch => self.next_match(true, out),
            Command::PrevMatch => self.next_match(false, out),
            Command::PlayPause => self.play_pause(),
            Command::Faster => self.playback.faster(),
            Command::Slower => self.playback.slower(),
            Command::FocusNext | Command::FocusPrev => {
                let i = PANES.iter().position(|p| *p == self.focus).unwrap_or(0);
                let step = if command == Command::FocusNext {
                    1
                } else {
                    PANES.len() - 1
                };
                self.focus = PANES[(i + step) % PANES.len()];
            }
            Command::Up => self.move_selection(-1),
            Command::Down => self.move_selection(1),
            Command::PageUp => self.move_selection(-page),
            Command::PageDown => self.move_selection(page),
            Command::Open if self.focus == Pane::Timeline => self.inspect(out),
            Command::Inspect => self.inspect(out),
            Command::About => self.about(out),
            Command::Annotate => self.start_note(out),
            Command::Open => {
                self.tree.toggle(&self.run);
                self.refresh();
            }
            Command::ExpandAll => {
                self.tree.expand_all(&self.run);
                self.refresh();
            }
            Command::CollapseAll => {
                self.tree.collapse_all(&self.run);
                self.refresh();
            }
            Command::StopRun => match self.live.as_mut().and_then(|l| l.stop.take()) {
                Some(stop) if !self.finished() => {
                    let _ = stop.send(());
                    out.push(Request::Say(
                        "stop requested; the run ends as interrupted".into(),
                    ));
                }
                _ => out.push(Request::Say("no run is going".into())),
            },
            Command::Search => {
                self.search.prompt =
                    Some(crate::tui::widgets::prompt::Prompt::new(&self.search.query))
            }
            Command::Notes => {
                let notes = NotesView::new(&self.run, self.area);
                out.push(Request::Push(Box::new(notes)));
            }
            Command::Wire => out.push(Request::Start(Work::Job(Box::new(ReadWireJob::new(
                wire_path(&self.run.path),
            ))))),
            Command::Probe | Command::ProbeReal => {
                self.probe(command == Command::ProbeReal, cx, out)
            }
            Command::Branch => self.branch(cx, out),
            // Esc first ends a search in force; then it closes the view.
            Command::Back if self.search.active() => {
                self.search.clear();
                out.push(Request::Say("find cleared".into()));
            }
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    /// Opens the inspector: on the selected node (tree), else on the event at the cursor.
    fn inspect(&mut self, out: &mut Vec<Request>) {
        let size = self.size();
        let inspector = match (self.focus, self.tree.selected_item()) {
            (Pane::Tree, Some(Item::Node(slot))) => {
                Some(Inspector::node(&self.run, self.cursor.state(), slot, size))
            }
            (Pane::Tree, Some(Item::Step(i))) => self
                .run
                .steps()
                .get(i)
                .map(|s| self.event_inspector(s.event as usize, size)),
            _ => self
                .position()
                .checked_sub(1)
                .map(|i| self.event_inspector(i, size)),
        };
        match inspector {
            Some(i) => out.push(Request::Push(Box::new(i))),
            // Before the first event there is the run itself to look at.
            None => self.about(out),
        }
    }

    /// The inspector on event `i`: for a real call whose run kept its server's state, with the
    /// whole state before and after it.
    fn event_inspector(&self, i: usize, size: (u16, u16)) -> Inspector {
        let around = cosmos_engine::mcp::around_call(&self.run, i);
        Inspector::event(&self.run.event(i), around.as_ref(), size)
    }

    /// A background find answered: its hits are the search's, and the cursor goes to the
    /// first one after it, as a find in place does.
    fn found(
        &mut self,
        words: &[String],
        to: usize,
        hits: Result<Vec<u32>, String>,
        out: &mut Vec<Request>,
    ) {
        match hits {
            Ok(hits) => {
                if self.search.found(words, to, hits) {
                    self.search.catch_up(&self.run);
                    self.next_match(true, out);
                }
            }
            Err(why) => {
                self.search.clear();
                out.push(Request::Say(format!(
                    "find failed: {}",
                    one_line(&why, 200)
                )));
            }
        }
    }

    /// Opens the run's own story: its header, why the plan, its searches, its end.
    fn about(&mut self, out: &mut Vec<Request>) {
        // The ending the metrics pane shows: the metrics' one reading of the run at the cursor.
        let ending = self.metrics.ending;
        let about = Inspector::about(
            &self.run,
            self.cursor.state(),
            self.position(),
            ending,
            self.size(),
        );
        out.push(Request::Push(Box::new(about)));
    }

    /// `n`/`N`: the next hit of the search in force, else the selected node's next event.
    fn next_match(&mut self, forward: bool, out: &mut Vec<Request>) {
        let k = self.position();
        let at = k.checked_sub(1);
        if self.search.pending.is_some() {
            out.push(Request::Say("still finding…".into()));
            return;
        }
        if self.search.active() {
            match self.search.next(at, forward) {
                Some((event, _, wrapped)) => {
                    // The status line gives the hit's rank and the count.
                    self.jump(Some(event + 1), "", out);
                    if wrapped {
                        out.push(Request::Say("find wrapped around".into()));
                    }
                }
                None => out.push(Request::Say(format!(
                    "no event matches \"{}\"",
                    one_line(&self.search.query, 40)
                ))),
            }
            return;
        }
        let node = match self.tree.selected_item() {
            Some(Item::Node(slot)) => Some(self.run.nodes()[slot as usize].id),
            _ => None,
        };
        let Some(id) = node else {
            out.push(Request::Say("select a node first (or find with /)".into()));
            return;
        };
        let target = if forward {
            self.run.next_event_of_node(k, id)
        } else {
            at.and_then(|a| self.run.prev_event_of_node(a, id))
        };
        let none = if forward {
            "no later event of the selected node"
        } else {
            "no earlier event of the selected node"
        };
        self.jump(target.map(|e| e + 1), none, out);
    }

    fn type_find(&mut self, key: &crossterm::event::KeyEvent, out: &mut Vec<Request>) {
        let Some(prompt) = &mut self.search.prompt else {
            return;
        };
        match prompt.key(key) {
            Typed::Edited => {}
            Typed::Cancelled => self.search.prompt = None,
            Typed::Submitted(query) => {
                self.search.prompt = None;
                if query.trim().is_empty() {
                    self.search.clear();
                    return;
                }
                match self.search.set(&query, &self.run) {
                    // A big run is searched in the background; the cursor moves when it answers.
                    Some(range) => out.push(Request::Start(Work::Job(Box::new(FindJob::new(
                        self.run.path.clone(),
                        self.search.words.clone(),
                        range.end,
                    ))))),
                    // From the cursor on, as a pager searches.
                    None => self.next_match(true, out),
                }
            }
        }
    }

    fn step_to(&mut self, k: usize) {
        // A step past either end stays at the end.
        let k = k.min(self.run.len());
        if let Some(live) = &mut self.live {
            live.following = k >= self.run.len();
        }
        self.seek(k);
        // Follow the event's node in the tree, as a person stepping through expects, whichever
        // pane has the focus: the observation pane shows the selection, so it follows too.
        self.select_touched(k);
    }

    /// Selects what the event before cursor `k` is about, opening the way to it: its node (a
    /// real call's plan node), or the step of a run without a tree. The observation pane shows
    /// the selection, so it follows the cursor.
    fn select_touched(&mut self, k: usize) {
        let Some(i) = k.checked_sub(1).filter(|&i| i < self.run.len()) else {
            return;
        };
        let item = match self.run.brief(i).node().and_then(|id| self.run.slot_of(id)) {
            Some(slot) => {
                self.tree.open_ancestors(&self.run, slot);
                Item::Node(slot)
            }
            None if self.run.nodes().is_empty() => {
                let steps = self.run.steps();
                let at = steps.partition_point(|s| (s.event as usize) < i);
                match steps.get(at).filter(|s| s.event as usize == i) {
                    Some(_) => Item::Step(at),
                    None => return,
                }
            }
            None => return,
        };
        self.tree.reveal_item(&self.run, self.cursor.state(), item);
        self.refresh();
    }

    /// Moves the cursor to `target` and selects the node of the event there; says `none`
    /// when there is no target.
    fn jump(&mut self, target: Option<usize>, none: &str, out: &mut Vec<Request>) {
        match target {
            Some(k) => {
                self.step_to(k);
                self.select_touched(k);
            }
            None => out.push(Request::Say(none.to_string())),
        }
    }

    fn play_pause(&mut self) {
        if let Some(live) = &mut self.live {
            live.following = !live.following;
            if live.following {
                let end = self.run.len();
                self.seek(end);
            }
            return;
        }
        if self.playback.is_playing() {
            self.playback.pause();
        } else {
            if self.position() >= self.run.len() {
                self.seek(0);
            }
            self.playback.play();
        }
    }

    fn tick(&mut self) {
        let events = self.playback.tick();
        if events == 0 {
            return;
        }
        let next = (self.position() + events).min(self.run.len());
        self.seek(next);
        self.select_touched(next);
        if self.position() >= self.run.len() {
            self.playback.pause();
        }
    }

    fn move_selection(&mut self, delta: isize) {
        let height = Self::inner_height(PaneAreas::of(self.area).tree);
        match self.focus {
            Pane::Tree => {
                self.tree.move_by(delta, height);
                self.refresh();
            }
            Pane::Timeline => {
                let k = self
                    .position()
                    .saturating_add_signed(delta)
                    .min(self.run.len());
                self.step_to(k);
            }
            Pane::Observation => self.observation.scroll_by(delta),
            Pane::Metrics => {}
        }
    }

    fn mouse(&mut self, m: &MouseEvent) {
        let panes = PaneAreas::of(self.area);
        let Some(pane) = panes.pane_at(m.column, m.row) else {
            return;
        };
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                self.focus = pane;
                match pane {
                    Pane::Tree if m.row > panes.tree.y => {
                        self.tree.click((m.row - panes.tree.y - 1) as usize);
                        self.refresh();
                    }
                    Pane::Timeline if m.row > panes.timeline.y => {
                        let height = Self::inner_height(panes.timeline);
                        let row = (m.row - panes.timeline.y - 1) as usize;
                        if let Some(i) =
                            timeline::event_at(self.run.len(), self.position(), height, row)
                        {
                            self.step_to(i + 1);
                        }
                    }
                    _ => {}
                }
            }
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let delta = if m.kind == MouseEventKind::ScrollUp {
                    -3
                } else {
                    3
                };
                let before = self.focus;
                self.focus = pane;
                self.move_selection(delta);
                self.focus = before;
            }
            _ => {}
        }
    }
}

impl View for RunView {
    fn mode(&self) -> Mode {
        Mode::Run
    }

    fn typing(&self) -> bool {
        self.search.prompt.is_some() || self.draft.is_some()
    }

    fn animating(&self) -> bool {
        self.playback.is_playing()
    }

    fn settle(&mut self) {
        if self.stale {
            self.refresh();
        }
    }

    fn subscribes(&self, feed: &Action) -> bool {
        if let Action::RunRead(path, _) = feed {
            return self.reading.is_some() && *path == self.run.path;
        }
        let Some(live) = &self.live else {
            return false;
        };
        match feed {
            // A finished run takes no more news (a fork started from it has its own view).
            Action::LiveEvent(source, _) | Action::FollowLost(source, _) => {
                live.cell.is_none() && live.source == *source && !self.finished()
            }
            Action::Sweep(news) => match &**news {
                SweepNews::Event { cell, .. } => live.cell == Some(*cell) && !self.finished(),
                _ => false,
            },
            _ => false,
        }
    }

    fn running(&self) -> Option<&'static str> {
        self.is_running().then_some("run")
    }

    fn update(&mut self, action: &Action, cx: Context, out: &mut Vec<Request>) -> Handled {
        if let Some(reading) = &mut self.reading {
            // Seeking past what is read waits for that part; any other move is the person's.
            let read = self.run.len();
            match action {
                Action::Do(Command::Bottom) => reading.waiting_for = Some(usize::MAX),
                Action::JumpTo(event) if event + 1 > read => {
                    reading.touched = true;
                    reading.following = false;
                    reading.waiting_for = Some(event + 1);
                }
                Action::Do(_) | Action::Input(_) | Action::Mouse(_) | Action::JumpTo(_) => {
                    reading.touched = true;
                    reading.following = false;
                    reading.waiting_for = None;
                }
                _ => {}
            }
        }
        match action {
            Action::RunRead(_, part) => {
                if let Some(part) = part.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    self.read_part(part, out);
                }
                return Handled::Consumed;
            }
            Action::LiveEvent(_, e) => {
                self.push((**e).clone());
                return Handled::Consumed;
            }
            Action::Sweep(news) => {
                if let SweepNews::Event { event, .. } = &**news {
                    self.push((**event).clone());
                }
                return Handled::Consumed;
            }
            Action::Probe(node, world_model) => {
                self.start_probe(*node, world_model.as_ref(), cx, out);
                return Handled::Consumed;
            }
            Action::Fork(choice) => {
                self.start_fork(choice, cx, out);
                return Handled::Consumed;
            }
            Action::Probed(_, result) => {
                self.added(result, out);
                return Handled::Consumed;
            }
            Action::WireRead(_, read) => {
                match read {
                    Ok(log) => out.push(Request::Push(Box::new(WireView::new(
                        log.clone(),
                        (self.area.width, self.area.height + 1),
                    )))),
                    Err(why) => out.push(Request::Say(cosmos_trajectory::sanitize::one_line(
                        why, 200,
                    ))),
                }
                return Handled::Consumed;
            }
            Action::Found(_, _, words, to, hits) => {
                self.found(words, *to, hits.clone(), out);
                return Handled::Consumed;
            }
            _ => {}
        }
        if let Action::FollowLost(_, why) = action {
            if let Some(live) = self.live.as_mut() {
                live.lost = Some(why.clone());
            }
            out.push(Request::Say(format!(
                "following stopped: {}",
                cosmos_trajectory::sanitize::one_line(why, 160)
            )));
            return Handled::Consumed;
        }
        // What the person acts on must be what they see.
        self.settle();
        if matches!(action, Action::Do(_) | Action::Input(_) | Action::Mouse(_)) {
            self.note = None;
        }
        match action {
            Action::Do(command) => return self.update_command(*command, cx, out),
            Action::Input(key) if self.draft.is_some() => self.type_note(key, cx, out),
            Action::Input(key) => self.type_find(key, out),
            Action::Tick => self.tick(),
            Action::JumpTo(event) => {
                self.jump(Some(event + 1), "", out);
                // Where it was asked to open, which need not be a failure.
                self.note = Some("at the chosen event · End goes to the end");
            }
            Action::Mouse(m) => self.mouse(m),
            Action::Resize(w, h) => {
                self.area = Rect::new(0, 0, *w, h.saturating_sub(1));
                self.refresh();
            }
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn status(&self) -> Option<String> {
        let mode = match (&self.live, self.playback.is_playing()) {
            (Some(_), _) if self.finished() => {
                let status = self
                    .run
                    .status_at(self.run.len())
                    .map_or("?", |s| s.as_str());
                format!("finished ({status})")
            }
            (
                Some(Live {
                    lost: Some(why), ..
                }),
                _,
            ) => format!(
                "NOT FOLLOWED: {} · reopen with cosmos replay {}",
                cosmos_trajectory::sanitize::one_line(why, 80),
                cosmos_trajectory::sanitize::one_line(&self.run.path.display().to_string(), 60)
            ),
            (Some(l), _) if l.following => "LIVE".to_string(),
            (Some(_), _) => "LIVE (paused; Space follows)".to_string(),
            (None, _) => self.playback.label(),
        };
        let find = match (&self.search.prompt, &self.draft) {
            (_, Some(draft)) => {
                let on = match (draft.node, draft.event) {
                    (Some(n), _) => format!("#{n}"),
                    (_, Some(seq)) => format!("event {seq}"),
                    _ => "the run".to_string(),
                };
                format!(
                    "  note on {on} (Enter adds, Esc cancels): {}",
                    draft.prompt.shown(40)
                )
            }
            (Some(p), None) => format!("  find: {}", p.shown(30)),
            (None, None) if self.search.pending.is_some() => {
                format!("  finding \"{}\"…", one_line(&self.search.query, 20))
            }
            (None, None) if self.search.active() => {
                let at = self.position().checked_sub(1);
                let count = match at.and_then(|a| self.search.rank_of(a)) {
                    Some(rank) => format!("hit {rank}/{}", self.search.hits()),
                    None => format!("{} hit(s)", self.search.hits()),
                };
                format!(
                    "  find \"{}\": {count}, n/N",
                    one_line(&self.search.query, 20)
                )
            }
            (None, None) => String::new(),
        };
        let mut note = self.note.map_or(String::new(), |n| format!("  · {n}"));
        if let Some(reading) = &self.reading {
            let pct = (reading.read * 100).checked_div(reading.total).unwrap_or(0);
            note = format!("  · reading … {pct}%{note}");
        }
        // Lines read past stay said for as long as the run is shown: "event 16/16" alone
        // would claim the file holds 16 events and nothing else.
        let skipped = self.run.problems.iter().filter(|p| p.skipped).count();
        let skipped = match skipped {
            0 => String::new(),
            n => format!(" · {n} line(s) skipped (a: which)"),
        };
        // The counter first: on a narrow terminal the path is what gets cut.
        Some(format!(
            "event {}/{}{skipped}  {mode}{find}{note}  {}",
            self.position(),
            self.run.len(),
            cosmos_engine::mcp::shown_location(&self.run.path, &self.run.header)
        ))
    }

    /// Draws the four panes.
    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let panes = PaneAreas::of(area);
        let block = |pane: Pane, title: String| {
            let focused = self.focus == pane;
            Block::bordered()
                .border_type(if focused {
                    BorderType::Thick
                } else {
                    BorderType::Plain
                })
                .border_style(if focused {
                    theme.focus_border()
                } else {
                    theme.border()
                })
                .title(Line::styled(title, theme.title()))
        };
        let state = self.cursor.state();
        let h = &self.run.header;
        let tree_title = if self.run.nodes().is_empty() {
            format!(" Steps · {} ", h.agent.kind.as_str())
        } else {
            let reason = self
                .tree
                .plan_reason()
                .map_or(String::new(), |r| format!("· {r} "));
            let title = format!(
                " Tree · {} nodes · {} {reason}",
                state.visible_nodes(),
                h.agent.kind.as_str()
            );
            // Cut to the pane, with `…` where it is cut (the whole reason is in `a`).
            cosmos_trajectory::sanitize::one_line(
                &title,
                panes.tree.width.saturating_sub(2) as usize,
            )
        };
        let tree_height = Self::inner_height(panes.tree);
        let mut tree_block = block(Pane::Tree, tree_title).title_bottom(
            Line::styled(
                format!(" {} ", self.tree.position(tree_height)),
                theme.dim(),
            )
            .right_aligned(),
        );
        if let Some(accounting) = self.tree.accounting() {
            // The width left of the position, so the two never overlap.
            let room = (panes.tree.width as usize).saturating_sub(16);
            tree_block = tree_block.title_bottom(Line::styled(
                format!(
                    " {} ",
                    cosmos_trajectory::sanitize::one_line(accounting, room)
                ),
                theme.dim(),
            ));
        }
        self.tree
            .draw(frame, panes.tree, tree_block, &self.run, state, theme);
        self.timeline.draw(
            frame,
            panes.timeline,
            block(Pane::Timeline, " Timeline ".into()),
            state.applied(),
            self.search.hit_events(),
            theme,
        );
        let obs_title = format!(
            " Observation · world model {} ",
            cosmos_trajectory::sanitize::one_line(h.world_model_name(), 30)
        );
        self.observation.draw(
            frame,
            panes.observation,
            block(Pane::Observation, obs_title),
            theme,
        );
        let phase = self
            .run
            .phase_at(state.applied())
            .map_or("—", |p| p.as_str());
        let at = metrics::MetricsAt {
            metrics: &self.metrics,
            best_q: self.tree.best_q(),
            series: self.charts.series(),
            k: state.applied(),
            error: match self.run.finish_at(state.applied()).map(|e| &e.body) {
                Some(EventBody::RunFinished { error, .. }) => error.as_deref(),
                _ => None,
            },
        };
        metrics::draw(
            frame,
            panes.metrics,
            block(Pane::Metrics, format!(" Metrics · phase {phase} ")),
            &at,
            theme,
        );
    }
}

/// What the status line says of the problems met reading a run (nothing for none).
pub fn problems_said(problems: usize) -> Option<String> {
    (problems > 0)
        .then(|| format!("{problems} problem(s) reading this run; `cosmos validate` lists them"))
}

/// A synthetic run of `nodes` nodes from `seed`, written in `dir` and opened: what the panes'
/// tests read.
#[cfg(test)]
fn synthetic_run(dir: &std::path::Path, nodes: usize, seed: u64) -> Run {
    use cosmos_trajectory::synthetic::{self, Spec};
    let path = dir.join("run.jsonl");
    let spec = Spec {
        nodes,
        seed,
        ..Spec::default()
    };
    synthetic::write(
        &path,
        &spec,
        cosmos_engine::metrics::run::RunAccumulator::tally,
    )
    .unwrap();
    Run::open(&path).unwrap()
}
