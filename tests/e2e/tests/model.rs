//! Model-based test (docs/testing.md, "Model-based test"): generated
//! sequences of user actions (create, edit and delete Debuggers, Pingers
//! and ConfigMaps, with name collisions, workload switches, selectors that
//! match no node, deletions of what a Debugger uses, operator restarts)
//! against the real API server, each sequence in a namespace of its own,
//! with the invariants of `model/check.rs` checked after every step
//! (`model/act.rs` carries out the actions, `model/run.rs` plays the
//! sequences and gives the verdict).
//!
//! `COMBO_MODEL_SEED` (default: from the clock, printed), and
//! `COMBO_MODEL_SEQUENCES` (default 200) pick the sequences;
//! `COMBO_MODEL_ONLY=3,17` runs only those of them;
//! `COMBO_MODEL_CONCURRENCY` (default 12) how many run at once;
//! `COMBO_MODEL_RESTARTS` (default 2) how many operator restarts the
//! whole run makes.

#[path = "model/act.rs"]
mod act;
#[path = "model/check.rs"]
mod check;
#[path = "model/generate.rs"]
mod generate;
#[path = "model/plan.rs"]
mod plan;
#[path = "model/run.rs"]
mod run;

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use combo_e2e::{client, install_operator, nodes};
use k8s_openapi::api::core::v1::Node;
use kube::api::ListParams;
use kube::Api;
use tokio::sync::RwLock;

use check::Binaries;
use run::{Run, Settings};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn generated_user_action_sequences_keep_every_invariant() -> Result<()> {
    if nodes().is_empty() {
        eprintln!("skipping the model-based test: it needs simulated nodes (its processes are checked in /proc)");
        return Ok(());
    }
    install_operator();
    let settings = Settings::from_env();
    let Settings {
        seed,
        n,
        concurrency,
        restarts,
        ..
    } = settings;
    eprintln!(
        "model: seed {seed}, {n} sequences, {concurrency} at a time, {restarts} operator restart(s); \
         rerun with COMBO_MODEL_SEED={seed} COMBO_MODEL_SEQUENCES={n} \
         cargo test -p combo-e2e --test model -- --nocapture (COMBO_MODEL_ONLY=i,j for some of them)"
    );

    let c = client().await;
    act::operator_settled(&c).await?;
    let node_list = Api::<Node>::all(c.clone())
        .list(&ListParams::default())
        .await?
        .items;
    let sequences = settings.sequences(nodes().len());
    let run = Arc::new(Run {
        seed,
        client: c.clone(),
        nodes: node_list,
        bins: Binaries::new(),
        restart: RwLock::new(()),
    });
    let start = Instant::now();
    let total = sequences.len();
    let outcomes = run::play(run, sequences, concurrency, start).await;
    run::verdict(&settings, &outcomes, total, start);
    Ok(())
}
