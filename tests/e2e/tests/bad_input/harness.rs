//! What both bad-input tests do alike (docs/testing.md, "Bad input"):
//! generate the cases from the seed, send them to the API server, count
//! its refusals, read the operator's verdicts and find the Warning Events.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::Result;
use combo_api::{keys, Debugger, Pinger};
use combo_e2e::{events, wait_for};
use futures::StreamExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client, ResourceExt};
use proptest::strategy::{Strategy, ValueTree as _};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};

/// Environment variable `name` as a number, or `default`.
fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

pub fn seed() -> u64 {
    env_number("COMBO_BAD_INPUT_SEED", 20261124)
}

pub fn cases() -> usize {
    env_number("COMBO_BAD_INPUT_CASES", 1000)
}

/// `n` values of `strategy`, from `seed`; `stream` tells the two tests'
/// sequences apart (the Debugger test's is stream 0).
pub fn generate<S: Strategy>(strategy: S, seed: u64, stream: u8, n: usize) -> Vec<S::Value> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8] = stream;
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    );
    (0..n)
        .map(|_| {
            strategy
                .new_tree(&mut runner)
                .expect("a generated spec")
                .current()
        })
        .collect()
}

/// `specs[i]` named `<prefix>-<i>`, four digits.
pub fn numbered(prefix: &str, specs: &[Value]) -> Vec<(String, Value)> {
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("{prefix}-{i:04}"), s.clone()))
        .collect()
}

/// Creates `kind` objects named `names[i]` with `specs[i]`, 16 at a time.
/// Each answer is the object as stored, or the API server's message.
pub async fn create_all(
    c: &Client,
    ns: &str,
    kind: &str,
    objects: Vec<(String, Value)>,
) -> Vec<Result<Value, String>> {
    let gvk = GroupVersionKind::gvk(keys::GROUP, keys::VERSION, kind);
    let api: Api<DynamicObject> = Api::namespaced_with(c.clone(), ns, &ApiResource::from_gvk(&gvk));
    let mut answers: Vec<(usize, Result<Value, String>)> =
        futures::stream::iter(objects.into_iter().enumerate())
            .map(|(i, (name, spec))| {
                let api = api.clone();
                async move {
                    let obj: DynamicObject = serde_json::from_value(json!({
                        "apiVersion": format!("{}/{}", keys::GROUP, keys::VERSION),
                        "kind": kind,
                        "metadata": {"name": name},
                        "spec": spec,
                    }))
                    .expect("an object");
                    let r = match api.create(&PostParams::default(), &obj).await {
                        Ok(stored) => Ok(serde_json::to_value(stored).expect("json")),
                        Err(kube::Error::Api(s)) => Err(s.message),
                        Err(e) => Err(format!("not answered: {e}")),
                    };
                    (i, r)
                }
            })
            .buffer_unordered(16)
            .collect()
            .await;
    answers.sort_by_key(|(i, _)| *i);
    answers.into_iter().map(|(_, r)| r).collect()
}

/// The API server's refusals of one test: how many, and the first few
/// messages (for the test's log).
#[derive(Default)]
pub struct Refusals {
    pub count: u64,
    pub messages: BTreeSet<String>,
}

impl Refusals {
    /// Counts refusal `message` if it carries a message of the API server;
    /// false if it does not (a problem of the case).
    pub fn count(&mut self, message: &str) -> bool {
        if message.trim().is_empty() || message.starts_with("not answered") {
            return false;
        }
        self.count += 1;
        if self.messages.len() < 3 {
            self.messages.insert(message.to_string());
        }
        true
    }
}

/// The Ready reason of a status that is at the object's generation.
fn ready_reason(
    generation: Option<i64>,
    observed: i64,
    conditions: &[Condition],
) -> Option<String> {
    (Some(observed) == generation)
        .then(|| conditions.iter().find(|c| c.type_ == "Ready"))
        .flatten()
        .map(|c| c.reason.clone())
}

