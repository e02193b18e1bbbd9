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
//! `alternates` (they point git at folders outside the copy). Every git directory is found by
//! what it is, not by its name (a bare `inner.git/`, a submodule's `.git/modules/sub`, a
//! worktree's admin folder): git runs a repository's programs wherever it is pointed. A `.git`
//! that is a file (a `gitdir:` link elsewhere) is refused.

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

/// Every git directory under `root` (itself included), found by what it is whatever its name:
/// a `.git` folder, a bare repository (`inner.git/`), a submodule's (`.git/modules/sub`), a
/// worktree's admin folder (`.git/worktrees/w`); never following links. A `.git` that is not a
/// folder (a `gitdir:` file pointing elsewhere) is refused.
fn repositories(root: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let meta = std::fs::symlink_metadata(root)?;
    if !meta.is_dir() {
        return Ok(found);
    }
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        if folder.file_name().is_some_and(|n| n == ".git") || is_git_dir(&folder) {
            found.push(folder.clone());
        }
        for entry in std::fs::read_dir(&folder)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if entry.file_name() == ".git" && !kind.is_dir() {
                bail!(
                    "{} is a .git that is not a folder (a link to a repository elsewhere): \
                     a seed's repository must be whole inside it",
                    entry.path().display()
                );
            }
            if kind.is_dir() {
                folders.push(entry.path());
            }
        }
    }
    found.sort();
    Ok(found)
}

/// True when `dir` is a git directory by what git itself looks for: a `HEAD` beside `objects/`
/// and `refs/` folders, or beside a `commondir` (a worktree's admin folder, sharing another's
/// objects).
fn is_git_dir(dir: &Path) -> bool {
    let meta = |name: &str| std::fs::symlink_metadata(dir.join(name)).ok();
    let head = meta("HEAD").is_some_and(|m| !m.is_dir());
    let folder = |name: &str| meta(name).is_some_and(|m| m.is_dir());
    head && ((folder("objects") && folder("refs")) || meta("commondir").is_some())
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
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;

    /// git as a test runs it: no configuration of this machine's.
    fn git(dir: &Path, args: &[&str]) -> std::process::Output {
        Command::new("git")
            .current_dir(dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap()
    }

    /// A seed whose git directories go by other names than `.git`: a bare `inner.git/` and a
    /// submodule's `work/.git/modules/sub`, each with a `reference-transaction` hook and a
    /// `core.fsmonitor`, tripwires that write into `ran/`.
    fn seed_with_hidden_repositories(dir: &Path, ran: &Path) -> PathBuf {
        let src = dir.join("src");
        std::fs::create_dir_all(&src).unwrap();
        assert!(git(&src, &["init", "-q", "-b", "main"]).status.success());
        let commit = git(
            &src,
            &[
                "-c",
                "user.name=s",
                "-c",
                "user.email=s@x.invalid",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "s",
            ],
        );
        assert!(commit.status.success(), "{commit:?}");
        let seed = dir.join("seed");
        std::fs::create_dir_all(seed.join("work")).unwrap();
        assert!(git(&seed.join("work"), &["init", "-q"]).status.success());
        let trap = |name: &str| {
            let path = dir.join(format!("trap-{name}"));
            std::fs::write(
                &path,
                format!("#!/bin/sh\necho {name} >> '{}/{name}'\n", ran.display()),
            )
            .unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        };
        for (name, at) in [("bare", "inner.git"), ("module", "work/.git/modules/sub")] {
            let git_dir = seed.join(at);
            let cloned = git(&seed, &["clone", "-q", "--bare", src.to_str().unwrap(), at]);
            assert!(cloned.status.success(), "{cloned:?}");
            let hook = git_dir.join("hooks/reference-transaction");
            std::fs::copy(trap(&format!("{name}-hook")), &hook).unwrap();
            let fsmonitor = trap(&format!("{name}-fsmonitor"));
            for (key, value) in [
                ("core.fsmonitor", fsmonitor.to_str().unwrap()),
                ("core.bare", "false"),
            ] {
                let set = git(&git_dir, &["config", "--file", "config", key, value]);
                assert!(set.status.success(), "{set:?}");
            }
        }
        seed
    }

    /// What a git server does in a repository: reads the work tree's status (fsmonitor) and
    /// moves a ref (the reference-transaction hook), in each hidden repository.
    fn use_like_a_server(seed: &Path, work_tree: &Path) {
        for at in ["inner.git", "work/.git/modules/sub"] {
            let git_dir = format!("--git-dir={}", seed.join(at).display());
            let tree = format!("--work-tree={}", work_tree.display());
            git(seed, &[&git_dir, &tree, "reset", "-q"]);
            git(seed, &[&git_dir, &tree, "status"]);
            git(
                seed,
                &[&git_dir, "update-ref", "refs/heads/touched", "HEAD"],
            );
        }
    }

    fn tripped(ran: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(ran)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Hardening VI: a bare repository and a submodule's git folder are found by what they
    /// are and made inert like a `.git`: git used in them runs nothing the seed names (and
    /// the same seed, not made inert, does: the tripwires work).
    #[test]
    fn every_git_directory_in_a_seed_is_made_inert_whatever_its_name() {
        for defused in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let ran = dir.path().join("ran");
            std::fs::create_dir_all(&ran).unwrap();
            let seed = seed_with_hidden_repositories(dir.path(), &ran);
            let work_tree = dir.path().join("tree");
            std::fs::create_dir_all(&work_tree).unwrap();
            if !defused {
                use_like_a_server(&seed, &work_tree);
                assert_eq!(
                    tripped(&ran),
                    [
                        "bare-fsmonitor",
                        "bare-hook",
                        "module-fsmonitor",
                        "module-hook"
                    ],
                    "the tripwires fire in a seed left as it is"
                );
                continue;
            }
            let removed = defuse(&seed).unwrap();
            for what in [
                "inner.git/hooks/reference-transaction (a hook)",
                "inner.git/config: core.fsmonitor",
                "work/.git/modules/sub/hooks/reference-transaction (a hook)",
                "work/.git/modules/sub/config: core.fsmonitor",
            ] {
                assert!(
                    removed.iter().any(|r| r == what),
                    "{what} not said: {removed:?}"
                );
            }
            use_like_a_server(&seed, &work_tree);
            assert_eq!(tripped(&ran), Vec::<String>::new());
        }
    }

    #[test]
    fn a_git_directory_is_known_by_what_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let bare = dir.path().join("anything");
        for folder in ["objects", "refs"] {
            std::fs::create_dir_all(bare.join(folder)).unwrap();
        }
        assert!(!is_git_dir(&bare), "no HEAD");
        std::fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(is_git_dir(&bare));
        let admin = dir.path().join("worktrees/w");
        std::fs::create_dir_all(&admin).unwrap();
        std::fs::write(admin.join("HEAD"), "0000\n").unwrap();
        assert!(!is_git_dir(&admin), "a HEAD alone is no repository");
        std::fs::write(admin.join("commondir"), "../..\n").unwrap();
        assert!(is_git_dir(&admin));
        assert_eq!(repositories(dir.path()).unwrap(), [bare, admin]);
    }

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
