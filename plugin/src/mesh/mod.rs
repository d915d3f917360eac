//! `kubectl combo mesh` (docs/pinger.md, "The mesh view"): the paths of a
//! Debugger's pingers, prober node to target, with loss and RTT of their
//! last minutes, failing paths first, and what they say together: a node,
//! a target or a path at fault. [`paths`] (the table), [`classify`] (the
//! faults), [`view`](mod@self::view) (the document and the faults' lines) and [`html`]
//! (the page) are pure; [`gather`] asks the pingers and [`net`] reads the
//! reports of the nodes at fault; [`run`] reads the Debugger, its Pinger
//! and its pods, then prints.

pub mod classify;
pub mod gather;
pub mod html;
pub mod net;
pub mod paths;
pub mod view;

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use combo_api::recent::Recent;
use combo_api::Pinger;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};

use crate::cli::Output;
use crate::cluster::{api_error, debugger, debugger_pods};
use crate::errors::NotFound;
use crate::{output, table};
use classify::Fault;
use paths::{Path, Prober};
pub use view::{view, FaultView, Nets, PathView, View};

/// Pingers without a summary named on stderr; the others are counted.
const SILENT_NAMED: usize = 10;

/// The paths of Debugger `ns/name`'s pingers (docs/pinger.md#the-mesh-view):
/// one read of the Debugger and of its Pinger, one list of its
/// pods, then one proxy GET per pod (bounded by [`gather::LIMITS`]), and
/// when a node is at fault one paged list of the Debugger's reports; with
/// `page_file`, the page written there too; with `format`, the [`View`]
/// as one document instead of the faults and the table.
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
    let faults = classify::classify(&paths);
    let nets = nets(&client, ns, name, &faults).await;
    let window = answers
        .first()
        .map_or(combo_api::recent::WINDOW_MINUTES * 60, |(_, r)| {
            r.window_seconds
        });
    let tally = paths::tally(&paths, window, answers.len(), probers.len());
    match format {
        Some(format) => {
            let counts = (probers.len(), answers.len());
            let v = view(
                (ns, name),
                &paths,
                &faults,
                &nets,
                all,
                window,
                counts,
                &silent,
            );
            print!("{}", output::document(format, &v));
        }
        None => print(&paths, &faults, &nets, all, &tally, &silent),
    }
    if let Some(file) = page_file {
        let title = format!("{ns}/{name}");
        let page = html::page_of(&title, &paths, &faults, &nets, &silent, &tally);
        std::fs::write(&file, page).with_context(|| format!("writing {}", file.display()))?;
        eprintln!("wrote {}", file.display());
    }
    if answers.is_empty() {
        bail!("no pinger of Debugger {ns}/{name} answered (pods/proxy on port {port}; see the lines above)");
    }
    Ok(())
}

/// The `net` of each node-side fault's node, from one paged list of the
/// Debugger's reports; no request without a node-side fault.
async fn nets(client: &Client, ns: &str, name: &str, faults: &[Fault]) -> Nets {
    let nodes: Vec<&str> = faults
        .iter()
        .filter_map(|f| match f {
            Fault::Node { node, .. } => Some(node.as_str()),
            _ => None,
        })
        .collect();
    if nodes.is_empty() {
        return Nets::new();
    }
    let reports = net::reports(client, ns, name).await;
    nodes
        .into_iter()
        .map(|node| (node.to_string(), net::net_of(&reports, name, node)))
        .collect()
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

/// The faults, each with the lines under it, then the table (failing and
/// lossy paths, or all with `all`) and `tally` on stdout; the first
/// pingers without a summary on stderr.
fn print(paths: &[Path], faults: &[Fault], nets: &Nets, all: bool, tally: &str, silent: &[String]) {
    print!("{}", view::text(paths, faults, nets));
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
