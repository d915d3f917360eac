//! `/metrics`, `/healthz` and `/readyz` on `--metrics-addr`: a minimal
//! HTTP/1.1 responder, enough for Prometheus and kubelet probes.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::metrics::Metrics;

/// What the endpoints report.
pub struct Health {
    /// Metrics served at `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Whether `/readyz` answers 200: the operator reached the API server.
    pub ready: AtomicBool,
}

/// A response: status line code, content type and body.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    /// HTTP status code.
    pub code: u16,
    /// Body text.
    pub body: String,
}

/// Answers the request whose first line is `request_line`. Pure.
pub fn route(request_line: &str, health: &Health) -> Response {
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    if method != "GET" {
        return Response {
            code: 405,
            body: "method not allowed\n".into(),
        };
    }
    match path {
        "/metrics" => Response {
            code: 200,
            body: health.metrics.encode(),
        },
        "/healthz" => Response {
            code: 200,
            body: "ok\n".into(),
        },
        "/readyz" if health.ready.load(Ordering::Relaxed) => Response {
            code: 200,
            body: "ok\n".into(),
        },
        "/readyz" => Response {
            code: 503,
            body: "not ready\n".into(),
        },
        _ => Response {
            code: 404,
            body: "not found\n".into(),
        },
    }
}

/// Serves until the task is dropped.
pub async fn serve(addr: SocketAddr, health: Arc<Health>) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(%addr, "serving /metrics, /healthz, /readyz");
    loop {
        let (stream, _) = listener.accept().await?;
        let health = health.clone();
        tokio::spawn(async move {
            if let Err(e) = answer(stream, &health).await {
                tracing::debug!(error = %e, "http connection failed");
            }
        });
    }
}

async fn answer(mut stream: TcpStream, health: &Health) -> std::io::Result<()> {
    let mut buf = vec![0u8; 8192];
    let mut len = 0;
    // Read the request head (bounded); the body, if any, is ignored.
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
    let resp = route(head.lines().next().unwrap_or(""), health);
    let reason = match resp.code {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Service Unavailable",
    };
    let content_type = if resp.code == 200 && head.starts_with("GET /metrics") {
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    } else {
        "text/plain; charset=utf-8"
    };
    let out = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        resp.code,
        resp.body.len(),
        resp.body
    );
    stream.write_all(out.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn health(ready: bool) -> Health {
        Health {
            metrics: Arc::new(Metrics::default()),
            ready: AtomicBool::new(ready),
        }
    }

    #[test]
    fn readyz_follows_the_ready_flag_and_healthz_is_always_ok() {
        assert_eq!(route("GET /readyz HTTP/1.1", &health(false)).code, 503);
        assert_eq!(route("GET /readyz HTTP/1.1", &health(true)).code, 200);
        assert_eq!(route("GET /healthz HTTP/1.1", &health(false)).code, 200);
    }

    #[test]
    fn metrics_serve_the_registry_and_unknown_paths_are_not_found() {
        let h = health(true);
        h.metrics.write("Pod");
        let r = route("GET /metrics HTTP/1.1", &h);
        assert!(
            r.body.contains("combo_operator_api_writes_total"),
            "{}",
            r.body
        );
        assert_eq!(route("GET /nope HTTP/1.1", &h).code, 404);
        assert_eq!(route("POST /metrics HTTP/1.1", &h).code, 405);
    }

    #[tokio::test]
    async fn server_answers_over_loopback_tcp() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let task = tokio::spawn(serve(addr, Arc::new(health(true))));
        let mut reply = String::new();
        for _ in 0..50 {
            if let Ok(mut s) = TcpStream::connect(addr).await {
                s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    .await
                    .unwrap();
                s.read_to_string(&mut reply).await.unwrap();
                break;
            }
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        task.abort();
        assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
        assert!(reply.ends_with("ok\n"));
    }
}
