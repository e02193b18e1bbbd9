#!/usr/bin/env python3
"""The peer for `cosmos report`'s speed (benches/trajectory.rs runs it beside the report when
python3 has orjson): a plain loader that reads the files given and every *.jsonl under the
folders given, parses every line with orjson, and totals per run what a report needs most (real
calls, failed calls, tokens, wall time). Prints one summary line. Not a report: a floor to
measure against."""
import os
import sys

import orjson

runs = calls = errors = tokens = 0
wall_ms = 0


def paths(root):
    """A file as given; a folder's *.jsonl files, recursively."""
    if os.path.isfile(root):
        yield root
        return
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".jsonl"):
                yield os.path.join(folder, name)


for root in sys.argv[1:]:
    for path in paths(root):
        runs += 1
        with open(path, "rb") as f:
            for line in f:
                event = orjson.loads(line)
                kind = event.get("kind")
                if kind == "tool_called":
                    calls += 1
                    errors += bool(event["result"].get("is_error"))
                elif kind == "llm_call":
                    tokens += event.get("prompt_tokens", 0) + event.get("completion_tokens", 0)
                elif kind == "run_finished":
                    wall_ms += event.get("t_ms", 0)
print(f"{runs} runs, {calls} calls ({errors} failed), {tokens} tokens, {wall_ms / 1000:.0f} s")
