//! OpenTelemetry export: a run as one trace, over OTLP/HTTP, in the GenAI semantic conventions
//! (`invoke_agent`, `chat`, `execute_tool`) with MCP attributes, and what no convention has
//! yet: every simulated call as an `execute_tool` span marked `cosmos.simulated`, linked from
//! its real twin, and the search tree as spans. docs/export.md lists every span and attribute.
//!
//! [`Trace`] is the one mapping from events to spans; a file (`cosmos export otel`), a file of
//! OTLP JSON (`--out`, `file.rs`) and a live run (`cosmos run --otel-endpoint`, [`Live`]) all
//! feed it. Span times come from the
//! trajectory's clock (`started_at` + `t_ms`), so an old run keeps its real durations.
//! Prompts, arguments and results are sent only with `--content`, always redacted.
//! Memory: open spans (the run, its phase, nodes not yet evaluated) and, per node of the
//! search in progress, a few words (`NodeFacts`: span id, tool, visits, value) and its
//! simulation's observation until the search is over, for the real twin's fidelity.
//!
//! # Spans
//!
//! | span | from | parent | attributes |
//! |---|---|---|---|
//! | `invoke_agent {agent}` | `run_started` … the last event | none (the trace's root) | `gen_ai.operation.name = invoke_agent`, `gen_ai.agent.name` (react, plan_exec, spiral), `gen_ai.agent.id` (the run id), `gen_ai.request.model` (the planner's); `cosmos.run.id`, `cosmos.task.id`, `cosmos.agent.kind`, `cosmos.agent.settings.*` (every header setting), `cosmos.world_model`, `cosmos.servers`; at the end `cosmos.run.status`, `cosmos.run.ending`, `cosmos.run.tool_calls`, `cosmos.run.tool_errors`, status Error unless completed; content: `cosmos.task.request`, `cosmos.answer` |
//! | `{phase}` (`plan`, `execute`, `answer`, `judge`) | `phase` … the next `phase` | the run | `cosmos.phase` |
//! | `chat {model}` | `llm_call` | the phase | `gen_ai.operation.name = chat`, `gen_ai.provider.name` (`openai` for any OpenAI-compatible endpoint; a well-known host by its name), `gen_ai.request.model`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `error.type = llm_error` on failure; `cosmos.role`, `cosmos.tokens_estimated`; content: `gen_ai.input.messages` (with `--record-messages`) |
//! | `execute_tool {tool}` (real) | `tool_called` | the phase | `gen_ai.operation.name = execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.type = function`, `gen_ai.tool.call.id` (`step-N`), `mcp.method.name = tools/call`, `error.type = tool_error` when the result has `isError` (`call_failed` for a transport failure or timeout), status Error then; `cosmos.simulated = false`, `cosmos.step`, `cosmos.server`, `cosmos.node.id`, `cosmos.fidelity` (the step's fidelity, the one every view shows), `cosmos.simulation.span_id` and a **link** (`cosmos.link = simulation`) to its simulated twin; content: `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result` |
//! | `execute_tool {tool}` (simulated) | `node_simulated` (`call_simulated` for ReAct, named `execute_tool (simulated)`) | the node's span (the phase for ReAct) | `gen_ai.operation.name = execute_tool`, `gen_ai.tool.name`, `mcp.method.name`; `cosmos.simulated = true`, `cosmos.world_model`, `cosmos.node.id` or `cosmos.step`, `cosmos.simulated.is_error`, `cosmos.simulated.by_validator` (a validator's rejection, not a prediction), `cosmos.world_model.tokens`; content: `gen_ai.tool.call.result` (the prediction) |
//! | `search_node #{id}` | `node_added` … `node_evaluated` | its parent node's span (a root: the phase) | `cosmos.node.id`, `cosmos.node.parent`, `cosmos.node.depth`, `cosmos.node.prior`, `gen_ai.tool.name` or `cosmos.node.action` (`finish`, `root`); at evaluation `cosmos.node.verdict`, `cosmos.node.base_reward`, `cosmos.node.critic_reward`, `cosmos.node.reward`, `cosmos.node.terminal` |
//! | `search` | the search's first node … `search_finished` | the phase | `cosmos.search.root`, `.iterations`, `.expanded`, `.revisited`, `.widened`, `.retried`, `.fruitless`, `.stopped`; one span event `cosmos.node` per node with `cosmos.node.visits` and `cosmos.node.value` (mean) |
//! | `probe #{node}` / `execute_tool {tool}` | `node_probed` / `probe_called` | the run | `cosmos.probe = true`, `cosmos.simulated`, `cosmos.world_model`, `cosmos.node.id`, `error.type` |
//!
//! # Times, content and delivery
//!
//! - **Times** come from the trajectory: a span starts at `started_at + t_ms − latency_ms` and
//!   ends at `started_at + t_ms`, so an old run keeps its real durations.
//! - **Content** (prompts, arguments, results, the answer, the task's request) is sent only with
//!   `--content` (`--otel-content` live), as the GenAI conventions make it opt-in, and always
//!   through the redactor (the built-in rules and the values of `OPENAI_API_KEY`,
//!   `ANTHROPIC_API_KEY`, `HF_TOKEN`). Header values (`--header`) go to the receiver only; they are
//!   written nowhere. A command line is visible to every user of the machine, so give a key through
//!   the standard `OTEL_EXPORTER_OTLP_TRACES_HEADERS` or `OTEL_EXPORTER_OTLP_HEADERS`
//!   (`name=value,…`, values percent-encoded); these win over `--header` of the same name and go
//!   with every request, the first check included.
//! - **Delivery.** `export otel` waits for the receiver (batches of 512 spans, 10 s a request)
//!   and exits non-zero naming the runs not delivered whole. Live, a thread of its own sends the
//!   spans; the agent hands it each event through a bounded queue and never waits (a full queue
//!   drops and counts). The receiver is asked once before the first event, so even a one-step run
//!   says when it is down; any trouble is one `error` event (`source: "otel"`) per kind and a
//!   warning at the end, and the run and its trajectory go on whole.

mod events;
mod file;
mod live;
mod sending;
mod target;
mod trace;

pub use file::write_run as write_otlp_json;
pub use live::{LIVE_FINISH, Live, LiveTap, reachable};
pub use target::{Delivery, Target};
pub use trace::{Trace, export_file};
