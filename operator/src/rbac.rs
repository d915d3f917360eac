//! The workload pods' ServiceAccount `kube-combo-workload`, its Role and
//! RoleBinding, one set per namespace that has Debuggers.
//!
//! The operator creates them so that a Debugger works in any namespace
//! without extra manifests. The Role grants only what docs/security.md,
//! "The workload pods", lists: read Debuggers and Pingers, watch pods, get
//! and apply DebuggerReports, create Events; nothing on ConfigMaps. It is the same
//! for every Debugger, so the three objects do not grow with the number
//! of Debuggers in a namespace: they carry no owner. The operator deletes
//! them when the last Debugger of the namespace is gone
//! ([`clean_up_after`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use combo_api::keys::{self, GROUP};
use combo_api::Debugger;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector::Store;
use kube::{Api, Client, Resource, ResourceExt};
use tracing::{info, warn};

use crate::apply;
use crate::metrics::Metrics;
use crate::render::{spec_hash, spec_hash_of, WORKLOAD_SERVICE_ACCOUNT};

/// `app.kubernetes.io/component` of the workload RBAC.
const COMPONENT: &str = "workload";
/// How long after a Debugger's deletion its namespace is checked for
/// Debuggers left; a Debugger created meanwhile keeps the RBAC.
const CLEAN_UP_DELAY: Duration = Duration::from_secs(2);

/// The three objects of one namespace.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadRbac {
    /// `kube-combo-workload` ServiceAccount.
    pub service_account: ServiceAccount,
    /// Its Role.
    pub role: Role,
    /// Binding of the Role to the ServiceAccount.
    pub binding: RoleBinding,
    /// Hash over all three, stamped on each.
    pub hash: String,
}

