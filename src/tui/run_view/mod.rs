//! The run view: tree, timeline, observation and metrics, all at the cursor's time.
//!
//! State and update live here; each pane's drawing is in its own file. `refresh` is the
//! one place that brings derived view state (tree rows, observation text, metrics) in
//! line with the cursor, so `draw` only reads.

pub mod inspector;
pub mod metrics;
pub mod observation;
pub mod timeline;
pub mod tree;

use std::sync::mpsc::Sender;

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType};

use self::inspector::Inspector;
use self::metrics::{Series, SeriesBuilder};
use self::observation::ObservationView;
use self::tree::{Item, TreeView};
use super::action::Action;
use super::theme::Theme;
use crate::metrics::run::{RunFacts, RunMetrics};
use crate::trajectory::event::Event;
use crate::trajectory::fold::Cursor;
use crate::trajectory::run::Run;

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

/// Play speeds, events per tick (ticks are 50 ms).
const SPEEDS: [usize; 7] = [1, 2, 5, 20, 100, 1000, 10_000];

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
}

/// State of the run view.
#[derive(Debug)]
pub struct RunView {
    /// The run.
    pub run: Run,
    /// Its metric facts, grown beside it.
    facts: RunFacts,
    cursor: Cursor,
    /// The focused pane.
    pub focus: Pane,
    /// The tree pane.
    pub tree: TreeView,
    /// The observation pane.
    pub observation: ObservationView,
    series: Series,
    series_len: usize,
    metrics: RunMetrics,
    best_q: Option<f64>,
    /// Events per tick while playing; `None` when paused.
    pub playing: Option<usize>,
    speed: usize,
    /// Present for a live run.
    pub live: Option<Live>,
    /// The area of the whole view (set by resize; used for paging and mouse).
    pub area: Rect,
    /// A message for the status line.
    pub message: Option<String>,
    /// The find prompt's text while typing (`/`), and the last query after.
    pub find: Option<String>,
    /// True while typing into the find prompt.
    pub finding: bool,
    /// The event inspector, while open.
    pub inspector: Option<Inspector>,
}

impl RunView {
    /// A view of a loaded run with the cursor at its end.
    pub fn new(run: Run, area: Rect) -> Self {
        let tree = TreeView::new(&run);
        // One fold to the end both places the cursor and fills the charts.
        let mut cursor = Cursor::new(&run);
        let mut charts = SeriesBuilder::new(&run);
        cursor.advance_observing(&run, run.len(), |state| charts.observe(&run, state));
        let mut view = Self {
            series: charts.finish(),
            series_len: run.len(),
            facts: RunFacts::of(&run),
            run,
            cursor,
            focus: Pane::Tree,
            tree,
            observation: ObservationView::default(),
            metrics: RunMetrics::default(),
            best_q: None,
            playing: None,
            speed: 2,
            live: None,
            area,
            message: None,
            find: None,
            finding: false,
            inspector: None,
        };
        let end = view.run.len();
        view.seek(end);
        view
    }

    /// A view of a run as a person opens one to debug it: at its first failed real call, with
    /// that call's node selected and its simulation beside the real result, when it has one;
    /// at its end otherwise.
    pub fn opened(run: Run, area: Rect) -> Self {
        let first_failure = run.first_failed_call();
        let mut view = Self::new(run, area);
        if let Some(event) = first_failure {
            view.jump(Some(event + 1), "");
            view.message =
                Some("opened at the first failed call · End goes to the end".to_string());
        }
        view
    }

