use std::time::Duration;

use super::*;
use crate::core::images::Images;
use chrono::TimeZone;
use combo_api::RunAt;
use combo_testkit::fixtures::{debugger, DebuggerBuilder};
use kube::runtime::events::EventType;

use crate::core::validate::{Invalid, Rejected, Valid};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 22, 5, 30, 0).unwrap()
}

/// Debugger `a` of `ops` at generation 2.
fn a() -> DebuggerBuilder {
    debugger("ops", "a").generation(2)
}

fn valid(run_at: &str) -> Verdict {
    let d = debugger("ops", "d").build();
    Ok(Valid::of(
        &d,
        RunAt::parse(run_at).unwrap(),
        None,
        &Images::default(),
    ))
}

fn inputs<'a>(d: &'a Debugger, verdict: &'a Verdict) -> Inputs<'a> {
    Inputs {
        dbg: d,
        written: None,
        verdict,
        converged: Converged::default(),
        counts: None,
        runs: RunSummary::default(),
        marks: Default::default(),
        pinger_not_ready: None,
        waiting: None,
        refused: None,
        run_now_served: 0,
        now: now(),
    }
}

#[test]
fn a_valid_debugger_is_paced_and_looks_again_a_second_after_its_next_run() {
    let d = a().run_at("0 */6 * * *").build();
    let verdict = valid("0 */6 * * *");
    let p = decide(inputs(&d, &verdict));
    assert!(p.paced && p.status_changed && p.events.is_empty());
    assert_eq!(
        p.status.next_run_at.as_deref(),
        Some("2026-11-22T06:00:00Z")
    );
    assert_eq!(p.next, Action::requeue(Duration::from_secs(30 * 60 + 1)));
}

#[test]
fn an_invalid_debugger_gets_its_warning_once_and_keeps_its_next_run() {
    let d = a().run_at("0 */6 * * *").build();
    let verdict: Verdict = Err(Rejected {
        invalid: Invalid::PingerNotFound("no mesh".into()),
        run_at: RunAt::parse("0 */6 * * *").ok(),
    });
    let p = decide(inputs(&d, &verdict));
    assert!(!p.paced, "an invalid spec's status goes out at once");
    assert_eq!(p.events.len(), 1);
    assert_eq!(p.events[0].type_, EventType::Warning);
    assert_eq!(p.events[0].reason, "PingerNotFound");
    // Its old workload still runs on that schedule.
    assert_eq!(
        p.status.next_run_at.as_deref(),
        Some("2026-11-22T06:00:00Z")
    );
    // Once that status is written, the same verdict is no news.
    let again = decide(Inputs {
        written: Some(p.status.clone()),
        ..inputs(&d, &verdict)
    });
    assert!(again.events.is_empty() && !again.status_changed);
}

#[test]
fn a_written_status_the_cache_does_not_show_yet_is_not_written_again() {
    let d = a().build();
    let verdict = valid("");
    let first = decide(inputs(&d, &verdict));
    assert!(first.status_changed);
    let second = decide(Inputs {
        written: Some(first.status.clone()),
        ..inputs(&d, &verdict)
    });
    assert!(!second.status_changed);
    assert_eq!(second.next, Action::await_change(), "nothing scheduled");
}

#[test]
fn the_workload_steps_event_summary_and_requeue_pass_through() {
    let d = a().build();
    let verdict = valid("");
    let cm = ConfigMap::default();
    let converged = Converged {
        action: Some(Action::requeue(Duration::from_secs(1))),
        event: crate::core::events::for_change(
            crate::core::change::Change::Created,
            "Pod",
            "ops",
            "a",
        ),
        summary: Some((cm, SummaryWrite::Create)),
    };
    let p = decide(Inputs {
        converged,
        ..inputs(&d, &verdict)
    });
    assert_eq!(p.events.len(), 1);
    assert_eq!(p.events[0].reason, "WorkloadCreated");
    assert!(matches!(p.summary, Some((_, SummaryWrite::Create))));
    assert_eq!(p.next, Action::requeue(Duration::from_secs(1)));
}

