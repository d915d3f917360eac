//! Node conditions, taints and missed runs end to end, on the simulated
//! cluster (2 nodes or more) or on real nodes: a script of the Debugger's
//! ConfigMap fails on the nodes it names, and the nodes' conditions and
//! taints, the Debugger's `RunsMissed` and `TaintLimitReached`, and the
//! removal of every mark (turned off, deleted while no operator runs)
//! are read back from the API server
//! (docs/operator.md#node-conditions-taints-and-missed-runs).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_api::keys::{node_mark_name, BIN_RUNNER};
use combo_api::{Category, Debugger};
use combo_e2e::fixtures::{documents, DebuggerBuilder};
use combo_e2e::runs::{flag_scripts, now_after, pods_by_node, run_failing_on, wait_pods};
use combo_e2e::{
    apply_yaml, client, debugger_events, kubectl_ok, namespace, operator_rolled_out, pod_process,
    scale_operator, set_run_at, wait_for, workload_nodes, OPERATOR_LABELS, OPERATOR_NAMESPACE,
};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};

const NAME: &str = "marks";
const SCRIPTS: &str = "flags";
const WAIT: Duration = Duration::from_secs(120);

/// node -> (status, reason, message) of condition `type_`, on every node.
async fn conditions(c: &Client, type_: &str) -> Result<BTreeMap<String, (String, String, String)>> {
    let nodes: Api<Node> = Api::all(c.clone());
    let mut out = BTreeMap::new();
    for node in nodes.list(&Default::default()).await? {
        let name = node.metadata.name.clone().unwrap_or_default();
        let found = node
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .find(|k| k.type_ == type_);
        if let Some(k) = found {
            let (reason, message) = (k.reason.clone(), k.message.clone());
            out.insert(
                name,
                (
                    k.status.clone(),
                    reason.unwrap_or_default(),
                    message.unwrap_or_default(),
                ),
            );
        }
    }
    Ok(out)
}

/// The nodes carrying a taint with key `key`.
async fn tainted(c: &Client, key: &str) -> Result<BTreeSet<String>> {
    let nodes: Api<Node> = Api::all(c.clone());
    Ok(nodes
        .list(&Default::default())
        .await?
        .into_iter()
        .filter(|n| {
            n.spec
                .iter()
                .flat_map(|s| s.taints.iter().flatten())
                .any(|t| t.key == key)
        })
        .filter_map(|n| n.metadata.name)
        .collect())
}

/// The Debugger's condition `type_`.
async fn debugger_condition(c: &Client, ns: &str, type_: &str) -> Result<Option<Condition>> {
    let d = Api::<Debugger>::namespaced(c.clone(), ns).get(NAME).await?;
    Ok(d.status
        .into_iter()
        .flat_map(|s| s.conditions)
        .find(|k| k.type_ == type_))
}

/// Runs the Debugger with `flag.sh` failing on `failing` only.
async fn run_failing(c: &Client, ns: &str, failing: &[&str]) -> Result<()> {
    run_failing_on(c, ns, NAME, SCRIPTS, failing).await
}

/// Waits until every workload node's condition `type_` has the status
/// `failing` nodes `True` (reason `Flag`), the others `False`.
async fn wait_conditions(
    c: &Client,
    type_: &str,
    failing: &[&str],
    within: Duration,
) -> Result<()> {
    let want: BTreeMap<String, (String, String)> = workload_nodes()
        .into_iter()
        .map(|n| {
            let v = if failing.contains(&n.as_str()) {
                ("True", "Flag")
            } else {
                ("False", "NoFailures")
            };
            (n, (v.0.to_string(), v.1.to_string()))
        })
        .collect();
    wait_for(within, &format!("conditions {want:?}"), || async {
        let got: BTreeMap<String, (String, String)> = conditions(c, type_)
            .await?
            .into_iter()
            .map(|(n, (s, r, _))| (n, (s, r)))
            .collect();
        Ok(got == want)
    })
    .await
}

/// Stops a process with SIGSTOP until dropped (then SIGCONT).
struct Stopped(i32);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

/// Scales the operator back to one replica when dropped, whatever the
/// test did meanwhile.
struct OperatorBack;

impl Drop for OperatorBack {
    fn drop(&mut self) {
        let _ = scale_operator(1);
    }
}

