//! Generated Debugger specs against the real API server and the operator
//! (docs/testing.md, "Bad input"): every spec is either refused by the API
//! server with a message, or accepted and then reconciled or reported with a
//! reason; the operator never restarts, and a sentinel Debugger's workload
//! is never touched. Seeded: `COMBO_BAD_INPUT_SEED` (a number) picks the
//! cases, `COMBO_BAD_INPUT_CASES` how many (default 1,000).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_api::Debugger;
use combo_e2e::{apply_yaml, client, install_operator, namespace, operator_pid, record, wait_for};
use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::DaemonSet;
use kube::api::{DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client, ResourceExt};
use proptest::prelude::*;
use proptest::strategy::ValueTree as _;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};

/// Created by a generated string if it ever reached a shell.
const PWNED: &str = "/tmp/kube-combo-pwned";

/// Strings that have broken tools before: empty, shell metacharacters,
/// newlines, very long, non-ASCII, and plain names.
fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z][a-z0-9-]{0,15}",
        Just(format!("$(touch {PWNED})")),
        Just("`id`; rm -rf / #".to_string()),
        Just("a\nb\r\nc\u{0}".to_string()),
        Just("x".repeat(300)),
        Just("-n".to_string()),
        "\\PC{0,24}",
    ]
}

/// Mostly a plain name, sometimes [`nasty`].
fn name() -> impl Strategy<Value = String> {
    prop_oneof![3 => "[a-z][a-z0-9-]{0,15}", 1 => nasty()]
}

fn run_at() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("@daily".to_string()),
        Just("*/5 * * * *".to_string()),
        Just("61 * * * *".to_string()),
        Just("0 0 30 2 *".to_string()),
        Just("2024-02-29T12:00:00Z".to_string()),
        Just("2023-02-29T12:00:00Z".to_string()),
        Just("1970-01-01T00:00:00Z".to_string()),
        Just("9999-12-31T23:59:59Z".to_string()),
        Just("2026-13-01T00:00:00Z".to_string()),
        nasty(),
    ]
}

fn quantity() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => prop_oneof![Just(json!("100m")), Just(json!("128Mi"))],
        1 => Just(json!("-1")),
        1 => Just(json!(0)),
        1 => Just(json!(1.5)),
        1 => nasty().prop_map(Value::from),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        12 => (1i64..100).prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => Just(json!(0)),
        1 => Just(json!("60")),
        1 => Just(json!(2.5)),
    ]
}

/// One generated spec. Whatever it asks for, it selects no node (no pod
/// runs): the selector always carries a label no node has, and a Pod
/// Debugger's nodeName, when it is a name at all, names no node.
fn spec() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            4 => prop_oneof![Just(json!("daemonset")), Just(json!("pod"))],
            1 => nasty().prop_map(Value::from)
        ],
        run_at(),
        name(),
        (any::<bool>(), name()),
        (any::<bool>(), name()),
        proptest::collection::vec(
            prop_oneof![
                4 => prop_oneof![Just(json!("disk")), Just(json!("custom"))],
                1 => nasty().prop_map(Value::from)
            ],
            0..4,
        ),
        (quantity(), quantity()),
        (number(), number()),
        prop_oneof![3 => Just(String::new()), 1 => name()],
        (any::<bool>(), name()),
    )
        .prop_map(
            |(kind, run_at, node, (pinger_on, pinger), (cm_on, cm), cats, (cpu, mem), (timeout, keep), summary, (sys, label))| {
                json!({
                    "workloadType": kind,
                    "runAt": run_at,
                    "nodeName": if node.is_empty() { "nowhere".to_string() } else { format!("nowhere-{node}") },
                    "enablePinger": pinger_on,
                    "pinger": pinger,
                    "enableConfigMap": cm_on,
                    "configMap": cm,
                    "categories": cats,
                    "cpu": cpu,
                    "memory": mem,
                    "scriptTimeoutSeconds": timeout,
                    "errlogRetention": keep,
                    "summaryConfigMap": summary,
                    "enableSys": sys,
                    "selector": {"kubecombo.io/bad-input": "none", "kubecombo.io/x": label},
                })
            },
        )
}

fn seed() -> u64 {
    std::env::var("COMBO_BAD_INPUT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261124)
}

fn cases() -> usize {
    std::env::var("COMBO_BAD_INPUT_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000)
}

fn generate(seed: u64, n: usize) -> Vec<Value> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    );
    let strategy = spec();
    (0..n)
        .map(|_| {
            strategy
                .new_tree(&mut runner)
                .expect("a generated spec")
                .current()
        })
        .collect()
}

/// The verdict on one accepted Debugger, once the operator has seen its
/// generation: the Ready reason.
fn verdict(d: &Debugger) -> Option<String> {
    let s = d.status.as_ref()?;
    (Some(s.observed_generation) == d.metadata.generation)
        .then(|| s.conditions.iter().find(|c| c.type_ == "Ready"))
        .flatten()
        .map(|c| c.reason.clone())
}

