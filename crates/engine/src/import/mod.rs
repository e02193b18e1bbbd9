//! Other programs' trajectories read as cosmos runs (`cosmos import`, and every command that
//! opens runs, through [`open`]): ATIF (`atif.rs`), Inspect AI logs (`inspect.rs`) and
//! OpenTelemetry traces in OTLP JSON (`otlp.rs`). Each
//! session or sample becomes one run, built by [`Draft`] and written by the one trajectory
//! writer, so an imported run is redacted, bounded and totalled as any other.
//!
//! Nothing is invented: what the source does not have stays absent, and the header's
//! [`Source`](cosmos_trajectory::event::Source) lists what the run's values mean nothing for (`unrecorded`) and what was read but
//! has no place here (`skipped`). docs/import.md says what maps to what.
//!
//! Measured (`cargo bench --bench import`, synthetic, 2 cores): an Inspect `.json` of 1 GB at
//! 95 MB/s in 22 MB; its `.eval` at 89 MB/s in 23 MB; an ATIF file of 500 MB at ~60 MB/s in
//! ~690 MB. Python's `json.load` only parses them: 240 MB/s in 2150 MB, 297 MB/s in 1043 MB.
//!
//! # What maps to what
//!
//! | source | cosmos |
//! |---|---|
//! | ATIF `session_id`; Inspect `TASK/SAMPLE/epoch-N` | header `source.id`; the task id is the session or sample id |
//! | ATIF `agent.name` + `version`; Inspect `inspect-ai: SOLVERS` | `source.agent`; `agent.kind` is `external`, shown as that name |
//! | ATIF `agent.model_name` / step `model_name`; Inspect `eval.model` | the planner's model (`source.model`) |
//! | the first user message; Inspect `input` | `task.request` |
//! | a later user message, a system prompt, an observation of no call | an `annotation` (`who`: `user (imported)`…) where it came |
//! | an agent step (unless `llm_call_count` is 0); an Inspect `model` event | an `llm_call` of the planner: its tokens, its reply recorded as `messages` |
//! | a tool call with its observation; an Inspect `tool` event | a real call (`tool_called`): arguments, result, `is_error` (ATIF: `extra.is_error`), error |
//! | `mcp__SERVER__TOOL` (Claude Code's MCP names) | `SERVER:TOOL`, served by `SERVER`; other tools keep their names |
//! | the last agent message without calls; Inspect `output.completion` | the `answer` |
//! | Inspect `error` | `run_finished` `failed` with its message |
//! | an Inspect `score` event, else each of the sample's `scores`, with its `target` | a `source_scored` (`C`/1 passed, `I`/`N`/0 failed) |
//! | ATIF `final_metrics.extra`'s `reward`, `resolved`… and `extra.scores` | a `source_scored` each |
//! | the ATIF tool definitions; the first Inspect model event's tools | the catalogue |
//! | OTLP: the root span (`invoke_agent`, `AGENT`, else the parentless one): `gen_ai.agent.name` (else the service), `gen_ai.request.model`, `input.value`, `output.value` or `cosmos.answer`, its status | the agent, the model, the request, the answer, a failure |
//! | OTLP: an LLM span (`chat`, `LLM`): model, `gen_ai.usage.*` / `llm.token_count.*`, its length | a planner turn with its latency (a span of another `cosmos.role` is skipped) |
//! | OTLP: a tool span (`execute_tool`, `TOOL`): `gen_ai.tool.name` / `tool.name`, `gen_ai.tool.call.arguments` / `input.value`, `gen_ai.tool.call.result` / `output.value`, an error status | a real call (a span marked `cosmos.simulated` is skipped) |
//!
//! # What a source lacks, and limits
//!
//! **Nothing is invented.** What the source lacks stays absent (format version 2 made `started_at`,
//! the planner, the request, a call's `result`, `t_ms`, latencies and tokens optional). The
//! header's `source.unrecorded` lists what the run's values mean nothing for: `t_ms` (some or all
//! steps had no time), `latency_ms` (ATIF never records it), `tokens`, `tools` (no catalogue, so
//! no call's name or arguments can be checked: valid names and schema compliance are `—`),
//! `servers` (no call named its server: the servers used are unknown); the explorer and `report`
//! show `—` for them. `source.skipped` lists what was read but has no place in a cosmos run
//! (embedded ATIF subagents). An Inspect score is the source's verdict, an event of its own
//! (`source_scored`: scorer, value, answer, explanation, target), apart from cosmos's judge.
//!
//! An OTLP file is read an object at a time, but a trace's spans may be spread over objects, so
//! the spans' kept facts are gathered by trace before runs are made (memory grows with the file's
//! spans, not their events). Inspect's logs do not say which MCP server a tool came from, so Inspect's tools keep their own
//! names. Inspect samples are read one entry (or, in a `.json` log, one array element) at a time, an
//! `.eval` entry up to 4 GiB, what each becomes in memory bounded as it is made (`budget.rs`:
//! parsed values within 256 MiB, attachment copies within 128 MiB); an ATIF file (one session, held whole while converted) up to 4 GiB.
//! A torn `.eval` (no zip directory) is read from the front up to the tear; a `.json` that breaks
//! off keeps its whole samples before the break; both are said.

pub(crate) mod atif;
mod budget;
mod convert;
mod draft;
mod format;
pub(crate) mod inspect;
mod open;
pub(crate) mod otlp;

pub use convert::{Written, read, write};
pub use draft::{Call, Draft, Ended, Imported, Turn, content_text, mcp_tool_name, timestamp};
pub use format::{Detected, Format, KNOWN, Said, detect, detect_bytes};
pub use open::{Opened, open};
