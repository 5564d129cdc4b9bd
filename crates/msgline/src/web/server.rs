//! The accept loop: each connection served by hyper with read timeouts, under caps on how many
//! connections the server and each client address hold at once.
//!
//! - A connection has `MSGLINE_HEADER_READ_TIMEOUT_SECONDS` to send a request's headers; the
//!   same time bounds how long a kept-alive connection sits idle before its next request.
//! - A request's body must have arrived `MSGLINE_BODY_READ_TIMEOUT_SECONDS` after its headers;
//!   else it is refused (400) and its connection closed.
//! - Past `MSGLINE_MAX_CONNECTIONS_PER_ADDRESS` from one address a new connection is answered
//!   429, past `MSGLINE_MAX_CONNECTIONS` in all 503, and closed before anything of it is read.

use std::{
    collections::HashMap,
    future::Future,
    net::{IpAddr, SocketAddr},
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use axum::{Router, body::Body, extract::ConnectInfo, http::Request};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::listener::{ClientAddr, JsonErrorsListener, json_error_answer};

/// What the loop is told of the configuration.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub max_connections: usize,
    pub max_connections_per_address: usize,
}

impl Limits {
    pub fn of(config: &crate::config::Config) -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(config.header_read_timeout_seconds),
            body_read_timeout: Duration::from_secs(config.body_read_timeout_seconds),
            max_connections: config.max_connections,
            max_connections_per_address: config.max_connections_per_address,
        }
    }
}

/// The connections open now, in all and per address.
#[derive(Default)]
struct Open {
    counts: Mutex<(usize, HashMap<IpAddr, usize>)>,
    /// Woken when the last one closes (for the shutdown's wait).
    drained: tokio::sync::Notify,
}

/// Why a connection was not taken.
enum Refused {
    Address,
    Total,
}

/// A connection's place among the open ones, given back when it is dropped.
struct Place {
    open: Arc<Open>,
    ip: IpAddr,
}

impl Open {
    fn take(self: &Arc<Self>, ip: IpAddr, limits: &Limits) -> Result<Place, Refused> {
        let mut counts = self.counts.lock().expect("connection counts");
        let (total, per) = &mut *counts;
        if *total >= limits.max_connections {
            return Err(Refused::Total);
        }
        let mine = per.entry(ip).or_default();
        if *mine >= limits.max_connections_per_address {
            return Err(Refused::Address);
        }
        *mine += 1;
        *total += 1;
        Ok(Place { open: self.clone(), ip })
    }

    fn total(&self) -> usize {
        self.counts.lock().expect("connection counts").0
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut counts = self.open.counts.lock().expect("connection counts");
        let (total, per) = &mut *counts;
        *total -= 1;
        if let Some(mine) = per.get_mut(&self.ip) {
            *mine -= 1;
            if *mine == 0 {
                per.remove(&self.ip);
            }
        }
        if *total == 0 {
            self.open.drained.notify_waiters();
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes, then lets each connection finish
/// the request it is answering (idle ones close at once) and returns when all have closed.
pub async fn serve(
    mut listener: JsonErrorsListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let open = Arc::new(Open::default());
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (io, address) = tokio::select! {
            accepted = axum::serve::Listener::accept(&mut listener) => accepted,
            () = &mut shutdown => break,
        };
        match open.take(address.ip(), &limits) {
            Ok(place) => {
                let router = router.clone();
                let stopping = stopping.clone();
                tokio::spawn(connection(io, address, router, limits, place, stopping));
            }
            Err(why) => {
                tokio::spawn(refuse(io, why));
            }
        }
    }
    let _ = stop.send(true);
    drop(listener);
    while open.total() > 0 {
        let drained = open.drained.notified();
        if open.total() == 0 {
            break;
        }
        // A Place dropped between the check and the wait is seen at the next look.
        let _ = tokio::time::timeout(Duration::from_millis(100), drained).await;
    }
}

async fn connection(
    io: super::listener::JsonErrors,
    address: SocketAddr,
    router: Router,
    limits: Limits,
    place: Place,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) {
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let mut request = request.map(|body| Body::new(Deadline::new(body, limits.body_read_timeout)));
        request.extensions_mut().insert(ConnectInfo(ClientAddr(address)));
        let mut router = router.clone();
        async move { tower_service::Service::call(&mut router, request).await }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let served = builder.serve_connection(TokioIo::new(io), service);
    let mut served = std::pin::pin!(served);
    let stop = async move {
        // The guard the wait gives is dropped here, before anything else is awaited.
        let _ = stopping.wait_for(|stop| *stop).await.map(|_| ());
    };
    tokio::select! {
        _ = served.as_mut() => {}
        () = stop => {
            served.as_mut().graceful_shutdown();
            let _ = served.await;
        }
    }
    drop(place);
}

/// Answers a connection past a cap and closes it. What the client sent meanwhile is read and
/// dropped for a moment, so that the close does not reset the answer away.
async fn refuse(mut io: super::listener::JsonErrors, why: Refused) {
    let answer = match why {
        Refused::Address => json_error_answer(
            429,
            "Too Many Requests",
            "rate_limited",
            "too many connections from this address (MSGLINE_MAX_CONNECTIONS_PER_ADDRESS)",
            Some(1),
        ),
        Refused::Total => json_error_answer(
            503,
            "Service Unavailable",
            "internal_error",
            "the server holds as many connections as it takes (MSGLINE_MAX_CONNECTIONS)",
            Some(1),
        ),
    };
    let done = async {
        io.write_all(&answer).await?;
        io.shutdown().await?;
        let mut sink = [0u8; 4096];
        while io.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), done).await;
}

/// A body that must have arrived whole by a deadline. Its timer is set only when the body is
/// not there at once (most requests' bodies come with their headers).
pub struct Deadline {
    body: Incoming,
    until: tokio::time::Instant,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Deadline {
    fn new(body: Incoming, within: Duration) -> Self {
        Deadline { body, until: tokio::time::Instant::now() + within, timer: None }
    }
}

/// The error a body that did not arrive in time ends with.
#[derive(Debug, thiserror::Error)]
#[error("the request's body did not arrive in time")]
pub struct BodyTimedOut;

impl http_body::Body for Deadline {
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let until = self.until;
        let timer = self.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(BodyTimedOut.into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Whether a body's error, or one it was wrapped in, is [`BodyTimedOut`].
pub fn timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error.is::<BodyTimedOut>() {
            return true;
        }
        next = error.source();
    }
    false
}
