//! The workload pods' ServiceAccount `kube-combo-workload`, its Role and
//! RoleBinding, one set per namespace that has Debuggers.
//!
//! The operator creates them so that a Debugger works in any namespace
//! without extra manifests. Every Debugger of the namespace is an owner
//! (not the controller) of the three objects, so the garbage collector
//! removes them with the last Debugger. The Role grants only what docs/security.md
//! ("The workload pods") lists: read Debuggers and Pingers, watch pods, get and apply the summary
//! ConfigMaps of the namespace's Debuggers (by name), create Events.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use combo_api::keys::{self, GROUP};
use combo_api::Debugger;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Api, Resource, ResourceExt};
use tracing::warn;

use crate::apply;
use crate::context::Context;
use crate::render::{spec_hash, spec_hash_of, WORKLOAD_SERVICE_ACCOUNT};

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
    /// The Debuggers it serves.
    pub covered: Covered,
}

/// Shortest time between two writes of one namespace's workload RBAC.
pub const BATCH_WINDOW: Duration = Duration::from_millis(250);

/// The workload RBAC last written in a namespace.
#[derive(Clone, Debug)]
pub struct Applied {
    /// The Debuggers it serves.
    pub covered: Covered,
    /// When it was written.
    pub at: Instant,
}

/// What one applied workload RBAC serves: Debugger uid -> summary ConfigMap
/// name its Role lets the pods write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Covered(BTreeMap<String, String>);

impl Covered {
    /// What an RBAC rendered for `debuggers` serves. Pure.
    pub fn of(debuggers: &[&Debugger]) -> Covered {
        Covered(
            debuggers
                .iter()
                .map(|d| {
                    (
                        d.meta().uid.clone().unwrap_or_default(),
                        d.spec.summary_name(&d.name_any()),
                    )
                })
                .collect(),
        )
    }

    /// Whether the RBAC serves `dbg` as its spec is now, and serves no
    /// Debugger missing from `live` (deleted ones are dropped by a rewrite).
    /// Pure.
    pub fn serves(&self, dbg: &Debugger, live: &[&Debugger]) -> bool {
        let uid = dbg.meta().uid.clone().unwrap_or_default();
        let wanted = dbg.spec.summary_name(&dbg.name_any());
        if self.0.get(&uid) != Some(&wanted) {
            return false;
        }
        let live: BTreeSet<&str> = live
            .iter()
            .filter_map(|d| d.meta().uid.as_deref())
            .collect();
        self.0.keys().all(|u| live.contains(u.as_str()))
    }
}

/// Renders the workload RBAC of `namespace` for `debuggers` (those of that
/// namespace). Pure.
pub fn render(namespace: &str, debuggers: &[&Debugger]) -> WorkloadRbac {
    let mut sorted: Vec<&Debugger> = debuggers.to_vec();
    sorted.sort_by_key(|d| d.name_any());
    let owners: Vec<OwnerReference> = sorted
        .iter()
        .filter_map(|d| {
            Some(OwnerReference {
                api_version: Debugger::api_version(&()).into_owned(),
                kind: Debugger::kind(&()).into_owned(),
                name: d.name_any(),
                uid: d.meta().uid.clone()?,
                ..OwnerReference::default()
            })
        })
        .collect();
    let summaries: BTreeSet<String> = sorted
        .iter()
        .map(|d| d.spec.summary_name(&d.name_any()))
        .collect();
    let meta = ObjectMeta {
        name: Some(WORKLOAD_SERVICE_ACCOUNT.into()),
        namespace: Some(namespace.into()),
        labels: Some(
            [(
                keys::LABEL_NAME.to_string(),
                keys::LABEL_NAME_VALUE.to_string(),
            )]
            .into(),
        ),
        owner_references: Some(owners),
        ..ObjectMeta::default()
    };
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| PolicyRule {
        api_groups: Some(groups.iter().map(|s| s.to_string()).collect()),
        resources: Some(resources.iter().map(|s| s.to_string()).collect()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..PolicyRule::default()
    };
    let mut summary_rule = rule(&[""], &["configmaps"], &["get", "patch"]);
    summary_rule.resource_names = Some(summaries.into_iter().collect());
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
            summary_rule,
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
    let covered = Covered::of(&sorted);
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
        covered,
    }
}

