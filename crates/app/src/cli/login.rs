//! `cosmos login SERVER` and `cosmos logout SERVER`: a remote server's OAuth login ahead of a
//! run (the browser opened with `$BROWSER`, or the address printed), and forgetting it.

use crate::cli::output::errln;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;

use cosmos_engine::mcp::{self, TokenStore};
use cosmos_engine::mcp::{McpConfig, Transport};
use cosmos_trajectory::sanitize::inert;

/// `cosmos login` and `cosmos logout` options.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The server, by its name in the MCP config (a `url` server).
    pub server: String,
    /// MCP servers, in the usual {"mcpServers": {...}} form.
    #[arg(long)]
    pub mcp_config: PathBuf,
    /// How long to wait for the browser to come back, seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout_s: u64,
    /// Steps a login up: asks for this scope too, beside those already granted (repeatable;
    /// a run names the scope when a server refuses a call for want of it).
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,
}

/// The server's URL and OAuth client, or why it has no login.
fn remote(args: &LoginArgs) -> Result<(String, mcp::OAuthClient)> {
    let mcp = McpConfig::load(&args.mcp_config)?;
    let server = mcp.get(&args.server)?;
    if let Some(problem) = &server.problem {
        bail!("server \"{}\": {problem}", args.server);
    }
    match &server.transport {
        Transport::Http { url, oauth, .. } => Ok((url.clone(), (**oauth).clone())),
        Transport::Stdio { .. } => bail!(
            "server \"{}\" is started by cosmos (stdio): it has no login",
            args.server
        ),
    }
}

/// Logs in.
pub fn login(args: LoginArgs) -> Result<ExitCode> {
    let (url, client) = remote(&args)?;
    if client.grant == mcp::Grant::ClientCredentials {
        bail!(
            "server \"{}\" uses the client_credentials grant: a run gets its token from the \
             client's id and secret when it starts; there is no login to make",
            args.server
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let stored = runtime.block_on(mcp::login(
        &url,
        &client,
        &args.scopes,
        Duration::from_secs(args.timeout_s),
        &mut |line| errln!("cosmos: {}", inert(line)),
    ))?;
    errln!(
        "cosmos: logged into \"{}\"; the tokens are in {} (owner-only)",
        inert(&args.server),
        stored.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Logs out: forgets the stored tokens.
pub fn logout(args: LoginArgs) -> Result<ExitCode> {
    let (url, client) = remote(&args)?;
    let store = TokenStore::new(&url, &client)?;
    if store.remove()? {
        errln!("cosmos: logged out of \"{}\"", inert(&args.server));
    } else {
        errln!("cosmos: \"{}\" had no login", inert(&args.server));
    }
    Ok(ExitCode::SUCCESS)
}
