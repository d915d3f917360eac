//! End-to-end tests of the operator on the real control plane: it is
//! installed with `kubectl apply -k config/default` (so it runs with the RBAC
//! of `config/rbac`, not as admin) and driven by `kubectl apply`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use combo_api::{keys, Category, Debugger, Pinger, WorkloadType};
use combo_e2e::fixtures::{DebuggerBuilder, PingerBuilder};
use combo_e2e::{
    apply_yaml, client, debugger_events, events, install_operator, kubectl, kubectl_ok, namespace,
    nodes, repo_root, wait_for, OPERATOR_NAMESPACE,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::{Api, Client, ResourceExt};

const OPERATOR_NS: &str = OPERATOR_NAMESPACE;
const WAIT: Duration = Duration::from_secs(120);

/// Applies a manifest (a file of the repository, or YAML text) into `ns`.
fn apply(ns: &str, manifest: Manifest<'_>) -> Result<()> {
    match manifest {
        Manifest::File(rel) => {
            let path = repo_root().join(rel);
            kubectl_ok(&["apply", "-n", ns, "-f", path.to_str().context("path")?]).map(drop)
        }
        Manifest::Yaml(text) => apply_yaml(ns, text),
    }
}

#[derive(Clone, Copy)]
enum Manifest<'a> {
    File(&'a str),
    Yaml(&'a str),
}

async fn get<K>(client: &Client, ns: &str, name: &str) -> Result<Option<K>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    Ok(Api::<K>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await?)
}

/// Waits until the object exists and returns it.
async fn eventually<K>(client: &Client, ns: &str, name: &str) -> Result<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    eventually_within(client, ns, name, WAIT).await
}

/// Waits at most `timeout` until the object exists and returns it.
async fn eventually_within<K>(client: &Client, ns: &str, name: &str, timeout: Duration) -> Result<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    wait_for(timeout, &format!("{} {name}", K::kind(&())), || async {
        Ok(get::<K>(client, ns, name).await?.is_some())
    })
    .await?;
    get::<K>(client, ns, name).await?.context("object vanished")
}

fn ready_condition(d: &Debugger) -> Option<(String, String)> {
    d.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| (c.status.clone(), c.reason.clone()))
}

async fn wait_condition(
    client: &Client,
    ns: &str,
    name: &str,
    status: &str,
    reason: &str,
) -> Result<()> {
    wait_for(WAIT, &format!("{name} Ready={status} {reason}"), || async {
        let d: Option<Debugger> = get(client, ns, name).await?;
        Ok(d.and_then(|d| ready_condition(&d)) == Some((status.into(), reason.into())))
    })
    .await
}

async fn events_for(client: &Client, ns: &str, name: &str) -> Result<Vec<(String, String)>> {
    Ok(debugger_events(client, ns, name)
        .await?
        .into_iter()
        .map(|e| (e.type_.unwrap_or_default(), e.reason.unwrap_or_default()))
        .collect())
}

async fn wait_event(
    client: &Client,
    ns: &str,
    name: &str,
    type_: &str,
    reason: &str,
) -> Result<()> {
    wait_for(
        WAIT,
        &format!("{type_} event {reason} on {name}"),
        || async {
            Ok(events_for(client, ns, name)
                .await?
                .contains(&(type_.into(), reason.into())))
        },
    )
    .await
}

fn template_annotations(ds: &DaemonSet) -> BTreeMap<String, String> {
    let template = ds.spec.as_ref().map(|s| &s.template);
    let meta = template.and_then(|t| t.metadata.as_ref());
    meta.and_then(|m| m.annotations.clone()).unwrap_or_default()
}

fn template_of(ds: &DaemonSet) -> k8s_openapi::api::core::v1::PodSpec {
    ds.spec.clone().unwrap().template.spec.unwrap()
}

