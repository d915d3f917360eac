//! A stand-in API server for the watches' unit tests: answers the `n`th
//! request (from 0) with the `n`th scripted body, and never answers the
//! requests past the script, as a watch that stays open.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::Client;

/// What the stand-in answers one request with.
pub enum Answer {
    /// Status 200 and this body (JSON, or lines of a watch stream).
    Body(String),
    /// Status 200 and these bytes.
    Bytes(Vec<u8>),
    /// Status 200 and these bytes once this much (paused) time has passed:
    /// a watch that serves quietly for a while, then sends its last lines.
    After(Duration, Vec<u8>),
}

/// A client of a stand-in answering with `script`, and the paths and
/// queries of the requests it got.
pub fn client(script: Vec<Answer>) -> (Client, Arc<Mutex<Vec<String>>>) {
    let script = Arc::new(Mutex::new(script.into_iter().map(Some).collect::<Vec<_>>()));
    let seen: Arc<Mutex<Vec<String>>> = Default::default();
    let log = seen.clone();
    let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let (script, log) = (script.clone(), log.clone());
        async move {
            let n = {
                let mut log = log.lock().unwrap();
                log.push(req.uri().to_string());
                log.len() - 1
            };
            let answer = script.lock().unwrap().get_mut(n).and_then(Option::take);
            let body = match answer {
                Some(Answer::Body(s)) => s.into_bytes(),
                Some(Answer::Bytes(b)) => b,
                Some(Answer::After(pause, b)) => {
                    tokio::time::sleep(pause).await;
                    b
                }
                None => {
                    std::future::pending::<()>().await;
                    unreachable!()
                }
            };
            Ok::<_, std::convert::Infallible>(http::Response::new(kube::client::Body::from(body)))
        }
    });
    (Client::new(service, "ops"), seen)
}
