//! The real binary in a real terminal (tmux): keys in, screen out; and the raw bytes the
//! explorer writes, checked for escape sequences planted in a trajectory.

use crate::common;

use common::tmux::Tmux;

use cosmos_trajectory::event::{EventBody, Observation};

#[test]
fn browse_open_step_and_quit_with_keys() {
    let dir = tempfile::tempdir().unwrap();
    for run in common::three_runs() {
        common::write_run(&run, &dir.path().join(run.path.file_name().unwrap()));
    }
    let t = Tmux::start(&["replay", dir.path().to_str().unwrap()], 140, 40);
    t.wait_for_all(&["3 of 3 runs", "plan_exec", "react"]);
    t.keys(&["/", "r", "e", "a", "c", "t", "Enter"]);
    t.wait_for("1 of 3 runs");
    t.keys(&["Enter"]);
    t.wait_for_all(&["Steps · react", "event 6/6"]);
    t.keys(&["Home"]);
    t.wait_for("event 0/6");
    t.keys(&["t"]);
    t.wait_for_all(&["event 2/6", "calls     1"]);
    t.keys(&["?"]);
    t.wait_for_all(&["Keys ·", "Esc closes"]);
    // One Escape at a time: two sent together can reach the program as one Alt-Escape.
    t.keys(&["Escape"]);
    t.wait_until("the help closed", |s| !s.contains("Keys ·"));
    t.keys(&["Escape"]);
    // Back in the browser, the filter is still in force.
    t.wait_for("1 of 3 runs");
    t.keys(&["q"]);
    t.wait_exit();
}

#[test]
fn planted_escape_sequences_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let evil = "EVIL\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}]0;PWNED\u{7}\u{1b}[31;1mRED\u{9b}2J";
    let run = common::plan_fails_run();
    let mut bodies: Vec<EventBody> = run.all_events().drain(..).map(|e| e.body).collect();
    for body in &mut bodies {
        match body {
            EventBody::ToolCalled { result, .. } => {
                *result = Observation {
                    text: evil.into(),
                    is_error: false,
                    ..Default::default()
                }
            }
            EventBody::Answer { text } => *text = evil.into(),
            _ => {}
        }
    }
    let mut header = run.header.clone();
    header.task.id = format!("task{evil}");
    let run = common::run_of("x", header, bodies);
    let path = dir.path().join("evil.jsonl");
    common::write_run(&run, &path);

    // A bare path is `replay PATH`.
    let t = Tmux::start(&[dir.path().to_str().unwrap()], 160, 45);
    t.wait_for_frame();
    t.wait_for("1 of 1 runs");
    t.keys(&["Enter"]);
    t.wait_for("Tree · 4 nodes");
    // Show the step whose real result is the planted text.
    t.keys(&["Home", "t"]);
    // The planted escapes are shown escaped.
    t.wait_for_all(&["event 15/20", "\\u{1b}]52;c;"]);
    t.keys(&["q"]);
    t.wait_exit();
    let raw = t.raw();
    // The capture holds the frame that showed the planted text (escaped), so the check below
    // looked at what the terminal really got.
    assert!(
        raw.windows(12).any(|w| w == b"\\u{1b}]52;c;"),
        "the captured output holds the frame with the planted text ({} bytes)",
        raw.len()
    );
    for planted in [
        &b"\x1b]52;"[..],
        b"\x1b]0;PWNED",
        b"\x1b[31;1mRED",
        "\u{9b}2J".as_bytes(),
    ] {
        assert!(
            !raw.windows(planted.len()).any(|w| w == planted),
            "planted {:?} reached the terminal",
            String::from_utf8_lossy(planted)
        );
    }
}

#[test]
fn replay_follows_a_file_another_process_is_still_writing() {
    use cosmos_trajectory::redact::Redactor;
    use cosmos_trajectory::writer::Writer;
    let dir = tempfile::tempdir().unwrap();
    let run = common::plan_fails_run();
    let path = dir.path().join("growing.jsonl");
    let mut writer = Writer::create(
        &path,
        &run.header,
        Redactor::new(),
        Some(cosmos_engine::metrics::run::RunAccumulator::tally(
            &run.header,
        )),
    )
    .unwrap();
    let events = run.all_events();
    let (first, rest) = events.split_at(10);
    for e in first {
        writer.write(e.t_ms, e.body.clone()).unwrap();
    }
    let t = Tmux::start(&["replay", path.to_str().unwrap()], 140, 40);
    t.wait_for_all(&["event 10/10", "LIVE"]);
    // The writer goes on (as `cosmos run --no-tui` elsewhere would); the view follows.
    for e in rest {
        writer.write(e.t_ms, e.body.clone()).unwrap();
    }
    t.wait_for_all(&["event 20/20", "finished (completed)"]);
    // A followed file is not our run: q leaves at once.
    t.keys(&["q"]);
    t.wait_exit();
}

