//! A remote server behind OAuth: the TypeScript SDK's example server with its own in-memory
//! authorization server (discovery from `WWW-Authenticate`, dynamic client registration,
//! authorization code with PKCE), started by the test on free ports. The browser step is the
//! test's: `$BROWSER` is a small script that fetches the authorization address and follows its
//! redirect to cosmos's loopback port.

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};
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

/// Starts a server that takes its two ports from its environment (`start` makes the command
/// for them), and waits until `ready` has appeared `times` times on its stdout (or stderr); the
/// rest of that output is read to the end in the background, as a server that logs every
/// request stops on a full or closed pipe. A port taken meanwhile by another process ends it
/// at start: then new ports.
fn on_free_ports(
    start: impl Fn(u16, u16) -> Command,
    on_stderr: bool,
    ready: &str,
    times: usize,
    url: impl Fn(u16) -> String,
) -> Protected {
    for _ in 0..5 {
        let (port, auth_port) = (unused_port(), unused_port());
        let mut command = start(port, auth_port);
        if on_stderr {
            command.stdout(Stdio::null()).stderr(Stdio::piped());
        } else {
            command.stdout(Stdio::piped()).stderr(Stdio::null());
        }
        let mut child = command.spawn().expect("the server's program runs");
        let output: Box<dyn std::io::Read + Send> = if on_stderr {
            Box::new(child.stderr.take().unwrap())
        } else {
            Box::new(child.stdout.take().unwrap())
        };
        let mut lines = BufReader::new(output).lines();
        let seen = lines
            .by_ref()
            .map_while(Result::ok)
            .filter(|l| l.contains(ready))
            .take(times)
            .count();
        std::thread::spawn(move || lines.for_each(drop));
        if seen == times {
            return Protected {
                child,
                url: url(port),
            };
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("the OAuth server would not start");
}

/// The SDK's example server and its authorization server, both listening.
fn protected_server() -> Protected {
    on_free_ports(
        |port, auth_port| {
            let mut node = Command::new("node");
            node.arg(example("simpleStreamableHttp.js"))
                .arg("--oauth")
                .env("MCP_PORT", port.to_string())
                .env("MCP_AUTH_PORT", auth_port.to_string());
            node
        },
        false,
        "listening on port",
        2,
        |port| format!("http://localhost:{port}/mcp"),
    )
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
    // Commands that list or call servers say what is missing too.
    let listed = cosmos_with(
        dir.path(),
        &["servers", "--mcp-config", mcp_arg],
        None,
        None,
    );
    assert!(
        text(&listed).contains("it needs a login: run `cosmos login demo --mcp-config FILE`"),
        "{}",
        text(&listed)
    );

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

/// A server that takes the connection and never answers: the login's discovery ends within
/// `--timeout-s` saying so, instead of hanging.
#[test]
fn a_login_whose_server_never_answers_ends_within_its_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepted and held, never answered.
    let held = std::thread::spawn(move || {
        let mut kept = Vec::new();
        for stream in listener.incoming().take(8) {
            kept.push(stream);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(
        dir.path(),
        json!({"silent": {"url": format!("http://127.0.0.1:{port}/mcp")}}),
    );
    let started = std::time::Instant::now();
    let waited = cosmos_with(
        dir.path(),
        &[
            "login",
            "silent",
            "--mcp-config",
            mcp.to_str().unwrap(),
            "--timeout-s",
            "2",
        ],
        None,
        None,
    );
    let took = started.elapsed();
    assert_eq!(waited.status.code(), Some(1), "{}", text(&waited));
    assert!(
        text(&waited).contains("did not answer discovery or registration within 2s"),
        "{}",
        text(&waited)
    );
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    drop(held);
}

/// `tests/support/oauth_server.py`: a FastMCP server behind an authorization server of the
/// test's own (refresh tokens, the client-credentials grant, a grants log), listening.
fn own_server(dir: &Path, env: &[(&str, &str)]) -> Protected {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/oauth_server.py");
    on_free_ports(
        |port, auth_port| {
            let mut python = Command::new(python());
            python
                .arg(&script)
                .env("MCP_PORT", port.to_string())
                .env("AUTH_PORT", auth_port.to_string())
                .env("GRANTS_FILE", dir.join("grants.txt"))
                .envs(env.iter().copied());
            python
        },
        // uvicorn says on stderr when it listens.
        true,
        "Uvicorn running on",
        1,
        |port| format!("http://127.0.0.1:{port}/mcp"),
    )
}

/// A ReAct run of one `whoami` call against `mcp`, into `dir/runs`, with `env` added; it must
/// get in.
fn whoami_run(dir: &Path, mcp: &Path, env: &[(&str, &str)]) -> (Output, PathBuf) {
    let (ran, run, result) = one_call_run(dir, mcp, "prot:whoami", env);
    assert_eq!(result["result"]["text"], "you are logged in", "{result}");
    (ran, run)
}

/// A ReAct run of one call of `tool` against `mcp`, into `dir/runs` (emptied first), with
/// `env` added: the output, the run and its `tool_called`.
fn one_call_run(
    dir: &Path,
    mcp: &Path,
    tool: &str,
    env: &[(&str, &str)],
) -> (Output, PathBuf, Value) {
    let task = dir.join("task.json");
    std::fs::write(
        &task,
        json!({"id": "call_1", "request": "Call the tool."}).to_string(),
    )
    .unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": format!("1. {tool}"), "content": finish("done")},
        {"when": "No tool has been called yet", "content": call(tool, json!({}))},
        {"content": "done"}
    ]));
    let out = dir.join("runs");
    let _ = std::fs::remove_dir_all(&out);
    let mut command = Command::new(env!("CARGO_BIN_EXE_cosmos"));
    command
        .args([
            "run",
            "--mcp-config",
            mcp.to_str().unwrap(),
            "--task",
            task.to_str().unwrap(),
            "--agent",
            "react",
            "--out",
            out.to_str().unwrap(),
            "--no-tui",
        ])
        .env("COSMOS_CACHE", dir.join("cache"))
        .env("COSMOS_LOG_FILE", dir.join("cosmos.log"))
        .env("COSMOS_LOG", "debug")
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .env("COSMOS_MODEL", "scripted-model")
        .envs(env.iter().copied());
    let ran = command.output().unwrap();
    assert!(ran.status.success(), "{}", text(&ran));
    let run = only_run(&out);
    let result = events(&run)
        .into_iter()
        .find(|e| e["kind"] == "tool_called")
        .unwrap();
    (ran, run, result)
}

/// What the test's authorization server granted, a line each (`tests/support/oauth_server.py`).
fn grants(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("grants.txt")).unwrap()
}

/// The access and refresh tokens in the token store.
fn stored_tokens(dir: &Path) -> Vec<String> {
    token_files(dir)
        .iter()
        .flat_map(|f| {
            let v: serde_json::Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
            ["access_token", "refresh_token"]
                .iter()
                .filter_map(|k| {
                    v["credentials"]["token_response"][k]
                        .as_str()
                        .map(String::from)
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn nothing_holds(dir: &Path, run: &Path, secrets: &[String]) {
    for written in [run.to_path_buf(), dir.join("cosmos.log")] {
        let text = std::fs::read_to_string(&written).unwrap_or_default();
        for s in secrets {
            assert!(
                !text.contains(s.as_str()),
                "{s} is in {}",
                written.display()
            );
        }
    }
}

#[test]
fn an_expired_login_is_refreshed_before_the_run_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    // The login's token is issued already expired: the server refuses it, so only a refreshed
    // one gets the run in.
    let server = own_server(dir.path(), &[("FIRST_TTL", "0")]);
    // A stdio server beside it writes down what it was given: no token may be there.
    let env_file = dir.path().join("stdio-env.txt");
    let mut beside = flaky_server();
    beside["env"] = json!({"FLAKY_ENV_FILE": env_file.display().to_string()});
    let mcp = write_mcp_config(
        dir.path(),
        json!({"prot": {"url": server.url}, "flaky": beside}),
    );
    let logged = cosmos_with(
        dir.path(),
        &["login", "prot", "--mcp-config", mcp.to_str().unwrap()],
        Some(&browser(dir.path())),
        None,
    );
    assert!(logged.status.success(), "{}", text(&logged));
    let before = stored_tokens(dir.path());
    let (_, run) = whoami_run(dir.path(), &mcp, &[]);
    let granted = grants(dir.path());
    assert_eq!(granted, "register\nauthorization_code\nrefresh_token\n");
    let after = stored_tokens(dir.path());
    assert_ne!(before, after, "the refreshed tokens are stored");
    let secrets = [before, after].concat();
    nothing_holds(dir.path(), &run, &secrets);
    let given = std::fs::read_to_string(&env_file).expect("the stdio server started");
    for s in &secrets {
        assert!(
            !given.contains(s.as_str()),
            "a token reached a server's environment"
        );
    }
}

/// The test's own server, knowing the client `cosmos-ci` with `secret`, and an `mcp.json`
/// that reaches it with the client-credentials grant (the secret from `$CI_SECRET`).
fn client_credentials_server(dir: &Path, secret: &str) -> (Protected, PathBuf) {
    let server = own_server(
        dir,
        &[("CLIENT_ID", "cosmos-ci"), ("CLIENT_SECRET", secret)],
    );
    let mcp = write_mcp_config(
        dir,
        json!({"prot": {"url": server.url, "oauth": {
            "grant": "client_credentials", "client_id": "cosmos-ci", "client_secret": "${CI_SECRET}"
        }}}),
    );
    (server, mcp)
}

#[test]
fn the_client_credentials_grant_runs_unattended_in_a_run_and_a_sweep_cell() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "cc-secret-0a1b2c3d4e5f";
    let (_server, mcp) = client_credentials_server(dir.path(), secret);
    // No login: the run gets its own token.
    let (_, run) = whoami_run(dir.path(), &mcp, &[("CI_SECRET", secret)]);
    let granted = grants(dir.path());
    assert_eq!(granted, "client_credentials\n");
    nothing_holds(
        dir.path(),
        &run,
        &[vec![secret.to_string()], stored_tokens(dir.path())].concat(),
    );

    // A sweep cell, unattended.
    let tasks = dir.path().join("tasks.json");
    std::fs::write(
        &tasks,
        json!({"tasks": [{"id": "whoami_1", "request": "Who am I?"}]}).to_string(),
    )
    .unwrap();
    let spec = dir.path().join("sweep.toml");
    std::fs::write(
        &spec,
        format!(
            "mcp_config = \"{}\"\n[[tasks]]\nfile = \"tasks.json\"\n[[configs]]\nname = \"react\"\nagent = \"react\"\nmax_steps = 2\n",
            mcp.display()
        ),
    )
    .unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "1. prot:whoami", "content": finish("logged in")},
        {"when": "No tool has been called yet", "content": call("prot:whoami", json!({}))},
        {"content": "logged in"}
    ]));
    let swept = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["sweep", spec.to_str().unwrap(), "--no-tui"])
        .env("COSMOS_CACHE", dir.path().join("cache"))
        .env("COSMOS_LOG_FILE", dir.path().join("cosmos.log"))
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .env("COSMOS_MODEL", "scripted-model")
        .env("CI_SECRET", secret)
        .output()
        .unwrap();
    assert!(swept.status.success(), "{}", text(&swept));
    let cell = only_run(&dir.path().join("runs/sweep"));
    let called = events(&cell)
        .into_iter()
        .find(|e| e["kind"] == "tool_called")
        .unwrap();
    assert_eq!(called["result"]["text"], "you are logged in");
    nothing_holds(dir.path(), &cell, &[secret.to_string()]);
}

