//! LLM endpoints (docs/design.md, "LLM endpoints"): OpenAI-compatible chat completions, one
//! endpoint per role. `chat` is the port (one typed call), `http` its real implementation,
//! `client` the layer every role uses (JSON ladder, tools mode, recorded messages).

pub(crate) mod chat;
pub mod chat_wire;
pub mod client;
pub mod endpoints;
pub mod http_chat;
pub(crate) mod json;
