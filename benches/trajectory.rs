//! Trajectory benchmark: prints figures, asserts nothing. `cargo bench --bench trajectory`
//! (add `-- --quick` for a tenth of the data). Targets are printed beside each figure, and the
//! peer loader `scripts/orjson-report.py` runs beside `report` when python3 has orjson. Data is
//! generated once into `target/bench-data/`.
//!
//! # Figures measured
//!
//! A sweep's report reads hundreds of small files; the explorer opens big ones. `cargo bench
//! --bench trajectory` and `cargo bench --bench explorer` print these figures (this project's
//! 2-core machine, December 2026, warm page cache):
//!
//! - `cosmos report` over `sample_runs/` copied 400 times (5,200 files, 156 MB; the wm-eval files
//!   are passed over): 0.18–0.26 s on both cores, 3.8–4.0× the peer loader
//!   (`scripts/orjson-report.py`, a plain orjson loop on one core). Pinned to one core (`taskset
//!   -c 0`, best of 9 alternated rounds): 0.36–0.42 s against 0.79–1.08 s, **2.21–2.54×** over
//!   three bench runs, and the same ratio in CPU time. This machine's page cache is reclaimed
//!   between rounds (its kernel runs DAMON), which adds the same disk reads to both sides.
//! - Over 300 synthetic SPIRAL runs (861 MB): 0.54 s on both cores; pinned to one core 1.06–1.16 s
//!   against 2.83–3.19 s, **2.61–2.75×** over three bench runs.
//! - The run reader (`Run::open`, what the explorer's open does: every event checked, briefs and
//!   line spans indexed) over the 843k-event run, pinned to one core: 0.39–0.45 s against the
//!   peer's 0.87–0.96 s over the same file, **2.14–2.23×** over three bench runs (December 3).
//!   It was 1.88–2.11× until the envelope every line starts with (`{"seq":…,"t_ms":…,"kind":"…"`)
//!   was read by hand when it is spelled as the writer spells it: through serde, matching its
//!   three keys and parsing its two numbers was a fifth of the reading (`trajectory::envelope`;
//!   any other spelling still goes through serde, and tests hold the two readings to the same
//!   result). Opening also writes less fresh memory than it did, which a profile showed to be
//!   a third of the pinned open's time on this machine (the kernel zeroing each new page): a
//!   node's id is Fx-hashed, an event's tree links and a node's latest events are one vector
//!   each, a line's span is 12 bytes, and a backpropagated path is allocated once at its
//!   length. Left: serde_json's scanning of keys and strings is most of what remains.
//! - Memory to open that run, in a fresh process with the binary's allocator: 139–163 MB at its
//!   peak on two cores, 106 MB on one, for a 144 MB file (157–190 MB and 112 MB before the
//!   changes above). On two cores, batches of lines are in
//!   flight between the threads, and mimalloc hands freed memory back to the system only a while
//!   later. The run's indices are given their room once, judged from the file's first 8,192
//!   events, instead of being grown by doubling (which peaked at 200–230 MB). Measured with the
//!   system allocator, as the benchmark did before, the same open peaks at 99–128 MB.
//! - What it took: each header is read through a mirror that keeps only the facts a report uses
//!   and checks the rest as its types would take it without building it
//!   (`trajectory::report_header`, `trajectory::checked`); a header's `tools` list is decoded once
//!   per distinct text and its catalogue shared by every run that wrote the same list (most of a
//!   small run's header); a node's simulation is kept as where its line lies and read back from
//!   the file only when a real call pairs with it (a search simulates far more nodes than it
//!   calls, and copying every prediction cost more than reading it); `tool_called` and
//!   `call_simulated` have mirrors too (serde buffers an internally tagged enum's whole map
//!   first); one UTF-8 check per line, by SIMD (`simdutf8`); one `fstat` per file; a folder's runs listed in path order by sorting each folder's names
//!   (sorting whole paths component by component cost more than listing); mimalloc as the
//!   binary's allocator.
//! - The 843k-event SPIRAL run (144 MB): opened in parts (the explorer's way), its first frame
//!   comes after 10–16 ms, and the rest fills in as it is read, a frame after each batch of parts
//!   as the explorer's loop draws them. The whole file is in, with the screen the whole open
//!   shows, after 0.41–0.51 s (median of 9 rounds); the whole open's first frame, timed in
//!   alternate rounds, after 0.43–0.54 s. Over seven bench runs the progressive open was the
//!   faster or equal every time (0.00–0.05 s). With the envelope read by hand (above), over two
//!   bench runs: first frame 8–11 ms, the whole file in after 0.35–0.36 s against the whole
//!   open's 0.37 s. Both are bound by the same work on two cores
//!   (parse, index, one fold of the run); the progressive open does not fold the run a second
//!   time at the end: while the view follows the end its cursor's fold feeds the charts, whose
//!   samples do not depend on the run's length, so at the last part only that part is folded
//!   and the tree made again. (Before, the view was built again from the whole run at the end,
//!   and the two opens were within the machine's noise on either side; an earlier figure, 0.50 s
//!   against 0.42 s, came from one round of each, not alternated.)
//! - With every node of that run's tree expanded, a frame draws in 0.76 ms at the median and
//!   0.90 ms at p99, and a key (step, select, jump) is applied in 0.57 / 0.82 ms. Expanding all
//!   143,000 nodes takes 12 ms. (One node there has 44,143 children; the rows that tell siblings
//!   apart once read every sibling's event back per row, and the explorer hung on that family.)

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

