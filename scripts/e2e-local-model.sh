#!/usr/bin/env bash
# End to end with the real local model (not part of CI: it takes minutes): one short
# ReAct-Plan-Exec task against mcp-server-time, then validate the trajectory.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-test-servers.sh >/dev/null
base=$(./scripts/local-model.sh start | sed -n 's/^export OPENAI_BASE_URL=\([^ ]*\).*/\1/p')
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/mcp.json" <<JSON
{"mcpServers": {"time": {"command": "$PWD/.cache/servers/venv/bin/python", "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}}}
JSON
cat > "$work/task.json" <<'JSON'
{"id": "e2e_tokyo", "request": "What time is it in Tokyo when it is 09:00 in London? Use the tools.",
 "reference_calls": [{"tool": "time:convert_time", "arguments": {"source_timezone": "Europe/London", "time": "09:00", "target_timezone": "Asia/Tokyo"}}]}
JSON
OPENAI_BASE_URL="$base" OPENAI_API_KEY=local-no-key COSMOS_MODEL=qwen2.5-coder-1.5b-instruct-q4_k_m \
  ./target/release/cosmos run --mcp-config "$work/mcp.json" --task "$work/task.json" --agent plan-exec \
  --world-model llm --config sample_runs/cosmos.toml --max-steps 3 --out "$work/runs" --no-tui
./target/release/cosmos validate "$work/runs"
echo "e2e with the local model: ok"
