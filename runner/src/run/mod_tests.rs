use super::*;
use crate::run::exec::Capture;
use crate::run::stdout::Untaken;

fn script(prefix: &str) -> Script {
    Script {
        category: Category::Disk,
        path: "/scripts/disk/usage.sh".into(),
        name: "usage".into(),
        item_prefix: prefix.into(),
    }
}

fn outcome(exit: Exit, lines: Vec<Line>, stderr: &str) -> Outcome {
    Outcome {
        exit,
        duration: Duration::from_millis(5),
        lines,
        untaken: Untaken::default(),
        stdout: Capture::default(),
        stderr: Capture::default(),
        last_stderr_line: stderr.into(),
    }
}

fn ok(i: &str) -> Line {
    Line::Ok { item: i.into() }
}

fn err(i: &str, m: &str) -> Line {
    Line::Err {
        item: i.into(),
        message: m.into(),
    }
}

#[test]
fn reported_items_are_kept_in_order_with_their_prefix() {
    let o = outcome(Exit::Code(0), vec![ok("sda"), err("sdb", "full")], "");
    assert_eq!(
        items_of(&script("smart/"), &o),
        vec![
            ("smart/sda".into(), ItemResult::ok()),
            ("smart/sdb".into(), ItemResult::err("full")),
        ]
    );
}

#[test]
fn a_non_zero_exit_without_err_line_becomes_the_script_item() {
    let o = outcome(Exit::Code(2), vec![ok("sda")], "df: cannot read table");
    assert_eq!(
        items_of(&script(""), &o),
        vec![
            ("sda".into(), ItemResult::ok()),
            (
                "usage".into(),
                ItemResult::err("exit 2: df: cannot read table")
            ),
        ]
    );
    let silent = outcome(Exit::Code(1), vec![], "");
    assert_eq!(
        items_of(&script(""), &silent),
        vec![("usage".into(), ItemResult::err("exit 1"))]
    );
}

#[test]
fn a_non_zero_exit_with_an_err_line_adds_nothing() {
    let o = outcome(Exit::Code(1), vec![err("sdb", "full")], "boom");
    assert_eq!(
        items_of(&script(""), &o),
        vec![("sdb".into(), ItemResult::err("full"))]
    );
}

#[test]
fn a_timeout_names_the_limit() {
    let o = outcome(Exit::Timeout(7), vec![ok("a")], "");
    assert_eq!(
        items_of(&script(""), &o)[1],
        ("usage".into(), ItemResult::err("timeout after 7s"))
    );
}

#[test]
fn a_timeout_adds_the_script_item_even_after_err_lines() {
    let o = outcome(Exit::Timeout(1), vec![err("x", "boom")], "");
    assert_eq!(
        items_of(&script(""), &o),
        vec![
            ("x".into(), ItemResult::err("boom")),
            ("usage".into(), ItemResult::err("timeout after 1s")),
        ]
    );
}

fn skip(i: &str, r: &str) -> Line {
    Line::Skip {
        item: i.into(),
        reason: r.into(),
    }
}

#[test]
fn skipped_items_are_kept_and_a_skip_is_not_an_err_line() {
    let o = outcome(
        Exit::Code(0),
        vec![skip("sda", "no smartctl"), ok("sdb")],
        "",
    );
    assert_eq!(
        items_of(&script("smart/"), &o),
        vec![
            ("smart/sda".into(), ItemResult::skip("no smartctl")),
            ("smart/sdb".into(), ItemResult::ok()),
        ]
    );
    // Only an err line says why a script failed: a skip does not.
    let failed = outcome(Exit::Code(3), vec![skip("sda", "no smartctl")], "boom");
    assert_eq!(
        items_of(&script(""), &failed)[1],
        ("usage".into(), ItemResult::err("exit 3: boom"))
    );
}

#[test]
fn an_item_keeps_its_worst_result_failed_then_skipped_then_healthy() {
    let o = outcome(
        Exit::Code(0),
        vec![
            ok("a"),
            skip("a", "first skip"),
            ok("a"),
            skip("a", "second skip"),
            skip("b", "no tool"),
            err("b", "broken"),
            skip("b", "no tool"),
        ],
        "",
    );
    assert_eq!(
        items_of(&script(""), &o),
        vec![
            ("a".into(), ItemResult::skip("first skip")),
            ("b".into(), ItemResult::err("broken")),
        ]
    );
}

#[test]
fn an_item_that_failed_stays_failed_when_reported_ok_later() {
    let o = outcome(
        Exit::Code(0),
        vec![err("a", "first"), ok("a"), err("a", "second")],
        "",
    );
    assert_eq!(
        items_of(&script(""), &o),
        vec![("a".into(), ItemResult::err("first"))]
    );
}

fn with_untaken(exit: Exit, lines: Vec<Line>, untaken: Untaken) -> Outcome {
    Outcome {
        untaken,
        ..outcome(exit, lines, "")
    }
}

#[test]
fn err_lines_past_the_limit_become_one_failed_output_item_and_count_as_err_lines() {
    let o = with_untaken(
        Exit::Code(1),
        vec![ok("a")],
        Untaken {
            err: 19_000,
            ok: 5,
            ..Untaken::default()
        },
    );
    let items = items_of(&script("smart/"), &o);
    assert_eq!(
        items,
        vec![
            ("smart/a".into(), ItemResult::ok()),
            (
                "usage/output".into(),
                ItemResult::err(
                    "19000 err, 0 skip and 5 ok lines past the limit of 1000 item lines were not taken"
                )
            ),
        ],
        "an err line past the limit is an err line: no exit item"
    );
    assert_eq!(
        combo_api::summary::failures_of(&items[1].0, &items[1].1),
        19_000
    );
}

#[test]
fn ok_and_skip_lines_past_the_limit_become_a_skipped_output_item() {
    let o = with_untaken(
        Exit::Code(0),
        vec![ok("a")],
        Untaken {
            skip: 2,
            ok: 3,
            ..Untaken::default()
        },
    );
    assert_eq!(
        items_of(&script(""), &o)[1],
        (
            "usage/output".into(),
            ItemResult::skip(
                "0 err, 2 skip and 3 ok lines past the limit of 1000 item lines were not taken"
            )
        )
    );
}

#[test]
fn a_script_printing_only_other_lines_gets_a_failed_output_item() {
    let plain = Untaken {
        plain: 2,
        first_plain: "ERROR: disk on fire".into(),
        ..Untaken::default()
    };
    let o = with_untaken(Exit::Code(0), vec![], plain.clone());
    assert_eq!(
        items_of(&script(""), &o),
        vec![(
            "usage/output".into(),
            ItemResult::err(
                "output not in the script format: 2 lines, the first: \"ERROR: disk on fire\""
            )
        )]
    );
    let beside_items = with_untaken(Exit::Code(0), vec![ok("a")], plain.clone());
    assert_eq!(
        items_of(&script(""), &beside_items),
        vec![("a".into(), ItemResult::ok())],
        "plain output beside items stays plain output"
    );
    let failed = with_untaken(Exit::Code(2), vec![], plain);
    let names: Vec<String> = items_of(&script(""), &failed)
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    assert_eq!(names, vec!["usage", "usage/output"]);
}
