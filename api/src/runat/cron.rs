//! The five cron fields of `runAt`, checked in the terms the user wrote
//! them (docs/runner.md, "runAt"): `minute 61 is out of range 0-59`, not the
//! six-field form the `cron` crate parses.

/// One field of a five-field cron expression.
struct Field {
    /// Its name in messages.
    name: &'static str,
    /// Smallest value.
    min: u32,
    /// Largest value.
    max: u32,
    /// Names that stand for values, from `min` on (`JAN` = 1, `SUN` = 0).
    names: &'static [&'static str],
    /// Whether `?` (any) may stand for `*`.
    question: bool,
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// The fields in the order a Kubernetes CronJob schedule writes them.
const FIELDS: [Field; 5] = [
    Field {
        name: "minute",
        min: 0,
        max: 59,
        names: &[],
        question: false,
    },
    Field {
        name: "hour",
        min: 0,
        max: 23,
        names: &[],
        question: false,
    },
    Field {
        name: "day of month",
        min: 1,
        max: 31,
        names: &[],
        question: true,
    },
    Field {
        name: "month",
        min: 1,
        max: 12,
        names: &MONTHS,
        question: false,
    },
    Field {
        name: "day of week",
        min: 0,
        max: 7,
        names: &WEEKDAYS,
        question: true,
    },
];

/// What the five fields mean, for messages.
pub const FIVE_FIELDS: &str = "minute hour day-of-month month day-of-week";

/// Checks five cron fields; the error names the first field that is wrong,
/// with the value as written and the allowed range.
pub fn check(fields: &[&str]) -> Result<(), String> {
    if fields.len() != FIELDS.len() {
        let n = fields.len();
        return Err(format!(
            "it has {n} field{}; a cron expression has 5 ({FIVE_FIELDS})",
            if n == 1 { "" } else { "s" }
        ));
    }
    for (field, text) in FIELDS.iter().zip(fields) {
        check_field(field, text)?;
    }
    Ok(())
}

fn check_field(f: &Field, text: &str) -> Result<(), String> {
    for part in text.split(',') {
        if part.is_empty() {
            return Err(format!("{} {text:?} has an empty list entry", f.name));
        }
        let base = match part.split_once('/') {
            Some((base, step)) => {
                match step.parse::<u32>() {
                    Ok(0) => {
                        return Err(format!("step 0 in {} {part:?} must be at least 1", f.name))
                    }
                    Ok(_) => {}
                    Err(_) => {
                        return Err(format!(
                            "step {step:?} in {} {part:?} is not a number",
                            f.name
                        ))
                    }
                }
                base
            }
            None => part,
        };
        if base == "*" || (f.question && base == "?") {
            continue;
        }
        match base.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (value(f, a)?, value(f, b)?);
                if a > b {
                    return Err(format!(
                        "{} range {base:?} runs backwards; write the smaller value first",
                        f.name
                    ));
                }
            }
            None => {
                value(f, base)?;
            }
        }
    }
    Ok(())
}

/// The value of one number or name of field `f`.
fn value(f: &Field, text: &str) -> Result<u32, String> {
    let range = || {
        let names = match f.names.first().zip(f.names.last()) {
            Some((first, last)) => format!(" or {first}-{last}"),
            None => String::new(),
        };
        format!("{}-{}{names}", f.min, f.max)
    };
    if let Ok(n) = text.parse::<u32>() {
        return if (f.min..=f.max).contains(&n) {
            Ok(n)
        } else {
            Err(format!("{} {n} is out of range {}", f.name, range()))
        };
    }
    f.names
        .iter()
        .position(|name| name.eq_ignore_ascii_case(text))
        .map(|i| f.min + i as u32)
        .ok_or_else(|| {
            format!(
                "{} {text:?} is not a number{}; the {} is {}",
                f.name,
                if f.names.is_empty() { "" } else { " or a name" },
                f.name,
                range()
            )
        })
}

