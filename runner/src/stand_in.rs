//! A stand-in API server for unit tests: a tower service that records every
//! request and answers from a script.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::BodyExt;
use kube::Client;

/// (method, URI, body) of every request, in order.
pub type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

/// What the stand-in answers: a status code and a body.
pub enum Answer {
    /// This JSON value.
    Json(u16, serde_json::Value),
    /// These bytes, as they are (a watch stream, or garbage).
    Raw(u16, Vec<u8>),
}

/// Sets its flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A client of a stand-in API server that records (method, URI, body) of
/// every request and answers request `n` (from 0) with `answer(n, method,
/// uri)`, or never when that is `None`; `hung` is set when a request left
/// unanswered is given up by the client.
pub fn stand_in(
    answer: impl Fn(usize, &str, &str) -> Option<Answer> + Clone + Send + 'static,
    hung: Arc<AtomicBool>,
) -> (Client, Seen) {
    let seen: Seen = Default::default();
    let log = seen.clone();
    let api_server = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let (log, answer, hung) = (log.clone(), answer.clone(), hung.clone());
        async move {
            let (method, uri) = (req.method().to_string(), req.uri().to_string());
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let n = {
                let mut log = log.lock().unwrap();
                log.push((
                    method.clone(),
                    uri.clone(),
                    String::from_utf8_lossy(&body).into_owned(),
                ));
                log.len() - 1
            };
            let (code, bytes) = match answer(n, &method, &uri) {
                Some(Answer::Json(code, json)) => (code, serde_json::to_vec(&json).unwrap()),
                Some(Answer::Raw(code, bytes)) => (code, bytes),
                None => {
                    let _dropped = DropFlag(hung);
                    tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
                    unreachable!("the request was given up")
                }
            };
            let mut resp = http::Response::new(kube::client::Body::from(bytes));
            *resp.status_mut() = http::StatusCode::from_u16(code).unwrap();
            Ok::<_, std::convert::Infallible>(resp)
        }
    });
    (Client::new(api_server, "ops"), seen)
}
