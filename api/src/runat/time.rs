//! Why a `runAt` that looks like a timestamp is not a valid RFC 3339 time,
//! said about the part the user wrote wrong (docs/runner.md, "runAt").

/// Whether `value` is meant as a timestamp: it starts with a year and a
/// month (`2026-1`), which no cron expression does (a minute is at most 59).
pub fn looks_like_a_time(value: &str) -> bool {
    let b = value.as_bytes();
    b.len() >= 6 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[5].is_ascii_digit()
}

const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Consumes `n` digits from the front of `s`, as a number.
fn digits(s: &mut &str, n: usize) -> Option<u32> {
    let head = s.get(..n)?;
    if !head.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    *s = &s[n..];
    head.parse().ok()
}

/// Consumes `c` from the front of `s`.
fn sep(s: &mut &str, c: char) -> Option<()> {
    *s = s.strip_prefix(c)?;
    Some(())
}

fn days_in(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// What is wrong with `value`, a timestamp that chrono refused.
pub fn diagnose(value: &str) -> String {
    const FORM: &str = "write it as 2026-11-22T06:00:00Z";
    let mut s = value;
    let date = (|| {
        let y = digits(&mut s, 4)?;
        sep(&mut s, '-')?;
        let m = digits(&mut s, 2)?;
        sep(&mut s, '-')?;
        Some((y, m, digits(&mut s, 2)?))
    })();
    let Some((year, month, day)) = date else {
        return format!("the date is not YYYY-MM-DD; {FORM}");
    };
    if !(1..=12).contains(&month) {
        return format!("month {month} is out of range 1-12");
    }
    let last = days_in(year, month);
    if !(1..=last).contains(&day) {
        let name = MONTH_NAMES[month as usize - 1];
        return format!("day {day} is out of range 1-{last} in {name} {year}");
    }
    if s.is_empty() {
        return format!(
            "it has a date but no time of day; write {year:04}-{month:02}-{day:02}T00:00:00Z for midnight UTC"
        );
    }
    match s.chars().next() {
        Some('T' | 't' | ' ') => s = &s[1..],
        _ => return format!("the date must be followed by T and a time of day; {FORM}"),
    }
    let time = (|| {
        let h = digits(&mut s, 2)?;
        sep(&mut s, ':')?;
        let m = digits(&mut s, 2)?;
        sep(&mut s, ':')?;
        Some((h, m, digits(&mut s, 2)?))
    })();
    let Some((hour, minute, second)) = time else {
        return format!("the time of day is not hh:mm:ss; {FORM}");
    };
    for (what, v, max) in [
        ("hour", hour, 23),
        ("minute", minute, 59),
        ("second", second, 60),
    ] {
        if v > max {
            return format!("{what} {v} is out of range 0-{}", max.min(59));
        }
    }
    if let Some(rest) = s.strip_prefix('.') {
        s = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    zone(s)
}

/// What is wrong with what follows the time of day: the zone.
fn zone(s: &str) -> String {
    const ADD: &str = "end it with Z for UTC or an offset such as +01:00";
    if s.is_empty() {
        return format!("it has no time zone; {ADD}");
    }
    let Some(offset) = s.strip_prefix(['+', '-']) else {
        return match s.strip_prefix(['Z', 'z']) {
            Some(rest) => format!("{rest:?} follows the time zone Z; nothing may"),
            None => format!("the time zone {s:?} is neither Z nor an offset; {ADD}"),
        };
    };
    let mut o = offset;
    let parsed = (|| {
        let h = digits(&mut o, 2)?;
        sep(&mut o, ':')?;
        Some((h, digits(&mut o, 2)?))
    })();
    match parsed {
        Some((h, m)) if h > 23 || m > 59 => {
            format!("the offset {s:?} is out of range; hours are 00-23 and minutes 00-59")
        }
        Some(_) if !o.is_empty() => format!("{o:?} follows the offset; nothing may"),
        Some(_) => format!("it is not a valid RFC 3339 time; {ADD}"),
        None => format!("the offset {s:?} is not ±hh:mm, such as +01:00"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_told_from_cron_expressions_by_their_year() {
        for t in [
            "2026-13-45T00:00:00Z",
            "2026-11-22T06:00:00",
            "2026-11-22",
            "1970-1",
        ] {
            assert!(looks_like_a_time(t), "{t}");
        }
        for c in [
            "0 */6 * * *",
            "61 * * * *",
            "1-5 * * * *",
            "@daily",
            "tomorrow",
            "2026",
        ] {
            assert!(!looks_like_a_time(c), "{c}");
        }
    }

    #[test]
    fn each_wrong_part_of_a_timestamp_is_named() {
        let cases = [
            ("2026-13-45T00:00:00Z", "month 13 is out of range 1-12"),
            ("2026-00-01T00:00:00Z", "month 0 is out of range 1-12"),
            ("2026-04-31T00:00:00Z", "day 31 is out of range 1-30 in April 2026"),
            ("2027-02-29T00:00:00Z", "day 29 is out of range 1-28 in February 2027"),
            ("2026-11-22T24:00:00Z", "hour 24 is out of range 0-23"),
            ("2026-11-22T06:60:00Z", "minute 60 is out of range 0-59"),
            ("2026-11-22T06:00:61Z", "second 61 is out of range 0-59"),
            (
                "2026-11-22T06:00:00",
                "it has no time zone; end it with Z for UTC or an offset such as +01:00",
            ),
            (
                "2026-11-22T06:00:00.5",
                "it has no time zone; end it with Z for UTC or an offset such as +01:00",
            ),
            (
                "2026-11-22",
                "it has a date but no time of day; write 2026-11-22T00:00:00Z for midnight UTC",
            ),
            (
                "2026-11-22T06:00",
                "the time of day is not hh:mm:ss; write it as 2026-11-22T06:00:00Z",
            ),
            (
                "2026-11-22X06:00:00Z",
                "the date must be followed by T and a time of day; write it as 2026-11-22T06:00:00Z",
            ),
            (
                "2026-1-22T06:00:00Z",
                "the date is not YYYY-MM-DD; write it as 2026-11-22T06:00:00Z",
            ),
            (
                "2026-11-22T06:00:00CET",
                "the time zone \"CET\" is neither Z nor an offset; end it with Z for UTC or an offset such as +01:00",
            ),
            (
                "2026-11-22T06:00:00+25:00",
                "the offset \"+25:00\" is out of range; hours are 00-23 and minutes 00-59",
            ),
            (
                "2026-11-22T06:00:00+0100",
                "the offset \"+0100\" is not ±hh:mm, such as +01:00",
            ),
            ("2026-11-22T06:00:00Zx", "\"x\" follows the time zone Z; nothing may"),
        ];
        for (value, want) in cases {
            assert!(
                chrono::DateTime::parse_from_rfc3339(value).is_err(),
                "{value} parses"
            );
            assert_eq!(diagnose(value), want, "{value}");
        }
    }
}
