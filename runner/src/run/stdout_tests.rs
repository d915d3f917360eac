use super::*;

fn collect(text: &[u8]) -> (Vec<Line>, Untaken) {
    let mut c = Collector::default();
    c.push(text);
    c.finish()
}

fn err(item: &str, message: &str) -> Line {
    Line::Err {
        item: item.into(),
        message: message.into(),
    }
}

#[test]
fn item_lines_past_the_limit_are_counted_by_kind() {
    let mut text = String::new();
    for i in 0..MAX_ITEMS {
        text.push_str(&format!("ok line-{i}\n"));
    }
    text.push_str("err late-1 broken\nskip late-2 no tool\nok late-3\nerr late-4 broken\n");
    let (lines, untaken) = collect(text.as_bytes());
    assert_eq!(lines.len(), MAX_ITEMS);
    assert_eq!(
        untaken,
        Untaken {
            err: 2,
            skip: 1,
            ok: 1,
            ..Untaken::default()
        }
    );
    assert_eq!(untaken.past_limit(), 4);
}

#[test]
fn lines_split_over_reads_are_joined() {
    let mut c = Collector::default();
    for chunk in ["ok a\ner", "r b bro", "ken\nok", " c"] {
        c.push(chunk.as_bytes());
    }
    let (lines, untaken) = c.finish();
    assert_eq!(
        lines,
        vec![
            Line::Ok { item: "a".into() },
            err("b", "broken"),
            Line::Ok { item: "c".into() }
        ]
    );
    assert_eq!(untaken, Untaken::default());
}

#[test]
fn a_line_over_the_length_limit_is_cut_and_its_item_kept() {
    let line = format!("err big {}\nok after\n", "x".repeat(10_000));
    let (lines, untaken) = collect(line.as_bytes());
    let Line::Err { item, message } = &lines[0] else {
        panic!("an err line: {lines:?}")
    };
    assert_eq!(item, "big");
    assert!(
        message.ends_with(CUT_MARKER),
        "{}",
        &message[message.len() - 20..]
    );
    assert_eq!(
        message.len(),
        MAX_LINE - "err big ".len() + CUT_MARKER.len()
    );
    assert_eq!(
        lines[1],
        Line::Ok {
            item: "after".into()
        }
    );
    assert_eq!(untaken, Untaken::default());
}

#[test]
fn a_line_of_exactly_the_limit_is_not_cut() {
    let line = format!("err big {}", "y".repeat(MAX_LINE - "err big ".len()));
    let (lines, _) = collect(line.as_bytes());
    assert_eq!(lines, vec![err("big", &"y".repeat(MAX_LINE - 8))]);
}

#[test]
fn a_cut_in_the_middle_of_a_character_drops_the_partial_character() {
    // "err x " is 6 bytes; 'é' is 2, so the limit falls inside one.
    let line = format!("err x {}\n", "é".repeat(MAX_LINE));
    let (lines, _) = collect(line.as_bytes());
    let Line::Err { message, .. } = &lines[0] else {
        panic!("an err line")
    };
    let body = message.strip_suffix(CUT_MARKER).unwrap();
    assert!(body.chars().all(|c| c == 'é'), "no U+FFFD at the cut");
    assert_eq!(body.len(), MAX_LINE - 6);
}

#[test]
fn plain_lines_are_counted_and_the_first_quoted() {
    let (lines, untaken) = collect(b"\n   \nERROR: disk on fire\n\x1b[31mred\nok\n");
    assert!(lines.is_empty());
    assert_eq!(untaken.plain, 3, "blank lines are not counted");
    assert_eq!(untaken.first_plain, "ERROR: disk on fire");
    assert_eq!(
        not_in_format_message(&untaken),
        "output not in the script format: 3 lines, the first: \"ERROR: disk on fire\""
    );
    let (_, one) = collect(b"ERROR: disk on fire");
    assert_eq!(
        not_in_format_message(&one),
        "output not in the script format: 1 line: \"ERROR: disk on fire\""
    );
}

#[test]
fn a_long_plain_line_is_quoted_cut() {
    let (_, untaken) = collect(format!("{}\n", "z".repeat(20_000)).as_bytes());
    assert_eq!(untaken.plain, 1);
    assert_eq!(
        untaken.first_plain,
        format!("{}{CUT_MARKER}", "z".repeat(MAX_QUOTE))
    );
}
