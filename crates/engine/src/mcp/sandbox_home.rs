//! Where a sandbox lives (and the runs converted from foreign files, `import::open`): a folder
//! no other user can plant or enter, held by a lock its owner keeps open, and the rule that
//! removes what a killed cosmos left behind.
//!
//! A home is `TMP/cosmos-state-RANDOM/` made exclusively with mode 0700 (`tempfile`), holding
//! `owner.lock` (locked with `flock` for the sandbox's life) and `state/`, the folder
//! `${COSMOS_STATE_DIR}` names. The lock is taken before it gets its name, so a home whose
//! `owner.lock` can be locked by someone else has no owner: its cosmos is gone.
//!
//! [`remove_leftovers`] takes only folders that match the name, are real folders (not links)
//! owned by this user with no access for anyone else, and hold a regular `owner.lock` it can
//! lock; it never follows a link (`remove_dir_all` removes links, not what they name).
//!
//! The folder a copy lives in, `TMP/cosmos-state-RANDOM/` (tempfile, mode
//! 0700) with `owner.lock` (flock'd for the sandbox's life, taken before the name is given) and
//! `state/`; `remove_leftovers` removes only this user's homes closed to others whose lock is
//! free, never following a link (once per process, before the first sandbox).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cosmos_trajectory::event::Header;

/// The start of every home's name.
pub const PREFIX: &str = "cosmos-state-";

/// The lock file in a home.
const LOCK: &str = "owner.lock";

/// A sandbox's home: removed, with everything in it, when dropped.
#[derive(Debug)]
pub struct Home {
    folder: tempfile::TempDir,
    // Held while the home lives: the sign that its cosmos is alive.
    _lock: File,
}

impl Home {
    /// Makes a fresh home in `tmp` (the system's temporary folder when `None`).
    pub fn new(tmp: Option<&Path>) -> Result<Self> {
        let tmp = tmp.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let folder = tempfile::Builder::new()
            .prefix(PREFIX)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(&tmp)
            .with_context(|| format!("creating a state folder in {}", tmp.display()))?;
        // Locked under another name, then renamed: a sweeper never sees an unlocked lock.
        let pending = folder.path().join("owner.lock.new");
        let lock = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&pending)
            .context("creating the state folder's lock")?;
        lock.try_lock()
            .context("locking the state folder's own lock")?;
        std::fs::rename(&pending, folder.path().join(LOCK))?;
        std::fs::create_dir(folder.path().join("state"))?;
        Ok(Self {
            folder,
            _lock: lock,
        })
    }

    /// The folder to work in (a sandbox keeps its server's state there).
    pub fn root(&self) -> &Path {
        self.folder.path()
    }

    /// The folder the server's state lives in (`${COSMOS_STATE_DIR}`).
    pub fn state(&self) -> PathBuf {
        self.folder.path().join("state")
    }
}

/// A fresh home in the system's temporary folder, after removing (once per process) what a
/// killed cosmos left there: for a sandbox's state, and for the runs converted from foreign
/// files (`import::open`), which a SIGKILL or an unhandled SIGTERM would otherwise leave behind.
pub fn fresh() -> Result<Home> {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        for gone in remove_leftovers(None) {
            tracing::info!("removed {}, left by a cosmos that is gone", gone.display());
        }
    });
    Home::new(None)
}

