//! The server's listener. A request the HTTP layer cannot read at all (a URL over 64 KiB, headers
//! over its buffer, a malformed request line) never reaches the router: the HTTP layer answers
//! it by itself, with a status and an empty body. Those answers are rewritten here, on their
//! way out, into the contract's JSON error shape (with an `X-Request-Id`), so that every answer
//! a client gets can be read the same way.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll, ready},
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
};

/// A TCP listener whose connections answer unreadable requests with JSON errors.
pub struct JsonErrorsListener(pub TcpListener);

impl axum::serve::Listener for JsonErrorsListener {
    type Io = JsonErrors;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, addr) = axum::serve::Listener::accept(&mut self.0).await;
        (JsonErrors { inner: stream, replacing: None }, addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// The address a connection came from, for the handlers that count by it (`ConnectInfo`); the
/// accept loop ([`super::server`]) puts it in every request.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub std::net::SocketAddr);

/// A connection that rewrites the HTTP layer's own bodiless error answers.
pub struct JsonErrors {
    inner: TcpStream,
    /// The answer written in place of one of those: its bytes, how many are out, and the length
    /// of the original (what the HTTP layer is told was written).
    replacing: Option<(Vec<u8>, usize, usize)>,
}

/// The answer to write instead of `head`, if `head` is the HTTP layer's own answer to a request
/// it could not read: a 400, 414 or 431 with no body. The router's answers always have one.
fn replacement(head: &[u8]) -> Option<Vec<u8>> {
    let (status, reason, code, message) = if head.starts_with(b"HTTP/1.1 414 ") {
        (414, "URI Too Long", "uri_too_long", "the URL is too long (at most 64 KiB)")
    } else if head.starts_with(b"HTTP/1.1 431 ") {
        (431, "Request Header Fields Too Large", "headers_too_large", "the request's headers are too large")
    } else if head.starts_with(b"HTTP/1.1 400 ") {
        (400, "Bad Request", "invalid_request", "the request is not valid HTTP/1.1")
    } else {
        return None;
    };
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head_text = std::str::from_utf8(&head[..end]).ok()?.to_ascii_lowercase();
    if !head_text.contains("\r\ncontent-length: 0") || end + 4 != head.len() {
        return None;
    }
    Some(json_error_answer(status, reason, code, message, None))
}

/// A whole HTTP answer carrying the contract's JSON error, with an `X-Request-Id`, that closes
/// its connection: for answers written below the router (this rewrite, and connections refused
/// past a cap).
pub fn json_error_answer(status: u16, reason: &str, code: &str, message: &str, retry_after: Option<u64>) -> Vec<u8> {
    let mut body = serde_json::json!({"error": code, "message": message});
    let mut retry = String::new();
    if let Some(seconds) = retry_after {
        body["retry_after"] = seconds.into();
        retry = format!("retry-after: {seconds}\r\n");
    }
    let body = body.to_string();
    let id = crate::ids::new_id("req");
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         x-request-id: {id}\r\n{retry}connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

impl JsonErrors {
    /// Writes the rest of the replacement; ready with the original's length once all is out.
    fn poll_replacing(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        loop {
            let Some((bytes, written, reported)) = &mut self.replacing else { unreachable!("replacing") };
            if *written == bytes.len() {
                let reported = *reported;
                self.replacing = None;
                return Poll::Ready(Ok(reported));
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
    }
}

impl AsyncRead for JsonErrors {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for JsonErrors {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.replacing.is_none() {
            match replacement(buf) {
                Some(bytes) => self.replacing = Some((bytes, 0, buf.len())),
                None => return Pin::new(&mut self.inner).poll_write(cx, buf),
            }
        }
        self.poll_replacing(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        // The HTTP layer's own error answers are a head alone, in one slice: poll_write sees
        // it whole (and writes the rest of a replacement under way).
        let mut written = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(only), None) = (written.next(), written.next()) {
            return self.poll_write(cx, only);
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::replacement;

    #[test]
    fn only_bodiless_answers_of_the_http_layer_are_replaced() {
        let bare = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: Fri, 27 Nov 2026 10:00:00 GMT\r\n\r\n";
        let replaced = String::from_utf8(replacement(bare).expect("replaced")).unwrap();
        assert!(replaced.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{replaced}");
        assert!(replaced.contains("content-type: application/json"), "{replaced}");
        let body: serde_json::Value = serde_json::from_str(replaced.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(body["error"], "uri_too_long");
        // A router's answer has a body (and its head a length), and is left alone.
        assert!(replacement(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 40\r\n\r\n").is_none());
        assert!(replacement(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(replacement(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n{}").is_none());
    }
}
