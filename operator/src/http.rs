//! `/metrics`, `/healthz` and `/readyz` on `--metrics-addr`, served by the
//! one HTTP server of the project ([`combo_api::http`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use combo_api::http::{self, Ask, Body, Response};
use tokio::net::TcpListener;

use crate::metrics::registry::Metrics;
use crate::watch::health::Watches;

/// What the endpoints report.
pub struct Health {
    /// Metrics served at `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Whether the operator reached the API server.
    pub ready: AtomicBool,
    /// The controller's watches: `/readyz` fails while one of them does.
    pub watches: Watches,
}

/// Answers `ask`. Pure.
pub fn route(ask: &Ask<'_>, health: &Health) -> Response {
    if ask.method != "GET" {
        return Response::text(405, "method not allowed\n");
    }
    match ask.path {
        "/metrics" if ask.gzip => Response {
            body: Body::Gzip(health.metrics.encode_gzip()),
            ..Response::ok(http::OPENMETRICS, String::new())
        },
        "/metrics" => Response::ok(http::OPENMETRICS, health.metrics.encode()),
        "/healthz" => Response::text(200, "ok\n"),
        "/readyz" if !health.ready.load(Ordering::Relaxed) => {
            Response::text(503, "not ready: the API server was not reached yet\n")
        }
        "/readyz" => match health.watches.failing() {
            failing if failing.is_empty() => Response::text(200, "ok\n"),
            failing => Response::text(
                503,
                &format!("not ready: watch failing: {}\n", failing.join("; ")),
            ),
        },
        _ => Response::text(404, "not found\n"),
    }
}

impl http::Routes for Health {
    fn route(&self, ask: &Ask<'_>) -> Response {
        route(ask, self)
    }
}

/// Binds `addr` and serves until the task is dropped (the server and its
/// limits: [`combo_api::http`]).
pub async fn serve(addr: SocketAddr, health: Arc<Health>) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(%addr, "serving /metrics, /healthz, /readyz");
    http::serve(listener, health).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str, health: &Health) -> Response {
        route(&Ask::get(path), health)
    }

    fn health(ready: bool) -> Health {
        let metrics = Arc::new(Metrics::default());
        Health {
            watches: Watches::new(metrics.watch_errors()),
            metrics,
            ready: AtomicBool::new(ready),
        }
    }

    #[test]
    fn readyz_follows_the_ready_flag_and_healthz_is_always_ok() {
        assert_eq!(get("/readyz", &health(false)).code, 503);
        assert_eq!(get("/readyz", &health(true)).code, 200);
        assert_eq!(get("/healthz", &health(false)).code, 200);
    }

    #[test]
    fn readyz_fails_while_a_watch_fails_and_names_it() {
        let h = health(true);
        let now = std::time::Instant::now();
        h.watches
            .failed("DebuggerReport", "404 not found".into(), now);
        let r = get("/readyz", &h);
        assert_eq!(r.code, 503);
        assert!(
            r.plain().contains("DebuggerReport: 404 not found"),
            "{}",
            r.plain()
        );
        assert_eq!(get("/healthz", &h).code, 200);
        h.watches.delivered("DebuggerReport", now);
        assert_eq!(get("/readyz", &h).code, 200);
    }

    #[test]
    fn metrics_serve_the_registry_and_unknown_paths_are_not_found() {
        let h = health(true);
        h.metrics.write("Pod");
        let r = get("/metrics", &h);
        assert!(
            r.plain().contains("combo_operator_api_writes_total"),
            "{}",
            r.plain()
        );
        // A scraper that takes gzip gets the same text compressed.
        let zipped = route(
            &Ask {
                gzip: true,
                ..Ask::get("/metrics")
            },
            &h,
        );
        let Body::Gzip(bytes) = &zipped.body else {
            panic!("not compressed: {zipped:?}")
        };
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
            .unwrap();
        assert_eq!(text, r.plain());
        assert_eq!(zipped.content_type, http::OPENMETRICS);
        assert_eq!(get("/nope", &h).code, 404);
        assert_eq!(
            route(
                &Ask {
                    method: "POST",
                    ..Ask::get("/metrics")
                },
                &h
            )
            .code,
            405
        );
    }

    #[tokio::test]
    async fn server_answers_over_loopback_tcp() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        use tokio::net::TcpStream;
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