/// Cron's day-of-week field with Kubernetes numbering (0-7, Sunday = 0 or 7)
/// turned into names, since the `cron` crate numbers Sunday as 1. The
/// field has passed [`check`].
pub fn translate_weekdays(field: &str) -> String {
    let day = |s: &str| -> String {
        match s.parse::<usize>() {
            Ok(n) => WEEKDAYS[n % 7].to_string(),
            Err(_) => s.to_ascii_uppercase(),
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
                format!("{}-SAT", day(a))
            }
            Some((a, b)) => format!("{}-{}", day(a), day(b)),
            None if base == "*" || base == "?" => base.to_string(),
            None => day(base),
        };
        parts.push(match step {
            Some(s) => format!("{base}/{s}"),
            None => base,
        });
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(expr: &str) -> String {
        let fields: Vec<&str> = expr.split_whitespace().collect();
        check(&fields).expect_err(expr)
    }

    #[test]
    fn each_field_out_of_range_is_named_with_the_value_and_its_range() {
        assert_eq!(err("61 * * * *"), "minute 61 is out of range 0-59");
        assert_eq!(err("* 24 * * *"), "hour 24 is out of range 0-23");
        assert_eq!(err("* * 0 * *"), "day of month 0 is out of range 1-31");
        assert_eq!(err("* * 32 * *"), "day of month 32 is out of range 1-31");
        assert_eq!(
            err("* * * 13 *"),
            "month 13 is out of range 1-12 or JAN-DEC"
        );
        assert_eq!(
            err("* * * * 8"),
            "day of week 8 is out of range 0-7 or SUN-SAT"
        );
        assert_eq!(
            err("0,75 * * * *"),
            "minute 75 is out of range 0-59",
            "an entry of a list"
        );
        assert_eq!(err("0-60 * * * *"), "minute 60 is out of range 0-59");
    }

    #[test]
    fn words_steps_ranges_and_counts_are_explained() {
        assert_eq!(
            err("a b c d e"),
            "minute \"a\" is not a number; the minute is 0-59"
        );
        assert_eq!(
            err("0 0 * FOO *"),
            "month \"FOO\" is not a number or a name; the month is 1-12 or JAN-DEC"
        );
        assert_eq!(
            err("*/0 * * * *"),
            "step 0 in minute \"*/0\" must be at least 1"
        );
        assert_eq!(
            err("*/x * * * *"),
            "step \"x\" in minute \"*/x\" is not a number"
        );
        assert_eq!(
            err("30-10 * * * *"),
            "minute range \"30-10\" runs backwards; write the smaller value first"
        );
        assert_eq!(err("1, * * * *"), "minute \"1,\" has an empty list entry");
        assert_eq!(
            err("* * *"),
            "it has 3 fields; a cron expression has 5 (minute hour day-of-month month day-of-week)"
        );
        assert_eq!(
            err("* * * * * *"),
            "it has 6 fields; a cron expression has 5 (minute hour day-of-month month day-of-week)"
        );
        assert_eq!(
            err("x"),
            "it has 1 field; a cron expression has 5 (minute hour day-of-month month day-of-week)"
        );
    }

    #[test]
    fn valid_fields_pass_names_and_question_marks_included() {
        for ok in [
            "0 */6 * * *",
            "0 0 ? JAN-MAR mon-fri",
            "5/15 0-23/2 1,15 * 0-7",
            "59 23 31 12 7",
        ] {
            let fields: Vec<&str> = ok.split_whitespace().collect();
            assert_eq!(check(&fields), Ok(()), "{ok}");
        }
    }

    #[test]
    fn weekday_numbers_become_names_and_a_range_to_seven_adds_sunday() {
        assert_eq!(translate_weekdays("0"), "SUN");
        assert_eq!(translate_weekdays("7"), "SUN");
        assert_eq!(translate_weekdays("6-7"), "SUN,SAT-SAT");
        assert_eq!(translate_weekdays("1-5/2"), "MON-FRI/2");
        assert_eq!(translate_weekdays("*"), "*");
        assert_eq!(translate_weekdays("mon"), "MON");
    }
}
