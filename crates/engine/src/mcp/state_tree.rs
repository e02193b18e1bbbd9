//! A kept state on disk (a sandbox's file or folder) as files: their list, their total size
//! and the digest that says whether two states are byte-identical.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// Every file under `root`, sorted by path, with its size (links, pipes, sockets and devices
/// listed with size 0, never followed or opened).
pub fn files(root: &Path) -> Result<Vec<(PathBuf, u64)>> {
    let mut found = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in
            std::fs::read_dir(&folder).with_context(|| format!("reading {}", folder.display()))?
        {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                folders.push(entry.path());
            } else {
                let size = if kind.is_file() {
                    entry.metadata()?.len()
                } else {
                    0
                };
                found.push((entry.path(), size));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The bytes the state at `root` (a file or a folder) takes.
pub fn size(root: &Path) -> Result<u64> {
    let meta =
        std::fs::symlink_metadata(root).with_context(|| format!("reading {}", root.display()))?;
    if !meta.is_dir() {
        return Ok(meta.len());
    }
    Ok(files(root)?.iter().map(|(_, n)| n).sum())
}

/// The digest of the state under `root`: SHA-256 over each file's path (relative to `root`)
/// and bytes, in path order, as `sha256:HEX`. Equal states, equal digests, on any machine.
pub fn digest(root: &Path) -> Result<String> {
    let mut hash = Sha256::new();
    let mut buffer = vec![0u8; 64 << 10];
    for (path, _) in files(root)? {
        let relative = path.strip_prefix(root).unwrap_or(&path);
        let name = relative.to_string_lossy().replace('\\', "/");
        hash.update((name.len() as u64).to_le_bytes());
        hash.update(name.as_bytes());
        // A link is a link (never followed) and a pipe, socket or device is its kind (never
        // opened: reading a named pipe nobody writes would wait forever).
        let kind = std::fs::symlink_metadata(&path)?.file_type();
        if kind.is_symlink() {
            hash.update(b"symlink");
            continue;
        }
        if !kind.is_file() {
            hash.update(super::seed::kind_name(&kind).as_bytes());
            continue;
        }
        let mut file = super::seed::open_regular(&path)?;
        let size = file.metadata()?.len();
        hash.update(size.to_le_bytes());
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            hash.update(&buffer[..n]);
        }
    }
    Ok(format!("sha256:{:x}", hash.finalize()))
}
