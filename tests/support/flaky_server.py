#!/usr/bin/env python3
"""A small real MCP server (mcp 1.x SDK, stdio) for fault tests: `ok` answers, `die`
kills the process mid-call, `hang` never answers."""
import asyncio
import os
import sys

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("flaky")


@mcp.tool()
def ok(text: str) -> str:
    """Echo the text."""
    return f"ok: {text}"


@mcp.tool()
def die(text: str) -> str:
    """Exit the server process in the middle of the call."""
    print("flaky: dying on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@mcp.tool()
async def hang(text: str) -> str:
    """Never answer (without blocking the server's other calls)."""
    await asyncio.sleep(3600)
    return "unreachable"


if __name__ == "__main__":
    mcp.run()
