#!/usr/bin/env bash
# How well the agents plan with a real small model: the offline local model (scripts/local-model.sh)
# as every role, on MCP-Bench's four offline tasks, each agent once per task. Prints, per agent:
# rejected decisions per run, planning JSON compliance, input schema compliance, nodes expanded
# per search, real tool calls per run, and how the runs ended.
#
#   scripts/measure-search.sh [OUT]              # runs with ./target/debug/cosmos into OUT
#   COSMOS=path/to/cosmos scripts/measure-search.sh OUT   # another build (e.g. an older one)
#   scripts/measure-search.sh --table OUT        # only print the table of runs already in OUT
#
# Slow: a 1.5B model on 2 CPU cores, about 20–40 minutes for the twelve runs.
# Needs: scripts/install-test-servers.sh (the MCP servers) and scripts/local-model.sh (the model).
set -euo pipefail
cd "$(dirname "$0")/.."

table_only=false
if [ "${1:-}" = "--table" ]; then table_only=true; shift; fi
out="${1:-target/measure-search}"
cosmos="${COSMOS:-./target/debug/cosmos}"
tasks=tests/fixtures/mcp-bench/single_server_time_unit.json
mcp=examples/mcp.json

if ! $table_only; then
  ./scripts/install-test-servers.sh >/dev/null
  ./scripts/local-model.sh start >/dev/null
  [ -x "$cosmos" ] || cargo build --quiet --bin cosmos
  mkdir -p "$out"
  for task in time_mcp_000 time_mcp_001 unit_converter_000 unit_converter_001; do
    for agent in react plan-exec spiral; do
      case $agent in
        react) settings=(--max-steps 5) ;;
        plan-exec) settings=(--world-model llm --max-steps 4) ;;
        spiral) settings=(--world-model llm --iterations 4 --candidates 2 --max-depth 3 --alpha 1.0) ;;
      esac
      echo "== $task $agent" >&2
      OPENAI_API_KEY=local-no-key "$cosmos" run --mcp-config "$mcp" --task "$tasks" --task-id "$task" \
        --config sample_runs/cosmos.toml --agent "$agent" "${settings[@]}" --label "measure-$agent" \
        --out "$out" --no-tui --max-time-s 1800 >/dev/null || echo "== ended non-zero (kept)" >&2
    done
  done
fi

"$cosmos" report "$out" --per-run --format json > "$out/per-run.json"
python3 - "$out" <<'PY'
import collections, json, os, sys

out = sys.argv[1]
per_run = json.load(open(os.path.join(out, "per-run.json")))["per_run"]

def searched(path):
    """The agent, and node_added events with a parent per search root, from the file."""
    agent, added, roots = "?", 0, 0
    with open(path, errors="replace") as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("kind") == "run_started":
                agent = e.get("agent", {}).get("kind", "?")
            elif e.get("kind") == "node_added":
                if e.get("action") is None:
                    roots += 1
                else:
                    added += 1
    return agent, (added / roots if roots else None)

by_agent = collections.defaultdict(list)
for r in per_run:
    agent, per_search = searched(r["path"])
    by_agent[agent].append((r["metrics"], per_search))

def mean(xs):
    xs = [x for x in xs if x is not None]
    return f"{sum(xs) / len(xs):.2f}" if xs else "-"

print(f"{'agent':<10} {'runs':>4} {'rejected/run':>12} {'plan JSON':>9} {'schema':>7} "
      f"{'nodes/search':>12} {'calls/run':>9}  endings")
for agent, rs in sorted(by_agent.items()):
    m = lambda key: [metrics.get(key) for metrics, _ in rs]
    endings = collections.Counter(f"{x['status']}/{x.get('ending') or '-'}" for x, _ in rs)
    print(f"{agent:<10} {len(rs):>4} {mean(m('rejected_decisions')):>12} "
          f"{mean(m('planning_json_compliance')):>9} {mean(m('input_schema_compliance')):>7} "
          f"{mean([n for _, n in rs]):>12} {mean(m('tool_calls')):>9}  "
          + ", ".join(f"{k} x{v}" for k, v in sorted(endings.items())))
PY
