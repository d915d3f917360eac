//! The workload pods' ServiceAccount, Role and RoleBinding: one set per
//! Debugger, all three named `kube-combo-workload.<debugger>` and owned by
//! it, so the garbage collector removes them with it.
//!
//! The Role grants only what docs/security.md, "The workload pods", lists:
//! read its own Debugger and the Pinger it names (by name), watch pods, get
//! and apply DebuggerReports, create Events; nothing on ConfigMaps. It
//! changes only with the Pinger's name. The Role's spec hash (from the Role
//! cache) and the names of the ServiceAccounts and RoleBindings that exist
//! tell whether the three are in place, so a reconcile with nothing to
//! change writes nothing, and one deleted by hand is written again.
//!
//! Earlier versions used one set per namespace named `kube-combo-workload`;
//! [`retire_legacy`] deletes it once no pod of the namespace runs as it.

use std::sync::Arc;
use std::time::Duration;

use combo_api::keys::{self, GROUP, WORKLOAD_ACCOUNT_PREFIX};
use combo_api::Debugger;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector::Store;
use kube::{Api, Client, Resource, ResourceExt};
use tracing::{info, warn};

use crate::core::spec_hash::{spec_hash, spec_hash_of};
use crate::core::validate::Valid;
use crate::edge::apply;
use crate::metrics::registry::Metrics;
use crate::state::cache::{lookup, Caches, Slim};

/// `app.kubernetes.io/component` of the workload RBAC.
pub const COMPONENT: &str = "workload";
/// How often [`retire_legacy`] looks for a namespace's old shared set.
const LEGACY_CHECK_EVERY: Duration = Duration::from_secs(10);

/// The three objects of one Debugger.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadRbac {
    /// The ServiceAccount its pods run as.
    pub service_account: ServiceAccount,
    /// Its Role.
    pub role: Role,
    /// Binding of the Role to the ServiceAccount.
    pub binding: RoleBinding,
    /// Hash over all three, stamped on each.
    pub hash: String,
}

/// Renders the workload RBAC of the validated Debugger `valid`. Pure.
pub fn render(valid: &Valid) -> WorkloadRbac {
    let name = keys::workload_account(&valid.name);
    let namespace = valid.namespace.clone();
    let meta = metadata(valid, &name, &namespace);
    let service_account = ServiceAccount {
        metadata: meta.clone(),
        ..ServiceAccount::default()
    };
    let role = Role {
        metadata: meta.clone(),
        rules: Some(rules(valid)),
    };
    let binding = binding(meta, name, namespace);
    let hash = spec_hash(&(&service_account, &role, &binding));
    let stamp = |m: &mut ObjectMeta| {
        m.annotations.get_or_insert_with(Default::default).insert(
            crate::core::spec_hash::ANNOTATION_SPEC_HASH.into(),
            hash.clone(),
        );
    };
    let (mut service_account, mut role, mut binding) = (service_account, role, binding);
    stamp(&mut service_account.metadata);
    stamp(&mut role.metadata);
    stamp(&mut binding.metadata);
    WorkloadRbac {
        service_account,
        role,
        binding,
        hash,
    }
}

/// The metadata the three objects share: name, namespace, labels and the
/// Debugger's controller reference.
fn metadata(valid: &Valid, name: &str, namespace: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(namespace.to_string()),
        labels: Some(
            [
                (keys::LABEL_NAME, keys::LABEL_NAME_VALUE),
                ("app.kubernetes.io/component", COMPONENT),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ),
        owner_references: valid.owner.clone().map(|o| vec![o]),
        ..ObjectMeta::default()
    }
}

/// What the workload of the Debugger `valid` may do: read itself (and its
/// Pinger) and the pods, write its reports and Events.
fn rules(valid: &Valid) -> Vec<PolicyRule> {
    let read = ["get", "list", "watch"];
    let mut rules = vec![rule(&[GROUP], &["debuggers"], &[&valid.name], &read)];
    if let Some(pinger) = &valid.pinger {
        rules.push(rule(&[GROUP], &["pingers"], &[pinger], &read));
    }
    rules.extend([
        rule(&[""], &["pods"], &[], &read),
        // A server-side apply that creates the report needs create too.
        rule(
            &[GROUP],
            &["debuggerreports"],
            &[],
            &["get", "create", "patch"],
        ),
        rule(
            &["", "events.k8s.io"],
            &["events"],
            &[],
            &["create", "patch"],
        ),
    ]);
    rules
}

/// One rule; no `names` means every name.
fn rule(groups: &[&str], resources: &[&str], names: &[&str], verbs: &[&str]) -> PolicyRule {
    let list = |items: &[&str]| Some(items.iter().map(|s| s.to_string()).collect());
    PolicyRule {
        api_groups: list(groups),
        resources: list(resources),
        // No names means every name: only rules that name their objects
        // carry any.
        resource_names: (!names.is_empty()).then(|| list(names)).flatten(),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..PolicyRule::default()
    }
}

/// The RoleBinding of the Role `name` to the ServiceAccount `name`.
fn binding(metadata: ObjectMeta, name: String, namespace: String) -> RoleBinding {
    RoleBinding {
        metadata,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: name.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name,
            namespace: Some(namespace),
            ..Subject::default()
        }]),
    }
}

