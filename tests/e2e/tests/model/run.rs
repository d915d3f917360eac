//! One run of the model-based test (docs/testing.md, "Model-based test"):
//! what the environment asks for, the sequences played a few at a time,
//! each step checked, and the verdict over all of them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use combo_e2e::{namespace, record};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use tokio::sync::RwLock;

use crate::act::act;
use crate::check::{self, Binaries, Violation};
use crate::generate;
use crate::plan::{Action, Model};

/// A number from the environment variable `name`, if it holds one.
fn env_parsed(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.trim().parse().ok())
}

fn env_number(name: &str, default: u64) -> u64 {
    env_parsed(name).unwrap_or(default)
}

/// What the environment asks of the run (see the test's documentation).
pub struct Settings {
    pub seed: u64,
    /// Sequences generated.
    pub n: usize,
    pub concurrency: usize,
    pub restarts: usize,
    /// Only these of the sequences run, if given.
    pub only: Option<BTreeSet<usize>>,
}

impl Settings {
    pub fn from_env() -> Settings {
        let seed = env_parsed("COMBO_MODEL_SEED").unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or_default()
        });
        Settings {
            seed,
            n: env_number("COMBO_MODEL_SEQUENCES", 200) as usize,
            concurrency: env_number("COMBO_MODEL_CONCURRENCY", 12).max(1) as usize,
            restarts: env_number("COMBO_MODEL_RESTARTS", 2) as usize,
            only: std::env::var("COMBO_MODEL_ONLY")
                .ok()
                .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect()),
        }
    }

    /// The run's sequences for a cluster of `simulated` nodes, with the
    /// operator restarts in them: (index, actions).
    pub fn sequences(&self, simulated: usize) -> Vec<(usize, Vec<Action>)> {
        let restart_at = generate::restarts(self.seed, self.n, self.restarts);
        let mut sequences: Vec<(usize, Vec<Action>)> = (0..self.n)
            .map(|i| {
                let mut actions = generate::sequence(self.seed, i, simulated);
                if let Some(at) = restart_at.get(&i) {
                    actions.insert((*at).min(actions.len()), Action::RestartOperator);
                }
                (i, actions)
            })
            .collect();
        if let Some(only) = &self.only {
            sequences.retain(|(i, _)| only.contains(i));
        }
        sequences
    }
}

/// What one sequence came to.
pub struct Outcome {
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

/// Shared by every sequence of the run.
pub struct Run {
    pub seed: u64,
    pub client: Client,
    pub nodes: Vec<Node>,
    pub bins: Binaries,
    /// Held shared by each step (its action and its check), exclusively by
    /// an operator restart: no step's bound runs while the operator is away.
    pub restart: RwLock<()>,
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

/// Plays `sequences`, `concurrency` at a time; the outcomes of those that
/// did not panic, in the order of their index.
pub async fn play(
    run: Arc<Run>,
    sequences: Vec<(usize, Vec<Action>)>,
    concurrency: usize,
    start: Instant,
) -> Vec<Outcome> {
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
    outcomes
}

/// Prints and records what the `total` sequences came to, and fails when
/// one broke an invariant or panicked.
pub fn verdict(settings: &Settings, outcomes: &[Outcome], total: usize, start: Instant) {
    let (seed, n) = (settings.seed, settings.n);
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
}
