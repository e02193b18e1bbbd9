//! `cosmos proxy`: serve the servers of an MCP config to any client, recording each session
//! (and, in shadow or simulate mode, a world model's predictions). Over stdio nothing but the
//! protocol is written to stdout; what the proxy says goes to stderr and the log.

use crate::cli::output::errln;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

use super::run::WorldModelArgs;
use cosmos_engine::config::Config;
use cosmos_engine::mcp::Timeouts;
use cosmos_proxy::{Mode, OnMiss, ProxySpec, Setup, Stop, http_serve};

/// `cosmos proxy` options.
#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// MCP servers, in the usual {"mcpServers": {...}} form.
    #[arg(long)]
    pub mcp_config: PathBuf,
    /// Offer only this server of the config (repeatable); all of them without it.
    #[arg(long = "server", value_name = "NAME")]
    pub servers: Vec<String>,
    /// record: real servers answer; shadow: they answer and the world model predicts each
    /// call beside them; simulate: the world model answers, no real server is called.
    #[arg(long, value_enum, default_value_t)]
    pub mode: ModeArg,
    /// The world model (shadow, simulate) and what it is made of.
    #[command(flatten)]
    pub world_model: WorldModelArgs,
    /// Simulate mode: offer the tools a recorded run's header lists, so servers that cannot
    /// start here (keys, network) need not.
    #[arg(long, value_name = "RUN")]
    pub tools_from: Option<PathBuf>,
    /// Simulate mode: when the world model cannot answer a call, give the client a tool error
    /// (error) or call the real server (real); results say which in `_meta`.
    #[arg(long, value_enum, default_value_t)]
    pub on_miss: OnMissArg,
    /// Hybrid mode: the real server answers a call whose prediction's confidence is below
    /// this (or that has none); the world model answers the others [default: 0.8].
    #[arg(long, value_name = "X")]
    pub go_real_below: Option<f64>,
    /// Hybrid mode: per-tool thresholds from a routing file (`cosmos wm-eval --routing-out`)
    /// instead of one --go-real-below; a tool the file does not trust always goes real.
    #[arg(long, value_name = "FILE", conflicts_with = "go_real_below")]
    pub routing: Option<PathBuf>,
    /// Hybrid mode: the world model may answer tools not annotated read-only too (their
    /// results are marked simulated); without it they always reach the real server.
    #[arg(long)]
    pub simulate_writes: bool,
    /// Endpoints per role and named world models (see cosmos.example.toml).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Folder for the sessions' trajectories.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Serve streamable HTTP at ADDR (path /mcp) instead of stdio: HOST:PORT, or a PORT alone
    /// for 127.0.0.1 (port 0 picks a free one, which is printed). An address beyond loopback
    /// needs a bearer token (--token-env).
    #[arg(long, value_name = "ADDR", value_parser = listen_address)]
    pub http: Option<SocketAddr>,
    /// The environment variable holding the bearer token HTTP clients must send (required
    /// beyond loopback; when set, required on loopback too). Never pass a token as a flag.
    #[arg(long, value_name = "VAR", default_value = "COSMOS_PROXY_TOKEN")]
    pub token_env: String,
    /// The task the client's agent is solving, recorded and told to the world model.
    #[arg(long, value_name = "TEXT")]
    pub task_request: Option<String>,
    /// The task's id, recorded (reports group by it) [default: external].
    #[arg(long)]
    pub task_id: Option<String>,
    /// A name for this configuration, recorded in each session's header.
    #[arg(long)]
    pub label: Option<String>,
    /// Time a server may take to start and list its tools, seconds.
    #[arg(long, default_value_t = 60)]
    pub startup_timeout_s: u64,
    /// Time one tool call may take, seconds.
    #[arg(long, default_value_t = 60)]
    pub call_timeout_s: u64,
    /// HTTP: close a session whose client has sent nothing for this long with nothing in
    /// flight, seconds; its file ends `idle_expired` and a client that comes back gets a new
    /// session. 0 keeps sessions open until the client ends them.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    pub session_idle_s: u64,
}

/// `--http`: `HOST:PORT`, `localhost:PORT`, or a port alone on loopback.
fn listen_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let port = text.strip_prefix("localhost:").unwrap_or(text);
    port.parse::<u16>()
        .map(|port| SocketAddr::from(([127, 0, 0, 1], port)))
        .map_err(|_| format!("{text:?} is not HOST:PORT or a port"))
}

/// Hybrid mode's `--go-real-below` when none is given.
const DEFAULT_GO_REAL_BELOW: f64 = 0.8;

/// `--mode`.
#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum ModeArg {
    /// Real servers answer; every call is recorded.
    #[default]
    Record,
    /// Real servers answer; the world model predicts each call beside them.
    Shadow,
    /// The world model answers; no real server is called.
    Simulate,
    /// The world model answers a read-only tool's call when sure enough (--go-real-below);
    /// the real server answers the rest.
    Hybrid,
}

