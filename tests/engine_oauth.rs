//! A remote server behind OAuth: the TypeScript SDK's example server with its own in-memory
//! authorization server (discovery from `WWW-Authenticate`, dynamic client registration,
//! authorization code with PKCE), started by the test on free ports. The browser step is the
//! test's: `$BROWSER` is a small script that fetches the authorization address and follows its
//! redirect to cosmos's loopback port.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::json;
use support::*;

/// The example server, listening (`MCP_PORT`, `MCP_AUTH_PORT`); killed on drop.
struct Protected {
    child: Child,
    url: String,
}

impl Drop for Protected {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn example(name: &str) -> PathBuf {
    servers()
        .join("npm/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server")
        .join(name)
}

/// Starts the example server on free ports and waits for both to listen (their lines on its
/// stdout). A port taken meanwhile by another process ends it at start: then new ports.
fn protected_server() -> Protected {
    for _ in 0..5 {
        let (port, auth_port) = (unused_port(), unused_port());
        let mut child = Command::new("node")
            .arg(example("simpleStreamableHttp.js"))
            .arg("--oauth")
            .env("MCP_PORT", port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs the SDK's example server");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut listening = 0;
        for line in lines.by_ref() {
            let Ok(line) = line else { break };
            if line.contains("listening on port") {
                listening += 1;
                if listening == 2 {
                    break;
                }
            }
        }
        // It logs every request: its output is read to the end, or a full (or closed) pipe
        // would stop it.
        std::thread::spawn(move || lines.for_each(drop));
        if listening == 2 {
            return Protected {
                child,
                url: format!("http://localhost:{port}/mcp"),
            };
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("the OAuth example server would not start");
}

/// A `$BROWSER` that opens the address as a browser would: fetches it, following redirects.
fn browser(dir: &Path) -> PathBuf {
    let script = dir.join("browser.py");
    std::fs::write(
        &script,
        format!(
            "#!{}\nimport sys, urllib.request\nurllib.request.urlopen(sys.argv[1], timeout=30).read()\n",
            python()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// The binary with the test's token store, log file and (when given) browser and planner.
fn cosmos_with(
    dir: &Path,
    args: &[&str],
    browser: Option<&Path>,
    llm: Option<&ScriptedLlm>,
) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cosmos"));
    command
        .args(args)
        .env("COSMOS_CACHE", dir.join("cache"))
        .env("COSMOS_LOG_FILE", dir.join("cosmos.log"))
        .env_remove("BROWSER");
    if let Some(b) = browser {
        command.env("BROWSER", b);
    }
    if let Some(llm) = llm {
        command
            .env("OPENAI_BASE_URL", llm.base_url())
            .env("OPENAI_API_KEY", "sk-test")
            .env("COSMOS_MODEL", "scripted-model");
    }
    command.output().unwrap()
}

fn token_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join("cache/oauth"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[test]
fn a_run_asks_for_a_login_first_then_uses_the_stored_token_and_records_none_of_it() {
    let server = protected_server();
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), json!({"demo": {"url": server.url}}));
    let mcp_arg = mcp.to_str().unwrap();
    let task = dir.path().join("task.json");
    std::fs::write(
        &task,
        json!({"id": "greet_1", "request": "Greet Lyon."}).to_string(),
    )
    .unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "1. demo:greet", "content": finish("greeted")},
        {"when": "No tool has been called yet", "content": call("demo:greet", json!({"name": "Lyon"}))},
        {"content": "greeted"}
    ]));
    let out = dir.path().join("runs");
    let run_args = [
        "run",
        "--mcp-config",
        mcp_arg,
        "--task",
        task.to_str().unwrap(),
        "--agent",
        "react",
        "--out",
        out.to_str().unwrap(),
        "--no-tui",
    ];

    // Not logged in: the run stops before any server starts, naming the command.
    let refused = cosmos_with(dir.path(), &run_args, None, Some(&llm));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains(&format!(
            "server \"demo\" needs a login: run `cosmos login demo --mcp-config {mcp_arg}`"
        )),
        "{}",
        text(&refused)
    );
    assert!(!out.exists(), "no run file for a run that could not start");

    // The login: PKCE through the "browser", the code back on a loopback port.
    let logged = cosmos_with(
        dir.path(),
        &["login", "demo", "--mcp-config", mcp_arg],
        Some(&browser(dir.path())),
        None,
    );
    assert!(logged.status.success(), "{}", text(&logged));
    let files = token_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&files[0]), 0o600, "owner-only tokens");
    assert_eq!(mode(&dir.path().join("cache/oauth")), 0o700);
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    let token = stored["credentials"]["token_response"]["access_token"]
        .as_str()
        .expect("an access token")
        .to_string();

    // The run uses the stored token, without a login.
    let ran = cosmos_with(dir.path(), &run_args, None, Some(&llm));
    assert!(ran.status.success(), "{}", text(&ran));
    let run = only_run(&out);
    let greeted = events(&run)
        .into_iter()
        .find(|e| e["kind"] == "tool_called")
        .unwrap();
    assert_eq!(greeted["error"], serde_json::Value::Null, "{greeted}");
    assert!(
        greeted["result"]["text"]
            .as_str()
            .unwrap()
            .contains("Hello, Lyon"),
        "{greeted}"
    );
    // No token anywhere cosmos wrote.
    for written in [run.clone(), dir.path().join("cosmos.log")] {
        let text = std::fs::read_to_string(&written).unwrap_or_default();
        assert!(
            !text.contains(&token),
            "the token is in {}",
            written.display()
        );
    }
    assert!(!text(&ran).contains(&token));

    // Logged out, the next run asks again.
    let out_of = cosmos_with(
        dir.path(),
        &["logout", "demo", "--mcp-config", mcp_arg],
        None,
        None,
    );
    assert!(out_of.status.success(), "{}", text(&out_of));
    assert!(token_files(dir.path()).is_empty());
    let again = cosmos_with(dir.path(), &run_args, None, Some(&llm));
    assert!(text(&again).contains("needs a login"), "{}", text(&again));
}

#[test]
fn a_login_without_a_browser_prints_the_address_and_gives_up_when_nobody_comes() {
    let server = protected_server();
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), json!({"demo": {"url": server.url}}));
    let waited = cosmos_with(
        dir.path(),
        &[
            "login",
            "demo",
            "--mcp-config",
            mcp.to_str().unwrap(),
            "--timeout-s",
            "1",
        ],
        None,
        None,
    );
    assert_eq!(waited.status.code(), Some(1));
    let said = text(&waited);
    assert!(said.contains("open this address to log in"), "{said}");
    assert!(said.contains("code_challenge="), "PKCE: {said}");
    assert!(said.contains("no login within 1s"), "{said}");
    assert!(token_files(dir.path()).is_empty());
}
