//! How `kubectl combo mesh` gathers (docs/pinger.md, "The mesh view"): one
//! GET of each pinger's [`combo_api::recent::PATH`] through the API
//! server's pod proxy, at most [`LIMITS`]`.in_flight` at a time, each
//! given up after `per_pod`, all of them after `overall`.
//!
//! At 1,000 nodes that is 1,000 proxy GETs of about 2 KB each (20 peers
//! and a few targets), in about 32 waves of 32: at 100 ms a GET, 3.2 s
//! (`gather_tests` measures it against a stand-in API server).

use std::time::Duration;

use combo_api::recent::Recent;
use futures::StreamExt;
use kube::Client;

use super::paths::Prober;

/// What the gathering may ask of the API server and how long it may take.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Proxy GETs in flight at once.
    pub in_flight: usize,
    /// One pinger's time to answer.
    pub per_pod: Duration,
    /// All pingers' time: those still unanswered are reported as such.
    pub overall: Duration,
}

/// 32 in flight, as kubectl's default client burst is not exceeded by
/// more than the plugin's one list; 8 s overall so that the command
/// answers within 10 s with the list before it.
pub const LIMITS: Limits = Limits {
    in_flight: 32,
    per_pod: Duration::from_secs(3),
    overall: Duration::from_secs(8),
};

/// The pod proxy path of `pod`'s summary on `port`.
pub fn proxy_path(ns: &str, pod: &str, port: u16) -> String {
    format!(
        "/api/v1/namespaces/{ns}/pods/{pod}:{port}/proxy{}",
        combo_api::recent::PATH
    )
}

async fn ask(client: &Client, path: String, per_pod: Duration) -> Result<Recent, String> {
    let req = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    let text = match tokio::time::timeout(per_pod, client.request_text(req)).await {
        Err(_) => return Err(format!("no answer within {} s", per_pod.as_secs())),
        Ok(Err(kube::Error::Api(s))) => return Err(format!("{} ({})", s.message, s.code)),
        Ok(Err(e)) => return Err(e.to_string()),
        Ok(Ok(text)) => text,
    };
    serde_json::from_str(&text).map_err(|e| format!("not a pinger summary: {e}"))
}

/// Asks every prober's pinger on `port`; the answer of each, by index into
/// `probers`, in the order they came.
pub async fn gather(
    client: &Client,
    ns: &str,
    port: u16,
    probers: &[Prober],
    limits: Limits,
) -> Vec<(usize, Result<Recent, String>)> {
    let deadline = tokio::time::Instant::now() + limits.overall;
    let mut asks = futures::stream::iter(probers.iter().enumerate())
        .map(|(i, p)| {
            let path = proxy_path(ns, &p.pod, port);
            async move { (i, ask(client, path, limits.per_pod).await) }
        })
        .buffer_unordered(limits.in_flight.max(1));
    let mut out = Vec::with_capacity(probers.len());
    while let Ok(Some(answer)) = tokio::time::timeout_at(deadline, asks.next()).await {
        out.push(answer);
    }
    let mut seen = vec![false; probers.len()];
    for (i, _) in &out {
        seen[*i] = true;
    }
    for (i, _) in seen.iter().enumerate().filter(|(_, s)| !**s) {
        out.push((
            i,
            Err(format!(
                "not asked or not answered within {} s",
                limits.overall.as_secs()
            )),
        ));
    }
    out
}

#[cfg(test)]
#[path = "gather_tests.rs"]
mod tests;
