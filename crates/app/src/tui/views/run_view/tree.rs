//! The search-tree pane: a flat window over the open subtrees.
//!
//! tui-tree-widget flattens every open node each frame; at 10^5 nodes that is too slow, so
//! this pane keeps its own list of visible rows, rebuilt in `update` only when the visible
//! node count or the open set changes, and draws just the rows on screen.

use rustc_hash::{FxHashMap, FxHashSet};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use unicode_width::UnicodeWidthStr;

use crate::tui::theme::Theme;
use crate::tui::widgets::scroll::Selection;
use cosmos_trajectory::describe::{SiblingCalls, compact_call_label, compact_node_label};
use cosmos_trajectory::event::{ActionKind, AgentKind, AnsweredBy, EventBody, Verdict};
use cosmos_trajectory::fold::TreeState;
use cosmos_trajectory::plan_why::{TieRule, WhySource, plan_why};
use cosmos_trajectory::recorded_call::RecordedCall;
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize::one_line;

/// What a row of the pane stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Item {
    /// A search-tree node (arena slot).
    Node(u32),
    /// A real step (index into the run's steps), for runs without a tree (ReAct).
    Step(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    item: Item,
    depth: u16,
}

/// State of the tree pane. Its maps are keyed by arena slots and event indices, this
/// program's own small numbers, so they are Fx-hashed: a refresh looks up every visible row.
#[derive(Debug, Clone, Default)]
pub struct TreeView {
    open: FxHashSet<u32>,
    rows: Vec<Row>,
    built_for: Option<(usize, usize, u64)>,
    open_version: u64,
    /// The selected row and the scroll.
    pub(crate) selection: Selection,
    plan: FxHashSet<u32>,
    /// Why the ★ plan, in one line, with the plan event and node count it was made for.
    plan_reason: Option<(u32, usize, String)>,
    /// What the latest search's iterations did (for the pane's bottom title).
    accounting: Option<String>,
    q_range: (f64, f64),
    touched: Option<Item>,
    /// Row texts read from the file at refresh (a node's or step's event never changes), so
    /// drawing reads nothing.
    texts: FxHashMap<Item, RowText>,
    /// What each parent's children call (by the parent's slot), with how many children it
    /// was gathered from: read once for all the rows of a family, however large.
    families: FxHashMap<u32, (usize, SiblingCalls)>,
    /// Whether a `node_simulated` event (by index) predicted an error.
    predicted_error: FxHashMap<u32, bool>,
    /// Routing's marks, by node slot: the event from which it holds (shown once the cursor
    /// is past it). Grounded: its unsure call went real while planning; risky: a plan rests
    /// on its unsure guess.
    grounded: FxHashMap<u32, u32>,
    risky: FxHashMap<u32, u32>,
    /// A proxy client's call the world model answered (`routed`): no server saw it.
    answered_by_model: FxHashMap<u32, u32>,
    /// How far the run's events were scanned for them (a live run grows).
    marks_scanned: usize,
}

/// A row's words, read once from its event.
#[derive(Debug, Clone, Default)]
struct RowText {
    /// The whole label: `tool(values…)`, `finish`, `3. tool(values…)`.
    label: String,
    /// For a call with siblings of the same tool: only the argument values that tell it apart
    /// from them, for when the whole label does not fit.
    distinct: Option<String>,
    /// How many children its parent had when read (a live run or a widening adds more).
    family: usize,
}

/// Rows either side of the selection and of the scroll whose texts are read at each refresh.
const TEXT_WINDOW: usize = 400;

impl TreeView {
    /// What is selected.
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// A view with the root and the chosen plan open.
    pub fn new(run: &Run) -> Self {
        let mut view = Self::default();
        view.open.insert(0);
        for slot in run.plan_at(run.len()) {
            let mut at = Some(slot);
            while let Some(s) = at {
                view.open.insert(s);
                at = run.nodes()[s as usize].parent;
            }
        }
        view
    }

    /// Rows currently listed.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when there is nothing to list.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The selected item.
    pub fn selected_item(&self) -> Option<Item> {
        self.rows.get(self.selection.selected).map(|r| r.item)
    }