mod common;

use std::path::Path;
use std::time::Duration;

use common::{
    big_run_file, folder_bytes, folder_of_runs, many_small_runs, ms, orjson_peer, pct, peak_mb,
    reset_peak, scale, time, warm,
};
use cosmos_engine::metrics::group::RunRecord;

/// Rounds of `report` and of the peer loader, alternated (the machine is noisy).
const ROUNDS: usize = 3;

/// `report` over `folder` and the peer loader beside it, alternated, each timed `ROUNDS` times
/// on a warm page cache: the records and the best time of each (the peer's error says why it did not run).
fn report_beside_peer(folder: &Path) -> (Vec<RunRecord>, Duration, Result<Duration, String>) {
    warm(folder);
    let mut ours = Duration::MAX;
    let mut theirs: Result<Duration, String> = Err("not run".into());
    let mut records = Vec::new();
    for _ in 0..ROUNDS {
        let ((read, _), t) = time(|| read_records(&[folder.to_path_buf()]).unwrap());
        records = read;
        ours = ours.min(t);
        theirs = match (orjson_peer(folder), theirs) {
            (Ok(t), Ok(best)) => Ok(t.min(best)),
            (Ok(t), Err(_)) => Ok(t),
            (Err(why), _) => Err(why),
        };
    }
    (records, ours, theirs)
}

/// Rounds of the per-core comparison: more, since one core of a shared machine is noisier.
const PINNED_ROUNDS: usize = 9;

/// `cosmos report` and the peer loader each on CPU 0 alone (`taskset -c 0`), alternated; the
/// best of each. This is the per-core ratio: `report` otherwise reads on every core.
fn per_core(folder: &Path, what: &str) {
    let mut report = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"));
    report.arg("report").arg(folder);
    pinned_beside_peer(&report, folder, &format!("{what}: cosmos report"));
}

/// The run reader (`Run::open`, as the explorer opens a file) on CPU 0 alone against the peer
/// loader over the same file: this benchmark runs itself with [`OPEN_ONLY`] for it.
fn per_core_open(file: &Path) {
    let Ok(me) = std::env::current_exe() else {
        println!("  per core, run reader: not measured (no path to this benchmark)");
        return;
    };
    let mut open = std::process::Command::new(me);
    open.arg(OPEN_ONLY).arg(file);
    pinned_beside_peer(&open, file, "the big run: Run::open");
}

/// The peak memory of opening `file` in a process of its own, on every core (this process
/// has read hundreds of runs by now, and the allocator keeps some of what they freed).
fn fresh_open_peak(file: &Path) -> String {
    let peak = std::env::current_exe().and_then(|me| {
        std::process::Command::new(me)
            .arg(OPEN_ONLY)
            .arg(file)
            .output()
    });
    match peak {
        Ok(out) if out.status.success() => format!(
            "{} MB in a fresh process",
            String::from_utf8_lossy(&out.stdout).trim()
        ),
        Ok(out) => format!("not measured ({})", out.status),
        Err(e) => format!("not measured ({e})"),
    }
}

/// Ours (`ours`, described by `what`) and the peer loader over `data`, each on CPU 0 alone,
/// alternated; the best of each, wall and CPU time.
fn pinned_beside_peer(ours: &std::process::Command, data: &Path, what: &str) {
    let peer = common::orjson_command(data);
    let best = (Duration::MAX, Duration::MAX);
    let (mut mine, mut theirs) = (best, best);
    let min = |a: (Duration, Duration), b: (Duration, Duration)| (a.0.min(b.0), a.1.min(b.1));
    for _ in 0..PINNED_ROUNDS {
        match (common::pinned(ours), common::pinned(&peer)) {
            (Ok(a), Ok(b)) => (mine, theirs) = (min(mine, a), min(theirs, b)),
            (Err(why), _) | (_, Err(why)) => {
                println!("  per core, {what}: not measured ({why})");
                return;
            }
        }
    }
    let s = |d: Duration| d.as_secs_f64();
    println!(
        "  per core, {what} (taskset -c 0, best of {PINNED_ROUNDS}): {:.3} s, peer {:.3} s: cosmos is {:.2}× its speed   (target ≥ 2×); \
         CPU time {:.3} s against {:.3} s: {:.2}×",
        s(mine.0),
        s(theirs.0),
        s(theirs.0) / s(mine.0),
        s(mine.1),
        s(theirs.1),
        s(theirs.1) / s(mine.1)
    );
}