#[tokio::test]
async fn sample_debugger_becomes_a_daemonset_whose_pods_get_ready() -> Result<()> {
    install_operator();
    let ns = namespace("op-ds").await;
    let c = client().await;
    apply(&ns.name, Manifest::File("config/samples/pinger.yaml"))?;
    apply(
        &ns.name,
        Manifest::File("config/samples/debugger_daemonset.yaml"),
    )?;
    let ds: DaemonSet = eventually(&c, &ns.name, "node-check").await?;
    let owner = &ds.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Debugger", Some(true))
    );
    let pod = template_of(&ds);
    let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["runner", "pinger"]);
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("kube-combo-workload.node-check")
    );
    let labels = ds
        .spec
        .clone()
        .unwrap()
        .template
        .metadata
        .unwrap()
        .labels
        .unwrap();
    assert_eq!(labels["kubecombo.io/debugger"], "node-check");
    assert_eq!(labels["app.kubernetes.io/instance"], "node-check");

    // The summary ConfigMap exists from the start: the operator writes it
    // once its workload writes pause (`pace`), at most 10 s after the
    // workload, before any runner has a result.
    let summary: ConfigMap =
        eventually_within(&c, &ns.name, "node-check-summary", Duration::from_secs(20)).await?;
    assert_eq!(summary.owner_references()[0].name, "node-check");
    let sa: Option<ServiceAccount> = get(&c, &ns.name, "kube-combo-workload.node-check").await?;
    assert!(
        sa.is_some(),
        "workload ServiceAccount created in the Debugger's namespace"
    );

    let want = nodes().len() as i32;
    wait_for(WAIT, "readyPods == number of nodes", || async {
        let d: Option<Debugger> = get(&c, &ns.name, "node-check").await?;
        let s = d.and_then(|d| d.status).unwrap_or_default();
        Ok(s.ready_pods == want && s.desired_pods == want)
    })
    .await?;
    wait_condition(&c, &ns.name, "node-check", "True", "WorkloadReady").await?;
    wait_event(&c, &ns.name, "node-check", "Normal", "WorkloadCreated").await?;
    let table = kubectl_ok(&["get", "dbg", "-n", &ns.name])?;
    assert!(
        table.contains("TYPE") && table.contains(&format!("{want}/{want}")),
        "{table}"
    );
    Ok(())
}

#[tokio::test]
async fn pod_debugger_runs_one_pod_on_the_named_node() -> Result<()> {
    install_operator();
    let ns = namespace("op-pod").await;
    let c = client().await;
    let node = nodes().last().cloned().unwrap();
    apply(
        &ns.name,
        Manifest::Yaml(
            &DebuggerBuilder::new("one")
                .workload(WorkloadType::Pod)
                .node_name(&node)
                .categories(&[Category::Mem])
                .yaml(),
        ),
    )?;
    let pod: Pod = eventually(&c, &ns.name, "one").await?;
    let spec = pod.spec.unwrap();
    assert_eq!(spec.node_name.as_deref(), Some(node.as_str()));
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert_eq!(spec.containers.len(), 1);
    Ok(())
}

#[tokio::test]
async fn missing_pinger_reports_pinger_not_found_and_recovers_when_it_appears() -> Result<()> {
    install_operator();
    let ns = namespace("op-inv").await;
    let c = client().await;
    apply(
        &ns.name,
        Manifest::Yaml(&DebuggerBuilder::new("d").pinger("later").yaml()),
    )?;
    wait_condition(&c, &ns.name, "d", "False", "PingerNotFound").await?;
    wait_event(&c, &ns.name, "d", "Warning", "PingerNotFound").await?;
    assert!(get::<DaemonSet>(&c, &ns.name, "d").await?.is_none());

    apply(
        &ns.name,
        Manifest::Yaml(&PingerBuilder::new("later").ping(&["127.0.0.1"]).yaml()),
    )?;
    wait_for(WAIT, "DaemonSet after the Pinger appears", || async {
        Ok(get::<DaemonSet>(&c, &ns.name, "d").await?.is_some())
    })
    .await?;
    wait_for(WAIT, "Ready no longer PingerNotFound", || async {
        let d: Option<Debugger> = get(&c, &ns.name, "d").await?;
        Ok(d.and_then(|d| ready_condition(&d))
            .is_some_and(|(_, r)| r != "PingerNotFound"))
    })
    .await
}

