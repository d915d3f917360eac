//! Model-based test (docs/testing.md, "Model-based test"): generated
//! sequences of user actions (create, edit and delete Debuggers, Pingers
//! and ConfigMaps, with name collisions, workload switches, selectors that
//! match no node, deletions of what a Debugger uses, operator restarts)
//! against the real API server, each sequence in a namespace of its own,
//! with the invariants of `model/check.rs` checked after every step.
//!
//! `COMBO_MODEL_SEED` (default: from the clock, printed), and
//! `COMBO_MODEL_SEQUENCES` (default 200) pick the sequences;
//! `COMBO_MODEL_ONLY=3,17` runs only those of them;
//! `COMBO_MODEL_CONCURRENCY` (default 12) how many run at once;
//! `COMBO_MODEL_RESTARTS` (default 2) how many operator restarts the
//! whole run makes.

#[path = "model/check.rs"]
mod check;
#[path = "model/generate.rs"]
mod generate;
#[path = "model/plan.rs"]
mod plan;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use combo_api::{Debugger, Pinger};
use combo_e2e::{
    client, install_operator, namespace, nodes, operator_pid, operator_pods, operator_rolled_out,
    record, running_and_ready, wait_for, OPERATOR_LABELS, OPERATOR_NAMESPACE,
};
use futures::StreamExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use tokio::sync::RwLock;

use check::{Binaries, Violation};
use plan::{Action, Model};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

/// What one sequence came to.
struct Outcome {
    index: usize,
    namespace: String,
    actions: Vec<Action>,
    /// Steps whose invariants were checked.
    checked: usize,
    /// The first step whose invariants did not hold (the sequence stops
    /// there: what follows would build on a state the model does not
    /// know), with every violation seen at its end.
    failed: Option<(usize, Vec<Violation>)>,
}

impl Outcome {
    /// The sequence's actions, the failed step marked, and its violations.
    fn report(&self, seed: u64) -> String {
        let mut text = format!(
            "seed {seed}, sequence {} (namespace {}):\n",
            self.index, self.namespace
        );
        for (i, a) in self.actions.iter().enumerate() {
            let mark = match &self.failed {
                Some((step, _)) if *step == i => "=>",
                _ => "  ",
            };
            text.push_str(&format!("  {mark} step {i}: {a}\n"));
        }
        if let Some((step, found)) = &self.failed {
            text.push_str(&format!(
                "  after step {step}, within {:?}:\n",
                check::BOUND
            ));
            for v in found {
                text.push_str(&format!("    [{}] {}\n", v.invariant, v.what));
            }
        }
        text
    }
}

/// Carries out one action in namespace `ns`.
async fn act(c: &Client, ns: &str, action: &Action) -> Result<()> {
    let cms = Api::<ConfigMap>::namespaced(c.clone(), ns);
    let pingers = Api::<Pinger>::namespaced(c.clone(), ns);
    let debuggers = Api::<Debugger>::namespaced(c.clone(), ns);
    let pp = PostParams::default();
    let merge = |v| Patch::Merge(v);
    match action {
        Action::CreateConfigMap { name, data } => {
            let cm: ConfigMap =
                serde_json::from_value(json!({"metadata": {"name": name}, "data": data}))?;
            cms.create(&pp, &cm).await?;
        }
        Action::EditConfigMap { name, data } => {
            // Replaces the data whole, keys and all.
            let mut cm = cms.get(name).await?;
            cm.data = Some(data.clone());
            cms.replace(name, &pp, &cm).await?;
        }
        Action::DeleteConfigMap { name } => {
            cms.delete(name, &DeleteParams::default()).await?;
        }
        Action::CreatePinger { name, bad_dns } => {
            let p: Pinger = serde_json::from_value(json!({
                "apiVersion": "kubecombo.io/v1", "kind": "Pinger",
                "metadata": {"name": name},
                "spec": plan::pinger_json(bad_dns.as_deref()),
            }))?;
            pingers.create(&pp, &p).await?;
        }
        Action::EditPinger { name, bad_dns } => {
            let spec = plan::pinger_json(bad_dns.as_deref());
            pingers
                .patch(name, &PatchParams::default(), &merge(json!({"spec": spec})))
                .await?;
        }
        Action::DeletePinger { name } => {
            pingers.delete(name, &DeleteParams::default()).await?;
        }
        Action::CreateDebugger { name, spec } => {
            let d: Debugger = serde_json::from_value(json!({
                "apiVersion": "kubecombo.io/v1", "kind": "Debugger",
                "metadata": {"name": name},
                "spec": spec.json(),
            }))?;
            debuggers.create(&pp, &d).await?;
        }
        Action::EditDebugger { name, change } => {
            debuggers
                .patch(
                    name,
                    &PatchParams::default(),
                    &merge(json!({"spec": change.patch()})),
                )
                .await?;
        }
        Action::DeleteDebugger { name } => {
            debuggers.delete(name, &DeleteParams::default()).await?;
        }
        Action::RestartOperator => restart_operator(c).await?,
    }
    Ok(())
}

