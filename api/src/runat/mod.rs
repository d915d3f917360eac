//! `spec.runAt` parsing and run ids (docs/runner.md, "runAt").

use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};

/// A parsed `runAt`.
#[derive(Clone, Debug, PartialEq)]
pub enum RunAt {
    /// Empty: a DaemonSet stays idle, a Pod runs once at start.
    Empty,
    /// One run at this time (at once if it is past).
    Once(DateTime<Utc>),
    /// A cron schedule in UTC; the original expression is kept for messages.
    Cron(Box<::cron::Schedule>, String),
}

mod cron;
mod time;

/// Which form a rejected runAt value was taken for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// It starts like a date (`2026-1`): an RFC 3339 time.
    Time,
    /// It starts with `@`.
    Macro,
    /// Several fields: a cron expression.
    Cron,
    /// One word that is neither.
    Neither,
}

/// Why a runAt value was rejected, in the terms the value was written in:
/// the cron field or the part of the time that is wrong, as written, and
/// what it may be.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("runAt {value:?} {}: {reason}", .form.phrase())]
pub struct RunAtError {
    /// The rejected value.
    pub value: String,
    /// The form it was taken for.
    pub form: Form,
    /// What was wrong with it.
    pub reason: String,
}

impl Form {
    fn phrase(self) -> &'static str {
        match self {
            Form::Time => "is not a valid RFC 3339 time",
            Form::Macro => "is not a valid cron macro",
            Form::Cron => "is not a valid cron expression",
            Form::Neither => "is neither an RFC 3339 time nor a cron expression",
        }
    }
}

/// The macros runAt takes, and the six-field expression each stands for.
const MACROS: [(&str, &str); 7] = [
    ("yearly", "0 0 0 1 1 *"),
    ("annually", "0 0 0 1 1 *"),
    ("monthly", "0 0 0 1 * *"),
    ("weekly", "0 0 0 * * SUN"),
    ("daily", "0 0 0 * * *"),
    ("midnight", "0 0 0 * * *"),
    ("hourly", "0 0 * * * *"),
];

impl RunAt {
    /// Parses `runAt`: empty, an RFC 3339 time, five cron fields or a
    /// `@hourly`-style macro (Kubernetes CronJob syntax, day of week 0-7 with
    /// 0 and 7 both Sunday).
    pub fn parse(value: &str) -> Result<RunAt, RunAtError> {
        let v = value.trim();
        if v.is_empty() {
            return Ok(RunAt::Empty);
        }
        let err = |form: Form, reason: String| RunAtError {
            value: value.to_string(),
            form,
            reason,
        };
        if time::looks_like_a_time(v) {
            return DateTime::parse_from_rfc3339(v)
                .map(|t| RunAt::Once(t.with_timezone(&Utc)))
                .map_err(|_| err(Form::Time, time::diagnose(v)));
        }
        let expr = if let Some(m) = v.strip_prefix('@') {
            match MACROS.iter().find(|(name, _)| *name == m) {
                Some((_, expr)) => expr.to_string(),
                None => {
                    let names: Vec<String> = MACROS.iter().map(|(n, _)| format!("@{n}")).collect();
                    return Err(err(
                        Form::Macro,
                        format!("@{m} is unknown; the macros are {}", names.join(", ")),
                    ));
                }
            }
        } else {
            let fields: Vec<&str> = v.split_whitespace().collect();
            if fields.len() == 1 {
                return Err(err(
                    Form::Neither,
                    format!(
                        "write a time such as 2026-11-22T06:00:00Z, or 5 cron fields ({}) such as \"0 */6 * * *\"",
                        cron::FIVE_FIELDS
                    ),
                ));
            }
            cron::check(&fields).map_err(|reason| err(Form::Cron, reason))?;
            format!(
                "0 {} {} {} {} {}",
                fields[0],
                fields[1],
                fields[2],
                fields[3],
                cron::translate_weekdays(fields[4])
            )
        };
        ::cron::Schedule::from_str(&expr)
            .map(|s| RunAt::Cron(Box::new(s), v.to_string()))
            .map_err(|e| err(Form::Cron, e.to_string()))
    }

