//! The `cosmos` binary: parse the command line, run the command, report errors in one line.

use std::process::ExitCode;

use clap::Parser;

/// mimalloc, for the speed of reading many runs (see Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = mcp_cosmos::cli::Cli::parse();
    match mcp_cosmos::cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            // `{:#}` joins the context chain into one readable line.
            let msg = format!("{err:#}");
            eprintln!("cosmos: error: {}", mcp_cosmos::sanitize::inert(&msg));
            ExitCode::FAILURE
        }
    }
}