/// Waits until one operator pod runs, Ready, none is being deleted, and
/// it holds the Lease: a test before this one (leader.rs) runs two
/// replicas and scales back, and a standby takes the Lease only once the
/// removed leader's has expired; until then nothing is reconciled and
/// every step's bound would be spent waiting.
async fn operator_settled(c: &Client) -> Result<()> {
    let leases = Api::<Lease>::namespaced(c.clone(), OPERATOR_NAMESPACE);
    wait_for(
        Duration::from_secs(120),
        "one operator pod, Ready, holding the Lease",
        || async {
            let all = Api::<Pod>::namespaced(c.clone(), OPERATOR_NAMESPACE)
                .list(&ListParams::default().labels(OPERATOR_LABELS))
                .await?
                .items;
            let [only] = all.as_slice() else {
                return Ok(false);
            };
            let settled = only.metadata.deletion_timestamp.is_none() && running_and_ready(only);
            Ok(settled
                && match leases.get_opt("kube-combo-operator").await? {
                    Some(l) => l
                        .spec
                        .and_then(|s| s.holder_identity)
                        .is_some_and(|h| h == only.name_any()),
                    None => true,
                })
        },
    )
    .await
}

/// Deletes the operator's pods and waits until the Deployment's new pod
/// is Ready, the Deployment available and the new pod holds the Lease of
/// `--leader-elect` (docs/operator.md, "Leader election").
async fn restart_operator(c: &Client) -> Result<()> {
    let start = Instant::now();
    let pods = Api::<Pod>::namespaced(c.clone(), OPERATOR_NAMESPACE);
    let pid = operator_pid();
    let old: BTreeSet<String> = operator_pods(c)
        .await?
        .iter()
        .map(|p| p.name_any())
        .collect();
    for name in &old {
        pods.delete(name, &DeleteParams::default()).await?;
    }
    let fresh = || async {
        let all = Api::<Pod>::namespaced(c.clone(), OPERATOR_NAMESPACE)
            .list(&ListParams::default().labels(OPERATOR_LABELS))
            .await?
            .items;
        let gone = all.iter().all(|p| !old.contains(&p.name_any()));
        let ready: Vec<String> = all
            .iter()
            .filter(|p| running_and_ready(p) && !old.contains(&p.name_any()))
            .map(|p| p.name_any())
            .collect();
        Ok::<_, anyhow::Error>((gone, ready))
    };
    wait_for(
        Duration::from_secs(120),
        "a new operator pod Ready and the old one gone",
        || async {
            let (gone, ready) = fresh().await?;
            // Its process is a new one too.
            Ok(gone && !ready.is_empty() && operator_pid().is_some_and(|p| Some(p) != pid))
        },
    )
    .await?;
    operator_rolled_out(120)?;
    let leases = Api::<Lease>::namespaced(c.clone(), OPERATOR_NAMESPACE);
    wait_for(
        Duration::from_secs(60),
        "the new operator pod holding the Lease",
        || async {
            let (_, ready) = fresh().await?;
            Ok(match leases.get_opt("kube-combo-operator").await? {
                Some(l) => l
                    .spec
                    .and_then(|s| s.holder_identity)
                    .is_some_and(|h| ready.contains(&h)),
                // Without --leader-elect there is no Lease to wait for.
                None => true,
            })
        },
    )
    .await?;
    eprintln!(
        "model: operator restarted (old pod(s) {old:?}) in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Shared by every sequence of the run.
struct Run {
    seed: u64,
    client: Client,
    nodes: Vec<Node>,
    bins: Binaries,
    /// Held shared by each step (its action and its check), exclusively by
    /// an operator restart: no step's bound runs while the operator is away.
    restart: RwLock<()>,
}

async fn run_sequence(run: Arc<Run>, index: usize, actions: Vec<Action>) -> Outcome {
    let ns = namespace(&format!("model-{index}")).await;
    let mut model = Model::default();
    let mut outcome = Outcome {
        index,
        namespace: ns.name.clone(),
        actions: actions.clone(),
        checked: 0,
        failed: None,
    };
    for (step, action) in actions.iter().enumerate() {
        let restart = *action == Action::RestartOperator;
        // A restart waits for every other step to finish, and they wait
        // for it.
        let restarted = if restart {
            let _only = run.restart.write().await;
            act(&run.client, &ns.name, action).await
        } else {
            Ok(())
        };
        let found = {
            let _shared = run.restart.read().await;
            let done = match restarted {
                Ok(()) if !restart => act(&run.client, &ns.name, action).await,
                other => other,
            };
            match done {
                Ok(()) => {
                    model.apply(action);
                    check::converge(&run.client, &ns.name, &model, &run.nodes, &run.bins).await
                }
                Err(e) => vec![Violation {
                    invariant: check::ACTION,
                    what: format!("{action}: {e:#}"),
                }],
            }
        };
        outcome.checked += 1;
        if !found.is_empty() {
            outcome.failed = Some((step, found));
            eprintln!("model: FAILED {}", outcome.report(run.seed));
            break;
        }
    }
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn generated_user_action_sequences_keep_every_invariant() -> Result<()> {
    if nodes().is_empty() {
        eprintln!("skipping the model-based test: it needs simulated nodes (its processes are checked in /proc)");
        return Ok(());
    }
    install_operator();
    let seed = std::env::var("COMBO_MODEL_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or_default()
        });
    let n = env_number("COMBO_MODEL_SEQUENCES", 200) as usize;
    let concurrency = env_number("COMBO_MODEL_CONCURRENCY", 12).max(1) as usize;
    let restarts = env_number("COMBO_MODEL_RESTARTS", 2) as usize;
    let only: Option<BTreeSet<usize>> = std::env::var("COMBO_MODEL_ONLY")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect());
    eprintln!(
        "model: seed {seed}, {n} sequences, {concurrency} at a time, {restarts} operator restart(s); \
         rerun with COMBO_MODEL_SEED={seed} COMBO_MODEL_SEQUENCES={n} \
         cargo test -p combo-e2e --test model -- --nocapture (COMBO_MODEL_ONLY=i,j for some of them)"
    );

    let c = client().await;
    operator_settled(&c).await?;
    let node_list = Api::<Node>::all(c.clone())
        .list(&ListParams::default())
        .await?
        .items;
    let simulated = nodes().len();
    let restart_at = generate::restarts(seed, n, restarts);
    let mut sequences: Vec<(usize, Vec<Action>)> = (0..n)
        .map(|i| {
            let mut actions = generate::sequence(seed, i, simulated);
            if let Some(at) = restart_at.get(&i) {
                actions.insert((*at).min(actions.len()), Action::RestartOperator);
            }
            (i, actions)
        })
        .collect();
    if let Some(only) = &only {
        sequences.retain(|(i, _)| only.contains(i));
    }
    let run = Arc::new(Run {
        seed,
        client: c.clone(),
        nodes: node_list,
        bins: Binaries::new(),
        restart: RwLock::new(()),
    });
    let start = Instant::now();
    let total = sequences.len();
    let mut outcomes: Vec<Outcome> = futures::stream::iter(sequences)
        .map(|(i, actions)| {
            let run = run.clone();
            tokio::spawn(run_sequence(run, i, actions))
        })
        .buffer_unordered(concurrency)
        .enumerate()
        .map(|(k, joined)| {
            if (k + 1) % 20 == 0 {
                eprintln!(
                    "model: {} of {total} sequences done after {:.0} s",
                    k + 1,
                    start.elapsed().as_secs_f64()
                );
            }
            joined
        })
        .filter_map(|joined| async move { joined.ok() })
        .collect()
        .await;
    outcomes.sort_by_key(|o| o.index);

    let steps: usize = outcomes.iter().map(|o| o.checked).sum();
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.failed.is_some()).collect();
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    for o in &failed {
        for v in &o.failed.as_ref().expect("failed").1 {
            *tally.entry(v.invariant).or_default() += 1;
        }
    }
    let lost = total - outcomes.len();
    eprintln!(
        "model: {} sequences ({lost} panicked), {steps} steps checked in {:.0} s; {} sequence(s) failed; violations by invariant: {tally:?}",
        outcomes.len(),
        start.elapsed().as_secs_f64(),
        failed.len()
    );
    record(
        "model",
        &format!("{total} generated sequences of user actions, {steps} steps (seed {seed})"),
        steps as u64,
        (steps - failed.len()) as u64,
        0,
    );
    let reports: Vec<String> = failed.iter().map(|o| o.report(seed)).collect();
    assert!(
        failed.is_empty() && lost == 0,
        "seed {seed}: {} of {total} sequences broke an invariant ({lost} panicked), violations by invariant {tally:?}; \
         rerun with COMBO_MODEL_SEED={seed} COMBO_MODEL_SEQUENCES={n}\n{}",
        failed.len(),
        reports.join("\n")
    );
    Ok(())
}