/// Makes sure the workload RBAC of `dbg`, validated as `valid`, is in place: when the cached Role
/// is missing or not as rendered, or the ServiceAccount or RoleBinding is
/// missing, applies the three objects (in this order: binding a Role needs
/// the Role). A Role of that name controlled by something else is not
/// taken over. Returns the ServiceAccount's UID, when known.
pub async fn ensure(
    client: &Client,
    metrics: &Metrics,
    caches: &Caches,
    dbg: &Debugger,
    valid: &Valid,
) -> Result<Option<String>, apply::Error> {
    let desired = render(valid);
    let ns = valid.namespace.clone();
    let name = desired.role.metadata.name.clone().unwrap_or_default();
    let current = caches
        .recent_roles
        .merge(&ns, &name, lookup(&caches.roles, &ns, &name), |r| {
            &r.metadata
        });
    if let Some(role) = current {
        if apply::controlled_by_other(&role.metadata, dbg) {
            return Err(apply::Error::NotOwned { kind: "Role", name });
        }
        if spec_hash_of(&role.metadata) == Some(desired.hash.as_str())
            && caches.bindings.contains(&ns, &name)
        {
            if let Some(uid) = caches.accounts.get(&ns, &name) {
                return Ok(uid);
            }
        }
    }
    let account = apply::apply(
        client,
        metrics,
        &ns,
        &desired.service_account,
        "ServiceAccount",
    )
    .await?;
    let uid = account.metadata.uid;
    caches.accounts.note(&ns, &name, uid.clone());
    let mut role = apply::apply(client, metrics, &ns, &desired.role, "Role").await?;
    apply::apply(client, metrics, &ns, &desired.binding, "RoleBinding").await?;
    caches.bindings.note(&ns, &name, None);
    role.slim();
    caches
        .recent_roles
        .record(&role.metadata.clone(), Arc::new(role));
    Ok(uid)
}

/// Whether the shared set `kube-combo-workload` of `ns` (earlier versions)
/// is used by no pod any more: every Debugger of `ns` has a Role of its own,
/// and every DaemonSet of `ns` has rolled its pods out to its current
/// template. (Pod workloads are replaced in the reconcile that writes their
/// Debugger's Role.) A Debugger whose spec is invalid keeps its old
/// workload, and with it the shared set. Pure.
pub fn legacy_unused(
    ns: &str,
    debuggers: &[Arc<Debugger>],
    roles: &[Arc<Role>],
    daemonsets: &[Arc<DaemonSet>],
) -> bool {
    let has_role = |d: &Debugger| {
        let name = keys::workload_account(&d.name_any());
        roles
            .iter()
            .any(|r| r.namespace().as_deref() == Some(ns) && r.name_any() == name)
    };
    let rolled_out = |ds: &DaemonSet| {
        let s = ds.status.clone().unwrap_or_default();
        s.observed_generation == ds.metadata.generation
            && s.updated_number_scheduled.unwrap_or(0) == s.desired_number_scheduled
    };
    debuggers
        .iter()
        .filter(|d| d.namespace().as_deref() == Some(ns) && d.meta().deletion_timestamp.is_none())
        .all(|d| has_role(d))
        && daemonsets
            .iter()
            .filter(|d| d.namespace().as_deref() == Some(ns))
            .all(|d| rolled_out(d))
}

/// Namespaces that still have the shared set of earlier versions, known by
/// its Role. Pure.
pub fn legacy_namespaces(roles: &[Arc<Role>]) -> Vec<String> {
    roles
        .iter()
        .filter(|r| r.name_any() == WORKLOAD_ACCOUNT_PREFIX && r.owner_references().is_empty())
        .filter_map(|r| r.namespace())
        .collect()
}

/// Deletes the shared workload set of earlier versions in each namespace
/// where [`legacy_unused`] holds, checking every 10 s. Runs until dropped
/// (a replica that loses the Lease drops it with its controller).
pub async fn retire_legacy(
    client: Client,
    debuggers: Store<Debugger>,
    roles: Store<Role>,
    daemonsets: Store<DaemonSet>,
) {
    for store_ready in [
        debuggers.wait_until_ready().await,
        roles.wait_until_ready().await,
        daemonsets.wait_until_ready().await,
    ] {
        if store_ready.is_err() {
            return;
        }
    }
    loop {
        let (all_roles, all_debuggers, all_daemonsets) =
            (roles.state(), debuggers.state(), daemonsets.state());
        for ns in legacy_namespaces(&all_roles) {
            if !legacy_unused(&ns, &all_debuggers, &all_roles, &all_daemonsets) {
                continue;
            }
            // In this order: the binding goes before what it binds.
            let result = async {
                delete_legacy::<RoleBinding>(&client, &ns).await?;
                delete_legacy::<Role>(&client, &ns).await?;
                delete_legacy::<ServiceAccount>(&client, &ns).await
            }
            .await;
            match result {
                Ok(()) => {
                    info!(namespace = %ns, "removed the shared workload RBAC of an earlier version")
                }
                Err(e) => {
                    warn!(namespace = %ns, error = %e, "removing the shared workload RBAC failed")
                }
            }
        }
        tokio::time::sleep(LEGACY_CHECK_EVERY).await;
    }
}

/// Deletes the `kube-combo-workload` object of kind `K` in `ns`; one
/// already gone is fine.
async fn delete_legacy<K>(client: &Client, ns: &str) -> Result<(), kube::Error>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    match Api::<K>::namespaced(client.clone(), ns)
        .delete(WORKLOAD_ACCOUNT_PREFIX, &Default::default())
        .await
    {
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        other => other.map(drop),
    }
}

#[cfg(test)]
#[path = "rbac_tests.rs"]
mod tests;
