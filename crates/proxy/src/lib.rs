//! `cosmos proxy` (the `cosmos-proxy` crate, above the engine, so hyper and a change here rebuild
//! only the app): an MCP server in front of the servers of an `mcp.json`, for any client of
//! either protocol era. Each client session is recorded as one run (`agent.kind = "external"`),
//! in the events every agent writes, so the browser, the run view, `report`, `wm-eval` and the
//! exports take it unchanged. A client of the stateless era (2026-07-28) has no session: over
//! HTTP its requests join one run by its name, version and address until the run goes idle
//! (`Setup::sessionless_session`). At most [`MAX_OPEN_SESSIONS`] runs are open at once (each
//! holds its file open); a session past that is refused until one ends. Upstream connections
//! are shared by all sessions, but for a client of the handshake era each upstream the shared
//! connection reached in the stateless era (which has no channel back) gets a handshake session
//! of its own (`Setup::own_sessions`, a stdio server a process of its own; never one with a state
//! seed, whose one copy every session shares). What a server says outside a call goes to that
//! session's client, or on a shared connection to the client whose request is in flight there
//! (`clients::Clients::audience`). Four modes:
//!
//! - `record`: calls go to the real servers; their replies go back unchanged;
//! - `shadow`: as `record`, and the world model predicts each call beside it (the client never
//!   waits for the prediction), recorded as a plan's prediction is, so fidelity is scored;
//! - `simulate`: the world model answers and no real server is called (`--on-miss real` calls
//!   one when the world model cannot answer); the client's results are marked in `_meta`;
//! - `hybrid`: the world model answers a read-only call it is sure of (`--go-real-below`), the
//!   real server the rest; each call's `routed` event says who answered and why.
//!
//! `catalog.rs` names the offered tools, `client_session.rs` records a session, `handler.rs` is
//! the rmcp server, `http_serve.rs` serves streamable HTTP.
//!
//! - `mod.rs`: `Mode` (record, shadow, simulate, hybrid), `OnMiss`, `Setup` (what every session shares: the
//!   pool, or none in simulate mode with `--tools-from` and no `--on-miss real`; the catalogue; the
//!   world model; the redactor; the open sessions, so a signal ends each one: `Setup::stop`, after which none opens; a
//!   handler opens its one session under a lock, so calls that come at once share it), built by
//!   `Setup::start` from a `ProxySpec`; `Setup::rehearse` rehearses a call through
//!   `agent::rehearse` with a small `SearchEnv` (`Predicting`: the world model, nobody plans or
//!   criticises); `serve_stdio`, through `stdio_guard.rs` (every client line read before rmcp
//!   reads it: -32600 for a line over 16 MiB read past in bounded memory; replies written between
//!   rmcp's whole lines). The `_meta` keys of results (`META_*`).
//!
//! # What passes through
//!
//! **Everything else passes through.** Capabilities, `instructions`, prompts, resources
//! (subscriptions included), completion, logging, list changes, cancellation, and the server's
//! requests for sampling, roots or input reach the client whose request is in flight on that
//! server (else the only client; a request that could be meant for several clients is declined,
//! saying so). One upstream's tools keep their names; with several, names are `server_tool`, and
//! two upstreams offering one name are refused at start. A server that crashes, hangs or answers
//! garbage gives the client a tool error naming it, and the session goes on. A closed session ends
//! `client_closed`, an idle HTTP session `idle_expired`, SIGINT or SIGTERM every open run
//! `interrupted` (exit 130). The secret rules of `cosmos run` hold.

pub mod catalog;
pub mod client_session;
pub mod clients;
pub mod elicit;
pub mod handler;
pub mod http_serve;
pub mod offer;
pub mod relay;
pub mod screen;
pub mod setup;
pub mod stdio_guard;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use tokio::sync::watch;

use self::handler::ProxyHandler;
pub use self::setup::{
    DEFAULT_TASK_ID, MAX_OPEN_SESSIONS, META_CONFIDENCE, META_MISS, META_SIMULATED, META_WENT_REAL,
    META_WORLD_MODEL, Mode, OnMiss, ProxySpec, Setup, Stop,
};
use cosmos_trajectory::event::{Ending, RunStatus};

/// Longest wait, once the client has gone, for predictions still on their way: its real calls
/// are on disk already, and a prediction that has not come by then is said not to have.
const SETTLE: Duration = Duration::from_secs(1);

