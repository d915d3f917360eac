//! End-to-end tests of the runner on the real control plane: Debuggers made
//! by `kubectl apply`, the operator installed from `config/default`, the
//! runner in every simulated node's pod with only the workload RBAC.

use std::cell::RefCell;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use combo_api::report::report_name;
use combo_api::{Debugger, DebuggerReport, RunId};
use combo_e2e::{apply_yaml, client, container_root, events, namespace, nodes, pod_log, wait_for};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::DeleteParams;
use kube::{Api, ResourceExt};

use combo_e2e::runs::*;
use combo_e2e::{set_run_at, summaries};

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
    // Only the operator writes the summary; each runner writes its own
    // report, under its own field manager.
    let managers = |m: Option<
        Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry>,
    >|
     -> Vec<String> {
        m.unwrap_or_default()
            .into_iter()
            .filter_map(|m| m.manager)
            .collect()
    };
    let cm: Api<ConfigMap> = Api::namespaced(c.clone(), &ns.name);
    let summary = cm.get("insp-summary").await?;
    assert_eq!(
        managers(summary.metadata.managed_fields),
        ["combo-operator"]
    );
    let reports: Api<DebuggerReport> = Api::namespaced(c.clone(), &ns.name);
    for node in nodes() {
        let r = reports.get(&report_name("insp", &node)).await?;
        assert_eq!(
            managers(r.metadata.managed_fields.clone()),
            [format!("combo-runner/{node}")]
        );
        assert_eq!(r.spec.run_at, run_at);
        assert_eq!(r.labels().get(combo_api::keys::LABEL_NODE), Some(&node));
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
        let failed = events(&c, &ns.name, "reason=InspectionFailed").await?;
        Ok(pods.values().all(|p| {
            failed.iter().any(|e| {
                let message = e.message.as_deref().unwrap_or_default();
                e.involved_object.name.as_deref() == Some(p.as_str())
                    && message.contains("failed item(s)")
                    && message.contains("disk/planned/broken")
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
    // The new runner decides from what its report records: nothing to do.
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
    apply_yaml(&ns.name, &scripts_configmap("edit-scripts", "v2").yaml())?;
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
