//! End-to-end tests of the runner on the real control plane: Debuggers made
//! by `kubectl apply`, the operator installed from `config/default`, the
//! runner in every simulated node's pod with only the workload RBAC.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use combo_api::{Debugger, NodeSummary, RunId};
use combo_e2e::{
    apply_yaml, client, container_root, install_operator, kubectl_ok, namespace, nodes, pod_log,
    wait_for,
};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};

const WAIT: Duration = Duration::from_secs(120);

/// The scripts ConfigMap: `disk.planned.sh` fails one disk item on every
/// node, `hello.sh` runs in `custom`.
fn scripts_configmap(name: &str, planned_message: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
data:
  disk.planned.sh: |
    #!/bin/sh
    echo "err broken {planned_message} on $NODE_NAME"
  hello.sh: |
    #!/bin/sh
    echo "ok hello-$CATEGORY"
"#
    )
}

fn debugger_yaml(name: &str, scripts: &str, run_at: &str) -> String {
    format!(
        r#"apiVersion: kubecombo.io/v1
kind: Debugger
metadata:
  name: {name}
spec:
  workloadType: daemonset
  enableConfigMap: true
  configMap: {scripts}
  categories: [disk, custom]
  scriptTimeoutSeconds: 20
  errlogRetention: 3
  runAt: "{run_at}"
"#
    )
}

fn now_rfc3339() -> String {
    RunId::now().rfc3339()
}

async fn set_run_at(c: &Client, ns: &str, name: &str, run_at: &str) -> Result<()> {
    let api: Api<Debugger> = Api::namespaced(c.clone(), ns);
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"runAt": run_at}})),
    )
    .await?;
    Ok(())
}

/// node -> summary, from the summary ConfigMap.
async fn summaries(c: &Client, ns: &str, cm: &str) -> Result<BTreeMap<String, NodeSummary>> {
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), ns);
    let Some(cm) = api.get_opt(cm).await? else {
        return Ok(BTreeMap::new());
    };
    let mut out = BTreeMap::new();
    for (node, value) in cm.data.unwrap_or_default() {
        out.insert(node, NodeSummary::from_yaml(&value)?);
    }
    Ok(out)
}

/// Waits until every node's key records `run_at`.
async fn wait_run(
    c: &Client,
    ns: &str,
    cm: &str,
    run_at: &str,
) -> Result<BTreeMap<String, NodeSummary>> {
    let want = nodes();
    wait_for(
        WAIT,
        &format!("every node's summary for {run_at}"),
        || async {
            let s = summaries(c, ns, cm).await?;
            Ok(want
                .iter()
                .all(|n| s.get(n).is_some_and(|v| v.run_at == run_at)))
        },
    )
    .await?;
    summaries(c, ns, cm).await
}

/// node -> pod name of the Debugger's Running pods.
async fn pods_by_node(c: &Client, ns: &str, name: &str) -> Result<BTreeMap<String, String>> {
    let api: Api<Pod> = Api::namespaced(c.clone(), ns);
    let lp = ListParams::default().labels(&combo_api::keys::debugger_selector(name));
    Ok(api
        .list(&lp)
        .await?
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .filter_map(|p| Some((p.spec.as_ref()?.node_name.clone()?, p.name_any())))
        .collect())
}

async fn wait_pods(c: &Client, ns: &str, name: &str) -> Result<BTreeMap<String, String>> {
    let n = nodes().len();
    wait_for(WAIT, "a Running pod per node", || async {
        Ok(pods_by_node(c, ns, name).await?.len() == n)
    })
    .await?;
    pods_by_node(c, ns, name).await
}

/// Makes the scripts ConfigMap and an idle DaemonSet Debugger; returns its pods.
async fn setup(c: &Client, ns: &str, name: &str) -> Result<BTreeMap<String, String>> {
    install_operator();
    apply_yaml(ns, &scripts_configmap(&format!("{name}-scripts"), "v1"))?;
    apply_yaml(ns, &debugger_yaml(name, &format!("{name}-scripts"), ""))?;
    wait_pods(c, ns, name).await
}

