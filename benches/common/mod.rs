//! Shared benchmark data: generated once into `target/bench-data/`, reused across runs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cosmos_trajectory::synthetic::{self, Spec};

/// The allocator the `cosmos` binary ships with (`src/main.rs`), so what a benchmark measures
/// in its own process (opening a run, a report's records) is what the product does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `--quick` divides the data by ten.
pub fn scale() -> usize {
    if std::env::args().any(|a| a == "--quick") {
        10
    } else {
        1
    }
}

/// Where generated data lives.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data")
}

/// A folder of 300 / scale runs of about 3.3 MB each (about 1 GB at full scale).
pub fn folder_of_runs(scale: usize) -> (PathBuf, usize) {
    let folder = data_dir().join(format!("folder-{scale}"));
    let runs = 300 / scale;
    std::fs::create_dir_all(&folder).unwrap();
    for i in 0..runs {
        let p = folder.join(format!("run-{i:04}.jsonl"));
        if !p.exists() {
            synthetic::write(
                &p,
                &Spec {
                    nodes: 1_400,
                    branching: 3,
                    padding: 1_200,
                    seed: i as u64,
                },
                cosmos_engine::metrics::run::RunAccumulator::tally,
            )
            .unwrap();
        }
    }
    (folder, runs)
}

/// One run of about 10^6 / scale events (7 events per node).
pub fn big_run_file(scale: usize) -> PathBuf {
    let big = data_dir().join(format!("big-{scale}.jsonl"));
    if !big.exists() {
        std::fs::create_dir_all(data_dir()).unwrap();
        synthetic::write(
            &big,
            &Spec {
                nodes: 143_000 / scale,
                branching: 3,
                padding: 0,
                seed: 42,
            },
            cosmos_engine::metrics::run::RunAccumulator::tally,
        )
        .unwrap();
    }
    big
}

/// Total bytes of the files in a folder.
pub fn folder_bytes(folder: &Path) -> u64 {
    std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

/// Reads every file under `path` once, so the timings after it are of a warm page cache (a
/// build between runs can push the data out of it).
pub fn warm(path: &Path) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            warm(&entry.unwrap().path());
        }
    } else {
        std::io::copy(
            &mut std::fs::File::open(path).unwrap(),
            &mut std::io::sink(),
        )
        .unwrap();
    }
}

/// Runs `f` and times it.
pub fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

/// Milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Percentile of sorted durations.
pub fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Resets the kernel's peak-RSS mark (Linux), so each phase reports its own peak. The mark
/// restarts from what the process holds now: memory an earlier phase freed but the allocator
/// kept (generating the benchmark's data on a first run holds hundreds of MB) still counts, so
/// a warning says when the process starts a phase already large.
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (peak, now) = (status_mb("VmHWM:"), status_mb("VmRSS:"));
    if peak > now * 1.1 + 8.0 || now > 96.0 {
        eprintln!(
            "warning: this phase starts at {now:.0} MB resident (peak mark {peak:.0} MB): its \
             peak below includes an earlier phase's memory; run the benchmark again (its data \
             is kept) for the phase's own"
        );
    }
}

/// Peak RSS since the last reset, MB.
pub fn peak_mb() -> f64 {
    status_mb("VmHWM:")
}

/// A `/proc/self/status` field in MB.
fn status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1e3
}

/// `sample_runs/`'s top-level runs copied `copies` / scale times into one folder (the issue's
/// "many small real runs").
pub fn many_small_runs(copies: usize, scale: usize) -> (PathBuf, usize) {
    let copies = copies / scale;
    let folder = data_dir().join(format!("small-{copies}"));
    let samples: Vec<PathBuf> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
    std::fs::create_dir_all(&folder).unwrap();
    for c in 0..copies {
        for (i, s) in samples.iter().enumerate() {
            let p = folder.join(format!("copy-{c:04}-{i:02}.jsonl"));
            if !p.exists() {
                std::fs::copy(s, &p).unwrap();
            }
        }
    }
    (folder, copies * samples.len())
}

/// The peer loader (`scripts/orjson-report.py`) over `folder`: its wall time, or why it could
/// not run (no python3, or no orjson).
pub fn orjson_peer(folder: &Path) -> Result<Duration, String> {
    timed(&mut orjson_command(folder))
}

/// The command that runs the peer loader over `folder`.
pub fn orjson_command(folder: &Path) -> std::process::Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/orjson-report.py");
    let mut command = std::process::Command::new("python3");
    command.arg(script).arg(folder);
    command
}

/// `command` run on CPU 0 alone (`taskset -c 0`): its wall time and its CPU time (user and
/// system, from the children's resource usage).
pub fn pinned(command: &std::process::Command) -> Result<(Duration, Duration), String> {
    let mut on_one_core = std::process::Command::new("taskset");
    on_one_core
        .args(["-c", "0"])
        .arg(command.get_program())
        .args(command.get_args());
    let before = children_cpu();
    let wall = timed(&mut on_one_core)?;
    Ok((wall, children_cpu().saturating_sub(before)))
}

/// CPU time of this process's waited-for children so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage writes one `rusage` into the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let of = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    of(usage.ru_utime) + of(usage.ru_stime)
}

/// The wall time of `command`, or why it failed (its last line of errors).
fn timed(command: &mut std::process::Command) -> Result<Duration, String> {
    let start = Instant::now();
    let out = command.output().map_err(|e| {
        format!(
            "{} did not start: {e}",
            command.get_program().to_string_lossy()
        )
    })?;
    let took = start.elapsed();
    if out.status.success() {
        Ok(took)
    } else {
        Err(String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("failed")
            .to_string())
    }
}
