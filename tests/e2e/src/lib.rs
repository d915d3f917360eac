//! Shared harness of the end-to-end tests.
//!
//! One control plane serves the whole test run: `tests/run-all.sh` starts it
//! with `tests/e2e/cluster.sh up DIR` and exports `COMBO_E2E_DIR=DIR`. Every
//! test makes a namespace of its own with [`namespace`], so tests can run in
//! parallel without seeing each other's objects.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use combo_api::{keys, Debugger, NodeSummary};
use combo_testkit::netplan;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

pub mod fixtures;
pub mod nft;
pub mod outage;
pub mod pod_sd;
pub mod prometheus;
pub mod runs;
pub mod victoria;

/// The suite report's recorder (docs/testing.md, "Suite report"), shared
/// with the runner's and the pinger's integration tests.
pub use combo_testkit::suite::{record, suite_report_path};

pub use nft::NftTable;

/// Root of the repository.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root exists")
}

/// State directory of the running control plane (`COMBO_E2E_DIR`).
pub fn cluster_dir() -> PathBuf {
    let dir = std::env::var_os("COMBO_E2E_DIR").expect(
        "end-to-end tests need a control plane: run `tests/e2e/cluster.sh up DIR` and set COMBO_E2E_DIR=DIR (tests/run-all.sh does both)",
    );
    PathBuf::from(dir)
}

/// Path of one of the project's binaries, from the build the cluster's
/// pods run (`DIR/bin-dir`, written by `cluster.sh up`).
pub fn project_binary(name: &str) -> PathBuf {
    let record = cluster_dir().join("bin-dir");
    let dir = std::fs::read_to_string(&record).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (start the cluster with tests/e2e/cluster.sh up)",
            record.display()
        )
    });
    PathBuf::from(dir.trim_end()).join(name)
}

/// Path of the admin kubeconfig. Refuses when the cluster's bridge is gone:
/// without it the API server address is not on this machine, and requests to
/// it would leave the machine by the default route.
pub fn kubeconfig() -> PathBuf {
    assert!(
        Path::new("/sys/class/net").join(netplan::BRIDGE).exists(),
        "the test cluster's network (bridge {}) is not up: run tests/e2e/cluster.sh up",
        netplan::BRIDGE
    );
    cluster_dir().join("kubeconfig")
}

/// An admin client for the test cluster. Make one per test: a client belongs
/// to the tokio runtime it was made in.
pub async fn client() -> Client {
    let kc = Kubeconfig::read_from(kubeconfig()).expect("kubeconfig readable");
    let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig valid");
    Client::try_from(cfg).expect("client")
}

/// Runs `kubectl` against the test cluster.
pub fn kubectl(args: &[&str]) -> Output {
    Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig())
        .args(args)
        .output()
        .expect("kubectl runs")
}

/// Runs `kubectl` and returns its stdout, failing with its stderr.
pub fn kubectl_ok(args: &[&str]) -> Result<String> {
    let out = kubectl(args);
    if !out.status.success() {
        bail!(
            "kubectl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A namespace made for one test; deleted when dropped (best effort, in
/// the background, so a failing test still leaves the cluster usable).
pub struct TestNamespace {
    /// The namespace's name.
    pub name: String,
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        if std::env::var_os("COMBO_E2E_KEEP").is_none() {
            let _ = Command::new("kubectl")
                .env("KUBECONFIG", kubeconfig())
                .args(["delete", "namespace", &self.name, "--wait=false"])
                .output();
        }
    }
}

/// Makes a fresh namespace `<prefix>-<random>`.
pub async fn namespace(prefix: &str) -> TestNamespace {
    let suffix = format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
            & 0xffffff
    );
    let name = format!("{prefix}-{suffix}");
    let api: Api<Namespace> = Api::all(client().await);
    let ns: Namespace = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name}
    }))
    .unwrap();
    api.create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
    TestNamespace { name }
}

/// Deletes a namespace and waits until it is gone.
pub async fn delete_namespace(name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client().await);
    let _ = api.delete(name, &DeleteParams::default()).await;
    wait_for(Duration::from_secs(60), "namespace deleted", || async {
        Ok(api.get_opt(name).await?.is_none())
    })
    .await
}

