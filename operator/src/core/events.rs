//! Events on Debuggers (docs/reference.md, "Events"): `WorkloadCreated`, `WorkloadUpdated`,
//! `InvalidSpec`, `PingerNotFound`. Repeats within a few minutes update one
//! Event series (kube's Recorder).

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use combo_api::RunAt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType};

use crate::core::change::Change;
use crate::core::validate::Invalid;

/// Reason of the Event after a workload was created.
pub const WORKLOAD_CREATED: &str = "WorkloadCreated";
/// Reason of the Event after a workload was updated or replaced.
pub const WORKLOAD_UPDATED: &str = "WorkloadUpdated";

/// The Event to publish for a workload change, if any, naming the workload
/// as its related object. Pure.
///
/// The Recorder folds repeats into one Event series by reason and related
/// object, keeping the first note: with the workload as the related object,
/// a Pod created after a DaemonSet (a `workloadType` switch) is an Event of
/// its own, not a repeat of "created DaemonSet".
pub fn for_change(change: Change, kind: &str, namespace: &str, name: &str) -> Option<Event> {
    let (reason, note) = match change {
        Change::Created => (WORKLOAD_CREATED, format!("created {kind} {name}")),
        Change::Updated => (WORKLOAD_UPDATED, format!("updated {kind} {name}")),
        Change::Replacing => (
            WORKLOAD_UPDATED,
            format!("replacing {kind} {name}: its spec changed"),
        ),
        Change::Unchanged | Change::Waiting => return None,
    };
    Some(Event {
        type_: EventType::Normal,
        reason: reason.into(),
        note: Some(note),
        action: "Reconcile".into(),
        secondary: Some(ObjectReference {
            api_version: Some(if kind == "DaemonSet" { "apps/v1" } else { "v1" }.into()),
            kind: Some(kind.into()),
            namespace: Some(namespace.into()),
            name: Some(name.into()),
            ..ObjectReference::default()
        }),
    })
}

/// The API server refuses an Event whose note is longer than this, in bytes.
pub const NOTE_MAX: usize = 1024;

