//! OpenTelemetry: chains and their tool calls exported as traces and
//! metrics over OTLP/HTTP, configured only by the standard `OTEL_*`
//! environment, and W3C trace context (`traceparent`) carried in and out.
//!
//! chainbox describes its work with `tracing` spans (the chain's
//! [`CHAIN_SPAN`], a [`CALL_SPAN`] per tool call, [`APPROVAL_SPAN`] for an
//! approval wait); [`Telemetry`] turns them into OpenTelemetry spans with a
//! `tracing-opentelemetry` layer. Without an OTLP endpoint in the
//! environment no layer is installed, and a span nobody subscribes to is a
//! disabled handle: its fields are never evaluated. An embedder that
//! installs its own subscriber (with its own OpenTelemetry layer) gets the
//! same spans, nested under its current span by `tracing`'s usual
//! parenting.
//!
//! The metrics ([`Instruments`]) are recorded only once a meter is installed
//! ([`Telemetry::from_env`] does, or [`install_meter`] for an embedder's own
//! meter provider); until then recording is one atomic load.
//!
//! On the lowest floor: it knows nothing of chains, only names, strings and
//! numbers its callers give it.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::KeyValue;
#[cfg(feature = "otlp")]
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
#[cfg(feature = "otlp")]
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
#[cfg(feature = "otlp")]
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The span of one chain, start to result (target `chainbox::chain`).
pub const CHAIN_SPAN: &str = "chainbox.chain";
/// The span of one tool call (exported as `execute_tool {tool}`, the GenAI
/// semantic conventions' name), a child of its chain's span.
pub const CALL_SPAN: &str = "chainbox.tool_call";
/// The span of a wait for a human's approval, a child of its call's span.
pub const APPROVAL_SPAN: &str = "chainbox.approval";
/// The target of the events chainbox exports on its spans (a suspension).
pub const EVENT_TARGET: &str = "chainbox::otel";
/// The W3C trace-context header and `_meta` key, and the environment
/// variable a command tool and the CLI read it from.
pub const TRACEPARENT: &str = "traceparent";
/// The environment variable carrying a `traceparent` into the CLI and out
/// to command tools (the name OpenTelemetry's environment-carrier
/// convention uses).
pub const TRACEPARENT_ENV: &str = "TRACEPARENT";

/// The name a service gets when neither `OTEL_SERVICE_NAME` nor
/// `OTEL_RESOURCE_ATTRIBUTES` names it.
#[cfg(feature = "otlp")]
const DEFAULT_SERVICE_NAME: &str = "chainbox";

/// How long flushing the exporters may hold up the process's exit (an
/// unreachable collector must not hang `chainbox run`).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the OTLP exporters could not be built from the environment.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The trace exporter refused its configuration.
    #[cfg(feature = "otlp")]
    #[error("the OTLP trace exporter: {0}")]
    Traces(opentelemetry_otlp::ExporterBuildError),
    /// The metric exporter refused its configuration.
    #[cfg(feature = "otlp")]
    #[error("the OTLP metric exporter: {0}")]
    Metrics(opentelemetry_otlp::ExporterBuildError),
    /// The protocol variable names a protocol chainbox does not export
    /// with (`grpc`: only OTLP over HTTP is built in).
    #[error("{variable}={value:?}: chainbox exports OTLP over HTTP only (http/protobuf or http/json)")]
    Protocol {
        /// The variable that names it.
        variable: String,
        /// What it names.
        value: String,
    },
    /// The environment names a collector, and this chainbox was built
    /// without the `otlp` feature.
    #[error("OTEL_EXPORTER_OTLP_* names a collector, and chainbox was built without the `otlp` feature")]
    NotBuiltIn,
}

/// The exporters the environment asked for: traces, metrics, or both.
/// Keep it for the life of the process and [`Telemetry::shutdown`] it at the
/// end, which sends what is still buffered.
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
    metrics: Option<SdkMeterProvider>,
}

