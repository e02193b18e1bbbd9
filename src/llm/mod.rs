//! LLM endpoints (DESIGN.md, "llm"): OpenAI-compatible chat completions, one endpoint per
//! role.

pub mod client;
pub mod config;
pub mod json;
