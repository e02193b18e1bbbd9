//! A live run's export: events seen through the recorder's tap, queued (bounded) to a worker
//! that feeds the trace, so the agent never waits for a collector.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result};
use opentelemetry::trace::TracerProvider;

use cosmos_trajectory::event::{Event, Header};
use cosmos_trajectory::redact::Redactor;

use super::sending::provider;
use super::target::{Delivery, Target};
use super::trace::Trace;

/// Events a live export holds while the exporter is behind; beyond it they are dropped and
/// counted, so the agent never waits for a collector.
const LIVE_QUEUE: usize = 4096;
/// A live export sends what has ended after this long without a new event.
const LIVE_FLUSH: Duration = Duration::from_millis(500);
/// ... and at least this often while events keep coming.
const LIVE_FLUSH_AT_LEAST: Duration = Duration::from_secs(2);
/// The longest a finished run waits for its last spans to be taken: a receiver that accepts
/// and never answers holds the exit no longer (the spans still on their way are counted lost).
pub const LIVE_FINISH: Duration = Duration::from_secs(2);

/// A live run's export: events go into a bounded queue and a thread of its own turns them
/// into spans and sends them, so the agent never waits; when the queue is full an event is
/// dropped and counted. Trouble (a receiver that cannot be reached or refuses spans, events
/// dropped) reaches the run through [`LiveTap`] as `error` events.
pub struct Live {
    queue: Option<SyncSender<Event>>,
    shared: Arc<Shared>,
    worker: Option<std::thread::JoinHandle<()>>,
    /// Says when the export thread has ended.
    finished: Receiver<()>,
    target: Target,
}

/// What the export thread and the run's tap share.
#[derive(Debug, Default)]
struct Shared {
    /// Filled by the sending thread as batches go out.
    delivery: Arc<Mutex<Delivery>>,
    /// Events dropped because the queue was full.
    dropped: AtomicU64,
    /// Trouble not yet recorded in the run.
    trouble: Mutex<Vec<String>>,
}

/// The run's side of a live export: hands each event to the export thread.
pub struct LiveTap {
    queue: SyncSender<Event>,
    shared: Arc<Shared>,
    /// Trouble already recorded: failed deliveries, dropped events.
    told_failure: bool,
    told_drop: bool,
    shown: String,
}

impl Live {
    /// Starts the export of the run whose header is `header`; the tap goes to the run's
    /// recorder, the `Live` is finished after the run. `checked` is what [`reachable`] said,
    /// asked before the run starts so a receiver that is down is in the trajectory however
    /// short the run is.
    pub fn start(
        header: &Header,
        target: Target,
        redactor: Redactor,
        checked: std::result::Result<(), String>,
    ) -> Result<(Self, LiveTap)> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Event>(LIVE_QUEUE);
        let shared = Arc::new(Shared::default());
        if let Err(why) = checked {
            shared.trouble.lock().expect("trouble lock").push(format!(
                "cannot send spans to {}: {why}; the run goes on, its trajectory is whole",
                target.shown()
            ));
        }
        let (ended, finished) = std::sync::mpsc::sync_channel::<()>(1);
        let worker = {
            let header = header.clone();
            let target = target.clone();
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("otel-export".into())
                .spawn(move || {
                    live_worker(&header, &target, redactor, &shared, rx);
                    let _ = ended.send(());
                })
                .context("starting the OpenTelemetry export thread")?
        };
        let tap = LiveTap {
            queue: tx.clone(),
            shared: Arc::clone(&shared),
            told_failure: false,
            told_drop: false,
            shown: target.shown(),
        };
        Ok((
            Self {
                queue: Some(tx),
                shared,
                worker: Some(worker),
                finished,
                target,
            },
            tap,
        ))
    }

    /// Ends the trace and waits for the last spans to be sent (the run's tap must be gone),
    /// [`LIVE_FINISH`] at most; says what was lost, if anything (`None` when everything
    /// arrived).
    pub fn finish(mut self) -> Option<String> {
        self.queue.take();
        let mut problems = Vec::new();
        match self.finished.recv_timeout(LIVE_FINISH) {
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                if let Some(worker) = self.worker.take() {
                    let _ = worker.join();
                }
            }
            // The thread is left to its request; the process does not wait for it.
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => problems.push(format!(
                "{} did not take the last spans within {} s; they were not exported",
                self.target.shown(),
                LIVE_FINISH.as_secs()
            )),
        }
        let delivery = std::mem::take(&mut *self.shared.delivery.lock().expect("delivery lock"));
        let dropped = self.shared.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            problems.push(format!(
                "{dropped} event(s) were not exported: the exporter fell behind"
            ));
        }
        problems.extend(delivery.problem(&self.target.shown()));
        (!problems.is_empty()).then(|| problems.join("; "))
    }
}

