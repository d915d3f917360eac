//! Nothing lost, nothing hidden: the operator never takes a ConfigMap it
//! did not make, every Ready condition tells the truth, a hanging script
//! leaves an item, the plugin never reads "no result" as "no failure", and
//! the operator and the runner stop when asked. Run against the cluster of
//! simulated nodes and again against the real nodes (tests/run-all.sh);
//! the runner's stop is timed on real nodes only (docs/testing.md,
//! "Truth tests").

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _, Result};
use combo_api::{keys, Category, Debugger, DebuggerReport, Pinger};
use combo_e2e::fixtures::{ConfigMapBuilder, DebuggerBuilder, PingerBuilder};
use combo_e2e::{
    apply_yaml, client, debugger_events, kubeconfig, kubectl_combo, namespace, project_binary,
    real_cluster_or_skip, wait_for,
};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};

const WAIT: Duration = Duration::from_secs(120);

/// Installs the operator: from the local registry's images on real nodes,
/// as the simulated nodes' build otherwise.
fn install() {
    combo_e2e::install_for_cluster();
}

/// ConfigMap `name` of `data`, each value ending in a newline.
fn config_map(name: &str, data: &[(&str, &str)]) -> String {
    data.iter()
        .fold(ConfigMapBuilder::new(name), |cm, (k, v)| {
            cm.entry(k, &format!("{v}\n"))
        })
        .yaml()
}

/// An idle Debugger of the mem category.
fn mem_debugger(name: &str) -> String {
    DebuggerBuilder::new(name)
        .categories(&[Category::Mem])
        .yaml()
}

/// The Ready condition of Debugger `name`: (status, reason, message).
async fn ready(c: &Client, ns: &str, name: &str) -> Result<Option<(String, String, String)>> {
    let d = Api::<Debugger>::namespaced(c.clone(), ns)
        .get_opt(name)
        .await?;
    Ok(d.and_then(|d| d.status).and_then(|s| {
        s.conditions
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| (c.status, c.reason, c.message))
    }))
}

/// Waits until Debugger `name` is Ready=`status` with `reason`; its message.
async fn wait_ready(
    c: &Client,
    ns: &str,
    name: &str,
    status: &str,
    reason: &str,
) -> Result<String> {
    wait_for(WAIT, &format!("{name} Ready={status} {reason}"), || async {
        Ok(ready(c, ns, name)
            .await?
            .is_some_and(|(s, r, _)| s == status && r == reason))
    })
    .await
    .with_context(|| format!("Debugger {ns}/{name}"))?;
    Ok(ready(c, ns, name)
        .await?
        .map(|(_, _, m)| m)
        .unwrap_or_default())
}

async fn user_data(c: &Client, ns: &str, name: &str) -> Result<ConfigMap> {
    Api::<ConfigMap>::namespaced(c.clone(), ns)
        .get(name)
        .await
        .with_context(|| format!("the user's ConfigMap {name} is gone"))
}

fn assert_untouched(cm: &ConfigMap, key: &str, value: &str) -> Result<()> {
    let data = cm.data.clone().unwrap_or_default();
    ensure!(
        data.len() == 1 && data.get(key).map(|v| v.trim_end()) == Some(value),
        "ConfigMap {} was changed: {data:?}",
        cm.name_any()
    );
    ensure!(
        cm.metadata
            .owner_references
            .as_ref()
            .is_none_or(|o| o.is_empty()),
        "ConfigMap {} was given owners: {:?}",
        cm.name_any(),
        cm.metadata.owner_references
    );
    Ok(())
}

