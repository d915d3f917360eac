//! `kubectl combo mesh` (docs/pinger.md, "The mesh view"): the paths of a
//! Debugger's pingers, prober node to target, with loss and RTT of their
//! last minutes, failing paths first. [`paths`] (the table) and [`html`]
//! (the page) are pure, [`gather`] asks the pingers; [`run`] reads the
//! Debugger, its Pinger and its pods, then prints.

pub mod gather;
pub mod html;
pub mod paths;

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use combo_api::recent::Recent;
use combo_api::Pinger;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};

use serde::Serialize;

use crate::cli::Output;
use crate::cluster::{api_error, debugger, debugger_pods};
use crate::errors::NotFound;
use crate::{output, table};
use paths::{Path, Prober};

/// `kubectl combo mesh -o json|yaml`: the paths of one Debugger's pingers
/// (docs/reference.md, "`kubectl-combo`", field names).
#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct View {
    /// The Debugger's namespace.
    pub namespace: String,
    /// The Debugger.
    pub debugger: String,
    /// The window the pingers' numbers are of, in seconds.
    pub window_seconds: u64,
    /// Pingers asked.
    pub asked: usize,
    /// Pingers that answered.
    pub answered: usize,
    /// The failing and lossy paths, every path with `--all`, worst first.
    pub paths: Vec<PathView>,
    /// The pingers that did not answer: `node (pod POD): why`.
    pub silent: Vec<String>,
}

/// One path in a [`View`].
#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PathView {
    /// The prober's node.
    pub prober: String,
    /// The target: a node of the Debugger (`peer` true) or the target as
    /// the pinger labels it.
    pub target: String,
    /// Whether the target is a node of the Debugger.
    pub peer: bool,
    /// The address probed of a dual-stack peer, else null.
    pub address: Option<String>,
    /// `icmp`, `tcp`, `udp` or `dns`.
    pub kind: String,
    /// `FAIL`, `lossy`, `ok` or `idle`.
    pub state: &'static str,
    /// Probes sent in the window.
    pub sent: u64,
    /// Lost probes, in percent of those sent.
    pub loss_percent: f64,
    /// Average RTT of the answered probes in ms, else null.
    pub rtt_avg_ms: Option<f64>,
    /// Largest RTT of the answered probes in ms, else null.
    pub rtt_max_ms: Option<f64>,
}

/// The [`View`] of `paths` (failing and lossy ones, or all with `all`).
#[allow(
    clippy::too_many_arguments,
    reason = "the parts of one answer, each named"
)]
pub fn view(
    ns: &str,
    name: &str,
    paths: &[Path],
    all: bool,
    window_seconds: u64,
    asked: usize,
    answered: usize,
    silent: &[String],
) -> View {
    let paths = paths
        .iter()
        .filter(|p| all || matches!(p.health, paths::Health::Failing | paths::Health::Lossy))
        .map(|p| PathView {
            prober: p.prober.clone(),
            target: p.target.clone(),
            peer: p.peer,
            address: p.address.clone(),
            kind: p.kind.clone(),
            state: p.health.word(),
            sent: p.sent,
            loss_percent: p.loss,
            rtt_avg_ms: p.rtt_avg_ms,
            rtt_max_ms: p.rtt_max_ms,
        })
        .collect();
    View {
        namespace: ns.to_string(),
        debugger: name.to_string(),
        window_seconds,
        asked,
        answered,
        paths,
        silent: silent.to_vec(),
    }
}

/// Pingers without a summary named on stderr; the others are counted.
const SILENT_NAMED: usize = 10;

/// The paths of Debugger `ns/name`'s pingers (docs/pinger.md#the-mesh-view):
/// one read of the Debugger and of its Pinger, one list of its
/// pods, then one proxy GET per pod (bounded by [`gather::LIMITS`]); with
/// `page_file`, the page written there too; with `format`, the [`View`]
/// as one document instead of the table.
pub async fn run(
    client: Client,
    ns: &str,
    name: &str,
    all: bool,
    page_file: Option<PathBuf>,
    format: Option<Output>,
) -> Result<()> {
    let pinger = pinger_of(&client, ns, name).await?;
    let probers = probers(&client, ns, name).await?;
    let port = pinger.spec.metrics_port;
    let gathered = gather::gather(&client, ns, port, &probers, gather::LIMITS).await;
    let (answers, silent) = answered(gathered, &probers);
    let paths = paths::paths(&probers, &answers);
    let window = answers
        .first()
        .map_or(combo_api::recent::WINDOW_MINUTES * 60, |(_, r)| {
            r.window_seconds
        });
    let tally = paths::tally(&paths, window, answers.len(), probers.len());
    match format {
        Some(format) => {
            let v = view(
                ns,
                name,
                &paths,
                all,
                window,
                probers.len(),
                answers.len(),
                &silent,
            );
            print!("{}", output::document(format, &v));
        }
        None => print(&paths, all, &tally, &silent),
    }
    if let Some(file) = page_file {
        let page = html::page(&format!("{ns}/{name}"), &paths, &silent, &tally);
        std::fs::write(&file, page).with_context(|| format!("writing {}", file.display()))?;
        eprintln!("wrote {}", file.display());
    }
    if answers.is_empty() {
        bail!("no pinger of Debugger {ns}/{name} answered (pods/proxy on port {port}; see the lines above)");
    }
    Ok(())
}

