//! Trajectory benchmark: prints figures, asserts nothing. `cargo bench --bench trajectory`
//! (add `-- --quick` for a tenth of the data). Targets from issue 2 are printed beside
//! each figure. Data is generated once into `target/bench-data/`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcp_cosmos::metrics::group::{GroupBy, group};
use mcp_cosmos::trajectory::fold::Cursor;
use mcp_cosmos::trajectory::listing::list_runs;
use mcp_cosmos::trajectory::run::Run;
use mcp_cosmos::trajectory::synthetic::{self, Spec};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");

    // 300 runs of ~3.4 MB each: about 1 GB.
    let folder = data.join(format!("folder-{scale}"));
    let runs = 300 / scale;
    prepare(&folder, runs, |i| Spec {
        nodes: 1_400,
        branching: 3,
        padding: 400,
        seed: i as u64,
    });
    let bytes = folder_bytes(&folder);
    println!(
        "data: {runs} runs, {:.0} MB in {}",
        mb(bytes),
        folder.display()
    );

    reset_peak();
    let (list, t) = time(|| list_runs(std::slice::from_ref(&folder)).unwrap());
    assert_eq!(list.len(), runs);
    println!(
        "list {runs} runs from first+last lines: {:.1} ms   (target < 300 ms)   peak RSS {:.0} MB",
        ms(t),
        peak_mb()
    );

    reset_peak();
    let ((records, _), t) =
        time(|| mcp_cosmos::metrics::records::read_records(std::slice::from_ref(&folder)).unwrap());
    let rows = group(&records, GroupBy::Config);
    println!(
        "report over {:.0} MB: {:.2} s = {:.0} MB/s   ({} rows)   peak RSS {:.0} MB",
        mb(bytes),
        t.as_secs_f64(),
        mb(bytes) / t.as_secs_f64(),
        rows.len(),
        peak_mb()
    );

    // One run of about 10^6 events (7 events per node).
    let big = data.join(format!("big-{scale}.jsonl"));
    let nodes = 143_000 / scale;
    if !big.exists() {
        synthetic::write(
            &big,
            &Spec {
                nodes,
                branching: 3,
                padding: 0,
                seed: 42,
            },
        )
        .unwrap();
    }
    reset_peak();
    let (run, t) = time(|| Run::open(&big).unwrap());
    println!(
        "open {} events ({:.0} MB, parse + index): {:.2} s   peak RSS {:.0} MB",
        run.len(),
        mb(std::fs::metadata(&big).unwrap().len()),
        t.as_secs_f64(),
        peak_mb()
    );
    let mut cursor = Cursor::new(&run);
    let (_, t) = time(|| cursor.seek(&run, run.len()));
    println!(
        "fold {} events to the end: {:.1} ms   (target < 1 s)   {} nodes",
        run.len(),
        ms(t),
        cursor.state().visible_nodes()
    );

    let mut rng = fastrand::Rng::with_seed(9);
    let mut seeks: Vec<Duration> = (0..200)
        .map(|_| {
            let j = rng.usize(..=run.len());
            time(|| cursor.seek(&run, j)).1
        })
        .collect();
    seeks.sort();
    println!(
        "seek anywhere (200 random jumps): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms   (target < 10 ms)",
        ms(seeks[100]),
        ms(seeks[197]),
        ms(seeks[199])
    );
    let mut steps: Vec<Duration> = (0..1000)
        .map(|_| {
            let j = (cursor.position() + 1).min(run.len());
            time(|| cursor.seek(&run, j)).1
        })
        .collect();
    steps.sort();
    println!("step forward: p99 {:.1} µs", steps[989].as_secs_f64() * 1e6);
    let (_, t) = time(|| run.metrics_at(run.len(), cursor.state()));
    println!("metrics at cursor (whole run): {:.2} ms", ms(t));
    println!("process peak RSS overall: {:.0} MB", peak_mb_overall());
}

fn prepare(folder: &Path, runs: usize, spec: impl Fn(usize) -> Spec) {
    std::fs::create_dir_all(folder).unwrap();
    for i in 0..runs {
        let p = folder.join(format!("run-{i:04}.jsonl"));
        if !p.exists() {
            synthetic::write(&p, &spec(i)).unwrap();
        }
    }
}

fn folder_bytes(folder: &Path) -> u64 {
    std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// Resets the kernel's peak-RSS mark (Linux), so each phase reports its own peak.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn status_kb(key: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

fn peak_mb() -> f64 {
    status_kb("VmHWM:") / 1e3
}

fn peak_mb_overall() -> f64 {
    peak_mb().max(status_kb("VmRSS:") / 1e3)
}
