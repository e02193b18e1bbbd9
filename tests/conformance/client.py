#!/usr/bin/env python3
"""cosmos as the client under the MCP conformance suite (`conformance client --command`).

    COSMOS_BIN=target/debug/cosmos client.py URL

The suite runs this with its test server's URL last, the scenario in $MCP_CONFORMANCE_SCENARIO
and what the scenario gives the client (a pre-registered client's id and secret…) in
$MCP_CONFORMANCE_CONTEXT. It drives cosmos as a user would:

- the server goes into an mcp.json of its own (with the context's OAuth client, if any);
- an `auth/…` scenario: `cosmos login`, with this script as $BROWSER (`--browser URL` fetches
  the authorization page and follows its redirect back to cosmos, as a person's browser would);
- a scenario that wants a tool called: `cosmos run` (ReAct, `--elicitation accept-defaults`)
  whose planner is tests/support/scripted_llm.py, scripted to call what the scenario wants;
  any other: `cosmos servers` (connect, list the tools).

Which command drove which scenario is printed first (the suite keeps stdout per scenario).
"""

import json
import os
import subprocess
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTED_LLM = os.path.join(HERE, "..", "support", "scripted_llm.py")

# The calls a scenario wants made (its checks look for them), by scenario.
CALLS = {
    "tools_call": [{"name": "add_numbers", "arguments": {"a": 2, "b": 3}}],
    "elicitation-sep1034-client-defaults": [
        {"name": "test_client_elicitation_defaults", "arguments": {}}
    ],
    "http-invalid-tool-headers": [{"name": "valid_tool", "arguments": {"region": "us-west1"}}],
    # Its server closes the call's event stream after a first event: the client resumes it.
    "sse-retry": [{"name": "test_reconnection", "arguments": {}}],
    "sep-2322-client-request-state": [
        {"name": "test_mrtr_echo_state", "arguments": {}},
        {"name": "test_mrtr_unrelated", "arguments": {}},
        {"name": "test_mrtr_no_state", "arguments": {}},
        {"name": "test_mrtr_no_result_type", "arguments": {}},
    ],
}
AUTH_CALL = [{"name": "test-tool", "arguments": {}}]


def browse(url):
    """A browser: opens the page and follows its redirects (back to cosmos's loopback)."""
    urllib.request.urlopen(url, timeout=30).read()


def cosmos(args, env, stdin=None):
    said = subprocess.run([os.environ["COSMOS_BIN"], *args], env=env, stdin=stdin,
                          capture_output=True, text=True, timeout=120)
    sys.stdout.write(said.stdout)
    sys.stderr.write(said.stderr)
    return said.returncode


def schema_echo(mcp, env):
    """json-schema-2020-12-preservation: the focal tool's schema as `cosmos servers -v` shows it."""
    listed = subprocess.run([os.environ["COSMOS_BIN"], "servers", "-v", "--mcp-config", mcp],
                            env=env, capture_output=True, text=True, timeout=60).stdout
    lines = listed.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("- conformance:json_schema_2020_12_tool"):
            body = []
            for l in lines[i + 1:]:
                if not l.startswith("      "):
                    break
                body.append(l[6:])
            return [{"name": "json_schema_echo", "arguments": {"schema": json.loads("\n".join(body))}}]
    return []


def wanted_scopes(work):
    """The scopes the last run's refused call said to log in again with, if it said so."""
    runs = sorted(os.listdir(os.path.join(work, "runs"))) if os.path.isdir(os.path.join(work, "runs")) else []
    for name in reversed(runs):
        with open(os.path.join(work, "runs", name)) as f:
            for line in f:
                event = json.loads(line)
                said = event.get("error") or ""
                if event.get("kind") == "tool_called" and "--mcp-config FILE --scope " in said:
                    tail = said.split("--mcp-config FILE --scope ", 1)[1].split("`")[0]
                    return [s for s in tail.split(" --scope ") if s]
        return []
    return []


def needs_login_again(work):
    """True when the last run could not reach the server for want of a valid login."""
    runs = sorted(os.listdir(os.path.join(work, "runs")))
    with open(os.path.join(work, "runs", runs[-1])) as f:
        return any(e.get("kind") == "error" and "Auth required" in (e.get("message") or "")
                   for e in map(json.loads, f))


def run_with_calls(calls, mcp, work, env):
    # JSON mode: the planner's reply is a decision, not a native tool call.
    decisions = [{"thought": "call", "action": "call", "tool": "conformance:" + c["name"],
                  "arguments": c["arguments"]} for c in calls]
    rules = {"rules": [{"when": "", "times": 1, "content": d} for d in decisions]
             + [{"when": "", "content": {"thought": "done", "action": "finish", "answer": "done"}}]}
    script = os.path.join(work, "llm.json")
    with open(script, "w") as f:
        json.dump(rules, f)
    llm = subprocess.Popen([sys.executable, SCRIPTED_LLM, script, os.path.join(work, "llm.log")],
                           stdout=subprocess.PIPE, text=True)
    try:
        port = llm.stdout.readline().split()[1]
        tasks = os.path.join(work, "tasks.json")
        with open(tasks, "w") as f:
            json.dump({"id": "conformance", "request": "Call the tools the server asks for."}, f)
        run_env = dict(env, OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1",
                       OPENAI_API_KEY="sk-scripted-planner", COSMOS_MODEL="scripted")
        return cosmos(["run", "--mcp-config", mcp, "--task", tasks, "--agent", "react",
                       "--max-steps", str(len(calls) + 1), "--no-tui", "--elicitation",
                       "accept-defaults", "--out", os.path.join(work, "runs")], run_env)
    finally:
        llm.kill()