#[tokio::test]
async fn run_at_now_fills_every_node_key_errlogs_and_the_debugger_status() -> Result<()> {
    let ns = namespace("runner-now").await;
    let c = client().await;
    let pods = setup(&c, &ns.name, "insp").await?;
    let run_at = now_rfc3339();
    set_run_at(&c, &ns.name, "insp", &run_at).await?;
    let all = wait_run(&c, &ns.name, "insp-summary", &run_at).await?;
    assert_eq!(all.len(), 3);
    let run_id = RunId::from_rfc3339(&run_at).context("run id")?.to_string();
    let mut failed_total = 0;
    for (node, s) in &all {
        assert_eq!(
            s.categories["disk"]["planned/broken"].err.as_deref(),
            Some(format!("v1 on {node}").as_str())
        );
        assert!(s.categories["custom"].contains_key("hello-custom"), "{s:?}");
        failed_total += s.failed().count();
        // The errlog of the run, where `kubectl exec ... cat` would read it.
        let root = container_root(&ns.name, &pods[node], "runner");
        let log = std::fs::read_to_string(root.join(format!("scripts/disk/errlog/{run_id}.log")))
            .with_context(|| format!("errlog of {node}"))?;
        assert!(log.contains("item: planned/broken\nerr: v1 on"), "{log}");
        assert!(log.contains("/scripts/custom/disk.planned.sh"), "{log}");
    }
    let dbgs: Api<Debugger> = Api::namespaced(c.clone(), &ns.name);
    wait_for(WAIT, "Debugger status counts the run", || async {
        let st = dbgs.get("insp").await?.status.unwrap_or_default();
        Ok(st.last_run_at.as_deref() == Some(run_at.as_str())
            && st.completed_nodes == 3
            && st.failed_items == failed_total as i32)
    })
    .await?;
    // The runner owns only its own key, under its own field manager.
    let cm: Api<ConfigMap> = Api::namespaced(c.clone(), &ns.name);
    let managers: Vec<String> = cm
        .get("insp-summary")
        .await?
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    for node in nodes() {
        assert!(
            managers.contains(&format!("combo-runner/{node}")),
            "{managers:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_failed_run_records_inspection_failed_on_the_pod_with_the_workload_account() -> Result<()>
{
    let ns = namespace("runner-event").await;
    let c = client().await;
    let pods = setup(&c, &ns.name, "evt").await?;
    let pod_api: Api<Pod> = Api::namespaced(c.clone(), &ns.name);
    let (_, pod) = pods.iter().next().context("a pod")?;
    let sa = pod_api
        .get(pod)
        .await?
        .spec
        .and_then(|s| s.service_account_name);
    assert!(
        sa.as_deref().is_some_and(|s| s != "default"),
        "workload pods run as their own account: {sa:?}"
    );
    let run_at = now_rfc3339();
    set_run_at(&c, &ns.name, "evt", &run_at).await?;
    wait_run(&c, &ns.name, "evt-summary", &run_at).await?;
    wait_for(WAIT, "an InspectionFailed event on each pod", || async {
        let out = kubectl_ok(&[
            "get",
            "events",
            "-n",
            &ns.name,
            "--field-selector",
            "reason=InspectionFailed",
            "-o",
            "jsonpath={range .items[*]}{.involvedObject.name}|{.message}{.note}{\"\\n\"}{end}",
        ])?;
        Ok(pods.values().all(|p| {
            out.lines().any(|l| {
                l.starts_with(&format!("{p}|"))
                    && l.contains("failed item(s)")
                    && l.contains("disk/planned/broken")
            })
        }))
    })
    .await
}

#[tokio::test]
async fn a_cron_run_at_fires_again() -> Result<()> {
    let ns = namespace("runner-cron").await;
    let c = client().await;
    setup(&c, &ns.name, "cron").await?;
    set_run_at(&c, &ns.name, "cron", "* * * * *").await?;
    let node = nodes()[0].clone();
    let seen = RefCell::new(std::collections::BTreeSet::new());
    wait_for(
        Duration::from_secs(200),
        "two cron runs on one node",
        || async {
            if let Some(s) = summaries(&c, &ns.name, "cron-summary").await?.get(&node) {
                seen.borrow_mut().insert(s.run_at.clone());
            }
            Ok(seen.borrow().len() >= 2)
        },
    )
    .await?;
    for r in seen.borrow().iter() {
        assert!(r.ends_with(":00Z"), "cron runs are on the minute: {r}");
    }
    Ok(())
}

#[tokio::test]
async fn a_restarted_runner_does_not_repeat_a_timestamp_run() -> Result<()> {
    let ns = namespace("runner-restart").await;
    let c = client().await;
    let pods = setup(&c, &ns.name, "rst").await?;
    let run_at = now_rfc3339();
    set_run_at(&c, &ns.name, "rst", &run_at).await?;
    let before = wait_run(&c, &ns.name, "rst-summary", &run_at).await?;
    let node = nodes()[0].clone();
    let old_pod = pods[&node].clone();
    let pod_api: Api<Pod> = Api::namespaced(c.clone(), &ns.name);
    pod_api.delete(&old_pod, &DeleteParams::default()).await?;
    let new_pod = RefCell::new(String::new());
    wait_for(WAIT, "a new pod on the node", || async {
        let p = pods_by_node(&c, &ns.name, "rst").await?;
        let found = p.get(&node).cloned().unwrap_or_default();
        let fresh = !found.is_empty() && found != old_pod;
        *new_pod.borrow_mut() = found;
        Ok(fresh)
    })
    .await?;
    let new_pod = new_pod.into_inner();
    // The new runner decides from what the summary records: nothing to do.
    wait_for(WAIT, "the new runner to settle", || async {
        Ok(pod_log(&ns.name, &new_pod, "runner").contains("nothing scheduled"))
    })
    .await?;
    let after = summaries(&c, &ns.name, "rst-summary").await?;
    assert_eq!(
        after[&node].finished_at, before[&node].finished_at,
        "the run was not repeated"
    );
    let errlogs =
        std::fs::read_dir(container_root(&ns.name, &new_pod, "runner").join("scripts/disk/errlog"))
            .map(|d| d.count())
            .unwrap_or(0);
    assert_eq!(errlogs, 0, "the new pod ran nothing");
    Ok(())
}

#[tokio::test]
async fn a_configmap_script_edit_is_used_by_the_next_run() -> Result<()> {
    let ns = namespace("runner-edit").await;
    let c = client().await;
    setup(&c, &ns.name, "edit").await?;
    let first = now_rfc3339();
    set_run_at(&c, &ns.name, "edit", &first).await?;
    wait_run(&c, &ns.name, "edit-summary", &first).await?;
    apply_yaml(&ns.name, &scripts_configmap("edit-scripts", "v2"))?;
    // The kubelet (here the simulator) refreshes ConfigMap volumes on its
    // own schedule; every new run re-reads the scripts.
    let node = nodes()[0].clone();
    let last = RefCell::new(String::new());
    wait_for(
        Duration::from_secs(180),
        "a run that uses the edited script",
        || async {
            let now = now_rfc3339();
            if now != *last.borrow() {
                set_run_at(&c, &ns.name, "edit", &now).await?;
                *last.borrow_mut() = now.clone();
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
            let s = summaries(&c, &ns.name, "edit-summary").await?;
            Ok(s.get(&node).is_some_and(|v| {
                v.categories
                    .get("disk")
                    .and_then(|d| d.get("planned/broken"))
                    .and_then(|r| r.err.clone())
                    == Some(format!("v2 on {node}"))
            }))
        },
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_new_run_at_takes_effect_without_restarting_the_pods() -> Result<()> {
    let ns = namespace("runner-live").await;
    let c = client().await;
    let pods = setup(&c, &ns.name, "live").await?;
    for _ in 0..2 {
        let run_at = now_rfc3339();
        set_run_at(&c, &ns.name, "live", &run_at).await?;
        wait_run(&c, &ns.name, "live-summary", &run_at).await?;
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    if pods_by_node(&c, &ns.name, "live").await? != pods {
        bail!("pods were replaced");
    }
    Ok(())
}
