//! The explorer's state machine: a stack of views (browser → run → overlays), the one
//! `update` that routes actions to the view in front, and the background work views ask
//! for. Drawing reads this state and nothing else; the terminal loop in `terminal.rs` runs
//! the work and feeds results back as actions that carry the id of their request.

use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::action::{Action, RequestId};
use super::browser::Browser;
use super::compare::CompareView;
use super::confirm::{ConfirmCall, ConfirmLeave};
use super::help::HelpView;
use super::keymap::{Command, Keymap, Mode};
use super::picker::WorldModelPicker;
use super::run_view::RunView;
use super::run_view::inspector::Inspector;
use super::sweep_view::{SweepNews, SweepView};
use super::theme::Theme;
use super::view::{Exit, Handled, Request, View, Work};
use super::wm_eval_view::{CallDetail, WmEvalView};
use crate::probe::ProbeSetup;
use crate::sanitize::one_line;
use crate::trajectory::run::Run;

/// Longest gap between the two presses of a double click.
const DOUBLE_CLICK: Duration = Duration::from_millis(400);
/// One view on the stack.
#[derive(Debug)]
pub enum Layer {
    /// The run browser.
    Browser(Browser),
    /// One run.
    Run(Box<RunView>),
    /// Several runs side by side.
    Compare(CompareView),
    /// An event or a node in full.
    Inspector(Inspector),
    /// The keys.
    Help(HelpView),
    /// Leave a live run?
    Confirm(ConfirmLeave),
    /// A wm-eval file: world models side by side on the same calls.
    WmEval(WmEvalView),
    /// One call of a wm-eval file whole.
    CallDetail(CallDetail),
    /// Which world model to probe a node with.
    Picker(WorldModelPicker),
    /// Make a node's call for real?
    ConfirmCall(ConfirmCall),
    /// A sweep's matrix.
    Sweep(SweepView),
}

impl Layer {
    /// The view behind the layer.
    pub fn view(&self) -> &dyn View {
        match self {
            Layer::Browser(v) => v,
            Layer::Run(v) => v.as_ref(),
            Layer::Compare(v) => v,
            Layer::Inspector(v) => v,
            Layer::Help(v) => v,
            Layer::Confirm(v) => v,
            Layer::WmEval(v) => v,
            Layer::CallDetail(v) => v,
            Layer::Picker(v) => v,
            Layer::ConfirmCall(v) => v,
            Layer::Sweep(v) => v,
        }
    }

    fn view_mut(&mut self) -> &mut dyn View {
        match self {
            Layer::Browser(v) => v,
            Layer::Run(v) => v.as_mut(),
            Layer::Compare(v) => v,
            Layer::Inspector(v) => v,
            Layer::Help(v) => v,
            Layer::Confirm(v) => v,
            Layer::WmEval(v) => v,
            Layer::CallDetail(v) => v,
            Layer::Picker(v) => v,
            Layer::ConfirmCall(v) => v,
            Layer::Sweep(v) => v,
        }
    }

    /// The view a loaded run opens in: the world-model view for a wm-eval file, the run view
    /// otherwise.
    pub fn for_run(run: Run, area: Rect) -> Self {
        if run.header.agent.kind == crate::trajectory::event::AgentKind::WmEval {
            Layer::WmEval(WmEvalView::new(&run, (area.width, area.height + 1)))
        } else {
            Layer::Run(Box::new(RunView::opened(run, area)))
        }
    }
}

/// Background work asked for and not yet answered.
#[derive(Debug)]
struct Pending {
    id: RequestId,
    waiting: Waiting,
}

#[derive(Debug)]
enum Waiting {
    /// A run to open (at an event, when one was named).
    Run(String, Option<usize>),
    Compare {
        want: usize,
        runs: Vec<Run>,
    },
    Groups,
    /// Stale totals being computed again for the browser.
    Recount,
    Probe,
    /// A find in a run, off the UI thread.
    Find,
}