/// `text` cut to [`NOTE_MAX`] bytes at a character boundary, ending in `…`
/// when cut. A spec can quote values of many kilobytes; a refused Event
/// would leave the problem unreported. Pure.
pub fn note(text: &str) -> String {
    if text.len() <= NOTE_MAX {
        return text.to_string();
    }
    let mut end = NOTE_MAX - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Reason of the Warning Event of a schedule whose next run is over a year
/// away.
pub const EVENT_RUN_AT_DISTANT: &str = "RunAtDistant";

/// How far away a cron `runAt`'s next run may be without a warning: a
/// yearly schedule, even across 29 February, fires within 366 days.
pub const DISTANT: Duration = Duration::days(366);

/// The Warning Event of a cron `runAt` whose next run after `now` is more
/// than [`DISTANT`] away (`0 0 29 2 *` in a year after a leap year): valid,
/// but likely not what was meant. Pure.
pub fn for_distant(run_at: &RunAt, now: DateTime<Utc>) -> Option<Event> {
    let RunAt::Cron(_, expression) = run_at else {
        return None;
    };
    let next = run_at.next_after(now)?;
    (next - now > DISTANT).then(|| Event {
        type_: EventType::Warning,
        reason: EVENT_RUN_AT_DISTANT.into(),
        note: Some(format!(
            "runAt {expression:?} runs next at {}, {} days from now",
            next.to_rfc3339_opts(SecondsFormat::Secs, true),
            (next - now).num_days()
        )),
        action: "Validate".into(),
        secondary: None,
    })
}

/// The Warning Event of an invalid spec. Pure.
pub fn for_invalid(invalid: &Invalid) -> Event {
    Event {
        type_: EventType::Warning,
        reason: invalid.reason().into(),
        note: Some(note(&invalid.to_string())),
        action: match invalid {
            Invalid::WorkloadRefused(_) => "Apply",
            _ => "Validate",
        }
        .into(),
        secondary: None,
    }
}

/// The Warning Event of a Debugger whose DaemonSet's pods are refused;
/// `message` is its `Ready` condition's. Pure.
pub fn for_refused_pods(message: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: crate::core::status::REASON_WORKLOAD_REFUSED.into(),
        note: Some(note(message)),
        action: "Create".into(),
        secondary: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_changes_map_to_spec_reasons() {
        let created = for_change(Change::Created, "DaemonSet", "ops", "x").unwrap();
        assert_eq!(created.reason, "WorkloadCreated");
        assert_eq!(created.type_, EventType::Normal);
        let replaced = for_change(Change::Replacing, "Pod", "ops", "x").unwrap();
        assert_eq!(replaced.reason, "WorkloadUpdated");
        assert!(for_change(Change::Unchanged, "Pod", "ops", "x").is_none());
    }

    #[test]
    fn a_pod_created_after_a_daemonset_is_not_a_repeat_of_its_event() {
        let ds = for_change(Change::Created, "DaemonSet", "ops", "x").unwrap();
        let pod = for_change(Change::Created, "Pod", "ops", "x").unwrap();
        assert_eq!(ds.reason, pod.reason);
        // The Recorder's series key holds the related object, not the note.
        assert_ne!(ds.secondary, pod.secondary);
        let related = pod.secondary.unwrap();
        assert_eq!(
            (related.kind.as_deref(), related.api_version.as_deref()),
            (Some("Pod"), Some("v1"))
        );
        assert_eq!(pod.note.as_deref(), Some("created Pod x"));
    }

    #[test]
    fn a_schedule_next_running_over_a_year_away_is_a_warning_and_a_yearly_one_is_not() {
        let now: DateTime<Utc> = "2026-11-27T17:00:00Z".parse().unwrap();
        let leap = RunAt::parse("0 0 29 2 *").unwrap();
        let e = for_distant(&leap, now).expect("29 February 2028 is 458 days away");
        assert_eq!(e.type_, EventType::Warning);
        assert_eq!(e.reason, "RunAtDistant");
        assert_eq!(
            e.note.as_deref(),
            Some("runAt \"0 0 29 2 *\" runs next at 2028-02-29T00:00:00Z, 458 days from now")
        );
        for fine in ["@yearly", "0 0 1 1 *", "*/5 * * * *"] {
            let r = RunAt::parse(fine).unwrap();
            assert!(for_distant(&r, now).is_none(), "{fine}");
        }
        let just_after_new_year: DateTime<Utc> = "2027-01-01T00:00:01Z".parse().unwrap();
        let yearly = RunAt::parse("@yearly").unwrap();
        assert!(for_distant(&yearly, just_after_new_year).is_none());
        let once = RunAt::parse("2030-01-01T00:00:00Z").unwrap();
        assert!(for_distant(&once, now).is_none(), "a time is as meant");
    }

    #[test]
    fn invalid_specs_are_warnings_with_their_reason() {
        let e = for_invalid(&Invalid::PingerNotFound("no mesh".into()));
        assert_eq!(e.type_, EventType::Warning);
        assert_eq!(e.reason, "PingerNotFound");
        assert_eq!(e.note.as_deref(), Some("no mesh"));
    }

    #[test]
    fn a_long_invalid_spec_message_is_cut_to_what_the_api_server_takes() {
        let long = format!("configMap {:?} is not a valid name", "ü".repeat(3000));
        let e = for_invalid(&Invalid::InvalidSpec(long.clone()));
        let note = e.note.unwrap();
        assert!(note.len() <= NOTE_MAX, "{} bytes", note.len());
        assert!(note.len() > NOTE_MAX - 4, "{} bytes", note.len());
        assert!(note.ends_with('…'));
        assert!(long.starts_with(note.trim_end_matches('…')));
    }
}
