//! Objects the tests read and write: Events, container restarts, a
//! Debugger's `spec.runAt`, its summary ConfigMap.

use std::collections::BTreeMap;

use anyhow::Result;
use combo_api::{Debugger, NodeSummary};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use kube::api::{Api, Patch, PatchParams};
use kube::Client;

/// The Events of `ns` that the field selector `fields` selects (for
/// example `involvedObject.name=d,involvedObject.kind=Debugger`).
pub async fn events(c: &Client, ns: &str, fields: &str) -> Result<Vec<Event>> {
    let lp = kube::api::ListParams::default().fields(fields);
    Ok(Api::<Event>::namespaced(c.clone(), ns)
        .list(&lp)
        .await?
        .items)
}

/// The Events recorded on Debugger `name`.
pub async fn debugger_events(c: &Client, ns: &str, name: &str) -> Result<Vec<Event>> {
    let fields = format!("involvedObject.name={name},involvedObject.kind=Debugger");
    events(c, ns, &fields).await
}

/// Sum of the container restart counts of the pods in `ns` matching the
/// label selector `labels`.
pub async fn restarts(c: &Client, ns: &str, labels: &str) -> Result<i32> {
    let pods = Api::<Pod>::namespaced(c.clone(), ns)
        .list(&kube::api::ListParams::default().labels(labels))
        .await?;
    Ok(pods
        .items
        .iter()
        .flat_map(|p| {
            p.status
                .iter()
                .flat_map(|s| s.container_statuses.iter().flatten())
        })
        .map(|cs| cs.restart_count)
        .sum())
}

/// Sets `spec.runAt` of Debugger `name`: a run at that time.
pub async fn set_run_at(c: &Client, ns: &str, name: &str, run_at: &str) -> Result<()> {
    let api: Api<Debugger> = Api::namespaced(c.clone(), ns);
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"runAt": run_at}})),
    )
    .await?;
    Ok(())
}

/// node -> summary, from the summary ConfigMap `cm`.
pub async fn summaries(c: &Client, ns: &str, cm: &str) -> Result<BTreeMap<String, NodeSummary>> {
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
