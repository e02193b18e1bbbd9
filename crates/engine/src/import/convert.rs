//! A foreign file read into runs, and a run written as a cosmos trajectory.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::writer::{Writer, file_safe};

use super::draft::Imported;
use super::format::{Format, Said};
use super::{atif, inspect};
use crate::metrics::run::RunAccumulator;

/// Reads every session or sample of `path` (in `format`), handing each run to `each` as soon
/// as it is read: a big log is never held whole. What could not be read is said, and the runs
/// read before it are kept.
pub fn read(
    path: &Path,
    format: Format,
    each: &mut dyn FnMut(Imported) -> Result<()>,
) -> Result<Said> {
    match format {
        Format::Atif => atif::read(path, each),
        Format::Inspect => inspect::read(path, each),
    }
}

/// Writes one imported run into `dir` as `RUN_ID.jsonl` through the trajectory writer (never
/// over a file that is there), and returns its path.
pub fn write(run: &Imported, dir: &Path, redactor: &Redactor) -> Result<PathBuf> {
    let path = dir.join(format!("{}.jsonl", file_safe(&run.header.run_id, 160)));
    if path.exists() {
        bail!(
            "{} exists already (imported before?); left as it is",
            path.display()
        );
    }
    let mut writer = Writer::create(
        &path,
        &run.header,
        redactor.clone(),
        Some(RunAccumulator::tally(&run.header)),
    )?;
    for (t_ms, body) in &run.events {
        writer.write(*t_ms, body.clone())?;
    }
    Ok(path)
}
