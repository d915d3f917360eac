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
fn a_schedule_that_no_date_matches_is_refused_and_a_rare_one_kept() {
    assert_eq!(
        message("0 0 30 2 *"),
        "runAt \"0 0 30 2 *\" never fires: no date has day of month 30 in month 2"
    );
    assert_eq!(
        message("0 0 31 4,6,9,11 *"),
        "runAt \"0 0 31 4,6,9,11 *\" never fires: no date has day of month 31 in month 4,6,9,11"
    );
    // Once in four years, and with a month that has the day: they fire.
    for rare in ["0 6 29 2 *", "0 0 31 2,3 *", "0 0 30 * *"] {
        let at = RunAt::parse(rare).expect(rare);
        assert!(at.next_after(t("2026-11-27T00:00:00Z")).is_some(), "{rare}");
    }
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

#[test]
fn a_run_now_value_is_its_time_to_the_second_or_says_what_is_wrong() {
    assert_eq!(
        parse_run_now("2026-11-22T07:00:00.4+01:00"),
        Ok(RunId::at(t("2026-11-22T06:00:00Z")))
    );
    assert_eq!(
        parse_run_now("2026-11-22T06:00:00"),
        Err("\"2026-11-22T06:00:00\" is not a valid RFC 3339 time: it has no time zone; end it with Z for UTC or an offset such as +01:00".into())
    );
    assert_eq!(
        parse_run_now("now"),
        Err("\"now\" is not an RFC 3339 time such as 2026-11-22T06:00:00Z".into())
    );
}
