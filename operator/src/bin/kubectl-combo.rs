//! `kubectl-combo`: the `kubectl combo` plugin (docs/reference.md,
//! "`kubectl-combo`").

use std::process::{Command as Process, ExitCode};

use anyhow::{bail, Context as _, Result};
use chrono::Utc;
use combo_api::keys;
use combo_api::{Category, Debugger, Pinger, RunId};
use combo_operator::plugin;
use combo_operator::plugin::cli::{Args, Command};
use combo_operator::plugin::errors::{self, NotFound};
use combo_operator::plugin::mesh::{self, Prober};
use combo_operator::plugin::{mesh_gather, mesh_html};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};

const BIN: &str = "kubectl-combo";

#[tokio::main]
async fn main() -> ExitCode {
    let args: Args = combo_api::cli::parse_args(BIN, combo_api::version!());
    let debug = args.debug;
    match dispatch(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, whatever RUST_BACKTRACE says: a user of kubectl
            // reads a message, not a trace; --debug shows the whole chain.
            if debug {
                eprintln!("{BIN}: {e:?}");
            } else {
                eprintln!("{}", combo_api::cli::error_line(BIN, e.as_ref()));
            }
            ExitCode::from(errors::exit_status(&e))
        }
    }
}

async fn dispatch(args: Args) -> Result<()> {
    let client = Client::try_default()
        .await
        .context("no usable kubeconfig")?;
    let ns = args
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    match args.command {
        Command::Summary { debugger, all } => summary(client, &ns, &debugger, all).await,
        Command::Run {
            debugger,
            wait,
            timeout,
        } => run(client, &ns, &debugger, wait.then_some(timeout)).await,
        Command::Errlog {
            debugger,
            node,
            category,
            run,
        } => errlog(client, &ns, &debugger, &node, category, run).await,
        Command::Mesh {
            debugger,
            all,
            html,
        } => mesh(client, &ns, &debugger, all, html).await,
        Command::Status { all_namespaces } => status(client, &ns, all_namespaces).await,
    }
}

/// An API error as one line: the server's message, not its whole Status.
fn api_error(e: kube::Error, what: &str) -> anyhow::Error {
    match e {
        kube::Error::Api(status) => anyhow::anyhow!("{what}: {}", status.message),
        other => anyhow::Error::new(other).context(what.to_string()),
    }
}

/// Debugger `ns/name`; [`NotFound`] when there is none.
async fn debugger(client: Client, ns: &str, name: &str) -> Result<Debugger> {
    Api::<Debugger>::namespaced(client, ns)
        .get_opt(name)
        .await
        .map_err(|e| api_error(e, &format!("reading Debugger {ns}/{name}")))?
        .ok_or_else(|| NotFound::debugger(ns, name).into())
}

/// The pods of Debugger `ns/name` that are not being deleted.
async fn debugger_pods(client: &Client, ns: &str, name: &str) -> Result<Vec<Pod>> {
    let pods = Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&keys::debugger_selector(name)))
        .await
        .map_err(|e| api_error(e, &format!("listing the pods of Debugger {ns}/{name}")))?;
    Ok(pods
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}

async fn summary(client: Client, ns: &str, name: &str, all: bool) -> Result<()> {
    let dbg = debugger(client.clone(), ns, name).await?;
    let cm_name = dbg.spec.summary_name(name);
    let data = summary_data(client, ns, &dbg).await?;
    // At the top: a summary that is not the status's run says so.
    if let Some(stale) = plugin::truth::stale(&dbg, &data) {
        eprintln!("{stale}");
    }
    // Nodes of the newest run that ran different scripts say so too.
    if let Some(differ) = plugin::scripts::differ_in_summary(&data) {
        eprintln!("{differ}");
    }
    let rows = plugin::summary_rows(&data, all);
    if rows.is_empty() {
        eprintln!(
            "no {}items in ConfigMap {ns}/{cm_name}",
            if all { "" } else { "failed " }
        );
    } else {
        let header: &[&str] = if all {
            &plugin::SUMMARY_ALL_HEADER
        } else {
            &plugin::SUMMARY_HEADER
        };
        print!("{}", plugin::table(header, &rows));
    }
    let skipped = plugin::skipped_count(&data);
    if skipped > 0 && !all {
        eprintln!(
            "{skipped} item(s) skipped: not checked, the pods lack what they need (kubectl combo summary {name} -n {ns} --all lists them)"
        );
    }
    Ok(())
}

