#!/usr/bin/env python3
"""A small real MCP server (mcp 1.x SDK, stdio) for fault tests: `ok` answers, `die`
kills the process mid-call, `hang` never answers, `noisy` writes bytes that are not UTF-8 and
10 MB without a newline to stderr (as a progress bar that only redraws), then answers, `huge`
answers with as many MiB as asked. With FLAKY_RESOURCES set, reading the resource
`flaky://huge/MIB` answers with as many MiB, and reading `flaky://hang` never ends. With FLAKY_EXITED_FILE set, it writes that file when it ends
on its own (stdin closed).

`forecast` answers with structured content, under an output schema and annotations (read-only);
its sky is $FLAKY_SKY (default clear), so a test can make a server whose answer has changed. With
FLAKY_CALLS_FILE set, every call appends its tool's name to that file (a test can tell that
no call reached the server), and a read of `flaky://hang` appends its URI when it starts.

With FLAKY_ENV_FILE set, it writes its whole environment there when it starts.

With FLAKY_SILENT_DISCOVER set, it never answers `server/discover` (the request is dropped
before the SDK reads it), as a server of the handshake era that ignores a method it does not
know: a client must fall back to `initialize` on its own. With FLAKY_LATE_DISCOVER set, the
request is held back until the next one arrives and then passed on first, so the SDK answers
`server/discover` late, after the client gave up on it and sent `initialize`. With
FLAKY_START_DELAY_S set, it sleeps that many seconds before reading anything (a server slow to
start, whose requests wait in the pipe).

`ask` asks the user for input in the middle of the call (an elicitation form whose fields all
have defaults) and answers with what came back.

With FLAKY_STARTS_FILE set, each start appends a line to that file.

With FLAKY_START_ONCE_FILE set, it starts only once: it writes that file, and a later start
that finds it exits at once (a server that cannot be started again).

With FLAKY_SLOW_START_FILE set, it writes its pid there and waits a minute before starting.
With FLAKY_STUBBORN_PID_FILE set, it is a server that will not stop: it ignores SIGTERM, and
a child it forks (whose pid goes into that file) ignores SIGTERM and stdin's end and sleeps
for an hour: only SIGKILL to the whole process group ends them."""
import asyncio
import os
import signal
import sys
import time
from typing import TypedDict

if os.environ.get("FLAKY_START_DELAY_S"):
    time.sleep(float(os.environ["FLAKY_START_DELAY_S"]))

if os.environ.get("FLAKY_SILENT_DISCOVER") or os.environ.get("FLAKY_LATE_DISCOVER"):
    import threading

    # The SDK reads fd 0: it becomes a pipe fed with every line but `server/discover`, which
    # is dropped (silent) or passed on just before the next line (late).
    given = os.fdopen(os.dup(0), "rb", buffering=0)
    read_end, write_end = os.pipe()
    late = bool(os.environ.get("FLAKY_LATE_DISCOVER"))

    def pump():
        held = []
        with os.fdopen(write_end, "wb", buffering=0) as out:
            for line in given:
                if b'"server/discover"' in line:
                    if late:
                        held.append(line)
                    continue
                for discover in held:
                    out.write(discover)
                held.clear()
                out.write(line)

    threading.Thread(target=pump, daemon=True).start()
    os.dup2(read_end, 0)

if os.environ.get("FLAKY_ENV_FILE"):
    # What this server was given: a test checks that no secret reached it.
    with open(os.environ["FLAKY_ENV_FILE"], "w") as f:
        for k, v in sorted(os.environ.items()):
            f.write(f"{k}={v}\n")

if os.environ.get("FLAKY_STARTS_FILE"):
    # One line per start, so a test can count them.
    with open(os.environ["FLAKY_STARTS_FILE"], "a") as f:
        f.write(f"start {os.getpid()}\n")

if os.environ.get("FLAKY_START_ONCE_FILE"):
    once = os.environ["FLAKY_START_ONCE_FILE"]
    if os.path.exists(once):
        print("flaky: started once already", file=sys.stderr, flush=True)
        sys.exit(4)
    with open(once, "w") as f:
        f.write("started")

if os.environ.get("FLAKY_SLOW_START_FILE"):
    # A slow start: say so (with our pid), then take a minute before speaking MCP.
    with open(os.environ["FLAKY_SLOW_START_FILE"], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(60)

if os.environ.get("FLAKY_STUBBORN_PID_FILE"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = os.fork()
    if child == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        time.sleep(3600)
        os._exit(0)
    with open(os.environ["FLAKY_STUBBORN_PID_FILE"], "w") as f:
        f.write(str(child))

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations
from pydantic import BaseModel

mcp = FastMCP("flaky")


def called(tool):
    if os.environ.get("FLAKY_CALLS_FILE"):
        with open(os.environ["FLAKY_CALLS_FILE"], "a") as f:
            f.write(tool + "\n")


class Forecast(TypedDict):
    city: str
    high_c: int
    sky: str


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def forecast(city: str) -> Forecast:
    """A made-up forecast, as structured content."""
    called("forecast")
    return {"city": city, "high_c": len(city) + 10, "sky": os.environ.get("FLAKY_SKY", "clear")}


class Preferences(BaseModel):
    city: str = "Lyon"
    units: str = "metric"


@mcp.tool()
async def ask(ctx: Context) -> str:
    """Asks the user which city and units (elicitation), then says what it got."""
    called("ask")
    result = await ctx.elicit(message="Which city, and which units?", schema=Preferences)
    if result.action == "accept":
        return f"accepted: {result.data.city} in {result.data.units}"
    return result.action


@mcp.tool()
def ok(text: str) -> str:
    """Echo the text."""
    called("ok")
    return f"ok: {text}"


@mcp.tool()
def die(text: str) -> str:
    """Exit the server process in the middle of the call."""
    called("die")
    print("flaky: dying on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@mcp.tool()
def noisy(text: str) -> str:
    """Write junk to stderr, then echo the text."""
    err = sys.stderr.buffer
    err.write(b"not utf-8: \xff\xfe\xc3\x28\n")
    err.write(b"\r" + b"#" * (10 << 20))
    err.flush()
    return f"noisy: {text}"


@mcp.tool()
def huge(mib: int) -> str:
    """Answer with `mib` MiB of text (over 16, more than an MCP message over stdio may be)."""
    return "x" * (mib << 20)


if os.environ.get("FLAKY_RESOURCES"):
    # Only when asked: two flaky upstreams of one proxy would offer the same resources.
    @mcp.resource("flaky://huge/{mib}")
    def huge_resource(mib: str) -> str:
        """A resource of `mib` MiB of text (over 16, more than an MCP message over stdio may be)."""
        return "x" * (int(mib) << 20)

    @mcp.resource("flaky://hang")
    async def hang_resource() -> str:
        """A resource whose read never ends."""
        called("flaky://hang")
        await asyncio.sleep(3600)
        return "unreachable"


# With FLAKY_HANG_READ_ONLY set, `hang` says it is read-only (so routing may ground it).
@mcp.tool(
    annotations=ToolAnnotations(readOnlyHint=True)
    if os.environ.get("FLAKY_HANG_READ_ONLY")
    else None
)
async def hang(text: str) -> str:
    """Never answer (without blocking the server's other calls)."""
    called("hang")
    await asyncio.sleep(3600)
    return "unreachable"


if __name__ == "__main__":
    mcp.run()
    # Stdin closed: a graceful end. Said in a file when asked (FLAKY_EXITED_FILE).
    if os.environ.get("FLAKY_EXITED_FILE"):
        with open(os.environ["FLAKY_EXITED_FILE"], "w") as f:
            f.write("exited on its own")
