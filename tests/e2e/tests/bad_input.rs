//! Generated Debugger and Pinger specs against the real API server and the
//! operator (docs/testing.md, "Bad input"): every spec is either refused by
//! the API server with a message, or accepted and then reconciled or
//! reported with a reason (a Warning Event with every reported problem);
//! the operator never restarts, and a sentinel Debugger's workload is never
//! touched. Seeded: `COMBO_BAD_INPUT_SEED` (a number) picks the cases of
//! both tests, `COMBO_BAD_INPUT_CASES` how many (default 1,000 each).

#[path = "bad_input/pinger_specs.rs"]
mod pinger_specs;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_api::{keys, Debugger, Pinger, PingerSpec};
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::{
    apply_yaml, client, events, install_operator, namespace, nodes, operator_pid, record, restarts,
    wait_for,
};
use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client, ResourceExt};
use proptest::prelude::*;
use proptest::strategy::ValueTree as _;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};

/// Created by a generated Debugger string if it ever reached a shell.
const PWNED: &str = "/tmp/kube-combo-pwned";

/// Strings that have broken tools before: empty, shell metacharacters,
/// newlines, long (300 characters, 4 KB), non-ASCII, and plain names.
fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z][a-z0-9-]{0,15}",
        Just(format!("$(touch {PWNED})")),
        Just("`id`; rm -rf / #".to_string()),
        Just("a\nb\r\nc\u{0}".to_string()),
        Just("x".repeat(300)),
        Just("y".repeat(4096)),
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

