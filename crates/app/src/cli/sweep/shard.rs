//! Which cells this process runs: `--shard I/N`, or `auto` from a Slurm array or a
//! Kubernetes Indexed Job; shares balanced by expected cost, the same on every shard.

use anyhow::{Context, Result, bail};

use super::args::SweepArgs;
use super::spec::Cell;

/// This process's share of `cells`: assigned by expected cost, heaviest first to the least
/// loaded shard (the same on every shard, so shards never overlap).
pub fn shard(cells: Vec<Cell>, index: usize, count: usize) -> Vec<Cell> {
    let mut order: Vec<usize> = (0..cells.len()).collect();
    order.sort_by(|&a, &b| cells[b].cost.total_cmp(&cells[a].cost).then(a.cmp(&b)));
    let mut load = vec![0.0_f64; count];
    let mut owner = vec![0; cells.len()];
    for i in order {
        let s = (0..count)
            .min_by(|&x, &y| load[x].total_cmp(&load[y]).then(x.cmp(&y)))
            .unwrap_or(0);
        load[s] += cells[i].cost;
        owner[i] = s;
    }
    cells
        .into_iter()
        .enumerate()
        .filter(|(i, _)| owner[*i] == index)
        .map(|(_, c)| c)
        .collect()
}

pub(super) fn which_shard(args: &SweepArgs) -> Result<Option<(usize, usize)>> {
    let Some(shard) = &args.shard else {
        return Ok(None);
    };
    let env_num = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    let (index, count) = if shard == "auto" {
        if let (Some(i), Some(n)) = (
            env_num("SLURM_ARRAY_TASK_ID"),
            env_num("SLURM_ARRAY_TASK_COUNT"),
        ) {
            (i, n)
        } else if let Some(i) = env_num("JOB_COMPLETION_INDEX") {
            let n = args
                .shards
                .context("--shard auto under a Kubernetes Indexed Job needs --shards N")?;
            (i, n)
        } else {
            bail!(
                "--shard auto: neither SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT nor JOB_COMPLETION_INDEX is set"
            );
        }
    } else {
        let (i, n) = shard.split_once('/').context("--shard I/N, e.g. 1/4")?;
        let i: usize = i.trim().parse().context("--shard I/N: I is a number")?;
        let n: usize = n.trim().parse().context("--shard I/N: N is a number")?;
        if i == 0 || i > n {
            bail!("--shard {i}/{n}: I runs from 1 to N");
        }
        (i - 1, n)
    };
    if count == 0 || index >= count {
        bail!("shard {index} of {count}: out of range");
    }
    Ok(Some((index, count)))
}
