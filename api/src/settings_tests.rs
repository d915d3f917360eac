use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::*;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The variables of every default script's `# Environment:` header: the
/// first word of each `#   NAME  what it does` line, to the header's end.
fn header_names() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let scripts = repo().join("scripts");
    for dir in std::fs::read_dir(&scripts).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "sh") {
                let text = std::fs::read_to_string(&path).unwrap();
                names.extend(environment_header(&text));
            }
        }
    }
    names
}

fn environment_header(script: &str) -> Vec<String> {
    script
        .lines()
        .skip_while(|l| l.trim_end() != "# Environment:")
        .skip(1)
        .take_while(|l| l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix("#   ")?;
            let word = rest
                .split_whitespace()
                .next()
                .filter(|w| rest.starts_with(w))?;
            let upper = word.len() > 1
                && word.starts_with(|c: char| c.is_ascii_uppercase())
                && word
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
            upper.then(|| word.to_string())
        })
        .collect()
}

#[test]
fn the_header_parser_takes_names_and_leaves_out_continuations() {
    let script = "#!/bin/sh\n# Checks.\n#   Needs the node.\n# Environment:\n\
                  #   A_MAX   highest (default 1)\n#           (more text)\n\
                  #           NOT_A_NAME in a continuation\n\
                  #   B_IGNORE  globs\nset -u\n#   C_LATER  not in the header\n";
    assert_eq!(environment_header(script), ["A_MAX", "B_IGNORE"]);
}

#[test]
fn every_variable_of_the_scripts_headers_is_a_setting_or_reserved() {
    let unlisted: Vec<_> = header_names()
        .into_iter()
        .filter(|n| setting(n).is_none() && !is_reserved(n))
        .collect();
    assert!(
        unlisted.is_empty(),
        "scripts read {unlisted:?}: add them to SETTINGS (api/src/settings.rs) with their kind, or to RESERVED"
    );
}

#[test]
fn every_setting_is_read_by_a_script_and_documented() {
    let headers = header_names();
    let docs = std::fs::read_to_string(repo().join("docs/checks.md")).unwrap();
    for s in SETTINGS {
        assert!(
            headers.contains(s.name),
            "{} is in SETTINGS but no script's Environment header names it",
            s.name
        );
        assert!(docs.contains(s.name), "{} is not in docs/checks.md", s.name);
        assert!(
            !is_reserved(s.name),
            "{} is both a setting and reserved",
            s.name
        );
    }
    let unique: BTreeSet<_> = SETTINGS.iter().map(|s| s.name).collect();
    assert_eq!(unique.len(), SETTINGS.len(), "a setting is listed twice");
}

#[test]
fn values_are_checked_against_their_kind() {
    let ok = |name: &str, value: &str| check(name, value).is_none();
    assert!(ok("DISK_USAGE_MAX_PERCENT", "85"));
    assert!(ok("DISK_USAGE_MAX_PERCENT", "0"));
    assert!(ok("DISK_USAGE_MAX_PERCENT", "100"));
    assert!(!ok("DISK_USAGE_MAX_PERCENT", "101"));
    assert!(!ok("DISK_USAGE_MAX_PERCENT", "-1"));
    assert!(!ok("DISK_USAGE_MAX_PERCENT", "+5"));
    assert!(!ok("DISK_USAGE_MAX_PERCENT", "85%"));
    assert!(!ok("DISK_USAGE_MAX_PERCENT", ""));
    assert!(ok("NET_DROPS_MAX_PERCENT", "0.5"));
    assert!(!ok("NET_DROPS_MAX_PERCENT", "100.5"));
    assert!(!ok("NET_DROPS_MAX_PERCENT", ".5"));
    assert!(!ok("NET_DROPS_MAX_PERCENT", "5."));
    assert!(ok("SVC_LOAD_MAX_PER_CPU", "2.5"));
    assert!(ok("MEM_EXPECTED_MIB", "65536"));
    assert!(!ok("MEM_EXPECTED_MIB", "64Gi"));
    assert!(ok("NET_STORAGE_TIMEOUT", "5"));
    assert!(!ok("NET_STORAGE_TIMEOUT", "0"));
    assert!(!ok("NET_STORAGE_TIMEOUT", "5s"));
    assert!(ok("DISK_IGNORE_MOUNTS", "/mnt/scratch* /var/lib/docker/*"));
    assert!(ok("DISK_IGNORE_MOUNTS", ""));
    assert!(!ok("DISK_IGNORE_MOUNTS", "/a\n/b"));
    assert!(ok("NET_DNS_NAME", "kubernetes.default.svc.cluster.local"));
    assert!(ok("NET_DNS_NAME", "example.com."));
    assert!(!ok("NET_DNS_NAME", "not a name"));
    assert!(!ok("NET_DNS_NAME", "a..b"));
    assert!(ok(
        "NET_RESOLV_CONF",
        "/host/run/systemd/resolve/resolv.conf"
    ));
    assert!(!ok("NET_RESOLV_CONF", "etc/resolv.conf"));
    assert!(ok("SVC_KUBELET_UNIT", ""));
    assert!(Kind::Bool.accepts("true") && Kind::Bool.accepts("false"));
    assert!(!Kind::Bool.accepts("yes"));
}

