//! A foreign file read into runs, and a run written as a cosmos trajectory.
//!
//! Writes a run as `.RUN_ID.jsonl.part` and links it to its name once whole; a name
//! taken is a run imported before, left as it is.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::writer::{Writer, file_safe};

use super::draft::Imported;
use super::format::{Format, Said};
use super::{atif, inspect, otlp};
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
        Format::Otlp => otlp::read(path, each),
    }
}

/// What [`write()`] did with a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// Written whole at this path.
    New(PathBuf),
    /// A run of this id is there already (the same session of the same file, imported
    /// before): left as it is. An import stopped mid-way is resumed so.
    There(PathBuf),
}

/// Writes one imported run into `dir` as `RUN_ID.jsonl` through the trajectory writer: into
/// `.RUN_ID.jsonl.part` first, named only once whole, so a stopped import leaves no half run
/// (and the next one makes it again). Never over a run that is there.
pub fn write(run: &Imported, dir: &Path, redactor: &Redactor) -> Result<Written> {
    let name = file_safe(&run.header.run_id, 160);
    let path = dir.join(format!("{name}.jsonl"));
    if path.exists() {
        return Ok(Written::There(path));
    }
    let part = dir.join(format!(".{name}.jsonl.part"));
    // A part is what an import of this same run left when it was stopped: made again.
    match std::fs::symlink_metadata(&part) {
        Ok(meta) if meta.is_file() => std::fs::remove_file(&part)?,
        Ok(_) => bail!(
            "{} is there and is not a file: left as it is",
            part.display()
        ),
        Err(_) => {}
    }
    let mut writer = Writer::create(
        &part,
        &run.header,
        redactor.clone(),
        Some(RunAccumulator::tally(&run.header)),
    )?;
    for (t_ms, body) in &run.events {
        writer.write(*t_ms, body.clone())?;
    }
    drop(writer);
    // A hard link fails when the name is taken (another import finished the same run first).
    match std::fs::hard_link(&part, &path) {
        Ok(()) => {
            std::fs::remove_file(&part)?;
            Ok(Written::New(path))
        }
        Err(_) if path.exists() => {
            std::fs::remove_file(&part)?;
            Ok(Written::There(path))
        }
        // A name taken by something else (a link planted there): nothing is written through
        // it, and no part is left behind.
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            Err(e).with_context(|| format!("naming {}", path.display()))
        }
    }
}
