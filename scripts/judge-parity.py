#!/usr/bin/env python3
"""Measures how close cosmos's judge is to MCP-Bench's, on the same runs.

    scripts/judge-parity.py --mcp-bench ~/src/mcp-bench [--tasks TASKS.json] RUN.jsonl...
    scripts/judge-parity.py --mcp-bench ~/src/mcp-bench --score --config judge.toml \
        [--trials 1] [--seed 1] [--max-tokens 1000] RUN.jsonl...

MCP-Bench's code stays in the user's own checkout (github.com/Accenture/mcp-bench, Apache-2.0):
this script imports it from --mcp-bench and never copies it. For each run it builds

- MCP-Bench's judge request with MCP-Bench's code: the executor's own round summaries
  (`TaskExecutor._update_state`, one round per recorded call, as cosmos makes them), the
  judge's `_create_execution_summary`, and a stability-trial prompt from
  `LLMJudge._generate_randomized_prompt`;
- cosmos's request with `cosmos judge --print-prompts` (same seed);

and prints which facts each request holds (a Markdown table per run, then a summary).

With --score both judges score every run with the endpoint of the `judge` role in --config
(an OpenAI-compatible server): MCP-Bench's `LLMJudge._perform_evaluation` with stability trials
on (only the first --trials of its five are sent; the rest fail at once and MCP-Bench averages
the ones that answered), and `cosmos judge --trials N` on a copy of the run. It prints per
sub-dimension and headline score each judge's mean, the mean difference (cosmos − MCP-Bench)
and how often the two agree within one point.

MCP-Bench's Python dependencies are installed on first use into a virtual environment under
${COSMOS_CACHE:-~/.cache/mcp-cosmos}/parity-venv (from PyPI).
"""
import argparse
import asyncio
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("COSMOS_CACHE", Path.home() / ".cache" / "mcp-cosmos")) / "parity-venv"
PACKAGES = ["openai", "json_repair", "pyyaml", "jsonschema", "mcp", "aiohttp"]
DIMENSIONS = [
    "task_fulfillment",
    "grounding",
    "tool_appropriateness",
    "parameter_accuracy",
    "dependency_awareness",
    "parallelism_efficiency",
]
# MCP-Bench names the last score differently.
MCP_BENCH_KEY = {d: d for d in DIMENSIONS} | {"parallelism_efficiency": "parallelism_and_efficiency"}


def in_venv():
    """Re-runs this script in the parity venv when MCP-Bench's dependencies are missing."""
    try:
        import aiohttp, json_repair, mcp, openai, yaml  # noqa: F401
        return
    except ImportError:
        pass
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"judge-parity: installing MCP-Bench's dependencies into {VENV}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PACKAGES], check=True)
    os.execv(str(python), [str(python), *sys.argv])


def read_run(path):
    """The header and the events of a trajectory (lines that do not parse are skipped)."""
    lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    header = json.loads(lines[0])
    events = []
    for line in lines[1:]:
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return header, events


def task_details(header, tasks_file):
    """The concrete task and dependency analysis: the header's, else the task file's."""
    task = header["task"]
    concrete, analysis = task.get("reference"), task.get("dependency_analysis")
    if tasks_file and (concrete is None or analysis is None):
        data = json.loads(Path(tasks_file).read_text(encoding="utf-8"))
        for group in data.get("server_tasks", []):
            for t in group.get("tasks", []):
                if t.get("task_id") == task["id"]:
                    concrete = concrete or t.get("task_description")
                    analysis = analysis or t.get("dependency_analysis")
    return concrete, analysis


def calls_of(events):
    """The run's real calls in MCP-Bench's execution-result shape, one round each."""
    results = []
    for i, e in enumerate((e for e in events if e.get("kind") == "tool_called"), start=1):
        result = e.get("result") or {}
        text = result.get("text", "")
        failed = bool(result.get("is_error")) or e.get("error") is not None
        entry = {
            "tool": e["tool"],
            "server": e.get("server") or "unknown",
            "parameters": e.get("arguments") or {},
            "round_num": i,
            "success": not failed,
        }
        entry["error" if failed else "result"] = (e.get("error") if failed and not text else text) or ""
        results.append(entry)
    return results


