//! Where overlays sit: the one place the centred box and the inset panel are laid out.

use ratatui::layout::{Constraint, Layout, Rect};

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