/// Removes the homes in `tmp` (the system's temporary folder when `None`) that this user's
/// cosmos made and whose process is gone; the folders removed.
pub fn remove_leftovers(tmp: Option<&Path>) -> Vec<PathBuf> {
    let tmp = tmp.map_or_else(std::env::temp_dir, Path::to_path_buf);
    let Ok(entries) = std::fs::read_dir(&tmp) else {
        return Vec::new();
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        if abandoned(&path, me) && std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// True when `home` is a folder (not a link) of `owner`'s, closed to others, whose regular
/// `owner.lock` nobody holds.
fn abandoned(home: &Path, owner: u32) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(home) else {
        return false;
    };
    if !meta.is_dir() || meta.uid() != owner || meta.mode() & 0o077 != 0 {
        return false;
    }
    let Ok(lock) = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(home.join(LOCK))
    else {
        return false;
    };
    let Ok(lock_meta) = lock.metadata() else {
        return false;
    };
    lock_meta.is_file() && lock_meta.uid() == owner && lock.try_lock().is_ok()
}

/// Where a run is, as the person knows it. A run converted for this command lives in the
/// private folder, which is removed when cosmos ends: it is named by the file it was made of
/// (and the session or sample in it). Any other run, an imported one saved by `cosmos import`
/// included, by its path.
pub fn shown_location(path: &Path, header: &Header) -> String {
    let converted = path
        .parent()
        .and_then(|part| Some((part.file_name()?, part.parent()?.file_name()?)))
        .is_some_and(|(part, home)| {
            (part == GIVEN || part == FOUND) && home.to_string_lossy().starts_with(PREFIX)
        });
    match &header.source {
        Some(source) if converted => format!(
            "{} › {} (converted from {})",
            source.file, source.id, source.format
        ),
        _ => path.display().to_string(),
    }
}

/// The part of a home for runs converted from files given one by one (each run listed on its
/// own; `import::open`).
pub const GIVEN: &str = "given";
/// Its part for runs converted from files found in folders (listed as a folder).
pub const FOUND: &str = "found";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_home_is_private_unpredictable_and_gone_when_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let [a, b] = [(), ()].map(|()| Home::new(Some(tmp.path())).unwrap());
        assert_ne!(a.state(), b.state());
        let home = a.state().parent().unwrap().to_path_buf();
        let mode = std::fs::metadata(&home).unwrap().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        assert!(home.join(LOCK).is_file() && a.state().is_dir());
        // A live home is nobody's leftover.
        assert!(remove_leftovers(Some(tmp.path())).is_empty());
        drop(a);
        assert!(!home.exists());
    }

    #[test]
    fn only_this_users_abandoned_homes_are_removed_and_no_link_is_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        std::fs::write(victim.path().join("keep"), "mine").unwrap();
        // A home whose cosmos was killed: its lock file is there, nobody holds it.
        let dead = tmp.path().join(format!("{PREFIX}dead"));
        std::fs::create_dir(&dead).unwrap();
        std::fs::set_permissions(&dead, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(dead.join(LOCK), "").unwrap();
        std::fs::create_dir(dead.join("state")).unwrap();
        std::os::unix::fs::symlink(victim.path(), dead.join("state/link")).unwrap();
        // A link named like a home, to a folder with a lock of its own.
        std::fs::write(victim.path().join(LOCK), "").unwrap();
        let planted = tmp.path().join(format!("{PREFIX}planted"));
        std::os::unix::fs::symlink(victim.path(), &planted).unwrap();
        // A folder without a lock (an older cosmos's, or anyone's), and one open to others.
        let unlocked = tmp.path().join(format!("{PREFIX}1-0-kv"));
        std::fs::create_dir(&unlocked).unwrap();
        let open = tmp.path().join(format!("{PREFIX}open"));
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(open.join(LOCK), "").unwrap();
        // A lock that is a link.
        let linked = tmp.path().join(format!("{PREFIX}linked"));
        std::fs::create_dir(&linked).unwrap();
        std::fs::set_permissions(&linked, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(victim.path().join(LOCK), linked.join(LOCK)).unwrap();
        let live = Home::new(Some(tmp.path())).unwrap();

        let removed = remove_leftovers(Some(tmp.path()));
        assert_eq!(removed, vec![dead.clone()]);
        assert!(!dead.exists());
        assert_eq!(
            std::fs::read_to_string(victim.path().join("keep")).unwrap(),
            "mine"
        );
        for kept in [&planted, &unlocked, &open, &linked] {
            assert!(
                std::fs::symlink_metadata(kept).is_ok(),
                "{}",
                kept.display()
            );
        }
        assert!(live.state().is_dir());
    }
}