def answer_of(events):
    answers = [e["text"] for e in events if e.get("kind") == "answer"]
    return answers[-1] if answers else ""


class CappedProvider:
    """MCP-Bench's provider, with the completion length capped (a small local model's context
    cannot hold MCP-Bench's 15,000) and at most `answers` requests answered per run: the rest
    fail at once, as a failed stability trial does."""

    def __init__(self, inner, max_tokens, answers):
        self.inner, self.max_tokens, self.answers, self.sent = inner, max_tokens, answers, 0

    async def get_completion(self, system_prompt, user_prompt, max_tokens, **kw):
        if self.sent >= self.answers:
            raise RuntimeError("judge-parity: trial not sent (--trials)")
        self.sent += 1
        return await self.inner.get_completion(system_prompt, user_prompt, min(max_tokens, self.max_tokens), **kw)

    def clean_and_parse_json(self, raw):
        return self.inner.clean_and_parse_json(raw)


def mcp_bench_inputs(mcp_bench, header, events, concrete, analysis, provider):
    """MCP-Bench's judge inputs for a run, made by MCP-Bench's own executor and judge code."""
    from agent.executor import TaskExecutor
    from benchmark.evaluator import LLMJudge

    executor = TaskExecutor.__new__(TaskExecutor)  # only its round bookkeeping is used
    executor.llm = provider
    executor.concurrent_summarization = False
    executor.accumulated_information = ""
    executor.accumulated_information_uncompressed = ""
    executor.execution_results = []
    results = calls_of(events)
    for r in results:
        asyncio.run(executor._update_state([r], r["round_num"]))
    tools = {
        t["name"]: {
            "server": t["name"].split(":", 1)[0] if ":" in t["name"] else "Unknown",
            "description": t.get("description"),
            "input_schema": t.get("input_schema"),
        }
        for t in header.get("tools", [])
    }
    judge = LLMJudge(provider, enable_judge_stability=True)
    summary = judge._create_execution_summary(
        executor.execution_results, len(results), executor.accumulated_information_uncompressed
    )
    return judge, {
        "task": header["task"]["request"],
        "final_solution": answer_of(events),
        "execution_summary": summary,
        "total_rounds": len(results),
        "available_tools": tools,
        "concrete_task_description": concrete,
        "dependency_analysis": analysis,
    }


def cosmos_prompt(cosmos, run, tasks, seed):
    args = [cosmos, "judge", "--print-prompts", "--seed", str(seed), run]
    if tasks:
        args[2:2] = ["--tasks", tasks]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    first = json.loads(out.splitlines()[0])
    return "\n".join(m["content"] for m in first["messages"])


def norm(text):
    """Lower case, one space for any run of white space, hyphens for dashes, no markup."""
    text = text.lower().replace("–", "-").replace("—", "-").replace("*", "").replace("`", "")
    return re.sub(r"\s+", " ", text)


def leaves(value):
    """The strings and numbers inside an argument value (how each prompt prints the whole
    differs: Python's repr in MCP-Bench's, JSON in cosmos's)."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in leaves(v)]
    if isinstance(value, bool) or value is None:
        return []
    return [str(value)]


def listed_with_fields(name, fields):
    """The tool's listing (from its name, 700 characters on) names each input field."""
    def test(prompt):
        at = prompt.find(norm(name) + ":")
        window = prompt[at : at + 700] if at >= 0 else ""
        return at >= 0 and all(f'"{norm(f)}"' in window for f in fields)
    return test