#[test]
fn an_invalid_spec_is_reported_once_per_generation_and_message() {
    let invalid = Invalid::InvalidSpec("bad".into());
    let d = a().build();
    let first = status::compute(
        &d,
        Some(&invalid),
        None,
        &Default::default(),
        None,
        now(),
        None,
    );
    assert!(newly_reported(None, &first));
    assert!(!newly_reported(Some(&first), &first));
    let other = Invalid::InvalidSpec("worse".into());
    let second = status::compute(
        &d,
        Some(&other),
        None,
        &Default::default(),
        None,
        now(),
        None,
    );
    assert!(newly_reported(Some(&first), &second));
}

#[test]
fn a_missed_runs_deadline_before_the_next_run_wakes_the_debugger_and_conditions_join_the_status() {
    let d = a().run_at("0 */6 * * *").build();
    let verdict = valid("0 */6 * * *");
    let marks = DebuggerMarks {
        runs_missed: Some((true, "RunsMissed".into(), "1 node has not reported".into())),
        recheck_at: Some(now() + chrono::Duration::minutes(10)),
        ..DebuggerMarks::default()
    };
    let p = decide(Inputs {
        marks,
        ..inputs(&d, &verdict)
    });
    assert_eq!(p.next, Action::requeue(Duration::from_secs(600)));
    let types: Vec<&str> = p
        .status
        .conditions
        .iter()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(types, ["Ready", "RunsMissed"]);
    // Without a recheck, the next run (06:00) plus a second.
    let p = decide(inputs(&d, &verdict));
    assert_eq!(p.next, Action::requeue(Duration::from_secs(1801)));
}

#[test]
fn a_schedule_running_next_over_a_year_away_warns_once_per_generation() {
    let d = a().run_at("0 0 29 2 *").build();
    let verdict = valid("0 0 29 2 *");
    let p = decide(inputs(&d, &verdict));
    assert!(p.paced, "still valid: it runs, once");
    let reasons: Vec<&str> = p.events.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(reasons, ["RunAtDistant"]);
    let again = decide(Inputs {
        written: Some(p.status.clone()),
        ..inputs(&d, &verdict)
    });
    assert!(again.events.is_empty(), "the generation was seen");
    let near = a().run_at("0 0 1 1 *").build();
    assert!(decide(inputs(&near, &valid("0 0 1 1 *"))).events.is_empty());
}

#[test]
fn an_invalid_spec_waits_for_a_change_whatever_its_run_at() {
    let d = a().run_at("0 */6 * * *").build();
    let verdict: Verdict = Err(Rejected {
        invalid: Invalid::ConfigMapNotFound("configMap \"s\": not found".into()),
        run_at: RunAt::parse("0 */6 * * *").ok(),
    });
    let p = decide(inputs(&d, &verdict));
    assert!(!p.paced);
    assert_eq!(
        p.next,
        Action::await_change(),
        "only a held write (see write) makes it look again"
    );
}

#[test]
fn a_debugger_whose_pinger_is_not_ready_is_not_ready_though_its_pods_are() {
    let d = a().build();
    let verdict = valid("");
    let counts = PodCounts {
        desired: 2,
        ready: 2,
        ..PodCounts::default()
    };
    let why = "pinger \"mesh\" is not Ready (NoTargets): nothing to probe";
    let p = decide(Inputs {
        counts: Some(counts),
        pinger_not_ready: Some(why.into()),
        ..inputs(&d, &verdict)
    });
    let ready = status::ready_of(&p.status.conditions).unwrap();
    assert_eq!(
        (
            ready.status.as_str(),
            ready.reason.as_str(),
            ready.message.as_str()
        ),
        ("False", "PingerNotReady", why)
    );
    assert_eq!(p.status.ready, "2/2", "the pods are counted as they are");
    let fine = decide(Inputs {
        counts: Some(counts),
        ..inputs(&d, &verdict)
    });
    assert_eq!(
        status::ready_of(&fine.status.conditions).unwrap().reason,
        "WorkloadReady"
    );
}

