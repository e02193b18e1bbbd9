//! Which view shows what background work loaded: a run opens in the run view, a wm-eval file
//! in the world-model view, runs to compare in the compare view. The app calls this and names
//! no view itself; a new kind of file gets its view here.

use std::sync::mpsc::Sender;

use ratatui::layout::Rect;

use super::action::RequestId;
use super::view::View;
use super::views::compare::CompareView;
use super::views::run_view::RunView;
use super::views::wm_eval_view::WmEvalView;
use cosmos_trajectory::event::AgentKind;
use cosmos_trajectory::run::Run;

/// The view a loaded run opens in: the world-model view for a wm-eval file, the run view
/// otherwise. `area` is the screen's body (all but the status line).
pub fn run(run: Run, area: Rect) -> Box<dyn View> {
    if run.header.agent.kind == AgentKind::WmEval {
        Box::new(WmEvalView::new(&run, (area.width, area.height + 1)))
    } else {
        Box::new(RunView::opened(run, area))
    }
}

/// The run view of a run whose first part is read (`read` of `total` bytes); the rest comes
/// to it as `Action::RunRead`.
pub fn reading(run: Run, area: Rect, read: u64, total: u64) -> Box<dyn View> {
    Box::new(RunView::reading(run, area, read, total))
}

/// The run view of a fork being made (request `id`), which `stop` stops.
pub fn fork(run: Run, area: Rect, stop: Sender<()>, id: RequestId) -> Box<dyn View> {
    Box::new(RunView::fork(run, area, stop, id))
}

/// What the status line says when reading a run found `problems` (skipped lines and the
/// like): the figures leave those lines out.
pub fn problems_said(problems: usize) -> Option<String> {
    super::views::run_view::problems_said(problems)
}

/// The view of runs side by side; `size` is the terminal's.
pub fn compare(runs: &[Run], size: (u16, u16)) -> Box<dyn View + Send> {
    Box::new(CompareView::new(runs, size))
}
