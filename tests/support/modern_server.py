"""A small MCP server of both protocol eras, on the MCP Python SDK 2.x (PyPI `mcp==2.3.0`).

Besides its own tools it offers what the MCP conformance suite's server scenarios call (the
suite ships no server that does): `test_*` tools, prompts and the `test://` resources, each
answering as the scenario's description asks, so tests/servers/engine_proxy.rs can hold that every
scenario this server passes directly passes through `cosmos proxy`.

    python modern_server.py            # stdio
    python modern_server.py --http     # streamable HTTP on 127.0.0.1, a free port; prints PORT=N

With FIXTURE_PID_DIR set, each process writes an empty file named by its pid there.

It answers `server/discover` (2026-07-28) and the `initialize` handshake (2024-11-05 …
2025-11-25). What it offers carries every field a proxy could drop in passing: tool titles,
icons, annotations, `_meta`, a prompt and a resource with titles, and its own server title.
"""

import os
import socket
import sys
from typing import Annotated

import asyncio
import base64
import json

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import Field
from mcp.types import (
    AudioContent,
    CreateMessageRequest,
    CreateMessageRequestParams,
    EmptyResult,
    ListRootsRequest,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
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


# Requests to the client during a call (the handshake era: a channel back to the client).
def needs(ctx: Context, capability: str) -> None:
    """Fails the call, as the scenarios ask, when the client did not declare `capability`."""
    declared = ctx.client_capabilities
    if declared is None or getattr(declared, capability, None) is None:
        raise RuntimeError(f"the client does not support {capability}")


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's model to answer PROMPT."""
    needs(ctx, "sampling")
    answer = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=100,
        related_request_id=ctx.request_id,
    )
    text = answer.content.text if isinstance(answer.content, TextContent) else str(answer.content)
    return f"LLM response: {text}"


async def ask_form(ctx: Context, message: str, schema: dict) -> str:
    needs(ctx, "elicitation")
    answer = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return f"action={answer.action}, content={json.dumps(answer.content, sort_keys=True)}"


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the client's user for a name and an address."""
    said = await ask_form(ctx, message, {"type": "object", "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    }, "required": ["username", "email"]})
    return f"User response: {said}"


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Asks for a form whose every field has a default."""
    said = await ask_form(ctx, "Defaults for every primitive type", {"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    }})
    return f"Elicitation completed: {said}"


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Asks for a form with each of the five kinds of choice."""
    said = await ask_form(ctx, "Choose", {"type": "object", "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": [
            {"const": "value1", "title": "First Option"},
            {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": [
            {"const": "value1", "title": "First Choice"},
            {"const": "value2", "title": "Second Choice"},
            {"const": "value3", "title": "Third Choice"}]}},
    }})
    return f"Elicitation completed: {said}"


@server.resource("test://watched-resource", mime_type="text/plain")
def watched() -> str:
    """A resource a client may subscribe to: `touch_watched` changes it."""
    return f"version {WATCHED['version']}"


WATCHED = {"version": 1, "subscribers": set()}


@server.tool()
async def touch_watched(ctx: Context) -> str:
    """Changes test://watched-resource, telling this session if it subscribed."""
    WATCHED["version"] += 1
    if id(ctx.session) in WATCHED["subscribers"]:
        await ctx.session.send_resource_updated("test://watched-resource")
    return f"version {WATCHED['version']}"


async def on_subscribe(ctx, params):
    WATCHED["subscribers"].add(id(ctx.session))
    return EmptyResult()


async def on_unsubscribe(ctx, params):
    WATCHED["subscribers"].discard(id(ctx.session))
    return EmptyResult()


async def on_set_level(ctx, params):
    return EmptyResult()


server._lowlevel_server.add_request_handler("resources/subscribe", SubscribeRequestParams, on_subscribe)
server._lowlevel_server.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, on_unsubscribe)
server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, on_set_level)


# Requests to the client as "input required" results (SEP-2322, the stateless era).
def form(message: str, field: str) -> ElicitRequest:
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema={
        "type": "object", "properties": {field: {"type": "string"}}, "required": [field]}))


def sampling(text: str, most: int) -> CreateMessageRequest:
    return CreateMessageRequest(params=CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=text))],
        max_tokens=most))


def answered(ctx: Context, *keys: str) -> dict | None:
    """The answers to KEYS as plain JSON, when every one came."""
    got = ctx.input_responses or {}
    if not all(k in got for k in keys):
        return None
    return {k: (got[k].model_dump(mode="json", by_alias=True, exclude_none=True)
                if hasattr(got[k], "model_dump") else got[k]) for k in keys}


@server.tool()
def test_input_required_result_elicitation(ctx: Context):
    """Asks for the user's name, then greets them."""
    got = answered(ctx, "user_name")
    if got is None:
        return InputRequiredResult(input_requests={"user_name": form("What is your name?", "name")})
    return f"Hello, {(got['user_name'].get('content') or {}).get('name', '?')}!"


