"""A tour of everything an MCP server offers, taken by the MCP Python SDK's own client (PyPI
`mcp`, 1.x), so a test can compare a server reached directly with the same server through
`cosmos proxy`.

    python mcp_tour.py SPEC_JSON

SPEC is {"transport": "stdio", "command", "args", "env"} or {"transport": "http", "url"}.
The client declares sampling (its callback answers "sampled: " and the request's text),
roots (one root, file:///tour) and elicitation (it declines), and records every log message
and resource update it is sent. It prints one JSON object: the server's capabilities and
instructions, its tools' names, prompts, a prompt got, resources, templates, a resource read,
a completion, a sampling tool's result, the roots the server saw, the log messages after
`setLevel debug`, the updates of a subscribed resource, and the progress of "long_calls" long
operations (each call's reports, in order).
"""

import asyncio
import json
import sys

import anyio
from mcp import ClientSession, types
from mcp.shared.context import RequestContext
from mcp_client import connected  # beside this file

RESOURCE = "demo://resource/static/document/architecture.md"


async def tour(read, write, spec):
    logs = []
    updates = []

    async def on_sampling(context: RequestContext, params: types.CreateMessageRequestParams):
        asked = " ".join(
            m.content.text for m in params.messages if isinstance(m.content, types.TextContent)
        )
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled: " + asked),
            model="tour-model",
            stopReason="endTurn",
        )

    async def on_roots(context: RequestContext):
        return types.ListRootsResult(roots=[types.Root(uri="file:///tour", name="tour")])

    async def on_elicit(context, params):
        return types.ElicitResult(action="decline")

    async def on_log(params: types.LoggingMessageNotificationParams):
        logs.append({"level": params.level, "data": params.data})

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ResourceUpdatedNotification
        ):
            updates.append(str(message.root.params.uri))

    async with ClientSession(
        read,
        write,
        client_info=types.Implementation(name="tour-client", version="1.0.0"),
        sampling_callback=on_sampling,
        list_roots_callback=on_roots,
        elicitation_callback=on_elicit,
        logging_callback=on_log,
        message_handler=on_message,
    ) as session:
        init = await session.initialize()
        out = {
            "capabilities": init.capabilities.model_dump(by_alias=True, exclude_none=True),
            "instructions": init.instructions,
        }
        out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
        out["prompts"] = sorted(p.name for p in (await session.list_prompts()).prompts)
        got = await session.get_prompt("args-prompt", {"city": "Lyon", "state": "Rhone"})
        out["prompt"] = got.model_dump(by_alias=True, exclude_none=True)
        out["resources"] = sorted(r.uri.__str__() for r in (await session.list_resources()).resources)
        templates = await session.list_resource_templates()
        out["templates"] = sorted(t.uriTemplate for t in templates.resourceTemplates)
        read_back = await session.read_resource(RESOURCE)
        out["read"] = read_back.model_dump(by_alias=True, exclude_none=True, mode="json")
        completion = await session.complete(
            types.PromptReference(type="ref/prompt", name="completable-prompt"),
            {"name": "department", "value": "E"},
        )
        out["completion"] = completion.completion.values
        sampled = await session.call_tool(
            "trigger-sampling-request", {"prompt": "hello", "maxTokens": 5}
        )
        out["sampled"] = [c.text for c in sampled.content if isinstance(c, types.TextContent)]
        roots = await session.call_tool("get-roots-list", {})
        out["roots"] = [c.text for c in roots.content if isinstance(c, types.TextContent)]
        await session.set_logging_level("debug")
        await session.subscribe_resource(RESOURCE)
        # Each starts now (one message at once) and repeats every 5 s.
        await session.call_tool("toggle-simulated-logging", {})
        out["logs_before_result"] = len(logs)
        await session.call_tool("toggle-subscriber-updates", {})
        await anyio.sleep(spec.get("wait_s", 5.6))
        await session.call_tool("toggle-subscriber-updates", {})
        await session.call_tool("toggle-simulated-logging", {})
        await session.unsubscribe_resource(RESOURCE)
        out["logs"] = logs
        out["updates"] = updates
        progress = []
        for _ in range(spec.get("long_calls", 0)):
            seen = []

            async def on_progress(p, total, message, seen=seen):
                seen.append(p)

            await session.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.2, "steps": 5},
                progress_callback=on_progress,
            )
            progress.append(seen)
        out["progress"] = progress
        return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(connected(json.loads(sys.argv[1]), tour))), flush=True)
