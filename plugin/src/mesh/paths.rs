//! The paths of a Debugger's pingers, prober node to target, with loss and
//! RTT of their last minutes, failing paths first; the rows of the table
//! and its closing line. Pure: the gathering is in [`super::gather`], the
//! page in [`super::html`].

use std::cmp::Ordering;
use std::collections::BTreeMap;

use combo_api::recent::Recent;

/// A pod of the Debugger whose pinger is asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prober {
    /// The pod.
    pub pod: String,
    /// Its node.
    pub node: String,
    /// Its addresses: a target with one of them is this node.
    pub ips: Vec<String>,
}

/// How a path did in the window, worst first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Health {
    /// Its last round failed.
    Failing,
    /// Its last round passed, but probes were lost in the window.
    Lossy,
    /// No probe lost.
    Ok,
    /// No probe sent in the window yet.
    Idle,
}

impl Health {
    /// The word printed for it.
    pub fn word(self) -> &'static str {
        match self {
            Health::Failing => "FAIL",
            Health::Lossy => "lossy",
            Health::Ok => "ok",
            Health::Idle => "idle",
        }
    }
}

/// One prober's view of one target.
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    /// The prober's node.
    pub prober: String,
    /// The target's node when it is a pod of the Debugger, else the target
    /// as the pinger labels it.
    pub target: String,
    /// Whether `target` is a node of the Debugger.
    pub peer: bool,
    /// The address probed, when the peer's pod has more than one (dual
    /// stack): each of its addresses is a path of its own.
    pub address: Option<String>,
    /// `icmp`, `tcp`, `udp` or `dns`.
    pub kind: String,
    /// Probes sent in the window.
    pub sent: u64,
    /// Lost probes, in percent of those sent.
    pub loss: f64,
    /// Average and largest RTT of the answered probes, in milliseconds.
    pub rtt_avg_ms: Option<f64>,
    pub rtt_max_ms: Option<f64>,
    /// How it did.
    pub health: Health,
}

impl Path {
    /// The target as the table and the page name it: a dual-stack peer's
    /// node with the address probed, `node-3 [fd00::3]`.
    pub fn target_shown(&self) -> String {
        match &self.address {
            Some(ip) => format!("{} [{ip}]", self.target),
            None => self.target.clone(),
        }
    }
}

/// Every path of the pingers that answered: `answers` pairs an index into
/// `probers` with its pinger's summary. Failing paths first, then lossy
/// ones by loss, then by prober and target.
pub fn paths(probers: &[Prober], answers: &[(usize, Recent)]) -> Vec<Path> {
    let node_of: BTreeMap<&str, &Prober> = probers
        .iter()
        .flat_map(|p| p.ips.iter().map(move |ip| (ip.as_str(), p)))
        .collect();
    let mut out = Vec::new();
    for (i, recent) in answers {
        let Some(prober) = probers.get(*i) else {
            continue;
        };
        for t in &recent.targets {
            let node = (t.kind == "icmp")
                .then(|| node_of.get(t.target.as_str()))
                .flatten();
            let health = if t.sent == 0 {
                Health::Idle
            } else if !t.up {
                Health::Failing
            } else if t.lost > 0 {
                Health::Lossy
            } else {
                Health::Ok
            };
            out.push(Path {
                prober: prober.node.clone(),
                target: node.map_or_else(|| t.target.clone(), |n| n.node.clone()),
                peer: node.is_some(),
                address: node.filter(|n| n.ips.len() > 1).map(|_| t.target.clone()),
                kind: t.kind.clone(),
                sent: t.sent,
                loss: t.loss_percent(),
                rtt_avg_ms: t.rtt_avg_ms,
                rtt_max_ms: t.rtt_max_ms,
                health,
            });
        }
    }
    out.sort_by(order);
    out
}

fn order(a: &Path, b: &Path) -> Ordering {
    a.health
        .cmp(&b.health)
        .then(b.loss.total_cmp(&a.loss))
        .then_with(|| (&a.prober, &a.target, &a.kind).cmp(&(&b.prober, &b.target, &b.kind)))
}

/// Header of [`rows`].
pub const HEADER: [&str; 7] = [
    "PROBER", "TARGET", "KIND", "LOSS", "RTT-AVG", "RTT-MAX", "STATE",
];

/// Milliseconds with two decimals, or `-`.
pub fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}ms"))
}

/// The table rows of `paths`: the failing and lossy ones, or all of them
/// with `all`, in the order given.
pub fn rows(paths: &[Path], all: bool) -> Vec<Vec<String>> {
    paths
        .iter()
        .filter(|p| all || matches!(p.health, Health::Failing | Health::Lossy))
        .map(|p| {
            vec![
                p.prober.clone(),
                p.target_shown(),
                p.kind.clone(),
                format!("{:.0}%", p.loss),
                ms(p.rtt_avg_ms),
                ms(p.rtt_max_ms),
                p.health.word().into(),
            ]
        })
        .collect()
}

/// The closing line: how many paths, how many fail, over which window and
/// from how many of the pingers asked.
pub fn tally(paths: &[Path], window_seconds: u64, answered: usize, asked: usize) -> String {
    let count = |h| paths.iter().filter(|p| p.health == h).count();
    format!(
        "{} paths over the last {} minutes: {} failing, {} lossy, {} ok, {} idle; {answered} of {asked} pingers answered",
        paths.len(),
        window_seconds / 60,
        count(Health::Failing),
        count(Health::Lossy),
        count(Health::Ok),
        count(Health::Idle),
    )
}

#[cfg(test)]
#[path = "paths_tests.rs"]
pub(crate) mod tests;
