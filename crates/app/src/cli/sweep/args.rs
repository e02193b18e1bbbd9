//! `cosmos sweep`'s command-line options.

use std::path::PathBuf;

use clap::Args;

/// `cosmos sweep` options.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The sweep's spec (TOML; paths in it are relative to it).
    pub spec: PathBuf,
    /// Folder for the runs (default: `runs/<spec name>` beside the spec).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Cells run at once.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// This process's share of the cells: `I/N` (1-based), or `auto` (a Kubernetes Indexed Job's
    /// JOB_COMPLETION_INDEX with --shards N, or a Slurm array's SLURM_ARRAY_TASK_ID and
    /// SLURM_ARRAY_TASK_COUNT).
    #[arg(long)]
    pub shard: Option<String>,
    /// Shards, for `--shard auto` under Kubernetes.
    #[arg(long)]
    pub shards: Option<usize>,
    /// List the cells and their state (done, failed, running, incomplete, missing) instead of
    /// running.
    #[arg(long)]
    pub status: bool,
    /// One progress line per cell instead of the live matrix view.
    #[arg(long)]
    pub no_tui: bool,
    /// Go on with a sweep begun before in the same folder (by this machine or by a cluster's
    /// shards): only cells without a finished run are run, as running the command again does,
    /// but a folder holding none of its cells is refused instead of starting afresh.
    #[arg(long, conflicts_with_all = ["status", "emit"])]
    pub resume: bool,
    /// Print a cluster job that runs the sweep in `--shards N` shards instead of running it:
    /// `k8s` (an Indexed Job) or `slurm` (an `sbatch --array` script).
    #[arg(long, value_name = "k8s|slurm")]
    pub emit: Option<String>,
    /// Where every cell's run is sent as it runs (one trace per run).
    #[command(flatten)]
    pub otel: crate::cli::run::OtelArgs,
}