/// A failing node gets `True` within one run; a second failing node stays
/// untainted past the limit, with `TaintLimitReached` and its Event;
/// recovery clears conditions and taints.
async fn failures_and_recovery(c: &Client, ns: &str, ty: &str, a: &str, b: &str) -> Result<()> {
    run_failing(c, ns, &[a]).await?;
    // Within the run: the reports are in, the operator has 30 s.
    wait_conditions(c, ty, &[a], Duration::from_secs(30)).await?;
    let (_, _, message) = conditions(c, ty)
        .await?
        .remove(a)
        .context("a's condition")?;
    assert_eq!(message, format!("flag: injected on {a}"));
    wait_for(WAIT, "the failing node tainted", || async {
        Ok(tainted(c, ty).await? == BTreeSet::from([a.to_string()]))
    })
    .await?;

    // 50 % of 2 or 3 nodes is 1: the second failing node is left untainted.
    run_failing(c, ns, &[a, b]).await?;
    wait_conditions(c, ty, &[a, b], Duration::from_secs(30)).await?;
    wait_for(WAIT, "TaintLimitReached=True", || async {
        Ok(debugger_condition(c, ns, "TaintLimitReached")
            .await?
            .is_some_and(|k| k.status == "True"))
    })
    .await?;
    assert_eq!(
        tainted(c, ty).await?,
        BTreeSet::from([a.to_string()]),
        "never more than the limit"
    );
    let events = debugger_events(c, ns, NAME).await?;
    assert!(events
        .iter()
        .any(|e| e.reason.as_deref() == Some("TaintLimitReached")
            && e.type_.as_deref() == Some("Warning")));

    run_failing(c, ns, &[]).await?;
    wait_conditions(c, ty, &[], Duration::from_secs(30)).await?;
    wait_for(WAIT, "every taint removed", || async {
        Ok(tainted(c, ty).await?.is_empty())
    })
    .await?;
    // The taints go with the node writes; the condition with the
    // Debugger's status, a write of its own that may come a moment later.
    wait_for(
        WAIT,
        "TaintLimitReached=False (WithinTaintLimit)",
        || async {
            let limit = debugger_condition(c, ns, "TaintLimitReached")
                .await?
                .context("TaintLimitReached")?;
            Ok((limit.status.as_str(), limit.reason.as_str()) == ("False", "WithinTaintLimit"))
        },
    )
    .await?;
    Ok(())
}

/// The runner of node `stuck` stopped: after the run's deadline
/// (5 × 2 s + 30 s) the node is `Unknown` and the Debugger `RunsMissed`;
/// going on again, it reports and both clear.
async fn missed_run(c: &Client, ns: &str, ty: &str, stuck: &str) -> Result<()> {
    let pods = pods_by_node(c, ns, NAME).await?;
    let pod: Pod = Api::namespaced(c.clone(), ns).get(&pods[stuck]).await?;
    let pid = pod_process(BIN_RUNNER, &pod).context("the runner's process")?;
    std::process::Command::new("kill")
        .args(["-STOP", &pid.to_string()])
        .status()?;
    let stopped = Stopped(pid);
    let previous = Api::<Debugger>::namespaced(c.clone(), ns)
        .get(NAME)
        .await?
        .spec
        .run_at;
    set_run_at(c, ns, NAME, &now_after(&previous).await).await?;
    wait_for(WAIT, "RunsMissed=True naming the stopped node", || async {
        Ok(debugger_condition(c, ns, "RunsMissed")
            .await?
            .is_some_and(|k| {
                k.status == "True"
                    && k.message.starts_with("1 node has not reported")
                    && k.message.ends_with(stuck)
            }))
    })
    .await?;
    let now = conditions(c, ty).await?;
    assert_eq!(now[stuck].0, "Unknown", "{now:?}");
    assert_eq!(now[stuck].1, "RunMissed");
    assert!(
        now.iter()
            .filter(|(n, _)| n.as_str() != stuck)
            .all(|(_, v)| v.0 == "False"),
        "{now:?}"
    );
    drop(stopped);
    wait_conditions(c, ty, &[], WAIT).await?;
    wait_for(WAIT, "RunsMissed=False", || async {
        Ok(debugger_condition(c, ns, "RunsMissed")
            .await?
            .is_some_and(|k| k.status == "False"))
    })
    .await
}