/// The Pinger of Debugger `ns/name`, when it runs one whose pingers serve
/// their summary.
async fn pinger_of(client: &Client, ns: &str, name: &str) -> Result<Pinger> {
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
    Ok(pinger)
}

/// The running pods of Debugger `ns/name`, as probers to ask; an error
/// when there is none.
async fn probers(client: &Client, ns: &str, name: &str) -> Result<Vec<Prober>> {
    let probers: Vec<Prober> = debugger_pods(client, ns, name)
        .await?
        .into_iter()
        .filter_map(prober_of)
        .collect();
    if probers.is_empty() {
        bail!("Debugger {ns}/{name} has no running pod to ask yet");
    }
    Ok(probers)
}

/// `pod` as a prober, when it is running on a node and has addresses.
fn prober_of(pod: Pod) -> Option<Prober> {
    let status = pod.status?;
    if status.phase.as_deref() != Some("Running") {
        return None;
    }
    let ips = status.pod_ips?.into_iter().map(|i| i.ip).collect();
    Some(Prober {
        pod: pod.metadata.name?,
        node: pod.spec?.node_name?,
        ips,
    })
}

/// The answers of `gathered` by index into `probers`, and the pingers
/// without one (`node (pod POD): why`), sorted.
fn answered(
    gathered: Vec<(usize, Result<Recent, String>)>,
    probers: &[Prober],
) -> (Vec<(usize, Recent)>, Vec<String>) {
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
    (answers, silent)
}

/// The table (failing and lossy paths, or all with `all`) and `tally` on
/// stdout; the first pingers without a summary on stderr.
fn print(paths: &[Path], all: bool, tally: &str, silent: &[String]) {
    let rows = paths::rows(paths, all);
    if !rows.is_empty() {
        print!("{}", table(&paths::HEADER, &rows));
    }
    println!("{tally}");
    for s in silent.iter().take(SILENT_NAMED) {
        eprintln!("no summary from {s}");
    }
    if silent.len() > SILENT_NAMED {
        eprintln!(
            "... and {} more pingers without a summary",
            silent.len() - SILENT_NAMED
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodIP, PodSpec, PodStatus};

    fn pod(name: &str, node: &str, phase: &str, ips: &[&str]) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.spec = Some(PodSpec {
            node_name: Some(node.into()),
            ..PodSpec::default()
        });
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            pod_ips: Some(ips.iter().map(|ip| PodIP { ip: ip.to_string() }).collect()),
            ..PodStatus::default()
        });
        p
    }

    #[test]
    fn a_running_pod_with_addresses_is_a_prober_and_any_other_is_not() {
        assert_eq!(
            prober_of(pod("ds-1", "node-1", "Running", &["10.0.0.1", "fd00::1"])),
            Some(Prober {
                pod: "ds-1".into(),
                node: "node-1".into(),
                ips: vec!["10.0.0.1".into(), "fd00::1".into()],
            })
        );
        assert_eq!(
            prober_of(pod("ds-2", "node-2", "Pending", &["10.0.0.2"])),
            None
        );
        let mut unscheduled = pod("ds-3", "node-3", "Running", &["10.0.0.3"]);
        unscheduled.spec = None;
        assert_eq!(prober_of(unscheduled), None);
    }

    #[test]
    fn the_json_view_lists_failing_paths_with_the_documented_fields() {
        use crate::mesh::paths::tests as data;
        let p = paths::paths(&data::probers(), &data::answers());
        let silent = vec!["node-2 (pod ds-2): timed out".to_string()];
        let v = view("ops", "mesh", &p, false, 300, 3, 2, &silent);
        assert!(!v.paths.is_empty());
        assert!(v
            .paths
            .iter()
            .all(|p| p.state == "FAIL" || p.state == "lossy"));
        assert!(
            view("ops", "mesh", &p, true, 300, 3, 2, &silent)
                .paths
                .len()
                > v.paths.len()
        );
        let json = serde_json::to_value(&v).unwrap();
        let mut keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "answered",
                "asked",
                "debugger",
                "namespace",
                "paths",
                "silent",
                "windowSeconds"
            ]
        );
        let mut keys: Vec<&String> = json["paths"][0].as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "address",
                "kind",
                "lossPercent",
                "peer",
                "prober",
                "rttAvgMs",
                "rttMaxMs",
                "sent",
                "state",
                "target"
            ]
        );
        assert_eq!(json["paths"][0]["state"], "FAIL");
        assert_eq!(json["silent"][0], "node-2 (pod ds-2): timed out");
    }

    #[test]
    fn pingers_without_an_answer_are_named_by_node_and_pod_in_order() {
        let probers: Vec<Prober> = ["node-2", "node-1"]
            .iter()
            .enumerate()
            .map(|(i, node)| Prober {
                pod: format!("ds-{i}"),
                node: node.to_string(),
                ips: vec![],
            })
            .collect();
        let recent: Recent = serde_json::from_str(r#"{"windowSeconds":300,"targets":[]}"#)
            .expect("a pinger's summary");
        let gathered = vec![
            (0, Err("no answer within 3 s".to_string())),
            (1, Err("refused (503)".to_string())),
        ];
        let (answers, silent) = answered(gathered, &probers);
        assert!(answers.is_empty());
        assert_eq!(
            silent,
            [
                "node-1 (pod ds-1): refused (503)",
                "node-2 (pod ds-0): no answer within 3 s"
            ]
        );
        let (answers, silent) = answered(vec![(1, Ok(recent))], &probers);
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0].0, 1);
        assert!(silent.is_empty());
    }
}