/// The verdict on one accepted Debugger, once the operator has seen its
/// generation: the Ready reason.
pub fn verdict(d: &Debugger) -> Option<String> {
    let s = d.status.as_ref()?;
    ready_reason(d.metadata.generation, s.observed_generation, &s.conditions)
}

/// The Pinger's own verdict, once the operator has seen its generation: the
/// Ready reason (`TargetsValid` or `InvalidSpec`).
pub fn pinger_verdict(p: &Pinger) -> Option<String> {
    let s = p.status.as_ref()?;
    ready_reason(p.metadata.generation, s.observed_generation, &s.conditions)
}

pub const REASONS: [&str; 9] = [
    "WorkloadReady",
    "RollingOut",
    "WorkloadNotReady",
    "NoNodesSelected",
    "InvalidSpec",
    "PingerNotFound",
    "PingerNotReady",
    "ConfigMapNotFound",
    "WorkloadRefused",
];

/// Verdicts that the operator also records as a Warning Event of the same
/// reason (docs/reference.md, "Events").
const WARNED: [&str; 4] = [
    "InvalidSpec",
    "PingerNotFound",
    "ConfigMapNotFound",
    "WorkloadRefused",
];

/// The verdicts on the objects of one kind: how many of each reason, and
/// the objects whose verdict must come with a Warning Event (name ->
/// reason).
#[derive(Default)]
pub struct Verdicts {
    pub reasons: BTreeMap<String, u64>,
    pub warned: BTreeMap<String, String>,
}

impl Verdicts {
    pub fn add(&mut self, name: String, reason: String, warned: bool) {
        if warned {
            self.warned.insert(name, reason.clone());
        }
        *self.reasons.entry(reason).or_default() += 1;
    }
}

/// The verdicts on `debuggers` that `ok` accepts; every other verdict
/// (none at all included) goes to `bad`.
pub fn debugger_verdicts(
    debuggers: &[Debugger],
    ok: impl Fn(&Debugger, &str) -> bool,
    mut bad: impl FnMut(&Debugger, Option<String>),
) -> Verdicts {
    let mut verdicts = Verdicts::default();
    for d in debuggers {
        match verdict(d) {
            Some(r) if ok(d, &r) => {
                let warned = WARNED.contains(&r.as_str());
                verdicts.add(d.name_any(), r, warned);
            }
            other => bad(d, other),
        }
    }
    verdicts
}

/// The Warning Events of `ns` with a message: (kind, name) -> reasons.
async fn warnings(c: &Client, ns: &str) -> Result<BTreeMap<(String, String), BTreeSet<String>>> {
    let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for e in events(c, ns, "type=Warning").await? {
        if e.message.as_deref().unwrap_or_default().trim().is_empty() {
            continue;
        }
        let o = e.involved_object;
        out.entry((o.kind.unwrap_or_default(), o.name.unwrap_or_default()))
            .or_default()
            .insert(e.reason.unwrap_or_default());
    }
    Ok(out)
}

/// The objects of `kind` in `want` (name -> reason) that have no Warning
/// Event of that reason with a message, waiting up to a minute for them.
pub async fn missing_warnings(
    c: &Client,
    ns: &str,
    kind: &str,
    want: &BTreeMap<String, String>,
) -> Result<Vec<String>> {
    let missing = || async {
        let have = warnings(c, ns).await?;
        Ok::<_, anyhow::Error>(
            want.iter()
                .filter(|(name, reason)| {
                    !have
                        .get(&(kind.to_string(), name.to_string()))
                        .is_some_and(|r| r.contains(*reason))
                })
                .map(|(name, reason)| format!("{kind} {name}: {reason} without a Warning Event"))
                .collect::<Vec<_>>(),
        )
    };
    let _ = wait_for(Duration::from_secs(60), "the Warning Events", || async {
        Ok(missing().await?.is_empty())
    })
    .await;
    missing().await
}
