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
    /// Cron fields that no date matches (30 February).
    Never,
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
            Form::Never => "never fires",
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
        let schedule =
            ::cron::Schedule::from_str(&expr).map_err(|e| err(Form::Cron, e.to_string()))?;
        // Fields each valid alone may match no date at all: a schedule that
        // never fires is refused, not kept as a Debugger that never runs.
        // Twenty-eight years hold every weekday of every date, leap days too.
        let start = DateTime::from_timestamp(946_684_800, 0).unwrap_or_default(); // 2000-01-01
        if schedule
            .after(&start)
            .next()
            .is_none_or(|t| t.signed_duration_since(start).num_days() > 28 * 366)
        {
            let fields: Vec<&str> = expr.split_whitespace().collect();
            return Err(err(
                Form::Never,
                format!(
                    "no date has day of month {} in month {}",
                    fields.get(3).unwrap_or(&"?"),
                    fields.get(4).unwrap_or(&"?")
                ),
            ));
        }
        Ok(RunAt::Cron(Box::new(schedule), v.to_string()))
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

/// The run a run-now request asks for (the `kubecombo.io/run-now`
/// annotation, docs/runner.md, "Run now"): its RFC 3339 time, to the
/// second. The error says what is wrong with the value as written.
pub fn parse_run_now(value: &str) -> Result<RunId, String> {
    let v = value.trim();
    if let Some(why) = time_problem(v) {
        return Err(format!("{value:?} is not a valid RFC 3339 time: {why}"));
    }
    RunId::from_rfc3339(v)
        .ok_or_else(|| format!("{value:?} is not an RFC 3339 time such as 2026-11-22T06:00:00Z"))
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
mod tests;
