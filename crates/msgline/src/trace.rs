//! Traces of a send (`MSGLINE_OTLP_ENDPOINT`, docs/operations.md "Traces"): the spans are
//! `tracing` spans of the target [`TARGET`], which `telemetry` hands to the OTLP exporter when
//! an endpoint is set. Without one their callsites are turned off where the logging is set up,
//! so a span costs a check of the callsite's cached interest, and nothing is kept here.
//!
//! A send goes on in other tasks (the dispatcher's call to the line) and other requests (the
//! line's report), so [`Links`] keeps, by message id, the span contexts those later spans are
//! made children of: in this instance's memory, bounded and aged out. A send continued by
//! another instance, or after a restart, or after [`KEPT`], starts a trace of its own, which
//! still carries `msgline.message_id`.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use opentelemetry::{
    Context,
    trace::{SpanContext, TraceContextExt},
};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The target of every span meant for the trace exporter (and of nothing else). Numbers are
/// recorded on them as `i64`: the exporter's bridge turns an unsigned one into text.
pub const TARGET: &str = "msgline::trace";

/// The name of a request's span (named for its method and route when exported).
pub const REQUEST: &str = "http.request";

/// How long a send's spans can be continued from: its line's report usually comes within
/// seconds; one later than this starts a trace of its own.
pub const KEPT: Duration = Duration::from_secs(600);
/// Most sends remembered at once (about 200 bytes each); past that the oldest go first.
const MOST: usize = 50_000;

/// Where each recent send's trace goes on, by message id; empty and free with tracing off.
#[derive(Clone, Default)]
pub struct Links(Option<Arc<Mutex<Table>>>);

#[derive(Default)]
struct Table {
    by_message: HashMap<String, Entry>,
    /// Message ids in the order they were noted, with when: the ones to forget first.
    order: VecDeque<(Instant, String)>,
}

struct Entry {
    /// The span the send was accepted in (its request, or the agent run that sent it).
    send: SpanContext,
    /// The latest call of the line for it.
    call: Option<SpanContext>,
}

impl Links {
    /// Links that keep something only when `on` (an OTLP endpoint is configured).
    pub fn new(on: bool) -> Self {
        Links(on.then(Default::default))
    }

    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Notes the current span as the one the send of `message_id` was accepted in.
    pub fn begin(&self, message_id: &str) {
        let Some(table) = &self.0 else { return };
        let current = Span::current();
        let Some(send) = span_context(&current) else { return };
        if current.metadata().is_some_and(|m| m.name() == REQUEST) {
            current.record("msgline.message_id", message_id);
        }
        let now = Instant::now();
        let mut table = table.lock().expect("trace links lock");
        table.forget_old(now);
        table.by_message.insert(message_id.to_string(), Entry { send, call: None });
        table.order.push_back((now, message_id.to_string()));
    }

    /// Notes `call` as the latest call of the line for `message_id`: its report's parent.
    pub fn called(&self, message_id: &str, call: &Span) {
        let Some(table) = &self.0 else { return };
        let Some(context) = span_context(call) else { return };
        if let Some(entry) = table.lock().expect("trace links lock").by_message.get_mut(message_id) {
            entry.call = Some(context);
        }
    }

    /// Makes `span` (just made, not yet entered) a child of the span `message_id`'s send was
    /// accepted in, when that is known here.
    pub fn under_send(&self, span: &Span, message_id: &str) {
        self.adopt(span, message_id, |entry| Some(&entry.send));
    }

    /// Makes `span` a child of the latest call of the line for `message_id` (or of its send).
    pub fn under_call(&self, span: &Span, message_id: &str) {
        self.adopt(span, message_id, |entry| entry.call.as_ref().or(Some(&entry.send)));
    }

    fn adopt(&self, span: &Span, message_id: &str, parent: impl Fn(&Entry) -> Option<&SpanContext>) {
        let Some(table) = &self.0 else { return };
        let parent = table.lock().expect("trace links lock").by_message.get(message_id).and_then(parent).cloned();
        if let Some(parent) = parent {
            // Fails only for a span already started or not exported: it then stays where it is.
            let _ = span.set_parent(Context::new().with_remote_span_context(parent));
        }
    }
}

impl Table {
    fn forget_old(&mut self, now: Instant) {
        while let Some((at, _)) = self.order.front() {
            if now.duration_since(*at) < KEPT && self.order.len() < MOST {
                break;
            }
            if let Some((_, id)) = self.order.pop_front() {
                self.by_message.remove(&id);
            }
        }
    }
}

/// The exported span behind `span`, if it is one.
fn span_context(span: &Span) -> Option<SpanContext> {
    let context = span.context();
    let found = context.span().span_context().clone();
    found.is_valid().then_some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_that_are_off_keep_nothing() {
        let links = Links::new(false);
        links.begin("msg_1");
        links.called("msg_1", &Span::none());
        assert!(!links.is_on());
    }

    #[test]
    fn the_oldest_sends_are_forgotten_first() {
        let mut table = Table::default();
        let start = Instant::now();
        for n in 0..3 {
            table.order.push_back((start, format!("msg_{n}")));
            table.by_message.insert(format!("msg_{n}"), Entry { send: SpanContext::empty_context(), call: None });
        }
        table.forget_old(start + KEPT);
        assert!(table.by_message.is_empty() && table.order.is_empty());
    }
}
