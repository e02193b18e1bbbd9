//! Export files written whole or not at all: each is written beside its final name (with
//! `.partial` added) and renamed into place once complete, so an export cut off by an error
//! or Ctrl-C never leaves a torn file under the final name, nor a new file beside an old one
//! that no longer matches it (an error removes the `.partial`; a signal may leave it).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// A file being written; it takes its name only at [`Staged::finish`].
pub struct Staged {
    path: PathBuf,
    partial: PathBuf,
    /// `None` once finished.
    file: Option<BufWriter<File>>,
}

impl Staged {
    /// Starts writing what will be `path`.
    pub fn create(path: &Path) -> Result<Self> {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".partial");
        let partial = path.with_file_name(name);
        let file =
            File::create(&partial).with_context(|| format!("creating {}", path.display()))?;
        Ok(Self {
            path: path.to_path_buf(),
            partial,
            file: Some(BufWriter::new(file)),
        })
    }

    /// Where it is being written.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.file
            .as_mut()
            .expect("a staged file is written before it is finished")
    }

    /// Flushes it to disk and gives it its name.
    pub fn finish(mut self) -> Result<()> {
        let file = self
            .file
            .take()
            .expect("finished once")
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("writing {}", self.partial.display()))?;
        file.sync_all()
            .with_context(|| format!("writing {}", self.partial.display()))?;
        std::fs::rename(&self.partial, &self.path)
            .with_context(|| format!("naming {}", self.path.display()))
    }
}

impl Drop for Staged {
    /// An export that did not finish leaves nothing behind.
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_has_its_name_only_when_finished_and_nothing_is_left_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("train.jsonl");
        std::fs::write(&path, "old\n").unwrap();
        let mut staged = Staged::create(&path).unwrap();
        staged.writer().write_all(b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
        staged.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        let mut dropped = Staged::create(&path).unwrap();
        dropped.writer().write_all(b"half").unwrap();
        drop(dropped);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no .partial left");
    }
}