@server.tool()
def test_input_required_result_sampling(ctx: Context):
    """Asks the client's model a question, then says its answer."""
    got = answered(ctx, "capital_question")
    if got is None:
        return InputRequiredResult(input_requests={
            "capital_question": sampling("What is the capital of France?", 100)})
    return f"The model said: {got['capital_question'].get('content', {}).get('text', '')}"


@server.tool()
def test_input_required_result_list_roots(ctx: Context):
    """Asks for the client's roots, then names them."""
    got = answered(ctx, "client_roots")
    if got is None:
        return InputRequiredResult(input_requests={"client_roots": ListRootsRequest()})
    return "roots: " + ", ".join(r.get("uri", "") for r in got["client_roots"].get("roots", []))


@server.tool()
def test_input_required_result_request_state(ctx: Context):
    """Asks for a confirmation with a state of its own, and checks the state comes back."""
    got = answered(ctx, "confirm")
    if got is None or ctx.request_state != "confirm-asked":
        return InputRequiredResult(input_requests={"confirm": ElicitRequest(params=ElicitRequestFormParams(
            message="Please confirm", requested_schema={
                "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}))},
            request_state="confirm-asked")
    return "state-ok: " + json.dumps(got["confirm"], sort_keys=True)


@server.tool()
def test_input_required_result_multiple_inputs(ctx: Context):
    """Asks for a form, a sampled message and the roots at once."""
    got = answered(ctx, "user_name", "greeting", "client_roots")
    if got is None or ctx.request_state != "three-asked":
        return InputRequiredResult(input_requests={
            "user_name": form("What is your name?", "name"),
            "greeting": sampling("Generate a greeting", 50),
            "client_roots": ListRootsRequest(),
        }, request_state="three-asked")
    return "all three: " + json.dumps(got, sort_keys=True)


@server.tool()
def test_input_required_result_multi_round(ctx: Context):
    """Asks twice, the state telling the rounds apart."""
    if ctx.request_state == "round-2" and answered(ctx, "step2"):
        return "both steps: " + json.dumps(answered(ctx, "step2"), sort_keys=True)
    if ctx.request_state == "round-1" and answered(ctx, "step1"):
        return InputRequiredResult(input_requests={
            "step2": form("Step 2: What is your favorite color?", "color")}, request_state="round-2")
    return InputRequiredResult(input_requests={
        "step1": form("Step 1: What is your name?", "name")}, request_state="round-1")


@server.tool()
def test_input_required_result_tampered_state(ctx: Context):
    """Asks with a state the SDK seals: a changed one is refused before this runs."""
    if ctx.request_state == "sealed" and answered(ctx, "confirm"):
        return "state intact"
    return InputRequiredResult(input_requests={"confirm": form("Confirm?", "ok")}, request_state="sealed")


@server.tool()
def test_input_required_result_capabilities(ctx: Context):
    """Asks only for what the client declared it can give."""
    declared = ctx.client_capabilities
    asks = {}
    if declared is not None and declared.sampling is not None:
        asks["greeting"] = sampling("Generate a greeting", 50)
    if declared is not None and declared.elicitation is not None:
        asks["user_name"] = form("What is your name?", "name")
    if asks and answered(ctx, *asks) is None:
        return InputRequiredResult(input_requests=asks)
    return "asked for: " + ", ".join(sorted(asks))


@server.prompt()
def test_input_required_result_prompt(ctx: Context):
    """A prompt that needs the user's context first."""
    got = answered(ctx, "user_context")
    if got is None:
        return InputRequiredResult(input_requests={
            "user_context": form("What context should the prompt use?", "context")})
    return f"Use this context: {(got['user_context'].get('content') or {}).get('context', '')}"


@server.tool()
def test_missing_capability(ctx: Context) -> str:
    """Needs a client that samples: -32021 for one that did not declare it."""
    declared = ctx.client_capabilities
    if declared is None or declared.sampling is None:
        raise MCPError(code=-32021, message="the client did not declare sampling",
                       data={"requiredCapabilities": {"sampling": {}}})
    return "the client samples"


@server.tool()
def test_headers(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    """Says the region, which a 2026-07-28 HTTP client also sends as the Mcp-Param-Region header."""
    return f"region {region}"


@server.tool(description="Tool with JSON Schema 2020-12 features")
def json_schema_2020_12_tool(**kwargs) -> str:
    """Its input schema is set below, whole."""
    return "ok"


server._tool_manager.get_tool("json_schema_2020_12_tool").parameters = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
        "street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


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
    # A test that counts this server's processes names a folder: each writes its pid there.
    if os.environ.get("FIXTURE_PID_DIR"):
        with open(os.path.join(os.environ["FIXTURE_PID_DIR"], str(os.getpid())), "w"):
            pass
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
