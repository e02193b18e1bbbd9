//! The one way cosmos writes a file at a name: a name the user gave (`-o`, `--out`), or one
//! another user could guess (a lock, a protocol log, a log file). Nothing here follows a link
//! someone else planted.
//!
//! - [`Staged`] writes a file the user named whole or not at all. A regular file is written
//!   under a random name in its own folder (`tempfile`: created exclusively, so a planted
//!   name is never opened) and renamed onto the target once complete; an error, or a drop
//!   before [`Staged::finish`], leaves nothing behind. The target is what a shell's `>` would
//!   write: a link is followed to the file it names (the link stays a link), a FIFO or a
//!   character device (`/dev/stdout`, a pipe) is written as a stream, never replaced, and a
//!   folder, socket or block device is refused before anything is created. A file replaced
//!   keeps its permissions.
//! - [`open_own`] opens a file at a guessable name (a lock, a log appended to) without
//!   following a link at its last component, and refuses a file with other names (a hard
//!   link planted to a victim).
//! - [`stdout_is_open`]: a standard output closed at start (`>&-`) is `/dev/null` by the
//!   time `main` runs, and takes every write silently; a command whose output is its point
//!   asks first.

use std::fs::{File, OpenOptions};
use std::io::BufWriter;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Most links followed from a name the user gave (the kernel's own bound is 40).
const MAX_LINKS: usize = 40;

/// A file being written; it takes its name only at [`Staged::finish`].
pub struct Staged {
    /// The name as the user gave it, for messages.
    shown: PathBuf,
    writer: BufWriter<File>,
    /// Where the file is renamed to, and the random name it is written under (removed when
    /// dropped unfinished); `None` for a stream.
    rename: Option<(PathBuf, tempfile::TempPath)>,
}

impl Staged {
    /// Starts writing what will be `path` (see the module doc for what each kind of name
    /// becomes).
    pub fn create(path: &Path) -> Result<Self> {
        let shown = path.to_path_buf();
        match std::fs::metadata(path) {
            Ok(meta) => {
                let kind = meta.file_type();
                if kind.is_dir() {
                    bail!("{} is a folder: name a file to write", path.display());
                }
                if kind.is_fifo() || kind.is_char_device() {
                    // Opened as it is (no create, no truncation): a pipe or a terminal takes
                    // the bytes as they come.
                    let file = OpenOptions::new()
                        .write(true)
                        .open(path)
                        .with_context(|| format!("opening {}", path.display()))?;
                    return Ok(Self {
                        shown,
                        writer: BufWriter::new(file),
                        rename: None,
                    });
                }
                if !kind.is_file() {
                    bail!(
                        "{} is neither a file, a pipe nor a terminal: nothing written",
                        path.display()
                    );
                }
                let target = std::fs::canonicalize(path)
                    .with_context(|| format!("resolving {}", path.display()))?;
                Self::replacing(shown, target, Some(meta.permissions()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let target = dangling_target(path)?;
                Self::replacing(shown, target, None)
            }
            Err(e) => Err(e).with_context(|| format!("opening {}", path.display())),
        }
    }

    /// Writes beside `target` under a random name, to be renamed onto it.
    fn replacing(
        shown: PathBuf,
        target: PathBuf,
        keep: Option<std::fs::Permissions>,
    ) -> Result<Self> {
        let folder = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(target.file_name().unwrap_or_default());
        prefix.push(".");
        let temp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".partial")
            // A new file gets what a shell's `>` gives it (the umask applies).
            .permissions(keep.unwrap_or_else(|| std::fs::Permissions::from_mode(0o666)))
            .tempfile_in(&folder)
            .with_context(|| format!("creating {}", shown.display()))?;
        let (file, temp_path) = temp.into_parts();
        Ok(Self {
            shown,
            writer: BufWriter::new(file),
            rename: Some((target, temp_path)),
        })
    }

    /// Where it is being written.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        &mut self.writer
    }

    /// Flushes it and gives it its name (a stream is flushed: a full device says so here).
    pub fn finish(self) -> Result<()> {
        let shown = self.shown;
        let file = self
            .writer
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("writing {}", shown.display()))?;
        let Some((target, temp)) = self.rename else {
            return Ok(());
        };
        file.sync_all()
            .with_context(|| format!("writing {}", shown.display()))?;
        temp.persist(&target)
            .map_err(|e| e.error)
            .with_context(|| format!("naming {}", shown.display()))?;
        Ok(())
    }
}

/// The file a name that does not exist yet would create: itself, or what its dangling
/// link(s) name, as a shell's `>` follows them.
fn dangling_target(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let next = std::fs::read_link(&at)?;
                at = match at.parent() {
                    Some(folder) if next.is_relative() => folder.join(next),
                    _ => next,
                };
            }
            _ => return Ok(at),
        }
    }
    bail!("{} is a chain of too many links", path.display())
}

/// How [`open_own`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Own {
    /// Created if missing; written at its end (a log).
    Append,
    /// Created if missing; read and written in place, never truncated on open (a lock).
    Lock,
}