fn pinger_ready(p: &Pinger) -> Option<(String, String, String)> {
    p.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[tokio::test]
async fn a_pinger_target_the_schema_lets_through_is_reported_as_invalid_spec() -> Result<()> {
    install_operator();
    let ns = namespace("op-pgr").await;
    let c = client().await;
    apply(
        &ns.name,
        Manifest::Yaml(
            &PingerBuilder::new("mesh")
                .ping(&["10.0.0.300", "127.0.0.1"])
                .tcp_ping(&["127.0.0.1:80"])
                .yaml(),
        ),
    )?;
    wait_for(WAIT, "Pinger mesh Ready=False InvalidSpec", || async {
        let p: Option<Pinger> = get(&c, &ns.name, "mesh").await?;
        Ok(p.and_then(|p| pinger_ready(&p)).is_some_and(|(s, r, m)| {
            s == "False" && r == "InvalidSpec" && m.contains("10.0.0.300")
        }))
    })
    .await?;
    wait_for(WAIT, "Warning InvalidSpec on Pinger mesh", || async {
        let fields = "involvedObject.name=mesh,involvedObject.kind=Pinger,reason=InvalidSpec";
        let list = events(&c, &ns.name, fields).await?;
        Ok(list.iter().any(|e| e.type_.as_deref() == Some("Warning")))
    })
    .await?;

    apply(
        &ns.name,
        Manifest::Yaml(
            &PingerBuilder::new("mesh")
                .ping(&["10.0.0.30", "127.0.0.1"])
                .yaml(),
        ),
    )?;
    wait_for(WAIT, "Pinger mesh Ready=True after the fix", || async {
        let p: Option<Pinger> = get(&c, &ns.name, "mesh").await?;
        Ok(p.is_some_and(|p| {
            pinger_ready(&p).is_some_and(|(s, r, _)| s == "True" && r == "TargetsValid")
                && p.status.as_ref().map(|s| s.observed_generation) == p.metadata.generation
        }))
    })
    .await
}

#[tokio::test]
async fn invalid_spec_keeps_the_workload_untouched_until_fixed() -> Result<()> {
    install_operator();
    let ns = namespace("op-fix").await;
    let c = client().await;
    apply(
        &ns.name,
        Manifest::Yaml(&DebuggerBuilder::new("d").cpu("100m").yaml()),
    )?;
    wait_for(WAIT, "DaemonSet d", || async {
        Ok(get::<DaemonSet>(&c, &ns.name, "d").await?.is_some())
    })
    .await?;
    let before: DaemonSet = get(&c, &ns.name, "d").await?.unwrap();

    apply(
        &ns.name,
        Manifest::Yaml(
            &DebuggerBuilder::new("d")
                .cpu("200m")
                .node_name("node-1")
                .yaml(),
        ),
    )?;
    wait_condition(&c, &ns.name, "d", "False", "InvalidSpec").await?;
    wait_event(&c, &ns.name, "d", "Warning", "InvalidSpec").await?;
    let during: DaemonSet = get(&c, &ns.name, "d").await?.unwrap();
    assert_eq!(
        during.metadata.generation, before.metadata.generation,
        "workload untouched"
    );

    apply(
        &ns.name,
        Manifest::Yaml(
            &DebuggerBuilder::new("d")
                .cpu("200m")
                .run_at("61 * * * *")
                .yaml(),
        ),
    )?;
    wait_for(WAIT, "bad cron reported", || async {
        let d: Option<Debugger> = get(&c, &ns.name, "d").await?;
        Ok(d.and_then(|d| d.status)
            .is_some_and(|s| s.conditions.iter().any(|c| c.message.contains("runAt"))))
    })
    .await?;

    apply(
        &ns.name,
        Manifest::Yaml(&DebuggerBuilder::new("d").cpu("200m").yaml()),
    )?;
    wait_for(WAIT, "fixed spec reaches the DaemonSet", || async {
        let ds: DaemonSet = get(&c, &ns.name, "d").await?.context("ds")?;
        let cpu = template_of(&ds).containers[0]
            .resources
            .clone()
            .unwrap()
            .limits
            .unwrap()["cpu"]
            .0
            .clone();
        Ok(cpu == "200m")
    })
    .await
}

#[tokio::test]
async fn spec_changes_reach_the_workload_but_pinger_target_edits_do_not() -> Result<()> {
    install_operator();
    let ns = namespace("op-upd").await;
    let c = client().await;
    apply(
        &ns.name,
        Manifest::Yaml(&PingerBuilder::new("mesh").ping(&["127.0.0.1"]).yaml()),
    )?;
    apply(
        &ns.name,
        Manifest::Yaml(&DebuggerBuilder::new("d").pinger("mesh").yaml()),
    )?;
    wait_for(WAIT, "DaemonSet d", || async {
        Ok(get::<DaemonSet>(&c, &ns.name, "d").await?.is_some())
    })
    .await?;

    apply(
        &ns.name,
        Manifest::Yaml(
            &DebuggerBuilder::new("d")
                .pinger("mesh")
                .memory("96Mi")
                .subnet("blue")
                .yaml(),
        ),
    )?;
    wait_for(WAIT, "memory and subnet reach the template", || async {
        let ds: DaemonSet = get(&c, &ns.name, "d").await?.context("ds")?;
        let tpl = ds.spec.clone().unwrap().template;
        let mem = template_of(&ds).containers[0]
            .resources
            .clone()
            .unwrap()
            .requests
            .unwrap()["memory"]
            .0
            .clone();
        let subnet = tpl
            .metadata
            .and_then(|m| m.annotations)
            .unwrap_or_default()
            .get("ovn.kubernetes.io/logical_switch")
            .cloned();
        Ok(mem == "96Mi" && subnet.as_deref() == Some("blue"))
    })
    .await?;
    wait_event(&c, &ns.name, "d", "Normal", "WorkloadUpdated").await?;
    let settled: DaemonSet = get(&c, &ns.name, "d").await?.unwrap();

    apply(
        &ns.name,
        Manifest::Yaml(
            &PingerBuilder::new("mesh")
                .ping(&["127.0.0.2"])
                .interval(9)
                .yaml(),
        ),
    )?;
    apply(
        &ns.name,
        Manifest::Yaml(
            &DebuggerBuilder::new("d")
                .pinger("mesh")
                .memory("96Mi")
                .subnet("blue")
                .run_at("@hourly")
                .yaml(),
        ),
    )?;
    wait_for(WAIT, "runAt change reconciled", || async {
        let d: Option<Debugger> = get(&c, &ns.name, "d").await?;
        Ok(d.and_then(|d| d.status)
            .is_some_and(|s| s.next_run_at.is_some()))
    })
    .await?;
    let after: DaemonSet = get(&c, &ns.name, "d").await?.unwrap();
    assert_eq!(
        after.metadata.generation, settled.metadata.generation,
        "Pinger targets and runAt leave the template alone"
    );

    apply(
        &ns.name,
        Manifest::Yaml(
            &PingerBuilder::new("mesh")
                .image("ghcr.io/kube-combo/combo-pinger:v0.1.1")
                .ping(&["127.0.0.2"])
                .yaml(),
        ),
    )?;
    wait_for(WAIT, "pinger image reaches the template", || async {
        let ds: DaemonSet = get(&c, &ns.name, "d").await?.context("ds")?;
        Ok(template_of(&ds).containers[1].image.as_deref()
            == Some("ghcr.io/kube-combo/combo-pinger:v0.1.1"))
    })
    .await
}

#[tokio::test]
async fn a_pod_whose_spec_changes_is_replaced() -> Result<()> {
    install_operator();
    let ns = namespace("op-repl").await;
    let c = client().await;
    apply(
        &ns.name,
        Manifest::Yaml(
            &DebuggerBuilder::new("p")
                .workload(WorkloadType::Pod)
                .cpu("100m")
                .yaml(),
        ),
    )?;
    let first = eventually::<Pod>(&c, &ns.name, "p").await?.metadata.uid;
    apply(
        &ns.name,
        Manifest::Yaml(
            &DebuggerBuilder::new("p")
                .workload(WorkloadType::Pod)
                .cpu("150m")
                .yaml(),
        ),
    )?;
    wait_for(WAIT, "a new Pod p with the new cpu", || async {
        let Some(p) = get::<Pod>(&c, &ns.name, "p").await? else {
            return Ok(false);
        };
        let cpu = p.spec.clone().unwrap().containers[0]
            .resources
            .clone()
            .unwrap()
            .limits
            .unwrap()["cpu"]
            .0
            .clone();
        Ok(p.metadata.uid != first && cpu == "150m")
    })
    .await
}

#[tokio::test]
async fn deleting_the_debugger_removes_its_workload_and_summary() -> Result<()> {
    install_operator();
    let ns = namespace("op-del").await;
    let c = client().await;
    apply(
        &ns.name,
        Manifest::Yaml(&DebuggerBuilder::new("gone").summary("gone-results").yaml()),
    )?;
    wait_for(WAIT, "workload and summary", || async {
        Ok(present(&c, &ns.name, "gone", "gone-results").await? == (true, true))
    })
    .await?;
    kubectl_ok(&["delete", "dbg", "gone", "-n", &ns.name])?;
    wait_for(
        WAIT,
        "garbage collection of DaemonSet and ConfigMap",
        || async { Ok(present(&c, &ns.name, "gone", "gone-results").await? == (false, false)) },
    )
    .await
}

#[tokio::test]
async fn a_summary_name_taken_by_another_debugger_is_an_invalid_spec() -> Result<()> {
    install_operator();
    let ns = namespace("op-taken").await;
    let c = client().await;
    // The first Debugger makes it. (One made by hand is never adopted:
    // tests/e2e/tests/truth.rs.)
    apply(
        &ns.name,
        Manifest::Yaml(&DebuggerBuilder::new("first").summary("shared").yaml()),
    )?;
    let first: Debugger = eventually(&c, &ns.name, "first").await?;
    let controller_of = |cm: Option<ConfigMap>| {
        cm.and_then(|cm| cm.metadata.owner_references)
            .into_iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .map(|o| o.uid)
    };
    wait_for(WAIT, "shared made by first", || async {
        Ok(controller_of(get(&c, &ns.name, "shared").await?) == first.metadata.uid)
    })
    .await?;

    apply(
        &ns.name,
        Manifest::Yaml(&DebuggerBuilder::new("second").summary("shared").yaml()),
    )?;
    wait_condition(&c, &ns.name, "second", "False", "InvalidSpec").await?;
    let second: Debugger = get(&c, &ns.name, "second").await?.context("second")?;
    let message = second
        .status
        .iter()
        .flat_map(|s| &s.conditions)
        .map(|c| c.message.clone())
        .collect::<String>();
    assert!(
        message.contains("ConfigMap \"shared\" already exists and is not owned"),
        "{message}"
    );
    assert!(
        get::<DaemonSet>(&c, &ns.name, "second").await?.is_none(),
        "no workload for a Debugger whose summary is taken"
    );
    assert_eq!(
        controller_of(get(&c, &ns.name, "shared").await?),
        first.metadata.uid,
        "the ConfigMap stays with its owner"
    );

    apply(
        &ns.name,
        Manifest::Yaml(&DebuggerBuilder::new("second").summary("own").yaml()),
    )?;
    wait_for(WAIT, "fixed: second's workload and summary", || async {
        Ok(present(&c, &ns.name, "second", "own").await? == (true, true))
    })
    .await
}

#[tokio::test]
async fn a_workload_and_summary_deleted_by_hand_come_back() -> Result<()> {
    install_operator();
    let ns = namespace("op-back").await;
    let c = client().await;
    apply(
        &ns.name,
        Manifest::Yaml(&DebuggerBuilder::new("back").cpu("100m").yaml()),
    )?;
    let uid = |m: Option<DaemonSet>| m.and_then(|d| d.metadata.uid);
    wait_for(WAIT, "workload and summary", || async {
        Ok(present(&c, &ns.name, "back", "back-summary").await? == (true, true))
    })
    .await?;
    let first = uid(get::<DaemonSet>(&c, &ns.name, "back").await?);
    // At once, while the operator's record of its own write is fresh.
    kubectl_ok(&["delete", "ds/back", "cm/back-summary", "-n", &ns.name])?;
    wait_for(WAIT, "a new DaemonSet and ConfigMap", || async {
        let now = uid(get::<DaemonSet>(&c, &ns.name, "back").await?);
        Ok(now.is_some()
            && now != first
            && get::<ConfigMap>(&c, &ns.name, "back-summary")
                .await?
                .is_some())
    })
    .await
}

/// resourceVersions of everything the operator writes for Debugger `name`.
async fn versions(c: &Client, ns: &str, name: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let rv = |kind: &str, m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        (
            kind.to_string(),
            m.resource_version.clone().unwrap_or_default(),
        )
    };
    let d: Debugger = get(c, ns, name).await?.context("debugger")?;
    out.extend([rv("Debugger", &d.metadata)]);
    let ds: DaemonSet = get(c, ns, name).await?.context("ds")?;
    out.extend([rv("DaemonSet", &ds.metadata)]);
    let cm: ConfigMap = get(c, ns, &format!("{name}-summary"))
        .await?
        .context("cm")?;
    out.extend([rv("ConfigMap", &cm.metadata)]);
    let role: Role = get(c, ns, &format!("kube-combo-workload.{name}"))
        .await?
        .context("role")?;
    out.extend([rv("Role", &role.metadata)]);
    Ok(out)
}

