//! The inspectors: one event in full (`i` on the timeline, or Enter there), or one search-tree
//! node in full (`i` on a tree node): its action with every argument, its verdict and why,
//! rewards, the critic's whole reason, the simulation, the real result, and links to each of
//! its events. Text is wrapped to the width (JSON keeps its indentation) and scrolls; nothing
//! the person asked to see is cut with `…`.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};
use serde_json::Value;

use crate::tui::action::Action;
use crate::tui::keymap::{Command, Mode};
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View};
use crate::tui::widgets::scroll::Scroll;
use crate::tui::widgets::wrap::Wrapped;
use cosmos_engine::mcp::StateAround;
use cosmos_trajectory::describe::{Latencies, brief_summary, confidence_cut, node_label, summary};
use cosmos_trajectory::event::{
    Action as NodeAction, Event, EventBody, Observation, PredictionRecord, StateFields, VALIDATOR,
    Verdict,
};
use cosmos_trajectory::fold::TreeState;
use cosmos_trajectory::recorded_call::RecordedCall;
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize::one_line;

/// Lines kept for one inspector; a tool result is capped at 1 MiB, this keeps the view bounded.
const MAX_LINES: usize = 50_000;
/// Widest a line is kept before wrapping (a 1 MiB single-line result stays readable to here).
const MAX_LINE: usize = 64 << 10;

/// What a line is, for drawing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Plain text.
    Text,
    /// A section heading.
    Heading,
    /// A failure (an invalid verdict, an error result).
    Failure,
    /// A link to the event at this index: Enter puts the run's cursor just after it.
    Link(u32),
}

/// An LLM call's messages as a conversation: `system`, `user`, `assistant` (its text, then
/// each tool it called with the arguments), `tool` results with the call they answer.
fn conversation(messages: &[Value], lines: &mut Lines) {
    lines.heading(format!("conversation ({} messages)", messages.len()));
    for m in messages {
        let role = m["role"].as_str().unwrap_or("?");
        let heading = match m["tool_call_id"].as_str() {
            Some(id) => format!("── {role} · result of {id}"),
            None => format!("── {role}"),
        };
        lines.push(Mark::Heading, heading);
        let content = match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            // Content given as parts: their texts.
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            other => other.to_string(),
        };
        if !content.trim().is_empty() {
            lines.block(&content, Mark::Text);
        }
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            let f = &call["function"];
            lines.text(format!(
                "  → calls {} ({})",
                f["name"].as_str().unwrap_or("?"),
                call["id"].as_str().unwrap_or("")
            ));
            let arguments = match &f["arguments"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            lines.block(&arguments, Mark::Text);
        }
    }
}

/// Candidates listed by the about view (the rest are counted).
const ABOUT_CANDIDATES: usize = 12;

/// Problems met reading the file that the about view lists before pointing at `validate`.
const PROBLEMS_LISTED: usize = 20;

/// State of an inspector overlay.
#[derive(Debug, Clone, PartialEq)]
pub struct Inspector {
    title: String,
    text: Wrapped<Mark>,
    /// Logical lines that are links, in order.
    links: Vec<usize>,
    /// The chosen link (an index into `links`).
    link: Option<usize>,
    scroll: Scroll,
    size: (u16, u16),
}

/// Lines being written, each with its mark.
#[derive(Default)]
struct Lines(Vec<(String, Mark)>);

impl Lines {
    fn push(&mut self, mark: Mark, text: String) {
        self.0.push((one_line(&text, MAX_LINE), mark));
    }

    fn text(&mut self, text: impl Into<String>) {
        self.push(Mark::Text, text.into());
    }

    fn heading(&mut self, text: impl Into<String>) {
        if !self.0.is_empty() {
            self.0.push((String::new(), Mark::Text));
        }
        self.push(Mark::Heading, text.into());
    }

    /// A block of text under a heading, indented: JSON pretty-printed, other text by line.
    fn block(&mut self, text: &str, mark: Mark) {
        if text.trim().is_empty() {
            self.push(Mark::Text, "  (empty)".into());
            return;
        }
        let parsed = serde_json::from_str::<Value>(text.trim())
            .ok()
            .filter(|v| v.is_object() || v.is_array());
        let pretty = parsed.and_then(|v| serde_json::to_string_pretty(&v).ok());
        for line in pretty.as_deref().unwrap_or(text).lines() {
            self.push(mark, format!("  {line}"));
        }
    }
}

/// The about view's task, and what reading the file met.
fn task_lines(lines: &mut Lines, run: &Run) {
    let h = &run.header;
    lines.heading("task");
    lines.text(format!("  {}", h.task.id));
    lines.text("  request:");
    lines.block(&h.task.request, Mark::Text);
    if let Some(reference) = &h.task.reference {
        lines.text("  reference (for the judge):");
        lines.block(reference, Mark::Text);
    }
    if !run.problems.is_empty() {
        lines.heading("reading the file");
        let skipped = run.problems.iter().filter(|p| p.skipped).count();
        if skipped > 0 {
            lines.text(format!(
                "  {skipped} line(s) skipped: nothing shown here counts what they held"
            ));
        }
        // As `cosmos validate` names them (the file is the title's).
        for p in run.problems.iter().take(PROBLEMS_LISTED) {
            lines.text(format!("  line {}: {}", p.line, one_line(&p.reason, 200)));
        }
        if run.problems.len() > PROBLEMS_LISTED {
            lines.text(format!(
                "  … and {} more: cosmos validate lists them all",
                run.problems.len() - PROBLEMS_LISTED
            ));
        }
    }
}