/// Opens a file at a name another user could guess: never through a link at its last
/// component, never one with other names (a hard link planted to a victim's file).
pub fn open_own(path: &Path, how: Own) -> Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).custom_flags(libc::O_NOFOLLOW);
    match how {
        Own::Append => options.append(true),
        Own::Lock => options.read(true).write(true).truncate(false),
    };
    let file = options.open(path).with_context(|| {
        format!(
            "opening {} (a link there is never followed)",
            path.display()
        )
    })?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.nlink() > 1 {
        bail!(
            "{} is not a file of its own (another name links to it): left as it is",
            path.display()
        );
    }
    Ok(file)
}

/// False when this process's standard output was closed when it started (`>&-`). Rust's
/// std gives a closed standard descriptor `/dev/null` before `main` (so no file opened later
/// takes its number), opened for reading and writing; writes then vanish, and a command whose
/// output is its point would report success having printed nothing. A shell's `>/dev/null`
/// opens it for writing only: that one is the person's choice, and open.
pub fn stdout_is_open() -> bool {
    // SAFETY: fstat and F_GETFL on a descriptor number only read the descriptor's state.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstat(libc::STDOUT_FILENO, &mut stat) != 0 {
            return false;
        }
        let null =
            stat.st_mode & libc::S_IFMT == libc::S_IFCHR && stat.st_rdev == libc::makedev(1, 3);
        let flags = libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFL);
        !(null && flags != -1 && flags & libc::O_ACCMODE == libc::O_RDWR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_has_its_name_only_when_finished_and_nothing_is_left_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("train.jsonl");
        std::fs::write(&path, "old\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let mut staged = Staged::create(&path).unwrap();
        staged.writer().write_all(b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
        staged.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640, "a replaced file keeps its permissions");
        let mut dropped = Staged::create(&path).unwrap();
        dropped.writer().write_all(b"half").unwrap();
        drop(dropped);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        assert_eq!(
            names_in(dir.path()),
            ["train.jsonl"],
            "nothing left beside it"
        );
    }

    #[test]
    fn a_planted_partial_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("bashrc");
        std::fs::write(&victim, "mine").unwrap();
        let out = dir.path().join("out.json");
        // The names the old writer used, and a guess at the new one's prefix.
        for planted in [
            "out.json.partial",
            ".out.json.partial",
            ".out.json.x.partial",
        ] {
            std::os::unix::fs::symlink(&victim, dir.path().join(planted)).unwrap();
        }
        let mut staged = Staged::create(&out).unwrap();
        staged.writer().write_all(b"{}").unwrap();
        staged.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "{}");
    }

    #[test]
    fn a_link_the_user_names_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.md");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink("real.md", &link).unwrap();
        let mut staged = Staged::create(&link).unwrap();
        staged.writer().write_all(b"new").unwrap();
        staged.finish().unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        // A dangling link: the file it names is made, as `>` makes it.
        let dangling = dir.path().join("dangling.md");
        std::os::unix::fs::symlink("made.md", &dangling).unwrap();
        let mut staged = Staged::create(&dangling).unwrap();
        staged.writer().write_all(b"made").unwrap();
        staged.finish().unwrap();
        assert!(std::fs::symlink_metadata(&dangling).unwrap().is_symlink());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("made.md")).unwrap(),
            "made"
        );
        // A loop of links is an error, and nothing is made.
        std::os::unix::fs::symlink("b", dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        assert!(Staged::create(&dir.path().join("a")).is_err());
        assert_eq!(
            names_in(dir.path()),
            ["a", "b", "dangling.md", "link.md", "made.md", "real.md"]
        );
    }

    #[test]
    fn a_pipe_is_written_as_a_stream_and_a_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut text = String::new();
                File::open(fifo).unwrap().read_to_string(&mut text).unwrap();
                text
            })
        };
        let mut staged = Staged::create(&fifo).unwrap();
        staged.writer().write_all(b"streamed").unwrap();
        staged.finish().unwrap();
        assert_eq!(reader.join().unwrap(), "streamed");
        let meta = std::fs::symlink_metadata(&fifo).unwrap();
        assert!(meta.file_type().is_fifo(), "the pipe is still a pipe");
        let folder = dir.path().join("folder");
        std::fs::create_dir(&folder).unwrap();
        let err = Staged::create(&folder).err().unwrap().to_string();
        assert!(err.contains("is a folder"), "{err}");
        assert_eq!(names_in(dir.path()), ["fifo", "folder"], "nothing made");
    }

    #[test]
    fn a_full_device_is_an_error_not_a_success() {
        let mut staged = Staged::create(Path::new("/dev/full")).unwrap();
        staged.writer().write_all(b"held in the buffer").unwrap();
        assert!(staged.finish().is_err(), "the flush finds the device full");
    }

    #[test]
    fn a_guessable_name_is_never_followed_nor_a_hard_link_taken() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        let link = dir.path().join("run.wire");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(open_own(&link, Own::Append).is_err());
        let hard = dir.path().join("cell.lock");
        std::fs::hard_link(&victim, &hard).unwrap();
        assert!(open_own(&hard, Own::Lock).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        let mut own = open_own(&dir.path().join("fresh.log"), Own::Append).unwrap();
        own.write_all(b"line\n").unwrap();
    }
}
