//! A server's request for input (MCP elicitation) while a live run's call is waiting: a form
//! built from the requested schema, its defaults filled in, that the person accepts (after
//! editing), declines or cancels. The answer goes straight back to the waiting call; the run
//! records the request and the answer with the call.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};
use rmcp::model::ElicitationAction;
use serde_json::{Map, Value};

use crate::tui::action::Action;
use crate::tui::keymap::Mode;
use crate::tui::overlays::overlay::framed;
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View};
use cosmos_engine::mcp::{Question, Reply};
use cosmos_trajectory::sanitize::one_line;

/// What a field holds.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Text,
    Integer,
    Number,
    Boolean,
    /// One of these values.
    Choice(Vec<String>),
}

/// One field of the form.
#[derive(Debug, Clone)]
struct Field {
    name: String,
    label: String,
    kind: Kind,
    value: String,
    required: bool,
}

/// State of the form.
#[derive(Debug)]
pub struct ElicitForm {
    /// Who asks: the server (its name in `mcp.json`), and the tool whose call waits, when
    /// known.
    asker: String,
    message: String,
    fields: Vec<Field>,
    /// The field the keys edit.
    pub selected: usize,
    problem: Option<String>,
    /// The answer goes there; a form closed unanswered declines.
    answer: Reply,
}

impl ElicitForm {
    /// The form of `question`.
    pub fn new(question: Question) -> Self {
        let schema = &question.requested();
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut fields = Vec::new();
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, p) in properties {
                let choices: Option<Vec<String>> = p
                    .get("enum")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(String::from))
                            .collect()
                    })
                    .or_else(|| {
                        p.get("oneOf").and_then(Value::as_array).map(|a| {
                            a.iter()
                                .filter_map(|o| o.get("const").and_then(Value::as_str))
                                .map(String::from)
                                .collect()
                        })
                    });
                let kind = match (choices, p.get("type").and_then(Value::as_str)) {
                    (Some(c), _) if !c.is_empty() => Kind::Choice(c),
                    (_, Some("boolean")) => Kind::Boolean,
                    (_, Some("integer")) => Kind::Integer,
                    (_, Some("number")) => Kind::Number,
                    _ => Kind::Text,
                };
                let value = match p.get("default") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => match &kind {
                        Kind::Boolean => "false".into(),
                        Kind::Choice(c) => c[0].clone(),
                        _ => String::new(),
                    },
                    Some(other) => other.to_string(),
                };
                let label = p
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or(name)
                    .to_string();
                fields.push(Field {
                    required: required.contains(&name.as_str()),
                    name: name.clone(),
                    label,
                    kind,
                    value,
                });
            }
        }
        Self {
            asker: match &question.tool {
                Some(tool) => format!("{} (its call of {tool})", question.server),
                None => question.server.clone(),
            },
            message: question.message().to_string(),
            fields,
            selected: 0,
            problem: None,
            answer: Reply::new(
                question.answer,
                ElicitationAction::Decline,
                "the form was closed unanswered",
            ),
        }
    }

    /// The content the form holds now, or what is wrong with it.
    pub fn content(&self) -> Result<Value, String> {
        let mut content = Map::new();
        for f in &self.fields {
            if f.value.is_empty() {
                if f.required {
                    return Err(format!("{} is required", f.label));
                }
                continue;
            }
            let value = match f.kind {
                Kind::Text | Kind::Choice(_) => Value::String(f.value.clone()),
                Kind::Boolean => Value::Bool(f.value == "true"),
                Kind::Integer => f
                    .value
                    .trim()
                    .parse::<i64>()
                    .map(Value::from)
                    .map_err(|_| format!("{} must be a whole number", f.label))?,
                Kind::Number => f
                    .value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| format!("{} must be a number", f.label))?,
            };
            content.insert(f.name.clone(), value);
        }
        Ok(Value::Object(content))
    }

    fn reply(&mut self, action: ElicitationAction, content: Option<Value>, out: &mut Vec<Request>) {
        self.answer
            .send(action, content, "answered in the explorer");
        out.push(Request::Close);
    }

    fn key(&mut self, key: &KeyEvent, out: &mut Vec<Request>) {
        let n = self.fields.len().max(1);
        match key.code {
            KeyCode::Enter => match self.content() {
                Ok(content) => self.reply(ElicitationAction::Accept, Some(content), out),
                Err(why) => self.problem = Some(why),
            },
            KeyCode::Esc => self.reply(ElicitationAction::Decline, None, out),
            KeyCode::Char('x') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.reply(ElicitationAction::Cancel, None, out)
            }
            KeyCode::Up | KeyCode::BackTab => self.selected = (self.selected + n - 1) % n,
            KeyCode::Down | KeyCode::Tab => self.selected = (self.selected + 1) % n,
            _ => {
                let Some(f) = self.fields.get_mut(self.selected) else {
                    return;
                };
                match (&f.kind, key.code) {
                    (Kind::Boolean, KeyCode::Char(' ') | KeyCode::Left | KeyCode::Right) => {
                        f.value = if f.value == "true" { "false" } else { "true" }.into();
                    }
                    (Kind::Choice(c), KeyCode::Char(' ') | KeyCode::Right | KeyCode::Left) => {
                        let at = c.iter().position(|v| *v == f.value).unwrap_or(0);
                        let next = if key.code == KeyCode::Left {
                            (at + c.len() - 1) % c.len()
                        } else {
                            (at + 1) % c.len()
                        };
                        f.value = c[next].clone();
                    }
                    (Kind::Text | Kind::Integer | Kind::Number, KeyCode::Backspace) => {
                        f.value.pop();
                    }
                    (Kind::Text | Kind::Integer | Kind::Number, KeyCode::Char(ch))
                        if !key.modifiers.contains(KeyModifiers::CONTROL) =>
                    {
                        f.value.push(ch);
                    }
                    _ => {}
                }
                self.problem = None;
            }
        }
    }
}

