//! Runs out of cosmos, where people already look, and data for the next world model:
//! accounts of one run as Markdown or JSON (`account.rs`), a training set of real calls
//! (`transitions.rs`), OpenTelemetry traces (`otel.rs`, also used live by `cosmos run
//! --otel-endpoint`), files written whole or not at all (`staged.rs`). The command is
//! `cli/export.rs`.

pub mod account;
pub mod otel;
pub mod staged;
pub mod transitions;

/// The redactor for exports: the built-in rules, and the keys of the usual environment
/// variables, should one have been pasted into a run.
pub fn redactor() -> crate::trajectory::redact::Redactor {
    crate::trajectory::redact::Redactor::with_secrets(
        ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN"]
            .into_iter()
            .filter_map(|var| std::env::var(var).ok()),
    )
}