/// A server that refuses a call for want of a scope (403 `insufficient_scope`): a
/// client-credentials server gets a token with the scopes held and asked for, and the call is
/// made again; a login cannot be repeated in a run, so the call fails naming the command that
/// steps it up, and after that login the same run gets in.
#[test]
fn a_call_refused_for_want_of_a_scope_steps_the_token_up() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "cc-secret-9f8e7d6c5b4a";
    let (server, unattended) = client_credentials_server(dir.path(), secret);
    let (_, run, called) = one_call_run(
        dir.path(),
        &unattended,
        "prot:admin_report",
        &[("CI_SECRET", secret)],
    );
    assert_eq!(called["result"]["text"], "the admin report", "{called}");
    let granted = grants(dir.path());
    assert_eq!(
        granted, "client_credentials\nclient_credentials read admin\n",
        "a first token, then one with the scopes asked for"
    );
    nothing_holds(
        dir.path(),
        &run,
        &[vec![secret.to_string()], stored_tokens(dir.path())].concat(),
    );

    // A person's login: the run says how to step it up.
    let attended = dir.path().join("attended.json");
    std::fs::write(
        &attended,
        json!({"mcpServers": {"prot": {"url": server.url}}}).to_string(),
    )
    .unwrap();
    let login = |more: &[&str]| {
        let mut args = vec!["login", "prot", "--mcp-config", attended.to_str().unwrap()];
        args.extend_from_slice(more);
        let logged = cosmos_with(dir.path(), &args, Some(&browser(dir.path())), None);
        assert!(logged.status.success(), "{}", text(&logged));
    };
    login(&[]);
    let (_, _, refused) = one_call_run(dir.path(), &attended, "prot:admin_report", &[]);
    let said = refused["error"].as_str().unwrap_or_default();
    assert!(
        said.contains("asks for scope \"read admin\"")
            && said.contains("cosmos login prot --mcp-config FILE --scope read --scope admin"),
        "{refused}"
    );
    login(&["--scope", "read", "--scope", "admin"]);
    let (_, run, called) = one_call_run(dir.path(), &attended, "prot:admin_report", &[]);
    assert_eq!(called["result"]["text"], "the admin report", "{called}");
    nothing_holds(dir.path(), &run, &stored_tokens(dir.path()));
}

