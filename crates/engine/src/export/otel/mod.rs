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

mod events;
pub mod file;
mod live;
mod sending;
mod target;
mod trace;

pub use live::{LIVE_FINISH, Live, LiveTap, reachable};
pub use target::{Delivery, Target};
pub use trace::{Trace, export_file};
