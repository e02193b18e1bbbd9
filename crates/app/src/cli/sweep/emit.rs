//! `--emit k8s|slurm`: a cluster job that runs the sweep in shards, all writing into one
//! shared folder.

use anyhow::{Context, Result, bail};

use super::args::SweepArgs;

/// into one shared folder (`/runs` in the job; the `--out` folder under Slurm).
pub(super) fn emit(engine: &str, args: &SweepArgs) -> Result<String> {
    let shards = args
        .shards
        .context("--emit needs --shards N: how many shards the job runs")?;
    if shards == 0 {
        bail!("--shards 0: at least one");
    }
    let spec = args.spec.display().to_string();
    let stem = cosmos_trajectory::writer::file_safe(
        &args
            .spec
            .file_stem()
            .map_or("sweep".into(), |s| s.to_string_lossy().to_lowercase()),
        40,
    )
    .replace('_', "-");
    let jobs = args.jobs.max(1);
    match engine {
        "k8s" => Ok(format!(
            "# A Kubernetes Indexed Job: {shards} pods, each one shard of the sweep (cosmos sweep --shard auto
# reads JOB_COMPLETION_INDEX). The image is this repository's Containerfile
# (docker build -t mcp-cosmos:latest -f Containerfile .); give the Job a ReadWriteMany volume
# for the runs and your API keys as a Secret. A shard exits non-zero while cells are left
# (130 when stopped): its index is retried and resumes where it stopped.
apiVersion: batch/v1
kind: Job
metadata:
  name: cosmos-sweep-{stem}
spec:
  completionMode: Indexed
  completions: {shards}
  parallelism: {shards}
  backoffLimitPerIndex: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: cosmos
          image: mcp-cosmos:latest
          workingDir: /work
          command: [\"cosmos\", \"sweep\", \"{spec}\", \"--shard\", \"auto\", \"--shards\", \"{shards}\", \"--jobs\", \"{jobs}\", \"--no-tui\", \"--out\", \"/runs\"]
          volumeMounts:
            - name: runs
              mountPath: /runs
      volumes:
        - name: runs
          persistentVolumeClaim:
            claimName: cosmos-runs
"
        )),
        "slurm" => Ok(format!(
            "#!/bin/bash
# A Slurm array of {shards} tasks, each one shard of the sweep (cosmos sweep --shard auto reads
# SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT). Submit from the repository on a shared
# file system: sbatch this-file.sh
#SBATCH --job-name=cosmos-sweep-{stem}
#SBATCH --array=0-{last}
#SBATCH --cpus-per-task={jobs}
#SBATCH --output=cosmos-sweep-{stem}-%a.log
set -euo pipefail
exec cosmos sweep '{spec}' --shard auto --jobs {jobs} --no-tui --out '{out}'
",
            last = shards - 1,
            out = args
                .out
                .as_ref()
                .map_or_else(|| format!("runs/{stem}"), |o| o.display().to_string()),
        )),
        other => bail!("--emit {other}: k8s or slurm"),
    }
}
