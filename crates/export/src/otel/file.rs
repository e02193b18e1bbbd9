//! Traces written as OTLP JSON (`cosmos export otel --out FILE`), as a collector's file
//! exporter writes them: one `{"resourceSpans": […]}` object per line, a line per run. The
//! spans are the ones sent over OTLP/HTTP, put into OTLP's messages by `opentelemetry-proto`.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, Result};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SimpleSpanProcessor, SpanData, SpanExporter};

use cosmos_trajectory::reader::EventStream;
use cosmos_trajectory::redact::Redactor;

use super::sending::resource;
use super::trace::feed;

/// Keeps the spans of one run as they end.
#[derive(Debug, Clone, Default)]
struct Kept(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Kept {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().expect("kept spans").extend(batch);
        Ok(())
    }
}

/// Writes the run at `path` as one line of OTLP JSON to `out`; returns its span count and
/// the problems reading it (torn or corrupt lines, skipped).
pub fn write_run(
    path: &Path,
    content: bool,
    redactor: &Redactor,
    out: &mut dyn Write,
) -> Result<(usize, Vec<String>)> {
    let mut stream =
        EventStream::open(path).with_context(|| format!("opening {}", path.display()))?;
    let kept = Kept::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(SimpleSpanProcessor::new(kept.clone()))
        .with_max_events_per_span(1 << 20)
        .with_max_links_per_span(1024)
        .with_resource(resource())
        .build();
    feed(&mut stream, &provider, content, redactor)?;
    let spans = std::mem::take(&mut *kept.0.lock().expect("kept spans"));
    let count = spans.len();
    let request = ExportTraceServiceRequest {
        resource_spans: group_spans_by_resource_and_scope(
            spans,
            &ResourceAttributesWithSchema::from(&resource()),
        ),
    };
    serde_json::to_writer(&mut *out, &request)?;
    out.write_all(b"\n")?;
    let _ = provider.shutdown();
    let problems = stream.problems().iter().map(|p| p.to_string()).collect();
    Ok((count, problems))
}