#[test]
fn the_sample_wm_eval_opens_in_the_world_model_view() {
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let file = std::fs::read_dir(&samples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("_wm-eval_"))
        .expect("sample_runs holds a wm-eval file");
    let t = Tmux::start(&["replay", file.to_str().unwrap()], 200, 50);
    t.wait_for_all(&["World models", "memory", "qwen-1.5b", "nobody right first"]);
    t.keys(&["s"]);
    t.wait_for("by step");
    t.keys(&["Enter"]);
    t.wait_for_all(&["Step ", "real", "score "]);
    t.keys(&["Escape"]);
    t.wait_until("the call closed", |s| {
        !s.contains("score ") && s.contains("World models")
    });
    t.keys(&["q"]);
    t.wait_exit();
}

#[test]
fn a_note_written_in_the_explorer_is_there_when_it_is_opened_again_and_the_file_validates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noted.jsonl");
    common::write_run(&common::plan_fails_run(), &path);
    let file = path.to_str().unwrap();
    let t = Tmux::start_with_env(&["replay", file], &[("COSMOS_USER", "e2e")], 120, 36);
    t.wait_for("event ");
    // The failed call's node is selected when the run opens; `A` asks for the note.
    t.keys(&["A"]);
    t.wait_for("note on #");
    for word in ["Mars", "Space", "is", "Space", "no", "Space", "timezone"] {
        t.keys(&[word]);
    }
    t.keys(&["Enter"]);
    t.wait_for("added to the run: note on #");
    t.keys(&["q"]);
    t.wait_exit();

    // Opened again, the note is there: find finds it.
    let t = Tmux::start(&["replay", file], 120, 36);
    t.wait_for("event ");
    t.keys(&["/"]);
    for word in ["Mars", "Space", "timezone", "Space", "e2e"] {
        t.keys(&[word]);
    }
    t.keys(&["Enter"]);
    t.wait_for("hit 1/1");
    t.wait_for("note on #");
    t.keys(&["q"]);
    t.wait_exit();
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["validate", file])
        .output()
        .unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn the_about_view_shows_what_two_spiral_runs_differ_in() {
    let dir = tempfile::tempdir().unwrap();
    for (name, alpha) in [("1.0", 1.0), ("0.5", 0.5)] {
        let mut header = common::header(
            "time_mcp_001",
            cosmos_trajectory::event::AgentKind::Spiral,
            Some("llm"),
        );
        header
            .agent
            .settings
            .insert("k".into(), serde_json::json!(3));
        header
            .agent
            .settings
            .insert("alpha".into(), serde_json::json!(alpha));
        let run = common::run_of("x", header, common::plan_fails_bodies("llm", "US/NewYork"));
        common::write_run(&run, &dir.path().join(format!("alpha-{name}.jsonl")));
    }
    for alpha in ["1.0", "0.5"] {
        let file = dir.path().join(format!("alpha-{alpha}.jsonl"));
        let t = Tmux::start(&["replay", file.to_str().unwrap()], 80, 24);
        t.wait_for("event ");
        t.keys(&["a"]);
        t.wait_for_all(&["About this run", &format!("alpha = {alpha}"), "k = 3"]);
        t.keys(&["Escape"]);
        t.wait_until("the about view closed", |s| !s.contains("About this run"));
        t.keys(&["q"]);
        t.wait_exit();
    }
}

