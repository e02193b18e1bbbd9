//! A page the person must open while a live run's call waits: a remote server asked for more
//! scopes than its login holds, and the new login's address is shown here (and opened with
//! `$BROWSER` when it is set). The call goes on by itself once the browser comes back; `Esc`
//! gives the login up, and the call fails saying how to step it up later.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Wrap};
use rmcp::model::{ElicitRequestParams, ElicitationAction};

use crate::tui::action::Action;
use crate::tui::keymap::Mode;
use crate::tui::overlays::overlay::framed;
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View};
use cosmos_engine::mcp::{Question, Reply};
use cosmos_trajectory::sanitize::inert;

/// State of the prompt.
#[derive(Debug)]
pub struct PagePrompt {
    message: String,
    address: String,
    /// Where "given up" goes; closed by the waiting side once the login is done. A prompt
    /// closed unanswered gives nothing up: the login may still come back.
    answer: Reply,
}

impl PagePrompt {
    /// The prompt of `question`, a page to open (a form is given back).
    pub fn new(question: Box<Question>) -> Result<Self, Box<Question>> {
        let ElicitRequestParams::UrlElicitationParams { message, url, .. } = &question.request
        else {
            return Err(question);
        };
        Ok(Self {
            message: inert(message),
            address: inert(url),
            answer: Reply::new(
                question.answer,
                ElicitationAction::Accept,
                "the prompt was closed",
            ),
        })
    }

    /// True once the waiting side no longer waits (the login came back, or the call ended).
    pub fn done(&self) -> bool {
        self.answer.done()
    }

    fn reply(&mut self, action: ElicitationAction, reason: &str, out: &mut Vec<Request>) {
        self.answer.send(action, None, reason);
        out.push(Request::Close);
    }

    fn key(&mut self, key: &KeyEvent, out: &mut Vec<Request>) {
        match key.code {
            KeyCode::Esc if !self.done() => {
                self.reply(ElicitationAction::Decline, "given up in the explorer", out)
            }
            // Once done, any key closes; before, Enter says "logged in" and waits on.
            KeyCode::Enter => self.reply(ElicitationAction::Accept, "opened in the explorer", out),
            _ if self.done() => out.push(Request::Close),
            _ => {}
        }
    }
}

impl View for PagePrompt {
    fn mode(&self) -> Mode {
        Mode::List
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        match action {
            Action::Input(key) => self.key(key, out),
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let rect = crate::tui::overlays::overlay::centered(area, 78, 12.min(area.height));
        let (state, keys) = if self.done() {
            ("Done: the call goes on.", " any key closes ")
        } else {
            (
                "Open it in a browser; the call goes on when the login comes back.",
                " Enter opened it · Esc give up ",
            )
        };
        let lines = vec![
            Line::styled(self.message.clone(), theme.title()),
            Line::raw(""),
            // Whole, so it can be copied; wrapped by the paragraph.
            Line::raw(self.address.clone()),
            Line::raw(""),
            Line::styled(state, theme.dim()),
        ];
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(framed(" A page to open ", Some(keys), theme)),
            rect,
        );
    }

    /// Its keys are its own, not the view's behind it.
    fn typing(&self) -> bool {
        true
    }

    fn is_overlay(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt() -> (
        PagePrompt,
        tokio::sync::oneshot::Receiver<cosmos_engine::mcp::Answer>,
    ) {
        let (answer, waiting) = tokio::sync::oneshot::channel();
        let question = Question {
            server: "prot".into(),
            tool: None,
            request: ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: "prot asks for scope \"admin\"\u{1b}[31m".into(),
                url: "http://127.0.0.1:1/authorize?scope=admin".into(),
                elicitation_id: "cosmos-login-prot".into(),
            },
            answer,
        };
        (
            PagePrompt::new(Box::new(question)).expect("a page"),
            waiting,
        )
    }

    #[test]
    fn esc_gives_the_login_up_and_enter_waits_on() {
        let (mut page, mut waiting) = prompt();
        assert!(!page.message.contains('\u{1b}'), "made inert");
        let mut out = Vec::new();
        page.key(&KeyEvent::from(KeyCode::Char('x')), &mut out);
        assert!(
            out.is_empty(),
            "a stray key does nothing while the login is open"
        );
        page.key(&KeyEvent::from(KeyCode::Esc), &mut out);
        let said = waiting.try_recv().expect("answered");
        assert_eq!(said.action, ElicitationAction::Decline);
        assert_eq!(said.reason, "given up in the explorer");
        assert!(matches!(out.as_slice(), [Request::Close]));

        let (mut page, mut waiting) = prompt();
        page.key(&KeyEvent::from(KeyCode::Enter), &mut Vec::new());
        assert_eq!(
            waiting.try_recv().expect("answered").action,
            ElicitationAction::Accept
        );
    }

    #[test]
    fn once_the_login_is_back_any_key_closes() {
        let (mut page, waiting) = prompt();
        assert!(!page.done());
        drop(waiting);
        assert!(page.done());
        let mut out = Vec::new();
        page.key(&KeyEvent::from(KeyCode::Esc), &mut out);
        assert!(matches!(out.as_slice(), [Request::Close]));
    }
}