/// The whole explorer state.
#[derive(Debug)]
pub struct App {
    stack: Vec<Layer>,
    /// Set when the person leaves, with how.
    pub exit: Option<Exit>,
    message: Option<String>,
    /// The last left press, for double clicks: when and where.
    last_click: Option<(Instant, u16, u16)>,
    pending: Vec<Pending>,
    next_id: RequestId,
    work: Vec<(RequestId, Work)>,
    /// Something changed since the last frame.
    changed: bool,
    /// Key bindings.
    pub keymap: Keymap,
    /// Styles.
    pub theme: Theme,
    /// Terminal size.
    pub size: (u16, u16),
    /// Where probes find world models and servers.
    pub probe: ProbeSetup,
}

impl App {
    /// An app on the run browser.
    /// Totals written by an older metrics version are computed again in the background.
    pub fn with_browser(browser: Browser, keymap: Keymap, theme: Theme, size: (u16, u16)) -> Self {
        let stale = browser.stale_paths();
        let mut app = Self::on(Layer::Browser(browser), keymap, theme, size);
        if !stale.is_empty() {
            app.start(Work::Recount(stale));
        }
        app
    }

    /// An app straight on one run (no browser behind it).
    pub fn with_run(run: RunView, keymap: Keymap, theme: Theme, size: (u16, u16)) -> Self {
        Self::on(Layer::Run(Box::new(run)), keymap, theme, size)
    }

    /// An app on any first view.
    pub fn on(first: Layer, keymap: Keymap, theme: Theme, size: (u16, u16)) -> Self {
        Self {
            stack: vec![first],
            exit: None,
            message: None,
            last_click: None,
            pending: Vec::new(),
            next_id: 1,
            work: Vec::new(),
            changed: true,
            keymap,
            theme,
            size,
            probe: ProbeSetup::default(),
        }
    }

    /// The views, bottom first.
    pub fn layers(&self) -> &[Layer] {
        &self.stack
    }

    /// The view in front.
    pub fn top(&self) -> &Layer {
        self.stack.last().expect("the stack is never empty")
    }

    /// The front-most run view.
    pub fn run_view(&self) -> Option<&RunView> {
        self.stack.iter().rev().find_map(|l| match l {
            Layer::Run(r) => Some(r.as_ref()),
            _ => None,
        })
    }

    /// The browser, when the explorer started on a folder.
    pub fn browser(&self) -> Option<&Browser> {
        self.stack.iter().find_map(|l| match l {
            Layer::Browser(b) => Some(b),
            _ => None,
        })
    }

    /// True once the person has left.
    pub fn quit(&self) -> bool {
        self.exit.is_some()
    }

    /// The status line's message, if any.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The area screens draw into (all but the status line).
    pub fn body_area(&self) -> Rect {
        Rect::new(0, 0, self.size.0, self.size.1.saturating_sub(1))
    }

    /// Takes the background work asked for since the last call.
    pub fn take_work(&mut self) -> Vec<(RequestId, Work)> {
        std::mem::take(&mut self.work)
    }

    /// True when something changed since the last frame (and clears it): the loop draws
    /// only then.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// Turns terminal input into an action: text for a prompt, else the keymap of the mode
    /// in front.
    pub fn map_input(&self, event: TermEvent) -> Option<Action> {
        match event {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => {
                let top = self.top().view();
                if top.typing() {
                    Some(Action::Input(key))
                } else {
                    self.keymap.action(top.mode(), &key)
                }
            }
            // Motion is not tracked; should a terminal send it anyway, it changes nothing.
            TermEvent::Mouse(m) if m.kind == MouseEventKind::Moved => None,
            TermEvent::Mouse(m) => Some(Action::Mouse(m)),
            TermEvent::Resize(w, h) => Some(Action::Resize(w, h)),
            _ => None,
        }
    }

    /// True when `m` is the second press of a double click (the same cell, soon after).
    fn double_click(&mut self, m: &MouseEvent) -> bool {
        if m.kind != MouseEventKind::Down(MouseButton::Left) {
            return false;
        }
        let now = Instant::now();
        let double = self.last_click.is_some_and(|(at, column, row)| {
            now.duration_since(at) <= DOUBLE_CLICK && (column, row) == (m.column, m.row)
        });
        // A third press starts a new pair.
        self.last_click = (!double).then_some((now, m.column, m.row));
        double
    }