/// The argument that makes this benchmark only open the file after it with `Run::open` (what
/// [`per_core_open`] times, in a process of its own so that it can be pinned).
const OPEN_ONLY: &str = "--open-only";

/// The peer's line, beside our own time `ours`.
fn peer(what: &str, theirs: Result<Duration, String>, ours: Duration) {
    match theirs {
        Ok(theirs) => println!(
            "  peer: scripts/orjson-report.py {what}: {:.2} s (best of {ROUNDS}); cosmos is {:.2}× its speed",
            theirs.as_secs_f64(),
            theirs.as_secs_f64() / ours.as_secs_f64()
        ),
        Err(why) => println!("  peer: scripts/orjson-report.py not run ({why})"),
    }
}
use cosmos_engine::metrics::group::{GroupBy, group};
use cosmos_engine::metrics::records::read_records;
use cosmos_trajectory::fold::Cursor;
use cosmos_trajectory::listing::list_runs;
use cosmos_trajectory::run::Run;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == OPEN_ONLY) {
        let run = Run::open(Path::new(&args[i + 1])).expect("the big run opens");
        assert!(!run.is_empty());
        // For the parent: this process's peak, which nothing before the open inflates.
        println!("{:.0}", peak_mb());
        return;
    }
    let scale = scale();
    let (folder, runs) = folder_of_runs(scale);
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let bytes = folder_bytes(&folder);
    println!(
        "data: {runs} runs, {:.0} MB in {}",
        mb(bytes),
        folder.display()
    );

    warm(&folder);
    reset_peak();
    let (list, t) = time(|| list_runs(std::slice::from_ref(&folder)).unwrap());
    assert_eq!(list.len(), runs);
    println!(
        "list {runs} runs from first+last lines: {:.1} ms   (target < 300 ms)   peak RSS {:.0} MB",
        ms(t),
        peak_mb()
    );

    reset_peak();
    let (records, t, theirs) = report_beside_peer(&folder);
    let rows = group(&records, GroupBy::Config);
    println!(
        "report over {:.0} MB, warm, best of {ROUNDS}: {:.2} s = {:.0} MB/s   (target < 1.0 s)   ({} rows)   peak RSS {:.0} MB",
        mb(bytes),
        t.as_secs_f64(),
        mb(bytes) / t.as_secs_f64(),
        rows.len(),
        peak_mb()
    );

    peer("report over the same folder", theirs, t);
    per_core(&folder, "big runs");

    let (small, files) = many_small_runs(400, scale);
    let (small_records, t, theirs) = report_beside_peer(&small);
    println!(
        "report over {files} small real runs ({:.0} MB, sample_runs/ copied), warm, best of {ROUNDS}: {:.2} s   (target ≥ 2× the peer)   ({} runs read)",
        mb(folder_bytes(&small)),
        t.as_secs_f64(),
        small_records.len()
    );
    peer("report over the same small runs", theirs, t);
    per_core(&small, "small runs");

    let big = big_run_file(scale);
    warm(&big);
    let (run, t) = time(|| Run::open(&big).unwrap());
    println!(
        "open {} events ({:.0} MB, parse + index): {:.2} s   (target < 0.5 s)   peak RSS {}   (target < the file)",
        run.len(),
        mb(std::fs::metadata(&big).unwrap().len()),
        t.as_secs_f64(),
        fresh_open_peak(&big)
    );
    per_core_open(&big);
    let mut cursor = Cursor::new(&run);
    let (_, t) = time(|| cursor.seek(&run, run.len()));
    println!(
        "fold {} events to the end: {:.1} ms   (target < 1 s)   {} nodes",
        run.len(),
        ms(t),
        cursor.state().visible_nodes()
    );

    let mut rng = fastrand::Rng::with_seed(9);
    let mut seeks: Vec<_> = (0..200)
        .map(|_| {
            let j = rng.usize(..=run.len());
            time(|| cursor.seek(&run, j)).1
        })
        .collect();
    seeks.sort();
    println!(
        "seek anywhere (200 random jumps): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms   (target < 10 ms)",
        ms(pct(&seeks, 0.5)),
        ms(pct(&seeks, 0.99)),
        ms(pct(&seeks, 1.0))
    );
    let mut steps: Vec<_> = (0..1000)
        .map(|_| {
            let j = (cursor.position() + 1).min(run.len());
            time(|| cursor.seek(&run, j)).1
        })
        .collect();
    steps.sort();
    println!(
        "step forward: p99 {:.1} µs",
        pct(&steps, 0.99).as_secs_f64() * 1e6
    );
    let (facts, t) = time(|| cosmos_engine::metrics::run::RunFacts::of(&run));
    println!("metric facts of the whole run: {:.2} ms", ms(t));
    let (_, t) = time(|| facts.at(&run, run.len(), cursor.state()));
    println!("metrics at cursor (whole run): {:.2} ms", ms(t));
}