#[tokio::test]
async fn a_users_config_map_named_as_the_summary_is_refused_and_left_untouched() -> Result<()> {
    install();
    let c = client().await;
    let ns = namespace("truth-own").await;
    let ns = ns.name.as_str();
    apply_yaml(ns, &config_map("precious", &[("important", "do-not-lose")]))?;
    let now = combo_api::RunId::now().rfc3339();
    apply_yaml(
        ns,
        &DebuggerBuilder::new("taker")
            .summary("precious")
            .run_at(&now)
            .yaml(),
    )?;
    let message = wait_ready(&c, ns, "taker", "False", "InvalidSpec").await?;
    ensure!(
        message.contains("\"precious\"") && message.contains("not owned by this Debugger"),
        "{message}"
    );
    // A run would have been due at once: nothing may have been written since.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_untouched(
        &user_data(&c, ns, "precious").await?,
        "important",
        "do-not-lose",
    )?;

    // The summary named like the Debugger's own scripts ConfigMap.
    apply_yaml(
        ns,
        &config_map("scripts", &[("disk.one.sh", "#!/bin/sh\necho ok one")]),
    )?;
    apply_yaml(
        ns,
        &DebuggerBuilder::new("same")
            .scripts("scripts")
            .summary("scripts")
            .run_at(&now)
            .yaml(),
    )?;
    let message = wait_ready(&c, ns, "same", "False", "InvalidSpec").await?;
    ensure!(
        message.contains("summary would replace the scripts"),
        "{message}"
    );
    assert_untouched(
        &user_data(&c, ns, "scripts").await?,
        "disk.one.sh",
        "#!/bin/sh\necho ok one",
    )?;

    // Deleting the Debuggers deletes nothing of the user's.
    let dbgs = Api::<Debugger>::namespaced(c.clone(), ns);
    for name in ["taker", "same"] {
        dbgs.delete(name, &DeleteParams::foreground()).await?;
    }
    wait_for(WAIT, "both Debuggers gone", || async {
        Ok(dbgs.list(&ListParams::default()).await?.items.is_empty())
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_untouched(
        &user_data(&c, ns, "precious").await?,
        "important",
        "do-not-lose",
    )?;
    assert_untouched(
        &user_data(&c, ns, "scripts").await?,
        "disk.one.sh",
        "#!/bin/sh\necho ok one",
    )?;
    Ok(())
}

#[tokio::test]
async fn ready_is_claimed_only_for_what_can_work() -> Result<()> {
    install();
    let c = client().await;
    let ns = namespace("truth-ready").await;
    let ns = ns.name.as_str();

    // A dns entry that is an address: the pinger has nothing to look up.
    apply_yaml(
        ns,
        &PingerBuilder::new("mesh")
            .dns(&["172.31.0.101", "kubernetes.default"])
            .yaml(),
    )?;
    let pingers = Api::<Pinger>::namespaced(c.clone(), ns);
    wait_for(WAIT, "Pinger mesh InvalidSpec", || async {
        let p = pingers.get("mesh").await?;
        Ok(p.status.is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == "Ready"
                    && c.status == "False"
                    && c.reason == "InvalidSpec"
                    && c.message.contains("\"172.31.0.101\" is an address")
            })
        }))
    })
    .await?;

    // No category; a name labels cannot hold.
    apply_yaml(ns, &DebuggerBuilder::new("none").categories(&[]).yaml())?;
    let m = wait_ready(&c, ns, "none", "False", "InvalidSpec").await?;
    ensure!(m.contains("categories is empty"), "{m}");
    let long = "l".repeat(70);
    apply_yaml(ns, &DebuggerBuilder::new(&long).run_at("").yaml())?;
    let m = wait_ready(&c, ns, &long, "False", "InvalidSpec").await?;
    ensure!(m.contains("70 characters"), "{m}");

    // Scripts that do not exist, then do, then are deleted.
    apply_yaml(
        ns,
        &DebuggerBuilder::new("custom")
            .scripts("later")
            .categories(&[Category::Custom])
            .yaml(),
    )?;
    let m = wait_ready(&c, ns, "custom", "False", "ConfigMapNotFound").await?;
    ensure!(m.contains("\"later\""), "{m}");
    apply_yaml(
        ns,
        &config_map("later", &[("hello.sh", "#!/bin/sh\necho ok hello")]),
    )?;
    wait_ready(&c, ns, "custom", "True", "WorkloadReady").await?;
    Api::<ConfigMap>::namespaced(c.clone(), ns)
        .delete("later", &DeleteParams::default())
        .await?;
    wait_ready(&c, ns, "custom", "False", "ConfigMapNotFound").await?;

    // A run on every node, then a selector that matches none: the reports,
    // the summary's keys and the run fields go with the nodes.
    let now = combo_api::RunId::now().rfc3339();
    apply_yaml(
        ns,
        &DebuggerBuilder::new("sel")
            .categories(&[Category::Mem])
            .run_at(&now)
            .yaml(),
    )?;
    let reports = Api::<DebuggerReport>::namespaced(c.clone(), ns);
    wait_for(WAIT, "reports of sel", || async {
        Ok(!reports.list(&ListParams::default()).await?.items.is_empty())
    })
    .await?;
    let patch = serde_json::json!({"spec": {"selector": {"kubecombo.io/no-such-node": "x"}}});
    Api::<Debugger>::namespaced(c.clone(), ns)
        .patch("sel", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_ready(&c, ns, "sel", "False", "NoNodesSelected").await?;
    wait_for(
        WAIT,
        "sel's reports, summary keys and run fields gone",
        || async {
            let left = reports.list(&ListParams::default()).await?.items.len();
            let summary = Api::<ConfigMap>::namespaced(c.clone(), ns)
                .get_opt("sel-summary")
                .await?
                .and_then(|cm| cm.data)
                .unwrap_or_default();
            let status = Api::<Debugger>::namespaced(c.clone(), ns)
                .get("sel")
                .await?
                .status
                .unwrap_or_default();
            Ok(left == 0
                && summary.is_empty()
                && status.last_run_at.is_none()
                && status.completed_nodes == 0)
        },
    )
    .await?;

    // DaemonSet to Pod: the Event names the Pod.
    let patch = serde_json::json!({"spec": {"workloadType": "pod", "selector": null}});
    Api::<Debugger>::namespaced(c.clone(), ns)
        .patch("sel", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_for(WAIT, "an Event 'created Pod sel'", || async {
        Ok(debugger_events(&c, ns, "sel")
            .await?
            .iter()
            .any(|e| e.message.as_deref() == Some("created Pod sel")))
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_script_that_reports_an_error_then_hangs_still_gets_its_timeout_item() -> Result<()> {
    install();
    let c = client().await;
    let ns = namespace("truth-hang").await;
    let ns = ns.name.as_str();
    apply_yaml(
        ns,
        &config_map(
            "hang",
            &[(
                "disk.stuck.sh",
                "#!/bin/sh\necho \"err early boom\"\nexec sleep 60",
            )],
        ),
    )?;
    let now = combo_api::RunId::now().rfc3339();
    apply_yaml(
        ns,
        &DebuggerBuilder::new("hang")
            .scripts("hang")
            .categories(&[Category::Disk])
            .script_timeout(2)
            .run_at(&now)
            .yaml(),
    )?;
    let nodes = combo_e2e::wait_run_within(&c, ns, "hang-summary", &now, WAIT).await?;
    ensure!(!nodes.is_empty(), "no node ran");
    for (node, summary) in nodes {
        let disk = summary.categories.get("disk").cloned().unwrap_or_default();
        let err = |item: &str| disk.get(item).and_then(|i| i.err.clone());
        ensure!(
            err("stuck/early").as_deref() == Some("boom"),
            "{node}: {disk:?}"
        );
        ensure!(
            disk.values()
                .any(|i| i.err.as_deref() == Some("timeout after 2s")),
            "{node}: the timeout is hidden: {disk:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn kubectl_combo_summary_of_a_debugger_without_a_result_fails() -> Result<()> {
    install();
    let c = client().await;
    let ns = namespace("truth-plugin").await;
    let ns = ns.name.as_str();
    apply_yaml(ns, &mem_debugger("idle"))?;
    wait_for(WAIT, "idle has a status", || async {
        Ok(ready(&c, ns, "idle").await?.is_some())
    })
    .await?;
    let out = kubectl_combo(&["summary", "idle", "-n", ns]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        out.status.code() == Some(1),
        "exit {:?}: {stderr}",
        out.status.code()
    );
    ensure!(stderr.contains("has no result yet"), "{stderr}");
    let out = kubectl_combo(&["summary", "nosuch", "-n", ns]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        out.status.code() == Some(3) && stderr.contains("no Debugger \"nosuch\""),
        "exit {:?}: {stderr}",
        out.status.code()
    );
    Ok(())
}

/// A kubeconfig acting as ServiceAccount `account` of `ns` (impersonation).
fn kubeconfig_as(ns: &str, account: &str) -> Result<std::path::PathBuf> {
    let admin = std::fs::read_to_string(kubeconfig())?;
    let mut kc: serde_yaml::Value = serde_yaml::from_str(&admin)?;
    let users = kc["users"].as_sequence_mut().context("users")?;
    for u in users {
        u["user"]["as"] = format!("system:serviceaccount:{ns}:{account}").into();
    }
    let path = std::env::temp_dir().join(format!("kube-combo-{ns}-{account}.kubeconfig"));
    std::fs::write(&path, serde_yaml::to_string(&kc)?)?;
    Ok(path)
}

/// The operator's rules within one namespace; `reports` adds the
/// DebuggerReports.
fn operator_role(name: &str, reports: bool) -> String {
    let mut rules = String::from(
        "  - {apiGroups: [kubecombo.io], resources: [debuggers, pingers], verbs: [get, list, watch]}
  - {apiGroups: [kubecombo.io], resources: [debuggers/status, pingers/status], verbs: [patch]}
  - {apiGroups: [apps], resources: [daemonsets], verbs: [get, list, watch, create, patch, delete]}
  - {apiGroups: [\"\"], resources: [pods, configmaps], verbs: [get, list, watch, create, patch, update, delete]}
  - {apiGroups: [\"\"], resources: [serviceaccounts], verbs: [list, watch, create, patch, delete]}
  - {apiGroups: [rbac.authorization.k8s.io], resources: [roles, rolebindings], verbs: [list, watch, create, patch, delete]}
  - {apiGroups: [\"\", events.k8s.io], resources: [events], verbs: [create, patch]}
",
    );
    if reports {
        rules.push_str(
            "  - {apiGroups: [kubecombo.io], resources: [debuggerreports], verbs: [get, list, watch, create, patch, delete]}\n",
        );
    }
    format!("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {name}\nrules:\n{rules}")
}

/// A second operator, on this machine, for namespace `ns` only, acting as
/// ServiceAccount `narrow`; its log lines arrive on the returned channel.
struct LocalOperator {
    child: std::process::Child,
    /// Its kubeconfig, removed with it.
    kubeconfig: std::path::PathBuf,
    addr: String,
    log: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl LocalOperator {
    fn start(ns: &str, port: u16) -> Result<Self> {
        let addr = format!("127.0.0.1:{port}");
        let kubeconfig = kubeconfig_as(ns, "narrow")?;
        let mut child = Command::new(project_binary(keys::BIN_OPERATOR))
            .args(["--namespace", ns, "--metrics-addr", &addr])
            .env("KUBECONFIG", &kubeconfig)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child.stderr.take().context("stderr")?;
        let (tx, log) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(LocalOperator {
            child,
            kubeconfig,
            addr,
            log,
            seen: Vec::new(),
        })
    }

    fn get(&self, path: &str) -> (u16, String) {
        let out = Command::new("curl")
            .args([
                "-s",
                "-o",
                "-",
                "-w",
                "\n%{http_code}",
                &format!("http://{}{path}", self.addr),
            ])
            .output()
            .expect("curl runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
        (code.trim().parse().unwrap_or(0), body.to_string())
    }

    fn log_has(&mut self, needle: &str) -> bool {
        self.seen.extend(self.log.try_iter());
        self.seen.iter().any(|l| l.contains(needle))
    }

    /// SIGTERM; how long the process took to exit.
    fn stop(&mut self) -> Result<Duration> {
        let t0 = Instant::now();
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()?;
        ensure!(sent.success(), "kill -TERM failed");
        while t0.elapsed() < Duration::from_secs(20) {
            if self.child.try_wait()?.is_some() {
                return Ok(t0.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        bail!("the operator was still running 20 s after SIGTERM")
    }
}

impl Drop for LocalOperator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}

#[tokio::test]
async fn an_operator_that_cannot_watch_says_so_recovers_by_itself_and_stops_when_asked(
) -> Result<()> {
    if !combo_e2e::real_nodes().is_empty() {
        // The second operator runs from the host's build, which the
        // cluster of simulated nodes has; real nodes add nothing to it.
        println!("skipped on real nodes: it runs on the cluster of simulated nodes");
        return Ok(());
    }
    install();
    let ns = namespace("truth-watch").await;
    let ns = ns.name.as_str();
    apply_yaml(
        ns,
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: narrow\n",
    )?;
    apply_yaml(ns, &operator_role("narrow", false))?;
    apply_yaml(
        ns,
        &format!("apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: narrow\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: narrow}}\nsubjects: [{{kind: ServiceAccount, name: narrow, namespace: {ns}}}]\n"),
    )?;
    // A Debugger to reconcile: its reconcile waits for the reports' watch.
    apply_yaml(ns, &mem_debugger("waiting"))?;

    for (round, port) in [(0, 18481u16), (1, 18482)] {
        let mut op = LocalOperator::start(ns, port)?;
        wait_for(
            Duration::from_secs(30),
            "/readyz 503 naming DebuggerReport",
            || {
                let (code, body) = op.get("/readyz");
                async move { Ok(code == 503 && body.contains("DebuggerReport")) }
            },
        )
        .await?;
        let (_, metrics) = op.get("/metrics");
        ensure!(
            metrics.contains("combo_operator_watch_errors_total{kind=\"DebuggerReport\"}"),
            "{metrics}"
        );
        ensure!(
            op.log_has("watch failing") && op.log_has("DebuggerReport") && op.log_has("403"),
            "no error line naming the kind and the answer: {:#?}",
            op.seen
        );
        if round == 1 {
            // The right comes: the watch lists and the operator is ready.
            apply_yaml(ns, &operator_role("narrow", true))?;
            wait_for(
                Duration::from_secs(90),
                "/readyz 200 after the watch recovered",
                || {
                    let (code, _) = op.get("/readyz");
                    async move { Ok(code == 200) }
                },
            )
            .await?;
            ensure!(op.log_has("watch recovered"), "{:#?}", op.seen);
        }
        let took = op.stop()?;
        ensure!(
            took < Duration::from_secs(2),
            "round {round}: the operator took {took:?} to exit after SIGTERM"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_runner_pod_goes_within_seconds_of_its_deletion() -> Result<()> {
    if !real_cluster_or_skip("a_runner_pod_goes_within_seconds_of_its_deletion") {
        return Ok(());
    }
    install();
    let c = client().await;
    let ns = namespace("truth-stop").await;
    let ns = ns.name.as_str();
    // A Debugger in the middle of a script when its pod is deleted, with a
    // pinger probing.
    apply_yaml(
        ns,
        &config_map("slow", &[("disk.slow.sh", "#!/bin/sh\nexec sleep 300")]),
    )?;
    apply_yaml(
        ns,
        &PingerBuilder::new("probe")
            .ping(&["127.0.0.1"])
            .tcp_ping(&["127.0.0.1:1"])
            .interval(1)
            .yaml(),
    )?;
    let now = combo_api::RunId::now().rfc3339();
    apply_yaml(
        ns,
        &DebuggerBuilder::new("stop")
            .scripts("slow")
            .categories(&[Category::Disk])
            .script_timeout(600)
            .pinger("probe")
            .run_at(&now)
            .tolerate_all()
            .yaml(),
    )?;
    let pods = Api::<Pod>::namespaced(c.clone(), ns);
    let lp = ListParams::default().labels(&keys::debugger_selector("stop"));
    wait_for(WAIT, "a Ready runner pod", || async {
        Ok(pods
            .list(&lp)
            .await?
            .items
            .iter()
            .any(combo_e2e::running_and_ready))
    })
    .await?;
    // The run has started its 300 s script.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pod = pods
        .list(&lp)
        .await?
        .items
        .into_iter()
        .find(combo_e2e::running_and_ready)
        .context("a pod")?;
    let name = pod.name_any();
    let t0 = Instant::now();
    pods.delete(&name, &DeleteParams::default()).await?;
    // What the containers did is in the pod's status while it terminates;
    // when the pod object itself goes is the kubelet's affair (it deletes
    // it at a status sync after the pod's resources are reclaimed, up to
    // 10 s later), so the bound is on the containers' exits.
    let mut stopped: Option<(Vec<(String, i32)>, Duration)> = None;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let now = pods.get_opt(&name).await?.filter(|p| p.uid() == pod.uid());
        let Some(now) = now else { break };
        if stopped.is_none() {
            let exits = terminated(&now);
            if !exits.is_empty()
                && exits.len() == now.spec.as_ref().map_or(0, |s| s.containers.len())
            {
                stopped = Some((exits, t0.elapsed()));
            }
        }
        ensure!(
            Instant::now() < deadline,
            "pod {name} still there 120 s after its deletion"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let took = t0.elapsed();
    match stopped {
        Some((exits, at)) => {
            // Killed at the end of the grace period is 137, and 30 s.
            ensure!(
                at < Duration::from_secs(10) && exits.iter().all(|(_, code)| *code != 137),
                "the runner pod's containers stopped after {at:?} with {exits:?} (grace period 30 s)"
            );
            println!("runner pod's containers stopped {at:?} after its deletion with {exits:?}; pod gone after {took:?}");
        }
        // The pod went before a poll saw its containers' exits.
        None => ensure!(
            took < Duration::from_secs(15),
            "the runner pod took {took:?} to go (grace period 30 s)"
        ),
    }
    Ok(())
}

#[tokio::test]
async fn a_cut_report_keeps_a_lone_timeout_before_repeats_of_another_script() -> Result<()> {
    install();
    let c = client().await;
    let ns = namespace("truth-cut").await;
    let ns = ns.name.as_str();
    apply_yaml(
        ns,
        &config_map(
            "noisy",
            &[
                (
                    "disk.many.sh",
                    "#!/bin/sh\ni=0\nwhile [ $i -lt 140 ]; do echo \"err part-$i the same failure again and again\"; i=$((i+1)); done",
                ),
                ("mem.stuck.sh", "#!/bin/sh\nexec sleep 60"),
            ],
        ),
    )?;
    let now = combo_api::RunId::now().rfc3339();
    apply_yaml(
        ns,
        &DebuggerBuilder::new("cut")
            .scripts("noisy")
            .categories(&[Category::Disk, Category::Mem])
            .script_timeout(2)
            .run_at(&now)
            .tolerate_all()
            .yaml(),
    )?;
    combo_e2e::wait_run_within(&c, ns, "cut-summary", &now, WAIT).await?;
    let reports = Api::<DebuggerReport>::namespaced(c.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items;
    ensure!(!reports.is_empty(), "no report");
    for r in reports {
        let mem = r.spec.categories.get("mem").cloned().unwrap_or_default();
        ensure!(
            mem.values()
                .any(|i| i.err.as_deref() == Some("timeout after 2s")),
            "{}: the lone timeout was cut: mem {mem:?}",
            r.spec.node
        );
        ensure!(
            r.spec.failed_items >= 141,
            "{}: {}",
            r.spec.node,
            r.spec.failed_items
        );
    }
    Ok(())
}

/// `sh -c SCRIPT` in the runner container of `pod`.
fn in_runner(ns: &str, pod: &str, script: &str) -> Result<String> {
    combo_e2e::kubectl_ok(&[
        "exec", "-n", ns, pod, "-c", "runner", "--", "sh", "-c", script,
    ])
}

#[tokio::test]
async fn errlogs_summary_and_plugin_agree_on_the_newest_run_whatever_its_id() -> Result<()> {
    if !real_cluster_or_skip("errlogs_summary_and_plugin_agree_on_the_newest_run_whatever_its_id") {
        return Ok(());
    }
    install();
    let c = client().await;
    let ns = namespace("truth-order").await;
    let ns = ns.name.as_str();
    apply_yaml(
        ns,
        &config_map(
            "fail",
            &[(
                "disk.fail.sh",
                "#!/bin/sh\necho \"err broken in run $RUN_ID\"",
            )],
        ),
    )?;
    let dbgs = Api::<Debugger>::namespaced(c.clone(), ns);
    let mut runs = Vec::new();
    // Two runs now, then a timestamp in the past: the last one ran last.
    for run_at in [None, None, Some("2025-06-01T00:00:00Z")] {
        let run_at = match run_at {
            Some(t) => t.to_string(),
            None => {
                tokio::time::sleep(Duration::from_millis(1100)).await;
                combo_api::RunId::now().rfc3339()
            }
        };
        if runs.is_empty() {
            apply_yaml(
                ns,
                &DebuggerBuilder::new("order")
                    .scripts("fail")
                    .categories(&[Category::Disk])
                    .errlog_retention(2)
                    .run_at(&run_at)
                    .tolerate_all()
                    .yaml(),
            )?;
        } else {
            combo_e2e::set_run_at(&c, ns, "order", &run_at).await?;
        }
        combo_e2e::wait_run_within(&c, ns, "order-summary", &run_at, WAIT).await?;
        runs.push(run_at);
    }
    // Run ids: the RFC 3339 times in basic format.
    let ids: Vec<String> = runs.iter().map(|r| r.replace(['-', ':'], "")).collect();
    wait_for(WAIT, "lastRunAt is the past timestamp", || async {
        Ok(dbgs
            .get("order")
            .await?
            .status
            .and_then(|s| s.last_run_at)
            .as_deref()
            == Some("2025-06-01T00:00:00Z"))
    })
    .await?;
    let pods = Api::<Pod>::namespaced(c.clone(), ns)
        .list(&ListParams::default().labels(&keys::debugger_selector("order")))
        .await?
        .items;
    for pod in pods {
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .context("node")?;
        let listing = in_runner(ns, &pod.name_any(), "ls /scripts/disk/errlog")?;
        let mut kept: Vec<&str> = listing.split_whitespace().collect();
        kept.sort();
        let mut want = vec![format!("{}.log", ids[1]), format!("{}.log", ids[2])];
        want.sort();
        ensure!(kept == want, "{node}: errlogs kept {kept:?}, want {want:?}");
        let out = kubectl_combo(&[
            "errlog",
            "order",
            "-n",
            ns,
            "--node",
            &node,
            "--category",
            "disk",
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        ensure!(
            out.status.success() && text.contains(&format!("broken in run {}", ids[2])),
            "{node}: kubectl combo errlog shows another run than the summary: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let table = kubectl_combo(&["summary", "order", "-n", ns]);
    let table = String::from_utf8_lossy(&table.stdout);
    ensure!(table.contains(&ids[2]), "{table}");
    Ok(())
}

/// The exit codes of `pod`'s terminated containers, by name.
fn terminated(pod: &Pod) -> Vec<(String, i32)> {
    pod.status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .filter_map(|c| {
            let t = c.state.as_ref()?.terminated.as_ref()?;
            Some((c.name.clone(), t.exit_code))
        })
        .collect()
}
