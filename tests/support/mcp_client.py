"""A real MCP client for the proxy's tests: the MCP Python SDK's own (PyPI `mcp`, 1.x).

    python mcp_client.py SPEC_JSON

SPEC is {"transport": "stdio", "command": ..., "args": [...], "env": {...}} or
{"transport": "http", "url": ..., "token": ...}, with "client": {"name", "version"} and
"calls": [{"name", "arguments"}]. Prints one JSON object: the listed tools and each call's
result as the SDK decoded it (by alias: `isError`, `structuredContent`, `_meta`). A call that
raises is {"raised": message}. A call with "progress": true asks for progress reports, and its
result gets "progress_seen": [[progress, total, message], ...]. With "pause_file", it waits after the first call (or after
"pause_after" calls) until that file exists (so a test can act mid-session). With "concurrent": true every call is sent at once. With "elicit": {"action", "content"} the client takes
servers' requests for input and answers each so; the output's "elicited_seen" lists their
messages. With "reads": [URI, ...] it then reads each resource; the output's "reads" has each
one's content sizes or what was raised, and its "elapsed_s". With "log_level" it asks for log
messages from that level up at the start; with "collect_logs": true the output's "logs" has
every log message it was sent. With "sessions": [[call, ...], ...] it opens one session after
another, each making its own calls, and prints {"sessions": [each one's output]}.
"""

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.types import ElicitResult, Implementation


async def session_calls(read, write, spec):
    info = spec.get("client", {"name": "sdk-test-client", "version": "0.0.1"})
    elicited_seen = []
    answer = spec.get("elicit")

    async def on_elicit(context, params):
        elicited_seen.append(params.message)
        return ElicitResult(action=answer["action"], content=answer.get("content"))

    logs = []

    async def on_log(params):
        logs.append(params.data)

    async with ClientSession(
        read,
        write,
        client_info=Implementation(name=info["name"], version=info["version"]),
        elicitation_callback=on_elicit if answer else None,
        logging_callback=on_log,
    ) as session:
        await session.initialize()
        if spec.get("log_level"):
            await session.set_logging_level(spec["log_level"])
        tools = await session.list_tools()
        out = {"tools": [t.model_dump(by_alias=True, exclude_none=True) for t in tools.tools]}
        results = []
        if spec.get("concurrent"):
            # Every call sent at once, as a client with parallel tool calls does.
            async def one(call):
                try:
                    result = await session.call_tool(call["name"], call.get("arguments", {}))
                    return result.model_dump(by_alias=True, exclude_none=True)
                except Exception as e:  # the test asserts on what happened
                    return {"raised": str(e)}

            out["results"] = await asyncio.gather(*(one(c) for c in spec.get("calls", [])))
            return out
        for i, call in enumerate(spec.get("calls", [])):
            seen = []

            async def on_progress(progress, total, message):
                seen.append([progress, total, message])

            try:
                result = await session.call_tool(
                    call["name"],
                    call.get("arguments", {}),
                    progress_callback=on_progress if call.get("progress") else None,
                )
                dumped = result.model_dump(by_alias=True, exclude_none=True)
                if call.get("progress"):
                    dumped["progress_seen"] = seen
                results.append(dumped)
            except Exception as e:  # the test asserts on what happened, whatever it was
                results.append({"raised": str(e)})
            pause = spec.get("pause_file")
            if i + 1 == spec.get("pause_after", 1) and pause:
                print(json.dumps({"paused": True}), flush=True)
                while not os.path.exists(pause):
                    await asyncio.sleep(0.05)
        out["results"] = results
        # Resource reads, each timed: its contents' sizes, or what was raised.
        reads = []
        for uri in spec.get("reads", []):
            began = time.monotonic()
            try:
                read = await session.read_resource(uri)
                reads.append({"sizes": [len(getattr(c, "text", "") or "") for c in read.contents]})
            except Exception as e:  # the test asserts on what happened
                reads.append({"raised": str(e)})
            reads[-1]["elapsed_s"] = time.monotonic() - began
        if reads:
            out["reads"] = reads
        if answer:
            out["elicited_seen"] = elicited_seen
        if spec.get("collect_logs"):
            out["logs"] = logs
        return out


async def connected(spec, body):
    """Runs `body(read, write, spec)` on a connection to the server SPEC names."""
    if spec["transport"] == "stdio":
        params = StdioServerParameters(
            command=spec["command"], args=spec.get("args", []), env=spec.get("env")
        )
        async with stdio_client(params) as (read, write):
            return await body(read, write, spec)
    headers = {}
    if spec.get("token"):
        headers["Authorization"] = "Bearer " + spec["token"]
    async with streamablehttp_client(spec["url"], headers=headers) as (read, write, _):
        return await body(read, write, spec)


async def main(spec):
    if "sessions" in spec:
        # One session after another, each its own connection, with its own calls.
        out = []
        for calls in spec["sessions"]:
            out.append(await connected(dict(spec, calls=calls), session_calls))
        return {"sessions": out}
    return await connected(spec, session_calls)


if __name__ == "__main__":
    result = asyncio.run(main(json.loads(sys.argv[1])))
    print(json.dumps(result), flush=True)
