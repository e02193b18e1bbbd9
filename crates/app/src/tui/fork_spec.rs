//! What a fork from the explorer is, as data: the person's choice in the form and the work
//! it becomes. A leaf: the form, the work runner, actions and requests all name these.
//!
//! (the leaf: the `b` form's `ForkChoice`, the `ForkWork` it becomes),
//! `fork_form.rs` (the form, the run's settings filled in), `fork_work.rs` (`cosmos fork` run as a
//! child process of the same binary, its output to a log file, its file (named by the explorer,
//! a hidden `--file-name`) followed with `trajectory::tail`; a table of running forks so leaving the explorer stops them or leaves
//! them running), `run_view/branch.rs` (`b`: which step, the form, the work). The app opens the
//! fork's run live in front (`Waiting::Fork`, which keeps the fork's path; its stop key SIGTERMs
//! the child), tells every view the file was written (`Action::Written`: a browser over its
//! folder lists it, when it starts and again when it ends) and opens compare when it ends
//! (`Action::ForkEnded`). A fork that does not start is reported by its error line, never by
//! a warning printed before it (`fork_work::said_cause`).

use std::path::PathBuf;

/// What the person chose: `cosmos fork`'s options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkChoice {
    /// The first step the fork decides afresh.
    pub at: u64,
    /// `react`, `plan-exec` or `spiral`.
    pub agent: String,
    /// The world model's name (`none` for none).
    pub world_model: String,
    /// `real` or `recorded`.
    pub tools: String,
    /// With recorded tools: `error`, `real` or `world-model`.
    pub on_miss: String,
}

impl ForkChoice {
    /// The choice as `cosmos fork` options (after `fork RUN`).
    pub fn args(&self) -> Vec<String> {
        let mut args = vec![
            "--at".to_string(),
            self.at.to_string(),
            "--agent".into(),
            self.agent.clone(),
            "--world-model".into(),
            self.world_model.clone(),
            "--tools".into(),
            self.tools.clone(),
        ];
        if self.tools == "recorded" {
            args.extend(["--on-miss".to_string(), self.on_miss.clone()]);
        }
        args
    }
}

/// A fork to run: the program (`cosmos`) and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkWork {
    /// The `cosmos` binary (this one, unless a test says otherwise).
    pub program: PathBuf,
    /// The run forked.
    pub original: PathBuf,
    /// Everything after the program: `fork RUN --at N … --out DIR --file-name NAME --no-tui`.
    pub args: Vec<String>,
    /// The fork's file (`--out` joined with `--file-name`), followed once it exists.
    pub path: PathBuf,
}
