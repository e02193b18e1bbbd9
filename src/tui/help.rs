//! The `?` overlay: every key and what it does.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::keymap::Keymap;
use super::theme::Theme;

/// Draws the help over the middle of `area`, scrolled down by `scroll` lines (clamped so
/// the last line stays in view).
pub fn draw(frame: &mut Frame, area: Rect, keymap: &Keymap, scroll: usize, theme: &Theme) {
    let mut lines: Vec<Line> = keymap
        .help()
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
    let height = (lines.len() as u16 + 2).min(area.height);
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
    let visible = height.saturating_sub(2) as usize;
    let hidden = lines.len().saturating_sub(visible);
    let scroll = scroll.min(hidden);
    let title = if hidden == 0 {
        " Keys · ? or Esc closes ".to_string()
    } else {
        format!(
            " Keys · ↑↓ scroll ({} more below) · ? or Esc closes ",
            hidden - scroll
        )
    };
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).scroll((scroll as u16, 0)).block(
            Block::bordered()
                .border_style(theme.focus_border())
                .title(title),
        ),
        rect,
    );
}