impl Telemetry {
    /// The exporters the standard environment configures, `None` when it
    /// configures none: traces when `OTEL_EXPORTER_OTLP_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, metrics when
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`
    /// is; neither with `OTEL_SDK_DISABLED=true`, and a signal whose
    /// `OTEL_{TRACES,METRICS}_EXPORTER` is `none` is off. The exporters
    /// read the rest themselves (`OTEL_EXPORTER_OTLP_PROTOCOL`
    /// `http/protobuf` or `http/json`, `OTEL_EXPORTER_OTLP_HEADERS`,
    /// timeouts); the SDK reads `OTEL_TRACES_SAMPLER`, `OTEL_SERVICE_NAME`
    /// and `OTEL_RESOURCE_ATTRIBUTES`. Installs the metrics' meter
    /// ([`install_meter`]).
    pub fn from_env() -> Result<Option<Self>, TelemetryError> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let wanted = |signal: &str| {
            let exporter = env(&format!("OTEL_{signal}_EXPORTER"));
            let endpoint =
                env("OTEL_EXPORTER_OTLP_ENDPOINT").or_else(|| env(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")));
            endpoint.is_some() && !exporter.is_some_and(|e| e.trim().eq_ignore_ascii_case("none"))
        };
        let (traces, metrics) = (wanted("TRACES"), wanted("METRICS"));
        if !traces && !metrics {
            return Ok(None);
        }
        exporters(traces, metrics).map(Some)
    }

    /// The layer exporting chainbox's spans (and its [`EVENT_TARGET`]
    /// events) to the trace exporter, for a `tracing_subscriber` registry;
    /// `None` when traces are off. Other targets' spans and chainbox's log
    /// events are not exported.
    pub fn layer<S>(&self) -> Option<impl Layer<S> + use<S>>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        let provider = self.traces.as_ref()?;
        let filter = tracing_subscriber::filter::filter_fn(|meta| {
            meta.target().starts_with("chainbox")
                && (meta.is_span() || meta.target() == EVENT_TARGET)
                && *meta.level() <= tracing::Level::INFO
        });
        Some(
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("chainbox"))
                .with_location(false)
                .with_threads(false)
                .with_filter(filter),
        )
    }

    /// Sends what is still buffered and stops the exporters (waiting at
    /// most a few seconds for an unreachable collector). For the end of the
    /// process: spans and metrics recorded after it are dropped.
    pub fn shutdown(&self) {
        if let Some(traces) = &self.traces
            && let Err(e) = traces.shutdown_with_timeout(SHUTDOWN_TIMEOUT)
        {
            eprintln!("chainbox: exporting the last spans failed: {e}");
        }
        if let Some(metrics) = &self.metrics
            && let Err(e) = metrics.shutdown_with_timeout(SHUTDOWN_TIMEOUT)
        {
            eprintln!("chainbox: exporting the last metrics failed: {e}");
        }
    }
}

/// The trace and metric exporters asked for (at least one).
#[cfg(feature = "otlp")]
fn exporters(traces: bool, metrics: bool) -> Result<Telemetry, TelemetryError> {
    let resource = resource();
    let traces = match traces {
        true => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(protocol("TRACES")?)
                .build()
                .map_err(TelemetryError::Traces)?;
            Some(
                SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource.clone())
                    .build(),
            )
        }
        false => None,
    };
    let metrics = match metrics {
        true => {
            let exporter = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(protocol("METRICS")?)
                .build()
                .map_err(TelemetryError::Metrics)?;
            let provider = SdkMeterProvider::builder()
                .with_periodic_exporter(exporter)
                .with_resource(resource)
                .build();
            install_meter(&provider.meter("chainbox"));
            Some(provider)
        }
        false => None,
    };
    Ok(Telemetry { traces, metrics })
}

/// Without the `otlp` feature there is nothing to export with.
#[cfg(not(feature = "otlp"))]
fn exporters(_traces: bool, _metrics: bool) -> Result<Telemetry, TelemetryError> {
    Err(TelemetryError::NotBuiltIn)
}

#[cfg(feature = "otlp")]
/// The OTLP encoding of `signal` (`TRACES`, `METRICS`): its own
/// `OTEL_EXPORTER_OTLP_{signal}_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`,
/// else protobuf, the specification's default (the exporter crate's own
/// default is JSON when both encodings are built).
fn protocol(signal: &str) -> Result<Protocol, TelemetryError> {
    let specific = format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL");
    let set = [specific.as_str(), "OTEL_EXPORTER_OTLP_PROTOCOL"]
        .into_iter()
        .find_map(|variable| {
            let value = std::env::var(variable).ok().filter(|v| !v.trim().is_empty())?;
            Some((variable, value))
        });
    let Some((variable, value)) = set else {
        return Ok(Protocol::HttpBinary);
    };
    match value.trim().to_ascii_lowercase().as_str() {
        "http/protobuf" => Ok(Protocol::HttpBinary),
        "http/json" => Ok(Protocol::HttpJson),
        _ => Err(TelemetryError::Protocol {
            variable: variable.to_owned(),
            value,
        }),
    }
}

/// The resource the SDK detects (`OTEL_SERVICE_NAME`,
/// `OTEL_RESOURCE_ATTRIBUTES`), named `chainbox` when neither names the
/// service.
#[cfg(feature = "otlp")]
fn resource() -> Resource {
    let detected = Resource::builder().build();
    let named = detected
        .get(&opentelemetry::Key::new("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    match named {
        true => detected,
        false => Resource::builder().with_service_name(DEFAULT_SERVICE_NAME).build(),
    }
}

/// The `traceparent` of the current `tracing` span (a tool call's, while
/// its tool runs), to hand on to what the call reaches (an MCP server's
/// `_meta`, a command tool's environment). `None` when the span is not
/// exported (no OpenTelemetry layer sees it, or it is not sampled in).
pub fn current_traceparent() -> Option<String> {
    let span = tracing::Span::current();
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    carrier.remove(TRACEPARENT)
}

/// The OpenTelemetry context a W3C `traceparent` (and optional
/// `tracestate`) names, for a span to continue that trace; `None` for a
/// value that is not a valid `traceparent`.
pub fn context_from_traceparent(traceparent: &str, tracestate: Option<&str>) -> Option<opentelemetry::Context> {
    let mut carrier = HashMap::new();
    carrier.insert(TRACEPARENT.to_owned(), traceparent.trim().to_owned());
    if let Some(state) = tracestate {
        carrier.insert("tracestate".to_owned(), state.to_owned());
    }
    let context = TraceContextPropagator::new().extract(&carrier);
    context.span().span_context().is_valid().then_some(context)
}

/// The context the `TRACEPARENT` environment variable names (and
/// `TRACESTATE` with it), if it holds a valid one.
pub fn context_from_env() -> Option<opentelemetry::Context> {
    let traceparent = std::env::var(TRACEPARENT_ENV).ok()?;
    let tracestate = std::env::var("TRACESTATE").ok();
    context_from_traceparent(&traceparent, tracestate.as_deref())
}

/// Marks `span` failed (`ERROR`) for an exporter: a chain or call that did
/// not end ok. Only for spans declared with an `otel.status_code` field.
pub fn record_error(span: &tracing::Span) {
    span.record("otel.status_code", "ERROR");
}

/// chainbox's metric instruments (names after OpenTelemetry's conventions:
/// dotted, units in the metadata).
pub struct Instruments {
    /// `chainbox.chains`: chains ended, by `chainbox.status` and
    /// `chainbox.interpreter`.
    chains: Counter<u64>,
    /// `chainbox.chain.duration` (s): a chain's time, by the same.
    chain_duration: Histogram<f64>,
    /// `chainbox.chains.suspended`: durable chains that suspended at a call
    /// waiting on a decision.
    suspended: Counter<u64>,
    /// `chainbox.tool_calls`: tool calls ended, by `gen_ai.tool.name` and
    /// `chainbox.status`.
    calls: Counter<u64>,
    /// `chainbox.tool_call.duration` (s): a call's time, by the same.
    call_duration: Histogram<f64>,
}

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

/// Records chainbox's metrics with `meter` from now on (the first meter
/// installed stays). [`Telemetry::from_env`] installs one for its exporter;
/// an embedder with its own meter provider passes its meter here.
pub fn install_meter(meter: &Meter) {
    let _ = INSTRUMENTS.get_or_init(|| Instruments {
        chains: meter
            .u64_counter("chainbox.chains")
            .with_description("Chains ended, by status and interpreter")
            .build(),
        chain_duration: meter
            .f64_histogram("chainbox.chain.duration")
            .with_unit("s")
            .with_description("How long a chain ran")
            .build(),
        suspended: meter
            .u64_counter("chainbox.chains.suspended")
            .with_description("Durable chains suspended at a call waiting on a decision")
            .build(),
        calls: meter
            .u64_counter("chainbox.tool_calls")
            .with_description("Tool calls ended, by tool and status")
            .build(),
        call_duration: meter
            .f64_histogram("chainbox.tool_call.duration")
            .with_unit("s")
            .with_description("How long a tool call took")
            .build(),
    });
}

/// Counts a chain that ended with `status` on `interpreter` after
/// `duration`; nothing without an installed meter.
pub fn chain_ended(status: &'static str, interpreter: &'static str, duration: Duration) {
    let Some(instruments) = INSTRUMENTS.get() else { return };
    let attributes = [
        KeyValue::new("chainbox.status", status),
        KeyValue::new("chainbox.interpreter", interpreter),
    ];
    instruments.chains.add(1, &attributes);
    instruments.chain_duration.record(duration.as_secs_f64(), &attributes);
    if status == "suspended" {
        instruments.suspended.add(1, &attributes[1..]);
    }
}

/// Counts a tool call to `tool` that ended with `status` after `duration`;
/// nothing without an installed meter.
pub fn call_ended(tool: &str, status: &'static str, duration: Duration) {
    let Some(instruments) = INSTRUMENTS.get() else { return };
    let attributes = [
        KeyValue::new("gen_ai.tool.name", tool.to_owned()),
        KeyValue::new("chainbox.status", status),
    ];
    instruments.calls.add(1, &attributes);
    instruments.call_duration.record(duration.as_secs_f64(), &attributes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_traceparent_names_its_trace() {
        let context =
            context_from_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", None).expect("valid");
        let span = context.span();
        let span_context = span.span_context();
        assert_eq!(span_context.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(span_context.span_id().to_string(), "00f067aa0ba902b7");
    }

    #[test]
    fn a_malformed_traceparent_names_no_context() {
        assert!(context_from_traceparent("not-a-traceparent", None).is_none());
        assert!(context_from_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01", None).is_none());
    }

    #[test]
    fn without_a_subscriber_there_is_no_traceparent() {
        let span = tracing::info_span!("x");
        let _entered = span.enter();
        assert_eq!(current_traceparent(), None);
    }
}
