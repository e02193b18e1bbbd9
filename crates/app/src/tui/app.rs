//! The explorer's state machine: a stack of views (`Box<dyn View>`: browser → run →
//! overlays), the one `update` that routes actions, and the background work views ask for.
//! Drawing reads this state and nothing else; the terminal loop in `terminal.rs` runs the work
//! and feeds results back as actions that carry the id of their request.
//!
//! The app names no view but its own two overlays (help, the leave question): views push the
//! views they open, `open.rs` says which view shows a loaded file, and every answer goes back
//! to the view that asked (or is dropped when that view has closed).
//!
//! the stack of views (`Box<dyn View>`, each with an id while it is on the stack) and
//! the single `App::update`. Keys and mouse go to the view in front; an answer to background
//! work (`view::Work`, run by `terminal.rs`: reading a run in parts and a fork on threads of
//! their own, everything else on the bounded background pool, `parallel::background`, four
//! threads; a read asked again while it is on its way is that request, `Work::read_key`; a newer
//! request of its kind replaces it), answered with an action carrying the request's id
//! (`Action::answers`) goes to the view that asked, and is dropped once that view has closed; a
//! feed from outside (a live run's events, a sweep's news) goes to every view that `subscribes`.
//! Then the fallbacks: Back closes, Quit leaves, but asks first while a view is `running`;
//! Interrupt (Ctrl-C) sends every running view its stop at once and leaves without asking. The
//! app names its own two overlays (help, the leave question) and no other view: a loaded file
//! becomes a view in `open.rs` (run view, read in parts or followed as a fork, or the
//! world-model view for a wm-eval file; runs to compare, which are read and aligned on the
//! background pool: `Work::Compare` answers `Action::Compared` with the view made there, never
//! on the UI thread). Tests run work synchronously with `terminal::perform`, and look at views
//! by type (`App::top_as`, `App::find`).

use std::any::Any;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::action::{Action, RequestId};
use super::keymap::{Command, Keymap, Mode};
use super::open;
use super::overlays::confirm::ConfirmLeave;
use super::overlays::help::HelpView;
use super::theme::Theme;
use super::view::{Context, Exit, Handled, Request, View, Work};
use cosmos_engine::probe::ProbeSetup;
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize::one_line;

/// Longest gap between the two presses of a double click.
const DOUBLE_CLICK: Duration = Duration::from_millis(400);

/// Names a view on the stack for as long as it is there, so an answer finds the view that
/// asked for it.
type ViewId = u64;

/// One view on the stack.
struct Slot {
    id: ViewId,
    view: Box<dyn View>,
}

/// Background work asked for and not yet answered.
#[derive(Debug)]
struct Pending {
    id: RequestId,
    /// The view that asked; its answer goes to it, and is dropped once it has closed.
    asker: ViewId,
    waiting: Waiting,
    /// What names what was asked, when asking it again is asking for the same answer
    /// ([`Work::read_key`]).
    reads: Option<String>,
}

#[derive(Debug)]
enum Waiting {
    /// A run to open (at an event, when one was named).
    Run(String, Option<usize>),
    /// Runs to compare (how many).
    Compare(usize),
    /// A job's answer for the view that asked: the job's kind, and what the status line says
    /// meanwhile.
    Answer(&'static str, Option<String>),
    /// A fork started from the explorer: its run opens as a followed view (`view`, once it
    /// has) and, when it ends, beside `original` in compare.
    Fork {
        original: PathBuf,
        view: Option<ViewId>,
        /// The fork's file, once it exists.
        path: Option<PathBuf>,
    },
}

/// The whole explorer state.
pub struct App {
    stack: Vec<Slot>,
    next_view: ViewId,
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

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let modes: Vec<Mode> = self.stack.iter().map(|s| s.view.mode()).collect();
        f.debug_struct("App")
            .field("views", &modes)
            .field("pending", &self.pending)
            .field("message", &self.message)
            .finish_non_exhaustive()
    }
}

impl App {
    /// An app on its first view (the browser, a run, a sweep…).
    pub fn new(first: impl View, keymap: Keymap, theme: Theme, size: (u16, u16)) -> Self {
        Self::on(Box::new(first), keymap, theme, size)
    }

    /// An app on a first view already boxed (as `open::run` gives it).
    /// Says on the status line that reading the run in front found `problems` (skipped
    /// lines and the like), when it did: the figures leave those lines out.
    pub fn say_problems(&mut self, problems: usize) {
        if let Some(said) = open::problems_said(problems) {
            self.message = Some(said);
        }
    }