/// A client with a client ID metadata document logs in under that document's address at an
/// authorization server that takes them: no dynamic registration, and the stored login is that
/// client's.
#[test]
fn a_client_metadata_document_is_the_logins_client_id() {
    let dir = tempfile::tempdir().unwrap();
    let document = "https://cosmos.example/oauth/client.json";
    let documents = dir.path().join("documents.json");
    std::fs::write(
        &documents,
        json!({document: {
            "client_id": document,
            "client_name": "mcp-cosmos",
            "redirect_uris": ["http://127.0.0.1/callback"],
            "token_endpoint_auth_method": "none"
        }})
        .to_string(),
    )
    .unwrap();
    let server = own_server(dir.path(), &[("CIMD_DOCS", documents.to_str().unwrap())]);
    let mcp = write_mcp_config(
        dir.path(),
        json!({"prot": {"url": server.url, "oauth": {"client_metadata_url": document}}}),
    );
    let logged = cosmos_with(
        dir.path(),
        &["login", "prot", "--mcp-config", mcp.to_str().unwrap()],
        Some(&browser(dir.path())),
        None,
    );
    assert!(logged.status.success(), "{}", text(&logged));
    let granted = grants(dir.path());
    assert_eq!(granted, "authorization_code\n", "no registration");
    let stored: Value =
        serde_json::from_slice(&std::fs::read(&token_files(dir.path())[0]).unwrap()).unwrap();
    assert_eq!(stored["credentials"]["client_id"], document);
    whoami_run(dir.path(), &mcp, &[]);
}