    /// Reads routing's marks from the events not scanned yet (once each).
    fn scan_marks(&mut self, run: &Run) {
        for (i, brief) in run.briefs().iter().enumerate().skip(self.marks_scanned) {
            let Some(event) = brief.whole() else { continue };
            match &event.body {
                EventBody::NodeGrounded { node, .. } => {
                    if let Some(slot) = run.slot_of(*node) {
                        self.grounded.entry(slot).or_insert(i as u32);
                    }
                }
                EventBody::PlanSelected { risky, .. } => {
                    for slot in risky.iter().filter_map(|n| run.slot_of(*n)) {
                        self.risky.entry(slot).or_insert(i as u32);
                    }
                }
                EventBody::Routed {
                    node,
                    answered_by: AnsweredBy::WorldModel,
                    ..
                } => {
                    if let Some(slot) = run.slot_of(*node) {
                        self.answered_by_model.entry(slot).or_insert(i as u32);
                    }
                }
                _ => {}
            }
        }
        self.marks_scanned = run.briefs().len();
    }

    /// Recomputes rows and colouring for the state at the cursor, when something changed.
    pub fn refresh(&mut self, run: &Run, state: &TreeState) {
        self.scan_marks(run);
        let k = state.applied();
        let steps = run.steps_at(k).len();
        let key = (state.visible_nodes(), steps, self.open_version);
        let previous = self.selected_item();
        if self.built_for != Some(key) {
            self.rebuild(run, state);
            self.built_for = Some(key);
            // Keep the same item selected when it is still listed.
            if let Some(item) = previous
                && let Some(i) = self.rows.iter().position(|r| r.item == item)
            {
                self.selection.selected = i;
            }
        }
        self.selection.selected = self
            .selection
            .selected
            .min(self.rows.len().saturating_sub(1));
        self.plan = run.plan_at(k).into_iter().collect();
        self.read_texts(run, state);
        self.refresh_plan_reason(run, state);
        self.accounting = run
            .search_finished_at(state.applied())
            .and_then(cosmos_trajectory::describe::search_accounting);
        self.touched = k.checked_sub(1).and_then(|i| {
            let event = run.brief(i);
            match event.whole().map(|e| &e.body) {
                Some(EventBody::ToolCalled { .. }) if run.nodes().is_empty() => {
                    run.steps_at(k).len().checked_sub(1).map(Item::Step)
                }
                _ => event.node().and_then(|id| run.slot_of(id)).map(Item::Node),
            }
        });
        let qs = state.nodes().iter().filter_map(|n| n.q());
        self.q_range = qs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), q| {
            (lo.min(q), hi.max(q))
        });
    }

    fn rebuild(&mut self, run: &Run, state: &TreeState) {
        self.rows.clear();
        if run.nodes().is_empty() {
            let n = run.steps_at(state.applied()).len();
            self.rows.extend((0..n).map(|i| Row {
                item: Item::Step(i),
                depth: 0,
            }));
            return;
        }
        let visible = state.visible_nodes() as u32;
        if visible == 0 {
            return;
        }
        // Iterative DFS over open nodes; roots are nodes without a parent.
        let mut stack: Vec<(u32, u16)> = (0..visible)
            .rev()
            .filter(|&s| run.nodes()[s as usize].parent.is_none())
            .map(|s| (s, 0))
            .collect();
        while let Some((slot, depth)) = stack.pop() {
            self.rows.push(Row {
                item: Item::Node(slot),
                depth,
            });
            if self.open.contains(&slot) {
                for &child in run.nodes()[slot as usize].children.iter().rev() {
                    if child < visible {
                        stack.push((child, depth + 1));
                    }
                }
            }
        }
    }

    /// Moves the selection by `delta` rows in a pane `height` rows high.
    pub fn move_by(&mut self, delta: isize, height: usize) {
        self.selection.by(delta, self.rows.len(), height);
    }

    /// Selects the last row (a live ReAct run follows its newest step).
    pub fn select_last(&mut self, height: usize) {
        self.selection.select(usize::MAX, self.rows.len(), height);
    }

    /// Selects a row by its position on screen (mouse).
    pub fn click(&mut self, row_on_screen: usize) {
        if let Some(i) = self.selection.row_at(row_on_screen, self.rows.len()) {
            self.selection.selected = i;
        }
    }

    /// Opens or closes the selected node.
    pub fn toggle(&mut self, run: &Run) {
        if let Some(Item::Node(slot)) = self.selected_item()
            && !run.nodes()[slot as usize].children.is_empty()
        {
            if !self.open.remove(&slot) {
                self.open.insert(slot);
            }
            self.open_version += 1;
        }
    }

    /// Opens the selected node and everything under it.
    pub fn expand_all(&mut self, run: &Run) {
        let Some(Item::Node(start)) = self.selected_item() else {
            return;
        };
        let mut stack = vec![start];
        while let Some(s) = stack.pop() {
            let node = &run.nodes()[s as usize];
            if !node.children.is_empty() {
                self.open.insert(s);
                stack.extend(&node.children);
            }
        }
        self.open_version += 1;
    }

    /// Closes every node but the roots.
    pub fn collapse_all(&mut self, run: &Run) {
        // Slot 0 stays open before any node exists (a ReAct run, a live run not started).
        self.open.retain(|&s| {
            run.nodes()
                .get(s as usize)
                .map_or(s == 0, |n| n.parent.is_none())
        });
        self.open_version += 1;
        self.selection.selected = 0;
    }

    /// Opens the ancestors of `slot`, so that it is listed.
    pub fn open_ancestors(&mut self, run: &Run, slot: u32) {
        let mut at = run.nodes().get(slot as usize).and_then(|n| n.parent);
        while let Some(s) = at {
            if self.open.insert(s) {
                self.open_version += 1;
            }
            at = run.nodes()[s as usize].parent;
        }
    }

    /// Selects the row of `slot`, opening its ancestors.
    pub fn reveal(&mut self, run: &Run, state: &TreeState, slot: u32) {
        self.open_ancestors(run, slot);
        self.reveal_item(run, state, Item::Node(slot));
    }

    /// Selects `item` when it is listed (a step of a run without a tree, an open node).
    pub fn reveal_item(&mut self, run: &Run, state: &TreeState, item: Item) {
        self.refresh(run, state);
        if let Some(i) = self.rows.iter().position(|r| r.item == item) {
            self.selection.selected = i;
        }
    }

    /// Reads the texts of the rows near the selection and the scroll that are not read yet
    /// (all a draw can show, unless the pane is taller than [`TEXT_WINDOW`]).
    fn read_texts(&mut self, run: &Run, state: &TreeState) {
        // One range around both: they are usually close, and each row is looked at once.
        let (selected, offset) = (self.selection.selected, self.selection.scroll.offset);
        let to = (selected.max(offset) + TEXT_WINDOW).min(self.rows.len());
        let from = selected.min(offset).saturating_sub(TEXT_WINDOW).min(to);
        for row in &self.rows[from..to] {
            let family = family_size(run, row.item);
            if self.texts.get(&row.item).is_none_or(|t| t.family != family) {
                let text = row_text(run, row.item, &mut self.families);
                self.texts.insert(row.item, text);
            }
            if let Item::Node(slot) = row.item
                && let Some(simulated) = state.node(slot).map(|n| n.simulated)
                && simulated != cosmos_trajectory::run::NONE
            {
                self.predicted_error.entry(simulated).or_insert_with(|| {
                    run.simulated_observation(simulated)
                        .is_some_and(|o| o.is_error)
                });
            }
        }
    }

    /// Keeps the selection on screen for a pane of `height` rows.
    pub fn scroll_to_selection(&mut self, height: usize) {
        self.selection.settle(self.rows.len(), height);
    }

    /// The best mean value Q over the tree at the cursor (from the range the rows are coloured
    /// by: one scan of the nodes a frame, not two).
    pub fn best_q(&self) -> Option<f64> {
        let (lo, hi) = self.q_range;
        (lo <= hi).then_some(hi)
    }

    /// Where the pane is scrolled to, for its title.
    pub fn position(&self, height: usize) -> String {
        self.selection.scroll.position(self.rows.len(), height)
    }

    /// What the latest search's iterations did and why it stopped (for the pane's title).
    pub fn accounting(&self) -> Option<&str> {
        self.accounting.as_deref()
    }

    /// Why the ★ plan was chosen, in one line (for the pane's title).
    pub fn plan_reason(&self) -> Option<&str> {
        self.plan_reason
            .as_ref()
            .map(|(_, _, s)| s.as_str())
            .filter(|s| !s.is_empty())
    }

    /// The rule, the chosen node's value, and the other candidates that tie with it: the
    /// search keeps the earlier of equal nodes, which nothing else on screen says.
    fn refresh_plan_reason(&mut self, run: &Run, state: &TreeState) {
        let k = state.applied();
        let Some(event) = run.plan_event_at(k).map(|p| p.event) else {
            self.plan_reason = None;
            return;
        };
        let visible = state.visible_nodes();
        if self
            .plan_reason
            .as_ref()
            .is_some_and(|(e, v, _)| *e == event && *v == visible)
        {
            return;
        }
        let reason = match plan_why(run, state, k) {
            Some(why) if why.rule == "chain" => String::new(),
            Some(why) => match why.pool.iter().find(|c| c.chosen) {
                Some(chosen) => {
                    let most_visited = why.rule == "most_visited";
                    let name = if most_visited {
                        "most visited"
                    } else {
                        "best mean"
                    };
                    let value = if most_visited {
                        chosen.visits.to_string()
                    } else {
                        chosen.q.map_or("—".to_string(), |q| format!("{q:.2}"))
                    };
                    let mut s = format!("★ {name} {value}");
                    if !why.finished {
                        s.push_str(" (no path finished)");
                    }
                    let ties: Vec<String> = why
                        .pool
                        .iter()
                        .filter(|c| c.ties)
                        .map(|c| format!("#{}", run.nodes()[c.slot as usize].id))
                        .collect();
                    if !ties.is_empty() {
                        let shown: Vec<&str> = ties.iter().take(3).map(String::as_str).collect();
                        let more = ties.len().saturating_sub(3);
                        s.push_str(&format!("; ties {}", shown.join(", ")));
                        if more > 0 {
                            s.push_str(&format!(" +{more}"));
                        }
                        if why.tie_rule() == Some(TieRule::Earlier) {
                            s.push_str(", earlier wins");
                        }
                    }
                    if let WhySource::Contradicted(id) = why.source {
                        s.push_str(&format!("; today's rule takes #{id}"));
                    }
                    s
                }
                None => format!("★ {}", why.rule),
            },
            None => String::new(),
        };
        self.plan_reason = Some((event, visible, reason));
    }

    /// Draws the rows on screen.
    pub fn draw(
        &self,
        frame: &mut Frame,
        area: Rect,
        block: Block,
        run: &Run,
        state: &TreeState,
        theme: &Theme,
    ) {
        let inner = block.inner(area);
        let height = inner.height as usize;
        let width = inner.width as usize;
        let lines: Vec<Line> = self
            .rows
            .iter()
            .enumerate()
            .skip(self.selection.scroll.offset)
            .take(height)
            .map(|(i, row)| {
                let mut line = match row.item {
                    Item::Node(slot) => self.node_line(run, state, slot, row.depth, width, theme),
                    Item::Step(step) => {
                        let label = self.texts.get(&row.item).map_or("…", |t| &t.label);
                        step_line(run, step, label, width, theme)
                    }
                };
                if self.touched == Some(row.item) {
                    line = line.patch_style(theme.touched());
                }
                if i == self.selection.selected {
                    line = line.patch_style(theme.selected());
                }
                line
            })
            .collect();
        let empty = self.rows.is_empty();
        let para = if empty {
            // Said from the run, not guessed: "step forward" only where stepping would show
            // something.
            let none = run.nodes().is_empty() && run.steps().is_empty();
            let why = match (none, run.finish_at(run.len()).is_some()) {
                (true, true) => "this run has no search node and no real call",
                // A live run, or one cut off before its end: more may come.
                (true, false) => "no search node or real call yet",
                (false, _) => "nothing yet at this event (step forward)",
            };
            Paragraph::new(Line::styled(why, theme.dim()))
        } else {
            Paragraph::new(lines)
        };
        frame.render_widget(para.block(block), area);
    }

    fn node_line(
        &self,
        run: &Run,
        state: &TreeState,
        slot: u32,
        depth: u16,
        width: usize,
        theme: &Theme,
    ) -> Line<'static> {
        let info = &run.nodes()[slot as usize];
        let dyn_ = state.node(slot).copied().unwrap_or_default();
        let visible_children = info
            .children
            .iter()
            .any(|&c| (c as usize) < state.visible_nodes());
        let fold_mark = if !visible_children {
            "  "
        } else if self.open.contains(&slot) {
            "▾ "
        } else {
            "▸ "
        };
        let text = self.texts.get(&Item::Node(slot));
        let predicted_error = self
            .predicted_error
            .get(&dyn_.simulated)
            .copied()
            .unwrap_or(false);
        let mut spans = vec![Span::raw("  ".repeat(depth as usize)), Span::raw(fold_mark)];
        if self.plan.contains(&slot) {
            spans.push(Span::styled("★ ", theme.mark()));
        }
        // The id the timeline speaks in (`#1→#2→#3`).
        spans.push(Span::styled(format!("#{} ", info.id), theme.dim()));
        let unsimulated = state.verdict(run, slot) == Some(Verdict::NotSimulated);
        let mut stats = match (unsimulated, dyn_.visits) {
            // No prediction, so no value: the search never backs one up.
            (true, 0) => " no value".to_string(),
            // An older version backed up its 0.0 as if it were a prediction.
            (true, visits) => format!(" N={visits} Q=0.00 (older file: counted)"),
            _ => format!(
                " N={} Q={}",
                dyn_.visits,
                dyn_.q().map_or("—".into(), |q| format!("{q:.2}")),
            ),
        };
        // A proxy session's nodes are its client's calls rehearsed one by one: no search
        // visited, valued or rewarded them, so no search figure is shown.
        if run.header.agent.kind == AgentKind::External {
            stats.clear();
        } else if width >= WIDE_ROW {
            // The reward is in the inspector; a narrow pane keeps the room for the arguments.
            stats.push_str(&format!(
                " r={}",
                state
                    .last_reward(run, slot)
                    .map_or("—".into(), |r| format!("{r:.2}"))
            ));
        }
        // Why the node scored as it did, with or without colour: ⊘ invalid (the validator's),
        // ∅ not simulated (the world model failed), ⚠ a predicted error.
        let verdict_mark = match state.verdict(run, slot) {
            Some(Verdict::Invalid) => Some(" ⊘"),
            Some(Verdict::NotSimulated) => Some(" ∅"),
            _ if predicted_error => Some(" ⚠"),
            _ => None,
        };
        // Routing's marks (the legend, `?`): ⊕ went real while planning, ◌ risky, ⋯ the
        // search's horizon, ◆ a proxy client's call the world model answered; each once the
        // cursor has passed the event that made it.
        let seen = |at: Option<&u32>| at.is_some_and(|&e| (e as usize) < state.applied());
        let routing: String = [
            (seen(self.grounded.get(&slot)), " ⊕"),
            (seen(self.risky.get(&slot)), " ◌"),
            (state.horizon(run, slot), " ⋯"),
            (seen(self.answered_by_model.get(&slot)), " ◆"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, mark)| *mark)
        .collect();
        let used: usize = spans.iter().map(|s| s.content.width()).sum::<usize>()
            + stats.width()
            + routing.width()
            + verdict_mark.map_or(0, |m| m.width());
        let room = width.saturating_sub(used).max(4);
        let label = match text {
            Some(t) if t.label.width() > room && t.distinct.is_some() => {
                fit_label(t.distinct.as_deref().unwrap_or_default(), room)
            }
            Some(t) => fit_label(&t.label, room),
            // Not read yet (a pane taller than the window read): the kind only.
            None => match info.action {
                Some(ActionKind::Finish) => "finish".to_string(),
                _ => "…".to_string(),
            },
        };
        spans.push(Span::raw(label));
        let q_style = match dyn_.q() {
            // Values that read the same at two decimals are no better or worse than each
            // other: they are not coloured apart.
            Some(q) => match self.q_range {
                (lo, hi) if hi - lo >= Q_RESOLUTION => theme.scale((q - lo) / (hi - lo)),
                _ => theme.text(),
            },
            None => theme.dim(),
        };
        spans.push(Span::styled(stats, q_style));
        if !routing.is_empty() {
            spans.push(Span::styled(routing, theme.mark()));
        }
        if let Some(mark) = verdict_mark {
            spans.push(Span::styled(mark, theme.error()));
        }
        Line::from(spans)
    }
}

