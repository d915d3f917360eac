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
    Cron(Box<cron::Schedule>, String),
}

/// Why a runAt value was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("runAt {value:?} is neither an RFC 3339 time nor a cron expression: {reason}")]
pub struct RunAtError {
    /// The rejected value.
    pub value: String,
    /// What was wrong with it.
    pub reason: String,
}

impl RunAt {
    /// Parses `runAt`: empty, an RFC 3339 time, five cron fields or a
    /// `@hourly`-style macro (Kubernetes CronJob syntax, day of week 0-7 with
    /// 0 and 7 both Sunday).
    pub fn parse(value: &str) -> Result<RunAt, RunAtError> {
        let v = value.trim();
        if v.is_empty() {
            return Ok(RunAt::Empty);
        }
        if let Ok(t) = DateTime::parse_from_rfc3339(v) {
            return Ok(RunAt::Once(t.with_timezone(&Utc)));
        }
        let err = |reason: String| RunAtError {
            value: value.to_string(),
            reason,
        };
        let expr = if let Some(m) = v.strip_prefix('@') {
            match m {
                "yearly" | "annually" => "0 0 0 1 1 *".to_string(),
                "monthly" => "0 0 0 1 * *".to_string(),
                "weekly" => "0 0 0 * * SUN".to_string(),
                "daily" | "midnight" => "0 0 0 * * *".to_string(),
                "hourly" => "0 0 * * * *".to_string(),
                _ => return Err(err(format!("unknown macro @{m}"))),
            }
        } else {
            let fields: Vec<&str> = v.split_whitespace().collect();
            if fields.len() != 5 {
                return Err(err(format!(
                    "a cron expression has 5 fields (minute hour day month weekday), found {}",
                    fields.len()
                )));
            }
            let dow = translate_weekdays(fields[4]).map_err(err)?;
            format!(
                "0 {} {} {} {} {}",
                fields[0], fields[1], fields[2], fields[3], dow
            )
        };
        cron::Schedule::from_str(&expr)
            .map(|s| RunAt::Cron(Box::new(s), v.to_string()))
            .map_err(|e| err(e.to_string()))
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

/// Cron's day-of-week field with Kubernetes numbering (0-7, Sunday = 0 or 7)
/// turned into names, since the `cron` crate numbers Sunday as 1.
fn translate_weekdays(field: &str) -> Result<String, String> {
    const NAMES: [&str; 8] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"];
    let day = |s: &str| -> Result<String, String> {
        match s.parse::<usize>() {
            Ok(n) if n < NAMES.len() => Ok(NAMES[n].to_string()),
            Ok(n) => Err(format!("day of week {n} is out of range 0-7")),
            Err(_) => Ok(s.to_ascii_uppercase()),
        }
    };
    let mut parts = Vec::new();
    for part in field.split(',') {
        let (base, step) = match part.split_once('/') {
            Some((b, s)) => (b, Some(s)),
            None => (part, None),
        };
        let base = match base.split_once('-') {
            // A range ending on 7 ends on Saturday plus Sunday: `cron` has no
            // range that wraps past Saturday.
            Some((a, "7")) if step.is_none() => {
                parts.push("SUN".to_string());
                format!("{}-SAT", day(a)?)
            }
            Some((a, b)) => format!("{}-{}", day(a)?, day(b)?),
            None if base == "*" || base == "?" => base.to_string(),
            None => day(base)?,
        };
        parts.push(match step {
            Some(s) => format!("{base}/{s}"),
            None => base,
        });
    }
    Ok(parts.join(","))
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
            .contains("5 fields"));
        assert!(RunAt::parse("61 * * * *").is_err());
        assert!(RunAt::parse("0 0 * * 9").is_err());
        assert!(RunAt::parse("tomorrow").is_err());
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
