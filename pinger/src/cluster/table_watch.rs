//! Follows the peer pods of a Debugger as table rows (see [`super::table`]):
//! one list, then a watch from its resourceVersion, resumed after each
//! server timeout and listed again only when the server says the version
//! is gone (410) or the stream breaks. Retries for as long as the process
//! runs.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt};
use kube::Client;
use serde_json::Value;
use tokio::sync::mpsc;

use super::table::{self, Columns, ACCEPT_TABLE};
use super::watch::Update;

/// Seconds a watch request lasts before the server ends it and it resumes.
const WATCH_SECONDS: u32 = 290;

/// Why a list or watch stopped.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("request failed")]
    Request(#[from] kube::Error),
    #[error("reading the watch stream failed")]
    Read(#[from] std::io::Error),
    #[error("the server printed pods without the Name, Ready, Status or IP column")]
    Columns,
    #[error("the server sent no resourceVersion")]
    NoVersion,
    #[error("the watch ended with status {0}")]
    Status(i64),
    #[error("the receiver is gone")]
    Closed,
}

/// Sends the peers of `selector` in `namespace` as [`Update::Peers`] after
/// each list and [`Update::Peer`] for each change.
pub async fn peers(client: Client, namespace: String, selector: String, tx: mpsc::Sender<Update>) {
    let path = format!("/api/v1/namespaces/{namespace}/pods");
    let mut backoff = Duration::from_millis(500);
    loop {
        match follow(&client, &path, &selector, &tx).await {
            Err(Error::Closed) => return,
            Err(Error::Status(410)) => {
                tracing::debug!(%selector, "peer watch expired; listing again");
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, source = ?std::error::Error::source(&e), %selector, retry_in = ?backoff, "watching peer pods failed");
            }
            Ok(()) => {}
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

fn request(uri: String) -> http::Request<Vec<u8>> {
    http::Request::get(uri)
        .header(http::header::ACCEPT, ACCEPT_TABLE)
        .body(Vec::new())
        .expect("a GET with a valid header")
}

/// One list and the watches that follow it, until an error.
async fn follow(
    client: &Client,
    path: &str,
    selector: &str,
    tx: &mpsc::Sender<Update>,
) -> Result<(), Error> {
    let query = format!("labelSelector={}&includeObject=None", encode(selector));
    let list: Value = client.request(request(format!("{path}?{query}"))).await?;
    let mut cols = Columns::from_table(&list).ok_or(Error::Columns)?;
    let mut version = table::resource_version(&list).ok_or(Error::NoVersion)?;
    let all: BTreeMap<String, std::net::IpAddr> = table::rows(&list, cols)
        .into_iter()
        .filter_map(|r| Some((r.name, r.peer_ip?)))
        .collect();
    tx.send(Update::Peers(all))
        .await
        .map_err(|_| Error::Closed)?;
    loop {
        let uri = format!(
            "{path}?{query}&watch=1&allowWatchBookmarks=true&timeoutSeconds={WATCH_SECONDS}&resourceVersion={version}"
        );
        let mut lines = client.request_stream(request(uri)).await?.lines();
        while let Some(line) = lines.next().await {
            let event: Value = match serde_json::from_str(&line?) {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(error = %e, "unreadable peer watch event skipped");
                    continue;
                }
            };
            let object = &event["object"];
            match event["type"].as_str().unwrap_or("") {
                "ERROR" => return Err(Error::Status(object["code"].as_i64().unwrap_or(0))),
                kind @ ("ADDED" | "MODIFIED" | "DELETED") => {
                    if let Some(c) = Columns::from_table(object) {
                        cols = c;
                    }
                    for row in table::rows(object, cols) {
                        let ip = if kind == "DELETED" { None } else { row.peer_ip };
                        tx.send(Update::Peer(row.name, ip))
                            .await
                            .map_err(|_| Error::Closed)?;
                    }
                }
                _ => {}
            }
            if let Some(v) = table::resource_version(object) {
                version = v;
            }
        }
    }
}

/// Percent-encodes a label selector for a query string.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_are_percent_encoded_for_the_query() {
        assert_eq!(
            encode("kubecombo.io/debugger=a-b"),
            "kubecombo.io%2Fdebugger%3Da-b"
        );
    }
}
