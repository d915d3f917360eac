//! The one HTTP server of the operator and the pinger (`/metrics`,
//! `/healthz`, `/readyz`): a minimal HTTP/1.1 responder, enough for
//! Prometheus and kubelet probes, with the limits of docs/reference.md,
//! "Metrics endpoints": a request head of at most [`MAX_HEAD`] bytes, read
//! within [`READ_TIMEOUT`], one request per connection, and at most
//! [`MAX_CONNECTIONS`] connections served at once (more wait in the
//! listen queue until one ends).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// Longest request head read; the rest is ignored.
pub const MAX_HEAD: usize = 8 * 1024;
/// Time a connection has to send its head and take the answer.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;

/// Content type of a Prometheus scrape.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Content type of everything else.
pub const TEXT: &str = "text/plain; charset=utf-8";

/// An answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    /// HTTP status code.
    pub code: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Body.
    pub body: String,
}

impl Response {
    /// A plain-text answer.
    pub fn text(code: u16, body: &str) -> Self {
        Response {
            code,
            content_type: TEXT,
            body: body.into(),
        }
    }
}

/// What a server answers, by method and path (without the query).
pub trait Routes: Send + Sync + 'static {
    /// The answer to `method` `path`.
    fn route(&self, method: &str, path: &str) -> Response;
}

/// Method and path (query cut off) of a request head. Pure.
pub fn request_line(head: &str) -> (&str, &str) {
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let method = parts.next().unwrap_or("");
    let path = parts.next().unwrap_or("");
    (method, path.split('?').next().unwrap_or(""))
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// Serves `listener` until the task is dropped; accept errors are logged
/// and retried.
pub async fn serve(listener: TcpListener, routes: Arc<dyn Routes>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        // A slot first: past the limit, connections wait unaccepted.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        match listener.accept().await {
            Ok((stream, _)) => {
                let routes = routes.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(READ_TIMEOUT, answer(stream, routes.as_ref())).await
                    {
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

async fn answer(mut stream: TcpStream, routes: &dyn Routes) -> std::io::Result<()> {
    let mut buf = vec![0u8; MAX_HEAD];
    let mut len = 0;
    while len < buf.len() {
        let n = stream.read(&mut buf[len..]).await?;
        if n == 0 {
            break;
        }
        len += n;
        if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    let head = String::from_utf8_lossy(&buf[..len]);
    let (method, path) = request_line(&head);
    let resp = routes.route(method, path);
    let out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        resp.code,
        reason(resp.code),
        resp.content_type,
        resp.body.len(),
        resp.body
    );
    stream.write_all(out.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Hello;
    impl Routes for Hello {
        fn route(&self, method: &str, path: &str) -> Response {
            match (method, path) {
                ("GET", "/healthz") => Response::text(200, "ok\n"),
                _ => Response::text(404, "not found\n"),
            }
        }
    }

    async fn server() -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, Arc::new(Hello)));
        addr
    }

    async fn get(addr: std::net::SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).await.unwrap();
        reply
    }

    #[test]
    fn the_request_line_gives_method_and_path_without_query() {
        assert_eq!(
            request_line("GET /metrics?x=1 HTTP/1.1\r\nHost: a"),
            ("GET", "/metrics")
        );
        assert_eq!(request_line(""), ("", ""));
    }

    #[tokio::test]
    async fn routes_answer_over_loopback_with_length_and_close() {
        let addr = server().await;
        let ok = get(addr, "/healthz?probe=1").await;
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains("Content-Length: 3\r\n") && ok.ends_with("\r\n\r\nok\n"),
            "{ok}"
        );
        assert!(get(addr, "/nope")
            .await
            .starts_with("HTTP/1.1 404 Not Found"));
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
