//! `b` (branch): fork the run from a step. The form asks how (agent, world model, tools, where
//! a miss goes) with the run's own settings filled in; the fork runs as `cosmos fork` in a
//! child process, its run opens live in front, and compare opens on it and this run when it
//! ends (`tui::fork_work`, `App`).

use super::*;
use crate::tui::fork_spec::{ForkChoice, ForkWork};
use crate::tui::overlays::fork_form::ForkForm;
use cosmos_trajectory::event::AgentKind;

impl RunView {
    /// Opens the fork form for the selected step (the tree's step, or the step a selected node
    /// executed), else for the step after the last call before the cursor; once the run has
    /// ended.
    pub(super) fn branch(&mut self, cx: Context, out: &mut Vec<Request>) {
        if self.live.is_some() && !self.finished() {
            out.push(Request::Say("fork once the run has finished".into()));
            return;
        }
        let world_models = match cx.probe.world_models() {
            Ok(names) => names,
            Err(e) => {
                out.push(Request::Say(format!("cannot fork: {e:#}")));
                return;
            }
        };
        let h = &self.run.header;
        let form = ForkForm::new(
            self.fork_step(),
            h.agent.kind.as_str(),
            h.world_model_name(),
            &world_models,
            cx.probe.mcp_config.is_some(),
        );
        out.push(Request::Push(Box::new(form)));
    }

    /// The step a fork from here starts at.
    fn fork_step(&self) -> u64 {
        let step_of = |event: u32| {
            cosmos_trajectory::recorded_call::RecordedCall::of(&self.run.event(event as usize).body)
                .map(|call| call.step)
        };
        let steps = self.run.steps();
        let selected = match self.tree.selected_item() {
            Some(Item::Step(i)) => steps.get(i).and_then(|s| step_of(s.event)),
            Some(Item::Node(slot)) => steps
                .iter()
                .rev()
                .find(|s| s.node == Some(slot))
                .and_then(|s| step_of(s.event)),
            None => None,
        };
        selected.unwrap_or_else(|| {
            let k = self.position();
            let last = self
                .run
                .calls_with_replayed()
                .into_iter()
                .take_while(|&e| (e as usize) < k)
                .last();
            last.and_then(step_of).map_or(1, |s| s + 1)
        })
    }

    /// The person chose how to fork: start `cosmos fork` with those options, writing into
    /// `forks/` beside the run, with the explorer's config and servers.
    pub(super) fn start_fork(&mut self, choice: &ForkChoice, cx: Context, out: &mut Vec<Request>) {
        let original = self.run.path.clone();
        let beside = original.parent().unwrap_or(std::path::Path::new("."));
        let mut args = vec!["fork".to_string(), original.display().to_string()];
        args.extend(choice.args());
        if let Some(config) = &cx.probe.config {
            args.extend(["--config".into(), config.display().to_string()]);
        }
        let reaches_servers = choice.tools == "real" || choice.on_miss == "real";
        if let (true, Some(mcp)) = (reaches_servers, &cx.probe.mcp_config) {
            args.extend(["--mcp-config".into(), mcp.display().to_string()]);
        }
        // The `memory` world model is made of the runs beside this one, as a probe's is.
        if choice.world_model == "memory" {
            args.extend(["--memory-from".into(), beside.display().to_string()]);
        }
        // Named here, so the explorer knows which file to follow.
        let out_dir = beside.join("forks");
        let name = format!(
            "fork-{}_{}",
            choice.at,
            cosmos_engine::agent::run_file_name(
                &self.run.header.task.id,
                match choice.agent.as_str() {
                    "plan-exec" => AgentKind::PlanExec,
                    "spiral" => AgentKind::Spiral,
                    _ => AgentKind::React,
                },
                &choice.world_model,
            )
        );
        args.extend([
            "--out".into(),
            out_dir.display().to_string(),
            "--file-name".into(),
            name.clone(),
            "--no-tui".into(),
        ]);
        let program = match std::env::current_exe() {
            Ok(p) => p,
            Err(e) => {
                out.push(Request::Say(format!("cannot fork: {e}")));
                return;
            }
        };
        out.push(Request::Start(Work::Fork(ForkWork {
            program,
            original,
            args,
            path: out_dir.join(name),
        })));
        out.push(Request::Say(format!("forking from step {}…", choice.at)));
    }
}
