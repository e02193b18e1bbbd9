"""A small MCP server of both protocol eras, on the MCP Python SDK 2.x (PyPI `mcp==2.3.0`).

    python modern_server.py            # stdio
    python modern_server.py --http     # streamable HTTP on 127.0.0.1, a free port; prints PORT=N

It answers `server/discover` (2026-07-28) and the `initialize` handshake (2024-11-05 …
2025-11-25). What it offers carries every field a proxy could drop in passing: tool titles,
icons, annotations, `_meta`, a prompt and a resource with titles, and its own server title.
"""

import socket
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import Icon, ToolAnnotations

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
