//! `cosmos servers`: start every configured server and list its tools.

use crate::cli::output::out;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use cosmos_engine::mcp::McpConfig;
use cosmos_engine::mcp::{McpPool, Timeouts};
use cosmos_trajectory::sanitize::inert;

/// Lists servers and tools; `-v` adds input schemas. Exit 1 when a server fails.
pub fn run(config: &Path, verbose: bool, startup_timeout_s: u64) -> Result<ExitCode> {
    let mut mcp = McpConfig::load(config)?;
    // A stateful server is listed on a copy of its state, never its seed.
    let _sandboxes = cosmos_engine::mcp::prepare_sandboxes(&mut mcp.servers)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let timeouts = Timeouts {
        startup: Duration::from_secs(startup_timeout_s),
        ..Timeouts::default()
    };
    let (pool, failures) = runtime.block_on(McpPool::connect(&mcp.servers, timeouts));
    let mut out = String::new();
    for cfg in &mcp.servers {
        out.push_str(&format!(
            "{} ({}: {})\n",
            cfg.name,
            cfg.transport_name(),
            cfg.target()
        ));
        if let Some(f) = failures.iter().find(|f| f.name == cfg.name) {
            out.push_str(&format!("  FAILED: {}\n", f.message));
            if let Some(tail) = &f.stderr_tail {
                for line in tail.lines() {
                    out.push_str(&format!("  | {line}\n"));
                }
            }
            continue;
        }
        let servers = pool.servers();
        let server = servers.iter().find(|s| s.name == cfg.name);
        let tools = server.map_or(&[][..], |s| &s.tools[..]);
        let protocol = server
            .and_then(|s| s.protocol_version())
            .map(|v| format!(", protocol {v}"))
            .unwrap_or_default();
        out.push_str(&format!("  {} tool(s){protocol}\n", tools.len()));
        for t in tools {
            let first = t.description.lines().next().unwrap_or_default();
            out.push_str(&format!("  - {}  {}\n", t.name, first));
            if verbose {
                let schema = serde_json::to_string_pretty(&t.input_schema).unwrap_or_default();
                for line in schema.lines() {
                    out.push_str(&format!("      {line}\n"));
                }
            }
        }
    }
    out!("{}", inert(&out));
    runtime.block_on(pool.shutdown());
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
