//! A stand-in API server for the in-process tests of every crate that talks
//! to Kubernetes (docs/testing.md#the-layers): a `tower` service behind a
//! kube [`Client`] that records every request, in order and when (in paused
//! time too), and answers each as the test says: from a script, from a
//! function of the request, or from the objects it keeps the way the API
//! server does.
//!
//! The other crates take it as a dev-dependency only: no binary carries it.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use http_body_util::BodyExt;
use kube::client::Body;
use kube::Client;
use serde_json::{json, Value};
use tokio::time::Instant;

/// The default namespace of the stand-in's client.
pub const NAMESPACE: &str = "ops";

/// One request as the stand-in got it.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Its place among the requests, from 0.
    pub n: usize,
    pub method: String,
    /// The path and the query.
    pub uri: String,
    /// The body as text (invalid UTF-8 replaced).
    pub body: String,
    /// When it came, counted from the stand-in's start.
    pub at: Duration,
}

impl Request {
    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.uri.split('?').next().unwrap_or_default()
    }

    /// "METHOD path", without the query: how the tests name a request.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path())
    }
}

/// What the stand-in answers one request with.
#[derive(Clone, Debug)]
pub enum Answer {
    /// This status code and this JSON value.
    Json(u16, Value),
    /// This status code and these bytes as they are (a watch stream, or
    /// garbage).
    Raw(u16, Vec<u8>),
    /// This answer once this much time has passed: a slow API server, or a
    /// watch that serves quietly for a while, then sends its last lines.
    After(Duration, Box<Answer>),
    /// What the kept objects answer (see [`StandIn::put`]).
    Store,
    /// No answer ever, as from an API server that hangs: the client has to
    /// give the request up (see [`StandIn::abandoned`]).
    Never,
}

impl Answer {
    /// Status 200 and these bytes.
    pub fn ok(body: impl Into<Vec<u8>>) -> Answer {
        Answer::Raw(200, body.into())
    }

    /// The Status object with which the API server refuses a request.
    pub fn status(code: u16, reason: &str) -> Answer {
        Answer::Json(
            code,
            json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
                "message": reason, "reason": reason, "code": code}),
        )
    }
}

/// The stand-in's side of a test: what it was asked, and the objects it
/// keeps. Clones share them.
#[derive(Clone)]
pub struct StandIn {
    state: Arc<Mutex<State>>,
    abandoned: Arc<AtomicUsize>,
    started: Instant,
}

#[derive(Default)]
struct State {
    seen: Vec<Request>,
    /// By path, as the API server names them.
    objects: BTreeMap<String, Value>,
    /// The last resourceVersion given: one counter for every object, as
    /// etcd's revision.
    version: u64,
}