/// `n` values of `strategy`, from `seed`; `stream` tells the two tests'
/// sequences apart (the Debugger test's is stream 0).
fn generate<S: Strategy>(strategy: S, seed: u64, stream: u8, n: usize) -> Vec<S::Value> {
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

/// Creates `kind` objects named `names[i]` with `specs[i]`, 16 at a time.
/// Each answer is the object as stored, or the API server's message.
async fn create_all(
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

/// Whether a refusal carries a message of the API server.
fn refused_with_a_message(message: &str) -> bool {
    !message.trim().is_empty() && !message.starts_with("not answered")
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

const REASONS: [&str; 8] = [
    "WorkloadReady",
    "RollingOut",
    "WorkloadNotReady",
    "NoNodesSelected",
    "InvalidSpec",
    "PingerNotFound",
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
async fn missing_warnings(
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

/// Makes Debugger `sentinel` in `ns`, waits for its DaemonSet and returns
/// what tells whether it was written since.
async fn start_sentinel(c: &Client, ns: &str) -> Result<Sentinel> {
    apply_yaml(
        ns,
        &DebuggerBuilder::new("sentinel")
            .selector("kubecombo.io/bad-input", "none")
            .yaml(),
    )?;
    wait_for(
        Duration::from_secs(120),
        "the sentinel's DaemonSet",
        || async {
            Ok(Api::<DaemonSet>::namespaced(c.clone(), ns)
                .get_opt("sentinel")
                .await?
                .is_some())
        },
    )
    .await?;
    sentinel(c, ns).await
}

/// The sentinel DaemonSet as far as a writer other than the DaemonSet
/// controller sees it: its UID, generation (bumped by every spec change),
/// labels, annotations and the managedFields entries of every manager but
/// kube-controller-manager, whose status updates (observedGeneration, pod
/// counts) come when they come and change the resourceVersion.
type Sentinel = (String, Option<i64>, Value);

async fn sentinel(c: &Client, ns: &str) -> Result<Sentinel> {
    let ds = Api::<DaemonSet>::namespaced(c.clone(), ns)
        .get("sentinel")
        .await?;
    let managers: Vec<_> = ds
        .managed_fields()
        .iter()
        .filter(|m| m.manager.as_deref() != Some("kube-controller-manager"))
        .collect();
    Ok((
        ds.uid().unwrap_or_default(),
        ds.metadata.generation,
        json!({"labels": ds.labels(), "annotations": ds.annotations(), "managedFields": managers}),
    ))
}

#[tokio::test(flavor = "multi_thread")]
async fn generated_debugger_specs_are_refused_with_a_message_or_reconciled_or_reported(
) -> Result<()> {
    install_operator();
    let (seed, n) = (seed(), cases());
    eprintln!(
        "bad input: {n} Debugger cases, seed {seed} (COMBO_BAD_INPUT_SEED={seed} repeats them)"
    );
    let ns = namespace("bad-input").await;
    let guard = namespace("bad-input-sentinel").await;
    let c = client().await;
    let sentinel_before = start_sentinel(&c, &guard.name).await?;
    let pid = operator_pid().context("the operator process")?;
    let _ = std::fs::remove_file(PWNED);

    let specs = generate(spec(), seed, 0, n);
    let objects = specs
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("case-{i:04}"), s.clone()))
        .collect();
    let results = create_all(&c, &ns.name, "Debugger", objects).await;

    let mut problems = Vec::new();
    let mut refused = 0u64;
    let mut messages = BTreeSet::new();
    let mut accepted = BTreeMap::new();
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(_) => {
                accepted.insert(format!("case-{i:04}"), i);
            }
            Err(m) if !refused_with_a_message(&m) => problems.push(format!(
                "case {i}: refused without a message ({m}): {}",
                specs[i]
            )),
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
    let mut warned = BTreeMap::new();
    for d in &all.items {
        match verdict(d) {
            Some(r) if REASONS.contains(&r.as_str()) => {
                if WARNED.contains(&r.as_str()) {
                    warned.insert(d.name_any(), r.clone());
                }
                *reasons.entry(r).or_default() += 1
            }
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
    // A reported problem is also a Warning Event on the Debugger.
    for m in missing_warnings(&c, &ns.name, "Debugger", &warned).await? {
        let i = m
            .split_whitespace()
            .nth(1)
            .and_then(|name| accepted.get(name.trim_end_matches(':')))
            .copied()
            .unwrap_or_default();
        problems.push(format!("{m}, for {}", specs[i]));
    }
    if operator_pid() != Some(pid) {
        problems.push("the operator process restarted".into());
    }
    // The `$(touch ...)` strings reached no shell: the pods of simulated
    // nodes run on this machine.
    if std::path::Path::new(PWNED).exists() {
        problems.push(format!("{PWNED} exists: a spec string reached a shell"));
    }
    let sentinel_after = sentinel(&c, &guard.name).await?;
    if sentinel_after != sentinel_before {
        problems.push(format!(
            "the sentinel's DaemonSet was written: {sentinel_before:?} became {sentinel_after:?}"
        ));
    }
    eprintln!(
        "bad input: {refused} Debuggers refused by the API server, {} accepted: {reasons:?}, {} with a Warning Event; refusals such as {messages:#?}",
        accepted.len(),
        warned.len()
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

/// The Pinger's own verdict, once the operator has seen its generation: the
/// Ready reason (`TargetsValid` or `InvalidSpec`).
fn pinger_verdict(p: &Pinger) -> Option<String> {
    let s = p.status.as_ref()?;
    (Some(s.observed_generation) == p.metadata.generation)
        .then(|| s.conditions.iter().find(|c| c.type_ == "Ready"))
        .flatten()
        .map(|c| c.reason.clone())
}

/// Probes a pinger of `spec` sends per second, at most.
fn probe_rate(spec: &PingerSpec) -> u64 {
    let targets = spec.ping.len() + spec.tcp_ping.len() + spec.udp_ping.len() + spec.dns.len();
    targets as u64 * u64::from(spec.count) / u64::from(spec.interval_seconds.max(1))
}

/// How many accepted Pingers also run, one pod each on a simulated node.
const RUNNING: usize = 3;

#[tokio::test(flavor = "multi_thread")]
async fn generated_pinger_specs_are_refused_with_a_message_or_reconciled_or_reported() -> Result<()>
{
    install_operator();
    let (seed, n) = (seed(), cases());
    eprintln!(
        "bad input: {n} Pinger cases, seed {seed} (COMBO_BAD_INPUT_SEED={seed} repeats them)"
    );
    let ns = namespace("bad-pinger").await;
    let guard = namespace("bad-pinger-sentinel").await;
    let c = client().await;
    let sentinel_before = start_sentinel(&c, &guard.name).await?;
    let pid = operator_pid().context("the operator process")?;
    let _ = std::fs::remove_file(pinger_specs::PWNED);

    let specs = generate(pinger_specs::spec(), seed, b'P', n);
    let objects = specs
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("p-{i:04}"), s.clone()))
        .collect();
    let pingers = create_all(&c, &ns.name, "Pinger", objects).await;

    let mut problems: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut problem = |i: usize, what: String| problems.entry(i).or_default().push(what);
    let mut refused = 0u64;
    let mut messages = BTreeSet::new();
    // Accepted Pingers: index -> the spec as stored, defaults applied.
    let mut stored: BTreeMap<usize, PingerSpec> = BTreeMap::new();
    for (i, r) in pingers.iter().enumerate() {
        match r {
            Ok(obj) => match serde_json::from_value::<PingerSpec>(obj["spec"].clone()) {
                Ok(s) => {
                    stored.insert(i, s);
                }
                Err(e) => problem(i, format!("stored spec does not read as a Pinger: {e}")),
            },
            Err(m) if !refused_with_a_message(m) => {
                problem(i, format!("refused without a message ({m})"))
            }
            Err(m) => {
                refused += 1;
                if messages.len() < 3 {
                    messages.insert(m.clone());
                }
            }
        }
    }

    // Every case is referenced by a Debugger with the pinger enabled, that
    // selects no node; the first few accepted Pingers that name no image
    // and probe little also run, one pod each.
    let node_names = nodes();
    let running: Vec<usize> = stored
        .iter()
        .filter(|(_, s)| s.image.is_empty() && probe_rate(s) <= 30)
        .map(|(i, _)| *i)
        .take(RUNNING.min(node_names.len()))
        .collect();
    let debuggers: Vec<(String, Value)> = (0..n)
        .map(|i| {
            let spec = match running.iter().position(|r| *r == i) {
                Some(k) => json!({
                    "workloadType": "pod",
                    "nodeName": node_names[k],
                    "enablePinger": true,
                    "pinger": format!("p-{i:04}"),
                }),
                None => json!({
                    "enablePinger": true,
                    "pinger": format!("p-{i:04}"),
                    "selector": {"kubecombo.io/bad-input": "none"},
                }),
            };
            (format!("d-{i:04}"), spec)
        })
        .collect();
    for (i, r) in create_all(&c, &ns.name, "Debugger", debuggers)
        .await
        .into_iter()
        .enumerate()
    {
        if let Err(m) = r {
            problem(i, format!("its Debugger was refused: {m}"));
        }
    }

    // What the operator must say: each accepted Pinger's Ready reason is
    // what the target parser says of its stored spec; a Debugger whose
    // Pinger was refused is PingerNotFound, any other is reconciled or
    // reported with another reason.
    let expected_pinger = |i: usize| match stored.get(&i) {
        Some(s) if !s.invalid_targets().is_empty() => "InvalidSpec",
        // Nothing to probe (docs/operator.md, "Pinger status").
        Some(s)
            if s.ping.is_empty()
                && s.tcp_ping.is_empty()
                && s.udp_ping.is_empty()
                && s.dns.is_empty()
                && !s.peers
                && !s.gateway =>
        {
            "NoTargets"
        }
        Some(_) => "TargetsValid",
        None => "(a spec that reads as a Pinger)",
    };
    let debugger_ok = |i: usize, reason: &str| {
        // PingerNotFound exactly when the Pinger was refused.
        REASONS.contains(&reason) && (reason == "PingerNotFound") != stored.contains_key(&i)
    };
    let index = |name: &str| name[2..].parse::<usize>().unwrap_or_default();
    let pinger_api = Api::<Pinger>::namespaced(c.clone(), &ns.name);
    let debugger_api = Api::<Debugger>::namespaced(c.clone(), &ns.name);
    let waited = wait_for(
        Duration::from_secs(300),
        "the expected verdict on every Pinger and Debugger",
        || async {
            let ps = pinger_api.list(&ListParams::default()).await?;
            let ds = debugger_api.list(&ListParams::default()).await?;
            Ok(ps.items.iter().all(|p| {
                pinger_verdict(p).as_deref() == Some(expected_pinger(index(&p.name_any())))
            }) && ds
                .items
                .iter()
                .all(|d| verdict(d).is_some_and(|r| debugger_ok(index(&d.name_any()), &r))))
        },
    )
    .await;
    if let Err(e) = waited {
        problems
            .entry(usize::MAX)
            .or_default()
            .push(format!("{e:#}"));
    }
    let mut problem = |i: usize, what: String| problems.entry(i).or_default().push(what);
    let mut pinger_reasons: BTreeMap<String, u64> = BTreeMap::new();
    let mut pinger_warned = BTreeMap::new();
    for p in pinger_api.list(&ListParams::default()).await?.items {
        let i = index(&p.name_any());
        let got = pinger_verdict(&p);
        *pinger_reasons
            .entry(got.clone().unwrap_or_else(|| "none".into()))
            .or_default() += 1;
        if got.as_deref() == Some("InvalidSpec") {
            pinger_warned.insert(p.name_any(), "InvalidSpec".to_string());
        }
        if got.as_deref() != Some(expected_pinger(i)) {
            problem(
                i,
                format!("Pinger verdict {got:?}, expected {}", expected_pinger(i)),
            );
        }
    }
    let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
    let mut warned = BTreeMap::new();
    for d in debugger_api.list(&ListParams::default()).await?.items {
        let i = index(&d.name_any());
        match verdict(&d) {
            Some(r) if debugger_ok(i, &r) => {
                if WARNED.contains(&r.as_str()) {
                    warned.insert(d.name_any(), r.clone());
                }
                *reasons.entry(r).or_default() += 1;
            }
            other => problem(i, format!("Debugger verdict {other:?}")),
        }
    }
    // A reported problem is also a Warning Event, on the Pinger or on the
    // Debugger.
    for (kind, want) in [("Pinger", &pinger_warned), ("Debugger", &warned)] {
        for m in missing_warnings(&c, &ns.name, kind, want).await? {
            let name = m.split_whitespace().nth(1).unwrap_or_default();
            problem(index(name.trim_end_matches(':')), m);
        }
    }

    // The Pingers that run: their pods come up and no container restarts
    // while they probe what they were given.
    let pods = Api::<Pod>::namespaced(c.clone(), &ns.name);
    for &i in &running {
        let selector = keys::debugger_selector(&format!("d-{i:04}"));
        let lp = ListParams::default().labels(&selector);
        let up = wait_for(
            Duration::from_secs(120),
            &format!("the pod of d-{i:04} running"),
            || async {
                Ok(pods.list(&lp).await?.items.iter().any(|p| {
                    p.status.as_ref().is_some_and(|s| {
                        s.phase.as_deref() == Some("Running")
                            && s.container_statuses.iter().flatten().count() == 2
                            && s.container_statuses
                                .iter()
                                .flatten()
                                .all(|cs| cs.state.as_ref().is_some_and(|st| st.running.is_some()))
                    })
                }))
            },
        )
        .await;
        if let Err(e) = up {
            problem(i, format!("{e:#}"));
        }
    }
    if !running.is_empty() {
        // Several probe rounds of the given intervals and timeouts.
        tokio::time::sleep(Duration::from_secs(15)).await;
    }
    for &i in &running {
        let selector = keys::debugger_selector(&format!("d-{i:04}"));
        let n = restarts(&c, &ns.name, &selector).await?;
        if n != 0 {
            problem(i, format!("{n} container restart(s) of its running pod"));
        }
    }

    let mut global = Vec::new();
    if operator_pid() != Some(pid) {
        global.push("the operator process restarted".to_string());
    }
    if std::path::Path::new(pinger_specs::PWNED).exists() {
        global.push(format!(
            "{} exists: a spec string reached a shell",
            pinger_specs::PWNED
        ));
    }
    let sentinel_after = sentinel(&c, &guard.name).await?;
    if sentinel_after != sentinel_before {
        global.push(format!(
            "the sentinel's DaemonSet was written: {sentinel_before:?} became {sentinel_after:?}"
        ));
    }
    eprintln!(
        "bad input: {refused} Pingers refused by the API server, {} accepted: {pinger_reasons:?}; \
         their Debuggers: {reasons:?}, {} Pinger and {} Debugger Warning Events; {} running ({running:?}); \
         refusals such as {messages:#?}",
        stored.len(),
        pinger_warned.len(),
        warned.len(),
        running.len(),
    );
    let failed_cases = problems.keys().filter(|i| **i < n).count() + global.len();
    let tried = n as u64;
    record(
        "bad input",
        &format!("generated Pinger specs (seed {seed})"),
        tried,
        tried.saturating_sub(failed_cases as u64),
        0,
    );
    let report: Vec<String> = problems
        .iter()
        .flat_map(|(i, what)| {
            let spec = specs.get(*i).map(|s| s.to_string()).unwrap_or_default();
            what.iter()
                .map(move |w| format!("case {i}: {w}; spec {spec}"))
        })
        .chain(global)
        .collect();
    assert!(
        report.is_empty(),
        "seed {seed}: {} problem(s):\n{}",
        report.len(),
        report.join("\n")
    );
    Ok(())
}
