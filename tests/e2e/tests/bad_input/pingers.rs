//! The steps of the Pinger test (docs/testing.md, "Bad input"): each
//! Pinger `p-N` is referenced by a Debugger `d-N`; what the operator must
//! say of both, and the few Pingers that also run.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use combo_api::{keys, Debugger, Pinger, PingerSpec};
use combo_e2e::{nodes, restarts, wait_for};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

use crate::harness::{
    create_all, debugger_verdicts, missing_warnings, pinger_verdict, verdict, Refusals, Verdicts,
    REASONS,
};
use crate::run::Run;

/// How many accepted Pingers also run, one pod each on a simulated node.
const RUNNING: usize = 3;

/// The problems of the cases by index, `usize::MAX` for those of no case.
#[derive(Default)]
pub struct Problems(BTreeMap<usize, Vec<String>>);

impl Problems {
    fn add(&mut self, i: usize, what: String) {
        self.0.entry(i).or_default().push(what);
    }

    /// How many of the `n` cases have a problem.
    pub fn cases(&self, n: usize) -> usize {
        self.0.keys().filter(|i| **i < n).count()
    }

    /// One line a problem, with the spec of its case.
    pub fn report(&self, specs: &[Value]) -> Vec<String> {
        self.0
            .iter()
            .flat_map(|(i, what)| {
                let spec = specs.get(*i).map(|s| s.to_string()).unwrap_or_default();
                what.iter()
                    .map(move |w| format!("case {i}: {w}; spec {spec}"))
            })
            .collect()
    }
}

/// The case of object `p-N` or `d-N`: N.
fn index(name: &str) -> usize {
    name[2..].parse::<usize>().unwrap_or_default()
}

/// Probes a pinger of `spec` sends per second, at most.
fn probe_rate(spec: &PingerSpec) -> u64 {
    let targets = spec.ping.len() + spec.tcp_ping.len() + spec.udp_ping.len() + spec.dns.len();
    targets as u64 * u64::from(spec.count) / u64::from(spec.interval_seconds.max(1))
}

/// The accepted Pingers of the API server's answers `pingers`: index ->
/// the spec as stored, defaults applied. Counts the refusals.
pub fn stored_specs(
    pingers: &[Result<Value, String>],
    refusals: &mut Refusals,
    problems: &mut Problems,
) -> BTreeMap<usize, PingerSpec> {
    let mut stored = BTreeMap::new();
    for (i, r) in pingers.iter().enumerate() {
        match r {
            Ok(obj) => match serde_json::from_value::<PingerSpec>(obj["spec"].clone()) {
                Ok(s) => {
                    stored.insert(i, s);
                }
                Err(e) => problems.add(i, format!("stored spec does not read as a Pinger: {e}")),
            },
            Err(m) => {
                if !refusals.count(m) {
                    problems.add(i, format!("refused without a message ({m})"))
                }
            }
        }
    }
    stored
}

/// Makes Debugger `d-N` for each of the `n` cases, with the pinger
/// enabled, selecting no node; the first few accepted Pingers that name no
/// image and probe little also run, one pod each. Returns those cases.
pub async fn create_debuggers(
    run: &Run,
    stored: &BTreeMap<usize, PingerSpec>,
    problems: &mut Problems,
) -> Vec<usize> {
    let node_names = nodes();
    let running: Vec<usize> = stored
        .iter()
        .filter(|(_, s)| s.image.is_empty() && probe_rate(s) <= 30)
        .map(|(i, _)| *i)
        .take(RUNNING.min(node_names.len()))
        .collect();
    let debuggers: Vec<(String, Value)> = (0..run.n)
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
    for (i, r) in create_all(&run.c, &run.ns.name, "Debugger", debuggers)
        .await
        .into_iter()
        .enumerate()
    {
        if let Err(m) = r {
            problems.add(i, format!("its Debugger was refused: {m}"));
        }
    }
    running
}

// What the operator must say: each accepted Pinger's Ready reason is what
// the target parser says of its stored spec; a Debugger whose Pinger was
// refused is PingerNotFound, any other is reconciled or reported with
// another reason.

/// The Ready reason case `i`'s Pinger must have.
fn expected_pinger(stored: &BTreeMap<usize, PingerSpec>, i: usize) -> &'static str {
    match stored.get(&i) {
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
    }
}

