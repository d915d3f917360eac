//! The script output contract (docs/runner.md, "Scripts"): `ok <item>`,
//! `err <item> <message>` and `skip <item> <reason>` lines on stdout;
//! anything else is plain output.

/// One meaningful stdout line of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// `ok <item>`: the item is healthy.
    Ok { item: String },
    /// `err <item> <message>`: the item failed.
    Err { item: String, message: String },
    /// `skip <item> <reason>`: the item could not be checked here.
    Skip { item: String, reason: String },
    /// Any other line.
    Plain,
}

/// Longest item name kept; longer names are cut (they become ConfigMap YAML keys).
pub const MAX_ITEM_LEN: usize = 128;

/// Classifies one stdout line. Leading and trailing whitespace is ignored; an
/// `ok`/`err` keyword without an item is plain output, and so is a keyword
/// glued to other text (`okay`, `error: ...`). An err line without a message
/// gets the message `failed`, a skip line without a reason the reason
/// `skipped`. Control characters are replaced as
/// [`printable_item`] and [`printable_message`] say.
pub fn parse_line(line: &str) -> Line {
    let line = line.trim();
    let mut words = line.splitn(2, char::is_whitespace);
    let keyword = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or_default().trim_start();
    let mut rest_words = rest.splitn(2, char::is_whitespace);
    let item = rest_words.next().unwrap_or_default();
    if item.is_empty() {
        return Line::Plain;
    }
    let item = clip(&printable_item(item), MAX_ITEM_LEN);
    let mut text = |otherwise: &str| {
        let text = rest_words.next().unwrap_or_default().trim();
        if text.is_empty() {
            otherwise.to_string()
        } else {
            printable_message(text)
        }
    };
    match keyword {
        "ok" => Line::Ok { item },
        "err" => Line::Err {
            item,
            message: text("failed"),
        },
        "skip" => Line::Skip {
            item,
            reason: text("skipped"),
        },
        _ => Line::Plain,
    }
}

/// `item` with each control character (an escape sequence a script
/// printed, a newline in a script's file name) replaced by U+FFFD, as
/// bytes that are not UTF-8 are: an item name is a YAML key, a table cell
/// and an errlog line, and must stay one line that draws nothing on a
/// terminal (docs/runner.md, "Scripts").
pub fn printable_item(item: &str) -> String {
    replace_controls(item, '\u{FFFD}')
}

/// `message` with each control character (a tab, a carriage return, an
/// escape) replaced by a space, for the same reason as [`printable_item`].
pub fn printable_message(message: &str) -> String {
    replace_controls(message, ' ')
}

fn replace_controls(s: &str, with: char) -> String {
    s.chars()
        .map(|c| if c.is_control() { with } else { c })
        .collect()
}

fn clip(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The item name for a script that failed without an `err` line: its file
/// name without extension (`usage.sh` -> `usage`, `.hidden` stays whole),
/// made printable as [`printable_item`] says.
pub fn script_item(file_name: &str) -> String {
    let stem = match file_name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => file_name,
    };
    printable_item(stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(item: &str, message: &str) -> Line {
        Line::Err {
            item: item.into(),
            message: message.into(),
        }
    }

    #[test]
    fn ok_lines_name_a_healthy_item() {
        assert_eq!(
            parse_line("ok sda1"),
            Line::Ok {
                item: "sda1".into()
            }
        );
        assert_eq!(
            parse_line("  ok   eth0  \r"),
            Line::Ok {
                item: "eth0".into()
            }
        );
        assert_eq!(
            parse_line("ok eth0 trailing words are ignored"),
            Line::Ok {
                item: "eth0".into()
            }
        );
    }

    #[test]
    fn err_lines_carry_the_rest_of_the_line_as_message() {
        assert_eq!(
            parse_line("err sdb1 disk full (97% used)"),
            err("sdb1", "disk full (97% used)")
        );
        assert_eq!(
            parse_line("err\teth2\tlink down "),
            err("eth2", "link down")
        );
        assert_eq!(parse_line("err eth2"), err("eth2", "failed"));
    }

    #[test]
    fn skip_lines_carry_the_rest_of_the_line_as_reason() {
        assert_eq!(
            parse_line("skip smart/sda smartctl not installed "),
            Line::Skip {
                item: "smart/sda".into(),
                reason: "smartctl not installed".into()
            }
        );
        assert_eq!(
            parse_line("skip\tdmesg\tno\u{1b}kernel log"),
            Line::Skip {
                item: "dmesg".into(),
                reason: "no kernel log".into()
            }
        );
        assert_eq!(
            parse_line("skip x"),
            Line::Skip {
                item: "x".into(),
                reason: "skipped".into()
            }
        );
    }

    #[test]
    fn garbage_and_lookalikes_are_plain_output() {
        for l in [
            "",
            "ok",
            "err",
            "skip",
            "SKIP sda no tool",
            "skipped sda",
            "err   ",
            "okay sda",
            "error: something",
            "OK sda",
            "checking disks...",
            "\u{0}\u{1}binary",
        ] {
            assert_eq!(parse_line(l), Line::Plain, "{l:?}");
        }
    }

    #[test]
    fn overlong_item_names_are_clipped_on_a_char_boundary() {
        let line = format!("ok {}", "é".repeat(200));
        let Line::Ok { item } = parse_line(&line) else {
            panic!("an ok line")
        };
        assert!(item.len() <= MAX_ITEM_LEN);
        assert!(item.chars().all(|c| c == 'é'));
    }

    #[test]
    fn a_failed_script_is_named_by_its_file_name_without_extension() {
        assert_eq!(script_item("usage.sh"), "usage");
        assert_eq!(script_item("smart.check.sh"), "smart.check");
        assert_eq!(script_item("inodes"), "inodes");
        assert_eq!(script_item(".hidden"), ".hidden");
        assert_eq!(script_item("a\nb.sh"), "a\u{FFFD}b");
    }

    #[test]
    fn control_characters_become_replacement_characters_in_items_and_spaces_in_messages() {
        assert_eq!(
            parse_line("err \u{1b}[31mred one\rtwo\u{7}\tthree"),
            err("\u{FFFD}[31mred", "one two  three")
        );
        assert_eq!(
            parse_line("ok a\u{0}b"),
            Line::Ok {
                item: "a\u{FFFD}b".into()
            }
        );
    }

    #[test]
    fn an_item_of_control_characters_is_clipped_after_their_replacement() {
        let Line::Ok { item } = parse_line(&format!("ok {}", "\u{1}".repeat(200))) else {
            panic!("an ok line")
        };
        assert!(item.len() <= MAX_ITEM_LEN, "{}", item.len());
        assert_eq!(item.chars().count(), MAX_ITEM_LEN / 3);
    }
}