    /// The first scheduled time strictly after `after`, if any.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            RunAt::Empty => None,
            RunAt::Once(t) => (*t > after).then_some(*t),
            RunAt::Cron(s, _) => s.after(&after).next(),
        }
    }

    /// The newest scheduled time at or before `now`, if any. For a cron this
    /// looks back at most 400 days.
    pub fn latest_due(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            RunAt::Empty => None,
            RunAt::Once(t) => (*t <= now).then_some(*t),
            RunAt::Cron(s, _) => {
                let mut probe = now - chrono::Duration::minutes(1);
                let floor = now - chrono::Duration::days(400);
                // Walk back in widening windows: the next fire after `probe`
                // that is not after `now` is the latest due one.
                let mut width = chrono::Duration::minutes(1);
                while probe > floor {
                    let mut latest = None;
                    for t in s.after(&probe) {
                        if t > now {
                            break;
                        }
                        latest = Some(t);
                    }
                    if latest.is_some() {
                        return latest;
                    }
                    width = width * 4;
                    probe = now - width;
                }
                None
            }
        }
    }
}

/// Why `value`, written as an RFC 3339 time (it starts with a year and a
/// month), is not one, in the words of a runAt error; `None` when it is a
/// valid time or is not written as one.
pub fn time_problem(value: &str) -> Option<String> {
    let v = value.trim();
    (time::looks_like_a_time(v) && DateTime::parse_from_rfc3339(v).is_err())
        .then(|| time::diagnose(v))
}

/// A run's identity: its scheduled time, written `20261122T060000Z`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(pub DateTime<Utc>);

impl RunId {
    /// The run scheduled at `t`, to the second.
    pub fn at(t: DateTime<Utc>) -> RunId {
        RunId(t.with_nanosecond_zero())
    }

    /// The run scheduled now, to the second (`kubectl combo run`, local mode).
    pub fn now() -> RunId {
        RunId::at(Utc::now())
    }

    /// The run scheduled at an RFC 3339 time, as `runAt` and the summary write it.
    pub fn from_rfc3339(s: &str) -> Option<RunId> {
        DateTime::parse_from_rfc3339(s.trim())
            .ok()
            .map(|t| RunId::at(t.with_timezone(&Utc)))
    }

    /// The scheduled time as RFC 3339 (`2026-11-22T06:00:00Z`), as the summary shows it.
    pub fn rfc3339(&self) -> String {
        self.0.to_rfc3339_opts(SecondsFormat::Secs, true)
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.format("%Y%m%dT%H%M%SZ"))
    }
}

impl FromStr for RunId {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        chrono::NaiveDateTime::parse_from_str(s, "%Y%m%dT%H%M%SZ")
            .map(|t| RunId(t.and_utc()))
            .map_err(|_| format!("{s:?} is not a run id like 20261122T060000Z"))
    }
}

trait NanoZero {
    fn with_nanosecond_zero(self) -> Self;
}

