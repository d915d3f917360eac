//! The one HTTP server of the operator and the pinger (`/metrics`,
//! `/healthz`, `/readyz`): hyper's HTTP/1.1 server, with the limits of
//! docs/reference.md, "Metrics endpoints": a request head of at most
//! [`MAX_HEAD`] bytes, a connection closed after [`READ_TIMEOUT`], one
//! request per connection, and at most [`MAX_CONNECTIONS`] connections
//! served at once (more wait in the listen queue until one ends). A body
//! the routes compressed goes out gzip-encoded to a client that takes it
//! ([`crate::gzip`]).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, VARY};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Longest request head (request line and header fields); a longer one is
/// answered 431 and the connection closed.
pub const MAX_HEAD: usize = 8 * 1024;
/// Time a connection has to send its head and take the answer.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;

/// Content type of a Prometheus scrape.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Content type of everything else.
pub const TEXT: &str = "text/plain; charset=utf-8";

/// A request, as the routes read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask<'a> {
    /// The method.
    pub method: &'a str,
    /// The path, without the query.
    pub path: &'a str,
    /// Whether the client takes a gzip body (its `Accept-Encoding`).
    pub gzip: bool,
}

impl<'a> Ask<'a> {
    /// A GET of `path` by a client that takes no compression.
    pub fn get(path: &'a str) -> Self {
        Ask {
            method: "GET",
            path,
            gzip: false,
        }
    }
}

/// What an answer carries.
#[derive(Debug, PartialEq, Eq)]
pub enum Body {
    /// Text, sent as it is.
    Plain(String),
    /// A gzip stream, sent with `Content-Encoding: gzip`.
    Gzip(Vec<u8>),
}

/// An answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    /// HTTP status code.
    pub code: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Body.
    pub body: Body,
}

impl Response {
    /// A plain-text answer.
    pub fn text(code: u16, body: &str) -> Self {
        Response::ok(TEXT, body.into()).with_code(code)
    }

    /// A 200 of `content_type` with `body`.
    pub fn ok(content_type: &'static str, body: String) -> Self {
        Response {
            code: 200,
            content_type,
            body: Body::Plain(body),
        }
    }

    fn with_code(mut self, code: u16) -> Self {
        self.code = code;
        self
    }

    /// The body's text; empty for a compressed one.
    pub fn plain(&self) -> &str {
        match &self.body {
            Body::Plain(s) => s,
            Body::Gzip(_) => "",
        }
    }
}

/// What a server answers, by method and path (without the query).
pub trait Routes: Send + Sync + 'static {
    /// The answer to `ask`.
    fn route(&self, ask: &Ask<'_>) -> Response;
}

