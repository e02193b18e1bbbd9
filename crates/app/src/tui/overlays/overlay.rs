//! Where overlays sit and how they are framed: the one place the centred box, the inset panel
//! and the overlay's border are laid out.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Block;

use crate::tui::theme::Theme;

/// A box of at most `width`×`height` in the middle of `area`.
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [_, mid, _] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(height.min(area.height)),
        Constraint::Fill(1),
    ])
    .areas(area);
    let [_, rect, _] = Layout::horizontal([
        Constraint::Fill(1),
        Constraint::Length(width.min(area.width)),
        Constraint::Fill(1),
    ])
    .areas(mid);
    rect
}

/// The body of a terminal of `size` (all but the status line), less a one-cell margin: where
/// the inspectors draw.
pub fn inset(size: (u16, u16)) -> Rect {
    let area = Rect::new(0, 0, size.0, size.1.saturating_sub(1));
    let [_, mid, _] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let [_, rect, _] = Layout::horizontal([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(mid);
    rect
}

/// The border every overlay is drawn in, in the focus colour: `title` on top, the overlay's
/// `keys` (when it lists them) at the bottom.
pub fn framed<'a>(title: impl Into<Line<'a>>, keys: Option<&'a str>, theme: &Theme) -> Block<'a> {
    let block = Block::bordered()
        .border_style(theme.focus_border())
        .title(title);
    match keys {
        Some(keys) => block.title_bottom(Line::styled(keys, theme.dim())),
        None => block,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_fit_their_area() {
        let area = Rect::new(0, 0, 80, 23);
        assert_eq!(centered(area, 40, 10), Rect::new(20, 7, 40, 10));
        assert_eq!(centered(area, 200, 100), area);
        assert_eq!(inset((80, 24)), Rect::new(1, 1, 78, 21));
    }
}