/// The smallest spread of Q values coloured as a scale: they are shown to two decimals.
const Q_RESOLUTION: f64 = 0.005;

/// Rows at least this wide show each node's last reward too.
const WIDE_ROW: usize = 60;

/// How many children a node's parent has (0 for a step or the root).
fn family_size(run: &Run, item: Item) -> usize {
    match item {
        Item::Node(slot) => run.nodes()[slot as usize]
            .parent
            .map_or(0, |p| run.nodes()[p as usize].children.len()),
        Item::Step(_) => 0,
    }
}

/// `! ` before a call of a tool its server annotates destructive.
pub(super) fn destructive_mark(run: &Run, tool: &str) -> &'static str {
    if run.header.destructive(tool) {
        "! "
    } else {
        ""
    }
}

/// A row's words, from its event (read from the file); `families` keeps what each parent's
/// children call, gathered the first time one of them is labelled.
fn row_text(
    run: &Run,
    item: Item,
    families: &mut FxHashMap<u32, (usize, SiblingCalls)>,
) -> RowText {
    match item {
        Item::Step(step) => RowText {
            label: match RecordedCall::of(&run.event(run.steps()[step].event as usize).body) {
                Some(RecordedCall {
                    step,
                    tool,
                    arguments,
                    ..
                }) => format!(
                    "{step}. {}{}",
                    destructive_mark(run, tool),
                    compact_call_label(tool, arguments)
                ),
                None => String::new(),
            },
            distinct: None,
            family: 0,
        },
        Item::Node(slot) => {
            let info = &run.nodes()[slot as usize];
            let body = run.event(info.added_at as usize).into_owned().body;
            let siblings = info.parent.map(|parent| {
                let children = &run.nodes()[parent as usize].children;
                let (gathered, calls) = families.entry(parent).or_default();
                // A live run's family grows at its end: only the children added since are read.
                for &child in children.get(*gathered..).unwrap_or_default() {
                    calls.add(
                        &run.event(run.nodes()[child as usize].added_at as usize)
                            .body,
                    );
                }
                *gathered = children.len();
                &*calls
            });
            let mark = match &body {
                EventBody::NodeAdded {
                    action: Some(cosmos_trajectory::event::Action::ToolCall { tool, .. }),
                    ..
                } => destructive_mark(run, tool),
                _ => "",
            };
            RowText {
                label: format!("{mark}{}", compact_node_label(&body)),
                // The mark stays in front of the shorter label too.
                distinct: siblings
                    .and_then(|s| s.distinguishing_label(&body))
                    .map(|d| format!("{mark}{d}")),
                family: family_size(run, item),
            }
        }
    }
}

