//! Follows the peer pods of a Debugger as table rows (see [`super::table`]):
//! one list, then a watch from its resourceVersion, resumed after each
//! server timeout and listed again only when the server says the version
//! is gone (410) or the stream breaks. Retries for as long as the process
//! runs, with a backoff that starts over after a healthy stretch.

use std::time::Duration;

use combo_api::retry::doubling;
use futures::{AsyncBufReadExt, StreamExt};
use kube::Client;
use serde_json::Value;
use tokio::sync::mpsc;

use super::peers::Pods;
use super::table::{self, Columns, Include, ACCEPT_TABLE};
use super::watch::Update;

/// Seconds a watch request lasts before the server ends it and it resumes.
const WATCH_SECONDS: u32 = 290;

/// Pods per page of a list of rows alone, as kubectl lists.
const LIST_PAGE: u32 = 500;

/// Pods per page of a list with whole Pods included. A Pod was 3.8 KB
/// against 273 bytes a row for the small simulated pods of
/// docs/benchmarks.md, "Peer watch", and real ones with their managed
/// fields are larger: 100 Pods are about 0.4-1 MB of text a page, where
/// 500 rows are about 140 KB.
const LIST_PAGE_OBJECTS: u32 = 100;

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

/// How long a list and its watches must have served before the failures
/// before them are forgotten: the longest pause. A watch that breaks right
/// after each list (a proxy cutting streams, a watch the RBAC refuses)
/// still backs off to the cap instead of listing every half second; after
/// a healthy stretch, a break is retried after the first pause again.
const HEALTHY: Duration = Duration::from_secs(30);

/// Sends the peers of `selector` in `namespace` as [`Update::Peers`] after
/// each list and [`Update::Peer`] for each change; `include` says whether
/// the rows carry whole Pods (every address) or not (the first).
pub async fn peers(
    client: Client,
    namespace: String,
    selector: String,
    include: Include,
    tx: mpsc::Sender<Update>,
) {
    let path = format!("/api/v1/namespaces/{namespace}/pods");
    let query = query(&selector, include);
    let mut attempt = 0;
    loop {
        let (listed_for, e) = follow(&client, &path, &query, &tx).await;
        attempt = failures_before(attempt, listed_for);
        match e {
            Error::Closed => return,
            Error::Status(410) => {
                tracing::debug!(%selector, "peer watch expired; listing again");
                continue;
            }
            e => {
                attempt += 1;
                tracing::warn!(error = %e, source = ?std::error::Error::source(&e), %selector, retry_in = ?backoff(attempt), "watching peer pods failed");
            }
        }
        tokio::time::sleep(backoff(attempt)).await;
    }
}

/// The failures that count towards the next pause, given the `attempt`
/// failures before a [`follow`] and how long its list and watches served
/// (None: the list failed). Pure.
fn failures_before(attempt: u32, listed_for: Option<Duration>) -> u32 {
    match listed_for {
        Some(d) if d >= HEALTHY => 0,
        _ => attempt,
    }
}

/// The query of the lists and watches: the selector, and what the rows
/// carry (docs/pinger.md, "Peer discovery"), with the page size of a list
/// of such rows. Pure.
fn query(selector: &str, include: Include) -> Query {
    let page = match include {
        Include::None => LIST_PAGE,
        Include::Object => LIST_PAGE_OBJECTS,
    };
    Query {
        params: format!(
            "labelSelector={}&includeObject={}",
            encode(selector),
            include.param()
        ),
        page,
    }
}

/// What every list and watch of one selector asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Query {
    /// The query parameters of both.
    params: String,
    /// Pods per page of a list.
    page: u32,
}

fn request(uri: String) -> http::Request<Vec<u8>> {
    http::Request::get(uri)
        .header(http::header::ACCEPT, ACCEPT_TABLE)
        .body(Vec::new())
        .expect("a GET with a valid header")
}

/// One list and the watches that follow it, until an error; with how long
/// they served after the list succeeded (None: it failed).
async fn follow(
    client: &Client,
    path: &str,
    query: &Query,
    tx: &mpsc::Sender<Update>,
) -> (Option<Duration>, Error) {
    let (cols, version) = match list(client, path, query, tx).await {
        Ok(listed) => listed,
        Err(e) => return (None, e),
    };
    let since = tokio::time::Instant::now();
    let e = match watch(client, path, &query.params, cols, version, tx).await {
        Ok(never) => match never {},
        Err(e) => e,
    };
    (Some(since.elapsed()), e)
}

/// Lists the peers, sends them, and gives the columns and version to watch
/// from.
async fn list(
    client: &Client,
    path: &str,
    query: &Query,
    tx: &mpsc::Sender<Update>,
) -> Result<(Columns, String), Error> {
    // Listed in pages, as kubectl lists: a page's text and parsed form are
    // what the pinger holds at once, not the whole namespace's.
    let mut all = Pods::new();
    let mut nodes = std::collections::BTreeMap::new();
    let mut next_page: Option<String> = None;
    let (cols, version) = loop {
        let mut uri = format!("{path}?{}&limit={}", query.params, query.page);
        if let Some(token) = &next_page {
            uri.push_str(&format!("&continue={}", encode(token)));
        }
        let page: Value = client.request(request(uri)).await?;
        let cols = Columns::from_table(&page).ok_or(Error::Columns)?;
        for r in table::rows(&page, cols) {
            if !r.peer_ips.is_empty() {
                if !r.node.is_empty() {
                    nodes.insert(r.name.clone(), r.node);
                }
                all.insert(r.name, r.peer_ips);
            }
        }
        next_page = page
            .pointer("/metadata/continue")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        if next_page.is_none() {
            break (
                cols,
                table::resource_version(&page).ok_or(Error::NoVersion)?,
            );
        }
    };
    tx.send(Update::Peers(all))
        .await
        .map_err(|_| Error::Closed)?;
    tx.send(Update::PeerNodes(nodes))
        .await
        .map_err(|_| Error::Closed)?;
    Ok((cols, version))
}

/// Watches from `version` until an error, resuming after each server
/// timeout.
async fn watch(
    client: &Client,
    path: &str,
    query: &str,
    mut cols: Columns,
    mut version: String,
    tx: &mpsc::Sender<Update>,
) -> Result<std::convert::Infallible, Error> {
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
                        let ips = if kind == "DELETED" {
                            Vec::new()
                        } else {
                            row.peer_ips
                        };
                        if !ips.is_empty() && !row.node.is_empty() {
                            tx.send(Update::PeerNode(row.name.clone(), row.node))
                                .await
                                .map_err(|_| Error::Closed)?;
                        }
                        tx.send(Update::Peer(row.name, ips))
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

/// The pause before list `attempt` (from 1) after a failure: 0.5 s
/// doubling to 30 s.
fn backoff(attempt: u32) -> Duration {
    doubling(Duration::from_millis(500), Duration::from_secs(30), attempt)
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
#[path = "table_watch_tests.rs"]
mod tests;