impl View for ElicitForm {
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
        // The message, a blank line, the fields, a blank line, a problem, the borders.
        let height = (self.fields.len() as u16 + 6).min(area.height);
        let rect = crate::tui::overlays::overlay::centered(area, 72, height);
        let width = rect.width.saturating_sub(4) as usize;
        let mut lines = vec![
            Line::styled(one_line(&self.message, width), theme.title()),
            Line::raw(""),
        ];
        for (i, f) in self.fields.iter().enumerate() {
            let mark = if f.required { "*" } else { " " };
            let value = match f.kind {
                Kind::Boolean | Kind::Choice(_) => format!("◂ {} ▸", f.value),
                _ => format!("{}▏", f.value),
            };
            let line = Line::from(vec![
                Span::styled(
                    format!("{mark}{:<18} ", one_line(&f.label, 18)),
                    theme.dim(),
                ),
                Span::raw(one_line(&value, width.saturating_sub(20))),
            ]);
            lines.push(if i == self.selected {
                line.style(theme.selected())
            } else {
                line
            });
        }
        lines.push(Line::raw(""));
        if let Some(why) = &self.problem {
            lines.push(Line::styled(one_line(why, width), theme.error()));
        }
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(framed(
                    format!(
                        " {} asks for input (* required) ",
                        one_line(&self.asker, 60)
                    ),
                    Some(" Enter accept · Esc decline · Ctrl-X cancel · ↑/↓ field · Space "),
                    theme,
                )),
            rect,
        );
    }

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
    use serde_json::json;

    #[test]
    fn a_field_that_is_not_a_number_keeps_the_form_open_and_says_why() {
        let (answer, mut waiting) = tokio::sync::oneshot::channel();
        let mut form = ElicitForm::new(
            Question::form(
                "test",
                "How old?",
                json!({"type": "object", "properties": {
                "age": {"type": "integer", "title": "Age"}
            }, "required": ["age"]}),
                answer,
            )
            .expect("a form schema"),
        );
        let mut out = Vec::new();
        form.key(&KeyEvent::from(KeyCode::Enter), &mut out);
        assert_eq!(form.problem.as_deref(), Some("Age is required"));
        for ch in "ten".chars() {
            form.key(&KeyEvent::from(KeyCode::Char(ch)), &mut out);
        }
        form.key(&KeyEvent::from(KeyCode::Enter), &mut out);
        assert_eq!(form.problem.as_deref(), Some("Age must be a whole number"));
        assert!(out.is_empty(), "still open");
        assert!(waiting.try_recv().is_err(), "nothing answered yet");
        for _ in 0..3 {
            form.key(&KeyEvent::from(KeyCode::Backspace), &mut out);
        }
        form.key(&KeyEvent::from(KeyCode::Char('7')), &mut out);
        form.key(&KeyEvent::from(KeyCode::Enter), &mut out);
        let answered = waiting.try_recv().expect("answered");
        assert_eq!(answered.action, ElicitationAction::Accept);
        assert_eq!(answered.content, Some(json!({"age": 7})));
        assert_eq!(answered.reason, "answered in the explorer");
    }
}