    /// Applies one action.
    pub fn update(&mut self, action: Action) {
        match action {
            Action::Tick => {
                // Only a view that moves by itself changes on a tick.
                if self.animating() {
                    self.changed = true;
                    self.broadcast(&Action::Tick);
                }
            }
            Action::Resize(w, h) => {
                self.size = (w, h);
                self.changed = true;
                self.broadcast(&action);
            }
            Action::LiveEvent(_) | Action::FollowLost(_) => {
                self.changed = true;
                let mut out = Vec::new();
                if let Some(run) = self.stack.iter_mut().find_map(|l| match l {
                    Layer::Run(r) if r.live.is_some() => Some(r),
                    _ => None,
                }) {
                    run.update(&action, &mut out);
                }
                self.apply(out);
            }
            Action::Loaded(id, result) => {
                self.changed = true;
                self.loaded(id, *result);
            }
            Action::Sweep(news) => {
                self.changed = true;
                self.sweep_news(*news);
            }
            Action::Found(id, path, words, to, hits) => {
                self.changed = true;
                if self.take_pending(id).is_none() {
                    return;
                }
                // To the run view that asked: the one showing that file.
                if let Some(run) = self.stack.iter_mut().rev().find_map(|l| match l {
                    Layer::Run(r) if r.run.path == path => Some(r),
                    _ => None,
                }) {
                    let mut out = Vec::new();
                    run.found(&words, to, hits, &mut out);
                    self.apply(out);
                }
            }
            Action::Probed(id, result) => {
                self.changed = true;
                if self.take_pending(id).is_none() {
                    return;
                }
                match *result {
                    Ok(event) => {
                        let said = crate::trajectory::describe::summary(&event);
                        if let Some(run) = self.stack.iter_mut().rev().find_map(|l| match l {
                            Layer::Run(r) => Some(r),
                            _ => None,
                        }) {
                            run.add_probe(event);
                        }
                        self.message = Some(format!(
                            "added to the run: {} (i shows the node)",
                            one_line(&said, 120)
                        ));
                    }
                    Err(e) => {
                        self.message = Some(format!(
                            "probe failed: {}",
                            one_line(&format!("{e:#}"), 200)
                        ))
                    }
                }
            }
            Action::GroupsReady(id, _) | Action::Recounted(id, _) => {
                self.changed = true;
                if self.take_pending(id).is_some()
                    && let Some(Layer::Browser(b)) = self
                        .stack
                        .iter_mut()
                        .find(|l| matches!(l, Layer::Browser(_)))
                {
                    b.update(&action, &mut Vec::new());
                }
            }
            action => {
                self.changed = true;
                // A message stays until a key or a click: the wheel does not clear it.
                let wheel = matches!(&action, Action::Mouse(m)
                    if matches!(m.kind, MouseEventKind::ScrollUp | MouseEventKind::ScrollDown));
                if !wheel {
                    self.message = None;
                }
                let double = match &action {
                    Action::Mouse(m) => self.double_click(m),
                    _ => false,
                };
                let mut out = Vec::new();
                let handled = self
                    .stack
                    .last_mut()
                    .expect("the stack is never empty")
                    .view_mut()
                    .update(&action, &mut out);
                self.apply(out);
                if handled == Handled::Ignored {
                    self.fallback(&action);
                }
                if double {
                    // The first press selected the row; the second opens it, as Enter does.
                    self.update(Action::Do(Command::Open));
                }
            }
        }
    }

    /// Gives the sweep's news to the matrix, and a cell's event also to a run view following
    /// that cell.
    fn sweep_news(&mut self, news: SweepNews) {
        let Some(sweep) = self.stack.iter_mut().find_map(|l| match l {
            Layer::Sweep(s) => Some(s),
            _ => None,
        }) else {
            return;
        };
        sweep.apply(&news);
        let SweepNews::Event { cell, event } = news else {
            return;
        };
        let Some(path) = sweep.path_of(cell).cloned() else {
            return;
        };
        if let Some(run) = self.stack.iter_mut().find_map(|l| match l {
            Layer::Run(r) if r.live.is_some() && r.run.path == path && !r.finished() => Some(r),
            _ => None,
        }) {
            run.push(*event);
        }
    }

