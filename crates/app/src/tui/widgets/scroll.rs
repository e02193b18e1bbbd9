//! The one scrolling and selection arithmetic every pane uses: a view of `len` rows, `height`
//! of them on screen. Nothing scrolls past its content, and every pane can say where it is.

use crate::tui::keymap::Command;

/// A scroll position over rows that are read, not selected (inspectors, help, observation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scroll {
    /// The first row on screen.
    pub offset: usize,
}

impl Scroll {
    /// The largest offset that still fills the screen.
    pub fn last(len: usize, height: usize) -> usize {
        len.saturating_sub(height.max(1))
    }

    /// Moves by `delta` rows, kept within the content.
    pub fn by(&mut self, delta: isize, len: usize, height: usize) {
        self.offset = self
            .offset
            .saturating_add_signed(delta)
            .min(Self::last(len, height));
    }

    /// Brings `row` on screen, moving as little as possible.
    pub fn show(&mut self, row: usize, height: usize) {
        let height = height.max(1);
        if row < self.offset {
            self.offset = row;
        } else if row >= self.offset + height {
            self.offset = row + 1 - height;
        }
    }

    /// The offset kept within the content after it shrank or the screen grew.
    pub fn clamp(&mut self, len: usize, height: usize) {
        self.offset = self.offset.min(Self::last(len, height));
    }

    /// Where the view is, for a title: `12–31/120`, or `all 7` when everything shows.
    pub fn position(&self, len: usize, height: usize) -> String {
        if len <= height {
            return format!("all {len}");
        }
        let last = (self.offset + height).min(len);
        format!("{}–{last}/{len}", self.offset + 1)
    }
}

/// A selected row in a list that scrolls to keep it on screen (browser, tree).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Selection {
    /// The selected row.
    pub selected: usize,
    /// The scroll position.
    pub scroll: Scroll,
}

impl Selection {
    /// Moves the selection by `delta` within `len` rows and keeps it on screen.
    pub fn by(&mut self, delta: isize, len: usize, height: usize) {
        self.select(self.selected.saturating_add_signed(delta), len, height);
    }

    /// Selects `row` (kept within `len`) and keeps it on screen.
    pub fn select(&mut self, row: usize, len: usize, height: usize) {
        self.selected = row.min(len.saturating_sub(1));
        self.settle(len, height);
    }

    /// After the rows or the screen changed: selection within the rows, on screen, and no
    /// empty space below the last row.
    pub fn settle(&mut self, len: usize, height: usize) {
        self.selected = self.selected.min(len.saturating_sub(1));
        self.scroll.show(self.selected, height);
        self.scroll.clamp(len, height);
    }

    /// Moves the selection as a list's movement commands say (up, down, a page, top, bottom);
    /// false for any other command.
    pub fn navigate(&mut self, command: Command, len: usize, page: usize) -> bool {
        match command {
            Command::Up => self.by(-1, len, page),
            Command::Down => self.by(1, len, page),
            Command::PageUp => self.by(-(page as isize), len, page),
            Command::PageDown => self.by(page as isize, len, page),
            Command::Top => self.select(0, len, page),
            Command::Bottom => self.select(len, len, page),
            _ => return false,
        }
        true
    }

    /// The lines of a list of `len` rows, `height` on screen, as drawn: the rows scrolled to,
    /// each made by `row` from its index, the selected one in `selected`'s style.
    pub fn lines(
        &self,
        len: usize,
        height: usize,
        row: impl Fn(usize) -> String,
        selected: ratatui::style::Style,
    ) -> Vec<ratatui::text::Line<'static>> {
        (self.scroll.offset..len.min(self.scroll.offset + height))
            .map(|i| {
                let line = ratatui::text::Line::raw(row(i));
                if i == self.selected {
                    line.style(selected)
                } else {
                    line
                }
            })
            .collect()
    }

    /// The row under a click `row_on_screen` rows below the first one shown, if any.
    pub fn row_at(&self, row_on_screen: usize, len: usize) -> Option<usize> {
        let row = self.scroll.offset + row_on_screen;
        (row < len).then_some(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_scrolls_past_the_content() {
        let mut s = Scroll::default();
        s.by(1000, 30, 10);
        assert_eq!(s.offset, 20);
        assert_eq!(s.position(30, 10), "21–30/30");
        s.by(-5, 30, 10);
        assert_eq!(s.offset, 15);
        s.clamp(12, 10);
        assert_eq!(s.offset, 2);
        assert_eq!(Scroll::default().position(5, 10), "all 5");
        s.by(isize::MIN, 30, 10);
        assert_eq!(s.offset, 0);
    }

    #[test]
    fn the_selection_stays_on_screen_and_in_the_list() {
        let mut sel = Selection::default();
        sel.by(15, 40, 10);
        assert_eq!((sel.selected, sel.scroll.offset), (15, 6));
        sel.by(-12, 40, 10);
        assert_eq!((sel.selected, sel.scroll.offset), (3, 3));
        sel.by(100, 40, 10);
        assert_eq!((sel.selected, sel.scroll.offset), (39, 30));
        // The list shrinks under the selection.
        sel.settle(5, 10);
        assert_eq!((sel.selected, sel.scroll.offset), (4, 0));
        assert_eq!(sel.row_at(2, 5), Some(2));
        assert_eq!(sel.row_at(7, 5), None);
        sel.settle(0, 10);
        assert_eq!(sel.selected, 0);
    }
}
