//! Foreign trajectories opened where runs are taken (the explorer, `report`, `wm-eval`,
//! `export`): each converted as `cosmos import` converts it, into a private folder that lives
//! as long as the [`Opened`] and is removed with it (or by the next cosmos, after a kill).
//!
//! Converts foreign files for any command that reads runs into a private home of
//! `mcp/sandbox_home.rs` (`given/` for files named, `found/` for files met in folders), removed
//! when the command ends, or by the next cosmos after a kill.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use cosmos_trajectory::reader::collect_files;
use cosmos_trajectory::redact::Redactor;

use crate::mcp::sandbox_home::{FOUND, GIVEN, Home};

use super::convert::{Written, read, write};
use super::format::{Detected, Format, detect};

/// Paths ready for any reader of cosmos runs.
#[derive(Debug)]
pub struct Opened {
    /// The paths given, a foreign file replaced by the runs made of it, and the private folder
    /// of those runs added when a folder held foreign files.
    pub paths: Vec<PathBuf>,
    /// What could not be read or was left out, one line each (uncleaned: print it inert).
    pub said: Vec<String>,
    /// How many runs were converted.
    pub converted: usize,
    /// The private folder of converted runs (a sandbox's kind of home: private, locked while
    /// this lives, removed when it is dropped or, after a kill, by the next cosmos).
    folder: Option<Home>,
}

impl Opened {
    /// The private folder of converted runs, when there is one.
    pub fn converted_folder(&self) -> Option<&Path> {
        self.folder.as_ref().map(Home::root)
    }
}

/// Opens `paths` for reading as runs: a file given that is another program's trajectory is
/// converted (one that is no known format is an error naming the formats known); in a
/// folder, `*.json` and `*.eval` files that are trajectories are converted too, and any other
/// such file is passed over quietly (a folder of runs often holds configs).
pub fn open(paths: &[PathBuf], redactor: &Redactor) -> Result<Opened> {
    let mut opened = Opened {
        paths: Vec::new(),
        said: Vec::new(),
        converted: 0,
        folder: None,
    };
    let mut in_folders = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => anyhow::anyhow!(
                "{}: no such file or folder (give a run file or a folder of runs)",
                path.display()
            ),
            _ => anyhow::anyhow!("{}: {e}", path.display()),
        })?;
        if meta.is_dir() {
            opened.paths.push(path.clone());
            in_folders.extend(collect_files(std::slice::from_ref(path))?.foreign);
            continue;
        }
        if !meta.is_file() {
            bail!("{}: not a regular file", path.display());
        }
        match detect(path)? {
            Detected::Cosmos => opened.paths.push(path.clone()),
            Detected::Foreign(format) => {
                let (made, repeated) = convert(&mut opened, path, format, GIVEN, redactor)?;
                if made.is_empty() && repeated == 0 {
                    bail!(
                        "{}: no session or sample in it could be read",
                        path.display()
                    );
                }
                opened.paths.extend(made);
            }
        }
    }
    let mut any_in_folders = false;
    for path in in_folders {
        if let Ok(Detected::Foreign(format)) = detect(&path) {
            match convert(&mut opened, &path, format, FOUND, redactor) {
                Ok((made, _)) => any_in_folders |= !made.is_empty(),
                Err(e) => opened.said.push(format!("{}: {e:#}", path.display())),
            }
        }
    }
    if any_in_folders && let Some(folder) = opened.converted_folder() {
        let found = folder.join(FOUND);
        opened.paths.push(found);
    }
    Ok(opened)
}

/// Converts one foreign file into `part` of the private folder, returning the runs made and
/// how many of its runs were read already (from another file given).
fn convert(
    opened: &mut Opened,
    path: &Path,
    format: Format,
    part: &str,
    redactor: &Redactor,
) -> Result<(Vec<PathBuf>, usize)> {
    if opened.folder.is_none() {
        opened.folder = Some(crate::mcp::sandbox_home::fresh()?);
    }
    let folder = opened.converted_folder().expect("made above").join(part);
    std::fs::create_dir_all(&folder)?;
    let mut made = Vec::new();
    let mut repeated = 0;
    let mut problems = Vec::new();
    let path_shown = path.display().to_string();
    let said = read(path, format, &mut |run| {
        match write(&run, &folder, redactor) {
            Ok(Written::New(path)) => made.push(path),
            // The folder is this command's own: a run of this id is there because another
            // file (or session) given makes the same run (two copies of one export). It is
            // read once, and said.
            Ok(Written::There(_)) => {
                repeated += 1;
                problems.push(format!(
                "{}: {} makes the run {}, already read (from another file given, or a session of the same id): counted once",
                path_shown,
                run.header
                    .source
                    .as_ref()
                    .map_or("a session", |s| s.id.as_str()),
                run.header.run_id
                ));
            }
            Err(e) => problems.push(format!("{e:#}")),
        }
        Ok(())
    })?;
    opened.converted += made.len();
    opened.said.extend(said.lines);
    opened.said.extend(problems);
    Ok((made, repeated))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_converted_run_is_shown_by_its_source_and_any_other_by_its_path() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/interchange/atif_claude_code_time.json");
        let opened = open(std::slice::from_ref(&fixture), &Redactor::new()).unwrap();
        let [converted] = opened.paths.as_slice() else {
            panic!("one run: {:?}", opened.paths);
        };
        let run = cosmos_trajectory::reader::EventStream::open(converted).unwrap();
        let shown = crate::mcp::shown_location(converted, run.header());
        assert!(
            shown.starts_with(&fixture.display().to_string())
                && shown.ends_with("(converted from atif)"),
            "{shown}"
        );
        // The same run saved where the person keeps runs is theirs: shown by its path.
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("given").join("run.jsonl");
        std::fs::create_dir_all(kept.parent().unwrap()).unwrap();
        std::fs::copy(converted, &kept).unwrap();
        assert_eq!(
            crate::mcp::shown_location(&kept, run.header()),
            kept.display().to_string()
        );
    }
}
