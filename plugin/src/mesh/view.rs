//! What `kubectl combo mesh` shows besides the table: the `-o json|yaml`
//! document ([`View`]), and the lines that tell each fault of
//! [`super::classify`] (docs/pinger.md#node-target-or-path), which the
//! text output and the page share. Pure.

use std::collections::BTreeMap;

use serde::Serialize;

use super::classify::{Fault, Share};
use super::net::Net;
use super::paths::{Health, Path};

/// `kubectl combo mesh -o json|yaml`: the paths of one Debugger's pingers
/// and their faults (docs/reference.md, "`kubectl-combo`", field names).
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
    /// What the failing paths say together: node-side, then target, then
    /// path faults.
    pub faults: Vec<FaultView>,
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

/// One fault in a [`View`].
#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FaultView {
    /// `node-side`, `target` or `path`.
    pub fault: &'static str,
    /// The node (node-side), the target as the pinger labels it (target),
    /// `PROBER -> TARGET` (path).
    pub at: String,
    /// The kind probed (target and path faults), else null.
    pub kind: Option<String>,
    /// Of the node's targets, the failing and the probed (node-side), else
    /// null.
    pub as_prober: Option<Share>,
    /// Of the probers of the node or the target, the failing and the
    /// probing (node-side, target), else null.
    pub as_target: Option<Share>,
    /// Its failing paths.
    pub paths: Vec<PathRef>,
    /// The node's `net` items in the Debugger's latest run (node-side),
    /// else null.
    pub net: Option<Net>,
}

/// A failing path of a [`FaultView`].
#[derive(Serialize, Debug, PartialEq, Eq)]
pub struct PathRef {
    /// The prober's node.
    pub prober: String,
    /// The target, a dual-stack peer with the address probed.
    pub target: String,
    /// Its kind.
    pub kind: String,
}

/// The nodes' [`Net`] by node, for their node-side faults.
pub type Nets = BTreeMap<String, Net>;

/// The [`View`] of `paths` (failing and lossy ones, or all with `all`)
/// and their `faults`, with each node-side fault's `nets` entry.
#[allow(
    clippy::too_many_arguments,
    reason = "the parts of one answer, each named"
)]
pub fn view(
    (ns, name): (&str, &str),
    paths: &[Path],
    faults: &[Fault],
    nets: &Nets,
    all: bool,
    window_seconds: u64,
    (asked, answered): (usize, usize),
    silent: &[String],
) -> View {
    let shown = paths
        .iter()
        .filter(|p| all || matches!(p.health, Health::Failing | Health::Lossy))
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
        paths: shown,
        faults: faults.iter().map(|f| fault_view(paths, f, nets)).collect(),
        silent: silent.to_vec(),
    }
}

fn fault_view(paths: &[Path], fault: &Fault, nets: &Nets) -> FaultView {
    let refs = fault
        .paths()
        .iter()
        .map(|i| PathRef {
            prober: paths[*i].prober.clone(),
            target: paths[*i].target_shown(),
            kind: paths[*i].kind.clone(),
        })
        .collect();
    let mut v = FaultView {
        fault: fault.word(),
        at: String::new(),
        kind: None,
        as_prober: None,
        as_target: None,
        paths: refs,
        net: None,
    };
    match fault {
        Fault::Node {
            node,
            as_prober,
            as_target,
            ..
        } => {
            v.at = node.clone();
            v.as_prober = Some(*as_prober);
            v.as_target = Some(*as_target);
            v.net = nets.get(node).cloned();
        }
        Fault::Target {
            target,
            kind,
            probers,
            ..
        } => {
            v.at = target.clone();
            v.kind = Some(kind.clone());
            v.as_target = Some(*probers);
        }
        Fault::Path {
            prober,
            target,
            kind,
            ..
        } => {
            v.at = format!("{prober} -> {target}");
            v.kind = Some(kind.clone());
        }
    }
    v
}

/// Names listed after `lost:` and `lost by:` before `and N more`.
pub const NAMED: usize = 8;

/// The line of `fault` and the lines under it: for a node-side fault the
/// targets it loses, the probers that lose it and its `net` lines (from
/// `nets`, none when its reports were not read); for a target fault the
/// probers that lose it.
pub fn lines(paths: &[Path], fault: &Fault, nets: &Nets) -> (String, Vec<String>) {
    let of = |i: &usize| &paths[*i];
    let failing = |n: usize| format!("{n} failing path{}", if n == 1 { "" } else { "s" });
    match fault {
        Fault::Node {
            node,
            as_prober,
            as_target,
            paths: mine,
        } => {
            let mut sides = Vec::new();
            if as_prober.probed > 0 {
                sides.push(format!("as prober {}", share(*as_prober, "targets")));
            }
            if as_target.probed > 0 {
                sides.push(format!("as target {}", share(*as_target, "probers")));
            }
            let head = format!(
                "node-side fault at {node}: {}; {}",
                failing(mine.len()),
                sides.join(", ")
            );
            let lost = mine.iter().map(of).filter(|p| &p.prober == node);
            let lost_by = mine.iter().map(of).filter(|p| &p.prober != node);
            let mut under = Vec::new();
            under.extend(named("lost", lost.map(shown)));
            under.extend(named("lost by", lost_by.map(|p| p.prober.clone())));
            under.extend(nets.get(node).map(Net::lines).unwrap_or_default());
            (head, under)
        }
        Fault::Target {
            target,
            kind,
            probers,
            paths: mine,
        } => (
            format!(
                "target fault at {target} ({kind}): {}",
                share(*probers, "probers")
            ),
            named("lost by", mine.iter().map(|i| of(i).prober.clone()))
                .into_iter()
                .collect(),
        ),
        Fault::Path {
            prober,
            target,
            kind,
            paths: mine,
        } => {
            // One address of a dual-stack peer is named; both are the peer.
            let to = match mine.as_slice() {
                [one] => shown(of(one)),
                _ => format!("{target} ({kind})"),
            };
            (format!("path fault: {prober} -> {to}"), vec![])
        }
    }
}

/// Each fault's line and, indented, the lines under it, then an empty
/// line: what the text output prints before the table; nothing without a
/// fault.
pub fn text(paths: &[Path], faults: &[Fault], nets: &Nets) -> String {
    let mut out = String::new();
    for f in faults {
        let (head, under) = lines(paths, f, nets);
        out.push_str(&head);
        out.push('\n');
        for line in under {
            out.push_str("  ");
            out.push_str(&line);
            out.push('\n');
        }
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

fn share(s: Share, whom: &str) -> String {
    format!("{} of {} {whom} fail", s.failing, s.probed)
}

/// A path's target and kind: `node-3 [fd00::3] (icmp)`.
fn shown(p: &Path) -> String {
    format!("{} ({})", p.target_shown(), p.kind)
}

/// `what: a, b, c`, the first [`NAMED`] of `names` (repeats left out) and
/// `and N more`; nothing without a name.
fn named(what: &str, names: impl Iterator<Item = String>) -> Option<String> {
    let mut seen = Vec::new();
    for n in names {
        if !seen.contains(&n) {
            seen.push(n);
        }
    }
    if seen.is_empty() {
        return None;
    }
    let more = seen.len().saturating_sub(NAMED);
    let mut line = format!("{what}: {}", seen[..seen.len().min(NAMED)].join(", "));
    if more > 0 {
        line.push_str(&format!(" and {more} more"));
    }
    Some(line)
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
