//! Publishes the gate's decisions as Events on the pinger's own pod.
//!
//! Each failure episode of a target gets its own [`Recorder`], so its repeats
//! fold into one Event series (kube's Recorder patches `series.count`), and a
//! new episode after a recovery starts a new Event.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::Client;

use crate::engine::Report;
use crate::events::{Decision, REASON_RECOVERED};
use crate::targets::Target;

/// Event note limit of the API server.
const NOTE_MAX: usize = 1024;

/// Publishes Events about targets on one pod.
pub struct Publisher {
    client: Client,
    reporter: Reporter,
    pod: ObjectReference,
    recorders: HashMap<Target, Recorder>,
}

impl Publisher {
    /// A publisher for Events on `pod` (namespace and name).
    pub fn new(client: Client, namespace: &str, pod: &str) -> Self {
        Publisher {
            client,
            reporter: Reporter {
                controller: combo_api::keys::BIN_PINGER.into(),
                instance: Some(pod.to_string()),
            },
            pod: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some(pod.to_string()),
                namespace: Some(namespace.to_string()),
                ..ObjectReference::default()
            },
            recorders: HashMap::new(),
        }
    }

    /// Sets the pod's UID once the watch has seen it.
    pub fn set_uid(&mut self, uid: String) {
        self.pod.uid = Some(uid);
    }

    /// Publishes the Event for `decision` in the background; a failure is
    /// logged and never blocks probing.
    pub fn publish(&mut self, decision: Decision, report: &Report) {
        let target = &report.target;
        if decision == Decision::Failed {
            self.recorders.remove(target);
        }
        let recorder = self
            .recorders
            .entry(target.clone())
            .or_insert_with(|| Recorder::new(self.client.clone(), self.reporter.clone()))
            .clone();
        let event = event(decision, report);
        let pod = self.pod.clone();
        let reason = event.reason.clone();
        let target = target.to_string();
        tokio::spawn(async move {
            match tokio::time::timeout(Duration::from_secs(10), recorder.publish(&event, &pod))
                .await
            {
                Ok(Ok(())) => tracing::info!(%target, %reason, "event published"),
                Ok(Err(e)) => tracing::warn!(%target, %reason, error = %e, "event not published"),
                Err(_) => {
                    tracing::warn!(%target, %reason, "event not published: API server timeout")
                }
            }
        });
    }

    /// Drops the state of a target no longer probed.
    pub fn forget(&mut self, target: &Target) {
        self.recorders.remove(target);
    }
}

/// The Event for a decision: reason as in docs/reference.md, "Events"; the note names the target,
/// loss and RTT.
pub fn event(decision: Decision, report: &Report) -> Event {
    let (type_, reason, note) = match decision {
        Decision::Failed | Decision::StillFailing => (
            EventType::Warning,
            report.target.kind.failure_reason(),
            format!(
                "{}: {}; {}",
                report.target,
                report.stats,
                report.stats.failure(report.limits).unwrap_or_default()
            ),
        ),
        Decision::Recovered => (
            EventType::Normal,
            REASON_RECOVERED,
            format!("{} passes again: {}", report.target, report.stats),
        ),
    };
    Event {
        type_,
        reason: reason.into(),
        note: Some(truncate(note, NOTE_MAX)),
        action: "Probe".into(),
        secondary: None,
    }
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max - 3;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::round::{evaluate, Outcome, Thresholds};
    use crate::targets::Kind;
    use combo_api::pinger::Host;

    fn report(kind: Kind, outcomes: Vec<Outcome>) -> Report {
        let limits = Thresholds::default();
        let target = Target {
            kind,
            host: Host::Name("db.example".into()),
            port: None,
        };
        Report {
            label: std::sync::Arc::new(target.label()),
            target,
            round: 3,
            started: std::time::SystemTime::UNIX_EPOCH,
            stats: evaluate(&outcomes, limits),
            outcomes,
            limits,
        }
    }

    #[test]
    fn failures_are_warnings_named_by_kind_and_recoveries_are_normal() {
        let r = report(Kind::Dns, vec![Outcome::Error("NXDOMAIN".into())]);
        let e = event(Decision::Failed, &r);
        assert_eq!(e.type_, EventType::Warning);
        assert_eq!(e.reason, "DnsLookupFailed");
        assert_eq!(
            e.note.as_deref(),
            Some("dns db.example: 0/1 received, loss 100%, rtt min/avg/max -; loss 100% > 0%, error: NXDOMAIN")
        );
        assert_eq!(
            event(Decision::Failed, &report(Kind::Icmp, vec![])).reason,
            "PingFailed"
        );
        assert_eq!(
            event(Decision::StillFailing, &report(Kind::Tcp, vec![])).reason,
            "TcpPingFailed"
        );
        assert_eq!(
            event(Decision::Failed, &report(Kind::Udp, vec![])).reason,
            "UdpPingFailed"
        );
        let ok = report(Kind::Icmp, vec![Outcome::Ok(Duration::from_millis(1))]);
        let e = event(Decision::Recovered, &ok);
        assert_eq!(e.type_, EventType::Normal);
        assert_eq!(e.reason, "ProbeRecovered");
        assert!(e
            .note
            .unwrap()
            .starts_with("icmp db.example passes again: 1/1 received"));
    }

    #[test]
    fn long_notes_are_cut_to_the_api_limit() {
        let s = truncate("é".repeat(1000), NOTE_MAX);
        assert!(s.len() <= NOTE_MAX);
        assert!(s.ends_with("..."));
    }
}
