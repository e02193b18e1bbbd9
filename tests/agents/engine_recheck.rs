//! `cosmos recheck` against real servers: a run recorded with `cosmos run`, its calls made
//! again once the server answers differently, once it is gone, and with `--all`.

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::*;

fn recheck(run: &Path, mcp: &Path, extra: &[&str]) -> (std::process::Output, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "recheck",
            run.to_str().unwrap(),
            "--mcp-config",
            mcp.to_str().unwrap(),
            "--format",
            "json",
        ])
        .args(extra)
        .env(
            "COSMOS_LOG_FILE",
            std::env::temp_dir().join(format!("cosmos-recheck-{}.log", std::process::id())),
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    (out, doc[0].clone())
}

#[test]
fn a_changed_answer_is_drift_and_a_tool_not_read_only_waits_for_all() {
    let dir = tempfile::tempdir().unwrap();
    let run = forecast_then_ok_run(dir.path());
    let header = &events(&run)[0];
    let forecast = header["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "flaky:forecast")
        .unwrap();
    assert_eq!(
        forecast["annotations"]["readOnlyHint"], true,
        "annotations are recorded with each tool"
    );

    // Today the server says rain.
    let calls_file = dir.path().join("calls.txt");
    let today = dir.path().join("today");
    std::fs::create_dir_all(&today).unwrap();
    let mut server = flaky_server();
    server["env"] =
        json!({"FLAKY_SKY": "rain", "FLAKY_CALLS_FILE": calls_file.display().to_string()});
    let mcp = write_mcp_config(&today, json!({"flaky": server}));
    let (_, found) = recheck(&run, &mcp, &[]);
    let calls = found["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{found}");
    assert_eq!(calls[0]["tool"], "flaky:forecast");
    assert_eq!(calls[0]["drift"], "changed");
    let fidelity = calls[0]["fidelity"].as_f64().unwrap();
    assert!(fidelity > 0.0 && fidelity < 1.0, "{fidelity}");
    assert_eq!(calls[0]["result"]["structured"]["sky"], "rain");
    assert_eq!(found["skipped"], json!([2]));
    // The tool that is not read-only was never called.
    assert_eq!(std::fs::read_to_string(&calls_file).unwrap(), "forecast\n");
    // Appended to the run, which still validates, and the explorer's line says it.
    let appended = events(&run);
    let last = appended.last().unwrap();
    assert_eq!(last["kind"], "recheck");
    let validated = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["validate", run.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(validated.status.success(), "{}", text(&validated));
    let opened = cosmos_trajectory::run::Run::open(&run).unwrap();
    let said = cosmos_trajectory::describe::summary(
        &opened.event(opened.len() - 1),
        cosmos_trajectory::describe::Latencies::of(&opened.header),
    );
    assert!(
        said.contains("1 of 1 calls changed") && said.contains("1 skipped"),
        "{said}"
    );
    // The run's about view says it too, and marks the read-only tool.
    let about = about_text(opened);
    assert!(about.contains("against today's servers"), "{about}");
    assert!(
        about.contains("step 1 flaky:forecast: changed fidelity"),
        "{about}"
    );
    assert!(about.contains("flaky:forecast (read-only)"), "{about}");

    // With --all, the other call is made too (and said first); the same answer is the same.
    let (out, found) = recheck(&run, &mcp, &["--all"]);
    assert!(text(&out).contains("step 2 flaky:ok"), "{}", text(&out));
    let drifts: Vec<&str> = found["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["drift"].as_str().unwrap())
        .collect();
    assert_eq!(drifts, ["changed", "same"]);
    assert_eq!(found["skipped"], json!([]));

    // A config without the server: gone.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mcp = write_mcp_config(&elsewhere, json!({"other": flaky_server()}));
    let (_, found) = recheck(&run, &mcp, &[]);
    assert_eq!(found["calls"][0]["drift"], "server_gone");
    assert!(
        found["calls"][0]["error"]
            .as_str()
            .unwrap()
            .contains("not in the MCP config")
    );

    // A server that will not start: gone too, saying why; the table says it in a row.
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    let mcp = write_mcp_config(&broken, json!({"flaky": {"command": "/nonexistent/flaky"}}));
    let table = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "recheck",
            run.to_str().unwrap(),
            "--mcp-config",
            mcp.to_str().unwrap(),
        ])
        .env("COSMOS_LOG_FILE", dir.path().join("recheck.log"))
        .output()
        .unwrap();
    assert!(table.status.success(), "{}", text(&table));
    let printed = String::from_utf8_lossy(&table.stdout);
    assert!(
        // A call whose server is gone was not made: no change is claimed for it. Neither
        // call's tool is offered today, so neither is skipped for its annotation: both are gone.
        printed.contains("0 of 0 calls changed, 2 not made (server gone)"),
        "{printed}"
    );
    assert!(
        printed.contains("server_gone") && printed.contains("server flaky did not start"),
        "{printed}"
    );
}

#[test]
fn a_run_that_is_still_being_written_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let run = forecast_then_ok_run(dir.path());
    // Its last line, run_finished, taken off: as the file of a run still going.
    let text_of = std::fs::read_to_string(&run).unwrap();
    let kept: Vec<&str> = text_of
        .lines()
        .filter(|l| !l.contains("\"run_finished\""))
        .collect();
    std::fs::write(&run, kept.join("\n") + "\n").unwrap();
    let mcp = write_mcp_config(dir.path(), json!({"flaky": flaky_server()}));
    let out = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "recheck",
            run.to_str().unwrap(),
            "--mcp-config",
            mcp.to_str().unwrap(),
        ])
        .env("COSMOS_LOG_FILE", dir.path().join("recheck.log"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("has not finished"), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&run).unwrap(),
        kept.join("\n") + "\n",
        "nothing appended"
    );
}