/// Sample runs at 80x24, as a person on a small terminal sees them: a failing ReAct run opens
/// on its failed step with the server's real error; a SPIRAL tree's sibling calls keep the
/// arguments that tell them apart and its marks; every row of compare is reachable.
#[test]
fn the_sample_runs_at_80x24_open_on_the_failure_keep_siblings_apart_and_reach_every_row() {
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let sample = |part: &str| {
        std::fs::read_dir(&samples)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains(part))
            .unwrap_or_else(|| panic!("sample_runs holds a {part} run"))
    };
    // A run with a failed real call opens on it, the real error beside the simulation (the
    // sample runs' real calls all succeeded: a hand-made one, through the real writer).
    let dir = tempfile::tempdir().unwrap();
    let failing = dir.path().join("plan_fails.jsonl");
    common::write_run(&common::plan_fails_run(), &failing);
    let t = Tmux::start(&["replay", failing.to_str().unwrap()], 80, 24);
    t.wait_for_all(&["opened at the first failed call", "real: failed ✗"]);
    t.keys(&["q"]);
    t.wait_exit();

    let spiral = sample("unit_converter_001_spiral_memory");
    let t = Tmux::start(&["replay", spiral.to_str().unwrap()], 80, 24);
    // The root's children differ only in their value: each row keeps it; the calls the world
    // model could not simulate say they have no value.
    t.wait_for_all(&["(…500)", "(…300)", "(15, degrees", "no value ∅", "Q=0.10"]);
    t.keys(&["q"]);
    t.wait_exit();

    // The sample search that finished a path: the about view (`a`) stars the node its
    // `plan_selected` names, from the run's own record.
    let finished = std::fs::read_dir(&samples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| p.to_string_lossy().contains("_spiral_"))
        .find_map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let plan: serde_json::Value = text
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .rfind(|e| e["kind"] == "plan_selected")?;
            (plan["choice"]["pool"] == "finished").then(|| {
                let nodes = plan["nodes"].as_array().unwrap().clone();
                (p, nodes)
            })
        })
        .expect("a sample search that finished a path");
    let (path, nodes) = finished;
    let path_text: Vec<String> = nodes.iter().map(|n| format!("#{n}")).collect();
    let t = Tmux::start(&["replay", path.to_str().unwrap()], 100, 40);
    t.wait_for("Tree");
    t.keys(&["a"]);
    t.wait_for("About this run");
    // Its end: why this plan, the searches, how it ended.
    t.keys(&["End"]);
    t.wait_for_all(&[
        &format!("the plan: {}", path_text.join("→")),
        &format!("★ {} ", path_text.last().unwrap()),
        "chosen among 1 finished paths",
    ]);
    t.keys(&["q"]);
    t.wait_exit();

    let t = Tmux::start(&["replay", samples.to_str().unwrap()], 80, 24);
    t.wait_for("runs");
    t.keys(&["m", "j", "m", "c"]);
    // 13 rows, 14 when a run has calls the world model answered (the proxy session).
    let screen = t.wait_for_all(&["Compare", "rows 1–4 of "]);
    let rows: usize = screen
        .split("rows 1–4 of ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .expect("the row count");
    assert!(rows == 13 || rows == 14, "{screen}");
    t.keys(&["Tab"]);
    t.wait_for("↑/↓ scroll the metrics");
    for _ in 0..rows - 1 {
        t.keys(&["j"]);
    }
    t.wait_for(&format!("rows {}–{rows} of {rows}", rows - 3));
    t.keys(&["q"]);
    t.wait_exit();
}

/// A run opened straight from its file says on the status line that lines were skipped, as it
/// does when opened from the browser: the figures on screen leave them out.
#[test]
fn a_run_with_skipped_lines_says_so_when_opened_directly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("skipped.jsonl");
    // A run without a failed call: the status line has room for what the app says.
    common::write_run(&common::three_runs().remove(0), &path);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(2, "this line is no event");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let t = Tmux::start(&["replay", path.to_str().unwrap()], 160, 30);
    t.wait_for("1 problem(s) reading this run");
    t.keys(&["q"]);
    t.wait_exit();
}

#[test]
fn foreign_files_open_in_the_explorer_as_the_runs_made_of_them() {
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/interchange");
    // A log of two samples opens as the browser over its two runs.
    let eval = fixtures.join("inspect_time_mcp.eval");
    let t = Tmux::start(&["replay", eval.to_str().unwrap()], 160, 40);
    t.wait_for_all(&["2 of 2 runs", "inspect-ai", "mockllm/model"]);
    t.keys(&["q"]);
    t.wait_exit();
    // One ATIF session opens as its run; a folder with it beside a run lists both.
    let atif = fixtures.join("atif_claude_code_time.json");
    let t = Tmux::start(&[atif.to_str().unwrap()], 200, 40);
    // The status line names the file the person gave, never the private copy made of it
    // (removed when cosmos ends).
    let screen = t.wait_for_all(&[
        "Steps · external",
        "time:get_current_time",
        "atif_claude_code_time.json ›",
        "(converted from atif)",
    ]);
    assert!(!screen.contains("cosmos-state-"), "{screen}");
    t.keys(&["q"]);
    t.wait_exit();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&atif, dir.path().join("session.json")).unwrap();
    let run = &common::three_runs()[0];
    common::write_run(run, &dir.path().join("run.jsonl"));
    let t = Tmux::start(&["replay", dir.path().to_str().unwrap()], 160, 40);
    t.wait_for_all(&["2 of 2 runs", "claude-code"]);
    t.keys(&["q"]);
    t.wait_exit();
}