/// `nodeConditions: false` removes the conditions; `true` sets them again
/// from the reports at hand.
async fn off_and_on(c: &Client, ns: &str, ty: &str) -> Result<()> {
    let dbgs: Api<Debugger> = Api::namespaced(c.clone(), ns);
    let set = |on: bool| Patch::Merge(serde_json::json!({"spec": {"nodeConditions": on}}));
    dbgs.patch(NAME, &PatchParams::default(), &set(false))
        .await?;
    wait_for(WAIT, "no condition left", || async {
        Ok(conditions(c, ty).await?.is_empty())
    })
    .await?;
    dbgs.patch(NAME, &PatchParams::default(), &set(true))
        .await?;
    wait_conditions(c, ty, &[], WAIT).await
}

/// Deleted while no operator runs: the finalizer keeps the Debugger and
/// its marks until an operator starts and takes them off.
async fn deleted_while_no_operator_runs(c: &Client, ns: &str, ty: &str, a: &str) -> Result<()> {
    run_failing(c, ns, &[a]).await?;
    wait_for(WAIT, "a tainted", || async {
        Ok(!tainted(c, ty).await?.is_empty())
    })
    .await?;
    let back = OperatorBack;
    scale_operator(0)?;
    // Terminating ones included: an operator in its shutdown grace still
    // reconciles, and would take the marks and the finalizer off itself.
    wait_for(
        WAIT,
        "no operator pod, not even a terminating one",
        || async {
            let lp = ListParams::default().labels(OPERATOR_LABELS);
            Ok(Api::<Pod>::namespaced(c.clone(), OPERATOR_NAMESPACE)
                .list(&lp)
                .await?
                .items
                .is_empty())
        },
    )
    .await?;
    kubectl_ok(&["delete", "debugger", NAME, "-n", ns, "--wait=false"])?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let d = Api::<Debugger>::namespaced(c.clone(), ns)
        .get_opt(NAME)
        .await?;
    assert!(
        d.is_some_and(|d| d.metadata.deletion_timestamp.is_some()),
        "held by its finalizer"
    );
    assert_eq!(
        conditions(c, ty).await?.len(),
        workload_nodes().len(),
        "the marks wait for an operator"
    );
    drop(back); // one replica again
    operator_rolled_out(180)?;
    wait_for(WAIT, "the Debugger gone and no mark of it left", || async {
        let gone = Api::<Debugger>::namespaced(c.clone(), ns)
            .get_opt(NAME)
            .await?
            .is_none();
        Ok(gone && conditions(c, ty).await?.is_empty() && tainted(c, ty).await?.is_empty())
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn node_conditions_and_taints_follow_the_results_and_leave_with_the_debugger() -> Result<()> {
    combo_e2e::install_for_cluster();
    let nodes = workload_nodes();
    assert!(nodes.len() >= 2, "needs 2 nodes: {nodes:?}");
    // With two nodes (the real-node cluster) the second one is stopped
    // once it is healthy again.
    let (a, b) = (&nodes[0], &nodes[1]);
    let stuck = nodes.get(2).unwrap_or(b);
    let ns = namespace("node-marks").await;
    let c = client().await;
    let dbg = DebuggerBuilder::new(NAME)
        .scripts(SCRIPTS)
        .categories(&[Category::Custom])
        .script_timeout(2)
        .node_conditions(true)
        .taints(&[Category::Custom], 50);
    apply_yaml(
        &ns.name,
        &documents(&[flag_scripts(SCRIPTS, &[]), dbg.yaml()]),
    )?;
    wait_pods(&c, &ns.name, NAME).await?;
    let ty = node_mark_name(&ns.name, NAME, Category::Custom);
    let ds = kubectl_ok(&[
        "get",
        "daemonset",
        NAME,
        "-n",
        &ns.name,
        "-o",
        "jsonpath={.spec.template.spec.tolerations}",
    ])?;
    assert!(
        ds.contains(&ty),
        "the pods tolerate the Debugger's taint: {ds}"
    );

    failures_and_recovery(&c, &ns.name, &ty, a, b).await?;
    missed_run(&c, &ns.name, &ty, stuck).await?;
    off_and_on(&c, &ns.name, &ty).await?;
    deleted_while_no_operator_runs(&c, &ns.name, &ty, a).await?;
    Ok(())
}