/// hyper's form of what `routes` answers to `req`.
fn answer<B>(routes: &dyn Routes, req: &Request<B>) -> hyper::Response<Full<Bytes>> {
    let gzip = req
        .headers()
        .get_all(ACCEPT_ENCODING)
        .iter()
        .any(|v| v.to_str().is_ok_and(crate::gzip::accepted));
    let ask = Ask {
        method: req.method().as_str(),
        path: req.uri().path(),
        gzip,
    };
    let r = routes.route(&ask);
    let (body, encoded) = match r.body {
        Body::Plain(s) => (Bytes::from(s), false),
        Body::Gzip(b) => (Bytes::from(b), true),
    };
    let mut out = hyper::Response::new(Full::new(body));
    *out.status_mut() = StatusCode::from_u16(r.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = out.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(r.content_type));
    if encoded {
        headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        headers.insert(VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    out
}

/// Serves `listener` until the task is dropped; accept errors are logged
/// and retried.
pub async fn serve(listener: TcpListener, routes: Arc<dyn Routes>) {
    let mut http = http1::Builder::new();
    http.keep_alive(false)
        .max_header_size(MAX_HEAD)
        // The header names as the hand-written server sent them, for
        // whoever reads the answers by eye or by grep.
        .title_case_headers(true)
        // The whole connection is bounded by READ_TIMEOUT below, on the
        // runtime's clock; hyper's own head timeout would need a timer.
        .header_read_timeout(None);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        // A slot first: past the limit, connections wait unaccepted.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        match listener.accept().await {
            Ok((stream, _)) => {
                let routes = routes.clone();
                let service = service_fn(move |req: Request<Incoming>| {
                    let out = answer(routes.as_ref(), &req);
                    async move { Ok::<_, Infallible>(out) }
                });
                let conn = http.serve_connection(TokioIo::new(stream), service);
                tokio::spawn(async move {
                    match tokio::time::timeout(READ_TIMEOUT, conn).await {
                        Ok(Err(e)) => tracing::debug!(error = %e, "http connection failed"),
                        Err(_) => tracing::debug!("http connection timed out"),
                        Ok(Ok(())) => {}
                    }
                    drop(slot);
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "http accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// `/healthz`, and a 404 that tells what it was asked.
    struct Hello;
    impl Routes for Hello {
        fn route(&self, ask: &Ask<'_>) -> Response {
            match (ask.method, ask.path) {
                ("GET", "/healthz") => Response::text(200, "ok\n"),
                ("GET", "/zipped") if ask.gzip => Response {
                    body: Body::Gzip(b"zz".to_vec()),
                    ..Response::text(200, "")
                },
                (method, path) => Response::text(404, &format!("{method} {path}\n")),
            }
        }
    }

    async fn server() -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, Arc::new(Hello)));
        addr
    }

    /// The whole answer to `head` (sent as it is).
    async fn ask(addr: std::net::SocketAddr, head: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(head).await.unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).await.unwrap();
        reply
    }

    async fn get(addr: std::net::SocketAddr, path: &str) -> String {
        ask(
            addr,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
        )
        .await
    }

    #[tokio::test]
    async fn the_routes_get_the_method_and_the_path_without_its_query() {
        let addr = server().await;
        let reply = ask(addr, b"POST /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n").await;
        assert!(reply.ends_with("\r\n\r\nPOST /metrics\n"), "{reply}");
    }

    #[tokio::test]
    async fn routes_answer_over_loopback_with_length_and_close() {
        let addr = server().await;
        let ok = get(addr, "/healthz?probe=1").await;
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains("Content-Length: 3\r\n")
                && ok.contains("Content-Type: text/plain; charset=utf-8\r\n")
                && ok.to_ascii_lowercase().contains("connection: close\r\n")
                && ok.ends_with("\r\n\r\nok\n"),
            "{ok}"
        );
        assert!(get(addr, "/nope")
            .await
            .starts_with("HTTP/1.1 404 Not Found"));
        // As the end-to-end tests scrape the operator.
        let old = ask(addr, b"GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n").await;
        assert!(
            old.starts_with("HTTP/1.") && old.contains(" 200 OK\r\n"),
            "{old}"
        );
    }

    #[tokio::test]
    async fn a_compressed_body_is_sent_to_whoever_takes_it_with_its_encoding() {
        let addr = server().await;
        let zipped = ask(
            addr,
            b"GET /zipped HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br, gzip\r\n\r\n",
        )
        .await;
        assert!(
            zipped.starts_with("HTTP/1.1 200 OK\r\n")
                && zipped.contains("Content-Encoding: gzip\r\n")
                && zipped.contains("Vary: Accept-Encoding\r\n")
                && zipped.ends_with("\r\n\r\nzz"),
            "{zipped}"
        );
        // Without the header the routes are told so.
        let plain = get(addr, "/zipped").await;
        assert!(plain.starts_with("HTTP/1.1 404"), "{plain}");
        assert!(!plain.contains("Content-Encoding"), "{plain}");
    }

    #[tokio::test]
    async fn a_head_longer_than_the_limit_is_refused_and_not_kept() {
        let addr = server().await;
        // Exactly the limit and no end of head: all of it is read, none
        // of it answered by the routes.
        let mut head = b"GET /healthz HTTP/1.1\r\nX-Pad: ".to_vec();
        head.resize(MAX_HEAD, b'a');
        let reply = ask(addr, &head).await;
        assert!(
            reply.starts_with("HTTP/1.1 431 Request Header Fields Too Large"),
            "{reply}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_sends_nothing_is_dropped_after_the_read_timeout() {
        let addr = server().await;
        let mut idle = TcpStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 16];
        let n = tokio::time::timeout(READ_TIMEOUT * 2, idle.read(&mut buf))
            .await
            .expect("closed before twice the read timeout")
            .unwrap_or(0);
        assert_eq!(n, 0, "closed without an answer");
    }

    #[tokio::test]
    async fn past_the_connection_limit_a_client_waits_until_a_slot_frees() {
        let addr = server().await;
        let mut idle = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap(); // head unfinished
            idle.push(s);
        }
        let waiting = tokio::spawn(get(addr, "/healthz"));
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "served past the limit");
        drop(idle.pop());
        let reply = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("served once a slot freed")
            .unwrap();
        assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    }
}