/// A client-credentials server has no login: `cosmos login` says so instead of opening a
/// browser flow with that client.
/// A token endpoint that answers with megabytes, or never: the reply is refused past its
/// bound, or given up on within the token request's time; the server is said not started and
/// why, and nothing of the endpoint's reply is kept or echoed.
#[test]
fn a_token_endpoint_that_floods_or_never_answers_is_given_up_on_saying_why() {
    for (reply, said) in [
        ("silent", "its token endpoint did not answer within 15s"),
        // rmcp refuses a reply over 1 MiB, in its own words.
        ("huge", "Token exchange failed"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let secret = "cc-secret-0a1b2c3d4e5f";
        let server = own_server(
            dir.path(),
            &[
                ("CLIENT_ID", "cosmos-ci"),
                ("CLIENT_SECRET", secret),
                ("TOKEN_REPLY", reply),
            ],
        );
        let mcp = write_mcp_config(
            dir.path(),
            json!({"prot": {"url": server.url, "oauth": {
                "grant": "client_credentials", "client_id": "cosmos-ci",
                "client_secret": "${CI_SECRET}"
            }}}),
        );
        let started = std::time::Instant::now();
        let listed = Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .args(["servers", "--mcp-config", mcp.to_str().unwrap()])
            .env("COSMOS_CACHE", dir.path().join("cache"))
            .env("COSMOS_LOG_FILE", dir.path().join("cosmos.log"))
            .env("CI_SECRET", secret)
            .output()
            .unwrap();
        let out = text(&listed);
        assert!(!listed.status.success(), "{reply}: {out}");
        assert!(out.contains(said), "{reply}: {out}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(25),
            "{reply}: {out}"
        );
        assert!(
            !out.contains("aaaaaaaaaaaaaaaa"),
            "{reply}: the token echoed"
        );
        assert!(token_files(dir.path()).is_empty(), "{reply}: a token kept");
    }
}

/// An identity provider whose token-exchange reply is garbage or megabytes long: the
/// enterprise-managed grant fails at once, saying which exchange and why; neither the user's
/// ID token nor the reply is echoed, and no token is kept.
#[test]
fn an_identity_provider_that_answers_garbage_or_floods_fails_the_exchange_saying_why() {
    for (body, name) in [
        ("this is no token".to_string(), "garbage"),
        (
            format!("{{\"access_token\": \"{}\"}}", "a".repeat(4 << 20)),
            "huge",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let server = own_server(
            dir.path(),
            &[
                ("CLIENT_ID", "ema-client"),
                ("CLIENT_SECRET", "ema-secret-77"),
            ],
        );
        let idp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let idp_url = format!("http://{}", idp.local_addr().unwrap());
        std::thread::spawn(move || {
            use std::io::{Read, Write};
            for stream in idp.incoming().flatten() {
                let mut stream = stream;
                let mut request = [0u8; 8192];
                let _ = stream.read(&mut request);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        let id_token = "eyJ.the-users-id-token.sig";
        let mcp = write_mcp_config(
            dir.path(),
            json!({"prot": {"url": server.url, "oauth": {
                "grant": "enterprise_managed", "client_id": "ema-client",
                "client_secret": "ema-secret-77", "id_token": "${USER_ID_TOKEN}",
                "idp_issuer": idp_url, "idp_token_endpoint": format!("{idp_url}/token"),
                "idp_client_id": "idp-client",
            }}}),
        );
        let started = std::time::Instant::now();
        let listed = Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .args(["servers", "--mcp-config", mcp.to_str().unwrap()])
            .env("COSMOS_CACHE", dir.path().join("cache"))
            .env("COSMOS_LOG_FILE", dir.path().join("cosmos.log"))
            .env("USER_ID_TOKEN", id_token)
            .output()
            .unwrap();
        let out = text(&listed);
        assert!(!listed.status.success(), "{name}: {out}");
        assert!(
            out.contains("enterprise-managed authorization"),
            "{name}: {out}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(25),
            "{name}: {out}"
        );
        assert!(
            !out.contains(id_token) && !out.contains("aaaaaaaaaaaaaaaa"),
            "{name}: {out}"
        );
        let log = std::fs::read_to_string(dir.path().join("cosmos.log")).unwrap_or_default();
        assert!(
            !log.contains(id_token),
            "{name}: the ID token reached the log"
        );
        assert!(token_files(dir.path()).is_empty(), "{name}: a token kept");
    }
}

#[test]
fn a_client_credentials_server_has_no_login_to_make() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(
        dir.path(),
        json!({"prot": {"url": "http://127.0.0.1:9/mcp", "oauth": {
            "grant": "client_credentials", "client_id": "cosmos-ci", "client_secret": "s3cret-value"
        }}}),
    );
    let refused = cosmos_with(
        dir.path(),
        &["login", "prot", "--mcp-config", mcp.to_str().unwrap()],
        None,
        None,
    );
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("there is no login to make"),
        "{}",
        text(&refused)
    );
    assert!(token_files(dir.path()).is_empty());
}

use crate::common::tmux;

/// In the live explorer, a call refused for want of a scope asks the person to log in again
/// there: the address is shown (and opened with `$BROWSER`), and once the browser comes back
/// the call is made again and gets in.
#[test]
fn in_the_live_explorer_a_refused_call_steps_the_login_up_there() {
    let dir = tempfile::tempdir().unwrap();
    let server = own_server(dir.path(), &[]);
    let mcp = write_mcp_config(dir.path(), json!({"prot": {"url": server.url}}));
    let browser = browser(dir.path());
    let logged = cosmos_with(
        dir.path(),
        &["login", "prot", "--mcp-config", mcp.to_str().unwrap()],
        Some(&browser),
        None,
    );
    assert!(logged.status.success(), "{}", text(&logged));
    let task = dir.path().join("task.json");
    std::fs::write(
        &task,
        json!({"id": "admin_1", "request": "Get the admin report."}).to_string(),
    )
    .unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "1. prot:admin_report", "content": finish("reported")},
        {"when": "No tool has been called yet", "content": call("prot:admin_report", json!({}))},
        {"content": "reported"}
    ]));
    let out = dir.path().join("runs");
    let (base, cache, mcp, task, out_dir, browser) = (
        llm.base_url(),
        dir.path().join("cache").display().to_string(),
        mcp.display().to_string(),
        task.display().to_string(),
        out.display().to_string(),
        browser.display().to_string(),
    );
    let t = tmux::Tmux::start_with_env(
        &[
            "run",
            "--mcp-config",
            &mcp,
            "--task",
            &task,
            "--agent",
            "react",
            "--out",
            &out_dir,
        ],
        &[
            ("OPENAI_BASE_URL", &base),
            ("OPENAI_API_KEY", "sk-test"),
            ("COSMOS_MODEL", "scripted-model"),
            ("COSMOS_CACHE", &cache),
            ("BROWSER", &browser),
        ],
        120,
        40,
    );
    t.wait_for_all(&[
        "A page to open",
        "asks for scope \"read admin\"",
        "Done: the call goes on",
    ]);
    t.keys(&["Enter"]);
    t.wait_until("the run has finished", |s| {
        !s.contains("A page to open") && s.contains("run_finished")
    });
    t.keys(&["q"]);
    t.wait_exit();
    let ev = events(&only_run(&out));
    let called = ev.iter().find(|e| e["kind"] == "tool_called").unwrap();
    assert_eq!(called["result"]["text"], "the admin report", "{called}");
    let granted = grants(dir.path());
    assert_eq!(
        granted, "register\nauthorization_code\nregister\nauthorization_code\n",
        "a login, then one stepped up"
    );
    nothing_holds(dir.path(), &only_run(&out), &stored_tokens(dir.path()));
}

