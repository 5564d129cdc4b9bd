//! Logging and traces. Logs: human-readable lines by default, JSON lines with
//! `MSGLINE_LOG_FORMAT=json`, filtered by `MSGLINE_LOG`. Traces: with `MSGLINE_OTLP_ENDPOINT`,
//! the spans of target [`crate::trace::TARGET`] go to that OTLP/HTTP collector, whatever
//! `MSGLINE_LOG` says; without it their callsites are off, and a send does what it did before
//! traces existed.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::{Resource, trace::SdkTracerProvider};
use tracing::Level;
use tracing_subscriber::{EnvFilter, Layer, filter::Targets, layer::SubscriberExt, util::SubscriberInitExt};

/// What the logging and tracing set up keeps: the trace exporter, flushed by [`Telemetry::stop`].
#[must_use = "the trace exporter is flushed by Telemetry::stop"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// Installs the log writer on stderr and, with `MSGLINE_OTLP_ENDPOINT`, the trace exporter. A
/// second call in one process (the tests) keeps the first's.
pub fn init(config: &crate::Config) -> anyhow::Result<Telemetry> {
    // The trace spans are never the log's: they would fill its lines' span lists.
    let logs = || {
        let filter = EnvFilter::try_new(&config.log).unwrap_or_else(|_| EnvFilter::new("info"));
        filter.add_directive(format!("{}=off", crate::trace::TARGET).parse().expect("a valid directive"))
    };
    let json = config.log_format == "json";
    let Some(url) = config.otlp_traces_url() else {
        // Without traces, the log's filter is the only one and filters for every layer: the
        // trace spans' callsites are off, and the subscriber is the one msgline had before.
        let builder = tracing_subscriber::fmt().with_env_filter(logs()).with_writer(std::io::stderr);
        let _ = if json { builder.json().try_init() } else { builder.try_init() };
        return Ok(Telemetry { provider: None });
    };
    let writer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let log = match json {
        true => writer.json().with_filter(logs()).boxed(),
        false => writer.with_filter(logs()).boxed(),
    };
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url)
        .build()
        .map_err(|e| anyhow::anyhow!("MSGLINE_OTLP_ENDPOINT: the trace exporter could not be made: {e}"))?;
    // The batch processor exports from a thread of its own, every few seconds and when stopped.
    let provider = SdkTracerProvider::builder()
        .with_resource(Resource::builder().with_service_name("msgline").build())
        .with_batch_exporter(exporter)
        .build();
    let traces = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("msgline"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_target(false)
        .with_filter(Targets::new().with_target(crate::trace::TARGET, Level::INFO));
    let _ = tracing_subscriber::registry().with(log).with(traces).try_init();
    Ok(Telemetry { provider: Some(provider) })
}

impl Telemetry {
    /// Sends the spans still waiting in the exporter, and stops it: without this the spans of
    /// the server's last seconds are lost.
    pub async fn stop(self) {
        let Some(provider) = self.provider else { return };
        // The exporter's client blocks: not on the runtime's threads.
        let stopped = tokio::task::spawn_blocking(move || {
            let _ = provider.force_flush();
            provider.shutdown()
        })
        .await;
        if let Ok(Err(error)) = stopped {
            eprintln!("the trace exporter did not stop cleanly: {error}");
        }
    }
}