/// Counts a request whose answer was dropped before it was sent: the client
/// gave it up.
struct Pending(Option<Arc<AtomicUsize>>);

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(abandoned) = self.0.take() {
            abandoned.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl StandIn {
    /// A client of a stand-in that answers each request with
    /// `respond(request)`.
    pub fn answering(
        respond: impl Fn(&Request) -> Answer + Send + Sync + 'static,
    ) -> (Client, StandIn) {
        let stand_in = StandIn {
            state: Default::default(),
            abandoned: Default::default(),
            started: Instant::now(),
        };
        let respond = Arc::new(respond);
        let server = stand_in.clone();
        let service = tower::service_fn(move |req: ::http::Request<Body>| {
            let (server, respond) = (server.clone(), respond.clone());
            async move { Ok::<_, Infallible>(server.serve(req, &*respond).await) }
        });
        (Client::new(service, NAMESPACE), stand_in)
    }

    /// A client of a stand-in that answers the `n`th request (from 0) with
    /// the `n`th answer of `script`, and never the requests past it, as a
    /// watch that stays open.
    pub fn scripted(script: Vec<Answer>) -> (Client, StandIn) {
        let script = Mutex::new(script.into_iter().map(Some).collect::<Vec<_>>());
        StandIn::answering(move |request| {
            let mut script = script.lock().unwrap();
            let answer = script.get_mut(request.n).and_then(Option::take);
            answer.unwrap_or(Answer::Never)
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A test that failed while holding the lock has failed already.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn serve(
        &self,
        req: ::http::Request<Body>,
        respond: &(dyn Fn(&Request) -> Answer + Send + Sync),
    ) -> ::http::Response<Body> {
        let method = req.method().to_string();
        let uri = req.uri().to_string();
        let body = req.into_body().collect().await.map(|b| b.to_bytes());
        let body = body.expect("kube's request bodies are in memory");
        let request = {
            let mut state = self.state();
            let request = Request {
                n: state.seen.len(),
                method,
                uri,
                body: String::from_utf8_lossy(&body).into_owned(),
                at: self.started.elapsed(),
            };
            state.seen.push(request.clone());
            request
        };
        let mut pending = Pending(Some(self.abandoned.clone()));
        let mut answer = respond(&request);
        let (code, bytes) = loop {
            answer = match answer {
                Answer::Json(code, json) => break (code, json.to_string().into_bytes()),
                Answer::Raw(code, bytes) => break (code, bytes),
                Answer::After(pause, then) => {
                    tokio::time::sleep(pause).await;
                    *then
                }
                Answer::Store => store(&mut self.state(), &request.method, request.path(), &body),
                Answer::Never => std::future::pending().await,
            };
        };
        pending.0 = None;
        let mut resp = ::http::Response::new(Body::from(bytes));
        *resp.status_mut() = ::http::StatusCode::from_u16(code).expect("a status code");
        resp
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.state().seen.clone()
    }

    /// How many requests came so far.
    pub fn count(&self) -> usize {
        self.state().seen.len()
    }

    /// The "METHOD path" of the requests from the `from`th on.
    pub fn lines(&self, from: usize) -> Vec<String> {
        self.state().seen[from..]
            .iter()
            .map(Request::line)
            .collect()
    }

    /// The path and query of every request, in order.
    pub fn uris(&self) -> Vec<String> {
        self.state().seen.iter().map(|r| r.uri.clone()).collect()
    }

    /// The body of the last request named `line` ("METHOD path").
    pub fn last_body(&self, line: &str) -> Option<String> {
        let state = self.state();
        let found = state.seen.iter().rev().find(|r| r.line() == line);
        found.map(|r| r.body.clone())
    }

    /// How many requests the client gave up before they were answered.
    pub fn abandoned(&self) -> usize {
        self.abandoned.load(Ordering::SeqCst)
    }

    /// Keeps `object` at `path` as another writer would: with the next
    /// resourceVersion.
    pub fn put(&self, path: &str, object: Value) {
        keep(&mut self.state(), path, object);
    }

    /// The object kept at `path`.
    pub fn stored(&self, path: &str) -> Option<Value> {
        self.state().objects.get(path).cloned()
    }
}

/// Keeps `object` at `path` with the next resourceVersion; returns it as
/// kept.
fn keep(state: &mut State, path: &str, mut object: Value) -> Value {
    state.version += 1;
    object["metadata"]["resourceVersion"] = state.version.to_string().into();
    state.objects.insert(path.to_string(), object.clone());
    object
}

/// The kept objects' answer to one request, as the API server's: create
/// fails when the object exists, a replace whose resourceVersion is not the
/// kept one conflicts.
fn store(state: &mut State, method: &str, path: &str, body: &[u8]) -> Answer {
    let sent = serde_json::from_slice::<Value>(body)
        .ok()
        .filter(Value::is_object);
    match (method, sent) {
        ("GET", _) => match state.objects.get(path) {
            Some(object) => Answer::Json(200, object.clone()),
            None => Answer::status(404, "NotFound"),
        },
        ("DELETE", _) => match state.objects.remove(path) {
            Some(object) => Answer::Json(200, object),
            None => Answer::status(404, "NotFound"),
        },
        ("POST" | "PUT", None) => Answer::status(400, "BadRequest"),
        ("POST", Some(sent)) => {
            let Some(name) = sent["metadata"]["name"].as_str() else {
                return Answer::status(422, "Invalid");
            };
            let path = format!("{path}/{name}");
            if state.objects.contains_key(&path) {
                return Answer::status(409, "AlreadyExists");
            }
            Answer::Json(201, keep(state, &path, sent))
        }
        ("PUT", Some(sent)) => match state.objects.get(path) {
            None => Answer::status(404, "NotFound"),
            Some(kept)
                if kept["metadata"]["resourceVersion"] == sent["metadata"]["resourceVersion"] =>
            {
                Answer::Json(200, keep(state, path, sent))
            }
            Some(_) => Answer::status(409, "Conflict"),
        },
        _ => Answer::status(405, "MethodNotAllowed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams};

    const MAPS: &str = "/api/v1/namespaces/ops/configmaps";

    fn config_map(name: &str, value: &str) -> ConfigMap {
        let mut map = ConfigMap {
            data: Some([("k".to_string(), value.to_string())].into()),
            ..ConfigMap::default()
        };
        map.metadata.name = Some(name.into());
        map
    }

    fn api(client: Client) -> Api<ConfigMap> {
        Api::default_namespaced(client)
    }

    fn code(result: kube::Result<ConfigMap>) -> u16 {
        match result {
            Err(kube::Error::Api(status)) => status.code,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_script_answers_in_order_and_leaves_the_requests_past_it_unanswered() {
        let first = serde_json::to_value(config_map("a", "1")).unwrap();
        let (client, stand_in) = StandIn::scripted(vec![
            Answer::Json(200, first),
            Answer::After(
                Duration::from_secs(3),
                Box::new(Answer::status(404, "NotFound")),
            ),
        ]);
        let maps = api(client);
        let started = Instant::now();
        assert_eq!(maps.get("a").await.unwrap().data, config_map("a", "1").data);
        assert_eq!(code(maps.get("b").await), 404);
        assert_eq!(started.elapsed(), Duration::from_secs(3));
        let open = tokio::time::timeout(Duration::from_secs(60), maps.get("c")).await;
        assert!(open.is_err(), "the third request was answered: {open:?}");
        assert_eq!(stand_in.abandoned(), 1);

        let seen = stand_in.requests();
        let at: Vec<_> = seen.iter().map(|r| (r.n, r.at.as_secs())).collect();
        assert_eq!(at, [(0, 0), (1, 0), (2, 3)]);
        assert_eq!(
            stand_in.lines(1),
            [format!("GET {MAPS}/b"), format!("GET {MAPS}/c")]
        );
        assert_eq!(stand_in.count(), 3);
    }

    #[tokio::test]
    async fn each_request_is_recorded_with_its_query_and_body() {
        let (client, stand_in) = StandIn::answering(|r| {
            let made = serde_json::from_str::<Value>(&r.body).unwrap();
            Answer::Json(201, made)
        });
        let pp = PostParams {
            field_manager: Some("tester".into()),
            ..PostParams::default()
        };
        api(client)
            .create(&pp, &config_map("a", "x"))
            .await
            .unwrap();
        let seen = stand_in.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].line(), format!("POST {MAPS}"));
        let uris = stand_in.uris();
        assert_eq!(uris.len(), 1);
        assert!(
            uris[0].starts_with(&format!("{MAPS}?")) && uris[0].contains("fieldManager=tester"),
            "{uris:?}"
        );
        let body = stand_in.last_body(&format!("POST {MAPS}")).unwrap();
        assert!(body.contains("\"k\":\"x\""), "{body}");
        assert_eq!(stand_in.last_body(&format!("GET {MAPS}")), None);
        assert_eq!(stand_in.abandoned(), 0);
    }

    #[tokio::test]
    async fn kept_objects_are_created_once_and_replaced_only_at_their_resource_version() {
        let (client, stand_in) = StandIn::answering(|_| Answer::Store);
        let maps = api(client);
        let pp = PostParams::default();
        assert_eq!(code(maps.get("a").await), 404);
        let made = maps.create(&pp, &config_map("a", "1")).await.unwrap();
        assert_eq!(made.metadata.resource_version.as_deref(), Some("1"));
        assert_eq!(code(maps.create(&pp, &config_map("a", "2")).await), 409);

        // Another writer changes it: a replace from the old read conflicts.
        let mut theirs = serde_json::to_value(config_map("a", "theirs")).unwrap();
        theirs["metadata"]["resourceVersion"] = "1".into();
        stand_in.put(&format!("{MAPS}/a"), theirs);
        let mut stale = made.clone();
        stale.data = config_map("a", "mine").data;
        assert_eq!(code(maps.replace("a", &pp, &stale).await), 409);

        let mut fresh = maps.get("a").await.unwrap();
        assert_eq!(fresh.metadata.resource_version.as_deref(), Some("2"));
        fresh.data = config_map("a", "mine").data;
        let replaced = maps.replace("a", &pp, &fresh).await.unwrap();
        assert_eq!(replaced.metadata.resource_version.as_deref(), Some("3"));
        let kept = stand_in.stored(&format!("{MAPS}/a")).unwrap();
        assert_eq!(kept["data"]["k"], "mine");
        assert_eq!(
            code(maps.replace("b", &pp, &config_map("b", "1")).await),
            404
        );
        assert_eq!(stand_in.stored(&format!("{MAPS}/b")), None);
    }

    #[test]
    fn a_request_is_named_by_its_method_and_path_without_the_query() {
        let request = Request {
            n: 0,
            method: "PATCH".into(),
            uri: "/apis/apps/v1/namespaces/ops/daemonsets/d?fieldManager=x&force=true".into(),
            body: String::new(),
            at: Duration::ZERO,
        };
        assert_eq!(request.path(), "/apis/apps/v1/namespaces/ops/daemonsets/d");
        assert_eq!(
            request.line(),
            "PATCH /apis/apps/v1/namespaces/ops/daemonsets/d"
        );
    }
}