fn operator_pod() -> Result<String> {
    let out = kubectl_ok(&[
        "get",
        "pods",
        "-n",
        OPERATOR_NS,
        "-l",
        "app.kubernetes.io/component=operator",
        "--field-selector=status.phase=Running",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ])?;
    match out.split_whitespace().collect::<Vec<_>>()[..] {
        [one] => Ok(one.to_string()),
        _ => bail!("expected one running operator pod, got {out:?}"),
    }
}

#[tokio::test]
async fn an_operator_restart_changes_no_object() -> Result<()> {
    install_operator();
    let ns = namespace("op-rst").await;
    let c = client().await;
    apply(
        &ns.name,
        Manifest::Yaml(&DebuggerBuilder::new("steady").cpu("100m").yaml()),
    )?;
    let want = nodes().len() as i32;
    wait_for(WAIT, "steady is ready", || async {
        let d: Option<Debugger> = get(&c, &ns.name, "steady").await?;
        Ok(d.and_then(|d| d.status)
            .is_some_and(|s| s.ready_pods == want && s.desired_pods == want))
    })
    .await?;
    // Let the last status write land before taking the snapshot.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = versions(&c, &ns.name, "steady").await?;

    let old = operator_pod()?;
    kubectl_ok(&["delete", "pod", "-n", OPERATOR_NS, &old, "--wait=true"])?;
    wait_for(WAIT, "a new operator pod runs", || async {
        Ok(operator_pod().is_ok_and(|p| p != old))
    })
    .await?;
    // Prove the new operator is reconciling: a new Debugger gets its workload.
    apply(
        &ns.name,
        Manifest::Yaml(&DebuggerBuilder::new("probe").cpu("100m").yaml()),
    )?;
    wait_for(WAIT, "the new operator reconciles", || async {
        Ok(get::<DaemonSet>(&c, &ns.name, "probe").await?.is_some())
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = versions(&c, &ns.name, "steady").await?;
    assert_eq!(
        before, after,
        "a restart writes nothing for an unchanged Debugger"
    );
    Ok(())
}

/// The per-namespace workload set of earlier versions, as they wrote it.
const LEGACY_RBAC: &str = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: kube-combo-workload\n  labels: {app.kubernetes.io/name: kube-combo, app.kubernetes.io/component: workload}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: kube-combo-workload\n  labels: {app.kubernetes.io/name: kube-combo, app.kubernetes.io/component: workload}\nrules:\n- apiGroups: [kubecombo.io]\n  resources: [debuggers]\n  verbs: [get]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: kube-combo-workload\n  labels: {app.kubernetes.io/name: kube-combo, app.kubernetes.io/component: workload}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: kube-combo-workload}\nsubjects:\n- {kind: ServiceAccount, name: kube-combo-workload}\n";

/// Whether ServiceAccount, Role and RoleBinding `name` exist, in that order.
async fn rbac_set(c: &Client, ns: &str, name: &str) -> Result<[bool; 3]> {
    Ok([
        get::<ServiceAccount>(c, ns, name).await?.is_some(),
        get::<Role>(c, ns, name).await?.is_some(),
        get::<RoleBinding>(c, ns, name).await?.is_some(),
    ])
}

#[tokio::test]
async fn each_debugger_has_its_own_workload_rbac_and_the_shared_one_goes_once_unused() -> Result<()>
{
    install_operator();
    let ns = namespace("rbac-own").await;
    let c = client().await;
    apply(&ns.name, Manifest::Yaml(LEGACY_RBAC))?;
    apply(
        &ns.name,
        Manifest::Yaml(&DebuggerBuilder::new("moved").cpu("100m").yaml()),
    )?;
    let want = nodes().len() as i32;
    wait_for(WAIT, "moved is ready", || async {
        let d: Option<Debugger> = get(&c, &ns.name, "moved").await?;
        Ok(d.and_then(|d| d.status)
            .is_some_and(|s| s.ready_pods == want && s.desired_pods == want))
    })
    .await?;
    assert_eq!(
        rbac_set(&c, &ns.name, "kube-combo-workload.moved").await?,
        [true; 3]
    );
    // Its pods run as its own account, so the shared set is unused now.
    wait_for(
        WAIT,
        "the shared set of earlier versions is deleted",
        || async { Ok(rbac_set(&c, &ns.name, "kube-combo-workload").await? == [false; 3]) },
    )
    .await?;
    // Deleted by hand, its ServiceAccount and RoleBinding are written again.
    let own = "kube-combo-workload.moved";
    let uids = || async {
        let account = get::<ServiceAccount>(&c, &ns.name, own).await?;
        let binding = get::<RoleBinding>(&c, &ns.name, own).await?;
        Ok::<_, anyhow::Error>((
            account.and_then(|a| a.metadata.uid),
            binding.and_then(|b| b.metadata.uid),
        ))
    };
    let (account, binding) = uids().await?;
    let (sa, rb) = (
        format!("serviceaccount/{own}"),
        format!("rolebinding/{own}"),
    );
    kubectl_ok(&["delete", &sa, &rb, "-n", &ns.name])?;
    wait_for(WAIT, "a new ServiceAccount and RoleBinding", || async {
        let (a, b) = uids().await?;
        Ok(a.is_some() && b.is_some() && a != account && b != binding)
    })
    .await?;
    // The pods held the old account's token: the template names the new
    // account, so they are replaced.
    let (account, _) = uids().await?;
    wait_for(WAIT, "the pod template names the new account", || async {
        let ds: Option<DaemonSet> = get(&c, &ns.name, "moved").await?;
        let annotations = ds.map(|d| template_annotations(&d)).unwrap_or_default();
        Ok(annotations.get(keys::ANNOTATION_ACCOUNT_UID) == account.as_ref())
    })
    .await?;
    // Its own set goes with it (the garbage collector follows the owner).
    kubectl_ok(&["delete", "debugger", "moved", "-n", &ns.name])?;
    wait_for(
        WAIT,
        "the Debugger's own set is deleted with it",
        || async { Ok(rbac_set(&c, &ns.name, "kube-combo-workload.moved").await? == [false; 3]) },
    )
    .await
}

#[tokio::test]
async fn the_operator_runs_as_its_own_least_privilege_service_account() -> Result<()> {
    install_operator();
    // Another test may be restarting the operator: read the running pod's
    // name and ServiceAccount in one request, once there is exactly one.
    let running = || {
        kubectl_ok(&[
            "get",
            "pods",
            "-n",
            OPERATOR_NS,
            "-l",
            "app.kubernetes.io/component=operator",
            "--field-selector=status.phase=Running",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.spec.serviceAccountName}{\"\\n\"}{end}",
        ])
    };
    let found = std::sync::Mutex::new(String::new());
    wait_for(WAIT, "one running operator pod", || async {
        let out = running()?;
        let one = out.lines().count() == 1;
        if one {
            *found.lock().unwrap() = out.trim().to_string();
        }
        Ok(one)
    })
    .await?;
    let line = found.into_inner().unwrap();
    let (pod, sa) = line
        .split_once(' ')
        .with_context(|| format!("name and ServiceAccount: {line:?}"))?;
    assert_eq!(sa, "combo-operator");
    let who = format!("--as=system:serviceaccount:{OPERATOR_NS}:combo-operator");
    let can = |verb: &str, what: &str| {
        let (what, sub) = what.split_once('/').unwrap_or((what, ""));
        let sub = format!("--subresource={sub}");
        let mut args = vec!["auth", "can-i", verb, what, "-A", &who];
        if what.ends_with("kubecombo.io") && !sub.ends_with('=') {
            args.push(&sub);
        }
        let out = kubectl(&args);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(can("patch", "daemonsets.apps"), "yes");
    assert_eq!(can("patch", "debuggers.kubecombo.io/status"), "yes");
    assert_eq!(can("patch", "pingers.kubecombo.io/status"), "yes");
    assert_eq!(can("get", "secrets"), "no");
    assert_eq!(can("delete", "configmaps"), "no");
    assert_eq!(
        can("create", "clusterroles.rbac.authorization.k8s.io"),
        "no"
    );
    let log_dir: PathBuf = combo_e2e::cluster_dir()
        .join("pods")
        .join(OPERATOR_NS)
        .join(pod);
    assert!(
        log_dir.exists(),
        "the simulator runs the operator pod: {}",
        log_dir.display()
    );
    Ok(())
}

/// Whether DaemonSet `ds` and ConfigMap `cm` of `ns` exist.
async fn present(c: &kube::Client, ns: &str, ds: &str, cm: &str) -> Result<(bool, bool)> {
    Ok((
        get::<DaemonSet>(c, ns, ds).await?.is_some(),
        get::<ConfigMap>(c, ns, cm).await?.is_some(),
    ))
}
