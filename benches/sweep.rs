//! Sweep benchmark: prints figures, asserts nothing. `cargo bench --bench sweep` (`-- --quick`
//! for a tenth). 200 cells (two MCP-Bench time tasks × one ReAct configuration × 100 repeats),
//! each a real `cosmos sweep` cell: its own Time MCP server (the fast offline one, installed by
//! scripts/install-test-servers.sh) and two planner calls to the tests' scripted endpoint, which
//! answers in 200 ms. Run with `--jobs 1, 2, 4, 8`, each with the server started per cell and
//! shared by each worker's cells (`shared_servers`), into fresh folders: wall time, throughput,
//! speed-up over `--jobs 1`, and per cell the servers' start (reported apart) and cosmos's own overhead
//! (the cell's time minus its servers' start minus the 2 × 200 ms of model time).
//!
//! # Figures measured
//!
//! `cargo bench --bench sweep` (figures printed, nothing asserted): 200 cells (two MCP-Bench time
//! tasks × ReAct × 100 repeats), each starting its own Time MCP server (Python, the fastest offline
//! server here) and making two planner calls to the scripted endpoint, which answers in 200 ms. On
//! this project's 2-core machine:
//!
//! | | wall | per cell | servers' start | model | cosmos |
//! |---|---|---|---|---|---|
//! | `--jobs 1` | 290.9 s | 1.46 s | 0.80 s | 0.40 s | 0.25 s |
//! | `--jobs 8` | 123.3 s | 4.89 s | 3.57 s | 0.40 s | 0.92 s |
//!
//! `--jobs 8` is 2.36× faster than `--jobs 1`, against 8× if model time were all: the servers'
//! start is CPU (a Python interpreter importing the MCP SDK), and 8 of them at once on 2 cores
//! queue for the CPU. cosmos's own time per cell (the cell's time less its servers' start and
//! model time: reading the spec's files, the run's file, the tool call, stopping the server) is
//! 0.25 s alone. The sweep itself adds nothing measurable between cells (290.9 s of wall for 200 ×
//! 1.46 s).
//!
//! With the server shared (`cargo bench --bench sweep -- --quick`: 20 cells, the same scripted
//! 200 ms endpoint, on this project's 2-core machine, December 2026):
//!
//! | `--jobs` | per-cell servers: wall | cells/s | × `--jobs 1` | shared: wall | cells/s | × `--jobs 1` |
//! |---|---|---|---|---|---|---|
//! | 1 | 24.3 s | 0.82 | 1.00 | 9.9 s | 2.02 | 1.00 |
//! | 2 | 13.0 s | 1.54 | 1.86 | 5.5 s | 3.64 | 1.82 |
//! | 4 | 8.3 s | 2.41 | 2.93 | 3.7 s | 5.41 | 2.68 |
//! | 8 | 9.1 s | 2.20 | 2.66 | 3.8 s | 5.26 | 2.59 |
//!
//! Sharing takes a cell from 1.21 s to 0.52 s alone (the server's start, 0.57 s, and its stop are
//! paid once per worker), so one job shared does about as much as four unshared. On two cores
//! eight workers each start a Python server at once, which is why `--jobs 8` does no better than
//! `--jobs 4` in a sweep this short. (Before this table a stop waited out every grace period: an
//! exited server that was not reaped yet still counted as alive, which cost 1.5 s a cell; the
//! figures above are with that fixed, and the 200-cell table before them predates both.)

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::process::Command;
use std::time::Instant;

use common::scale;
use serde_json::{Value, json};
use support::{ScriptedLlm, bench_servers, bench_tasks, call, finish, write_mcp_config};

/// What one cell's progress line says: (whole, servers) in seconds.
fn cell_times(line: &str) -> Option<(f64, f64)> {
    let (_, rest) = line.split_once(" · ")?;
    let at = rest.find("s (servers ")?;
    let whole: f64 = rest[..at].rsplit(' ').next()?.parse().ok()?;
    let servers = rest[at + "s (servers ".len()..]
        .split('s')
        .next()?
        .parse()
        .ok()?;
    Some((whole, servers))
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn main() {
    support::servers(); // installed by scripts/install-test-servers.sh
    let repeats = 100 / scale();
    let cells = 2 * repeats;
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(
        dir.path(),
        json!({"Time MCP": bench_servers()["Time MCP"].clone()}),
    );
    std::fs::copy(bench_tasks(), dir.path().join("tasks.json")).unwrap();
    let spec_of = |shared: bool| {
        let spec = dir.path().join(format!("bench-{shared}.toml"));
        std::fs::write(
            &spec,
            format!(
                "mcp_config = \"{}\"\nrepeats = {repeats}\n{}[[tasks]]\nfile = \"tasks.json\"\nids = [\"time_mcp_000\", \"time_mcp_001\"]\n\
                 [[configs]]\nname = \"react\"\nagent = \"react\"\nmax_steps = 2\n",
                mcp.display(),
                if shared { "shared_servers = [\"Time MCP\"]\n" } else { "" }
            ),
        )
        .unwrap();
        spec
    };
    let to_tokyo: Value =
        json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "Asia/Tokyo"});
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "delay_s": 0.2, "content": finish("18:00 in Tokyo.")},
        {"when": "No tool has been called yet", "delay_s": 0.2, "content": call("Time MCP:convert_time", to_tokyo)}
    ]));
    let model_s = 2.0 * 0.2;
    for shared in [false, true] {
        let spec = spec_of(shared);
        let mut one = None;
        for jobs in [1usize, 2, 4, 8] {
            let out = dir.path().join(format!("jobs-{jobs}-{shared}"));
            let started = Instant::now();
            let o = Command::new(env!("CARGO_BIN_EXE_cosmos"))
                .args(["sweep", spec.to_str().unwrap(), "--no-tui", "--out"])
                .arg(&out)
                .args(["--jobs", &jobs.to_string()])
                .env("OPENAI_BASE_URL", llm.base_url())
                .env("OPENAI_API_KEY", "sk-bench-0123456789")
                .env("COSMOS_MODEL", "scripted-model")
                .env("COSMOS_LOG_FILE", dir.path().join("cosmos.log"))
                .output()
                .unwrap();
            let wall = started.elapsed().as_secs_f64();
            let stdout = String::from_utf8_lossy(&o.stdout);
            let times: Vec<(f64, f64)> = stdout.lines().filter_map(cell_times).collect();
            let completed = stdout.matches(": completed · ").count();
            let whole: Vec<f64> = times.iter().map(|t| t.0).collect();
            let servers: Vec<f64> = times.iter().map(|t| t.1).collect();
            let overhead: Vec<f64> = times.iter().map(|(w, s)| w - s - model_s).collect();
            let ideal = cells as f64 * model_s / jobs as f64;
            let one_wall = *one.get_or_insert(wall);
            println!(
                "sweep of {cells} cells, {} servers, --jobs {jobs}: {wall:.1} s wall, {:.1} cells/s, \
                 {:.2}× --jobs 1 ({completed} completed, exit {:?}); per cell {:.2} s, of which \
                 servers' start {:.2} s, model {model_s:.2} s, cosmos {:.3} s; model-time ideal {ideal:.1} s",
                if shared { "shared" } else { "per-cell" },
                cells as f64 / wall,
                one_wall / wall,
                o.status.code(),
                mean(&whole),
                mean(&servers),
                mean(&overhead),
            );
            if completed < cells {
                println!(
                    "  (not every cell completed; stderr: {})",
                    String::from_utf8_lossy(&o.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                );
            }
        }
    }
    println!(
        "({} CPU cores here)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
}
