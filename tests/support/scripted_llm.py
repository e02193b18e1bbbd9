#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat-completions server for mcp-cosmos's tests.

Serves deterministic replies over real HTTP on 127.0.0.1 (a free port, printed as
"PORT <n>" on the first line of stdout). Replies come from a JSON script:

    {"rules": [
       {"when": "substring of the request body", "times": 1,   # optional; default unlimited
        "status": 200, "headers": {"Retry-After": "1"}, "delay_s": 0,
        "hold_until_file": "/path",  # optional: answer only once this file exists (a test
                                     # holds a run mid-way, then lets it go)
        "content": "text or JSON value", "no_usage": false,   # a normal completion, or
        "tool_calls": [{"name": "f", "arguments": {...}}],    # native tool calls, or
        "next_uncalled": [{"name": "f", "arguments": {...}}], # the first of these the
                                                               # conversation's assistant
                                                               # messages have not called yet,
                                                               # else "content" (as a
                                                               # function-calling model), or
        "raw": "exact body text",                              # anything at all, or
        "logprobs": [-0.1, -0.3],                              # (beside a completion) these
                                                               # token log-probabilities, when
                                                               # the request asked for them
        "raw_bytes": 300000000},                               # that many bytes of "x",
                                                               # streamed (never held whole)
       ...]}

The first rule whose "when" occurs in the request body (and has times left) answers; "when"
may also be a list of substrings that must all occur.
Every request is appended to the log file given as the second argument, as JSON lines
{"path", "headers" (lower-case names), "body"}, so tests can check what was sent.
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

script = json.load(open(sys.argv[1]))
log_path = sys.argv[2] if len(sys.argv) > 2 else None
lock = threading.Lock()
rules = script.get("rules", [])


def matches(when, body_text):
    needles = when if isinstance(when, list) else [when]
    return all(n in body_text for n in needles)


def pick(body_text):
    with lock:
        for rule in rules:
            if matches(rule.get("when", ""), body_text) and rule.get("times", 1) != 0:
                if "times" in rule:
                    rule["times"] -= 1
                return dict(rule)
    return {"status": 500, "raw": "no scripted rule matches this request"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        body_text = self.rfile.read(length).decode("utf-8", "replace")
        if log_path:
            with lock, open(log_path, "a") as f:
                f.write(json.dumps({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": json.loads(body_text or "null")}) + "\n")
        rule = pick(body_text)
        time.sleep(rule.get("delay_s", 0))
        hold = rule.get("hold_until_file")
        if hold:
            deadline = time.time() + 120
            while not os.path.exists(hold) and time.time() < deadline:
                time.sleep(0.02)
        if "raw_bytes" in rule:
            self.stream_bytes(rule)
            return
        if "raw" in rule:
            payload = rule["raw"].encode()
        else:
            content = rule.get("content", "")
            if not isinstance(content, str):
                content = json.dumps(content)
            message = {"role": "assistant", "content": content}
            if "next_uncalled" in rule:
                sent = json.loads(body_text or "{}").get("messages", [])
                called = {c["function"]["name"] for m in sent if m.get("role") == "assistant"
                          for c in (m.get("tool_calls") or [])}
                todo = [c for c in rule["next_uncalled"] if c["name"] not in called]
                if todo:
                    rule["tool_calls"] = todo[:1]
                    message["content"] = None
            if "tool_calls" in rule:
                message["tool_calls"] = [
                    {"id": f"call_{i}", "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                    for i, c in enumerate(rule["tool_calls"])
                ]
            reply = {"id": "scripted", "object": "chat.completion", "model": "scripted", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
            if "logprobs" in rule:
                # Given only to a request that asked for them, as OpenAI's endpoint does.
                asked = json.loads(body_text).get("logprobs") is True
                if asked:
                    reply["choices"][0]["logprobs"] = {"content": [{"token": f"t{i}", "logprob": lp, "bytes": None, "top_logprobs": []} for i, lp in enumerate(rule["logprobs"])]}
            if not rule.get("no_usage"):
                reply["usage"] = {"prompt_tokens": len(body_text) // 4, "completion_tokens": max(1, len(content) // 4), "total_tokens": 0}
            payload = json.dumps(reply).encode()
        try:
            self.send_response(rule.get("status", 200))
            for k, v in rule.get("headers", {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def stream_bytes(self, rule):
        total = rule["raw_bytes"]
        block = b"x" * (1 << 20)
        try:
            self.send_response(rule.get("status", 200))
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(total))
            self.end_headers()
            sent = 0
            while sent < total:
                part = block[: min(len(block), total - sent)]
                self.wfile.write(part)
                sent += len(part)
        except (BrokenPipeError, ConnectionResetError):
            pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