/// The about view's setup: the agent and its settings, the fork, models, world model, servers
/// and tools.
fn setup_lines(lines: &mut Lines, run: &Run) {
    let h = &run.header;
    lines.heading("agent");
    lines.text(format!("  {}", h.agent.kind.as_str()));
    lines.text(format!("  {}", h.made_by()));
    for (key, value) in &h.agent.settings {
        lines.text(format!("  {key} = {value}"));
    }
    if let Some(label) = &h.label {
        lines.text(format!("  label: {label}"));
    }
    // Its own heading, after the agent's settings (which stay under "agent").
    source_verdict_lines(lines, run);
    if let Some(fork) = &h.fork_of {
        lines.heading("fork");
        lines.text(format!(
            "  of {} ({}) at step {}: steps 1 to {} replayed from it, never called again",
            fork.file,
            fork.run_id,
            fork.step,
            fork.step.saturating_sub(1)
        ));
        if !run.replayed().is_empty() {
            lines.text(format!(
                "  {} call(s) copied from the recording; no metric counts them",
                run.replayed().len()
            ));
        }
    }
    lines.heading("models");
    let model = |m: &cosmos_trajectory::event::ModelInfo| match &m.base_url {
        Some(url) => format!("{} at {url}", m.model),
        None => m.model.clone(),
    };
    lines.text(format!("  planner: {}", model(&h.planner)));
    for (role, m) in &h.roles {
        lines.text(format!("  {role}: {}", model(m)));
    }
    lines.heading("world model");
    match &h.world_model {
        None => lines.text("  none"),
        Some(w) => {
            lines.text(format!("  {}", w.name));
            for (key, value) in &w.details {
                lines.text(format!("  {key} = {value}"));
            }
        }
    }
    if h.servers.is_empty() && h.source.is_some() {
        lines.heading("servers (—: the source listed none)");
    } else {
        lines.heading(format!("servers ({})", h.servers.len()));
    }
    for s in &h.servers {
        let target = s.target.as_deref().unwrap_or("");
        lines.text(format!("  {} · {} · {target}", s.name, s.transport));
        if let Some(digest) = &s.start_digest {
            lines.text(format!(
                "    on a fresh copy of its state: {}",
                short(digest)
            ));
        }
    }
    // A source that listed no tools says nothing of how many there were.
    if h.recorded(cosmos_trajectory::event::Source::TOOLS) {
        lines.heading(format!("tools ({})", h.tools.len()));
    } else {
        lines.heading("tools (—: the source listed none)");
    }
    for t in &h.tools {
        lines.text(format!("  {}{}", t.name, hints(t)));
    }
}

/// The verdicts the run's source recorded (an imported sample's scorers), apart from cosmos's
/// judge; nothing for a run without any.
fn source_verdict_lines(lines: &mut Lines, run: &Run) {
    if run.source_scores().is_empty() {
        return;
    }
    lines.heading("the source's verdict");
    for &i in run.source_scores() {
        let event = run.event(i as usize);
        if let cosmos_trajectory::event::EventBody::SourceScored {
            scorer,
            value,
            passed,
            answer,
            target,
            ..
        } = &event.body
        {
            let mark = if *passed == Some(false) {
                Mark::Failure
            } else {
                Mark::Text
            };
            lines.push(
                mark,
                format!(
                    "  {scorer}: {}{}{}",
                    cosmos_trajectory::describe::source_verdict(value, *passed),
                    target.as_ref().map_or(String::new(), |t| format!(
                        " · target {}",
                        t.as_str().map_or_else(|| t.to_string(), str::to_string)
                    )),
                    answer
                        .as_deref()
                        .map_or(String::new(), |a| format!(" · answer {a}")),
                ),
            );
        }
    }
}

/// Why the plan at the cursor was chosen (the selection rule and its candidates).
fn plan_lines(lines: &mut Lines, run: &Run, state: &TreeState, k: usize) {
    let h = &run.header;
    lines.heading("why this plan");
    match cosmos_trajectory::plan_why::plan_why(run, state, k) {
        // Another program's agent planned; its calls alone were recorded.
        None if h.agent.kind == cosmos_trajectory::event::AgentKind::External => {
            lines.text(match &h.source {
                Some(source) => format!(
                    "  the source's own agent planned: {} recorded its calls, not its plans",
                    source.format
                ),
                None => "  the client's own agent planned: cosmos proxy recorded its calls, \
                         not its plans"
                    .to_string(),
            })
        }
        // A run that ended without one never chose: "yet" would promise one.
        None if run.finish_at(k).is_some() => lines.text("  none: no plan was chosen in this run"),
        None => lines.text("  no plan chosen yet at the cursor"),
        Some(why) => {
            lines.push(
                Mark::Link(why.event),
                format!("  rule: {} · the plan: {}", why.rule, why.path),
            );
            if why.pool.is_empty() {
                lines.text("  (a chain: what was planned, no choice among candidates)");
            }
            let scored = if why.rule == "most_visited" {
                "visits"
            } else {
                "mean Q"
            };
            if let Some(caveat) = why.caveat() {
                lines.text(format!("  ({caveat})"));
            }
            if !why.pool.is_empty() {
                lines.text(format!(
                    "  chosen among {} {} by {scored}, best first:",
                    why.pool_size,
                    if why.finished {
                        "finished paths"
                    } else {
                        "nodes (no path finished)"
                    }
                ));
            }
            for c in why.pool.iter().take(ABOUT_CANDIDATES) {
                let (id, label) = c.described(run);
                let mark = if c.chosen {
                    "★"
                } else if c.ties {
                    "="
                } else {
                    " "
                };
                lines.text(format!(
                    "  {mark} #{id} Q={} N={} {label}",
                    c.q_text(),
                    c.visits,
                ));
            }
            let shown = why.pool.len().min(ABOUT_CANDIDATES);
            if why.pool_size > shown {
                lines.text(format!("  … {} more", why.pool_size - shown));
            }
            if let Some(rule) = why.tie_rule() {
                lines.text(format!("  = ties with the chosen one: {}", rule.words()));
            } else if why.pool.iter().any(|c| c.ties) {
                lines.text("  = ties with the chosen one");
            }
        }
    }
    let counted: Vec<String> = (0..state.visible_nodes() as u32)
        .filter(|&s| {
            state.verdict(run, s) == Some(cosmos_trajectory::event::Verdict::NotSimulated)
                && state.node(s).is_some_and(|n| n.visits > 0)
        })
        .map(|s| format!("#{}", run.nodes()[s as usize].id))
        .collect();
    if !counted.is_empty() {
        lines.text(format!(
            "  (an older file: {} could not be simulated, yet their 0.0 was backed up, so their \
             ancestors' N and Q count it; today's search leaves them out)",
            counted.join(", ")
        ));
    }
}

