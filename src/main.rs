//! The `cosmos` binary: parse the command line, run the command, report errors in one line.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// mimalloc, for the speed of reading many runs (see Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = cosmos_app::cli::Cli::parse();
    match cosmos_app::cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            // `{:#}` joins the context chain into one readable line.
            let msg = format!("{err:#}");
            // Not eprintln!: a closed standard error must not turn an error into a panic.
            let _ = writeln!(
                std::io::stderr(),
                "cosmos: error: {}",
                cosmos_trajectory::sanitize::inert(&msg)
            );
            ExitCode::FAILURE
        }
    }
}
