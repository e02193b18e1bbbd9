//! Proxy benchmark: prints figures, asserts nothing. `cargo bench --bench proxy` (`-- --quick`
//! for a tenth). The fast server is server-everything's `echo` over stdio (installed by
//! scripts/install-test-servers.sh), called through the project's own MCP client:
//!
//! - latency: 2,000 sequential calls straight to the server, then through `cosmos proxy`
//!   (record mode, every call written to its session's file): p50 and p99 of each and what the
//!   proxy adds;
//! - throughput: one `cosmos proxy --http` and 8 clients calling at once for 5,000 calls in all
//!   (each client its own session), against 8 callers sharing one direct connection;
//! - memory: the stdio proxy's resident memory after 10^3, 10^4 and 10^5 calls of 2 KB results
//!   in one session (a tenth with `--quick`), in record mode (nothing needs the history) and in
//!   shadow mode (the `memory` world model predicts each call), where flat is the goal;
//! - memory per handshake session: `cosmos proxy --http` in front of the dual-era fixture
//!   (tests/support/modern_server.py over stdio), the resident memory of the proxy and its
//!   server processes with 1 and with 4 handshake clients (the MCP Python SDK 1.x) holding a
//!   session open: each client has an upstream session of its own, a process of the server,
//!   so the step per client is what one such process costs (the target: that, and no more).
//!   Measured here (`--quick`, 2026-12-07): 104 MB with one client, 136 MB with four, about
//!   11 MB a further client, the fixture's Python process; the proxy adds 0.6 ms at p50 to a
//!   call (target < 1 ms).

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::scale;
use cosmos_engine::mcp::McpConfig;
use cosmos_engine::mcp::{McpPool, Timeouts};
use serde_json::{Value, json};
use support::npm_bin;

fn pool_of(servers: Value) -> McpConfig {
    McpConfig::parse(&json!({"mcpServers": servers}).to_string()).unwrap()
}

async fn connect(servers: Value) -> McpPool {
    let config = pool_of(servers);
    let (pool, failures) = McpPool::connect(&config.servers, Timeouts::default()).await;
    assert!(failures.is_empty(), "{failures:?}");
    pool
}

/// Latencies of `n` sequential calls of `tool`, sorted, in microseconds.
async fn sequential(pool: &McpPool, tool: &str, n: usize) -> Vec<f64> {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        let (_, out) = pool
            .call(tool, &json!({"message": format!("call {i}")}))
            .await;
        assert_eq!(out.error, None, "{:?}", out.result);
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    times
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Calls per second of `clients` pools calling `tool` at once, `total` calls in all.
async fn throughput(pools: Vec<Arc<McpPool>>, tool: &str, total: usize) -> f64 {
    let each = total / pools.len();
    let started = Instant::now();
    let tasks: Vec<_> = pools
        .into_iter()
        .map(|pool| {
            let tool = tool.to_string();
            tokio::spawn(async move {
                for i in 0..each {
                    let (_, out) = pool.call(&tool, &json!({"message": format!("c{i}")})).await;
                    assert_eq!(out.error, None, "{:?}", out.result);
                }
            })
        })
        .collect();
    let calls = each * tasks.len();
    for t in tasks {
        t.await.unwrap();
    }
    calls as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    support::servers(); // installed by scripts/install-test-servers.sh
    let n = 2_000 / scale();
    let total = 5_000 / scale();
    let dir = tempfile::tempdir().unwrap();
    let everything = json!({"command": npm_bin("mcp-server-everything")});
    let inner = dir.path().join("inner.json");
    std::fs::write(
        &inner,
        json!({"mcpServers": {"everything": everything}}).to_string(),
    )
    .unwrap();
    let cosmos = env!("CARGO_BIN_EXE_cosmos");
    let log = dir.path().join("proxy.log");

    let direct = connect(json!({"everything": everything})).await;
    sequential(&direct, "everything:echo", 50).await; // warm up
    let straight = sequential(&direct, "everything:echo", n).await;
    let proxied = connect(json!({"everything": {
        "command": cosmos,
        "args": ["proxy", "--mcp-config", inner.display().to_string(), "--out", dir.path().join("stdio-runs").display().to_string()],
        "env": {"COSMOS_LOG_FILE": log.display().to_string()}
    }}))
    .await;
    sequential(&proxied, "everything:echo", 50).await;
    let through = sequential(&proxied, "everything:echo", n).await;
    println!("proxy latency, {n} sequential calls of everything:echo over stdio (µs):");
    println!("  {:<22} {:>9} {:>9}", "", "p50", "p99");
    for (name, t) in [("direct", &straight), ("through cosmos proxy", &through)] {
        println!(
            "  {name:<22} {:>9.0} {:>9.0}",
            quantile(t, 0.5),
            quantile(t, 0.99)
        );
    }
    println!(
        "  added by the proxy     {:>9.0} {:>9.0}   (target: < 1000 µs at p50)",
        quantile(&through, 0.5) - quantile(&straight, 0.5),
        quantile(&through, 0.99) - quantile(&straight, 0.99)
    );
    proxied.shutdown().await;

    // Throughput: one HTTP proxy, 8 clients.
    let mut proxy = Command::new(cosmos)
        .args([
            "proxy",
            "--mcp-config",
            &inner.display().to_string(),
            "--http",
            "127.0.0.1:0",
        ])
        .args(["--out", &dir.path().join("http-runs").display().to_string()])
        .env("COSMOS_LOG_FILE", &log)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = listening_url(&mut proxy);
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(Arc::new(
            connect(json!({"everything": {"type": "http", "url": url}})).await,
        ));
    }
    let through_proxy = throughput(clients.clone(), "everything:echo", total).await;
    let shared = Arc::new(direct);
    let straight = throughput(vec![shared.clone(); 8], "everything:echo", total).await;
    println!("throughput, {total} calls from 8 concurrent clients:");
    println!("  direct (8 callers on one stdio connection) {straight:>8.0} calls/s");
    println!("  one cosmos proxy over HTTP, 8 sessions     {through_proxy:>8.0} calls/s");
    for c in clients {
        if let Ok(pool) = Arc::try_unwrap(c) {
            pool.shutdown().await;
        }
    }
    let _ = Command::new("kill")
        .args(["-TERM", &proxy.id().to_string()])
        .status();
    let _ = tokio::time::timeout(Duration::from_secs(10), async { proxy.wait() }).await;

    // Memory over one long session.
    let memory_runs = dir.path().join("stdio-runs");
    for (mode, extra) in [
        ("record", vec![]),
        (
            "shadow",
            vec![
                "--mode".to_string(),
                "shadow".into(),
                "--world-model".into(),
                "memory".into(),
                "--memory-from".into(),
                memory_runs.display().to_string(),
            ],
        ),
    ] {
        let out = dir.path().join(format!("rss-{mode}"));
        let mut args = vec![
            "proxy".to_string(),
            "--mcp-config".into(),
            inner.display().to_string(),
            "--out".into(),
            out.display().to_string(),
        ];
        args.extend(extra);
        let proxied = connect(json!({"everything": {
            "command": cosmos,
            "args": args,
            "env": {"COSMOS_LOG_FILE": log.display().to_string()}
        }}))
        .await;
        let pid = pid_of(&out.display().to_string()).expect("the proxy's process");
        let message = "x".repeat(2_000);
        let mut done = 0;
        let mut figures = Vec::new();
        for target in [1_000, 10_000, 100_000].map(|n| n / scale()) {
            while done < target {
                let (_, reply) = proxied
                    .call("everything:echo", &json!({"message": message}))
                    .await;
                assert_eq!(reply.error, None, "{:?}", reply.result);
                done += 1;
            }
            figures.push(format!("{done}: {:.0} MB", rss_mb(pid)));
        }
        println!(
            "proxy RSS over one {mode} session (2 KB results): {}",
            figures.join(", ")
        );
        proxied.shutdown().await;
    }

    memory_per_handshake_session(cosmos, dir.path());
}

