//! The run's notes (`L` in the run view): every `annotation` event, oldest first, with who
//! wrote it and what it is about; the selected note whole below the list; Enter puts the run's
//! cursor at what the note is about.
//!
//! It is also the example of adding a view: this file and the one key
//! that opens it (`RunView::update_command`, `Command::Notes`) are all it took.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};

use crate::tui::action::Action;
use crate::tui::keymap::{Command, Mode};
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View};
use crate::tui::widgets::scroll::Selection;
use crate::tui::widgets::wrap::wrap_line;
use cosmos_trajectory::event::EventBody;
use cosmos_trajectory::lean::LeanBody;
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize::one_line;

/// One note as the list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// When it was written, on the run's clock.
    pub t_ms: u64,
    /// Who wrote it.
    pub who: String,
    /// What it is about, in words (`#4`, `event 12`, `the run`).
    pub about: String,
    /// The note.
    pub text: String,
    /// The event (by index) the cursor goes to: the one the note names, else the node's
    /// first, else the note itself.
    pub go_to: usize,
}

/// The list of a run's notes.
#[derive(Debug, Clone)]
pub struct NotesView {
    notes: Vec<Note>,
    /// The chosen note.
    pub(crate) selection: Selection,
    area: Rect,
}

/// Rows of the box that are not notes: borders and the selected note's text below the list.
const CHROME: u16 = 2 + 1 + DETAIL;
/// Lines for the selected note whole.
const DETAIL: u16 = 4;

impl NotesView {
    /// The notes of `run` (annotations are kept whole in memory, so this reads no file),
    /// for a screen body of `area`.
    pub fn new(run: &Run, area: Rect) -> Self {
        let notes = run
            .briefs()
            .iter()
            .enumerate()
            .filter_map(|(at, brief)| {
                let LeanBody::Full(event) = &brief.body else {
                    return None;
                };
                let EventBody::Annotation {
                    node,
                    event,
                    text,
                    who,
                } = &event.body
                else {
                    return None;
                };
                let by_seq =
                    event.and_then(|seq| run.briefs().binary_search_by_key(&seq, |b| b.seq).ok());
                let by_node = node
                    .and_then(|id| run.slot_of(id))
                    .map(|slot| run.nodes()[slot as usize].added_at as usize);
                let about = match (node, event) {
                    (Some(n), _) => format!("#{n}"),
                    (None, Some(seq)) => format!("event {seq}"),
                    (None, None) => "the run".to_string(),
                };
                Some(Note {
                    t_ms: brief.t_ms,
                    who: who.clone(),
                    about,
                    text: text.clone(),
                    go_to: by_seq.or(by_node).unwrap_or(at),
                })
            })
            .collect();
        Self {
            notes,
            selection: Selection::default(),
            area,
        }
    }

    /// The notes, oldest first.
    pub fn notes(&self) -> &[Note] {
        &self.notes
    }

    /// The box in a screen body of `area`.
    fn frame(&self, area: Rect) -> Rect {
        let wanted = (self.notes.len() as u16).max(1) + CHROME;
        crate::tui::overlays::overlay::centered(area, 100, wanted)
    }

    /// Rows of notes the box shows at once.
    fn page(&self) -> usize {
        self.frame(self.area).height.saturating_sub(CHROME).max(1) as usize
    }
}

impl View for NotesView {
    fn mode(&self) -> Mode {
        Mode::List
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        let (len, page) = (self.notes.len(), self.page());
        match action {
            Action::Do(command) if self.selection.navigate(*command, len, page) => {}
            Action::Do(Command::Open) => match self.notes.get(self.selection.selected) {
                Some(note) => out.push(Request::CloseThen(Action::JumpTo(note.go_to))),
                None => out.push(Request::Close),
            },
            Action::Do(Command::Back | Command::Quit) => out.push(Request::Close),
            Action::Resize(w, h) => {
                self.area = Rect::new(0, 0, *w, h.saturating_sub(1));
                self.selection.settle(len, self.page());
            }
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let rect = self.frame(area);
        let block = Block::bordered()
            .border_style(theme.focus_border())
            .title(format!(" Notes ({}) ", self.notes.len()))
            .title_bottom(Line::styled(" Enter go to · Esc close ", theme.dim()));
        let inner = block.inner(rect);
        frame.render_widget(Clear, rect);
        frame.render_widget(block, rect);
        let [list, _, detail] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(1),
            Constraint::Length(DETAIL),
        ])
        .areas(inner);
        let width = list.width as usize;
        if self.notes.is_empty() {
            let hint = "No notes yet: A on a node or an event writes one.";
            frame.render_widget(Paragraph::new(Line::styled(hint, theme.dim())), list);
            return;
        }
        let row = |i: usize| {
            let n = &self.notes[i];
            let row = format!(
                "{:>7.1}s  {:<10} {:<10} {}",
                n.t_ms as f64 / 1000.0,
                one_line(&n.about, 10),
                one_line(&n.who, 10),
                one_line(&n.text, width)
            );
            one_line(&row, width)
        };
        let lines = self.selection.lines(
            self.notes.len(),
            list.height as usize,
            row,
            theme.selected(),
        );
        frame.render_widget(Paragraph::new(lines), list);
        if let Some(note) = self.notes.get(self.selection.selected) {
            let text = cosmos_trajectory::sanitize::inert(&note.text);
            let mut shown: Vec<Line> = wrap_line(&text, width.max(1))
                .into_iter()
                .take(DETAIL as usize)
                .map(Line::raw)
                .collect();
            if shown.is_empty() {
                shown.push(Line::raw(""));
            }
            frame.render_widget(Paragraph::new(shown), detail);
        }
    }

    fn is_overlay(&self) -> bool {
        true
    }
}