fn step_line(run: &Run, step: usize, label: &str, width: usize, theme: &Theme) -> Line<'static> {
    let s = &run.steps()[step];
    let style = if s.is_error {
        theme.error()
    } else {
        theme.text()
    };
    let mark = if s.is_error { " ✗" } else { " ✓" };
    Line::from(vec![
        Span::styled(fit_label(label, width.saturating_sub(3)), style),
        Span::styled(mark, style),
    ])
}

/// A call label cut to `width` columns. A step's number (`3. `) and the destructive mark
/// (`! `) are kept whole, whatever the width; then the server prefix (`Time MCP:`) goes
/// first, so a narrow pane shows which tool with which arguments rather than the same server
/// name on every row.
fn fit_label(label: &str, width: usize) -> String {
    if label.width() <= width {
        return label.to_string();
    }
    let (kept, call) = split_kept(label);
    format!(
        "{kept}{}",
        fit_call(call, width.saturating_sub(kept.width()))
    )
}

/// A label's number (`3. `) and destructive mark (`! `), and the call after them.
fn split_kept(label: &str) -> (&str, &str) {
    let mut at = label
        .find(". ")
        .filter(|&i| i > 0 && label[..i].chars().all(|c| c.is_ascii_digit()))
        .map_or(0, |i| i + 2);
    if label[at..].starts_with("! ") {
        at += 2;
    }
    label.split_at(at)
}