/// The searches before the cursor and a recheck against today's servers.
fn after_lines(lines: &mut Lines, run: &Run, k: usize) {
    let searches = run.searches_before(k);
    if !searches.is_empty() {
        lines.heading("searches");
        for &i in searches {
            let event = run.event(i as usize);
            let said =
                cosmos_trajectory::describe::search_accounting(&event.body).unwrap_or_default();
            lines.push(Mark::Link(i), format!("  {said}"));
        }
    }
    if let Some(cosmos_trajectory::event::EventBody::Recheck { at, calls, skipped }) =
        run.recheck_at(k)
    {
        lines.heading("against today's servers");
        lines.text(format!(
            "  {}",
            cosmos_trajectory::describe::recheck_summary(at, calls, skipped)
        ));
        for c in calls
            .iter()
            .filter(|c| c.drift != cosmos_trajectory::event::Drift::Same)
        {
            let fidelity = c.fidelity.map_or(String::new(), |f| {
                format!(
                    " fidelity {}",
                    cosmos_engine::metrics::figure::fraction(f, 2)
                )
            });
            lines.text(format!(
                "  step {} {}: {}{fidelity}{}",
                c.step,
                c.tool,
                c.drift.as_str(),
                c.error
                    .as_deref()
                    .map_or(String::new(), |e| format!(" ({e})"))
            ));
        }
    }
}

/// How the run ended, with each sandboxed server's state at the end.
fn ending_lines(
    lines: &mut Lines,
    run: &Run,
    k: usize,
    ending: Option<cosmos_trajectory::event::Ending>,
) {
    let h = &run.header;
    if let Some(finished) = run.finish_at(k) {
        lines.heading("how it ended");
        lines.text(format!("  {}", summary(finished, Latencies::of(h))));
        // The one ending every view shows: the metrics' reading of the run.
        lines.text(format!(
            "  ending: {}",
            ending.map_or("not recorded (an older file)", |e| e.as_str())
        ));
        if let EventBody::RunFinished { end_digest, .. } = &finished.body {
            for (server, end) in end_digest {
                let start = h
                    .servers
                    .iter()
                    .find(|s| &s.name == server)
                    .and_then(|s| s.start_digest.as_deref());
                // Bytes first, then fields: a state whose bytes differ but whose every
                // field is as it was (a trailing newline) did not change.
                let fields = || cosmos_engine::mcp::start_and_end(run, server);
                let changed = match start {
                    Some(start) if start == end => "unchanged".to_string(),
                    Some(_) => match fields() {
                        Some((start, end)) if start == end => {
                            "unchanged field by field; its bytes differ".to_string()
                        }
                        Some((start, end)) => {
                            let names: std::collections::BTreeSet<&String> =
                                start.keys().chain(end.keys()).collect();
                            let differ = names
                                .iter()
                                .filter(|n| start.get(**n) != end.get(**n))
                                .count();
                            format!("changed: {differ} field(s)")
                        }
                        None => "changed (its bytes; not read as fields)".to_string(),
                    },
                    None => "its start not recorded".to_string(),
                };
                lines.text(format!(
                    "  {server}'s state at the end: {} ({changed})",
                    short(end)
                ));
            }
        }
    }
}

impl Inspector {
    /// A text of headed sections (each heading, then its lines), for views outside a run.
    pub fn sections(title: String, sections: Vec<(String, Vec<String>)>, size: (u16, u16)) -> Self {
        let mut lines = Lines::default();
        for (heading, body) in sections {
            lines.heading(heading);
            for line in body {
                lines.text(line);
            }
        }
        Self::new(title, lines, size)
    }

    fn new(title: String, lines: Lines, size: (u16, u16)) -> Self {
        let mut lines = lines.0;
        if lines.len() > MAX_LINES {
            let left = lines.len() - MAX_LINES;
            lines.truncate(MAX_LINES);
            lines.push((format!("… {left} more lines not shown"), Mark::Text));
        }
        let links = lines
            .iter()
            .enumerate()
            .filter(|(_, (_, m))| matches!(m, Mark::Link(_)))
            .map(|(i, _)| i)
            .collect();
        let mut inspector = Self {
            title,
            text: Wrapped::default(),
            links,
            link: None,
            scroll: Scroll::default(),
            size,
        };
        inspector.text = Wrapped::new(lines, inspector.text_area().width as usize);
        inspector
    }

    /// One event in full: every field, multi-line strings unfolded, JSON text indented; for a
    /// real call whose run kept its server's state, the whole state before and after it.
    pub fn event(event: &Event, around: Option<&StateAround>, size: (u16, u16)) -> Self {
        let mut value = serde_json::to_value(event).unwrap_or(Value::Null);
        let mut lines = Lines::default();
        // A recorded LLM call reads as the conversation it was: each message by its role,
        // tool calls and tool results as such; the call's numbers follow.
        if let Some(Value::Array(messages)) =
            value.as_object_mut().and_then(|o| o.remove("messages"))
        {
            conversation(&messages, &mut lines);
            lines.heading("the call");
        }
        // A real call's change to its server's state reads field by field, before and after,
        // after the call's other fields.
        let change = RecordedCall::of(&event.body).and_then(|call| call.state_change);
        if change.is_some()
            && let Some(o) = value.as_object_mut()
        {
            o.remove("state_change");
        }
        layout(&value, 0, &mut lines);
        if let Some(change) = change {
            state_change_lines(&mut lines, change, None);
            if let Some(around) = around {
                whole_state_lines(
                    &mut lines,
                    "before the call",
                    around,
                    &around.before,
                    change,
                );
                whole_state_lines(&mut lines, "after the call", around, &around.after, change);
            }
        }
        Self::new(
            format!(" Event {} · {} ", event.seq, event.body.kind()),
            lines,
            size,
        )
    }

    /// The run's own story at cursor `k`: what it was asked and with which settings, models,
    /// world model, servers and tools (its header), why the plan in force was chosen (the
    /// rule, the candidates with their means and visits, the ties), how each search spent its
    /// iterations, and how the run ended.
    pub fn about(
        run: &Run,
        state: &TreeState,
        k: usize,
        ending: Option<cosmos_trajectory::event::Ending>,
        size: (u16, u16),
    ) -> Self {
        let mut lines = Lines::default();
        task_lines(&mut lines, run);
        setup_lines(&mut lines, run);
        plan_lines(&mut lines, run, state, k);
        after_lines(&mut lines, run, k);
        ending_lines(&mut lines, run, k, ending);
        Self::new(" About this run ".to_string(), lines, size)
    }

