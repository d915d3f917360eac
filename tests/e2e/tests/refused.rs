//! A workload the API server refuses (here a ResourceQuota; a PodSecurity
//! policy or an API server without `--allow-privileged` refuse the same
//! way): the Debugger shows `Ready=False WorkloadRefused` with the API
//! server's message and one Warning Event, other Debuggers are unaffected,
//! and once the cause is gone the workload is written and Ready recovers
//! (docs/operator.md, "Refused workloads").

use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_api::{Category, Debugger, WorkloadType};
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::{
    apply_yaml, client, debugger_events, install_operator, kubectl_ok, namespace, record, wait_for,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Event, ResourceQuota};
use kube::{Api, Client};

const WAIT: Duration = Duration::from_secs(120);

const QUOTA: &str = r#"apiVersion: v1
kind: ResourceQuota
metadata:
  name: no-workloads
spec:
  hard:
    count/daemonsets.apps: "0"
    pods: "0"
"#;

fn debugger(name: &str, workload: WorkloadType) -> String {
    DebuggerBuilder::new(name)
        .workload(workload)
        .categories(&[Category::Disk])
        .yaml()
}

/// (status, reason, message) of the Debugger's Ready condition.
async fn ready(c: &Client, ns: &str, name: &str) -> Result<Option<(String, String, String)>> {
    let d = Api::<Debugger>::namespaced(c.clone(), ns)
        .get_opt(name)
        .await?;
    Ok(d.and_then(|d| {
        d.status?
            .conditions
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| (c.status, c.reason, c.message))
    }))
}

/// Waits until the Debugger's Ready condition is `Ready=False
/// WorkloadRefused` (`refused`), or until it no longer is, and returns
/// the condition's message.
async fn wait_for_refused(c: &Client, ns: &str, name: &str, refused: bool) -> Result<String> {
    let what = if refused {
        format!("{name} Ready=False WorkloadRefused")
    } else {
        format!("{name} no longer WorkloadRefused")
    };
    wait_for(WAIT, &what, || async {
        Ok(ready(c, ns, name).await?.is_some_and(|(s, r, _)| {
            if refused {
                s == "False" && r == "WorkloadRefused"
            } else {
                r != "WorkloadRefused"
            }
        }))
    })
    .await?;
    Ok(ready(c, ns, name).await?.context("condition")?.2)
}

/// Applies ResourceQuota `name` (its manifest `yaml`) in `ns` and waits
/// until it is in force: quota admission refuses with the quota's name once
/// the controller manager has filled in its status.
async fn apply_quota(c: &Client, ns: &str, yaml: &str, name: &str) -> Result<()> {
    apply_yaml(ns, yaml)?;
    wait_for(WAIT, "the quota's status", || async {
        let q = Api::<ResourceQuota>::namespaced(c.clone(), ns)
            .get(name)
            .await?;
        Ok(q.status.and_then(|s| s.hard).is_some())
    })
    .await
}

