//! Pinger validation: the operator writes each Pinger's status, so a target
//! the schema cannot reject (an address like `10.0.0.300`, a port out of
//! range) shows as `Ready=False` with reason `InvalidSpec` and a Warning
//! Event on the Pinger. The pinger itself skips such targets and keeps
//! probing the others.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use combo_api::{Pinger, PingerStatus};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::Client;

use crate::core::status::{ready_condition, ready_of};
use crate::metrics::registry::Metrics;

/// Reason of `Ready=True`: every target parses.
pub const REASON_TARGETS_VALID: &str = "TargetsValid";
/// Reason of `Ready=False` (docs/operator.md, "Pinger status").
pub const REASON_INVALID_SPEC: &str = "InvalidSpec";
/// Reason of `Ready=False` when the Pinger would probe nothing at all.
pub const REASON_NO_TARGETS: &str = "NoTargets";

/// What the Pinger controller shares.
pub struct PingerContext {
    /// API client.
    pub client: Client,
    /// Publishes Events on Pingers.
    pub recorder: Recorder,
    /// The operator's metrics.
    pub metrics: Arc<Metrics>,
}

/// The status `pinger` should have. Pure.
pub fn compute(pinger: &Pinger, now: DateTime<Utc>) -> PingerStatus {
    let bad = pinger.spec.invalid_targets();
    let targets = pinger.spec.ping.len()
        + pinger.spec.tcp_ping.len()
        + pinger.spec.udp_ping.len()
        + pinger.spec.dns.len();
    let probes_nothing = targets == 0 && !pinger.spec.peers && !pinger.spec.gateway;
    let (status, reason, message) = if bad.is_empty() && probes_nothing {
        (
            "False",
            REASON_NO_TARGETS,
            "nothing to probe: ping, tcpPing, udpPing and dns are empty, and peers and gateway are off"
                .to_string(),
        )
    } else if bad.is_empty() {
        (
            "True",
            REASON_TARGETS_VALID,
            format!("{targets} target(s) valid"),
        )
    } else {
        (
            "False",
            REASON_INVALID_SPEC,
            format!(
                "{} invalid entr{} (skipped by the pinger, the others are probed): {}",
                bad.len(),
                if bad.len() == 1 { "y" } else { "ies" },
                bad.join("; ")
            ),
        )
    };
    let generation = pinger.metadata.generation.unwrap_or_default();
    let previous = pinger.status.as_ref().map(|s| s.conditions.as_slice());
    let mut short = targets.to_string();
    if pinger.spec.peers {
        short.push_str("+peers");
    }
    if pinger.spec.gateway {
        short.push_str("+gateway");
    }
    PingerStatus {
        observed_generation: generation,
        conditions: vec![ready_condition(
            previous, status, reason, message, generation, now,
        )],
        targets: short,
    }
}

/// Why the Debugger's Pinger `pinger` is not Ready, as the Debugger's
/// `Ready` message says it (`None` while it is Ready or has no status
/// yet). Pure.
pub fn not_ready(pinger: &Pinger) -> Option<String> {
    let ready = ready_of(&pinger.status.as_ref()?.conditions)?;
    (ready.status == "False").then(|| {
        format!(
            "pinger {:?} is not Ready ({}): {}; the runner runs, the pinger probes {}",
            pinger.metadata.name.as_deref().unwrap_or_default(),
            ready.reason,
            ready.message,
            if ready.reason == REASON_NO_TARGETS {
                "nothing"
            } else {
                "the valid targets"
            }
        )
    })
}

/// Whether `new` reports an invalid spec that the Pinger's current status
/// does not (the moment to record the Warning Event). Pure.
pub fn newly_invalid(old: Option<&PingerStatus>, new: &PingerStatus) -> bool {
    let ready =
        |s: &PingerStatus| ready_of(&s.conditions).map(|c| (c.reason.clone(), c.message.clone()));
    let new_ready = ready(new);
    new_ready
        .as_ref()
        .is_some_and(|(r, _)| r == REASON_INVALID_SPEC)
        && old.and_then(ready) != new_ready
}

/// Writes the status of one Pinger when it differs.
pub async fn reconcile(
    pinger: Arc<Pinger>,
    ctx: Arc<PingerContext>,
) -> Result<Action, kube::Error> {
    let new = compute(&pinger, Utc::now());
    if pinger.status.as_ref() == Some(&new) {
        return Ok(Action::await_change());
    }
    if newly_invalid(pinger.status.as_ref(), &new) {
        let event = Event {
            type_: EventType::Warning,
            reason: REASON_INVALID_SPEC.into(),
            note: Some(new.conditions[0].message.chars().take(1000).collect()),
            action: "Validate".into(),
            secondary: None,
        };
        crate::edge::events::publish(&ctx.recorder, pinger.as_ref(), event).await;
    }
    crate::edge::apply::status(
        &ctx.client,
        &ctx.metrics,
        pinger.as_ref(),
        &new,
        "PingerStatus",
    )
    .await?;
    Ok(Action::await_change())
}