    /// One search-tree node in full, with its values at the cursor (`state`): its action, its
    /// verdict and rewards, the prediction, the real result, what was done to it after the run,
    /// and its events.
    pub fn node(run: &Run, state: &TreeState, slot: u32, size: (u16, u16)) -> Self {
        let info = &run.nodes()[slot as usize];
        let id = info.id;
        let mut lines = Lines::default();
        let added = &run.event(info.added_at as usize).body;
        let parent = info.parent.map_or("none (the root)".to_string(), |p| {
            format!("#{}", run.nodes()[p as usize].id)
        });
        lines.text(format!(
            "node #{id} · depth {} · parent {parent}",
            info.depth
        ));
        let node_events = events_of(run, id);
        action_lines(&mut lines, added);
        // The node's last evaluation and last prediction, read whole.
        let evaluated = latest_of(run, &node_events, "node_evaluated");
        let simulated = latest_of(run, &node_events, "node_simulated");
        let grounded = latest_of(run, &node_events, "node_grounded").is_some();
        let prediction = simulated.as_ref().and_then(|(_, event)| match &event.body {
            EventBody::NodeSimulated {
                prediction:
                    PredictionRecord {
                        world_model,
                        observation,
                        confidence,
                        confidence_source,
                        members,
                        predicted_state,
                        ..
                    },
                ..
            } => Some(Prediction {
                world_model,
                observation,
                confidence: *confidence,
                said: confidence_words(*confidence, confidence_source.as_deref()),
                members,
                predicted_state: predicted_state.as_deref(),
            }),
            _ => None,
        });
        verdict_lines(
            &mut lines,
            run,
            (state, slot),
            evaluated.as_ref(),
            prediction.as_ref(),
            grounded,
        );
        if let Some(p) = &prediction {
            prediction_lines(&mut lines, run, id, p);
        }
        real_result_lines(
            &mut lines,
            run,
            slot,
            added,
            &node_events,
            prediction.as_ref().and_then(|p| p.predicted_state),
        );
        after_run_lines(
            &mut lines,
            run,
            id,
            &node_events,
            prediction.as_ref().map(|p| p.observation),
        );
        event_list_lines(&mut lines, run, id, &node_events);
        Self::new(format!(" Node #{id} "), lines, size)
    }

    /// Every line laid out (what the tests read).
    pub fn lines(&self) -> Vec<&str> {
        self.text.lines().iter().map(|(l, _)| l.as_str()).collect()
    }

    /// Every row as laid out for the current width (what the screen scrolls through).
    pub fn rows(&self) -> Vec<&str> {
        self.text
            .rows(0, usize::MAX)
            .map(|(_, row, _)| row)
            .collect()
    }

    /// The event of the chosen link, if one is chosen.
    pub fn chosen_link(&self) -> Option<u32> {
        let line = *self.links.get(self.link?)?;
        match self.text.lines()[line].1 {
            Mark::Link(e) => Some(e),
            _ => None,
        }
    }

    fn rect(&self) -> Rect {
        crate::tui::overlays::overlay::inset(self.size)
    }

    fn text_area(&self) -> Rect {
        Block::bordered().inner(self.rect())
    }

    fn height(&self) -> usize {
        self.text_area().height as usize
    }

    /// Scrolls by `delta` rows, within the text.
    pub fn scroll_by(&mut self, delta: isize) {
        let height = self.height();
        self.scroll.by(delta, self.text.len(), height);
    }

    fn choose_link(&mut self, forward: bool) {
        if self.links.is_empty() {
            return;
        }
        let n = self.links.len();
        self.link = Some(match (self.link, forward) {
            (None, true) => 0,
            (None, false) => n - 1,
            (Some(i), true) => (i + 1) % n,
            (Some(i), false) => (i + n - 1) % n,
        });
        if let Some(i) = self.link {
            let row = self.text.row_of(self.links[i]);
            self.scroll.show(row, self.height());
        }
    }
}