/// The workload RBAC of every namespace: what was last applied, and
/// whether a write is under way.
#[derive(Default)]
pub struct Namespaces(std::sync::Mutex<BTreeMap<String, Namespace>>);

#[derive(Default)]
struct Namespace {
    /// The last write of this process; none before the first.
    applied: Option<Applied>,
    /// A background write is scheduled or running.
    writing: bool,
    /// Serialises the writes of the namespace.
    lock: Arc<tokio::sync::Mutex<()>>,
}

/// What a reconcile does about the workload RBAC of its namespace.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// The last write serves the Debugger.
    Served,
    /// Nothing was written yet: write now and wait, since the workload's
    /// pods need the ServiceAccount.
    WriteFirst,
    /// The ServiceAccount exists; the namespace's writer is told to cover
    /// the Debugger and the workload goes ahead meanwhile.
    Background,
}

/// Decides the [`Plan`]; marks the namespace as writing when it returns
/// `Background` and no write was under way (the caller then starts one).
/// Returns whether the caller has to start the writer.
fn plan(ns: &mut Namespace, dbg: &Debugger, live: &[&Debugger]) -> (Plan, bool) {
    match &ns.applied {
        None => (Plan::WriteFirst, false),
        Some(a) if a.covered.serves(dbg, live) => (Plan::Served, false),
        Some(_) => (Plan::Background, !std::mem::replace(&mut ns.writing, true)),
    }
}

/// Makes sure the workload RBAC of `dbg`'s namespace covers `dbg`.
///
/// The first reconcile of a namespace in this process writes (or, when
/// what exists already matches, only reads) the three objects and waits:
/// the ServiceAccount has to exist before any pod that uses it. After
/// that, a Debugger the RBAC does not cover yet starts the namespace's
/// background writer and returns at once. The writer waits until
/// [`BATCH_WINDOW`] has passed since the last write, so that one write
/// covers every Debugger that arrived meanwhile, and retries failures with
/// backoff until the RBAC covers every Debugger of the namespace. Until
/// then the new workload's pods cannot yet apply their summary; the runner
/// retries that write, so no result is lost.
pub async fn ensure(ctx: &Arc<Context>, dbg: &Debugger) -> Result<(), apply::Error> {
    let ns_name = dbg.namespace().unwrap_or_default();
    let all = ctx.debuggers.state();
    let (plan, start) = {
        let mut map = ctx.rbac.0.lock().expect("rbac lock");
        plan(
            map.entry(ns_name.clone()).or_default(),
            dbg,
            &of_namespace(&all, &ns_name, dbg),
        )
    };
    match plan {
        Plan::Served => Ok(()),
        Plan::Background => {
            if start {
                tokio::spawn(background(ctx.clone(), ns_name));
            }
            Ok(())
        }
        Plan::WriteFirst => {
            let lock = ctx.rbac.lock_of(&ns_name);
            let _serialised = lock.lock().await;
            // Another reconcile may have written while this one waited.
            if ctx.rbac.applied(&ns_name).is_some() {
                return Box::pin(ensure(ctx, dbg)).await;
            }
            write(ctx, &ns_name, Some(dbg), true).await
        }
    }
}

