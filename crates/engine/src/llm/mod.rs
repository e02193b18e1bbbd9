//! LLM endpoints (docs/design.md, "LLM endpoints"): OpenAI-compatible chat completions, one
//! endpoint per role. `chat` is the port (one typed call), `http` its real implementation,
//! `client` the layer every role uses (JSON ladder, tools mode, recorded messages).

pub(crate) mod chat;
pub(crate) mod chat_wire;
pub(crate) mod client;
pub(crate) mod endpoints;
pub(crate) mod http_chat;
pub(crate) mod json;

pub use chat_wire::{Message, ToolSpec};
pub use client::LlmClient;
pub use endpoints::{Endpoint, LlmConfig, OutputMode};
pub use http_chat::{MAX_REPLY_BYTES, MAX_REPLY_TEXT, install_tls_provider};
