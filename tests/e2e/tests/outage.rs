//! The control plane going away under running Debuggers on simulated
//! nodes, as listed in docs/testing.md, "Fault tests": the API server
//! stopped for 30 s, then etcd stopped and started again
//! ([`combo_e2e::outage`] holds the procedure and what must hold). These
//! stop the cluster for every test: cargo runs this binary on its own, and
//! its one test does both cases in turn. `real_outage.rs` does the same on
//! real nodes.

use std::time::Duration;

use anyhow::Result;
use combo_e2e::outage::{both_outages, probing_yaml, TcpTarget};
use combo_e2e::runs::setup;
use combo_e2e::{apply_yaml, client, namespace, operator_pid, wait_for};

#[tokio::test(flavor = "multi_thread")]
async fn the_api_server_and_etcd_going_away_lose_no_run_and_restart_nothing() -> Result<()> {
    let ns = namespace("outage").await;
    let c = client().await;
    setup(&c, &ns.name, "steady").await?;
    let mut target = TcpTarget::bind().await?;
    apply_yaml(&ns.name, &probing_yaml(target.addr))?;
    wait_for(Duration::from_secs(120), "the operator process", || async {
        Ok(operator_pid().is_some())
    })
    .await?;
    both_outages(&ns.name, "steady", &mut target, "").await
}