/// The background writer of `ns`: writes until the RBAC covers every
/// Debugger of the namespace, then ends.
async fn background(ctx: Arc<Context>, ns: String) {
    let mut failures = 0u32;
    loop {
        if let Some(a) = ctx.rbac.applied(&ns) {
            tokio::time::sleep(BATCH_WINDOW.saturating_sub(a.at.elapsed())).await;
        }
        let lock = ctx.rbac.lock_of(&ns);
        let _serialised = lock.lock().await;
        {
            // Under the same lock as `plan`: a Debugger whose reconcile saw
            // `writing` is in the store by now, so it is covered below or
            // was already.
            let mut map = ctx.rbac.0.lock().expect("rbac lock");
            let entry = map.entry(ns.clone()).or_default();
            let all = ctx.debuggers.state();
            let live = of_namespace_live(&all, &ns);
            // With no Debugger left, the garbage collector removes the
            // three objects; a write would only take their owners away.
            let served = live.is_empty()
                || entry
                    .applied
                    .as_ref()
                    .is_some_and(|a| a.covered == Covered::of(&live));
            if served {
                entry.writing = false;
                return;
            }
        }
        match write(&ctx, &ns, None, false).await {
            Ok(()) => failures = 0,
            Err(e) => {
                failures = failures.saturating_add(1);
                ctx.metrics.error("rbac");
                warn!(namespace = %ns, error = %e, source = ?std::error::Error::source(&e), "workload RBAC write failed");
                drop(_serialised);
                tokio::time::sleep(crate::controller::backoff(failures)).await;
            }
        }
    }
}

/// Renders the RBAC of `ns` for its live Debuggers (and `dbg`, which the
/// store may not show yet), writes it unless it is already in place, and
/// records it. Reads the Role first only when `read_first` (nothing was
/// written by this process yet). The caller holds the namespace's lock.
async fn write(
    ctx: &Context,
    ns: &str,
    dbg: Option<&Debugger>,
    read_first: bool,
) -> Result<(), apply::Error> {
    let all = ctx.debuggers.state();
    let desired = match dbg {
        Some(d) => render(ns, &of_namespace(&all, ns, d)),
        None => render(ns, &of_namespace_live(&all, ns)),
    };
    let current = if read_first {
        Api::<Role>::namespaced(ctx.client.clone(), ns)
            .get_opt(WORKLOAD_SERVICE_ACCOUNT)
            .await
            .map_err(|source| apply::Error::Write {
                kind: "Role",
                name: WORKLOAD_SERVICE_ACCOUNT.into(),
                source,
            })?
            .and_then(|r| spec_hash_of(&r.metadata).map(str::to_string))
    } else {
        None
    };
    if current.as_deref() != Some(desired.hash.as_str()) {
        let (c, m) = (&ctx.client, &ctx.metrics);
        // In this order: binding a Role needs the Role to exist.
        apply::apply(c, m, ns, &desired.service_account, "ServiceAccount").await?;
        apply::apply(c, m, ns, &desired.role, "Role").await?;
        apply::apply(c, m, ns, &desired.binding, "RoleBinding").await?;
    }
    ctx.rbac
        .0
        .lock()
        .expect("rbac lock")
        .entry(ns.to_string())
        .or_default()
        .applied = Some(Applied {
        covered: desired.covered,
        at: Instant::now(),
    });
    Ok(())
}

impl Namespaces {
    fn lock_of(&self, ns: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.0
            .lock()
            .expect("rbac lock")
            .entry(ns.to_string())
            .or_default()
            .lock
            .clone()
    }

    fn applied(&self, ns: &str) -> Option<Applied> {
        self.0
            .lock()
            .expect("rbac lock")
            .get(ns)
            .and_then(|n| n.applied.clone())
    }
}

/// The live Debuggers of `ns` in `all`. Pure.
fn of_namespace_live<'a>(all: &'a [Arc<Debugger>], ns: &str) -> Vec<&'a Debugger> {
    all.iter()
        .map(|d| d.as_ref())
        .filter(|d| d.namespace().as_deref() == Some(ns) && d.meta().deletion_timestamp.is_none())
        .collect()
}