impl View for Inspector {
    fn mode(&self) -> Mode {
        Mode::Reader
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        let page = self.height().max(1) as isize;
        match action {
            Action::Do(Command::Up) => self.scroll_by(-1),
            Action::Do(Command::Down) => self.scroll_by(1),
            Action::Do(Command::PageUp) => self.scroll_by(-page),
            Action::Do(Command::PageDown) => self.scroll_by(page),
            Action::Do(Command::Top) => self.scroll.offset = 0,
            Action::Do(Command::Bottom) => self.scroll_by(isize::MAX),
            Action::Do(Command::NextLink) => self.choose_link(true),
            Action::Do(Command::PrevLink) => self.choose_link(false),
            Action::Do(Command::Open) => match self.chosen_link() {
                Some(e) => out.push(Request::CloseThen(Action::JumpTo(e as usize))),
                None => out.push(Request::Close),
            },
            Action::Do(Command::Back | Command::Inspect | Command::About) => {
                out.push(Request::Close)
            }
            Action::Mouse(m) if m.kind == crossterm::event::MouseEventKind::ScrollUp => {
                self.scroll_by(-3)
            }
            Action::Mouse(m) if m.kind == crossterm::event::MouseEventKind::ScrollDown => {
                self.scroll_by(3)
            }
            Action::Resize(w, h) => {
                self.size = (*w, *h);
                self.text.fit(self.text_area().width as usize);
                self.scroll.clamp(self.text.len(), self.height());
            }
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn draw(&self, frame: &mut Frame, _area: Rect, theme: &Theme) {
        let rect = self.rect();
        let height = self.height();
        let chosen = self.link.and_then(|i| self.links.get(i)).copied();
        let link_hint = if self.links.is_empty() {
            ""
        } else {
            " · Tab link · Enter jump"
        };
        let block = Block::bordered()
            .border_style(theme.focus_border())
            .title(Line::styled(self.title.clone(), theme.title()))
            .title_bottom(Line::styled(
                format!(
                    " rows {} · ↑↓ PgUp PgDn{link_hint} · Esc closes ",
                    self.scroll.position(self.text.len(), height)
                ),
                theme.dim(),
            ));
        let mut shown = Vec::with_capacity(height);
        for (line_index, row, mark) in self.text.rows(self.scroll.offset, height) {
            let style = match mark {
                Mark::Heading => theme.title(),
                Mark::Failure => theme.error(),
                Mark::Link(_) if Some(line_index) == chosen => theme.selected(),
                Mark::Link(_) => theme.text(),
                Mark::Text => Style::default(),
            };
            shown.push(Line::styled(row.to_string(), style));
        }
        frame.render_widget(Clear, rect);
        frame.render_widget(Paragraph::new(shown).block(block), rect);
    }

    fn is_overlay(&self) -> bool {
        true
    }
}

/// A node's prediction, as its latest `node_simulated` holds it.
struct Prediction<'a> {
    world_model: &'a str,
    observation: &'a Observation,
    confidence: Option<f64>,
    /// The confidence in words.
    said: String,
    members: &'a [cosmos_trajectory::event::MemberPrediction],
    predicted_state: Option<&'a Value>,
}

/// The latest event of `kind` among a node's events, read whole, with its index.
fn latest_of(run: &Run, node_events: &[usize], kind: &str) -> Option<(usize, Event)> {
    node_events
        .iter()
        .rev()
        .find(|&&e| run.brief(e).kind() == kind)
        .map(|&e| (e, run.event(e).into_owned()))
}

/// The node's action, its arguments whole.
fn action_lines(lines: &mut Lines, added: &EventBody) {
    lines.heading("action");
    match added {
        EventBody::NodeAdded {
            action: Some(NodeAction::ToolCall { tool, arguments }),
            prior,
            ..
        } => {
            lines.text(format!("  call {tool}"));
            if let Some(p) = prior {
                lines.text(format!("  planner's prior {p:.2}"));
            }
            lines.text("  arguments:");
            let pretty = serde_json::to_string_pretty(arguments).unwrap_or_default();
            for line in pretty.lines() {
                lines.text(format!("    {line}"));
            }
        }
        EventBody::NodeAdded {
            action: Some(NodeAction::Finish { answer }),
            ..
        } => {
            lines.text("  finish, with the answer:");
            lines.block(answer.as_deref().unwrap_or(""), Mark::Text);
        }
        other => lines.text(format!("  {}", node_label(other))),
    }
}

/// The verdict of the node's last evaluation and why, its reward and how it was made, its
/// values at the cursor (`at`: the tree and the node's slot), and the critic's reason.
fn verdict_lines(
    lines: &mut Lines,
    run: &Run,
    (state, slot): (&TreeState, u32),
    evaluated: Option<&(usize, Event)>,
    prediction: Option<&Prediction<'_>>,
    grounded: bool,
) {
    let evaluated = evaluated.and_then(|(e, event)| match &event.body {
        EventBody::NodeEvaluated {
            verdict,
            base_reward,
            critic_reward,
            critic_reason,
            reward,
            terminal,
            horizon,
            ..
        } => Some((
            *e,
            *verdict,
            *base_reward,
            *critic_reward,
            critic_reason,
            *reward,
            (*terminal, *horizon),
        )),
        _ => None,
    });
    lines.heading("verdict");
    match evaluated {
        None => lines.text("  not evaluated (yet)"),
        Some((at, verdict, base, critic, reason, reward, (terminal, horizon))) => {
            let (word, why) = verdict_words(
                run,
                at,
                verdict,
                prediction.map(|p| (p.world_model, p.observation)),
            );
            let mark = if matches!(verdict, Verdict::Invalid | Verdict::NotSimulated) {
                Mark::Failure
            } else {
                Mark::Text
            };
            let ends = if terminal { " · ends its path" } else { "" };
            let because = if why.is_some() { ", because:" } else { "" };
            lines.push(mark, format!("  {word}{ends}{because}"));
            if let Some(why) = why {
                lines.block(&why, mark);
            }
            if let Some(trust) = horizon {
                let threshold = run
                    .header
                    .agent
                    .go_real_below()
                    .map_or(String::new(), |x| format!(" ({x})"));
                lines.text(format!(
                    "  the search imagined no further: the confidence along the path is \
                     {}, below go_real_below{threshold}",
                    confidence_cut(trust)
                ));
            }
            lines.heading("reward");
            let searched = run.header.agent.kind != cosmos_trajectory::event::AgentKind::External;
            if searched {
                let confidence = prediction.map(|p| p.confidence);
                reward_lines(lines, run, (base, critic, reward), confidence, grounded);
            } else {
                lines.text(format!(
                    "  base {base:.2}: the score the rehearsal gives the call's verdict; no \
                     search used it (a client's call, through cosmos proxy)"
                ));
            }
            if let Some(d) = state.node(slot).filter(|_| searched) {
                lines.text(format!(
                    "  at the cursor: visits N={} · mean value Q={}",
                    d.visits,
                    d.q().map_or("—".to_string(), |q| format!("{q:.2}"))
                ));
            }
            if let Some(reason) = reason {
                lines.heading("the critic's reason");
                lines.block(reason, Mark::Text);
            }
        }
    }
}

/// The prediction (not the validator's rejection, shown as the verdict's why) and an
/// ensemble's members.
fn prediction_lines(
    lines: &mut Lines,
    run: &Run,
    id: cosmos_trajectory::event::NodeId,
    p: &Prediction<'_>,
) {
    if p.world_model != VALIDATOR {
        lines.heading(format!(
            "simulated by {}{} · {}",
            p.world_model,
            if p.observation.is_error {
                " (predicts an error)"
            } else {
                ""
            },
            p.said
        ));
        lines.block(&observation_text(p.observation), Mark::Text);
    }
    if !p.members.is_empty() {
        member_lines(
            lines,
            p.members,
            cosmos_engine::probe::real_of(run, id).as_ref(),
        );
    }
}

/// The real result, when the node was executed, with what it did to its server's state beside
/// what was predicted.
fn real_result_lines(
    lines: &mut Lines,
    run: &Run,
    slot: u32,
    added: &EventBody,
    node_events: &[usize],
    predicted_state: Option<&Value>,
) {
    if let Some(step) = run.steps().iter().rev().find(|s| s.node == Some(slot)) {
        let event = run.event(step.event as usize);
        if let Some(RecordedCall {
            step: n,
            result,
            error,
            state_change,
            ..
        }) = RecordedCall::of(&event.body)
        {
            let mark = if step.is_error {
                Mark::Failure
            } else {
                Mark::Text
            };
            lines.heading(format!(
                "real result (step {n}{})",
                if step.is_error { ", failed ✗" } else { "" }
            ));
            if let Some(e) = error {
                lines.push(Mark::Failure, format!("  transport error: {e}"));
            }
            lines.block(&observation_text(result), mark);
            if let Some(change) = state_change {
                state_change_lines(lines, change, predicted_state);
            }
        }
    } else if matches!(
        added,
        EventBody::NodeAdded {
            action: Some(NodeAction::ToolCall { .. }),
            ..
        }
    ) && !node_events.iter().any(|&e| {
        matches!(
            run.brief(e).whole().map(|e| &e.body),
            Some(EventBody::NodeGrounded { .. })
        )
    }) {
        // (A node called for real while planning says so below.)
        lines.heading("real result");
        lines.text("  never executed");
    }
}

/// What was done to the node after its prediction: a real call while planning (routing), and
/// probes after the run.
fn after_run_lines(
    lines: &mut Lines,
    run: &Run,
    id: cosmos_trajectory::event::NodeId,
    node_events: &[usize],
    prediction: Option<&Observation>,
) {
    // (Probes are kept whole in memory: no need to read every event of the node back.)
    for event in node_events.iter().filter_map(|&e| run.brief(e).whole()) {
        match &event.body {
            EventBody::NodeGrounded {
                observation,
                error,
                server,
                confidence,
                ..
            } => {
                let failed = observation.is_error || error.is_some();
                lines.heading(format!(
                    "called for real while planning{}: the prediction was unsure ({}){}",
                    server
                        .as_deref()
                        .map_or(String::new(), |s| format!(" on {s}")),
                    confidence.map_or("no confidence".to_string(), |c| format!(
                        "confidence {}",
                        confidence_cut(c)
                    )),
                    if failed { " ✗" } else { "" }
                ));
                if let Some(predicted) = prediction {
                    let f = cosmos_engine::metrics::fidelity::compare(predicted, observation);
                    lines.text(format!(
                        "  the prediction's fidelity to this result {:.2}",
                        f.score
                    ));
                }
                if let Some(e) = error {
                    lines.push(Mark::Failure, format!("  transport error: {e}"));
                }
                let mark = if failed { Mark::Failure } else { Mark::Text };
                lines.block(&observation_text(observation), mark);
            }
            EventBody::NodeProbed {
                world_model,
                observation,
                error,
                ..
            } => {
                lines.heading(format!("probed after the run with {world_model}"));
                match (observation, error) {
                    (Some(o), _) => {
                        if let Some(real) = cosmos_engine::probe::real_of(run, id) {
                            let f = cosmos_engine::metrics::fidelity::compare(o, &real);
                            lines
                                .text(format!("  fidelity against the real result {:.2}", f.score));
                        }
                        let mark = if o.is_error {
                            Mark::Failure
                        } else {
                            Mark::Text
                        };
                        lines.block(&observation_text(o), mark);
                    }
                    (None, e) => lines.push(
                        Mark::Failure,
                        format!("  failed: {}", e.as_deref().unwrap_or("")),
                    ),
                }
            }
            EventBody::ProbeCalled {
                result,
                error,
                server,
                ..
            } => {
                let failed = result.is_error || error.is_some();
                lines.heading(format!(
                    "called for real after the run{}{}",
                    server
                        .as_deref()
                        .map_or(String::new(), |s| format!(" on {s}")),
                    if failed { " ✗" } else { "" }
                ));
                if let Some(e) = error {
                    lines.push(Mark::Failure, format!("  transport error: {e}"));
                }
                let mark = if failed { Mark::Failure } else { Mark::Text };
                lines.block(&observation_text(result), mark);
            }
            _ => {}
        }
    }
}

/// The node's events, each a link.
fn event_list_lines(
    lines: &mut Lines,
    run: &Run,
    id: cosmos_trajectory::event::NodeId,
    node_events: &[usize],
) {
    lines.heading(format!(
        "events of #{id} ({}) · Tab/n picks, Enter jumps there",
        node_events.len()
    ));
    // The root's events are mostly backpropagations, which their briefs summarise: only
    // the others are read back from the file.
    let briefed: Vec<Option<String>> = node_events
        .iter()
        .map(|&e| brief_summary(run.brief(e), Latencies::of(&run.header)))
        .collect();
    let unbriefed = node_events
        .iter()
        .zip(&briefed)
        .filter(|(_, said)| said.is_none())
        .map(|(&e, _)| e)
        .collect::<Vec<_>>();
    let mut read_back = run
        .events_at(unbriefed)
        .map(|event| summary(&event, Latencies::of(&run.header)));
    for (&e, said) in node_events.iter().zip(briefed) {
        let brief = run.brief(e);
        let said = said.or_else(|| read_back.next()).unwrap_or_default();
        lines.push(
            Mark::Link(e as u32),
            format!("  → {:>6}  {:<16} {said}", brief.seq, brief.kind()),
        );
    }
}

/// Every event that concerns node `id`, in order.
fn events_of(run: &Run, id: cosmos_trajectory::event::NodeId) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(e) = run.next_event_of_node(from, id) {
        out.push(e);
        from = e + 1;
    }
    out
}

