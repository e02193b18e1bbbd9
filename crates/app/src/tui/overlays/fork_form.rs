//! The short form `b` (branch) opens on a step of a finished run: how the fork runs (agent,
//! world model, tools real or recorded, where a miss goes), the original's settings filled in.
//! Its answer goes back to the run view behind it as [`Action::Fork`]; the planner and its
//! endpoint are the explorer's own (`--config`, else `OPENAI_*`), as for `cosmos run`.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::tui::action::Action;
use crate::tui::fork_spec::ForkChoice;
use crate::tui::keymap::{Command, Mode};
use crate::tui::overlays::overlay::framed;
use crate::tui::theme::Theme;
use crate::tui::view::{Context, Handled, Request, View};
use cosmos_trajectory::sanitize::one_line;

/// One line of the form: its name, its choices, the chosen one.
#[derive(Debug, Clone)]
struct Field {
    name: &'static str,
    choices: Vec<String>,
    chosen: usize,
}

impl Field {
    fn new(name: &'static str, choices: Vec<String>, default: &str) -> Self {
        let chosen = choices.iter().position(|c| c == default).unwrap_or(0);
        Self {
            name,
            choices,
            chosen,
        }
    }

    fn value(&self) -> &str {
        &self.choices[self.chosen]
    }
}

/// State of the form.
#[derive(Debug, Clone)]
pub struct ForkForm {
    at: u64,
    fields: Vec<Field>,
    /// The field ↑/↓ is on.
    pub selected: usize,
}

const AGENT: usize = 0;
const WORLD_MODEL: usize = 1;
const TOOLS: usize = 2;
const ON_MISS: usize = 3;

impl ForkForm {
    /// A form for a fork at step `at`, filled in with the original's `agent` and
    /// `world_model`, offering the world models `world_models` and real tools only when
    /// `servers` (an MCP config) are at hand.
    pub fn new(
        at: u64,
        agent: &str,
        world_model: &str,
        world_models: &[String],
        servers: bool,
    ) -> Self {
        let mut models = vec!["none".to_string()];
        models.extend(world_models.iter().cloned());
        let tools = if servers {
            vec!["real".to_string(), "recorded".to_string()]
        } else {
            vec!["recorded".to_string()]
        };
        let on_miss: Vec<String> = if servers {
            vec!["error".into(), "real".into(), "world-model".into()]
        } else {
            vec!["error".into(), "world-model".into()]
        };
        Self {
            at,
            fields: vec![
                Field::new(
                    "agent",
                    vec!["react".into(), "plan-exec".into(), "spiral".into()],
                    &agent.replace('_', "-"),
                ),
                Field::new("world model", models, world_model),
                Field::new("tools", tools, "real"),
                Field::new("on a miss", on_miss, "error"),
            ],
            selected: 0,
        }
    }

    /// The choice as it stands.
    pub fn choice(&self) -> ForkChoice {
        ForkChoice {
            at: self.at,
            agent: self.fields[AGENT].value().to_string(),
            world_model: self.fields[WORLD_MODEL].value().to_string(),
            tools: self.fields[TOOLS].value().to_string(),
            on_miss: self.fields[ON_MISS].value().to_string(),
        }
    }

    /// Why the choice cannot run, if it cannot (said before anything starts).
    fn problem(&self) -> Option<&'static str> {
        let c = self.choice();
        if c.agent != "react" && c.world_model == "none" {
            return Some("this agent rehearses in a world model: pick one");
        }
        if c.tools == "recorded" && c.on_miss == "world-model" && c.world_model == "none" {
            return Some("a miss answered by the world model needs one: pick it");
        }
        None
    }

    /// The fields shown: "on a miss" only with recorded tools.
    fn shown(&self) -> usize {
        if self.fields[TOOLS].value() == "recorded" {
            self.fields.len()
        } else {
            ON_MISS
        }
    }

    fn key(&mut self, key: &KeyEvent, out: &mut Vec<Request>) {
        let shown = self.shown();
        match key.code {
            KeyCode::Up | KeyCode::BackTab => {
                self.selected = (self.selected + shown - 1) % shown;
            }
            KeyCode::Down | KeyCode::Tab => self.selected = (self.selected + 1) % shown,
            KeyCode::Left | KeyCode::Right | KeyCode::Char(' ') => {
                let field = &mut self.fields[self.selected];
                let n = field.choices.len();
                field.chosen = if key.code == KeyCode::Left {
                    (field.chosen + n - 1) % n
                } else {
                    (field.chosen + 1) % n
                };
                self.selected = self.selected.min(self.shown() - 1);
            }
            KeyCode::Enter => match self.problem() {
                Some(why) => out.push(Request::Say(why.into())),
                None => out.push(Request::CloseThen(Action::Fork(self.choice()))),
            },
            KeyCode::Esc | KeyCode::Char('q') => out.push(Request::Close),
            _ => {}
        }
    }
}

impl View for ForkForm {
    fn mode(&self) -> Mode {
        Mode::List
    }

    fn update(&mut self, action: &Action, _cx: Context, out: &mut Vec<Request>) -> Handled {
        match action {
            Action::Input(key) => self.key(key, out),
            Action::Do(Command::Back | Command::Quit) => out.push(Request::Close),
            _ => return Handled::Ignored,
        }
        Handled::Consumed
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let shown = self.shown();
        // The fields, a blank line, the planner's line, a problem, and the borders.
        let rect = crate::tui::overlays::overlay::centered(area, 64, shown as u16 + 5);
        let mut lines: Vec<Line> = self.fields[..shown]
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let line = Line::from(vec![
                    Span::styled(format!(" {:<12}", f.name), theme.dim()),
                    Span::raw(one_line(&format!("◂ {} ▸", f.value()), 48)),
                ]);
                if i == self.selected {
                    line.style(theme.selected())
                } else {
                    line
                }
            })
            .collect();
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            " planner: the explorer's endpoint (--config, else OPENAI_*)",
            theme.dim(),
        ));
        if let Some(why) = self.problem() {
            lines.push(Line::styled(format!(" {why}"), theme.error()));
        }
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines).block(framed(
                format!(" Fork from step {} ", self.at),
                Some(" ↑/↓ field · ←/→ change · Enter fork · Esc cancel "),
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