def main():
    if sys.argv[1] == "--browser":
        browse(sys.argv[2])
        return 0
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    work = tempfile.mkdtemp(prefix="cosmos-conformance-")
    server = {"url": url}
    oauth = {k: context[k] for k in ("client_id", "client_secret") if context.get(k)}
    if scenario.startswith("auth/") and not oauth:
        # The client ID metadata document a user of cosmos publishes (the suite's own address
        # for it), used where the authorization server takes such documents.
        oauth["client_metadata_url"] = "https://conformance-test.local/client-metadata.json"
    if scenario == "auth/client-credentials-basic":
        # A machine's own login: no browser, the token fetched when a command connects.
        oauth["grant"] = "client_credentials"
    if scenario == "auth/client-credentials-jwt":
        # private_key_jwt: the client signs an assertion with its key instead of a secret.
        oauth = {"grant": "client_credentials", "client_id": context["client_id"],
                 "private_key": context["private_key_pem"],
                 "signing_algorithm": context.get("signing_algorithm") or "ES256"}
    if scenario == "auth/wif-jwt-bearer":
        # A workload's identity token, exchanged for an access token (jwt-bearer grant).
        oauth = {"grant": "jwt_bearer", "client_id": context["client_id"],
                 "assertion": context["valid_jwt"]}
    if scenario == "auth/enterprise-managed-authorization":
        # The user's ID token from the enterprise's identity provider, exchanged there for an
        # identity assertion, and that at the server's authorization server for a token.
        oauth = {"grant": "enterprise_managed", "client_id": context["client_id"],
                 "client_secret": context["client_secret"], "id_token": context["idp_id_token"],
                 "idp_issuer": context["idp_issuer"],
                 "idp_token_endpoint": context["idp_token_endpoint"],
                 "idp_client_id": context["idp_client_id"]}
    if oauth:
        server["oauth"] = oauth
    mcp = os.path.join(work, "mcp.json")
    with open(mcp, "w") as f:
        json.dump({"mcpServers": {"conformance": server}}, f)
    env = dict(os.environ, COSMOS_CACHE=os.path.join(work, "cache"),
               BROWSER=f"{sys.executable} {os.path.abspath(__file__)} --browser")
    if oauth.get("grant") in ("client_credentials", "jwt_bearer", "enterprise_managed"):
        print(f"[{scenario}] cosmos servers ({oauth['grant']} grant)", flush=True)
        return cosmos(["servers", "--mcp-config", mcp], env)
    if scenario.startswith("auth/"):
        print(f"[{scenario}] cosmos login, then cosmos run calling test-tool", flush=True)
        if cosmos(["login", "conformance", "--mcp-config", mcp, "--timeout-s", "20"], env):
            return 1
        ran = run_with_calls(AUTH_CALL, mcp, work, env)
        if ran and needs_login_again(work):
            # The login no longer holds (the server moved to another authorization server,
            # say): a person logs in again, then runs again.
            print(f"[{scenario}] cosmos login again, then the run again", flush=True)
            if cosmos(["login", "conformance", "--mcp-config", mcp, "--timeout-s", "20"], env):
                return 1
            ran = run_with_calls(AUTH_CALL, mcp, work, env)
        # A call refused for want of a scope: an unattended run says which login steps it up
        # (`cosmos login … --scope S`); a person runs that, then the run again.
        more = wanted_scopes(work)
        if more:
            print(f"[{scenario}] cosmos login --scope {' '.join(more)}, then the run again", flush=True)
            scopes = [w for s in more for w in ("--scope", s)]
            if cosmos(["login", "conformance", "--mcp-config", mcp, "--timeout-s", "20", *scopes], env):
                return 1
            ran = run_with_calls(AUTH_CALL, mcp, work, env)
        return ran
    # A scenario may name the calls it wants in its context.
    calls = context.get("toolCalls") or CALLS.get(scenario)
    if scenario == "json-schema-2020-12-preservation":
        calls = schema_echo(mcp, env)
    if calls:
        print(f"[{scenario}] cosmos run calling {[c['name'] for c in calls]}", flush=True)
        return run_with_calls(calls, mcp, work, env)
    print(f"[{scenario}] cosmos servers", flush=True)
    return cosmos(["servers", "--mcp-config", mcp], env)


if __name__ == "__main__":
    sys.exit(main())