#[test]
fn what_the_pods_wait_on_is_in_the_message_of_a_debugger_whose_pods_are_not_ready() {
    let d = a().build();
    let verdict = valid("");
    let waiting = "pods waiting: ImagePullBackOff on 2 pods; pod d-a, container runner: ImagePullBackOff: Back-off pulling image \"reg/runner:1\"";
    let not_ready = decide(Inputs {
        counts: Some(PodCounts {
            desired: 2,
            ready: 0,
            ..PodCounts::default()
        }),
        waiting: Some(waiting.into()),
        ..inputs(&d, &verdict)
    });
    let ready = status::ready_of(&not_ready.status.conditions).unwrap();
    assert_eq!(ready.reason, "WorkloadNotReady");
    assert_eq!(ready.message, format!("0/2 pods ready; {waiting}"));
    // Pods counted Ready say so alone; an invalid spec says what is wrong.
    let fine = decide(Inputs {
        counts: Some(PodCounts {
            desired: 2,
            ready: 2,
            ..PodCounts::default()
        }),
        waiting: Some(waiting.into()),
        ..inputs(&d, &verdict)
    });
    assert_eq!(
        status::ready_of(&fine.status.conditions).unwrap().message,
        "2/2 pods ready"
    );
}

#[test]
fn refused_daemonset_pods_make_the_debugger_refused_with_the_fix_and_one_event() {
    let mut d = a().build();
    let verdict = valid("");
    let refusal = "Error creating: pods \"a-x7k2p\" is forbidden: violates PodSecurity \"baseline:latest\": privileged (container \"runner\" must not set securityContext.privileged=true)";
    let missing = PodCounts {
        desired: 2,
        ready: 0,
        ..PodCounts::default()
    };
    let first = decide(Inputs {
        counts: Some(missing),
        refused: Some(refusal.into()),
        ..inputs(&d, &verdict)
    });
    let ready = status::ready_of(&first.status.conditions).unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "WorkloadRefused")
    );
    assert!(
        ready.message.starts_with(
            "0/2 pods ready; the API server refuses the DaemonSet's pods: Error creating"
        ),
        "{}",
        ready.message
    );
    assert!(
        ready.message.ends_with("label its namespace pod-security.kubernetes.io/enforce=privileged, or turn enableSys and hostNetwork off"),
        "the message ends with the fix: {}",
        ready.message
    );
    let warnings: Vec<_> = first
        .events
        .iter()
        .filter(|e| e.reason == "WorkloadRefused")
        .collect();
    assert_eq!(warnings.len(), 1, "one WorkloadRefused Event");
    assert_eq!(warnings[0].type_, EventType::Warning);

    // The DaemonSet controller's next try names another pod: the message
    // follows, the Event is not repeated and the transition time stays.
    d.status = Some(first.status.clone());
    let again = decide(Inputs {
        counts: Some(missing),
        refused: Some(refusal.replace("a-x7k2p", "a-q9w3e")),
        now: now() + chrono::Duration::seconds(40),
        ..inputs(&d, &verdict)
    });
    let ready_again = status::ready_of(&again.status.conditions).unwrap();
    assert!(ready_again.message.contains("a-q9w3e"));
    assert_eq!(ready_again.last_transition_time, ready.last_transition_time);
    assert!(again.events.iter().all(|e| e.reason != "WorkloadRefused"));

    // A refusal is no reason once the pods are Ready, and other refusals
    // carry no PodSecurity fix.
    let fine = decide(Inputs {
        counts: Some(PodCounts {
            desired: 2,
            ready: 2,
            ..PodCounts::default()
        }),
        refused: Some(refusal.into()),
        ..inputs(&d, &verdict)
    });
    assert_eq!(
        status::ready_of(&fine.status.conditions).unwrap().reason,
        "WorkloadReady"
    );
    let quota = decide(Inputs {
        counts: Some(missing),
        refused: Some("Error creating: pods \"a-1\" is forbidden: exceeded quota: no-pods".into()),
        ..inputs(&a().build(), &verdict)
    });
    let ready = status::ready_of(&quota.status.conditions).unwrap();
    assert!(
        ready.message.ends_with("exceeded quota: no-pods"),
        "{}",
        ready.message
    );
}

#[test]
fn the_refused_reason_is_the_one_a_refused_workload_write_has() {
    assert_eq!(
        Invalid::WorkloadRefused(String::new()).reason(),
        status::REASON_WORKLOAD_REFUSED
    );
}
