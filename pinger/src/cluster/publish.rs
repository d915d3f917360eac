//! Publishes the gate's decisions as Events on the pinger's own pod.
//!
//! Each failure episode of a target gets its own [`Recorder`], so its repeats
//! fold into one Event series (kube's Recorder patches `series.count`), and a
//! new episode after a recovery starts a new Event.
//!
//! An Event the API server does not take (it is away, or times out) is tried
//! again, 1 s doubling to 60 s, until it is published or a newer decision
//! about the same target replaces it: failures seen while the API server was
//! away are recorded once it is back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use combo_api::retry::doubling;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::Client;

use crate::events::{Decision, REASON_RECOVERED};
use crate::round::Report;
use crate::targets::Target;

/// How long one attempt to publish an Event may take.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(10);
/// First and longest pause between attempts to publish an Event.
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);

/// Event note limit of the API server.
const NOTE_MAX: usize = 1024;

/// Publishes Events about targets on one pod.
pub struct Publisher {
    client: Client,
    reporter: Reporter,
    pod: ObjectReference,
    recorders: HashMap<Target, Recorder>,
    /// The newest decision's number per target: a retry of an older one
    /// stops when it is not the newest any more.
    newest: Arc<Mutex<HashMap<Target, u64>>>,
    next: u64,
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
            newest: Default::default(),
            next: 0,
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
        self.next += 1;
        let number = self.next;
        self.newest
            .lock()
            .expect("newest lock")
            .insert(target.clone(), number);
        let newest = self.newest.clone();
        let target = target.clone();
        tokio::spawn(async move {
            let still_newest =
                || newest.lock().expect("newest lock").get(&target).copied() == Some(number);
            let mut attempt = 0;
            loop {
                let reason = &event.reason;
                match tokio::time::timeout(PUBLISH_TIMEOUT, recorder.publish(&event, &pod)).await {
                    Ok(Ok(())) => {
                        tracing::info!(%target, %reason, retries = attempt, "event published");
                        return;
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(%target, %reason, error = %e, "event not published yet")
                    }
                    Err(_) => {
                        tracing::warn!(%target, %reason, "event not published yet: API server timeout")
                    }
                }
                attempt += 1;
                tokio::time::sleep(doubling(RETRY_FIRST, RETRY_MAX, attempt)).await;
                if !still_newest() {
                    tracing::info!(%target, %reason, "event dropped: a newer decision replaced it");
                    return;
                }
            }
        });
    }

    /// Drops the state of a target no longer probed (an Event still being
    /// retried for it stops).
    pub fn forget(&mut self, target: &Target) {
        self.recorders.remove(target);
        self.newest.lock().expect("newest lock").remove(target);
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

    fn event_json() -> String {
        serde_json::json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "solo.1", "namespace": "ops"},
            "eventTime": "2026-11-24T00:00:00.000000Z"})
        .to_string()
    }

    /// Lets the background publishing run for `secs` of paused time.
    async fn run_for(secs: u64) {
        for _ in 0..secs * 10 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_event_the_api_server_does_not_take_is_published_once_it_does() {
        use combo_testkit::stand_in::{Answer, StandIn};
        // Two answers the client cannot read (as from a proxy while the API
        // server is away), then the API server's.
        let (client, seen) = StandIn::scripted(vec![
            Answer::ok("<html>502</html>"),
            Answer::ok(""),
            Answer::ok(event_json()),
        ]);
        let mut p = Publisher::new(client, "ops", "solo");
        let r = report(Kind::Tcp, vec![Outcome::Error("refused".into())]);
        p.publish(Decision::Failed, &r);
        run_for(10).await;
        let seen = seen.uris();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen
            .iter()
            .all(|u| u.starts_with("/apis/events.k8s.io/v1/namespaces/ops/events")));
    }

    #[tokio::test(start_paused = true)]
    async fn a_retried_event_stops_when_a_newer_decision_replaces_it() {
        use combo_testkit::stand_in::{Answer, StandIn};
        let (client, seen) = StandIn::scripted(
            (0..3)
                .map(|_| Answer::ok("unreadable"))
                .chain([Answer::ok(event_json())])
                .collect(),
        );
        let mut p = Publisher::new(client, "ops", "solo");
        let r = report(Kind::Tcp, vec![Outcome::Error("refused".into())]);
        p.publish(Decision::Failed, &r);
        run_for(2).await;
        // The target recovers before the failure could be published: the
        // recovery is the news; the failure is not sent again.
        p.publish(Decision::Recovered, &r);
        run_for(120).await;
        let seen = seen.count();
        // failure, failure retry, recovery (unreadable), recovery (taken).
        assert_eq!(seen, 4);
    }

    #[tokio::test(start_paused = true)]
    async fn a_forgotten_target_leaves_no_recorder_and_no_newest_decision() {
        use combo_testkit::stand_in::StandIn;
        let (client, _) = StandIn::scripted(Vec::new());
        let mut p = Publisher::new(client, "ops", "solo");
        let gone = report(Kind::Tcp, vec![Outcome::Error("refused".into())]);
        let stays = report(Kind::Dns, vec![Outcome::Error("NXDOMAIN".into())]);
        p.publish(Decision::Failed, &gone);
        p.publish(Decision::Failed, &stays);
        p.forget(&gone.target);
        let newest = p.newest.lock().unwrap().clone();
        assert_eq!(
            p.recorders.keys().collect::<Vec<_>>(),
            [&stays.target],
            "recorders"
        );
        assert_eq!(newest.keys().collect::<Vec<_>>(), [&stays.target], "newest");
    }

    #[tokio::test(start_paused = true)]
    async fn an_event_still_retried_for_a_forgotten_target_stops() {
        use combo_testkit::stand_in::{Answer, StandIn};
        let (client, seen) =
            StandIn::scripted((0..100).map(|_| Answer::ok("unreadable")).collect());
        let mut p = Publisher::new(client, "ops", "solo");
        let r = report(Kind::Tcp, vec![Outcome::Error("refused".into())]);
        p.publish(Decision::Failed, &r);
        run_for(2).await;
        // The first attempt and the retry after 1 s.
        assert_eq!(seen.count(), 2);
        p.forget(&r.target);
        run_for(300).await;
        assert_eq!(seen.count(), 2, "no attempt after forget");
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
