#!/usr/bin/env bash
# Makes notes-repo.tar, the seed of the stateful tasks' git server: a repository with one
# commit (notes.md) and one untracked file (todo.md). Names, dates and the archive's metadata
# are fixed, so the same git makes the same bytes. A tar file, since a repository's .git folder
# cannot itself be committed; cosmos unpacks a .tar seed into each run's sandbox.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
repo=$tmp/notes-repo
git init -q -b main "$repo"
git -C "$repo" config user.name cosmos
git -C "$repo" config user.email cosmos@example.invalid
printf '# Notes\n\nWhat we decided, by date.\n' > "$repo/notes.md"
printf -- '- write the release notes\n' > "$repo/todo.md"
export GIT_AUTHOR_DATE=2026-12-01T00:00:00Z GIT_COMMITTER_DATE=2026-12-01T00:00:00Z
git -C "$repo" add notes.md
git -C "$repo" commit -q -m "Start the notes"
tar --sort=name --mtime=2026-12-01 --owner=0 --group=0 --numeric-owner \
  -cf notes-repo.tar -C "$tmp" notes-repo