    /// An explorer whose first view is `first`.
    pub fn on(first: Box<dyn View>, keymap: Keymap, theme: Theme, size: (u16, u16)) -> Self {
        let mut app = Self {
            stack: Vec::new(),
            next_view: 1,
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
        };
        app.push(first);
        app
    }

    /// Puts a view in front and lets it ask for its first work.
    fn push(&mut self, mut view: Box<dyn View>) -> ViewId {
        let id = self.next_view;
        self.next_view += 1;
        let mut out = Vec::new();
        view.opened(&mut out);
        self.stack.push(Slot { id, view });
        self.apply(id, out);
        id
    }

    /// The views, bottom first.
    pub fn views(&self) -> impl DoubleEndedIterator<Item = &dyn View> {
        self.stack.iter().map(|s| s.view.as_ref())
    }

    /// The view in front.
    pub fn top(&self) -> &dyn View {
        self.stack
            .last()
            .expect("the stack is never empty")
            .view
            .as_ref()
    }

    /// The view in front, if it is a `V`.
    pub fn top_as<V: View>(&self) -> Option<&V> {
        (self.top() as &dyn Any).downcast_ref()
    }

    /// True when the view in front is a `V`.
    pub fn top_is<V: View>(&self) -> bool {
        self.top_as::<V>().is_some()
    }