    /// A view of a run that is still being written; events arrive by [`RunView::push`].
    pub fn live(run: Run, area: Rect, stop: Option<Sender<()>>) -> Self {
        let mut view = Self::new(run, area);
        view.live = Some(Live {
            stop,
            following: true,
        });
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

    /// A new event of a live run.
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
                .events
                .last()
                .and_then(|e| e.body.node())
                .and_then(|id| self.run.slot_of(id))
            {
                self.tree.open_ancestors(&self.run, slot);
            }
            let end = self.run.len();
            self.seek(end);
        } else {
            self.refresh();
        }
    }

    fn seek(&mut self, k: usize) {
        self.cursor.seek(&self.run, k);
        self.refresh();
    }

    /// Brings every derived view in line with the cursor and selection.
    fn refresh(&mut self) {
        let state = self.cursor.state();
        let k = state.applied();
        self.tree.refresh(&self.run, state);
        self.tree
            .scroll_to_selection(Self::inner_height(PaneAreas::of(self.area).tree));
        self.observation
            .refresh(&self.run, &self.facts, state, self.tree.selected_item());
        self.metrics = self.facts.at(&self.run, k, state);
        self.best_q = state.nodes().iter().filter_map(|n| n.q()).reduce(f64::max);
        // A growing run: rebuild the charts now and then, not on every event.
        let len = self.run.len();
        if len != self.series_len && (len < 20_000 || len >= self.series_len + self.series_len / 10)
        {
            self.series = Series::build(&self.run);
            self.series_len = len;
        }
    }

    fn inner_height(r: Rect) -> usize {
        r.height.saturating_sub(2) as usize
    }

    /// Applies an action. Returns false when the action is not for this view.
    pub fn update(&mut self, action: &Action) -> bool {
        let k = self.position();
        let page = Self::inner_height(PaneAreas::of(self.area).tree).max(1) as isize;
        // The inspector takes every key; live events, resizes and ticks still reach the
        // view underneath.
        if self.inspector.is_some()
            && !matches!(
                action,
                Action::LiveEvent(_) | Action::Resize(..) | Action::Tick
            )
        {
            self.update_inspector(action);
            return true;
        }
        match action {
            Action::StepBack => self.step_to(k.saturating_sub(1)),
            Action::StepForward => self.step_to(k + 1),
            Action::JumpStart => self.step_to(0),
            Action::JumpEnd => self.step_to(self.run.len()),
            Action::NextToolCall => self.jump(
                self.run.next_tool_call(k).map(|e| e + 1),
                "no later tool call",
            ),
            Action::PrevToolCall => self.jump(
                k.checked_sub(1)
                    .and_then(|c| self.run.prev_tool_call(c))
                    .map(|e| e + 1),
                "no earlier tool call",
            ),
            Action::NextFailure => {
                self.jump(self.run.next_failure(k).map(|e| e + 1), "no later failure")
            }
            Action::PrevFailure => self.jump(
                k.checked_sub(1)
                    .and_then(|c| self.run.prev_failure(c))
                    .map(|e| e + 1),
                "no earlier failure",
            ),
            Action::NextNodeEvent => {
                let node = match self.tree.selected_item() {
                    Some(Item::Node(slot)) => Some(self.run.nodes()[slot as usize].id),
                    _ => None,
                };
                let target = node
                    .and_then(|id| self.run.next_event_of_node(k, id))
                    .map(|e| e + 1);
                self.jump(target, "no later event of the selected node");
            }
            Action::PlayPause => self.play_pause(),
            Action::Faster => self.speed = (self.speed + 1).min(SPEEDS.len() - 1),
            Action::Slower => self.speed = self.speed.saturating_sub(1),
            Action::Tick => self.tick(),
            Action::FocusNext | Action::FocusPrev => {
                let i = PANES.iter().position(|p| *p == self.focus).unwrap_or(0);
                let step = if matches!(action, Action::FocusNext) {
                    1
                } else {
                    PANES.len() - 1
                };
                self.focus = PANES[(i + step) % PANES.len()];
            }
            Action::Up => self.move_selection(-1),
            Action::Down => self.move_selection(1),
            Action::PageUp => self.move_selection(-page),
            Action::PageDown => self.move_selection(page),
            Action::Open if self.focus == Pane::Timeline => self.inspect(),
            Action::Inspect => self.inspect(),
            Action::Open => {
                self.tree.toggle(&self.run);
                self.refresh();
            }
            Action::ExpandAll => {
                self.tree.expand_all(&self.run);
                self.refresh();
            }
            Action::CollapseAll => {
                self.tree.collapse_all(&self.run);
                self.refresh();
            }
            Action::StopRun => match self.live.as_mut().and_then(|l| l.stop.take()) {
                Some(stop) => {
                    let _ = stop.send(());
                    self.message = Some("stop requested; the run ends as interrupted".into());
                }
                None => self.message = Some("not a live run".into()),
            },
            Action::Mouse(m) => self.mouse(m),
            Action::Resize(w, h) => {
                self.area = Rect::new(0, 0, *w, h.saturating_sub(1));
                self.refresh();
            }
            Action::LiveEvent(e) => self.push((**e).clone()),
            Action::Search => {
                self.finding = true;
                self.find = Some(String::new());
                self.message = None;
            }
            Action::Input(key) => self.type_find(key),
            _ => return false,
        }
        true
    }

    fn update_inspector(&mut self, action: &Action) {
        let page = self.area.height.saturating_sub(4).max(1) as isize;
        let Some(inspector) = &mut self.inspector else {
            return;
        };
        match action {
            Action::Up => inspector.scroll_by(-1),
            Action::Down => inspector.scroll_by(1),
            Action::PageUp => inspector.scroll_by(-page),
            Action::PageDown => inspector.scroll_by(page),
            Action::Mouse(m) if m.kind == MouseEventKind::ScrollUp => inspector.scroll_by(-3),
            Action::Mouse(m) if m.kind == MouseEventKind::ScrollDown => inspector.scroll_by(3),
            Action::Back | Action::Inspect | Action::Open => self.inspector = None,
            _ => {}
        }
    }

    /// Opens the inspector on the last event applied.
    fn inspect(&mut self) {
        match self.position().checked_sub(1) {
            Some(i) => self.inspector = Some(Inspector::of(&self.run.events[i])),
            None => self.message = Some("no event at the cursor (step forward first)".into()),
        }
    }

    fn step_to(&mut self, k: usize) {
        // A step past either end stays at the end.
        let k = k.min(self.run.len());
        if let Some(live) = &mut self.live {
            live.following = k >= self.run.len();
        }
        self.seek(k);
        // Follow the event's node in the tree, as a person stepping through expects.
        if self.focus != Pane::Tree
            && let Some(slot) = k
                .checked_sub(1)
                .and_then(|i| self.run.events[i].body.node())
                .and_then(|id| self.run.slot_of(id))
        {
            self.tree.reveal(&self.run, self.cursor.state(), slot);
            self.refresh();
        }
    }

    fn jump(&mut self, target: Option<usize>, none: &str) {
        match target {
            Some(k) => {
                self.step_to(k);
                if let Some(slot) = k
                    .checked_sub(1)
                    .and_then(|i| self.run.events[i].body.node())
                    .and_then(|id| self.run.slot_of(id))
                {
                    self.tree.reveal(&self.run, self.cursor.state(), slot);
                    self.refresh();
                }
                self.message = None;
            }
            None => self.message = Some(none.to_string()),
        }
    }

    fn type_find(&mut self, key: &crossterm::event::KeyEvent) {
        use crossterm::event::KeyCode;
        let query = self.find.get_or_insert_with(String::new);
        match key.code {
            KeyCode::Esc => {
                self.finding = false;
                self.find = None;
            }
            KeyCode::Backspace => {
                query.pop();
            }
            KeyCode::Char(c) if !c.is_control() => query.push(c),
            KeyCode::Enter => {
                self.finding = false;
                let needle = query.to_lowercase();
                if needle.is_empty() {
                    return;
                }
                // From the event after the cursor's, wrapping around once.
                let k = self.position();
                let n = self.run.len();
                let hit = (0..n).map(|i| (k + i) % n).find(|&i| {
                    let e = &self.run.events[i];
                    e.body.kind().contains(&needle)
                        || crate::trajectory::describe::summary(e)
                            .to_lowercase()
                            .contains(&needle)
                });
                match hit {
                    Some(i) => {
                        let shown = needle.clone();
                        self.jump(Some(i + 1), "");
                        self.message = Some(format!(
                            "found \"{}\" at event {}",
                            crate::sanitize::one_line(&shown, 40),
                            i + 1
                        ));
                    }
                    None => {
                        self.message = Some(format!(
                            "no event matches \"{}\"",
                            crate::sanitize::one_line(&needle, 40)
                        ))
                    }
                }
            }
            _ => {}
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
        self.playing = match self.playing {
            Some(_) => None,
            None => {
                if self.position() >= self.run.len() {
                    self.seek(0);
                }
                Some(SPEEDS[self.speed])
            }
        };
    }

    fn tick(&mut self) {
        if self.playing.is_some() {
            let next = self.position() + SPEEDS[self.speed];
            self.seek(next.min(self.run.len()));
            self.playing = (self.position() < self.run.len()).then_some(SPEEDS[self.speed]);
        }
    }

    fn move_selection(&mut self, delta: isize) {
        match self.focus {
            Pane::Tree => {
                self.tree.move_by(delta);
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
                if pane == Pane::Tree && m.row > panes.tree.y {
                    self.tree.click((m.row - panes.tree.y - 1) as usize);
                    self.refresh();
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

    /// The status line's text.
    pub fn status(&self) -> String {
        let mode = match (&self.live, self.playing) {
            (Some(l), _) if l.following => "LIVE".to_string(),
            (Some(_), _) => "LIVE (paused)".to_string(),
            (None, Some(_)) => format!("PLAYING ×{}", SPEEDS[self.speed]),
            (None, None) => "PAUSED".to_string(),
        };
        let find = match (&self.find, self.finding) {
            (Some(q), true) => format!("  find: {}▏", crate::sanitize::one_line(q, 40)),
            _ => String::new(),
        };
        format!(
            "{}  event {}/{}  {mode}{find}",
            self.run.path.display(),
            self.position(),
            self.run.len()
        )
    }

    /// Draws the four panes.
    pub fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
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
            let reason = self.tree.plan_reason().map_or(String::new(), |r| {
                format!("· {} ", crate::sanitize::one_line(r, 60))
            });
            format!(
                " Tree · {} nodes · {} {reason}",
                state.visible_nodes(),
                h.agent.kind.as_str()
            )
        };
        self.tree.draw(
            frame,
            panes.tree,
            block(Pane::Tree, tree_title),
            &self.run,
            state,
            theme,
        );
        timeline::draw(
            frame,
            panes.timeline,
            block(Pane::Timeline, " Timeline ".into()),
            &self.run,
            state.applied(),
            theme,
        );
        let obs_title = format!(
            " Observation · world model {} ",
            crate::sanitize::one_line(h.world_model_name(), 30)
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
            best_q: self.best_q,
            series: &self.series,
            k: state.applied(),
        };
        metrics::draw(
            frame,
            panes.metrics,
            block(Pane::Metrics, format!(" Metrics · phase {phase} ")),
            &at,
            theme,
        );
        if let Some(inspector) = &self.inspector {
            inspector.draw(frame, area, theme);
        }
    }
}