    fn broadcast(&mut self, action: &Action) {
        let mut out = Vec::new();
        for layer in &mut self.stack {
            layer.view_mut().update(action, &mut out);
        }
        // Nothing a resize or a tick asks for needs the person's attention but a message.
        for request in out {
            if let Request::Say(m) = request {
                self.message = Some(m);
            }
        }
    }

    /// What an action means when the view in front did not take it.
    fn fallback(&mut self, action: &Action) {
        match action {
            Action::Do(Command::Help) => {
                let mode = self.top().view().mode();
                self.stack
                    .push(Layer::Help(HelpView::new(&self.keymap, mode, self.size)));
            }
            Action::Do(Command::Quit) => self.leave(),
            Action::Do(Command::Back) => self.close(),
            _ => {}
        }
    }

    /// Closes the view in front; closing the last one leaves.
    fn close(&mut self) {
        if self.stack.len() > 1 {
            let closed = self.stack.pop();
            if matches!(closed, Some(Layer::Run(_) | Layer::Compare(_))) {
                // What was asked for from it (a run to open at a call, a probe) is no longer
                // wanted; the browser's group table still is.
                self.pending
                    .retain(|p| matches!(p.waiting, Waiting::Groups));
            }
        } else {
            // Esc goes back, never out of the program (as in lazygit and k9s): leaving is `q`.
            let quit = self.keymap.hint(Mode::Global, Command::Quit);
            self.message = Some(format!("nothing to go back to · {quit} quits"));
        }
    }

    /// Leaves, unless a live run is still going: then asks first.
    fn leave(&mut self) {
        let running = self.stack.iter().find_map(|l| match l {
            Layer::Run(r) if r.is_running() => Some("run"),
            Layer::Sweep(s) if s.is_running() => Some("sweep"),
            _ => None,
        });
        if let Some(what) = running {
            if !matches!(self.top(), Layer::Confirm(_)) {
                self.stack
                    .push(Layer::Confirm(ConfirmLeave::new(&self.keymap, what)));
            }
        } else {
            self.exit = Some(Exit::Quit);
        }
    }

    fn apply(&mut self, requests: Vec<Request>) {
        for request in requests {
            match request {
                Request::Push(layer) => self.stack.push(*layer),
                Request::Close => self.close(),
                Request::CloseThen(action) => {
                    self.close();
                    self.update(action);
                }
                Request::Start(work) => self.start(work),
                Request::Exit(exit) => self.exit = Some(exit),
                Request::Say(m) => self.message = Some(m),
                Request::Probe {
                    path,
                    node,
                    call,
                    real,
                } => self.probe(path, node, call, real),
                Request::Annotate {
                    path,
                    node,
                    event,
                    text,
                    t_ms,
                } => self.start(Work::Annotate {
                    path,
                    node,
                    event,
                    text,
                    t_ms,
                    setup: self.probe.clone(),
                }),
            }
        }
    }

    /// Asks which world model (or whether to call for real) before probing a node.
    fn probe(
        &mut self,
        path: std::path::PathBuf,
        node: crate::trajectory::event::NodeId,
        call: String,
        real: bool,
    ) {
        let layer = if real {
            if let Some(why) = self.probe.cannot_call_for_real() {
                // Said before the question, not after a `y`.
                self.message = Some(why.to_string());
                return;
            }
            Layer::ConfirmCall(ConfirmCall::new(call, path, node, self.probe.clone()))
        } else {
            Layer::Picker(WorldModelPicker::new(path, node, self.probe.clone()))
        };
        self.stack.push(layer);
    }