/// Renders the workload RBAC of `namespace`. Pure.
pub fn render(namespace: &str) -> WorkloadRbac {
    let meta = ObjectMeta {
        name: Some(WORKLOAD_SERVICE_ACCOUNT.into()),
        namespace: Some(namespace.into()),
        labels: Some(BTreeMap::from([
            (
                keys::LABEL_NAME.to_string(),
                keys::LABEL_NAME_VALUE.to_string(),
            ),
            (
                "app.kubernetes.io/component".to_string(),
                COMPONENT.to_string(),
            ),
        ])),
        ..ObjectMeta::default()
    };
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| PolicyRule {
        api_groups: Some(groups.iter().map(|s| s.to_string()).collect()),
        resources: Some(resources.iter().map(|s| s.to_string()).collect()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..PolicyRule::default()
    };
    let service_account = ServiceAccount {
        metadata: meta.clone(),
        ..ServiceAccount::default()
    };
    let role = Role {
        metadata: meta.clone(),
        rules: Some(vec![
            rule(
                &[GROUP],
                &["debuggers", "pingers"],
                &["get", "list", "watch"],
            ),
            rule(&[""], &["pods"], &["get", "list", "watch"]),
            // A server-side apply that creates the report needs create too.
            rule(&[GROUP], &["debuggerreports"], &["get", "create", "patch"]),
            rule(&["", "events.k8s.io"], &["events"], &["create", "patch"]),
        ]),
    };
    let binding = RoleBinding {
        metadata: meta,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: WORKLOAD_SERVICE_ACCOUNT.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: WORKLOAD_SERVICE_ACCOUNT.into(),
            namespace: Some(namespace.into()),
            ..Subject::default()
        }]),
    };
    let hash = spec_hash(&(&service_account, &role, &binding));
    let stamp = |m: &mut ObjectMeta| {
        m.annotations
            .get_or_insert_with(Default::default)
            .insert(crate::render::ANNOTATION_SPEC_HASH.into(), hash.clone());
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

/// The namespaces whose workload RBAC this process has written or found
/// in place, each with a lock that serialises its writes and deletion.
/// Bounded by the namespaces with Debuggers: a namespace is forgotten when
/// its RBAC is deleted.
#[derive(Default)]
pub struct Namespaces(std::sync::Mutex<BTreeMap<String, Namespace>>);

#[derive(Default)]
struct Namespace {
    in_place: bool,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl Namespaces {
    fn in_place(&self, ns: &str) -> bool {
        self.0
            .lock()
            .expect("rbac lock")
            .get(ns)
            .is_some_and(|n| n.in_place)
    }

    fn set_in_place(&self, ns: &str, in_place: bool) {
        self.0
            .lock()
            .expect("rbac lock")
            .entry(ns.to_string())
            .or_default()
            .in_place = in_place;
    }

    fn lock_of(&self, ns: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.0
            .lock()
            .expect("rbac lock")
            .entry(ns.to_string())
            .or_default()
            .lock
            .clone()
    }

    fn forget(&self, ns: &str) {
        self.0.lock().expect("rbac lock").remove(ns);
    }

    /// Namespaces known.
    pub fn len(&self) -> usize {
        self.0.lock().expect("rbac lock").len()
    }

    /// Whether no namespace is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The writer of the workload RBAC, with the handles it uses.
pub struct Writer {
    /// API client.
    pub client: Client,
    /// Counts the writes.
    pub metrics: Arc<Metrics>,
    /// Every Debugger: whether a namespace still has one.
    pub debuggers: Store<Debugger>,
    /// What is in place, per namespace.
    pub namespaces: Namespaces,
}

/// Makes sure the workload RBAC of `dbg`'s namespace is in place. The
/// first reconcile of a namespace in this process reads the Role and
/// writes the three objects unless they are as rendered; it waits, since
/// the workload's pods need the ServiceAccount. Later reconciles of the
/// namespace write nothing.
pub async fn ensure(ctx: &Writer, dbg: &Debugger) -> Result<(), apply::Error> {
    let ns = dbg.namespace().unwrap_or_default();
    if ctx.namespaces.in_place(&ns) {
        return Ok(());
    }
    let lock = ctx.namespaces.lock_of(&ns);
    let _serialised = lock.lock().await;
    if ctx.namespaces.in_place(&ns) {
        return Ok(());
    }
    let desired = render(&ns);
    let current = Api::<Role>::namespaced(ctx.client.clone(), &ns)
        .get_opt(WORKLOAD_SERVICE_ACCOUNT)
        .await
        .map_err(|source| apply::Error::Write {
            kind: "Role",
            name: WORKLOAD_SERVICE_ACCOUNT.into(),
            source,
        })?;
    if current.as_ref().and_then(|r| spec_hash_of(&r.metadata)) != Some(desired.hash.as_str()) {
        let (c, m) = (&ctx.client, &ctx.metrics);
        // In this order: binding a Role needs the Role to exist.
        apply::apply(c, m, &ns, &desired.service_account, "ServiceAccount").await?;
        apply::apply(c, m, &ns, &desired.role, "Role").await?;
        apply::apply(c, m, &ns, &desired.binding, "RoleBinding").await?;
    }
    ctx.namespaces.set_in_place(&ns, true);
    Ok(())
}

/// Whether `ns` has a Debugger that is not being deleted. Pure.
pub fn has_live_debugger(all: &[Arc<Debugger>], ns: &str) -> bool {
    all.iter()
        .any(|d| d.namespace().as_deref() == Some(ns) && d.meta().deletion_timestamp.is_none())
}

/// Receives the namespaces of deleted Debuggers and removes the workload
/// RBAC of each that has no Debugger left, [`CLEAN_UP_DELAY`] later. Runs
/// until the sender is dropped; dropped itself, it cancels the removals
/// still waiting (a replica that lost the Lease writes nothing more).
pub async fn clean_up_after(
    ctx: Arc<Writer>,
    mut gone: tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let mut waiting = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            ns = gone.recv() => {
                let Some(ns) = ns else { break };
                let ctx = ctx.clone();
                waiting.spawn(async move {
                    tokio::time::sleep(CLEAN_UP_DELAY).await;
                    clean_up(&ctx.client, &ctx.namespaces, &ctx.debuggers, &ns).await;
                });
            }
            Some(_) = waiting.join_next(), if !waiting.is_empty() => {}
        }
    }
    while waiting.join_next().await.is_some() {}
}

/// Deletes the workload RBAC of `ns` if no Debugger is left there. Under
/// the namespace's lock, and marked as not in place first: a Debugger
/// created meanwhile writes it again.
async fn clean_up(client: &Client, rbac: &Namespaces, debuggers: &Store<Debugger>, ns: &str) {
    let lock = rbac.lock_of(ns);
    let _serialised = lock.lock().await;
    rbac.set_in_place(ns, false);
    if has_live_debugger(&debuggers.state(), ns) {
        return;
    }
    // In this order: the binding goes before what it binds.
    let result = async {
        delete_workload::<RoleBinding>(client, ns).await?;
        delete_workload::<Role>(client, ns).await?;
        delete_workload::<ServiceAccount>(client, ns).await
    }
    .await;
    match result {
        Ok(()) => {
            info!(namespace = %ns, "removed the workload RBAC of a namespace without Debuggers");
            rbac.forget(ns);
        }
        Err(e) => warn!(namespace = %ns, error = %e, "removing the workload RBAC failed"),
    }
}

/// Deletes the `kube-combo-workload` object of kind `K` in `ns`; one
/// already gone is fine.
async fn delete_workload<K>(client: &Client, ns: &str) -> Result<(), kube::Error>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    match Api::<K>::namespaced(client.clone(), ns)
        .delete(WORKLOAD_SERVICE_ACCOUNT, &Default::default())
        .await
    {
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        other => other.map(drop),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_api::DebuggerSpec;

    fn dbg(ns: &str, name: &str, deleting: bool) -> Arc<Debugger> {
        let mut d = Debugger::new(name, DebuggerSpec::default());
        d.metadata.namespace = Some(ns.into());
        if deleting {
            d.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ));
        }
        Arc::new(d)
    }

    #[test]
    fn the_workload_rbac_is_the_same_for_every_debugger_and_has_no_owner() {
        let r = render("ops");
        assert_eq!(r, render("ops"));
        assert_ne!(r.hash, render("dev").hash);
        for meta in [
            &r.service_account.metadata,
            &r.role.metadata,
            &r.binding.metadata,
        ] {
            assert_eq!(meta.owner_references, None);
            assert_eq!(spec_hash_of(meta), Some(r.hash.as_str()));
        }
        assert_eq!(
            r.binding.subjects.unwrap()[0].name,
            WORKLOAD_SERVICE_ACCOUNT
        );
        assert_eq!(r.binding.role_ref.name, WORKLOAD_SERVICE_ACCOUNT);
    }

    #[test]
    fn the_role_grants_reads_report_writes_and_events_and_nothing_on_configmaps() {
        let rules: Vec<(Vec<String>, Vec<String>)> = render("ops")
            .role
            .rules
            .unwrap()
            .into_iter()
            .map(|p| (p.resources.unwrap(), p.verbs))
            .collect();
        let as_text = |v: &[String]| v.join(",");
        let got: Vec<(String, String)> = rules
            .iter()
            .map(|(r, v)| (as_text(r), as_text(v)))
            .collect();
        assert_eq!(
            got,
            [
                ("debuggers,pingers".into(), "get,list,watch".into()),
                ("pods".into(), "get,list,watch".into()),
                ("debuggerreports".into(), "get,create,patch".into()),
                ("events".into(), "create,patch".into()),
            ]
        );
        assert!(rules
            .iter()
            .all(|(r, _)| !r.iter().any(|x| x == "configmaps")));
    }

    #[test]
    fn a_namespace_keeps_its_rbac_while_a_live_debugger_is_left() {
        let all = vec![dbg("ops", "a", false), dbg("dev", "b", true)];
        assert!(has_live_debugger(&all, "ops"));
        assert!(!has_live_debugger(&all, "dev"), "only one being deleted");
        assert!(!has_live_debugger(&all, "other"));
    }

    #[test]
    fn a_namespace_is_forgotten_once_its_rbac_is_removed() {
        let n = Namespaces::default();
        n.set_in_place("ops", true);
        n.set_in_place("dev", true);
        assert!(n.in_place("ops"));
        n.forget("ops");
        assert!(!n.in_place("ops"));
        assert_eq!(n.len(), 1);
    }
}
