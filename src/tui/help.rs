//! The `?` overlay: every key and what it does.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::keymap::Keymap;
use super::theme::Theme;

/// Draws the help over the middle of `area`.
pub fn draw(frame: &mut Frame, area: Rect, keymap: &Keymap, theme: &Theme) {
    let help = keymap.help();
    let height = (help.len() as u16 + 4).min(area.height);
    let width = 72.min(area.width);
    let [_, mid, _] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(height),
        Constraint::Fill(1),
    ])
    .areas(area);
    let [_, rect, _] = Layout::horizontal([
        Constraint::Fill(1),
        Constraint::Length(width),
        Constraint::Fill(1),
    ])
    .areas(mid);
    let mut lines: Vec<Line> = help
        .into_iter()
        .map(|(keys, text)| {
            Line::from(vec![
                Span::styled(format!("{keys:>18}  "), theme.title()),
                Span::raw(text),
            ])
        })
        .collect();
    lines.push(Line::styled(
        "mouse: click to select, wheel to scroll · keys: ~/.config/mcp-cosmos/keys.toml",
        theme.dim(),
    ));
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::bordered()
                .border_style(theme.focus_border())
                .title(" Keys · ? or Esc closes "),
        ),
        rect,
    );
}
