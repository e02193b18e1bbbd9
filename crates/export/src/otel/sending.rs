//! Sending: ended spans batched to the OTLP exporter from a thread of its own, and the
//! tracer provider that feeds it.

use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter, SpanProcessor};

use super::target::{Delivery, Target};

/// Spans sent per OTLP request.
pub(super) const BATCH: usize = 512;
/// How long one OTLP request may take.
pub(super) const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends ended spans in batches of [`BATCH`] from a thread of its own, one batch being sent
/// while the next is built: an export waits for the receiver (at most [`IN_FLIGHT`] batches
/// queued) instead of dropping spans. The live path puts its own bounded queue in front, so
/// the agent never waits.
#[derive(Debug)]
pub(super) struct Batcher {
    pub(super) pending: Mutex<Vec<SpanData>>,
    pub(super) to_sender: SyncSender<Job>,
}

/// Batches queued for the sending thread beyond the one it is sending.
pub(super) const IN_FLIGHT: usize = 2;

/// What the sending thread is asked to do.
pub(super) enum Job {
    Batch(Vec<SpanData>),
    /// Answer once everything before has been sent.
    Flush(SyncSender<()>),
}

impl Batcher {
    pub(super) fn start(
        exporter: opentelemetry_otlp::SpanExporter,
        delivery: Arc<Mutex<Delivery>>,
    ) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(IN_FLIGHT);
        std::thread::Builder::new()
            .name("otlp-send".into())
            .spawn(move || {
                for job in rx {
                    match job {
                        Job::Batch(batch) => {
                            let n = batch.len() as u64;
                            let result = futures::executor::block_on(exporter.export(batch));
                            let mut d = delivery.lock().expect("delivery lock");
                            d.spans += n;
                            if let Err(e) = result {
                                d.failed += n;
                                d.first_error.get_or_insert_with(|| e.to_string());
                            }
                        }
                        Job::Flush(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })
            .expect("starting the OTLP sending thread");
        Self {
            pending: Mutex::new(Vec::with_capacity(BATCH)),
            to_sender: tx,
        }
    }

    pub(super) fn send(&self, batch: Vec<SpanData>) {
        if !batch.is_empty() {
            let _ = self.to_sender.send(Job::Batch(batch));
        }
    }

    /// Sends what is pending and waits until every batch so far has been sent.
    pub(super) fn flush(&self) {
        let batch = std::mem::take(&mut *self.pending.lock().expect("pending lock"));
        self.send(batch);
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        if self.to_sender.send(Job::Flush(done)).is_ok() {
            let _ = wait.recv();
        }
    }
}

impl SpanProcessor for Batcher {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        let full = {
            let mut pending = self.pending.lock().expect("pending lock");
            pending.push(span);
            (pending.len() >= BATCH)
                .then(|| std::mem::replace(&mut *pending, Vec::with_capacity(BATCH)))
        };
        if let Some(batch) = full {
            self.send(batch);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.flush();
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        self.flush();
        Ok(())
    }
}

/// A tracer provider that sends to `target` and counts what it delivered in `delivery`.
pub(super) fn provider(
    target: &Target,
    delivery: Arc<Mutex<Delivery>>,
) -> Result<SdkTracerProvider> {
    // The exporter's reqwest client uses the same TLS provider as the LLM client.
    cosmos_engine::llm::install_tls_provider();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(target.url.clone())
        .with_timeout(REQUEST_TIMEOUT)
        .with_headers(target.headers.iter().cloned().collect())
        .build()
        .with_context(|| format!("an OTLP exporter for {}", target.shown()))?;
    let batcher = Batcher::start(exporter, delivery);
    let provider = SdkTracerProvider::builder()
        .with_span_processor(batcher)
        // A search's span carries one event per node; a long run's one per note.
        .with_max_events_per_span(1 << 20)
        .with_max_links_per_span(1024)
        .with_resource(resource())
        .build();
    Ok(provider)
}

/// The resource every cosmos trace is of.
pub(super) fn resource() -> Resource {
    Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "mcp-cosmos"),
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
        ])
        .build()
}