/// `--on-miss`.
#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum OnMissArg {
    /// A tool error saying the world model could not answer.
    #[default]
    Error,
    /// The real server answers.
    Real,
}

impl ProxyArgs {
    fn spec(&self, token: Option<&str>) -> Result<ProxySpec> {
        Ok(ProxySpec {
            mcp_config: self.mcp_config.clone(),
            servers: self.servers.clone(),
            mode: match self.mode {
                ModeArg::Record => Mode::Record,
                ModeArg::Shadow => Mode::Shadow,
                ModeArg::Simulate => Mode::Simulate,
                ModeArg::Hybrid => Mode::Hybrid,
            },
            world_model: self.world_model.name.clone(),
            world_model_options: self
                .world_model
                .options(Duration::from_secs(self.call_timeout_s))?,
            tools_from: self.tools_from.clone(),
            on_miss: match self.on_miss {
                OnMissArg::Error => OnMiss::Error,
                OnMissArg::Real => OnMiss::Real,
            },
            go_real_below: match (self.mode, self.go_real_below) {
                (ModeArg::Hybrid, x) => x.unwrap_or(DEFAULT_GO_REAL_BELOW),
                (_, Some(_)) => anyhow::bail!("--go-real-below is for --mode hybrid"),
                (_, None) => DEFAULT_GO_REAL_BELOW,
            },
            routing: match (self.mode, &self.routing) {
                (ModeArg::Hybrid, Some(path)) => Some(std::sync::Arc::new(
                    cosmos_engine::metrics::routing_file::RoutingFile::load(path)?,
                )),
                (_, Some(_)) => anyhow::bail!("--routing is for --mode hybrid"),
                (_, None) => None,
            },
            simulate_writes: self.simulate_writes,
            config: Config::load(self.config.as_deref())?,
            out_dir: self.out.clone(),
            task_request: self.task_request.clone(),
            task_id: self.task_id.clone(),
            label: self.label.clone(),
            timeouts: Timeouts {
                startup: Duration::from_secs(self.startup_timeout_s.max(1)),
                call: Duration::from_secs(self.call_timeout_s.max(1)),
                // Asked of the client whose call it is (proxy::elicit).
                elicitation: cosmos_engine::mcp::Elicitation::Ask,
            },
            transport: if self.http.is_some() { "http" } else { "stdio" },
            session_idle: (self.http.is_some() && self.session_idle_s > 0)
                .then(|| Duration::from_secs(self.session_idle_s)),
            secrets: token.map(str::to_string).into_iter().collect(),
        })
    }
}

/// Serves until the client leaves (stdio) or a signal stops the proxy: 0 when the client
/// closed, 130 when a signal stopped it (every session is ended in its file either way).
pub fn run(args: ProxyArgs) -> Result<ExitCode> {
    let token = std::env::var(&args.token_env)
        .ok()
        .filter(|t| !t.is_empty() && args.http.is_some());
    let spec = args.spec(token.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let stopped = runtime.block_on(async {
        let stop = cosmos_engine::agent::stop_on_signals();
        // Bound first: an address that cannot be served starts no server.
        let listening = match args.http {
            Some(addr) => Some(http_serve::bind(addr, token).await?),
            None => None,
        };
        let setup = Arc::new(Setup::start(spec).await?);
        let mode = setup.mode.as_str();
        let stopped = match listening {
            Some(listening) => {
                errln!(
                    "cosmos proxy ({mode}) listening on http://{}{}; sessions go to {}",
                    listening.addr,
                    http_serve::MCP_PATH,
                    args.out.display()
                );
                listening.serve(setup.clone(), stop.rx.clone()).await?
            }
            None => cosmos_proxy::serve_stdio(setup.clone(), stop.rx.clone())
                .await
                .context("serving over stdio")?,
        };
        // Stop the upstreams in order when nothing else holds them.
        if let Some(pool) = Arc::into_inner(setup)
            .and_then(|s| s.pool)
            .and_then(Arc::into_inner)
        {
            pool.shutdown().await;
        }
        anyhow::Ok(stopped)
    })?;
    // The blocking stdin reader (a terminal, a file) must not hold the exit.
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(match stopped {
        Stop::ClientClosed => ExitCode::SUCCESS,
        Stop::Signalled => ExitCode::from(130),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_alone_listens_on_loopback() {
        assert_eq!(
            listen_address("8931").unwrap().to_string(),
            "127.0.0.1:8931"
        );
        assert_eq!(
            listen_address("localhost:0").unwrap().to_string(),
            "127.0.0.1:0"
        );
        assert_eq!(
            listen_address("0.0.0.0:80").unwrap().to_string(),
            "0.0.0.0:80"
        );
        assert!(listen_address("example.com:80").is_err());
    }
}
