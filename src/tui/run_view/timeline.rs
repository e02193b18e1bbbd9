//! The timeline pane: the events around the cursor, one line each.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::tree::{action_label, call_label};
use crate::trajectory::event::{Event, EventBody};
use crate::trajectory::run::Run;
use crate::tui::text::one_line;
use crate::tui::theme::Theme;

/// Draws the window of events around cursor `k` (the last applied event is `k − 1`).
pub fn draw(frame: &mut Frame, area: Rect, block: Block, run: &Run, k: usize, theme: &Theme) {
    let inner = block.inner(area);
    let height = inner.height as usize;
    let width = inner.width as usize;
    let current = k.checked_sub(1);
    // Keep the cursor a third of the way down, so what comes next is visible.
    let anchor = current.unwrap_or(0);
    let start = anchor
        .saturating_sub(height / 3)
        .min(run.len().saturating_sub(height));
    let mut lines: Vec<Line> = Vec::with_capacity(height);
    if k == 0 {
        lines.push(Line::styled(
            "▶ start (no event applied; → to step)",
            theme.touched(),
        ));
    }
    for (i, event) in run
        .events
        .iter()
        .enumerate()
        .skip(start)
        .take(height.saturating_sub(lines.len()))
    {
        // Narrow panes drop the time column: what happened matters more than when.
        let head = if width >= 70 {
            format!(
                "{:>6} {:>9} {:<15} ",
                event.seq,
                format_ms(event.t_ms),
                event.body.kind()
            )
        } else {
            format!("{:>6} {:<14} ", event.seq, event.body.kind())
        };
        let summary = one_line(
            &summary(event),
            width.saturating_sub(head.chars().count()).max(4),
        );
        let style = if event.body.is_failure() {
            theme.error()
        } else if i >= k {
            theme.dim()
        } else {
            theme.text()
        };
        let mut line = Line::from(vec![
            Span::styled(head, style),
            Span::styled(summary, style),
        ]);
        if Some(i) == current {
            line = line.patch_style(theme.selected());
        }
        lines.push(line);
    }
    if run.is_empty() {
        lines.push(Line::styled("no events", theme.dim()));
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// `m:ss.s` for a time offset.
pub fn format_ms(ms: u64) -> String {
    format!("{}:{:04.1}", ms / 60_000, (ms % 60_000) as f64 / 1000.0)
}

/// A one-line description of an event.
pub fn summary(event: &Event) -> String {
    match &event.body {
        EventBody::Phase { phase } => phase.as_str().to_string(),
        EventBody::LlmCall {
            role,
            model,
            prompt_tokens,
            completion_tokens,
            latency_ms,
            error,
            ..
        } => {
            let mut s = format!(
                "{} {model} {prompt_tokens}+{completion_tokens} tok {latency_ms} ms",
                role.as_str()
            );
            if let Some(e) = error {
                s.push_str(&format!(" ERROR {e}"));
            }
            s
        }
        EventBody::NodeAdded {
            node,
            parent,
            action,
            ..
        } => format!(
            "#{node} ← {} {}",
            parent.map_or("—".into(), |p| format!("#{p}")),
            action.as_ref().map_or("root".into(), action_label)
        ),
        EventBody::NodeSimulated {
            node,
            world_model,
            observation,
            ..
        } => format!(
            "#{node} by {world_model}{}: {}",
            if observation.is_error { " (error)" } else { "" },
            observation.text
        ),
        EventBody::NodeEvaluated {
            node,
            verdict,
            reward,
            critic_reward,
            ..
        } => format!(
            "#{node} {verdict:?} reward {reward:.2}{}",
            critic_reward.map_or(String::new(), |c| format!(" (critic {c:.2})"))
        ),
        EventBody::Backpropagated { path, value } => format!(
            "{value:+.2} along {}",
            path.iter()
                .map(|n| format!("#{n}"))
                .collect::<Vec<_>>()
                .join("→")
        ),
        EventBody::PlanSelected { nodes, rule } => format!(
            "{rule}: {}",
            nodes
                .iter()
                .map(|n| format!("#{n}"))
                .collect::<Vec<_>>()
                .join("→")
        ),
        EventBody::ToolCalled {
            step,
            tool,
            arguments,
            result,
            error,
            latency_ms,
            ..
        } => {
            let outcome = match error {
                Some(e) => format!("ERROR {e}"),
                None if result.is_error => format!("ERROR {}", result.text),
                None => result.text.clone(),
            };
            format!(
                "{step}. {} {latency_ms} ms → {outcome}",
                call_label(tool, arguments)
            )
        }
        EventBody::Answer { text } => text.clone(),
        EventBody::JudgeScored { model, .. } => format!("by {model}"),
        EventBody::Error {
            source,
            name,
            message,
            ..
        } => {
            format!(
                "{source}{}: {message}",
                name.as_ref().map_or(String::new(), |n| format!(" {n}"))
            )
        }
        EventBody::RunFinished { status, error, .. } => {
            format!(
                "{}{}",
                status.as_str(),
                error.as_ref().map_or(String::new(), |e| format!(": {e}"))
            )
        }
        EventBody::Unknown { kind, .. } => format!("(unknown kind {kind})"),
    }
}
