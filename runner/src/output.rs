//! The script output contract (docs/runner.md, "Scripts"): `ok <item>` and `err <item> <message>`
//! lines on stdout; anything else is plain output.

/// One meaningful stdout line of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// `ok <item>`: the item is healthy.
    Ok { item: String },
    /// `err <item> <message>`: the item failed.
    Err { item: String, message: String },
    /// Any other line.
    Plain,
}

/// Longest item name kept; longer names are cut (they become ConfigMap YAML keys).
pub const MAX_ITEM_LEN: usize = 128;

/// Classifies one stdout line. Leading and trailing whitespace is ignored; an
/// `ok`/`err` keyword without an item is plain output, and so is a keyword
/// glued to other text (`okay`, `error: ...`). An err line without a message
/// gets the message `failed`.
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
    let item = clip(item, MAX_ITEM_LEN);
    match keyword {
        "ok" => Line::Ok { item },
        "err" => {
            let message = rest_words.next().unwrap_or_default().trim();
            Line::Err {
                item,
                message: if message.is_empty() {
                    "failed".to_string()
                } else {
                    message.to_string()
                },
            }
        }
        _ => Line::Plain,
    }
}

fn clip(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The item name for a script that failed without an `err` line: its file
/// name without extension (`usage.sh` -> `usage`, `.hidden` stays whole).
pub fn script_item(file_name: &str) -> String {
    match file_name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_string(),
        _ => file_name.to_string(),
    }
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
    fn garbage_and_lookalikes_are_plain_output() {
        for l in [
            "",
            "ok",
            "err",
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
    }
}
