"""Makes real Inspect AI logs of an agent calling a real MCP server, for cosmos's import tests.

    .cache/interchange/venv/bin/python scripts/make-inspect-logs.py OUT_DIR SERVER_PYTHON

Two samples (two tasks), each answered by Inspect's `mockllm` model with scripted tool calls,
against the real `mcp-server-time` over stdio (started with SERVER_PYTHON). Writes one `.eval`
log and one `.json` log of the same evaluation into OUT_DIR. Offline: Inspect's token counting
asks tiktoken for an encoding it would download; a local stand-in counts words instead.
"""

import sys
import types

# tiktoken would download its encoding; this process is offline. A stand-in that counts words.
stand_in = types.ModuleType("tiktoken")


class _Words:
    def encode(self, text, **_):
        return text.split()


stand_in.get_encoding = lambda _name: _Words()
stand_in.encoding_for_model = lambda _name: _Words()
sys.modules["tiktoken"] = stand_in

from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ModelOutput, get_model  # noqa: E402
from inspect_ai.scorer import includes  # noqa: E402
from inspect_ai.solver import generate, use_tools  # noqa: E402
from inspect_ai.tool import mcp_server_stdio  # noqa: E402

out_dir, server_python = sys.argv[1], sys.argv[2]

time_server = mcp_server_stdio(
    name="time",
    command=server_python,
    args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
)


def scripted():
    """Each sample: one tool call, then an answer. mockllm takes outputs in order."""
    return [
        ModelOutput.for_tool_call(
            "mockllm/model", "get_current_time", {"timezone": "Asia/Tokyo"}, tool_call_id="call_tokyo"
        ),
        ModelOutput.from_content("mockllm/model", "It is now the time the tool gave for Tokyo."),
        ModelOutput.for_tool_call(
            "mockllm/model",
            "convert_time",
            {"source_timezone": "Europe/London", "time": "16:30", "target_timezone": "Asia/Tokyo"},
            tool_call_id="call_convert",
        ),
        ModelOutput.from_content("mockllm/model", "16:30 in London is the converted Tokyo time."),
    ]


task = Task(
    dataset=[
        Sample(id="tokyo_now", input="What time is it in Tokyo?", target="Tokyo"),
        Sample(id="london_to_tokyo", input="Convert 16:30 London time to Tokyo time.", target="Tokyo"),
    ],
    solver=[use_tools(time_server), generate()],
    scorer=includes(),
    name="time_mcp",
)

for fmt in ("eval", "json"):
    eval(
        task,
        model=get_model("mockllm/model", custom_outputs=scripted()),
        log_dir=out_dir,
        log_format=fmt,
        max_samples=1,
        display="none",
    )