/// The scope of the token stored for the one login in `dir`'s store.
fn stored_scope(dir: &Path) -> Value {
    let files = token_files(dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let stored: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    stored["credentials"]["token_response"]["scope"].clone()
}

/// A server that names its protected-resource metadata only in its 401 challenge, and whose
/// GET opens an event stream that never ends: `cosmos login` finds the authorization server
/// from the challenge and asks for the challenge's scope (the entry names none); a login
/// nobody completes still ends within `--timeout-s`; the run then gets in.
#[test]
fn a_login_finds_its_way_from_the_challenge_alone() {
    let dir = tempfile::tempdir().unwrap();
    let server = own_server(dir.path(), &[("CHALLENGE_ONLY", "1"), ("HANG_GET", "1")]);
    let mcp = write_mcp_config(dir.path(), json!({"prot": {"url": server.url}}));
    let login = |timeout: &str, browser: Option<&Path>| {
        cosmos_with(
            dir.path(),
            &[
                "login",
                "prot",
                "--mcp-config",
                mcp.to_str().unwrap(),
                "--timeout-s",
                timeout,
            ],
            browser,
            None,
        )
    };
    let started = std::time::Instant::now();
    let waited = login("2", None);
    assert_eq!(waited.status.code(), Some(1), "{}", text(&waited));
    assert!(
        text(&waited).contains("no login within 2s"),
        "{}",
        text(&waited)
    );
    assert!(text(&waited).contains("scope=read"), "{}", text(&waited));
    assert!(started.elapsed() < std::time::Duration::from_secs(15));

    let logged = login("20", Some(&browser(dir.path())));
    assert!(logged.status.success(), "{}", text(&logged));
    assert_eq!(stored_scope(dir.path()), "read");
    whoami_run(dir.path(), &mcp, &[]);
}

/// A server that refuses the login's token at `initialize` for want of a scope: the failure
/// names the scope and the command that logs in with it, and that login gets in.
#[test]
fn a_server_refusing_a_logins_scope_at_start_names_the_scope_and_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let server = own_server(dir.path(), &[("CHALLENGE_ONLY", "1"), ("ADMIN_ONLY", "1")]);
    let mcp = write_mcp_config(dir.path(), json!({"prot": {"url": server.url}}));
    let mcp_arg = mcp.to_str().unwrap();
    let browser = browser(dir.path());
    let logged = cosmos_with(
        dir.path(),
        &["login", "prot", "--mcp-config", mcp_arg],
        Some(&browser),
        None,
    );
    assert!(logged.status.success(), "{}", text(&logged));
    assert_eq!(stored_scope(dir.path()), "read");
    let listed = cosmos_with(
        dir.path(),
        &["servers", "--mcp-config", mcp_arg],
        None,
        None,
    );
    assert!(
        text(&listed).contains(
            "it asks for scope \"read admin\", which this login lacks: run `cosmos login prot \
             --mcp-config FILE --scope read --scope admin`"
        ),
        "{}",
        text(&listed)
    );
    let stepped = cosmos_with(
        dir.path(),
        &["login", "prot", "--mcp-config", mcp_arg, "--scope", "admin"],
        Some(&browser),
        None,
    );
    assert!(stepped.status.success(), "{}", text(&stepped));
    let listed = cosmos_with(
        dir.path(),
        &["servers", "--mcp-config", mcp_arg],
        None,
        None,
    );
    assert!(
        text(&listed).contains("prot:admin_report"),
        "{}",
        text(&listed)
    );
}