/// A call (`server:tool(arguments)`) cut to `width`: the server prefix first, then the tool's
/// name gives way to its arguments, which tell siblings apart.
fn fit_call(call: &str, width: usize) -> String {
    let paren = call.find('(').unwrap_or(call.len());
    let short = match call[..paren].rfind(':') {
        Some(colon) => call[colon + 1..].to_string(),
        None => call.to_string(),
    };
    if short.width() <= width {
        return short;
    }
    match short.find('(') {
        Some(paren) if paren > 0 => {
            let (name, args) = short.split_at(paren);
            let name_room = width.saturating_sub(args.width()).max(MIN_NAME);
            let name = one_line(name, name_room);
            let args = one_line(args, width.saturating_sub(name.width()));
            format!("{name}{args}")
        }
        _ => one_line(&short, width),
    }
}

/// Fewest cells a tool's name keeps when its arguments need the room.
const MIN_NAME: usize = 4;

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::buffer::Buffer;

    use super::*;
    use cosmos_trajectory::synthetic::{self, Spec};

    fn drawn(view: &TreeView, run: &Run, state: &TreeState, width: u16) -> Buffer {
        let mut terminal = Terminal::new(TestBackend::new(width, 14)).unwrap();
        terminal
            .draw(|f| {
                let theme = Theme::new(false);
                view.draw(f, f.area(), Block::bordered(), run, state, &theme)
            })
            .unwrap();
        terminal.backend().buffer().clone()
    }

    /// Drawing shows the texts read at the last refresh and reads nothing itself: a file
    /// emptied after the refresh draws the same.
    #[test]
    fn the_tree_reads_its_rows_at_refresh_never_when_drawn() {
        let dir = tempfile::tempdir().unwrap();
        let run = super::super::synthetic_run(dir.path(), 30, 5);
        let path = run.path.clone();
        let state = TreeState::fold(&run, run.len());
        let mut view = TreeView::new(&run);
        view.open.extend(0..run.nodes().len() as u32);
        view.open_version += 1;
        view.refresh(&run, &state);
        let before = drawn(&view, &run, &state, 100);
        let text: String = before.content().iter().map(|c| c.symbol()).collect();
        assert!(text.contains("#1 "), "{text}");
        assert!(text.contains('('), "labels with arguments: {text}");

        std::fs::write(&path, b"").unwrap();
        assert_eq!(drawn(&view, &run, &state, 100), before);
        view.refresh(&run, &state);
        assert_eq!(drawn(&view, &run, &state, 100), before);
    }

    /// A sibling added later (a live run) changes what tells the first one apart, and only
    /// the new child is read to learn it.
    #[test]
    fn a_growing_family_relabels_its_rows_from_the_children_added_since() {
        use cosmos_trajectory::event::{Action, Event};
        let mut run = Run::new("live".into(), synthetic::header(&Spec::default()));
        let mut seq = 0;
        let mut add = |run: &mut Run, node: u64, parent: Option<u64>, b: &str| {
            seq += 1;
            run.push(Event {
                seq,
                t_ms: seq,
                body: EventBody::NodeAdded {
                    node,
                    parent,
                    depth: u32::from(parent.is_some()),
                    action: parent.map(|_| Action::ToolCall {
                        tool: "srv:t".into(),
                        arguments: serde_json::json!({"a": "same", "b": b}),
                    }),
                    prior: None,
                },
            });
        };
        add(&mut run, 0, None, "");
        add(&mut run, 1, Some(0), "one");
        let mut families = FxHashMap::default();
        assert_eq!(row_text(&run, Item::Node(1), &mut families).distinct, None);
        add(&mut run, 2, Some(0), "two");
        let first = row_text(&run, Item::Node(1), &mut families);
        assert_eq!(first.distinct.as_deref(), Some("t(…one)"));
        assert_eq!(first.family, 2);
        let second = row_text(&run, Item::Node(2), &mut families);
        assert_eq!(second.distinct.as_deref(), Some("t(…two)"));
        assert_eq!(families[&0].0, 2, "both children gathered, each once");
    }

    #[test]
    fn narrow_labels_drop_the_server_before_the_arguments() {
        let label = "Time MCP:convert_time(Europe/London, 12:00, Asia/Tokyo)";
        assert_eq!(fit_label(label, 80), label);
        assert_eq!(
            fit_label(label, 50),
            "convert_time(Europe/London, 12:00, Asia/Tokyo)"
        );
        // The name gives way first: the arguments tell calls apart.
        assert_eq!(fit_label(label, 20), "con…(Europe/London,…");
        assert_eq!(
            fit_label("Time MCP:convert_time(…Asia/Tokyo)", 20),
            "conver…(…Asia/Tokyo)"
        );
        assert_eq!(fit_label("2. Time MCP:now()", 10), "2. now()");
        // Truth IV: the destructive mark is kept whole at any width, after the number.
        assert_eq!(
            fit_label("3. ! fs:delete_file(/tmp/notes/a-long-name.txt)", 20),
            "3. ! del…(/tmp/note…"
        );
        assert_eq!(fit_label("! fs:delete_file(/x)", 12), "! delet…(/x)");
    }
}
