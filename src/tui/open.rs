//! Which view shows what background work loaded: a run opens in the run view, a wm-eval file
//! in the world-model view, runs to compare in the compare view. The app calls this and names
//! no view itself; a new kind of file gets its view here.

use ratatui::layout::Rect;

use super::compare::CompareView;
use super::run_view::RunView;
use super::view::View;
use super::wm_eval_view::WmEvalView;
use crate::trajectory::event::AgentKind;
use crate::trajectory::run::Run;

/// The view a loaded run opens in: the world-model view for a wm-eval file, the run view
/// otherwise. `area` is the screen's body (all but the status line).
pub fn run(run: Run, area: Rect) -> Box<dyn View> {
    if run.header.agent.kind == AgentKind::WmEval {
        Box::new(WmEvalView::new(&run, (area.width, area.height + 1)))
    } else {
        Box::new(RunView::opened(run, area))
    }
}

/// The view of runs side by side; `size` is the terminal's.
pub fn compare(runs: &[Run], size: (u16, u16)) -> Box<dyn View + Send> {
    Box::new(CompareView::new(runs, size))
}
