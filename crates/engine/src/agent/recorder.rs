//! The real event sink: events written to the trajectory as they happen and, for a live view,
//! sent over a channel. A hook lets `cosmos run --no-tui` print progress.
//!
//! The real event sink: events to the writer, to the live channel, to a progress
//! hook, and to a `Tap` (an exporter that must not block; its trouble becomes `error` events).

use std::sync::mpsc::Sender;
use std::time::Instant;

use anyhow::Result;

use super::ports::{EventSink, Tap};
use cosmos_trajectory::event::{Event, EventBody};
use cosmos_trajectory::writer::Writer;

/// Called with every event as written (for progress lines).
pub type Hook = Box<dyn FnMut(&Event) + Send>;

/// Writes events with times relative to the run's start.
pub struct Recorder {
    writer: Writer,
    start: Instant,
    live: Option<Sender<Event>>,
    hook: Option<Hook>,
    tap: Option<Box<dyn Tap>>,
}

impl Recorder {
    /// A recorder over a writer whose header is already written.
    pub fn new(writer: Writer, live: Option<Sender<Event>>, hook: Option<Hook>) -> Self {
        Self {
            writer,
            start: Instant::now(),
            live,
            hook,
            tap: None,
        }
    }

    /// Also shows every event to `tap`, and records its trouble as `error` events.
    pub fn with_tap(mut self, tap: Option<Box<dyn Tap>>) -> Self {
        self.tap = tap;
        self
    }

    /// Milliseconds since the run started.
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Writes an event (flushed before this returns) and passes it on; then any trouble the
    /// tap has had becomes `error` events (never after `run_finished`).
    pub fn record(&mut self, body: EventBody) -> Result<Event> {
        let event = self.pass_on(body)?;
        if matches!(event.body, EventBody::RunFinished { .. }) {
            // Nothing follows `run_finished`: later trouble is the caller's warning.
            return Ok(event);
        }
        let Some(tap) = &mut self.tap else {
            return Ok(event);
        };
        let source = tap.source();
        for message in tap.trouble() {
            // Written and shown, without asking the tap again: its trouble cannot feed itself.
            self.pass_on(EventBody::Error {
                source: source.clone(),
                name: None,
                message,
                stderr_tail: None,
                step: None,
            })?;
        }
        Ok(event)
    }

    /// Writes an event and hands it to the live view, the hook and the tap.
    fn pass_on(&mut self, body: EventBody) -> Result<Event> {
        let event = self.writer.write(self.now_ms(), body)?;
        if let Some(tx) = &self.live {
            // A closed live view is not an error: the run goes on, on disk.
            if tx.send(event.clone()).is_err() {
                self.live = None;
            }
        }
        if let Some(hook) = &mut self.hook {
            hook(&event);
        }
        if let Some(tap) = &mut self.tap {
            tap.see(&event);
        }
        Ok(event)
    }
}

impl EventSink for Recorder {
    fn emit(&mut self, body: EventBody) -> Result<()> {
        self.record(body).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosmos_trajectory::event::{ErrorSource, Phase, RunStatus};
    use cosmos_trajectory::redact::Redactor;
    use cosmos_trajectory::synthetic::{self, Spec};

    /// A tap in trouble at every look.
    struct Troubled(u32);

    impl Tap for Troubled {
        fn source(&self) -> ErrorSource {
            ErrorSource::Otel
        }
        fn see(&mut self, _event: &Event) {}
        fn trouble(&mut self) -> Vec<String> {
            self.0 += 1;
            vec![format!("trouble {}", self.0)]
        }
    }

    #[test]
    fn a_taps_trouble_is_an_error_event_and_nothing_follows_run_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        let header = synthetic::header(&Spec::default());
        let writer = Writer::create(&path, &header, Redactor::new(), None).unwrap();
        let mut rec = Recorder::new(writer, None, None).with_tap(Some(Box::new(Troubled(0))));
        rec.emit(EventBody::Phase { phase: Phase::Plan }).unwrap();
        rec.emit(EventBody::RunFinished {
            status: RunStatus::Completed,
            error: None,
            ending: None,
            totals: Default::default(),
            end_digest: Default::default(),
            state_match: Default::default(),
        })
        .unwrap();
        let run = cosmos_trajectory::run::Run::open(&path).unwrap();
        let kinds: Vec<String> = (0..run.len())
            .map(|i| run.event(i).body.kind().to_string())
            .collect();
        assert_eq!(kinds, ["phase", "error", "run_finished"]);
        assert!(matches!(
            &run.event(1).body,
            EventBody::Error { source, message, .. } if *source == ErrorSource::Otel && message == "trouble 1"
        ));
    }
}