#[test]
fn messages_name_the_setting_and_what_it_must_be() {
    assert_eq!(
        check("DISK_USAGE_MAX_PERCENT", "abc").unwrap(),
        r#"checkSettings.DISK_USAGE_MAX_PERCENT: "abc" is not an integer percent (0-100)"#
    );
    let unknown = check("DISK_USAGE_MAX", "85").unwrap();
    assert!(
        unknown.starts_with("checkSettings.DISK_USAGE_MAX: unknown setting"),
        "{unknown}"
    );
    for name in [
        "HOST_ROOT",
        "STATE_DIR",
        "KERNEL_LOG_FILE",
        "NODE_NAME",
        "POD_NAME",
        "PATH",
        "COMBO_RUNNER",
        "COMBO_HOST_NETWORK",
        "KUBERNETES_SERVICE_HOST",
    ] {
        let msg = check(name, "x").unwrap();
        assert!(
            msg.starts_with(&format!("checkSettings.{name}: reserved")),
            "{msg}"
        );
    }
}

#[test]
fn the_operators_own_variables_are_reserved() {
    use crate::keys::env;
    for name in [
        env::POD_NAME,
        env::POD_NAMESPACE,
        env::NODE_NAME,
        env::POD_IP,
        env::POD_IPS,
        env::DEBUGGER_NAME,
        env::PINGER_NAME,
    ] {
        assert!(is_reserved(name), "{name}");
    }
}

#[test]
fn an_integer_with_a_leading_zero_is_refused_with_the_number_to_write() {
    assert_eq!(
        check("MEM_AVAILABLE_MIN_PERCENT", "08").as_deref(),
        Some("checkSettings.MEM_AVAILABLE_MIN_PERCENT: \"08\" has a leading zero, which the checks' shell reads as an octal number; write \"8\"")
    );
    assert!(check("MEM_AVAILABLE_MIN_PERCENT", "00")
        .unwrap()
        .ends_with("write \"0\""));
    assert_eq!(check("MEM_AVAILABLE_MIN_PERCENT", "0"), None);
    assert_eq!(check("MEM_AVAILABLE_MIN_PERCENT", "80"), None);
    assert_eq!(check("DISK_USAGE_MAX_PERCENT", "100"), None);
}

