#!/usr/bin/env bash
# The test command of the README: installs what the tests need, then runs every test.
# Idempotent; safe to run again. CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

# tmux drives the explorer's end-to-end tests in a real terminal.
if ! command -v tmux >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    (apt-get install -y tmux >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y tmux >/dev/null; }) \
      || sudo apt-get install -y tmux
  else
    echo "tests need tmux; install it with your package manager" >&2
    exit 1
  fi
fi

# Rust crates (fetched once; offline afterwards).
cargo fetch --locked

# A CI build starts from nothing and is thrown away, so incremental state (over a gigabyte for
# this crate's test binaries) would only take disk the build may need.
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=0
fi

# The style CI holds: formatted (first, as it takes a second).
cargo fmt --all -- --check

# The test binaries compile while the servers and Slurm install (mostly network and disk): the
# two overlap, which takes minutes off a run from nothing. The build's output is shown if it fails.
build_log=$(mktemp)
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --locked --workspace --no-run >"$build_log" 2>&1 &
else
  cargo test --locked --workspace --no-run >"$build_log" 2>&1 &
fi
building=$!
trap 'kill "$building" 2>/dev/null || true; rm -f "$build_log"' EXIT

# The real MCP servers the tests start (npm and PyPI), into .cache/servers.
./scripts/install-test-servers.sh

# Slurm and munge (Debian's packages) for the test that submits an emitted sweep array to a
# one-node cluster (tests/sweeps/slurm.rs). That test is ignored in a plain run and run on its own
# below; under CI=true it runs (and fails, saying why) even if Slurm could not be installed.
slurm=yes
./scripts/slurm-cluster.sh install \
  || { slurm=no; echo "warning: Slurm could not be installed; tests/sweeps/slurm.rs's cluster test is not run" >&2; }

if ! wait "$building"; then
  cat "$build_log" >&2
  exit 1
fi

# The style CI holds: no clippy warning in any target (formatting is checked before the build).
cargo clippy --locked --workspace --all-targets -- -D warnings
# Every intra-doc link resolves to an item the reader can see (no private or missing target).
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --workspace

# cargo nextest when installed (faster, isolates tests), cargo test otherwise.
# (The crates have no doc tests; nextest's summary is the last line CI reads.)
# The Slurm cluster test (ignored above, so it never passes without running) comes first, on
# its own, so the last line is the whole suite's summary.
if [ "$slurm" = yes ] || [ -n "${CI:-}" ]; then
  if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --locked --no-fail-fast --test sweeps --run-ignored only -E 'test(/^slurm::/)'
  else
    cargo test --locked --no-fail-fast --test sweeps -- --ignored slurm::
  fi
fi
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --locked --workspace --no-fail-fast
else
  cargo test --locked --workspace --no-fail-fast
fi
