//! The control plane going away under running Debuggers on real nodes
//! (kubelet and containerd running the project's images, installed from
//! the cluster's registry as `real_nodes.rs` does): the API server stopped
//! for 30 s, then etcd stopped and started again, each with a run due in
//! the middle ([`combo_e2e::outage`] holds the procedure and what must
//! hold: the run is reported afterwards, every operator, runner and pinger
//! container is the same process in the same pod with the same restart
//! count, and each pinger's failures while the control plane was away show
//! in its metrics and in a `ProbeRecovered` Event afterwards). It stops the
//! cluster for every test, so `tests/run-all.sh` runs this binary on its
//! own, after `real_nodes`. Skipped, with a message, on a cluster without
//! real nodes.

use anyhow::Result;
use combo_e2e::outage::{both_outages, probing_yaml, TcpTarget};
use combo_e2e::runs::{scripts_configmap, scripts_debugger, wait_pods};
use combo_e2e::{apply_yaml, client, install_from_registry, namespace, real_cluster_or_skip};

#[tokio::test(flavor = "multi_thread")]
async fn on_real_nodes_the_api_server_and_etcd_going_away_lose_no_run_and_restart_nothing(
) -> Result<()> {
    if !real_cluster_or_skip(
        "on_real_nodes_the_api_server_and_etcd_going_away_lose_no_run_and_restart_nothing",
    ) {
        return Ok(());
    }
    install_from_registry();
    let ns = namespace("real-outage").await;
    let c = client().await;
    apply_yaml(&ns.name, &scripts_configmap("steady-scripts", "v1").yaml())?;
    apply_yaml(
        &ns.name,
        &scripts_debugger("steady", "steady-scripts", "").yaml(),
    )?;
    wait_pods(&c, &ns.name, "steady").await?;
    let mut target = TcpTarget::bind().await?;
    apply_yaml(&ns.name, &probing_yaml(target.addr))?;
    both_outages(&ns.name, "steady", &mut target, " (real nodes)").await
}
