#!/usr/bin/env bash
# Makes sample_runs/ with a real local model against real MCP servers, by `cosmos run` only.
# Slow on purpose (a 1.5B model on 2 CPU cores): about an hour for the whole set.
#
#   scripts/make-sample-runs.sh            # all runs
#   scripts/make-sample-runs.sh NAME...    # only these (see the list at the bottom)
#
# Needs: scripts/install-test-servers.sh (the MCP servers) and scripts/local-model.sh (the model).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-test-servers.sh >/dev/null
cargo build --release --quiet
# The local model is started by the first recipe that needs one (the proxy session does not).
model_started=
need_model() {
  if [ -z "$model_started" ]; then ./scripts/local-model.sh start >/dev/null; model_started=1; fi
}
cosmos=./target/release/cosmos
out=sample_runs
# MCP-Bench's tasks (tests/fixtures/mcp-bench, Apache-2.0), and the README's examples/mcp.json:
# the two MCP-Bench servers under their MCP-Bench names, and the npm memory server, which joins
# every run as a distraction server (MCP-Bench adds distraction servers the same way).
tasks=tests/fixtures/mcp-bench/single_server_time_unit.json
mcp=examples/mcp.json

run() {
  local name=$1; shift
  if [ -n "${only:-}" ] && [[ " $only " != *" $name "* ]]; then return; fi
  echo "== $name: cosmos run $*" >&2
  need_model
  # With stop_after=SECONDS the run gets Ctrl-C's SIGINT then, as a person stopping it would.
  # mcp_file, task_file, run_out and extra (the distraction server; empty for none) may be set
  # for one recipe, as config and stop_after may.
  OPENAI_API_KEY=local-no-key ${stop_after:+timeout --signal=INT --kill-after=60 "$stop_after"} \
    "$cosmos" run --mcp-config "${mcp_file:-$mcp}" --task "${task_file:-$tasks}" --config "${config:-sample_runs/cosmos.toml}" \
    ${extra:+--extra-server "$extra"} --out "${run_out:-$out}" --no-tui --max-time-s 2400 "$@" || echo "== $name ended non-zero (kept: a failed run is a sample too)" >&2
}
extra=memory

only="$*"
# ReAct first: their real calls feed the memory world model below.
run react-time-000      --task-id time_mcp_000 --agent react --max-steps 5
run react-time-001      --task-id time_mcp_001 --agent react --max-steps 5
run react-units-001     --task-id unit_converter_001 --agent react --max-steps 5
run planexec-llm-time   --task-id time_mcp_000 --agent plan-exec --world-model llm --max-steps 4
run planexec-llm-units  --task-id unit_converter_001 --agent plan-exec --world-model llm --max-steps 4
run planexec-mem-time   --task-id time_mcp_000 --agent plan-exec --world-model memory --memory-from "$out" --max-steps 4
run planexec-mem-units  --task-id unit_converter_001 --agent plan-exec --world-model memory --memory-from "$out" --max-steps 4
run spiral-mem-time     --task-id time_mcp_001 --agent spiral --world-model memory --memory-from "$out" \
                        --iterations 12 --candidates 3 --max-depth 4 --alpha 1.0
run spiral-llm-time     --task-id time_mcp_000 --agent spiral --world-model llm --memory-from "$out" \
                        --iterations 3 --candidates 3 --max-depth 3 --cache-world-model
run spiral-mem-units    --task-id unit_converter_001 --agent spiral --world-model memory --memory-from "$out" \
                        --iterations 14 --candidates 3 --max-depth 4 --alpha 1.0
run spiral-mem-time-deep --task-id time_mcp_001 --agent spiral --world-model memory --memory-from "$out" \
                        --iterations 16 --candidates 3 --max-depth 5 --alpha 1.0
config=sample_runs/cosmos-wide.toml \
run spiral-wide-time    --task-id time_mcp_001 --agent spiral --world-model memory --memory-from "$out" \
                        --iterations 8 --candidates 5 --max-depth 4 --alpha 1.0
# With the critic (alpha 0.5) each node's value mixes the critic's score in, so values differ
# where the base rewards alone would tie.
run spiral-critic-time  --task-id time_mcp_001 --agent spiral --world-model memory --memory-from "$out" \
                        --iterations 6 --candidates 3 --max-depth 3 --alpha 0.5
# The big critic search (four candidates, twenty iterations: more than an hour here), stopped by
# Ctrl-C after 17 minutes: the run ends `interrupted`, its search_finished says so, nothing ran.
stop_after=1020 config=sample_runs/cosmos-wide.toml \
run spiral-critic-stopped --task-id time_mcp_001 --agent spiral --world-model memory --memory-from "$out" \
                        --iterations 20 --candidates 4 --max-depth 4 --alpha 0.5