/// Resident memory of the proxy and the servers it started with 1 and with 4 handshake clients
/// holding a session open.
fn memory_per_handshake_session(cosmos: &str, dir: &std::path::Path) {
    let mcp = dir.join("modern.json");
    std::fs::write(
        &mcp,
        json!({"mcpServers": {"fixture": support::modern_server()}}).to_string(),
    )
    .unwrap();
    let mut proxy = Command::new(cosmos)
        .args([
            "proxy",
            "--mcp-config",
            mcp.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
        ])
        .arg("--out")
        .arg(dir.join("modern-runs"))
        .env("COSMOS_LOG_FILE", dir.join("modern.log"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = listening_url(&mut proxy);
    let client =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/mcp_client.py");
    let mut figures = Vec::new();
    let mut clients = Vec::new();
    // Every client holds its session until this file exists.
    let release = dir.join("release");
    for held in [1, 4] {
        while clients.len() < held {
            clients.push(
                Command::new(support::python())
                    .arg(&client)
                    .arg(
                        json!({"transport": "http", "url": url, "pause_file": release,
                               "calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]})
                        .to_string(),
                    )
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
        }
        // Each held session's own server process is up: the shared one and one a client.
        let deadline = Instant::now() + Duration::from_secs(60);
        while tree_of(proxy.id()).len() < 1 + 1 + held && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        let tree = tree_of(proxy.id());
        let total: f64 = tree.iter().map(|pid| rss_mb(*pid)).sum();
        figures.push((held, tree.len(), total));
    }
    std::fs::write(&release, "").unwrap();
    for mut c in clients {
        let _ = c.wait();
    }
    let _ = proxy.kill();
    let _ = proxy.wait();
    println!(
        "proxy + servers RSS, handshake clients of a dual-era stdio server holding a session:"
    );
    for (held, processes, total) in &figures {
        println!("  {held} client(s): {processes} processes, {total:.0} MB");
    }
    if let [(a, _, one), (b, _, four)] = figures[..] {
        println!(
            "  per further client: {:.0} MB (one upstream session: a process of the server)",
            (four - one) / (b - a) as f64
        );
    }
}

/// The URL an HTTP proxy says, on its first line, it listens on.
fn listening_url(proxy: &mut std::process::Child) -> String {
    let mut said = String::new();
    BufReader::new(proxy.stderr.take().unwrap())
        .read_line(&mut said)
        .unwrap();
    said.split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .trim_end_matches(';')
        .to_string()
}

/// `pid` and every process below it.
fn tree_of(pid: u32) -> Vec<u32> {
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        // A process's children are listed by the thread that started each.
        let tasks = std::fs::read_dir(format!("/proc/{}/task", tree[i]));
        for task in tasks.into_iter().flatten().flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            tree.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
        i += 1;
    }
    tree
}

/// The process whose command line names `marker`.
fn pid_of(marker: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        String::from_utf8_lossy(&cmdline)
            .contains(marker)
            .then_some(pid)
    })
}

/// Resident memory of process `pid`, MB.
fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1e3
}