/// The live Debuggers of `ns` in `all`, with `dbg` (which the store may not
/// show yet). Pure.
fn of_namespace<'a>(all: &'a [Arc<Debugger>], ns: &str, dbg: &'a Debugger) -> Vec<&'a Debugger> {
    let mut mine = of_namespace_live(all, ns);
    if !mine.iter().any(|d| d.meta().uid == dbg.meta().uid) {
        mine.push(dbg);
    }
    mine
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_api::DebuggerSpec;

    fn dbg(name: &str, uid: &str, summary: &str) -> Debugger {
        let mut d = Debugger::new(
            name,
            DebuggerSpec {
                summary_config_map: summary.into(),
                ..DebuggerSpec::default()
            },
        );
        d.metadata.namespace = Some("ops".into());
        d.metadata.uid = Some(uid.into());
        d
    }

    #[test]
    fn every_debugger_of_the_namespace_owns_the_workload_rbac() {
        let (a, b) = (dbg("b-check", "u2", ""), dbg("a-check", "u1", "results"));
        let r = render("ops", &[&a, &b]);
        let owners = r.role.metadata.owner_references.clone().unwrap();
        let names: Vec<_> = owners.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["a-check", "b-check"]);
        assert!(owners.iter().all(|o| o.controller.is_none()));
        assert_eq!(
            r,
            render("ops", &[&b, &a]),
            "order of the store does not matter"
        );
        let summary_rule = &r.role.rules.as_ref().unwrap()[2];
        assert_eq!(
            summary_rule.resource_names,
            Some(vec!["b-check-summary".to_string(), "results".to_string()])
        );
        assert_eq!(summary_rule.verbs, ["get", "patch"]);
    }

    #[test]
    fn role_grants_only_reads_pod_watches_summary_writes_and_events() {
        let r = render("ops", &[&dbg("x", "u", "")]);
        let verbs: Vec<(Vec<String>, Vec<String>)> = r
            .role
            .rules
            .unwrap()
            .into_iter()
            .map(|p| (p.resources.unwrap(), p.verbs))
            .collect();
        for (resources, verbs) in &verbs {
            let writes = verbs
                .iter()
                .any(|v| !["get", "list", "watch"].contains(&v.as_str()));
            if writes {
                assert!(
                    resources == &["configmaps"] || resources == &["events"],
                    "{resources:?} {verbs:?}"
                );
            }
            assert!(!verbs.iter().any(|v| v == "delete" || v == "*"));
        }
        assert_eq!(
            r.binding.subjects.unwrap()[0].name,
            WORKLOAD_SERVICE_ACCOUNT
        );
        assert_eq!(r.binding.role_ref.name, WORKLOAD_SERVICE_ACCOUNT);
    }

    #[test]
    fn an_applied_rbac_serves_its_debuggers_until_one_changes_or_goes() {
        let a = dbg("a", "u1", "");
        let b = dbg("b", "u2", "");
        let c = dbg("c", "u3", "");
        let covered = render("ops", &[&a, &b]).covered;
        assert!(covered.serves(&a, &[&a, &b]));
        assert!(covered.serves(&b, &[&a, &b, &c]), "newcomers do not matter");
        assert!(!covered.serves(&c, &[&a, &b, &c]), "not listed");
        assert!(!covered.serves(&a, &[&a]), "b is gone: rewrite without it");
        let renamed = dbg("a", "u1", "results");
        assert!(
            !covered.serves(&renamed, &[&renamed, &b]),
            "new summary name"
        );
    }

    #[test]
    fn only_the_first_debugger_of_a_namespace_waits_for_the_rbac() {
        let (a, b) = (dbg("a", "u1", ""), dbg("b", "u2", ""));
        let mut ns = Namespace::default();
        assert_eq!(plan(&mut ns, &a, &[&a]), (Plan::WriteFirst, false));
        ns.applied = Some(Applied {
            covered: render("ops", &[&a]).covered,
            at: Instant::now(),
        });
        assert_eq!(plan(&mut ns, &a, &[&a, &b]), (Plan::Served, false));
        assert_eq!(
            plan(&mut ns, &b, &[&a, &b]),
            (Plan::Background, true),
            "starts the writer"
        );
        assert_eq!(
            plan(&mut ns, &b, &[&a, &b]),
            (Plan::Background, false),
            "one writer per namespace"
        );
    }

    #[test]
    fn the_hash_changes_when_the_set_of_debuggers_changes() {
        let a = dbg("a", "u1", "");
        let b = dbg("b", "u2", "");
        assert_ne!(render("ops", &[&a]).hash, render("ops", &[&a, &b]).hash);
        assert_eq!(
            spec_hash_of(&render("ops", &[&a]).binding.metadata),
            Some(render("ops", &[&a]).hash.as_str())
        );
    }
}