/// A verdict in words, and why when the run says: the validator's rejection, or the world
/// model's error.
fn verdict_words(
    run: &Run,
    evaluated_at: usize,
    verdict: Verdict,
    simulated: Option<(&str, &Observation)>,
) -> (&'static str, Option<String>) {
    match verdict {
        Verdict::Finish => ("finish (+1.0)", None),
        Verdict::Valid => ("valid call (+0.1)", None),
        Verdict::DeadEnd => ("dead end (−0.5)", None),
        Verdict::Invalid => (
            "invalid (−1.0)",
            simulated
                .filter(|(wm, _)| *wm == VALIDATOR)
                .map(|(_, o)| observation_text(o)),
        ),
        Verdict::NotSimulated => {
            // The world model's error is the `error` event just before the evaluation.
            let why = (evaluated_at.saturating_sub(8)..evaluated_at)
                .rev()
                .find_map(|e| match &run.event(e).body {
                    EventBody::Error {
                        source, message, ..
                    } if *source == cosmos_trajectory::event::ErrorSource::WorldModel => {
                        Some(message.clone())
                    }
                    _ => None,
                });
            ("not simulated (0): the world model failed", why)
        }
    }
}

/// An observation as text: its text, else its structured content.
fn observation_text(o: &Observation) -> String {
    if !o.text.is_empty() || o.structured.is_none() {
        let mut t = o.text.clone();
        if o.truncated_bytes > 0 {
            t.push_str(&format!(
                "\n… {} bytes were cut when it was recorded",
                o.truncated_bytes
            ));
        }
        t
    } else {
        o.structured
            .as_ref()
            .map(|v| serde_json::to_string_pretty(v).unwrap_or_default())
            .unwrap_or_default()
    }
}

/// YAML-like lines: `key: value`, nested values indented, multi-line strings as a block.
fn layout(value: &Value, indent: usize, out: &mut Lines) {
    let pad = "  ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                field(&format!("{pad}{key}"), v, indent, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                field(&format!("{pad}[{i}]"), v, indent, out);
            }
        }
        scalar => out.text(format!("{pad}{}", scalar_text(scalar))),
    }
}

