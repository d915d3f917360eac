//! What the operator's end-to-end tests share: the start of a test, reading
//! objects, and the waits for what the operator writes.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_api::{Debugger, DebuggerStatus, Pinger};
use combo_e2e::{
    client, debugger_events, install_operator, kubectl_ok, namespace, nodes, repo_root, wait_for,
    TestNamespace, OPERATOR_NAMESPACE,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{Api, Client};

pub const OPERATOR_NS: &str = OPERATOR_NAMESPACE;
pub const WAIT: Duration = Duration::from_secs(120);

/// A namespaced object the tests read by name.
pub trait Object:
    kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
{
}

impl<K> Object for K where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
{
}

/// Installs the operator, then makes the test's namespace and a client.
pub async fn setup(prefix: &str) -> (TestNamespace, Client) {
    install_operator();
    let ns = namespace(prefix).await;
    let c = client().await;
    (ns, c)
}

/// Applies a manifest file of the repository into `ns`.
pub fn apply_file(ns: &str, rel: &str) -> Result<()> {
    let path = repo_root().join(rel);
    kubectl_ok(&["apply", "-n", ns, "-f", path.to_str().context("path")?]).map(drop)
}

pub async fn get<K: Object>(client: &Client, ns: &str, name: &str) -> Result<Option<K>> {
    Ok(Api::<K>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await?)
}

/// Waits until the object exists and returns it.
pub async fn eventually<K: Object>(client: &Client, ns: &str, name: &str) -> Result<K> {
    eventually_within(client, ns, name, WAIT).await
}

/// Waits at most `timeout` until the object exists and returns it.
pub async fn eventually_within<K: Object>(
    client: &Client,
    ns: &str,
    name: &str,
    timeout: Duration,
) -> Result<K> {
    let what = format!("{} {name}", K::kind(&()));
    exists_within::<K>(client, ns, name, &what, timeout).await?;
    get::<K>(client, ns, name).await?.context("object vanished")
}

/// Waits until the object exists; `what` names the wait.
pub async fn wait_exists<K: Object>(
    client: &Client,
    ns: &str,
    name: &str,
    what: &str,
) -> Result<()> {
    exists_within::<K>(client, ns, name, what, WAIT).await
}

async fn exists_within<K: Object>(
    client: &Client,
    ns: &str,
    name: &str,
    what: &str,
    timeout: Duration,
) -> Result<()> {
    wait_for(timeout, what, || async {
        Ok(get::<K>(client, ns, name).await?.is_some())
    })
    .await
}

/// The `Ready` condition among `conditions`.
fn ready(conditions: &[Condition]) -> Option<&Condition> {
    conditions.iter().find(|c| c.type_ == "Ready")
}

/// Status, reason and message of a Pinger's `Ready` condition.
pub fn pinger_ready(p: &Pinger) -> Option<(String, String, String)> {
    ready(&p.status.as_ref()?.conditions)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Waits until Debugger `name` has a status that satisfies `check`.
pub async fn wait_status(
    client: &Client,
    ns: &str,
    name: &str,
    what: &str,
    check: impl Fn(&DebuggerStatus) -> bool,
) -> Result<()> {
    wait_for(WAIT, what, || async {
        let d: Option<Debugger> = get(client, ns, name).await?;
        Ok(d.and_then(|d| d.status).is_some_and(|s| check(&s)))
    })
    .await
}

/// Waits until Debugger `name`'s `Ready` condition has a reason that
/// satisfies `check`.
pub async fn wait_ready_reason(
    client: &Client,
    ns: &str,
    name: &str,
    what: &str,
    check: impl Fn(&str, &str) -> bool,
) -> Result<()> {
    wait_status(client, ns, name, what, |s| {
        ready(&s.conditions).is_some_and(|c| check(&c.status, &c.reason))
    })
    .await
}

/// Waits until Debugger `name` is `Ready=status` with `reason`.
pub async fn wait_condition(
    client: &Client,
    ns: &str,
    name: &str,
    status: &str,
    reason: &str,
) -> Result<()> {
    let what = format!("{name} Ready={status} {reason}");
    wait_ready_reason(client, ns, name, &what, |s, r| s == status && r == reason).await
}

/// Waits until Debugger `name` has one ready pod per node, and returns the
/// number of nodes.
pub async fn wait_all_pods_ready(client: &Client, ns: &str, name: &str, what: &str) -> Result<i32> {
    let want = nodes().len() as i32;
    wait_status(client, ns, name, what, |s| {
        s.ready_pods == want && s.desired_pods == want
    })
    .await?;
    Ok(want)
}

/// Type and reason of each Event about Debugger `name`.
pub async fn events_for(client: &Client, ns: &str, name: &str) -> Result<Vec<(String, String)>> {
    Ok(debugger_events(client, ns, name)
        .await?
        .into_iter()
        .map(|e| (e.type_.unwrap_or_default(), e.reason.unwrap_or_default()))
        .collect())
}

/// Waits for an Event of `type_` with `reason` about Debugger `name`.
pub async fn wait_event(
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

/// Whether DaemonSet `ds` and ConfigMap `cm` of `ns` exist.
pub async fn present(c: &Client, ns: &str, ds: &str, cm: &str) -> Result<(bool, bool)> {
    Ok((
        get::<DaemonSet>(c, ns, ds).await?.is_some(),
        get::<ConfigMap>(c, ns, cm).await?.is_some(),
    ))
}

/// Waits until whether DaemonSet `ds` and ConfigMap `cm` exist is `want`.
pub async fn wait_present(
    c: &Client,
    ns: &str,
    (ds, cm): (&str, &str),
    want: (bool, bool),
    what: &str,
) -> Result<()> {
    wait_for(WAIT, what, || async {
        Ok(present(c, ns, ds, cm).await? == want)
    })
    .await
}

pub fn template_annotations(ds: &DaemonSet) -> BTreeMap<String, String> {
    let template = ds.spec.as_ref().map(|s| &s.template);
    let meta = template.and_then(|t| t.metadata.as_ref());
    meta.and_then(|m| m.annotations.clone()).unwrap_or_default()
}

pub fn template_of(ds: &DaemonSet) -> PodSpec {
    ds.spec.clone().unwrap().template.spec.unwrap()
}

/// The first container's limit of `resource`.
pub fn limit(pod: &PodSpec, resource: &str) -> String {
    pod.containers[0].resources.clone().unwrap().limits.unwrap()[resource]
        .0
        .clone()
}

/// The first container's request of `resource`.
pub fn request(pod: &PodSpec, resource: &str) -> String {
    pod.containers[0]
        .resources
        .clone()
        .unwrap()
        .requests
        .unwrap()[resource]
        .0
        .clone()
}

/// The running operator pods, as `kubectl get -o jsonpath=<jsonpath>` prints them.
pub fn running_operator_pods(jsonpath: &str) -> Result<String> {
    kubectl_ok(&[
        "get",
        "pods",
        "-n",
        OPERATOR_NS,
        "-l",
        "app.kubernetes.io/component=operator",
        "--field-selector=status.phase=Running",
        "-o",
        &format!("jsonpath={jsonpath}"),
    ])
}
