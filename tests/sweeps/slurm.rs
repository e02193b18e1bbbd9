//! The Slurm array `cosmos sweep --emit slurm` prints, on a real Slurm: a one-node cluster
//! (slurmctld, slurmd and munged from Debian's packages) started by
//! `scripts/slurm-cluster.sh` in a folder of the test's, on free ports. The array's tasks run
//! the sweep's shards; one is cancelled with `scancel` mid-cell; `cosmos sweep --resume`
//! completes only what is missing; and the merged report equals a one-machine run's.
//!
//! The cluster test is ignored in a plain `cargo nextest run` (the runner lists it as skipped,
//! with the reason): `scripts/test.sh`, the README's test command and CI's, installs Slurm
//! and runs it on its own. Run that way, a Slurm that cannot be started fails it, saying why:
//! it never passes without running.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

/// A one-node cluster, stopped on drop.
struct Cluster {
    dir: PathBuf,
    conf: String,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(&self.dir)
            .output();
    }
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm-cluster.sh")
}

/// Starts the cluster in `dir`, or fails saying why it cannot.
fn cluster(dir: &Path) -> Cluster {
    let started = Command::new("bash")
        .arg(script())
        .arg("start")
        .arg(dir)
        .output()
        .expect("bash runs");
    assert!(
        started.status.success(),
        "no Slurm here ({}): {}; scripts/test.sh installs it with scripts/slurm-cluster.sh install",
        started.status,
        String::from_utf8_lossy(&started.stderr).trim()
    );
    let conf = String::from_utf8_lossy(&started.stdout).trim().to_string();
    Cluster {
        dir: dir.to_path_buf(),
        conf,
    }
}

impl Cluster {
    /// A Slurm command against this cluster.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", &self.conf);
        command
    }

    /// Each array task's `ArrayTaskId` and `JobState`, from `scontrol show job`.
    fn task_states(&self, job: &str) -> Vec<(String, String)> {
        let shown = self
            .command("scontrol")
            .args(["-o", "show", "job", job])
            .output()
            .unwrap();
        let field = |line: &str, name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .unwrap_or_default()
                .to_string()
        };
        let mut states: Vec<(String, String)> = String::from_utf8_lossy(&shown.stdout)
            .lines()
            .map(|l| (field(l, "ArrayTaskId="), field(l, "JobState=")))
            .collect();
        states.sort();
        states
    }

    /// True while `job` has tasks pending or running.
    fn queued(&self, job: &str) -> bool {
        let listed = self
            .command("squeue")
            .args(["-h", "-j", job])
            .output()
            .unwrap();
        !String::from_utf8_lossy(&listed.stdout).trim().is_empty()
    }
}

fn utc_to(target: &str) -> Value {
    json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": target})
}

/// Two tasks × two ReAct configurations of the time server: four cells.
fn sweep_spec(dir: &Path) -> PathBuf {
    write_mcp_config(dir, bench_servers());
    std::fs::copy(bench_tasks(), dir.join("tasks.json")).unwrap();
    let spec = dir.join("sweep.toml");
    std::fs::write(
        &spec,
        "mcp_config = \"mcp.json\"\n[[tasks]]\nfile = \"tasks.json\"\nids = [\"time_mcp_000\", \"time_mcp_001\"]\n\
         [[configs]]\nname = \"short\"\nagent = \"react\"\nmax_steps = 2\n\
         [[configs]]\nname = \"long\"\nagent = \"react\"\nmax_steps = 3\n",
    )
    .unwrap();
    spec
}

fn finished_runs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.retain(|p| {
        p.extension().is_some_and(|e| e == "jsonl")
            && std::fs::read_to_string(p)
                .unwrap_or_default()
                .contains("\"run_finished\"")
    });
    files.sort();
    files
}

/// A report's groups without what changes from run to run (times).
fn comparable(report: &Output) -> Value {
    let mut doc: Value =
        serde_json::from_slice(&report.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(report)));
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.retain(|k, _| {
                    !(k.contains("time") || k.contains("latency") || k.ends_with("_ms"))
                });
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut doc["groups"]);
    doc["groups"].take()
}