async fn refused_events(c: &Client, ns: &str, name: &str) -> Result<Vec<Event>> {
    Ok(debugger_events(c, ns, name)
        .await?
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("WorkloadRefused"))
        .collect())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_workload_is_reported_and_recovers_when_the_cause_goes() -> Result<()> {
    install_operator();
    let ns = namespace("refused").await;
    let other = namespace("refused-other").await;
    let c = client().await;
    apply_quota(&c, &ns.name, QUOTA, "no-workloads").await?;

    apply_yaml(&ns.name, &debugger("ds", WorkloadType::Daemonset))?;
    apply_yaml(&ns.name, &debugger("single", WorkloadType::Pod))?;
    apply_yaml(&other.name, &debugger("ds", WorkloadType::Daemonset))?;

    let mut handled = 0;
    let result = async {
        for (name, kind) in [("ds", "DaemonSet"), ("single", "Pod")] {
            let message = wait_for_refused(&c, &ns.name, name, true).await?;
            assert!(
                message.contains(kind) && message.contains("exceeded quota: no-workloads"),
                "{name}: the condition names the workload and carries the API server's message: {message}"
            );
        }
        // Retries go on with backoff; the Event is not repeated.
        tokio::time::sleep(Duration::from_secs(10)).await;
        for name in ["ds", "single"] {
            let events = refused_events(&c, &ns.name, name).await?;
            assert_eq!(events.len(), 1, "{name}: one WorkloadRefused Event: {events:?}");
            assert_eq!(events[0].type_.as_deref(), Some("Warning"));
        }
        // The Debugger of the same name in another namespace is unaffected.
        wait_for(WAIT, "the other namespace's DaemonSet", || async {
            Ok(Api::<DaemonSet>::namespaced(c.clone(), &other.name)
                .get_opt("ds")
                .await?
                .is_some())
        })
        .await?;
        assert!(
            ready(&c, &other.name, "ds")
                .await?
                .is_none_or(|(_, r, _)| r != "WorkloadRefused"),
            "the other namespace's Debugger is not refused"
        );

        // The cause goes: the next retry writes the workload.
        kubectl_ok(&["delete", "resourcequota", "no-workloads", "-n", &ns.name])?;
        wait_for(WAIT, "the DaemonSet written after the quota went", || async {
            Ok(Api::<DaemonSet>::namespaced(c.clone(), &ns.name)
                .get_opt("ds")
                .await?
                .is_some())
        })
        .await?;
        for name in ["ds", "single"] {
            wait_for_refused(&c, &ns.name, name, false).await?;
        }
        handled = 1;
        anyhow::Ok(())
    }
    .await;
    record(
        "faults",
        "workload refused by a ResourceQuota, then allowed",
        1,
        handled,
        0,
    );
    result
}

const NO_PODS: &str = r#"apiVersion: v1
kind: ResourceQuota
metadata:
  name: no-pods
spec:
  hard:
    pods: "0"
"#;

/// The DaemonSet is written but its controller is refused the pods (here
/// a quota on pods; Pod Security admission refuses the same way, and its
/// message then ends with the namespace label to set): the Debugger shows
/// `Ready=False WorkloadRefused` quoting the refusal, with one Warning
/// Event, and recovers once the pods may be created
/// (docs/operator.md, "Refused workloads").
#[tokio::test(flavor = "multi_thread")]
async fn refused_daemonset_pods_are_reported_and_recover_when_the_cause_goes() -> Result<()> {
    install_operator();
    let ns = namespace("refused-pods").await;
    let c = client().await;
    apply_quota(&c, &ns.name, NO_PODS, "no-pods").await?;
    apply_yaml(&ns.name, &debugger("ds", WorkloadType::Daemonset))?;

    let mut handled = 0;
    let result = async {
        let message = wait_for_refused(&c, &ns.name, "ds", true).await?;
        assert!(
            message.contains("the API server refuses the DaemonSet's pods")
                && message.contains("exceeded quota: no-pods"),
            "the condition quotes the DaemonSet controller's refusal: {message}"
        );
        assert!(
            Api::<DaemonSet>::namespaced(c.clone(), &ns.name)
                .get_opt("ds")
                .await?
                .is_some(),
            "the DaemonSet itself was written"
        );
        // The DaemonSet controller retries, each time naming a new pod:
        // the Event is not repeated.
        tokio::time::sleep(Duration::from_secs(10)).await;
        let events = refused_events(&c, &ns.name, "ds").await?;
        assert_eq!(events.len(), 1, "one WorkloadRefused Event: {events:?}");
        assert_eq!(events[0].type_.as_deref(), Some("Warning"));

        kubectl_ok(&["delete", "resourcequota", "no-pods", "-n", &ns.name])?;
        wait_for_refused(&c, &ns.name, "ds", false).await?;
        handled = 1;
        anyhow::Ok(())
    }
    .await;
    record(
        "faults",
        "DaemonSet pods refused by a ResourceQuota, then allowed",
        1,
        handled,
        0,
    );
    result
}