# SPIRAL-Exec routed by confidence: the local model as world model, its confidence taken from
# its reply's token log-probabilities; while searching, a read-only call predicted with less
# than 0.9 is made for real (a grounded node, ⊕), and a path is imagined no further than its
# confidences allow.
run spiral-llm-routed-time --task-id time_mcp_000 --agent spiral --world-model qwen-1.5b-logprobs \
                        --go-real-below 0.9 --iterations 3 --candidates 3 --max-depth 3 --cache-world-model
# The sample sweep (sample_runs/sweep.toml): two tasks × three configurations, by cosmos sweep.
if [ -z "${only:-}" ] || [[ " $only " == *" sweep "* ]]; then
  echo "== sweep: cosmos sweep sample_runs/sweep.toml --out sample_runs/sweep --no-tui" >&2
  need_model
  OPENAI_API_KEY=local-no-key "$cosmos" sweep sample_runs/sweep.toml --out sample_runs/sweep --no-tui
  "$cosmos" report sample_runs/sweep --baseline react --format markdown --power > sample_runs/sweep-report.md
fi
# Worlds with state (examples/stateful): the memory, filesystem, SQLite and git servers, each on a
# fresh copy of its seed, into sample_runs/stateful; then a wm-eval of their real calls, which
# splits fidelity by what each call did to its server's state.
stateful_runs() {
  mcp_file=examples/stateful/mcp.json task_file=examples/stateful/tasks.json run_out=$out/stateful extra= \
    run "$@"
}
stateful_runs stateful-react-db-restock    --task-id db_restock --agent react --max-steps 4
stateful_runs stateful-react-mem-person    --task-id mem_add_person --agent react --max-steps 5
stateful_runs stateful-react-fs-edit       --task-id fs_edit --agent react --max-steps 4
stateful_runs stateful-react-git-commit    --task-id git_commit_todo --agent react --max-steps 4
stateful_runs stateful-planexec-db-add     --task-id db_add_item --agent plan-exec --world-model llm --max-steps 3
stateful_runs stateful-planexec-mem-unlink --task-id mem_unlink --agent plan-exec --world-model llm --max-steps 3
if [ -z "${only:-}" ] || [[ " $only " == *" stateful-wm-eval "* ]]; then
  echo "== stateful-wm-eval: cosmos wm-eval $out/stateful --world-model memory --world-model qwen-1.5b" >&2
  need_model
  OPENAI_API_KEY=local-no-key "$cosmos" wm-eval "$out/stateful" --world-model memory --world-model qwen-1.5b \
    --config sample_runs/cosmos.toml --out "$out/stateful" --format markdown > "$out/stateful/wm-eval.md"
fi
# A hybrid proxy session: the MCP Python SDK's own client (tests/support/mcp_client.py) makes
# five calls through `cosmos proxy --mode hybrid`, the memory world model (recalling the runs
# above, no language model) answering those it is sure of and the real Time MCP server the rest.
# The session's file records who answered each call and why it went real (`routed`).
if [ -z "${only:-}" ] || [[ " $only " == *" hybrid-proxy-time "* ]]; then
  echo "== hybrid-proxy-time: cosmos proxy --mode hybrid --world-model memory, driven by the MCP Python SDK client" >&2
  spec=$(mktemp)
  python3 - "$spec" "$cosmos" "$out" <<'PY'
import json, sys
spec, cosmos, out = sys.argv[1:]
calls = [
    {"name": "get_current_time", "arguments": {"timezone": "UTC"}},
    {"name": "convert_time", "arguments": {"source_timezone": "UTC", "time": "09:00", "target_timezone": "America/New_York"}},
    {"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
    {"name": "convert_time", "arguments": {"source_timezone": "UTC", "time": "15:00", "target_timezone": "Asia/Tokyo"}},
    {"name": "convert_time", "arguments": {"source_timezone": "Europe/Paris", "time": "12:00", "target_timezone": "America/Chicago"}},
]
json.dump({
    "transport": "stdio",
    "command": cosmos,
    "args": ["proxy", "--mcp-config", "examples/mcp.json", "--server", "Time MCP", "--mode", "hybrid",
             "--world-model", "memory", "--memory-from", out, "--go-real-below", "0.8",
             "--out", out + "/proxy"],
    "client": {"name": "mcp-python-sdk-sample-client", "version": "1.0"},
    "calls": calls,
}, open(spec, "w"))
PY
  .cache/servers/venv/bin/python tests/support/mcp_client.py "$(cat "$spec")" >/dev/null
  rm -f "$spec"
fi
"$cosmos" validate "$out"
"$cosmos" report "$out"