#[test]
#[ignore = "needs a one-node Slurm: scripts/test.sh installs it and runs this test on its own"]
fn the_emitted_array_runs_on_slurm_and_a_cancelled_task_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = cluster(&dir.path().join("slurm"));
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let spec = sweep_spec(&work);
    let release = work.join("release");
    // Every cell makes its real call and then waits on its planner until `release` exists:
    // both shards are mid-cell for as long as the test needs.
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish("09:00 UTC is 18:00 in Tokyo."),
         "hold_until_file": release.to_str().unwrap()},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("Asia/Tokyo"))}
    ]));
    let out = work.join("runs");
    let emitted = cosmos(
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--emit",
            "slurm",
            "--shards",
            "2",
            "--out",
            out.to_str().unwrap(),
        ],
        &llm,
        "sk-x",
    );
    assert!(emitted.status.success(), "{}", text(&emitted));
    let job_script = work.join("sweep.sh");
    std::fs::write(&job_script, &emitted.stdout).unwrap();

    // The array's tasks find this build's cosmos first on PATH (sbatch passes the
    // environment on).
    let bin = Path::new(env!("CARGO_BIN_EXE_cosmos")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let submitted = cluster
        .command("sbatch")
        .arg("--parsable")
        .arg(&job_script)
        .current_dir(&work)
        .env("PATH", &path)
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test-slurm-0123456789")
        .env("COSMOS_MODEL", "scripted-model")
        .output()
        .unwrap();
    assert!(submitted.status.success(), "{}", text(&submitted));
    let job = String::from_utf8_lossy(&submitted.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_string();

    // Both array tasks are mid-cell: two runs have their real call.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mid = std::fs::read_dir(&out)
            .map(|d| {
                d.filter(|e| {
                    let p = e.as_ref().unwrap().path();
                    p.extension().is_some_and(|x| x == "jsonl")
                        && std::fs::read_to_string(&p)
                            .unwrap_or_default()
                            .contains("\"tool_called\"")
                })
                .count()
            })
            .unwrap_or(0);
        if mid == 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the array's tasks did not both start a cell: {:?}",
            cluster.task_states(&job)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        cluster.task_states(&job),
        [
            ("0".to_string(), "RUNNING".to_string()),
            ("1".to_string(), "RUNNING".to_string())
        ],
        "the shards run as the array's tasks"
    );
    let cancelled = cluster
        .command("scancel")
        .arg(format!("{job}_1"))
        .output()
        .unwrap();
    assert!(cancelled.status.success(), "{}", text(&cancelled));
    // The held calls go on only once the cancelled task has ended its run (interrupted): a
    // release before the signal lands would let that cell finish (slow signals under load).
    let deadline = Instant::now() + Duration::from_secs(60);
    while finished_runs(&out).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the cancelled task left no finished run: {:?}",
            cluster.task_states(&job)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::write(&release, "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    while cluster.queued(&job) {
        assert!(Instant::now() < deadline, "the job did not end");
        std::thread::sleep(Duration::from_millis(200));
    }
    let states = cluster.task_states(&job);
    assert_eq!(
        states,
        [
            ("0".to_string(), "COMPLETED".to_string()),
            ("1".to_string(), "CANCELLED".to_string())
        ]
    );
    // Each task wrote its own log, naming its share of the sweep.
    for task in ["0", "1"] {
        let log = std::fs::read_to_string(work.join(format!("cosmos-sweep-sweep-{task}.log")))
            .unwrap_or_else(|e| panic!("task {task}'s log: {e}"));
        assert!(log.contains("cell(s) here"), "task {task}: {log}");
    }
    assert_eq!(
        finished_runs(&out).len(),
        3,
        "shard 0's two cells, and the cut-off one"
    );

    let resumed = cosmos(
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--no-tui",
            "--resume",
        ],
        &llm,
        "sk-x",
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    assert!(
        text(&resumed).contains("4 cell(s) here (2 done already, 2 to run)"),
        "only what the cancelled task left: {}",
        text(&resumed)
    );

    let local = work.join("local");
    let one_machine = cosmos(
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            local.to_str().unwrap(),
            "--no-tui",
        ],
        &llm,
        "sk-x",
    );
    assert_eq!(one_machine.status.code(), Some(0), "{}", text(&one_machine));
    let report = |folder: &Path| {
        cosmos(
            &["report", folder.to_str().unwrap(), "--format", "json"],
            &llm,
            "sk-x",
        )
    };
    let merged = comparable(&report(&out));
    assert_eq!(
        merged.as_array().map(Vec::len),
        Some(2),
        "two configurations: {merged}"
    );
    assert_eq!(
        merged,
        comparable(&report(&local)),
        "the cluster's merged report is the one machine's: {merged}"
    );
}

/// `--resume` in a folder that holds none of the sweep's cells is refused, not a fresh start.
#[test]
fn resume_refuses_a_folder_with_nothing_to_resume() {
    let dir = tempfile::tempdir().unwrap();
    let spec = sweep_spec(dir.path());
    let llm = ScriptedLlm::start(json!([{"content": "unused"}]));
    let refused = cosmos(
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            dir.path().join("empty").to_str().unwrap(),
            "--no-tui",
            "--resume",
        ],
        &llm,
        "sk-x",
    );
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("nothing to resume"),
        "{}",
        text(&refused)
    );
    assert!(llm.requests().is_empty(), "nothing ran");
}