/// Polls `check` every 250 ms until it returns true or `timeout` passes.
pub async fn wait_for<F, Fut>(timeout: Duration, what: &str, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let start = Instant::now();
    let mut last_err = None;
    loop {
        match check().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last_err = Some(e),
        }
        if start.elapsed() > timeout {
            let tail = last_err
                .map(|e| format!(" (last error: {e:#})"))
                .unwrap_or_default();
            bail!("timed out after {timeout:?} waiting for {what}{tail}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Whether `pod` is Running with condition Ready=True.
pub fn running_and_ready(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Running")
            && s.conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

/// Names of the simulated nodes, `node-1` .. `node-N`.
pub fn nodes() -> Vec<String> {
    let n: usize = std::fs::read_to_string(cluster_dir().join("nodes"))
        .context("cluster nodes file")
        .and_then(|s| Ok(s.trim().parse()?))
        .expect("cluster.sh writes DIR/nodes");
    (1..=n).map(|i| format!("node-{i}")).collect()
}

/// The network namespace of a simulated node (`ip netns exec <it> ...`); a
/// rule put there applies to all traffic of the node's pods.
pub fn node_netns(node: &str) -> String {
    netplan::node_netns(node)
}

/// The network namespace of a pod, by its UID.
pub fn pod_netns(pod_uid: &str) -> String {
    netplan::pod_netns(pod_uid)
}

/// `/metrics` of a pod served on `port`. A pod of a simulated node is
/// asked from inside its network namespace, on 127.0.0.1; a pod of a real
/// node from inside the node's network namespace, on the pod's IP (its CNI
/// bridge is there).
pub fn scrape(pod: &Pod, port: u16) -> Result<String> {
    let (netns, host) = match pod_real_node(pod) {
        Some(node) => {
            let ip = pod.status.as_ref().and_then(|s| s.pod_ip.clone());
            (real_node_netns(node), ip.context("pod IP")?)
        }
        None => {
            let uid = pod.metadata.uid.as_deref().context("pod uid")?;
            (pod_netns(uid), "127.0.0.1".to_string())
        }
    };
    let out = Command::new("ip")
        .args(["netns", "exec", &netns, "curl", "-sf", "--max-time", "5"])
        .arg(format!("http://{host}:{port}/metrics"))
        .output()?;
    if !out.status.success() {
        bail!("scrape failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What a container of a pod printed (stdout and stderr): on real nodes
/// `kubectl logs`, else as the node simulator keeps it:
/// `DIR/pods/<ns>/<pod>/<container>.log`. Empty when it cannot be read yet.
pub fn pod_log(namespace: &str, pod: &str, container: &str) -> String {
    if !real_nodes().is_empty() {
        return kubectl_ok(&["logs", "-n", namespace, pod, "-c", container]).unwrap_or_default();
    }
    std::fs::read_to_string(
        cluster_dir()
            .join("pods")
            .join(namespace)
            .join(pod)
            .join(format!("{container}.log")),
    )
    .unwrap_or_default()
}

/// Root of a container's private files in the simulator: the copy of the
/// image's `/scripts` lives at `<it>/scripts`.
pub fn container_root(namespace: &str, pod: &str, container: &str) -> PathBuf {
    cluster_dir()
        .join("pods")
        .join(namespace)
        .join(pod)
        .join(container)
}

/// Namespace of the operator installed by `config/default`.
pub const OPERATOR_NAMESPACE: &str = "kube-combo-system";

/// Scales the operator's Deployment to `replicas` (`kubectl scale`).
pub fn scale_operator(replicas: u32) -> Result<()> {
    let replicas = replicas.to_string();
    kubectl_ok(&[
        "scale",
        "deployment/combo-operator",
        "-n",
        OPERATOR_NAMESPACE,
        "--replicas",
        &replicas,
    ])
    .map(drop)
}

/// Installs the operator with `kubectl apply -k config/default` (so it runs
/// with the RBAC of `config/rbac`) and waits for its Deployment; once per
/// test binary, harmless when another binary already did it.
pub fn install_operator() {
    install_operator_from(&repo_root().join("config/default"));
}

/// Installs the operator with `kubectl apply -k <kustomization>` (config/default
/// or an overlay of it) and waits for its Deployment; once per test binary,
/// whichever kustomization comes first.
pub fn install_operator_from(kustomization: &Path) {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let dir = kustomization.to_str().expect("a UTF-8 path");
        kubectl_ok(&["apply", "-k", dir]).unwrap_or_else(|e| panic!("kubectl apply -k {dir}: {e}"));
        operator_rolled_out(180).expect("operator Deployment becomes available");
    });
}

/// Applies YAML text into namespace `ns` with `kubectl apply -f`.
pub fn apply_yaml(ns: &str, yaml: &str) -> Result<()> {
    let path = std::env::temp_dir().join(format!(
        "kc-apply-{ns}-{:x}.yaml",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos()
    ));
    std::fs::write(&path, yaml)?;
    let applied = kubectl_ok(&["apply", "-n", ns, "-f", path.to_str().context("path")?]);
    let _ = std::fs::remove_file(&path);
    applied.map(drop)
}

/// Names of the real nodes (kubelet and containerd), `real-1` .. `real-N`
/// (`cluster.sh up --real N`); empty when the cluster has none.
pub fn real_nodes() -> Vec<String> {
    let n: usize = std::fs::read_to_string(cluster_dir().join("real-nodes"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    (1..=n).map(|i| format!("real-{i}")).collect()
}

/// The network namespace of a real node; rules put there apply to the
/// node's pods (their CNI bridge is inside it).
pub fn real_node_netns(node: &str) -> String {
    netplan::node_netns(node)
}

/// Whether the cluster is made of real nodes only, as the real-node tests
/// need (every pod of the samples lands on a real node). Prints why not.
pub fn real_cluster_or_skip(test: &str) -> bool {
    let real = real_nodes().len();
    let simulated = nodes().len();
    if real == 0 || simulated > 0 {
        eprintln!(
            "skipping {test}: it needs a cluster of real nodes only \
             (tests/e2e/cluster.sh up DIR --nodes 0 --real 2); this one has {simulated} simulated and {real} real nodes"
        );
        return false;
    }
    true
}

/// node -> pod of Debugger `name`, once one Running and Ready pod runs on
/// every real node (within `timeout`).
pub async fn pods_on_every_real_node(
    c: &Client,
    timeout: Duration,
    ns: &str,
    name: &str,
) -> Result<BTreeMap<String, Pod>> {
    let api: Api<Pod> = Api::namespaced(c.clone(), ns);
    let lp = ListParams::default().labels(&keys::debugger_selector(name));
    let want = real_nodes();
    wait_for(timeout, "a Ready pod on every real node", || async {
        let pods = api.list(&lp).await?;
        Ok(want.iter().all(|n| {
            pods.items.iter().any(|p| {
                p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(n.as_str())
                    && running_and_ready(p)
            })
        }))
    })
    .await?;
    let mut out = BTreeMap::new();
    for p in api.list(&lp).await?.items {
        if running_and_ready(&p) {
            let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
            out.insert(node.context("scheduled pod")?, p);
        }
    }
    Ok(out)
}

/// The nodes a DaemonSet Debugger of the tests covers: the simulated ones,
/// or the real ones on a cluster of real nodes only (real nodes carry a
/// taint when simulated ones are there too; docs/testing.md, "Real nodes").
pub fn workload_nodes() -> Vec<String> {
    let simulated = nodes();
    if simulated.is_empty() {
        real_nodes()
    } else {
        simulated
    }
}

/// The real node a pod is scheduled on, if it is one.
fn pod_real_node(pod: &Pod) -> Option<&str> {
    let node = pod.spec.as_ref()?.node_name.as_deref()?;
    real_nodes().iter().any(|n| n == node).then_some(node)
}

/// The registry the real nodes pull kube-combo's images from
/// (`cluster.sh up --real N` pushes them there).
pub const LOCAL_REGISTRY: &str = netplan::REGISTRY;

/// Installs the operator as the cluster needs it: on simulated nodes the
/// checkout's build ([`install_operator`]), on real nodes the project's
/// images from the cluster's registry ([`install_from_registry`]).
pub fn install_for_cluster() {
    if real_nodes().is_empty() {
        install_operator();
    } else {
        install_from_registry();
    }
}

/// Writes an overlay of `config/default` that points the three images at
/// the cluster's registry (`images:`), as a user does for a private
/// registry, into `DIR/overlay`, and returns its directory.
pub fn registry_overlay() -> Result<PathBuf> {
    let dir = cluster_dir().canonicalize()?.join("overlay");
    std::fs::create_dir_all(&dir)?;
    // kustomize takes a base by a relative path only: up to `/`, then down.
    let up = "../".repeat(dir.components().count().saturating_sub(1));
    let base = repo_root().join("config/default");
    let base = base.strip_prefix("/").unwrap_or(&base);
    let mut text = format!("resources:\n  - {up}{}\nimages:\n", base.display());
    for image in ["operator", "runner", "pinger"] {
        text.push_str(&format!(
            "  - name: kube-combo/{image}\n    newName: {LOCAL_REGISTRY}/kube-combo/{image}\n    newTag: dev\n"
        ));
    }
    std::fs::write(dir.join("kustomization.yaml"), text)?;
    Ok(dir)
}

/// Installs the operator once per test binary from the registry overlay
/// ([`registry_overlay`]), as a user of a private registry does.
pub fn install_from_registry() {
    install_operator_from(&registry_overlay().expect("overlay written"));
}

/// Runs `kubectl` with the project's plugin (`kubectl combo`) on its PATH.
pub fn kubectl_combo(args: &[&str]) -> Output {
    let plugin_dir = project_binary("kubectl-combo")
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let path = std::env::var("PATH").unwrap_or_default();
    Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig())
        .env("PATH", format!("{}:{path}", plugin_dir.display()))
        .arg("combo")
        .args(args)
        .output()
        .expect("kubectl runs")
}

/// Pid of the operator process of a cluster of simulated nodes (its pod
/// runs `combo-operator` from the project's build as a host process).
pub fn operator_pid() -> Option<i32> {
    project_process(keys::BIN_OPERATOR, &[])
}

/// Pid of a process of a cluster of simulated nodes that runs the project's
/// binary `binary` and whose environment holds every `NAME=value` entry of
/// `env` (a pod's `POD_NAME`, say), from /proc; a binary rebuilt since the
/// process started still counts.
pub fn project_process(binary: &str, env: &[&str]) -> Option<i32> {
    let exe = project_binary(binary);
    find_process(|path| path == exe, env)
}

/// Pid of the process of pod `pod` that runs the project's binary `binary`,
/// wherever the pod runs: a simulated node runs the cluster's build as a
/// host process ([`project_process`]), a real node runs the image's binary
/// in a container, which is a process of this machine too. Either way the
/// environment names the pod (`POD_NAME`, `POD_NAMESPACE`).
pub fn pod_process(binary: &str, pod: &Pod) -> Option<i32> {
    let name = pod.metadata.name.as_deref()?;
    let namespace = pod.metadata.namespace.as_deref()?;
    let env = [
        format!("{}={name}", keys::env::POD_NAME),
        format!("{}={namespace}", keys::env::POD_NAMESPACE),
    ];
    let env: Vec<&str> = env.iter().map(String::as_str).collect();
    if pod_real_node(pod).is_some() {
        // The container's root is not this machine's: its exe is known by
        // the file's name only.
        find_process(|path| path.file_name() == Some(binary.as_ref()), &env)
    } else {
        project_process(binary, &env)
    }
}

/// The first process in /proc whose executable `exe` accepts and whose
/// environment holds every entry of `env`.
fn find_process(exe: impl Fn(&Path) -> bool, env: &[&str]) -> Option<i32> {
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .find(|pid| {
            std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| {
                let p = p.to_string_lossy();
                exe(Path::new(p.trim_end_matches(" (deleted)")))
            }) && (env.is_empty()
                || std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|vars| {
                    let vars: Vec<&[u8]> = vars.split(|b| *b == 0).collect();
                    env.iter().all(|want| vars.contains(&want.as_bytes()))
                }))
        })
}

/// Labels of the operator's pods.
pub const OPERATOR_LABELS: &str =
    "app.kubernetes.io/name=kube-combo,app.kubernetes.io/component=operator";

/// Waits at most `seconds` until the operator Deployment's rollout is
/// complete (`kubectl rollout status`).
pub fn operator_rolled_out(seconds: u32) -> Result<String> {
    kubectl_ok(&[
        "-n",
        OPERATOR_NAMESPACE,
        "rollout",
        "status",
        "deployment/combo-operator",
        &format!("--timeout={seconds}s"),
    ])
}

/// The operator's pods that are not being deleted.
pub async fn operator_pods(c: &Client) -> Result<Vec<Pod>> {
    Ok(Api::<Pod>::namespaced(c.clone(), OPERATOR_NAMESPACE)
        .list(&ListParams::default().labels(OPERATOR_LABELS))
        .await?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}

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

/// Waits at most `within` until the key of every node a Debugger covers
/// ([`workload_nodes`]) in summary ConfigMap `cm` records `run_at`.
pub async fn wait_run_within(
    c: &Client,
    ns: &str,
    cm: &str,
    run_at: &str,
    within: Duration,
) -> Result<BTreeMap<String, NodeSummary>> {
    let want = workload_nodes();
    wait_for(
        within,
        &format!("every node's summary for {run_at}"),
        || async {
            let s = summaries(c, ns, cm).await?;
            Ok(want
                .iter()
                .all(|n| s.get(n).is_some_and(|v| v.run_at == run_at)))
        },
    )
    .await?;
    summaries(c, ns, cm).await
}
