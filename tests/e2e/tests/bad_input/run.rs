//! One bad-input test's run (docs/testing.md, "Bad input"): its seed and
//! number of cases, its namespace, and what no spec may do: restart the
//! operator, reach a shell, or write a sentinel Debugger's DaemonSet in
//! another namespace.

use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::{
    apply_yaml, client, install_operator, namespace, operator_pid, record, wait_for, TestNamespace,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::DeleteParams;
use kube::{Api, Client, ResourceExt};
use serde_json::{json, Value};

use crate::harness::{cases, seed};

/// The sentinel DaemonSet as far as a writer other than the DaemonSet
/// controller sees it: its UID, generation (bumped by every spec change),
/// labels, annotations and the managedFields entries of every manager but
/// kube-controller-manager, whose status updates (observedGeneration, pod
/// counts) come when they come and change the resourceVersion.
type Sentinel = (String, Option<i64>, Value);

pub struct Run {
    pub seed: u64,
    /// How many cases.
    pub n: usize,
    /// The namespace of the cases.
    pub ns: TestNamespace,
    pub c: Client,
    /// The sentinel's namespace.
    guard: TestNamespace,
    sentinel_before: Sentinel,
    /// The operator's process at the start.
    pid: i32,
    /// The file a generated string makes if it ever reaches a shell.
    pwned: &'static str,
}

impl Run {
    /// Installs the operator, makes namespace `<prefix>-...` for the cases
    /// of `kind` and the sentinel in `<prefix>-sentinel-...`.
    pub async fn start(kind: &str, prefix: &str, pwned: &'static str) -> Result<Run> {
        install_operator();
        let (seed, n) = (seed(), cases());
        eprintln!(
            "bad input: {n} {kind} cases, seed {seed} (COMBO_BAD_INPUT_SEED={seed} repeats them)"
        );
        let ns = namespace(prefix).await;
        let guard = namespace(&format!("{prefix}-sentinel")).await;
        let c = client().await;
        let sentinel_before = start_sentinel(&c, &guard.name).await?;
        let pid = operator_pid().context("the operator process")?;
        let _ = std::fs::remove_file(pwned);
        Ok(Run {
            seed,
            n,
            ns,
            c,
            guard,
            sentinel_before,
            pid,
            pwned,
        })
    }

    /// What went wrong beyond any one case: the operator process
    /// restarted, a spec string reached a shell, the sentinel's DaemonSet
    /// was written.
    pub async fn broken(&self) -> Result<Vec<String>> {
        let mut broken = Vec::new();
        if operator_pid() != Some(self.pid) {
            broken.push("the operator process restarted".to_string());
        }
        // The `$(touch ...)` strings reached no shell: the pods of
        // simulated nodes run on this machine.
        if std::path::Path::new(self.pwned).exists() {
            broken.push(format!(
                "{} exists: a spec string reached a shell",
                self.pwned
            ));
        }
        let sentinel_after = sentinel(&self.c, &self.guard.name).await?;
        if sentinel_after != self.sentinel_before {
            broken.push(format!(
                "the sentinel's DaemonSet was written: {:?} became {sentinel_after:?}",
                self.sentinel_before
            ));
        }
        Ok(broken)
    }

    /// Records the suite report's line of the `kind` cases, of which
    /// `failed` went wrong, deletes the cases' namespace and waits until it
    /// is gone, and fails with `problems` if there are any. A thousand
    /// Debuggers and what they own are the garbage collector's work, which
    /// the tests after this one would otherwise wait on.
    pub async fn finish(&self, kind: &str, failed: usize, problems: Vec<String>) {
        let namespaces: Api<Namespace> = Api::all(self.c.clone());
        let _ = namespaces
            .delete(&self.ns.name, &DeleteParams::default())
            .await;
        let gone = wait_for(
            Duration::from_secs(300),
            "the cases' namespace deleted",
            || async { Ok(namespaces.get_opt(&self.ns.name).await?.is_none()) },
        )
        .await;
        if let Err(e) = gone {
            eprintln!("bad input: {e}");
        }
        let seed = self.seed;
        let tried = self.n as u64;
        record(
            "bad input",
            &format!("generated {kind} specs (seed {seed})"),
            tried,
            tried.saturating_sub(failed as u64),
            0,
        );
        assert!(
            problems.is_empty(),
            "seed {seed}: {} problem(s):\n{}",
            problems.len(),
            problems.join("\n")
        );
    }
}

/// Makes Debugger `sentinel` in `ns`, waits for its DaemonSet and returns
/// what tells whether it was written since.
async fn start_sentinel(c: &Client, ns: &str) -> Result<Sentinel> {
    apply_yaml(
        ns,
        &DebuggerBuilder::new("sentinel")
            .selector("kubecombo.io/bad-input", "none")
            .yaml(),
    )?;
    wait_for(
        Duration::from_secs(120),
        "the sentinel's DaemonSet",
        || async {
            Ok(Api::<DaemonSet>::namespaced(c.clone(), ns)
                .get_opt("sentinel")
                .await?
                .is_some())
        },
    )
    .await?;
    sentinel(c, ns).await
}

async fn sentinel(c: &Client, ns: &str) -> Result<Sentinel> {
    let ds = Api::<DaemonSet>::namespaced(c.clone(), ns)
        .get("sentinel")
        .await?;
    let managers: Vec<_> = ds
        .managed_fields()
        .iter()
        .filter(|m| m.manager.as_deref() != Some("kube-controller-manager"))
        .collect();
    Ok((
        ds.uid().unwrap_or_default(),
        ds.metadata.generation,
        json!({"labels": ds.labels(), "annotations": ds.annotations(), "managedFields": managers}),
    ))
}
