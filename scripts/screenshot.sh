#!/usr/bin/env bash
# Makes docs/explorer.svg, the README's picture: the real explorer (the release binary) on a
# sample run in a tmux terminal of 120x34, captured with its colours and drawn as SVG by
# scripts/ansi-to-svg.py. Needs tmux and python3.
#
#   scripts/screenshot.sh [RUN.jsonl] [OUT.svg]
#
# By default the SPIRAL run routed by confidence (its grounded nodes ⊕, its trusted
# predictions beside the real results), at its end, tree opened.
set -euo pipefail
cd "$(dirname "$0")/.."
cols=120 rows=34
run=${1:-$(ls sample_runs/*_spiral_qwen-1-5b-logprobs.jsonl | tail -n 1)}
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
# The whole run, every node open, and the tree's row $select (0: the root) selected: by default
# the plan's last call (#5, the sixth row), its trusted prediction beside the real result.
select=${SELECT_ROW:-5}
tmux send-keys -t "$session" End
tmux send-keys -t "$session" E
tmux send-keys -t "$session" T
for _ in $(seq 1 30); do tmux send-keys -t "$session" k; done  # up to the root
for _ in $(seq 1 "$select"); do tmux send-keys -t "$session" j; done
wait_for "real"
sleep 0.5  # the last key's screen
tmux capture-pane -t "$session" -e -p > "$out.ansi"
python3 scripts/ansi-to-svg.py "$cols" "$rows" < "$out.ansi" > "$out"
[ -n "${KEEP_ANSI:-}" ] || rm -f "$out.ansi"
echo "wrote $out from $run" >&2
