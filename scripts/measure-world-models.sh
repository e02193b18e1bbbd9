#!/usr/bin/env bash
# Measures the world models on recorded calls, by cosmos's own commands only: the table
# "World models measured" in docs/world-models.md is this script's output.
#
#   scripts/measure-world-models.sh OUT            # everything (the LLM rows take about an hour)
#   scripts/measure-world-models.sh OUT --no-llm   # memory and traces only (about a minute)
#
# 1. A held-out set: 30 client sessions of 12 random unit conversions each (values never
#    repeated; tests/support/unit_sessions.py, seed 75), made through `cosmos proxy --http` to
#    the PyPI Unit Converter server by the MCP Python SDK's client, one run per session.
# 2. `cosmos wm-eval` over it (each call predicted from the other 29 sessions: leave one run
#    out) for memory and traces; then, on the first 2 sessions (24 calls, for the time a 1.5B
#    model on 2 cores takes), the same two and the local model (scripts/local-model.sh) as
#    `llm` shown 1 and 5 recorded calls, and an ensemble of traces and the 5-example llm
#    picking field by field.
# 3. The same for memory and traces over the ReAct runs of sample_runs/.
# 4. Per world model and set, `wm-eval --target-error 0.1 --delta 0.1 --routing-out` (taking
#    the simulations just made) for the share of predictions the guarantee trusts.
#
# Prints one markdown table; everything it made stays in OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/measure-world-models.sh OUT [--no-llm]}
llm=yes
[ "${2:-}" = "--no-llm" ] && llm=
mkdir -p "$out"
out=$(cd "$out" && pwd)

./scripts/install-test-servers.sh >/dev/null
cargo build --release --quiet
cosmos=$PWD/target/release/cosmos
python=$PWD/.cache/servers/venv/bin/python

# 1. The held-out set, recorded through the proxy.
sessions=$out/sessions
if [ ! -d "$sessions" ]; then
  printf '{"mcpServers": {"Unit Converter": {"command": "%s", "args": ["-m", "unit_converter_mcp.server"], "env": {"FASTMCP_CHECK_FOR_UPDATES": "off"}}}}\n' \
    "$python" >"$out/mcp.json"
  "$cosmos" proxy --mcp-config "$out/mcp.json" --out "$sessions" --http 127.0.0.1:0 2>"$out/proxy.err" &
  proxy=$!
  for _ in $(seq 100); do grep -q 'http://' "$out/proxy.err" 2>/dev/null && break; sleep 0.1; done
  url=$(grep -o 'http://[^ ;]*' "$out/proxy.err" | head -1)
  calls=$("$python" tests/support/unit_sessions.py 30 12 75)
  "$python" tests/support/mcp_client.py "{\"transport\": \"http\", \"url\": \"$url\", \"sessions\": $calls}" >/dev/null
  kill -INT "$proxy"
  wait "$proxy" || true
fi
mapfile -t subset < <(ls "$sessions"/*.jsonl | sort | head -2)

# The named world models: the local model shown 1 and 5 recorded calls of all 30 sessions
# (leave one run out applies), and the ensemble.
cat >"$out/cosmos.toml" <<EOF
[default]
base_url = "http://127.0.0.1:${COSMOS_MODEL_PORT:-8088}/v1"
model = "qwen2.5-coder-1.5b-instruct-q4_k_m"
temperature = 0.0
max_tokens = 320
timeout_s = 600

[world_models.recorded]
kind = "traces"
from = ["$sessions"]

[world_models."llm-1"]
kind = "llm"
examples_from = ["$sessions"]
examples = 1

[world_models."llm-5"]
kind = "llm"
examples_from = ["$sessions"]
examples = 5

[world_models.ensemble]
kind = "ensemble"
members = ["recorded", "llm-5"]
pick = "per_field"
EOF

# One row: SET NAME CALLS, from wm-eval's JSON and its routing line.
row() {
  local set=$1 name=$2 dir=$3; shift 3
  local json routing
  json=$("$cosmos" wm-eval "$@" --world-model "$name" --config "$out/cosmos.toml" --out "$dir" --format json 2>/dev/null)
  routing=$("$cosmos" wm-eval "$@" --world-model "$name" --config "$out/cosmos.toml" --out "$dir" \
    --target-error 0.1 --delta 0.1 --routing-out "$dir/$name.routing.toml" 2>&1 >/dev/null |
    grep -o 'they trust [0-9]* of the [0-9]* predictions with a confidence ([0-9.]*%)' || true)
  WM_JSON=$json python3 - "$set" "$name" "$routing" <<'PY'
import json, os, re, sys
set_, name, routing = sys.argv[1:4]
m = json.loads(os.environ["WM_JSON"])["world_models"][0]
cal = m.get("calibration") or {}
auroc = cal.get("auroc")
trust = re.search(r"trust (\d+) of the (\d+) predictions .*\(([0-9.]+%)\)", routing)
print("| {} | {} | {} | {:.3f} | {} | {} |".format(
    set_, name, m["n"], m["fidelity"]["mean"],
    "—" if auroc is None else "{:.2f}".format(auroc),
    "{} ({} of {})".format(trust.group(3), trust.group(1), trust.group(2)) if trust else "—"))
PY
}

echo "| set | world model | calls | mean fidelity | AUROC | trusted at ε = δ = 0.1 |"
echo "|---|---|---|---|---|---|"
for name in memory traces; do
  row "held-out (30 sessions)" "$name" "$out/eval-all" "$sessions"
done
models="memory traces"
[ -n "$llm" ] && { ./scripts/local-model.sh start >/dev/null; models="$models llm-1 llm-5 ensemble"; }
for name in $models; do
  row "held-out, first 2 sessions" "$name" "$out/eval-subset" "${subset[@]}" --memory-from "$sessions"
done
mkdir -p "$out/react"
cp sample_runs/*_react_*.jsonl "$out/react/"
for name in memory traces; do
  row "sample_runs ReAct runs" "$name" "$out/eval-react" "$out/react"
done
