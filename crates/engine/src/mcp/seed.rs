//! Placing a seed in a sandbox, and keeping an end state beside a run: copies that hold files,
//! folders and (in a kept end state) symbolic links as links, never follow a link, never open a
//! named pipe, socket or device, and never take more than [`MAX_BYTES`].
//!
//! A seed (the user's, or shared with them) must hold files and folders only: a link, a pipe or
//! a device in it is refused. An end state is what the server made: a link is kept as a link
//! (never followed), and anything else that is not a file or a folder is skipped and said.
//!
//! Copies that never follow a link nor open a pipe, socket or device (refused in a
//! seed, skipped and said in a kept end state, links kept as links), a seed 1 GiB at most; the
//! `.tar` unpacking. `seed_git.rs`: every repository in a copy loses its hooks, `commondir`,
//! `alternates` and each `.git/config` key outside an allowlist (read by `git config --file
//! --no-includes`), listed in the header's `seed_removed`. `git.rs`: the one way cosmos runs git
//! on a sandbox (system and global config, fsmonitor, hooks, pager and external diff off).

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Most bytes a seed may hold (copied or unpacked): a larger one is refused, not half placed.
pub const MAX_BYTES: u64 = 1 << 30;

/// Opens the regular file at `path` for reading without following a link and without blocking
/// on a named pipe; anything but a regular file is an error naming what it is.
pub fn open_regular(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("reading {}", path.display()))?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        bail!("{} is {}, not a file", path.display(), kind_name(&kind));
    }
    Ok(file)
}

/// What a file type is, in words.
pub fn kind_name(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else if kind.is_dir() {
        "a folder"
    } else {
        "a file"
    }
}

/// Copies the seed `from` (a file or a folder) to `to`, which must not exist.
pub fn copy_seed(from: &Path, to: &Path) -> Result<()> {
    let mut budget = MAX_BYTES;
    copy_tree(from, to, &mut budget, &mut |path, kind| {
        bail!(
            "{} is {}: a seed holds files and folders only",
            path.display(),
            kind_name(kind)
        )
    })
}

/// Copies an end state `from` to `to` (which must not exist): links kept as links, other
/// special files skipped; what was skipped, one line each.
pub fn copy_state(from: &Path, to: &Path) -> Result<Vec<String>> {
    let mut skipped = Vec::new();
    let mut budget = u64::MAX;
    copy_tree(from, to, &mut budget, &mut |path, kind| {
        if kind.is_symlink() {
            let target = std::fs::read_link(path)?;
            let shown = path.strip_prefix(from).unwrap_or(path);
            std::os::unix::fs::symlink(&target, to.join(shown))
                .with_context(|| format!("keeping the link {}", path.display()))?;
        } else {
            skipped.push(format!("{} ({})", path.display(), kind_name(kind)));
        }
        Ok(())
    })?;
    Ok(skipped)
}

/// The one walk behind both copies; `special` is asked what to do with anything that is not
/// a file or a folder (at its path under `from`).
fn copy_tree(
    from: &Path,
    to: &Path,
    budget: &mut u64,
    special: &mut dyn FnMut(&Path, &std::fs::FileType) -> Result<()>,
) -> Result<()> {
    let meta =
        std::fs::symlink_metadata(from).with_context(|| format!("reading {}", from.display()))?;
    let kind = meta.file_type();
    if kind.is_dir() {
        std::fs::create_dir(to).with_context(|| format!("creating {}", to.display()))?;
        let mut entries: Vec<_> = std::fs::read_dir(from)?.collect::<std::io::Result<_>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            copy_tree(&entry.path(), &to.join(entry.file_name()), budget, special)?;
        }
    } else if kind.is_file() {
        let source = open_regular(from)?;
        let size = source.metadata()?.len();
        if size > *budget {
            bail!(
                "{} takes the seed over {} bytes, the most a seed may hold",
                from.display(),
                MAX_BYTES
            );
        }
        let mut target = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(to)
            .with_context(|| format!("creating {}", to.display()))?;
        // At most the size read above: a file that grows while copied is cut, not followed.
        let copied = std::io::copy(&mut source.take(size), &mut target)?;
        *budget -= copied;
        target.set_permissions(meta.permissions())?;
    } else {
        special(from, &kind)?;
    }
    Ok(())
}