/// Values on and around the edges of every kind.
fn edge_values() -> Vec<String> {
    let label = |n: usize| "a".repeat(n);
    let mut v: Vec<String> = [
        "",
        "0",
        "00",
        "08",
        "007",
        "1",
        "9",
        "10",
        "99",
        "100",
        "101",
        "1000",
        "3600",
        "86399",
        "86400",
        "86401",
        "99999",
        "999999999",
        "1000000000",
        "9223372036854775807",
        "18446744073709551615",
        "-1",
        "+5",
        "1.5",
        "0.5",
        "0.05",
        ".5",
        "3.",
        "100.0",
        "100.00",
        "100.5",
        "99.99",
        "05.5",
        "00.5",
        "1e3",
        " 1",
        "1 ",
        "\u{663}",
        "85%",
        "0x10",
        "a b",
        "/x",
        "/",
        "x/",
        "\n",
        "a\tb",
        "\u{85}",
        "\u{7f}",
        "é",
        "/mnt/scratch* /var/lib/*",
        "example.com",
        "example.com.",
        "a..b",
        ".",
        "-a",
        "a-",
        "_x",
        "a_b-c.d",
        "true",
        "false",
        "True",
        "not a name",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(label(63));
    v.push(label(64));
    v.push(format!("{}.{}", label(63), label(63)));
    v
}

const KINDS: [Kind; 11] = [
    Kind::Percent,
    Kind::DecimalPercent,
    Kind::Count,
    Kind::Decimal,
    Kind::Seconds,
    Kind::Millis,
    Kind::Globs,
    Kind::Hostname,
    Kind::Path,
    Kind::Bool,
    Kind::Text,
];

#[test]
fn the_schema_pattern_of_each_kind_accepts_what_the_operator_accepts() {
    let mut differ = Vec::new();
    for kind in KINDS {
        let re = regex::Regex::new(kind.pattern()).expect("a pattern the API server can read");
        for value in edge_values() {
            if re.is_match(&value) != kind.accepts(&value) {
                differ.push(format!(
                    "{kind:?} {value:?}: pattern {}, operator {}",
                    re.is_match(&value),
                    kind.accepts(&value)
                ));
            }
        }
    }
    assert!(differ.is_empty(), "{differ:#?}");
}

#[test]
fn numbers_stay_in_the_range_the_scripts_shell_computes_in() {
    let ok = |kind: Kind, value: &str| kind.accepts(value);
    assert!(ok(Kind::Count, "999999999"));
    assert!(!ok(Kind::Count, "1000000000"));
    assert!(!ok(Kind::Count, "18446744073709551615"));
    assert!(ok(Kind::Millis, "999999999") && !ok(Kind::Millis, "0"));
    assert!(ok(Kind::Seconds, "86400") && !ok(Kind::Seconds, "86401"));
    assert!(ok(Kind::Decimal, "999999999.5") && !ok(Kind::Decimal, "1000000000"));
    assert!(ok(Kind::DecimalPercent, "100.0") && !ok(Kind::DecimalPercent, "100.01"));
    // A point always has digits after it.
    assert!(!ok(Kind::Decimal, "3.") && !ok(Kind::Decimal, ".5"));
    assert_eq!(
        check("MEM_EXPECTED_MIB", "18446744073709551615").as_deref(),
        Some("checkSettings.MEM_EXPECTED_MIB: \"18446744073709551615\" is not an integer count (0 to 999999999)")
    );
}

#[test]
fn a_decimal_with_a_leading_zero_is_refused_with_the_number_to_write() {
    assert_eq!(
        check("NET_DROPS_MAX_PERCENT", "05.5").as_deref(),
        Some("checkSettings.NET_DROPS_MAX_PERCENT: \"05.5\" has a leading zero, which the checks' shell reads as an octal number; write \"5.5\"")
    );
    assert!(check("SVC_LOAD_MAX_PER_CPU", "00.25")
        .unwrap()
        .ends_with("write \"0.25\""));
    assert_eq!(check("SVC_LOAD_MAX_PER_CPU", "0.25"), None);
    // Text is never a number with a leading zero.
    assert_eq!(check("SVC_CPU_MODEL", "08"), None);
}

#[test]
fn each_kinds_edges_are_taken_and_its_past_edges_refused_by_operator_and_schema() {
    for kind in KINDS {
        let re = regex::Regex::new(kind.pattern()).unwrap();
        for v in kind.edges() {
            assert!(kind.accepts(v) && re.is_match(v), "{kind:?} {v:?}");
        }
        for v in kind.past_edges() {
            assert!(!kind.accepts(v) && !re.is_match(v), "{kind:?} {v:?}");
        }
    }
}