fn field(label: &str, value: &Value, indent: usize, out: &mut Lines) {
    match value {
        Value::Object(m) if !m.is_empty() => {
            out.text(format!("{label}:"));
            layout(value, indent + 1, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.text(format!("{label}:"));
            layout(value, indent + 1, out);
        }
        Value::String(s) if s.contains('\n') || looks_like_json(s) => {
            out.text(format!("{label}: |"));
            let pad = "  ".repeat(indent);
            let mut block = Lines::default();
            block.block(s, Mark::Text);
            for (line, mark) in block.0 {
                out.push(mark, format!("{pad}{line}"));
            }
        }
        other => out.text(format!("{label}: {}", scalar_text(other))),
    }
}

fn looks_like_json(s: &str) -> bool {
    let t = s.trim_start();
    (t.starts_with('{') || t.starts_with('[')) && s.len() > 60
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        other => other.to_string(),
    }
}

/// A tool's annotations as the about view marks them: ` (read-only)`, ` (destructive)`.
fn hints(tool: &cosmos_trajectory::event::ToolInfo) -> &'static str {
    if tool.read_only() {
        " (read-only)"
    } else if tool.destructive() {
        " (destructive)"
    } else {
        ""
    }
}

/// A prediction's confidence as the inspector words it: `confidence 0.90 (recall)`, or `no
/// confidence` when the world model gave none (routing counts it as unsure).
fn confidence_words(value: Option<f64>, source: Option<&str>) -> String {
    match (value, source) {
        (Some(c), Some(source)) => format!("confidence {} ({source})", confidence_cut(c)),
        (Some(c), None) => format!("confidence {}", confidence_cut(c)),
        (None, _) => "no confidence".to_string(),
    }
}

/// How a searched node's reward was made, step by step from what the run recorded: the
/// verdict's base, the critic's mix (α from the agent's settings), and, for a risky node (its
/// prediction under `go_real_below`, its tool not read-only, so nothing real was called), the
/// scaling by the prediction's confidence. Three decimals: 0.005 is not "0.01".
fn reward_lines(
    lines: &mut Lines,
    run: &Run,
    (base, critic, reward): (f64, Option<f64>, f64),
    confidence: Option<Option<f64>>,
    grounded: bool,
) {
    let alpha = run
        .header
        .agent
        .settings
        .get("alpha")
        .and_then(Value::as_f64);
    lines.text(format!(
        "  base {base:.3} · critic {} · reward {reward:.3}",
        critic.map_or("—".to_string(), |c| format!("{c:.3}"))
    ));
    let mix = match (critic, alpha) {
        (Some(c), Some(a)) => {
            let mix = a * base + (1.0 - a) * c.clamp(0.0, 1.0);
            lines.text(format!("  α {a:.2} × base + (1 − α) × critic = {mix:.3}"));
            mix
        }
        _ => base,
    };
    let threshold = run.header.agent.go_real_below();
    let risky = !grounded
        && confidence.is_some()
        && threshold.is_some_and(|x| confidence.flatten().is_none_or(|c| c < x));
    if risky && (reward - mix).abs() > 1e-12 {
        let c = confidence.flatten().unwrap_or(0.0);
        lines.text(format!(
            "  × confidence {c:.3} = {reward:.3}: a risky node (its prediction under \
             go_real_below {}, its tool not read-only, so nothing real was called) is worth \
             its confidence's share",
            threshold.unwrap_or_default()
        ));
    }
}

/// How the real call changed its server's state, field by field, each changed field beside the
/// value the world model's predicted state gave it (✓ when the same), when it predicted one.
fn state_change_lines(
    lines: &mut Lines,
    change: &cosmos_trajectory::event::StateChange,
    predicted: Option<&Value>,
) {
    /// Most fields listed; the count says how many there are.
    const SHOWN: usize = 20;
    // Whole, on one line the inspector wraps (nothing is cut but past its line cap).
    let value = |v: Option<&Value>| {
        v.map_or("(none)".to_string(), |v| {
            cosmos_trajectory::sanitize::one_line(&v.to_string(), MAX_LINE)
        })
    };
    if !change.changed() {
        lines.heading("state: the call changed nothing");
        return;
    }
    lines.heading(format!(
        "state: the call changed {} field{}{}",
        change.fields_changed,
        if change.fields_changed == 1 { "" } else { "s" },
        if predicted.is_some() {
            " · beside each, the predicted state's value"
        } else {
            ""
        }
    ));
    for (name, field) in change.fields.iter().take(SHOWN) {
        lines.text(format!(
            "  {}: {} → {}",
            cosmos_trajectory::sanitize::one_line(name, MAX_LINE),
            value(field.before.as_ref()),
            value(field.after.as_ref())
        ));
        if let Some(predicted) = predicted {
            let guess = predicted.get(name);
            let right = guess == field.after.as_ref();
            lines.push(
                if right { Mark::Text } else { Mark::Failure },
                format!(
                    "    predicted {} {}",
                    value(guess),
                    if right { "✓" } else { "✗" }
                ),
            );
        }
    }
    let shown = change.fields.len().min(SHOWN);
    let left = (change.fields_changed as usize).saturating_sub(shown);
    if left > 0 {
        lines.text(format!("  … {left} more field(s) not shown"));
    }
}

/// A server's whole state at one point of the run, a field a line, the fields the call changed
/// marked ✎; at most [`STATE_SHOWN`] of them, the count saying how many there are.
fn whole_state_lines(
    lines: &mut Lines,
    when: &str,
    around: &StateAround,
    state: &StateFields,
    change: &cosmos_trajectory::event::StateChange,
) {
    lines.heading(format!(
        "{}'s state {when}: {} field{}",
        one_line(&around.server, 40),
        state.len(),
        if state.len() == 1 { "" } else { "s" }
    ));
    for (name, value) in state.iter().take(STATE_SHOWN) {
        let changed = change.fields.contains_key(name);
        lines.text(format!(
            "  {} {}: {}",
            if changed { "✎" } else { " " },
            one_line(name, MAX_LINE),
            one_line(&value.to_string(), MAX_LINE)
        ));
    }
    if state.len() > STATE_SHOWN {
        lines.text(format!(
            "  … {} more field(s) not shown",
            state.len() - STATE_SHOWN
        ));
    }
}