def facts(header, events, concrete, analysis):
    """(kind, fact, test) triples: what a judge of this run should be shown."""
    def has(snippet):
        n = norm(snippet)[:160]
        return lambda prompt: n in prompt

    def matches(pattern):
        return lambda prompt: re.search(pattern, prompt) is not None

    out = [("task the agent saw", "", has(header["task"]["request"]))]
    if concrete:
        out.append(("concrete task", "", has(concrete)))
    if analysis:
        out.append(("dependency analysis", "", has(analysis)))
    for t in header.get("tools", []):
        out.append(("a tool listed with its description", t["name"], has(f"{t['name']}: {t.get('description') or ''}"[:80])))
        fields = list(((t.get("input_schema") or {}).get("properties") or {}).keys())
        if fields:
            out.append(("a tool's input fields", t["name"], listed_with_fields(t["name"], fields)))
    calls = calls_of(events)
    for r in calls:
        label = f"round {r['round_num']}: {r['tool']}"
        out.append(("a call with its arguments", label, lambda p, r=r: norm(r["tool"]) in p and all(norm(v) in p for v in leaves(r["parameters"]))))
        text = r.get("result") or r.get("error") or ""
        if text:
            out.append(("a call's result", label, has(text[:120])))
    ok = sum(1 for r in calls if r["success"])
    out += [
        ("total rounds", "", matches(rf"total rounds\W+{len(calls)}\b")),
        ("count of calls that succeeded", "", matches(rf"(successful|succeeded): {ok}\b" if calls else r"no tools? (were|was) (executed|called)")),
        ("final answer", "", has(answer_of(events)[:160]) if answer_of(events) else matches(r"final (solution|answer)")),
        ("six sub-dimensions", "", lambda p: all(d in p for d in ["task fulfillment", "grounding", "tool appropriateness", "parameter accuracy", "dependency awareness", "parallelism and efficiency"])),
        ("bands 1-3 / 4-6 / 7-8 / 9-10 as 10-30% / 40-60% / 70-80% / 90-100%", "", lambda p: all(b in p for b in ["10-30%", "40-60%", "70-80%", "90-100%"])),
        ("parallelism bands by redundant calls and parallel work", "", matches(r"redundant.{0,80}parallel")),
        ("defect rate = issues / opportunities", "", matches(r"defect rate")),
        ("defect rate to score: 0-10% 9-10, 10-30% 7-9, 30-50% 5-7, 50-70% 3-5, 70-100% 0-3", "", lambda p: all(re.search(rf"{a}%.{{0,20}}{b}\b", p) for a, b in [("0-10", "9-10"), ("10-30", "7-9"), ("30-50", "5-7"), ("50-70", "3-5"), ("70-100", "0-3")])),
        ("calibration: most executions 4-6", "", matches(r"most.{0,40}4-6")),
        ("calibration: re-check before scoring above 7", "", matches(r"above 7")),
        ("server count earns nothing", "", matches(r"server")),
        ("judge by proportions, not counts", "", matches(r"proportion|percentage")),
        ("reasoning before scores", "", lambda p: 0 <= p.find("task_fulfillment_reasoning") < max(p.rfind("task_fulfillment,"), p.rfind('"task_fulfillment"'))),
    ]
    return out


def fact_table(name, rows):
    print(f"\n### {name}\n\n| fact | MCP-Bench | cosmos |\n|---|---|---|")
    for kind, detail, a, b in rows:
        fact = f"{kind}: {detail}" if detail else kind
        print(f"| {fact} | {'yes' if a else '**no**'} | {'yes' if b else '**no**'} |")


def judge_config(path):
    """The judge role's endpoint from a cosmos.toml: base URL, model, key."""
    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    role = data.get("default", {}) | data.get("roles", {}).get("judge", {})
    key = os.environ.get(role.get("api_key_env", "OPENAI_API_KEY"), "none")
    return role["base_url"], role["model"], key


def mcp_bench_scores(judge, inputs):
    result = asyncio.run(judge._perform_evaluation(
        inputs["task"], inputs["final_solution"], inputs["execution_summary"], inputs["total_rounds"],
        inputs["available_tools"], inputs["concrete_task_description"], inputs["dependency_analysis"]))
    return {d: float(result[MCP_BENCH_KEY[d]]) for d in DIMENSIONS}


def cosmos_scores(cosmos, run, tasks, config, trials, seed):
    with tempfile.TemporaryDirectory() as d:
        copy = Path(d) / Path(run).name
        shutil.copy(run, copy)
        args = [cosmos, "judge", "--force", "--config", config, "--trials", str(trials), "--seed", str(seed), str(copy)]
        if tasks:
            args += ["--tasks", tasks]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip() or done.stdout.strip())
        _, events = read_run(copy)
    scored = [e for e in events if e.get("kind") == "judge_scored"][-1]
    return {d: float(scored["scores"][d]["score"]) for d in DIMENSIONS}