    fn start(&mut self, work: Work) {
        let id = self.next_id;
        self.next_id += 1;
        let waiting = match &work {
            Work::OpenRun(path) => Waiting::Run(format!("opening {}", path.display()), None),
            Work::OpenRunAt(path, event) => {
                Waiting::Run(format!("opening {}", path.display()), Some(*event))
            }
            Work::Compare(paths) => Waiting::Compare {
                want: paths.len(),
                runs: Vec::new(),
            },
            Work::Groups(_) => Waiting::Groups,
            Work::Recount(_) => Waiting::Recount,
            Work::Probe { .. } | Work::ProbeReal { .. } | Work::Annotate { .. } => Waiting::Probe,
            Work::Find { .. } => Waiting::Find,
        };
        // A new request replaces an unanswered one of its kind: its answer would be stale.
        self.pending
            .retain(|p| std::mem::discriminant(&p.waiting) != std::mem::discriminant(&waiting));
        self.pending.push(Pending { id, waiting });
        self.work.push((id, work));
    }

    fn take_pending(&mut self, id: RequestId) -> Option<Pending> {
        let i = self.pending.iter().position(|p| p.id == id)?;
        Some(self.pending.remove(i))
    }

    fn loaded(&mut self, id: RequestId, result: anyhow::Result<Run>) {
        let Some(mut pending) = self.take_pending(id) else {
            return; // Asked for by a view that is gone, or superseded.
        };
        let run = match result {
            Ok(run) => run,
            Err(e) => {
                self.message = Some(format!("cannot open: {}", one_line(&format!("{e:#}"), 200)));
                return;
            }
        };
        match &mut pending.waiting {
            Waiting::Run(_, at) => {
                let problems = run.problems.len();
                let layer = Layer::for_run(run, self.body_area());
                self.stack.push(layer);
                if let Some(event) = *at {
                    let mut out = Vec::new();
                    if let Some(top) = self.stack.last_mut() {
                        top.view_mut().update(&Action::JumpTo(event), &mut out);
                    }
                    self.apply(out);
                }
                if problems > 0 {
                    self.message = Some(format!(
                        "{problems} problem(s) reading this run; `cosmos validate` lists them"
                    ));
                }
            }
            Waiting::Compare { want, runs } => {
                runs.push(run);
                if runs.len() == *want {
                    let view = CompareView::new(runs, self.size);
                    self.stack.push(Layer::Compare(view));
                } else {
                    self.pending.push(pending);
                }
            }
            Waiting::Groups | Waiting::Recount | Waiting::Probe | Waiting::Find => {}
        }
    }

    /// True while something in a view moves by itself (play), so the loop ticks fast.
    pub fn animating(&self) -> bool {
        self.stack.iter().any(|l| l.view().animating())
    }

    /// Refreshes the views' derived state once, before a frame.
    pub fn settle(&mut self) {
        for layer in &mut self.stack {
            layer.view_mut().settle();
        }
    }

    /// Draws the front screen, the overlays above it and the status line.
    pub fn draw(&self, frame: &mut Frame) {
        let [body, status] =
            Layout::vertical([Constraint::Min(0), Constraint::Length(1)]).areas(frame.area());
        let theme = &self.theme;
        let screen = self
            .stack
            .iter()
            .rposition(|l| !l.view().is_overlay())
            .unwrap_or(0);
        for layer in &self.stack[screen..] {
            layer.view().draw(frame, body, theme);
        }
        let status_text = self
            .stack
            .iter()
            .rev()
            .find_map(|l| l.view().status())
            .unwrap_or_default();
        let loading = self.pending.iter().find_map(|p| match &p.waiting {
            Waiting::Run(what, _) => Some(what.clone()),
            Waiting::Compare { want, .. } => Some(format!("loading {want} runs")),
            Waiting::Groups | Waiting::Recount | Waiting::Probe => None,
            Waiting::Find => Some("finding".to_string()),
        });
        let note = loading.or_else(|| self.message.clone());
        let help = self.keymap.hint(self.top().view().mode(), Command::Help);
        let line = match note {
            Some(n) => format!(" {status_text}  ·  {n}  ·  {help} help "),
            None => format!(" {status_text}  ·  {help} help "),
        };
        frame.render_widget(
            Paragraph::new(Line::raw(one_line(&line, status.width as usize))).style(theme.status()),
            status,
        );
    }
}