/// The summary ConfigMap's data of `dbg`: an error when the Debugger has no
/// result yet (no summary, or one without a node), never an empty table
/// that would read as "no failures", and when the ConfigMap of that name
/// is not the Debugger's own (another Debugger's summary, or the user's).
async fn summary_data(
    client: Client,
    ns: &str,
    dbg: &Debugger,
) -> Result<std::collections::BTreeMap<String, String>> {
    let name = dbg.metadata.name.as_deref().unwrap_or_default();
    let cm_name = dbg.spec.summary_name(name);
    let cm = Api::<ConfigMap>::namespaced(client, ns)
        .get_opt(&cm_name)
        .await
        .map_err(|e| api_error(e, &format!("ConfigMap {ns}/{cm_name}")))?;
    if let Some(why) = cm
        .as_ref()
        .and_then(|c| plugin::truth::not_owned(dbg, &c.metadata))
    {
        bail!("Debugger {ns}/{name} has no summary to show: {why}");
    }
    let data = cm.and_then(|c| c.data).unwrap_or_default();
    if data.is_empty() {
        bail!(
            "Debugger {ns}/{name} has no result yet: its summary ConfigMap {cm_name} {}{} (see kubectl describe dbg {name} -n {ns})",
            if dbg.status.as_ref().and_then(|s| s.last_run_at.as_ref()).is_some() {
                "holds no node"
            } else {
                "has no node's run yet"
            },
            plugin::truth::not_ready(dbg)
                .map(|why| format!("; the Debugger is {why}"))
                .unwrap_or_default()
        );
    }
    Ok(data)
}

