//! The `git` program as cosmos runs it on a sandbox's repository: it reads, and runs nothing the
//! repository or the machine's git configuration names. A seed is someone else's data
//! (`mcp::seed_git` strips it of hooks and program-naming keys first); this is the second lock.

use std::path::Path;
use std::process::{Command, Stdio};

/// A `git` command on the repository at `repo` that ignores system and global configuration,
/// runs no fsmonitor, hook, pager or external diff, takes no lock and asks no questions.
pub fn command(repo: &Path) -> Command {
    let mut git = Command::new("git");
    git.arg("-C")
        .arg(repo)
        .args([
            "--no-pager",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.untrackedCache=false",
            "-c",
            "diff.external=",
            "-c",
            "log.showSignature=false",
        ])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_EXTERNAL_DIFF")
        .env("GIT_TERMINAL_PROMPT", "0")
        // Reading must not write: no index refresh, no lock.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null());
    git
}
