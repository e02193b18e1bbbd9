#!/usr/bin/env bash
# Makes docs/explorer.svg, the README's picture: the real explorer (the release binary) on a
# sample run in a tmux terminal of 120x34, captured with its colours and drawn as SVG by
# scripts/ansi-to-svg.py. Needs tmux and python3.
#
#   scripts/screenshot.sh [RUN.jsonl] [OUT.svg]
#
# By default the SPIRAL run with the critic (the widest tree), at its end, tree opened.
set -euo pipefail
cd "$(dirname "$0")/.."
cols=120 rows=34
run=${1:-$(grep -l '"alpha":0.5' sample_runs/*_time_mcp_001_spiral_memory.jsonl | tail -n 1)}
out=${2:-docs/explorer.svg}
[ -f "$run" ] || { echo "no run to show: $run" >&2; exit 1; }
cargo build --release --quiet
session="cosmos-shot-$$"
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT
tmux new-session -d -s "$session" -x "$cols" -y "$rows" \
  "env TERM=xterm-256color COLORTERM=truecolor ./target/release/cosmos replay '$run'; sleep 60"
# Wait for a screen that shows $1, a second at most... ten.
wait_for() {
  for _ in $(seq 1 100); do
    tmux capture-pane -t "$session" -p | grep -q -- "$1" && return 0
    sleep 0.1
  done
  echo "the explorer never showed: $1" >&2
  tmux capture-pane -t "$session" -p >&2
  exit 1
}
wait_for "Tree"
# The whole run, every node open, the plan's last call selected with its simulation beside it.
tmux send-keys -t "$session" End
tmux send-keys -t "$session" E
tmux send-keys -t "$session" T
wait_for "real"
tmux capture-pane -t "$session" -e -p > "$out.ansi"
python3 scripts/ansi-to-svg.py "$cols" "$rows" < "$out.ansi" > "$out"
rm -f "$out.ansi"
echo "wrote $out from $run" >&2