    /// The front-most view that is a `V`.
    pub fn find<V: View>(&self) -> Option<&V> {
        self.views()
            .rev()
            .find_map(|v| (v as &dyn Any).downcast_ref::<V>())
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
                let top = self.top();
                if top.typing() {
                    Some(Action::Input(key))
                } else {
                    self.keymap.command(top.mode(), &key).map(Action::Do)
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

    /// Gives `action` to the view `id` (if it is still open) and applies what it asks.
    fn deliver(&mut self, id: ViewId, action: &Action) -> Handled {
        let Some(slot) = self.stack.iter_mut().find(|s| s.id == id) else {
            return Handled::Ignored;
        };
        let mut out = Vec::new();
        let cx = Context { probe: &self.probe };
        let handled = slot.view.update(action, cx, &mut out);
        self.apply(id, out);
        handled
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
            Action::LiveEvent(..)
            | Action::FollowLost(..)
            | Action::Sweep(_)
            | Action::RunRead(..) => {
                self.changed = true;
                let subscribers: Vec<ViewId> = self
                    .stack
                    .iter()
                    .filter(|s| s.view.subscribes(&action))
                    .map(|s| s.id)
                    .collect();
                for id in subscribers {
                    self.deliver(id, &action);
                }
            }
            Action::Loaded(id, result) => {
                self.changed = true;
                self.loaded(id, *result);
            }
            Action::LoadedHead(id, run, read, total) => {
                self.changed = true;
                self.loaded_head(id, *run, read, total);
            }
            Action::Elicit(question) => {
                // The waiting call's question goes in front of whatever is shown.
                self.changed = true;
                match &question.request {
                    rmcp::model::ElicitRequestParams::FormElicitationParams { .. } => {
                        self.push(Box::new(super::overlays::elicit_form::ElicitForm::new(
                            *question,
                        )));
                    }
                    // A page to open: a login asking for more scopes.
                    _ => match super::overlays::page_prompt::PagePrompt::new(question) {
                        Ok(prompt) => {
                            self.push(Box::new(prompt));
                        }
                        Err(question) => {
                            question.decline("a kind of request the explorer does not know")
                        }
                    },
                }
            }
            Action::Compared(id, view) => {
                self.changed = true;
                self.compared(id, view);
            }
            Action::ForkEnded(id) => {
                self.changed = true;
                self.fork_ended(id);
            }
            Action::WorkFailed(id, why) => {
                self.changed = true;
                let _ = self.take_pending(id);
                self.message = Some(one_line(&format!("background work failed: {why}"), 200));
            }
            action if action.answers().is_some() => {
                self.changed = true;
                if let Some(pending) = action.answers().and_then(|id| self.take_pending(id)) {
                    self.deliver(pending.asker, &action);
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
                let front = self.stack.last().expect("the stack is never empty").id;
                if self.deliver(front, &action) == Handled::Ignored {
                    self.fallback(&action);
                }
                if double {
                    // The first press selected the row; the second opens it, as Enter does.
                    self.update(Action::Do(Command::Open));
                }
            }
        }
    }

    fn broadcast(&mut self, action: &Action) {
        let cx = Context { probe: &self.probe };
        let mut out = Vec::new();
        for slot in &mut self.stack {
            slot.view.update(action, cx, &mut out);
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
                let help = HelpView::new(&self.keymap, self.top().mode(), self.size);
                self.push(Box::new(help));
            }
            Action::Do(Command::Quit) => self.leave(),
            Action::Do(Command::Interrupt) => self.interrupt(),
            Action::Do(Command::Back) => self.close(),
            _ => {}
        }
    }

    /// Closes the view in front; closing the last one leaves.
    fn close(&mut self) {
        if self.stack.len() > 1 {
            let closed = self.stack.pop().expect("more than one").id;
            // What it asked for is no longer wanted.
            self.pending.retain(|p| p.asker != closed);
        } else {
            // Esc goes back, never out of the program (as in lazygit and k9s): leaving is `q`.
            let quit = self.keymap.hint(Mode::Global, Command::Quit);
            self.message = Some(format!("nothing to go back to · {quit} quits"));
        }
    }

    /// Ctrl-C: a live run or sweep still going is stopped at once, by its own view's stop
    /// (the key `x` would send), and the app leaves (`Exit::StopRun`, which stops whatever
    /// else the caller runs). Nothing is asked: the agent makes no further model request or
    /// real call while a question would wait for an answer.
    fn interrupt(&mut self) {
        let running: Vec<ViewId> = self
            .stack
            .iter()
            .filter(|s| s.view.running().is_some())
            .map(|s| s.id)
            .collect();
        for &id in &running {
            self.deliver(id, &Action::Do(Command::StopRun));
        }
        self.exit = Some(if running.is_empty() {
            Exit::Quit
        } else {
            Exit::StopRun
        });
    }

    /// Leaves, unless a live run is still going: then asks first.
    fn leave(&mut self) {
        let running = self.views().find_map(|v| v.running());
        match running {
            // Asked once: a second `q` does not stack a second question.
            Some(what) if !self.top_is::<ConfirmLeave>() => {
                let question = ConfirmLeave::new(&self.keymap, what);
                self.push(Box::new(question));
            }
            Some(_) => {}
            None => self.exit = Some(Exit::Quit),
        }
    }

    /// Applies the requests of the view `from`.
    fn apply(&mut self, from: ViewId, requests: Vec<Request>) {
        for request in requests {
            match request {
                Request::Push(view) => {
                    self.push(view);
                }
                Request::Close => self.close(),
                Request::CloseThen(action) => {
                    self.close();
                    self.update(action);
                }
                Request::Start(work) => self.start(from, work),
                Request::Exit(exit) => self.exit = Some(exit),
                Request::Say(m) => self.message = Some(m),
            }
        }
    }

    fn start(&mut self, asker: ViewId, work: Work) {
        // A read already on its way for this view is the same request: its answer serves.
        let reads = work.read_key();
        if reads.is_some()
            && self
                .pending
                .iter()
                .any(|p| p.asker == asker && p.reads == reads)
        {
            return;
        }
        let id = self.next_id;
        self.next_id += 1;
        let waiting = match &work {
            Work::OpenRun(path) => Waiting::Run(format!("opening {}", path.display()), None),
            Work::OpenRunAt(path, event) => {
                Waiting::Run(format!("opening {}", path.display()), Some(*event))
            }
            Work::Compare(paths) => Waiting::Compare(paths.len()),
            Work::Job(job) => Waiting::Answer(job.kind(), job.waiting()),
            Work::Fork(fork) => Waiting::Fork {
                original: fork.original.clone(),
                view: None,
                path: None,
            },
        };
        // A new request replaces an unanswered one of its kind: its answer would be stale.
        self.pending.retain(|p| match (&p.waiting, &waiting) {
            (Waiting::Answer(a, _), Waiting::Answer(b, _)) => a != b,
            (a, b) => std::mem::discriminant(a) != std::mem::discriminant(b),
        });
        self.pending.push(Pending {
            id,
            asker,
            waiting,
            reads,
        });
        self.work.push((id, work));
    }

    fn take_pending(&mut self, id: RequestId) -> Option<Pending> {
        let i = self.pending.iter().position(|p| p.id == id)?;
        Some(self.pending.remove(i))
    }

    /// The first part of a run opened from the explorer: its view reads the rest.
    fn loaded_head(&mut self, id: RequestId, run: Run, read: u64, total: u64) {
        let Some(pending) = self.take_pending(id) else {
            return;
        };
        if let Waiting::Run(_, at) = pending.waiting {
            let opened = self.push(open::reading(run, self.body_area(), read, total));
            if let Some(event) = at {
                self.deliver(opened, &Action::JumpTo(event));
            }
        }
    }

    fn loaded(&mut self, id: RequestId, result: anyhow::Result<Run>) {
        let Some(mut pending) = self.take_pending(id) else {
            return; // Asked for by a view that is gone, or superseded.
        };
        let run = match result {
            Ok(run) => run,
            Err(e) => {
                let e = format!("{e:#}");
                // A fork that never started says why itself ("the fork did not start: …").
                self.message = Some(match &pending.waiting {
                    Waiting::Fork { .. } => one_line(&e, 200),
                    _ => format!("cannot open: {}", one_line(&e, 200)),
                });
                return;
            }
        };
        match &mut pending.waiting {
            Waiting::Run(_, at) => {
                let problems = run.problems.len();
                let opened = self.push(open::run(run, self.body_area()));
                if let Some(event) = *at {
                    self.deliver(opened, &Action::JumpTo(event));
                }
                self.say_problems(problems);
            }
            // Compare's answer is `Action::Compared`.
            Waiting::Compare(_) => {}
            Waiting::Fork { view, path, .. } => {
                // "forking from step N…" is over: the fork's own view says how it goes, and
                // a browser over its folder lists it now.
                self.message = None;
                *path = Some(run.path.clone());
                self.broadcast(&Action::Written(run.path.clone()));
                // The fork's view can stop it (`x`, or leaving with it still going).
                let (stop, stopped) = std::sync::mpsc::channel();
                super::fork_work::watch_stop(id, stopped);
                let opened = self.push(open::fork(run, self.body_area(), stop, id));
                *view = Some(opened);
                self.pending.push(pending);
            }
            Waiting::Answer(..) => {}
        }
    }

    /// Runs compared in the background: their view in front, at the terminal's size.
    fn compared(&mut self, id: RequestId, view: anyhow::Result<super::action::Made>) {
        let Some(pending) = self.take_pending(id) else {
            return; // Asked for by a view that is gone, or superseded.
        };
        if !matches!(pending.waiting, Waiting::Compare(_)) {
            return;
        }
        match view {
            Ok(made) => {
                let Some(view) = made.take::<Box<dyn View + Send>>() else {
                    return;
                };
                let opened = self.push(view);
                let (w, h) = self.size;
                self.deliver(opened, &Action::Resize(w, h));
            }
            Err(e) => {
                self.message = Some(format!(
                    "cannot compare: {}",
                    one_line(&format!("{e:#}"), 200)
                ))
            }
        }
    }

    /// A fork started from the explorer ended: a browser lists its final totals, and when its
    /// view is still open, compare opens on it and the original.
    fn fork_ended(&mut self, id: RequestId) {
        let Some(pending) = self.take_pending(id) else {
            return;
        };
        let Waiting::Fork {
            original,
            view,
            path: Some(fork),
        } = pending.waiting
        else {
            return;
        };
        self.broadcast(&Action::Written(fork.clone()));
        match view.filter(|v| self.stack.iter().any(|s| s.id == *v)) {
            Some(view) => {
                self.message = Some("the fork ended: compare opens it beside its original".into());
                self.start(view, Work::Compare(vec![original, fork]));
            }
            None => {
                self.message = Some(format!(
                    "the fork ended: {}",
                    one_line(&fork.display().to_string(), 120)
                ))
            }
        }
    }

    /// True while something in a view moves by itself (play), so the loop ticks fast.
    pub fn animating(&self) -> bool {
        self.views().any(|v| v.animating())
    }

    /// Refreshes the views' derived state once, before a frame.
    pub fn settle(&mut self) {
        for slot in &mut self.stack {
            slot.view.settle();
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
            .rposition(|s| !s.view.is_overlay())
            .unwrap_or(0);
        for slot in &self.stack[screen..] {
            slot.view.draw(frame, body, theme);
        }
        let status_text = self
            .views()
            .rev()
            .find_map(|v| v.status())
            .unwrap_or_default();
        let loading = self.pending.iter().find_map(|p| match &p.waiting {
            Waiting::Run(what, _) => Some(what.clone()),
            Waiting::Compare(want) => Some(format!("loading and aligning {want} runs")),
            Waiting::Answer(_, says) => says.clone(),
            Waiting::Fork { view: None, .. } => Some("starting the fork".to_string()),
            Waiting::Fork { .. } => None,
        });
        let note = loading.or_else(|| self.message.clone());
        let help = self.keymap.hint(self.top().mode(), Command::Help);
        // What just happened comes first: a long view status must not push it off a narrow
        // screen.
        let line = match note {
            Some(n) => format!(" {n}  ·  {status_text}  ·  {help} help "),
            None => format!(" {status_text}  ·  {help} help "),
        };
        frame.render_widget(
            Paragraph::new(Line::raw(one_line(&line, status.width as usize))).style(theme.status()),
            status,
        );
    }
}
