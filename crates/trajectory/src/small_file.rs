//! Reading a file that is read whole (a config, a task file, a token store, a claim) within a
//! cap: a file far larger than any such file ever is (a mistake, or a hostile path) is refused
//! after reading one byte past the cap, never loaded into memory whole.
//!
//! Files read whole (configs, task files, sweep specs, keymaps, OAuth token stores, sweep claims)
//! are read through `read_within` with a cap for their kind: nothing reads a file whole without
//! one. Trajectories are never read whole: `trajectory::reader` streams them.

use std::io::Read;
use std::path::Path;

/// Config-like files: `cosmos.toml`, `mcp.json`, a sweep spec, a keymap.
pub const CONFIG_BYTES: u64 = 16 << 20;
/// Task files (MCP-Bench's hold many tasks, each a few kilobytes).
pub const TASKS_BYTES: u64 = 64 << 20;
/// A stored OAuth token (a few kilobytes).
pub const TOKEN_BYTES: u64 = 1 << 20;

/// The file at `path` as bytes, when it is at most `limit` bytes; an `InvalidData` error
/// naming the cap when it is longer (other errors as `std::fs::read` gives them).
pub fn read_within(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than {} bytes ({} MiB), more than such a file ever holds: not read",
                limit,
                limit >> 20
            ),
        ));
    }
    Ok(bytes)
}

/// [`read_within`], as UTF-8 text.
pub fn read_string_within(path: &Path, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read_within(path, limit)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_past_its_cap_is_refused_and_one_at_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![b'x'; 100]).unwrap();
        assert_eq!(read_within(&path, 100).unwrap().len(), 100);
        let refused = read_within(&path, 99).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::InvalidData);
        assert!(
            refused.to_string().contains("larger than 99 bytes"),
            "{refused}"
        );
        let missing = read_within(&dir.path().join("none"), 10).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }
}