/// Unpacks the archive `tar` into `into` (a fresh folder): its entries, folders and files only,
/// at most [`MAX_BYTES`] in all, must all lie under one folder named as the archive without
/// `.tar`, which is returned (the state).
pub fn unpack(tar: &Path, into: &Path) -> Result<PathBuf> {
    let top = tar
        .file_stem()
        .context("the archive has no name")?
        .to_os_string();
    let file = open_regular(tar)?;
    let mut archive = tar::Archive::new(file);
    archive.set_preserve_permissions(false);
    archive.set_unpack_xattrs(false);
    let mut total: u64 = 0;
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            bail!(
                "{} holds {} ({kind:?}): a seed holds files and folders only",
                tar.display(),
                path.display()
            );
        }
        total = total.saturating_add(entry.size());
        if total > MAX_BYTES {
            bail!(
                "{} unpacks to over {MAX_BYTES} bytes, the most a seed may hold",
                tar.display()
            );
        }
        if path.components().next().map(|c| c.as_os_str()) != Some(top.as_os_str()) {
            bail!(
                "{} holds {}, outside the folder {}/ every entry must be in",
                tar.display(),
                path.display(),
                top.to_string_lossy()
            );
        }
        // `unpack_in` refuses a path that would leave `into`.
        if !entry.unpack_in(into)? {
            bail!(
                "{} holds {}, which leaves the folder",
                tar.display(),
                path.display()
            );
        }
    }
    let root = into.join(&top);
    if !root.is_dir() {
        bail!(
            "{} holds no folder {}/",
            tar.display(),
            top.to_string_lossy()
        );
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_named_pipe_in_a_seed_is_refused_at_once_and_skipped_in_an_end_state() {
        let dir = tempfile::tempdir().unwrap();
        let seed = dir.path().join("seed");
        std::fs::create_dir(&seed).unwrap();
        std::fs::write(seed.join("a"), "1").unwrap();
        fifo(&seed.join("pipe"));
        // Opening a pipe for reading with nobody writing would block forever: this returns.
        let e = format!(
            "{:#}",
            copy_seed(&seed, &dir.path().join("copy")).unwrap_err()
        );
        assert!(e.contains("is a named pipe"), "{e}");
        std::os::unix::fs::symlink("/etc/passwd", seed.join("link")).unwrap();
        let skipped = copy_state(&seed, &dir.path().join("kept")).unwrap();
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert!(skipped[0].contains("a named pipe"), "{skipped:?}");
        let kept = dir.path().join("kept");
        assert_eq!(std::fs::read_to_string(kept.join("a")).unwrap(), "1");
        // The link is kept as a link, not as the file it names.
        assert!(
            std::fs::symlink_metadata(kept.join("link"))
                .unwrap()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_link(kept.join("link")).unwrap(),
            Path::new("/etc/passwd")
        );
    }

    /// A server that makes a named pipe in its state: its digest and its reading as fields
    /// never open it (a pipe nobody writes would block them, and the run, forever), and the
    /// pipe is named for what it is.
    #[test]
    fn a_named_pipe_in_a_state_is_digested_and_read_by_its_kind_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::fs::write(state.join("a"), "1").unwrap();
        let before = crate::mcp::state_tree::digest(&state).unwrap();
        fifo(&state.join("pipe"));
        std::os::unix::fs::symlink("a", state.join("link")).unwrap();
        let after = crate::mcp::state_tree::digest(&state).unwrap();
        assert_ne!(before, after, "the pipe is part of the state");
        let fields = crate::mcp::state_view::read(&state).unwrap();
        assert_eq!(fields["pipe"], "named pipe");
        assert_eq!(fields["link"], "symlink");
        assert_eq!(fields["a"], "1");
    }

    /// A seed past [`MAX_BYTES`] (a sparse file, so the test writes nothing) is refused before
    /// any byte is copied, not half placed.
    #[test]
    fn a_seed_over_the_limit_is_refused_before_it_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let seed = dir.path().join("seed");
        std::fs::create_dir(&seed).unwrap();
        std::fs::File::create(seed.join("huge"))
            .unwrap()
            .set_len(MAX_BYTES + 1)
            .unwrap();
        let to = dir.path().join("copy");
        let e = format!("{:#}", copy_seed(&seed, &to).unwrap_err());
        assert!(e.contains("the most a seed may hold"), "{e}");
        assert!(!to.join("huge").exists(), "nothing of it copied");
    }

    #[test]
    fn a_copy_never_writes_through_a_link_at_its_destination() {
        let dir = tempfile::tempdir().unwrap();
        let seed = dir.path().join("seed");
        std::fs::write(&seed, "seed").unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        let planted = dir.path().join("planted");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        assert!(copy_seed(&seed, &planted).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
    }
}
