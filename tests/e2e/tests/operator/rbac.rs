//! The accounts and permissions: each Debugger's own workload RBAC, and the
//! operator's least-privilege ServiceAccount.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use combo_api::keys;
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::{apply_yaml, install_operator, kubectl, kubectl_ok, wait_for};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Client;

use crate::helpers::{
    get, running_operator_pods, setup, template_annotations, wait_all_pods_ready, OPERATOR_NS, WAIT,
};

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

/// Waits until none of ServiceAccount, Role and RoleBinding `name` exists.
async fn wait_rbac_gone(c: &Client, ns: &str, name: &str, what: &str) -> Result<()> {
    wait_for(WAIT, what, || async {
        Ok(rbac_set(c, ns, name).await? == [false; 3])
    })
    .await
}

#[tokio::test]
async fn each_debugger_has_its_own_workload_rbac_and_the_shared_one_goes_once_unused() -> Result<()>
{
    let (ns, c) = setup("rbac-own").await;
    apply_yaml(&ns.name, LEGACY_RBAC)?;
    apply_yaml(&ns.name, &DebuggerBuilder::new("moved").cpu("100m").yaml())?;
    wait_all_pods_ready(&c, &ns.name, "moved", "moved is ready").await?;
    assert_eq!(
        rbac_set(&c, &ns.name, "kube-combo-workload.moved").await?,
        [true; 3]
    );
    // Its pods run as its own account, so the shared set is unused now.
    let shared = "the shared set of earlier versions is deleted";
    wait_rbac_gone(&c, &ns.name, "kube-combo-workload", shared).await?;
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
    let with_it = "the Debugger's own set is deleted with it";
    wait_rbac_gone(&c, &ns.name, own, with_it).await
}

#[tokio::test]
async fn the_operator_runs_as_its_own_least_privilege_service_account() -> Result<()> {
    install_operator();
    // Another test may be restarting the operator: read the running pod's
    // name and ServiceAccount in one request, once there is exactly one.
    let running = || {
        running_operator_pods(
            "{range .items[*]}{.metadata.name} {.spec.serviceAccountName}{\"\\n\"}{end}",
        )
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
    // Delete: a summary written under a former summaryConfigMap
    // (docs/security.md); it never reads Secrets nor deletes namespaces.
    assert_eq!(can("delete", "configmaps"), "yes");
    assert_eq!(can("delete", "namespaces"), "no");
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