/// MCP's 2025-03-26 layout: no protected-resource metadata, the authorization server's
/// metadata at the MCP server's origin with an issuer that has a path. The spec of that
/// revision allows it, so the login is made and the run gets in.
#[test]
fn a_server_of_the_2025_03_26_layout_is_logged_into() {
    let dir = tempfile::tempdir().unwrap();
    let server = own_server(dir.path(), &[("LEGACY", "1")]);
    let mcp = write_mcp_config(dir.path(), json!({"prot": {"url": server.url}}));
    let logged = cosmos_with(
        dir.path(),
        &["login", "prot", "--mcp-config", mcp.to_str().unwrap()],
        Some(&browser(dir.path())),
        None,
    );
    assert!(logged.status.success(), "{}", text(&logged));
    whoami_run(dir.path(), &mcp, &[]);
}

#[test]
fn a_login_to_a_server_that_needs_none_says_so_at_once() {
    let (mut server, url) = modern_server_http();
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), json!({"open": {"url": url}}));
    let started = std::time::Instant::now();
    let said = cosmos_with(
        dir.path(),
        &["login", "open", "--mcp-config", mcp.to_str().unwrap()],
        None,
        None,
    );
    let took = started.elapsed();
    assert_eq!(said.status.code(), Some(1), "{}", text(&said));
    assert!(
        text(&said).contains("needs no login: it answered a request without a token"),
        "{}",
        text(&said)
    );
    // No wait on an event stream, no discovery: well under the 30 s a GET used to take.
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    assert!(token_files(dir.path()).is_empty());
    let _ = server.kill();
    let _ = server.wait();
}
