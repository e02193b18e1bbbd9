#!/usr/bin/env bash
# The test command of the README: installs what the tests need, then runs every test.
# Idempotent; safe to run again. CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

# Rust crates (fetched once; offline afterwards).
cargo fetch --locked

# cargo nextest when installed (faster, isolates tests), cargo test otherwise.
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --locked --no-fail-fast
  cargo test --locked --doc
else
  cargo test --locked --no-fail-fast
fi