/// Most fields of a whole state listed.
const STATE_SHOWN: usize = 40;

/// An ensemble's members side by side: one row each (its confidence, and its fidelity to the
/// real result when the call was made), then each one's prediction or error.
fn member_lines(
    lines: &mut Lines,
    members: &[cosmos_trajectory::event::MemberPrediction],
    real: Option<&cosmos_trajectory::event::Observation>,
) {
    lines.heading(format!(
        "the ensemble's {} members{}",
        members.len(),
        if real.is_some() {
            " · fidelity to the real result"
        } else {
            ""
        }
    ));
    let width = members
        .iter()
        .map(|m| m.world_model.chars().count())
        .max()
        .unwrap_or(0);
    for m in members {
        let confidence = confidence_words(m.confidence, m.confidence_source.as_deref());
        match &m.observation {
            Some(o) => {
                let fidelity = real.map_or(String::new(), |real| {
                    format!(
                        " · fidelity {:.2}",
                        cosmos_engine::metrics::fidelity::compare(o, real).score
                    )
                });
                let error = if o.is_error {
                    " · predicts an error"
                } else {
                    ""
                };
                lines.text(format!(
                    "  {:<width$}  {confidence}{fidelity}{error}",
                    m.world_model
                ));
            }
            None => lines.push(
                Mark::Failure,
                format!("  {:<width$}  failed ✗", m.world_model),
            ),
        }
    }
    for m in members {
        match (&m.observation, &m.error) {
            (Some(o), _) => {
                lines.heading(format!("predicted by {}", m.world_model));
                let mark = if o.is_error {
                    Mark::Failure
                } else {
                    Mark::Text
                };
                lines.block(&observation_text(o), mark);
            }
            (None, error) => {
                lines.heading(format!("{} gave no prediction", m.world_model));
                lines.block(error.as_deref().unwrap_or(""), Mark::Failure);
            }
        }
    }
}

/// A state digest as the about view shows it: its kind and first 16 hex digits.
fn short(digest: &str) -> String {
    let cut: String = digest.chars().take("sha256:".len() + 16).collect();
    if cut.len() < digest.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosmos_trajectory::event::Observation;

    fn called(text: &str) -> Event {
        Event {
            seq: 7,
            t_ms: 100,
            body: EventBody::ToolCalled {
                step: 1,
                tool: "time:now".into(),
                server: None,
                arguments: Box::new(serde_json::json!({"tz": "UTC"})),
                result: Observation {
                    text: text.into(),
                    ..Default::default()
                },
                latency_ms: 3,
                node: None,
                error: None,
                origin: None,
                state_change: None,
            },
        }
    }

    #[test]
    fn unfolds_multi_line_text_and_keeps_escapes_inert() {
        let i = Inspector::event(
            &called("line one\nline \u{1b}]52;c;eA==\u{7}two"),
            None,
            (80, 24),
        );
        let text = i.lines().join("\n");
        assert!(
            text.contains("  text: |\n    line one\n    line \\u{1b}]52;c;eA==\\u{7}two"),
            "{text}"
        );
        assert!(text.contains("arguments:\n  tz: UTC"), "{text}");
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'));
    }

    #[test]
    fn json_results_are_indented_and_long_lines_wrap_whole() {
        let json = r#"{"timezone":"Asia/Tokyo","datetime":"2026-11-30T21:00:00+09:00","is_dst":false,"note":"a long note that goes on and on past any terminal width there is, and then further still"}"#;
        let i = Inspector::event(&called(json), None, (40, 24));
        let text = i.lines().join("\n");
        assert!(
            text.contains("      \"timezone\": \"Asia/Tokyo\","),
            "{text}"
        );
        // Every character of the note is on some row: wrapped, not cut.
        let rows: String = i
            .text
            .rows(0, usize::MAX)
            .map(|(_, r, _)| r.trim())
            .collect();
        assert!(
            rows.contains("thenfurtherstill") || rows.contains("then further still"),
            "{rows}"
        );
        assert!(!rows.contains('…'));
    }

    /// A real call of a run that kept its server's state shows that state whole, before and
    /// after the call, the fields it changed marked (a sample run made against the real memory
    /// server).
    #[test]
    fn a_call_on_a_kept_state_shows_the_state_before_and_after_it() {
        let samples =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample_runs/stateful");
        let path = std::fs::read_dir(&samples)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.to_string_lossy().contains("_mem_add_person_")
                    && p.extension().is_some_and(|e| e == "jsonl")
            })
            .unwrap();
        let run = Run::open(&path).unwrap();
        let (call, around) = run
            .steps()
            .iter()
            .filter_map(|s| {
                let around = cosmos_engine::mcp::around_call(&run, s.event as usize)?;
                (around.before != around.after).then_some((s.event as usize, around))
            })
            .next()
            .expect("a call that changed the memory graph");
        let i = Inspector::event(&run.event(call), Some(&around), (100, 60));
        let text = i.lines().join("\n");
        let before = format!(
            "memory's state before the call: {} field",
            around.before.len()
        );
        let after = format!(
            "memory's state after the call: {} field",
            around.after.len()
        );
        assert!(text.contains(&before), "{text}");
        assert!(text.contains(&after), "{text}");
        let (_, after_part) = text.split_once(&after).unwrap();
        let changed = around
            .after
            .keys()
            .find(|k| around.before.get(*k) != around.after.get(*k))
            .unwrap();
        assert!(
            after_part.contains(&format!("✎ {}", one_line(changed, 60))),
            "{text}"
        );
        // Without a kept state the event reads as before: no state section.
        let plain = Inspector::event(&run.event(call), None, (100, 60));
        assert!(
            !plain
                .lines()
                .join("\n")
                .contains("'s state before the call")
        );
    }

    #[test]
    fn huge_results_are_capped_and_scrolling_stays_inside() {
        let big = "x\n".repeat(MAX_LINES * 2);
        let mut i = Inspector::event(&called(&big), None, (80, 24));
        assert_eq!(i.lines().len(), MAX_LINES + 1);
        assert!(i.lines().last().unwrap().contains("more lines not shown"));
        i.scroll_by(isize::MAX);
        assert_eq!(i.scroll.offset, i.text.len() - i.height());
        i.scroll_by(-5);
        assert_eq!(i.scroll.offset, i.text.len() - i.height() - 5);
        i.scroll_by(isize::MIN);
        assert_eq!(i.scroll.offset, 0);
    }
}