def headline(s):
    tc = (s["task_fulfillment"] + s["grounding"]) / 2
    ts = (s["tool_appropriateness"] + s["parameter_accuracy"]) / 2
    pe = (s["dependency_awareness"] + s["parallelism_efficiency"]) / 2
    return s | {"task completion": tc, "tool selection": ts, "planning": pe, "overall": (tc + ts + pe) / 3}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mcp-bench", required=True, help="your checkout of github.com/Accenture/mcp-bench")
    p.add_argument("--tasks", help="task file the runs came from (for runs whose header lacks the details)")
    p.add_argument("--cosmos", default=str(REPO / "target" / "debug" / "cosmos"))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--score", action="store_true", help="also have both judges score each run")
    p.add_argument("--config", help="cosmos.toml whose judge role both judges use (with --score)")
    p.add_argument("--trials", type=int, default=1, help="trials per run per judge (with --score)")
    p.add_argument("--max-tokens", type=int, default=1000, help="completion cap for MCP-Bench's requests")
    p.add_argument("runs", nargs="+")
    a = p.parse_args()
    in_venv()
    sys.path.insert(0, str(Path(a.mcp_bench).resolve()))
    from llm.provider import LLMProvider

    endpoint = judge_config(a.config) if a.config else ("http://127.0.0.1:9/v1", "none", "none")
    from openai import AsyncOpenAI
    totals, scored = {}, []
    for run in a.runs:
        header, events = read_run(run)
        concrete, analysis = task_details(header, a.tasks)
        # Facts need no model: every request fails at once and MCP-Bench cuts long results itself.
        provider = CappedProvider(LLMProvider(AsyncOpenAI(base_url=endpoint[0], api_key=endpoint[2]), endpoint[1], "openai"), a.max_tokens, 0)
        judge, inputs = mcp_bench_inputs(a.mcp_bench, header, events, concrete, analysis, provider)
        random.seed(a.seed)
        theirs = norm(judge._generate_randomized_prompt(**inputs))
        ours = norm(cosmos_prompt(a.cosmos, run, a.tasks, a.seed))
        rows = [(kind, detail, t(theirs), t(ours)) for kind, detail, t in facts(header, events, concrete, analysis)]
        fact_table(Path(run).name, rows)
        for kind, _, x, y in rows:
            t = totals.setdefault(kind, [0, 0, 0])
            t[0] += 1
            t[1] += x
            t[2] += y
        if a.score:
            provider.answers, provider.sent = a.trials, 0
            random.seed(a.seed)
            try:
                theirs_s = mcp_bench_scores(judge, inputs)
                ours_s = cosmos_scores(a.cosmos, run, a.tasks, a.config, a.trials, a.seed)
                scored.append((Path(run).name, headline(theirs_s), headline(ours_s)))
                print(f"\nscores: MCP-Bench {theirs_s}\n        cosmos    {ours_s}")
            except Exception as e:  # one run's failure is reported, the others go on
                print(f"\n{Path(run).name}: not scored: {e}")
    print("\n### Summary: facts held over all runs\n\n| fact | checked | MCP-Bench | cosmos |\n|---|---|---|---|")
    for f, (n, x, y) in totals.items():
        print(f"| {f} | {n} | {x} | {y} |")
    if scored:
        print(f"\n### Scores side by side ({len(scored)} runs, {a.trials} trial(s) each, seed {a.seed})\n")
        print("| score | MCP-Bench mean | cosmos mean | mean difference (cosmos − MCP-Bench) | within 1 point | equal |\n|---|---|---|---|---|---|")
        for k in list(scored[0][1].keys()):
            xs = [s[1][k] for s in scored]
            ys = [s[2][k] for s in scored]
            diffs = [y - x for x, y in zip(xs, ys)]
            within = sum(1 for d in diffs if abs(d) <= 1)
            equal = sum(1 for d in diffs if d == 0)
            n = len(diffs)
            print(f"| {k} | {sum(xs)/n:.2f} | {sum(ys)/n:.2f} | {sum(diffs)/n:+.2f} | {within}/{n} | {equal}/{n} |")


if __name__ == "__main__":
    main()