/// Transient failures retry after a pause.
pub fn error_policy(_: Arc<Pinger>, err: &kube::Error, ctx: Arc<PingerContext>) -> Action {
    tracing::warn!(error = %err, "writing Pinger status failed");
    ctx.metrics.error("pinger_status");
    Action::requeue(std::time::Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_testkit::fixtures::{pinger, PingerBuilder};

    /// Pinger `mesh` of `ops` at generation 3.
    fn mesh() -> PingerBuilder {
        pinger("ops", "mesh").generation(3)
    }

    #[test]
    fn valid_targets_make_the_pinger_ready() {
        let s = compute(
            &mesh()
                .ping(&["10.0.0.1", "fd00::1"])
                .tcp_ping(&["10.0.0.1:80"])
                .build(),
            Utc::now(),
        );
        let c = &s.conditions[0];
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "TargetsValid")
        );
        assert_eq!(c.message, "3 target(s) valid");
        assert_eq!(s.observed_generation, 3);
    }

    #[test]
    fn each_bad_target_is_named_in_the_invalid_spec_condition() {
        let s = compute(
            &mesh()
                .ping(&["10.0.0.300", "10.0.0.1"])
                .tcp_ping(&["10.0.0.1:99999"])
                .build(),
            Utc::now(),
        );
        let c = &s.conditions[0];
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "InvalidSpec")
        );
        assert!(c.message.starts_with("2 invalid entries"), "{}", c.message);
        assert!(c.message.contains("10.0.0.300"), "{}", c.message);
        assert!(c.message.contains("99999"), "{}", c.message);
    }

    #[test]
    fn a_pinger_that_would_probe_nothing_is_not_ready() {
        let mut p = mesh().build();
        p.spec.peers = false;
        let c = compute(&p, Utc::now()).conditions[0].clone();
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "NoTargets")
        );
        p.spec.peers = true;
        let c = compute(&p, Utc::now()).conditions[0].clone();
        assert_eq!(c.reason, "TargetsValid", "its peers are probed");
    }

    #[test]
    fn the_targets_column_counts_the_listed_targets_and_names_peers_and_gateway() {
        let mut p = mesh()
            .ping(&["10.0.0.1", "fd00::1"])
            .tcp_ping(&["10.0.0.1:80"])
            .build();
        p.spec.peers = false;
        assert_eq!(compute(&p, Utc::now()).targets, "3");
        p.spec.peers = true;
        p.spec.gateway = true;
        assert_eq!(compute(&p, Utc::now()).targets, "3+peers+gateway");
        let mut idle = mesh().build();
        idle.spec.peers = false;
        assert_eq!(compute(&idle, Utc::now()).targets, "0");
    }

    #[test]
    fn a_debugger_learns_why_its_pinger_is_not_ready_once_it_has_a_status() {
        let mut idle = mesh().build();
        idle.spec.peers = false;
        assert_eq!(not_ready(&idle), None, "no status yet: nothing known");
        idle.status = Some(compute(&idle, Utc::now()));
        let why = not_ready(&idle).expect("NoTargets");
        assert!(
            why.starts_with("pinger \"mesh\" is not Ready (NoTargets): nothing to probe"),
            "{why}"
        );
        assert!(why.ends_with("the pinger probes nothing"), "{why}");
        let mut fine = mesh().ping(&["10.0.0.1"]).build();
        fine.status = Some(compute(&fine, Utc::now()));
        assert_eq!(not_ready(&fine), None);
    }

    #[test]
    fn the_event_is_recorded_once_per_new_complaint() {
        let bad = mesh().ping(&["10.0.0.300"]).build();
        let first = compute(&bad, Utc::now());
        assert!(newly_invalid(None, &first));
        assert!(!newly_invalid(Some(&first), &compute(&bad, Utc::now())));
        let worse = compute(&mesh().ping(&["10.0.0.300", "x..y"]).build(), Utc::now());
        assert!(newly_invalid(Some(&first), &worse));
        let fixed = compute(&mesh().ping(&["10.0.0.1"]).build(), Utc::now());
        assert!(!newly_invalid(Some(&first), &fixed));
    }

    #[test]
    fn an_unchanged_condition_keeps_its_transition_time() {
        let mut p = mesh().ping(&["10.0.0.1"]).build();
        let t0 = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .to_utc();
        p.status = Some(compute(&p, t0));
        let again = compute(&p, Utc::now());
        assert_eq!(Some(&again), p.status.as_ref());
    }
}