/// Asks every node of Debugger `ns/name` for one run now, keeping its
/// runAt (docs/runner.md, "Run now").
async fn run(client: Client, ns: &str, name: &str, wait: Option<u64>) -> Result<()> {
    let (run, patch) = plugin::run_now::request(Utc::now());
    let api = Api::<Debugger>::namespaced(client, ns);
    let pp = PatchParams {
        field_manager: Some(keys::FIELD_MANAGER_PLUGIN.into()),
        ..PatchParams::default()
    };
    let dbg = match api.patch(name, &pp, &Patch::Merge(&patch)).await {
        Err(kube::Error::Api(s)) if s.code == 404 => {
            return Err(NotFound::debugger(ns, name).into())
        }
        r => r.map_err(|e| api_error(e, &format!("annotating Debugger {ns}/{name}")))?,
    };
    println!("{}", plugin::run_now::said(name, run, &dbg.spec.run_at));
    let Some(timeout) = wait else {
        return Ok(());
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(timeout);
    let mut last = None;
    loop {
        let dbg = api
            .get(name)
            .await
            .map_err(|e| api_error(e, &format!("reading Debugger {ns}/{name}")))?;
        let now = plugin::run_now::progress(dbg.status.as_ref(), run);
        match now {
            plugin::run_now::Progress::Done { nodes, failed } => {
                println!("run {run} finished on {nodes} node(s): {failed} failed item(s); kubectl combo summary {name} -n {ns} shows them");
                if failed > 0 {
                    std::process::exit(1);
                }
                return Ok(());
            }
            plugin::run_now::Progress::Waiting { completed, desired } => {
                if last != Some(now) {
                    eprintln!("waiting for run {run}: {completed} of {desired} node(s) reported");
                    last = Some(now);
                }
                if std::time::Instant::now() >= until {
                    eprintln!("run {run}: {completed} of {desired} node(s) reported within {timeout} s; kubectl combo summary {name} -n {ns} shows what is there");
                    std::process::exit(4);
                }
            }
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
}

async fn errlog(
    client: Client,
    ns: &str,
    name: &str,
    node: &str,
    category: Category,
    run: Option<RunId>,
) -> Result<()> {
    // The Debugger first: a wrong name is told as such, not as a missing pod.
    debugger(client.clone(), ns, name).await?;
    let pods: Vec<(String, Option<String>)> = debugger_pods(&client, ns, name)
        .await?
        .into_iter()
        .filter_map(|p| Some((p.metadata.name?, p.spec.and_then(|s| s.node_name))))
        .collect();
    let pod = errors::pod_on_node(ns, name, node, &pods)?;
    let dirs = plugin::errlog_dirs(category);
    let (run, dir) = match run {
        // The run asked for, in either errlog directory.
        Some(wanted) => {
            let mut found = None;
            let mut failures = Vec::new();
            for dir in &dirs {
                match listing_by_time(ns, &pod, dir) {
                    Ok(l) if l.split_whitespace().any(|f| f == format!("{wanted}.log")) => {
                        found = Some((wanted, dir.clone()));
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => failures.push(format!("{e:#}")),
                }
            }
            match found {
                Some(f) => f,
                None if failures.len() == dirs.len() => bail!(
                    "reading the errlogs of {category} on node {node:?}: {}",
                    failures.join("; ")
                ),
                None => return Err(NotFound(format!("no errlog of run {wanted} for category {category} on node {node:?}: nothing failed in {category} in that run, or it was pruned (errlogRetention)")).into()),
            }
        }
        // Without --run: the newest errlog written, whichever run it is of
        // (the summary's run passed when it is older); stderr names it.
        None => {
            let cmd = plugin::errlog_listing_command(&dirs);
            let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
            let listing = exec(ns, &pod, &cmd)
                .with_context(|| format!("reading the errlogs of {category} on node {node:?}"))?;
            let Some(newest) = plugin::newest_errlog(&listing) else {
                return Err(NotFound(format!("no errlog for category {category} on node {node:?}: no run has failed in {category} there (or its errlogs were pruned)")).into());
            };
            eprintln!(
                "{BIN}: errlog of run {}, the newest of {category} on node {node}",
                newest.0
            );
            newest
        }
    };
    print!(
        "{}",
        exec(ns, &pod, &["cat", &plugin::errlog_path(&dir, &run)])?
    );
    Ok(())
}

/// The errlogs of `dir`, newest written first (`ls -t`).
fn listing_by_time(ns: &str, pod: &str, dir: &str) -> Result<String> {
    exec(ns, pod, &["ls", "-t", dir])
}

/// `kubectl exec -n NS POD -c runner -- CMD...`, returning its stdout.
fn exec(ns: &str, pod: &str, cmd: &[&str]) -> Result<String> {
    let out = Process::new("kubectl")
        .args(["exec", "-n", ns, pod, "-c", keys::CONTAINER_RUNNER, "--"])
        .args(cmd)
        .output()
        .context("running kubectl")?;
    if !out.status.success() {
        bail!(
            "kubectl exec {pod} -- {}: {}",
            cmd.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The paths of Debugger `ns/name`'s pingers (docs/pinger.md#the-mesh-view):
/// one read of the Debugger and of its Pinger, one list of its
/// pods, then one proxy GET per pod (bounded by [`mesh_gather::LIMITS`]).
async fn mesh(
    client: Client,
    ns: &str,
    name: &str,
    all: bool,
    html: Option<std::path::PathBuf>,
) -> Result<()> {
    let dbg = debugger(client.clone(), ns, name).await?;
    if !dbg.spec.enable_pinger || dbg.spec.pinger.is_empty() {
        bail!("Debugger {ns}/{name} runs no pinger (spec.enablePinger is false or spec.pinger is empty)");
    }
    let pinger_name = &dbg.spec.pinger;
    let pinger = Api::<Pinger>::namespaced(client.clone(), ns)
        .get_opt(pinger_name)
        .await
        .map_err(|e| api_error(e, &format!("reading Pinger {ns}/{pinger_name}")))?
        .ok_or_else(|| {
            NotFound(format!(
                "no Pinger {pinger_name:?} in namespace {ns}, which Debugger {name} names"
            ))
        })?;
    if !pinger.spec.enable_metrics {
        bail!("Pinger {ns}/{pinger_name} has enableMetrics false: its pingers serve no summary to read");
    }
    let probers: Vec<Prober> = debugger_pods(&client, ns, name)
        .await?
        .into_iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .filter_map(|p| {
            let ips = p
                .status
                .as_ref()?
                .pod_ips
                .as_ref()?
                .iter()
                .map(|i| i.ip.clone())
                .collect();
            Some(Prober {
                pod: p.metadata.name?,
                node: p.spec?.node_name?,
                ips,
            })
        })
        .collect();
    if probers.is_empty() {
        bail!("Debugger {ns}/{name} has no running pod to ask yet");
    }
    let port = pinger.spec.metrics_port;
    let gathered = mesh_gather::gather(&client, ns, port, &probers, mesh_gather::LIMITS).await;
    let (mut answers, mut silent) = (Vec::new(), Vec::new());
    for (i, answer) in gathered {
        match answer {
            Ok(recent) => answers.push((i, recent)),
            Err(why) => silent.push(format!(
                "{} (pod {}): {why}",
                probers[i].node, probers[i].pod
            )),
        }
    }
    silent.sort();
    let paths = mesh::paths(&probers, &answers);
    let window = answers
        .first()
        .map_or(combo_api::recent::WINDOW_MINUTES * 60, |(_, r)| {
            r.window_seconds
        });
    let tally = mesh::tally(&paths, window, answers.len(), probers.len());
    let rows = mesh::rows(&paths, all);
    if !rows.is_empty() {
        print!("{}", plugin::table(&mesh::HEADER, &rows));
    }
    println!("{tally}");
    for s in silent.iter().take(10) {
        eprintln!("no summary from {s}");
    }
    if silent.len() > 10 {
        eprintln!(
            "... and {} more pingers without a summary",
            silent.len() - 10
        );
    }
    if let Some(file) = html {
        let page = mesh_html::page(&format!("{ns}/{name}"), &paths, &silent, &tally);
        std::fs::write(&file, page).with_context(|| format!("writing {}", file.display()))?;
        eprintln!("wrote {}", file.display());
    }
    if answers.is_empty() {
        bail!("no pinger of Debugger {ns}/{name} answered (pods/proxy on port {port}; see the lines above)");
    }
    Ok(())
}

async fn status(client: Client, ns: &str, all_namespaces: bool) -> Result<()> {
    let api: Api<Debugger> = if all_namespaces {
        Api::all(client)
    } else {
        Api::namespaced(client, ns)
    };
    let list = api.list(&ListParams::default()).await.map_err(|e| {
        let scope = if all_namespaces {
            "any namespace".to_string()
        } else {
            format!("namespace {ns}")
        };
        api_error(e, &format!("listing the Debuggers of {scope}"))
    })?;
    if list.items.is_empty() {
        eprintln!("no Debuggers found");
        return Ok(());
    }
    print!(
        "{}",
        plugin::table(&plugin::STATUS_HEADER, &plugin::status_rows(&list.items))
    );
    for d in &list.items {
        let ns = d.metadata.namespace.as_deref().unwrap_or_default();
        let name = d.metadata.name.as_deref().unwrap_or_default();
        let differ = d
            .status
            .as_ref()
            .and_then(|s| plugin::scripts::differ_in_status(ns, name, s));
        if let Some(line) = differ {
            eprintln!("{line}");
        }
    }
    Ok(())
}