const REASONS: [&str; 5] = [
    "WorkloadReady",
    "WorkloadNotReady",
    "InvalidSpec",
    "PingerNotFound",
    "WorkloadRefused",
];

async fn sentinel(c: &Client, ns: &str) -> Result<(String, String)> {
    let ds = Api::<DaemonSet>::namespaced(c.clone(), ns)
        .get("sentinel")
        .await?;
    Ok((
        ds.uid().unwrap_or_default(),
        ds.resource_version().unwrap_or_default(),
    ))
}

#[tokio::test(flavor = "multi_thread")]
async fn generated_debugger_specs_are_refused_with_a_message_or_reconciled_or_reported(
) -> Result<()> {
    install_operator();
    let (seed, n) = (seed(), cases());
    eprintln!("bad input: {n} cases, seed {seed} (COMBO_BAD_INPUT_SEED={seed} repeats them)");
    let ns = namespace("bad-input").await;
    let guard = namespace("bad-input-sentinel").await;
    let c = client().await;
    apply_yaml(
        &guard.name,
        "apiVersion: kubecombo.io/v1\nkind: Debugger\nmetadata:\n  name: sentinel\nspec:\n  selector:\n    kubecombo.io/bad-input: none\n",
    )?;
    wait_for(
        Duration::from_secs(120),
        "the sentinel's DaemonSet",
        || async {
            Ok(Api::<DaemonSet>::namespaced(c.clone(), &guard.name)
                .get_opt("sentinel")
                .await?
                .is_some())
        },
    )
    .await?;
    let sentinel_before = sentinel(&c, &guard.name).await?;
    let pid = operator_pid().context("the operator process")?;
    let _ = std::fs::remove_file(PWNED);

    let gvk = GroupVersionKind::gvk("kubecombo.io", "v1", "Debugger");
    let api: Api<DynamicObject> =
        Api::namespaced_with(c.clone(), &ns.name, &ApiResource::from_gvk(&gvk));
    let specs = generate(seed, n);
    let results: Vec<(usize, Result<(), String>)> = futures::stream::iter(specs.iter().enumerate())
        .map(|(i, spec)| {
            let api = api.clone();
            async move {
                let obj: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "kubecombo.io/v1",
                    "kind": "Debugger",
                    "metadata": {"name": format!("case-{i:04}")},
                    "spec": spec,
                }))
                .expect("an object");
                let r = match api.create(&PostParams::default(), &obj).await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(s)) => Err(s.message),
                    Err(e) => Err(format!("not answered: {e}")),
                };
                (i, r)
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;

    let mut problems = Vec::new();
    let mut refused = 0u64;
    let mut messages = std::collections::BTreeSet::new();
    let mut accepted = BTreeMap::new();
    for (i, r) in results {
        match r {
            Ok(()) => {
                accepted.insert(format!("case-{i:04}"), i);
            }
            Err(m) if m.trim().is_empty() || m.starts_with("not answered") => problems.push(
                format!("case {i}: refused without a message ({m}): {}", specs[i]),
            ),
            Err(m) => {
                refused += 1;
                if messages.len() < 3 {
                    messages.insert(m);
                }
            }
        }
    }
    // Every accepted spec gets a verdict for its generation.
    let debuggers = Api::<Debugger>::namespaced(c.clone(), &ns.name);
    let waited = wait_for(
        Duration::from_secs(300),
        "a verdict on every accepted spec",
        || async {
            let all = debuggers.list(&ListParams::default()).await?;
            Ok(all.items.iter().filter(|d| verdict(d).is_some()).count() == accepted.len())
        },
    )
    .await;
    let all = debuggers.list(&ListParams::default()).await?;
    let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
    for d in &all.items {
        match verdict(d) {
            Some(r) if REASONS.contains(&r.as_str()) => *reasons.entry(r).or_default() += 1,
            other => {
                let i = accepted.get(&d.name_any()).copied().unwrap_or_default();
                problems.push(format!(
                    "{}: verdict {other:?} for {}",
                    d.name_any(),
                    specs[i]
                ))
            }
        }
    }
    if let Err(e) = waited {
        problems.push(format!("{e:#}"));
    }
    if operator_pid() != Some(pid) {
        problems.push("the operator process restarted".into());
    }
    // The `$(touch ...)` strings reached no shell: the pods of simulated
    // nodes run on this machine.
    if std::path::Path::new(PWNED).exists() {
        problems.push(format!("{PWNED} exists: a spec string reached a shell"));
    }
    if sentinel(&c, &guard.name).await? != sentinel_before {
        problems.push("the sentinel's DaemonSet was written".into());
    }
    eprintln!(
        "bad input: {refused} refused by the API server, {} accepted: {reasons:?}; refusals such as {messages:#?}",
        accepted.len()
    );
    let tried = n as u64;
    record(
        "bad input",
        &format!("generated Debugger specs (seed {seed})"),
        tried,
        tried.saturating_sub(problems.len() as u64),
        0,
    );
    assert!(
        problems.is_empty(),
        "seed {seed}: {} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
    Ok(())
}