impl cosmos_engine::agent::Tap for LiveTap {
    fn source(&self) -> cosmos_trajectory::event::ErrorSource {
        cosmos_trajectory::event::ErrorSource::Otel
    }

    fn see(&mut self, event: &Event) {
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
            self.queue.try_send(event.clone())
        {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn trouble(&mut self) -> Vec<String> {
        let mut out = std::mem::take(&mut *self.shared.trouble.lock().expect("trouble lock"));
        if !self.told_failure {
            let delivery = self.shared.delivery.lock().expect("delivery lock");
            if let Some(problem) = delivery.problem(&self.shown) {
                self.told_failure = true;
                out.push(format!(
                    "{problem}; the run goes on, its trajectory is whole"
                ));
            }
        }
        if !self.told_drop && self.shared.dropped.load(Ordering::Relaxed) > 0 {
            self.told_drop = true;
            out.push(
                "the OpenTelemetry exporter fell behind; some events were not exported".into(),
            );
        }
        out
    }
}

/// Asks the receiver whether it takes OTLP at all (an empty export request, at most 3 s), so
/// a receiver that is down is said at the start of the run, not at its end. Async, so the
/// cells of a sweep that share a runtime do not wait on each other's check.
pub async fn reachable(target: &Target) -> std::result::Result<(), String> {
    cosmos_engine::llm::install_tls_provider();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .map_err(|e| e.to_string())?;
    let mut request = client
        .post(&target.url)
        .header("content-type", "application/x-protobuf")
        .body(Vec::new());
    for (k, v) in &target.headers {
        request = request.header(k, v);
    }
    match request.send().await {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) => Err(format!("it answered {}", r.status())),
        // reqwest names the URL without its credentials.
        Err(e) => Err(format!("{:#}", anyhow::Error::new(e))),
    }
}

fn live_worker(
    header: &Header,
    target: &Target,
    redactor: Redactor,
    shared: &Shared,
    events: Receiver<Event>,
) {
    let provider = match provider(target, shared.delivery.clone()) {
        Ok(p) => p,
        Err(e) => {
            shared
                .trouble
                .lock()
                .expect("trouble lock")
                .push(format!("{e:#}"));
            // Drain the queue so the run never blocks on it.
            for _ in events {}
            return;
        }
    };
    let tracer = provider.tracer("mcp-cosmos");
    let mut trace = Trace::new(header, tracer, target.content, redactor);
    let mut flushed = std::time::Instant::now();
    loop {
        match events.recv_timeout(LIVE_FLUSH) {
            Ok(event) => trace.event(&event),
            // Quiet for a while: what has ended so far goes out, so the run shows as it runs.
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let _ = provider.force_flush();
                flushed = std::time::Instant::now();
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
        // A run that is never quiet still shows up every few seconds.
        if flushed.elapsed() >= LIVE_FLUSH_AT_LEAST {
            let _ = provider.force_flush();
            flushed = std::time::Instant::now();
        }
    }
    trace.finish();
    let _ = provider.force_flush();
    let _ = provider.shutdown();
}