/// Whether `reason` is right for case `i`'s Debugger.
fn debugger_ok(stored: &BTreeMap<usize, PingerSpec>, i: usize, reason: &str) -> bool {
    // PingerNotFound exactly when the Pinger was refused; PingerNotReady
    // only when its Pinger is not Ready
    // (docs/operator.md, "Validation, status and Events").
    REASONS.contains(&reason)
        && (reason == "PingerNotFound") != stored.contains_key(&i)
        && (reason != "PingerNotReady"
            || matches!(expected_pinger(stored, i), "InvalidSpec" | "NoTargets"))
}

/// Waits up to 5 minutes for the expected verdict on every Pinger and
/// Debugger; running out is a problem of no case.
pub async fn wait_for_verdicts(
    run: &Run,
    stored: &BTreeMap<usize, PingerSpec>,
    problems: &mut Problems,
) {
    let pinger_api = Api::<Pinger>::namespaced(run.c.clone(), &run.ns.name);
    let debugger_api = Api::<Debugger>::namespaced(run.c.clone(), &run.ns.name);
    let waited = wait_for(
        Duration::from_secs(300),
        "the expected verdict on every Pinger and Debugger",
        || async {
            let ps = pinger_api.list(&ListParams::default()).await?;
            let ds = debugger_api.list(&ListParams::default()).await?;
            Ok(ps.items.iter().all(|p| {
                pinger_verdict(p).as_deref() == Some(expected_pinger(stored, index(&p.name_any())))
            }) && ds
                .items
                .iter()
                .all(|d| verdict(d).is_some_and(|r| debugger_ok(stored, index(&d.name_any()), &r))))
        },
    )
    .await;
    if let Err(e) = waited {
        problems.add(usize::MAX, format!("{e:#}"));
    }
}

/// The verdicts on the Pingers and on the Debuggers: each one as expected,
/// and a reported problem also a Warning Event on the Pinger or on the
/// Debugger.
pub async fn check_verdicts(
    run: &Run,
    stored: &BTreeMap<usize, PingerSpec>,
    problems: &mut Problems,
) -> Result<(Verdicts, Verdicts)> {
    let (c, ns) = (&run.c, run.ns.name.as_str());
    let mut pingers = Verdicts::default();
    for p in Api::<Pinger>::namespaced(c.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items
    {
        let i = index(&p.name_any());
        let got = pinger_verdict(&p);
        let warned = got.as_deref() == Some("InvalidSpec");
        pingers.add(
            p.name_any(),
            got.clone().unwrap_or_else(|| "none".into()),
            warned,
        );
        if got.as_deref() != Some(expected_pinger(stored, i)) {
            let expected = expected_pinger(stored, i);
            problems.add(i, format!("Pinger verdict {got:?}, expected {expected}"));
        }
    }
    let debuggers = debugger_verdicts(
        &Api::<Debugger>::namespaced(c.clone(), ns)
            .list(&ListParams::default())
            .await?
            .items,
        |d, r| debugger_ok(stored, index(&d.name_any()), r),
        |d, other| problems.add(index(&d.name_any()), format!("Debugger verdict {other:?}")),
    );
    for (kind, want) in [("Pinger", &pingers.warned), ("Debugger", &debuggers.warned)] {
        for m in missing_warnings(c, ns, kind, want).await? {
            let name = m.split_whitespace().nth(1).unwrap_or_default();
            problems.add(index(name.trim_end_matches(':')), m);
        }
    }
    Ok((pingers, debuggers))
}

/// The Pingers that run: their pods come up and no container restarts
/// while they probe what they were given.
pub async fn check_running(run: &Run, running: &[usize], problems: &mut Problems) -> Result<()> {
    let pods = Api::<Pod>::namespaced(run.c.clone(), &run.ns.name);
    for &i in running {
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
            problems.add(i, format!("{e:#}"));
        }
    }
    if !running.is_empty() {
        // Several probe rounds of the given intervals and timeouts.
        tokio::time::sleep(Duration::from_secs(15)).await;
    }
    for &i in running {
        let selector = keys::debugger_selector(&format!("d-{i:04}"));
        let n = restarts(&run.c, &run.ns.name, &selector).await?;
        if n != 0 {
            problems.add(i, format!("{n} container restart(s) of its running pod"));
        }
    }
    Ok(())
}
