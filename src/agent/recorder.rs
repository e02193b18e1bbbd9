//! The real event sink: events written to the trajectory as they happen and, for a live view,
//! sent over a channel. A hook lets `cosmos run --no-tui` print progress.

use std::sync::mpsc::Sender;
use std::time::Instant;

use anyhow::Result;

use super::ports::{EventSink, Tap};
use crate::trajectory::event::{Event, EventBody};
use crate::trajectory::writer::Writer;

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

    /// Writes an event (flushed before this returns) and passes it on.
    pub fn record(&mut self, body: EventBody) -> Result<Event> {
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
        let trouble = match &mut self.tap {
            Some(tap) => {
                tap.see(&event);
                tap.trouble()
                    .into_iter()
                    .map(|message| (tap.source(), message))
                    .collect()
            }
            None => Vec::new(),
        };
        for (source, message) in trouble {
            self.record(EventBody::Error {
                source: source.to_string(),
                name: None,
                message,
                stderr_tail: None,
            })?;
        }
        Ok(event)
    }
}

impl EventSink for Recorder {
    fn emit(&mut self, body: EventBody) -> Result<()> {
        self.record(body).map(drop)
    }
}
