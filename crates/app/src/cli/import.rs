//! `cosmos import`: other programs' trajectories (ATIF, Inspect AI logs, OTLP JSON) written as cosmos
//! runs, one per session or sample; and [`open_runs`], the same conversion for the commands
//! that read runs, so a foreign file opens wherever a run does.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use crate::cli::output::{errln, outln};
use cosmos_engine::import::{self, Detected, Format};
use cosmos_trajectory::sanitize::inert;

/// `cosmos import`'s flags.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Trajectory files of other programs: ATIF (.json), Inspect AI logs (.eval, .json),
    /// OpenTelemetry traces as OTLP JSON (.json).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The folder to write the runs into (made if missing; no file in it is overwritten).
    #[arg(long)]
    pub out: PathBuf,
    /// The files' format, when detecting it from their content is not wanted.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
}

/// Runs `cosmos import`: each run's path printed as it is written; every problem said; exit 1
/// when any file could not be read whole.
pub fn run(args: ImportArgs) -> Result<ExitCode> {
    // The folder is made with the first run written: an import of nothing (a missing file, a
    // typo) leaves nothing behind.
    if args.out.exists() && !args.out.is_dir() {
        anyhow::bail!("{} is there and is not a folder", args.out.display());
    }
    let redactor = cosmos_export::redactor();
    let mut failed = false;
    let mut folder_made = false;
    let (mut written, mut there) = (0usize, 0usize);
    for file in &args.files {
        let shown = inert(&file.display().to_string());
        if let Err(e) = regular(file) {
            errln!("cosmos: {}", inert(&format!("{e:#}")));
            failed = true;
            continue;
        }
        let format = match args.format {
            Some(format) => format,
            None => match import::detect(file) {
                Ok(Detected::Foreign(format)) => format,
                Ok(Detected::Cosmos) => {
                    errln!("cosmos: {shown} is a cosmos run already: open it as it is");
                    failed = true;
                    continue;
                }
                Err(e) => {
                    errln!("cosmos: {}", inert(&format!("{e:#}")));
                    failed = true;
                    continue;
                }
            },
        };
        let mut made = 0usize;
        let read = import::read(file, format, &mut |run| {
            match write_run(&run, &args.out, &redactor, &mut folder_made) {
                Ok(import::Written::There(path)) => {
                    made += 1;
                    there += 1;
                    errln!(
                        "cosmos: {} imported before: left as it is",
                        inert(&path.display().to_string())
                    );
                }
                Ok(import::Written::New(path)) => {
                    made += 1;
                    outln!(
                        "{}  ({} call(s){})",
                        inert(&path.display().to_string()),
                        calls_in(&run),
                        skipped_note(&run)
                    );
                }
                Err(e) => {
                    failed = true;
                    errln!("cosmos: {}", inert(&format!("{e:#}")));
                }
            }
            Ok(())
        });
        written += made;
        match read {
            Ok(said) => {
                for line in &said.lines {
                    errln!("cosmos: {}", inert(line));
                }
                failed |= !said.lines.is_empty();
            }
            Err(e) => {
                failed = true;
                errln!("cosmos: {}", inert(&format!("{e:#}")));
            }
        }
        if made == 0 {
            failed = true;
            errln!("cosmos: {shown}: no run could be made of it");
        }
    }
    errln!(
        "cosmos: {} run(s) written into {}{}",
        written - there,
        inert(&args.out.display().to_string()),
        if there > 0 {
            format!("; {there} imported before, left as they were")
        } else {
            String::new()
        }
    );
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes one imported run into `out`, making the folder with the first run (an import of
/// nothing leaves nothing behind).
fn write_run(
    run: &import::Imported,
    out: &std::path::Path,
    redactor: &cosmos_trajectory::redact::Redactor,
    folder_made: &mut bool,
) -> Result<import::Written> {
    if !*folder_made {
        std::fs::create_dir_all(out)
            .map_err(|e| anyhow::anyhow!("making {}: {e}", out.display()))?;
        *folder_made = true;
    }
    import::write(run, out, redactor)
}

/// The real calls of an imported run.
fn calls_in(run: &import::Imported) -> usize {
    run.events
        .iter()
        .filter(|(_, b)| matches!(b, cosmos_trajectory::event::EventBody::ToolCalled { .. }))
        .count()
}

/// `; N thing(s) not imported` when the source held what a cosmos run has no place for.
fn skipped_note(run: &import::Imported) -> String {
    match run.header.source.as_ref().map_or(0, |s| s.skipped.len()) {
        0 => String::new(),
        n => format!("; {n} thing(s) kept only in the header's source.skipped"),
    }
}

/// Refuses what is not a regular file (a FIFO would block the reading forever).
fn regular(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        bail!("{}: not a regular file", path.display());
    }
    Ok(())
}

/// Opens `paths` for a command that reads runs: foreign files converted (said on standard
/// error), the rest as given. Keep the result alive while the runs are read.
pub fn open_runs(paths: &[PathBuf]) -> Result<import::Opened> {
    let opened = import::open(paths, &cosmos_export::redactor())?;
    for line in &opened.said {
        errln!("cosmos: {}", inert(line));
    }
    Ok(opened)
}
