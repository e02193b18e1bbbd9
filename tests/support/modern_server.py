"""A small MCP server of both protocol eras, on the MCP Python SDK 2.x (PyPI `mcp==2.3.0`).

Besides its own tools it offers what the MCP conformance suite's server scenarios call (the
suite ships no server that does): `test_*` tools, prompts and the `test://` resources, each
answering as the scenario's description asks, so tests/servers/engine_proxy.rs can hold that every
scenario this server passes directly passes through `cosmos proxy`.

    python modern_server.py            # stdio
    python modern_server.py --http     # streamable HTTP on 127.0.0.1, a free port; prints PORT=N

It answers `server/discover` (2026-07-28) and the `initialize` handshake (2024-11-05 …
2025-11-25). What it offers carries every field a proxy could drop in passing: tool titles,
icons, annotations, `_meta`, a prompt and a resource with titles, and its own server title.
"""

import socket
import sys

import asyncio
import base64
import json

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import (
    AudioContent,
    Completion,
    ElicitRequest,
    ElicitRequestFormParams,
    EmbeddedResource,
    InputRequiredResult,
    Icon,
    ImageContent,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from mcp.server.mcpserver.prompts.base import UserMessage

ICON = Icon(src="data:image/svg+xml;base64,PHN2Zy8+", mime_type="image/svg+xml")

server = MCPServer(
    name="modern-fixture",
    title="Modern Fixture",
    version="2.3.0-test",
    instructions="A fixture server for cosmos's tests.",
)


@server.tool(
    title="Add two numbers",
    annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    icons=[ICON],
    meta={"fixture/kind": "arithmetic"},
)
def add(a: int, b: int) -> int:
    """Adds a and b."""
    return a + b


@server.tool(title="Echo")
def echo(text: str) -> str:
    """Says the text back."""
    return text


@server.prompt(title="Greeting")
def greet(name: str) -> str:
    """A greeting for NAME."""
    return f"Hello, {name}!"


@server.resource("fixture://note", title="A note", mime_type="text/plain")
def note() -> str:
    """A short note."""
    return "the note's text"


# What the conformance suite's server scenarios call.
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
)).decode()
WAV = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt " + bytes(28)).decode()


@server.tool()
def test_simple_text() -> str:
    """Returns a simple text."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> list:
    """Returns an image."""
    return [ImageContent(type="image", data=PNG, mime_type="image/png")]


@server.tool()
def test_audio_content() -> list:
    """Returns a sound."""
    return [AudioContent(type="audio", data=WAV, mime_type="audio/wav")]


@server.tool()
def test_embedded_resource() -> list:
    """Returns an embedded resource."""
    return [EmbeddedResource(type="resource", resource=TextResourceContents(
        uri="test://embedded-resource", mime_type="text/plain",
        text="This is an embedded resource content."))]


@server.tool()
def test_multiple_content_types() -> list:
    """Returns text, an image and a resource at once."""
    return [
        TextContent(type="text", text="Multiple content types test:"),
        ImageContent(type="image", data=PNG, mime_type="image/png"),
        EmbeddedResource(type="resource", resource=TextResourceContents(
            uri="test://mixed-content-resource", mime_type="application/json",
            text=json.dumps({"test": "data", "value": 123}))),
    ]


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Logs three messages while it runs."""
    for said in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.info(said)
        await asyncio.sleep(0.05)
    return "Tool with logging executed successfully"


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports its progress three times."""
    for done in (0, 50, 100):
        await ctx.report_progress(done, 100)
        await asyncio.sleep(0.05)
    return "Tool with progress executed successfully"


@server.tool()
def test_error_handling() -> str:
    """Always fails."""
    raise RuntimeError("This tool intentionally returns an error for testing")


# "Input required" (SEP-2322, the stateless era): one that asks once, one that never ends.
@server.tool()
def confirm_with_input(ctx: Context):
    """Asks for a confirmation (a form whose field has a default), then says what came back."""
    answers = ctx.input_responses
    if answers:
        answer = answers.get("confirm")
        if hasattr(answer, "model_dump"):
            answer = answer.model_dump(mode="json", exclude_none=True)
        return "answered: " + json.dumps(answer, sort_keys=True)
    return InputRequiredResult(input_requests={"confirm": ElicitRequest(params=ElicitRequestFormParams(
        message="Confirm?",
        requested_schema={"type": "object", "properties": {
            "confirmed": {"type": "boolean", "default": True}}, "required": ["confirmed"]},
    ))}, request_state="asked-once")


@server.tool()
def input_forever(ctx: Context):
    """Asks for input again however often it is answered."""
    return InputRequiredResult(request_state=f"round-{len(ctx.request_state or '')}")


@server.prompt()
def test_simple_prompt() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list:
    """A prompt holding a resource."""
    return [
        UserMessage(content=EmbeddedResource(type="resource", resource=TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."))),
        UserMessage(content=TextContent(type="text", text="Please process the embedded resource above.")),
    ]


@server.prompt()
def test_prompt_with_image() -> list:
    """A prompt holding an image."""
    return [
        UserMessage(content=ImageContent(type="image", data=PNG, mime_type="image/png")),
        UserMessage(content=TextContent(type="text", text="Please analyze the image above.")),
    ]


@server.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A binary resource."""
    return base64.b64decode(PNG)


@server.resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> str:
    """A resource made from its URI."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.completion()
async def complete(ref, argument, context):
    """Completions of a prompt argument, ranked."""
    values = [v for v in ("paris", "park", "party") if v.startswith(argument.value)]
    return Completion(values=values, total=len(values), has_more=False)


def main() -> None:
    if "--http" in sys.argv:
        import anyio
        import uvicorn

        # Port 0, read back: tests share a machine.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)  # connections wait from now on, before uvicorn serves them
        print(f"PORT={sock.getsockname()[1]}", flush=True)
        config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
        anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))
    else:
        server.run()


if __name__ == "__main__":
    main()