/// A recording whose header was edited to call a tool that is not read-only (`flaky:ok`)
/// read-only: recheck decides from what the server says today, so without `--all` that tool
/// is never called (counted on the server's own log).
#[test]
fn a_forged_read_only_annotation_in_the_file_does_not_get_a_tool_called() {
    let dir = tempfile::tempdir().unwrap();
    let run = forecast_then_ok_run(dir.path());
    let recorded = std::fs::read_to_string(&run).unwrap();
    let mut lines: Vec<String> = recorded.lines().map(str::to_string).collect();
    let mut header: Value = serde_json::from_str(&lines[0]).unwrap();
    let ok = header["tools"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["name"] == "flaky:ok")
        .unwrap();
    ok["annotations"] = json!({"readOnlyHint": true});
    lines[0] = header.to_string();
    std::fs::write(&run, lines.join("\n") + "\n").unwrap();

    let calls_file = dir.path().join("calls.txt");
    let today = dir.path().join("today");
    std::fs::create_dir_all(&today).unwrap();
    let mut server = flaky_server();
    server["env"] = json!({"FLAKY_CALLS_FILE": calls_file.display().to_string()});
    let mcp = write_mcp_config(&today, json!({"flaky": server}));
    let (out, found) = recheck(&run, &mcp, &[]);
    assert_eq!(
        std::fs::read_to_string(&calls_file).unwrap(),
        "forecast\n",
        "only the tool the server annotates read-only today was called: {found}"
    );
    assert_eq!(found["skipped"], json!([2]), "{found}");
    assert!(
        !text(&out).contains("making 1 call"),
        "no call of a tool that is not read-only was made: {}",
        text(&out)
    );
}

/// A run whose forecast call's line is torn: the recheck says the line it could not read (on
/// stderr, in the JSON and in the table), instead of "0 of 0 calls changed" with nothing more.
#[test]
fn a_torn_call_line_is_said_not_silently_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let run = forecast_then_ok_run(dir.path());
    with_torn_line(&run, &["\"kind\":\"tool_called\"", "flaky:forecast"], &run);
    let today = dir.path().join("today");
    std::fs::create_dir_all(&today).unwrap();
    let mcp = write_mcp_config(&today, json!({"flaky": flaky_server()}));
    let (out, found) = recheck(&run, &mcp, &[]);
    let lines = found["skipped_lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "{found}");
    assert!(found["calls"].as_array().unwrap().is_empty(), "{found}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(lines[0].as_str().unwrap()),
        "stderr did not say it: {said}"
    );
    // The table says it beside its summary.
    let table = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "recheck",
            run.to_str().unwrap(),
            "--mcp-config",
            mcp.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&table.stdout);
    assert!(
        shown.contains("1 line(s) of the file could not be read"),
        "{shown}"
    );
}
