"""A real MCP client of both protocol eras: the MCP Python SDK 2.x's `mcp.Client` (PyPI `mcp==2.3.0`).

    python modern_client.py SPEC_JSON

SPEC is {"transport": "stdio", "command": ..., "args": [...]} or {"transport": "http", "url": ...,
"token": ...}, with "mode" ("2026-07-28" adopts the stateless era with no fallback; "legacy" the
handshake; "auto" probes and falls back), "client": {"name", "version"} and "calls": [{"name",
"arguments"}]. Prints one JSON object: the negotiated protocol version, the server's info, the
server's capabilities, the listed tools (by alias, titles and all) and the list's `_meta`, each call's
result, the prompts with the first one got
(with "prompt_arguments"), and the resources with each one read.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation


def dump(x):
    return x.model_dump(by_alias=True, exclude_none=True, mode="json")


async def main(spec):
    info = spec.get("client", {"name": "modern-test-client", "version": "2.0.0"})
    if spec["transport"] == "stdio":
        target = StdioServerParameters(command=spec["command"], args=spec.get("args", []))
    elif spec.get("token"):
        headers = {"Authorization": f"Bearer {spec['token']}"}
        target = streamable_http_client(spec["url"], http_client=httpx2.AsyncClient(headers=headers))
    else:
        target = spec["url"]
    out = {}
    async with Client(
        target,
        mode=spec.get("mode", "auto"),
        client_info=Implementation(name=info["name"], version=info["version"]),
    ) as client:
        out["protocol"] = client.protocol_version
        out["server_info"] = dump(client.server_info) if client.server_info else None
        out["capabilities"] = dump(client.server_capabilities)
        listed = await client.list_tools()
        out["tools"] = [dump(t) for t in listed.tools]
        out["tools_meta"] = dump(listed).get("_meta")
        results = []
        for call in spec.get("calls", []):
            try:
                results.append(dump(await client.call_tool(call["name"], call.get("arguments", {}))))
            except Exception as e:  # a refusal is part of what the test reads
                results.append({"raised": str(e)})
        out["results"] = results
        if spec.get("prompts", True):
            prompts = (await client.list_prompts()).prompts
            out["prompts"] = [dump(p) for p in prompts]
            if prompts:
                got = await client.get_prompt(prompts[0].name, spec.get("prompt_arguments", {}))
                out["prompt_got"] = dump(got)
            resources = (await client.list_resources()).resources
            out["resources"] = [dump(r) for r in resources]
            out["reads"] = [dump(await client.read_resource(r.uri)) for r in resources]
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
