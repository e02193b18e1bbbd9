//! `cosmos-export`: runs out of cosmos, where people already look, and data for the next world
//! model (a crate above the engine, so the OpenTelemetry crates and a change here rebuild only
//! the app above it):
//! accounts of one run as Markdown or JSON (`account.rs`), an ATIF trajectory (`atif_writer.rs`), a training set of real calls
//! (`transitions.rs`), OpenTelemetry traces (`otel/`, also used live by `cosmos run
//! --otel-endpoint`), each file written whole or not at all. The command is
//! `cli/export.rs`.
//!
//! `account.rs`: one run as Markdown (task, settings, the plan and why from
//! `trajectory::plan_why`, steps simulated beside real with fidelity, answer, metrics from
//! `metrics::run::of_run`, notes) or as one JSON document (header, events, metrics).
//! `transitions.rs`: one training example per real call, read by `wm_eval::recorded_calls` (each
//! call with the real steps before it); the input is `world_model::simulation_messages`, the
//! same function the `llm` world model sends, the target `simulation_reply`; deduplicated,
//! redacted, split by a stable hash of the task id, with a datasheet. `otel/`: a run as one
//! OpenTelemetry trace, one job per file: `target.rs` (the endpoint and headers, credentials kept
//! out of messages; `Delivery`, what arrived), `sending.rs` (spans sent in batches by our own
//! batcher's thread, `otlp-send`, at most two batches queued, so a file's export waits rather
//! than drops; no async runtime), `trace.rs` (`Trace`, the one mapping from events to spans, with
//! times from the trajectory's clock, fed by a file for `export otel`), `events.rs` (one function
//! per event kind), `live.rs` (`Live` during `run --otel-endpoint`, whose `LiveTap` is the run
//! recorder's `agent::Tap`); content only with `--content`, always redacted. Every
//! file an export writes goes through `cosmos_trajectory::out_file::Staged` (written under a
//! random name beside it and renamed when whole), so a cut-off export never leaves a torn file
//! or a new file beside an old one it contradicts, and a planted name is never written through.
//! `mod.rs` holds the exports' redactor (`export::redactor`); the command is `cli/export.rs`.

pub mod account;
pub mod atif_writer;
pub mod otel;
pub mod transitions;

/// The redactor for exports: the built-in rules, and the value of every environment variable
/// named as a credential is (any API key, a role's `api_key_env`), should one have been pasted
/// into a run.
pub fn redactor() -> cosmos_trajectory::redact::Redactor {
    use cosmos_trajectory::redact::Redactor;
    Redactor::with_secrets(Redactor::environment_secrets())
}

/// A writer that passes its text on a line at a time, each line through `redactor`: an
/// export's account never prints a key the environment names, and holds one line at most.
pub struct Redacting<W: std::io::Write> {
    inner: W,
    redactor: cosmos_trajectory::redact::Redactor,
    line: Vec<u8>,
}

impl<W: std::io::Write> Redacting<W> {
    /// Redacts what goes to `inner`.
    pub fn new(inner: W, redactor: cosmos_trajectory::redact::Redactor) -> Self {
        Self {
            inner,
            redactor,
            line: Vec::new(),
        }
    }

    fn pass(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(bytes);
        match self.redactor.redact_str(&text) {
            Some(clean) => self.inner.write_all(clean.as_bytes()),
            None => self.inner.write_all(bytes),
        }
    }
}

impl<W: std::io::Write> std::io::Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Only the new bytes are looked through for a line's end: looking through the whole
        // held line at every write made a one-line document (JSON) quadratic in its size.
        let held = self.line.len();
        self.line.extend_from_slice(buf);
        if let Some(end) = buf.iter().rposition(|&b| b == b'\n').map(|at| held + at) {
            let rest = self.line.split_off(end + 1);
            let lines = std::mem::replace(&mut self.line, rest);
            // Line by line: a key never spans lines, and the redactor reads one at a time.
            for line in lines.split_inclusive(|&b| b == b'\n') {
                self.pass(line)?;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let rest = std::mem::take(&mut self.line);
        if !rest.is_empty() {
            self.pass(&rest)?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn written_in_any_pieces_the_output_is_the_whole_text_redacted() {
        let key = "sk-live-0123456789abcdefghij";
        let text = format!(
            "{{\"a\":\"{key}\",\"b\":\"{}\"}}\nsecond {key} line\nlast",
            "x".repeat(5000)
        );
        let whole = cosmos_trajectory::redact::Redactor::new()
            .redact_str(&text)
            .unwrap();
        for piece in [1, 7, 64, 4096] {
            let mut out = Redacting::new(Vec::new(), cosmos_trajectory::redact::Redactor::new());
            for chunk in text.as_bytes().chunks(piece) {
                out.write_all(chunk).unwrap();
            }
            out.flush().unwrap();
            let written = String::from_utf8(out.inner).unwrap();
            assert_eq!(written, whole, "in pieces of {piece}");
            assert!(!written.contains(key));
        }
    }
}
