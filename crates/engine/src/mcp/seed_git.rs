//! A seed's git repositories made inert before anything reads them. A seed is shared data, and
//! a repository can name programs that git runs on its own: hooks (the reference git server
//! commits through GitPython, which runs `pre-commit` and `commit-msg`), `core.fsmonitor` (run by
//! a mere `git diff`), pagers, filters, aliases, credential helpers, `ext::` remotes. A copy's
//! repositories keep only what describes data; everything else is **removed and said**: the
//! run goes on, and the warning names each thing taken out (docs/world-models.md, "Worlds with
//! state").
//!
//! What a repository keeps of its `.git/config` is an allowlist ([`KEPT_KEYS`]), read by git
//! itself (`git config --file --no-includes`), so nothing here parses git's syntax differently
//! from git. Hooks other than git's inert `*.sample` files go, and so do `commondir` and object
//! `alternates` (they point git at folders outside the copy). A `.git` that is a file (a
//! `gitdir:` link elsewhere) is refused.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The configuration keys a seed's repository keeps (lower-case, `*` one subsection): the
/// repository's layout and its author, nothing that names a program or another place.
const KEPT_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "user.name",
    "user.email",
    "init.defaultbranch",
    "branch.*.remote",
    "branch.*.merge",
    "extensions.objectformat",
    "extensions.refstorage",
];

/// Makes every repository under `root` (the seed's copy) inert; what was removed, one line
/// each, for the user to be told.
pub fn defuse(root: &Path) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for git_dir in repositories(root)? {
        let shown = git_dir.strip_prefix(root).unwrap_or(&git_dir).display();
        let shown = shown.to_string();
        for hook in hooks(&git_dir)? {
            std::fs::remove_file(&hook)
                .with_context(|| format!("removing the hook {}", hook.display()))?;
            let name = hook.file_name().unwrap_or_default().to_string_lossy();
            removed.push(format!("{shown}/hooks/{name} (a hook)"));
        }
        for pointer in ["commondir", "objects/info/alternates"] {
            let path = git_dir.join(pointer);
            if std::fs::symlink_metadata(&path).is_ok() {
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
                removed.push(format!(
                    "{shown}/{pointer} (it points git outside the copy)"
                ));
            }
        }
        for key in clean_config(&git_dir.join("config"))? {
            removed.push(format!("{shown}/config: {key}"));
        }
        // A worktree's own configuration is read only with an extension the allowlist drops,
        // but it goes too: nothing in it is data.
        let worktree = git_dir.join("config.worktree");
        if std::fs::symlink_metadata(&worktree).is_ok() {
            std::fs::remove_file(&worktree)?;
            removed.push(format!("{shown}/config.worktree"));
        }
    }
    Ok(removed)
}

/// Every `.git` folder under `root` (itself included), not following links; a `.git` that is
/// not a folder is refused.
fn repositories(root: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let meta = std::fs::symlink_metadata(root)?;
    if !meta.is_dir() {
        return Ok(found);
    }
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if entry.file_name() == ".git" {
                if !kind.is_dir() {
                    bail!(
                        "{} is a .git that is not a folder (a link to a repository elsewhere): \
                         a seed's repository must be whole inside it",
                        entry.path().display()
                    );
                }
                found.push(entry.path());
            } else if kind.is_dir() {
                folders.push(entry.path());
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The hooks of the repository at `git_dir`: every file in `hooks/` but git's `*.sample`s
/// (which git never runs), folders included (a hook may be a folder git then fails on).
fn hooks(git_dir: &Path) -> Result<Vec<PathBuf>> {
    let folder = git_dir.join("hooks");
    let Ok(meta) = std::fs::symlink_metadata(&folder) else {
        return Ok(Vec::new());
    };
    if !meta.is_dir() {
        std::fs::remove_file(&folder)?;
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&folder)? {
        let entry = entry?;
        let sample = entry.file_name().to_string_lossy().ends_with(".sample")
            && entry.file_type()?.is_file();
        if !sample {
            if entry.file_type()?.is_dir() {
                std::fs::remove_dir_all(entry.path())?;
                continue;
            }
            found.push(entry.path());
        }
    }
    found.sort();
    Ok(found)
}

/// True when `key` (as git lists it: section and name lower-case, a subsection as written)
/// is one the allowlist keeps.
fn kept(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split('.').collect();
    KEPT_KEYS.iter().any(|allowed| {
        let pattern: Vec<&str> = allowed.split('.').collect();
        match (pattern.as_slice(), parts.as_slice()) {
            ([s, n], [ks, kn]) => s == ks && n == kn,
            // A subsection may itself hold dots: it is what stands between the first part
            // and the last.
            ([s, "*", n], [ks, middle @ .., kn]) => s == ks && n == kn && !middle.is_empty(),
            _ => false,
        }
    })
}

/// Rewrites the configuration file at `path` with only its kept keys (by git itself); the
/// keys removed.
fn clean_config(path: &Path) -> Result<Vec<String>> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(Vec::new());
    };
    if !meta.is_file() {
        bail!("{} is not a file", path.display());
    }
    let listed = super::git::command(Path::new("/"))
        .args(["config", "--no-includes", "--null", "--list", "--file"])
        .arg(path)
        .output()
        .context("running git to read a seed repository's configuration (is git installed?)")?;
    if !listed.status.success() {
        bail!(
            "{} is not a configuration git can read: {}",
            path.display(),
            String::from_utf8_lossy(&listed.stderr).trim()
        );
    }
    let mut keep = Vec::new();
    let mut removed = Vec::new();
    for entry in listed.stdout.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        let (key, value) = entry.split_once('\n').unwrap_or((&entry, "true"));
        if kept(key) {
            keep.push((key.to_string(), value.to_string()));
        } else if !removed.contains(&key.to_string()) {
            removed.push(key.to_string());
        }
    }
    if removed.is_empty() {
        return Ok(removed);
    }
    // Written anew beside the old one, then put in its place: a file git reads is never half
    // written.
    let fresh = path.with_extension("cosmos-new");
    let _ = std::fs::remove_file(&fresh);
    std::fs::File::create_new(&fresh).with_context(|| format!("writing {}", fresh.display()))?;
    for (key, value) in &keep {
        let status = super::git::command(Path::new("/"))
            .args(["config", "--file"])
            .arg(&fresh)
            .args(["--add", key, value])
            .output()?;
        if !status.status.success() {
            bail!(
                "rewriting {}: {}",
                path.display(),
                String::from_utf8_lossy(&status.stderr).trim()
            );
        }
    }
    std::fs::rename(&fresh, path)?;
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowlist_keeps_layout_and_author_and_nothing_that_names_a_program() {
        for key in [
            "core.repositoryformatversion",
            "core.bare",
            "user.email",
            "branch.main.merge",
            "branch.feature.x.remote",
            "Core.FileMode",
        ] {
            assert!(kept(key), "{key}");
        }
        for key in [
            "core.fsmonitor",
            "core.hookspath",
            "core.pager",
            "core.sshcommand",
            "core.editor",
            "alias.st",
            "filter.lfs.clean",
            "diff.x.textconv",
            "credential.helper",
            "remote.origin.url",
            "include.path",
            "includeif.gitdir:/x.path",
            "branch.remote",
            "user.signingkey",
            "gpg.program",
            "extensions.worktreeconfig",
        ] {
            assert!(!kept(key), "{key}");
        }
    }
}