/// Serves one client over this process's stdin and stdout until it closes them or `stop`
/// fires; every session is ended in its file either way.
pub async fn serve_stdio(setup: Arc<Setup>, mut stop: watch::Receiver<bool>) -> Result<Stop> {
    use rmcp::ServiceExt;
    let wire = wire::Wire::new(setup.redactor.clone());
    let handler = ProxyHandler::new(setup.clone()).with_wire(wire.clone());
    let (input, output, mut left) = stdio_guard::guard(tokio::io::stdin(), tokio::io::stdout());
    let transport = wire::Tapped::new(
        rmcp::transport::async_rw::AsyncRwTransport::new_server(input, output),
        wire,
    );
    let running = tokio::select! {
        served = handler.serve(transport) => served
            .map_err(|e| anyhow::anyhow!("the client's initialisation failed: {e}"))?,
        _ = stop.wait_for(|s| *s) => {
            setup.stop();
            return Ok(Stop::Signalled);
        }
    };
    let waiting = running.waiting();
    tokio::pin!(waiting);
    // The client gone (its input ended) ends the wait at once: rmcp would wait up to 5 s for
    // calls still out, and then call them cancelled by the client. They are recorded as cut
    // off by its leaving instead ([`Setup::close_all`]).
    let stopped = tokio::select! {
        _ = &mut waiting => false,
        _ = left.wait_for(|l| *l) => false,
        _ = stop.wait_for(|s| *s) => true,
    };
    if stopped {
        // Ended as interrupted before the handler is dropped (which would end it completed).
        setup.stop();
        return Ok(Stop::Signalled);
    }
    // Shadowed calls whose prediction is still coming hold their session open: wait for them
    // (a stop, or SETTLE, writes them without it). In record mode nothing is coming.
    let settle = if setup.mode == Mode::Record {
        Duration::ZERO
    } else {
        SETTLE
    };
    let settled = tokio::time::timeout(settle, setup.all_closed());
    tokio::select! {
        _ = settled => {}
        _ = stop.wait_for(|s| *s) => {
            setup.stop();
            return Ok(Stop::Signalled);
        }
    }
    setup.close_all(RunStatus::Completed, Ending::ClientClosed);
    Ok(Stop::ClientClosed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    use cosmos_engine::config::Config;
    use cosmos_engine::mcp::Timeouts;
    use cosmos_engine::world_model::BuiltInOptions;

    /// A proxy in simulate mode over a sample run's tools and calls: nothing to start.
    async fn simulating(dir: &Path) -> Setup {
        let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample_runs");
        let mcp = dir.join("mcp.json");
        std::fs::write(
            &mcp,
            r#"{"mcpServers": {"Time MCP": {"command": "does-not-start"}}}"#,
        )
        .unwrap();
        Setup::start(ProxySpec {
            mcp_config: mcp,
            servers: vec!["Time MCP".into()],
            mode: Mode::Simulate,
            world_model: "memory".into(),
            world_model_options: BuiltInOptions {
                memory_from: vec![samples.clone()],
                ..Default::default()
            },
            tools_from: Some(samples.join("20261202T025240.637Z_time_mcp_000_react_none.jsonl")),
            on_miss: OnMiss::Error,
            go_real_below: 0.8,
            routing: None,
            simulate_writes: false,
            config: Config::from_text("", None, |_| None).unwrap(),
            out_dir: dir.join("sessions"),
            task_request: None,
            task_id: None,
            label: None,
            timeouts: Timeouts::default(),
            transport: "http",
            secrets: Vec::new(),
            session_idle: None,
        })
        .await
        .unwrap()
    }

    /// After a stop no session opens: a client's call arriving then would leave a file with
    /// nothing in it beside the sessions the stop ended.
    #[tokio::test]
    async fn no_session_opens_after_a_stop() {
        let dir = tempfile::tempdir().unwrap();
        let setup = simulating(dir.path()).await;
        let open = setup.open_session(&Default::default()).unwrap();
        setup.stop();
        assert!(open.is_closed());
        let refused = setup
            .open_session(&Default::default())
            .map(drop)
            .unwrap_err();
        assert!(format!("{refused:#}").contains("stopping"), "{refused:#}");
        let files: Vec<_> = std::fs::read_dir(dir.path().join("sessions"))
            .unwrap()
            .collect();
        assert_eq!(files.len(), 1);
    }
}