impl NanoZero for DateTime<Utc> {
    fn with_nanosecond_zero(self) -> Self {
        use chrono::Timelike;
        self.with_nanosecond(0).unwrap_or(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn empty_and_timestamps_parse() {
        assert_eq!(RunAt::parse(""), Ok(RunAt::Empty));
        assert_eq!(
            RunAt::parse("2026-11-22T06:00:00+01:00"),
            Ok(RunAt::Once(t("2026-11-22T05:00:00Z")))
        );
    }

    #[test]
    fn five_field_cron_fires_in_utc() {
        let r = RunAt::parse("0 */6 * * *").unwrap();
        assert_eq!(
            r.next_after(t("2026-11-22T00:00:00Z")),
            Some(t("2026-11-22T06:00:00Z"))
        );
        assert_eq!(
            r.latest_due(t("2026-11-22T07:30:00Z")),
            Some(t("2026-11-22T06:00:00Z"))
        );
    }

    #[test]
    fn weekday_numbers_follow_kubernetes_where_sunday_is_zero() {
        // 2026-11-22 is a Sunday.
        let sunday = RunAt::parse("0 0 * * 0").unwrap();
        assert_eq!(
            sunday.next_after(t("2026-11-21T12:00:00Z")),
            Some(t("2026-11-22T00:00:00Z"))
        );
        let monday = RunAt::parse("0 0 * * 1").unwrap();
        assert_eq!(
            monday.next_after(t("2026-11-21T12:00:00Z")),
            Some(t("2026-11-23T00:00:00Z"))
        );
        let weekend = RunAt::parse("0 0 * * 6-7").unwrap();
        assert_eq!(
            weekend.next_after(t("2026-11-20T12:00:00Z")),
            Some(t("2026-11-21T00:00:00Z"))
        );
        assert_eq!(
            weekend.next_after(t("2026-11-21T12:00:00Z")),
            Some(t("2026-11-22T00:00:00Z"))
        );
    }

    #[test]
    fn macros_and_bad_values() {
        let h = RunAt::parse("@hourly").unwrap();
        assert_eq!(
            h.next_after(t("2026-11-22T00:10:00Z")),
            Some(t("2026-11-22T01:00:00Z"))
        );
        assert!(RunAt::parse("@sometimes").is_err());
        assert!(RunAt::parse("* * *")
            .unwrap_err()
            .reason
            .contains("a cron expression has 5"));
        assert!(RunAt::parse("61 * * * *").is_err());
        assert!(RunAt::parse("0 0 * * 9").is_err());
        assert!(RunAt::parse("tomorrow").is_err());
    }

    #[test]
    fn every_form_the_field_check_passes_is_one_the_schedule_takes() {
        for ok in [
            "0 0 ? JAN-MAR mon-fri",
            "5/15 0-23/2 1,15 * 0-7",
            "59 23 31 12 7",
            "*/5 * * * SUN,3",
        ] {
            assert!(
                matches!(RunAt::parse(ok), Ok(RunAt::Cron(..))),
                "{ok}: {:?}",
                RunAt::parse(ok)
            );
        }
    }

    fn message(value: &str) -> String {
        RunAt::parse(value).expect_err(value).to_string()
    }

    #[test]
    fn a_bad_cron_field_is_named_in_the_five_fields_the_user_wrote() {
        assert_eq!(
            message("61 * * * *"),
            "runAt \"61 * * * *\" is not a valid cron expression: minute 61 is out of range 0-59"
        );
        assert_eq!(
            message("0 0 * * 9"),
            "runAt \"0 0 * * 9\" is not a valid cron expression: day of week 9 is out of range 0-7 or SUN-SAT"
        );
        let six = message("0 0 * * * *");
        assert!(
            six.contains("it has 6 fields; a cron expression has 5"),
            "{six}"
        );
        for m in [message("61 * * * *"), six] {
            assert!(!m.contains("0 61") && !m.contains("less than"), "{m}");
        }
    }

    #[test]
    fn a_bad_timestamp_is_blamed_on_the_time_not_on_cron() {
        assert_eq!(
            message("2026-13-45T00:00:00Z"),
            "runAt \"2026-13-45T00:00:00Z\" is not a valid RFC 3339 time: month 13 is out of range 1-12"
        );
        assert_eq!(
            message("2026-11-22T06:00:00"),
            "runAt \"2026-11-22T06:00:00\" is not a valid RFC 3339 time: it has no time zone; end it with Z for UTC or an offset such as +01:00"
        );
        for v in [
            "2026-13-45T00:00:00Z",
            "2026-11-22T06:00:00",
            "2026-11-22 06:00:00",
        ] {
            assert!(!message(v).contains("cron"), "{}", message(v));
        }
    }

    #[test]
    fn a_time_problem_is_told_only_of_values_written_as_times() {
        assert_eq!(
            time_problem("2026-13-01T00:00:00Z").as_deref(),
            Some("month 13 is out of range 1-12")
        );
        assert_eq!(time_problem("2026-11-22T06:00:00Z"), None);
        assert_eq!(time_problem("garbage"), None);
    }

    #[test]
    fn a_word_and_an_unknown_macro_say_what_is_accepted() {
        assert_eq!(
            message("tomorrow"),
            "runAt \"tomorrow\" is neither an RFC 3339 time nor a cron expression: write a time such as 2026-11-22T06:00:00Z, or 5 cron fields (minute hour day-of-month month day-of-week) such as \"0 */6 * * *\""
        );
        assert_eq!(
            message("@sometimes"),
            "runAt \"@sometimes\" is not a valid cron macro: @sometimes is unknown; the macros are @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly"
        );
    }

    #[test]
    fn run_ids_round_trip_in_basic_format() {
        let id = RunId::at(t("2026-11-22T06:00:00.123Z"));
        assert_eq!(id.to_string(), "20261122T060000Z");
        assert_eq!(id.rfc3339(), "2026-11-22T06:00:00Z");
        assert_eq!("20261122T060000Z".parse::<RunId>(), Ok(id));
        assert!("2026-11-22".parse::<RunId>().is_err());
        assert_eq!(RunId::from_rfc3339("2026-11-22T07:00:00.9+01:00"), Some(id));
        assert_eq!(RunId::from_rfc3339("soon"), None);
        assert_eq!(
            RunId::from_rfc3339(&RunId::now().rfc3339()).map(|r| r.0.timestamp_subsec_nanos()),
            Some(0)
        );
    }
}
